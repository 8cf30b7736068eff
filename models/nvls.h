/*
** NVLS: NVSwitch multicast and in-switch reduction, as one switch's set of
** reduction groups (an NVSwitch is a FabSwitch with credit-based ports; see
** topologies/ for how the builders make one per NVLink domain).
**
** A group has n members. Each member sends its contribution once, segment by
** segment (FAB_PKT_NVLS_UP, `dst` = the group, `seq` = the segment); when
** segment k has arrived from all n, the switch sends the reduced segment k
** once to each member (FAB_PKT_NVLS_DOWN, `flow` = that member's flow).
** Contributions are absorbed on arrival (their credit goes back at once) and
** do not count against the buffer. The reduction itself costs nothing here
** (an idealised switch: see README).
*/
#ifndef FAB_NVLS_H
#define FAB_NVLS_H

#include "switch.h"

/* The groups of switch `sw` (none yet). Transfer full (the switch frees
** them: fab_switch_nvls makes it on first use). */
FabNvls *fab_nvls_new(FabSwitch *sw);
void fab_nvls_free(FabNvls *nv);

/* Add a group over `n` members (n >= 1): member m is endpoint rank[m] on
** the switch's port port[m], receiving the results as flow flow[m]; each
** sends npkts segments. The arrays are copied. Returns the group id (what
** the members' NVLS_UP packets carry in `dst`). */
uint32_t fab_nvls_add(FabNvls *nv, uint32_t n, const uint32_t *port, const uint32_t *flow, const uint32_t *rank,
                      uint32_t npkts);

/* An NVLS_UP packet `p` arrived on port `in` of the switch (transfer full). */
void fab_nvls_up(FabEngine *eng, FabNvls *nv, FabPkt *p, FabPort *in);

/* Segments reduced so far over all groups. */
uint64_t fab_nvls_reduced(const FabNvls *nv);

#endif

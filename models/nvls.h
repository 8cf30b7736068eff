/*
** NVLS: NVSwitch multicast and in-switch reduction, as one switch's set of
** groups (an NVSwitch is a FabSwitch with credit-based ports; see
** topologies/ for how the builders make one per NVLink domain).
**
** A group has n members (GPUs of the domain) and a mode, the three things
** NCCL's NVLS kernels do with multimem loads and stores:
**
**   RS (reduce-scatter)  each member sends its contribution once, segment by
**                  segment (NVLS_UP, seq = the segment); when segment k has
**                  arrived from all n the switch sends the reduced segment
**                  (NVLS_RED) to its owner, member k mod n, and to nobody
**                  else. The reduction runs at `reduce_bps` per owner port
**                  (0: as fast as the segments arrive).
**   AG (all-gather)  each member stores its own data once (NVLS_MC); the
**                  switch sends a copy of every segment to every member
**                  (NVLS_DOWN), itself included.
**   AR (allreduce)  RS, then each owner stores the reduced segments it got
**                  back into the switch (NVLS_MC, gated by their arrival:
**                  NCCL's reduce warps ld_reduce then st.multimem a chunk)
**                  and the switch multicasts them to all members. Each GPU
**                  sends S + S/n and receives S/n + S for S bytes.
**
** Contributions and stores are absorbed on arrival (their credit goes back
** at once) and do not count against the buffer; NVLS_RED and NVLS_DOWN are
** made here and queued at the egress ports. The members' NICs make and
** consume the packets (models/nic.c).
*/
#ifndef FAB_NVLS_H
#define FAB_NVLS_H

#include "switch.h"

/* SHARP: a member of a reduction in the fabric's switches (models/sharp.h),
** which the member's NIC drives the same way (FabFlow.nvls). */
typedef enum { FAB_NVLS_AR = 0, FAB_NVLS_RS = 1, FAB_NVLS_AG = 2, FAB_NVLS_SHARP = 3 } FabNvlsMode;

/* The groups of switch `sw` (none yet). Transfer full (the switch frees
** them: fab_switch_nvls makes it on first use). */
FabNvls *fab_nvls_new(FabSwitch *sw);
void fab_nvls_free(FabNvls *nv);

/* The switch's reduction rate per owner port, bits/s of reduced output (0:
** unlimited, the default). */
void fab_nvls_set_reduce_rate(FabNvls *nv, uint64_t bps);

/* Add a group of `mode` over `n` members (n >= 1): member m is endpoint
** rank[m] on the switch's port port[m], and its flow is flow[m]. RS and
** AR: each member contributes npkts segments. The arrays are copied.
** Returns the group id (what the members' NVLS_UP and NVLS_MC packets carry
** in `dst`). */
uint32_t fab_nvls_add(FabNvls *nv, FabNvlsMode mode, uint32_t n, const uint32_t *port, const uint32_t *flow,
                      const uint32_t *rank, uint32_t npkts);

/* An NVLS_UP or NVLS_MC packet `p` arrived on port `in` of the switch
** (transfer full). */
void fab_nvls_receive(FabEngine *eng, FabNvls *nv, FabPkt *p, FabPort *in);

/* A member of group `id` is done with it (released): the last one frees it.
** Nothing may reach the group after. */
void fab_nvls_leave(FabNvls *nv, uint32_t id);

/* Segments reduced, and segments multicast, so far over all groups. */
uint64_t fab_nvls_reduced(const FabNvls *nv);
uint64_t fab_nvls_multicast(const FabNvls *nv);

#endif

/*
** Switch: ports with per-priority egress queues over one shared buffer.
**
** A packet arriving on a port is routed (one lookup: destination endpoint ->
** group of equal-cost egress ports -> ECMP pick), admitted or dropped by the
** buffer, and queued at the egress port, ready to leave after the
** port-to-port latency.
**
** Buffer: `buffer` bytes shared by all ports. Admission uses the dynamic
** threshold of Choudhury & Hahne: a packet joins egress queue (port, prio)
** only if that queue's bytes plus the packet stay within
** alpha x (buffer - bytes in use), and the buffer itself has room. Otherwise
** it is tail-dropped (lossy mode). Occupancy is also accounted per ingress
** port and priority (what PFC will need), and released when the packet
** starts serialisation at egress.
*/
#ifndef FAB_SWITCH_H
#define FAB_SWITCH_H

#include <glib.h>
#include "port.h"
#include "sim/rng.h"

/* PFC (IEEE 802.1Qbb) on the lossless priorities. Occupancy is counted per
** (ingress port, priority). Above the XOFF threshold the switch sends a
** PAUSE frame for that priority to the upstream device on that port, and
** refreshes it while the threshold is still exceeded. Packets that arrive
** after XOFF (in flight on the cable, or sent before the PAUSE took effect)
** go into that (port, priority)'s headroom. When occupancy falls to XON, the
** switch sends a PAUSE with zero quanta (resume). Lossless priorities are
** never dropped by the egress threshold, only when their headroom
** overflows. */
typedef struct FabPfcCfg {
  bool enabled;
  uint32_t lossless;     /* bit p: priority p is lossless */
  bool dynamic;          /* XOFF at alpha x free shared buffer, else the static xoff */
  uint64_t xoff;         /* static XOFF threshold, bytes per (ingress port, priority) */
  uint64_t xon;          /* static: resume at or below this; dynamic: this far below XOFF */
  double alpha;          /* dynamic XOFF factor */
  uint64_t headroom;     /* bytes per (ingress port, priority); 0: auto (fab_pfc_headroom_auto) */
  fab_time_t response;   /* upstream's reaction time to a PAUSE, for the auto headroom */
  uint32_t quanta;       /* pause time per frame, units of 512 bit times (1..65535) */
  uint32_t mtu_wire;     /* largest packet on the wire, bytes (for the auto headroom) */
  fab_time_t watchdog;   /* the run driver checks for progress this often (0: never) */
} FabPfcCfg;

/* ECN marking at egress, RED style, per (port, priority) queue: no mark
** below kmin bytes, always at kmax and above, and probability
** pmax x (q - kmin) / (kmax - kmin) in between. Only ECN-capable packets
** (FAB_PKTF_ECT) are marked. q is the queue the packet joins (on enqueue)
** or leaves (on dequeue). */
typedef struct FabEcnCfg {
  bool enabled;
  uint64_t kmin, kmax;   /* bytes */
  double pmax;           /* marking probability at kmax (0..1] */
  bool on_dequeue;       /* mark when the packet leaves the queue, else when it joins */
} FabEcnCfg;

/* Headroom that absorbs everything that can still arrive on a link after a
** XOFF: the packet that crossed XOFF, our packet being sent when XOFF is
** decided, the PAUSE frame, the cable both ways, the upstream's reaction
** time, and its packet being sent. */
uint64_t fab_pfc_headroom_auto(uint64_t bps, fab_time_t latency, fab_time_t response, uint32_t mtu_wire);

typedef struct FabSwitchCfg {
  fab_time_t latency;  /* ps: port-to-port, arrival of the last bit to eligible at egress */
  uint64_t buffer;     /* bytes shared by all ports (PFC headroom not included) */
  double alpha;        /* dynamic threshold factor (> 0) */
  uint32_t nprio;      /* priorities (queues per port), 1..8 */
  uint64_t ecmp_seed;  /* seeds the per-switch hash salt */
  uint64_t seed;       /* scenario seed: the switch's RNG stream (random marking) */
  FabPfcCfg pfc;
  FabEcnCfg ecn;
  uint64_t pfc_reserved; /* bytes of the configured buffer set aside as headroom (buffer is the rest) */
  uint64_t credits;      /* InfiniBand: buffer per (ingress port, VL) granted as credits; 0: none */
  uint32_t mtu_wire;     /* a full packet on the wire, bytes */
} FabSwitchCfg;

typedef struct FabSwitch {
  FabNode node;
  uint32_t id;          /* switch number, for the salt and names */
  FabSwitchCfg cfg;
  uint32_t salt;        /* ECMP salt */
  FabRng rng;           /* stream FAB_STREAM(FAB_STREAM_SWITCH, id) of cfg.seed */
  uint32_t nports;
  FabPort *ports;       /* nports */
  /* routing: route[dst] -> group; group g = gports[goff[g] .. goff[g]+glen[g]) */
  uint32_t nendpoints;
  uint32_t *route;      /* UINT32_MAX: no route */
  uint32_t ngroups;
  uint32_t *goff, *glen;
  uint32_t *gports;
  uint32_t ngports;
  /* buffer */
  uint64_t used;        /* bytes held in egress queues */
  uint64_t *ingress;    /* bytes held per (ingress port * nprio + prio), shared and headroom */
  uint64_t *hdrm;       /* of which in headroom, per (ingress port * nprio + prio) */
  uint64_t *hdrm_max;   /* headroom size per ingress port (PFC) */
  uint32_t *pause_gen;  /* per (port, prio): XOFF state generation; odd = XOFF sent */
  uint64_t max_used;    /* high-water mark of `used` */
  /* counters */
  uint64_t drops, drop_bytes, unroutable;
  uint64_t hdrm_drops;  /* lossless packets dropped because headroom overflowed */
  GPtrArray *nvls;      /* FabNvlsGroup *: in-switch reductions (NVSwitch NVLS), by group id */
  uint64_t ecn_marks;
} FabSwitch;

/* A switch with `nports` unconnected ports; routes to `nendpoints`. */
FabSwitch *fab_switch_new(uint32_t id, const char *name, const FabSwitchCfg *cfg, uint32_t nports,
                          uint32_t nendpoints);
void fab_switch_free(FabSwitch *sw);

/* Set port `i` up with the link's rate and latency. */
FabPort *fab_switch_port(FabSwitch *sw, uint32_t i, uint64_t bps, fab_time_t latency);

/* A group of equal-cost egress ports; returns its id. */
uint32_t fab_switch_add_group(FabSwitch *sw, const uint32_t *ports, uint32_t n);

/* Route packets for endpoint `dst` to group `g`. */
void fab_switch_set_route(FabSwitch *sw, uint32_t dst, uint32_t g);

/* NVLS (NVSwitch multicast and in-switch reduction): each of n members
** sends its contribution once, segment by segment (FAB_PKT_NVLS_UP, seq = the
** segment); when segment k has arrived from all n, the switch sends the
** reduced segment k once to each member (FAB_PKT_NVLS_DOWN, flow = that
** member's flow). Contributions are absorbed on arrival (their credit goes
** back at once) and do not count against the buffer. */
typedef struct FabNvlsGroup {
  uint32_t n;           /* members */
  uint32_t npkts;       /* segments */
  uint32_t *port;       /* n: the member's port on this switch */
  uint32_t *flow;       /* n: the member's flow id */
  uint32_t *rank;       /* n: the member's endpoint */
  uint16_t *arrived;    /* npkts: contributions in so far */
  uint64_t reduced;     /* segments reduced */
} FabNvlsGroup;

/* Add an NVLS group over `n` members; returns its id. The arrays are copied. */
uint32_t fab_switch_nvls_add(FabSwitch *sw, uint32_t n, const uint32_t *port, const uint32_t *flow,
                             const uint32_t *rank, uint32_t npkts);

/* Whether a node is a switch (for analyses that walk the fabric). */
bool fab_node_is_switch(const FabNode *n);

/* The egress ports of sw whose priority-`prio` queue holds packets that came
** in on port `in`: up to `max` into out; returns how many there are. */
uint32_t fab_switch_holders(const FabSwitch *sw, uint32_t in, uint32_t prio, FabPort **out, uint32_t max);

/* The egress port a packet to `dst` with `hash` takes, or NULL. */
FabPort *fab_switch_next_hop(const FabSwitch *sw, uint32_t dst, uint32_t hash);

#endif

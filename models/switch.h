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

#include "port.h"
#include "sim/rng.h"

typedef struct FabSwitchCfg {
  fab_time_t latency;  /* ps: port-to-port, arrival of the last bit to eligible at egress */
  uint64_t buffer;     /* bytes shared by all ports */
  double alpha;        /* dynamic threshold factor (> 0) */
  uint32_t nprio;      /* priorities (queues per port), 1..8 */
  uint64_t ecmp_seed;  /* seeds the per-switch hash salt */
  uint64_t seed;       /* scenario seed: the switch's RNG stream (random marking, later) */
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
  uint64_t *ingress;    /* bytes held per (ingress port * nprio + prio) */
  uint64_t max_used;    /* high-water mark of `used` */
  /* counters */
  uint64_t drops, drop_bytes, unroutable;
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

/* The egress port a packet to `dst` with `hash` takes, or NULL. */
FabPort *fab_switch_next_hop(const FabSwitch *sw, uint32_t dst, uint32_t hash);

#endif

/*
** Link failures and changes during a run (fabric.failures): an element that
** applies each FabLinkChange at its time, to both directions of its link,
** and updates the routes as the fabric's switches would.
**
** A link that goes down loses what is on it and what is queued for it
** (fab_port_set_down); the transport recovers the losses. Its switches'
** routes follow at once where the switch routes per packet or flowlet (it
** sees its own ports and, we assume, hears of remote failures at once, as
** adaptive routing's fault notification claims), and `reroute_delay` later
** where it hashes (ECMP: a routing protocol's convergence), each time by
** fab_topology_reroute over the links then up. A link that comes back up is
** used again after the same steps. A new rate takes effect at once.
*/
#ifndef FAB_FAILURES_H
#define FAB_FAILURES_H

#include "topology.h"

/* What one change did. */
typedef struct FabLinkChangeRec {
  char link[2 * FAB_NAME_LEN]; /* "leaf3-spine2" */
  const char *change;          /* "down", "up", "rate", "latency", "rate and latency" (static) */
  fab_time_t at;               /* ps */
  uint64_t bps;                /* the new rate, 0: unchanged */
  uint64_t lost, lost_bytes;   /* down: packets (NIC-made) the link lost while down, both directions */
  uint64_t rerouted;           /* routes of (switch, endpoint) that changed because of it, at once and later */
  fab_time_t rerouted_at;      /* ps: when the last switches took new routes (0: none did) */
} FabLinkChangeRec;

typedef struct FabFailures FabFailures;

/* The changes of cfg on topology t, resolved (cfg's links must exist:
** fab_failures_check). Transfer full. */
FabFailures *fab_failures_new(FabTopology *t, const FabFabricCfg *cfg);

/* A parallel run's copy for partition `part` (the topology's ports marked,
** fab_port_mark_cut): every partition has one, with the same element id
** and the same events at the same times, each changing only what its
** partition runs: the rate, latency and state of the ports it sends from,
** the view of a cut link from the far end of its wire (packets that were on
** it when it went down are lost there, port.h), and the routes of its
** switches, which it computes from the changes it applied itself (another
** partition's thread may be changing its ports' state meanwhile). Each
** copy's records count what it saw: fab_failures_merge sums them into one
** engine's. */
FabFailures *fab_failures_new_part(FabTopology *t, const FabFabricCfg *cfg, const struct FabPar *par,
                                   uint32_t part);
void fab_failures_free(FabFailures *x);
FabElem *fab_failures_elem(FabFailures *x);

/* The rates and latencies cfg's changes give links from the start (at 0,
** neither down nor up) set on t's ports, both directions: what a parallel
** run's cut and its lookahead must see (cfg's links must exist). */
void fab_failures_as_built(FabTopology *t, const FabFabricCfg *cfg);

/* Apply the changes at time 0 now and schedule the others. */
void fab_failures_start(FabEngine *eng, FabFailures *x);

/* The changes' records, in order (*n of them); the losses counted so far.
** Valid until the next call. */
const FabLinkChangeRec *fab_failures_records(FabFailures *x, uint32_t *n);

/* Another copy's records `from` into `into` (n of each): losses and routes
** changed add up, the last reroute is the latest. */
void fab_failures_merge(FabLinkChangeRec *into, const FabLinkChangeRec *from, uint32_t n);

/* FALSE, with an error at the entry, when a change names a link the fabric
** does not have, or the topology cannot take failures (ring). Builds the
** fabric to look. */
gboolean fab_failures_check(const FabFabricCfg *cfg, GError **err);

#endif

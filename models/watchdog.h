/*
** The deadlock and stall watchdog of a lossless fabric (PFC or InfiniBand
** credits).
**
** It wakes every `period`. If nothing was delivered since its last look
** (the owner's progress count did not move) while some port is blocked
** (paused by PFC for a priority, or its head packet short of credit), the
** fabric is stalled: the watchdog stops the run and looks for a deadlock, a
** cycle in the wait-for graph of blocked ports. A port blocked for priority
** q waits for the switch at its far end to drain the ingress it feeds, that
** is for the egress ports there that hold priority-q packets from that
** ingress (fab_switch_holders); if those are blocked too, the wait goes on.
** A cycle among blocked ports is a deadlock: none of them can ever resume.
** Slow progress (a low DCQCN rate) is not a stall.
*/
#ifndef FAB_WATCHDOG_H
#define FAB_WATCHDOG_H

#include <stdbool.h>
#include "switch.h"

typedef struct FabWatchdogHooks {
  bool (*finished)(void *ctx);     /* the workload is done: stop watching */
  uint64_t (*progress)(void *ctx); /* grows whenever a packet is delivered anywhere */
  /* optional: whether a port is blocked anywhere, given whether one of these is (a run over processes asks
  ** the others) */
  bool (*blocked)(void *ctx, bool here);
  /* optional, a run over processes: before a deadlock is looked for (every process), gather what the two below
  ** answer from the process that runs each port: whether port p cannot send priority q (fab_port_blocked), and
  ** the egress ports of the switch at p's far end holding what came in from p (fab_switch_holders) */
  void (*gather)(void *ctx);
  bool (*port_blocked)(void *ctx, const FabPort *p, uint32_t q);
  uint32_t (*holders)(void *ctx, const FabPort *p, uint32_t q, FabPort **out, uint32_t max);
} FabWatchdogHooks;

typedef struct FabWatchdog FabWatchdog;

/* A watchdog over `ports` (every port of the fabric, to see blocking) and
** `switches` (to walk the wait-for graph); the arrays are copied. Transfer
** full. */
FabWatchdog *fab_watchdog_new(fab_time_t period, FabSwitch *const *switches, uint32_t nsw, FabPort *const *ports,
                              uint32_t nports, const FabWatchdogHooks *hooks, void *ctx);
void fab_watchdog_free(FabWatchdog *w);

/* Its element header (the builder gives it an id). */
FabElem *fab_watchdog_elem(FabWatchdog *w);

/* Schedule its first look, `period` from now. */
void fab_watchdog_start(FabEngine *eng, FabWatchdog *w);

/* One look, as its event takes it, without the event (a parallel run takes
** it between windows, sim/par.h): false when it stops watching, because the
** workload is done or the fabric stalled (then fab_watchdog_stalled, and the
** caller stops the run). */
bool fab_watchdog_look(FabWatchdog *w);
fab_time_t fab_watchdog_period(const FabWatchdog *w);

/* Whether it stopped the run. */
bool fab_watchdog_stalled(const FabWatchdog *w);

/* The deadlock it found: the egress ports of the cycle, in order (*n of
** them; 0 when it stopped on a stall without a cycle, or did not stop). */
FabPort *const *fab_watchdog_cycle(const FabWatchdog *w, uint32_t *n);

/* Port p cannot send priority q: paused by its peer (PFC), or its head
** packet of q lacks credit (InfiniBand). */
static inline bool fab_port_blocked(const FabPort *p, uint32_t q) {
  if (p->paused >> q & 1) return true;
  return p->credit_fc && p->q[q].head && p->credits[q] < (int64_t)p->q[q].head->wire;
}

#endif

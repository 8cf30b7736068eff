/*
** A delay-based rate control, as a FabCcOps of the NIC (see cc.h): the
** congestion control `transport: srd` defaults to.
**
** AWS describes SRD's congestion control only as per-connection rate
** limiting driven by round-trip time (its paper, Shalev et al., IEEE Micro
** 40(6), 2020, gives no algorithm), so fabsim uses a published one of that
** family: Swift's (Kumar et al., "Swift: Delay is Simple and Effective for
** Congestion Control in the Datacenter", SIGCOMM 2020), applied to a rate
** instead of a window, as csg-htsim writes Swift's decrease
** (sim/swift.cpp: cwnd x max(1 - beta (delay - target) / delay,
** 1 - max_mdf)). Per flow, on each ACK that echoes its data packet's send
** time (every ACK of fabsim's NICs does):
**
**  - rtt = now - that time; base = the lowest rtt the flow has seen;
**  - rtt <= base + target: the rate rises by ai x line rate, at most once
**    per rtt;
**  - else it falls to rate x max(1 - beta (rtt - base - target) / rtt,
**    1 - max_mdf), at most once per rtt, never below min_rate.
**
** No CNPs, no timers. Every parameter is an assumption (README): csg-htsim
** itself marks beta 0.8 and max_mdf 0.5 as guesses.
*/
#ifndef FAB_DELAYCC_H
#define FAB_DELAYCC_H

#include <stdint.h>
#include <glib.h>
#include "sim/time.h"

typedef struct FabDelayCfg {
  fab_time_t target;       /* ps: queueing delay tolerated above the flow's lowest RTT */
  double ai;               /* additive increase per RTT, as a fraction of line rate, (0, 1] */
  double beta;             /* decrease gain, (0, 1] */
  double max_mdf;          /* largest decrease per RTT, (0, 1) */
  uint64_t min_rate_bps;   /* bits/s: the rate never goes below this */
} FabDelayCfg;

/* Per-flow state (inside FabCcFlow). */
typedef struct FabDelayFlow {
  fab_time_t base;         /* ps: the lowest RTT seen (0: none yet) */
  fab_time_t last_up;      /* ps: the last increase */
  fab_time_t last_down;    /* ps: the last decrease */
} FabDelayFlow;

typedef struct FabCcOps FabCcOps;
extern const FabCcOps fab_cc_delay_ops;

/* The defaults (all assumptions, see above). */
FabDelayCfg fab_delay_defaults(void);

/* NULL if `c` is usable; else a static message naming the bad field. */
const char *fab_delay_cfg_invalid(const FabDelayCfg *c);

#endif

/*
** The steady-state fast-forward (fabric.fast_forward).
**
** An element that looks at the run every `window` of simulated time. A
** stretch is the looks since a flow last began or ended (three counters
** tell, so a look during churn costs nothing more). When the stretch is 2,
** 4, 8, ... windows long it compares its two halves, first the ports
** alone: every port sending as many bytes in both and its queue ranging as
** low and as high in both (within `tolerance` and two of the largest
** packets), nothing dropped, nothing lost on a failed link. When they
** agree a second stretch as long confirms it with the flows too (a look at
** every flow costs, so only where the ports promise a jump): the same
** flows, each moving flow sending at least 1/tolerance packets in each
** half and as many in both within `tolerance`, some flow moving, no SRD
** nor NVLS flow, the ports again. Halves of stretches that double until
** they agree let a state that oscillates (PFC pauses, DCQCN's cuts and
** recoveries) count as steady once they span a few of its periods; a
** stretch of 256 windows that never settled starts afresh, and a failed
** confirmation asks for a first stretch twice as long.
**
** When the confirmation agrees it jumps k windows at once, as if its mean
** window repeated k times: k is at most FAB_FF_REACH times its length,
** fits whole before the next event that is not the fabric's own (a flow
** posted, a compute or reduction done, the executor's and a failure's
** timers, stop_time), keeping one window, and stops before any running flow
** gets within two windows of its last packet. A jump:
**
**   - moves every pending event of the fabric (ports, wires, NICs but their
**     flow starts, switches, the PFC watchdog) and every time the fabric
**     holds (packets' ready and sent times, pacing, retransmission and
**     congestion control timers and their reference times, PAUSE ends,
**     flowlets) k x window later: the fabric after the jump is the fabric
**     before, later;
**   - takes off each running flow's end the packets it would have sent in
**     the jump, at its rate measured on its own packets (from the first
**     look's newest to the last look's newest, over the time between their
**     departures: exact for a flow that sends evenly): fab_flow_skip. Those
**     packets are never made; the flow's last ones run packet by packet;
**   - grows every port's counters: bytes and packets sent at the rate
**     between the first and the last packet the stretch counted (exact for
**     a port that sends evenly), ECN marks, PAUSE frames and time paused by
**     k x their mean per window, so link utilisation, packet hops, marks
**     and pauses count the skipped time; NICs' packet counters count only
**     the packets simulated (the run's packet conservation is checked on
**     them);
**   - gives the queue sampler its rows over the jump (fab_sampler_jump).
**
** Not on a run over threads or processes, nor under SRD (the run says so
** when it was asked for). Deterministic: the same scenario and seed give
** the same jumps.
*/
#ifndef FAB_FASTFWD_H
#define FAB_FASTFWD_H

#include "run_int.h"

typedef struct FabFf FabFf;

/* The run's fast-forward when fabric.fast_forward asks for one (on, or
** auto on a training job of at least FAB_FF_AUTO_RANKS ranks), else NULL;
** its element gets id `id`. A run over threads or processes gets none, and
** when it was asked for explicitly *why says so (g_free it). */
#define FAB_FF_AUTO_RANKS 256
/* A jump goes at most this many times the stretch it saw ahead: a state
** seen steady longer is trusted further (a parameter of the method,
** README). */
#define FAB_FF_REACH 16
FabFf *fab_ff_new(Run *r, uint32_t id, char **why);
void fab_ff_free(FabFf *ff);

/* Its first look, one window after 0. */
void fab_ff_start(FabEngine *eng, FabFf *ff);

/* What it did, for the results (FabResults.ff) and a warning. */
void fab_ff_report(const FabFf *ff, FabFfRec *out);

/* Whether the scenario's fast-forward is on (resolving auto), and why not
** when it was asked for but cannot run (NULL otherwise; static). */
bool fab_ff_wanted(const FabScenario *sc, uint32_t threads_or_procs, const char **why);

#endif

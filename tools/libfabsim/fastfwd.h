/*
** The steady-state fast-forward (fabric.fast_forward).
**
** An element that looks at the run every `window` of simulated time. When
** the last two windows were alike (the same flows running, each flow's
** acknowledged packets per window within `tolerance` (and one packet) of
** the window before, every port's bytes sent per window and queue depth
** within `tolerance` (and two of its largest packets), no drops and no
** packet lost on a failed link, no SRD nor NVLS flow under way), it jumps:
** k windows of simulated time pass at once, as if the last window repeated
** k times. k is as many whole windows as fit before the next event that is
** not the fabric's own (a flow posted, a compute or reduction done, a
** sampler look, a link failure, the executor's timers, stop_time), keeping
** one window, and before any running flow would get within two windows of
** its last packet. What a jump does:
**
**   - every pending event of the fabric (ports, wires, NICs but their flow
**     starts, switches, the PFC watchdog) and every time the fabric holds
**     (packets' ready and sent times, pacing, retransmission and congestion
**     control timers and their reference times, PAUSE ends, flowlets) moves
**     k x window later: the fabric's state after the jump is its state
**     before, later;
**   - each running flow takes k x (its packets per window, the mean of the
**     two windows) off the end of what it has still to send (fab_flow_skip):
**     those packets are never made, and its last ones run packet by packet;
**   - every port's counters (bytes and packets sent, ECN marks, PAUSE frames,
**     time paused) grow by k x their mean growth per window, so link
**     utilisation, packet hops, marks and pauses count the skipped time;
**     NICs' packet counters count only the packets simulated (the run's
**     packet conservation is checked on them).
**
** Not on a run over threads or processes (the run says so). Deterministic:
** the same scenario and seed give the same jumps.
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

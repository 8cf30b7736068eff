/*
** The operation-DAG executor: runs a FabDag (dag.h) on an engine.
**
** It knows nothing of fabrics or GPUs. It decides when each operation may
** begin and keeps the times; the owner (the run driver) carries the work out
** through three hooks and reports back:
**
**   post(op, at)        a FLOW or NVLS op is posted: its first packet may leave
**                       at `at` (absolute ps: `pre` after its start and after
**                       its data dependencies, those without FAB_DEP_SENT,
**                       were done; not before it is ready). The
**                       owner calls fab_exec_sent when the flow's last packet
**                       has left its sender, and fab_exec_received when the
**                       receiver holds its last byte.
**   compute(op, r, dur) a COMPUTE op is ready: run it for `dur` ps on rank r's
**                       compute stream; call fab_exec_done when it finishes,
**                       with the time it began.
**   reduce(op, r, dur)  a received flow with a `post` delay must be reduced by
**                       rank r for `dur` ps; call fab_exec_done when done.
**
** An op becomes ready when its dependencies are met (done, or for a
** FAB_DEP_SENT dependency, sent); it then begins at max(now, its `start`).
** MARK ops are done as soon as they begin. A completion releases its
** dependents in op order, through a first-in first-out worklist (no
** recursion). The executor is an element: its only events are "op i's start
** time has come" for ops that are not flows.
*/
#ifndef FAB_EXEC_H
#define FAB_EXEC_H

#include <stdbool.h>
#include <stdint.h>
#include "dag.h"
#include "sim/engine.h"

typedef struct FabExecHooks {
  void (*post)(void *ctx, uint32_t op, fab_time_t at);
  void (*compute)(void *ctx, uint32_t op, uint32_t rank, fab_time_t dur);
  void (*reduce)(void *ctx, uint32_t op, uint32_t rank, fab_time_t dur);
} FabExecHooks;

/* Op states. */
enum { FAB_EXEC_WAITING = 0, FAB_EXEC_RUNNING = 1, FAB_EXEC_DONE = 2 };

typedef struct FabExec FabExec;

/* An executor of `dag` (transfer none: it must outlive the executor) on
** `eng`. Transfer full. Cost: O(ops + deps) memory and time. */
FabExec *fab_exec_new(FabEngine *eng, const FabDag *dag, const FabExecHooks *hooks, void *ctx);
void fab_exec_free(FabExec *x);

/* Its element header (the builder gives it an id). */
FabElem *fab_exec_elem(FabExec *x);

/* Make the ops without dependencies ready (before the loop, at eng->now). */
void fab_exec_start(FabExec *x);

/* Reports from the owner (see the top of this file). */
void fab_exec_sent(FabExec *x, uint32_t op);
void fab_exec_received(FabExec *x, uint32_t op);
void fab_exec_done(FabExec *x, uint32_t op, fab_time_t began);

/* ---- progress and times --------------------------------------------------- */

uint32_t fab_exec_ops(const FabExec *x);
uint32_t fab_exec_ops_done(const FabExec *x);
static inline bool fab_exec_finished(const FabExec *x) { return fab_exec_ops_done(x) == fab_exec_ops(x); }

/* The latest completion so far, ps. */
fab_time_t fab_exec_last_end(const FabExec *x);

/* Op i's state, when it began (posted, or began computing) and when it was done. */
int fab_exec_state(const FabExec *x, uint32_t i);
fab_time_t fab_exec_began(const FabExec *x, uint32_t i);
fab_time_t fab_exec_ended(const FabExec *x, uint32_t i);

/* The first op that never became ready, and how many dependencies it still
** waits for; FAB_OP_NONE when every op became ready. */
uint32_t fab_exec_first_waiting(const FabExec *x, uint32_t *left);

/* The run invariant "no op began before what it depends on was done" (for a
** FAB_DEP_SENT dependency: before that flow's last packet left):
** false with the first offending op and dependency when it is broken. */
bool fab_exec_check_order(const FabExec *x, uint32_t *op, uint32_t *dep);

#endif

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
** FAB_DEP_SENT dependency, sent); it then begins at max(the time the last
** was met, its `start`): times come from the dependencies' own, never from
** the clock of whoever reported them, so that a parallel run, where reports
** come from partitions at different clocks, times every op as one engine
** does (the owner keeps what needs the clock local: a compute op begins on
** its GPU at its time). MARK ops are done as soon as they begin, or
** their `pre` after (a barrier's time: an event of ours). A
** completion releases its dependents in op order, through a first-in
** first-out worklist (no recursion). The executor is an element: its only
** events are "op i's start time has come" for ops that are not flows,
** keyed by the op.
**
** An unfolding DAG (fab_dag_set_more) is made batch by batch: when the first
** op of the newest batch becomes ready, the executor has the DAG make the
** next one and takes its ops in (the `grow` hook tells the owner), before
** anything of the newest batch is done; with dag.h's contract every op is
** then in place before what it waits for is done, and the run is the same
** as if all had been made first. fab_exec_retire forgets the ops done long
** enough ago that nothing still to be posted can need their times (done,
** and `pre` behind now); a retired op counts as done and sent for ops made
** later.
*/
#ifndef FAB_EXEC_H
#define FAB_EXEC_H

#include <stdbool.h>
#include <stdint.h>
#include "dag.h"
#include "sim/engine.h"
#include "sim/par.h"

typedef struct FabExecHooks {
  void (*post)(void *ctx, uint32_t op, fab_time_t at);
  void (*compute)(void *ctx, uint32_t op, uint32_t rank, fab_time_t dur);
  void (*reduce)(void *ctx, uint32_t op, uint32_t rank, fab_time_t dur);
  void (*grow)(void *ctx, uint32_t from, uint32_t to); /* ops [from, to) were taken in (NULL: not told) */
  /* ps a control message takes from endpoint `from` to `to` (a receiver-driven flow's, FAB_FLOW_RDV; NULL: 0) */
  fab_time_t (*ctrl)(void *ctx, uint32_t from, uint32_t to);
  /* a parallel run: the partition where a non-flow op that waits for its start time begins (NULL: 0;
  ** FAB_EXEC_ELSEWHERE: another process's, which begins it there: not scheduled here) */
  uint32_t (*part)(void *ctx, uint32_t op);
  /* optional: such an op begins now, on its own event (a run over processes tells the others: fab_exec_wake) */
  void (*woke)(void *ctx, uint32_t op);
} FabExecHooks;

#define FAB_EXEC_ELSEWHERE UINT32_MAX

/* Op states. */
enum { FAB_EXEC_WAITING = 0, FAB_EXEC_RUNNING = 1, FAB_EXEC_DONE = 2 };

typedef struct FabExec FabExec;

/* An executor of `dag` (transfer none: it must outlive the executor; an
** unfolding DAG is made further by it) on `eng`; it takes in the ops made
** so far (an empty unfolding DAG makes its first batch). Transfer full.
** Cost: O(ops + deps) memory and time, of the ops held (not retired). */
FabExec *fab_exec_new(FabEngine *eng, FabDag *dag, const FabExecHooks *hooks, void *ctx);
void fab_exec_free(FabExec *x);

/* Its element header (the builder gives it an id). */
FabElem *fab_exec_elem(FabExec *x);

/* A parallel run: partitions' threads call the executor under `lock`, the
** caller having set the engine it runs on (the one its hooks schedule with
** and whose clock its reports carry); the executor's own events take the
** lock themselves. Between windows, any engine of the run. */
void fab_exec_set_lock(FabExec *x, FabLock *lock);
void fab_exec_set_engine(FabExec *x, FabEngine *eng);

/* Op `op`, which waited for its start time in another process, began
** there at the engine's now: begin it here too (a run over processes). */
void fab_exec_wake(FabExec *x, uint32_t op);
FabEngine *fab_exec_engine(const FabExec *x);

/* Make the ops without dependencies ready (before the loop, at eng->now). */
void fab_exec_start(FabExec *x);

/* Reports from the owner (see the top of this file). */
void fab_exec_sent(FabExec *x, uint32_t op);
void fab_exec_received(FabExec *x, uint32_t op);
void fab_exec_done(FabExec *x, uint32_t op, fab_time_t began);

/* ---- progress and times --------------------------------------------------- */

/* Ops taken in so far (the DAG's length), and how many are done. */
uint32_t fab_exec_ops(const FabExec *x);
uint32_t fab_exec_ops_done(const FabExec *x);
/* Every op done, and the DAG has no more to make. */
bool fab_exec_finished(const FabExec *x);

/* The latest completion so far, ps. */
fab_time_t fab_exec_last_end(const FabExec *x);

/* How far ops can be retired: the ops from fab_exec_base on that are done
** and whose completion plus the largest `pre` is not after now, up to the
** first that is not or `limit`. Returns the op after the last; none while
** the executor is inside a hook call (a report made from a hook). */
uint32_t fab_exec_retirable(const FabExec *x, uint32_t limit);
/* Retire the ops before `upto` (at most fab_exec_retirable); the owner
** forgets them too (fab_dag_retire), after it read what it needs of them. */
void fab_exec_retire(FabExec *x, uint32_t upto);
uint32_t fab_exec_base(const FabExec *x);
/* Posts whose time used the latest retired completion instead of a retired
** dependency's own (an op made with a larger `pre` than any before the
** retirement): 0 when the run is exact. */
uint64_t fab_exec_inexact(const FabExec *x);
/* The most ops held at once so far (taken in and not retired). */
uint32_t fab_exec_peak(const FabExec *x);
/* Bytes the executor's per-op and per-dependency state holds now. */
size_t fab_exec_bytes(const FabExec *x);

/* Op i's state, when it began (posted, or began computing) and when it was
** done (i not retired). */
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

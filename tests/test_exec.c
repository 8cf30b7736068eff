/*
** The operation-DAG executor alone (workloads/exec.h): hand-made DAGs, no
** YAML, no fabric. The owner here is a toy:
**
**   - a network element of the test's own: a flow posted at `at` has its
**     last packet leave its sender at at + SEND(bytes) (1 byte per ns) and
**     arrive LAT = 1 us later, whatever else is in flight;
**   - one FabGpu per rank (models/gpu.h) runs the compute ops and the
**     reductions (a flow's `post`), each lane first in, first out.
**
** Every answer below is worked out on paper from those two rules and the
** executor's (exec.h, dag.h). test_dag.c runs DAGs whole, on a fabric.
*/
#include <criterion/criterion.h>
#include <glib.h>
#include "models/gpu.h"
#include "workloads/exec.h"

#define NR 4 /* ranks */
#define US FAB_US
#define NS FAB_NS
#define LAT US                                 /* last packet leaves -> last byte received */
#define SEND(b) ((fab_time_t)(b) * NS)         /* posted -> last packet leaves */
#define NEVER FAB_TIME_MAX

typedef struct H H;

/* The toy network: its events are "flow op's last packet left" (arg op << 1)
** and "flow op's last byte arrived" (op << 1 | 1). */
typedef struct Net {
  FabElem el;
  H *h;
} Net;

struct H {
  FabEngine *eng;
  FabDag *d;
  FabExec *x;
  FabGpu gpu[NR];
  Net net;
  uint32_t n;                     /* ops */
  fab_time_t *posted, *sent, *recv; /* per flow op: what the hooks and the network saw (NEVER: not yet) */
  uint32_t *rank;                 /* per op: the rank its compute or reduce hook named (UINT32_MAX: none) */
  fab_time_t *dur;                /* per op: the duration its compute or reduce hook asked for */
  GArray *log;                    /* ops, in the order the post and compute hooks were called */
  uint32_t nreduce;               /* reduce hook calls */
  uint32_t lose;                  /* a flow whose last byte never arrives (FAB_OP_NONE: none) */
  uint32_t liar;                  /* a compute op the owner reports done at once, begun at 0 (FAB_OP_NONE) */
  bool retire;                    /* retire what can be after every report (an unfolding DAG's owner) */
  size_t most;                    /* the most bytes the executor and the DAG's ops held at once */
};

static void h_after_report(H *h);

static void net_wake(FabEngine *eng, void *self, uint64_t arg) {
  H *h = ((Net *)self)->h;
  uint32_t op = (uint32_t)(arg >> 1);
  if (arg & 1) {
    cr_assert_eq(h->recv[op], NEVER);
    h->recv[op] = eng->now;
    fab_exec_received(h->x, op);
  } else {
    cr_assert_eq(h->sent[op], NEVER);
    h->sent[op] = eng->now;
    fab_exec_sent(h->x, op);
  }
  h_after_report(h);
}
static const FabOps net_ops = {"test-net", net_wake};

static void hook_post(void *ctx, uint32_t op, fab_time_t at) {
  H *h = ctx;
  const FabOp *o = fab_dag_op(h->d, op);
  cr_assert(o->kind == FAB_OP_FLOW || o->kind == FAB_OP_NVLS, "op %u posted is not a flow", op);
  cr_assert_geq(at, h->eng->now, "op %u posted in the past", op);
  cr_assert_eq(h->posted[op], NEVER, "op %u posted twice", op);
  cr_assert_eq(fab_exec_state(h->x, op), FAB_EXEC_RUNNING);
  h->posted[op] = at;
  g_array_append_val(h->log, op);
  fab_engine_at(h->eng, at + SEND(o->bytes), &h->net, (uint64_t)op << 1);
  if (op != h->lose) fab_engine_at(h->eng, at + SEND(o->bytes) + LAT, &h->net, (uint64_t)op << 1 | 1);
}

static void hook_compute(void *ctx, uint32_t op, uint32_t rank, fab_time_t dur) {
  H *h = ctx;
  cr_assert_eq(fab_dag_op(h->d, op)->kind, FAB_OP_COMPUTE);
  cr_assert_lt(rank, NR);
  cr_assert_eq(h->rank[op], UINT32_MAX, "op %u computed twice", op);
  h->rank[op] = rank;
  h->dur[op] = dur;
  g_array_append_val(h->log, op);
  if (op == h->liar) fab_exec_done(h->x, op, 0);
  else fab_gpu_submit(h->eng, &h->gpu[rank], FAB_GPU_COMPUTE, dur, op);
}

static void hook_reduce(void *ctx, uint32_t op, uint32_t rank, fab_time_t dur) {
  H *h = ctx;
  cr_assert_eq(fab_dag_op(h->d, op)->kind, FAB_OP_FLOW);
  cr_assert_lt(rank, NR);
  cr_assert_neq(h->recv[op], NEVER, "op %u reduced before it arrived", op);
  h->rank[op] = rank;
  h->dur[op] = dur;
  h->nreduce++;
  fab_gpu_submit(h->eng, &h->gpu[rank], FAB_GPU_REDUCE, dur, op);
}

static void gpu_done(void *ctx, int which, uint32_t tag, fab_time_t began) {
  H *h = ctx;
  cr_assert_eq(which == FAB_GPU_COMPUTE, fab_dag_op(h->d, tag)->kind == FAB_OP_COMPUTE, "op %u on the wrong lane",
               tag);
  fab_exec_done(h->x, tag, began);
  h_after_report(h);
}

/* The per-op records, for ops [from, to) the executor took in. */
static void hook_grow(void *ctx, uint32_t from, uint32_t to) {
  H *h = ctx;
  cr_assert_eq(from, h->n, "ops taken in twice or skipped");
  h->posted = g_renew(fab_time_t, h->posted, to);
  h->sent = g_renew(fab_time_t, h->sent, to);
  h->recv = g_renew(fab_time_t, h->recv, to);
  h->rank = g_renew(uint32_t, h->rank, to);
  h->dur = g_renew(fab_time_t, h->dur, to);
  for (uint32_t i = from; i < to; i++) {
    h->posted[i] = h->sent[i] = h->recv[i] = NEVER;
    h->rank[i] = UINT32_MAX;
    h->dur[i] = 0;
  }
  h->n = to;
}

#define CTRL (3 * US) /* a receiver-driven flow's control message, any two ranks */

static fab_time_t hook_ctrl(void *ctx, uint32_t from, uint32_t to) {
  cr_assert_neq(from, to);
  return CTRL;
}

static const FabExecHooks hooks = {hook_post, hook_compute, hook_reduce, hook_grow, hook_ctrl};

/* An executor of d (kept by h) on a fresh engine. */
static H *h_new(FabDag *d) {
  H *h = g_new0(H, 1);
  h->eng = fab_engine_new(1, 64);
  h->d = d;
  h->x = fab_exec_new(h->eng, d, &hooks, h); /* the records grow as it takes the ops in (hook_grow) */
  h->log = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  h->lose = h->liar = FAB_OP_NONE;
  /* ids as the driver gives them: the models, then the executor */
  for (uint32_t r = 0; r < NR; r++) {
    fab_gpu_init(&h->gpu[r], r, gpu_done, h);
    fab_elem_set_id(&h->gpu[r].el, r);
  }
  fab_elem_init(&h->net.el, &net_ops);
  h->net.h = h;
  fab_elem_set_id(&h->net.el, NR);
  fab_elem_set_id(fab_exec_elem(h->x), NR + 1);
  return h;
}

static void h_after_report(H *h) {
  if (h->retire) {
    uint32_t upto = fab_exec_retirable(h->x, UINT32_MAX);
    fab_exec_retire(h->x, upto);
    fab_dag_retire(h->d, upto);
  }
  h->most = MAX(h->most, fab_exec_bytes(h->x) + fab_deq_bytes(&h->d->ops) + fab_deq_bytes(&h->d->deps));
}

static void h_run(H *h) {
  fab_exec_start(h->x);
  cr_assert(fab_engine_run(h->eng, FAB_TIME_MAX), "time went back");
}

/* The invariants of a run: no op began before its dependencies were done. */
static void h_check_order(H *h) {
  uint32_t op = 0, dep = 0;
  cr_assert(fab_exec_check_order(h->x, &op, &dep), "op %u began before its dependency %u was done", op, dep);
}

/* Every op done, the loop ended at the last completion. */
static void h_check_finished(H *h) {
  h_check_order(h);
  cr_assert(fab_exec_finished(h->x));
  cr_assert_eq(fab_exec_ops(h->x), h->n);
  cr_assert_eq(fab_exec_ops_done(h->x), h->n);
  for (uint32_t i = 0; i < h->n; i++) cr_assert_eq(fab_exec_state(h->x, i), FAB_EXEC_DONE, "op %u", i);
  uint32_t left = 99;
  cr_assert_eq(fab_exec_first_waiting(h->x, &left), FAB_OP_NONE);
  cr_assert_eq(left, 0);
  cr_assert_eq(h->eng->now, fab_exec_last_end(h->x), "the last event is the last completion");
}

static void h_free(H *h) {
  fab_exec_free(h->x);
  for (uint32_t r = 0; r < NR; r++) fab_gpu_clear(&h->gpu[r]);
  fab_engine_free(h->eng);
  fab_dag_free(h->d);
  g_free(h->posted);
  g_free(h->sent);
  g_free(h->recv);
  g_free(h->rank);
  g_free(h->dur);
  g_array_free(h->log, TRUE);
  g_free(h);
}

/* Op i began (posted, or began computing) at `began` and was done at `ended`. */
static void times(H *h, uint32_t i, fab_time_t began, fab_time_t ended) {
  cr_assert_eq(fab_exec_began(h->x, i), began, "op %u began at %g us, expected %g us", i,
               (double)fab_exec_began(h->x, i) / US, (double)began / US);
  cr_assert_eq(fab_exec_ended(h->x, i), ended, "op %u ended at %g us, expected %g us", i,
               (double)fab_exec_ended(h->x, i) / US, (double)ended / US);
}

static uint32_t compute(FabDag *d, uint32_t rank, fab_time_t dur, const uint32_t *deps, uint32_t ndeps) {
  return fab_dag_compute(d, rank, dur, FAB_PHASE_OTHER, 0, 0, deps, ndeps);
}

static uint32_t flow(FabDag *d, uint32_t src, uint32_t dst, uint64_t bytes, fab_time_t pre, fab_time_t post,
                     const uint32_t *deps, uint32_t ndeps) {
  return fab_dag_flow(d, src, dst, bytes, 0, 0, -1, pre, post, deps, ndeps);
}

static uint32_t mark(FabDag *d, uint32_t rank, const uint32_t *deps, uint32_t ndeps) {
  return fab_dag_mark(d, rank, FAB_MARK_JOIN, 0, -1, deps, ndeps);
}

/* ---- cases ----------------------------------------------------------------- */

Test(exec, empty_dag_is_finished_at_once) {
  H *h = h_new(fab_dag_new());
  h_run(h);
  h_check_finished(h);
  cr_assert_eq(fab_exec_ops(h->x), 0);
  cr_assert_eq(fab_exec_last_end(h->x), 0);
  h_free(h);
}

/* A (rank 0, 2 us) -> B (rank 1, 3 us) -> C (rank 0, 5 us): each begins when
** the previous is done: A [0, 2], B [2, 5], C [5, 10]. */
Test(exec, chain_of_computes) {
  FabDag *d = fab_dag_new();
  uint32_t a = compute(d, 0, 2 * US, NULL, 0);
  uint32_t b = compute(d, 1, 3 * US, &a, 1);
  uint32_t c = compute(d, 0, 5 * US, &b, 1);
  H *h = h_new(d);
  uint32_t left = 99;
  cr_assert_eq(fab_exec_first_waiting(h->x, &left), a, "before the start, nothing became ready");
  cr_assert_eq(left, 0);
  h_run(h);
  h_check_finished(h);
  times(h, a, 0, 2 * US);
  times(h, b, 2 * US, 5 * US);
  times(h, c, 5 * US, 10 * US);
  cr_assert_eq(fab_exec_last_end(h->x), 10 * US);
  cr_assert_eq(h->rank[a], 0);
  cr_assert_eq(h->rank[b], 1, "the compute hook names the op's rank");
  cr_assert_eq(h->dur[c], 5 * US, "and its duration");
  cr_assert_eq(h->log->len, 3);
  cr_assert_eq(h->nreduce, 0);
  h_free(h);
}

/* Two branches joined by a mark J, then D (rank 2, 1 us) after it:
**   rank 0: A (4 us) -> B (Bd)              B ends at 4 + Bd
**   rank 1: C (3 us) -> F (1000 B to rank 2) F posted at 3, sent at 4, arrives at 5
** J is done at max(4 + Bd, 5), at once (a mark takes no time); D runs 1 us
** from there. Bd = 6 us: the compute branch is the longer (J at 10 us);
** Bd = 500 ns: the flow branch is (J at 5 us). */
Test(exec, join_ends_at_the_later_branch) {
  const fab_time_t Bd[2] = {6 * US, 500 * NS}, J[2] = {10 * US, 5 * US};
  for (int k = 0; k < 2; k++) {
    FabDag *d = fab_dag_new();
    uint32_t a = compute(d, 0, 4 * US, NULL, 0);
    uint32_t b = compute(d, 0, Bd[k], &a, 1);
    uint32_t c = compute(d, 1, 3 * US, NULL, 0);
    uint32_t f = flow(d, 1, 2, 1000, 0, 0, &c, 1);
    uint32_t both[] = {b, f};
    uint32_t j = mark(d, 2, both, 2);
    uint32_t dd = compute(d, 2, 1 * US, &j, 1);
    H *h = h_new(d);
    h_run(h);
    h_check_finished(h);
    times(h, a, 0, 4 * US);
    times(h, b, 4 * US, 4 * US + Bd[k]);
    times(h, c, 0, 3 * US);
    times(h, f, 3 * US, 5 * US);
    cr_assert_eq(h->posted[f], 3 * US);
    cr_assert_eq(h->sent[f], 4 * US);
    times(h, j, J[k], J[k]);
    times(h, dd, J[k], J[k] + 1 * US);
    cr_assert_eq(fab_exec_last_end(h->x), J[k] + 1 * US);
    h_free(h);
  }
}

/* `start` is a lower bound on when an op begins:
**   A  rank 0, 1 us, no deps                         [0, 1]
**   B  rank 1, 1 us, start 20 us, after A            begins at 20 (not 1): [20, 21]
**   C  rank 2, 2 us, start 7 us, no deps             [7, 9]
**   D  rank 3, 1 us, start 500 ns, after A           start already past: [1, 2]
**   M  mark, start 15 us, after A                    done at 15
**   F  flow 0 -> 1, 1000 B, start 30 us, pre 2 us    begins 30, posted 32, sent 33, arrives 34
**   G  flow 2 -> 3, 1000 B, start 12 us, after A     begins and is posted at 12, arrives 14 */
Test(exec, start_in_the_future_begins_then) {
  FabDag *d = fab_dag_new();
  uint32_t a = compute(d, 0, 1 * US, NULL, 0);
  FabOp ob = {.kind = FAB_OP_COMPUTE, .src = 1, .dst = 1, .coll = -1, .dur = 1 * US, .start = 20 * US};
  uint32_t b = fab_dag_add(d, &ob, &a, 1);
  FabOp oc = {.kind = FAB_OP_COMPUTE, .src = 2, .dst = 2, .coll = -1, .dur = 2 * US, .start = 7 * US};
  uint32_t c = fab_dag_add(d, &oc, NULL, 0);
  FabOp od = {.kind = FAB_OP_COMPUTE, .src = 3, .dst = 3, .coll = -1, .dur = 1 * US, .start = 500 * NS};
  uint32_t dd = fab_dag_add(d, &od, &a, 1);
  FabOp om = {.kind = FAB_OP_MARK, .src = 0, .dst = 0, .coll = -1, .start = 15 * US};
  uint32_t m = fab_dag_add(d, &om, &a, 1);
  FabOp of = {.kind = FAB_OP_FLOW, .src = 0, .dst = 1, .coll = -1, .bytes = 1000, .start = 30 * US, .pre = 2 * US};
  uint32_t f = fab_dag_add(d, &of, NULL, 0);
  FabOp og = {.kind = FAB_OP_FLOW, .src = 2, .dst = 3, .coll = -1, .bytes = 1000, .start = 12 * US};
  uint32_t g = fab_dag_add(d, &og, &a, 1);
  H *h = h_new(d);
  h_run(h);
  h_check_finished(h);
  times(h, a, 0, 1 * US);
  times(h, b, 20 * US, 21 * US);
  times(h, c, 7 * US, 9 * US);
  times(h, dd, 1 * US, 2 * US);
  times(h, m, 15 * US, 15 * US);
  times(h, f, 30 * US, 34 * US);
  cr_assert_eq(h->posted[f], 32 * US, "posted at start + pre");
  cr_assert_eq(h->sent[f], 33 * US);
  times(h, g, 12 * US, 14 * US);
  cr_assert_eq(h->posted[g], 12 * US);
  cr_assert_eq(fab_exec_last_end(h->x), 34 * US);
  h_free(h);
}

/* FAB_DEP_SENT waits for the flow's last packet to leave, not to arrive:
**   F1  flow 0 -> 1, 3000 B, no deps        posted 0, sent 3, arrives 4
**   F2  the same, after F1 is sent          posted 3 (before F1 arrived), sent 6, arrives 7
**   F3  the same, after F1 arrived          posted 4, sent 7, arrives 8
**   C   rank 2, 1 us, after F1 is sent      [3, 4]
**   M   mark after F2 and F3 are sent       done at 7
**   X   rank 3, 1 us, after F1 sent and F2 arrived   [7, 8] */
Test(exec, sent_dependency_releases_at_the_send) {
  FabDag *d = fab_dag_new();
  uint32_t f1 = flow(d, 0, 1, 3000, 0, 0, NULL, 0);
  uint32_t s1 = f1 | FAB_DEP_SENT;
  uint32_t f2 = flow(d, 0, 1, 3000, 0, 0, &s1, 1);
  uint32_t f3 = flow(d, 0, 1, 3000, 0, 0, &f1, 1);
  uint32_t c = compute(d, 2, 1 * US, &s1, 1);
  uint32_t ms[] = {f2 | FAB_DEP_SENT, f3 | FAB_DEP_SENT};
  uint32_t m = mark(d, 0, ms, 2);
  uint32_t xs[] = {s1, f2};
  uint32_t x = compute(d, 3, 1 * US, xs, 2);
  H *h = h_new(d);
  h_run(h);
  h_check_finished(h);
  times(h, f1, 0, 4 * US);
  cr_assert_eq(h->sent[f1], 3 * US);
  times(h, f2, 3 * US, 7 * US);
  cr_assert_eq(h->posted[f2], 3 * US);
  cr_assert_lt(fab_exec_began(h->x, f2), fab_exec_ended(h->x, f1), "F2 went before F1 arrived");
  cr_assert_eq(h->sent[f2], 6 * US);
  times(h, f3, 4 * US, 8 * US);
  cr_assert_eq(h->posted[f3], 4 * US);
  times(h, c, 3 * US, 4 * US);
  times(h, m, 7 * US, 7 * US);
  times(h, x, 7 * US, 8 * US);
  cr_assert_eq(h->nreduce, 0, "no post: no reduction");
  h_free(h);
}

/* pre delays the post, post delays the completion (through the reduce hook,
** on the receiver's reducer, one flow at a time in arrival order):
**   A  rank 0, 1 us                                   [0, 1]
**   F  flow 0 -> 1, 2000 B, pre 1.5 us, post 2.5 us, after A
**        begins 1, posted 2.5, sent 4.5, arrives 5.5, reduced [5.5, 8]: done at 8
**   G  flow 2 -> 1, 2000 B, pre 3 us, post 1 us, no deps
**        posted 3, sent 5, arrives 6, waits for F's reduction: reduced [8, 9]
**   B  rank 1, 1 us, after F: the compute stream is not the reducer   [8, 9]
**   K  rank 3, 1 us, after F is sent: post does not delay the send    [4.5, 5.5] */
Test(exec, pre_delays_the_post_and_post_the_completion) {
  FabDag *d = fab_dag_new();
  uint32_t a = compute(d, 0, 1 * US, NULL, 0);
  uint32_t f = flow(d, 0, 1, 2000, 1500 * NS, 2500 * NS, &a, 1);
  uint32_t g = flow(d, 2, 1, 2000, 3 * US, 1 * US, NULL, 0);
  uint32_t b = compute(d, 1, 1 * US, &f, 1);
  uint32_t sf = f | FAB_DEP_SENT;
  uint32_t k = compute(d, 3, 1 * US, &sf, 1);
  H *h = h_new(d);
  h_run(h);
  h_check_finished(h);
  times(h, a, 0, 1 * US);
  times(h, f, 1 * US, 8 * US);
  cr_assert_eq(h->posted[f], 2500 * NS, "posted pre after it became ready");
  cr_assert_eq(h->sent[f], 4500 * NS);
  cr_assert_eq(h->recv[f], 5500 * NS);
  cr_assert_eq(h->rank[f], 1, "reduced by the receiver");
  cr_assert_eq(h->dur[f], 2500 * NS, "for post");
  times(h, g, 0, 9 * US);
  cr_assert_eq(h->posted[g], 3 * US);
  cr_assert_eq(h->recv[g], 6 * US);
  cr_assert_eq(h->rank[g], 1);
  cr_assert_eq(h->dur[g], 1 * US);
  cr_assert_eq(h->nreduce, 2);
  times(h, b, 8 * US, 9 * US);
  times(h, k, 4500 * NS, 5500 * NS);
  cr_assert_eq(fab_exec_last_end(h->x), 9 * US);
  h_free(h);
}

/* A completion releases its dependents in op order, and ops done in passing
** (marks) go to the back of the worklist, not deeper first:
**   0 A   rank 0, 2 us
**   1 M   mark after A
**   2 F   rank 1, 1 us, after A
**   3 G   rank 1, 1 us, after M
**   4 H   rank 1, 1 us, after A
**   5 P1  flow 2 -> 3 after A
**   6 P2  flow 3 -> 2 after M
**   7 P3  flow 2 -> 3 after A
** At 2 us A is done: its dependents M, F, H, P1, P3 in that order (M is
** queued), then M's: G, P2. So the hooks hear A, F, H, P1, P3, G, P2, and
** rank 1's stream runs F [2, 3], H [3, 4], G [4, 5]. (Depth first, G would
** have come before F.) */
/* A receiver-driven flow (FAB_FLOW_RDV) learns of its receiver's readiness,
** its first dependency, one control message (CTRL, 3 us) later:
**   A  rank 1, 2 us (the receiver is ready)        [0, 2]
**   B  rank 0, 6 us (the sender's data)            [0, 6]
**   F  flow 0 -> 1, 1000 B, RDV, after A           posted 2 + 3 = 5, sent 6, arrives 7
**   G  the same with pre 4 us                      posted max(2 + 4, 2 + 3) = 6, arrives 8
**   H  flow 0 -> 1, RDV, after A and B             posted max(6, 2 + 3) = 6: the message came while B ran
**   P  flow 0 -> 1, not RDV, after A               posted 2, arrives 4 */
Test(exec, receiver_driven_flow_waits_for_the_control_message) {
  FabDag *d = fab_dag_new();
  uint32_t a = compute(d, 1, 2 * US, NULL, 0), b = compute(d, 0, 6 * US, NULL, 0);
  uint32_t f = flow(d, 0, 1, 1000, 0, 0, &a, 1), g = flow(d, 0, 1, 1000, 4 * US, 0, &a, 1);
  uint32_t ab[] = {a, b};
  uint32_t hh = flow(d, 0, 1, 1000, 0, 0, ab, 2), p = flow(d, 0, 1, 1000, 0, 0, &a, 1);
  fab_dag_op(d, f)->mark = fab_dag_op(d, g)->mark = fab_dag_op(d, hh)->mark = FAB_FLOW_RDV;
  H *h = h_new(d);
  h_run(h);
  h_check_finished(h);
  times(h, a, 0, 2 * US);
  times(h, b, 0, 6 * US);
  cr_assert_eq(h->posted[f], 5 * US);
  times(h, f, 2 * US, 7 * US);
  cr_assert_eq(h->posted[g], 6 * US);
  cr_assert_eq(h->recv[g], 8 * US);
  cr_assert_eq(h->posted[hh], 6 * US);
  cr_assert_eq(h->posted[p], 2 * US);
  cr_assert_eq(h->recv[p], 4 * US);
  cr_assert_eq(fab_exec_inexact(h->x), 0);
  h_free(h);
}

Test(exec, worklist_releases_dependents_in_op_order) {
  FabDag *d = fab_dag_new();
  uint32_t a = compute(d, 0, 2 * US, NULL, 0);
  uint32_t m = mark(d, 0, &a, 1);
  uint32_t f = compute(d, 1, 1 * US, &a, 1);
  uint32_t g = compute(d, 1, 1 * US, &m, 1);
  uint32_t hh = compute(d, 1, 1 * US, &a, 1);
  uint32_t p1 = flow(d, 2, 3, 1000, 0, 0, &a, 1);
  uint32_t p2 = flow(d, 3, 2, 1000, 0, 0, &m, 1);
  uint32_t p3 = flow(d, 2, 3, 1000, 0, 0, &a, 1);
  H *h = h_new(d);
  h_run(h);
  h_check_finished(h);
  const uint32_t want[] = {a, f, hh, p1, p3, g, p2};
  cr_assert_eq(h->log->len, G_N_ELEMENTS(want));
  for (uint32_t i = 0; i < G_N_ELEMENTS(want); i++)
    cr_assert_eq(g_array_index(h->log, uint32_t, i), want[i], "hook call %u: op %u, expected op %u", i,
                 g_array_index(h->log, uint32_t, i), want[i]);
  times(h, m, 2 * US, 2 * US);
  times(h, f, 2 * US, 3 * US);
  times(h, hh, 3 * US, 4 * US);
  times(h, g, 4 * US, 5 * US);
  times(h, p1, 2 * US, 4 * US);
  times(h, p2, 2 * US, 4 * US);
  times(h, p3, 2 * US, 4 * US);
  h_free(h);
}

/* A long chain of marks behind one compute: all done when it is, through
** the worklist (a recursion this deep would overflow the stack). */
Test(exec, long_chain_of_marks_needs_no_recursion) {
  const uint32_t n = 200000;
  FabDag *d = fab_dag_new();
  uint32_t prev = compute(d, 0, 3 * US, NULL, 0);
  for (uint32_t i = 0; i < n; i++) prev = mark(d, 0, &prev, 1);
  uint32_t last = compute(d, 1, 1 * US, &prev, 1);
  H *h = h_new(d);
  h_run(h);
  h_check_finished(h);
  times(h, 1, 3 * US, 3 * US);
  times(h, prev, 3 * US, 3 * US);
  times(h, last, 3 * US, 4 * US);
  h_free(h);
}

/* A flow that never arrives: what depends on its arrival never becomes
** ready; what depends on its send does.
**   0 A  rank 0, 1 us                    [0, 1]
**   1 F  flow 0 -> 1, 1000 B: sent at 1 us, never arrives
**   2 B  rank 1, after A and F           waits for F (1 dependency left)
**   3 C  rank 1, after B                 waits for B
**   4 S  rank 2, 1 us, after F is sent   [1, 2] */
Test(exec, first_waiting_names_the_op_stuck_on_a_dependency) {
  FabDag *d = fab_dag_new();
  uint32_t a = compute(d, 0, 1 * US, NULL, 0);
  uint32_t f = flow(d, 0, 1, 1000, 0, 0, NULL, 0);
  uint32_t ab[] = {a, f};
  uint32_t b = compute(d, 1, 1 * US, ab, 2);
  uint32_t c = compute(d, 1, 1 * US, &b, 1);
  uint32_t sf = f | FAB_DEP_SENT;
  uint32_t s = compute(d, 2, 1 * US, &sf, 1);
  H *h = h_new(d);
  h->lose = f;
  h_run(h);
  h_check_order(h);
  cr_assert(!fab_exec_finished(h->x));
  cr_assert_eq(fab_exec_ops_done(h->x), 2);
  uint32_t left = 99;
  cr_assert_eq(fab_exec_first_waiting(h->x, &left), b, "B waits");
  cr_assert_eq(left, 1, "for F alone");
  cr_assert_eq(fab_exec_state(h->x, a), FAB_EXEC_DONE);
  cr_assert_eq(fab_exec_state(h->x, f), FAB_EXEC_RUNNING, "posted, never received");
  cr_assert_eq(fab_exec_state(h->x, b), FAB_EXEC_WAITING);
  cr_assert_eq(fab_exec_state(h->x, c), FAB_EXEC_WAITING);
  cr_assert_eq(fab_exec_state(h->x, s), FAB_EXEC_DONE);
  times(h, s, 1 * US, 2 * US);
  cr_assert_eq(h->sent[f], 1 * US);
  cr_assert_eq(h->recv[f], NEVER);
  cr_assert_eq(fab_exec_last_end(h->x), 2 * US);
  h_free(h);
}

/* check_order is not vacuous: an owner that reports B done at once, as if it
** had begun at 0, before A (which B depends on) was done at 2 us. */
Test(exec, check_order_catches_an_op_begun_too_early) {
  FabDag *d = fab_dag_new();
  uint32_t a = compute(d, 0, 2 * US, NULL, 0);
  uint32_t b = compute(d, 1, 1 * US, &a, 1);
  H *h = h_new(d);
  h->liar = b;
  h_run(h);
  cr_assert(fab_exec_finished(h->x));
  times(h, b, 0, 2 * US);
  uint32_t op = 99, dep = 99;
  cr_assert(!fab_exec_check_order(h->x, &op, &dep));
  cr_assert_eq(op, b);
  cr_assert_eq(dep, a);
  h_free(h);
}

/* The same for a dependency on a flow's send: S waits for F's last packet to
** leave (at 1 us: 1000 B at the harness's rate after A), but the owner
** reports S begun at 0. */
Test(exec, check_order_catches_an_op_begun_before_a_send) {
  FabDag *d = fab_dag_new();
  uint32_t a = compute(d, 0, 1 * US, NULL, 0);
  uint32_t f = flow(d, 0, 1, 1000, 0, 0, &a, 1);
  uint32_t sf = f | FAB_DEP_SENT;
  uint32_t s = compute(d, 2, 1 * US, &sf, 1);
  H *h = h_new(d);
  h->liar = s;
  h_run(h);
  cr_assert(fab_exec_finished(h->x));
  cr_assert_gt(h->sent[f], 0);
  uint32_t op = 99, dep = 99;
  cr_assert(!fab_exec_check_order(h->x, &op, &dep));
  cr_assert_eq(op, s);
  cr_assert_eq(dep, f, "the flow's index, without the SENT flag");
  h_free(h);
}

/* `pre` counts from a flow's data, not from the send it queues behind:
**   0 A  rank 0, 1 us                       [0, 1]
**   1 F  0 -> 1, 4000 B, after A            posted 1 (pre 0), sent 5, arrives 6
**   2 G  0 -> 1, 1000 B, after A and F's send, pre 2 us:
**        its data (A) was done at 1, so 1 + 2 = 3 < 5: posted at 5, the send
**   3 H  the same with pre 6 us: 1 + 6 = 7 > 5: posted at 7 */
Test(exec, pre_counts_from_the_data_not_from_the_queue) {
  FabDag *d = fab_dag_new();
  uint32_t a = compute(d, 0, 1 * US, NULL, 0);
  uint32_t f = flow(d, 0, 1, 4000, 0, 0, &a, 1);
  uint32_t deps[2] = {a, f | FAB_DEP_SENT};
  uint32_t g = flow(d, 0, 1, 1000, 2 * US, 0, deps, 2);
  uint32_t hh = flow(d, 0, 2, 1000, 6 * US, 0, deps, 2);
  H *h = h_new(d);
  h_run(h);
  h_check_finished(h);
  cr_assert_eq(h->posted[f], 1 * US);
  cr_assert_eq(h->sent[f], 5 * US);
  cr_assert_eq(h->posted[g], 5 * US, "queued behind F's send: its 2 us overlap it");
  cr_assert_eq(h->posted[hh], 7 * US, "6 us after its data: longer than the queue");
  h_free(h);
}

/* ---- a DAG made as it runs (fab_dag_set_more) -------------------------------- */

/* A ring of NR ranks, step by step, one batch per step s:
**   flow (s, r) r -> r+1 of RB bytes, pre RP, after flow (s-1, r-1) arrived
**     and flow (s-1, r) left (its connection's order);
**   compute (s) on rank 0, RD, after flow (s, NR-1) arrived;
**   mark (s) after compute (s) and flow (s, 0).
** Every flow of step s waits for step s - 1: the unfolding contract. */
#define RB 3000
#define RP (2 * US)
#define RD (1 * US)
typedef struct Ring {
  uint32_t steps, s;
  uint32_t prev[4][NR]; /* the flows of the last four steps, step s at [s % 4] */
  bool far;             /* flow (s, r) also waits for flow (s - 3, r) to arrive (a slot, long retired) */
} Ring;

static void ring_step(Ring *g, FabDag *d) {
  uint32_t *cur = g->prev[g->s % 4], *before = g->prev[(g->s + 3) % 4], *far = g->prev[(g->s + 1) % 4];
  for (uint32_t r = 0; r < NR; r++) {
    uint32_t deps[3] = {g->s ? before[(r + NR - 1) % NR] : FAB_OP_NONE,
                        g->s ? before[r] | FAB_DEP_SENT : FAB_OP_NONE, g->far && g->s >= 3 ? far[r] : FAB_OP_NONE};
    cur[r] = flow(d, r, (r + 1) % NR, RB, RP, 0, deps, 3);
  }
  uint32_t c = compute(d, 0, RD, &cur[NR - 1], 1);
  uint32_t deps[2] = {c, cur[0]};
  mark(d, 0, deps, 2);
  g->s++;
}

static bool ring_more(void *ctx, FabDag *d) {
  Ring *g = ctx;
  if (g->s == g->steps) return false;
  ring_step(g, d);
  return g->s < g->steps;
}

/* The ring made whole before the run (unfold false) or batch by batch. */
static FabDag *ring_dag(Ring *g, uint32_t steps, bool unfold) {
  *g = (Ring){.steps = steps, .far = g->far};
  FabDag *d = fab_dag_new();
  if (unfold) fab_dag_set_more(d, ring_more, g, NULL);
  else
    while (g->s < steps) ring_step(g, d);
  return d;
}

/* Unfolding changes nothing: every op's times and the order of the hooks'
** calls are those of the DAG made whole. */
Test(exec, unfolding_dag_runs_as_if_made_first) {
  Ring g1 = {0}, g2 = {0};
  H *a = h_new(ring_dag(&g1, 50, false)), *b = h_new(ring_dag(&g2, 50, true));
  cr_assert_eq(fab_exec_ops(a->x), 50 * (NR + 2));
  cr_assert_eq(fab_exec_ops(b->x), NR + 2, "only the first batch before the run");
  h_run(a);
  h_run(b);
  h_check_finished(a);
  h_check_finished(b);
  cr_assert_eq(b->n, a->n);
  for (uint32_t i = 0; i < a->n; i++) {
    times(b, i, fab_exec_began(a->x, i), fab_exec_ended(a->x, i));
    cr_assert_eq(b->posted[i], a->posted[i], "op %u", i);
    cr_assert_eq(b->recv[i], a->recv[i], "op %u", i);
  }
  cr_assert_eq(b->log->len, a->log->len);
  cr_assert_eq(memcmp(b->log->data, a->log->data, a->log->len * sizeof(uint32_t)), 0, "hooks called in one order");
  cr_assert_eq(fab_exec_inexact(b->x), 0);
  h_free(a);
  h_free(b);
}

/* Retired as it goes, a long unfolding ring holds a few batches, not all of
** them, and keeps its times: step s's flows are posted at RP + s (RB ns +
** LAT + RP) (each waits for the one before it along the ring, RP after it
** arrived), the last compute begins when the last flow arrives. */
Test(exec, unfolding_dag_retired_as_it_runs_stays_small) {
  const uint32_t steps = 20000;
  Ring g = {0};
  H *h = h_new(ring_dag(&g, steps, true));
  h->retire = true;
  h_run(h);
  h_check_order(h);
  cr_assert(fab_exec_finished(h->x));
  cr_assert_eq(fab_exec_ops_done(h->x), steps * (NR + 2));
  const fab_time_t per = SEND(RB) + LAT + RP;
  for (uint32_t s = 0; s < steps; s += 997)
    for (uint32_t r = 0; r < NR; r++) cr_assert_eq(h->posted[s * (NR + 2) + r], RP + s * per, "step %u rank %u", s, r);
  cr_assert_eq(h->eng->now, steps * per + RD);
  cr_assert_eq(fab_exec_last_end(h->x), steps * per + RD);
  /* retired: all but the ops done within the largest `pre` (RP) of the end, the last step's */
  cr_assert_geq(fab_exec_base(h->x), (steps - 1) * (NR + 2));
  cr_assert_eq(fab_exec_inexact(h->x), 0);
  size_t whole = (size_t)steps * (NR + 2) * sizeof(FabOp);
  cr_assert_lt(h->most, whole / 20, "held %zu bytes at most; the DAG's ops alone are %zu", h->most, whole);
  h_free(h);
}

/* Retiring is exact for ops made later that wait for retired ones: a retired
** op is done and sent, and its time no longer matters (done at least the
** largest `pre` ago). Each flow here also waits for its rank's flow three
** steps before, retired by the time it is made: the times are those of the
** DAG made whole. */
Test(exec, retired_dependencies_count_as_done_and_sent) {
  Ring g1 = {.far = true}, g2 = {.far = true};
  H *a = h_new(ring_dag(&g1, 40, false)), *b = h_new(ring_dag(&g2, 40, true));
  b->retire = true;
  h_run(a);
  h_run(b);
  h_check_finished(a);
  h_check_order(b);
  cr_assert(fab_exec_finished(b->x));
  cr_assert_gt(fab_exec_base(b->x), 30 * (NR + 2), "retired as it went");
  cr_assert_eq(b->n, a->n);
  for (uint32_t i = 0; i < a->n; i++) {
    cr_assert_eq(b->posted[i], a->posted[i], "op %u", i);
    cr_assert_eq(b->recv[i], a->recv[i], "op %u", i);
  }
  cr_assert_eq(b->eng->now, a->eng->now);
  cr_assert_eq(fab_exec_inexact(b->x), 0);
  uint32_t left = 9;
  cr_assert_eq(fab_exec_first_waiting(b->x, &left), FAB_OP_NONE);
  h_free(a);
  h_free(b);
}

/* The contract: an op of a later batch that waits for nothing of the batch
** before it (or its own) could be made after all it waits for is done, and
** is refused. */
static bool loose_more(void *ctx, FabDag *d) {
  uint32_t *calls = ctx, first = 0;
  if ((*calls)++ == 0) flow(d, 0, 1, 100, 0, 0, NULL, 0); /* the first batch: a root */
  else if (*calls == 2) flow(d, 1, 2, 100, 0, 0, &first, 1); /* batch 1 may wait for batch 0 */
  else flow(d, 2, 3, 100, 0, 0, &first, 1); /* batch 2 waits only for batch 0: refused */
  return *calls < 3;
}

Test(exec, unanchored_op_in_a_later_batch_aborts, .signal = SIGABRT) {
  uint32_t calls = 0;
  FabDag *d = fab_dag_new();
  fab_dag_set_more(d, loose_more, &calls, NULL);
  H *h = h_new(d);
  h_run(h);
}

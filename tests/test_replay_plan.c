/*
** fabsim-replay's plan and its passes (tools/replay_plan.c, replay_run.c),
** without MPI or libfabric: a hand-made DAG whose plan is worked out on
** paper, a ring allreduce's plans checked against each other, and passes run
** by threads (one per process) over a toy transport in memory: a send copies
** the bytes into the receiver's arena and tells both ends; a notice is put in
** its addressee's inbox. tests/test_replay.py runs the real thing.
*/
#include <criterion/criterion.h>
#include <errno.h>
#include <glib.h>
#include <string.h>
#include "tools/libfabsim/scenario.h"
#include "tools/replay.h"

/* The DAG on paper, on endpoints 5, 7, 9 (processes 0, 1, 2):
**   op0  flow 5 -> 7, 100 B
**   op1  flow 7 -> 9, 50 B, after op0 is done         (process 1 learns it: its own receive)
**   op2  flow 9 -> 5, 30 B, after op1 is sent          (process 1 learns it: it tells process 2)
**   op3  mark at 5, after op2 and op1 are done         (op2: process 0's receive; op1: process 2 tells)
**   op4  flow 5 -> 7, 10 B, after op0 is done          (process 1 tells process 0) */
static FabDag *paper(void) {
  FabDag *d = fab_dag_new();
  uint32_t o0 = fab_dag_flow(d, 5, 7, 100, 0, 0, -1, 0, 0, NULL, 0);
  uint32_t o1 = fab_dag_flow(d, 7, 9, 50, 0, 0, -1, 0, 0, &o0, 1);
  uint32_t s1 = o1 | FAB_DEP_SENT;
  uint32_t o2 = fab_dag_flow(d, 9, 5, 30, 0, 0, -1, 0, 0, &s1, 1);
  uint32_t d3[2] = {o2, o1};
  fab_dag_mark(d, 5, FAB_MARK_JOIN, 0, -1, d3, 2);
  fab_dag_flow(d, 5, 7, 10, 0, 0, -1, 0, 0, &o0, 1);
  return d;
}

static void tells(const FabReplayPlan *p, uint32_t op, uint32_t n, const uint32_t *want) {
  cr_assert_eq(p->tell_off[op + 1] - p->tell_off[op], n, "op %u: %u notices", op, p->tell_off[op + 1] - p->tell_off[op]);
  for (uint32_t k = 0; k < n; k++) cr_expect_eq(p->tell_list[p->tell_off[op] + k], want[k]);
}

Test(replay_plan, worked_on_paper) {
  FabDag *d = paper();
  FabReplayPlan p[3];
  char *why = NULL;
  for (uint32_t me = 0; me < 3; me++) cr_assert(fab_replay_plan(&p[me], d, me, 100, &why), "%s", why);
  cr_assert_eq(p[0].nprocs, 3);
  uint32_t ep[3] = {5, 7, 9}, actor[5] = {0, 1, 2, 0, 0}, observer[5] = {1, 2, 0, 0, 1};
  for (uint32_t k = 0; k < 3; k++) cr_expect_eq(p[0].ep_of[k], ep[k]);
  for (uint32_t i = 0; i < 5; i++) {
    cr_expect_eq(p[1].actor[i], actor[i], "op %u", i);
    cr_expect_eq(p[1].observer[i], observer[i], "op %u", i);
  }
  /* arenas, 64-byte aligned places: process 1 receives op0 (100 B) then op4 (10 B), sends op1 (50 B) */
  cr_expect_eq(p[1].recv_off[0], 0);
  cr_expect_eq(p[1].recv_off[4], 128);
  cr_expect_eq(p[1].recv_bytes, 192);
  cr_expect_eq(p[1].send_bytes, 64);
  cr_expect_eq(p[0].send_off[4], 128); /* after op0's 100 B */
  cr_expect_eq(p[0].recv_bytes, 64);   /* op2 */
  cr_expect_eq(p[1].recvs, 2);
  cr_expect_eq(p[0].mine, 3);
  cr_expect_eq(p[0].flows, 4);
  /* waits */
  cr_expect_eq(p[0].need[3], 2);
  cr_expect_eq(p[0].need[4], 1);
  cr_expect_eq(p[0].need[0], 0);
  cr_expect_eq(p[1].need[1], 1);
  cr_expect_eq(p[2].need[2], 1);
  /* notices: process 1 tells 0 of op0 done, 2 of op1 sent; process 2 tells 0 of op1 done; process 0 no one */
  tells(&p[1], 0, 1, (uint32_t[]){0});
  tells(&p[1], 1, 1, (uint32_t[]){2 | FAB_REPLAY_SENT});
  tells(&p[2], 1, 1, (uint32_t[]){0});
  for (uint32_t i = 0; i < 5; i++) tells(&p[0], i, 0, NULL);
  cr_expect_eq(p[2].tell_off[5], 1);
  for (int k = 0; k < 3; k++) fab_replay_plan_clear(&p[k]);
  fab_dag_free(d);
}

Test(replay_plan, pattern) {
  uint8_t a[1000], b[1000];
  for (uint64_t len = 0; len < 18; len++) {
    fab_replay_fill(a, len, 3, 1);
    cr_expect_eq(fab_replay_check(a, len, 3, 1), len);
  }
  fab_replay_fill(a, sizeof a, 3, 1);
  fab_replay_fill(b, sizeof b, 3, 2); /* another pass */
  cr_expect_eq(fab_replay_check(b, sizeof b, 3, 1), 0);
  fab_replay_fill(b, sizeof b, 4, 1); /* another op */
  cr_expect_eq(fab_replay_check(b, sizeof b, 3, 1), 0);
  a[777] ^= 1;
  cr_expect_eq(fab_replay_check(a, sizeof a, 3, 1), 777);
  a[777] ^= 1;
  memcpy(a + 8, a, 8); /* a word in the wrong place */
  cr_expect_eq(fab_replay_check(a, sizeof a, 3, 1), 8);
}

/* ---- passes over a toy transport, a thread per process ---- */

#define NP_MAX 8
typedef struct Toy Toy;
typedef struct Proc {
  Toy *toy;
  uint32_t me;
  FabReplayPlan plan;
  FabReplayNet net;
  GAsyncQueue *inbox; /* FabReplayDone * */
  int rc;
  char *err;
  FabReplayTimes t;
} Proc;
struct Toy {
  Proc pr[NP_MAX];
  uint32_t n;
  bool drop_notices_to_0; /* a lost notice */
  GMutex mu;              /* the barrier between passes (mpirun's MPI_Barrier), broken when a process fails */
  GCond cv;
  uint32_t arrived, round;
  bool broken;
};

/* Wait for every process (false: one failed, go no further). */
static bool barrier(Toy *t, bool ok) {
  g_mutex_lock(&t->mu);
  if (!ok) t->broken = true;
  uint32_t r = t->round;
  if (++t->arrived == t->n) {
    t->arrived = 0;
    t->round++;
    g_cond_broadcast(&t->cv);
  } else {
    while (r == t->round && !t->broken) g_cond_wait(&t->cv, &t->mu);
  }
  if (t->broken) g_cond_broadcast(&t->cv);
  bool go = !t->broken;
  g_mutex_unlock(&t->mu);
  return go;
}

static void put(Proc *to, uint8_t kind, uint32_t op, uint64_t word) {
  FabReplayDone *e = g_new(FabReplayDone, 1);
  *e = (FabReplayDone){kind, op, word};
  g_async_queue_push(to->inbox, e);
}

static int toy_send(void *ctx, uint32_t op, uint32_t pass, uint32_t to, uint64_t soff, uint64_t len, uint64_t roff,
                    char **err) {
  Proc *me = ctx, *dst = &me->toy->pr[to];
  memcpy(dst->net.recv_arena + roff, me->net.send_arena + soff, len);
  put(me, FAB_REPLAY_EV_SEND, op, 0);
  put(dst, FAB_REPLAY_EV_RECV, op, 0);
  return 0;
}
static int toy_recv(void *ctx, uint32_t op, uint32_t pass, uint32_t from, uint64_t roff, uint64_t len, char **err) {
  return 0;
}
static int toy_ctrl(void *ctx, uint32_t to, uint64_t word, char **err) {
  Proc *me = ctx;
  if (!(to == 0 && me->toy->drop_notices_to_0)) put(&me->toy->pr[to], FAB_REPLAY_EV_CTRL, 0, word);
  return 0;
}
static int toy_poll(void *ctx, FabReplayDone *out, int max, char **err) {
  Proc *me = ctx;
  int n = 0;
  FabReplayDone *e;
  while (n < max && (e = g_async_queue_try_pop(me->inbox))) {
    out[n++] = *e;
    g_free(e);
  }
  return n;
}

static gpointer proc_main(gpointer data) {
  Proc *p = data;
  for (uint32_t pass = 0; pass < 3 && !p->rc; pass++) {
    fab_replay_prepare(&p->plan, &p->net, pass);
    if (!barrier(p->toy, true)) break;
    p->rc = fab_replay_pass(&p->plan, &p->net, pass, 0.5, 0, &p->t, &p->err);
  }
  if (p->rc) barrier(p->toy, false);
  return NULL;
}

/* Run 3 passes of dag on its processes; every failure's message, "; "-joined (NULL: none). */
static char *toy_run(FabDag *d, bool corrupt, bool drop) {
  Toy *toy = g_new0(Toy, 1);
  toy->drop_notices_to_0 = drop;
  g_mutex_init(&toy->mu);
  g_cond_init(&toy->cv);
  char *why = NULL;
  for (uint32_t me = 0; me == 0 || me < toy->pr[0].plan.nprocs; me++) {
    Proc *p = &toy->pr[me];
    cr_assert(fab_replay_plan(&p->plan, d, me, 1000000, &why), "%s", why);
    cr_assert(p->plan.nprocs <= NP_MAX);
    *p = (Proc){toy, me, p->plan, {p, toy_send, toy_recv, toy_ctrl, toy_poll, NULL, NULL, false}, g_async_queue_new(),
                0, NULL, {NULL, NULL}};
    p->net.send_arena = g_malloc0(MAX(p->plan.send_bytes, 1));
    p->net.recv_arena = g_malloc0(MAX(p->plan.recv_bytes, 1));
    p->net.corrupt = corrupt && me == 1;
    p->t = (FabReplayTimes){g_new0(double, p->plan.nops), g_new0(double, p->plan.nops)};
    toy->n++;
  }
  GThread *th[NP_MAX];
  for (uint32_t k = 0; k < toy->n; k++) th[k] = g_thread_new("proc", proc_main, &toy->pr[k]);
  GString *err = NULL;
  for (uint32_t k = 0; k < toy->n; k++) {
    g_thread_join(th[k]);
    Proc *p = &toy->pr[k];
    if (p->rc) {
      if (!err) err = g_string_new(NULL);
      g_string_append_printf(err, "%sprocess %u: %s", err->len ? "; " : "", k, p->err);
    }
    for (uint32_t i = 0; !p->rc && i < p->plan.nops; i++) /* every flow received here has its arrival time */
      if (fab_dag_op(d, i)->kind == FAB_OP_FLOW && p->plan.observer[i] == k) cr_expect_gt(p->t.ended[i], 0);
    g_free(p->err);
    g_free(p->t.began);
    g_free(p->t.ended);
    g_free(p->net.send_arena);
    g_free(p->net.recv_arena);
    FabReplayDone *e;
    while ((e = g_async_queue_try_pop(p->inbox))) g_free(e);
    g_async_queue_unref(p->inbox);
    fab_replay_plan_clear(&p->plan);
  }
  g_mutex_clear(&toy->mu);
  g_cond_clear(&toy->cv);
  g_free(toy);
  return err ? g_string_free(err, FALSE) : NULL;
}

Test(replay_plan, passes_on_paper) {
  FabDag *d = paper();
  char *err = toy_run(d, false, false);
  cr_expect_null(err, "%s", err);
  g_free(err);
  err = toy_run(d, true, false); /* process 1 spoils a byte of op1 (its first flow): process 2 finds it */
  cr_assert_not_null(err);
  cr_expect(strstr(err, "process 2: flow op 1 (50 B from process 1, endpoint 7): byte 25 is not what was sent"), "%s", err);
  g_free(err);
  err = toy_run(d, false, true); /* process 0 never hears that op0 is done: op4 waits */
  cr_assert_not_null(err);
  cr_expect(strstr(err, "process 0: timed out after 0.5 s without progress: op 3 waits for op 1 to be done, which "
                        "process 2 (endpoint 9) has not told"), "%s", err);
  g_free(err);
  fab_dag_free(d);
}

static FabScenario *ring(void) {
  GError *e = NULL;
  FabScenario *sc = fab_scenario_load_string(
      "cluster: {nodes: 4}\n"
      "fabric: {topology: {kind: leaf-spine, hosts_per_leaf: 2, spines: 1}, link: {bandwidth: 100Gbps}}\n"
      "workload: {kind: collective, op: allreduce, size: 1MiB, algorithm: ring, protocol: simple}\n",
      "ring.yaml", NULL, NULL, &e);
  cr_assert_not_null(sc, "%s", e ? e->message : "");
  return sc;
}

/* A ring allreduce of 1 MiB on 4 ranks, Simple: each rank receives 2 (n - 1) / n of it; every wait on
** another process is owed a notice by the process that learns of it, and no notice goes to a process that
** does not wait. Passes over the toy transport all check out. */
Test(replay_plan, ring_allreduce) {
  FabScenario *sc = ring();
  FabReplayPlan p[4];
  char *why = NULL;
  for (uint32_t me = 0; me < 4; me++) cr_assert(fab_replay_plan(&p[me], sc->dag, me, 1000000, &why), "%s", why);
  const FabDag *d = sc->dag;
  for (uint32_t me = 0; me < 4; me++) {
    uint64_t in = 0;
    for (uint32_t i = 0; i < p[me].nops; i++) {
      const FabOp *o = fab_dag_op(d, i);
      if (o->kind == FAB_OP_FLOW && p[me].observer[i] == me) in += o->bytes;
    }
    cr_expect_eq(in, 3 * 1048576 / 2, "process %u receives %" G_GUINT64_FORMAT " B", me, in);
    cr_expect_geq(p[me].recv_bytes, in);
    cr_expect_lt(p[me].recv_bytes, in + 64 * (uint64_t)p[me].recvs);
  }
  for (uint32_t x = 0; x < p[0].nops; x++) { /* every remote wait has its notice */
    const FabOp *o = fab_dag_op(d, x);
    uint32_t q = p[0].actor[x];
    for (uint32_t k = 0; k < o->ndeps; k++) {
      uint32_t e = fab_dag_dep(d, o, k), y = e & ~FAB_DEP_SENT;
      bool sent = (e & FAB_DEP_SENT) && fab_dag_op(d, y)->kind == FAB_OP_FLOW;
      uint32_t l = sent ? p[0].actor[y] : p[0].observer[y];
      if (l == q) continue;
      bool found = false;
      for (uint32_t j = p[l].tell_off[y]; j < p[l].tell_off[y + 1]; j++)
        found |= p[l].tell_list[j] == (q | (sent ? FAB_REPLAY_SENT : 0));
      cr_expect(found, "op %u at process %u waits for op %u (%s), which process %u does not tell", x, q, y,
                sent ? "sent" : "done", l);
    }
  }
  for (uint32_t me = 0; me < 4; me++) fab_replay_plan_clear(&p[me]);
  char *err = toy_run(sc->dag, false, false);
  cr_expect_null(err, "%s", err);
  g_free(err);
  fab_scenario_free(sc);
}

Test(replay_plan, refusals) {
  FabDag *d = fab_dag_new();
  FabReplayPlan p;
  char *why = NULL;
  fab_dag_compute(d, 0, 1000000, FAB_PHASE_FWD, 0, 0, NULL, 0);
  cr_expect_not(fab_replay_plan(&p, d, 0, 100, &why));
  cr_expect(strstr(why, "op 0 is 1.000 us of compute (a training workload)"), "%s", why);
  g_free(why);
  fab_dag_free(d);
  d = fab_dag_new();
  for (int i = 0; i < 3; i++) fab_dag_flow(d, 0, 1, 8, 0, 0, -1, 0, 0, NULL, 0);
  cr_expect_not(fab_replay_plan(&p, d, 0, 2, &why));
  cr_expect(strstr(why, "more than 2 operations"), "%s", why);
  g_free(why);
  fab_dag_free(d);
}

/* Probes: the DAG's shape, the classes of path, what a pass's times say (made up here: round trips of 10, 30
** and 20 ns, so half the median is 10; 4 x 1000 B from t = 100 to the answer at t = 500 ns: 10 GB/s). */
Test(replay_plan, probe) {
  uint32_t eps[3] = {0, 1, 2};
  FabDag *d = fab_replay_probe_dag(eps, 3, 0, 2, 1000, 3, 4);
  cr_assert_eq(fab_dag_len(d), 3 + 6 + 4 + 1);
  for (uint32_t i = 0; i < 3; i++) cr_expect_eq(fab_dag_op(d, i)->kind, FAB_OP_MARK);
  for (uint32_t r = 0; r < 6; r++) {
    const FabOp *o = fab_dag_op(d, 3 + r);
    cr_expect_eq(o->src, r % 2 ? 2u : 0u);
    cr_expect_eq(o->ndeps, r ? 1u : 0u);
    if (r) cr_expect_eq(fab_dag_dep(d, o, 0), 3 + r - 1);
  }
  const FabOp *ack = fab_dag_op(d, 13);
  cr_expect_eq(ack->bytes, 8);
  cr_expect_eq(ack->ndeps, 4);
  double began[14] = {0}, ended[14] = {0};
  double rtt[3] = {10, 30, 20};
  for (int r = 0; r < 3; r++) began[3 + 2 * r] = 1000.0 * r, ended[3 + 2 * r + 1] = 1000.0 * r + rtt[r];
  began[9] = 100;
  ended[13] = 500;
  FabReplayTimes t = {began, ended};
  double lat, gbps;
  fab_replay_probe_read(&t, 3, 3, 4, 1000, &lat, &gbps);
  cr_expect_float_eq(lat, 10, 1e-12);
  cr_expect_float_eq(gbps, 10, 1e-12);
  fab_dag_free(d);
  cr_expect_eq(fab_replay_class(0, 1, 8, 8), FAB_REPLAY_NVLINK);
  cr_expect_eq(fab_replay_class(0, 9, 8, 72), FAB_REPLAY_NVLINK); /* one NVL72 domain across trays */
  cr_expect_eq(fab_replay_class(0, 9, 8, 8), FAB_REPLAY_NET);
  cr_expect_eq(fab_replay_class(0, 3, 4, 0), FAB_REPLAY_NODE);     /* GPUs without NVLink */
  cr_expect_eq(fab_replay_class(0, 1, 0, 0), FAB_REPLAY_NET);      /* plain hosts */
  cr_expect_eq(fab_replay_probe_window(8), 64);
  cr_expect_eq(fab_replay_probe_window(16u << 20), 16);
  cr_expect_eq(fab_replay_probe_window(1u << 30), 2);
}

Test(replay_plan, median) {
  double odd[3] = {30, 10, 20}, even[4] = {4, 1, 3, 2};
  cr_expect_float_eq(fab_replay_median(odd, 3), 20, 0);
  cr_expect_float_eq(fab_replay_median(even, 4), 2.5, 0);
}

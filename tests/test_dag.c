/* The operation DAG and its executor run whole (workloads/dag.c, exec.c, through
** tools/libfabsim/driver.c; test_exec.c tests the executor alone):
** dependencies, compute streams, pre/post delays, send-order dependencies,
** and the step report, on cases worked out by hand. */
#include <criterion/criterion.h>
#include <math.h>
#include "testscen.h"
#include "workloads/dag.h"
#include "tools/libfabsim/json.h"

#define US 1000000ull /* ps */

/* Four hosts on one switch; the workload is replaced by a hand-built DAG. */
static const char four_hosts[] =
  "cluster: {nodes: 4}\n"
  "fabric:\n"
  "  topology: {kind: single-switch}\n"
  "  link: {bandwidth: 100Gbps, latency: 1us, mtu: 4096}\n"
  "  switch: {latency: 500ns}\n"
  "workload: {kind: flows, flows: [{src: 0, dst: 1, size: 1}]}\n";

static FabScenario *with_dag(FabDag *d) {
  FabScenario *sc = testscen_load(four_hosts, NULL);
  fab_dag_free(sc->dag);
  sc->dag = d;
  return sc;
}

static FabDag *dag_with_job(uint32_t n, uint32_t steps) {
  FabDag *d = fab_dag_new();
  FabJobDef j = {g_intern_string("test"), "training", n, g_new(uint32_t, n), steps, 1, 1};
  for (uint32_t i = 0; i < n; i++) j.ranks[i] = i;
  fab_dag_job(d, &j);
  return d;
}

/* The time one flow of `bytes` takes alone, from a run of just that flow. */
static fab_time_t alone(uint64_t bytes) {
  FabDag *d = dag_with_job(4, 0);
  fab_dag_flow(d, 0, 1, bytes, 0, 0, -1, 0, 0, NULL, 0);
  FabScenario *sc = with_dag(d);
  FabResults r;
  testscen_run(sc, &r);
  fab_time_t t = r.flows[0].end - r.flows[0].start;
  cr_assert_eq(r.sim_time, t);
  testscen_done(sc, &r);
  return t;
}

Test(dag, builder_keeps_dependencies_in_order) {
  FabDag *d = fab_dag_new();
  uint32_t a = fab_dag_compute(d, 0, US, FAB_PHASE_FWD, 0, 0, NULL, 0);
  uint32_t b = fab_dag_flow(d, 0, 1, 100, 0, 0, -1, 0, 0, &a, 1);
  uint32_t deps[] = {a, FAB_OP_NONE, b | FAB_DEP_SENT};
  uint32_t c = fab_dag_mark(d, 1, FAB_MARK_JOIN, 0, -1, deps, 3);
  cr_assert_eq(fab_dag_len(d), 3);
  cr_assert_eq(fab_dag_op(d, c)->ndeps, 2, "FAB_OP_NONE is skipped");
  cr_assert_eq(fab_dag_dep(d, fab_dag_op(d, c), 0), a);
  cr_assert_eq(fab_dag_dep(d, fab_dag_op(d, c), 1), b | FAB_DEP_SENT);
  cr_assert_eq(fab_dag_flows(d), 1);
  fab_dag_free(d);
}

/* flow0 (0->1), then 10 us of compute on 1, then flow1 (1->2) posted 2 us
** later and done 3 us after it arrives, then a mark. */
Test(dag, chain_of_flow_compute_flow_with_pre_and_post) {
  fab_time_t t1 = alone(64 * 1024);
  FabDag *d = dag_with_job(4, 0);
  uint32_t f0 = fab_dag_flow(d, 0, 1, 64 * 1024, 0, 0, -1, 0, 0, NULL, 0);
  uint32_t c = fab_dag_compute(d, 1, 10 * US, FAB_PHASE_OTHER, 0, 0, &f0, 1);
  uint32_t f1 = fab_dag_flow(d, 1, 2, 64 * 1024, 0, 0, -1, 2 * US, 3 * US, &c, 1);
  fab_dag_mark(d, 2, FAB_MARK_JOIN, 0, -1, &f1, 1);
  FabScenario *sc = with_dag(d);
  FabResults r;
  testscen_run(sc, &r);
  cr_assert_eq(r.flows[0].end, t1);
  cr_assert_eq(r.flows[1].start, t1 + 10 * US + 2 * US, "posted after the compute and pre");
  cr_assert_eq(r.flows[1].end, r.flows[1].start + t1);
  cr_assert_eq(r.sim_time, r.flows[1].end + 3 * US, "done 3 us (post) after the last byte");
  cr_assert_eq(r.n_spans, 1);
  cr_assert_eq(r.spans[0].start, t1);
  cr_assert_eq(r.spans[0].end, t1 + 10 * US);
  testscen_done(sc, &r);
}

/* A rank's compute ops take turns on its stream; other ranks run at once. */
Test(dag, compute_streams_serialise_per_rank) {
  FabDag *d = dag_with_job(4, 0);
  for (int k = 0; k < 3; k++) fab_dag_compute(d, 0, 5 * US, FAB_PHASE_FWD, 0, 0, NULL, 0);
  fab_dag_compute(d, 1, 7 * US, FAB_PHASE_FWD, 0, 0, NULL, 0);
  fab_dag_flow(d, 2, 3, 1, 0, 0, -1, 0, 0, NULL, 0);
  FabScenario *sc = with_dag(d);
  FabResults r;
  testscen_run(sc, &r);
  cr_assert_eq(r.sim_time, 15 * US);
  cr_assert_eq(r.n_spans, 4);
  fab_time_t end0 = 0;
  for (size_t i = 0; i < r.n_spans; i++) {
    if (r.spans[i].rank != 0) {
      cr_assert_eq(r.spans[i].start, 0);
      cr_assert_eq(r.spans[i].end, 7 * US);
      continue;
    }
    cr_assert_eq(r.spans[i].start, end0, "FIFO on rank 0, back to back");
    end0 = r.spans[i].end;
  }
  cr_assert_eq(end0, 15 * US);
  testscen_done(sc, &r);
}

/* An op with a start time waits for it even when its dependencies are met. */
Test(dag, start_time_is_a_lower_bound) {
  FabDag *d = dag_with_job(4, 0);
  uint32_t a = fab_dag_compute(d, 0, 1 * US, FAB_PHASE_FWD, 0, 0, NULL, 0);
  FabOp o = {.kind = FAB_OP_COMPUTE, .src = 0, .dst = 0, .coll = -1, .dur = 1 * US, .start = 20 * US};
  fab_dag_add(d, &o, &a, 1);
  fab_dag_flow(d, 2, 3, 1, 0, 0, -1, 0, 0, NULL, 0);
  FabScenario *sc = with_dag(d);
  FabResults r;
  testscen_run(sc, &r);
  cr_assert_eq(r.sim_time, 21 * US);
  testscen_done(sc, &r);
}

/* A dependency on a flow's send: the second piece of a connection leaves
** right behind the first one (pipelined), not a whole flow time later. */
Test(dag, sent_dependency_pipelines_pieces_in_order) {
  uint64_t piece = 64 * 1024;
  fab_time_t t1 = alone(piece);
  FabDag *d = dag_with_job(4, 0);
  uint32_t a = fab_dag_flow(d, 0, 1, piece, 0, 0, -1, 0, 0, NULL, 0);
  uint32_t dep = a | FAB_DEP_SENT;
  fab_dag_flow(d, 0, 1, piece, 0, 0, -1, 0, 0, &dep, 1);
  FabScenario *sc = with_dag(d);
  FabResults r;
  testscen_run(sc, &r);
  /* 16 packets of 4096 + 82 B at 100 Gbps: the last one leaves after 15 */
  fab_time_t ser = fab_time_ser(4096 + 82, 100000000000ull);
  cr_assert_eq(r.flows[1].start, 15 * ser, "posted when the first flow's last packet left");
  cr_assert_lt(r.flows[1].start, r.flows[0].end);
  cr_assert_eq(r.flows[1].end - r.flows[0].end, 16 * ser, "one piece's serialisation behind, not %g us",
               (double)(r.flows[1].end - r.flows[0].end) / US);
  cr_assert_lt(r.flows[1].end, 2 * t1);
  testscen_done(sc, &r);
}

/* The step report on two ranks (worked by hand):
**   rank 0: computes [0, 10 us]; is in a collective [0, T] (T: a 1 MiB flow 1 -> 0)
**   rank 1: in the collective [0, T], then computes [T, T + 4 us]
** compute = (10 + 4) / 2 = 7 us; comm = T; overlap = (10 + 0) / 2 = 5 us;
** exposed = ((T - 10) + T) / 2; the step lasts T + 4 us, and rank 0,
** done at T, idles its last 4 us: bubble = (4 + 0) / 2 = 2 us. */
Test(dag, step_report_compute_overlap_exposed_bubble) {
  fab_time_t T = alone(1 << 20);
  FabDag *d = dag_with_job(2, 1);
  FabCollDef cd = {"send-recv", "ring", "simple", "dp", 1 << 20, 1 << 20, 1, 2, -1, 1, 1 << 20, 0, 0};
  int32_t coll = fab_dag_coll(d, &cd);
  uint32_t sb0 = fab_dag_mark(d, 0, FAB_MARK_STEP_BEGIN, 0, -1, NULL, 0);
  uint32_t sb1 = fab_dag_mark(d, 1, FAB_MARK_STEP_BEGIN, 0, -1, NULL, 0);
  uint32_t c0 = fab_dag_compute(d, 0, 10 * US, FAB_PHASE_BWD, 0, 0, &sb0, 1);
  fab_dag_mark(d, 0, FAB_MARK_COLL_BEGIN, 0, coll, &sb0, 1);
  uint32_t cb1 = fab_dag_mark(d, 1, FAB_MARK_COLL_BEGIN, 0, coll, &sb1, 1);
  uint32_t f = fab_dag_flow(d, 1, 0, 1 << 20, 0, 0, coll, 0, 0, &cb1, 1);
  uint32_t ce0 = fab_dag_mark(d, 0, FAB_MARK_COLL_END, 0, coll, &f, 1);
  uint32_t ce1 = fab_dag_mark(d, 1, FAB_MARK_COLL_END, 0, coll, &f, 1);
  uint32_t c1 = fab_dag_compute(d, 1, 4 * US, FAB_PHASE_OPT, 0, 0, &ce1, 1);
  uint32_t e0[] = {c0, ce0};
  fab_dag_mark(d, 0, FAB_MARK_STEP_END, 0, -1, e0, 2);
  fab_dag_mark(d, 1, FAB_MARK_STEP_END, 0, -1, &c1, 1);
  FabScenario *sc = with_dag(d);
  FabResults r;
  testscen_run(sc, &r);
  double t = fab_time_to_s(T), us = 1e-6;
  cr_assert_eq(r.n_steps, 1);
  const FabStepRec *st = &r.steps[0];
  cr_assert_eq(st->end - st->start, T + 4 * US);
  cr_assert_float_eq(st->compute_s, 7 * us, 1e-12);
  cr_assert_float_eq(st->comm_s, t, 1e-12);
  cr_assert_float_eq(st->overlap_s, 5 * us, 1e-12);
  cr_assert_float_eq(st->exposed_comm_s, ((t - 10 * us) + t) / 2, 1e-12);
  cr_assert_float_eq(st->bubble_s, 2 * us, 1e-12);
  cr_assert_eq(r.n_colls, 1);
  cr_assert_eq(r.colls[0].start, 0);
  cr_assert_eq(r.colls[0].end, T);
  cr_assert_eq(r.n_spans, 4, "2 compute + 2 collective spans");
  char *js = fab_json_summary(&r);
  cr_assert(strstr(js, "\"step\": {\"job\": \"test\""), "%s", js);
  cr_assert(strstr(js, "\"by_tag\": {\"dp\": {\"count\": 1"), "%s", js);
  g_free(js);
  testscen_done(sc, &r);
}

/* Idle time that is neither compute nor collective is the bubble: rank 1
** waits 20 us for a flow that is not a collective, rank 0 waits for rank 1
** to end the step: each idles for the step less its 20 us of compute. */
Test(dag, waiting_outside_collectives_is_bubble) {
  FabDag *d = dag_with_job(2, 1);
  uint32_t sb0 = fab_dag_mark(d, 0, FAB_MARK_STEP_BEGIN, 0, -1, NULL, 0);
  uint32_t sb1 = fab_dag_mark(d, 1, FAB_MARK_STEP_BEGIN, 0, -1, NULL, 0);
  uint32_t c0 = fab_dag_compute(d, 0, 20 * US, FAB_PHASE_FWD, 0, 0, &sb0, 1);
  uint32_t f = fab_dag_flow(d, 0, 1, 1, 0, 0, -1, 0, 0, &c0, 1);
  uint32_t d1[] = {sb1, f};
  uint32_t c1 = fab_dag_compute(d, 1, 20 * US, FAB_PHASE_FWD, 0, 0, d1, 2);
  fab_dag_mark(d, 0, FAB_MARK_STEP_END, 0, -1, &c0, 1);
  fab_dag_mark(d, 1, FAB_MARK_STEP_END, 0, -1, &c1, 1);
  FabScenario *sc = with_dag(d);
  FabResults r;
  testscen_run(sc, &r);
  const FabStepRec *st = &r.steps[0];
  fab_time_t step = r.flows[0].end + 20 * US;
  cr_assert_eq(st->end - st->start, step);
  cr_assert_float_eq(st->compute_s, 20e-6, 1e-12);
  cr_assert_float_eq(st->exposed_comm_s, 0, 1e-12);
  cr_assert_float_eq(st->bubble_s, fab_time_to_s(step - 20 * US), 1e-12);
  testscen_done(sc, &r);
}

/* The same DAG twice: the same results, byte for byte (wall time aside). */
Test(dag, deterministic) {
  char *js[2];
  for (int k = 0; k < 2; k++) {
    FabDag *d = dag_with_job(4, 0);
    uint32_t prev = FAB_OP_NONE;
    for (uint32_t i = 0; i < 12; i++) {
      uint32_t deps[] = {prev};
      prev = fab_dag_flow(d, i % 4, (i + 1) % 4, 10000 + i * 777, 0, 0, -1, i * 100, 0, deps, i % 3 ? 1 : 0);
      fab_dag_compute(d, (i + 1) % 4, 3 * US, FAB_PHASE_FWD, 0, 0, &prev, 1);
    }
    FabScenario *sc = with_dag(d);
    FabResults r;
    testscen_run(sc, &r);
    r.wall_s = 0; /* and the rates fab_run derived from it */
    r.events_per_s = 0;
    r.packet_hops_per_s = 0;
    r.scenario = "same"; /* the temporary file's name differs */
    js[k] = fab_json_summary(&r);
    testscen_done(sc, &r);
  }
  cr_assert_str_eq(js[0], js[1]);
  g_free(js[0]);
  g_free(js[1]);
}

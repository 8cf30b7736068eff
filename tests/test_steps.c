/* Collectives and training steps simulated end to end: the workload kinds
** collective, nccl-tests and training, and several jobs, through the DAG
** executor and the packet-level fabric. Cases small enough to check on
** paper (issue 5's tests). */
#include <criterion/criterion.h>
#include <math.h>
#include "testscen.h"
#include "tools/libfabsim/json.h"

#define US 1000000ull /* ps */

/* n hosts on one switch at 100 Gbps, 1 us links, 500 ns switch: close to
** ideal (no contention, lossless enough at these loads). */
static char *hosts(uint32_t n, const char *workload) {
  return g_strdup_printf("cluster: {nodes: %u}\n"
                         "fabric:\n"
                         "  topology: {kind: single-switch}\n"
                         "  link: {bandwidth: 100Gbps, latency: 1us, mtu: 4096}\n"
                         "  switch: {latency: 500ns, buffer: 256MiB}\n"
                         "workload: %s\n", n, workload);
}

static FabResults run_yaml(char *yaml, FabScenario **out) {
  FabScenario *sc = testscen_load(yaml, NULL);
  g_free(yaml);
  FabResults r;
  testscen_run(sc, &r);
  *out = sc;
  return r;
}

/* Payload bytes each endpoint received, over all flows. */
static uint64_t *rx_bytes(const FabResults *r, uint32_t n) {
  uint64_t *b = g_new0(uint64_t, n);
  for (size_t i = 0; i < r->n_flows; i++) b[r->flows[i].dst] += r->flows[i].bytes;
  return b;
}

/* ---- ring allreduce against the formula ---------------------------------- */

/* 2(n-1) steps of S/n bytes each, one channel, one loop: each step's chunk
** goes in two slices of S/2n (NCCL's SlicePerChunk), so a slice is
** forwarded while the next one arrives and the connection never waits: the
** time is the first piece's latency (its pre: the launch and the step's
** work, read from the DAG), 4(n-1) slices at the goodput B back to back, and
** the last slice's path (2 links, the switch, one packet's store and
** forward). Every NIC's egress carries its ring data and the ACKs of the
** data it receives (an 86-byte ACK every 16 packets of 4096 B), so B =
** 100 Gbps x 4096 / (4096 + 82 + 86 / 16). */
Test(ring, allreduce_time_matches_the_formula) {
  const uint32_t n = 8;
  const uint64_t S = 64ull << 20;
  FabScenario *sc;
  char *wl = g_strdup_printf("{kind: collective, op: allreduce, size: %" G_GUINT64_FORMAT
                             ", algorithm: ring, protocol: simple, channels: 1, chunk: %" G_GUINT64_FORMAT "}",
                             S, S / n);
  FabResults r = run_yaml(hosts(n, wl), &sc);
  g_free(wl);
  cr_assert_eq(r.n_colls, 1);
  cr_assert_str_eq(r.colls[0].algorithm, "ring");
  cr_assert_eq(r.n_flows, 2 * 2 * (n - 1) * n, "2(n-1) steps x n ranks, two slices each");
  fab_time_t pre = 0; /* rank 0's first piece */
  for (uint32_t i = 0; i < fab_dag_len(sc->dag) && !pre; i++) {
    const FabOp *o = fab_dag_op(sc->dag, i);
    if (o->kind == FAB_OP_FLOW && o->src == 0) pre = o->pre;
  }
  cr_assert_gt(pre, 0);
  double B = 100e9 / 8 * 4096.0 / (4096 + 82 + 86.0 / 16);
  double path = 2e-6 + 0.5e-9 * 1000 + (4096 + 82) * 8 / 100e9;
  double want = 2.0 * (n - 1) / n * (double)S / B + path + fab_time_to_s(pre);
  double got = fab_time_to_s(r.colls[0].end - r.colls[0].start);
  cr_assert(fabs(got - want) / want < 0.01, "ring allreduce took %.6g s, the formula says %.6g s", got, want);
  /* each rank received exactly 2(n-1)/n x S */
  uint64_t *rx = rx_bytes(&r, n);
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(rx[i], 2 * (n - 1) * (S / n), "rank %u received %" G_GUINT64_FORMAT, i, rx[i]);
  g_free(rx);
  /* busbw as nccl-tests: 2(n-1)/n x algbw */
  char *js = fab_json_summary(&r);
  double alg = (double)S / got / 1e9;
  char *want_bus = g_strdup_printf("\"busbw_GBps\": %.9g", alg * 2 * (n - 1) / n);
  cr_assert(strstr(js, want_bus), "%s not in %s", want_bus, js);
  g_free(want_bus);
  g_free(js);
  testscen_done(sc, &r);
}

/* Pipelining: with pieces smaller than a step's data, the same allreduce is
** no slower (latency is hidden behind the next piece), and each rank still
** receives 2(n-1)/n x S. */
Test(ring, chunked_pieces_pipeline) {
  const uint32_t n = 4;
  const uint64_t S = 16ull << 20;
  double t[2];
  for (int k = 0; k < 2; k++) {
    FabScenario *sc;
    char *wl = g_strdup_printf("{kind: collective, op: allreduce, size: %" G_GUINT64_FORMAT
                               ", algorithm: ring, protocol: simple, channels: 1, chunk: %" G_GUINT64_FORMAT "}",
                               S, k ? S / n / 8 : S / n);
    FabResults r = run_yaml(hosts(n, wl), &sc);
    g_free(wl);
    cr_assert_eq(r.n_flows, 2 * (n - 1) * n * (k ? 8 : 2), "two slices a step, or a loop of 8 in 4 loops");
    uint64_t *rx = rx_bytes(&r, n);
    for (uint32_t i = 0; i < n; i++) cr_assert_eq(rx[i], 2 * (n - 1) * (S / n));
    g_free(rx);
    t[k] = fab_time_to_s(r.colls[0].end - r.colls[0].start);
    testscen_done(sc, &r);
  }
  cr_assert_leq(t[1], t[0] * 1.001, "8 pieces per step took %g s, 1 piece %g s", t[1], t[0]);
}

/* ---- tree vs ring ----------------------------------------------------------- */

/* The same with NCCL's kernel costs at zero: the fabric's latency alone. */
static double coll_time(uint32_t n, const char *algo, uint64_t S) {
  FabScenario *sc;
  char *y = g_strdup_printf("cluster: {nodes: %u, nccl: {launch: 0, step_simple: 0, proxy: 0, flush: 0}}\n"
                            "fabric:\n"
                            "  topology: {kind: single-switch}\n"
                            "  link: {bandwidth: 100Gbps, latency: 1us, mtu: 4096}\n"
                            "  switch: {latency: 500ns, buffer: 256MiB}\n"
                            "workload: {kind: collective, op: allreduce, size: %" G_GUINT64_FORMAT
                            ", algorithm: %s, protocol: simple, channels: 1, chunk: 64KiB}\n", n, S, algo);
  FabResults r = run_yaml(y, &sc);
  cr_assert_str_eq(r.colls[0].algorithm, algo);
  double t = fab_time_to_s(r.colls[0].end - r.colls[0].start);
  testscen_done(sc, &r);
  return t;
}

/* On 16 ranks a ring allreduce has 2(n-1) = 30 latency steps, a tree
** 2 log2 n = 8. Fit T = a + b S to each from two sizes: the latency terms
** keep that ratio, and the tree wins where its latency saving exceeds its
** bandwidth cost.
** The pieces are 64 KiB for both at every size, and NCCL's kernel costs
** zero (fixed pieces keep the lines straight; the test is about the
** algorithms' shape on the fabric). */
Test(tree, crossover_where_the_latency_terms_say) {
  const uint32_t n = 16;
  uint64_t s0 = 4096, s1 = 4ull << 20;
  double r0 = coll_time(n, "ring", s0), r1 = coll_time(n, "ring", s1);
  double t0 = coll_time(n, "tree", s0), t1 = coll_time(n, "tree", s1);
  double br = (r1 - r0) / (double)(s1 - s0), ar = r0 - br * (double)s0;
  double bt = (t1 - t0) / (double)(s1 - s0), at = t0 - bt * (double)s0;
  double ratio = ar / at, want = 2.0 * (n - 1) / (2 * log2(n));
  cr_assert(ratio > want * 0.6 && ratio < want * 1.4, "latency terms ring %g s, tree %g s: ratio %g, expected about %g",
            ar, at, ratio, want);
  cr_assert_lt(t0, r0, "small messages: tree (%g s) beats ring (%g s)", t0, r0);
  cr_assert_gt(bt, br, "per byte, the tree (%g s/B) costs more than the ring (%g s/B)", bt, br);
  double cross = (ar - at) / (bt - br);
  cr_assert_gt(cross, (double)s0);
  /* one crossover: the tree wins small, the ring large. It comes before the
  ** straight lines put it: a tree half of a few pieces pipelines its levels
  ** poorly (what NCCL's tree correction factors of 0.5-0.6 at medium sizes
  ** account for), which bends the tree's line up at those sizes. */
  int changes = 0, last = -1;
  uint64_t first = 0;
  for (uint64_t S = s0; S <= 16ull << 20; S *= 2) {
    int tree_slower = coll_time(n, "tree", S) > coll_time(n, "ring", S);
    if (last >= 0 && tree_slower != last) changes++, first = S;
    last = tree_slower;
  }
  cr_assert_eq(changes, 1, "the tree wins small, the ring large, one crossover (%d changes)", changes);
  cr_assert(first > 4 * s0 && first <= cross, "crossover at %" G_GUINT64_FORMAT " B, the lines say %g B", first, cross);
}

/* An LL128 tree allreduce of 256 KiB on 8 hosts over 2 channels: a tree of
** 128 KiB each (tree 0 on channel 0, tree 1 on channel 1). Sent whole (one
** 576000-byte chunk), each crosses the 6 levels up and down store-and-
** forward, ~11 us of wire per level; in NCCL's halved chunks (17280 bytes
** of data, 8 pieces a channel) the levels overlap, and the collective
** takes well under three quarters as long. */
Test(tree, ll128_pieces_pipeline_through_the_levels) {
  const uint32_t n = 8;
  double t[2];
  uint64_t tot[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    FabScenario *sc;
    char *wl = g_strdup_printf("{kind: collective, op: allreduce, size: 256KiB, algorithm: tree, protocol: ll128, "
                               "channels: 2%s}", k ? "" : ", chunk: 576000");
    FabResults r = run_yaml(hosts(n, wl), &sc);
    g_free(wl);
    cr_assert_eq(r.n_flows, 2 * 2 * (n - 1) * (k ? 8 : 1));
    uint64_t *rx = rx_bytes(&r, n);
    for (uint32_t i = 0; i < n; i++) tot[k] += rx[i];
    cr_assert_geq(tot[k], 2ull * (n - 1) * (256 << 10) / 120 * 128, "wire bytes %llu", (unsigned long long)tot[k]);
    g_free(rx);
    t[k] = fab_time_to_s(r.colls[0].end - r.colls[0].start);
    testscen_done(sc, &r);
  }
  cr_assert_eq(tot[1], tot[0], "the same data either way");
  cr_assert_lt(t[1], t[0] * 0.75, "NCCL's LL128 tree steps took %g s, whole halves %g s", t[1], t[0]);
}

/* ---- other collectives: what each rank receives ----------------------------- */

Test(collectives, bytes_each_rank_receives) {
  const uint32_t n = 4;
  const uint64_t S = 1 << 20;
  struct {
    const char *op, *algo;
    uint64_t per_rank; /* payload received by each non-root rank */
  } c[] = {
    {"allgather", "ring", (n - 1) * (S / n)},
    {"reduce-scatter", "ring", (n - 1) * (S / n)},
    {"all-to-all", "pairwise", (n - 1) * (S / n)},
    {"broadcast", "ring", S},
    {"send-recv", "auto", S},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(c); k++) {
    FabScenario *sc;
    char *wl = g_strdup_printf("{kind: collective, op: %s, size: %" G_GUINT64_FORMAT
                               ", algorithm: %s, protocol: simple, channels: 1, root: 0}", c[k].op, S, c[k].algo);
    FabResults r = run_yaml(hosts(n, wl), &sc);
    g_free(wl);
    uint64_t *rx = rx_bytes(&r, n);
    for (uint32_t i = 1; i < n; i++)
      cr_assert_eq(rx[i], c[k].per_rank, "%s: rank %u received %" G_GUINT64_FORMAT ", expected %" G_GUINT64_FORMAT,
                   c[k].op, i, rx[i], c[k].per_rank);
    cr_assert(r.colls[0].end > 0, "%s completed", c[k].op);
    g_free(rx);
    testscen_done(sc, &r);
  }
}

/* ---- nccl-tests ------------------------------------------------------------------ */

Test(nccl_tests, one_collective_per_size_and_iteration) {
  FabScenario *sc;
  FabResults r = run_yaml(hosts(4, "{kind: nccl-tests, op: allreduce, min: 1KiB, max: 1MiB, factor: 4, iters: 2, "
                                   "warmup: 1, algorithm: ring}"), &sc);
  /* 1K 4K 16K 64K 256K 1M: 6 sizes x (1 warm-up + 2 timed) */
  cr_assert_eq(r.n_colls, 18);
  size_t timed = 0;
  for (size_t i = 0; i < r.n_colls; i++) {
    const FabCollRec *c = &r.colls[i];
    cr_assert_eq(c->bytes, 1024ull << (2 * (i / 3)));
    cr_assert_eq(c->count, c->bytes / 4, "float elements");
    timed += g_str_equal(c->tag, "nccl-tests");
    if (i) cr_assert_geq(c->start, r.colls[i - 1].start, "in order");
    if (i % 3 == 0 && i) cr_assert_geq(c->start, r.colls[i - 1].end, "a size starts after the previous one ended");
  }
  cr_assert_eq(timed, 12);
  testscen_done(sc, &r);
}

/* ---- training --------------------------------------------------------------------- */

/* A tiny transformer on 4 hosts, data parallel only, at 100 TFLOPS x 0.5. */
static char *dp_training(const char *extra) {
  char *wl = g_strdup_printf("\n  kind: training\n"
                             "  model: {layers: 4, hidden: 1024, seq: 512, micro_batch: 1, global_batch: 8, dtype: bf16}\n"
                             "  parallelism: {dp: 4}\n"
                             "  gpu: {flops: 100TFLOPS, efficiency: 0.5}\n"
                             "  bucket: 4MiB\n"
                             "  steps: 2\n%s", extra);
  char *y = hosts(4, wl);
  g_free(wl);
  return y;
}

Test(training, dp_without_overlap_is_compute_plus_allreduce) {
  FabScenario *sc;
  FabResults r = run_yaml(dp_training("  overlap: false\n"), &sc);
  cr_assert_eq(r.n_steps, 2);
  for (size_t k = 0; k < r.n_steps; k++) {
    const FabStepRec *s = &r.steps[k];
    double step = fab_time_to_s(s->end - s->start);
    cr_assert_float_eq(s->overlap_s, 0, 1e-12, "nothing overlaps");
    cr_assert(fabs(step - (s->compute_s + s->exposed_comm_s)) / step < 0.01,
              "step %g s = compute %g s + allreduce %g s (bubble %g s)", step, s->compute_s, s->exposed_comm_s,
              s->bubble_s);
    cr_assert_gt(s->exposed_comm_s, 0);
  }
  bool dp = false;
  for (size_t i = 0; i < r.n_colls; i++) dp |= g_str_equal(r.colls[i].tag, "dp") && g_str_equal(r.colls[i].op, "allreduce");
  cr_assert(dp, "gradient allreduces tagged dp");
  testscen_done(sc, &r);
}

Test(training, overlap_hides_communication) {
  double exposed[2], step[2];
  for (int k = 0; k < 2; k++) {
    FabScenario *sc;
    FabResults r = run_yaml(dp_training(k ? "  overlap: true\n" : "  overlap: false\n"), &sc);
    exposed[k] = r.steps[1].exposed_comm_s;
    step[k] = fab_time_to_s(r.steps[1].end - r.steps[1].start);
    if (k) cr_assert_gt(r.steps[1].overlap_s, 0);
    testscen_done(sc, &r);
  }
  cr_assert_lt(exposed[1], exposed[0], "exposed communication %g s with overlap, %g s without", exposed[1], exposed[0]);
  cr_assert_lt(step[1], step[0]);
}

/* 1F1B on an ideal fabric (fast links, tiny activations): the bubble is
** (pp - 1) / (microbatches + pp - 1) of the step. */
Test(training, one_f_one_b_bubble_fraction) {
  const uint32_t pp = 4, m = 8;
  char *y = g_strdup_printf("cluster: {nodes: %u}\n"
                            "fabric:\n"
                            "  topology: {kind: single-switch}\n"
                            "  link: {bandwidth: 100Tbps, latency: 1ns, mtu: 4096}\n"
                            "  switch: {latency: 0ns, buffer: 256MiB}\n"
                            "workload:\n"
                            "  kind: training\n"
                            "  model: {layers: 8, hidden: 256, seq: 4096, micro_batch: 1, global_batch: %u, dtype: bf16}\n"
                            "  parallelism: {pp: %u}\n"
                            "  gpu: {flops: 100TFLOPS, efficiency: 0.5}\n"
                            "  steps: 1\n", pp, m, pp);
  FabScenario *sc;
  FabResults r = run_yaml(y, &sc);
  cr_assert_eq(r.n_steps, 1);
  const FabStepRec *s = &r.steps[0];
  double step = fab_time_to_s(s->end - s->start), want = (double)(pp - 1) / (m + pp - 1);
  cr_assert(fabs(s->bubble_s / step - want) < 0.02, "bubble %g of the step, expected %g", s->bubble_s / step, want);
  testscen_done(sc, &r);
}

/* ---- several jobs ------------------------------------------------------------------ */

/* 8 hosts on 2 leaves joined by one spine (4:1 oversubscribed). Two jobs
** whose ranks alternate on both leaves cross the same uplinks: together,
** each is slower than alone. */
static double job_time(const char *jobs, const char *name) {
  char *y = g_strdup_printf("cluster: {nodes: 8}\n"
                            "fabric:\n"
                            "  topology: {kind: leaf-spine, hosts_per_leaf: 4, spines: 1}\n"
                            "  link: {bandwidth: 100Gbps, latency: 1us, mtu: 4096}\n"
                            "  switch: {latency: 500ns, buffer: 256MiB}\n"
                            "workload:\n%s", jobs);
  FabScenario *sc;
  FabResults r = run_yaml(y, &sc);
  double t = -1;
  for (size_t j = 0; j < r.n_jobs; j++)
    if (g_str_equal(r.jobs[j].name, name)) t = fab_time_to_s(r.jobs[j].end - r.jobs[j].start);
  cr_assert_gt(t, 0);
  testscen_done(sc, &r);
  return t;
}

Test(jobs, sharing_spine_links_slows_both) {
  const char *a = "  - {name: a, kind: collective, op: allreduce, size: 8MiB, algorithm: ring, ranks: [0, 1, 4, 5]}\n";
  const char *b = "  - {name: b, kind: collective, op: allreduce, size: 8MiB, algorithm: ring, ranks: [2, 3, 6, 7]}\n";
  char *both = g_strconcat(a, b, NULL);
  double alone_a = job_time(a, "a"), together_a = job_time(both, "a"), together_b = job_time(both, "b");
  cr_assert_gt(together_a, alone_a * 1.2, "a alone %g s, with b %g s", alone_a, together_a);
  cr_assert_gt(together_b, alone_a * 1.2);
  g_free(both);
}

/* Four DGX H100 on a rail-optimized fabric: a job on rail 0 (local GPU 0 of
** each node) and one on rail 1 share no link, so neither slows the other. */
static double rail_job(const char *jobs, const char *name) {
  char *y = g_strdup_printf("cluster: {node: dgx-h100, nodes: 4}\n"
                            "fabric:\n"
                            "  transport: infiniband\n"
                            "  topology: {kind: rail-optimized, spines: 4}\n"
                            "  link: {bandwidth: 400Gbps, latency: 500ns, mtu: 4096}\n"
                            "  switch: {latency: 300ns, buffer: 64MiB, priorities: 1}\n"
                            "workload:\n%s", jobs);
  FabScenario *sc;
  FabResults r = run_yaml(y, &sc);
  double t = -1;
  for (size_t j = 0; j < r.n_jobs; j++)
    if (g_str_equal(r.jobs[j].name, name)) t = fab_time_to_s(r.jobs[j].end - r.jobs[j].start);
  testscen_done(sc, &r);
  return t;
}

Test(jobs, disjoint_rails_do_not_interfere) {
  const char *a = "  - {name: a, kind: collective, op: allreduce, size: 8MiB, algorithm: ring, ranks: [0, 8, 16, 24]}\n";
  const char *b = "  - {name: b, kind: collective, op: allreduce, size: 8MiB, algorithm: ring, ranks: [1, 9, 17, 25]}\n";
  char *both = g_strconcat(a, b, NULL);
  double alone_a = rail_job(a, "a"), together_a = rail_job(both, "a");
  cr_assert_gt(alone_a, 0);
  cr_assert(fabs(together_a - alone_a) / alone_a < 0.001, "a alone %g s, beside b %g s", alone_a, together_a);
  g_free(both);
}

/* Background flows beside a job are a job of their own, reported apart. */
Test(jobs, background_flows_have_their_own_results) {
  FabScenario *sc;
  char *y = hosts(8, "\n  - {name: ar, kind: collective, op: allreduce, size: 1MiB, algorithm: ring, ranks: 0-3}\n"
                     "  - {name: bg, kind: permutation, size: 256KiB, ranks: 4-7}\n");
  FabResults r = run_yaml(y, &sc);
  cr_assert_eq(r.n_jobs, 2);
  cr_assert_str_eq(r.jobs[1].name, "bg");
  cr_assert_eq(r.jobs[1].flows, 4);
  cr_assert_eq(r.jobs[1].completed, 4);
  cr_assert_eq(r.colls[0].job, 0);
  for (size_t i = 0; i < r.n_flows; i++) { /* each job stays on its endpoints */
    bool bg = r.flows[i].src >= 4;
    cr_assert_eq(bg, r.flows[i].dst >= 4);
  }
  testscen_done(sc, &r);
}

/* ---- the reduction's cost on the GPU --------------------------------------------- */

/* A ring allreduce between two DGX H100 nodes (GPU 0 of each): each reduces
** S/2 it received; at 1 GB/s of reduction that adds S/2 / 1 GB/s to the
** collective, next to a GPU that reduces at 1 TB/s. */
static double reduce_run(const char *bw) {
  char *y = g_strdup_printf("cluster: {node: dgx-h100, nodes: 2, gpu: {reduce_bandwidth: %s}}\n"
                            "fabric:\n"
                            "  transport: infiniband\n"
                            "  topology: {kind: rail-optimized}\n"
                            "  link: {bandwidth: 400Gbps, latency: 500ns, mtu: 4096}\n"
                            "  switch: {latency: 300ns, buffer: 64MiB, priorities: 1}\n"
                            "workload: {kind: collective, op: allreduce, size: 4MiB, algorithm: ring, protocol: simple,"
                            " channels: 1, ranks: [0, 8]}\n", bw);
  FabScenario *sc;
  FabResults r = run_yaml(y, &sc);
  double t = fab_time_to_s(r.colls[0].end - r.colls[0].start);
  testscen_done(sc, &r);
  return t;
}

Test(reduction, costs_time_on_the_gpu) {
  double fast = reduce_run("1000GB/s"), slow = reduce_run("1GB/s");
  double want = (2.0 * 1048576) / 1e9 - (2.0 * 1048576) / 1e12; /* S/2 = 2 MiB reduced once */
  cr_assert(fabs((slow - fast) - want) / want < 0.05, "slow %g s - fast %g s = %g s, expected about %g s", slow, fast,
            slow - fast, want);
}

/* A step cut off by stop_time is left out of the report; the steps before
** it, which every rank finished, stay. */
Test(training, whole_steps_survive_a_cut_run) {
  char *y = dp_training("  overlap: true\n");
  FabScenario *sc = testscen_load(y, NULL);
  g_free(y);
  FabResults full;
  testscen_run(sc, &full);
  cr_assert_eq(full.n_steps, 2);
  fab_time_t cut = full.steps[1].start + (full.steps[1].end - full.steps[1].start) / 2;
  FabStepRec first = full.steps[0];
  fab_results_clear(&full); /* frees full.failure too */
  sc->stop_time = cut;
  FabResults r;
  FabRunOpts o = {0};
  cr_assert_eq(fab_run(sc, &o, &r), 1, "the run is cut in step 1");
  cr_assert_eq(r.n_steps, 1);
  cr_assert_eq(r.steps[0].step, 0);
  cr_assert_eq(r.steps[0].end, first.end);
  cr_assert_float_eq(r.steps[0].compute_s, first.compute_s, 1e-12);
  testscen_done(sc, &r);
}

/* ---- protocol limits on the GPU ---------------------------------------------------- */

/* LL moves at most NCCL's llMaxBw of data per rank (45 GB/s across two
** NVLink islands), whatever the links could carry: an 8 MiB allgather on two
** DGX H100 forced to LL stays under it, LL128 does not (the protocols' per-step
** costs at 0: what is compared is their throughput). */
static double dgx2_allgather_busbw(const char *proto) {
  char *y = g_strdup_printf("cluster: {node: dgx-h100, nodes: 2, nccl: {step_ll: 0us, step_ll128: 0us}}\n"
                            "fabric:\n"
                            "  transport: infiniband\n"
                            "  topology: {kind: rail-optimized}\n"
                            "  link: {bandwidth: 400Gbps, latency: 500ns, mtu: 4096}\n"
                            "  switch: {latency: 300ns, buffer: 64MiB, priorities: 1}\n"
                            "workload: {kind: collective, op: allgather, size: 8MiB, algorithm: ring, protocol: %s}\n",
                            proto);
  FabScenario *sc;
  FabResults r = run_yaml(y, &sc);
  double t = fab_time_to_s(r.colls[0].end - r.colls[0].start);
  double bus = 8388608.0 / t / 1e9 * 15 / 16;
  testscen_done(sc, &r);
  return bus;
}

Test(protocol, ll_is_limited_on_the_gpu) {
  double ll = dgx2_allgather_busbw("ll"), ll128 = dgx2_allgather_busbw("ll128");
  cr_assert_leq(ll, 45.0, "LL at %g GB/s of bus bandwidth, above NCCL's 45 GB/s across two islands", ll);
  cr_assert_gt(ll, 25.0, "but not far below it: %g GB/s", ll);
  cr_assert_gt(ll128, 100.0, "LL128 is not limited so: %g GB/s", ll128);
}

/* LL128's step work is paid once a ring step when a channel's step is one
** LL128 piece (at most 576,000 bytes), and nothing hides it: the next step
** waits for the piece. A ring allreduce of 8 MiB on one DGX B200 (32
** channels, 32 KiB a channel a step) takes 2(n-1) = 14 times the step's
** change longer when the step grows by 2.67 us, on 4 of its GPUs 6 times:
** the form the default (workloads/tuner.c, fitted to GCP's B200 at 8 MiB and
** checked against Azure's 4 x GB200) rests on. */
static fab_time_t b200_ring_ll128(uint32_t gpus, const char *step) {
  char *y = g_strdup_printf("cluster: {node: dgx-b200, nodes: 1, nccl: {step_ll128: %s}}\n"
                            "fabric: {topology: {kind: single-switch}}\n"
                            "workload: {kind: collective, op: allreduce, size: 8MiB, algorithm: ring, protocol: ll128, "
                            "ranks: [%s]}\n",
                            step, gpus == 4 ? "0, 1, 2, 3" : "0, 1, 2, 3, 4, 5, 6, 7");
  FabScenario *sc;
  FabResults r = run_yaml(y, &sc);
  fab_time_t t = r.colls[0].end - r.colls[0].start;
  testscen_done(sc, &r);
  return t;
}

Test(protocol, ll128_step_work_adds_once_a_ring_step) {
  uint32_t gpus[2] = {8, 4};
  for (int i = 0; i < 2; i++) {
    double lo = (double)b200_ring_ll128(gpus[i], "0.5us"), hi = (double)b200_ring_ll128(gpus[i], "3.17us");
    double want = 2.0 * (gpus[i] - 1) * 2.67e6; /* ps */
    cr_assert(fabs((hi - lo) - want) <= 0.01 * want, "%u GPUs: %.0f ps more, not %.0f", gpus[i], hi - lo, want);
  }
}

/* An 8-byte tree allreduce (LL, one channel) across n DGX H100 over
** InfiniBand: the deepest rank's data goes up log2 n network messages and
** the result comes down as many, one after another, and each waits for its
** NIC's start (cluster.nccl.nic_post): raising it by 1 us adds exactly
** 2 log2 n us. Its default is 4 PCIe crossings (doorbell, work request read
** and completion, data read request): with pcie.latency 250 ns, 1 us a
** message. */
static double h100_tree_8b(uint32_t nodes, const char *extra) {
  FabScenario *sc;
  char *y = g_strdup_printf("cluster: {node: dgx-h100, nodes: %u%s}\n"
                            "fabric:\n"
                            "  transport: infiniband\n"
                            "  topology: {kind: rail-optimized}\n"
                            "  link: {bandwidth: 400Gbps, latency: 500ns, mtu: 4096}\n"
                            "  switch: {latency: 300ns, buffer: 64MiB, priorities: 1}\n"
                            "workload: {kind: collective, op: allreduce, size: 8, algorithm: tree}\n", nodes, extra);
  FabResults r = run_yaml(y, &sc);
  cr_assert_eq(r.n_colls, 1);
  cr_assert_str_eq(r.colls[0].protocol, "ll");
  double t = (double)(r.colls[0].end - r.colls[0].start);
  testscen_done(sc, &r);
  return t;
}

Test(protocol, nic_post_adds_once_a_network_message_on_the_tree_path) {
  const uint32_t nodes[3] = {2, 4, 16};
  for (int i = 0; i < 3; i++) {
    double msgs = 2 * log2(nodes[i]);
    double zero = h100_tree_8b(nodes[i], ", nccl: {nic_post: 0us}");
    double one = h100_tree_8b(nodes[i], ", nccl: {nic_post: 1us}");
    cr_assert(fabs((one - zero) - msgs * US) <= 1, "%u nodes: %.0f ps more, not %.0f", nodes[i], one - zero, msgs * US);
    double dflt = h100_tree_8b(nodes[i], ", pcie: {latency: 250ns}");
    double z250 = h100_tree_8b(nodes[i], ", pcie: {latency: 250ns}, nccl: {nic_post: 0us}");
    cr_assert(fabs((dflt - z250) - msgs * US) <= 1, "%u nodes: the default (4 crossings of 250 ns) added %.0f ps, "
              "not %.0f", nodes[i], dflt - z250, msgs * US);
  }
}

/* ---- copy engines ----------------------------------------------------------- */

/* An allgather on the copy engines (cta_policy zero) on one DGX H100, S =
** 64 MiB with NCCL's costs at zero: every GPU writes 7 parts of S/8 into
** its NVLink port at once, so the copies take 7/8 S at the NVLink rate
** (370.8 GB/s; each 64 KiB segment carries a 16-byte header), and the two
** barriers and the last copy add their paths: 500 ns GPU to GPU each, and
** the last segment's store and forward in the NVSwitch. A 5 us start and
** 10 us more flag work cost exactly 5 + 2 x 10 us more, as every rank pays
** the same (from 10 us of flag work on, so no flag meets a late copy). */
static double ce_allgather_s(const char *costs, uint64_t S) {
  FabScenario *sc;
  char *y = g_strdup_printf("cluster: {node: dgx-h100, nodes: 1, nccl: {%s}}\n"
                            "fabric: {topology: {kind: single-switch}}\n"
                            "workload: {kind: collective, op: allgather, size: %" G_GUINT64_FORMAT
                            ", cta_policy: zero}\n", costs, S);
  FabResults r = run_yaml(y, &sc);
  cr_assert_eq(r.n_colls, 1);
  cr_assert_str_eq(r.colls[0].algorithm, "ce");
  cr_assert_str_eq(r.colls[0].protocol, "memcpy");
  cr_assert_eq(r.n_flows, 3 * 8 * 7, "flags, copies, flags");
  uint64_t *rx = rx_bytes(&r, 8);
  for (uint32_t i = 0; i < 8; i++) cr_assert_eq(rx[i], 7 * (S / 8) + 2 * 7 * 4, "rank %u: 7 parts and 14 flags", i);
  g_free(rx);
  double t = fab_time_to_s(r.colls[0].end - r.colls[0].start);
  testscen_done(sc, &r);
  return t;
}

Test(ce, allgather_moves_at_the_nvlink_rate_and_pays_its_barriers) {
  const uint64_t S = 64ull << 20;
  double t0 = ce_allgather_s("launch: 0, ce_sync: 0", S);
  double seg = (65536 + 16) / 370.8e9; /* the switch stores and forwards the last segment */
  double want = 7.0 * S / 8 * (65536 + 16) / 65536 / 370.8e9 + 3 * 500e-9 + seg;
  cr_assert(fabs(t0 - want) < want * 1e-3, "the allgather took %.9g s, on paper %.9g s", t0, want);
  double t1 = ce_allgather_s("launch: 0, ce_sync: 10us", S), t2 = ce_allgather_s("launch: 5us, ce_sync: 20us", S);
  cr_assert(fabs((t2 - t1) - 25e-6) < 1e-12, "5 us start + 2 x 10 us more flag work: %.12g s more", t2 - t1);
}

/* A training step's ZeRO-3 gathers take the copy engines with cta_policy
** zero, its reduce-scatters NCCL's kernels (NCCL has no copy-engine
** reduction). */
Test(ce, training_gathers_on_the_copy_engines) {
  FabScenario *sc;
  FabResults r = run_yaml(g_strdup("cluster: {node: dgx-h100, nodes: 1}\n"
                                   "fabric: {topology: {kind: single-switch}}\n"
                                   "workload:\n  kind: training\n  cta_policy: zero\n"
                                   "  model: {layers: 2, hidden: 1024, ffn: 4096, seq: 512, global_batch: 8}\n"
                                   "  parallelism: {dp: 8, zero: 3}\n"), &sc);
  uint32_t ag = 0, rs = 0;
  for (size_t i = 0; i < r.n_colls; i++) {
    if (g_str_equal(r.colls[i].op, "allgather")) {
      cr_assert_str_eq(r.colls[i].algorithm, "ce");
      ag++;
    } else if (g_str_equal(r.colls[i].op, "reduce-scatter")) {
      cr_assert_str_neq(r.colls[i].algorithm, "ce");
      rs++;
    }
  }
  cr_assert(ag > 0 && rs > 0, "%u gathers, %u reduce-scatters", ag, rs);
  testscen_done(sc, &r);
}

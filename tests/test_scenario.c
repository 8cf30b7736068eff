/* Whole scenarios: golden results, invariants, ECMP spread, determinism,
** stop_time. Golden files: tests/scenarios/NAME.yaml and NAME.json (the JSON
** summary without its wall-clock fields). FABSIM_UPDATE_GOLDEN=1 rewrites the
** .json files from the current build. */
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <time.h>
#include "tools/libfabsim/driver.h"
#include "tools/libfabsim/json.h"
#include "tools/libfabsim/scenario.h"
#include "testdag.h"
#include "testscen.h"

static const char *src_dir(void) {
  const char *s = getenv("FABSIM_SRC");
  return s ? s : ".";
}

static FabScenario *load(const char *rel, const char *const *sets) { return testscen_load_file(rel, sets); }

static char *stable_json(const FabResults *r) { return testscen_stable_json(r); }

static void run_ok(const FabScenario *sc, FabResults *res) {
  FabRunOpts opts = {0};
  int rc = fab_run(sc, &opts, res);
  cr_assert_eq(rc, 0, "run failed: %s", res->failure ? res->failure : "?");
}

static void done(FabScenario *sc, FabResults *res) {
  fab_results_clear(res); /* frees res->failure too */
  fab_scenario_free(sc);
}

Test(scenario, golden_results) {
  char *dir = g_build_filename(src_dir(), "tests", "scenarios", NULL);
  GDir *d = g_dir_open(dir, 0, NULL);
  cr_assert_not_null(d);
  int n = 0;
  for (const char *name; (name = g_dir_read_name(d));) {
    if (!g_str_has_suffix(name, ".yaml")) continue;
    char *rel = g_build_filename("tests", "scenarios", name, NULL);
    FabScenario *sc = load(rel, NULL);
    FabResults res;
    run_ok(sc, &res);
    char *got = stable_json(&res);
    char *gold_path = g_strdup_printf("%s/%.*s.json", dir, (int)(strlen(name) - 5), name);
    if (getenv("FABSIM_UPDATE_GOLDEN")) {
      cr_assert(g_file_set_contents(gold_path, got, -1, NULL));
    } else {
      char *want = NULL;
      cr_assert(g_file_get_contents(gold_path, &want, NULL, NULL), "missing golden file %s", gold_path);
      cr_assert_str_eq(got, want, "%s differs from its golden result", name);
      g_free(want);
    }
    g_free(gold_path);
    g_free(got);
    g_free(rel);
    done(sc, &res);
    n++;
  }
  g_dir_close(d);
  g_free(dir);
  cr_assert_geq(n, 4, "golden scenarios found: %d", n);
}

Test(scenario, permutation_completes_and_ecmp_spreads_over_spines) {
  FabScenario *sc = load("scenarios/quickstart.yaml", NULL);
  FabResults res;
  run_ok(sc, &res);
  cr_assert_eq(res.n_flows, 32);
  for (size_t i = 0; i < res.n_flows; i++) cr_assert_neq(res.flows[i].end, 0, "flow %zu done", i);
  /* every spine carries traffic: 32 flows, 24+ cross-leaf, over 8 spines */
  int spines_used = 0;
  for (int s = 0; s < 8; s++) {
    char prefix[16];
    g_snprintf(prefix, sizeof prefix, "spine%d:", s);
    uint64_t bytes = 0;
    for (size_t l = 0; l < res.n_links; l++)
      if (g_str_has_prefix(res.links[l].from, prefix)) bytes += res.links[l].bytes;
    spines_used += bytes > 0;
  }
  cr_assert_geq(spines_used, 7, "ECMP used %d of 8 spines", spines_used);
  cr_assert_eq(res.drops, 0);
  cr_assert_gt(res.packet_hops, 32 * 256 * 2, "data crosses at least 2 links");
  done(sc, &res);
}

Test(scenario, only_the_flows_under_way_hold_memory) {
  /* a permutation starts every flow at once: each needs a slot */
  FabScenario *sc = load("scenarios/quickstart.yaml", NULL);
  FabResults res;
  run_ok(sc, &res);
  cr_assert_eq(res.flow_slots, 32);
  done(sc, &res);
  /* nccl-tests runs collective after collective: a slot is reused once its
  ** flow is done at both ends and its retransmission timer has fired */
  sc = load("tests/scenarios/nccl-tests-allreduce.yaml", NULL);
  run_ok(sc, &res);
  cr_assert_gt(res.n_flows, 1000);
  for (size_t i = 0; i < res.n_flows; i++) cr_assert_neq(res.flows[i].end, 0, "flow %zu done", i);
  cr_assert_lt(res.flow_slots * 4, res.n_flows, "%u slots for %zu flows", res.flow_slots, res.n_flows);
  done(sc, &res);
}

Test(scenario, same_seed_same_results_other_seed_other_results) {
  FabScenario *a = load("tests/scenarios/leaf-spine-small.yaml", NULL);
  FabScenario *b = load("tests/scenarios/leaf-spine-small.yaml", NULL);
  const char *sets[] = {"seed=8", NULL};
  FabScenario *c = load("tests/scenarios/leaf-spine-small.yaml", sets);
  FabResults ra, rb, rc;
  run_ok(a, &ra);
  run_ok(b, &rb);
  run_ok(c, &rc);
  cr_assert_eq(ra.events, rb.events);
  cr_assert_eq(memcmp(ra.flows, rb.flows, ra.n_flows * sizeof *ra.flows), 0);
  cr_assert_eq(memcmp(ra.links, rb.links, ra.n_links * sizeof *ra.links), 0);
  bool differ = ra.events != rc.events || memcmp(ra.flows, rc.flows, ra.n_flows * sizeof *ra.flows);
  cr_assert(differ, "seed 8 gives another permutation");
  done(a, &ra);
  done(b, &rb);
  done(c, &rc);
}

Test(scenario, stop_time_cuts_the_run_and_reports_it) {
  const char *sets[] = {"stop_time=20us", NULL};
  FabScenario *sc = load("scenarios/quickstart.yaml", sets);
  FabResults res;
  FabRunOpts opts = {0};
  cr_assert_eq(fab_run(sc, &opts, &res), 1);
  cr_assert_not_null(res.failure);
  cr_assert(strstr(res.failure, "stop_time reached with 32 of 32 flows unfinished"), "%s", res.failure);
  cr_assert_null(strstr(res.failure, "internal"), "no invariant broken: %s", res.failure);
  cr_assert_eq(res.sim_time, 20 * FAB_US);
  done(sc, &res);
}

Test(scenario, lossy_incast_completes_every_flow) {
  FabScenario *sc = load("scenarios/incast.yaml", NULL);
  FabResults res;
  run_ok(sc, &res);
  cr_assert_gt(res.drops, 0);
  cr_assert_gt(res.retransmits, 0);
  for (size_t i = 0; i < res.n_flows; i++) cr_assert_neq(res.flows[i].end, 0);
  done(sc, &res);
}

Test(scenario, big_buffer_incast_is_lossless_and_at_line_rate) {
  const char *sets[] = {"fabric.switch.buffer=64MiB", "fabric.switch.latency=0ns", NULL};
  FabScenario *sc = load("scenarios/incast.yaml", sets);
  FabResults res;
  run_ok(sc, &res);
  cr_assert_eq(res.drops, 0);
  /* 16 x 256 packets of 4178 B drain back to back after the first arrives */
  fab_time_t pkt = 4178 * 80;
  cr_assert_eq(res.sim_time, pkt + FAB_US + 16 * 256 * pkt + FAB_US);
  done(sc, &res);
}

Test(scenario, queue_series_is_sampled) {
  const char *sets[] = {"output.sample_interval=5us", NULL};
  FabScenario *sc = load("scenarios/quickstart.yaml", sets);
  FabResults res;
  FabRunOpts opts = {.sample_queues = true};
  cr_assert_eq(fab_run(sc, &opts, &res), 0);
  FabQueueSeries *q = &res.queues;
  cr_assert_eq(q->interval, 5 * FAB_US);
  cr_assert_eq(q->n_ports, 4 * 16 + 8 * 4, "every switch port");
  cr_assert_geq(q->n_samples, res.sim_time / (5 * FAB_US));
  for (uint32_t s = 0; s < q->n_samples; s++) cr_assert_eq(q->t[s], s * 5 * FAB_US);
  uint32_t peak = 0;
  for (size_t i = 0; i < (size_t)q->n_samples * q->n_ports; i++) peak = MAX(peak, q->depth[i]);
  cr_assert_gt(peak, 0);
  cr_assert_leq(peak, res.max_queue_bytes);
  cr_assert_str_eq(q->port[0], "leaf0:p0");
  done(sc, &res);
}

Test(scenario, explain_names_the_parts) {
  FabScenario *sc = load("scenarios/leaf-spine-permutation-128.yaml", NULL);
  char *s = fab_scenario_explain(sc);
  cr_assert(strstr(s, "leaf-spine: 16 leaves x 8 hosts, 8 spines"), "%s", s);
  cr_assert(strstr(s, "rocev2: 82 B"), "%s", s);
  cr_assert(strstr(s, "128 flows, 536870912 bytes"), "%s", s);
  g_free(s);
  fab_scenario_free(sc);
}

/* The GPU side in effect: architecture, NVLink data vs signalling rate,
** NVLS, NCCL's kernel costs, the reducer, InfiniBand credits and VLs. */
Test(scenario, explain_names_the_gpu_side) {
  FabScenario *sc = load("scenarios/validation/dgx-h100-ib.yaml", NULL);
  char *s = fab_scenario_explain(sc);
  cr_assert(strstr(s, "nvlink     370.8 GB/s per GPU per direction of data (18 links; signalling 450 GB/s"), "%s", s);
  cr_assert(strstr(s, "nvls       on: loops of a chunk per rank and channel (NCCL's), each a reduce-scatter through "
                      "the switch, then each owner's multicast; efficiency 1"), "%s", s);
  cr_assert(strstr(s, "gpu        hopper, 989.4 TFLOPS dense BF16 x 0.55 efficiency, memory 3.35 TB/s, reductions "
                      "1116.67 GB/s"), "%s", s);
  cr_assert(strstr(s, "nccl       launch 6.05 us; per step LL 0, LL128 3.17, Simple 1 us; proxy 2 us, NIC post 2 us, no flush (NCCL "
                      "flushes GPUDirect receives only below Hopper) per network piece (a SHARP reduction too)"), "%s", s);
  cr_assert(strstr(s, "; NVLS kernels 22.57 us once at their start, 1.035 us a chunk of each loop;"), "%s", s);
  cr_assert(strstr(s, "1 VLs in use (buffer / (ports x VLs in use))"), "%s", s);
  g_free(s);
  fab_scenario_free(sc);
  const char *const sets[] = {"cluster.nccl.launch=4us", "cluster.gpu.reduce_bandwidth=500GB/s",
                              "cluster.nccl.nvls_sync=3us", "cluster.nccl.nvls_step=2us", NULL};
  sc = load("scenarios/validation/dgx-a100.yaml", sets);
  s = fab_scenario_explain(sc);
  cr_assert(strstr(s, "nvls       off (NCCL builds no NVLS graph below sm90)"), "%s", s);
  cr_assert(strstr(s, "gpu        ampere,"), "%s", s);
  cr_assert(strstr(s, "reductions 500 GB/s"), "%s", s);
  cr_assert(strstr(s, "nccl       launch 4 us; per step LL 1.475, LL128 4.645, Simple 2.475 us"), "%s", s);
  cr_assert(strstr(s, "; NVLS kernels 3 us once at their start, 2 us a chunk of each loop;"), "%s", s);
  g_free(s);
  fab_scenario_free(sc);
}

/* A job's endpoints as --explain lists them: in rank order, runs as ranges. */
Test(scenario, explain_ranks_in_rank_order) {
  static const uint32_t strided[] = {0, 4, 8, 12, 1, 5, 9, 13}, runs[] = {0, 1, 2, 3, 8, 9, 10, 11}, one[] = {7};
  static const struct {
    const uint32_t *r;
    uint32_t n;
    const char *want;
  } c[] = {
      {strided, 8, "0, 4, 8, 12, 1, 5, 9, 13"},
      {runs, 8, "0-3, 8-11"},
      {runs, 4, "0-3"},
      {one, 1, "7"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(c); i++) {
    char *s = fab_explain_ranks(c[i].r, c[i].n);
    cr_assert_str_eq(s, c[i].want);
    g_free(s);
  }
  uint32_t many[40]; /* every other endpoint: 40 items, the first 8 shown */
  for (uint32_t i = 0; i < 40; i++) many[i] = 2 * i;
  char *s = fab_explain_ranks(many, 40);
  cr_assert_str_eq(s, "0, 2, 4, 6, 8, 10, 12, 14, ... (32 more)");
  g_free(s);
  /* 16 items are all shown */
  s = fab_explain_ranks(many, 16);
  cr_assert_str_eq(s, "0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30");
  g_free(s);
}

/* --explain on an nccl-tests sweep shows every size where the tuner's choice
** changes (it once showed the first 16 sizes only, hiding the large ones);
** sizes that share every choice share a line. 16 GPUs of an NVL72 are one
** domain, partly used; counts are singular where they are one. */
Test(scenario, explain_shows_every_choice_of_a_sweep) {
  FabScenario *sc = load("scenarios/nccl-tests-dgx-h100.yaml", NULL);
  char *s = fab_scenario_explain(sc);
  cr_assert(strstr(s, "collective 10 x allreduce of 8..4096 B (10 sizes) on 16 ranks: tree, ll, 1 channel, chunk "
                      "32768 B, tag nccl-tests\n"), "%s", s);
  cr_assert(strstr(s, "collective 1 x allreduce of 4194304 B on 16 ranks: nvls-tree, simple, 16 channels, "), "%s", s);
  cr_assert(strstr(s, "allreduce of 67108864..1073741824 B (5 sizes) on 16 ranks: nvls-tree, simple, 16 channels, "),
            "%s", s);
  cr_assert(strstr(s, "job        nccl-tests: nccl-tests on 16 ranks (endpoints 0-15)\n"), "%s", s);
  cr_assert_null(strstr(s, "more collectives"), "%s", s);
  g_free(s);
  fab_scenario_free(sc);
  const char *const sets[] = {"cluster.node=gb200-nvl72", "cluster.nodes=4", "fabric.link=~",
                              "workload.ranks=[0, 4, 8, 12, 1, 5, 9, 13]", NULL};
  sc = load("scenarios/nccl-tests-dgx-h100.yaml", sets);
  s = fab_scenario_explain(sc);
  cr_assert(strstr(s, "endpoints  16 GPUs = 4 gb200-nvl72 nodes of 4 GPUs"), "%s", s);
  cr_assert(strstr(s, "one NVSwitch domain (16 of its 72 GPUs in use)"), "%s", s);
  cr_assert(strstr(s, "(endpoints 0, 4, 8, 12, 1, 5, 9, 13)"), "%s", s);
  g_free(s);
  fab_scenario_free(sc);
}

/* A collective too large to expand at full fidelity is coarsened where it
** costs least (NVLS_TREE: larger pieces, its 16 channels kept), and says so. */
Test(scenario, coarsened_collective_keeps_its_channels_and_warns) {
  const char *const sets[] = {"cluster.nodes=16", "workload.sizes=[2147483648]", NULL};
  FabScenario *sc = load("scenarios/validation/dgx-h100-ib.yaml", sets);
  const FabCollDef *cd = &g_array_index(sc->dag->colls, FabCollDef, 0);
  cr_assert_str_eq(cd->algorithm, "nvls-tree");
  cr_assert_eq(cd->channels, 16, "NCCL's NVLS channels on Hopper");
  cr_assert_eq(cd->chunk, 131072);
  cr_assert_eq(sc->warnings->len, 1);
  cr_assert_str_eq(g_ptr_array_index(sc->warnings, 0),
                   "allreduce of 2147483648 B on 128 ranks (nvls-tree, simple): 131072-byte pieces instead of 65536, "
                   "to stay within 4000000 operations a collective; set workload.channels or workload.chunk to choose");
  fab_scenario_free(sc);
  const char *const fixed[] = {"cluster.nodes=16", "workload.sizes=[2147483648]", "workload.chunk=256KiB", NULL};
  sc = load("scenarios/validation/dgx-h100-ib.yaml", fixed);
  cr_assert_eq(sc->warnings->len, 0, "a chunk the user chose is not a loss of fidelity");
  fab_scenario_free(sc);
}

/* A collective job unfolds as it runs (ops made layer by layer, retired once
** done): the same JSON as the same DAG made whole before the run, while the
** run holds a small part of its ops; with a background job after it, it is
** made whole (only the last job unfolds). GPU nodes, so NVLink and the
** network both carry it, on 4 channels. */
static const char unfold_yaml[] =
  "name: unfold\nseed: 3\ncluster: {node: dgx-h100, nodes: 2}\n"
  "fabric: {topology: {kind: rail-optimized}, link: {bandwidth: 400Gbps, latency: 500ns}}\n"
  "workload:\n"
  "  - {name: ar, kind: collective, op: allreduce, size: 768MiB, algorithm: ring, protocol: simple, channels: 4,"
  " chunk: 64KiB}\n";

static FabScenario *load_text(const char *text) {
  GError *err = NULL;
  FabScenario *sc = fab_scenario_load_string(text, "unfold", ".", NULL, &err);
  cr_assert_not_null(sc, "%s", err ? err->message : "?");
  return sc;
}

/* Run a (unfolding) and b (the same scenario, made whole here): the same
** JSON, a's flow records folded, a holding under 1/frac of the ops at once.
** Frees both; returns b's op count. */
static uint32_t same_both_ways(FabScenario *a, FabScenario *b, uint32_t frac) {
  while (fab_dag_more(b->dag)) continue; /* b: every op made before the run */
  uint32_t total = fab_dag_len(b->dag);
  FabResults ra, rb;
  run_ok(a, &ra);
  run_ok(b, &rb);
  char *ja = stable_json(&ra), *jb = stable_json(&rb);
  cr_assert_str_eq(ja, jb, "unfolded and made whole differ");
  cr_assert_null(ra.flows, "unfolded: the flows' records folded as they retire");
  cr_assert_eq(rb.n_flows, ra.flow_stats.count);
  cr_assert_eq(rb.ops_held, total, "made whole: every op held");
  cr_assert_lt(ra.ops_held, total / frac, "unfolded: %u of %u ops held at once", ra.ops_held, total);
  g_free(ja);
  g_free(jb);
  done(a, &ra);
  done(b, &rb);
  return total;
}

Test(scenario, an_unfolding_collective_runs_as_if_made_whole) {
  FabScenario *a = load_text(unfold_yaml), *b = load_text(unfold_yaml);
  cr_assert_not_null(a->dag->more, "a collective job unfolds");
  char *ex = fab_scenario_explain(a);
  cr_assert(strstr(ex, "more operations made as it runs, layer by layer"), "%s", ex);
  g_free(ex);
  uint32_t total = same_both_ways(a, b, 10);
  /* not the last job: made whole */
  char *two = g_strconcat(unfold_yaml, "  - {name: bg, kind: permutation, size: 1MiB, ranks: [0, 8]}\n", NULL);
  FabScenario *c = load_text(two);
  cr_assert_null(c->dag->more);
  cr_assert_eq(fab_dag_len(c->dag), total + 2, "the collective made whole, then the background's two flows");
  fab_scenario_free(c);
  g_free(two);
}

/* An nccl-tests sweep, the workload's last job, unfolds: its collectives
** one after another, rings layer by layer (the larger sizes here) and
** trees made whole (the smaller), every collective defined at load; the
** same ops as the sweep made whole before the run (when another job follows
** it), the same JSON as all of it made first. */
static const char sweep_yaml[] =
  "name: sweep\nseed: 2\ncluster: {nodes: 8}\n"
  "fabric: {topology: {kind: leaf-spine, hosts_per_leaf: 4, spines: 2}, link: {bandwidth: 100Gbps, latency: 1us}}\n"
  "workload:\n"
  "  - {name: sweep, kind: nccl-tests, op: allreduce, min: 4KiB, max: 64MiB, factor: 128, warmup: 1, iters: 2,"
  " chunk: 64KiB}\n";

Test(scenario, an_unfolding_nccl_tests_sweep_runs_as_if_made_whole) {
  FabScenario *a = load_text(sweep_yaml), *b = load_text(sweep_yaml);
  cr_assert_not_null(a->dag->more, "the sweep unfolds");
  cr_assert_eq(a->dag->colls->len, 3 * 3, "3 sizes x (1 warm-up + 2 iterations) defined at load");
  cr_assert_lt(fab_dag_len(a->dag), 4096 + 4096, "a first batch, not the sweep");
  char *ex = fab_scenario_explain(a);
  cr_assert(strstr(ex, "collective 2 x allreduce of 67108864 B on 8 ranks: ring, simple"), "%s", ex);
  cr_assert(strstr(ex, "collective 2 x allreduce of 4096 B on 8 ranks: tree"), "%s", ex);
  g_free(ex);
  /* made whole: another job follows it */
  char *two = g_strconcat(sweep_yaml, "  - {name: bg, kind: flows, flows: [{src: 0, dst: 1, size: 1KiB}]}\n", NULL);
  FabScenario *c = load_text(two);
  cr_assert_null(c->dag->more);
  while (fab_dag_more(b->dag)) continue;
  FabDag *whole = c->dag;
  uint32_t n = fab_dag_len(b->dag);
  cr_assert_eq(fab_dag_len(whole), n + 1, "the sweep made whole, then the background's flow");
  fab_dag_truncate(whole, n, fab_dag_deps_len(b->dag));
  g_array_set_size(whole->colls, b->dag->colls->len);
  testdag_same(whole, b->dag, "an nccl-tests sweep");
  fab_scenario_free(c);
  g_free(two);
  fab_scenario_free(b);
  b = load_text(sweep_yaml);
  same_both_ways(a, b, 2);
}

/* A training job unfolds as it runs (a round at a time: one 1F1B slot of
** every stage and a layer of each DP ring), with the same JSON as the same
** job made whole before the run; its stages must be alike. */
Test(scenario, an_unfolding_training_step_runs_as_if_made_whole) {
  FabScenario *a = load("tests/scenarios/training-pp-tp.yaml", NULL), *b = load("tests/scenarios/training-pp-tp.yaml", NULL);
  cr_assert_not_null(a->dag->more, "a training job whose stages are alike unfolds");
  same_both_ways(a, b, 2);
}

Test(scenario, fabric_segment_moves_trains_cut_through) {
  /* tests/data/segment-one-flow.yaml works the two end times out. */
  const fab_time_t pkt = 4178 * 80; /* ps for one packet's 4178 wire bytes at 100 Gbps */
  FabScenario *sc = load("tests/data/segment-one-flow.yaml", NULL);
  FabResults a, b;
  run_ok(sc, &a);
  cr_assert_eq(a.sim_time, 2 * FAB_US + (256 + 1) * pkt, "packets: %" G_GUINT64_FORMAT, a.sim_time);
  cr_assert_eq(a.fabric_segment, 0);
  uint64_t a_hops = a.packet_hops;
  done(sc, &a);
  const char *const sets[] = {"fabric.segment=64KiB", NULL};
  sc = load("tests/data/segment-one-flow.yaml", sets);
  run_ok(sc, &b);
  cr_assert_eq(b.sim_time, 2 * FAB_US + (256 + 1) * pkt, "trains: %" G_GUINT64_FORMAT, b.sim_time);
  cr_assert_eq(b.fabric_segment, 65536);
  cr_assert_eq(b.packet_hops, 2 * 16 + 2 * 16, "16 trains and 16 ACKs (one per 16 packets' bytes, as packet by "
               "packet: one per train), each over two links: %" G_GUINT64_FORMAT, b.packet_hops);
  cr_assert_eq(a_hops, 2 * 256 + 2 * 16, "packets: 256 and 16 ACKs");
  char *js = fab_json_summary(&b);
  cr_assert(strstr(js, "\"fabric_segment_bytes\": 65536"), "%s", js);
  g_free(js);
  done(sc, &b);
  const char *const same[] = {"fabric.segment=4KiB", NULL}; /* one packet: packet level */
  sc = load("tests/data/segment-one-flow.yaml", same);
  run_ok(sc, &b);
  cr_assert_eq(b.sim_time, 2 * FAB_US + (256 + 1) * pkt);
  cr_assert_eq(b.fabric_segment, 0);
  done(sc, &b);
}

/* Trains bigger than 2^21 bytes at a rate whose picoseconds per byte are
** not whole: tests/data/segment-big-train.yaml works both end times out
** (64-bit serialisation arithmetic wrapped there and ran the trains at more
** than twice the line rate). */
Test(scenario, fabric_segment_big_trains_take_their_serialisation_time) {
  FabScenario *sc = load("tests/data/segment-big-train.yaml", NULL);
  FabResults r;
  run_ok(sc, &r);
  cr_assert_eq(r.sim_time, 2 * FAB_US + 4097 * (fab_time_t)111414, "packets: %" G_GUINT64_FORMAT, r.sim_time);
  done(sc, &r);
  const char *const sets[] = {"fabric.segment=4MiB", NULL};
  sc = load("tests/data/segment-big-train.yaml", sets);
  run_ok(sc, &r);
  cr_assert_eq(r.fabric_segment, 4194304);
  cr_assert_eq(r.sim_time, 2 * FAB_US + 111414 + 4 * (fab_time_t)114087254, "trains: %" G_GUINT64_FORMAT, r.sim_time);
  done(sc, &r);
}

Test(scenario, pfc_deadlock_is_detected_and_reported) {
  FabScenario *sc = load("scenarios/pfc-deadlock-ring.yaml", NULL);
  FabResults res;
  FabRunOpts opts = {0};
  struct timespec c0, c1; /* CPU time: what it cost, not how long it waited for a core on a loaded machine */
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  cr_assert_eq(fab_run(sc, &opts, &res), 1);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  cr_assert_lt((double)(c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) / 1e9, 10.0, "bounded CPU time");
  cr_assert(strstr(res.failure, "PFC deadlock"), "%s", res.failure);
  cr_assert_eq(res.n_deadlock, 4, "the four ring links");
  static const char *const ring[] = {"ring0:p2", "ring1:p2", "ring2:p2", "ring3:p2"};
  for (uint32_t i = 0; i < 4; i++) cr_assert_str_eq(res.deadlock[i], ring[i]);
  cr_assert_eq(res.sim_time, 2 * FAB_MS, "found at the second watchdog look");
  char *js = fab_json_summary(&res);
  cr_assert(strstr(js, "\"deadlock\": [\"ring0:p2\", \"ring1:p2\", \"ring2:p2\", \"ring3:p2\"]"), "%s", js);
  g_free(js);
  done(sc, &res);
}

Test(scenario, the_same_ring_without_pfc_completes) {
  const char *sets[] = {"fabric.switch.pfc.enabled=false", NULL};
  FabScenario *sc = load("scenarios/pfc-deadlock-ring.yaml", sets);
  FabResults res;
  run_ok(sc, &res);
  cr_assert_gt(res.drops, 0, "lossy: the ring drops instead");
  cr_assert_eq(res.n_deadlock, 0);
  done(sc, &res);
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

Test(scenario, dcqcn_keeps_the_queue_near_kmin_kmax_and_cuts_pauses) {
  FabScenario *dc = load("scenarios/incast-dcqcn.yaml", NULL);
  const char *sets[] = {"fabric.congestion_control={algorithm: none}", "fabric.switch.ecn.enabled=false", NULL};
  FabScenario *no = load("scenarios/incast-dcqcn.yaml", sets);
  FabResults rd, rn;
  FabRunOpts opts = {.sample_queues = true};
  cr_assert_eq(fab_run(dc, &opts, &rd), 0, "%s", rd.failure);
  cr_assert_eq(fab_run(no, &opts, &rn), 0, "%s", rn.failure);
  cr_assert_eq(rd.drops + rn.drops, 0, "PFC: lossless either way");
  cr_assert_gt(rd.ecn_marks, 0);
  cr_assert_eq(rn.ecn_marks, 0, "CC none does not send ECN-capable packets");
  cr_assert_lt(rd.pfc_pause_frames * 5, rn.pfc_pause_frames, "DCQCN %" G_GUINT64_FORMAT " pauses, none %"
               G_GUINT64_FORMAT, rd.pfc_pause_frames, rn.pfc_pause_frames);
  /* the bottleneck (switch0:p0) after the first burst: around kmin..kmax (20..100 KiB) */
  const FabQueueSeries *q = &rd.queues;
  cr_assert_str_eq(q->port[0], "switch0:p0");
  uint32_t n = q->n_samples, lo = n / 5, hi = 4 * n / 5;
  uint32_t *v = g_new(uint32_t, hi - lo);
  for (uint32_t s = lo; s < hi; s++) v[s - lo] = q->depth[(size_t)s * q->n_ports];
  qsort(v, hi - lo, sizeof *v, cmp_u32);
  uint32_t median = v[(hi - lo) / 2], p90 = v[(hi - lo) * 9 / 10];
  g_free(v);
  cr_assert_leq(median, 100 << 10, "median %u", median);
  cr_assert_leq(p90, 200 << 10, "p90 %u", p90);
  done(dc, &rd);
  done(no, &rn);
}

/* The same 16:1 incast under the other algorithms of models/cc.h. DCTCP
** (ECN, a window per flow) takes PFC's place as DCQCN does: measured 172
** pause frames against 1226 with none, every flow done as soon (the link
** never idles), ECN marks echoed. TIMELY reads delay only: its RTT here
** stays under t_high (the 2.5 MB queue is 206 us at 100 Gbps, t_high
** 500 us) and the gradient is flat, so it leaves PFC to hold the queue
** (measured 1012 pauses); with t_high at 100 us (t_low 20 us) the excess
** rule cuts and pauses fall to 357. HPCC (the switches' utilisation in
** each packet) sends no PFC pause at all and keeps the queue under 2.1 MB
** (measured 2013796 B, the first round trip's windows), at 6.681 ms against
** 5.479 (eta 0.95, and RoCE's ACK every 16 packets slows its feedback). */
Test(scenario, dctcp_timely_and_hpcc_on_the_incast) {
  const char *none_sets[] = {"fabric.congestion_control={algorithm: none}", NULL};
  const char *dctcp_sets[] = {"fabric.congestion_control={algorithm: dctcp}", NULL};
  const char *timely_sets[] = {"fabric.congestion_control={algorithm: timely}", NULL};
  const char *low_sets[] = {"fabric.congestion_control={algorithm: timely, t_high: 100us, t_low: 20us}", NULL};
  const char *hpcc_sets[] = {"fabric.congestion_control={algorithm: hpcc}", NULL};
  const char *const *sets[] = {none_sets, dctcp_sets, timely_sets, low_sets, hpcc_sets};
  FabScenario *sc[5];
  FabResults r[5];
  for (int i = 0; i < 5; i++) {
    sc[i] = load("scenarios/incast-dcqcn.yaml", sets[i]);
    run_ok(sc[i], &r[i]);
    cr_assert_eq(r[i].drops, 0, "PFC: lossless");
    cr_assert_eq(r[i].n_flows, 16);
  }
  cr_assert_gt(r[1].ecn_marks, 0);
  cr_assert_eq(r[2].ecn_marks + r[3].ecn_marks, 0, "TIMELY's packets are not ECN-capable");
  cr_assert_lt(r[1].pfc_pause_frames * 5, r[0].pfc_pause_frames, "dctcp %" G_GUINT64_FORMAT ", none %"
               G_GUINT64_FORMAT, r[1].pfc_pause_frames, r[0].pfc_pause_frames);
  cr_assert_eq(r[1].sim_time, r[0].sim_time, "DCTCP keeps the bottleneck busy");
  cr_assert_lt(r[2].pfc_pause_frames, r[0].pfc_pause_frames);
  cr_assert_lt(r[3].pfc_pause_frames * 2, r[2].pfc_pause_frames, "a lower t_high cuts: %" G_GUINT64_FORMAT " vs %"
               G_GUINT64_FORMAT, r[3].pfc_pause_frames, r[2].pfc_pause_frames);
  cr_assert_eq(r[4].pfc_pause_frames + r[4].ecn_marks, 0, "hpcc: no pause, no mark");
  cr_assert_lt(r[4].max_queue_bytes, 2100000, "%" G_GUINT64_FORMAT, r[4].max_queue_bytes);
  cr_assert_lt(r[4].sim_time, r[0].sim_time * 5 / 4, "within 25 %% of line rate");
  for (int i = 0; i < 5; i++) done(sc[i], &r[i]);
}

Test(scenario, random_ecn_marking_is_deterministic_per_seed) {
  FabScenario *a = load("scenarios/incast-dcqcn.yaml", NULL);
  FabScenario *b = load("scenarios/incast-dcqcn.yaml", NULL);
  const char *sets[] = {"seed=2", NULL};
  FabScenario *c = load("scenarios/incast-dcqcn.yaml", sets);
  FabResults ra, rb, rc;
  run_ok(a, &ra);
  run_ok(b, &rb);
  run_ok(c, &rc);
  char *ja = stable_json(&ra), *jb = stable_json(&rb);
  cr_assert_str_eq(ja, jb, "same seed, same results");
  cr_assert_eq(memcmp(ra.flows, rb.flows, ra.n_flows * sizeof *ra.flows), 0);
  cr_assert_gt(ra.ecn_marks, 0);
  cr_assert(ra.ecn_marks != rc.ecn_marks || ra.events != rc.events, "another seed draws other marks");
  g_free(ja);
  g_free(jb);
  done(a, &ra);
  done(b, &rb);
  done(c, &rc);
}

Test(scenario, an_infiniband_credit_loop_is_reported_as_a_deadlock) {
  const char *sets[] = {"fabric.transport=infiniband", "fabric.switch.pfc.enabled=false", NULL};
  FabScenario *sc = load("scenarios/pfc-deadlock-ring.yaml", sets);
  FabResults res;
  FabRunOpts opts = {0};
  cr_assert_eq(fab_run(sc, &opts, &res), 1);
  cr_assert(strstr(res.failure, "credit deadlock"), "%s", res.failure);
  cr_assert_eq(res.n_deadlock, 4);
  cr_assert_eq(res.drops, 0, "credits never drop");
  done(sc, &res);
}

/* What a collective's flows carry out of their nodes (nic_bytes, nics,
** nic_GBps). Two DGX H100, a simple-protocol ring allreduce of S over all 16
** GPUs: every ring crosses between the nodes twice, and each crossing
** carries 2 (n-1)/n of its channel's share, so 4 x 15/16 x S leave by the
** NICs in all, by all 16 NICs (16 channels over each node's 8). The same allreduce among one node's 8 GPUs stays on NVLink:
** nothing leaves, no NIC, 0 GB/s. */
Test(scenario, a_collective_counts_what_leaves_its_nodes) {
  static const char yaml[] = "cluster: {node: dgx-h100, nodes: 2}\n"
                             "fabric:\n"
                             "  transport: infiniband\n"
                             "  topology: {kind: single-switch}\n"
                             "workload:\n"
                             "  - {name: all, kind: collective, op: allreduce, size: 16MiB, algorithm: ring, "
                             "protocol: simple}\n"
                             "  - {name: node, kind: collective, op: allreduce, size: 16MiB, algorithm: ring, "
                             "protocol: simple, ranks: [0, 1, 2, 3, 4, 5, 6, 7]}\n";
  FabScenario *sc = testscen_load(yaml, NULL);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_str_eq(res.status, "ok");
  cr_assert_eq(res.n_colls, 2);
  const FabCollRec *all = &res.colls[0], *node = &res.colls[1];
  cr_assert_eq(all->nic_bytes, 4 * 15 * (16ull << 20) / 16, "%lu", all->nic_bytes);
  cr_assert_eq(all->nics, 16, "%u NICs", all->nics);
  cr_assert_float_eq(all->nic_GBps, (double)all->nic_bytes / all->nics / all->time_s / 1e9, 1e-9);
  cr_assert_eq(node->nic_bytes, 0);
  cr_assert_eq(node->nics, 0);
  cr_assert_eq(node->nic_GBps, 0.0);
  testscen_done(sc, &res);
  /* GPUs with four NICs each (AWS p5: 32 x 100 Gb/s per node, EFA): the flows leave by their lanes' NICs, and a
  ** piece over 128 KiB is striped over all four (aws-ofi-nccl), so all 64 NICs carry the same 4 x 15/16 x S,
  ** each below its 12.5 GB/s; counted by the first NIC of each GPU, it was 16 NICs at 4 times the line rate */
  sc = testscen_load("cluster: {node: aws-p5, nodes: 2}\nfabric: {topology: {kind: rail-optimized}}\n"
                     "workload: {kind: collective, op: allreduce, size: 256MiB, algorithm: ring, protocol: simple}\n",
                     NULL);
  testscen_run(sc, &res);
  cr_assert_str_eq(res.status, "ok");
  all = &res.colls[0];
  cr_assert_eq(all->nic_bytes, 4 * 15 * (256ull << 20) / 16, "%lu", all->nic_bytes);
  cr_assert_eq(all->nics, 64, "%u NICs", all->nics);
  cr_assert(all->nic_GBps > 0.5 * 12.5 && all->nic_GBps <= 12.5, "%.3f GB/s per NIC", all->nic_GBps);
  testscen_done(sc, &res);
}

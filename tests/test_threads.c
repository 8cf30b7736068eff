/* A run spread over threads (FabRunOpts.threads, `fabsim run --threads N`):
** the same JSON, byte for byte, with 1, 2 and 3 partitions, on fabrics
** whose cuts carry losses and go-back-N, selective repeat, SRD, spraying,
** adaptive routing, PFC pauses (with the watchdog looking between windows,
** and finding a deadlock), DCQCN's CNPs, InfiniBand credits and
** trains, an all-to-all, and DGX nodes on rails; and workloads whose
** operations wait for others in other partitions (collectives by ring, tree
** and NVLS tree, an nccl-tests sweep with its barriers, jobs that start
** later, a training step with pipeline, tensor and data parallelism), the
** executor running under a lock from the partitions' threads; links that
** fail on the cut. A scenario the threads cannot take runs on one engine
** with the same results, and says why. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include "testscen.h"
#include "tools/libfabsim/partition.h"
#include "topologies/failures.h"

typedef struct Variant {
  const char *file;
  const char *sets[10];
  const char *shows; /* a JSON field the variant must make non-zero: what crosses the cut */
  uint32_t threads;  /* the most it runs on (parts that may not be split); 0: 3 */
} Variant;

#define RING "workload={kind: collective, op: allreduce, size: 8MiB, algorithm: ring}"
#define TREE "workload={kind: collective, op: allreduce, size: 2MiB, algorithm: tree}"
#define NVLS_TREE "workload={kind: collective, op: allreduce, size: 8MiB, algorithm: nvls-tree}"
#define SWEEP "workload={kind: nccl-tests, op: allreduce, min: 1KiB, max: 1MiB, factor: 32, iters: 2, warmup: 1}"
#define LATER "workload=[{kind: collective, op: allgather, size: 4MiB, start: 20us}, " \
              "{kind: flows, flows: [{src: 0, dst: 9, size: 1MiB}]}]"

#define PFC "fabric.switch.pfc.enabled=true", "fabric.switch.priorities=1", "fabric.switch.pfc.watchdog=0", \
            "fabric.switch.buffer=1MiB", "fabric.switch.pfc.xoff=32KiB", "fabric.switch.pfc.xon=16KiB"

static const Variant variants[] = {
  {"tests/scenarios/leaf-spine-small.yaml", {NULL}, "packet_hops"},
  {"tests/scenarios/leaf-spine-small.yaml", {"fabric.switch.buffer=48KiB", NULL}, "drops"},
  {"tests/scenarios/leaf-spine-small.yaml", {"fabric.switch.buffer=48KiB", "cluster.nic.reliability=selective", NULL},
   "retransmits"},
  {"tests/scenarios/leaf-spine-small.yaml", {PFC, NULL}, "pfc_pause_frames"},
  {"tests/scenarios/leaf-spine-small.yaml", {PFC, "fabric.switch.pfc.watchdog=100us", NULL}, "pfc_pause_frames"},
  {"tests/scenarios/fat-tree-k4.yaml", {NULL}, "packet_hops"}, /* PFC, its watchdog every 1 ms */
  {"tests/scenarios/leaf-spine-small.yaml",
   {PFC, "fabric.switch.ecn.enabled=true", "fabric.congestion_control.algorithm=dcqcn", NULL}, "cnps"},
  {"tests/scenarios/leaf-spine-small.yaml", {"fabric.transport=infiniband", "fabric.switch.pfc.watchdog=0", NULL},
   "retransmits"},
  {"tests/scenarios/leaf-spine-small.yaml", {"fabric.switch.routing=adaptive", "cluster.nic.reliability=selective",
   NULL}, "retransmits"},
  {"tests/scenarios/leaf-spine-small.yaml", {"fabric.segment=16KiB", NULL}, "packet_hops"},
  {"tests/scenarios/spray-avoid.yaml", {NULL}, "ecn_marks"},
  {"tests/scenarios/srd-incast.yaml", {NULL}, "drops"},
  {"tests/scenarios/incast-lossy.yaml", {NULL}, "drops"},
  {"tests/scenarios/flows-priorities.yaml", {NULL}, "packet_hops"},
  {"tests/scenarios/leaf-spine-small.yaml", {"workload={kind: all-to-all, per_pair: 16KiB}", NULL}, "packet_hops"},
  /* DGX H100 nodes (NVLink, PCIe, NIC credits inside; InfiniBand rails between them): cut between nodes */
  {"scenarios/dgx-h100-rails.yaml", {NULL}, "packet_hops"},
  {"scenarios/dgx-h100-rails.yaml", {"workload={kind: all-to-all, per_pair: 256KiB}", NULL}, "packet_hops"},
  /* operations that wait for others (the executor under its lock) */
  {"scenarios/dgx-h100-rails.yaml", {RING, NULL}, "packet_hops"},
  {"scenarios/dgx-h100-rails.yaml", {TREE, NULL}, "packet_hops"},
  {"scenarios/dgx-h100-rails.yaml", {NVLS_TREE, NULL}, "packet_hops"},
  {"scenarios/dgx-h100-rails.yaml", {SWEEP, NULL}, "packet_hops"},
  {"scenarios/dgx-h100-rails.yaml", {LATER, NULL}, "packet_hops"},
  {"tests/scenarios/nccl-tests-allreduce.yaml", {NULL}, "packet_hops"},
  {"tests/scenarios/two-jobs.yaml", {NULL}, "packet_hops"},
  {"tests/scenarios/training-pp-tp.yaml", {"cluster.nodes=4", "workload.parallelism.dp=4", NULL}, "packet_hops"},
  {"tests/scenarios/training-pp-tp.yaml", {NULL}, "packet_hops", 2},
};

/* `field`'s value in a JSON summary (a top-level number), or 0. */
static double json_number(const char *js, const char *field) {
  char *key = g_strdup_printf("\"%s\": ", field);
  const char *at = strstr(js, key);
  double v = at ? g_ascii_strtod(at + strlen(key), NULL) : 0;
  g_free(key);
  return v;
}

static char *run_json_rc(const FabScenario *sc, uint32_t threads, uint32_t *parts, int want_rc) {
  FabRunOpts opts = {.threads = threads};
  FabResults res;
  int rc = fab_run(sc, &opts, &res);
  cr_assert_eq(rc, want_rc, "%u threads: %s", threads, res.failure ? res.failure : "?");
  *parts = res.partitions;
  char *js = testscen_stable_json(&res);
  fab_results_clear(&res);
  return js;
}

static char *run_json(const FabScenario *sc, uint32_t threads, uint32_t *parts) {
  return run_json_rc(sc, threads, parts, 0);
}

/* A scenario loaded afresh for each run: a workload made as it runs is used up by one. */
static char *load_and_run(const char *file, const char *const *sets, uint32_t threads, uint32_t *parts) {
  FabScenario *sc = testscen_load_file(file, sets);
  char *js = run_json(sc, threads, parts);
  fab_scenario_free(sc);
  return js;
}

Test(threads, every_variant_gives_the_same_json_on_1_2_and_3_threads) {
  for (size_t i = 0; i < G_N_ELEMENTS(variants); i++) {
    const Variant *v = &variants[i];
    uint32_t parts;
    char *one = load_and_run(v->file, v->sets, 1, &parts);
    cr_assert_eq(parts, 1);
    cr_assert_gt(json_number(one, v->shows), 0, "variant %zu (%s): %s is 0", i, v->file, v->shows);
    for (uint32_t t = 2; t <= (v->threads ? v->threads : 3); t++) {
      char *js = load_and_run(v->file, v->sets, t, &parts);
      cr_assert_eq(parts, t, "variant %zu (%s) ran on %u partitions, not %u", i, v->file, parts, t);
      cr_assert_str_eq(js, one, "variant %zu (%s): %u threads differ from one", i, v->file, t);
      g_free(js);
    }
    g_free(one);
  }
}

/* A run that fails (exit status 1) fails the same on 1, 2 and 3 threads:
** the same JSON, whose failure text has `says`. */
static void fails_the_same(const char *file, const char *const *sets, const char *says) {
  FabScenario *sc = testscen_load_file(file, sets);
  uint32_t parts;
  char *one = run_json_rc(sc, 1, &parts, 1);
  cr_assert(strstr(one, says) != NULL, "%s", one);
  for (uint32_t t = 2; t <= 3; t++) {
    char *js = run_json_rc(sc, t, &parts, 1);
    cr_assert_eq(parts, t);
    cr_assert_str_eq(js, one, "%s: %u threads", file, t);
    g_free(js);
  }
  g_free(one);
  fab_scenario_free(sc);
}

/* The watchdog looks between windows, at its own times (a window ends just
** before each): the same deadlock, found at the same time, with the same
** cycle, on any number of threads. */
Test(threads, a_pfc_deadlock_is_found_the_same_on_threads) {
  fails_the_same("scenarios/pfc-deadlock-ring.yaml", NULL,
                 "PFC deadlock at 2.000000 ms: a cycle of paused ports: ring0:p2 -> ring1:p2");
}

/* A run cut by stop_time stops at the same time on threads; the packets
** then on cut wires are events, not on the wires' lists, and are freed and
** counted as in flight all the same (or conservation would fail). */
Test(threads, a_run_cut_by_stop_time_is_the_same_on_threads) {
  fails_the_same("scenarios/leaf-spine-permutation-128.yaml", (const char *[]){"stop_time=500us", NULL},
                 "\"failure\": \"stop_time reached with 92 of 128 flows unfinished (92 of 128 operations)\"");
}

/* The sampler looks between windows too (a window ends just before each
** sample): the same queue depths, per priority, flow rates and link bytes at
** the same times, on PFC with DCQCN (its watchdog looking as well). */
static void sampled(const char *file, uint32_t threads, FabResults *res) {
  FabScenario *sc = testscen_load_file(file, NULL);
  FabRunOpts opts = {.threads = threads, .sample_queues = true};
  cr_assert_eq(fab_run(sc, &opts, res), 0, "%s", res->failure ? res->failure : "?");
  cr_assert_eq(res->partitions, threads);
  fab_scenario_free(sc);
}

Test(threads, queue_samples_are_the_same_on_threads) {
  FabResults a, b;
  sampled("scenarios/incast-dcqcn.yaml", 1, &a);
  sampled("scenarios/incast-dcqcn.yaml", 2, &b);
  const FabQueueSeries *x = &a.queues, *y = &b.queues;
  cr_assert_gt(x->n_samples, 100);
  cr_assert(x->n_samples == y->n_samples && x->n_ports == y->n_ports && x->n_prio == y->n_prio &&
            x->interval == y->interval);
  size_t n = x->n_samples, np = x->n_ports;
  cr_assert_eq(memcmp(x->t, y->t, n * sizeof *x->t), 0, "sample times");
  cr_assert_eq(memcmp(x->depth, y->depth, n * np * sizeof *x->depth), 0, "queue depths");
  if (x->n_prio) cr_assert_eq(memcmp(x->depth_prio, y->depth_prio, n * np * x->n_prio * 4), 0);
  cr_assert_eq(memcmp(x->link_bytes, y->link_bytes, n * a.n_links * sizeof *x->link_bytes), 0, "link bytes");
  cr_assert_not_null(x->flow_rate);
  cr_assert_eq(memcmp(x->flow_rate, y->flow_rate, n * a.n_flows * sizeof *x->flow_rate), 0, "flow rates");
  uint64_t deepest = 0;
  for (size_t i = 0; i < n * np; i++) deepest = MAX(deepest, x->depth[i]);
  cr_assert_gt(deepest, 0, "the incast queues");
  fab_results_clear(&a);
  fab_results_clear(&b);
}

/* The first link of `file` that goes down joins two partitions of an n-way
** cut: the far end of each direction's wire loses what was on it. */
static bool failing_link_is_cut(const char *file, const char *const *sets, uint32_t n) {
  FabScenario *sc = testscen_load_file(file, sets);
  FabTopology *t = fab_topology_build(&sc->fabric);
  fab_failures_as_built(t, &sc->fabric);
  FabPartition p;
  GError *err = NULL;
  cr_assert(fab_partition_make_for(t, sc->dag, n, &p, &err), "%s", err ? err->message : "?");
  const char *why;
  uint32_t i = 0;
  while (i < sc->fabric.nchanges && sc->fabric.changes[i].down != 1) i++;
  cr_assert_lt(i, sc->fabric.nchanges);
  FabPort *ab = fab_topology_find_link(t, sc->fabric.changes[i].a, sc->fabric.changes[i].b, &why);
  cr_assert_not_null(ab);
  uint32_t part[2] = {UINT32_MAX, UINT32_MAX};
  for (uint32_t s = 0; s < t->nswitches; s++)
    for (int d = 0; d < 2; d++)
      if (fab_switch_node(t->switches[s]) == (d ? ab->peer : ab)->owner) part[d] = p.rank[t->nhosts + s];
  cr_assert_neq(part[0], UINT32_MAX);
  cr_assert_neq(part[1], UINT32_MAX);
  fab_partition_clear(&p);
  fab_topology_free(t);
  fab_scenario_free(sc);
  return part[0] != part[1];
}

/* Links that fail, come back, change rate: each partition applies every
** change to what it runs, routes its own switches from the changes it
** applied, and the far end of a cut wire loses what was on it when the link
** went down (failures.h): the same JSON, the same losses per change, on 1
** to 4 threads; with the link down at the end (its losses counted then), a
** latency set from the start below the others' (the lookahead follows it),
** a link that goes down, up and down again within two flight times, and
** routes that follow at once (adaptive) or by hash, over RoCE and IB. */
Test(threads, links_that_fail_on_a_cut_give_the_same_json) {
  static const char *const sets[][4] = {
    {NULL},
    {"fabric.switch.routing=adaptive", NULL},
    {"fabric.transport=infiniband", NULL},
    {"fabric.failures=[{link: leaf0-spine1, at: 0us, latency: 100ns}, {link: leaf0-spine1, at: 20us, down: true}]",
     NULL},
    {"fabric.failures=[{link: leaf0-spine1, at: 20us, down: true}, {link: leaf0-spine1, at: 20.5us, down: false}, "
     "{link: leaf0-spine1, at: 20.8us, down: true}, {link: leaf0-spine1, at: 50us, down: false}]", NULL},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(sets); i++) {
    cr_assert(failing_link_is_cut("tests/scenarios/link-down.yaml", sets[i], 2), "variant %zu", i);
    cr_assert(failing_link_is_cut("tests/scenarios/link-down.yaml", sets[i], 4), "variant %zu", i);
    uint32_t parts;
    char *one = load_and_run("tests/scenarios/link-down.yaml", sets[i], 1, &parts);
    const char *down = strstr(one, "\"change\": \"down\"");
    cr_assert_not_null(down, "variant %zu", i);
    cr_assert_gt(json_number(down, "lost_packets"), 0, "variant %zu: the first down's losses", i);
    for (uint32_t t = 2; t <= 4; t++) {
      char *js = load_and_run("tests/scenarios/link-down.yaml", sets[i], t, &parts);
      cr_assert_eq(parts, t);
      cr_assert_str_eq(js, one, "variant %zu: %u threads differ from one", i, t);
      g_free(js);
    }
    g_free(one);
  }
}

/* Cut by stop_time just after the link went down: what its cut wires held
** is lost, not in flight, as one engine counts it; so is what was queued for
** it (71 with the wires; 10 before queues were lost at the down itself
** rather than at the end of the packet on the serialiser, 20.334 us). */
Test(threads, a_run_cut_just_after_a_link_failed_is_the_same_on_threads) {
  fails_the_same("tests/scenarios/link-down.yaml", (const char *[]){"stop_time=20.3us", NULL},
                 "\"lost_packets\": 71,");
}

/* What the threads cannot take runs on one engine: aws-ofi-nccl's
** send/recv protocol over EFA, whose ring pieces reuse a slot the moment
** the receiver forwarded what was in it (nothing tells the sender across
** the cut: no lookahead), where IB's and RoCE's wait for the receiver's
** clear-to-send. */
Test(threads, a_run_the_threads_cannot_take_runs_on_one_engine, .init = cr_redirect_stderr) {
  static const struct {
    const char *file;
    const char *sets[4];
  } refused[] = {
    {"scenarios/validation/aws-p4d.yaml", {"workload.algorithm=ring", "workload.protocol=simple",
                                           "workload.sizes=[16MiB]", NULL}},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(refused); i++) {
    uint32_t parts;
    char *one = load_and_run(refused[i].file, refused[i].sets, 1, &parts);
    char *two = load_and_run(refused[i].file, refused[i].sets, 2, &parts);
    cr_assert_eq(parts, 1, "%s: one engine", refused[i].file);
    cr_assert_str_eq(two, one);
    g_free(one);
    g_free(two);
  }
  fflush(stderr);
  cr_assert_stderr_eq_str("fabsim: --threads 2: runs on one thread: operation 535 (a flow of rank 7): it waits for "
                          "an operation that another partition reports, and would begin less than a lookahead after "
                          "it (1.000 us)\n");
}

/* A partition per thread needs as many parts that may not be split (a
** host, or an NVLink domain, each): a few hosts give no 200. */
Test(threads, more_threads_than_parts_run_on_one_engine, .init = cr_redirect_stderr) {
  FabScenario *sc = testscen_load_file("tests/scenarios/incast-lossy.yaml", NULL);
  uint32_t parts;
  char *js = run_json(sc, 200, &parts);
  cr_assert_eq(parts, 1);
  g_free(js);
  fab_scenario_free(sc);
  fflush(stderr);
  char buf[256] = {0};
  FILE *f = cr_get_redirected_stderr();
  cr_assert(fread(buf, 1, sizeof buf - 1, f) > 0);
  cr_assert(g_str_has_prefix(buf, "fabsim: --threads 200: runs on one thread: "), "%s", buf);
}

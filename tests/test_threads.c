/* A run spread over threads (FabRunOpts.threads, `fabsim run --threads N`):
** the same JSON, byte for byte, with 1, 2 and 3 partitions, on fabrics
** whose cuts carry losses and go-back-N, selective repeat, SRD, spraying,
** adaptive routing, PFC pauses, DCQCN's CNPs, InfiniBand credits and
** trains, and an all-to-all; a scenario the threads cannot take yet runs
** on one engine with the same results. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include "testscen.h"

typedef struct Variant {
  const char *file;
  const char *sets[10];
  const char *shows; /* a JSON field the variant must make non-zero: what crosses the cut */
} Variant;

#define PFC "fabric.switch.pfc.enabled=true", "fabric.switch.priorities=1", "fabric.switch.pfc.watchdog=0", \
            "fabric.switch.buffer=1MiB", "fabric.switch.pfc.xoff=32KiB", "fabric.switch.pfc.xon=16KiB"

static const Variant variants[] = {
  {"tests/scenarios/leaf-spine-small.yaml", {NULL}, "packet_hops"},
  {"tests/scenarios/leaf-spine-small.yaml", {"fabric.switch.buffer=48KiB", NULL}, "drops"},
  {"tests/scenarios/leaf-spine-small.yaml", {"fabric.switch.buffer=48KiB", "cluster.nic.reliability=selective", NULL},
   "retransmits"},
  {"tests/scenarios/leaf-spine-small.yaml", {PFC, NULL}, "pfc_pause_frames"},
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
};

/* `field`'s value in a JSON summary (a top-level number), or 0. */
static double json_number(const char *js, const char *field) {
  char *key = g_strdup_printf("\"%s\": ", field);
  const char *at = strstr(js, key);
  double v = at ? g_ascii_strtod(at + strlen(key), NULL) : 0;
  g_free(key);
  return v;
}

static char *run_json(const FabScenario *sc, uint32_t threads, uint32_t *parts) {
  FabRunOpts opts = {.threads = threads};
  FabResults res;
  int rc = fab_run(sc, &opts, &res);
  cr_assert_eq(rc, 0, "%u threads: %s", threads, res.failure ? res.failure : "?");
  *parts = res.partitions;
  char *js = testscen_stable_json(&res);
  fab_results_clear(&res);
  return js;
}

Test(threads, every_variant_gives_the_same_json_on_1_2_and_3_threads) {
  for (size_t i = 0; i < G_N_ELEMENTS(variants); i++) {
    const Variant *v = &variants[i];
    FabScenario *sc = testscen_load_file(v->file, v->sets);
    uint32_t parts;
    char *one = run_json(sc, 1, &parts);
    cr_assert_eq(parts, 1);
    cr_assert_gt(json_number(one, v->shows), 0, "variant %zu (%s): %s is 0", i, v->file, v->shows);
    for (uint32_t t = 2; t <= 3; t++) {
      char *js = run_json(sc, t, &parts);
      cr_assert_eq(parts, t, "variant %zu (%s) ran on %u partitions, not %u", i, v->file, parts, t);
      cr_assert_str_eq(js, one, "variant %zu (%s): %u threads differ from one", i, v->file, t);
      g_free(js);
    }
    g_free(one);
    fab_scenario_free(sc);
  }
}

/* What the threads cannot take yet (a collective's executor reacts to every
** flow; queue sampling; the lossless watchdog) runs on one engine. */
Test(threads, a_run_the_threads_cannot_take_runs_on_one_engine, .init = cr_redirect_stderr) {
  static const struct {
    const char *file;
    const char *sets[2];
  } refused[] = {
    {"tests/scenarios/nccl-tests-allreduce.yaml", {NULL}},
    {"tests/scenarios/leaf-spine-small.yaml", {"fabric.switch.pfc.enabled=true", NULL}}, /* the watchdog */
  };
  for (size_t i = 0; i < G_N_ELEMENTS(refused); i++) {
    FabScenario *sc = testscen_load_file(refused[i].file, refused[i].sets);
    uint32_t parts;
    char *one = run_json(sc, 1, &parts);
    char *two = run_json(sc, 2, &parts);
    cr_assert_eq(parts, 1, "%s: one engine", refused[i].file);
    cr_assert_str_eq(two, one);
    g_free(one);
    g_free(two);
    fab_scenario_free(sc);
  }
  fflush(stderr);
  cr_assert_stderr_eq_str("fabsim: --threads 2: runs on one thread: only flows that wait for nothing run over "
                          "threads so far (the executor is not split)\n"
                          "fabsim: --threads 2: runs on one thread: the lossless fabric's watchdog is not split\n");
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

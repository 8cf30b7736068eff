/* libfabsim (tools/libfabsim/fabsim.h): the embedding API against a direct run. */
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "tools/libfabsim/driver.h"
#include "tools/libfabsim/fabsim.h"
#include "tools/libfabsim/json.h"
#include "tools/libfabsim/scenario.h"

static char *scen(const char *file) {
  const char *src = g_getenv("FABSIM_SRC");
  return g_build_filename(src ? src : ".", "scenarios", file, NULL);
}

/* The JSON summary with the wall-clock fields cut out. */
static char *strip_wall(const char *json) {
  static const char *const keys[] = {"\"wall_s\": ", "\"events_per_s\": ", "\"packet_hops_per_s\": "};
  char *s = g_strdup(json);
  for (size_t k = 0; k < G_N_ELEMENTS(keys); k++) {
    char *p = strstr(s, keys[k]);
    cr_assert(p, "no %s in %s", keys[k], json);
    char *q = p + strlen(keys[k]);
    while (*q && *q != ',') q++;
    memmove(p, q, strlen(q) + 1);
  }
  return s;
}

static FabsimRun *run_file(const char *file, const char *set) {
  char *path = scen(file), *err = NULL;
  FabsimScenario *sc = fabsim_load_file(path, &err);
  cr_assert(sc, "load %s: %s", path, err ? err : "?");
  if (set) cr_assert(fabsim_set(sc, set, &err), "set %s: %s", set, err ? err : "?");
  FabsimRun *run = fabsim_run(sc, &err);
  cr_assert(run, "run %s: %s", path, err ? err : "?");
  fabsim_scenario_free(sc);
  g_free(path);
  return run;
}

Test(libfabsim, version) { cr_assert_str_eq(fabsim_version(), "0.1.0"); }

Test(libfabsim, quickstart_matches_direct_run) {
  char *path = scen("quickstart.yaml");
  GError *e = NULL;
  FabScenario *sc = fab_scenario_load(path, NULL, &e);
  cr_assert(sc, "%s", e ? e->message : "?");
  FabRunOpts opts = {0};
  FabResults res;
  cr_assert_eq(fab_run(sc, &opts, &res), 0);
  char *direct = fab_json_summary(&res);

  FabsimRun *run = run_file("quickstart.yaml", NULL);
  cr_assert_eq(fabsim_run_status(run), 0);
  cr_assert_null(fabsim_run_failure(run));
  cr_assert(fabs(fabsim_run_number(run, "sim_time_s") - (double)res.sim_time / 1e12) < 1e-12);
  cr_assert_eq(fabsim_run_number(run, "sim_time_s"), 0.00026356096);
  cr_assert_eq(fabsim_run_number(run, "events"), (double)res.events);
  cr_assert_eq(fabsim_run_number(run, "packet_hops"), (double)res.packet_hops);
  cr_assert_eq(fabsim_run_number(run, "flows.count"), 32);
  cr_assert_eq(fabsim_run_number(run, "flows.completed"), 32);
  cr_assert_eq(fabsim_run_number(run, "flows.bytes"), 33554432);
  cr_assert_eq(fabsim_run_number(run, "drops"), (double)res.drops);
  cr_assert_eq(fabsim_run_number(run, "max_queue_bytes"), (double)res.max_queue_bytes);
  cr_assert_eq(fabsim_run_number(run, "seed"), 1);
  cr_assert_eq(fabsim_run_number(run, "flows.fct_p99_s"), fab_results_fct_percentile(&res, 99));
  /* absent or non-numeric fields */
  cr_assert(isnan(fabsim_run_number(run, "no_such_field")));
  cr_assert(isnan(fabsim_run_number(run, "flows.nope")));
  cr_assert(isnan(fabsim_run_number(run, "scenario")));
  cr_assert(isnan(fabsim_run_number(run, "nvlink_segment_bytes")));
  cr_assert(isnan(fabsim_run_number(run, "collectives.0.time_s")));
  cr_assert(isnan(fabsim_run_number(run, "flows.")));
  cr_assert(isnan(fabsim_run_number(run, "")));

  char *js = fabsim_run_json(run);
  char *a = strip_wall(js), *b = strip_wall(direct);
  cr_assert_str_eq(a, b);
  fabsim_free(js);
  g_free(a);
  g_free(b);
  fabsim_run_free(run);
  g_free(direct);
  fab_results_clear(&res); /* frees res.failure too */
  fab_scenario_free(sc);
  g_free(path);
}

Test(libfabsim, two_runs_identical) {
  char *path = scen("incast.yaml"), *err = NULL;
  FabsimScenario *sc = fabsim_load_file(path, &err);
  cr_assert(sc, "%s", err ? err : "?");
  FabsimRun *r1 = fabsim_run(sc, &err), *r2 = fabsim_run(sc, &err);
  cr_assert(r1 && r2);
  char *j1 = fabsim_run_json(r1), *j2 = fabsim_run_json(r2);
  char *a = strip_wall(j1), *b = strip_wall(j2);
  cr_assert_str_eq(a, b);
  cr_assert_gt(fabsim_run_number(r1, "drops"), 0);
  fabsim_free(j1);
  fabsim_free(j2);
  g_free(a);
  g_free(b);
  fabsim_run_free(r1);
  fabsim_run_free(r2);
  fabsim_scenario_free(sc);
  g_free(path);
}

Test(libfabsim, load_string_and_error_location) {
  char *path = scen("quickstart.yaml"), *text = NULL, *err = NULL;
  cr_assert(g_file_get_contents(path, &text, NULL, NULL));
  FabsimScenario *sc = fabsim_load_string(text, "mine.yaml", &err);
  cr_assert(sc, "%s", err ? err : "?");
  FabsimRun *run = fabsim_run(sc, &err);
  cr_assert(run);
  cr_assert_eq(fabsim_run_number(run, "flows.completed"), 32);
  cr_assert_eq(fabsim_run_number(run, "sim_time_s"), 0.00026356096);
  fabsim_run_free(run);
  fabsim_scenario_free(sc);

  /* a bad key on line 3, column 1 */
  err = NULL;
  sc = fabsim_load_string("name: x\nseed: 1\nbogus_key: 3\n", "mine.yaml", &err);
  cr_assert_null(sc);
  cr_assert(err);
  cr_assert(g_str_has_prefix(err, "mine.yaml:3:1"), "message: %s", err);
  cr_assert_null(strstr(err, "libfabsim-"), "temporary path leaked: %s", err);
  fabsim_free(err);

  /* a YAML syntax error */
  err = NULL;
  sc = fabsim_load_string("name: [x\n", "broken", &err);
  cr_assert_null(sc);
  cr_assert(err && g_str_has_prefix(err, "broken:"), "message: %s", err ? err : "(none)");
  fabsim_free(err);
  g_free(text);
  g_free(path);
}

Test(libfabsim, set_bad_key_keeps_scenario) {
  char *path = scen("quickstart.yaml"), *err = NULL;
  FabsimScenario *sc = fabsim_load_file(path, &err);
  cr_assert(sc);
  cr_assert_eq(fabsim_set(sc, "fabric.switch.no_such_key=3", &err), 0);
  cr_assert(err && strstr(err, "--set:1:"), "message: %s", err ? err : "(none)");
  fabsim_free(err);
  err = NULL;
  cr_assert_eq(fabsim_set(sc, "fabric.link.bandwidth=fast", &err), 0);
  cr_assert(err && strstr(err, "--set:1:"), "message: %s", err ? err : "(none)");
  fabsim_free(err);
  err = NULL;
  /* still usable, and a good override applies */
  cr_assert_eq(fabsim_set(sc, "fabric.topology.spines=4", &err), 1, "%s", err ? err : "?");
  FabsimRun *run = fabsim_run(sc, &err);
  cr_assert(run, "%s", err ? err : "?");
  cr_assert_eq(fabsim_run_status(run), 0);
  char *js = fabsim_run_json(run);
  cr_assert(strstr(js, "4 spines"), "%s", js);
  fabsim_free(js);
  cr_assert_eq(fabsim_run_number(run, "flows.completed"), 32);
  fabsim_run_free(run);
  fabsim_scenario_free(sc);
  g_free(path);
}

Test(libfabsim, flows_accessor) {
  FabsimRun *run = run_file("quickstart.yaml", NULL);
  size_t n = fabsim_run_flows(run);
  cr_assert_eq(n, 32);
  uint64_t total = 0;
  double max_end = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t src, dst;
    uint64_t bytes;
    double start, end;
    cr_assert_eq(fabsim_run_flow(run, i, &src, &dst, &bytes, &start, &end), 1);
    cr_assert_neq(src, dst);
    cr_assert_lt(src, 32);
    cr_assert_lt(dst, 32);
    cr_assert(!isnan(end) && end > start);
    total += bytes;
    if (end > max_end) max_end = end;
  }
  cr_assert_eq(total, 33554432);
  cr_assert(fabs(max_end - fabsim_run_number(run, "sim_time_s")) < 1e-15);
  cr_assert_eq(fabsim_run_flow(run, n, NULL, NULL, NULL, NULL, NULL), 0);
  cr_assert_eq(fabsim_run_collectives(run), 0);
  cr_assert_eq(fabsim_run_collective(run, 0, NULL, NULL, NULL, NULL, NULL, NULL), 0);
  fabsim_run_free(run);
}

Test(libfabsim, collective_accessor) {
  FabsimRun *run = run_file("nvls-allreduce.yaml", "workload.size=1MiB");
  cr_assert_eq(fabsim_run_status(run), 0);
  cr_assert_eq(fabsim_run_collectives(run), 1);
  const char *op, *alg;
  uint64_t bytes;
  uint32_t ranks;
  double t, busbw;
  cr_assert_eq(fabsim_run_collective(run, 0, &op, &alg, &bytes, &ranks, &t, &busbw), 1);
  cr_assert_str_eq(op, "allreduce");
  cr_assert_str_eq(alg, "nvls");
  cr_assert_eq(bytes, 1048576);
  cr_assert_eq(ranks, 8);
  cr_assert(t > 0);
  cr_assert_eq(t, fabsim_run_number(run, "collectives.0.time_s"));
  cr_assert_eq(busbw, fabsim_run_number(run, "collectives.0.busbw_GBps"));
  cr_assert(busbw > 0);
  cr_assert_eq(fabsim_run_number(run, "collectives.0.bytes"), 1048576);
  cr_assert(isnan(fabsim_run_number(run, "collectives.1.time_s")));
  cr_assert_eq(fabsim_run_collective(run, 1, &op, &alg, &bytes, &ranks, &t, &busbw), 0);
  fabsim_run_free(run);
}

Test(libfabsim, failing_run) {
  FabsimRun *run = run_file("pfc-deadlock-ring.yaml", NULL);
  cr_assert_eq(fabsim_run_status(run), 1);
  const char *f = fabsim_run_failure(run);
  cr_assert(f && strstr(f, "deadlock"), "failure: %s", f ? f : "(null)");
  char *js = fabsim_run_json(run);
  cr_assert(strstr(js, "\"status\": \"failed\""));
  fabsim_free(js);
  fabsim_run_free(run);
}

Test(libfabsim, write_hdf5) {
  FabsimRun *run = run_file("quickstart.yaml", NULL);
  char *dir = g_dir_make_tmp("test-libfabsim-XXXXXX", NULL), *err = NULL;
  cr_assert(dir);
  char *h5 = g_build_filename(dir, "out.h5", NULL);
  cr_assert_eq(fabsim_run_write_hdf5(run, h5, &err), 1, "%s", err ? err : "?");
  GStatBuf st;
  cr_assert_eq(g_stat(h5, &st), 0);
  cr_assert_gt(st.st_size, 0);
  char *bad = g_build_filename(h5, "under-a-file.h5", NULL); /* a regular file as directory */
  cr_assert_eq(fabsim_run_write_hdf5(run, bad, &err), 0);
  cr_assert(err);
  fabsim_free(err);
  g_unlink(h5);
  g_rmdir(dir);
  g_free(bad);
  g_free(h5);
  g_free(dir);
  fabsim_run_free(run);
}

Test(libfabsim, bad_file) {
  char *err = NULL;
  cr_assert_null(fabsim_load_file("/nonexistent/x.yaml", &err));
  cr_assert(err);
  fabsim_free(err);
}

/* Two steps of a small PP 2 x DP 2 training job on 4 hosts, run through the
** library; the caller frees the scenario and the run. */
static FabsimRun *run_small_training(FabsimScenario **scp) {
  const char *y = "cluster: {nodes: 4}\n"
                  "fabric: {topology: {kind: single-switch}, link: {bandwidth: 100Gbps}}\n"
                  "workload:\n"
                  "  kind: training\n"
                  "  model: {layers: 2, hidden: 512, seq: 256, micro_batch: 1, global_batch: 8, dtype: bf16}\n"
                  "  parallelism: {pp: 2, dp: 2}\n"
                  "  gpu: {flops: 100TFLOPS, efficiency: 0.5}\n"
                  "  steps: 2\n";
  char *err = NULL;
  FabsimScenario *sc = fabsim_load_string(y, "train", &err);
  cr_assert_not_null(sc, "%s", err ? err : "?");
  FabsimRun *run = fabsim_run(sc, &err);
  cr_assert_not_null(run, "%s", err ? err : "?");
  cr_assert_eq(fabsim_run_status(run), 0);
  *scp = sc;
  return run;
}

/* A training step's report through the library, without parsing text: the
** step time is compute + exposed communication + bubble. */
Test(libfabsim, training_step_by_name) {
  FabsimScenario *sc;
  FabsimRun *run = run_small_training(&sc);
  double step = fabsim_run_number(run, "step.step_time_s"), comp = fabsim_run_number(run, "step.compute_s"),
         exp = fabsim_run_number(run, "step.exposed_comm_s"), bub = fabsim_run_number(run, "step.bubble_s");
  cr_assert(step > 0 && comp > 0 && bub > 0, "step %g, compute %g, bubble %g", step, comp, bub);
  cr_assert_float_eq(comp + exp + bub, step, step * 1e-7); /* JSON keeps 9 digits */
  cr_assert_eq(fabsim_run_number(run, "step.steps"), 2);
  cr_assert_eq(fabsim_run_number(run, "jobs.0.ranks"), 4);
  fabsim_run_free(run);
  fabsim_scenario_free(sc);
}

/* The by_op and by_tag groups of a training step, a job's own step report
** and the step times by index, through fabsim_run_number, each what the
** JSON summary says (to its 9 digits). */
Test(libfabsim, training_step_groups_by_path) {
  FabsimScenario *sc;
  FabsimRun *run = run_small_training(&sc);
  char *js = fabsim_run_json(run);
  FabJsonIndex *ix = fab_json_index_new(js);
  cr_assert_not_null(ix, "%s", js);
  static const char *const paths[] = {
    "step.by_op.allreduce.count", "step.by_op.allreduce.bytes", "step.by_op.allreduce.time_s",
    "step.by_tag.dp.count",       "step.by_tag.dp.time_s",      "step.step_times_s.0",
    "step.step_times_s.1",        "jobs.0.step.step_time_s",    "jobs.0.step.by_op.allreduce.count",
    "jobs.0.time_s",              "step.bubble_fraction",       "flows.fct_p99_s",
  };
  for (size_t i = 0; i < G_N_ELEMENTS(paths); i++) {
    double v = fabsim_run_number(run, paths[i]);
    const char *t = fab_json_index_get(ix, paths[i]);
    cr_assert_not_null(t, "%s is not in the JSON summary: %s", paths[i], js);
    cr_assert(!isnan(v), "%s: NaN, the JSON has %s", paths[i], t);
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    if (strpbrk(t, ".eE")) /* a double: the JSON has 9 significant digits */
      g_ascii_formatd(buf, sizeof buf, "%.9g", v);
    else /* an integer: exactly */
      g_ascii_formatd(buf, sizeof buf, "%.17g", v);
    cr_assert_eq(g_ascii_strtod(buf, NULL), g_ascii_strtod(t, NULL), "%s: %s by number, %s in the JSON", paths[i],
                 buf, t);
  }
  /* 2 steps, each with the dp allreduce of the gradients */
  double n = fabsim_run_number(run, "step.by_op.allreduce.count");
  cr_assert(n >= 2 && n == floor(n), "allreduce count %g", n);
  cr_assert_eq(fabsim_run_number(run, "step.by_tag.dp.count"), n);
  cr_assert_gt(fabsim_run_number(run, "step.by_op.allreduce.time_s"), 0);
  cr_assert_eq(fabsim_run_number(run, "jobs.0.step.step_time_s"), fabsim_run_number(run, "step.step_time_s"));
  cr_assert_float_eq(fabsim_run_number(run, "step.step_times_s.0") + fabsim_run_number(run, "step.step_times_s.1"),
                     2 * fabsim_run_number(run, "step.step_time_s"), 1e-15);
  /* groups and steps that are not there */
  cr_assert(isnan(fabsim_run_number(run, "step.by_op.broadcast.count")));
  cr_assert(isnan(fabsim_run_number(run, "step.by_tag.nope.count")));
  cr_assert(isnan(fabsim_run_number(run, "step.by_op.allreduce")));
  cr_assert(isnan(fabsim_run_number(run, "step.by_op.allreduce.nope")));
  cr_assert(isnan(fabsim_run_number(run, "step.step_times_s.2")));
  cr_assert(isnan(fabsim_run_number(run, "step.job")), "a string");
  cr_assert(isnan(fabsim_run_number(run, "jobs.1.step.step_time_s")));
  fab_json_index_free(ix);
  fabsim_free(js);
  fabsim_run_free(run);
  fabsim_scenario_free(sc);
}

/* A string scenario's include: paths are relative to the current directory;
** errors name the string's name (never a temporary file), or the fragment
** as it was named. */
Test(libfabsim, string_scenario_relative_include) {
  char *dir = g_dir_make_tmp("fabsim-libinc-XXXXXX", NULL);
  cr_assert_not_null(dir);
  char *frag = g_build_filename(dir, "frag.yaml", NULL), *bad = g_build_filename(dir, "bad-frag.yaml", NULL);
  cr_assert(g_file_set_contents(frag,
                                "seed: 7\n"
                                "fabric:\n"
                                "  topology: {kind: single-switch}\n"
                                "  link: {bandwidth: 100Gbps, latency: 1us}\n",
                                -1, NULL));
  cr_assert(g_file_set_contents(bad, "fabric:\n  topology: {kind: single-switch}\n  bogus_key: 1\n", -1, NULL));
  const char *y = "include: frag.yaml\n"
                  "cluster: {nodes: 4}\n"
                  "workload:\n"
                  "  kind: flows\n"
                  "  flows: [{src: 0, dst: 1, size: 64KiB}]\n";
  char *cwd = g_get_current_dir();
  cr_assert_eq(chdir(dir), 0);

  char *err = NULL;
  FabsimScenario *sc = fabsim_load_string(y, "mine.yaml", &err);
  FabsimRun *run = sc ? fabsim_run(sc, &err) : NULL;
  char *err2 = NULL;
  const char *yb = "include: [bad-frag.yaml]\n"
                   "cluster: {nodes: 4}\n"
                   "workload:\n"
                   "  kind: flows\n"
                   "  flows: [{src: 0, dst: 1, size: 64KiB}]\n";
  FabsimScenario *scb = fabsim_load_string(yb, "mine.yaml", &err2);
  cr_assert_eq(chdir(cwd), 0); /* back before any assertion can end the test */

  cr_assert_not_null(sc, "%s", err ? err : "?");
  cr_assert_not_null(run, "%s", err ? err : "?");
  cr_assert_eq(fabsim_run_status(run), 0, "%s", fabsim_run_failure(run));
  cr_assert_eq(fabsim_run_number(run, "seed"), 7, "the fragment's seed applies");
  cr_assert_eq(fabsim_run_number(run, "flows.completed"), 1);
  char *js = fabsim_run_json(run);
  cr_assert(strstr(js, "\"scenario\": \"mine\""), "the default name comes from the string's name: %s", js);
  fabsim_free(js);
  fabsim_run_free(run);
  fabsim_scenario_free(sc);

  /* an error inside the fragment: located in the fragment, as the include named it */
  cr_assert_null(scb);
  cr_assert_not_null(err2);
  cr_assert(g_str_has_prefix(err2, "bad-frag.yaml:3:3: "), "message: %s", err2);
  cr_assert(strstr(err2, "bogus_key"), "message: %s", err2);
  cr_assert_null(strstr(err2, dir), "the temporary directory in: %s", err2);
  cr_assert_null(strstr(err2, "libfabsim-"), "temporary path leaked: %s", err2);
  fabsim_free(err2);

  /* from another directory the fragment is not there: the error is at the include: line of
  ** the string, named by the string's name */
  err = NULL;
  sc = fabsim_load_string(y, "mine.yaml", &err);
  cr_assert_null(sc);
  cr_assert_not_null(err);
  cr_assert(g_str_has_prefix(err, "mine.yaml:1:"), "message: %s", err);
  cr_assert(strstr(err, "frag.yaml"), "message: %s", err);
  cr_assert_null(strstr(err, dir), "the temporary directory in: %s", err);
  cr_assert_null(strstr(err, "libfabsim-"), "temporary path leaked: %s", err);
  fabsim_free(err);

  /* a bad key in the string itself, with an include that loads */
  cr_assert_eq(chdir(dir), 0);
  err = NULL;
  sc = fabsim_load_string("include: frag.yaml\nname: x\nbogus_key: 3\n", "mine.yaml", &err);
  cr_assert_eq(chdir(cwd), 0);
  cr_assert_null(sc);
  cr_assert(err && g_str_has_prefix(err, "mine.yaml:3:1"), "message: %s", err ? err : "(none)");
  cr_assert_null(strstr(err, dir), "the temporary directory in: %s", err);
  fabsim_free(err);

  g_unlink(frag);
  g_unlink(bad);
  g_rmdir(dir);
  g_free(frag);
  g_free(bad);
  g_free(cwd);
  g_free(dir);
}

/* A string scenario's includes are relative to the directory it was loaded
** in, even when it runs after the process changed directory. */
Test(libfabsim, string_includes_resolve_where_loaded) {
  char *dir = g_dir_make_tmp("fabsim-incl-XXXXXX", NULL);
  cr_assert_not_null(dir);
  char *frag = g_build_filename(dir, "frag.yaml", NULL);
  cr_assert(g_file_set_contents(frag, "seed: 9\nfabric:\n  topology: {kind: single-switch}\n  link: {bandwidth: 100Gbps}\n",
                                -1, NULL));
  char *cwd = g_get_current_dir();
  cr_assert_eq(chdir(dir), 0);
  char *err = NULL;
  FabsimScenario *sc = fabsim_load_string("include: frag.yaml\ncluster: {nodes: 2}\nworkload: {kind: flows, flows: "
                                          "[{src: 0, dst: 1, size: 4KiB}]}\n", "s.yaml", &err);
  cr_assert_eq(chdir(cwd), 0);
  cr_assert_not_null(sc, "%s", err ? err : "?");
  FabsimRun *run = fabsim_run(sc, &err); /* elsewhere now */
  cr_assert_not_null(run, "%s", err ? err : "?");
  cr_assert_eq(fabsim_run_status(run), 0);
  cr_assert_eq(fabsim_run_number(run, "seed"), 9);
  cr_assert_eq(fabsim_set(sc, "seed=3", &err), 1, "%s", err ? err : "?");
  fabsim_run_free(run);
  fabsim_scenario_free(sc);
  g_unlink(frag);
  g_rmdir(dir);
  g_free(frag);
  g_free(dir);
  g_free(cwd);
}

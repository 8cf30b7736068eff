/* fabsim plot: every picture kind is made, non-empty, from a small run;
** skipped with a message when gnuplot is missing. The data files behind the
** pictures are checked against golden files in tests/data/plot (the series a
** --layer chooses, the nccl-tests timeline's bands); FABSIM_UPDATE_GOLDEN=1
** rewrites them from what plot writes now (then read the diff). Sweep plots
** are checked on sweep.h5 files written here: numeric x, log or linear,
** --metric. */
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/wait.h>

static const char *fabsim_bin(void) {
  const char *b = getenv("FABSIM");
  return b ? b : "build/fabsim";
}

static int run(const char *const *argv, char **err) {
  int status = 0;
  GError *e = NULL;
  gboolean ok = g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, err, &status, &e);
  cr_assert(ok, "cannot run %s: %s", argv[0], e ? e->message : "?");
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static gboolean is_png(const char *path) {
  char *data = NULL;
  gsize len = 0;
  gboolean ok = g_file_get_contents(path, &data, &len, NULL) && len > 1000 && !memcmp(data, "\x89PNG\r\n\x1a\n", 8);
  g_free(data);
  return ok;
}

Test(plot, queue_and_link_pictures_from_a_run) {
  char *gp = g_find_program_in_path("gnuplot");
  if (!gp) cr_skip_test("gnuplot is not installed: fabsim plot cannot draw");
  g_free(gp);
  char *dir = g_dir_make_tmp("fabsim-plot-XXXXXX", NULL);
  char *h5 = g_build_filename(dir, "run.h5", NULL), *out = g_build_filename(dir, "pics", NULL);
  char *scen = g_build_filename(getenv("FABSIM_SRC") ? getenv("FABSIM_SRC") : ".", "scenarios", "incast-pfc.yaml", NULL);
  const char *a[] = {fabsim_bin(), "run", scen, "--hdf5", h5, NULL};
  char *err = NULL;
  cr_assert_eq(run(a, &err), 0, "%s", err);
  g_free(err);
  const char *b[] = {fabsim_bin(), "plot", h5, "--out", out, NULL};
  cr_assert_eq(run(b, &err), 0, "%s", err);
  g_free(err);
  const char *pics[] = {"queues.png", "links.png"};
  for (int i = 0; i < 2; i++) {
    char *p = g_build_filename(out, pics[i], NULL);
    cr_assert(is_png(p), "%s is a non-empty PNG", p);
    char *svg = g_strdup(p);
    strcpy(svg + strlen(svg) - 3, "svg");
    cr_assert(g_file_test(svg, G_FILE_TEST_IS_REGULAR), "%s", svg);
    g_unlink(p);
    g_unlink(svg);
    g_free(p);
    g_free(svg);
  }
  char *cmd = g_strdup_printf("rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
  g_free(cmd);
  g_free(h5);
  g_free(out);
  g_free(scen);
  g_free(dir);
}

Test(plot, bad_input_is_exit_2) {
  char *err = NULL;
  const char *a[] = {fabsim_bin(), "plot", "/nonexistent/run.h5", NULL};
  int rc = run(a, &err);
  char *gp = g_find_program_in_path("gnuplot");
  cr_assert_eq(rc, 2);
  cr_assert(strstr(err, gp ? "no such file" : "gnuplot"), "%s", err);
  g_free(err);
  g_free(gp);
  const char *b[] = {fabsim_bin(), "plot", NULL};
  cr_assert_eq(run(b, &err), 2);
  cr_assert(strstr(err, "needs a RESULT.h5"), "%s", err);
  /* the one parser's usage error: "fabsim plot: message", a blank line, the usage */
  cr_assert(g_str_has_prefix(err, "fabsim plot: plot needs a RESULT.h5 file\n\nusage: fabsim plot RESULT.h5"), "%s",
            err);
  g_free(err);
  const char *b2[] = {fabsim_bin(), "plot", "a.h5", "b.h5", NULL};
  cr_assert_eq(run(b2, &err), 2);
  cr_assert(g_str_has_prefix(err, "fabsim plot: more than one file given ('a.h5' and 'b.h5')\n\nusage: fabsim plot "),
            "%s", err);
  g_free(err);
  const char *b3[] = {fabsim_bin(), "plot", "a.h5", "--out", NULL};
  cr_assert_eq(run(b3, &err), 2);
  cr_assert(g_str_has_prefix(err, "fabsim plot: --out needs a directory\n\nusage: fabsim plot "), "%s", err);
  g_free(err);
  const char *c[] = {fabsim_bin(), "plot", "--help", NULL};
  cr_assert_eq(run(c, &err), 0);
  g_free(err);
}

Test(plot, sweep_metrics_against_the_swept_values) {
  char *gp = g_find_program_in_path("gnuplot");
  if (!gp) cr_skip_test("gnuplot is not installed: fabsim plot cannot draw");
  g_free(gp);
  char *dir = g_dir_make_tmp("fabsim-plot-XXXXXX", NULL);
  char *scen = g_build_filename(getenv("FABSIM_SRC") ? getenv("FABSIM_SRC") : ".", "scenarios", "quickstart.yaml", NULL);
  char *sweep = g_build_filename(dir, "sw", NULL), *h5 = g_build_filename(sweep, "sweep.h5", NULL);
  const char *a[] = {fabsim_bin(), "sweep", scen, "--set", "workload.size=64KiB,128KiB", "--set",
                     "fabric.topology.spines=8,2", "--out", sweep, "--jobs", "2", NULL};
  char *err = NULL;
  cr_assert_eq(run(a, &err), 0, "%s", err);
  g_free(err);
  const char *b[] = {fabsim_bin(), "plot", h5, NULL};
  cr_assert_eq(run(b, &err), 0, "%s", err);
  /* nothing is dropped in this lossless-enough sweep: no flat drops picture, and it says so */
  cr_assert(strstr(err, "0 at every point, not drawn: drops"), "%s", err);
  g_free(err);
  const char *m[] = {"sim_time_s", "fct_p99_s", "max_queue_bytes"};
  for (int i = 0; i < 3; i++) {
    char *p = g_strdup_printf("%s/sweep-plots/sweep-%s.png", sweep, m[i]);
    cr_assert(is_png(p), "%s", p);
    g_free(p);
  }
  char *drops = g_strdup_printf("%s/sweep-plots/sweep-drops.png", sweep);
  cr_assert_not(g_file_test(drops, G_FILE_TEST_EXISTS), "%s drawn", drops);
  g_free(drops);
  /* a metric null at every point (no training here) cannot be drawn: exit 2, nothing written */
  char *out2 = g_build_filename(dir, "nulls", NULL);
  const char *c[] = {fabsim_bin(), "plot", h5, "--metric", "step_time_s", "--out", out2, NULL};
  cr_assert_eq(run(c, &err), 2, "%s", err);
  cr_assert(strstr(err, "--metric step_time_s: no point of ") && strstr(err, "has a value for it (null in every run: "
                                                                            "not a training run)"), "%s", err);
  g_free(err);
  cr_assert_not(g_file_test(out2, G_FILE_TEST_EXISTS), "%s written", out2);
  g_free(out2);
  char *cmd = g_strdup_printf("rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
  g_free(cmd);
  g_free(scen);
  g_free(sweep);
  g_free(h5);
  g_free(dir);
}

Test(plot, an_unwritable_output_directory_is_exit_2) {
  char *gp = g_find_program_in_path("gnuplot");
  if (!gp) cr_skip_test("gnuplot is not installed");
  g_free(gp);
  char *dir = g_dir_make_tmp("fabsim-plot-XXXXXX", NULL);
  char *h5 = g_build_filename(dir, "run.h5", NULL);
  char *scen = g_build_filename(getenv("FABSIM_SRC") ? getenv("FABSIM_SRC") : ".", "scenarios", "incast.yaml", NULL);
  const char *a[] = {fabsim_bin(), "run", scen, "--hdf5", h5, NULL};
  char *err = NULL;
  cr_assert_eq(run(a, &err), 0, "%s", err);
  g_free(err);
  const char *b[] = {fabsim_bin(), "plot", h5, "--out", "/proc/self", NULL};
  cr_assert_eq(run(b, &err), 2);
  cr_assert(strstr(err, "cannot write"), "%s", err);
  g_free(err);
  char *cmd = g_strdup_printf("rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
  g_free(cmd);
  g_free(h5);
  g_free(scen);
  g_free(dir);
}

/* ---- busbw against size and the per-rank timeline, from a file written here
** with the layouts tools/libfabsim/h5out.c writes (/collectives, /timeline) ----------- */

#include <hdf5.h>
#include <math.h>

typedef struct CollOut {
  char op[16], algorithm[16], protocol[16], tag[16];
  uint64_t bytes, count;
  uint32_t dtype_bytes, ranks;
  int32_t root;
  uint32_t channels, job, step;
  double start_s, end_s, time_s, algbw_GBps, busbw_GBps;
} CollOut;

typedef struct SpanOut {
  uint32_t rank, job;
  uint8_t kind, phase;
  int32_t coll;
  uint32_t step;
  double start_s, end_s;
} SpanOut;

static void write_table(hid_t f, const char *name, hid_t t, size_t n, const void *rows) {
  hsize_t dims[1] = {n};
  hid_t sp = H5Screate_simple(1, dims, NULL);
  hid_t d = H5Dcreate2(f, name, t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  cr_assert_geq(d, 0);
  if (n) cr_assert_geq(H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows), 0);
  H5Dclose(d);
  H5Sclose(sp);
}

static CollOut coll_out(const char *op, const char *tag, uint64_t bytes, uint32_t ranks, double start, double t,
                        double factor) {
  CollOut c;
  memset(&c, 0, sizeof c); /* the padding too: it is written to the file */
  c.bytes = bytes, c.count = bytes / 4, c.dtype_bytes = 4, c.ranks = ranks, c.root = -1, c.channels = 8;
  c.start_s = start, c.end_s = start + t, c.time_s = t;
  g_strlcpy(c.op, op, sizeof c.op);
  g_strlcpy(c.algorithm, "ring", sizeof c.algorithm);
  g_strlcpy(c.protocol, bytes < 65536 ? "ll" : "simple", sizeof c.protocol);
  g_strlcpy(c.tag, tag, sizeof c.tag);
  c.algbw_GBps = bytes / t / 1e9;
  c.busbw_GBps = c.algbw_GBps * factor;
  return c;
}

/* Write /collectives and /timeline (CollOut and SpanOut rows) as a run's file does. */
static void write_event_tables(const char *path, GArray *colls, GArray *spans) {
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  cr_assert_geq(f, 0);
  hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, 16);
  H5Tset_strpad(str, H5T_STR_NULLPAD);
  hid_t ct = H5Tcreate(H5T_COMPOUND, sizeof(CollOut));
  H5Tinsert(ct, "op", HOFFSET(CollOut, op), str);
  H5Tinsert(ct, "algorithm", HOFFSET(CollOut, algorithm), str);
  H5Tinsert(ct, "protocol", HOFFSET(CollOut, protocol), str);
  H5Tinsert(ct, "tag", HOFFSET(CollOut, tag), str);
  H5Tinsert(ct, "bytes", HOFFSET(CollOut, bytes), H5T_NATIVE_UINT64);
  H5Tinsert(ct, "count", HOFFSET(CollOut, count), H5T_NATIVE_UINT64);
  H5Tinsert(ct, "dtype_bytes", HOFFSET(CollOut, dtype_bytes), H5T_NATIVE_UINT32);
  H5Tinsert(ct, "ranks", HOFFSET(CollOut, ranks), H5T_NATIVE_UINT32);
  H5Tinsert(ct, "root", HOFFSET(CollOut, root), H5T_NATIVE_INT32);
  H5Tinsert(ct, "channels", HOFFSET(CollOut, channels), H5T_NATIVE_UINT32);
  H5Tinsert(ct, "job", HOFFSET(CollOut, job), H5T_NATIVE_UINT32);
  H5Tinsert(ct, "step", HOFFSET(CollOut, step), H5T_NATIVE_UINT32);
  H5Tinsert(ct, "start_s", HOFFSET(CollOut, start_s), H5T_NATIVE_DOUBLE);
  H5Tinsert(ct, "end_s", HOFFSET(CollOut, end_s), H5T_NATIVE_DOUBLE);
  H5Tinsert(ct, "time_s", HOFFSET(CollOut, time_s), H5T_NATIVE_DOUBLE);
  H5Tinsert(ct, "algbw_GBps", HOFFSET(CollOut, algbw_GBps), H5T_NATIVE_DOUBLE);
  H5Tinsert(ct, "busbw_GBps", HOFFSET(CollOut, busbw_GBps), H5T_NATIVE_DOUBLE);
  hid_t st = H5Tcreate(H5T_COMPOUND, sizeof(SpanOut));
  H5Tinsert(st, "rank", HOFFSET(SpanOut, rank), H5T_NATIVE_UINT32);
  H5Tinsert(st, "job", HOFFSET(SpanOut, job), H5T_NATIVE_UINT32);
  H5Tinsert(st, "kind", HOFFSET(SpanOut, kind), H5T_NATIVE_UINT8);
  H5Tinsert(st, "phase", HOFFSET(SpanOut, phase), H5T_NATIVE_UINT8);
  H5Tinsert(st, "coll", HOFFSET(SpanOut, coll), H5T_NATIVE_INT32);
  H5Tinsert(st, "step", HOFFSET(SpanOut, step), H5T_NATIVE_UINT32);
  H5Tinsert(st, "start_s", HOFFSET(SpanOut, start_s), H5T_NATIVE_DOUBLE);
  H5Tinsert(st, "end_s", HOFFSET(SpanOut, end_s), H5T_NATIVE_DOUBLE);
  write_table(f, "/collectives", ct, colls->len, colls->data);
  write_table(f, "/timeline", st, spans->len, spans->data);
  H5Tclose(st);
  H5Tclose(ct);
  H5Tclose(str);
  H5Fclose(f);
}

/* nccl-tests sweeps of allreduce and allgather on 8 ranks (8 B to 64 MiB,
** two iterations each), then two training steps on 8 ranks: forward,
** backward with the dp allreduce overlapping it, a pipeline send, the
** optimizer. `with_events` FALSE writes the tables empty. */
static void write_events_h5(const char *path, gboolean with_events) {
  GArray *colls = g_array_new(FALSE, TRUE, sizeof(CollOut)), *spans = g_array_new(FALSE, TRUE, sizeof(SpanOut));
  double t = 0;
  if (with_events) {
    for (int op = 0; op < 2; op++)
      for (uint64_t b = 8; b <= 64u << 20; b *= 2)
        for (int it = 0; it < 2; it++) { /* latency + size at 150 (allreduce) / 170 (allgather) GB/s of busbw */
          double f = op ? 7.0 / 8 : 2 * 7.0 / 8, d = (op ? 14e-6 : 22e-6) + b * f / (op ? 170e9 : 150e9);
          CollOut c = coll_out(op ? "allgather" : "allreduce", "nccl-tests", b, 8, t, d, f);
          g_array_append_val(colls, c);
          t += d + 2e-6;
        }
    t += 50e-6;
    for (uint32_t step = 0; step < 2; step++) {
      double s0 = t;
      CollOut ar = coll_out("allreduce", "dp", 256u << 20, 8, s0 + 1.6e-3, 2.1e-3, 1.75);
      ar.step = step;
      g_array_append_val(colls, ar);
      CollOut ag = coll_out("allgather", "tp", 16u << 20, 8, s0 + 0.2e-3, 0.15e-3, 0.875);
      ag.step = step;
      g_array_append_val(colls, ag);
      for (uint32_t r = 0; r < 8; r++) {
        double skew = r * 0.02e-3;
        SpanOut sp[] = {
          {r, 0, 0, 0, -1, step, s0 + skew, s0 + 1.2e-3 + skew},                            /* forward */
          {r, 0, 1, 0, (int32_t)colls->len - 1, step, s0 + 0.2e-3, s0 + 0.35e-3},           /* tp allgather */
          {r, 0, 2, 0, -1, step, s0 + 1.2e-3 + skew, s0 + 1.3e-3 + skew},                   /* pipeline send */
          {r, 0, 0, 1, -1, step, s0 + 1.3e-3 + skew, s0 + 3.5e-3 + skew},                   /* backward */
          {r, 0, 1, 0, (int32_t)colls->len - 2, step, s0 + 1.6e-3, s0 + 3.7e-3},            /* dp allreduce */
          {r, 0, 0, 2, -1, step, s0 + 3.7e-3, s0 + 4.0e-3},                                 /* optimizer */
        };
        for (size_t k = 0; k < G_N_ELEMENTS(sp); k++) { /* without the padding's stack garbage */
          SpanOut z;
          memset(&z, 0, sizeof z);
          z.rank = sp[k].rank, z.job = sp[k].job, z.kind = sp[k].kind, z.phase = sp[k].phase;
          z.coll = sp[k].coll, z.step = sp[k].step, z.start_s = sp[k].start_s, z.end_s = sp[k].end_s;
          g_array_append_val(spans, z);
        }
      }
      t = s0 + 4.1e-3;
    }
  }
  write_event_tables(path, colls, spans);
  g_array_free(colls, TRUE);
  g_array_free(spans, TRUE);
}

Test(plot, busbw_and_timeline_from_collectives) {
  char *gp = g_find_program_in_path("gnuplot");
  if (!gp) cr_skip_test("gnuplot is not installed: fabsim plot cannot draw");
  g_free(gp);
  char *dir = g_dir_make_tmp("fabsim-plot-XXXXXX", NULL);
  char *h5 = g_build_filename(dir, "train.h5", NULL), *out = g_build_filename(dir, "pics", NULL);
  write_events_h5(h5, TRUE);
  const char *a[] = {fabsim_bin(), "plot", h5, "--out", out, NULL};
  char *err = NULL;
  cr_assert_eq(run(a, &err), 0, "%s", err);
  cr_assert(strstr(err, "no queue time series"), "the queue pictures are skipped, and it says so: %s", err);
  g_free(err);
  const char *pics[] = {"busbw.png", "busbw.svg", "timeline.png", "timeline.svg"};
  for (int i = 0; i < 4; i++) {
    char *p = g_build_filename(out, pics[i], NULL);
    if (i % 2 == 0) cr_assert(is_png(p), "%s is a non-empty PNG", p);
    else cr_assert(g_file_test(p, G_FILE_TEST_IS_REGULAR), "%s", p);
    g_free(p);
  }
  char *queues = g_build_filename(out, "queues.png", NULL);
  cr_assert_not(g_file_test(queues, G_FILE_TEST_EXISTS), "no queue picture without queue data");
  g_free(queues);
  /* the data behind busbw.png: a block per op, the iterations averaged into one row per size */
  char *dat = g_build_filename(out, "busbw.dat", NULL), *text = NULL;
  cr_assert(g_file_get_contents(dat, &text, NULL, NULL));
  cr_assert(strstr(text, "# allreduce, 8 ranks, job 0"), "%s", text);
  cr_assert(strstr(text, "# allgather, 8 ranks, job 0"), "%s", text);
  cr_assert(strstr(text, "\n67108864 "), "%s", text);
  cr_assert_null(strstr(text, "268435456"), "the dp allreduce is not an nccl-tests row");
  g_free(text);
  g_free(dat);
  if (getenv("FABSIM_KEEP_PLOTS")) cr_log_warn("pictures kept in %s", out);
  else {
    char *cmd = g_strdup_printf("rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
    g_free(cmd);
  }
  g_free(h5);
  g_free(out);
  g_free(dir);
}

Test(plot, empty_collectives_and_timeline_are_skipped) {
  char *gp = g_find_program_in_path("gnuplot");
  if (!gp) cr_skip_test("gnuplot is not installed: fabsim plot cannot draw");
  g_free(gp);
  char *dir = g_dir_make_tmp("fabsim-plot-XXXXXX", NULL);
  char *h5 = g_build_filename(dir, "empty.h5", NULL), *out = g_build_filename(dir, "pics", NULL);
  write_events_h5(h5, FALSE);
  const char *a[] = {fabsim_bin(), "plot", h5, "--out", out, NULL};
  char *err = NULL;
  cr_assert_eq(run(a, &err), 2, "nothing to draw is bad input: %s", err);
  cr_assert(strstr(err, "no queue time series"), "%s", err);
  g_free(err);
  char *busbw = g_build_filename(out, "busbw.png", NULL);
  cr_assert_not(g_file_test(busbw, G_FILE_TEST_EXISTS));
  g_free(busbw);
  char *cmd = g_strdup_printf("rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
  g_free(cmd);
  g_free(h5);
  g_free(out);
  g_free(dir);
}

/* Needs the nccl-tests workload: a real run's /collectives and /timeline. */
Test(plot, busbw_and_timeline_from_an_nccl_tests_run, .timeout = 240) {
  char *gp = g_find_program_in_path("gnuplot");
  if (!gp) cr_skip_test("gnuplot is not installed: fabsim plot cannot draw");
  g_free(gp);
  char *dir = g_dir_make_tmp("fabsim-plot-XXXXXX", NULL);
  char *h5 = g_build_filename(dir, "nccl.h5", NULL), *out = g_build_filename(dir, "pics", NULL);
  char *scen = g_build_filename(getenv("FABSIM_SRC") ? getenv("FABSIM_SRC") : ".", "tests", "data",
                                "nccl-tests-8hosts.yaml", NULL);
  const char *a[] = {fabsim_bin(), "run", scen, "--hdf5", h5, NULL};
  char *err = NULL;
  cr_assert_eq(run(a, &err), 0, "fabsim run %s (the nccl-tests workload): %s", scen, err);
  g_free(err);
  const char *b[] = {fabsim_bin(), "plot", h5, "--out", out, NULL};
  cr_assert_eq(run(b, &err), 0, "%s", err);
  g_free(err);
  const char *pics[] = {"busbw.png", "timeline.png"};
  for (int i = 0; i < 2; i++) {
    char *p = g_build_filename(out, pics[i], NULL);
    cr_assert(is_png(p), "%s is a non-empty PNG", p);
    g_free(p);
  }
  char *cmd = g_strdup_printf("rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
  g_free(cmd);
  g_free(scen);
  g_free(h5);
  g_free(out);
  g_free(dir);
}

/* ---- golden data: what a picture's .dat holds ------------------------------------- */

static char *src_path(const char *a, const char *b, const char *c) {
  return g_build_filename(getenv("FABSIM_SRC") ? getenv("FABSIM_SRC") : ".", a, b, c, NULL);
}

static char *slurp(const char *path) {
  char *t = NULL;
  return g_file_get_contents(path, &t, NULL, NULL) ? t : NULL;
}

/* `got` must equal tests/data/plot/NAME, or (FABSIM_UPDATE_GOLDEN set) becomes it. */
static void golden(const char *name, const char *got) {
  char *path = src_path("tests", "data", "plot");
  char *file = g_build_filename(path, name, NULL);
  if (getenv("FABSIM_UPDATE_GOLDEN") && *getenv("FABSIM_UPDATE_GOLDEN")) {
    cr_assert(g_file_set_contents(file, got, -1, NULL), "cannot write %s", file);
    cr_log_warn("rewrote %s", file);
  } else {
    char *want = slurp(file);
    cr_assert_not_null(want, "no golden file %s (FABSIM_UPDATE_GOLDEN=1 makes it)", file);
    cr_assert_str_eq(got, want, "%s differs from what plot wrote:\n%s", file, got);
    g_free(want);
  }
  g_free(file);
  g_free(path);
}

static void rm_rf(const char *dir) {
  char *cmd = g_strdup_printf("rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
  g_free(cmd);
}

/* The series of a run's pictures in DIR: queues.dat's header (its columns)
** and links.dat's rows, one per line. */
static char *series_in(const char *dir) {
  GString *s = g_string_new(NULL);
  char *q = g_build_filename(dir, "queues.dat", NULL), *l = g_build_filename(dir, "links.dat", NULL);
  char *qt = slurp(q), *lt = slurp(l);
  if (qt) g_string_append_printf(s, "queues.dat: %.*s\n", (int)(strchr(qt, '\n') - qt - 2), qt + 2);
  else g_string_append(s, "queues.dat: none\n");
  char **lines = g_strsplit(lt ? lt : "", "\n", -1);
  for (char **p = lines; *p; p++)
    if (g_str_has_prefix(*p, "# row ")) g_string_append_printf(s, "links.dat: %s\n", *p + 2);
  if (!lt) g_string_append(s, "links.dat: none\n");
  g_strfreev(lines);
  g_free(qt), g_free(lt), g_free(q), g_free(l);
  return g_string_free(s, FALSE);
}

/* A GPU run's queues and links pictures show the layer asked for (fabric by
** default: switch-switch and NIC-switch links), each series named by both
** ends. Before layers, the NVLink and PCIe links always won the busiest-32
** and the names said only one end. */
Test(plot, layers_choose_the_series_named_by_both_ends, .timeout = 120) {
  char *gp = g_find_program_in_path("gnuplot");
  if (!gp) cr_skip_test("gnuplot is not installed: fabsim plot cannot draw");
  g_free(gp);
  char *dir = g_dir_make_tmp("fabsim-plot-XXXXXX", NULL);
  char *h5 = g_build_filename(dir, "gpu.h5", NULL), *scen = src_path("tests", "data", "plot/gpu-layers.yaml");
  const char *a[] = {fabsim_bin(), "run", scen, "--hdf5", h5, NULL};
  char *err = NULL;
  cr_assert_eq(run(a, &err), 0, "%s", err);
  g_free(err);
  const char *layers[] = {NULL, "fabric", "nic", "pcie", "nvlink", "all"};
  for (int i = 0; i < 6; i++) {
    char *out = g_build_filename(dir, layers[i] ? layers[i] : "default", NULL);
    const char *b[] = {fabsim_bin(), "plot", h5, "--out", out, layers[i] ? "--layer" : NULL, layers[i], NULL};
    cr_assert_eq(run(b, &err), 0, "--layer %s: %s", layers[i] ? layers[i] : "(none)", err);
    if (!layers[i])
      cr_assert(strstr(err, "--layer pcie, nvlink or all for the GPUs' links (nic: the NIC-switch links alone)"), "%s",
                err);
    g_free(err);
    char *got = series_in(out), *name = g_strdup_printf("gpu-layers-%s.txt", layers[i] ? layers[i] : "default");
    golden(name, got);
    if (!layers[i] || !strcmp(layers[i], "fabric")) /* the network only, every series named by both ends */
      cr_assert(!strstr(got, "nvs") && !strstr(got, "gpu") && strstr(got, "leaf0:p1 -> spine0 (fabric)") &&
                strstr(got, "pcie0.0:p2 -> leaf0 (nic)"), "%s", got);
    g_free(name);
    g_free(got);
    g_free(out);
  }
  const char *c[] = {fabsim_bin(), "plot", h5, "--layer", "nvswitch", NULL};
  cr_assert_eq(run(c, &err), 2);
  cr_assert(strstr(err, "'nvswitch' is not a layer (fabric, nic, pcie, nvlink, all)"), "%s", err);
  g_free(err);
  rm_rf(dir);
  g_free(h5);
  g_free(scen);
  g_free(dir);
}

/* An nccl-tests run's timeline: no compute lane or title (the run has none),
** one lane per rank, and a band per message size, labelled when wide enough.
** Written here: allreduce on 4 ranks, 8 B once (5 us), 1 KiB, 1 MiB and
** 64 MiB twice each, 2 us apart; rank r enters 1 us after rank r-1 and
** leaves 3 - r us before the end. By hand, the bands: 8 B 0-5 us, 1 KiB
** 7-33, 1 MiB 35-137, 64 MiB 139-1141; 1.5% of the 1141 us shown is 17 us,
** so only 8 B goes unlabelled. */
static void write_nccl_h5(const char *path) {
  GArray *colls = g_array_new(FALSE, TRUE, sizeof(CollOut)), *spans = g_array_new(FALSE, TRUE, sizeof(SpanOut));
  static const struct { uint64_t bytes; int iters, us; } sizes[] = {
    {8, 1, 5}, {1024, 2, 12}, {1 << 20, 2, 50}, {64u << 20, 2, 500},
  };
  int t = 0; /* us */
  for (size_t k = 0; k < G_N_ELEMENTS(sizes); k++)
    for (int it = 0; it < sizes[k].iters; it++) {
      CollOut c = coll_out("allreduce", "nccl-tests", sizes[k].bytes, 4, t * 1e-6, sizes[k].us * 1e-6, 1.5);
      g_array_append_val(colls, c);
      for (uint32_t r = 0; r < 4; r++) {
        SpanOut z;
        memset(&z, 0, sizeof z);
        z.rank = r, z.kind = 1, z.coll = (int32_t)colls->len - 1;
        z.start_s = (t + r) * 1e-6, z.end_s = (t + sizes[k].us - (3 - (int)r)) * 1e-6;
        g_array_append_val(spans, z);
      }
      t += sizes[k].us + 2;
    }
  write_event_tables(path, colls, spans);
  g_array_free(colls, TRUE);
  g_array_free(spans, TRUE);
}

Test(plot, nccl_tests_timeline_has_size_bands_and_no_compute_lane) {
  char *gp = g_find_program_in_path("gnuplot");
  if (!gp) cr_skip_test("gnuplot is not installed: fabsim plot cannot draw");
  g_free(gp);
  char *dir = g_dir_make_tmp("fabsim-plot-XXXXXX", NULL);
  char *h5 = g_build_filename(dir, "nccl.h5", NULL), *out = g_build_filename(dir, "pics", NULL);
  write_nccl_h5(h5);
  const char *a[] = {fabsim_bin(), "plot", h5, "--out", out, NULL};
  char *err = NULL;
  cr_assert_eq(run(a, &err), 0, "%s", err);
  g_free(err);
  char *bands = g_build_filename(out, "timeline-bands.dat", NULL), *dat = g_build_filename(out, "timeline.dat", NULL);
  char *gpf = g_build_filename(out, "timeline.gp", NULL);
  char *b = slurp(bands), *d = slurp(dat), *g = slurp(gpf);
  cr_assert(b && d && g, "no timeline-bands.dat, timeline.dat or timeline.gp in %s", out);
  golden("nccl-timeline-bands.dat", b);
  golden("nccl-timeline.dat", d); /* one block, every bar centred on its rank's row, 0.3 high each way */
  cr_assert_null(strstr(g, "compute"), "no compute in the title or key:\n%s", g);
  cr_assert(strstr(g, "set title \"Per-rank timeline: allreduce (nccl-tests); a band per message size (narrow ones "
                      "unlabelled)\""), "%s", g);
  cr_assert(strstr(g, "set x2tics (\"1 KiB\" 20, \"1 MiB\" 86, \"64 MiB\" 640) rotate by 90"), "%s", g);
  cr_assert(strstr(g, "set object 4 rect from 139, graph 0 to 1141, graph 1 behind"), "%s", g);
  g_free(b), g_free(d), g_free(g);
  g_free(bands), g_free(dat), g_free(gpf);
  rm_rf(dir);
  g_free(h5);
  g_free(out);
  g_free(dir);
}

/* ---- sweep plots, from sweep.h5 files written here ------------------------------- */

typedef struct SweepRow {
  char key[64];
  uint32_t point, status;
  int32_t exit;
  double sim_time_s, drops, pfc_pause_frames, pfc_paused_s, ecn_marks, wall_s;
} SweepRow;

/* A sweep of `key` over n values (in the order given), as fabsim sweep writes
** sweep.h5: point i has sim_time_s = i + 1 ms, no drops, 100 x (i + 1) PAUSE
** frames, (i + 1) us paused and no ECN marks. */
static void write_sweep_h5(const char *path, const char *key, const char *const *values, int n) {
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  cr_assert_geq(f, 0);
  hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, 64);
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(SweepRow));
  H5Tinsert(t, key, HOFFSET(SweepRow, key), str);
  H5Tinsert(t, "point", HOFFSET(SweepRow, point), H5T_NATIVE_UINT32);
  H5Tinsert(t, "status", HOFFSET(SweepRow, status), H5T_NATIVE_UINT32);
  H5Tinsert(t, "exit", HOFFSET(SweepRow, exit), H5T_NATIVE_INT32);
  H5Tinsert(t, "sim_time_s", HOFFSET(SweepRow, sim_time_s), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "drops", HOFFSET(SweepRow, drops), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "pfc_pause_frames", HOFFSET(SweepRow, pfc_pause_frames), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "pfc_paused_s", HOFFSET(SweepRow, pfc_paused_s), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "ecn_marks", HOFFSET(SweepRow, ecn_marks), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "wall_s", HOFFSET(SweepRow, wall_s), H5T_NATIVE_DOUBLE);
  SweepRow *rows = g_new0(SweepRow, n);
  for (int i = 0; i < n; i++) {
    g_strlcpy(rows[i].key, values[i], sizeof rows[i].key);
    rows[i].point = (uint32_t)i;
    rows[i].sim_time_s = (i + 1) * 1e-3;
    rows[i].pfc_pause_frames = 100.0 * (i + 1);
    rows[i].pfc_paused_s = (i + 1) * 1e-6;
    rows[i].wall_s = 0.5;
  }
  write_table(f, "/sweep", t, (size_t)n, rows);
  g_free(rows);
  H5Tclose(t);
  H5Tclose(str);
  H5Fclose(f);
}

/* Plot a sweep written with write_sweep_h5 into DIR/pics; the exit status, stderr in *err. */
static int plot_sweep(const char *dir, const char *key, const char *const *values, int n, const char *const *extra,
                      char **err) {
  char *h5 = g_build_filename(dir, "sweep.h5", NULL), *out = g_build_filename(dir, "pics", NULL);
  write_sweep_h5(h5, key, values, n);
  GPtrArray *av = g_ptr_array_new();
  g_ptr_array_add(av, (gpointer)fabsim_bin());
  g_ptr_array_add(av, "plot");
  g_ptr_array_add(av, h5);
  g_ptr_array_add(av, "--out");
  g_ptr_array_add(av, out);
  for (int i = 0; extra && extra[i]; i++) g_ptr_array_add(av, (gpointer)extra[i]);
  g_ptr_array_add(av, NULL);
  int rc = run((const char *const *)av->pdata, err);
  g_ptr_array_free(av, TRUE);
  g_free(h5);
  g_free(out);
  return rc;
}

static char *pic_file(const char *dir, const char *name) { return g_build_filename(dir, "pics", name, NULL); }

static gboolean pic_exists(const char *dir, const char *name) {
  char *p = pic_file(dir, name);
  gboolean ok = g_file_test(p, G_FILE_TEST_IS_REGULAR);
  g_free(p);
  return ok;
}

/* The values are placed where they are (bytes), in order, not at 0, 1, 2...;
** 6 to 64 MiB spans more than a decade: a log axis. The metrics a buffer
** sweep is about are drawn (PAUSE frames, time paused); drops and ECN marks,
** 0 at every point, are not, and stderr says so. */
Test(plot, sweep_axis_is_numeric_and_log_over_a_decade) {
  char *gp = g_find_program_in_path("gnuplot");
  if (!gp) cr_skip_test("gnuplot is not installed: fabsim plot cannot draw");
  g_free(gp);
  char *dir = g_dir_make_tmp("fabsim-plot-XXXXXX", NULL), *err = NULL;
  const char *v[] = {"16MiB", "6MiB", "8MiB", "64MiB", "12MiB"};
  cr_assert_eq(plot_sweep(dir, "fabric.switch.buffer", v, 5, NULL, &err), 0, "%s", err);
  cr_assert(strstr(err, "0 at every point, not drawn: drops, ecn_marks"), "%s", err);
  g_free(err);
  char *dat = pic_file(dir, "sweep.dat"), *gpf = pic_file(dir, "sweep-pfc_pause_frames.gp");
  char *d = slurp(dat), *g = slurp(gpf);
  cr_assert(d && g, "%s, %s", dat, gpf);
  /* x in bytes, sorted; then sim_time_s, drops, pfc_pause_frames, pfc_paused_s, ecn_marks, wall_s */
  cr_assert_str_eq(d, "# x = fabric.switch.buffer (B); then the columns: sim_time_s drops pfc_pause_frames "
                      "pfc_paused_s ecn_marks wall_s\n"
                      "# line 0: \n"
                      "6291456 0.002 0 200 2e-06 0 0.5\n"
                      "8388608 0.003 0 300 3e-06 0 0.5\n"
                      "12582912 0.005 0 500 5e-06 0 0.5\n"
                      "16777216 0.001 0 100 1e-06 0 0.5\n"
                      "67108864 0.004 0 400 4e-06 0 0.5\n\n\n");
  cr_assert(strstr(g, "set logscale x\n"), "%s", g);
  cr_assert(strstr(g, "set xtics (\"16MiB\" 16777216, \"6MiB\" 6291456, \"8MiB\" 8388608, \"64MiB\" 67108864, "
                      "\"12MiB\" 12582912)"), "%s", g);
  cr_assert(pic_exists(dir, "sweep-pfc_pause_frames.png") && pic_exists(dir, "sweep-pfc_paused_s.png") &&
            pic_exists(dir, "sweep-sim_time_s.png"));
  cr_assert(!pic_exists(dir, "sweep-drops.png") && !pic_exists(dir, "sweep-ecn_marks.png"));
  g_free(d), g_free(g), g_free(dat), g_free(gpf);
  rm_rf(dir);
  g_free(dir);
}

/* 6 to 16 MiB is less than a decade (16/6 = 2.7): a linear axis. Values that
** are not numbers stay categories, at 0, 1, ... in order. */
Test(plot, sweep_axis_is_linear_under_a_decade_and_categories_stay) {
  char *gp = g_find_program_in_path("gnuplot");
  if (!gp) cr_skip_test("gnuplot is not installed: fabsim plot cannot draw");
  g_free(gp);
  char *dir = g_dir_make_tmp("fabsim-plot-XXXXXX", NULL), *err = NULL;
  const char *v[] = {"6MiB", "8MiB", "12MiB", "16MiB"};
  cr_assert_eq(plot_sweep(dir, "fabric.switch.buffer", v, 4, NULL, &err), 0, "%s", err);
  g_free(err);
  char *gpf = pic_file(dir, "sweep-sim_time_s.gp"), *g = slurp(gpf);
  cr_assert(strstr(g, "unset logscale x\nset xrange [5767168:17301504]\n"), "%s", g);
  cr_assert_null(strstr(g, "\nset logscale x"), "%s", g);
  g_free(g), g_free(gpf);
  rm_rf(dir);
  cr_assert_eq(g_mkdir_with_parents(dir, 0700), 0);
  const char *r[] = {"ecmp", "spray", "adaptive"};
  cr_assert_eq(plot_sweep(dir, "fabric.switch.routing", r, 3, NULL, &err), 0, "%s", err);
  g_free(err);
  char *dat = pic_file(dir, "sweep.dat"), *d = slurp(dat);
  cr_assert(g_str_has_prefix(d, "# x = fabric.switch.routing (category index);"), "%s", d);
  cr_assert(strstr(d, "\n0 0.001 ") && strstr(d, "\n1 0.002 ") && strstr(d, "\n2 0.003 "), "%s", d);
  g_free(d), g_free(dat);
  rm_rf(dir);
  g_free(dir);
}

/* --metric chooses the pictures (repeated or a comma list), even a metric 0
** everywhere (its title says so); an unknown one is exit 2 naming the
** valid ones, and nothing is written. */
Test(plot, sweep_metric_chooses_and_an_unknown_one_is_exit_2) {
  char *gp = g_find_program_in_path("gnuplot");
  if (!gp) cr_skip_test("gnuplot is not installed: fabsim plot cannot draw");
  g_free(gp);
  char *dir = g_dir_make_tmp("fabsim-plot-XXXXXX", NULL), *err = NULL;
  const char *v[] = {"1MiB", "4MiB"};
  const char *m[] = {"--metric", "drops,ecn_marks", "--metric=wall_s", NULL};
  cr_assert_eq(plot_sweep(dir, "fabric.switch.buffer", v, 2, m, &err), 0, "%s", err);
  g_free(err);
  cr_assert(pic_exists(dir, "sweep-drops.png") && pic_exists(dir, "sweep-ecn_marks.png") &&
            pic_exists(dir, "sweep-wall_s.png"));
  cr_assert(!pic_exists(dir, "sweep-sim_time_s.png") && !pic_exists(dir, "sweep-pfc_pause_frames.png"));
  char *gpf = pic_file(dir, "sweep-drops.gp"), *g = slurp(gpf);
  cr_assert(strstr(g, "set title \"packets dropped against fabric.switch.buffer (0 at every point)\""), "%s", g);
  g_free(g), g_free(gpf);
  rm_rf(dir);
  cr_assert_eq(g_mkdir_with_parents(dir, 0700), 0);
  const char *bad[] = {"--metric", "sim_time_s,pauses", NULL};
  cr_assert_eq(plot_sweep(dir, "fabric.switch.buffer", v, 2, bad, &err), 2);
  cr_assert(strstr(err, "--metric pauses: ") && strstr(err, "the metrics are: sim_time_s, drops, pfc_pause_frames, "
                                                            "pfc_paused_s, ecn_marks, wall_s\n"), "%s", err);
  g_free(err);
  char *pics = g_build_filename(dir, "pics", NULL);
  cr_assert_not(g_file_test(pics, G_FILE_TEST_EXISTS), "an unknown metric wrote %s", pics);
  g_free(pics);
  const char *lay[] = {"--layer", "nic", NULL};
  cr_assert_eq(plot_sweep(dir, "fabric.switch.buffer", v, 2, lay, &err), 2);
  cr_assert(strstr(err, "--layer chooses the queues and links of one run's file"), "%s", err);
  g_free(err);
  rm_rf(dir);
  g_free(dir);
}

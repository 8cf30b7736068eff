/* fabsim plot: every picture kind is made, non-empty, from a small run;
** skipped with a message when gnuplot is missing. */
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
  g_free(err);
  const char *m[] = {"sim_time_s", "fct_p99_s", "drops", "max_queue_bytes"};
  for (int i = 0; i < 4; i++) {
    char *p = g_strdup_printf("%s/sweep-plots/sweep-%s.png", sweep, m[i]);
    cr_assert(is_png(p), "%s", p);
    g_free(p);
  }
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

/* nccl-tests sweeps of allreduce and allgather on 8 ranks (8 B to 64 MiB,
** two iterations each), then two training steps on 8 ranks: forward,
** backward with the dp allreduce overlapping it, a pipeline send, the
** optimizer. `with_events` FALSE writes the tables empty. */
static void write_events_h5(const char *path, gboolean with_events) {
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
  write_table(f, "/collectives", ct, colls->len, colls->data);
  write_table(f, "/timeline", st, spans->len, spans->data);
  g_array_free(colls, TRUE);
  g_array_free(spans, TRUE);
  H5Tclose(st);
  H5Tclose(ct);
  H5Tclose(str);
  H5Fclose(f);
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

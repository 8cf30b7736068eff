/* fabsim sweep, run as a subprocess in a temporary directory: a 2x2 grid
** matches 4 individual runs and resumes without rerunning; bad values and a
** missing scenario exit 2 and write nothing; values with braces are not split;
** a failed point is recorded (exit 1) and rerun on resume; every number of
** the JSON summary is a column (pfc_paused_s too); a sweep is extended with
** new values (only they run) and refuses another scenario or other keys;
** --help. Shards: two shards in turn make the local sweep's table, three
** started at once as an MPI launcher starts them (rank and size in the
** environment) run each point once and leave the whole table, shards extend
** a sweep with the same point numbers, and bad shard numbers exit 2.
**
** Environment: FABSIM is the fabsim binary (default build/fabsim), FABSIM_SRC
** the repository root (default .); meson test sets both. */
#include <criterion/criterion.h>
#include <glib.h>
#include <hdf5.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *fabsim_bin(void) {
  const char *s = getenv("FABSIM");
  return g_canonicalize_filename(s && *s ? s : "build/fabsim", NULL);
}

static char *quickstart(void) {
  const char *s = getenv("FABSIM_SRC");
  char *rel = g_build_filename(s && *s ? s : ".", "scenarios", "quickstart.yaml", NULL);
  char *abs = g_canonicalize_filename(rel, NULL);
  g_free(rel);
  return abs;
}

typedef struct Proc {
  int status;
  char *out, *err, *cmd;
} Proc;

static void proc_clear(Proc *p) {
  g_free(p->out);
  g_free(p->err);
  g_free(p->cmd);
  memset(p, 0, sizeof *p);
}

/* Run fabsim in `cwd` with the NULL-terminated args (without argv[0]). */
static Proc run_in(const char *cwd, const char *const *args) {
  GPtrArray *argv = g_ptr_array_new();
  char *bin = fabsim_bin();
  g_ptr_array_add(argv, bin);
  for (int i = 0; args[i]; i++) g_ptr_array_add(argv, (char *)args[i]);
  g_ptr_array_add(argv, NULL);
  Proc p = {0};
  p.cmd = g_strjoinv(" ", (char **)argv->pdata);
  int ws = 0;
  GError *e = NULL;
  gboolean ok = g_spawn_sync(cwd, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, &p.out, &p.err, &ws, &e);
  cr_assert(ok, "cannot run %s: %s", p.cmd, e ? e->message : "?");
  g_ptr_array_free(argv, TRUE);
  g_free(bin);
  p.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  return p;
}

#define RUN_IN(cwd, ...) run_in(cwd, (const char *const[]){__VA_ARGS__, NULL})

static char *tmpdir(void) {
  GError *e = NULL;
  char *d = g_dir_make_tmp("fabsim-sweep-XXXXXX", &e);
  cr_assert(d, "cannot make a temporary directory: %s", e ? e->message : "?");
  return d;
}

static void rm_rf(const char *path) {
  GDir *d = g_dir_open(path, 0, NULL);
  if (d) {
    const char *n;
    while ((n = g_dir_read_name(d))) {
      char *p = g_build_filename(path, n, NULL);
      rm_rf(p);
      g_free(p);
    }
    g_dir_close(d);
    g_rmdir(path);
  } else {
    g_unlink(path);
  }
}

static int n_entries(const char *dir) {
  GDir *d = g_dir_open(dir, 0, NULL);
  if (!d) return -1;
  int n = 0;
  while (g_dir_read_name(d)) n++;
  g_dir_close(d);
  return n;
}

/* A CSV line split into cells (handles "quoted, cells"). */
static GPtrArray *csv_cells(const char *line) {
  GPtrArray *row = g_ptr_array_new_with_free_func(g_free);
  GString *c = g_string_new(NULL);
  gboolean q = FALSE;
  for (const char *p = line;; p++) {
    if (q) {
      if (*p == '"' && p[1] == '"') g_string_append_c(c, '"'), p++;
      else if (*p == '"') q = FALSE;
      else if (*p) g_string_append_c(c, *p);
      else break;
    } else if (*p == '"') {
      q = TRUE;
    } else if (*p == ',' || !*p) {
      g_ptr_array_add(row, g_string_free(c, FALSE));
      c = g_string_new(NULL);
      if (!*p) break;
    } else {
      g_string_append_c(c, *p);
    }
  }
  g_string_free(c, TRUE);
  return row;
}

static int col(GPtrArray *header, const char *name) {
  for (guint i = 0; i < header->len; i++)
    if (!strcmp(header->pdata[i], name)) return (int)i;
  cr_assert_fail("no column %s in the CSV header", name);
  return -1;
}

/* The text of the number after "key": in a JSON summary. */
static char *json_num(const char *js, const char *key) {
  char *pat = g_strdup_printf("\"%s\": ([-+0-9.eE]+)", key);
  GRegex *re = g_regex_new(pat, 0, 0, NULL);
  GMatchInfo *mi = NULL;
  char *v = NULL;
  if (g_regex_match(re, js, 0, &mi)) v = g_match_info_fetch(mi, 1);
  g_match_info_free(mi);
  g_regex_unref(re);
  g_free(pat);
  return v;
}

static char *read_file(const char *path) {
  char *s = NULL;
  cr_assert(g_file_get_contents(path, &s, NULL, NULL), "cannot read %s", path);
  return s;
}

static gint64 mtime_ns(const char *path) {
  struct stat st;
  cr_assert(stat(path, &st) == 0, "no %s", path);
  return (gint64)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
}

Test(sweep, grid_2x2_matches_individual_runs_and_resumes) {
  char *dir = tmpdir(), *sc = quickstart();
  Proc p = RUN_IN(dir, "sweep", sc, "--set", "workload.size=64KiB,128KiB", "--set", "fabric.switch.buffer=4MiB,8MiB",
                  "--jobs", "2");
  cr_assert_eq(p.status, 0, "%s: exit %d; stderr:\n%s", p.cmd, p.status, p.err);
  char *out = g_build_filename(dir, "sweep-quickstart", NULL);
  char *csv = g_build_filename(out, "sweep.csv", NULL), *h5 = g_build_filename(out, "sweep.h5", NULL);
  cr_assert(g_file_test(h5, G_FILE_TEST_IS_REGULAR), "no %s", h5);
  char *text = read_file(csv);
  char **lines = g_strsplit(text, "\n", -1);
  cr_assert_eq(g_strv_length(lines), 6, "expected a header, 4 rows and a final newline:\n%s", text);
  GPtrArray *hd = csv_cells(lines[0]);
  cr_expect_str_eq(hd->pdata[0], "workload.size");
  cr_expect_str_eq(hd->pdata[1], "fabric.switch.buffer");
  /* then point, status, exit and the summary columns (the sweep columns of the results' field table) */
  cr_expect_str_eq(lines[0],
                   "workload.size,fabric.switch.buffer,point,status,exit,sim_time_s,events,packet_hops,drops,"
                   "retransmits,pfc_pause_frames,ecn_marks,cnps,max_queue_bytes,flows_completed,flows_count,"
                   "fct_p50_s,fct_p99_s,fct_max_s,step_time_s,compute_s,exposed_comm_s,bubble_fraction,wall_s,"
                   /* then every other number of the JSON summary, in its order */
                   "seed,events_per_s,packet_hops_per_s,endpoints,nvlink_segment_bytes,flows_bytes,pfc_paused_s,"
                   "step_steps,step_comm_s,step_overlap_s,step_bubble_s,fabric_segment_bytes,"
                   "failure_impact_baseline_time_s,failure_impact_slowdown,failure_impact_baseline_fct_p50_s,"
                   "failure_impact_baseline_fct_p99_s,failure_impact_baseline_fct_max_s,"
                   "failure_impact_baseline_retransmits,failure_impact_moved_bytes,fast_forward_window_s,"
                   "fast_forward_tolerance,fast_forward_looks,fast_forward_jumps,fast_forward_skipped_s,"
                   "fast_forward_skipped_fraction,fast_forward_skipped_packets,sharp_fallbacks,nvls_segment_bytes",
                   "the CSV header");
  int c_point = col(hd, "point"), c_status = col(hd, "status"), c_time = col(hd, "sim_time_s"),
      c_events = col(hd, "events");
  const char *sizes[] = {"64KiB", "64KiB", "128KiB", "128KiB"}, *bufs[] = {"4MiB", "8MiB", "4MiB", "8MiB"};
  gint64 mt[4];
  for (int i = 0; i < 4; i++) {
    GPtrArray *row = csv_cells(lines[i + 1]);
    cr_assert_eq(row->len, hd->len, "row %d: %s", i, lines[i + 1]);
    cr_expect_str_eq(row->pdata[0], sizes[i]);
    cr_expect_str_eq(row->pdata[1], bufs[i]);
    char *num = g_strdup_printf("%d", i);
    cr_expect_str_eq(row->pdata[c_point], num);
    g_free(num);
    cr_expect_str_eq(row->pdata[c_status], "ok");
    char *s1 = g_strdup_printf("workload.size=%s", sizes[i]), *s2 = g_strdup_printf("fabric.switch.buffer=%s", bufs[i]);
    /* with --hdf5 as the sweep's children: the HDF5 sampler's events count too */
    char *h5one = g_build_filename(dir, "one.h5", NULL);
    Proc one = RUN_IN(dir, "run", sc, "--json", "--set", s1, "--set", s2, "--hdf5", h5one);
    g_unlink(h5one);
    g_free(h5one);
    cr_assert_eq(one.status, 0, "%s: %s", one.cmd, one.err);
    char *t = json_num(one.out, "sim_time_s"), *ev = json_num(one.out, "events");
    cr_assert(t && ev, "no sim_time_s / events in %s", one.out);
    cr_expect_float_eq(g_ascii_strtod(row->pdata[c_time], NULL), g_ascii_strtod(t, NULL), 1e-15,
                       "point %d sim_time_s: sweep %s, run %s", i, (char *)row->pdata[c_time], t);
    cr_expect_str_eq(row->pdata[c_events], ev, "point %d events", i);
    g_free(t), g_free(ev), g_free(s1), g_free(s2);
    proc_clear(&one);
    char *ph = g_strdup_printf("%s/point-%04d.h5", out, i);
    mt[i] = mtime_ns(ph);
    g_free(ph);
    g_ptr_array_free(row, TRUE);
  }
  proc_clear(&p);

  /* the same command again: nothing is rerun, the CSV is the same */
  p = RUN_IN(dir, "sweep", sc, "--set", "workload.size=64KiB,128KiB", "--set", "fabric.switch.buffer=4MiB,8MiB",
             "--jobs", "2");
  cr_assert_eq(p.status, 0, "%s: exit %d; stderr:\n%s", p.cmd, p.status, p.err);
  cr_expect(strstr(p.err, "4 of 4 points already done") != NULL, "stderr:\n%s", p.err);
  for (int i = 0; i < 4; i++) {
    char *ph = g_strdup_printf("%s/point-%04d.h5", out, i);
    cr_expect_eq(mtime_ns(ph), mt[i], "%s was rewritten on resume", ph);
    g_free(ph);
  }
  char *again = read_file(csv);
  cr_expect_str_eq(again, text, "the CSV changed on resume");
  g_free(again);
  cr_expect(g_file_test(h5, G_FILE_TEST_IS_REGULAR));

  proc_clear(&p);
  g_ptr_array_free(hd, TRUE);
  g_strfreev(lines);
  g_free(text), g_free(csv), g_free(h5), g_free(out);
  rm_rf(dir);
  g_free(dir), g_free(sc);
}

Test(sweep, bad_value_exits_2_and_writes_nothing) {
  char *dir = tmpdir(), *sc = quickstart();
  Proc p = RUN_IN(dir, "sweep", sc, "--set", "fabric.switch.buffer=4MiB,bogus", "--out", "o");
  cr_expect_eq(p.status, 2, "%s: exit %d; stderr:\n%s", p.cmd, p.status, p.err);
  cr_expect(strstr(p.err, "bogus") != NULL, "stderr should name the bad value:\n%s", p.err);
  cr_expect_eq(n_entries(dir), 0, "something was written in %s", dir);
  proc_clear(&p);
  rm_rf(dir);
  g_free(dir), g_free(sc);
}

/* A value given twice, as written or as the same number, would run one
** point twice and count it in two rows: refused before anything runs. */
Test(sweep, a_value_given_twice_is_refused) {
  char *dir = tmpdir(), *sc = quickstart();
  static const struct {
    const char *set, *says;
  } c[] = {
      {"fabric.switch.buffer=1MiB,1MiB,2MiB", "--set fabric.switch.buffer=1MiB,1MiB,2MiB: the value '1MiB' is given "
                                              "twice\n"},
      {"fabric.switch.buffer=1MiB,1048576", "--set fabric.switch.buffer=1MiB,1048576: '1MiB' and '1048576' are the "
                                            "same value\n"},
      {"fabric.link.latency=1us,1000ns", "'1us' and '1000ns' are the same value"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(c); i++) {
    Proc p = RUN_IN(dir, "sweep", sc, "--set", c[i].set, "--out", "o");
    cr_expect_eq(p.status, 2, "%s: exit %d; stderr:\n%s", p.cmd, p.status, p.err);
    cr_expect(strstr(p.err, c[i].says) != NULL, "%s: stderr:\n%s", p.cmd, p.err);
    cr_expect_eq(n_entries(dir), 0, "something was written in %s", dir);
    proc_clear(&p);
  }
  rm_rf(dir);
  g_free(dir), g_free(sc);
}

/* An A/B sweep of one knob: where the knob makes another setting do nothing
** (ECN with congestion control none), the points' warnings are shown once
** each, after the sweep, with the points that gave them. */
Test(sweep, the_points_warnings_are_shown) {
  char *dir = tmpdir(), *sc = quickstart();
  Proc p = RUN_IN(dir, "sweep", sc, "--set", "fabric.switch.ecn.enabled=true", "--set",
                  "fabric.congestion_control.algorithm=none,dcqcn", "--set", "workload.size=64KiB", "--out", "o");
  cr_expect_eq(p.status, 0, "%s: exit %d; stderr:\n%s", p.cmd, p.status, p.err);
  cr_expect(strstr(p.err, "fabsim sweep: warning (point 0): --set:1:27: fabric.switch.ecn.enabled: has no effect: "
                          "ECN marks only ECN-capable packets") != NULL, "stderr:\n%s", p.err);
  cr_expect(strstr(p.err, "(point 1)") == NULL, "point 1 runs DCQCN: no warning; stderr:\n%s", p.err);
  proc_clear(&p);
  rm_rf(dir);
  g_free(dir), g_free(sc);
}

Test(sweep, missing_scenario_exits_2) {
  char *dir = tmpdir();
  Proc p = RUN_IN(dir, "sweep", "no-such-scenario.yaml", "--set", "seed=1,2");
  cr_expect_eq(p.status, 2, "%s: exit %d; stderr:\n%s", p.cmd, p.status, p.err);
  cr_expect_str_not_empty(p.err);
  cr_expect_eq(n_entries(dir), 0, "something was written in %s", dir);
  proc_clear(&p);
  p = RUN_IN(dir, "sweep", "--bogus");
  cr_expect_eq(p.status, 2);
  /* the one parser's usage error: "fabsim sweep: message", a blank line, the usage */
  cr_expect(g_str_has_prefix(p.err, "fabsim sweep: unknown option '--bogus'\n\nusage: fabsim sweep SCENARIO "),
            "%s", p.err);
  char *usage_err = g_strdup(p.err);
  proc_clear(&p);
  p = RUN_IN(dir, "sweep");
  cr_expect_eq(p.status, 2);
  cr_expect(g_str_has_prefix(p.err, "fabsim sweep: sweep needs a SCENARIO file\n\nusage: fabsim sweep "), "%s", p.err);
  proc_clear(&p);
  p = RUN_IN(dir, "sweep", "q.yaml", "--jobs", "0");
  cr_expect_eq(p.status, 2);
  cr_expect(g_str_has_prefix(p.err, "fabsim sweep: --jobs 0: expected a positive integer\n\nusage: fabsim sweep "),
            "%s", p.err);
  proc_clear(&p);
  p = RUN_IN(dir, "sweep", "--help");
  cr_expect_eq(p.status, 0);
  cr_expect(strstr(p.out, "usage: fabsim sweep") != NULL, "%s", p.out);
  cr_expect(g_str_has_prefix(p.out, "usage: fabsim sweep SCENARIO"), "%s", p.out);
  cr_expect(strstr(p.out, "\noptions:\n") && strstr(p.out, "\n  -h, --help "), "%s", p.out);
  cr_expect(strstr(p.out, "\n  -j, --jobs N "), "%s", p.out);
  const char *after = strstr(usage_err, "\n\n");
  cr_expect(after && strcmp(after + 2, p.out) == 0, "the usage after an error is the --help text:\n%s", usage_err);
  g_free(usage_err);
  proc_clear(&p);
  rm_rf(dir);
  g_free(dir);
}

Test(sweep, braces_are_not_split) {
  char *dir = tmpdir(), *sc = quickstart();
  Proc p = RUN_IN(dir, "sweep", sc, "--set", "fabric.switch.pfc={enabled: true, xoff: 64KiB},{enabled: false}",
                  "--set", "seed=1", "--out", "o", "--jobs", "2");
  cr_assert_eq(p.status, 0, "%s: exit %d; stderr:\n%s", p.cmd, p.status, p.err);
  char *csv = g_build_filename(dir, "o", "sweep.csv", NULL);
  char *text = read_file(csv);
  char **lines = g_strsplit(text, "\n", -1);
  cr_assert_eq(g_strv_length(lines), 4, "expected 2 rows:\n%s", text);
  GPtrArray *hd = csv_cells(lines[0]);
  cr_expect_str_eq(hd->pdata[0], "fabric.switch.pfc");
  cr_expect_str_eq(hd->pdata[1], "point", "the fixed --set is not a column");
  GPtrArray *r0 = csv_cells(lines[1]), *r1 = csv_cells(lines[2]);
  cr_expect_str_eq(r0->pdata[0], "{enabled: true, xoff: 64KiB}");
  cr_expect_str_eq(r1->pdata[0], "{enabled: false}");
  int c = col(hd, "pfc_pause_frames");
  cr_expect_str_neq(r0->pdata[c], "0", "PFC on should send PAUSE frames here");
  cr_expect_str_eq(r1->pdata[c], "0");
  g_ptr_array_free(r0, TRUE), g_ptr_array_free(r1, TRUE), g_ptr_array_free(hd, TRUE);
  g_strfreev(lines);
  g_free(text), g_free(csv);
  proc_clear(&p);
  rm_rf(dir);
  g_free(dir), g_free(sc);
}

Test(sweep, failed_point_is_recorded_and_rerun) {
  char *dir = tmpdir(), *sc = quickstart();
  const char *const args[] = {"sweep", sc, "--set", "stop_time=1us,1ms", "--out", "o", NULL};
  Proc p = run_in(dir, args);
  cr_expect_eq(p.status, 1, "%s: exit %d; stderr:\n%s", p.cmd, p.status, p.err);
  char *csv = g_build_filename(dir, "o", "sweep.csv", NULL);
  char *text = read_file(csv);
  char **lines = g_strsplit(text, "\n", -1);
  cr_assert_eq(g_strv_length(lines), 4, "%s", text);
  GPtrArray *hd = csv_cells(lines[0]), *r0 = csv_cells(lines[1]), *r1 = csv_cells(lines[2]);
  cr_expect_str_eq(r0->pdata[col(hd, "status")], "failed");
  cr_expect_str_eq(r0->pdata[col(hd, "exit")], "1");
  cr_expect_str_eq(r1->pdata[col(hd, "status")], "ok");
  proc_clear(&p);
  p = run_in(dir, args);
  cr_expect_eq(p.status, 1);
  cr_expect(strstr(p.err, "1 of 2 points already done") != NULL, "stderr:\n%s", p.err);
  cr_expect(strstr(p.err, "point 0 failed") != NULL, "the failed point should be rerun:\n%s", p.err);
  g_ptr_array_free(r0, TRUE), g_ptr_array_free(r1, TRUE), g_ptr_array_free(hd, TRUE);
  g_strfreev(lines);
  g_free(text), g_free(csv);
  proc_clear(&p);
  rm_rf(dir);
  g_free(dir), g_free(sc);
}

Test(sweep, a_directory_of_another_sweep_is_not_reused) {
  char *dir = tmpdir(), *q = quickstart();
  char *inc = g_build_filename(getenv("FABSIM_SRC") ? getenv("FABSIM_SRC") : ".", "scenarios", "incast.yaml", NULL);
  char *out = g_build_filename(dir, "s", NULL);
  Proc a = RUN_IN(dir, "sweep", q, "--set", "workload.size=64KiB,128KiB", "--out", out, "--jobs", "2");
  cr_assert_eq(a.status, 0, "%s", a.err);
  char *csv = g_build_filename(out, "sweep.csv", NULL), *before = read_file(csv);
  /* another scenario, the same key and values: its results must not be taken for these */
  Proc b = RUN_IN(dir, "sweep", inc, "--set", "workload.size=64KiB,128KiB", "--out", out);
  cr_assert_eq(b.status, 2, "%s", b.err);
  cr_assert(strstr(b.err, "holds another sweep"), "%s", b.err);
  /* another key, the same scenario: another sweep, and the message says what differs */
  Proc c = RUN_IN(dir, "sweep", q, "--set", "fabric.switch.buffer=4MiB,8MiB", "--out", out);
  cr_assert_eq(c.status, 2, "%s", c.err);
  cr_assert(strstr(c.err, "holds another sweep: other swept keys (workload.size; this sweep: fabric.switch.buffer)"),
            "%s", c.err);
  char *after = read_file(csv);
  cr_assert_str_eq(after, before, "the first sweep's results are untouched");
  Proc d = RUN_IN(dir, "sweep", q, "--set", "workload.size=64KiB,128KiB", "--out", "/proc/self");
  cr_assert_eq(d.status, 2, "an unwritable directory is bad input: %s", d.err);
  proc_clear(&a);
  proc_clear(&b);
  proc_clear(&c);
  proc_clear(&d);
  g_free(before);
  g_free(after);
  g_free(csv);
  g_free(out);
  g_free(inc);
  g_free(q);
  rm_rf(dir);
  g_free(dir);
}

/* sweep.key is fabsim's record of the points' numbers: a point line that is
** damaged (not "point N VALUES", a number or a point given twice) stops
** the sweep with the file's line, exit 2, rather than being trusted or
** skipped; the table is left as it was. */
Test(sweep, a_damaged_key_is_refused_at_its_line) {
  char *dir = tmpdir(), *q = quickstart(), *out = g_build_filename(dir, "s", NULL);
  Proc a = RUN_IN(dir, "sweep", q, "--set", "workload.size=64KiB,128KiB", "--out", out, "--jobs", "2");
  cr_assert_eq(a.status, 0, "%s", a.err);
  char *key = g_build_filename(out, "sweep.key", NULL), *good = read_file(key), *csv = g_build_filename(out, "sweep.csv", NULL);
  char *before = read_file(csv);
  cr_assert(strstr(good, "\npoint 0 64KiB\npoint 1 128KiB\n"), "%s", good);
  static const struct { const char *line, *why; } bad[] = {
    {"point 0 128KiB", "sweep.key:5: a point number given twice: 'point 0 128KiB'"},
    {"point 2 64KiB", "sweep.key:5: a point given twice: 'point 2 64KiB'"},
    {"point x 128KiB", "sweep.key:5: not 'point N VALUES' with a value per swept key"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(bad); k++) {
    char *head = g_strndup(good, (size_t)(strstr(good, "point 1 ") - good));
    char *text = g_strdup_printf("%s%s\n", head, bad[k].line);
    cr_assert(g_file_set_contents(key, text, -1, NULL));
    Proc b = RUN_IN(dir, "sweep", q, "--set", "workload.size=64KiB,128KiB", "--out", out);
    cr_assert_eq(b.status, 2, "%s: %s", bad[k].line, b.err);
    cr_assert(strstr(b.err, bad[k].why), "%s\nexpected: %s", b.err, bad[k].why);
    cr_assert_str_empty(b.out);
    char *after = read_file(csv);
    cr_assert_str_eq(after, before, "the table is untouched");
    g_free(after), g_free(text), g_free(head);
    proc_clear(&b);
  }
  proc_clear(&a);
  g_free(before), g_free(csv), g_free(good), g_free(key), g_free(out), g_free(q);
  rm_rf(dir);
  g_free(dir);
}

/* A sweep of a training scenario carries the step report in its columns
** (empty for runs that are not training): the step time of each point is
** the one its own run reports. */
Test(sweep, training_points_carry_the_step_time) {
  char *dir = tmpdir();
  const char *y = "cluster: {nodes: 4}\n"
                  "fabric:\n"
                  "  topology: {kind: single-switch}\n"
                  "  link: {bandwidth: 100Gbps, latency: 1us, mtu: 4096}\n"
                  "workload:\n"
                  "  kind: training\n"
                  "  model: {layers: 2, hidden: 512, seq: 256, micro_batch: 1, global_batch: 4, dtype: bf16}\n"
                  "  parallelism: {dp: 4}\n"
                  "  gpu: {flops: 100TFLOPS, efficiency: 0.5}\n";
  char *sc = g_build_filename(dir, "train.yaml", NULL);
  cr_assert(g_file_set_contents(sc, y, -1, NULL));
  Proc p = RUN_IN(dir, "sweep", sc, "--set", "fabric.link.bandwidth=100Gbps,25Gbps", "--out", "sw");
  cr_assert_eq(p.status, 0, "%s: exit %d; stderr:\n%s", p.cmd, p.status, p.err);
  char *csv = g_build_filename(dir, "sw", "sweep.csv", NULL), *text = read_file(csv);
  char **lines = g_strsplit(text, "\n", -1);
  GPtrArray *hd = csv_cells(lines[0]);
  int c_step = col(hd, "step_time_s"), c_exp = col(hd, "exposed_comm_s");
  double step[2];
  const char *bw[] = {"fabric.link.bandwidth=100Gbps", "fabric.link.bandwidth=25Gbps"};
  for (int i = 0; i < 2; i++) {
    GPtrArray *row = csv_cells(lines[i + 1]);
    cr_assert(*(char *)row->pdata[c_step] && *(char *)row->pdata[c_exp], "row %d has the step: %s", i, lines[i + 1]);
    step[i] = g_ascii_strtod(row->pdata[c_step], NULL);
    Proc one = RUN_IN(dir, "run", sc, "--json", "--set", bw[i]);
    cr_assert_eq(one.status, 0, "%s: %s", one.cmd, one.err);
    char *t = json_num(one.out, "step_time_s");
    cr_assert(t, "no step_time_s in %s", one.out);
    cr_expect_float_eq(step[i], g_ascii_strtod(t, NULL), 1e-15);
    g_free(t);
    proc_clear(&one);
    g_ptr_array_free(row, TRUE);
  }
  cr_assert_gt(step[1], step[0], "a slower fabric, a longer step");
  g_ptr_array_free(hd, TRUE);
  g_strfreev(lines);
  g_free(text);
  g_free(csv);
  g_free(sc);
  proc_clear(&p);
  rm_rf(dir);
  g_free(dir);
}

/* The cells of column `name` of a CSV text, row by row, joined with ','. */
static char *column(const char *text, const char *name) {
  char **lines = g_strsplit(text, "\n", -1);
  GPtrArray *hd = csv_cells(lines[0]);
  int c = col(hd, name);
  GString *s = g_string_new(NULL);
  for (int i = 1; lines[i] && *lines[i]; i++) {
    GPtrArray *row = csv_cells(lines[i]);
    g_string_append_printf(s, "%s%s", i > 1 ? "," : "", (char *)row->pdata[c]);
    g_ptr_array_free(row, TRUE);
  }
  g_ptr_array_free(hd, TRUE);
  g_strfreev(lines);
  return g_string_free(s, FALSE);
}

/* Every number of a point's JSON summary is a column: PFC's time paused and
** the ECN marks a buffer sweep is about (the 16:1 incast with PFC, ECN and
** DCQCN), equal to what its own run prints. */
Test(sweep, every_number_of_the_summary_is_a_column) {
  char *dir = tmpdir();
  char *pfc = g_build_filename(getenv("FABSIM_SRC") ? getenv("FABSIM_SRC") : ".", "scenarios", "incast-dcqcn.yaml", NULL);
  char *abs = g_canonicalize_filename(pfc, NULL);
  Proc p = RUN_IN(dir, "sweep", abs, "--set", "fabric.switch.buffer=1MiB,4MiB", "--set", "workload.size=1MiB", "--out",
                  "o", "--jobs", "2");
  cr_assert_eq(p.status, 0, "%s: %s", p.cmd, p.err);
  char *csv = g_build_filename(dir, "o", "sweep.csv", NULL), *text = read_file(csv);
  char *paused = column(text, "pfc_paused_s"), *marks = column(text, "ecn_marks");
  char *frames = column(text, "pfc_pause_frames");
  char **pv = g_strsplit(paused, ",", -1), **mv = g_strsplit(marks, ",", -1);
  const char *buf[] = {"fabric.switch.buffer=1MiB", "fabric.switch.buffer=4MiB"};
  for (int i = 0; i < 2; i++) {
    Proc one = RUN_IN(dir, "run", abs, "--json", "--set", buf[i], "--set", "workload.size=1MiB", "--set", "output.hdf5=~");
    cr_assert_eq(one.status, 0, "%s", one.err);
    char *t = json_num(one.out, "pfc_paused_s"), *m = json_num(one.out, "ecn_marks");
    cr_assert(t && m, "%s", one.out);
    cr_expect_str_eq(pv[i], t, "point %d: pfc_paused_s", i);
    cr_expect_str_eq(mv[i], m, "point %d: ecn_marks", i);
    cr_expect_gt(g_ascii_strtod(t, NULL), 0, "an incast with PFC pauses");
    cr_expect_gt(g_ascii_strtod(m, NULL), 0, "and marks (ECN from 20 KiB)");
    g_free(t), g_free(m);
    proc_clear(&one);
  }
  cr_expect_str_neq(frames, "", "%s", text);
  g_strfreev(pv), g_strfreev(mv);
  g_free(paused), g_free(marks), g_free(frames), g_free(text), g_free(csv);
  proc_clear(&p);
  rm_rf(dir);
  g_free(abs), g_free(pfc), g_free(dir);
}

/* The `point` column of DIR/sweep.h5, row by row, joined with ','. */
static char *h5_points(const char *path) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert_geq(f, 0, "cannot open %s", path);
  hid_t d = H5Dopen2(f, "/sweep", H5P_DEFAULT), sp = H5Dget_space(d);
  hssize_t n = H5Sget_simple_extent_npoints(sp);
  hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(uint32_t));
  H5Tinsert(mt, "point", 0, H5T_NATIVE_UINT32);
  uint32_t *pt = g_new(uint32_t, n);
  cr_assert_geq(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, pt), 0);
  GString *s = g_string_new(NULL);
  for (hssize_t i = 0; i < n; i++) g_string_append_printf(s, "%s%u", i ? "," : "", pt[i]);
  g_free(pt);
  H5Tclose(mt);
  H5Sclose(sp);
  H5Dclose(d);
  H5Fclose(f);
  return g_string_free(s, FALSE);
}

/* A sweep over 1MiB,4MiB extended to 1MiB,4MiB,16MiB runs only 16MiB: the
** earlier points' files are untouched, the table holds the three in order
** (points 0, 1, 2). Then 2MiB,64MiB: two more run, the table keeps all five,
** in increasing order of the buffer (the earlier values were increasing),
** each point keeping its number (0, 3, 1, 2, 4). Another scenario into that
** directory is refused, and the table is untouched. */
Test(sweep, a_sweep_is_extended_with_new_values) {
  char *dir = tmpdir(), *q = quickstart();
  Proc a = RUN_IN(dir, "sweep", q, "--set", "fabric.switch.buffer=1MiB,4MiB", "--out", "o", "--jobs", "2");
  cr_assert_eq(a.status, 0, "%s", a.err);
  char *p0 = g_build_filename(dir, "o", "point-0000.h5", NULL), *p1 = g_build_filename(dir, "o", "point-0001.h5", NULL);
  gint64 m0 = mtime_ns(p0), m1 = mtime_ns(p1);
  Proc b = RUN_IN(dir, "sweep", q, "--set", "fabric.switch.buffer=1MiB,4MiB,16MiB", "--out", "o", "--jobs", "2");
  cr_assert_eq(b.status, 0, "%s", b.err);
  cr_expect(strstr(b.err, "2 of 3 points already done"), "%s", b.err);
  cr_expect(strstr(b.out, "3 points (3 ok, 0 failed, 1 run now)"), "%s", b.out);
  cr_expect_eq(mtime_ns(p0), m0, "point 0 was run again");
  cr_expect_eq(mtime_ns(p1), m1, "point 1 was run again");
  char *csv = g_build_filename(dir, "o", "sweep.csv", NULL), *h5 = g_build_filename(dir, "o", "sweep.h5", NULL);
  char *text = read_file(csv), *bufs = column(text, "fabric.switch.buffer"), *pts = column(text, "point");
  char *hp = h5_points(h5);
  cr_expect_str_eq(bufs, "1MiB,4MiB,16MiB");
  cr_expect_str_eq(pts, "0,1,2");
  cr_expect_str_eq(hp, "0,1,2", "sweep.h5's rows");
  char *p2 = g_build_filename(dir, "o", "point-0002.h5", NULL);
  cr_expect(g_file_test(p2, G_FILE_TEST_IS_REGULAR), "no %s", p2);
  g_free(text), g_free(bufs), g_free(pts), g_free(hp);
  Proc c = RUN_IN(dir, "sweep", q, "--set", "fabric.switch.buffer=2MiB,64MiB", "--out", "o", "--jobs", "2");
  cr_assert_eq(c.status, 0, "%s", c.err);
  cr_expect(strstr(c.err, "0 of 2 points already done; the table keeps 3 other points"), "%s", c.err);
  text = read_file(csv), bufs = column(text, "fabric.switch.buffer"), pts = column(text, "point"), hp = h5_points(h5);
  cr_expect_str_eq(bufs, "1MiB,2MiB,4MiB,16MiB,64MiB");
  cr_expect_str_eq(pts, "0,3,1,2,4");
  cr_expect_str_eq(hp, "0,3,1,2,4");
  char *key = g_build_filename(dir, "o", "sweep.key", NULL), *kt = read_file(key);
  cr_expect(strstr(kt, "\nsweep fabric.switch.buffer=1MiB,2MiB,4MiB,16MiB,64MiB\n"), "%s", kt);
  char *inc = g_build_filename(getenv("FABSIM_SRC") ? getenv("FABSIM_SRC") : ".", "scenarios", "incast.yaml", NULL);
  Proc d = RUN_IN(dir, "sweep", inc, "--set", "fabric.switch.buffer=1MiB,4MiB", "--out", "o");
  cr_assert_eq(d.status, 2, "%s", d.err);
  cr_assert(strstr(d.err, "o holds another sweep: another scenario ("), "%s", d.err);
  char *after = read_file(csv);
  cr_expect_str_eq(after, text, "the table changed");
  proc_clear(&a), proc_clear(&b), proc_clear(&c), proc_clear(&d);
  g_free(after), g_free(inc), g_free(kt), g_free(key);
  g_free(text), g_free(bufs), g_free(pts), g_free(hp);
  g_free(p0), g_free(p1), g_free(p2), g_free(csv), g_free(h5);
  rm_rf(dir);
  g_free(dir), g_free(q);
}

/* ---- shards: one sweep over several processes or machines ------------------ */

/* The table's rows as "values|point|status|events|sim_time_s" lines: what
** must not depend on how the points were spread (wall_s and the rates do). */
static char *table_core(const char *csv_path) {
  char *text = read_file(csv_path), **lines = g_strsplit(text, "\n", -1);
  GPtrArray *hd = csv_cells(lines[0]);
  int cs[] = {0, 1, col(hd, "point"), col(hd, "status"), col(hd, "events"), col(hd, "sim_time_s")};
  GString *s = g_string_new(NULL);
  for (int l = 1; lines[l] && *lines[l]; l++) {
    GPtrArray *row = csv_cells(lines[l]);
    for (size_t c = 0; c < G_N_ELEMENTS(cs); c++) g_string_append_printf(s, "%s%s", c ? "|" : "", (char *)row->pdata[cs[c]]);
    g_string_append_c(s, '\n');
    g_ptr_array_free(row, TRUE);
  }
  g_ptr_array_free(hd, TRUE);
  g_strfreev(lines);
  g_free(text);
  return g_string_free(s, FALSE);
}

#define GRID "--set", "workload.size=64KiB,128KiB,256KiB", "--set", "fabric.switch.buffer=4MiB,8MiB"

Test(sweep, shards_in_turn_make_the_local_table) {
  /* --shard 0/2 runs points 0, 2, 4 and leaves a partial table and their
  ** records; --shard 1/2 runs 1, 3, 5 (same numbers, read back from
  ** sweep.key) and writes the whole table: the local sweep's, row for row. */
  char *dir = tmpdir(), *q = quickstart();
  Proc l = RUN_IN(dir, "sweep", q, GRID, "--out", "local", "--jobs", "2");
  cr_assert_eq(l.status, 0, "%s", l.err);
  Proc a = RUN_IN(dir, "sweep", q, GRID, "--out", "sh", "--shard", "0/2", "--jobs", "1");
  cr_assert_eq(a.status, 0, "%s", a.err);
  cr_expect(strstr(a.err, "shard 0 of 2: the points whose number mod 2 is 0"), "%s", a.err);
  cr_expect(strstr(a.err, "3 points of the grid are not done yet"), "%s", a.err);
  cr_expect(strstr(a.out, "6 points (3 ok, 0 failed, 3 run now)"), "%s", a.out);
  char *partial = g_build_filename(dir, "sh", "sweep.csv", NULL), *pc = table_core(partial);
  char *ptext = read_file(partial), *pts = column(ptext, "point");
  cr_expect_str_eq(pts, "0,2,4");
  g_free(ptext);
  for (int i = 0; i < 6; i++) {
    char *rec = g_strdup_printf("%s/sh/point-%04d.csv", dir, i), *h5 = g_strdup_printf("%s/sh/point-%04d.h5", dir, i);
    cr_expect_eq(g_file_test(rec, G_FILE_TEST_IS_REGULAR), i % 2 == 0, "%s", rec);
    cr_expect_eq(g_file_test(h5, G_FILE_TEST_IS_REGULAR), i % 2 == 0, "%s", h5);
    g_free(rec), g_free(h5);
  }
  Proc b = RUN_IN(dir, "sweep", q, GRID, "--out", "sh", "--shard", "1/2", "--jobs", "1");
  cr_assert_eq(b.status, 0, "%s", b.err);
  cr_expect(strstr(b.out, "6 points (6 ok, 0 failed, 3 run now)"), "%s", b.out);
  cr_expect(!strstr(b.err, "not done yet"), "%s", b.err);
  char *lc = g_build_filename(dir, "local", "sweep.csv", NULL), *want = table_core(lc), *got = table_core(partial);
  cr_expect_str_eq(got, want, "the shards' table differs from the local one");
  /* a rerun of either shard runs nothing */
  Proc c = RUN_IN(dir, "sweep", q, GRID, "--out", "sh", "--shard", "0/2");
  cr_expect(strstr(c.out, "6 points (6 ok, 0 failed, 0 run now)"), "%s", c.out);
  proc_clear(&l), proc_clear(&a), proc_clear(&b), proc_clear(&c);
  g_free(partial), g_free(pc), g_free(pts), g_free(lc), g_free(want), g_free(got);
  rm_rf(dir);
  g_free(dir), g_free(q);
}

Test(sweep, mpi_ranks_at_once_share_the_points) {
  /* Three processes started together as an MPI launcher starts them (rank
  ** and size in the environment): every point runs once, in one shard, and
  ** the last to finish leaves the whole table. */
  char *dir = tmpdir(), *q = quickstart(), *bin = fabsim_bin();
  GPid pid[3];
  int out[3], err[3];
  for (int r = 0; r < 3; r++) {
    char **env = g_get_environ(), *rs = g_strdup_printf("%d", r);
    env = g_environ_setenv(env, "OMPI_COMM_WORLD_RANK", rs, TRUE);
    env = g_environ_setenv(env, "OMPI_COMM_WORLD_SIZE", "3", TRUE);
    env = g_environ_setenv(env, "OMPI_COMM_WORLD_LOCAL_SIZE", "3", TRUE);
    const char *argv[] = {bin, "sweep", q, GRID, "--out", "mpi", NULL};
    GError *e = NULL;
    cr_assert(g_spawn_async_with_pipes(dir, (char **)argv, env, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid[r], NULL,
                                       &out[r], &err[r], &e), "%s", e ? e->message : "?");
    g_strfreev(env);
    g_free(rs);
  }
  int ran = 0;
  for (int r = 0; r < 3; r++) {
    GString *o = g_string_new(NULL), *x = g_string_new(NULL);
    char buf[4096];
    ssize_t n;
    while ((n = read(err[r], buf, sizeof buf)) > 0) g_string_append_len(x, buf, n); /* children's stderr is short */
    while ((n = read(out[r], buf, sizeof buf)) > 0) g_string_append_len(o, buf, n);
    close(out[r]), close(err[r]);
    int st = 0;
    waitpid(pid[r], &st, 0);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank %d: %s", r, x->str);
    char *want = g_strdup_printf("shard %d of 3 (from OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE)", r);
    cr_expect(strstr(x->str, want), "rank %d: %s", r, x->str);
    const char *nowp = strstr(o->str, "failed, ");
    cr_assert(nowp, "rank %d: %s", r, o->str);
    ran += atoi(nowp + 8);
    g_free(want);
    g_string_free(o, TRUE), g_string_free(x, TRUE);
  }
  cr_expect_eq(ran, 6, "the ranks ran %d points in all", ran);
  char *csv = g_build_filename(dir, "mpi", "sweep.csv", NULL), *text = read_file(csv);
  char *pts = column(text, "point"), *st = column(text, "status");
  cr_expect_str_eq(pts, "0,1,2,3,4,5");
  cr_expect_str_eq(st, "ok,ok,ok,ok,ok,ok");
  char *h5 = g_build_filename(dir, "mpi", "sweep.h5", NULL), *hp = h5_points(h5);
  cr_expect_str_eq(hp, "0,1,2,3,4,5", "sweep.h5's rows");
  g_free(csv), g_free(text), g_free(pts), g_free(st), g_free(h5), g_free(hp);
  rm_rf(dir);
  g_free(dir), g_free(q), g_free(bin);
}

Test(sweep, shards_extend_a_sweep_with_the_same_numbers) {
  /* A local sweep of two values, extended by two shards with two more: the
  ** new points are 2 and 3 in both shards, and the table has all four. */
  char *dir = tmpdir(), *q = quickstart();
  Proc a = RUN_IN(dir, "sweep", q, "--set", "fabric.switch.buffer=1MiB,4MiB", "--out", "o", "--jobs", "2");
  cr_assert_eq(a.status, 0, "%s", a.err);
  Proc b = RUN_IN(dir, "sweep", q, "--set", "fabric.switch.buffer=1MiB,4MiB,16MiB,64MiB", "--out", "o", "--shard",
                  "1/2");
  cr_assert_eq(b.status, 0, "%s", b.err);
  cr_expect(strstr(b.out, "(3 ok, 0 failed, 1 run now)"), "%s", b.out);
  Proc c = RUN_IN(dir, "sweep", q, "--set", "fabric.switch.buffer=1MiB,4MiB,16MiB,64MiB", "--out", "o", "--shard",
                  "0/2");
  cr_assert_eq(c.status, 0, "%s", c.err);
  cr_expect(strstr(c.out, "(4 ok, 0 failed, 1 run now)"), "%s", c.out);
  char *csv = g_build_filename(dir, "o", "sweep.csv", NULL), *text = read_file(csv);
  char *bufs = column(text, "fabric.switch.buffer"), *pts = column(text, "point");
  cr_expect_str_eq(bufs, "1MiB,4MiB,16MiB,64MiB");
  cr_expect_str_eq(pts, "0,1,2,3");
  proc_clear(&a), proc_clear(&b), proc_clear(&c);
  g_free(csv), g_free(text), g_free(bufs), g_free(pts);
  rm_rf(dir);
  g_free(dir), g_free(q);
}

Test(sweep, bad_shards_exit_2_and_write_nothing) {
  char *dir = tmpdir(), *q = quickstart();
  const char *bad[] = {"2/2", "1", "x/2", "0/0", "-1/2", "1/2/3", "0/", "/2"};
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    Proc p = RUN_IN(dir, "sweep", q, GRID, "--out", "o", "--shard", bad[i]);
    cr_expect_eq(p.status, 2, "--shard %s: exit %d", bad[i], p.status);
    char *want = g_strdup_printf("--shard '%s': expected I/N", bad[i]);
    cr_expect(strstr(p.err, want), "--shard %s: %s", bad[i], p.err);
    g_free(want);
    proc_clear(&p);
  }
  g_setenv("PMI_RANK", "3", TRUE);
  g_setenv("PMI_SIZE", "2", TRUE);
  Proc p = RUN_IN(dir, "sweep", q, GRID, "--out", "o");
  cr_expect_eq(p.status, 2);
  cr_expect(strstr(p.err, "PMI_RANK/PMI_SIZE is '3/2': expected a rank below a size"), "%s", p.err);
  proc_clear(&p);
  cr_expect_eq(n_entries(dir), 0, "something was written");
  rm_rf(dir);
  g_free(dir), g_free(q);
}

/* Run argv (NULL-terminated, with argv[0]) in cwd: its exit status, stdout in *out. */
static int run_plain(const char *cwd, const char *const *argv, char **out) {
  int ws = 0;
  GError *e = NULL;
  char *err = NULL;
  gboolean ok = g_spawn_sync(cwd, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, out, &err, &ws, &e);
  cr_assert(ok, "cannot run %s: %s", argv[0], e ? e->message : "?");
  g_free(err);
  return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

Test(sweep, running_points_show_where_they_are) {
  char *dir = tmpdir(), *sc = quickstart(), *bin = fabsim_bin(), *out = NULL;
  /* a run's progress records on the descriptor it is given: the last says every flow is done */
  char *cmd = g_strdup_printf("'%s' run '%s' --json --progress-fd 3 3>progress.txt", bin, sc);
  cr_assert_eq(run_plain(dir, (const char *const[]){"sh", "-c", cmd, NULL}, &out), 0, "%s", cmd);
  g_free(cmd), g_free(out);
  char *path = g_build_filename(dir, "progress.txt", NULL), *rec = read_file(path);
  gchar **lines = g_strsplit(g_strchomp(rec), "\n", -1);
  guint n = g_strv_length(lines);
  cr_assert_geq(n, 1, "no progress record");
  double ms;
  unsigned done, known;
  unsigned long long events;
  for (guint i = 0; i < n; i++)
    cr_assert_eq(sscanf(lines[i], "PROGRESS %lf %u %u %llu", &ms, &done, &known, &events), 4, "%s", lines[i]);
  cr_assert(done == known && known > 0 && events > 0 && ms > 0, "the last record: %s", lines[n - 1]);
  g_strfreev(lines), g_free(rec), g_free(path);
  /* a descriptor that is not open: a usage error */
  Proc p = RUN_IN(dir, "run", sc, "--progress-fd", "9");
  cr_assert_eq(p.status, 2);
  cr_assert(strstr(p.err, "--progress-fd 9: not an open file descriptor"), "%s", p.err);
  proc_clear(&p);
  /* on a terminal (script(1) gives the sweep one), the sweep's line names its running points */
  cmd = g_strdup_printf("'%s' sweep '%s' --set workload.size=64KiB,128KiB --out o --jobs 1", bin, sc);
  cr_assert_eq(run_plain(dir, (const char *const[]){"script", "-qfec", cmd, "/dev/null", NULL}, &out), 0, "%s", cmd);
  cr_assert(strstr(out, "point 0: ") && strstr(out, "point 1: ") && strstr(out, " ms simulated, flows "),
            "the sweep's terminal:\n%s", out);
  cr_assert(strstr(out, "2/2 points"), "%s", out);
  g_free(cmd), g_free(out);
  rm_rf(dir);
  g_free(dir), g_free(sc), g_free(bin);
}

/* The fabsim command line, run as a subprocess: bad scenarios (tests/bad),
** bad usage, help and version, the built-in quickstart, determinism, the JSON
** summary's fields, validate, the HDF5 file's all-or-nothing writing and the
** human report. See README.md ("Scenario format", "Command line", "Outputs") for the contract being tested.
**
** Environment: FABSIM is the fabsim binary (default build/fabsim), FABSIM_SRC
** the repository root (default .); meson test sets both.
**
** tests/bad/NN-name.yaml: each a small scenario with exactly one error. Its
** first line is
**   # expect: LINE:COL SUBSTRING
** meaning stderr must contain "FILE:LINE:COL: SUBSTRING" where FILE is the
** path passed on the command line (SUBSTRING is the rest of the line and
** starts with the key path). When the error is in an included fragment, the
** location is PATH:LINE:COL with PATH relative to the bad file's directory.
** Following lines "# also: TEXT" name more text stderr must contain; {FILE}
** and {DIR} in it stand for the file as passed and its directory. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIN_BAD_FILES 81

static const char *fabsim_bin(void) {
  const char *s = getenv("FABSIM");
  return s && *s ? s : "build/fabsim";
}

static const char *src_dir(void) {
  const char *s = getenv("FABSIM_SRC");
  return s && *s ? s : ".";
}

/* A path under the source root; g_free it. */
static char *src_path(const char *rel) {
  return g_build_filename(src_dir(), rel, NULL);
}

typedef struct Proc {
  int status; /* exit status, or -1 if the process did not exit normally */
  char *out, *err;
  char *cmd;  /* the command line, for messages */
} Proc;

static void proc_clear(Proc *p) {
  g_free(p->out);
  g_free(p->err);
  g_free(p->cmd);
  memset(p, 0, sizeof *p);
}

/* Run fabsim with the given NULL-terminated argv (without argv[0]). */
static Proc run_argv(const char *const *args) {
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (char *)fabsim_bin());
  for (int i = 0; args[i]; i++) g_ptr_array_add(argv, (char *)args[i]);
  g_ptr_array_add(argv, NULL);
  Proc p = {0};
  p.cmd = g_strjoinv(" ", (char **)argv->pdata);
  int wait_status = 0;
  GError *e = NULL;
  gboolean ok = g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, &p.out, &p.err,
                             &wait_status, &e);
  cr_assert(ok, "cannot run %s: %s", p.cmd, e ? e->message : "?");
  g_ptr_array_free(argv, TRUE);
  p.status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  if (!WIFEXITED(wait_status))
    cr_log_error("%s: did not exit normally (wait status %d); stderr:\n%s", p.cmd, wait_status, p.err);
  return p;
}

#define RUN(...) run_argv((const char *const[]){__VA_ARGS__, NULL})

/* What a bad input may cost: the CPU time and the peak memory of refusing it.
** Generous for loaded machines; not checked under valgrind (its own
** overhead) and the memory not under ASan (its shadow memory). */
#define BAD_MAX_SECONDS 10.0
#define BAD_MAX_RSS_KB (300 * 1024)

static const char *read_all(int fd, GString *into) {
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) g_string_append_len(into, buf, n);
  close(fd);
  return into->str;
}

/* Run fabsim with args in the directory `cwd`, measuring its CPU time
** (seconds, user + system: what it cost, not how long it waited for a core
** on a loaded machine) and peak resident memory (KiB). A child that takes a
** minute of wall time has hung. */
static Proc run_measured(const char *cwd, const char *const *args, double *secs, long *rss_kb) {
  GPtrArray *argv = g_ptr_array_new();
  char *bin = g_canonicalize_filename(fabsim_bin(), NULL);
  g_ptr_array_add(argv, bin);
  for (int i = 0; args[i]; i++) g_ptr_array_add(argv, (char *)args[i]);
  g_ptr_array_add(argv, NULL);
  Proc p = {0};
  p.cmd = g_strjoinv(" ", (char **)argv->pdata);
  GPid pid;
  int fo = -1, fe = -1;
  GError *e = NULL;
  gint64 t0 = g_get_monotonic_time();
  gboolean ok = g_spawn_async_with_pipes(cwd, (char **)argv->pdata, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid,
                                         NULL, &fo, &fe, &e);
  cr_assert(ok, "cannot run %s: %s", p.cmd, e ? e->message : "?");
  GString *out = g_string_new(NULL), *err = g_string_new(NULL);
  read_all(fo, out); /* the error is one line, and stdout should be empty: neither fills a pipe */
  read_all(fe, err);
  int status = 0;
  struct rusage ru;
  cr_assert_eq(wait4(pid, &status, 0, &ru), pid);
  cr_assert_lt(g_get_monotonic_time() - t0, 60 * G_USEC_PER_SEC, "%s: a minute of wall time", p.cmd);
  *secs = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
          ru.ru_stime.tv_usec / 1e6;
  *rss_kb = ru.ru_maxrss;
  g_spawn_close_pid(pid);
  p.out = g_string_free(out, FALSE);
  p.err = g_string_free(err, FALSE);
  p.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  g_ptr_array_free(argv, TRUE);
  g_free(bin);
  return p;
}

static gboolean under_valgrind(void) {
  const char *v = getenv("FABSIM_VALGRIND");
  return v && *v && strcmp(v, "0");
}

static gboolean under_asan(void) {
#if defined(__SANITIZE_ADDRESS__)
  return TRUE;
#else
  return FALSE;
#endif
}

/* Nothing in dir: a bad input leaves no file behind. */
static void expect_empty_dir(const char *dir, const char *what) {
  GDir *d = g_dir_open(dir, 0, NULL);
  cr_assert_not_null(d);
  const char *n = g_dir_read_name(d);
  cr_expect_null(n, "%s left '%s' behind in its working directory", what, n ? n : "");
  g_dir_close(d);
}

/* The JSON summary with the wall-clock dependent fields blanked. */
static char *stable_json(const char *js) {
  GRegex *re = g_regex_new("\"(wall_s|events_per_s|packet_hops_per_s)\": [0-9.eE+-]+", 0, 0, NULL);
  char *out = g_regex_replace(re, js, -1, 0, "\"\\1\": X", 0, NULL);
  g_regex_unref(re);
  return out;
}

/* The text of the value of "key" (up to the next ',' or '}'), or NULL. */
static char *json_field(const char *js, const char *key) {
  char *pat = g_strdup_printf("\"%s\": ([^,}]+)", key);
  GRegex *re = g_regex_new(pat, 0, 0, NULL);
  GMatchInfo *mi = NULL;
  char *v = NULL;
  if (g_regex_match(re, js, 0, &mi)) v = g_match_info_fetch(mi, 1);
  g_match_info_free(mi);
  g_regex_unref(re);
  g_free(pat);
  return v;
}

/* Bad input or usage: exit 2, nothing on stdout, something on stderr. */
static void expect_usage_error(const Proc *p) {
  cr_expect_eq(p->status, 2, "%s: exit status %d, expected 2; stderr:\n%s", p->cmd, p->status, p->err);
  cr_expect_str_empty(p->out, "%s: expected nothing on stdout, got:\n%s\nstderr:\n%s", p->cmd, p->out, p->err);
  cr_expect_str_not_empty(p->err, "%s: expected an error message on stderr", p->cmd);
}

static void expect_err_has(const Proc *p, const char *what) {
  cr_expect(strstr(p->err, what) != NULL, "%s: stderr should contain \"%s\"; it is:\n%s", p->cmd, what, p->err);
}

/* `fabsim CMD --help`'s text (stdout), checked to have exited 0 with nothing on stderr. */
static char *help_of(const char *cmd) {
  const char *const args[] = {cmd, "--help", NULL};
  Proc p = run_argv(args);
  cr_assert_eq(p.status, 0, "%s: exit status %d; stderr:\n%s", p.cmd, p.status, p.err);
  cr_assert_str_empty(p.err, "%s: stderr:\n%s", p.cmd, p.err);
  char *out = p.out;
  p.out = NULL;
  proc_clear(&p);
  return out;
}

/* A usage error of the one argument parser: "fabsim CMD: message", a blank
** line, then the command's usage, the same text as its --help. */
static void expect_usage_of(const Proc *p, const char *cmd, const char *message) {
  expect_usage_error(p);
  char *head = g_strdup_printf("fabsim %s: %s\n\n", cmd, message);
  cr_expect(g_str_has_prefix(p->err, head), "%s: stderr should start with \"%s\"; it is:\n%s", p->cmd, head, p->err);
  if (g_str_has_prefix(p->err, head)) {
    char *help = help_of(cmd);
    cr_expect_str_eq(p->err + strlen(head), help, "%s: the usage after the message is not the --help text", p->cmd);
    g_free(help);
  }
  g_free(head);
}

/* g_ptr_array_sort comparator for char* elements */
static gint cmp_str(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- 1. bad scenarios --------------------------------------------------- */

typedef struct Expect {
  char *where;       /* "FILE:LINE:COL: " as fabsim should print it */
  char *substr;
  GPtrArray *also;   /* char* */
} Expect;

static char *subst(const char *s, const char *file, const char *dir) {
  char *a = NULL, *b = NULL;
  GRegex *rf = g_regex_new("\\{FILE\\}", 0, 0, NULL), *rd = g_regex_new("\\{DIR\\}", 0, 0, NULL);
  a = g_regex_replace_literal(rf, s, -1, 0, file, 0, NULL);
  b = g_regex_replace_literal(rd, a, -1, 0, dir, 0, NULL);
  g_regex_unref(rf);
  g_regex_unref(rd);
  g_free(a);
  return b;
}

/* Parse the "# TAG: LINE:COL SUBSTRING" and "# also:" header of a bad
** (expect) or warning (warns) file. FALSE if absent. */
static gboolean read_header(const char *file, const char *tag, Expect *ex) {
  char *text = NULL;
  GError *e = NULL;
  cr_assert(g_file_get_contents(file, &text, NULL, &e), "cannot read %s: %s", file, e ? e->message : "?");
  char **lines = g_strsplit(text, "\n", -1);
  g_free(text);
  gboolean ok = FALSE;
  char *dir = g_path_get_dirname(file);
  memset(ex, 0, sizeof *ex);
  ex->also = g_ptr_array_new_with_free_func(g_free);
  char *pat = g_strdup_printf("^# %s: (?:(\\S+):)?([0-9]+):([0-9]+) (.+)$", tag);
  GRegex *re = g_regex_new(pat, 0, 0, NULL);
  g_free(pat);
  GMatchInfo *mi = NULL;
  if (lines[0] && g_regex_match(re, lines[0], 0, &mi)) {
    char *rel = g_match_info_fetch(mi, 1), *line = g_match_info_fetch(mi, 2), *col = g_match_info_fetch(mi, 3);
    char *at = rel && *rel ? g_strdup_printf("%s/%s", dir, rel) : g_strdup(file);
    ex->where = g_strdup_printf("%s:%s:%s: ", at, line, col);
    ex->substr = g_match_info_fetch(mi, 4);
    g_free(at);
    g_free(rel);
    g_free(line);
    g_free(col);
    ok = TRUE;
    for (int i = 1; lines[i] && g_str_has_prefix(lines[i], "# also: "); i++)
      g_ptr_array_add(ex->also, subst(lines[i] + strlen("# also: "), file, dir));
  }
  g_match_info_free(mi);
  g_regex_unref(re);
  g_strfreev(lines);
  g_free(dir);
  return ok;
}

static gboolean read_expect(const char *file, Expect *ex) { return read_header(file, "expect", ex); }

static void expect_clear(Expect *ex) {
  g_free(ex->where);
  g_free(ex->substr);
  if (ex->also) g_ptr_array_free(ex->also, TRUE);
}

/* The sorted paths of the .yaml files in tests/bad (or another folder). */
static GPtrArray *yaml_files(const char *rel) {
  char *dir = src_path(rel);
  GError *e = NULL;
  GDir *d = g_dir_open(dir, 0, &e);
  cr_assert_not_null(d, "cannot open %s: %s", dir, e ? e->message : "?");
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  const char *n;
  while ((n = g_dir_read_name(d)))
    if (g_str_has_suffix(n, ".yaml")) g_ptr_array_add(names, g_strdup(n));
  g_dir_close(d);
  g_ptr_array_sort(names, cmp_str);
  GPtrArray *paths = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < names->len; i++)
    g_ptr_array_add(paths, g_build_filename(dir, (char *)names->pdata[i], NULL));
  g_ptr_array_free(names, TRUE);
  g_free(dir);
  return paths;
}

static GPtrArray *bad_files(void) { return yaml_files("tests/bad"); }

static void check_bad(const char *file, const Expect *ex, const Proc *p) {
  expect_usage_error(p);
  char *want = g_strconcat(ex->where, ex->substr, NULL);
  cr_expect(strstr(p->err, want) != NULL, "%s: stderr should contain\n  %s\nit is:\n  %s", p->cmd, want, p->err);
  g_free(want);
  for (guint i = 0; i < ex->also->len; i++) expect_err_has(p, ex->also->pdata[i]);
  /* one error, one line: "fabsim: WHERE: PATH: message\n" */
  cr_expect(g_str_has_prefix(p->err, "fabsim: "), "%s: stderr should start with 'fabsim: ': %s", p->cmd, p->err);
  size_t len = strlen(p->err);
  cr_expect(len > 0 && p->err[len - 1] == '\n' && strchr(p->err, '\n') == p->err + len - 1,
            "%s: the error should be exactly one line; stderr:\n%s", p->cmd, p->err);
  (void)file;
}

Test(cli, bad_scenarios) {
  GPtrArray *files = bad_files();
  cr_assert_geq(files->len, MIN_BAD_FILES, "only %u files in tests/bad, expected at least %d", files->len,
                MIN_BAD_FILES);
  for (guint i = 0; i < files->len; i++) {
    const char *file = files->pdata[i];
    Expect ex;
    cr_expect(read_expect(file, &ex), "%s: the first line must be '# expect: LINE:COL SUBSTRING'", file);
    if (!ex.where) {
      expect_clear(&ex);
      continue;
    }
    char *work = g_dir_make_tmp("fabsim-bad-XXXXXX", NULL); /* the working directory: must stay empty */
    double secs = 0;
    long rss = 0;
    Proc v = run_measured(work, (const char *const[]){"validate", file, NULL}, &secs, &rss);
    check_bad(file, &ex, &v);
    Proc r = run_measured(work, (const char *const[]){"run", file, "--json", NULL}, &secs, &rss);
    check_bad(file, &ex, &r);
    if (!under_valgrind()) {
      cr_expect_leq(secs, BAD_MAX_SECONDS, "%s: refusing it took %.2f s", file, secs);
      if (!under_asan()) cr_expect_leq(rss, BAD_MAX_RSS_KB, "%s: refusing it took %ld KiB of memory", file, rss);
    }
    expect_empty_dir(work, file);
    g_rmdir(work);
    g_free(work);
    /* run and validate report the same error */
    cr_expect_str_eq(r.err, v.err, "%s: run and validate disagree:\n  run:      %s  validate: %s", file, r.err,
                     v.err);
    proc_clear(&v);
    proc_clear(&r);
    expect_clear(&ex);
  }
  g_ptr_array_free(files, TRUE);
}

/* tests/warn/NN-name.yaml: a setting with no effect under the file's other
** choices (ECN with no ECN-capable sender, DCQCN's parameters under
** algorithm: none, ...) is accepted with a warning, so that one knob of an
** A/B comparison can be changed alone. The first line is
**   # warns: LINE:COL SUBSTRING
** ("# also:" lines as in tests/bad). validate and run succeed; the warning
** is on stderr ("fabsim: warning: FILE:LINE:COL: SUBSTRING"), in the JSON
** summary's warnings and in validate --explain. */
Test(cli, no_effect_settings_warn) {
  GPtrArray *files = yaml_files("tests/warn");
  cr_assert_geq(files->len, 6, "only %u files in tests/warn", files->len);
  for (guint i = 0; i < files->len; i++) {
    const char *file = files->pdata[i];
    Expect ex;
    cr_assert(read_header(file, "warns", &ex), "%s: the first line must be '# warns: LINE:COL SUBSTRING'", file);
    char *want = g_strconcat(ex.where, ex.substr, NULL);
    char *line = g_strconcat("fabsim: warning: ", want, NULL);
    Proc v = RUN("validate", file);
    cr_expect_eq(v.status, 0, "%s: exit status %d; stderr:\n%s", v.cmd, v.status, v.err);
    expect_err_has(&v, line);
    for (guint k = 0; k < ex.also->len; k++) expect_err_has(&v, ex.also->pdata[k]);
    Proc x = RUN("validate", "--explain", file);
    cr_expect(strstr(x.out, want) != NULL, "%s: --explain should list\n  %s\nit printed:\n%s", x.cmd, want, x.out);
    Proc r = RUN("run", file, "--json", "--no-progress");
    cr_expect_eq(r.status, 0, "%s: exit status %d; stderr:\n%s", r.cmd, r.status, r.err);
    const char *w = strstr(r.out, "\"warnings\": [");
    cr_expect(w && strstr(w, want), "%s: the JSON warnings should hold\n  %s\nstdout:\n%s", r.cmd, want, r.out);
    proc_clear(&v);
    proc_clear(&x);
    proc_clear(&r);
    g_free(line);
    g_free(want);
    expect_clear(&ex);
  }
  g_ptr_array_free(files, TRUE);
}

/* The include-cycle fixtures are there and a cycle among them is found from
** either end. */
Test(cli, include_cycle_fixtures) {
  char *a = src_path("tests/data/cli/cycle-a.yaml");
  char *b = src_path("tests/data/cli/cycle-b.yaml");
  Proc p = RUN("validate", a);
  expect_usage_error(&p);
  expect_err_has(&p, "include cycle");
  expect_err_has(&p, "cycle-b.yaml");
  proc_clear(&p);
  p = RUN("validate", b);
  expect_usage_error(&p);
  expect_err_has(&p, "include cycle");
  expect_err_has(&p, "cycle-a.yaml");
  proc_clear(&p);
  g_free(a);
  g_free(b);
}

/* ---- 2. bad usage ------------------------------------------------------- */

Test(cli, no_command) {
  Proc p = run_argv((const char *const[]){NULL});
  expect_usage_error(&p);
  expect_err_has(&p, "no command");
  expect_err_has(&p, "usage: fabsim");
  proc_clear(&p);
}

Test(cli, unknown_command) {
  Proc p = RUN("frobnicate");
  expect_usage_error(&p);
  expect_err_has(&p, "unknown command 'frobnicate'");
  proc_clear(&p);
}

Test(cli, unknown_option) {
  char *q = src_path("scenarios/quickstart.yaml");
  Proc p = RUN("run", q, "--frob");
  expect_usage_error(&p);
  expect_err_has(&p, "unknown option '--frob'");
  expect_usage_of(&p, "run", "unknown option '--frob'");
  proc_clear(&p);
  p = RUN("validate", "--frob", q);
  expect_usage_error(&p);
  expect_err_has(&p, "unknown option '--frob'");
  expect_usage_of(&p, "validate", "unknown option '--frob'");
  proc_clear(&p);
  g_free(q);
}

Test(cli, set_without_equals) {
  char *q = src_path("scenarios/quickstart.yaml");
  Proc p = RUN("run", q, "--set", "fabric.link.bandwidth");
  expect_usage_error(&p);
  expect_err_has(&p, "--set fabric.link.bandwidth: expected KEY=VALUE");
  expect_usage_of(&p, "run", "--set fabric.link.bandwidth: expected KEY=VALUE");
  proc_clear(&p);
  p = RUN("run", q, "--set");
  expect_usage_error(&p);
  expect_err_has(&p, "--set needs KEY=VALUE");
  expect_usage_of(&p, "run", "--set needs KEY=VALUE");
  proc_clear(&p);
  g_free(q);
}

Test(cli, bad_seed) {
  char *q = src_path("scenarios/quickstart.yaml");
  Proc p = RUN("run", q, "--seed", "abc");
  expect_usage_error(&p);
  expect_err_has(&p, "--seed abc");
  expect_err_has(&p, "non-negative integer");
  expect_usage_of(&p, "run", "--seed abc: expected a non-negative integer");
  proc_clear(&p);
  p = RUN("run", q, "--seed", "-1");
  expect_usage_error(&p);
  expect_err_has(&p, "--seed -1");
  proc_clear(&p);
  p = RUN("run", q, "--seed");
  expect_usage_error(&p);
  expect_err_has(&p, "--seed needs a number");
  expect_usage_of(&p, "run", "--seed needs a number");
  proc_clear(&p);
  p = RUN("validate", q, "--seed", "1x");
  expect_usage_of(&p, "validate", "--seed 1x: expected a non-negative integer");
  proc_clear(&p);
  g_free(q);
}

Test(cli, two_scenarios) {
  char *q = src_path("scenarios/quickstart.yaml");
  char *i = src_path("scenarios/incast.yaml");
  Proc p = RUN("run", q, i);
  expect_usage_error(&p);
  expect_err_has(&p, "more than one scenario");
  expect_err_has(&p, i);
  char *msg = g_strdup_printf("more than one scenario given ('%s' and '%s')", q, i);
  expect_usage_of(&p, "run", msg);
  g_free(msg);
  proc_clear(&p);
  p = RUN("validate", q, i);
  expect_usage_error(&p);
  expect_err_has(&p, "more than one scenario");
  proc_clear(&p);
  g_free(q);
  g_free(i);
}

Test(cli, run_under_an_unknown_launcher_is_refused) {
  /* A launcher's variables say 2 ranks, but MPI (or a fabsim built without
  ** it) sees one process: each rank would run the whole scenario. That is a
  ** usage error naming the variable, with nothing on stdout. A world of one
  ** is a plain run. (mpirun itself: tests/test_mpi.py.) MPI starts here (a
  ** world of one): Open MPI's start-up leaks, in plugins it unloads, are not
  ** fabsim's, so a sanitizer build does not look for leaks in these runs. */
  char *asan = g_strdup(g_getenv("ASAN_OPTIONS"));
  g_setenv("ASAN_OPTIONS", "halt_on_error=1:abort_on_error=1:detect_leaks=0", TRUE);
  g_setenv("OMPI_COMM_WORLD_SIZE", "2", TRUE);
  g_setenv("OMPI_COMM_WORLD_RANK", "1", TRUE);
  Proc p = RUN("run", "--json");
  expect_usage_error(&p);
  expect_err_has(&p, "one of 2 MPI ranks (OMPI_COMM_WORLD_SIZE)");
  expect_err_has(&p, "fabsim sweep");
  expect_err_has(&p, "--partition N");
  cr_expect_str_empty(p.out, "stdout: %s", p.out);
  proc_clear(&p);
  g_unsetenv("OMPI_COMM_WORLD_SIZE");
  g_unsetenv("OMPI_COMM_WORLD_RANK");
  g_setenv("PMI_SIZE", "4", TRUE);
  p = RUN("run");
  expect_usage_error(&p);
  expect_err_has(&p, "one of 4 MPI ranks (PMI_SIZE)");
  proc_clear(&p);
  g_setenv("PMI_SIZE", "1", TRUE);
  p = RUN("run", "--json");
  cr_expect_eq(p.status, 0, "%s: exit %d, stderr:\n%s", p.cmd, p.status, p.err);
  proc_clear(&p);
  g_unsetenv("PMI_SIZE");
  if (asan) g_setenv("ASAN_OPTIONS", asan, TRUE);
  else g_unsetenv("ASAN_OPTIONS");
  g_free(asan);
}

Test(cli, validate_partition) {
  /* the quickstart (4 leaves of 8 hosts, 8 spines) cut in two: a leaf group
  ** pair and 4 spines each, 8 x 2 leaf-spine links cut; too many ranks, or
  ** none, is a usage error with nothing on stdout */
  char *q = src_path("scenarios/quickstart.yaml");
  Proc p = RUN("validate", q, "--partition", "2");
  cr_expect_eq(p.status, 0, "%s: exit %d, stderr:\n%s", p.cmd, p.status, p.err);
  cr_expect(g_str_has_prefix(p.out, "partition: 2 ranks; 32 parts that may not be split (NVLink domains and nodes "
                                    "whole) in 4 leaf groups, cut between them\n"), "%s", p.out);
  cr_expect(strstr(p.out, "   1         16         6     64  50.0%  16-31\n") != NULL, "%s", p.out);
  cr_expect(strstr(p.out, "cut: 16 links; lookahead 1.000 us") != NULL, "%s", p.out);
  cr_expect(strstr(p.out, "\nthreads: `fabsim run --threads 2` runs on this cut, a thread per rank\n"
                           "processes: `mpirun -np 2 fabsim run` runs on this cut, a process per rank\n") != NULL,
            "%s", p.out);
  proc_clear(&p);
  p = RUN("validate", q, "--partition", "33");
  expect_usage_error(&p);
  expect_err_has(&p, "--partition 33: the fabric has 32 parts that may not be split");
  proc_clear(&p);
  p = RUN("validate", q, "--partition", "0");
  expect_usage_of(&p, "validate", "--partition 0: expected a number of ranks from 1 to 65536");
  proc_clear(&p);
  g_free(q);
  /* a training step with pipeline stages (tp 8, pp 2, dp 2 on 4 nodes: node = dp_i + 2 pp_i) is cut by
  ** replica: nodes 0 and 2 (replica 0's two stages), 1 and 3 */
  char *t = src_path("scenarios/training-dgx-h100.yaml");
  p = RUN("validate", t, "--partition", "2");
  cr_expect_eq(p.status, 0, "%s: exit %d, stderr:\n%s", p.cmd, p.status, p.err);
  cr_expect(strstr(p.out, "\norder: by data-parallel replica of training job 'training' (each rank a share of "
                          "every pipeline stage), cut between replicas\n") != NULL, "%s", p.out);
  cr_expect(strstr(p.out, "   0         16         8    160  50.0%  0-7,16-23\n") != NULL, "%s", p.out);
  proc_clear(&p);
  g_free(t);
}

/* run --threads N: the quickstart (a permutation) on two threads prints the
** JSON of one, wall fields aside; 0 threads is a usage error. */
Test(cli, run_threads) {
  char *q = src_path("scenarios/quickstart.yaml");
  Proc a = RUN("run", q, "--json"), b = RUN("run", q, "--json", "--threads", "2");
  cr_assert_eq(a.status, 0, "%s: %s", a.cmd, a.err);
  cr_assert_eq(b.status, 0, "%s: %s", b.cmd, b.err);
  cr_expect_str_empty(b.err, "%s: the quickstart splits, so nothing to say: %s", b.cmd, b.err);
  char *x = stable_json(a.out), *y = stable_json(b.out);
  cr_expect_str_eq(x, y);
  g_free(x);
  g_free(y);
  proc_clear(&a);
  proc_clear(&b);
  a = RUN("run", q, "--threads", "0");
  expect_usage_of(&a, "run", "--threads 0: expected a number of threads from 1 to 255");
  proc_clear(&a);
  g_free(q);
}

Test(cli, missing_scenario_file) {
  char *m = src_path("tests/data/cli/does-not-exist.yaml");
  Proc p = RUN("run", m, "--json");
  expect_usage_error(&p);
  expect_err_has(&p, m);
  expect_err_has(&p, "cannot read scenario");
  proc_clear(&p);
  p = RUN("validate", m);
  expect_usage_error(&p);
  expect_err_has(&p, m);
  expect_err_has(&p, "cannot read scenario");
  proc_clear(&p);
  g_free(m);
}

Test(cli, validate_without_file) {
  Proc p = RUN("validate");
  expect_usage_error(&p);
  expect_err_has(&p, "validate needs a SCENARIO");
  expect_err_has(&p, "usage: fabsim validate");
  expect_usage_of(&p, "validate", "validate needs a SCENARIO file");
  proc_clear(&p);
}

Test(cli, set_unknown_key) {
  char *q = src_path("scenarios/quickstart.yaml");
  Proc p = RUN("validate", q, "--set", "fabric.link.bandwith=1Gbps");
  expect_usage_error(&p);
  expect_err_has(&p, "--set:1:");
  expect_err_has(&p, "fabric.link.bandwith: unknown key 'bandwith'");
  expect_err_has(&p, "did you mean 'bandwidth'?");
  proc_clear(&p);
  p = RUN("run", q, "--json", "--set", "fabric.link.bandwith=1Gbps");
  expect_usage_error(&p);
  expect_err_has(&p, "--set:1:");
  expect_err_has(&p, "fabric.link.bandwith: unknown key 'bandwith'");
  proc_clear(&p);
  g_free(q);
}

Test(cli, set_bad_value) {
  char *q = src_path("scenarios/quickstart.yaml");
  /* the value starts at column 23 of "fabric.link.bandwidth=fast" */
  Proc p = RUN("run", q, "--json", "--set", "fabric.link.bandwidth=fast");
  expect_usage_error(&p);
  expect_err_has(&p, "--set:1:23: fabric.link.bandwidth: 'fast' is not a rate");
  proc_clear(&p);
  p = RUN("validate", q, "--set=fabric.link.bandwidth=fast");
  expect_usage_error(&p);
  expect_err_has(&p, "--set:1:23: fabric.link.bandwidth: 'fast' is not a rate");
  proc_clear(&p);
  g_free(q);
}

/* ---- 3. help and version ------------------------------------------------ */

static void expect_help(const char *const *args, const char *prefix) {
  Proc p = run_argv(args);
  cr_expect_eq(p.status, 0, "%s: exit status %d, expected 0; stderr:\n%s", p.cmd, p.status, p.err);
  cr_expect(g_str_has_prefix(p.out, prefix), "%s: stdout should start with \"%s\"; it is:\n%s", p.cmd, prefix,
            p.out);
  cr_expect_str_empty(p.err, "%s: nothing expected on stderr, got:\n%s", p.cmd, p.err);
  proc_clear(&p);
}

Test(cli, help) {
  expect_help((const char *const[]){"--help", NULL}, "usage: fabsim COMMAND");
  expect_help((const char *const[]){"-h", NULL}, "usage: fabsim COMMAND");
  expect_help((const char *const[]){"run", "--help", NULL}, "usage: fabsim run [SCENARIO]");
  expect_help((const char *const[]){"validate", "--help", NULL}, "usage: fabsim validate SCENARIO");
}

/* Every subcommand's --help has the one layout (tools/args.h):
**   usage: fabsim CMD POSITIONALS [--opt VALUE]...
**   (blank line, a paragraph about the command, blank line)
**   options:
**     --opt VALUE        help
**     -h, --help         this help
** and every option listed under options: is on the usage line. */
Test(cli, help_layout_of_every_command) {
  static const char *const cmds[][2] = {
    {"run", "[SCENARIO]"}, {"validate", "SCENARIO"}, {"sweep", "SCENARIO"}, {"plot", "RESULT.h5"},
    {"compare", "SCENARIO MEASURED.log"},
  };
  for (size_t c = 0; c < G_N_ELEMENTS(cmds); c++) {
    const char *cmd = cmds[c][0];
    char *out = help_of(cmd);
    char *start = g_strdup_printf("usage: fabsim %s %s", cmd, cmds[c][1]);
    cr_expect(g_str_has_prefix(out, start), "fabsim %s --help should start with \"%s\":\n%s", cmd, start, out);
    g_free(start);
    char **lines = g_strsplit(out, "\n", -1);
    guint n = g_strv_length(lines);
    cr_assert_geq(n, 5, "fabsim %s --help:\n%s", cmd, out);
    cr_expect_str_empty(lines[1], "fabsim %s --help: a blank line after the usage line:\n%s", cmd, out);
    cr_expect_str_not_empty(lines[2], "fabsim %s --help: the paragraph about it:\n%s", cmd, out);
    guint at = 0;
    for (guint i = 0; i < n; i++)
      if (!strcmp(lines[i], "options:")) at = i;
    cr_assert_gt(at, 2, "fabsim %s --help has no \"options:\" line:\n%s", cmd, out);
    cr_expect_str_empty(lines[at - 1], "fabsim %s --help: a blank line before options:\n%s", cmd, out);
    gboolean help_line = FALSE;
    guint nopts = 0;
    for (guint i = at + 1; i < n && lines[i][0]; i++) {
      const char *l = lines[i];
      cr_expect(g_str_has_prefix(l, "  -"), "fabsim %s --help: option line \"%s\" is not indented by two", cmd, l);
      if (g_str_has_prefix(l, "  -h, --help ")) {
        help_line = TRUE;
        continue;
      }
      /* "  --opt METAVAR   help" or "  -j, --opt METAVAR   help": the long name is on the usage line */
      const char *name = strstr(l, "--");
      cr_assert_not_null(name, "fabsim %s --help: no long option in \"%s\"", cmd, l);
      char *opt = g_strndup(name, strcspn(name, " "));
      char *in_usage = g_strdup_printf("[%s", opt);
      cr_expect(strstr(lines[0], in_usage), "fabsim %s --help: %s is not on the usage line: %s", cmd, opt, lines[0]);
      g_free(in_usage);
      g_free(opt);
      nopts++;
    }
    cr_expect(help_line, "fabsim %s --help has no \"-h, --help\" line under options:\n%s", cmd, out);
    cr_expect_gt(nopts, 0, "fabsim %s --help lists no options:\n%s", cmd, out);
    cr_expect(strstr(out, "options:") && strstr(out, "-h, --help"), "fabsim %s --help:\n%s", cmd, out);
    /* -h is the same help */
    const char *const args[] = {cmd, "-h", NULL};
    Proc h = run_argv(args);
    cr_expect_eq(h.status, 0, "%s: exit %d", h.cmd, h.status);
    cr_expect_str_eq(h.out, out, "fabsim %s -h differs from --help", cmd);
    proc_clear(&h);
    /* and a usage error shows the same text after "fabsim CMD: message" */
    const char *const bad[] = {cmd, "--no-such-option", NULL};
    Proc u = run_argv(bad);
    expect_usage_of(&u, cmd, "unknown option '--no-such-option'");
    proc_clear(&u);
    g_strfreev(lines);
    g_free(out);
  }
}

Test(cli, version) {
  Proc p = RUN("--version");
  cr_expect_eq(p.status, 0, "exit status %d; stderr:\n%s", p.status, p.err);
  cr_expect_str_eq(p.out, "fabsim 0.1.0\n", "--version printed \"%s\"", p.out);
  cr_expect_str_empty(p.err, "--version wrote on stderr: %s", p.err);
  proc_clear(&p);
}

/* ---- 4, 5, 6. quickstart, determinism, the JSON summary ------------------ */

/* Run and expect success with a JSON summary; returns stdout (g_free it). */
static char *run_json(const char *const *args) {
  Proc p = run_argv(args);
  cr_assert_eq(p.status, 0, "%s: exit status %d; stderr:\n%s", p.cmd, p.status, p.err);
  cr_assert_str_empty(p.err, "%s: nothing expected on stderr (not a terminal), got:\n%s", p.cmd, p.err);
  char *out = p.out;
  p.out = NULL;
  proc_clear(&p);
  return out;
}

Test(cli, builtin_quickstart_is_the_shipped_file) {
  char *q = src_path("scenarios/quickstart.yaml");
  char *builtin = run_json((const char *const[]){"run", "--json", NULL});
  char *file = run_json((const char *const[]){"run", q, "--json", NULL});
  cr_expect(strstr(builtin, "\"scenario\": \"quickstart\"") != NULL, "built-in: %s", builtin);
  cr_expect(strstr(file, "\"scenario\": \"quickstart\"") != NULL, "file: %s", file);
  char *a = stable_json(builtin), *b = stable_json(file);
  cr_expect_str_eq(a, b, "fabsim run --json and fabsim run %s --json differ:\n%s\n%s", q, a, b);
  g_free(a);
  g_free(b);
  g_free(builtin);
  g_free(file);
  g_free(q);
}

Test(cli, deterministic_and_seeded) {
  char *q = src_path("scenarios/quickstart.yaml");
  char *r1 = run_json((const char *const[]){"run", q, "--json", NULL});
  char *r2 = run_json((const char *const[]){"run", q, "--json", NULL});
  char *r3 = run_json((const char *const[]){"run", q, "--json", "--seed", "2", NULL});
  char *s1 = stable_json(r1), *s2 = stable_json(r2), *s3 = stable_json(r3);
  cr_expect_str_eq(s1, s2, "two runs of the same scenario differ:\n%s\n%s", s1, s2);
  cr_expect(strstr(r1, "\"seed\": 1,") != NULL, "seed 1 run: %s", r1);
  cr_expect(strstr(r3, "\"seed\": 2,") != NULL, "--seed 2 run: %s", r3);
  static const char *const keys[] = {"sim_time_s", "fct_p50_s", "fct_p99_s", "fct_max_s"};
  int differ = 0;
  for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
    char *v1 = json_field(r1, keys[i]), *v3 = json_field(r3, keys[i]);
    cr_expect(v1 && v3, "%s missing:\n%s\n%s", keys[i], r1, r3);
    if (v1 && v3 && strcmp(v1, v3)) differ++;
    g_free(v1);
    g_free(v3);
  }
  cr_expect_gt(differ, 0, "--seed 2 gave the same sim_time_s and fct as seed 1:\n%s\n%s", r1, r3);
  g_free(s1);
  g_free(s2);
  g_free(s3);
  g_free(r1);
  g_free(r2);
  g_free(r3);
  g_free(q);
}

Test(cli, json_summary_fields) {
  char *q = src_path("scenarios/quickstart.yaml");
  char *js = run_json((const char *const[]){"run", q, "--json", NULL});
  size_t len = strlen(js);
  cr_assert(len > 2 && js[0] == '{' && g_str_has_suffix(js, "}\n"), "not one JSON object and a newline: %s", js);
  cr_expect_eq(strchr(js, '\n'), js + len - 1, "the summary should be one line: %s", js);
  static const char *const top[] = {
    "fabsim_version", "scenario", "seed", "sim_time_s", "wall_s", "events", "events_per_s", "packet_hops",
    "endpoints", "flows", "drops", "retransmits", "pfc_pause_frames", "ecn_marks", "max_queue_bytes",
    "collectives", "step",
  };
  for (size_t i = 0; i < G_N_ELEMENTS(top); i++) {
    char *k = g_strdup_printf("\"%s\": ", top[i]);
    cr_expect(strstr(js, k) != NULL, "field %s missing from the summary: %s", k, js);
    g_free(k);
  }
  /* the flows object and its fields */
  GRegex *re = g_regex_new("\"flows\": (\\{[^{}]*\\})", 0, 0, NULL);
  GMatchInfo *mi = NULL;
  cr_assert(g_regex_match(re, js, 0, &mi), "no \"flows\": {...} object in: %s", js);
  char *flows = g_match_info_fetch(mi, 1);
  g_match_info_free(mi);
  g_regex_unref(re);
  static const char *const fk[] = {"count", "completed", "bytes", "fct_p50_s", "fct_p99_s", "fct_max_s"};
  for (size_t i = 0; i < G_N_ELEMENTS(fk); i++) {
    char *k = g_strdup_printf("\"%s\": ", fk[i]);
    cr_expect(strstr(flows, k) != NULL, "field flows.%s missing from %s", fk[i], flows);
    g_free(k);
  }
  /* values the quickstart fixes: 32 hosts, 32 flows of 1 MiB, seed 1, no collectives */
  cr_expect(strstr(js, "\"fabsim_version\": \"0.1.0\"") != NULL, "%s", js);
  cr_expect(strstr(js, "\"scenario\": \"quickstart\"") != NULL, "%s", js);
  cr_expect(strstr(js, "\"seed\": 1,") != NULL, "%s", js);
  cr_expect(strstr(js, "\"endpoints\": 32,") != NULL, "%s", js);
  cr_expect(strstr(flows, "\"count\": 32,") != NULL, "%s", flows);
  cr_expect(strstr(flows, "\"completed\": 32,") != NULL, "%s", flows);
  cr_expect(strstr(flows, "\"bytes\": 33554432,") != NULL, "%s", flows);
  cr_expect(strstr(js, "\"collectives\": []") != NULL, "%s", js);
  cr_expect(strstr(js, "\"step\": null") != NULL, "%s", js);
  /* numbers are numbers */
  static const char *const num[] = {"sim_time_s", "wall_s", "events", "events_per_s", "packet_hops",
                                    "drops", "retransmits", "pfc_pause_frames", "ecn_marks", "max_queue_bytes",
                                    "fct_p50_s", "fct_p99_s", "fct_max_s"};
  GRegex *isnum = g_regex_new("^-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?$", 0, 0, NULL);
  for (size_t i = 0; i < G_N_ELEMENTS(num); i++) {
    char *v = json_field(js, num[i]);
    cr_expect(v && g_regex_match(isnum, v, 0, NULL), "%s is not a number (%s) in %s", num[i], v ? v : "absent",
              js);
    g_free(v);
  }
  g_regex_unref(isnum);
  g_free(flows);
  g_free(js);
  g_free(q);
}

/* ---- 7. validate -------------------------------------------------------- */

Test(cli, validate_shipped_scenarios) {
  char *dir = src_path("scenarios");
  GError *e = NULL;
  GDir *d = g_dir_open(dir, 0, &e);
  cr_assert_not_null(d, "cannot open %s: %s", dir, e ? e->message : "?");
  int n = 0;
  const char *name;
  while ((name = g_dir_read_name(d))) {
    if (!g_str_has_suffix(name, ".yaml")) continue;
    char *f = g_build_filename(dir, name, NULL);
    Proc p = RUN("validate", f);
    cr_expect_eq(p.status, 0, "%s: exit status %d; stderr:\n%s", p.cmd, p.status, p.err);
    char *ok = g_strdup_printf("%s: ok (", f);
    cr_expect(g_str_has_prefix(p.out, ok), "%s: stdout should start with \"%s\": %s", p.cmd, ok, p.out);
    cr_expect_str_empty(p.err, "%s: stderr: %s", p.cmd, p.err);
    g_free(ok);
    proc_clear(&p);
    g_free(f);
    n++;
  }
  g_dir_close(d);
  cr_expect_geq(n, 1, "no scenarios in %s", dir);
  g_free(dir);
}

Test(cli, validate_explain) {
  char *q = src_path("scenarios/quickstart.yaml");
  Proc p = RUN("validate", q, "--explain");
  cr_expect_eq(p.status, 0, "%s: exit status %d; stderr:\n%s", p.cmd, p.status, p.err);
  cr_expect_str_empty(p.err, "%s: stderr: %s", p.cmd, p.err);
  static const char *const lines[] = {"^topology\\s+leaf-spine", "^transport\\s+rocev2", "^workload\\s+32 flows"};
  for (size_t i = 0; i < G_N_ELEMENTS(lines); i++)
    cr_expect(g_regex_match_simple(lines[i], p.out, G_REGEX_MULTILINE, 0), "%s: no line matching /%s/ in:\n%s",
              p.cmd, lines[i], p.out);
  proc_clear(&p);
  g_free(q);
}

/* ---- 8. HDF5: all or nothing -------------------------------------------- */

/* The names in dir, sorted, joined by spaces ("" when empty). */
static char *dir_listing(const char *dir) {
  GDir *d = g_dir_open(dir, 0, NULL);
  cr_assert_not_null(d, "cannot open %s", dir);
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  const char *n;
  while ((n = g_dir_read_name(d))) g_ptr_array_add(names, g_strdup(n));
  g_dir_close(d);
  g_ptr_array_sort(names, cmp_str);
  g_ptr_array_add(names, NULL);
  char *s = g_strjoinv(" ", (char **)names->pdata);
  g_ptr_array_free(names, TRUE);
  return s;
}

static void rm_dir(const char *dir) {
  GDir *d = g_dir_open(dir, 0, NULL);
  if (!d) return;
  const char *n;
  while ((n = g_dir_read_name(d))) {
    char *f = g_build_filename(dir, n, NULL);
    g_unlink(f);
    g_free(f);
  }
  g_dir_close(d);
  g_rmdir(dir);
}

Test(cli, hdf5_not_written_on_bad_input) {
  char *tmp = g_dir_make_tmp("fabsim-cli-XXXXXX", NULL);
  cr_assert_not_null(tmp);
  char *h5 = g_build_filename(tmp, "out.h5", NULL);
  char *bad = src_path("tests/bad/04-bad-rate-unit.yaml");
  char *q = src_path("scenarios/quickstart.yaml");
  char *set_h5 = g_strdup_printf("output.hdf5=%s", h5);
  const char *const *cases[] = {
    (const char *const[]){"run", bad, "--hdf5", h5, NULL},
    (const char *const[]){"run", bad, "--json", "--hdf5", h5, NULL},
    (const char *const[]){"run", q, "--hdf5", h5, "--set", "fabric.link.bandwidth=fast", NULL},
    (const char *const[]){"run", q, "--set", set_h5, "--set", "workload.size=-1", NULL},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    Proc p = run_argv(cases[i]);
    expect_usage_error(&p);
    cr_expect(!g_file_test(h5, G_FILE_TEST_EXISTS), "%s: %s was written", p.cmd, h5);
    char *ls = dir_listing(tmp);
    cr_expect_str_empty(ls, "%s: files left in %s: %s", p.cmd, tmp, ls);
    g_free(ls);
    proc_clear(&p);
  }
  rm_dir(tmp);
  g_free(set_h5);
  g_free(q);
  g_free(bad);
  g_free(h5);
  g_free(tmp);
}

Test(cli, hdf5_written_on_success) {
  char *tmp = g_dir_make_tmp("fabsim-cli-XXXXXX", NULL);
  cr_assert_not_null(tmp);
  char *h5 = g_build_filename(tmp, "out.h5", NULL);
  char *q = src_path("scenarios/quickstart.yaml");
  char *js = run_json((const char *const[]){"run", q, "--json", "--set", "workload.size=64KiB", "--hdf5", h5, NULL});
  cr_expect(strstr(js, "\"completed\": 32,") != NULL, "%s", js);
  char *data = NULL;
  gsize len = 0;
  cr_assert(g_file_get_contents(h5, &data, &len, NULL), "%s was not written", h5);
  cr_expect(len >= 8 && memcmp(data, "\x89HDF\r\n\x1a\n", 8) == 0, "%s does not start with the HDF5 signature", h5);
  char *ls = dir_listing(tmp);
  cr_expect_str_eq(ls, "out.h5", "only out.h5 should be in %s: %s", tmp, ls);
  g_free(ls);
  g_free(data);
  g_free(js);
  rm_dir(tmp);
  g_free(q);
  g_free(h5);
  g_free(tmp);
}

/* ---- 9. the human report ------------------------------------------------ */

Test(cli, human_report) {
  char *q = src_path("scenarios/quickstart.yaml");
  Proc p = RUN("run", q);
  cr_expect_eq(p.status, 0, "%s: exit status %d; stderr:\n%s", p.cmd, p.status, p.err);
  cr_expect_str_empty(p.err, "%s: stderr: %s", p.cmd, p.err);
  cr_expect(g_str_has_prefix(p.out, "fabsim 0.1.0: quickstart (seed 1)\n"), "%s: report:\n%s", p.cmd, p.out);
  cr_expect(g_regex_match_simple("^\\s+flows\\s+32/32 completed", p.out, G_REGEX_MULTILINE, 0),
            "%s: no 'flows ... 32/32 completed' line in:\n%s", p.cmd, p.out);
  cr_expect(p.out[0] != '{', "%s: the report should not be JSON", p.cmd);
  cr_expect(strstr(p.out, "\n  nics        32 x 100 Gbps\n"), "%s: the NIC rate that runs:\n%s", p.cmd, p.out);
  proc_clear(&p);
  /* no flow completed by stop_time: percentiles are not 0 but absent */
  p = RUN("run", q, "--set", "stop_time=1us");
  cr_expect_eq(p.status, 1, "%s: exit status %d; stderr:\n%s", p.cmd, p.status, p.err);
  cr_expect(strstr(p.out, "\n  fct         n/a (no flow completed)\n"), "%s: report:\n%s", p.cmd, p.out);
  proc_clear(&p);
  p = RUN("run", q, "--set", "stop_time=1us", "--json");
  cr_expect(strstr(p.out, "\"fct_p50_s\": null, \"fct_p99_s\": null, \"fct_max_s\": null"), "%s: JSON:\n%s", p.cmd,
            p.out);
  proc_clear(&p);
  g_free(q);
  /* a GPU preset on slower fabric links: the NIC runs at the link's rate, and the report says why */
  q = src_path("scenarios/nccl-tests-dgx-h100.yaml");
  p = RUN("run", q, "--set", "fabric.link.bandwidth=200Gbps", "--set", "workload.max=8");
  cr_expect_eq(p.status, 0, "%s: exit status %d; stderr:\n%s", p.cmd, p.status, p.err);
  cr_expect(strstr(p.out, "\n  nics        16 x 200 Gbps (8 per node; the dgx-h100 preset's 400 Gbps NICs at the "
                          "fabric's link rate)\n"), "%s: report:\n%s", p.cmd, p.out);
  proc_clear(&p);
  g_free(q);
}

Test(cli, a_pfc_deadlock_exits_1_and_lists_the_cycle) {
  char *scen = src_path("scenarios/pfc-deadlock-ring.yaml");
  const char *args[] = {"run", scen, "--json", NULL};
  Proc p = run_argv(args);
  cr_assert_eq(p.status, 1, "exit status %d; stderr: %s", p.status, p.err);
  cr_assert(strstr(p.out, "\"deadlock\": [\"ring0:p2\", \"ring1:p2\", \"ring2:p2\", \"ring3:p2\"]"), "%s", p.out);
  cr_assert(strstr(p.out, "\"status\": \"failed\""), "%s", p.out);
  cr_assert(strstr(p.err, "PFC deadlock"), "%s", p.err);
  proc_clear(&p);
  g_free(scen);
}

Test(cli, validate_explains_pfc_ecn_and_dcqcn_overrides) {
  char *scen = src_path("scenarios/incast-dcqcn.yaml");
  const char *args[] = {"validate", scen, "--explain", "--set", "fabric.congestion_control.g=0.5", NULL};
  Proc p = run_argv(args);
  cr_assert_eq(p.status, 0, "%s", p.err);
  cr_assert(strstr(p.out, "dcqcn      g 0.5, alpha_init 1, alpha_timer 55 us"), "%s", p.out);
  cr_assert(strstr(p.out, "pfc        lossless priorities 0, XOFF 131072 B, XON 65536 B"), "%s", p.out);
  cr_assert(strstr(p.out, "ecn        kmin 20480 B, kmax 102400 B, pmax 0.2, on enqueue"), "%s", p.out);
  proc_clear(&p);
  g_free(scen);
}

Test(cli, validate_explains_reliability_and_spraying) {
  char *scen = src_path("scenarios/leaf-spine-permutation-128.yaml");
  const char *args[] = {"validate", scen, "--explain", "--set", "cluster.nic.reliability=selective", "--set",
                        "cluster.nic.spray=avoid", "--set", "cluster.nic.paths=64", "--set",
                        "fabric.switch.ecn.enabled=true", NULL};
  Proc p = run_argv(args);
  cr_assert_eq(p.status, 0, "%s", p.err);
  cr_assert(strstr(p.out, "reliability selective: receivers hold packets up to 256 PSNs ahead"), "%s", p.out);
  cr_assert(strstr(p.out, "spray      avoid: each network flow's data packets take 64 entropy values"), "%s", p.out);
  cr_assert(strstr(p.out, "skipping once a value whose packet came back marked by ECN"), "%s", p.out);
  cr_assert_eq(strstr(p.err, "warning"), NULL, "ECN on, selective receivers: nothing to warn of\n%s", p.err);
  proc_clear(&p);
  g_free(scen);
}

/* ---- 10. hostile inputs that are not scenario files ---------------------- */

/* Refused with exit 2 and a located one-line message, within the bounds of a
** bad input, nothing left in the working directory. */
static void expect_refused(const char *const *args, const char *where, const char *what) {
  char *work = g_dir_make_tmp("fabsim-bad-XXXXXX", NULL);
  double secs = 0;
  long rss = 0;
  Proc p = run_measured(work, args, &secs, &rss);
  expect_usage_error(&p);
  if (where) expect_err_has(&p, where);
  expect_err_has(&p, what);
  size_t len = strlen(p.err);
  cr_expect(len && strchr(p.err, '\n') == p.err + len - 1, "%s: not one line:\n%s", p.cmd, p.err);
  if (!under_valgrind()) {
    cr_expect_leq(secs, BAD_MAX_SECONDS, "%s: took %.2f s", p.cmd, secs);
    if (!under_asan()) cr_expect_leq(rss, BAD_MAX_RSS_KB, "%s: took %ld KiB", p.cmd, rss);
  }
  expect_empty_dir(work, p.cmd);
  proc_clear(&p);
  g_rmdir(work);
  g_free(work);
}

Test(cli, special_files_are_never_read) {
  expect_refused((const char *const[]){"run", "/dev/zero", NULL}, "/dev/zero: cannot read scenario",
                 "not a regular file");
  expect_refused((const char *const[]){"validate", "/dev/urandom", NULL}, "/dev/urandom", "not a regular file");
  char *tmp = g_dir_make_tmp("fabsim-fifo-XXXXXX", NULL);
  char *fifo = g_build_filename(tmp, "s.yaml", NULL);
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  expect_refused((const char *const[]){"run", fifo, NULL}, fifo, "not a regular file"); /* no writer: would block */
  g_unlink(fifo);
  g_rmdir(tmp);
  g_free(fifo);
  g_free(tmp);
}

/* The other readers (nccl-tests logs, traces, compute tables, NCCL
** topologies) refuse special files and directories as the scenario reader
** does, and a file over their limit before reading it. */
Test(cli, special_files_are_never_read_as_logs_or_traces) {
  char *scen = src_path("tests/data/nccl-tests-8hosts.yaml"), *tr = src_path("scenarios/trace-two-stage.yaml");
  char *meas = src_path("scenarios/training-llama3-8b-measured.yaml");
  char *tmp = g_dir_make_tmp("fabsim-fifo-XXXXXX", NULL), *fifo = g_build_filename(tmp, "p", NULL);
  char *big = g_build_filename(tmp, "big.log", NULL);
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  char *set_fifo = g_strdup_printf("workload.file=%s", fifo), *set_dir = g_strdup_printf("workload.file=%s", tmp);
  char *set_topo = g_strdup_printf("cluster.node_topology=%s", fifo);
  const char *nreg = "not a regular file";
  expect_refused((const char *const[]){"compare", scen, "/dev/zero", NULL}, "/dev/zero: cannot read", nreg);
  expect_refused((const char *const[]){"compare", scen, fifo, NULL}, fifo, nreg); /* no writer: would block */
  expect_refused((const char *const[]){"compare", scen, tmp, NULL}, tmp, "it is a directory");
  expect_refused((const char *const[]){"calibrate", scen, "/dev/urandom", NULL}, "/dev/urandom", nreg);
  expect_refused((const char *const[]){"calibrate", scen, fifo, NULL}, fifo, nreg);
  expect_refused((const char *const[]){"run", tr, "--set", "workload.file=/dev/zero", NULL},
                 "workload.file: /dev/zero: cannot read the trace", nreg);
  expect_refused((const char *const[]){"run", tr, "--set", set_fifo, NULL}, fifo, nreg);
  expect_refused((const char *const[]){"validate", tr, "--set", set_dir, NULL}, tmp, "it is a directory");
  expect_refused((const char *const[]){"run", meas, "--set", "workload.compute_table=/dev/zero", NULL},
                 "workload.compute_table: /dev/zero", nreg);
  expect_refused((const char *const[]){"run", meas, "--set", set_topo, NULL}, "cluster.node_topology", nreg);
  int fd = g_open(big, O_CREAT | O_WRONLY, 0600); /* sparse: costs no disk */
  cr_assert(fd >= 0 && ftruncate(fd, (off_t)65 << 20) == 0);
  close(fd);
  expect_refused((const char *const[]){"compare", scen, big, NULL}, big, "larger than 64 MiB");
  g_unlink(big);
  g_unlink(fifo);
  g_rmdir(tmp);
  g_free(set_fifo), g_free(set_dir), g_free(set_topo), g_free(big), g_free(fifo), g_free(tmp);
  g_free(scen), g_free(tr), g_free(meas);
}

/* An output path that cannot be written is refused before anything runs:
** exit 2, nothing on stdout (no table, no fit), the path named. */
Test(cli, bad_output_paths_are_refused_first) {
  char *scen = src_path("tests/data/nccl-tests-8hosts.yaml");
  char *log = src_path("tests/data/all_reduce_perf_8rank_1MiB.log"), *file = src_path("README.md");
  const char *dirs[] = {"/proc/nope", "/dev/null", file}; /* --out DIR */
  for (size_t i = 0; i < G_N_ELEMENTS(dirs); i++)
    expect_refused((const char *const[]){"compare", scen, log, "--out", dirs[i], NULL}, dirs[i],
                   "cannot write the comparison");
  char *under_file = g_build_filename(file, "fit.yaml", NULL);
  const char *frags[] = {"/proc/nope/fit.yaml", "/tmp", "/dev/null", under_file}; /* --out FRAGMENT */
  for (size_t i = 0; i < G_N_ELEMENTS(frags); i++)
    expect_refused((const char *const[]){"calibrate", scen, log, "--out", frags[i], NULL}, frags[i],
                   "cannot write the calibrated fragment");
  g_free(under_file), g_free(file), g_free(log), g_free(scen);
}

/* KEY=~ removes a key, so that a shipped scenario with spines: can be swept
** over oversubscription; the conflict error says so; removing a key that is
** not there (a typo) is an error. */
Test(cli, set_null_removes_a_key) {
  char *f = src_path("scenarios/leaf-spine-permutation-128.yaml");
  Proc p = RUN("validate", f, "--set", "fabric.topology.oversubscription=2:1");
  expect_usage_error(&p);
  expect_err_has(&p, "--set:1:34: fabric.topology.oversubscription: give spines or oversubscription, not both (to "
                     "use one where a file gives the other, remove that one: --set fabric.topology.spines=~)");
  proc_clear(&p);
  p = RUN("validate", f, "--set", "fabric.topology.oversubscription=2:1", "--set", "fabric.topology.spines=~");
  cr_expect_eq(p.status, 0, "%s: exit status %d; stderr:\n%s", p.cmd, p.status, p.err);
  cr_expect(strstr(p.out, "4 spines (2:1 at the leaf)"), "%s: %s", p.cmd, p.out);
  proc_clear(&p);
  p = RUN("validate", f, "--set", "fabric.topology.spine=~");
  expect_usage_error(&p);
  expect_err_has(&p, "cannot remove 'fabric.topology.spine': the scenario has no such key");
  proc_clear(&p);
  g_free(f);
  f = src_path("scenarios/nccl-tests-dgx-h100.yaml");
  p = RUN("validate", f, "--set", "workload.sizes=[1MiB]");
  expect_usage_error(&p);
  expect_err_has(&p, "remove them: --set workload.min=~ --set workload.max=~ --set workload.factor=~)");
  proc_clear(&p);
  p = RUN("validate", f, "--set", "workload.sizes=[1MiB]", "--set", "workload.min=~", "--set", "workload.max=~",
          "--set", "workload.factor=~");
  cr_expect_eq(p.status, 0, "%s: exit status %d; stderr:\n%s", p.cmd, p.status, p.err);
  proc_clear(&p);
  g_free(f);
}

Test(cli, set_keys_are_bounded_and_printable) {
  char *q = src_path("scenarios/quickstart.yaml");
  GString *k = g_string_new(NULL); /* a 120 KB dotted key */
  while (k->len < 120000) g_string_append(k, "a.");
  g_string_append(k, "b=1");
  expect_refused((const char *const[]){"validate", q, "--set", k->str, NULL}, "--set:1:1", "more than 256");
  expect_refused((const char *const[]){"validate", q, "--set", "fabric.li\nnk.bandwidth=1Gbps", NULL}, "--set:1:10",
                 "control character");
  expect_refused((const char *const[]){"validate", q, "--set", "name=\"a\\0b\"", NULL}, "--set:1:6", "NUL");
  g_string_free(k, TRUE);
  g_free(q);
}

/* A collective that unfolds: validate counts the flows made before the run
** (the first layer: 16 channels x 1024 ranks) and says more will come. */
Test(cli, validate_counts_what_an_unfolding_collective_makes_first) {
  char *f = src_path("scenarios/bench/allreduce-1024-gpus.yaml");
  Proc p = RUN("validate", f);
  cr_expect_eq(p.status, 0, "%s: %s", p.cmd, p.err);
  cr_expect(strstr(p.out, ", 16384 flows made before the run, about ") && strstr(p.out, " more operations as it runs"),
            "%s", p.out);
  proc_clear(&p);
  g_free(f);
}

/* 21 files each including the next twice: 2^20 paths, 21 files, parsed once each. */
Test(cli, include_diamonds_are_cheap) {
  char *tmp = g_dir_make_tmp("fabsim-diamond-XXXXXX", NULL);
  for (int i = 0; i <= 20; i++) {
    char *f = g_strdup_printf("%s/f%d.yaml", tmp, i);
    char *text = i < 20 ? g_strdup_printf("include: [f%d.yaml, f%d.yaml]\nfabric: {switch: {latency: %dns}}\n", i + 1,
                                          i + 1, i)
                        : g_strdup("fabric: {link: {bandwidth: 100Gbps}, switch: {latency: 20ns}}\n");
    cr_assert(g_file_set_contents(f, text, -1, NULL));
    g_free(text);
    g_free(f);
  }
  char *q = src_path("scenarios/quickstart.yaml"), *main = g_build_filename(tmp, "main.yaml", NULL), *qt = NULL;
  cr_assert(g_file_get_contents(q, &qt, NULL, NULL));
  char *mt = g_strdup_printf("%sinclude: [f0.yaml]\n", qt);
  cr_assert(g_file_set_contents(main, mt, -1, NULL));
  double secs = 0;
  long rss = 0;
  Proc p = run_measured(tmp, (const char *const[]){"validate", "--explain", main, NULL}, &secs, &rss);
  cr_expect_eq(p.status, 0, "%s: %s", p.cmd, p.err);
  cr_expect_leq(secs, BAD_MAX_SECONDS, "a diamond of includes took %.2f s", secs);
  cr_expect(strstr(p.out, "switch     latency 600 ns") || strstr(p.out, "latency 600"), "the file's own value wins: %s",
            p.out);
  proc_clear(&p);
  for (int i = 0; i <= 20; i++) {
    char *f = g_strdup_printf("%s/f%d.yaml", tmp, i);
    g_unlink(f);
    g_free(f);
  }
  g_unlink(main);
  g_rmdir(tmp);
  g_free(mt);
  g_free(qt);
  g_free(main);
  g_free(q);
  g_free(tmp);
}

/* A run that fails (here: stop_time before the workload ends) writes no
** HDF5; identical runs write byte-identical files. */
Test(cli, hdf5_only_for_a_run_that_succeeds_and_identical) {
  char *tmp = g_dir_make_tmp("fabsim-cli-XXXXXX", NULL);
  char *a = g_build_filename(tmp, "a.h5", NULL), *b = g_build_filename(tmp, "b.h5", NULL);
  char *q = src_path("scenarios/quickstart.yaml");
  Proc p = RUN("run", q, "--json", "--set", "stop_time=1us", "--hdf5", a);
  cr_expect_eq(p.status, 1, "%s: exit %d: %s", p.cmd, p.status, p.err);
  cr_expect(!g_file_test(a, G_FILE_TEST_EXISTS), "a failed run wrote %s", a);
  proc_clear(&p);
  for (int i = 0; i < 2; i++) {
    p = RUN("run", q, "--json", "--set", "workload.size=64KiB", "--hdf5", i ? b : a);
    cr_expect_eq(p.status, 0, "%s: %s", p.cmd, p.err);
    proc_clear(&p);
  }
  char *da = NULL, *db = NULL;
  gsize la = 0, lb = 0;
  cr_assert(g_file_get_contents(a, &da, &la, NULL) && g_file_get_contents(b, &db, &lb, NULL));
  cr_expect(la == lb && memcmp(da, db, la) == 0, "two identical runs wrote different HDF5 files (%zu, %zu bytes)",
            (size_t)la, (size_t)lb);
  g_free(da);
  g_free(db);
  g_unlink(a);
  g_unlink(b);
  g_rmdir(tmp);
  g_free(a);
  g_free(b);
  g_free(q);
  g_free(tmp);
}

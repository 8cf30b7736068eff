/*
** The timeline as a Perfetto / Chrome trace (tools/libfabsim/perfetto.c):
** small text-trace jobs on two hosts whose times are worked out on paper,
** the tracks overlapping spans get, byte-identical output, and the CLI's
** --perfetto (written only for a run that succeeds; a bad target is a usage
** error before anything runs).
*/
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/wait.h>
#include "testscen.h"
#include "tools/libfabsim/perfetto.h"

#define HOSTS                                                       \
  "cluster: {nodes: 2}\n"                                           \
  "fabric:\n"                                                       \
  "  topology: {kind: single-switch}\n"                             \
  "  link: {bandwidth: 100Gbps, latency: 1us, mtu: 4096}\n"         \
  "  switch: {latency: 500ns}\n"

static char *tmpdir;

static void setup(void) { tmpdir = g_dir_make_tmp("fabsim-perfetto-XXXXXX", NULL); }
static void teardown(void) {
  testscen_rm_dir(tmpdir);
  g_free(tmpdir);
}

TestSuite(perfetto, .init = setup, .fini = teardown);

/* The trace text of a run of the text trace `trace` (its JSON, well formed). */
static char *run_trace(const char *trace) {
  char *tp = g_build_filename(tmpdir, "t.txt", NULL);
  cr_assert(g_file_set_contents(tp, trace, -1, NULL));
  char *y = g_strdup_printf(HOSTS "workload: {kind: text, file: '%s'}\n", tp);
  FabScenario *sc = testscen_load(y, NULL);
  FabResults r = {0};
  testscen_run(sc, &r);
  char *out = g_build_filename(tmpdir, "sub", "run.json", NULL); /* the directory is made */
  GError *err = NULL;
  cr_assert(fab_perfetto_write(&r, out, &err), "%s", err ? err->message : "?");
  testscen_done(sc, &r);
  char *text = NULL;
  cr_assert(g_file_get_contents(out, &text, NULL, NULL));
  FabJsonIndex *ix = fab_json_index_new(text);
  cr_assert_not_null(ix, "not one JSON value:\n%s", text);
  fab_json_index_free(ix);
  g_free(out), g_free(y), g_free(tp);
  return text;
}

/* The line of the event with all of `parts` (the writer puts one per line). */
static const char *line_with(const char *text, const char *const *parts, char **line) {
  char **lines = g_strsplit(text, "\n", -1);
  *line = NULL;
  for (char **l = lines; *l && !*line; l++) {
    bool all = true;
    for (const char *const *p = parts; *p && all; p++) all = strstr(*l, *p) != NULL;
    if (all) *line = g_strdup(*l);
  }
  g_strfreev(lines);
  return *line;
}

static void expect_event(const char *text, const char *const *parts) {
  char *l;
  cr_assert(line_with(text, parts, &l), "no event with %s ... in:\n%s", parts[0], text);
  g_free(l);
}

static int count(const char *text, const char *what) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, what)); p++) n++;
  return n;
}

/* Each rank computes 10 us, then they allreduce 1 MiB on both: the compute
** tracks hold [0, 10 us], the collective starts at 10 us on its own
** process's track and on each rank's communication track. */
Test(perfetto, on_paper) {
  const char *t = "group pair 0,1\n1 0 compute 10us - -\n2 0 allreduce 1MiB pair 1\n"
                  "1 1 compute 10us - -\n2 1 allreduce 1MiB pair 1\n";
  char *text = run_trace(t);
  expect_event(text, (const char *const[]){"\"name\":\"rank 0 compute\"", "\"pid\":1", "\"tid\":1", NULL});
  expect_event(text, (const char *const[]){"\"name\":\"rank 1 communication\"", "\"tid\":4", NULL});
  expect_event(text, (const char *const[]){"\"name\":\"compute\"", "\"cat\":\"compute\"", "\"pid\":1,\"tid\":1",
                                           "\"ts\":0.000000,\"dur\":10.000000", "\"trace_node\":1", NULL});
  expect_event(text, (const char *const[]){"\"name\":\"compute\"", "\"pid\":1,\"tid\":3", "\"ts\":0.000000", NULL});
  expect_event(text, (const char *const[]){"\"name\":\"allreduce 1 MiB (pair)\"", "\"pid\":1,\"tid\":2",
                                           "\"ts\":10.000000", "\"collective\":0", NULL});
  expect_event(text, (const char *const[]){"\"name\":\"allreduce 1 MiB (pair)\"", "\"pid\":2,\"tid\":1",
                                           "\"ts\":10.000000", "\"op\":\"allreduce\"", "\"bytes\":1048576",
                                           "\"ranks\":2", "\"busbw_GBps\":", NULL});
  expect_event(text, (const char *const[]){"\"name\":\"process_name\"", "\"pid\":2", "\"collectives\"", NULL});
  expect_event(text, (const char *const[]){"\"name\":\"process_name\"", "\"pid\":1", "\"job ", "(text)", NULL});
  cr_assert_eq(count(text, "\"ph\":\"X\""), 1 + 2 + 2 + 1, "the run, 2 computes, 2 ranks' parts, 1 collective");
  g_free(text);
}

/* Two collectives at once on two communicators: each rank's second one
** goes on a second communication track, and the collectives' process gets
** two tracks too. */
Test(perfetto, overlaps_get_tracks) {
  const char *t = "group a 0,1\ngroup b 0,1\n1 0 allreduce 4MiB a -\n2 0 allreduce 4MiB b -\n"
                  "1 1 allreduce 4MiB a -\n2 1 allreduce 4MiB b -\n";
  char *text = run_trace(t);
  expect_event(text, (const char *const[]){"\"name\":\"rank 0 communication 2\"", NULL});
  expect_event(text, (const char *const[]){"\"name\":\"rank 1 communication 2\"", NULL});
  expect_event(text, (const char *const[]){"\"name\":\"collectives 2\"", NULL});
  expect_event(text, (const char *const[]){"\"name\":\"allreduce 4 MiB (a)\"", "\"ts\":0.000000", NULL});
  expect_event(text, (const char *const[]){"\"name\":\"allreduce 4 MiB (b)\"", "\"ts\":0.000000", NULL});
  cr_assert_eq(count(text, "\"name\":\"rank 0 communication"), 2);
  g_free(text);
}

/* The same scenario twice: the same bytes. */
Test(perfetto, identical) {
  const char *t = "group pair 0,1\n1 0 compute 3us - -\n2 0 allgather 256KiB pair 1\n"
                  "1 1 compute 5us - -\n2 1 allgather 256KiB pair 1\n";
  char *a = run_trace(t), *b = run_trace(t);
  cr_assert_str_eq(a, b);
  g_free(a), g_free(b);
}

static const char *bin(void) {
  const char *b = getenv("FABSIM");
  return b ? b : "build/fabsim";
}

static int run_cli(const char *const *args, char **err_text) {
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (gpointer)bin());
  for (const char *const *a = args; *a; a++) g_ptr_array_add(argv, (gpointer)*a);
  g_ptr_array_add(argv, NULL);
  int status = -1;
  GError *e = NULL;
  cr_assert(g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, err_text,
                         &status, &e), "%s", e ? e->message : "?");
  g_ptr_array_free(argv, TRUE);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* --perfetto on the command line: written by a run that succeeds, a usage
** error (2, nothing run) when it names a directory, and nothing written by
** a run that fails. */
Test(perfetto, cli) {
  char *out = g_build_filename(tmpdir, "q.json", NULL), *err = NULL;
  cr_assert_eq(run_cli((const char *const[]){"run", "--no-progress", "--set", "workload.size=64KiB", "--perfetto",
                                             out, NULL}, &err), 0, "%s", err);
  cr_assert(g_file_test(out, G_FILE_TEST_IS_REGULAR));
  g_free(err);
  cr_assert_eq(run_cli((const char *const[]){"run", "--perfetto", tmpdir, NULL}, &err), 2);
  cr_assert(strstr(err, "--perfetto:") && strstr(err, "cannot write the Perfetto trace: it is a directory"), "%s", err);
  g_free(err);
  char *never = g_build_filename(tmpdir, "never.json", NULL);
  cr_assert_eq(run_cli((const char *const[]){"run", "--set", "stop_time=1us", "--perfetto", never, NULL}, &err), 1,
               "%s", err);
  cr_assert_not(g_file_test(never, G_FILE_TEST_EXISTS), "a failed run wrote %s", never);
  g_free(err), g_free(never), g_free(out);
}

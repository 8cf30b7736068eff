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

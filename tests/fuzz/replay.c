/* The fuzz targets without libFuzzer: run LLVMFuzzerTestOneInput on each
** file named on the command line, or on every regular file of a directory
** (in name order, not recursing). The seed corpus and the regression inputs
** run this way as unit tests (tests/fuzz/meson.build), under gcc and in the
** sanitizer build, with no clang needed. Also the way to replay a finding
** by hand: build/tests/fuzz/replay_scenario tests/fuzz/regress/scenario/crash-...
**
** usage: replay_TARGET FILE|DIR...
** Exit status 0 when every input ran (a crash ends the process before it can
** say otherwise), 2 when a file cannot be read. */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"

/* Feed one file to the target; FALSE (and a message) if it cannot be read. */
static gboolean replay_file(const char *path, unsigned *n) {
  GError *err = NULL;
  char *data = NULL;
  gsize len = 0;
  if (!g_file_get_contents(path, &data, &len, &err)) {
    fprintf(stderr, "replay: %s\n", err->message);
    g_error_free(err);
    return FALSE;
  }
  printf("replay: %s (%zu B)\n", path, (size_t)len);
  fflush(stdout); /* name the input before a crash report */
  LLVMFuzzerTestOneInput((const uint8_t *)data, len);
  g_free(data);
  (*n)++;
  return TRUE;
}

static gint cmp_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every regular file of `dir`, in name order. */
static gboolean replay_dir(const char *dir, unsigned *n) {
  GError *err = NULL;
  GDir *d = g_dir_open(dir, 0, &err);
  if (!d) {
    fprintf(stderr, "replay: %s\n", err->message);
    g_error_free(err);
    return FALSE;
  }
  GPtrArray *paths = g_ptr_array_new_with_free_func(g_free);
  for (const char *name; (name = g_dir_read_name(d));) {
    char *p = g_build_filename(dir, name, NULL);
    if (g_file_test(p, G_FILE_TEST_IS_REGULAR)) g_ptr_array_add(paths, p);
    else g_free(p);
  }
  g_dir_close(d);
  g_ptr_array_sort(paths, cmp_names);
  gboolean ok = TRUE;
  for (guint i = 0; i < paths->len; i++) ok = replay_file(g_ptr_array_index(paths, i), n) && ok;
  g_ptr_array_free(paths, TRUE);
  return ok;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
    return 2;
  }
  unsigned n = 0;
  gboolean ok = TRUE;
  for (int i = 1; i < argc; i++)
    ok = (g_file_test(argv[i], G_FILE_TEST_IS_DIR) ? replay_dir(argv[i], &n) : replay_file(argv[i], &n)) && ok;
  printf("replay: %u inputs\n", n);
  return ok ? 0 : 2;
}

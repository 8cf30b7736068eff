/* Fuzz target: a trace, as `workload: {kind: text}` or `{kind: chakra}`
** reads it (workloads/trace_text.c, trace_chakra.c) and builds it into the
** operation DAG (workloads/trace.c). The first byte picks the reader: 'c'
** Chakra (the rest is every rank's file, byte for byte), 'C' the same with
** `ctrl_deps: wait`, anything else the text format (the rest is the file). The trace runs on 4 hosts of one
** switch with the groups pair {0, 1} and quad {0..3}; it is written to a
** scratch directory made once per process, then loaded and explained.
**
** Seeds: tests/fuzz/corpus/trace/ (written by hand: text traces, and Chakra
** files from tests/fuzz/make_chakra_seed.py); dictionary: tests/fuzz/trace.dict. */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "tools/libfabsim/scenario.h"

#define NRANKS 4

static char *dir; /* the scratch directory; emptied and removed at exit */

static void remove_dir(void) {
  for (int r = 0; r <= NRANKS; r++) {
    char *p = r < NRANKS ? g_strdup_printf("%s/rank.%d.et", dir, r) : g_strdup_printf("%s/t.txt", dir);
    g_unlink(p);
    g_free(p);
  }
  g_rmdir(dir);
  g_free(dir);
}

static const char *scratch(void) {
  if (!dir) {
    GError *err = NULL;
    dir = g_dir_make_tmp("fabsim-fuzz-trace-XXXXXX", &err);
    if (!dir) g_error("fuzz_trace: %s", err->message);
    atexit(remove_dir);
  }
  return dir;
}

static void put(const char *path, const uint8_t *data, size_t size) {
  if (!g_file_set_contents(path, (const char *)data, (gssize)size, NULL)) g_error("fuzz_trace: cannot write %s", path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  bool chakra = size && (data[0] == 'c' || data[0] == 'C'), wait = chakra && data[0] == 'C';
  const uint8_t *body = size ? data + 1 : data;
  size_t n = size ? size - 1 : 0;
  char *file;
  if (chakra) {
    for (int r = 0; r < NRANKS; r++) {
      char *p = g_strdup_printf("%s/rank.%d.et", scratch(), r);
      put(p, body, n);
      g_free(p);
    }
    file = g_strdup_printf("kind: chakra, traces: '%s/rank.%%d.et', missing_size: 4KiB, ctrl_deps: %s", scratch(),
                           wait ? "wait" : "ignore");
  } else {
    char *p = g_strdup_printf("%s/t.txt", scratch());
    put(p, body, n);
    file = g_strdup_printf("kind: text, file: '%s'", p);
    g_free(p);
  }
  char *yaml = g_strdup_printf("cluster: {nodes: %d}\n"
                               "fabric: {topology: {kind: single-switch}, link: {bandwidth: 100Gbps}}\n"
                               "workload: {%s, groups: {pair: [0, 1], quad: 0-3}}\n", NRANKS, file);
  GError *err = NULL;
  fab_scenario_set_mem_limit(FUZZ_MEM_LIMIT);
  FabScenario *sc = fab_scenario_load_string(yaml, "fuzz.yaml", scratch(), NULL, &err);
  if (sc) {
    g_free(fab_scenario_explain(sc));
    fab_scenario_free(sc);
  } else {
    g_assert(err != NULL);
    g_error_free(err);
  }
  g_free(yaml);
  g_free(file);
  return 0;
}

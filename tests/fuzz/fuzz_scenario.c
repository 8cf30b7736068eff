/* Fuzz target: a scenario's YAML text, loaded as `fabsim validate` loads a
** file: parsed (sim/cfg_yaml.c), read against the schemas, the topology
** described (topologies/) and the workload expanded into its operations
** (workloads/); then, when it loads, explained (validate --explain). Nothing
** is simulated; the memory estimate refuses what needs more than
** FUZZ_MEM_LIMIT. Includes are looked up in an empty directory made once per
** process, so a relative `include:` finds nothing.
**
** Seeds: tests/fuzz/corpus/scenario/ (scenarios/, tests/scenarios/ and
** tests/bad/, copied by tests/fuzz/make_corpus.py); dictionary:
** tests/fuzz/scenario.dict. */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "tools/libfabsim/scenario.h"

static char *include_dir; /* the empty directory; removed at exit */

static void remove_include_dir(void) {
  g_rmdir(include_dir);
  g_free(include_dir);
}

/* The empty include directory, made on the first call. Transfer none. */
static const char *empty_dir(void) {
  if (!include_dir) {
    GError *err = NULL;
    include_dir = g_dir_make_tmp("fabsim-fuzz-XXXXXX", &err);
    if (!include_dir) g_error("fuzz_scenario: %s", err->message); /* no place to run in: stop */
    atexit(remove_include_dir);
  }
  return include_dir;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  GError *err = NULL;
  fab_scenario_set_mem_limit(FUZZ_MEM_LIMIT);
  FabScenario *sc = fab_scenario_load_string(text, "fuzz.yaml", empty_dir(), NULL, &err);
  if (sc) {
    g_free(fab_scenario_explain(sc));
    fab_scenario_free(sc);
  } else {
    g_assert(err != NULL); /* a failure always says why (GLib's rule, README "Errors") */
    g_error_free(err);
  }
  g_free(text);
  return 0;
}

/*
** Whole scenarios from YAML text, for the tests of switch, topology and
** friends: load (failing the test on bad input), run (failing it unless the
** run succeeds), free. Header-only.
*/
#ifndef FAB_TESTSCEN_H
#define FAB_TESTSCEN_H

#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <unistd.h>
#include "tools/libfabsim/driver.h"
#include "tools/libfabsim/json.h"
#include "tools/libfabsim/scenario.h"

/* A scenario file under the source root (FABSIM_SRC, else the current
** directory), failing the test on bad input. */
static inline FabScenario *testscen_load_file(const char *rel, const char *const *sets) {
  const char *src = getenv("FABSIM_SRC");
  char *path = g_build_filename(src ? src : ".", rel, NULL);
  GError *err = NULL;
  FabScenario *sc = fab_scenario_load(path, sets, &err);
  cr_assert_not_null(sc, "%s: %s", path, err ? err->message : "?");
  g_free(path);
  return sc;
}

/* Remove a scratch directory holding plain files only (the tests' temp dirs). */
static inline void testscen_rm_dir(const char *dir) {
  GDir *d = g_dir_open(dir, 0, NULL);
  const char *f;
  while (d && (f = g_dir_read_name(d))) {
    char *p = g_build_filename(dir, f, NULL);
    g_unlink(p);
    g_free(p);
  }
  if (d) g_dir_close(d);
  g_rmdir(dir);
}

/* The JSON summary with its wall-clock fields blanked (g_free it). */
static inline char *testscen_stable_json(const FabResults *r) {
  char *js = fab_json_summary(r);
  GRegex *re = g_regex_new("\"(wall_s|events_per_s|packet_hops_per_s)\": [0-9.e+-]+", 0, 0, NULL);
  char *out = g_regex_replace(re, js, -1, 0, "\"\\1\": X", 0, NULL);
  g_regex_unref(re);
  g_free(js);
  return out;
}

static inline FabScenario *testscen_load(const char *yaml, const char *const *sets) {
  GError *err = NULL;
  FabScenario *sc = fab_scenario_load_string(yaml, "test.yaml", NULL, sets, &err);
  cr_assert_not_null(sc, "%s", err ? err->message : "?");
  return sc;
}

static inline void testscen_run(FabScenario *sc, FabResults *res) {
  FabRunOpts o = {0};
  int rc = fab_run(sc, &o, res);
  cr_assert_eq(rc, 0, "run failed: %s", res->failure ? res->failure : "?");
}

static inline void testscen_done(FabScenario *sc, FabResults *res) {
  fab_results_clear(res);
  fab_scenario_free(sc);
}

/* Loading must fail with a message starting with `where` and holding `what`. */
static inline void testscen_expect_error(const char *yaml, const char *const *sets, const char *where,
                                         const char *what) {
  GError *err = NULL;
  FabScenario *sc = fab_scenario_load_string(yaml, "test.yaml", NULL, sets, &err);
  cr_assert_null(sc, "loaded, expected an error with \"%s\"", what);
  cr_assert(g_str_has_prefix(err->message, where) && strstr(err->message, what), "%s", err->message);
  g_error_free(err);
}

/* Wire bytes that left ports whose name starts with `prefix`. */
static inline uint64_t testscen_bytes_from(const FabResults *r, const char *prefix) {
  uint64_t b = 0;
  for (size_t i = 0; i < r->n_links; i++)
    if (g_str_has_prefix(r->links[i].from, prefix)) b += r->links[i].bytes;
  return b;
}

/* Run the shipped 128-host permutation with `sets` twice: the same JSON
** both times; its time and retransmissions. */
static inline fab_time_t testscen_permutation_twice(const char *const *sets, uint64_t *retx) {
  char *js[2];
  fab_time_t t = 0;
  for (int k = 0; k < 2; k++) {
    FabScenario *sc = testscen_load_file("scenarios/leaf-spine-permutation-128.yaml", sets);
    FabResults res;
    testscen_run(sc, &res);
    t = res.sim_time;
    if (retx) *retx = res.retransmits;
    cr_assert_eq(res.flow_stats.completed, 128, "%s", sets && sets[0] ? sets[0] : "as shipped");
    js[k] = testscen_stable_json(&res);
    testscen_done(sc, &res);
  }
  cr_assert_str_eq(js[0], js[1], "%s: the same JSON twice", sets && sets[0] ? sets[0] : "as shipped");
  g_free(js[0]);
  g_free(js[1]);
  return t;
}

#endif

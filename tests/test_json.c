/* JSON summary: field set, escaping, percentiles, number formats. */
#include <criterion/criterion.h>
#include <glib.h>
#include <math.h>
#include "sim/json.h"

static FabResults sample(FabFlowRec *flows, size_t n) {
  FabResults r = {0};
  r.version = "0.1.0";
  r.scenario = "a \"quoted\"\tname\n";
  r.topology = "single-switch: 2 hosts";
  r.seed = 42;
  r.sim_time = 1500 * FAB_NS;
  r.wall_s = 0.5;
  r.events = 1000;
  r.packet_hops = 250;
  r.endpoints = 2;
  r.drops = 3;
  r.flows = flows;
  r.n_flows = n;
  return r;
}

Test(json, every_contract_field_is_present) {
  FabFlowRec f[1] = {{0, 0, 1, 100, 0, 1000 * FAB_NS, 0}};
  FabResults r = sample(f, 1);
  char *js = fab_json_summary(&r);
  const char *keys[] = {"fabsim_version", "scenario", "seed", "sim_time_s", "wall_s", "events", "events_per_s",
                        "packet_hops", "endpoints", "flows", "count", "completed", "bytes", "fct_p50_s",
                        "fct_p99_s", "fct_max_s", "drops", "retransmits", "pfc_pause_frames", "ecn_marks",
                        "max_queue_bytes", "collectives", "step", NULL};
  for (int i = 0; keys[i]; i++) {
    char *k = g_strdup_printf("\"%s\": ", keys[i]);
    cr_assert(strstr(js, k), "missing %s in %s", k, js);
    g_free(k);
  }
  cr_assert(g_str_has_suffix(js, "}\n"));
  cr_assert_null(strchr(js, '\n') == js + strlen(js) - 1 ? NULL : "x", "one line");
  g_free(js);
}

Test(json, strings_are_escaped) {
  FabResults r = sample(NULL, 0);
  char *js = fab_json_summary(&r);
  cr_assert(strstr(js, "\"scenario\": \"a \\\"quoted\\\"\\tname\\n\""), "%s", js);
  g_free(js);
}

Test(json, values_and_rates) {
  FabFlowRec f[2] = {{0, 0, 1, 100, 0, 1000 * FAB_NS, 0}, {1, 1, 0, 300, 0, 0, 2}};
  FabResults r = sample(f, 2);
  r.failure = "stop_time reached";
  char *js = fab_json_summary(&r);
  cr_assert(strstr(js, "\"sim_time_s\": 1.5e-06"), "%s", js);
  cr_assert(strstr(js, "\"events_per_s\": 2000,"), "%s", js);
  cr_assert(strstr(js, "\"packet_hops_per_s\": 500,"), "%s", js);
  cr_assert(strstr(js, "\"flows\": {\"count\": 2, \"completed\": 1, \"bytes\": 400,"), "%s", js);
  cr_assert(strstr(js, "\"status\": \"failed\", \"failure\": \"stop_time reached\""), "%s", js);
  cr_assert(strstr(js, "\"drops\": 3,"), "%s", js);
  cr_assert(strstr(js, "\"collectives\": [], \"step\": null, \"jobs\": []}"), "%s", js);
  g_free(js);
}

Test(json, fct_percentiles_nearest_rank_over_completed_flows) {
  FabFlowRec f[5];
  for (int i = 0; i < 5; i++) f[i] = (FabFlowRec){(uint32_t)i, 0, 1, 1, 10, 10 + (i + 1) * FAB_US, 0};
  f[4].end = 0; /* not completed: left out */
  FabResults r = sample(f, 5);
  cr_assert_float_eq(fab_results_fct_percentile(&r, 50), 2e-6, 1e-15);
  cr_assert_float_eq(fab_results_fct_percentile(&r, 99), 4e-6, 1e-15);
  cr_assert_float_eq(fab_results_fct_percentile(&r, 100), 4e-6, 1e-15);
  cr_assert_float_eq(fab_results_fct_percentile(&r, 1), 1e-6, 1e-15);
  FabResults none = sample(f, 0);
  cr_assert_eq(fab_results_fct_percentile(&none, 50), 0.0);
}

Test(json, values_by_dotted_path) {
  const char *js = "{\"a\": 1, \"s\": \"x,}\\\"y\", \"flows\": {\"count\": 3, \"fct_p99_s\": 1.5e-06},"
                   " \"collectives\": [{\"op\": \"allreduce\", \"busbw_GBps\": 42}, {\"busbw_GBps\": 7}], \"step\": null}";
  cr_assert_eq(g_ascii_strtod(fab_json_value(js, "a"), NULL), 1.0);
  cr_assert_eq(g_ascii_strtod(fab_json_value(js, "flows.count"), NULL), 3.0);
  cr_assert_eq(g_ascii_strtod(fab_json_value(js, "flows.fct_p99_s"), NULL), 1.5e-06);
  cr_assert_eq(g_ascii_strtod(fab_json_value(js, "collectives.1.busbw_GBps"), NULL), 7.0, "past a string with , } and \\\"");
  cr_assert(g_str_has_prefix(fab_json_value(js, "collectives.0.op"), "\"allreduce\""));
  cr_assert(g_str_has_prefix(fab_json_value(js, "step"), "null"));
  cr_assert_null(fab_json_value(js, "flows.nope"));
  cr_assert_null(fab_json_value(js, "collectives.2.op"));
  cr_assert_null(fab_json_value(js, "count"), "members only at their own level");
  cr_assert_null(fab_json_value(js, "flows."));
  cr_assert_null(fab_json_value("{\"a\": ", "b"), "malformed text");
}

/* JSON summary (tools/libfabsim/json.h): field set, escaping, percentiles,
** number formats; the writer is driven by the field table (fields.h); the
** index that reads a summary back; number lookups by dotted path on a
** FabResults; the sweep's columns. */
#include <criterion/criterion.h>
#include <glib.h>
#include <math.h>
#include <string.h>
#include "tools/libfabsim/fields.h"
#include "tools/libfabsim/json.h"
#include "tools/libfabsim/results.h"

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

/* Free what fab_results_finalize allocated (the step summaries) in results
** whose tables the test owns, and forget it. */
static void unfinalize(FabResults *r) {
  for (size_t j = 0; r->summaries && j < r->n_jobs; j++) {
    g_free(r->summaries[j].step_times_s);
    g_free(r->summaries[j].by_op);
    g_free(r->summaries[j].by_tag);
  }
  g_free(r->summaries);
  r->summaries = NULL;
  r->step = NULL;
  for (size_t j = 0; j < r->n_jobs; j++) r->jobs[j].step = NULL;
}

Test(json, every_contract_field_is_present) {
  FabFlowRec f[1] = {{0, 0, 1, 100, 0, 1000 * FAB_NS, 0}};
  FabResults r = sample(f, 1);
  fab_results_finalize(&r);
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
  unfinalize(&r);
}

Test(json, strings_are_escaped) {
  FabResults r = sample(NULL, 0);
  fab_results_finalize(&r);
  char *js = fab_json_summary(&r);
  cr_assert(strstr(js, "\"scenario\": \"a \\\"quoted\\\"\\tname\\n\""), "%s", js);
  g_free(js);
  unfinalize(&r);
}

Test(json, values_and_rates) {
  FabFlowRec f[2] = {{0, 0, 1, 100, 0, 1000 * FAB_NS, 0}, {1, 1, 0, 300, 0, 0, 2}};
  FabResults r = sample(f, 2);
  r.failure = "stop_time reached";
  fab_results_finalize(&r);
  char *js = fab_json_summary(&r);
  cr_assert(strstr(js, "\"sim_time_s\": 1.5e-06"), "%s", js);
  cr_assert(strstr(js, "\"events_per_s\": 2000,"), "%s", js);
  cr_assert(strstr(js, "\"packet_hops_per_s\": 500,"), "%s", js);
  cr_assert(strstr(js, "\"flows\": {\"count\": 2, \"completed\": 1, \"bytes\": 400,"), "%s", js);
  cr_assert(strstr(js, "\"status\": \"failed\", \"failure\": \"stop_time reached\""), "%s", js);
  cr_assert(strstr(js, "\"drops\": 3,"), "%s", js);
  cr_assert(strstr(js, "\"collectives\": [], \"step\": null, \"jobs\": [], \"failures\": [], \"warnings\": [], "
                       "\"fabric_segment_bytes\": null, \"failure_impact\": null, \"fast_forward\": null, \"sharp\": null, "
                       "\"nvls_segment_bytes\": null}"), "%s", js);
  g_free(js);
  unfinalize(&r);
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
  cr_assert(isnan(fab_results_fct_percentile(&none, 50)), "no completed flow: no percentile");
  /* and finalize puts the same numbers in the summary */
  fab_results_finalize(&r);
  cr_assert_eq(r.flow_stats.fct_p50_s, fab_results_fct_percentile(&r, 50));
  cr_assert_eq(r.flow_stats.fct_p99_s, fab_results_fct_percentile(&r, 99));
  cr_assert_eq(r.flow_stats.fct_max_s, fab_results_fct_percentile(&r, 100));
  cr_assert_eq(r.flow_stats.completed, 4);
  unfinalize(&r);
}

Test(json, folded_completion_times_give_the_records_percentiles) {
  /* 200,000 flows whose completion times spread over every byte of a
  ** 32-bit number (many equal, some small runs, some above 2^32 ps), kept
  ** as records in one result and folded in another: every percentile is
  ** the same (the folded times are sorted in place, a byte at a time). */
  size_t n = 200000;
  FabFlowRec *f = g_new0(FabFlowRec, n);
  FabFlowFold fold = {0};
  uint64_t x = 12345;
  for (size_t i = 0; i < n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t fct = i % 5 == 0 ? 1000 + (x >> 60) : i % 97 == 0 ? (1ull << 32) + (x >> 40) : (x >> 32);
    f[i] = (FabFlowRec){(uint32_t)i, 0, 1, 1, 7, i % 1000 == 999 ? 0 : 7 + fct, 0};
    fab_flow_fold_add(&fold, &f[i]);
  }
  FabResults whole = sample(f, n), folded = sample(NULL, 0);
  folded.flow_fold = fold;
  static const double ps[] = {0.0001, 0.5, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100};
  for (size_t k = 0; k < G_N_ELEMENTS(ps); k++)
    cr_assert_eq(fab_results_fct_percentile(&folded, ps[k]), fab_results_fct_percentile(&whole, ps[k]),
                 "p%g: folded %.15g s, records %.15g s", ps[k], fab_results_fct_percentile(&folded, ps[k]),
                 fab_results_fct_percentile(&whole, ps[k]));
  cr_assert_eq(folded.flow_fold.completed, n - n / 1000);
  fab_flow_fold_clear(&folded.flow_fold);
  g_free(f);
}

/* ---- the index ------------------------------------------------------------- */

/* The scalar at path, or NULL; and as a number. */
#define GET(ix, path) fab_json_index_get(ix, path)
static double num_at(const FabJsonIndex *ix, const char *path) {
  const char *v = GET(ix, path);
  cr_assert_not_null(v, "no %s", path);
  char *end = NULL;
  double d = g_ascii_strtod(v, &end);
  cr_assert(end != v && *end == 0, "%s is not a number: %s", path, v);
  return d;
}

Test(json, values_by_dotted_path) {
  const char *js = "{\"a\": 1, \"s\": \"x,}\\\"y\", \"flows\": {\"count\": 3, \"fct_p99_s\": 1.5e-06},"
                   " \"collectives\": [{\"op\": \"allreduce\", \"busbw_GBps\": 42}, {\"busbw_GBps\": 7}], \"step\": null}";
  FabJsonIndex *ix = fab_json_index_new(js);
  cr_assert_not_null(ix);
  cr_assert_eq(num_at(ix, "a"), 1.0);
  cr_assert_eq(num_at(ix, "flows.count"), 3.0);
  cr_assert_eq(num_at(ix, "flows.fct_p99_s"), 1.5e-06);
  cr_assert_str_eq(GET(ix, "flows.fct_p99_s"), "1.5e-06", "numbers as written");
  cr_assert_eq(num_at(ix, "collectives.1.busbw_GBps"), 7.0, "past a string with , } and \\\"");
  cr_assert_str_eq(GET(ix, "s"), "\"x,}\\\"y\"", "a string with its quotes, as written");
  cr_assert_str_eq(GET(ix, "collectives.0.op"), "\"allreduce\"");
  cr_assert_str_eq(GET(ix, "step"), "null");
  cr_assert_null(GET(ix, "flows.nope"));
  cr_assert_null(GET(ix, "collectives.2.op"));
  cr_assert_null(GET(ix, "count"), "members only at their own level");
  cr_assert_null(GET(ix, "flows."));
  cr_assert_null(GET(ix, "flows"), "an object is not a scalar");
  cr_assert_null(GET(ix, "collectives"), "an array is not a scalar");
  cr_assert_null(GET(ix, "collectives.0"));
  cr_assert_null(GET(ix, ""));
  cr_assert_null(GET(ix, NULL));
  fab_json_index_free(ix);
  cr_assert_null(fab_json_index_new("{\"a\": "), "malformed text");
  cr_assert_null(GET(NULL, "a"));
  fab_json_index_free(NULL);
}

Test(json, index_nested_objects_arrays_and_literals) {
  const char *js = "\n { \"a\" : { \"b\" : { \"c\" : -2.5e+3 , \"d\": [ ] , \"e\": { } } } ,\n"
                   "   \"m\": [[1, 2], [3, [4, {\"x\": 5}]]], \"t\": true, \"f\": false, \"n\": null,\r\n"
                   "   \"o\": [{\"k\": \"v\"}, null, \"w\", 0] }\t\n";
  FabJsonIndex *ix = fab_json_index_new(js);
  cr_assert_not_null(ix);
  cr_assert_str_eq(GET(ix, "a.b.c"), "-2.5e+3");
  cr_assert_eq(num_at(ix, "a.b.c"), -2500.0);
  cr_assert_null(GET(ix, "a.b.d"), "an empty array has no scalars");
  cr_assert_null(GET(ix, "a.b.d.0"));
  cr_assert_null(GET(ix, "a.b.e"));
  cr_assert_null(GET(ix, "a.b"));
  cr_assert_null(GET(ix, "b.c"), "paths start at the top");
  cr_assert_eq(num_at(ix, "m.0.0"), 1.0);
  cr_assert_eq(num_at(ix, "m.0.1"), 2.0);
  cr_assert_eq(num_at(ix, "m.1.0"), 3.0);
  cr_assert_eq(num_at(ix, "m.1.1.0"), 4.0);
  cr_assert_eq(num_at(ix, "m.1.1.1.x"), 5.0);
  cr_assert_null(GET(ix, "m.0.2"));
  cr_assert_null(GET(ix, "m.2.0"));
  cr_assert_null(GET(ix, "m.01.0"), "indices as written, no leading zeros");
  cr_assert_str_eq(GET(ix, "t"), "true");
  cr_assert_str_eq(GET(ix, "f"), "false");
  cr_assert_str_eq(GET(ix, "n"), "null");
  cr_assert_str_eq(GET(ix, "o.0.k"), "\"v\"");
  cr_assert_str_eq(GET(ix, "o.1"), "null");
  cr_assert_str_eq(GET(ix, "o.2"), "\"w\"");
  cr_assert_str_eq(GET(ix, "o.3"), "0");
  fab_json_index_free(ix);

  /* an empty object and an empty array are well-formed, with nothing in them */
  ix = fab_json_index_new("{}");
  cr_assert_not_null(ix);
  cr_assert_null(GET(ix, "a"));
  fab_json_index_free(ix);
  ix = fab_json_index_new(" [ ] ");
  cr_assert_not_null(ix);
  cr_assert_null(GET(ix, "0"));
  fab_json_index_free(ix);
  /* an array at the top: elements by position */
  ix = fab_json_index_new("[10, {\"a\": 20}]");
  cr_assert_not_null(ix);
  cr_assert_eq(num_at(ix, "0"), 10.0);
  cr_assert_eq(num_at(ix, "1.a"), 20.0);
  fab_json_index_free(ix);
}

Test(json, index_strings_with_escapes) {
  /* each escape kept as written (the index hands back the JSON text) */
  const char *js = "{\"q\": \"a\\\"b\", \"bs\": \"c:\\\\dir\\\\\", \"nl\": \"x\\ny\\tz\\r\", \"u\": \"caf\\u00e9\","
                   " \"sl\": \"a\\/b\", \"empty\": \"\", \"brackets\": \"[{]}\", \"after\": 9,"
                   " \"k,}]\": 1, \"utf8\": \"caf\xc3\xa9 \xe2\x80\x94\"}";
  FabJsonIndex *ix = fab_json_index_new(js);
  cr_assert_not_null(ix);
  cr_assert_str_eq(GET(ix, "q"), "\"a\\\"b\"");
  cr_assert_str_eq(GET(ix, "bs"), "\"c:\\\\dir\\\\\"", "a backslash before the closing quote");
  cr_assert_str_eq(GET(ix, "nl"), "\"x\\ny\\tz\\r\"");
  cr_assert_str_eq(GET(ix, "u"), "\"caf\\u00e9\"");
  cr_assert_str_eq(GET(ix, "sl"), "\"a\\/b\"");
  cr_assert_str_eq(GET(ix, "empty"), "\"\"");
  cr_assert_str_eq(GET(ix, "brackets"), "\"[{]}\"");
  cr_assert_eq(num_at(ix, "after"), 9.0, "brackets in a string do not nest");
  cr_assert_eq(num_at(ix, "k,}]"), 1.0, "a member name with , } ]");
  cr_assert_str_eq(GET(ix, "utf8"), "\"caf\xc3\xa9 \xe2\x80\x94\"");
  fab_json_index_free(ix);

  /* what fab_json_put_str writes reads back as the same text */
  GString *s = g_string_new("{\"v\": ");
  GString *v = g_string_new(NULL);
  fab_json_put_str(v, "tab\there \"q\" back\\slash\nnew\x01");
  g_string_append(s, v->str);
  g_string_append_c(s, '}');
  cr_assert_str_eq(v->str, "\"tab\\there \\\"q\\\" back\\\\slash\\nnew\\u0001\"");
  ix = fab_json_index_new(s->str);
  cr_assert_not_null(ix, "%s", s->str);
  cr_assert_str_eq(GET(ix, "v"), v->str);
  fab_json_index_free(ix);
  g_string_free(s, TRUE);
  g_string_free(v, TRUE);
}

Test(json, index_malformed_text_is_null) {
  static const char *const bad[] = {
    "",                            /* nothing */
    "   \n",                       /* only blanks */
    "{\"a\": ",                    /* cut short */
    "{\"a\": 1",                   /* no closing brace */
    "[1, 2",                       /* no closing bracket */
    "{\"a\" 1}",                   /* no colon */
    "{\"a\": 1 \"b\": 2}",         /* no comma */
    "{\"a\": 1,}",                 /* trailing comma */
    "[1, 2,]",                     /* trailing comma */
    "[1 2]",                       /* no comma */
    "{a: 1}",                      /* an unquoted name */
    "{\"a: 1}",                    /* an unterminated name */
    "{\"a\": \"x}",                /* an unterminated string */
    "{\"a\": \"x\\\"}",            /* the quote is escaped: unterminated */
    "{\"a\": 1}}",                 /* more after the value */
    "{\"a\": 1} {\"b\": 2}",       /* two values */
    "{\"a\": 1} x",                /* trailing text */
    "{\"a\": [1, 2}}",             /* mismatched brackets */
    "{\"a\": {\"b\": 1]}",         /* mismatched braces */
    "{,}",                         /* a comma alone */
    "{\"a\": }",                   /* no value */
    "[,1]",                        /* no element before the comma */
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    FabJsonIndex *ix = fab_json_index_new(bad[i]);
    cr_expect_null(ix, "accepted malformed text: '%s'", bad[i]);
    fab_json_index_free(ix);
  }
  cr_assert_null(fab_json_index_new(NULL));
}

/* n nested arrays around a 1 (the scalar at path "0.0...0", n zeros). */
static char *nested(int n) {
  GString *s = g_string_new(NULL);
  for (int i = 0; i < n; i++) g_string_append_c(s, '[');
  g_string_append_c(s, '1');
  for (int i = 0; i < n; i++) g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static char *zeros_path(int n) {
  GString *s = g_string_new(NULL);
  for (int i = 0; i < n; i++) g_string_append(s, i ? ".0" : "0");
  return g_string_free(s, FALSE);
}

Test(json, index_deep_nesting_is_limited) {
  /* moderate nesting is read */
  char *t = nested(40), *p = zeros_path(40);
  FabJsonIndex *ix = fab_json_index_new(t);
  cr_assert_not_null(ix, "40 levels");
  cr_assert_str_eq(GET(ix, p), "1");
  fab_json_index_free(ix);
  g_free(t);
  g_free(p);
  /* objects count too */
  GString *o = g_string_new(NULL);
  for (int i = 0; i < 40; i++) g_string_append(o, "{\"k\": ");
  g_string_append(o, "2");
  for (int i = 0; i < 40; i++) g_string_append_c(o, '}');
  ix = fab_json_index_new(o->str);
  cr_assert_not_null(ix);
  GString *kp = g_string_new("k");
  for (int i = 1; i < 40; i++) g_string_append(kp, ".k");
  cr_assert_str_eq(GET(ix, kp->str), "2");
  fab_json_index_free(ix);
  g_string_free(kp, TRUE);
  g_string_free(o, TRUE);
  /* too deep: refused (NULL), not a crash, however deep */
  const int deep[] = {100, 1000, 200000};
  for (size_t i = 0; i < G_N_ELEMENTS(deep); i++) {
    t = nested(deep[i]);
    ix = fab_json_index_new(t);
    cr_assert_null(ix, "%d levels of nesting accepted", deep[i]);
    g_free(t);
  }
  GString *d = g_string_new(NULL);
  for (int i = 0; i < 200000; i++) g_string_append(d, "{\"a\":");
  cr_assert_null(fab_json_index_new(d->str), "deep and unterminated");
  g_string_free(d, TRUE);
}

/* ---- hand-made results with every table ------------------------------------ */

typedef struct Full {
  FabResults r;
  FabFlowRec flows[3];
  FabCollRec colls[3];
  FabStepRec steps[2];
  FabJobRec jobs[2];
  FabFailureRec failures[2];
  FabFailureImpact impact;
  FabFfRec ff;
  FabSharpRec sharp;
  FabSharpTreeRec trees[1];
  char deadlock[2][FAB_FIELD_NAME_LEN];
  char *warnings[2];
} Full;

/* Two jobs: "train" (2 steps, two allreduces and an allgather) and "bench"
** (no steps); three flows, one not completed; a deadlock cycle. */
static void full(Full *x) {
  memset(x, 0, sizeof *x);
  FabResults *r = &x->r;
  r->version = "0.1.0";
  r->scenario = "full";
  r->topology = "single-switch: 4 hosts";
  r->failure = "PFC deadlock";
  r->seed = 7;
  r->sim_time = 250 * FAB_US;
  r->wall_s = 0.25;
  r->events = 5000;
  r->packet_hops = 1000;
  r->endpoints = 4;
  r->nvlink_segment = 65536;
  r->drops = 1, r->retransmits = 2, r->pfc_pause_frames = 3, r->ecn_marks = 4, r->max_queue_bytes = 5, r->cnps = 6;
  r->pfc_paused = 7 * FAB_US;
  x->flows[0] = (FabFlowRec){.id = 0, .src = 0, .dst = 1, .bytes = 1000, .start = 0, .end = 10 * FAB_US};
  x->flows[1] = (FabFlowRec){.id = 1, .src = 1, .dst = 2, .bytes = 2000, .start = FAB_US, .end = 31 * FAB_US};
  x->flows[2] = (FabFlowRec){.id = 2, .src = 2, .dst = 3, .bytes = 4000, .start = 2 * FAB_US, .end = 0};
  r->flows = x->flows, r->n_flows = 3;
  /* allreduce of 1 MB on 4 ranks in 100 us: algbw 10 GB/s, busbw x 2*3/4 = 15 */
  x->colls[0] = (FabCollRec){.op = "allreduce", .algorithm = "ring", .protocol = "simple", .tag = "dp",
                             .bytes = 1000000, .count = 250000, .dtype_bytes = 4, .ranks = 4, .root = -1,
                             .channels = 2, .job = 0, .step = 0, .start = 0, .end = 100 * FAB_US};
  /* allgather of 2 MB in 50 us: algbw 40 GB/s, busbw x 3/4 = 30 */
  x->colls[1] = (FabCollRec){.op = "allgather", .algorithm = "ring", .protocol = "ll128", .tag = NULL,
                             .bytes = 2000000, .count = 125000, .dtype_bytes = 4, .ranks = 4, .root = -1,
                             .channels = 2, .job = 0, .step = 1, .start = 120 * FAB_US, .end = 170 * FAB_US};
  x->colls[2] = (FabCollRec){.op = "allreduce", .algorithm = "tree", .protocol = "ll", .tag = "dp",
                             .bytes = 500000, .count = 125000, .dtype_bytes = 4, .ranks = 4, .root = -1,
                             .channels = 1, .job = 0, .step = 1, .start = 180 * FAB_US, .end = 0};
  r->colls = x->colls, r->n_colls = 3;
  x->steps[0] = (FabStepRec){.job = 0, .step = 0, .start = 0, .end = 110 * FAB_US, .compute_s = 50e-6,
                             .comm_s = 100e-6, .exposed_comm_s = 60e-6, .overlap_s = 40e-6, .bubble_s = 0};
  x->steps[1] = (FabStepRec){.job = 0, .step = 1, .start = 110 * FAB_US, .end = 240 * FAB_US, .compute_s = 70e-6,
                             .comm_s = 50e-6, .exposed_comm_s = 50e-6, .overlap_s = 0, .bubble_s = 10e-6};
  r->steps = x->steps, r->n_steps = 2;
  x->jobs[0] = (FabJobRec){.name = "train", .kind = "training", .ranks = 4, .flows = 3, .completed = 2,
                           .bytes = 7000, .start = 0, .end = 240 * FAB_US};
  x->jobs[1] = (FabJobRec){.name = "bench", .kind = "flows", .ranks = 2, .flows = 1, .completed = 0,
                           .bytes = 10, .start = 5 * FAB_US, .end = 0};
  r->jobs = x->jobs, r->n_jobs = 2;
  x->failures[0] = (FabFailureRec){.link = "leaf0-spine1", .change = "down", .at = 100 * FAB_US, .lost = 12,
                                   .lost_bytes = 50136, .rerouted = 28, .rerouted_at = 1100 * FAB_US};
  x->failures[1] = (FabFailureRec){.link = "leaf1-spine0", .change = "rate", .at = 0, .bps = 50000000000ULL};
  r->failures = x->failures, r->n_failures = 2;
  x->impact = (FabFailureImpact){.baseline_time = 200 * FAB_US, .slowdown = 0.25, .baseline_fct_p50_s = 10e-6,
                                 .baseline_fct_p99_s = 30e-6, .baseline_fct_max_s = 30e-6, .moved_bytes = 4178};
  r->impact = &x->impact;
  x->ff = (FabFfRec){.window = 20 * FAB_US, .tolerance = 0.02, .looks = 12, .jumps = 2, .skipped = 80 * FAB_US,
                     .skipped_fraction = 0.5, .skipped_packets = 1234};
  r->ff = &x->ff;
  x->trees[0] = (FabSharpTreeRec){.id = 0, .job = 0, .root = "spine0", .nodes = 3, .members = 4, .reductions = 2,
                                  .llt_reductions = 1,
                                  .bytes_in = 4096, .bytes_out = 4096, .peak_buffer_bytes = 1024, .active = FAB_US,
                                  .lock_waits = 1, .lock_wait = 2 * FAB_US};
  x->sharp = (FabSharpRec){.model = "quantum", .lock = "operation", .fallbacks = 1, .n_trees = 1, .trees = x->trees};
  r->sharp = &x->sharp;
  g_strlcpy(x->deadlock[0], "ring0:p2", FAB_FIELD_NAME_LEN);
  g_strlcpy(x->deadlock[1], "ring1:p2", FAB_FIELD_NAME_LEN);
  r->deadlock = x->deadlock, r->n_deadlock = 2;
  x->warnings[0] = "a \"quoted\" warning", x->warnings[1] = "another";
  r->warnings = x->warnings, r->n_warnings = 2;
  fab_results_finalize(r);
}

static double lookup(const FabResults *r, const char *path) {
  double v = -12345;
  cr_assert(fab_fields_lookup(&fab_results_table, r, path, &v), "no number at %s", path);
  return v;
}

static void no_number(const FabResults *r, const char *path) {
  double v = -12345;
  cr_assert_not(fab_fields_lookup(&fab_results_table, r, path, &v), "a number at %s: %g", path, v);
}

Test(fields, lookup_by_dotted_path) {
  Full x;
  full(&x);
  const FabResults *r = &x.r;
  cr_assert_eq(lookup(r, "sim_time_s"), 250e-6);
  cr_assert_eq(lookup(r, "seed"), 7);
  cr_assert_eq(lookup(r, "events"), 5000);
  cr_assert_eq(lookup(r, "events_per_s"), 20000, "derived by finalize");
  cr_assert_eq(lookup(r, "cnps"), 6);
  cr_assert_eq(lookup(r, "pfc_paused_s"), 7e-6);
  cr_assert_eq(lookup(r, "nvlink_segment_bytes"), 65536);
  /* flows: nearest rank over the 2 completed flows (10 us and 30 us) */
  cr_assert_eq(lookup(r, "flows.count"), 3);
  cr_assert_eq(lookup(r, "flows.completed"), 2);
  cr_assert_eq(lookup(r, "flows.bytes"), 7000);
  cr_assert_eq(lookup(r, "flows.fct_p50_s"), 10e-6);
  cr_assert_eq(lookup(r, "flows.fct_p99_s"), 30e-6);
  cr_assert_eq(lookup(r, "flows.fct_p99_s"), fab_results_fct_percentile(r, 99));
  /* collectives */
  cr_assert_float_eq(lookup(r, "collectives.0.busbw_GBps"), 15.0, 1e-9);
  cr_assert_float_eq(lookup(r, "collectives.1.algbw_GBps"), 40.0, 1e-9);
  cr_assert_float_eq(lookup(r, "collectives.1.busbw_GBps"), 30.0, 1e-9);
  cr_assert_eq(lookup(r, "collectives.1.busbw_GBps"), r->colls[1].busbw_GBps);
  cr_assert_eq(lookup(r, "collectives.1.time_s"), 50e-6);
  cr_assert_eq(lookup(r, "collectives.1.start_s"), 120e-6);
  cr_assert_eq(lookup(r, "collectives.0.root"), -1);
  cr_assert_eq(lookup(r, "collectives.2.bytes"), 500000);
  cr_assert(isnan(lookup(r, "collectives.2.time_s")), "not completed: null in the JSON, NaN here");
  cr_assert(isnan(lookup(r, "collectives.2.end_s")), "end 0 is null");
  /* jobs, and a job's steps */
  cr_assert_eq(lookup(r, "jobs.0.time_s"), 240e-6);
  cr_assert_eq(lookup(r, "jobs.1.ranks"), 2);
  cr_assert(isnan(lookup(r, "jobs.1.time_s")), "not finished");
  cr_assert_eq(lookup(r, "jobs.0.step.steps"), 2);
  cr_assert_float_eq(lookup(r, "jobs.0.step.step_time_s"), 120e-6, 1e-18);
  cr_assert_eq(lookup(r, "jobs.0.step.step_times_s.1"), 130e-6);
  cr_assert_float_eq(lookup(r, "step.step_time_s"), 120e-6, 1e-18);
  cr_assert_float_eq(lookup(r, "step.bubble_fraction"), 10e-6 / 240e-6, 1e-15);
  cr_assert_eq(lookup(r, "step.by_op.allreduce.count"), 2);
  cr_assert_eq(lookup(r, "step.by_op.allreduce.bytes"), 1500000);
  cr_assert_eq(lookup(r, "step.by_op.allreduce.time_s"), 100e-6, "the incomplete one counts 0");
  cr_assert_eq(lookup(r, "step.by_op.allgather.count"), 1);
  cr_assert_eq(lookup(r, "step.by_tag.dp.count"), 2);
  cr_assert_eq(lookup(r, "step.by_tag.none.count"), 1, "untagged: none");
  /* not numbers, or not there */
  no_number(r, "no_such_field");
  no_number(r, "flows.nope");
  no_number(r, "flows");
  no_number(r, "flows.");
  no_number(r, ".flows.count");
  no_number(r, "");
  no_number(r, "scenario");
  no_number(r, "status");
  no_number(r, "failure");
  no_number(r, "collectives.0.op");
  no_number(r, "collectives.0.tag");
  no_number(r, "jobs.0.name");
  no_number(r, "collectives");
  no_number(r, "collectives.0");
  no_number(r, "collectives.3.time_s");
  no_number(r, "collectives.x.time_s");
  no_number(r, "collectives.-1.time_s");
  no_number(r, "collectives.0.time_s.1");
  no_number(r, "sim_time_s.x");
  no_number(r, "step.by_op.reduce.count");
  no_number(r, "step.step_times_s.2");
  no_number(r, "jobs.1.step.steps");
  no_number(r, "deadlock.0");
  no_number(r, "sim_time_ps"); /* an HDF5 /meta attribute, not in the JSON */
  unfinalize(&x.r);
}

/* A path costs the walk of the tables down to it, whatever the run's size:
** the last of 4096 collectives is found as the first is. */
Test(fields, lookup_in_a_large_run) {
  enum { N = 4096 };
  FabCollRec *c = g_new0(FabCollRec, N);
  for (uint32_t i = 0; i < N; i++)
    c[i] = (FabCollRec){.op = "allreduce", .algorithm = "ring", .protocol = "simple", .bytes = 1000 * (i + 1),
                        .ranks = 8, .root = -1, .start = (fab_time_t)i * FAB_US, .end = (fab_time_t)i * FAB_US + (i + 1) * FAB_NS};
  FabResults r = {.version = "0.1.0", .scenario = "big", .colls = c, .n_colls = N};
  fab_results_finalize(&r);
  cr_assert_eq(lookup(&r, "collectives.0.bytes"), 1000);
  cr_assert_eq(lookup(&r, "collectives.4095.bytes"), 4096000);
  cr_assert_eq(lookup(&r, "collectives.0.time_s"), 1e-9);
  cr_assert_eq(lookup(&r, "collectives.4095.time_s"), r.colls[4095].time_s);
  cr_assert_float_eq(lookup(&r, "collectives.4095.time_s"), 4096e-9, 1e-20);
  cr_assert_float_eq(lookup(&r, "collectives.4095.algbw_GBps"), 1000.0, 1e-9);
  cr_assert_eq(lookup(&r, "collectives.2047.start_s"), 2047e-6);
  no_number(&r, "collectives.4096.time_s");
  no_number(&r, "collectives.18446744073709551616.time_s");
  unfinalize(&r);
  g_free(c);
}

/* ---- the writer walks the field table ---------------------------------------- */

/* The member names of the object at the top of `js`, in order. */
static GPtrArray *top_keys(const char *js) {
  GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
  int depth = 0;
  bool want_key = false;
  for (const char *p = js; *p; p++) {
    if (*p == '"') {
      const char *a = ++p;
      while (*p && *p != '"') p += *p == '\\' && p[1] ? 2 : 1;
      if (depth == 1 && want_key) g_ptr_array_add(keys, g_strndup(a, (gsize)(p - a)));
      want_key = false;
      if (!*p) break;
    } else if (*p == '{' || *p == '[') {
      depth++;
      want_key = depth == 1;
    } else if (*p == '}' || *p == ']') {
      depth--;
    } else if (*p == ',' && depth == 1) {
      want_key = true;
    }
  }
  return keys;
}

static bool is_number_type(FabFieldType t) {
  return t == FAB_F_U8 || t == FAB_F_U32 || t == FAB_F_I32 || t == FAB_F_U64 || t == FAB_F_F64 || t == FAB_F_PS_S;
}

/* Every field of table t flagged FAB_FF_JSON is in the summary at
** prefix+name (found through the index), fields not flagged are not, and
** each number there is what fab_fields_lookup gives (at the writer's
** precision). Recurses into records. */
static void check_table(const FabJsonIndex *ix, const FabResults *top, const FabFieldTable *t, const void *rec,
                        const char *prefix, size_t first, int *n_checked) {
  for (size_t i = first; i < t->n; i++) {
    const FabField *f = &t->f[i];
    char *path = g_strdup_printf("%s%s", prefix, f->name);
    const char *v = fab_json_index_get(ix, path);
    if (!(f->flags & FAB_FF_JSON)) {
      cr_assert_null(v, "%s is not flagged for JSON but is there: %s", path, v);
      g_free(path);
      continue;
    }
    const void *p = (const char *)rec + f->off;
    size_t n = f->off_n ? *(const size_t *)(const void *)((const char *)rec + f->off_n) : 0;
    char *sub = g_strdup_printf("%s.", path);
    char *sub0 = g_strdup_printf("%s.0", path);
    char *sub0dot = g_strdup_printf("%s.0.", path);
    switch (f->type) {
    case FAB_F_STR:
    case FAB_F_NAME:
      cr_assert_not_null(v, "field %s missing", path);
      cr_assert(v[0] == '"' || strcmp(v, "null") == 0, "%s is not a string: %s", path, v);
      (*n_checked)++;
      break;
    case FAB_F_OBJ: check_table(ix, top, f->sub, p, sub, 0, n_checked); break;
    case FAB_F_PTR: {
      const void *to = *(const void *const *)p;
      cr_assert_not_null(to, "%s: the hand-made results should have it", path);
      check_table(ix, top, f->sub, to, sub, 0, n_checked);
      break;
    }
    case FAB_F_ARR:
      cr_assert_gt(n, 0, "%s: the hand-made results should have some", path);
      check_table(ix, top, f->sub, *(const char *const *)p, sub0dot, 0, n_checked);
      break;
    case FAB_F_KEYED: { /* "path.KEY.field": the first field is the key */
      cr_assert_gt(n, 0, "%s: the hand-made results should have some", path);
      const void *e = *(const char *const *)p;
      char *kp = g_strdup_printf("%s.%s.", path, FAB_FIELD_AT(e, &f->sub->f[0], const char *));
      check_table(ix, top, f->sub, e, kp, 1, n_checked);
      g_free(kp);
      break;
    }
    case FAB_F_F64_ARR:
    case FAB_F_NAME_ARR:
    case FAB_F_STR_ARR:
      cr_assert_gt(n, 0, "%s: the hand-made results should have some", path);
      cr_assert_not_null(fab_json_index_get(ix, sub0), "%s missing", sub0);
      (*n_checked)++;
      break;
    default: {
      cr_assert(is_number_type(f->type));
      cr_assert_not_null(v, "field %s missing", path);
      double d = 0;
      cr_assert(fab_fields_lookup(&fab_results_table, top, path, &d), "lookup of %s", path);
      if (strcmp(v, "null") == 0) {
        cr_assert(isnan(d), "%s: null in the JSON, %g by lookup", path, d);
      } else if (f->type == FAB_F_F64 || f->type == FAB_F_PS_S) {
        char buf[G_ASCII_DTOSTR_BUF_SIZE];
        g_ascii_formatd(buf, sizeof buf, "%.9g", d);
        cr_assert_str_eq(v, buf, "%s: JSON %s, lookup %.17g", path, v, d);
      } else {
        cr_assert_eq(g_ascii_strtod(v, NULL), d, "%s: JSON %s, lookup %.17g", path, v, d);
      }
      (*n_checked)++;
      break;
    }
    }
    g_free(sub);
    g_free(sub0);
    g_free(sub0dot);
    g_free(path);
  }
}

Test(fields, json_writer_walks_the_field_table) {
  Full x;
  full(&x);
  char *js = fab_json_summary(&x.r);
  FabJsonIndex *ix = fab_json_index_new(js);
  cr_assert_not_null(ix, "the summary is well-formed JSON: %s", js);

  /* the top-level members: exactly the fields flagged FAB_FF_JSON, in table order */
  GPtrArray *keys = top_keys(js);
  guint k = 0;
  for (size_t i = 0; i < fab_results_table.n; i++) {
    const FabField *f = &fab_results_table.f[i];
    char *key = g_strdup_printf("\"%s\": ", f->name);
    if (f->flags & FAB_FF_JSON) {
      cr_assert_lt(k, keys->len, "%s missing at the end of %s", f->name, js);
      cr_assert_str_eq(keys->pdata[k], f->name, "member %u", k);
      cr_assert(strstr(js, key), "%s is not a key in %s", f->name, js);
      k++;
    }
    g_free(key);
  }
  cr_assert_eq(k, keys->len, "members not in the table: %s", js);
  cr_assert_null(strstr(js, "\"sim_time_ps\""), "a /meta-only field in the JSON");

  /* and below: every flagged field of every record, numbers as lookup gives them */
  int n = 0;
  check_table(ix, &x.r, &fab_results_table, &x.r, "", 0, &n);
  cr_assert_gt(n, 60, "only %d fields checked", n);
  cr_assert_str_eq(fab_json_index_get(ix, "deadlock.1"), "\"ring1:p2\"");
  cr_assert_str_eq(fab_json_index_get(ix, "warnings.0"), "\"a \\\"quoted\\\" warning\"");
  cr_assert_str_eq(fab_json_index_get(ix, "collectives.1.tag"), "null");
  cr_assert_str_eq(fab_json_index_get(ix, "jobs.1.step"), "null");
  cr_assert_str_eq(fab_json_index_get(ix, "jobs.1.end_s"), "null");
  cr_assert_str_eq(fab_json_index_get(ix, "step.job"), "\"train\"");
  cr_assert_str_eq(fab_json_index_get(ix, "failures.0.link"), "\"leaf0-spine1\"");
  cr_assert_str_eq(fab_json_index_get(ix, "failures.1.bandwidth_bps"), "50000000000");
  cr_assert_str_eq(fab_json_index_get(ix, "failures.1.rerouted_at_s"), "null");
  cr_assert_str_eq(fab_json_index_get(ix, "failures.0.rerouted_at_s"), "0.0011");
  cr_assert_str_eq(fab_json_index_get(ix, "status"), "\"failed\"");

  g_ptr_array_free(keys, TRUE);
  fab_json_index_free(ix);
  g_free(js);
  unfinalize(&x.r);
}

/* The sweep's columns come from the same table: exactly the columns the CSV
** header of `fabsim sweep` prints after point,status,exit, in that order,
** each naming the summary field it copies. */
Test(fields, sweep_columns) {
  static const char *const want[][2] = {
    {"sim_time_s", "sim_time_s"},
    {"events", "events"},
    {"packet_hops", "packet_hops"},
    {"drops", "drops"},
    {"retransmits", "retransmits"},
    {"pfc_pause_frames", "pfc_pause_frames"},
    {"ecn_marks", "ecn_marks"},
    {"cnps", "cnps"},
    {"max_queue_bytes", "max_queue_bytes"},
    {"flows_completed", "flows.completed"},
    {"flows_count", "flows.count"},
    {"fct_p50_s", "flows.fct_p50_s"},
    {"fct_p99_s", "flows.fct_p99_s"},
    {"fct_max_s", "flows.fct_max_s"},
    {"step_time_s", "step.step_time_s"},
    {"compute_s", "step.compute_s"},
    {"exposed_comm_s", "step.exposed_comm_s"},
    {"bubble_fraction", "step.bubble_fraction"},
    {"wall_s", "wall_s"},
  };
  GArray *cols = fab_fields_columns(&fab_results_table);
  GString *got = g_string_new(NULL);
  for (guint i = 0; i < cols->len; i++)
    g_string_append_printf(got, "%s%s", i ? "," : "", g_array_index(cols, FabFieldColumn, i).name);
  cr_assert_eq(cols->len, G_N_ELEMENTS(want), "columns: %s", got->str);
  Full x;
  full(&x);
  for (guint i = 0; i < cols->len; i++) {
    const FabFieldColumn *c = &g_array_index(cols, FabFieldColumn, i);
    cr_assert_str_eq(c->name, want[i][0], "column %u (%s)", i, got->str);
    cr_assert_str_eq(c->path, want[i][1], "column %s", c->name);
    double v;
    cr_assert(fab_fields_lookup(&fab_results_table, &x.r, c->path, &v), "column %s: no number at %s", c->name,
              c->path);
  }
  unfinalize(&x.r);
  g_string_free(got, TRUE);
  g_array_free(cols, TRUE);
}

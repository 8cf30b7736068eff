/* Tests for sim/config.h (sim/cfg_*.c): unit parsers, the located YAML tree,
** includes, --set overrides and schema tables (rows built with FAB_CFG_KEY,
** which records each field's width). */
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "sim/config.h"

#define assert_has(msg, sub)                                                                       \
  cr_assert(strstr((msg), (sub)) != NULL, "expected \"%s\" in \"%s\"", (sub), (msg))

/* ---- helpers ----------------------------------------------------------- */

static FabCfg *load_ok(const char *text) {
  GError *e = NULL;
  FabCfg *cfg = fab_cfg_load_string(text, "t.yaml", &e);
  cr_assert_not_null(cfg, "load failed: %s", e ? e->message : "?");
  cr_assert_null(e);
  return cfg;
}

/* The error message of a load that must fail (g_free it). */
static char *load_err(const char *text) {
  GError *e = NULL;
  FabCfg *cfg = fab_cfg_load_string(text, "t.yaml", &e);
  cr_assert_null(cfg, "load should have failed:\n%s", text);
  cr_assert_not_null(e);
  cr_assert_eq(e->domain, FAB_CFG_ERROR);
  char *m = g_strdup(e->message);
  g_error_free(e);
  return m;
}

/* A scratch directory with files in it; removed by tmp_done. */
typedef struct {
  char *dir;
  GPtrArray *files;
} Tmp;

static void tmp_init(Tmp *t) {
  GError *e = NULL;
  t->dir = g_dir_make_tmp("fabcfg-XXXXXX", &e);
  cr_assert_not_null(t->dir, "%s", e ? e->message : "?");
  t->files = g_ptr_array_new_with_free_func(g_free);
}

static char *tmp_write(Tmp *t, const char *name, const char *text) {
  char *path = g_build_filename(t->dir, name, NULL);
  cr_assert(g_file_set_contents(path, text, -1, NULL));
  g_ptr_array_add(t->files, path);
  return path; /* transfer none */
}

static void tmp_done(Tmp *t) {
  for (guint i = 0; i < t->files->len; i++) g_unlink(g_ptr_array_index(t->files, i));
  g_rmdir(t->dir);
  g_ptr_array_unref(t->files);
  g_free(t->dir);
}

/* ---- unit parsers: good values (exact) --------------------------------- */

typedef struct {
  const char *s;
  uint64_t v;
} U64Case;

Test(parse, rate_good) {
  static const U64Case c[] = {
      {"400Gbps", 400000000000ULL},  {"1.6Tbps", 1600000000000ULL}, {"900GB/s", 7200000000000ULL},
      {"100 Gbps", 100000000000ULL}, {"1bps", 1},                   {"1Kbps", 1000},
      {"2.5Mbps", 2500000},          {"0.001Gbps", 1000000},        {"25Gbps", 25000000000ULL},
      {"1B/s", 8},                   {"1.5KB/s", 12000},            {"64GB/s", 512000000000ULL},
      {"1TB/s", 8000000000000ULL},   {"12.5MB/s", 100000000},       {"0.125B/s", 1},
      {"1.60000Tbps", 1600000000000ULL}, {"18446744073709551615bps", UINT64_MAX},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(c); i++) {
    uint64_t v = 0;
    GError *e = NULL;
    cr_assert(fab_parse_rate(c[i].s, &v, &e), "%s: %s", c[i].s, e ? e->message : "");
    cr_assert_eq(v, c[i].v, "%s -> %" PRIu64 ", want %" PRIu64, c[i].s, v, c[i].v);
  }
}

Test(parse, time_good) {
  static const U64Case c[] = {
      {"0", 0},          {"0ns", 0},          {"600ns", 600000},      {"1us", 1000000},
      {"2.5ms", 2500000000ULL}, {"1s", 1000000000000ULL}, {"1ps", 1}, {"0.5ns", 500},
      {"1.5 us", 1500000}, {"0.000001s", 1000000}, {"10\xc2\xb5s", 10000000},
      {"18446744s", 18446744000000000000ULL},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(c); i++) {
    uint64_t v = 1;
    GError *e = NULL;
    cr_assert(fab_parse_time(c[i].s, &v, &e), "%s: %s", c[i].s, e ? e->message : "");
    cr_assert_eq(v, c[i].v, "%s -> %" PRIu64 ", want %" PRIu64, c[i].s, v, c[i].v);
  }
}

Test(parse, size_good) {
  static const U64Case c[] = {
      {"4096", 4096},     {"0", 0},          {"4KiB", 4096},          {"64MiB", 67108864},
      {"1GB", 1000000000}, {"0.5KiB", 512},   {"1.5KB", 1500},         {"1.5 MiB", 1572864},
      {"2TiB", 2199023255552ULL}, {"1TB", 1000000000000ULL}, {"7B", 7}, {"2.0", 2},
      {"1GiB", 1073741824}, {"0.25GiB", 268435456},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(c); i++) {
    uint64_t v = 1;
    GError *e = NULL;
    cr_assert(fab_parse_size(c[i].s, &v, &e), "%s: %s", c[i].s, e ? e->message : "");
    cr_assert_eq(v, c[i].v, "%s -> %" PRIu64 ", want %" PRIu64, c[i].s, v, c[i].v);
  }
}

/* ---- unit parsers: bad values ------------------------------------------ */

typedef gboolean (*U64Parser)(const char *, uint64_t *, GError **);

static void reject_u64(U64Parser f, const char *s, const char *expect_sub) {
  uint64_t v = 12345;
  GError *e = NULL;
  cr_assert_not(f(s, &v, &e), "'%s' should be rejected", s);
  cr_assert_not_null(e, "'%s': no error set", s);
  cr_assert_eq(v, 12345, "'%s': output written on failure", s);
  if (expect_sub) assert_has(e->message, expect_sub);
  g_error_free(e);
}

Test(parse, rate_bad) {
  static const char *const bad[] = {"100", "0Gbps", "0", "100Gbs", "Gbps", "-1Gbps", "1e9bps",
                                    "100gbps x", "", "0.5bps", "1.2.3Gbps", "100 ", "3 Gb ps",
                                    "18446744073709551616bps", "99999999Tbps", "100GBps"};
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) reject_u64(fab_parse_rate, bad[i], NULL);
  reject_u64(fab_parse_rate, "100Gbs",
             "'100Gbs' is not a rate (expected a number with a unit: bps, Kbps, Mbps, Gbps, Tbps, "
             "B/s, KB/s, MB/s, GB/s, TB/s, e.g. 100Gbps)");
  reject_u64(fab_parse_rate, "100", "no unit");
  reject_u64(fab_parse_rate, "0Gbps", "above 0");
  reject_u64(fab_parse_rate, "0.5bps", "whole number of bits");
  reject_u64(fab_parse_rate, "99999999Tbps", "too large");
  reject_u64(fab_parse_rate, "", "an empty value is not a rate");
}

Test(parse, time_bad) {
  static const char *const bad[] = {"0.3ps", "5", "1.5", "1 hour", "ns", "-1ns", "1e3ns",
                                    "1.0001ns", "99999999s", "10 u s", "", "1min"};
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) reject_u64(fab_parse_time, bad[i], NULL);
  reject_u64(fab_parse_time, "0.3ps", "'0.3ps' is not a whole number of picoseconds");
  reject_u64(fab_parse_time, "5", "no unit");
  reject_u64(fab_parse_time, "1min", "ps, ns, us, ms, s");
  reject_u64(fab_parse_time, "99999999s", "too large");
}

Test(parse, size_bad) {
  static const char *const bad[] = {"1.5B", "1.5", "4 KBB", "KiB", "-4096", "4k", "0x100",
                                    "1e3", "", "16777216TiB", "4 kib", "0.1B"};
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) reject_u64(fab_parse_size, bad[i], NULL);
  reject_u64(fab_parse_size, "1.5B", "'1.5B' is not a whole number of bytes");
  reject_u64(fab_parse_size, "4k", "'4k' is not a size (expected");
  reject_u64(fab_parse_size, "16777216TiB", "too large");
}

/* Exactness where binary floating point would round: 0.1 + 0.2 style inputs
** and long fractions scale without error. */
Test(parse, exact_decimal_scaling) {
  uint64_t v;
  cr_assert(fab_parse_time("0.3ns", &v, NULL));
  cr_assert_eq(v, 300);
  cr_assert(fab_parse_time("4.35us", &v, NULL));
  cr_assert_eq(v, 4350000);
  cr_assert(fab_parse_rate("1.1Gbps", &v, NULL));
  cr_assert_eq(v, 1100000000ULL);
  cr_assert(fab_parse_size("0.0009765625KiB", &v, NULL)); /* 2^-10 KiB = 1 byte */
  cr_assert_eq(v, 1);
  cr_assert(fab_parse_time("0.000000000001000000000000000000s", &v, NULL));
  cr_assert_eq(v, 1);
  cr_assert_not(fab_parse_time("0.0000000000001s", &v, NULL));
}

typedef struct {
  const char *s;
  double v;
} DblCase;

Test(parse, ratio) {
  static const DblCase good[] = {{"2:1", 2.0}, {"1:2", 0.5}, {"1.5", 1.5}, {"3 : 2", 1.5},
                                 {"4", 4.0},   {"1e-3", 0.001}};
  for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
    double v = 0;
    GError *e = NULL;
    cr_assert(fab_parse_ratio(good[i].s, &v, &e), "%s: %s", good[i].s, e ? e->message : "");
    cr_assert_float_eq(v, good[i].v, 1e-12, "%s", good[i].s);
  }
  static const char *const bad[] = {"0", "-1", "2:0", "0:1", "a:b", "2:", ":1", "2:1:1", "",
                                    "inf", "1/2", "nan"};
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    double v = 7;
    GError *e = NULL;
    cr_assert_not(fab_parse_ratio(bad[i], &v, &e), "'%s' accepted", bad[i]);
    cr_assert_not_null(e);
    assert_has(e->message, "is not a ratio (expected N:M");
    cr_assert_eq(v, 7);
    g_error_free(e);
  }
}

Test(parse, prob) {
  static const DblCase good[] = {{"0", 0},     {"1", 1},         {"0.2", 0.2}, {"1%", 0.01},
                                 {"100%", 1},  {"0%", 0},        {"12.5%", 0.125}, {"50 %", 0.5},
                                 {"1e-4", 1e-4}};
  for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
    double v = -1;
    GError *e = NULL;
    cr_assert(fab_parse_prob(good[i].s, &v, &e), "%s: %s", good[i].s, e ? e->message : "");
    cr_assert_float_eq(v, good[i].v, 1e-12, "%s", good[i].s);
  }
  static const char *const bad[] = {"1.01", "-0.1", "101%", "-1%", "%", "", "abc", "0.5%%", "nan"};
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    double v = 7;
    GError *e = NULL;
    cr_assert_not(fab_parse_prob(bad[i], &v, &e), "'%s' accepted", bad[i]);
    assert_has(e->message, "is not a probability (expected a number from 0 to 1");
    g_error_free(e);
  }
}

Test(parse, bool) {
  static const struct {
    const char *s;
    gboolean v;
  } good[] = {{"true", TRUE}, {"false", FALSE}, {"yes", TRUE}, {"no", FALSE}, {"on", TRUE},
              {"off", FALSE}, {"TRUE", TRUE},   {"Off", FALSE}, {"Yes", TRUE}};
  for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
    gboolean v = !good[i].v;
    cr_assert(fab_parse_bool(good[i].s, &v, NULL), "%s", good[i].s);
    cr_assert_eq(v, good[i].v, "%s", good[i].s);
  }
  static const char *const bad[] = {"1", "0", "y", "n", "", "truee", "enabled"};
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    gboolean v = 5;
    GError *e = NULL;
    cr_assert_not(fab_parse_bool(bad[i], &v, &e), "'%s' accepted", bad[i]);
    assert_has(e->message, "is not a boolean (expected true/false, yes/no or on/off)");
    cr_assert_eq(v, 5);
    g_error_free(e);
  }
}

Test(parse, int) {
  static const struct {
    const char *s;
    int64_t v;
  } good[] = {{"0", 0},   {"42", 42}, {"-3", -3}, {"+7", 7}, {"007", 7},
              {"9223372036854775807", INT64_MAX}, {"-9223372036854775808", INT64_MIN}};
  for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
    int64_t v = 1;
    GError *e = NULL;
    cr_assert(fab_parse_int(good[i].s, &v, &e), "%s: %s", good[i].s, e ? e->message : "");
    cr_assert_eq(v, good[i].v, "%s", good[i].s);
  }
  static const char *const bad[] = {"", "1.0", "1e3", "0x10", " 1", "1 ", "--1", "+",
                                    "9223372036854775808", "-9223372036854775809",
                                    "99999999999999999999999", "1_000", "12a"};
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    int64_t v = 5;
    GError *e = NULL;
    cr_assert_not(fab_parse_int(bad[i], &v, &e), "'%s' accepted", bad[i]);
    cr_assert_not_null(e);
    cr_assert_eq(v, 5);
    g_error_free(e);
  }
  GError *e = NULL;
  cr_assert_not(fab_parse_int("9223372036854775808", &(int64_t){0}, &e));
  assert_has(e->message, "out of range");
  g_error_free(e);
}

Test(parse, double) {
  static const DblCase good[] = {{"0", 0}, {"1.5", 1.5}, {"-2", -2}, {"1e-3", 1e-3},
                                 {".5", 0.5}, {"3.", 3}};
  for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
    double v = 99;
    cr_assert(fab_parse_double(good[i].s, &v, NULL), "%s", good[i].s);
    cr_assert_float_eq(v, good[i].v, 1e-15, "%s", good[i].s);
  }
  static const char *const bad[] = {"", "abc", "1.5x", "inf", "-inf", "nan", "1e999", " 1",
                                    "1 ", "1,5"};
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    double v = 99;
    GError *e = NULL;
    cr_assert_not(fab_parse_double(bad[i], &v, &e), "'%s' accepted", bad[i]);
    assert_has(e->message, "is not a number");
    cr_assert_eq(v, 99);
    g_error_free(e);
  }
}

/* ---- the tree ---------------------------------------------------------- */

Test(tree, structure_paths_and_locations) {
  FabCfg *cfg = load_ok("name: demo\n"
                        "fabric:\n"
                        "  link: {bandwidth: 100Gbps, latency: 1us}\n"
                        "workload:\n"
                        "  flows:\n"
                        "    - {src: 0, dst: 5}\n"
                        "    - src: 1\n"
                        "      dst: 6\n");
  const FabCfgNode *root = fab_cfg_root(cfg);
  cr_assert_eq(fab_cfg_kind(root), FAB_CFG_NODE_MAP);
  cr_assert_eq(fab_cfg_len(root), 3);
  cr_assert_str_eq(fab_cfg_key_at(root, 0), "name");
  cr_assert_str_eq(fab_cfg_key_at(root, 1), "fabric");
  cr_assert_str_eq(fab_cfg_key_at(root, 2), "workload");
  cr_assert_null(fab_cfg_key_at(root, 3));
  cr_assert_str_eq(fab_cfg_scalar(fab_cfg_get(root, "name")), "demo");
  cr_assert_str_eq(fab_cfg_path(root), "");
  cr_assert_str_eq(fab_cfg_where(root), "t.yaml:1:1");

  const FabCfgNode *bw = fab_cfg_get(fab_cfg_get(fab_cfg_get(root, "fabric"), "link"), "bandwidth");
  cr_assert_not_null(bw);
  cr_assert_str_eq(fab_cfg_scalar(bw), "100Gbps");
  cr_assert_str_eq(fab_cfg_path(bw), "fabric.link.bandwidth");
  cr_assert_str_eq(fab_cfg_where(bw), "t.yaml:3:21");

  const FabCfgNode *flows = fab_cfg_get(fab_cfg_get(root, "workload"), "flows");
  cr_assert_eq(fab_cfg_kind(flows), FAB_CFG_NODE_SEQ);
  cr_assert_eq(fab_cfg_len(flows), 2);
  cr_assert_null(fab_cfg_key_at(flows, 0));
  const FabCfgNode *f1 = fab_cfg_at(flows, 1);
  cr_assert_str_eq(fab_cfg_path(f1), "workload.flows[1]");
  cr_assert_str_eq(fab_cfg_where(f1), "t.yaml:7:7");
  const FabCfgNode *dst = fab_cfg_get(f1, "dst");
  cr_assert_str_eq(fab_cfg_path(dst), "workload.flows[1].dst");
  cr_assert_str_eq(fab_cfg_where(dst), "t.yaml:8:12");
  cr_assert_null(fab_cfg_at(flows, 2));
  cr_assert_null(fab_cfg_get(root, "nope"));
  cr_assert_null(fab_cfg_get(NULL, "x"));
  cr_assert_null(fab_cfg_scalar(flows));
  cr_assert_eq(fab_cfg_len(dst), 0);
  fab_cfg_free(cfg);
}

Test(tree, map_keeps_insertion_order) {
  FabCfg *cfg = load_ok("z: 1\na: 2\nm: 3\nb: 4\n");
  const char *want[] = {"z", "a", "m", "b"};
  const FabCfgNode *root = fab_cfg_root(cfg);
  cr_assert_eq(fab_cfg_len(root), 4);
  for (size_t i = 0; i < 4; i++) {
    cr_assert_str_eq(fab_cfg_key_at(root, i), want[i]);
    cr_assert_eq(fab_cfg_at(root, i), fab_cfg_get(root, want[i]));
  }
  fab_cfg_free(cfg);
}

Test(tree, empty_document_is_empty_map) {
  const char *texts[] = {"", "# only a comment\n", "---\n", "~\n"};
  for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
    FabCfg *cfg = load_ok(texts[i]);
    const FabCfgNode *root = fab_cfg_root(cfg);
    cr_assert_eq(fab_cfg_kind(root), FAB_CFG_NODE_MAP, "text %zu", i);
    cr_assert_eq(fab_cfg_len(root), 0);
    cr_assert_str_eq(fab_cfg_text(cfg), texts[i]);
    fab_cfg_free(cfg);
  }
}

Test(tree, root_must_be_a_map) {
  char *m = load_err("- a\n- b\n");
  assert_has(m, "t.yaml:1:1: ");
  assert_has(m, "top level must be a map");
  assert_has(m, "a sequence");
  g_free(m);
  m = load_err("just text\n");
  assert_has(m, "'just text'");
  g_free(m);
}

Test(tree, nulls_and_quoted_scalars) {
  FabCfg *cfg = load_ok("a:\nb: ~\nc: null\nd: 'null'\ne: \"\"\nf: 0\n");
  const FabCfgNode *r = fab_cfg_root(cfg);
  for (const char *k = "abc"; *k; k++) {
    char key[2] = {*k, 0};
    const FabCfgNode *n = fab_cfg_get(r, key);
    cr_assert_eq(fab_cfg_kind(n), FAB_CFG_NODE_SCALAR);
    cr_assert_str_eq(fab_cfg_scalar(n), "", "key %s", key);
  }
  cr_assert_str_eq(fab_cfg_scalar(fab_cfg_get(r, "d")), "null");
  cr_assert_str_eq(fab_cfg_scalar(fab_cfg_get(r, "e")), "");
  cr_assert_str_eq(fab_cfg_scalar(fab_cfg_get(r, "f")), "0");
  fab_cfg_free(cfg);
}

Test(tree, duplicate_key) {
  char *m = load_err("fabric:\n  link:\n    bandwidth: 1Gbps\n    bandwidth: 2Gbps\n");
  cr_assert_str_eq(m, "t.yaml:4:5: fabric.link.bandwidth: duplicate key 'bandwidth' "
                      "(first given at t.yaml:3:5)");
  g_free(m);
  m = load_err("a: {x: 1, x: 2}\n");
  assert_has(m, "t.yaml:1:11: a.x: duplicate key 'x'");
  g_free(m);
}

Test(tree, syntax_error_location) {
  /* libyaml: "mapping values are not allowed in this context" at 2:9 */
  char *m = load_err("a: 1\nb: c: d\n");
  assert_has(m, "t.yaml:2:5: YAML syntax error: mapping values are not allowed");
  g_free(m);
  m = load_err("a: [1, 2\nb: 3\n");
  cr_assert(g_str_has_prefix(m, "t.yaml:"), "%s", m);
  assert_has(m, "YAML syntax error: ");
  assert_has(m, "flow sequence");
  g_free(m);
  m = load_err("a: 1\n\tb: 2\n");
  assert_has(m, "t.yaml:2:1: YAML syntax error: ");
  g_free(m);
}

Test(tree, anchors_and_aliases_rejected) {
  char *m = load_err("base: &b {x: 1}\nother: *b\n");
  assert_has(m, "t.yaml:1:7: base: YAML anchors and aliases");
  g_free(m);
  m = load_err("a: 1\nb: [*x]\n");
  assert_has(m, "not supported");
  g_free(m);
}

Test(tree, multiple_documents_rejected) {
  char *m = load_err("a: 1\n---\nb: 2\n");
  assert_has(m, "t.yaml:2:1: more than one YAML document");
  g_free(m);
}

Test(tree, bad_keys) {
  char *m = load_err("? [a, b]\n: 1\n");
  assert_has(m, "t.yaml:1:3: a map key must be plain text");
  g_free(m);
  m = load_err("'': 1\n");
  assert_has(m, "empty or invalid map key");
  g_free(m);
}

Test(tree, deep_nesting_rejected) {
  GString *s = g_string_new("a: ");
  for (int i = 0; i < 300; i++) g_string_append_c(s, '[');
  for (int i = 0; i < 300; i++) g_string_append_c(s, ']');
  char *m = load_err(s->str);
  assert_has(m, "nested more than");
  g_free(m);
  g_string_free(s, TRUE);
}

Test(tree, load_file_missing_and_text) {
  GError *e = NULL;
  cr_assert_null(fab_cfg_load_file("/nonexistent/dir/x.yaml", &e));
  cr_assert_not_null(e);
  cr_assert_eq(e->code, FAB_CFG_ERROR_IO);
  assert_has(e->message, "/nonexistent/dir/x.yaml: cannot read scenario");
  g_error_free(e);

  Tmp t;
  tmp_init(&t);
  const char *text = "name: x   # keep this comment\nseed: 3";
  char *p = tmp_write(&t, "s.yaml", text);
  FabCfg *cfg = fab_cfg_load_file(p, &e);
  cr_assert_not_null(cfg, "%s", e ? e->message : "");
  cr_assert_str_eq(fab_cfg_text(cfg), text);
  char *want = g_strdup_printf("%s:2:7", p);
  cr_assert_str_eq(fab_cfg_where(fab_cfg_get(fab_cfg_root(cfg), "seed")), want);
  g_free(want);
  fab_cfg_free(cfg);
  tmp_done(&t);
}

/* ---- schema tables ----------------------------------------------------- */

typedef struct {
  int64_t i;
  uint64_t u;
  gboolean b;
  double d;
  uint64_t rate_bps;
  uint64_t time_ps;
  uint64_t size_bytes;
  double ratio;
  double prob;
  const char *str;
  int mode;
  const FabCfgNode *node, *map, *seq;
} All;

static const char *const modes[] = {"ecmp", "adaptive", "spray", NULL};

/* Small targets for single-purpose schemas. */
typedef struct {
  uint64_t v;
} One;
typedef struct {
  uint64_t bw, lat, buf;
} Link;
typedef struct {
  const char *name;
  const FabCfgNode *seed, *fabric;
} Named;

static const FabCfgKey all_schema[] = {
    FAB_CFG_KEY("i", FAB_CFG_INT, All, i, .def = "-3"),
    FAB_CFG_KEY("u", FAB_CFG_UINT, All, u, .def = "8"),
    FAB_CFG_KEY("b", FAB_CFG_BOOL, All, b, .def = "on"),
    FAB_CFG_KEY("d", FAB_CFG_DOUBLE, All, d, .def = "0.25"),
    FAB_CFG_KEY("rate", FAB_CFG_RATE, All, rate_bps, .def = "100Gbps"),
    FAB_CFG_KEY("time", FAB_CFG_TIME, All, time_ps, .def = "1us"),
    FAB_CFG_KEY("size", FAB_CFG_SIZE, All, size_bytes, .def = "4KiB"),
    FAB_CFG_KEY("ratio", FAB_CFG_RATIO, All, ratio, .def = "2:1"),
    FAB_CFG_KEY("prob", FAB_CFG_PROB, All, prob, .def = "1%"),
    FAB_CFG_KEY("str", FAB_CFG_STRING, All, str, .def = "dflt"),
    FAB_CFG_KEY("mode", FAB_CFG_ENUM, All, mode, .def = "spray", .choices = modes),
    FAB_CFG_KEY("node", FAB_CFG_NODE, All, node),
    FAB_CFG_KEY("map", FAB_CFG_MAP, All, map),
    FAB_CFG_KEY("seq", FAB_CFG_SEQ, All, seq),
    FAB_CFG_END_ROW,
};

/* Apply all_schema to the map at `key` of `text`; returns the error message
** (g_free) or NULL on success. */
static char *apply_text(const char *text, const char *key, All *out) {
  FabCfg *cfg = load_ok(text);
  const FabCfgNode *root = fab_cfg_root(cfg);
  const FabCfgNode *m = key ? fab_cfg_get(root, key) : root;
  GError *e = NULL;
  gboolean ok = fab_cfg_apply(m, root, all_schema, out, &e);
  char *msg = NULL;
  if (ok) cr_assert_null(e);
  else {
    cr_assert_not_null(e, "FALSE without an error");
    msg = g_strdup(e->message);
    g_error_free(e);
  }
  fab_cfg_free(cfg);
  return msg;
}

Test(schema, defaults) {
  All a;
  memset(&a, 0x5a, sizeof a);
  FabCfg *cfg = load_ok("");
  GError *e = NULL;
  cr_assert(fab_cfg_apply(NULL, NULL, all_schema, &a, &e), "%s", e ? e->message : "");
  cr_assert_eq(a.i, -3);
  cr_assert_eq(a.u, 8);
  cr_assert_eq(a.b, TRUE);
  cr_assert_float_eq(a.d, 0.25, 1e-15);
  cr_assert_eq(a.rate_bps, 100000000000ULL);
  cr_assert_eq(a.time_ps, 1000000);
  cr_assert_eq(a.size_bytes, 4096);
  cr_assert_float_eq(a.ratio, 2.0, 1e-15);
  cr_assert_float_eq(a.prob, 0.01, 1e-15);
  cr_assert_eq(a.str, all_schema[9].def, "string default is the static text itself");
  cr_assert_eq(a.mode, 2);
  cr_assert_null(a.node);
  cr_assert_null(a.map);
  cr_assert_null(a.seq);
  fab_cfg_free(cfg);
}

Test(schema, values_stored) {
  FabCfg *cfg = load_ok("x:\n"
                        "  i: -42\n  u: 7\n  b: no\n  d: 1e-3\n  rate: 1.6Tbps\n"
                        "  time: 2.5ms\n  size: 1.5KB\n  ratio: '3:2'\n  prob: 20%\n"
                        "  str: hello\n  mode: adaptive\n  node: [1]\n  map: {k: v}\n"
                        "  seq: [a, b, c]\n");
  const FabCfgNode *x = fab_cfg_get(fab_cfg_root(cfg), "x");
  All a;
  memset(&a, 0, sizeof a);
  GError *e = NULL;
  cr_assert(fab_cfg_apply(x, NULL, all_schema, &a, &e), "%s", e ? e->message : "");
  cr_assert_eq(a.i, -42);
  cr_assert_eq(a.u, 7);
  cr_assert_eq(a.b, FALSE);
  cr_assert_float_eq(a.d, 1e-3, 1e-18);
  cr_assert_eq(a.rate_bps, 1600000000000ULL);
  cr_assert_eq(a.time_ps, 2500000000ULL);
  cr_assert_eq(a.size_bytes, 1500);
  cr_assert_float_eq(a.ratio, 1.5, 1e-15);
  cr_assert_float_eq(a.prob, 0.2, 1e-15);
  cr_assert_str_eq(a.str, "hello");
  cr_assert_eq(a.str, fab_cfg_scalar(fab_cfg_get(x, "str")), "string owned by the FabCfg");
  cr_assert_eq(a.mode, 1);
  cr_assert_eq(a.node, fab_cfg_get(x, "node"));
  cr_assert_eq(fab_cfg_kind(a.map), FAB_CFG_NODE_MAP);
  cr_assert_eq(fab_cfg_len(a.seq), 3);
  fab_cfg_free(cfg);
}

/* The location contract: an error on line 3, column 5 says "t.yaml:3:5:". */
Test(schema, error_location_and_path) {
  All a;
  char *m = apply_text("x:\n  rate: 1Gbps\n  time: 1.5\n", "x", &a);
  cr_assert_str_eq(m, "t.yaml:3:9: x.time: '1.5' is not a time: it has no unit (expected a "
                      "number with a unit: ps, ns, us, ms, s, e.g. 600ns; only 0 may go "
                      "without a unit)");
  g_free(m);
  m = apply_text("x:\n  u: 1\n    \n  rate: 100Gbs\n", "x", &a);
  assert_has(m, "t.yaml:4:9: x.rate: '100Gbs' is not a rate (expected a number with a unit: "
                "bps, Kbps, Mbps, Gbps, Tbps, B/s, KB/s, MB/s, GB/s, TB/s, e.g. 100Gbps)");
  g_free(m);
  m = apply_text("x: {size: 4KB}\ny: 1\nz: [a, b]\n", "z", &a);
  cr_assert_str_eq(m, "t.yaml:3:4: z: expected a map of keys, found a sequence");
  g_free(m);
}

Test(schema, error_on_line3_col5) {
  FabCfg *cfg = load_ok("name: x\nlinks:\n  - {bandwidth: 1Gbps}\n  - fast\n");
  /* the item "fast" is at 4:5; an error there must say so */
  const FabCfgNode *item = fab_cfg_at(fab_cfg_get(fab_cfg_root(cfg), "links"), 1);
  All a;
  GError *e = NULL;
  cr_assert_not(fab_cfg_apply(item, NULL, all_schema, &a, &e));
  cr_assert_str_eq(e->message, "t.yaml:4:5: links[1]: expected a map of keys, found a scalar 'fast'");
  g_error_free(e);
  fab_cfg_free(cfg);

  char *m = apply_text("x:\n  u: 1\n  b:   maybe\n", "x", &a);
  cr_assert(g_str_has_prefix(m, "t.yaml:3:8: x.b: 'maybe' is not a boolean"), "%s", m);
  g_free(m);
}

Test(schema, unknown_key) {
  All a;
  char *m = apply_text("x:\n  rate: 1Gbps\n  colour: red\n", "x", &a);
  cr_assert_str_eq(m, "t.yaml:3:3: x.colour: unknown key 'colour' (expected one of: i, u, b, d, "
                      "rate, time, size, ratio, prob, str, mode, node, map, seq)");
  g_free(m);
  /* at the top level, located at the key, 3:5 */
  static const FabCfgKey s[] = {FAB_CFG_KEY("bandwidth", FAB_CFG_RATE, Link, bw),
                                FAB_CFG_KEY("latency", FAB_CFG_TIME, Link, lat), FAB_CFG_END_ROW};
  FabCfg *cfg = load_ok("fabric:\n  link:\n    bandwith: 100Gbps\n");
  const FabCfgNode *link = fab_cfg_get(fab_cfg_get(fab_cfg_root(cfg), "fabric"), "link");
  Link t;
  GError *e = NULL;
  cr_assert_not(fab_cfg_apply(link, NULL, s, &t, &e));
  cr_assert_eq(e->code, FAB_CFG_ERROR_KEY);
  cr_assert_str_eq(e->message, "t.yaml:3:5: fabric.link.bandwith: unknown key 'bandwith' "
                               "(expected one of: bandwidth, latency); did you mean 'bandwidth'?");
  g_error_free(e);
  fab_cfg_free(cfg);
}

Test(schema, missing_required) {
  static const FabCfgKey s[] = {FAB_CFG_KEY("name", FAB_CFG_STRING, Named, name, .required = TRUE),
                                FAB_CFG_END_ROW};
  Named name = {NULL};
  FabCfg *cfg = load_ok("seed: 1\nfabric:\n  link:\n    mtu: 4000\n");
  const FabCfgNode *root = fab_cfg_root(cfg);
  GError *e = NULL;
  const FabCfgNode *link = fab_cfg_get(fab_cfg_get(root, "fabric"), "link");
  static const FabCfgKey s2[] = {FAB_CFG_KEY("mtu", FAB_CFG_SIZE, Link, buf),
                                 FAB_CFG_KEY("bandwidth", FAB_CFG_RATE, Link, bw, .required = TRUE),
                                 FAB_CFG_END_ROW};
  Link v;
  cr_assert_not(fab_cfg_apply(link, NULL, s2, &v, &e));
  cr_assert_eq(e->code, FAB_CFG_ERROR_KEY);
  assert_has(e->message, "t.yaml:3:3: fabric.link: missing required key 'bandwidth'");
  g_clear_error(&e);

  /* map absent: reported at where_if_null */
  cr_assert_not(fab_cfg_apply(fab_cfg_get(root, "output"), fab_cfg_get(root, "fabric"), s, &name, &e));
  assert_has(e->message, "t.yaml:2:1: fabric: missing required key 'name'");
  g_clear_error(&e);
  /* and with no location at all */
  cr_assert_not(fab_cfg_apply(NULL, NULL, s, &name, &e));
  cr_assert(g_str_has_prefix(e->message, "missing required key 'name'"), "%s", e->message);
  g_clear_error(&e);
  /* the root map: no path */
  static const FabCfgKey s3[] = {FAB_CFG_KEY("name", FAB_CFG_STRING, Named, name, .required = TRUE),
                                 FAB_CFG_KEY("seed", FAB_CFG_NODE, Named, seed),
                                 FAB_CFG_KEY("fabric", FAB_CFG_NODE, Named, fabric), FAB_CFG_END_ROW};
  cr_assert_not(fab_cfg_apply(root, NULL, s3, &name, &e));
  cr_assert(g_str_has_prefix(e->message, "t.yaml:1:1: missing required key 'name'"), "%s",
            e->message);
  g_clear_error(&e);
  fab_cfg_free(cfg);
}

Test(schema, enum_choices) {
  All a;
  char *m = apply_text("x: {mode: ecmpp}\n", "x", &a);
  cr_assert_str_eq(m, "t.yaml:1:11: x.mode: 'ecmpp' is not a valid choice (expected one of: "
                      "ecmp, adaptive, spray); did you mean 'ecmp'?");
  g_free(m);
  /* case aside, and within two edits and a third of the length, as for keys */
  m = apply_text("x: {mode: Adaptive}\n", "x", &a);
  assert_has(m, "; did you mean 'adaptive'?");
  g_free(m);
  m = apply_text("x: {mode: hash}\n", "x", &a);
  cr_assert_null(strstr(m, "did you mean"), "%s", m);
  g_free(m);
  m = apply_text("x: {mode: [ecmp]}\n", "x", &a);
  assert_has(m, "x.mode: expected one of: ecmp, adaptive, spray, found a sequence");
  g_free(m);
  cr_assert_null(apply_text("x: {mode: ecmp}\n", "x", &a));
  cr_assert_eq(a.mode, 0);
}

typedef struct {
  uint64_t bw, lat, buf;
  int64_t n;
  double p;
} Bnd;

static const FabCfgKey bounds_schema[] = {
    FAB_CFG_KEY("bw", FAB_CFG_RATE, Bnd, bw, .min = 1e9, .max = 1.6e12),
    FAB_CFG_KEY("lat", FAB_CFG_TIME, Bnd, lat, .min = 0, .max = 2.5e9),
    FAB_CFG_KEY("buf", FAB_CFG_SIZE, Bnd, buf, .min = 65536, .max = 0),
    FAB_CFG_KEY("n", FAB_CFG_INT, Bnd, n, .min = -5, .max = 10),
    FAB_CFG_KEY("p", FAB_CFG_PROB, Bnd, p, .min = 0, .max = 0.5),
    FAB_CFG_END_ROW};

static char *bounds_err(const char *text) {
  FabCfg *cfg = load_ok(text);
  Bnd b;
  GError *e = NULL;
  char *m = NULL;
  if (!fab_cfg_apply(fab_cfg_root(cfg), NULL, bounds_schema, &b, &e)) {
    m = g_strdup(e->message);
    g_error_free(e);
  }
  fab_cfg_free(cfg);
  return m;
}

Test(schema, bounds) {
  char *m = bounds_err("bw: 10Mbps\n");
  cr_assert_str_eq(m, "t.yaml:1:5: bw: '10Mbps' is out of range (expected 1Gbps to 1.6Tbps)");
  g_free(m);
  m = bounds_err("lat: 3ms\n");
  cr_assert_str_eq(m, "t.yaml:1:6: lat: '3ms' is out of range (expected at most 2.5ms)");
  g_free(m);
  m = bounds_err("buf: 1000\n");
  cr_assert_str_eq(m, "t.yaml:1:6: buf: '1000' is out of range (expected at least 64KiB)");
  g_free(m);
  m = bounds_err("n: -6\n");
  cr_assert_str_eq(m, "t.yaml:1:4: n: '-6' is out of range (expected -5 to 10)");
  g_free(m);
  m = bounds_err("p: 60%\n");
  cr_assert_str_eq(m, "t.yaml:1:4: p: '60%' is out of range (expected at most 0.5)");
  g_free(m);
  cr_assert_null(bounds_err("bw: 1Gbps\nlat: 2.5ms\nbuf: 1TiB\nn: 10\np: 0.5\n"));
  cr_assert_null(bounds_err("bw: 1.6Tbps\nlat: 0\nbuf: 64KiB\nn: -5\np: 0\n"));
}

Test(schema, kind_mismatches) {
  All a;
  char *m = apply_text("x: {rate: {a: 1}}\n", "x", &a);
  /* a map value is reported at its key */
  cr_assert_str_eq(m, "t.yaml:1:5: x.rate: expected a rate, found a map");
  g_free(m);
  m = apply_text("x: {map: 5}\n", "x", &a);
  cr_assert_str_eq(m, "t.yaml:1:10: x.map: expected a map, found a scalar '5'");
  g_free(m);
  m = apply_text("x: {seq: {a: 1}}\n", "x", &a);
  cr_assert_str_eq(m, "t.yaml:1:5: x.seq: expected a sequence, found a map");
  g_free(m);
  m = apply_text("x: {str: [1]}\n", "x", &a);
  assert_has(m, "x.str: expected a string, found a sequence");
  g_free(m);
  m = apply_text("x: 5\n", "x", &a);
  cr_assert_str_eq(m, "t.yaml:1:4: x: expected a map of keys, found a scalar '5'");
  g_free(m);
  m = apply_text("x: {u: -1}\n", "x", &a);
  cr_assert_str_eq(m, "t.yaml:1:8: x.u: '-1' is negative (expected an integer >= 0, e.g. 8)");
  g_free(m);
}

Test(schema, null_values) {
  All a;
  memset(&a, 0, sizeof a);
  /* a null map means all defaults; a null string clears; a null map key is absent */
  cr_assert_null(apply_text("x:\n", "x", &a));
  cr_assert_eq(a.rate_bps, 100000000000ULL);
  cr_assert_null(apply_text("x: {str: ~, map: , seq: null}\n", "x", &a));
  cr_assert_null(a.str);
  cr_assert_null(a.map);
  cr_assert_null(a.seq);
  char *m = apply_text("x: {rate: }\n", "x", &a);
  assert_has(m, "x.rate: an empty value is not a rate");
  g_free(m);
}

Test(schema, bad_default_is_reported) {
  static const FabCfgKey s[] = {FAB_CFG_KEY("t", FAB_CFG_TIME, One, v, .def = "5"), FAB_CFG_END_ROW};
  One t;
  GError *e = NULL;
  cr_assert_not(fab_cfg_apply(NULL, NULL, s, &t, &e));
  assert_has(e->message, "internal error: schema default of 't'");
  g_error_free(e);
}

Test(schema, fail_helper) {
  FabCfg *cfg = load_ok("fabric:\n  switch:\n    ecn: {kmin: 400KB, kmax: 200KB}\n");
  const FabCfgNode *ecn =
      fab_cfg_get(fab_cfg_get(fab_cfg_get(fab_cfg_root(cfg), "fabric"), "switch"), "ecn");
  const FabCfgNode *kmin = fab_cfg_get(ecn, "kmin");
  GError *e = NULL;
  cr_assert_not(fab_cfg_fail(kmin, &e, "(%s) must be <= kmax (%s)", "400KB", "200KB"));
  cr_assert_eq(e->domain, FAB_CFG_ERROR);
  cr_assert_str_eq(e->message, "t.yaml:3:17: fabric.switch.ecn.kmin: (400KB) must be <= kmax (200KB)");
  g_clear_error(&e);
  cr_assert_not(fab_cfg_fail(NULL, &e, "plain %d", 3));
  cr_assert_str_eq(e->message, "plain 3");
  g_clear_error(&e);
  cr_assert_not(fab_cfg_fail(kmin, NULL, "no error wanted"));
  fab_cfg_free(cfg);
}

/* ---- field widths ------------------------------------------------------ */

/* Integer fields of every width, with a guard byte after each narrow one so
** a store that writes too wide is caught. */
typedef struct {
  uint8_t u8;
  uint8_t g1;
  uint16_t u16;
  uint16_t g2;
  uint32_t u32;
  uint32_t g3;
  uint64_t u64;
  int8_t i8;
  uint8_t g4;
  int16_t i16;
  int32_t i32;
  int64_t i64;
  uint32_t size32;
  uint32_t time32;
  uint32_t rate32;
  uint8_t mode8;
  uint8_t g5;
  uint16_t mode16;
} Widths;

static const FabCfgKey widths_schema[] = {
    FAB_CFG_KEY("u8", FAB_CFG_UINT, Widths, u8),
    FAB_CFG_KEY("u16", FAB_CFG_UINT, Widths, u16),
    FAB_CFG_KEY("u32", FAB_CFG_UINT, Widths, u32),
    FAB_CFG_KEY("u64", FAB_CFG_UINT, Widths, u64),
    FAB_CFG_KEY("i8", FAB_CFG_INT, Widths, i8),
    FAB_CFG_KEY("i16", FAB_CFG_INT, Widths, i16),
    FAB_CFG_KEY("i32", FAB_CFG_INT, Widths, i32),
    FAB_CFG_KEY("i64", FAB_CFG_INT, Widths, i64),
    FAB_CFG_KEY("size32", FAB_CFG_SIZE, Widths, size32),
    FAB_CFG_KEY("time32", FAB_CFG_TIME, Widths, time32),
    FAB_CFG_KEY("rate32", FAB_CFG_RATE, Widths, rate32),
    FAB_CFG_KEY("mode8", FAB_CFG_ENUM, Widths, mode8, .choices = modes),
    FAB_CFG_KEY("mode16", FAB_CFG_ENUM, Widths, mode16, .choices = modes),
    FAB_CFG_END_ROW};

/* Apply widths_schema to the root of `text` over a struct filled with 0xa5;
** the error message (g_free) or NULL. */
static char *widths_apply(const char *text, Widths *w) {
  FabCfg *cfg = load_ok(text);
  memset(w, 0xa5, sizeof *w);
  GError *e = NULL;
  char *m = NULL;
  if (!fab_cfg_apply(fab_cfg_root(cfg), NULL, widths_schema, w, &e)) {
    cr_assert_not_null(e);
    cr_assert_eq(e->code, FAB_CFG_ERROR_VALUE);
    m = g_strdup(e->message);
    g_error_free(e);
  }
  fab_cfg_free(cfg);
  return m;
}

static void guards_intact(const Widths *w) {
  cr_assert_eq(w->g1, 0xa5, "the byte after u8 was written");
  cr_assert_eq(w->g2, 0xa5a5, "the bytes after u16 were written");
  cr_assert_eq(w->g3, 0xa5a5a5a5u, "the bytes after u32 were written");
  cr_assert_eq(w->g4, 0xa5, "the byte after i8 was written");
  cr_assert_eq(w->g5, 0xa5, "the byte after mode8 was written");
}

Test(schema, key_macro_records_offset_and_size) {
  cr_assert_eq(widths_schema[0].offset, offsetof(Widths, u8));
  cr_assert_eq(widths_schema[0].size, 1);
  cr_assert_eq(widths_schema[1].size, 2);
  cr_assert_eq(widths_schema[2].size, 4);
  cr_assert_eq(widths_schema[3].size, 8);
  cr_assert_eq(widths_schema[2].offset, offsetof(Widths, u32));
  cr_assert_eq(all_schema[2].size, sizeof(gboolean));
  cr_assert_eq(all_schema[10].size, sizeof(int));
  cr_assert_str_eq(all_schema[10].name, "mode");
  cr_assert_eq(all_schema[10].choices, modes);
  cr_assert_null(all_schema[14].name);
  cr_assert_eq(all_schema[14].type, FAB_CFG_END);
}

Test(schema, integer_widths_store_exactly) {
  Widths w;
  char *m = widths_apply("u8: 255\nu16: 65535\nu32: 4294967295\nu64: 18446744073709551615\n"
                         "i8: -128\ni16: 32767\ni32: -2147483648\ni64: -9223372036854775808\n"
                         "size32: 4KiB\ntime32: 4ms\nrate32: 4Gbps\nmode8: spray\nmode16: adaptive\n",
                         &w);
  cr_assert_null(m, "%s", m);
  cr_assert_eq(w.u8, 255);
  cr_assert_eq(w.u16, 65535);
  cr_assert_eq(w.u32, 4294967295u);
  cr_assert_eq(w.u64, UINT64_MAX);
  cr_assert_eq(w.i8, -128);
  cr_assert_eq(w.i16, 32767);
  cr_assert_eq(w.i32, INT32_MIN);
  cr_assert_eq(w.i64, INT64_MIN);
  cr_assert_eq(w.size32, 4096);
  cr_assert_eq(w.time32, 4000000000u);
  cr_assert_eq(w.rate32, 4000000000u);
  cr_assert_eq(w.mode8, 2);
  cr_assert_eq(w.mode16, 1);
  guards_intact(&w);
  /* small values leave the other bytes of the field zero, not stale */
  m = widths_apply("u16: 1\nu32: 2\ni16: -1\ni8: 0\n", &w);
  cr_assert_null(m, "%s", m);
  cr_assert_eq(w.u16, 1);
  cr_assert_eq(w.u32, 2);
  cr_assert_eq(w.i16, -1);
  cr_assert_eq(w.i8, 0);
  cr_assert_eq(w.u8, 0xa5, "absent key without default: field left as it is");
  guards_intact(&w);
}

Test(schema, value_beyond_field_width_names_the_bound) {
  static const struct {
    const char *text, *msg;
  } c[] = {
      {"u8: 256\n", "t.yaml:1:5: u8: '256' is out of range (expected at most 255)"},
      {"u8: 1000\n", "t.yaml:1:5: u8: '1000' is out of range (expected at most 255)"},
      {"u16: 65536\n", "t.yaml:1:6: u16: '65536' is out of range (expected at most 65535)"},
      {"u32: 4294967296\n", "t.yaml:1:6: u32: '4294967296' is out of range (expected at most 4294967295)"},
      {"i8: 128\n", "t.yaml:1:5: i8: '128' is out of range (expected an integer from -128 to 127)"},
      {"i8: -129\n", "t.yaml:1:5: i8: '-129' is out of range (expected an integer from -128 to 127)"},
      {"i16: 32768\n", "t.yaml:1:6: i16: '32768' is out of range (expected an integer from -32768 to 32767)"},
      {"i32: -2147483649\n",
       "t.yaml:1:6: i32: '-2147483649' is out of range (expected an integer from -2147483648 to 2147483647)"},
      {"size32: 4GiB\n", "t.yaml:1:9: size32: '4GiB' is out of range (expected at most 4.294967295GB)"},
      {"time32: 5ms\n", "t.yaml:1:9: time32: '5ms' is out of range (expected at most 4.294967295ms)"},
      {"rate32: 5Gbps\n", "t.yaml:1:9: rate32: '5Gbps' is out of range (expected at most 4.294967295Gbps)"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(c); i++) {
    Widths w;
    char *m = widths_apply(c[i].text, &w);
    cr_assert_not_null(m, "'%s' accepted", c[i].text);
    cr_assert_str_eq(m, c[i].msg);
    g_free(m);
  }
  /* u64 holds everything a uint parses; beyond it is a parse error */
  Widths w;
  char *m = widths_apply("u64: 18446744073709551616\n", &w);
  assert_has(m, "u64: '18446744073709551616' is out of range");
  g_free(m);
}

Test(schema, width_applies_to_defaults_and_within_bounds) {
  /* a row's own bounds are checked first; the width still applies within them */
  typedef struct {
    uint8_t small;
  } S;
  static const FabCfgKey s[] = {FAB_CFG_KEY("small", FAB_CFG_UINT, S, small, .min = 1, .max = 1000),
                                FAB_CFG_END_ROW};
  FabCfg *cfg = load_ok("small: 300\n");
  S v = {0};
  GError *e = NULL;
  cr_assert_not(fab_cfg_apply(fab_cfg_root(cfg), NULL, s, &v, &e));
  cr_assert_str_eq(e->message, "t.yaml:1:8: small: '300' is out of range (expected at most 255)");
  g_clear_error(&e);
  cr_assert_eq(v.small, 0);
  fab_cfg_free(cfg);
  cfg = load_ok("small: 1001\n");
  cr_assert_not(fab_cfg_apply(fab_cfg_root(cfg), NULL, s, &v, &e));
  cr_assert_str_eq(e->message, "t.yaml:1:8: small: '1001' is out of range (expected 1 to 1000)");
  g_clear_error(&e);
  fab_cfg_free(cfg);
  /* a default beyond the width is the schema's bug: an internal error naming the key */
  static const FabCfgKey bad[] = {FAB_CFG_KEY("small", FAB_CFG_UINT, S, small, .def = "256"), FAB_CFG_END_ROW};
  cr_assert_not(fab_cfg_apply(NULL, NULL, bad, &v, &e));
  assert_has(e->message, "internal error: schema default of 'small'");
  assert_has(e->message, "expected at most 255");
  g_clear_error(&e);
}

/* ---- bool and gboolean fields ------------------------------------------ */

typedef struct {
  bool flag;
  uint8_t guard;
  gboolean gflag;
  bool dflag;
  gboolean gdflag;
} Bools;

static const FabCfgKey bools_schema[] = {
    FAB_CFG_KEY("flag", FAB_CFG_BOOL, Bools, flag),
    FAB_CFG_KEY("gflag", FAB_CFG_BOOL, Bools, gflag),
    FAB_CFG_KEY("dflag", FAB_CFG_BOOL, Bools, dflag, .def = "yes"),
    FAB_CFG_KEY("gdflag", FAB_CFG_BOOL, Bools, gdflag, .def = "off"),
    FAB_CFG_END_ROW};

Test(schema, bool_and_gboolean_fields) {
  cr_assert_eq(bools_schema[0].size, sizeof(bool));
  cr_assert_eq(bools_schema[1].size, sizeof(gboolean));
  static const struct {
    const char *text;
    bool flag;
    gboolean gflag;
  } c[] = {{"flag: true\ngflag: true\n", true, TRUE},
           {"flag: off\ngflag: no\n", false, FALSE},
           {"flag: Yes\ngflag: on\n", true, TRUE},
           {"flag: no\ngflag: yes\n", false, TRUE}};
  for (size_t i = 0; i < G_N_ELEMENTS(c); i++) {
    FabCfg *cfg = load_ok(c[i].text);
    Bools b;
    memset(&b, 0x5a, sizeof b);
    b.flag = !c[i].flag; /* a valid bool to start from */
    GError *e = NULL;
    cr_assert(fab_cfg_apply(fab_cfg_root(cfg), NULL, bools_schema, &b, &e), "%s", e ? e->message : "");
    cr_assert_eq(b.flag, c[i].flag, "case %zu: bool", i);
    cr_assert_eq(b.gflag, c[i].gflag, "case %zu: gboolean", i);
    cr_assert_eq(b.dflag, true, "bool default");
    cr_assert_eq(b.gdflag, FALSE, "gboolean default");
    cr_assert_eq(b.guard, 0x5a, "a bool store wrote past its byte");
    fab_cfg_free(cfg);
  }
  /* bad values are errors for both kinds of field */
  FabCfg *cfg = load_ok("flag: maybe\n");
  Bools b = {0};
  GError *e = NULL;
  cr_assert_not(fab_cfg_apply(fab_cfg_root(cfg), NULL, bools_schema, &b, &e));
  cr_assert(g_str_has_prefix(e->message, "t.yaml:1:7: flag: 'maybe' is not a boolean"), "%s", e->message);
  g_clear_error(&e);
  fab_cfg_free(cfg);
  cfg = load_ok("gflag: 1\n");
  cr_assert_not(fab_cfg_apply(fab_cfg_root(cfg), NULL, bools_schema, &b, &e));
  cr_assert(g_str_has_prefix(e->message, "t.yaml:1:8: gflag: '1' is not a boolean"), "%s", e->message);
  g_clear_error(&e);
  fab_cfg_free(cfg);
}

/* ---- splices ------------------------------------------------------------ */

typedef struct {
  const char *name;
  uint64_t bw, lat;
  uint32_t mtu;
  uint8_t prio;
  int mode;
} Spliced;

static const FabCfgKey splice_inner[] = {
    FAB_CFG_KEY("prio", FAB_CFG_UINT, Spliced, prio, .def = "3", .max = 7),
    FAB_CFG_END_ROW};
static const FabCfgKey splice_empty[] = {FAB_CFG_END_ROW};
static const FabCfgKey splice_link[] = {
    FAB_CFG_KEY("bandwidth", FAB_CFG_RATE, Spliced, bw, .required = true),
    FAB_CFG_KEY("latency", FAB_CFG_TIME, Spliced, lat, .def = "1us"),
    FAB_CFG_SPLICE_OF(splice_inner), /* nested */
    FAB_CFG_END_ROW};
static const FabCfgKey splice_schema[] = {
    FAB_CFG_KEY("name", FAB_CFG_STRING, Spliced, name),
    FAB_CFG_SPLICE_OF(splice_link),
    FAB_CFG_SPLICE_OF(splice_empty),
    FAB_CFG_KEY("mtu", FAB_CFG_SIZE, Spliced, mtu, .def = "4KiB"),
    FAB_CFG_KEY("mode", FAB_CFG_ENUM, Spliced, mode, .def = "ecmp", .choices = modes),
    FAB_CFG_END_ROW};
/* the same keys written in place */
static const FabCfgKey splice_flat[] = {
    FAB_CFG_KEY("name", FAB_CFG_STRING, Spliced, name),
    FAB_CFG_KEY("bandwidth", FAB_CFG_RATE, Spliced, bw, .required = true),
    FAB_CFG_KEY("latency", FAB_CFG_TIME, Spliced, lat, .def = "1us"),
    FAB_CFG_KEY("prio", FAB_CFG_UINT, Spliced, prio, .def = "3", .max = 7),
    FAB_CFG_KEY("mtu", FAB_CFG_SIZE, Spliced, mtu, .def = "4KiB"),
    FAB_CFG_KEY("mode", FAB_CFG_ENUM, Spliced, mode, .def = "ecmp", .choices = modes),
    FAB_CFG_END_ROW};

/* Apply `schema` to the root of `text`: the message (g_free) or NULL. The
** document is freed, so out->name is copied into name_copy (or NULL). */
static char name_copy[32];

static char *spliced_apply(const FabCfgKey *schema, const char *text, Spliced *out) {
  FabCfg *cfg = load_ok(text);
  memset(out, 0, sizeof *out);
  GError *e = NULL;
  char *m = NULL;
  if (!fab_cfg_apply(fab_cfg_root(cfg), NULL, schema, out, &e)) {
    m = g_strdup(e->message);
    g_error_free(e);
  }
  if (out->name) {
    g_strlcpy(name_copy, out->name, sizeof name_copy);
    out->name = name_copy;
  }
  fab_cfg_free(cfg);
  return m;
}

Test(schema, splice_reads_rows_in_place) {
  Spliced a, b;
  const char *text = "name: l0\nbandwidth: 400Gbps\nprio: 5\nmtu: 9000\nmode: spray\n";
  char *m = spliced_apply(splice_schema, text, &a);
  cr_assert_null(m, "%s", m);
  cr_assert_str_eq(a.name, "l0", "a row before the splices");
  cr_assert_null(spliced_apply(splice_flat, text, &b));
  cr_assert_eq(a.bw, 400000000000ULL);
  cr_assert_eq(a.lat, 1000000, "a spliced row's default");
  cr_assert_eq(a.prio, 5, "a row of a nested splice");
  cr_assert_eq(a.mtu, 9000, "a row after the splices");
  cr_assert_eq(a.mode, 2);
  cr_assert_eq(a.bw, b.bw);
  cr_assert_eq(a.lat, b.lat);
  cr_assert_eq(a.prio, b.prio);
  cr_assert_eq(a.mtu, b.mtu);
  cr_assert_eq(a.mode, b.mode);
  cr_assert_str_eq(b.name, "l0");
  /* defaults of every level */
  m = spliced_apply(splice_schema, "bandwidth: 1Gbps\n", &a);
  cr_assert_null(m, "%s", m);
  cr_assert_null(a.name, "a string without default stays as it was (zeroed)");
  cr_assert_eq(a.prio, 3);
  cr_assert_eq(a.mtu, 4096);
  cr_assert_eq(a.mode, 0);
}

Test(schema, splice_errors_as_if_in_place) {
  /* every message equals the one the flat schema gives */
  static const char *const texts[] = {
      "name: x\n",                            /* a required key of a splice is missing */
      "bandwidth: 1Gbps\nprio: 8\n",          /* a nested splice's bound */
      "bandwidth: 1Gbps\nprio: 300\n",        /* a nested splice's width (uint8_t) */
      "bandwidth: 1Gbps\nlatency: 5\n",       /* a spliced row's value */
      "bandwidth: 1Gbps\nmode: ecmpp\n",
      "bandwidth: 1Gbps\ncolour: red\n",      /* unknown key: lists spliced keys in place */
      "bandwidth: 1Gbps\nlatncy: 1us\n",      /* did you mean a spliced key */
  };
  for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
    Spliced a, b;
    char *m1 = spliced_apply(splice_schema, texts[i], &a);
    char *m2 = spliced_apply(splice_flat, texts[i], &b);
    cr_assert_not_null(m1, "'%s' accepted", texts[i]);
    cr_assert_not_null(m2);
    cr_assert_str_eq(m1, m2, "text %zu", i);
    g_free(m1);
    g_free(m2);
  }
  Spliced a;
  char *m = spliced_apply(splice_schema, "bandwidth: 1Gbps\ncolour: red\n", &a);
  cr_assert_str_eq(m, "t.yaml:2:1: colour: unknown key 'colour' (expected one of: name, bandwidth, latency, "
                      "prio, mtu, mode)");
  g_free(m);
  m = spliced_apply(splice_schema, "bandwidth: 1Gbps\nlatncy: 1us\n", &a);
  cr_assert_str_eq(m, "t.yaml:2:1: latncy: unknown key 'latncy' (expected one of: name, bandwidth, latency, "
                      "prio, mtu, mode); did you mean 'latency'?");
  g_free(m);
  m = spliced_apply(splice_schema, "name: x\n", &a);
  assert_has(m, "missing required key 'bandwidth'");
  g_free(m);
  m = spliced_apply(splice_schema, "bandwidth: 1Gbps\nprio: 300\n", &a);
  cr_assert_str_eq(m, "t.yaml:2:7: prio: '300' is out of range (expected at most 7)");
  g_free(m);
}

Test(schema, schema_has_follows_splices) {
  static const char *const have[] = {"name", "bandwidth", "latency", "prio", "mtu", "mode"};
  for (size_t i = 0; i < G_N_ELEMENTS(have); i++) {
    cr_assert(fab_cfg_schema_has(splice_schema, have[i]), "'%s' not found", have[i]);
    cr_assert(fab_cfg_schema_has(splice_flat, have[i]));
  }
  cr_assert(fab_cfg_schema_has(splice_link, "prio"), "a nested splice");
  cr_assert_not(fab_cfg_schema_has(splice_link, "name"), "not a key of that schema");
  cr_assert_not(fab_cfg_schema_has(splice_schema, "colour"));
  cr_assert_not(fab_cfg_schema_has(splice_schema, "Name"), "case matters");
  cr_assert_not(fab_cfg_schema_has(splice_schema, "band"), "no prefix match");
  cr_assert_not(fab_cfg_schema_has(splice_schema, ""), "a splice row is not a key");
  cr_assert_not(fab_cfg_schema_has(splice_empty, "name"));
  cr_assert(fab_cfg_schema_has(all_schema, "seq"));
  cr_assert(fab_cfg_schema_has(all_schema, "i"));
  cr_assert_not(fab_cfg_schema_has(all_schema, "x"));
}

/* ---- fab_cfg_enum ---------------------------------------------------------- */

Test(schema, enum_outside_a_schema) {
  FabCfg *cfg = load_ok("a: adaptive\nb: ecmp\nc: spray\nd: ecmpp\ne: [ecmp]\nf:\ng: {x: 1}\nh: ECMP\n");
  const FabCfgNode *r = fab_cfg_root(cfg);
  GError *e = NULL;
  cr_assert_eq(fab_cfg_enum(fab_cfg_get(r, "a"), modes, &e), 1);
  cr_assert_null(e);
  cr_assert_eq(fab_cfg_enum(fab_cfg_get(r, "b"), modes, &e), 0);
  cr_assert_eq(fab_cfg_enum(fab_cfg_get(r, "c"), modes, &e), 2);
  cr_assert_null(e);
  /* the messages a schema row gives, located at the node */
  cr_assert_eq(fab_cfg_enum(fab_cfg_get(r, "d"), modes, &e), -1);
  cr_assert_not_null(e);
  cr_assert_eq(e->domain, FAB_CFG_ERROR);
  cr_assert_str_eq(e->message, "t.yaml:4:4: d: 'ecmpp' is not a valid choice (expected one of: ecmp, adaptive, "
                               "spray); did you mean 'ecmp'?");
  g_clear_error(&e);
  cr_assert_eq(fab_cfg_enum(fab_cfg_get(r, "h"), modes, &e), -1, "choices are case-sensitive");
  assert_has(e->message, "h: 'ECMP' is not a valid choice");
  g_clear_error(&e);
  cr_assert_eq(fab_cfg_enum(fab_cfg_get(r, "e"), modes, &e), -1);
  assert_has(e->message, "e: expected one of: ecmp, adaptive, spray, found a sequence");
  g_clear_error(&e);
  cr_assert_eq(fab_cfg_enum(fab_cfg_get(r, "g"), modes, &e), -1);
  assert_has(e->message, "g: expected one of: ecmp, adaptive, spray, found a map");
  g_clear_error(&e);
  cr_assert_eq(fab_cfg_enum(fab_cfg_get(r, "f"), modes, &e), -1);
  assert_has(e->message, "f: an empty value is not a valid choice (expected one of: ecmp, adaptive, spray)");
  g_clear_error(&e);
  /* the same as the schema row reports */
  All a;
  char *m = apply_text("x: {mode: ecmpp}\n", "x", &a);
  FabCfg *c2 = load_ok("x: {mode: ecmpp}\n");
  cr_assert_eq(fab_cfg_enum(fab_cfg_get(fab_cfg_get(fab_cfg_root(c2), "x"), "mode"), modes, &e), -1);
  cr_assert_str_eq(e->message, m);
  g_clear_error(&e);
  g_free(m);
  fab_cfg_free(c2);
  /* no error wanted */
  cr_assert_eq(fab_cfg_enum(fab_cfg_get(r, "d"), modes, NULL), -1);
  fab_cfg_free(cfg);
}

/* ---- includes ---------------------------------------------------------- */

Test(include, merge_order) {
  Tmp t;
  tmp_init(&t);
  tmp_write(&t, "calib.yaml",
            "seed: 7\n"
            "fabric:\n"
            "  link: {bandwidth: 100Gbps, latency: 1us}\n"
            "  switch: {buffer: 32MiB}\n"
            "workload: {flows: [1, 2, 3]}\n");
  char *main = tmp_write(&t, "main.yaml",
                         "include: calib.yaml\n"
                         "name: x\n"
                         "fabric:\n"
                         "  link: {bandwidth: 400Gbps}\n"
                         "workload: {flows: [9]}\n");
  GError *e = NULL;
  FabCfg *cfg = fab_cfg_load_file(main, &e);
  cr_assert_not_null(cfg, "%s", e ? e->message : "");
  const FabCfgNode *r = fab_cfg_root(cfg);
  cr_assert_null(fab_cfg_get(r, "include"), "include is consumed");
  /* included keys first, then the including file's new ones */
  cr_assert_eq(fab_cfg_len(r), 4);
  cr_assert_str_eq(fab_cfg_key_at(r, 0), "seed");
  cr_assert_str_eq(fab_cfg_key_at(r, 1), "fabric");
  cr_assert_str_eq(fab_cfg_key_at(r, 2), "workload");
  cr_assert_str_eq(fab_cfg_key_at(r, 3), "name");
  const FabCfgNode *link = fab_cfg_get(fab_cfg_get(r, "fabric"), "link");
  const FabCfgNode *bw = fab_cfg_get(link, "bandwidth");
  cr_assert_str_eq(fab_cfg_scalar(bw), "400Gbps", "including file wins");
  cr_assert_str_eq(fab_cfg_scalar(fab_cfg_get(link, "latency")), "1us", "deep merge keeps");
  cr_assert_str_eq(fab_cfg_scalar(fab_cfg_get(fab_cfg_get(fab_cfg_get(r, "fabric"), "switch"),
                                              "buffer")),
                   "32MiB");
  const FabCfgNode *flows = fab_cfg_get(fab_cfg_get(r, "workload"), "flows");
  cr_assert_eq(fab_cfg_len(flows), 1, "sequences are replaced, not appended");
  /* locations name the file each node came from */
  char *calib = g_build_filename(t.dir, "calib.yaml", NULL);
  char *w = g_strdup_printf("%s:3:39", calib);
  cr_assert_str_eq(fab_cfg_where(fab_cfg_get(link, "latency")), w);
  g_free(w);
  w = g_strdup_printf("%s:4:21", main);
  cr_assert_str_eq(fab_cfg_where(bw), w);
  g_free(w);
  g_free(calib);
  cr_assert(g_str_has_prefix(fab_cfg_text(cfg), "include: calib.yaml\nname: x\n"));
  fab_cfg_free(cfg);
  tmp_done(&t);
}

Test(include, list_nested_and_later_wins) {
  Tmp t;
  tmp_init(&t);
  char *sub = g_build_filename(t.dir, "frag", NULL);
  cr_assert_eq(g_mkdir(sub, 0700), 0);
  tmp_write(&t, "frag/base.yaml", "a: base\nb: base\nc: base\n");
  tmp_write(&t, "frag/one.yaml", "include: base.yaml\nb: one\n"); /* relative to frag/ */
  tmp_write(&t, "two.yaml", "c: two\n");
  char *main = tmp_write(&t, "main.yaml", "include: [frag/one.yaml, two.yaml]\nd: main\n");
  GError *e = NULL;
  FabCfg *cfg = fab_cfg_load_file(main, &e);
  cr_assert_not_null(cfg, "%s", e ? e->message : "");
  const FabCfgNode *r = fab_cfg_root(cfg);
  cr_assert_str_eq(fab_cfg_scalar(fab_cfg_get(r, "a")), "base");
  cr_assert_str_eq(fab_cfg_scalar(fab_cfg_get(r, "b")), "one");
  cr_assert_str_eq(fab_cfg_scalar(fab_cfg_get(r, "c")), "two");
  cr_assert_str_eq(fab_cfg_scalar(fab_cfg_get(r, "d")), "main");
  assert_has(fab_cfg_where(fab_cfg_get(r, "a")), "frag/base.yaml:1:4");
  fab_cfg_free(cfg);
  g_unlink(g_ptr_array_index(t.files, 0)); /* frag/ must be empty before rmdir */
  g_unlink(g_ptr_array_index(t.files, 1));
  g_rmdir(sub);
  g_free(sub);
  tmp_done(&t);
}

Test(include, error_located_in_included_file) {
  Tmp t;
  tmp_init(&t);
  tmp_write(&t, "frag.yaml", "fabric:\n  link:\n    bandwidth: 100Gbs\n");
  char *main = tmp_write(&t, "main.yaml", "include: frag.yaml\nname: x\n");
  GError *e = NULL;
  FabCfg *cfg = fab_cfg_load_file(main, &e);
  cr_assert_not_null(cfg, "%s", e ? e->message : "");
  static const FabCfgKey s[] = {FAB_CFG_KEY("bandwidth", FAB_CFG_RATE, One, v), FAB_CFG_END_ROW};
  One bw;
  const FabCfgNode *link = fab_cfg_get(fab_cfg_get(fab_cfg_root(cfg), "fabric"), "link");
  cr_assert_not(fab_cfg_apply(link, NULL, s, &bw, &e));
  char *want = g_strdup_printf("%s/frag.yaml:3:16: fabric.link.bandwidth: '100Gbs' is not a rate",
                               t.dir);
  cr_assert(g_str_has_prefix(e->message, want), "%s", e->message);
  g_free(want);
  g_clear_error(&e);
  fab_cfg_free(cfg);

  /* a syntax error inside the fragment is located there too */
  tmp_write(&t, "broken.yaml", "a: 1\nb: c: d\n");
  char *main2 = tmp_write(&t, "main2.yaml", "name: x\ninclude: broken.yaml\n");
  cr_assert_null(fab_cfg_load_file(main2, &e));
  want = g_strdup_printf("%s/broken.yaml:2:5: YAML syntax error", t.dir);
  cr_assert(g_str_has_prefix(e->message, want), "%s", e->message);
  g_free(want);
  g_clear_error(&e);
  tmp_done(&t);
}

Test(include, cycle) {
  Tmp t;
  tmp_init(&t);
  tmp_write(&t, "b.yaml", "x: 1\ninclude: [c.yaml]\n");
  tmp_write(&t, "c.yaml", "include: a.yaml\n");
  char *a = tmp_write(&t, "a.yaml", "include: b.yaml\n");
  GError *e = NULL;
  cr_assert_null(fab_cfg_load_file(a, &e));
  cr_assert_not_null(e);
  char *want = g_strdup_printf("%s/c.yaml:1:10: include: include cycle: ", t.dir);
  cr_assert(g_str_has_prefix(e->message, want), "%s", e->message);
  assert_has(e->message, "a.yaml -> ");
  assert_has(e->message, "b.yaml -> ");
  g_free(want);
  g_clear_error(&e);

  /* a file including itself */
  char *self = tmp_write(&t, "self.yaml", "include: [self.yaml]\n");
  cr_assert_null(fab_cfg_load_file(self, &e));
  want = g_strdup_printf("%s:1:11: include[0]: include cycle", self);
  cr_assert(g_str_has_prefix(e->message, want), "%s", e->message);
  g_free(want);
  g_clear_error(&e);
  tmp_done(&t);
}

Test(include, missing_and_bad_entries) {
  char *m = load_err("name: x\ninclude: [/nonexistent-fabsim/none.yaml]\n");
  assert_has(m, "t.yaml:2:11: include[0]: cannot read included file '/nonexistent-fabsim/none.yaml'");
  assert_has(m, "No such file");
  g_free(m);
  m = load_err("include: {a: 1}\n");
  assert_has(m, "t.yaml:1:1: include: expected a file name or a list of file names");
  g_free(m);
  m = load_err("include: [a.yaml, [b]]\n");
  assert_has(m, "t.yaml:1:19: include[1]: expected a file name, found a sequence");
  g_free(m);
  FabCfg *cfg = load_ok("include:\nname: x\n"); /* empty include: nothing */
  cr_assert_eq(fab_cfg_len(fab_cfg_root(cfg)), 1);
  fab_cfg_free(cfg);
}

/* ---- --set ------------------------------------------------------------- */

Test(set, replaces_existing) {
  FabCfg *cfg = load_ok("fabric:\n  switch:\n    buffer: 64MiB\n    latency: 600ns\n");
  GError *e = NULL;
  cr_assert(fab_cfg_set(cfg, "fabric.switch.buffer=32MiB", &e), "%s", e ? e->message : "");
  const FabCfgNode *sw = fab_cfg_get(fab_cfg_get(fab_cfg_root(cfg), "fabric"), "switch");
  cr_assert_eq(fab_cfg_len(sw), 2);
  cr_assert_str_eq(fab_cfg_key_at(sw, 0), "buffer", "position kept");
  const FabCfgNode *buf = fab_cfg_get(sw, "buffer");
  cr_assert_str_eq(fab_cfg_scalar(buf), "32MiB");
  cr_assert_str_eq(fab_cfg_where(buf), "--set:1:22");
  cr_assert_str_eq(fab_cfg_path(buf), "fabric.switch.buffer");
  cr_assert_str_eq(fab_cfg_text(cfg),
                   "fabric:\n  switch:\n    buffer: 64MiB\n    latency: 600ns\n"
                   "# --set fabric.switch.buffer=32MiB\n");
  fab_cfg_free(cfg);
}

Test(set, creates_maps_and_locates_at_value) {
  FabCfg *cfg = load_ok("name: x");
  GError *e = NULL;
  cr_assert(fab_cfg_set(cfg, "fabric.switch.ecn.kmin=100KiB", &e), "%s", e ? e->message : "");
  cr_assert(fab_cfg_set(cfg, "fabric.link={bandwidth: 1Gbps, latency: 2us}", &e));
  const FabCfgNode *r = fab_cfg_root(cfg);
  const FabCfgNode *fabric = fab_cfg_get(r, "fabric");
  cr_assert_eq(fab_cfg_kind(fabric), FAB_CFG_NODE_MAP);
  cr_assert_str_eq(fab_cfg_where(fabric), "--set:1:24");
  const FabCfgNode *kmin = fab_cfg_get(fab_cfg_get(fab_cfg_get(fabric, "switch"), "ecn"), "kmin");
  cr_assert_str_eq(fab_cfg_scalar(kmin), "100KiB");
  cr_assert_str_eq(fab_cfg_where(kmin), "--set:1:24");
  const FabCfgNode *lat = fab_cfg_get(fab_cfg_get(fabric, "link"), "latency");
  cr_assert_str_eq(fab_cfg_scalar(lat), "2us");
  cr_assert_str_eq(fab_cfg_where(lat), "--set:1:41");
  cr_assert_str_eq(fab_cfg_path(lat), "fabric.link.latency");
  cr_assert_str_eq(fab_cfg_text(cfg), "name: x\n# --set fabric.switch.ecn.kmin=100KiB\n"
                                      "# --set fabric.link={bandwidth: 1Gbps, latency: 2us}\n");

  /* a null on the way becomes a map; a value can be a sequence */
  FabCfg *c2 = load_ok("sharp:\n");
  cr_assert(fab_cfg_set(c2, "sharp.enabled=true", &e));
  cr_assert(fab_cfg_set(c2, "ranks=[0, 1, 2]", &e));
  /* an empty value is null, which removes a key: there is none to remove here */
  cr_assert_not(fab_cfg_set(c2, "empty=", &e));
  g_clear_error(&e);
  const FabCfgNode *r2 = fab_cfg_root(c2);
  cr_assert_str_eq(fab_cfg_scalar(fab_cfg_get(fab_cfg_get(r2, "sharp"), "enabled")), "true");
  cr_assert_eq(fab_cfg_len(fab_cfg_get(r2, "ranks")), 3);
  cr_assert_str_eq(fab_cfg_where(fab_cfg_at(fab_cfg_get(r2, "ranks"), 2)), "--set:1:14");
  cr_assert_str_eq(fab_cfg_path(fab_cfg_at(fab_cfg_get(r2, "ranks"), 2)), "ranks[2]");
  cr_assert_null(fab_cfg_get(r2, "empty"));
  fab_cfg_free(c2);
  fab_cfg_free(cfg);
}

Test(set, unknown_key_reported_at_set) {
  /* the unknown key is reported where it is written in the argument: column 6 */
  FabCfg *cfg = load_ok("link:\n  bandwidth: 1Gbps\n");
  cr_assert(fab_cfg_set(cfg, "link.colour=red", NULL));
  static const FabCfgKey s[] = {FAB_CFG_KEY("bandwidth", FAB_CFG_RATE, One, v), FAB_CFG_END_ROW};
  One bw;
  GError *e = NULL;
  cr_assert_not(fab_cfg_apply(fab_cfg_get(fab_cfg_root(cfg), "link"), NULL, s, &bw, &e));
  cr_assert_str_eq(e->message, "--set:1:6: link.colour: unknown key 'colour' (expected one of: "
                               "bandwidth)");
  g_clear_error(&e);
  /* and a bad value given with --set */
  cr_assert(fab_cfg_set(cfg, "link={bandwidth: 5}", NULL));
  cr_assert_not(fab_cfg_apply(fab_cfg_get(fab_cfg_root(cfg), "link"), NULL, s, &bw, &e));
  assert_has(e->message, "--set:1:18: link.bandwidth: '5' is not a rate: it has no unit");
  g_clear_error(&e);
  fab_cfg_free(cfg);
}

Test(set, sequence_index) {
  FabCfg *cfg = load_ok("workload:\n  flows:\n    - {src: 0, size: 1MiB}\n    - {src: 1, size: 2MiB}\n");
  GError *e = NULL;
  cr_assert(fab_cfg_set(cfg, "workload.flows[1].size=4MiB", &e), "%s", e ? e->message : "");
  const FabCfgNode *f1 = fab_cfg_at(fab_cfg_get(fab_cfg_get(fab_cfg_root(cfg), "workload"), "flows"), 1);
  cr_assert_str_eq(fab_cfg_scalar(fab_cfg_get(f1, "size")), "4MiB");
  cr_assert_str_eq(fab_cfg_path(fab_cfg_get(f1, "size")), "workload.flows[1].size");
  cr_assert(fab_cfg_set(cfg, "workload.flows[0]={src: 3}", &e));
  const FabCfgNode *f0 = fab_cfg_at(fab_cfg_get(fab_cfg_get(fab_cfg_root(cfg), "workload"), "flows"), 0);
  cr_assert_str_eq(fab_cfg_path(fab_cfg_get(f0, "src")), "workload.flows[0].src");
  cr_assert_null(fab_cfg_get(f0, "size"));
  cr_assert_not(fab_cfg_set(cfg, "workload.flows[2].size=1", &e));
  assert_has(e->message, "has 2 items");
  g_clear_error(&e);
  cr_assert_not(fab_cfg_set(cfg, "workload.nope[0]=1", &e));
  assert_has(e->message, "'workload.nope' does not exist");
  g_clear_error(&e);
  fab_cfg_free(cfg);
}

Test(set, errors) {
  FabCfg *cfg = load_ok("name: demo\nfabric: {link: 5}\n");
  static const struct {
    const char *arg, *sub;
  } c[] = {
      {"fabric.link", "--set:1:1: 'fabric.link' has no '=' (expected KEY=VALUE"},
      {"=5", "--set:1:1: empty key in '=5'"},
      {"a..b=1", "--set:1:1: empty component at column 3 of key 'a..b'"},
      {".a=1", "empty component at column 1"},
      {"a.=1", "empty component at column 3"},
      {"a[x]=1", "bad index"},
      {"fabric.link.bandwidth=1Gbps", "cannot set 'fabric.link.bandwidth': 'fabric.link' is a "
                                      "scalar at t.yaml:2:16, not a map"},
      {"name.x=1", "'name' is a scalar"},
      {"fabric.switch=[1, 2", "--set:1:20: YAML syntax error: "},
      {"fabric.switch=[1, 2", "(while parsing a flow sequence at --set:1:15)"},
      {"fabric.switch=a: b: c", "--set:1:"},
      {"x={a: 1, a: 2}", "--set:1:10: x.a: duplicate key 'a'"},
      {"x=1\n---\n2", "more than one YAML document"},
      {"include=a.yaml", "include cannot be set"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(c); i++) {
    GError *e = NULL;
    cr_assert_not(fab_cfg_set(cfg, c[i].arg, &e), "'%s' accepted", c[i].arg);
    cr_assert_not_null(e, "'%s': no error", c[i].arg);
    assert_has(e->message, c[i].sub);
    g_error_free(e);
  }
  /* nothing changed by the failed attempts */
  const FabCfgNode *r = fab_cfg_root(cfg);
  cr_assert_eq(fab_cfg_len(r), 2);
  cr_assert_str_eq(fab_cfg_scalar(fab_cfg_get(fab_cfg_get(r, "fabric"), "link")), "5");
  cr_assert_str_eq(fab_cfg_text(cfg), "name: demo\nfabric: {link: 5}\n");
  fab_cfg_free(cfg);
}

Test(set, null_removes_the_key) {
  FabCfg *cfg = load_ok("name: demo\nworkload: {min: 8, max: 1GiB, flows: [{size: 1}]}\n");
  GError *e = NULL;
  cr_assert(fab_cfg_set(cfg, "workload.min=~", &e), "%s", e ? e->message : "");
  cr_assert(fab_cfg_set(cfg, "workload.max=null", &e), "%s", e ? e->message : "");
  cr_assert(fab_cfg_set(cfg, "workload.flows[0].size=", &e), "%s", e ? e->message : "");
  const FabCfgNode *w = fab_cfg_get(fab_cfg_root(cfg), "workload");
  cr_assert_null(fab_cfg_get(w, "min"));
  cr_assert_null(fab_cfg_get(w, "max"));
  cr_assert_eq(fab_cfg_len(w), 1);
  cr_assert_eq(fab_cfg_len(fab_cfg_at(fab_cfg_get(w, "flows"), 0)), 0);
  /* the removal is kept in the scenario's text like any --set */
  assert_has(fab_cfg_text(cfg), "# --set workload.min=~\n");
  /* a key given again after its removal comes back */
  cr_assert(fab_cfg_set(cfg, "workload.min=16", &e));
  cr_assert_str_eq(fab_cfg_scalar(fab_cfg_get(w, "min")), "16");
  static const struct {
    const char *arg, *sub;
  } c[] = {
      {"workload.mni=~", "cannot remove 'workload.mni': the scenario has no such key"},
      {"fabric.link=~", "cannot remove 'fabric.link': the scenario has no such key"},
      {"name.x=~", "cannot remove 'name.x'"},
      {"workload.flows[0]=~", "a sequence's item cannot be removed"},
      {"workload.flows[3].size=~", "cannot remove 'workload.flows[3].size'"},
      {"include=~", "include cannot be set"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(c); i++) {
    e = NULL;
    cr_assert_not(fab_cfg_set(cfg, c[i].arg, &e), "'%s' accepted", c[i].arg);
    assert_has(e->message, c[i].sub);
    g_error_free(e);
  }
  fab_cfg_free(cfg);
}

Test(set, value_is_yaml) {
  FabCfg *cfg = load_ok("a: 1\n");
  cr_assert(fab_cfg_set(cfg, "a='x: y'", NULL));
  cr_assert_str_eq(fab_cfg_scalar(fab_cfg_get(fab_cfg_root(cfg), "a")), "x: y");
  cr_assert(fab_cfg_set(cfg, "b = 100 Gbps", NULL) == TRUE);
  /* the key is taken as written, spaces included; the value is trimmed YAML */
  cr_assert_str_eq(fab_cfg_scalar(fab_cfg_get(fab_cfg_root(cfg), "b ")), "100 Gbps");
  fab_cfg_free(cfg);
}

/* fabsim compare SCENARIO MEASURED.log: a measured nccl-tests run against
** the same sweep simulated on SCENARIO.
**
** The log gives the op, the sizes, the type (and the root); the scenario is
** loaded with those forced onto an nccl-tests workload (the user's --set
** first, so they can tune it but not change what is compared), run in this
** process, and its table matched with the log's size by size. See cmds.h
** and tools/libfabsim/nccltests.h. */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cmds.h"
#include "tools/libfabsim/driver.h"
#include "tools/libfabsim/h5out.h"
#include "tools/libfabsim/json.h"
#include "tools/libfabsim/nccltests.h"
#include "tools/libfabsim/scenario.h"

enum { CMP_OUT, CMP_OP, CMP_JSON, CMP_NO_PROGRESS };

static const FabOpt compare_opts[] = {
  {"--out", 0, FAB_OPT_VALUE, CMP_OUT, "DIR", "a directory", 0, 0,
   "also write DIR/compare.csv and, with gnuplot, DIR/compare.png/.svg"},
  {"--set", 0, FAB_OPT_SET, 0, "KEY=VALUE", "KEY=VALUE", 0, 0, "override a scenario key, e.g. --set workload.algorithm=ring"},
  {"--op", 0, FAB_OPT_VALUE, CMP_OP, "OP", "an op", 0, 0,
   "which test of the log to compare (allreduce, allgather, ...)"},
  {"--json", 0, FAB_OPT_FLAG, CMP_JSON, NULL, NULL, 0, 0, "print the comparison as one JSON object on stdout"},
  {"--no-progress", 0, FAB_OPT_FLAG, CMP_NO_PROGRESS, NULL, NULL, 0, 0,
   "no progress line on stderr (it is shown only on a terminal)"},
  {NULL},
};

const FabCmd fab_compare_cmd = {
  "compare", "a measured nccl-tests log against the same sweep simulated", "SCENARIO MEASURED.log", 2, 2,
  "needs a SCENARIO and a MEASURED.log (nccl-tests output)", "a SCENARIO and a MEASURED.log",
  "Compare a measured nccl-tests run (the output of all_reduce_perf, all_gather_perf,\n"
  "reduce_scatter_perf, broadcast_perf, reduce_perf, alltoall_perf or sendrecv_perf)\n"
  "with the same sweep simulated on SCENARIO: the op, the sizes, the type and the root\n"
  "come from the log (workload.kind=nccl-tests, workload.op, workload.sizes,\n"
  "workload.dtype are set after your --set). Prints the two tables side by side with\n"
  "the time ratio per size (simulated / measured time), and per bound the geometric\n"
  "mean and the worst ratio: bandwidth-bound sizes are those where moving the bytes\n"
  "takes at least half the measured time (latency + size / bandwidth through the next\n"
  "smaller size), latency-bound the others.",
  compare_opts,
  "The measured values are the out-of-place ones (the in-place ones for a size whose\n"
  "out-of-place time is N/A). Every layout nccl-tests has printed is read (its header\n"
  "names the columns), as are logs holding several tests (choose one with --op).\n"
  "A log from another number of ranks than the scenario's is compared anyway, with a\n"
  "warning.\n"
  "exit status: 0 compared, 1 the simulation failed, 2 bad input or usage\n",
};

/* `n` in YAML flow style (plain scalars where that is safe, else quoted). */
static void yaml_flow(GString *s, const FabCfgNode *n) {
  if (fab_cfg_kind(n) == FAB_CFG_NODE_SCALAR) {
    const char *v = fab_cfg_scalar(n);
    gboolean plain = *v != 0;
    for (const char *c = v; *c; c++) plain &= g_ascii_isalnum(*c) || strchr("._-+/%", *c) != NULL;
    if (plain) {
      g_string_append(s, v);
      return;
    }
    g_string_append_c(s, '"');
    for (const char *c = v; *c; c++) {
      if (*c == '"' || *c == '\\') g_string_append_c(s, '\\');
      g_string_append_c(s, *c);
    }
    g_string_append_c(s, '"');
    return;
  }
  gboolean map = fab_cfg_kind(n) == FAB_CFG_NODE_MAP;
  g_string_append_c(s, map ? '{' : '[');
  for (size_t i = 0; i < fab_cfg_len(n); i++) {
    if (i) g_string_append(s, ", ");
    if (map) g_string_append_printf(s, "%s: ", fab_cfg_key_at(n, i));
    yaml_flow(s, fab_cfg_at(n, i));
  }
  g_string_append_c(s, map ? '}' : ']');
}

/* What the scenario's workload (after the user's --set) is: its kind
** (transfer full, NULL if the file does not load: the loader will say why)
** and, when it is an nccl-tests sweep given by min/max/factor, the rest of
** its keys in flow style ("algorithm: ring, iters: 5, "), to rebuild it
** with sizes instead (*rest NULL otherwise). */
static char *scenario_workload(const char *path, GPtrArray *sets, char **rest) {
  static const char *const forced[] = {"kind", "op", "dtype", "sizes", "root", "min", "max", "factor", NULL};
  *rest = NULL;
  FabCfg *cfg = fab_cfg_load_file(path, NULL);
  if (!cfg) return NULL;
  for (guint i = 0; i < sets->len; i++)
    if (!fab_cfg_set(cfg, sets->pdata[i], NULL)) break;
  const FabCfgNode *wl = fab_cfg_get(fab_cfg_root(cfg), "workload");
  char *kind = g_strdup(fab_cfg_scalar(fab_cfg_get(wl, "kind")));
  if (!g_strcmp0(kind, "nccl-tests") &&
      (fab_cfg_get(wl, "min") || fab_cfg_get(wl, "max") || fab_cfg_get(wl, "factor"))) {
    GString *r = g_string_new(NULL);
    for (size_t i = 0; i < fab_cfg_len(wl); i++) {
      const char *k = fab_cfg_key_at(wl, i);
      if (g_strv_contains(forced, k)) continue;
      g_string_append_printf(r, "%s: ", k);
      yaml_flow(r, fab_cfg_at(wl, i));
      g_string_append(r, ", ");
    }
    *rest = g_string_free(r, FALSE);
  }
  fab_cfg_free(cfg);
  return kind;
}

/* workload.dtype's spelling of an nccl-tests type */
static const char *wl_dtype(const char *type) {
  if (!strcmp(type, "f8e4m3") || !strcmp(type, "f8e5m2")) return "fp8";
  return type;
}

/* A string, or null for none (sim/json.c writes the rest). */
static void json_str(GString *s, const char *v) {
  if (v) fab_json_put_str(s, v);
  else g_string_append(s, "null");
}

/* One measured size: its values, the simulated ones, the errors, the ratio and bound. */
static void json_size(GString *s, const FabNcclTestsCmpRow *r) {
  g_string_append_printf(s, "{\"bytes\": %" G_GUINT64_FORMAT ", \"count\": %" G_GUINT64_FORMAT
                         ", \"measured\": {\"time_us\": ", r->bytes, r->count);
  fab_json_put_num(s, r->meas_time_us);
  g_string_append(s, ", \"algbw_GBps\": ");
  fab_json_put_num(s, r->meas_algbw_GBps);
  g_string_append(s, ", \"busbw_GBps\": ");
  fab_json_put_num(s, r->meas_busbw_GBps);
  g_string_append_printf(s, ", \"group\": \"%s\"}, \"simulated\": ", r->meas_in_place ? "in-place" : "out-of-place");
  if (isnan(r->sim_time_us)) {
    g_string_append(s, "null");
  } else {
    g_string_append(s, "{\"time_us\": ");
    fab_json_put_num(s, r->sim_time_us);
    g_string_append(s, ", \"algbw_GBps\": ");
    fab_json_put_num(s, r->sim_algbw_GBps);
    g_string_append(s, ", \"busbw_GBps\": ");
    fab_json_put_num(s, r->sim_busbw_GBps);
    g_string_append(s, ", \"algorithm\": ");
    json_str(s, r->algorithm);
    g_string_append(s, ", \"protocol\": ");
    json_str(s, r->protocol);
    g_string_append(s, "}");
  }
  g_string_append(s, ", \"time_error_pct\": ");
  fab_json_put_num(s, 100 * r->time_err);
  g_string_append(s, ", \"busbw_error_pct\": ");
  fab_json_put_num(s, 100 * r->busbw_err);
  g_string_append(s, ", \"time_ratio\": ");
  fab_json_put_num(s, r->time_ratio);
  g_string_append(s, ", \"bound\": ");
  json_str(s, fab_nccltests_bound_name(r->bound));
  g_string_append(s, "}");
}

/* A size in bytes, or null. */
static void json_bytes(GString *s, gboolean have, uint64_t b) {
  if (have) g_string_append_printf(s, "%" G_GUINT64_FORMAT, b);
  else g_string_append(s, "null");
}

/* "KEY": {"mean_abs": %, "max_abs": %, "max_at_bytes": B} of one error (fractions in). */
static void json_error(GString *s, const char *key, double mean, double max, gboolean have, uint64_t at) {
  g_string_append_printf(s, "\"%s\": {\"mean_abs\": ", key);
  fab_json_put_num(s, 100 * mean);
  g_string_append(s, ", \"max_abs\": ");
  fab_json_put_num(s, 100 * max);
  g_string_append(s, ", \"max_at_bytes\": ");
  json_bytes(s, have, at);
  g_string_append_c(s, '}');
}

/* The ratios of one bound. */
static void json_class(GString *s, const char *key, const FabNcclTestsCmpClass *k) {
  g_string_append_printf(s, "\"%s\": {\"sizes\": %u, \"min_bytes\": ", key, k->sizes);
  json_bytes(s, k->sizes, k->min_bytes);
  g_string_append(s, ", \"max_bytes\": ");
  json_bytes(s, k->sizes, k->max_bytes);
  g_string_append(s, ", \"geomean\": ");
  fab_json_put_num(s, k->geomean_ratio);
  g_string_append(s, ", \"worst\": ");
  fab_json_put_num(s, k->worst_ratio);
  g_string_append(s, ", \"worst_at_bytes\": ");
  json_bytes(s, k->sizes, k->worst_bytes);
  g_string_append(s, ", \"error_share\": ");
  fab_json_put_num(s, k->error_share);
  g_string_append(s, "}");
}

/* The summaries: mean and max |error| (%), then the time ratios by bound. */
static void json_summary(GString *s, const FabNcclTestsCmp *c) {
  g_string_append_printf(s, "\"matched\": %u, ", c->matched);
  json_error(s, "time_error_pct", c->mean_abs_time_err, c->max_abs_time_err, c->matched, c->max_time_err_bytes);
  g_string_append(s, ", ");
  json_error(s, "busbw_error_pct", c->mean_abs_busbw_err, c->max_abs_busbw_err, c->matched, c->max_busbw_err_bytes);
  g_string_append(s, ", \"peak_busbw_GBps\": ");
  fab_json_put_num(s, c->peak_busbw_GBps);
  g_string_append(s, ", \"peak_at_bytes\": ");
  json_bytes(s, !isnan(c->peak_busbw_GBps), c->peak_bytes);
  g_string_append(s, ", \"time_ratio\": {\"rule\": ");
  json_str(s, FAB_NCCLTESTS_BOUND_RULE);
  g_string_append(s, ", ");
  json_class(s, "bandwidth_bound", &c->bandwidth);
  g_string_append(s, ", ");
  json_class(s, "latency_bound", &c->latency);
  g_string_append(s, ", \"error_mostly_in\": ");
  json_str(s, isnan(c->latency.error_share) ? NULL : c->latency.error_share >= 0.5 ? "latency-bound" : "bandwidth-bound");
  g_string_append(s, ", \"worst\": [");
  for (uint32_t i = 0; i < c->n_worst; i++) {
    g_string_append_printf(s, "%s{\"bytes\": %" G_GUINT64_FORMAT ", \"ratio\": ", i ? ", " : "", c->worst_bytes[i]);
    fab_json_put_num(s, c->worst_ratio[i]);
    g_string_append(s, "}");
  }
  g_string_append(s, "]}");
}

/* `ntests`: the tests in the log, the compared one from m->line. */
static char *to_json(const FabNcclTestsTable *m, const FabNcclTestsTable *sim, const FabNcclTestsCmp *c,
                     const char *log, guint ntests, const FabScenario *sc) {
  GString *s = g_string_new("{\"fabsim_version\": ");
  json_str(s, FABSIM_VERSION);
  g_string_append(s, ", \"scenario\": ");
  json_str(s, sc->name);
  g_string_append(s, ", \"log\": ");
  json_str(s, log);
  g_string_append_printf(s, ", \"log_tests\": %u, \"log_line\": %u, \"op\": ", ntests, m->line);
  json_str(s, m->op);
  g_string_append(s, ", \"binary\": ");
  json_str(s, m->binary);
  g_string_append(s, ", \"type\": ");
  json_str(s, m->type);
  g_string_append_printf(s, ", \"measured_ranks\": %u, \"simulated_ranks\": %u, \"sizes\": [", m->ranks,
                         sim ? sim->ranks : 0);
  for (guint i = 0; i < c->rows->len; i++) {
    if (i) g_string_append(s, ", ");
    json_size(s, &g_array_index(c->rows, FabNcclTestsCmpRow, i));
  }
  g_string_append(s, "], ");
  json_summary(s, c);
  g_string_append(s, "}\n");
  return g_string_free(s, FALSE);
}

static void csv_num(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, ",%.9g", v);
  else fputs(",", f);
}

/* DIR/compare.csv: a row per measured size. */
static gboolean write_csv(const FabNcclTestsCmp *c, const char *dir, GString *why) {
  char *path = g_build_filename(dir, "compare.csv", NULL);
  FILE *f = fopen(path, "w");
  if (!f) {
    g_string_printf(why, "cannot write %s: %s", path, g_strerror(errno));
    g_free(path);
    return FALSE;
  }
  fputs("size_B,count,measured_time_us,measured_algbw_GBps,measured_busbw_GBps,simulated_time_us,"
        "simulated_algbw_GBps,simulated_busbw_GBps,time_error_pct,busbw_error_pct,algorithm,protocol,time_ratio,"
        "bound\n", f);
  for (guint i = 0; i < c->rows->len; i++) {
    const FabNcclTestsCmpRow *r = &g_array_index(c->rows, FabNcclTestsCmpRow, i);
    fprintf(f, "%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT, r->bytes, r->count);
    csv_num(f, r->meas_time_us);
    csv_num(f, r->meas_algbw_GBps);
    csv_num(f, r->meas_busbw_GBps);
    csv_num(f, r->sim_time_us);
    csv_num(f, r->sim_algbw_GBps);
    csv_num(f, r->sim_busbw_GBps);
    csv_num(f, 100 * r->time_err);
    csv_num(f, 100 * r->busbw_err);
    fprintf(f, ",%s,%s", r->algorithm ? r->algorithm : "", r->protocol ? r->protocol : "");
    csv_num(f, r->time_ratio);
    fprintf(f, ",%s\n", r->bound ? fab_nccltests_bound_name(r->bound) : "");
  }
  gboolean ok = fclose(f) == 0;
  if (!ok) g_string_printf(why, "cannot write %s: %s", path, g_strerror(errno));
  g_free(path);
  return ok;
}

/* DIR/compare.dat and .png/.svg: busbw against size, measured and simulated
** (upper panel), and the time per operation on log-log axes (lower panel,
** where the small sizes' latencies show). */
static gboolean write_plot(const char *gp_bin, const FabNcclTestsCmp *c, const FabNcclTestsTable *m,
                           const FabNcclTestsTable *sim, const char *dir, GString *why) {
  char *path = g_build_filename(dir, "compare.dat", NULL);
  FILE *f = fopen(path, "w");
  if (!f) {
    g_string_printf(why, "cannot write %s: %s", path, g_strerror(errno));
    g_free(path);
    return FALSE;
  }
  fprintf(f, "# size_B measured_busbw_GBps simulated_busbw_GBps measured_time_us simulated_time_us\n");
  uint64_t lo = UINT64_MAX, hi = 0;
  for (guint i = 0; i < c->rows->len; i++) {
    const FabNcclTestsCmpRow *r = &g_array_index(c->rows, FabNcclTestsCmpRow, i);
    if (!r->bytes) continue; /* no place on a log axis */
    lo = MIN(lo, r->bytes), hi = MAX(hi, r->bytes);
    fprintf(f, "%" G_GUINT64_FORMAT, r->bytes);
    double v[4] = {r->meas_busbw_GBps, r->sim_busbw_GBps, r->meas_time_us, r->sim_time_us};
    for (int k = 0; k < 4; k++) {
      if (isfinite(v[k])) fprintf(f, " %.9g", v[k]);
      else fputs(" NaN", f);
    }
    fputc('\n', f);
  }
  fclose(f);
  GString *gp = g_string_new(NULL);
  char *what = g_strdup_printf("%s (%s): measured on %u ranks, fabsim on %u ranks", m->binary ? m->binary : m->op,
                               m->type, m->ranks, sim ? sim->ranks : 0);
  char *sum = fab_nccltests_cmp_summary(c);
  g_string_append(gp, "set multiplot layout 2,1 title \"");
  fab_plot_put_title(gp, what);
  g_string_append(gp, "\\n");
  fab_plot_put_title(gp, sum);
  g_string_append(gp, "\"\n");
  fab_plot_size_xtics(gp, lo, hi);
  g_string_append_printf(gp, "set lmargin 12\nset rmargin 4\nset grid xtics ytics\nset key top left box opaque\n"
                             "set xlabel \"message size (B)\"\nset ylabel \"bus bandwidth (GB/s)\"\nset yrange [0:*]\n"
                             "plot \"%s\" using 1:2 with linespoints lw 2 pt 7 ps 0.8 title \"measured\", "
                             "\"%s\" using 1:3 with linespoints lw 2 pt 5 ps 0.8 dt 2 title \"fabsim\"\n"
                             "set logscale y 10\nset yrange [*:*]\nset format y \"%%g\"\nset ylabel \"time (us)\"\n"
                             "plot \"%s\" using 1:4 with linespoints lw 2 pt 7 ps 0.8 title \"measured\", "
                             "\"%s\" using 1:5 with linespoints lw 2 pt 5 ps 0.8 dt 2 title \"fabsim\"\n"
                             "unset multiplot\nunset logscale\nset lmargin -1\nset rmargin -1\n",
                         path, path, path, path);
  gboolean ok = fab_plot_draw(gp_bin, dir, "compare", gp->str, why);
  g_free(what);
  g_free(sum);
  g_string_free(gp, TRUE);
  g_free(path);
  return ok;
}

FabNcclTestsTable *fab_compare_measured(const char *cmd, const char *log, const char *op_opt, guint *ntests) {
  GError *err = NULL;
  GPtrArray *tests = fab_nccltests_read_tests(log, &err);
  FabNcclTestsTable *meas = NULL;
  if (tests) {
    *ntests = tests->len;
    meas = fab_nccltests_choose(tests, op_opt, log, &err);
    g_ptr_array_free(tests, TRUE);
  }
  if (!meas) {
    fprintf(stderr, "fabsim: %s: %s\n", cmd, err->message);
    g_error_free(err);
    return NULL;
  }
  if (meas->op) return meas;
  fprintf(stderr, "fabsim: %s: %s:%u: cannot tell which test this is: no all_reduce_perf (all_gather_perf, ...) "
          "command line and no '# Collective test starting:' line; say it with --op\n", cmd, log, meas->line);
  fab_nccltests_table_free(meas);
  return NULL;
}

gboolean fab_compare_log_sets(const char *cmd, const FabNcclTestsTable *meas, const char *scen, const char *log,
                              gboolean json, GPtrArray *sets) {
  GString *sizes = g_string_new("[");
  guint nsizes = 0;
  for (guint i = 0; i < meas->rows->len; i++) {
    uint64_t b = g_array_index(meas->rows, FabNcclTestsRow, i).bytes;
    gboolean dup = FALSE;
    for (guint k = 0; k < i; k++) dup |= g_array_index(meas->rows, FabNcclTestsRow, k).bytes == b;
    if (!b || dup) continue; /* nccl-tests prints 0 B rows when a size is below one element per rank */
    g_string_append_printf(sizes, "%s%" G_GUINT64_FORMAT, nsizes++ ? "," : "", b);
  }
  g_string_append_c(sizes, ']');
  if (!nsizes) {
    fprintf(stderr, "fabsim: %s: %s: every row has size 0: nothing to simulate\n", cmd, log);
    g_string_free(sizes, TRUE);
    return FALSE;
  }
  char *root = meas->root >= 0 && (!strcmp(meas->op, "broadcast") || !strcmp(meas->op, "reduce"))
                   ? g_strdup_printf(", root: %d", meas->root) : g_strdup("");
  g_ptr_array_remove_index(sets, sets->len - 1); /* the NULL at the end */
  char *rest = NULL, *kind = scenario_workload(scen, sets, &rest);
  if (kind && (strcmp(kind, "nccl-tests") || rest)) { /* replace the workload whole */
    if (strcmp(kind, "nccl-tests") && !json)
      fprintf(stderr, "fabsim: %s: %s's workload is '%s': compared with an nccl-tests sweep of %s instead\n", cmd,
              scen, kind, meas->op);
    g_ptr_array_add(sets, g_strdup_printf("workload={%skind: nccl-tests, op: %s, dtype: %s, sizes: %s%s}",
                                          rest ? rest : "", meas->op, wl_dtype(meas->type), sizes->str, root));
  } else {
    g_ptr_array_add(sets, g_strdup("workload.kind=nccl-tests"));
    g_ptr_array_add(sets, g_strdup_printf("workload.op=%s", meas->op));
    g_ptr_array_add(sets, g_strdup_printf("workload.dtype=%s", wl_dtype(meas->type)));
    g_ptr_array_add(sets, g_strdup_printf("workload.sizes=%s", sizes->str));
    if (*root) g_ptr_array_add(sets, g_strdup_printf("workload.root=%d", meas->root));
  }
  g_ptr_array_add(sets, NULL);
  g_free(rest);
  g_free(kind);
  g_free(root);
  g_string_free(sizes, TRUE);
  return TRUE;
}

/* The comparison on stdout, as text or JSON. */
static void print_cmp(const FabNcclTestsTable *meas, const FabNcclTestsTable *sim, const FabNcclTestsCmp *cmp,
                      const char *log, guint ntests, const char *scen, const FabScenario *sc, gboolean json) {
  if (json) {
    char *js = to_json(meas, sim, cmp, log, ntests, sc);
    fputs(js, stdout);
    g_free(js);
    return;
  }
  printf("fabsim compare: %s (%s, %s) of %s against %s\n", meas->binary, meas->type,
         meas->rows->len ? g_array_index(meas->rows, FabNcclTestsRow, 0).redop : "?", log, scen);
  if (meas->ranks) printf("  measured   %u ranks", meas->ranks);
  else printf("  measured   ranks not given");
  printf(" (out-of-place)");
  if (ntests > 1) printf(", the table from line %u (one of %u tests in the log)", meas->line, ntests);
  printf("\n  simulated  %u ranks: %s, %s\n", sim->ranks, sc->name, sc->topology);
  char *tab = fab_nccltests_cmp_format(cmp);
  fputs(tab, stdout);
  g_free(tab);
}

/* --out DIR: the CSV and, with gnuplot, the plot. The exit status so far, updated. */
static int write_out(const char *out, const FabNcclTestsCmp *cmp, const FabNcclTestsTable *meas,
                     const FabNcclTestsTable *sim, gboolean json, int rc) {
  GString *why = g_string_new(NULL);
  char *gp_bin = g_find_program_in_path("gnuplot");
  if (g_mkdir_with_parents(out, 0755) != 0) {
    g_string_printf(why, "cannot create %s: %s", out, g_strerror(errno));
  } else if (write_csv(cmp, out, why)) {
    if (!json) printf("  wrote      %s/compare.csv\n", out);
    if (!gp_bin)
      fprintf(stderr, "fabsim: compare: gnuplot is not on the PATH: no %s/compare.png (Debian: apt-get install "
              "gnuplot-nox)\n", out);
    else if (write_plot(gp_bin, cmp, meas, sim, out, why) && !json)
      printf("  plotted    %s/compare.png, %s/compare.svg\n", out, out);
  }
  if (why->len) {
    fprintf(stderr, "fabsim: compare: %s\n", why->str);
    if (rc == 0) rc = g_str_has_prefix(why->str, "cannot") ? 2 : 1;
  }
  g_free(gp_bin);
  g_string_free(why, TRUE);
  return rc;
}

/* Simulate the log's sweep on the scenario and compare; the exit status. */
static int simulate(const FabArgs *a, const FabNcclTestsTable *meas, guint ntests, FabScenario *sc) {
  const char *scen = fab_args_pos(a, 0), *log = fab_args_pos(a, 1);
  gboolean json = a->flag[CMP_JSON];
  FabRunOpts opts = {.progress = !a->flag[CMP_NO_PROGRESS] && !json && isatty(STDERR_FILENO)};
  FabResults res;
  int rc = fab_run(sc, &opts, &res);
  if (res.failure) fprintf(stderr, "fabsim: compare: the simulation failed: %s\n", res.failure);
  GPtrArray *tables = fab_nccltests_from_results(&res, meas->type);
  const FabNcclTestsTable *sim = NULL;
  for (guint i = 0; i < tables->len && !sim; i++)
    if (!g_strcmp0(((FabNcclTestsTable *)tables->pdata[i])->op, meas->op)) sim = tables->pdata[i];
  if (!sim) {
    fprintf(stderr, "fabsim: compare: the simulation of %s produced no %s collectives tagged nccl-tests\n", scen,
            meas->op);
    rc = 1;
  } else {
    if (meas->ranks && sim->ranks != meas->ranks)
      fprintf(stderr, "fabsim: compare: warning: %s ran on %u ranks, %s simulates %u: the times are not like for "
              "like (set cluster.nodes / workload.ranks to match)\n", log, meas->ranks, scen, sim->ranks);
    FabNcclTestsCmp *cmp = fab_nccltests_compare(meas, sim);
    print_cmp(meas, sim, cmp, log, ntests, scen, sc, json);
    if (a->value[CMP_OUT]) rc = write_out(a->value[CMP_OUT], cmp, meas, sim, json, rc);
    fab_nccltests_cmp_free(cmp);
  }
  g_ptr_array_free(tables, TRUE);
  fab_results_clear(&res);
  return rc;
}

int fab_cmd_compare(int argc, char **argv) {
  FabArgs a;
  int rc = fab_args_parse(&fab_compare_cmd, argc, argv, &a);
  if (rc >= 0) goto out;
  const char *op = a.value[CMP_OP];
  if (op && !fab_nccltests_binary(op)) {
    rc = fab_args_error(&fab_compare_cmd, "--op %s: expected allreduce, allgather, reduce-scatter, broadcast, reduce, "
                        "all-to-all or send-recv", op);
    goto out;
  }
  rc = EXIT_USAGE;
  GError *oerr = NULL; /* --out checked before anything runs or prints */
  if (a.value[CMP_OUT] && !fab_out_check_dir(a.value[CMP_OUT], "the comparison", &oerr)) {
    fprintf(stderr, "fabsim: compare: --out: %s\n", oerr->message);
    g_error_free(oerr);
    goto out;
  }
  guint ntests = 0;
  FabNcclTestsTable *meas = fab_compare_measured("compare", fab_args_pos(&a, 1), op, &ntests);
  if (meas && fab_compare_log_sets("compare", meas, fab_args_pos(&a, 0), fab_args_pos(&a, 1), a.flag[CMP_JSON],
                                   a.sets)) {
    GError *err = NULL;
    FabScenario *sc = fab_scenario_load(fab_args_pos(&a, 0), fab_args_sets(&a), &err);
    if (!sc) {
      fprintf(stderr, "fabsim: compare: %s\n", err->message);
      g_error_free(err);
    } else {
      rc = simulate(&a, meas, ntests, sc);
      fab_scenario_free(sc);
    }
  }
  fab_nccltests_table_free(meas);
out:
  fab_args_clear(&a);
  return rc;
}

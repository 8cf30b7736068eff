/* fabsim calibrate SCENARIO LOG...: the fidelity model's GPU and NCCL
** parameters fitted to measured nccl-tests logs, written as a scenario
** fragment.
**
** Each log is simulated on the scenario as `fabsim compare` does (the op,
** sizes, type and root from the log; tools/compare.c), and its sizes are
** matched with the simulated ones. A measured size informs one parameter:
** a latency-bound one (nccl-tests' time is mostly fixed costs: the rule of
** tools/libfabsim/nccltests.h) NCCL's kernel launch; a bandwidth-bound one
** that the simulation ran with the Simple protocol the rate its data moved
** at: NVLS's efficiency when it ran NVLS inside one NVLink domain, NVLink's
** data rate when it ran another algorithm inside one domain, the NICs' rate
** when it crossed the network. LL and LL128 sizes move at the SMs'
** per-channel ceilings (cluster.nccl.ll_bandwidth, channel_ll128), and
** where the tuner's choice of protocol and channels hinges on a rate their
** time jumps with it: they inform nothing here.
** The fit goes round by round: the launch moves by the median of (measured
** - simulated) time over its sizes (time goes as launch + the rest there),
** then each rate goes to the value that minimises the sum of squares of
** ln(simulated / measured time) over its sizes (a golden-section search on
** its logarithm: time goes only roughly as 1 / rate, the tuner's channels
** and protocols move with it); until a round moves no value by more than
** 0.1 % (a launch by more than 1 ns). Values are kept at the
** fragment's precision (1 ns, 1 MB/s, 1e-4) so that the fragment is what was
** simulated. See README, "Calibration".
*/
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cmds.h"
#include "tools/libfabsim/driver.h"
#include "tools/libfabsim/h5out.h"
#include "tools/libfabsim/fields.h"
#include "tools/libfabsim/nccltests.h"
#include "tools/libfabsim/scenario.h"

enum { CAL_OUT, CAL_FIT, CAL_OP, CAL_JSON };

static const FabOpt cal_opts[] = {
  {"--set", 0, FAB_OPT_SET, 0, "KEY=VALUE", "KEY=VALUE", 0, 0, "override a scenario key, e.g. --set cluster.nodes=2"},
  {"--fit", 0, FAB_OPT_VALUE, CAL_FIT, "PARAMS", "a list of parameters", 0, 0,
   "fit only these (comma-separated): launch, nvlink, nvls, nic (default: each the logs inform)"},
  {"--out", 0, FAB_OPT_VALUE, CAL_OUT, "FRAGMENT", "a file name", 0, 0,
   "write the fitted values to FRAGMENT, a YAML scenario fragment to include"},
  {"--op", 0, FAB_OPT_VALUE, CAL_OP, "OP", "an op", 0, 0, "which test of a log that holds several (allreduce, ...)"},
  {"--json", 0, FAB_OPT_FLAG, CAL_JSON, NULL, NULL, 0, 0, "print the fit as one JSON object on stdout"},
  {NULL},
};

const FabCmd fab_calibrate_cmd = {
  "calibrate", "fit the GPU/NCCL model to measured nccl-tests logs", "SCENARIO LOG...", 2, 64,
  "needs a SCENARIO and at least one LOG (nccl-tests output)", "a SCENARIO and at most 63 LOGs",
  "Fit the simulator's GPU and NCCL parameters to nccl-tests runs measured on the\n"
  "cluster SCENARIO describes: NCCL's kernel launch (cluster.nccl.launch) from the\n"
  "latency-bound sizes, and from the bandwidth-bound ones NVLink's data rate\n"
  "(cluster.nvlink.bandwidth), NVLS's efficiency (cluster.nvlink.nvls_efficiency)\n"
  "or the NICs' rate (cluster.nic.bandwidth), by what the simulation ran at each size.\n"
  "Each LOG is simulated as `fabsim compare` does, round after round, until the\n"
  "values settle. Prints the fitted values and each size's time error before and\n"
  "after; --out writes them as a fragment: a file with\n"
  "`include: [SCENARIO, FRAGMENT]` runs the calibrated cluster (the last include\n"
  "wins; a scenario that includes the fragment itself wins over it).",
  cal_opts,
  "A parameter needs at least two sizes that inform it; one asked for with --fit that\n"
  "has fewer, a log from another number of ranks than the scenario's, two logs that\n"
  "disagree on a size by more than 20 %, or values the model cannot reach (an NVLS\n"
  "efficiency above 1) are refused, and nothing is written.\n"
  "A LOG may be a fabsim JSON summary (fabsim-replay --json). A single PROBE.json of\n"
  "fabsim-replay --probe fits the network's latency (fabric.link.latency) and the NICs'\n"
  "rate (cluster.nic.bandwidth) to its round trips and windows instead.\n"
  "exit status: 0 fitted, 1 a simulation failed, 2 bad input, usage or data that cannot be fitted\n",
};

typedef enum { P_LAUNCH, P_NVLINK, P_NVLS, P_NIC, P_N } ParamId;

/* A parameter: its key, and the unit it is fitted in (us, GB/s, a fraction). */
typedef struct Param {
  const char *name, *key, *what, *unit;
  bool additive;    /* moved by the residual (a time), else scaled by the time ratio (a rate, an efficiency) */
  double lo, hi;    /* what the key takes, in the unit */
  double quantum;   /* the fragment's precision, in the unit */
} Param;

static const Param params[P_N] = {
  [P_LAUNCH] = {"launch", "cluster.nccl.launch", "NCCL's kernel launch", "us", true, 0, 1e6, 1e-3},
  [P_NVLINK] = {"nvlink", "cluster.nvlink.bandwidth", "NVLink's data rate per GPU", "GB/s", false, 1e-3, 1e6, 1e-3},
  [P_NVLS] = {"nvls", "cluster.nvlink.nvls_efficiency", "NVLS's efficiency", "", false, 0.01, 1, 1e-4},
  [P_NIC] = {"nic", "cluster.nic.bandwidth", "the NICs' rate", "GB/s", false, 1e-3, 1e6, 1e-3},
};

/* One measured log, and its latest comparison. */
typedef struct Log {
  const char *path;
  FabNcclTestsTable *meas;
  FabNcclTestsCmp *first, *cmp; /* with the starting values, and the latest */
  uint32_t domain;              /* ranks the simulation held in one NVLink domain (all: one domain), 0 none */
  uint32_t ranks;               /* ranks simulated */
} Log;

typedef struct Cal {
  const char *scen;
  GPtrArray *user;              /* the user's --set (char *, no NULL) */
  Log *logs;
  uint32_t nlogs;
  double v[P_N], v0[P_N];       /* values now, and as the scenario had them */
  bool fit[P_N], asked[P_N];    /* fitted; named by --fit */
  bool flat[P_N];               /* dropped: its sizes' times barely move with it */
  uint32_t rows[P_N];           /* sizes informing each, in the first round */
  uint32_t sims;                /* simulations of the logs run */
  bool started;                 /* v0 known (from the first simulation) */
  double chan_net;              /* cluster.nccl.channel_net, GB/s, where it is below a channel's Simple rate; else 0 */
} Cal;

/* Why the NICs' rate may not show in the times: a channel's rate across
** the network binds first. "" elsewhere. */
static const char *nic_hidden(const Cal *c, int p, char *buf, size_t len) {
  if (p != P_NIC || c->chan_net <= 0) return "";
  g_snprintf(buf, len, "; a channel's pieces across the network move at most cluster.nccl.channel_net, %.6g GB/s, "
             "which may bind before the NICs", c->chan_net);
  return buf;
}

static double quantize(ParamId p, double x) {
  double q = params[p].quantum;
  return MIN(MAX(round(x / q) * q, params[p].lo), params[p].hi);
}

/* "key=value" for p at x, exact (ps, B/s, four decimals). */
static char *param_set(ParamId p, double x) {
  if (p == P_LAUNCH) return g_strdup_printf("%s=%.0fps", params[p].key, x * 1e6);
  if (p == P_NVLS) return g_strdup_printf("%s=%.4f", params[p].key, x);
  return g_strdup_printf("%s=%.0fB/s", params[p].key, x * 1e9);
}

/* The parameter a matched row informs (P_N: none). */
static ParamId row_param(const Log *l, const FabNcclTestsCmpRow *r) {
  if (!isfinite(r->time_ratio) || r->bound == FAB_NCCLTESTS_UNBOUND) return P_N;
  if (r->bound == FAB_NCCLTESTS_LATENCY_BOUND) return P_LAUNCH;
  if (!r->protocol || strcmp(r->protocol, "simple")) return P_N; /* LL, LL128: the SMs' per-channel ceilings */
  bool one = l->domain && l->ranks <= l->domain;
  if (one) return r->algorithm && !strcmp(r->algorithm, "nvls") ? P_NVLS : P_NVLINK;
  return P_NIC;
}

/* Simulate log l with the values in c; FALSE after printing why (exit status in *rc). */
static gboolean simulate(Cal *c, Log *l, int *rc) {
  GPtrArray *sets = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < c->user->len; i++) g_ptr_array_add(sets, g_strdup(c->user->pdata[i]));
  for (int p = 0; p < P_N; p++)
    if (c->fit[p]) g_ptr_array_add(sets, param_set(p, c->v[p]));
  g_ptr_array_add(sets, NULL);
  *rc = EXIT_USAGE;
  gboolean ok = FALSE;
  if (!fab_compare_log_sets("calibrate", l->meas, c->scen, l->path, TRUE, sets)) goto out;
  GError *err = NULL;
  FabScenario *sc = fab_scenario_load(c->scen, (const char *const *)sets->pdata, &err);
  if (!sc) {
    fprintf(stderr, "fabsim: calibrate: %s\n", err->message);
    g_error_free(err);
    goto out;
  }
  l->domain = sc->fabric.gpu.gpus_per_node ? sc->fabric.gpu.nvlink_domain : 0;
  if (!c->started) { /* the first simulation sets no parameter: the scenario's own values */
    c->v0[P_LAUNCH] = (double)sc->nccl.launch / 1e6;
    c->v0[P_NVLINK] = (double)sc->fabric.gpu.nvlink_bps / 8e9;
    c->v0[P_NVLS] = sc->fabric.gpu.nvls_eff;
    c->v0[P_NIC] = (double)sc->fabric.topo.host_bps / 8e9;
    if (sc->nccl.channel_net_bps < sc->nccl.channel_bps[2]) c->chan_net = (double)sc->nccl.channel_net_bps / 8e9;
    for (int p = 0; p < P_N; p++) c->v[p] = c->v0[p];
    c->started = true;
  }
  FabRunOpts opts = {0};
  FabResults res;
  *rc = fab_run(sc, &opts, &res);
  GPtrArray *tables = fab_nccltests_from_results(&res, l->meas->type);
  const FabNcclTestsTable *sim = NULL;
  for (guint i = 0; i < tables->len && !sim; i++)
    if (!g_strcmp0(((FabNcclTestsTable *)tables->pdata[i])->op, l->meas->op)) sim = tables->pdata[i];
  if (res.failure || !sim) {
    fprintf(stderr, "fabsim: calibrate: simulating %s failed: %s\n", l->path,
            res.failure ? res.failure : "no nccl-tests collectives of its op");
    *rc = 1;
  } else if (l->meas->ranks && sim->ranks != l->meas->ranks) {
    fprintf(stderr, "fabsim: calibrate: %s ran on %u ranks, %s simulates %u: a fit would be of another cluster "
            "(set cluster.nodes or workload.ranks to match)\n", l->path, l->meas->ranks, c->scen, sim->ranks);
    *rc = EXIT_USAGE;
  } else {
    if (l->cmp != l->first) fab_nccltests_cmp_free(l->cmp);
    l->cmp = fab_nccltests_compare(l->meas, sim);
    l->ranks = sim->ranks;
    if (!l->first) l->first = l->cmp;
    ok = TRUE, *rc = 0;
  }
  g_ptr_array_free(tables, TRUE);
  fab_results_clear(&res);
  fab_scenario_free(sc);
out:
  g_ptr_array_free(sets, TRUE);
  return ok;
}

/* --fit: which parameters were asked for. FALSE after a usage error. */
static gboolean parse_fit(Cal *c, const char *list) {
  if (!list) return TRUE;
  char **names = g_strsplit(list, ",", -1);
  gboolean ok = names[0] != NULL;
  for (char **n = names; ok && *n; n++) {
    char *s = g_strstrip(*n);
    int p = 0;
    while (p < P_N && strcmp(s, params[p].name)) p++;
    if (p == P_N) {
      ok = FALSE;
      fab_args_error(&fab_calibrate_cmd, "--fit %s: expected launch, nvlink, nvls or nic, comma-separated", s);
    } else {
      c->asked[p] = true;
    }
  }
  g_strfreev(names);
  return ok;
}

/* Two logs of one op that disagree on a size by more than 20 %: contradictory. */
static gboolean consistent(const Cal *c) {
  for (uint32_t a = 0; a < c->nlogs; a++)
    for (uint32_t b = a + 1; b < c->nlogs; b++) {
      const FabNcclTestsTable *ta = c->logs[a].meas, *tb = c->logs[b].meas;
      if (strcmp(ta->op, tb->op) || ta->ranks != tb->ranks) continue;
      for (guint i = 0; i < ta->rows->len; i++)
        for (guint j = 0; j < tb->rows->len; j++) {
          const FabNcclTestsRow *ra = &g_array_index(ta->rows, FabNcclTestsRow, i);
          const FabNcclTestsRow *rb = &g_array_index(tb->rows, FabNcclTestsRow, j);
          double x = ra->time_us[0], y = rb->time_us[0];
          if (ra->bytes != rb->bytes || !isfinite(x) || !isfinite(y) || fabs(x - y) <= 0.2 * MIN(x, y)) continue;
          fprintf(stderr, "fabsim: calibrate: %s:%u and %s:%u disagree on %s of %" G_GUINT64_FORMAT " B: %.2f us "
                  "against %.2f us (more than 20 %%): contradictory data, nothing fitted\n", c->logs[a].path,
                  ra->line, c->logs[b].path, rb->line, ta->op, ra->bytes, x, y);
          return FALSE;
        }
    }
  return TRUE;
}

/* The sizes informing each parameter at the values kept (c->rows: with the starting ones). */
static void count_now(const Cal *c, uint32_t *now) {
  memset(now, 0, P_N * sizeof *now);
  for (uint32_t k = 0; k < c->nlogs; k++)
    for (guint i = 0; i < c->logs[k].cmp->rows->len; i++) {
      ParamId p = row_param(&c->logs[k], &g_array_index(c->logs[k].cmp->rows, FabNcclTestsCmpRow, i));
      if (p < P_N) now[p]++;
    }
}

/* Whether --fit named any parameter. */
static bool any_asked(const Cal *c) {
  for (int p = 0; p < P_N; p++)
    if (c->asked[p]) return true;
  return false;
}

/* From the first round: which parameters to fit (those asked for, else
** each informed by two sizes or more). FALSE after printing why. */
static gboolean choose(Cal *c) {
  count_now(c, c->rows);
  bool asked = any_asked(c), any = false;
  for (int p = 0; p < P_N; p++) {
    if (asked && c->asked[p] && c->rows[p] < 2) {
      fprintf(stderr, "fabsim: calibrate: --fit %s: %s needs at least 2 sizes that inform it, the logs have %u (%s)"
              "\n", params[p].name, params[p].what, c->rows[p],
              p == P_LAUNCH ? "latency-bound sizes" : p == P_NVLS ? "bandwidth-bound sizes run with NVLS"
              : p == P_NVLINK ? "bandwidth-bound sizes inside one NVLink domain, not NVLS"
              : "bandwidth-bound sizes across the network");
      return FALSE;
    }
    c->fit[p] = (asked ? c->asked[p] : true) && c->rows[p] >= 2;
    any |= c->fit[p];
  }
  if (!any)
    fprintf(stderr, "fabsim: calibrate: too few points: no parameter has two sizes that inform it (the logs have "
            "%u latency-bound sizes, %u bandwidth-bound ones)\n", c->rows[P_LAUNCH],
            c->rows[P_NVLINK] + c->rows[P_NVLS] + c->rows[P_NIC]);
  return any;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Simulate every log with the values in c. FALSE after printing why. */
static gboolean simulate_all(Cal *c, int *rc) {
  c->sims++;
  for (uint32_t k = 0; k < c->nlogs; k++)
    if (!simulate(c, &c->logs[k], rc)) return FALSE;
  return TRUE;
}

/* Over the sizes that inform p now: the median of measured - simulated
** time (us), and the sum of ln^2(simulated / measured time). */
static void residuals(const Cal *c, ParamId p, double *median, double *sq) {
  GArray *d = g_array_new(FALSE, FALSE, sizeof(double));
  *sq = 0;
  for (uint32_t k = 0; k < c->nlogs; k++)
    for (guint i = 0; i < c->logs[k].cmp->rows->len; i++) {
      const FabNcclTestsCmpRow *r = &g_array_index(c->logs[k].cmp->rows, FabNcclTestsCmpRow, i);
      if (row_param(&c->logs[k], r) != p) continue;
      double x = r->meas_time_us - r->sim_time_us;
      g_array_append_val(d, x);
      *sq += log(r->time_ratio) * log(r->time_ratio);
    }
  g_array_sort(d, cmp_double);
  guint n = d->len;
  const double *a = (const double *)d->data;
  *median = !n ? 0 : n % 2 ? a[n / 2] : (a[n / 2 - 1] + a[n / 2]) / 2;
  g_array_free(d, TRUE);
}

/* The launch: moved by the median residual of its sizes until it moves by
** 1 ns or less (time goes as launch + the rest there). Its total move, us,
** in *moved. */
static gboolean fit_launch(Cal *c, double *moved, int *rc) {
  *moved = 0;
  for (int i = 0; i < 8; i++) {
    double med, sq;
    residuals(c, P_LAUNCH, &med, &sq);
    double nv = quantize(P_LAUNCH, c->v[P_LAUNCH] + med);
    if (fabs(nv - c->v[P_LAUNCH]) < 1.5e-3) break;
    *moved += fabs(nv - c->v[P_LAUNCH]);
    c->v[P_LAUNCH] = nv;
    if (!simulate_all(c, rc)) return FALSE;
  }
  return TRUE;
}

/* Sum of squares of p's log time ratios with p at e^x (simulated). */
static gboolean eval_at(Cal *c, ParamId p, double x, double *sq, int *rc) {
  c->v[p] = quantize(p, exp(x));
  if (!simulate_all(c, rc)) return FALSE;
  double med;
  residuals(c, p, &med, sq);
  return TRUE;
}

/* A rate or an efficiency: the value that minimises the sum of squares of
** ln(simulated / measured time) over its sizes, on its logarithm in
** [v / e^w, v e^w]: first a scan of FIT_GRID points evenly across it, then a
** golden-section search down to 0.1 % between the best point's neighbours,
** the bracket moved when the best is at its edge. The residual can have
** several dips (the tuner's channels and protocols move with the rate, and
** NCCL's flow control with them): the scan finds the deepest one before the
** search narrows. Its relative move in *moved. */
#define FIT_GRID 9
static gboolean fit_rate(Cal *c, ParamId p, double w, double *moved, int *rc) {
  const double g = (sqrt(5.0) - 1) / 2, tol = 1e-3, xlo = log(params[p].lo), xhi = log(params[p].hi);
  double v0 = c->v[p], best_x = log(v0), best, med, fmin, fmax;
  residuals(c, p, &med, &best);
  fmin = fmax = best;
#define EVAL(x, f)                                              \
  do {                                                          \
    if (!eval_at(c, p, (x), &(f), rc)) return FALSE;            \
    fmin = MIN(fmin, (f)), fmax = MAX(fmax, (f));               \
  } while (0)
  for (int shift = 0; shift < 4; shift++) {
    double l0 = MAX(best_x - w, xlo), h0 = MIN(best_x + w, xhi), step = (h0 - l0) / (FIT_GRID - 1), gx = best_x;
    double gf = best;
    int k = -1;
    for (int i = 0; i < FIT_GRID; i++) {
      double x = l0 + i * step, f;
      if (fabs(x - best_x) < tol / 2) continue; /* the value we came with: its residual is `best` */
      EVAL(x, f);
      if (f < gf) gf = f, gx = x, k = i;
    }
    if (k < 0) k = (int)lround((best_x - l0) / step); /* the value we came with is the best seen */
    double lo = MAX(gx - step, l0), hi = MIN(gx + step, h0);
    double a = hi - g * (hi - lo), b = lo + g * (hi - lo), fa, fb;
    EVAL(a, fa);
    EVAL(b, fb);
    while (hi - lo > tol) {
      if (fa <= fb) {
        hi = b, b = a, fb = fa, a = hi - g * (hi - lo);
        EVAL(a, fa);
      } else {
        lo = a, a = b, fa = fb, b = lo + g * (hi - lo);
        EVAL(b, fb);
      }
    }
    double x = fa <= fb ? a : b, f = MIN(fa, fb);
    if (gf < f) x = gx, f = gf;
    bool edge = (k == 0 && l0 > xlo + tol) || (k == FIT_GRID - 1 && h0 < xhi - tol);
    if (f < best) best = f, best_x = x;
    if (!edge) break; /* else look again around it */
  }
#undef EVAL
  /* the sizes barely move with it (RMS of ln ratio moved by < 0.5 % across the bracket): not fitted */
  double n = MAX(c->rows[p], 1u);
  if (sqrt(fmax / n) - sqrt(fmin / n) < 5e-3) {
    c->fit[p] = false, c->flat[p] = true;
    c->v[p] = v0;
    *moved = 0;
    return simulate_all(c, rc);
  }
  c->v[p] = quantize(p, exp(best_x));
  *moved = fabs(c->v[p] / v0 - 1);
  return simulate_all(c, rc); /* the comparisons of the value kept */
}

/* A value as the report and the fragment print it. */
static void put_value(GString *s, ParamId p, double x) {
  if (p == P_NVLS) g_string_append_printf(s, "%.4f", x);
  else g_string_append_printf(s, "%.3f%s", x, params[p].unit);
}

/* The fragment's text: the fitted values under their keys. */
static char *fragment(const Cal *c) {
  GString *s = g_string_new("# fabsim calibrate " FABSIM_VERSION ": fitted to");
  for (uint32_t k = 0; k < c->nlogs; k++) g_string_append_printf(s, " %s", c->logs[k].path);
  g_string_append_printf(s, " on %s.\n# Run it after the scenario: a file with `include: [SCENARIO, THIS]` (the last "
                         "include wins).\ncluster:\n", c->scen);
  if (c->fit[P_LAUNCH]) {
    g_string_append(s, "  nccl: {launch: ");
    put_value(s, P_LAUNCH, c->v[P_LAUNCH]);
    g_string_append(s, "}\n");
  }
  if (c->fit[P_NIC]) {
    g_string_append(s, "  nic: {bandwidth: ");
    put_value(s, P_NIC, c->v[P_NIC]);
    g_string_append(s, "}\n");
  }
  if (c->fit[P_NVLINK] || c->fit[P_NVLS]) {
    g_string_append(s, "  nvlink: {");
    if (c->fit[P_NVLINK]) {
      g_string_append(s, "bandwidth: ");
      put_value(s, P_NVLINK, c->v[P_NVLINK]);
    }
    if (c->fit[P_NVLS]) {
      g_string_append(s, c->fit[P_NVLINK] ? ", nvls_efficiency: " : "nvls_efficiency: ");
      put_value(s, P_NVLS, c->v[P_NVLS]);
    }
    g_string_append(s, "}\n");
  }
  return g_string_free(s, FALSE);
}

/* The fitted values, as the scenario took them with the fragment included (fab_calibrate_write's check). */
static gboolean took(const FabScenario *sc, const void *ctx) {
  const Cal *c = ctx;
  double got[P_N] = {(double)sc->nccl.launch / 1e6, (double)sc->fabric.gpu.nvlink_bps / 8e9, sc->fabric.gpu.nvls_eff,
                     (double)sc->fabric.topo.host_bps / 8e9};
  for (int p = 0; p < P_N; p++)
    if (c->fit[p] && fabs(got[p] - c->v[p]) > 1e-9 * MAX(1.0, c->v[p])) {
      fprintf(stderr, "fabsim: calibrate: internal error: with the fragment %s is %.9g, not %.9g\n", params[p].key,
              got[p], c->v[p]);
      return FALSE;
    }
  return TRUE;
}

gboolean fab_calibrate_write(const char *scen, GPtrArray *user, const char *text, const char *out,
                             gboolean (*check)(const FabScenario *sc, const void *ctx), const void *ctx) {
  char *tmp = g_strdup_printf("%s.tmp", out), *dir = g_path_get_dirname(out);
  gboolean ok = g_mkdir_with_parents(dir, 0777) == 0 && g_file_set_contents(tmp, text, -1, NULL); /* as --hdf5 */
  g_free(dir);
  if (!ok) fprintf(stderr, "fabsim: calibrate: cannot write %s: %s\n", out, g_strerror(errno));
  char *as = ok ? g_canonicalize_filename(scen, NULL) : NULL, *af = ok ? g_canonicalize_filename(tmp, NULL) : NULL;
  char *inc = ok ? g_strdup_printf("include: [\"%s\", \"%s\"]\n", as, af) : NULL;
  GError *err = NULL;
  g_ptr_array_add(user, NULL);
  FabScenario *sc = ok ? fab_scenario_load_string(inc, "calibrated.yaml", NULL, (const char *const *)user->pdata,
                                                  &err) : NULL;
  g_ptr_array_remove_index(user, user->len - 1);
  if (ok && !sc) {
    fprintf(stderr, "fabsim: calibrate: internal error: the fragment does not load: %s\n", err->message);
    g_error_free(err);
    ok = FALSE;
  }
  if (sc) {
    ok = check(sc, ctx);
    fab_scenario_free(sc);
  }
  if (ok && g_rename(tmp, out) != 0) {
    fprintf(stderr, "fabsim: calibrate: cannot write %s: %s\n", out, g_strerror(errno));
    ok = FALSE;
  }
  if (!ok) g_unlink(tmp);
  g_free(tmp), g_free(as), g_free(af), g_free(inc);
  return ok;
}

static void fmt_bytes(char *buf, size_t n, uint64_t b) {
  if (b >= 1u << 30 && b % (1u << 30) == 0) g_snprintf(buf, n, "%" G_GUINT64_FORMAT " GiB", b >> 30);
  else if (b >= 1u << 20 && b % (1u << 20) == 0) g_snprintf(buf, n, "%" G_GUINT64_FORMAT " MiB", b >> 20);
  else if (b >= 1024 && b % 1024 == 0) g_snprintf(buf, n, "%" G_GUINT64_FORMAT " KiB", b >> 10);
  else g_snprintf(buf, n, "%" G_GUINT64_FORMAT " B", b);
}

/* The report: what was fitted, then each size's time error before and after. */
static void report(const Cal *c, uint32_t rounds, bool settled) {
  uint32_t now[P_N];
  count_now(c, now);
  printf("fabsim calibrate: %u log%s against %s\n", c->nlogs, c->nlogs == 1 ? "" : "s", c->scen);
  static const char *const from[P_N] = {"latency-bound sizes", "bandwidth-bound sizes in one NVLink domain",
                                        "bandwidth-bound sizes run with NVLS", "bandwidth-bound sizes across nodes"};
  for (int p = 0; p < P_N; p++) {
    GString *s = g_string_new(NULL);
    if (c->fit[p]) {
      put_value(s, p, c->v0[p]);
      g_string_append(s, " -> ");
      put_value(s, p, c->v[p]);
      printf("  fitted     %-7s %s (%s): %s, from %u %s\n", params[p].name, params[p].key, params[p].what, s->str,
             now[p], from[p]);
    } else if (c->flat[p]) {
      char why[200];
      printf("  not fitted %-7s %s: its %u %s barely move with it (the time is spent elsewhere%s)\n", params[p].name,
             params[p].key, c->rows[p], from[p], nic_hidden(c, p, why, sizeof why));
    } else if (c->rows[p] || c->asked[p]) {
      printf("  not fitted %-7s %s: %u %s (%s)\n", params[p].name, params[p].key, c->rows[p], from[p],
             any_asked(c) && !c->asked[p] ? "not in --fit" : "2 needed");
    }
    g_string_free(s, TRUE);
  }
  printf("  rounds     %u, %u simulations of the log%s (%s)\n", rounds, c->sims, c->nlogs == 1 ? "" : "s",
         settled ? "settled: the last moved no value by more than 0.1 %, a launch by more than 1 ns" : "not settled");
  printf("  %-24s %10s %12s %12s %8s %12s %8s  %s\n", "log", "size", "measured us", "before us", "error", "after us",
         "error", "fits");
  double sb = 0, sa = 0;
  uint32_t n = 0;
  for (uint32_t k = 0; k < c->nlogs; k++) {
    const Log *l = &c->logs[k];
    char *base = g_path_get_basename(l->path);
    for (guint i = 0; i < l->cmp->rows->len; i++) {
      const FabNcclTestsCmpRow *a = &g_array_index(l->first->rows, FabNcclTestsCmpRow, i);
      const FabNcclTestsCmpRow *b = &g_array_index(l->cmp->rows, FabNcclTestsCmpRow, i);
      char sz[32];
      fmt_bytes(sz, sizeof sz, b->bytes);
      ParamId p = row_param(l, b);
      printf("  %-24s %10s %12.2f %12.2f %+7.1f%% %12.2f %+7.1f%%  %s\n", base, sz, b->meas_time_us, a->sim_time_us,
             100 * a->time_err, b->sim_time_us, 100 * b->time_err, p < P_N && c->fit[p] ? params[p].name : "-");
      if (isfinite(a->time_err) && isfinite(b->time_err)) sb += fabs(a->time_err), sa += fabs(b->time_err), n++;
    }
    g_free(base);
  }
  if (n) printf("  mean |time error| over %u sizes: before %.1f %%, after %.1f %%\n", n, 100 * sb / n, 100 * sa / n);
}

/* The same as one JSON object (README, Calibration). */
static void report_json(const Cal *c, uint32_t rounds, bool settled, const char *out) {
  static const char *const from[P_N] = {"latency-bound", "bandwidth-bound, NVLink", "bandwidth-bound, NVLS",
                                        "bandwidth-bound, network"};
  uint32_t now[P_N];
  count_now(c, now);
  GString *s = g_string_new("{\"fabsim_version\": ");
  fab_json_put_str(s, FABSIM_VERSION);
  g_string_append(s, ", \"scenario\": ");
  fab_json_put_str(s, c->scen);
  g_string_append(s, ", \"logs\": [");
  for (uint32_t k = 0; k < c->nlogs; k++) {
    if (k) g_string_append(s, ", ");
    fab_json_put_str(s, c->logs[k].path);
  }
  g_string_append_printf(s, "], \"rounds\": %u, \"simulations\": %u, \"settled\": %s, \"parameters\": [", rounds,
                         c->sims, settled ? "true" : "false");
  for (int p = 0; p < P_N; p++) {
    g_string_append_printf(s, "%s{\"name\": \"%s\", \"key\": \"%s\", \"unit\": \"%s\", \"fitted\": %s, ",
                           p ? ", " : "", params[p].name, params[p].key, params[p].unit, c->fit[p] ? "true" : "false");
    g_string_append(s, "\"before\": ");
    fab_json_put_num(s, c->v0[p]);
    g_string_append(s, ", \"after\": ");
    fab_json_put_num(s, c->v[p]);
    g_string_append_printf(s, ", \"informed_by\": \"%s\", \"sizes\": %u, \"flat\": %s}", from[p],
                           c->fit[p] ? now[p] : c->rows[p], c->flat[p] ? "true" : "false");
  }
  g_string_append(s, "], \"sizes\": [");
  double sb = 0, sa = 0;
  uint32_t n = 0;
  for (uint32_t k = 0; k < c->nlogs; k++)
    for (guint i = 0; i < c->logs[k].cmp->rows->len; i++) {
      const FabNcclTestsCmpRow *a = &g_array_index(c->logs[k].first->rows, FabNcclTestsCmpRow, i);
      const FabNcclTestsCmpRow *b = &g_array_index(c->logs[k].cmp->rows, FabNcclTestsCmpRow, i);
      ParamId p = row_param(&c->logs[k], b);
      g_string_append_printf(s, "%s{\"log\": %u, \"bytes\": %" G_GUINT64_FORMAT ", \"measured_us\": ",
                             n || k || i ? ", " : "", k, b->bytes);
      fab_json_put_num(s, b->meas_time_us);
      double v[4] = {a->sim_time_us, 100 * a->time_err, b->sim_time_us, 100 * b->time_err};
      static const char *const keys[4] = {"before_us", "before_error_pct", "after_us", "after_error_pct"};
      for (int j = 0; j < 4; j++) {
        g_string_append_printf(s, ", \"%s\": ", keys[j]);
        fab_json_put_num(s, v[j]);
      }
      g_string_append(s, ", \"fits\": ");
      if (p < P_N && c->fit[p]) fab_json_put_str(s, params[p].name);
      else g_string_append(s, "null");
      g_string_append_c(s, '}');
      if (isfinite(a->time_err) && isfinite(b->time_err)) sb += fabs(a->time_err), sa += fabs(b->time_err), n++;
    }
  g_string_append(s, "], \"mean_abs_time_error_pct\": {\"before\": ");
  fab_json_put_num(s, n ? 100 * sb / n : NAN);
  g_string_append(s, ", \"after\": ");
  fab_json_put_num(s, n ? 100 * sa / n : NAN);
  g_string_append(s, "}, \"fragment\": ");
  if (out) fab_json_put_str(s, out);
  else g_string_append(s, "null");
  g_string_append(s, "}\n");
  fputs(s->str, stdout);
  g_string_free(s, TRUE);
}

/* The rounds (the launch, then each rate in turn, until a round moves
** nothing by more than 1 ns or 0.1 %); the exit status. */
static int fit(Cal *c, const char *out, bool json) {
  int rc = 0;
  if (!simulate_all(c, &rc)) return rc;
  if (!choose(c)) return EXIT_USAGE;
  enum { MAX_ROUNDS = 6 };
  uint32_t rounds = 0;
  bool settled = false;
  while (!settled && rounds < MAX_ROUNDS) {
    double moved, most = 0;
    rounds++;
    if (c->fit[P_LAUNCH]) {
      if (!fit_launch(c, &moved, &rc)) return rc;
      most = MAX(most, moved / 1.5e-3);
    }
    for (int p = P_NVLINK; p < P_N; p++) {
      if (!c->fit[p]) continue;
      if (!fit_rate(c, p, rounds == 1 ? log(1.6) : log(1.1), &moved, &rc)) return rc;
      most = MAX(most, moved / 1e-3);
    }
    settled = most <= 1;
  }
  /* a rate to 4 significant figures, the search's 0.1 % (NCCL's topology search rates links in steps: a value a
  ** hair below one, 39.999 for 40 GB/s, would run another graph) */
  bool moved = false;
  for (int p = P_NVLINK; p < P_N; p++)
    if (p != P_NVLS && c->fit[p] && c->v[p] > 0) {
      double q = pow(10, floor(log10(c->v[p])) - 3), nv = quantize(p, round(c->v[p] / q) * q);
      moved |= nv != c->v[p];
      c->v[p] = nv;
    }
  if (moved && !simulate_all(c, &rc)) return rc;
  for (int p = P_NVLINK; p < P_N; p++)
    if (c->fit[p] && (c->v[p] >= params[p].hi * (1 - 2e-3) || c->v[p] <= params[p].lo * (1 + 2e-3))) {
      fprintf(stderr, "fabsim: calibrate: the logs ask for %s (%s) at its bound, %g%s, or beyond: the data contradict "
              "the model here (is the scenario the measured cluster?); nothing written\n", params[p].what,
              params[p].key, c->v[p], params[p].unit);
      return EXIT_USAGE;
    }
  bool any = false;
  for (int p = 0; p < P_N; p++) {
    any |= c->fit[p];
    if (c->asked[p] && c->flat[p]) {
      char why[200];
      fprintf(stderr, "fabsim: calibrate: --fit %s: the sizes that inform %s barely move with it (by less than 0.5 %% "
              "over a factor of 1.6 either way%s): the logs cannot tell its value; nothing written\n", params[p].name,
              params[p].what, nic_hidden(c, p, why, sizeof why));
      return EXIT_USAGE;
    }
  }
  if (!any) {
    fprintf(stderr, "fabsim: calibrate: nothing to fit: the sizes that inform each parameter barely move with it; "
            "nothing written\n");
    return EXIT_USAGE;
  }
  if (!json) report(c, rounds, settled);
  if (!settled)
    fprintf(stderr, "fabsim: calibrate: warning: the values did not settle in %u rounds; the last are reported%s\n",
            MAX_ROUNDS, out ? " and written" : "");
  if (out) {
    char *text = fragment(c);
    gboolean ok = fab_calibrate_write(c->scen, c->user, text, out, took, c);
    g_free(text);
    if (!ok) return EXIT_FAILED;
  }
  if (json) report_json(c, rounds, settled, out);
  else if (out) printf("  wrote      %s (checked: %s loads with it included last)\n", out, c->scen);
  return 0;
}

int fab_cmd_calibrate(int argc, char **argv) {
  FabArgs a;
  int rc = fab_args_parse(&fab_calibrate_cmd, argc, argv, &a);
  if (rc >= 0) goto done;
  Cal c = {.scen = fab_args_pos(&a, 0), .user = g_ptr_array_new_with_free_func(g_free)};
  for (guint i = 0; i + 1 < a.sets->len; i++) g_ptr_array_add(c.user, g_strdup(a.sets->pdata[i]));
  c.nlogs = a.pos->len - 1;
  c.logs = g_new0(Log, c.nlogs);
  rc = EXIT_USAGE;
  GError *oerr = NULL; /* --out checked before anything runs or prints */
  if (a.value[CAL_OUT] && !fab_out_check_target(a.value[CAL_OUT], "the calibrated fragment", &oerr)) {
    fprintf(stderr, "fabsim: calibrate: --out: %s\n", oerr->message);
    g_error_free(oerr);
    goto out;
  }
  if (c.nlogs == 1 && fab_calibrate_is_probe(fab_args_pos(&a, 1))) { /* fabsim-replay --probe's JSON */
    if (a.value[CAL_FIT] || a.value[CAL_OP])
      fab_args_error(&fab_calibrate_cmd, "%s is a probe file: --fit and --op are for nccl-tests logs",
                     fab_args_pos(&a, 1));
    else
      rc = fab_calibrate_probe(c.scen, c.user, fab_args_pos(&a, 1), a.value[CAL_OUT], a.flag[CAL_JSON]);
    goto out;
  }
  if (!parse_fit(&c, a.value[CAL_FIT])) goto out;
  const char *op = a.value[CAL_OP];
  if (op && !fab_nccltests_binary(op)) {
    fab_args_error(&fab_calibrate_cmd, "--op %s: expected allreduce, allgather, reduce-scatter, broadcast, reduce, "
                   "all-to-all or send-recv", op);
    goto out;
  }
  for (uint32_t k = 0; k < c.nlogs; k++) {
    guint ntests = 0;
    c.logs[k].path = fab_args_pos(&a, k + 1);
    if (!(c.logs[k].meas = fab_compare_measured("calibrate", c.logs[k].path, op, &ntests))) goto out;
  }
  if (!consistent(&c)) goto out;
  rc = fit(&c, a.value[CAL_OUT], a.flag[CAL_JSON]);
out:
  for (uint32_t k = 0; k < c.nlogs; k++) {
    if (c.logs[k].cmp != c.logs[k].first) fab_nccltests_cmp_free(c.logs[k].cmp);
    fab_nccltests_cmp_free(c.logs[k].first);
    fab_nccltests_table_free(c.logs[k].meas);
  }
  g_free(c.logs);
  g_ptr_array_free(c.user, TRUE);
done:
  fab_args_clear(&a);
  return rc;
}

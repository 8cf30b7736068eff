/* fabsim calibrate SCENARIO PROBE.json: the path parameters fitted to what
** `fabsim-replay --probe` measured.
**
** Each probe row (a path class, a pair of endpoints, a size) is simulated on
** the scenario as the same DAG the probe ran (tools/replay_probe.c: round
** trips, then a window of transfers and an answer), read the same way
** (latency: half the median round trip; bandwidth: the window's bytes over
** the time to the answer). Per class, the latency-bound rows (measured
** latency under twice the class's smallest) inform the path's latency, the
** bandwidth-bound ones (at least 80 % of the class's best bandwidth) its
** rate: NVLink's `cluster.nvlink.latency` and `.bandwidth`; across the
** network `fabric.link.latency` (every link's: fabsim's flows have no host
** overhead of their own, so the whole one-way time of a small message goes
** into the links) and `cluster.nic.bandwidth`. Each value goes to the one
** that minimises the sum of squares of ln(simulated / measured) over its
** rows (golden-section search; the latency on a linear scale from 0, the rate
** on a log scale), round by round until nothing moves by more than 0.1 %.
** From the measurements alone, per class: the per-message overhead (the
** window's time per message at the smallest size) and the latency by size as
** up to three pieces, latency + size / bandwidth each, split where the
** transport changes protocol (one more piece kept only when it halves the
** squared relative error of fewer, which leave more than 1 % RMS). See
** README, "Calibration", From probes. */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cmds.h"
#include "replay.h"
#include "tools/libfabsim/driver.h"
#include "tools/libfabsim/fields.h"
#include "tools/libfabsim/json.h"
#include "sim/config.h"
#include "tools/libfabsim/scenario.h"

#define ROUNDS 3 /* round trips simulated: the simulation's are alike (its median of 3 is that of the probe's 20) */
enum { K_NET_LAT, K_NET_BW, K_NET_GAP, K_N };
enum { LATENCY, RATE, GAP }; /* what a knob is: what its rows measure, how it is searched */

typedef struct Knob {
  const char *key, *what;
  int cls;        /* FabReplayClass it belongs to */
  int kind;       /* LATENCY (ns, linear search from 0; rows' latency), RATE (GB/s, log search; rows' window
                  ** bandwidth), GAP (ns, linear from 0; rows' window bandwidth) */
} Knob;
static const Knob knobs[K_N] = {
  [K_NET_LAT] = {"fabric.link.latency", "every link's latency", FAB_REPLAY_NET, LATENCY},
  [K_NET_BW] = {"cluster.nic.bandwidth", "the NICs' rate", FAB_REPLAY_NET, RATE},
  [K_NET_GAP] = {"cluster.nic.message_gap", "the least time between two messages", FAB_REPLAY_NET, GAP},
};

typedef struct Row {
  int cls;
  uint32_t from, to, window;
  uint64_t bytes;
  double lat_us, gbps;           /* measured */
  double lat0, bw0, lat1, bw1;   /* simulated before, and now */
  int informs;                   /* the knob its latency informs (K_N: none) */
  int informs_bw;                /* the knob its bandwidth informs */
} Row;

typedef struct Pf {
  const char *scen, *probe;
  GPtrArray *user;               /* --set, no NULL */
  Row *rows;
  uint32_t n;
  double v[K_N], v0[K_N];        /* ns or GB/s */
  bool fit[K_N];
  uint32_t nrows[K_N];
  uint32_t sims;
} Pf;

/* Read the probe file: FALSE after printing why. */
static gboolean read_probe(Pf *f) {
  char *text = NULL;
  const char *why = NULL;
  if (!fab_cfg_read_file(f->probe, FAB_CFG_FILE_MAX, &text, NULL, &why)) {
    fprintf(stderr, "fabsim: calibrate: %s: cannot read: %s\n", f->probe, why);
    return FALSE;
  }
  FabJsonIndex *ix = fab_json_index_new(text);
  g_free(text);
  GArray *rows = g_array_new(FALSE, TRUE, sizeof(Row));
  gboolean ok = ix != NULL;
  for (uint32_t k = 0; ok; k++) {
    char p[64];
#define GET(field) (g_snprintf(p, sizeof p, "probe.rows.%u." field, k), fab_json_index_get(ix, p))
    const char *cls = GET("class"), *from = GET("from"), *to = GET("to"), *bytes = GET("bytes"), *win = GET("window"),
               *lat = GET("latency_us"), *bw = GET("bandwidth_GBps");
#undef GET
    if (!cls) break;
    Row r = {.cls = -1, .informs = K_N, .informs_bw = K_N};
    for (int c = 0; c < FAB_REPLAY_CLASSES; c++)
      if (strlen(cls) == strlen(fab_replay_class_names[c]) + 2 && !strncmp(cls + 1, fab_replay_class_names[c],
                                                                           strlen(fab_replay_class_names[c])))
        r.cls = c;
    if (r.cls < 0 || !from || !to || !bytes || !win || !lat || !bw) {
      fprintf(stderr, "fabsim: calibrate: %s: probe row %u lacks a field or names an unknown class\n", f->probe, k);
      ok = FALSE;
      break;
    }
    r.from = (uint32_t)g_ascii_strtoull(from, NULL, 10), r.to = (uint32_t)g_ascii_strtoull(to, NULL, 10);
    r.bytes = g_ascii_strtoull(bytes, NULL, 10), r.window = (uint32_t)g_ascii_strtoull(win, NULL, 10);
    r.lat_us = g_ascii_strtod(lat, NULL), r.gbps = g_ascii_strtod(bw, NULL);
    if (!(r.lat_us > 0) || !(r.gbps > 0) || !r.window || r.window > 4096 || r.from == r.to) {
      fprintf(stderr, "fabsim: calibrate: %s: probe row %u: latency, bandwidth and window must be positive, "
              "from and to different\n", f->probe, k);
      ok = FALSE;
      break;
    }
    g_array_append_val(rows, r);
  }
  if (!ix) fprintf(stderr, "fabsim: calibrate: %s: not JSON\n", f->probe);
  else if (ok && !rows->len) fprintf(stderr, "fabsim: calibrate: %s: no probe rows\n", f->probe), ok = FALSE;
  fab_json_index_free(ix);
  f->n = rows->len;
  f->rows = (Row *)g_array_free(rows, FALSE);
  return ok;
}

/* Which rows inform which knob: latency-bound and bandwidth-bound rows of each class. */
static void classify(Pf *f) {
  for (int c = 0; c < FAB_REPLAY_CLASSES; c++) {
    double lo = INFINITY, best = 0;
    for (uint32_t k = 0; k < f->n; k++)
      if (f->rows[k].cls == c) lo = MIN(lo, f->rows[k].lat_us), best = MAX(best, f->rows[k].gbps);
    for (uint32_t k = 0; k < f->n; k++) {
      Row *r = &f->rows[k];
      if (r->cls != c) continue;
      for (int q = 0; q < K_N; q++) {
        if (knobs[q].cls != c) continue;
        if (knobs[q].kind == LATENCY && r->lat_us < 2 * lo) r->informs = q, f->nrows[q]++;
        if (knobs[q].kind == RATE && r->gbps >= 0.8 * best) r->informs_bw = q, f->nrows[q]++;
        if (knobs[q].kind == GAP && r->gbps < 0.5 * best) r->informs_bw = q, f->nrows[q]++; /* messages, not bytes */
      }
    }
  }
}

static char *knob_set(int q, double x) {
  return knobs[q].kind == RATE ? g_strdup_printf("%s=%.0fB/s", knobs[q].key, x * 1e9)
                       : g_strdup_printf("%s=%.0fps", knobs[q].key, x * 1e3);
}

/* The scenario with the values now; NULL after printing why. */
static FabScenario *load(Pf *f) {
  GPtrArray *sets = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(sets, g_strdup("cluster.nic.rto=50ms")); /* a window of 64 through one NIC must not time out at
                                                            ** the default 1 ms while it waits its turn (README) */
  g_ptr_array_add(sets, g_strdup("fabric.segment=64KiB")); /* one pair, uncongested: trains are exact there */
  for (guint i = 0; i < f->user->len; i++) g_ptr_array_add(sets, g_strdup(f->user->pdata[i]));
  for (int q = 0; q < K_N; q++)
    if (f->fit[q]) g_ptr_array_add(sets, knob_set(q, f->v[q]));
  g_ptr_array_add(sets, NULL);
  GError *err = NULL;
  FabScenario *sc = fab_scenario_load(f->scen, (const char *const *)sets->pdata, &err);
  g_ptr_array_free(sets, TRUE);
  if (!sc) {
    fprintf(stderr, "fabsim: calibrate: %s\n", err->message);
    g_error_free(err);
  }
  return sc;
}

/* Simulate row r on sc (its DAG the probe's for the run; lat1, bw1 set). FALSE after printing why. */
static gboolean simulate(Pf *f, FabScenario *sc, Row *r) {
  uint32_t n = sc->dag->jobs->len ? g_array_index(sc->dag->jobs, FabJobDef, 0).nranks : 0;
  const uint32_t *eps = n ? g_array_index(sc->dag->jobs, FabJobDef, 0).ranks : NULL;
  uint32_t most = 0;
  for (uint32_t k = 0; k < n; k++) most = MAX(most, eps[k] + 1);
  if (r->from >= most || r->to >= most) {
    fprintf(stderr, "fabsim: calibrate: %s: the probe's endpoints %u and %u are not both in the scenario's "
            "workload (%u endpoints)\n", f->probe, r->from, r->to, most);
    return FALSE;
  }
  FabDag *d = fab_replay_probe_dag((const uint32_t[]){r->from, r->to}, 2, r->from, r->to, r->bytes, ROUNDS,
                                   r->window), *own = sc->dag;
  sc->dag = d;
  FabRunOpts opts = {.keep_flows = true};
  FabResults res;
  int rc = fab_run(sc, &opts, &res);
  sc->dag = own;
  gboolean ok = !rc && !res.failure;
  if (!ok) {
    fprintf(stderr, "fabsim: calibrate: simulating the probe of %" G_GUINT64_FORMAT " B failed: %s\n", r->bytes,
            res.failure ? res.failure : "?");
  } else {
    uint32_t nops = fab_dag_len(d);
    FabReplayTimes t = {g_new0(double, nops), g_new0(double, nops)};
    for (size_t k = 0; k < res.n_flows; k++) { /* flow k is op 2 + k (after the two marks) */
      t.began[2 + k] = (double)res.flows[k].start / 1e3;
      t.ended[2 + k] = (double)res.flows[k].end / 1e3;
    }
    double lat;
    fab_replay_probe_read(&t, 2, ROUNDS, r->window, r->bytes, &lat, &r->bw1);
    r->lat1 = lat / 1e3;
    g_free(t.began);
    g_free(t.ended);
    f->sims++;
  }
  fab_results_clear(&res);
  fab_dag_free(d);
  return ok;
}

/* Simulate the rows that inform knob q (K_N: every row) with the values now, the scenario loaded once. */
static gboolean simulate_rows(Pf *f, int q) {
  FabScenario *sc = load(f);
  gboolean ok = sc != NULL;
  for (uint32_t k = 0; ok && k < f->n; k++) {
    Row *r = &f->rows[k];
    if (q == K_N || r->informs == q || r->informs_bw == q) ok = simulate(f, sc, r);
  }
  fab_scenario_free(sc);
  return ok;
}

/* The sum of squared log errors of knob q's rows at value x. */
static gboolean cost(Pf *f, int q, double x, double *sq) {
  double keep = f->v[q];
  f->v[q] = x;
  gboolean ok = simulate_rows(f, q);
  f->v[q] = keep;
  *sq = 0;
  for (uint32_t k = 0; ok && k < f->n; k++) {
    const Row *r = &f->rows[k];
    if (r->informs == q) *sq += pow(log(r->lat1 / r->lat_us), 2);
    if (r->informs_bw == q) *sq += pow(log(r->bw1 / r->gbps), 2);
  }
  return ok;
}

/* Golden-section search of knob q; *moved: the relative change. */
static gboolean search(Pf *f, int q, double *moved) {
  double meas = 0;
  for (uint32_t k = 0; k < f->n; k++) {
    const Row *r = &f->rows[k];
    if (r->informs == q) meas = MAX(meas, r->lat_us * 1e3);
    if (r->informs_bw == q) meas = MAX(meas, knobs[q].kind == GAP ? (double)r->bytes / r->gbps : r->gbps);
  }
  bool rate = knobs[q].kind == RATE;
  double a = rate ? log(meas / 4) : 0, b = rate ? log(meas * 4) : meas, g = (sqrt(5) - 1) / 2;
  double c = b - g * (b - a), d = a + g * (b - a), fc, fd;
#define AT(u) (rate ? exp(u) : (u))
  if (!cost(f, q, AT(c), &fc) || !cost(f, q, AT(d), &fd)) return FALSE;
  for (int it = 0; it < 48 && (rate ? b - a > 1e-4 : b - a > 0.5); it++) {
    bool left = fc <= fd;
    if (left) b = d, d = c, fd = fc, c = b - g * (b - a);
    else a = c, c = d, fc = fd, d = a + g * (b - a);
    if (!cost(f, q, AT(left ? c : d), left ? &fc : &fd)) return FALSE;
  }
  double x = AT((a + b) / 2);
#undef AT
  char buf[32];
  g_snprintf(buf, sizeof buf, "%.4g", x);
  x = rate ? g_ascii_strtod(buf, NULL) : round(x); /* 4 significant figures; 1 ns */
  *moved = fabs(x - f->v[q]) / MAX(fabs(f->v[q]), rate ? 1e-9 : 1.0);
  f->v[q] = x;
  return TRUE;
}

/* ---- from the measurements alone: pieces of latency + size / bandwidth ---- */

typedef struct Piece {
  uint32_t k0, k1;   /* rows [k0, k1] of the class, in size order */
  double lat_us, gbps;
} Piece;

/* Least squares of t = a + s * b over rows [i, j] of xs (sizes), ys (us), weighted 1 / t^2; the squared
** relative error. */
static double line(const double *xs, const double *ys, uint32_t i, uint32_t j, double *a, double *b) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (uint32_t k = i; k <= j; k++) {
    double w = 1 / (ys[k] * ys[k]);
    sw += w, sx += w * xs[k], sy += w * ys[k], sxx += w * xs[k] * xs[k], sxy += w * xs[k] * ys[k];
  }
  double det = sw * sxx - sx * sx;
  *b = det > 0 ? (sw * sxy - sx * sy) / det : 0;
  *a = (sy - *b * sx) / sw;
  double e = 0;
  for (uint32_t k = i; k <= j; k++) e += pow((*a + *b * xs[k] - ys[k]) / ys[k], 2);
  return e;
}

/* Up to three pieces over the n rows (each of at least two): the best split into m pieces for each m, and
** m + 1 pieces kept only when they halve the error of m and m leave more than 1 % RMS relative error. */
static uint32_t pieces(const double *xs, const double *ys, uint32_t n, Piece *out) {
  double a, b, err[4] = {0, line(xs, ys, 0, n - 1, &a, &b), INFINITY, INFINITY};
  uint32_t cut[4][2] = {{0}};
  for (uint32_t i = 1; i + 1 < n; i++) /* pieces [0, i], [i + 1, j - 1], [j, n) (j == n: two) */
    for (uint32_t j = i + 3; j <= n; j++) {
      if (j < n && n - j < 2) continue;
      if (j == n && n - i - 1 < 2) continue;
      double e = line(xs, ys, 0, i, &a, &b) + line(xs, ys, i + 1, j - 1, &a, &b) +
                 (j < n ? line(xs, ys, j, n - 1, &a, &b) : 0);
      uint32_t m = j < n ? 3 : 2;
      if (e < err[m]) err[m] = e, cut[m][0] = i, cut[m][1] = j;
    }
  uint32_t np = 1;
  while (np < 3 && err[np] > n * 1e-4 && err[np + 1] < err[np] / 2) np++;
  uint32_t lo = 0;
  for (uint32_t p = 0; p < np; p++) {
    uint32_t hi = p + 1 == np ? n - 1 : p == 0 ? cut[np][0] : cut[np][1] - 1;
    line(xs, ys, lo, hi, &a, &b);
    out[p] = (Piece){lo, hi, a, b > 0 ? 1e-3 / b : INFINITY}; /* b: us per byte -> GB/s */
    lo = hi + 1;
  }
  return np;
}

/* ---- the fit ---- */

static void start_values(Pf *f, const FabScenario *sc) {
  f->v0[K_NET_LAT] = (double)sc->fabric.topo.link_latency / 1e3;
  f->v0[K_NET_BW] = (double)sc->fabric.topo.host_bps / 8e9;
  f->v0[K_NET_GAP] = (double)sc->fabric.nic.msg_gap / 1e3;
  memcpy(f->v, f->v0, sizeof f->v);
}

/* Fit every knob two rows inform; FALSE after printing why (the exit status in *rc). */
static gboolean fit_all(Pf *f, uint32_t *rounds, int *rc) {
  *rc = EXIT_USAGE;
  GError *err = NULL;
  g_ptr_array_add(f->user, NULL);
  FabScenario *sc = fab_scenario_load(f->scen, (const char *const *)f->user->pdata, &err);
  g_ptr_array_remove_index(f->user, f->user->len - 1);
  if (!sc) {
    fprintf(stderr, "fabsim: calibrate: %s\n", err->message);
    g_error_free(err);
    return FALSE;
  }
  start_values(f, sc);
  fab_scenario_free(sc);
  classify(f);
  uint32_t any = 0;
  for (int q = 0; q < K_N; q++) {
    f->fit[q] = f->nrows[q] >= 2;
    any += f->fit[q];
  }
  if (!simulate_rows(f, K_N)) return *rc = 1, FALSE; /* before: the scenario's values */
  for (uint32_t k = 0; k < f->n; k++) f->rows[k].lat0 = f->rows[k].lat1, f->rows[k].bw0 = f->rows[k].bw1;
  if (!any) {
    fprintf(stderr, "fabsim: calibrate: %s: no path parameter has two probe rows that inform it (latency-bound: "
            "under twice the class's smallest latency; bandwidth-bound: 80 %% of its best bandwidth)\n", f->probe);
    return FALSE;
  }
  double moved = 1;
  for (*rounds = 0; *rounds < 6 && moved > 1e-3; ++*rounds) {
    moved = 0;
    for (int q = 0; q < K_N; q++) {
      double m;
      if (f->fit[q] && !search(f, q, &m)) return *rc = 1, FALSE;
      if (f->fit[q]) moved = MAX(moved, m);
    }
  }
  if (!simulate_rows(f, K_N)) return *rc = 1, FALSE;
  *rc = 0;
  return TRUE;
}

static void put(GString *s, int q, double x) {
  if (knobs[q].kind == RATE) g_string_append_printf(s, "%.4gGB/s", x);
  else g_string_append_printf(s, "%.0fns", x);
}

static char *fragment(const Pf *f) {
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "# fabsim calibrate " FABSIM_VERSION ": fitted to the probes %s on %s.\n# Run it after the "
                         "scenario: a file with `include: [SCENARIO, THIS]` (the last include wins).\n", f->probe,
                         f->scen);
  if (f->fit[K_NET_BW] || f->fit[K_NET_GAP]) {
    g_string_append(s, "cluster:\n  nic: {");
    if (f->fit[K_NET_BW]) g_string_append(s, "bandwidth: "), put(s, K_NET_BW, f->v[K_NET_BW]);
    if (f->fit[K_NET_GAP])
      g_string_append(s, f->fit[K_NET_BW] ? ", message_gap: " : "message_gap: "), put(s, K_NET_GAP, f->v[K_NET_GAP]);
    g_string_append(s, "}\n");
  }
  if (f->fit[K_NET_LAT]) g_string_append(s, "fabric:\n  link: {latency: "), put(s, K_NET_LAT, f->v[K_NET_LAT]),
                         g_string_append(s, "}\n");
  return g_string_free(s, FALSE);
}

/* The fitted values, as the scenario took them with the fragment included (fab_calibrate_write's check). */
static gboolean took(const FabScenario *sc, const void *ctx) {
  const Pf *f = ctx;
  Pf got = {0};
  start_values(&got, sc);
  for (int q = 0; q < K_N; q++)
    if (f->fit[q] && fabs(got.v[q] - f->v[q]) > 1e-9 * MAX(1.0, f->v[q])) {
      fprintf(stderr, "fabsim: calibrate: internal error: with the fragment %s is %.9g, not %.9g\n", knobs[q].key,
              got.v[q], f->v[q]);
      return FALSE;
    }
  return TRUE;
}

/* ---- the report ---- */

/* What a class's measurements say alone. */
typedef struct Measured {
  uint32_t np;       /* pieces (0: fewer than two rows) */
  Piece pc[3];
  uint32_t idx[64];  /* its rows, in the probe's (size) order */
  double overhead_us;
} Measured;

/* The pieces of class c's rows (sizes ascending, as the probe wrote them) and its per-message overhead. */
static void measured(const Pf *f, int c, Measured *m) {
  double xs[64], ys[64];
  uint32_t n = 0;
  m->np = 0;
  for (uint32_t k = 0; k < f->n && n < 64; k++)
    if (f->rows[k].cls == c) m->idx[n] = k, xs[n] = (double)f->rows[k].bytes, ys[n++] = f->rows[k].lat_us;
  if (n < 2) return;
  const Row *r0 = &f->rows[m->idx[0]];
  m->overhead_us = (double)r0->bytes / r0->gbps / 1e3; /* the window's time per message at the smallest size */
  m->np = pieces(xs, ys, n, m->pc);
}

static void report(const Pf *f, uint32_t rounds) {
  printf("fabsim calibrate: %u probe rows of %s against %s\n", f->n, f->probe, f->scen);
  for (int q = 0; q < K_N; q++) {
    if (!f->nrows[q] && !f->fit[q]) continue;
    GString *b = g_string_new(NULL), *a = g_string_new(NULL);
    put(b, q, f->v0[q]), put(a, q, f->v[q]);
    if (f->fit[q]) printf("  fitted     %s (%s): %s -> %s, from %u rows\n", knobs[q].key, knobs[q].what, b->str, a->str,
                          f->nrows[q]);
    else printf("  not fitted %s: %u rows (2 needed)\n", knobs[q].key, f->nrows[q]);
    g_string_free(b, TRUE), g_string_free(a, TRUE);
  }
  for (uint32_t k = 0, said = 0; k < f->n && !said; k++)
    if (f->rows[k].cls != FAB_REPLAY_NET)
      said = printf("  not fitted %s rows: fabsim-replay moves host memory, so a pair the scenario joins by NVLink or "
                    "in one node measures the host's shared memory, not NVLink (reported, never fitted)\n",
                    fab_replay_class_names[f->rows[k].cls]);
  printf("  rounds     %u, %u simulations of probes\n", rounds, f->sims);
  printf("  %-7s %10s %10s %10s %8s %10s %10s %8s  %s\n", "class", "size (B)", "lat us", "before", "after", "GB/s",
         "before", "after", "fits");
  double e0 = 0, e1 = 0, g0 = 0, g1 = 0;
  uint32_t ng = 0;
  for (uint32_t k = 0; k < f->n; k++) {
    const Row *r = &f->rows[k];
    printf("  %-7s %10" G_GUINT64_FORMAT " %10.2f %+9.1f%% %+7.1f%% %10.3f %+9.1f%% %+7.1f%%  %s%s%s\n",
           fab_replay_class_names[r->cls], r->bytes, r->lat_us, 100 * (r->lat0 / r->lat_us - 1),
           100 * (r->lat1 / r->lat_us - 1), r->gbps, 100 * (r->bw0 / r->gbps - 1), 100 * (r->bw1 / r->gbps - 1),
           r->informs < K_N ? "latency" : "", r->informs < K_N && r->informs_bw < K_N ? ", " : "",
           r->informs_bw < K_N ? "bandwidth" : (r->informs < K_N ? "" : "-"));
    e0 += fabs(r->lat0 / r->lat_us - 1) + fabs(r->bw0 / r->gbps - 1);
    e1 += fabs(r->lat1 / r->lat_us - 1) + fabs(r->bw1 / r->gbps - 1);
    if (r->informs < K_N && f->fit[r->informs])
      g0 += fabs(r->lat0 / r->lat_us - 1), g1 += fabs(r->lat1 / r->lat_us - 1), ng++;
    if (r->informs_bw < K_N && f->fit[r->informs_bw])
      g0 += fabs(r->bw0 / r->gbps - 1), g1 += fabs(r->bw1 / r->gbps - 1), ng++;
  }
  printf("  mean |error| of what was fitted (%u values): before %.1f %%, after %.1f %%; of every latency and "
         "bandwidth: before %.1f %%, after %.1f %%\n", ng, ng ? 100 * g0 / ng : 0, ng ? 100 * g1 / ng : 0,
         50 * e0 / f->n, 50 * e1 / f->n);
  for (int c = 0; c < FAB_REPLAY_CLASSES; c++) {
    Measured m;
    measured(f, c, &m);
    if (!m.np) continue;
    printf("  measured   %s: %.2f us per message in a window (at %" G_GUINT64_FORMAT " B); latency by size:",
           fab_replay_class_names[c], m.overhead_us, f->rows[m.idx[0]].bytes);
    for (uint32_t p = 0; p < m.np; p++) {
      const Piece *pc = &m.pc[p];
      printf("%s %" G_GUINT64_FORMAT "-%" G_GUINT64_FORMAT " B: %.2f us", p ? ";" : "", f->rows[m.idx[pc->k0]].bytes,
             f->rows[m.idx[pc->k1]].bytes, pc->lat_us);
      if (isfinite(pc->gbps)) printf(" + size / %.3g GB/s", pc->gbps);
      else printf(", flat");
    }
    printf("\n");
  }
}

static void report_json(const Pf *f, uint32_t rounds, const char *out) {
  GString *s = g_string_new("{\"parameters\": [");
  uint32_t np = 0;
  for (int q = 0; q < K_N; q++) {
    if (!f->nrows[q] && !f->fit[q]) continue;
    g_string_append_printf(s, "%s\n  {\"key\": \"%s\", \"unit\": \"%s\", \"fitted\": %s, \"rows\": %u, \"before\": %.9g, "
                           "\"after\": %.9g}", np++ ? "," : "", knobs[q].key, knobs[q].kind == RATE ? "GB/s" : "ns",
                           f->fit[q] ? "true" : "false", f->nrows[q], f->v0[q], f->v[q]);
  }
  g_string_append(s, "],\n \"rows\": [");
  for (uint32_t k = 0; k < f->n; k++) {
    const Row *r = &f->rows[k];
    g_string_append_printf(s, "%s\n  {\"class\": \"%s\", \"from\": %u, \"to\": %u, \"bytes\": %" G_GUINT64_FORMAT
                           ", \"window\": %u, \"latency_us\": %.9g, \"before_latency_us\": %.9g, \"after_latency_us\": "
                           "%.9g, \"bandwidth_GBps\": %.9g, \"before_bandwidth_GBps\": %.9g, \"after_bandwidth_GBps\": "
                           "%.9g}", k ? "," : "", fab_replay_class_names[r->cls], r->from, r->to, r->bytes, r->window,
                           r->lat_us, r->lat0, r->lat1, r->gbps, r->bw0, r->bw1);
  }
  g_string_append(s, "],\n \"classes\": [");
  uint32_t nc = 0;
  for (int c = 0; c < FAB_REPLAY_CLASSES; c++) {
    Measured m;
    measured(f, c, &m);
    if (!m.np) continue;
    g_string_append_printf(s, "%s\n  {\"class\": \"%s\", \"overhead_us\": %.9g, \"pieces\": [", nc++ ? "," : "",
                           fab_replay_class_names[c], m.overhead_us);
    for (uint32_t p = 0; p < m.np; p++)
      g_string_append_printf(s, "%s{\"from_bytes\": %" G_GUINT64_FORMAT ", \"to_bytes\": %" G_GUINT64_FORMAT
                             ", \"latency_us\": %.9g, \"bandwidth_GBps\": %.9g}", p ? ", " : "",
                             f->rows[m.idx[m.pc[p].k0]].bytes, f->rows[m.idx[m.pc[p].k1]].bytes, m.pc[p].lat_us,
                             isfinite(m.pc[p].gbps) ? m.pc[p].gbps : 0);
    g_string_append(s, "]}");
  }
  g_string_append_printf(s, "],\n \"rounds\": %u, \"simulations\": %u, \"fragment\": ", rounds, f->sims);
  if (out) fab_json_put_str(s, out);
  else g_string_append(s, "null");
  g_string_append(s, "}\n");
  fputs(s->str, stdout);
  g_string_free(s, TRUE);
}

gboolean fab_calibrate_is_probe(const char *path) {
  char *text = NULL;
  const char *why = NULL;
  if (!fab_cfg_read_file(path, FAB_CFG_FILE_MAX, &text, NULL, &why)) return FALSE; /* the log reader says why */
  const char *p = text;
  while (g_ascii_isspace(*p)) p++;
  gboolean yes = g_str_has_prefix(p, "{") && strstr(p, "\"probe\"") != NULL;
  g_free(text);
  return yes;
}

int fab_calibrate_probe(const char *scen, GPtrArray *user, const char *probe, const char *out, gboolean json) {
  Pf f = {.scen = scen, .probe = probe, .user = user};
  int rc = EXIT_USAGE;
  uint32_t rounds = 0;
  if (read_probe(&f) && fit_all(&f, &rounds, &rc)) {
    char *text = out ? fragment(&f) : NULL;
    if (out && !fab_calibrate_write(scen, user, text, out, took, &f)) rc = 1;
    else if (json) report_json(&f, rounds, out);
    else report(&f, rounds);
    if (!json && out && !rc) printf("  wrote      %s (checked: %s loads with it included last)\n", out, scen);
    g_free(text);
  }
  g_free(f.rows);
  return rc;
}

/* nccl-tests tables: a measured one matched with a simulated one, size by
** size, and the comparison printed. See nccltests.h. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "nccltests.h"

/* ---- comparison ---------------------------------------------------------- */

void fab_nccltests_cmp_free(FabNcclTestsCmp *c) {
  if (!c) return;
  if (c->rows) g_array_free(c->rows, TRUE);
  g_free(c);
}

/* The simulated row of `bytes`: the same size, else the closest within 1%. */
static const FabNcclTestsRow *sim_row(const FabNcclTestsTable *sim, uint64_t bytes) {
  const FabNcclTestsRow *best = NULL;
  double best_d = 0.01;
  for (guint i = 0; sim && i < sim->rows->len; i++) {
    const FabNcclTestsRow *r = &g_array_index(sim->rows, FabNcclTestsRow, i);
    if (r->bytes == bytes) return r;
    double d = fabs((double)r->bytes - (double)bytes) / (double)MAX(bytes, 1);
    if (d <= best_d) best = r, best_d = d;
  }
  return best;
}

/* The row of measured size m against s: the out-of-place values, the
** in-place ones where the log has no out-of-place time. */
static FabNcclTestsCmpRow cmp_row(const FabNcclTestsRow *m, const FabNcclTestsRow *s) {
  int g = isnan(m->time_us[0]) && !isnan(m->time_us[1]);
  return (FabNcclTestsCmpRow){
    .bytes = m->bytes, .count = m->count, .meas_in_place = g,
    .meas_time_us = m->time_us[g], .meas_algbw_GBps = m->algbw_GBps[g], .meas_busbw_GBps = m->busbw_GBps[g],
    .sim_time_us = s ? s->time_us[0] : NAN, .sim_algbw_GBps = s ? s->algbw_GBps[0] : NAN,
    .sim_busbw_GBps = s ? s->busbw_GBps[0] : NAN, .algorithm = s ? s->algorithm : NULL,
    .protocol = s ? s->protocol : NULL, .time_err = NAN, .busbw_err = NAN, .time_ratio = NAN,
  };
}

/* The measured algbw of a row from its time (GB/s), NAN without one. */
static double meas_algbw(const FabNcclTestsCmpRow *r) {
  return r->meas_time_us > 0 && isfinite(r->meas_time_us) ? (double)r->bytes / r->meas_time_us / 1e3 : NAN;
}

/* The share of row i's measured time that moving its bytes takes, from the
** latency + size / bandwidth line through it and its measured neighbour
** (the next smaller size, or the next larger for the smallest): size /
** bandwidth over the time. NAN without a neighbour of another size. */
static double bytes_share(const FabNcclTestsCmp *c, guint i) {
  const FabNcclTestsCmpRow *r = &g_array_index(c->rows, FabNcclTestsCmpRow, i), *o = NULL;
  for (guint j = 0; j < c->rows->len; j++) { /* the closest measured size below, else above */
    const FabNcclTestsCmpRow *q = &g_array_index(c->rows, FabNcclTestsCmpRow, j);
    if (isnan(meas_algbw(q)) || q->bytes == r->bytes) continue;
    gboolean below = q->bytes < r->bytes, o_below = o && o->bytes < r->bytes;
    if (!o || (below && (!o_below || q->bytes > o->bytes)) || (!below && !o_below && q->bytes < o->bytes)) o = q;
  }
  if (!o) return NAN;
  double per_byte = (r->meas_time_us - o->meas_time_us) / ((double)r->bytes - (double)o->bytes); /* 1 / bandwidth */
  return (double)r->bytes * per_byte / r->meas_time_us;
}

/* Each row's bound: past the half-bandwidth point when moving its bytes takes
** at least half its time (FAB_NCCLTESTS_BOUND_RULE). The peak is reported. */
static void classify(FabNcclTestsCmp *c, double factor) {
  double peak = 0;
  for (guint i = 0; i < c->rows->len; i++) {
    const FabNcclTestsCmpRow *r = &g_array_index(c->rows, FabNcclTestsCmpRow, i);
    double a = meas_algbw(r);
    if (a > peak) peak = a, c->peak_bytes = r->bytes;
  }
  c->peak_busbw_GBps = peak > 0 ? peak * factor : NAN;
  for (guint i = 0; i < c->rows->len; i++) {
    FabNcclTestsCmpRow *r = &g_array_index(c->rows, FabNcclTestsCmpRow, i);
    if (isnan(meas_algbw(r))) continue;
    double share = bytes_share(c, i);
    /* one measured size alone: the peak rule (it is its own peak: bandwidth-bound) */
    gboolean bw = isnan(share) ? meas_algbw(r) >= FAB_NCCLTESTS_BW_BOUND * peak : share >= FAB_NCCLTESTS_BW_BOUND;
    r->bound = bw ? FAB_NCCLTESTS_BANDWIDTH_BOUND : FAB_NCCLTESTS_LATENCY_BOUND;
  }
}

/* The time ratios per bound, their shares of the error and the worst sizes. */
static void ratios(FabNcclTestsCmp *c) {
  double sum_ln[3] = {0}, sum_abs[3] = {0}, worst[3] = {0};
  FabNcclTestsCmpClass *cls[3] = {NULL, &c->latency, &c->bandwidth};
  for (int b = 1; b < 3; b++) *cls[b] = (FabNcclTestsCmpClass){.geomean_ratio = NAN, .worst_ratio = NAN,
                                                                .error_share = NAN};
  for (guint i = 0; i < c->rows->len; i++) {
    const FabNcclTestsCmpRow *r = &g_array_index(c->rows, FabNcclTestsCmpRow, i);
    if (isnan(r->time_ratio) || !r->bound) continue;
    double e = fabs(log(r->time_ratio));
    FabNcclTestsCmpClass *k = cls[r->bound];
    if (!k->sizes++ || r->bytes < k->min_bytes) k->min_bytes = r->bytes;
    k->max_bytes = MAX(k->max_bytes, r->bytes);
    sum_ln[r->bound] += log(r->time_ratio);
    sum_abs[r->bound] += e;
    if (k->sizes == 1 || e > worst[r->bound]) worst[r->bound] = e, k->worst_ratio = r->time_ratio, k->worst_bytes = r->bytes;
    guint w = MIN(c->n_worst, FAB_NCCLTESTS_WORST - 1); /* insert, worst first, the first of equals first */
    if (c->n_worst == FAB_NCCLTESTS_WORST && e <= fabs(log(c->worst_ratio[w]))) continue;
    for (; w > 0 && e > fabs(log(c->worst_ratio[w - 1])); w--)
      c->worst_ratio[w] = c->worst_ratio[w - 1], c->worst_bytes[w] = c->worst_bytes[w - 1];
    c->worst_ratio[w] = r->time_ratio, c->worst_bytes[w] = r->bytes;
    c->n_worst = MIN(c->n_worst + 1, FAB_NCCLTESTS_WORST);
  }
  for (int b = 1; b < 3; b++) {
    if (cls[b]->sizes) cls[b]->geomean_ratio = exp(sum_ln[b] / cls[b]->sizes);
    if (sum_abs[1] + sum_abs[2] > 0) cls[b]->error_share = sum_abs[b] / (sum_abs[1] + sum_abs[2]);
  }
}

FabNcclTestsCmp *fab_nccltests_compare(const FabNcclTestsTable *meas, const FabNcclTestsTable *sim) {
  FabNcclTestsCmp *c = g_new0(FabNcclTestsCmp, 1);
  c->rows = g_array_new(FALSE, TRUE, sizeof(FabNcclTestsCmpRow));
  uint32_t n = meas->ranks ? meas->ranks : sim ? sim->ranks : 0;
  double factor = fab_nccltests_busbw_factor(meas->op ? meas->op : sim ? sim->op : NULL, n);
  double sum_t = 0, sum_b = 0;
  c->max_abs_time_err = c->max_abs_busbw_err = -1;
  for (guint i = 0; i < meas->rows->len; i++) {
    const FabNcclTestsRow *m = &g_array_index(meas->rows, FabNcclTestsRow, i);
    FabNcclTestsCmpRow r = cmp_row(m, sim_row(sim, m->bytes));
    if (m->bytes && isfinite(r.sim_time_us) && r.sim_time_us > 0 && r.meas_time_us > 0 && isfinite(r.meas_time_us)) {
      r.time_err = (r.sim_time_us - r.meas_time_us) / r.meas_time_us;
      r.time_ratio = r.sim_time_us / r.meas_time_us;
      double meas_bus = (double)m->bytes / r.meas_time_us / 1e3 * factor;
      r.busbw_err = meas_bus > 0 ? (r.sim_busbw_GBps - meas_bus) / meas_bus : NAN;
      c->matched++;
      sum_t += fabs(r.time_err);
      if (fabs(r.time_err) > c->max_abs_time_err) c->max_abs_time_err = fabs(r.time_err), c->max_time_err_bytes = m->bytes;
      if (isfinite(r.busbw_err)) {
        sum_b += fabs(r.busbw_err);
        if (fabs(r.busbw_err) > c->max_abs_busbw_err)
          c->max_abs_busbw_err = fabs(r.busbw_err), c->max_busbw_err_bytes = m->bytes;
      }
    }
    g_array_append_val(c->rows, r);
  }
  c->mean_abs_time_err = c->matched ? sum_t / c->matched : NAN;
  c->mean_abs_busbw_err = c->matched ? sum_b / c->matched : NAN;
  if (!c->matched) c->max_abs_time_err = c->max_abs_busbw_err = NAN;
  classify(c, factor);
  ratios(c);
  return c;
}

const char *fab_nccltests_bound_name(FabNcclTestsBound b) {
  return b == FAB_NCCLTESTS_LATENCY_BOUND ? "latency" : b == FAB_NCCLTESTS_BANDWIDTH_BOUND ? "bandwidth" : NULL;
}

void fab_nccltests_ratio_str(char *buf, size_t n, double v) {
  if (!isfinite(v)) snprintf(buf, n, "-");
  else if (v >= 99.5) snprintf(buf, n, "%.0fx", v);
  else if (v >= 9.995) snprintf(buf, n, "%.1fx", v);
  else if (v >= 0.0995) snprintf(buf, n, "%.2fx", v);
  else snprintf(buf, n, "%.2gx", v);
}

/* "1 KiB"-style size for the summary */
static char *size_str(uint64_t b) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && b >= 1024 && b % 1024 == 0) b /= 1024, u++;
  return g_strdup_printf("%" G_GUINT64_FORMAT " %s", b, unit[u]);
}

/* "2 sizes (1 MiB to 4 MiB): geomean 0.95x, worst 0.90x at 2 MiB", or "no size";
** compact: "0.95x (2 sizes, worst 0.90x at 2 MiB)", or "no size". */
static void class_str(GString *s, const FabNcclTestsCmpClass *k, gboolean compact) {
  if (!k->sizes) {
    g_string_append(s, "no size");
    return;
  }
  char gm[32], w[32], *lo = size_str(k->min_bytes), *hi = size_str(k->max_bytes), *at = size_str(k->worst_bytes);
  fab_nccltests_ratio_str(gm, sizeof gm, k->geomean_ratio);
  fab_nccltests_ratio_str(w, sizeof w, k->worst_ratio);
  const char *pl = k->sizes == 1 ? "" : "s";
  if (compact) g_string_append_printf(s, "%s (%u size%s, worst %s at %s)", gm, k->sizes, pl, w, at);
  else if (k->sizes > 1) g_string_append_printf(s, "%u sizes (%s to %s): geomean %s, worst %s at %s", k->sizes, lo, hi, gm, w, at);
  else g_string_append_printf(s, "1 size (%s): geomean %s, worst %s at %s", lo, gm, w, at);
  g_free(lo);
  g_free(hi);
  g_free(at);
}

char *fab_nccltests_cmp_summary(const FabNcclTestsCmp *c) {
  if (!c->matched) return g_strdup_printf("no size was both measured and simulated (%u measured)", c->rows->len);
  GString *s = g_string_new("sim/meas time, geomean: bandwidth-bound ");
  class_str(s, &c->bandwidth, TRUE);
  g_string_append(s, "; latency-bound ");
  class_str(s, &c->latency, TRUE);
  return g_string_free(s, FALSE);
}

/* The lines under the table: the rule, the ratios per bound, where the error is. */
static void cmp_footer(GString *s, const FabNcclTestsCmp *c) {
  if (!c->matched) {
    char *sum = fab_nccltests_cmp_summary(c);
    g_string_append_printf(s, "# %s\n", sum);
    g_free(sum);
    return;
  }
  char bw[32], *at = size_str(c->peak_bytes);
  snprintf(bw, sizeof bw, "%.2f", c->peak_busbw_GBps);
  g_string_append_printf(s, "# time ratio: simulated / measured time (1.00x exact, 0.50x fabsim twice as fast)\n"
                            "# bandwidth-bound: moving the bytes takes at least half the measured time (latency + "
                            "size / bandwidth through the next smaller size); latency-bound: below; peak busbw %s "
                            "GB/s at %s\n# bandwidth-bound ", bw, at);
  class_str(s, &c->bandwidth, FALSE);
  g_string_append(s, "\n# latency-bound   ");
  class_str(s, &c->latency, FALSE);
  g_free(at);
  const FabNcclTestsCmpClass *big = c->latency.error_share >= 0.5 ? &c->latency : &c->bandwidth;
  /* within half a percent everywhere: every ratio prints 1.00x, and shares of that are noise */
  gboolean none = isnan(c->latency.error_share) || (c->n_worst && fabs(log(c->worst_ratio[0])) < log(1.005));
  if (none) g_string_append(s, "\n# no error: every size is at 1.00x (within 0.5%)\n");
  else g_string_append_printf(s, "\n# most of the error is in the %s-bound sizes (%.0f%% of the summed |ln ratio|); "
                              "worst:", big == &c->latency ? "latency" : "bandwidth", 100 * big->error_share);
  for (uint32_t i = 0; i < c->n_worst && !none; i++) {
    char r[32], *b = size_str(c->worst_bytes[i]);
    fab_nccltests_ratio_str(r, sizeof r, c->worst_ratio[i]);
    g_string_append_printf(s, "%s %s %s", i ? "," : "", b, r);
    g_free(b);
  }
  if (!none) g_string_append_c(s, '\n');
}

char *fab_nccltests_cmp_format(const FabNcclTestsCmp *c) {
  GString *s = g_string_new(NULL);
  g_string_append(s, "#                  measured           simulated  sim/meas\n");
  g_string_append_printf(s, "# %10s  %8s  %7s  %8s  %7s  %8s  %-9s  %s\n", "size", "time", "busbw", "time", "busbw",
                         "time", "bound", "algorithm");
  g_string_append_printf(s, "# %10s  %8s  %7s  %8s  %7s  %8s\n", "(B)", "(us)", "(GB/s)", "(us)", "(GB/s)", "(ratio)");
  for (guint i = 0; i < c->rows->len; i++) {
    const FabNcclTestsCmpRow *r = &g_array_index(c->rows, FabNcclTestsCmpRow, i);
    char mt[32], mb[32], st[32], sb[32], ra[32];
    fab_nccltests__num_str(mt, sizeof mt, r->meas_time_us, 8);
    fab_nccltests__num_str(mb, sizeof mb, r->meas_busbw_GBps, 7);
    fab_nccltests__num_str(st, sizeof st, r->sim_time_us, 8);
    fab_nccltests__num_str(sb, sizeof sb, r->sim_busbw_GBps, 7);
    fab_nccltests_ratio_str(ra, sizeof ra, r->time_ratio);
    const char *bound = fab_nccltests_bound_name(r->bound);
    gsize start = s->len;
    g_string_append_printf(s, "%12" G_GUINT64_FORMAT "  %8s  %7s  %8s  %7s  %8s  %-9s", r->bytes, mt, mb, st, sb, ra,
                           bound ? bound : "-");
    if (r->algorithm) g_string_append_printf(s, "  %s/%s", r->algorithm, r->protocol ? r->protocol : "?");
    if (r->meas_in_place) g_string_append(s, "  (measured in-place)");
    while (s->len > start && s->str[s->len - 1] == ' ') g_string_truncate(s, s->len - 1);
    g_string_append_c(s, '\n');
  }
  cmp_footer(s, c);
  return g_string_free(s, FALSE);
}

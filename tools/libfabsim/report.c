/* The short human-readable report of a run (fabsim run without --json).
** See report.h. */
#include "report.h"

#include <math.h>
#include "nccltests.h"

static void head(const FabScenario *sc, const FabResults *r, FILE *out) {
  const FabFlowSummary *fs = &r->flow_stats;
  fprintf(out, "fabsim %s: %s (seed %" G_GUINT64_FORMAT ")\n", r->version, r->scenario, r->seed);
  fprintf(out, "  fabric      %s, %u endpoints\n", r->topology, r->endpoints);
  char *nics = fab_scenario_nic_rate(sc);
  fprintf(out, "  nics        %s\n", nics);
  g_free(nics);
  fprintf(out, "  flows       %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT " completed, %" G_GUINT64_FORMAT " bytes\n",
          fs->completed, fs->count, fs->bytes);
  if (fs->completed) /* percentiles of no completed flow are not 0: there are none */
    fprintf(out, "  fct         p50 %.3f us, p99 %.3f us, max %.3f us\n", fs->fct_p50_s * 1e6, fs->fct_p99_s * 1e6,
            fs->fct_max_s * 1e6);
  else
    fprintf(out, "  fct         n/a (no flow completed)\n");
  fprintf(out, "  sim time    %.3f us\n", fab_time_to_s(r->sim_time) * 1e6);
  fprintf(out, "  network     %" G_GUINT64_FORMAT " drops, %" G_GUINT64_FORMAT " retransmits, max queue %"
          G_GUINT64_FORMAT " B\n", r->drops, r->retransmits, r->max_queue_bytes);
  if (r->fabric_segment) /* the granularity is the user's choice: said beside the counts it changes */
    fprintf(out, "  segment     trains of %u B on the network (fabric.segment: %u packets each; drops, "
            "retransmits and packet hops count trains)\n", r->fabric_segment, r->fabric_segment / sc->fabric.nic.mtu);
  if (r->nvls_segment)
    fprintf(out, "  segment     NVLS in segments of up to %u B (cluster.nvlink.nvls_segment, not NCCL's chunk; packet "
            "hops count them)\n", r->nvls_segment);
  fprintf(out, "  engine      %" G_GUINT64_FORMAT " events, %" G_GUINT64_FORMAT " packet hops in %.3f s"
          " (%.2f M events/s, %.2f M hops/s)\n", r->events, r->packet_hops, r->wall_s,
          r->wall_s > 0 ? (double)r->events / r->wall_s / 1e6 : 0,
          r->wall_s > 0 ? (double)r->packet_hops / r->wall_s / 1e6 : 0);
  for (size_t i = 0; i < r->n_failures; i++) {
    const FabFailureRec *f = &r->failures[i];
    fprintf(out, "  failure     %s %s at %.3f us: %" G_GUINT64_FORMAT " packets lost, %" G_GUINT64_FORMAT
            " routes changed", f->link, f->change, fab_time_to_s(f->at) * 1e6, f->lost, f->rerouted);
    if (f->rerouted_at) fprintf(out, " (the last at %.3f us)", fab_time_to_s(f->rerouted_at) * 1e6);
    fputc('\n', out);
  }
  if (r->impact)
    fprintf(out, "  impact      %+.2f %% time against %.3f us without the failures (fct p50 %.3f us, p99 %.3f us "
            "then); %" G_GUINT64_FORMAT " B moved off the links named\n", r->impact->slowdown * 100,
            fab_time_to_s(r->impact->baseline_time) * 1e6, r->impact->baseline_fct_p50_s * 1e6,
            r->impact->baseline_fct_p99_s * 1e6, r->impact->moved_bytes);
  for (size_t j = 0; r->n_jobs > 1 && j < r->n_jobs; j++) {
    const FabJobRec *jr = &r->jobs[j];
    fprintf(out, "  job         %s (%s, %u ranks): %u/%u flows, %.3f us\n", jr->name, jr->kind, jr->ranks,
            jr->completed, jr->flows, jr->time_s * 1e6);
  }
}

/* A few collectives by themselves (nccl-tests has its table, training its step). */
static void collectives(const FabResults *r, FILE *out) {
  size_t shown = 0;
  for (size_t i = 0; i < r->n_colls; i++) {
    const FabCollRec *c = &r->colls[i];
    if ((c->tag && g_str_has_prefix(c->tag, "nccl-tests")) || r->n_steps || r->n_colls > 8) continue;
    double t = c->end ? fab_time_to_s(c->end - c->start) : NAN, alg = (double)c->bytes / t / 1e9;
    fprintf(out, "  collective  %s %" G_GUINT64_FORMAT " B on %u ranks, %s/%s x %u channels: %.3f us, algbw %.2f GB/s, "
            "busbw %.2f GB/s", c->op, c->bytes, c->ranks, c->algorithm, c->protocol, c->channels, t * 1e6, alg,
            alg * fab_results_busbw_factor(c->op, c->ranks));
    if (c->nics) fprintf(out, "; %.2f GB/s per NIC on the wire (%u NICs)", c->nic_GBps, c->nics);
    fputc('\n', out);
    shown++;
  }
  if (!shown && r->n_colls && !r->n_steps) fprintf(out, "  collectives %zu\n", r->n_colls);
}

/* See report.h. The sum alone misleads: the DP allreduces of many
** concurrent groups add up to several times the step. */
char *fab_report_purposes(const FabResults *r, size_t j, uint32_t steps) {
  GString *by = g_string_new(NULL);
  GHashTable *at = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL); /* "tag op" -> index + 1 */
  struct Sum {
    size_t first, cnt;
    double t;
    GArray *busy;
  } *sums = NULL;
  size_t nk = 0;
  guint *key_of = g_new0(guint, r->n_colls + 1); /* collective -> its key + 1 (0: another job) */
  for (size_t i = 0; i < r->n_colls; i++) {
    const FabCollRec *c = &r->colls[i];
    if (c->job != j) continue;
    char *key = g_strdup_printf("%s %s", c->tag ? c->tag : "-", c->op);
    guint k = GPOINTER_TO_UINT(g_hash_table_lookup(at, key));
    if (!k) {
      sums = g_renew(struct Sum, sums, nk + 1);
      sums[nk] = (struct Sum){i, 0, 0, g_array_new(FALSE, FALSE, sizeof(FabBusySpan))};
      k = (guint)++nk;
      g_hash_table_insert(at, key, GUINT_TO_POINTER(k));
    } else {
      g_free(key);
    }
    key_of[i] = k;
    sums[k - 1].cnt++;
    sums[k - 1].t += c->end ? fab_time_to_s(c->end - c->start) : 0;
  }
  for (size_t x = 0; x < r->n_spans; x++) {
    const FabSpanRec *sp = &r->spans[x];
    if (sp->kind == 0 || sp->job != j || sp->coll < 0 || (size_t)sp->coll >= r->n_colls || !key_of[sp->coll])
      continue;
    FabBusySpan b = {sp->rank, sp->start, sp->end};
    g_array_append_val(sums[key_of[sp->coll] - 1].busy, b);
  }
  double per = steps ? steps : 1;
  for (size_t k = 0; k < nk; k++) {
    const FabCollRec *c = &r->colls[sums[k].first];
    size_t most;
    double longest;
    fab_results_busiest(sums[k].busy, &most, &longest);
    g_string_append_printf(by, "%s%s %zu x %s (", by->len ? ", " : "", c->tag ? c->tag : c->op, sums[k].cnt, c->op);
    if (sums[k].busy->len)
      g_string_append_printf(by, "%.6g per rank%s, busiest rank %.3f ms%s; ", (double)most / per,
                             steps > 1 ? " and step" : "", longest / per * 1e3, steps > 1 ? " per step" : "");
    g_string_append_printf(by, "%.3f ms summed)", sums[k].t * 1e3);
    g_array_unref(sums[k].busy);
  }
  g_free(sums);
  g_free(key_of);
  g_hash_table_destroy(at);
  return g_string_free(by, FALSE);
}

/* Training: the step report of each job, averaged over steps and ranks. */
static void steps(const FabResults *r, FILE *out) {
  for (size_t j = 0; j < r->n_jobs; j++) {
    const FabStepSummary *s = r->jobs[j].step;
    if (!s) continue;
    fprintf(out, "  step        %s: %.3f ms per step (%u step%s): compute %.3f ms, exposed communication %.3f ms, "
            "overlapped %.3f ms, pipeline bubble %.3f ms (%.1f%%)\n", r->jobs[j].name, s->step_time_s * 1e3,
            s->steps, s->steps == 1 ? "" : "s", s->compute_s * 1e3, s->exposed_comm_s * 1e3, s->overlap_s * 1e3, s->bubble_s * 1e3,
            s->bubble_fraction * 100);
    char *by = fab_report_purposes(r, j, s->steps);
    fprintf(out, "  collectives %s\n", by);
    g_free(by);
  }
}

/* The nccl-tests tables of the collectives tagged "nccl-tests", as the real
** tool prints them (the type named as workload.dtype names it). */
static void nccltests(const FabScenario *sc, const FabResults *r, FILE *out) {
  const char *dtype = fab_cfg_scalar(fab_cfg_get(fab_cfg_get(fab_cfg_root(sc->cfg), "workload"), "dtype"));
  GPtrArray *tables = fab_nccltests_from_results(r, dtype);
  for (guint i = 0; i < tables->len; i++) {
    char *s = fab_nccltests_format(tables->pdata[i]);
    fprintf(out, "\n%s", s);
    g_free(s);
  }
  g_ptr_array_free(tables, TRUE);
}

void fab_report_text(const FabScenario *sc, const FabResults *r, const char *hdf5, FILE *out) {
  head(sc, r, out);
  collectives(r, out);
  steps(r, out);
  if (hdf5) fprintf(out, "  hdf5        %s\n", hdf5);
  if (r->failure) fprintf(out, "  FAILED      %s\n", r->failure);
  nccltests(sc, r, out);
}

/* The queue sampler. See sampler.h. */
#include "sampler.h"
#include <string.h>

struct FabSampler {
  FabElem el;
  FabTopology *topo;
  fab_time_t interval;
  uint32_t ncols;
  FabPort **cols;           /* every switch port */
  uint32_t nprio;           /* per-priority depths recorded when > 1 */
  const FabFlow *flows;
  uint32_t nflows;
  bool sample_rates;        /* few enough flows to sample every flow's rate */
  bool (*finished)(void *ctx);
  void *ctx;
  GArray *t, *depth;        /* fab_time_t, u32 [sample][port] */
  GArray *depth_prio;       /* u32 [sample][port][prio] */
  GArray *rate;             /* u64 [sample][flow], bits/s */
  GArray *link_bytes;       /* u64 [sample][link]: wire bytes each link has sent so far */
};

static void sample(FabEngine *eng, void *self, uint64_t arg);
static const FabOps sampler_ops = {"sampler", sample};

void fab_port_name(char buf[FAB_FIELD_NAME_LEN], const FabPort *pt) {
  g_snprintf(buf, FAB_FIELD_NAME_LEN, "%s:p%u", pt->owner->name, pt->index);
}

FabSampler *fab_sampler_new(FabTopology *topo, fab_time_t interval, uint32_t nprio, const FabFlow *flows,
                            uint32_t nflows, bool (*finished)(void *ctx), void *ctx) {
  FabSampler *s = g_new0(FabSampler, 1);
  fab_elem_init(&s->el, &sampler_ops);
  s->topo = topo;
  s->interval = interval;
  s->nprio = nprio;
  s->flows = flows;
  s->nflows = nflows;
  s->sample_rates = nflows <= FAB_RATE_FLOWS;
  s->finished = finished;
  s->ctx = ctx;
  for (uint32_t w = 0; w < topo->nswitches; w++) s->ncols += fab_switch_nports(topo->switches[w]);
  s->cols = g_new(FabPort *, s->ncols ? s->ncols : 1);
  uint32_t c = 0;
  for (uint32_t w = 0; w < topo->nswitches; w++)
    for (uint32_t p = 0; p < fab_switch_nports(topo->switches[w]); p++)
      s->cols[c++] = fab_switch_port_at(topo->switches[w], p);
  s->t = g_array_new(FALSE, FALSE, sizeof(fab_time_t));
  s->depth = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  s->depth_prio = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  s->rate = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  s->link_bytes = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  return s;
}

void fab_sampler_free(FabSampler *s) {
  if (!s) return;
  g_free(s->cols);
  if (s->t) g_array_free(s->t, TRUE);
  if (s->depth) g_array_free(s->depth, TRUE);
  if (s->depth_prio) g_array_free(s->depth_prio, TRUE);
  if (s->rate) g_array_free(s->rate, TRUE);
  if (s->link_bytes) g_array_free(s->link_bytes, TRUE);
  g_free(s);
}

FabElem *fab_sampler_elem(FabSampler *s) { return &s->el; }

void fab_sampler_start(FabEngine *eng, FabSampler *s) { fab_engine_at(eng, 0, s, 0); }

static void sample_link(FabPort *pt, void *ctx) { g_array_append_val((GArray *)ctx, pt->tx_bytes); }

static void sample(FabEngine *eng, void *self, uint64_t arg) {
  FabSampler *s = self;
  g_array_append_val(s->t, eng->now);
  for (uint32_t c = 0; c < s->ncols; c++) {
    uint32_t d = (uint32_t)MIN(s->cols[c]->qbytes, UINT32_MAX);
    g_array_append_val(s->depth, d);
    for (uint32_t q = 0; s->nprio > 1 && q < s->nprio; q++) {
      uint32_t dq = (uint32_t)MIN(s->cols[c]->q[q].bytes, UINT32_MAX);
      g_array_append_val(s->depth_prio, dq);
    }
  }
  for (uint32_t i = 0; s->sample_rates && i < s->nflows; i++) { /* a flow sends from its start until all is acked */
    const FabFlow *f = &s->flows[i];
    uint64_t bps = f->start <= eng->now && !f->acked && f->start != FAB_TIME_MAX ? fab_flow_rate(f) : 0;
    g_array_append_val(s->rate, bps);
  }
  fab_topology_foreach_port(s->topo, sample_link, s->link_bytes);
  if (!s->finished(s->ctx)) fab_engine_after(eng, s->interval, s, 0);
}

void fab_sampler_take(FabSampler *s, FabQueueSeries *q) {
  q->interval = s->interval;
  q->n_ports = s->ncols;
  q->port = g_malloc0((size_t)FAB_FIELD_NAME_LEN * (s->ncols ? s->ncols : 1));
  for (uint32_t c = 0; c < s->ncols; c++) fab_port_name(q->port[c], s->cols[c]);
  q->n_samples = s->t->len;
  q->t = (fab_time_t *)(void *)g_array_free(s->t, FALSE);
  q->depth = (uint32_t *)(void *)g_array_free(s->depth, FALSE);
  q->n_prio = s->nprio > 1 ? s->nprio : 0;
  q->depth_prio = (uint32_t *)(void *)g_array_free(s->depth_prio, FALSE);
  q->flow_rate = s->sample_rates ? (uint64_t *)(void *)g_array_free(s->rate, FALSE) : NULL;
  if (!s->sample_rates) g_array_free(s->rate, TRUE);
  q->link_bytes = (uint64_t *)(void *)g_array_free(s->link_bytes, FALSE);
  s->t = s->depth = s->depth_prio = s->rate = s->link_bytes = NULL;
}

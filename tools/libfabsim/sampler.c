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
  const FabFlow *(*flow)(void *ctx, uint32_t i);
  uint32_t nflows;
  bool sample_rates;        /* few enough flows to sample every flow's rate */
  bool (*finished)(void *ctx);
  void *ctx;
  GArray *t, *depth;        /* fab_time_t, u32 [sample][port] */
  GArray *depth_prio;       /* u32 [sample][port][prio] */
  GArray *rate;             /* u64 [sample][flow], bits/s */
  GArray *link_bytes;       /* u64 [sample][link]: wire bytes each link has sent so far */
  uint64_t max_bytes;       /* what the samples may take; beyond it every other one goes */
};

static void sample(FabEngine *eng, void *self, uint64_t arg);
static const FabOps sampler_ops = {"sampler", sample};

void fab_port_name(char buf[FAB_FIELD_NAME_LEN], const FabPort *pt) {
  g_snprintf(buf, FAB_FIELD_NAME_LEN, "%s:p%u", pt->owner->name, pt->index);
}

/* ---- layers ---------------------------------------------------------------- */

const char *const fab_layer_names[FAB_LAYER_N] = {"fabric", "nic", "pcie", "nvlink"};

/* What a node is; the map holds switches only, so an endpoint's NIC is NODE_ENDPOINT (absent). */
enum { NODE_ENDPOINT, NODE_NETWORK, NODE_PCIE, NODE_NVSWITCH };

struct FabLayers {
  GHashTable *kind; /* FabNode * -> NODE_* (switches only) */
};

FabLayers *fab_layers_new(const FabTopology *t) {
  FabLayers *l = g_new0(FabLayers, 1);
  l->kind = g_hash_table_new(NULL, NULL);
  /* switches[0 .. nnet) are the network; the rest PCIe elements, except the NVSwitches */
  for (uint32_t s = 0; s < t->nswitches; s++)
    g_hash_table_insert(l->kind, fab_switch_node(t->switches[s]),
                        GUINT_TO_POINTER(s < t->nnet ? NODE_NETWORK : NODE_PCIE));
  for (uint32_t d = 0; d < t->nnvs; d++)
    g_hash_table_insert(l->kind, fab_switch_node(t->nvs[d]), GUINT_TO_POINTER(NODE_NVSWITCH));
  return l;
}

void fab_layers_free(FabLayers *l) {
  if (!l) return;
  g_hash_table_destroy(l->kind);
  g_free(l);
}

static unsigned node_kind(const FabLayers *l, const FabNode *n) {
  return n ? GPOINTER_TO_UINT(g_hash_table_lookup(l->kind, n)) : NODE_ENDPOINT;
}

FabLayer fab_layers_of(const FabLayers *l, const FabPort *pt) {
  unsigned a = node_kind(l, pt->owner), b = node_kind(l, pt->peer ? pt->peer->owner : NULL);
  if (a == NODE_NVSWITCH || b == NODE_NVSWITCH) return FAB_LAYER_NVLINK;
  if (a == NODE_NETWORK && b == NODE_NETWORK) return FAB_LAYER_FABRIC;
  if (a == NODE_NETWORK || b == NODE_NETWORK) return FAB_LAYER_NIC; /* a host NIC, or a GPU node's NIC port */
  return FAB_LAYER_PCIE;                                            /* a GPU and its PCIe element */
}

FabSampler *fab_sampler_new(FabTopology *topo, fab_time_t interval, uint32_t nprio, uint32_t nflows,
                            const FabFlow *(*flow)(void *ctx, uint32_t i), bool (*finished)(void *ctx), void *ctx) {
  FabSampler *s = g_new0(FabSampler, 1);
  fab_elem_init(&s->el, &sampler_ops);
  s->topo = topo;
  s->interval = interval;
  s->nprio = nprio;
  s->flow = flow;
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
  s->max_bytes = UINT64_MAX;
  return s;
}

void fab_sampler_set_max_bytes(FabSampler *s, uint64_t bytes) { s->max_bytes = MAX(bytes, 1); }

uint64_t fab_sampler_row_bytes(const FabSampler *s) {
  uint64_t links = 0;
  for (uint32_t w = 0; w < s->topo->nswitches; w++) links += fab_switch_nports(s->topo->switches[w]);
  links += s->topo->nhosts * 2; /* NIC ports, NVLink ports: at most two per endpoint */
  return sizeof(fab_time_t) + (uint64_t)s->ncols * sizeof(uint32_t) * (1 + (s->nprio > 1 ? s->nprio : 0)) +
         (s->sample_rates ? (uint64_t)s->nflows * sizeof(uint64_t) : 0) + links * sizeof(uint64_t);
}

fab_time_t fab_sampler_interval(const FabSampler *s) { return s->interval; }

/* Keep the rows at multiples of twice the interval (every other row: rows
** are at multiples of the interval from time 0), and double it. */
static void thin(FabSampler *s) {
  fab_time_t iv2 = s->interval * 2;
  guint rows = s->t->len, w = 0;
  GArray *arr[] = {s->depth, s->depth_prio, s->rate, s->link_bytes};
  guint per[4];
  for (int a = 0; a < 4; a++) per[a] = rows ? arr[a]->len / rows : 0;
  for (guint i = 0; i < rows; i++) {
    if (g_array_index(s->t, fab_time_t, i) % iv2) continue;
    g_array_index(s->t, fab_time_t, w) = g_array_index(s->t, fab_time_t, i);
    for (int a = 0; a < 4; a++)
      if (per[a])
        memmove(arr[a]->data + (size_t)w * per[a] * g_array_get_element_size(arr[a]),
                arr[a]->data + (size_t)i * per[a] * g_array_get_element_size(arr[a]),
                (size_t)per[a] * g_array_get_element_size(arr[a]));
    w++;
  }
  g_array_set_size(s->t, w);
  for (int a = 0; a < 4; a++) g_array_set_size(arr[a], (guint)w * per[a]);
  s->interval = iv2;
}

static uint64_t taken(const FabSampler *s) {
  return (uint64_t)s->t->len * sizeof(fab_time_t) + (uint64_t)s->depth->len * sizeof(uint32_t) +
         (uint64_t)s->depth_prio->len * sizeof(uint32_t) + (uint64_t)s->rate->len * sizeof(uint64_t) +
         (uint64_t)s->link_bytes->len * sizeof(uint64_t);
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

bool fab_sampler_look(FabSampler *s, fab_time_t now, fab_time_t *next) {
  *next = (now / s->interval + 1) * s->interval;
  if (now % s->interval) return true; /* scheduled before the interval doubled: move onto the new grid */
  g_array_append_val(s->t, now);
  for (uint32_t c = 0; c < s->ncols; c++) {
    uint32_t d = (uint32_t)MIN(s->cols[c]->qbytes, UINT32_MAX);
    g_array_append_val(s->depth, d);
    for (uint32_t q = 0; s->nprio > 1 && q < s->nprio; q++) {
      uint32_t dq = (uint32_t)MIN(s->cols[c]->q[q].bytes, UINT32_MAX);
      g_array_append_val(s->depth_prio, dq);
    }
  }
  for (uint32_t i = 0; s->sample_rates && i < s->nflows; i++) { /* a flow sends from its start until all is acked */
    const FabFlow *f = s->flow(s->ctx, i);
    uint64_t bps = f && f->start <= now && !f->acked ? fab_flow_rate(f) : 0;
    g_array_append_val(s->rate, bps);
  }
  fab_topology_foreach_port(s->topo, sample_link, s->link_bytes);
  while (taken(s) > s->max_bytes && s->t->len > 1) thin(s);
  *next = (now / s->interval + 1) * s->interval; /* on the grid as it is now */
  return !s->finished(s->ctx);
}

static void sample(FabEngine *eng, void *self, uint64_t arg) {
  FabSampler *s = self;
  fab_time_t next;
  (void)arg;
  if (fab_sampler_look(s, eng->now, &next)) fab_engine_at(eng, next, s, 0);
}

/* ---- a run over processes: columns by their owners --------------------------- */

typedef struct Col {
  uint8_t kind;
  uint32_t col;
} Col;

/* Column `col` of an array of `per` values of `size` bytes per row: to out (pack) or from buf (unpack). */
static void col_copy(GArray *a, guint rows, guint per, guint width, guint col, GByteArray *out, const uint8_t **in) {
  size_t size = g_array_get_element_size(a);
  for (guint i = 0; i < rows; i++) {
    guint8 *at = (guint8 *)a->data + ((size_t)i * per + (size_t)col * width) * size;
    if (out) {
      g_byte_array_append(out, at, (guint)(width * size));
    } else {
      memcpy(at, *in, width * size);
      *in += width * size;
    }
  }
}

static void add_port(FabPort *pt, void *ctx) { g_ptr_array_add(ctx, pt); }

/* Every column of kind `k` `owns` names: its number, then its values. */
static void pack_cols(FabSampler *s, int k, uint32_t n, FabPort **pts, FabSampleOwns owns, void *ctx,
                      GByteArray *out) {
  guint rows = s->t->len, np = s->nprio > 1 ? s->nprio : 0;
  for (uint32_t c = 0; c < n; c++) {
    if (!owns(ctx, k, c, pts ? pts[c] : NULL)) continue;
    Col h = {(uint8_t)k, c};
    g_byte_array_append(out, (const guint8 *)&h, sizeof h);
    if (k == FAB_SAMPLE_PORT) {
      col_copy(s->depth, rows, s->ncols, 1, c, out, NULL);
      if (np) col_copy(s->depth_prio, rows, s->ncols * np, np, c, out, NULL);
    } else if (k == FAB_SAMPLE_FLOW) {
      col_copy(s->rate, rows, s->nflows, 1, c, out, NULL);
    } else {
      col_copy(s->link_bytes, rows, rows ? s->link_bytes->len / rows : 0, 1, c, out, NULL);
    }
  }
}

void fab_sampler_pack(FabSampler *s, FabSampleOwns owns, void *ctx, GByteArray *out) {
  GPtrArray *links = g_ptr_array_new();
  fab_topology_foreach_port(s->topo, add_port, links);
  pack_cols(s, FAB_SAMPLE_PORT, s->ncols, s->cols, owns, ctx, out);
  if (s->sample_rates) pack_cols(s, FAB_SAMPLE_FLOW, s->nflows, NULL, owns, ctx, out);
  pack_cols(s, FAB_SAMPLE_LINK, links->len, (FabPort **)links->pdata, owns, ctx, out);
  g_ptr_array_free(links, TRUE);
}

void fab_sampler_unpack(FabSampler *s, const uint8_t *buf, size_t len) {
  const uint8_t *p = buf, *end = buf + len;
  guint rows = s->t->len, np = s->nprio > 1 ? s->nprio : 0;
  while (p + sizeof(Col) <= end) {
    Col h;
    memcpy(&h, p, sizeof h);
    p += sizeof h;
    if (h.kind == FAB_SAMPLE_PORT) {
      col_copy(s->depth, rows, s->ncols, 1, h.col, NULL, &p);
      if (np) col_copy(s->depth_prio, rows, s->ncols * np, np, h.col, NULL, &p);
    } else if (h.kind == FAB_SAMPLE_FLOW) {
      col_copy(s->rate, rows, s->nflows, 1, h.col, NULL, &p);
    } else {
      col_copy(s->link_bytes, rows, rows ? s->link_bytes->len / rows : 0, 1, h.col, NULL, &p);
    }
  }
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

/* ---- the fast-forward ---------------------------------------------------------- */

fab_time_t fab_sampler_jump(FabSampler *s, fab_time_t at, fab_time_t to) {
  guint rows = s->t->len;
  if (rows == 0 || at >= to) return at;
  fab_time_t t0 = g_array_index(s->t, fab_time_t, rows - 1);
  /* the links' bytes now (at `to`, the jump's counters added), and at the last row */
  GArray *now = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  fab_topology_foreach_port(s->topo, sample_link, now);
  guint nl = now->len, nd = s->ncols, np = s->nprio > 1 ? s->ncols * s->nprio : 0,
        nr = s->sample_rates ? s->nflows : 0;
  uint64_t *last = g_memdup2((uint64_t *)(void *)s->link_bytes->data + (size_t)(rows - 1) * nl, nl * sizeof(uint64_t));
  uint32_t *depth = g_memdup2((uint32_t *)(void *)s->depth->data + (size_t)(rows - 1) * nd, MAX(nd, 1u) * sizeof(uint32_t));
  uint32_t *dprio = np ? g_memdup2((uint32_t *)(void *)s->depth_prio->data + (size_t)(rows - 1) * np, np * sizeof(uint32_t)) : NULL;
  uint64_t *rate = nr ? g_memdup2((uint64_t *)(void *)s->rate->data + (size_t)(rows - 1) * nr, nr * sizeof(uint64_t)) : NULL;
  fab_time_t t = at;
  while (t < to) {
    if (t % s->interval == 0) { /* the queues as last seen (a steady state's), the links' bytes on a line */
      g_array_append_val(s->t, t);
      g_array_append_vals(s->depth, depth, nd);
      if (np) g_array_append_vals(s->depth_prio, dprio, np);
      if (nr) g_array_append_vals(s->rate, rate, nr);
      for (guint i = 0; i < nl; i++) {
        uint64_t a = last[i], b = g_array_index(now, uint64_t, i);
        uint64_t v = b > a ? a + (uint64_t)((unsigned __int128)(b - a) * (t - t0) / (to - t0)) : a;
        g_array_append_val(s->link_bytes, v);
      }
      while (taken(s) > s->max_bytes && s->t->len > 1) thin(s);
    }
    t = (t / s->interval + 1) * s->interval;
  }
  g_free(last);
  g_free(depth);
  g_free(dprio);
  g_free(rate);
  g_array_free(now, TRUE);
  return t;
}

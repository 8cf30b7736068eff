/* How one simulation would be cut over N processes. See partition.h. */
#include "partition.h"
#include <string.h>

/* The topology as a graph: node k is endpoint k's NIC (k < nhosts) or
** switch k - nhosts; each node's ports in order. */
typedef struct Graph {
  const FabTopology *t;
  uint32_t n;
  GHashTable *index; /* FabNode * -> node number + 1 */
} Graph;

static FabNode *node_at(const Graph *g, uint32_t k) {
  const FabTopology *t = g->t;
  return k < t->nhosts ? &t->nics[k].node : fab_switch_node(t->switches[k - t->nhosts]);
}

static uint32_t nports(const Graph *g, uint32_t k) {
  const FabTopology *t = g->t;
  if (k >= t->nhosts) return fab_switch_nports(t->switches[k - t->nhosts]);
  return t->nics[k].cfg.nvl_domain ? 2 : 1;
}

static FabPort *port_at(const Graph *g, uint32_t k, uint32_t i) {
  const FabTopology *t = g->t;
  if (k >= t->nhosts) return fab_switch_port_at(t->switches[k - t->nhosts], i);
  return i ? &t->nics[k].nvl : &t->nics[k].port;
}

/* The node at the far end of node k's port i, or UINT32_MAX (not connected). */
static uint32_t peer_of(const Graph *g, uint32_t k, uint32_t i) {
  const FabPort *pt = port_at(g, k, i);
  if (!pt->peer) return UINT32_MAX;
  return GPOINTER_TO_UINT(g_hash_table_lookup(g->index, pt->peer->owner)) - 1u;
}

static bool network(const Graph *g, uint32_t k) { return k >= g->t->nhosts && k - g->t->nhosts < g->t->nnet; }

static uint32_t find(uint32_t *up, uint32_t k) {
  while (up[k] != k) k = up[k] = up[up[k]];
  return k;
}

/* The parts that may not be split: nodes joined by links that touch no
** network switch. part[k] = its part's number, in the order of the parts'
** first endpoint; returns how many. */
static uint32_t parts_of(const Graph *g, uint32_t *part) {
  uint32_t *up = g_new(uint32_t, g->n);
  for (uint32_t k = 0; k < g->n; k++) up[k] = k;
  for (uint32_t k = 0; k < g->n; k++) {
    if (network(g, k)) continue;
    for (uint32_t i = 0; i < nports(g, k); i++) {
      uint32_t j = peer_of(g, k, i);
      if (j == UINT32_MAX || network(g, j)) continue;
      uint32_t a = find(up, k), b = find(up, j);
      if (a != b) up[MAX(a, b)] = MIN(a, b); /* the root is the smallest node: an endpoint */
    }
  }
  uint32_t nparts = 0, *num = g_new(uint32_t, g->n);
  for (uint32_t k = 0; k < g->n; k++) num[k] = UINT32_MAX;
  for (uint32_t k = 0; k < g->n; k++) {
    if (network(g, k)) {
      part[k] = UINT32_MAX;
      continue;
    }
    uint32_t r = find(up, k);
    if (num[r] == UINT32_MAX) num[r] = nparts++;
    part[k] = num[r];
  }
  g_free(num);
  g_free(up);
  return nparts;
}

static inline uint64_t off_by(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

/* Cut parts [0, nparts) into n runs of about equal weight: first[r] is rank
** r's first part (first[n] = nparts). Returns whether every cut fell on a
** boundary between leaf groups (key[i - 1] != key[i]). */
static bool cut_runs(const uint64_t *w, const uint32_t *key, uint32_t nparts, uint32_t n, uint32_t *first) {
  uint64_t total = 0, acc = 0;
  for (uint32_t i = 0; i < nparts; i++) total += w[i];
  uint64_t *before = g_new(uint64_t, nparts + 1); /* weight of parts [0, i) */
  for (uint32_t i = 0; i <= nparts; i++) {
    before[i] = acc;
    if (i < nparts) acc += w[i];
  }
  bool grouped = true;
  first[0] = 0;
  first[n] = nparts;
  for (uint32_t r = 1; r < n; r++) {
    uint64_t want = total * r / n, slack = total / (4 * (uint64_t)n);
    uint32_t lo = first[r - 1] + 1, hi = nparts - (n - r), at = lo; /* every rank keeps a part */
    for (uint32_t i = lo; i <= hi; i++) /* the cut nearest the even share */
      if (off_by(before[i], want) < off_by(before[at], want)) at = i;
    uint32_t best = UINT32_MAX;
    for (uint32_t i = lo; i <= hi; i++) /* the group boundary nearest it, within the slack */
      if (key[i - 1] != key[i] && off_by(before[i], want) <= slack &&
          (best == UINT32_MAX || off_by(before[i], want) < off_by(before[best], want)))
        best = i;
    if (best == UINT32_MAX) grouped = false;
    first[r] = best == UINT32_MAX ? at : best;
  }
  g_free(before);
  return grouped;
}

/* The rank for a switch of w ports with cnt[r] links into rank r: the one
** with the most links whose weight stays within `cap`, ties to the lighter
** rank and then the lower; the lightest when none stays within. */
static uint32_t choose(const FabPartition *p, const uint32_t *cnt, uint32_t w, uint64_t cap) {
  uint32_t best = UINT32_MAX, light = 0;
  for (uint32_t r = 0; r < p->nranks; r++) {
    if (p->weight[r] < p->weight[light]) light = r;
    if (p->weight[r] + w > cap) continue;
    if (best == UINT32_MAX || cnt[r] > cnt[best] || (cnt[r] == cnt[best] && p->weight[r] < p->weight[best])) best = r;
  }
  return best == UINT32_MAX ? light : best;
}

/* The network switches, nearest the endpoints first (breadth first), each
** to the rank it has the most links into, as long as that rank stays within
** a tenth above an even share of all the ports (else the next). */
static void place_switches(const Graph *g, FabPartition *p) {
  const FabTopology *t = g->t;
  uint64_t total = 0;
  for (uint32_t k = 0; k < g->n; k++) total += nports(g, k);
  const uint64_t cap = total * 11 / (10 * (uint64_t)p->nranks);
  uint32_t *cnt = g_new0(uint32_t, p->nranks);
  GArray *layer = g_array_new(FALSE, FALSE, sizeof(uint32_t)), *next = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  bool *queued = g_new0(bool, g->n);
  for (uint32_t s = 0; s < t->nnet; s++) {
    uint32_t k = t->nhosts + s;
    for (uint32_t i = 0; i < nports(g, k); i++) {
      uint32_t j = peer_of(g, k, i);
      if (j != UINT32_MAX && !network(g, j)) {
        queued[k] = true;
        g_array_append_val(layer, k);
        break;
      }
    }
  }
  while (layer->len) {
    g_array_set_size(next, 0);
    for (guint x = 0; x < layer->len; x++) {
      uint32_t k = g_array_index(layer, uint32_t, x), best = 0;
      memset(cnt, 0, p->nranks * sizeof *cnt);
      for (uint32_t i = 0; i < nports(g, k); i++) {
        uint32_t j = peer_of(g, k, i);
        if (j == UINT32_MAX) continue;
        if (p->rank[j] != UINT32_MAX) cnt[p->rank[j]]++;
        else if (network(g, j) && !queued[j]) {
          queued[j] = true;
          g_array_append_val(next, j);
        }
      }
      best = choose(p, cnt, nports(g, k), cap);
      p->rank[k] = best;
      p->weight[best] += nports(g, k);
      p->switches[best]++;
    }
    GArray *tmp = layer;
    layer = next;
    next = tmp;
  }
  for (uint32_t s = 0; s < t->nnet; s++) { /* none in reach of an endpoint: to the lightest rank */
    uint32_t k = t->nhosts + s, best;
    if (p->rank[k] != UINT32_MAX) continue;
    memset(cnt, 0, p->nranks * sizeof *cnt);
    best = choose(p, cnt, nports(g, k), 0); /* the lightest */
    p->rank[k] = best;
    p->weight[best] += nports(g, k);
    p->switches[best]++;
  }
  g_free(queued);
  g_array_free(layer, TRUE);
  g_array_free(next, TRUE);
  g_free(cnt);
}

/* The cut links and the lookahead. */
static void measure_cut(const Graph *g, FabPartition *p) {
  p->cut = 0;
  p->lookahead = FAB_TIME_MAX;
  p->lookahead_link[0] = 0;
  for (uint32_t k = 0; k < g->n; k++)
    for (uint32_t i = 0; i < nports(g, k); i++) {
      uint32_t j = peer_of(g, k, i);
      if (j == UINT32_MAX || j < k || p->rank[j] == p->rank[k]) continue; /* each link once, from its lower node */
      const FabPort *pt = port_at(g, k, i);
      fab_time_t lat = MIN(pt->latency, pt->peer->latency);
      p->cut++;
      if (lat < p->lookahead) {
        p->lookahead = lat;
        g_snprintf(p->lookahead_link, sizeof p->lookahead_link, "%s-%s", node_at(g, k)->name, node_at(g, j)->name);
      }
    }
}

/* Parts perm[0..nparts) (the identity) in stable order of pkey: perm[i] is the i-th part. */
static void order_parts(const uint32_t *pkey, uint32_t nparts, uint32_t *perm) {
  for (uint32_t i = 1; i < nparts; i++) { /* insertion: parts come nearly sorted (a node per replica and stage) */
    uint32_t v = perm[i], j = i;
    while (j > 0 && pkey[perm[j - 1]] > pkey[v]) {
      perm[j] = perm[j - 1];
      j--;
    }
    perm[j] = v;
  }
}

uint32_t *fab_partition_replica_keys(const FabDag *d, uint32_t nhosts, const char **job) {
  for (guint j = 0; d && j < d->jobs->len; j++) {
    const FabJobDef *jd = &g_array_index(d->jobs, FabJobDef, j);
    if (!jd->steps || jd->pp < 2 || jd->nranks % jd->pp) continue;
    uint32_t per_stage = jd->nranks / jd->pp, *key = g_new(uint32_t, MAX(nhosts, 1u));
    for (uint32_t e = 0; e < nhosts; e++) key[e] = UINT32_MAX;
    for (uint32_t i = 0; i < jd->nranks; i++) /* rank i's place in its stage: tp_i + tp x dp_i (training.h) */
      if (jd->ranks[i] < nhosts) key[jd->ranks[i]] = MIN(key[jd->ranks[i]], i % per_stage);
    if (job) *job = jd->name;
    return key;
  }
  return NULL;
}

gboolean fab_partition_make_for(const FabTopology *t, const FabDag *d, uint32_t n, FabPartition *out, GError **err) {
  const char *job = NULL;
  uint32_t *key = fab_partition_replica_keys(d, t->nhosts, &job);
  gboolean ok = fab_partition_make_ordered(t, n, key, job, out, err);
  g_free(key);
  return ok;
}

gboolean fab_partition_make(const FabTopology *t, uint32_t n, FabPartition *out, GError **err) {
  return fab_partition_make_ordered(t, n, NULL, NULL, out, err);
}

gboolean fab_partition_make_ordered(const FabTopology *t, uint32_t n, const uint32_t *ep_key, const char *job,
                                    FabPartition *out, GError **err) {
  g_assert(n >= 1);
  memset(out, 0, sizeof *out);
  Graph g = {t, t->nhosts + t->nswitches, g_hash_table_new(NULL, NULL)};
  for (uint32_t k = 0; k < g.n; k++) g_hash_table_insert(g.index, node_at(&g, k), GUINT_TO_POINTER(k + 1));
  uint32_t *part = g_new(uint32_t, g.n);
  uint32_t nparts = parts_of(&g, part);
  if (nparts < n) {
    g_set_error(err, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                "--partition %u: the fabric has %u part%s that may not be split (an NVLink domain with its nodes, "
                "or a host): at most %u rank%s",
                n, nparts, nparts == 1 ? "" : "s", nparts, nparts == 1 ? "" : "s");
    g_free(part);
    g_hash_table_destroy(g.index);
    return FALSE;
  }
  uint64_t *w = g_new0(uint64_t, nparts);
  uint32_t *key = g_new(uint32_t, nparts), *first = g_new(uint32_t, n + 1);
  for (uint32_t i = 0; i < nparts; i++) key[i] = UINT32_MAX;
  for (uint32_t k = 0; k < g.n; k++) {
    if (part[k] == UINT32_MAX) continue;
    w[part[k]] += nports(&g, k);
    for (uint32_t i = 0; i < nports(&g, k); i++) { /* its leaf group: the first network switch it reaches */
      uint32_t j = peer_of(&g, k, i);
      if (j != UINT32_MAX && network(&g, j)) key[part[k]] = MIN(key[part[k]], j);
    }
  }
  out->groups = nparts ? 1 : 0;
  for (uint32_t i = 1; i < nparts; i++) out->groups += key[i] != key[i - 1];
  out->nranks = n;
  out->nnodes = g.n;
  out->nparts = nparts;
  out->rank = g_new(uint32_t, g.n);
  out->weight = g_new0(uint64_t, n);
  out->endpoints = g_new0(uint32_t, n);
  out->switches = g_new0(uint32_t, n);
  uint32_t *perm = g_new(uint32_t, nparts), *rank_of_part = g_new(uint32_t, nparts), *pkey = NULL;
  const uint32_t *prefer = key; /* the boundaries cuts move to: leaf groups, or replicas */
  for (uint32_t i = 0; i < nparts; i++) perm[i] = i;
  if (ep_key) { /* the job's replicas in turn: parts by their endpoints' least place in a stage */
    pkey = g_new(uint32_t, nparts);
    for (uint32_t i = 0; i < nparts; i++) pkey[i] = UINT32_MAX;
    for (uint32_t e = 0; e < t->nhosts; e++)
      if (part[e] != UINT32_MAX) pkey[part[e]] = MIN(pkey[part[e]], ep_key[e]);
    order_parts(pkey, nparts, perm);
    prefer = pkey;
    g_strlcpy(out->replicas_of, job ? job : "?", sizeof out->replicas_of);
  }
  uint64_t *wp = g_new(uint64_t, nparts);
  uint32_t *kp = g_new(uint32_t, nparts);
  for (uint32_t i = 0; i < nparts; i++) {
    wp[i] = w[perm[i]];
    kp[i] = prefer[perm[i]];
  }
  out->by_group = cut_runs(wp, kp, nparts, n, first);
  g_free(wp);
  g_free(kp);
  g_free(pkey);
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t i = first[r]; i < first[r + 1]; i++) rank_of_part[perm[i]] = r;
  g_free(perm);
  for (uint32_t k = 0; k < g.n; k++) {
    out->rank[k] = part[k] == UINT32_MAX ? UINT32_MAX : rank_of_part[part[k]];
    if (part[k] == UINT32_MAX) continue;
    out->weight[out->rank[k]] += nports(&g, k);
    if (k < t->nhosts) out->endpoints[out->rank[k]]++;
  }
  place_switches(&g, out);
  measure_cut(&g, out);
  g_free(rank_of_part);
  g_free(first);
  g_free(key);
  g_free(w);
  g_free(part);
  g_hash_table_destroy(g.index);
  return TRUE;
}

void fab_partition_clear(FabPartition *p) {
  g_free(p->rank);
  g_free(p->weight);
  g_free(p->endpoints);
  g_free(p->switches);
  memset(p, 0, sizeof *p);
}

/* The partition whose thread reports op j done: a flow's receiver's (its
** send: its sender's), a compute op's rank's; for a mark, w->done[j]. */
static uint8_t reporter(const FabPartition *p, const FabDag *d, const FabDeq *done, uint32_t dep) {
  uint32_t j = dep & ~FAB_DEP_SENT;
  const FabOp *od = fab_dag_op(d, j);
  if (dep & FAB_DEP_SENT) return (uint8_t)p->rank[od->src];
  return *(const uint8_t *)fab_deq_at(done, j);
}

uint32_t fab_partition_walk(const FabPartition *p, const FabDag *d, uint32_t from, uint32_t to, FabDeq *done,
                            const FabPartWalk *w, FabPartDeps *out) {
  uint32_t first = FAB_OP_NONE;
  for (uint32_t i = from; i < to; i++) {
    const FabOp *o = fab_dag_op(d, i);
    bool flow = o->kind <= FAB_OP_NVLS, mark = o->kind == FAB_OP_MARK;
    bool own = mark && o->pre >= w->need; /* done by an event on its rank's side, far enough ahead */
    uint8_t home = (uint8_t)p->rank[o->src], m = mark && (o->start || !o->ndeps || own) ? home : FAB_PART_NONE;
    out->ops++;
    out->deps += o->ndeps;
    for (uint32_t k = 0; k < o->ndeps; k++) {
      uint32_t dep = fab_dag_dep(d, o, k);
      if ((dep & ~FAB_DEP_SENT) < done->first) continue; /* retired: long done */
      uint8_t q = reporter(p, d, done, dep);
      if (mark && !own) { /* a mark passes its reporters on to what waits for it */
        m = m == FAB_PART_NONE || m == q ? q : FAB_PART_MANY;
        continue;
      }
      if (q == home) continue;
      fab_time_t ahead = own ? o->pre : flow && !(dep & FAB_DEP_SENT) ? o->pre : 0;
      if (flow && k == 0 && o->mark == FAB_FLOW_RDV && w->ctrl) ahead = MAX(ahead, w->ctrl(w->ctx, o->dst, o->src));
      out->cross++;
      if (ahead < w->need) {
        out->short_++;
        if (first == FAB_OP_NONE) first = i;
        if (w->stop) return first;
      } else {
        out->min_ahead = MIN(out->min_ahead, ahead);
      }
    }
    *(uint8_t *)fab_deq_push(done) = mark ? (m == FAB_PART_NONE ? home : m) : flow ? (uint8_t)p->rank[o->dst] : home;
  }
  return first;
}

static void set_part(uint8_t *part_of, uint32_t nids, const FabElem *e, uint32_t rank) {
  uint32_t id = fab_elem_id(e);
  g_assert(id < nids && rank <= UINT8_MAX);
  part_of[id] = (uint8_t)rank;
}

uint8_t *fab_partition_elements(const FabPartition *p, const FabTopology *t, uint32_t nids) {
  uint8_t *part_of = g_new0(uint8_t, nids);
  for (uint32_t h = 0; h < t->nhosts; h++) {
    const FabNic *n = &t->nics[h];
    uint32_t r = p->rank[h];
    set_part(part_of, nids, &n->node.el, r);
    set_part(part_of, nids, &n->port.el, r);
    if (n->cfg.nvl_domain) set_part(part_of, nids, &n->nvl.el, r);
    set_part(part_of, nids, &t->gpus[h].el, r);
  }
  for (uint32_t s = 0; s < t->nswitches; s++) {
    FabSwitch *sw = t->switches[s];
    uint32_t r = p->rank[t->nhosts + s];
    set_part(part_of, nids, &fab_switch_node(sw)->el, r);
    for (uint32_t i = 0; i < fab_switch_nports(sw); i++) set_part(part_of, nids, &fab_switch_port_at(sw, i)->el, r);
  }
  return part_of;
}

/* "0-127" or "3" or "none". */
static char *endpoint_list(const FabPartition *p, uint32_t nhosts, uint32_t r) {
  GString *s = g_string_new(NULL);
  for (uint32_t e = 0; e < nhosts;) {
    if (p->rank[e] != r) {
      e++;
      continue;
    }
    uint32_t to = e;
    while (to + 1 < nhosts && p->rank[to + 1] == r) to++;
    if (s->len) g_string_append_c(s, ',');
    if (to == e) g_string_append_printf(s, "%u", e);
    else g_string_append_printf(s, "%u-%u", e, to);
    e = to + 1;
  }
  if (!s->len) g_string_append(s, "none");
  return g_string_free(s, FALSE);
}

char *fab_partition_report(const FabTopology *t, const FabPartition *p, const FabPartDeps *dp, bool unfolds) {
  GString *s = g_string_new(NULL);
  uint64_t total = 0;
  for (uint32_t r = 0; r < p->nranks; r++) total += p->weight[r];
  g_string_append_printf(s, "partition: %u rank%s; %u parts that may not be split (NVLink domains and nodes "
                         "whole) in %u leaf group%s%s\n", p->nranks, p->nranks == 1 ? "" : "s", p->nparts, p->groups,
                         p->groups == 1 ? " (every part's first network switch is the same)" : "s",
                         p->nranks < 2 || p->groups < 2 || p->replicas_of[0] ? ""
                         : p->by_group                  ? ", cut between them"
                                                        : ", cut inside some");
  if (p->replicas_of[0])
    g_string_append_printf(s, "order: by data-parallel replica of training job '%s' (each rank a share of every "
                           "pipeline stage), cut %s replicas\n", p->replicas_of,
                           p->by_group ? "between" : "inside some");
  g_string_append(s, "rank  endpoints  switches  ports  share  endpoint numbers\n");
  for (uint32_t r = 0; r < p->nranks; r++) {
    char *eps = endpoint_list(p, t->nhosts, r);
    g_string_append_printf(s, "%4u  %9u  %8u  %5" G_GUINT64_FORMAT "  %4.1f%%  %s\n", r, p->endpoints[r],
                           p->switches[r], p->weight[r], total ? 100.0 * (double)p->weight[r] / (double)total : 0.0,
                           eps);
    g_free(eps);
  }
  if (!p->cut)
    g_string_append(s, "cut: no link\n");
  else
    g_string_append_printf(s, "cut: %" G_GUINT64_FORMAT " link%s; lookahead %.3f us (the smallest latency of a cut "
                           "link, e.g. %s)\n", p->cut, p->cut == 1 ? "" : "s", fab_time_to_s(p->lookahead) * 1e6,
                           p->lookahead_link);
  g_string_append_printf(s, "dependencies between ranks: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " (of %"
                         G_GUINT64_FORMAT " operations%s); %" G_GUINT64_FORMAT " closer than the lookahead",
                         dp->cross, dp->deps, dp->ops, unfolds ? " made before the run; the rest are made as it runs"
                                                               : "", dp->short_);
  if (dp->min_ahead != FAB_TIME_MAX)
    g_string_append_printf(s, ", the others at least %.3f us", fab_time_to_s(dp->min_ahead) * 1e6);
  g_string_append(s, "\n");
  return g_string_free(s, FALSE);
}

/* Traces into the operation DAG. See trace.h. */
#include "trace.h"
#include <string.h>
#include "sim/config.h"

#define FAIL(...) (g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_VALUE, __VA_ARGS__), FALSE)

FabTrace *fab_trace_new(uint32_t nranks) {
  FabTrace *t = g_new0(FabTrace, 1);
  t->nranks = nranks;
  t->nodes = g_array_new(FALSE, TRUE, sizeof(FabTrNode));
  t->deps = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  t->groups = g_array_new(FALSE, TRUE, sizeof(FabTrGroup));
  t->group_by_name = g_hash_table_new(g_str_hash, g_str_equal);
  t->strs = g_string_chunk_new(1 << 12);
  return t;
}

void fab_trace_free(FabTrace *t) {
  if (!t) return;
  for (guint i = 0; i < t->groups->len; i++) g_free(g_array_index(t->groups, FabTrGroup, i).ranks);
  g_array_free(t->nodes, TRUE);
  g_array_free(t->deps, TRUE);
  g_array_free(t->groups, TRUE);
  g_hash_table_destroy(t->group_by_name);
  g_string_chunk_free(t->strs);
  g_free(t);
}

void fab_trace_add(FabTrace *t, const FabTrNode *n, const uint64_t *deps, uint32_t ndeps) {
  FabTrNode c = *n;
  c.dep0 = t->deps->len;
  c.ndeps = ndeps;
  if (ndeps) g_array_append_vals(t->deps, deps, ndeps);
  g_array_append_val(t->nodes, c);
}

uint32_t fab_trace_group_find(const FabTrace *t, const char *name) {
  gpointer v = g_hash_table_lookup(t->group_by_name, name);
  return v ? GPOINTER_TO_UINT(v) - 1 : FAB_TR_WORLD;
}

uint32_t fab_trace_group_add(FabTrace *t, const char *name, uint32_t *ranks, uint32_t n) {
  name = g_intern_string(name);
  g_assert(fab_trace_group_find(t, name) == FAB_TR_WORLD);
  FabTrGroup g = {name, n, ranks, false};
  g_array_append_val(t->groups, g);
  g_hash_table_insert(t->group_by_name, (gpointer)name, GUINT_TO_POINTER(t->groups->len));
  return t->groups->len - 1;
}

void fab_trace_scale_dp(FabTrace *t, uint32_t factor) {
  uint32_t n = t->nranks, ng = t->groups->len, nn = t->nodes->len;
  g_assert(factor >= 1 && (uint64_t)n * factor <= UINT32_MAX);
  if (factor == 1) return;
  uint32_t *copy_of = g_new(uint32_t, (size_t)ng * factor); /* (group, replica) -> group */
  for (uint32_t g = 0; g < ng; g++) {
    FabTrGroup *gr = &g_array_index(t->groups, FabTrGroup, g);
    if (gr->dp) { /* one group over every replica: member j of replica k is ranks[j] + k n */
      uint32_t *r = g_new(uint32_t, (size_t)gr->n * factor);
      for (uint32_t k = 0; k < factor; k++)
        for (uint32_t j = 0; j < gr->n; j++) r[k * gr->n + j] = gr->ranks[j] + k * n;
      g_free(gr->ranks);
      gr->ranks = r;
      gr->n *= factor;
      for (uint32_t k = 0; k < factor; k++) copy_of[g * factor + k] = g;
      continue;
    }
    copy_of[g * factor] = g;
    for (uint32_t k = 1; k < factor; k++) {
      gr = &g_array_index(t->groups, FabTrGroup, g); /* (the array may have moved) */
      uint32_t *r = g_new(uint32_t, gr->n);
      for (uint32_t j = 0; j < gr->n; j++) r[j] = gr->ranks[j] + k * n;
      char *name = g_strdup_printf("%s@%u", gr->name, k);
      uint32_t gn = gr->n;
      copy_of[g * factor + k] = fab_trace_group_add(t, name, r, gn);
      g_free(name);
    }
  }
  for (uint32_t k = 1; k < factor; k++)
    for (uint32_t i = 0; i < nn; i++) {
      FabTrNode c = g_array_index(t->nodes, FabTrNode, i);
      c.rank += k * n;
      if (c.kind == FAB_TR_COLL && c.group != FAB_TR_WORLD) c.group = copy_of[c.group * factor + k];
      if (c.kind == FAB_TR_SEND || c.kind == FAB_TR_RECV) c.group += k * n;
      uint32_t d0 = c.dep0; /* its own copy of the ids: a dependency resolves within its rank (index_nodes) */
      c.dep0 = t->deps->len;
      g_array_set_size(t->deps, c.dep0 + c.ndeps); /* (may move the array: indices after) */
      if (c.ndeps) memcpy(&g_array_index(t->deps, uint64_t, c.dep0), &g_array_index(t->deps, uint64_t, d0),
                          c.ndeps * sizeof(uint64_t));
      g_array_append_val(t->nodes, c);
    }
  g_free(copy_of);
  t->nranks = n * factor;
}

/* ---- building --------------------------------------------------------- */

/* A unit is what becomes ops at once: a compute node, a collective (its
** members' nodes) or a send/recv pair. */
typedef struct Unit {
  uint32_t first;   /* its nodes: Build.unit_nodes[first .. first + n) */
  uint32_t n;
  uint32_t waiting; /* of its nodes, those with dependencies not done */
} Unit;

typedef struct Build {
  const FabTrace *t;
  const FabTrEnv *env;
  FabDag *d;
  uint32_t nn;
  GHashTable **by_id;   /* per rank: id -> node index + 1 */
  uint32_t *left;       /* per node: dependencies not done */
  uint32_t *rdep0;      /* per node: its dependents, rdeps[rdep0[i] .. rdep0[i + 1]) (CSR) */
  uint32_t *rdeps;
  uint32_t *dep_node;   /* per dependency entry (explicit, then implicit): the node it names */
  uint32_t *unit_of;    /* per node */
  uint32_t *done_op;    /* per node: the op that says it is done (FAB_OP_NONE until built) */
  GArray *units;        /* Unit */
  GArray *unit_nodes;   /* uint32_t */
  uint32_t *prev_same;  /* per node: a collective's previous one on the same group and rank (FAB_OP_NONE) */
} Build;

static uint32_t group_n(const FabTrace *t, uint32_t g) {
  return g == FAB_TR_WORLD ? t->nranks : g_array_index(t->groups, FabTrGroup, g).n;
}

static const uint32_t *group_ranks(const FabTrace *t, uint32_t g) {
  return g == FAB_TR_WORLD ? NULL : g_array_index(t->groups, FabTrGroup, g).ranks;
}

static const char *group_name(const FabTrace *t, uint32_t g) {
  return g == FAB_TR_WORLD ? "all ranks" : g_array_index(t->groups, FabTrGroup, g).name;
}

static const FabTrNode *node(const Build *b, uint32_t i) { return &g_array_index(b->t->nodes, FabTrNode, i); }

/* Index ids per rank; resolve dependencies to nodes. */
static gboolean index_nodes(Build *b, GError **err) {
  const FabTrace *t = b->t;
  b->by_id = g_new0(GHashTable *, t->nranks);
  for (uint32_t r = 0; r < t->nranks; r++) b->by_id[r] = g_hash_table_new(g_int64_hash, g_int64_equal);
  for (uint32_t i = 0; i < b->nn; i++) {
    const FabTrNode *n = node(b, i);
    if (n->rank >= t->nranks) return FAIL("%s: rank %u is outside the job's %u ranks", n->where, n->rank, t->nranks);
    if (!g_hash_table_insert(b->by_id[n->rank], (gpointer)&n->id, GUINT_TO_POINTER(i + 1)))
      return FAIL("%s: node id %" G_GUINT64_FORMAT " appears twice in rank %u's trace", n->where, n->id, n->rank);
  }
  b->dep_node = g_new(uint32_t, t->deps->len + 1);
  for (uint32_t i = 0; i < b->nn; i++) {
    const FabTrNode *n = node(b, i);
    for (uint32_t k = 0; k < n->ndeps; k++) {
      uint64_t id = g_array_index(t->deps, uint64_t, n->dep0 + k);
      gpointer v = g_hash_table_lookup(b->by_id[n->rank], &id);
      if (!v)
        return FAIL("%s: node %" G_GUINT64_FORMAT " depends on node %" G_GUINT64_FORMAT ", which is not in rank %u's "
                    "trace", n->where, n->id, id, n->rank);
      b->dep_node[n->dep0 + k] = GPOINTER_TO_UINT(v) - 1;
    }
  }
  return TRUE;
}

/* A dependency cycle among one rank's nodes (depth-first, iterative). */
static gboolean check_cycles(Build *b, GError **err) {
  uint8_t *state = g_new0(uint8_t, b->nn); /* 0 new, 1 on the path, 2 finished */
  uint32_t *stack = g_new(uint32_t, b->nn), *pos = g_new0(uint32_t, b->nn);
  gboolean ok = TRUE;
  for (uint32_t s = 0; ok && s < b->nn; s++) {
    if (state[s]) continue;
    uint32_t sp = 0;
    stack[sp++] = s;
    state[s] = 1;
    while (ok && sp) {
      uint32_t i = stack[sp - 1];
      const FabTrNode *n = node(b, i);
      if (pos[i] == n->ndeps) {
        state[i] = 2;
        sp--;
        continue;
      }
      uint32_t j = b->dep_node[n->dep0 + pos[i]++];
      if (state[j] == 1) {
        GString *path = g_string_new(NULL);
        uint32_t from = sp;
        while (from > 0 && stack[from - 1] != j) from--;
        for (uint32_t k = from - 1; k < sp; k++)
          g_string_append_printf(path, "%" G_GUINT64_FORMAT " -> ", node(b, stack[k])->id);
        g_string_append_printf(path, "%" G_GUINT64_FORMAT, node(b, j)->id);
        ok = FAIL("%s: a dependency cycle in rank %u's trace: node %s (each waits for the next)", node(b, j)->where,
                  n->rank, path->str);
        g_string_free(path, TRUE);
      } else if (!state[j]) {
        state[j] = 1;
        stack[sp++] = j;
      }
    }
  }
  g_free(state);
  g_free(stack);
  g_free(pos);
  return ok;
}

static uint32_t unit_new(Build *b) {
  Unit u = {b->unit_nodes->len, 0, 0};
  g_array_append_val(b->units, u);
  return b->units->len - 1;
}

static void unit_put(Build *b, uint32_t u, uint32_t i) {
  g_array_append_val(b->unit_nodes, i);
  g_array_index(b->units, Unit, u).n++;
  b->unit_of[i] = u;
}

static const char *op_name(uint8_t op) { return fab_coll_op_names[op]; }

/* The k-th collective of each member of a group is one collective: group
** them into units (members in the group's order). */
static gboolean match_colls(Build *b, GError **err) {
  const FabTrace *t = b->t;
  uint32_t ng = t->groups->len + 1; /* the last: the world */
  GArray **q = g_new0(GArray *, (size_t)ng * t->nranks); /* (group, rank) -> node indices in trace order */
  gboolean ok = TRUE;
  for (uint32_t i = 0; ok && i < b->nn; i++) {
    const FabTrNode *n = node(b, i);
    if (n->kind != FAB_TR_COLL) continue;
    uint32_t g = n->group == FAB_TR_WORLD ? ng - 1 : n->group, gn = group_n(t, n->group);
    const uint32_t *gr = group_ranks(t, n->group);
    bool member = !gr;
    for (uint32_t j = 0; gr && j < gn; j++) member |= gr[j] == n->rank;
    for (uint32_t j = 0; ok && gr && j < gn; j++)
      if (gr[j] >= t->nranks)
        ok = FAIL("%s: node %" G_GUINT64_FORMAT ": group %s names rank %u, outside the job's %u ranks", n->where, n->id,
                  group_name(t, n->group), gr[j], t->nranks);
    if (ok && !member)
      ok = FAIL("%s: node %" G_GUINT64_FORMAT " is a collective of rank %u on group %s, which does not hold rank %u",
                n->where, n->id, n->rank, group_name(t, n->group), n->rank);
    if (ok && gn < 2)
      ok = FAIL("%s: node %" G_GUINT64_FORMAT ": a collective on group %s of one rank", n->where, n->id,
                group_name(t, n->group));
    if (ok && n->root >= gn && (n->op == FAB_COLL_BROADCAST || n->op == FAB_COLL_REDUCE))
      ok = FAIL("%s: node %" G_GUINT64_FORMAT ": root %u is not in group %s (0..%u)", n->where, n->id, n->root,
                group_name(t, n->group), gn - 1);
    GArray **a = &q[(size_t)g * t->nranks + n->rank];
    if (!*a) *a = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    if (ok && (*a)->len) b->prev_same[i] = g_array_index(*a, uint32_t, (*a)->len - 1);
    g_array_append_val(*a, i);
  }
  for (uint32_t g = 0; ok && g < ng; g++) {
    uint32_t gid = g == ng - 1 ? FAB_TR_WORLD : g, gn = group_n(t, gid);
    const uint32_t *gr = group_ranks(t, gid);
    uint32_t r0 = gr ? gr[0] : 0;
    GArray *a0 = q[(size_t)g * t->nranks + r0];
    uint32_t count = a0 ? a0->len : 0;
    for (uint32_t j = 0; ok && j < gn; j++) { /* every member issues as many */
      uint32_t r = gr ? gr[j] : j;
      GArray *a = q[(size_t)g * t->nranks + r];
      uint32_t c = a ? a->len : 0;
      if (c != count) {
        const FabTrNode *x = node(b, g_array_index(c > count ? a : a0, uint32_t, MIN(c, count)));
        ok = FAIL("%s: node %" G_GUINT64_FORMAT " (rank %u) is collective %u on group %s, which rank %u never reaches "
                  "(it issues %u there, rank %u %u)", x->where, x->id, x->rank, MIN(c, count) + 1,
                  group_name(t, gid), c > count ? r0 : r, MIN(c, count), c > count ? r : r0, MAX(c, count));
      }
    }
    for (uint32_t k = 0; ok && k < count; k++) {
      uint32_t u = unit_new(b);
      const FabTrNode *x0 = node(b, g_array_index(a0, uint32_t, k));
      for (uint32_t j = 0; ok && j < gn; j++) {
        uint32_t i = g_array_index(q[(size_t)g * t->nranks + (gr ? gr[j] : j)], uint32_t, k);
        const FabTrNode *x = node(b, i);
        if (x->op == x0->op && x->bytes == x0->bytes && x->root != x0->root)
          ok = FAIL("%s: node %" G_GUINT64_FORMAT " (rank %u) is %s of %" G_GUINT64_FORMAT " B on group %s with root %u, "
                    "where rank %u's collective %u there (node %" G_GUINT64_FORMAT ") has root %u", x->where, x->id,
                    x->rank, op_name(x->op), x->bytes, group_name(t, gid), x->root, x0->rank, k + 1, x0->id, x0->root);
        else if (x->op != x0->op || x->bytes != x0->bytes)
          ok = FAIL("%s: node %" G_GUINT64_FORMAT " (rank %u) is %s of %" G_GUINT64_FORMAT " B on group %s, where "
                    "rank %u's collective %u there (node %" G_GUINT64_FORMAT ") is %s of %" G_GUINT64_FORMAT " B",
                    x->where, x->id, x->rank, op_name(x->op), x->bytes, group_name(t, gid), x0->rank, k + 1, x0->id,
                    op_name(x0->op), x0->bytes);
        unit_put(b, u, i);
      }
    }
  }
  for (size_t k = 0; k < (size_t)ng * t->nranks; k++)
    if (q[k]) g_array_free(q[k], TRUE);
  g_free(q);
  return ok;
}

/* The k-th send a -> b (tag) meets the k-th receive at b from a (tag). */
static gboolean match_p2p(Build *b, GError **err) {
  GHashTable *open = g_hash_table_new_full(g_bytes_hash, g_bytes_equal, (GDestroyNotify)g_bytes_unref,
                                           (GDestroyNotify)g_queue_free);
  gboolean ok = TRUE;
  for (uint32_t i = 0; ok && i < b->nn; i++) {
    const FabTrNode *n = node(b, i);
    if (n->kind != FAB_TR_SEND && n->kind != FAB_TR_RECV) continue;
    if (n->group >= b->t->nranks || n->group == n->rank) {
      ok = FAIL("%s: node %" G_GUINT64_FORMAT ": rank %u %s rank %u, %s", n->where, n->id, n->rank,
                n->kind == FAB_TR_SEND ? "sends to" : "receives from", n->group,
                n->group == n->rank ? "itself" : "outside the job");
      break;
    }
    bool send = n->kind == FAB_TR_SEND;
    uint64_t key[4] = {send ? n->rank : n->group, send ? n->group : n->rank, n->tag, send};
    GBytes *mine = g_bytes_new(key, sizeof key);
    key[3] = !send;
    GBytes *theirs = g_bytes_new(key, sizeof key);
    GQueue *wait = g_hash_table_lookup(open, theirs);
    if (wait && !g_queue_is_empty(wait)) { /* the partner came first */
      uint32_t j = GPOINTER_TO_UINT(g_queue_pop_head(wait)) - 1;
      const FabTrNode *m = node(b, j);
      if (m->bytes != n->bytes)
        ok = FAIL("%s: node %" G_GUINT64_FORMAT " (rank %u) %s %" G_GUINT64_FORMAT " B, its partner node %"
                  G_GUINT64_FORMAT " (rank %u) %" G_GUINT64_FORMAT " B", n->where, n->id, n->rank,
                  send ? "sends" : "receives", n->bytes, m->id, m->rank, m->bytes);
      uint32_t u = unit_new(b);
      unit_put(b, u, send ? i : j);
      unit_put(b, u, send ? j : i);
      g_bytes_unref(mine);
    } else {
      GQueue *w = g_hash_table_lookup(open, mine);
      if (!w) {
        w = g_queue_new();
        g_hash_table_insert(open, g_bytes_ref(mine), w);
      }
      g_queue_push_tail(w, GUINT_TO_POINTER(i + 1));
      g_bytes_unref(mine);
    }
    g_bytes_unref(theirs);
  }
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, open);
  uint32_t first = UINT32_MAX;
  while (g_hash_table_iter_next(&it, &k, &v))
    if (!g_queue_is_empty(v)) first = MIN(first, GPOINTER_TO_UINT(g_queue_peek_head(v)) - 1);
  if (ok && first != UINT32_MAX) {
    const FabTrNode *n = node(b, first);
    ok = FAIL("%s: node %" G_GUINT64_FORMAT ": rank %u's %s rank %u (tag %" G_GUINT64_FORMAT ") has no matching %s "
              "in rank %u's trace", n->where, n->id, n->rank, n->kind == FAB_TR_SEND ? "send to" : "receive from",
              n->group, n->tag, n->kind == FAB_TR_SEND ? "receive" : "send", n->group);
  }
  g_hash_table_destroy(open);
  return ok;
}

/* Dependents in CSR form, counting implicit ones (a collective after the
** rank's previous one on its group). */
static void link_dependents(Build *b) {
  uint32_t *cnt = g_new0(uint32_t, b->nn + 1);
  for (uint32_t i = 0; i < b->nn; i++) {
    const FabTrNode *n = node(b, i);
    b->left[i] = n->ndeps + (b->prev_same[i] != FAB_OP_NONE);
    for (uint32_t k = 0; k < n->ndeps; k++) cnt[b->dep_node[n->dep0 + k] + 1]++;
    if (b->prev_same[i] != FAB_OP_NONE) cnt[b->prev_same[i] + 1]++;
  }
  for (uint32_t i = 0; i < b->nn; i++) cnt[i + 1] += cnt[i];
  memcpy(b->rdep0, cnt, (b->nn + 1) * sizeof *cnt);
  for (uint32_t i = 0; i < b->nn; i++) {
    const FabTrNode *n = node(b, i);
    for (uint32_t k = 0; k < n->ndeps; k++) b->rdeps[cnt[b->dep_node[n->dep0 + k]]++] = i;
    if (b->prev_same[i] != FAB_OP_NONE) b->rdeps[cnt[b->prev_same[i]]++] = i;
  }
  g_free(cnt);
}

/* The ops node i waits for (the done ops of its dependencies), appended. */
static void wait_ops(const Build *b, uint32_t i, GArray *out) {
  const FabTrNode *n = node(b, i);
  for (uint32_t k = 0; k < n->ndeps; k++) {
    uint32_t op = b->done_op[b->dep_node[n->dep0 + k]];
    bool dup = false;
    for (guint m = 0; m < out->len && !dup; m++) dup = g_array_index(out, uint32_t, m) == op;
    if (!dup) g_array_append_val(out, op);
  }
  if (b->prev_same[i] != FAB_OP_NONE) g_array_append_val(out, b->done_op[b->prev_same[i]]);
}

static void tag_op(const Build *b, uint32_t op, uint32_t i) {
  if (b->env->node_of) g_hash_table_insert(b->env->node_of, GUINT_TO_POINTER(op), (gpointer)(uintptr_t)(node(b, i)->id + 1));
}

static gboolean emit_compute(Build *b, uint32_t i, GArray *w, GError **err) {
  const FabTrNode *n = node(b, i);
  fab_time_t dur = n->dur;
  if (!n->has_dur) {
    if (n->flops > 0 && b->env->gpu_flops <= 0)
      return FAIL("%s: node %" G_GUINT64_FORMAT " has FLOPs but no duration, and the cluster's endpoints are not GPUs "
                  "(no peak FLOP/s to time it by)", n->where, n->id);
    double ps = n->flops / b->env->gpu_flops * 1e12;
    if (ps > 1e18) return FAIL("%s: node %" G_GUINT64_FORMAT ": %.3g FLOPs take too long", n->where, n->id, n->flops);
    dur = (fab_time_t)(ps + 0.5);
  }
  uint32_t op = fab_dag_compute(b->d, b->env->ep[n->rank], dur, FAB_PHASE_OTHER, b->env->job, 0,
                                (const uint32_t *)(void *)w->data, w->len);
  fab_dag_op(b->d, op)->start = b->env->start;
  b->done_op[i] = op;
  tag_op(b, op, i);
  return TRUE;
}

static gboolean emit_coll(Build *b, const Unit *u, GArray *w, GError **err) {
  const FabTrNode *n0 = node(b, g_array_index(b->unit_nodes, uint32_t, u->first));
  uint32_t gn = u->n, *ranks = g_new(uint32_t, gn), *start = g_new(uint32_t, gn), *end = g_new(uint32_t, gn);
  for (uint32_t j = 0; j < gn; j++) {
    uint32_t i = g_array_index(b->unit_nodes, uint32_t, u->first + j);
    ranks[j] = b->env->ep[node(b, i)->rank];
    g_array_set_size(w, 0);
    wait_ops(b, i, w);
    start[j] = w->len == 0 ? FAB_OP_NONE
             : w->len == 1 ? g_array_index(w, uint32_t, 0)
                           : fab_dag_mark(b->d, ranks[j], FAB_MARK_JOIN, b->env->job, -1,
                                          (const uint32_t *)(void *)w->data, w->len);
  }
  FabCollSpec c = {.op = n0->op, .bytes = n0->bytes, .dtype_bytes = b->env->dtype_bytes, .nranks = gn,
                   .ranks = ranks, .root = n0->root, .prio = b->env->prio, .job = b->env->job,
                   .tag = group_name(b->t, n0->group), .start = b->env->start};
  if (n0->group == FAB_TR_WORLD) c.tag = "world";
  GError *e = NULL;
  gboolean ok = fab_coll_expand(b->d, b->env->coll, &c, start, end, &e) >= 0;
  if (!ok) {
    (void)FAIL("%s: node %" G_GUINT64_FORMAT ": %s", n0->where, n0->id, e->message);
    g_error_free(e);
  }
  for (uint32_t j = 0; ok && j < gn; j++) {
    uint32_t i = g_array_index(b->unit_nodes, uint32_t, u->first + j);
    b->done_op[i] = end[j];
    tag_op(b, end[j], i);
  }
  g_free(ranks);
  g_free(start);
  g_free(end);
  return ok;
}

/* A send/recv pair: one flow, receiver-driven (FAB_FLOW_RDV): its first
** dependency is the receiver's readiness (a join of the receive's own
** dependencies), which the sender learns of a control message later, as
** NCCL's sender waits for its receiver's buffer; the others the send's. */
static void emit_p2p(Build *b, const Unit *u, GArray *w) {
  uint32_t s = g_array_index(b->unit_nodes, uint32_t, u->first), r = g_array_index(b->unit_nodes, uint32_t, u->first + 1);
  const FabTrNode *ns = node(b, s);
  wait_ops(b, r, w);
  uint32_t ready = fab_dag_mark(b->d, b->env->ep[ns->group], FAB_MARK_JOIN, b->env->job, -1,
                                (const uint32_t *)(void *)w->data, w->len);
  fab_dag_op(b->d, ready)->start = b->env->start;
  g_array_set_size(w, 0);
  g_array_append_val(w, ready);
  wait_ops(b, s, w);
  FabCollDef cd = {.op = "send-recv", .algorithm = "p2p", .protocol = "simple", .tag = "p2p", .bytes = ns->bytes,
                   .count = ns->bytes, .dtype_bytes = 1, .nranks = 2, .root = -1,
                   .channels = 1, .chunk = ns->bytes, .job = b->env->job};
  int32_t coll = fab_dag_coll(b->d, &cd);
  uint32_t op = fab_dag_flow(b->d, b->env->ep[ns->rank], b->env->ep[ns->group], ns->bytes, b->env->prio, b->env->job,
                             coll, 0, 0, (const uint32_t *)(void *)w->data, w->len);
  fab_dag_op(b->d, op)->start = b->env->start;
  fab_dag_op(b->d, op)->mark = FAB_FLOW_RDV;
  b->done_op[s] = b->done_op[r] = op;
  tag_op(b, op, s);
}

/* Units in the order they become ready (FIFO from trace order): each
** becomes ops once all its nodes' dependencies have. */
static gboolean emit_all(Build *b, GError **err) {
  GQueue ready = G_QUEUE_INIT;
  Unit *units = (Unit *)(void *)b->units->data;
  uint32_t nu = b->units->len, made = 0;
  for (uint32_t i = 0; i < b->nn; i++)
    if (b->left[i]) units[b->unit_of[i]].waiting++;
  for (uint32_t u = 0; u < nu; u++)
    if (!units[u].waiting) g_queue_push_tail(&ready, GUINT_TO_POINTER(u));
  GArray *w = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  gboolean ok = TRUE;
  while (ok && !g_queue_is_empty(&ready)) {
    uint32_t u = GPOINTER_TO_UINT(g_queue_pop_head(&ready));
    const Unit *un = &units[u];
    uint32_t i0 = g_array_index(b->unit_nodes, uint32_t, un->first);
    g_array_set_size(w, 0);
    uint8_t kind = node(b, i0)->kind;
    if (kind == FAB_TR_COMPUTE) wait_ops(b, i0, w), ok = emit_compute(b, i0, w, err);
    else if (kind == FAB_TR_COLL) ok = emit_coll(b, un, w, err);
    else emit_p2p(b, un, w);
    made++;
    for (uint32_t j = 0; ok && j < un->n; j++) {
      uint32_t i = g_array_index(b->unit_nodes, uint32_t, un->first + j);
      for (uint32_t k = b->rdep0[i]; k < b->rdep0[i + 1]; k++) {
        uint32_t x = b->rdeps[k];
        if (--b->left[x] == 0 && --units[b->unit_of[x]].waiting == 0)
          g_queue_push_tail(&ready, GUINT_TO_POINTER(b->unit_of[x]));
      }
    }
    if (ok && fab_dag_len(b->d) > FAB_DAG_MAX_OPS)
      ok = FAIL("the trace needs more than the %u operations a workload may have", FAB_DAG_MAX_OPS);
  }
  g_queue_clear(&ready);
  g_array_free(w, TRUE);
  if (ok && made < nu) { /* stuck: a node whose own dependencies are done waits for partners that wait for it */
    uint32_t stuck = UINT32_MAX;
    for (uint32_t i = 0; i < b->nn && stuck == UINT32_MAX; i++)
      if (b->done_op[i] == FAB_OP_NONE && !b->left[i]) stuck = i;
    bool cyc = stuck == UINT32_MAX; /* or none is: a cycle through a group's order of collectives */
    for (uint32_t i = 0; cyc && i < b->nn && stuck == UINT32_MAX; i++)
      if (b->done_op[i] == FAB_OP_NONE) stuck = i;
    const FabTrNode *n = node(b, stuck);
    return FAIL("%s: node %" G_GUINT64_FORMAT " (rank %u) can never run: %s", n->where, n->id, n->rank,
                cyc ? "its dependencies wait for a collective that the rank issues after it on the same group (a "
                      "rank's collectives on one group run in its trace's order)"
                    : "it waits for partners that wait for it (collectives or sends issued in a different order on "
                      "different ranks)");
  }
  return ok;
}

gboolean fab_trace_build(const FabTrace *t, FabDag *d, const FabTrEnv *env, GError **err) {
  Build b = {t, env, d, t->nodes->len};
  uint32_t ops0 = fab_dag_len(d), deps0 = fab_dag_deps_len(d), colls0 = d->colls->len;
  if (!b.nn) return FAIL("the trace has no operations");
  b.left = g_new0(uint32_t, b.nn);
  b.rdep0 = g_new0(uint32_t, b.nn + 1);
  b.rdeps = g_new(uint32_t, t->deps->len + b.nn + 1);
  b.unit_of = g_new(uint32_t, b.nn);
  b.done_op = g_new(uint32_t, b.nn);
  b.prev_same = g_new(uint32_t, b.nn);
  for (uint32_t i = 0; i < b.nn; i++) b.done_op[i] = b.prev_same[i] = FAB_OP_NONE;
  b.units = g_array_new(FALSE, FALSE, sizeof(Unit));
  b.unit_nodes = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  gboolean ok = index_nodes(&b, err) && check_cycles(&b, err);
  for (uint32_t i = 0; ok && i < b.nn; i++) /* compute nodes are units of their own */
    if (node(&b, i)->kind == FAB_TR_COMPUTE) unit_put(&b, unit_new(&b), i);
  ok = ok && match_colls(&b, err) && match_p2p(&b, err);
  if (ok) link_dependents(&b);
  ok = ok && emit_all(&b, err);
  if (!ok) {
    fab_dag_truncate(d, ops0, deps0);
    g_array_set_size(d->colls, colls0);
    if (env->node_of) g_hash_table_remove_all(env->node_of);
  }
  for (uint32_t r = 0; b.by_id && r < t->nranks; r++) g_hash_table_destroy(b.by_id[r]);
  g_free(b.by_id);
  g_free(b.left);
  g_free(b.rdep0);
  g_free(b.rdeps);
  g_free(b.dep_node);
  g_free(b.unit_of);
  g_free(b.done_op);
  g_free(b.prev_same);
  g_array_free(b.units, TRUE);
  g_array_free(b.unit_nodes, TRUE);
  return ok;
}

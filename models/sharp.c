/* SHARP trees and the reductions on them. See sharp.h. */
#include "sharp.h"
#include <glib.h>

typedef struct Tree {
  uint32_t nnodes, nmem, root;
  FabSwitch **sw;      /* nnodes */
  uint32_t *parent;    /* nnodes: UINT32_MAX at the root */
  uint32_t *up, *down; /* nnodes: the port toward the parent; the parent's port toward the node */
  uint32_t *nchild;    /* nnodes: child nodes + members attached */
  uint32_t *rank, *leaf, *port; /* nmem */
  /* node v's children: kid[koff[v] .. koff[v+1]), each a node (< nnodes) or nnodes + member */
  uint32_t *koff, *kid;
  uint32_t nres, *res;  /* the lock resources its reductions hold (none: no locks) */
  uint32_t owner;       /* whose they are (its communicator) */
  uint64_t *held;       /* nnodes: payload in partial sums at node v now */
  uint32_t running;     /* reductions running on it now */
  fab_time_t since;     /* when running last went from 0 to 1 */
  FabSharpStats st;
} Tree;

/* An owner's hold on a lock resource: n of its reductions hold it (n 0: free). */
typedef struct Hold {
  uint32_t owner, n;
} Hold;

typedef struct Group {
  uint32_t tree, npkts;
  uint32_t *flow;          /* nmem */
  uint16_t *arrived;       /* nnodes x npkts: contributions in at node v for packet k; freed when finished */
  fab_time_t *red_free;    /* nnodes: when node v's reducer is free again */
  uint64_t left;           /* results still to deliver to members */
  fab_time_t asked;        /* when a member asked for its locks */
  bool requested;          /* a member did */
  bool llt;                /* on the low-latency tree: no lock */
  bool waiting;            /* for its locks */
} Group;

struct FabSharp {
  fab_time_t latency;
  uint64_t reduce_bps;
  uint32_t streams;  /* owners one lock resource admits at once */
  GPtrArray *trees;  /* Tree * */
  GPtrArray *groups; /* Group * */
  GArray *holding;   /* Hold x streams per lock resource: the owners whose reductions hold it */
  GArray *queue;     /* uint32_t: groups waiting for their locks, in the order they came */
  FabSharpStartFn start;
  void *start_ctx;
};

FabSharp *fab_sharp_new(fab_time_t latency, uint64_t reduce_bps, uint32_t streams) {
  FabSharp *s = g_new0(FabSharp, 1);
  s->latency = latency;
  s->reduce_bps = reduce_bps;
  s->streams = MAX(streams, 1u);
  s->trees = g_ptr_array_new();
  s->groups = g_ptr_array_new();
  s->holding = g_array_new(FALSE, TRUE, sizeof(Hold));
  s->queue = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  return s;
}

static void group_finish(Group *g) {
  g_clear_pointer(&g->arrived, g_free);
  g_clear_pointer(&g->red_free, g_free);
  g_clear_pointer(&g->flow, g_free);
}

void fab_sharp_free(FabSharp *s) {
  if (!s) return;
  for (guint i = 0; i < s->trees->len; i++) {
    Tree *t = g_ptr_array_index(s->trees, i);
    g_free(t->sw), g_free(t->parent), g_free(t->up), g_free(t->down), g_free(t->nchild);
    g_free(t->rank), g_free(t->leaf), g_free(t->port), g_free(t->koff), g_free(t->kid);
    g_free(t->res), g_free(t->held);
    g_free(t);
  }
  for (guint i = 0; i < s->groups->len; i++) {
    Group *g = g_ptr_array_index(s->groups, i);
    group_finish(g);
    g_free(g);
  }
  g_ptr_array_free(s->trees, TRUE);
  g_ptr_array_free(s->groups, TRUE);
  g_array_free(s->holding, TRUE);
  g_array_free(s->queue, TRUE);
  g_free(s);
}

uint32_t fab_sharp_add_tree(FabSharp *s, uint32_t nnodes, FabSwitch *const *sw, const uint32_t *parent,
                            const uint32_t *up, const uint32_t *down, uint32_t nmem, const uint32_t *rank,
                            const uint32_t *leaf, const uint32_t *port) {
  g_assert(nnodes >= 1 && nmem >= 1);
  Tree *t = g_new0(Tree, 1);
  t->nnodes = nnodes;
  t->nmem = nmem;
  t->root = UINT32_MAX;
  t->sw = g_memdup2(sw, nnodes * sizeof *sw);
  t->parent = g_memdup2(parent, nnodes * sizeof *parent);
  t->up = g_memdup2(up, nnodes * sizeof *up);
  t->down = g_memdup2(down, nnodes * sizeof *down);
  t->rank = g_memdup2(rank, nmem * sizeof *rank);
  t->leaf = g_memdup2(leaf, nmem * sizeof *leaf);
  t->port = g_memdup2(port, nmem * sizeof *port);
  t->nchild = g_new0(uint32_t, nnodes);
  t->held = g_new0(uint64_t, nnodes);
  for (uint32_t v = 0; v < nnodes; v++) {
    if (parent[v] == UINT32_MAX) {
      g_assert(t->root == UINT32_MAX);
      t->root = v;
    } else {
      g_assert(parent[v] < nnodes);
      t->nchild[parent[v]]++;
    }
    fab_switch_set_sharp(sw[v], s);
  }
  g_assert(t->root != UINT32_MAX);
  for (uint32_t m = 0; m < nmem; m++) {
    g_assert(leaf[m] < nnodes);
    t->nchild[leaf[m]]++;
  }
  /* children in a fixed order: child nodes by index, then members by rank order */
  t->koff = g_new0(uint32_t, nnodes + 1);
  for (uint32_t v = 0; v < nnodes; v++) t->koff[v + 1] = t->koff[v] + t->nchild[v];
  t->kid = g_new(uint32_t, t->koff[nnodes]);
  uint32_t *fill = g_memdup2(t->koff, nnodes * sizeof *fill);
  for (uint32_t v = 0; v < nnodes; v++)
    if (parent[v] != UINT32_MAX) t->kid[fill[parent[v]]++] = v;
  for (uint32_t m = 0; m < nmem; m++) t->kid[fill[leaf[m]]++] = nnodes + m;
  g_free(fill);
  g_ptr_array_add(s->trees, t);
  return s->trees->len - 1;
}

uint32_t fab_sharp_member_node(const FabSharp *s, uint32_t tree, uint32_t m) {
  const Tree *t = g_ptr_array_index(s->trees, tree);
  g_assert(m < t->nmem);
  return t->leaf[m];
}

void fab_sharp_set_locks(FabSharp *s, uint32_t tree, uint32_t owner, uint32_t nres, const uint32_t *res) {
  Tree *t = g_ptr_array_index(s->trees, tree);
  g_assert(!t->nres);
  t->owner = owner;
  t->nres = nres;
  t->res = g_memdup2(res, nres * sizeof *res);
  for (uint32_t i = 0; i < nres; i++)
    if ((res[i] + 1) * s->streams > s->holding->len) g_array_set_size(s->holding, (res[i] + 1) * s->streams);
}

void fab_sharp_on_start(FabSharp *s, FabSharpStartFn fn, void *ctx) {
  s->start = fn;
  s->start_ctx = ctx;
}

/* Resource r's hold by `owner`: the one it has, else a free one (NULL: none). */
static Hold *hold_of(FabSharp *s, uint32_t r, uint32_t owner) {
  Hold *h = &g_array_index(s->holding, Hold, (size_t)r * s->streams), *free = NULL;
  for (uint32_t k = 0; k < s->streams; k++) {
    if (h[k].n && h[k].owner == owner) return &h[k];
    if (!h[k].n && !free) free = &h[k];
  }
  return free;
}

/* Whether tree t's owner may take every lock of t: it holds it already, or
** fewer than `streams` owners do. */
static bool locks_free(FabSharp *s, const Tree *t) {
  for (uint32_t i = 0; i < t->nres; i++)
    if (!hold_of(s, t->res[i], t->owner)) return false;
  return true;
}

/* Take (+1) or give back (-1) tree t's locks for one reduction. */
static void locks_move(FabSharp *s, const Tree *t, int d) {
  for (uint32_t i = 0; i < t->nres; i++) {
    Hold *h = hold_of(s, t->res[i], t->owner);
    h->owner = t->owner;
    h->n += (uint32_t)d;
  }
}

uint32_t fab_sharp_add_group(FabSharp *s, uint32_t tree, const uint32_t *flow, uint32_t npkts, uint64_t bytes,
                             bool llt) {
  g_assert(tree < s->trees->len && npkts >= 1);
  Tree *t = g_ptr_array_index(s->trees, tree);
  for (uint32_t v = 0; v < t->nnodes; v++) g_assert(t->nchild[v] <= UINT16_MAX);
  Group *g = g_new0(Group, 1);
  g->tree = tree;
  g->npkts = npkts;
  g->flow = g_memdup2(flow, t->nmem * sizeof *flow);
  g->arrived = g_new0(uint16_t, (size_t)t->nnodes * npkts);
  g->red_free = g_new0(fab_time_t, t->nnodes);
  g->left = (uint64_t)t->nmem * npkts;
  g->llt = llt;
  g_ptr_array_add(s->groups, g);
  t->st.reductions++;
  t->st.llt += llt;
  t->st.expect += t->nmem * bytes;
  return s->groups->len - 1;
}

/* Group g (on tree t) takes its locks and runs from `at`. */
static void run(FabEngine *eng, FabSharp *s, Tree *t, Group *g, fab_time_t at) {
  if (!g->llt) locks_move(s, t, +1);
  if (!t->running++) t->since = at;
  if (g->waiting) t->st.waits++, t->st.waited += at - g->asked;
  g->waiting = false;
  if (s->start) s->start(s->start_ctx, eng, g->flow, t->nmem);
}

void fab_sharp_request(FabEngine *eng, FabSharp *s, uint32_t gid, fab_time_t at) {
  g_assert(gid < s->groups->len && at >= eng->now);
  Group *g = g_ptr_array_index(s->groups, gid);
  if (g->requested) return;
  g->requested = true;
  g->asked = at;
  Tree *t = g_ptr_array_index(s->trees, g->tree);
  if (g->llt || locks_free(s, t)) { /* the waiting ones' locks are busy: none is overtaken on what it waits for */
    run(eng, s, t, g, at);
    return;
  }
  g->waiting = true;
  g_array_append_val(s->queue, gid);
}

/* Group g is over: its counters go, its locks are given back, and the
** waiting groups that can now hold theirs start, in the order they came (a
** group whose locks are still busy does not hold up one whose are free). */
static void finish(FabEngine *eng, FabSharp *s, Tree *t, Group *g) {
  group_finish(g);
  t->st.finished++;
  if (!--t->running) t->st.active += eng->now - t->since;
  if (!g->llt) locks_move(s, t, -1);
  for (guint q = 0; q < s->queue->len;) {
    uint32_t id = g_array_index(s->queue, uint32_t, q);
    Group *w = g_ptr_array_index(s->groups, id);
    Tree *wt = g_ptr_array_index(s->trees, w->tree);
    if (!locks_free(s, wt)) {
      q++;
      continue;
    }
    g_array_remove_index(s->queue, q);
    run(eng, s, wt, w, eng->now);
  }
}

/* A copy of `like` of `type` out of node v's port `port`, leaving at `ready`:
** toward node `to`, or (to >= nnodes) to member to - nnodes. */
static void emit(FabEngine *eng, const Tree *t, const Group *g, uint32_t v, uint32_t to, uint8_t type,
                 const FabPkt *like, fab_time_t ready) {
  FabPkt *q = fab_pkt_alloc(eng);
  q->type = type;
  q->seq = like->seq;
  q->src = like->src;
  q->payload = like->payload;
  q->wire = like->wire;
  q->prio = like->prio;
  q->lane = like->lane;
  q->ready = ready;
  uint32_t port;
  if (to < t->nnodes) {
    q->dst = like->dst; /* the group */
    q->hash = to;
    q->flow = UINT32_MAX; /* a node's, not a member's */
    port = type == FAB_PKT_SHARP_UP ? t->up[v] : t->down[to];
  } else {
    uint32_t m = to - t->nnodes;
    q->dst = t->rank[m];
    q->flow = g->flow[m];
    port = t->port[m];
  }
  fab_port_enqueue(eng, fab_switch_port_at(t->sw[v], port), q);
}

/* Node v sends result `p` down to every child. */
static void down(FabEngine *eng, FabSharp *s, Tree *t, Group *g, uint32_t v, const FabPkt *p, fab_time_t ready) {
  for (uint32_t i = t->koff[v]; i < t->koff[v + 1]; i++) {
    emit(eng, t, g, v, t->kid[i], FAB_PKT_SHARP_DOWN, p, ready);
    if (t->kid[i] >= t->nnodes) g->left--, t->st.bytes_out += p->payload;
  }
  if (!g->left) finish(eng, s, t, g); /* every member's last result is on its way: the counters are done with */
}

void fab_sharp_receive(FabEngine *eng, FabSharp *s, FabSwitch *sw, FabPkt *p, FabPort *in) {
  g_assert(p->dst < s->groups->len);
  Group *g = g_ptr_array_index(s->groups, p->dst);
  Tree *t = g_ptr_array_index(s->trees, g->tree);
  uint32_t v = p->hash;
  g_assert(v < t->nnodes && t->sw[v] == sw && p->seq < g->npkts && g->arrived);
  fab_port_return_credit(eng, in->peer, p->prio, p->wire); /* absorbed */
  fab_time_t ready = eng->now + fab_switch_cfg(sw)->latency;
  if (p->type == FAB_PKT_SHARP_UP) {
    if (p->flow != UINT32_MAX) t->st.bytes_in += p->payload; /* a member's */
    uint16_t *in_v = &g->arrived[(size_t)v * g->npkts + p->seq];
    if (!*in_v && t->nchild[v] > 1) { /* a partial sum starts here */
      t->held[v] += p->payload;
      t->st.peak_held = MAX(t->st.peak_held, t->held[v]);
    }
    if (++*in_v == t->nchild[v]) { /* reduced here */
      if (t->nchild[v] > 1) t->held[v] -= p->payload;
      ready += s->latency;
      if (s->reduce_bps) {
        fab_time_t at = MAX(ready, g->red_free[v]);
        g->red_free[v] = at + fab_time_ser(p->payload, s->reduce_bps);
        ready = g->red_free[v];
      }
      if (t->parent[v] != UINT32_MAX) emit(eng, t, g, v, t->parent[v], FAB_PKT_SHARP_UP, p, ready);
      else down(eng, s, t, g, v, p, ready);
    }
  } else {
    g_assert(p->type == FAB_PKT_SHARP_DOWN && v != t->root);
    down(eng, s, t, g, v, p, ready);
  }
  fab_pkt_free(eng, p);
}

uint32_t fab_sharp_ntrees(const FabSharp *s) { return s ? s->trees->len : 0; }

void fab_sharp_stats(const FabSharp *s, uint32_t tree, fab_time_t now, FabSharpStats *out) {
  const Tree *t = g_ptr_array_index(s->trees, tree);
  *out = t->st;
  if (t->running) out->active += now - t->since;
}

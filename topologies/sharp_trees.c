/* SHARP trees from the topology, and the resources they hold. See
** topology.h (FabSharpPlan) and models/sharp.h. */
#include "build_int.h"
#include "fabric_cfg_int.h"
#include <stdlib.h>
#include <string.h>

const char *const fab_sharp_model_names[] = {"quantum", "quantum-2", "quantum-x800", NULL};
const char *const fab_sharp_nores_names[] = {"fallback", "fail", NULL};
const char *const fab_sharp_lock_names[] = {"communicator", "operation", NULL};

/* ---- fabric.switch.sharp ------------------------------------------------------ */

/* What each switch model allows, from NVIDIA's SHARP documentation
** (docs.nvidia.com/networking/display/sharpv3130/general-information):
** Quantum (HDR, SHARPv2) holds 63 streaming-aggregation (SAT) trees per
** subnet (and 63 low-latency ones, not modelled), SAT "limited to one active
** tree per switch"; Quantum-2 (NDR, SHARPv3) 511 SAT trees per subnet, one
** active tree per port, so jobs on disjoint links run together (SHARP 3.0.0
** release notes, multi-tenancy). Quantum-X800: no public figure found; it
** takes Quantum-2's (an assumption, README). The aggregation latency and a
** member's window (how much of the tree's buffer one member's reduction may
** hold) have no public figure either: parameters, marked as assumptions in
** README (the window of 256 KiB covers 400 Gb/s over a 5 us loop; the
** SHARP collective library's default payload per outstanding operation is
** 2 KiB on Quantum, SHARP v2.6.1 documentation, a smaller unit than the
** window it is part of).
**
** Small reductions: the SHARP collective library runs an allreduce request
** below SHARP_COLL_SAT_THRESHOLD (16384 B by default) on the low-latency
** tree (LLT) instead of the streaming one, in outstanding transactions
** (OSTs) of SHARP_COLL_JOB_QUOTA_PAYLOAD_PER_OST bytes, 2048 B on Quantum
** (SHARP v2.6.1 documentation, "NVIDIA SHARP Collective Library"); Quantum-2
** and X800 take Quantum's figure (an assumption). OSTs per group:
** SHARP_COLL_OSTS_PER_GROUP is "dynamic (minimum: 2)": the minimum, an
** assumption. */
typedef struct Model {
  uint32_t trees, streams;
  bool per_port;
  fab_time_t latency;
  uint64_t window;
  uint32_t ost_payload;
} Model;
static const Model models[] = {
  [FAB_SHARP_QUANTUM] = {.trees = 63, .streams = 1, .per_port = false, .latency = 200000, .window = 256 * 1024,
                         .ost_payload = 2048},
  [FAB_SHARP_QUANTUM2] = {.trees = 511, .streams = 1, .per_port = true, .latency = 200000, .window = 256 * 1024,
                          .ost_payload = 2048},
  [FAB_SHARP_QUANTUM_X800] = {.trees = 511, .streams = 1, .per_port = true, .latency = 200000, .window = 256 * 1024,
                              .ost_payload = 2048},
};

#define K(NAME, TYPE, FIELD, ...) FAB_CFG_KEY(NAME, TYPE, Read, FIELD, __VA_ARGS__)
static const FabCfgKey sharp_schema[] = {
  K("enabled", FAB_CFG_BOOL, f.sharp.enabled, .def = "false"),
  K("model", FAB_CFG_ENUM, f.sharp.model, .def = "quantum-2", .choices = fab_sharp_model_names),
  K("latency", FAB_CFG_TIME, f.sharp.latency, .min = 0, .max = 1e12),
  K("reduce_bandwidth", FAB_CFG_RATE, f.sharp.reduce_bps),
  K("window", FAB_CFG_SIZE, f.sharp.window, .min = 1, .max = 0x1p40),
  K("trees", FAB_CFG_UINT, f.sharp.trees, .min = 1, .max = 1u << 20),
  K("streams", FAB_CFG_UINT, f.sharp.streams, .min = 1, .max = 1u << 20),
  K("on_no_resources", FAB_CFG_ENUM, f.sharp.on_no_resources, .def = "fallback", .choices = fab_sharp_nores_names),
  K("lock", FAB_CFG_ENUM, f.sharp.lock, .def = "communicator", .choices = fab_sharp_lock_names),
  K("sat_threshold", FAB_CFG_SIZE, f.sharp.sat_threshold, .def = "16KiB", .min = 0, .max = 0x1p40),
  K("ost_payload", FAB_CFG_SIZE, f.sharp.ost_payload, .min = 1, .max = 65536),
  K("osts", FAB_CFG_UINT, f.sharp.osts, .def = "2", .min = 1, .max = 1u << 20),
  FAB_CFG_END_ROW,
};
#undef K

gboolean fab_fabric_read_sharp(Read *r, GError **err) {
  FabSharpCfg *c = &r->f.sharp;
  if (!fab_cfg_apply(r->sharp, NULL, sharp_schema, r, err)) return FALSE;
  const Model *m = &models[c->model];
  if (!fab_cfg_get(r->sharp, "latency")) c->latency = m->latency;
  if (!fab_cfg_get(r->sharp, "window")) c->window = m->window;
  if (!fab_cfg_get(r->sharp, "trees")) c->trees = m->trees;
  if (!fab_cfg_get(r->sharp, "streams")) c->streams = m->streams;
  if (!fab_cfg_get(r->sharp, "ost_payload")) c->ost_payload = m->ost_payload;
  c->per_port = m->per_port;
  if (!c->enabled) {
    for (size_t i = 0; r->sharp && fab_cfg_kind(r->sharp) == FAB_CFG_NODE_MAP && i < fab_cfg_len(r->sharp); i++)
      if (strcmp(fab_cfg_key_at(r->sharp, i), "enabled"))
        no_effect(r, fab_cfg_at(r->sharp, i), "fabric.switch.sharp is off (enabled: false)");
    return TRUE;
  }
  if (r->f.nic.transport.kind != FAB_TRANSPORT_INFINIBAND)
    return fab_cfg_fail(fab_cfg_get(r->sharp, "enabled"), err, "SHARP is an InfiniBand switch feature: it needs "
                        "fabric.transport: infiniband (this fabric runs %s)",
                        fab_transport_names[r->f.nic.transport.kind]);
  if (c->window < r->f.nic.mtu)
    return fab_cfg_fail(fab_cfg_get(r->sharp, "window"), err, "window %" G_GUINT64_FORMAT " B is less than one "
                        "packet (mtu %u B)", c->window, r->f.nic.mtu);
  return TRUE;
}

typedef struct PTree {
  uint32_t job, nmem, nnodes;
  uint32_t *rank;                     /* nmem, sorted */
  uint32_t *sw, *parent, *up, *down;  /* nnodes: switch index, parent node, ports */
  uint32_t *leaf, *port;              /* nmem: the member's node and that switch's port to it */
} PTree;

struct FabSharpPlan {
  const FabTopology *t;
  FabSharpCfg cfg;
  uint32_t nsw;       /* network switches: t->switches[0 .. nsw) */
  GHashTable *index;  /* FabNode * -> switch index + 1 */
  GPtrArray *trees;   /* PTree * */
  /* what streaming trees hold: per switch (or per switch port, at port_off[s] + port) the jobs on it */
  GArray **holders;   /* nsw or total ports: GArray of uint32_t jobs, NULL: none */
  uint32_t *port_off; /* nsw + 1 */
  uint32_t refused;   /* claims that found no tree */
};

static void ptree_free(PTree *pt) {
  g_free(pt->rank), g_free(pt->sw), g_free(pt->parent), g_free(pt->up), g_free(pt->down);
  g_free(pt->leaf), g_free(pt->port);
  g_free(pt);
}

FabSharpPlan *fab_sharp_plan_new(const FabTopology *t, const FabSharpCfg *cfg) {
  FabSharpPlan *p = g_new0(FabSharpPlan, 1);
  p->t = t;
  p->cfg = *cfg;
  p->nsw = t->nnet;
  p->index = g_hash_table_new(g_direct_hash, g_direct_equal);
  p->port_off = g_new0(uint32_t, p->nsw + 1);
  for (uint32_t s = 0; s < p->nsw; s++) {
    g_hash_table_insert(p->index, fab_switch_node(t->switches[s]), GUINT_TO_POINTER(s + 1));
    p->port_off[s + 1] = p->port_off[s] + fab_switch_nports(t->switches[s]);
  }
  p->holders = g_new0(GArray *, cfg->per_port ? p->port_off[p->nsw] : p->nsw);
  p->trees = g_ptr_array_new_with_free_func((GDestroyNotify)ptree_free);
  return p;
}

void fab_sharp_plan_free(FabSharpPlan *p) {
  if (!p) return;
  uint32_t nh = p->cfg.per_port ? p->port_off[p->nsw] : p->nsw;
  for (uint32_t i = 0; i < nh; i++)
    if (p->holders[i]) g_array_free(p->holders[i], TRUE);
  g_free(p->holders);
  g_free(p->port_off);
  g_hash_table_destroy(p->index);
  g_ptr_array_free(p->trees, TRUE);
  g_free(p);
}

/* The network switch owning port pt, or UINT32_MAX (a NIC, a PCIe element). */
static uint32_t switch_of(const FabSharpPlan *p, const FabPort *pt) {
  if (!pt) return UINT32_MAX;
  return GPOINTER_TO_UINT(g_hash_table_lookup(p->index, pt->owner)) - 1u;
}

/* Breadth first from switch `from` over working links between network
** switches: hops to each (UINT32_MAX: unreached); with par set, each one's
** parent and the ports both ways. */
static void bfs(const FabSharpPlan *p, uint32_t from, uint32_t *hops, uint32_t *par, uint32_t *up, uint32_t *down) {
  uint32_t *queue = g_new(uint32_t, p->nsw), head = 0, tail = 0;
  for (uint32_t s = 0; s < p->nsw; s++) hops[s] = UINT32_MAX;
  hops[from] = 0;
  if (par) par[from] = UINT32_MAX;
  queue[tail++] = from;
  while (head < tail) {
    uint32_t u = queue[head++];
    FabSwitch *su = p->t->switches[u];
    for (uint32_t i = 0; i < fab_switch_nports(su); i++) {
      FabPort *pt = fab_switch_port_at(su, i);
      uint32_t w = switch_of(p, pt->peer);
      if (w == UINT32_MAX || pt->down || hops[w] != UINT32_MAX) continue;
      hops[w] = hops[u] + 1;
      if (par) par[w] = u, down[w] = i, up[w] = pt->peer->index;
      queue[tail++] = w;
    }
  }
  g_free(queue);
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* The leaf (network switch) of rank r and its port toward r's first NIC. */
static uint32_t leaf_of(const FabSharpPlan *p, uint32_t r, uint32_t *port) {
  uint32_t a = p->t->rank_attach ? p->t->rank_attach[r] : r;
  const FabPort *pt = p->t->attach[a]->peer;
  *port = pt ? pt->index : 0;
  return switch_of(p, pt);
}

/* Each member's leaf (network switch) and its port; FALSE when one has none. */
static bool leaves(const FabSharpPlan *p, const uint32_t *rank, uint32_t n, uint32_t *lsw, uint32_t *lport) {
  for (uint32_t m = 0; m < n; m++) {
    lsw[m] = leaf_of(p, rank[m], &lport[m]);
    if (lsw[m] == UINT32_MAX) return false;
  }
  return true;
}

/* The switches a tree over leaves lsw may have at its root (see topology.h),
** best first: those with the fewest hops to the farthest leaf, higher tiers
** first, then by index. Returns how many (0: the leaves are not joined). */
static uint32_t roots(const FabSharpPlan *p, const uint32_t *lsw, uint32_t n, uint32_t *cand) {
  uint32_t N = p->nsw, *worst = g_new0(uint32_t, N), *hops = g_new(uint32_t, N), *seen = g_new0(uint32_t, N);
  for (uint32_t m = 0; m < n; m++) { /* the farthest leaf from every switch */
    if (seen[lsw[m]]++) continue;
    bfs(p, lsw[m], hops, NULL, NULL, NULL);
    for (uint32_t s = 0; s < N; s++)
      worst[s] = hops[s] == UINT32_MAX || worst[s] == UINT32_MAX ? UINT32_MAX : MAX(worst[s], hops[s]);
  }
  uint32_t best = UINT32_MAX, k = 0;
  for (uint32_t s = 0; s < N; s++) best = MIN(best, worst[s]);
  for (uint32_t tier = FAB_TOPO_MAX_TIERS; best != UINT32_MAX && tier-- > 0;)
    for (uint32_t s = 0; s < N; s++)
      if (worst[s] == best && fab_switch_cfg(p->t->switches[s])->tier == tier) cand[k++] = s;
  g_free(worst), g_free(hops), g_free(seen);
  return k;
}

/* The tree rooted at `root` over the members' leaves. */
static PTree *tree_make(const FabSharpPlan *p, const uint32_t *rank, uint32_t n, const uint32_t *lsw,
                        const uint32_t *lport, uint32_t root) {
  uint32_t N = p->nsw, *hops = g_new(uint32_t, N), *par = g_new(uint32_t, N), *up = g_new(uint32_t, N);
  uint32_t *down = g_new(uint32_t, N), *node = g_new(uint32_t, N);
  bfs(p, root, hops, par, up, down);
  for (uint32_t s = 0; s < N; s++) node[s] = UINT32_MAX;
  for (uint32_t m = 0; m < n; m++) /* the paths up from the leaves */
    for (uint32_t s = lsw[m]; s != UINT32_MAX && node[s] == UINT32_MAX; s = par[s]) node[s] = 0;
  PTree *pt = g_new0(PTree, 1);
  pt->nmem = n;
  pt->rank = g_memdup2(rank, n * sizeof *rank);
  /* nodes in order of hops from the root, then switch index: the root is node 0 */
  uint32_t nn = 0;
  for (uint32_t h = 0, left = 1; left; h++) {
    left = 0;
    for (uint32_t s = 0; s < N; s++)
      if (node[s] == 0 && hops[s] >= h) {
        if (hops[s] == h) node[s] = ++nn; /* index + 1 while numbering */
        else left = 1;
      }
  }
  pt->nnodes = nn;
  pt->sw = g_new(uint32_t, nn), pt->parent = g_new(uint32_t, nn), pt->up = g_new(uint32_t, nn);
  pt->down = g_new(uint32_t, nn);
  for (uint32_t s = 0; s < N; s++) {
    if (node[s] == UINT32_MAX) continue;
    uint32_t v = node[s] - 1;
    pt->sw[v] = s;
    pt->parent[v] = s == root ? UINT32_MAX : node[par[s]] - 1;
    pt->up[v] = s == root ? UINT32_MAX : up[s];
    pt->down[v] = s == root ? UINT32_MAX : down[s];
  }
  pt->leaf = g_new(uint32_t, n), pt->port = g_new(uint32_t, n);
  for (uint32_t m = 0; m < n; m++) pt->leaf[m] = node[lsw[m]] - 1, pt->port[m] = lport[m];
  g_free(hops), g_free(par), g_free(up), g_free(down), g_free(node);
  return pt;
}

/* The resources tree pt would hold: switch s (per switch), or switch s's
** port (per port); calls fn on each holder slot. */
static void slots(const FabSharpPlan *p, const PTree *pt, void (*fn)(GArray **slot, void *ctx), void *ctx) {
  for (uint32_t v = 0; v < pt->nnodes; v++) {
    uint32_t s = pt->sw[v];
    if (!p->cfg.per_port) {
      fn(&p->holders[s], ctx);
      continue;
    }
    /* per port: the ports the tree's packets use at this switch */
    if (pt->parent[v] != UINT32_MAX) fn(&p->holders[p->port_off[s] + pt->up[v]], ctx);
    for (uint32_t c = 0; c < pt->nnodes; c++)
      if (pt->parent[c] == v) fn(&p->holders[p->port_off[s] + pt->down[c]], ctx);
    for (uint32_t m = 0; m < pt->nmem; m++)
      if (pt->leaf[m] == v) fn(&p->holders[p->port_off[s] + pt->port[m]], ctx);
  }
}

/* A claim's look at the holder slots: `owner` the tree it would make (trees are held per communicator: a
** job's other communicators are others too, as SHARP's lock at communicator init makes them). */
typedef struct Check { uint32_t owner, limit; bool full; } Check;

static void check_slot(GArray **slot, void *ctx) {
  Check *c = ctx;
  if (!*slot) return;
  uint32_t others = 0;
  bool mine = false;
  for (guint i = 0; i < (*slot)->len; i++) {
    if (g_array_index(*slot, uint32_t, i) == c->owner) mine = true;
    else others++;
  }
  if (!mine && others >= c->limit) c->full = true;
}

static void take_slot(GArray **slot, void *ctx) {
  const Check *c = ctx;
  if (!*slot) *slot = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  for (guint i = 0; i < (*slot)->len; i++)
    if (g_array_index(*slot, uint32_t, i) == c->owner) return;
  g_array_append_val(*slot, c->owner);
}

int32_t fab_sharp_plan_claim(FabSharpPlan *p, uint32_t job, const uint32_t *ranks, uint32_t n, char **why) {
  *why = NULL;
  uint32_t *r = g_memdup2(ranks, n * sizeof *ranks);
  qsort(r, n, sizeof *r, cmp_u32);
  for (guint i = 0; i < p->trees->len; i++) { /* claimed before */
    const PTree *pt = g_ptr_array_index(p->trees, i);
    if (pt->job == job && pt->nmem == n && !memcmp(pt->rank, r, n * sizeof *r)) {
      g_free(r);
      return (int32_t)i;
    }
  }
  int32_t id = -1;
  uint32_t *lsw = g_new(uint32_t, n), *lport = g_new(uint32_t, n), *cand = g_new(uint32_t, p->nsw), nc = 0;
  if (p->trees->len >= p->cfg.trees) {
    *why = g_strdup_printf("the subnet's %u SHARP trees are all taken (fabric.switch.sharp.trees)", p->cfg.trees);
  } else if (!leaves(p, r, n, lsw, lport) || !(nc = roots(p, lsw, n, cand))) {
    *why = g_strdup("its members' switches are not joined by working links");
  } else {
    Check c = {p->trees->len, p->cfg.lock == FAB_SHARP_LOCK_OP ? UINT32_MAX : p->cfg.streams, true}; /* per operation:
                                                                                                        ** shared */
    for (uint32_t k = 0; k < nc && c.full; k++) { /* the first root whose tree has room */
      PTree *pt = tree_make(p, r, n, lsw, lport, cand[k]);
      c.full = false;
      slots(p, pt, check_slot, &c);
      if (c.full) {
        ptree_free(pt);
        continue;
      }
      slots(p, pt, take_slot, &c);
      pt->job = job;
      g_ptr_array_add(p->trees, pt);
      id = (int32_t)p->trees->len - 1;
    }
    if (c.full)
      *why = g_strdup_printf("another communicator's streaming aggregation holds a %s of every tree it could have (%s "
                             "allows %u per %s: fabric.switch.sharp.streams)", p->cfg.per_port ? "port" : "switch",
                             fab_sharp_model_names[p->cfg.model], p->cfg.streams, p->cfg.per_port ? "port" : "switch");
  }
  g_free(lsw), g_free(lport), g_free(cand);
  g_free(r);
  p->refused += id < 0;
  return id;
}

uint32_t fab_sharp_plan_refused(const FabSharpPlan *p) { return p ? p->refused : 0; }

uint32_t fab_sharp_plan_ntrees(const FabSharpPlan *p) { return p ? p->trees->len : 0; }

const uint32_t *fab_sharp_plan_members(const FabSharpPlan *p, uint32_t i, uint32_t *n) {
  const PTree *pt = g_ptr_array_index(p->trees, i);
  *n = pt->nmem;
  return pt->rank;
}

const char *fab_sharp_plan_root(const FabSharpPlan *p, uint32_t i, uint32_t *nodes, uint32_t *job) {
  const PTree *pt = g_ptr_array_index(p->trees, i);
  *nodes = pt->nnodes;
  *job = pt->job;
  return fab_switch_name(p->t->switches[pt->sw[0]]); /* node 0 is the root */
}

typedef struct Res { const FabSharpPlan *p; GArray *ids; } Res;

/* slots(): the resource's number (its holder slot's index), once each. */
static void res_of(GArray **slot, void *ctx) {
  Res *rs = ctx;
  uint32_t id = (uint32_t)(slot - rs->p->holders);
  for (guint i = 0; i < rs->ids->len; i++)
    if (g_array_index(rs->ids, uint32_t, i) == id) return;
  g_array_append_val(rs->ids, id);
}

void fab_sharp_plan_install(const FabSharpPlan *p, FabTopology *t, FabSharp *s) {
  g_assert(t->nnet == p->nsw);
  for (guint i = fab_sharp_ntrees(s); i < p->trees->len; i++) { /* those not made yet */
    const PTree *pt = g_ptr_array_index(p->trees, i);
    FabSwitch **sw = g_new(FabSwitch *, pt->nnodes);
    for (uint32_t v = 0; v < pt->nnodes; v++) sw[v] = t->switches[pt->sw[v]];
    uint32_t id = fab_sharp_add_tree(s, pt->nnodes, sw, pt->parent, pt->up, pt->down, pt->nmem, pt->rank, pt->leaf,
                                     pt->port);
    g_assert(id == i);
    g_free(sw);
    if (p->cfg.lock == FAB_SHARP_LOCK_OP) {
      Res rs = {p, g_array_new(FALSE, FALSE, sizeof(uint32_t))};
      slots(p, pt, res_of, &rs);
      fab_sharp_set_locks(s, id, id, rs.ids->len, (const uint32_t *)(void *)rs.ids->data);
      g_array_free(rs.ids, TRUE);
    }
  }
}

/* Routes recomputed from the links that are up, and links found by name.
** See topology.h (fab_topology_reroute, fab_topology_find_link). */
#include "topology.h"
#include <string.h>

#define FAR UINT32_MAX /* no path */

/* The network: switch s's port p leads to network switch nbr[s][p] (FAR:
** to something else, or nowhere). */
typedef struct Net {
  FabTopology *t;
  bool (*down)(const FabPort *pt, void *ctx); /* the links' state as the caller sees it; NULL: pt->down */
  void *down_ctx;
  uint32_t n;           /* network switches: t->switches[0 .. n) */
  GHashTable *idx;      /* a network switch's node -> its index + 1 */
  uint32_t **nbr;
  uint32_t *dist;       /* scratch: hops to the endpoint's attachment switches */
  uint32_t *queue;
} Net;

/* Both directions of the link from pt are up. */
static inline bool link_up(const Net *g, const FabPort *pt) {
  if (!pt->peer) return false;
  if (g->down) return !g->down(pt, g->down_ctx) && !g->down(pt->peer, g->down_ctx);
  return !pt->down && !pt->peer->down;
}

static void net_init(Net *g, FabTopology *t) {
  g->t = t;
  g->n = t->nnet;
  GHashTable *idx = g->idx = g_hash_table_new(NULL, NULL);
  for (uint32_t s = 0; s < g->n; s++)
    g_hash_table_insert(idx, fab_switch_node(t->switches[s]), GUINT_TO_POINTER(s + 1));
  g->nbr = g_new(uint32_t *, g->n);
  for (uint32_t s = 0; s < g->n; s++) {
    uint32_t np = fab_switch_nports(t->switches[s]);
    g->nbr[s] = g_new(uint32_t, np);
    for (uint32_t p = 0; p < np; p++) {
      const FabPort *pt = fab_switch_port_at(t->switches[s], p);
      uint32_t k = pt->peer ? GPOINTER_TO_UINT(g_hash_table_lookup(idx, pt->peer->owner)) : 0;
      g->nbr[s][p] = k ? k - 1 : FAR;
    }
  }
  g->dist = g_new(uint32_t, g->n);
  g->queue = g_new(uint32_t, g->n);
}

static void net_clear(Net *g) {
  g_hash_table_destroy(g->idx);
  for (uint32_t s = 0; s < g->n; s++) g_free(g->nbr[s]);
  g_free(g->nbr);
  g_free(g->dist);
  g_free(g->queue);
}

/* The network port each attachment a in [first, first + n) is linked to,
** when that link is up: its switch's index into *sw, the port into *port;
** returns how many (at most max). */
static uint32_t edges_of(const Net *g, uint32_t first, uint32_t n, uint32_t *sw, uint32_t *port, uint32_t max) {
  const FabTopology *t = g->t;
  uint32_t k = 0;
  for (uint32_t a = first; a < first + n && a < t->nattach && k < max; a++) {
    const FabPort *at = t->attach[a];
    if (!at || !link_up(g, at)) continue;
    uint32_t s = GPOINTER_TO_UINT(g_hash_table_lookup(g->idx, at->peer->owner));
    if (!s) continue;
    sw[k] = s - 1;
    port[k++] = at->peer->index;
  }
  return k;
}

/* Breadth first from the switches in `src` over links up. */
static void bfs(Net *g, const uint32_t *src, uint32_t nsrc) {
  uint32_t head = 0, tail = 0;
  for (uint32_t s = 0; s < g->n; s++) g->dist[s] = FAR;
  for (uint32_t i = 0; i < nsrc; i++)
    if (g->dist[src[i]] == FAR) {
      g->dist[src[i]] = 0;
      g->queue[tail++] = src[i];
    }
  while (head < tail) {
    uint32_t s = g->queue[head++];
    FabSwitch *sw = g->t->switches[s];
    for (uint32_t p = 0; p < fab_switch_nports(sw); p++) {
      uint32_t m = g->nbr[s][p];
      if (m != FAR && g->dist[m] == FAR && link_up(g, fab_switch_port_at(sw, p))) {
        g->dist[m] = g->dist[s] + 1;
        g->queue[tail++] = m;
      }
    }
  }
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Route endpoint r (lane 0) or its lane at switch s over ports[0..n)
** (sorted; n == 0 unsets a lane), reusing a group of the same ports;
** whether the route changed. */
static bool set_ports(FabSwitch *sw, GHashTable *groups, uint32_t r, uint32_t lane, const uint32_t *ports,
                      uint32_t n) {
  uint32_t g = lane ? fab_switch_lane_group(sw, r, lane) : fab_switch_route_group(sw, r), glen = 0;
  const uint32_t *cur = g != UINT32_MAX ? fab_switch_group_ports(sw, g, &glen) : NULL;
  bool same = glen == n;
  for (uint32_t i = 0; same && i < n; i++) { /* built groups list their ports in order too */
    bool in = false;
    for (uint32_t j = 0; j < glen; j++) in |= cur[j] == ports[i];
    same = in;
  }
  if (same) return false;
  if (!n) {
    fab_switch_set_lane_route(sw, r, lane, UINT32_MAX);
    return true;
  }
  GString *key = g_string_new(NULL);
  for (uint32_t i = 0; i < n; i++) g_string_append_printf(key, "%u,", ports[i]);
  gpointer gid = g_hash_table_lookup(groups, key->str);
  if (!gid) {
    gid = GUINT_TO_POINTER(fab_switch_add_group(sw, ports, n) + 1);
    g_hash_table_insert(groups, g_string_free(key, FALSE), gid);
  } else {
    g_string_free(key, TRUE);
  }
  if (lane) fab_switch_set_lane_route(sw, r, lane, GPOINTER_TO_UINT(gid) - 1);
  else fab_switch_set_route(sw, r, GPOINTER_TO_UINT(gid) - 1);
  return true;
}

/* The reroute's state: the network, per switch its groups by ports, scratch. */
typedef struct Reroute {
  Net g;
  GHashTable **groups;
  uint32_t *ports;
  GString *srcs, *cached;
  uint32_t ncached;
  bool (*want)(const FabSwitch *sw, void *ctx);
  void *ctx;
} Reroute;

/* Route endpoint r's attachments [first, first + n) (lane 0: all of r's;
** else the one of that lane) at every switch; how many routes changed. A
** rank cut off keeps its routes (what is sent to it is lost on the way); a
** lane cut off, or at a switch that cannot reach it, falls back to the
** rank's route. */
static uint64_t route_one(Reroute *rr, uint32_t r, uint32_t lane, uint32_t first, uint32_t n) {
  Net *g = &rr->g;
  FabTopology *t = g->t;
  uint32_t esw[64], eport[64], ne = edges_of(g, first, n, esw, eport, G_N_ELEMENTS(esw));
  uint64_t changed = 0;
  if (!ne && !lane) return 0;
  g_string_truncate(rr->srcs, 0);
  for (uint32_t i = 0; i < ne; i++) g_string_append_printf(rr->srcs, "%u,", esw[i]);
  if (ne && (!rr->ncached || strcmp(rr->srcs->str, rr->cached->str))) { /* endpoints on one switch share distances */
    bfs(g, esw, ne);
    g_string_assign(rr->cached, rr->srcs->str);
    rr->ncached++;
  }
  for (uint32_t s = 0; s < g->n; s++) {
    FabSwitch *sw = t->switches[s];
    if ((rr->want && !rr->want(sw, rr->ctx)) || r >= fab_switch_nendpoints(sw)) continue;
    uint32_t k = 0, *ports = rr->ports;
    if (!ne || g->dist[s] == FAR) {
      if (lane) changed += set_ports(sw, rr->groups[s], r, lane, ports, 0);
      continue;
    }
    if (g->dist[s] == 0) { /* its own links to the endpoint's attachments */
      for (uint32_t i = 0; i < ne; i++)
        if (esw[i] == s) ports[k++] = eport[i];
    } else {
      for (uint32_t p = 0; p < fab_switch_nports(sw); p++) {
        uint32_t m = g->nbr[s][p];
        if (m != FAR && g->dist[m] + 1 == g->dist[s] && link_up(g, fab_switch_port_at(sw, p))) ports[k++] = p;
      }
    }
    qsort(ports, k, sizeof *ports, cmp_u32);
    changed += set_ports(sw, rr->groups[s], r, lane, ports, k);
  }
  return changed;
}

uint64_t fab_topology_reroute(FabTopology *t, bool (*want)(const FabSwitch *sw, void *ctx), void *ctx) {
  return fab_topology_reroute_seen(t, want, NULL, ctx);
}

uint64_t fab_topology_reroute_seen(FabTopology *t, bool (*want)(const FabSwitch *sw, void *ctx),
                                   bool (*down)(const FabPort *pt, void *ctx), void *ctx) {
  Reroute rr = {.want = want, .ctx = ctx};
  net_init(&rr.g, t);
  rr.g.down = down;
  rr.g.down_ctx = ctx;
  uint32_t nsw = rr.g.n, maxp = 1;
  rr.groups = g_new(GHashTable *, nsw);
  for (uint32_t s = 0; s < nsw; s++) rr.groups[s] = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (uint32_t s = 0; s < nsw; s++) maxp = MAX(maxp, fab_switch_nports(t->switches[s]));
  rr.ports = g_new(uint32_t, maxp);
  rr.srcs = g_string_new(NULL);
  rr.cached = g_string_new(NULL);
  uint64_t changed = 0;
  uint32_t nr = nsw ? fab_switch_nendpoints(t->switches[0]) : 0, npg = t->rank_attach ? t->rank_nattach : 1;
  for (uint32_t r = 0; r < nr; r++) changed += route_one(&rr, r, 0, t->rank_attach ? t->rank_attach[r] : r, npg);
  if (npg > 1) /* rail-matched lanes (switch.h), lane by lane so ranks on one switch share a search */
    for (uint32_t i = 0; i < npg; i++)
      for (uint32_t r = 0; r < nr; r++) changed += route_one(&rr, r, i + 1, t->rank_attach[r] + i, 1);
  g_string_free(rr.srcs, TRUE);
  g_string_free(rr.cached, TRUE);
  for (uint32_t s = 0; s < nsw; s++) g_hash_table_destroy(rr.groups[s]);
  g_free(rr.groups);
  g_free(rr.ports);
  net_clear(&rr.g);
  return changed;
}

/* ---- links by name ------------------------------------------------------------ */

typedef struct Find {
  const char *a, *b;
  FabPort *hit;
  bool a_seen, b_seen;
} Find;

static void find_one(FabPort *pt, void *ctx) {
  Find *f = ctx;
  if (!pt->peer) return;
  bool a = !strcmp(pt->owner->name, f->a), b = !strcmp(pt->owner->name, f->b);
  f->a_seen |= a;
  f->b_seen |= b;
  if (a && !f->hit && !strcmp(pt->peer->owner->name, f->b)) f->hit = pt;
}

FabPort *fab_topology_find_link(FabTopology *t, const char *a, const char *b, const char **why) {
  Find f = {a, b, NULL, false, false};
  fab_topology_foreach_port(t, find_one, &f);
  *why = f.hit ? NULL : !f.a_seen ? "a" : !f.b_seen ? "b" : "not linked";
  return f.hit;
}

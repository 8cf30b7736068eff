/* Link failures and changes during a run. See failures.h. */
#include "failures.h"
#include <string.h>
#include "sim/par.h"

enum { APPLY = 0, REROUTE_HASHED = 1 }; /* event kinds: arg = kind | change index << 1 */

typedef struct Change {
  FabLinkChange c;
  FabPort *ab, *ba;            /* the link's two directions */
} Change;

struct FabFailures {
  FabElem el;
  FabTopology *t;
  const FabPar *par;           /* a parallel run's copy: it applies the changes to partition `part`'s elements */
  uint32_t part;
  fab_time_t delay;            /* reroute_delay */
  uint32_t n;
  Change *ch;
  FabLinkChangeRec *rec, *out;
  uint64_t *lost0, *lost_bytes0; /* the link's loss counters when change i took it down */
  bool *open;                  /* change i took its link down and it has not changed state since */
  uint32_t *downs;             /* change i was its link's downs[i]-th down (0: it took no link down) */
  GHashTable *down;            /* a copy: the ports down as it applied the changes (its routes' view) */
  GHashTable *in_by;           /* a copy: the far end of a cut link it runs -> its losses by epoch (port.h) */
};

static void failures_wake(FabEngine *eng, void *self, uint64_t arg);
static const FabOps failures_ops = {"failures", failures_wake};

FabFailures *fab_failures_new(FabTopology *t, const FabFabricCfg *cfg) { return fab_failures_new_part(t, cfg, NULL, 0); }

/* The downs in x's schedule of the link change i names. */
static uint32_t schedule_downs(const FabFailures *x, uint32_t i) {
  uint32_t k = 0;
  for (uint32_t j = 0; j < x->n; j++) k += x->ch[j].ab == x->ch[i].ab && x->ch[j].c.down == 1;
  return k;
}

FabFailures *fab_failures_new_part(FabTopology *t, const FabFabricCfg *cfg, const FabPar *par, uint32_t part) {
  FabFailures *x = g_new0(FabFailures, 1);
  fab_elem_init(&x->el, &failures_ops);
  x->t = t;
  x->par = par;
  x->part = part;
  x->delay = cfg->reroute_delay;
  x->n = cfg->nchanges;
  uint32_t n = MAX(x->n, 1u);
  x->ch = g_new0(Change, n);
  x->rec = g_new0(FabLinkChangeRec, n);
  x->out = g_new0(FabLinkChangeRec, n);
  x->lost0 = g_new0(uint64_t, n);
  x->lost_bytes0 = g_new0(uint64_t, n);
  x->open = g_new0(bool, n);
  x->downs = g_new0(uint32_t, n);
  if (par) {
    x->down = g_hash_table_new(NULL, NULL);
    x->in_by = g_hash_table_new_full(NULL, NULL, NULL, g_free);
  }
  for (uint32_t i = 0; i < x->n; i++) {
    const FabLinkChange *c = &cfg->changes[i];
    const char *why;
    Change *h = &x->ch[i];
    h->c = *c;
    h->ab = fab_topology_find_link(t, c->a, c->b, &why);
    g_assert(h->ab); /* fab_failures_check */
    h->ba = h->ab->peer;
    FabLinkChangeRec *r = &x->rec[i];
    g_snprintf(r->link, sizeof r->link, "%s-%s", c->a, c->b);
    r->at = c->at;
    r->bps = c->bps;
    r->change = c->down == 1 ? "down" : c->down == 0 ? "up" : c->bps && c->set_latency ? "rate and latency"
                : c->bps ? "rate" : "latency";
  }
  for (uint32_t i = 0; par && i < x->n; i++) { /* the far ends of cut links this copy runs count their losses */
    FabPort *dir[2] = {x->ch[i].ab, x->ch[i].ba};
    for (int d = 0; d < 2; d++)
      if (dir[d]->cut && dir[d]->far == part && !g_hash_table_contains(x->in_by, dir[d]->peer))
        g_hash_table_insert(x->in_by, dir[d]->peer, g_new0(uint64_t, 3 * (schedule_downs(x, i) + 1)));
  }
  return x;
}

void fab_failures_free(FabFailures *x) {
  if (!x) return;
  g_free(x->ch);
  g_free(x->rec);
  g_free(x->out);
  g_free(x->lost0);
  g_free(x->lost_bytes0);
  g_free(x->open);
  g_free(x->downs);
  if (x->down) g_hash_table_destroy(x->down);
  if (x->in_by) {
    GHashTableIter it;
    gpointer port;
    g_hash_table_iter_init(&it, x->in_by);
    while (g_hash_table_iter_next(&it, &port, NULL)) ((FabPort *)port)->in_lost_by = NULL;
    g_hash_table_destroy(x->in_by);
  }
  g_free(x);
}

FabElem *fab_failures_elem(FabFailures *x) { return &x->el; }

/* pt sends from an element x applies changes to (one engine: every one). */
static inline bool mine(const FabFailures *x, const FabPort *pt) { return !x->par || pt->part == x->part; }

/* x runs the arrivals of pt's cut wire. */
static inline bool far_mine(const FabFailures *x, const FabPort *pt) {
  return x->par && pt->cut && pt->far == x->part;
}

static inline bool mine_switch(const FabFailures *x, const FabSwitch *sw) {
  return !x->par || fab_par_part_of(x->par, fab_switch_node((FabSwitch *)sw)) == x->part; /* reads its id */
}

static bool routes_per_packet(const FabSwitch *sw, void *ctx) {
  return fab_switch_cfg(sw)->routing != FAB_ROUTE_ECMP && mine_switch(ctx, sw);
}

static bool routes_by_hash(const FabSwitch *sw, void *ctx) {
  return fab_switch_cfg(sw)->routing == FAB_ROUTE_ECMP && mine_switch(ctx, sw);
}

static bool seen_down(const FabPort *pt, void *ctx) {
  const FabFailures *x = ctx;
  return g_hash_table_contains(x->down, pt);
}

static uint64_t reroute(FabFailures *x, bool (*want)(const FabSwitch *sw, void *ctx)) {
  return fab_topology_reroute_seen(x->t, want, x->par ? seen_down : NULL, x);
}

/* The losses of change i's link so far, both directions (a copy: from the
** ports it applies changes to; what the far ends of cut wires lost is
** counted by epoch, fab_failures_records). */
static uint64_t link_lost(const FabFailures *x, const Change *h, uint64_t *bytes) {
  uint64_t n = 0;
  *bytes = 0;
  const FabPort *dir[2] = {h->ab, h->ba};
  for (int d = 0; d < 2; d++)
    if (mine(x, dir[d])) {
      n += dir[d]->lost;
      *bytes += dir[d]->lost_bytes;
    }
  return n;
}

/* Change i sets its link's state: close the books of the change before it
** that took the same link down, if it is still open. */
static void close_down(FabFailures *x, uint32_t i) {
  for (uint32_t j = i; j-- > 0;)
    if (x->ch[j].ab == x->ch[i].ab && x->open[j]) {
      uint64_t b, n = link_lost(x, &x->ch[j], &b);
      x->rec[j].lost = n - x->lost0[j];
      x->rec[j].lost_bytes = b - x->lost_bytes0[j];
      x->open[j] = false;
    }
}

static void apply(FabEngine *eng, FabFailures *x, uint32_t i) {
  Change *h = &x->ch[i];
  FabPort *dir[2] = {h->ab, h->ba};
  for (int d = 0; d < 2; d++) {
    if (!mine(x, dir[d])) continue;
    if (h->c.bps) fab_port_set_rate(dir[d], h->c.bps);
    if (h->c.set_latency) dir[d]->latency = h->c.latency;
  }
  if (h->c.down < 0) return;
  bool down = h->c.down == 1, was = false;
  for (uint32_t j = 0; j < i; j++) /* the link's state before: its last down or up before this one */
    if (x->ch[j].ab == h->ab && x->ch[j].c.down >= 0) was = x->ch[j].c.down == 1;
  if (down && !was)
    for (uint32_t j = 0; j <= i; j++) x->downs[i] += x->ch[j].ab == h->ab && (j == i || x->downs[j]);
  close_down(x, i);
  if (down) {
    x->lost0[i] = link_lost(x, h, &x->lost_bytes0[i]);
    x->open[i] = true;
  }
  for (int d = 0; d < 2; d++) {
    if (x->down && down) g_hash_table_add(x->down, dir[d]);
    else if (x->down) g_hash_table_remove(x->down, dir[d]);
    if (mine(x, dir[d])) fab_port_set_down(eng, dir[d], down);
    if (far_mine(x, dir[d])) fab_port_set_far_down(dir[d]->peer, down, g_hash_table_lookup(x->in_by, dir[d]->peer));
  }
  uint64_t n = reroute(x, routes_per_packet);
  x->rec[i].rerouted += n;
  if (n) x->rec[i].rerouted_at = eng->now;
  fab_engine_after(eng, x->delay, x, REROUTE_HASHED | (uint64_t)i << 1);
}

static void failures_wake(FabEngine *eng, void *self, uint64_t arg) {
  FabFailures *x = self;
  uint32_t i = (uint32_t)(arg >> 1);
  if (x->par && x->part) eng->events--; /* the first copy's event again: a run counts one engine's events */
  if ((arg & 1) == APPLY) {
    apply(eng, x, i);
    return;
  }
  uint64_t n = reroute(x, routes_by_hash);
  x->rec[i].rerouted += n;
  if (n) x->rec[i].rerouted_at = eng->now;
}

void fab_failures_as_built(FabTopology *t, const FabFabricCfg *cfg) {
  for (uint32_t i = 0; i < cfg->nchanges; i++) {
    const FabLinkChange *c = &cfg->changes[i];
    const char *why;
    if (c->at != 0 || c->down >= 0) continue;
    FabPort *ab = fab_topology_find_link(t, c->a, c->b, &why);
    g_assert(ab); /* fab_failures_check */
    FabPort *dir[2] = {ab, ab->peer};
    for (int d = 0; d < 2; d++) {
      if (c->bps) fab_port_set_rate(dir[d], c->bps);
      if (c->set_latency) dir[d]->latency = c->latency;
    }
  }
}

void fab_failures_start(FabEngine *eng, FabFailures *x) {
  for (uint32_t i = 0; i < x->n; i++) {
    if (x->ch[i].c.at == 0 && x->ch[i].c.down < 0) apply(eng, x, i); /* a link as built differently: no event */
    else fab_engine_at(eng, x->ch[i].c.at, x, APPLY | (uint64_t)i << 1);
  }
}

const FabLinkChangeRec *fab_failures_records(FabFailures *x, uint32_t *n) {
  for (uint32_t i = 0; i < x->n; i++) {
    FabLinkChangeRec *o = &x->out[i];
    *o = x->rec[i];
    if (x->open[i]) { /* still down: counted up to now */
      uint64_t b, k = link_lost(x, &x->ch[i], &b);
      o->lost = k - x->lost0[i];
      o->lost_bytes = b - x->lost_bytes0[i];
    }
    const FabPort *dir[2] = {x->ch[i].ab, x->ch[i].ba};
    for (int d = 0; x->downs[i] && d < 2; d++) { /* sent in the epoch before this down, lost on a cut wire */
      const uint64_t *by = far_mine(x, dir[d]) ? g_hash_table_lookup(x->in_by, dir[d]->peer) : NULL;
      if (!by) continue;
      o->lost += by[3 * (x->downs[i] - 1)];
      o->lost_bytes += by[3 * (x->downs[i] - 1) + 1];
    }
  }
  *n = x->n;
  return x->out;
}

void fab_failures_merge(FabLinkChangeRec *into, const FabLinkChangeRec *from, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    into[i].lost += from[i].lost;
    into[i].lost_bytes += from[i].lost_bytes;
    into[i].rerouted += from[i].rerouted;
    into[i].rerouted_at = MAX(into[i].rerouted_at, from[i].rerouted_at);
  }
}

/* pt joins two network switches, or a network switch and a network
** attachment (a host's NIC, a GPU node's NIC port). */
static bool network_link(const FabTopology *t, const FabPort *pt) {
  bool a = false, b = false;
  for (uint32_t s = 0; s < t->nnet; s++) {
    const FabNode *n = fab_switch_node(t->switches[s]);
    a |= pt->owner == n;
    b |= pt->peer->owner == n;
  }
  for (uint32_t i = 0; i < t->nattach; i++) {
    a |= t->attach[i] == pt;
    b |= t->attach[i] == pt->peer;
  }
  return a && b;
}

gboolean fab_failures_check(const FabFabricCfg *cfg, GError **err) {
  if (!cfg->nchanges) return TRUE;
  if (cfg->topo.kind == FAB_TOPO_RING)
    return fab_cfg_fail(cfg->changes[0].node, err, "a ring routes clockwise by construction: its links cannot fail "
                        "(no other route to take); use a leaf-spine, fat-tree or rail fabric");
  FabTopology *t = fab_topology_build(cfg);
  gboolean ok = TRUE;
  for (uint32_t i = 0; ok && i < cfg->nchanges; i++) {
    const FabLinkChange *c = &cfg->changes[i];
    const char *why;
    const FabCfgNode *at = fab_cfg_get(c->node, "link") ? fab_cfg_get(c->node, "link") : c->node;
    FabPort *pt = fab_topology_find_link(t, c->a, c->b, &why);
    if (pt && !network_link(t, pt))
      ok = fab_cfg_fail(at, err, "%s-%s is inside a GPU node (NVLink or PCIe): only the network's links can fail "
                        "(switch to switch, or a NIC port to its switch), as nothing routes around the others",
                        c->a, c->b);
    if (pt) continue;
    if (!strcmp(why, "not linked"))
      ok = fab_cfg_fail(at, err, "'%s' and '%s' are not linked (a link joins two elements named as in the /links "
                        "table, such as leaf0-spine1 or host3-leaf0)", c->a, c->b);
    else
      ok = fab_cfg_fail(at, err, "no element '%s' in this fabric (elements are named as in the /links table: leaf0, "
                        "spine1, host3, ...)", *why == 'a' ? c->a : c->b);
  }
  fab_topology_free(t);
  return ok;
}

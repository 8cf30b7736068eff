/* Link failures and changes during a run. See failures.h. */
#include "failures.h"
#include <string.h>

enum { APPLY = 0, REROUTE_HASHED = 1 }; /* event kinds: arg = kind | change index << 1 */

typedef struct Change {
  FabLinkChange c;
  FabPort *ab, *ba;            /* the link's two directions */
} Change;

struct FabFailures {
  FabElem el;
  FabTopology *t;
  fab_time_t delay;            /* reroute_delay */
  uint32_t n;
  Change *ch;
  FabLinkChangeRec *rec;
  uint64_t *lost0, *lost_bytes0; /* the link's loss counters when change i took it down */
  bool *open;                  /* change i took its link down and it has not changed state since */
};

static void failures_wake(FabEngine *eng, void *self, uint64_t arg);
static const FabOps failures_ops = {"failures", failures_wake};

FabFailures *fab_failures_new(FabTopology *t, const FabFabricCfg *cfg) {
  FabFailures *x = g_new0(FabFailures, 1);
  fab_elem_init(&x->el, &failures_ops);
  x->t = t;
  x->delay = cfg->reroute_delay;
  x->n = cfg->nchanges;
  uint32_t n = MAX(x->n, 1u);
  x->ch = g_new0(Change, n);
  x->rec = g_new0(FabLinkChangeRec, n);
  x->lost0 = g_new0(uint64_t, n);
  x->lost_bytes0 = g_new0(uint64_t, n);
  x->open = g_new0(bool, n);
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
  return x;
}

void fab_failures_free(FabFailures *x) {
  if (!x) return;
  g_free(x->ch);
  g_free(x->rec);
  g_free(x->lost0);
  g_free(x->lost_bytes0);
  g_free(x->open);
  g_free(x);
}

FabElem *fab_failures_elem(FabFailures *x) { return &x->el; }

static bool routes_per_packet(const FabSwitch *sw, void *ctx) {
  (void)ctx;
  return fab_switch_cfg(sw)->routing != FAB_ROUTE_ECMP;
}

static bool routes_by_hash(const FabSwitch *sw, void *ctx) {
  (void)ctx;
  return fab_switch_cfg(sw)->routing == FAB_ROUTE_ECMP;
}

/* The losses of change i's link so far, both directions. */
static uint64_t link_lost(const Change *h, uint64_t *bytes) {
  *bytes = h->ab->lost_bytes + h->ba->lost_bytes;
  return h->ab->lost + h->ba->lost;
}

/* Change i sets its link's state: close the books of the change before it
** that took the same link down, if it is still open. */
static void close_down(FabFailures *x, uint32_t i) {
  for (uint32_t j = i; j-- > 0;)
    if (x->ch[j].ab == x->ch[i].ab && x->open[j]) {
      uint64_t b, n = link_lost(&x->ch[j], &b);
      x->rec[j].lost = n - x->lost0[j];
      x->rec[j].lost_bytes = b - x->lost_bytes0[j];
      x->open[j] = false;
    }
}

static void apply(FabEngine *eng, FabFailures *x, uint32_t i) {
  Change *h = &x->ch[i];
  if (h->c.bps) {
    fab_port_set_rate(h->ab, h->c.bps);
    fab_port_set_rate(h->ba, h->c.bps);
  }
  if (h->c.set_latency) h->ab->latency = h->ba->latency = h->c.latency;
  if (h->c.down < 0) return;
  close_down(x, i);
  if (h->c.down == 1) {
    x->lost0[i] = link_lost(h, &x->lost_bytes0[i]);
    x->open[i] = true;
  }
  fab_port_set_down(eng, h->ab, h->c.down == 1);
  fab_port_set_down(eng, h->ba, h->c.down == 1);
  uint64_t n = fab_topology_reroute(x->t, routes_per_packet, NULL);
  x->rec[i].rerouted += n;
  if (n) x->rec[i].rerouted_at = eng->now;
  fab_engine_after(eng, x->delay, x, REROUTE_HASHED | (uint64_t)i << 1);
}

static void failures_wake(FabEngine *eng, void *self, uint64_t arg) {
  FabFailures *x = self;
  uint32_t i = (uint32_t)(arg >> 1);
  if ((arg & 1) == APPLY) {
    apply(eng, x, i);
    return;
  }
  uint64_t n = fab_topology_reroute(x->t, routes_by_hash, NULL);
  x->rec[i].rerouted += n;
  if (n) x->rec[i].rerouted_at = eng->now;
}

void fab_failures_start(FabEngine *eng, FabFailures *x) {
  for (uint32_t i = 0; i < x->n; i++) {
    if (x->ch[i].c.at == 0 && x->ch[i].c.down < 0) apply(eng, x, i); /* a link as built differently: no event */
    else fab_engine_at(eng, x->ch[i].c.at, x, APPLY | (uint64_t)i << 1);
  }
}

const FabLinkChangeRec *fab_failures_records(FabFailures *x, uint32_t *n) {
  for (uint32_t i = 0; i < x->n; i++)
    if (x->open[i]) { /* still down: counted up to now */
      uint64_t b, k = link_lost(&x->ch[i], &b);
      x->rec[i].lost = k - x->lost0[i];
      x->rec[i].lost_bytes = b - x->lost_bytes0[i];
    }
  *n = x->n;
  return x->rec;
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

/* Shared-buffer switch with dynamic-threshold admission. See switch.h. */
#include "switch.h"
#include "ecmp.h"
#include <glib.h>
#include <string.h>

static void switch_wake(FabEngine *eng, void *self, uint64_t arg) { g_assert_not_reached(); }
static const FabOps switch_ops = {"switch", switch_wake};

static void switch_receive(FabEngine *eng, FabNode *self, FabPkt *p, FabPort *in) {
  FabSwitch *sw = (FabSwitch *)self;
  FabPort *out = fab_switch_next_hop(sw, p->dst, p->hash);
  if (G_UNLIKELY(!out)) {
    sw->unroutable++;
    sw->drops++;
    sw->drop_bytes += p->wire;
    fab_pkt_free(eng->pool, p);
    return;
  }
  uint64_t free_bytes = sw->cfg.buffer - sw->used;
  uint64_t limit = (uint64_t)(sw->cfg.alpha * (double)free_bytes);
  if (p->wire > free_bytes || out->q[p->prio].bytes + p->wire > limit) {
    out->drops++;
    out->drop_bytes += p->wire;
    sw->drops++;
    sw->drop_bytes += p->wire;
    fab_pkt_free(eng->pool, p);
    return;
  }
  sw->used += p->wire;
  if (sw->used > sw->max_used) sw->max_used = sw->used;
  p->in_port = (uint16_t)in->index;
  sw->ingress[in->index * sw->cfg.nprio + p->prio] += p->wire;
  p->ready = eng->now + sw->cfg.latency;
  fab_port_enqueue(eng, out, p);
}

static void switch_dequeued(FabEngine *eng, FabNode *self, FabPort *port, FabPkt *p) {
  FabSwitch *sw = (FabSwitch *)self;
  sw->used -= p->wire;
  sw->ingress[p->in_port * sw->cfg.nprio + p->prio] -= p->wire;
}

FabSwitch *fab_switch_new(uint32_t id, const char *name, const FabSwitchCfg *cfg, uint32_t nports,
                          uint32_t nendpoints) {
  g_assert(nports > 0 && nports <= UINT16_MAX && cfg->nprio >= 1 && cfg->nprio <= FAB_MAX_PRIOS);
  FabSwitch *sw = g_new0(FabSwitch, 1);
  sw->node.ops = &switch_ops;
  sw->node.receive = switch_receive;
  sw->node.dequeued = switch_dequeued;
  g_strlcpy(sw->node.name, name, sizeof sw->node.name);
  sw->id = id;
  sw->cfg = *cfg;
  sw->salt = fab_ecmp_salt(id, cfg->ecmp_seed);
  fab_rng_init(&sw->rng, cfg->seed, FAB_STREAM(FAB_STREAM_SWITCH, id));
  sw->nports = nports;
  sw->ports = g_new0(FabPort, nports);
  sw->nendpoints = nendpoints;
  sw->route = g_new(uint32_t, nendpoints);
  memset(sw->route, 0xff, sizeof(uint32_t) * nendpoints);
  sw->ingress = g_new0(uint64_t, (size_t)nports * cfg->nprio);
  return sw;
}

void fab_switch_free(FabSwitch *sw) {
  if (!sw) return;
  g_free(sw->ports);
  g_free(sw->route);
  g_free(sw->goff);
  g_free(sw->glen);
  g_free(sw->gports);
  g_free(sw->ingress);
  g_free(sw);
}

FabPort *fab_switch_port(FabSwitch *sw, uint32_t i, uint64_t bps, fab_time_t latency) {
  g_assert(i < sw->nports);
  fab_port_init(&sw->ports[i], &sw->node, i, bps, latency, sw->cfg.nprio);
  return &sw->ports[i];
}

uint32_t fab_switch_add_group(FabSwitch *sw, const uint32_t *ports, uint32_t n) {
  g_assert(n > 0);
  uint32_t g = sw->ngroups++;
  sw->goff = g_renew(uint32_t, sw->goff, sw->ngroups);
  sw->glen = g_renew(uint32_t, sw->glen, sw->ngroups);
  sw->goff[g] = sw->ngports;
  sw->glen[g] = n;
  sw->gports = g_renew(uint32_t, sw->gports, sw->ngports + n);
  for (uint32_t i = 0; i < n; i++) {
    g_assert(ports[i] < sw->nports);
    sw->gports[sw->ngports++] = ports[i];
  }
  return g;
}

void fab_switch_set_route(FabSwitch *sw, uint32_t dst, uint32_t g) {
  g_assert(dst < sw->nendpoints && g < sw->ngroups);
  sw->route[dst] = g;
}

FabPort *fab_switch_next_hop(const FabSwitch *sw, uint32_t dst, uint32_t hash) {
  if (G_UNLIKELY(dst >= sw->nendpoints)) return NULL;
  uint32_t g = sw->route[dst];
  if (G_UNLIKELY(g == UINT32_MAX)) return NULL;
  uint32_t n = sw->glen[g], i = sw->goff[g];
  if (n > 1) i += fab_ecmp_pick(hash, sw->salt, n);
  return &sw->ports[sw->gports[i]];
}

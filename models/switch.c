/* Shared-buffer switch with dynamic-threshold admission. See switch.h. */
#include "switch.h"
#include "ecmp.h"
#include <glib.h>
#include <string.h>

/* A packet counted in headroom carries this flag while it is in the switch. */
#define HDRM_FLAG FAB_PKTF_HDRM

static void switch_wake(FabEngine *eng, void *self, uint64_t arg);
static const FabOps switch_ops = {"switch", switch_wake};

uint64_t fab_pfc_headroom_auto(uint64_t bps, fab_time_t latency, fab_time_t response, uint32_t mtu_wire) {
  fab_time_t t = 2 * latency + response;
  uint64_t cable = (uint64_t)(((unsigned __int128)t * bps + 8 * FAB_S - 1) / (8 * FAB_S));
  return cable + 3 * (uint64_t)mtu_wire + FAB_PAUSE_WIRE;
}

static inline bool lossless(const FabSwitch *sw, uint32_t prio) {
  return sw->cfg.pfc.enabled && (sw->cfg.pfc.lossless >> prio & 1);
}

/* XOFF threshold of one (ingress port, priority) now. */
static inline uint64_t xoff_limit(const FabSwitch *sw) {
  const FabPfcCfg *c = &sw->cfg.pfc;
  if (!c->dynamic) return c->xoff;
  return (uint64_t)(c->alpha * (double)(sw->cfg.buffer - sw->used));
}

static inline uint64_t xon_limit(const FabSwitch *sw) {
  const FabPfcCfg *c = &sw->cfg.pfc;
  if (!c->dynamic) return c->xon;
  uint64_t x = xoff_limit(sw);
  return x > c->xon ? x - c->xon : 0;
}

/* Pause time of one frame on port pt, ps. */
static inline fab_time_t pause_span(const FabSwitch *sw, const FabPort *pt) {
  return fab_time_ser_big((uint64_t)sw->cfg.pfc.quanta * 64, pt->bps);
}

static void send_xoff(FabEngine *eng, FabSwitch *sw, FabPort *in, uint32_t prio) {
  uint32_t k = in->index * sw->cfg.nprio + prio;
  sw->pause_gen[k]++; /* odd: XOFF in force */
  fab_port_send_pause(eng, in, prio, sw->cfg.pfc.quanta);
  /* refresh at half the pause time while still above XON */
  fab_engine_after(eng, pause_span(sw, in) / 2, sw, ((uint64_t)sw->pause_gen[k] << 32) | k);
}

static void check_xon(FabEngine *eng, FabSwitch *sw, uint32_t port, uint32_t prio) {
  uint32_t k = port * sw->cfg.nprio + prio;
  if ((sw->pause_gen[k] & 1) && sw->ingress[k] <= xon_limit(sw) && sw->hdrm[k] == 0) {
    sw->pause_gen[k]++; /* even: resumed */
    fab_port_send_pause(eng, &sw->ports[port], prio, 0);
  }
}

/* A refresh timer of (port, prio) fired: send the PAUSE again if still XOFF. */
static void switch_wake(FabEngine *eng, void *self, uint64_t arg) {
  FabSwitch *sw = self;
  uint32_t k = (uint32_t)arg, gen = (uint32_t)(arg >> 32);
  if (sw->pause_gen[k] != gen) return; /* resumed (and maybe paused again) since */
  uint32_t port = k / sw->cfg.nprio, prio = k % sw->cfg.nprio;
  check_xon(eng, sw, port, prio);
  if (sw->pause_gen[k] != gen) return;
  sw->pause_gen[k]--; /* re-enter XOFF under a fresh generation */
  send_xoff(eng, sw, &sw->ports[port], prio);
}

/* RED marking of an ECN-capable packet against queue depth q. */
static inline void ecn_mark(FabSwitch *sw, FabPort *pt, FabPkt *p, uint64_t q) {
  const FabEcnCfg *e = &sw->cfg.ecn;
  if (!(p->flags & FAB_PKTF_ECT) || (p->flags & FAB_PKTF_ECN) || q <= e->kmin) return;
  if (q < e->kmax) {
    double prob = e->pmax * (double)(q - e->kmin) / (double)(e->kmax - e->kmin);
    if (fab_rng_double(&sw->rng) >= prob) return;
  }
  p->flags |= FAB_PKTF_ECN;
  pt->ecn_marks++;
  sw->ecn_marks++;
}

static void nvls_up(FabEngine *eng, FabSwitch *sw, FabPkt *p, FabPort *in) {
  g_assert(sw->nvls && p->dst < sw->nvls->len);
  FabNvlsGroup *g = g_ptr_array_index(sw->nvls, p->dst);
  uint32_t k = p->seq, payload = p->payload, wire = p->wire;
  uint8_t prio = p->prio;
  fab_port_return_credit(eng, in->peer, prio, wire); /* absorbed into the reduction */
  fab_pkt_free(eng->pool, p);
  if (++g->arrived[k] < g->n) return;
  g->reduced++;
  for (uint32_t m = 0; m < g->n; m++) { /* multicast the result */
    FabPkt *q = fab_pkt_alloc(eng->pool);
    q->type = FAB_PKT_NVLS_DOWN;
    q->flow = g->flow[m];
    q->seq = k;
    q->dst = g->rank[m];
    q->payload = payload;
    q->wire = wire;
    q->prio = prio;
    q->ready = eng->now + sw->cfg.latency;
    fab_port_enqueue(eng, &sw->ports[g->port[m]], q);
  }
}

uint32_t fab_switch_nvls_add(FabSwitch *sw, uint32_t n, const uint32_t *port, const uint32_t *flow,
                             const uint32_t *rank, uint32_t npkts) {
  g_assert(n >= 1 && n <= UINT16_MAX);
  FabNvlsGroup *g = g_new0(FabNvlsGroup, 1);
  g->n = n;
  g->npkts = npkts;
  g->port = g_memdup2(port, n * sizeof *port);
  g->flow = g_memdup2(flow, n * sizeof *flow);
  g->rank = g_memdup2(rank, n * sizeof *rank);
  g->arrived = g_new0(uint16_t, npkts);
  if (!sw->nvls) sw->nvls = g_ptr_array_new();
  g_ptr_array_add(sw->nvls, g);
  return sw->nvls->len - 1;
}

static void switch_receive(FabEngine *eng, FabNode *self, FabPkt *p, FabPort *in) {
  FabSwitch *sw = (FabSwitch *)self;
  if (G_UNLIKELY(p->type == FAB_PKT_NVLS_UP)) {
    nvls_up(eng, sw, p, in);
    return;
  }
  FabPort *out = fab_switch_next_hop(sw, p->dst, p->hash);
  if (G_UNLIKELY(!out)) {
    sw->unroutable++;
    sw->drops++;
    sw->drop_bytes += p->wire;
    fab_pkt_free(eng->pool, p);
    return;
  }
  uint64_t free_bytes = sw->cfg.buffer - sw->used;
  uint32_t k = in->index * sw->cfg.nprio + p->prio;
  if (sw->cfg.credits) {
    /* InfiniBand: the upstream sent against our credits, so there is room */
    sw->used += p->wire;
  } else if (G_UNLIKELY(lossless(sw, p->prio))) {
    /* lossless: the shared buffer up to XOFF, then this (port, prio)'s headroom */
    bool over = sw->ingress[k] - sw->hdrm[k] + p->wire > xoff_limit(sw) || p->wire > free_bytes;
    if (over || sw->hdrm[k]) {
      if (sw->hdrm[k] + p->wire > sw->hdrm_max[in->index]) {
        sw->hdrm_drops++;
        goto drop;
      }
      sw->hdrm[k] += p->wire;
      p->flags |= HDRM_FLAG;
    } else {
      sw->used += p->wire;
    }
    if (over && !(sw->pause_gen[k] & 1)) send_xoff(eng, sw, in, p->prio);
  } else {
    uint64_t limit = (uint64_t)(sw->cfg.alpha * (double)free_bytes);
    if (p->wire > free_bytes || out->q[p->prio].bytes + p->wire > limit) goto drop;
    sw->used += p->wire;
  }
  if (sw->used > sw->max_used) sw->max_used = sw->used;
  p->in_port = (uint16_t)in->index;
  sw->ingress[k] += p->wire;
  p->ready = eng->now + sw->cfg.latency;
  if (sw->cfg.ecn.enabled && !sw->cfg.ecn.on_dequeue) ecn_mark(sw, out, p, out->q[p->prio].bytes);
  fab_port_enqueue(eng, out, p);
  return;
drop:
  out->drops++;
  out->drop_bytes += p->wire;
  sw->drops++;
  sw->drop_bytes += p->wire;
  fab_pkt_free(eng->pool, p);
}

static void switch_dequeued(FabEngine *eng, FabNode *self, FabPort *port, FabPkt *p) {
  FabSwitch *sw = (FabSwitch *)self;
  if (G_UNLIKELY(p->type == FAB_PKT_NVLS_DOWN)) return; /* made here, never admitted to the buffer */
  uint32_t k = p->in_port * sw->cfg.nprio + p->prio;
  if (p->flags & HDRM_FLAG) {
    p->flags &= ~HDRM_FLAG;
    sw->hdrm[k] -= p->wire;
  } else {
    sw->used -= p->wire;
  }
  sw->ingress[k] -= p->wire;
  if (sw->cfg.credits) fab_port_return_credit(eng, sw->ports[p->in_port].peer, p->prio, p->wire);
  if (sw->cfg.ecn.enabled && sw->cfg.ecn.on_dequeue) ecn_mark(sw, port, p, port->q[p->prio].bytes);
  if (G_UNLIKELY(sw->pause_gen[k] & 1)) check_xon(eng, sw, p->in_port, p->prio);
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
  sw->hdrm = g_new0(uint64_t, (size_t)nports * cfg->nprio);
  sw->hdrm_max = g_new0(uint64_t, nports);
  sw->pause_gen = g_new0(uint32_t, (size_t)nports * cfg->nprio);
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
  g_free(sw->hdrm);
  g_free(sw->hdrm_max);
  g_free(sw->pause_gen);
  for (guint i = 0; sw->nvls && i < sw->nvls->len; i++) {
    FabNvlsGroup *g = g_ptr_array_index(sw->nvls, i);
    g_free(g->port);
    g_free(g->flow);
    g_free(g->rank);
    g_free(g->arrived);
    g_free(g);
  }
  if (sw->nvls) g_ptr_array_free(sw->nvls, TRUE);
  g_free(sw);
}

FabPort *fab_switch_port(FabSwitch *sw, uint32_t i, uint64_t bps, fab_time_t latency) {
  g_assert(i < sw->nports);
  fab_port_init(&sw->ports[i], &sw->node, i, bps, latency, sw->cfg.nprio);
  const FabPfcCfg *c = &sw->cfg.pfc;
  sw->hdrm_max[i] = c->headroom ? c->headroom : fab_pfc_headroom_auto(bps, latency, c->response, c->mtu_wire);
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

bool fab_node_is_switch(const FabNode *n) { return n->ops == &switch_ops; }

uint32_t fab_switch_holders(const FabSwitch *sw, uint32_t in, uint32_t prio, FabPort **out, uint32_t max) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < sw->nports; i++) {
    if (prio >= sw->ports[i].nprio) continue;
    for (const FabPkt *p = sw->ports[i].q[prio].head; p; p = p->next)
      if (p->in_port == in) {
        if (n < max) out[n] = &sw->ports[i];
        n++;
        break;
      }
  }
  return n;
}

FabPort *fab_switch_next_hop(const FabSwitch *sw, uint32_t dst, uint32_t hash) {
  if (G_UNLIKELY(dst >= sw->nendpoints)) return NULL;
  uint32_t g = sw->route[dst];
  if (G_UNLIKELY(g == UINT32_MAX)) return NULL;
  uint32_t n = sw->glen[g], i = sw->goff[g];
  if (n > 1) i += fab_ecmp_pick(hash, sw->salt, n);
  return &sw->ports[sw->gports[i]];
}

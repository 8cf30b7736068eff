/* Shared-buffer switch with dynamic-threshold admission. See switch.h. */
#include "switch.h"
#include "ecmp.h"
#include "nvls.h"
#include "sharp.h"
#include "hpcc.h"
#include <glib.h>
#include <string.h>

/* A flowlet table entry: the group and member the flow(s) hashed here last
** took, and when their last packet passed. */
typedef struct Flowlet {
  fab_time_t last;
  uint32_t group; /* UINT32_MAX: never used */
  uint32_t member;
} Flowlet;

struct FabSwitch {
  FabNode node;
  FabSwitchCfg cfg;
  uint32_t salt;        /* ECMP salt */
  FabRng rng;           /* its own stream of cfg.seed (random marking) */
  uint32_t nports;
  FabPort *ports;       /* nports */
  FabPort *kick;        /* a mesh GPU's NVLink port, kicked when a packet leaves (fab_switch_set_kick) */
  /* routing: route[dst] -> group; group g = gports[goff[g] .. goff[g]+glen[g]) */
  uint32_t nendpoints;
  uint32_t *route;      /* UINT32_MAX: no route */
  uint32_t nlanes;      /* rail-matched routes: lanes per endpoint (0: none) */
  uint32_t *lroute;     /* [dst * nlanes + lane - 1] -> group toward that NIC of dst; UINT32_MAX: none */
  uint32_t ngroups;
  uint32_t *goff, *glen;
  uint32_t *gports;
  uint32_t ngports;
  uint32_t *rr;         /* ROUND_ROBIN: per group, the member the next packet takes */
  Flowlet *flowlets;    /* FLOWLET: cfg.flowlet_table entries (NULL: other routing) */
  /* buffer */
  uint64_t *ingress;    /* bytes held per (ingress port * nprio + prio), shared and headroom */
  uint64_t *hdrm;       /* of which in headroom, per (ingress port * nprio + prio) */
  uint64_t *hdrm_max;   /* headroom size per ingress port (PFC) */
  uint32_t *pause_gen;  /* per (port, prio): XOFF state generation; odd = XOFF sent */
  FabSwitchStats st;    /* counters, and the buffer in use (st.used) */
  FabNvls *nvls;        /* in-switch reductions (NVSwitch NVLS), NULL: none */
  FabSharp *sharp;      /* the SHARP trees this switch aggregates for, NULL: none */
  uint32_t up_group;    /* a PCIe element: the group toward its NICs (UINT32_MAX: none) */
  FabHpccPort *intp;    /* cfg.int_rtt: per port, HPCC's utilisation estimate (NULL: none) */
};

/* A packet counted in headroom carries this flag while it is in the switch. */
#define HDRM_FLAG FAB_PKTF_HDRM

const char *const fab_routing_names[] = {"ecmp", "adaptive", "flowlet", "round-robin", "spray", NULL};

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
  return (uint64_t)(c->alpha * (double)(sw->cfg.buffer - sw->st.used));
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
  sw->st.ecn_marks++;
}

/* The member `lane` (mod n) of dst's route group. */
static FabPort *lane_hop(const FabSwitch *sw, uint32_t dst, uint32_t lane) {
  if (G_UNLIKELY(dst >= sw->nendpoints || sw->route[dst] == UINT32_MAX)) return NULL;
  uint32_t g = sw->route[dst];
  return &sw->ports[sw->gports[sw->goff[g] + lane % sw->glen[g]]];
}

/* How loaded member port pt is for a packet of priority prio: paused first,
** then its egress in quanta (what waits, and one for a packet on its
** serialiser), then slower (smaller is better). */
static inline uint64_t load_of(const FabSwitch *sw, const FabPort *pt, uint32_t prio) {
  if (G_UNLIKELY(pt->down)) return UINT64_MAX; /* a failed link, until the routes leave it out */
  uint64_t paused = (pt->paused >> prio) & 1u, level = pt->qbytes / sw->cfg.ar_quantum + (pt->tx != NULL);
  return paused << 63 | MIN(level, (1ull << 40) - 1) << 22 | (uint64_t)(~(pt->bps >> 20) & 0x3fffff);
}

/* The least loaded member of group g (ADAPTIVE's choice): all members, or
** two distinct ones drawn at random; ties by the switch's RNG. */
static uint32_t least_loaded(FabSwitch *sw, uint32_t g, uint32_t prio) {
  const uint32_t n = sw->glen[g], *m = &sw->gports[sw->goff[g]];
  if (sw->cfg.ar_choices == 2 && n > 2) {
    uint32_t a = fab_rng_below(&sw->rng, n), b = fab_rng_below(&sw->rng, n - 1);
    b += b >= a;
    uint64_t la = load_of(sw, &sw->ports[m[a]], prio), lb = load_of(sw, &sw->ports[m[b]], prio);
    if (la != lb) return la < lb ? a : b;
    return fab_rng_below(&sw->rng, 2) ? b : a;
  }
  uint64_t best = UINT64_MAX;
  uint32_t pick = 0, ties = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t l = load_of(sw, &sw->ports[m[i]], prio);
    if (l < best) {
      best = l;
      pick = i;
      ties = 1;
    } else if (l == best && fab_rng_below(&sw->rng, ++ties) == 0) { /* reservoir: each tie equally likely */
      pick = i;
    }
  }
  return pick;
}

/* FLOWLET: the member for a packet of group g with `hash` now. */
static uint32_t flowlet(FabEngine *eng, FabSwitch *sw, uint32_t g, const FabPkt *p) {
  Flowlet *e = &sw->flowlets[fab_ecmp_pick(p->hash, sw->salt, sw->cfg.flowlet_table)];
  if (e->group != g || eng->now - e->last > sw->cfg.flowlet_gap) { /* a new flowlet */
    uint32_t m = sw->cfg.flowlet_random ? fab_rng_below(&sw->rng, sw->glen[g]) : least_loaded(sw, g, p->prio);
    if (e->group == g && m != e->member) sw->st.moves++;
    e->group = g;
    e->member = m;
  }
  e->last = eng->now;
  return e->member;
}

/* Member of group g for `hash` (ECMP). */
static inline uint32_t hash_member(const FabSwitch *sw, uint32_t g, uint32_t hash) {
  uint32_t n = sw->glen[g];
  if (n <= 1) return 0;
  return sw->cfg.hash == FAB_HASH_CRC32 ? fab_ecmp_pick_crc(hash, sw->salt, sw->cfg.tier, n)
                                        : fab_ecmp_pick(hash, sw->salt, n);
}

/* The group a packet to dst with `lane` takes: toward that NIC of dst when
** the switch has rail-matched routes for it, else dst's. */
static inline uint32_t route_of(const FabSwitch *sw, uint32_t dst, uint32_t lane) {
  if (G_UNLIKELY(dst >= sw->nendpoints)) return UINT32_MAX;
  if (G_UNLIKELY(lane && sw->nlanes)) {
    uint32_t g = sw->lroute[(size_t)dst * sw->nlanes + (lane - 1u) % sw->nlanes];
    if (g != UINT32_MAX) return g;
  }
  return sw->route[dst];
}

/* The egress for p: its lane's member, the ECMP hash's, or the routing's. */
static FabPort *next_hop(FabEngine *eng, FabSwitch *sw, const FabPkt *p) {
  if (G_UNLIKELY(sw->cfg.lanes && p->lane)) return lane_hop(sw, p->dst, p->lane - 1u);
  uint32_t g = route_of(sw, p->dst, p->lane), i = 0;
  if (G_UNLIKELY(g == UINT32_MAX)) return NULL;
  if (G_LIKELY(sw->cfg.routing == FAB_ROUTE_ECMP || !(p->flags & FAB_PKTF_AR)))
    return &sw->ports[sw->gports[sw->goff[g] + hash_member(sw, g, p->hash)]];
  if (sw->glen[g] > 1) switch ((FabRouting)sw->cfg.routing) {
    case FAB_ROUTE_ADAPTIVE: i = least_loaded(sw, g, p->prio); break;
    case FAB_ROUTE_FLOWLET: i = flowlet(eng, sw, g, p); break;
    case FAB_ROUTE_ROUND_ROBIN: i = sw->rr[g]++ % sw->glen[g]; break;
    case FAB_ROUTE_SPRAY: i = (uint32_t)fab_rng_below(&sw->rng, sw->glen[g]); break;
    case FAB_ROUTE_ECMP: g_assert_not_reached();
    }
  return &sw->ports[sw->gports[sw->goff[g] + i]];
}

static void switch_receive(FabEngine *eng, FabNode *self, FabPkt *p, FabPort *in) {
  FabSwitch *sw = (FabSwitch *)self;
  FabPort *out;
  if (G_UNLIKELY(fab_pkt_is_nvls(p->type))) {
    if (p->type == FAB_PKT_NVLS_UP || p->type == FAB_PKT_NVLS_MC) {
      fab_nvls_receive(eng, sw->nvls, p, in);
      return;
    }
    if (sw->sharp) { /* an aggregation node: only tree links bring SHARP packets here */
      fab_sharp_receive(eng, sw->sharp, sw, p, in);
      return;
    }
    /* a PCIe element: a contribution goes up by its lane's NIC, a result to its GPU like data */
    out = p->type == FAB_PKT_SHARP_UP && sw->up_group != UINT32_MAX
            ? &sw->ports[sw->gports[sw->goff[sw->up_group] + (p->lane ? p->lane - 1u : 0u) % sw->glen[sw->up_group]]]
            : next_hop(eng, sw, p);
  } else {
    out = next_hop(eng, sw, p);
  }
  if (G_UNLIKELY(!out)) {
    sw->st.unroutable++;
    sw->st.drops++;
    sw->st.drop_bytes += p->wire;
    fab_pkt_free(eng, p);
    return;
  }
  uint64_t free_bytes = sw->cfg.buffer - sw->st.used;
  uint32_t k = in->index * sw->cfg.nprio + p->prio;
  if (sw->cfg.credits) {
    /* InfiniBand: the upstream sent against our credits, so there is room */
    sw->st.used += p->wire;
  } else if (G_UNLIKELY(lossless(sw, p->prio))) {
    /* lossless: the shared buffer up to XOFF, then this (port, prio)'s headroom */
    bool over = sw->ingress[k] - sw->hdrm[k] + p->wire > xoff_limit(sw) || p->wire > free_bytes;
    if (over || sw->hdrm[k]) {
      if (sw->hdrm[k] + p->wire > sw->hdrm_max[in->index]) {
        sw->st.hdrm_drops++;
        goto drop;
      }
      sw->hdrm[k] += p->wire;
      p->flags |= HDRM_FLAG;
    } else {
      sw->st.used += p->wire;
    }
    if (over && !(sw->pause_gen[k] & 1)) send_xoff(eng, sw, in, p->prio);
  } else {
    uint64_t limit = (uint64_t)(sw->cfg.alpha * (double)free_bytes);
    if (p->wire > free_bytes || out->q[p->prio].bytes + p->wire > limit) goto drop;
    sw->st.used += p->wire;
  }
  if (sw->st.used > sw->st.max_used) sw->st.max_used = sw->st.used;
  p->in_port = (uint16_t)in->index;
  sw->ingress[k] += p->wire;
  p->ready = eng->now + sw->cfg.latency;
  if (G_UNLIKELY(p->flags & FAB_PKTF_TRAIN) && in->peer->cut_mtu) { /* came in at its first packet's arrival */
    /* its packets would not leave before they are in: the last one leaves after its own arrival (the train's
    ** rest still on the ingress link) and its own time on the egress, whatever the two rates */
    const FabPort *up = in->peer;
    uint32_t mtu = up->cut_mtu, ovh = up->cut_ovh, k = (p->payload + mtu - 1) / mtu;
    uint32_t first = mtu + ovh, last = p->payload - (k - 1) * mtu + ovh;
    fab_time_t in_last = eng->now + fab_port_ser(in, p->wire) - fab_port_ser(in, first);
    fab_time_t out_end = in_last + fab_port_ser(out, last), out_ser = fab_port_ser(out, p->wire);
    if (out_end > out_ser + eng->now) p->ready = MAX(p->ready, out_end - out_ser + sw->cfg.latency);
  }
  if (sw->cfg.ecn.enabled && !sw->cfg.ecn.on_dequeue) ecn_mark(sw, out, p, out->q[p->prio].bytes);
  fab_port_enqueue(eng, out, p);
  return;
drop:
  out->drops++;
  out->drop_bytes += p->wire;
  sw->st.drops++;
  sw->st.drop_bytes += p->wire;
  fab_pkt_free(eng, p);
}

static void switch_dequeued(FabEngine *eng, FabNode *self, FabPort *port, FabPkt *p) {
  FabSwitch *sw = (FabSwitch *)self;
  if (G_UNLIKELY(p->type == FAB_PKT_NVLS_DOWN || p->type == FAB_PKT_NVLS_RED)) return; /* made here, never admitted */
  if (G_UNLIKELY(fab_pkt_is_sharp(p->type)) && sw->sharp) return; /* an aggregation node's own */
  uint32_t k = p->in_port * sw->cfg.nprio + p->prio;
  if (p->flags & HDRM_FLAG) {
    p->flags &= ~HDRM_FLAG;
    sw->hdrm[k] -= p->wire;
  } else {
    sw->st.used -= p->wire;
  }
  sw->ingress[k] -= p->wire;
  if (sw->cfg.credits) fab_port_return_credit(eng, sw->ports[p->in_port].peer, p->prio, p->wire);
  if (sw->cfg.ecn.enabled && sw->cfg.ecn.on_dequeue) ecn_mark(sw, port, p, port->q[p->prio].bytes);
  if (G_UNLIKELY(sw->intp) && p->type == FAB_PKT_DATA) { /* HPCC: the path's highest utilisation */
    uint64_t qlen = (uint64_t)(((unsigned __int128)(eng->now - MIN(p->ready, eng->now)) * port->bps) / (8 * FAB_S));
    p->mark_ev = fab_hpcc_stamp(&sw->intp[port->index], port->bps, qlen, p->wire, sw->cfg.int_rtt, eng->now,
                                p->mark_ev);
  }
  if (G_UNLIKELY(sw->pause_gen[k] & 1)) check_xon(eng, sw, p->in_port, p->prio);
  if (G_UNLIKELY(sw->kick)) fab_port_kick(eng, sw->kick); /* a mesh GPU may now send what waited for this link */
}

/* InfiniBand: what came in through `in` on VL `vl` and is still here (its credits still to go back); the rest
** of the port's credits is what this switch advertises when the link comes back up (fab_port_set_down). */
static uint64_t switch_held(const FabNode *self, const FabPort *in, uint32_t vl) {
  const FabSwitch *sw = (const FabSwitch *)self;
  return vl < sw->cfg.nprio ? sw->ingress[in->index * sw->cfg.nprio + vl] : 0;
}

FabSwitch *fab_switch_new(const char *name, const FabSwitchCfg *cfg, uint32_t nports, uint32_t nendpoints) {
  g_assert(nports > 0 && nports <= UINT16_MAX && cfg->nprio >= 1 && cfg->nprio <= FAB_MAX_PRIOS);
  FabSwitch *sw = g_new0(FabSwitch, 1);
  sw->up_group = UINT32_MAX;
  fab_elem_init(&sw->node.el, &switch_ops);
  sw->node.receive = switch_receive;
  sw->node.relay = true;
  sw->node.dequeued = switch_dequeued;
  if (cfg->credits) sw->node.held = switch_held;
  g_strlcpy(sw->node.name, name, sizeof sw->node.name);
  sw->cfg = *cfg;
  sw->salt = fab_ecmp_salt(sw->node.name, cfg->ecmp_seed);
  fab_rng_init(&sw->rng, cfg->seed, fab_rng_stream_of2("switch", sw->node.name));
  sw->nports = nports;
  sw->ports = g_aligned_alloc0(nports, sizeof(FabPort), 64); /* a port is 12 cache lines: its hot ones aligned */
  sw->nendpoints = nendpoints;
  sw->route = g_new(uint32_t, nendpoints);
  memset(sw->route, 0xff, sizeof(uint32_t) * nendpoints);
  sw->ingress = g_new0(uint64_t, (size_t)nports * cfg->nprio);
  sw->hdrm = g_new0(uint64_t, (size_t)nports * cfg->nprio);
  sw->hdrm_max = g_new0(uint64_t, nports);
  sw->pause_gen = g_new0(uint32_t, (size_t)nports * cfg->nprio);
  if (cfg->int_rtt) sw->intp = g_new0(FabHpccPort, nports);
  if (cfg->routing == FAB_ROUTE_FLOWLET) {
    g_assert(cfg->flowlet_table && !(cfg->flowlet_table & (cfg->flowlet_table - 1)));
    sw->flowlets = g_new(Flowlet, cfg->flowlet_table);
    for (uint32_t i = 0; i < cfg->flowlet_table; i++) sw->flowlets[i] = (Flowlet){0, UINT32_MAX, 0};
  }
  g_assert(cfg->routing == FAB_ROUTE_ECMP || cfg->ar_quantum >= 1);
  return sw;
}

void fab_switch_free(FabSwitch *sw) {
  if (!sw) return;
  g_aligned_free(sw->ports);
  g_free(sw->intp);
  g_free(sw->route);
  g_free(sw->lroute);
  g_free(sw->goff);
  g_free(sw->glen);
  g_free(sw->gports);
  g_free(sw->ingress);
  g_free(sw->hdrm);
  g_free(sw->hdrm_max);
  g_free(sw->pause_gen);
  g_free(sw->rr);
  g_free(sw->flowlets);
  fab_nvls_free(sw->nvls);
  g_free(sw);
}

FabPort *fab_switch_port_init(FabSwitch *sw, uint32_t i, uint64_t bps, fab_time_t latency) {
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
  sw->rr = g_renew(uint32_t, sw->rr, sw->ngroups);
  sw->rr[g] = 0;
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

FabSwitch *fab_switch_of(FabNode *n) { return n->el.ops == &switch_ops ? (FabSwitch *)n : NULL; }
FabNode *fab_switch_node(FabSwitch *sw) { return &sw->node; }
const char *fab_switch_name(const FabSwitch *sw) { return sw->node.name; }
uint32_t fab_switch_nports(const FabSwitch *sw) { return sw->nports; }
const FabSwitchCfg *fab_switch_cfg(const FabSwitch *sw) { return &sw->cfg; }
const FabSwitchStats *fab_switch_stats(const FabSwitch *sw) { return &sw->st; }
void fab_switch_set_stats(FabSwitch *sw, const FabSwitchStats *st) { sw->st = *st; }
uint32_t fab_switch_nendpoints(const FabSwitch *sw) { return sw->nendpoints; }

FabPort *fab_switch_port_at(FabSwitch *sw, uint32_t i) {
  g_assert(i < sw->nports);
  return &sw->ports[i];
}

uint64_t fab_switch_ingress_bytes(const FabSwitch *sw, uint32_t in, uint32_t prio) {
  g_assert(in < sw->nports && prio < sw->cfg.nprio);
  return sw->ingress[in * sw->cfg.nprio + prio];
}

uint64_t fab_switch_headroom_bytes(const FabSwitch *sw, uint32_t in, uint32_t prio) {
  g_assert(in < sw->nports && prio < sw->cfg.nprio);
  return sw->hdrm[in * sw->cfg.nprio + prio];
}

void fab_switch_set_sharp(FabSwitch *sw, FabSharp *s) { sw->sharp = s; }

void fab_switch_set_kick(FabSwitch *sw, FabPort *pt) { sw->kick = pt; }

void fab_switch_set_up_group(FabSwitch *sw, uint32_t g) {
  g_assert(g < sw->ngroups);
  sw->up_group = g;
}

FabNvls *fab_switch_nvls(FabSwitch *sw) {
  if (!sw->nvls) sw->nvls = fab_nvls_new(sw);
  return sw->nvls;
}

uint32_t fab_switch_route_group(const FabSwitch *sw, uint32_t dst) {
  return dst < sw->nendpoints ? sw->route[dst] : UINT32_MAX;
}

const uint32_t *fab_switch_group_ports(const FabSwitch *sw, uint32_t g, uint32_t *n) {
  g_assert(g < sw->ngroups);
  *n = sw->glen[g];
  return &sw->gports[sw->goff[g]];
}

void fab_switch_reset_routes(FabSwitch *sw, uint32_t nendpoints) {
  g_free(sw->route);
  g_free(sw->lroute);
  sw->lroute = NULL;
  sw->nlanes = 0;
  sw->nendpoints = nendpoints;
  sw->route = g_new(uint32_t, nendpoints ? nendpoints : 1);
  memset(sw->route, 0xff, sizeof(uint32_t) * nendpoints);
}

void fab_switch_set_lanes(FabSwitch *sw, uint32_t nlanes) {
  g_free(sw->lroute);
  sw->nlanes = nlanes;
  sw->lroute = nlanes ? g_new(uint32_t, (size_t)sw->nendpoints * nlanes) : NULL;
  if (nlanes) memset(sw->lroute, 0xff, sizeof(uint32_t) * sw->nendpoints * nlanes);
}

void fab_switch_set_lane_route(FabSwitch *sw, uint32_t dst, uint32_t lane, uint32_t g) {
  g_assert(dst < sw->nendpoints && lane >= 1 && lane <= sw->nlanes && (g < sw->ngroups || g == UINT32_MAX));
  sw->lroute[(size_t)dst * sw->nlanes + lane - 1] = g;
}

uint32_t fab_switch_lane_group(const FabSwitch *sw, uint32_t dst, uint32_t lane) {
  if (!sw->nlanes || dst >= sw->nendpoints || !lane || lane > sw->nlanes) return UINT32_MAX;
  return sw->lroute[(size_t)dst * sw->nlanes + lane - 1];
}

uint32_t fab_switch_holders(FabSwitch *sw, uint32_t in, uint32_t prio, FabPort **out, uint32_t max) {
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
  return fab_switch_next_hop_lane(sw, dst, hash, 0);
}

FabPort *fab_switch_next_hop_lane(const FabSwitch *sw, uint32_t dst, uint32_t hash, uint32_t lane) {
  uint32_t g = route_of(sw, dst, lane);
  if (G_UNLIKELY(g == UINT32_MAX)) return NULL;
  return &sw->ports[sw->gports[sw->goff[g] + hash_member(sw, g, hash)]];
}

size_t fab_switch_struct_bytes(void) { return sizeof(FabSwitch); }

void fab_switch_check(const FabSwitch *sw) {
  uint64_t held = 0, hdrm = 0, queued = 0;
  for (uint32_t i = 0; i < sw->nports; i++) {
    fab_port_check(&sw->ports[i]);
    for (uint32_t q = 0; q < sw->cfg.nprio; q++) {
      uint32_t k = i * sw->cfg.nprio + q;
      held += sw->ingress[k];
      hdrm += sw->hdrm[k];
      if (sw->hdrm[k] > sw->hdrm_max[i] || sw->hdrm[k] > sw->ingress[k])
        g_error("%s: ingress %u prio %u holds %" G_GUINT64_FORMAT " B of headroom (of %" G_GUINT64_FORMAT
                " reserved, %" G_GUINT64_FORMAT " held)", sw->node.name, i, q, sw->hdrm[k], sw->hdrm_max[i],
                sw->ingress[k]);
    }
    for (uint32_t q = 0; q < FAB_MAX_PRIOS; q++)
      for (const FabPkt *p = sw->ports[i].q[q].head; p; p = p->next)
        if (p->type != FAB_PKT_NVLS_DOWN && p->type != FAB_PKT_NVLS_RED && p->type != FAB_PKT_PAUSE &&
            !(fab_pkt_is_sharp(p->type) && sw->sharp))
          queued += p->wire;
  }
  if (held != sw->st.used + hdrm)
    g_error("%s: ingress ledgers hold %" G_GUINT64_FORMAT " B, the buffer %" G_GUINT64_FORMAT " + headroom %"
            G_GUINT64_FORMAT, sw->node.name, held, sw->st.used, hdrm);
  if (sw->st.used > sw->cfg.buffer)
    g_error("%s: %" G_GUINT64_FORMAT " B in a buffer of %" G_GUINT64_FORMAT, sw->node.name, sw->st.used,
            sw->cfg.buffer);
  if (queued != held)
    g_error("%s: egress queues hold %" G_GUINT64_FORMAT " B of admitted packets, the ledgers %" G_GUINT64_FORMAT,
            sw->node.name, queued, held);
}

void fab_switch_shift(FabSwitch *sw, fab_time_t dt) {
  for (uint32_t i = 0; sw->intp && i < sw->nports; i++) sw->intp[i].last = fab_time_later(sw->intp[i].last, dt);
  if (sw->flowlets)
    for (uint32_t i = 0; i < sw->cfg.flowlet_table; i++)
      if (sw->flowlets[i].group != UINT32_MAX) sw->flowlets[i].last += dt;
}

/* Parallel runs (sim/par.c): the same fabric run by one engine and by 2 and
** 3 partitions in conservative windows gives the same events, in the same
** order, at the same times, with losses, with PFC pausing across a cut and
** with InfiniBand credits returned across one, whether the partitions run
** one after the other or on a thread each; a lookahead longer than a cut
** link's latency is caught. */
#include <criterion/criterion.h>
#include <glib.h>
#include "models/switch.h"
#include "sim/par.h"

#define G100 100000000000ULL
#define NH 4

/* A host: one port, sends its packets to its destinations in turn on pull,
** logs what arrives. */
typedef struct Host {
  FabNode node;
  FabPort port;
  uint32_t id, ndst, left[NH], dst[NH], next, seq[NH];
  GArray *log; /* Rx */
} Host;

typedef struct Rx {
  fab_time_t t;
  uint64_t key; /* the next tie key of the element whose handler took it (engine.h) */
  uint32_t src, dst, seq;
} Rx;

typedef struct Net {
  FabEngine *eng;     /* one engine, or partition 0's */
  FabPar *par;        /* NULL: one engine */
  Host h[NH];         /* h0, h1 on s0; h2, h3 on s1 */
  FabSwitch *sw[2];
  uint8_t part_of[64];
  uint32_t nids;
} Net;

static void host_wake(FabEngine *eng, void *self, uint64_t arg) {}
static const FabOps host_ops = {"host", host_wake, NULL};

static FabPkt *host_pull(FabEngine *eng, FabNode *self, FabPort *port) {
  Host *h = (Host *)self;
  if ((port->paused | port->nocredit) & 1) return NULL;
  for (uint32_t k = 0; k < h->ndst; k++) {
    uint32_t d = (h->next + k) % h->ndst;
    if (!h->left[d]) continue;
    h->left[d]--;
    h->next = d + 1;
    FabPkt *p = fab_pkt_alloc(eng);
    p->type = FAB_PKT_DATA;
    p->src = h->id;
    p->dst = h->dst[d];
    p->seq = h->seq[d]++;
    p->wire = 1000;
    p->payload = 900;
    p->ready = eng->now;
    return p;
  }
  return NULL;
}

static void host_receive(FabEngine *eng, FabNode *self, FabPkt *p, FabPort *in) {
  Host *h = (Host *)self;
  Rx r = {eng->now, eng->cur->tie, p->src, p->dst, p->seq};
  g_array_append_val(h->log, r);
  fab_pkt_free(eng, p);
}

typedef enum { LOSSY, PFC, CREDITS } Mode;

/* parts: 1 (one engine), 2 ({h0, h1, s0} | {s1, h2, h3}: the s0-s1 link
** cut, lookahead 1 us) or 3 ({h0, h1} | {s0} | {s1, h2, h3}: the host links
** of s0 cut too, lookahead 500 ns). */
static void net_init(Net *n, Mode mode, uint32_t parts, fab_time_t lookahead) {
  memset(n, 0, sizeof *n);
  FabSwitchCfg sc = {.latency = 300 * FAB_NS, .buffer = mode == LOSSY ? 24000 : 1 << 20, .alpha = 1.0, .nprio = 1,
                     .mtu_wire = 1000};
  if (mode == PFC)
    sc.pfc = (FabPfcCfg){.enabled = true, .lossless = 1, .xoff = 8000, .xon = 4000, .quanta = 65535,
                         .headroom = 64 << 10, .mtu_wire = 1000};
  if (mode == CREDITS) sc.credits = 6000;
  const char *names[2] = {"s0", "s1"};
  for (int s = 0; s < 2; s++) n->sw[s] = fab_switch_new(names[s], &sc, 3, NH);
  uint32_t id = 0;
  for (uint32_t i = 0; i < NH; i++) {
    Host *h = &n->h[i];
    fab_elem_init(&h->node.el, &host_ops);
    g_strlcpy(h->node.name, (const char *[]){"h0", "h1", "h2", "h3"}[i], sizeof h->node.name);
    h->node.receive = host_receive;
    h->node.pull = host_pull;
    h->id = i;
    h->log = g_array_new(FALSE, FALSE, sizeof(Rx));
    fab_port_init(&h->port, &h->node, 0, G100, 500 * FAB_NS, 1);
    fab_port_connect(&h->port, fab_switch_port_init(n->sw[i / 2], i % 2, G100, 500 * FAB_NS));
    fab_elem_set_id(&h->node.el, id++);
    id = fab_port_number(&h->port, id);
    n->part_of[id - 2] = n->part_of[id - 1] = (uint8_t)(i < 2 ? 0 : parts - 1); /* h2, h3 with s1 */
  }
  fab_port_connect(fab_switch_port_init(n->sw[0], 2, G100, FAB_US), fab_switch_port_init(n->sw[1], 2, G100, FAB_US));
  for (int s = 0; s < 2; s++) {
    uint32_t part = parts == 1 ? 0 : parts == 2 ? (uint32_t)s : (uint32_t)s + 1;
    n->part_of[id] = (uint8_t)part;
    fab_elem_set_id(&fab_switch_node(n->sw[s])->el, id++);
    for (uint32_t p = 0; p < 3; p++) {
      n->part_of[id] = (uint8_t)part;
      id = fab_port_number(fab_switch_port_at(n->sw[s], p), id);
    }
    for (uint32_t p = 0; p < 3; p++) { /* a group per port; hosts 2s, 2s+1 below, the others over the uplink */
      uint32_t g = fab_switch_add_group(n->sw[s], &p, 1);
      for (uint32_t d = 0; d < NH; d++)
        if ((d / 2 == (uint32_t)s && d % 2 == p) || (d / 2 != (uint32_t)s && p == 2))
          fab_switch_set_route(n->sw[s], d, g);
    }
    if (mode == CREDITS)
      for (uint32_t p = 0; p < 3; p++) fab_port_set_credits(fab_switch_port_at(n->sw[s], p)->peer, 6000, 1000);
  }
  n->nids = id;
  if (parts == 1) {
    n->eng = fab_engine_new(1, sizeof(FabPkt));
  } else {
    n->par = fab_par_new(parts, 1, sizeof(FabPkt), n->part_of, n->nids, lookahead);
    n->eng = fab_par_engine(n->par, 0);
    for (uint32_t i = 0; i < NH; i++) fab_port_mark_cut(&n->h[i].port, n->par);
    for (int s = 0; s < 2; s++)
      for (uint32_t p = 0; p < 3; p++) fab_port_mark_cut(fab_switch_port_at(n->sw[s], p), n->par);
  }
  /* h0 and h1 both to h2 (2:1 into s0's uplink), h3 to h2 too (2:1 into h2's link: s1 backs up into the
  ** uplink), h2 back to h0 */
  static const uint32_t dsts[NH][2] = {{2, 3}, {2, 3}, {0, 0}, {2, 1}};
  static const uint32_t counts[NH][2] = {{120, 20}, {120, 0}, {60, 0}, {60, 10}};
  for (uint32_t i = 0; i < NH; i++) {
    Host *h = &n->h[i];
    for (uint32_t k = 0; k < 2; k++)
      if (counts[i][k]) h->dst[h->ndst] = dsts[i][k], h->left[h->ndst++] = counts[i][k];
    fab_port_kick(n->eng, &h->port);
  }
}

static bool net_run(Net *n) {
  return n->par ? fab_par_run(n->par, FAB_TIME_MAX) : fab_engine_run(n->eng, FAB_TIME_MAX);
}
static uint64_t net_events(const Net *n) { return n->par ? fab_par_events(n->par) : n->eng->events; }

static void net_free(Net *n) {
  for (uint32_t i = 0; i < NH; i++) g_array_free(n->h[i].log, TRUE);
  for (int s = 0; s < 2; s++) fab_switch_free(n->sw[s]);
  if (n->par) fab_par_free(n->par);
  else fab_engine_free(n->eng);
}

/* The same run, one engine against `parts` partitions (on a thread each
** with `threads`): every host's log
** (with the tie key counter of the element that handled each arrival: a
** counter that both sides of a cut advanced would differ), every port's
** counters, the switches' drops, the event count. */
static void same_run(Mode mode, uint32_t parts, fab_time_t lookahead, bool threads) {
  Net a, b;
  net_init(&a, mode, 1, 0);
  net_init(&b, mode, parts, lookahead);
  fab_par_set_threads(b.par, threads);
  cr_assert(fab_switch_port_at(b.sw[0], 2)->cut && fab_switch_port_at(b.sw[1], 2)->cut, "the s0-s1 link is cut");
  cr_assert_eq(b.h[0].port.cut, parts == 3, "h0's link is cut with 3 partitions only");
  cr_assert(net_run(&a));
  cr_assert(net_run(&b), "%u partitions: the run ends", parts);
  uint32_t rx = 0;
  for (uint32_t i = 0; i < NH; i++) {
    GArray *x = a.h[i].log, *y = b.h[i].log;
    cr_assert_eq(x->len, y->len, "h%u received %u packets with one engine, %u with %u partitions", i, x->len, y->len,
                 parts);
    for (guint k = 0; k < x->len; k++) {
      const Rx *p = &g_array_index(x, Rx, k), *q = &g_array_index(y, Rx, k);
      cr_assert(p->t == q->t && p->src == q->src && p->seq == q->seq, "h%u's packet %u differs", i, k);
      cr_assert_eq(p->key, q->key, "h%u's packet %u: its handler's keys went elsewhere", i, k);
    }
    rx += x->len;
  }
  for (int s = 0; s < 2; s++) {
    cr_assert_eq(fab_switch_stats(a.sw[s])->drops, fab_switch_stats(b.sw[s])->drops);
    for (uint32_t p = 0; p < 3; p++) {
      const FabPort *x = fab_switch_port_at(a.sw[s], p), *y = fab_switch_port_at(b.sw[s], p);
      cr_assert(x->tx_pkts == y->tx_pkts && x->pause_tx == y->pause_tx && x->pause_rx == y->pause_rx &&
                x->max_qbytes == y->max_qbytes && x->paused_ps == y->paused_ps, "s%d:p%u's counters differ", s, p);
      cr_assert(x->peer->pause_rx == y->peer->pause_rx && x->peer->paused_ps == y->peer->paused_ps);
    }
  }
  cr_assert_eq(net_events(&a), net_events(&b));
  cr_assert_gt(fab_par_windows(b.par), 1);
  cr_assert_gt(fab_par_handed(b.par), 0, "events crossed the cut");
  cr_assert_eq(fab_pool_live(a.eng->pool), 0);
  cr_assert_eq(fab_par_live(b.par), 0, "every packet freed, wherever it was made");
  cr_assert_eq(fab_par_now(b.par), a.eng->now, "the last event at the same time");
  uint64_t drops = fab_switch_stats(a.sw[0])->drops + fab_switch_stats(a.sw[1])->drops;
  cr_assert_eq(rx + drops, 390, "every packet arrived or was dropped");
  if (mode == LOSSY) cr_assert_gt(drops, 0, "the lossy case drops");
  else cr_assert_eq(drops, 0, "lossless");
  if (mode == PFC) {
    cr_assert_gt(fab_switch_port_at(a.sw[1], 2)->pause_tx, 0, "s1 paused s0 across the cut");
    cr_assert_gt(fab_switch_port_at(a.sw[0], 0)->pause_tx, 0, "s0 paused h0");
  }
  net_free(&a);
  net_free(&b);
}

/* 2 and 3 partitions, one after the other and on a thread each. */
static void every_cut(Mode mode) {
  for (int threads = 0; threads <= 1; threads++) {
    same_run(mode, 2, FAB_US, threads);
    same_run(mode, 3, 500 * FAB_NS, threads);
  }
}

Test(par, lossy_fabric_two_and_three_partitions) { every_cut(LOSSY); }

Test(par, pfc_pauses_across_the_cut) { every_cut(PFC); }

Test(par, infiniband_credits_return_across_the_cut) { every_cut(CREDITS); }

/* A shorter window than the lookahead the cut allows is fine (more windows);
** a longer one lets an event land in a partition's past, and the run says
** so. */
Test(par, a_lookahead_longer_than_a_cut_link_is_caught) {
  Net n;
  net_init(&n, LOSSY, 2, 100 * FAB_NS);
  cr_assert(net_run(&n));
  uint64_t w = fab_par_windows(n.par);
  net_free(&n);
  net_init(&n, LOSSY, 2, FAB_US);
  cr_assert(net_run(&n));
  cr_assert_lt(fab_par_windows(n.par), w, "longer windows, fewer of them");
  net_free(&n);
  net_init(&n, LOSSY, 3, FAB_US); /* the host links (500 ns) are cut too */
  cr_assert_not(net_run(&n), "an event handed over into the past");
  net_free(&n);
}

/* Which partition an element runs in: a port's with its owner, its wire's
** with the far end. */
Test(par, a_wire_runs_with_its_far_end) {
  Net n;
  net_init(&n, LOSSY, 2, FAB_US);
  FabPort *up0 = fab_switch_port_at(n.sw[0], 2), *up1 = fab_switch_port_at(n.sw[1], 2);
  cr_assert_eq(fab_par_part_of(n.par, up0), 0);
  cr_assert_eq(fab_par_part_of(n.par, &up0->wire), 1, "s0's uplink wire ends in s1's partition");
  cr_assert_eq(fab_par_part_of(n.par, &up1->wire), 0);
  cr_assert_eq(fab_par_part_of(n.par, &n.h[3].port.wire), 1);
  net_free(&n);
}

/* Switch: store-and-forward timing, incast at line rate, dynamic-threshold
** buffer, lossy drops with recovery, priorities, buffer accounting. */
#include "testnet.h"
#include <glib/gstdio.h>
#include <unistd.h>

#define GBPS100 100000000000ULL

/* N NICs on one switch, NIC i on port i. */
typedef struct Star {
  FabEngine *eng;
  FabNicCfg cfg;
  FabSwitch *sw;
  FabNic nic[17];
  FabFlow flows[16];
  uint32_t n;
  TestRun run;
} Star;

static void star_init(Star *s, uint32_t n, uint64_t buffer, double alpha, fab_time_t sw_latency) {
  memset(s, 0, sizeof *s);
  s->n = n;
  s->eng = testnet_engine(1);
  s->cfg = testnet_nic_cfg(GBPS100, 4096, FAB_TRANSPORT_ROCEV2);
  FabSwitchCfg sc = {sw_latency, buffer, alpha, 2, 0};
  s->sw = fab_switch_new("switch0", &sc, n, n);
  for (uint32_t i = 0; i < n; i++) {
    testnet_nic(&s->nic[i], i, &s->cfg, s->flows, &s->run, FAB_US);
    fab_port_connect(&s->nic[i].port, fab_switch_port_init(s->sw, i, GBPS100, FAB_US));
    fab_switch_set_route(s->sw, i, fab_switch_add_group(s->sw, &i, 1));
  }
}

static void star_flow(Star *s, uint32_t id, uint32_t src, uint32_t dst, uint64_t bytes, uint8_t prio) {
  s->flows[id] = testnet_flow(id, src, dst, bytes, 0, &s->cfg);
  s->flows[id].prio = prio;
  fab_nic_post(s->eng, &s->nic[src], &s->flows[id]);
}

static void star_fini(Star *s) {
  cr_assert_eq(fab_switch_stats(s->sw)->used, 0, "buffer released");
  /* per-ingress accounting drained: no egress queue holds a packet from any
  ** (ingress port, priority), and every queue is empty */
  uint32_t nprio = fab_switch_cfg(s->sw)->nprio;
  for (uint32_t i = 0; i < s->n; i++) {
    FabPort *pt = fab_switch_port_at(s->sw, i);
    cr_assert_eq(pt->qbytes, 0, "port %u drained", i);
    for (uint32_t q = 0; q < nprio; q++) {
      FabPort *holders[17];
      cr_assert_eq(fab_switch_holders(s->sw, i, q, holders, 17), 0, "ingress %u prio %u released", i, q);
      cr_assert_eq(fab_switch_ingress_bytes(s->sw, i, q), 0, "ingress %u prio %u accounted back to 0", i, q);
      cr_assert_eq(fab_switch_headroom_bytes(s->sw, i, q), 0);
      cr_assert_eq(pt->q[q].bytes, 0);
      cr_assert_eq(pt->q[q].n, 0);
    }
  }
  cr_assert_eq(fab_pool_live(s->eng->pool), 0, "packets leaked");
  fab_switch_free(s->sw);
  fab_engine_free(s->eng);
}

Test(switch, two_hops_store_and_forward) {
  Star s;
  star_init(&s, 2, 1 << 20, 1.0, 600 * FAB_NS);
  star_flow(&s, 0, 0, 1, 1000, 0);
  cr_assert(fab_engine_run(s.eng, FAB_TIME_MAX));
  /* 1082 wire bytes = 86560 ps per link; 1 us per link; 600 ns in the switch */
  cr_assert_eq(s.flows[0].end, 2 * 86560 + 2 * FAB_US + 600 * FAB_NS);
  star_fini(&s);
}

Test(switch, two_hops_pipeline_packets) {
  Star s;
  star_init(&s, 2, 1 << 20, 1.0, 0);
  star_flow(&s, 0, 0, 1, 4 * 4096, 0);
  cr_assert(fab_engine_run(s.eng, FAB_TIME_MAX));
  /* store-and-forward pipelines: 4 packets at the sender + 1 more hop for the last */
  cr_assert_eq(s.flows[0].end, 5 * 4178 * 80 + 2 * FAB_US);
  star_fini(&s);
}

/* NIC 0 at 100 Gbps -> switch -> NIC 1 at `out_bps`, one flow of 4 packets
** of 4096 B (4178 on the wire), packet by packet or as one train of 16 KiB
** (fabric.segment): its end time. */
static fab_time_t one_flow_two_rates(uint64_t out_bps, bool train) {
  FabEngine *eng = testnet_engine(1);
  FabNicCfg c0 = testnet_nic_cfg(GBPS100, 4096, FAB_TRANSPORT_ROCEV2), c1 = c0;
  c1.bps = out_bps;
  if (train) c0.seg = c1.seg = 4 * 4096;
  FabSwitchCfg sc = {0, 1 << 20, 1.0, 2, 0};
  FabSwitch *sw = fab_switch_new("switch0", &sc, 2, 2);
  FabNic nic[2];
  FabFlow flows[1];
  TestRun run = {0};
  testnet_nic(&nic[0], 0, &c0, flows, &run, FAB_US);
  testnet_nic(&nic[1], 1, &c1, flows, &run, FAB_US);
  fab_port_connect(&nic[0].port, fab_switch_port_init(sw, 0, GBPS100, FAB_US));
  fab_port_connect(&nic[1].port, fab_switch_port_init(sw, 1, out_bps, FAB_US));
  for (uint32_t i = 0; i < 2; i++) fab_switch_set_route(sw, i, fab_switch_add_group(sw, &i, 1));
  if (train) { /* as the topology builder does for a port into a switch */
    nic[0].port.cut_mtu = 4096;
    nic[0].port.cut_ovh = 82;
  }
  flows[0] = testnet_flow(0, 0, 1, 4 * 4096, 0, &c0);
  cr_assert_eq(flows[0].npkts, train ? 1u : 4u);
  fab_nic_post(eng, &nic[0], &flows[0]);
  cr_assert(fab_engine_run(eng, FAB_TIME_MAX));
  cr_assert_eq(run.done, 1);
  cr_assert_eq(fab_pool_live(eng->pool), 0, "packets leaked");
  fab_time_t end = flows[0].end;
  fab_switch_free(sw);
  fab_engine_free(eng);
  return end;
}

Test(switch, a_train_cuts_through_as_its_packets_would_at_any_egress_rate) {
  /* The switch takes the train as its first packet arrives, but never lets it
  ** finish leaving before its last packet could: the end times are the
  ** packets' exactly. 4178 B take 334,240 ps at 100 Gbps, 83,560 at 400 and
  ** 1,336,960 at 25. */
  const fab_time_t p100 = 4178 * 80, p400 = 4178 * 20, p25 = 4178 * 320;
  /* faster egress: bound by the ingress, the last packet then crosses at 400 */
  cr_assert_eq(one_flow_two_rates(4 * GBPS100, false), 4 * p100 + p400 + 2 * FAB_US);
  cr_assert_eq(one_flow_two_rates(4 * GBPS100, true), 4 * p100 + p400 + 2 * FAB_US);
  /* the same rate: the first packet, then four back to back */
  cr_assert_eq(one_flow_two_rates(GBPS100, false), 5 * p100 + 2 * FAB_US);
  cr_assert_eq(one_flow_two_rates(GBPS100, true), 5 * p100 + 2 * FAB_US);
  /* slower egress: bound by it, from the first packet's arrival */
  cr_assert_eq(one_flow_two_rates(GBPS100 / 4, false), p100 + 4 * p25 + 2 * FAB_US);
  cr_assert_eq(one_flow_two_rates(GBPS100 / 4, true), p100 + 4 * p25 + 2 * FAB_US);
}

Test(switch, incast_shares_the_bottleneck_at_line_rate) {
  Star s;
  star_init(&s, 5, 64 << 20, 1.0, 0);
  for (uint32_t i = 0; i < 4; i++) star_flow(&s, i, i + 1, 0, 64 * 4096, 0);
  cr_assert(fab_engine_run(s.eng, FAB_TIME_MAX));
  cr_assert_eq(s.run.done, 4);
  cr_assert_eq(fab_switch_stats(s.sw)->drops, 0);
  /* the port to host 0 starts when the first packet is in (one packet time +
  ** 1 us) and never idles: 256 packets of 4178 B back to back, then 1 us */
  fab_time_t pkt = 4178 * 80;
  cr_assert_eq(s.run.last_end, pkt + FAB_US + 256 * pkt + FAB_US);
  /* fair: the four flows end within 4 packet times of each other */
  fab_time_t lo = FAB_TIME_MAX, hi = 0;
  for (int i = 0; i < 4; i++) {
    lo = MIN(lo, s.flows[i].end);
    hi = MAX(hi, s.flows[i].end);
  }
  cr_assert_leq(hi - lo, 4 * pkt, "spread %" G_GUINT64_FORMAT " ps", hi - lo);
  star_fini(&s);
}

Test(switch, dynamic_threshold_caps_one_queue_at_half_the_buffer) {
  Star s; /* alpha = 1: a lone congested queue q stops at q = B - q, i.e. B/2 */
  uint64_t B = 1 << 20;
  star_init(&s, 3, B, 1.0, 0);
  star_flow(&s, 0, 1, 0, 2000 * 4096, 0);
  star_flow(&s, 1, 2, 0, 2000 * 4096, 0);
  cr_assert(fab_engine_run(s.eng, FAB_TIME_MAX));
  cr_assert_eq(s.run.done, 2);
  cr_assert_gt(fab_switch_stats(s.sw)->drops, 0, "2:1 overload for 8 MB must overflow a 1 MiB buffer");
  uint64_t q = fab_switch_port_at(s.sw, 0)->max_qbytes;
  cr_assert_leq(q, B / 2 + 4178, "max queue %" G_GUINT64_FORMAT, q);
  cr_assert_geq(q, B / 2 - 2 * 4178, "max queue %" G_GUINT64_FORMAT, q);
  cr_assert_eq(fab_switch_port_at(s.sw, 0)->drops, fab_switch_stats(s.sw)->drops, "all drops at the congested port");
  star_fini(&s);
}

Test(switch, alpha_sets_the_share) {
  Star s; /* alpha = 1/3: q <= (B - q) / 3, so q <= B/4 */
  uint64_t B = 1 << 20;
  star_init(&s, 3, B, 1.0 / 3, 0);
  star_flow(&s, 0, 1, 0, 1000 * 4096, 0);
  star_flow(&s, 1, 2, 0, 1000 * 4096, 0);
  cr_assert(fab_engine_run(s.eng, FAB_TIME_MAX));
  uint64_t q = fab_switch_port_at(s.sw, 0)->max_qbytes;
  cr_assert_leq(q, B / 4 + 4178);
  cr_assert_geq(q, B / 4 - 2 * 4178);
  star_fini(&s);
}

Test(switch, lossy_incast_drops_and_still_completes) {
  Star s;
  star_init(&s, 9, 128 << 10, 1.0, 600 * FAB_NS);
  for (uint32_t i = 0; i < 8; i++) star_flow(&s, i, i + 1, 0, 256 << 10, 0);
  cr_assert(fab_engine_run(s.eng, FAB_TIME_MAX));
  cr_assert_eq(s.run.done, 8, "every flow completes through retransmission");
  cr_assert_eq(s.run.failed, 0);
  cr_assert_gt(fab_switch_stats(s.sw)->drops, 0);
  uint64_t retx = 0;
  for (uint32_t i = 0; i < 8; i++) {
    retx += s.flows[i].retransmits;
    cr_assert_eq(s.flows[i].rcv_bytes, 256 << 10);
  }
  cr_assert_gt(retx, 0);
  /* conservation: sent = received + dropped (everything drained) */
  uint64_t sent = 0, recv = 0;
  for (uint32_t i = 0; i < 9; i++) {
    sent += s.nic[i].tx_data_pkts + s.nic[i].tx_ctrl_pkts;
    recv += s.nic[i].rx_data_pkts + s.nic[i].rx_ctrl_pkts;
  }
  cr_assert_eq(sent, recv + fab_switch_stats(s.sw)->drops);
  star_fini(&s);
}

Test(switch, high_priority_flow_is_not_slowed_by_low) {
  Star s;
  star_init(&s, 3, 64 << 20, 1.0, 0);
  star_flow(&s, 0, 1, 0, 200 * 4096, 0); /* low */
  star_flow(&s, 1, 2, 0, 50 * 4096, 1);  /* high, same bottleneck */
  cr_assert(fab_engine_run(s.eng, FAB_TIME_MAX));
  fab_time_t pkt = 4178 * 80;
  /* alone it would take 51 packet times + 2 us; behind at most one low packet */
  cr_assert_leq(s.flows[1].end, 52 * pkt + 2 * FAB_US);
  cr_assert_gt(s.flows[0].end, s.flows[1].end);
  star_fini(&s);
}

Test(switch, no_route_drops_and_counts) {
  Star s;
  star_init(&s, 2, 1 << 20, 1.0, 0);
  /* forget host 1: a fresh route table with host 0's route only */
  uint32_t g0 = fab_switch_route_group(s.sw, 0);
  cr_assert_neq(g0, UINT32_MAX);
  fab_switch_reset_routes(s.sw, 2);
  fab_switch_set_route(s.sw, 0, g0);
  cr_assert_eq(fab_switch_route_group(s.sw, 1), UINT32_MAX);
  cr_assert_null(fab_switch_next_hop(s.sw, 1, 0));
  cr_assert_null(fab_switch_next_hop(s.sw, 7, 0), "beyond the endpoint range");
  cr_assert_eq(fab_switch_next_hop(s.sw, 0, 0), fab_switch_port_at(s.sw, 0));
  s.cfg.max_timeouts = 1;
  s.nic[0].cfg.max_timeouts = 1;
  star_flow(&s, 0, 0, 1, 1000, 0);
  cr_assert(fab_engine_run(s.eng, FAB_TIME_MAX));
  cr_assert_eq(s.run.failed, 1);
  cr_assert_eq(fab_switch_stats(s.sw)->unroutable, 2, "the first try and one retransmission");
  star_fini(&s);
}

Test(switch, ecmp_group_spreads) {
  FabSwitchCfg sc = {0, 1 << 20, 1.0, 1, 7};
  FabSwitch *sw = fab_switch_new("leaf3", &sc, 4, 1);
  uint32_t ports[] = {0, 1, 2, 3};
  for (uint32_t i = 0; i < 4; i++) fab_switch_port_init(sw, i, GBPS100, 0);
  fab_switch_set_route(sw, 0, fab_switch_add_group(sw, ports, 4));
  int count[4] = {0};
  for (uint32_t h = 0; h < 4000; h++) count[fab_switch_next_hop(sw, 0, h * 2654435761u)->index]++;
  for (int i = 0; i < 4; i++) cr_assert(count[i] > 800 && count[i] < 1200, "port %d got %d", i, count[i]);
  fab_switch_free(sw);
}

/* ---- PFC and ECN, on whole scenarios ------------------------------------ */

#include "testscen.h"




static const char incast16[] =
  "cluster: {nodes: 17}\n"
  "fabric:\n"
  "  topology: {kind: single-switch}\n"
  "  link: {bandwidth: 100Gbps, latency: 1us, mtu: 4096}\n"
  "  switch:\n"
  "    latency: 600ns\n"
  "    buffer: 4MiB\n"
  "    priorities: 1\n"
  "    pfc: {enabled: true, xoff: 64KiB, xon: 32KiB}\n"
  "workload: {kind: incast, senders: 16, receiver: 0, size: 1MiB}\n";

static const FabLinkRec *link_from(const FabResults *r, const char *from) {
  for (size_t i = 0; i < r->n_links; i++)
    if (g_str_equal(r->links[i].from, from)) return &r->links[i];
  cr_assert_fail("no link from %s", from);
  return NULL;
}

Test(switch, pfc_incast_is_lossless_at_line_rate) {
  FabScenario *sc = testscen_load(incast16, NULL);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(res.drops, 0, "PFC: no drops");
  cr_assert_eq(res.retransmits, 0);
  cr_assert_gt(res.pfc_pause_frames, 0);
  /* 16 MiB through the bottleneck: 4096 packets x 4178 B at 80 ps/B, plus
  ** the first packet's way in and the last one's way out; pauses must not
  ** leave the bottleneck idle for more than a few packet times */
  fab_time_t ideal = 4096ULL * 4178 * 80 + 4178 * 80 + 2 * FAB_US + 600 * FAB_NS;
  cr_assert_geq(res.sim_time, ideal);
  cr_assert_leq(res.sim_time, ideal + ideal / 100, "sim %" G_GUINT64_FORMAT " ideal %" G_GUINT64_FORMAT,
                res.sim_time, ideal);
  const FabLinkRec *down = link_from(&res, "switch0:p0");
  cr_assert_eq(down->drops, 0);
  fab_time_t paused = 0;
  for (int h = 1; h <= 16; h++) {
    char name[32];
    g_snprintf(name, sizeof name, "host%d:p0", h);
    const FabLinkRec *up = link_from(&res, name);
    cr_assert_gt(up->pause_rx, 0, "%s was paused", name);
    paused += up->paused;
  }
  cr_assert_gt(paused, 0);
  cr_assert_leq(res.max_queue_bytes, 4 << 20);
  testscen_done(sc, &res);
}

Test(switch, same_incast_without_pfc_and_small_buffer_drops_and_recovers) {
  const char *sets[] = {"fabric.switch.pfc.enabled=false", "fabric.switch.buffer=256KiB", NULL};
  FabScenario *sc = testscen_load(incast16, sets);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_gt(res.drops, 0);
  cr_assert_gt(res.retransmits, 0);
  cr_assert_eq(res.pfc_pause_frames, 0);
  for (size_t i = 0; i < res.n_flows; i++) cr_assert_neq(res.flows[i].end, 0);
  testscen_done(sc, &res);
}

Test(switch, auto_headroom_absorbs_the_worst_response) {
  /* long cables and a slow response: lots in flight after XOFF */
  const char *sets[] = {"fabric.link.latency=5us", "fabric.switch.pfc.response=3us", NULL};
  FabScenario *sc = testscen_load(incast16, sets);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(res.drops, 0, "auto headroom: nothing dropped");
  cr_assert_gt(res.pfc_pause_frames, 0);
  testscen_done(sc, &res);
}

Test(switch, headroom_too_small_drops) {
  const char *sets[] = {"fabric.link.latency=5us", "fabric.switch.pfc.headroom=8KiB", NULL};
  FabScenario *sc = testscen_load(incast16, sets);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_gt(res.drops, 0, "a headroom below the cable's bytes in flight overflows");
  for (size_t i = 0; i < res.n_flows; i++) cr_assert_neq(res.flows[i].end, 0, "recovered by go-back-N");
  testscen_done(sc, &res);
}

Test(switch, auto_headroom_on_paper) {
  /* 100 Gbps, 1 us cable, 1 us response: 3 us x 12.5 B/ns = 37500 B, + three
  ** full packets (the one crossing XOFF, ours and the upstream's being sent:
  ** 3 x 4178) + the 84-byte PAUSE frame */
  cr_assert_eq(fab_pfc_headroom_auto(100000000000ULL, FAB_US, FAB_US, 4178), 50118);
}

Test(switch, pauses_spread_hop_by_hop) {
  /* 8 hosts of leaf 1..3 send to host 0 on leaf 0: the leaf0 -> host0 port is
  ** the bottleneck; leaf0 pauses the spines, the spines pause the leaves, the
  ** leaves pause the hosts */
  const char *yaml =
    "cluster: {nodes: 16}\n"
    "fabric:\n"
    "  topology: {kind: leaf-spine, hosts_per_leaf: 4, spines: 2}\n"
    "  link: {bandwidth: 100Gbps, latency: 1us, mtu: 4096}\n"
    "  switch: {buffer: 2MiB, priorities: 1, pfc: {enabled: true, xoff: 32KiB, xon: 16KiB}}\n"
    "workload: {kind: incast, senders: [4, 5, 6, 8, 9, 10, 12, 13], receiver: 0, size: 2MiB}\n";
  FabScenario *sc = testscen_load(yaml, NULL);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(res.drops, 0);
  uint64_t leaf0_up = 0, spine_down = 0, leaf_host = 0;
  for (size_t i = 0; i < res.n_links; i++) {
    const FabLinkRec *l = &res.links[i];
    if (g_str_has_prefix(l->from, "leaf0:p") && g_str_has_prefix(l->to, "spine")) leaf0_up += l->pause_tx;
    if (g_str_has_prefix(l->from, "spine") && !g_str_has_prefix(l->to, "leaf0:")) spine_down += l->pause_tx;
    if (g_str_has_prefix(l->from, "leaf") && !g_str_has_prefix(l->from, "leaf0:") && g_str_has_prefix(l->to, "host"))
      leaf_host += l->pause_tx;
  }
  cr_assert_gt(leaf0_up, 0, "leaf0 pauses the spines");
  cr_assert_gt(spine_down, 0, "the spines pause the senders' leaves");
  cr_assert_gt(leaf_host, 0, "the leaves pause the sending hosts");
  testscen_done(sc, &res);
}



/* Packets injected straight into a switch, to a counting sink. */
typedef struct Count {
  FabNode node;
  FabPort port;
  int n, ce;
} Count;

static void count_receive(FabEngine *eng, FabNode *self, FabPkt *p, FabPort *in) {
  Count *c = (Count *)self;
  c->n++;
  c->ce += (p->flags & FAB_PKTF_ECN) != 0;
  fab_pkt_free(eng, p);
}

static int ecn_burst(bool on_dequeue, uint64_t seed, int *seen_ce) {
  FabEngine *eng = testnet_engine(seed);
  FabSwitchCfg sc = {0, 16 << 20, 1.0, 1, 0, seed};
  sc.ecn = (FabEcnCfg){true, 10000, 20000, 1.0, on_dequeue};
  FabSwitch *sw = fab_switch_new("sw", &sc, 2, 2);
  Count sink[2];
  memset(sink, 0, sizeof sink);
  for (uint32_t i = 0; i < 2; i++) {
    fab_elem_init(&sink[i].node.el, &tap_ops);
    sink[i].node.receive = count_receive;
    fab_port_init(&sink[i].port, &sink[i].node, 0, GBPS100, 0, 1);
    fab_port_connect(&sink[i].port, fab_switch_port_init(sw, i, GBPS100, 0));
    fab_switch_set_route(sw, i, fab_switch_add_group(sw, &i, 1));
  }
  for (int i = 0; i < 100; i++) {
    FabPkt *p = fab_pkt_alloc(eng);
    p->dst = 1;
    p->wire = 1000;
    p->flags = FAB_PKTF_ECT;
    FabNode *node = fab_switch_node(sw);
    node->receive(eng, node, p, fab_switch_port_at(sw, 0));
  }
  cr_assert(fab_engine_run(eng, FAB_TIME_MAX));
  cr_assert_eq(sink[1].n, 100);
  int marks = (int)fab_switch_stats(sw)->ecn_marks;
  cr_assert_eq(marks, (int)fab_switch_port_at(sw, 1)->ecn_marks);
  *seen_ce = sink[1].ce;
  cr_assert_eq(fab_pool_live(eng->pool), 0);
  fab_switch_free(sw);
  fab_engine_free(eng);
  return marks;
}

Test(switch, ecn_red_marking_on_enqueue) {
  /* packet i joins a queue of (i-1) x 1000 B (packet 0 leaves at once):
  ** never marked at <= kmin (i <= 11), always at >= kmax (i >= 21) */
  int ce, marks = ecn_burst(false, 1, &ce);
  cr_assert_eq(ce, marks, "the receiver sees every mark");
  cr_assert_geq(marks, 79);
  cr_assert_leq(marks, 88);
  int ce2, again = ecn_burst(false, 1, &ce2);
  cr_assert_eq(again, marks, "random marking is deterministic for a seed");
}

Test(switch, ecn_marking_on_dequeue_sees_the_queue_behind) {
  /* on dequeue, packet i leaves a queue of (99 - i) x 1000 B */
  int ce, marks = ecn_burst(true, 1, &ce);
  cr_assert_eq(ce, marks);
  cr_assert_geq(marks, 79);
  cr_assert_leq(marks, 88);
}

Test(switch, infiniband_credits_never_drop_nor_overfill) {
  const char *yaml =
    "cluster: {nodes: 17}\n"
    "fabric:\n"
    "  transport: infiniband\n"
    "  topology: {kind: single-switch}\n"
    "  link: {bandwidth: 200Gbps, latency: 1us, mtu: 4096}\n"
    "  switch: {latency: 300ns, buffer: 1MiB, priorities: 1}\n"
    "workload: {kind: incast, senders: 16, receiver: 0, size: 1MiB}\n";
  FabScenario *sc = testscen_load(yaml, NULL);
  /* 1 MiB over 17 ports x 1 VL: 61680 B of credit for each ingress */
  cr_assert_eq(sc->fabric.sw.credits, (1 << 20) / 17);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(res.drops, 0, "credits: no drops by construction");
  cr_assert_leq(res.max_queue_bytes, 1 << 20, "never more than the buffer");
  cr_assert_gt(res.max_queue_bytes, 16 * 30000, "and the buffer is used");
  cr_assert_eq(res.pfc_pause_frames, 0);
  /* the bottleneck stays busy: 4096 packets of 4122 B at 40 ps/B */
  fab_time_t ideal = 4096ULL * 4122 * 40;
  cr_assert_leq(res.sim_time, ideal + ideal / 50 + 5 * FAB_US);
  testscen_done(sc, &res);
}

/* InfiniBand credits follow the VLs in use, not the priorities configured:
** with 8 priorities and one in use each ingress gets buffer / ports; with two
** in use, half that. One 400 Gb/s flow through a switch whose credits cover
** only part of the credit loop (2 x 1 us of links, a 4122-byte packet each
** way at 400 Gb/s: 112366 B of bandwidth-delay product) moves at about
** credits / loop; the scenario warns so, and a buffer that covers the loop
** gives the line rate and no warning. */
static const char ib_one_flow[] =
  "cluster: {nodes: 17}\n"
  "fabric:\n"
  "  transport: infiniband\n"
  "  topology: {kind: single-switch}\n"
  "  link: {bandwidth: 400Gbps, latency: 1us, mtu: 4096}\n"
  "  switch: {buffer: 1MiB}\n"
  "workload: {kind: flows, flows: [{src: 0, dst: 1, size: 64MiB}]}\n";

Test(switch, infiniband_credits_follow_the_vls_in_use_and_the_loop) {
  FabScenario *sc = testscen_load(ib_one_flow, NULL);
  cr_assert_eq(sc->fabric.sw.nprio, 8);
  cr_assert_eq(sc->fabric.sw.credits, (1 << 20) / 17, "one VL in use: the buffer over 17 ports");
  cr_assert_eq(sc->warnings->len, 1);
  const char *w = g_ptr_array_index(sc->warnings, 0);
  cr_assert(strstr(w, "61680 B per (port, VL)") && strstr(w, "112366 B") && strstr(w, "55%"), "%s", w);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(res.n_warnings, 1, "the JSON lists it");
  double gbps = 64.0 * 1048576 * 8 / fab_time_to_s(res.flows[0].end) / 1e9;
  cr_assert(gbps > 0.5 * 400 && gbps < 0.6 * 400, "%.1f Gbps: about 61680 / 112366 of the link", gbps);
  testscen_done(sc, &res);
  const char *two[] = {"workload.flows=[{src: 0, dst: 1, size: 1MiB}, {src: 2, dst: 3, size: 1MiB, priority: 5}]",
                       NULL};
  sc = testscen_load(ib_one_flow, two);
  cr_assert_eq(sc->fabric.sw.credits, (1 << 20) / 17 / 2, "two VLs in use: half each");
  fab_scenario_free(sc);
  const char *big[] = {"fabric.switch.buffer=64MiB", NULL};
  sc = testscen_load(ib_one_flow, big);
  cr_assert_eq(sc->warnings->len, 0, "64 MiB covers the loop");
  testscen_run(sc, &res);
  gbps = 64.0 * 1048576 * 8 / fab_time_to_s(res.flows[0].end) / 1e9;
  cr_assert_gt(gbps, 0.97 * 400 * 4096 / 4122, "%.1f Gbps: the line rate", gbps);
  testscen_done(sc, &res);
}

Test(switch, infiniband_credits_given_must_fit_the_vls_in_use) {
  const char *sets[] = {"fabric.switch.credits=40000",
                        "workload.flows=[{src: 0, dst: 1, size: 1MiB}, {src: 2, dst: 3, size: 1MiB, priority: 5}]",
                        NULL};
  testscen_expect_error(ib_one_flow, sets, "--set:1:", "17 ports x 2 VLs in use x 40000 B of credit is more than the "
                        "buffer");
}

Test(switch, pfc_dynamic_xoff_is_lossless_and_pauses_earlier_with_a_smaller_alpha) {
  const char *big[] = {"fabric.switch.pfc={enabled: true, xoff: dynamic, alpha: 1}", NULL};
  const char *small[] = {"fabric.switch.pfc={enabled: true, xoff: dynamic, alpha: 0.01}", NULL};
  FabScenario *a = testscen_load(incast16, big), *b = testscen_load(incast16, small);
  cr_assert(a->fabric.sw.pfc.dynamic && a->fabric.sw.pfc.xon == 2 * 4178, "dynamic XON: two packets below");
  FabResults ra, rb;
  testscen_run(a, &ra);
  testscen_run(b, &rb);
  cr_assert_eq(ra.drops + rb.drops, 0);
  cr_assert_gt(rb.pfc_pause_frames, ra.pfc_pause_frames, "alpha 0.01 pauses more (%" G_GUINT64_FORMAT " vs %"
               G_GUINT64_FORMAT ")", rb.pfc_pause_frames, ra.pfc_pause_frames);
  cr_assert_lt(rb.max_queue_bytes, ra.max_queue_bytes, "and holds a shorter queue");
  testscen_done(a, &ra);
  testscen_done(b, &rb);
}

/* ---- routing among equal-cost ports (FabRouting) --------------------------- */

/* A switch whose route to endpoint 0 is the group of ports 1-4, each to a
** counting sink at 100 Gb/s (port 4 at `fast` when given); packets are
** injected as if they came in on port 0. */
typedef struct Fan {
  FabEngine *eng;
  FabSwitch *sw;
  Count sink[5];
} Fan;

static void fan_init(Fan *f, FabRouting routing, uint32_t choices, uint64_t fast) {
  memset(f, 0, sizeof *f);
  f->eng = testnet_engine(5);
  FabSwitchCfg sc = {0, 16 << 20, 1.0, 1, 0, 5};
  sc.routing = routing;
  sc.ar_choices = choices;
  sc.ar_quantum = 1082; /* one 1000-byte packet below */
  sc.flowlet_gap = 10 * FAB_US;
  sc.flowlet_table = 64;
  f->sw = fab_switch_new("leaf0", &sc, 5, 1);
  uint32_t members[] = {1, 2, 3, 4};
  for (uint32_t i = 0; i < 5; i++) {
    uint64_t bps = i == 4 && fast ? fast : GBPS100;
    fab_elem_init(&f->sink[i].node.el, &tap_ops);
    f->sink[i].node.receive = count_receive;
    fab_port_init(&f->sink[i].port, &f->sink[i].node, 0, bps, 0, 1);
    fab_port_connect(&f->sink[i].port, fab_switch_port_init(f->sw, i, bps, 0));
  }
  fab_switch_set_route(f->sw, 0, fab_switch_add_group(f->sw, members, 4));
}

/* Inject a 1082-byte data packet of the flow with `hash` now; returns the
** port it was queued at (or is being sent on). */
static uint32_t fan_send(Fan *f, uint32_t hash, bool ar) {
  FabPkt *p = fab_pkt_alloc(f->eng);
  p->dst = 0;
  p->hash = hash;
  p->wire = 1082;
  p->payload = 1000;
  p->flags = ar ? FAB_PKTF_AR : 0;
  uint64_t before[5];
  for (uint32_t i = 0; i < 5; i++) {
    const FabPort *pt = fab_switch_port_at(f->sw, i);
    before[i] = pt->qbytes + (pt->tx != NULL);
  }
  FabNode *node = fab_switch_node(f->sw);
  node->receive(f->eng, node, p, fab_switch_port_at(f->sw, 0));
  for (uint32_t i = 1; i < 5; i++) {
    FabPort *pt = fab_switch_port_at(f->sw, i);
    if (pt->qbytes + (pt->tx != NULL) != before[i]) return i;
  }
  cr_assert_fail("the packet went nowhere");
  return 0;
}

static void fan_fini(Fan *f) {
  cr_assert(fab_engine_run(f->eng, FAB_TIME_MAX));
  cr_assert_eq(fab_pool_live(f->eng->pool), 0);
  fab_switch_free(f->sw);
  fab_engine_free(f->eng);
}

Test(switch, round_robin_takes_every_member_in_turn_and_hashes_the_rest) {
  Fan f;
  fan_init(&f, FAB_ROUTE_ROUND_ROBIN, 0, 0);
  for (uint32_t k = 0; k < 8; k++) cr_assert_eq(fan_send(&f, 77, true), 1 + k % 4, "packet %u", k);
  uint32_t first = fan_send(&f, 77, false); /* not AR-eligible: the hash's port, every time */
  for (uint32_t k = 0; k < 5; k++) cr_assert_eq(fan_send(&f, 77, false), first);
  cr_assert_eq(fab_switch_next_hop(f.sw, 0, 77)->index, first);
  fan_fini(&f);
  for (uint32_t i = 1; i < 5; i++) cr_assert_eq(f.sink[i].n, 2 + 6 * (i == first), "port %u", i);
}

/* Spray: 4000 packets of one flow each to a member drawn at random, so
** every port gets about 1000 (binomial: +-27, here within +-150) and not
** in turn; the draws follow the switch's seed (the same run twice, the
** same ports); smaller flows keep their hash's port. */
static void spray_ports(uint32_t *first16, uint32_t got[5]) {
  Fan f;
  fan_init(&f, FAB_ROUTE_SPRAY, 0, 0);
  memset(got, 0, 5 * sizeof *got);
  for (uint32_t k = 0; k < 4000; k++) {
    uint32_t port = fan_send(&f, 77, true);
    got[port]++;
    if (k < 16) first16[k] = port;
    if (k % 64 == 63) cr_assert(fab_engine_run(f.eng, FAB_TIME_MAX)); /* drain: the buffer holds the rest */
  }
  uint32_t hashed = fan_send(&f, 77, false);
  for (uint32_t k = 0; k < 5; k++) cr_assert_eq(fan_send(&f, 77, false), hashed);
  fan_fini(&f);
}

Test(switch, spray_draws_each_packets_member_at_random) {
  uint32_t a[16], b[16], got[5], again[5];
  spray_ports(a, got);
  spray_ports(b, again);
  bool in_turn = true;
  for (uint32_t k = 0; k < 16; k++) {
    cr_assert_eq(a[k], b[k], "the same seed, the same draws");
    in_turn &= a[k] == 1 + k % 4;
  }
  cr_assert(!in_turn, "drawn, not taken in turn");
  for (uint32_t i = 1; i < 5; i++) cr_assert(got[i] > 850 && got[i] < 1150, "port %u got %u of 4000", i, got[i]);
}

/* 8 packets at once: each goes to a port with the fewest levels (one level
** per packet, queued or on the serialiser), so every port gets two whatever
** the RNG breaks ties with; a paused port gets none while another is not;
** the faster of two equally empty ports wins. */
Test(switch, adaptive_takes_the_least_loaded_member) {
  for (uint32_t choices = 0; choices <= 2; choices += 2) {
    Fan f;
    fan_init(&f, FAB_ROUTE_ADAPTIVE, 0, 0);
    uint32_t got[5] = {0};
    for (uint32_t k = 0; k < 8; k++) got[fan_send(&f, 77, true)]++;
    for (uint32_t i = 1; i < 5; i++) cr_assert_eq(got[i], 2, "port %u got %u", i, got[i]);
    fan_fini(&f);
    fan_init(&f, FAB_ROUTE_ADAPTIVE, choices, 0);
    fab_switch_port_at(f.sw, 2)->paused = 1; /* priority 0 paused by the far end */
    memset(got, 0, sizeof got);
    for (uint32_t k = 0; k < 60; k++) got[fan_send(&f, 77, true)]++;
    cr_assert_eq(got[2], 0, "a paused port (choices %u)", choices);
    if (!choices)
      for (uint32_t i = 1; i < 5; i++) cr_assert_eq(got[i], i == 2 ? 0 : 20, "port %u got %u", i, got[i]);
    fab_switch_port_at(f.sw, 2)->paused = 0;
    fan_fini(&f);
  }
  Fan f;
  fan_init(&f, FAB_ROUTE_ADAPTIVE, 0, 2 * GBPS100);
  cr_assert_eq(fan_send(&f, 77, true), 4, "the 200G port, all being empty");
  fan_fini(&f);
}

/* A flowlet keeps its port while packets come less than the gap apart,
** even to a paused port; after a longer gap it is placed again, on the
** least loaded port (not the paused one), which counts as a move. Two
** flows that hash to one entry share the flowlet. */
Test(switch, flowlet_moves_only_after_an_idle_gap) {
  Fan f;
  fan_init(&f, FAB_ROUTE_FLOWLET, 0, 0);
  uint32_t p = fan_send(&f, 77, true);
  cr_assert(fab_engine_run(f.eng, FAB_TIME_MAX));
  f.eng->now = 5 * FAB_US; /* within the gap of the last packet (at 0) */
  fab_switch_port_at(f.sw, p)->paused = 1;
  cr_assert_eq(fan_send(&f, 77, true), p, "within the gap it stays, paused or not");
  f.eng->now = 14 * FAB_US; /* 9 us after the last: still within */
  cr_assert_eq(fan_send(&f, 77, true), p);
  cr_assert_eq(fab_switch_stats(f.sw)->moves, 0);
  fab_switch_port_at(f.sw, p)->paused = 0; /* resumed: it sends what waited */
  fab_port_kick(f.eng, fab_switch_port_at(f.sw, p));
  cr_assert(fab_engine_run(f.eng, FAB_TIME_MAX));
  fab_switch_port_at(f.sw, p)->paused = 1;
  f.eng->now = 40 * FAB_US; /* 26 us idle: a new flowlet */
  uint32_t q = fan_send(&f, 77, true);
  cr_assert_neq(q, p, "placed again, not on the paused port");
  cr_assert_eq(fab_switch_stats(f.sw)->moves, 1);
  fab_switch_port_at(f.sw, p)->paused = 0;
  fab_port_kick(f.eng, fab_switch_port_at(f.sw, p));
  fan_fini(&f);
}

/* The routings on a whole permutation (128 hosts, 1:1 leaf-spine, lossy
** RoCE with go-back-N receivers): packets sent over different paths arrive
** out of order, and a go-back-N receiver takes every gap for a loss. So
** per-packet routing collapses (round robin, adaptive: over a hundred times
** ECMP's retransmissions, several times its time), while flowlets, which
** move a flow only after an idle gap longer than the paths differ, do not.
** That is why receivers that accept out-of-order packets matter (issue 15).
** Every mode gives the same JSON twice. */
Test(switch, per_packet_routing_collapses_go_back_n_and_flowlets_do_not) {
  fab_time_t t[4];
  uint64_t retx[4];
  static const char *const modes[] = {"ecmp", "adaptive", "flowlet", "round-robin"};
  for (int m = 0; m < 4; m++) {
    char *set = g_strdup_printf("fabric.switch.routing=%s", modes[m]);
    const char *const sets[] = {set, NULL};
    t[m] = testscen_permutation_twice(sets, &retx[m]);
    g_free(set);
  }
  for (int m = 1; m < 4; m += 2) {
    cr_assert_gt(retx[m], 100 * retx[0], "%s: %lu retransmissions, ecmp %lu", modes[m], retx[m], retx[0]);
    cr_assert_gt(t[m], 3 * t[0], "%s: %lu ps, ecmp %lu ps", modes[m], t[m], t[0]);
  }
  cr_assert_lt(t[2], t[0], "flowlets: %lu ps, ecmp %lu ps", t[2], t[0]);
  cr_assert_lt(retx[2], 10 * retx[0], "flowlets: %lu retransmissions, ecmp %lu", retx[2], retx[0]);
}

/* The same permutation with receivers that place data out of order
** (cluster.nic.reliability: selective): adaptive routing no longer
** collapses; it runs over twice as fast as ECMP with the same receivers
** and three times as fast as go-back-N ECMP, and gives the same JSON twice. */
Test(switch, adaptive_routing_with_selective_receivers_beats_ecmp) {
  static const char *const modes[] = {"fabric.switch.routing=ecmp", "fabric.switch.routing=adaptive"};
  fab_time_t t[2];
  for (int m = 0; m < 2; m++)
    t[m] = testscen_permutation_twice((const char *const[]){modes[m], "cluster.nic.reliability=selective", NULL}, NULL);
  fab_time_t gbn = testscen_permutation_twice(NULL, NULL);
  cr_assert_lt(2 * t[1], t[0], "adaptive %lu ps, ecmp %lu ps (selective both)", t[1], t[0]);
  cr_assert_lt(3 * t[1], gbn, "adaptive %lu ps, go-back-N ecmp %lu ps", t[1], gbn);
}

/* fabric.switch.routing_per_tier: the switches of a tier take its routing,
** the others the fabric-wide one; the PCIe and NVLink elements of GPU
** nodes hash whatever is asked. On a leaf-spine only the leaves choose (a
** spine has one port down to each leaf), so `leaf: adaptive` is the same
** run as adaptive everywhere. */
static uint32_t routing_of(const FabTopology *t, const char *name) {
  for (uint32_t s = 0; s < t->nswitches; s++)
    if (!strcmp(fab_switch_name(t->switches[s]), name)) return fab_switch_cfg(t->switches[s])->routing;
  cr_assert_fail("no switch %s", name);
  return 0;
}

Test(switch, routing_per_tier) {
  FabScenario *sc = testscen_load("name: t\ncluster: {nodes: 16}\n"
                                  "fabric: {topology: {kind: fat-tree, k: 4}, link: {bandwidth: 100Gbps},\n"
                                  "  switch: {routing: adaptive,\n"
                                  "           routing_per_tier: {agg: flowlet, core: round-robin}}}\n"
                                  "workload: {kind: permutation, size: 1MiB}\n", NULL);
  FabTopology *t = fab_topology_build(&sc->fabric);
  cr_assert_eq(routing_of(t, "edge3"), FAB_ROUTE_ADAPTIVE);
  cr_assert_eq(routing_of(t, "agg5"), FAB_ROUTE_FLOWLET);
  cr_assert_eq(routing_of(t, "core0"), FAB_ROUTE_ROUND_ROBIN);
  fab_topology_free(t);
  fab_scenario_free(sc);
  sc = testscen_load("name: t\ncluster: {node: dgx-h100, nodes: 2}\n"
                     "fabric: {topology: {kind: multi-rail, hosts_per_leaf: 1, spines: 1},\n"
                     "  link: {bandwidth: 400Gbps},\n"
                     "  switch: {routing_per_tier: {leaf: adaptive}}}\n"
                     "workload: {kind: collective, op: allreduce, size: 1MiB}\n", NULL);
  t = fab_topology_build(&sc->fabric);
  cr_assert_eq(routing_of(t, "p0.leaf1"), FAB_ROUTE_ADAPTIVE);
  cr_assert_eq(routing_of(t, "p7.leaf0"), FAB_ROUTE_ADAPTIVE);
  cr_assert_eq(routing_of(t, "p7.spine0"), FAB_ROUTE_ECMP);
  for (uint32_t s = t->nnet; s < t->nswitches; s++) /* inside the nodes */
    cr_assert_eq(fab_switch_cfg(t->switches[s])->routing, FAB_ROUTE_ECMP);
  fab_topology_free(t);
  fab_scenario_free(sc);
  /* rail-only: its one tier is the rails (a spine tier it lacks is refused) */
  sc = testscen_load("name: t\ncluster: {node: dgx-h100, nodes: 2}\n"
                     "fabric: {topology: {kind: rail-only}, link: {bandwidth: 400Gbps},\n"
                     "  switch: {routing_per_tier: {rail: flowlet}}}\n"
                     "workload: {kind: collective, op: allreduce, size: 1MiB}\n", NULL);
  t = fab_topology_build(&sc->fabric);
  cr_assert_eq(t->nnet, 8, "8 rail switches (%u)", t->nnet);
  for (uint32_t s = 0; s < t->nswitches; s++)
    cr_assert_eq(fab_switch_cfg(t->switches[s])->routing, s < t->nnet ? FAB_ROUTE_FLOWLET : FAB_ROUTE_ECMP,
                 "%s", fab_switch_name(t->switches[s]));
  fab_topology_free(t);
  fab_scenario_free(sc);
  testscen_expect_error("name: t\ncluster: {node: dgx-h100, nodes: 2}\n"
                        "fabric: {topology: {kind: rail-only}, switch: {routing_per_tier: {spine: adaptive}}}\n"
                        "workload: {kind: collective, op: allreduce, size: 1MiB}\n", NULL, "test.yaml:3:",
                        "no tier 'spine' in a rail-only fabric: its switch tiers are rail");
  uint64_t r1, r2;
  fab_time_t t1 = testscen_permutation_twice((const char *const[]){"fabric.switch.routing_per_tier={leaf: adaptive}",
                                                          "cluster.nic.reliability=selective", NULL}, &r1);
  fab_time_t t2 = testscen_permutation_twice((const char *const[]){"fabric.switch.routing=adaptive",
                                                          "cluster.nic.reliability=selective", NULL}, &r2);
  cr_assert_eq(t1, t2);
  cr_assert_eq(r1, r2);
}

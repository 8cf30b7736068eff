/* Switch: store-and-forward timing, incast at line rate, dynamic-threshold
** buffer, lossy drops with recovery, priorities, buffer accounting. */
#include "testnet.h"

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
  s->eng = fab_engine_new(1);
  s->cfg = testnet_nic_cfg(GBPS100, 4096, FAB_TRANSPORT_ROCEV2);
  FabSwitchCfg sc = {sw_latency, buffer, alpha, 2, 0};
  s->sw = fab_switch_new(0, "switch0", &sc, n, n);
  for (uint32_t i = 0; i < n; i++) {
    testnet_nic(&s->nic[i], i, &s->cfg, s->flows, &s->run, FAB_US);
    fab_port_connect(&s->nic[i].port, fab_switch_port(s->sw, i, GBPS100, FAB_US));
    fab_switch_set_route(s->sw, i, fab_switch_add_group(s->sw, &i, 1));
  }
}

static void star_flow(Star *s, uint32_t id, uint32_t src, uint32_t dst, uint64_t bytes, uint8_t prio) {
  s->flows[id] = testnet_flow(id, src, dst, bytes, 0, &s->cfg);
  s->flows[id].prio = prio;
  fab_nic_post(s->eng, &s->nic[src], &s->flows[id]);
}

static void star_fini(Star *s) {
  cr_assert_eq(s->sw->used, 0, "buffer released");
  for (uint32_t i = 0; i < s->n * s->sw->cfg.nprio; i++) cr_assert_eq(s->sw->ingress[i], 0);
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

Test(switch, incast_shares_the_bottleneck_at_line_rate) {
  Star s;
  star_init(&s, 5, 64 << 20, 1.0, 0);
  for (uint32_t i = 0; i < 4; i++) star_flow(&s, i, i + 1, 0, 64 * 4096, 0);
  cr_assert(fab_engine_run(s.eng, FAB_TIME_MAX));
  cr_assert_eq(s.run.done, 4);
  cr_assert_eq(s.sw->drops, 0);
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
  cr_assert_gt(s.sw->drops, 0, "2:1 overload for 8 MB must overflow a 1 MiB buffer");
  uint64_t q = s.sw->ports[0].max_qbytes;
  cr_assert_leq(q, B / 2 + 4178, "max queue %" G_GUINT64_FORMAT, q);
  cr_assert_geq(q, B / 2 - 2 * 4178, "max queue %" G_GUINT64_FORMAT, q);
  cr_assert_eq(s.sw->ports[0].drops, s.sw->drops, "all drops at the congested port");
  star_fini(&s);
}

Test(switch, alpha_sets_the_share) {
  Star s; /* alpha = 1/3: q <= (B - q) / 3, so q <= B/4 */
  uint64_t B = 1 << 20;
  star_init(&s, 3, B, 1.0 / 3, 0);
  star_flow(&s, 0, 1, 0, 1000 * 4096, 0);
  star_flow(&s, 1, 2, 0, 1000 * 4096, 0);
  cr_assert(fab_engine_run(s.eng, FAB_TIME_MAX));
  uint64_t q = s.sw->ports[0].max_qbytes;
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
  cr_assert_gt(s.sw->drops, 0);
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
  cr_assert_eq(sent, recv + s.sw->drops);
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
  s.sw->route[1] = UINT32_MAX; /* forget host 1 */
  cr_assert_null(fab_switch_next_hop(s.sw, 1, 0));
  cr_assert_null(fab_switch_next_hop(s.sw, 7, 0), "beyond the endpoint range");
  cr_assert_eq(fab_switch_next_hop(s.sw, 0, 0), &s.sw->ports[0]);
  s.cfg.max_timeouts = 1;
  s.nic[0].cfg.max_timeouts = 1;
  star_flow(&s, 0, 0, 1, 1000, 0);
  cr_assert(fab_engine_run(s.eng, FAB_TIME_MAX));
  cr_assert_eq(s.run.failed, 1);
  cr_assert_eq(s.sw->unroutable, 2, "the first try and one retransmission");
  star_fini(&s);
}

Test(switch, ecmp_group_spreads) {
  FabSwitchCfg sc = {0, 1 << 20, 1.0, 1, 7};
  FabSwitch *sw = fab_switch_new(3, "leaf3", &sc, 4, 1);
  uint32_t ports[] = {0, 1, 2, 3};
  for (uint32_t i = 0; i < 4; i++) fab_switch_port(sw, i, GBPS100, 0);
  fab_switch_set_route(sw, 0, fab_switch_add_group(sw, ports, 4));
  int count[4] = {0};
  for (uint32_t h = 0; h < 4000; h++) count[fab_switch_next_hop(sw, 0, h * 2654435761u)->index]++;
  for (int i = 0; i < 4; i++) cr_assert(count[i] > 800 && count[i] < 1200, "port %d got %d", i, count[i]);
  fab_switch_free(sw);
}

/* HPCC (models/hpcc.h): the switches' utilisation estimate and the
** sender's rate and window, worked out on paper; two flows sharing a port
** that writes its utilisation (testcc.h). */
#include "testcc.h"
#include "models/hpcc.h"
#include <math.h>

#define T10 (10 * FAB_US)
#define BT 125000.0 /* bytes: 100 Gb/s x 10 us */

/* A port of 100 Gb/s, T = 10 us. Its first packet finds no history: dt = T,
** u = qlen / (B T). The next, T/2 later with nothing queued: u = (1/2) u +
** L / (B T) (L the first packet's bytes, which left during dt). */
Test(hpcc, the_port_estimate_is_qlen_over_bt_plus_tx_rate_over_b_smoothed_over_t) {
  FabHpccPort pt = {0};
  uint16_t v = fab_hpcc_stamp(&pt, G100, 62500, 1250, T10, 100 * FAB_US, 0);
  cr_assert(fabs(pt.u - 0.5) < 1e-12, "%.12f", pt.u);
  cr_assert_eq(v, 4096, "0.5 x 8192");
  cr_assert_eq(pt.last, 100 * FAB_US);
  cr_assert_eq(pt.last_bytes, 1250);
  v = fab_hpcc_stamp(&pt, G100, 0, 1250, T10, 105 * FAB_US, 0);
  cr_assert(fabs(pt.u - (0.25 + 1250 / BT)) < 1e-12, "%.12f", pt.u);
  cr_assert_eq(v, (uint16_t)((0.25 + 0.01) * 8192 + 0.5));
  cr_assert_eq(fab_hpcc_stamp(&pt, G100, 0, 1250, T10, 106 * FAB_US, 60000), 60000,
               "a higher value from an earlier hop stays");
  /* back to back at line rate, 1250 B every 100 ns, nothing queued: u -> 1 */
  for (int k = 1; k <= 2000; k++) fab_hpcc_stamp(&pt, G100, 0, 1250, T10, 106 * FAB_US + k * 100000ull, 0);
  cr_assert(fabs(pt.u - 1) < 1e-6, "%.9f", pt.u);
  /* a queue of B T on top: u -> 2 */
  for (int k = 1; k <= 2000; k++)
    fab_hpcc_stamp(&pt, G100, 125000, 1250, T10, 400 * FAB_US + k * 100000ull, 0);
  cr_assert(fabs(pt.u - 2) < 1e-6, "%.9f", pt.u);
}

static FabCcCfg cfg(uint32_t max_stage) {
  FabCcCfg c;
  cr_assert(fab_cc_preset("hpcc", &c));
  cr_assert_eq(c.kind, FAB_CC_HPCC);
  c.hpcc.base_rtt = T10;
  c.hpcc.max_stage = max_stage;
  cr_assert_null(fab_cc_cfg_invalid(&c));
  return c;
}

/* The ACK, at `now`, of a packet sent at `sent` whose path's utilisation was u. */
static void ack(FabCcFlow *s, const FabCcCfg *c, fab_time_t sent, fab_time_t now, double u) {
  FabPkt a = {.type = FAB_PKT_ACK, .sent = sent, .mark_ev = (uint16_t)(u * FAB_HPCC_U_ONE)};
  fab_cc_ops(FAB_CC_HPCC)->on_ack(s, c, &a, now);
}

/* Line 100 Gb/s, T 10 us, eta 0.95, R_AI line / 2500 = 40 Mb/s. The flow
** starts at line rate with W = 125000 B. U = 1.875 (15360 / 8192 in the
** packet; k = U / eta): R = 100 / k + 0.04 = 50.7067 Gb/s, Rc too (the
** packet was sent after the last update), W = R T = 63383 B. U = 0.95 on a
** packet sent before that update (7782 / 8192 in the packet): R = Rc / k +
** 0.04 again, Rc kept. U = 0: line
** rate; U near 8, again and again: down to the floor, never under it. */
Test(hpcc, the_rate_is_the_reference_over_u_eta_plus_ai_and_the_window_its_bdp) {
  FabCcCfg c = cfg(0);
  FabCcFlow s = {.rate_bps = G100, .line_bps = G100, .timer_at = FAB_TIME_MAX, .mss = 1000};
  fab_cc_ops(FAB_CC_HPCC)->init(&s, &c, 0);
  cr_assert_eq(s.win_bytes, 125000);
  ack(&s, &c, 1 * FAB_US, 12 * FAB_US, 1.875);
  double r1 = 1e11 / (1.875 / 0.95) + 4e7;
  cr_assert_eq(s.rate_bps, (uint64_t)r1);
  cr_assert_eq(s.rate_bps, 50706666666ull);
  cr_assert_eq(s.u.hpcc.rate_c, s.rate_bps);
  cr_assert_eq(s.win_bytes, 63383);
  ack(&s, &c, 5 * FAB_US, 14 * FAB_US, 0.95);
  cr_assert_eq(s.rate_bps, (uint64_t)(50706666666.0 / (7782 / 8192.0 / 0.95) + 4e7));
  cr_assert_eq(s.u.hpcc.rate_c, 50706666666ull, "no update: a packet sent before the last");
  ack(&s, &c, 13 * FAB_US, 24 * FAB_US, 0);
  cr_assert_eq(s.rate_bps, G100);
  ack(&s, &c, 25 * FAB_US, 36 * FAB_US, 7.99);
  uint64_t r = s.rate_bps;
  cr_assert(llabs((long long)r - (long long)(100e9 * 0.95 / 7.99 + 40e6)) < 2e4, "%" G_GUINT64_FORMAT, r);
  for (int k = 0; k < 10; k++) ack(&s, &c, (fab_time_t)(40 + 20 * k) * FAB_US, (fab_time_t)(50 + 20 * k) * FAB_US, 7.99);
  cr_assert_eq(s.rate_bps, c.hpcc.min_rate_bps, "never below min_rate");
  cr_assert_eq(s.timer_at, FAB_TIME_MAX, "no timers");
}

/* With max_stage 2, below eta the rate rises additively for two updates,
** then takes the multiplicative step; above eta it is multiplicative at once. */
Test(hpcc, max_stage_additive_steps_before_a_multiplicative_one) {
  FabCcCfg c = cfg(2);
  FabCcFlow s = {.rate_bps = G100, .line_bps = G100, .timer_at = FAB_TIME_MAX, .mss = 1000};
  fab_cc_ops(FAB_CC_HPCC)->init(&s, &c, 0);
  s.u.hpcc.rate_c = s.rate_bps = 50000000000ull;
  ack(&s, &c, 1 * FAB_US, 11 * FAB_US, 0.5);
  cr_assert_eq(s.rate_bps, 50040000000ull);
  ack(&s, &c, 12 * FAB_US, 22 * FAB_US, 0.5);
  cr_assert_eq(s.rate_bps, 50080000000ull);
  cr_assert_eq(s.u.hpcc.stage, 2);
  ack(&s, &c, 23 * FAB_US, 33 * FAB_US, 0.5); /* stage 2 = max_stage: R = Rc / (0.5 / 0.95) + AI */
  cr_assert(llabs((long long)s.rate_bps - (long long)(50.08e9 * 0.95 / 0.5 + 40e6)) < 2e4, "%" G_GUINT64_FORMAT,
            s.rate_bps); /* 95.192 Gb/s */
  cr_assert_eq(s.u.hpcc.stage, 0);
  c.hpcc.eta = 0;
  cr_assert(g_str_has_prefix(fab_cc_cfg_invalid(&c), "eta"));
}

/* Two flows on a port that writes its utilisation (T the Merge's unloaded
** round trip, ACKs every packet): measured 43.54 and 44.34 Gbps over
** [7 ms, 10 ms], 95 % of the port's payload rate (eta 0.95), the deepest
** queue 56 KB; held to 45-55 % each and 90 % together. */
Test(hpcc, two_flows_converge_to_fair_share, .timeout = 120) {
  Net t = {0};
  double g0, g1;
  testcc_share(&t, "hpcc", &g0, &g1);
  double share = g0 / (g0 + g1);
  cr_assert(share > 0.45 && share < 0.55, "flow 0 carries %.3f of %.2f Gbps", share, g0 + g1);
  cr_assert(g0 + g1 > 0.9 * TESTCC_PAYLOAD_GBPS, "%.2f Gbps of %.2f", g0 + g1, TESTCC_PAYLOAD_GBPS);
  cr_assert_eq(t.sw.marks, 0, "HPCC's packets are not ECN-capable");
  cr_log_info("hpcc: deepest queue %" G_GUINT64_FORMAT " B", t.sw.port[2].max_qbytes);
  testcc_finish(&t, 2);
}

/* DCTCP's window (models/dctcp.h) and the NIC's window gate (cc.h): the
** handlers on ACKs chosen by hand, a fixed window through a Merge worked
** out to the picosecond, and two flows sharing a marking port (testcc.h). */
#include "testcc.h"
#include "models/dctcp.h"
#include <math.h>

static FabCcCfg cfg(void) {
  FabCcCfg c;
  cr_assert(fab_cc_preset("dctcp", &c));
  cr_assert_eq(c.kind, FAB_CC_DCTCP);
  cr_assert_null(fab_cc_cfg_invalid(&c));
  return c;
}

/* A 100 Gb/s flow of 1000 B packets started at 0. */
static FabCcFlow flow(const FabCcCfg *c) {
  FabCcFlow s = {.rate_bps = G100, .line_bps = G100, .timer_at = FAB_TIME_MAX, .mss = 1000};
  fab_cc_ops(FAB_CC_DCTCP)->init(&s, c, 0);
  return s;
}

/* The ACK, at `now`, of a packet sent at `sent`, reporting n packets of which m were marked. */
static void ack(FabCcFlow *s, const FabCcCfg *c, fab_time_t sent, fab_time_t now, uint16_t n, uint16_t m) {
  FabPkt a = {.type = FAB_PKT_ACK, .sent = sent, .ev = n, .mark_ev = m, .flags = m ? FAB_PKTF_ECE : 0};
  fab_cc_ops(FAB_CC_DCTCP)->on_ack(s, c, &a, now);
}

/* The window opens at line rate x the first RTT: 12.5 GB/s x 10 us =
** 125000 B. That ACK ends the first window of data (its packet was sent
** after the window began at 0): alpha = 15/16 x 1 + 1/16 x 0. Each packet
** acknowledged unmarked adds mss^2 / W. */
Test(dctcp, the_first_ack_opens_the_window_at_the_bdp_then_it_grows_by_mss2_over_w) {
  FabCcCfg c = cfg();
  FabCcFlow s = flow(&c);
  cr_assert_eq(s.win_bytes, 0, "open before the first ACK");
  cr_assert(s.u.dctcp.alpha == 1.0);
  ack(&s, &c, 1 * FAB_US, 11 * FAB_US, 1, 0);
  cr_assert(s.u.dctcp.alpha == 15.0 / 16);
  cr_assert(fabs(s.u.dctcp.win - 125008) < 1e-9, "%.9f", s.u.dctcp.win);
  cr_assert_eq(s.win_bytes, 125008);
  ack(&s, &c, 2 * FAB_US, 12 * FAB_US, 4, 0); /* sent before the window began at 11 us: no new alpha */
  cr_assert(s.u.dctcp.alpha == 15.0 / 16);
  cr_assert(fabs(s.u.dctcp.win - (125008 + 4e6 / 125008)) < 1e-9);
  cr_assert_eq(s.rate_bps, G100, "the window alone limits it");
  cr_assert_eq(s.timer_at, FAB_TIME_MAX, "no timers");
}

/* A mark cuts W to W (1 - alpha / 2) once per window: not again for a
** packet sent before the cut. Alpha learns F = marked / acknowledged over
** each window of data: after the first window (alpha 15/16), 8 packets
** acknowledged with 2 marked end the next one at the ACK of a packet sent
** at 11 us (after it began at 10 us): alpha = 15/16 x 15/16 + 1/16 x 1/4. */
Test(dctcp, a_mark_cuts_once_per_window_and_alpha_learns_the_fraction_marked) {
  FabCcCfg c = cfg();
  FabCcFlow s = flow(&c);
  ack(&s, &c, 1 * FAB_US, 10 * FAB_US, 1, 0);
  ack(&s, &c, 2 * FAB_US, 12 * FAB_US, 4, 0);
  double w = s.u.dctcp.win;
  ack(&s, &c, 3 * FAB_US, 13 * FAB_US, 2, 1);
  cr_assert(fabs(s.u.dctcp.win - w * (1 - 15.0 / 32)) < 1e-9, "cut by alpha / 2");
  w = s.u.dctcp.win;
  ack(&s, &c, 5 * FAB_US, 15 * FAB_US, 1, 1); /* sent before the cut at 13 us */
  cr_assert(s.u.dctcp.win == w, "one cut per window");
  ack(&s, &c, 11 * FAB_US, 21 * FAB_US, 1, 0);
  double alpha = 15.0 / 16 * 15 / 16 + 1.0 / 16 * 2 / 8;
  cr_assert(fabs(s.u.dctcp.alpha - alpha) < 1e-15, "%.17g", s.u.dctcp.alpha);
  w = s.u.dctcp.win;
  ack(&s, &c, 14 * FAB_US, 24 * FAB_US, 1, 1); /* sent after the cut */
  cr_assert(fabs(s.u.dctcp.win - w * (1 - alpha / 2)) < 1e-9);
  for (int k = 0; k < 200; k++) ack(&s, &c, (fab_time_t)(30 + 20 * k) * FAB_US, (fab_time_t)(40 + 20 * k) * FAB_US, 1, 1);
  cr_assert_eq(s.win_bytes, 2000, "never below two packets");
  cr_assert(s.u.dctcp.alpha > 0.99, "every packet marked: alpha -> 1");
}

/* A D-SACK or an ACK with no echo teaches nothing; bad parameters are named. */
Test(dctcp, no_echo_no_window_and_bad_parameters) {
  FabCcCfg c = cfg();
  FabCcFlow s = flow(&c);
  ack(&s, &c, 0, 0, 1, 0);
  cr_assert_eq(s.win_bytes, 0);
  FabPkt d = {.type = FAB_PKT_ACK, .sent = 1, .ev = 5, .flags = FAB_PKTF_RETX};
  fab_cc_ops(FAB_CC_DCTCP)->on_ack(&s, &c, &d, 10 * FAB_US);
  cr_assert_eq(s.win_bytes, 0);
  cr_assert_eq(s.u.dctcp.acked, 0);
  c.dctcp.g = 0;
  cr_assert(g_str_has_prefix(fab_cc_cfg_invalid(&c), "g "));
  c = cfg();
  c.dctcp.alpha_init = 1.5;
  cr_assert(g_str_has_prefix(fab_cc_cfg_invalid(&c), "alpha_init"));
}

/* ---- the NIC's window gate, with a fixed window ------------------------------ */

static uint64_t fixed_window;
static void win_init(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now) { s->win_bytes = fixed_window; }
static const FabCcOps win_ops = {.name = "window", .init = win_init, .on_sent = fab_cc_ignore_sent,
                                 .on_cnp = fab_cc_ignore_cnp, .on_timer = fab_cc_no_timer,
                                 .rx_data = fab_cc_no_cnp};

/* NIC 0 sends `pkts` packets of 1000 B to NIC 1 through the Merge under a
** fixed window of `win` bytes, the receiver ACKing every `every`; returns
** when the last byte arrived. */
static fab_time_t windowed(uint64_t win, uint32_t every, uint32_t pkts, uint32_t *ack_wire) {
  Net t = {0};
  for (int i = 0; i < 2; i++) {
    t.cfg[i] = testnet_nic_cfg(G100, 1000, FAB_TRANSPORT_ROCEV2);
    t.cfg[i].ack_interval = every;
  }
  *ack_wire = t.cfg[0].transport.ack_bytes;
  net_init(&t, 2);
  fixed_window = win;
  for (int i = 0; i < 2; i++) t.nic[i].cc = &win_ops;
  net_flow(&t, 0, 0, 1, (uint64_t)pkts * 1000, 0);
  testcc_finish(&t, 1);
  return t.flows[0].end;
}

/* Window 2 packets, ACK each: packets 0 and 1 leave at once; packet k
** arrives (k + 2) PKT + 2 us after it began to leave; the ACK of packet 0
** is back at R = 2 PKT + 2 ACK + 4 us and lets packet 2 go, that of
** packet 1 packet 3 one PKT later, which arrives at R + 3 PKT + 2 us.
** With ACKs every 4 packets the receiver holds back the ACK of up to 3
** it has, so a 2-packet window lets 2 + 3 out: packets 0-4 go at once, the
** ACK of packet 3 is back at t = 5 PKT + 2 ACK + 4 us, packets 5-7 follow
** (packet 7 from t + 2 PKT) and the last arrives at t + 4 PKT + 2 us. */
Test(dctcp, the_nic_holds_a_flow_whose_window_is_full) {
  uint32_t a;
  fab_time_t end = windowed(2000, 1, 4, &a);
  fab_time_t ack = (fab_time_t)a * 80; /* ps at 100 Gbps */
  cr_assert_eq(end, 5 * (fab_time_t)PKT + 2 * ack + 6 * FAB_US, "%" G_GUINT64_FORMAT, end);
  end = windowed(2000, 4, 8, &a);
  cr_assert_eq(end, 9 * (fab_time_t)PKT + 2 * ack + 6 * FAB_US, "%" G_GUINT64_FORMAT, end);
  end = windowed(0, 1, 4, &a);
  cr_assert_eq(end, 5 * (fab_time_t)PKT + 2 * FAB_US, "no window: back to back");
}

/* ---- two flows on one marking port ------------------------------------------- */

/* Marking over K = 40 KB (testcc.h): over [7 ms, 10 ms] each flow carries
** 45-55 % of what crossed the port, together at least 95 % of its payload
** rate (a window keeps the queue, and so the link, busy), and the receiver
** echoed marks. */
Test(dctcp, two_flows_converge_to_fair_share, .timeout = 120) {
  Net t = {0};
  double g0, g1;
  testcc_share(&t, "dctcp", &g0, &g1);
  double share = g0 / (g0 + g1);
  cr_assert(share > 0.45 && share < 0.55, "flow 0 carries %.3f of %.2f Gbps", share, g0 + g1);
  cr_assert(g0 + g1 > 0.95 * TESTCC_PAYLOAD_GBPS, "%.2f Gbps of %.2f", g0 + g1, TESTCC_PAYLOAD_GBPS);
  cr_assert_gt(t.sw.marks, 0);
  cr_assert_eq(t.nic[2].cnps_sent, 0, "DCTCP sends no CNPs");
  testcc_finish(&t, 2);
}

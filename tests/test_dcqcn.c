/* Congestion control in the NIC: pacing, the CC interface, and DCQCN's
** notification and reaction points, on hand-built networks worked out on
** paper. A test element (Merge) stands in for a switch and marks CE. */
#include "testcc.h"
#include "models/dcqcn.h"
#include <math.h>

Test(dcqcn, presets_and_validation) {
  FabDcqcnCfg d;
  cr_assert(fab_dcqcn_preset("dcqcn-paper", &d));
  cr_assert_eq(d.cnp_interval, 50 * FAB_US);
  cr_assert_eq(d.rate_timer, 55 * FAB_US);
  cr_assert_eq(d.byte_counter, 10000000);
  cr_assert_eq(d.fast_recovery, 5);
  cr_assert(d.g == 1.0 / 256);
  cr_assert_null(fab_dcqcn_cfg_invalid(&d));
  cr_assert(fab_dcqcn_preset("dcqcn-mlx", &d));
  cr_assert_eq(d.rate_timer, 300 * FAB_US);
  cr_assert_eq(d.byte_counter, 32767);
  cr_assert(d.alpha_init == 1023.0 / 1024);
  cr_assert_null(fab_dcqcn_cfg_invalid(&d));
  cr_assert_not(fab_dcqcn_preset("dcqcn", &d));
  d.g = 0;
  cr_assert_not_null(fab_dcqcn_cfg_invalid(&d));
  FabCcCfg c;
  cr_assert(fab_cc_preset("none", &c));
  cr_assert_eq(c.kind, FAB_CC_NONE);
  cr_assert_null(fab_cc_ops(FAB_CC_NONE));
  cr_assert(fab_cc_preset("dcqcn-mlx", &c));
  cr_assert_eq(c.kind, FAB_CC_DCQCN);
  cr_assert_not(fab_cc_preset("swift", &c));
  FabNicCfg zero = {0};
  cr_assert_eq(zero.cc.kind, FAB_CC_NONE, "a zeroed FabNicCfg means no congestion control");
}

/* The sender runs no CC (line rate, ignores CNPs); every data packet is
** marked CE. 2000 packets reach NIC 1 at 2 us + (k+2) x PKT; a CNP goes back
** for k = 0 and then for the first k at least 50 us (578 x PKT = 50.03 us)
** later: k = 0, 578, 1156, 1734. */
Test(dcqcn, one_cnp_per_flow_per_cnp_interval) {
  Net t = {0};
  t.cfg[0] = testnet_nic_cfg(G100, 1000, FAB_TRANSPORT_ROCEV2);
  t.cfg[1] = cc_cfg("dcqcn-paper");
  net_init(&t, 2);
  t.sw.mark = mark_all;
  net_flow(&t, 0, 0, 1, 2000 * 1000, 0);
  cr_assert(fab_engine_run(t.eng, FAB_TIME_MAX));
  cr_assert_eq(t.run.done, 1);
  cr_assert_eq(t.sw.marks, 2000);
  cr_assert_eq(t.nic[1].cnps_sent, 4, "cnps %" G_GUINT64_FORMAT, t.nic[1].cnps_sent);
  cr_assert_eq(t.nic[0].cnps_received, 4);
  cr_assert_eq(t.flows[0].end, 2 * FAB_US + 2001 * (fab_time_t)PKT, "a sender without CC ignores CNPs");
  cr_assert_eq(t.nic[1].tx_ctrl_pkts, 2000 + 4, "ACKs and CNPs");
  net_fini(&t);
}

Test(dcqcn, cnp_interval_zero_answers_every_marked_packet) {
  Net t = {0};
  t.cfg[0] = testnet_nic_cfg(G100, 1000, FAB_TRANSPORT_ROCEV2);
  t.cfg[1] = cc_cfg("dcqcn-paper");
  t.cfg[1].cc.dcqcn.cnp_interval = 0;
  net_init(&t, 2);
  t.sw.mark = mark_all;
  net_flow(&t, 0, 0, 1, 100 * 1000, 0);
  cr_assert(fab_engine_run(t.eng, FAB_TIME_MAX));
  cr_assert_eq(t.nic[1].cnps_sent, 100);
  net_fini(&t);
}

/* DCQCN on, nothing marked: packets are ECT and leave exactly as under none. */
Test(dcqcn, unmarked_flow_runs_at_line_rate_with_ect) {
  Net t = {0};
  t.cfg[0] = cc_cfg("dcqcn-mlx");
  t.cfg[1] = cc_cfg("dcqcn-mlx");
  net_init(&t, 2);
  t.sw.mark = mark_over_k;
  t.sw.kbytes = 1; /* anything queued: but nothing queues on an idle path */
  net_flow(&t, 0, 0, 1, 300 * 1000, 0);
  cr_assert(fab_engine_run(t.eng, FAB_TIME_MAX));
  cr_assert_eq(t.flows[0].end, 2 * FAB_US + 301 * (fab_time_t)PKT);
  cr_assert_eq(t.sw.marks, 0);
  cr_assert_eq(t.nic[0].cnps_received, 0);
  cr_assert_eq(fab_flow_rate(&t.flows[0]), G100);
  net_fini(&t);
}

/* Packet 10 is marked. It reaches NIC 1 at 2 us + 12 PKT = 3038720 ps; its
** ACK (6880 ps) and then the CNP leave NIC 1, the CNP ends at 3052480, is
** at the merge at 4052480 (behind the ACK, which ends then), serialised by
** 4059360 and at NIC 0 at 5059360 ps. */
static void one_cnp(const char *preset, uint64_t expect_rate) {
  Net t = {0};
  t.cfg[0] = cc_cfg(preset);
  t.cfg[1] = cc_cfg(preset);
  net_init(&t, 2);
  t.sw.mark = mark_seqs;
  t.sw.seq_a = t.sw.seq_b = 10;
  net_flow(&t, 0, 0, 1, 2000 * 1000, 0);
  cr_assert(fab_engine_run(t.eng, 5059360 - 1));
  cr_assert_eq(t.nic[0].cnps_received, 0);
  cr_assert_eq(fab_flow_rate(&t.flows[0]), G100);
  cr_assert(fab_engine_run(t.eng, 5059360));
  cr_assert_eq(t.nic[0].cnps_received, 1);
  cr_assert_eq(fab_flow_rate(&t.flows[0]), expect_rate, "%s: rate %" G_GUINT64_FORMAT, preset,
               fab_flow_rate(&t.flows[0]));
  cr_assert_eq(t.flows[0].cc.u.dcqcn.rt_bps, G100, "target = the rate before the cut");
  cr_assert(fab_engine_run(t.eng, FAB_TIME_MAX));
  cr_assert_eq(t.run.done, 1);
  cr_assert_eq(t.nic[1].cnps_sent, 1);
  net_fini(&t);
}

Test(dcqcn, one_cnp_cuts_by_half_alpha_paper) { one_cnp("dcqcn-paper", G100 / 2); /* alpha = 1 */ }
Test(dcqcn, one_cnp_cuts_by_half_alpha_mlx) {
  one_cnp("dcqcn-mlx", 50048828125ULL); /* alpha = 1023/1024: 1e11 x (1 - 1023/2048) */
}

/* Packets 10 and 11 marked, every CE answered (cnp_interval 0): CNPs at
** 5059360 and 5145920 ps. alpha stays 1 ((1-g) + g), so RC: 100 -> 50 -> 25
** Gbps, RT = 50 Gbps. Then every 55 us (the byte counter, 10 MB, is far):
** five fast-recovery steps RC = (RT+RC)/2, then additive increase
** RT += 40 Mbps, RC = (RT+RC)/2 (rounded up to the bit/s). */
Test(dcqcn, recovery_fast_then_additive_paper) {
  Net t = {0};
  t.cfg[0] = cc_cfg("dcqcn-paper");
  t.cfg[1] = cc_cfg("dcqcn-paper");
  t.cfg[1].cc.dcqcn.cnp_interval = 0;
  net_init(&t, 2);
  t.sw.mark = mark_seqs;
  t.sw.seq_a = 10;
  t.sw.seq_b = 11;
  net_flow(&t, 0, 0, 1, 6000 * 1000, 0);
  fab_time_t t2 = 5145920;
  cr_assert(fab_engine_run(t.eng, t2));
  FabFlow *f = &t.flows[0];
  cr_assert_eq(t.nic[0].cnps_received, 2);
  cr_assert_eq(f->cc.u.dcqcn.last_cut, t2);
  cr_assert_eq(fab_flow_rate(f), 25000000000ULL);
  cr_assert_eq(f->cc.u.dcqcn.rt_bps, 50000000000ULL);
  static const uint64_t rc[] = {37500000000ULL, 43750000000ULL, 46875000000ULL, 48437500000ULL,
                                49218750000ULL, 49629375000ULL, 49854687500ULL};
  static const uint64_t rt[] = {50000000000ULL, 50000000000ULL, 50000000000ULL, 50000000000ULL,
                                50000000000ULL, 50040000000ULL, 50080000000ULL};
  for (int k = 0; k < 7; k++) {
    fab_time_t at = t2 + (fab_time_t)(k + 1) * 55 * FAB_US;
    cr_assert(fab_engine_run(t.eng, at - 1));
    cr_assert_eq(fab_flow_rate(f), k ? rc[k - 1] : 25000000000ULL, "step %d early", k + 1);
    cr_assert(fab_engine_run(t.eng, at));
    cr_assert_eq(fab_flow_rate(f), rc[k], "step %d: rate %" G_GUINT64_FORMAT, k + 1, fab_flow_rate(f));
    cr_assert_eq(f->cc.u.dcqcn.rt_bps, rt[k], "step %d: target %" G_GUINT64_FORMAT, k + 1, f->cc.u.dcqcn.rt_bps);
  }
  cr_assert_eq(f->cc.u.dcqcn.bc, 0, "the byte counter has not fired");
  cr_assert(fab_engine_run(t.eng, FAB_TIME_MAX));
  cr_assert_eq(t.run.done, 1);
  net_fini(&t);
}

/* The reaction point alone, driven by hand: counters, hyper increase, lazy
** alpha, the floor and the timer stopping at line rate. */
Test(dcqcn, reaction_point_by_hand) {
  FabCcCfg cfg;
  cr_assert(fab_cc_preset("dcqcn-paper", &cfg));
  cfg.dcqcn.byte_counter = 1000;
  const FabCcOps *ops = fab_cc_ops(FAB_CC_DCQCN);
  FabCcFlow s = {.rate_bps = G100, .line_bps = G100, .timer_at = FAB_TIME_MAX};
  ops->init(&s, &cfg, 0);
  cr_assert_eq(s.timer_at, FAB_TIME_MAX, "no timer at line rate");
  ops->on_sent(&s, &cfg, 5000, 0);
  cr_assert_eq(s.u.dcqcn.bc, 0, "no byte counting at line rate");
  ops->on_cnp(&s, &cfg, 0);
  ops->on_cnp(&s, &cfg, 1);
  cr_assert_eq(s.rate_bps, 25000000000ULL);
  cr_assert_eq(s.u.dcqcn.rt_bps, 50000000000ULL);
  cr_assert_eq(s.timer_at, 1 + 55 * FAB_US);
  /* replay the law alongside */
  uint64_t rc = s.rate_bps, rtt = s.u.dcqcn.rt_bps;
  uint32_t T = 0, BC = 0;
#define STEP()                                                                          \
  do {                                                                                  \
    uint32_t hi = T > BC ? T : BC, lo = T < BC ? T : BC;                                \
    if (hi > 5) rtt += lo > 5 ? (uint64_t)(lo - 5) * 400000000ULL : 40000000ULL;      \
    rc = (rtt + rc + 1) / 2;                                                            \
  } while (0)
  for (int i = 0; i < 6; i++) { /* BC 1..6: five fast recovery, one additive */
    ops->on_sent(&s, &cfg, 1000, 2);
    BC++;
    STEP();
  }
  cr_assert_eq(s.u.dcqcn.rt_bps, 50040000000ULL);
  fab_time_t now = 1;
  for (int i = 0; i < 7; i++) { /* T 1..5 additive, T 6 hyper (i = 1), T 7 hyper (i = 1: BC is 6) */
    now += 55 * FAB_US;
    cr_assert_eq(s.timer_at, now);
    ops->on_timer(&s, &cfg, now);
    T++;
    STEP();
    cr_assert_eq(s.rate_bps, rc, "timer step %d", i + 1);
    cr_assert_eq(s.u.dcqcn.rt_bps, rtt, "timer step %d", i + 1);
  }
  ops->on_sent(&s, &cfg, 1000, now); /* BC 7: hyper with i = min(7, 7) - 5 = 2 */
  BC++;
  STEP();
  cr_assert_eq(s.u.dcqcn.rt_bps, 50000000000ULL + 6 * 40000000ULL + 400000000ULL + 400000000ULL + 800000000ULL);
  cr_assert_eq(s.rate_bps, rc);
#undef STEP
  /* alpha: 1 after the cuts, then (255/256)^n after n quiet alpha periods */
  cr_assert(fab_dcqcn_alpha(&s.u.dcqcn, &cfg.dcqcn, 1 + 55 * FAB_US - 1) == 1.0);
  double a10 = fab_dcqcn_alpha(&s.u.dcqcn, &cfg.dcqcn, 1 + 10 * 55 * FAB_US);
  cr_assert_float_eq(a10, pow(255.0 / 256, 10), 1e-15);
  /* many cuts: never below min_rate */
  for (int i = 0; i < 200; i++) ops->on_cnp(&s, &cfg, now + (fab_time_t)i);
  cr_assert_eq(s.rate_bps, cfg.dcqcn.min_rate_bps);
  /* recovery ends at line rate and the timer stops */
  int steps = 0;
  while (s.timer_at != FAB_TIME_MAX && steps < 100000) {
    ops->on_timer(&s, &cfg, s.timer_at);
    steps++;
  }
  cr_assert_eq(s.rate_bps, G100, "back at line rate after %d steps", steps);
  cr_assert_eq(s.u.dcqcn.rt_bps, G100);
  cr_assert_not(s.u.dcqcn.limited);
}

/* The mlx preset: at most one cut per rate_reduce_period (4 us). */
Test(dcqcn, mlx_cuts_at_most_once_per_monitor_period) {
  FabCcCfg cfg;
  cr_assert(fab_cc_preset("dcqcn-mlx", &cfg));
  const FabCcOps *ops = fab_cc_ops(FAB_CC_DCQCN);
  FabCcFlow s = {.rate_bps = G100, .line_bps = G100, .timer_at = FAB_TIME_MAX};
  ops->init(&s, &cfg, 0);
  ops->on_cnp(&s, &cfg, 10 * FAB_US);
  uint64_t r1 = s.rate_bps;
  ops->on_cnp(&s, &cfg, 12 * FAB_US);
  cr_assert_eq(s.rate_bps, r1, "within 4 us of the last cut");
  ops->on_cnp(&s, &cfg, 14 * FAB_US);
  cr_assert_lt(s.rate_bps, r1);
}

/* A CC plugged in from outside (the interface): a fixed half line rate. */
static void half_init(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now) { s->rate_bps = s->line_bps / 2; }
static void half_sent(FabCcFlow *s, const FabCcCfg *cfg, uint32_t wire, fab_time_t now) {}
static void half_cnp(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now) {}
static void half_timer(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now) {}
static bool half_rx(fab_time_t *next, const FabCcCfg *cfg, const FabPkt *p, fab_time_t now) { return false; }
static const FabCcOps half_ops = {.name = "half", .init = half_init, .on_sent = half_sent, .on_cnp = half_cnp,
                                  .on_timer = half_timer, .rx_data = half_rx};

typedef struct Pair {
  FabEngine *eng;
  FabNicCfg cfg;
  FabNic nic[2];
  FabFlow flows[2];
  TestRun run;
} Pair;

static void pair_init(Pair *p, const FabCcOps *sender_cc) {
  memset(p, 0, sizeof *p);
  p->eng = testnet_engine(1);
  p->cfg = testnet_nic_cfg(G100, 1000, FAB_TRANSPORT_ROCEV2);
  for (uint32_t i = 0; i < 2; i++) testnet_nic(&p->nic[i], i, &p->cfg, p->flows, &p->run, FAB_US);
  p->nic[0].cc = sender_cc;
  fab_port_connect(&p->nic[0].port, &p->nic[1].port);
}

/* 100 packets of 1082 wire bytes. At line rate: back to back, the last bit
** at 100 PKT + 1 us. At half rate: one packet every 2 PKT, the last one
** handed to the port at 99 x 2 PKT, so its last bit arrives at 199 PKT + 1 us:
** the serialisation span doubles less one packet. */
Test(dcqcn, pacing_half_rate_takes_twice_as_long) {
  Pair p;
  pair_init(&p, NULL);
  p.flows[0] = testnet_flow(0, 0, 1, 100 * 1000, 0, &p.cfg);
  fab_nic_post(p.eng, &p.nic[0], &p.flows[0]);
  cr_assert(fab_engine_run(p.eng, FAB_TIME_MAX));
  cr_assert_eq(p.flows[0].end, 100 * (fab_time_t)PKT + FAB_US);
  uint64_t line_events = p.eng->events;
  fab_engine_free(p.eng);

  pair_init(&p, &half_ops);
  p.flows[0] = testnet_flow(0, 0, 1, 100 * 1000, 0, &p.cfg);
  fab_nic_post(p.eng, &p.nic[0], &p.flows[0]);
  cr_assert(fab_engine_run(p.eng, FAB_TIME_MAX));
  cr_assert_eq(fab_flow_rate(&p.flows[0]), G100 / 2);
  cr_assert_eq(p.flows[0].end, 199 * (fab_time_t)PKT + FAB_US, "end %" G_GUINT64_FORMAT, p.flows[0].end);
  cr_assert_eq(p.eng->events, line_events + 99, "one pacing wake per gap, nothing more");
  cr_assert_eq(fab_pool_live(p.eng->pool), 0);
  fab_engine_free(p.eng);
}

/* Two flows at half rate fill the link between them with no pacing wake:
** each is eligible again exactly when the other's packet is serialised. */
Test(dcqcn, two_half_rate_flows_fill_the_link) {
  Pair p;
  pair_init(&p, &half_ops);
  p.flows[0] = testnet_flow(0, 0, 1, 100 * 1000, 0, &p.cfg);
  p.flows[1] = testnet_flow(1, 0, 1, 100 * 1000, 0, &p.cfg);
  fab_nic_post(p.eng, &p.nic[0], &p.flows[0]);
  fab_nic_post(p.eng, &p.nic[0], &p.flows[1]);
  cr_assert(fab_engine_run(p.eng, FAB_TIME_MAX));
  cr_assert_eq(p.flows[0].end, 199 * (fab_time_t)PKT + FAB_US);
  cr_assert_eq(p.flows[1].end, 200 * (fab_time_t)PKT + FAB_US);
  cr_assert_eq(p.nic[0].pace_at, FAB_TIME_MAX);
  cr_assert_eq(fab_pool_live(p.eng->pool), 0);
  fab_engine_free(p.eng);
}

/* Two senders share a 100 Gbps port marking over 40 KB (testcc.h): over
** [7 ms, 10 ms] each carries 45-55 % of what crossed it, together at least
** 85 % of its payload rate (DCQCN's cuts leave the link somewhat idle), and
** CNPs went back. */
static void fairness(const char *preset) {
  Net t = {0};
  double g0, g1;
  testcc_share(&t, preset, &g0, &g1);
  double share = g0 / (g0 + g1);
  cr_assert(share > 0.45 && share < 0.55, "%s: flow 0 carries %.3f of %.2f Gbps", preset, share, g0 + g1);
  cr_assert(g0 + g1 > 0.85 * TESTCC_PAYLOAD_GBPS, "%s: %.2f Gbps of %.2f", preset, g0 + g1, TESTCC_PAYLOAD_GBPS);
  cr_assert_gt(t.nic[2].cnps_sent, 0);
  testcc_finish(&t, 2);
}

Test(dcqcn, two_flows_converge_to_fair_share_paper, .timeout = 120) { fairness("dcqcn-paper"); }
Test(dcqcn, two_flows_converge_to_fair_share_mlx, .timeout = 120) { fairness("dcqcn-mlx"); }

/* TIMELY's rate (models/timely.h): its handlers on RTT samples chosen by
** hand, worked out on paper, and two flows sharing one port (testcc.h). */
#include "testcc.h"
#include "models/timely.h"
#include <math.h>

static FabCcCfg cfg(void) {
  FabCcCfg c;
  cr_assert(fab_cc_preset("timely", &c));
  cr_assert_eq(c.kind, FAB_CC_TIMELY);
  cr_assert_null(fab_cc_cfg_invalid(&c));
  return c;
}

static fab_time_t clock_ps; /* the tests' time, moved on by each sample */

/* One RTT sample of `rtt` us: the ACK that completes the next segment. */
static void sample(FabCcFlow *s, const FabCcCfg *c, double rtt_us) {
  uint64_t next = s->u.timely.next_done;
  clock_ps += FAB_US;
  fab_time_t sent = clock_ps;
  clock_ps += (fab_time_t)(rtt_us * FAB_US);
  FabPkt a = {.type = FAB_PKT_ACK, .sent = sent, .seq = (uint32_t)((next + s->mss - 1) / s->mss)};
  fab_cc_ops(FAB_CC_TIMELY)->on_ack(s, c, &a, clock_ps);
  cr_assert_gt(s->u.timely.next_done, next, "a sample");
}

#define NEAR(A, B) cr_assert(fabs((double)(A) - (double)(B)) <= 2, "%.0f, not %.0f", (double)(A), (double)(B))

/* The first sample only sets prev_rtt. Within [t_low, t_high] a flat RTT
** is a zero gradient: + delta (line / 1000 = 100 Mb/s) each time, 5 x delta
** from the 5th in a row (HAI). A rise of 100 us: rtt_diff = 0.02 x 100 =
** 2 us, gradient 2 / 20 = 0.1, rate x (1 - 0.8 x 0.1). Below t_low (50 us):
** + delta whatever the gradient. Above t_high (500 us), at 1000 us: rate x
** (1 - 0.8 (1 - 500 / 1000)) = x 0.6. */
Test(timely, the_rate_follows_the_rtt_gradient_and_the_two_thresholds) {
  FabCcCfg c = cfg();
  FabCcFlow s = {.rate_bps = G100, .line_bps = G100, .timer_at = FAB_TIME_MAX, .mss = 1000};
  clock_ps = 0;
  fab_cc_ops(FAB_CC_TIMELY)->init(&s, &c, 0);
  sample(&s, &c, 100);
  cr_assert_eq(s.u.timely.prev_rtt, 100 * FAB_US);
  cr_assert_eq(s.rate_bps, G100, "the first sample only sets prev_rtt");
  s.rate_bps = 50000000000ull;
  double r = 50e9;
  for (int k = 1; k <= 6; k++) {
    sample(&s, &c, 100);
    r += k >= 5 ? 500e6 : 100e6;
    NEAR(s.rate_bps, r);
  }
  sample(&s, &c, 200);
  r *= 1 - 0.8 * 0.1;
  NEAR(s.rate_bps, r);
  cr_assert_eq(s.u.timely.negatives, 0);
  sample(&s, &c, 40); /* rtt_diff = 0.98 x 2 + 0.02 x (-160) < 0, but below t_low */
  cr_assert(fabs(s.u.timely.rtt_diff - (0.98 * 2e6 - 0.02 * 160e6)) < 1e-3);
  r += 100e6;
  NEAR(s.rate_bps, r);
  sample(&s, &c, 1000);
  r *= 0.6;
  NEAR(s.rate_bps, r);
  for (int k = 0; k < 40; k++) sample(&s, &c, 5000);
  cr_assert_eq(s.rate_bps, c.timely.min_rate_bps, "never below min_rate");
  cr_assert_eq(s.timer_at, FAB_TIME_MAX, "no timers");
}

/* A sample is the ACK whose cumulative acknowledgement covers the next
** multiple of sample_bytes (16384): with 1000 B packets, the first ACK
** primes prev_rtt (30 us) and asks for 16384 B; an ACK of 10 packets is no
** sample, one of 17 is (60 us), and asks for 32768 B; a D-SACK never is. */
Test(timely, one_sample_per_segment_acknowledged) {
  FabCcCfg c = cfg();
  const FabCcOps *o = fab_cc_ops(FAB_CC_TIMELY);
  FabCcFlow s = {.rate_bps = G100, .line_bps = G100, .timer_at = FAB_TIME_MAX, .mss = 1000};
  o->init(&s, &c, 0);
  FabPkt a = {.type = FAB_PKT_ACK, .sent = 1 * FAB_US, .seq = 1};
  o->on_ack(&s, &c, &a, 31 * FAB_US);
  cr_assert_eq(s.u.timely.prev_rtt, 30 * FAB_US);
  cr_assert_eq(s.u.timely.next_done, 16384);
  a = (FabPkt){.type = FAB_PKT_ACK, .sent = 2 * FAB_US, .seq = 10};
  o->on_ack(&s, &c, &a, 40 * FAB_US);
  cr_assert_eq(s.u.timely.prev_rtt, 30 * FAB_US, "10000 B: no segment completed");
  a = (FabPkt){.type = FAB_PKT_ACK, .sent = 10 * FAB_US, .seq = 40, .flags = FAB_PKTF_RETX};
  o->on_ack(&s, &c, &a, 70 * FAB_US);
  cr_assert_eq(s.u.timely.prev_rtt, 30 * FAB_US, "a D-SACK is no sample");
  a.flags = 0;
  a.seq = 17;
  o->on_ack(&s, &c, &a, 70 * FAB_US);
  cr_assert_eq(s.u.timely.prev_rtt, 60 * FAB_US);
  cr_assert_eq(s.u.timely.next_done, 32768);
  c.timely.t_low = c.timely.t_high;
  cr_assert(g_str_has_prefix(fab_cc_cfg_invalid(&c), "t_low"));
  c = cfg();
  c.timely.alpha = 0;
  cr_assert(g_str_has_prefix(fab_cc_cfg_invalid(&c), "alpha"));
}

/* The bytes a 100 Gbps port drains in t_high (500 us): a queue that deep delays a packet by t_high. */
static uint64_t c_t_high_bytes(void) { return cfg().timely.t_high / 80; }

/* Two flows on one port with no marking (TIMELY reads delay only).
** TIMELY promises no exact fair share (its gradient rule has many fixed
** points: Zhu et al., "ECN or Delay", CoNEXT 2016), so the share is held to
** 30-70 %; measured here 39.30 and 39.47 Gbps over [7 ms, 10 ms], 85 % of
** the port's payload rate (held to 80 %: the 100 Mb/s steps after each cut
** leave it short of full), and the queue never deeper than t_high's worth
** (measured 1.55 MB, 124 us). */
Test(timely, two_flows_share_the_port_and_keep_its_queue_under_t_high, .timeout = 120) {
  Net t = {0};
  double g0, g1;
  testcc_share(&t, "timely", &g0, &g1);
  uint64_t qmax = t.sw.port[2].max_qbytes, t_high = c_t_high_bytes();
  cr_log_info("timely: %.2f + %.2f Gbps, deepest queue %" G_GUINT64_FORMAT " B", g0, g1, qmax);
  cr_assert_lt(qmax, t_high, "%" G_GUINT64_FORMAT " B: t_high's worth is %" G_GUINT64_FORMAT " B", qmax, t_high);
  cr_assert(g0 + g1 > 0.8 * TESTCC_PAYLOAD_GBPS, "%.2f Gbps of %.2f", g0 + g1, TESTCC_PAYLOAD_GBPS);
  double share = g0 / (g0 + g1);
  cr_assert(share > 0.3 && share < 0.7, "flow 0 carries %.3f of %.2f Gbps", share, g0 + g1);
  cr_assert_eq(t.sw.marks, 0, "TIMELY's packets are not ECN-capable");
  testcc_finish(&t, 2);
}

/* The delay-based rate control (models/delaycc.h): its handlers on ACKs
** whose echoed send times give RTTs chosen by hand, worked out on paper. */
#include <criterion/criterion.h>
#include "models/cc.h"

#define G100 100000000000ULL

static FabCcCfg cfg(void) {
  FabCcCfg c;
  cr_assert(fab_cc_preset("delay", &c));
  cr_assert_eq(c.kind, FAB_CC_DELAY);
  cr_assert_null(fab_cc_cfg_invalid(&c));
  return c;
}

/* A flow at `rate` of a 100 Gb/s line, started at 0. */
static FabCcFlow flow(const FabCcCfg *c, uint64_t rate) {
  FabCcFlow s = {.rate_bps = rate, .line_bps = G100, .timer_at = FAB_TIME_MAX};
  fab_cc_ops(FAB_CC_DELAY)->init(&s, c, 0);
  s.rate_bps = rate;
  return s;
}

/* The ACK of a packet sent at `sent`, arriving at `now`. */
static void ack(FabCcFlow *s, const FabCcCfg *c, fab_time_t sent, fab_time_t now) {
  FabPkt a = {.type = FAB_PKT_ACK, .sent = sent};
  fab_cc_ops(FAB_CC_DELAY)->on_ack(s, c, &a, now);
}

/* The lowest RTT is the base; within base + target (10 us) the rate rises
** by 5 % of line rate, once per RTT, up to line rate. */
Test(delaycc, below_the_target_the_rate_rises_once_per_rtt) {
  FabCcCfg c = cfg();
  FabCcFlow s = flow(&c, G100 / 2);
  ack(&s, &c, 1 * FAB_US, 5 * FAB_US); /* base 4 us */
  cr_assert_eq(s.u.delay.base, 4 * FAB_US);
  cr_assert_eq(s.rate_bps, 55000000000ull);
  ack(&s, &c, 2 * FAB_US, 7 * FAB_US); /* 5 us, within target; only 2 us since the last rise < rtt */
  cr_assert_eq(s.rate_bps, 55000000000ull);
  ack(&s, &c, 6 * FAB_US, 15 * FAB_US); /* 9 us, 10 us since the rise >= rtt */
  cr_assert_eq(s.rate_bps, 60000000000ull);
  s.rate_bps = G100 - 1;
  ack(&s, &c, 20 * FAB_US, 24 * FAB_US);
  cr_assert_eq(s.rate_bps, G100, "never above line rate");
  cr_assert_eq(s.timer_at, FAB_TIME_MAX, "no timers");
}

/* Above base + target the rate falls by beta (rtt - base - target) / rtt,
** at most max_mdf, once per RTT: base 4 us, an RTT of 24 us is 10 us over,
** 0.8 x 10 / 24 = 1/3; an RTT of 400 us would cut 0.8 x 386/400 > 0.5,
** so max_mdf's half. */
Test(delaycc, above_the_target_the_rate_falls_in_proportion_once_per_rtt) {
  FabCcCfg c = cfg();
  FabCcFlow s = flow(&c, G100);
  ack(&s, &c, 1 * FAB_US, 5 * FAB_US);
  ack(&s, &c, 10 * FAB_US, 34 * FAB_US);
  cr_assert_eq(s.rate_bps, (uint64_t)(G100 * (1 - 0.8 * 10 / 24.0)));
  uint64_t r = s.rate_bps;
  ack(&s, &c, 20 * FAB_US, 44 * FAB_US); /* 10 us after the cut < 24 us */
  cr_assert_eq(s.rate_bps, r);
  ack(&s, &c, 100 * FAB_US, 500 * FAB_US);
  cr_assert_eq(s.rate_bps, r / 2);
  for (int k = 0; k < 40; k++) ack(&s, &c, (fab_time_t)(1000 + 1000 * k) * FAB_US, (fab_time_t)(1400 + 1000 * k) * FAB_US);
  cr_assert_eq(s.rate_bps, c.delay.min_rate_bps, "never below min_rate");
}

/* An ACK that echoes no send time is no sample; bad parameters are named. */
Test(delaycc, no_echo_no_sample_and_bad_parameters) {
  FabCcCfg c = cfg();
  FabCcFlow s = flow(&c, G100 / 2);
  ack(&s, &c, 0, 0);
  cr_assert_eq(s.u.delay.base, 0);
  cr_assert_eq(s.rate_bps, G100 / 2);
  c.delay.ai = 0;
  cr_assert(g_str_has_prefix(fab_cc_cfg_invalid(&c), "additive_increase"));
  c = cfg();
  c.delay.max_mdf = 1;
  cr_assert(g_str_has_prefix(fab_cc_cfg_invalid(&c), "max_mdf"));
  c = cfg();
  c.delay.beta = 0;
  cr_assert(g_str_has_prefix(fab_cc_cfg_invalid(&c), "beta"));
}

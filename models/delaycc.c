/* Delay-based rate control. See delaycc.h. */
#include "delaycc.h"
#include "cc.h"

FabDelayCfg fab_delay_defaults(void) {
  return (FabDelayCfg){
      .target = 10 * FAB_US,         /* ASSUMPTION: 10 us of queueing (125 KB at 100 Gb/s) */
      .ai = 0.05,                    /* ASSUMPTION: half rate back to line rate in 10 RTTs */
      .beta = 0.8,                   /* csg-htsim sim/swift.cpp _beta (marked a guess there) */
      .max_mdf = 0.5,                /* csg-htsim sim/swift.cpp _max_mdf (marked a guess there) */
      .min_rate_bps = 100000000ull,  /* ASSUMPTION: 100 Mb/s */
  };
}

const char *fab_delay_cfg_invalid(const FabDelayCfg *c) {
  if (!(c->ai > 0 && c->ai <= 1)) return "additive_increase must be in (0, 1] (a fraction of line rate per RTT)";
  if (!(c->beta > 0 && c->beta <= 1)) return "beta must be in (0, 1]";
  if (!(c->max_mdf > 0 && c->max_mdf < 1)) return "max_mdf must be in (0, 1)";
  if (c->min_rate_bps == 0) return "min_rate must be above 0";
  return NULL;
}

static void delay_init(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now) {
  (void)cfg;
  (void)now;
  s->u.delay = (FabDelayFlow){0};
}

static void delay_on_ack(FabCcFlow *s, const FabCcCfg *cfg, const FabPkt *ack, fab_time_t now) {
  const FabDelayCfg *c = &cfg->delay;
  FabDelayFlow *d = &s->u.delay;
  if (ack->sent == 0 || ack->sent >= now) return; /* no echo: no sample */
  fab_time_t rtt = now - ack->sent;
  if (!d->base || rtt < d->base) d->base = rtt;
  if (rtt <= d->base + c->target) {
    if (s->rate_bps < s->line_bps && now - d->last_up >= rtt) {
      uint64_t up = (uint64_t)(c->ai * (double)s->line_bps);
      s->rate_bps = MIN(s->line_bps, s->rate_bps + MAX(up, 1u));
      d->last_up = now;
    }
    return;
  }
  if (d->last_down && now - d->last_down < rtt) return;
  double cut = c->beta * (double)(rtt - d->base - c->target) / (double)rtt;
  double keep = MAX(1 - cut, 1 - c->max_mdf);
  s->rate_bps = MAX(c->min_rate_bps, (uint64_t)((double)s->rate_bps * keep));
  d->last_down = now;
}

const FabCcOps fab_cc_delay_ops = {
    .name = "delay",
    .tx_flags = 0,
    .init = delay_init,
    .on_sent = fab_cc_ignore_sent,
    .on_cnp = fab_cc_ignore_cnp,
    .on_ack = delay_on_ack,
    .on_timer = fab_cc_no_timer,
    .rx_data = fab_cc_no_cnp,
};

/* TIMELY's rate. See timely.h. */
#include "timely.h"
#include "cc.h"

FabTimelyCfg fab_timely_defaults(void) {
  return (FabTimelyCfg){
      /* the paper's section 6 settings: 16 KB segments, T_low 50 us, T_high 500 us, additive step 10 Mb/s (on
      ** 10 Gb/s NICs), beta 0.8 */
      .t_low = 50 * FAB_US,
      .t_high = 500 * FAB_US,
      .delta_bps = 0,                /* line rate / 1000: the paper's 10 Mb/s at 10 Gb/s, scaled with the line as
                                     ** HPCC's ns-3 scripts scale it (alibaba-edu/High-Precision-Congestion-Control,
                                     ** simulation/run.py: ai = 10 * bw / 10 Mb/s) */
      .beta = 0.8,
      .segment = 16384,
      /* the EWMA weight of a new RTT difference: the TIMELY author's code snippet's recommended ewma_alpha
      ** (timely-code-snippet.cc, as published at nan01ab.github.io/2018/11/TIMELY.html); HPCC's ns-3 model of
      ** TIMELY weighs it 0.875 instead (alibaba-edu/High-Precision-Congestion-Control,
      ** simulation/src/point-to-point/model/rdma-hw.cc, TimelyAlpha): a parameter (README). The gradient's
      ** normaliser as that model sets it (TimelyMinRtt 20 us). */
      .alpha = 0.02,
      .min_rtt = 20 * FAB_US,
      .hai_after = 5,                /* the paper's Algorithm 1, HAI after N = 5 (erpc-io/eRPC src/cc/timely.h:
                                     ** kTimelyHaiThresh) */
      .min_rate_bps = 100000000ull,  /* ASSUMPTION: 100 Mb/s, as the delay algorithm */
  };
}

const char *fab_timely_cfg_invalid(const FabTimelyCfg *c) {
  if (!(c->t_low < c->t_high)) return "t_low must be below t_high";
  if (!(c->beta > 0 && c->beta <= 1)) return "beta must be in (0, 1]";
  if (!(c->alpha > 0 && c->alpha <= 1)) return "alpha must be in (0, 1]";
  if (c->min_rtt == 0) return "min_rtt must be above 0";
  if (c->hai_after == 0) return "hai_after must be at least 1";
  if (c->segment == 0) return "segment must be above 0";
  if (c->min_rate_bps == 0) return "min_rate must be above 0";
  return NULL;
}

static void timely_init(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now) {
  (void)cfg, (void)now;
  s->u.timely = (FabTimelyFlow){0}; /* the first ACK gives prev_rtt */
}

static void timely_on_ack(FabCcFlow *s, const FabCcCfg *cfg, const FabPkt *ack, fab_time_t now) {
  const FabTimelyCfg *c = &cfg->timely;
  FabTimelyFlow *t = &s->u.timely;
  uint64_t done = (uint64_t)ack->seq * s->mss; /* acknowledged, cumulatively */
  if (!ack->sent || ack->sent >= now || (ack->flags & FAB_PKTF_RETX) || done < t->next_done) return;
  t->next_done = (done / c->segment + 1) * c->segment; /* a segment completed: the next one's end */
  fab_time_t rtt = now - ack->sent;
  if (!t->prev_rtt) {
    t->prev_rtt = rtt;
    return;
  }
  double diff = (double)rtt - (double)t->prev_rtt;
  t->prev_rtt = rtt;
  t->rtt_diff = (1 - c->alpha) * t->rtt_diff + c->alpha * diff;
  double gradient = t->rtt_diff / (double)c->min_rtt, rate = (double)s->rate_bps;
  double delta = c->delta_bps ? (double)c->delta_bps : (double)s->line_bps / 1000;
  if (rtt < c->t_low) {
    rate += delta;
  } else if (rtt > c->t_high) {
    rate *= 1 - c->beta * (1 - (double)c->t_high / (double)rtt);
  } else if (gradient <= 0) {
    t->negatives++;
    rate += delta * (t->negatives >= c->hai_after ? c->hai_after : 1);
  } else {
    t->negatives = 0;
    rate *= 1 - c->beta * gradient;
  }
  if (rate < (double)c->min_rate_bps) rate = (double)c->min_rate_bps;
  s->rate_bps = rate >= (double)s->line_bps ? s->line_bps : (uint64_t)rate;
}

const FabCcOps fab_cc_timely_ops = {
    .name = "timely",
    .tx_flags = 0,
    .echo = FAB_CC_ECHO_NONE,
    .init = timely_init,
    .on_sent = fab_cc_ignore_sent,
    .on_cnp = fab_cc_ignore_cnp,
    .on_ack = timely_on_ack,
    .on_timer = fab_cc_no_timer,
    .rx_data = fab_cc_no_cnp,
};

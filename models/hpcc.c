/* HPCC's rate and window, and its switches' telemetry. See hpcc.h. */
#include "hpcc.h"
#include "cc.h"

FabHpccCfg fab_hpcc_defaults(void) {
  return (FabHpccCfg){
      .eta = 0.95,                   /* the paper's eta; alibaba-edu/High-Precision-Congestion-Control,
                                     ** simulation/mix/config_doc.txt: U_TARGET 0.95 */
      .max_stage = 0,                /* the authors' simulations (hpcc-group.github.io results.md: the paper's 5
                                     ** is a typo; simulation/run.py --mi default 0) */
      .rai_bps = 0,                  /* line rate / 2500: simulation/run.py, ai = 10 * bw / 25 Mb/s (40 Mb/s
                                     ** at 100 Gb/s) */
      .base_rtt = 0,
      .min_rate_bps = 100000000ull,  /* 100 Mb/s: rdma-hw.cc's MinRate default, simulation/mix/config.txt */
  };
}

const char *fab_hpcc_cfg_invalid(const FabHpccCfg *c) {
  if (!(c->eta > 0 && c->eta <= 1)) return "eta must be in (0, 1]";
  if (c->max_stage > 1000) return "max_stage must be at most 1000";
  if (c->min_rate_bps == 0) return "min_rate must be above 0";
  return NULL;
}

uint16_t fab_hpcc_stamp(FabHpccPort *pt, uint64_t bps, uint64_t qlen, uint32_t bytes, fab_time_t base_rtt,
                        fab_time_t now, uint16_t v) {
  double T = (double)base_rtt / FAB_S, B = (double)bps / 8; /* s, bytes/s */
  fab_time_t gap = pt->last_bytes ? now - pt->last : base_rtt;
  double dt = (double)MIN(gap, base_rtt) / FAB_S;
  pt->u = (T - dt) / T * pt->u + (double)qlen * dt / (B * T * T) + (double)pt->last_bytes / (B * T);
  pt->last = now;
  pt->last_bytes = bytes;
  double enc = pt->u * FAB_HPCC_U_ONE + 0.5;
  uint16_t mine = enc >= 65535 ? 65535 : (uint16_t)enc;
  return mine > v ? mine : v;
}

static void hpcc_init(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now) {
  s->u.hpcc = (FabHpccFlow){.rate_c = s->line_bps, .last_update = now};
  s->win_bytes = (uint64_t)((double)s->line_bps / 8 * ((double)cfg->hpcc.base_rtt / FAB_S));
}

static void hpcc_on_ack(FabCcFlow *s, const FabCcCfg *cfg, const FabPkt *ack, fab_time_t now) {
  const FabHpccCfg *c = &cfg->hpcc;
  FabHpccFlow *h = &s->u.hpcc;
  if (ack->flags & FAB_PKTF_RETX) return; /* a D-SACK: no telemetry */
  bool update = ack->sent >= h->last_update; /* a packet sent since the last update: an RTT has passed */
  double U = ack->mark_ev / FAB_HPCC_U_ONE, k = U / c->eta;
  double rai = c->rai_bps ? (double)c->rai_bps : (double)s->line_bps / 2500, rate;
  if (k >= 1 || h->stage >= c->max_stage) {
    rate = k > 0 ? (double)h->rate_c / k + rai : (double)s->line_bps;
    if (update) h->stage = 0;
  } else {
    rate = (double)h->rate_c + rai;
    if (update) h->stage++;
  }
  if (rate > (double)s->line_bps) rate = (double)s->line_bps;
  if (rate < (double)c->min_rate_bps) rate = (double)c->min_rate_bps;
  s->rate_bps = (uint64_t)rate;
  if (update) {
    h->rate_c = s->rate_bps;
    h->last_update = now;
  }
  s->win_bytes = MAX((uint64_t)(rate / 8 * ((double)c->base_rtt / FAB_S)), 1u);
}

const FabCcOps fab_cc_hpcc_ops = {
    .name = "hpcc",
    .tx_flags = 0,
    .echo = FAB_CC_ECHO_INT,
    .init = hpcc_init,
    .on_sent = fab_cc_ignore_sent,
    .on_cnp = fab_cc_ignore_cnp,
    .on_ack = hpcc_on_ack,
    .on_timer = fab_cc_no_timer,
    .rx_data = fab_cc_no_cnp,
};

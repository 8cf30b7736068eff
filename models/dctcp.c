/* DCTCP's window. See dctcp.h. */
#include "dctcp.h"
#include "cc.h"

/* The window never falls below two packets (Linux's dctcp_ssthresh floor, net/ipv4/tcp_dctcp.c). */
#define DCTCP_MIN_PKTS 2

FabDctcpCfg fab_dctcp_defaults(void) { return (FabDctcpCfg){.g = 1.0 / 16, .alpha_init = 1.0}; }

const char *fab_dctcp_cfg_invalid(const FabDctcpCfg *c) {
  if (!(c->g > 0 && c->g <= 1)) return "g must be in (0, 1]";
  if (!(c->alpha_init >= 0 && c->alpha_init <= 1)) return "alpha_init must be in [0, 1]";
  return NULL;
}

static void dctcp_init(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now) {
  s->u.dctcp = (FabDctcpFlow){.alpha = cfg->dctcp.alpha_init, .win_start = now}; /* win_bytes 0: open */
}

static void dctcp_on_ack(FabCcFlow *s, const FabCcCfg *cfg, const FabPkt *ack, fab_time_t now) {
  FabDctcpFlow *d = &s->u.dctcp;
  if (ack->flags & FAB_PKTF_RETX) return; /* a D-SACK: no counts */
  if (!d->win) { /* the first answer: the window is what line rate put out in its round trip */
    if (!ack->sent || ack->sent >= now) return;
    d->win = (double)s->line_bps / 8 * ((double)(now - ack->sent) / FAB_S);
  }
  uint32_t n = ack->ev, m = MIN(ack->mark_ev, ack->ev);
  double mss = s->mss, floor = DCTCP_MIN_PKTS * mss;
  d->acked += n;
  d->marked += m;
  if (ack->sent >= d->win_start && d->acked) { /* a window of data is over: alpha learns its fraction */
    double f = (double)d->marked / d->acked, g = cfg->dctcp.g;
    d->alpha = (1 - g) * d->alpha + g * f;
    d->acked = d->marked = 0;
    d->win_start = now;
  }
  if (m) {
    if (ack->sent > d->last_cut) {
      d->win = MAX(floor, d->win * (1 - d->alpha / 2));
      d->last_cut = now;
    }
  } else if (n) {
    d->win += mss * mss * n / d->win;
  }
  s->win_bytes = MAX((uint64_t)d->win, 1u);
}

const FabCcOps fab_cc_dctcp_ops = {
    .name = "dctcp",
    .tx_flags = FAB_PKTF_ECT,
    .echo = FAB_CC_ECHO_CE,
    .init = dctcp_init,
    .on_sent = fab_cc_ignore_sent,
    .on_cnp = fab_cc_ignore_cnp,
    .on_ack = dctcp_on_ack,
    .on_timer = fab_cc_no_timer,
    .rx_data = fab_cc_no_cnp,
};

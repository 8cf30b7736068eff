/* DCQCN notification and reaction points. See dcqcn.h.
**
** Rates are integer bits/s; alpha is a double (the only floating point, and
** never in event times). Alpha decays lazily: the K-timer decays that would
** have happened since alpha_at are applied when alpha is next needed, so a
** flow costs no alpha events. The rate timer is one event per flow per
** `rate_timer` while the flow is below line rate (the NIC keeps it). */
#include "dcqcn.h"
#include "cc.h"
#include <math.h>
#include <string.h>

#define MBPS 1000000ULL
#define GBPS 1000000000ULL

gboolean fab_dcqcn_preset(const char *name, FabDcqcnCfg *out) {
  if (strcmp(name, "dcqcn-paper") == 0) {
    /* Zhu et al., SIGCOMM 2015 (doi:10.1145/2785956.2787484), sections 3
    ** and 5; the same values are the defaults of htsim's DCQCN model
    ** (dcqcn.cpp: _cnp_interval 50 us, _cc_update_period 55 us,
    ** _g = 1/256, _B = 10000000, _F = 5). */
    *out = (FabDcqcnCfg){
        .cnp_interval = 50 * FAB_US,     /* paper: N = 50 us between CNPs of a flow */
        .g = 1.0 / 256,                  /* paper: g = 1/256 */
        .alpha_init = 1.0,               /* paper/htsim: alpha starts at 1 (first cut halves the rate) */
        .alpha_timer = 55 * FAB_US,      /* paper: K = 55 us */
        .rate_timer = 55 * FAB_US,       /* paper: timer T = 55 us */
        .byte_counter = 10000000,        /* paper: byte counter B = 10 MB (htsim: 10000000) */
        .fast_recovery = 5,              /* paper: F = 5 */
        .rai_bps = 40 * MBPS,            /* paper: R_AI = 40 Mbps */
        .rhai_bps = 400 * MBPS,          /* paper gives no number: 10 x R_AI (fabsim's choice) */
        .min_rate_bps = 10 * MBPS,       /* paper gives none: fabsim's choice */
        .rate_reduce_period = 0,         /* paper: every CNP cuts the rate */
        .first_cnp_rate_bps = 0,         /* paper: the first cut is by alpha too */
    };
    return TRUE;
  }
  if (strcmp(name, "dcqcn-mlx") == 0) {
    /* NVIDIA ConnectX-4 and later firmware defaults (NVConfig names in
    ** brackets). Source A: NVIDIA DOCA documentation, "DCQCN CC Parameters"
    ** (networking-docs.nvidia.com/doca/archive/3-4-0/dcqcn-cc-parameters).
    ** Source B: the defaults reported by `mlxconfig query` on ConnectX
    ** firmware (RPG_TIME_RESET 300, RPG_BYTE_RESET 32767, RPG_THRESHOLD 1,
    ** RPG_AI_RATE 5, RPG_HAI_RATE 50, RPG_GD 11, RPG_MIN_DEC_FAC 50,
    ** RPG_MIN_RATE 1, RATE_TO_SET_ON_FIRST_CNP 0, DCE_TCP_G 1019,
    ** DCE_TCP_RTT 1, RATE_REDUCE_MONITOR_PERIOD 4, INITIAL_ALPHA_VALUE 1023,
    ** MIN_TIME_BETWEEN_CNPS 4). Not modelled: RPG_MIN_DEC_FAC 50 % (a cut
    ** by alpha/2 <= 1/2 never exceeds it), RPG_GD 11 (alpha/2^11 in 10-bit
    ** fixed point = alpha/2, as modelled), CLAMP_TGT_RATE (RT = RC on every
    ** cut here, as in the paper), and firmware's fixed-point rounding. */
    *out = (FabDcqcnCfg){
        .cnp_interval = 4 * FAB_US,      /* [MIN_TIME_BETWEEN_CNPS] 4 us: source B */
        .g = 5.0 / 1024,                 /* [DCE_TCP_G] 1019: alpha = 1019/1024 alpha (+ 5/1024): A, B */
        .alpha_init = 1023.0 / 1024,     /* [INITIAL_ALPHA_VALUE] 1023/1024: A, B */
        .alpha_timer = 1 * FAB_US,       /* [DCE_TCP_RTT] 1 us: A, B */
        .rate_timer = 300 * FAB_US,      /* [RPG_TIME_RESET] 300 us: B */
        .byte_counter = 32767,           /* [RPG_BYTE_RESET] 32767 B: B */
        .fast_recovery = 1,              /* [RPG_THRESHOLD] 1: B */
        .rai_bps = 5 * MBPS,             /* [RPG_AI_RATE] 5 Mb/s: B */
        .rhai_bps = 50 * MBPS,           /* [RPG_HAI_RATE] 50 Mb/s: B */
        .min_rate_bps = 1 * MBPS,        /* [RPG_MIN_RATE] 1 Mb/s: A, B */
        .rate_reduce_period = 4 * FAB_US,/* [RATE_REDUCE_MONITOR_PERIOD] 4 us: A, B */
        .first_cnp_rate_bps = 0,         /* [RATE_TO_SET_ON_FIRST_CNP] 0 = off: A, B */
    };
    return TRUE;
  }
  return FALSE;
}

const char *fab_dcqcn_cfg_invalid(const FabDcqcnCfg *c) {
  if (!(c->g > 0 && c->g <= 1)) return "g must be in (0, 1]";
  if (!(c->alpha_init >= 0 && c->alpha_init <= 1)) return "alpha_init must be in [0, 1]";
  if (c->alpha_timer == 0) return "alpha_timer must be > 0";
  if (c->rate_timer == 0) return "rate_timer must be > 0";
  if (c->min_rate_bps == 0) return "min_rate must be > 0";
  return NULL;
}

double fab_dcqcn_alpha(const FabDcqcnFlow *s, const FabDcqcnCfg *c, fab_time_t now) {
  if (now <= s->alpha_at) return s->alpha;
  uint64_t n = (now - s->alpha_at) / c->alpha_timer;
  if (n == 0) return s->alpha;
  if (n > 100000) return 0; /* (1-g)^n underflows long before */
  return s->alpha * pow(1 - c->g, (double)n);
}

static void dcqcn_init(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now) {
  memset(&s->u.dcqcn, 0, sizeof s->u.dcqcn);
  s->u.dcqcn.rt_bps = s->line_bps;
  s->u.dcqcn.alpha = cfg->dcqcn.alpha_init;
  s->u.dcqcn.alpha_at = now;
  s->timer_at = FAB_TIME_MAX;
}

static uint64_t clamp_rate(uint64_t r, const FabCcFlow *s, const FabDcqcnCfg *c) {
  if (r > s->line_bps) r = s->line_bps;
  if (r < c->min_rate_bps) r = c->min_rate_bps;
  return r;
}

/* One rate-increase step after T or BC advanced. */
static void increase(FabCcFlow *s, const FabDcqcnCfg *c) {
  FabDcqcnFlow *d = &s->u.dcqcn;
  uint32_t hi = d->t > d->bc ? d->t : d->bc;
  uint32_t lo = d->t < d->bc ? d->t : d->bc;
  if (hi > c->fast_recovery) {
    uint64_t step = lo > c->fast_recovery ? (uint64_t)(lo - c->fast_recovery) * c->rhai_bps : c->rai_bps;
    d->rt_bps = d->rt_bps + step > s->line_bps ? s->line_bps : d->rt_bps + step;
  }
  s->rate_bps = clamp_rate((d->rt_bps + s->rate_bps + 1) / 2, s, c); /* rounded up: reaches RT */
  if (s->rate_bps == s->line_bps && d->rt_bps == s->line_bps) {
    d->limited = false;
    s->timer_at = FAB_TIME_MAX;
  }
}

static void dcqcn_on_sent(FabCcFlow *s, const FabCcCfg *cfg, uint32_t wire, fab_time_t now) {
  FabDcqcnFlow *d = &s->u.dcqcn;
  const FabDcqcnCfg *c = &cfg->dcqcn;
  if (!d->limited || c->byte_counter == 0) return;
  d->bytes += wire;
  while (d->limited && d->bytes >= c->byte_counter) {
    d->bytes -= c->byte_counter;
    d->bc++;
    increase(s, c);
  }
}

static void dcqcn_on_cnp(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now) {
  FabDcqcnFlow *d = &s->u.dcqcn;
  const FabDcqcnCfg *c = &cfg->dcqcn;
  bool first = !d->seen_cnp;
  double alpha = first ? c->alpha_init : fab_dcqcn_alpha(d, c, now);
  if (first || c->rate_reduce_period == 0 || now - d->last_cut >= c->rate_reduce_period) {
    if (first && c->first_cnp_rate_bps) {
      s->rate_bps = clamp_rate(c->first_cnp_rate_bps, s, c);
      d->rt_bps = s->rate_bps;
    } else {
      d->rt_bps = s->rate_bps;
      s->rate_bps = clamp_rate((uint64_t)llround((double)s->rate_bps * (1 - alpha / 2)), s, c);
    }
    d->last_cut = now;
    d->t = d->bc = 0;
    d->bytes = 0;
    d->limited = true;
    s->timer_at = now + c->rate_timer;
  }
  d->seen_cnp = true;
  d->alpha = (1 - c->g) * alpha + c->g;
  d->alpha_at = now;
}

static void dcqcn_on_timer(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now) {
  FabDcqcnFlow *d = &s->u.dcqcn;
  if (!d->limited) {
    s->timer_at = FAB_TIME_MAX;
    return;
  }
  s->timer_at = now + cfg->dcqcn.rate_timer;
  d->t++;
  increase(s, &cfg->dcqcn);
}

static bool dcqcn_rx_data(fab_time_t *cnp_next, const FabCcCfg *cfg, const FabPkt *p, fab_time_t now) {
  if (!(p->flags & FAB_PKTF_ECN) || now < *cnp_next) return false;
  *cnp_next = now + cfg->dcqcn.cnp_interval;
  return true;
}

const FabCcOps fab_cc_dcqcn_ops = {
    .name = "dcqcn",
    .tx_flags = FAB_PKTF_ECT,
    .init = dcqcn_init,
    .on_sent = dcqcn_on_sent,
    .on_cnp = dcqcn_on_cnp,
    .on_ack = NULL,
    .on_timer = dcqcn_on_timer,
    .rx_data = dcqcn_rx_data,
};

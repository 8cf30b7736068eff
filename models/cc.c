/* Congestion-control dispatch and presets. See cc.h. */
#include "cc.h"
#include <string.h>

void fab_cc_ignore_sent(FabCcFlow *s, const FabCcCfg *cfg, uint32_t wire, fab_time_t now) {
  (void)s, (void)cfg, (void)wire, (void)now;
}

void fab_cc_ignore_cnp(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now) { (void)s, (void)cfg, (void)now; }

void fab_cc_no_timer(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now) {
  (void)cfg, (void)now;
  s->timer_at = FAB_TIME_MAX;
}

bool fab_cc_no_cnp(fab_time_t *cnp_next, const FabCcCfg *cfg, const FabPkt *p, fab_time_t now) {
  (void)cnp_next, (void)cfg, (void)p, (void)now;
  return false;
}

const FabCcOps *fab_cc_ops(FabCcKind kind) {
  switch (kind) {
  case FAB_CC_NONE: return NULL;
  case FAB_CC_DCQCN: return &fab_cc_dcqcn_ops;
  case FAB_CC_DELAY: return &fab_cc_delay_ops;
  case FAB_CC_DCTCP: return &fab_cc_dctcp_ops;
  case FAB_CC_TIMELY: return &fab_cc_timely_ops;
  case FAB_CC_HPCC: return &fab_cc_hpcc_ops;
  }
  g_assert_not_reached();
}

gboolean fab_cc_preset(const char *name, FabCcCfg *out) {
  if (strcmp(name, "none") == 0) {
    *out = (FabCcCfg){0};
    return TRUE;
  }
  if (strcmp(name, "delay") == 0) {
    *out = (FabCcCfg){.kind = FAB_CC_DELAY, .delay = fab_delay_defaults()};
    return TRUE;
  }
  if (strcmp(name, "dctcp") == 0) {
    *out = (FabCcCfg){.kind = FAB_CC_DCTCP, .dctcp = fab_dctcp_defaults()};
    return TRUE;
  }
  if (strcmp(name, "timely") == 0) {
    *out = (FabCcCfg){.kind = FAB_CC_TIMELY, .timely = fab_timely_defaults()};
    return TRUE;
  }
  if (strcmp(name, "hpcc") == 0) {
    *out = (FabCcCfg){.kind = FAB_CC_HPCC, .hpcc = fab_hpcc_defaults()};
    return TRUE;
  }
  FabDcqcnCfg d;
  if (fab_dcqcn_preset(name, &d)) {
    *out = (FabCcCfg){.kind = FAB_CC_DCQCN, .dcqcn = d};
    return TRUE;
  }
  return FALSE;
}

const char *fab_cc_cfg_invalid(const FabCcCfg *c) {
  switch (c->kind) {
  case FAB_CC_NONE: return NULL;
  case FAB_CC_DCQCN: return fab_dcqcn_cfg_invalid(&c->dcqcn);
  case FAB_CC_DELAY: return fab_delay_cfg_invalid(&c->delay);
  case FAB_CC_DCTCP: return fab_dctcp_cfg_invalid(&c->dctcp);
  case FAB_CC_TIMELY: return fab_timely_cfg_invalid(&c->timely);
  case FAB_CC_HPCC: return fab_hpcc_cfg_invalid(&c->hpcc);
  }
  return "unknown congestion-control kind";
}

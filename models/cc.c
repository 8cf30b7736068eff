/* Congestion-control dispatch and presets. See cc.h. */
#include "cc.h"
#include <string.h>

const FabCcOps *fab_cc_ops(FabCcKind kind) {
  switch (kind) {
  case FAB_CC_NONE: return NULL;
  case FAB_CC_DCQCN: return &fab_cc_dcqcn_ops;
  case FAB_CC_DELAY: return &fab_cc_delay_ops;
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
  }
  return "unknown congestion-control kind";
}

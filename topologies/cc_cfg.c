/* fabric.congestion_control: the algorithm, DCQCN's preset, and each
** algorithm's parameters over its defaults (models/dcqcn.c, delaycc.c,
** dctcp.c, timely.c and hpcc.c cite the source of each). See topology.h. */
#include "fabric_cfg_int.h"
#include "models/cc.h"
#include <string.h>

static const char *const cc_algorithms[] = {"none", "dcqcn", "delay", "dctcp", "timely", "hpcc", NULL}; /* FabCcKind order */
static const char *const cc_presets[] = {"dcqcn-paper", "dcqcn-mlx", NULL};

#define K(NAME, TYPE, FIELD, ...) FAB_CFG_KEY(NAME, TYPE, Read, FIELD, __VA_ARGS__)

static const FabCfgKey cc_head_schema[] = {
  K("algorithm", FAB_CFG_ENUM, f.nic.cc.kind, .def = "none", .choices = cc_algorithms),
  K("preset", FAB_CFG_ENUM, f.cc_preset, .def = "dcqcn-paper", .choices = cc_presets),
  FAB_CFG_END_ROW,
};

/* DCQCN's, over the preset's values; dctcp reads `g` and `alpha_init` too, hpcc `rai`, the others `min_rate` */
static const FabCfgKey cc_param_schema[] = {
  K("cnp_interval", FAB_CFG_TIME, f.nic.cc.dcqcn.cnp_interval, .max = 1e15),
  K("g", FAB_CFG_DOUBLE, f.nic.cc.dcqcn.g),
  K("alpha_init", FAB_CFG_DOUBLE, f.nic.cc.dcqcn.alpha_init),
  K("alpha_timer", FAB_CFG_TIME, f.nic.cc.dcqcn.alpha_timer, .max = 1e15),
  K("rate_timer", FAB_CFG_TIME, f.nic.cc.dcqcn.rate_timer, .max = 1e15),
  K("byte_counter", FAB_CFG_SIZE, f.nic.cc.dcqcn.byte_counter, .max = 0x1p40),
  K("fast_recovery", FAB_CFG_UINT, f.nic.cc.dcqcn.fast_recovery, .min = 0, .max = 1000),
  K("rai", FAB_CFG_RATE, f.nic.cc.dcqcn.rai_bps),
  K("rhai", FAB_CFG_RATE, f.nic.cc.dcqcn.rhai_bps),
  K("min_rate", FAB_CFG_RATE, f.nic.cc.dcqcn.min_rate_bps),
  K("rate_reduce_period", FAB_CFG_TIME, f.nic.cc.dcqcn.rate_reduce_period, .max = 1e15),
  K("first_cnp_rate", FAB_CFG_RATE, f.nic.cc.dcqcn.first_cnp_rate_bps),
  FAB_CFG_END_ROW,
};

/* algorithm: delay (models/delaycc.h); timely reads `beta` too */
static const FabCfgKey delay_param_schema[] = {
  K("target_delay", FAB_CFG_TIME, f.nic.cc.delay.target, .max = 1e15),
  K("additive_increase", FAB_CFG_DOUBLE, f.nic.cc.delay.ai),
  K("beta", FAB_CFG_DOUBLE, f.nic.cc.delay.beta),
  K("max_mdf", FAB_CFG_DOUBLE, f.nic.cc.delay.max_mdf),
  FAB_CFG_END_ROW,
};

/* algorithm: timely (models/timely.h) */
static const FabCfgKey timely_param_schema[] = {
  K("t_low", FAB_CFG_TIME, f.nic.cc.timely.t_low, .max = 1e15),
  K("t_high", FAB_CFG_TIME, f.nic.cc.timely.t_high, .max = 1e15),
  K("delta", FAB_CFG_RATE, f.nic.cc.timely.delta_bps),
  K("alpha", FAB_CFG_DOUBLE, f.nic.cc.timely.alpha),
  K("min_rtt", FAB_CFG_TIME, f.nic.cc.timely.min_rtt, .max = 1e15),
  K("hai_after", FAB_CFG_UINT, f.nic.cc.timely.hai_after, .min = 1, .max = 1000),
  K("sample_bytes", FAB_CFG_SIZE, f.nic.cc.timely.segment, .min = 1, .max = 0x1p40),
  FAB_CFG_END_ROW,
};

/* algorithm: hpcc (models/hpcc.h) */
static const FabCfgKey hpcc_param_schema[] = {
  K("eta", FAB_CFG_DOUBLE, f.nic.cc.hpcc.eta),
  K("max_stage", FAB_CFG_UINT, f.nic.cc.hpcc.max_stage, .min = 0, .max = 1000),
  K("base_rtt", FAB_CFG_TIME, f.nic.cc.hpcc.base_rtt, .min = 1, .max = 1e15),
  FAB_CFG_END_ROW,
};

static const FabCfgKey cc_schema[] = {FAB_CFG_SPLICE_OF(cc_head_schema), FAB_CFG_SPLICE_OF(cc_param_schema),
                                      FAB_CFG_SPLICE_OF(delay_param_schema), FAB_CFG_SPLICE_OF(timely_param_schema),
                                      FAB_CFG_SPLICE_OF(hpcc_param_schema), FAB_CFG_END_ROW};

/* The keys each algorithm reads from the shared rows above. */
static const char *const shared_keys[][4] = {
  [FAB_CC_NONE] = {NULL},
  [FAB_CC_DCQCN] = {NULL},
  [FAB_CC_DELAY] = {"min_rate", NULL},
  [FAB_CC_DCTCP] = {"g", "alpha_init", NULL},
  [FAB_CC_TIMELY] = {"min_rate", "beta", NULL},
  [FAB_CC_HPCC] = {"min_rate", "rai", NULL},
};

/* Whose a key of the shared rows is, when more than one algorithm reads it. */
static const char *owners(const char *key, const char *why) {
  if (!strcmp(key, "min_rate")) return "DCQCN's, delay's, timely's and hpcc's";
  if (!strcmp(key, "rai")) return "DCQCN's and hpcc's";
  if (!strcmp(key, "g") || !strcmp(key, "alpha_init")) return "DCQCN's and dctcp's";
  if (!strcmp(key, "beta")) return "delay's and timely's";
  return why;
}

/* The parameters of `rows` given in n that the algorithm does not read, each said to have no effect. */
static void cc_unused(Read *r, const FabCfgNode *n, const FabCfgKey *rows, const char *why) {
  FabCcKind kind = r->f.nic.cc.kind;
  for (const FabCfgKey *k = rows; n && k->name; k++) {
    if (!fab_cfg_get(n, k->name)) continue;
    bool reads = false;
    for (const char *const *s = shared_keys[kind]; *s && !reads; s++) reads = strcmp(*s, k->name) == 0;
    if (!reads)
      no_effect(r, fab_cfg_get(n, k->name), "fabric.congestion_control.algorithm is %s ('%s' is %s)",
                cc_algorithms[kind], k->name, owners(k->name, why));
  }
}

/* A bad parameter: the message starts with its name, point at it when it was given. */
static gboolean cc_bad(const FabCfgNode *n, const char *bad, GError **err) {
  char *key = g_strndup(bad, strcspn(bad, " "));
  const FabCfgNode *at = fab_cfg_get(n, key);
  g_free(key);
  return fab_cfg_fail(at ? at : n, err, "%s", bad);
}

/* A shared key given: the algorithm takes its value, else keeps its own default. */
#define TAKE(KEY, DST, SRC) do { if (fab_cfg_get(n, KEY)) (DST) = (SRC); } while (0)

gboolean fab_fabric_read_cc(Read *r, GError **err) {
  const FabCfgNode *n = r->cc;
  Read scratch = *r;
  if (!fab_cfg_apply(n, NULL, cc_schema, &scratch, err)) return FALSE; /* the algorithm and the preset */
  FabCcCfg *cc = &r->f.nic.cc;
  g_assert(fab_dcqcn_preset(cc_presets[scratch.f.cc_preset], &cc->dcqcn));
  cc->delay = fab_delay_defaults();
  cc->timely = fab_timely_defaults();
  cc->hpcc = fab_hpcc_defaults();
  if (!fab_cfg_apply(n, NULL, cc_schema, r, err)) return FALSE; /* the parameters given, over the preset */
  if (r->f.nic.srd && !fab_cfg_get(n, "algorithm")) cc->kind = FAB_CC_DELAY; /* SRD's: RTT-driven rates */
  cc->dctcp = fab_dctcp_defaults();
  TAKE("g", cc->dctcp.g, cc->dcqcn.g);
  TAKE("alpha_init", cc->dctcp.alpha_init, cc->dcqcn.alpha_init);
  TAKE("beta", cc->timely.beta, cc->delay.beta);
  TAKE("min_rate", cc->delay.min_rate_bps, cc->dcqcn.min_rate_bps);
  TAKE("min_rate", cc->timely.min_rate_bps, cc->dcqcn.min_rate_bps);
  TAKE("min_rate", cc->hpcc.min_rate_bps, cc->dcqcn.min_rate_bps);
  TAKE("rai", cc->hpcc.rai_bps, cc->dcqcn.rai_bps);
  FabCcKind kind = cc->kind;
  const char *bad = fab_dcqcn_cfg_invalid(&cc->dcqcn); /* checked under any algorithm: a bad value is an error */
  if (!bad) bad = fab_delay_cfg_invalid(&cc->delay);   /* either way */
  if (!bad) bad = fab_dctcp_cfg_invalid(&cc->dctcp);
  if (!bad) bad = fab_timely_cfg_invalid(&cc->timely);
  if (!bad) bad = fab_hpcc_cfg_invalid(&cc->hpcc);
  if (bad) return cc_bad(n, bad, err);
  if (kind != FAB_CC_DCQCN) { /* the preset and DCQCN's parameters are set aside, and said so */
    if (fab_cfg_get(n, "preset"))
      no_effect(r, fab_cfg_get(n, "preset"), "fabric.congestion_control.algorithm is %s (the preset is DCQCN's)",
                cc_algorithms[kind]);
    cc_unused(r, n, cc_param_schema, "DCQCN's");
  }
  if (kind != FAB_CC_DELAY) cc_unused(r, n, delay_param_schema, "the delay algorithm's");
  if (kind != FAB_CC_TIMELY) cc_unused(r, n, timely_param_schema, "timely's");
  if (kind != FAB_CC_HPCC) cc_unused(r, n, hpcc_param_schema, "hpcc's");
  if (kind == FAB_CC_NONE) memset(cc, 0, sizeof *cc);
  return TRUE;
}

gboolean fab_fabric_check_cc(Read *r, GError **err) {
  const FabFabricCfg *out = &r->f;
  FabCcKind kind = out->nic.cc.kind;
  const FabCcOps *ops = fab_cc_ops(kind);
  bool ect = (ops && (ops->tx_flags & FAB_PKTF_ECT)) || out->nic.spray == FAB_SPRAY_AVOID || out->nic.srd;
  const FabCfgNode *alg = fab_cfg_get(r->cc, "algorithm");
  if (ops && (ops->tx_flags & FAB_PKTF_ECT) && !out->sw.ecn.enabled)
    no_effect(r, alg, "%s reacts to ECN marks and fabric.switch.ecn is off: no packet is marked, so no sender ever "
              "slows down (enable fabric.switch.ecn for %s to act)", cc_algorithms[kind], cc_algorithms[kind]);
  if (out->sw.ecn.enabled && !ect)
    no_effect(r, fab_cfg_get(r->ecn, "enabled"), "ECN marks only ECN-capable packets, and congestion control %s "
              "sends none: no packet is marked (set fabric.congestion_control.algorithm: dcqcn or dctcp for ECN to "
              "act)", cc_algorithms[kind]);
  if (ops && ops->echo != FAB_CC_ECHO_NONE && (out->nic.srd || out->nic.spray == FAB_SPRAY_AVOID))
    return fab_cfg_fail(alg ? alg : r->cc, err, "%s reads its receivers' reports in fields of the ACK that %s uses for "
                        "itself: choose another algorithm, or another %s", cc_algorithms[kind],
                        out->nic.srd ? "transport srd" : "spray: avoid", out->nic.srd ? "transport" : "spray");
  if (kind == FAB_CC_DCQCN) {
    const FabDcqcnCfg *d = &out->nic.cc.dcqcn;
    uint64_t line = out->topo.host_bps;
    const char *key = d->min_rate_bps > line ? "min_rate" : d->rai_bps > line ? "rai" : d->rhai_bps > line ? "rhai"
                      : d->first_cnp_rate_bps > line ? "first_cnp_rate" : NULL;
    if (key)
      return fab_cfg_fail(fab_cfg_get(r->cc, key) ? fab_cfg_get(r->cc, key) : r->cc, err,
                          "%s is above the line rate (%.6g Gbps)", key, (double)line / 1e9);
  }
  return TRUE;
}

void fab_fabric_cc_finish(Read *r, uint32_t mtu_wire) {
  FabHpccCfg *h = &r->f.nic.cc.hpcc;
  if (r->f.nic.cc.kind != FAB_CC_HPCC) return;
  if (!h->base_rtt) h->base_rtt = (fab_time_t)fab_fabric_round_trip(r, mtu_wire, NULL, NULL); /* HPCC's T */
  r->f.sw.int_rtt = h->base_rtt;
}

/* Fabric configuration and topology builders. See topology.h. */
#include "topology.h"
#include "presets.h"
#include "models/cc.h"
#include "models/dcqcn.h"
#include <stddef.h>
#include <string.h>

/* ---- configuration ----------------------------------------------------- */


static const char *const topo_kinds[] = {"single-switch", "leaf-spine", "fat-tree", "ring", "rail-optimized",
                                         "multi-rail", NULL};
static const char *const routings[] = {"ecmp", NULL};
static const char *const cc_algorithms[] = {"none", "dcqcn", NULL};
static const char *const cc_presets[] = {"dcqcn-paper", "dcqcn-mlx", NULL};

typedef struct ClusterIn {
  int node;
  uint64_t nodes, gpus_per_node, nics_per_node, nvlink_domain;
  const FabCfgNode *nic, *nvlink, *pcie, *gpu;
  gboolean pxn;
  uint32_t rails;            /* not a key: NICs per GPU node (0 for hosts), for rail-optimized */
} ClusterIn;

static const FabCfgKey cluster_schema[] = {
  {"node", FAB_CFG_ENUM, offsetof(ClusterIn, node), FALSE, "host", 0, 0, fab_preset_names},
  {"nodes", FAB_CFG_UINT, offsetof(ClusterIn, nodes), FALSE, NULL, 1, 1 << 24, NULL},
  {"gpus_per_node", FAB_CFG_UINT, offsetof(ClusterIn, gpus_per_node), FALSE, NULL, 1, 1024, NULL},
  {"nics_per_node", FAB_CFG_UINT, offsetof(ClusterIn, nics_per_node), FALSE, NULL, 1, 1024, NULL},
  {"nvlink_domain", FAB_CFG_UINT, offsetof(ClusterIn, nvlink_domain), FALSE, NULL, 0, 65536, NULL},
  {"nic", FAB_CFG_MAP, offsetof(ClusterIn, nic), FALSE, NULL, 0, 0, NULL},
  {"nvlink", FAB_CFG_MAP, offsetof(ClusterIn, nvlink), FALSE, NULL, 0, 0, NULL},
  {"pcie", FAB_CFG_MAP, offsetof(ClusterIn, pcie), FALSE, NULL, 0, 0, NULL},
  {"gpu", FAB_CFG_MAP, offsetof(ClusterIn, gpu), FALSE, NULL, 0, 0, NULL},
  {"pxn", FAB_CFG_BOOL, offsetof(ClusterIn, pxn), FALSE, "false", 0, 0, NULL},
  {NULL, FAB_CFG_END, 0, FALSE, NULL, 0, 0, NULL},
};

typedef struct NicIn {
  uint64_t bandwidth, rto, ack_interval, max_timeouts;
} NicIn;

static const FabCfgKey nic_schema[] = {
  {"bandwidth", FAB_CFG_RATE, offsetof(NicIn, bandwidth), FALSE, NULL, 0, 0, NULL},
  {"rto", FAB_CFG_TIME, offsetof(NicIn, rto), FALSE, "1ms", 1e3, 1e15, NULL},
  {"ack_interval", FAB_CFG_UINT, offsetof(NicIn, ack_interval), FALSE, "1", 1, 1 << 20, NULL},
  {"max_timeouts", FAB_CFG_UINT, offsetof(NicIn, max_timeouts), FALSE, "64", 1, 1 << 20, NULL},
  {NULL, FAB_CFG_END, 0, FALSE, NULL, 0, 0, NULL},
};

typedef struct NvlinkIn {
  uint64_t bandwidth, latency, segment;
} NvlinkIn;

static const FabCfgKey nvlink_schema[] = {
  {"bandwidth", FAB_CFG_RATE, offsetof(NvlinkIn, bandwidth), FALSE, NULL, 0, 0, NULL},
  {"latency", FAB_CFG_TIME, offsetof(NvlinkIn, latency), FALSE, NULL, 0, 0, NULL},
  {"segment", FAB_CFG_SIZE, offsetof(NvlinkIn, segment), FALSE, NULL, 64, 1048576, NULL},
  {NULL, FAB_CFG_END, 0, FALSE, NULL, 0, 0, NULL},
};

typedef struct PcieIn {
  uint64_t bandwidth, latency, host_bandwidth, host_latency;
  gboolean gpudirect;
} PcieIn;

static const FabCfgKey pcie_schema[] = {
  {"bandwidth", FAB_CFG_RATE, offsetof(PcieIn, bandwidth), FALSE, NULL, 0, 0, NULL},
  {"latency", FAB_CFG_TIME, offsetof(PcieIn, latency), FALSE, NULL, 0, 0, NULL},
  {"gpudirect", FAB_CFG_BOOL, offsetof(PcieIn, gpudirect), FALSE, "true", 0, 0, NULL},
  {"host_bandwidth", FAB_CFG_RATE, offsetof(PcieIn, host_bandwidth), FALSE, NULL, 0, 0, NULL},
  {"host_latency", FAB_CFG_TIME, offsetof(PcieIn, host_latency), FALSE, NULL, 0, 0, NULL},
  {NULL, FAB_CFG_END, 0, FALSE, NULL, 0, 0, NULL},
};

typedef struct GpuIn {
  double peak, efficiency;
  uint64_t reduce;
} GpuIn;

static const FabCfgKey gpu_schema[] = {
  {"peak", FAB_CFG_DOUBLE, offsetof(GpuIn, peak), FALSE, NULL, 1e9, 1e18, NULL}, /* FLOP/s: 989e12, not 989 */
  {"efficiency", FAB_CFG_DOUBLE, offsetof(GpuIn, efficiency), FALSE, NULL, 1e-6, 1, NULL},
  {"reduce_bandwidth", FAB_CFG_RATE, offsetof(GpuIn, reduce), FALSE, NULL, 0, 0, NULL},
  {NULL, FAB_CFG_END, 0, FALSE, NULL, 0, 0, NULL},
};

/* NVLink segment header bytes: an assumption of this model (one 16-byte
** header per segment), documented in README. */
#define NVL_OVERHEAD 16
/* NVLink segment payload when the scenario does not say: 64 KiB. */
#define NVL_SEGMENT 65536

/* cluster.node other than host: the preset, then the overrides. */
static gboolean read_gpu_nodes(const FabCfgNode *cl_node, const ClusterIn *cl, const NicIn *nic, FabGpuSpec *g,
                               uint64_t *nic_bps, GError **err) {
  const FabNodePreset *p = fab_preset_find(fab_preset_names[cl->node]);
  g_assert(p);
  NvlinkIn nv = {p->nvlink_bps, p->nvlink_latency, NVL_SEGMENT};
  PcieIn pc = {p->pcie_bps, p->pcie_latency, p->host_bps, p->host_latency, TRUE};
  GpuIn gi = {p->gpu_flops, p->gpu_efficiency, FAB_GPU_REDUCE_BPS};
  if (!fab_cfg_apply(cl->nvlink, cl_node, nvlink_schema, &nv, err) ||
      !fab_cfg_apply(cl->pcie, cl_node, pcie_schema, &pc, err) ||
      !fab_cfg_apply(cl->gpu, cl_node, gpu_schema, &gi, err))
    return FALSE;
  const FabCfgNode *at = cl_node;
  if (!cl->nodes) return fab_cfg_fail(cl_node, err, "GPU nodes need cluster.nodes");
  g->preset = p->name;
  g->nodes = (uint32_t)cl->nodes;
  g->gpus_per_node = cl->gpus_per_node ? (uint32_t)cl->gpus_per_node : p->gpus_per_node;
  g->nics_per_node = cl->nics_per_node ? (uint32_t)cl->nics_per_node : p->nics_per_node;
  g->nvlink_domain = fab_cfg_get(cl_node, "nvlink_domain") ? (uint32_t)cl->nvlink_domain
                     : cl->gpus_per_node && p->nvlink_domain == p->gpus_per_node ? g->gpus_per_node
                                                                               : p->nvlink_domain;
  uint32_t G = g->gpus_per_node, N = g->nics_per_node;
  if (G % N && N % G)
    return fab_cfg_fail(fab_cfg_get(cl_node, "nics_per_node") ? fab_cfg_get(cl_node, "nics_per_node") : at, err,
                        "%u GPUs and %u NICs per node: one must divide the other (GPUs share a NIC, or a GPU has "
                        "several)", G, N);
  if (g->nvlink_domain && g->nvlink_domain % G)
    return fab_cfg_fail(fab_cfg_get(cl_node, "nvlink_domain") ? fab_cfg_get(cl_node, "nvlink_domain") : at, err,
                        "an NVLink domain of %u GPUs is not a whole number of nodes of %u GPUs", g->nvlink_domain, G);
  if ((uint64_t)g->nodes * G > (1u << 24)) return fab_cfg_fail(at, err, "too many GPUs (at most 16777216)");
  g->nvlink_bps = nv.bandwidth;
  g->nvlink_latency = nv.latency;
  g->segment = (uint32_t)nv.segment;
  g->pcie_bps = pc.bandwidth;
  g->pcie_latency = pc.latency;
  g->gpudirect = pc.gpudirect;
  g->host_bps = pc.host_bandwidth;
  g->host_latency = pc.host_latency;
  g->gpu_flops = gi.peak;
  g->gpu_efficiency = gi.efficiency;
  g->reduce_bps = gi.reduce;
  g->pxn = cl->pxn;
  if (g->pxn && (N != G || g->nvlink_domain != G))
    return fab_cfg_fail(fab_cfg_get(cl_node, "pxn"), err, "pxn needs one NIC per GPU and an NVLink domain of one "
                        "node (here %u GPUs, %u NICs, a domain of %u)", G, N, g->nvlink_domain);
  if (g->nvlink_domain && !g->nvlink_bps)
    return fab_cfg_fail(at, err, "an NVLink domain needs cluster.nvlink.bandwidth");
  if (!g->pcie_bps) return fab_cfg_fail(at, err, "GPU nodes need cluster.pcie.bandwidth");
  if (!g->gpudirect && !g->host_bps)
    return fab_cfg_fail(fab_cfg_get(cl->pcie, "gpudirect"), err, "host staging needs pcie.host_bandwidth");
  *nic_bps = nic->bandwidth ? nic->bandwidth : p->nic_bps;
  return TRUE;
}


typedef struct FabricIn {
  int transport;
  const FabCfgNode *topology, *link, *sw, *cc;
} FabricIn;

static const FabCfgKey fabric_schema[] = {
  {"transport", FAB_CFG_ENUM, offsetof(FabricIn, transport), FALSE, "rocev2", 0, 0, fab_transport_names},
  {"topology", FAB_CFG_MAP, offsetof(FabricIn, topology), TRUE, NULL, 0, 0, NULL},
  {"link", FAB_CFG_MAP, offsetof(FabricIn, link), TRUE, NULL, 0, 0, NULL},
  {"switch", FAB_CFG_MAP, offsetof(FabricIn, sw), FALSE, NULL, 0, 0, NULL},
  {"congestion_control", FAB_CFG_MAP, offsetof(FabricIn, cc), FALSE, NULL, 0, 0, NULL},
  {NULL, FAB_CFG_END, 0, FALSE, NULL, 0, 0, NULL},
};

typedef struct TopoIn {
  int kind;
  uint64_t hosts_per_leaf, leaves, spines, k, switches, hosts_per_switch;
  double oversubscription;
} TopoIn;

static const FabCfgKey topo_schema[] = {
  {"kind", FAB_CFG_ENUM, offsetof(TopoIn, kind), TRUE, NULL, 0, 0, topo_kinds},
  {"hosts_per_leaf", FAB_CFG_UINT, offsetof(TopoIn, hosts_per_leaf), FALSE, NULL, 1, 65000, NULL},
  {"leaves", FAB_CFG_UINT, offsetof(TopoIn, leaves), FALSE, NULL, 1, 65000, NULL},
  {"spines", FAB_CFG_UINT, offsetof(TopoIn, spines), FALSE, NULL, 1, 65000, NULL},
  {"oversubscription", FAB_CFG_RATIO, offsetof(TopoIn, oversubscription), FALSE, NULL, 0, 0, NULL},
  {"k", FAB_CFG_UINT, offsetof(TopoIn, k), FALSE, NULL, 2, 256, NULL},
  {"switches", FAB_CFG_UINT, offsetof(TopoIn, switches), FALSE, NULL, 3, 1024, NULL},
  {"hosts_per_switch", FAB_CFG_UINT, offsetof(TopoIn, hosts_per_switch), FALSE, NULL, 1, 1024, NULL},
  {NULL, FAB_CFG_END, 0, FALSE, NULL, 0, 0, NULL},
};

typedef struct LinkIn {
  uint64_t bandwidth, latency, mtu;
} LinkIn;

static const FabCfgKey link_schema[] = {
  {"bandwidth", FAB_CFG_RATE, offsetof(LinkIn, bandwidth), TRUE, NULL, 0, 0, NULL},
  {"latency", FAB_CFG_TIME, offsetof(LinkIn, latency), FALSE, "1us", 0, 1e15, NULL},
  {"mtu", FAB_CFG_SIZE, offsetof(LinkIn, mtu), FALSE, "4096", 64, 1048576, NULL},
  {NULL, FAB_CFG_END, 0, FALSE, NULL, 0, 0, NULL},
};

typedef struct SwitchIn {
  uint64_t latency, buffer, priorities, ecmp_seed;
  double alpha;
  int routing;
  const FabCfgNode *pfc, *ecn, *sharp, *credits;
} SwitchIn;

static const FabCfgKey switch_schema[] = {
  {"latency", FAB_CFG_TIME, offsetof(SwitchIn, latency), FALSE, "0ns", 0, 1e15, NULL},
  {"buffer", FAB_CFG_SIZE, offsetof(SwitchIn, buffer), FALSE, "32MiB", 1, 1e12, NULL},
  {"buffer_alpha", FAB_CFG_DOUBLE, offsetof(SwitchIn, alpha), FALSE, "1", 1e-6, 1e6, NULL},
  {"priorities", FAB_CFG_UINT, offsetof(SwitchIn, priorities), FALSE, "8", 1, FAB_MAX_PRIOS, NULL},
  {"ecmp_seed", FAB_CFG_UINT, offsetof(SwitchIn, ecmp_seed), FALSE, "0", 0, 0, NULL},
  {"routing", FAB_CFG_ENUM, offsetof(SwitchIn, routing), FALSE, "ecmp", 0, 0, routings},
  {"pfc", FAB_CFG_MAP, offsetof(SwitchIn, pfc), FALSE, NULL, 0, 0, NULL},
  {"ecn", FAB_CFG_MAP, offsetof(SwitchIn, ecn), FALSE, NULL, 0, 0, NULL},
  {"sharp", FAB_CFG_MAP, offsetof(SwitchIn, sharp), FALSE, NULL, 0, 0, NULL},
  {"credits", FAB_CFG_NODE, offsetof(SwitchIn, credits), FALSE, NULL, 0, 0, NULL},
  {NULL, FAB_CFG_END, 0, FALSE, NULL, 0, 0, NULL},
};

typedef struct FeatureIn {
  gboolean enabled;
} FeatureIn;

static const FabCfgKey feature_schema[] = {
  {"enabled", FAB_CFG_BOOL, offsetof(FeatureIn, enabled), FALSE, "false", 0, 0, NULL},
  {NULL, FAB_CFG_END, 0, FALSE, NULL, 0, 0, NULL},
};

typedef struct CcIn {
  int algorithm, preset;
  uint64_t cnp_interval, alpha_timer, rate_timer, byte_counter, fast_recovery, rai, rhai, min_rate,
      rate_reduce_period, first_cnp_rate;
  double g, alpha_init;
} CcIn;

/* Every DCQCN parameter can be set; absent ones come from the preset. The
** presets and the public source of each default are in models/dcqcn.c. */
static const FabCfgKey cc_schema[] = {
  {"algorithm", FAB_CFG_ENUM, offsetof(CcIn, algorithm), FALSE, "none", 0, 0, cc_algorithms},
  {"preset", FAB_CFG_ENUM, offsetof(CcIn, preset), FALSE, "dcqcn-paper", 0, 0, cc_presets},
  {"cnp_interval", FAB_CFG_TIME, offsetof(CcIn, cnp_interval), FALSE, NULL, 0, 0, NULL},
  {"g", FAB_CFG_DOUBLE, offsetof(CcIn, g), FALSE, NULL, 0, 0, NULL},
  {"alpha_init", FAB_CFG_DOUBLE, offsetof(CcIn, alpha_init), FALSE, NULL, 0, 0, NULL},
  {"alpha_timer", FAB_CFG_TIME, offsetof(CcIn, alpha_timer), FALSE, NULL, 0, 0, NULL},
  {"rate_timer", FAB_CFG_TIME, offsetof(CcIn, rate_timer), FALSE, NULL, 0, 0, NULL},
  {"byte_counter", FAB_CFG_SIZE, offsetof(CcIn, byte_counter), FALSE, NULL, 0, 0, NULL},
  {"fast_recovery", FAB_CFG_UINT, offsetof(CcIn, fast_recovery), FALSE, NULL, 0, 1000, NULL},
  {"rai", FAB_CFG_RATE, offsetof(CcIn, rai), FALSE, NULL, 0, 0, NULL},
  {"rhai", FAB_CFG_RATE, offsetof(CcIn, rhai), FALSE, NULL, 0, 0, NULL},
  {"min_rate", FAB_CFG_RATE, offsetof(CcIn, min_rate), FALSE, NULL, 0, 0, NULL},
  {"rate_reduce_period", FAB_CFG_TIME, offsetof(CcIn, rate_reduce_period), FALSE, NULL, 0, 0, NULL},
  {"first_cnp_rate", FAB_CFG_RATE, offsetof(CcIn, first_cnp_rate), FALSE, NULL, 0, 0, NULL},
  {NULL, FAB_CFG_END, 0, FALSE, NULL, 0, 0, NULL},
};

/* congestion_control: the algorithm, a preset, then any parameter set by hand. */
static gboolean read_cc(const FabCfgNode *n, FabCcCfg *out, GError **err) {
  CcIn in = {0};
  memset(out, 0, sizeof *out);
  if (!fab_cfg_apply(n, NULL, cc_schema, &in, err)) return FALSE;
  if (in.algorithm == 0) { /* none: DCQCN parameters would be silently ignored */
    for (const FabCfgKey *k = cc_schema + 1; n && k->name; k++)
      if (fab_cfg_get(n, k->name))
        return fab_cfg_fail(fab_cfg_get(n, k->name), err, "'%s' needs algorithm: dcqcn", k->name);
    return TRUE;
  }
  out->kind = FAB_CC_DCQCN;
  g_assert(fab_dcqcn_preset(cc_presets[in.preset], &out->dcqcn));
  FabDcqcnCfg *d = &out->dcqcn;
#define SET(key, field, value) if (fab_cfg_get(n, key)) d->field = value
  SET("cnp_interval", cnp_interval, in.cnp_interval);
  SET("g", g, in.g);
  SET("alpha_init", alpha_init, in.alpha_init);
  SET("alpha_timer", alpha_timer, in.alpha_timer);
  SET("rate_timer", rate_timer, in.rate_timer);
  SET("byte_counter", byte_counter, in.byte_counter);
  SET("fast_recovery", fast_recovery, (uint32_t)in.fast_recovery);
  SET("rai", rai_bps, in.rai);
  SET("rhai", rhai_bps, in.rhai);
  SET("min_rate", min_rate_bps, in.min_rate);
  SET("rate_reduce_period", rate_reduce_period, in.rate_reduce_period);
  SET("first_cnp_rate", first_cnp_rate_bps, in.first_cnp_rate);
#undef SET
  const char *bad = fab_cc_cfg_invalid(out);
  if (bad) { /* the message starts with the parameter's name: point at it when it was given */
    char *key = g_strndup(bad, strcspn(bad, " "));
    const FabCfgNode *at = fab_cfg_get(n, key);
    g_free(key);
    return fab_cfg_fail(at ? at : n, err, "%s", bad);
  }
  return TRUE;
}

typedef struct PfcIn {
  gboolean enabled;
  const FabCfgNode *priorities, *xoff, *headroom;
  uint64_t xon, quanta, response, watchdog;
  double alpha;
} PfcIn;

static const FabCfgKey pfc_schema[] = {
  {"enabled", FAB_CFG_BOOL, offsetof(PfcIn, enabled), FALSE, "false", 0, 0, NULL},
  {"priorities", FAB_CFG_SEQ, offsetof(PfcIn, priorities), FALSE, NULL, 0, 0, NULL},
  {"xoff", FAB_CFG_NODE, offsetof(PfcIn, xoff), FALSE, NULL, 0, 0, NULL},
  {"xon", FAB_CFG_SIZE, offsetof(PfcIn, xon), FALSE, NULL, 0, 0, NULL},
  {"alpha", FAB_CFG_DOUBLE, offsetof(PfcIn, alpha), FALSE, "0.125", 1e-6, 1e6, NULL},
  {"headroom", FAB_CFG_NODE, offsetof(PfcIn, headroom), FALSE, NULL, 0, 0, NULL},
  {"response", FAB_CFG_TIME, offsetof(PfcIn, response), FALSE, "1us", 0, 1e12, NULL},
  {"quanta", FAB_CFG_UINT, offsetof(PfcIn, quanta), FALSE, "65535", 1, 65535, NULL},
  {"watchdog", FAB_CFG_TIME, offsetof(PfcIn, watchdog), FALSE, "1ms", 0, 1e15, NULL},
  {NULL, FAB_CFG_END, 0, FALSE, NULL, 0, 0, NULL},
};

static const char *const ecn_marks_at[] = {"enqueue", "dequeue", NULL};

typedef struct EcnIn {
  gboolean enabled;
  uint64_t kmin, kmax;
  double pmax;
  int mark;
} EcnIn;

static const FabCfgKey ecn_schema[] = {
  {"enabled", FAB_CFG_BOOL, offsetof(EcnIn, enabled), FALSE, "false", 0, 0, NULL},
  {"kmin", FAB_CFG_SIZE, offsetof(EcnIn, kmin), FALSE, "100KiB", 0, 0, NULL},
  {"kmax", FAB_CFG_SIZE, offsetof(EcnIn, kmax), FALSE, "400KiB", 0, 0, NULL},
  {"pmax", FAB_CFG_PROB, offsetof(EcnIn, pmax), FALSE, "0.2", 0, 0, NULL},
  {"mark", FAB_CFG_ENUM, offsetof(EcnIn, mark), FALSE, "enqueue", 0, 0, ecn_marks_at},
  {NULL, FAB_CFG_END, 0, FALSE, NULL, 0, 0, NULL},
};

/* A size, or the word `word`: *is_word says which. */
static gboolean size_or(const FabCfgNode *n, const char *word, uint64_t *v, gboolean *is_word, GError **err) {
  GError *e = NULL;
  const char *s = fab_cfg_scalar(n);
  *is_word = FALSE;
  if (!s) return fab_cfg_fail(n, err, "expected a size or '%s'", word);
  if (g_str_equal(s, word)) {
    *is_word = TRUE;
    return TRUE;
  }
  if (!fab_parse_size(s, v, &e)) {
    fab_cfg_fail(n, err, "%s, or '%s'", e->message, word);
    g_error_free(e);
    return FALSE;
  }
  return TRUE;
}

static gboolean read_pfc(const FabCfgNode *n, uint32_t nprio, uint32_t mtu_wire, FabPfcCfg *out, GError **err) {
  PfcIn in = {0};
  memset(out, 0, sizeof *out);
  if (!fab_cfg_apply(n, NULL, pfc_schema, &in, err)) return FALSE;
  out->enabled = in.enabled;
  out->lossless = (1u << nprio) - 1; /* default: every priority */
  if (in.priorities) {
    if (in.enabled && fab_cfg_len(in.priorities) == 0)
      return fab_cfg_fail(in.priorities, err, "an empty list: PFC would protect nothing (list the lossless priorities)");
    out->lossless = 0;
    for (size_t i = 0; i < fab_cfg_len(in.priorities); i++) {
      const FabCfgNode *it = fab_cfg_at(in.priorities, i);
      int64_t v;
      if (fab_cfg_kind(it) != FAB_CFG_NODE_SCALAR || !fab_parse_int(fab_cfg_scalar(it), &v, NULL) || v < 0 ||
          v >= nprio)
        return fab_cfg_fail(it, err, "expected a priority from 0 to %u (fabric.switch.priorities is %u)",
                            nprio - 1, nprio);
      out->lossless |= 1u << v;
    }
  }
  gboolean word = FALSE;
  out->xoff = 256 * 1024;
  if (in.xoff && !size_or(in.xoff, "dynamic", &out->xoff, &word, err)) return FALSE;
  out->dynamic = word;
  out->alpha = in.alpha;
  const FabCfgNode *xon_at = n ? fab_cfg_get(n, "xon") : NULL;
  out->xon = xon_at ? in.xon : out->dynamic ? 2 * (uint64_t)mtu_wire : out->xoff / 2;
  if (!out->dynamic && out->xon >= out->xoff)
    return fab_cfg_fail(xon_at ? xon_at : in.xoff, err, "xon (%" G_GUINT64_FORMAT " B) must be below xoff (%"
                        G_GUINT64_FORMAT " B)", out->xon, out->xoff);
  if (!out->dynamic && out->xoff < mtu_wire)
    return fab_cfg_fail(in.xoff, err, "xoff %" G_GUINT64_FORMAT " B is below one packet (%u B)", out->xoff, mtu_wire);
  out->headroom = 0; /* auto */
  if (in.headroom) {
    if (!size_or(in.headroom, "auto", &out->headroom, &word, err)) return FALSE;
    if (!word && out->headroom < mtu_wire)
      return fab_cfg_fail(in.headroom, err, "headroom %" G_GUINT64_FORMAT " B is below one packet (%u B)",
                          out->headroom, mtu_wire);
    if (word) out->headroom = 0;
  }
  out->response = in.response;
  out->quanta = (uint32_t)in.quanta;
  /* a refresh (sent at half the pause) may wait behind one full packet: the
  ** pause must outlast two packets plus the frame, or it lapses between refreshes */
  uint64_t min_quanta = (2 * ((uint64_t)mtu_wire + FAB_PAUSE_WIRE) + 63) / 64;
  if (out->enabled && out->quanta < min_quanta)
    return fab_cfg_fail(fab_cfg_get(n, "quanta"), err, "quanta %u (x 512 bit times) is shorter than two packets "
                        "of %u B (expected at least %" G_GUINT64_FORMAT ")", out->quanta, mtu_wire, min_quanta);
  out->mtu_wire = mtu_wire;
  out->watchdog = in.watchdog;
  return TRUE;
}

static gboolean read_ecn(const FabCfgNode *n, FabEcnCfg *out, GError **err) {
  EcnIn in = {0};
  if (!fab_cfg_apply(n, NULL, ecn_schema, &in, err)) return FALSE;
  if (in.kmin > in.kmax)
    return fab_cfg_fail(fab_cfg_get(n, "kmin"), err, "kmin (%" G_GUINT64_FORMAT " B) must be <= kmax (%"
                        G_GUINT64_FORMAT " B)", in.kmin, in.kmax);
  if (in.enabled && in.pmax <= 0)
    return fab_cfg_fail(fab_cfg_get(n, "pmax"), err, "pmax must be above 0 when ECN is enabled");
  *out = (FabEcnCfg){in.enabled, in.kmin, in.kmax, in.pmax, in.mark == 1};
  return TRUE;
}

/* A feature a later version models: accepted only as `{enabled: false}`. */
static gboolean not_yet(const FabCfgNode *n, const char *what, GError **err) {
  FeatureIn f = {0};
  if (!n) return TRUE;
  if (!fab_cfg_apply(n, NULL, feature_schema, &f, err)) return FALSE;
  if (f.enabled)
    return fab_cfg_fail(fab_cfg_get(n, "enabled"), err,
                        "%s is not modelled in this version of fabsim (only enabled: false)", what);
  return TRUE;
}

static gboolean set_only_for(const FabCfgNode *topo, const char *key, const char *kinds, GError **err) {
  const FabCfgNode *n = fab_cfg_get(topo, key);
  if (n) return fab_cfg_fail(n, err, "not used by this topology kind (only by %s)", kinds);
  return TRUE;
}

static gboolean read_topology(const FabCfgNode *node, const ClusterIn *cl, const FabCfgNode *cl_node,
                              FabTopoSpec *t, GError **err) {
  TopoIn in = {0};
  if (!fab_cfg_apply(node, NULL, topo_schema, &in, err)) return FALSE;
  t->kind = (FabTopoKind)in.kind;
  /* for GPU nodes the network's hosts are the NIC ports */
  const char *what = cl->rails ? "NIC ports (nodes x nics_per_node)" : "nodes";
  const FabCfgNode *nodes_at = cl_node ? fab_cfg_get(cl_node, "nodes") : NULL;
  if (t->kind != FAB_TOPO_RING &&
      (!set_only_for(node, "switches", "ring", err) || !set_only_for(node, "hosts_per_switch", "ring", err)))
    return FALSE;
  switch (t->kind) {
  case FAB_TOPO_SINGLE_SWITCH:
    if (!set_only_for(node, "hosts_per_leaf", "leaf-spine, fat-tree", err) ||
        !set_only_for(node, "leaves", "leaf-spine", err) || !set_only_for(node, "spines", "leaf-spine", err) ||
        !set_only_for(node, "oversubscription", "leaf-spine, fat-tree", err) ||
        !set_only_for(node, "k", "fat-tree", err))
      return FALSE;
    if (!cl->nodes)
      return fab_cfg_fail(cl_node ? cl_node : node, err,
                          "single-switch needs cluster.nodes (the number of hosts)");
    if (cl->nodes > 65000) return fab_cfg_fail(nodes_at, err, "a single switch has at most 65000 ports");
    t->hosts = (uint32_t)cl->nodes;
    return TRUE;
  case FAB_TOPO_LEAF_SPINE: {
    if (!set_only_for(node, "k", "fat-tree", err)) return FALSE;
    if (!in.hosts_per_leaf) return fab_cfg_fail(node, err, "leaf-spine needs hosts_per_leaf");
    t->hosts_per_leaf = (uint32_t)in.hosts_per_leaf;
    if (in.leaves) {
      t->leaves = (uint32_t)in.leaves;
      if (cl->nodes && cl->nodes != in.leaves * in.hosts_per_leaf)
        return fab_cfg_fail(nodes_at ? nodes_at : node, err, "%" G_GUINT64_FORMAT " %s, but the topology has %" G_GUINT64_FORMAT
                            " (leaves x hosts_per_leaf)", cl->nodes, what, in.leaves * in.hosts_per_leaf);
    } else {
      if (!cl->nodes) return fab_cfg_fail(node, err, "leaf-spine needs leaves (or cluster.nodes)");
      if (cl->nodes % in.hosts_per_leaf)
        return fab_cfg_fail(nodes_at ? nodes_at : node, err, "%" G_GUINT64_FORMAT " %s is not a multiple of "
                            "hosts_per_leaf %" G_GUINT64_FORMAT, cl->nodes, what, in.hosts_per_leaf);
      t->leaves = (uint32_t)(cl->nodes / in.hosts_per_leaf);
    }
    if (in.spines && in.oversubscription > 0)
      return fab_cfg_fail(fab_cfg_get(node, "oversubscription"), err, "give spines or oversubscription, not both");
    if (in.spines) {
      t->spines = (uint32_t)in.spines;
    } else {
      double r = in.oversubscription > 0 ? in.oversubscription : 1.0;
      double s = (double)in.hosts_per_leaf / r;
      if (s < 1 || s != (double)(uint64_t)s)
        return fab_cfg_fail(fab_cfg_get(node, "oversubscription"), err,
                            "hosts_per_leaf %" G_GUINT64_FORMAT " / oversubscription %g = %.3g spines, not a "
                            "whole number (use a ratio that divides %" G_GUINT64_FORMAT ", or give spines)",
                            in.hosts_per_leaf, r, s, in.hosts_per_leaf);
      t->spines = (uint32_t)s;
    }
    if ((uint64_t)t->leaves * t->hosts_per_leaf > (1u << 24))
      return fab_cfg_fail(node, err, "too many hosts (at most 16777216)");
    if (t->hosts_per_leaf + t->spines > 65000 || t->leaves > 65000)
      return fab_cfg_fail(node, err, "a switch has at most 65000 ports");
    t->hosts = t->leaves * t->hosts_per_leaf;
    return TRUE;
  }
  case FAB_TOPO_MULTI_RAIL: {
    if (!set_only_for(node, "leaves", "leaf-spine", err) || !set_only_for(node, "k", "fat-tree", err) ||
        !set_only_for(node, "oversubscription", "leaf-spine, fat-tree", err))
      return FALSE;
    if (!cl->rails)
      return fab_cfg_fail(fab_cfg_get(node, "kind"), err, "multi-rail needs GPU nodes (cluster.node other than "
                          "host): plane i joins NIC i of every node");
    uint64_t nodes = cl->nodes / cl->rails;
    if (!in.hosts_per_leaf) return fab_cfg_fail(node, err, "multi-rail needs hosts_per_leaf (nodes per leaf)");
    if (nodes % in.hosts_per_leaf)
      return fab_cfg_fail(fab_cfg_get(node, "hosts_per_leaf"), err, "%" G_GUINT64_FORMAT " nodes is not a multiple "
                          "of hosts_per_leaf %" G_GUINT64_FORMAT, nodes, in.hosts_per_leaf);
    t->k = cl->rails;                               /* planes */
    t->hosts_per_leaf = (uint32_t)in.hosts_per_leaf;
    t->leaves = (uint32_t)(nodes / in.hosts_per_leaf); /* per plane */
    t->spines = in.spines ? (uint32_t)in.spines : t->hosts_per_leaf;
    if (t->hosts_per_leaf + t->spines > 65000 || t->leaves > 65000)
      return fab_cfg_fail(node, err, "a switch has at most 65000 ports");
    t->hosts = (uint32_t)cl->nodes;
    return TRUE;
  }
  case FAB_TOPO_RAIL: {
    if (!set_only_for(node, "hosts_per_leaf", "leaf-spine, fat-tree", err) ||
        !set_only_for(node, "leaves", "leaf-spine", err) || !set_only_for(node, "k", "fat-tree", err) ||
        !set_only_for(node, "oversubscription", "leaf-spine, fat-tree", err))
      return FALSE;
    if (!cl->rails)
      return fab_cfg_fail(fab_cfg_get(node, "kind"), err, "rail-optimized needs GPU nodes (cluster.node other than "
                          "host): rail i joins NIC i of every node");
    t->leaves = cl->rails;                          /* rail switches */
    t->hosts_per_leaf = (uint32_t)(cl->nodes / cl->rails); /* nodes: one port each per rail */
    t->spines = in.spines ? (uint32_t)in.spines : cl->rails;
    if (t->hosts_per_leaf + t->spines > 65000) return fab_cfg_fail(node, err, "a switch has at most 65000 ports");
    t->hosts = (uint32_t)cl->nodes;
    return TRUE;
  }
  case FAB_TOPO_RING: {
    if (!set_only_for(node, "hosts_per_leaf", "leaf-spine, fat-tree", err) ||
        !set_only_for(node, "leaves", "leaf-spine", err) || !set_only_for(node, "spines", "leaf-spine", err) ||
        !set_only_for(node, "oversubscription", "leaf-spine, fat-tree", err) ||
        !set_only_for(node, "k", "fat-tree", err))
      return FALSE;
    if (!in.switches || !in.hosts_per_switch)
      return fab_cfg_fail(node, err, "ring needs switches (>= 3) and hosts_per_switch");
    t->leaves = (uint32_t)in.switches;
    t->hosts_per_leaf = (uint32_t)in.hosts_per_switch;
    t->hosts = t->leaves * t->hosts_per_leaf;
    if (cl->nodes && cl->nodes != t->hosts)
      return fab_cfg_fail(nodes_at, err, "%" G_GUINT64_FORMAT " nodes, but the ring has %u", cl->nodes, t->hosts);
    return TRUE;
  }
  case FAB_TOPO_FAT_TREE: {
    if (!set_only_for(node, "hosts_per_leaf", "leaf-spine", err) ||
        !set_only_for(node, "leaves", "leaf-spine", err) || !set_only_for(node, "spines", "leaf-spine", err))
      return FALSE;
    if (!in.k) return fab_cfg_fail(node, err, "fat-tree needs k (the switch radix, even)");
    if (in.k % 2) return fab_cfg_fail(fab_cfg_get(node, "k"), err, "k must be even, not %" G_GUINT64_FORMAT, in.k);
    t->k = (uint32_t)in.k;
    double r = in.oversubscription > 0 ? in.oversubscription : 1.0;
    double hpe = (double)(in.k / 2) * r;
    if (hpe < 1 || hpe != (double)(uint64_t)hpe)
      return fab_cfg_fail(fab_cfg_get(node, "oversubscription"), err,
                          "k/2 x %g is not a whole number of hosts per edge switch", r);
    t->hosts_per_leaf = (uint32_t)hpe;
    uint64_t hosts = (uint64_t)in.k * (in.k / 2) * t->hosts_per_leaf;
    if (hosts > (1u << 24)) return fab_cfg_fail(node, err, "too many hosts (at most 16777216)");
    t->hosts = (uint32_t)hosts;
    if (cl->nodes && cl->nodes != hosts)
      return fab_cfg_fail(nodes_at, err, "%" G_GUINT64_FORMAT " nodes, but a k=%u fat-tree has %" G_GUINT64_FORMAT,
                          cl->nodes, t->k, hosts);
    return TRUE;
  }
  }
  return FALSE;
}

gboolean fab_fabric_cfg_read(const FabCfgNode *root, FabFabricCfg *out, GError **err) {
  ClusterIn cl = {0};
  NicIn nic = {0};
  FabricIn fab = {0};
  LinkIn link = {0};
  SwitchIn sw = {0};
  const FabCfgNode *cl_node = fab_cfg_get(root, "cluster");
  const FabCfgNode *fab_node = fab_cfg_get(root, "fabric");
  memset(out, 0, sizeof *out);
  if (!fab_cfg_apply(cl_node, root, cluster_schema, &cl, err)) return FALSE;
  if (!fab_cfg_apply(cl.nic, root, nic_schema, &nic, err)) return FALSE;
  if (!fab_node) return fab_cfg_fail(root, err, "missing required key 'fabric'");
  if (!fab_cfg_apply(fab_node, root, fabric_schema, &fab, err)) return FALSE;
  if (fab.transport == FAB_TRANSPORT_SRD)
    return fab_cfg_fail(fab_cfg_get(fab_node, "transport"), err,
                        "srd is not modelled in this version of fabsim (use rocev2 or infiniband)");
  if (!fab_cfg_apply(fab.link, root, link_schema, &link, err)) return FALSE;
  if (!fab_cfg_apply(fab.sw, fab_node, switch_schema, &sw, err)) return FALSE;
  if (!not_yet(sw.sharp, "SHARP", err)) return FALSE;
  FabTransport tr = fab_transport_get((FabTransportKind)fab.transport);
  if (!read_pfc(sw.pfc, (uint32_t)sw.priorities, (uint32_t)link.mtu + tr.data_overhead, &out->sw.pfc, err) ||
      !read_ecn(sw.ecn, &out->sw.ecn, err))
    return FALSE;
  if (!read_cc(fab.cc, &out->nic.cc, err)) return FALSE;
  uint64_t preset_nic_bps = 0;
  if (cl.node != 0) { /* GPU nodes: the network sees their NIC ports */
    if (!read_gpu_nodes(cl_node, &cl, &nic, &out->gpu, &preset_nic_bps, err)) return FALSE;
    ClusterIn att = cl;
    att.nodes = (uint64_t)out->gpu.nodes * out->gpu.nics_per_node;
    att.rails = out->gpu.nics_per_node;
    if (!read_topology(fab.topology, &att, NULL, &out->topo, err)) return FALSE;
    if (out->topo.hosts != att.nodes)
      return fab_cfg_fail(fab.topology, err, "the topology has %u NIC ports, but %u nodes x %u NICs need %" G_GUINT64_FORMAT,
                          out->topo.hosts, out->gpu.nodes, out->gpu.nics_per_node, att.nodes);
  } else {
    static const char *const gpu_only[] = {"gpus_per_node", "nics_per_node", "nvlink_domain", "nvlink", "pcie",
                                           "gpu", "pxn", NULL};
    for (int i = 0; cl_node && gpu_only[i]; i++)
      if (fab_cfg_get(cl_node, gpu_only[i]))
        return fab_cfg_fail(fab_cfg_get(cl_node, gpu_only[i]), err,
                            "'%s' is for GPU nodes; node: host has one NIC and no GPU", gpu_only[i]);
    if (!read_topology(fab.topology, &cl, cl_node, &out->topo, err)) return FALSE;
  }
  if (sw.buffer < link.mtu + 128)
    return fab_cfg_fail(fab_cfg_get(fab.sw, "buffer"), err, "buffer %" G_GUINT64_FORMAT
                        " B cannot hold one packet of mtu %" G_GUINT64_FORMAT " (expected at least %"
                        G_GUINT64_FORMAT " B: mtu + 128 B of headers)", sw.buffer, link.mtu, link.mtu + 128);

  out->topo.link_bps = link.bandwidth;
  out->topo.host_bps = nic.bandwidth ? nic.bandwidth : preset_nic_bps ? preset_nic_bps : link.bandwidth;
  out->topo.link_latency = link.latency;
  out->sw.latency = sw.latency;
  out->sw.buffer = sw.buffer;
  out->sw.alpha = sw.alpha;
  out->sw.nprio = (uint32_t)sw.priorities;
  out->sw.ecmp_seed = sw.ecmp_seed;
  out->nic.bps = out->topo.host_bps;
  out->nic.mtu = (uint32_t)link.mtu;
  out->nic.rto = nic.rto;
  out->nic.ack_interval = (uint32_t)nic.ack_interval;
  out->nic.max_timeouts = (uint32_t)nic.max_timeouts;
  out->nic.nprio = out->sw.nprio;
  out->nic.transport = fab_transport_get((FabTransportKind)fab.transport);
  out->nic.ecmp_seed = sw.ecmp_seed;
  /* settings that would silently do nothing */
  if (out->nic.cc.kind == FAB_CC_DCQCN && !out->sw.ecn.enabled)
    return fab_cfg_fail(fab_cfg_get(fab.cc, "algorithm"), err, "dcqcn reacts to ECN marks: enable "
                        "fabric.switch.ecn, or nothing will ever slow down");
  if (out->sw.ecn.enabled && out->nic.cc.kind == FAB_CC_NONE)
    return fab_cfg_fail(fab_cfg_get(sw.ecn, "enabled"), err, "ECN marks only ECN-capable packets, and congestion "
                        "control none sends none: set fabric.congestion_control.algorithm: dcqcn");
  if (out->nic.cc.kind == FAB_CC_DCQCN) {
    const FabDcqcnCfg *d = &out->nic.cc.dcqcn;
    uint64_t line = out->topo.host_bps;
    const char *key = d->min_rate_bps > line ? "min_rate" : d->rai_bps > line ? "rai" : d->rhai_bps > line ? "rhai"
                      : d->first_cnp_rate_bps > line ? "first_cnp_rate" : NULL;
    if (key)
      return fab_cfg_fail(fab_cfg_get(fab.cc, key) ? fab_cfg_get(fab.cc, key) : fab.cc, err,
                          "%s is above the line rate (%.6g Gbps)", key, (double)line / 1e9);
  }
  if (out->gpu.gpus_per_node) {
    out->nic.nvl_domain = out->gpu.nvlink_domain;
    out->nic.nvl_bps = out->gpu.nvlink_bps;
    out->nic.nvl_mtu = out->gpu.segment;
    out->nic.nvl_overhead = NVL_OVERHEAD;
    out->nic.pxn_rails = out->gpu.pxn ? out->gpu.gpus_per_node : 0;
  }
  const FabTopoSpec *t = &out->topo;
  uint32_t ports = t->kind == FAB_TOPO_SINGLE_SWITCH ? t->hosts
                   : t->kind == FAB_TOPO_LEAF_SPINE  ? MAX(t->hosts_per_leaf + t->spines, t->leaves)
                   : t->kind == FAB_TOPO_RING        ? t->hosts_per_leaf + 2
                   : t->kind == FAB_TOPO_RAIL        ? MAX(t->hosts_per_leaf + t->spines, t->leaves)
                   : t->kind == FAB_TOPO_MULTI_RAIL  ? MAX(t->hosts_per_leaf + t->spines, t->leaves)
                                                     : MAX(t->hosts_per_leaf + t->k / 2, t->k);
  out->sw.mtu_wire = (uint32_t)link.mtu + out->nic.transport.data_overhead;
  if (fab.transport == FAB_TRANSPORT_INFINIBAND) {
    /* credit-based flow control: every (ingress port, VL) owns a slice of the buffer */
    if (out->sw.pfc.enabled)
      return fab_cfg_fail(fab_cfg_get(sw.pfc, "enabled"), err, "infiniband uses credit-based link-level flow "
                          "control, not PFC (PFC is for rocev2)");
    uint64_t c = 0;
    gboolean is_auto = TRUE;
    if (sw.credits && !size_or(sw.credits, "auto", &c, &is_auto, err)) return FALSE;
    if (is_auto) c = sw.buffer / ((uint64_t)ports * out->sw.nprio);
    if (c < out->sw.mtu_wire)
      return fab_cfg_fail(sw.credits ? sw.credits : fab_cfg_get(fab.sw, "buffer"), err, "%" G_GUINT64_FORMAT
                          " B of credit per port and VL is less than one packet (%u B): a larger buffer, fewer "
                          "priorities (VLs), or a smaller mtu", c, out->sw.mtu_wire);
    if (c > sw.buffer / ((uint64_t)ports * out->sw.nprio))
      return fab_cfg_fail(sw.credits, err, "%u ports x %u VLs x %" G_GUINT64_FORMAT " B of credit is more than the "
                          "buffer (%" G_GUINT64_FORMAT " B)", ports, out->sw.nprio, c, sw.buffer);
    out->sw.credits = c;
  } else if (sw.credits) {
    return fab_cfg_fail(sw.credits, err, "credits are for transport infiniband");
  }
  if (out->sw.pfc.enabled) { /* reserve the headroom out of the buffer, at the worst port */
    const FabPfcCfg *c = &out->sw.pfc;
    uint64_t h = c->headroom ? c->headroom
                             : fab_pfc_headroom_auto(MAX(t->link_bps, t->host_bps), t->link_latency, c->response,
                                                     c->mtu_wire);
    uint64_t per = (uint64_t)ports * (uint64_t)__builtin_popcount(c->lossless), reserve;
    if (__builtin_mul_overflow(per, h, &reserve)) reserve = UINT64_MAX;
    if (reserve >= sw.buffer - c->mtu_wire)
      return fab_cfg_fail(fab_cfg_get(fab.sw, "buffer"), err, "buffer %" G_GUINT64_FORMAT " B leaves nothing "
                          "shared after PFC headroom (%u ports x %d lossless priorities x %" G_GUINT64_FORMAT
                          " B = %" G_GUINT64_FORMAT " B; list only the lossless classes in "
                          "fabric.switch.pfc.priorities, or give a smaller headroom)", sw.buffer, ports, __builtin_popcount(c->lossless), h,
                          reserve);
    out->sw.buffer = sw.buffer - reserve; /* the shared part */
    out->sw.pfc_reserved = reserve;
  }
  return TRUE;
}

/* ---- building ---------------------------------------------------------- */

static FabSwitch *add_switch(FabTopology *t, const FabFabricCfg *cfg, const char *prefix, uint32_t i,
                             uint32_t nports) {
  char name[FAB_NAME_LEN];
  g_snprintf(name, sizeof name, "%s%u", prefix, i);
  FabSwitch *sw = fab_switch_new(t->nswitches, name, &cfg->sw, nports, t->nattach);
  t->switches[t->nswitches++] = sw;
  return sw;
}

/* Join host h to port `p` of `sw`. */
/* Join network attachment h (a host's NIC, or a GPU node's NIC port) to port p of sw. */
static void link_host(FabTopology *t, uint32_t h, FabSwitch *sw, uint32_t p) {
  FabPort *a = t->attach[h];
  fab_port_set_rate(a, t->spec.host_bps);
  a->latency = t->spec.link_latency;
  fab_port_connect(a, fab_switch_port(sw, p, t->spec.host_bps, t->spec.link_latency));
}

static void link_switches(FabTopology *t, FabSwitch *a, uint32_t pa, FabSwitch *b, uint32_t pb) {
  fab_port_connect(fab_switch_port(a, pa, t->spec.link_bps, t->spec.link_latency),
                   fab_switch_port(b, pb, t->spec.link_bps, t->spec.link_latency));
}

/* Route every endpoint in [lo, hi) to the single port p. */
static void route_range_to_port(FabSwitch *sw, uint32_t lo, uint32_t hi, uint32_t p) {
  uint32_t g = fab_switch_add_group(sw, &p, 1);
  for (uint32_t d = lo; d < hi; d++) fab_switch_set_route(sw, d, g);
}

/* Route every endpoint outside [lo, hi) to the group of ports [p0, p0+n). */
static void route_others_to_group(FabSwitch *sw, uint32_t lo, uint32_t hi, uint32_t p0, uint32_t n) {
  uint32_t *ports = g_new(uint32_t, n);
  for (uint32_t i = 0; i < n; i++) ports[i] = p0 + i;
  uint32_t g = fab_switch_add_group(sw, ports, n);
  g_free(ports);
  for (uint32_t d = 0; d < sw->nendpoints; d++)
    if (d < lo || d >= hi) fab_switch_set_route(sw, d, g);
}

static void build_single(FabTopology *t, const FabFabricCfg *cfg) {
  FabSwitch *sw = add_switch(t, cfg, "switch", 0, t->nattach);
  for (uint32_t h = 0; h < t->nattach; h++) {
    link_host(t, h, sw, h);
    route_range_to_port(sw, h, h + 1, h);
  }
}

static void build_leaf_spine(FabTopology *t, const FabFabricCfg *cfg) {
  const FabTopoSpec *s = &t->spec;
  uint32_t hpl = s->hosts_per_leaf, L = s->leaves, S = s->spines;
  for (uint32_t l = 0; l < L; l++) add_switch(t, cfg, "leaf", l, hpl + S);
  for (uint32_t j = 0; j < S; j++) add_switch(t, cfg, "spine", j, L);
  for (uint32_t l = 0; l < L; l++) {
    FabSwitch *leaf = t->switches[l];
    for (uint32_t i = 0; i < hpl; i++) {
      link_host(t, l * hpl + i, leaf, i);
      route_range_to_port(leaf, l * hpl + i, l * hpl + i + 1, i);
    }
    route_others_to_group(leaf, l * hpl, (l + 1) * hpl, hpl, S);
    for (uint32_t j = 0; j < S; j++) link_switches(t, leaf, hpl + j, t->switches[L + j], l);
  }
  for (uint32_t j = 0; j < S; j++)
    for (uint32_t l = 0; l < L; l++) route_range_to_port(t->switches[L + j], l * hpl, (l + 1) * hpl, l);
}

static void build_ring(FabTopology *t, const FabFabricCfg *cfg) {
  uint32_t n = t->spec.leaves, h = t->spec.hosts_per_leaf;
  for (uint32_t s = 0; s < n; s++) add_switch(t, cfg, "ring", s, h + 2);
  for (uint32_t s = 0; s < n; s++) { /* port h: clockwise out to the next; h+1: from the previous */
    FabSwitch *sw = t->switches[s];
    for (uint32_t i = 0; i < h; i++) {
      link_host(t, s * h + i, sw, i);
      route_range_to_port(sw, s * h + i, s * h + i + 1, i);
    }
    route_others_to_group(sw, s * h, (s + 1) * h, h, 1);
    link_switches(t, sw, h, t->switches[(s + 1) % n], h + 1);
  }
}

/* Rail i joins NIC i of every node (attachment n x rails + i on port n); every
** rail switch has one uplink to each spine, and spine j one port per rail. */
static void build_rail(FabTopology *t, const FabFabricCfg *cfg) {
  uint32_t R = t->spec.leaves, nodes = t->spec.hosts_per_leaf, S = t->spec.spines;
  for (uint32_t r = 0; r < R; r++) add_switch(t, cfg, "rail", r, nodes + S);
  for (uint32_t j = 0; j < S; j++) add_switch(t, cfg, "spine", j, R);
  uint32_t *up = g_new(uint32_t, S);
  for (uint32_t j = 0; j < S; j++) up[j] = nodes + j;
  for (uint32_t r = 0; r < R; r++) {
    FabSwitch *rs = t->switches[r];
    uint32_t g = fab_switch_add_group(rs, up, S);
    for (uint32_t a = 0; a < t->nattach; a++) fab_switch_set_route(rs, a, g);
    for (uint32_t n = 0; n < nodes; n++) {
      link_host(t, n * R + r, rs, n);
      route_range_to_port(rs, n * R + r, n * R + r + 1, n);
    }
    for (uint32_t j = 0; j < S; j++) link_switches(t, rs, nodes + j, t->switches[R + j], r);
  }
  g_free(up);
  for (uint32_t j = 0; j < S; j++) {
    FabSwitch *sp = t->switches[R + j];
    uint32_t *grp = g_new(uint32_t, R);
    for (uint32_t r = 0; r < R; r++) grp[r] = fab_switch_add_group(sp, &r, 1);
    for (uint32_t a = 0; a < t->nattach; a++) fab_switch_set_route(sp, a, grp[a % R]);
    g_free(grp);
  }
}

/* One leaf-spine plane per rail: leaf l of plane p holds NIC p of nodes
** [l x hpl, (l+1) x hpl) (attachment node x planes + p). Other planes' NICs
** have no route: the planes are not joined. */
static void build_multi_rail(FabTopology *t, const FabFabricCfg *cfg) {
  uint32_t P = t->spec.k, L = t->spec.leaves, H = t->spec.hosts_per_leaf, S = t->spec.spines;
  char name[FAB_NAME_LEN];
  for (uint32_t p = 0; p < P; p++) {
    uint32_t base = t->nswitches;
    for (uint32_t l = 0; l < L; l++) {
      g_snprintf(name, sizeof name, "p%u.leaf", p);
      add_switch(t, cfg, name, l, H + S);
    }
    for (uint32_t j = 0; j < S; j++) {
      g_snprintf(name, sizeof name, "p%u.spine", p);
      add_switch(t, cfg, name, j, L);
    }
    uint32_t *up = g_new(uint32_t, S);
    for (uint32_t j = 0; j < S; j++) up[j] = H + j;
    for (uint32_t l = 0; l < L; l++) {
      FabSwitch *leaf = t->switches[base + l];
      uint32_t g = fab_switch_add_group(leaf, up, S);
      for (uint32_t n = 0; n < L * H; n++) fab_switch_set_route(leaf, n * P + p, g);
      for (uint32_t i = 0; i < H; i++) {
        uint32_t a = (l * H + i) * P + p;
        link_host(t, a, leaf, i);
        route_range_to_port(leaf, a, a + 1, i);
      }
      for (uint32_t j = 0; j < S; j++) link_switches(t, leaf, H + j, t->switches[base + L + j], l);
    }
    g_free(up);
    for (uint32_t j = 0; j < S; j++) {
      FabSwitch *sp = t->switches[base + L + j];
      for (uint32_t l = 0; l < L; l++) {
        uint32_t g = fab_switch_add_group(sp, &l, 1);
        for (uint32_t i = 0; i < H; i++) fab_switch_set_route(sp, (l * H + i) * P + p, g);
      }
    }
  }
}

static void build_fat_tree(FabTopology *t, const FabFabricCfg *cfg) {
  uint32_t k = t->spec.k, h = k / 2, hpe = t->spec.hosts_per_leaf;
  uint32_t nedge = k * h, ncore = h * h;
  uint32_t per_pod = h * hpe; /* hosts in a pod */
  for (uint32_t e = 0; e < nedge; e++) add_switch(t, cfg, "edge", e, hpe + h);
  for (uint32_t a = 0; a < nedge; a++) add_switch(t, cfg, "agg", a, k);
  for (uint32_t c = 0; c < ncore; c++) add_switch(t, cfg, "core", c, k);
  FabSwitch **edge = t->switches, **agg = t->switches + nedge, **core = t->switches + 2 * nedge;
  for (uint32_t e = 0; e < nedge; e++) { /* edge: hosts down, aggs of its pod up */
    uint32_t pod = e / h, lo = e * hpe;
    for (uint32_t i = 0; i < hpe; i++) {
      link_host(t, lo + i, edge[e], i);
      route_range_to_port(edge[e], lo + i, lo + i + 1, i);
    }
    for (uint32_t j = 0; j < h; j++) link_switches(t, edge[e], hpe + j, agg[pod * h + j], e % h);
    route_others_to_group(edge[e], lo, lo + hpe, hpe, h);
  }
  for (uint32_t a = 0; a < nedge; a++) { /* agg: edges of its pod down, cores up */
    uint32_t pod = a / h, j = a % h;
    for (uint32_t e = 0; e < h; e++) {
      uint32_t lo = (pod * h + e) * hpe;
      route_range_to_port(agg[a], lo, lo + hpe, e);
    }
    for (uint32_t c = 0; c < h; c++) link_switches(t, agg[a], h + c, core[j * h + c], pod);
    route_others_to_group(agg[a], pod * per_pod, (pod + 1) * per_pod, h, h);
  }
  for (uint32_t c = 0; c < ncore; c++) /* core: one port per pod */
    for (uint32_t pod = 0; pod < k; pod++) route_range_to_port(core[c], pod * per_pod, (pod + 1) * per_pod, pod);
}

/* ---- GPU nodes ------------------------------------------------------------
** Each group of GPUs that share NICs (or one GPU and its several NICs) hangs
** off one PCIe element: a switch whose first ports are the GPUs' PCIe links
** and whose last ports are the NICs' network ports. Each NVLink domain is one
** NVSwitch element with a port per GPU. After the network is built over the
** NIC ports, its routes are re-keyed from NIC ports to GPU ranks. */

typedef struct GpuLayout {
  uint32_t G, N;             /* GPUs and NICs per node */
  uint32_t gpg, npg;         /* GPUs and NICs per PCIe group */
  uint32_t groups;           /* PCIe groups per node */
} GpuLayout;

/* Bytes in flight at `bps` over `rtt` ps. */
static uint64_t bdp(uint64_t bps, fab_time_t rtt) {
  return (uint64_t)(((unsigned __int128)bps * rtt + 8 * FAB_S - 1) / (8 * FAB_S));
}

static uint32_t nvl_domains(uint32_t ranks, uint32_t domain) { return (ranks + domain - 1) / domain; }

static GpuLayout gpu_layout(const FabGpuSpec *g) {
  GpuLayout l = {g->gpus_per_node, g->nics_per_node, 1, 1, 0};
  if (l.N >= l.G) l.npg = l.N / l.G;
  else l.gpg = l.G / l.N;
  l.groups = l.G / l.gpg;
  return l;
}

/* The NIC ports (attachments) serving rank r: [*first, *first + npg). */
static uint32_t rank_attach(const GpuLayout *l, uint32_t r, uint32_t *first) {
  uint32_t node = r / l->G, local = r % l->G, grp = local / l->gpg;
  *first = node * l->N + grp * l->npg;
  return l->npg;
}

static void build_gpu_edges(FabTopology *t, const FabFabricCfg *cfg, GpuLayout *l) {
  const FabGpuSpec *g = &cfg->gpu;
  /* PCIe and NVLink are credit-based: a GPU sends only what the PCIe element
  ** or the NVSwitch can hold (per port and priority: the link's bandwidth x
  ** round trip, plus 4 full packets), so a slower NIC or a congested NVLink
  ** port backpressures the GPU instead of queueing without bound. No PFC or
  ** ECN there. */
  FabSwitchCfg sc = cfg->sw;
  sc.latency = 0;
  sc.alpha = 1e6;
  sc.pfc = (FabPfcCfg){0};
  sc.ecn = (FabEcnCfg){0};
  uint32_t pcie_unit = cfg->sw.mtu_wire, nvl_unit = g->segment + cfg->nic.nvl_overhead;
  uint64_t pcie_bps = g->gpudirect ? g->pcie_bps : MIN(g->pcie_bps, g->host_bps);
  fab_time_t pcie_lat = g->pcie_latency + (g->gpudirect ? 0 : g->host_latency);
  char name[FAB_NAME_LEN];
  for (uint32_t n = 0; n < g->nodes; n++)
    for (uint32_t j = 0; j < l->groups; j++) {
      g_snprintf(name, sizeof name, "pcie%u.%u", n, j);
      sc.credits = bdp(pcie_bps, 2 * pcie_lat) + 4ULL * pcie_unit;
      sc.buffer = sc.credits * (l->gpg + l->npg) * sc.nprio;
      FabSwitch *ps = fab_switch_new(t->nswitches, name, &sc, l->gpg + l->npg, t->nhosts);
      t->switches[t->nswitches++] = ps;
      uint32_t r0 = n * l->G + j * l->gpg;
      uint32_t *up = g_new(uint32_t, l->npg);
      for (uint32_t i = 0; i < l->npg; i++) {
        up[i] = l->gpg + i;
        t->attach[n * l->N + j * l->npg + i] = &ps->ports[l->gpg + i];
        fab_port_init(&ps->ports[l->gpg + i], &ps->node, l->gpg + i, t->spec.host_bps, t->spec.link_latency,
                      sc.nprio);
      }
      uint32_t ug = fab_switch_add_group(ps, up, l->npg);
      g_free(up);
      for (uint32_t r = 0; r < t->nhosts; r++) fab_switch_set_route(ps, r, ug);
      for (uint32_t i = 0; i < l->gpg; i++) { /* the GPUs' PCIe links */
        FabNic *gpu = &t->nics[r0 + i];
        fab_port_set_rate(&gpu->port, pcie_bps);
        gpu->port.latency = pcie_lat;
        fab_port_connect(&gpu->port, fab_switch_port(ps, i, pcie_bps, pcie_lat));
        fab_port_set_credits(&gpu->port, sc.credits, pcie_unit);
        fab_switch_set_route(ps, r0 + i, fab_switch_add_group(ps, &i, 1));
      }
    }
  if (g->nvlink_domain) /* one NVSwitch element per domain; the latency is split over its two links */
    for (uint32_t d = 0; d < nvl_domains(t->nhosts, g->nvlink_domain); d++) {
      /* the last domain may be partial (a few trays of an NVL72 rack) */
      uint32_t size = MIN(g->nvlink_domain, t->nhosts - d * g->nvlink_domain);
      g_snprintf(name, sizeof name, "nvs%u", d);
      sc.credits = bdp(g->nvlink_bps, g->nvlink_latency) + 4ULL * nvl_unit;
      sc.buffer = sc.credits * size * sc.nprio;
      FabSwitch *nv = fab_switch_new(t->nswitches, name, &sc, size, t->nhosts);
      t->switches[t->nswitches++] = nv;
      t->nvs = g_renew(FabSwitch *, t->nvs, t->nnvs + 1);
      t->nvs[t->nnvs++] = nv;
      for (uint32_t i = 0; i < size; i++) {
        FabNic *gpu = &t->nics[d * g->nvlink_domain + i];
        gpu->nvl.latency = g->nvlink_latency / 2;
        fab_port_connect(&gpu->nvl, fab_switch_port(nv, i, g->nvlink_bps, g->nvlink_latency - g->nvlink_latency / 2));
        fab_port_set_credits(&gpu->nvl, sc.credits, nvl_unit);
        fab_switch_set_route(nv, d * g->nvlink_domain + i, fab_switch_add_group(nv, &i, 1));
      }
      if (g->pxn) /* beyond the domain: to the local GPU on the destination's rail */
        for (uint32_t r = 0; r < t->nhosts; r++)
          if (r / g->nvlink_domain != d) {
            uint32_t relay = r % g->gpus_per_node;
            fab_switch_set_route(nv, r, fab_switch_add_group(nv, &relay, 1));
          }
    }
}

static int cmp_u32p(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Re-key a network switch's routes from NIC ports to GPU ranks: a rank's
** group is every port toward any of its NIC ports, keeping only the ports
** straight down to them when the switch has some. */
static void rekey_routes(FabTopology *t, FabSwitch *sw, const GpuLayout *l, GHashTable *network) {
  uint32_t *old = sw->route, nold = sw->nendpoints;
  sw->route = g_new(uint32_t, t->nhosts);
  memset(sw->route, 0xff, sizeof(uint32_t) * t->nhosts);
  sw->nendpoints = t->nhosts;
  GHashTable *groups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GArray *ports = g_array_new(FALSE, FALSE, sizeof(uint32_t)), *down = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  for (uint32_t r = 0; r < t->nhosts; r++) {
    uint32_t first, n = rank_attach(l, r, &first);
    g_array_set_size(ports, 0);
    g_array_set_size(down, 0);
    for (uint32_t a = first; a < first + n && a < nold; a++) {
      uint32_t grp = old[a];
      if (grp == UINT32_MAX) continue;
      for (uint32_t k = 0; k < sw->glen[grp]; k++) {
        uint32_t pidx = sw->gports[sw->goff[grp] + k];
        bool dup = false;
        for (guint q = 0; q < ports->len; q++) dup |= g_array_index(ports, uint32_t, q) == pidx;
        if (dup) continue;
        g_array_append_val(ports, pidx);
        if (!g_hash_table_contains(network, sw->ports[pidx].peer->owner)) g_array_append_val(down, pidx);
      }
    }
    GArray *use = down->len ? down : ports;
    if (!use->len) continue;
    qsort(use->data, use->len, sizeof(uint32_t), cmp_u32p);
    GString *key = g_string_new(NULL);
    for (guint q = 0; q < use->len; q++) g_string_append_printf(key, "%u,", g_array_index(use, uint32_t, q));
    gpointer gid;
    if (!g_hash_table_lookup_extended(groups, key->str, NULL, &gid)) {
      gid = GUINT_TO_POINTER(fab_switch_add_group(sw, (uint32_t *)(void *)use->data, use->len) + 1);
      g_hash_table_insert(groups, g_strdup(key->str), gid);
    }
    g_string_free(key, TRUE);
    sw->route[r] = GPOINTER_TO_UINT(gid) - 1;
  }
  g_array_free(ports, TRUE);
  g_array_free(down, TRUE);
  g_hash_table_destroy(groups);
  g_free(old);
}

FabTopology *fab_topology_build(const FabFabricCfg *cfg) {
  FabTopology *t = g_new0(FabTopology, 1);
  const FabGpuSpec *g = &cfg->gpu;
  GpuLayout l = {0};
  t->spec = cfg->topo;
  t->nattach = cfg->topo.hosts;
  t->nhosts = g->gpus_per_node ? g->nodes * g->gpus_per_node : cfg->topo.hosts;
  t->nics = g_new0(FabNic, t->nhosts);
  t->attach = g_new0(FabPort *, t->nattach);
  FabNicCfg nc = cfg->nic;
  nc.bps = g->gpus_per_node ? (g->gpudirect ? g->pcie_bps : MIN(g->pcie_bps, g->host_bps)) : cfg->topo.host_bps;
  for (uint32_t h = 0; h < t->nhosts; h++) {
    fab_nic_init(&t->nics[h], h, &nc, NULL, NULL, NULL, NULL);
    if (g->gpus_per_node) g_snprintf(t->nics[h].node.name, sizeof t->nics[h].node.name, "gpu%u", h);
    else t->attach[h] = &t->nics[h].port;
  }
  uint32_t nsw = 0;
  switch (cfg->topo.kind) {
  case FAB_TOPO_SINGLE_SWITCH: nsw = 1; break;
  case FAB_TOPO_LEAF_SPINE: nsw = cfg->topo.leaves + cfg->topo.spines; break;
  case FAB_TOPO_FAT_TREE: nsw = cfg->topo.k * cfg->topo.k + (cfg->topo.k / 2) * (cfg->topo.k / 2); break;
  case FAB_TOPO_RING: nsw = cfg->topo.leaves; break;
  case FAB_TOPO_RAIL: nsw = cfg->topo.leaves + cfg->topo.spines; break;
  case FAB_TOPO_MULTI_RAIL: nsw = cfg->topo.k * (cfg->topo.leaves + cfg->topo.spines); break;
  }
  t->nnet = nsw;
  uint32_t extra = 0;
  if (g->gpus_per_node) {
    l = gpu_layout(g);
    extra = g->nodes * l.groups + (g->nvlink_domain ? nvl_domains(t->nhosts, g->nvlink_domain) : 0);
  }
  t->switches = g_new0(FabSwitch *, nsw + extra);
  if (g->gpus_per_node) { /* the edge elements first, so the network can attach to their NIC ports */
    t->nswitches = nsw; /* network switches take numbers 0..nsw-1 */
    build_gpu_edges(t, cfg, &l);
    t->nswitches = 0;
  }
  switch (cfg->topo.kind) {
  case FAB_TOPO_SINGLE_SWITCH: build_single(t, cfg); break;
  case FAB_TOPO_LEAF_SPINE: build_leaf_spine(t, cfg); break;
  case FAB_TOPO_FAT_TREE: build_fat_tree(t, cfg); break;
  case FAB_TOPO_RING: build_ring(t, cfg); break;
  case FAB_TOPO_RAIL: build_rail(t, cfg); break;
  case FAB_TOPO_MULTI_RAIL: build_multi_rail(t, cfg); break;
  }
  g_assert(t->nswitches == nsw);
  if (g->gpus_per_node) {
    t->nswitches = nsw + extra;
    GHashTable *network = g_hash_table_new(NULL, NULL);
    for (uint32_t s = 0; s < nsw; s++) g_hash_table_add(network, &t->switches[s]->node);
    for (uint32_t s = 0; s < nsw; s++) rekey_routes(t, t->switches[s], &l, network);
    g_hash_table_destroy(network);
  }
  if (cfg->sw.credits) /* InfiniBand: each network switch ingress grants credits to the port feeding it */
    for (uint32_t s = 0; s < t->nnet; s++)
      for (uint32_t i = 0; i < t->switches[s]->nports; i++)
        fab_port_set_credits(t->switches[s]->ports[i].peer, cfg->sw.credits, cfg->sw.mtu_wire);
  return t;
}

void fab_topology_free(FabTopology *t) {
  if (!t) return;
  for (uint32_t i = 0; i < t->nswitches; i++) fab_switch_free(t->switches[i]);
  g_free(t->switches);
  g_free(t->nics);
  g_free(t->attach);
  g_free(t->nvs);
  g_free(t);
}

void fab_topology_foreach_port(FabTopology *t, void (*fn)(FabPort *pt, void *ctx), void *ctx) {
  for (uint32_t h = 0; h < t->nhosts; h++) {
    fn(&t->nics[h].port, ctx);
    if (t->nics[h].cfg.nvl_domain) fn(&t->nics[h].nvl, ctx);
  }
  for (uint32_t s = 0; s < t->nswitches; s++)
    for (uint32_t p = 0; p < t->switches[s]->nports; p++) fn(&t->switches[s]->ports[p], ctx);
}

char *fab_topology_describe(const FabTopoSpec *s) {
  switch (s->kind) {
  case FAB_TOPO_SINGLE_SWITCH:
    return g_strdup_printf("single-switch: %u hosts", s->hosts);
  case FAB_TOPO_LEAF_SPINE:
  {
    uint32_t a = s->hosts_per_leaf, b = s->spines; /* the ratio in lowest terms */
    while (b) {
      uint32_t t = a % b;
      a = b;
      b = t;
    }
    return g_strdup_printf("leaf-spine: %u leaves x %u hosts, %u spines (%u:%u at the leaf)", s->leaves,
                           s->hosts_per_leaf, s->spines, s->hosts_per_leaf / a, s->spines / a);
  }
  case FAB_TOPO_MULTI_RAIL:
    return g_strdup_printf("multi-rail: %u planes, each %u leaves x %u nodes, %u spines", s->k, s->leaves,
                           s->hosts_per_leaf, s->spines);
  case FAB_TOPO_RAIL:
    return g_strdup_printf("rail-optimized: %u rails x %u nodes, %u spines joining the rails", s->leaves,
                           s->hosts_per_leaf, s->spines);
  case FAB_TOPO_RING:
    return g_strdup_printf("ring: %u switches x %u hosts, clockwise routing", s->leaves, s->hosts_per_leaf);
  case FAB_TOPO_FAT_TREE:
    return g_strdup_printf("fat-tree: k=%u, %u hosts per edge, %u hosts, %u switches", s->k, s->hosts_per_leaf,
                           s->hosts, s->k * s->k + (s->k / 2) * (s->k / 2));
  }
  return g_strdup("?");
}

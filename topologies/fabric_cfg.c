/* The cluster: and fabric: sections of a scenario, read into FabFabricCfg.
** See topology.h.
**
** Every schema row names the model config field it fills (FAB_CFG_KEY with
** a nested field such as f.topo.link_bps), so a key cannot be read and then
** forgotten: what is not in a row is not a key. Rows whose default comes from
** a preset (the node preset, the DCQCN preset) have no `def`: the preset's
** values are put in place first, and the schema is applied over them. Keys
** whose value is read by hand (a size or a word, a list) are FAB_CFG_NODE
** rows into the node fields of Read; the checks that tie keys together
** follow the schemas. */
#include "fabric_cfg_int.h"
#include "presets.h"
#include "nccl_topo.h"
#include "graph.h"
#include <math.h>
#include "models/cc.h"
#include "models/dcqcn.h"
#include "models/ecmp.h"
#include <stddef.h>
#include <string.h>


const char *const fab_topo_kind_names[] = {"single-switch", "leaf-spine", "fat-tree", "ring", "rail-optimized",
                                         "multi-rail", "rail-only", "graph", NULL};
static const char *const ecn_marks_at[] = {"enqueue", "dequeue", NULL};
const char *const fab_ff_mode_names[] = {"off", "on", "auto", NULL}; /* FabFfMode order */

#define K(NAME, TYPE, FIELD, ...) FAB_CFG_KEY(NAME, TYPE, Read, FIELD, __VA_ARGS__)

static const FabCfgKey cluster_schema[] = {
  K("node", FAB_CFG_ENUM, f.gpu.preset_id, .def = "host", .choices = fab_preset_names),
  K("node_topology", FAB_CFG_STRING, node_topology), /* an NCCL topology dump: the node's layout (nccl_topo.h) */
  K("nodes", FAB_CFG_UINT, f.gpu.nodes, .min = 1, .max = 1 << 24),
  K("gpus_per_node", FAB_CFG_UINT, f.gpu.gpus_per_node, .min = 1, .max = 1024),
  K("nics_per_node", FAB_CFG_UINT, f.gpu.nics_per_node, .min = 1, .max = 1024),
  K("nvlink_domain", FAB_CFG_UINT, f.gpu.nvlink_domain, .min = 0, .max = 65536),
  K("nic", FAB_CFG_MAP, nic),
  K("nvlink", FAB_CFG_MAP, nvlink),
  K("pcie", FAB_CFG_MAP, pcie),
  K("gpu", FAB_CFG_MAP, gpu),
  K("pxn", FAB_CFG_BOOL, f.gpu.pxn, .def = "false"),
  K("cpu", FAB_CFG_ENUM, f.gpu.cpu, .choices = fab_cpu_names), /* GPU nodes: the preset's unless given */
  K("nccl", FAB_CFG_MAP, f.nccl), /* read by the workload layer (collective.h, fab_nccl_schema) */
  FAB_CFG_END_ROW,
};

static const FabCfgKey nic_schema[] = {
  K("bandwidth", FAB_CFG_RATE, f.topo.host_bps),
  K("rto", FAB_CFG_TIME, f.nic.rto, .def = "1ms", .min = 1e3, .max = 1e15),
  /* the endpoint's message rate: no public figure for a host's posting cost; fabsim-replay --probe measures it
  ** (README, Calibration) */
  K("message_gap", FAB_CFG_TIME, f.nic.msg_gap, .def = "0ns", .min = 0, .max = 1e12),
  /* RC responders coalesce ACKs: Intel's hfi1 driver ACKs every HFI1_PSN_CREDIT = 16 packets
  ** (drivers/infiniband/hw/hfi1/verbs.h, "add ACK coalescing logic"), Linux's software RoCE asks for
  ** one every 64 (rxe_param.h RXE_MAX_PKT_PER_ACK); the last packet of a flow is always ACKed */
  K("ack_interval", FAB_CFG_UINT, f.nic.ack_interval, .def = "16", .min = 1, .max = 1 << 20),
  /* go-back-n, or selective repeat with out-of-order placement (models/nic.h); the threshold is TCP's
  ** duplicate-ACK threshold for fast retransmit (RFC 5681, section 3.2: 3) */
  K("reliability", FAB_CFG_ENUM, reliability, .def = "go-back-n", .choices = fab_reliabilities),
  K("dup_threshold", FAB_CFG_UINT, f.nic.dup_threshold, .def = "3", .min = 1, .max = FAB_SACK_WINDOW - 1),
  /* host-driven spraying (models/nic.h); 256 entropy values as csg-htsim's EQDS source sprays over by default
  ** (sim/eqds.cpp, EqdsSrc::_path_entropy_size) */
  K("spray", FAB_CFG_ENUM, spray, .def = "none", .choices = fab_spray_names),
  K("paths", FAB_CFG_UINT, f.nic.paths, .def = "256", .min = 1, .max = FAB_SPRAY_MAX_PATHS),
  K("max_timeouts", FAB_CFG_UINT, f.nic.max_timeouts, .def = "64", .min = 1, .max = 1 << 20),
  /* transport srd (models/srd.h): no public figures for SRD's timers or headers, assumptions (README); AWS
  ** describes SRD's retransmission as sub-millisecond */
  K("rto_min", FAB_CFG_TIME, f.nic.rto_min, .def = "100us", .min = 1e3, .max = 1e15),
  K("avoid_delay", FAB_CFG_TIME, f.nic.avoid_delay, .def = "10us", .min = 0, .max = 1e15),
  K("srd_header", FAB_CFG_SIZE, srd_header, .def = "16", .min = 0, .max = 4096),
  /* libfabric's EFA provider orders an application's messages per peer on request (FI_ORDER_SAS; man/fi_efa.7.md,
  ** FI_EFA_RECVWIN_SIZE): on for plain flows, never for NCCL's (models/nic.h, message order) */
  K("message_order", FAB_CFG_BOOL, f.nic.srd_ordered, .def = "true"),
  FAB_CFG_END_ROW,
};

static const char *const auto_bool[] = {"false", "true", "auto", NULL};

static const FabCfgKey nvlink_schema[] = {
  K("bandwidth", FAB_CFG_RATE, f.gpu.nvlink_bps),
  K("latency", FAB_CFG_TIME, f.gpu.nvlink_latency, .max = 1e15),
  K("segment", FAB_CFG_SIZE, f.gpu.segment, .min = 64, .max = 1048576),
  K("nvls_segment", FAB_CFG_SIZE, f.gpu.nvls_segment, .min = 64, .max = 16777216), /* unset: NCCL's chunk */
  K("mesh", FAB_CFG_BOOL, f.gpu.nvlink_mesh),
  K("nvls", FAB_CFG_ENUM, nvls, .def = "auto", .choices = auto_bool),
  K("nvls_efficiency", FAB_CFG_DOUBLE, f.gpu.nvls_eff, .min = 0.01, .max = 1),
  K("nvls_reduce_bandwidth", FAB_CFG_RATE, f.gpu.nvls_reduce_bps),
  FAB_CFG_END_ROW,
};

static const FabCfgKey pcie_schema[] = {
  K("bandwidth", FAB_CFG_RATE, f.gpu.pcie_bps),
  K("latency", FAB_CFG_TIME, f.gpu.pcie_latency, .max = 1e15),
  K("gpudirect", FAB_CFG_BOOL, f.gpu.gpudirect, .def = "true"),
  K("host_bandwidth", FAB_CFG_RATE, f.gpu.host_bps),
  K("host_latency", FAB_CFG_TIME, f.gpu.host_latency, .max = 1e15),
  FAB_CFG_END_ROW,
};

static const FabCfgKey gpu_schema[] = {
  K("arch", FAB_CFG_ENUM, f.gpu.arch, .choices = fab_gpu_arch_names),
  K("peak", FAB_CFG_DOUBLE, f.gpu.gpu_flops, .min = 1e9, .max = 1e18), /* FLOP/s: 989e12, not 989 */
  K("memory_bandwidth", FAB_CFG_RATE, f.gpu.memory_bps),
  K("efficiency", FAB_CFG_DOUBLE, f.gpu.gpu_efficiency, .min = 1e-6, .max = 1),
  K("reduce_bandwidth", FAB_CFG_RATE, f.gpu.reduce_bps),
  FAB_CFG_END_ROW,
};

static const FabCfgKey fabric_schema[] = {
  K("transport", FAB_CFG_ENUM, f.nic.transport.kind, .def = "rocev2", .choices = fab_transport_names),
  K("topology", FAB_CFG_MAP, topology, .required = true),
  K("link", FAB_CFG_MAP, link), /* required on plain hosts (fab_fabric_cfg_read) */
  K("switch", FAB_CFG_MAP, sw),
  K("congestion_control", FAB_CFG_MAP, cc),
  K("segment", FAB_CFG_SIZE, f.nic.seg, .min = 64, .max = 16777216),
  K("failures", FAB_CFG_SEQ, failures),
  /* no public figure for how fast a fabric's hashing switches take new routes: an assumption (README) */
  K("reroute_delay", FAB_CFG_TIME, f.reroute_delay, .def = "1ms", .min = 0, .max = 1e15),
  K("failure_baseline", FAB_CFG_BOOL, f.failure_baseline, .def = "true"),
  /* the steady-state fast-forward (tools/libfabsim/fastfwd.c): window and tolerance are parameters of the
  ** method, not hardware figures (README) */
  K("fast_forward", FAB_CFG_ENUM, f.ff_mode, .def = "auto", .choices = fab_ff_mode_names),
  K("fast_forward_window", FAB_CFG_TIME, f.ff_window, .def = "20us", .min = 1e5, .max = 1e12),
  K("fast_forward_tolerance", FAB_CFG_DOUBLE, f.ff_tolerance, .def = "0.02", .min = 0, .max = 0.5),
  FAB_CFG_END_ROW,
};

/* A ring's `switches` and `hosts_per_switch` fill the fields leaf-spine's
** `leaves` and `hosts_per_leaf` do: the builders read one pair. */
static const FabCfgKey topo_schema[] = {
  K("kind", FAB_CFG_ENUM, f.topo.kind, .required = true, .choices = fab_topo_kind_names),
  K("hosts_per_leaf", FAB_CFG_UINT, f.topo.hosts_per_leaf, .min = 1, .max = 65000),
  K("leaves", FAB_CFG_UINT, f.topo.leaves, .min = 1, .max = 65000),
  K("spines", FAB_CFG_UINT, f.topo.spines, .min = 1, .max = 65000),
  K("oversubscription", FAB_CFG_RATIO, f.topo.oversubscription),
  K("k", FAB_CFG_UINT, f.topo.k, .min = 2, .max = 256),
  K("switches", FAB_CFG_NODE, switches), /* ring: a number (ring()); graph: a list (graph.c) */
  K("hosts", FAB_CFG_NODE, ghosts),
  K("pod_nodes", FAB_CFG_UINT, f.topo.pod_nodes, .min = 1, .max = 65000),
  K("rail_oversubscription", FAB_CFG_RATIO, f.topo.rail_ov),
  K("cores", FAB_CFG_UINT, f.topo.cores, .min = 1, .max = 65000),
  K("dual_tor", FAB_CFG_BOOL, f.topo.dual_tor, .def = "false"),
  K("dual_plane", FAB_CFG_BOOL, f.topo.dual_plane, .def = "false"),
  K("links", FAB_CFG_NODE, glinks),
  K("hosts_per_switch", FAB_CFG_UINT, f.topo.hosts_per_leaf, .min = 1, .max = 1024),
  K("tiers", FAB_CFG_NODE, tiers), /* in the contract, not built: refused as such */
  K("pods", FAB_CFG_NODE, pods),
  FAB_CFG_END_ROW,
};

static const FabCfgKey link_schema[] = {
  K("bandwidth", FAB_CFG_RATE, f.topo.link_bps), /* required on plain hosts (fab_fabric_cfg_read) */
  K("latency", FAB_CFG_TIME, f.topo.link_latency, .def = "1us", .min = 0, .max = 1e15),
  K("mtu", FAB_CFG_SIZE, f.nic.mtu, .def = "4096", .min = 64, .max = 1048576),
  FAB_CFG_END_ROW,
};

static const FabCfgKey switch_schema[] = {
  K("latency", FAB_CFG_TIME, f.sw.latency, .def = "0ns", .min = 0, .max = 1e15),
  K("buffer", FAB_CFG_SIZE, f.sw.buffer, .def = "32MiB", .min = 1, .max = 1e12),
  K("buffer_alpha", FAB_CFG_DOUBLE, f.sw.alpha, .def = "1", .min = 1e-6, .max = 1e6),
  K("priorities", FAB_CFG_UINT, f.sw.nprio, .def = "8", .min = 1, .max = FAB_MAX_PRIOS),
  K("ecmp_seed", FAB_CFG_UINT, f.sw.ecmp_seed, .def = "0"),
  K("hash", FAB_CFG_ENUM, f.sw.hash, .def = "mix", .choices = fab_hash_names),
  K("routing", FAB_CFG_ENUM, f.routing, .def = "ecmp", .choices = fab_routing_names),
  /* adaptive routing (models/switch.h, FabRouting); the threshold is NCCL's NCCL_IB_AR_THRESHOLD default
  ** (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html: 8192) */
  K("adaptive_threshold", FAB_CFG_SIZE, f.nic.ar_threshold, .def = "8KiB", .max = 0x1p50),
  K("adaptive_pick", FAB_CFG_ENUM, ar_pick, .def = "least-loaded", .choices = fab_adaptive_picks),
  K("adaptive_quantum", FAB_CFG_SIZE, f.sw.ar_quantum, .min = 1, .max = 1e12),
  K("flowlet_gap", FAB_CFG_TIME, f.sw.flowlet_gap, .def = "10us", .min = 0, .max = 1e15), /* issue 15's default */
  K("flowlet_pick", FAB_CFG_ENUM, flowlet_pick, .def = "least-loaded", .choices = fab_flowlet_picks),
  /* no public figure for switch flowlet tables: an assumption (README) */
  K("flowlet_table", FAB_CFG_UINT, f.sw.flowlet_table, .def = "4096", .min = 1, .max = 1u << 24),
  K("routing_per_tier", FAB_CFG_MAP, per_tier),
  K("pfc", FAB_CFG_MAP, pfc),
  K("ecn", FAB_CFG_MAP, ecn),
  K("sharp", FAB_CFG_MAP, sharp),
  K("credits", FAB_CFG_NODE, credits),
  FAB_CFG_END_ROW,
};

static const FabCfgKey pfc_schema[] = {
  K("enabled", FAB_CFG_BOOL, f.sw.pfc.enabled, .def = "false"),
  K("priorities", FAB_CFG_SEQ, priorities),
  K("xoff", FAB_CFG_NODE, xoff),
  K("xon", FAB_CFG_SIZE, f.sw.pfc.xon, .max = 0x1p40),
  K("alpha", FAB_CFG_DOUBLE, f.sw.pfc.alpha, .def = "0.125", .min = 1e-6, .max = 1e6),
  K("headroom", FAB_CFG_NODE, headroom),
  K("response", FAB_CFG_TIME, f.sw.pfc.response, .def = "1us", .min = 0, .max = 1e12),
  K("quanta", FAB_CFG_UINT, f.sw.pfc.quanta, .def = "65535", .min = 1, .max = 65535),
  K("watchdog", FAB_CFG_TIME, f.sw.pfc.watchdog, .def = "1ms", .min = 0, .max = 1e15),
  FAB_CFG_END_ROW,
};

static const FabCfgKey ecn_schema[] = {
  K("enabled", FAB_CFG_BOOL, f.sw.ecn.enabled, .def = "false"),
  K("kmin", FAB_CFG_SIZE, f.sw.ecn.kmin, .def = "100KiB", .max = 0x1p40),
  K("kmax", FAB_CFG_SIZE, f.sw.ecn.kmax, .def = "400KiB", .max = 0x1p40),
  K("pmax", FAB_CFG_PROB, f.sw.ecn.pmax, .def = "0.2"),
  K("mark", FAB_CFG_ENUM, f.sw.ecn.on_dequeue, .def = "enqueue", .choices = ecn_marks_at),
  FAB_CFG_END_ROW,
};

/* NVLink segment header bytes: an assumption of this model (one 16-byte
** header per segment), documented in README. */
#define NVL_OVERHEAD 16
/* NVLink segment payload when the scenario does not say: 64 KiB. */
#define NVL_SEGMENT 65536

/* ---- helpers -------------------------------------------------------------- */

/* The node to blame: `key` of `map` when given, else `or`. */
static const FabCfgNode *at_key(const FabCfgNode *map, const char *key, const FabCfgNode *or) {
  const FabCfgNode *n = fab_cfg_get(map, key);
  return n ? n : or;
}

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

static gboolean set_only_for(const FabCfgNode *topo, const char *key, const char *kinds, GError **err) {
  const FabCfgNode *n = fab_cfg_get(topo, key);
  if (n) return fab_cfg_fail(n, err, "not used by this topology kind (only by %s)", kinds);
  return TRUE;
}

void no_effect(Read *r, const FabCfgNode *at, const char *fmt, ...) {
  if (!r->warnings) return;
  va_list ap;
  va_start(ap, fmt);
  char *why = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_ptr_array_add(r->warnings, g_strdup_printf("%s: %s: has no effect: %s", fab_cfg_where(at), fab_cfg_path(at), why));
  g_free(why);
}

/* The keys of a feature's map that is off: each has no effect. */
static void off_keys(Read *r, const FabCfgNode *map, const char *why) {
  for (size_t i = 0; map && fab_cfg_kind(map) == FAB_CFG_NODE_MAP && i < fab_cfg_len(map); i++)
    if (strcmp(fab_cfg_key_at(map, i), "enabled")) no_effect(r, fab_cfg_at(map, i), "%s", why);
}

/* ---- switch: PFC, ECN --------------------------------------------------------- */

/* fabric.segment: a whole number of MTU packets, moved as one train on the
** network (exact bytes on the wire, coarser events). Equal to the mtu: packet
** by packet, as without it. */
static gboolean read_segment(Read *r, const FabCfgNode *fabric, GError **err) {
  uint32_t seg = r->f.nic.seg, mtu = r->f.nic.mtu;
  if (!seg) return TRUE;
  if (seg < mtu || seg % mtu)
    return fab_cfg_fail(fab_cfg_get(fabric, "segment"), err, "segment %u B is not a whole number of packets of the "
                        "mtu (%u B): give a multiple of it, such as %u", seg, mtu, MAX(mtu, seg / mtu * mtu));
  if (seg == mtu) r->f.nic.seg = 0;
  return TRUE;
}

static gboolean read_pfc(Read *r, uint32_t mtu_wire, GError **err) {
  FabPfcCfg *out = &r->f.sw.pfc;
  uint32_t nprio = r->f.sw.nprio;
  if (!fab_cfg_apply(r->pfc, NULL, pfc_schema, r, err)) return FALSE;
  out->lossless = (1u << nprio) - 1; /* default: every priority */
  if (r->priorities) {
    if (out->enabled && fab_cfg_len(r->priorities) == 0)
      return fab_cfg_fail(r->priorities, err, "an empty list: PFC would protect nothing (list the lossless priorities)");
    out->lossless = 0;
    for (size_t i = 0; i < fab_cfg_len(r->priorities); i++) {
      const FabCfgNode *it = fab_cfg_at(r->priorities, i);
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
  if (r->xoff && !size_or(r->xoff, "dynamic", &out->xoff, &word, err)) return FALSE;
  out->dynamic = word;
  const FabCfgNode *xon_at = fab_cfg_get(r->pfc, "xon");
  if (!xon_at) out->xon = out->dynamic ? 2 * (uint64_t)mtu_wire : out->xoff / 2;
  if (!out->dynamic && out->xon >= out->xoff)
    return fab_cfg_fail(xon_at ? xon_at : r->xoff, err, "xon (%" G_GUINT64_FORMAT " B) must be below xoff (%"
                        G_GUINT64_FORMAT " B)", out->xon, out->xoff);
  if (!out->dynamic && out->xoff < mtu_wire && (r->xoff || out->enabled)) /* the default matters only with PFC on */
    return r->xoff ? fab_cfg_fail(r->xoff, err, "xoff %" G_GUINT64_FORMAT " B is below one packet (%u B%s)", out->xoff,
                                  mtu_wire, r->f.nic.seg ? ", a train of fabric.segment" : "")
                   : fab_cfg_fail(r->pfc, err, "the default xoff (%" G_GUINT64_FORMAT " B) is below one packet (%u B"
                                  "%s): set xoff", out->xoff, mtu_wire, r->f.nic.seg ? ", a train of fabric.segment" : "");
  out->headroom = 0; /* auto */
  if (r->headroom) {
    if (!size_or(r->headroom, "auto", &out->headroom, &word, err)) return FALSE;
    if (!word && out->headroom < mtu_wire)
      return fab_cfg_fail(r->headroom, err, "headroom %" G_GUINT64_FORMAT " B is below one packet (%u B%s)",
                          out->headroom, mtu_wire, r->f.nic.seg ? ", a train of fabric.segment" : "");
    if (word) out->headroom = 0;
  }
  /* a refresh (sent at half the pause) may wait behind one full packet: the
  ** pause must outlast two packets plus the frame, or it lapses between refreshes */
  uint64_t min_quanta = (2 * ((uint64_t)mtu_wire + FAB_PAUSE_WIRE) + 63) / 64;
  if (out->enabled && out->quanta < min_quanta)
    return fab_cfg_fail(fab_cfg_get(r->pfc, "quanta") ? fab_cfg_get(r->pfc, "quanta") : r->pfc, err, "quanta %u (x 512 bit times) is shorter than two packets "
                        "of %u B (expected at least %" G_GUINT64_FORMAT ")", out->quanta, mtu_wire, min_quanta);
  out->mtu_wire = mtu_wire;
  if (!out->enabled) off_keys(r, r->pfc, "fabric.switch.pfc is off (enabled: false)");
  return TRUE;
}

static gboolean read_ecn(Read *r, GError **err) {
  const FabEcnCfg *e = &r->f.sw.ecn;
  if (!fab_cfg_apply(r->ecn, NULL, ecn_schema, r, err)) return FALSE;
  if (e->kmin > e->kmax)
    return fab_cfg_fail(fab_cfg_get(r->ecn, "kmin"), err, "kmin (%" G_GUINT64_FORMAT " B) must be <= kmax (%"
                        G_GUINT64_FORMAT " B)", e->kmin, e->kmax);
  if (e->enabled && e->pmax <= 0)
    return fab_cfg_fail(fab_cfg_get(r->ecn, "pmax"), err, "pmax must be above 0 when ECN is enabled");
  if (!e->enabled) off_keys(r, r->ecn, "fabric.switch.ecn is off (enabled: false)");
  return TRUE;
}

/* ---- cluster ---------------------------------------------------------------- */

/* NVLS: offered by the architecture (sm90 and later) on an NVSwitch
** domain; cluster.nvlink.nvls false turns it off, true insists. */
static gboolean read_nvls(Read *r, const FabCfgNode *cl, GError **err) {
  FabGpuSpec *g = &r->f.gpu;
  FabArchFacts a = fab_arch_facts(g->arch);
  const FabCfgNode *at = fab_cfg_get(r->nvlink, "nvls"), *eff = fab_cfg_get(r->nvlink, "nvls_efficiency");
  if (r->nvls == 1 && !a.nvls)
    return fab_cfg_fail(at, err, "%s GPUs have no NVLS (the NVSwitch reduces only for sm90 and later; NCCL builds no "
                        "NVLS graph below it)", fab_gpu_arch_names[g->arch]);
  if (r->nvls == 1 && !g->nvlink_domain)
    return fab_cfg_fail(at, err, "NVLS needs an NVLink domain (cluster.nvlink_domain)");
  g->nvls = r->nvls != 0 && a.nvls && g->nvlink_domain && !g->nvlink_mesh;
  const FabCfgNode *only_nvls = eff ? eff : fab_cfg_get(r->nvlink, "nvls_reduce_bandwidth");
  if (!only_nvls) only_nvls = fab_cfg_get(r->nvlink, "nvls_segment");
  if (!g->nvls && only_nvls)
    return fab_cfg_fail(only_nvls, err, "NVLS is off here (%s)",
                        !a.nvls ? "the architecture has none" : !g->nvlink_domain ? "no NVLink domain"
                        : g->nvlink_mesh ? "a mesh has no switch" : "nvls: false");
  if (!eff) g->nvls_eff = a.nvls_eff;
  (void)cl;
  return TRUE;
}

/* A mesh domain (cluster.nvlink.mesh): the GPUs of one node, each pair
** joined by its own link; no switch, so no NVLS. */
static gboolean read_mesh(Read *r, const FabCfgNode *cl, GError **err) {
  FabGpuSpec *g = &r->f.gpu;
  const FabCfgNode *at = fab_cfg_get(r->nvlink, "mesh");
  if (!at) at = cl;
  if (g->nvlink_domain != g->gpus_per_node || g->gpus_per_node < 2)
    return fab_cfg_fail(at, err, "a mesh joins the GPUs of one node (cluster.nvlink_domain %u, gpus_per_node %u): "
                        "set nvlink_domain to gpus_per_node, at least 2", g->nvlink_domain, g->gpus_per_node);
  if (g->gpus_per_node > FAB_MESH_MAX)
    return fab_cfg_fail(at, err, "a mesh of %u GPUs has %u links per GPU: at most %u GPUs", g->gpus_per_node,
                        g->gpus_per_node - 1, FAB_MESH_MAX);
  if (r->nvls == 1)
    return fab_cfg_fail(fab_cfg_get(r->nvlink, "nvls"), err, "a mesh has no switch to reduce in: no NVLS");
  if (g->nvlink_bps / (g->gpus_per_node - 1) == 0)
    return fab_cfg_fail(fab_cfg_get(r->nvlink, "bandwidth"), err, "the mesh's links would run at 0 bit/s");
  return TRUE;
}

/* cluster.node_topology: the layout an NCCL topology dump describes, over the
** preset's (whose GPU figures, FLOPs, memory and latencies, stay). */
static gboolean read_node_topology(Read *r, const FabCfgNode *cl, FabNcclTopo *xt, uint64_t *nic_bps, GError **err) {
  FabGpuSpec *g = &r->f.gpu;
  const FabCfgNode *at = fab_cfg_get(cl, "node_topology");
  char *path = fab_cfg_file_near(at, r->node_topology);
  GError *e = NULL;
  gboolean ok = fab_nccl_topo_read(path, xt, &e);
  g_free(path);
  if (!ok) {
    fab_cfg_fail(at, err, "%s", e->message);
    g_error_free(e);
    return FALSE;
  }
  const FabNodePreset *p = fab_preset_find(fab_preset_names[g->preset_id]);
  if (xt->arch != p->arch && !fab_cfg_get(r->gpu, "arch") && r->warnings) /* said, not silent */
    g_ptr_array_add(r->warnings, g_strdup_printf("%s: %s: the dump's GPUs are %s (sm %u), cluster.node %s's are %s: "
                    "the dump's architecture and layout are used with %s's FLOPs, memory and latencies (set "
                    "cluster.node to a preset of that generation, or cluster.gpu)", fab_cfg_where(at),
                    fab_cfg_path(at), fab_gpu_arch_names[xt->arch], xt->sm, p->name, fab_gpu_arch_names[p->arch],
                    p->name));
  if (!fab_cfg_get(r->gpu, "arch")) g->arch = xt->arch;
  if (xt->cpu >= 0 && !fab_cfg_get(cl, "cpu")) g->cpu = (FabCpu)xt->cpu;
  FabArchFacts a = fab_arch_facts(g->arch);
  g->nvlink_links = xt->nvlinks;
  g->nvlink_raw_bps = xt->nvlinks * a.nvlink_raw_link;
  g->nvlink_bps = xt->nvlinks * a.nvlink_link;
  if (xt->pcie_bps) g->pcie_bps = xt->pcie_bps;
  if (xt->nics) *nic_bps = xt->nic_bps;
  return TRUE;
}

/* cluster.node other than host: the preset's figures, then the overrides. */
static gboolean read_gpu_nodes(Read *r, const FabCfgNode *cl, uint64_t *preset_nic_bps, GError **err) {
  FabGpuSpec *g = &r->f.gpu;
  const FabNodePreset *p = fab_preset_find(fab_preset_names[g->preset_id]);
  g_assert(p);
  g->arch = p->arch;
  if (!fab_cfg_get(cl, "cpu")) g->cpu = p->cpu;
  g->nvlink_links = p->nvlink_links;
  g->nvlink_raw_bps = p->nvlink_raw_bps;
  g->nvlink_bps = p->nvlink_bps;
  g->memory_bps = p->memory_bps;
  g->nvls_eff = 0; /* from the architecture, below, unless given */
  g->nvls_reduce_bps = 0;
  g->nvlink_latency = p->nvlink_latency;
  g->nvlink_mesh = p->nvlink_mesh;
  g->segment = NVL_SEGMENT;
  g->pcie_bps = p->pcie_bps;
  g->pcie_latency = p->pcie_latency;
  g->host_bps = p->host_bps;
  g->host_latency = p->host_latency;
  g->gpu_flops = p->gpu_flops;
  g->gpu_efficiency = p->gpu_efficiency;
  uint64_t nic_bps = p->nic_bps;
  FabNcclTopo xt = {0};
  if (r->node_topology && !read_node_topology(r, cl, &xt, &nic_bps, err)) return FALSE;
  if (!fab_cfg_apply(r->nvlink, cl, nvlink_schema, r, err) || !fab_cfg_apply(r->pcie, cl, pcie_schema, r, err) ||
      !fab_cfg_apply(r->gpu, cl, gpu_schema, r, err))
    return FALSE;
  if (!g->nodes) return fab_cfg_fail(cl, err, "GPU nodes need cluster.nodes");
  /* ASSUMPTION: a reduction reads two operands and writes one, all in HBM */
  if (!fab_cfg_get(r->gpu, "reduce_bandwidth")) g->reduce_bps = g->memory_bps / 3;
  if (g->arch == FAB_ARCH_NONE)
    return fab_cfg_fail(fab_cfg_get(r->gpu, "arch"), err, "a GPU node needs an architecture (ampere, hopper, "
                        "blackwell or cdna3), not none");
  g->preset = p->name;
  if (xt.gpus) { /* what explain names the nodes by */
    char *named = g_strdup_printf("%s laid out as %s", p->name, r->node_topology);
    g->preset = g_intern_string(named);
    g_free(named);
  }
  uint32_t pg = xt.gpus ? xt.gpus : p->gpus_per_node, pdom = xt.gpus ? (xt.nvlinks ? xt.gpus : 0) : p->nvlink_domain;
  if (!fab_cfg_get(cl, "gpus_per_node")) g->gpus_per_node = pg;
  if (!fab_cfg_get(cl, "nics_per_node")) {
    uint32_t pn = xt.nics ? xt.nics : p->nics_per_node;
    g->nics_per_node = pn;
    /* Fewer (or more) GPUs than the preset's (both counts from the preset, or both from the node's dump): each
    ** keeps its own NICs, as NCCL's search takes a GPU's local NICs first (src/graph/search.cc, ncclTopoSelectNets;
    ** one GPU of each of ten DGX H100 measures a ring at one 400G NIC's rate, xxrjun/nccl-tests-cluster N10_G1) */
    if (fab_cfg_get(cl, "gpus_per_node") && g->gpus_per_node != pg && pn && pg && (!xt.gpus || xt.nics) &&
        (pn % pg == 0 || pg % pn == 0)) {
      uint64_t n = pn >= pg ? (uint64_t)g->gpus_per_node * (pn / pg) : ((uint64_t)g->gpus_per_node * pn + pg - 1) / pg;
      if (n > 1024)
        return fab_cfg_fail(at_key(cl, "gpus_per_node", cl), err, "%u GPUs at the preset's %u NICs a GPU need %"
                            G_GUINT64_FORMAT " NICs, more than 1024: set cluster.nics_per_node", g->gpus_per_node, pn / pg, n);
      g->nics_per_node = (uint32_t)n;
      g->preset_nics = pn;
      g->preset_gpus = pg;
    }
  }
  if (!fab_cfg_get(cl, "nvlink_domain"))
    g->nvlink_domain = fab_cfg_get(cl, "gpus_per_node") && pdom == pg ? g->gpus_per_node : pdom;
  uint32_t G = g->gpus_per_node, N = g->nics_per_node;
  if (G % N && N % G)
    return fab_cfg_fail(at_key(cl, "nics_per_node", at_key(cl, "gpus_per_node", cl)), err, "%u GPUs and %u NICs per node%s: one must divide the "
                        "other (GPUs share a NIC, or a GPU has several)", G, N, g->preset_nics ? " (the preset's NICs "
                        "per GPU; set cluster.nics_per_node)" : "");
  if (g->nvlink_domain && g->nvlink_domain % G)
    return fab_cfg_fail(at_key(cl, "nvlink_domain", cl), err, "an NVLink domain of %u GPUs is not a whole number of "
                        "nodes of %u GPUs", g->nvlink_domain, G);
  if ((uint64_t)g->nodes * G > (1u << 24)) return fab_cfg_fail(cl, err, "too many GPUs (at most 16777216)");
  if (g->pxn && (N != G || g->nvlink_domain != G))
    return fab_cfg_fail(fab_cfg_get(cl, "pxn"), err, "pxn needs one NIC per GPU and an NVLink domain of one "
                        "node (here %u GPUs, %u NICs, a domain of %u)", G, N, g->nvlink_domain);
  if (g->nvlink_domain && !g->nvlink_bps)
    return fab_cfg_fail(cl, err, "an NVLink domain needs cluster.nvlink.bandwidth");
  if (g->nvlink_mesh && !read_mesh(r, cl, err)) return FALSE;
  if (!g->pcie_bps) return fab_cfg_fail(cl, err, "GPU nodes need cluster.pcie.bandwidth");
  if (!g->gpudirect && !g->host_bps)
    return fab_cfg_fail(fab_cfg_get(r->pcie, "gpudirect"), err, "host staging needs pcie.host_bandwidth");
  if (!read_nvls(r, cl, err)) return FALSE;
  *preset_nic_bps = nic_bps;
  return TRUE;
}

/* ---- topology ------------------------------------------------------------------ */

/* The leaf-spine shape: leaves from the node count, spines from the
** oversubscription. `nodes` is what the topology must hold (0: not given). */
static gboolean leaf_spine(const FabCfgNode *node, FabTopoSpec *t, uint64_t nodes, const FabCfgNode *nodes_at,
                           const char *what, GError **err) {
  if (!set_only_for(node, "k", "fat-tree", err)) return FALSE;
  if (!t->hosts_per_leaf) return fab_cfg_fail(node, err, "leaf-spine needs hosts_per_leaf");
  uint64_t hpl = t->hosts_per_leaf;
  if (t->leaves) {
    if (nodes && nodes != t->leaves * hpl)
      return fab_cfg_fail(nodes_at ? nodes_at : node, err, "%" G_GUINT64_FORMAT " %s, but the topology has %"
                          G_GUINT64_FORMAT " (leaves x hosts_per_leaf)", nodes, what, t->leaves * hpl);
  } else {
    if (!nodes) return fab_cfg_fail(node, err, "leaf-spine needs leaves (or cluster.nodes)");
    if (nodes % hpl)
      return fab_cfg_fail(nodes_at ? nodes_at : node, err, "%" G_GUINT64_FORMAT " %s is not a multiple of "
                          "hosts_per_leaf %" G_GUINT64_FORMAT, nodes, what, hpl);
    if (nodes / hpl > 65000) return fab_cfg_fail(node, err, "a switch has at most 65000 ports");
    t->leaves = (uint32_t)(nodes / hpl);
  }
  if (t->spines && t->oversubscription > 0)
    return fab_cfg_fail(fab_cfg_get(node, "oversubscription"), err, "give spines or oversubscription, not both "
                        "(to use one where a file gives the other, remove that one: --set %s=~)",
                        fab_cfg_path(fab_cfg_get(node, "spines")));
  if (!t->spines) {
    double r = t->oversubscription > 0 ? t->oversubscription : 1.0;
    double s = (double)hpl / r;
    if (s < 1 || s != (double)(uint64_t)s)
      return fab_cfg_fail(fab_cfg_get(node, "oversubscription"), err,
                          "hosts_per_leaf %" G_GUINT64_FORMAT " / oversubscription %g = %.3g spines, not a "
                          "whole number (use a ratio that divides %" G_GUINT64_FORMAT ", or give spines)",
                          hpl, r, s, hpl);
    t->spines = (uint32_t)s * (t->dual_plane ? 2 : 1); /* each plane gives its leaves that ratio */
  }
  if ((uint64_t)t->leaves * t->hosts_per_leaf > (1u << 24))
    return fab_cfg_fail(node, err, "too many hosts (at most 16777216)");
  if (t->hosts_per_leaf + t->spines > 65000 || t->leaves > 65000)
    return fab_cfg_fail(node, err, "a switch has at most 65000 ports");
  t->hosts = t->leaves * t->hosts_per_leaf;
  if (t->dual_tor && t->leaves % 2)
    return fab_cfg_fail(fab_cfg_get(node, "dual_tor"), err, "dual-ToR leaves come in pairs: %u leaves is odd",
                        t->leaves);
  if (t->dual_plane && !t->dual_tor)
    return fab_cfg_fail(fab_cfg_get(node, "dual_plane"), err, "dual_plane splits a dual-ToR fabric's two sides: "
                        "set dual_tor: true");
  if (t->dual_plane && t->spines % 2)
    return fab_cfg_fail(fab_cfg_get(node, "spines"), err, "two planes share %u spines unevenly: give an even number",
                        t->spines);
  return TRUE;
}

static gboolean fat_tree(const FabCfgNode *node, FabTopoSpec *t, uint64_t nodes, const FabCfgNode *nodes_at,
                         GError **err) {
  if (!set_only_for(node, "hosts_per_leaf", "leaf-spine", err) || !set_only_for(node, "leaves", "leaf-spine", err) ||
      !set_only_for(node, "spines", "leaf-spine", err))
    return FALSE;
  if (!t->k) return fab_cfg_fail(node, err, "fat-tree needs k (the switch radix, even)");
  if (t->k % 2) return fab_cfg_fail(fab_cfg_get(node, "k"), err, "k must be even, not %u", t->k);
  double r = t->oversubscription > 0 ? t->oversubscription : 1.0;
  double hpe = (double)(t->k / 2) * r;
  if (hpe < 1 || hpe != (double)(uint64_t)hpe)
    return fab_cfg_fail(fab_cfg_get(node, "oversubscription"), err,
                        "k/2 x %g is not a whole number of hosts per edge switch", r);
  if (hpe > 65000) return fab_cfg_fail(fab_cfg_get(node, "oversubscription"), err, "a switch has at most 65000 ports");
  t->hosts_per_leaf = (uint32_t)hpe;
  uint64_t hosts = (uint64_t)t->k * (t->k / 2) * t->hosts_per_leaf;
  if (hosts > (1u << 24)) return fab_cfg_fail(node, err, "too many hosts (at most 16777216)");
  t->hosts = (uint32_t)hosts;
  if (nodes && nodes != hosts)
    return fab_cfg_fail(nodes_at, err, "%" G_GUINT64_FORMAT " nodes, but a k=%u fat-tree has %" G_GUINT64_FORMAT,
                        nodes, t->k, hosts);
  return TRUE;
}

/* rail-optimized: its rail switches (in three tiers with pod_nodes), their uplinks from rail_oversubscription. */
static gboolean rail_tiers(const FabCfgNode *node, FabTopoSpec *t, uint64_t n, uint32_t rails, uint32_t spines0,
                           GError **err) {
  const FabCfgNode *ov = fab_cfg_get(node, "rail_oversubscription"), *pn = fab_cfg_get(node, "pod_nodes");
  if (ov && fab_cfg_get(node, "spines"))
    return fab_cfg_fail(ov, err, "give spines or rail_oversubscription, not both (N:M sets the spines: a rail "
                        "switch's N downlinks over its M uplinks, one to each spine)");
  if (fab_cfg_get(node, "cores") && !pn)
    return fab_cfg_fail(fab_cfg_get(node, "cores"), err, "cores join pods: give pod_nodes (nodes per pod) too");
  uint64_t down = pn ? t->pod_nodes : n; /* a rail switch's downlinks: its pod's nodes, or every node */
  if (pn && n % t->pod_nodes)
    return fab_cfg_fail(pn, err, "%" G_GUINT64_FORMAT " nodes is not a multiple of pod_nodes %u", n, t->pod_nodes);
  if (ov) {
    double up = (double)down / t->rail_ov;
    if (up < 1 || fabs(up - round(up)) > 1e-9)
      return fab_cfg_fail(ov, err, "%" G_GUINT64_FORMAT " downlinks x %g is not a whole number of uplinks (spines)",
                          down, 1 / t->rail_ov);
    t->spines = (uint32_t)round(up);
  }
  t->leaves = rails; /* rail switches (per pod) */
  t->hosts_per_leaf = (uint32_t)down;
  if (!t->spines) t->spines = pn ? (uint32_t)down : spines0;
  if (pn) {
    t->k = (uint32_t)(n / t->pod_nodes); /* pods */
    if (!fab_cfg_get(node, "cores")) t->cores = t->k > 1 ? spines0 : 0;
    if ((uint64_t)t->k * t->spines > 65000 || (uint64_t)rails + t->cores > 65000)
      return fab_cfg_fail(node, err, "a switch has at most 65000 ports");
  }
  return TRUE;
}

/* rail-optimized, multi-rail and rail-only: `rails` NIC ports per node, `nodes` ports in all. */
static gboolean rails(const FabCfgNode *node, FabTopoSpec *t, uint64_t nodes, uint32_t rails, uint32_t spines0,
                      GError **err) {
  bool multi = t->kind == FAB_TOPO_MULTI_RAIL;
  if (t->kind == FAB_TOPO_RAIL_ONLY) { /* a rail switch per NIC index, nothing above: multi-rail's planes of one leaf */
    if (!set_only_for(node, "hosts_per_leaf", "leaf-spine, fat-tree, multi-rail", err) ||
        !set_only_for(node, "spines", "leaf-spine, rail-optimized, multi-rail: rail-only has none", err) ||
        !set_only_for(node, "leaves", "leaf-spine", err) || !set_only_for(node, "k", "fat-tree", err) ||
        !set_only_for(node, "oversubscription", "leaf-spine, fat-tree", err))
      return FALSE;
    if (!rails)
      return fab_cfg_fail(fab_cfg_get(node, "kind"), err, "rail-only needs GPU nodes (cluster.node other than host): "
                          "rail i joins NIC i of every node");
    t->k = rails;
    t->leaves = 1;
    t->hosts_per_leaf = (uint32_t)(nodes / rails);
    t->spines = 0;
    if (t->hosts_per_leaf > 65000) return fab_cfg_fail(node, err, "a switch has at most 65000 ports");
    t->hosts = (uint32_t)nodes;
    return TRUE;
  }
  if ((!multi && !set_only_for(node, "hosts_per_leaf", "leaf-spine, fat-tree", err)) ||
      !set_only_for(node, "leaves", "leaf-spine", err) || !set_only_for(node, "k", "fat-tree", err) ||
      !set_only_for(node, "oversubscription", "leaf-spine, fat-tree", err))
    return FALSE;
  if (!rails)
    return fab_cfg_fail(fab_cfg_get(node, "kind"), err, "%s needs GPU nodes (cluster.node other than host): %s",
                        multi ? "multi-rail" : "rail-optimized",
                        multi ? "plane i joins NIC i of every node" : "rail i joins NIC i of every node");
  if (multi) {
    uint64_t n = nodes / rails;
    if (!t->hosts_per_leaf) return fab_cfg_fail(node, err, "multi-rail needs hosts_per_leaf (nodes per leaf)");
    if (n % t->hosts_per_leaf)
      return fab_cfg_fail(fab_cfg_get(node, "hosts_per_leaf"), err, "%" G_GUINT64_FORMAT " nodes is not a multiple "
                          "of hosts_per_leaf %u", n, t->hosts_per_leaf);
    t->k = rails;                                   /* planes */
    t->leaves = (uint32_t)(n / t->hosts_per_leaf);  /* per plane */
    if (!t->spines) t->spines = t->hosts_per_leaf;
  } else if (!rail_tiers(node, t, nodes / rails, rails, spines0, err)) {
    return FALSE;
  }
  if (t->hosts_per_leaf + t->spines > 65000 || t->leaves > 65000)
    return fab_cfg_fail(node, err, "a switch has at most 65000 ports");
  t->hosts = (uint32_t)nodes;
  return TRUE;
}

/* A ring's `switches`: a number from 3 to 1024. */
static gboolean ring_switches(const FabCfgNode *n, FabTopoSpec *t, GError **err) {
  int64_t v;
  if (fab_cfg_kind(n) != FAB_CFG_NODE_SCALAR || !fab_parse_int(fab_cfg_scalar(n), &v, NULL) || v < 3 || v > 1024)
    return fab_cfg_fail(n, err, "expected a number of switches from 3 to 1024");
  t->leaves = (uint32_t)v;
  return TRUE;
}

/* kind: graph (graph.h): read and checked here, built from the same map. */
static gboolean graph(const FabCfgNode *node, FabTopoSpec *t, uint64_t nodes, const FabCfgNode *nodes_at,
                      const char *what, GError **err) {
  static const char *const keys[] = {"hosts_per_leaf", "leaves", "spines", "oversubscription", "k"};
  for (size_t i = 0; i < G_N_ELEMENTS(keys); i++)
    if (!set_only_for(node, keys[i], "the kinds built from a shape: a graph lists its switches", err)) return FALSE;
  FabGraph g;
  if (!fab_graph_read(node, &g, err)) return FALSE;
  if (nodes && nodes != g.nattach) {
    fab_cfg_fail(fab_cfg_get(node, "hosts"), err, "the graph's hosts list %u attachments, but the cluster has %"
                 G_GUINT64_FORMAT " %s", g.nattach, nodes, what);
    fab_graph_clear(&g);
    return FALSE;
  }
  t->graph = node;
  t->hosts = g.nattach;
  t->leaves = g.nsw;
  t->glinks = g.nlinks;
  t->gdiam = g.diameter;
  t->gmaxp = g.max_ports;
  t->glat = g.default_latency ? MAX(g.max_latency, t->link_latency) : g.max_latency;
  t->gbps = g.max_bps;
  fab_graph_clear(&g);
  return TRUE;
}

/* The topology shape. `nodes` is what it must hold (hosts, or NIC ports for
** GPU nodes; 0: not given), located at nodes_at; `rails` the NICs per GPU
** node (0 for hosts). */
static gboolean read_topology(Read *r, uint64_t nodes, const FabCfgNode *nodes_at, uint32_t nrails,
                              const FabCfgNode *cl, GError **err) {
  const FabCfgNode *node = r->topology;
  FabTopoSpec *t = &r->f.topo;
  if (!fab_cfg_apply(node, NULL, topo_schema, r, err)) return FALSE;
  if (r->tiers || r->pods)
    return fab_cfg_fail(r->tiers ? r->tiers : r->pods, err, "a fat-tree by tiers and pods is not modelled in this version of fabsim "
                        "(give kind: fat-tree, k: the switch radix: a 3-tier k-ary fat-tree)");
  const char *what = nrails ? "NIC ports (nodes x nics_per_node)" : "nodes";
  if (t->kind != FAB_TOPO_RING &&
      ((t->kind != FAB_TOPO_GRAPH && !set_only_for(node, "switches", "ring, graph", err)) ||
       !set_only_for(node, "hosts_per_switch", "ring", err)))
    return FALSE;
  if (t->kind != FAB_TOPO_GRAPH && (!set_only_for(node, "hosts", "graph", err) || !set_only_for(node, "links", "graph", err)))
    return FALSE;
  static const char *const rail_keys[] = {"pod_nodes", "rail_oversubscription", "cores"};
  for (size_t i = 0; i < G_N_ELEMENTS(rail_keys) && t->kind != FAB_TOPO_RAIL; i++)
    if (!set_only_for(node, rail_keys[i], "rail-optimized", err)) return FALSE;
  if (t->kind != FAB_TOPO_LEAF_SPINE &&
      (!set_only_for(node, "dual_tor", "leaf-spine", err) || !set_only_for(node, "dual_plane", "leaf-spine", err)))
    return FALSE;
  switch (t->kind) {
  case FAB_TOPO_SINGLE_SWITCH:
    if (!set_only_for(node, "hosts_per_leaf", "leaf-spine, fat-tree", err) ||
        !set_only_for(node, "leaves", "leaf-spine", err) || !set_only_for(node, "spines", "leaf-spine", err) ||
        !set_only_for(node, "oversubscription", "leaf-spine, fat-tree", err) ||
        !set_only_for(node, "k", "fat-tree", err))
      return FALSE;
    if (!nodes)
      return fab_cfg_fail(cl ? cl : node, err, "single-switch needs cluster.nodes (the number of hosts)");
    if (nodes > 65000) return fab_cfg_fail(nodes_at, err, "a single switch has at most 65000 ports");
    t->hosts = (uint32_t)nodes;
    return TRUE;
  case FAB_TOPO_LEAF_SPINE:
    return leaf_spine(node, t, nodes, nodes_at, what, err);
  case FAB_TOPO_MULTI_RAIL:
  case FAB_TOPO_RAIL:
  case FAB_TOPO_RAIL_ONLY:
    /* spines by default one per rail; with the NICs of a preset's absent GPUs left out (read_gpu_nodes), one per
    ** rail of the preset, so that the rails built keep the uplinks a whole node's would have */
    return rails(node, t, nodes, nrails, MAX(nrails, r->f.gpu.preset_nics), err);
  case FAB_TOPO_RING:
    if (!set_only_for(node, "hosts_per_leaf", "leaf-spine, fat-tree", err) ||
        !set_only_for(node, "leaves", "leaf-spine", err) || !set_only_for(node, "spines", "leaf-spine", err) ||
        !set_only_for(node, "oversubscription", "leaf-spine, fat-tree", err) ||
        !set_only_for(node, "k", "fat-tree", err))
      return FALSE;
    if (!fab_cfg_get(node, "switches") || !fab_cfg_get(node, "hosts_per_switch"))
      return fab_cfg_fail(node, err, "ring needs switches (>= 3) and hosts_per_switch");
    if (!ring_switches(r->switches, t, err)) return FALSE;
    t->hosts = t->leaves * t->hosts_per_leaf;
    if (nodes && nodes != t->hosts)
      return fab_cfg_fail(nodes_at, err, "%" G_GUINT64_FORMAT " nodes, but the ring has %u", nodes, t->hosts);
    return TRUE;
  case FAB_TOPO_FAT_TREE:
    return fat_tree(node, t, nodes, nodes_at, err);
  case FAB_TOPO_GRAPH:
    return graph(node, t, nodes, nodes_at, what, err);
  }
  return FALSE;
}

/* ---- the whole --------------------------------------------------------------- */

/* The ports of the largest switch of the topology (for credits and headroom). */
static uint32_t max_ports(const FabTopoSpec *t) {
  switch (t->kind) {
  case FAB_TOPO_SINGLE_SWITCH: return t->hosts;
  case FAB_TOPO_RING: return t->hosts_per_leaf + 2;
  case FAB_TOPO_FAT_TREE: return MAX(t->hosts_per_leaf + t->k / 2, t->k);
  case FAB_TOPO_GRAPH: return t->gmaxp;
  case FAB_TOPO_RAIL:
    if (t->pod_nodes) return MAX(MAX(t->pod_nodes + t->spines, t->leaves + t->cores), t->k * t->spines);
    return MAX(t->hosts_per_leaf + t->spines, t->leaves);
  default: return MAX(t->hosts_per_leaf + t->spines, t->leaves);
  }
}

/* cluster: and the topology under it. */
static gboolean read_cluster(Read *r, const FabCfgNode *root, const FabCfgNode *cl, GError **err) {
  Read scratch = *r;
  if (!fab_cfg_apply(cl, root, cluster_schema, &scratch, err)) return FALSE; /* which preset */
  r->f.gpu.preset_id = scratch.f.gpu.preset_id;
  return fab_cfg_apply(cl, root, cluster_schema, r, err) && fab_cfg_apply(r->nic, root, nic_schema, r, err);
}

/* The settings that only make sense together. */
static gboolean check_together(Read *r, const FabCfgNode *fab_node, GError **err) {
  FabFabricCfg *out = &r->f;
  if (out->nic.spray == FAB_SPRAY_AVOID && !out->sw.ecn.enabled && !out->nic.srd && !out->nic.selective)
    no_effect(r, fab_cfg_get(r->nic, "spray"), "avoid skips entropy values that carried a congestion mark, "
              "and fabric.switch.ecn is off: no packet is marked, and go-back-n receivers' losses do not steer it, "
              "so avoid sprays as round-robin does"); /* selective: losses steer it (models/nic.h); srd: also RTT */
  return fab_fabric_check_cc(r, err);
}

double fab_fabric_round_trip(const Read *r, uint32_t mtu_wire, double *links_out, double *ser_out) {
  const FabTopoSpec *t = &r->f.topo;
  static const uint32_t diameter[] = {[FAB_TOPO_SINGLE_SWITCH] = 2, [FAB_TOPO_LEAF_SPINE] = 4,
                                      [FAB_TOPO_FAT_TREE] = 6, [FAB_TOPO_RING] = 2, [FAB_TOPO_RAIL] = 4,
                                      [FAB_TOPO_MULTI_RAIL] = 4, [FAB_TOPO_RAIL_ONLY] = 2, [FAB_TOPO_GRAPH] = 2};
  double links = diameter[t->kind] + (t->kind == FAB_TOPO_RING && t->leaves > 1 ? t->leaves - 1 : 0) +
                 (t->kind == FAB_TOPO_GRAPH ? t->gdiam : 0) + (t->pod_nodes && t->k > 1 ? 2 : 0);
  const double lat = (double)fab_topo_max_latency(t);
  double slow = (double)MIN(t->link_bps, t->host_bps);
  double ser = (double)mtu_wire * 8 / slow * 1e12, ack = (double)r->f.nic.transport.ack_bytes * 8 / slow * 1e12;
  if (links_out) *links_out = links;
  if (ser_out) *ser_out = ser;
  return links * (2.0 * lat + ser + ack) + 2 * (links - 1) * (double)r->f.sw.latency;
}

/* An unloaded round trip across the fabric must fit in the retransmission
** timeout: otherwise every packet times out and the run fails after
** max_timeouts x rto, where the fault is in the scenario (a 1bps link, a
** latency of 1000s). */
static gboolean check_round_trip(Read *r, uint32_t mtu_wire, GError **err) {
  const FabTopoSpec *t = &r->f.topo;
  double links, ser, rtt = fab_fabric_round_trip(r, mtu_wire, &links, &ser);
  if (rtt < (double)r->f.nic.rto) return TRUE;
  double ack = (double)r->f.nic.transport.ack_bytes * 8 / (double)MIN(t->link_bps, t->host_bps) * 1e12;
  gboolean wire = links * (ser + ack) >= rtt / 2;
  const FabCfgNode *at = fab_cfg_get(r->nic, "rto") ? fab_cfg_get(r->nic, "rto")
                         : fab_cfg_get(r->link, wire ? "bandwidth" : "latency");
  return fab_cfg_fail(at ? at : r->link ? r->link : r->topology, err, "an unloaded round trip across the fabric takes %.4g s (%g links, "
                      "each %.4g s of latency and %.4g s to send a %u-byte packet), at least the retransmission "
                      "timeout cluster.nic.rto (%.4g s): every packet would time out; check the link's %s or raise "
                      "the rto", rtt / 1e12, links, (double)t->link_latency / 1e12, ser / 1e12, mtu_wire,
                      (double)r->f.nic.rto / 1e12, wire ? "bandwidth" : "latency");
}

/* InfiniBand credits, or the PFC headroom reserved out of the buffer. */
static gboolean buffer_split(Read *r, GError **err) {
  FabFabricCfg *out = &r->f;
  const FabTopoSpec *t = &out->topo;
  uint64_t buffer = out->sw.buffer;
  uint32_t ports = max_ports(t);
  if (out->nic.transport.kind == FAB_TRANSPORT_INFINIBAND) {
    /* credit-based flow control: sized once the VLs in use are known (fab_fabric_cfg_credits) */
    if (out->sw.pfc.enabled) {
      no_effect(r, fab_cfg_get(r->pfc, "enabled"), "infiniband uses credit-based link-level flow control, not "
                "PFC (PFC is for rocev2): PFC is off");
      out->sw.pfc.enabled = false;
    }
    uint64_t c = 0;
    gboolean is_auto = TRUE;
    if (r->credits && !size_or(r->credits, "auto", &c, &is_auto, err)) return FALSE;
    if (!is_auto && c < out->sw.mtu_wire)
      return fab_cfg_fail(r->credits, err, "%" G_GUINT64_FORMAT " B of credit per port and VL is less than one packet "
                          "(%u B): a smaller mtu, or more credit", c, out->sw.mtu_wire);
    if (is_auto && buffer / ports < out->sw.mtu_wire) /* even with one VL in use: refused now, before a build */
      return fab_cfg_fail(at_key(r->sw, "buffer", r->sw), err, "buffer %" G_GUINT64_FORMAT " B over %u ports is %"
                          G_GUINT64_FORMAT " B of credit each, less than one packet (%u B): a larger buffer, or a "
                          "smaller mtu", buffer, ports, buffer / ports, out->sw.mtu_wire);
    out->credits_auto = is_auto;
    out->credits_given = is_auto ? 0 : c;
    out->sw.credits = is_auto ? buffer / ports : c; /* until the VLs are known: one */
  } else if (r->credits) {
    no_effect(r, r->credits, "credits are for transport infiniband (%s uses %s)",
              fab_transport_names[out->nic.transport.kind], out->sw.pfc.enabled ? "PFC" : "no link-level flow "
              "control here: fabric.switch.pfc is off");
  }
  if (out->sw.pfc.enabled) { /* reserve the headroom out of the buffer, at the worst port */
    const FabPfcCfg *c = &out->sw.pfc;
    uint64_t h = c->headroom ? c->headroom
                             : fab_pfc_headroom_auto(fab_topo_max_bps(t), fab_topo_max_latency(t), c->response,
                                                     c->mtu_wire);
    uint64_t per = (uint64_t)ports * (uint64_t)__builtin_popcount(c->lossless), reserve;
    if (__builtin_mul_overflow(per, h, &reserve)) reserve = UINT64_MAX;
    if (reserve >= buffer - c->mtu_wire)
      return fab_cfg_fail(fab_cfg_get(r->sw, "buffer"), err, "buffer %" G_GUINT64_FORMAT " B leaves nothing "
                          "shared after PFC headroom (%u ports x %d lossless priorities x %" G_GUINT64_FORMAT
                          " B = %" G_GUINT64_FORMAT " B; list only the lossless classes in "
                          "fabric.switch.pfc.priorities, or give a smaller headroom)", buffer, ports,
                          __builtin_popcount(c->lossless), h, reserve);
    out->sw.buffer = buffer - reserve; /* the shared part */
    out->sw.pfc_reserved = reserve;
  }
  return TRUE;
}

gboolean fab_fabric_cfg_credits(FabFabricCfg *f, uint32_t prios, GPtrArray *warnings, GError **err) {
  if (f->nic.transport.kind != FAB_TRANSPORT_INFINIBAND) return TRUE;
  uint32_t vls = MAX(1u, (uint32_t)__builtin_popcount(prios & ((1u << f->sw.nprio) - 1))), ports = max_ports(&f->topo);
  uint64_t buffer = f->sw.buffer, share = buffer / ((uint64_t)ports * vls);
  uint64_t c = f->credits_auto ? share : f->credits_given;
  if (f->credits_auto && c < f->sw.mtu_wire)
    return fab_cfg_fail(fab_cfg_get(f->sw_node, "buffer") ? fab_cfg_get(f->sw_node, "buffer") : f->sw_node, err,
                        "buffer %" G_GUINT64_FORMAT " B over %u ports x %u VLs in use is %" G_GUINT64_FORMAT " B of "
                        "credit each, less than one packet (%u B): a larger buffer, or a smaller mtu", buffer, ports,
                        vls, c, f->sw.mtu_wire);
  if (!f->credits_auto && c > share)
    return fab_cfg_fail(f->credits_node, err, "%u ports x %u VLs in use x %" G_GUINT64_FORMAT " B of credit is more "
                        "than the buffer (%" G_GUINT64_FORMAT " B)", ports, vls, c, buffer);
  f->sw.credits = c;
  f->credit_vls = vls;
  /* the credit loop: a packet out, the credit back, at the fastest link */
  uint64_t bps = fab_topo_max_bps(&f->topo);
  fab_time_t loop = 2 * fab_topo_max_latency(&f->topo) + f->sw.latency + 2 * fab_time_ser(f->sw.mtu_wire, bps);
  uint64_t bdp = (uint64_t)((unsigned __int128)bps * loop / (8 * FAB_S)) + f->sw.mtu_wire;
  if (c < bdp && warnings)
    g_ptr_array_add(warnings, g_strdup_printf(
        "fabric.switch: InfiniBand credits of %" G_GUINT64_FORMAT " B per (port, VL) (%s) are less than the credit "
        "loop's bandwidth-delay product, %" G_GUINT64_FORMAT " B (%.6g Gbps over a %.6g us loop): one flow can keep "
        "only about %.0f%% of a link busy; give a larger buffer, fewer ports per switch or fewer VLs",
        c, f->credits_auto ? "the buffer shared by the ports and the VLs in use" : "fabric.switch.credits", bdp,
        (double)bps / 1e9, fab_time_to_s(loop) * 1e6, 100.0 * (double)c / (double)bdp));
  return TRUE;
}

/* The network's view of the cluster: hosts, or the NIC ports of GPU nodes. */
static gboolean read_endpoints(Read *r, const FabCfgNode *cl, uint64_t *preset_nic_bps, GError **err) {
  FabGpuSpec *g = &r->f.gpu;
  if (g->preset_id != 0) { /* GPU nodes: the network sees their NIC ports */
    if (!read_gpu_nodes(r, cl, preset_nic_bps, err)) return FALSE;
    uint64_t ports = (uint64_t)g->nodes * g->nics_per_node;
    if (!read_topology(r, ports, NULL, g->nics_per_node, NULL, err)) return FALSE;
    if (r->f.topo.hosts != ports)
      return fab_cfg_fail(r->topology, err, "the topology has %u NIC ports, but %u nodes x %u NICs need %"
                          G_GUINT64_FORMAT, r->f.topo.hosts, g->nodes, g->nics_per_node, ports);
    if (r->f.topo.dual_tor && (g->nics_per_node < g->gpus_per_node || (g->nics_per_node / g->gpus_per_node) % 2))
      return fab_cfg_fail(fab_cfg_get(r->topology, "dual_tor"), err, "dual-ToR puts each GPU's NIC ports on two "
                          "leaves: %u NIC ports for %u GPUs is not an even number per GPU (give nics_per_node: %u and "
                          "the port rate in cluster.nic.bandwidth: a dual-port NIC, whose ports NCCL uses as two "
                          "devices)", g->nics_per_node, g->gpus_per_node, 2 * g->gpus_per_node);
    return TRUE;
  }
  static const char *const gpu_only[] = {"gpus_per_node", "nics_per_node", "nvlink_domain", "nvlink", "pcie",
                                         "gpu", "pxn", "cpu", "node_topology", NULL};
  for (int i = 0; cl && gpu_only[i]; i++)
    if (fab_cfg_get(cl, gpu_only[i]))
      return fab_cfg_fail(fab_cfg_get(cl, gpu_only[i]), err,
                          "'%s' is for GPU nodes; node: host has one NIC and no GPU", gpu_only[i]);
  g->preset = "host";
  if (!read_topology(r, g->nodes, fab_cfg_get(cl, "nodes"), 0, cl, err)) return FALSE;
  if (r->f.topo.dual_tor)
    return fab_cfg_fail(fab_cfg_get(r->topology, "dual_tor"), err, "dual-ToR needs endpoints with two network ports: "
                        "node: host has one NIC of one port (give GPU nodes with two NIC ports per GPU)");
  return TRUE;
}

gboolean fab_fabric_cfg_read(const FabCfgNode *root, FabFabricCfg *out, GPtrArray *warnings, GError **err) {
  Read r = {0};
  r.warnings = warnings;
  const FabCfgNode *cl = fab_cfg_get(root, "cluster"), *fab_node = fab_cfg_get(root, "fabric");
  memset(out, 0, sizeof *out);
  if (!read_cluster(&r, root, cl, err)) return FALSE;
  if (!fab_node) return fab_cfg_fail(root, err, "missing required key 'fabric'");
  if (!fab_cfg_apply(fab_node, root, fabric_schema, &r, err)) return FALSE;
  const FabNodePreset *np = fab_preset_find(fab_preset_names[r.f.gpu.preset_id]);
  if (!fab_cfg_get(fab_node, "transport") && np && np->transport && !strcmp(np->transport, "srd"))
    r.f.nic.transport.kind = FAB_TRANSPORT_SRD; /* EFA speaks only SRD (AWS EFA documentation) */
  r.fabric = fab_node;
  if (!fab_fabric_read_failures(&r, err)) return FALSE;
  if (!fab_cfg_apply(r.link, root, link_schema, &r, err) || !fab_cfg_apply(r.sw, fab_node, switch_schema, &r, err))
    return FALSE;
  r.f.nic.transport = fab_transport_get(r.f.nic.transport.kind);
  if (!fab_fabric_read_sharp(&r, err)) return FALSE;
  if (!fab_fabric_read_transport(&r, err) || !read_segment(&r, fab_node, err)) return FALSE;
  uint32_t per = r.f.nic.seg ? r.f.nic.seg / r.f.nic.mtu : 1; /* packets in the largest unit on the wire */
  uint32_t mtu_wire = per * (r.f.nic.mtu + r.f.nic.transport.data_overhead);
  if (!read_pfc(&r, mtu_wire, err) || !read_ecn(&r, err) || !fab_fabric_read_cc(&r, err)) return FALSE;
  uint64_t nic_bps = r.f.topo.host_bps, preset_nic_bps = 0; /* cluster.nic.bandwidth, 0: not given */
  if (!read_endpoints(&r, cl, &preset_nic_bps, err) || !fab_fabric_read_routing(&r, mtu_wire, err)) return FALSE;
  uint64_t buffer = r.f.sw.buffer;
  if (buffer < (uint64_t)r.f.nic.mtu + 128)
    return fab_cfg_fail(fab_cfg_get(r.sw, "buffer"), err, "buffer %" G_GUINT64_FORMAT " B cannot hold one packet of "
                        "mtu %u (expected at least %" G_GUINT64_FORMAT " B: mtu + 128 B of headers)", buffer,
                        r.f.nic.mtu, (uint64_t)r.f.nic.mtu + 128);
  if (buffer < (uint64_t)per * (r.f.nic.mtu + 128))
    return fab_cfg_fail(fab_cfg_get(r.sw, "buffer"), err, "buffer %" G_GUINT64_FORMAT " B cannot hold one train of "
                        "fabric.segment %u B (expected at least %" G_GUINT64_FORMAT " B: %u packets of mtu + 128 B "
                        "of headers)", buffer, r.f.nic.seg, (uint64_t)per * (r.f.nic.mtu + 128), per);
  FabTopoSpec *t = &r.f.topo;
  if (!t->link_bps) { /* GPU nodes: the preset's NIC rate serves (a single node needs no fabric.link) */
    if (!preset_nic_bps)
      return r.link ? fab_cfg_fail(r.link, err, "missing required key 'bandwidth' (a rate)")
                    : fab_cfg_fail(fab_node, err, "missing required key 'link' (a map: {bandwidth: 100Gbps, ...}; "
                                   "only GPU node presets have a default, their NIC's rate)");
    t->link_bps = preset_nic_bps;
  }
  /* A NIC links at the slower of its own rate and its switch port's: a
  ** preset's 400 Gb/s NIC on 200 Gb/s fabric links runs at 200. A rate given
  ** in cluster.nic.bandwidth is taken as it is. */
  r.f.nic_preset_bps = preset_nic_bps;
  t->host_bps = nic_bps ? nic_bps : preset_nic_bps ? MIN(preset_nic_bps, t->link_bps) : t->link_bps;
  r.f.nic.bps = t->host_bps;
  r.f.nic.nprio = r.f.sw.nprio;
  r.f.nic.ecmp_seed = r.f.sw.ecmp_seed;
  r.f.nic.hash = (uint8_t)r.f.sw.hash;
  if (!check_together(&r, fab_node, err) || !check_round_trip(&r, mtu_wire, err)) return FALSE;
  fab_fabric_cc_finish(&r, mtu_wire);
  if (r.f.gpu.gpus_per_node) {
    r.f.nic.nvl_domain = r.f.gpu.nvlink_domain;
    r.f.nic.nvl_bps = r.f.gpu.nvlink_bps;
    r.f.nic.nvl_mtu = r.f.gpu.segment;
    r.f.nic.nvl_overhead = NVL_OVERHEAD;
    r.f.nic.nvls_eff = r.f.gpu.nvls ? r.f.gpu.nvls_eff : 0;
    r.f.nic.pxn_rails = r.f.gpu.pxn ? r.f.gpu.gpus_per_node : 0;
    uint32_t per_gpu = r.f.gpu.nics_per_node / r.f.gpu.gpus_per_node; /* NICs of one GPU (p5: 4) */
    if (r.f.nic.srd && per_gpu > 1) { /* aws-ofi-nccl stripes a message over them (models/nic.h) */
      r.f.nic.stripe_rails = per_gpu;
      r.f.nic.stripe_min = 128 * 1024; /* aws-ofi-nccl include/nccl_ofi_param.h: MIN_STRIPE_SIZE 128 KiB */
    }
  }
  r.f.sw.mtu_wire = mtu_wire;
  r.f.sw_node = r.sw;
  r.f.credits_node = r.credits;
  if (!buffer_split(&r, err)) return FALSE;
  *out = r.f;
  return TRUE;
}

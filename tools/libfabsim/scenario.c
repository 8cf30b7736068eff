/* Scenario loading: the top-level keys, then each layer reads its part.
** See scenario.h. */
#include "scenario.h"
#include "topologies/failures.h"
#include "results.h"
#include "topologies/presets.h"
#include <string.h>
#include <unistd.h>

typedef struct TopIn {
  const char *name;
  uint64_t seed, stop_time;
  const FabCfgNode *cluster, *fabric, *workload, *output;
} TopIn;

static const FabCfgKey top_schema[] = {
  FAB_CFG_KEY("name", FAB_CFG_STRING, TopIn, name),
  FAB_CFG_KEY("seed", FAB_CFG_UINT, TopIn, seed, .def = "1"),
  FAB_CFG_KEY("stop_time", FAB_CFG_TIME, TopIn, stop_time, .min = 1, .max = 1e18),
  FAB_CFG_KEY("cluster", FAB_CFG_MAP, TopIn, cluster),
  FAB_CFG_KEY("fabric", FAB_CFG_MAP, TopIn, fabric, .required = true),
  FAB_CFG_KEY("workload", FAB_CFG_NODE, TopIn, workload, .required = true), /* a map, or a list of jobs */
  FAB_CFG_KEY("output", FAB_CFG_MAP, TopIn, output),
  FAB_CFG_END_ROW,
};

typedef struct OutputIn {
  const char *hdf5;
  const char *perfetto;
  uint64_t sample_interval;
  const FabCfgNode *plots; /* in the contract, not built: refused as such */
} OutputIn;

static const FabCfgKey output_schema[] = {
  FAB_CFG_KEY("hdf5", FAB_CFG_STRING, OutputIn, hdf5),
  FAB_CFG_KEY("perfetto", FAB_CFG_STRING, OutputIn, perfetto),
  FAB_CFG_KEY("sample_interval", FAB_CFG_TIME, OutputIn, sample_interval, .def = "10us", .min = 1000, .max = 1e15),
  FAB_CFG_KEY("plots", FAB_CFG_NODE, OutputIn, plots),
  FAB_CFG_END_ROW,
};

/* PFC on priorities no job sends on pauses nothing, while its headroom is
** still reserved out of the buffer (the lossy traffic gets less): a setting
** with no effect, said so (README "Settings with no effect"). */
static void pfc_unused(FabScenario *sc, uint32_t prios) {
  const FabPfcCfg *c = &sc->fabric.sw.pfc;
  if (!c->enabled || !prios || (c->lossless & prios)) return;
  const FabCfgNode *pfc = fab_cfg_get(sc->fabric.sw_node, "pfc");
  const FabCfgNode *at = fab_cfg_get(pfc, "priorities") ? fab_cfg_get(pfc, "priorities") : fab_cfg_get(pfc, "enabled");
  GString *used = g_string_new(NULL);
  for (int p = 0; p < 8; p++)
    if (prios & (1u << p)) g_string_append_printf(used, "%s%d", used->len ? ", " : "", p);
  g_ptr_array_add(sc->warnings, g_strdup_printf("%s: %s: has no effect: no job sends on a lossless priority (the "
                                                "jobs use %s), so PFC pauses nothing; its headroom is still reserved "
                                                "out of the buffer", fab_cfg_where(at), fab_cfg_path(at), used->str));
  g_string_free(used, TRUE);
}

/* Trains ride the network only: when no flow leaves its NVLink domain (one
** GPU node, say), fabric.segment changes nothing. */
static void segment_unused(FabScenario *sc, const FabCfgNode *root) {
  uint32_t dom = sc->fabric.nic.nvl_domain;
  if (!sc->fabric.nic.seg) return;
  for (uint32_t i = 0; i < fab_dag_len(sc->dag); i++) {
    const FabOp *o = fab_dag_op(sc->dag, i);
    if (o->kind == FAB_OP_FLOW && !(dom && o->src / dom == o->dst / dom)) return;
  }
  const FabCfgNode *at = fab_cfg_get(fab_cfg_get(root, "fabric"), "segment");
  g_ptr_array_add(sc->warnings, g_strdup_printf("%s: %s: has no effect: no flow leaves its NVLink domain, so no "
                                                "train goes on the network (NVLink moves nvlink.segment pieces)",
                                                fab_cfg_where(at), fab_cfg_path(at)));
}

/* What the collective algorithms and the tuner know of the fabric. */
static void coll_env(const FabFabricCfg *f, FabCollEnv *e) {
  const FabGpuSpec *g = &f->gpu;
  static const uint32_t links[] = {[FAB_TOPO_SINGLE_SWITCH] = 2, [FAB_TOPO_LEAF_SPINE] = 4, [FAB_TOPO_FAT_TREE] = 6,
                                   [FAB_TOPO_RING] = 4, [FAB_TOPO_RAIL] = 4, [FAB_TOPO_MULTI_RAIL] = 4,
                                   [FAB_TOPO_RAIL_ONLY] = 2, [FAB_TOPO_GRAPH] = 2};
  _Static_assert(sizeof links / sizeof links[0] == FAB_TOPO_GRAPH + 1, "a path length per topology kind");
  uint32_t l = links[f->topo.kind] + (f->topo.kind == FAB_TOPO_GRAPH ? f->topo.gdiam : 0) +
               (f->topo.pod_nodes && f->topo.k > 1 ? 2 : 0); /* rail-optimized in 3 tiers: through a core */
  memset(e, 0, sizeof *e);
  e->endpoints = g->gpus_per_node ? g->nodes * g->gpus_per_node : f->topo.hosts;
  e->gpus_per_node = g->gpus_per_node ? g->gpus_per_node : 1;
  e->nvl_domain = f->nic.nvl_domain;
  e->sm = fab_arch_facts(g->arch).sm;
  e->cpu = (uint32_t)g->cpu; /* FabCpu and FAB_COLL_CPU_* share their order */
  e->nvls = g->nvls;
  e->nvls_eff = g->nvls_eff;
  e->nics_per_node = g->gpus_per_node ? g->nics_per_node : 1;
  e->nic_bps = f->topo.host_bps;
  e->pcie_bps = g->gpus_per_node ? (g->gpudirect ? g->pcie_bps : MIN(g->pcie_bps, g->host_bps)) : 0;
  e->net_bps = g->gpus_per_node ? f->topo.host_bps * g->nics_per_node / g->gpus_per_node : f->topo.host_bps;
  e->nvl_bps = g->nvlink_domain ? g->nvlink_bps : 0;
  _Static_assert(FAB_MESH_MAX == FAB_MESH_RING_MAX, "one limit for a mesh's GPUs");
  e->nvl_mesh = g->nvlink_domain && g->nvlink_mesh;
  /* unloaded NIC to NIC across the fabric's diameter (a tier-2 path for leaf-spine) */
  e->net_lat = l * fab_topo_max_latency(&f->topo) + (l - 1) * f->sw.latency + (g->gpus_per_node ? 2 * g->pcie_latency : 0);
  e->nvl_lat = g->nvlink_latency;
  e->pcie_lat = g->gpus_per_node ? g->pcie_latency : 0;
  /* EFA: aws-ofi-nccl reports 75 us on p4d and p5, and for platforms it does not know (src/platform-aws.cpp,
  ** platform_data_map[].latency; src/nccl_ofi_net.cpp: props->latency) */
  e->plugin_lat_us = f->nic.transport.kind == FAB_TRANSPORT_SRD ? 75.0 : 0;
  e->reduce_Bps = (double)g->reduce_bps / 8;
  e->srd = f->nic.transport.kind == FAB_TRANSPORT_SRD;
  const FabNodePreset *np = fab_preset_find(fab_preset_names[g->preset_id]);
  e->ofi_default = np && np->ofi_protocol && !strcmp(np->ofi_protocol, "rdma") ? FAB_OFI_RDMA : FAB_OFI_SENDRECV;
  e->ofi_platform = np && np->ofi_platform && !strcmp(np->ofi_platform, "p5") ? FAB_OFI_PLATFORM_P5
                                                                               : FAB_OFI_PLATFORM_NONE;
  e->collnet = f->sharp.enabled;
  e->sharp_fail = f->sharp.on_no_resources == FAB_SHARP_FAIL;
}

/* FabCollEnv.sharp_claim: the scenario's plan. */
static int32_t sharp_claim(void *ctx, uint32_t job, const uint32_t *ranks, uint32_t n, char **why) {
  return fab_sharp_plan_claim(ctx, job, ranks, n, why);
}

/* A multi-rail or rail-only fabric's rails are not joined: a flow across rails needs PXN. */
static gboolean check_rails(const FabScenario *sc, const FabCfgNode *root, GError **err) {
  const FabGpuSpec *g = &sc->fabric.gpu;
  if (!fab_topo_rails_apart(sc->fabric.topo.kind) || g->pxn) return TRUE;
  for (guint i = 0; i < fab_dag_len(sc->dag); i++) {
    const FabOp *f = fab_dag_op(sc->dag, i);
    uint32_t G = g->gpus_per_node, dom = g->nvlink_domain ? g->nvlink_domain : G;
    if (f->kind == FAB_OP_FLOW && f->src / dom != f->dst / dom && f->src % G != f->dst % G) {
      const FabCfgNode *wl = fab_cfg_get(root, "workload"), *fl = fab_cfg_get(wl, "flows");
      const FabCfgNode *at = fl && i < fab_cfg_len(fl) ? fab_cfg_get(fab_cfg_at(fl, i), "dst") : fab_cfg_get(wl, "kind");
      return fab_cfg_fail(at ? at : wl, err, "GPU %u and GPU %u are on different rails of a %s fabric, whose "
                          "rails are not joined: set cluster.pxn: true to relay through NVLink", f->src, f->dst,
                          sc->fabric.topo.kind == FAB_TOPO_RAIL_ONLY ? "rail-only" : "multi-rail");
    }
  }
  return TRUE;
}

/* The workload's view of the cluster; FALSE + err on a bad cluster.nccl. */
static gboolean workload_env(FabScenario *sc, uint64_t seed, FabWorkloadEnv *env, GError **err) {
  const FabGpuSpec *g = &sc->fabric.gpu;
  memset(env, 0, sizeof *env);
  env->endpoints = g->gpus_per_node ? g->nodes * g->gpus_per_node : sc->fabric.topo.hosts;
  env->nprio = sc->fabric.sw.nprio;
  env->seed = seed;
  coll_env(&sc->fabric, &env->coll);
  env->coll.warnings = sc->warnings;
  if (sc->fabric.sharp.enabled) { /* trees are planned on a topology of their own (the run builds another) */
    sc->sharp_topo = fab_topology_build(&sc->fabric);
    sc->sharp = fab_sharp_plan_new(sc->sharp_topo, &sc->fabric.sharp);
    env->coll.sharp_claim = sharp_claim;
    env->coll.sharp_ctx = sc->sharp;
  }
  env->gpu_flops = g->gpu_flops;
  env->gpu_eff = g->gpu_efficiency;
  env->gpu_mem_bps = g->memory_bps;
  env->coll.costs = fab_coll_costs_unset();
  if (!fab_cfg_apply(sc->fabric.nccl, NULL, fab_nccl_schema, &env->coll.costs, err)) return FALSE;
  for (int k = 0; k < 2; k++) {
    const FabCfgNode *ofi = fab_cfg_get(sc->fabric.nccl, k ? "ofi_tuner" : "ofi_protocol");
    if (ofi && !env->coll.srd)
      g_ptr_array_add(sc->warnings, g_strdup_printf("%s: %s: has no effect: aws-ofi-nccl is NCCL's plugin on EFA only "
                                                    "(fabric.transport srd)", fab_cfg_where(ofi), fab_cfg_path(ofi)));
    else if (ofi && k && env->coll.costs.ofi_tuner == FAB_OFI_TUNER_REGION && !env->coll.ofi_platform)
      g_ptr_array_add(sc->warnings, g_strdup_printf("%s: %s: has no effect: aws-ofi-nccl's tuner has regions for "
                                                    "p5 and p5e only (node preset aws-p5); elsewhere NCCL chooses",
                                                    fab_cfg_where(ofi), fab_cfg_path(ofi)));
  }
  fab_coll_costs_resolve(&env->coll);
  sc->nccl = env->coll.costs; /* for validate --explain */
  sc->ofi_platform = env->coll.ofi_platform;
  return TRUE;
}

/* ---- resources ---------------------------------------------------------- */

static uint64_t mem_limit; /* 0: the machine's */

void fab_scenario_set_mem_limit(uint64_t bytes) { mem_limit = bytes; }

uint64_t fab_scenario_mem_limit(void) {
  if (mem_limit) return mem_limit;
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  uint64_t phys = pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 4ull << 30;
  return phys / 4 * 3;
}

/* Besides the topology: the program itself and its tables (measured: the
** quickstart's peak is about 10 MB). */
#define MEM_BASE (16ull << 20)
/* Per operation of the DAG: the op and its dependencies (about 3 x 4 B), the
** executor's state (40 B) and dependents' lists (about 3 x 8 B), its flow
** number (4 B). */
#define MEM_PER_OP (sizeof(FabOp) + 80)
/* Per flow: its record for the results and its numbers (op, slot). */
#define MEM_PER_FLOW (sizeof(FabFlowRec) + 2 * sizeof(uint32_t))
/* An unfolding DAG holds about this many batches of the size of its first
** (the one running, the next, and those done but not yet retired). */
#define UNFOLD_HELD 4u
/* Flows under way at once per endpoint, of those that wait for others (an
** estimate: NCCL keeps a few pieces in flight per channel and peer). */
#define FLOWS_UNDER_WAY 64u

static char *gb(uint64_t bytes) {
  return bytes >= (1ull << 30) ? g_strdup_printf("%.1f GB", (double)bytes / 1e9)
                               : g_strdup_printf("%.0f MB", (double)bytes / 1e6);
}

/* Fail at `at`: "<what, with the estimate>: more than the <limit> this run may use ...". FALSE. */
static gboolean over_limit(const FabCfgNode *at, GError **err, char *what) {
  char *lim = gb(fab_scenario_mem_limit());
  fab_cfg_fail(at, err, "%s: more than the %s this run may use (three quarters of the machine's memory, or "
               "--max-memory)", what, lim);
  g_free(lim);
  g_free(what);
  return FALSE;
}

/* The topology alone, before the workload is expanded on it. */
static gboolean check_topology_mem(FabScenario *sc, const FabCfgNode *root, GError **err) {
  FabFootprint fp = fab_topology_footprint(&sc->fabric);
  sc->mem_bytes = MEM_BASE + fp.bytes;
  if (sc->mem_bytes <= fab_scenario_mem_limit()) return TRUE;
  const FabCfgNode *fabric = fab_cfg_get(root, "fabric"), *topo = fab_cfg_get(fabric, "topology");
  const FabCfgNode *at = sc->fabric.gpu.gpus_per_node ? fab_cfg_get(fab_cfg_get(root, "cluster"), "nodes") : NULL;
  char *need = gb(sc->mem_bytes);
  char *what = g_strdup_printf("the fabric would use about %s to build (%" G_GUINT64_FORMAT " switches, each keeping "
                               "a route to each of %" G_GUINT64_FORMAT " endpoints; %" G_GUINT64_FORMAT " ports)",
                               need, fp.switches, fp.endpoints, fp.ports);
  g_free(need);
  return over_limit(at ? at : topo ? topo : fabric, err, what);
}

/* The flows' packet counts, and the whole estimate once the workload is
** known. */
static gboolean check_workload(FabScenario *sc, const FabCfgNode *root, GError **err) {
  const FabCfgNode *wl = fab_cfg_get(root, "workload"), *fl = fab_cfg_get(wl, "flows");
  uint64_t mtu = sc->fabric.nic.mtu;
  if (sc->fabric.gpu.gpus_per_node && sc->fabric.gpu.segment) mtu = MIN(mtu, sc->fabric.gpu.segment);
  uint32_t nflows = 0, roots = 0;
  for (uint32_t i = 0; i < fab_dag_len(sc->dag); i++) {
    const FabOp *o = fab_dag_op(sc->dag, i);
    if (o->kind != FAB_OP_FLOW) continue;
    nflows++;
    roots += o->ndeps == 0;
    uint64_t pkts = o->bytes / mtu + (o->bytes % mtu != 0);
    if (pkts < UINT32_MAX) continue;
    const FabCfgNode *at = fl && i < fab_cfg_len(fl) ? fab_cfg_get(fab_cfg_at(fl, i), "size") : NULL;
    if (!at) at = fab_cfg_get(wl, "size") ? fab_cfg_get(wl, "size") : wl;
    return fab_cfg_fail(at, err, "a flow of %" G_GUINT64_FORMAT " bytes from endpoint %u to %u would be %"
                        G_GUINT64_FORMAT " packets of %" G_GUINT64_FORMAT " bytes: more than the %u one flow can "
                        "number (raise fabric.link.mtu or send less)", o->bytes, o->src, o->dst, pkts, mtu,
                        UINT32_MAX - 1);
  }
  /* a flow holds its transport state only while it is under way (driver.c): every flow that waits for
  ** nothing may run at once; of the others, count FLOWS_UNDER_WAY per endpoint */
  uint64_t endpoints = sc->fabric.gpu.gpus_per_node ? (uint64_t)sc->fabric.gpu.nodes * sc->fabric.gpu.gpus_per_node
                                                    : sc->fabric.topo.hosts;
  uint64_t live = roots + MIN((uint64_t)(nflows - roots), FLOWS_UNDER_WAY * endpoints);
  uint64_t ops = fab_dag_len(sc->dag) * (uint64_t)MEM_PER_OP + (uint64_t)nflows * MEM_PER_FLOW + live * sizeof(FabFlow);
  if (sc->dag->more) { /* made as it runs: the ops under way (the first batch, the next, and those not yet
                        ** retired: UNFOLD_HELD batches), and per flow to come its completion time, or its whole
                        ** record when output.hdf5 keeps them */
    uint64_t later = (uint64_t)sc->dag->more_ops;
    ops += (UNFOLD_HELD - 1) * fab_dag_len(sc->dag) * (uint64_t)MEM_PER_OP +
           later * (sc->hdf5 ? MEM_PER_FLOW : sizeof(uint32_t));
  }
  sc->mem_bytes += ops;
  if (sc->mem_bytes <= fab_scenario_mem_limit()) return TRUE;
  char *need = gb(sc->mem_bytes), *w = gb(ops);
  char *what = sc->dag->more
                   ? g_strdup_printf("the run would use about %s (%s of it for the workload's operations, %u made "
                                     "before the run and about %.0f more as it goes)", need, w, fab_dag_len(sc->dag),
                                     sc->dag->more_ops)
                   : g_strdup_printf("the run would use about %s (%s of it for the workload's %u operations, %u of "
                                     "them flows)", need, w, fab_dag_len(sc->dag), nflows);
  g_free(need);
  g_free(w);
  return over_limit(wl, err, what);
}

FabScenario *fab_scenario_from_cfg(FabCfg *cfg, const char *default_name, GError **err) {
  FabScenario *sc = g_new0(FabScenario, 1);
  sc->warnings = g_ptr_array_new_with_free_func(g_free);
  TopIn top = {0};
  OutputIn out = {0};
  sc->cfg = cfg;
  const FabCfgNode *root = fab_cfg_root(cfg);
  if (!fab_cfg_apply(root, NULL, top_schema, &top, err) || !fab_cfg_apply(top.output, root, output_schema, &out, err) ||
      (out.plots && !fab_cfg_fail(out.plots, err, "output.plots is not modelled in this version of fabsim: write "
                                  "output.hdf5 and draw it with fabsim plot")) ||
      !fab_fabric_cfg_read(root, &sc->fabric, sc->warnings, err))
    goto fail;
  if (fab_topology_elements(&sc->fabric) > FAB_ELEM_MAX_ID) {
    fab_cfg_fail(fab_cfg_get(top.fabric, "topology"), err, "the fabric has %" G_GUINT64_FORMAT " elements (ports, "
                 "switches, NICs, GPUs): more than the %u one run can number", fab_topology_elements(&sc->fabric),
                 FAB_ELEM_MAX_ID);
    goto fail;
  }
  if (!check_topology_mem(sc, root, err) || !fab_failures_check(&sc->fabric, err)) goto fail;
  FabWorkloadEnv env;
  if (!workload_env(sc, top.seed, &env, err)) goto fail;
  sc->dag = fab_workload_read(root, &env, err);
  if (!sc->dag || !check_rails(sc, root, err) || !check_workload(sc, root, err)) goto fail;
  uint32_t prios = 0; /* the priorities (InfiniBand VLs) the workload uses */
  for (uint32_t i = 0; i < fab_dag_len(sc->dag); i++)
    if (fab_dag_op(sc->dag, i)->kind <= FAB_OP_NVLS) prios |= 1u << fab_dag_op(sc->dag, i)->prio;
  if (!fab_fabric_cfg_credits(&sc->fabric, prios, sc->warnings, err)) goto fail;
  pfc_unused(sc, prios);
  segment_unused(sc, root);
  sc->name = top.name ? top.name : (sc->own_name = g_strdup(default_name ? default_name : "quickstart"));
  sc->seed = top.seed;
  sc->fabric.sw.seed = sc->fabric.nic.seed = top.seed;
  sc->stop_time = top.stop_time ? top.stop_time : FAB_TIME_MAX;
  sc->hdf5 = out.hdf5 && *out.hdf5 ? out.hdf5 : NULL;
  sc->perfetto = out.perfetto && *out.perfetto ? out.perfetto : NULL;
  sc->sample_interval = out.sample_interval;
  sc->topology = fab_topology_describe(&sc->fabric.topo);
  return sc;
fail:
  fab_scenario_free(sc);
  return NULL;
}

/* Where a scenario came from: a file (path; NULL: the quickstart) or text
** (with its name and include directory), and its overrides. */
struct FabScenarioSrc {
  bool text;
  char *path_or_text, *name, *dir;
  char **sets;
};

static void src_free(struct FabScenarioSrc *src) {
  if (!src) return;
  g_free(src->path_or_text);
  g_free(src->name);
  g_free(src->dir);
  g_strfreev(src->sets);
  g_free(src);
}

static struct FabScenarioSrc *src_new(bool text, const char *path_or_text, const char *name, const char *dir,
                                      const char *const *sets) {
  struct FabScenarioSrc *src = g_new0(struct FabScenarioSrc, 1);
  src->text = text;
  src->path_or_text = g_strdup(path_or_text);
  src->name = g_strdup(name);
  src->dir = g_strdup(dir);
  src->sets = g_strdupv((char **)(sets ? sets : (const char *const[]){NULL}));
  return src;
}

FabScenario *fab_scenario_reload(const FabScenario *sc, const char *extra, GError **err) {
  const struct FabScenarioSrc *src = sc->src;
  if (!src) {
    g_set_error(err, FAB_CFG_ERROR, 0, "the scenario was made from a tree: it cannot be loaded again");
    return NULL;
  }
  guint n = g_strv_length(src->sets);
  const char **sets = g_new0(const char *, n + 2);
  for (guint i = 0; i < n; i++) sets[i] = src->sets[i];
  sets[n] = extra;
  FabScenario *b = src->text ? fab_scenario_load_string(src->path_or_text, src->name, src->dir, sets, err)
                             : fab_scenario_load(src->path_or_text, sets, err);
  g_free(sets);
  return b;
}

static gboolean apply_sets(FabCfg *cfg, const char *const *sets, GError **err) {
  for (int i = 0; sets && sets[i]; i++)
    if (!fab_cfg_set(cfg, sets[i], err)) return FALSE;
  return TRUE;
}

FabScenario *fab_scenario_load(const char *path, const char *const *sets, GError **err) {
  FabCfg *cfg = path ? fab_cfg_load_file(path, err) : fab_cfg_load_string(fab_quickstart_yaml, "<quickstart>", err);
  if (!cfg) return NULL;
  if (!apply_sets(cfg, sets, err)) {
    fab_cfg_free(cfg);
    return NULL;
  }
  char *name = NULL; /* default name: the file name without .yaml */
  if (path) {
    name = g_path_get_basename(path);
    char *dot = strrchr(name, '.');
    if (dot && dot != name) *dot = 0;
  }
  FabScenario *sc = fab_scenario_from_cfg(cfg, name, err);
  g_free(name);
  if (sc) sc->src = src_new(false, path, NULL, NULL, sets);
  return sc;
}

FabScenario *fab_scenario_load_string(const char *text, const char *name, const char *dir, const char *const *sets,
                                      GError **err) {
  FabCfg *cfg = fab_cfg_load_string_in(text, name, dir, err);
  if (!cfg) return NULL;
  if (!apply_sets(cfg, sets, err)) {
    fab_cfg_free(cfg);
    return NULL;
  }
  char *base = g_path_get_basename(name ? name : "scenario"); /* the default name, as for a file */
  char *dot = strrchr(base, '.');
  if (dot && dot != base) *dot = 0;
  FabScenario *sc = fab_scenario_from_cfg(cfg, base, err);
  g_free(base);
  if (sc) sc->src = src_new(true, text, name, dir, sets);
  return sc;
}

void fab_scenario_free(FabScenario *sc) {
  if (!sc) return;
  fab_dag_free(sc->dag);
  fab_sharp_plan_free(sc->sharp);
  fab_topology_free(sc->sharp_topo);
  if (sc->warnings) g_ptr_array_free(sc->warnings, TRUE);
  g_free(sc->topology);
  g_free(sc->own_name);
  fab_cfg_free(sc->cfg);
  src_free(sc->src);
  g_free(sc);
}

/* Scenario loading and the run driver. See scenario.h. */
#include "scenario.h"
#include "models/cc.h"
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct TopIn {
  const char *name;
  uint64_t seed, stop_time;
  const FabCfgNode *cluster, *fabric, *workload, *output;
} TopIn;

static const FabCfgKey top_schema[] = {
  {"name", FAB_CFG_STRING, offsetof(TopIn, name), FALSE, NULL, 0, 0, NULL},
  {"seed", FAB_CFG_UINT, offsetof(TopIn, seed), FALSE, "1", 0, 0, NULL},
  {"stop_time", FAB_CFG_TIME, offsetof(TopIn, stop_time), FALSE, NULL, 1, 1e18, NULL},
  {"cluster", FAB_CFG_MAP, offsetof(TopIn, cluster), FALSE, NULL, 0, 0, NULL},
  {"fabric", FAB_CFG_MAP, offsetof(TopIn, fabric), TRUE, NULL, 0, 0, NULL},
  {"workload", FAB_CFG_NODE, offsetof(TopIn, workload), TRUE, NULL, 0, 0, NULL}, /* a map, or a list of jobs */
  {"output", FAB_CFG_MAP, offsetof(TopIn, output), FALSE, NULL, 0, 0, NULL},
  {NULL, FAB_CFG_END, 0, FALSE, NULL, 0, 0, NULL},
};

typedef struct OutputIn {
  const char *hdf5;
  uint64_t sample_interval;
} OutputIn;

static const FabCfgKey output_schema[] = {
  {"hdf5", FAB_CFG_STRING, offsetof(OutputIn, hdf5), FALSE, NULL, 0, 0, NULL},
  {"sample_interval", FAB_CFG_TIME, offsetof(OutputIn, sample_interval), FALSE, "10us", 1000, 1e15, NULL},
  {NULL, FAB_CFG_END, 0, FALSE, NULL, 0, 0, NULL},
};

/* What the collective algorithms and the tuner know of the fabric. */
static void coll_env(const FabFabricCfg *f, FabCollEnv *e) {
  const FabGpuSpec *g = &f->gpu;
  static const uint32_t links[] = {[FAB_TOPO_SINGLE_SWITCH] = 2, [FAB_TOPO_LEAF_SPINE] = 4, [FAB_TOPO_FAT_TREE] = 6,
                                   [FAB_TOPO_RING] = 4, [FAB_TOPO_RAIL] = 4, [FAB_TOPO_MULTI_RAIL] = 4};
  uint32_t l = links[f->topo.kind];
  memset(e, 0, sizeof *e);
  e->endpoints = g->gpus_per_node ? g->nodes * g->gpus_per_node : f->topo.hosts;
  e->gpus_per_node = g->gpus_per_node ? g->gpus_per_node : 1;
  e->nvl_domain = f->nic.nvl_domain;
  e->net_bps = g->gpus_per_node ? f->topo.host_bps * g->nics_per_node / g->gpus_per_node : f->topo.host_bps;
  e->nvl_bps = g->nvlink_domain ? g->nvlink_bps : 0;
  /* unloaded NIC to NIC across the fabric's diameter (a tier-2 path for leaf-spine) */
  e->net_lat = l * f->topo.link_latency + (l - 1) * f->sw.latency + (g->gpus_per_node ? 2 * g->pcie_latency : 0);
  e->nvl_lat = g->nvlink_latency;
  e->reduce_Bps = (double)g->reduce_bps / 8;
  e->collnet = false;
}

FabScenario *fab_scenario_load(const char *path, const char *const *sets, GError **err) {
  FabScenario *sc = g_new0(FabScenario, 1);
  TopIn top = {0};
  OutputIn out = {0};
  sc->cfg = path ? fab_cfg_load_file(path, err) : fab_cfg_load_string(fab_quickstart_yaml, "<quickstart>", err);
  if (!sc->cfg) goto fail;
  for (int i = 0; sets && sets[i]; i++)
    if (!fab_cfg_set(sc->cfg, sets[i], err)) goto fail;
  const FabCfgNode *root = fab_cfg_root(sc->cfg);
  if (!fab_cfg_apply(root, NULL, top_schema, &top, err)) goto fail;
  if (!fab_cfg_apply(top.output, root, output_schema, &out, err)) goto fail;
  if (!fab_fabric_cfg_read(root, &sc->fabric, err)) goto fail;
  const FabGpuSpec *g = &sc->fabric.gpu;
  FabWorkloadEnv env = {0};
  env.endpoints = g->gpus_per_node ? g->nodes * g->gpus_per_node : sc->fabric.topo.hosts;
  env.nprio = sc->fabric.sw.nprio;
  env.seed = top.seed;
  coll_env(&sc->fabric, &env.coll);
  env.gpu_flops = g->gpu_flops;
  env.gpu_eff = g->gpu_efficiency;
  sc->dag = fab_workload_read(root, &env, err);
  if (!sc->dag) goto fail;
  if (sc->fabric.topo.kind == FAB_TOPO_MULTI_RAIL && !g->pxn) /* planes are not joined */
    for (guint i = 0; i < fab_dag_len(sc->dag); i++) {
      const FabOp *f = fab_dag_op(sc->dag, i);
      uint32_t G = g->gpus_per_node, dom = g->nvlink_domain ? g->nvlink_domain : G;
      if (f->kind == FAB_OP_FLOW && f->src / dom != f->dst / dom && f->src % G != f->dst % G) {
        const FabCfgNode *wl = fab_cfg_get(root, "workload"), *fl = fab_cfg_get(wl, "flows");
        const FabCfgNode *at = fl && i < fab_cfg_len(fl) ? fab_cfg_get(fab_cfg_at(fl, i), "dst") : fab_cfg_get(wl, "kind");
        fab_cfg_fail(at ? at : wl, err, "GPU %u and GPU %u are on different rails of a multi-rail fabric, whose planes "
                     "are not joined: set cluster.pxn: true to relay through NVLink", f->src, f->dst);
        goto fail;
      }
    }
  if (path && !top.name) { /* default name: the file name without .yaml */
    char *base = g_path_get_basename(path);
    char *dot = strrchr(base, '.');
    if (dot && dot != base) *dot = 0;
    sc->name = g_intern_string(base);
    g_free(base);
  } else {
    sc->name = top.name ? top.name : "quickstart";
  }
  sc->seed = top.seed;
  sc->fabric.sw.seed = sc->fabric.nic.seed = top.seed;
  sc->stop_time = top.stop_time ? top.stop_time : FAB_TIME_MAX;
  sc->hdf5 = out.hdf5 && *out.hdf5 ? out.hdf5 : NULL;
  sc->sample_interval = out.sample_interval;
  sc->topology = fab_topology_describe(&sc->fabric.topo);
  return sc;
fail:
  fab_scenario_free(sc);
  return NULL;
}

void fab_scenario_free(FabScenario *sc) {
  if (!sc) return;
  fab_dag_free(sc->dag);
  g_free(sc->topology);
  fab_cfg_free(sc->cfg);
  g_free(sc);
}

char *fab_scenario_explain(const FabScenario *sc) {
  const FabFabricCfg *f = &sc->fabric;
  GString *s = g_string_new(NULL);
  uint64_t total = 0;
  uint32_t nflows = 0, ncompute = 0;
  for (guint i = 0; i < fab_dag_len(sc->dag); i++) {
    const FabOp *o = fab_dag_op(sc->dag, i);
    if (o->kind <= FAB_OP_NVLS) total += o->bytes, nflows++;
    ncompute += o->kind == FAB_OP_COMPUTE;
  }
  g_string_append_printf(s, "scenario   %s (seed %" G_GUINT64_FORMAT ")\n", sc->name, sc->seed);
  g_string_append_printf(s, "topology   %s\n", sc->topology);
  const FabGpuSpec *g = &f->gpu;
  if (g->gpus_per_node) {
    uint32_t ranks = g->nodes * g->gpus_per_node;
    g_string_append_printf(s, "endpoints  %u GPUs = %u x %s nodes of %u GPUs (rank = node x %u + local)\n", ranks,
                           g->nodes, g->preset, g->gpus_per_node, g->gpus_per_node);
    g_string_append_printf(s, "nics       %u per node at %.6g Gbps: %u NIC ports in the network, %.6g Gbps per node\n",
                           g->nics_per_node, (double)f->topo.host_bps / 1e9, f->topo.hosts,
                           (double)f->topo.host_bps * g->nics_per_node / 1e9);
    if (g->nvlink_domain)
      g_string_append_printf(s, "nvlink     %.6g GB/s per GPU per direction, %.6g ns GPU to GPU, one NVSwitch per domain "
                             "of %u GPUs (%u domains), segments of %u B + %u B header\n",
                             (double)g->nvlink_bps / 8e9, (double)g->nvlink_latency / 1e3, g->nvlink_domain,
                             ranks / g->nvlink_domain, g->segment, f->nic.nvl_overhead);
    else
      g_string_append(s, "nvlink     none: every GPU pair goes through the network\n");
    g_string_append_printf(s, "pcie       %.6g GB/s per direction, %.6g ns, %s", (double)g->pcie_bps / 8e9,
                           (double)g->pcie_latency / 1e3, g->gpudirect ? "GPUDirect RDMA" : "host-staged");
    if (!g->gpudirect)
      g_string_append_printf(s, " (through host memory at %.6g GB/s, +%.6g us)", (double)g->host_bps / 8e9,
                             (double)g->host_latency / 1e6);
    uint32_t G = g->gpus_per_node, N = g->nics_per_node;
    g_string_append_printf(s, "; %s\n", N >= G ? (N == G ? "one NIC per GPU" : "several NICs per GPU")
                                                 : "GPUs share a NIC");
    g_string_append_printf(s, "gpu        %.6g TFLOPS dense BF16 x %.2g efficiency\n", g->gpu_flops / 1e12,
                           g->gpu_efficiency);
  } else {
    g_string_append_printf(s, "endpoints  %u hosts, one NIC each at %.6g Gbps\n", f->topo.hosts,
                           (double)f->topo.host_bps / 1e9);
  }
  g_string_append_printf(s, "links      %.6g Gbps, latency %.6g us, mtu %u B payload\n",
                         (double)f->topo.link_bps / 1e9, (double)f->topo.link_latency / 1e6, f->nic.mtu);
  g_string_append_printf(s, "transport  %s: %u B headers+framing per data packet, %u B per ACK/NAK\n",
                         fab_transport_names[f->nic.transport.kind], f->nic.transport.data_overhead,
                         f->nic.transport.ack_bytes);
  g_string_append_printf(s, "switch     latency %.6g ns, shared buffer %" G_GUINT64_FORMAT
                         " B, alpha %g, %u priorities, ECMP seed %" G_GUINT64_FORMAT "\n",
                         (double)f->sw.latency / 1e3, f->sw.buffer, f->sw.alpha, f->sw.nprio, f->sw.ecmp_seed);
  const FabPfcCfg *pfc = &f->sw.pfc;
  if (pfc->enabled) {
    g_string_append(s, "pfc        lossless priorities");
    for (uint32_t q = 0; q < f->sw.nprio; q++)
      if (pfc->lossless >> q & 1) g_string_append_printf(s, " %u", q);
    if (pfc->dynamic) g_string_append_printf(s, ", XOFF dynamic (alpha %g), XON %" G_GUINT64_FORMAT " B below", pfc->alpha, pfc->xon);
    else g_string_append_printf(s, ", XOFF %" G_GUINT64_FORMAT " B, XON %" G_GUINT64_FORMAT " B", pfc->xoff, pfc->xon);
    if (pfc->headroom) g_string_append_printf(s, ", headroom %" G_GUINT64_FORMAT " B", pfc->headroom);
    else g_string_append_printf(s, ", headroom auto (%" G_GUINT64_FORMAT " B at the fabric links)",
                                fab_pfc_headroom_auto(f->topo.link_bps, f->topo.link_latency, pfc->response, pfc->mtu_wire));
    g_string_append_printf(s, ", %" G_GUINT64_FORMAT " B reserved, quanta %u\n", f->sw.pfc_reserved, pfc->quanta);
  }
  if (f->sw.credits)
    g_string_append_printf(s, "credits    %" G_GUINT64_FORMAT " B per (ingress port, VL)\n", f->sw.credits);
  if (f->sw.ecn.enabled)
    g_string_append_printf(s, "ecn        kmin %" G_GUINT64_FORMAT " B, kmax %" G_GUINT64_FORMAT " B, pmax %g, on %s\n",
                           f->sw.ecn.kmin, f->sw.ecn.kmax, f->sw.ecn.pmax, f->sw.ecn.on_dequeue ? "dequeue" : "enqueue");
  if (f->nic.cc.kind == FAB_CC_DCQCN) {
    const FabDcqcnCfg *d = &f->nic.cc.dcqcn;
    g_string_append_printf(s, "dcqcn      g %g, alpha_init %g, alpha_timer %.6g us, rate_timer %.6g us, byte_counter %"
                           G_GUINT64_FORMAT " B, F %u, rai %.6g Mbps, rhai %.6g Mbps, min_rate %.6g Mbps, "
                           "cnp_interval %.6g us\n", d->g, d->alpha_init, (double)d->alpha_timer / 1e6,
                           (double)d->rate_timer / 1e6, d->byte_counter, d->fast_recovery, (double)d->rai_bps / 1e6,
                           (double)d->rhai_bps / 1e6, (double)d->min_rate_bps / 1e6, (double)d->cnp_interval / 1e6);
  } else {
    g_string_append(s, "cc         none (line rate)\n");
  }
  g_string_append_printf(s, "nic        rto %.6g us, ACK every %u packets, give up after %u timeouts\n",
                         (double)f->nic.rto / 1e6, f->nic.ack_interval, f->nic.max_timeouts);
  g_string_append_printf(s, "workload   %u flows, %" G_GUINT64_FORMAT " bytes on the wire, %u compute ops, %u "
                         "collectives\n", nflows, total, ncompute, sc->dag->colls->len);
  for (guint j = 0; j < sc->dag->jobs->len; j++) {
    const FabJobDef *jd = &g_array_index(sc->dag->jobs, FabJobDef, j);
    g_string_append_printf(s, "job        %s: %s on %u ranks (endpoints %u..%u)", jd->name, jd->kind, jd->nranks,
                           jd->ranks[0], jd->ranks[jd->nranks - 1]);
    if (jd->steps) g_string_append_printf(s, ", %u steps of %u microbatches, pp %u", jd->steps, jd->microbatches, jd->pp);
    g_string_append_c(s, '\n');
  }
  /* the collectives, alike ones counted together (a training step has thousands) */
  GArray *kinds = g_array_new(FALSE, FALSE, sizeof(guint)); /* first collective of each kind */
  GArray *counts = g_array_new(FALSE, TRUE, sizeof(guint));
  for (guint c = 0; c < sc->dag->colls->len; c++) {
    const FabCollDef *cd = &g_array_index(sc->dag->colls, FabCollDef, c);
    guint k = 0;
    for (; k < kinds->len; k++) {
      const FabCollDef *o = &g_array_index(sc->dag->colls, FabCollDef, g_array_index(kinds, guint, k));
      if (g_str_equal(o->op, cd->op) && o->bytes == cd->bytes && o->nranks == cd->nranks &&
          g_str_equal(o->algorithm, cd->algorithm) && g_str_equal(o->protocol, cd->protocol) &&
          o->channels == cd->channels && o->chunk == cd->chunk && g_strcmp0(o->tag, cd->tag) == 0 && o->job == cd->job)
        break;
    }
    if (k == kinds->len) {
      if (kinds->len == 16) continue; /* enough to show; the rest are summed below */
      g_array_append_val(kinds, c);
      g_array_set_size(counts, kinds->len);
    }
    g_array_index(counts, guint, k)++;
  }
  guint shown = 0;
  for (guint k = 0; k < kinds->len; k++) {
    const FabCollDef *cd = &g_array_index(sc->dag->colls, FabCollDef, g_array_index(kinds, guint, k));
    guint n = g_array_index(counts, guint, k);
    shown += n;
    g_string_append_printf(s, "collective %u x %s of %" G_GUINT64_FORMAT " B on %u ranks: %s, %s, %u channels, chunk %"
                           G_GUINT64_FORMAT " B%s%s\n", n, cd->op, cd->bytes, cd->nranks, cd->algorithm, cd->protocol,
                           cd->channels, cd->chunk, cd->tag ? ", tag " : "", cd->tag ? cd->tag : "");
  }
  g_array_free(kinds, TRUE);
  g_array_free(counts, TRUE);
  if (shown < sc->dag->colls->len)
    g_string_append_printf(s, "           ... and %u more collectives\n", sc->dag->colls->len - shown);
  if (sc->stop_time != FAB_TIME_MAX)
    g_string_append_printf(s, "stop_time  %.6g us\n", (double)sc->stop_time / 1e6);
  if (sc->hdf5)
    g_string_append_printf(s, "hdf5       %s (queues sampled every %.6g us)\n", sc->hdf5,
                           (double)sc->sample_interval / 1e6);
  return g_string_free(s, FALSE);
}

/* ---- the run ------------------------------------------------------------ */

typedef struct Run Run;

/* The PFC watchdog, an element of its own: it wakes every pfc.watchdog and
** stops the run when nothing was delivered since its last look while some
** port is paused. */
typedef struct Watch {
  const FabOps *ops;
  Run *run;
  uint64_t last;            /* packets delivered to NICs at the last look */
} Watch;

/* The DAG executor's element: its events start ops that waited for their
** `start` time and finish compute ops and flows' `post` delays. */
typedef struct Exec {
  const FabOps *ops;
  Run *run;
} Exec;

enum { EV_READY = 0, EV_DONE = 1 };

/* Per-flow rates are sampled (HDF5 /queues/flow_rate, a dense samples x
** flows table) only up to this many flows: a training run's tens of
** thousands of flows over tens of thousands of samples would not fit. */
#define FAB_RATE_FLOWS 4096

struct Run {
  const FabOps *ops;        /* the queue sampler is an element */
  FabEngine *eng;
  FabTopology *topo;
  FabFlow *flows;
  uint32_t nflows, completed;
  fab_time_t last_end;      /* ps: latest completion */
  FabFlow *failed;          /* first flow that gave up */
  /* the DAG */
  Exec exec;
  const FabDag *dag;
  uint32_t nops, ops_done;
  uint32_t *left;           /* dependencies not yet met, per op */
  uint32_t *out0, *out;     /* dependents: out[out0[i] .. out0[i+1]), each | FAB_DEP_SENT if it waits for the send */
  fab_time_t *t0, *t1;      /* per op: began (posted, computing), done */
  uint8_t *state;           /* 0 waiting, 1 running, 2 done */
  uint32_t *flow_of, *op_of;/* op -> flow (FAB_OP_NONE), flow -> op */
  uint32_t *sq_head, *sq_tail, *sq_next; /* per endpoint: FIFO of compute ops waiting for its stream */
  uint8_t *busy;            /* per endpoint: its compute stream runs an op */
  uint32_t *rq_head, *rq_tail; /* per endpoint: FIFO of received flows waiting to be reduced (links: sq_next) */
  uint8_t *rbusy;           /* per endpoint: it is reducing a received flow */
  GArray *todo;             /* ops to complete (a worklist, not recursion) */
  bool draining;
  /* queue samples */
  fab_time_t interval;
  uint32_t ncols;
  FabPort **cols;
  GArray *t, *depth;
  uint32_t nprio;           /* per-priority depths recorded when > 1 */
  GArray *depth_prio;       /* u32 [sample][port][prio] */
  GArray *rate;             /* u64 [sample][flow], bits/s (sample_rates only) */
  bool sample_rates;        /* few enough flows to sample every flow's rate (FAB_RATE_FLOWS) */
  GArray *link_bytes;       /* u64 [sample][link]: wire bytes each link has sent so far */
  /* progress */
  bool progress;
  gint64 last_report;
  /* PFC watchdog */
  Watch wd;
  bool stalled;             /* the watchdog stopped the run */
  GPtrArray *cycle;         /* FabPort *: the deadlock it found, in order */
};

/* ---- the DAG executor ----------------------------------------------------- */

static void begin(Run *r, uint32_t i);

/* Op i's dependencies are met now: begin it, or wait for its start time. */
static void ready(Run *r, uint32_t i) {
  const FabOp *o = fab_dag_op(r->dag, i);
  if (o->start > r->eng->now && o->kind <= FAB_OP_NVLS) { /* a flow posts itself for later: no event of ours */
    FabFlow *f = &r->flows[r->flow_of[i]];
    r->state[i] = 1;
    r->t0[i] = o->start;
    f->start = o->start + o->pre;
    fab_nic_post(r->eng, &r->topo->nics[f->src], f);
  } else if (o->start > r->eng->now) {
    fab_engine_at(r->eng, o->start, &r->exec, (uint64_t)i << 1 | EV_READY);
  } else {
    begin(r, i);
  }
}

/* Release the dependents of op i that wait for it to be done (sent: false)
** or for its last packet to leave (sent: true). */
static void release(Run *r, uint32_t i, bool sent) {
  for (uint32_t k = r->out0[i]; k < r->out0[i + 1]; k++) {
    uint32_t d = r->out[k];
    if (((d & FAB_DEP_SENT) != 0) != sent) continue;
    d &= ~FAB_DEP_SENT;
    g_assert(r->left[d] > 0);
    if (--r->left[d] == 0) ready(r, d);
  }
}

/* Per-endpoint FIFOs of ops (compute streams, reducers), linked through sq_next. */
static void fifo_push(Run *r, uint32_t *head, uint32_t *tail, uint32_t e, uint32_t i) {
  r->sq_next[i] = FAB_OP_NONE;
  if (tail[e] != FAB_OP_NONE) r->sq_next[tail[e]] = i;
  else head[e] = i;
  tail[e] = i;
}

static uint32_t fifo_pop(Run *r, uint32_t *head, uint32_t *tail, uint32_t e) {
  uint32_t n = head[e];
  if (n != FAB_OP_NONE) {
    head[e] = r->sq_next[n];
    if (n == tail[e]) tail[e] = FAB_OP_NONE;
  }
  return n;
}

/* Op i is done now. Marks done in passing are queued, not recursed into. */
static void complete(Run *r, uint32_t i) {
  g_array_append_val(r->todo, i);
  if (r->draining) return;
  r->draining = true;
  for (guint at = 0; at < r->todo->len; at++) { /* first in, first out: dependents in op order */
    uint32_t k = g_array_index(r->todo, uint32_t, at);
    g_assert(r->state[k] != 2);
    r->state[k] = 2;
    r->t1[k] = r->eng->now;
    r->ops_done++;
    if (r->t1[k] > r->last_end) r->last_end = r->t1[k];
    const FabOp *o = fab_dag_op(r->dag, k);
    if (o->kind == FAB_OP_COMPUTE) { /* the stream takes its next op */
      uint32_t n = fifo_pop(r, r->sq_head, r->sq_tail, o->src);
      r->busy[o->src] = n != FAB_OP_NONE;
      if (n != FAB_OP_NONE) {
        r->t0[n] = r->eng->now;
        fab_engine_after(r->eng, fab_dag_op(r->dag, n)->dur, &r->exec, (uint64_t)n << 1 | EV_DONE);
      }
    } else if (o->kind <= FAB_OP_NVLS && o->post) { /* the reducer takes the next received flow */
      uint32_t n = fifo_pop(r, r->rq_head, r->rq_tail, o->dst);
      r->rbusy[o->dst] = n != FAB_OP_NONE;
      if (n != FAB_OP_NONE) fab_engine_after(r->eng, fab_dag_op(r->dag, n)->post, &r->exec, (uint64_t)n << 1 | EV_DONE);
    }
    release(r, k, false);
  }
  g_array_set_size(r->todo, 0);
  r->draining = false;
}

static void begin(Run *r, uint32_t i) {
  const FabOp *o = fab_dag_op(r->dag, i);
  FabEngine *eng = r->eng;
  r->state[i] = 1;
  r->t0[i] = eng->now;
  switch ((FabOpKind)o->kind) {
  case FAB_OP_FLOW:
  case FAB_OP_NVLS: {
    FabFlow *f = &r->flows[r->flow_of[i]];
    f->start = eng->now + o->pre;
    fab_nic_post(eng, &r->topo->nics[f->src], f);
    break;
  }
  case FAB_OP_COMPUTE: {
    uint32_t e = o->src;
    if (!r->busy[e]) {
      r->busy[e] = 1;
      fab_engine_after(eng, o->dur, &r->exec, (uint64_t)i << 1 | EV_DONE);
    } else { /* the stream is busy: queue behind what became ready earlier */
      fifo_push(r, r->sq_head, r->sq_tail, e, i);
    }
    break;
  }
  case FAB_OP_MARK:
    complete(r, i);
    break;
  }
}

static void exec_wake(FabEngine *eng, void *self, uint64_t arg) {
  Run *r = ((Exec *)self)->run;
  uint32_t i = (uint32_t)(arg >> 1);
  if ((arg & 1) == EV_READY) begin(r, i);
  else complete(r, i);
}

static const FabOps exec_ops = {"dag", exec_wake};

static void flow_done(void *ctx, FabFlow *f) {
  Run *r = ctx;
  uint32_t i = r->op_of[f->id];
  const FabOp *o = fab_dag_op(r->dag, i);
  r->completed++;
  if (!o->post) {
    complete(r, i);
  } else if (r->rbusy[o->dst]) { /* the GPU reduces one received piece at a time, in arrival order */
    fifo_push(r, r->rq_head, r->rq_tail, o->dst, i);
  } else {
    r->rbusy[o->dst] = 1;
    fab_engine_after(r->eng, o->post, &r->exec, (uint64_t)i << 1 | EV_DONE);
  }
}

static void flow_sent(void *ctx, FabFlow *f) {
  Run *r = ctx;
  release(r, r->op_of[f->id], true);
}

static void flow_fail(void *ctx, FabFlow *f) {
  Run *r = ctx;
  if (!r->failed) r->failed = f;
  fab_engine_stop(r->eng);
}

static void sample_link(FabPort *pt, void *ctx) { g_array_append_val((GArray *)ctx, pt->tx_bytes); }

static void sample(FabEngine *eng, void *self, uint64_t arg) {
  Run *r = self;
  g_array_append_val(r->t, eng->now);
  for (uint32_t c = 0; c < r->ncols; c++) {
    uint32_t d = (uint32_t)MIN(r->cols[c]->qbytes, UINT32_MAX);
    g_array_append_val(r->depth, d);
    for (uint32_t q = 0; r->nprio > 1 && q < r->nprio; q++) {
      uint32_t dq = (uint32_t)MIN(r->cols[c]->q[q].bytes, UINT32_MAX);
      g_array_append_val(r->depth_prio, dq);
    }
  }
  for (uint32_t i = 0; r->sample_rates && i < r->nflows; i++) { /* a flow sends from its start until all is acked */
    const FabFlow *f = &r->flows[i];
    uint64_t bps = f->start <= eng->now && !f->acked && f->start != FAB_TIME_MAX ? fab_flow_rate(f) : 0;
    g_array_append_val(r->rate, bps);
  }
  fab_topology_foreach_port(r->topo, sample_link, r->link_bytes);
  if (r->ops_done < r->nops) fab_engine_after(eng, r->interval, r, 0);
}

static const FabOps sampler_ops = {"sampler", sample};

static void progress(FabEngine *eng, void *ctx) {
  Run *r = ctx;
  gint64 now = g_get_monotonic_time();
  if (now - r->last_report < 500000) return;
  r->last_report = now;
  fprintf(stderr, "\r  t=%.6f ms  flows %u/%u  events %" G_GUINT64_FORMAT "   ", (double)eng->now / 1e9,
          r->completed, r->nflows, eng->events);
}

/* ---- PFC deadlock detection ----------------------------------------------
** A port paused for priority q waits for the switch at its far end to drain
** the ingress it paused: that is, for the egress ports there that hold
** priority-q packets from that ingress. If those are paused too, the wait goes
** on. A cycle in this wait-for graph among paused ports is a deadlock: none
** of them can ever resume. */

typedef struct Dfs {
  uint32_t prio;
  GHashTable *state;  /* FabPort * -> 1 on the stack, 2 done */
  GPtrArray *stack;
  GPtrArray *cycle;
} Dfs;

/* Port p cannot send priority q: paused by its peer (PFC), or its head
** packet of q lacks credit (InfiniBand). */
static inline bool blocked(const FabPort *p, uint32_t q) {
  if (p->paused >> q & 1) return true;
  return p->credit_fc && p->q[q].head && p->credits[q] < (int64_t)p->q[q].head->wire;
}

static bool dfs(Dfs *d, FabPort *p) {
  g_hash_table_insert(d->state, p, GUINT_TO_POINTER(1));
  g_ptr_array_add(d->stack, p);
  FabPort *q = p->peer;
  if (fab_node_is_switch(q->owner)) {
    FabSwitch *t = (FabSwitch *)q->owner;
    FabPort **holders = g_new(FabPort *, t->nports);
    uint32_t n = fab_switch_holders(t, q->index, d->prio, holders, t->nports);
    for (uint32_t i = 0; i < n; i++) {
      FabPort *e = holders[i];
      if (!blocked(e, d->prio)) continue;
      guint st = GPOINTER_TO_UINT(g_hash_table_lookup(d->state, e));
      if (st == 1) { /* back edge: the cycle is the stack from e on */
        guint at = 0;
        while (g_ptr_array_index(d->stack, at) != e) at++;
        for (; at < d->stack->len; at++) g_ptr_array_add(d->cycle, g_ptr_array_index(d->stack, at));
        g_free(holders);
        return true;
      }
      if (st == 0 && dfs(d, e)) {
        g_free(holders);
        return true;
      }
    }
    g_free(holders);
  }
  g_ptr_array_remove_index(d->stack, d->stack->len - 1);
  g_hash_table_insert(d->state, p, GUINT_TO_POINTER(2));
  return false;
}

static bool find_deadlock(Run *r, GPtrArray *cycle) {
  for (uint32_t prio = 0; prio < r->topo->switches[0]->cfg.nprio; prio++) {
    Dfs d = {prio, g_hash_table_new(NULL, NULL), g_ptr_array_new(), cycle};
    bool found = false;
    for (uint32_t s = 0; s < r->topo->nswitches && !found; s++) {
      FabSwitch *sw = r->topo->switches[s];
      for (uint32_t i = 0; i < sw->nports && !found; i++) {
        FabPort *p = &sw->ports[i];
        if (blocked(p, prio) && !g_hash_table_contains(d.state, p)) found = dfs(&d, p);
      }
    }
    g_hash_table_destroy(d.state);
    g_ptr_array_free(d.stack, TRUE);
    if (found) return true;
  }
  return false;
}

static uint64_t delivered(const Run *r) {
  uint64_t n = 0;
  for (uint32_t h = 0; h < r->topo->nhosts; h++) n += r->topo->nics[h].rx_data_pkts + r->topo->nics[h].rx_ctrl_pkts;
  return n;
}

static void or_paused(FabPort *pt, void *ctx) {
  for (uint32_t q = 0; q < pt->nprio; q++)
    if (blocked(pt, q)) *(uint32_t *)ctx |= 1u << q;
}

static bool any_paused(Run *r) {
  uint32_t m = 0;
  fab_topology_foreach_port(r->topo, or_paused, &m);
  return m != 0;
}

static void watch(FabEngine *eng, void *self, uint64_t arg) {
  Watch *w = self;
  Run *r = w->run;
  if (r->ops_done == r->nops) return;
  uint64_t now = delivered(r);
  if (now == w->last && any_paused(r)) { /* slow flows (a low DCQCN rate) are not a stall */
    r->stalled = true;
    find_deadlock(r, r->cycle);
    fab_engine_stop(eng);
    return;
  }
  w->last = now;
  fab_engine_after(eng, arg, w, arg);
}

static const FabOps watch_ops = {"pfc-watchdog", watch};

typedef struct Totals {
  uint64_t hops, drops, drop_bytes, max_q, pauses, marks;
  fab_time_t paused, now;
} Totals;

static void add_port(FabPort *pt, void *ctx) {
  Totals *t = ctx;
  t->hops += pt->tx_pkts;
  t->drops += pt->drops;
  t->drop_bytes += pt->drop_bytes;
  t->pauses += pt->pause_tx;
  t->paused += fab_port_paused_time(pt, t->now);
  if (pt->max_qbytes > t->max_q && pt->owner->pull == NULL) t->max_q = pt->max_qbytes;
}

static void name_port(char *buf, const FabPort *pt) {
  g_snprintf(buf, FAB_NAME_LEN, "%s:p%u", pt->owner->name, pt->index);
}

typedef struct LinkFill {
  GArray *a;
  fab_time_t now;
} LinkFill;

static void fill_links(FabPort *pt, void *ctx) {
  LinkFill *lf = ctx;
  GArray *a = lf->a;
  FabLinkRec l = {{0}, {0}, pt->bps, pt->tx_bytes, pt->tx_pkts, pt->drops, pt->max_qbytes,
                  pt->pause_tx, pt->pause_rx, fab_port_paused_time(pt, lf->now), pt->ecn_marks};
  name_port(l.from, pt);
  name_port(l.to, pt->peer);
  g_array_append_val(a, l);
}

typedef struct Flush {
  FabEngine *eng;
  uint64_t pkts, bytes; /* freed from queues, serialisers and wires */
} Flush;

static void flush_one(FabPort *pt, void *ctx) {
  Flush *c = ctx;
  c->pkts += fab_port_flush(c->eng, pt, &c->bytes);
}

/* Append "why" to the failure text. */
static void failf(GString **fail, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void failf(GString **fail, const char *fmt, ...) {
  va_list ap;
  if (!*fail) *fail = g_string_new(NULL);
  else g_string_append(*fail, "; ");
  va_start(ap, fmt);
  g_string_append_vprintf(*fail, fmt, ap);
  va_end(ap);
}

/* ---- collectives, timeline, steps and jobs from the DAG's times --------- */

typedef struct Ival {
  fab_time_t a, b;
} Ival;

static int by_start(const void *x, const void *y) {
  const Ival *p = x, *q = y;
  return p->a < q->a ? -1 : p->a > q->a;
}

/* Sort and merge intervals in place; returns how many remain. */
static size_t merge(Ival *v, size_t n) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, by_start);
  size_t m = 0;
  for (size_t i = 1; i < n; i++) {
    if (v[i].a <= v[m].b) v[m].b = MAX(v[m].b, v[i].b);
    else v[++m] = v[i];
  }
  return m + 1;
}

static uint64_t total(const Ival *v, size_t n) {
  uint64_t t = 0;
  for (size_t i = 0; i < n; i++) t += v[i].b - v[i].a;
  return t;
}

/* |union(a) intersected with union(b)|, both merged and sorted. */
static uint64_t overlap(const Ival *a, size_t na, const Ival *b, size_t nb) {
  uint64_t t = 0;
  for (size_t i = 0, j = 0; i < na && j < nb;) {
    fab_time_t lo = MAX(a[i].a, b[j].a), hi = MIN(a[i].b, b[j].b);
    if (hi > lo) t += hi - lo;
    if (a[i].b < b[j].b) i++;
    else j++;
  }
  return t;
}

static int span_order(const void *x, const void *y) {
  const struct FabSpanRec *p = x, *q = y;
  if (p->job != q->job) return p->job < q->job ? -1 : 1;
  if (p->step != q->step) return p->step < q->step ? -1 : 1;
  if (p->rank != q->rank) return p->rank < q->rank ? -1 : 1;
  return p->start < q->start ? -1 : p->start > q->start;
}

static void fill_dag_results(const Run *r, FabResults *res) {
  const FabDag *d = r->dag;
  uint32_t nc = d->colls->len, nj = d->jobs->len;
  /* collectives: from the first op of theirs to begin to the last one done */
  res->n_colls = nc;
  res->colls = g_new0(struct FabCollRec, nc ? nc : 1);
  bool *open = g_new0(bool, nc ? nc : 1);
  for (uint32_t c = 0; c < nc; c++) {
    const FabCollDef *cd = &g_array_index(d->colls, FabCollDef, c);
    res->colls[c] = (struct FabCollRec){cd->op, cd->algorithm, cd->protocol, cd->tag, cd->bytes, cd->count,
                                        cd->dtype_bytes, cd->nranks, cd->root, cd->channels, cd->job, cd->step,
                                        FAB_TIME_MAX, 0};
  }
  res->n_jobs = nj;
  res->jobs = g_new0(struct FabJobRec, nj ? nj : 1);
  bool *jopen = g_new0(bool, nj ? nj : 1);
  for (uint32_t j = 0; j < nj; j++) {
    const FabJobDef *jd = &g_array_index(d->jobs, FabJobDef, j);
    res->jobs[j] = (struct FabJobRec){jd->name, jd->kind, jd->nranks, 0, 0, 0, FAB_TIME_MAX, 0};
  }
  GArray *spans = g_array_new(FALSE, FALSE, sizeof(struct FabSpanRec));
  G_STATIC_ASSERT(sizeof(gsize) >= 8); /* keys pack an index and an endpoint in 32 bits each */
  GHashTable *begins = g_hash_table_new(NULL, NULL); /* (coll + 1) << 32 | rank -> COLL_BEGIN op + 1 */
  for (uint32_t i = 0; i < r->nops; i++) {
    const FabOp *o = fab_dag_op(d, i);
    bool done = r->state[i] == 2;
    struct FabJobRec *jr = &res->jobs[o->job];
    if (r->state[i]) jr->start = MIN(jr->start, r->t0[i]);
    if (done) jr->end = MAX(jr->end, r->t1[i]);
    else jopen[o->job] = true;
    if (o->kind <= FAB_OP_NVLS) {
      jr->flows++;
      jr->bytes += o->bytes;
      jr->completed += r->flows[r->flow_of[i]].end != 0;
    }
    if (o->coll >= 0) {
      struct FabCollRec *cr = &res->colls[o->coll];
      if (r->state[i]) cr->start = MIN(cr->start, r->t0[i]);
      if (done) cr->end = MAX(cr->end, r->t1[i]);
      else open[o->coll] = true;
    }
    if (o->kind == FAB_OP_COMPUTE && done) {
      struct FabSpanRec sp = {o->src, o->job, 0, o->mark, -1, o->step, r->t0[i], r->t1[i]};
      g_array_append_val(spans, sp);
    } else if (o->kind == FAB_OP_MARK && o->coll >= 0 && o->mark == FAB_MARK_COLL_BEGIN) {
      g_hash_table_insert(begins, GSIZE_TO_POINTER(((gsize)o->coll + 1) << 32 | o->src), GUINT_TO_POINTER(i + 1));
    } else if (o->kind == FAB_OP_MARK && o->coll >= 0 && o->mark == FAB_MARK_COLL_END && done) {
      guint b = GPOINTER_TO_UINT(g_hash_table_lookup(begins, GSIZE_TO_POINTER(((gsize)o->coll + 1) << 32 | o->src)));
      if (b && r->state[b - 1] == 2) {
        struct FabSpanRec sp = {o->src, o->job, 1, 0, o->coll, o->step, r->t1[b - 1], r->t1[i]};
        g_array_append_val(spans, sp);
      }
    } else if (o->kind == FAB_OP_FLOW && o->coll >= 0 && done) { /* pipeline send/recv: no marks, a span per send */
      const FabCollDef *cd = &g_array_index(d->colls, FabCollDef, o->coll);
      if (cd->tag && g_str_equal(cd->tag, "pp")) {
        struct FabSpanRec sp = {o->src, o->job, 2, 0, o->coll, o->step, r->flows[r->flow_of[i]].start, r->t1[i]};
        g_array_append_val(spans, sp);
      }
    }
  }
  g_hash_table_destroy(begins);
  for (uint32_t c = 0; c < nc; c++)
    if (open[c] || res->colls[c].start == FAB_TIME_MAX) res->colls[c].end = 0;
  for (uint32_t c = 0; c < nc; c++)
    if (res->colls[c].start == FAB_TIME_MAX) res->colls[c].start = 0;
  for (uint32_t j = 0; j < nj; j++) {
    if (jopen[j]) res->jobs[j].end = 0;
    if (res->jobs[j].start == FAB_TIME_MAX) res->jobs[j].start = 0;
  }
  g_free(open);
  g_free(jopen);

  /* steps: per (job, step, rank) from its STEP_BEGIN to STEP_END marks */
  GArray *steps = g_array_new(FALSE, TRUE, sizeof(struct FabStepRec));
  for (uint32_t j = 0; j < nj; j++) {
    const FabJobDef *jd = &g_array_index(d->jobs, FabJobDef, j);
    for (uint32_t st = 0; st < jd->steps; st++) {
      struct FabStepRec sr = {j, st, FAB_TIME_MAX, 0, 0, 0, 0, 0, 0};
      g_array_append_val(steps, sr);
    }
  }
  /* index of the first step of each job */
  uint32_t *first = g_new0(uint32_t, nj + 1);
  for (uint32_t j = 0; j < nj; j++) first[j + 1] = first[j] + g_array_index(d->jobs, FabJobDef, j).steps;
  /* per (job, step, rank): begin and end */
  GHashTable *sb = g_hash_table_new(NULL, NULL), *se = g_hash_table_new(NULL, NULL);
  bool *whole = g_new(bool, steps->len + 1); /* every rank began and ended the step (not cut by stop_time) */
  for (guint k = 0; k < steps->len; k++) whole[k] = true;
  for (uint32_t i = 0; i < r->nops && steps->len; i++) {
    const FabOp *o = fab_dag_op(d, i);
    if (o->kind != FAB_OP_MARK || (o->mark != FAB_MARK_STEP_BEGIN && o->mark != FAB_MARK_STEP_END)) continue;
    if (o->step >= first[o->job + 1] - first[o->job]) continue;
    if (r->state[i] != 2) {
      whole[first[o->job] + o->step] = false;
      continue;
    }
    gsize key = ((gsize)(first[o->job] + o->step) + 1) << 32 | o->src;
    g_hash_table_insert(o->mark == FAB_MARK_STEP_BEGIN ? sb : se, GSIZE_TO_POINTER(key), GUINT_TO_POINTER(i + 1));
  }
  if (steps->len) {
    /* per step: its window (first rank begins, last ends), then what filled each rank's */
    double *len = g_new0(double, steps->len);
    for (guint k = 0; k < steps->len; k++) {
      struct FabStepRec *sr = &g_array_index(steps, struct FabStepRec, k);
      const FabJobDef *jd = &g_array_index(d->jobs, FabJobDef, sr->job);
      for (uint32_t q = 0; q < jd->nranks; q++) {
        gsize key = ((gsize)k + 1) << 32 | jd->ranks[q];
        guint b = GPOINTER_TO_UINT(g_hash_table_lookup(sb, GSIZE_TO_POINTER(key)));
        guint en = GPOINTER_TO_UINT(g_hash_table_lookup(se, GSIZE_TO_POINTER(key)));
        if (!b || !en) {
          whole[k] = false;
          continue;
        }
        sr->start = MIN(sr->start, r->t1[b - 1]);
        sr->end = MAX(sr->end, r->t1[en - 1]);
      }
      if (sr->start == FAB_TIME_MAX) sr->start = 0;
      /* every rank's GPU is accounted over the whole step, first begin to last end:
      ** the stage that finishes early idles until the step is over (the pipeline's tail) */
      len[k] = fab_time_to_s(sr->end - sr->start) * jd->nranks;
    }
    g_array_sort(spans, span_order);
    GArray *cv = g_array_new(FALSE, FALSE, sizeof(Ival)), *mv = g_array_new(FALSE, FALSE, sizeof(Ival));
    double *busy = g_new0(double, steps->len);
    for (guint x = 0; x < spans->len;) { /* one group of spans per (job, step, rank) */
      const struct FabSpanRec *g0 = &g_array_index(spans, struct FabSpanRec, x);
      g_array_set_size(cv, 0);
      g_array_set_size(mv, 0);
      guint y = x;
      for (; y < spans->len; y++) {
        const struct FabSpanRec *sp = &g_array_index(spans, struct FabSpanRec, y);
        if (sp->job != g0->job || sp->step != g0->step || sp->rank != g0->rank) break;
        Ival iv = {sp->start, sp->end};
        if (sp->kind == 0) g_array_append_val(cv, iv);
        else if (sp->kind == 1) g_array_append_val(mv, iv);
      }
      if (g0->step < first[g0->job + 1] - first[g0->job]) {
        struct FabStepRec *sr = &g_array_index(steps, struct FabStepRec, first[g0->job] + g0->step);
        size_t ncv = merge((Ival *)(void *)cv->data, cv->len), nmv = merge((Ival *)(void *)mv->data, mv->len);
        uint64_t tc = total((Ival *)(void *)cv->data, ncv), tm = total((Ival *)(void *)mv->data, nmv);
        uint64_t to = overlap((Ival *)(void *)cv->data, ncv, (Ival *)(void *)mv->data, nmv);
        sr->compute_s += fab_time_to_s(tc);
        sr->comm_s += fab_time_to_s(tm);
        sr->overlap_s += fab_time_to_s(to);
        sr->exposed_comm_s += fab_time_to_s(tm - to);
        busy[first[g0->job] + g0->step] += fab_time_to_s(tc + tm - to);
      }
      x = y;
    }
    for (guint k = 0; k < steps->len; k++) { /* averages over the job's ranks */
      struct FabStepRec *sr = &g_array_index(steps, struct FabStepRec, k);
      double n = g_array_index(d->jobs, FabJobDef, sr->job).nranks;
      sr->bubble_s = MAX(0.0, len[k] - busy[k]) / n;
      sr->compute_s /= n;
      sr->comm_s /= n;
      sr->overlap_s /= n;
      sr->exposed_comm_s /= n;
    }
    g_free(len);
    g_free(busy);
    g_array_free(cv, TRUE);
    g_array_free(mv, TRUE);
  }
  g_hash_table_destroy(sb);
  g_hash_table_destroy(se);
  g_free(first);
  for (guint k = steps->len; k-- > 0;) /* report only whole steps */
    if (!whole[k]) g_array_remove_index(steps, k);
  g_free(whole);
  res->n_steps = steps->len;
  res->steps = (struct FabStepRec *)(void *)g_array_free(steps, FALSE);
  res->n_spans = spans->len;
  res->spans = (struct FabSpanRec *)(void *)g_array_free(spans, FALSE);
}

int fab_scenario_run(const FabScenario *sc, const FabRunOpts *opts, FabResults *res) {
  Run r = {0};
  GString *fail = NULL;
  memset(res, 0, sizeof *res);
  r.ops = &sampler_ops;
  r.eng = fab_engine_new(sc->seed);
  r.topo = fab_topology_build(&sc->fabric);
  const FabDag *dag = sc->dag;
  uint32_t nops = fab_dag_len(dag), ne = r.topo->nhosts;
  r.dag = dag;
  r.nops = nops;
  r.exec = (Exec){&exec_ops, &r};
  r.nflows = fab_dag_flows(dag);
  r.flows = g_new0(FabFlow, r.nflows);
  r.flow_of = g_new(uint32_t, nops);
  r.op_of = g_new(uint32_t, r.nflows ? r.nflows : 1);
  r.left = g_new(uint32_t, nops);
  r.out0 = g_new0(uint32_t, nops + 1);
  r.out = g_new(uint32_t, dag->deps->len ? dag->deps->len : 1);
  r.t0 = g_new0(fab_time_t, nops);
  r.t1 = g_new0(fab_time_t, nops);
  r.state = g_new0(uint8_t, nops);
  r.sq_next = g_new(uint32_t, nops);
  r.sq_head = g_new(uint32_t, ne);
  r.sq_tail = g_new(uint32_t, ne);
  r.busy = g_new0(uint8_t, ne);
  r.rq_head = g_new(uint32_t, ne);
  r.rq_tail = g_new(uint32_t, ne);
  r.rbusy = g_new0(uint8_t, ne);
  r.todo = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  for (uint32_t e = 0; e < ne; e++) r.sq_head[e] = r.sq_tail[e] = r.rq_head[e] = r.rq_tail[e] = FAB_OP_NONE;
  for (uint32_t i = 0, n = 0; i < nops; i++) {
    const FabOp *o = fab_dag_op(dag, i);
    r.left[i] = o->ndeps;
    for (uint32_t k = 0; k < o->ndeps; k++) r.out0[(fab_dag_dep(dag, o, k) & ~FAB_DEP_SENT) + 1]++;
    r.flow_of[i] = FAB_OP_NONE;
    if (o->kind > FAB_OP_NVLS) continue;
    FabFlow *f = &r.flows[n];
    f->id = n;
    f->src = o->src;
    f->dst = o->dst;
    f->bytes = o->bytes;
    f->prio = o->prio;
    f->nvls = o->kind == FAB_OP_NVLS;
    fab_flow_prepare(f, &sc->fabric.nic);
    f->max_bps = o->max_bps;
    f->start = FAB_TIME_MAX; /* not posted yet */
    r.flow_of[i] = n;
    r.op_of[n++] = i;
  }
  for (uint32_t i = 0; i < nops; i++) r.out0[i + 1] += r.out0[i];
  { /* fill the dependents in op order (deterministic) */
    uint32_t *at = g_memdup2(r.out0, sizeof(uint32_t) * nops);
    for (uint32_t i = 0; i < nops; i++) {
      const FabOp *o = fab_dag_op(dag, i);
      for (uint32_t k = 0; k < o->ndeps; k++) {
        uint32_t d = fab_dag_dep(dag, o, k);
        r.out[at[d & ~FAB_DEP_SENT]++] = i | (d & FAB_DEP_SENT);
      }
    }
    g_free(at);
  }
  /* NVLS: one in-switch reduction group per DAG group, at its domain's NVSwitch */
  char *setup = NULL;       /* why the DAG cannot run (a generator's mistake), NULL: it can */
  uint32_t dom = sc->fabric.nic.nvl_domain;
  if (dag->groups) {
    GArray **mem = g_new0(GArray *, dag->groups); /* per group: its ops */
    for (uint32_t i = 0; i < nops; i++) {
      const FabOp *o = fab_dag_op(dag, i);
      if (o->kind != FAB_OP_NVLS) continue;
      g_assert(o->group < dag->groups);
      if (!mem[o->group]) mem[o->group] = g_array_new(FALSE, FALSE, sizeof(uint32_t));
      g_array_append_val(mem[o->group], i);
    }
    for (uint32_t g = 0; g < dag->groups; g++) {
      if (!mem[g]) continue;
      uint32_t n = mem[g]->len, *port = g_new(uint32_t, n), *fid = g_new(uint32_t, n), *rank = g_new(uint32_t, n);
      uint32_t first = g_array_index(mem[g], uint32_t, 0);
      bool ok = dom && n >= 2;
      for (uint32_t m = 0; ok && m < n; m++) {
        uint32_t i = g_array_index(mem[g], uint32_t, m);
        rank[m] = fab_dag_op(dag, i)->src;
        ok = rank[m] / dom == rank[0] / dom && r.flows[r.flow_of[i]].npkts == r.flows[r.flow_of[first]].npkts;
        port[m] = rank[m] % dom;
        fid[m] = r.flow_of[i];
      }
      if (ok) {
        uint32_t sg = fab_switch_nvls_add(r.topo->nvs[rank[0] / dom], n, port, fid, rank, r.flows[fid[0]].npkts);
        for (uint32_t m = 0; m < n; m++) r.flows[fid[m]].nvls_group = sg;
      } else if (!setup) { /* a generator's mistake: fail the run, do not abort the process */
        setup = g_strdup_printf("internal error: NVLS group %u (op %u) has %u members, not 2 or more of one NVLink "
                                "domain with equal sizes", g, first, n);
      }
      g_free(port);
      g_free(fid);
      g_free(rank);
      g_array_free(mem[g], TRUE);
    }
    g_free(mem);
  }
  for (uint32_t h = 0; h < r.topo->nhosts; h++) {
    FabNic *nic = &r.topo->nics[h];
    nic->flows = r.flows;
    nic->done = flow_done;
    nic->fail = flow_fail;
    nic->sent = flow_sent;
    nic->ctx = &r;
  }
  for (uint32_t i = 0; i < nops; i++) /* the roots (not ops their release made ready meanwhile) */
    if (!fab_dag_op(dag, i)->ndeps) ready(&r, i);

  /* queue sampling: every switch port */
  r.t = g_array_new(FALSE, FALSE, sizeof(fab_time_t));
  r.depth = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  r.depth_prio = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  r.rate = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  r.sample_rates = r.nflows <= FAB_RATE_FLOWS;
  r.link_bytes = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  r.nprio = sc->fabric.sw.nprio;
  if (sc->hdf5 || opts->sample_queues) {
    r.interval = sc->sample_interval;
    for (uint32_t s = 0; s < r.topo->nswitches; s++) r.ncols += r.topo->switches[s]->nports;
    r.cols = g_new(FabPort *, r.ncols);
    uint32_t c = 0;
    for (uint32_t s = 0; s < r.topo->nswitches; s++)
      for (uint32_t p = 0; p < r.topo->switches[s]->nports; p++) r.cols[c++] = &r.topo->switches[s]->ports[p];
    fab_engine_at(r.eng, 0, &r, 0);
  }
  r.cycle = g_ptr_array_new();
  const FabPfcCfg *pfc = &sc->fabric.sw.pfc;
  if ((pfc->enabled || sc->fabric.sw.credits) && pfc->watchdog) { /* lossless: PFC or InfiniBand credits */
    r.wd = (Watch){&watch_ops, &r, 0};
    fab_engine_at(r.eng, pfc->watchdog, &r.wd, pfc->watchdog);
  }
  if (opts->progress) {
    r.progress = true;
    r.eng->tick = progress;
    r.eng->tick_ctx = &r;
  }

  gint64 t0 = g_get_monotonic_time();
  bool time_ok = setup ? true : fab_engine_run(r.eng, sc->stop_time);
  res->wall_s = (double)(g_get_monotonic_time() - t0) / 1e6;
  if (opts->progress) fprintf(stderr, "\r%70s\r", "");

  /* ---- invariants ---- */
  if (!time_ok) failf(&fail, "internal error: an event was scheduled in the past");
  bool drained = fab_evq_size(r.eng->evq) == 0;
  if (r.stalled && r.cycle->len) {
    GString *c = g_string_new(NULL);
    for (guint i = 0; i <= r.cycle->len; i++) {
      char name[FAB_NAME_LEN];
      name_port(name, g_ptr_array_index(r.cycle, i % r.cycle->len));
      g_string_append_printf(c, "%s%s", i ? " -> " : "", name);
    }
    bool ib = sc->fabric.sw.credits != 0;
    failf(&fail, "%s deadlock at %.6f ms: a cycle of %s ports: %s", ib ? "credit" : "PFC",
          fab_time_to_s(r.eng->now) * 1e3, ib ? "credit-starved" : "paused", c->str);
    g_string_free(c, TRUE);
  } else if (r.stalled) {
    failf(&fail, "no progress for %.6g ms with %u of %u flows unfinished (a PFC stall; no cycle of paused ports)",
          fab_time_to_s(pfc->watchdog) * 1e3, r.nflows - r.completed, r.nflows);
  } else if (r.failed)
    failf(&fail, "flow %u (%u -> %u) made no progress after %u retransmission timeouts", r.failed->id,
          r.failed->src, r.failed->dst, sc->fabric.nic.max_timeouts);
  else if (setup)
    failf(&fail, "%s", setup);
  else if (r.ops_done < r.nops && drained && sc->stop_time == FAB_TIME_MAX) {
    uint32_t i = 0;
    while (i < r.nops && r.state[i]) i++;
    failf(&fail, "internal error: %u of %u operations never became ready (the first, op %u, waits for %u more)",
          r.nops - r.ops_done, r.nops, i < r.nops ? i : 0, i < r.nops ? r.left[i] : 0);
  } else if (r.ops_done < r.nops)
    failf(&fail, "stop_time reached with %u of %u flows unfinished (%u of %u operations)", r.nflows - r.completed,
          r.nflows, r.nops - r.ops_done, r.nops);
  for (uint32_t i = 0; i < r.nops; i++) { /* no op began before what it waits for was done */
    const FabOp *o = fab_dag_op(dag, i);
    for (uint32_t k = 0; r.state[i] && k < o->ndeps; k++) {
      uint32_t d = fab_dag_dep(dag, o, k);
      if (!(d & FAB_DEP_SENT) && (r.state[d] != 2 || r.t1[d] > r.t0[i])) {
        failf(&fail, "internal error: op %u began at %" G_GUINT64_FORMAT " ps before op %u it depends on was done", i,
              r.t0[i], d);
        i = r.nops;
        break;
      }
    }
  }
  Totals tot = {0};
  tot.now = r.eng->now;
  fab_topology_foreach_port(r.topo, add_port, &tot);
  uint64_t sw_drops = 0, sw_drop_bytes = 0;
  for (uint32_t s = 0; s < r.topo->nswitches; s++) {
    sw_drops += r.topo->switches[s]->drops;
    sw_drop_bytes += r.topo->switches[s]->drop_bytes;
  }
  /* conservation: every packet (and byte) a NIC sent was received by a NIC,
  ** dropped by a switch, or is still in the fabric when stop_time cut the run */
  uint64_t sent = 0, recv = 0, sent_b = 0, recv_b = 0, retx = 0;
  uint32_t ack_b = sc->fabric.nic.transport.ack_bytes;
  for (uint32_t h = 0; h < r.topo->nhosts; h++) {
    FabNic *n = &r.topo->nics[h];
    sent += n->tx_data_pkts + n->tx_ctrl_pkts;
    recv += n->rx_data_pkts + n->rx_ctrl_pkts;
    sent_b += n->tx_data_bytes + n->tx_ctrl_pkts * ack_b;
    recv_b += n->rx_data_bytes + n->rx_ctrl_pkts * ack_b;
    retx += n->retransmits;
  }
  Flush fl = {r.eng, 0, 0};
  fab_topology_foreach_port(r.topo, flush_one, &fl);
  if (fl.pkts && drained) failf(&fail, "internal error: packets left in the fabric after the last event");
  if (sent != recv + sw_drops + fl.pkts || sent_b != recv_b + sw_drop_bytes + fl.bytes)
    failf(&fail, "internal error: packets not conserved (sent %" G_GUINT64_FORMAT ", received %" G_GUINT64_FORMAT
          ", dropped %" G_GUINT64_FORMAT ", in flight %" G_GUINT64_FORMAT ")", sent, recv, sw_drops, fl.pkts);
  if (fab_pool_live(r.eng->pool) != 0)
    failf(&fail, "internal error: %zu packets leaked from the pool", fab_pool_live(r.eng->pool));
  for (uint32_t i = 0; i < r.nflows; i++)
    if (r.flows[i].end && r.flows[i].rcv_bytes != r.flows[i].bytes) {
      failf(&fail, "internal error: flow %u completed with %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " bytes", i,
            r.flows[i].rcv_bytes, r.flows[i].bytes);
      break;
    }

  /* ---- results ---- */
  res->version = FABSIM_VERSION;
  res->scenario = sc->name;
  res->scenario_text = fab_cfg_text(sc->cfg);
  res->topology = sc->topology;
  res->seed = sc->seed;
  if (r.ops_done == r.nops) res->sim_time = r.last_end;
  else if (!drained && !r.failed && sc->stop_time != FAB_TIME_MAX) res->sim_time = sc->stop_time; /* cut */
  else res->sim_time = r.eng->now;
  res->events = r.eng->events;
  res->packet_hops = tot.hops;
  res->endpoints = r.topo->nhosts;
  res->nvlink_segment = sc->fabric.nic.nvl_domain ? sc->fabric.nic.nvl_mtu : 0;
  res->drops = sw_drops;
  res->retransmits = retx;
  res->max_queue_bytes = tot.max_q;
  res->pfc_pause_frames = tot.pauses;
  res->pfc_paused = tot.paused;
  for (uint32_t h = 0; h < r.topo->nhosts; h++) res->cnps += r.topo->nics[h].cnps_sent;
  for (uint32_t s = 0; s < r.topo->nswitches; s++) res->ecn_marks += r.topo->switches[s]->ecn_marks;
  fill_dag_results(&r, res);
  res->n_flows = r.nflows;
  res->flows = g_new0(FabFlowRec, r.nflows);
  for (uint32_t i = 0; i < r.nflows; i++) {
    FabFlow *f = &r.flows[i];
    res->flows[i] = (FabFlowRec){f->id, f->src, f->dst, f->bytes, f->start == FAB_TIME_MAX ? 0 : f->start, f->end,
                                 f->retransmits};
  }
  GArray *links = g_array_new(FALSE, FALSE, sizeof(FabLinkRec));
  LinkFill lf = {links, res->sim_time};
  fab_topology_foreach_port(r.topo, fill_links, &lf);
  res->n_links = links->len;
  res->links = (FabLinkRec *)(void *)g_array_free(links, FALSE);
  FabQueueSeries *q = &res->queues;
  q->interval = r.interval;
  q->n_ports = r.ncols;
  q->port = g_malloc0((size_t)FAB_NAME_LEN * (r.ncols ? r.ncols : 1));
  for (uint32_t c = 0; c < r.ncols; c++) name_port(q->port[c], r.cols[c]);
  q->n_samples = r.t->len;
  q->t = (fab_time_t *)(void *)g_array_free(r.t, FALSE);
  q->depth = (uint32_t *)(void *)g_array_free(r.depth, FALSE);
  q->n_prio = r.nprio > 1 ? r.nprio : 0;
  q->depth_prio = (uint32_t *)(void *)g_array_free(r.depth_prio, FALSE);
  q->flow_rate = r.sample_rates ? (uint64_t *)(void *)g_array_free(r.rate, FALSE) : NULL;
  if (!r.sample_rates) g_array_free(r.rate, TRUE);
  q->link_bytes = (uint64_t *)(void *)g_array_free(r.link_bytes, FALSE);
  res->failure = fail ? g_string_free(fail, FALSE) : NULL;
  res->n_deadlock = r.cycle->len;
  res->deadlock = g_malloc0((size_t)FAB_NAME_LEN * (r.cycle->len ? r.cycle->len : 1));
  for (guint i = 0; i < r.cycle->len; i++) name_port(res->deadlock[i], g_ptr_array_index(r.cycle, i));
  g_ptr_array_free(r.cycle, TRUE);

  g_free(setup);
  g_free(r.cols);
  g_free(r.flows);
  g_free(r.flow_of);
  g_free(r.op_of);
  g_free(r.left);
  g_free(r.out0);
  g_free(r.out);
  g_free(r.t0);
  g_free(r.t1);
  g_free(r.state);
  g_free(r.sq_next);
  g_free(r.sq_head);
  g_free(r.sq_tail);
  g_free(r.busy);
  g_free(r.rq_head);
  g_free(r.rq_tail);
  g_free(r.rbusy);
  g_array_free(r.todo, TRUE);
  fab_topology_free(r.topo);
  fab_engine_free(r.eng);
  return res->failure ? 1 : 0;
}

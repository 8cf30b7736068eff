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
  {"workload", FAB_CFG_MAP, offsetof(TopIn, workload), TRUE, NULL, 0, 0, NULL},
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
  uint32_t endpoints = g->gpus_per_node ? g->nodes * g->gpus_per_node : sc->fabric.topo.hosts;
  sc->flows = fab_workload_read(root, endpoints, sc->fabric.sw.nprio, top.seed, err);
  if (!sc->flows) goto fail;
  if (sc->fabric.topo.kind == FAB_TOPO_MULTI_RAIL && !g->pxn) /* planes are not joined */
    for (guint i = 0; i < sc->flows->len; i++) {
      const FabFlowSpec *f = &g_array_index(sc->flows, FabFlowSpec, i);
      uint32_t G = g->gpus_per_node, dom = g->nvlink_domain ? g->nvlink_domain : G;
      if (f->src / dom != f->dst / dom && f->src % G != f->dst % G) {
        const FabCfgNode *wl = fab_cfg_get(root, "workload"), *fl = fab_cfg_get(wl, "flows");
        const FabCfgNode *at = fl && i < fab_cfg_len(fl) ? fab_cfg_get(fab_cfg_at(fl, i), "dst") : fab_cfg_get(wl, "kind");
        fab_cfg_fail(at, err, "GPU %u and GPU %u are on different rails of a multi-rail fabric, whose planes are not "
                     "joined: set cluster.pxn: true to relay through NVLink", f->src, f->dst);
        goto fail;
      }
    }
  for (guint i = 0; i < sc->flows->len; i++) { /* NVLS: every rank in one NVLink domain */
    const FabFlowSpec *f = &g_array_index(sc->flows, FabFlowSpec, i);
    uint32_t dom = sc->fabric.nic.nvl_domain;
    const FabCfgNode *wl = fab_cfg_get(root, "workload");
    if (!f->nvls) continue;
    if (!dom) {
      fab_cfg_fail(fab_cfg_get(wl, "algorithm") ? fab_cfg_get(wl, "algorithm") : wl, err,
                   "nvls needs GPU nodes in an NVLink domain (cluster.node with NVLink)");
      goto fail;
    }
    if (f->src / dom != g_array_index(sc->flows, FabFlowSpec, 0).src / dom) {
      fab_cfg_fail(fab_cfg_get(wl, "ranks") ? fab_cfg_get(wl, "ranks") : wl, err,
                   "nvls reduces inside one NVLink domain: ranks %u and %u are in different domains (of %u GPUs)",
                   g_array_index(sc->flows, FabFlowSpec, 0).src, f->src, dom);
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
  if (sc->flows) g_array_free(sc->flows, TRUE);
  g_free(sc->topology);
  fab_cfg_free(sc->cfg);
  g_free(sc);
}

char *fab_scenario_explain(const FabScenario *sc) {
  const FabFabricCfg *f = &sc->fabric;
  GString *s = g_string_new(NULL);
  uint64_t total = 0;
  for (guint i = 0; i < sc->flows->len; i++) total += g_array_index(sc->flows, FabFlowSpec, i).bytes;
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
  g_string_append_printf(s, "workload   %u flows, %" G_GUINT64_FORMAT " bytes\n", sc->flows->len, total);
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

struct Run {
  const FabOps *ops;        /* the queue sampler is an element */
  FabEngine *eng;
  FabTopology *topo;
  FabFlow *flows;
  uint32_t nflows, completed;
  fab_time_t last_end;      /* ps: latest completion */
  FabFlow *failed;          /* first flow that gave up */
  /* queue samples */
  fab_time_t interval;
  uint32_t ncols;
  FabPort **cols;
  GArray *t, *depth;
  uint32_t nprio;           /* per-priority depths recorded when > 1 */
  GArray *depth_prio;       /* u32 [sample][port][prio] */
  GArray *rate;             /* u64 [sample][flow], bits/s */
  GArray *link_bytes;       /* u64 [sample][link]: wire bytes each link has sent so far */
  /* progress */
  bool progress;
  gint64 last_report;
  /* PFC watchdog */
  Watch wd;
  bool stalled;             /* the watchdog stopped the run */
  GPtrArray *cycle;         /* FabPort *: the deadlock it found, in order */
};

static void flow_done(void *ctx, FabFlow *f) {
  Run *r = ctx;
  r->completed++;
  if (f->end > r->last_end) r->last_end = f->end;
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
  for (uint32_t i = 0; i < r->nflows; i++) { /* a flow sends from its start until all is acknowledged */
    const FabFlow *f = &r->flows[i];
    uint64_t bps = f->start <= eng->now && !f->acked ? fab_flow_rate(f) : 0;
    g_array_append_val(r->rate, bps);
  }
  fab_topology_foreach_port(r->topo, sample_link, r->link_bytes);
  if (r->completed < r->nflows) fab_engine_after(eng, r->interval, r, 0);
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
  if (r->completed == r->nflows) return;
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

int fab_scenario_run(const FabScenario *sc, const FabRunOpts *opts, FabResults *res) {
  Run r = {0};
  GString *fail = NULL;
  memset(res, 0, sizeof *res);
  r.ops = &sampler_ops;
  r.eng = fab_engine_new(sc->seed);
  r.topo = fab_topology_build(&sc->fabric);
  r.nflows = sc->flows->len;
  r.flows = g_new0(FabFlow, r.nflows);
  for (uint32_t i = 0; i < r.nflows; i++) {
    const FabFlowSpec *s = &g_array_index(sc->flows, FabFlowSpec, i);
    FabFlow *f = &r.flows[i];
    f->id = i;
    f->src = s->src;
    f->dst = s->dst;
    f->bytes = s->bytes;
    f->start = s->start;
    f->prio = s->prio;
    f->nvls = s->nvls;
    fab_flow_prepare(f, &sc->fabric.nic);
  }
  /* NVLS collectives: one in-switch reduction group per collective at its domain's NVSwitch */
  GArray *colls = g_array_new(FALSE, TRUE, sizeof(struct FabCollRec));
  for (uint32_t i = 0; i < r.nflows;) {
    const FabFlowSpec *s = &g_array_index(sc->flows, FabFlowSpec, i);
    if (s->coll < 0) {
      i++;
      continue;
    }
    uint32_t j = i, dom = sc->fabric.nic.nvl_domain;
    while (j < r.nflows && g_array_index(sc->flows, FabFlowSpec, j).coll == s->coll) j++;
    uint32_t n = j - i, *port = g_new(uint32_t, n), *fid = g_new(uint32_t, n), *rank = g_new(uint32_t, n);
    for (uint32_t m = 0; m < n; m++) {
      rank[m] = r.flows[i + m].src;
      fid[m] = i + m;
      port[m] = dom ? rank[m] % dom : 0;
    }
    uint32_t g = fab_switch_nvls_add(r.topo->nvs[rank[0] / dom], n, port, fid, rank, r.flows[i].npkts);
    for (uint32_t m = i; m < j; m++) r.flows[m].nvls_group = g;
    struct FabCollRec c = {"allreduce", "nvls", s->bytes, n, s->start, 0};
    g_array_append_val(colls, c);
    g_free(port);
    g_free(fid);
    g_free(rank);
    i = j;
  }
  for (uint32_t h = 0; h < r.topo->nhosts; h++) {
    FabNic *nic = &r.topo->nics[h];
    nic->flows = r.flows;
    nic->done = flow_done;
    nic->fail = flow_fail;
    nic->ctx = &r;
  }
  for (uint32_t i = 0; i < r.nflows; i++) fab_nic_post(r.eng, &r.topo->nics[r.flows[i].src], &r.flows[i]);

  /* queue sampling: every switch port */
  r.t = g_array_new(FALSE, FALSE, sizeof(fab_time_t));
  r.depth = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  r.depth_prio = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  r.rate = g_array_new(FALSE, FALSE, sizeof(uint64_t));
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
  bool time_ok = fab_engine_run(r.eng, sc->stop_time);
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
  else if (r.completed < r.nflows)
    failf(&fail, "stop_time reached with %u of %u flows unfinished", r.nflows - r.completed, r.nflows);
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
  if (r.completed == r.nflows) res->sim_time = r.last_end;
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
  for (guint c = 0, i = 0; c < colls->len; c++) { /* a collective ends when its last rank has the result */
    struct FabCollRec *cr = &g_array_index(colls, struct FabCollRec, c);
    while (i < r.nflows && g_array_index(sc->flows, FabFlowSpec, i).coll != (int32_t)c) i++;
    bool all = true;
    for (uint32_t m = 0; m < cr->ranks; m++, i++) {
      all &= r.flows[i].end != 0;
      cr->end = MAX(cr->end, r.flows[i].end);
    }
    if (!all) cr->end = 0;
  }
  res->n_colls = colls->len;
  res->colls = (struct FabCollRec *)(void *)g_array_free(colls, FALSE);
  res->n_flows = r.nflows;
  res->flows = g_new0(FabFlowRec, r.nflows);
  for (uint32_t i = 0; i < r.nflows; i++) {
    FabFlow *f = &r.flows[i];
    res->flows[i] = (FabFlowRec){f->id, f->src, f->dst, f->bytes, f->start, f->end, f->retransmits};
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
  q->flow_rate = (uint64_t *)(void *)g_array_free(r.rate, FALSE);
  q->link_bytes = (uint64_t *)(void *)g_array_free(r.link_bytes, FALSE);
  res->failure = fail ? g_string_free(fail, FALSE) : NULL;
  res->n_deadlock = r.cycle->len;
  res->deadlock = g_malloc0((size_t)FAB_NAME_LEN * (r.cycle->len ? r.cycle->len : 1));
  for (guint i = 0; i < r.cycle->len; i++) name_port(res->deadlock[i], g_ptr_array_index(r.cycle, i));
  g_ptr_array_free(r.cycle, TRUE);

  g_free(r.cols);
  g_free(r.flows);
  fab_topology_free(r.topo);
  fab_engine_free(r.eng);
  return res->failure ? 1 : 0;
}

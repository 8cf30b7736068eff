/* fabsim-replay: `mpirun -np N fabsim-replay SCENARIO`: the scenario's
** collectives on N real processes over libfabric, timed, every byte checked,
** written in fabsim's own schema (JSON, HDF5) and as nccl-tests logs (what
** `fabsim compare` and `fabsim calibrate` read). See replay.h; README
** "Replay on real hardware". */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "args.h"
#include "replay.h"
#include "tools/libfabsim/collect.h"
#include "tools/libfabsim/fields.h"
#include "tools/libfabsim/h5out.h"
#include "tools/libfabsim/json.h"
#include "tools/libfabsim/nccltests.h"
#include "tools/libfabsim/scenario.h"

enum { V_PROVIDER, V_JSON, V_HDF5, V_LOG, F_RMA, N_WARMUP, N_ITERS, N_TIMEOUT, N_MAX_OPS, V_BACKEND, V_DEVICE,
       N_PORT, N_GID, F_PROBE, N_PROBE_MAX }; /* one slot each */
#define PROBE_ROUNDS 20

static const FabOpt opts[] = {
  {"--set", 0, FAB_OPT_SET, 0, "KEY=VALUE", "KEY=VALUE", 0, 0, "override a scenario key (repeatable)"},
  {"--backend", 0, FAB_OPT_VALUE, V_BACKEND, "NAME", "ofi or verbs", 0, 0,
   "ofi: libfabric (the default); verbs: raw ibverbs RC queue pairs, RDMA writes with immediate data"},
  {"--provider", 0, FAB_OPT_VALUE, V_PROVIDER, "NAME", "a libfabric provider name", 0, 0,
   "libfabric provider: tcp, shm, verbs, efa, ... (default: the first that offers what replay needs)"},
  {"--rma", 0, FAB_OPT_FLAG, F_RMA, NULL, NULL, 0, 0,
   "move data with RMA writes with immediate data (as NCCL's IB transport) instead of tagged sends"},
  {"--device", 0, FAB_OPT_VALUE, V_DEVICE, "NAME", "an RDMA device name", 0, 0,
   "verbs: the device (default: the first ibv_devices lists)"},
  {"--ib-port", 0, FAB_OPT_UINT, N_PORT, "N", "a port number", 1, 255, "verbs: the device's port (default 1)"},
  {"--gid-index", 0, FAB_OPT_UINT, N_GID, "N", "a GID index", 0, 255,
   "verbs: the GID index (default 0; RoCE: the RoCEv2 GID, often 3)"},
  {"--warmup", 0, FAB_OPT_UINT, N_WARMUP, "N", "a count", 0, 1000, "passes not measured first (default 1)"},
  {"--iters", 0, FAB_OPT_UINT, N_ITERS, "N", "a positive count", 1, 100000, "passes measured and averaged (default 5)"},
  {"--timeout", 0, FAB_OPT_UINT, N_TIMEOUT, "S", "a positive number of seconds", 1, 86400,
   "seconds without progress before a process gives up, naming what it waits for (default 30)"},
  {"--max-ops", 0, FAB_OPT_UINT, N_MAX_OPS, "N", "a positive count", 1, FAB_DAG_MAX_OPS,
   "refuse a workload of more operations (default 2000000)"},
  {"--probe", 0, FAB_OPT_FLAG, F_PROBE, NULL, NULL, 0, 0,
   "measure point-to-point latency and bandwidth per size and path class instead of running the workload"},
  {"--probe-max", 0, FAB_OPT_UINT, N_PROBE_MAX, "BYTES", "a size in bytes", 8, 1ull << 34,
   "--probe: the largest size (default 67108864; sizes from 8 B by 4x)"},
  {"--json", 0, FAB_OPT_VALUE, V_JSON, "PATH", "a path (- for stdout)", 0, 0,
   "the JSON summary in fabsim's schema (- : on stdout, instead of the text)"},
  {"--hdf5", 0, FAB_OPT_VALUE, V_HDF5, "PATH", "a path", 0, 0, "the HDF5 tables in fabsim's schema"},
  {"--log", 0, FAB_OPT_VALUE, V_LOG, "PATH", "a path", 0, 0,
   "the nccl-tests tables (nccl-tests workloads) for fabsim compare and fabsim calibrate"},
  {NULL, 0, 0, 0, NULL, NULL, 0, 0, NULL},
};

static const FabCmd cmd = {
  "fabsim-replay", NULL, "SCENARIO", 1, 1, "fabsim-replay needs a SCENARIO file", "more than one scenario given",
  "Run SCENARIO's workload (collective, nccl-tests or flows) on real processes, one per endpoint it uses, "
  "started by mpirun or srun: the same flows, pieces and dependencies fabsim simulates, over libfabric, "
  "each flow's bytes checked at its receiver.",
  opts,
  "exit status: 0 replayed, 1 a transfer failed, timed out or delivered wrong bytes, 2 bad input or usage, or "
  "no transport\n",
};

static int me_, nprocs_;

static void allgather(const void *mine, void *all, size_t len) {
  MPI_Allgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, MPI_COMM_WORLD);
}

/* Every process agrees to go on (ok on each), else each returns; the first process prints its own why. */
static bool all_ok(bool ok) {
  int mine = ok, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all;
}

typedef struct Out {
  FabResults res;
  FabFlowRec *recs;
  uint32_t *flow_of;
} Out;

static const FabFlowRec *rec_for(const void *ctx, uint32_t op) {
  const Out *o = ctx;
  return &o->recs[o->flow_of[op]];
}

static fab_time_t ps(double ns) { return (fab_time_t)(ns * 1e3 + 0.5); }

/* The results, on the first process, from the averaged op times (ns). */
static void results(Out *o, const FabScenario *sc, const FabReplayPlan *p, const double *began, const double *ended,
                    double wall_s) {
  FabResults *r = &o->res;
  r->version = FABSIM_VERSION;
  r->scenario = sc->name;
  r->scenario_text = fab_cfg_text(sc->cfg);
  r->topology = sc->topology;
  r->seed = sc->seed;
  r->endpoints = p->nprocs;
  r->wall_s = wall_s;
  r->partitions = 1;
  o->recs = g_new0(FabFlowRec, MAX(p->flows, 1u));
  o->flow_of = g_new0(uint32_t, p->nops);
  uint8_t *state = g_new(uint8_t, p->nops);
  fab_time_t *b = g_new(fab_time_t, p->nops), *e = g_new(fab_time_t, p->nops);
  uint32_t n = 0;
  for (uint32_t i = 0; i < p->nops; i++) {
    const FabOp *op = fab_dag_op(p->dag, i);
    state[i] = FAB_EXEC_DONE;
    b[i] = ps(began[i]);
    e[i] = ps(ended[i]);
    r->sim_time = MAX(r->sim_time, e[i]);
    if (op->kind != FAB_OP_FLOW) continue;
    o->flow_of[i] = n;
    o->recs[n] = (FabFlowRec){n, op->src, op->dst, op->bytes, b[i], MAX(e[i], 1), 0, 0, 0};
    n++;
  }
  r->flows = o->recs; /* the results own them; rec_for reads them through o */
  r->n_flows = n;
  FabOpTimes t = {state, b, e};
  FabCollectIn in = {p->dag, NULL, rec_for, NULL, o, &t};
  FabCollect *c = fab_collect_new(p->dag);
  fab_collect_fold(c, &in, p->nops);
  fab_collect_finish(c, &in, r);
  fab_collect_free(c);
  g_free(state);
  g_free(b);
  g_free(e);
  fab_results_finalize(r);
}

/* The nccl-tests tables of the workload, as `fabsim run` prints them, said to be replayed. */
static char *nccl_tables(const FabScenario *sc, const FabReplayPlan *p, const FabResults *r) {
  const char *dtype = fab_cfg_scalar(fab_cfg_get(fab_cfg_get(fab_cfg_root(sc->cfg), "workload"), "dtype"));
  GPtrArray *tables = fab_nccltests_from_results(r, dtype);
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < tables->len; i++) {
    char *t = fab_nccltests_format(tables->pdata[i]), *nl = strchr(t, '\n');
    g_string_append_printf(s, "%s%.*s", i ? "\n" : "", nl ? (int)(nl - t + 1) : 0, t);
    for (uint32_t k = 0; k < p->nprocs; k++) /* as nccl-tests lists its ranks (fabsim compare counts them) */
      g_string_append_printf(s, "#  Rank %2u Group  0 Pid %6d on %10s device %2u [replay] endpoint %u\n", k, 0,
                             "replay", k, p->ep_of[k]);
    g_string_append(s, nl ? nl + 1 : t);
    g_free(t);
  }
  g_ptr_array_free(tables, TRUE);
  g_string_replace(s, "(simulated by fabsim: ", "(replayed by fabsim-replay: ", 0);
  return g_string_free(s, FALSE);
}

static void text(FILE *f, const FabScenario *sc, const FabReplayPlan *p, const FabResults *r, const char *how,
                 uint64_t warmup, uint64_t iters, const char *tables) {
  fprintf(f, "fabsim-replay: %s on %u processes over %s, %" G_GUINT64_FORMAT " warm-up + %" G_GUINT64_FORMAT
          " measured passes, every byte checked\n", sc->name, p->nprocs, how, warmup, iters);
  fprintf(f, "  ops         %u (%u flows), a pass %.3f us on average\n", p->nops, p->flows,
          fab_time_to_s(r->sim_time) * 1e6);
  for (size_t k = 0; k < r->n_colls && k < 32; k++) {
    const FabCollRec *c = &r->colls[k];
    fprintf(f, "  collective  %s %" G_GUINT64_FORMAT " B %s/%s on %u ranks: %.2f us, algbw %.3f GB/s, busbw %.3f "
            "GB/s\n", c->op, c->bytes, c->algorithm, c->protocol, c->ranks, c->time_s * 1e6, c->algbw_GBps,
            c->busbw_GBps);
  }
  if (r->n_colls > 32) fprintf(f, "  ...         %zu collectives in all\n", r->n_colls);
  if (*tables) fprintf(f, "\n%s", tables);
}

static char *transport(const FabArgs *a, const FabReplayNet *net);

static int write_outputs(const FabArgs *a, const FabScenario *sc, const FabReplayPlan *p, Out *o,
                         const FabReplayNet *net) {
  FabResults *r = &o->res;
  char *tables = nccl_tables(sc, p, r);
  const char *json = a->value[V_JSON];
  bool json_out = json && !strcmp(json, "-");
  GError *err = NULL;
  if (a->value[V_LOG] && !g_file_set_contents(a->value[V_LOG], tables, -1, &err)) goto fail;
  if (a->value[V_HDF5] && !fab_h5_write(r, a->value[V_HDF5], &err)) goto fail;
  if (json) {
    char *s = fab_json_summary(r);
    gboolean ok = json_out ? (fputs(s, stdout), TRUE) : g_file_set_contents(json, s, -1, &err);
    g_free(s);
    if (!ok) goto fail;
  }
  if (!json_out) {
    char *how = transport(a, net);
    text(stdout, sc, p, r, how, a->given[N_WARMUP] ? a->num[N_WARMUP] : 1, a->given[N_ITERS] ? a->num[N_ITERS] : 5,
         tables);
    g_free(how);
  }
  g_free(tables);
  return 0;
fail:
  fprintf(stderr, "fabsim-replay: %s\n", err->message);
  g_error_free(err);
  g_free(tables);
  return 2;
}

static bool verbs(const FabArgs *a) { return a->value[V_BACKEND] && !strcmp(a->value[V_BACKEND], "verbs"); }

static FabReplayNet *open_net(const FabArgs *a, const FabReplayPlan *p, char **err) {
  if (!verbs(a)) return fab_replay_ofi_open(p, a->value[V_PROVIDER], a->flag[F_RMA], allgather, err);
#ifdef FAB_HAVE_VERBS
  bool none = false;
  return fab_replay_verbs_open(p, a->value[V_DEVICE], a->given[N_PORT] ? (uint32_t)a->num[N_PORT] : 1,
                               a->given[N_GID] ? (uint32_t)a->num[N_GID] : 0, allgather, &none, err);
#else
  *err = g_strdup("this fabsim-replay was built without ibverbs (Meson option verbs: install libibverbs-dev)");
  return NULL;
#endif
}

static void close_net(const FabArgs *a, FabReplayNet *net) {
#ifdef FAB_HAVE_VERBS
  if (verbs(a)) {
    fab_replay_verbs_close(net);
    return;
  }
#endif
  fab_replay_ofi_close(net);
}

/* What moved the data, for the text: "libfabric 'tcp;ofi_rxm' (tagged sends)". */
static char *transport(const FabArgs *a, const FabReplayNet *net) {
#ifdef FAB_HAVE_VERBS
  if (verbs(a)) return g_strdup_printf("ibverbs %s (RDMA writes with immediate data)", fab_replay_verbs_device(net));
#endif
  return g_strdup_printf("libfabric '%s' (%s)", fab_replay_ofi_provider(net),
                         a->flag[F_RMA] ? "RMA writes with immediate data" : "tagged sends");
}

/* Parse, load and plan on every process; only the first prints what is wrong. 0 to go on. */
static int prepare(int argc, char **argv, FabArgs *a, FabScenario **sc, FabReplayPlan *p) {
  int saved[2] = {-1, -1};
  if (me_) { /* the others' usage errors and help are the first one's */
    fflush(NULL);
    int null = open("/dev/null", O_WRONLY);
    for (int f = 0; f < 2; f++) saved[f] = dup(f + 1), dup2(null, f + 1);
    close(null);
  }
  int rc = fab_args_parse(&cmd, argc - 1, argv + 1, a);
  if (me_) {
    fflush(NULL);
    for (int f = 0; f < 2; f++) dup2(saved[f], f + 1), close(saved[f]);
  }
  if (rc >= 0) return rc ? rc : -1; /* -1: --help printed, stop with 0 */
  const char *be = a->value[V_BACKEND];
  if (be && strcmp(be, "ofi") && strcmp(be, "verbs")) {
    if (!me_) fab_args_error(&cmd, "--backend %s: expected ofi or verbs", be);
    return 2;
  }
  if (a->flag[F_PROBE] && (a->value[V_LOG] || a->value[V_HDF5])) {
    if (!me_) fab_args_error(&cmd, "--probe writes its table, or --json: --log and --hdf5 are for the workload");
    return 2;
  }
  GError *err = NULL;
  *sc = fab_scenario_load(fab_args_pos(a, 0), fab_args_sets(a), &err);
  if (!*sc) {
    if (!me_) fprintf(stderr, "fabsim-replay: %s\n", err->message);
    g_error_free(err);
    return 2;
  }
  bool nccl_tests = false;
  for (guint k = 0; k < (*sc)->dag->colls->len; k++)
    nccl_tests |= !g_strcmp0(g_array_index((*sc)->dag->colls, FabCollDef, k).tag, "nccl-tests");
  if (a->value[V_LOG] && !nccl_tests && !a->flag[F_PROBE]) {
    if (!me_) fprintf(stderr, "fabsim-replay: %s: --log writes nccl-tests tables, and the workload has no nccl-tests "
                      "collectives (workload.kind: nccl-tests)\n", fab_args_pos(a, 0));
    return 2;
  }
  char *why = NULL;
  uint64_t max_ops = a->given[N_MAX_OPS] ? a->num[N_MAX_OPS] : 2000000;
  if (!fab_replay_plan(p, (*sc)->dag, (uint32_t)me_, (uint32_t)max_ops, &why)) {
    if (!me_) fprintf(stderr, "fabsim-replay: %s: %s\n", fab_args_pos(a, 0), why);
    g_free(why);
    return 2;
  }
  if (p->nprocs != (uint32_t)nprocs_) {
    if (!me_)
      fprintf(stderr, "fabsim-replay: %s: the workload runs on %u endpoints: start %u processes (mpirun -np %u), "
              "not %d\n", fab_args_pos(a, 0), p->nprocs, p->nprocs, p->nprocs, nprocs_);
    return 2;
  }
  return 0;
}

/* The passes; each process's averaged times (ns) into began/ended. 0, or 1 after printing why. */
static int passes(const FabArgs *a, const FabReplayPlan *p, FabReplayNet *net, double *began, double *ended,
                  double *wall_s) {
  uint64_t warmup = a->given[N_WARMUP] ? a->num[N_WARMUP] : 1, iters = a->given[N_ITERS] ? a->num[N_ITERS] : 5;
  double timeout = a->given[N_TIMEOUT] ? (double)a->num[N_TIMEOUT] : 30;
  const char *st = g_getenv("FABSIM_REPLAY_STALL"), *die = g_getenv("FABSIM_REPLAY_KILL"); /* tests: this process
                                                                                             ** hangs, or dies */
  int stall = st && (int)g_ascii_strtoll(st, NULL, 10) == me_ ? 1 : die && (int)g_ascii_strtoll(die, NULL, 10) == me_ ? 2 : 0;
  const char *co = g_getenv("FABSIM_REPLAY_CORRUPT"); /* tests: this process sends a wrong byte */
  FabReplayTimes t = {g_new0(double, p->nops), g_new0(double, p->nops)};
  double t0 = MPI_Wtime();
  int rc = 0;
  for (uint64_t k = 0; k < warmup + iters && !rc; k++) {
    char *err = NULL;
    if (co && (int)g_ascii_strtoll(co, NULL, 10) == me_) net->corrupt = true;
    fab_replay_prepare(p, net, (uint32_t)k);
    MPI_Barrier(MPI_COMM_WORLD);
    if (k == warmup) t0 = MPI_Wtime();
    rc = fab_replay_pass(p, net, (uint32_t)k, timeout, stall, &t, &err);
    if (rc) {
      fprintf(stderr, "fabsim-replay: process %d (endpoint %u), pass %" G_GUINT64_FORMAT ": %s\n", me_,
              p->ep_of[me_], k, err);
      g_free(err);
      break;
    }
    for (uint32_t i = 0; k >= warmup && i < p->nops; i++) {
      began[i] += t.began[i] / (double)iters;
      ended[i] += t.ended[i] / (double)iters;
    }
  }
  *wall_s = MPI_Wtime() - t0;
  g_free(t.began);
  g_free(t.ended);
  return rc;
}

typedef struct ProbeRow {
  FabReplayClass cls;
  uint32_t from, to, window;
  uint64_t bytes;
  double lat_ns, gbps;
} ProbeRow;

/* One size of one class, measured; process 0 keeps the medians over the measured passes. 0, 1 (a pass failed,
** said), 2 (the transport would not open, said). */
static int probe_size(const FabArgs *a, const FabReplayPlan *wp, ProbeRow *row, char **how) {
  uint64_t warmup = a->given[N_WARMUP] ? a->num[N_WARMUP] : 1, iters = a->given[N_ITERS] ? a->num[N_ITERS] : 5;
  double timeout = a->given[N_TIMEOUT] ? (double)a->num[N_TIMEOUT] : 30;
  FabDag *d = fab_replay_probe_dag(wp->ep_of, wp->nprocs, row->from, row->to, row->bytes, PROBE_ROUNDS, row->window);
  FabReplayPlan p;
  char *err = NULL;
  gboolean planned = fab_replay_plan(&p, d, (uint32_t)me_, UINT32_MAX, &err); /* a probe DAG always plans */
  g_assert(planned && p.nprocs == wp->nprocs);
  FabReplayNet *net = open_net(a, &p, &err);
  int rc = 0;
  if (!net) {
    if (!me_) fprintf(stderr, "fabsim-replay: %s\n", err);
    g_free(err);
    rc = 2;
  }
  if (net && !*how) *how = transport(a, net);
  double *lat = g_new(double, iters), *bw = g_new(double, iters);
  FabReplayTimes t = {g_new0(double, p.nops), g_new0(double, p.nops)};
  for (uint64_t k = 0; net && k < warmup + iters; k++) {
    fab_replay_prepare(&p, net, (uint32_t)k);
    MPI_Barrier(MPI_COMM_WORLD);
    if (fab_replay_pass(&p, net, (uint32_t)k, timeout, 0, &t, &err)) {
      fprintf(stderr, "fabsim-replay: process %d (endpoint %u), probe of %" G_GUINT64_FORMAT " B: %s\n", me_,
              p.ep_of[me_], row->bytes, err);
      fflush(NULL);
      _exit(1);
    }
    if (k >= warmup && !me_) fab_replay_probe_read(&t, p.nprocs, PROBE_ROUNDS, row->window, row->bytes,
                                                   &lat[k - warmup], &bw[k - warmup]);
  }
  if (net && !me_) {
    row->lat_ns = fab_replay_median(lat, (uint32_t)iters);
    row->gbps = fab_replay_median(bw, (uint32_t)iters);
  }
  if (net) close_net(a, net);
  g_free(t.began);
  g_free(t.ended);
  g_free(lat);
  g_free(bw);
  fab_replay_plan_clear(&p);
  fab_dag_free(d);
  return rc;
}

static void probe_print(const FabArgs *a, const GArray *rows, const char *how) {
  const char *json = a->value[V_JSON];
  if (json) {
    GString *s = g_string_new("{\"probe\": {\"transport\": ");
    fab_json_put_str(s, how);
    g_string_append_printf(s, ", \"rounds\": %d, \"rows\": [", PROBE_ROUNDS);
    for (guint k = 0; k < rows->len; k++) {
      const ProbeRow *r = &g_array_index(rows, ProbeRow, k);
      g_string_append_printf(s, "%s\n  {\"class\": \"%s\", \"from\": %u, \"to\": %u, \"bytes\": %" G_GUINT64_FORMAT
                             ", \"window\": %u, \"latency_us\": ", k ? "," : "", fab_replay_class_names[r->cls],
                             r->from, r->to, r->bytes, r->window);
      fab_json_put_num(s, r->lat_ns / 1e3);
      g_string_append(s, ", \"bandwidth_GBps\": ");
      fab_json_put_num(s, r->gbps);
      g_string_append_c(s, '}');
    }
    g_string_append(s, "\n]}}\n");
    GError *err = NULL;
    if (strcmp(json, "-") ? !g_file_set_contents(json, s->str, -1, &err) : fputs(s->str, stdout) < 0)
      fprintf(stderr, "fabsim-replay: %s\n", err ? err->message : "cannot write the JSON");
    g_clear_error(&err);
    g_string_free(s, TRUE);
    if (!strcmp(json, "-")) return;
  }
  printf("fabsim-replay --probe over %s: %d round trips (latency: half the median) and a window of transfers "
         "(bandwidth: its bytes over the time to the last one's answer) per size, the median of the passes\n", how,
         PROBE_ROUNDS);
  printf("  %-7s %8s %8s  %12s  %6s  %12s  %14s\n", "class", "from", "to", "size (B)", "window", "latency us",
         "bandwidth GB/s");
  for (guint k = 0; k < rows->len; k++) {
    const ProbeRow *r = &g_array_index(rows, ProbeRow, k);
    printf("  %-7s %8u %8u  %12" G_GUINT64_FORMAT "  %6u  %12.2f  %14.3f\n", fab_replay_class_names[r->cls], r->from,
           r->to, r->bytes, r->window, r->lat_ns / 1e3, r->gbps);
  }
}

/* --probe: from process 0's endpoint to the first endpoint of each path class, each size. */
static int probe(const FabArgs *a, const FabScenario *sc, const FabReplayPlan *wp) {
  uint32_t gpn = sc->fabric.gpu.gpus_per_node, dom = sc->fabric.gpu.nvlink_domain;
  uint64_t hi = a->given[N_PROBE_MAX] ? a->num[N_PROBE_MAX] : 64ull << 20;
  GArray *rows = g_array_new(FALSE, FALSE, sizeof(ProbeRow));
  int rc = 0;
  char *how = NULL;
  for (int c = 0; c < FAB_REPLAY_CLASSES && !rc; c++) {
    uint32_t to = UINT32_MAX;
    for (uint32_t k = 1; k < wp->nprocs && to == UINT32_MAX; k++)
      if ((int)fab_replay_class(wp->ep_of[0], wp->ep_of[k], gpn, dom) == c) to = wp->ep_of[k];
    for (uint64_t b = 8; to != UINT32_MAX && b <= hi && !rc; b *= 4) {
      ProbeRow r = {(FabReplayClass)c, wp->ep_of[0], to, fab_replay_probe_window(b), b, 0, 0};
      rc = probe_size(a, wp, &r, &how);
      g_array_append_val(rows, r);
    }
  }
  if (!rc && !me_) probe_print(a, rows, how ? how : "nothing (no pair to probe)");
  g_free(how);
  g_array_free(rows, TRUE);
  return rc;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me_);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs_);
  FabArgs a;
  FabScenario *sc = NULL;
  FabReplayPlan p = {0};
  int rc = prepare(argc, argv, &a, &sc, &p);
  if (!all_ok(rc == 0)) goto done;
  if (a.flag[F_PROBE]) {
    rc = probe(&a, sc, &p);
    goto done;
  }
  char *err = NULL;
  FabReplayNet *net = open_net(&a, &p, &err);
  if (!net) {
    if (!me_) fprintf(stderr, "fabsim-replay: %s\n", err);
    g_free(err);
    rc = 2;
    goto done;
  }
  double *began = g_new0(double, p.nops), *ended = g_new0(double, p.nops), wall_s = 0;
  rc = passes(&a, &p, net, began, ended, &wall_s);
  if (rc) { /* the others are stuck or will time out themselves: end now, as a failed peer would */
    fflush(NULL);
    _exit(1);
  }
  double *b0 = me_ ? NULL : g_new0(double, p.nops), *e0 = me_ ? NULL : g_new0(double, p.nops);
  MPI_Reduce(began, b0, (int)p.nops, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); /* each time is one process's */
  MPI_Reduce(ended, e0, (int)p.nops, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (!me_) {
    Out o = {0};
    results(&o, sc, &p, b0, e0, wall_s);
    rc = write_outputs(&a, sc, &p, &o, net);
    g_free(o.flow_of);
    fab_results_clear(&o.res);
  }
  g_free(b0);
  g_free(e0);
  g_free(began);
  g_free(ended);
  MPI_Barrier(MPI_COMM_WORLD);
  close_net(&a, net);
done:
  if (rc < 0) rc = 0; /* --help */
  fab_replay_plan_clear(&p);
  fab_scenario_free(sc);
  fab_args_clear(&a);
  MPI_Finalize();
  return rc;
}

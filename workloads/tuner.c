/*
** The tuner: NCCL's cost model for choosing an algorithm, a protocol and a
** channel count. See collective.h.
**
** It is NCCL's cost model (tuning.cc, NCCL 2.2x constants, Hopper
** rows): time = latency + bytes / algorithm bandwidth, where the latency is
** baseLat + steps x hwLat (intra- and inter-island steps apart) and the
** bandwidth is the link a rank can drive, times NCCL's per-algorithm and
** per-protocol factors, converted from bus to algorithm bandwidth. Sizes of
** the expansion are bounded: more than FAB_COLL_MAX_OPS operations are
** refused (an automatic channel count or piece size is first adjusted to
** fit).
**
*/
#include "coll_int.h"
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* NCCL's figures (src/graph/tuning.cc, ncclTunerConstantsDefaults; us, GB/s).
** Protocol columns in NCCL's order: LL, LL128, Simple. */

const double fab_coll__base_lat[ROW_N][3] = {
  [ROW_TREE] = {6.8, 14.0, 8.4}, [ROW_RING] = {6.6, 14.0, 8.4}, [ROW_PAT] = {8.0, 8.0, 8.0},
};
/* NCCL has a PCI row too: here a hop is NVLink inside an NVLink domain and the
** network otherwise (the simulator sends every other hop through the NIC). */
const double fab_coll__hw_lat[2][ROW_N][3] = {
  [HW_NVL] = {[ROW_TREE] = {0.6, 1.25, 4.0}, [ROW_RING] = {0.6, 1.9, 3.4}, [ROW_NVLS] = {0, 0, 25},
              [ROW_NVLS_TREE] = {0, 0, 25}, [ROW_PAT] = {0, 0, 4.0}, [ROW_COLLNET] = {0, 0, 3.7}},
  [HW_NET] = {[ROW_TREE] = {5.0, 8.5, 14}, [ROW_RING] = {2.7, 4.0, 14.0}, [ROW_NVLS] = {0, 0, 18},
              [ROW_NVLS_TREE] = {0, 0, 20.9}, [ROW_PAT] = {0, 0, 14}, [ROW_COLLNET] = {0, 0, 31}},
};
/* Hopper rows, indexed by islands 1 / 2 / more. */
const double fab_coll__ll_max_bw[3] = {141.0, 45.0, 35.0};
const double fab_coll__perch_ring_ll128[3] = {36.7, 36.7, 36.7};
const double fab_coll__perch_tree[3] = {38.7, 41.4, 36.0};
const double fab_coll__perch_tree_ll128[3] = {36.7, 36.7, 29.0};
const double fab_coll__perch_nvls_tree[3] = {0.0, 57.7, 45.5};
const double fab_coll__nvls_efficiency = 0.85;
/* Trees stray from the model at medium sizes; NCCL corrects their bandwidth
** by size (powers of two from 64 B). */
const double fab_coll__tree_correction[3][23] = {
  {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
  {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
  {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
};

static uint32_t count_groups(const FabCollEnv *env, const FabCollSpec *c, uint32_t per, uint32_t *even) {
  uint32_t *mem = g_new(uint32_t, c->nranks);
  for (uint32_t i = 0; i < c->nranks; i++) mem[i] = i;
  Groups g;
  fab_coll__groups_make(&g, c->ranks, mem, c->nranks, per);
  uint32_t ng = g.ng;
  if (even) *even = fab_coll__even_groups(&g);
  fab_coll__groups_free(&g);
  g_free(mem);
  return ng;
}

void fab_coll__topo_make(Topo *t, const FabCollEnv *env, const FabCollSpec *c) {
  memset(t, 0, sizeof *t);
  t->n = c->nranks;
  t->net = (double)env->net_bps / 8;
  t->nvl = (double)env->nvl_bps / 8;
  if (!c->nranks || !c->ranks) return;
  t->nodes = count_groups(env, c, env->gpus_per_node, &t->per_node);
  if (env->nvl_domain) {
    t->domains = count_groups(env, c, env->nvl_domain, &t->per_domain);
    t->islands = t->domains;
  } else {
    t->islands = t->n;
  }
}


/* The bandwidth (bytes/s) a rank drives in a ring or tree: NVLink inside one
** domain; across islands, the network share of the rank's island (its ranks'
** NICs carry the inter-island hops of all channels), NVLink permitting. */
static double link_bps(const Topo *t) {
  if (t->islands <= 1) return t->nvl > 0 ? t->nvl : t->net;
  double b = (double)t->n / t->islands * t->net;
  if (t->nvl > 0 && t->islands < t->n) b = MIN(b, t->nvl);
  return b;
}

/* NCCL's channel choice: 2 channels per NIC a rank's island has (NCCL
** duplicates each ring and tree, search.cc), at least enough Simple channels
** to carry the link, NVLS NCCL_NVLS_NCHANNELS; then fewer while the data
** would leave a channel's threads idle (enqueue.cc: while nBytes <
** nc x nthreads x threadThreshold, nc--; thresholds 64 B / thread Simple,
** 8 LL (x n for the ring), 8 LL128; 512 threads, 640 for LL128). */
uint32_t fab_coll__auto_channels(const Topo *t, FabCollAlgo a, FabProto p, uint64_t bytes) {
  uint32_t C;
  if (a == FAB_ALGO_NVLS || a == FAB_ALGO_NVLS_TREE) {
    C = NVLS_CHANNELS;
  } else {
    double link = link_bps(t);
    C = (uint32_t)MAX(1.0, ceil(link / PERCH_BPS));
    if (t->islands > 1) C = MAX(C, 2 * (uint32_t)ceil((double)t->n / t->islands));
  }
  C = MIN(MAX(C, 1u), MAX_CHANNELS);
  uint64_t nt = p == FAB_PROTO_LL128 ? 640 : 512;
  uint64_t thr = p == FAB_PROTO_SIMPLE ? 64 : p == FAB_PROTO_LL && a == FAB_ALGO_RING ? 8ull * MAX(t->n, 1) : 8;
  while (C > 1 && bytes < (uint64_t)C * nt * thr) C--;
  return C;
}

typedef struct LatBw {
  double lat;   /* us */
  double bw;    /* algorithm bandwidth, GB/s */
} LatBw;

/* NCCL's ring model for k ranks over `isl` islands driving `link` bytes/s. */
static LatBw ring_model(FabCollOp op, FabProto p, uint32_t k, uint32_t isl, double link, uint32_t C,
                        uint64_t bytes) {
  int pi = fab_coll__pidx(p);
  bool ar = op == FAB_COLL_ALLREDUCE, chainy = op == FAB_COLL_BROADCAST || op == FAB_COLL_REDUCE;
  uint32_t nsteps = ar ? 2 * (k - 1) : chainy ? k : k - 1;
  double ppn = (double)k / isl;
  LatBw r = {fab_coll__base_lat[ROW_RING][pi], 0};
  if (chainy) {
    /* NCCL charges a chain a tree-like latency per step for Simple */
    int row = p == FAB_PROTO_SIMPLE ? ROW_TREE : ROW_RING;
    r.lat += nsteps * fab_coll__hw_lat[isl > 1 ? HW_NET : HW_NVL][row][pi];
  } else {
    double intra = fab_coll__hw_lat[HW_NVL][ROW_RING][pi];
    double inter = fab_coll__hw_lat[HW_NET][ppn <= 1 ? ROW_TREE : ROW_RING][pi]; /* one rank per node: not hidden */
    if (isl > 1) intra = MAX(intra, p == FAB_PROTO_SIMPLE ? 3.0 : 1.0); /* network post overhead */
    uint32_t ninter = isl <= 1 ? 0 : ar ? 2 * (isl - 1) : isl - 1;
    ninter = MIN(ninter, nsteps);
    r.lat += (nsteps - ninter) * intra + ninter * inter;
    if (ar && p == FAB_PROTO_SIMPLE && isl > 1 && bytes / ((uint64_t)C * k) >= 64) r.lat *= 1.4; /* plateau */
  }
  double bus = MIN(link, C * PERCH_BPS) / 1e9;
  if (p == FAB_PROTO_LL) bus = MIN(fab_coll__ll_max_bw[fab_coll__isl_idx(isl)], bus * 0.5);
  if (p == FAB_PROTO_LL128) bus = MIN(bus * 0.92, C * fab_coll__perch_ring_ll128[fab_coll__isl_idx(isl)]);
  r.bw = bus * k / nsteps;
  return r;
}

static double seconds(LatBw m, uint64_t bytes) {
  if (!(m.bw > 0)) return HUGE_VAL;
  return m.lat * 1e-6 + (double)bytes / (m.bw * 1e9);
}

/* Send-recv (one hop) and all-to-all: NCCL has no model for p2p; this one
** charges one step's latency (the rounds stream) and the rank's busiest link:
** its off-island part over the network and its on-island part over NVLink
** move at once. */
static double p2p_model(const Topo *t, FabCollOp op, FabProto p, uint64_t bytes) {
  int pi = fab_coll__pidx(p);
  uint32_t n = t->n;
  double eff = p == FAB_PROTO_LL ? 0.5 : p == FAB_PROTO_LL128 ? 120.0 / 128 : 1;
  bool cross = t->islands > 1;
  double lat = fab_coll__base_lat[ROW_RING][pi] + fab_coll__hw_lat[cross ? HW_NET : HW_NVL][ROW_RING][pi];
  double net = t->net * eff, nvl = (t->nvl > 0 ? t->nvl : t->net) * eff;
  if (op == FAB_COLL_SEND_RECV) {
    double bw = cross ? net : nvl;
    return bw > 0 ? lat * 1e-6 + (double)bytes / bw : HUGE_VAL;
  }
  double ppn = (double)n / MAX(t->islands, 1u), off = (double)bytes * (n - ppn) / n;
  double on = (double)bytes * (ppn - 1) / n, tt = 0;
  if (off > 0) tt = MAX(tt, net > 0 ? off / net : HUGE_VAL);
  if (on > 0) tt = MAX(tt, nvl > 0 ? on / nvl : HUGE_VAL);
  return lat * 1e-6 + tt;
}


/* The model's time (s) of `op` with algorithm a, protocol p, C channels;
** HUGE_VAL when a cannot run it here. */
static double model(const FabCollEnv *env, const Topo *t, FabCollOp op, FabCollAlgo a, FabProto p, uint32_t C,
                    uint64_t bytes) {
  uint32_t n = t->n;
  if (n < 2) return 0;
  if (!fab_coll__proto_ok(a, p)) return HUGE_VAL;
  int pi = fab_coll__pidx(p);
  double link = link_bps(t);
  bool ar = op == FAB_COLL_ALLREDUCE, agrs = op == FAB_COLL_ALLGATHER || op == FAB_COLL_REDUCE_SCATTER;
  C = MAX(C, 1u);
  switch (a) {
  case FAB_ALGO_AUTO:
    return HUGE_VAL;
  case FAB_ALGO_RING:
    if (op == FAB_COLL_ALL_TO_ALL) return HUGE_VAL;
    if (op == FAB_COLL_SEND_RECV) return p2p_model(t, op, p, bytes);
    return seconds(ring_model(op, p, n, t->islands, link, C, bytes), bytes);
  case FAB_ALGO_PAIRWISE:
    if (op != FAB_COLL_ALL_TO_ALL) return HUGE_VAL;
    return p2p_model(t, op, p, bytes);
  case FAB_ALGO_TREE: {
    if (!ar) return HUGE_VAL;
    uint32_t N = MAX(t->nodes, 1u);
    double ppn = (double)n / N;
    bool nvl_in = env->nvl_domain && env->gpus_per_node > 1 && env->nvl_domain >= env->gpus_per_node;
    double intra = fab_coll__hw_lat[nvl_in ? HW_NVL : HW_NET][ROW_TREE][pi];
    double inter = fab_coll__hw_lat[t->islands <= 1 ? HW_NVL : HW_NET][ROW_TREE][pi];
    LatBw m = {fab_coll__base_lat[ROW_TREE][pi] + 2 * ((ppn - 1) * intra + fab_coll__log2i(N) * inter), 0};
    int ii = fab_coll__isl_idx(t->islands);
    double bus = MIN(link / 1e9 * 0.92, C * fab_coll__perch_tree[ii]);
    if (p == FAB_PROTO_LL) bus = MIN(bus / 3.8, fab_coll__ll_max_bw[ii]);
    if (p == FAB_PROTO_LL128) bus = MIN(bus * (t->islands <= 1 ? 7.0 / 9 : 120.0 / 128), C * fab_coll__perch_tree_ll128[ii]);
    m.bw = bus * 0.5;
    int ls = fab_coll__log2i(bytes >> 6);
    if (ls >= 0 && ls < 23) m.bw *= fab_coll__tree_correction[pi][ls];
    return seconds(m, bytes);
  }
  case FAB_ALGO_NVLS: {
    if (!ar || t->domains != 1 || t->nvl <= 0) return HUGE_VAL;
    LatBw m = {fab_coll__hw_lat[HW_NVL][ROW_NVLS][2], 2 * fab_coll__nvls_efficiency * t->nvl / 1e9 * n / (2.0 * (n - 1))};
    return seconds(m, bytes);
  }
  case FAB_ALGO_NVLS_TREE: {
    if (!ar || t->domains < 2 || t->per_domain < 2 || t->nvl <= 0) return HUGE_VAL; /* NVLS needs 2+ per domain */
    uint32_t D = t->domains;
    double intra = 2 * fab_coll__nvls_efficiency * t->nvl / 1e9;
    double inter = (double)t->per_domain * t->net / 1e9 * (D <= 2 ? 2 : 1);
    double bus = MIN(MIN(intra, inter), C * fab_coll__perch_nvls_tree[fab_coll__isl_idx(D)]);
    LatBw m = {fab_coll__hw_lat[HW_NVL][ROW_NVLS_TREE][2] + 2 * fab_coll__log2i(D) * fab_coll__hw_lat[HW_NET][ROW_NVLS_TREE][2],
               bus * n / (2.0 * (n - 1))};
    return seconds(m, bytes);
  }
  case FAB_ALGO_PAT: {
    if (!agrs) return HUGE_VAL;
    LatBw m = {fab_coll__base_lat[ROW_PAT][2] + fab_coll__log2i(MAX(t->nodes, 1u)) * (fab_coll__hw_lat[HW_NET][ROW_TREE][2] / 3.5) + n * 2.8,
               MIN(link, C * PERCH_BPS) / 1e9 * 0.75};
    return seconds(m, bytes);
  }
  case FAB_ALGO_HIERARCHICAL: {
    if (!ar && !agrs) return HUGE_VAL;
    uint32_t N = MAX(t->nodes, 1u), L = t->per_node;
    if (!L) return HUGE_VAL;
    bool nvl_in = env->nvl_domain && env->nvl_domain >= env->gpus_per_node && t->nvl > 0;
    double in_link = nvl_in ? t->nvl : t->net;
    uint32_t in_isl = nvl_in ? 1 : L;
    double tt = 0;
    if (L > 1 && op != FAB_COLL_ALLGATHER)
      tt += seconds(ring_model(FAB_COLL_REDUCE_SCATTER, p, L, in_isl, in_link, C, bytes), bytes);
    if (N > 1)
      tt += seconds(ring_model(op, p, N, N, t->net, C, bytes / L), bytes / L);
    if (L > 1 && op != FAB_COLL_REDUCE_SCATTER)
      tt += seconds(ring_model(FAB_COLL_ALLGATHER, p, L, in_isl, in_link, C, bytes), bytes);
    return tt;
  }
  case FAB_ALGO_COLLNET: {
    /* rough until the SHARP model lands: NCCL's collnet-direct latency, the
    ** rank's network share (each rank sends its data up once, gets the sum) */
    if (!ar || !env->collnet) return HUGE_VAL;
    double ppn = (double)n / MAX(t->nodes, 1u);
    LatBw m = {fab_coll__hw_lat[HW_NET][ROW_COLLNET][2] +
                   2 * ((ppn > 1 ? 1 : 0) * fab_coll__hw_lat[HW_NVL][ROW_COLLNET][2] + (ppn - 1) * 0.4),
               MIN(link, ppn * t->net) * 0.9 / 1e9};
    return seconds(m, bytes);
  }
  case FAB_ALGO_N:
    break;
  }
  return HUGE_VAL;
}

/* The algorithms the tuner weighs for `op`, in preference order for ties. */
static uint32_t candidates(FabCollOp op, FabCollAlgo *out) {
  switch (op) {
  case FAB_COLL_ALLREDUCE:
    out[0] = FAB_ALGO_NVLS, out[1] = FAB_ALGO_NVLS_TREE, out[2] = FAB_ALGO_RING, out[3] = FAB_ALGO_TREE;
    return 4;
  case FAB_COLL_ALLGATHER:
  case FAB_COLL_REDUCE_SCATTER:
    out[0] = FAB_ALGO_RING, out[1] = FAB_ALGO_PAT;
    return 2;
  case FAB_COLL_ALL_TO_ALL:
    out[0] = FAB_ALGO_PAIRWISE;
    return 1;
  default:
    out[0] = FAB_ALGO_RING;
    return 1;
  }
}

static FabCollAlgo default_algo(FabCollOp op) { return op == FAB_COLL_ALL_TO_ALL ? FAB_ALGO_PAIRWISE : FAB_ALGO_RING; }

/* PAT only at one GPU per node (NCCL's ncclPatEnable: nNodes == nRanks). */
static bool auto_ok(const Topo *t, FabCollAlgo a) { return a != FAB_ALGO_PAT || t->nodes == t->n; }

double fab_coll_tune(const FabCollEnv *env, FabCollSpec *c) {
  if (c->nranks < 2) { /* nothing moves: the plain defaults, no time */
    if (c->algorithm == FAB_ALGO_AUTO) c->algorithm = default_algo(c->op);
    if (c->protocol == FAB_PROTO_AUTO) c->protocol = FAB_PROTO_SIMPLE;
    if (!c->channels) c->channels = 1;
    return 0;
  }
  Topo t;
  fab_coll__topo_make(&t, env, c);
  FabCollAlgo algs[8];
  uint32_t na = 1;
  if (c->algorithm != FAB_ALGO_AUTO) algs[0] = c->algorithm;
  else na = candidates(c->op, algs);
  static const FabProto protos[3] = {FAB_PROTO_SIMPLE, FAB_PROTO_LL128, FAB_PROTO_LL};
  double best = HUGE_VAL;
  FabCollAlgo ba = c->algorithm != FAB_ALGO_AUTO ? c->algorithm : default_algo(c->op);
  FabProto bp = c->protocol != FAB_PROTO_AUTO ? c->protocol : FAB_PROTO_SIMPLE;
  for (uint32_t i = 0; i < na; i++) {
    if (c->algorithm == FAB_ALGO_AUTO && !auto_ok(&t, algs[i])) continue;
    for (int q = 0; q < 3; q++) {
      FabProto p = protos[q];
      if (c->protocol != FAB_PROTO_AUTO && p != c->protocol) continue;
      uint32_t C = c->channels ? c->channels : fab_coll__auto_channels(&t, algs[i], p, c->bytes);
      double tt = model(env, &t, c->op, algs[i], p, C, c->bytes);
      if (tt < best) best = tt, ba = algs[i], bp = p;
    }
  }
  c->algorithm = ba;
  c->protocol = bp;
  if (!c->channels) c->channels = fab_coll__auto_channels(&t, ba, bp, c->bytes);
  return best;
}

double fab_coll_model_time(const FabCollEnv *env, const FabCollSpec *c) {
  FabCollSpec s = *c;
  if (s.algorithm == FAB_ALGO_AUTO || s.protocol == FAB_PROTO_AUTO) return fab_coll_tune(env, &s);
  Topo t;
  fab_coll__topo_make(&t, env, &s);
  uint32_t C = s.channels ? s.channels : fab_coll__auto_channels(&t, s.algorithm, s.protocol, s.bytes);
  return model(env, &t, s.op, s.algorithm, s.protocol, C, s.bytes);
}

double fab_coll_busbw_factor(FabCollOp op, uint32_t n) {
  if (!n) return 0;
  if (op == FAB_COLL_ALLREDUCE) return 2.0 * (n - 1) / n;
  if (op == FAB_COLL_ALLGATHER || op == FAB_COLL_REDUCE_SCATTER || op == FAB_COLL_ALL_TO_ALL) return (double)(n - 1) / n;
  return 1;
}

/* ------------------------------------------------------------------------ */
/* The expansion. */

/* RCCL's tuner for AMD GPUs (arch cdna3). See coll_int.h. */
#include "coll_int.h"
#include <math.h>

/*
** What RCCL's ncclTopoTuneModel and ncclTopoGetAlgoTime compute in its AMD
** build (ROCm/rccl src/graph/tuning.cc, develop 0cbce2a7), for tuning model
** 5: the one its rome_models.cc gives the 8-GPU MI300X node (rome_model_79,
** "tuning=5"). NVIDIA's refinements (llMaxBws, the per-channel ceilings,
** the tree's 0.92) are compiled out there; instead each algorithm and
** protocol's bus bandwidth, channels x the graph's speed, is multiplied by
** the model's bwRatio (by node count), and its latency is RCCL's baseLat
** plus the model's hwLat per step. LL128 has ratio 0 (never chosen), the
** tree with Simple is skipped on one gfx94 node. ncclTopoGetAlgoTime then
** scales the tree's bandwidth, and the ring's across nodes, by the model's
** correction factor for log2(bytes / 64). Everything here is RCCL's table
** data; what is fabsim's: the graph (fabsim's search, or the mesh's rings,
** tuner.c) and the channel choice per size (NCCL's, tuner.c).
*/

/* hwLat, us: xGMI (RCCL's NVLINK row), PCI, NET x tree, ring x LL, LL128, Simple */
static const double hw_lat[3][2][3] = {
  {{0.9, 0.0, 2.3}, {0.8, 0.0, 2.1}},
  {{2.2, 2.2, 5.7}, {2.2, 2.2, 5.7}},
  {{10.5, 0.0, 25.0}, {9.5, 0.0, 320.0}},
};
/* bwRatio: up to 2 nodes, more x tree, ring x LL, LL128, Simple */
static const double bw_ratio[2][2][3] = {
  {{0.06, 0.00, 0.11}, {0.08, 0.00, 1.00}},
  {{0.06, 0.00, 0.59}, {0.08, 0.00, 1.00}},
};
/* baseLat, us: tree, ring x LL, LL128, Simple */
static const double base_lat[2][3] = {{12.0, 12.0, 17.0}, {12.0, 12.0, 17.0}};
/* treeCorrectionFactor and ringCorrectionFactor x LL, LL128, Simple x log2(bytes / 64), 0 .. 26 */
static const double tree_corr[3][27] = {
  {.1, .1, .1, .1, .1, .1, 1., 1., 1., 1., 1., .6, 1., .9, 1., 1., .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1},
  {0},
  {.1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .7, 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., .8},
};
static const double ring_corr[3][27] = {
  {.1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, 1., .2, 1., .4, .4, .1, .2, .2, .1, .1, .1, .1, .1, .1, .1, .1},
  {0},
  {.1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .8, 1., 1., 1.},
};

enum { HW_XGMI = 0, HW_PCI = 1, HW_NETW = 2 };

double fab_coll__rccl_time(const Topo *t, FabCollOp op, FabCollAlgo a, FabProto p, uint64_t bytes) {
  uint32_t n = t->n, N = MAX(t->islands, 1u);
  int pi = fab_coll__pidx(p), ai = a == FAB_ALGO_TREE ? 0 : 1;
  if (a != FAB_ALGO_RING && a != FAB_ALGO_TREE) return HUGE_VAL;
  if (a == FAB_ALGO_TREE && (op != FAB_COLL_ALLREDUCE || (p == FAB_PROTO_SIMPLE && N == 1))) return HUGE_VAL;
  bool agrs = op == FAB_COLL_ALLGATHER || op == FAB_COLL_REDUCE_SCATTER;
  uint32_t nsteps = op == FAB_COLL_ALLREDUCE ? 2 * (n - 1) : agrs ? n - 1 : n;
  uint32_t ninter = op == FAB_COLL_ALLREDUCE ? (N > 1 ? 2 * N : 0) : agrs ? N - 1 : N;
  double bus = t->ring.nch * (N <= 2 ? t->ring.intra : t->ring.inter) * bw_ratio[N <= 2 ? 0 : 1][ai][pi];
  if (!(bus > 0)) return HUGE_VAL;
  bus *= a == FAB_ALGO_RING ? (double)n / nsteps : 0.5;
  int intra_hw = t->nvl > 0 ? HW_XGMI : HW_PCI, hw = N == 1 ? intra_hw : HW_NETW;
  double lat = base_lat[ai][pi], intra = hw_lat[intra_hw][ai][pi], inter = hw_lat[HW_NETW][ai][pi];
  if (a == FAB_ALGO_RING && (op == FAB_COLL_BROADCAST || op == FAB_COLL_REDUCE)) {
    /* fabsim's rings are not the same channels both ways: the chunk latency per step (the tree's for Simple) */
    lat += nsteps * hw_lat[hw][p == FAB_PROTO_SIMPLE ? 0 : ai][pi];
  } else if (a == FAB_ALGO_RING) {
    /* getNetOverhead: 2 us on AMD x86 hosts, 1 us on others; three times for Simple */
    double over = N > 1 ? (t->cpu == FAB_COLL_CPU_AMD ? 2.0 : 1.0) * (p == FAB_PROTO_SIMPLE ? 3 : 1) : 0;
    uint32_t in = ninter < nsteps ? nsteps - ninter : 0;
    lat += in * MAX(intra, over) + ninter * inter;
  } else {
    lat += 2 * ((double)(n / N - 1) * intra + fab_coll__log2i(N) * inter);
  }
  int ls = fab_coll__log2i(bytes >> 6);
  ls = ls < 0 ? 0 : ls > 26 ? 26 : ls;
  if (a == FAB_ALGO_TREE) bus *= tree_corr[pi][ls];
  else if (N > 1) bus *= ring_corr[pi][ls];
  if (!(bus > 0)) return HUGE_VAL;
  return lat * 1e-6 + (double)bytes / (bus * 1e9);
}

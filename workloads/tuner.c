/*
** The tuner: NCCL's cost model for choosing an algorithm, a protocol and a
** channel count. See collective.h.
**
** It follows NVIDIA/nccl 2.30.7: src/graph/tuning.cc (ncclTopoTuneModel,
** ncclTopoGetAlgoTime: time = latency + bytes / algorithm bandwidth, the
** bandwidth a channel count times a per-channel bandwidth, corrected per
** algorithm and protocol, converted from bus to algorithm bandwidth), the
** per-architecture tables of that file, src/enqueue.cc topoGetAlgoInfo (the
** channel count for the size), and a small version of the topology search
** of src/graph/search.cc that gives the model its inputs (how many channels
** at what bandwidth each). Sizes of the expansion are bounded: more than
** FAB_COLL_MAX_OPS operations are refused (an automatic channel count or
** piece size is first adjusted to fit).
**
** What is not NCCL's: the search is reduced to the fabrics fabsim builds
** (every GPU of a node equal, NVLink through one NVSwitch, NICs spread evenly
** over the GPUs), NCCL's node is an NVLink domain (multi-node NVLink counts
** as one node, as NCCL's MNNVL does), the host CPU is the preset's (or
** cluster.cpu: NCCL's llMaxBws multi-node row, its network post overhead and
** NVLS_TREE's correction depend on it), and plain hosts (no GPU) use the
** Hopper rows and an Intel host. p2p (send-recv, all-to-all) and the
** copy-engine path have no model in NCCL; the ones here are fabsim's.
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
              [ROW_NVLS_TREE] = {0, 0, 25}, [ROW_PAT] = {0, 0, 4.0}, [ROW_COLLNET] = {0, 0, 3.7},
              [ROW_CHAIN] = {0, 0, 2.8}},
  [HW_NET] = {[ROW_TREE] = {5.0, 8.5, 14}, [ROW_RING] = {2.7, 4.0, 14.0}, [ROW_NVLS] = {0, 0, 18},
              [ROW_NVLS_TREE] = {0, 0, 20.9}, [ROW_PAT] = {0, 0, 14}, [ROW_COLLNET] = {0, 0, 31},
              [ROW_CHAIN] = {0, 0, 30}},
};
/* llMaxBws' multi-node rows (N2, N4+): row 0 for Intel (and Arm) hosts, row 1
** for AMD (tuning.cc: AMD or mixed vendors take row 1, whose first column
** is Ampere's single node). */
static const double ll_max_multi[2][2] = {{39.0, 20.4}, {22.5, 19.0}};
/* Trees stray from the model at medium sizes; NCCL corrects their bandwidth
** by size (powers of two from 64 B; tuning.cc treeCorrectionFactor, 24
** entries: the tree reads the first 23, NVLS_TREE all 24). */
const double fab_coll__tree_correction[3][24] = {
  {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
  {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
  {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9},
};
/* NCCL's network post overhead (tuning.cc getNetOverhead): 2 us on AMD x86,
** 1 us on Intel x86 and others. */
static double net_overhead_us(uint32_t cpu) { return cpu == FAB_COLL_CPU_AMD ? 2.0 : 1.0; }

/* The topology search's per-channel speeds, GB/s (src/graph/search.cc). */
static const float speed_intra[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
static const float speed_inter[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                    7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
static const float sm90_intra[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
static const float sm90_inter[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                   15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
static const float sm100_intra[] = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
static const float sm100_inter[] = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                    20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
/* RCCL's (AMD build of search.cc, one array both ways) */
static const float rccl_speeds[] = {48.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0,
                                    6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
#define SPEEDS(a) (a), (uint32_t)(sizeof(a) / sizeof((a)[0]))

/* Per architecture: tuning.cc llMaxBws (one node), perChMaxRingLL128Bws,
** perChMaxTreeLL128Bws, perChMaxTreeBws, perChMaxNVLSTreeBws (1, 2, 3+
** nodes), nvlsEfficiency; src/transport/nvls.cc NVLS_NCHANNELS_SM90 16,
** SM100_NVL 24 (one node), SM100 32 (several); search.cc's speed arrays. */
static const FabNcclArch arches[] = {
  {"ampere", 80, 87.7, 20.0, {20.0, 20.0, 20.0}, {24.0, 23.6, 17.8}, {24.0, 23.6, 17.8}, 0.0, 0, 0,
   SPEEDS(speed_intra), SPEEDS(speed_inter)},
  {"hopper", 90, 141.0, 36.7, {36.7, 36.7, 29.0}, {38.7, 41.4, 36.0}, {0.0, 57.7, 45.5}, 0.85, 16, 16,
   SPEEDS(sm90_intra), SPEEDS(sm90_inter)},
  {"blackwell", 100, 282.0, 40.0, {55.6, 31.67, 20.0}, {70.0, 42.8, 24.0}, {0.0, 96.0, 80.0}, 0.74, 24, 32,
   SPEEDS(sm100_intra), SPEEDS(sm100_inter)},
  /* gfx942 (9.4): RCCL's compCapIndex takes Hopper's rows, which its AMD build does not read (tuner_rccl.c) */
  {"cdna3", 94, 141.0, 36.7, {36.7, 36.7, 29.0}, {38.7, 41.4, 36.0}, {0.0, 0.0, 0.0}, 0.0, 0, 0,
   SPEEDS(rccl_speeds), SPEEDS(rccl_speeds), true},
};

/* What NCCL's kernels cost in the simulation, per architecture (Ampere,
** Hopper, Blackwell; CDNA3 takes Hopper's, an ASSUMPTION: no public per-step
** measurement of RCCL's kernels), in us and GB/s. The tuner never reads these.
**  - launch 6.05 us and Ampere's LL step: fitted to nccl-tests all_reduce_perf
**    at 8 B on one DGX A100, NCCL_ALGO=Ring, 1 channel (NVIDIA/nccl-tests
**    issue #123: 10 us on 2 GPUs, 33.7 us on 8; the maintainer confirms the
**    time is 2(n-1) steps): 1.975 us a step, 6.05 us besides; the step less
**    fabsim's 0.5 us NVLink latency (presets.c) is 1.475 us. These two
**    points calibrate; the other GPU counts of that issue validate.
**  - Hopper's LL step: nccl-tests all_reduce_perf at 8 B on 8 H20 (Hopper,
**    NVLink4, the same NVSwitch as H100; deepseek-ai/DeepEP issue #303):
**    12.49 us = 6.05 + 14 steps of 0.46 us, which the NVLink latency alone
**    covers: 0. Blackwell: no public measurement; Hopper's (ASSUMPTION).
**  - LL128 step: LL's + 3.17 us, fitted to GCP a4-highgpu-8g's ring
**    allreduce at 8 MiB on 8 B200 (LL128, 14 steps of one piece a channel:
**    182.77 GB/s busbw, GKE A4 walkthrough); Azure ND GB200 v6's ring
**    allreduce at 8 MiB on 4 GPUs (6 steps; 253.46 GB/s) validates it and
**    its form: what these two lacked at LL's + 0.5 us (37.3 and 17.8 us)
**    goes as their steps (14 : 6), not as their bytes (14.7 : 12.6 MB).
**    NCCL's own model also prices LL128 above LL (tuning.cc hwLatencies,
**    NVLink ring: 1.9 against 0.6 us a step; base 14 against 6.6). The
**    same increment on every architecture (ASSUMPTION beyond Blackwell:
**    Azure's A100 at 8 MiB comes within 10.2 % with it; no Hopper point).
**  - Simple step: LL's + 1.0 us (ASSUMPTION: Simple waits for a
**    system-wide fence before its flag; no public per-step measurement of a
**    whole step.
**    In-kernel timers agree in size: spcl/atlahs' NPKit traces on GH200,
**    NCCL_ALGO=Ring, goal_gen/ai/nccl_goal_generator/npkit_benchmark_results/
**    clariden/npkit_data_summary_{Simple,LL}.json, put Simple's
**    recvReduceSend 1,300-2,200 cycles above LL's below 4 KiB, 0.7-1.1 us at
**    about 2 GHz, the wait and the fence not counted).
**  - nvls_sync 22.57 us: what an NVLS kernel pays once at its start beyond
**    a ring's launch (the multicast group's synchronisation; its steps are
**    not broken down: ASSUMPTION that it is one cost before the first
**    piece). Fitted to Azure ND H200 v5's NVLS allreduce at 16 KiB
**    (Azure/AI-benchmarking-guide, Azure_Results/ND_H200_v5_results.md:
**    0.93 GB/s busbw, 30.83 us), with nvls_step below; its 64 KiB and 1 MiB
**    points and NVLS-tree on 2 x 8 H20 (nccl#1244) validate. NCCL's own
**    model agrees in size: tuning.cc hwLatencies NVLink NVLS Simple 25 us,
**    the whole NVLS latency (base 0). Blackwell: Hopper's (ASSUMPTION).
**  - nvls_step: an NVLS loop's work per chunk a channel takes (coll_nvls.c:
**    NCCL's scatter and gather warps take a loop's chunks one head at a
**    time, each with its flags and fence; ASSUMPTION: a fixed time a chunk). It takes
**    the place of NCCL's nvlsEfficiency (0.85 Hopper, 0.74 Blackwell), which
**    prices the loops' costs as a bandwidth factor. Hopper 1.035 us: fitted
**    to Azure ND H200 v5's NVLS allreduce at 8 GiB (479.98 GB/s busbw; the
**    same page's 128 MiB, 1 MiB and 64 KiB, nccl-tests#347's H100 8 GiB and
**    nccl#1455's 5-7 GPU NVLS validate). Blackwell 1.45 us: fitted to GCP
**    a4-highgpu-8g's B200 allreduce at 16 GiB (845.44 GB/s, NVLS);
**    CoreWeave's NVL72 8 GiB (72 GPUs) validates.
**  - proxy 2 us: NCCL's own network post overhead, 1 us (tuning.cc
**    getNetOverhead, Intel), once at the sender's proxy and once at the
**    receiver's. flush 1 us on Ampere: ASSUMPTION (one read across PCIe by
**    the NIC); none on Hopper and Blackwell, which NCCL does not flush: its
**    GPUDirect receive buffers get a flush only below compute capability 9.0
**    (src/graph/paths.cc ncclTopoNeedFlush, NCCL_NET_FORCE_FLUSH default 0
**    since 2.19; 2.18 flushed Hopper too); CDNA3 keeps 1 us, as RCCL flushes
**    unless the network plugin manages it (ROCm/rccl src/graph/paths.cc).
**  - nic_post: a network message's start at the NIC beyond the proxy's post,
**    counted in PCIe crossings of the node's pcie.latency (topologies/
**    presets.c, 500 ns: ASSUMPTION): the proxy rings the NIC's doorbell, the
**    NIC reads the work request from host memory (a request and its
**    completion) and sends the read request for the data, whose completion
**    is the data's own PCIe hop: 4 crossings, 2 us on the presets. This is
**    the doorbell path of Kalia, Kaminsky and Andersen, "Design Guidelines
**    for High Performance RDMA Systems" (USENIX ATC 2016): the NIC fetches
**    a work request by DMA unless the CPU writes it into the NIC, which
**    NCCL asks for only for its clear-to-send entries
**    (src/transport/net_ib/p2p.cc, connect.cc: IBV_SEND_INLINE on the CTS
**    FIFO with NCCL_IB_USE_INLINE); its data writes are not inlined. EFA
**    writes the whole 64-byte work request into write-combined device
**    memory (libfabric prov/efa's direct data path: mmio_memcpy_x64 into the
**    send queue's descriptors), so no fetch: 2 crossings under srd.
**    Not fitted: tree/LL at 8 B on 16 x 8 H100 (nccl#1469, 8 messages one
**    after another) and NVLS-tree at 8 B on 2 x 8 H20 (nccl#1244, 2)
**    validate it.
**  - channels: NCCL's per-channel ceilings of tuning.cc, one node:
**    perChMaxTreeBws for Simple, perChMaxRingLL128Bws for LL128; and for
**    LL, a rank's over all its channels, llMaxBws (by architecture on one
**    node, by the node count on several: fab_coll__ll_ceiling).
**  - channel_net: a Simple channel's rate in its pieces across the network,
**    below its ceiling on one node. NCCL launches 4 channels a search
**    channel "to reach peak BW on <8 PPN" on sm90 and later (its comment,
**    src/graph/connect.cc), 2 at 8 GPUs a node: so on DGX H100 two channels
**    carry a NIC's traffic, and measured rings across nodes reach 39-41
**    GB/s a 400G NIC on three clusters (xxrjun/nccl-tests-cluster's ten
**    nodes, nccl#1229's sixteen, GCP's two H200), where the same ten nodes
**    run rings of 1, 2 and 4 GPUs a node (4 channels a NIC) at the NIC's
**    48.7-49.1. Hopper's value, 19.74 GB/s, is fitted to that cluster's
**    ten-node allgather (ASSUMPTION: no public figure gives a channel's rate
**    over the network); Blackwell's channels carry 47 GB/s a NIC in pairs
**    over GCP's same NICs (B200 allgather, 2 nodes), so none is set there,
**    nor on Ampere (200G NICs: 12.5 GB/s a channel) or CDNA3.
**  - copy-engine collectives (ce_coll.cc): each barrier's flag work, 1 us a
**    rank (ASSUMPTION: a stream write and a stream wait; no public figure),
**    and no copy-engine limit below NVLink: cudaMemcpyPeerAsync between two
**    H100s writes at 371-377 GB/s (p2pBandwidthLatencyTest, NVIDIA/nccl
**    issue #1264), NCCL's effective NVLink rate (20.6 x 18 = 370.8) that
**    fabsim's NVLink already runs at. The start is the kernel's `launch`
**    (ASSUMPTION: the same per-collective cost on a back-to-back stream). */
typedef struct Costs {
  double launch, step[3], proxy, flush, ll, ll128, simple, ce_sync, nvls_sync, nvls_step, net;
} Costs;
/* The steps of one architecture from its LL step: LL128's and Simple's
** increments above (the same on every architecture). */
#define STEPS(ll) {(ll), (ll) + 3.17 /* LL128 */, (ll) + 1.0 /* Simple */}
static const Costs costs[] = {
  {6.05, STEPS(1.475), 2.0, 1.0, 87.7, 20.0, 24.0, 1.0, 0.0, 0.0, 0.0}, /* Ampere (no NVLS) */
  {6.05, STEPS(0.0), 2.0, 0.0, 141.0, 36.7, 38.7, 1.0, 22.57, 1.035, 19.74}, /* Hopper (no flush; net: fitted, above) */
  {6.05, STEPS(0.0), 2.0, 0.0, 282.0, 40.0, 70.0, 1.0, 22.57, 1.45, 0.0},     /* Blackwell (no flush) */
  {6.05, STEPS(0.0), 2.0, 1.0, 141.0, 36.7, 38.7, 1.0, 0.0, 0.0, 0.0},        /* CDNA3: Hopper's but RCCL's flush (ASSUMPTION; no NVLS) */
};
#undef STEPS

FabNcclCosts fab_coll_costs_unset(void) {
  return (FabNcclCosts){.launch = FAB_TIME_MAX, .step = {FAB_TIME_MAX, FAB_TIME_MAX, FAB_TIME_MAX},
                        .proxy = FAB_TIME_MAX, .flush = FAB_TIME_MAX, .nic_post = FAB_TIME_MAX,
                        .ce_sync = FAB_TIME_MAX,
                        .plugin_lat = FAB_TIME_MAX, .ofi_protocol = UINT32_MAX, .ofi_tuner = UINT32_MAX,
                        .fence = true, .channel_share = true, .nvls_sync = FAB_TIME_MAX,
                        .nvls_step = FAB_TIME_MAX, .channel_net_bps = UINT64_MAX};
}

const char *const fab_ofi_protocol_names[] = {"sendrecv", "rdma", NULL};
const char *const fab_ofi_tuner_names[] = {"region", "internal", NULL};

#define K(NAME, TYPE, FIELD, ...) FAB_CFG_KEY(NAME, TYPE, FabNcclCosts, FIELD, __VA_ARGS__)
const FabCfgKey fab_nccl_schema[] = {
  K("launch", FAB_CFG_TIME, launch, .min = 0, .max = 1e12),
  K("step_ll", FAB_CFG_TIME, step[0], .min = 0, .max = 1e12),
  K("step_ll128", FAB_CFG_TIME, step[1], .min = 0, .max = 1e12),
  K("step_simple", FAB_CFG_TIME, step[2], .min = 0, .max = 1e12),
  K("proxy", FAB_CFG_TIME, proxy, .min = 0, .max = 1e12),
  K("flush", FAB_CFG_TIME, flush, .min = 0, .max = 1e12),
  K("nic_post", FAB_CFG_TIME, nic_post, .min = 0, .max = 1e12),
  K("ll_bandwidth", FAB_CFG_RATE, channel_bps[0]),
  K("channel_ll128", FAB_CFG_RATE, channel_bps[1]),
  K("channel_simple", FAB_CFG_RATE, channel_bps[2]),
  K("channel_net", FAB_CFG_RATE, channel_net_bps),
  K("ce_sync", FAB_CFG_TIME, ce_sync, .min = 0, .max = 1e12),
  K("ce_bandwidth", FAB_CFG_RATE, ce_bps),
  K("plugin_latency", FAB_CFG_TIME, plugin_lat, .min = 0, .max = 1e12),
  K("ofi_protocol", FAB_CFG_ENUM, ofi_protocol, .choices = fab_ofi_protocol_names),
  K("ofi_tuner", FAB_CFG_ENUM, ofi_tuner, .choices = fab_ofi_tuner_names),
  K("fence", FAB_CFG_BOOL, fence, .def = "true"),
  K("channel_share", FAB_CFG_BOOL, channel_share, .def = "true"),
  K("nvls_sync", FAB_CFG_TIME, nvls_sync, .min = 0, .max = 1e12),
  K("nvls_step", FAB_CFG_TIME, nvls_step, .min = 0, .max = 1e12),
  FAB_CFG_END_ROW,
};
#undef K

void fab_coll_costs_resolve(FabCollEnv *env) {
  const FabNcclArch *a = fab_coll__arch(env->sm);
  const Costs *c = &costs[a - arches];
  FabNcclCosts *k = &env->costs;
  if (k->launch == FAB_TIME_MAX) k->launch = fab_coll__us_ps(c->launch);
  for (int p = 0; p < 3; p++)
    if (k->step[p] == FAB_TIME_MAX) k->step[p] = fab_coll__us_ps(c->step[p]);
  if (k->proxy == FAB_TIME_MAX) k->proxy = fab_coll__us_ps(c->proxy);
  if (k->flush == FAB_TIME_MAX) k->flush = fab_coll__us_ps(c->flush);
  if (k->nic_post == FAB_TIME_MAX) k->nic_post = (env->srd ? 2 : 4) * env->pcie_lat; /* PCIe crossings, above */
  if (k->ce_sync == FAB_TIME_MAX) k->ce_sync = fab_coll__us_ps(c->ce_sync);
  if (k->nvls_sync == FAB_TIME_MAX) k->nvls_sync = fab_coll__us_ps(c->nvls_sync);
  if (k->nvls_step == FAB_TIME_MAX) k->nvls_step = fab_coll__us_ps(c->nvls_step);
  if (k->plugin_lat == FAB_TIME_MAX) k->plugin_lat = fab_coll__us_ps(env->plugin_lat_us);
  else env->plugin_lat_us = (double)k->plugin_lat / 1e6;
  if (k->ofi_protocol == UINT32_MAX) k->ofi_protocol = env->ofi_default;
  env->eager_max = env->srd && k->ofi_protocol == FAB_OFI_RDMA ? FAB_OFI_EAGER_MAX : env->srd ? UINT64_MAX : 0;
  env->simple_only = env->srd && k->ofi_protocol == FAB_OFI_SENDRECV;
  if (k->ofi_tuner == UINT32_MAX) k->ofi_tuner = FAB_OFI_TUNER_REGION;
  env->ofi_regions = env->srd && k->ofi_tuner == FAB_OFI_TUNER_REGION && env->ofi_platform != FAB_OFI_PLATFORM_NONE;
  double def[3] = {0, c->ll128, c->simple}; /* LL's ceiling depends on the node count: fab_coll__ll_ceiling */
  for (int p = 1; p < 3; p++)
    if (!k->channel_bps[p]) k->channel_bps[p] = (uint64_t)llround(def[p] * 8e9);
  if (k->channel_net_bps == UINT64_MAX) /* a GPU's CTA: plain hosts (sm 0) have none */
    k->channel_net_bps = env->sm ? (uint64_t)llround(c->net * 8e9) : 0;
}

const FabNcclArch *fab_coll__arch(uint32_t sm) {
  return sm == 94 ? &arches[3] : sm >= 100 ? &arches[2] : sm >= 90 || sm == 0 ? &arches[1] : &arches[0];
}

/* ------------------------------------------------------------------------ */
/* What the tuner sees of the ranks. */

static uint32_t count_groups(const FabCollSpec *c, uint32_t per, uint32_t *even) {
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

/* The speeds of `a` below or at `max`, from the top: the first index. */
static uint32_t first_speed(const float *sp, uint32_t n, double max) {
  uint32_t i = 0;
  while (i + 1 < n && sp[i] > max + 1e-9) i++;
  return i;
}

/* Channels the search fits at speed s: each NIC and each GPU's PCIe path
** carries whole channels (inter), or the GPU's NVLink does (intra). */
static uint32_t fit(const Topo *t, double s) {
  if (t->islands <= 1) return (uint32_t)MIN(32.0, floor(t->nvl / s + 1e-9));
  double ch = MIN(32.0, t->nics_isl * floor(t->nic / s + 1e-9));
  if (t->pci > 0) ch = MIN(ch, t->ppn * floor(t->pci / s + 1e-9));
  return (uint32_t)ch;
}

/* The ring (and tree) search: the fastest speed whose channels cover the
** total bandwidth, else the best channels x speed down to half the first
** speed; then channels duplicated at half the speed (ncclTopoDupChannels);
** then the speed raised while the channels still fit (pass 2). */
static Graph search_ring(const Topo *t) {
  const FabNcclArch *a = t->arch;
  bool inter = t->islands > 1;
  const float *sp = inter ? a->inter : a->intra;
  uint32_t ns = inter ? a->ninter : a->nintra;
  double path = t->pci > 0 ? MIN(t->pci, t->nic) : t->nic;
  double max = inter ? path : t->nvl, total = inter ? (t->ppn > 1 && t->nvl > 0 ? t->nvl : path) : t->nvl;
  Graph best = {0, 0, 0};
  for (uint32_t i = first_speed(sp, ns, max); i < ns; i++) {
    if (best.nch && sp[i] / best.intra <= .49) break;
    uint32_t ch = fit(t, sp[i]);
    if (ch && ch * sp[i] > best.nch * best.intra) best = (Graph){ch, sp[i], sp[i]};
    if (best.nch && (best.nch == 32 || best.nch * best.intra >= total)) break;
  }
  if (!best.nch) best = (Graph){1, sp[ns - 1], sp[ns - 1]};
  if (best.intra >= 25.0 && !(a->sm > 80 && best.intra < 50.0 && best.nch > 4)) {
    uint32_t d = MIN(2 * best.nch, 32u);
    best.intra = best.inter = best.intra / ((d + best.nch - 1) / best.nch);
    best.nch = d;
  }
  for (uint32_t i = first_speed(sp, ns, best.intra); i > 0 && sp[i - 1] <= max && fit(t, sp[i - 1]) >= best.nch; i--)
    best.intra = best.inter = sp[i - 1];
  return best;
}

/* The NVLS search: one head per GPU of the domain (up to 32; several nodes:
** the GPUs with a NIC); every GPU reserves the speed toward each head and
** the head twice, so (heads + 1) x speed fits the GPU's NVLink; across
** nodes the search starts no faster than a GPU's path to its NIC
** (search.cc: speeds above system->maxBw are skipped) and its second pass
** raises only the network side, up to twice the NVLink side. */
static Graph search_nvls(const Topo *t) {
  const FabNcclArch *a = t->arch;
  bool inter = t->islands > 1;
  const float *sp = inter ? a->inter : a->intra;
  uint32_t ns = inter ? a->ninter : a->nintra;
  uint32_t heads = MIN(32u, inter ? MIN(t->ppn, MAX(t->nics_isl, 1u)) : t->ppn);
  double cap = inter ? (t->pci > 0 ? MIN(t->pci, t->nic) : t->nic) : sp[0];
  uint32_t i = 0;
  while (i + 1 < ns && ((heads + 1) * sp[i] > t->nvl || sp[i] > cap)) i++;
  Graph g = {heads, sp[i], sp[i]};
  for (uint32_t k = i; k > 0 && sp[k - 1] <= cap && sp[k - 1] <= 2 * g.intra; k--) g.inter = sp[k - 1];
  if (inter) g.inter = MIN(g.inter, cap);
  return g;
}

void fab_coll__topo_make(Topo *t, const FabCollEnv *env, const FabCollSpec *c) {
  memset(t, 0, sizeof *t);
  t->n = c->nranks;
  t->arch = fab_coll__arch(env->sm);
  t->cpu = env->cpu;
  t->plugin_lat = env->plugin_lat_us;
  t->net = (double)env->net_bps / 8;
  t->nvl = (double)env->nvl_bps / 8 / 1e9;
  t->nic = (double)(env->nic_bps ? env->nic_bps : env->net_bps) / 8 / 1e9;
  /* NCCL rates PCIe at 3/4 of its signalling rate (src/graph/topo.cc: Gen5 x16 48 GB/s, Gen4 24) */
  t->pci = round((double)env->pcie_bps / 8 / 1e6 * (130.0 / 128.0) * 0.75) / 1e3;
  if (!c->nranks || !c->ranks) return;
  t->nodes = count_groups(c, env->gpus_per_node, &t->per_node);
  if (env->nvl_domain) {
    t->domains = count_groups(c, env->nvl_domain, &t->per_domain);
    t->islands = t->domains;
  } else {
    t->islands = t->n;
  }
  t->ppn = MAX(1u, t->n / MAX(t->islands, 1u));
  /* the NICs one island's ranks can use: their own (a GPU's share, at least one) */
  uint32_t g = MAX(env->gpus_per_node, 1u), nics = MAX(env->nics_per_node, 1u);
  t->nics_isl = nics >= g ? t->ppn * (nics / g) : MAX(1u, t->ppn * nics / g);
  t->ring = search_ring(t);
  if (env->nvl_mesh && t->islands == 1 && t->per_domain >= 2 && t->per_domain <= FAB_MESH_RING_MAX) {
    /* a mesh node: RCCL takes its rings from a fixed model, not the search (rome_models.cc rome_model_79, the
    ** 8-GPU MI300X: 28 rings, its 7 link-disjoint orders and their reverses, twice; speed totalBw / rings) */
    const uint8_t *r;
    uint32_t nr = MIN(4 * fab_coll_mesh_rings(t->per_domain, &r), 32u);
    t->ring = (Graph){nr, t->nvl / nr, t->nvl / nr};
  }
  t->nvls = env->nvls && env->nvl_domain && t->per_domain >= 2 ? search_nvls(t) : (Graph){0, 0, 0};
  /* the channels launched: twice the search's (connect.cc ncclTopoPostset),
  ** twice again for fast inter-node rings of sm90+ under 16 (<8 PPN; NCCL's, not RCCL's) */
  t->nch = MIN(2 * t->ring.nch, 64u);
  if (t->arch->sm >= 90 && !t->arch->rccl && t->islands > 1 && t->ring.intra > 45.0 && t->nch < 16)
    t->nch = MIN(2 * t->nch, 64u);
  t->nvls_ch = t->islands > 1 ? t->arch->nvls_ch_n : t->arch->nvls_ch1;
  if (t->arch->sm >= 100 && t->islands > 1) { /* nvls.cc ncclNvlsTuneSm100MultiNode, by the NIC's bandwidth */
    double nic = t->pci > 0 ? MIN(t->pci, t->nic) : t->nic;
    if (t->islands == 2 && nic >= 48.0) t->nvls_ch = 32;
    else if (nic >= 96.0) t->nvls_ch = t->ppn <= 8 ? 24 : 32;
    else if (nic >= 48.0) t->nvls_ch = 24;
  }
}

/* NCCL's channel choice for algorithm a, protocol p, `bytes`
** (topoGetAlgoInfo): the launched channels (NVLS: its CTAs), fewer while
** the data would leave a channel's threads idle (while bytes < nc x threads
** x threshold, nc--; thresholds 64 B a thread Simple, 8 LL (x n for the
** ring) and LL128, 512 CollNet Chain; 512 threads, 640 for LL128 and the
** chain, 256 for Simple rings of at most 12 GB/s in all). NVLS across
** nodes: min(NVLS CTAs, channels). */
uint32_t fab_coll__auto_channels(const Topo *t, FabCollAlgo a, FabProto p, uint64_t bytes) {
  if (a == FAB_ALGO_NVLS && t->domains > 1) return MAX(MIN(t->nvls_ch, t->nch), 1u); /* NVLS across nodes */
  if (a == FAB_ALGO_NVLS || a == FAB_ALGO_NVLS_TREE) return MAX(t->nvls_ch, 1u);
  if (a == FAB_ALGO_COLLNET_DIRECT) return MAX(t->per_node, 1u); /* fabsim's Direct: a channel per head */
  uint32_t C = MAX(t->nch, 1u);
  uint64_t nt = p == FAB_PROTO_LL128 || a == FAB_ALGO_COLLNET_CHAIN ? 640 /* NCCL_MAX_NTHREADS for chain */
                : a == FAB_ALGO_RING && p == FAB_PROTO_SIMPLE && t->ring.intra * t->ring.nch <= 12.0
                  ? 256 /* tuning.cc ncclTopoTuneModel: rings no faster than PCI_BW (12 GB/s) */
                  : 512;
  uint64_t thr = a == FAB_ALGO_COLLNET_CHAIN ? 512 /* threadThresholds, tuning.cc */
                 : p == FAB_PROTO_SIMPLE ? 64 : p == FAB_PROTO_LL && a == FAB_ALGO_RING ? 8ull * MAX(t->n, 1) : 8;
  while (C > 1 && bytes < (uint64_t)C * nt * thr) C--;
  return C;
}

/* NCCL's p2p step across nodes: NCCL_P2P_NET_CHUNKSIZE 128 KiB, twice on
** Arm hosts of sm100 (src/init.cc: Grace Blackwell's 4 GPUs a host). */
static uint64_t p2p_net_step(const Topo *t) {
  return t->cpu == FAB_COLL_CPU_ARM && t->arch->sm >= 100 ? 262144 : 131072;
}

/* NCCL's p2p channels (src/graph/paths.cc ncclTopoComputeP2pChannels,
** ncclTopoGetNchannels; src/init.cc computeBuffSizes). The p2p channels:
** the launched channels (or the user's), rounded up to a power of two. Per
** peer: over NVLink 2 x the path's NVLink links (its bandwidth over one
** link's, topo.h SM80/SM90/SM100_NVLINK_BW 20, 20.6, 40.1 GB/s), over PCIe
** 2, over the network the GPU's NICs or their bandwidth / 14 GB/s (each
** NIC at the lower of its rate and PCIe's, counted until they reach PCIe's)
** (NCCL_P2P_PER_CHANNEL_NET_BW), whichever is more; the fewest over the
** peers, rounded up to a power of two; across domains halved while it
** times the groups of 8 peers exceeds the p2p channels. The step
** (p2pChunkSize): 128 KiB across domains (256 KiB on Arm hosts of sm100),
** 512 KiB in one NVLink domain, 128 KiB over PCIe. */
void fab_coll__p2p_setup(Ex *x, const Topo *t, uint32_t user) {
  uint32_t P = 1, want = MIN(MAX(user ? user : t->nch, 1u), 64u);
  while (P < want) P <<= 1;
  x->channels = P;
  bool multi = t->islands > 1, rccl = t->arch->rccl;
  uint32_t k = 64, nets = MAX(1u, t->nics_isl / t->ppn);
  if (t->ppn > 1 && t->nvl > 0 && x->env->nvl_mesh) {
    k = 4; /* RCCL: 4 p2p channels per xGMI link to the peer on gfx94 (src/graph/paths.cc ncclTopoGetNchannels) */
  } else if (t->ppn > 1 && t->nvl > 0) {
    double link = t->arch->sm >= 100 ? 40.1 : t->arch->sm >= 90 ? 20.6 : 20.0;
    k = MIN(k, 2 * MAX(1u, (uint32_t)floor(t->nvl / link + 1e-9)));
  } else if (t->ppn > 1) {
    k = MIN(k, 2u);
  }
  if (multi && rccl) { /* RCCL: 2 per NIC, halved while 4 x the p2p channels cannot hold them, at least its NICs */
    uint32_t kn = 2;
    while (kn > 1 && (uint64_t)kn * t->n > 4ull * P) kn /= 2;
    k = MIN(k, MAX(nets, kn));
  } else if (multi) { /* getLocalNetCountByBw (src/graph/topo.cc): the GPU's NICs at the GPU-to-NIC path's rate,
                       ** the lower of NIC and PCIe, counted until they reach the GPU's PCIe rate */
    double path = t->pci > 0 ? MIN(t->pci, t->nic) : t->nic;
    uint32_t cnt = t->pci > 0 ? MIN(nets, MAX(1u, (uint32_t)ceil(t->pci / path - 1e-9))) : nets;
    k = MIN(k, MAX(cnt, (uint32_t)fab_coll__ceil_div((uint64_t)(cnt * path + 1e-9), 14))); /* (int)netBw */
  }
  uint32_t K = 1;
  while (K < k) K <<= 1;
  if (rccl && !multi) K *= 2; /* RCCL doubles it on one gfx94 node */
  if (multi && !rccl)
    while (K > 1 && (uint64_t)K * fab_coll__ceil_div(t->n, 8) > P) K /= 2;
  x->p2p_peer = MIN(K, P);
  x->p2p_multi = multi;
  x->p2p_net = multi || t->ppn < 2;
  x->p2p_fit = multi && !rccl;
  x->p2p_step = multi ? p2p_net_step(t) : t->nvl > 0 ? 524288 : 131072;
  x->p2p_ll_bps = x->c->protocol == FAB_PROTO_AUTO ? 2 * fab_coll__ll_ceiling(x->env, t) : 0;
}

/* A ring channel's ceiling over NVLink (wire bits/s): its share of the
** bandwidth NCCL's search gives the rings. The search sets nChannels rings
** at a speed each (search.cc; across nodes the network side's), so that
** together they fill the GPU's NVLink or its NIC, NCCL's model prices a ring
** at nChannels x that speed (tuning.cc), and the launched channels (twice
** the rings or more, connect.cc) divide it. A channel's CTA copies at about
** that share: no channel runs faster while another waits on its flags, so
** the per-step costs of each channel add to its time rather than hide in
** the gaps of the others (README, Known misses). For the ring's pieces over
** NVLink of a ring inside one NVLink domain: across the network a channel's
** CTA copies into the proxy's buffer in its own GPU's memory, and the NIC's
** rate holds it; and a ring across domains has the network path's speed
** from the search, not a division of NVLink (capping its NVLink hops at it
** would make them the NIC's bottleneck twin). Not for RCCL's mesh rings,
** which come from a fixed model without a searched speed. 0: none. */
uint64_t fab_coll__channel_share(const FabCollEnv *env, const Topo *t) {
  if (!env->costs.channel_share || env->nvl_mesh || t->islands > 1 || !t->nch || !t->ring.nch) return 0;
  return (uint64_t)llround(t->ring.intra * t->ring.nch / t->nch * 8e9);
}

/* NCCL's pipelining unit for algorithm a, protocol p (collective.c's top): the
** piece, and for rings the pieces per step and the pieces a connection holds
** (NCCL_STEPS = 8 slots of a step each; a Simple ring slice takes 2). */
uint64_t fab_coll__default_chunk(Ex *x, const Topo *t) {
  FabCollOp op = x->c->op;
  bool ring_simple = x->algo == FAB_ALGO_RING && x->proto == FAB_PROTO_SIMPLE &&
                     (op == FAB_COLL_ALLREDUCE || op == FAB_COLL_ALLGATHER || op == FAB_COLL_REDUCE_SCATTER);
  if (x->algo == FAB_ALGO_HIERARCHICAL && x->proto == FAB_PROTO_SIMPLE) ring_simple = true;
  x->spc = ring_simple ? 2 : 1;
  x->tree_n = MAX(t->ring.nch, 1u);
  x->window = ring_simple ? 4 : 8;
  if (x->proto == FAB_PROTO_LL) return FAB_COLL_LL_CHUNK;
  if (x->proto == FAB_PROTO_LL128 && x->algo == FAB_ALGO_TREE) {
    /* NCCL halves an LL128 tree's chunk (a step's 614400 bytes of lines,
    ** 576000 of data) while a channel holds few pieces per tree step
    ** (enqueue.cc calcCollChunking: nstepsLL128 = 1 + log2 nNodes + 0.1 ppn;
    ** while nBytes / (nChannels x chunk) < nsteps x 64 / ppn, while above
    ** 128 KiB; < nsteps x 16 / ppn, while above 32 KiB; all in data bytes),
    ** then aligns it down to LL128's grain, 1920 bytes (device.h
    ** ncclProtoGrainSize): 576000, 288000, 144000, 71040, 34560, 17280 */
    uint64_t ch = 576000, per = x->c->bytes / MAX(x->channels, 1u);
    uint32_t N = MAX(t->nodes, 1u);
    double ppn = (double)t->n / N, nsteps = 1 + MAX(fab_coll__log2i(N), 0) + 0.1 * ppn;
    while ((double)(per / ch) < nsteps * 64 / ppn && ch > 131072) ch /= 2;
    while ((double)(per / ch) < nsteps * 16 / ppn && ch > 32768) ch /= 2;
    return ch / 1920 * 1920;
  }
  if (x->proto == FAB_PROTO_LL128) return 576000;
  switch (x->algo) {
  case FAB_ALGO_RING:
    if (op == FAB_COLL_SEND_RECV) break;
    return ring_simple ? 1048576 : 524288; /* a 2 MiB chunk in two slices; chains: one 512 KiB step */
  case FAB_ALGO_HIERARCHICAL:
    return 1048576;
  case FAB_ALGO_TREE:
    return 524288; /* one step; NCCL 2.20 and later no longer halve it */
  case FAB_ALGO_NVLS_TREE: {
    /* NCCL_NVLS_CHUNKSIZE 128 KiB, NCCL_NVLSTREE_MAX_CHUNKSIZE 64 KiB from 4
    ** nodes; smaller while the data would not fill the heads and channels
    ** (enqueue.cc: < 4 x ops x chunk: 64 KiB; < ops x chunk: 32 KiB) */
    uint64_t ch = t->islands >= 4 ? 65536 : 131072, ops = (uint64_t)MAX(x->channels, 1u) * MAX(t->per_domain, 1u);
    if (x->c->bytes < 4 * ops * ch) ch = MIN(ch, 65536);
    if (x->c->bytes < ops * ch) ch = 32768;
    return ch;
  }
  case FAB_ALGO_NVLS: {
    /* NCCL_NVLS_CHUNKSIZE 128 KiB (across nodes, SHARP between them, 32 KiB when NVLS's allreduce bandwidth
    ** is under 150 GB/s); then 64 KiB while the data is under 64 x concurrent ops (channels x heads, a head
    ** each rank of a node) x chunk, 32 KiB under 8 x, 16 KiB under 2 x (enqueue.cc calcCollChunking) */
    uint64_t ch = t->domains > 1 && fab_coll__nvls_ar_bw(t) < 150 ? 32768 : 131072, B = x->c->bytes;
    uint64_t ops = (uint64_t)MAX(x->channels, 1u) * MAX(t->domains > 1 ? t->per_node : t->per_domain, 1u);
    if (B < 64 * ops * ch && ch > 65536) ch = 65536;
    if (B < 8 * ops * ch && ch > 32768) ch = 32768;
    if (B < 2 * ops * ch && ch > 16384) ch = 16384;
    return ch;
  }
  case FAB_ALGO_COLLNET_CHAIN: {
    /* NCCL's CollNet Chain (enqueue.cc): min(256 KiB, a Simple step); halved while a channel holds fewer than
    ** 64 x depth (the chain's ranks a node) of them, down to 128 KiB; fewer than 8 x depth, down to 64 KiB;
    ** fewer than depth, down to 32 KiB */
    uint64_t ch = 262144, per = x->c->bytes / MAX(x->channels, 1u), depth = MAX(t->per_node, 1u);
    while (per / ch < depth * 64 && ch > 131072) ch /= 2;
    while (per / ch < depth * 8 && ch > 65536) ch /= 2;
    while (per / ch < depth && ch > 32768) ch /= 2;
    return ch;
  }
  case FAB_ALGO_COLLNET_DIRECT: {
    /* NCCL's CollNet Direct (enqueue.cc): a Simple step of 512 KiB per head, halved while a head holds fewer
    ** than 64 of them (down to 128 KiB), then fewer than 8 (down to 32 KiB) */
    uint64_t ch = 524288, heads = MAX(t->n / MAX(t->nodes, 1u), 1u);
    while (x->c->bytes / (heads * ch) < 64 && ch > 131072) ch /= 2;
    while (x->c->bytes / (heads * ch) < 8 && ch > 32768) ch /= 2;
    return ch;
  }
  case FAB_ALGO_CE: /* one copy per peer, whole */
    return MAX(fab_coll__ceil_div(x->c->bytes, x->n), 1);
  default:
    break;
  }
  if (x->algo == FAB_ALGO_PAT) return 524288;
  /* p2p: NCCL's p2pChunkSize (p2p_setup: 512 KiB in one NVLink domain,
  ** 128 KiB over PCIe); across domains the network's step, which a network
  ** connection quarters below one step of its op and halves below 8
  ** (enqueue.cc): each op by its own size (coll_p2p.c op_chunk), here the
  ** average op's, which the reports give */
  if (t->domains == 1) return x->p2p_step ? x->p2p_step : 524288;
  uint64_t per = op == FAB_COLL_SEND_RECV ? x->c->bytes : x->c->bytes / MAX(t->n, 1u), step = p2p_net_step(t);
  x->p2p_def = per < step ? step / 4 : per < 8 * step ? step / 2 : step;
  return x->p2p_def;
}

/* ------------------------------------------------------------------------ */
/* The model. */

typedef struct LatBw {
  double lat;   /* us */
  double bw;    /* algorithm bandwidth, GB/s (bus bandwidth for non-ring AG/RS, as NCCL leaves it) */
} LatBw;

static int nidx(uint32_t nodes) { return nodes <= 1 ? 0 : nodes == 2 ? 1 : 2; }

static double ll_max(const Topo *t) {
  uint32_t N = MAX(t->islands, 1u);
  return N == 1 ? t->arch->ll_max_1node : ll_max_multi[t->cpu == FAB_COLL_CPU_AMD][N == 2 ? 0 : 1];
}

uint64_t fab_coll__ll_ceiling(const FabCollEnv *env, const Topo *t) {
  return env->costs.channel_bps[0] ? env->costs.channel_bps[0] : (uint64_t)llround(ll_max(t) * 8e9);
}

static double seconds(LatBw m, uint64_t bytes) {
  if (!(m.bw > 0)) return HUGE_VAL;
  return m.lat * 1e-6 + (double)bytes / (m.bw * 1e9);
}

/* NCCL's bus bandwidth of algorithm a (ring, tree, NVLS, NVLS tree, PAT)
** with protocol p; 0 when NCCL has none. */
static double bus_bw(const Topo *t, FabCollOp op, FabCollAlgo a, FabProto p) {
  const FabNcclArch *ar = t->arch;
  uint32_t N = MAX(t->islands, 1u);
  int ni = nidx(N);
  bool ar_op = op == FAB_COLL_ALLREDUCE;
  double llmax = ll_max(t);
  if (a == FAB_ALGO_NVLS || a == FAB_ALGO_NVLS_TREE) {
    const Graph *g = &t->nvls;
    if (g->nch < 2) return 0;
    double intra = g->intra * ar->nvls_eff * (g->nch - 1) / g->nch;
    intra *= ar_op ? 2.0 : (t->ppn - 1.0) / t->ppn;
    double inter = g->inter * (N <= 2 && a == FAB_ALGO_NVLS_TREE ? 2 : 1);
    double bw = MIN(intra, inter);
    if (a == FAB_ALGO_NVLS_TREE) bw = MIN(bw, ar->nvls_tree[ni]);
    return g->nch * bw;
  }
  const Graph *g = &t->ring;
  double bus = g->nch * (N <= 2 ? g->intra : g->inter);
  if (a == FAB_ALGO_RING && p == FAB_PROTO_LL) bus = MIN(llmax, bus * .5);
  if (a == FAB_ALGO_RING && p == FAB_PROTO_LL128) bus = MIN(bus * 0.92, g->nch * ar->ring_ll128);
  if (a == FAB_ALGO_TREE && ar_op) bus = MIN(bus * .92, g->nch * ar->tree[ni]);
  if (a == FAB_ALGO_TREE && p == FAB_PROTO_LL) bus = MIN(bus / 3.8, llmax);
  if (a == FAB_ALGO_TREE && p == FAB_PROTO_LL128) bus = MIN(bus * (N == 1 ? 7.0 / 9 : 120.0 / 128), g->nch * ar->tree_ll128[ni]);
  /* NCCL 2.26 on: x .85 for a tree graph of pattern TREE, which the search takes at one GPU a node (search.cc
  ** ncclTopoCompute; tuning.cc comm->maxTreePattern); RCCL 2.22 has no such factor */
  if (a == FAB_ALGO_TREE && t->per_node == 1 && !ar->rccl) bus *= .85;
  if (a == FAB_ALGO_PAT) bus *= .75;
  return bus;
}

double fab_coll__nvls_ar_bw(const Topo *t) {
  return t->n > 1 ? bus_bw(t, FAB_COLL_ALLREDUCE, FAB_ALGO_NVLS, FAB_PROTO_SIMPLE) * t->n / (2.0 * (t->n - 1)) : 0;
}

/* NCCL's latency of algorithm a, protocol p (us). */
static double latency(const Topo *t, FabCollOp op, FabCollAlgo a, FabProto p) {
  int pi = fab_coll__pidx(p);
  uint32_t n = t->n, N = MAX(t->islands, 1u);
  int row = a == FAB_ALGO_RING ? ROW_RING : a == FAB_ALGO_TREE ? ROW_TREE : a == FAB_ALGO_NVLS ? ROW_NVLS
            : a == FAB_ALGO_NVLS_TREE ? ROW_NVLS_TREE : ROW_PAT;
  double intra = fab_coll__hw_lat[HW_NVL][row][pi];
  double inter = fab_coll__hw_lat[HW_NET][t->ppn == 1 ? ROW_TREE : row][pi];
  /* the plugin's latency on each step across nodes, again for Simple's flush (NCCL src/graph/tuning.cc:
  ** interLat += graphs[a]->latencyInter, twice under NCCL_PROTO_SIMPLE; NCCL 2.18 on) */
  inter += t->plugin_lat * (p == FAB_PROTO_SIMPLE ? 2 : 1);
  double hw = fab_coll__hw_lat[N == 1 ? HW_NVL : HW_NET][row][pi];
  uint32_t nsteps = op == FAB_COLL_ALLREDUCE ? 2 * (n - 1) : op == FAB_COLL_ALLGATHER || op == FAB_COLL_REDUCE_SCATTER
                    ? n - 1 : n;
  double lat = fab_coll__base_lat[row][pi];
  switch (a) {
  case FAB_ALGO_RING:
    if (op == FAB_COLL_BROADCAST || op == FAB_COLL_REDUCE) {
      /* fabsim's rings are not the same channels both ways: NCCL's chunk latency per step */
      return lat + nsteps * (p == FAB_PROTO_SIMPLE ? fab_coll__hw_lat[N == 1 ? HW_NVL : HW_NET][ROW_TREE][pi] : hw);
    } else {
      double over = N > 1 ? net_overhead_us(t->cpu) * (p == FAB_PROTO_SIMPLE ? 3 : 1) : 0;
      uint32_t ninter = N == 1 ? 0 : op == FAB_COLL_ALLREDUCE ? 2 * (N - 1) : N - 1;
      return lat + (nsteps - ninter) * MAX(intra, over) + ninter * inter;
    }
  case FAB_ALGO_TREE:
    return lat + 2 * ((double)(n / N - 1) * intra + fab_coll__log2i(N) * inter);
  case FAB_ALGO_NVLS:
    return intra + (N > 1 ? inter : 0);
  case FAB_ALGO_NVLS_TREE:
    return lat + intra + 2 * fab_coll__log2i(N) * inter;
  case FAB_ALGO_PAT:
    return lat + fab_coll__log2i(N) * (inter / 3.5) + n * 2.8;
  default:
    return HUGE_VAL;
  }
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
  double net = t->net * eff, nvl = (t->nvl > 0 ? t->nvl * 1e9 : t->net) * eff;
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

/* NCCL's localRanks: the ranks of a node, which is an NVLink domain under
** MNNVL (init.cc); 0 when nodes differ. */
static uint32_t local_ranks(const Topo *t) { return t->domains ? t->per_domain : t->per_node; }

/* Whether NCCL offers algorithm a for op here. */
static bool offered(const FabCollEnv *env, const Topo *t, FabCollOp op, FabCollAlgo a) {
  bool ar = op == FAB_COLL_ALLREDUCE, agrs = op == FAB_COLL_ALLGATHER || op == FAB_COLL_REDUCE_SCATTER;
  if (t->arch->rccl && a != FAB_ALGO_RING && a != FAB_ALGO_TREE && a != FAB_ALGO_PAIRWISE &&
      a != FAB_ALGO_HIERARCHICAL)
    return false; /* RCCL: no NVLS, no copy-engine collectives; PAT and CollNet are not weighed here */
  switch (a) {
  case FAB_ALGO_RING: return op != FAB_COLL_ALL_TO_ALL;
  case FAB_ALGO_TREE: return ar;
  case FAB_ALGO_NVLS: /* one NVLink domain; across nodes only with in-network reduction (SHARP: NCCL
                     ** enables NVLS on more than one node only with CollNet, tuning.cc) */
    return (ar || agrs) && t->nvls.nch >= 2 &&
           (t->domains == 1 || (ar && env->collnet && t->per_node > 1 && t->domains == t->nodes));
  case FAB_ALGO_NVLS_TREE: return ar && t->nvls.nch >= 2 && t->domains > 1 && t->per_domain >= 2;
  case FAB_ALGO_PAT: return agrs;
  case FAB_ALGO_PAIRWISE: return op == FAB_COLL_ALL_TO_ALL;
  case FAB_ALGO_HIERARCHICAL: return (ar || agrs) && t->per_node;
  case FAB_ALGO_COLLNET: /* the choice among the three below */
    return offered(env, t, op, FAB_ALGO_COLLNET_DIRECT) || offered(env, t, op, FAB_ALGO_COLLNET_CHAIN) ||
           (t->domains > 1 && offered(env, t, op, FAB_ALGO_NVLS));
  case FAB_ALGO_COLLNET_DIRECT: /* NCCL: on NVSwitch systems only, at most NCCL_MAX_DIRECT_ARITY + 1 = 8 ranks a
                                ** node (tuning.cc, connect.cc), a node being an NVLink domain (MNNVL) */
    return ar && env->collnet && t->nodes >= 2 && t->per_node && local_ranks(t) <= 8 && t->nvl > 0;
  case FAB_ALGO_COLLNET_CHAIN: /* NCCL 2.30: nor Chain past 8 local ranks (enqueue.cc topoGetAlgoInfo) */
    return ar && env->collnet && t->nodes >= 2 && t->per_node && local_ranks(t) <= 8;
  case FAB_ALGO_CE: /* ncclCeAvailable: allgather, all-to-all; every rank reachable over NVLink */
    return (op == FAB_COLL_ALLGATHER || op == FAB_COLL_ALL_TO_ALL) && t->domains == 1 && t->nvl > 0;
  default: return false;
  }
}

/* The model's time (s) of `op` with algorithm a, protocol p, C channels;
** HUGE_VAL when a cannot run it here. */
static double model(const FabCollEnv *env, const Topo *t, FabCollOp op, FabCollAlgo a, FabProto p, uint32_t C,
                    uint64_t bytes) {
  uint32_t n = t->n, N = MAX(t->islands, 1u);
  if (n < 2) return 0;
  if (!fab_coll__proto_ok(a, p) || !offered(env, t, op, a)) return HUGE_VAL;
  bool agrs = op == FAB_COLL_ALLGATHER || op == FAB_COLL_REDUCE_SCATTER;
  uint32_t nsteps = op == FAB_COLL_ALLREDUCE ? 2 * (n - 1) : agrs ? n - 1 : n;
  switch (a) {
  case FAB_ALGO_PAIRWISE:
    return p2p_model(t, op, p, bytes);
  case FAB_ALGO_RING:
    if (op == FAB_COLL_SEND_RECV) return p2p_model(t, op, p, bytes);
    /* fall through */
  case FAB_ALGO_TREE:
  case FAB_ALGO_NVLS:
  case FAB_ALGO_NVLS_TREE:
  case FAB_ALGO_PAT: {
    if (t->arch->rccl) return fab_coll__rccl_time(t, op, a, p, bytes);
    LatBw m = {latency(t, op, a, p), bus_bw(t, op, a, p)};
    if (!(a != FAB_ALGO_RING && agrs))
      m.bw *= a == FAB_ALGO_RING || a == FAB_ALGO_NVLS || a == FAB_ALGO_NVLS_TREE ? (double)n / nsteps : .5;
    int ls = fab_coll__log2i(bytes >> 6);
    int pi = fab_coll__pidx(p);
    /* ncclTopoGetAlgoTime: the tree below 2^23 x 64 B, NVLS_TREE on sm100 (x86) below 2^24 x 64 B */
    if (op == FAB_COLL_ALLREDUCE && ls >= 0 &&
        ((a == FAB_ALGO_TREE && ls < 23) ||
         (a == FAB_ALGO_NVLS_TREE && t->arch->sm >= 100 && t->cpu != FAB_COLL_CPU_ARM && ls < 24)))
      m.bw *= fab_coll__tree_correction[pi][ls];
    if (a == FAB_ALGO_RING && p == FAB_PROTO_SIMPLE && N > 1 && op == FAB_COLL_ALLREDUCE &&
        bytes / ((uint64_t)MAX(t->nch, 1u) * n) >= 64)
      m.lat *= t->arch->sm < 80 ? 1.9 : 1.4; /* the ring's "plateau" */
    (void)C;
    return seconds(m, bytes);
  }
  case FAB_ALGO_HIERARCHICAL: { /* not NCCL's: three rings one after the other */
    uint32_t L = t->per_node;
    Topo in = *t, across = *t;
    in.n = L, in.islands = env->nvl_domain && env->nvl_domain >= env->gpus_per_node ? 1 : L, in.ppn = L;
    across.n = t->nodes, across.islands = t->nodes, across.ppn = 1;
    double tt = 0;
    if (L > 1 && op != FAB_COLL_ALLGATHER) tt += model(env, &in, FAB_COLL_REDUCE_SCATTER, FAB_ALGO_RING, p, C, bytes);
    if (t->nodes > 1) tt += model(env, &across, op, FAB_ALGO_RING, p, C, bytes / L);
    if (L > 1 && op != FAB_COLL_REDUCE_SCATTER) tt += model(env, &in, FAB_COLL_ALLGATHER, FAB_ALGO_RING, p, C, bytes);
    return tt;
  }
  case FAB_ALGO_CE: /* NCCL has no model: it takes the copy engines whenever the CTA policy asks. fabsim's:
                     ** each rank writes (n-1)/n of the data over its NVLink */
    return (double)bytes * (n - 1) / n / (t->nvl * 1e9);
  case FAB_ALGO_COLLNET_DIRECT:
  case FAB_ALGO_COLLNET_CHAIN: {
    /* NCCL 2.30's tuning.cc, Simple only, bandwidth from the graph's intra-node figure whatever the node count
    ** (its collnet graphs: fabsim's ring search stands for them), algorithm bandwidth half the bus's. Direct:
    ** heads (one a NIC) x bwIntra, divided by the GPU-to-NIC factor ppn / heads less half its excess, x 0.85
    ** on sm90 and later; latency 2 (min(1, ppn - 1) intraLat + (ppn - 1) 0.4 us) + interLat. Chain: channels
    ** x bwIntra; latency 2 (ppn - 1) intraLat + interLat. interLat is the network row (the tree's at one rank
    ** a node) with the plugin's latency twice (Simple's flush). */
    double ppn = (double)n / MAX(t->nodes, 1u), pl = 2 * t->plugin_lat;
    int ci = fab_coll__pidx(FAB_PROTO_SIMPLE), row = a == FAB_ALGO_COLLNET_DIRECT ? ROW_COLLNET : ROW_CHAIN;
    double inter = fab_coll__hw_lat[HW_NET][ppn == 1 ? ROW_TREE : row][ci] + pl;
    double intra = fab_coll__hw_lat[HW_NVL][row][ci];
    LatBw m;
    if (a == FAB_ALGO_COLLNET_DIRECT) {
      double heads = MAX(MIN(ppn, (double)MAX(t->nics_isl, 1u)), 1.0), factor = ppn / heads;
      factor -= (factor - 1) / 2;
      m.bw = heads * t->ring.intra / factor * (t->arch->sm >= 90 ? 0.85 : 1) * 0.5;
      m.lat = 2 * ((ppn > 1 ? 1 : 0) * intra + (ppn - 1) * 0.4) + inter;
    } else {
      m.bw = MAX(t->ring.nch, 1u) * t->ring.intra * 0.5;
      m.lat = 2 * (ppn - 1) * intra + inter;
    }
    return seconds(m, bytes);
  }
  default:
    return HUGE_VAL;
  }
}

/* The algorithms the tuner weighs for `op`, in preference order for ties. */
static uint32_t candidates(FabCollOp op, FabCollAlgo *out) {
  switch (op) {
  case FAB_COLL_ALLREDUCE:
    out[0] = FAB_ALGO_NVLS, out[1] = FAB_ALGO_NVLS_TREE, out[2] = FAB_ALGO_RING, out[3] = FAB_ALGO_TREE;
    out[4] = FAB_ALGO_COLLNET_DIRECT, out[5] = FAB_ALGO_COLLNET_CHAIN; /* offered only with SHARP */
    return 6;
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

/* Whether the tuner may take algorithm a with protocol p for the spec in
** ctx: offered here, the protocol runs the algorithm, and neither is ruled
** out by what the spec sets or by NCCL_PROTO=simple (NCCL's cost table
** holds -1 there, and aws-ofi-nccl's regions skip it). */
typedef struct Allow {
  const FabCollEnv *env;
  const Topo *t;
  const FabCollSpec *c;
} Allow;

static bool allowed(FabCollAlgo a, FabProto p, void *ctx) {
  const Allow *w = ctx;
  const FabCollSpec *c = w->c;
  if (c->algorithm == FAB_ALGO_COLLNET ? !fab_coll__in_network(a, w->t->domains) || a == FAB_ALGO_COLLNET
      : c->algorithm != FAB_ALGO_AUTO ? a != c->algorithm : !auto_ok(w->t, a))
    return false;
  if (c->protocol != FAB_PROTO_AUTO ? p != c->protocol : w->env->simple_only && p != FAB_PROTO_SIMPLE) return false;
  return fab_coll__proto_ok(a, p) && offered(w->env, w->t, c->op, a);
}

double fab_coll_tune(const FabCollEnv *env, FabCollSpec *c) {
  if (c->nranks < 2) { /* nothing moves: the plain defaults, no time */
    if (c->algorithm == FAB_ALGO_AUTO) c->algorithm = default_algo(c->op);
    if (c->protocol == FAB_PROTO_AUTO) c->protocol = FAB_PROTO_SIMPLE;
    if (!c->channels) c->channels = 1;
    return 0;
  }
  Topo t;
  fab_coll__topo_make(&t, env, c);
  if (c->cta_zero && offered(env, &t, c->op, FAB_ALGO_CE)) { /* enqueue.cc: before any algorithm choice */
    c->algorithm = FAB_ALGO_CE, c->protocol = FAB_PROTO_SIMPLE, c->channels = 1;
    return model(env, &t, c->op, FAB_ALGO_CE, FAB_PROTO_SIMPLE, 1, c->bytes);
  }
  FabCollAlgo ra;
  FabProto rp;
  Allow w = {env, &t, c};
  if (env->ofi_regions && (c->algorithm == FAB_ALGO_AUTO || c->protocol == FAB_PROTO_AUTO) &&
      fab_coll__ofi_region(env->ofi_platform, c->op, c->bytes, t.n, t.nodes, allowed, &w, &ra, &rp)) {
    c->algorithm = ra, c->protocol = rp; /* aws-ofi-nccl's tuner sets that cost to 0: NCCL takes it */
    if (!c->channels) c->channels = fab_coll__auto_channels(&t, ra, rp, c->bytes);
    return model(env, &t, c->op, ra, rp, c->channels, c->bytes);
  }
  FabCollAlgo algs[8];
  uint32_t na = 1;
  if (c->algorithm == FAB_ALGO_COLLNET) { /* NCCL_ALGO=CollNet: the in-network algorithms, NVLS across nodes */
    na = 0;
    if (t.domains > 1) algs[na++] = FAB_ALGO_NVLS;
    algs[na++] = FAB_ALGO_COLLNET_DIRECT, algs[na++] = FAB_ALGO_COLLNET_CHAIN;
  } else if (c->algorithm != FAB_ALGO_AUTO) {
    algs[0] = c->algorithm;
  } else {
    na = candidates(c->op, algs);
  }
  static const FabProto protos[3] = {FAB_PROTO_SIMPLE, FAB_PROTO_LL128, FAB_PROTO_LL};
  double best = HUGE_VAL;
  FabCollAlgo ba = c->algorithm != FAB_ALGO_AUTO ? c->algorithm : default_algo(c->op);
  FabProto bp = c->protocol != FAB_PROTO_AUTO ? c->protocol : FAB_PROTO_SIMPLE;
  for (uint32_t i = 0; i < na; i++) {
    if (c->algorithm == FAB_ALGO_AUTO && !auto_ok(&t, algs[i])) continue;
    for (int q = 0; q < 3; q++) {
      FabProto p = protos[q];
      if (c->protocol != FAB_PROTO_AUTO ? p != c->protocol : env->simple_only && p != FAB_PROTO_SIMPLE) continue;
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
  if (s.algorithm == FAB_ALGO_AUTO || s.algorithm == FAB_ALGO_COLLNET || s.protocol == FAB_PROTO_AUTO)
    return fab_coll_tune(env, &s);
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

/*
** Collectives expanded into flows the way NCCL runs them.
**
** fab_coll_expand turns one collective on a set of ranks into FabDag ops:
** per rank a FAB_MARK_COLL_BEGIN mark (waiting on that rank's `start` op)
** and a FAB_MARK_COLL_END mark (done when the rank holds its result), and
** between them the flows of the algorithm, chained by dependencies.
**
** Algorithms (FabCollAlgo): ring, double binary tree, NVLS (in-switch
** reduction inside one NVLink domain), NVLS+tree (NVLS inside each domain,
** a tree across domains), hierarchical (inside each node, then across nodes,
** then inside again), PAT (allgather, reduce-scatter), pairwise all-to-all,
** NCCL's in-network allreduces over the fabric's SHARP trees (NVLS across
** nodes, CollNet Direct, CollNet Chain: coll_algos.c),
** the ring / direct pattern of send-recv, and
** ce (NCCL's copy-engine allgather and all-to-all inside one NVLink domain,
** taken when cta_zero asks for it).
**
** Channels split the data into parallel rings or trees; chunking cuts each
** step's data into pieces of `chunk` bytes that pipeline (a piece moves on
** when it has arrived; pieces of one connection keep their order through
** FAB_DEP_SENT). Protocols cost a per-step latency (the flow's `pre`) and a
** bandwidth efficiency (LL carries 8 bytes of data per 16 on the wire,
** LL128 120 per 128, Simple all of it: the flow's wire bytes grow by that).
** The reduction costs bytes / env->reduce_Bps after each received piece that
** is reduced (the flow's `post`).
*/
#ifndef FAB_COLLECTIVE_H
#define FAB_COLLECTIVE_H

#include <glib.h>
#include "dag.h"
#include "sim/config.h"

typedef enum {
  FAB_COLL_ALLREDUCE = 0, FAB_COLL_ALLGATHER, FAB_COLL_REDUCE_SCATTER, FAB_COLL_BROADCAST, FAB_COLL_REDUCE,
  FAB_COLL_ALL_TO_ALL, FAB_COLL_SEND_RECV, FAB_COLL_N
} FabCollOp;
extern const char *const fab_coll_op_names[FAB_COLL_N + 1];  /* "allreduce", ..., NULL (YAML enum) */

typedef enum {
  FAB_ALGO_AUTO = 0, FAB_ALGO_RING, FAB_ALGO_TREE, FAB_ALGO_NVLS, FAB_ALGO_NVLS_TREE, FAB_ALGO_HIERARCHICAL,
  FAB_ALGO_PAT, FAB_ALGO_PAIRWISE, FAB_ALGO_COLLNET, FAB_ALGO_CE, FAB_ALGO_COLLNET_DIRECT, FAB_ALGO_COLLNET_CHAIN,
  FAB_ALGO_N
} FabCollAlgo;
/* "auto", "ring", "tree", "nvls", "nvls-tree", "hierarchical", "pat", "pairwise", "collnet", "ce",
** "collnet-direct", "collnet-chain", NULL. FAB_ALGO_COLLNET is a choice, not an algorithm: NCCL's in-network
** algorithms (nvls across nodes, collnet-direct, collnet-chain) as the tuner weighs them; fab_coll_tune
** resolves it to one of them. */
extern const char *const fab_coll_algo_names[FAB_ALGO_N + 1];

typedef enum { FAB_PROTO_AUTO = 0, FAB_PROTO_SIMPLE, FAB_PROTO_LL128, FAB_PROTO_LL, FAB_PROTO_N } FabProto;
extern const char *const fab_proto_names[FAB_PROTO_N + 1];   /* "auto", "simple", "ll128", "ll", NULL */

/* NCCL_CTA_POLICY as a workload key: "default", "zero" (FabCollSpec.cta_zero), NULL. */
extern const char *const fab_cta_policy_names[3];

/* What NCCL's kernels and proxy cost in the simulation, apart from moving
** bytes over links (the tuner keeps NCCL's own constants to choose). Times
** in ps, rates in bytes/s of data. */
typedef struct FabNcclCosts {
  fab_time_t launch;        /* a rank entering a collective until its first piece can leave (kernel launch and
                            ** start, as nccl-tests sees it back to back) */
  fab_time_t step[3];       /* per piece over NVLink, beyond the wire: the protocol's flag and fence work,
                            ** indexed LL, LL128, Simple */
  fab_time_t proxy;         /* per piece over the network, beyond the step: the proxy thread's post at the
                            ** sender and completion at the receiver */
  fab_time_t flush;         /* per Simple piece over the network: the receiver's GPUDirect flush */
  fab_time_t nic_post;      /* per piece over the network: the NIC's start of the message across PCIe (the proxy's
                            ** doorbell, the work request's read, the data's read request; tuner.c) */
  uint64_t channel_bps[3];  /* bits/s of data one channel (one SM's CTA) moves, [1] LL128, [2] Simple; [0] what
                            ** a rank moves over all its LL channels (LL's ceiling; 0: NCCL's for the node count) */
  uint64_t channel_net_bps; /* Simple: bits/s of data one channel moves in its pieces across the network, below
                            ** channel_bps[2] (0: no lower limit; UINT64_MAX unset: the architecture's, tuner.c) */
  fab_time_t ce_sync;       /* copy-engine collectives: a rank's flag work in each of their two barriers (stream
                            ** memory operations: the write into each peer, the wait for theirs) */
  uint64_t ce_bps;          /* copy-engine collectives: bits/s a GPU's copy engines move together (0: no limit
                            ** beyond NVLink) */
  fab_time_t plugin_lat;    /* cluster.nccl.plugin_latency: the network plugin's reported latency, ps (unset: the
                            ** transport's, FabCollEnv.plugin_lat_us) */
  uint32_t ofi_protocol;    /* cluster.nccl.ofi_protocol: FabOfiProtocol, aws-ofi-nccl's (OFI_NCCL_PROTOCOL) under
                            ** srd (UINT32_MAX unset: the preset's, FabCollEnv.ofi_default) */
  uint32_t ofi_tuner;       /* cluster.nccl.ofi_tuner: FabOfiTunerType, aws-ofi-nccl's tuner plugin
                            ** (OFI_NCCL_TUNER_TYPE) under srd (UINT32_MAX unset: region, the plugin's default) */
  bool fence;               /* cluster.nccl.fence (default true): a Simple slice over NVLink waits for the one
                            ** before it on its connection to have landed (coll_algos.c: fenced) */
  bool channel_share;       /* cluster.nccl.channel_share (default true): a ring channel moves at most its share of
                            ** the bandwidth NCCL's search gives the rings (tuner.c: fab_coll__channel_share) */
  fab_time_t nvls_sync;     /* an NVLS kernel's (nvls, nvls-tree, SHARP through NVLS) start beyond `launch`, once a
                            ** rank: the multicast group's synchronisation (tuner.c) */
  fab_time_t nvls_step;     /* each NVLS step of a channel (a loop's pass through the switch): its flags, fences
                            ** and multimem barriers, before its data moves (tuner.c) */
} FabNcclCosts;

/* aws-ofi-nccl's protocols (its OFI_NCCL_PROTOCOL). RDMA: a message of more
** than OFI_NCCL_EAGER_MAX_SIZE (8192 B with an 8 B header: 8184 B of data)
** waits at its sender for the receiver's control message (a 64 B write of
** the receive buffer's address into the sender's mailbox when the receive is
** posted, nccl_net_ofi_ctrl_msg_entry_t), then goes as RDMA writes; smaller
** ones go at once (eager). src/nccl_ofi_rdma.cpp, include/nccl_ofi_param.h.
** SENDRECV: tagged messages, whose protocol libfabric's EFA provider picks
** (eager, then read-based with a runt for GPU memory: models/nic.h). EFA
** cannot promise 128-byte-aligned in-order delivery of tagged messages
** (libfabric refuses FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES,
** prov/efa/src/rdm/efa_rdm_ep_fiops.c), so under SENDRECV the plugin sets
** NCCL_PROTO=simple unless the user set it (src/platform-aws.cpp,
** configure_ep_inorder; src/nccl_ofi_net.cpp): the tuner then weighs
** Simple only (FabCollEnv.simple_only). */
typedef enum { FAB_OFI_SENDRECV = 0, FAB_OFI_RDMA = 1 } FabOfiProtocol;
extern const char *const fab_ofi_protocol_names[]; /* "sendrecv", "rdma", NULL */
#define FAB_OFI_EAGER_MAX 8184u /* data bytes of the largest eager message (8192 - the 8 B eager header) */
#define FAB_OFI_CTRL_BYTES 64u  /* the RDMA protocol's control message (one mailbox entry) */

/* aws-ofi-nccl's tuner plugin (its OFI_NCCL_TUNER_TYPE): REGION, its
** default, replaces NCCL's choice of algorithm and protocol where its
** regions for the platform cover the collective (workloads/ofi_regions.c);
** INTERNAL leaves NCCL's. The platforms it knows (FabOfiPlatform): p5/p5e
** (p5en, p6-b200 and p6-b300 have tables upstream too, and no preset here);
** on others, p4d among them, it tunes nothing. */
typedef enum { FAB_OFI_TUNER_REGION = 0, FAB_OFI_TUNER_INTERNAL = 1 } FabOfiTunerType;
extern const char *const fab_ofi_tuner_names[]; /* "region", "internal", NULL */
typedef enum { FAB_OFI_PLATFORM_NONE = 0, FAB_OFI_PLATFORM_P5 = 1 } FabOfiPlatform;

/* cluster.nccl: the keys that set FabNcclCosts (unset ones keep
** fab_coll_costs_unset's values). */
extern const FabCfgKey fab_nccl_schema[];

/* What the algorithms and the tuner know of the cluster. */
/* Host CPUs as NCCL's tuner tells them apart (the order of models/gpu.h's FabCpu). */
enum { FAB_COLL_CPU_INTEL = 0, FAB_COLL_CPU_AMD = 1, FAB_COLL_CPU_ARM = 2 };

typedef struct FabCollEnv {
  uint32_t endpoints;
  uint32_t gpus_per_node;   /* endpoints per node; 1 for plain hosts */
  uint32_t nvl_domain;      /* endpoints per NVLink domain (consecutive); 0: no NVLink */
  uint32_t sm;              /* the GPUs' compute capability x 10 (80 Ampere, 90 Hopper, 100 Blackwell); 0: plain
                            ** hosts, which NCCL's Hopper rows stand for */
  bool nvls;                /* the NVSwitch reduces and multicasts (NVLS) */
  uint32_t cpu;             /* the host CPU, FAB_COLL_CPU_*: NCCL's tuner rows and network overhead depend on it */
  double nvls_eff;          /* NVLS traffic's data per NVLink byte (for the expansion's estimates) */
  uint32_t nics_per_node;   /* network ports per node (1 for plain hosts) */
  uint64_t nic_bps;         /* one NIC's rate, bits/s */
  uint64_t pcie_bps;        /* GPU <-> NIC, bits/s (0: plain hosts, no PCIe limit) */
  uint64_t net_bps;         /* a rank's network bandwidth, bits/s (its share of the node's NICs) */
  uint64_t nvl_bps;         /* NVLink per GPU per direction, bits/s (0: none) */
  bool nvl_mesh;            /* the NVLink domain (a node) is a full mesh of GPU-to-GPU links (cluster.nvlink.mesh):
                            ** rings spread their channels over orders that share no link (fab_coll_mesh_rings) */
  fab_time_t net_lat;       /* one network hop end to end, unloaded (NIC to NIC), ps */
  fab_time_t nvl_lat;       /* one NVLink hop GPU to GPU, ps */
  fab_time_t pcie_lat;      /* one PCIe crossing between a GPU node's NIC and its host or GPU, ps (0: plain hosts) */
  double plugin_lat_us;     /* the latency NCCL's network plugin reports (ncclNetProperties_t.latency), us, which
                            ** NCCL's tuner adds to each step across nodes (twice for Simple); 0: NCCL's own IB
                            ** and socket transports report none */
  double reduce_Bps;        /* GPU reduction throughput, bytes/s of input reduced (0: free) */
  bool srd;                 /* the network is EFA (transport srd): aws-ofi-nccl is NCCL's plugin */
  uint32_t ofi_default;     /* srd: the preset's aws-ofi-nccl protocol (FabOfiProtocol; the plugin's own default,
                            ** SENDRECV, for other nodes) */
  uint64_t eager_max;       /* receiver-driven (srd, RDMA protocol): a network piece of more data bytes than this
                            ** waits for its receiver's control message (FAB_FLOW_RDV); UINT64_MAX: none do */
  bool simple_only;         /* srd, SENDRECV: aws-ofi-nccl set NCCL_PROTO=simple (FabOfiProtocol): the tuner weighs
                            ** Simple only */
  uint32_t ofi_platform;    /* srd: the preset's platform as aws-ofi-nccl's tuner knows it (FabOfiPlatform) */
  bool ofi_regions;         /* srd, ofi_tuner region on a platform it knows: its regions choose first */
  bool collnet;             /* in-network reduction (SHARP) in the fabric's switches */
  /* SHARP: a tree for job `job`'s communicator of endpoints ranks[0..n) (n >= 2, any order), claimed once and
  ** found again later: its index, or -1 with *why (transfer full) when the fabric has no room for it */
  int32_t (*sharp_claim)(void *ctx, uint32_t job, const uint32_t *ranks, uint32_t n, char **why);
  void *sharp_ctx;
  bool sharp_fail;          /* no tree: the collective fails (else it falls back to the tuner's choice without) */
  FabNcclCosts costs;       /* what NCCL's kernels cost on these GPUs (fab_coll_costs_resolve fills it) */
  GPtrArray *warnings;      /* char *: where the expansion chose coarser than asked (NULL: not kept) */
} FabCollEnv;

/* Rings over a full mesh of k GPUs (1 <= k <= FAB_MESH_RING_MAX), no two
** sharing a directed link: returns how many (k - 1 but for k = 4 and 6: 2
** and 4), *rings = R rings of k positions each (0 .. k-1, each a ring's
** order; the table lives as long as the process). Deterministic. */
#define FAB_MESH_RING_MAX 16 /* cluster.nvlink.mesh's limit (FAB_MESH_MAX, topologies/topology.h) */
uint32_t fab_coll_mesh_rings(uint32_t k, const uint8_t **rings);

/* Path p (0 <= p < k) of the k paths through a mesh of an even number k of
** GPUs that, together, take every directed link once and start and end on
** every GPU once: seq[0 .. k), from its entry to its exit. */
void fab_coll_mesh_path(uint32_t k, uint32_t p, uint32_t *seq);

/* Costs with nothing set: times FAB_TIME_MAX, rates 0. */
FabNcclCosts fab_coll_costs_unset(void);

/* Fill the unset fields of env->costs (times FAB_TIME_MAX, rates 0) with the
** defaults of env->sm (tuner.c gives their sources). */
void fab_coll_costs_resolve(FabCollEnv *env);

typedef struct FabCollSpec {
  FabCollOp op;
  FabCollAlgo algorithm;    /* FAB_ALGO_AUTO: the tuner chooses */
  FabProto protocol;        /* FAB_PROTO_AUTO: the tuner chooses */
  uint64_t bytes;           /* nccl-tests size (see FabCollDef.bytes) */
  uint32_t dtype_bytes;     /* element size (2 for bf16, 4 for float) */
  uint32_t nranks;
  const uint32_t *ranks;    /* rank i is endpoint ranks[i] */
  uint32_t root;            /* broadcast, reduce: the root's rank index */
  uint32_t channels;        /* 0: the tuner's choice */
  uint64_t chunk;           /* bytes per pipelined piece; 0: the protocol's default */
  uint8_t prio;
  uint16_t job, step;
  const char *tag;          /* FabCollDef.tag (interned or static) */
  fab_time_t start;         /* not before this (absolute ps) */
  bool cta_zero;            /* NCCL_CTA_POLICY=ZERO with symmetric-registered buffers (nccl-tests -x 2 -R 2):
                            ** allgather and all-to-all inside one NVLink domain run on the copy engines (ce),
                            ** whatever the algorithm, as NCCL takes that path before any algorithm choice */
  const uint64_t *counts;   /* all-to-all only, or NULL: the bytes rank i sends rank j at [i nranks + j] (NCCL's
                            ** alltoallv as grouped sends: MoE dispatch with imbalanced experts); the diagonal is
                            ** not sent; bytes stays the size the tuner sizes by. NULL: bytes / nranks each */
  uint32_t def1;            /* 0: the expansion defines its FabCollDef; else the index + 1 of one defined before
                            ** with the same choices (an nccl-tests sweep made as it runs lists every collective
                            ** from the start) */
} FabCollSpec;

/* Expand `c` into `d`. start[i] (NULL, or entries FAB_OP_NONE: none) is the
** op rank i waits for before it enters; end[i] receives rank i's
** FAB_MARK_COLL_END mark. Returns the FabCollDef index, or -1 + err
** (FAB_CFG_ERROR, plain message without location: the caller adds where)
** when the algorithm cannot run this collective here (NVLS without an
** NVLink domain, collnet without SHARP, PAT on an op other than allgather
** and reduce-scatter, ...). */
int32_t fab_coll_expand(FabDag *d, const FabCollEnv *env, const FabCollSpec *c, const uint32_t *start,
                        uint32_t *end, GError **err);

/* An expansion made as a run goes. fab_coll_begin checks and sizes `c` as
** fab_coll_expand does, makes the BEGIN marks, and with `unfold` set, when
** the expansion is a ring allreduce, allgather or reduce-scatter, stops
** there: fab_coll_gen_more then makes the next layers (one step of the
** ring, on every channel, a layer), at least `min_ops` ops a call, and
** returns false once the END marks are made too. Otherwise (or without
** `unfold`) everything is made at once. The ops come in the same order
** either way, so a run cannot tell. Made layer by layer, an expansion is not
** coarsened to stay under FAB_COLL_MAX_OPS: it holds what is under way.
** NULL + err as fab_coll_expand. */
typedef struct FabCollGen FabCollGen;
#define FAB_COLL_UNFOLD_MAX_OPS 1500000000u /* what may be made as a run goes: op indices are 31 bits */
FabCollGen *fab_coll_begin(FabDag *d, const FabCollEnv *env, const FabCollSpec *c, const uint32_t *start, bool unfold,
                           GError **err);
bool fab_coll_gen_more(FabCollGen *g, uint32_t min_ops);
bool fab_coll_gen_done(const FabCollGen *g);
int32_t fab_coll_gen_id(const FabCollGen *g);              /* the FabCollDef index */
const uint32_t *fab_coll_gen_end(const FabCollGen *g);     /* the END marks, once done (else NULL) */
double fab_coll_gen_estimate(const FabCollGen *g);         /* ops the whole expansion makes, about */
void fab_coll_gen_free(FabCollGen *g);

/* The tuner: the algorithm, protocol and channels NCCL's cost model would
** pick for `c` on `env` (fills the AUTO fields of *c; leaves set ones), and
** the time it predicts, in seconds. */
double fab_coll_tune(const FabCollEnv *env, FabCollSpec *c);

/* The time the cost model predicts for `c` with its algorithm and protocol
** set (no AUTO), seconds: latency terms + bytes / bandwidth. */
double fab_coll_model_time(const FabCollEnv *env, const FabCollSpec *c);

/* nccl-tests' bus bandwidth factor for `op` on n ranks: allreduce
** 2(n-1)/n; allgather, reduce-scatter, all-to-all (n-1)/n; broadcast,
** reduce, send-recv 1. */
double fab_coll_busbw_factor(FabCollOp op, uint32_t n);

#endif

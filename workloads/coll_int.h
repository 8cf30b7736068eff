/*
** Inside the collectives module (collective.h): what its files share.
** collective.c expands a collective (the frame: ranks, phases, chunks, the
** estimate, and the ops' common shape); coll_algos.c holds the algorithms
** (ring, chain, tree, PAT, send-recv, NVLS, NVLS+tree,
** hierarchical, copy engines), coll_p2p.c all-to-all; tuner.c holds NCCL's cost model and its figures. Not for use
** outside workloads/coll*.c and tuner.c.
*/
#ifndef FAB_COLL_INT_H
#define FAB_COLL_INT_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include "collective.h"

#define FAB_COLL_MAX_OPS 4000000u /* one expansion made whole; beyond this the user raises `chunk` or lowers
                                  ** `channels` */
#define MAX_CHANNELS 32u          /* NCCL's MAXCHANNELS (2.x) */
#define NVLS_CHANNELS 16u         /* NCCL_NVLS_NCHANNELS default */
#define PERCH_BPS 40e9            /* bytes/s one Simple channel (one SM) moves: the top of NCCL's sm90 search
                                  ** speeds; caps a ring's bus bandwidth at channels x this */

/* ---- NCCL's figures (tuner.c) ------------------------------------------- */
/* src/graph/tuning.cc, ncclTunerConstantsDefaults (us, GB/s). Protocol
** columns in NCCL's order: LL, LL128, Simple. NCCL has a PCI row too: here a
** hop is NVLink inside an NVLink domain and the network otherwise. Hopper
** rows are indexed by islands 1 / 2 / more. */

enum { HW_NVL = 0, HW_NET = 1 };
enum { ROW_TREE = 0, ROW_RING, ROW_NVLS, ROW_NVLS_TREE, ROW_PAT, ROW_COLLNET, ROW_CHAIN, ROW_N };

extern const double fab_coll__base_lat[ROW_N][3];
extern const double fab_coll__hw_lat[2][ROW_N][3];
extern const double fab_coll__tree_correction[3][24];

/* NCCL's per-architecture rows (tuner.c says where each comes from). The
** per-channel figures are indexed by nodes: 1, 2, 3 or more. */
typedef struct FabNcclArch {
  const char *name;
  uint32_t sm;              /* compute capability x 10 */
  double ll_max_1node;      /* llMaxBws, one node: LL's bus bandwidth ceiling, GB/s */
  double ring_ll128;        /* perChMaxRingLL128Bws, GB/s per channel */
  double tree_ll128[3];     /* perChMaxTreeLL128Bws */
  double tree[3];           /* perChMaxTreeBws */
  double nvls_tree[3];      /* perChMaxNVLSTreeBws */
  double nvls_eff;          /* nvlsEfficiency */
  uint32_t nvls_ch1, nvls_ch_n; /* NVLS CTAs: one node, several */
  const float *intra;       /* the topology search's speeds, one node */
  uint32_t nintra;
  const float *inter;       /* and several */
  uint32_t ninter;
  bool rccl;                /* AMD: RCCL's tuner (tuner_rccl.c) weighs the ring and the tree */
} FabNcclArch;

/* The rows of compute capability sm (0: plain hosts, Hopper's rows). */
const FabNcclArch *fab_coll__arch(uint32_t sm);

static inline int fab_coll__pidx(FabProto p) { return p == FAB_PROTO_LL ? 0 : p == FAB_PROTO_LL128 ? 1 : 2; }

static inline int fab_coll__log2i(uint64_t v) {
  int l = -1;
  while (v) {
    v >>= 1;
    l++;
  }
  return l;
}

static inline uint64_t fab_coll__ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }


/* Whether protocol p exists for algorithm a in NCCL. */
static inline bool fab_coll__proto_ok(FabCollAlgo a, FabProto p) {
  return p == FAB_PROTO_SIMPLE ||
         !(a == FAB_ALGO_NVLS || a == FAB_ALGO_NVLS_TREE || a == FAB_ALGO_PAT || a == FAB_ALGO_COLLNET ||
           a == FAB_ALGO_CE || a == FAB_ALGO_COLLNET_DIRECT || a == FAB_ALGO_COLLNET_CHAIN);
}

/* ---- groups of ranks (collective.c) ---------------------------------------- */

typedef struct Groups {
  uint32_t ng;   /* groups */
  uint32_t *off; /* ng + 1: group g is mem[off[g] .. off[g+1]) */
  uint32_t *mem; /* the members, grouped; groups in order of first appearance, members in input order */
} Groups;

typedef struct KeyPos {
  uint64_t key;
  uint32_t pos;
} KeyPos;

int fab_coll__keypos_cmp(const void *a, const void *b);

/* Group the members mem[0..k) (rank indices) by endpoint / per (per 0:
** every member alone). */
void fab_coll__groups_make(Groups *g, const uint32_t *ep, const uint32_t *mem, uint32_t k, uint32_t per);
void fab_coll__groups_free(Groups *g);
static inline uint32_t fab_coll__group_size(const Groups *g, uint32_t i) { return g->off[i + 1] - g->off[i]; }

/* Ranks grouped by node (or domain), all groups of one size: returns the
** size, 0 when uneven. */
uint32_t fab_coll__even_groups(const Groups *g);

/* ---- what the tuner sees of the ranks (tuner.c) ------------------------------ */

/* What NCCL's topology search gives a graph: channels at a speed each
** (GB/s) inside a node and across nodes. */
typedef struct Graph {
  uint32_t nch;
  double intra, inter;
} Graph;

typedef struct Topo {
  uint32_t n;
  uint32_t nodes;     /* distinct nodes (endpoint / gpus_per_node) */
  uint32_t islands;   /* distinct NVLink domains (NCCL's nodes); every endpoint its own without NVLink */
  uint32_t domains;   /* distinct NVLink domains (0 without NVLink) */
  uint32_t per_node;  /* ranks per node if even, else 0 */
  uint32_t per_domain;/* ranks per domain if even, else 0 */
  uint32_t ppn;       /* ranks per island (n / islands, at least 1) */
  uint32_t nics_isl;  /* NICs one island's ranks use */
  double net;         /* a rank's network share, bytes/s */
  double nvl, nic, pci; /* GB/s: NVLink per GPU, one NIC, PCIe as NCCL rates it (0: none) */
  const FabNcclArch *arch;
  uint32_t cpu;       /* the host CPU (FabCollEnv, FAB_COLL_CPU_*) */
  double plugin_lat;  /* us: the network plugin's latency (FabCollEnv.plugin_lat_us) */
  Graph ring;         /* the ring (and tree) search */
  Graph nvls;         /* the NVLS search (nch 0: no NVLS) */
  uint32_t nch;       /* channels launched for rings and trees */
  uint32_t nvls_ch;   /* NVLS CTAs */
} Topo;

void fab_coll__topo_make(Topo *t, const FabCollEnv *env, const FabCollSpec *c);

/* RCCL's time (s) for `op` of `bytes` with the ring or the tree and
** protocol p (tuner_rccl.c); HUGE_VAL where RCCL would not take it. */
double fab_coll__rccl_time(const Topo *t, FabCollOp op, FabCollAlgo a, FabProto p, uint64_t bytes);

/* LL's ceiling, bits/s of data a rank moves over all its channels:
** cluster.nccl.ll_bandwidth, else NCCL's llMaxBws for t's nodes. */
uint64_t fab_coll__ll_ceiling(const FabCollEnv *env, const Topo *t);

/* aws-ofi-nccl's region tuner (ofi_regions.c): on `platform`, for `op` of
** `bytes` over nranks ranks on nnodes nodes, the first of its regions whose
** algorithm and protocol allowed() accepts (NULL: all) and that holds the
** point; false when none does (or nnodes <= 2, where the plugin leaves
** NCCL's choice). */
bool fab_coll__ofi_region(FabOfiPlatform platform, FabCollOp op, uint64_t bytes, uint32_t nranks, uint32_t nnodes,
                          bool (*allowed)(FabCollAlgo a, FabProto p, void *ctx), void *ctx, FabCollAlgo *a,
                          FabProto *p);

/* NCCL's allreduce bandwidth for NVLS (GB/s of algorithm bandwidth), which
** sets NVLS's chunk across nodes. */
double fab_coll__nvls_ar_bw(const Topo *t);

/* A ring channel's share of the rings' bandwidth inside one NVLink domain,
** wire bits/s (cluster.nccl.channel_share; 0: none, and always across
** domains or without NVLink, where t->islands > 1). */
uint64_t fab_coll__channel_share(const FabCollEnv *env, const Topo *t);

/* NCCL's channel count for algorithm a, protocol p, `bytes`. */
uint32_t fab_coll__auto_channels(const Topo *t, FabCollAlgo a, FabProto p, uint64_t bytes);

/* ---- the expansion context (collective.c) ------------------------------------ */

enum { COV_RECV = 1, COV_SENT = 2 };
typedef struct Meta {
  uint32_t s, r; /* ranks (NVLS: s == r) */
  uint8_t cov;   /* COV_*: a later flow of the rank consumed its arrival / follows it on the wire */
  uint8_t flow;  /* a FAB_OP_FLOW (its send chain counts too) */
} Meta;

/* A Meta and the op it is of (the window, and what is kept past it: fab_coll__meta_prune). */
typedef struct MetaAt {
  uint32_t op;
  Meta m;
} MetaAt;

enum {
  F_READY = 1,  /* first piece on a connection: wait for both ends to be in the phase */
  F_LAUNCH = 2, /* a rank's first step: pay the kernel's launch (FabNcclCosts.launch) */
  F_REDUCE = 4, /* the receiver reduces it */
  F_SYNC = 8,   /* a copy-engine barrier's flag: pays FabNcclCosts.ce_sync */
};

typedef struct Ex {
  FabDag *d;
  const FabCollEnv *env;
  const FabCollSpec *c;
  int32_t coll;
  FabCollAlgo algo;
  FabProto proto;
  uint32_t n;
  const uint32_t *ep;
  uint32_t channels;
  uint64_t chunk;   /* bytes per piece (NCCL's slice: what one step of one connection pipelines) */
  uint32_t spc;     /* ring: pieces a step's chunk is cut into (NCCL's SlicePerChunk) */
  uint32_t tree_n;  /* tree: the search's channels, which NCCL doubles: channel c runs tree (c / tree_n) mod 2 */
  uint32_t window;  /* pieces a connection holds in flight (NCCL_STEPS slots / the steps a piece takes) */
  uint32_t chan;    /* the channel the algorithm is making flows for: a multi-NIC GPU's flows leave by NIC
                    ** chan mod NICs (FabOp.lane), as NCCL gives each channel its NIC */
  uint32_t unit;    /* data is split in whole multiples of this (the element, when it divides the size) */
  uint32_t *ready;  /* n: the op rank i's current phase starts from */
  uint32_t phase0;  /* first op of the current phase */
  uint32_t meta0;   /* the window's first op (>= phase0) */
  GArray *meta;     /* MetaAt, by op: each op of this expansion since meta0 (other expansions made as a
                    ** training step unfolds may add ops between them) */
  GArray *residue;  /* MetaAt, by op: the ops of the phase before meta0 not consumed both ways (an unfolding
                    ** expansion keeps only a window of Meta; these are what the phase's end still needs) */
  GArray *tmp;      /* uint32_t: dependency scratch */
  uint32_t limit;   /* refuse ops from this index on */
  bool over;
  uint64_t cap_bps; /* the sending GPU's limit for its flows together (LL: NCCL's per-rank LL bandwidth), 0: none */
  uint64_t flow_bps;/* one flow's limit: its channel's SM throughput for the protocol, wire bits/s; 0: none */
  uint64_t net_bps; /* a flow across the network: its channel's lower limit there (channel_net, below flow_bps),
                    ** 0: none */
  uint64_t nvls_bps;/* an NVLS op's limit (fab_coll__nvls_share), set by the NVLS algorithms; 0: none */
  uint32_t nvls_lanes;/* channels an NVLS op carries side by side (coll_nvls.c); 0 or 1: one */
  uint32_t slot;    /* the next piece's wait for its receiver's slot (conn_deps), FAB_OP_NONE: none; taken by
                    ** fab_coll__flow */
  uint32_t p2p_peer;/* all-to-all as NCCL schedules it (coll_p2p.c): channels per peer; x->channels is then NCCL's
                    ** p2p channels */
  uint64_t p2p_step;/* NCCL's p2pChunkSize, which sets how many channels an op takes */
  uint64_t p2p_ll_bps;/* protocol auto: an LL op's rank ceiling (on the wire), as ops pick LL or Simple one by one
                    ** (coll_p2p.c op_proto) */
  uint64_t p2p_def; /* p2p across domains: the default chunk (the average op's); each op's own (op_chunk) while
                    ** x->chunk is it */
  bool p2p_multi;   /* the ranks span NVLink domains (NCCL's nNodes > 1) */
  bool p2p_net;     /* some peers are across the network (p2p_multi, or hosts of one GPU) */
  bool p2p_fit;     /* p2p_peer halves while it times the groups of 8 exceeds the p2p channels (NCCL across nodes) */
} Ex;

/* LL's piece: one step of its 512 KiB buffer, 64 KiB of lines = 32 KiB of
** data (NCCL's LL buffer / NCCL_STEPS, halved). */
#define FAB_COLL_LL_CHUNK 32768u

/* NCCL's pipelining unit for x's algorithm and protocol (tuner.c): the
** piece in bytes; sets x->spc and x->window. */
uint64_t fab_coll__default_chunk(Ex *x, const Topo *t);

/* NCCL's p2p channels for an all-to-all over t (tuner.c): x->channels
** becomes the p2p channel count (from `user` when set, else the launched
** channels), and x->p2p_peer, p2p_step, p2p_multi are set. */
void fab_coll__p2p_setup(Ex *x, const Topo *t, uint32_t user);

/* Piece j of `bytes` cut into pieces of `chunk`. */
static inline uint64_t fab_coll__piece_size(uint64_t bytes, uint64_t chunk, uint64_t j) {
  uint64_t p = fab_coll__ceil_div(bytes, chunk);
  return j + 1 < p ? chunk : bytes - (p - 1) * chunk;
}

/* The ops of an expansion (collective.c). */
uint64_t fab_coll__part(const Ex *x, uint64_t total, uint64_t parts, uint64_t i);
uint32_t fab_coll__chans(const Ex *x, uint64_t bytes, uint64_t parts);
/* All-to-all: what rank i sends rank j of `bytes` (FabCollSpec.counts, or its n-th part). */
uint64_t fab_coll__a2a_block(const Ex *x, uint64_t bytes, uint32_t i, uint32_t j);
/* The node of rank i of the collective (its endpoint over the GPUs a node). */
static inline uint32_t fab_coll__node(const Ex *x, uint32_t i) {
  return x->ep[i] / (x->env->gpus_per_node ? x->env->gpus_per_node : 1u);
}
bool fab_coll__same_domain(const FabCollEnv *env, uint32_t a, uint32_t b);
fab_time_t fab_coll__us_ps(double us);
fab_time_t fab_coll__hop_lat(const Ex *x, uint32_t s, uint32_t r, unsigned flags);
/* What a message across nodes pays beyond its step: the proxy's post and completion, the NIC's start and,
** for Simple, the receiver's flush (a piece between domains, a SHARP reduction). */
fab_time_t fab_coll__net_msg(const FabNcclCosts *k, FabProto proto);
fab_time_t fab_coll__reduce_ps(const Ex *x, uint64_t bytes);
Meta *fab_coll__meta_at(const Ex *x, uint32_t op); /* NULL: before the phase, or consumed both ways */
void fab_coll__meta_prune(Ex *x, uint32_t upto);
uint32_t fab_coll__add_op(Ex *x, FabOp *o, uint32_t s, uint32_t r, const uint32_t *deps, uint32_t nd, unsigned flags);
uint32_t fab_coll__flow(Ex *x, uint32_t s, uint32_t r, uint64_t payload, unsigned flags, const uint32_t *deps,
                        uint32_t nd);
uint32_t fab_coll__nvls_op(Ex *x, uint32_t i, uint32_t group, uint64_t bytes, FabNvlsOp mode, unsigned flags,
                           const uint32_t *deps, uint32_t nd);
uint32_t fab_coll__mark_op(Ex *x, uint32_t i, FabMarkKind kind, const uint32_t *deps, uint32_t nd);
void fab_coll__phase_end(Ex *x, FabMarkKind kind, uint32_t *out);

/* The algorithms (coll_algos.c). */

/* A ring made layer by layer: fab_coll__ring_begin, then fab_coll__ring_layer
** until it returns false (one (loop, step) of every channel and slice a
** call, in the order fab_coll__ring makes them), then fab_coll__ring_free. */
typedef struct Ring {
  uint32_t k, nsteps, nreduce, C, Q;
  bool launch;
  uint32_t *ord;         /* C x k: ring order per channel */
  uint64_t *cb, loop, min_slice, L;
  uint32_t *arr, *arr_m; /* per (channel, segment, slice): its latest piece, and its number on its connection */
  struct Conn *cn;       /* per (channel, sender position) */
  uint64_t l;            /* the next layer: loop l, step s */
  uint32_t s;
} Ring;
bool fab_coll__ring_begin(Ex *x, Ring *g, const uint32_t *mem, uint32_t k, uint64_t bytes, uint32_t nsteps,
                          uint32_t nreduce, bool launch);
bool fab_coll__ring_layer(Ex *x, Ring *g);
void fab_coll__ring_free(Ring *g);
void fab_coll__ring(Ex *x, const uint32_t *mem, uint32_t k, uint64_t bytes, uint32_t nsteps, uint32_t nreduce,
                    bool launch);
void fab_coll__chain(Ex *x, uint32_t root, uint64_t bytes, bool reduce);
void fab_coll__tree(Ex *x, const uint32_t *mem, uint32_t k, uint64_t bytes, bool by_node, bool launch);
void fab_coll__pat(Ex *x, uint64_t bytes, bool rs);
void fab_coll__pairwise_nccl(Ex *x, const Groups *dom, uint64_t bytes);
/* NCCL's protocol for a p2p op of `bytes` (addP2pToPlan): LL while it
** holds at most NCCL_P2P_LL_THRESHOLD (16 KiB) a channel, else Simple;
** Simple when any peer is across the network (no LL buffers there by
** default). One protocol for the collective: NCCL picks one per op, so a
** small all-to-all's NVLink ops, LL in NCCL, run Simple here then. */
FabProto fab_coll__p2p_proto(const Ex *x, uint64_t bytes);
void fab_coll__send_recv(Ex *x, const Groups *dom, uint64_t bytes);
void fab_coll__ce(Ex *x, uint64_t bytes, bool a2a);
void fab_coll__run_nvls(Ex *x);
uint64_t fab_coll__nvls_share(const Ex *x);
void fab_coll__run_nvls_tree(Ex *x, const Groups *dom, uint32_t G, uint32_t *end);
/* In-network allreduce (SHARP): see coll_algos.c. nvls: the nodes' NVSwitches
** reduce and multicast inside each node (NCCL's NVLS with SHARP across
** nodes), else direct flows to and from the node's heads (NCCL's CollNet
** Direct). The chain: NCCL's CollNet Chain. */
void fab_coll__run_collnet(Ex *x, const Groups *nodes, uint32_t L, bool nvls, uint32_t *end);
void fab_coll__run_collnet_chain(Ex *x, const Groups *nodes, uint32_t L, uint32_t *end);

/* Whether algorithm a over t's ranks reduces in the network (SHARP). */
static inline bool fab_coll__in_network(FabCollAlgo a, uint32_t domains) {
  return a == FAB_ALGO_COLLNET || a == FAB_ALGO_COLLNET_DIRECT || a == FAB_ALGO_COLLNET_CHAIN ||
         (a == FAB_ALGO_NVLS && domains > 1);
}
void fab_coll__run_hierarchical(Ex *x, const Groups *nodes, uint32_t L, uint32_t *end);

#endif

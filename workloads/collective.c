/*
** Collectives expanded into flows the way NCCL runs them. See collective.h.
**
** Every expansion has the same frame. Rank i gets a FAB_MARK_COLL_BEGIN mark
** (after its `start` op) and a FAB_MARK_COLL_END mark; between them, the
** algorithm's flows. A flow that is the first piece of a step on a connection
** also waits for the BEGIN of both its ends: NCCL cannot push data into a
** peer that has not entered the collective (no receive buffer, no credit),
** so a rank that arrives late holds its neighbours up, as on real hardware.
** A rank's END waits for every flow of the rank that nothing later in the
** rank consumed: the last arrivals it did not forward, and (FAB_DEP_SENT) the
** last piece of each of its own send chains, so a rank is done when it holds
** its result and has pushed out what others need from it. Multi-phase
** algorithms (hierarchical, nvls-tree) close each phase the same way with a
** FAB_MARK_JOIN per rank, which the next phase starts from.
**
** Data is cut three ways. Channels (parallel rings or trees, as NCCL's
** channels on separate SMs and NICs) each take an even share of the bytes,
** remainder to the first ones, in whole elements. Inside a channel the data
** is split among the ranks (a ring's segments, a tree's two halves). Each
** part then moves in pieces of `chunk` bytes that pipeline: a piece moves on
** as soon as it has arrived, and the pieces of one connection keep their
** order through FAB_DEP_SENT on the previous piece. Parts of zero bytes (a
** few bytes over many ranks) carry no flows; the parts that depend on them
** are the same parts one step later, so dependencies stay sound.
**
** Algorithms:
**   ring          allreduce = reduce-scatter then allgather, 2(n-1) steps;
**                 allgather and reduce-scatter n-1 steps. At step s the rank
**                 at ring position p sends segment (p - s) mod n to p+1; the
**                 receiver reduces it during the reduce-scatter steps.
**                 Broadcast and reduce are NCCL's pipelined chains along the
**                 ring, from the root and to the root. On GPU nodes each
**                 channel's ring enters every node at a different GPU
**                 (rotating with the channel, so all NICs carry traffic) and
**                 alternate nodes are walked in opposite directions, so the
**                 hop between two nodes joins GPUs of the same local index
**                 (the same rail), as NCCL's rail-aligned rings do; with an
**                 odd number of nodes the closing hop changes rail.
**   tree          NCCL's double binary tree (trees.cc): tree 0 is the binary
**                 tree over node indices, tree 1 its mirror (even number of
**                 nodes) or the same shifted by one (odd), so the inner nodes
**                 of one are leaves of the other; each carries half of every
**                 channel. Pieces go up (a node sends piece j to its parent
**                 when piece j arrived from all its children, and the parent
**                 reduces it) and back down from the root, pipelined. With
**                 several GPUs per node the tree joins nodes and a chain runs
**                 inside each node (NVLink), headed by the same local GPU in
**                 every node, rotating with channel and tree.
**   nvls          one FAB_OP_NVLS op per rank: the NVSwitch reduces and
**                 multicasts (the executor models it).
**   nvls-tree     approximation of NCCL's NVLS_TREE in three phases: an NVLS
**                 allreduce inside each NVLink domain (G ranks each); then,
**                 for each local index l, a double-binary-tree allreduce
**                 across the domains of shard l (bytes / G) among the ranks of
**                 local index l; then inside each domain every rank sends its
**                 shard to the G-1 others over NVLink. NCCL instead pipelines
**                 the NVSwitch reduction, the tree and the multicast piece by
**                 piece, and moves about bytes (not 2 x bytes) over NVLink;
**                 here the phases are separated by per-rank joins.
**   hierarchical  allreduce = ring reduce-scatter inside each node, ring
**                 allreduce across nodes of shard l among the ranks of local
**                 index l, ring allgather inside each node (Horovod-style,
**                 three collectives one after the other, phases joined per
**                 rank); allgather = across then inside; reduce-scatter =
**                 inside then across. Every node needs the same rank count.
**   pat           allgather and reduce-scatter as a Bruck-style exchange:
**                 ceil(log2 n) steps, step k with the rank at distance 2^k,
**                 moving min(2^k, n - 2^k) blocks; reduce-scatter runs the
**                 steps in reverse order and reduces. A step starts when the
**                 whole previous step has arrived.
**   pairwise      all-to-all: n-1 rounds; in round k rank i sends its block
**                 for rank (i+k) mod n, after round k-1's last piece left.
**                 Rounds are one send stream (NCCL posts a group's p2p
**                 operations back to back), so only round 1 pays the step
**                 latency.
**   send-recv     rank i sends `bytes` to rank (i+1) mod n (nccl-tests
**                 sendrecv_perf).
**   collnet       in-network reduction (SHARP): not modelled yet; see
**                 collnet_expand(), the hook where its ops will be made.
**
** Protocols (NCCL's LL, LL128, Simple) cost two things. Bandwidth: LL moves 8
** data bytes in every 16 on the wire, LL128 120 in every 128, Simple all of
** them, so a flow's `bytes` grow by 2 or by 128/120. Latency: the first piece
** of every step on a connection is posted after NCCL's per-hop latency for
** that algorithm, protocol and link (hwLat of tuning.cc: NVLink row inside an
** NVLink domain, network row otherwise) minus what the fabric itself takes
** for that hop (env nvl_lat / net_lat, since the simulator models the wire),
** and the first step also pays NCCL's base latency (baseLat) once. Later
** pieces stream behind the first: NCCL overlaps a connection's per-step
** latency with its FIFO of in-flight steps. A ring connection is first in,
** first out: a step's first piece also waits for the previous step's last
** piece to leave (NCCL's primitives run one step after the other). The default piece is NCCL's
** pipelining unit: Simple a slice of NCCL_BUFFSIZE (4 MiB) / NCCL_STEPS (8)
** = 512 KiB x SLICESTEPS (2 for ring allreduce, allgather, reduce-scatter: 1
** MiB; 1 for chains and trees, which NCCL halves down to 32 KiB while a
** channel has fewer than a few pieces per tree level); LL one step of its
** 512 KiB buffer, 64 KiB of lines = 32 KiB of data; LL128 one step of its
** 4.7 MB buffer, 614400 bytes = 576000 of data (a tree's halved, as NCCL
** does, while a channel holds few pieces per tree step: down to 19200 bytes
** = 18000 of data, so the pieces pipeline up and down the tree instead of
** crossing every level whole); p2p (pairwise, send-recv)
** NCCL_P2P_NET_CHUNKSIZE 128 KiB, or NCCL_P2P_NVL_CHUNKSIZE 512 KiB inside
** one NVLink domain.
**
** Reduction: a flow whose data the receiver reduces (ring reduce-scatter
** steps, tree up, the reduce chain, the reduce parts of hierarchical and
** PAT) is done bytes / env->reduce_Bps after it arrived (its `post`).
**
** The tuner is NCCL's cost model (tuning.cc, NCCL 2.2x constants, Hopper
** rows): time = latency + bytes / algorithm bandwidth, where the latency is
** baseLat + steps x hwLat (intra- and inter-island steps apart) and the
** bandwidth is the link a rank can drive, times NCCL's per-algorithm and
** per-protocol factors, converted from bus to algorithm bandwidth. Sizes of
** the expansion are bounded: more than FAB_COLL_MAX_OPS operations are
** refused (an automatic channel count or piece size is first adjusted to
** fit).
**
** Everything is deterministic: groups of ranks are found by sorting, never by
** hashing, and ops are emitted in a fixed loop order.
*/
#include "collective.h"
#include "sim/results.h"
#include "sim/config.h"
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const fab_coll_op_names[FAB_COLL_N + 1] = {"allreduce", "allgather", "reduce-scatter", "broadcast",
                                                       "reduce", "all-to-all", "send-recv", NULL};
const char *const fab_coll_algo_names[FAB_ALGO_N + 1] = {"auto", "ring", "tree", "nvls", "nvls-tree", "hierarchical",
                                                         "pat", "pairwise", "collnet", NULL};
const char *const fab_proto_names[FAB_PROTO_N + 1] = {"auto", "simple", "ll128", "ll", NULL};

#define FAB_COLL_MAX_OPS 4000000u /* one expansion; beyond this the user raises `chunk` or lowers `channels` */
#define MAX_CHANNELS 32u          /* NCCL's MAXCHANNELS (2.x) */
#define NVLS_CHANNELS 16u         /* NCCL_NVLS_NCHANNELS default */
#define PERCH_BPS 40e9            /* bytes/s one Simple channel (one SM) moves: the top of NCCL's sm90 search
                                  ** speeds; caps a ring's bus bandwidth at channels x this */

/* ------------------------------------------------------------------------ */
/* NCCL's figures (src/graph/tuning.cc, ncclTunerConstantsDefaults; us, GB/s).
** Protocol columns in NCCL's order: LL, LL128, Simple. */

enum { HW_NVL = 0, HW_NET = 1 };
enum { ROW_TREE = 0, ROW_RING, ROW_NVLS, ROW_NVLS_TREE, ROW_PAT, ROW_COLLNET, ROW_N };

static const double base_lat[ROW_N][3] = {
  [ROW_TREE] = {6.8, 14.0, 8.4}, [ROW_RING] = {6.6, 14.0, 8.4}, [ROW_PAT] = {8.0, 8.0, 8.0},
};
/* NCCL has a PCI row too: here a hop is NVLink inside an NVLink domain and the
** network otherwise (the simulator sends every other hop through the NIC). */
static const double hw_lat[2][ROW_N][3] = {
  [HW_NVL] = {[ROW_TREE] = {0.6, 1.25, 4.0}, [ROW_RING] = {0.6, 1.9, 3.4}, [ROW_NVLS] = {0, 0, 25},
              [ROW_NVLS_TREE] = {0, 0, 25}, [ROW_PAT] = {0, 0, 4.0}, [ROW_COLLNET] = {0, 0, 3.7}},
  [HW_NET] = {[ROW_TREE] = {5.0, 8.5, 14}, [ROW_RING] = {2.7, 4.0, 14.0}, [ROW_NVLS] = {0, 0, 18},
              [ROW_NVLS_TREE] = {0, 0, 20.9}, [ROW_PAT] = {0, 0, 14}, [ROW_COLLNET] = {0, 0, 31}},
};
/* Hopper rows, indexed by islands 1 / 2 / more. */
static const double ll_max_bw[3] = {141.0, 45.0, 35.0};
static const double perch_ring_ll128[3] = {36.7, 36.7, 36.7};
static const double perch_tree[3] = {38.7, 41.4, 36.0};
static const double perch_tree_ll128[3] = {36.7, 36.7, 29.0};
static const double perch_nvls_tree[3] = {0.0, 57.7, 45.5};
static const double nvls_efficiency = 0.85;
/* Trees stray from the model at medium sizes; NCCL corrects their bandwidth
** by size (powers of two from 64 B). */
static const double tree_correction[3][23] = {
  {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
  {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
  {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
};

static int pidx(FabProto p) { return p == FAB_PROTO_LL ? 0 : p == FAB_PROTO_LL128 ? 1 : 2; }

static int log2i(uint64_t v) {
  int l = -1;
  while (v) {
    v >>= 1;
    l++;
  }
  return l;
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/* The wire bytes of `payload` under protocol `p`. */
static uint64_t wire_bytes(FabProto p, uint64_t payload) {
  if (p == FAB_PROTO_LL) return payload * 2;                  /* 8 data bytes per 16-byte line */
  if (p == FAB_PROTO_LL128) return ceil_div(payload * 128, 120); /* 120 data bytes per 128-byte line */
  return payload;
}

/* ------------------------------------------------------------------------ */
/* Groups of ranks (nodes, NVLink domains), found by sorting. */

typedef struct Groups {
  uint32_t ng;   /* groups */
  uint32_t *off; /* ng + 1: group g is mem[off[g] .. off[g+1]) */
  uint32_t *mem; /* the members, grouped; groups in order of first appearance, members in input order */
} Groups;

typedef struct KeyPos {
  uint64_t key;
  uint32_t pos;
} KeyPos;

static int keypos_cmp(const void *a, const void *b) {
  const KeyPos *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Group the members mem[0..k) (rank indices) by endpoint / per (per 0:
** every member alone). */
static void groups_make(Groups *g, const uint32_t *ep, const uint32_t *mem, uint32_t k, uint32_t per) {
  KeyPos *a = g_new(KeyPos, k), *runs = g_new(KeyPos, k);
  for (uint32_t i = 0; i < k; i++) a[i] = (KeyPos){ep[mem[i]] / (per ? per : 1), i};
  qsort(a, k, sizeof *a, keypos_cmp); /* by key, then position */
  uint32_t nr = 0;
  for (uint32_t i = 0; i < k; i++) /* runs of one key: (first position, start in a[]) */
    if (i == 0 || a[i].key != a[i - 1].key) runs[nr++] = (KeyPos){a[i].pos, i};
  qsort(runs, nr, sizeof *runs, keypos_cmp); /* by first appearance */
  g->ng = nr;
  g->off = g_new(uint32_t, nr + 1);
  g->mem = g_new(uint32_t, MAX(k, 1));
  uint32_t w = 0;
  for (uint32_t r = 0; r < nr; r++) {
    g->off[r] = w;
    for (uint32_t i = runs[r].pos; i < k && (i == runs[r].pos || a[i].key == a[i - 1].key); i++)
      g->mem[w++] = mem[a[i].pos];
  }
  g->off[nr] = w;
  g_free(runs);
  g_free(a);
}

static void groups_free(Groups *g) {
  g_free(g->off);
  g_free(g->mem);
}

static uint32_t group_size(const Groups *g, uint32_t i) { return g->off[i + 1] - g->off[i]; }

/* ------------------------------------------------------------------------ */
/* The expansion context. */

enum { COV_RECV = 1, COV_SENT = 2 };
typedef struct Meta {
  uint32_t s, r; /* ranks (NVLS: s == r) */
  uint8_t cov;   /* COV_*: a later flow of the rank consumed its arrival / follows it on the wire */
} Meta;

enum {
  F_READY = 1,  /* first piece on a connection: wait for both ends to be in the phase */
  F_LAT = 2,    /* pay the step latency */
  F_BASE = 4,   /* and NCCL's base latency (first step of the collective) */
  F_REDUCE = 8, /* the receiver reduces it */
};
#define F_FIRST (F_READY | F_LAT)

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
  uint64_t chunk;
  uint32_t unit;    /* data is split in whole multiples of this (the element, when it divides the size) */
  uint32_t *ready;  /* n: the op rank i's current phase starts from */
  uint32_t phase0;  /* first op of the current phase */
  GArray *meta;     /* Meta of each op since phase0 */
  GArray *tmp;      /* uint32_t: dependency scratch */
  uint32_t limit;   /* refuse ops from this index on */
  bool over;
  bool exposed;     /* one rank per node: a ring's network steps pay the exposed (tree-row) latency */
  uint64_t cap_bps; /* the sending GPU's limit for its flows (LL: NCCL's per-rank LL bandwidth), 0: none */
} Ex;

/* Part i of `total` cut into `parts` near-equal parts of whole units. */
static uint64_t part(const Ex *x, uint64_t total, uint64_t parts, uint64_t i) {
  uint64_t u = total / x->unit, q = u / parts, r = u % parts;
  return (q + (i < r)) * x->unit;
}

/* Channels for `bytes` split `parts` ways per channel: never a channel whose
** parts are all empty. */
static uint32_t chans(const Ex *x, uint64_t bytes, uint64_t parts) {
  uint64_t per = bytes / x->unit / parts;
  return (uint32_t)MIN((uint64_t)x->channels, MAX(per, 1));
}

static bool same_domain(const FabCollEnv *env, uint32_t a, uint32_t b) {
  return env->nvl_domain && a / env->nvl_domain == b / env->nvl_domain;
}

static fab_time_t us_ps(double us) { return (fab_time_t)llround(us * 1e6); }

/* The `pre` of a flow s -> r: NCCL's per-hop latency less what the fabric
** takes for the hop itself, plus the base latency once. */
static fab_time_t step_lat(const Ex *x, uint32_t s, uint32_t r, int row, unsigned flags) {
  bool nvl = same_domain(x->env, x->ep[s], x->ep[r]);
  int p = pidx(x->proto);
  if (!nvl && row == ROW_RING && x->exposed) row = ROW_TREE; /* NCCL: at one rank per node, latencies are exposed */
  fab_time_t hop = us_ps(hw_lat[nvl ? HW_NVL : HW_NET][row][p]);
  fab_time_t wire = nvl ? x->env->nvl_lat : x->env->net_lat;
  fab_time_t pre = hop > wire ? hop - wire : 0;
  if (flags & F_BASE) pre += us_ps(base_lat[row][p]);
  return pre;
}

static fab_time_t reduce_ps(const Ex *x, uint64_t bytes) {
  if (x->env->reduce_Bps <= 0) return 0;
  return (fab_time_t)ceil((double)bytes / x->env->reduce_Bps * 1e12);
}

static Meta *meta_at(const Ex *x, uint32_t op) { return &g_array_index(x->meta, Meta, op - x->phase0); }

/* Add `o` with deps[0..nd) (+ the ready ops of s and r with F_READY), and
** record which earlier ops of the phase it consumes. */
static uint32_t add_op(Ex *x, FabOp *o, uint32_t s, uint32_t r, const uint32_t *deps, uint32_t nd, unsigned flags) {
  if (x->over) return FAB_OP_NONE;
  if (fab_dag_len(x->d) >= x->limit) {
    x->over = true;
    return FAB_OP_NONE;
  }
  g_array_set_size(x->tmp, 0);
  g_array_append_vals(x->tmp, deps, nd);
  if (flags & F_READY) {
    g_array_append_val(x->tmp, x->ready[s]);
    if (r != s) g_array_append_val(x->tmp, x->ready[r]);
  }
  for (guint k = 0; k < x->tmp->len; k++) {
    uint32_t dep = g_array_index(x->tmp, uint32_t, k);
    if (dep == FAB_OP_NONE) continue;
    uint32_t at = dep & ~FAB_DEP_SENT;
    if (at < x->phase0) continue;
    Meta *m = meta_at(x, at);
    if (!(dep & FAB_DEP_SENT) && m->r == s) m->cov |= COV_RECV;
    if (m->s == s) m->cov |= COV_SENT;
  }
  uint32_t id = fab_dag_add(x->d, o, (const uint32_t *)x->tmp->data, x->tmp->len);
  Meta m = {s, r, 0};
  g_array_append_val(x->meta, m);
  return id;
}

/* A flow of `payload` data bytes from rank s to rank r. */
static uint32_t flow(Ex *x, uint32_t s, uint32_t r, uint64_t payload, unsigned flags, int row, const uint32_t *deps,
                     uint32_t nd) {
  g_assert(payload > 0 && s != r);
  const FabCollSpec *c = x->c;
  FabOp o = {.kind = FAB_OP_FLOW, .prio = c->prio, .job = c->job, .step = c->step, .src = x->ep[s], .dst = x->ep[r],
             .coll = x->coll, .bytes = wire_bytes(x->proto, payload), .start = c->start,
             .pre = (flags & F_LAT) ? step_lat(x, s, r, row, flags) : 0,
             .post = (flags & F_REDUCE) ? reduce_ps(x, payload) : 0, .max_bps = x->cap_bps};
  return add_op(x, &o, s, r, deps, nd, flags);
}

/* Rank i's part of an NVLS reduction `group`. */
static uint32_t nvls_op(Ex *x, uint32_t i, uint32_t group, uint64_t bytes, int row) {
  const FabCollSpec *c = x->c;
  FabOp o = {.kind = FAB_OP_NVLS, .prio = c->prio, .job = c->job, .step = c->step, .src = x->ep[i], .dst = x->ep[i],
             .coll = x->coll, .group = group, .bytes = bytes, .start = c->start};
  fab_time_t hop = us_ps(hw_lat[HW_NVL][row][2]);
  o.pre = hop > x->env->nvl_lat ? hop - x->env->nvl_lat : 0;
  return add_op(x, &o, i, i, NULL, 0, F_READY);
}

static uint32_t mark_op(Ex *x, uint32_t i, FabMarkKind kind, const uint32_t *deps, uint32_t nd) {
  const FabCollSpec *c = x->c;
  FabOp o = {.kind = FAB_OP_MARK, .mark = (uint8_t)kind, .prio = c->prio, .job = c->job, .step = c->step,
             .src = x->ep[i], .dst = x->ep[i], .coll = x->coll, .start = c->start};
  return fab_dag_add(x->d, &o, deps, nd);
}

/* Close the phase: per rank, a mark after its unconsumed arrivals, the last
** pieces of its send chains and its NVLS parts. A JOIN is made only for a
** rank that did something in the phase; the END for every rank (into out[]). */
static void phase_end(Ex *x, FabMarkKind kind, uint32_t *out) {
  if (x->over) return;
  uint32_t n = x->n, len = x->meta->len;
  uint32_t *off = g_new0(uint32_t, n + 2);
  for (uint32_t k = 0; k < len; k++) {
    const Meta *m = &g_array_index(x->meta, Meta, k);
    const FabOp *o = fab_dag_op(x->d, x->phase0 + k);
    if (!(m->cov & COV_RECV)) off[m->r + 2]++;
    if (o->kind == FAB_OP_FLOW && !(m->cov & COV_SENT)) off[m->s + 2]++;
  }
  for (uint32_t i = 0; i < n; i++) off[i + 2] += off[i + 1];
  uint32_t *list = g_new(uint32_t, MAX(off[n + 1], 1) + 1);
  for (uint32_t k = 0; k < len; k++) {
    const Meta *m = &g_array_index(x->meta, Meta, k);
    const FabOp *o = fab_dag_op(x->d, x->phase0 + k);
    if (!(m->cov & COV_RECV)) list[off[m->r + 1]++] = x->phase0 + k;
    if (o->kind == FAB_OP_FLOW && !(m->cov & COV_SENT)) list[off[m->s + 1]++] = (x->phase0 + k) | FAB_DEP_SENT;
  }
  /* off[i] .. off[i+1] is now rank i's list */
  GArray *deps = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  for (uint32_t i = 0; i < n; i++) {
    uint32_t a = off[i], b = off[i + 1];
    if (kind == FAB_MARK_JOIN && a == b) continue;
    g_array_set_size(deps, 0);
    g_array_append_val(deps, x->ready[i]);
    g_array_append_vals(deps, list + a, b - a);
    x->ready[i] = mark_op(x, i, kind, (const uint32_t *)deps->data, deps->len);
    if (out) out[i] = x->ready[i];
  }
  g_array_free(deps, TRUE);
  g_free(list);
  g_free(off);
  x->phase0 = fab_dag_len(x->d);
  g_array_set_size(x->meta, 0);
}

/* ------------------------------------------------------------------------ */
/* Rings and chains. */

/* Ring order of members mem[0..k) for each channel: ord[c*k + p]. One node:
** the members in order. Several nodes: each channel enters node m at local
** index c mod size; even nodes are walked forward, odd ones backward, so the
** hop between nodes joins the same local index (rail). */
static void ring_orders(const Ex *x, const uint32_t *mem, uint32_t k, uint32_t C, uint32_t *ord) {
  Groups g;
  groups_make(&g, x->ep, mem, k, x->env->gpus_per_node);
  for (uint32_t c = 0; c < C; c++) {
    uint32_t *o = ord + (size_t)c * k, w = 0;
    if (g.ng == 1) {
      memcpy(o, mem, k * sizeof *o);
      continue;
    }
    for (uint32_t m = 0; m < g.ng; m++) {
      uint32_t km = group_size(&g, m), r = c % km;
      const uint32_t *gm = g.mem + g.off[m];
      for (uint32_t q = 0; q < km; q++)
        o[w++] = (m % 2 == 0) ? gm[(r + q) % km] : gm[(r + 2 * km - 1 - q) % km];
    }
  }
  groups_free(&g);
}

static uint64_t piece_size(uint64_t bytes, uint64_t chunk, uint64_t j) {
  uint64_t p = ceil_div(bytes, chunk);
  return j + 1 < p ? chunk : bytes - (p - 1) * chunk;
}

/* A ring over members mem[0..k) on `bytes`: steps 0 .. nsteps-1, the first
** `nreduce` of them reduced at the receiver. Allreduce: 2(k-1), k-1;
** reduce-scatter: k-1, k-1; allgather: k-1, 0. */
static void ring(Ex *x, const uint32_t *mem, uint32_t k, uint64_t bytes, uint32_t nsteps, uint32_t nreduce,
                 bool base) {
  if (k < 2 || bytes == 0) return;
  uint32_t C = chans(x, bytes, k);
  uint32_t *ord = g_new(uint32_t, (size_t)C * k);
  ring_orders(x, mem, k, C, ord);
  uint64_t *seg = g_new(uint64_t, (size_t)C * k);
  uint32_t *poff = g_new(uint32_t, (size_t)C * k + 1);
  uint64_t pmax = 0, tot = 0;
  for (uint32_t c = 0; c < C; c++) {
    uint64_t cb = part(x, bytes, C, c);
    for (uint32_t s = 0; s < k; s++) {
      uint64_t b = part(x, cb, k, s), p = ceil_div(b, x->chunk);
      seg[(size_t)c * k + s] = b;
      poff[(size_t)c * k + s] = (uint32_t)tot;
      tot += p;
      pmax = MAX(pmax, p);
    }
  }
  poff[(size_t)C * k] = (uint32_t)tot;
  uint32_t *last = g_new(uint32_t, MAX(tot, 1)); /* per (channel, segment, piece): its latest flow */
  /* per (channel, ring position): the last piece it sent in the step before, and in this one. A
  ** connection is first in, first out, as NCCL's: all of a step's pieces leave before the next
  ** step's first one (whose data may have arrived earlier), so steps pipeline but do not mix. */
  uint32_t *prev_tail = g_new(uint32_t, (size_t)C * k), *tail = g_new(uint32_t, (size_t)C * k);
  for (size_t i = 0; i < (size_t)C * k; i++) prev_tail[i] = tail[i] = FAB_OP_NONE;
  for (uint32_t s = 0; s < nsteps && !x->over; s++) {
    for (uint64_t j = 0; j < pmax && !x->over; j++)
      for (uint32_t c = 0; c < C; c++)
        for (uint32_t p = 0; p < k; p++) {
          uint32_t sg = (uint32_t)((p + k - s % k) % k);
          size_t at = (size_t)c * k + sg, pos = (size_t)c * k + p;
          uint64_t b = seg[at];
          if (j >= ceil_div(b, x->chunk)) continue;
          uint32_t deps[3] = {FAB_OP_NONE, FAB_OP_NONE, FAB_OP_NONE};
          if (s > 0) deps[0] = last[poff[at] + j];                   /* the piece arrived here a step ago */
          if (j > 0) deps[1] = last[poff[at] + j - 1] | FAB_DEP_SENT; /* this step's previous piece left */
          else if (prev_tail[pos] != FAB_OP_NONE) deps[2] = prev_tail[pos] | FAB_DEP_SENT; /* the last step's left */
          unsigned fl = (j == 0 ? F_FIRST : 0) | (s < nreduce ? F_REDUCE : 0) | (base && s == 0 ? F_BASE : 0);
          last[poff[at] + j] = tail[pos] = flow(x, ord[(size_t)c * k + p], ord[(size_t)c * k + (p + 1) % k],
                                                piece_size(b, x->chunk, j), fl, ROW_RING, deps, 3);
        }
    memcpy(prev_tail, tail, sizeof(uint32_t) * C * k);
  }
  g_free(prev_tail);
  g_free(tail);
  g_free(last);
  g_free(poff);
  g_free(seg);
  g_free(ord);
}

/* Broadcast (from the root) or reduce (to the root) as NCCL's pipelined chain
** along each channel's ring. */
static void chain(Ex *x, uint32_t root, uint64_t bytes, bool reduce) {
  uint32_t n = x->n;
  if (n < 2 || bytes == 0) return;
  uint32_t C = chans(x, bytes, 1);
  uint32_t *all = g_new(uint32_t, n), *ord = g_new(uint32_t, (size_t)C * n), *ch = g_new(uint32_t, (size_t)C * n);
  for (uint32_t i = 0; i < n; i++) all[i] = i;
  ring_orders(x, all, n, C, ord);
  uint64_t pmax = 0;
  uint64_t *cb = g_new(uint64_t, C);
  uint32_t *poff = g_new(uint32_t, C + 1);
  uint32_t tot = 0;
  for (uint32_t c = 0; c < C; c++) {
    const uint32_t *o = ord + (size_t)c * n;
    uint32_t at = 0;
    while (o[at] != root) at++;
    for (uint32_t h = 0; h < n; h++) ch[(size_t)c * n + h] = o[(at + h + (reduce ? 1 : 0)) % n];
    cb[c] = part(x, bytes, C, c);
    poff[c] = tot;
    tot += (uint32_t)ceil_div(cb[c], x->chunk);
    pmax = MAX(pmax, ceil_div(cb[c], x->chunk));
  }
  uint32_t *last = g_new(uint32_t, MAX(tot, 1));
  for (uint32_t h = 0; h + 1 < n && !x->over; h++)
    for (uint64_t j = 0; j < pmax && !x->over; j++)
      for (uint32_t c = 0; c < C; c++) {
        if (j >= ceil_div(cb[c], x->chunk)) continue;
        uint32_t deps[2] = {FAB_OP_NONE, FAB_OP_NONE};
        if (h > 0) deps[0] = last[poff[c] + j];
        if (j > 0) deps[1] = last[poff[c] + j - 1] | FAB_DEP_SENT;
        unsigned fl = (j == 0 ? F_FIRST : 0) | (reduce ? F_REDUCE : 0) | (h == 0 ? F_BASE : 0);
        last[poff[c] + j] = flow(x, ch[(size_t)c * n + h], ch[(size_t)c * n + h + 1], piece_size(cb[c], x->chunk, j),
                                 fl, ROW_RING, deps, 2);
      }
  g_free(last);
  g_free(poff);
  g_free(cb);
  g_free(ch);
  g_free(ord);
  g_free(all);
}

/* ------------------------------------------------------------------------ */
/* Trees. */

/* NCCL's binary tree over 0..n-1 rooted at 0 (trees.cc ncclGetBtree): a
** rank's parent clears its lowest set bit and sets the next one (or just
** clears it past the end); the root's one child is the highest power of two
** below n. */
static void btree(int n, int r, int *up, int *d0, int *d1) {
  int bit = 1;
  while (bit < n && !(bit & r)) bit <<= 1;
  if (r == 0) {
    *up = -1;
    *d0 = -1;
    *d1 = n > 1 ? bit >> 1 : -1;
    return;
  }
  int u = (r ^ bit) | (bit << 1);
  if (u >= n) u = r ^ bit;
  *up = u;
  int low = bit >> 1;
  *d0 = low ? r - low : -1;
  int c1 = low ? r + low : -1;
  while (c1 >= n) {
    low >>= 1;
    c1 = low ? r + low : -1;
  }
  *d1 = c1;
}

/* Tree t (0 or 1) of NCCL's double binary tree (ncclGetDtree): tree 1 is
** tree 0 mirrored (n even) or shifted by one rank (n odd), which makes most
** inner nodes of one tree leaves of the other. */
static void dtree(int n, int r, int t, int *up, int *d0, int *d1) {
  if (t == 0) {
    btree(n, r, up, d0, d1);
  } else if (n % 2) {
    btree(n, (r - 1 + n) % n, up, d0, d1);
    *up = *up < 0 ? -1 : (*up + 1) % n;
    *d0 = *d0 < 0 ? -1 : (*d0 + 1) % n;
    *d1 = *d1 < 0 ? -1 : (*d1 + 1) % n;
  } else {
    btree(n, n - 1 - r, up, d0, d1);
    *up = *up < 0 ? -1 : n - 1 - *up;
    *d0 = *d0 < 0 ? -1 : n - 1 - *d0;
    *d1 = *d1 < 0 ? -1 : n - 1 - *d1;
  }
}

typedef struct Tree {
  uint32_t root;   /* member index */
  int32_t *parent; /* k: member index, -1 at the root */
  uint32_t *kids;  /* 3 per member, UINT32_MAX: none */
  uint32_t *bfs;   /* k: root first, parents before children */
} Tree;

/* Tree t of channel c over members mem[0..k): the double binary tree over
** the groups (nodes, or single members), a chain inside each group headed by
** local index (2c + t) mod size. */
static void tree_make(Tree *tr, const Groups *g, const uint32_t *midx, uint32_t k, uint32_t c, uint32_t t) {
  tr->parent = g_new(int32_t, k);
  tr->kids = g_new(uint32_t, (size_t)k * 3);
  tr->bfs = g_new(uint32_t, k);
  memset(tr->kids, 0xff, (size_t)k * 3 * sizeof *tr->kids);
  uint32_t N = g->ng;
  uint32_t *head = g_new(uint32_t, N);
  for (uint32_t m = 0; m < N; m++) {
    uint32_t km = group_size(g, m), rot = (2 * c + t) % km;
    const uint32_t *gm = g->mem + g->off[m];
    head[m] = midx[gm[rot]];
    for (uint32_t q = 0; q < km; q++) {
      uint32_t v = midx[gm[(rot + q) % km]];
      tr->parent[v] = q ? (int32_t)midx[gm[(rot + q - 1) % km]] : -1;
      if (q + 1 < km) tr->kids[(size_t)v * 3] = midx[gm[(rot + q + 1) % km]];
    }
  }
  for (uint32_t m = 0; m < N; m++) {
    int up, d0, d1;
    dtree((int)N, (int)m, (int)t, &up, &d0, &d1);
    uint32_t h = head[m];
    if (up < 0) tr->root = h;
    else tr->parent[h] = (int32_t)head[up];
    if (d0 >= 0) tr->kids[(size_t)h * 3 + 1] = head[d0];
    if (d1 >= 0) tr->kids[(size_t)h * 3 + 2] = head[d1];
  }
  uint32_t w = 0;
  tr->bfs[w++] = tr->root;
  for (uint32_t i = 0; i < w; i++)
    for (int q = 0; q < 3; q++) {
      uint32_t ch = tr->kids[(size_t)tr->bfs[i] * 3 + q];
      if (ch == UINT32_MAX) continue;
      g_assert(tr->parent[ch] == (int32_t)tr->bfs[i] && w < k);
      tr->bfs[w++] = ch;
    }
  g_assert(w == k); /* a spanning tree */
  g_free(head);
}

static void tree_free(Tree *tr) {
  g_free(tr->parent);
  g_free(tr->kids);
  g_free(tr->bfs);
}

/* Double-binary-tree allreduce over members mem[0..k) on `bytes`; grouped by
** node (a chain inside each node) when by_node and GPUs share nodes. */
static void tree(Ex *x, const uint32_t *mem, uint32_t k, uint64_t bytes, bool by_node, int row, bool base) {
  if (k < 2 || bytes == 0) return;
  uint32_t C = chans(x, bytes, 2), T = 2 * C;
  Groups g;
  groups_make(&g, x->ep, mem, k, by_node ? x->env->gpus_per_node : 0);
  uint32_t *midx = g_new0(uint32_t, x->n); /* rank -> member index */
  for (uint32_t i = 0; i < k; i++) midx[mem[i]] = i;
  Tree *trs = g_new(Tree, T);
  uint64_t *tb = g_new(uint64_t, T), pmax = 0;
  for (uint32_t q = 0; q < T; q++) {
    tree_make(&trs[q], &g, midx, k, q / 2, q % 2);
    tb[q] = part(x, part(x, bytes, C, q / 2), 2, q % 2);
    pmax = MAX(pmax, ceil_div(tb[q], x->chunk));
  }
  /* per tree and member: the latest flow up from it and down into it (read
  ** before it is replaced, the previous piece's: the SENT chain) */
  size_t sz = (size_t)T * k;
  uint32_t *up = g_new(uint32_t, sz), *dn = g_new(uint32_t, sz);
  uint32_t deps[4];
  for (uint64_t j = 0; j < pmax && !x->over; j++)
    for (uint32_t q = 0; q < T && !x->over; q++) {
      if (j >= ceil_div(tb[q], x->chunk)) continue;
      const Tree *tr = &trs[q];
      uint64_t b = piece_size(tb[q], x->chunk, j);
      uint32_t *u = up + (size_t)q * k, *dw = dn + (size_t)q * k;
      for (uint32_t i = k; i-- > 1;) { /* up, children first */
        uint32_t v = tr->bfs[i], nd = 0;
        bool leaf = true;
        for (int z = 0; z < 3; z++) {
          uint32_t ch = tr->kids[(size_t)v * 3 + z];
          if (ch != UINT32_MAX) deps[nd++] = u[ch], leaf = false;
        }
        if (j > 0) deps[nd++] = u[v] | FAB_DEP_SENT;
        unsigned fl = F_REDUCE | (j == 0 ? F_FIRST : 0) | (base && j == 0 && leaf ? F_BASE : 0);
        u[v] = flow(x, mem[v], mem[tr->parent[v]], b, fl, row, deps, nd);
      }
      for (uint32_t i = 0; i < k; i++) { /* down, parents first */
        uint32_t v = tr->bfs[i];
        for (int z = 0; z < 3; z++) {
          uint32_t ch = tr->kids[(size_t)v * 3 + z], nd = 0;
          if (ch == UINT32_MAX) continue;
          if (v == tr->root) {
            for (int y = 0; y < 3; y++)
              if (tr->kids[(size_t)v * 3 + y] != UINT32_MAX) deps[nd++] = u[tr->kids[(size_t)v * 3 + y]];
          } else {
            deps[nd++] = dw[v];
          }
          if (j > 0) deps[nd++] = dw[ch] | FAB_DEP_SENT;
          dw[ch] = flow(x, mem[v], mem[ch], b, j == 0 ? F_FIRST : 0, row, deps, nd);
        }
      }
    }
  for (uint32_t q = 0; q < T; q++) tree_free(&trs[q]);
  g_free(trs);
  g_free(tb);
  g_free(up);
  g_free(dn);
  g_free(midx);
  groups_free(&g);
}

/* ------------------------------------------------------------------------ */
/* PAT, pairwise, send-recv, direct sends. */

/* Bytes of the blocks start .. start+len-1 (mod n) of `total` cut n ways. */
static uint64_t range_bytes(const Ex *x, uint64_t total, uint32_t n, uint32_t start, uint32_t len) {
  uint64_t u = total / x->unit, q = u / n, r = u % n, big = 0;
  uint64_t a = start, e = (uint64_t)start + len;
  if (e <= n) {
    big = a < r ? MIN(e, r) - a : 0;
  } else {
    big = (a < r ? r - a : 0) + MIN(e - n, r);
  }
  return (q * len + big) * x->unit;
}

/* Bruck-style allgather (rs: reduce-scatter, steps reversed, reduced). A
** step forwards blocks that came in at any earlier step, so its first piece
** waits for every piece that arrived since the rank last sent, and for the
** rank's own last send (which waited for what came before). */
static void pat(Ex *x, uint64_t bytes, bool rs) {
  uint32_t n = x->n;
  if (n < 2 || bytes == 0) return;
  uint32_t C = chans(x, bytes, n), K = (uint32_t)log2i(n - 1) + 1; /* ceil(log2 n) */
  size_t m = (size_t)C * n;
  GArray **pend = g_new(GArray *, m); /* per (channel, rank): arrivals since it last sent */
  uint32_t *sent = g_new(uint32_t, m), *off = g_new(uint32_t, m + 1), *dst = g_new(uint32_t, m);
  for (size_t q = 0; q < m; q++) pend[q] = g_array_new(FALSE, FALSE, sizeof(uint32_t)), sent[q] = FAB_OP_NONE;
  GArray *cur = g_array_new(FALSE, FALSE, sizeof(uint32_t)), *deps = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  for (uint32_t step = 0; step < K && !x->over; step++) {
    uint32_t t = rs ? K - 1 - step : step, dist = 1u << t, nb = MIN(dist, n - dist);
    g_array_set_size(cur, 0);
    for (uint32_t c = 0; c < C; c++) {
      uint64_t cb = part(x, bytes, C, c);
      for (uint32_t i = 0; i < n; i++) {
        size_t q = (size_t)c * n + i;
        off[q] = cur->len;
        dst[q] = rs ? (i + dist) % n : (i + n - dist) % n;
        uint64_t b = range_bytes(x, cb, n, rs ? dst[q] : i, nb);
        if (b == 0) continue;
        g_array_set_size(deps, 0);
        g_array_append_vals(deps, pend[q]->data, pend[q]->len);
        if (sent[q] != FAB_OP_NONE) {
          uint32_t sd = sent[q] | FAB_DEP_SENT;
          g_array_append_val(deps, sd);
        }
        for (uint64_t j = 0, P = ceil_div(b, x->chunk); j < P && !x->over; j++) {
          unsigned fl = (j == 0 ? F_FIRST : 0) | (rs ? F_REDUCE : 0) | (step == 0 && j == 0 ? F_BASE : 0);
          if (j > 0) {
            g_array_set_size(deps, 1);
            g_array_index(deps, uint32_t, 0) = sent[q] | FAB_DEP_SENT;
          }
          sent[q] = flow(x, i, dst[q], piece_size(b, x->chunk, j), fl, ROW_PAT, (const uint32_t *)deps->data,
                         deps->len);
          g_array_append_val(cur, sent[q]);
        }
        g_array_set_size(pend[q], 0);
      }
    }
    off[m] = cur->len;
    for (size_t q = 0; q < m; q++) /* this step's arrivals, for the steps to come */
      g_array_append_vals(pend[(q / n) * n + dst[q]], &g_array_index(cur, uint32_t, off[q]), off[q + 1] - off[q]);
  }
  for (size_t q = 0; q < m; q++) g_array_free(pend[q], TRUE);
  g_free(pend);
  g_free(sent);
  g_free(off);
  g_free(dst);
  g_array_free(cur, TRUE);
  g_array_free(deps, TRUE);
}

/* One send stream per (rank, channel): the pieces of `bytes` from s to r,
** after `after` (SENT) on the same channel; returns the last piece. */
static uint32_t stream(Ex *x, uint32_t s, uint32_t r, uint64_t bytes, uint32_t after, unsigned first, int row) {
  uint32_t last = after;
  for (uint64_t j = 0, P = ceil_div(bytes, x->chunk); j < P && !x->over; j++) {
    uint32_t dep = last == FAB_OP_NONE ? FAB_OP_NONE : last | FAB_DEP_SENT;
    last = flow(x, s, r, piece_size(bytes, x->chunk, j), j == 0 ? first : 0, row, &dep, 1);
  }
  return last;
}

static void pairwise(Ex *x, uint64_t bytes) {
  uint32_t n = x->n;
  if (n < 2 || bytes == 0) return;
  uint32_t C = chans(x, part(x, bytes, n, n - 1), 1); /* the smallest block decides */
  uint32_t *last = g_new(uint32_t, (size_t)C * n);
  memset(last, 0xff, (size_t)C * n * sizeof *last);
  for (uint32_t k = 1; k < n && !x->over; k++)
    for (uint32_t c = 0; c < C; c++)
      for (uint32_t i = 0; i < n; i++) {
        uint32_t to = (i + k) % n;
        uint64_t b = part(x, part(x, bytes, n, to), C, c);
        if (b == 0) continue;
        unsigned first = F_READY | (k == 1 ? F_LAT | F_BASE : 0);
        uint32_t l = stream(x, i, to, b, last[(size_t)c * n + i], first, ROW_RING);
        last[(size_t)c * n + i] = l;
      }
  g_free(last);
}

static void send_recv(Ex *x, uint64_t bytes) {
  uint32_t n = x->n;
  if (n < 2 || bytes == 0) return;
  uint32_t C = chans(x, bytes, 1);
  for (uint32_t c = 0; c < C; c++)
    for (uint32_t i = 0; i < n; i++)
      stream(x, i, (i + 1) % n, part(x, bytes, C, c), FAB_OP_NONE, F_FIRST | F_BASE, ROW_RING);
}

/* ------------------------------------------------------------------------ */
/* The algorithms. */

static gboolean fail(GError **err, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static gboolean fail(GError **err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error_literal(err, FAB_CFG_ERROR, FAB_CFG_ERROR_VALUE, msg);
  g_free(msg);
  return FALSE;
}

/* Ranks grouped by node (or domain), all groups of one size: returns the
** size, 0 when uneven. */
static uint32_t even_groups(const Groups *g) {
  uint32_t L = group_size(g, 0);
  for (uint32_t m = 1; m < g->ng; m++)
    if (group_size(g, m) != L) return 0;
  return L;
}

static void run_nvls(Ex *x) {
  uint32_t group = x->d->groups++;
  for (uint32_t i = 0; i < x->n; i++) nvls_op(x, i, group, x->c->bytes, ROW_NVLS);
}

static void run_nvls_tree(Ex *x, const Groups *dom, uint32_t G, uint32_t *end) {
  uint64_t S = x->c->bytes;
  for (uint32_t m = 0; m < dom->ng; m++) {
    uint32_t group = x->d->groups++;
    for (uint32_t l = 0; l < G; l++) nvls_op(x, dom->mem[dom->off[m] + l], group, S, ROW_NVLS_TREE);
  }
  phase_end(x, FAB_MARK_JOIN, NULL);
  uint32_t D = dom->ng, *mem = g_new(uint32_t, D);
  for (uint32_t l = 0; l < G && !x->over; l++) {
    for (uint32_t m = 0; m < D; m++) mem[m] = dom->mem[dom->off[m] + l];
    tree(x, mem, D, part(x, S, G, l), false, ROW_NVLS_TREE, false);
  }
  g_free(mem);
  phase_end(x, FAB_MARK_JOIN, NULL);
  for (uint32_t m = 0; m < D && !x->over; m++)
    for (uint32_t l = 0; l < G; l++) {
      uint64_t shard = part(x, S, G, l);
      uint32_t C = chans(x, shard, 1), from = dom->mem[dom->off[m] + l];
      for (uint32_t q = 1; q < G; q++)
        for (uint32_t c = 0; c < C; c++) {
          uint64_t b = part(x, shard, C, c);
          if (b) stream(x, from, dom->mem[dom->off[m] + (l + q) % G], b, FAB_OP_NONE, F_FIRST, ROW_RING);
        }
    }
  phase_end(x, FAB_MARK_COLL_END, end);
}

static void run_hierarchical(Ex *x, const Groups *nodes, uint32_t L, uint32_t *end) {
  uint64_t S = x->c->bytes;
  FabCollOp op = x->c->op;
  uint32_t N = nodes->ng, *mem = g_new(uint32_t, N);
  bool base = true;
  /* inside every node: reduce-scatter (allreduce, reduce-scatter) */
  if (L > 1 && op != FAB_COLL_ALLGATHER) {
    for (uint32_t m = 0; m < N && !x->over; m++) ring(x, nodes->mem + nodes->off[m], L, S, L - 1, L - 1, base);
    phase_end(x, FAB_MARK_JOIN, NULL);
    base = false;
  }
  /* across nodes, among the ranks of one local index, on that index's shard */
  if (N > 1) {
    for (uint32_t l = 0; l < L && !x->over; l++) {
      for (uint32_t m = 0; m < N; m++) mem[m] = nodes->mem[nodes->off[m] + l];
      uint32_t steps = op == FAB_COLL_ALLREDUCE ? 2 * (N - 1) : N - 1;
      uint32_t red = op == FAB_COLL_ALLGATHER ? 0 : N - 1;
      ring(x, mem, N, part(x, S, L, l), steps, red, base);
    }
    phase_end(x, FAB_MARK_JOIN, NULL);
    base = false;
  }
  /* inside every node: allgather (allreduce, allgather) */
  if (L > 1 && op != FAB_COLL_REDUCE_SCATTER)
    for (uint32_t m = 0; m < N && !x->over; m++) ring(x, nodes->mem + nodes->off[m], L, S, L - 1, 0, base);
  phase_end(x, FAB_MARK_COLL_END, end);
  g_free(mem);
}

/* ---- collnet hook ------------------------------------------------------ */
/* Where the in-network (SHARP) reduction will generate its ops, once the
** switch models it (fabric.switch.sharp): it receives exactly what
** fab_coll_expand() received and answers the same way (the FabCollDef index,
** or -1 + err). Until then it reports that it is not there. */
static int32_t collnet_expand(FabDag *d, const FabCollEnv *env, const FabCollSpec *c, const uint32_t *start,
                              uint32_t *end, GError **err) {
  (void)d, (void)env, (void)c, (void)start, (void)end;
  fail(err, "collnet (SHARP in-network reduction) is not available: its operations are not generated yet "
            "(fabric.switch.sharp is not modelled yet)");
  return -1;
}

/* ------------------------------------------------------------------------ */
/* What the cost model knows of a collective's placement. */

typedef struct Topo {
  uint32_t n;
  uint32_t nodes;     /* distinct nodes (endpoint / gpus_per_node) */
  uint32_t islands;   /* distinct NVLink domains; every endpoint its own without NVLink */
  uint32_t domains;   /* distinct NVLink domains (0 without NVLink) */
  uint32_t per_node;  /* ranks per node if even, else 0 */
  uint32_t per_domain;/* ranks per domain if even, else 0 */
  double net, nvl;    /* bytes/s */
} Topo;

static uint32_t count_groups(const FabCollEnv *env, const FabCollSpec *c, uint32_t per, uint32_t *even) {
  uint32_t *mem = g_new(uint32_t, c->nranks);
  for (uint32_t i = 0; i < c->nranks; i++) mem[i] = i;
  Groups g;
  groups_make(&g, c->ranks, mem, c->nranks, per);
  uint32_t ng = g.ng;
  if (even) *even = even_groups(&g);
  groups_free(&g);
  g_free(mem);
  return ng;
}

static void topo_make(Topo *t, const FabCollEnv *env, const FabCollSpec *c) {
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

static int isl_idx(uint32_t islands) { return islands <= 1 ? 0 : islands == 2 ? 1 : 2; }

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
static uint32_t auto_channels(const Topo *t, FabCollAlgo a, FabProto p, uint64_t bytes) {
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
  int pi = pidx(p);
  bool ar = op == FAB_COLL_ALLREDUCE, chainy = op == FAB_COLL_BROADCAST || op == FAB_COLL_REDUCE;
  uint32_t nsteps = ar ? 2 * (k - 1) : chainy ? k : k - 1;
  double ppn = (double)k / isl;
  LatBw r = {base_lat[ROW_RING][pi], 0};
  if (chainy) {
    /* NCCL charges a chain a tree-like latency per step for Simple */
    int row = p == FAB_PROTO_SIMPLE ? ROW_TREE : ROW_RING;
    r.lat += nsteps * hw_lat[isl > 1 ? HW_NET : HW_NVL][row][pi];
  } else {
    double intra = hw_lat[HW_NVL][ROW_RING][pi];
    double inter = hw_lat[HW_NET][ppn <= 1 ? ROW_TREE : ROW_RING][pi]; /* one rank per node: not hidden */
    if (isl > 1) intra = MAX(intra, p == FAB_PROTO_SIMPLE ? 3.0 : 1.0); /* network post overhead */
    uint32_t ninter = isl <= 1 ? 0 : ar ? 2 * (isl - 1) : isl - 1;
    ninter = MIN(ninter, nsteps);
    r.lat += (nsteps - ninter) * intra + ninter * inter;
    if (ar && p == FAB_PROTO_SIMPLE && isl > 1 && bytes / ((uint64_t)C * k) >= 64) r.lat *= 1.4; /* plateau */
  }
  double bus = MIN(link, C * PERCH_BPS) / 1e9;
  if (p == FAB_PROTO_LL) bus = MIN(ll_max_bw[isl_idx(isl)], bus * 0.5);
  if (p == FAB_PROTO_LL128) bus = MIN(bus * 0.92, C * perch_ring_ll128[isl_idx(isl)]);
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
  int pi = pidx(p);
  uint32_t n = t->n;
  double eff = p == FAB_PROTO_LL ? 0.5 : p == FAB_PROTO_LL128 ? 120.0 / 128 : 1;
  bool cross = t->islands > 1;
  double lat = base_lat[ROW_RING][pi] + hw_lat[cross ? HW_NET : HW_NVL][ROW_RING][pi];
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

static bool proto_ok(FabCollAlgo a, FabProto p) {
  return p == FAB_PROTO_SIMPLE ||
         !(a == FAB_ALGO_NVLS || a == FAB_ALGO_NVLS_TREE || a == FAB_ALGO_PAT || a == FAB_ALGO_COLLNET);
}

/* The model's time (s) of `op` with algorithm a, protocol p, C channels;
** HUGE_VAL when a cannot run it here. */
static double model(const FabCollEnv *env, const Topo *t, FabCollOp op, FabCollAlgo a, FabProto p, uint32_t C,
                    uint64_t bytes) {
  uint32_t n = t->n;
  if (n < 2) return 0;
  if (!proto_ok(a, p)) return HUGE_VAL;
  int pi = pidx(p);
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
    double intra = hw_lat[nvl_in ? HW_NVL : HW_NET][ROW_TREE][pi];
    double inter = hw_lat[t->islands <= 1 ? HW_NVL : HW_NET][ROW_TREE][pi];
    LatBw m = {base_lat[ROW_TREE][pi] + 2 * ((ppn - 1) * intra + log2i(N) * inter), 0};
    int ii = isl_idx(t->islands);
    double bus = MIN(link / 1e9 * 0.92, C * perch_tree[ii]);
    if (p == FAB_PROTO_LL) bus = MIN(bus / 3.8, ll_max_bw[ii]);
    if (p == FAB_PROTO_LL128) bus = MIN(bus * (t->islands <= 1 ? 7.0 / 9 : 120.0 / 128), C * perch_tree_ll128[ii]);
    m.bw = bus * 0.5;
    int ls = log2i(bytes >> 6);
    if (ls >= 0 && ls < 23) m.bw *= tree_correction[pi][ls];
    return seconds(m, bytes);
  }
  case FAB_ALGO_NVLS: {
    if (!ar || t->domains != 1 || t->nvl <= 0) return HUGE_VAL;
    LatBw m = {hw_lat[HW_NVL][ROW_NVLS][2], 2 * nvls_efficiency * t->nvl / 1e9 * n / (2.0 * (n - 1))};
    return seconds(m, bytes);
  }
  case FAB_ALGO_NVLS_TREE: {
    if (!ar || t->domains < 2 || t->per_domain < 2 || t->nvl <= 0) return HUGE_VAL; /* NVLS needs 2+ per domain */
    uint32_t D = t->domains;
    double intra = 2 * nvls_efficiency * t->nvl / 1e9;
    double inter = (double)t->per_domain * t->net / 1e9 * (D <= 2 ? 2 : 1);
    double bus = MIN(MIN(intra, inter), C * perch_nvls_tree[isl_idx(D)]);
    LatBw m = {hw_lat[HW_NVL][ROW_NVLS_TREE][2] + 2 * log2i(D) * hw_lat[HW_NET][ROW_NVLS_TREE][2],
               bus * n / (2.0 * (n - 1))};
    return seconds(m, bytes);
  }
  case FAB_ALGO_PAT: {
    if (!agrs) return HUGE_VAL;
    LatBw m = {base_lat[ROW_PAT][2] + log2i(MAX(t->nodes, 1u)) * (hw_lat[HW_NET][ROW_TREE][2] / 3.5) + n * 2.8,
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
    LatBw m = {hw_lat[HW_NET][ROW_COLLNET][2] +
                   2 * ((ppn > 1 ? 1 : 0) * hw_lat[HW_NVL][ROW_COLLNET][2] + (ppn - 1) * 0.4),
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
  topo_make(&t, env, c);
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
      uint32_t C = c->channels ? c->channels : auto_channels(&t, algs[i], p, c->bytes);
      double tt = model(env, &t, c->op, algs[i], p, C, c->bytes);
      if (tt < best) best = tt, ba = algs[i], bp = p;
    }
  }
  c->algorithm = ba;
  c->protocol = bp;
  if (!c->channels) c->channels = auto_channels(&t, ba, bp, c->bytes);
  return best;
}

double fab_coll_model_time(const FabCollEnv *env, const FabCollSpec *c) {
  FabCollSpec s = *c;
  if (s.algorithm == FAB_ALGO_AUTO || s.protocol == FAB_PROTO_AUTO) return fab_coll_tune(env, &s);
  Topo t;
  topo_make(&t, env, &s);
  uint32_t C = s.channels ? s.channels : auto_channels(&t, s.algorithm, s.protocol, s.bytes);
  return model(env, &t, s.op, s.algorithm, s.protocol, C, s.bytes);
}

double fab_coll_busbw_factor(FabCollOp op, uint32_t n) {
  return n ? fab_busbw_factor(fab_coll_op_names[op], n) : 0;
}

/* ------------------------------------------------------------------------ */
/* The expansion. */

/* NCCL's pipelining unit for algorithm a, protocol p (see the top). */
static uint64_t default_chunk(const Ex *x, const Topo *t) {
  if (x->proto == FAB_PROTO_LL) return 32768;
  if (x->proto == FAB_PROTO_LL128 && x->algo == FAB_ALGO_TREE) {
    /* NCCL halves an LL128 tree's step (614400 bytes of lines) while a
    ** channel holds few pieces per tree step (enqueue.cc: nstepsLL128 =
    ** 1 + log2 nNodes + 0.1 ppn; while nBytes / (nChannels x chunk) <
    ** nsteps x 64 / ppn, down to 128 KiB; < nsteps x 16 / ppn, down to
    ** 32 KiB of lines); the data is 120 of every 128 bytes */
    uint64_t ch = 614400, per = x->c->bytes / MAX(x->channels, 1u);
    uint32_t N = MAX(t->nodes, 1u);
    double ppn = (double)t->n / N, nsteps = 1 + MAX(log2i(N), 0) + 0.1 * ppn;
    while ((double)(per / ch) < nsteps * 64 / ppn && ch > 131072) ch /= 2;
    while ((double)(per / ch) < nsteps * 16 / ppn && ch > 32768) ch /= 2;
    return ch / 128 * 120;
  }
  if (x->proto == FAB_PROTO_LL128) return 576000;
  FabCollOp op = x->c->op;
  switch (x->algo) {
  case FAB_ALGO_RING:
    if (op == FAB_COLL_SEND_RECV) break;
    return op == FAB_COLL_BROADCAST || op == FAB_COLL_REDUCE ? 524288 : 1048576;
  case FAB_ALGO_HIERARCHICAL:
    return 1048576;
  case FAB_ALGO_TREE:
  case FAB_ALGO_NVLS_TREE: {
    /* NCCL halves a Simple tree's chunk while a channel holds few pieces per tree level */
    uint64_t ch = 524288, per = x->c->bytes / MAX(x->channels, 1u);
    uint32_t N = MAX(t->nodes, 1u), depth = t->n / N - 1 + (uint32_t)MAX(log2i(N), 0);
    depth = MAX(depth, 1u);
    while (per / ch < (uint64_t)depth * 8 && ch > 131072) ch /= 2;
    while (per / ch < (uint64_t)depth * 4 && ch > 65536) ch /= 2;
    while (per / ch < (uint64_t)depth && ch > 32768) ch /= 2;
    return ch;
  }
  case FAB_ALGO_NVLS:
    return MAX(x->c->bytes, 1);
  default:
    break;
  }
  if (x->algo == FAB_ALGO_PAT) return 524288;
  return t->domains == 1 ? 524288 : 131072; /* p2p: NCCL_P2P_NVL_CHUNKSIZE / NCCL_P2P_NET_CHUNKSIZE */
}

/* An upper bound of the pieces of `bytes` cut into at most `parts` parts,
** then into chunks. */
static double pcs(const Ex *x, double bytes, double parts) {
  if (bytes < 1) return 0;
  return MIN(parts, bytes / x->unit) + bytes / (double)x->chunk;
}

/* The exact pieces of `bytes` cut into a parts (channels), each into b parts,
** each into chunks, as part() cuts: two sizes at each level. */
static double pieces2(const Ex *x, uint64_t bytes, uint64_t a, uint64_t b) {
  uint64_t U = bytes / x->unit, qa = U / a, ra = U % a;
  double tot = 0;
  for (int big = 0; big < 2; big++) {
    uint64_t cnt = big ? ra : a - ra, Uc = qa + big, qb = Uc / b, rb = Uc % b;
    if (!cnt) continue;
    tot += (double)cnt * ((double)rb * ceil_div((qb + 1) * x->unit, x->chunk) +
                          (double)(b - rb) * ceil_div(qb * x->unit, x->chunk));
  }
  return tot;
}

/* How many ops the expansion makes, at most. */
static double estimate(const Ex *x, uint32_t G, uint32_t L) {
  double n = x->n, S = (double)x->c->bytes, C = x->channels, u = x->unit, f = 0;
  uint64_t B = x->c->bytes;
  FabCollOp op = x->c->op;
  switch (x->algo) {
  case FAB_ALGO_RING:
    if (op == FAB_COLL_ALLREDUCE) f = 2 * (n - 1) * pieces2(x, B, x->channels, x->n);
    else if (op == FAB_COLL_ALLGATHER || op == FAB_COLL_REDUCE_SCATTER) f = (n - 1) * pieces2(x, B, x->channels, x->n);
    else if (op == FAB_COLL_SEND_RECV) f = n * pieces2(x, B, x->channels, 1);
    else f = (n - 1) * pieces2(x, B, x->channels, 1);
    break;
  case FAB_ALGO_TREE:
    f = 2 * (n - 1) * pieces2(x, B, x->channels, 2);
    break;
  case FAB_ALGO_NVLS:
    f = n;
    break;
  case FAB_ALGO_NVLS_TREE: {
    double D = n / MAX(G, 1u);
    f = n + G * 2 * (D - 1) * pcs(x, S / G + u, 2 * C) + n * (G - 1) * pcs(x, S / G + u, C);
    break;
  }
  case FAB_ALGO_HIERARCHICAL: {
    double N = n / MAX(L, 1u);
    f = 2 * N * (L - 1) * pieces2(x, B, x->channels, L) + L * 2 * (N - 1) * pcs(x, S / L + u, C * N);
    break;
  }
  case FAB_ALGO_PAT:
    for (uint32_t d = 1; d < x->n; d <<= 1) f += n * pcs(x, MIN(d, x->n - d) * (S / n + u), C);
    break;
  case FAB_ALGO_PAIRWISE:
    f = n * (n - 1) * pcs(x, S / n + u, C);
    break;
  default:
    break;
  }
  return f + 4 * n; /* BEGIN, END, up to two joins */
}

/* The algorithm can run op here? (err when not) */
static gboolean check(const Ex *x, const Topo *t, const Groups *nodes, const Groups *dom, GError **err) {
  const FabCollEnv *env = x->env;
  FabCollOp op = x->c->op;
  FabCollAlgo a = x->algo;
  const char *an = fab_coll_algo_names[a], *pn = fab_proto_names[x->proto];
  if (op == FAB_COLL_ALL_TO_ALL && a != FAB_ALGO_PAIRWISE)
    return fail(err, "all-to-all runs the pairwise algorithm only (not %s)", an);
  if (op == FAB_COLL_SEND_RECV && a != FAB_ALGO_RING)
    return fail(err, "send-recv runs with algorithm auto or ring (not %s)", an);
  switch (a) {
  case FAB_ALGO_TREE:
    if (op != FAB_COLL_ALLREDUCE) return fail(err, "tree runs allreduce only, as in NCCL (not %s)", fab_coll_op_names[op]);
    break;
  case FAB_ALGO_NVLS:
    if (op != FAB_COLL_ALLREDUCE) return fail(err, "nvls runs allreduce only (not %s)", fab_coll_op_names[op]);
    if (!env->nvl_domain || t->nvl <= 0) return fail(err, "nvls needs an NVLink domain, and this cluster has none");
    if (t->domains != 1) {
      uint32_t i = 1;
      while (!(x->ep[i] / env->nvl_domain != x->ep[0] / env->nvl_domain)) i++;
      return fail(err, "nvls needs all ranks in one NVLink domain, but rank 0 (endpoint %u) and rank %u (endpoint "
                  "%u) are in different domains of %u: use nvls-tree across domains", x->ep[0], i, x->ep[i],
                  env->nvl_domain);
    }
    break;
  case FAB_ALGO_NVLS_TREE:
    if (op != FAB_COLL_ALLREDUCE) return fail(err, "nvls-tree runs allreduce only (not %s)", fab_coll_op_names[op]);
    if (!env->nvl_domain || t->nvl <= 0) return fail(err, "nvls-tree needs NVLink domains, and this cluster has none");
    if (x->n > 1 && dom->ng < 2)
      return fail(err, "nvls-tree needs ranks in at least two NVLink domains (all %u are in one: use nvls)", x->n);
    if (!even_groups(dom)) return fail(err, "nvls-tree needs the same number of ranks in every NVLink domain");
    if (x->n > 1 && x->n / dom->ng < 2)
      return fail(err, "nvls-tree needs at least 2 ranks in each NVLink domain (here one per domain: use tree or ring)");
    break;
  case FAB_ALGO_HIERARCHICAL:
    if (op != FAB_COLL_ALLREDUCE && op != FAB_COLL_ALLGATHER && op != FAB_COLL_REDUCE_SCATTER)
      return fail(err, "hierarchical runs allreduce, allgather and reduce-scatter only (not %s)",
                  fab_coll_op_names[op]);
    if (!even_groups(nodes)) return fail(err, "hierarchical needs the same number of ranks on every node");
    break;
  case FAB_ALGO_PAT:
    if (op != FAB_COLL_ALLGATHER && op != FAB_COLL_REDUCE_SCATTER)
      return fail(err, "pat runs allgather and reduce-scatter only, as in NCCL (not %s)", fab_coll_op_names[op]);
    break;
  case FAB_ALGO_PAIRWISE:
    if (op != FAB_COLL_ALL_TO_ALL) return fail(err, "pairwise runs all-to-all only (not %s)", fab_coll_op_names[op]);
    break;
  case FAB_ALGO_COLLNET:
    return fail(err, "collnet (SHARP in-network reduction) is not available: fabric.switch.sharp is not modelled yet");
  default:
    break;
  }
  if (!proto_ok(a, x->proto)) return fail(err, "%s runs the simple protocol only, as in NCCL (not %s)", an, pn);
  return TRUE;
}

int32_t fab_coll_expand(FabDag *d, const FabCollEnv *env, const FabCollSpec *c, const uint32_t *start,
                        uint32_t *end, GError **err) {
  g_return_val_if_fail(d && env && c && c->op < FAB_COLL_N && c->algorithm < FAB_ALGO_N && c->protocol < FAB_PROTO_N,
                       -1);
  uint32_t n = c->nranks;
  if (n == 0 || !c->ranks) return fail(err, "a collective needs at least one rank"), -1;
  if ((c->op == FAB_COLL_BROADCAST || c->op == FAB_COLL_REDUCE) && c->root >= n)
    return fail(err, "%s root %u is not a rank (0..%u)", fab_coll_op_names[c->op], c->root, n - 1), -1;
  for (uint32_t i = 0; i < n; i++)
    if (env->endpoints && c->ranks[i] >= env->endpoints)
      return fail(err, "rank %u is endpoint %u, which does not exist (0..%u)", i, c->ranks[i], env->endpoints - 1), -1;
  {
    KeyPos *a = g_new(KeyPos, n);
    for (uint32_t i = 0; i < n; i++) a[i] = (KeyPos){c->ranks[i], i};
    qsort(a, n, sizeof *a, keypos_cmp);
    for (uint32_t i = 1; i < n; i++)
      if (a[i].key == a[i - 1].key) {
        fail(err, "ranks %u and %u are both endpoint %u", a[i - 1].pos, a[i].pos, (uint32_t)a[i].key);
        g_free(a);
        return -1;
      }
    g_free(a);
  }
  if (c->algorithm == FAB_ALGO_COLLNET && env->collnet) return collnet_expand(d, env, c, start, end, err);

  FabCollSpec s = *c;
  if (s.algorithm == FAB_ALGO_AUTO || s.protocol == FAB_PROTO_AUTO || !s.channels) fab_coll_tune(env, &s);
  Topo t;
  topo_make(&t, env, &s);
  uint32_t dt = c->dtype_bytes ? c->dtype_bytes : 1;
  Ex x = {.d = d, .env = env, .c = c, .algo = s.algorithm, .proto = s.protocol, .n = n, .ep = c->ranks,
          .channels = MAX(s.channels, 1u), .unit = c->bytes % dt == 0 ? dt : 1, .exposed = t.nodes >= n};
  if (x.proto == FAB_PROTO_LL) /* LL moves at most ll_max_bw of data per rank (NCCL's llMaxBws), twice that on the
                               ** wire, over all its channels: a GPU-side limit the wire alone would not give */
    x.cap_bps = (uint64_t)(2 * ll_max_bw[isl_idx(t.islands)] * 8e9);
  uint32_t *all = g_new(uint32_t, n);
  for (uint32_t i = 0; i < n; i++) all[i] = i;
  Groups nodes, dom;
  groups_make(&nodes, c->ranks, all, n, env->gpus_per_node);
  groups_make(&dom, c->ranks, all, n, env->nvl_domain ? env->nvl_domain : 1);
  int32_t id = -1;
  if (!check(&x, &t, &nodes, &dom, err)) goto out;

  x.chunk = c->chunk ? c->chunk : default_chunk(&x, &t);
  {
    uint32_t G = env->nvl_domain ? even_groups(&dom) : 1, L = even_groups(&nodes);
    double est = estimate(&x, G, L);
    while (est > FAB_COLL_MAX_OPS && !c->channels && x.channels > 1) {
      x.channels = (x.channels + 1) / 2;
      est = estimate(&x, G, L);
    }
    while (est > FAB_COLL_MAX_OPS && !c->chunk && x.chunk < c->bytes) {
      x.chunk *= 2;
      est = estimate(&x, G, L);
    }
    if (est > FAB_COLL_MAX_OPS) {
      fail(err, "this %s over %u ranks (%s, %s) expands to about %.0f operations, more than %u: raise chunk "
           "(now %" G_GUINT64_FORMAT " bytes) or lower channels (now %u)", fab_coll_op_names[c->op], n,
           fab_coll_algo_names[x.algo], fab_proto_names[x.proto], est, FAB_COLL_MAX_OPS, x.chunk, x.channels);
      goto out;
    }
  }

  /* the collective as the reports see it (nccl-tests' count column) */
  uint64_t elems = c->bytes / dt;
  if (c->op == FAB_COLL_ALLGATHER || c->op == FAB_COLL_REDUCE_SCATTER) elems = elems / (4ull * n) * 4; /* ALIGN 4 */
  else if (c->op == FAB_COLL_ALL_TO_ALL) elems /= n;
  FabCollDef def = {.op = fab_coll_op_names[c->op], .algorithm = fab_coll_algo_names[x.algo],
                    .protocol = fab_proto_names[x.proto], .tag = c->tag, .bytes = c->bytes,
                    .count = (uint32_t)MIN(elems, (uint64_t)UINT32_MAX), .dtype_bytes = dt, .nranks = n,
                    .root = (c->op == FAB_COLL_BROADCAST || c->op == FAB_COLL_REDUCE) ? (int32_t)c->root : -1,
                    .channels = x.channels, .chunk = x.chunk, .job = c->job, .step = c->step};
  uint32_t ops0 = fab_dag_len(d), deps0 = d->deps->len, colls0 = d->colls->len, groups0 = d->groups;
  x.coll = fab_dag_coll(d, &def);
  x.limit = ops0 + FAB_COLL_MAX_OPS + 4 * n; /* the estimate is a bound; this is the backstop */
  x.ready = g_new(uint32_t, n);
  x.meta = g_array_new(FALSE, FALSE, sizeof(Meta));
  x.tmp = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  for (uint32_t i = 0; i < n; i++) {
    uint32_t dep = start ? start[i] : FAB_OP_NONE;
    x.ready[i] = mark_op(&x, i, FAB_MARK_COLL_BEGIN, &dep, 1);
  }
  x.phase0 = fab_dag_len(d);
  uint32_t *endv = end ? end : g_new(uint32_t, n);
  uint64_t S = c->bytes;
  bool ar = c->op == FAB_COLL_ALLREDUCE;
  switch (x.algo) {
  case FAB_ALGO_RING:
    if (c->op == FAB_COLL_BROADCAST || c->op == FAB_COLL_REDUCE) chain(&x, c->root, S, c->op == FAB_COLL_REDUCE);
    else if (c->op == FAB_COLL_SEND_RECV) send_recv(&x, S);
    else ring(&x, all, n, S, ar ? 2 * (n - 1) : n - 1, c->op == FAB_COLL_ALLGATHER ? 0 : n - 1, true);
    phase_end(&x, FAB_MARK_COLL_END, endv);
    break;
  case FAB_ALGO_TREE:
    tree(&x, all, n, S, env->gpus_per_node > 1, ROW_TREE, true);
    phase_end(&x, FAB_MARK_COLL_END, endv);
    break;
  case FAB_ALGO_NVLS:
    if (n > 1 && S) run_nvls(&x);
    phase_end(&x, FAB_MARK_COLL_END, endv);
    break;
  case FAB_ALGO_NVLS_TREE:
    if (n > 1 && S) run_nvls_tree(&x, &dom, even_groups(&dom), endv);
    else phase_end(&x, FAB_MARK_COLL_END, endv);
    break;
  case FAB_ALGO_HIERARCHICAL:
    run_hierarchical(&x, &nodes, even_groups(&nodes), endv);
    break;
  case FAB_ALGO_PAT:
    pat(&x, S, c->op == FAB_COLL_REDUCE_SCATTER);
    phase_end(&x, FAB_MARK_COLL_END, endv);
    break;
  case FAB_ALGO_PAIRWISE:
    pairwise(&x, S);
    phase_end(&x, FAB_MARK_COLL_END, endv);
    break;
  default:
    g_assert_not_reached();
  }
  if (x.over) { /* the estimate missed: undo everything this call added */
    g_array_set_size(d->ops, ops0);
    g_array_set_size(d->deps, deps0);
    g_array_set_size(d->colls, colls0);
    d->groups = groups0;
    fail(err, "this %s over %u ranks expands to more than %u operations: raise chunk (now %" G_GUINT64_FORMAT
         " bytes) or lower channels (now %u)", fab_coll_op_names[c->op], n, FAB_COLL_MAX_OPS, x.chunk, x.channels);
  } else {
    id = x.coll;
  }
  if (!end) g_free(endv);
  g_free(x.ready);
  g_array_free(x.meta, TRUE);
  g_array_free(x.tmp, TRUE);
out:
  groups_free(&nodes);
  groups_free(&dom);
  g_free(all);
  return id;
}

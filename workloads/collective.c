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
**                 of one are leaves of the other; a channel carries one: the
**                 search's channels tree 0, NCCL's copies of them tree 1. Pieces go up (a node sends piece j to its parent
**                 when piece j arrived from all its children, and the parent
**                 reduces it) and back down from the root, pipelined. With
**                 several GPUs per node the tree joins nodes and a chain runs
**                 inside each node (NVLink), headed by the same local GPU in
**                 every node, rotating with channel and tree.
**   nvls          inside one NVLink domain, loop by loop per channel, an
**                 NVLS op per rank and loop (RS for reduce-scatter, AG for
**                 allgather, AR for allreduce: the switch reduces, each
**                 owner multicasts; coll_nvls.c, models/nvls.h).
**   nvls-tree     NCCL's NVLS_TREE, chunk by chunk (coll_algos.c): in each
**                 domain the switch reduces a loop's data onto G heads, the
**                 heads of one local index run a double binary tree across
**                 the domains, and each head multicasts the result into its
**                 domain; a domain's loops one after another, the tree's
**                 through the connections' slots.
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
**   pairwise      all-to-all as NCCL schedules a group's sends and
**                 receives (coll_p2p.c): NCCL's rounds of peers, each
**                 round's op on its p2p channels, the rounds of one group
**                 of 8 together on a channel (sharing its SM), the next
**                 group after them; so every peer is under way at once.
**                 RCCL's GPUs take RCCL's channels per peer in the same
**                 schedule (tuner.c fab_coll__p2p_setup).
**   send-recv     rank i sends `bytes` to rank (i+1) mod n (sendrecv_perf), as NCCL's p2p: pairwise's path.
**   nvls across nodes, collnet-direct, collnet-chain
**                 allreduce over the fabric's SHARP trees (coll_algos.c):
**                 each node's data reduced onto its heads (by the NVSwitch,
**                 by direct flows, or up a chain per channel), the heads'
**                 parts reduced across the nodes in the switches, the
**                 result handed back inside each node, piece by piece.
**                 Each communicator of heads needs a tree
**                 (FabCollEnv.sharp_claim): without one it falls back to
**                 what the tuner picks without SHARP, or fails. `collnet`
**                 is the tuner's choice among the three.
**   ce            NCCL's copy-engine allgather and all-to-all (ce_coll.cc),
**                 inside one NVLink domain: a barrier of flags, every
**                 rank's copies to all its peers at once, a second barrier
**                 after its copies landed (coll_algos.c). No channels, no
**                 slots, no protocol: the copy engines write the peers'
**                 buffers directly.
**
** Protocols (NCCL's LL, LL128, Simple) cost three things. Bandwidth: LL moves
** 8 data bytes in every 16 on the wire, LL128 120 in every 128, Simple all of
** them, so a flow's `bytes` grow by 2 or by 128/120. GPU throughput: a
** channel's flow runs at most at the protocol's per-channel rate
** (env->costs.channel_bps, NCCL's per-channel SM ceilings), and LL's flows of
** one rank share LL's ceiling. Latency: physical costs, not the tuner's
** constants (env->costs, tuner.c gives their sources): the first piece of
** every step on a connection is posted after the protocol's step cost
** (flag and fence work), plus over the network the proxy's post and
** completion and, for Simple, the receiver's flush; a rank's first piece
** also pays the kernel launch. The wire itself is the fabric's. Later
** pieces stream behind the first, at most `window` pieces in flight on a
** connection (NCCL_STEPS slots). A ring connection is first in,
** first out: a step's first piece also waits for the previous step's last
** piece to leave (NCCL's primitives run one step after the other). The default piece is NCCL's
** pipelining unit: Simple a slice of NCCL_BUFFSIZE (4 MiB) / NCCL_STEPS (8)
** = 512 KiB x SLICESTEPS (2 for ring allreduce, allgather, reduce-scatter: 1
** MiB; 1 for chains and trees, whose Simple step NCCL 2.20 and later no
** longer halve for small data); LL one step of its
** 512 KiB buffer, 64 KiB of lines = 32 KiB of data; LL128 one step of its
** 4.7 MB buffer, 614400 bytes = 576000 of data (a tree's halved, as NCCL
** does, while a channel holds few pieces per tree step: down to 17280 bytes
** of data, 18432 of lines, so the pieces pipeline up and down the tree instead of
** crossing every level whole); p2p (pairwise, send-recv)
** NCCL_P2P_NET_CHUNKSIZE 128 KiB, or NCCL_P2P_NVL_CHUNKSIZE 512 KiB inside
** one NVLink domain.
**
** Reduction: a flow whose data the receiver reduces (ring reduce-scatter
** steps, tree up, the reduce chain, the reduce parts of hierarchical and
** PAT) is done bytes / env->reduce_Bps after it arrived (its `post`).
**
** Everything is deterministic: groups of ranks are found by sorting, never by
** hashing, and ops are emitted in a fixed loop order.
*/
#include "collective.h"
#include "coll_int.h"
#include "sim/config.h"
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const fab_coll_op_names[FAB_COLL_N + 1] = {"allreduce", "allgather", "reduce-scatter", "broadcast",
                                                       "reduce", "all-to-all", "send-recv", NULL};
const char *const fab_coll_algo_names[FAB_ALGO_N + 1] = {"auto", "ring", "tree", "nvls", "nvls-tree", "hierarchical",
                                                         "pat", "pairwise", "collnet", "ce", "collnet-direct",
                                                         "collnet-chain", NULL};
const char *const fab_proto_names[FAB_PROTO_N + 1] = {"auto", "simple", "ll128", "ll", NULL};
const char *const fab_cta_policy_names[3] = {"default", "zero", NULL};

/* The wire bytes of `payload` under protocol `p`. */
static uint64_t wire_bytes(FabProto p, uint64_t payload) {
  if (p == FAB_PROTO_LL) return fab_coll__ceil_div(payload, 8) * 16; /* whole 16-byte lines of 8 data bytes and
                                                                     ** a flag (NCCL's ncclLLFifoLine) */
  if (p == FAB_PROTO_LL128) return fab_coll__ceil_div(payload * 128, 120); /* 120 data bytes per 128-byte line */
  return payload;
}

/* ------------------------------------------------------------------------ */
/* Groups of ranks (nodes, NVLink domains), found by sorting. */

int fab_coll__keypos_cmp(const void *a, const void *b) {
  const KeyPos *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Group the members mem[0..k) (rank indices) by endpoint / per (per 0:
** every member alone). */
void fab_coll__groups_make(Groups *g, const uint32_t *ep, const uint32_t *mem, uint32_t k, uint32_t per) {
  KeyPos *a = g_new(KeyPos, k), *runs = g_new(KeyPos, k);
  for (uint32_t i = 0; i < k; i++) a[i] = (KeyPos){ep[mem[i]] / (per ? per : 1), i};
  qsort(a, k, sizeof *a, fab_coll__keypos_cmp); /* by key, then position */
  uint32_t nr = 0;
  for (uint32_t i = 0; i < k; i++) /* runs of one key: (first position, start in a[]) */
    if (i == 0 || a[i].key != a[i - 1].key) runs[nr++] = (KeyPos){a[i].pos, i};
  qsort(runs, nr, sizeof *runs, fab_coll__keypos_cmp); /* by first appearance */
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

void fab_coll__groups_free(Groups *g) {
  g_free(g->off);
  g_free(g->mem);
}

/* The expansion context. */

/* Part i of `total` cut into `parts` near-equal parts of whole units. */
uint64_t fab_coll__part(const Ex *x, uint64_t total, uint64_t parts, uint64_t i) {
  uint64_t u = total / x->unit, q = u / parts, r = u % parts;
  return (q + (i < r)) * x->unit;
}

uint64_t fab_coll__a2a_block(const Ex *x, uint64_t bytes, uint32_t i, uint32_t j) {
  return x->c->counts ? x->c->counts[(size_t)i * x->n + j] : fab_coll__part(x, bytes, x->n, j);
}

/* Channels for `bytes` split `parts` ways per channel: never a channel whose
** parts are all empty. */
uint32_t fab_coll__chans(const Ex *x, uint64_t bytes, uint64_t parts) {
  uint64_t per = bytes / x->unit / parts;
  return (uint32_t)MIN((uint64_t)x->channels, MAX(per, 1));
}

bool fab_coll__same_domain(const FabCollEnv *env, uint32_t a, uint32_t b) {
  return env->nvl_domain && a / env->nvl_domain == b / env->nvl_domain;
}

fab_time_t fab_coll__us_ps(double us) { return (fab_time_t)llround(us * 1e6); }

fab_time_t fab_coll__net_msg(const FabNcclCosts *k, FabProto proto) {
  return k->proxy + k->nic_post + (proto == FAB_PROTO_SIMPLE ? k->flush : 0);
}

/* The `pre` of a piece s -> r (counted from its data): the protocol's
** flag and fence work of a step; over the network also the proxy's post and
** completion, the NIC's start, and for Simple the receiver's flush
** (fab_coll__net_msg); on a rank's first step the kernel's launch. The wire
** itself is the fabric's. */

fab_time_t fab_coll__hop_lat(const Ex *x, uint32_t s, uint32_t r, unsigned flags) {
  const FabNcclCosts *k = &x->env->costs;
  if (x->algo == FAB_ALGO_CE) /* no kernel steps: the barrier's flag work, and the start */
    return (flags & F_SYNC ? k->ce_sync : 0) + (flags & F_LAUNCH ? k->launch : 0);
  fab_time_t pre = k->step[fab_coll__pidx(x->proto)];
  if (!fab_coll__same_domain(x->env, x->ep[s], x->ep[r]))
    pre += fab_coll__net_msg(k, x->proto);
  if (flags & F_LAUNCH) pre += k->launch;
  return pre;
}

fab_time_t fab_coll__reduce_ps(const Ex *x, uint64_t bytes) {
  if (x->env->reduce_Bps <= 0) return 0;
  return (fab_time_t)ceil((double)bytes / x->env->reduce_Bps * 1e12);
}

/* The entry of `op` in w (MetaAt, by op), or NULL. */
static Meta *meta_find(GArray *w, uint32_t op) {
  guint lo = 0, hi = w->len;
  while (lo < hi) {
    guint mid = lo + (hi - lo) / 2;
    MetaAt *e = &g_array_index(w, MetaAt, mid);
    if (e->op == op) return &e->m;
    if (e->op < op) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

Meta *fab_coll__meta_at(const Ex *x, uint32_t op) {
  if (op < x->phase0) return NULL;
  if (op < x->meta0) return meta_find(x->residue, op); /* kept past the window, or consumed both ways */
  guint i = op - x->meta0; /* where it is when no other expansion's ops came between */
  if (i < x->meta->len && g_array_index(x->meta, MetaAt, i).op == op) return &g_array_index(x->meta, MetaAt, i).m;
  return meta_find(x->meta, op);
}

static bool consumed(const Meta *m) { return (m->cov & COV_RECV) && (!m->flow || (m->cov & COV_SENT)); }

/* Keep Meta only from op `upto` on: of the ops before it, those not consumed
** both ways move to the residue (the phase's end needs them; a later op may
** still consume them), the others are forgotten. */
void fab_coll__meta_prune(Ex *x, uint32_t upto) {
  if (upto <= x->meta0) return;
  guint k = 0;
  for (; k < x->meta->len && g_array_index(x->meta, MetaAt, k).op < upto; k++) {
    const MetaAt *e = &g_array_index(x->meta, MetaAt, k);
    if (!consumed(&e->m)) g_array_append_val(x->residue, *e);
  }
  g_array_remove_range(x->meta, 0, k);
  x->meta0 = upto;
}

/* Add `o` with deps[0..nd) (+ the ready ops of s and r with F_READY), and
** record which earlier ops of the phase it consumes. */
uint32_t fab_coll__add_op(Ex *x, FabOp *o, uint32_t s, uint32_t r, const uint32_t *deps, uint32_t nd, unsigned flags) {
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
    Meta *m = fab_coll__meta_at(x, dep & ~FAB_DEP_SENT);
    if (!m) continue;
    if (!(dep & FAB_DEP_SENT) && m->r == s) m->cov |= COV_RECV;
    if (m->s == s) m->cov |= COV_SENT;
  }
  uint32_t id = fab_dag_add(x->d, o, (const uint32_t *)x->tmp->data, x->tmp->len);
  MetaAt m = {id, {s, r, 0, o->kind == FAB_OP_FLOW}};
  g_array_append_val(x->meta, m);
  return id;
}

/* The lane of the current channel's network flows: channels enter each node at GPU chan mod G (ring_orders,
** tree_make), so the channels that share an entry GPU take its NICs in turn; p2p's channel c takes the GPU's NIC
** c mod its NICs (src/graph/topo.cc ncclTopoGetLocalNetType). */
static uint8_t chan_lane(const Ex *x) {
  return (uint8_t)((x->p2p_step ? x->chan : x->chan / MAX(x->env->gpus_per_node, 1u)) % 255 + 1);
}

/* A flow of `payload` data bytes from rank s to rank r, after deps[0..nd)
** and the slot conn_deps left in x->slot. Receiver-driven (aws-ofi-nccl's
** RDMA protocol, FabCollEnv.eager_max), a network piece waits for its
** receiver's control message instead: sent when its slot is free (or at
** the receiver's start, for a connection's first window), it is the flow's
** first dependency and the executor adds the message's way (FAB_FLOW_RDV). */
uint32_t fab_coll__flow(Ex *x, uint32_t s, uint32_t r, uint64_t payload, unsigned flags, const uint32_t *deps,
                        uint32_t nd) {
  g_assert(payload > 0 && s != r);
  const FabCollSpec *c = x->c;
  uint32_t buf[16], *all = nd + 2 <= 16 ? buf : g_new(uint32_t, nd + 2), n = 0, slot = x->slot;
  bool net = !fab_coll__same_domain(x->env, x->ep[s], x->ep[r]);
  x->slot = FAB_OP_NONE;
  uint32_t recv_ready = slot != FAB_OP_NONE ? slot : x->ready[r];
  bool rdv = net && payload > x->env->eager_max && recv_ready != FAB_OP_NONE;
  if (rdv) all[n++] = recv_ready;
  if (nd) memcpy(all + n, deps, nd * sizeof *deps); /* deps may be NULL when nd is 0 */
  n += nd;
  if (!rdv && slot != FAB_OP_NONE) all[n++] = slot;
  FabOp o = {.kind = FAB_OP_FLOW, .prio = c->prio, .job = c->job, .step = c->step, .src = x->ep[s], .dst = x->ep[r],
             .coll = x->coll, .bytes = wire_bytes(x->proto, payload), .start = c->start,
             .pre = fab_coll__hop_lat(x, s, r, flags),
             .post = (flags & F_REDUCE) ? fab_coll__reduce_ps(x, payload) : 0, .rank_bps = x->cap_bps,
             .max_bps = net && x->net_bps && fab_coll__node(x, s) != fab_coll__node(x, r) && (!x->flow_bps || x->net_bps < x->flow_bps)
                        ? x->net_bps : x->flow_bps, /* the lower: a p2p op's warps may be */
             .lane = net ? chan_lane(x) : 0, .mark = rdv ? FAB_FLOW_RDV : 0};
  uint32_t id = fab_coll__add_op(x, &o, s, r, all, n, flags);
  if (all != buf) g_free(all);
  return id;
}

uint32_t fab_coll__mark_op(Ex *x, uint32_t i, FabMarkKind kind, const uint32_t *deps, uint32_t nd) {
  const FabCollSpec *c = x->c;
  FabOp o = {.kind = FAB_OP_MARK, .mark = (uint8_t)kind, .prio = c->prio, .job = c->job, .step = c->step,
             .src = x->ep[i], .dst = x->ep[i], .coll = x->coll, .start = c->start};
  return fab_dag_add(x->d, &o, deps, nd);
}

/* The phase's Meta in op order: the residue, then the window. */
static const Meta *phase_meta(const Ex *x, guint k, uint32_t *op) {
  if (k < x->residue->len) {
    const MetaAt *e = &g_array_index(x->residue, MetaAt, k);
    *op = e->op;
    return &e->m;
  }
  const MetaAt *e = &g_array_index(x->meta, MetaAt, k - x->residue->len);
  *op = e->op;
  return &e->m;
}

/* Close the phase: per rank, a mark after its unconsumed arrivals, the last
** pieces of its send chains and its NVLS parts. A JOIN is made only for a
** rank that did something in the phase; the END for every rank (into out[]). */
void fab_coll__phase_end(Ex *x, FabMarkKind kind, uint32_t *out) {
  if (x->over) return;
  uint32_t n = x->n, len = x->residue->len + x->meta->len, op;
  uint32_t *off = g_new0(uint32_t, n + 2);
  for (uint32_t k = 0; k < len; k++) {
    const Meta *m = phase_meta(x, k, &op);
    if (!(m->cov & COV_RECV)) off[m->r + 2]++;
    if (m->flow && !(m->cov & COV_SENT)) off[m->s + 2]++;
  }
  for (uint32_t i = 0; i < n; i++) off[i + 2] += off[i + 1];
  uint32_t *list = g_new(uint32_t, MAX(off[n + 1], 1) + 1);
  for (uint32_t k = 0; k < len; k++) {
    const Meta *m = phase_meta(x, k, &op);
    if (!(m->cov & COV_RECV)) list[off[m->r + 1]++] = op;
    if (m->flow && !(m->cov & COV_SENT)) list[off[m->s + 1]++] = op | FAB_DEP_SENT;
  }
  /* off[i] .. off[i+1] is now rank i's list */
  GArray *deps = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  for (uint32_t i = 0; i < n; i++) {
    uint32_t a = off[i], b = off[i + 1];
    if (kind == FAB_MARK_JOIN && a == b) continue;
    g_array_set_size(deps, 0);
    g_array_append_val(deps, x->ready[i]);
    g_array_append_vals(deps, list + a, b - a);
    x->ready[i] = fab_coll__mark_op(x, i, kind, (const uint32_t *)deps->data, deps->len);
    if (out) out[i] = x->ready[i];
  }
  g_array_free(deps, TRUE);
  g_free(list);
  g_free(off);
  x->phase0 = x->meta0 = fab_dag_len(x->d);
  g_array_set_size(x->meta, 0);
  g_array_set_size(x->residue, 0);
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
uint32_t fab_coll__even_groups(const Groups *g) {
  uint32_t L = fab_coll__group_size(g, 0);
  for (uint32_t m = 1; m < g->ng; m++)
    if (fab_coll__group_size(g, m) != L) return 0;
  return L;
}

/* ------------------------------------------------------------------------ */
/* What the cost model knows of a collective's placement. */

/* An upper bound of the pieces of `bytes` cut into at most `parts` parts,
** then into chunks. */
static double pcs(const Ex *x, double bytes, double parts) {
  if (bytes < 1) return 0;
  return MIN(parts, bytes / x->unit) + bytes / (double)x->chunk;
}

/* The exact pieces of `bytes` cut into a parts (channels), each into b parts,
** each into chunks, as fab_coll__part() cuts: two sizes at each level. */
static double pieces2(const Ex *x, uint64_t bytes, uint64_t a, uint64_t b) {
  uint64_t U = bytes / x->unit, qa = U / a, ra = U % a;
  double tot = 0;
  for (int big = 0; big < 2; big++) {
    uint64_t cnt = big ? ra : a - ra, Uc = qa + big, qb = Uc / b, rb = Uc % b;
    if (!cnt) continue;
    tot += (double)cnt * ((double)rb * fab_coll__ceil_div((qb + 1) * x->unit, x->chunk) +
                          (double)(b - rb) * fab_coll__ceil_div(qb * x->unit, x->chunk));
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
    else if (op == FAB_COLL_SEND_RECV) f = n * (pcs(x, S + u, MIN(x->p2p_peer, x->channels)) + 2.0 * x->channels);
    else f = (n - 1) * pieces2(x, B, x->channels, 1);
    break;
  case FAB_ALGO_TREE:
    f = 2 * (n - 1) * pieces2(x, B, x->channels, 1); /* a tree a channel */
    break;
  case FAB_ALGO_NVLS: /* across nodes: per loop, each rank's two NVLS ops and a reduction; one domain: per loop and
                      ** channel, each rank's NVLS op */
    f = G < n && L ? ceil(S / ((double)L * (double)x->chunk)) * n * 3 : n * (C + S / ((double)x->chunk * n));
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
    C = MIN(x->p2p_peer, x->channels); /* its parts; the joins: a rank's channels a batch but the last touches, a
                                       ** batch's rounds sharing their base across domains (coll_p2p.c) */
    f = n * (ceil(n / 8.0) - 1) * MIN(x->channels, (x->p2p_multi ? 1 : 8) * C);
    if (!x->c->counts) f += n * (n - 1) * pcs(x, S / n + u, C);
    for (uint32_t i = 0; x->c->counts && i < x->n; i++)
      for (uint32_t j = 0; j < x->n; j++) {
        double b = (double)x->c->counts[(size_t)i * x->n + j];
        f += i != j && b > 0 ? pcs(x, b + u, C) : 0;
      }
    break;
  case FAB_ALGO_CE:
    f = 3 * n * (n - 1); /* flags, copies, flags */
    break;
  case FAB_ALGO_COLLNET_DIRECT: /* per loop: in each node L(L-1) flows up and down, n reductions */
    f = ceil(S / ((double)MAX(L, 1u) * (double)x->chunk)) * n * (2.0 * MAX(L, 2u) - 1);
    break;
  case FAB_ALGO_COLLNET_CHAIN: /* per piece of a channel: each rank one flow up, one down (the head: a reduction) */
    f = 2 * n * pieces2(x, B, x->channels, 1);
    break;
  default:
    break;
  }
  return f + 4 * n; /* BEGIN, END, up to two joins */
}

/* The first rank not in rank 0's NVLink domain (there is one). */
static uint32_t other_domain(const Ex *x) {
  uint32_t D = x->env->nvl_domain, i = 1;
  while (x->ep[i] / D == x->ep[0] / D) i++;
  return i;
}

/* The algorithm can run op here? (err when not) */
static gboolean check(const Ex *x, const Topo *t, const Groups *nodes, const Groups *dom, GError **err) {
  const FabCollEnv *env = x->env;
  FabCollOp op = x->c->op;
  FabCollAlgo a = x->algo;
  const char *an = fab_coll_algo_names[a], *pn = fab_proto_names[x->proto];
  if (op == FAB_COLL_ALL_TO_ALL && a != FAB_ALGO_PAIRWISE && a != FAB_ALGO_CE)
    return fail(err, "all-to-all runs the pairwise algorithm (or ce, NCCL's copy engines) only (not %s)", an);
  if (x->c->counts && op != FAB_COLL_ALL_TO_ALL)
    return fail(err, "per-rank counts are for all-to-all only (not %s)", fab_coll_op_names[op]);
  for (size_t i = 0; x->c->counts && i < (size_t)x->n * x->n; i++)
    if (x->c->counts[i] % x->unit)
      return fail(err, "all-to-all count %" G_GUINT64_FORMAT " (rank %zu to %zu) is not a whole number of %u-byte "
                  "elements", x->c->counts[i], i / x->n, i % x->n, x->unit);
  if (op == FAB_COLL_SEND_RECV && a != FAB_ALGO_RING)
    return fail(err, "send-recv runs with algorithm auto or ring (not %s)", an);
  switch (a) {
  case FAB_ALGO_TREE:
    if (op != FAB_COLL_ALLREDUCE) return fail(err, "tree runs allreduce only, as in NCCL (not %s)", fab_coll_op_names[op]);
    break;
  case FAB_ALGO_NVLS:
    if (op != FAB_COLL_ALLREDUCE && op != FAB_COLL_ALLGATHER && op != FAB_COLL_REDUCE_SCATTER)
      return fail(err, "nvls runs allreduce, allgather and reduce-scatter, as in NCCL (not %s)", fab_coll_op_names[op]);
    if (!env->nvl_domain || t->nvl <= 0) return fail(err, "nvls needs an NVLink domain, and this cluster has none");
    if (!env->nvls)
      return fail(err, "nvls needs an NVSwitch that reduces (sm90 and later; cluster.nvlink.nvls not false), and this "
                  "cluster's has none");
    if (t->domains != 1 && op != FAB_COLL_ALLREDUCE)
      return fail(err, "nvls %s runs inside one NVLink domain (in-network reduction across nodes is for allreduce): "
                  "these ranks span %u domains; use ring or pat", fab_coll_op_names[op], t->domains);
    if (t->domains != 1 && !env->collnet) {
      uint32_t i = other_domain(x);
      return fail(err, "nvls needs all ranks in one NVLink domain, or SHARP in the switches between them "
                  "(fabric.switch.sharp.enabled: true), but rank 0 (endpoint %u) and rank %u (endpoint %u) are in "
                  "different domains of %u: use nvls-tree across domains", x->ep[0], i, x->ep[i], env->nvl_domain);
    }
    if (t->domains != 1 && (env->nvl_domain % env->gpus_per_node || !fab_coll__even_groups(nodes) ||
                            fab_coll__even_groups(nodes) < 2))
      return fail(err, "nvls across nodes (SHARP between them) needs NVLink domains of whole nodes and the same "
                  "number of ranks, at least 2, on every node");
    break;
  case FAB_ALGO_NVLS_TREE:
    if (op != FAB_COLL_ALLREDUCE) return fail(err, "nvls-tree runs allreduce only (not %s)", fab_coll_op_names[op]);
    if (!env->nvl_domain || t->nvl <= 0) return fail(err, "nvls-tree needs NVLink domains, and this cluster has none");
    if (!env->nvls)
      return fail(err, "nvls-tree needs NVSwitches that reduce (sm90 and later; cluster.nvlink.nvls not false), and "
                  "this cluster's have none");
    if (x->n > 1 && dom->ng < 2)
      return fail(err, "nvls-tree needs ranks in at least two NVLink domains (all %u are in one: use nvls)", x->n);
    if (!fab_coll__even_groups(dom)) return fail(err, "nvls-tree needs the same number of ranks in every NVLink domain");
    if (x->n > 1 && x->n / dom->ng < 2)
      return fail(err, "nvls-tree needs at least 2 ranks in each NVLink domain (here one per domain: use tree or ring)");
    break;
  case FAB_ALGO_HIERARCHICAL:
    if (op != FAB_COLL_ALLREDUCE && op != FAB_COLL_ALLGATHER && op != FAB_COLL_REDUCE_SCATTER)
      return fail(err, "hierarchical runs allreduce, allgather and reduce-scatter only (not %s)",
                  fab_coll_op_names[op]);
    if (!fab_coll__even_groups(nodes)) return fail(err, "hierarchical needs the same number of ranks on every node");
    break;
  case FAB_ALGO_PAT:
    if (op != FAB_COLL_ALLGATHER && op != FAB_COLL_REDUCE_SCATTER)
      return fail(err, "pat runs allgather and reduce-scatter only, as in NCCL (not %s)", fab_coll_op_names[op]);
    break;
  case FAB_ALGO_PAIRWISE:
    if (op != FAB_COLL_ALL_TO_ALL) return fail(err, "pairwise runs all-to-all only (not %s)", fab_coll_op_names[op]);
    break;
  case FAB_ALGO_COLLNET:
  case FAB_ALGO_COLLNET_DIRECT:
  case FAB_ALGO_COLLNET_CHAIN:
    if (op != FAB_COLL_ALLREDUCE) return fail(err, "%s runs allreduce only here (not %s)", an, fab_coll_op_names[op]);
    if (!env->collnet) return fail(err, "%s needs SHARP in the switches (fabric.switch.sharp.enabled: true)", an);
    if (nodes->ng < 2) return fail(err, "%s needs ranks on at least two nodes (all %u are on one)", an, x->n);
    if (!fab_coll__even_groups(nodes)) return fail(err, "%s needs the same number of ranks on every node", an);
    if (a == FAB_ALGO_COLLNET_DIRECT && (!env->nvl_domain || t->nvl <= 0))
      return fail(err, "collnet-direct needs an NVSwitch in each node (NCCL disables it elsewhere): use "
                  "collnet-chain");
    if (a == FAB_ALGO_COLLNET_DIRECT && fab_coll__even_groups(nodes) > 8)
      return fail(err, "collnet-direct takes at most 8 ranks a node (NCCL_MAX_DIRECT_ARITY + 1), here %u: use "
                  "collnet-chain", fab_coll__even_groups(nodes));
    if (a == FAB_ALGO_COLLNET) /* the tuner found none of the three */
      return fail(err, "collnet found none of NCCL's in-network algorithms for these ranks");
    break;
  case FAB_ALGO_CE:
    if (op != FAB_COLL_ALLGATHER && op != FAB_COLL_ALL_TO_ALL)
      return fail(err, "ce (NCCL's copy-engine collectives) runs allgather and all-to-all only (not %s)",
                  fab_coll_op_names[op]);
    if (x->c->algorithm == FAB_ALGO_CE && x->c->protocol != FAB_PROTO_AUTO && x->c->protocol != FAB_PROTO_SIMPLE)
      return fail(err, "ce moves data with the copy engines, which have no NCCL protocol (not %s): leave protocol "
                  "auto", pn);
    if (!env->nvl_domain || t->nvl <= 0) return fail(err, "ce needs an NVLink domain, and this cluster has none");
    if (t->domains != 1) {
      uint32_t i = other_domain(x);
      return fail(err, "ce needs all ranks in one NVLink domain (NCCL's hierarchical copy-engine path across "
                  "domains is not modelled), but rank 0 (endpoint %u) and rank %u (endpoint %u) are in different "
                  "domains of %u", x->ep[0], i, x->ep[i], env->nvl_domain);
    }
    break;
  default:
    break;
  }
  if (!fab_coll__proto_ok(a, x->proto)) return fail(err, "%s runs the simple protocol only, as in NCCL (not %s)", an, pn);
  return TRUE;
}

/* The ranks of c: some, a root among them, each an endpoint once. */
static gboolean check_ranks(const FabCollEnv *env, const FabCollSpec *c, GError **err) {
  uint32_t n = c->nranks;
  if (n == 0 || !c->ranks) return fail(err, "a collective needs at least one rank");
  if ((c->op == FAB_COLL_BROADCAST || c->op == FAB_COLL_REDUCE) && c->root >= n)
    return fail(err, "%s root %u is not a rank (0..%u)", fab_coll_op_names[c->op], c->root, n - 1);
  for (uint32_t i = 0; i < n; i++)
    if (env->endpoints && c->ranks[i] >= env->endpoints)
      return fail(err, "rank %u is endpoint %u, which does not exist (0..%u)", i, c->ranks[i], env->endpoints - 1);
  KeyPos *a = g_new(KeyPos, n);
  for (uint32_t i = 0; i < n; i++) a[i] = (KeyPos){c->ranks[i], i};
  qsort(a, n, sizeof *a, fab_coll__keypos_cmp);
  gboolean ok = TRUE;
  for (uint32_t i = 1; i < n && ok; i++)
    if (a[i].key == a[i - 1].key)
      ok = fail(err, "ranks %u and %u are both endpoint %u", a[i - 1].pos, a[i].pos, (uint32_t)a[i].key);
  g_free(a);
  return ok;
}

/* Add a warning to `w` once (the same collective recurs in a training
** step); past 64 warnings, one line says that more were left out. */
static void G_GNUC_PRINTF(2, 3) warn_once(GPtrArray *w, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  for (guint i = 0; i < w->len; i++)
    if (g_str_equal(g_ptr_array_index(w, i), s)) {
      g_free(s);
      return;
    }
  static const char more[] = "more collectives were coarsened the same way; not all are listed";
  if (w->len < 64) g_ptr_array_add(w, s);
  else {
    g_free(s);
    if (!g_str_equal(g_ptr_array_index(w, w->len - 1), more)) g_ptr_array_add(w, g_strdup(more));
  }
}

/* The pieces and channels: the default chunk, then fewer channels or larger
** pieces while an automatic choice would exceed `cap` operations (the
** expansion's estimate into *est). */
static gboolean size_pieces(Ex *x, const Topo *t, const Groups *nodes, const Groups *dom, uint32_t cap, double *est_out,
                            GError **err) {
  const FabCollSpec *c = x->c;
  uint64_t def = fab_coll__default_chunk(x, t);
  x->chunk = c->chunk ? c->chunk : def;
  uint32_t G = x->env->nvl_domain ? fab_coll__even_groups(dom) : 1, L = fab_coll__even_groups(nodes);
  double est = estimate(x, G, L);
  uint32_t ch0 = x->channels;
  uint64_t chunk0 = x->chunk;
  /* fewer channels while that shrinks the expansion by a quarter or more
  ** (rings, trees); larger pieces where channels barely count (NVLS_TREE) */
  while (est > cap) {
    bool can_ch = !c->channels && x->channels > 1, can_chunk = !c->chunk && x->chunk < c->bytes;
    if (can_ch) {
      uint32_t was = x->channels;
      x->channels = (was + 1) / 2;
      double by_ch = estimate(x, G, L);
      if (by_ch <= 0.75 * est || !can_chunk) {
        est = by_ch;
        continue;
      }
      x->channels = was;
    }
    if (!can_chunk) break;
    x->chunk *= 2;
    est = estimate(x, G, L);
  }
  if ((x->channels != ch0 || x->chunk != chunk0) && x->env->warnings) {
    char chs[48] = "", cks[80] = "";
    if (x->channels != ch0) g_snprintf(chs, sizeof chs, "%u channels instead of %u", x->channels, ch0);
    if (x->chunk != chunk0)
      g_snprintf(cks, sizeof cks, "%s%" G_GUINT64_FORMAT "-byte pieces instead of %" G_GUINT64_FORMAT,
                 *chs ? " and " : "", x->chunk, chunk0);
    warn_once(x->env->warnings, "%s of %" G_GUINT64_FORMAT " B on %u ranks (%s, %s): %s%s, to stay within %u "
                   "operations a collective; set workload.channels or workload.chunk to choose",
                   fab_coll_op_names[c->op], c->bytes, x->n, fab_coll_algo_names[x->algo], fab_proto_names[x->proto],
                   chs, cks, cap);
  }
  *est_out = est;
  if (est > cap)
    return fail(err, "this %s over %u ranks (%s, %s) expands to about %.0f operations, more than %u: raise chunk "
                "(now %" G_GUINT64_FORMAT " bytes) or lower channels (now %u)", fab_coll_op_names[c->op], x->n,
                fab_coll_algo_names[x->algo], fab_proto_names[x->proto], est, cap, x->chunk, x->channels);
  return TRUE;
}

/* An expansion under way (collective.h). */
struct FabCollGen {
  FabCollEnv env; /* copies: a generator outlives what it was made from */
  FabCollSpec c;  /* its ranks are `ranks` */
  Ex x;
  Groups nodes, dom;
  uint32_t *all, *end, *ranks;
  uint64_t *counts; /* c.counts' copy */
  Ring ring;
  bool ringing;   /* a ring made layer by layer */
  bool done;      /* every op made, the END marks too */
  uint32_t last0; /* the first op of the latest batch */
  int32_t id;
  double est;     /* ops the whole expansion makes (the estimate) */
};

void fab_coll_gen_free(FabCollGen *g) {
  if (!g) return;
  fab_coll__ring_free(&g->ring);
  fab_coll__groups_free(&g->nodes);
  fab_coll__groups_free(&g->dom);
  g_free(g->all);
  g_free(g->end);
  g_free(g->ranks);
  g_free(g->counts);
  g_free(g->x.ready);
  if (g->x.meta) g_array_free(g->x.meta, TRUE);
  if (g->x.residue) g_array_free(g->x.residue, TRUE);
  if (g->x.tmp) g_array_free(g->x.tmp, TRUE);
  g_free(g);
}

/* The whole algorithm at once, END marks included. */
static void run_whole(FabCollGen *g) {
  Ex *x = &g->x;
  const FabCollSpec *c = &g->c;
  uint32_t n = x->n, *endv = g->end;
  uint64_t S = c->bytes;
  bool ar = c->op == FAB_COLL_ALLREDUCE;
  switch (x->algo) {
  case FAB_ALGO_RING:
    if (c->op == FAB_COLL_BROADCAST || c->op == FAB_COLL_REDUCE) fab_coll__chain(x, c->root, S, c->op == FAB_COLL_REDUCE);
    else if (c->op == FAB_COLL_SEND_RECV) fab_coll__send_recv(x, &g->dom, S);
    else fab_coll__ring(x, g->all, n, S, ar ? 2 * (n - 1) : n - 1, c->op == FAB_COLL_ALLGATHER ? 0 : n - 1, true);
    fab_coll__phase_end(x, FAB_MARK_COLL_END, endv);
    break;
  case FAB_ALGO_TREE:
    fab_coll__tree(x, g->all, n, S, x->env->gpus_per_node > 1, true);
    fab_coll__phase_end(x, FAB_MARK_COLL_END, endv);
    break;
  case FAB_ALGO_NVLS:
    if (n > 1 && S && g->dom.ng > 1) { /* across nodes: SHARP between them */
      fab_coll__run_collnet(x, &g->nodes, fab_coll__even_groups(&g->nodes), true, endv);
      break;
    }
    if (n > 1 && S) fab_coll__run_nvls(x);
    fab_coll__phase_end(x, FAB_MARK_COLL_END, endv);
    break;
  case FAB_ALGO_NVLS_TREE:
    if (n > 1 && S) fab_coll__run_nvls_tree(x, &g->dom, fab_coll__even_groups(&g->dom), endv);
    else fab_coll__phase_end(x, FAB_MARK_COLL_END, endv);
    break;
  case FAB_ALGO_HIERARCHICAL:
    fab_coll__run_hierarchical(x, &g->nodes, fab_coll__even_groups(&g->nodes), endv);
    break;
  case FAB_ALGO_PAT:
    fab_coll__pat(x, S, c->op == FAB_COLL_REDUCE_SCATTER);
    fab_coll__phase_end(x, FAB_MARK_COLL_END, endv);
    break;
  case FAB_ALGO_PAIRWISE:
    fab_coll__pairwise_nccl(x, &g->dom, S);
    fab_coll__phase_end(x, FAB_MARK_COLL_END, endv);
    break;
  case FAB_ALGO_CE:
    fab_coll__ce(x, S, c->op == FAB_COLL_ALL_TO_ALL);
    fab_coll__phase_end(x, FAB_MARK_COLL_END, endv);
    break;
  case FAB_ALGO_COLLNET_DIRECT:
  case FAB_ALGO_COLLNET_CHAIN: {
    uint32_t L = fab_coll__even_groups(&g->nodes);
    if (S && x->algo == FAB_ALGO_COLLNET_CHAIN) fab_coll__run_collnet_chain(x, &g->nodes, L, endv);
    else if (S) fab_coll__run_collnet(x, &g->nodes, L, false, endv);
    else fab_coll__phase_end(x, FAB_MARK_COLL_END, endv);
    break;
  }
  default:
    g_assert_not_reached();
  }
  g->done = true;
}

/* CollNet's trees: one per local index, joining that index's heads across
** the nodes (every rank on plain hosts). When the fabric has no room for one
** (FabCollEnv.sharp_claim), the collective fails (on_no_resources: fail) or
** runs what the tuner picks without SHARP, with a warning. */
static gboolean collnet_trees(FabCollGen *g, FabCollSpec *s, GError **err) {
  const FabCollSpec *c = &g->c;
  uint32_t N = g->nodes.ng, L = fab_coll__even_groups(&g->nodes), *mem = g_new(uint32_t, MAX(N, 1u));
  char *why = NULL;
  bool ok = g->env.collnet && g->env.sharp_claim && N >= 2 && L;
  for (uint32_t l = 0; ok && l < L; l++) {
    for (uint32_t m = 0; m < N; m++) mem[m] = c->ranks[g->nodes.mem[g->nodes.off[m] + l]];
    ok = g->env.sharp_claim(g->env.sharp_ctx, c->job, mem, N, &why) >= 0;
  }
  g_free(mem);
  if (ok || !why) { /* without a reason: not a matter of resources (check() says what is wrong) */
    g_free(why);
    return TRUE;
  }
  if (g->env.sharp_fail) {
    fail(err, "no SHARP tree for this allreduce of job %u on %u ranks: %s (fabric.switch.sharp.on_no_resources: "
         "fail)", c->job, c->nranks, why);
    g_free(why);
    return FALSE;
  }
  g->env.collnet = false; /* NCCL without CollNet: what its tuner picks then */
  *s = *c;
  if (fab_coll__in_network(s->algorithm, 2)) s->algorithm = FAB_ALGO_AUTO, s->protocol = FAB_PROTO_AUTO;
  fab_coll_tune(&g->env, s);
  if (g->env.warnings)
    warn_once(g->env.warnings, "no SHARP tree for job %u's allreduce on %u ranks: %s; it falls back to %s/%s "
              "(fabric.switch.sharp.on_no_resources: fallback)", c->job, c->nranks, why,
              fab_coll_algo_names[s->algorithm], fab_proto_names[s->protocol]);
  g_free(why);
  return TRUE;
}

/* Whether the expansion of x can be made layer by layer (a ring
** allreduce, allgather or reduce-scatter). */
/* The largest block one rank sends another in an all-to-all. */
static uint64_t largest_block(const FabCollSpec *c) {
  uint64_t b = c->op == FAB_COLL_SEND_RECV ? c->bytes : c->bytes / MAX(c->nranks, 1u); /* send-recv: one op */
  for (size_t k = 0; c->counts && k < (size_t)c->nranks * c->nranks; k++) b = k ? MAX(b, c->counts[k]) : c->counts[k];
  return b;
}

static bool layered(const Ex *x) {
  FabCollOp op = x->c->op;
  return x->algo == FAB_ALGO_RING && x->n > 1 && x->c->bytes &&
         (op == FAB_COLL_ALLREDUCE || op == FAB_COLL_ALLGATHER || op == FAB_COLL_REDUCE_SCATTER);
}

FabCollGen *fab_coll_begin(FabDag *d, const FabCollEnv *env, const FabCollSpec *c, const uint32_t *start, bool unfold,
                           GError **err) {
  g_return_val_if_fail(d && env && c && c->op < FAB_COLL_N && c->algorithm < FAB_ALGO_N && c->protocol < FAB_PROTO_N,
                       NULL);
  uint32_t n = c->nranks;
  if (!check_ranks(env, c, err)) return NULL;
  FabCollGen *g = g_new0(FabCollGen, 1);
  g->env = *env;
  g->c = *c;
  g->ranks = g_memdup2(c->ranks, sizeof(uint32_t) * n); /* the caller's array may be its scratch (training.c) */
  g->c.ranks = g->ranks;
  if (c->counts) g->counts = g_memdup2(c->counts, sizeof(uint64_t) * n * n), g->c.counts = g->counts;
  env = &g->env;
  c = &g->c;
  FabCollSpec s = *c;
  if (s.algorithm == FAB_ALGO_AUTO || s.algorithm == FAB_ALGO_COLLNET || s.protocol == FAB_PROTO_AUTO || !s.channels ||
      s.cta_zero)
    fab_coll_tune(env, &s);
  g->all = g_new(uint32_t, n);
  for (uint32_t i = 0; i < n; i++) g->all[i] = i;
  fab_coll__groups_make(&g->nodes, c->ranks, g->all, n, env->gpus_per_node);
  fab_coll__groups_make(&g->dom, c->ranks, g->all, n, env->nvl_domain ? env->nvl_domain : 1);
  if (fab_coll__in_network(s.algorithm, g->dom.ng) && s.algorithm != FAB_ALGO_COLLNET && !collnet_trees(g, &s, err)) {
    fab_coll_gen_free(g);
    return NULL;
  }
  if (s.algorithm == FAB_ALGO_COLLNET_DIRECT) s.channels = MAX(fab_coll__even_groups(&g->nodes), 1u); /* its heads */
  Topo t;
  fab_coll__topo_make(&t, env, &s);
  if (env->collnet && env->warnings && g->nodes.ng > 1 &&
      (c->op == FAB_COLL_ALLGATHER || c->op == FAB_COLL_REDUCE_SCATTER))
    warn_once(env->warnings, "SHARP: %s across nodes runs without it (%s): NCCL's in-network %s (NVLS or CollNet "
              "Direct through the SHARP plugin) is not modelled", fab_coll_op_names[c->op],
              fab_coll_algo_names[s.algorithm], fab_coll_op_names[c->op]);
  if (s.cta_zero && s.algorithm != FAB_ALGO_CE && n > 1 && env->warnings &&
      (c->op == FAB_COLL_ALLGATHER || c->op == FAB_COLL_ALL_TO_ALL))
    warn_once(env->warnings, "cta_policy zero: %s on %u ranks runs NCCL's SM kernels (%s), not the copy engines: %s",
              fab_coll_op_names[c->op], n, fab_coll_algo_names[s.algorithm],
              t.nvl <= 0 ? "there is no NVLink" : "its ranks span NVLink domains, and NCCL's hierarchical "
              "copy-engine path (RMA proxy) is not modelled");
  uint32_t dt = c->dtype_bytes ? c->dtype_bytes : 1;
  Ex *x = &g->x;
  *x = (Ex){.d = d, .env = env, .c = c, .algo = s.algorithm, .proto = s.protocol, .n = n, .ep = c->ranks,
            .channels = MAX(s.channels, 1u), .unit = c->bytes % dt == 0 ? dt : 1};
  /* what the GPU side can move: a channel's SM per protocol (wire bits/s), and for LL a rank over all its
  ** channels (LL's ceiling, twice that on the wire) */
  const FabNcclCosts *k = &env->costs;
  if (x->algo == FAB_ALGO_PAIRWISE || c->op == FAB_COLL_SEND_RECV) {
    fab_coll__p2p_setup(x, &t, c->channels);
    if (c->protocol == FAB_PROTO_AUTO) x->proto = fab_coll__p2p_proto(x, largest_block(c));
  }
  if (x->algo == FAB_ALGO_CE) x->cap_bps = k->ce_bps; /* no SM, no channel: the copy engines together */
  else if (x->proto == FAB_PROTO_LL) x->cap_bps = 2 * fab_coll__ll_ceiling(env, &t);
  else x->flow_bps = x->proto == FAB_PROTO_LL128 ? k->channel_bps[1] / 120 * 128 : k->channel_bps[2];
  if (x->proto == FAB_PROTO_SIMPLE && x->algo != FAB_ALGO_CE && k->channel_net_bps < x->flow_bps)
    x->net_bps = k->channel_net_bps;
  if (x->algo == FAB_ALGO_RING && x->proto != FAB_PROTO_LL && !x->p2p_step) { /* rings in one NVLink domain */
    uint64_t share = fab_coll__channel_share(env, &t);
    if (share && (!x->flow_bps || share < x->flow_bps)) x->flow_bps = share;
  }
  /* made layer by layer, an expansion holds what is under way, not all of it: no cap on its operations but
  ** what op indices can number */
  bool lay = unfold && layered(x);
  if (!check(x, &t, &g->nodes, &g->dom, err) ||
      !size_pieces(x, &t, &g->nodes, &g->dom, lay ? FAB_COLL_UNFOLD_MAX_OPS : FAB_COLL_MAX_OPS, &g->est, err)) {
    fab_coll_gen_free(g);
    return NULL;
  }

  /* the collective as the reports see it (nccl-tests' count column) */
  uint64_t elems = c->bytes / dt; /* a rank's part for these three (nccl-tests' paramcount) */
  if (c->op == FAB_COLL_ALLGATHER || c->op == FAB_COLL_REDUCE_SCATTER || c->op == FAB_COLL_ALL_TO_ALL) elems /= n;
  FabCollDef def = {.op = fab_coll_op_names[c->op], .algorithm = fab_coll_algo_names[x->algo],
                    .protocol = x->algo == FAB_ALGO_CE ? "memcpy" : fab_proto_names[x->proto], .tag = c->tag,
                    .bytes = c->bytes, .count = elems, .dtype_bytes = dt,
                    .nranks = n, .root = (c->op == FAB_COLL_BROADCAST || c->op == FAB_COLL_REDUCE) ? (int32_t)c->root : -1,
                    .channels = x->channels, .chunk = x->chunk, .job = c->job, .step = c->step};
  uint32_t ops0 = fab_dag_len(d), deps0 = fab_dag_deps_len(d), colls0 = d->colls->len, groups0 = d->groups;
  if (c->def1) { /* defined before: it must be the definition this expansion would make */
    g_assert(c->def1 <= d->colls->len);
    const FabCollDef *was = &g_array_index(d->colls, FabCollDef, c->def1 - 1);
    g_assert(was->bytes == def.bytes && was->channels == def.channels &&
             was->chunk == def.chunk && g_str_equal(was->algorithm, def.algorithm) &&
             g_str_equal(was->protocol, def.protocol) && was->nranks == def.nranks);
    x->coll = (int32_t)c->def1 - 1;
  } else {
    x->coll = fab_dag_coll(d, &def);
  }
  /* the estimate is a bound; this is the backstop */
  x->limit = lay ? FAB_DEP_SENT - 1 : ops0 + FAB_COLL_MAX_OPS + 4 * n;
  x->ready = g_new(uint32_t, n);
  x->slot = FAB_OP_NONE;
  x->meta = g_array_new(FALSE, FALSE, sizeof(MetaAt));
  x->residue = g_array_new(FALSE, FALSE, sizeof(MetaAt));
  x->tmp = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  g->end = g_new(uint32_t, n);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t dep = start ? start[i] : FAB_OP_NONE;
    x->ready[i] = fab_coll__mark_op(x, i, FAB_MARK_COLL_BEGIN, &dep, 1);
  }
  x->phase0 = x->meta0 = g->last0 = fab_dag_len(d);
  g->id = x->coll;
  bool ar = c->op == FAB_COLL_ALLREDUCE;
  if (lay)
    g->ringing = fab_coll__ring_begin(x, &g->ring, g->all, n, c->bytes, ar ? 2 * (n - 1) : n - 1,
                                      c->op == FAB_COLL_ALLGATHER ? 0 : n - 1, true);
  if (!g->ringing) run_whole(g);
  if (x->over) { /* the estimate missed: undo everything this call added */
    fab_dag_truncate(d, ops0, deps0);
    g_array_set_size(d->colls, colls0);
    d->groups = groups0;
    fail(err, "this %s over %u ranks expands to more than %u operations: raise chunk (now %" G_GUINT64_FORMAT
         " bytes) or lower channels (now %u)", fab_coll_op_names[c->op], n, FAB_COLL_MAX_OPS, x->chunk, x->channels);
    fab_coll_gen_free(g);
    return NULL;
  }
  return g;
}

bool fab_coll_gen_more(FabCollGen *g, uint32_t min_ops) {
  if (g->done) return false;
  Ex *x = &g->x;
  fab_coll__meta_prune(x, g->last0); /* the batch before the last: later ops rarely name them */
  uint32_t from = g->last0 = fab_dag_len(x->d);
  bool left = true;
  while (left && fab_dag_len(x->d) - from < min_ops) left = fab_coll__ring_layer(x, &g->ring);
  g_assert(!x->over);
  if (left) return true;
  fab_coll__ring_free(&g->ring);
  fab_coll__phase_end(x, FAB_MARK_COLL_END, g->end);
  g->done = true;
  return false;
}

bool fab_coll_gen_done(const FabCollGen *g) { return g->done; }
int32_t fab_coll_gen_id(const FabCollGen *g) { return g->id; }
const uint32_t *fab_coll_gen_end(const FabCollGen *g) { return g->done ? g->end : NULL; }
double fab_coll_gen_estimate(const FabCollGen *g) { return g->est; }

int32_t fab_coll_expand(FabDag *d, const FabCollEnv *env, const FabCollSpec *c, const uint32_t *start,
                        uint32_t *end, GError **err) {
  g_return_val_if_fail(d && env && c && c->op < FAB_COLL_N && c->algorithm < FAB_ALGO_N && c->protocol < FAB_PROTO_N,
                       -1);
  FabCollGen *g = fab_coll_begin(d, env, c, start, false, err);
  if (!g) return -1;
  g_assert(g->done);
  if (end) memcpy(end, g->end, sizeof(uint32_t) * c->nranks);
  int32_t id = g->id;
  fab_coll_gen_free(g);
  return id;
}

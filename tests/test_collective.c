/*
** Collectives (workloads/collective.h): every algorithm on small rank counts
** (2, 3, 4, 5, 8) checked three ways. The DAG is well formed and causal (a
** flow from rank r waits only for flows that arrived at r, its own previous
** sends, its receiver's sends and arrivals (a slot freed), and marks of its
** two ends). Played in dependency order with unit-time
** flows, no step starts at a rank before the previous step reached it. And
** each rank receives exactly the bytes the algorithm moves on paper. Then the
** protocols' wire bytes and latencies, the reduction cost, channels and
** pieces, the tuner's choices, nccl-tests' bus bandwidth factors, and the
** errors.
*/
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "sim/config.h"
#include "workloads/collective.h"
#include "workloads/coll_int.h"

#define MAXR 64
static uint32_t iota[MAXR];
static const uint32_t sizes[] = {2, 3, 4, 5, 8};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static void init_iota(void) {
  for (uint32_t i = 0; i < MAXR; i++) iota[i] = i;
}

/* Plain hosts at 100 Gb/s, 1 us a hop; NCCL's costs the defaults. */
static FabCollEnv hosts(uint32_t n) {
  FabCollEnv e = {.endpoints = n, .gpus_per_node = 1, .nics_per_node = 1, .nic_bps = 100000000000ull,
                  .net_bps = 100000000000ull, .net_lat = FAB_US};
  e.costs = fab_coll_costs_unset();
  fab_coll_costs_resolve(&e);
  return e;
}

/* GPU nodes of g H100s, one NVLink domain per node, a 400 Gb/s NIC per GPU
** on PCIe Gen5 x16. */
static FabCollEnv gpus(uint32_t nodes, uint32_t g) {
  FabCollEnv e = {.endpoints = nodes * g, .gpus_per_node = g, .nvl_domain = g, .sm = 90, .nvls = true,
                  .nvls_eff = 0.85, .nics_per_node = g, .nic_bps = 400000000000ull,
                  .pcie_bps = 32000000000ull * 16 * 128 / 130, .net_bps = 400000000000ull,
                  .nvl_bps = 2966400000000ull, .net_lat = 2 * FAB_US, .nvl_lat = FAB_US / 2};
  e.costs = fab_coll_costs_unset();
  fab_coll_costs_resolve(&e);
  return e;
}

static FabCollSpec spec(FabCollOp op, FabCollAlgo a, uint64_t bytes, uint32_t n) {
  init_iota();
  return (FabCollSpec){.op = op, .algorithm = a, .protocol = FAB_PROTO_SIMPLE, .bytes = bytes, .dtype_bytes = 4,
                       .nranks = n, .ranks = iota, .channels = 1, .prio = 3, .job = 0, .step = 7, .tag = "test",
                       .start = 5 * FAB_US};
}

/* Expand into a fresh DAG, which must succeed. */
static FabDag *expand(const FabCollEnv *env, const FabCollSpec *s, uint32_t *end, int32_t *coll) {
  FabDag *d = fab_dag_new();
  GError *err = NULL;
  uint32_t e[MAXR];
  int32_t id = fab_coll_expand(d, env, s, NULL, end ? end : e, &err);
  cr_assert_geq(id, 0, "%s/%s n=%u: %s", fab_coll_op_names[s->op], fab_coll_algo_names[s->algorithm], s->nranks,
                err ? err->message : "?");
  if (coll) *coll = id;
  return d;
}

/* Expand, which must fail; the DAG must be left as it was. Returns the message. */
static char *expand_fails(const FabCollEnv *env, const FabCollSpec *s) {
  FabDag *d = fab_dag_new();
  uint32_t e[MAXR];
  GError *err = NULL;
  cr_assert_eq(fab_coll_expand(d, env, s, NULL, e, &err), -1, "%s/%s expanded", fab_coll_op_names[s->op],
               fab_coll_algo_names[s->algorithm]);
  cr_assert(err && err->domain == FAB_CFG_ERROR);
  cr_assert_eq(fab_dag_len(d), 0);
  cr_assert_eq(d->colls->len, 0);
  cr_assert_eq(d->groups, 0);
  char *msg = g_strdup(err->message);
  g_error_free(err);
  fab_dag_free(d);
  return msg;
}

static FabOp *op_at(const FabDag *d, uint32_t i) { return fab_dag_op(d, i); }
static bool is_flow(const FabOp *o) { return o->kind == FAB_OP_FLOW; }

/* Unit-time play: a flow or NVLS op takes 1 (sent and arrived together), a
** compute op its dur, a mark nothing. */
static void play(const FabDag *d, uint64_t *ready, uint64_t *done) {
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = op_at(d, i);
    uint64_t r = 0;
    for (uint32_t k = 0; k < o->ndeps; k++) {
      uint32_t dep = fab_dag_dep(d, o, k) & ~FAB_DEP_SENT;
      r = MAX(r, done[dep]);
    }
    ready[i] = r;
    done[i] = r + (o->kind <= FAB_OP_NVLS ? 1 : o->kind == FAB_OP_COMPUTE ? o->dur : 0);
  }
}

/* The checks every expansion passes: the frame, the fields, causality, and
** each rank's END after all its arrivals. */
static void check_dag(const FabDag *d, const FabCollEnv *env, const FabCollSpec *s, int32_t coll, const uint32_t *end) {
  uint32_t n = s->nranks, len = fab_dag_len(d);
  uint32_t begins = 0, ends = 0;
  for (uint32_t i = 0; i < len; i++) {
    const FabOp *o = op_at(d, i);
    cr_assert_eq(o->coll, coll, "op %u", i);
    cr_assert_eq(o->job, s->job);
    cr_assert_eq(o->step, s->step);
    cr_assert_eq(o->prio, s->prio);
    cr_assert_eq(o->start, s->start);
    for (uint32_t k = 0; k < o->ndeps; k++) {
      uint32_t dep = fab_dag_dep(d, o, k), at = dep & ~FAB_DEP_SENT;
      cr_assert_lt(at, i, "op %u depends on later op %u", i, at);
      const FabOp *p = op_at(d, at);
      if (dep & FAB_DEP_SENT) { /* its connection's order, or its receiver freeing a slot by sending it on */
        cr_assert(is_flow(p) || p->kind == FAB_OP_NVLS, "op %u: SENT on a non-flow", i);
        cr_assert(p->src == o->src || p->src == o->dst, "op %u: SENT on a third rank's flow", i);
      } else if (o->kind == FAB_OP_FLOW && p->kind == FAB_OP_FLOW) { /* what arrived here, or a slot kept */
        bool ce = g_str_equal(g_array_index(d->colls, FabCollDef, coll).algorithm, "ce"); /* or, copy engines: */
        cr_assert(p->dst == o->src || (p->src == o->src && (p->dst == o->dst || ce)), /* its own copies landed */
                  "flow %u (%u->%u) waits for flow %u (%u->%u), which did not arrive at %u", i, o->src, o->dst, at,
                  p->src, p->dst, o->src);
      } else if (o->kind == FAB_OP_FLOW && p->kind == FAB_OP_NVLS) {
        cr_assert_eq(p->src, o->src, "flow %u waits for another rank's NVLS part", i);
      } else if (o->kind <= FAB_OP_NVLS && p->kind == FAB_OP_MARK) {
        cr_assert(p->src == o->src || p->src == o->dst, "flow %u waits for a mark of a third rank", i);
      }
    }
    if (o->kind == FAB_OP_FLOW) {
      cr_assert_neq(o->src, o->dst);
      cr_assert_gt(o->bytes, 0);
    }
    if (o->kind == FAB_OP_NVLS) cr_assert_eq(o->src, o->dst);
    if (o->kind == FAB_OP_MARK && o->mark == FAB_MARK_COLL_BEGIN) {
      cr_assert_eq(i, begins, "BEGIN marks come first");
      cr_assert_eq(o->src, s->ranks[begins]);
      begins++;
    }
    if (o->kind == FAB_OP_MARK && o->mark == FAB_MARK_COLL_END) {
      cr_assert_eq(i, len - n + ends, "END marks come last");
      cr_assert_eq(o->src, s->ranks[ends]);
      cr_assert_eq(end[ends], i);
      ends++;
    }
  }
  cr_assert_eq(begins, n);
  cr_assert_eq(ends, n);
  uint64_t *ready = g_new(uint64_t, len), *done = g_new(uint64_t, len);
  play(d, ready, done);
  for (uint32_t i = 0; i < len; i++) {
    const FabOp *o = op_at(d, i);
    if (o->kind > FAB_OP_NVLS) continue;
    for (uint32_t r = 0; r < n; r++)
      if (o->dst == s->ranks[r]) cr_assert_geq(done[end[r]], done[i], "rank %u ends before op %u reached it", r, i);
  }
  g_free(ready);
  g_free(done);
  const FabCollDef *def = &g_array_index(d->colls, FabCollDef, coll);
  cr_assert_str_eq(def->op, fab_coll_op_names[s->op]);
  cr_assert_eq(def->nranks, n);
  cr_assert_eq(def->bytes, s->bytes);
  (void)env;
}

/* Payload bytes each rank received over flows (Simple: wire = payload). */
static void received(const FabDag *d, const FabCollSpec *s, uint64_t *rx) {
  memset(rx, 0, s->nranks * sizeof *rx);
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = op_at(d, i);
    if (!is_flow(o)) continue;
    for (uint32_t r = 0; r < s->nranks; r++)
      if (o->dst == s->ranks[r]) rx[r] += o->bytes;
  }
}

static uint32_t count_kind(const FabDag *d, FabOpKind k) {
  uint32_t c = 0;
  for (uint32_t i = 0; i < fab_dag_len(d); i++) c += op_at(d, i)->kind == k;
  return c;
}

static uint64_t total_bytes(const FabDag *d) {
  uint64_t b = 0;
  for (uint32_t i = 0; i < fab_dag_len(d); i++)
    if (op_at(d, i)->kind <= FAB_OP_NVLS) b += op_at(d, i)->bytes;
  return b;
}

/* The flows out of / into rank endpoint e, in op order. */
static uint32_t flows_of(const FabDag *d, uint32_t e, bool out, uint32_t *list) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = op_at(d, i);
    if (is_flow(o) && (out ? o->src : o->dst) == e) list[k++] = i;
  }
  return k;
}

/* Step order: the k-th piece a rank sends (k >= per_step) starts no earlier
** than the matching piece of the previous step arrived at it, and after the
** previous piece of its own step left. */
static void check_steps(const FabDag *d, const FabCollSpec *s, uint32_t per_step) {
  uint32_t len = fab_dag_len(d);
  uint64_t *ready = g_new(uint64_t, len), *done = g_new(uint64_t, len);
  uint32_t *in = g_new(uint32_t, len), *out = g_new(uint32_t, len);
  play(d, ready, done);
  for (uint32_t r = 0; r < s->nranks; r++) {
    uint32_t no = flows_of(d, s->ranks[r], true, out), ni = flows_of(d, s->ranks[r], false, in);
    cr_assert_eq(no, ni, "rank %u sends %u pieces, receives %u", r, no, ni);
    for (uint32_t k = per_step; k < no; k++)
      cr_assert_geq(ready[out[k]], done[in[k - per_step]], "rank %u: piece %u left before piece %u of the previous "
                    "step arrived", r, k, k - per_step);
    for (uint32_t k = 1; k < no; k++) /* a connection's pieces leave in order */
      if (k % per_step) cr_assert_geq(ready[out[k]], done[out[k - 1]], "rank %u: piece %u overtook %u", r, k, k - 1);
  }
  g_free(ready);
  g_free(done);
  g_free(in);
  g_free(out);
}

/* ---- ring ------------------------------------------------------------------ */

Test(ring, each_rank_receives_what_the_ring_moves) {
  for (size_t z = 0; z < NSIZES; z++) {
    uint32_t n = sizes[z], e[MAXR];
    FabCollEnv env = hosts(n);
    uint64_t S = 4096ull * n, rx[MAXR];
    int32_t coll;
    FabCollOp ops[] = {FAB_COLL_ALLREDUCE, FAB_COLL_ALLGATHER, FAB_COLL_REDUCE_SCATTER};
    uint64_t want[] = {2 * (n - 1) * S / n, (n - 1) * S / n, (n - 1) * S / n};
    for (int o = 0; o < 3; o++) {
      FabCollSpec s = spec(ops[o], FAB_ALGO_RING, S, n);
      FabDag *d = expand(&env, &s, e, &coll);
      check_dag(d, &env, &s, coll, e);
      received(d, &s, rx);
      for (uint32_t r = 0; r < n; r++)
        cr_assert_eq(rx[r], want[o], "%s n=%u rank %u: %llu bytes, not %llu", fab_coll_op_names[ops[o]], n, r,
                     (unsigned long long)rx[r], (unsigned long long)want[o]);
      cr_assert_eq(count_kind(d, FAB_OP_FLOW), (o ? 1 : 2) * (n - 1) * n);
      fab_dag_free(d);
    }
  }
}

Test(ring, no_step_before_the_previous_one_arrived) {
  for (size_t z = 0; z < NSIZES; z++) {
    uint32_t n = sizes[z], e[MAXR];
    FabCollEnv env = hosts(n);
    FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_RING, 4096ull * n, n);
    s.chunk = 2048; /* two pieces per segment */
    int32_t coll;
    FabDag *d = expand(&env, &s, e, &coll);
    check_dag(d, &env, &s, coll, e);
    cr_assert_eq(count_kind(d, FAB_OP_FLOW), 2 * 2 * (n - 1) * n);
    check_steps(d, &s, 2);
    fab_dag_free(d);
  }
}

Test(ring, reduce_scatter_steps_pay_the_reduction) {
  uint32_t n = 4, e[MAXR];
  FabCollEnv env = hosts(n);
  env.reduce_Bps = 1e11; /* 100 GB/s */
  FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_RING, 4 * 1048576, n);
  int32_t coll;
  FabDag *d = expand(&env, &s, e, &coll);
  uint32_t reduced = 0;
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = op_at(d, i);
    if (!is_flow(o)) continue;
    if (o->post) {
      cr_assert_eq(o->post, 5242880, "512 KiB at 100 GB/s is 5.24 us, not %llu ps", (unsigned long long)o->post);
      reduced++;
    }
  }
  /* one loop: each 1 MiB segment is a step's chunk, in two 512 KiB slices */
  cr_assert_eq(reduced, 2 * n * (n - 1), "the reduce-scatter half reduces, the allgather half does not");
  fab_dag_free(d);
}

Test(ring, broadcast_and_reduce_are_chains) {
  for (size_t z = 0; z < NSIZES; z++) {
    uint32_t n = sizes[z], e[MAXR];
    FabCollEnv env = hosts(n);
    uint64_t S = 3 * 524288, rx[MAXR];
    for (uint32_t root = 0; root < n; root += n - 1) {
      for (int red = 0; red < 2; red++) {
        FabCollSpec s = spec(red ? FAB_COLL_REDUCE : FAB_COLL_BROADCAST, FAB_ALGO_RING, S, n);
        s.root = root;
        int32_t coll;
        FabDag *d = expand(&env, &s, e, &coll);
        check_dag(d, &env, &s, coll, e);
        received(d, &s, rx);
        uint32_t head = (root + 1) % n; /* the reduce chain starts after the root */
        for (uint32_t r = 0; r < n; r++) {
          uint64_t want = red ? (r == head ? 0 : S) : (r == root ? 0 : S);
          cr_assert_eq(rx[r], want, "%s root %u n=%u rank %u: %llu", red ? "reduce" : "broadcast", root, n, r,
                       (unsigned long long)rx[r]);
        }
        cr_assert_eq(count_kind(d, FAB_OP_FLOW), 3 * (n - 1), "3 pieces of 512 KiB per hop");
        /* pipelined: piece j leaves a rank after it arrived there */
        uint32_t len = fab_dag_len(d), in[64], out[64];
        uint64_t *ready = g_new(uint64_t, len), *done = g_new(uint64_t, len);
        play(d, ready, done);
        for (uint32_t r = 0; r < n; r++) {
          uint32_t no = flows_of(d, r, true, out), ni = flows_of(d, r, false, in);
          if (no && ni)
            for (uint32_t j = 0; j < 3; j++) cr_assert_geq(ready[out[j]], done[in[j]]);
        }
        g_free(ready);
        g_free(done);
        fab_dag_free(d);
      }
    }
  }
}

Test(ring, multi_node_rings_stay_on_rails) {
  /* 2 nodes of 4 GPUs, 4 channels: every channel crosses between GPUs of the
  ** same local index, and the channels use every rail */
  uint32_t e[MAXR];
  FabCollEnv env = gpus(2, 4);
  FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_RING, 8 * 4 * 4096, 8);
  s.channels = 4;
  int32_t coll;
  FabDag *d = expand(&env, &s, e, &coll);
  check_dag(d, &env, &s, coll, e);
  uint32_t rails = 0;
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = op_at(d, i);
    if (!is_flow(o) || o->src / 4 == o->dst / 4) continue;
    cr_assert_eq(o->src % 4, o->dst % 4, "flow %u->%u changes rail", o->src, o->dst);
    rails |= 1u << (o->src % 4);
  }
  cr_assert_eq(rails, 0xf, "rails used: %x", rails);
  fab_dag_free(d);
}

/* ---- tree ------------------------------------------------------------------ */

Test(tree, double_binary_tree_moves_2_n_minus_1_halves) {
  for (size_t z = 0; z < NSIZES; z++) {
    uint32_t n = sizes[z], e[MAXR];
    FabCollEnv env = hosts(n);
    env.reduce_Bps = 1e12;
    uint64_t S = 4 * 1024 * 2 + 4, rx[MAXR]; /* odd element count: tree 0 carries one more */
    FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_TREE, S, n);
    Topo t;
    fab_coll__topo_make(&t, &env, &s);
    cr_assert_eq(t.ring.nch, 1, "n=%u: hosts search one channel", n);
    s.channels = 2; /* the search's and its copy: one channel a tree */
    int32_t coll;
    FabDag *d = expand(&env, &s, e, &coll);
    check_dag(d, &env, &s, coll, e);
    received(d, &s, rx);
    uint64_t tot = 0;
    for (uint32_t r = 0; r < n; r++) {
      tot += rx[r];
      cr_assert_geq(rx[r], S, "n=%u rank %u receives %llu < S", n, r, (unsigned long long)rx[r]);
    }
    cr_assert_eq(tot, 2ull * (n - 1) * S, "n=%u", n);
    cr_assert_eq(count_kind(d, FAB_OP_FLOW), 2 * 2 * (n - 1));
    /* inner ranks (receiving an up flow: reduced) of each tree, told apart by size */
    uint64_t b0 = (S / 4 / 2 + 1) * 4, b1 = S - b0;
    uint64_t inner[2] = {0, 0};
    for (uint32_t i = 0; i < fab_dag_len(d); i++) {
      const FabOp *o = op_at(d, i);
      if (is_flow(o) && o->post) inner[o->bytes == b0 ? 0 : 1] |= 1ull << o->dst;
      if (is_flow(o)) cr_assert(o->bytes == b0 || o->bytes == b1);
    }
    uint32_t both = __builtin_popcountll(inner[0] & inner[1]);
    if (n % 2 == 0) cr_assert_eq(both, 0, "n=%u: inner in both trees: %llx", n, (unsigned long long)(inner[0] & inner[1]));
    else cr_assert_leq(both, 1, "n=%u", n);
    /* up: a rank sends after all its children's pieces arrived */
    uint32_t len = fab_dag_len(d);
    uint64_t *ready = g_new(uint64_t, len), *done = g_new(uint64_t, len);
    play(d, ready, done);
    for (uint32_t i = 0; i < len; i++) {
      const FabOp *o = op_at(d, i);
      if (!is_flow(o) || !o->post) continue;
      for (uint32_t k = 0; k < len; k++) {
        const FabOp *q = op_at(d, k);
        if (is_flow(q) && q->post && q->dst == o->src && q->bytes == o->bytes)
          cr_assert_geq(ready[i], done[k], "n=%u: up flow %u before its child's %u", n, i, k);
      }
    }
    g_free(ready);
    g_free(done);
    fab_dag_free(d);
  }
}

Test(tree, nodes_form_the_tree_and_chains_run_inside) {
  uint32_t e[MAXR];
  FabCollEnv env = gpus(3, 4);
  FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_TREE, 12 * 4 * 4096, 12);
  s.channels = 2;
  s.chunk = 1 << 20; /* one piece per tree half: the structure, not the piece size, is under test */
  int32_t coll;
  FabDag *d = expand(&env, &s, e, &coll);
  check_dag(d, &env, &s, coll, e);
  uint32_t inter = 0;
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = op_at(d, i);
    if (!is_flow(o)) continue;
    if (o->src / 4 != o->dst / 4) {
      cr_assert_eq(o->src % 4, o->dst % 4, "node hop %u->%u changes rail", o->src, o->dst);
      inter++;
    } else {
      uint32_t a = o->src % 4, b = o->dst % 4;
      cr_assert((a + 1) % 4 == b || (b + 1) % 4 == a, "chain hop %u->%u skips a GPU", o->src, o->dst);
    }
  }
  /* per channel (one tree each), 2 node edges up and down */
  cr_assert_eq(inter, 2 * 2 * 2);
  fab_dag_free(d);
}

/* NCCL doubles the search's channels, the first ones on tree 0 and their
** copies on tree 1 (src/graph/connect.cc), and a collective takes channels
** from 0 up: on 4 nodes of 8 H100, as many channels as the search's run on
** tree 0 alone, whose root node sends nothing up across nodes; twice as
** many run both trees, and every node sends up in one of them. */
Test(tree, channels_below_the_search_s_run_tree_0_alone) {
  FabCollEnv env = gpus(4, 8);
  env.reduce_Bps = 1e12; /* up flows are reduced: they carry a post */
  FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_TREE, 32ull << 20, 32);
  Topo t;
  fab_coll__topo_make(&t, &env, &s);
  cr_assert_gt(t.ring.nch, 1);
  for (uint32_t both = 0; both < 2; both++) {
    s.channels = (both + 1) * t.ring.nch;
    FabDag *d = expand(&env, &s, NULL, NULL);
    uint32_t up_from = 0; /* nodes that send a reduced piece to another node */
    for (uint32_t i = 0; i < fab_dag_len(d); i++) {
      const FabOp *o = op_at(d, i);
      if (is_flow(o) && o->post && o->src / 8 != o->dst / 8) up_from |= 1u << (o->src / 8);
    }
    cr_assert_eq(__builtin_popcount(up_from), both ? 4 : 3, "%u channels: nodes sending up %x", s.channels, up_from);
    fab_dag_free(d);
  }
}

/* ---- nvls ------------------------------------------------------------------ */

/* NVLS in one domain as NCCL's kernel runs it: loops of one chunk per rank
** and channel (NCCL's NVLS chunk, enqueue.cc calcCollChunking: 128 KiB,
** 64 KiB under 64 x channels x ranks x chunk, 32 KiB under 8 x, 16 KiB
** under 2 x; NCCL's loopSize = channels x ranks x chunk), each loop one
** group with one op per rank carrying every channel's block, a rank's loop
** after its previous one is done; each op pays nvls_step for each chunk a
** channel takes in it (the first loop also the launch and the NVLS
** kernel's start), at NVLink's rate (the channels together), in segments
** of a chunk. 1 MiB on 2 channels, and a size whose last loop is partial. */
Test(nvls, loops_span_the_channels_in_nccl_chunks) {
  static const uint64_t sizes_b[] = {1 << 20, 3 * (1 << 20) + 4096};
  for (size_t z = 0; z < NSIZES; z++)
    for (int q = 0; q < 2; q++) {
      uint32_t n = sizes[z], e[MAXR], C = 2;
      uint64_t B = sizes_b[q];
      FabCollEnv env = gpus(1, 8);
      FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_NVLS, B, n);
      s.channels = C;
      FabDag *d = fab_dag_new();
      d->groups = 3;
      GError *err = NULL;
      int32_t coll = fab_coll_expand(d, &env, &s, NULL, e, &err);
      cr_assert_geq(coll, 0);
      check_dag(d, &env, &s, coll, e);
      uint64_t ch = 131072, ops = (uint64_t)C * n;
      if (B < 64 * ops * ch) ch = 65536;
      if (B < 8 * ops * ch) ch = 32768;
      if (B < 2 * ops * ch) ch = 16384;
      cr_assert_eq(g_array_index(d->colls, FabCollDef, 0).chunk, ch, "n=%u", n);
      uint64_t loop = (uint64_t)C * n * ch;
      uint32_t L = (uint32_t)((B + loop - 1) / loop);
      cr_assert_eq(d->groups, 3 + L, "n=%u, %" G_GUINT64_FORMAT " B: %u loops", n, B, L);
      cr_assert_eq(count_kind(d, FAB_OP_NVLS), L * n);
      cr_assert_eq(count_kind(d, FAB_OP_FLOW), 0);
      cr_assert_eq(env.costs.nvls_sync, 22570000, "Hopper's, fitted to Azure ND H200 v5 at 16 KiB (tuner.c)");
      cr_assert_eq(env.costs.nvls_step, 1035000, "Hopper's, fitted to Azure ND H200 v5 at 8 GiB (tuner.c)");
      uint64_t sum[MAXR] = {0};
      uint32_t prev[MAXR], members[64] = {0};
      memset(prev, 0xff, sizeof prev);
      for (uint32_t i = 0; i < fab_dag_len(d); i++) {
        const FabOp *o = op_at(d, i);
        if (o->kind != FAB_OP_NVLS) continue;
        cr_assert_eq(o->mark, FAB_NVLS_OP_AR);
        uint32_t g = o->group - 3, r = o->src;
        cr_assert_lt(g, L);
        members[g]++;
        cr_assert_eq(o->bytes, g + 1 < L ? loop : B - (L - 1) * loop, "op %u: loop %u's bytes", i, g);
        sum[r] += o->bytes;
        uint64_t chunks = (o->bytes + ch - 1) / ch;
        fab_time_t steps = env.costs.nvls_step * ((chunks + C - 1) / C);
        if (prev[r] == UINT32_MAX) {
          cr_assert_eq(g, 0);
          cr_assert_eq(o->pre, env.costs.launch + env.costs.nvls_sync + steps, "op %u: the first loop", i);
        } else {
          cr_assert_eq(o->pre, steps, "op %u: a step a chunk of a channel", i);
          bool after = false;
          for (uint32_t k = 0; k < o->ndeps; k++) after |= fab_dag_dep(d, o, k) == prev[r];
          cr_assert(after, "op %u: after rank %u's previous loop", i, r);
        }
        prev[r] = i;
        cr_assert_eq(o->max_bps, 0, "the channels together: NVLink's rate");
        cr_assert_eq(o->seg, ch, "segments of a chunk");
      }
      for (uint32_t g = 0; g < L; g++) cr_assert_eq(members[g], n, "group %u: one op per rank", g);
      for (uint32_t r = 0; r < n; r++) cr_assert_eq(sum[r], B, "rank %u: all its data", r);
      fab_dag_free(d);
    }
}

/* A Simple channel across the network moves at most cluster.nccl.channel_net
** in its pieces there (Hopper: 19.74 GB/s, tuner.c), its NVLink pieces at
** their share: two DGX-like nodes of 4 H100, a ring allgather on 8 channels.
** Plain hosts (no SM) have no such limit, nor does LL128. */
Test(protocol, network_pieces_take_the_channels_network_rate) {
  FabCollEnv env = gpus(2, 4);
  cr_assert_eq(env.costs.channel_net_bps, 157920000000ull, "Hopper's fitted 19.74 GB/s, in bits/s");
  uint32_t e[MAXR];
  FabCollSpec s = spec(FAB_COLL_ALLGATHER, FAB_ALGO_RING, 64 << 20, 8);
  s.channels = 8;
  int32_t coll;
  FabDag *d = expand(&env, &s, e, &coll);
  uint32_t across = 0, inside = 0;
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = op_at(d, i);
    if (!is_flow(o)) continue;
    if (o->src / 4 != o->dst / 4) {
      cr_assert_eq(o->max_bps, env.costs.channel_net_bps, "op %u across nodes", i);
      across++;
    } else {
      cr_assert_gt(o->max_bps, env.costs.channel_net_bps, "op %u over NVLink: the channel's own ceiling", i);
      inside++;
    }
  }
  cr_assert(across && inside);
  fab_dag_free(d);
  s.protocol = FAB_PROTO_LL128; /* the limit is Simple's: LL128 keeps its own ceiling */
  d = expand(&env, &s, e, &coll);
  across = 0;
  for (uint32_t i = 0; i < fab_dag_len(d); i++)
    if (is_flow(op_at(d, i)) && op_at(d, i)->src / 4 != op_at(d, i)->dst / 4) {
      cr_assert_eq(op_at(d, i)->max_bps, env.costs.channel_bps[1] / 120 * 128);
      across++;
    }
  cr_assert(across);
  fab_dag_free(d);
  /* GPUs of one node without NVLink (a domain of 0): their flows cross PCIe, not the network */
  FabCollEnv pci = gpus(2, 4);
  pci.nvl_domain = 0;
  s.protocol = FAB_PROTO_SIMPLE;
  d = expand(&pci, &s, e, &coll);
  inside = 0;
  for (uint32_t i = 0; i < fab_dag_len(d); i++)
    if (is_flow(op_at(d, i)) && op_at(d, i)->src / 4 == op_at(d, i)->dst / 4) {
      cr_assert_eq(op_at(d, i)->max_bps, pci.costs.channel_bps[2], "op %u inside a node", i);
      inside++;
    }
  cr_assert(inside);
  fab_dag_free(d);
  /* none on plain hosts (no CTA) or on Blackwell; one set at or above the channel's ceiling binds nothing */
  FabCollEnv h = hosts(8), bw = gpus(2, 4), high = gpus(2, 4);
  cr_assert_eq(h.costs.channel_net_bps, 0, "plain hosts have no CTA");
  bw.sm = 100;
  bw.costs = fab_coll_costs_unset();
  fab_coll_costs_resolve(&bw);
  cr_assert_eq(bw.costs.channel_net_bps, 0, "Blackwell: none");
  high.costs.channel_net_bps = 2 * high.costs.channel_bps[2];
  const FabCollEnv *none[] = {&h, &bw, &high};
  for (size_t k = 0; k < G_N_ELEMENTS(none); k++) {
    d = expand(none[k], &s, e, &coll);
    uint32_t flows = 0;
    for (uint32_t i = 0; i < fab_dag_len(d); i++)
      if (is_flow(op_at(d, i))) {
        cr_assert_eq(op_at(d, i)->max_bps, none[k]->costs.channel_bps[2], "env %zu op %u", k, i);
        flows++;
      }
    cr_assert(flows);
    fab_dag_free(d);
  }
}

/* NVLS_TREE as NCCL pipelines it, chunk by chunk: per loop and domain a
** switch reduce-scatter (RS) over the domain's 4 ranks, each rank the head
** of one shard; a double binary tree per shard index across the D domains;
** then each head's multicast (AG) of its shard into its domain. 128 KiB on
** 2 or 3 domains goes in 32 KiB chunks (NCCL shrinks them for little data),
** a loop of 4 chunks: one loop. */
Test(nvls, tree_across_domains) {
  for (uint32_t D = 2; D <= 3; D++) {
    uint32_t n = 4 * D, e[MAXR];
    FabCollEnv env = gpus(D, 4);
    uint64_t S = 4 * 4 * 8192;
    FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_NVLS_TREE, S, n);
    int32_t coll;
    FabDag *d = expand(&env, &s, e, &coll);
    check_dag(d, &env, &s, coll, e);
    cr_assert_eq(g_array_index(d->colls, FabCollDef, 0).chunk, 32768);
    cr_assert_eq(d->groups, 2 * D, "per domain: one reduce-scatter group, one multicast group");
    cr_assert_eq(count_kind(d, FAB_OP_NVLS), 2 * n);
    uint64_t inter = 0, rs[MAXR] = {0}, ag[MAXR] = {0};
    uint32_t starts[MAXR] = {0};
    const FabNcclCosts *k = &env.costs;
    for (uint32_t i = 0; i < fab_dag_len(d); i++) {
      const FabOp *o = op_at(d, i);
      if (o->kind == FAB_OP_NVLS) { /* the kernel's start (launch, NVLS sync) once a rank, on its first part */
        fab_time_t steps = k->nvls_step * ((o->bytes + 32767) / 32768); /* a step a chunk it covers */
        if (o->pre == k->launch + k->nvls_sync + steps) starts[o->src]++;
        else cr_assert_eq(o->pre, steps, "op %u: its chunks' steps only", i);
        cr_assert_eq(o->max_bps, env.nvl_bps / g_array_index(d->colls, FabCollDef, 0).channels);
      }
      if (o->kind == FAB_OP_NVLS) {
        if (o->mark == FAB_NVLS_OP_RS) rs[o->src] += o->bytes;
        else if (o->mark == FAB_NVLS_OP_AG) ag[o->src] += o->bytes;
        else cr_assert_fail("NVLS op %u neither RS nor AG", i);
      }
      if (!is_flow(o)) continue;
      cr_assert_neq(o->src / 4, o->dst / 4, "no NVLink flow: the switch multicasts");
      cr_assert_eq(o->src % 4, o->dst % 4, "the tree joins ranks of one local index");
      inter += o->bytes;
    }
    for (uint32_t r = 0; r < n; r++) {
      cr_assert_eq(rs[r], S, "rank %u contributes all its data", r);
      cr_assert_eq(ag[r], S / 4, "rank %u multicasts its shard", r);
      cr_assert_eq(starts[r], 1, "rank %u starts its kernel once", r);
    }
    cr_assert_eq(inter, 4 * 2 * (D - 1) * S / 4, "every shard's tree: 2(D-1) transfers");
    fab_dag_free(d);
  }
}

/* In-network allreduce (SHARP). With NVLS (Hopper-like), NCCL's NVLS across
** nodes: per loop of 4 heads x 32 KiB (NCCL's NVLS chunk for 1 MiB on one
** channel x 4 heads), in each node an NVLS reduce-scatter onto the heads, a
** SHARP reduction per local index joining that index's heads across the
** nodes (one member per node, its part), and each node's multicast of the
** result. CollNet Direct instead: direct flows to and from the heads, each
** rank sending the other 3 heads their parts and getting 3 parts back, in
** loops of 4 x 32 KiB. No network flow either way: the network carries
** only the SHARP members' traffic. */
Test(collnet, heads_reduce_in_the_switches) {
  for (int nvls = 1; nvls >= 0; nvls--) {
    uint32_t e[MAXR], n = 8;
    FabCollEnv env = gpus(2, 4);
    env.collnet = true;
    env.nvls = nvls;
    uint64_t S = 1 << 20;
    FabCollSpec s = spec(FAB_COLL_ALLREDUCE, nvls ? FAB_ALGO_NVLS : FAB_ALGO_COLLNET_DIRECT, S, n);
    int32_t coll;
    FabDag *d = expand(&env, &s, e, &coll);
    check_dag(d, &env, &s, coll, e);
    cr_assert_eq(g_array_index(d->colls, FabCollDef, 0).chunk, 32768, "NCCL's chunk: %lu (%u channels)",
                 (unsigned long)g_array_index(d->colls, FabCollDef, 0).chunk, g_array_index(d->colls, FabCollDef, 0).channels);
    uint64_t sharp[MAXR] = {0}, nvl = 0;
    uint32_t members[256] = {0}, first[256];
    memset(first, 0xff, sizeof first);
    for (uint32_t i = 0; i < fab_dag_len(d); i++) {
      const FabOp *o = op_at(d, i);
      if (o->kind == FAB_OP_NVLS && o->mark == FAB_NVLS_OP_SHARP) {
        sharp[o->src] += o->bytes;
        cr_assert_lt(o->group, 256);
        if (first[o->group] == UINT32_MAX) first[o->group] = o->src;
        cr_assert_eq(o->src % 4, first[o->group] % 4, "a reduction joins heads of one local index");
        members[o->group]++;
      } else if (o->kind == FAB_OP_NVLS) {
        cr_assert(nvls, "NVLS ops only with NVLS");
      }
      if (!is_flow(o)) continue;
      cr_assert_eq(o->src / 4, o->dst / 4, "no flow crosses the network");
      nvl += o->bytes;
    }
    for (uint32_t r = 0; r < n; r++) cr_assert_eq(sharp[r], S / 4, "head %u reduces its quarter across nodes", r);
    for (uint32_t g = 0; g < 256; g++) cr_assert(members[g] == 0 || members[g] == 2, "one member per node");
    cr_assert_eq(nvl, nvls ? 0 : 2 * n * 3 * S / 4, "direct: 3 parts out and 3 back per rank");
    fab_dag_free(d);
  }
}

/* NCCL's CollNet Chain on 2 nodes of 4, 2 channels: channel c's chain runs
** from its head, local index c, round the node; its half of the data goes
** up the chain (3 flows a node, each reduced where it lands, the last rank
** first), the head sends it into a SHARP reduction with the other node's
** head of the same index, and the result comes down the chain (3 flows).
** Only heads 0 and 1 of each node reduce in the switches, S / 2 each; the
** NVLink carries 2 nodes x 2 channels x 6 flows of S / 2; nothing crosses
** the network but the heads' SHARP traffic. */
Test(collnet, chain_up_the_switches_and_down) {
  uint32_t e[MAXR], n = 8;
  FabCollEnv env = gpus(2, 4);
  env.collnet = true;
  env.reduce_Bps = 1000000000000ull; /* so that a reduction shows (its post) */
  uint64_t S = 1 << 20;
  FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_COLLNET_CHAIN, S, n);
  s.channels = 2;
  int32_t coll;
  FabDag *d = expand(&env, &s, e, &coll);
  check_dag(d, &env, &s, coll, e);
  /* 256 KiB, halved while a channel holds fewer than 64 x 4 pieces (128 KiB) and fewer than 8 x 4 (64 KiB) */
  cr_assert_eq(g_array_index(d->colls, FabCollDef, 0).chunk, 65536);
  uint64_t sharp[MAXR] = {0}, up = 0, down = 0;
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = op_at(d, i);
    if (o->kind == FAB_OP_NVLS) {
      cr_assert_eq(o->mark, FAB_NVLS_OP_SHARP);
      sharp[o->src] += o->bytes;
      continue;
    }
    if (!is_flow(o)) continue;
    cr_assert_eq(o->src / 4, o->dst / 4, "no flow crosses the network");
    uint32_t c = (o->src % 4 + 4 - o->dst % 4) % 4 == 1 ? 0 : 1; /* up: towards the head, one step back */
    if (c == 0) up += o->bytes;
    else down += o->bytes;
    cr_assert_eq(c == 0, o->post > 0, "flows up are reduced where they land, flows down are not");
  }
  for (uint32_t r = 0; r < n; r++)
    cr_assert_eq(sharp[r], r % 4 < 2 ? S / 2 : 0, "rank %u: %lu into the switches", r, (unsigned long)sharp[r]);
  cr_assert_eq(up, 2 * 2 * 3 * (S / 2));
  cr_assert_eq(down, 2 * 2 * 3 * (S / 2));
  fab_dag_free(d);
}

/* ---- hierarchical ---------------------------------------------------------- */

Test(hierarchical, inside_across_inside) {
  uint32_t N = 2, L = 4, n = N * L, e[MAXR];
  FabCollEnv env = gpus(N, L);
  uint64_t S = 8 * 4 * 4096, rx[MAXR];
  FabCollOp ops[] = {FAB_COLL_ALLREDUCE, FAB_COLL_ALLGATHER, FAB_COLL_REDUCE_SCATTER};
  uint64_t in_rs = (L - 1) * S / L, across = (N - 1) * (S / L) / N;
  uint64_t want[] = {2 * in_rs + 2 * across, across + in_rs, in_rs + across};
  for (int o = 0; o < 3; o++) {
    FabCollSpec s = spec(ops[o], FAB_ALGO_HIERARCHICAL, S, n);
    int32_t coll;
    FabDag *d = expand(&env, &s, e, &coll);
    check_dag(d, &env, &s, coll, e);
    received(d, &s, rx);
    for (uint32_t r = 0; r < n; r++) cr_assert_eq(rx[r], want[o], "%s rank %u: %llu", fab_coll_op_names[ops[o]], r,
                                                  (unsigned long long)rx[r]);
    for (uint32_t i = 0; i < fab_dag_len(d); i++) {
      const FabOp *f = op_at(d, i);
      if (is_flow(f) && f->src / L != f->dst / L) cr_assert_eq(f->src % L, f->dst % L);
    }
    fab_dag_free(d);
  }
}

/* ---- pat ------------------------------------------------------------------- */

/* Does op `from` wait, directly or not, for op `to`? */
static bool reaches(const FabDag *d, uint32_t from, uint32_t to, uint8_t *seen) {
  if (from == to) return true;
  if (from < to || seen[from]) return false;
  seen[from] = 1;
  const FabOp *o = op_at(d, from);
  for (uint32_t k = 0; k < o->ndeps; k++)
    if (reaches(d, fab_dag_dep(d, o, k) & ~FAB_DEP_SENT, to, seen)) return true;
  return false;
}

Test(pat, log_steps_and_every_block_once) {
  for (size_t z = 0; z < NSIZES; z++) {
    uint32_t n = sizes[z], e[MAXR], K = 0;
    while ((1u << K) < n) K++;
    FabCollEnv env = hosts(n);
    env.reduce_Bps = 1e12;
    uint64_t S = 4096ull * n, rx[MAXR];
    for (int rs = 0; rs < 2; rs++) {
      FabCollSpec s = spec(rs ? FAB_COLL_REDUCE_SCATTER : FAB_COLL_ALLGATHER, FAB_ALGO_PAT, S, n);
      int32_t coll;
      FabDag *d = expand(&env, &s, e, &coll);
      check_dag(d, &env, &s, coll, e);
      received(d, &s, rx);
      for (uint32_t r = 0; r < n; r++) cr_assert_eq(rx[r], (n - 1) * S / n, "n=%u rank %u", n, r);
      cr_assert_eq(count_kind(d, FAB_OP_FLOW), n * K, "n=%u: %u steps", n, K);
      for (uint32_t i = 0; i < fab_dag_len(d); i++)
        if (is_flow(op_at(d, i))) cr_assert_eq(op_at(d, i)->post > 0, rs, "only reduce-scatter reduces");
      check_steps(d, &s, 1);
      /* a step forwards blocks from every earlier step: it waits for all of them */
      uint32_t len = fab_dag_len(d), *fl = g_new(uint32_t, len);
      uint8_t *seen = g_new(uint8_t, len);
      uint32_t nf = 0;
      for (uint32_t i = 0; i < len; i++)
        if (is_flow(op_at(d, i))) fl[nf++] = i;
      for (uint32_t a = 0; a < nf; a++)
        for (uint32_t b = 0; b < nf; b++) {
          if (b / n >= a / n || op_at(d, fl[b])->dst != op_at(d, fl[a])->src) continue;
          memset(seen, 0, len);
          cr_assert(reaches(d, fl[a], fl[b], seen), "n=%u: step %u flow %u does not wait for step %u flow %u", n,
                    a / n, fl[a], b / n, fl[b]);
        }
      g_free(fl);
      g_free(seen);
      fab_dag_free(d);
    }
  }
}

/* ---- pairwise, send-recv ----------------------------------------------------- */

/* NCCL's p2p rounds for ranks that are each a node of their own (groups of
** one): round r sends to i + d_r, d_r NCCL's quadratic walk (x^2 + x) / 2
** mod the next power of two, the values under n kept (init.cc
** ncclP2pSchedule; for 16 ranks 0, 1, 3, 6, 10, 15, 5, 12, ...). */
static uint32_t quad_deltas(uint32_t n, uint32_t *d) {
  uint32_t pw = 1, k = 0;
  while (pw < n) pw <<= 1;
  for (uint32_t x = 0; x < pw; x++) {
    uint32_t v = (x * x + x) / 2 % pw;
    if (v < n) d[k++] = v;
  }
  return k;
}

static uint32_t rev2(uint32_t v) { return ((v & 1) << 1) | ((v >> 1) & 1); } /* 2 bits reversed */

/* The warps a p2p work's receive gets when its channel holds `works` works
** of a batch, each with a send and a receive (src/device/sendrecv.h, on
** paper): 20 warps / works = 20, 10, 6, 5, 4, 3, 2, 2 a work; the receive
** (w - 1) / 2 of them from 5 up, w / 2 below; the send one more from 5 up,
** less the warp a Simple send of 3 or more gives to sync: as many. */
static const uint32_t recv_warps[9] = {0, 9, 4, 2, 2, 2, 1, 1, 1};

/* All-to-all as NCCL schedules its sends and receives (coll_p2p.c), on 4
** p2p channels over plain hosts (one channel per op): round r's op runs on
** channel bitrev(r mod 4) (ncclP2pChannelBaseForRound); the rounds of one
** group of 8 start together, each at the channel's Simple rate over 16
** warps times the warps its receive gets of the CTA's 20 split over the
** works the channel holds in that batch (round 0, the rank's own copy,
** counts); a round of the next group waits on its channel for the batch
** before: the rank's sends out and its receives in. */
Test(pairwise, nccl_rounds_channels_and_batches) {
  static const uint32_t ns[] = {2, 3, 5, 8, 13, 20};
  for (size_t z = 0; z < sizeof ns / sizeof ns[0]; z++) {
    uint32_t n = ns[z], e[MAXR], dl[MAXR];
    FabCollEnv env = hosts(n);
    uint64_t S = 4096ull * n, rx[MAXR];
    FabCollSpec s = spec(FAB_COLL_ALL_TO_ALL, FAB_ALGO_AUTO, S, n);
    s.channels = 4;
    int32_t coll;
    FabDag *d = expand(&env, &s, e, &coll);
    cr_assert_str_eq(g_array_index(d->colls, FabCollDef, coll).algorithm, "pairwise");
    cr_assert_eq(g_array_index(d->colls, FabCollDef, coll).channels, 4);
    check_dag(d, &env, &s, coll, e);
    received(d, &s, rx);
    for (uint32_t r = 0; r < n; r++) cr_assert_eq(rx[r], (n - 1) * S / n);
    cr_assert_eq(quad_deltas(n, dl), n);
    uint32_t len = fab_dag_len(d), out[MAXR], in[MAXR];
    uint64_t *ready = g_new(uint64_t, len), *done = g_new(uint64_t, len);
    uint8_t *seen = g_new(uint8_t, len);
    play(d, ready, done);
    for (uint32_t i = 0; i < n; i++) {
      cr_assert_eq(flows_of(d, i, true, out), n - 1);
      cr_assert_eq(flows_of(d, i, false, in), n - 1);
      uint64_t t0 = UINT64_MAX;
      for (uint32_t k = 0; k < n - 1; k++) t0 = MIN(t0, ready[out[k]]);
      for (uint32_t r = 1; r < n; r++) {
        uint32_t to = (i + dl[r]) % n, k = 0;
        while (k < n - 1 && op_at(d, out[k])->dst != to) k++;
        cr_assert_lt(k, n - 1, "n=%u: rank %u sends to %u", n, i, to);
        const FabOp *o = op_at(d, out[k]);
        uint32_t c = rev2(r % 4), works = 0;
        for (uint32_t q = r / 8 * 8; q < MIN(r / 8 * 8 + 8, n); q++) works += rev2(q % 4) == c;
        cr_assert_eq(o->lane, c + 1, "n=%u: round %u on channel %u", n, r, c);
        cr_assert_eq(o->max_bps, env.costs.channel_bps[2] / 16 * recv_warps[works],
                     "n=%u round %u: the CTA split %u ways", n, r, works);
        if (r < 8) {
          cr_assert_eq(ready[out[k]], t0, "n=%u: rounds 1-7 start together", n);
          continue;
        }
        cr_assert_gt(ready[out[k]], t0, "n=%u: round %u waits for its channel's batch before", n, r);
        /* the batch before on its channel: this rank's sends and receives there */
        for (uint32_t q = r / 8 * 8 - 8; q < r / 8 * 8; q++) {
          if (rev2(q % 4) != c || q == 0) continue;
          uint32_t peer_out = (i + dl[q]) % n, peer_in = (i + n - dl[q]) % n;
          for (uint32_t m = 0; m < n - 1; m++) {
            if (op_at(d, out[m])->dst != peer_out) continue;
            memset(seen, 0, len);
            cr_assert(reaches(d, out[k], out[m], seen), "n=%u: round %u waits for its send of round %u", n, r, q);
          }
          for (uint32_t m = 0; m < n - 1; m++) {
            if (op_at(d, in[m])->src != peer_in) continue;
            memset(seen, 0, len);
            cr_assert(reaches(d, out[k], in[m], seen), "n=%u: round %u waits for its receive of round %u", n, r, q);
          }
        }
      }
    }
    g_free(ready);
    g_free(done);
    g_free(seen);
    fab_dag_free(d);
  }
}

/* NCCL's protocol for a p2p op (addP2pToPlan): LL while the op holds at
** most NCCL_P2P_LL_THRESHOLD = 16 KiB a channel and both its connections
** have LL buffers, else Simple; network connections have none
** (NCCL_ALLOC_P2P_NET_LL_BUFFERS = 0, src/transport/net.cc). In one NVLink
** domain of 8 a 16 KiB block is one channel's (its minimum part is the
** 512 KiB step / 8): LL, a byte more is not; on plain hosts every peer is
** across the network: Simple. A protocol given stays. */
Test(pairwise, ll_up_to_16_kib_a_channel_in_an_nvlink_domain) {
  uint32_t n = 8;
  for (int net = 0; net < 2; net++) {
    FabCollEnv env = net ? hosts(n) : gpus(1, n);
    for (int more = 0; more < 2; more++)
      for (int given = 0; given < 2; given++) {
        FabCollSpec s = spec(FAB_COLL_ALL_TO_ALL, FAB_ALGO_AUTO, n * (16384ull + 4 * more), n);
        s.protocol = given ? FAB_PROTO_SIMPLE : FAB_PROTO_AUTO;
        s.channels = 0;
        int32_t coll;
        FabDag *d = expand(&env, &s, NULL, &coll);
        const char *want = !net && !given && !more ? "ll" : "simple";
        cr_assert_str_eq(g_array_index(d->colls, FabCollDef, coll).protocol, want, "%s, %s block, protocol %s",
                         net ? "hosts" : "one domain", more ? "16 KiB + 4" : "16 KiB", given ? "simple" : "auto");
        fab_dag_free(d);
      }
  }
}

/* Two nodes of 8 H100 (one NVLink domain each, a 400 Gb/s NIC per GPU):
** NCCL's 8-rank groups, so rounds 0-7 are the rank's node (channels 0-3,
** base 0) and rounds 8-15 the other node (base bitrev(1) over 16 channels
** = 8: channels 8-11); 4 channels a peer (the NIC's 50 GB/s over 14 GB/s a
** channel), each op cut in 4 parts; every part of every peer starts at
** once, each with one warp of the CTA's 20 over the channel's 8 works:
** 1/16 of the Simple rate (38.7 / 16 GB/s), across the network at most
** the network channel's rate over the works (19.74 / 8, the higher here). */
Test(pairwise, two_nodes_every_peer_at_once) {
  uint32_t e[MAXR];
  FabCollEnv env = gpus(2, 8);
  uint64_t S = 16ull << 20, rx[MAXR];
  FabCollSpec s = spec(FAB_COLL_ALL_TO_ALL, FAB_ALGO_PAIRWISE, S, 16);
  s.channels = 16;
  int32_t coll;
  FabDag *d = expand(&env, &s, e, &coll);
  check_dag(d, &env, &s, coll, e);
  received(d, &s, rx);
  for (uint32_t r = 0; r < 16; r++) cr_assert_eq(rx[r], 15 * S / 16);
  uint32_t len = fab_dag_len(d), out[MAXR * 8];
  uint64_t *ready = g_new(uint64_t, len), *done = g_new(uint64_t, len);
  play(d, ready, done);
  for (uint32_t i = 0; i < 16; i++) {
    uint32_t no = flows_of(d, i, true, out), parts[16] = {0}, firsts = 0, lanes = 0;
    uint64_t t0 = UINT64_MAX;
    for (uint32_t k = 0; k < no; k++) t0 = MIN(t0, ready[out[k]]);
    for (uint32_t k = 0; k < no; k++) {
      const FabOp *o = op_at(d, out[k]);
      bool remote = o->dst / 8 != i / 8;
      uint64_t warp = env.costs.channel_bps[2] / 16, net = env.costs.channel_net_bps / 8;
      cr_assert_lt(warp, net, "the warp is the lower on Hopper");
      cr_assert_eq(o->max_bps, warp, "8 works a channel: one warp each, across the network too");
      if (remote) cr_assert(o->lane >= 9 && o->lane <= 12, "channels 8-11: lanes 9-12 (the GPU's NIC c mod its NICs)");
      if (remote) lanes |= 1u << o->lane;
      if (ready[out[k]] == t0) firsts++, parts[o->dst]++;
    }
    cr_assert_eq(firsts, 15 * 4, "rank %u: 15 peers x 4 parts start together", i);
    cr_assert_eq(lanes, 0xfu << 9, "rank %u: lanes 9, 10, 11 and 12 all", i);
    for (uint32_t p = 0; p < 16; p++) cr_assert_eq(parts[p], p == i ? 0 : 4);
  }
  g_free(ready);
  g_free(done);
  fab_dag_free(d);
}

/* ---- copy engines --------------------------------------------------------------- */

/* cta_zero in one NVLink domain: allgather and all-to-all take the copy
** engines (ce). Per rank: n-1 flags out (after its BEGIN, paying the launch
** and the flag work), its n-1 copies after every peer's flag reached it, to
** i+1, i+2, ... (allgather: its own part; all-to-all: the receiver's
** block), then n-1 flags after all its copies landed; it ends when every
** peer's second flag reached it. No per-channel SM limit on the copies. */
Test(ce, a_barrier_the_copies_a_barrier) {
  for (int a2a = 0; a2a < 2; a2a++)
    for (size_t z = 0; z < NSIZES; z++) {
      uint32_t n = sizes[z], e[MAXR];
      FabCollEnv env = gpus(1, n);
      env.costs.launch = 7 * FAB_US, env.costs.ce_sync = 3 * FAB_US;
      uint64_t S = 4096ull * n + 4 * (n - 1), rx[MAXR]; /* parts differ by an element */
      FabCollSpec s = spec(a2a ? FAB_COLL_ALL_TO_ALL : FAB_COLL_ALLGATHER, FAB_ALGO_AUTO, S, n);
      s.cta_zero = true;
      s.channels = 0;
      s.protocol = FAB_PROTO_AUTO;
      int32_t coll;
      FabDag *d = expand(&env, &s, e, &coll);
      const FabCollDef *def = &g_array_index(d->colls, FabCollDef, coll);
      cr_assert_str_eq(def->algorithm, "ce");
      cr_assert_str_eq(def->protocol, "memcpy");
      check_dag(d, &env, &s, coll, e);
      uint32_t len = fab_dag_len(d), out[3 * MAXR];
      cr_assert_eq(count_kind(d, FAB_OP_FLOW), 3 * n * (n - 1));
      received(d, &s, rx);
      for (uint32_t r = 0; r < n; r++) {
        uint64_t want = 2 * (n - 1) * 4;
        for (uint32_t i = 0; i < n; i++)
          if (i != r) want += (S / 4) / n * 4 + ((a2a ? r : i) < (S / 4) % n ? 4 : 0);
        cr_assert_eq(rx[r], want, "rank %u received %" G_GUINT64_FORMAT ", not %" G_GUINT64_FORMAT, r, rx[r], want);
      }
      uint64_t *ready = g_new(uint64_t, len), *done = g_new(uint64_t, len);
      play(d, ready, done);
      for (uint32_t r = 0; r < n; r++) {
        cr_assert_eq(flows_of(d, r, true, out), 3 * (n - 1));
        for (uint32_t k = 0; k < 3 * (n - 1); k++) {
          const FabOp *o = op_at(d, out[k]);
          uint32_t phase = k / (n - 1), to = (r + k % (n - 1) + 1) % n;
          cr_assert_eq(o->dst, to, "rank %u's flow %u goes to %u", r, k, o->dst);
          cr_assert_eq(o->max_bps, 0, "no channel limit");
          cr_assert_eq(o->pre, phase == 0 ? 10 * FAB_US : phase == 1 ? 0 : 3 * FAB_US);
          if (phase != 1) cr_assert_eq(o->bytes, 4, "a flag");
          if (phase == 1) /* a copy: every peer's first flag is in */
            for (uint32_t i = 0; i < len; i++)
              if (op_at(d, i)->dst == r && op_at(d, i)->bytes == 4 && i < out[n - 1])
                cr_assert_geq(ready[out[k]], done[i], "rank %u copied before flag %u reached it", r, i);
          if (phase == 2) /* a second flag: all its copies landed */
            for (uint32_t c = n - 1; c < 2 * (n - 1); c++) cr_assert_geq(ready[out[k]], done[out[c]]);
        }
      }
      g_free(ready);
      g_free(done);
      fab_dag_free(d);
    }
}

/* Where NCCL has no copy-engine path, cta_zero changes nothing but says so:
** ranks in two NVLink domains (its hierarchical path is not modelled), no
** NVLink at all; and other collectives never take it. */
Test(ce, only_in_one_nvlink_domain_and_says_so_elsewhere) {
  uint32_t e[MAXR];
  FabCollEnv two = gpus(2, 4), h = hosts(8), one = gpus(1, 8);
  FabCollEnv *envs[] = {&two, &h};
  const char *why[] = {"span NVLink domains", "no NVLink"};
  for (int k = 0; k < 2; k++) {
    GPtrArray *w = g_ptr_array_new_with_free_func(g_free);
    envs[k]->warnings = w;
    FabCollSpec s = spec(FAB_COLL_ALLGATHER, FAB_ALGO_AUTO, 1 << 20, 8);
    s.cta_zero = true;
    FabDag *d = expand(envs[k], &s, e, NULL);
    cr_assert_str_neq(g_array_index(d->colls, FabCollDef, 0).algorithm, "ce");
    cr_assert_eq(w->len, 1);
    cr_assert(strstr(g_ptr_array_index(w, 0), "cta_policy zero: allgather on 8 ranks runs NCCL's SM kernels"));
    cr_assert(strstr(g_ptr_array_index(w, 0), why[k]), "%s", (char *)g_ptr_array_index(w, 0));
    fab_dag_free(d);
    g_ptr_array_unref(w);
    envs[k]->warnings = NULL;
  }
  GPtrArray *w = g_ptr_array_new_with_free_func(g_free);
  one.warnings = w;
  FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_AUTO, 1 << 20, 8);
  s.cta_zero = true;
  FabDag *d = expand(&one, &s, e, NULL);
  cr_assert_str_neq(g_array_index(d->colls, FabCollDef, 0).algorithm, "ce");
  cr_assert_eq(w->len, 0, "an allreduce has no copy-engine path in NCCL: nothing to say");
  fab_dag_free(d);
  /* an explicit algorithm gives way, as NCCL takes the copy engines before any algorithm choice */
  s = spec(FAB_COLL_ALLGATHER, FAB_ALGO_RING, 1 << 20, 8);
  s.cta_zero = true;
  d = expand(&one, &s, e, NULL);
  cr_assert_str_eq(g_array_index(d->colls, FabCollDef, 0).algorithm, "ce");
  fab_dag_free(d);
  g_ptr_array_unref(w);
}

Test(sendrecv, each_rank_to_the_next) {
  for (size_t z = 0; z < NSIZES; z++) {
    uint32_t n = sizes[z], e[MAXR];
    FabCollEnv env = hosts(n);
    uint64_t S = 1 << 20, rx[MAXR];
    FabCollSpec s = spec(FAB_COLL_SEND_RECV, FAB_ALGO_AUTO, S, n);
    int32_t coll;
    FabDag *d = expand(&env, &s, e, &coll);
    check_dag(d, &env, &s, coll, e);
    received(d, &s, rx);
    for (uint32_t r = 0; r < n; r++) cr_assert_eq(rx[r], S);
    for (uint32_t i = 0; i < fab_dag_len(d); i++)
      if (is_flow(op_at(d, i))) cr_assert_eq(op_at(d, i)->dst, (op_at(d, i)->src + 1) % n);
    fab_dag_free(d);
  }
}

/* Send-recv runs as NCCL's p2p (one op a rank in a group), not on the
** ring's channels: over the network a peer takes the GPU's NICs or their
** bandwidth / 14 GB/s channels (4 for a 400 Gb/s NIC), halved across
** nodes while they times the groups of 8 ranks exceed the p2p channels
** (src/graph/paths.cc ncclTopoComputeP2pChannels): on 4 p2p channels, 2
** ranks keep 4 a peer, 10 ranks (two groups) 2. Each channel's part moves
** at the channel's network rate, below the 9 warps of 16 its receive gets
** (one work a channel: its send and its receive). */
Test(sendrecv, nccl_p2p_channels_per_peer) {
  static const uint32_t ns[] = {2, 10}, want[] = {4, 2};
  for (size_t z = 0; z < 2; z++) {
    uint32_t n = ns[z], e[MAXR], out[MAXR * 8];
    FabCollEnv env = gpus(n, 1);
    uint64_t S = 16ull << 20, rx[MAXR];
    FabCollSpec s = spec(FAB_COLL_SEND_RECV, FAB_ALGO_RING, S, n);
    s.channels = 4;
    int32_t coll;
    FabDag *d = expand(&env, &s, e, &coll);
    cr_assert_eq(g_array_index(d->colls, FabCollDef, coll).channels, 4);
    check_dag(d, &env, &s, coll, e);
    received(d, &s, rx);
    for (uint32_t r = 0; r < n; r++) cr_assert_eq(rx[r], S);
    for (uint32_t i = 0; i < n; i++) {
      uint32_t no = flows_of(d, i, true, out), lanes = 0;
      uint64_t bytes[8] = {0};
      for (uint32_t k = 0; k < no; k++) {
        const FabOp *o = op_at(d, out[k]);
        cr_assert_eq(o->dst, (i + 1) % n);
        cr_assert(o->lane >= 1 && o->lane <= 4);
        cr_assert_lt(env.costs.channel_net_bps, env.costs.channel_bps[2] / 16 * 9);
        cr_assert_eq(o->max_bps, env.costs.channel_net_bps, "one work a channel, the network's rate");
        lanes |= 1u << (o->lane - 1), bytes[o->lane - 1] += o->bytes;
      }
      cr_assert_eq((uint32_t)__builtin_popcount(lanes), want[z], "n=%u rank %u: %u channels a peer", n, i, want[z]);
      for (uint32_t c = 0; c < 4; c++) cr_assert(!(lanes >> c & 1) || bytes[c] == S / want[z], "equal parts");
    }
    fab_dag_free(d);
  }
}

/* Send-recv on one node of 8 H100 (NVLink): each rank's send and receive
** are one work of round 1 (delta 1), alone on their channels, so the work's
** 20 warps split 10 to the send and 9 to the receive, and each part moves
** at 9/16 of the Simple channel's rate (src/device/sendrecv.h; the one-node
** sendrecv_perf of the validation suite, about 20 GB/s a channel). */
Test(sendrecv, a_p2p_works_warps_set_its_rate) {
  uint32_t n = 8, e[MAXR], out[MAXR * 8];
  FabCollEnv env = gpus(1, n);
  uint64_t S = 128ull << 20;
  FabCollSpec s = spec(FAB_COLL_SEND_RECV, FAB_ALGO_RING, S, n);
  s.channels = 32;
  int32_t coll;
  FabDag *d = expand(&env, &s, e, &coll);
  check_dag(d, &env, &s, coll, e);
  uint64_t want = env.costs.channel_bps[2] / 16 * 9;
  cr_assert_eq(want, 174150000000ull, "38.7 GB/s x 9 / 16 = 21.77 GB/s, in bits");
  for (uint32_t i = 0; i < n; i++) {
    uint32_t no = flows_of(d, i, true, out);
    uint64_t bytes = 0;
    for (uint32_t k = 0; k < no; k++) {
      const FabOp *o = op_at(d, out[k]);
      cr_assert_eq(o->dst, (i + 1) % n);
      cr_assert_eq(o->max_bps, want, "rank %u: 9 warps of 16", i);
      bytes += o->bytes;
    }
    cr_assert_eq(bytes, S);
  }
  fab_dag_free(d);
}

/* Send-recv over two nodes of 8 GPUs: the hop across nodes (7 -> 8, and
** 15 -> 0) is round 9, in the second batch, where neither end has another
** op, so it is a lone send and a lone receive, each one work. NCCL cuts a
** work of 20 warps to its send and receive's 10 + 9 = 19, and a lone op
** takes them all; a Simple send of 3 warps or more gives one to sync
** (src/device/sendrecv.h, src/device/prims_simple.h): 18 data warps at
** the sender, 19 at the receiver, 18/16 of the Simple channel's rate (with
** the network's channel rate raised out of the way). The hops inside a
** node hold a send and a receive of round 1 at one end: 9 warps. */
Test(sendrecv, a_lone_send_gets_the_cut_warps_less_its_sync_warp) {
  uint32_t n = 16, e[MAXR], out[MAXR * 8];
  FabCollEnv env = gpus(2, 8);
  env.costs.channel_net_bps = env.costs.channel_bps[2] * 4;
  FabCollSpec s = spec(FAB_COLL_SEND_RECV, FAB_ALGO_RING, 64ull << 20, n);
  s.channels = 32;
  int32_t coll;
  FabDag *d = expand(&env, &s, e, &coll);
  check_dag(d, &env, &s, coll, e);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t no = flows_of(d, i, true, out), across = i % 8 == 7;
    cr_assert_gt(no, 0);
    for (uint32_t k = 0; k < no; k++)
      cr_assert_eq(op_at(d, out[k])->max_bps, env.costs.channel_bps[2] / 16 * (across ? 18 : 9),
                   "rank %u: %s", i, across ? "a lone send: 18 warps of 16" : "9 warps of 16");
  }
  fab_dag_free(d);
}

/* NCCL counts a GPU's NICs for p2p at the GPU-to-NIC path's rate, the
** lower of the NIC's and PCIe's (src/graph/topo.cc getLocalNetCountByBw,
** NCCL's PCIe: 3/4 of signalling, Gen5 x16 48 GB/s, Gen4 x16 24): a 400
** Gb/s NIC behind Gen5 gives 48 / 14 -> 4 channels a peer, behind Gen4 24
** / 14 -> 2. Two ranks on 4 p2p channels: the op takes them all. */
Test(sendrecv, pcie_caps_the_channels_a_network_peer_gets) {
  static const uint64_t gts[] = {32000000000ull, 16000000000ull};
  static const uint32_t want[] = {4, 2};
  for (size_t z = 0; z < 2; z++) {
    uint32_t n = 2, e[MAXR], out[MAXR * 8];
    FabCollEnv env = gpus(2, 1);
    env.pcie_bps = gts[z] * 16 * 128 / 130;
    FabCollSpec s = spec(FAB_COLL_SEND_RECV, FAB_ALGO_RING, 64ull << 20, n);
    s.channels = 4;
    int32_t coll;
    FabDag *d = expand(&env, &s, e, &coll);
    check_dag(d, &env, &s, coll, e);
    for (uint32_t i = 0; i < n; i++) {
      uint32_t no = flows_of(d, i, true, out), lanes = 0;
      for (uint32_t k = 0; k < no; k++) lanes |= 1u << (op_at(d, out[k])->lane - 1);
      cr_assert_eq((uint32_t)__builtin_popcount(lanes), want[z], "Gen%d: %u channels a peer", z ? 4 : 5, want[z]);
    }
    fab_dag_free(d);
  }
}

/* NCCL's p2p step across nodes is 128 KiB, twice on Grace Blackwell (Arm
** hosts of sm100, src/init.cc), and the chunk a quarter of it for an op
** under one step, half under 8 (src/enqueue.cc): send-recv of 64 MiB, 1
** MiB and 64 KiB over two nodes. */
Test(sendrecv, the_p2p_chunk_across_nodes_by_host) {
  static const uint64_t S[] = {64ull << 20, 1ull << 20, 64ull << 10};
  for (int arm = 0; arm < 2; arm++)
    for (size_t z = 0; z < 3; z++) {
      uint32_t e[MAXR];
      FabCollEnv env = gpus(2, 4);
      if (arm) env.sm = 100, env.cpu = FAB_COLL_CPU_ARM;
      FabCollSpec s = spec(FAB_COLL_SEND_RECV, FAB_ALGO_RING, S[z], 8);
      s.channels = 8;
      int32_t coll;
      FabDag *d = expand(&env, &s, e, &coll);
      uint64_t step = arm ? 262144 : 131072, want = S[z] < step ? step / 4 : S[z] < 8 * step ? step / 2 : step;
      cr_assert_eq(g_array_index(d->colls, FabCollDef, coll).chunk, want, "%s, %lu B", arm ? "Arm sm100" : "x86",
                   (unsigned long)S[z]);
      fab_dag_free(d);
    }
}

/* NCCL cuts a p2p op's step (128 KiB across nodes) only on a network
** connection, and by that op's own size (src/enqueue.cc addP2pToPlan): on 2
** nodes of 4, an all-to-all of 64 KiB blocks crosses the network in 32 KiB
** pieces and NVLink in one 64 KiB piece; rank 0's 2 MiB block to rank 4
** goes in 128 KiB pieces though the average block is small. A chunk the
** user sets holds for every op. */
Test(alltoall, each_p2p_op_is_cut_by_its_own_size_on_the_network_only) {
  uint32_t n = 8;
  uint64_t *counts = g_new(uint64_t, (size_t)n * n);
  for (uint32_t k = 0; k < n * n; k++) counts[k] = 65536;
  counts[4] = 2 << 20; /* rank 0 to rank 4 */
  FabCollEnv env = gpus(2, 4);
  for (int user = 0; user < 2; user++) {
    FabCollSpec s = spec(FAB_COLL_ALL_TO_ALL, FAB_ALGO_PAIRWISE, 0, n);
    s.counts = counts, s.channels = 8, s.chunk = user ? 16384 : 0;
    for (uint32_t k = 0; k < n * n; k++) s.bytes += counts[k];
    s.bytes /= n;
    FabDag *d = expand(&env, &s, NULL, NULL);
    uint64_t big[MAXR * MAXR] = {0}, pieces[MAXR * MAXR] = {0};
    for (uint32_t k = 0; k < fab_dag_len(d); k++) {
      const FabOp *o = op_at(d, k);
      if (!is_flow(o) || o->src == o->dst) continue;
      big[o->src * n + o->dst] = MAX(big[o->src * n + o->dst], o->bytes);
      pieces[o->src * n + o->dst]++;
    }
    for (uint32_t i = 0; i < n; i++)
      for (uint32_t j = 0; j < n; j++) {
        if (i == j) continue;
        bool net = i / 4 != j / 4;
        uint64_t want = user ? 16384 : i == 0 && j == 4 ? 131072 : net ? 32768 : 65536;
        cr_assert_eq(big[i * n + j], want, "%s: %u -> %u: pieces of %lu B", user ? "user's chunk" : "NCCL's", i, j,
                     (unsigned long)big[i * n + j]);
        cr_assert_eq(pieces[i * n + j], counts[i * n + j] / want, "%u -> %u", i, j);
      }
    fab_dag_free(d);
  }
  g_free(counts);
}

/* With protocol auto NCCL picks each p2p op's protocol (src/enqueue.cc
** addP2pToPlan): LL while the op holds at most 16 KiB a channel and its
** connection has LL buffers, which a network one has not. On 2 nodes of 4,
** an all-to-all of 8 KiB blocks runs its NVLink ops LL (16 bytes on the
** wire for 8 of data, LL's step cost) and its network ops Simple; on one
** node, where one block is 4 MiB, the collective is Simple and its 8 KiB
** blocks still LL. */
Test(alltoall, each_p2p_op_picks_its_protocol) {
  for (int one = 0; one < 2; one++) {
    uint32_t n = 8;
    uint64_t *counts = g_new(uint64_t, (size_t)n * n);
    for (uint32_t k = 0; k < n * n; k++) counts[k] = 8192;
    if (one) counts[1] = 4 << 20; /* rank 0 to rank 1 */
    FabCollEnv env = one ? gpus(1, 8) : gpus(2, 4);
    FabCollSpec s = spec(FAB_COLL_ALL_TO_ALL, FAB_ALGO_PAIRWISE, 0, n);
    s.counts = counts, s.channels = 8, s.protocol = FAB_PROTO_AUTO;
    for (uint32_t k = 0; k < n * n; k++) s.bytes += counts[k];
    s.bytes /= n;
    int32_t coll;
    FabDag *d = expand(&env, &s, NULL, &coll);
    cr_assert_str_eq(g_array_index(d->colls, FabCollDef, coll).protocol, "simple");
    uint64_t wire[MAXR * MAXR] = {0};
    fab_time_t pre[MAXR * MAXR] = {0};
    for (uint32_t k = 0; k < fab_dag_len(d); k++) {
      const FabOp *o = op_at(d, k);
      if (!is_flow(o) || o->src == o->dst) continue;
      wire[o->src * n + o->dst] += o->bytes;
      pre[o->src * n + o->dst] = MAX(pre[o->src * n + o->dst], o->pre);
    }
    for (uint32_t i = 0; i < n; i++)
      for (uint32_t j = 0; j < n; j++) {
        if (i == j) continue;
        bool net = !one && i / 4 != j / 4, ll = counts[i * n + j] == 8192 && !net;
        cr_assert_eq(wire[i * n + j], (ll ? 2 : 1) * counts[i * n + j], "%s: %u -> %u: %lu B on the wire",
                     one ? "one node" : "two nodes", i, j, (unsigned long)wire[i * n + j]);
        fab_time_t step = env.costs.step[ll ? 0 : 2];
        cr_assert(pre[i * n + j] >= step && pre[i * n + j] <= step + env.costs.launch + net *
                  fab_coll__net_msg(&env.costs, FAB_PROTO_SIMPLE), "%u -> %u: its step", i, j);
      }
    fab_dag_free(d);
    g_free(counts);
  }
}

/* Send-recv's own expansion (coll_p2p.c, no n x n tables) makes what the
** all-to-all schedule makes for the same ops: an all-to-all whose counts
** send `bytes` from each rank to the next and nothing else gives the same
** operations, field by field and dependency by dependency, on plain hosts
** (groups of one), one NVLink domain, and nodes of 8 and 4 GPUs (groups of
** 8 and 4, batches of rounds apart), on 1, 2 and 8 channels (on one, a
** rank's send and receive of two rounds split its CTA). */
Test(sendrecv, the_same_operations_as_the_all_to_all_schedule) {
  static const struct { uint32_t nodes, g; } shapes[] = {{2, 1}, {3, 1}, {9, 1}, {17, 1}, {20, 1}, {1, 8},
                                                          {2, 8}, {3, 4}, {5, 4}, {4, 8}};
  for (size_t zc = 0; zc < 3 * sizeof shapes / sizeof shapes[0]; zc++) {
    size_t z = zc / 3;
    uint32_t n = shapes[z].nodes * shapes[z].g, ch = zc % 3 == 0 ? 1 : zc % 3 == 1 ? 2 : 8;
    FabCollEnv env = shapes[z].g == 1 ? hosts(n) : gpus(shapes[z].nodes, shapes[z].g);
    uint64_t S = 3 * 131072 + 4 * z, *counts = g_new0(uint64_t, (size_t)n * n);
    for (uint32_t i = 0; i < n; i++) counts[(size_t)i * n + (i + 1) % n] = S;
    FabDag *d[2];
    for (int a2a = 0; a2a < 2; a2a++) {
      FabCollSpec s = spec(a2a ? FAB_COLL_ALL_TO_ALL : FAB_COLL_SEND_RECV, a2a ? FAB_ALGO_PAIRWISE : FAB_ALGO_RING,
                           a2a ? S * n : S, n);
      s.channels = ch, s.chunk = 65536, s.counts = a2a ? counts : NULL; /* 1, 2: a send and a receive share one */
      d[a2a] = expand(&env, &s, NULL, NULL);
    }
    cr_assert_eq(fab_dag_len(d[0]), fab_dag_len(d[1]), "%u x %u: ops", shapes[z].nodes, shapes[z].g);
    uint32_t flows = 0;
    for (uint32_t k = 0; k < fab_dag_len(d[0]); k++) {
      const FabOp *a = op_at(d[0], k), *b = op_at(d[1], k);
      cr_assert(a->kind == b->kind && a->src == b->src && a->dst == b->dst && a->bytes == b->bytes &&
                a->lane == b->lane && a->max_bps == b->max_bps && a->pre == b->pre && a->mark == b->mark &&
                a->ndeps == b->ndeps, "%u x %u: op %u", shapes[z].nodes, shapes[z].g, k);
      for (uint32_t q = 0; q < a->ndeps; q++)
        cr_assert_eq(fab_dag_dep(d[0], a, q), fab_dag_dep(d[1], b, q), "%u x %u: op %u dep %u", shapes[z].nodes,
                     shapes[z].g, k, q);
      flows += is_flow(a);
    }
    cr_assert_geq(flows, n, "every rank sends");
    fab_dag_free(d[0]), fab_dag_free(d[1]);
    g_free(counts);
  }
}

/* p2p's channel c leaves by the GPU's NIC c mod its NICs (NCCL's
** ncclTopoGetLocalNetType: channelId % netsPerGpu), not by the ring's entry
** GPU: two nodes of 8 GPUs with 4 NICs a GPU (AWS p5), send-recv across
** the nodes takes as many NICs as it has parts, up to 4. */
Test(sendrecv, p2p_channels_take_the_gpus_nics_in_turn) {
  uint32_t e[MAXR], out[MAXR * 8];
  FabCollEnv env = gpus(2, 8);
  env.nics_per_node = 32;
  FabCollSpec s = spec(FAB_COLL_SEND_RECV, FAB_ALGO_RING, 16ull << 20, 16);
  s.channels = 16;
  int32_t coll;
  FabDag *d = expand(&env, &s, e, &coll);
  check_dag(d, &env, &s, coll, e);
  for (uint32_t i = 7; i < 16; i += 8) { /* the two ranks whose next is on the other node */
    uint32_t no = flows_of(d, i, true, out), nics = 0, chans = 0;
    for (uint32_t k = 0; k < no; k++) {
      const FabOp *o = op_at(d, out[k]);
      cr_assert_geq(o->lane, 1);
      nics |= 1u << ((o->lane - 1) % 4), chans |= 1u << (o->lane - 1);
    }
    uint32_t nc = (uint32_t)__builtin_popcount(chans);
    cr_assert_geq(nc, 2, "rank %u: its op on more than one channel", i);
    cr_assert_eq((uint32_t)__builtin_popcount(nics), MIN(nc, 4u), "rank %u: %u channels on distinct NICs", i, nc);
  }
  fab_dag_free(d);
}

/* ---- protocols, latency, pieces, channels ------------------------------------ */

/* LL carries 8 data bytes in every 16, LL128 120 in every 128. A tree
** cuts its pieces the same way for every protocol (compared piece by
** piece); a ring's Simple chunk is two slices, so there the totals. */
Test(protocol, wire_bytes_grow_by_the_protocol) {
  uint32_t n = 4, e[MAXR];
  FabCollEnv env = hosts(n);
  FabCollAlgo algs[] = {FAB_ALGO_TREE, FAB_ALGO_RING};
  for (int a = 0; a < 2; a++) {
    FabCollSpec s = spec(FAB_COLL_ALLREDUCE, algs[a], 3 * 1000 * 1000 + 4, n);
    s.chunk = 100000;
    FabDag *ds[3];
    FabProto ps[] = {FAB_PROTO_SIMPLE, FAB_PROTO_LL, FAB_PROTO_LL128};
    uint64_t tot[3] = {0}, nfl[3] = {0};
    for (int p = 0; p < 3; p++) {
      s.protocol = ps[p];
      ds[p] = expand(&env, &s, e, NULL);
      cr_assert_str_eq(g_array_index(ds[p]->colls, FabCollDef, 0).protocol, fab_proto_names[ps[p]]);
      for (uint32_t i = 0; i < fab_dag_len(ds[p]); i++)
        if (is_flow(op_at(ds[p], i))) tot[p] += op_at(ds[p], i)->bytes, nfl[p]++;
    }
    if (a == 0) {
      cr_assert_eq(fab_dag_len(ds[0]), fab_dag_len(ds[1]));
      cr_assert_eq(fab_dag_len(ds[0]), fab_dag_len(ds[2]));
      for (uint32_t i = 0; i < fab_dag_len(ds[0]); i++) {
        uint64_t b = op_at(ds[0], i)->bytes;
        cr_assert_eq(op_at(ds[1], i)->bytes, (b + 7) / 8 * 16, "LL: 8 of 16 bytes are data, in whole lines");
        cr_assert_eq(op_at(ds[2], i)->bytes, (b * 128 + 119) / 120, "LL128: 120 of 128");
      }
    }
    cr_assert(tot[1] >= 2 * tot[0] && tot[1] <= 2 * tot[0] + 14 * nfl[1], "LL: twice the bytes in all, and at most "
              "a part line a piece");
    cr_assert(tot[2] >= tot[0] * 128 / 120 && tot[2] <= tot[0] * 128 / 120 + nfl[2], "LL128: 128/120 in all");
    for (int p = 0; p < 3; p++) fab_dag_free(ds[p]);
  }
}

/* The receiver's GPUDirect flush by default: 1 us on Ampere and CDNA3 (RCCL),
** none on Hopper and Blackwell, which NCCL (2.19 on) does not flush
** (ncclTopoNeedFlush), nor on plain hosts (no GPUDirect); a Simple piece
** across nodes pays exactly that beyond its other costs. */
Test(protocol, the_flush_is_paid_only_below_hopper) {
  static const struct {
    uint32_t sm;
    fab_time_t flush;
  } want[] = {{80, FAB_US}, {90, 0}, {100, 0}, {94, FAB_US}, {0, 0}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    FabCollEnv e = gpus(2, 8);
    e.sm = want[i].sm;
    e.costs = fab_coll_costs_unset();
    fab_coll_costs_resolve(&e);
    cr_assert_eq(e.costs.flush, want[i].flush, "sm %u: flush %lu ps", want[i].sm, (unsigned long)e.costs.flush);
    e.nvl_domain = 0; /* every piece across the network */
    Ex x = {.env = &e, .proto = FAB_PROTO_SIMPLE, .algo = FAB_ALGO_RING, .ep = iota};
    init_iota();
    fab_time_t simple = fab_coll__hop_lat(&x, 0, 1, 0);
    x.proto = FAB_PROTO_LL;
    cr_assert_eq(simple - fab_coll__hop_lat(&x, 0, 1, 0), e.costs.step[2] - e.costs.step[0] + want[i].flush);
  }
}

/* Every piece pays its step's protocol work after its data; over the
** network also the proxy's post and completion, the NIC's start of the
** message, and with Simple the flush; a rank's first step also pays the
** kernel launch. */
Test(protocol, pieces_pay_the_step_work_after_their_data) {
  uint32_t n = 4, e[MAXR];
  FabCollEnv env = hosts(n);
  env.costs = (FabNcclCosts){.launch = 5 * FAB_US, .step = {FAB_US, 2 * FAB_US, 3 * FAB_US}, .proxy = 2 * FAB_US,
                            .flush = 500 * FAB_NS, .nic_post = 1500 * FAB_NS};
  FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_RING, 4 * 2 * 1048576, n); /* one loop, 2 slices a step */
  FabDag *d = expand(&env, &s, e, NULL);
  uint32_t k = 0;
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = op_at(d, i);
    if (!is_flow(o)) continue;
    uint32_t step = k / (2 * n);
    fab_time_t want = 3 * FAB_US + 2 * FAB_US + 1500 * FAB_NS + 500 * FAB_NS + (step == 0 ? 5 * FAB_US : 0);
    cr_assert_eq(o->pre, want, "flow %u (step %u): pre %llu, not %llu", k, step, (unsigned long long)o->pre,
                 (unsigned long long)want);
    k++;
  }
  cr_assert_eq(k, 2 * (n - 1) * n * 2);
  fab_dag_free(d);
  /* LL on NVLink: the step's work alone, no proxy, no flush */
  FabCollEnv g = gpus(1, 4);
  g.costs = env.costs;
  s.protocol = FAB_PROTO_LL;
  s.bytes = 4 * 4096;
  d = expand(&g, &s, e, NULL);
  k = 0;
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = op_at(d, i);
    if (!is_flow(o)) continue;
    cr_assert_eq(o->pre, FAB_US + (k < n ? 5 * FAB_US : 0), "flow %u", k);
    k++;
  }
  fab_dag_free(d);
}

Test(protocol, default_pieces_follow_nccl_buffers) {
  uint32_t n = 4;
  FabCollEnv env = hosts(n);
  struct {
    FabCollOp op;
    FabProto p;
    uint64_t chunk;
  } t[] = {{FAB_COLL_ALLREDUCE, FAB_PROTO_SIMPLE, 1048576}, {FAB_COLL_ALLREDUCE, FAB_PROTO_LL, 32768},
           {FAB_COLL_ALLREDUCE, FAB_PROTO_LL128, 576000}, {FAB_COLL_BROADCAST, FAB_PROTO_SIMPLE, 524288}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    FabCollSpec s = spec(t[i].op, FAB_ALGO_RING, 64 << 20, n);
    s.protocol = t[i].p;
    FabDag *d = expand(&env, &s, NULL, NULL);
    cr_assert_eq(g_array_index(d->colls, FabCollDef, 0).chunk, t[i].chunk, "case %zu", i);
    uint64_t maxb = 0;
    for (uint32_t k = 0; k < fab_dag_len(d); k++)
      if (is_flow(op_at(d, k))) maxb = MAX(maxb, op_at(d, k)->bytes);
    cr_assert_eq(maxb, t[i].p == FAB_PROTO_LL ? 2 * t[i].chunk : t[i].p == FAB_PROTO_LL128 ? 614400 : t[i].chunk);
    fab_dag_free(d);
  }
}

/* NCCL halves an LL128 tree's chunk (576000 bytes of data) while a channel
** holds few pieces per tree step (enqueue.cc, nstepsLL128), in data bytes,
** then aligns it down to LL128's 1920-byte grain: 256 KiB on 8 hosts over 2
** channels goes in 17280-byte pieces (18432 on the wire), so each channel's
** tree pipelines in several pieces instead of crossing every level whole; a
** channel with plenty of data keeps the full chunk. */
Test(protocol, ll128_tree_pieces_shrink_as_nccl) {
  uint32_t n = 8;
  FabCollEnv env = hosts(n);
  struct {
    uint64_t bytes, chunk;
  } t[] = {{256 << 10, 17280}, {1 << 20, 17280}, {8 << 20, 34560}, {64 << 20, 71040}, {1ull << 30, 576000}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_TREE, t[i].bytes, n);
    s.protocol = FAB_PROTO_LL128;
    s.channels = 2;
    FabDag *d = expand(&env, &s, NULL, NULL);
    cr_assert_eq(g_array_index(d->colls, FabCollDef, 0).chunk, t[i].chunk, "%llu B",
                 (unsigned long long)t[i].bytes);
    if (i == 0) { /* 2 channels' trees of 128 KiB, each in 8 pieces, 2(n-1) hops */
      cr_assert_eq(count_kind(d, FAB_OP_FLOW), 2 * 8 * 2 * (n - 1));
      uint64_t maxb = 0;
      for (uint32_t k = 0; k < fab_dag_len(d); k++)
        if (is_flow(op_at(d, k))) maxb = MAX(maxb, op_at(d, k)->bytes);
      cr_assert_eq(maxb, 17280 / 120 * 128);
    }
    fab_dag_free(d);
  }
  /* a ring keeps the whole LL128 step */
  FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_RING, 256 << 10, n);
  s.protocol = FAB_PROTO_LL128;
  FabDag *d = expand(&env, &s, NULL, NULL);
  cr_assert_eq(g_array_index(d->colls, FabCollDef, 0).chunk, 576000);
  fab_dag_free(d);
}

Test(channels, four_channels_four_times_the_flows) {
  uint32_t n = 8;
  FabCollEnv env = hosts(n);
  FabCollAlgo algs[] = {FAB_ALGO_RING, FAB_ALGO_TREE, FAB_ALGO_AUTO};
  FabCollOp ops[] = {FAB_COLL_ALLREDUCE, FAB_COLL_ALLREDUCE, FAB_COLL_ALL_TO_ALL};
  for (int a = 0; a < 3; a++) {
    FabCollSpec s = spec(ops[a], algs[a], 8 * 4 * 4096, n);
    s.chunk = 1 << 20; /* whole parts: the default piece shrinks with the bytes per channel */
    FabDag *d1 = expand(&env, &s, NULL, NULL);
    s.channels = 4;
    FabDag *d4 = expand(&env, &s, NULL, NULL);
    /* all-to-all: `channels` are NCCL's p2p channels; a 16 KiB op takes one of them (addP2pToPlan) */
    cr_assert_eq(fab_dag_flows(d4), (a == 2 ? 1 : 4) * fab_dag_flows(d1), "case %d: %u vs %u", a, fab_dag_flows(d4),
                 fab_dag_flows(d1));
    cr_assert_eq(total_bytes(d4), total_bytes(d1));
    cr_assert_eq(g_array_index(d4->colls, FabCollDef, 0).channels, 4);
    fab_dag_free(d1);
    fab_dag_free(d4);
  }
}

Test(channels, tiny_data_never_makes_empty_flows) {
  for (size_t z = 0; z < NSIZES; z++) {
    uint32_t n = sizes[z], e[MAXR];
    FabCollEnv env = hosts(n);
    FabCollAlgo algs[] = {FAB_ALGO_RING, FAB_ALGO_TREE};
    for (int a = 0; a < 2; a++)
      for (uint64_t S = 0; S <= 3; S++) {
        FabCollSpec s = spec(FAB_COLL_ALLREDUCE, algs[a], S, n);
        s.dtype_bytes = 1;
        s.channels = 4;
        int32_t coll;
        FabDag *d = expand(&env, &s, e, &coll);
        check_dag(d, &env, &s, coll, e); /* no zero-byte flow, every rank ends */
        if (a == 0) cr_assert_eq(total_bytes(d), 2 * (n - 1) * S, "each byte goes round the ring twice");
        else cr_assert_eq(total_bytes(d), 2 * (n - 1) * S);
        fab_dag_free(d);
      }
  }
}

Test(channels, one_rank_is_a_no_op) {
  uint32_t e[MAXR];
  FabCollEnv env = hosts(4);
  for (int op = 0; op < FAB_COLL_N; op++) {
    FabCollSpec s = spec((FabCollOp)op, FAB_ALGO_AUTO, 1 << 20, 1);
    int32_t coll;
    FabDag *d = expand(&env, &s, e, &coll);
    check_dag(d, &env, &s, coll, e);
    cr_assert_eq(fab_dag_flows(d), 0);
    cr_assert_eq(fab_dag_len(d), 2);
    fab_dag_free(d);
  }
}

/* ---- the frame: definition, start, late ranks, determinism ------------------ */

Test(frame, definition_as_nccl_tests_counts) {
  uint32_t n = 8;
  FabCollEnv env = hosts(n);
  struct {
    FabCollOp op;
    uint32_t count;
    int32_t root;
  } t[] = {{FAB_COLL_ALLREDUCE, 1 << 18, -1}, {FAB_COLL_ALLGATHER, (1 << 18) / 8, -1},
           {FAB_COLL_REDUCE_SCATTER, (1 << 18) / 8, -1}, {FAB_COLL_BROADCAST, 1 << 18, 2},
           {FAB_COLL_ALL_TO_ALL, (1 << 18) / 8, -1}, {FAB_COLL_SEND_RECV, 1 << 18, -1}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    FabCollSpec s = spec(t[i].op, FAB_ALGO_AUTO, 1 << 20, n);
    s.protocol = FAB_PROTO_AUTO;
    s.channels = 0;
    s.root = 2;
    s.job = 3;
    FabDag *d = fab_dag_new();
    for (int j = 0; j < 4; j++) fab_dag_job(d, &(FabJobDef){.name = "j", .kind = "collective"});
    uint32_t e[MAXR];
    GError *err = NULL;
    int32_t coll = fab_coll_expand(d, &env, &s, NULL, e, &err);
    cr_assert_geq(coll, 0, "%s", err ? err->message : "");
    check_dag(d, &env, &s, coll, e);
    const FabCollDef *def = &g_array_index(d->colls, FabCollDef, coll);
    cr_assert_eq(def->count, t[i].count, "%s: count %" G_GUINT64_FORMAT, def->op, def->count);
    cr_assert_eq(def->root, t[i].root);
    cr_assert_eq(def->dtype_bytes, 4);
    cr_assert_eq(def->job, 3);
    cr_assert_eq(def->step, 7);
    cr_assert_str_eq(def->tag, "test");
    cr_assert_gt(def->channels, 0);
    cr_assert_gt(def->chunk, 0);
    cr_assert_neq(strcmp(def->algorithm, "auto"), 0);
    cr_assert_neq(strcmp(def->protocol, "auto"), 0);
    fab_dag_free(d);
  }
}

Test(frame, a_late_rank_holds_everyone) {
  uint32_t n = 4;
  FabCollEnv env = hosts(n);
  FabCollAlgo algs[] = {FAB_ALGO_RING, FAB_ALGO_TREE};
  for (int a = 0; a < 2; a++) {
    FabDag *d = fab_dag_new();
    uint32_t start[MAXR], e[MAXR];
    for (uint32_t r = 0; r < n; r++) start[r] = r == 2 ? fab_dag_compute(d, r, 1000, FAB_PHASE_BWD, 0, 0, NULL, 0)
                                                       : FAB_OP_NONE;
    FabCollSpec s = spec(FAB_COLL_ALLREDUCE, algs[a], 1 << 16, n);
    GError *err = NULL;
    cr_assert_geq(fab_coll_expand(d, &env, &s, start, e, &err), 0);
    const FabOp *b = op_at(d, 1 + 2);
    cr_assert_eq(b->mark, FAB_MARK_COLL_BEGIN);
    cr_assert_eq(b->ndeps, 1);
    cr_assert_eq(fab_dag_dep(d, b, 0), start[2]);
    uint32_t len = fab_dag_len(d);
    uint64_t *ready = g_new(uint64_t, len), *done = g_new(uint64_t, len);
    play(d, ready, done);
    for (uint32_t r = 0; r < n; r++) cr_assert_gt(done[e[r]], 1000, "rank %u ends before rank 2 arrived", r);
    g_free(ready);
    g_free(done);
    fab_dag_free(d);
  }
}

Test(frame, deterministic) {
  FabCollEnv env = gpus(2, 4);
  FabCollAlgo algs[] = {FAB_ALGO_RING, FAB_ALGO_TREE, FAB_ALGO_NVLS_TREE, FAB_ALGO_HIERARCHICAL};
  for (int a = 0; a < 4; a++) {
    FabCollSpec s = spec(FAB_COLL_ALLREDUCE, algs[a], 3 << 20, 8);
    s.channels = 3;
    FabDag *d1 = expand(&env, &s, NULL, NULL), *d2 = expand(&env, &s, NULL, NULL);
    cr_assert_eq(fab_dag_len(d1), fab_dag_len(d2));
    cr_assert_eq(memcmp(fab_dag_op(d1, 0), fab_dag_op(d2, 0), fab_dag_len(d1) * sizeof(FabOp)), 0);
    cr_assert_eq(fab_dag_deps_len(d1), fab_dag_deps_len(d2));
    cr_assert_eq(memcmp(fab_deq_at(&d1->deps, 0), fab_deq_at(&d2->deps, 0), fab_dag_deps_len(d1) * sizeof(uint32_t)), 0);
    fab_dag_free(d1);
    fab_dag_free(d2);
  }
}

Test(frame, appends_after_existing_ops) {
  FabCollEnv env = hosts(4);
  FabDag *d = fab_dag_new();
  uint32_t e1[MAXR], e2[MAXR];
  FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_RING, 1 << 16, 4);
  GError *err = NULL;
  cr_assert_eq(fab_coll_expand(d, &env, &s, NULL, e1, &err), 0);
  cr_assert_eq(fab_coll_expand(d, &env, &s, e1, e2, &err), 1);
  uint32_t len = fab_dag_len(d);
  uint64_t *ready = g_new(uint64_t, len), *done = g_new(uint64_t, len);
  play(d, ready, done);
  for (uint32_t r = 0; r < 4; r++) cr_assert_gt(done[e2[r]], done[e1[r]]);
  g_free(ready);
  g_free(done);
  fab_dag_free(d);
}

/* ---- bus bandwidth ---------------------------------------------------------- */

Test(busbw, factors_as_nccl_tests) {
  cr_assert_float_eq(fab_coll_busbw_factor(FAB_COLL_ALLREDUCE, 8), 1.75, 1e-12);
  cr_assert_float_eq(fab_coll_busbw_factor(FAB_COLL_ALLGATHER, 8), 0.875, 1e-12);
  cr_assert_float_eq(fab_coll_busbw_factor(FAB_COLL_REDUCE_SCATTER, 8), 0.875, 1e-12);
  cr_assert_float_eq(fab_coll_busbw_factor(FAB_COLL_ALL_TO_ALL, 8), 0.875, 1e-12);
  cr_assert_float_eq(fab_coll_busbw_factor(FAB_COLL_BROADCAST, 8), 1, 1e-12);
  cr_assert_float_eq(fab_coll_busbw_factor(FAB_COLL_REDUCE, 8), 1, 1e-12);
  cr_assert_float_eq(fab_coll_busbw_factor(FAB_COLL_SEND_RECV, 8), 1, 1e-12);
  cr_assert_float_eq(fab_coll_busbw_factor(FAB_COLL_ALLREDUCE, 2), 1, 1e-12);
}

/* ---- the tuner -------------------------------------------------------------- */

static FabCollSpec tuned(const FabCollEnv *env, FabCollOp op, uint64_t bytes, uint32_t n, double *t) {
  FabCollSpec s = spec(op, FAB_ALGO_AUTO, bytes, n);
  s.protocol = FAB_PROTO_AUTO;
  s.channels = 0;
  *t = fab_coll_tune(env, &s);
  cr_assert(isfinite(*t) && *t > 0, "%s %llu B: %g s", fab_coll_op_names[op], (unsigned long long)bytes, *t);
  cr_assert_neq(s.algorithm, FAB_ALGO_AUTO);
  cr_assert_neq(s.protocol, FAB_PROTO_AUTO);
  cr_assert_gt(s.channels, 0);
  cr_assert_float_eq(fab_coll_model_time(env, &s), *t, *t * 1e-9);
  return s;
}

Test(tune, tree_small_ring_large_on_64_hosts) {
  FabCollEnv env = hosts(64);
  double t8, t64k, t1g;
  FabCollSpec a = tuned(&env, FAB_COLL_ALLREDUCE, 8, 64, &t8);
  FabCollSpec b = tuned(&env, FAB_COLL_ALLREDUCE, 65536, 64, &t64k);
  FabCollSpec c = tuned(&env, FAB_COLL_ALLREDUCE, 1ull << 30, 64, &t1g);
  cr_assert_eq(a.algorithm, FAB_ALGO_TREE, "8 B: %s", fab_coll_algo_names[a.algorithm]);
  cr_assert_eq(b.algorithm, FAB_ALGO_TREE, "64 KiB: %s", fab_coll_algo_names[b.algorithm]);
  cr_assert_eq(c.algorithm, FAB_ALGO_RING, "1 GiB: %s", fab_coll_algo_names[c.algorithm]);
  cr_assert_eq(a.protocol, FAB_PROTO_LL, "8 B: %s", fab_proto_names[a.protocol]);
  cr_assert_eq(c.protocol, FAB_PROTO_SIMPLE, "1 GiB: %s", fab_proto_names[c.protocol]);
  cr_assert_lt(t8, t64k);
  cr_assert_lt(t64k, t1g);
  /* 1 GiB at 100 Gb/s, 2(n-1)/n of it on the wire: about 170 ms */
  cr_assert(t1g > 0.15 && t1g < 0.2, "%g s", t1g);
  cr_assert_eq(c.channels, 2, "2 channels per NIC");
  /* the model charges more for a forced worse choice */
  FabCollSpec f = c;
  f.algorithm = FAB_ALGO_TREE;
  cr_assert_gt(fab_coll_model_time(&env, &f), t1g);
  f = a;
  f.protocol = FAB_PROTO_SIMPLE;
  cr_assert_gt(fab_coll_model_time(&env, &f), t8);
}

/* The network plugin's latency (aws-ofi-nccl on EFA: 75 us) is added to
** each step across nodes, twice for Simple (NCCL's tuning.cc): on 64 hosts
** a ring allreduce has 2 x 63 such steps, a tree 2 x log2(64); a Simple
** ring's latency then takes NCCL's plateau factor, 1.4 on sm80 and later.
** With it the tuner leaves the ring for small messages sooner. */
Test(tune, the_plugin_latency_is_paid_per_step_across_nodes) {
  FabCollEnv env = hosts(64);
  FabCollEnv efa = env;
  efa.plugin_lat_us = 75;
  static const struct { FabCollAlgo a; FabProto p; double steps, per; } cases[] = {
    {FAB_ALGO_RING, FAB_PROTO_LL, 126, 75}, {FAB_ALGO_RING, FAB_PROTO_SIMPLE, 126, 150 * 1.4},
    {FAB_ALGO_TREE, FAB_PROTO_LL, 12, 75}, {FAB_ALGO_TREE, FAB_PROTO_SIMPLE, 12, 150},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    FabCollSpec s = spec(FAB_COLL_ALLREDUCE, cases[i].a, 65536, 64);
    s.protocol = cases[i].p;
    s.channels = 2;
    double d = fab_coll_model_time(&efa, &s) - fab_coll_model_time(&env, &s);
    cr_assert_float_eq(d, cases[i].steps * cases[i].per * 1e-6, 1e-12, "%s/%s: %g s", fab_coll_algo_names[cases[i].a],
                       fab_proto_names[cases[i].p], d);
  }
  double t;
  uint64_t ring_from[2] = {0, 0}; /* the smallest power of two the tuner gives the ring, without and with */
  for (int k = 0; k < 2; k++)
    for (uint64_t b = 8; b <= (1ull << 32) && !ring_from[k]; b *= 2)
      if (tuned(k ? &efa : &env, FAB_COLL_ALLREDUCE, b, 64, &t).algorithm == FAB_ALGO_RING) ring_from[k] = b;
  cr_assert(ring_from[0] && ring_from[1]);
  cr_assert_gt(ring_from[1], ring_from[0], "ring from %lu B with the plugin's latency, %lu B without", ring_from[1],
               ring_from[0]);
}

Test(tune, medium_sizes_take_ll128_somewhere) {
  FabCollEnv env = gpus(1, 8);
  bool seen[FAB_PROTO_N] = {false};
  for (uint64_t b = 8; b <= (1ull << 30); b *= 4) {
    double t;
    FabCollSpec s = spec(FAB_COLL_ALLGATHER, FAB_ALGO_AUTO, b, 8);
    s.protocol = FAB_PROTO_AUTO;
    s.channels = 0;
    t = fab_coll_tune(&env, &s);
    cr_assert(isfinite(t));
    seen[s.protocol] = true;
  }
  cr_assert(seen[FAB_PROTO_LL] && seen[FAB_PROTO_LL128] && seen[FAB_PROTO_SIMPLE]);
}

Test(tune, nvls_inside_one_domain_nvls_tree_across) {
  double t;
  FabCollEnv one = gpus(1, 8);
  FabCollSpec s = tuned(&one, FAB_COLL_ALLREDUCE, 256 << 20, 8, &t);
  cr_assert_eq(s.algorithm, FAB_ALGO_NVLS, "%s", fab_coll_algo_names[s.algorithm]);
  cr_assert_eq(s.protocol, FAB_PROTO_SIMPLE);
  FabCollEnv two = gpus(2, 8);
  s = tuned(&two, FAB_COLL_ALLREDUCE, 256 << 20, 16, &t);
  cr_assert_eq(s.algorithm, FAB_ALGO_NVLS_TREE, "%s", fab_coll_algo_names[s.algorithm]);
}

/* The tuner weighs collnet only with SHARP, and takes it for a large
** allreduce across nodes as NCCL's formulas do: on Hopper NVLS with SHARP
** between the nodes, whose bus bandwidth is the NVLS tree's but for the
** tree's doubled network figure at two nodes (tuning.cc), so the NVLS tree
** keeps two nodes and SHARP takes four. */
Test(tune, collnet_with_sharp) {
  double t;
  FabCollEnv four = gpus(4, 8), two = gpus(2, 8);
  FabCollSpec s = tuned(&four, FAB_COLL_ALLREDUCE, 256 << 20, 32, &t);
  cr_assert_neq(s.algorithm, FAB_ALGO_COLLNET);
  four.collnet = two.collnet = true;
  s = tuned(&four, FAB_COLL_ALLREDUCE, 256 << 20, 32, &t);
  cr_assert_eq(s.algorithm, FAB_ALGO_NVLS, "%s", fab_coll_algo_names[s.algorithm]);
  cr_assert_eq(s.protocol, FAB_PROTO_SIMPLE);
  s = tuned(&two, FAB_COLL_ALLREDUCE, 256 << 20, 16, &t);
  cr_assert_eq(s.algorithm, FAB_ALGO_NVLS_TREE, "%s", fab_coll_algo_names[s.algorithm]);
  s = tuned(&four, FAB_COLL_ALLGATHER, 256 << 20, 32, &t);
  cr_assert_neq(s.algorithm, FAB_ALGO_NVLS, "allreduce only");
}

/* NCCL offers CollNet Direct and Chain only up to 8 local ranks, a node
** being an NVLink domain under MNNVL (enqueue.cc topoGetAlgoInfo,
** NCCL_MAX_DIRECT_ARITY + 1): with SHARP and NVLS off, 2 x 8 H100 take
** CollNet at 64 MiB while the same 16 GPUs in one NVLink domain of 16 across
** 4-GPU hosts never do. */
Test(tune, no_collnet_past_8_local_ranks) {
  double t;
  FabCollEnv eight = gpus(2, 8), wide = gpus(4, 4);
  eight.collnet = wide.collnet = true;
  eight.nvls = wide.nvls = false;
  wide.nvl_domain = 16;
  FabCollSpec s = tuned(&eight, FAB_COLL_ALLREDUCE, 64 << 20, 16, &t);
  cr_assert(s.algorithm == FAB_ALGO_COLLNET_DIRECT || s.algorithm == FAB_ALGO_COLLNET_CHAIN, "%s",
            fab_coll_algo_names[s.algorithm]);
  for (uint64_t b = 4096; b <= (1ull << 30); b *= 4) {
    s = tuned(&wide, FAB_COLL_ALLREDUCE, b, 16, &t);
    cr_assert(s.algorithm != FAB_ALGO_COLLNET_DIRECT && s.algorithm != FAB_ALGO_COLLNET_CHAIN, "%lu B: %s",
              (unsigned long)b, fab_coll_algo_names[s.algorithm]);
  }
}

/* NCCL launches Simple rings with 256 threads, not 512, when the rings
** together are no faster than PCI_BW, 12 GB/s (tuning.cc
** ncclTopoTuneModel), so its per-size channel loop (while bytes < nc x
** threads x 64, nc--) keeps twice the channels at a given size: on hosts
** of one 50 Gb/s NIC a 40 KiB ring allreduce takes 2 channels, on 400 Gb/s
** NICs 1. */
Test(tune, slow_rings_take_256_threads) {
  for (int slow = 0; slow < 2; slow++) {
    FabCollEnv h = hosts(8);
    h.nic_bps = h.net_bps = slow ? 50000000000ull : 400000000000ull;
    FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_RING, 40 << 10, 8);
    Topo tp;
    fab_coll__topo_make(&tp, &h, &s);
    cr_assert_geq(tp.nch, 2);
    cr_assert_eq(tp.ring.intra * tp.ring.nch <= 12.0, slow, "%g GB/s", tp.ring.intra * tp.ring.nch);
    FabCollSpec f = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_RING, 40 << 10, 8);
    f.channels = 0;
    fab_coll_tune(&h, &f);
    cr_assert_eq(f.channels, slow ? 2 : 1, "%s NICs: %u channels", slow ? "50G" : "400G", f.channels);
  }
}

Test(tune, other_ops) {
  double t;
  FabCollEnv h = hosts(64);
  cr_assert_eq(tuned(&h, FAB_COLL_ALL_TO_ALL, 1 << 20, 64, &t).algorithm, FAB_ALGO_PAIRWISE);
  cr_assert_eq(tuned(&h, FAB_COLL_BROADCAST, 1 << 20, 64, &t).algorithm, FAB_ALGO_RING);
  cr_assert_eq(tuned(&h, FAB_COLL_SEND_RECV, 1 << 20, 64, &t).algorithm, FAB_ALGO_RING);
  /* one GPU per node at scale: PAT for small allgathers, the ring for large */
  cr_assert_eq(tuned(&h, FAB_COLL_ALLGATHER, 64 * 1024, 64, &t).algorithm, FAB_ALGO_PAT);
  cr_assert_eq(tuned(&h, FAB_COLL_ALLGATHER, 1ull << 30, 64, &t).algorithm, FAB_ALGO_RING);
  /* several GPUs per node: never PAT */
  FabCollEnv g = gpus(8, 8);
  cr_assert_eq(tuned(&g, FAB_COLL_ALLGATHER, 64 * 1024, 64, &t).algorithm, FAB_ALGO_RING);
  /* set fields stay */
  FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_RING, 8, 64);
  s.protocol = FAB_PROTO_SIMPLE;
  s.channels = 5;
  fab_coll_tune(&h, &s);
  cr_assert_eq(s.algorithm, FAB_ALGO_RING);
  cr_assert_eq(s.protocol, FAB_PROTO_SIMPLE);
  cr_assert_eq(s.channels, 5);
}

Test(tune, fewer_channels_for_little_data) {
  double t;
  FabCollEnv g = gpus(4, 8);
  FabCollSpec big = tuned(&g, FAB_COLL_ALLREDUCE, 1ull << 30, 32, &t);
  FabCollSpec small = tuned(&g, FAB_COLL_ALLREDUCE, 4096, 32, &t);
  cr_assert_eq(big.channels, 16, "2 per NIC of an 8-NIC node: %u", big.channels);
  cr_assert_lt(small.channels, big.channels);
}

/* ---- errors ----------------------------------------------------------------- */

static void fails_with(const FabCollEnv *env, const FabCollSpec *s, const char *what) {
  char *m = expand_fails(env, s);
  cr_assert(strstr(m, what), "expected \"%s\" in \"%s\"", what, m);
  g_free(m);
}

Test(errors, algorithms_where_they_cannot_run) {
  FabCollEnv two = gpus(2, 4), h = hosts(8);
  FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_NVLS, 1 << 20, 8);
  fails_with(&two, &s, "one NVLink domain");
  fails_with(&h, &s, "NVLink domain");
  s = spec(FAB_COLL_BROADCAST, FAB_ALGO_NVLS, 1 << 20, 8);
  fails_with(&two, &s, "nvls runs allreduce, allgather and reduce-scatter, as in NCCL (not broadcast)");
  FabCollEnv two_sharp = gpus(2, 4);
  two_sharp.collnet = true;
  s = spec(FAB_COLL_REDUCE_SCATTER, FAB_ALGO_NVLS, 1 << 20, 8);
  fails_with(&two_sharp, &s, "nvls reduce-scatter runs inside one NVLink domain");
  s = spec(FAB_COLL_ALLGATHER, FAB_ALGO_TREE, 1 << 20, 8);
  fails_with(&h, &s, "tree runs allreduce only, as in NCCL");
  s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_COLLNET, 1 << 20, 8);
  fails_with(&h, &s, "collnet needs SHARP in the switches (fabric.switch.sharp.enabled: true)");
  h.collnet = true;
  s = spec(FAB_COLL_ALLGATHER, FAB_ALGO_COLLNET, 1 << 20, 8);
  fails_with(&h, &s, "collnet runs allreduce only here");
  s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_COLLNET_DIRECT, 1 << 20, 8);
  fails_with(&h, &s, "collnet-direct needs an NVSwitch in each node (NCCL disables it elsewhere)");
  FabCollEnv solo = gpus(1, 8);
  solo.collnet = true;
  s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_COLLNET_CHAIN, 1 << 20, 8);
  fails_with(&solo, &s, "collnet-chain needs ranks on at least two nodes");
  s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_COLLNET, 1 << 20, 8);
  fails_with(&two, &s, "collnet needs SHARP"); /* two has none */
  h.collnet = false;
  s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_PAT, 1 << 20, 8);
  fails_with(&h, &s, "pat runs allgather and reduce-scatter only");
  s = spec(FAB_COLL_ALL_TO_ALL, FAB_ALGO_RING, 1 << 20, 8);
  fails_with(&h, &s, "pairwise");
  s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_PAIRWISE, 1 << 20, 8);
  fails_with(&h, &s, "pairwise runs all-to-all only");
  s = spec(FAB_COLL_SEND_RECV, FAB_ALGO_TREE, 1 << 20, 8);
  fails_with(&h, &s, "send-recv");
  s = spec(FAB_COLL_BROADCAST, FAB_ALGO_HIERARCHICAL, 1 << 20, 8);
  fails_with(&h, &s, "hierarchical runs");
  s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_NVLS_TREE, 1 << 20, 4);
  fails_with(&two, &s, "at least two NVLink domains");
  s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_NVLS, 1 << 20, 4);
  s.protocol = FAB_PROTO_LL;
  fails_with(&two, &s, "simple protocol only");
  FabCollEnv one = gpus(1, 8);
  s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_CE, 1 << 20, 8);
  fails_with(&one, &s, "ce (NCCL's copy-engine collectives) runs allgather and all-to-all only (not allreduce)");
  s = spec(FAB_COLL_ALLGATHER, FAB_ALGO_CE, 1 << 20, 8);
  fails_with(&two, &s, "ce needs all ranks in one NVLink domain");
  fails_with(&h, &s, "ce needs an NVLink domain");
  s = spec(FAB_COLL_ALL_TO_ALL, FAB_ALGO_CE, 1 << 20, 8);
  s.protocol = FAB_PROTO_LL;
  fails_with(&one, &s, "no NCCL protocol (not ll)");
}

Test(errors, uneven_groups_and_bad_ranks) {
  FabCollEnv two = gpus(2, 4);
  uint32_t r[] = {0, 1, 2, 4};
  FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_HIERARCHICAL, 1 << 20, 4);
  s.ranks = r;
  fails_with(&two, &s, "same number of ranks on every node");
  s.algorithm = FAB_ALGO_NVLS_TREE;
  fails_with(&two, &s, "same number of ranks in every NVLink domain");
  uint32_t dup[] = {0, 1, 1, 3};
  s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_RING, 1 << 20, 4);
  s.ranks = dup;
  fails_with(&two, &s, "both endpoint 1");
  uint32_t far[] = {0, 1, 2, 99};
  s.ranks = far;
  fails_with(&two, &s, "does not exist");
  s = spec(FAB_COLL_BROADCAST, FAB_ALGO_RING, 1 << 20, 4);
  s.root = 4;
  fails_with(&two, &s, "root 4 is not a rank");
}

Test(errors, too_many_ops) {
  FabCollEnv h = hosts(8);
  FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_RING, 64 << 20, 8);
  s.chunk = 64;
  fails_with(&h, &s, "raise chunk");
}

/* NCCL's topology search, as the tuner reduces it (tuner.c), gives the
** channel counts NCCL launches: one H100 node 12 search channels at 30 GB/s
** (6 x 60 GB/s found first, duplicated), 24 launched; an A100 node 6 x 40
** duplicated to 12 x 20, 24 launched; a B200 node 8 x 90 to 16 x 45, 32
** launched; H100 nodes with a 400 Gb/s NIC per GPU 8 x 48 (one channel a
** NIC, not duplicated below 50 GB/s on sm90), 16 launched; A100 nodes with a
** 200 Gb/s NIC per GPU on PCIe Gen4 (24 GB/s as NCCL rates it) 8 x 24, 16
** launched: NCCL's 192 GB/s of DGX-A100 busbw (nccl#812). */
Test(tune, channels_as_nccl_searches_them) {
  struct {
    uint32_t sm, nodes, nvl_gbs, nic_gbps, pcie_gts, nch, launched;
    double speed;
  } t[] = {{90, 1, 0, 400, 32, 12, 24, 30}, {80, 1, 0, 200, 16, 12, 24, 20}, {100, 1, 0, 400, 32, 16, 32, 45},
           {90, 4, 0, 400, 32, 8, 16, 48},  {80, 4, 0, 200, 16, 8, 16, 24}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    FabCollEnv e = gpus(t[i].nodes, 8);
    e.sm = t[i].sm;
    e.nvl_bps = t[i].sm == 80 ? 12 * 160000000000ull : t[i].sm == 90 ? 18 * 164800000000ull : 18 * 320800000000ull;
    e.nic_bps = e.net_bps = t[i].nic_gbps * 1000000000ull;
    e.pcie_bps = t[i].pcie_gts * 1000000000ull * 16 * 128 / 130;
    FabCollSpec s = spec(FAB_COLL_ALLREDUCE, FAB_ALGO_RING, 1ull << 30, 8 * t[i].nodes);
    s.channels = 0;
    fab_coll_tune(&e, &s);
    cr_assert_eq(s.channels, t[i].launched, "case %zu: %u channels, not %u", i, s.channels, t[i].launched);
  }
}

/* NVLS only where the switch reduces: never on Ampere (sm80), nor when the
** cluster turns it off; across NVLink domains only as NVLS-tree. */
Test(tune, nvls_only_where_the_switch_reduces) {
  double t;
  FabCollEnv h = gpus(1, 8), a = gpus(1, 8), off = gpus(1, 8);
  a.sm = 80, a.nvls = false, off.nvls = false;
  for (uint64_t b = 8; b <= (1ull << 32); b *= 8) {
    cr_assert_neq(tuned(&a, FAB_COLL_ALLREDUCE, b, 8, &t).algorithm, FAB_ALGO_NVLS, "A100, %llu B", (unsigned long long)b);
    cr_assert_neq(tuned(&off, FAB_COLL_ALLREDUCE, b, 8, &t).algorithm, FAB_ALGO_NVLS);
  }
  cr_assert_eq(tuned(&h, FAB_COLL_ALLREDUCE, 1ull << 30, 8, &t).algorithm, FAB_ALGO_NVLS);
  FabCollEnv a2 = gpus(2, 8);
  a2.sm = 80, a2.nvls = false;
  cr_assert_neq(tuned(&a2, FAB_COLL_ALLREDUCE, 1ull << 30, 16, &t).algorithm, FAB_ALGO_NVLS_TREE);
}

/* NCCL's slots: a connection (one sender, one receiver: one channel here)
** holds at most its window of pieces in flight: piece m waits for piece
** m - window to be consumed at the receiver, which forwarded it (a send of
** the receiver's that waited for its arrival) or holds it (its arrival).
** A tree's channel carries two trees whose edges can join the same two
** ranks: their pieces alternate, so there the piece 8 back on its own
** connection is 8 or 16 back between the two ranks. */
static bool consumed_before(const FabDag *d, const FabOp *o, uint32_t prev) {
  for (uint32_t k = 0; k < o->ndeps; k++) {
    uint32_t dep = fab_dag_dep(d, o, k), at = dep & ~FAB_DEP_SENT;
    if (at == prev && !(dep & FAB_DEP_SENT)) return true; /* it arrived (the receiver keeps it) */
    const FabOp *fw = op_at(d, at);
    if (!(dep & FAB_DEP_SENT) || fw->src != op_at(d, prev)->dst) continue;
    for (uint32_t q = 0; q < fw->ndeps; q++) /* the receiver's send of it on */
      if (fab_dag_dep(d, fw, q) == prev) return true;
  }
  return false;
}

Test(slots, a_connection_holds_at_most_its_window) {
  FabCollEnv env = hosts(4);
  struct {
    FabCollOp op;
    FabCollAlgo a;
    uint32_t window, merged;
  } t[] = {{FAB_COLL_ALLREDUCE, FAB_ALGO_RING, 4, 1}, {FAB_COLL_ALLREDUCE, FAB_ALGO_TREE, 8, 2},
           {FAB_COLL_BROADCAST, FAB_ALGO_RING, 8, 1}, {FAB_COLL_ALL_TO_ALL, FAB_ALGO_PAIRWISE, 8, 1}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    FabCollSpec s = spec(t[i].op, t[i].a, 4 << 20, 4);
    s.chunk = 16384; /* many pieces a connection */
    FabDag *d = expand(&env, &s, NULL, NULL);
    GHashTable *seq = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, (GDestroyNotify)g_array_unref);
    uint32_t checked = 0;
    for (uint32_t k = 0; k < fab_dag_len(d); k++) {
      const FabOp *o = op_at(d, k);
      if (!is_flow(o)) continue;
      gint64 key = (gint64)o->src << 32 | o->dst, *kp = g_memdup2(&key, sizeof key);
      GArray *a = g_hash_table_lookup(seq, kp);
      if (!a) g_hash_table_insert(seq, kp, a = g_array_new(FALSE, FALSE, sizeof(uint32_t)));
      else g_free(kp);
      if (a->len >= t[i].window * t[i].merged) {
        bool ok = false;
        for (uint32_t m = 1; m <= t[i].merged && !ok; m++)
          ok = consumed_before(d, o, g_array_index(a, uint32_t, a->len - m * t[i].window));
        cr_assert(ok, "case %zu: flow %u (%u->%u, piece %u) does not wait for a slot %u pieces back", i, k, o->src,
                  o->dst, a->len, t[i].window);
        checked++;
      }
      g_array_append_val(a, k);
    }
    cr_assert_gt(checked, 10, "case %zu: a few pieces past the window", i);
    g_hash_table_destroy(seq);
    fab_dag_free(d);
  }
}

/* Flow-list workloads. See workload.h. */
#include "workload.h"
#include "sim/rng.h"
#include <stddef.h>
#include <string.h>
#include "training.h"
#include "job.h"
#include "trace.h"

const char *const fab_workload_kinds[] = {"flows", "permutation", "incast", "all-to-all", "collective",
                                          "nccl-tests", "training", "text", "chakra", NULL};
#define kinds fab_workload_kinds

/* Element types, as nccl-tests names them (-d), and their sizes. */
const char *const fab_dtype_names[] = {"float", "half", "bfloat16", "double", "int8", "uint8", "int32", "uint32",
                                       "int64", "uint64", "fp8", "fp32", "fp16", "bf16", NULL};
const uint32_t fab_dtype_bytes[] = {4, 2, 2, 8, 1, 1, 4, 4, 8, 8, 1, 4, 2, 2};
#define dtypes fab_dtype_names
#define dtype_size fab_dtype_bytes

const FabCfgKey fab_job_prefix[] = {
  FAB_CFG_KEY("kind", FAB_CFG_ENUM, FabJobIn, kind, .required = true, .choices = fab_workload_kinds),
  FAB_CFG_KEY("name", FAB_CFG_STRING, FabJobIn, name),
  FAB_CFG_KEY("ranks", FAB_CFG_NODE, FabJobIn, ranks),
  FAB_CFG_KEY("start", FAB_CFG_TIME, FabJobIn, start, .def = "0ns", .max = 1e18),
  FAB_CFG_END_ROW,
};

typedef struct WorkloadIn {
  FabJobIn job;             /* first: fab_job_prefix's rows */
  uint64_t size, receiver, priority;
  const FabCfgNode *senders, *flows;
  int op, algorithm, protocol, dtype, cta_policy;
  uint64_t channels, chunk, root, min, max, factor, iters, warmup;
  const FabCfgNode *sizes;
  const FabCfgNode *a2a_size; /* kind all-to-all: `size`, refused (see read_all_to_all) */
} WorkloadIn;

#define K(NAME, TYPE, FIELD, ...) FAB_CFG_KEY(NAME, TYPE, WorkloadIn, FIELD, __VA_ARGS__)

static const FabCfgKey size_rows[] = {
  K("size", FAB_CFG_SIZE, size, .min = 1, .max = 0x1p50),
  K("priority", FAB_CFG_UINT, priority, .def = "0", .min = 0, .max = 7),
  FAB_CFG_END_ROW,
};

static const FabCfgKey coll_rows[] = {
  K("op", FAB_CFG_ENUM, op, .def = "allreduce", .choices = fab_coll_op_names),
  K("algorithm", FAB_CFG_ENUM, algorithm, .def = "auto", .choices = fab_coll_algo_names),
  K("protocol", FAB_CFG_ENUM, protocol, .def = "auto", .choices = fab_proto_names),
  K("dtype", FAB_CFG_ENUM, dtype, .def = "float", .choices = dtypes),
  K("channels", FAB_CFG_UINT, channels, .def = "0", .min = 0, .max = 64),
  K("chunk", FAB_CFG_SIZE, chunk, .def = "0", .max = 0x1p50),
  K("root", FAB_CFG_UINT, root, .def = "0"),
  K("cta_policy", FAB_CFG_ENUM, cta_policy, .def = "default", .choices = fab_cta_policy_names),
  FAB_CFG_END_ROW,
};

static const FabCfgKey flows_schema[] = {
  FAB_CFG_SPLICE_OF(fab_job_prefix), K("flows", FAB_CFG_SEQ, flows), FAB_CFG_END_ROW,
};
static const FabCfgKey sized_schema[] = { /* permutation */
  FAB_CFG_SPLICE_OF(fab_job_prefix), FAB_CFG_SPLICE_OF(size_rows), FAB_CFG_END_ROW,
};
/* kind all-to-all counts bytes per pair, under its own key: `size` means one
** rank's whole buffer wherever an all-to-all is sized (op: all-to-all, as
** nccl-tests counts), and is kept here only to say what changed. */
static const FabCfgKey a2a_schema[] = {
  FAB_CFG_SPLICE_OF(fab_job_prefix),
  K("per_pair", FAB_CFG_SIZE, size, .min = 1, .max = 0x1p50),
  K("priority", FAB_CFG_UINT, priority, .def = "0", .min = 0, .max = 7),
  K("size", FAB_CFG_NODE, a2a_size),
  FAB_CFG_END_ROW,
};
static const FabCfgKey incast_schema[] = {
  FAB_CFG_SPLICE_OF(fab_job_prefix), FAB_CFG_SPLICE_OF(size_rows),
  K("senders", FAB_CFG_NODE, senders),
  K("receiver", FAB_CFG_UINT, receiver, .def = "0"),
  FAB_CFG_END_ROW,
};
static const FabCfgKey collective_schema[] = {
  FAB_CFG_SPLICE_OF(fab_job_prefix), FAB_CFG_SPLICE_OF(size_rows), FAB_CFG_SPLICE_OF(coll_rows), FAB_CFG_END_ROW,
};
static const FabCfgKey ncclt_schema[] = {
  FAB_CFG_SPLICE_OF(fab_job_prefix),
  K("priority", FAB_CFG_UINT, priority, .def = "0", .min = 0, .max = 7),
  FAB_CFG_SPLICE_OF(coll_rows),
  K("min", FAB_CFG_SIZE, min, .def = "8", .min = 1, .max = 0x1p50),
  K("max", FAB_CFG_SIZE, max, .min = 1, .max = 0x1p50),
  K("factor", FAB_CFG_UINT, factor, .def = "2", .min = 2, .max = 1024),
  K("sizes", FAB_CFG_SEQ, sizes),
  K("iters", FAB_CFG_UINT, iters, .def = "1", .min = 1, .max = 1000),
  K("warmup", FAB_CFG_UINT, warmup, .def = "0", .min = 0, .max = 1000),
  FAB_CFG_END_ROW,
};

/* Each kind's schema, in FabWorkloadKind order. */
static const FabCfgKey *const kind_schema[] = {flows_schema, sized_schema, incast_schema, a2a_schema,
                                               collective_schema, ncclt_schema, fab_training_schema,
                                               fab_trace_text_schema, fab_trace_chakra_schema};

/* kind all-to-all: per_pair is required; `size` is refused with what it meant
** before (bytes per pair, n - 1 times an op: all-to-all of the same size: one
** spelling once launched 545 GB) and both ways to say it now. */
static gboolean check_a2a_size(const FabCfgNode *wl, const WorkloadIn *in, uint32_t n, GError **err) {
  if (in->a2a_size) {
    const char *v = fab_cfg_kind(in->a2a_size) == FAB_CFG_NODE_SCALAR ? fab_cfg_scalar(in->a2a_size) : "...";
    return fab_cfg_fail(in->a2a_size, err, "kind all-to-all is sized by per_pair (the bytes each rank sends to "
                        "each other rank), not size. size meant that here before: %u times the traffic of "
                        "op: all-to-all with the same size, which is one rank's whole buffer split over the %u "
                        "ranks, as nccl-tests counts. Write per_pair: %s for what this file meant, or kind: "
                        "collective, op: all-to-all, size: %s for nccl-tests' meaning", n, n, v, v);
  }
  if (!fab_cfg_get(wl, "per_pair"))
    return fab_cfg_fail(wl, err, "workload kind all-to-all needs per_pair (the bytes each rank sends to each "
                        "other rank)");
  return TRUE;
}

typedef struct FlowIn {
  uint64_t src, dst, size, start, priority;
} FlowIn;

static const FabCfgKey flow_schema[] = {
  FAB_CFG_KEY("src", FAB_CFG_UINT, FlowIn, src, .required = true),
  FAB_CFG_KEY("dst", FAB_CFG_UINT, FlowIn, dst, .required = true),
  FAB_CFG_KEY("size", FAB_CFG_SIZE, FlowIn, size, .required = true, .min = 1, .max = 0x1p50),
  FAB_CFG_KEY("start", FAB_CFG_TIME, FlowIn, start, .def = "0ns", .max = 1e18),
  FAB_CFG_KEY("priority", FAB_CFG_UINT, FlowIn, priority, .def = "0", .min = 0, .max = 7),
  FAB_CFG_END_ROW,
};

void fab_workload_derangement(uint32_t *perm, uint32_t n, uint64_t seed, uint64_t stream) {
  FabRng rng;
  fab_rng_init(&rng, seed, stream);
  g_assert(n >= 2);
  for (;;) { /* Fisher-Yates, rejected until no fixed point: uniform over derangements (~e tries) */
    for (uint32_t i = 0; i < n; i++) perm[i] = i;
    for (uint32_t i = n - 1; i > 0; i--) {
      uint32_t j = (uint32_t)fab_rng_below(&rng, (uint64_t)i + 1);
      uint32_t t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    uint32_t i = 0;
    while (i < n && perm[i] != i) i++;
    if (i == n) return;
  }
}

static gboolean check_endpoint(const FabCfgNode *n, uint64_t v, uint32_t endpoints, GError **err) {
  if (v >= endpoints)
    return fab_cfg_fail(n, err, "rank %" G_GUINT64_FORMAT " does not exist (the job has 0..%u)", v, endpoints - 1);
  return TRUE;
}

static gboolean check_prio(const FabCfgNode *n, uint64_t v, uint32_t nprio, GError **err) {
  if (v >= nprio)
    return fab_cfg_fail(n, err, "priority %" G_GUINT64_FORMAT " does not exist (expected 0..%u: "
                        "fabric.switch.priorities is %u)", v, nprio - 1, nprio);
  return TRUE;
}

/* One job being generated: its DAG, index and rank -> endpoint map. */
typedef struct Job {
  FabDag *d;
  uint16_t id;
  uint32_t n;
  const uint32_t *ep;
} Job;

static void add(Job *j, uint32_t src, uint32_t dst, uint64_t bytes, fab_time_t start, uint8_t prio) {
  FabOp o = {.kind = FAB_OP_FLOW, .prio = prio, .job = j->id, .src = j->ep[src], .dst = j->ep[dst], .coll = -1,
             .bytes = bytes, .start = start};
  fab_dag_add(j->d, &o, NULL, 0);
}

static gboolean read_flows(Job *j, const FabCfgNode *seq, uint32_t nprio, GError **err) {
  for (size_t i = 0; i < fab_cfg_len(seq); i++) {
    const FabCfgNode *item = fab_cfg_at(seq, i);
    FlowIn f = {0};
    if (!fab_cfg_apply(item, NULL, flow_schema, &f, err)) return FALSE;
    if (!check_endpoint(fab_cfg_get(item, "src"), f.src, j->n, err) ||
        !check_endpoint(fab_cfg_get(item, "dst"), f.dst, j->n, err) ||
        !check_prio(fab_cfg_get(item, "priority"), f.priority, nprio, err))
      return FALSE;
    if (j->ep[f.src] == j->ep[f.dst])
      return fab_cfg_fail(fab_cfg_get(item, "dst"), err, "a flow from an endpoint to itself");
    add(j, (uint32_t)f.src, (uint32_t)f.dst, f.size, f.start, (uint8_t)f.priority);
  }
  return TRUE;
}

static gboolean read_incast(Job *j, const FabCfgNode *wl, const WorkloadIn *in, GError **err) {
  if (!check_endpoint(fab_cfg_get(wl, "receiver"), in->receiver, j->n, err)) return FALSE;
  uint32_t r = (uint32_t)in->receiver;
  const FabCfgNode *s = in->senders;
  if (!s) return fab_cfg_fail(wl, err, "incast needs senders (a count or a list of ranks)");
  if (fab_cfg_kind(s) == FAB_CFG_NODE_SEQ) {
    GHashTable *seen = g_hash_table_new(NULL, NULL);
    gboolean ok = TRUE;
    for (size_t i = 0; ok && i < fab_cfg_len(s); i++) {
      const FabCfgNode *it = fab_cfg_at(s, i);
      int64_t v;
      if (fab_cfg_kind(it) != FAB_CFG_NODE_SCALAR || !fab_parse_int(fab_cfg_scalar(it), &v, NULL) || v < 0)
        ok = fab_cfg_fail(it, err, "expected a rank number");
      else if (!check_endpoint(it, (uint64_t)v, j->n, err))
        ok = FALSE;
      else if (v == r || g_hash_table_contains(seen, GUINT_TO_POINTER(v + 1)))
        ok = fab_cfg_fail(it, err, v == r ? "the receiver cannot be a sender" : "rank listed twice");
      else {
        g_hash_table_add(seen, GUINT_TO_POINTER(v + 1));
        add(j, (uint32_t)v, r, in->size, in->job.start, (uint8_t)in->priority);
      }
    }
    g_hash_table_destroy(seen);
    if (ok && !fab_cfg_len(s)) return fab_cfg_fail(s, err, "an empty list of senders");
    return ok;
  }
  int64_t n;
  if (fab_cfg_kind(s) != FAB_CFG_NODE_SCALAR || !fab_parse_int(fab_cfg_scalar(s), &n, NULL) || n < 1)
    return fab_cfg_fail(s, err, "expected a number of senders >= 1 or a list of ranks");
  if ((uint64_t)n > j->n - 1)
    return fab_cfg_fail(s, err, "%" G_GINT64_FORMAT " senders, but only %u ranks besides the receiver", n, j->n - 1);
  for (int64_t i = 1; i <= n; i++) add(j, (uint32_t)((r + i) % j->n), r, in->size, in->job.start, (uint8_t)in->priority);
  return TRUE;
}

/* `ranks:` of a job: all (the default), a list of endpoints, or "A-B". */
static uint32_t *read_ranks(const FabCfgNode *r, uint32_t endpoints, uint32_t *n, GError **err) {
  GArray *a = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  const char *sc = r && fab_cfg_kind(r) == FAB_CFG_NODE_SCALAR ? fab_cfg_scalar(r) : NULL;
  int64_t lo, hi;
  char **ab = sc ? g_strsplit(sc, "-", 2) : NULL;
  if (!r || (sc && g_str_equal(sc, "all"))) {
    for (uint32_t i = 0; i < endpoints; i++) g_array_append_val(a, i);
  } else if (ab && ab[0] && ab[1] && fab_parse_int(ab[0], &lo, NULL) && fab_parse_int(ab[1], &hi, NULL)) {
    if (lo < 0 || hi < lo || hi >= endpoints) {
      fab_cfg_fail(r, err, "expected A-B with 0 <= A <= B <= %u, not %s", endpoints - 1, sc);
      goto fail;
    }
    for (int64_t i = lo; i <= hi; i++) {
      uint32_t u = (uint32_t)i;
      g_array_append_val(a, u);
    }
  } else if (fab_cfg_kind(r) == FAB_CFG_NODE_SEQ) {
    GHashTable *seen = g_hash_table_new(NULL, NULL);
    for (size_t i = 0; i < fab_cfg_len(r); i++) {
      const FabCfgNode *it = fab_cfg_at(r, i);
      int64_t v;
      if (fab_cfg_kind(it) != FAB_CFG_NODE_SCALAR || !fab_parse_int(fab_cfg_scalar(it), &v, NULL) || v < 0 ||
          v >= endpoints) {
        fab_cfg_fail(it, err, "expected an endpoint from 0 to %u", endpoints - 1);
        g_hash_table_destroy(seen);
        goto fail;
      }
      if (g_hash_table_contains(seen, GUINT_TO_POINTER(v + 1))) {
        fab_cfg_fail(it, err, "endpoint %" G_GINT64_FORMAT " listed twice", v);
        g_hash_table_destroy(seen);
        goto fail;
      }
      g_hash_table_add(seen, GUINT_TO_POINTER(v + 1));
      uint32_t u = (uint32_t)v;
      g_array_append_val(a, u);
    }
    g_hash_table_destroy(seen);
    if (!a->len) { /* (an empty GArray would also hand back no array at all) */
      fab_cfg_fail(r, err, "an empty list: a job needs ranks (a list of endpoints, a range A-B, or 'all')");
      goto fail;
    }
  } else {
    fab_cfg_fail(r, err, "expected 'all', a list of endpoints or a range A-B");
    goto fail;
  }
  g_strfreev(ab);
  *n = a->len;
  return (uint32_t *)(void *)g_array_free(a, FALSE);
fail:
  g_strfreev(ab);
  g_array_free(a, TRUE);
  return NULL;
}

/* The node to blame for a collective the algorithms refuse. */
static const FabCfgNode *coll_at(const FabCfgNode *wl) {
  const FabCfgNode *at = fab_cfg_get(wl, "algorithm");
  if (!at) at = fab_cfg_get(wl, "op");
  return at ? at : wl;
}

/* The collective a job asks for; FALSE + err when its chunk holds part of an
** element (a ring cuts each loop of chunks into parts of whole elements: a
** chunk of a part element would leave bytes out). */
static gboolean spec_from(FabCollSpec *c, const Job *j, const WorkloadIn *in, const FabCfgNode *wl, GError **err) {
  uint32_t dt = dtype_size[in->dtype];
  if (in->chunk % dt)
    return fab_cfg_fail(fab_cfg_get(wl, "chunk"), err, "chunk %" G_GUINT64_FORMAT " B is not a whole number of %u-byte "
                        "%s elements", in->chunk, dt, fab_dtype_names[in->dtype]);
  *c = (FabCollSpec){(FabCollOp)in->op, (FabCollAlgo)in->algorithm, (FabProto)in->protocol, in->size,
                     dt, j->n, j->ep, (uint32_t)in->root, (uint32_t)in->channels, in->chunk,
                     (uint8_t)in->priority, j->id, 0, NULL, in->job.start, in->cta_policy == 1};
  return TRUE;
}

/* nccl-tests' size for `op` on n ranks: what its *_perf binary reports for a
** requested size. Allreduce and the rooted ones: whole elements. Allgather,
** reduce-scatter and all-to-all: each rank's part (a peer's, for all-to-all)
** in whole elements rounded down to a multiple of 16 bytes, times n
** (NVIDIA/nccl-tests src/all_gather.cu, reduce_scatter.cu, alltoall.cu:
** base = (count / nranks) & ~(16 / eltSize - 1)). */
static bool ncclt_parts(FabCollOp op) {
  return op == FAB_COLL_ALLGATHER || op == FAB_COLL_REDUCE_SCATTER || op == FAB_COLL_ALL_TO_ALL;
}
static uint64_t ncclt_size(FabCollOp op, uint64_t want, uint32_t dt, uint32_t n) {
  if (!ncclt_parts(op)) return want / dt * dt;
  uint64_t base = want / dt / n, line = dt < 16 ? 16 / dt : 1;
  return base / line * line * dt * n;
}

/* A collective job (collective.h: FabCollGen), a training job
** (training.h: FabTrainGen) or an nccl-tests sweep (Sweep) made as the run goes: ops a batch, at least.
** Smaller batches keep less ahead of the run; a ring's layer (one step on
** every channel) or a training round is made whole anyway. */
#define BATCH_OPS 4096u

/* kind: nccl-tests: sizes one after another; within a size, `warmup` then
** `iters` back to back on each rank (the next waits for the rank's previous
** one, as on one CUDA stream), the warm-up's end a meeting of all ranks;
** between sizes all ranks meet. Made whole before the run, or, as the
** workload's last job, as the run goes (Sweep). */
typedef struct Sweep {
  FabDag *d;
  FabCollEnv env;   /* a copy: the loader's is gone before the run ends */
  FabCollSpec c;    /* the job's; bytes and tag set per collective */
  uint64_t *bytes;  /* per size (each at least an element per rank) */
  uint32_t nsizes, warmup, iters;
  bool unfold;      /* rings made layer by layer, every definition made at load */
  uint32_t k, it;   /* the next collective: size k, iteration it */
  uint32_t def;     /* its definition (unfold) */
  FabCollGen *g;    /* the one under way */
  uint32_t *prev;   /* what each rank waits for before the next */
  double est;       /* ops in all, about */
} Sweep;

static void sweep_free(Sweep *s) {
  if (!s) return;
  fab_coll_gen_free(s->g);
  g_free(s->bytes);
  g_free(s->prev);
  g_free(s);
}

static const char *sweep_tag(const Sweep *s, uint32_t it) { return it < s->warmup ? "nccl-tests-warmup" : "nccl-tests"; }

/* How long the ranks' meeting takes after the last arrives: nccl-tests
** meets in an MPI_Barrier (common.cu, Barrier() before each timed loop),
** which MPI libraries run as a dissemination barrier (Hensgen, Finkel and
** Manber 1988; MPICH's src/mpi/coll/barrier/barrier_intra_k_dissemination.c):
** ceil(log2 nodes) rounds of one small message across the network each,
** here one network hop unloaded (FabCollEnv.net_lat). Ranks of one node
** meet at no cost (no public figure for a shared-memory barrier: a 0,
** as before this was modelled). */
static fab_time_t sweep_barrier(const Sweep *s) {
  uint32_t per = MAX(s->env.gpus_per_node, 1u);
  GHashTable *seen = g_hash_table_new(NULL, NULL);
  for (uint32_t i = 0; i < s->c.nranks; i++) g_hash_table_add(seen, GUINT_TO_POINTER(s->c.ranks[i] / per + 1));
  uint32_t n = g_hash_table_size(seen), rounds = 0; /* one node: no round */
  g_hash_table_destroy(seen);
  while ((1ull << rounds) < n) rounds++;
  return rounds * s->env.net_lat;
}

/* The collective under way has ended: the next waits for its ends, and at
** the warm-up's end and a size's end for all ranks to meet: a mark once all
** have arrived, then one per rank the barrier's time later (a mark's `pre`,
** on the rank's side: what a run over threads needs to begin the rank's
** next collective in its own partition). */
static void sweep_ended(Sweep *s) {
  memcpy(s->prev, fab_coll_gen_end(s->g), sizeof(uint32_t) * s->c.nranks);
  fab_coll_gen_free(s->g);
  s->g = NULL;
  bool last = ++s->it == s->warmup + s->iters;
  if (s->it == s->warmup || last) {
    uint32_t join = fab_dag_mark(s->d, s->c.ranks[0], FAB_MARK_JOIN, s->c.job, -1, s->prev, s->c.nranks);
    fab_time_t lat = sweep_barrier(s);
    for (uint32_t i = 0; i < s->c.nranks; i++) {
      FabOp o = {.kind = FAB_OP_MARK, .mark = FAB_MARK_JOIN, .job = s->c.job, .src = s->c.ranks[i],
                 .dst = s->c.ranks[i], .coll = -1, .pre = lat};
      s->prev[i] = lat ? fab_dag_add(s->d, &o, &join, 1) : join;
    }
  }
  if (last) s->it = 0, s->k++;
}

/* At least min_ops more ops (collectives made whole count whole). 1: more
** to come, 0: the sweep is made, -1 + err: an expansion failed (only made
** whole: a sweep that unfolds began every size at load). */
static int sweep_more(Sweep *s, uint32_t min_ops, GError **err) {
  const uint32_t from = fab_dag_len(s->d);
  while (fab_dag_len(s->d) - from < min_ops) {
    if (!s->g) {
      if (s->k == s->nsizes) return 0;
      s->c.bytes = s->bytes[s->k];
      s->c.tag = sweep_tag(s, s->it);
      s->c.def1 = s->unfold ? ++s->def : 0;
      s->g = fab_coll_begin(s->d, &s->env, &s->c, s->prev, s->unfold, err);
      if (!s->g) {
        g_assert(!s->unfold);
        return -1;
      }
    } else if (fab_coll_gen_more(s->g, min_ops - (fab_dag_len(s->d) - from))) {
      continue;
    }
    if (fab_coll_gen_done(s->g)) sweep_ended(s);
  }
  return s->g || s->k < s->nsizes;
}

/* Checks every size (one collective of each begun and taken back) and
** what the sweep will make, before any of it is kept; with `unfold`, defines
** every collective of the sweep (the results and validate --explain list
** them from the start). NULL + err on bad input. */
static Sweep *sweep_begin(FabDag *d, const FabCollEnv *env, const FabCollSpec *c, const uint64_t *bytes,
                          uint32_t nsizes, uint32_t warmup, uint32_t iters, bool unfold, const FabCfgNode *wl,
                          GError **err) {
  Sweep *s = g_new0(Sweep, 1);
  *s = (Sweep){.d = d, .env = *env, .c = *c, .bytes = g_memdup2(bytes, sizeof(uint64_t) * nsizes), .nsizes = nsizes,
               .warmup = warmup, .iters = iters, .unfold = unfold, .prev = g_new(uint32_t, c->nranks),
               .def = d->colls->len};
  for (uint32_t i = 0; i < c->nranks; i++) s->prev[i] = FAB_OP_NONE;
  GArray *defs = g_array_new(FALSE, FALSE, sizeof(FabCollDef));
  const double cap = unfold ? FAB_COLL_UNFOLD_MAX_OPS : FAB_DAG_MAX_OPS;
  double need = fab_dag_len(d);
  gboolean ok = TRUE;
  for (uint32_t k = 0; ok && k < nsizes; k++) {
    GError *e = NULL;
    uint32_t ops0 = fab_dag_len(d), deps0 = fab_dag_deps_len(d), colls0 = d->colls->len, groups0 = d->groups;
    s->c.bytes = bytes[k];
    s->c.tag = "nccl-tests";
    FabCollGen *g = fab_coll_begin(d, &s->env, &s->c, s->prev, unfold, &e);
    if (!g) {
      ok = fab_cfg_fail(coll_at(wl), err, "%s", e->message);
      g_error_free(e);
      break;
    }
    need += (fab_coll_gen_done(g) ? fab_dag_len(d) - ops0 : fab_coll_gen_estimate(g)) * (warmup + iters) + 2;
    fab_coll_gen_free(g);
    g_array_append_val(defs, g_array_index(d->colls, FabCollDef, colls0));
    fab_dag_truncate(d, ops0, deps0);
    g_array_set_size(d->colls, colls0);
    d->groups = groups0;
    if (need > cap) /* (also at the last size: then every size was begun, and only this says no) */
      ok = fab_cfg_fail(wl, err, "the sweep needs more than %.0f operations (%.0f by the end of %" G_GUINT64_FORMAT
                        " B)%s: fewer sizes, iters or warmup, or a larger chunk", cap, need, bytes[k],
                        unfold ? ", more than a run can number even made as it goes" : "");
  }
  if (!ok) {
    g_array_free(defs, TRUE);
    sweep_free(s);
    return NULL;
  }
  for (uint32_t k = 0; unfold && k < nsizes; k++)
    for (uint32_t it = 0; it < warmup + iters; it++) {
      FabCollDef def = g_array_index(defs, FabCollDef, k);
      def.tag = sweep_tag(s, it);
      fab_dag_coll(d, &def);
    }
  g_array_free(defs, TRUE);
  s->est = need - fab_dag_len(d);
  /* made as it runs, its collectives are those begun here: any warning they give was given now, at load */
  if (unfold) s->env.warnings = NULL;
  return s;
}

static gboolean read_ncclt(Job *j, const FabCfgNode *wl, const WorkloadIn *in, const FabWorkloadEnv *env,
                           bool last, Sweep **unfolding, GError **err) {
  GArray *sizes = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  gboolean ok = TRUE;
  uint32_t dt = dtype_size[in->dtype];
  if (in->sizes) {
    if (fab_cfg_get(wl, "min") || fab_cfg_get(wl, "max") || fab_cfg_get(wl, "factor")) {
      GString *rm = g_string_new(NULL);
      static const char *const k[] = {"min", "max", "factor"};
      for (size_t i = 0; i < G_N_ELEMENTS(k); i++)
        if (fab_cfg_get(wl, k[i])) g_string_append_printf(rm, " --set %s=~", fab_cfg_path(fab_cfg_get(wl, k[i])));
      ok = fab_cfg_fail(in->sizes, err, "give either sizes or min/max/factor, not both (to use sizes where a "
                        "file gives min/max, remove them:%s)", rm->str);
      g_string_free(rm, TRUE);
    }
    for (size_t i = 0; ok && i < fab_cfg_len(in->sizes); i++) {
      uint64_t v;
      const FabCfgNode *it = fab_cfg_at(in->sizes, i);
      if (fab_cfg_kind(it) != FAB_CFG_NODE_SCALAR || !fab_parse_size(fab_cfg_scalar(it), &v, NULL) || !v)
        ok = fab_cfg_fail(it, err, "expected a size in bytes (e.g. 8, 1MiB)");
      else
        g_array_append_val(sizes, v);
    }
    if (ok && !sizes->len) ok = fab_cfg_fail(in->sizes, err, "an empty list of sizes");
  } else if (!fab_cfg_get(wl, "max")) {
    ok = fab_cfg_fail(wl, err, "workload kind nccl-tests needs max (and optionally min, factor) or sizes");
  } else if (in->max < in->min) {
    ok = fab_cfg_fail(fab_cfg_get(wl, "max"), err, "max %" G_GUINT64_FORMAT " is below min %" G_GUINT64_FORMAT,
                      in->max, in->min);
  } else {
    for (uint64_t v = in->min; v <= in->max; v *= in->factor) {
      g_array_append_val(sizes, v);
      if (v > UINT64_MAX / in->factor) break;
    }
  }
  if (ok && sizes->len > 64) ok = fab_cfg_fail(in->sizes ? in->sizes : wl, err, "%u sizes: at most 64", sizes->len);
  guint runs = 0; /* the sizes of at least one 16-byte part per rank (nccl-tests skips the others too), in place */
  for (guint k = 0; ok && k < sizes->len; k++) {
    uint64_t bytes = ncclt_size((FabCollOp)in->op, g_array_index(sizes, uint64_t, k), dt, j->n);
    if (bytes) g_array_index(sizes, uint64_t, runs++) = bytes;
  }
  if (ok && !runs)
    ok = ncclt_parts((FabCollOp)in->op)
           ? fab_cfg_fail(wl, err, "every size is below 16 bytes (a %u-byte element's multiple) per rank on %u ranks", dt, j->n)
           : fab_cfg_fail(wl, err, "every size is below one %u-byte element per rank on %u ranks", dt, j->n);
  FabCollSpec c;
  ok = ok && spec_from(&c, j, in, wl, err);
  Sweep *s = ok ? sweep_begin(j->d, &env->coll, &c, (const uint64_t *)sizes->data, runs, (uint32_t)in->warmup,
                              (uint32_t)in->iters, last, wl, err)
                : NULL;
  g_array_free(sizes, TRUE);
  if (!s) return FALSE;
  GError *e = NULL;
  int more = sweep_more(s, last ? BATCH_OPS : UINT32_MAX, &e);
  if (more > 0) *unfolding = s; /* the rest as the run goes */
  else sweep_free(s);
  if (more >= 0) return TRUE;
  fab_cfg_fail(coll_at(wl), err, "%s", e->message);
  g_error_free(e);
  return FALSE;
}

/* The kind a job map names, and its keys checked against the kind's schema
** (a key of another kind is named as such). -1 + err on bad input. */
static int job_kind(const FabCfgNode *wl, GError **err) {
  if (fab_cfg_kind(wl) != FAB_CFG_NODE_MAP) return fab_cfg_fail(wl, err, "expected a map (a workload)"), -1;
  const FabCfgNode *kn = fab_cfg_get(wl, "kind");
  if (!kn) { /* the schema's own message: missing required key 'kind' (expected one of: ...) */
    FabJobIn none;
    fab_cfg_apply(NULL, wl, fab_job_prefix, &none, err);
    return -1;
  }
  int kind = fab_cfg_enum(kn, kinds, err);
  if (kind < 0) return -1;
  for (size_t i = 0; i < fab_cfg_len(wl); i++) { /* keys of other kinds are errors, not ignored */
    const char *key = fab_cfg_key_at(wl, i);
    if (fab_cfg_schema_has(kind_schema[kind], key)) continue;
    for (int o = 0; kinds[o]; o++)
      if (fab_cfg_schema_has(kind_schema[o], key))
        return fab_cfg_fail(fab_cfg_at(wl, i), err, "'%s' is not used by workload kind %s", key, kinds[kind]), -1;
  }
  return kind;
}


typedef struct Unfold {
  FabCollGen *g;        /* a collective job's, or */
  FabTrainGen *tg;      /* a training job's, or */
  Sweep *sw;            /* an nccl-tests job's */
  const FabCfgNode *at; /* the job (for errors while loading) */
  uint32_t ops0;        /* the DAG's length when it began */
} Unfold;

static void unfold_free(gpointer p) {
  Unfold *u = p;
  if (!u) return;
  fab_coll_gen_free(u->g);
  fab_training_gen_free(u->tg);
  sweep_free(u->sw);
  g_free(u);
}

static bool unfold_done(const Unfold *u) { return u->g ? fab_coll_gen_done(u->g) : !u->tg && !u->sw; }

static void unfold_left(const Unfold *u, FabDag *d) {
  if (unfold_done(u)) {
    d->more_ops = 0;
    return;
  }
  double made = fab_dag_len(d) - u->ops0;
  double est = u->g ? fab_coll_gen_estimate(u->g) : u->tg ? fab_training_gen_estimate(u->tg) : u->sw->est;
  d->more_ops = MAX(est - made, 0);
}

/* The next batch; false when the job has no more. */
static bool unfold_step(Unfold *u, uint32_t min_ops) {
  if (u->g) return fab_coll_gen_more(u->g, min_ops);
  if (u->sw) { /* a sweep that unfolds began every size at load: nothing fails */
    int more = sweep_more(u->sw, min_ops, NULL);
    g_assert(more >= 0);
    if (!more) sweep_free(u->sw), u->sw = NULL;
    return more > 0;
  }
  if (!u->tg) return false;
  /* a training job that unfolds met every error at its start (training.h) */
  int more = fab_training_gen_more(u->tg, min_ops, NULL);
  g_assert(more >= 0);
  if (!more) { /* done: its state goes now, not with the DAG */
    fab_training_gen_free(u->tg);
    u->tg = NULL;
  }
  return more > 0;
}

static bool unfold_more(void *ctx, FabDag *d) {
  Unfold *u = ctx;
  bool more = unfold_step(u, BATCH_OPS);
  unfold_left(u, d);
  return more;
}

/* The rest of a job left to unfold, made now (another job follows it): a
** training job only if its estimate is within the cap of a DAG made whole. */
static gboolean unfold_finish(Unfold **pending, GError **err) {
  if (!*pending) return TRUE;
  Unfold *u = *pending;
  gboolean ok = TRUE;
  if (u->tg && fab_training_gen_estimate(u->tg) > FAB_DAG_MAX_OPS - u->ops0)
    ok = fab_cfg_fail(u->at, err, "this training job needs about %.0f operations: made before the run (another job "
                      "follows it; only a workload's last job is made as it runs), more than the %u a workload may "
                      "have", fab_training_gen_estimate(u->tg), FAB_DAG_MAX_OPS);
  while (ok && unfold_step(u, UINT32_MAX)) continue;
  unfold_free(u);
  *pending = NULL;
  return ok;
}

/* A training job: made whole now when it cannot unfold (its stages
** differ), else its first batch now and the rest left to *pending. */
static gboolean read_training(const FabTrainIn *in, const FabCfgNode *wl, const FabWorkloadEnv *env, FabDag *d,
                              const Job *j, Unfold **pending, GError **err) {
  FabTrainGpu gpu = {env->gpu_flops, env->gpu_eff, env->gpu_mem_bps};
  Unfold tu = {.ops0 = fab_dag_len(d), .at = wl};
  FabTrainIn tin = *in;
  tin.seed = env->seed, tin.stream = fab_rng_stream_of2("moe", g_array_index(d->jobs, FabJobDef, j->id).name); /* MoE routing draws */
  tu.tg = fab_training_begin(&tin, wl, d, &env->coll, j->ep, j->n, j->id, &gpu, TRUE, err);
  if (!tu.tg) return FALSE;
  if (!fab_training_gen_unfolds(tu.tg)) { /* made whole now, capped */
    int more = fab_training_gen_more(tu.tg, UINT32_MAX, err);
    fab_training_gen_free(tu.tg);
    return more == 0;
  }
  if (unfold_step(&tu, BATCH_OPS)) *pending = g_memdup2(&tu, sizeof tu); /* the rest as the run goes */
  return TRUE;
}

/* Read one job's map into d. A collective job's expansion may be left to
** unfold (*pending): the caller makes the rest, or has the run make it. */
static gboolean read_job(const FabCfgNode *wl, const FabWorkloadEnv *env, FabDag *d, uint32_t index,
                         gboolean several, bool last, GHashTable *names, Unfold **pending, GError **err) {
  union {
    FabJobIn job;
    WorkloadIn w;
    FabTrainIn t;
    FabTraceIn tr;
  } u;
  memset(&u, 0, sizeof u);
  int kind = job_kind(wl, err);
  if (kind < 0 || !fab_cfg_apply(wl, NULL, kind_schema[kind], &u, err)) return FALSE;
  WorkloadIn in = u.w;
  bool traced = kind == FAB_WL_TEXT || kind == FAB_WL_CHAKRA;
  if (kind != FAB_WL_TRAINING && !traced) {
    if (kind != FAB_WL_FLOWS && kind != FAB_WL_NCCL_TESTS && kind != FAB_WL_ALL_TO_ALL && !fab_cfg_get(wl, "size"))
      return fab_cfg_fail(wl, err, "workload kind %s needs size", kinds[kind]);
    if (!check_prio(fab_cfg_get(wl, "priority"), in.priority, env->nprio, err)) return FALSE;
  }
  in.job = u.job;
  uint32_t n = 0;
  uint32_t *ranks = read_ranks(in.job.ranks, env->endpoints, &n, err);
  if (!ranks) return FALSE;
  char *name = in.job.name ? g_strdup(in.job.name) : several ? g_strdup_printf("job%u", index) : g_strdup(kinds[kind]);
  if (g_hash_table_contains(names, name)) {
    gboolean r = fab_cfg_fail(fab_cfg_get(wl, "name") ? fab_cfg_get(wl, "name") : wl, err, "a second job named '%s'",
                              name);
    g_free(name);
    g_free(ranks);
    return r;
  }
  FabJobDef jd = {name, kinds[kind], n, ranks, 0, 0, 1};
  g_hash_table_add(names, name); /* the table owns name */
  Job j = {d, fab_dag_job(d, &jd), n, ranks};
  uint32_t before = fab_dag_len(d);
  const FabCfgNode *at = in.job.ranks ? in.job.ranks : wl;
  gboolean ok = TRUE;
  switch ((FabWorkloadKind)kind) {
  case FAB_WL_FLOWS:
    if (!in.flows) ok = fab_cfg_fail(wl, err, "workload kind flows needs flows: [{src, dst, size}, ...]");
    else ok = read_flows(&j, in.flows, env->nprio, err);
    break;
  case FAB_WL_PERMUTATION: {
    if (n < 2) {
      ok = fab_cfg_fail(at, err, "a permutation needs at least 2 ranks");
      break;
    }
    if (n > FAB_DAG_MAX_OPS - fab_dag_len(d)) {
      ok = fab_cfg_fail(at, err, "a permutation over %u ranks is more than the %u operations a workload may have", n,
                        FAB_DAG_MAX_OPS);
      break;
    }
    uint32_t *perm = g_new(uint32_t, n);
    fab_workload_derangement(perm, n, env->seed, fab_rng_stream_of2("job", jd.name)); /* the job's own stream */
    for (uint32_t i = 0; i < n; i++) add(&j, i, perm[i], in.size, in.job.start, (uint8_t)in.priority);
    g_free(perm);
    break;
  }
  case FAB_WL_INCAST:
    ok = read_incast(&j, wl, &in, err);
    break;
  case FAB_WL_ALL_TO_ALL:
    if (!check_a2a_size(wl, &in, n, err)) {
      ok = FALSE;
      break;
    }
    if ((uint64_t)n * (n - 1) > FAB_DAG_MAX_OPS - fab_dag_len(d)) { /* refused before a flow is made */
      ok = fab_cfg_fail(wl, err, "all-to-all over %u ranks is %" G_GUINT64_FORMAT " flows: more than the %u operations "
                        "a workload may have", n, (uint64_t)n * (n - 1), FAB_DAG_MAX_OPS);
      break;
    }
    for (uint32_t s = 0; s < n; s++)
      for (uint32_t t = 0; t < n; t++)
        if (s != t) add(&j, s, t, in.size, in.job.start, (uint8_t)in.priority);
    break;
  case FAB_WL_COLLECTIVE: {
    if (n < 2) {
      ok = fab_cfg_fail(at, err, "a collective needs at least 2 ranks");
      break;
    }
    if (in.root >= n) {
      ok = fab_cfg_fail(fab_cfg_get(wl, "root"), err, "root %" G_GUINT64_FORMAT " is not a rank (0..%u)", in.root, n - 1);
      break;
    }
    FabCollSpec c;
    GError *e = NULL;
    if (!(ok = spec_from(&c, &j, &in, wl, err))) break;
    Unfold u = {.ops0 = fab_dag_len(d), .at = wl};
    u.g = fab_coll_begin(d, &env->coll, &c, NULL, TRUE, &e);
    if (!u.g) {
      ok = fab_cfg_fail(coll_at(wl), err, "%s", e->message);
      g_error_free(e);
    } else if (fab_coll_gen_more(u.g, BATCH_OPS)) { /* the first batch now, the rest as the run goes */
      *pending = g_memdup2(&u, sizeof u);
    } else {
      fab_coll_gen_free(u.g);
    }
    break;
  }
  case FAB_WL_NCCL_TESTS:
    if (n < 2) ok = fab_cfg_fail(at, err, "a collective needs at least 2 ranks");
    else if (in.root >= n)
      ok = fab_cfg_fail(fab_cfg_get(wl, "root"), err, "root %" G_GUINT64_FORMAT " is not a rank (0..%u)", in.root, n - 1);
    else {
      Unfold nu = {.ops0 = fab_dag_len(d), .at = wl};
      ok = read_ncclt(&j, wl, &in, env, last, &nu.sw, err);
      if (ok && nu.sw) *pending = g_memdup2(&nu, sizeof nu);
    }
    break;
  case FAB_WL_TRAINING:
    ok = read_training(&u.t, wl, env, d, &j, pending, err);
    break;
  case FAB_WL_TEXT: case FAB_WL_CHAKRA:
    ok = fab_trace_job(&u.tr, wl, kind == FAB_WL_CHAKRA, d, env, ranks, n, j.id, err);
    break;
  }
  if (ok && fab_dag_len(d) == before) ok = fab_cfg_fail(wl, err, "the workload has no flows");
  if (ok && fab_dag_len(d) > FAB_DAG_MAX_OPS)
    ok = fab_cfg_fail(wl, err, "the workload needs %u operations, more than %u: make its jobs smaller (a larger "
                      "chunk or layer_group, fewer steps or sizes)", fab_dag_len(d), FAB_DAG_MAX_OPS);
  return ok;
}

FabDag *fab_workload_read(const FabCfgNode *root, const FabWorkloadEnv *env, GError **err) {
  const FabCfgNode *wl = fab_cfg_get(root, "workload");
  if (!wl) {
    fab_cfg_fail(root, err, "missing required key 'workload'");
    return NULL;
  }
  FabDag *d = fab_dag_new();
  Unfold *pending = NULL;
  GHashTable *names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL); /* of the jobs so far */
  gboolean ok = TRUE;
  if (fab_cfg_kind(wl) == FAB_CFG_NODE_SEQ) { /* several jobs at once */
    if (!fab_cfg_len(wl)) ok = fab_cfg_fail(wl, err, "an empty list of jobs");
    if (fab_cfg_len(wl) > FAB_DAG_MAX_JOBS)
      ok = fab_cfg_fail(wl, err, "%zu jobs: at most %u", fab_cfg_len(wl), FAB_DAG_MAX_JOBS);
    for (size_t i = 0; ok && i < fab_cfg_len(wl); i++) {
      ok = unfold_finish(&pending, err); /* only the last job unfolds: the ops keep the order of a DAG made whole */
      if (ok) ok = read_job(fab_cfg_at(wl, i), env, d, (uint32_t)i, TRUE, i + 1 == fab_cfg_len(wl), names, &pending, err);
    }
  } else {
    ok = read_job(wl, env, d, 0, FALSE, true, names, &pending, err);
  }
  g_hash_table_destroy(names);
  if (ok && pending) {
    fab_dag_set_more(d, unfold_more, pending, unfold_free);
    unfold_left(pending, d);
  } else {
    unfold_free(pending);
  }
  if (ok && !fab_dag_flows(d)) ok = fab_cfg_fail(wl, err, "the workload has no flows");
  if (!ok) {
    fab_dag_free(d);
    return NULL;
  }
  return d;
}

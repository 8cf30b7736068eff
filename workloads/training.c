/*
** Training steps turned into a FabDag. See training.h for the YAML.
**
** Shape. h = hidden, f = ffn (default 4h), L = layers, s = seq, b =
** micro_batch, B = dtype bytes (bf16/fp16 2, fp32 4, fp8 1), E = experts,
** k = top_k. A dense layer holds 4h^2 (Q, K, V, O) + 2hf (the two MLP
** matrices) parameters; biases, norms, the router and the embeddings are
** not modelled. Layer l (0-based) is an MoE layer when E > 0 and
** l % moe_every == 0 (Megatron's moe_layer_freq); it holds 4h^2 + E x 2hf.
** `params` (dense models only) fixes the total instead:
**  - with layers and hidden: f = (params/L - 4h^2) / 2h;
**  - with layers only: h = sqrt(params / 12L) rounded to a multiple of 128;
**  - with hidden only: L = params / 12h^2;
**  - alone: L = cbrt(params / (12 x 128^2)) (hidden/layers ~ 128, as GPT-3,
**    Llama-7B/13B), rounded to a multiple of 8, then h as above;
**  L is then rounded to a multiple of pp x layer_group and f derived from
**  params as in the first case, so the total stays `params`.
**
** Compute, per block of G = layer_group layers, per microbatch, per rank:
**   attention part  A = G x (2bs x 4h^2 + 4bs^2h) / tp   (projections, then
**                   QK^T and AV without causal halving)
**   MLP part        M = 2bs x 2hf x (dense layers + k x MoE layers) / tp
**   forward = A + M FLOPs; backward = 2 (A + M); time = FLOPs / (flops x
**   efficiency), rounded to the picosecond. A forward block is
**   attn [TP allreduce] [EP all-to-all] mlp [EP all-to-all] [TP allreduce],
**   a backward block [EP a2a] mlp [EP a2a] [TP allreduce] attn [TP allreduce];
**   adjacent compute parts with no collective between them are one op.
**   TP allreduce: G x b s h B bytes over the tp group; EP all-to-all:
**   (MoE layers in the block) x b s h B k bytes over the ep group. With
**   G > 1 a block's G layers act as one (the collectives carry G layers'
**   bytes at once): fewer, larger ops.
** Optimizer: OPT_BYTES (28) bytes of memory traffic per parameter the rank
** updates (params of its stage / tp, / dp with ZeRO >= 1) at
** gpu.memory_bandwidth (the cluster preset's HBM bandwidth by default).
**
** Ranks: r = tp_i + tp (dp_i + dp pp_i). Groups (all on one stage):
**   tp   same dp_i;                  ep   dp_i = g ep + e, e = 0..ep-1
**   dp   same tp_i, all dp_i;        edp  same tp_i, same dp_i % ep
** Expert parameters (ep > 1) are sharded E/ep per rank and their gradients
** reduced over edp (dp/ep ranks); all other gradients over dp.
**
** Pipeline: per stage 1F1B: warm-up min(pp-1-stage, m) forwards, then one
** forward one backward, then the remaining backwards; the compute ops of a
** rank are chained in that order. After the forward of microbatch j on stage
** s < pp-1 each rank sends ceil(b s h B / tp) bytes to the same (tp_i, dp_i)
** on stage s+1, whose forward of j waits for it; backward gradients go back
** the same way. These flows carry a FabCollDef "send-recv", tag "pp", one per
** (step, stage boundary, direction, microbatch).
**
** Data parallel (dp > 1): a stage's gradient bytes per rank (params / tp x
** B), walked in backward order (last block first), are cut into buckets of
** exactly `bucket` bytes (the last holds the rest), so there are
** ceil(bytes / bucket) per group. A bucket is ready when the last
** microbatch's backward of the block holding its last byte is done
** (overlap: true), or when the whole backward is (overlap: false).
**   zero 0   allreduce per bucket; the optimizer waits for all of them;
**   zero 1,2 reduce-scatter per bucket, the optimizer, then an allgather
**            per bucket of the updated parameters (2 differs from 1 only in
**            memory, which is not modelled);
**   zero 3 / fsdp  (as FSDP without no_sync, per microbatch): allgather of
**            the block's parameters before its forward and again before
**            its backward (prefetched: issued when the previous block
**            starts), reduce-scatter of its gradients after its backward;
**            no buckets.
** A step ends (FAB_MARK_STEP_END) after the optimizer and the allgathers
** that follow it; the next step begins (FAB_MARK_STEP_BEGIN) on that.
**
** Approximate: no embeddings or loss; no sequence parallelism; no
** interleaved (virtual) pipeline stages; p2p sends do not block the sender;
** no cross-stage synchronization before the optimizer (grad-norm, etc.);
** MoE load is perfectly balanced; blocks of G > 1 layers merge collectives.
*/
#include "train_int.h"
#include <math.h>
#include <stddef.h>
#include <string.h>

/* Memory traffic of a mixed-precision Adam step per parameter: read and
** write the fp32 weight, momentum and variance (24 B), read the bf16/fp16
** gradient (2 B), write the bf16/fp16 weight copy (2 B). NVIDIA/apex
** apex/pyprof/prof/optim.py, class Adam, bytes(): 6 x 4 B + the gradient +
** (mixed precision) the half-precision weight written back. The 16 B per
** parameter of the ZeRO paper (Rajbhandari et al., arXiv:1910.02054, 3.1)
** is what the state holds, not what a step moves. */
#define OPT_BYTES 28.0

static const char *const tags[] = {"tp", "ep", "dp", "zero"};

static inline uint32_t rank_of(const Train *t, uint32_t tp_i, uint32_t dp_i, uint32_t s) {
  return tp_i + t->tp * (dp_i + t->dp * s);
}

static uint32_t ngroups(const Train *t, int gk) {
  switch (gk) {
  case GK_TP: return t->dp;
  case GK_EP: return t->tp * (t->dp / t->ep);
  case GK_DP: return t->tp;
  default: return t->tp * t->ep;
  }
}

/* Members (job ranks) of group g of kind gk on stage s into out; returns how many. */
static uint32_t members(const Train *t, int gk, uint32_t s, uint32_t g, uint32_t *out) {
  uint32_t n = 0;
  switch (gk) {
  case GK_TP:
    for (uint32_t i = 0; i < t->tp; i++) out[n++] = rank_of(t, i, g, s);
    break;
  case GK_EP:
    for (uint32_t e = 0; e < t->ep; e++) out[n++] = rank_of(t, g % t->tp, (g / t->tp) * t->ep + e, s);
    break;
  case GK_DP:
    for (uint32_t i = 0; i < t->dp; i++) out[n++] = rank_of(t, g, i, s);
    break;
  default:
    for (uint32_t k = 0; k < t->edp; k++) out[n++] = rank_of(t, g % t->tp, k * t->ep + g / t->tp, s);
    break;
  }
  return n;
}

static gboolean too_many(Train *t, GError **err) {
  uint32_t all = fab_dag_len(t->d) - t->ops0;
  if (all <= MAX_OPS) return FALSE;
  GString *by = g_string_new(NULL);
  uint64_t rest = all;
  for (int i = 0; i < 4; i++) {
    if (t->ops_by[i]) g_string_append_printf(by, "%s collectives %" G_GUINT64_FORMAT ", ", tags[i], t->ops_by[i]);
    rest -= t->ops_by[i];
  }
  fab_cfg_fail(t->wl, err, "this training job needs more than %u operations (%u steps x %u microbatches x %u blocks "
               "per stage x %u ranks; after step %u: %scompute and the rest %" G_GUINT64_FORMAT "); raise "
               "chunk (fewer pieces per collective), layer_group (fewer tp/ep/zero collectives), bucket (fewer dp "
               "collectives), or lower channels, steps or microbatches", MAX_OPS, t->steps, t->m, t->nb, t->nranks, t->step, by->str, rest);
  g_string_free(by, TRUE);
  return TRUE;
}

static uint32_t mark(Train *t, uint32_t r, FabMarkKind kind, const uint32_t *deps, uint32_t ndeps) {
  FabOp o = {.kind = FAB_OP_MARK, .mark = (uint8_t)kind, .job = t->job, .step = t->step, .src = t->ranks[r],
             .dst = t->ranks[r], .coll = -1, .start = t->start};
  return fab_dag_add(t->d, &o, deps, ndeps);
}

/* Fold the rank's pending extra deps into its tail (before a collective). */
static void absorb(Train *t, uint32_t r) {
  uint32_t deps[4] = {t->tail[r], t->x[0][r], t->x[1][r], t->x[2][r]};
  if (deps[1] == FAB_OP_NONE && deps[2] == FAB_OP_NONE && deps[3] == FAB_OP_NONE) return;
  t->tail[r] = mark(t, r, FAB_MARK_JOIN, deps, 4);
  t->x[0][r] = t->x[1][r] = t->x[2][r] = FAB_OP_NONE;
}

/* One collective per group of kind gk on stage s. Rank r enters after
** from[r]; its end goes to to[r] (if to) and onto collect[r] (if collect).
** Groups of one rank do nothing. */
static gboolean coll(Train *t, int gk, uint32_t s, FabCollOp op, uint64_t bytes, const char *tag,
                     const uint32_t *from, uint32_t *to, GArray **collect, GError **err) {
  if (!bytes) return TRUE;
  for (uint32_t g = 0; g < ngroups(t, gk); g++) {
    uint32_t n = members(t, gk, s, g, t->mem);
    if (n < 2) return TRUE;
    for (uint32_t i = 0; i < n; i++) {
      if (to == t->tail) absorb(t, t->mem[i]); /* in the rank's chain: it waits for what the chain waits for */
      t->eps[i] = t->ranks[t->mem[i]];
      t->st[i] = from[t->mem[i]];
    }
    FabCollSpec c = {.op = op, .algorithm = t->algo, .protocol = t->proto, .bytes = bytes,
                     .dtype_bytes = t->dtype, .nranks = n, .ranks = t->eps, .channels = t->channels, .chunk = t->chunk,
                     .job = t->job, .step = t->step, .tag = tag, .start = t->start, .cta_zero = t->cta_zero};
    GError *e = NULL;
    uint32_t before = fab_dag_len(t->d);
    if (fab_coll_expand(t->d, t->env, &c, t->st, t->en, &e) < 0) {
      fab_cfg_fail(t->coll_at, err, "%s %s of %" G_GUINT64_FORMAT " bytes over %u ranks: %s", tag,
                   fab_coll_op_names[op], bytes, n, e ? e->message : "failed");
      g_clear_error(&e);
      return FALSE;
    }
    for (int i = 0; i < 4; i++) t->ops_by[i] += (tag == tags[i]) * (uint64_t)(fab_dag_len(t->d) - before);
    for (uint32_t i = 0; i < n; i++) {
      if (to) to[t->mem[i]] = t->en[i];
      if (collect) g_array_append_val(collect[t->mem[i]], t->en[i]);
    }
    if (too_many(t, err)) return FALSE;
  }
  return TRUE;
}

/* A stream's collectives over the rank's stream group (dp or edp). */
static inline int stream_group(int st) { return st == DENSE ? GK_DP : GK_EDP; }

/* The operations one group's collective of kind gk on stage s takes: it is
** expanded and taken back, once per (group kind, op, size) (`seen`). */
static gboolean group_ops(Train *t, GHashTable *seen, int gk, uint32_t s, FabCollOp op, uint64_t bytes,
                          const char *tag, double *out, GError **err) {
  char *key = g_strdup_printf("%d %d %" G_GUINT64_FORMAT, gk, (int)op, bytes);
  guint n_ops = GPOINTER_TO_UINT(g_hash_table_lookup(seen, key));
  gboolean ok = TRUE;
  if (!n_ops) {
    FabDag *d = t->d;
    const uint32_t ops0 = fab_dag_len(d), deps0 = fab_dag_deps_len(d), colls0 = d->colls->len, groups0 = d->groups;
    uint32_t n = members(t, gk, s, 0, t->mem);
    for (uint32_t q = 0; q < n; q++) t->eps[q] = t->ranks[t->mem[q]], t->st[q] = FAB_OP_NONE;
    FabCollSpec c = {.op = op, .algorithm = t->algo, .protocol = t->proto, .bytes = bytes, .dtype_bytes = t->dtype,
                     .nranks = n, .ranks = t->eps, .channels = t->channels, .chunk = t->chunk, .job = t->job,
                     .tag = tag, .start = t->start, .cta_zero = t->cta_zero};
    GError *e = NULL;
    if (n >= 2 && fab_coll_expand(d, t->env, &c, t->st, t->en, &e) < 0) {
      fab_cfg_fail(t->coll_at, err, "%s %s of %" G_GUINT64_FORMAT " bytes over %u ranks: %s", tag,
                   fab_coll_op_names[op], bytes, n, e ? e->message : "failed");
      g_clear_error(&e);
      ok = FALSE;
    }
    n_ops = fab_dag_len(d) - ops0 + 1;
    fab_dag_truncate(d, ops0, deps0);
    g_array_set_size(d->colls, colls0);
    d->groups = groups0;
    g_hash_table_insert(seen, key, GUINT_TO_POINTER(n_ops));
  } else {
    g_free(key);
  }
  *out = n_ops - 1;
  return ok;
}

/* What the collectives of the blocks (TP allreduces, MoE all-to-alls) and
** the DP buckets will take, before any is kept: one group's collective of
** each kind and size (the layout is regular: every group of a kind expands
** alike) times the groups of the stage, the microbatches and the steps.
** Added to the lower bound of train(), a job too large for the cap is
** refused before it is built, not after millions of operations (fuzzing
** found such jobs refused at 0.45 s and 400 MB). FALSE + err if an
** expansion fails. */
static gboolean coll_ops(Train *t, double *ops, GError **err) {
  GHashTable *seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL); /* kind -> ops + 1 */
  gboolean ok = TRUE;
  double one;
  *ops = 0;
  for (uint32_t s = 0; ok && s < t->pp; s++) {
    for (uint32_t k = 0; ok && k < t->nb; k++)
      for (int pass = 0; ok && pass < 2; pass++) {
        const Block *b = &t->blk[s * t->nb + k];
        const Seg *seg = pass ? b->bwd : b->fwd;
        for (uint32_t i = 0; ok && i < (pass ? b->nbwd : b->nfwd); i++) {
          if (seg[i].kind == SEG_COMPUTE || !seg[i].bytes) continue;
          int gk = seg[i].kind == SEG_TP ? GK_TP : GK_EP;
          ok = group_ops(t, seen, gk, s, gk == GK_TP ? FAB_COLL_ALLREDUCE : FAB_COLL_ALL_TO_ALL, seg[i].bytes,
                         tags[gk == GK_TP ? 0 : 1], &one, err);
          *ops += one * ngroups(t, gk) * t->m * t->steps;
        }
      }
    for (int st = 0; ok && t->dp > 1 && t->zero != 3 && st < NSTREAMS; st++) { /* the buckets, once a step */
      GArray *bl = t->buckets[s * NSTREAMS + st];
      for (guint i = 0; ok && i < bl->len; i++) {
        ok = group_ops(t, seen, stream_group(st), s, t->zero ? FAB_COLL_REDUCE_SCATTER : FAB_COLL_ALLREDUCE,
                       g_array_index(bl, Bucket, i).bytes, tags[2], &one, err);
        *ops += one * ngroups(t, stream_group(st)) * t->steps;
      }
    }
  }
  g_hash_table_destroy(seen);
  return ok;
}

static fab_time_t compute_ps(const Train *t, double flops) { return (fab_time_t)llround(flops / t->rate * 1e12); }


/* ZeRO-3: gather block k's parameters of stage s for every rank: ends into gnext[]. */
static gboolean gather(Train *t, uint32_t s, uint32_t k, GError **err) {
  const Block *b = &t->blk[s * t->nb + k];
  for (int st = 0; st < NSTREAMS; st++) {
    for (uint32_t q = 0; q < t->tp * t->dp; q++) t->gnext[st][s * t->tp * t->dp + q] = FAB_OP_NONE;
    if (!coll(t, stream_group(st), s, FAB_COLL_ALLGATHER, b->gbytes[st], tags[3], t->tail, t->gnext[st], NULL, err))
      return FALSE;
  }
  return TRUE;
}

/* The DP collectives of buckets that are ready at block k of stage s (all
** buckets when k == UINT32_MAX), entered after each rank's last compute. */
static gboolean buckets(Train *t, uint32_t s, uint32_t k, GError **err) {
  FabCollOp op = t->zero ? FAB_COLL_REDUCE_SCATTER : FAB_COLL_ALLREDUCE;
  for (int st = 0; st < NSTREAMS; st++) {
    GArray *bl = t->buckets[s * NSTREAMS + st];
    for (guint i = 0; i < bl->len; i++) {
      const Bucket *bk = &g_array_index(bl, Bucket, i);
      if (k != UINT32_MAX && bk->block != k) continue;
      if (!coll(t, stream_group(st), s, op, bk->bytes, tags[2], t->lastc, NULL, t->pending, err)) return FALSE;
    }
  }
  return TRUE;
}

/* One pp transfer from job rank a to job rank b after a's tail; returns the op. */
static uint32_t pp_flow(Train *t, uint32_t a, uint32_t b, int32_t coll_idx) {
  if (t->ranks[a] == t->ranks[b]) return mark(t, a, FAB_MARK_JOIN, &t->tail[a], 1);
  uint32_t f = fab_dag_flow(t->d, t->ranks[a], t->ranks[b], t->act_bytes, 0, t->job, coll_idx, 0, 0, &t->tail[a], 1);
  fab_dag_op(t->d, f)->step = t->step;
  fab_dag_op(t->d, f)->start = t->start;
  return f;
}

/* The forward (fwd) or backward of microbatch j on stage s, for all its ranks. */
static gboolean item(Train *t, uint32_t s, gboolean fwd, uint32_t j, GError **err) {
  const uint32_t nq = t->tp * t->dp, base = s * nq;
  const gboolean zero3 = t->zero == 3 && t->dp > 1;
  if (fwd && s > 0)
    for (uint32_t q = 0; q < nq; q++) t->x[0][base + q] = t->act[((size_t)(s - 1) * t->m + j) * nq + q];
  if (!fwd && s + 1 < t->pp)
    for (uint32_t q = 0; q < nq; q++) t->x[0][base + q] = t->grad[((size_t)s * t->m + j) * nq + q];
  if (zero3 && !gather(t, s, fwd ? 0 : t->nb - 1, err)) return FALSE;
  for (uint32_t n = 0; n < t->nb; n++) {
    uint32_t k = fwd ? n : t->nb - 1 - n;
    const Block *b = &t->blk[s * t->nb + k];
    if (zero3) {
      for (uint32_t q = 0; q < nq; q++) { /* this block's gathers become deps; prefetch the next block's */
        t->x[1][base + q] = t->gnext[DENSE][base + q];
        t->x[2][base + q] = t->gnext[EXPERT][base + q];
      }
      if (n + 1 < t->nb && !gather(t, s, fwd ? k + 1 : k - 1, err)) return FALSE;
    }
    const Seg *seg = fwd ? b->fwd : b->bwd;
    for (uint32_t i = 0; i < (fwd ? b->nfwd : b->nbwd); i++) {
      if (seg[i].kind == SEG_COMPUTE) {
        fab_time_t dur = compute_ps(t, seg[i].flops);
        for (uint32_t q = 0; q < nq; q++) {
          uint32_t r = base + q;
          uint32_t deps[4] = {t->tail[r], t->x[0][r], t->x[1][r], t->x[2][r]};
          FabOp o = {.kind = FAB_OP_COMPUTE, .mark = fwd ? FAB_PHASE_FWD : FAB_PHASE_BWD, .job = t->job,
                     .step = t->step, .src = t->ranks[r], .dst = t->ranks[r], .coll = -1, .start = t->start,
                     .dur = dur};
          t->tail[r] = t->lastc[r] = fab_dag_add(t->d, &o, deps, 4);
          t->x[0][r] = t->x[1][r] = t->x[2][r] = FAB_OP_NONE;
        }
      } else if (!coll(t, seg[i].kind == SEG_TP ? GK_TP : GK_EP, s,
                       seg[i].kind == SEG_TP ? FAB_COLL_ALLREDUCE : FAB_COLL_ALL_TO_ALL, seg[i].bytes,
                       seg[i].kind == SEG_TP ? tags[0] : tags[1], t->tail, t->tail, NULL, err)) {
        return FALSE;
      }
    }
    if (!fwd && zero3) { /* FSDP: this microbatch's gradients of the block, reduce-scattered */
      for (int st = 0; st < NSTREAMS; st++)
        if (!coll(t, stream_group(st), s, FAB_COLL_REDUCE_SCATTER, b->gbytes[st], tags[3], t->lastc, NULL,
                  t->pending, err))
          return FALSE;
    } else if (!fwd && t->overlap && j + 1 == t->m && t->dp > 1 && !buckets(t, s, k, err)) {
      return FALSE;
    }
  }
  if (!fwd && !zero3 && !t->overlap && j + 1 == t->m && t->dp > 1 && !buckets(t, s, UINT32_MAX, err))
    return FALSE;
  for (uint32_t q = 0; q < nq; q++) { /* the activation on, or the gradient back */
    uint32_t r = base + q;
    if (fwd && s + 1 < t->pp)
      t->act[((size_t)s * t->m + j) * nq + q] = pp_flow(t, r, r + nq, t->coll_fwd_base + (int32_t)(s * t->m + j));
    if (!fwd && s > 0)
      t->grad[((size_t)(s - 1) * t->m + j) * nq + q] = pp_flow(t, r, r - nq, t->coll_bwd_base + (int32_t)((s - 1) * t->m + j));
  }
  return !too_many(t, err);
}

/* Item i of stage s's 1F1B sequence: *fwd and microbatch *j. */
static void schedule_at(const Train *t, uint32_t s, uint32_t i, gboolean *fwd, uint32_t *j) {
  uint32_t warm = t->pp - 1 - s < t->m ? t->pp - 1 - s : t->m;
  if (i < warm) {
    *fwd = TRUE, *j = i;
  } else if (i < warm + 2 * (t->m - warm)) {
    uint32_t k = i - warm;
    *fwd = k % 2 == 0;
    *j = *fwd ? warm + k / 2 : k / 2;
  } else {
    *fwd = FALSE, *j = i - warm - (t->m - warm); /* cool-down: B(m - warm) .. B(m-1) */
  }
}

static gboolean step(Train *t, GError **err) {
  const uint32_t n = t->nranks;
  /* the pp transfers' definitions: per boundary and microbatch, forward then backward (one
  ** transfer's time and bandwidth, not a span over the whole pipeline) */
  for (uint32_t dir = 0; dir < 2 && t->pp > 1; dir++) {
    for (uint32_t s = 0; s + 1 < t->pp; s++)
      for (uint32_t j = 0; j < t->m; j++) {
        FabCollDef c = {.op = "send-recv", .algorithm = "direct", .protocol = "simple", .tag = "pp",
                        .bytes = t->act_bytes, .count = (uint32_t)(t->act_bytes / t->dtype), .dtype_bytes = t->dtype,
                        .nranks = 2 * t->tp * t->dp, .root = -1, .channels = 1, .chunk = t->act_bytes, .job = t->job,
                        .step = t->step};
        int32_t idx = fab_dag_coll(t->d, &c);
        if (s == 0 && j == 0) *(dir ? &t->coll_bwd_base : &t->coll_fwd_base) = idx;
      }
  }
  for (uint32_t r = 0; r < n; r++) {
    g_array_set_size(t->pending[r], 0);
    g_array_set_size(t->post[r], 0);
    t->lastc[r] = t->tail[r] = mark(t, r, FAB_MARK_STEP_BEGIN, &t->tail[r], 1);
  }
  /* 1F1B items of all stages, in an order where every cross-stage dependency exists already */
  uint32_t *pos = g_new0(uint32_t, t->pp);
  gboolean *fdone = g_new0(gboolean, (size_t)t->pp * t->m), *bdone = g_new0(gboolean, (size_t)t->pp * t->m);
  gboolean ok = TRUE, progress = TRUE;
  while (ok && progress) {
    progress = FALSE;
    for (uint32_t s = 0; ok && s < t->pp; s++) {
      while (ok && pos[s] < 2 * t->m) {
        gboolean fwd;
        uint32_t j;
        schedule_at(t, s, pos[s], &fwd, &j);
        if (fwd ? s > 0 && !fdone[(s - 1) * t->m + j] : s + 1 < t->pp && !bdone[(s + 1) * t->m + j]) break;
        ok = item(t, s, fwd, j, err);
        (fwd ? fdone : bdone)[s * t->m + j] = TRUE;
        pos[s]++;
        progress = TRUE;
      }
    }
  }
  for (uint32_t s = 0; ok && s < t->pp; s++) g_assert(pos[s] == 2 * t->m); /* 1F1B never deadlocks */
  g_free(pos);
  g_free(fdone);
  g_free(bdone);
  if (!ok) return FALSE;
  /* optimizer, ZeRO-1/2 allgathers, step end */
  uint32_t *opt = g_new(uint32_t, n);
  for (uint32_t r = 0; r < n; r++) {
    uint32_t s = r / (t->tp * t->dp);
    double p = 0;
    for (uint32_t k = 0; k < t->nb; k++) {
      const Block *b = &t->blk[s * t->nb + k];
      p += b->params[DENSE] / (t->zero ? t->dp : 1) + b->params[EXPERT] / (t->zero ? t->edp : 1);
    }
    g_array_prepend_val(t->pending[r], t->tail[r]);
    FabOp o = {.kind = FAB_OP_COMPUTE, .mark = FAB_PHASE_OPT, .job = t->job, .step = t->step, .src = t->ranks[r],
               .dst = t->ranks[r], .coll = -1, .start = t->start,
               .dur = (fab_time_t)llround(OPT_BYTES * p / t->mem_Bps * 1e12)};
    opt[r] = fab_dag_add(t->d, &o, (const uint32_t *)t->pending[r]->data, t->pending[r]->len);
  }
  if ((t->zero == 1 || t->zero == 2) && t->dp > 1)
    for (uint32_t s = 0; ok && s < t->pp; s++)
      for (int st = 0; ok && st < NSTREAMS; st++) {
        GArray *bl = t->buckets[s * NSTREAMS + st];
        for (guint i = 0; ok && i < bl->len; i++)
          ok = coll(t, stream_group(st), s, FAB_COLL_ALLGATHER, g_array_index(bl, Bucket, i).bytes, tags[3], opt,
                    NULL, t->post, err);
      }
  for (uint32_t r = 0; ok && r < n; r++) {
    g_array_prepend_val(t->post[r], opt[r]);
    t->tail[r] = mark(t, r, FAB_MARK_STEP_END, (const uint32_t *)t->post[r]->data, t->post[r]->len);
  }
  g_free(opt);
  return ok && !too_many(t, err);
}

gboolean fab_training_build(const FabTrainIn *in, const FabCfgNode *wl, FabDag *d, const FabCollEnv *env,
                            const uint32_t *ranks, uint32_t nranks, uint16_t job, const FabTrainGpu *gpu,
                            GError **err) {
  g_assert(in && wl && d && env && (ranks || !nranks) && job < d->jobs->len);
  Train t = {.d = d, .env = env, .ranks = ranks, .nranks = nranks, .job = job, .start = in->job.start, .wl = wl,
             .ops0 = fab_dag_len(d)};
  ModelIn mi = {0};
  Shape sh = {0};
  uint32_t G = 1;
  if (!nranks) return fab_cfg_fail(wl, err, "a training job needs ranks");
  if (!fab_train__configure(&t, in, wl, &mi, &sh, &G, gpu, err)) return FALSE;
  fab_train__plan(&t, &mi, &sh, G);
  /* a lower bound on the ops before building any: computes, pp flows, two marks per rank per bucket */
  double est = (double)t.steps * ((double)nranks * ((double)t.m * t.nb * 2 + 3) +
                                  2.0 * (t.pp - 1) * t.m * t.tp * t.dp);
  for (uint32_t s = 0; s < t.pp * NSTREAMS && t.dp > 1 && t.zero != 3; s++)
    est += (double)t.steps * t.tp * t.dp * 2 * t.buckets[s]->len * (t.zero ? 2 : 1) * (s % 2 == DENSE || t.edp > 1);
  if (t.too_many_buckets && t.dp > 1 && t.zero != 3) {
    fab_cfg_fail(AT_KEY(wl, "bucket"), err, "bucket %" G_GUINT64_FORMAT " bytes cuts the gradients into more than %u "
                 "buckets: use a larger bucket", t.bucket, MAX_OPS);
    fab_train__free(&t);
    return FALSE;
  }
  if (est > MAX_OPS) {
    fab_cfg_fail(wl, err, "this training job needs more than %u operations (%u steps x %u microbatches x %u "
                 "blocks per stage x %u ranks); raise layer_group, lower steps or microbatches, or use a larger "
                 "bucket", MAX_OPS, t.steps, t.m, t.nb, nranks);
    fab_train__free(&t);
    return FALSE;
  }
  const guint deps0 = fab_dag_deps_len(d), colls0 = d->colls->len, groups0 = d->groups;
  t.tail = g_new(uint32_t, nranks);
  t.lastc = g_new(uint32_t, nranks);
  for (int i = 0; i < 3; i++) t.x[i] = g_new(uint32_t, nranks);
  for (int i = 0; i < NSTREAMS; i++) t.gnext[i] = g_new(uint32_t, nranks);
  for (uint32_t r = 0; r < nranks; r++) {
    t.tail[r] = t.lastc[r] = FAB_OP_NONE;
    t.x[0][r] = t.x[1][r] = t.x[2][r] = t.gnext[0][r] = t.gnext[1][r] = FAB_OP_NONE;
  }
  size_t nflows = (size_t)(t.pp - 1) * t.m * t.tp * t.dp;
  t.act = g_new(uint32_t, nflows ? nflows : 1);
  t.grad = g_new(uint32_t, nflows ? nflows : 1);
  t.pending = g_new(GArray *, nranks);
  t.post = g_new(GArray *, nranks);
  for (uint32_t r = 0; r < nranks; r++) {
    t.pending[r] = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    t.post[r] = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  }
  t.mem = g_new(uint32_t, nranks);
  t.eps = g_new(uint32_t, nranks);
  t.st = g_new(uint32_t, nranks);
  t.en = g_new(uint32_t, nranks);
  double colls = 0;
  gboolean ok = coll_ops(&t, &colls, err);
  if (ok && est + colls > MAX_OPS)
    ok = fab_cfg_fail(wl, err, "this training job needs more than %u operations (about %.0f: %u steps x %u "
                      "microbatches x %u blocks per stage x %u ranks, of which its TP, MoE and DP collectives "
                      "%.0f); raise chunk (fewer pieces per collective), layer_group (fewer tp/ep collectives) or "
                      "bucket (fewer dp collectives), or lower channels, steps or microbatches", MAX_OPS,
                      est + colls, t.steps, t.m, t.nb, nranks, colls);
  for (uint32_t s = 0; ok && s < t.steps; s++) {
    t.step = (uint16_t)s;
    ok = step(&t, err);
  }
  fab_train__free(&t);
  if (!ok) { /* leave d as it was */
    fab_dag_truncate(d, t.ops0, deps0);
    g_array_set_size(d->colls, colls0);
    d->groups = groups0;
    return FALSE;
  }
  FabJobDef *jd = &g_array_index(d->jobs, FabJobDef, job);
  jd->steps = t.steps;
  jd->microbatches = t.m;
  jd->pp = t.pp;
  return TRUE;
}

/*
** Training steps turned into a FabDag. See training.h for the YAML.
**
** Shape. h = hidden, f = ffn (default 4h), L = layers, s = seq, b =
** micro_batch, B = dtype bytes (bf16/fp16 2, fp32 4, fp8 1), E = experts,
** k = top_k. A dense layer holds 4h^2 (Q, K, V, O) + 2hf (the two MLP
** matrices; with mlp: swiglu three, and every "2hf" below is 3hf)
** parameters; with grouped-query attention (kv_heads < heads) K and V are
** kv_heads/heads of Q's size, and every "4h^2" below is
** (2 + 2 kv_heads/heads) h^2 (Shape.qkvo); biases, norms and the router are
** not modelled. Layer l (0-based) is an MoE layer when E > 0,
** l >= first_dense_layers and l % moe_every == 0 (Megatron's
** moe_layer_freq); it holds 4h^2 + (E + shared) x 2h fe (fe: moe_ffn, or
** f), and computes 2bs x 2h fe x (k + shared) in its MLP. With latent
** attention (kv_lora_rank) the 4h^2 is Shape.qkvo's MLA weights and the
** core attention below is x Shape.core (train_plan.c: mla_shape).
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
**   forward = A + M FLOPs; backward = 2 (A + M), plus with recompute:
**   selective the core attention again (G x 4bs^2h / tp), full the whole
**   forward again with its collectives, first (train_plan.c); time =
**   FLOPs / (flops x efficiency), rounded to the picosecond. A forward block is
**   attn [TP allreduce] [EP all-to-all] mlp [EP all-to-all] [TP allreduce],
**   a backward block [EP a2a] mlp [EP a2a] [TP allreduce] attn [TP allreduce];
**   adjacent compute parts with no collective between them are one op.
**   TP allreduce: G x b s h B bytes over the tp group; EP all-to-all:
**   (MoE layers in the block) x b s h B k bytes over the ep group.
**   Sequence parallel (sp): each TP allreduce is a reduce-scatter, an
**   allgather of the same bytes comes before each part, and the backward
**   gathers a part's input again beside its compute (train_plan.c).
**   Context parallel (cp > 1): a rank holds s/cp tokens of each sequence
**   (every s above is s/cp, but the keys of QK^T and AV: 4 b (s/cp) s h),
**   and the core attention is a ring over the cp group (ring()). With
**   G > 1 a block's G layers act as one (the collectives carry G layers'
**   bytes at once): fewer, larger ops.
** Optimizer: OPT_BYTES (28) bytes of memory traffic per parameter the rank
** updates (params of its stage / tp, / dp with ZeRO >= 1) at
** gpu.memory_bandwidth (the cluster preset's HBM bandwidth by default).
**
** Ranks: r = tp_i + tp (dp_i + dp pp_i), where with cp > 1 dp is data x
** context parallel and dp_i = cp_i + cp x replica (Megatron's order
** tp-cp-ep-dp-pp; train_groups.c). Groups (all on one stage):
**   tp   same dp_i;                  ep   dp_i = g ep + e, e = 0..ep-1
**   dp   same tp_i, all dp_i;        edp  same tp_i, same dp_i % ep
**   cp   same tp_i, dp_i = g cp + c, c = 0..cp-1
**   emb  (tied embeddings, pp > 1) the same (tp_i, dp_i) on the first and
**        last stage, once a step before the optimizer (tied())
** Expert parameters (ep > 1) are sharded E/ep per rank and their gradients
** reduced over edp (dp/ep ranks); all other gradients over dp.
**
** Pipeline: per stage 1F1B: warm-up min(pp-1-stage, m) forwards, then one
** forward one backward, then the remaining backwards; the compute ops of a
** rank are chained in that order. Interleaved (vpp > 1 model chunks per
** stage): Megatron's interleaved 1F1B (schedule_at); chunk c of stage s is
** virtual stage c pp + s, and "stage s+1" below is the next virtual stage
** (chunk c's last stage sends to chunk c+1's first). After the forward of microbatch j on stage
** s < pp-1 each rank sends ceil(b s h B / tp) bytes to the same (tp_i, dp_i)
** on stage s+1, whose forward of j waits for it; backward gradients go back
** the same way. These flows carry a FabCollDef "send-recv", tag "pp", one per
** (step, stage boundary, direction, microbatch).
**
** Data parallel (dp > 1): a stage's gradient bytes per rank (params / tp x
** B), walked in backward order (last block first), are cut into buckets of
** exactly `bucket` bytes (the last holds the rest), so there are
** ceil(bytes / bucket) per group. A bucket is ready when the last
** microbatch's backward of the layer holding its last byte is done
** (overlap: true), or when the whole backward is (overlap: false). In a
** block of G > 1 layers, layer u (backward order) is done once the
** block's backward compute has run the share of u layers' FLOPs: that
** compute op is cut there (backward_split), so buckets still overlap the
** backward however large the block.
** A stage's bucket collectives run one after another on their
** communicator, in the order they are ready ("Streams" below).
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
** Vocabulary (vocab > 0): see train_plan.c, fab_train__plan.
**
** Approximate: p2p sends do not block the sender;
** no cross-stage synchronization before the optimizer (grad-norm, etc.);
** MoE routing is even unless skewed or capped (train_moe.c: expected shares, not
** token draws); blocks of G > 1 layers merge collectives.
** README's "What the training model leaves out" lists them all.
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


static gboolean too_many(Train *t, GError **err) {
  uint32_t all = fab_dag_len(t->d) - t->ops0;
  if (all <= MAX_OPS) return FALSE;
  GString *by = g_string_new(NULL);
  uint64_t rest = all;
  for (int i = 0; i < FAB_TRAIN_NTAGS; i++) {
    if (t->ops_by[i])
      g_string_append_printf(by, "%s collectives %" G_GUINT64_FORMAT ", ", fab_train__tags[i], t->ops_by[i]);
    rest -= t->ops_by[i];
  }
  fab_cfg_fail(t->wl, err, "this training job needs more than %u operations (%u steps x %u microbatches x %u blocks "
               "per stage x %u ranks; after step %u: %scompute and the rest %" G_GUINT64_FORMAT "); raise "
               "chunk (fewer pieces per collective), layer_group (fewer tp/ep/zero collectives), bucket (fewer dp "
               "collectives), or lower channels, steps or microbatches", MAX_OPS, t->steps, t->m, t->nb * t->vpp, t->nranks, t->step, by->str, rest);
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
  uint32_t deps[5] = {t->tail[r], t->x[0][r], t->x[1][r], t->x[2][r], t->side[r]};
  if (deps[1] == FAB_OP_NONE && deps[2] == FAB_OP_NONE && deps[3] == FAB_OP_NONE && deps[4] == FAB_OP_NONE) return;
  t->tail[r] = mark(t, r, FAB_MARK_JOIN, deps, 5);
  t->x[0][r] = t->x[1][r] = t->x[2][r] = t->side[r] = FAB_OP_NONE;
}

/* An expansion made a layer a round (see "Rounds"): whose ends go onto
** collect[] once it is done. */
typedef struct Active {
  FabCollGen *g;
  GArray **collect;
  uint32_t q;     /* its communicator's queue (dpq index), or UINT32_MAX: not a bucket collective */
  uint32_t n;
  uint32_t mem[]; /* its job ranks */
} Active;

/* Rank mem[i]'s end of an expansion: onto `to` and `collect`. */
static void ends(Train *t, const uint32_t *mem, uint32_t n, const uint32_t *en, uint32_t *to, GArray **collect) {
  for (uint32_t i = 0; i < n; i++) {
    if (to) to[mem[i]] = en[i];
    if (collect) g_array_append_val(collect[mem[i]], en[i]);
  }
}

/* One collective per group of kind gk on stage s. Rank r enters after
** from[r]; its end goes to to[r] (if to) and onto collect[r] (if collect).
** Groups of one rank do nothing. One whose ends only go onto collect[] (the
** DP and ZeRO collectives the optimizer and the step's end wait for) is
** made a layer a round when it is a ring (t->active); the others at once.
** q: a bucket collective's communicator queue (its ends become the ranks'
** dpend, its rings count in dprun), or UINT32_MAX. */
static gboolean coll_q(Train *t, int gk, uint32_t s, FabCollOp op, uint64_t bytes, const char *tag,
                       const uint32_t *from, uint32_t *to, GArray **collect, uint32_t q, GError **err) {
  if (!bytes) return TRUE;
  for (uint32_t g = 0; g < fab_train__ngroups(t, gk); g++) {
    uint32_t n = fab_train__members(t, gk, s, g, t->mem);
    if (n < 2) return TRUE;
    for (uint32_t i = 0; i < n; i++) {
      if (to == t->tail) absorb(t, t->mem[i]); /* in the rank's chain: it waits for what the chain waits for */
      t->eps[i] = t->ranks[t->mem[i]];
      t->st[i] = from[t->mem[i]];
    }
    FabCollSpec c = {.op = op, .algorithm = t->algo, .protocol = t->proto, .bytes = bytes,
                     .dtype_bytes = t->dtype, .nranks = n, .ranks = t->eps, .channels = t->channels, .chunk = t->chunk,
                     .job = t->job, .step = t->step, .tag = tag, .start = t->start, .cta_zero = t->cta_zero,
                     .counts = op == FAB_COLL_ALL_TO_ALL ? fab_train__moe_counts(t, g) : NULL};
    GError *e = NULL;
    uint32_t before = fab_dag_len(t->d);
    FabCollGen *cg = fab_coll_begin(t->d, t->env, &c, t->st, !to && collect, &e);
    if (!cg) {
      if (t->unfold) /* coll_ops made one of each kind and size before the run */
        g_error("internal error: %s %s of %" G_GUINT64_FORMAT " bytes over %u ranks: %s", tag, fab_coll_op_names[op],
                bytes, n, e ? e->message : "failed");
      fab_cfg_fail(t->coll_at, err, "%s %s of %" G_GUINT64_FORMAT " bytes over %u ranks: %s", tag,
                   fab_coll_op_names[op], bytes, n, e ? e->message : "failed");
      g_clear_error(&e);
      return FALSE;
    }
    uint64_t made = fab_coll_gen_done(cg) ? fab_dag_len(t->d) - before : (uint64_t)fab_coll_gen_estimate(cg);
    for (int i = 0; i < FAB_TRAIN_NTAGS; i++) t->ops_by[i] += (tag == fab_train__tags[i]) * made;
    if (fab_coll_gen_done(cg)) {
      ends(t, t->mem, n, fab_coll_gen_end(cg), to, collect);
      if (q != UINT32_MAX) ends(t, t->mem, n, fab_coll_gen_end(cg), t->dpend[q % NSTREAMS], NULL);
      fab_coll_gen_free(cg);
    } else {
      Active *a = g_malloc(sizeof *a + n * sizeof(uint32_t));
      *a = (Active){cg, collect, q, n};
      memcpy(a->mem, t->mem, n * sizeof(uint32_t));
      for (uint32_t i = 0; i < n; i++) t->busy[t->mem[i]]++;
      g_ptr_array_add(t->active, a);
      if (q != UINT32_MAX) t->dprun[q]++;
    }
    if (!t->unfold && too_many(t, err)) return FALSE;
  }
  return TRUE;
}

static gboolean coll(Train *t, int gk, uint32_t s, FabCollOp op, uint64_t bytes, const char *tag,
                     const uint32_t *from, uint32_t *to, GArray **collect, GError **err) {
  return coll_q(t, gk, s, op, bytes, tag, from, to, collect, UINT32_MAX, err);
}


/* Streams. A stage's bucket collectives (the DP allreduces, ZeRO-1/2's
** reduce-scatters and the allgathers after the optimizer) run one after
** another on their dp (edp) communicator, in the order they are ready, as
** DDP issues its buckets and NCCL runs a communicator's collectives on its
** stream: one ready while the one before it is still being made waits in
** the queue (and counts as busy for its ranks); it begins in the round the
** one before it is made to its end, its ranks entering after both what it
** was ready on and that end. Every stage's buckets are ready in the same
** round (the step's last slot) and its chains are alike, so every rank's
** last one still ends in the same round. ZeRO-3's per-block collectives
** are not queued. */
typedef struct Queued {
  FabCollOp op;
  uint64_t bytes;
  const char *tag;
  GArray **collect;
  uint32_t from[]; /* per rank of the stage: what it was ready on */
} Queued;

/* Begin a bucket collective of queue q (stage q / NSTREAMS) now: each rank
** enters after from[r] and its last bucket collective's end. */
static gboolean stream_begin(Train *t, uint32_t q, FabCollOp op, uint64_t bytes, const char *tag,
                             const uint32_t *from, GArray **collect, GError **err) {
  const uint32_t s = q / NSTREAMS, st = q % NSTREAMS, nq = t->tp * t->dp;
  for (uint32_t r = s * nq; r < (s + 1) * nq; r++) {
    uint32_t deps[2] = {from[r - s * nq], t->dpend[st][r]};
    t->en[r] = deps[1] == FAB_OP_NONE ? deps[0] : mark(t, r, FAB_MARK_JOIN, deps, 2);
  }
  return coll_q(t, stream_group((int)st), s, op, bytes, tag, t->en, NULL, collect, q, err);
}

/* A bucket collective of stage s on stream st, ready now: ranks enter
** after from[r] (job ranks). Begun at once, or queued. */
static gboolean stream_coll(Train *t, int st, uint32_t s, FabCollOp op, uint64_t bytes, const char *tag,
                            const uint32_t *from, GArray **collect, GError **err) {
  const uint32_t q = s * NSTREAMS + (uint32_t)st, nq = t->tp * t->dp;
  if (!bytes) return TRUE;
  if (!t->dprun[q] && g_queue_is_empty(t->dpq[q]))
    return stream_begin(t, q, op, bytes, tag, from + s * nq, collect, err);
  Queued *e = g_malloc(sizeof *e + nq * sizeof(uint32_t));
  *e = (Queued){op, bytes, tag, collect};
  memcpy(e->from, from + s * nq, nq * sizeof(uint32_t));
  g_queue_push_tail(t->dpq[q], e);
  for (uint32_t r = s * nq; r < (s + 1) * nq; r++) t->busy[r]++;
  return TRUE;
}

/* Begin what waits on communicators whose collective before is made. */
static gboolean stream_next(Train *t, GError **err) {
  const uint32_t nq = t->tp * t->dp;
  for (uint32_t q = 0; q < t->pp * NSTREAMS; q++)
    while (!t->dprun[q] && !g_queue_is_empty(t->dpq[q])) {
      Queued *e = g_queue_pop_head(t->dpq[q]);
      for (uint32_t r = q / NSTREAMS * nq; r < (q / NSTREAMS + 1) * nq; r++) t->busy[r]--;
      gboolean ok = stream_begin(t, q, e->op, e->bytes, e->tag, e->from, e->collect, err);
      g_free(e);
      if (!ok) return FALSE;
    }
  return TRUE;
}


static fab_time_t compute_ps(const Train *t, double flops) { return (fab_time_t)llround(flops / t->rate * 1e12); }


/* ZeRO-3: gather block k's parameters of virtual stage v for every rank: ends into gnext[]. */
static gboolean gather(Train *t, uint32_t v, uint32_t k, GError **err) {
  const Block *b = &t->blk[v * t->nb + k];
  const uint32_t s = v % t->pp;
  for (int st = 0; st < NSTREAMS; st++) {
    for (uint32_t q = 0; q < t->tp * t->dp; q++) t->gnext[st][s * t->tp * t->dp + q] = FAB_OP_NONE;
    if (!coll(t, stream_group(st), s, FAB_COLL_ALLGATHER, b->gbytes[st], fab_train__tags[TAG_ZERO], t->tail, t->gnext[st], NULL, err))
      return FALSE;
  }
  return TRUE;
}

/* The DP collectives of buckets that are ready at layer u of block k of
** virtual stage v (all its buckets when k == UINT32_MAX), entered after
** each rank's last compute, on its stage's communicators. */
static gboolean buckets(Train *t, uint32_t v, uint32_t k, uint32_t u, GError **err) {
  FabCollOp op = t->zero ? FAB_COLL_REDUCE_SCATTER : FAB_COLL_ALLREDUCE;
  const uint32_t s = v % t->pp;
  for (int st = 0; st < NSTREAMS; st++) {
    GArray *bl = t->buckets[v * NSTREAMS + st];
    for (guint i = 0; i < bl->len; i++) {
      const Bucket *bk = &g_array_index(bl, Bucket, i);
      if (k != UINT32_MAX && (bk->block != k || bk->layer != u)) continue;
      if (!stream_coll(t, st, s, op, bk->bytes, fab_train__tags[TAG_DP], t->lastc, t->pending, err)) return FALSE;
    }
  }
  return TRUE;
}

/* The layers u < G of block k of virtual stage v after which a bucket is
** ready (0: the output layer), ascending, into t->cuts (as Bucket, for
** layer and frac); how many. */
static guint backward_cuts(Train *t, uint32_t v, uint32_t k) {
  if (!t->cuts) t->cuts = g_array_new(FALSE, FALSE, sizeof(Bucket));
  g_array_set_size(t->cuts, 0);
  for (uint32_t u = 0; u < t->G; u++) { /* u = 0: the output layer's, before the layers */
    for (int st = 0; st < NSTREAMS; st++) {
      GArray *bl = t->buckets[v * NSTREAMS + st];
      guint i = 0;
      while (i < bl->len && !(g_array_index(bl, Bucket, i).block == k && g_array_index(bl, Bucket, i).layer == u)) i++;
      if (i < bl->len) {
        g_array_append_val(t->cuts, g_array_index(bl, Bucket, i));
        break;
      }
    }
  }
  return t->cuts->len;
}

/* A rank's time for flops of which moe are the experts' (its share of them follows its routing: train_moe.c). */
static fab_time_t rank_ps(const Train *t, uint32_t r, double flops, double moe) {
  return compute_ps(t, t->load && moe > 0 ? flops + moe * (t->load[r] - 1) : flops);
}

/* One compute op on every rank of stage s (base, nq ranks): the part from
** lo to hi of a compute of flops (moe of them the experts'), each rank's
** cut at the same fraction of its own time. */
static void compute_op(Train *t, uint32_t base, uint32_t nq, gboolean fwd, double flops, double moe, double lo,
                       double hi) {
  for (uint32_t q = 0; q < nq; q++) {
    uint32_t r = base + q;
    fab_time_t d = rank_ps(t, r, flops, moe);
    fab_time_t from = lo <= 0 ? 0 : (fab_time_t)llround((double)d * lo / flops);
    fab_time_t to = hi >= flops ? d : (fab_time_t)llround((double)d * hi / flops);
    uint32_t deps[4] = {t->tail[r], t->x[0][r], t->x[1][r], t->x[2][r]};
    FabOp o = {.kind = FAB_OP_COMPUTE, .mark = fwd ? FAB_PHASE_FWD : FAB_PHASE_BWD, .job = t->job, .step = t->step,
               .src = t->ranks[r], .dst = t->ranks[r], .coll = -1, .start = t->start, .dur = to - from};
    t->tail[r] = t->lastc[r] = fab_dag_add(t->d, &o, deps, 4);
    t->x[0][r] = t->x[1][r] = t->x[2][r] = FAB_OP_NONE;
  }
}

/* Compute segment sg of block k's last backward, from a to a + sg->flops
** of the block's backward compute (of total): cut where t->cuts' layers
** end (*next: the first cut not yet passed), each part followed by the
** buckets its layers made ready. The parts' durations add up to the
** segment's. */
static gboolean backward_split(Train *t, uint32_t v, uint32_t k, double a, const Seg *sg, double total, guint *next,
                               GError **err) {
  const uint32_t nq = t->tp * t->dp, s = v % t->pp;
  const double flops = sg->flops;
  const fab_time_t dur = compute_ps(t, flops); /* where the cuts fall decides the ops (every rank alike) */
  fab_time_t at = 0;
  double lo = 0;
  for (; *next < t->cuts->len; ++*next) {
    const Bucket *c = &g_array_index(t->cuts, Bucket, *next);
    double x = c->frac * total - a;
    if (x > flops) break;
    fab_time_t to = x <= 0 ? 0 : (fab_time_t)llround((double)dur * x / flops);
    compute_op(t, s * nq, nq, FALSE, flops, sg->moe, lo, x <= 0 ? 0 : x);
    at = to, lo = x <= 0 ? 0 : x;
    if (!buckets(t, v, k, c->layer, err)) return FALSE;
  }
  if (at < dur || !at) compute_op(t, s * nq, nq, FALSE, flops, sg->moe, lo, flops);
  return TRUE;
}

static inline bool is_ring(const Seg *sg) { return sg->kind == SEG_CP || sg->kind == SEG_CPB; }

/* Ring attention over each cp group (context parallelism: Liu et al.,
** "Ring Attention with Blockwise Transformers", arXiv:2310.01889, as
** Megatron runs it through Transformer Engine's AttnFuncWithCPAndKVP2P):
** the core attention's FLOPs in cp equal pieces, piece i against the K/V
** block from i ranks back. Hop i (1..cp-1) passes a K/V block (sg->bytes)
** to the next rank of the ring as soon as hop i-1 brought it, under the
** compute, and piece i waits for it. Backward (SEG_CPB) the gradient of
** each block follows it: its hop i (1..cp) leaves after piece i-1 added to
** it and after its hop i-1 arrived, and the cp-th brings every block's
** gradient home before what follows. A piece on an idle link waits only
** for its hop; a hop slower than a piece shows as a wait. */
static gboolean ring(Train *t, uint32_t s, const Seg *sg, gboolean fwd, GError **err) {
  const uint32_t nq = t->tp * t->dp, base = s * nq;
  const char *tag = fab_train__tags[TAG_CP];
  const double piece = sg->flops / t->cp;
  uint32_t *kv = t->ring[0], *dkv = t->ring[1];
  for (uint32_t q = 0; q < nq; q++) {
    absorb(t, base + q);
    kv[base + q] = t->tail[base + q]; /* the block's Q, K and V are projected */
    dkv[base + q] = FAB_OP_NONE;
  }
  for (uint32_t i = 0; i < t->cp; i++) {
    if (i > 0) {
      if (!coll(t, GK_CP, s, FAB_COLL_SEND_RECV, sg->bytes, tag, kv, kv, NULL, err)) return FALSE;
      for (uint32_t q = 0; q < nq; q++) t->x[2][base + q] = kv[base + q];
    }
    compute_op(t, base, nq, fwd, piece, 0, 0, piece);
    if (sg->kind != SEG_CPB) continue;
    for (uint32_t q = 0; q < nq; q++) { /* the gradient hop leaves after this piece and the one before it */
      uint32_t r = base + q, deps[2] = {t->tail[r], dkv[r]};
      dkv[r] = dkv[r] == FAB_OP_NONE ? t->tail[r] : mark(t, r, FAB_MARK_JOIN, deps, 2);
    }
    if (!coll(t, GK_CP, s, FAB_COLL_SEND_RECV, sg->bytes, tag, dkv, dkv, NULL, err)) return FALSE;
  }
  if (sg->kind == SEG_CPB)
    for (uint32_t q = 0; q < nq; q++) t->x[2][base + q] = dkv[base + q]; /* home before what follows */
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

/* The forward (fwd) or backward of microbatch j on virtual stage v (its
** stage s = v % pp), for all the stage's ranks. */
static gboolean item(Train *t, uint32_t v, gboolean fwd, uint32_t j, GError **err) {
  const uint32_t nq = t->tp * t->dp, s = v % t->pp, base = s * nq;
  const gboolean zero3 = t->zero == 3 && t->dp > 1;
  if (fwd && v > 0)
    for (uint32_t q = 0; q < nq; q++) t->x[0][base + q] = t->act[((size_t)(v - 1) * t->m + j) * nq + q];
  if (!fwd && v + 1 < t->nv)
    for (uint32_t q = 0; q < nq; q++) t->x[0][base + q] = t->grad[((size_t)v * t->m + j) * nq + q];
  if (zero3 && !gather(t, v, fwd ? 0 : t->nb - 1, err)) return FALSE;
  for (uint32_t n = 0; n < t->nb; n++) {
    uint32_t k = fwd ? n : t->nb - 1 - n;
    const Block *b = &t->blk[v * t->nb + k];
    if (zero3) {
      for (uint32_t q = 0; q < nq; q++) { /* this block's gathers become deps; prefetch the next block's */
        t->x[1][base + q] = t->gnext[DENSE][base + q];
        t->x[2][base + q] = t->gnext[EXPERT][base + q];
      }
      if (n + 1 < t->nb && !gather(t, v, fwd ? k + 1 : k - 1, err)) return FALSE;
    }
    const Seg *seg = fwd ? b->fwd : b->bwd;
    fab_train__moe_draw(t, v, k, j); /* this block's routing of microbatch j (uneven routing only) */
    uint32_t nep = 0; /* the block's all-to-alls: the first to the experts, the next back (each pass) */
    const gboolean ready = !fwd && !zero3 && t->overlap && j + 1 == t->m && t->dp > 1; /* its buckets ready */
    guint ncut = ready ? backward_cuts(t, v, k) : 0, next = 0;
    double a = 0, total = 0;
    for (uint32_t i = 0; i < b->nbwd && ncut; i++) total += seg[i].kind == SEG_COMPUTE || is_ring(&seg[i]) ? seg[i].flops : 0;
    for (uint32_t i = 0; i < (fwd ? b->nfwd : b->nbwd); i++) {
      int gk;
      FabCollOp op;
      const char *tag;
      if (seg[i].kind == SEG_COMPUTE && ncut) {
        if (!backward_split(t, v, k, a, &seg[i], total, &next, err)) return FALSE;
        a += seg[i].flops;
      } else if (seg[i].kind == SEG_COMPUTE) {
        compute_op(t, base, nq, fwd, seg[i].flops, seg[i].moe, 0, seg[i].flops);
      } else if (is_ring(&seg[i])) { /* a cut inside it is taken at the next compute's start */
        if (!ring(t, s, &seg[i], fwd, err)) return FALSE;
        a += seg[i].flops;
      } else {
        fab_train__seg_coll(seg[i].kind, &gk, &op, &tag);
        if (seg[i].kind == SEG_EP) t->a2a_dir = (int)(nep++ % 2);
        if (!coll(t, gk, s, op, seg[i].bytes, tag, t->tail, seg[i].kind == SEG_AGS ? t->side : t->tail, NULL, err))
          return FALSE;
      }
    }
    for (uint32_t q = 0; q < nq; q++) /* a gather beside the compute that nothing after it waited for */
      if (t->side[base + q] != FAB_OP_NONE) absorb(t, base + q);
    for (; next < ncut; next++) /* a cut past the block's compute, by rounding */
      if (!buckets(t, v, k, g_array_index(t->cuts, Bucket, next).layer, err)) return FALSE;
    if (zero3 && !fwd) { /* FSDP: this microbatch's gradients of the block, reduce-scattered */
      for (int st = 0; st < NSTREAMS; st++)
        if (!coll(t, stream_group(st), s, FAB_COLL_REDUCE_SCATTER, b->gbytes[st], fab_train__tags[TAG_ZERO], t->lastc, NULL,
                  t->pending, err))
          return FALSE;
    } else if (ready && !buckets(t, v, k, t->G, err)) {
      return FALSE;
    }
  }
  /* overlap: false, all the stage's buckets after its whole backward: the last item, chunk 0's (v = s) */
  for (uint32_t c = 0; c < t->vpp && v == s && !fwd && !zero3 && !t->overlap && j + 1 == t->m && t->dp > 1; c++)
    if (!buckets(t, c * t->pp + s, UINT32_MAX, 0, err)) return FALSE;
  const uint32_t up = (v + 1) % t->pp * nq, down = (v + t->nv - 1) % t->pp * nq; /* next and previous v's stage */
  for (uint32_t q = 0; q < nq; q++) { /* the activation on, or the gradient back */
    uint32_t r = base + q;
    if (fwd && v + 1 < t->nv)
      t->act[((size_t)v * t->m + j) * nq + q] = pp_flow(t, r, up + q, t->coll_fwd_base + (int32_t)(v * t->m + j));
    if (!fwd && v > 0)
      t->grad[((size_t)(v - 1) * t->m + j) * nq + q] =
        pp_flow(t, r, down + q, t->coll_bwd_base + (int32_t)((v - 1) * t->m + j));
  }
  return t->unfold || !too_many(t, err);
}

/* Item i of stage s's 1F1B sequence: *fwd, virtual stage *v and
** microbatch *j. A stage runs T = m x vpp forwards and as many backwards:
** W warm-up forwards, then one forward one backward, then the remaining
** backwards. Plain 1F1B (vpp 1): W = min(pp - 1 - s, m), forward and
** backward k are microbatch k. Interleaved (Megatron Core's
** forward_backward_pipelining_with_interleaving, core v0.7 schedules.py):
** W = 2 (pp - 1 - s) + (vpp - 1) pp, at most T, and T when m = pp; the
** k-th forward is chunk (k mod pp vpp) / pp of microbatch
** (k / (pp vpp)) pp + k mod pp, the k-th backward the same microbatch of
** chunk vpp - 1 minus that (get_model_chunk_id,
** get_microbatch_id_in_model_chunk). */
static void schedule_at(const Train *t, uint32_t s, uint32_t i, gboolean *fwd, uint32_t *v, uint32_t *j) {
  const uint32_t T = t->m * t->vpp, P = t->pp, V = t->vpp;
  uint32_t warm = V == 1 ? MIN(P - 1 - s, t->m) : t->m == P ? T : MIN(2 * (P - 1 - s) + (V - 1) * P, T), k;
  if (i < warm) {
    *fwd = TRUE, k = i;
  } else if (i < warm + 2 * (T - warm)) {
    uint32_t d = i - warm;
    *fwd = d % 2 == 0;
    k = *fwd ? warm + d / 2 : d / 2;
  } else {
    *fwd = FALSE, k = i - T; /* cool-down: B(T - warm) .. B(T - 1) */
  }
  uint32_t c = k % (P * V) / P;
  *j = V == 1 ? k : k / (P * V) * P + k % P;
  *v = (*fwd ? c : V - 1 - c) * P + s;
}

/* ---- rounds ------------------------------------------------------------------
**
** A step's ops are made a round at a time, in the same order whether the
** job is made whole before the run or as the run goes (FabDag's `more`),
** so the two runs are the same run. A round makes, in this order:
**  1. the step's begin marks (its first round), then one 1F1B position
**     (slot) of every stage: the forwards first stage first, then the
**     backwards last stage first. A forward of stage s waits for stage
**     s-1's forward of the same microbatch, made in this slot or the one
**     before; a backward for stage s+1's backward, likewise (schedule_at's
**     positions differ by at most one between neighbours);
**  2. one layer of every ring begun earlier whose ends only the optimizer
**     and the step's end wait for (the DP buckets, ZeRO's reduce-scatters
**     and allgathers), in the order they began (collective.h:
**     FabCollGen): the 70B step's 4928 bucket allreduces are 4.4 M of its
**     5.1 M ops, all begun in its last slot;
**  3. once every slot is made: a rank's optimizer in the round its last
**     such collective ends (ZeRO-1/2: then its stage's allgathers, begun
**     once every rank of the stage has its optimizer), its step end in the
**     round its allgathers end; the next step begins in the round after
**     the last rank's step end.
** So every op waits for an op of its own round or the round before, as an
** unfolding DAG must (dag.h), provided every rank's collectives end in the
** same round: true when every stage has the same blocks and buckets
** (symmetric()), and only then may the job unfold. */
enum { PH_BEGIN, PH_SLOTS, PH_DRAIN, PH_DONE };
enum { RS_OPT, RS_GATHER, RS_ENDED }; /* a rank after the step's items: waits for its optimizer, its allgathers, done */

/* The step's begin: its pp transfers' definitions, the ranks' begin marks. */
static void step_begin(Train *t) {
  const uint32_t n = t->nranks;
  /* the pp transfers' definitions: per boundary and microbatch, forward then backward (one
  ** transfer's time and bandwidth, not a span over the whole pipeline) */
  for (uint32_t dir = 0; dir < 2 && t->nv > 1; dir++) {
    for (uint32_t s = 0; s + 1 < t->nv; s++)
      for (uint32_t j = 0; j < t->m; j++) {
        FabCollDef c = {.op = "send-recv", .algorithm = "direct", .protocol = "simple", .tag = "pp",
                        .bytes = t->act_bytes, .count = t->act_bytes / t->dtype, .dtype_bytes = t->dtype,
                        .nranks = 2 * t->tp * t->dp, .root = -1, .channels = 1, .chunk = t->act_bytes, .job = t->job,
                        .step = t->step};
        int32_t idx = fab_dag_coll(t->d, &c);
        if (s == 0 && j == 0) *(dir ? &t->coll_bwd_base : &t->coll_fwd_base) = idx;
      }
  }
  for (uint32_t r = 0; r < n; r++) {
    g_array_set_size(t->pending[r], 0);
    g_array_set_size(t->post[r], 0);
    t->state[r] = RS_OPT;
    t->dpend[DENSE][r] = t->dpend[EXPERT][r] = FAB_OP_NONE;
    t->lastc[r] = t->tail[r] = mark(t, r, FAB_MARK_STEP_BEGIN, &t->tail[r], 1);
  }
  memset(t->fdone, 0, (size_t)t->nv * t->m);
  memset(t->bdone, 0, (size_t)t->nv * t->m);
  memset(t->gathered, 0, t->pp);
  t->emb_done = false;
}

/* 1F1B position i of every stage (see above). */
static gboolean slot(Train *t, uint32_t i, GError **err) {
  for (uint32_t k = 0; k < 2 * t->pp; k++) {
    uint32_t s = k < t->pp ? k : 2 * t->pp - 1 - k, v, j;
    gboolean fwd;
    schedule_at(t, s, i, &fwd, &v, &j);
    if (fwd != (k < t->pp)) continue;
    g_assert(fwd ? v == 0 || t->fdone[(v - 1) * t->m + j] : v + 1 == t->nv || t->bdone[(v + 1) * t->m + j]);
    if (!item(t, v, fwd, j, err)) return FALSE;
    (fwd ? t->fdone : t->bdone)[v * t->m + j] = 1;
  }
  return TRUE;
}

/* One layer of every active expansion; those that end hand their ends
** over; then what waited for them on their communicators begins. */
static gboolean advance(Train *t, GError **err) {
  guint keep = 0;
  for (guint i = 0; i < t->active->len; i++) {
    Active *a = g_ptr_array_index(t->active, i);
    if (fab_coll_gen_more(a->g, 1)) {
      g_ptr_array_index(t->active, keep++) = a;
      continue;
    }
    ends(t, a->mem, a->n, fab_coll_gen_end(a->g), NULL, a->collect);
    if (a->q != UINT32_MAX) {
      ends(t, a->mem, a->n, fab_coll_gen_end(a->g), t->dpend[a->q % NSTREAMS], NULL);
      t->dprun[a->q]--;
    }
    for (uint32_t k = 0; k < a->n; k++) t->busy[a->mem[k]]--;
    fab_coll_gen_free(a->g);
    g_free(a);
  }
  g_ptr_array_set_size(t->active, keep);
  return stream_next(t, err);
}

/* Rank r's optimizer: after its tail and everything on pending[r]. */
static void optimizer(Train *t, uint32_t r) {
  uint32_t s = r / (t->tp * t->dp);
  double p = 0;
  for (uint32_t k = 0; k < t->nb * t->vpp; k++) { /* its chunks' blocks: virtual stage k / nb x pp + s */
    const Block *b = &t->blk[(k / t->nb * t->pp + s) * t->nb + k % t->nb];
    p += b->params[DENSE] / (t->zero ? t->dp : 1) + b->params[EXPERT] / (t->zero ? t->edp : 1);
  }
  g_array_prepend_val(t->pending[r], t->tail[r]);
  FabOp o = {.kind = FAB_OP_COMPUTE, .mark = FAB_PHASE_OPT, .job = t->job, .step = t->step, .src = t->ranks[r],
             .dst = t->ranks[r], .coll = -1, .start = t->start,
             .dur = t->table.ps[TT_OPT][0] ? t->table.ps[TT_OPT][0] : (fab_time_t)llround(OPT_BYTES * p / t->mem_Bps * 1e12)};
  t->opt[r] = fab_dag_add(t->d, &o, (const uint32_t *)t->pending[r]->data, t->pending[r]->len);
  t->state[r] = RS_GATHER;
}

/* Tied embeddings on pp > 1 stages (Megatron's finalize_model_grads,
** _allreduce_word_embedding_grads): once the first and last stages'
** gradients are reduced over dp (their bucket collectives made and
** nothing else under way), each rank of the first stage allreduces the
** table's gradient with the rank at its place on the last, and both
** optimizers wait for it. */
static gboolean tied(Train *t, GError **err) {
  const uint32_t nq = t->tp * t->dp, last = (t->pp - 1) * nq;
  if (!t->emb_bytes || t->emb_done) return TRUE;
  for (uint32_t q = 0; q < nq; q++)
    if (t->state[q] != RS_OPT || t->busy[q] || t->state[last + q] != RS_OPT || t->busy[last + q]) return TRUE;
  uint32_t *from = g_new(uint32_t, t->nranks);
  for (uint32_t q = 0; q < nq; q++) { /* each pair enters after what its optimizers wait for so far */
    const uint32_t pair[2] = {q, last + q};
    for (int i = 0; i < 2; i++)
      from[pair[i]] = mark(t, pair[i], FAB_MARK_JOIN, (const uint32_t *)t->pending[pair[i]]->data,
                           t->pending[pair[i]]->len);
  }
  gboolean ok = coll(t, GK_EMB, 0, FAB_COLL_ALLREDUCE, t->emb_bytes, fab_train__tags[TAG_EMB], from, NULL,
                     t->pending, err);
  g_free(from);
  t->emb_done = true;
  return ok;
}

/* After the step's items: optimizers, ZeRO-1/2 allgathers and step ends as
** their collectives end (see above). */
static gboolean drain(Train *t, GError **err) {
  const uint32_t n = t->nranks, nq = t->tp * t->dp;
  const bool zero12 = (t->zero == 1 || t->zero == 2) && t->dp > 1;
  if (!tied(t, err)) return FALSE;
  for (uint32_t r = 0; r < n; r++)
    if (t->state[r] == RS_OPT && !t->busy[r] && (!t->emb_bytes || t->emb_done)) optimizer(t, r);
  for (uint32_t s = 0; zero12 && s < t->pp; s++) {
    gboolean all = !t->gathered[s];
    for (uint32_t q = 0; all && q < nq; q++) all = t->state[s * nq + q] == RS_GATHER;
    if (!all) continue;
    t->gathered[s] = 1;
    for (uint32_t c = 0; c < t->vpp; c++) for (int st = 0; st < NSTREAMS; st++) {
      GArray *bl = t->buckets[(c * t->pp + s) * NSTREAMS + st];
      for (guint i = 0; i < bl->len; i++)
        if (!stream_coll(t, st, s, FAB_COLL_ALLGATHER, g_array_index(bl, Bucket, i).bytes, fab_train__tags[TAG_ZERO], t->opt, t->post,
                         err))
          return FALSE;
    }
  }
  gboolean ended = TRUE;
  for (uint32_t r = 0; r < n; r++) {
    if (t->state[r] == RS_GATHER && !t->busy[r] && (!zero12 || t->gathered[r / nq])) {
      g_array_prepend_val(t->post[r], t->opt[r]);
      t->tail[r] = mark(t, r, FAB_MARK_STEP_END, (const uint32_t *)t->post[r]->data, t->post[r]->len);
      t->state[r] = RS_ENDED;
    }
    ended &= t->state[r] == RS_ENDED;
  }
  if (ended) {
    g_assert(!t->active->len);
    for (uint32_t q = 0; q < t->pp * NSTREAMS; q++) g_assert(g_queue_is_empty(t->dpq[q]) && !t->dprun[q]);
    t->phase = t->step + 1u < t->steps ? PH_BEGIN : PH_DONE;
    if (t->phase == PH_BEGIN) t->step++;
  }
  return TRUE;
}

/* One round (see above). FALSE + err on a failed expansion or past the cap. */
static gboolean round_once(Train *t, GError **err) {
  if (t->phase == PH_BEGIN) {
    step_begin(t);
    t->phase = PH_SLOTS;
    t->slot = 0;
  }
  if (t->phase == PH_SLOTS) {
    if (!slot(t, t->slot, err)) return FALSE;
    if (++t->slot == 2 * t->m * t->vpp) t->phase = PH_DRAIN;
  }
  if (!advance(t, err)) return FALSE;
  if (t->phase == PH_DRAIN && !drain(t, err)) return FALSE;
  return t->unfold || !too_many(t, err);
}

/* Whether every stage has the same blocks and buckets, so that every
** rank's collectives end in the same round (see above). */
static bool symmetric(const Train *t) {
  if (t->vpp > 1) return false; /* a chunk's buckets are ready in a round that differs by stage */
  for (uint32_t s = 1; s < t->pp; s++) {
    for (uint32_t k = 0; k < t->nb; k++) {
      const Block *a = &t->blk[k], *b = &t->blk[s * t->nb + k];
      if (a->nfwd != b->nfwd || a->nbwd != b->nbwd) return false;
      for (uint32_t i = 0; i < a->nfwd + a->nbwd; i++) {
        const Seg *x = i < a->nfwd ? &a->fwd[i] : &a->bwd[i - a->nfwd], *y = i < a->nfwd ? &b->fwd[i] : &b->bwd[i - a->nfwd];
        if (x->kind != y->kind || x->flops != y->flops || x->bytes != y->bytes) return false;
      }
      for (int st = 0; st < NSTREAMS; st++)
        if (a->gbytes[st] != b->gbytes[st] || a->params[st] != b->params[st]) return false;
    }
    for (int st = 0; st < NSTREAMS; st++) {
      const GArray *a = t->buckets[st], *b = t->buckets[s * NSTREAMS + st];
      if (a->len != b->len) return false;
      for (guint i = 0; i < a->len; i++) {
        const Bucket *x = &g_array_index(a, Bucket, i), *y = &g_array_index(b, Bucket, i);
        if (x->block != y->block || x->layer != y->layer || x->frac != y->frac || x->bytes != y->bytes) return false;
      }
    }
  }
  return true;
}

/* ---- the job ---------------------------------------------------------------- */

struct FabTrainGen {
  Train t;
  uint32_t deps0, colls0, groups0; /* the DAG before the job, to undo it */
};

void fab_training_gen_free(FabTrainGen *g) {
  if (!g) return;
  Train *t = &g->t;
  if (t->active) {
    for (guint i = 0; i < t->active->len; i++) {
      Active *a = g_ptr_array_index(t->active, i);
      fab_coll_gen_free(a->g);
      g_free(a);
    }
    g_ptr_array_free(t->active, TRUE);
  }
  g_free(t->fdone);
  g_free(t->bdone);
  g_free(t->busy);
  for (uint32_t q = 0; t->dpq && q < t->pp * NSTREAMS; q++) g_queue_free_full(t->dpq[q], g_free);
  g_free(t->dpq);
  g_free(t->dprun);
  for (int i = 0; i < NSTREAMS; i++) g_free(t->dpend[i]);
  g_free(t->state);
  g_free(t->opt);
  g_free(t->gathered);
  fab_train__free(t);
  g_free(g);
}

/* Undo what g made, and free it. */
static void undo(FabTrainGen *g) {
  FabDag *d = g->t.d;
  fab_dag_truncate(d, g->t.ops0, g->deps0);
  g_array_set_size(d->colls, g->colls0);
  d->groups = g->groups0;
  fab_training_gen_free(g);
}

static void *arr(uint32_t n, size_t size) { return g_malloc0_n(n ? n : 1, size); }

FabTrainGen *fab_training_begin(const FabTrainIn *in, const FabCfgNode *wl, FabDag *d, const FabCollEnv *env,
                                const uint32_t *ranks, uint32_t nranks, uint16_t job, const FabTrainGpu *gpu,
                                bool unfold, GError **err) {
  g_assert(in && wl && d && env && (ranks || !nranks) && job < d->jobs->len);
  if (!nranks) return fab_cfg_fail(wl, err, "a training job needs ranks"), NULL;
  FabTrainGen *g = g_new0(FabTrainGen, 1);
  Train *t = &g->t;
  *t = (Train){.d = d, .env = env, .ranks = ranks, .nranks = nranks, .job = job, .start = in->job.start, .wl = wl,
               .ops0 = fab_dag_len(d)};
  t->envc = *env;
  t->env = &t->envc;
  g->deps0 = fab_dag_deps_len(d), g->colls0 = d->colls->len, g->groups0 = d->groups;
  ModelIn mi = {0};
  Shape sh = {0};
  uint32_t G = 1;
  if (!fab_train__configure(t, in, wl, &mi, &sh, &G, gpu, err)) {
    fab_training_gen_free(g);
    return NULL;
  }
  fab_train__plan(t, &mi, &sh, G);
  t->unfold = unfold && symmetric(t);
  /* made as the run goes, a job holds what is under way: no cap but what op indices can number */
  const double cap = t->unfold ? FAB_COLL_UNFOLD_MAX_OPS : MAX_OPS;
  /* a lower bound on the ops before building any: computes, pp flows, two marks per rank per bucket */
  double est = (double)t->steps * ((double)nranks * ((double)t->m * t->nb * t->vpp * 2 + 3) +
                                   2.0 * (t->nv - 1) * t->m * t->tp * t->dp);
  for (uint32_t s = 0; s < t->nv * NSTREAMS && t->dp > 1 && t->zero != 3; s++)
    est += (double)t->steps * t->tp * t->dp * 2 * t->buckets[s]->len * (t->zero ? 2 : 1) *
           (s % 2 == DENSE || t->edp > 1);
  if (t->too_many_buckets && t->dp > 1 && t->zero != 3) {
    fab_cfg_fail(AT_KEY(wl, "bucket"), err, "bucket %" G_GUINT64_FORMAT " bytes cuts the gradients into more than %u "
                 "buckets: use a larger bucket", t->bucket, MAX_OPS);
    fab_training_gen_free(g);
    return NULL;
  }
  if (est > cap) {
    fab_cfg_fail(wl, err, "this training job needs more than %.0f operations (%u steps x %u microbatches x %u "
                 "blocks per stage x %u ranks); raise layer_group, lower steps or microbatches, or use a larger "
                 "bucket", cap, t->steps, t->m, t->nb * t->vpp, nranks);
    fab_training_gen_free(g);
    return NULL;
  }
  t->tail = arr(nranks, sizeof(uint32_t));
  t->lastc = arr(nranks, sizeof(uint32_t));
  for (int i = 0; i < 3; i++) t->x[i] = arr(nranks, sizeof(uint32_t));
  t->side = arr(nranks, sizeof(uint32_t));
  for (int i = 0; i < 2; i++) t->ring[i] = arr(nranks, sizeof(uint32_t));
  for (int i = 0; i < NSTREAMS; i++) t->gnext[i] = arr(nranks, sizeof(uint32_t));
  for (uint32_t r = 0; r < nranks; r++) {
    t->tail[r] = t->lastc[r] = FAB_OP_NONE;
    t->x[0][r] = t->x[1][r] = t->x[2][r] = t->gnext[0][r] = t->gnext[1][r] = t->side[r] = FAB_OP_NONE;
  }
  size_t nflows = (size_t)(t->nv - 1) * t->m * t->tp * t->dp;
  t->act = arr((uint32_t)nflows, sizeof(uint32_t));
  t->grad = arr((uint32_t)nflows, sizeof(uint32_t));
  t->pending = g_new(GArray *, nranks);
  t->post = g_new(GArray *, nranks);
  for (uint32_t r = 0; r < nranks; r++) {
    t->pending[r] = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    t->post[r] = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  }
  t->mem = arr(nranks, sizeof(uint32_t));
  t->eps = arr(nranks, sizeof(uint32_t));
  t->st = arr(nranks, sizeof(uint32_t));
  t->en = arr(nranks, sizeof(uint32_t));
  t->fdone = arr(t->nv * t->m, 1);
  t->bdone = arr(t->nv * t->m, 1);
  t->gathered = arr(t->pp, 1);
  t->busy = arr(nranks, sizeof(uint32_t));
  t->dpq = g_new(GQueue *, t->pp * NSTREAMS);
  for (uint32_t q = 0; q < t->pp * NSTREAMS; q++) t->dpq[q] = g_queue_new();
  t->dprun = arr(t->pp * NSTREAMS, sizeof(uint32_t));
  for (int i = 0; i < NSTREAMS; i++) t->dpend[i] = arr(nranks, sizeof(uint32_t));
  t->state = arr(nranks, 1);
  t->opt = arr(nranks, sizeof(uint32_t));
  t->active = g_ptr_array_new();
  double colls = 0;
  if (!fab_train__coll_ops(t, &colls, err)) {
    undo(g);
    return NULL;
  }
  t->est = est + colls;
  if (t->est > cap) {
    fab_cfg_fail(wl, err, "this training job needs more than %.0f operations (about %.0f: %u steps x %u "
                 "microbatches x %u blocks per stage x %u ranks, of which its TP, MoE, DP and ZeRO collectives "
                 "%.0f); raise chunk (fewer pieces per collective), layer_group (fewer tp/ep collectives) or "
                 "bucket (fewer dp collectives), or lower channels, steps or microbatches", cap, t->est, t->steps,
                 t->m, t->nb * t->vpp, nranks, colls);
    undo(g);
    return NULL;
  }
  /* made as it runs, the job's collectives are of the kinds and sizes coll_ops made: any warning they give
  ** was given now, at load */
  if (t->unfold) t->envc.warnings = NULL;
  FabJobDef *jd = &g_array_index(d->jobs, FabJobDef, job);
  jd->steps = t->steps;
  jd->microbatches = t->m;
  jd->pp = t->pp;
  g_free(jd->note);
  jd->note = fab_train__note(t, &mi, &sh);
  t->phase = PH_BEGIN;
  return g;
}

int fab_training_gen_more(FabTrainGen *g, uint32_t min_ops, GError **err) {
  Train *t = &g->t;
  const uint32_t from = fab_dag_len(t->d);
  while (t->phase != PH_DONE && fab_dag_len(t->d) - from < min_ops)
    if (!round_once(t, err)) return -1;
  return t->phase != PH_DONE;
}

bool fab_training_gen_unfolds(const FabTrainGen *g) { return g->t.unfold; }
double fab_training_gen_estimate(const FabTrainGen *g) { return g->t.est; }

gboolean fab_training_build(const FabTrainIn *in, const FabCfgNode *wl, FabDag *d, const FabCollEnv *env,
                            const uint32_t *ranks, uint32_t nranks, uint16_t job, const FabTrainGpu *gpu,
                            GError **err) {
  FabTrainGen *g = fab_training_begin(in, wl, d, env, ranks, nranks, job, gpu, false, err);
  if (!g) return FALSE;
  if (fab_training_gen_more(g, UINT32_MAX, err) < 0) {
    undo(g);
    return FALSE;
  }
  fab_training_gen_free(g);
  return TRUE;
}

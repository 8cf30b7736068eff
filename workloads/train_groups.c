/* A training job's rank groups (tp, cp, ep, dp, edp) and what its
** collectives will take before any is kept. See training.c for the model
** and train_int.h for what is shared. */
#include "train_int.h"
#include <string.h>

const char *const fab_train__tags[FAB_TRAIN_NTAGS] = {"tp", "ep", "dp", "zero", "cp", "emb"};

/* Groups per stage: tp over the tp_i of one dp index; cp over the cp_i of
** one replica (cp_i is the fastest part of the dp index: Megatron's order
** tp-cp-ep-dp-pp); ep over ep consecutive dp indices (Megatron Core folds
** cp into the expert layout's data-parallel part); dp over every dp index;
** edp over the dp indices of one expert slot; emb (tied embeddings) a
** rank of the first stage and the one at its place on the last. */
uint32_t fab_train__ngroups(const Train *t, int gk) {
  switch (gk) {
  case GK_TP: return t->dp;
  case GK_EP: return t->tp * (t->dp / t->ep);
  case GK_DP: return t->tp;
  case GK_CP: return t->tp * (t->dp / t->cp);
  case GK_EMB: return t->tp * t->dp;
  default: return t->tp * t->ep;
  }
}

uint32_t fab_train__members(const Train *t, int gk, uint32_t s, uint32_t g, uint32_t *out) {
  uint32_t n = 0;
  switch (gk) {
  case GK_TP:
    for (uint32_t i = 0; i < t->tp; i++) out[n++] = fab_train__rank(t, i, g, s);
    break;
  case GK_EP:
    for (uint32_t e = 0; e < t->ep; e++) out[n++] = fab_train__rank(t, g % t->tp, (g / t->tp) * t->ep + e, s);
    break;
  case GK_DP:
    for (uint32_t i = 0; i < t->dp; i++) out[n++] = fab_train__rank(t, g, i, s);
    break;
  case GK_CP:
    for (uint32_t c = 0; c < t->cp; c++) out[n++] = fab_train__rank(t, g % t->tp, (g / t->tp) * t->cp + c, s);
    break;
  case GK_EMB: /* (s is not used) */
    out[n++] = fab_train__rank(t, g % t->tp, g / t->tp, 0);
    out[n++] = fab_train__rank(t, g % t->tp, g / t->tp, t->pp - 1);
    break;
  default:
    for (uint32_t k = 0; k < t->edp; k++) out[n++] = fab_train__rank(t, g % t->tp, k * t->ep + g / t->tp, s);
    break;
  }
  return n;
}

void fab_train__seg_coll(int kind, int *gk, FabCollOp *op, const char **tag) {
  switch (kind) {
  case SEG_TP: *gk = GK_TP, *op = FAB_COLL_ALLREDUCE, *tag = fab_train__tags[TAG_TP]; break;
  case SEG_AG:
  case SEG_AGS: *gk = GK_TP, *op = FAB_COLL_ALLGATHER, *tag = fab_train__tags[TAG_TP]; break;
  case SEG_RS: *gk = GK_TP, *op = FAB_COLL_REDUCE_SCATTER, *tag = fab_train__tags[TAG_TP]; break;
  case SEG_EP: *gk = GK_EP, *op = FAB_COLL_ALL_TO_ALL, *tag = fab_train__tags[TAG_EP]; break;
  default:
    g_assert(kind == SEG_CP || kind == SEG_CPB);
    *gk = GK_CP, *op = FAB_COLL_SEND_RECV, *tag = fab_train__tags[TAG_CP];
    break;
  }
}

/* The operations one group's collective of kind gk on stage s takes: it is
** begun and taken back, once per (group kind, op, size) (`seen`); `lay`:
** as coll() begins one that is made a layer a round (its estimate, not
** made). */
static gboolean group_ops(Train *t, GHashTable *seen, int gk, uint32_t s, FabCollOp op, uint64_t bytes, bool lay,
                          const char *tag, double *out, GError **err) {
  char *key = g_strdup_printf("%d %d %" G_GUINT64_FORMAT, gk, (int)op, bytes);
  gpointer hit = g_hash_table_lookup(seen, key);
  gboolean ok = TRUE;
  if (!hit) {
    FabDag *d = t->d;
    const uint32_t ops0 = fab_dag_len(d), deps0 = fab_dag_deps_len(d), colls0 = d->colls->len, groups0 = d->groups;
    uint32_t n = fab_train__members(t, gk, s, 0, t->mem);
    for (uint32_t q = 0; q < n; q++) t->eps[q] = t->ranks[t->mem[q]], t->st[q] = FAB_OP_NONE;
    FabCollSpec c = {.op = op, .algorithm = t->algo, .protocol = t->proto, .bytes = bytes, .dtype_bytes = t->dtype,
                     .nranks = n, .ranks = t->eps, .channels = t->channels, .chunk = t->chunk, .job = t->job,
                     .tag = tag, .start = t->start, .cta_zero = t->cta_zero};
    GError *e = NULL;
    FabCollGen *cg = n >= 2 ? fab_coll_begin(d, t->env, &c, t->st, lay, &e) : NULL;
    double made = 0;
    if (n >= 2 && !cg) {
      fab_cfg_fail(t->coll_at, err, "%s %s of %" G_GUINT64_FORMAT " bytes over %u ranks: %s", tag,
                   fab_coll_op_names[op], bytes, n, e ? e->message : "failed");
      g_clear_error(&e);
      ok = FALSE;
    } else if (cg) {
      made = fab_coll_gen_done(cg) ? fab_dag_len(d) - ops0 : fab_coll_gen_estimate(cg);
      fab_coll_gen_free(cg);
    }
    fab_dag_truncate(d, ops0, deps0);
    g_array_set_size(d->colls, colls0);
    d->groups = groups0;
    double *v = g_new(double, 1);
    *v = made;
    g_hash_table_insert(seen, key, v);
    hit = v;
  } else {
    g_free(key);
  }
  *out = *(const double *)hit;
  return ok;
}

/* What the collectives of the blocks (TP allreduces, MoE all-to-alls), the
** DP buckets and ZeRO's gathers and reduce-scatters will take, before any
** is kept: one group's collective of each kind and size (the layout is
** regular: every group of a kind expands alike) times the groups of the
** stage, the microbatches and the steps. Added to the lower bound of
** train(), a job too large for the cap is refused before it is built, not
** after millions of operations (fuzzing found such jobs refused at 0.45 s
** and 400 MB); and every kind has been made once, so a job made as the run
** goes meets no error later. FALSE + err if an expansion fails. */
gboolean fab_train__coll_ops(Train *t, double *ops, GError **err) {
  GHashTable *seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free); /* kind -> ops */
  gboolean ok = TRUE;
  double one;
  const double steps = t->steps;
  *ops = 0;
  for (uint32_t v = 0; ok && v < t->nv; v++) { /* virtual stages; their ranks are stage s's */
    const uint32_t s = v % t->pp;
    for (uint32_t k = 0; ok && k < t->nb; k++) {
      const Block *b = &t->blk[v * t->nb + k];
      for (int pass = 0; ok && pass < 2; pass++) {
        const Seg *seg = pass ? b->bwd : b->fwd;
        for (uint32_t i = 0; ok && i < (pass ? b->nbwd : b->nfwd); i++) {
          if (seg[i].kind == SEG_COMPUTE || !seg[i].bytes) continue;
          int gk;
          FabCollOp op;
          const char *tag;
          fab_train__seg_coll(seg[i].kind, &gk, &op, &tag);
          /* a ring's hops: cp - 1 of K/V, and in the backward cp of their gradients */
          double times = seg[i].kind == SEG_CP ? t->cp - 1 : seg[i].kind == SEG_CPB ? 2.0 * t->cp - 1 : 1;
          ok = group_ops(t, seen, gk, s, op, seg[i].bytes, false, tag, &one, err);
          *ops += times * one * fab_train__ngroups(t, gk) * t->m * steps;
        }
      }
      for (int st = 0; ok && t->zero == 3 && t->dp > 1 && st < NSTREAMS; st++) { /* per block and microbatch */
        int gk = stream_group(st);
        ok = group_ops(t, seen, gk, s, FAB_COLL_ALLGATHER, b->gbytes[st], false, fab_train__tags[TAG_ZERO], &one, err);
        *ops += 2 * one * fab_train__ngroups(t, gk) * t->m * steps; /* before its forward and its backward */
        if (ok) ok = group_ops(t, seen, gk, s, FAB_COLL_REDUCE_SCATTER, b->gbytes[st], true, fab_train__tags[TAG_ZERO], &one, err);
        *ops += one * fab_train__ngroups(t, gk) * t->m * steps;
      }
    }
    for (int st = 0; ok && t->dp > 1 && t->zero != 3 && st < NSTREAMS; st++) { /* the buckets, once a step */
      GArray *bl = t->buckets[v * NSTREAMS + st];
      int gk = stream_group(st);
      for (guint i = 0; ok && i < bl->len; i++) {
        uint64_t bytes = g_array_index(bl, Bucket, i).bytes;
        ok = group_ops(t, seen, gk, s, t->zero ? FAB_COLL_REDUCE_SCATTER : FAB_COLL_ALLREDUCE, bytes, true, fab_train__tags[TAG_DP],
                       &one, err);
        *ops += one * fab_train__ngroups(t, gk) * steps;
        if (ok && t->zero) { /* ZeRO-1/2: the updated parameters gathered back */
          ok = group_ops(t, seen, gk, s, FAB_COLL_ALLGATHER, bytes, true, fab_train__tags[TAG_ZERO], &one, err);
          *ops += one * fab_train__ngroups(t, gk) * steps;
        }
      }
    }
  }
  if (ok && t->emb_bytes) { /* tied embeddings: once a step */
    ok = group_ops(t, seen, GK_EMB, 0, FAB_COLL_ALLREDUCE, t->emb_bytes, true, fab_train__tags[TAG_EMB], &one, err);
    *ops += one * fab_train__ngroups(t, GK_EMB) * steps;
  }
  g_hash_table_destroy(seen);
  return ok;
}

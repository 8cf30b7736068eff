/* A training job's MoE routing: which ranks' experts its tokens go to, when
** the routing is uneven. See training.c for the model and train_int.h for
** what is shared.
**
** Even routing (the default) sends each rank's token slots (its tokens x
** top_k) in equal parts to the ep ranks, which then compute alike. Uneven
** routing, with model.moe_skew s > 0 or model.moe_capacity_factor c > 0:
**  - popularity: the i-th most popular of the E experts (i = 1..E) takes
**    the share w_i / sum w of a rank's token slots, w_i = i^-s (Zipf; s = 0
**    is even), except that no expert takes more than 1/top_k of them (a
**    token picks top_k distinct experts): those above are cut to 1/top_k
**    and the rest share what is left in the same proportions;
**  - slots: a rank's T slots of a layer cut by those shares, the remainders
**    by largest fraction (ties to the more popular), so they add up to T;
**  - capacity (c > 0): an expert takes at most ceil(T / E x c) slots from a
**    rank, the rest are dropped (not sent, not computed): Megatron Core's
**    get_capacity(num_tokens x topk, num_experts, capacity_factor),
**    megatron/core/transformer/moe/moe_utils.py, without padding;
**  - which expert is i-th: a seeded draw (a shuffle) per step, MoE layer,
**    microbatch and replica (the ep groups of one dp index block, one per
**    tp rank, route the same tokens), from the scenario seed and the job's
**    stream. Every rank of a replica routes alike; the backward moves the
**    same slots as its forward, the other way round.
** A rank holds experts [e E/ep, (e+1) E/ep): the all-to-all before the
** experts sends each rank the slots of its experts (FabCollSpec.counts, x
** h B bytes each), the one after sends them back, and its expert compute
** is its slots over an even share's. With a block of G > 1 layers, its MoE
** layers' slots add up.
*/
#include "train_int.h"
#include "sim/rng.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Rem {
  double f;   /* what rounding down left of an expert's slots */
  uint32_t i; /* its popularity rank */
} Rem;

static int by_remainder(const void *a, const void *b) {
  const Rem *x = a, *y = b;
  if (x->f != y->f) return x->f > y->f ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* The slots from one rank to the i-th most popular expert, into t->moe_n. */
static void shares(Train *t, double skew, double cap) {
  const uint32_t E = t->E;
  const double top = 1.0 / t->k_top; /* what one expert may take */
  double *p = g_new(double, E), *w = g_new(double, E), wl = 0, left = 1;
  for (uint32_t i = 0; i < E; i++) w[i] = pow((double)(i + 1), -skew), wl += w[i];
  uint32_t i = 0;
  for (; i < E && left * w[i] / wl > top; i++) /* w falls with i: the cut ones come first */
    p[i] = top, left -= top, wl -= w[i];
  for (uint32_t j = i; j < E; j++) p[j] = left * w[j] / wl;
  uint64_t given = 0;
  Rem *rem = g_new(Rem, E);
  for (uint32_t j = 0; j < E; j++) {
    t->moe_n[j] = (uint64_t)floor(p[j] * (double)t->tok), given += t->moe_n[j];
    rem[j] = (Rem){p[j] * (double)t->tok - (double)t->moe_n[j], j};
  }
  qsort(rem, E, sizeof *rem, by_remainder); /* the largest remainders, the more popular first */
  for (uint32_t j = 0; given < t->tok && j < E; j++) t->moe_n[rem[j].i]++, given++;
  g_free(rem);
  if (cap > 0) {
    uint64_t most = (uint64_t)ceil((double)t->tok / E * cap);
    for (uint32_t j = 0; j < E; j++) t->moe_n[j] = MIN(t->moe_n[j], most);
  }
  g_free(p);
  g_free(w);
}

gboolean fab_train__moe_setup(Train *t, const ModelIn *mi, const Shape *sh, const FabCfgNode *model, GError **err) {
  const FabCfgNode *ks = fab_cfg_get(model, "moe_skew"), *kc = fab_cfg_get(model, "moe_capacity_factor");
  if (!(mi->moe_skew > 0) && !(mi->moe_cap > 0)) return TRUE;
  if (!mi->experts)
    return fab_cfg_fail(mi->moe_skew > 0 ? ks : kc, err, "needs an MoE model (model.experts): there is no routing");
  if (ks && mi->moe_skew > 0 && t->ep == 1 && !(mi->moe_cap > 0) && t->env->warnings)
    g_ptr_array_add(t->env->warnings, g_strdup_printf("%s: %s: has no effect with ep = 1 (every rank holds every "
                                                      "expert, so its traffic and compute do not depend on the routing)",
                                                      fab_cfg_where(ks), fab_cfg_path(ks)));
  t->E = (uint32_t)mi->experts, t->k_top = (uint32_t)mi->top_k, t->moe_every = (uint32_t)mi->moe_every;
  t->first_dense = mi->first_dense;
  t->tok = mi->micro_batch * (mi->seq / t->cp) * mi->top_k;
  t->tok_bytes = sh->hidden * t->dtype;
  t->moe_n = g_new(uint64_t, t->E);
  t->perm = g_new(uint32_t, t->E);
  t->moe_tok = g_new0(uint64_t, (size_t)t->dp);
  t->load = g_new(double, t->nranks);
  t->a2a = g_new(uint64_t, (size_t)t->ep * t->ep);
  for (uint32_t r = 0; r < t->nranks; r++) t->load[r] = 1;
  shares(t, mi->moe_skew, mi->moe_cap);
  return TRUE;
}

void fab_train__moe_draw(Train *t, uint32_t s, uint32_t k, uint32_t j) {
  if (!t->moe_n) return;
  const uint32_t R = t->dp / t->ep, per = t->E / t->ep;
  memset(t->moe_tok, 0, sizeof(uint64_t) * t->dp);
  uint32_t nmoe = 0;
  for (uint32_t l = 0; l < t->G; l++) {
    uint64_t layer = ((uint64_t)s * t->nb + k) * t->G + l;
    if (layer % t->moe_every || layer < t->first_dense) continue;
    nmoe++;
    for (uint32_t rep = 0; rep < R; rep++) {
      FabRng rng;
      uint64_t key = fab_mix64(fab_mix64(fab_mix64(t->stream ^ t->step) ^ layer) ^ j) ^ rep;
      fab_rng_init(&rng, t->seed, fab_mix64(key));
      for (uint32_t i = 0; i < t->E; i++) t->perm[i] = i;
      for (uint32_t i = t->E; i > 1; i--) { /* Fisher-Yates */
        uint32_t x = (uint32_t)fab_rng_below(&rng, i), y = t->perm[i - 1];
        t->perm[i - 1] = t->perm[x], t->perm[x] = y;
      }
      for (uint32_t i = 0; i < t->E; i++) t->moe_tok[rep * t->ep + t->perm[i] / per] += t->moe_n[i];
    }
  }
  for (uint32_t r = 0; r < t->nranks; r++) { /* each rank receives from its ep ranks what each sends it */
    uint32_t dp_i = (r / t->tp) % t->dp;
    t->load[r] = nmoe ? (double)t->moe_tok[dp_i] * t->ep / ((double)t->tok * nmoe) : 1;
  }
}

const uint64_t *fab_train__moe_counts(Train *t, uint32_t g) {
  if (!t->moe_n) return NULL;
  const uint64_t *v = t->moe_tok + (size_t)(g / t->tp) * t->ep; /* EP group g: tp_i g % tp, replica g / tp */
  for (uint32_t a = 0; a < t->ep; a++)
    for (uint32_t b = 0; b < t->ep; b++) /* dispatch: a sends b the slots of b's experts; combine: back */
      t->a2a[(size_t)a * t->ep + b] = v[t->a2a_dir ? a : b] * t->tok_bytes;
  return t->a2a;
}

void fab_train__moe_note(const Train *t, double skew, double cap, GString *s) {
  if (!t->moe_n) return;
  uint64_t kept = 0, top = 0, per = t->E / t->ep;
  for (uint32_t i = 0; i < t->E; i++) kept += t->moe_n[i], top += i < per ? t->moe_n[i] : 0;
  g_string_append_printf(s, "\n           MoE routing: uneven (moe_skew %g): of a rank's %" G_GUINT64_FORMAT " token slots "
                         "a layer the most popular expert takes %" G_GUINT64_FORMAT " (even: %.4g), the least %"
                         G_GUINT64_FORMAT "; a rank's experts take up to %.4g x an even share", skew, t->tok,
                         t->moe_n[0], (double)t->tok / t->E, t->moe_n[t->E - 1],
                         (double)top * t->ep / (double)t->tok);
  if (cap > 0)
    g_string_append_printf(s, "; capacity factor %g: at most %" G_GUINT64_FORMAT " slots an expert from a rank, %"
                           G_GUINT64_FORMAT " dropped (%.3g %%)", cap, (uint64_t)ceil((double)t->tok / t->E * cap),
                           t->tok - kept, 100.0 * (double)(t->tok - kept) / (double)t->tok);
  g_string_append_printf(s, "; which expert is which: drawn per step, MoE layer, microbatch and replica from seed %"
                         G_GUINT64_FORMAT "; all-to-alls of %" G_GUINT64_FORMAT " B a token slot, uneven per rank",
                         t->seed, t->tok_bytes);
}

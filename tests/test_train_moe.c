/* MoE routing of the training job (workloads/train_moe.c): uneven expert
** popularity (model.moe_skew), the capacity factor, and the seeded draw. */
#include "testtrain.h"

/* 4 ranks, one expert each (ep 4), one MoE layer of hidden 64 and ffn 256,
** 8 tokens x top 2 = 16 token slots a rank; simple protocol, so a flow's
** bytes are its payload. %s: the extra model keys. */
#define MOE_YAML                                                                                                        \
  "workload:\n"                                                                                                       \
  "  kind: training\n"                                                                                                \
  "  model: {layers: 1, hidden: 64, ffn: 256, seq: 8, micro_batch: 1, global_batch: %u, dtype: bf16, experts: 4, "    \
  "top_k: 2%s}\n"                                                                                                     \
  "  parallelism: {dp: 4, ep: 4}\n"                                                                                   \
  "  protocol: simple\n"                                                                                              \
  "  steps: %u\n"

/* Generate with the scenario seed `seed` (the job's stream fixed). */
static Gen gen_seeded(const char *extra, uint32_t batch, uint32_t steps, uint64_t seed) {
  char *yaml = g_strdup_printf(MOE_YAML, batch, extra, steps);
  FabTrainGpu gpu = {1e12, 0.5, 16000000000000ull};
  Gen g;
  FabTrainIn in;
  uint16_t job;
  const FabCfgNode *wl = prepare(yaml, 4, &g, &in, &job);
  in.seed = seed, in.stream = 99;
  if (g.ok)
    g.ok = fab_training_build(&in, wl, g.d, &env, g_array_index(g.d->jobs, FabJobDef, job).ranks, 4, job, &gpu, &g.err);
  g_free(yaml);
  cr_assert(g.ok, "%s", g.err ? g.err->message : "?");
  return g;
}

/* The all-to-alls in DAG order: per collective, the payload rank a sent rank b, in units of one token slot (h B =
** 128 bytes), into out[c][a][b]; how many collectives. */
static uint32_t a2a_slots(const FabDag *d, uint64_t out[][4][4], uint32_t max) {
  uint32_t n = 0;
  int32_t ids[64];
  for (uint32_t i = 0; i < d->colls->len; i++)
    if (g_str_equal(g_array_index(d->colls, FabCollDef, i).op, "all-to-all")) {
      cr_assert_lt(n, max);
      ids[n++] = (int32_t)i;
    }
  memset(out, 0, sizeof(uint64_t) * 16 * n);
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = fab_dag_op(d, i);
    if (o->kind != FAB_OP_FLOW) continue;
    for (uint32_t c = 0; c < n; c++)
      if (o->coll == ids[c]) out[c][o->src - EP(0)][o->dst - EP(0)] += o->bytes;
  }
  for (uint32_t c = 0; c < n; c++)
    for (uint32_t a = 0; a < 4; a++)
      for (uint32_t b = 0; b < 4; b++) {
        cr_assert_eq(out[c][a][b] % 128, 0, "a2a %u: %u -> %u carries %" G_GUINT64_FORMAT " B", c, a, b, out[c][a][b]);
        out[c][a][b] /= 128;
      }
  return n;
}

/* What each rank is sent by every other in dispatch c (all senders alike), into v[4]; checks that. */
static void received(uint64_t s[][4][4], uint32_t c, uint64_t v[4]) {
  for (uint32_t b = 0; b < 4; b++) {
    v[b] = s[c][(b + 1) % 4][b];
    for (uint32_t a = 0; a < 4; a++)
      if (a != b) cr_assert_eq(s[c][a][b], v[b], "dispatch %u: %u -> %u is %" G_GUINT64_FORMAT " slots, not %"
                               G_GUINT64_FORMAT, c, a, b, s[c][a][b], v[b]);
  }
}

/* The slots of a draw, sorted down. */
static void sorted(const uint64_t v[4], uint64_t out[4]) {
  memcpy(out, v, 4 * sizeof *out);
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++)
      if (out[j] > out[i]) {
        uint64_t x = out[i];
        out[i] = out[j], out[j] = x;
      }
}

/* Zipf s = 3 over 4 experts, top 2: w = 1, 1/8, 1/27, 1/64 (sum 1.17766); the first share 0.849 is above 1/2: cut
** to 1/2, the rest share 1/2 as 0.35182, 0.10424, 0.04398: of 16 slots 8, 5.629, 1.668, 0.704, floors 8 5 1 0
** (14), the two largest remainders (0.704, 0.668) take one each: 8 5 2 1. Each sender sends each rank its expert's
** slots; back the other way; a rank's expert compute is its slots over the even 4: forward 2 x 8 x 2 x 64 x 256 x
** 2 FLOPs = 1048576 at 0.5 TFLOP/s = 2097152 ps even, so 524288 ps a slot; backward twice that. */
Test(train_moe, skewed_routing_by_hand) {
  Gen g = gen_seeded(", moe_skew: 3", 4, 1, 1);
  uint64_t s[8][4][4], v[4], sv[4];
  uint32_t n = a2a_slots(g.d, s, 8);
  cr_assert_eq(n, 4, "one layer: dispatch and combine, forward and backward (%u)", n);
  received(s, 0, v);
  sorted(v, sv);
  cr_assert(sv[0] == 8 && sv[1] == 5 && sv[2] == 2 && sv[3] == 1, "slots %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT
            " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, sv[0], sv[1], sv[2], sv[3]);
  for (uint32_t a = 0; a < 4; a++)
    for (uint32_t b = 0; b < 4; b++)
      if (a != b) {
        cr_assert_eq(s[1][a][b], v[a], "combine: %u sends back to %u what it was sent", a, b);
        cr_assert_eq(s[2][a][b], v[b], "backward: the output gradient goes as the dispatch did");
        cr_assert_eq(s[3][a][b], v[a], "backward: the input gradient comes back");
      }
  for (uint32_t r = 0; r < 4; r++) { /* computes: attention, experts forward; experts, attention backward */
    uint32_t c[8];
    uint32_t nc = computes_of(g.d, EP(r), c, 8);
    cr_assert_geq(nc, 4);
    uint32_t fe = 1, be = 0;
    while (be < nc && fab_dag_op(g.d, c[be])->mark != FAB_PHASE_BWD) be++;
    cr_assert_lt(be, nc);
    cr_assert_eq(fab_dag_op(g.d, c[fe])->dur, 524288 * v[r], "rank %u forward experts: %" G_GUINT64_FORMAT " ps", r,
                 (uint64_t)fab_dag_op(g.d, c[fe])->dur);
    cr_assert_eq(fab_dag_op(g.d, c[be])->dur, 2 * 524288 * v[r], "rank %u backward experts", r);
  }
  done(&g);
}

/* Capacity factor 1: at most ceil(16 / 4 x 1) = 4 slots an expert from a rank: 8 5 2 1 becomes 4 4 2 1, and 5 of
** 16 are dropped (not sent, not computed). Without skew, 4 each fit: nothing changes. */
Test(train_moe, capacity_drops_what_is_over) {
  Gen g = gen_seeded(", moe_skew: 3, moe_capacity_factor: 1", 4, 1, 1);
  uint64_t s[8][4][4], v[4], sv[4];
  cr_assert_eq(a2a_slots(g.d, s, 8), 4);
  received(s, 0, v);
  sorted(v, sv);
  cr_assert(sv[0] == 4 && sv[1] == 4 && sv[2] == 2 && sv[3] == 1);
  done(&g);
  g = gen_seeded(", moe_capacity_factor: 1", 4, 1, 1);
  cr_assert_eq(a2a_slots(g.d, s, 8), 4);
  received(s, 0, v);
  for (int b = 0; b < 4; b++) cr_assert_eq(v[b], 4);
  done(&g);
}

/* Which expert is hot is drawn per step, layer, microbatch and replica: the same seed gives the same ops; over 2
** steps x 4 microbatches the 8 forward draws are not all the same order (the chance they are: 24^-7); another seed
** gives another run. */
Test(train_moe, seeded_draws) {
  Gen a = gen_seeded(", moe_skew: 1", 16, 2, 5), b = gen_seeded(", moe_skew: 1", 16, 2, 5);
  Gen c = gen_seeded(", moe_skew: 1", 16, 2, 6);
  cr_assert_eq(fab_dag_len(a.d), fab_dag_len(b.d));
  bool same_c = fab_dag_len(a.d) == fab_dag_len(c.d);
  for (uint32_t i = 0; i < fab_dag_len(a.d); i++) {
    const FabOp *x = fab_dag_op(a.d, i), *y = fab_dag_op(b.d, i);
    cr_assert(x->kind == y->kind && x->src == y->src && x->dst == y->dst && x->bytes == y->bytes && x->dur == y->dur,
              "op %u differs between two runs of one seed", i);
    if (same_c) {
      const FabOp *z = fab_dag_op(c.d, i);
      same_c = x->kind == z->kind && x->src == z->src && x->dst == z->dst && x->bytes == z->bytes && x->dur == z->dur;
    }
  }
  cr_assert(!same_c, "seeds 5 and 6 drew the same routing everywhere");
  uint64_t s[32][4][4], v0[4], v[4];
  uint32_t n = a2a_slots(a.d, s, 32);
  cr_assert_eq(n, 2 * 4 * 4, "2 steps x 4 microbatches x 4 all-to-alls (%u)", n);
  received(s, 0, v0);
  bool differ = false;
  for (uint32_t k = 0; k < n; k += 2) { /* the forward and backward dispatches */
    uint64_t sv[4], s0[4];
    received(s, k, v);
    sorted(v, sv), sorted(v0, s0);
    cr_assert(!memcmp(sv, s0, sizeof sv), "every draw is a shuffle of the same shares");
    differ |= memcmp(v, v0, sizeof v) != 0;
  }
  cr_assert(differ, "all 16 dispatches routed alike");
  done(&a), done(&b), done(&c);
}

Test(train_moe, errors_and_warnings) {
  expect_error("workload:\n  kind: training\n  model: {layers: 1, hidden: 64, seq: 8, global_batch: 4, moe_skew: 1}\n"
               "  parallelism: {dp: 4}\n", 4, 1e12, "t.yaml:3:", "needs an MoE model");
  expect_error("workload:\n  kind: training\n  model: {layers: 1, hidden: 64, seq: 8, global_batch: 4, "
               "moe_capacity_factor: 1.25}\n  parallelism: {dp: 4}\n", 4, 1e12, "t.yaml:3:", "needs an MoE model");
  char *w = warnings_of("workload:\n  kind: training\n  model: {layers: 1, hidden: 64, seq: 8, global_batch: 4, "
                        "experts: 4, moe_skew: 1}\n  parallelism: {dp: 4}\n", 4);
  cr_assert(strstr(w, "t.yaml:3:") && strstr(w, "moe_skew") && strstr(w, "has no effect with ep = 1"), "%s", w);
  g_free(w);
  w = warnings_of("workload:\n  kind: training\n  model: {layers: 1, hidden: 64, seq: 8, global_batch: 4, experts: 4, "
                  "moe_skew: 1}\n  parallelism: {dp: 4, ep: 2}\n", 4);
  cr_assert_str_empty(w);
  g_free(w);
}

/* A preset's experts count before ep is checked against them: Mixtral 8x7B (8 experts, top 2) with ep 4 runs its
** all-to-alls (once refused: "ep = 4 needs an MoE model"). 4 layers, 2 all-to-alls each way per layer. */
Test(train_moe, a_preset_gives_the_experts) {
  Gen g = gen_ok("workload:\n  kind: training\n  model: {preset: mixtral-8x7b, layers: 4, seq: 64, global_batch: 4}\n"
                 "  parallelism: {dp: 4, ep: 4}\n", 4);
  uint32_t n = 0;
  for (uint32_t i = 0; i < g.d->colls->len; i++) n += g_str_equal(g_array_index(g.d->colls, FabCollDef, i).op, "all-to-all");
  cr_assert_eq(n, 4 * 4, "%u all-to-alls", n);
  done(&g);
}

/*
** A training job's rank groups and the parallelisms that add their own
** collectives (workloads/train_groups.c, and the plan and ops of
** train_plan.c and training.c): sequence parallelism (TP allgathers and
** reduce-scatters) and context parallelism (the ring attention's K/V hops
** over the cp group, gradients over dp x cp), on models small enough to
** work out by hand.
*/
#include "testtrain.h"

/* Whether endpoint ep takes part in collective c. */
static gboolean in_coll(const FabDag *d, int32_t c, uint32_t ep) {
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = fab_dag_op(d, i);
    if (o->kind == FAB_OP_MARK && o->mark == FAB_MARK_COLL_BEGIN && o->coll == c && o->src == ep) return TRUE;
  }
  return FALSE;
}

static const FabCollDef *def_of(const FabDag *d, int32_t c) { return &g_array_index(d->colls, FabCollDef, c); }

/* h = 64, f = 256, s = 128, b = 1, 2 layers, 1 microbatch. */
#define SMALL(PAR)                                                                                               \
  "workload:\n  kind: training\n"                                                                                \
  "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 1}\n"                                      \
  "  parallelism: " PAR "\n"

Test(train_groups, sequence_parallel_gathers_and_scatters) {
  /* tp 4 with sp: per layer forward an allgather before the attention and the MLP and a reduce-scatter after
  ** each (2 + 2); backward the gradient's allgather, the input gathered again beside the input-gradient compute,
  ** and a reduce-scatter, for each part (4 + 2): 2 layers x 10 = 20, of b s h B = 16384 bytes over 4 ranks, no
  ** allreduce. Compute is what tp 4 gives without sp (tests/test_training.c, tp_allreduces) */
  Gen g = gen_ok(SMALL("{tp: 4, sp: true}"), 4);
  cr_assert_eq(count_colls(g.d, "tp", "allgather"), 12);
  cr_assert_eq(count_colls(g.d, "tp", "reduce-scatter"), 8);
  cr_assert_eq(count_colls(g.d, "tp", "allreduce"), 0);
  int32_t c[32];
  cr_assert_eq(colls_tagged(g.d, "tp", c, 32), 20);
  for (uint32_t i = 0; i < 20; i++) cr_assert(def_of(g.d, c[i])->bytes == 16384 && def_of(g.d, c[i])->nranks == 4);
  /* forward of layer 0: AG, attention, RS, AG, MLP, RS */
  static const char *const fwd[] = {"allgather", "reduce-scatter", "allgather", "reduce-scatter"};
  for (uint32_t i = 0; i < 4; i++) cr_assert_str_eq(def_of(g.d, c[i])->op, fwd[i], "forward collective %u", i);
  for (uint32_t r = 0; r < 4; r++) {
    uint32_t comp[16];
    cr_assert_eq(computes_of(g.d, EP(r), comp, 16), 9);
    for (uint32_t i = 0; i < 8; i++)
      cr_assert_eq(fab_dag_op(g.d, comp[i])->dur, (fab_dag_op(g.d, comp[i])->mark == FAB_PHASE_FWD ? 1 : 2) * 4194304ull);
    cr_assert(depends_on(g.d, comp[0], coll_mark(g.d, c[0], FAB_MARK_COLL_END, EP(r))), "attention after its gather");
    /* the backward's first part (layer 1's MLP): c[8] the gradient's gather, c[9] the input's beside the compute,
    ** c[10] the reduce-scatter, which waits for both the compute and the gather beside it */
    cr_assert_str_eq(def_of(g.d, c[8])->op, "allgather");
    cr_assert_str_eq(def_of(g.d, c[9])->op, "allgather");
    cr_assert_str_eq(def_of(g.d, c[10])->op, "reduce-scatter");
    uint32_t bwd = comp[4], side_end = coll_mark(g.d, c[9], FAB_MARK_COLL_END, EP(r));
    cr_assert(depends_on(g.d, bwd, coll_mark(g.d, c[8], FAB_MARK_COLL_END, EP(r))));
    cr_assert_not(depends_on(g.d, bwd, side_end), "the compute does not wait for the gather beside it");
    cr_assert(depends_on(g.d, coll_mark(g.d, c[9], FAB_MARK_COLL_BEGIN, EP(r)), coll_mark(g.d, c[8], FAB_MARK_COLL_END, EP(r))));
    uint32_t rs = coll_mark(g.d, c[10], FAB_MARK_COLL_BEGIN, EP(r));
    cr_assert(enters_after(g.d, rs, side_end) && enters_after(g.d, rs, bwd));
  }
  done(&g);
  /* sp on one tp rank changes nothing, and says so */
  char *w = warnings_of(SMALL("{sp: true}"), 1);
  cr_assert(strstr(w, "t.yaml:4:") && strstr(w, "parallelism.sp: has no effect with tp = 1"), "%s", w);
  g_free(w);
  g = gen_ok(SMALL("{sp: true}"), 1);
  cr_assert_eq(g.d->colls->len, 0);
  done(&g);
}

Test(train_groups, sequence_parallel_vocabulary) {
  /* vocab 1000, tp 2, sp: the embedding's lookup is reduce-scattered (not allreduced) and its gradient gathered
  ** back; the output layer gathers its input, its backward reduce-scatters the input's gradient and gathers the
  ** input again beside the logits' backward; the loss keeps its 3 allreduces of b s fp32 = 512 bytes */
  Gen g = gen_ok("workload:\n  kind: training\n"
                 "  model: {layers: 1, hidden: 64, ffn: 256, seq: 128, global_batch: 1, vocab: 1000}\n"
                 "  parallelism: {tp: 2, sp: true}\n", 2);
  int32_t c[32];
  uint32_t n = colls_tagged(g.d, "tp", c, 32);
  /* forward: RS (embedding), AG RS AG RS (layer), AG (output layer), 3 AR (loss) = 9;
  ** backward: AGS RS (output layer), AG AGS RS AG AGS RS (layer), AG (embedding) = 9 */
  cr_assert_eq(n, 18);
  static const char *const ops[] = {"reduce-scatter", "allgather", "reduce-scatter", "allgather", "reduce-scatter",
                                    "allgather", "allreduce", "allreduce", "allreduce",
                                    "allgather", "reduce-scatter", "allgather", "allgather", "reduce-scatter",
                                    "allgather", "allgather", "reduce-scatter", "allgather"};
  for (uint32_t i = 0; i < n; i++) {
    cr_assert_str_eq(def_of(g.d, c[i])->op, ops[i], "collective %u", i);
    cr_assert_eq(def_of(g.d, c[i])->bytes, g_str_equal(ops[i], "allreduce") ? 512u : 16384u, "collective %u", i);
  }
  done(&g);
}

Test(train_groups, context_parallel_ring_attention_by_hand) {
  /* cp 2 on 2 ranks: each holds 64 of the 128 tokens. Per layer forward (FLOPs at 0.5e12 FLOP/s): Q, K, V
  ** projections 2 x 64 x 3h^2 = 1572864 (3145728 ps); the core, 64 queries against 128 keys, 4 x 64 x 128 x 64
  ** = 2097152 in 2 pieces of 2097152 ps; the output projection 2 x 64 x h^2 with the MLP 2 x 64 x 2hf:
  ** 4718592 (9437184 ps); in all half of the whole sequence's 33554432 ps. One K/V hop of 2 x 64 x h x 2 B =
  ** 16384 bytes. Backward twice each compute, one K/V hop and two of their gradients. */
  Gen g = gen_ok(SMALL("{cp: 2}"), 2);
  int32_t c[16];
  cr_assert_eq(colls_tagged(g.d, "cp", c, 16), 2 * (1 + 3));
  for (uint32_t i = 0; i < 8; i++) {
    cr_assert_str_eq(def_of(g.d, c[i])->op, "send-recv");
    cr_assert(def_of(g.d, c[i])->bytes == 16384 && def_of(g.d, c[i])->nranks == 2);
  }
  static const fab_time_t durs[] = {3145728, 2097152, 2097152, 9437184};
  for (uint32_t r = 0; r < 2; r++) {
    uint32_t comp[32];
    cr_assert_eq(computes_of(g.d, EP(r), comp, 32), 2 * 4 + 2 * 4 + 1);
    for (uint32_t i = 0; i < 8; i++) cr_assert_eq(fab_dag_op(g.d, comp[i])->dur, durs[i % 4], "forward %u", i);
    /* layer 0: the hop leaves after the projections; piece 0 (its own K/V) does not wait for it, piece 1 does */
    uint32_t hb = coll_mark(g.d, c[0], FAB_MARK_COLL_BEGIN, EP(r)), he = coll_mark(g.d, c[0], FAB_MARK_COLL_END, EP(r));
    cr_assert(depends_on(g.d, hb, comp[0]));
    cr_assert_not(depends_on(g.d, comp[1], he));
    cr_assert(depends_on(g.d, comp[2], he));
    /* backward of layer 1: out + MLP (18874368 ps), 2 pieces (4194304), the projections (6291456) */
    static const fab_time_t bd[] = {18874368, 4194304, 4194304, 6291456};
    for (uint32_t i = 0; i < 4; i++) cr_assert_eq(fab_dag_op(g.d, comp[8 + i])->dur, bd[i], "backward %u", i);
    /* c[2..4]: the first gradient hop, the K/V hop, the second gradient hop; the first leaves after piece 0,
    ** the second after piece 1 and the first's arrival; the projections' backward waits for the second */
    uint32_t g1b = coll_mark(g.d, c[2], FAB_MARK_COLL_BEGIN, EP(r)), g1e = coll_mark(g.d, c[2], FAB_MARK_COLL_END, EP(r));
    uint32_t g2b = coll_mark(g.d, c[4], FAB_MARK_COLL_BEGIN, EP(r)), g2e = coll_mark(g.d, c[4], FAB_MARK_COLL_END, EP(r));
    cr_assert(depends_on(g.d, g1b, comp[9]));
    cr_assert(enters_after(g.d, g2b, comp[10]) && enters_after(g.d, g2b, g1e));
    cr_assert(depends_on(g.d, comp[10], coll_mark(g.d, c[3], FAB_MARK_COLL_END, EP(r))));
    cr_assert_not(depends_on(g.d, comp[9], coll_mark(g.d, c[3], FAB_MARK_COLL_END, EP(r))));
    cr_assert(depends_on(g.d, comp[11], g2e));
  }
  /* the gradients are reduced over the cp ranks (Megatron's data-parallel group with context parallelism):
  ** 2 layers x 49152 parameters x 2 B in one bucket */
  int32_t d[4];
  cr_assert_eq(colls_tagged(g.d, "dp", d, 4), 1);
  cr_assert(def_of(g.d, d[0])->bytes == 196608 && def_of(g.d, d[0])->nranks == 2);
  done(&g);
}

Test(train_groups, context_parallel_layout_and_microbatches) {
  /* tp 2, cp 2, dp 2, pp 2 on 16 ranks; Megatron's order tp-cp-dp-pp: rank = tp_i + 2 (cp_i + 2 (dp_i + 2 s)).
  ** Rank 0's tp group {0, 1}, cp group {0, 2}, gradients over {0, 2, 4, 6}. global_batch 8 over 2 replicas:
  ** 4 microbatches (cp ranks share a sequence). Activations to the next stage: b s h B / (tp cp) = 4096 bytes. */
  Gen g = gen_ok("workload:\n  kind: training\n"
                 "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 8}\n"
                 "  parallelism: {tp: 2, cp: 2, dp: 2, pp: 2}\n", 16);
  cr_assert_eq(g_array_index(g.d->jobs, FabJobDef, 0).microbatches, 4);
  const struct { const char *tag; uint32_t in[4], out[2]; } groups[] = {
    {"tp", {0, 1}, {2, 4}}, {"cp", {0, 2}, {1, 4}}, {"dp", {0, 2, 4, 6}, {1, 8}},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(groups); k++) {
    int32_t c[512];
    uint32_t n = colls_tagged(g.d, groups[k].tag, c, 512), seen = 0;
    for (uint32_t i = 0; i < n && !seen; i++) {
      if (!in_coll(g.d, c[i], EP(0))) continue;
      seen = 1;
      for (uint32_t j = 0; j < 4 && groups[k].in[j] | (j == 0); j++)
        cr_assert(in_coll(g.d, c[i], EP(groups[k].in[j])), "%s: rank %u", groups[k].tag, groups[k].in[j]);
      for (uint32_t j = 0; j < 2; j++)
        cr_assert_not(in_coll(g.d, c[i], EP(groups[k].out[j])), "%s: rank %u", groups[k].tag, groups[k].out[j]);
    }
    cr_assert(seen, "rank 0 takes part in a %s collective", groups[k].tag);
  }
  for (uint32_t i = 0; i < fab_dag_len(g.d); i++) {
    const FabOp *o = fab_dag_op(g.d, i);
    if (o->kind == FAB_OP_FLOW && o->coll >= 0 && g_str_equal(def_of(g.d, o->coll)->tag, "pp"))
      cr_assert(o->bytes == 4096 && (o->dst == o->src + 8 || o->src == o->dst + 8));
  }
  done(&g);
}

Test(train_groups, errors) {
  expect_error(SMALL("{cp: 3}"), 3, 1e12, "t.yaml:4:", "cp = 3 needs seq (128) divisible by 2 x cp = 6");
  expect_error(SMALL("{cp: 2, tp: 2, dp: 1}"), 8, 1e12, "t.yaml:4:",
               "dp x tp x pp x cp = 1 x 2 x 1 x 2 = 4, but the job has 8 ranks");
  expect_error(SMALL("{cp: 2, tp: 2}"), 6, 1e12, "t.yaml:4:", "tp x pp x cp = 4 does not divide the job's 6 ranks");
  expect_error("workload:\n  kind: training\n"
               "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 1, experts: 4}\n"
               "  parallelism: {cp: 2, ep: 4}\n", 2, 1e12, "t.yaml:4:",
               "ep = 4 does not divide dp x cp = 2 (expert groups are made of data and context parallel ranks)");
  expect_error(SMALL("{sp: maybe}"), 1, 1e12, "t.yaml:4:", "sp");
}

Test(train_groups, tied_embeddings_across_stages) {
  /* pp 2, dp 2, vocab 1000 tied: the first stage's table and the last stage's copy (1000 x 64 x 2 B = 128000 B
  ** each) are allreduced between rank (dp_i, stage 0) and (dp_i, stage 1) once their dp buckets are done, and
  ** both optimizers wait for it (Megatron's embedding group); two groups: {0, 2} and {1, 3}. Untied: none. */
  Gen g = gen_ok("workload:\n  kind: training\n  parallelism: {pp: 2, dp: 2}\n  steps: 2\n"
                 "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 2, vocab: 1000, "
                 "tie_embeddings: true}\n", 4);
  int32_t c[8], b[32];
  cr_assert_eq(colls_tagged(g.d, "emb", c, 8), 4, "2 groups x 2 steps");
  uint32_t nb = colls_tagged(g.d, "dp", b, 32);
  for (uint32_t k = 0; k < 4; k++) {
    cr_assert(def_of(g.d, c[k])->bytes == 128000 && def_of(g.d, c[k])->nranks == 2);
    cr_assert_str_eq(def_of(g.d, c[k])->op, "allreduce");
    cr_assert_eq(def_of(g.d, c[k])->step, k / 2);
    uint32_t r0 = k % 2, r1 = r0 + 2; /* rank = dp_i + 2 stage */
    cr_assert(in_coll(g.d, c[k], EP(r0)) && in_coll(g.d, c[k], EP(r1)));
    cr_assert_not(in_coll(g.d, c[k], EP(r0 ^ 1)));
    for (uint32_t r = r0; r <= r1; r += 2) {
      uint32_t begin = coll_mark(g.d, c[k], FAB_MARK_COLL_BEGIN, EP(r)), end = coll_mark(g.d, c[k], FAB_MARK_COLL_END, EP(r));
      for (uint32_t i = 0; i < nb; i++) /* after every dp bucket of the rank in its step */
        if (def_of(g.d, b[i])->step == k / 2 && in_coll(g.d, b[i], EP(r)))
          cr_assert(enters_after(g.d, begin, coll_mark(g.d, b[i], FAB_MARK_COLL_END, EP(r))));
      uint32_t comp[64], n = computes_of(g.d, EP(r), comp, 64), opt = 0;
      for (uint32_t i = 0; i < n; i++) /* the step's optimizer */
        if (fab_dag_op(g.d, comp[i])->mark == FAB_PHASE_OPT && fab_dag_op(g.d, comp[i])->step == k / 2) opt = comp[i];
      cr_assert(opt && depends_on(g.d, opt, end), "rank %u's optimizer waits for the embedding allreduce", r);
    }
  }
  done(&g);
  g = gen_ok("workload:\n  kind: training\n  parallelism: {pp: 2, dp: 2}\n"
             "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 2, vocab: 1000}\n", 4);
  cr_assert_eq(count_colls(g.d, "emb", NULL), 0);
  done(&g);
}

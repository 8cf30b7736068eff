/*
** Training steps (workloads/training.h): the ops a model and its
** parallelism become, on models small enough to work out by hand: compute
** durations, the 1F1B order, pipeline flows, TP/EP/DP/ZeRO collectives and
** their dependencies, steps, and errors at file:line:col.
**
** Job rank i runs on endpoint EP(i) = 5 + i, so a mix-up of job ranks and
** endpoints shows.
*/
#include <criterion/criterion.h>
#include <string.h>

#include "testtrain.h"

/* ---- compute ------------------------------------------------------------- */

/* h = 64, f = 256, s = 128, b = 1: a layer holds 4h^2 + 2hf = 16384 + 32768
** = 49152 parameters; forward = 2 x 128 x 49152 + 4 x 128^2 x 64 =
** 12582912 + 4194304 = 16777216 FLOPs; at 1 TFLOPS x 0.5 that is 33554432
** ps, backward twice that. Optimizer: 2 layers x 49152 x 28 B at 1 TB/s =
** 2752512 ps. */
#define TINY                                                                                                     \
  "workload:\n"                                                                                                  \
  "  kind: training\n"                                                                                           \
  "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, micro_batch: 1, global_batch: 1}\n"                       \
  "  gpu: {memory_bandwidth: 1TB/s}\n"

Test(training, compute_durations_by_hand) {
  Gen g = gen_ok(TINY, 1);
  uint32_t c[16];
  uint32_t n = computes_of(g.d, EP(0), c, 16);
  cr_assert_eq(n, 5, "2 forward, 2 backward, 1 optimizer: got %u", n);
  const FabPhase ph[] = {FAB_PHASE_FWD, FAB_PHASE_FWD, FAB_PHASE_BWD, FAB_PHASE_BWD, FAB_PHASE_OPT};
  const fab_time_t dur[] = {33554432, 33554432, 67108864, 67108864, 2752512};
  for (uint32_t i = 0; i < n; i++) {
    const FabOp *o = fab_dag_op(g.d, c[i]);
    cr_assert_eq(o->mark, ph[i], "op %u: phase %d", i, o->mark);
    cr_assert_eq(o->dur, dur[i], "op %u: %llu ps, expected %llu", i, (unsigned long long)o->dur,
                 (unsigned long long)dur[i]);
    cr_assert_eq(o->step, 0);
    cr_assert_eq(o->job, 0);
    if (i) cr_assert(depends_on(g.d, c[i], c[i - 1]), "compute %u does not follow %u", i, i - 1);
  }
  cr_assert_eq(g.d->colls->len, 0, "one rank: no collectives");
  done(&g);
}

/* Grouped-query attention: TINY with 8 query heads and 2 K/V heads. K and
** V are 2/8 of Q's size, so the attention holds (2 + 2 x 2/8) h^2 = 2.5 x
** 4096 = 10240 parameters and a layer 10240 + 32768 = 43008; forward = 2 x
** 128 x 43008 + 4 x 128^2 x 64 = 11010048 + 4194304 = 15204352 FLOPs =
** 30408704 ps at 0.5 TFLOPS, backward twice that; the optimizer 2 x 43008 x
** 28 B at 1 TB/s = 2408448 ps. */
Test(training, grouped_query_attention_by_hand) {
  Gen g = gen_ok("workload:\n  kind: training\n"
                 "  model: {layers: 2, hidden: 64, ffn: 256, heads: 8, kv_heads: 2, seq: 128, global_batch: 1}\n"
                 "  gpu: {memory_bandwidth: 1TB/s}\n", 1);
  uint32_t c[16];
  cr_assert_eq(computes_of(g.d, EP(0), c, 16), 5);
  const fab_time_t dur[] = {30408704, 30408704, 60817408, 60817408, 2408448};
  for (uint32_t i = 0; i < 5; i++)
    cr_assert_eq(fab_dag_op(g.d, c[i])->dur, dur[i], "op %u: %llu ps, expected %llu", i,
                 (unsigned long long)fab_dag_op(g.d, c[i])->dur, (unsigned long long)dur[i]);
  done(&g);
  /* kv_heads = heads is multi-head attention: TINY's times */
  g = gen_ok("workload:\n  kind: training\n"
             "  model: {layers: 2, hidden: 64, ffn: 256, heads: 8, kv_heads: 8, seq: 128, global_batch: 1}\n"
             "  gpu: {memory_bandwidth: 1TB/s}\n", 1);
  cr_assert_eq(computes_of(g.d, EP(0), c, 16), 5);
  cr_assert_eq(fab_dag_op(g.d, c[0])->dur, 33554432);
  done(&g);
  expect_error("workload:\n  kind: training\n  model: {layers: 8, hidden: 64, kv_heads: 2, seq: 128, global_batch: 4}\n",
               1, 1e12, "t.yaml:3:44: workload.model.kv_heads:", "kv_heads needs heads");
  expect_error("workload:\n  kind: training\n"
               "  model: {layers: 8, hidden: 64, heads: 8, kv_heads: 3, seq: 128, global_batch: 4}\n",
               1, 1e12, "t.yaml:3:54: workload.model.kv_heads:", "3 kv_heads must divide heads (8)");
  expect_error("workload:\n  kind: training\n"
               "  model: {layers: 8, hidden: 64, heads: 8, kv_heads: 2, seq: 128, global_batch: 4}\n"
               "  parallelism: {tp: 4}\n",
               4, 1e12, "t.yaml:3:54: workload.model.kv_heads:", "be divisible by tp (4;");
}

/* SwiGLU: three h x f matrices. TINY's layer holds 4 x 4096 + 3 x 64 x 256 = 65536 parameters; forward 2 x
** 128 x 65536 + 4 x 128^2 x 64 = 20971520 FLOPs = 41943040 ps. Presets: their parameters as the model cards
** give them (worked out in train_plan.c's terms: layers x (qkvo h^2 + 3 h f [x experts]) + 2 vocab h), read
** from the optimizer at 28 TB/s, which moves 28 B per parameter in 1 ps. */
Test(training, swiglu_and_model_presets) {
  Gen g = gen_ok("workload:\n  kind: training\n  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 1, "
                 "mlp: swiglu}\n", 1);
  uint32_t c[8];
  cr_assert_eq(computes_of(g.d, EP(0), c, 8), 5);
  cr_assert_eq(fab_dag_op(g.d, c[0])->dur, 41943040);
  done(&g);
  static const struct { const char *name; uint64_t params; } presets[] = {
    {"llama3-8b", 8029995008ull}, {"llama3-70b", 70552387584ull}, {"llama3.1-405b", 405849243648ull},
    {"mixtral-8x7b", 46701477888ull},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(presets); i++) {
    char *y = g_strdup_printf("workload:\n  kind: training\n  gpu: {memory_bandwidth: 28TB/s}\n"
                              "  model: {preset: %s, global_batch: 1}\n", presets[i].name);
    g = gen_ok(y, 1);
    uint32_t all[600], n = computes_of(g.d, EP(0), all, 600);
    cr_assert_eq(fab_dag_op(g.d, all[n - 1])->dur, presets[i].params, "%s: %llu parameters", presets[i].name,
                 (unsigned long long)fab_dag_op(g.d, all[n - 1])->dur);
    done(&g);
    g_free(y);
  }
  /* a key given wins over the preset's; the preset's kv_heads is checked against tp */
  g = gen_ok("workload:\n  kind: training\n  gpu: {memory_bandwidth: 28TB/s}\n"
             "  model: {preset: llama3-8b, layers: 2, vocab: 0, seq: 128, global_batch: 1}\n", 1);
  cr_assert_eq(computes_of(g.d, EP(0), c, 8), 5);
  cr_assert_eq(fab_dag_op(g.d, c[4])->dur, 2 * 218103808ull, "two Llama-3 8B layers, no embeddings");
  done(&g);
  expect_error("workload:\n  kind: training\n  parallelism: {tp: 16}\n  model: {preset: llama3-8b, global_batch: 1}\n",
               16, 1e12, "t.yaml:4:", "8 kv_heads must divide heads (32) and be divisible by tp (16");
  expect_error("workload:\n  kind: training\n  model: {preset: llama3-8b, params: 8B, global_batch: 1}\n", 1, 1e12,
               "t.yaml:3:", "give preset or params, not both");
  expect_error("workload:\n  kind: training\n  model: {preset: llama-9, global_batch: 1}\n", 1, 1e12, "t.yaml:3:",
               "llama3-8b");
  expect_error("workload:\n  kind: training\n  model: {layers: 2, hidden: 64, global_batch: 1}\n", 1, 1e12,
               "t.yaml:3:", "missing required key 'seq'");
}

Test(training, gpu_flops_from_yaml_and_from_the_cluster) {
  /* 989TFLOPS x 0.25 given in YAML overrides the cluster's 1 TFLOPS x 0.5 */
  Gen g = gen_ok(TINY "  steps: 1\n" "  parallelism: {dp: 1}\n", 1);
  fab_time_t base = fab_dag_op(g.d, 1)->dur; /* op 0 is the step mark */
  cr_assert_eq(fab_dag_op(g.d, 1)->kind, FAB_OP_COMPUTE);
  cr_assert_eq(base, 33554432);
  done(&g);
  g = gen_ok("workload:\n  kind: training\n  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 1}\n"
             "  gpu: {flops: 2.5TFLOPS, efficiency: 0.2}\n", 1);
  /* 16777216 FLOPs at 0.5 TFLOP/s: the same as the cluster's */
  cr_assert_eq(fab_dag_op(g.d, 1)->dur, 33554432);
  done(&g);
  g = gen_ok("workload:\n  kind: training\n  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 1}\n"
             "  gpu: {flops: 4e12}\n", 1);
  /* 4e12 x the cluster's 0.5 */
  cr_assert_eq(fab_dag_op(g.d, 1)->dur, 8388608);
  done(&g);
}

Test(training, microbatches_and_steps) {
  /* global_batch 6 / (micro_batch 2 x dp 1) = 3 microbatches; micro_batch 2
  ** doubles a microbatch's FLOPs. 2 steps. */
  Gen g = gen_ok("workload:\n  kind: training\n  steps: 2\n"
                 "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, micro_batch: 2, global_batch: 6}\n", 1);
  uint32_t c[64];
  uint32_t n = computes_of(g.d, EP(0), c, 64);
  cr_assert_eq(n, 2 * (3 * 4 + 1));
  cr_assert_eq(fab_dag_op(g.d, c[0])->dur, 2 * 33554432ull);
  cr_assert_eq(fab_dag_op(g.d, c[13])->step, 1);
  cr_assert_eq(fab_dag_op(g.d, c[12])->step, 0);
  cr_assert_eq(fab_dag_op(g.d, c[12])->mark, FAB_PHASE_OPT);
  const FabJobDef *j = &g_array_index(g.d->jobs, FabJobDef, 0);
  cr_assert(j->steps == 2 && j->microbatches == 3 && j->pp == 1, "job %u steps %u mb %u pp", j->steps,
            j->microbatches, j->pp);
  /* per step one STEP_BEGIN and one STEP_END; step 1 begins after step 0's end, which follows the optimizer */
  cr_assert_eq(count_ops(g.d, FAB_OP_MARK, FAB_MARK_STEP_BEGIN), 2);
  cr_assert_eq(count_ops(g.d, FAB_OP_MARK, FAB_MARK_STEP_END), 2);
  uint32_t b[2] = {0}, e[2] = {0}, nb = 0, ne = 0;
  for (uint32_t i = 0; i < fab_dag_len(g.d); i++) {
    const FabOp *o = fab_dag_op(g.d, i);
    if (o->kind != FAB_OP_MARK) continue;
    if (o->mark == FAB_MARK_STEP_BEGIN) {
      cr_assert_eq(o->step, nb);
      b[nb++] = i;
    }
    if (o->mark == FAB_MARK_STEP_END) {
      cr_assert_eq(o->step, ne);
      e[ne++] = i;
    }
    cr_assert_eq(o->src, EP(0));
  }
  cr_assert_eq(fab_dag_op(g.d, b[0])->ndeps, 0);
  cr_assert_eq(fab_dag_op(g.d, b[0])->start, 7000, "the job's start");
  cr_assert(depends_on(g.d, e[0], c[12]));
  cr_assert(depends_on(g.d, b[1], e[0]));
  cr_assert(depends_on(g.d, c[0], b[0]) && depends_on(g.d, c[13], b[1]));
  cr_assert(depends_on(g.d, e[1], c[25]));
  cr_assert_eq(e[1], fab_dag_len(g.d) - 1);
  done(&g);
}

Test(training, params_derive_a_shape) {
  /* 7B alone: cbrt(7e9 / (12 x 128^2)) = 32.9 -> 32 layers (a multiple of 8) */
  Gen g = gen_ok("workload:\n  kind: training\n  model: {params: 7B, seq: 16, global_batch: 1}\n", 1);
  cr_assert_eq(count_ops(g.d, FAB_OP_COMPUTE, FAB_PHASE_FWD), 32);
  /* the layers hold 7e9 parameters: the optimizer moves 28 B each at 2 TB/s = 98 ms (ffn is rounded) */
  uint32_t c[80];
  uint32_t n = computes_of(g.d, EP(0), c, 80);
  double opt = (double)fab_dag_op(g.d, c[n - 1])->dur;
  cr_assert(opt > 0.9999 * 98e9 && opt < 1.0001 * 98e9, "optimizer %.0f ps", opt);
  done(&g);
  /* with pp = 3 and layer_group 2 the layers become a multiple of 6: 30 */
  g = gen_ok("workload:\n  kind: training\n  layer_group: 2\n  parallelism: {pp: 3, microbatches: 1}\n"
             "  model: {params: 7B, seq: 16}\n", 3);
  cr_assert_eq(count_ops(g.d, FAB_OP_COMPUTE, FAB_PHASE_FWD), 15, "30 layers in blocks of 2");
  done(&g);
  /* params with layers and hidden: ffn = (params / L - 4h^2) / 2h = (1e6/2 - 65536) / 256 = 1697 */
  g = gen_ok("workload:\n  kind: training\n  model: {params: 1M, layers: 2, hidden: 128, seq: 8, global_batch: 1}\n"
             "  gpu: {memory_bandwidth: 16TB/s}\n", 1);
  n = computes_of(g.d, EP(0), c, 80);
  /* 2 x (65536 + 256 x 1697) = 999936 parameters x 28 B at 16e12 B/s = 1749888 ps */
  cr_assert_eq(fab_dag_op(g.d, c[n - 1])->dur, 1749888, "%llu", (unsigned long long)fab_dag_op(g.d, c[n - 1])->dur);
  done(&g);
}

Test(training, layer_group_merges_layers) {
  /* 8 layers in blocks of 4: 2 forward ops of 4 layers each */
  Gen g = gen_ok("workload:\n  kind: training\n  layer_group: 4\n"
                 "  model: {layers: 8, hidden: 64, ffn: 256, seq: 128, global_batch: 1}\n", 1);
  uint32_t c[16];
  uint32_t n = computes_of(g.d, EP(0), c, 16);
  cr_assert_eq(n, 5);
  cr_assert_eq(fab_dag_op(g.d, c[0])->dur, 4 * 33554432ull);
  cr_assert_eq(fab_dag_op(g.d, c[2])->dur, 8 * 33554432ull);
  done(&g);
}

/* ---- pipeline ------------------------------------------------------------ */

/* 4 stages of 1 layer, 8 microbatches, tp = dp = 1. */
#define PIPE                                                                                                      \
  "workload:\n"                                                                                                   \
  "  kind: training\n"                                                                                            \
  "  model: {layers: 4, hidden: 64, ffn: 256, seq: 128, micro_batch: 1, global_batch: 8}\n"                        \
  "  parallelism: {dp: 1, tp: 1, pp: 4}\n"

Test(training, one_f_one_b_order) {
  Gen g = gen_ok(PIPE, 4);
  /* stage s: min(3 - s, 8) warm-up forwards, 1F1B, then the rest backwards */
  const char *want[] = {"FFFFBFBFBFBFBBBB", "FFFBFBFBFBFBFBBB", "FFBFBFBFBFBFBFBB", "FBFBFBFBFBFBFBFB"};
  uint32_t c[4][17];
  for (uint32_t s = 0; s < 4; s++) {
    uint32_t n = computes_of(g.d, EP(s), c[s], 17);
    cr_assert_eq(n, 17);
    char seq[17] = {0};
    for (uint32_t i = 0; i < 16; i++) seq[i] = fab_dag_op(g.d, c[s][i])->mark == FAB_PHASE_FWD ? 'F' : 'B';
    cr_assert_str_eq(seq, want[s], "stage %u", s);
    cr_assert_eq(fab_dag_op(g.d, c[s][16])->mark, FAB_PHASE_OPT);
  }
  /* microbatch ids: forward j on stage s+1 waits for a flow whose sender is
  ** forward j on stage s; backward j on stage s for the flow from backward j on s+1 */
  for (uint32_t s = 0; s < 3; s++) {
    uint32_t fa[8], fb[8], ba[8], bb[8], nf = 0, nfb = 0, nb = 0, nbb = 0;
    for (uint32_t i = 0; i < 16; i++) {
      if (fab_dag_op(g.d, c[s][i])->mark == FAB_PHASE_FWD) fa[nf++] = c[s][i];
      else ba[nb++] = c[s][i];
      if (fab_dag_op(g.d, c[s + 1][i])->mark == FAB_PHASE_FWD) fb[nfb++] = c[s + 1][i];
      else bb[nbb++] = c[s + 1][i];
    }
    for (uint32_t j = 0; j < 8; j++) {
      const FabOp *o = fab_dag_op(g.d, fb[j]);
      gboolean found = FALSE;
      for (uint32_t k = 0; k < o->ndeps; k++) {
        const FabOp *f = fab_dag_op(g.d, fab_dag_dep(g.d, o, k));
        if (f->kind != FAB_OP_FLOW) continue;
        found = TRUE;
        cr_assert(f->src == EP(s) && f->dst == EP(s + 1));
        cr_assert(depends_on(g.d, fab_dag_dep(g.d, o, k), fa[j]), "stage %u forward %u: wrong activation", s + 1, j);
      }
      cr_assert(found, "stage %u forward %u waits for no activation", s + 1, j);
      o = fab_dag_op(g.d, ba[j]);
      found = FALSE;
      for (uint32_t k = 0; k < o->ndeps; k++) {
        const FabOp *f = fab_dag_op(g.d, fab_dag_dep(g.d, o, k));
        if (f->kind != FAB_OP_FLOW) continue;
        found = TRUE;
        cr_assert(f->src == EP(s + 1) && f->dst == EP(s));
        cr_assert(depends_on(g.d, fab_dag_dep(g.d, o, k), bb[j]), "stage %u backward %u: wrong gradient", s, j);
      }
      cr_assert(found, "stage %u backward %u waits for no gradient", s, j);
    }
  }
  const FabJobDef *j = &g_array_index(g.d->jobs, FabJobDef, 0);
  cr_assert(j->microbatches == 8 && j->pp == 4);
  done(&g);
}

Test(training, fewer_microbatches_than_stages) {
  /* m = 2 < pp - 1: warm-up is min(pp-1-s, m) */
  Gen g = gen_ok("workload:\n  kind: training\n"
                 "  model: {layers: 4, hidden: 64, ffn: 256, seq: 128, global_batch: 2}\n"
                 "  parallelism: {pp: 4}\n", 4);
  const char *want[] = {"FFBB", "FFBB", "FFBB", "FBFB"};
  for (uint32_t s = 0; s < 4; s++) {
    uint32_t c[8];
    cr_assert_eq(computes_of(g.d, EP(s), c, 8), 5);
    char seq[5] = {0};
    for (uint32_t i = 0; i < 4; i++) seq[i] = fab_dag_op(g.d, c[i])->mark == FAB_PHASE_FWD ? 'F' : 'B';
    cr_assert_str_eq(seq, want[s], "stage %u", s);
  }
  done(&g);
}

Test(training, pipeline_flows) {
  Gen g = gen_ok(PIPE "  steps: 2\n", 4);
  /* 2 (pp-1) m tp dp = 2 x 3 x 8 = 48 per step, each b s h B = 128 x 64 x 2 = 16384 bytes */
  uint32_t flows = 0;
  uint32_t per_step[2] = {0};
  for (uint32_t i = 0; i < fab_dag_len(g.d); i++) {
    const FabOp *o = fab_dag_op(g.d, i);
    if (o->kind != FAB_OP_FLOW) continue;
    flows++;
    per_step[o->step]++;
    cr_assert_eq(o->bytes, 16384);
    cr_assert(o->src >= EP(0) && o->src <= EP(3) && (o->dst == o->src + 1 || o->dst + 1 == o->src));
    cr_assert_geq(o->coll, 0);
    const FabCollDef *c = &g_array_index(g.d->colls, FabCollDef, o->coll);
    cr_assert_str_eq(c->op, "send-recv");
    cr_assert_str_eq(c->tag, "pp");
    cr_assert_eq(c->step, o->step);
    cr_assert_eq(c->bytes, 16384);
  }
  cr_assert_eq(flows, 96);
  cr_assert(per_step[0] == 48 && per_step[1] == 48);
  /* one definition per step, boundary, direction and microbatch: 2 x 3 x 2 x 8, one flow each */
  cr_assert_eq(count_colls(g.d, "pp", "send-recv"), 96);
  cr_assert_eq(g.d->colls->len, 96);
  uint32_t *uses = g_new0(uint32_t, g.d->colls->len);
  for (uint32_t i = 0; i < fab_dag_len(g.d); i++)
    if (fab_dag_op(g.d, i)->kind == FAB_OP_FLOW) uses[fab_dag_op(g.d, i)->coll]++;
  for (guint c = 0; c < g.d->colls->len; c++) cr_assert_eq(uses[c], 1, "pp definition %u carries one transfer", c);
  g_free(uses);
  cr_assert_eq(count_ops(g.d, FAB_OP_MARK, FAB_MARK_COLL_BEGIN), 0, "no collective marks for pp");
  done(&g);
}

/* ---- errors -------------------------------------------------------------- */

Test(training, error_parallelism_does_not_fit) {
  expect_error("workload:\n"
               "  kind: training\n"
               "  model: {layers: 4, hidden: 64, seq: 128, global_batch: 8}\n"
               "  parallelism: {dp: 2, tp: 2, pp: 2}\n",
               6, 1e12, "t.yaml:4:3: workload.parallelism:", "dp x tp x pp = 2 x 2 x 2 = 8, but the job has 6 ranks");
}

Test(training, error_unknown_keys) {
  expect_error("workload:\n"
               "  kind: training\n"
               "  model: {layers: 4, hidden: 64, seq: 128, global_batch: 8}\n"
               "  overlapp: true\n",
               1, 1e12, "t.yaml:4:3:", "unknown key 'overlapp'");
  expect_error("workload:\n"
               "  kind: training\n"
               "  model: {layers: 4, hidden: 64, seq: 128, global_batch: 8, hiden: 3}\n",
               1, 1e12, "t.yaml:3:61:", "unknown key 'hiden'");
  expect_error("workload:\n"
               "  kind: training\n"
               "  model: {layers: 4, hidden: 64, seq: 128, global_batch: 8}\n"
               "  parallelism: {dp: 1, zero: 1, sharding: 2}\n",
               1, 1e12, "t.yaml:4:33:", "unknown key 'sharding'");
  expect_error("workload:\n"
               "  kind: training\n"
               "  model: {layers: 4, hidden: 64, seq: 128, global_batch: 8}\n"
               "  gpu: {flop: 1}\n",
               1, 1e12, "t.yaml:4:9:", "unknown key 'flop'");
}

Test(training, caller_keys_are_accepted) {
  Gen g = gen_ok("workload:\n  kind: training\n  name: job-a\n  ranks: all\n  start: 10us\n"
                 "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 1}\n", 1);
  done(&g);
}

Test(training, error_ep_does_not_divide_dp) {
  expect_error("workload:\n"
               "  kind: training\n"
               "  model: {layers: 4, hidden: 64, seq: 128, global_batch: 8, experts: 6}\n"
               "  parallelism: {dp: 4, ep: 3}\n",
               4, 1e12, "t.yaml:4:28: workload.parallelism.ep:", "ep = 3 does not divide dp = 4");
}

Test(training, error_missing_gpu_flops) {
  expect_error("workload:\n"
               "  kind: training\n"
               "  model: {layers: 4, hidden: 64, seq: 128, global_batch: 8}\n",
               1, 0, "t.yaml:1:1: workload:", "missing gpu.flops");
  expect_error("workload:\n"
               "  kind: training\n"
               "  model: {layers: 4, hidden: 64, seq: 128, global_batch: 8}\n"
               "  gpu: {efficiency: 0.5}\n",
               1, 0, "t.yaml:4:3: workload.gpu:", "missing gpu.flops");
  expect_error("workload:\n"
               "  kind: training\n"
               "  model: {layers: 4, hidden: 64, seq: 128, global_batch: 8}\n"
               "  gpu: {flops: 989TFLOP}\n",
               1, 0, "t.yaml:4:16: workload.gpu.flops:", "is not a FLOP rate");
}

Test(training, error_shapes) {
  expect_error("workload:\n  kind: training\n  model: {layers: 6, hidden: 64, seq: 128, global_batch: 8}\n"
               "  parallelism: {pp: 4}\n",
               4, 1e12, "t.yaml:3:19: workload.model.layers:", "6 layers cannot be split evenly into pp = 4");
  expect_error("workload:\n  kind: training\n  model: {layers: 8, hidden: 64, seq: 128, global_batch: 8}\n"
               "  parallelism: {pp: 2}\n  layer_group: 3\n",
               2, 1e12, "t.yaml:5:16: workload.layer_group:", "layer_group = 3 does not divide the 4 layers");
  expect_error("workload:\n  kind: training\n  model: {layers: 8, hidden: 64, seq: 128, global_batch: 9}\n"
               "  parallelism: {dp: 2}\n",
               2, 1e12, "t.yaml:3:58: workload.model.global_batch:", "not a multiple of micro_batch x dp = 2");
  expect_error("workload:\n  kind: training\n  model: {params: 7X, seq: 128, global_batch: 8}\n",
               1, 1e12, "t.yaml:3:19: workload.model.params:", "not a parameter count");
  expect_error("workload:\n  kind: training\n  model: {hidden: 64, seq: 128, global_batch: 8}\n",
               1, 1e12, "t.yaml:3:3: workload.model:", "give params, or layers and hidden");
  expect_error("workload:\n  kind: training\n  model: {layers: 8, hidden: 64, seq: 128}\n",
               1, 1e12, "t.yaml:3:3: workload.model:", "global_batch");
  expect_error("workload:\n  kind: training\n  model: {layers: 8, hidden: 64, seq: 128, global_batch: 4}\n"
               "  parallelism: {microbatches: 3}\n",
               1, 1e12, "t.yaml:4:31: workload.parallelism.microbatches:", "but model.global_batch is 4");
  expect_error("workload:\n  kind: training\n  model: {layers: 8, hidden: 64, seq: 128, global_batch: 4}\n"
               "  parallelism: {dp: 1, ep: 2}\n",
               2, 1e12, "t.yaml:4:3: workload.parallelism:", "dp x tp x pp = 1 x 1 x 1 = 1");
  expect_error("workload:\n  kind: training\n  model: {layers: 8, hidden: 64, seq: 128, global_batch: 4}\n"
               "  parallelism: {dp: 2, ep: 2}\n",
               2, 1e12, "t.yaml:4:28: workload.parallelism.ep:", "needs an MoE model");
}

Test(training, error_too_many_buckets) {
  expect_error("workload:\n  kind: training\n  model: {params: 175B, seq: 128, global_batch: 2}\n"
               "  parallelism: {dp: 2}\n  bucket: 1KiB\n",
               2, 1e12, "t.yaml:5:11: workload.bucket:", "use a larger bucket");
}

Test(training, error_too_many_ops) {
  /* 4096 microbatches x 1024 layers x 2 = 8 million computes */
  expect_error("workload:\n  kind: training\n  model: {layers: 1024, hidden: 64, seq: 128, global_batch: 4096}\n",
               1, 1e12, "t.yaml:1:1: workload:", "raise layer_group");
}

/* ---- collectives (need workloads/collective.c) --------------------------- */

/* dp = 4, 4 layers of 49152 parameters: 98304 gradient bytes each, 393216 in
** all; global_batch 8 -> 2 microbatches. A rank's computes: F0..F3 B3..B0
** per microbatch, then the optimizer: the last microbatch's backward is
** c[12..15] = B3, B2, B1, B0. */
#define DP4                                                                                                       \
  "workload:\n"                                                                                                   \
  "  kind: training\n"                                                                                            \
  "  model: {layers: 4, hidden: 64, ffn: 256, seq: 128, micro_batch: 1, global_batch: 8}\n"                        \
  "  parallelism: {dp: 4}\n"

Test(training, dp_buckets_without_overlap) {
  /* ceil(393216 / 100000) = 4 buckets: 3 x 100000 + 93216; per step, both after the whole backward */
  Gen g = gen_ok(DP4 "  bucket: 100000\n  overlap: false\n  steps: 2\n", 4);
  int32_t c[16];
  uint32_t n = colls_tagged(g.d, "dp", c, 16);
  cr_assert_eq(n, 8, "%u dp collectives", n);
  cr_assert_eq(g.d->colls->len, 8, "nothing else");
  const uint64_t bytes[] = {100000, 100000, 100000, 93216};
  for (uint32_t i = 0; i < n; i++) {
    const FabCollDef *def = &g_array_index(g.d->colls, FabCollDef, c[i]);
    cr_assert_str_eq(def->op, "allreduce");
    cr_assert_eq(def->bytes, bytes[i % 4], "bucket %u: %llu bytes", i, (unsigned long long)def->bytes);
    cr_assert_eq(def->nranks, 4);
    cr_assert_eq(def->step, i / 4);
    for (uint32_t r = 0; r < 4; r++) {
      uint32_t comp[40];
      cr_assert_eq(computes_of(g.d, EP(r), comp, 40), 34);
      uint32_t last_bwd = comp[(i / 4) * 17 + 15], opt = comp[(i / 4) * 17 + 16];
      cr_assert_eq(fab_dag_op(g.d, last_bwd)->mark, FAB_PHASE_BWD);
      uint32_t b = coll_mark(g.d, c[i], FAB_MARK_COLL_BEGIN, EP(r));
      cr_assert(enters_after(g.d, b, last_bwd), "bucket %u on rank %u does not wait for the backward", i, r);
      if (i % 4) /* one after another on the communicator */
        cr_assert(enters_after(g.d, b, coll_mark(g.d, c[i - 1], FAB_MARK_COLL_END, EP(r))),
                  "bucket %u on rank %u does not wait for bucket %u", i, r, i - 1);
      cr_assert(depends_on(g.d, opt, coll_mark(g.d, c[i], FAB_MARK_COLL_END, EP(r))),
                "the optimizer does not wait for bucket %u on rank %u", i, r);
    }
  }
  done(&g);
}

/* Bucket i of a stage's collectives c[] on endpoint ep enters after compute op `on` (and, past the first,
** the bucket before it). */
static void bucket_waits_for(const FabDag *d, const int32_t *c, uint32_t i, uint32_t ep, uint32_t on) {
  uint32_t b = coll_mark(d, c[i], FAB_MARK_COLL_BEGIN, ep);
  cr_assert_eq(fab_dag_op(d, b)->ndeps, 1);
  uint32_t dep = fab_dag_dep(d, fab_dag_op(d, b), 0);
  if (i) {
    const FabOp *j = fab_dag_op(d, dep);
    cr_assert(j->kind == FAB_OP_MARK && j->mark == FAB_MARK_JOIN && j->ndeps == 2, "bucket %u on %u", i, ep);
    cr_assert_eq(fab_dag_dep(d, j, 1), coll_mark(d, c[i - 1], FAB_MARK_COLL_END, ep), "bucket %u on %u", i, ep);
    dep = fab_dag_dep(d, j, 0);
  }
  cr_assert_eq(dep, on, "bucket %u on endpoint %u waits for op %u, not compute op %u", i, ep, dep, on);
}

Test(training, dp_buckets_with_overlap) {
  /* a bucket of exactly one layer: bucket i waits for the last microbatch's backward of layer 3 - i only */
  Gen g = gen_ok(DP4 "  bucket: 98304\n", 4);
  int32_t c[8];
  cr_assert_eq(colls_tagged(g.d, "dp", c, 8), 4);
  for (uint32_t r = 0; r < 4; r++) {
    uint32_t comp[20];
    cr_assert_eq(computes_of(g.d, EP(r), comp, 20), 17);
    for (uint32_t i = 0; i < 4; i++) /* after its backward; a later one after a JOIN of it and the bucket before */
      bucket_waits_for(g.d, c, i, EP(r), comp[12 + i]);
  }
  done(&g);
  /* 150000-byte buckets: the first holds layer 3 and part of layer 2 (ready at B2),
  ** the second reaches into layer 0 (ready at B0), and so does the rest (93216) */
  g = gen_ok(DP4 "  bucket: 150000\n", 4);
  cr_assert_eq(colls_tagged(g.d, "dp", c, 8), 3);
  uint32_t comp[20];
  computes_of(g.d, EP(2), comp, 20);
  const uint32_t at[] = {13, 15, 15};
  const uint64_t bytes[] = {150000, 150000, 93216};
  for (uint32_t i = 0; i < 3; i++) {
    cr_assert_eq(g_array_index(g.d->colls, FabCollDef, c[i]).bytes, bytes[i]);
    uint32_t b = coll_mark(g.d, c[i], FAB_MARK_COLL_BEGIN, EP(2));
    uint32_t on = fab_dag_dep(g.d, fab_dag_op(g.d, b), 0);
    cr_assert_eq(i ? fab_dag_dep(g.d, fab_dag_op(g.d, on), 0) : on, comp[at[i]], "bucket %u", i);
  }
  done(&g);
}

Test(training, layer_group_keeps_buckets_overlapping) {
  /* DP4's 4 layers as one block of 4, a bucket a layer (98304 B): the last
  ** microbatch's backward (4 x 67108864 ps) is cut where each layer's share
  ** of it ends, and bucket i is ready after part i, as with layer_group 1
  ** (before, all four waited for the whole block) */
  Gen g = gen_ok(DP4 "  bucket: 98304\n  layer_group: 4\n", 4);
  int32_t c[8];
  cr_assert_eq(colls_tagged(g.d, "dp", c, 8), 4);
  for (uint32_t r = 0; r < 4; r++) {
    uint32_t comp[20];
    cr_assert_eq(computes_of(g.d, EP(r), comp, 20), 8, "F B F B/4 B/4 B/4 B/4 O");
    cr_assert_eq(fab_dag_op(g.d, comp[1])->dur, 4 * 67108864ull, "the first microbatch's backward is one op");
    for (uint32_t i = 0; i < 4; i++) {
      cr_assert_eq(fab_dag_op(g.d, comp[3 + i])->dur, 67108864, "part %u", i);
      cr_assert_eq(fab_dag_op(g.d, comp[3 + i])->mark, FAB_PHASE_BWD);
      if (i) cr_assert(depends_on(g.d, comp[3 + i], comp[2 + i]));
      bucket_waits_for(g.d, c, i, EP(r), comp[3 + i]);
    }
    cr_assert(depends_on(g.d, comp[7], coll_mark(g.d, c[3], FAB_MARK_COLL_END, EP(r))), "the optimizer");
  }
  const char *note = g_array_index(g.d->jobs, FabJobDef, 0).note; /* what explain says */
  cr_assert(note && strstr(note, "blocks of 4 layers (1 per stage)") && strstr(note, "4 buckets of up to 98304 B") &&
            strstr(note, "its layers' share of their block's compute"), "%s", note ? note : "(none)");
  done(&g);
  /* tp 2: a layer's attention and MLP are 4194304 FLOPs each per rank, so
  ** the block's backward is MLP 67108864 ps, a TP allreduce, attention
  ** 67108864 ps, a TP allreduce; a rank's gradient is 49152 B a layer.
  ** Layer 1 ends half-way through the MLP part, layer 2 with it, layer 3
  ** half-way through the attention: four parts of 33554432 ps */
  g = gen_ok("workload:\n  kind: training\n  bucket: 49152\n  layer_group: 4\n  parallelism: {dp: 2, tp: 2}\n"
             "  model: {layers: 4, hidden: 64, ffn: 256, seq: 128, micro_batch: 1, global_batch: 4}\n", 4);
  int32_t all[8];
  cr_assert_eq(colls_tagged(g.d, "dp", all, 8), 8, "4 buckets on each of the 2 dp groups");
  for (uint32_t r = 0; r < 4; r++) {
    uint32_t comp[20], n = 0;
    for (uint32_t i = 0; i < 8; i++) /* rank r's: those with a mark on it */
      for (uint32_t o = 0; o < fab_dag_len(g.d); o++)
        if (fab_dag_op(g.d, o)->kind == FAB_OP_MARK && fab_dag_op(g.d, o)->coll == all[i] &&
            fab_dag_op(g.d, o)->src == EP(r)) {
          c[n++] = all[i];
          break;
        }
    cr_assert_eq(n, 4);
    cr_assert_eq(computes_of(g.d, EP(r), comp, 20), 11, "FF BB FF BBBB O");
    for (uint32_t i = 0; i < 4; i++) {
      cr_assert_eq(fab_dag_op(g.d, comp[6 + i])->dur, 33554432, "part %u", i);
      bucket_waits_for(g.d, c, i, EP(r), comp[6 + i]);
    }
    cr_assert(!depends_on(g.d, comp[8], comp[7]), "a TP allreduce between the MLP's parts and the attention's");
  }
  done(&g);
  /* without overlap, nothing is cut */
  g = gen_ok(DP4 "  bucket: 98304\n  layer_group: 4\n  overlap: false\n", 4);
  uint32_t comp[20];
  cr_assert_eq(computes_of(g.d, EP(0), comp, 20), 5);
  done(&g);
}

/* A vocabulary of 1000 on TINY: the logits are 2 x 128 x 64 x 1000 =
** 16384000 FLOPs = 32768000 ps forward, twice that backward, on the last
** block, merged with its layers' compute (tp 1: no collective between);
** the embedding table and the output layer hold 64000 parameters each,
** so the optimizer moves (2 x 49152 + 2 x 64000) x 28 B = 6336512 ps at 1
** TB/s, or 4544512 ps tied (one table). */
Test(training, vocabulary_embeddings_and_loss_by_hand) {
  Gen g = gen_ok("workload:\n  kind: training\n  gpu: {memory_bandwidth: 1TB/s}\n"
                 "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 1, vocab: 1000}\n", 1);
  uint32_t c[16];
  cr_assert_eq(computes_of(g.d, EP(0), c, 16), 5);
  const fab_time_t dur[] = {33554432, 33554432 + 32768000, 67108864 + 65536000, 67108864, 6336512};
  for (uint32_t i = 0; i < 5; i++)
    cr_assert_eq(fab_dag_op(g.d, c[i])->dur, dur[i], "op %u: %llu ps", i, (unsigned long long)fab_dag_op(g.d, c[i])->dur);
  done(&g);
  g = gen_ok("workload:\n  kind: training\n  gpu: {memory_bandwidth: 1TB/s}\n"
             "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 1, vocab: 1000, tie_embeddings: true}\n", 1);
  cr_assert_eq(computes_of(g.d, EP(0), c, 16), 5);
  cr_assert_eq(fab_dag_op(g.d, c[4])->dur, 4544512, "tied: one table");
  done(&g);
  /* dp 2, 128000-byte buckets (a rank's gradient: 226304 B a block): the output layer's is the first bucket,
  ** ready when the logits' backward (65536000 ps of 132644864) is done; the other three wait for block 0 */
  g = gen_ok("workload:\n  kind: training\n  bucket: 128000\n  parallelism: {dp: 2}\n"
             "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 2, vocab: 1000}\n", 2);
  int32_t b[8];
  cr_assert_eq(colls_tagged(g.d, "dp", b, 8), 4);
  const uint64_t bytes[] = {128000, 128000, 128000, 68608};
  for (uint32_t r = 0; r < 2; r++) {
    cr_assert_eq(computes_of(g.d, EP(r), c, 16), 6, "F0 F1 B1/2 B1/2 B0 O");
    cr_assert_eq(fab_dag_op(g.d, c[2])->dur, 65536000);
    cr_assert_eq(fab_dag_op(g.d, c[3])->dur, 67108864);
    for (uint32_t i = 0; i < 4; i++) {
      cr_assert_eq(g_array_index(g.d->colls, FabCollDef, b[i]).bytes, bytes[i]);
      bucket_waits_for(g.d, b, i, EP(r), c[i ? 4 : 2]);
    }
  }
  done(&g);
  /* tp 2: per microbatch and tp group, forward: the embedding's allreduce (b s h B = 16384 B), two per layer,
  ** the loss's three of b s x 4 = 512 B; backward: the output layer's input gradient, two per layer */
  g = gen_ok("workload:\n  kind: training\n  parallelism: {tp: 2}\n"
             "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 1, vocab: 1000}\n", 2);
  int32_t t[32];
  cr_assert_eq(colls_tagged(g.d, "tp", t, 32), 13);
  uint32_t small = 0;
  for (uint32_t i = 0; i < 13; i++) {
    uint64_t by = g_array_index(g.d->colls, FabCollDef, t[i]).bytes;
    cr_assert(by == 16384 || by == 512, "%llu B", (unsigned long long)by);
    small += by == 512;
  }
  cr_assert_eq(small, 3);
  cr_assert_eq(computes_of(g.d, EP(0), c, 16), 11, "attn mlp attn mlp logits | logits mlp attn mlp attn | opt");
  cr_assert_eq(fab_dag_op(g.d, c[4])->dur, 16384000, "the logits, after the layer's TP allreduce");
  cr_assert_eq(fab_dag_op(g.d, c[5])->dur, 32768000, "their backward, first");
  done(&g);
}

Test(training, vocabulary_errors_and_params) {
  expect_error("workload:\n  kind: training\n  model: {params: 1M, seq: 128, global_batch: 1, vocab: 1000}\n", 1,
               1e12, "t.yaml:3:", "vocab with params needs hidden");
  expect_error("workload:\n  kind: training\n  model: {params: 100K, hidden: 64, seq: 128, global_batch: 1, "
               "vocab: 1000}\n", 1, 1e12, "t.yaml:3:", "fewer than the embeddings' 128000");
  /* params counts the embeddings: 2 x 64000 of 1M leave 872000 to 2 layers: ffn = (436000 - 16384) / 128 =
  ** 3278.25, rounded to 3278, so the model holds 2 x (16384 + 128 x 3278) + 128000 = 999936 parameters */
  Gen g = gen_ok("workload:\n  kind: training\n  gpu: {memory_bandwidth: 1TB/s}\n"
                 "  model: {params: 1M, layers: 2, hidden: 64, seq: 128, global_batch: 1, vocab: 1000}\n", 1);
  uint32_t c[16];
  cr_assert_eq(computes_of(g.d, EP(0), c, 16), 5);
  cr_assert_eq(fab_dag_op(g.d, c[4])->dur, 27998208, "999936 parameters x 28 B at 1 TB/s");
  done(&g);
  /* tied over several stages: nothing is missing (test_train_groups.c: the copies' allreduce); tied without a
  ** vocabulary does nothing */
  char *w = warnings_of("workload:\n  kind: training\n  parallelism: {pp: 2}\n  model: {layers: 2, hidden: 64, "
                        "seq: 128, global_batch: 1, vocab: 1000, tie_embeddings: true}\n", 2);
  cr_assert_str_empty(w);
  g_free(w);
  w = warnings_of("workload:\n  kind: training\n  model: {layers: 2, hidden: 64, seq: 128, global_batch: 1, "
                  "tie_embeddings: true}\n", 1);
  cr_assert(strstr(w, "workload.model.tie_embeddings: has no effect: the model has no vocabulary"), "%s", w);
  g_free(w);
  w = warnings_of("workload:\n  kind: training\n  model: {layers: 2, hidden: 64, seq: 128, global_batch: 1, "
                  "vocab: 1000, tie_embeddings: true}\n", 1);
  cr_assert_str_empty(w, "one stage: the table is shared, nothing is missing");
  g_free(w);
}

/* Recomputation on TINY: a layer's forward is 33554432 ps, its core
** attention (4 b s^2 h = 4194304 FLOPs) 8388608 ps. Selective adds the
** core attention to each backward (67108864 + 8388608 ps), full the whole
** forward (67108864 + 33554432 ps), with its TP allreduces again. */
Test(training, recompute_by_hand) {
  static const struct { const char *mode; fab_time_t bwd; uint32_t tp_colls; } cases[] = {
    {"none", 67108864, 8}, {"selective", 67108864 + 8388608, 8}, {"full", 67108864 + 33554432, 12},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    char *y = g_strdup_printf(TINY "  recompute: %s\n", cases[i].mode);
    Gen g = gen_ok(y, 1);
    uint32_t c[8];
    cr_assert_eq(computes_of(g.d, EP(0), c, 8), 5);
    cr_assert_eq(fab_dag_op(g.d, c[0])->dur, 33554432, "%s: the forward is unchanged", cases[i].mode);
    cr_assert_eq(fab_dag_op(g.d, c[2])->dur, cases[i].bwd, "%s: %llu ps", cases[i].mode,
                 (unsigned long long)fab_dag_op(g.d, c[2])->dur);
    done(&g);
    g_free(y);
    /* tp 2: per layer 2 TP allreduces forward, 2 backward, and with full 2 more in the forward run again */
    y = g_strdup_printf("workload:\n  kind: training\n  parallelism: {tp: 2}\n  recompute: %s\n"
                        "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 1}\n", cases[i].mode);
    g = gen_ok(y, 2);
    int32_t t[16];
    cr_assert_eq(colls_tagged(g.d, "tp", t, 16), cases[i].tp_colls, "%s", cases[i].mode);
    done(&g);
    g_free(y);
  }
  /* dp 4, layer_group 4, full: the last backward (4 x 100663296 ps) is still cut a layer's share at a time */
  Gen g = gen_ok(DP4 "  bucket: 98304\n  layer_group: 4\n  recompute: full\n", 4);
  uint32_t comp[20];
  cr_assert_eq(computes_of(g.d, EP(0), comp, 20), 8);
  for (uint32_t i = 0; i < 4; i++) cr_assert_eq(fab_dag_op(g.d, comp[3 + i])->dur, 100663296, "part %u", i);
  done(&g);
}

Test(training, tp_allreduces) {
  /* tp = 4, 2 layers, 2 microbatches: 2 allreduces per layer forward and 2
  ** backward = 16, of b s h B = 16384 bytes over 4 ranks. attention forward
  ** (2 x 128 x 16384 + 4 x 128^2 x 64) / 4 = 2097152 FLOPs = 4194304 ps; the
  ** MLP 2 x 128 x 32768 / 4 the same. */
  Gen g = gen_ok("workload:\n  kind: training\n"
                 "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 2}\n"
                 "  parallelism: {tp: 4}\n", 4);
  int32_t c[32];
  cr_assert_eq(colls_tagged(g.d, "tp", c, 32), 16);
  cr_assert_eq(g.d->colls->len, 16);
  for (uint32_t i = 0; i < 16; i++) {
    const FabCollDef *def = &g_array_index(g.d->colls, FabCollDef, c[i]);
    cr_assert_str_eq(def->op, "allreduce");
    cr_assert_eq(def->bytes, 16384);
    cr_assert_eq(def->nranks, 4);
  }
  for (uint32_t r = 0; r < 4; r++) {
    uint32_t comp[20];
    cr_assert_eq(computes_of(g.d, EP(r), comp, 20), 2 * 2 * 4 + 1);
    for (uint32_t i = 0; i < 16; i++) {
      const FabOp *o = fab_dag_op(g.d, comp[i]);
      cr_assert_eq(o->dur, (o->mark == FAB_PHASE_FWD ? 1 : 2) * 4194304ull, "op %u", i);
    }
    /* the MLP forward of layer 0 waits for the attention's allreduce on this rank */
    uint32_t mlp = comp[1], e = coll_mark(g.d, c[0], FAB_MARK_COLL_END, EP(r));
    cr_assert(depends_on(g.d, mlp, e));
    cr_assert(depends_on(g.d, coll_mark(g.d, c[0], FAB_MARK_COLL_BEGIN, EP(r)), comp[0]));
  }
  done(&g);
}

Test(training, pipeline_flows_with_tp_and_dp) {
  /* pp = 2, tp = 2, dp = 2; 4 microbatches: 2 x 1 x 4 x 2 x 2 = 32 flows, of 16384 / tp = 8192 bytes,
  ** from job rank r to r + 4 (forward) and back */
  Gen g = gen_ok("workload:\n  kind: training\n"
                 "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 8}\n"
                 "  parallelism: {dp: 2, tp: 2, pp: 2}\n", 8);
  uint32_t flows = 0, fwd = 0;
  for (uint32_t i = 0; i < fab_dag_len(g.d); i++) {
    const FabOp *o = fab_dag_op(g.d, i);
    if (o->kind != FAB_OP_FLOW || o->coll < 0) continue;
    const FabCollDef *c = &g_array_index(g.d->colls, FabCollDef, o->coll);
    if (!c->tag || !g_str_equal(c->tag, "pp")) continue;
    flows++;
    cr_assert_eq(o->bytes, 8192);
    cr_assert(o->dst == o->src + 4 || o->src == o->dst + 4, "%u -> %u", o->src, o->dst);
    fwd += o->dst == o->src + 4;
  }
  cr_assert_eq(flows, 32);
  cr_assert_eq(fwd, 16);
  cr_assert_eq(count_colls(g.d, "pp", NULL), 8, "1 boundary x 2 directions x 4 microbatches");
  /* tp: 2 layers / 2 stages x 4 x 4 microbatches per (stage, dp) group = 16, x 4 groups */
  cr_assert_eq(count_colls(g.d, "tp", "allreduce"), 64);
  /* dp: one bucket per (stage, tp rank) */
  cr_assert_eq(count_colls(g.d, "dp", "allreduce"), 4);
  done(&g);
}

Test(training, moe_all_to_all) {
  /* 4 experts, ep = 2 = dp, moe_every 2: layer 0 is MoE, layer 1 dense; 1
  ** microbatch: 4 all-to-alls (2 forward, 2 backward) of b s h B k = 32768
  ** bytes over 2 ranks. Gradients: dense (2 x 4h^2 + 2hf) x 2 B = 131072 over
  ** dp in one bucket; experts (2 per rank) over dp / ep = 1 rank: none. */
  Gen g = gen_ok("workload:\n  kind: training\n"
                 "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 2, experts: 4, moe_every: 2}\n"
                 "  parallelism: {dp: 2, ep: 2}\n", 2);
  int32_t c[8];
  cr_assert_eq(colls_tagged(g.d, "ep", c, 8), 4);
  for (uint32_t i = 0; i < 4; i++) {
    const FabCollDef *def = &g_array_index(g.d->colls, FabCollDef, c[i]);
    cr_assert_str_eq(def->op, "all-to-all");
    cr_assert_eq(def->bytes, 32768);
    cr_assert_eq(def->nranks, 2);
  }
  cr_assert_eq(colls_tagged(g.d, "dp", c, 8), 1);
  cr_assert_eq(g_array_index(g.d->colls, FabCollDef, c[0]).bytes, 131072);
  /* MoE forward: attention (8388608 FLOPs: 16777216 ps), then the experts, top 2 of 2 x 128 x 32768 FLOPs each */
  uint32_t comp[16];
  cr_assert_eq(computes_of(g.d, EP(1), comp, 16), 2 + 1 + 1 + 2 + 1,
               "MoE layer: 2 computes each way (around the all-to-alls), dense layer 1, optimizer 1");
  cr_assert_eq(fab_dag_op(g.d, comp[0])->dur, 16777216);
  cr_assert_eq(fab_dag_op(g.d, comp[1])->dur, 33554432);
  done(&g);
  /* dp = 4, ep = 2: 2 ep groups; expert gradients 2 experts x 2hf x 2 B = 131072 over dp / ep = 2 ranks */
  g = gen_ok("workload:\n  kind: training\n"
             "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 4, experts: 4, moe_every: 2}\n"
             "  parallelism: {dp: 4, ep: 2}\n", 4);
  cr_assert_eq(count_colls(g.d, "ep", "all-to-all"), 8);
  cr_assert_eq(colls_tagged(g.d, "dp", c, 8), 3);
  uint32_t n4 = 0, n2 = 0;
  for (uint32_t i = 0; i < 3; i++) {
    const FabCollDef *def = &g_array_index(g.d->colls, FabCollDef, c[i]);
    cr_assert_eq(def->bytes, 131072);
    n4 += def->nranks == 4, n2 += def->nranks == 2;
  }
  cr_assert(n4 == 1 && n2 == 2, "%u over dp, %u over expert dp", n4, n2);
  done(&g);
  /* ep = 1: no all-to-all, all experts' gradients with the rest */
  g = gen_ok("workload:\n  kind: training\n"
             "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 2, experts: 4, moe_every: 2}\n"
             "  parallelism: {dp: 2}\n", 2);
  cr_assert_eq(count_colls(g.d, "ep", NULL), 0);
  cr_assert_eq(colls_tagged(g.d, "dp", c, 8), 1);
  cr_assert_eq(g_array_index(g.d->colls, FabCollDef, c[0]).bytes, 131072 + 4 * 65536);
  done(&g);
}

Test(training, zero1_reduce_scatter_then_allgather) {
  /* dp = 2, bucket one layer: 4 reduce-scatters, then after the optimizer 4 allgathers; the step ends after them */
  Gen g = gen_ok("workload:\n  kind: training\n"
                 "  model: {layers: 4, hidden: 64, ffn: 256, seq: 128, global_batch: 2}\n"
                 "  parallelism: {dp: 2, zero: 1}\n  bucket: 98304\n", 2);
  cr_assert_eq(count_colls(g.d, "dp", "reduce-scatter"), 4);
  cr_assert_eq(count_colls(g.d, "dp", NULL), 4);
  int32_t c[8];
  cr_assert_eq(colls_tagged(g.d, "zero", c, 8), 4);
  uint32_t comp[20];
  cr_assert_eq(computes_of(g.d, EP(0), comp, 20), 9);
  /* optimizer: 4 x 49152 / dp 2 parameters x 28 B at 2e12 B/s = 1376256 ps */
  cr_assert_eq(fab_dag_op(g.d, comp[8])->dur, 1376256);
  uint32_t end = FAB_OP_NONE;
  for (uint32_t i = 0; i < fab_dag_len(g.d); i++)
    if (fab_dag_op(g.d, i)->kind == FAB_OP_MARK && fab_dag_op(g.d, i)->mark == FAB_MARK_STEP_END &&
        fab_dag_op(g.d, i)->src == EP(0))
      end = i;
  int32_t rs[8];
  cr_assert_eq(colls_tagged(g.d, "dp", rs, 8), 4);
  const uint32_t end_rs = coll_mark(g.d, rs[3], FAB_MARK_COLL_END, EP(0));
  for (uint32_t i = 0; i < 4; i++) {
    const FabCollDef *def = &g_array_index(g.d->colls, FabCollDef, c[i]);
    cr_assert_str_eq(def->op, "allgather");
    cr_assert_eq(def->bytes, 98304);
    uint32_t b = coll_mark(g.d, c[i], FAB_MARK_COLL_BEGIN, EP(0));
    cr_assert(enters_after(g.d, b, comp[8]), "allgather %u after the optimizer", i);
    /* after the last reduce-scatter, then one after another */
    cr_assert(enters_after(g.d, b, i ? coll_mark(g.d, c[i - 1], FAB_MARK_COLL_END, EP(0)) : end_rs), "allgather %u", i);
    cr_assert(depends_on(g.d, end, coll_mark(g.d, c[i], FAB_MARK_COLL_END, EP(0))));
  }
  done(&g);
}

Test(training, zero3_gathers_per_layer_and_microbatch) {
  /* dp = 2, 2 layers, 2 microbatches: an allgather of a layer (98304 bytes)
  ** before each forward and backward = 8, a reduce-scatter after each
  ** backward = 4; no buckets */
  Gen g = gen_ok("workload:\n  kind: training\n"
                 "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 4}\n"
                 "  parallelism: {dp: 2, zero: 3}\n", 2);
  cr_assert_eq(count_colls(g.d, "zero", "allgather"), 8);
  cr_assert_eq(count_colls(g.d, "zero", "reduce-scatter"), 4);
  cr_assert_eq(count_colls(g.d, "dp", NULL), 0);
  int32_t c[16];
  cr_assert_eq(colls_tagged(g.d, "zero", c, 16), 12);
  for (uint32_t i = 0; i < 12; i++) cr_assert_eq(g_array_index(g.d->colls, FabCollDef, c[i]).bytes, 98304);
  /* every compute of a layer waits for its gather: the first forward for the first allgather */
  uint32_t comp[16];
  cr_assert_eq(computes_of(g.d, EP(1), comp, 16), 9);
  cr_assert(depends_on(g.d, comp[0], coll_mark(g.d, c[0], FAB_MARK_COLL_END, EP(1))));
  uint32_t waits = 0;
  for (uint32_t k = 0; k < 8; k++)
    for (uint32_t i = 0; i < 12; i++)
      if (g_str_equal(g_array_index(g.d->colls, FabCollDef, c[i]).op, "allgather"))
        waits += depends_on(g.d, comp[k], coll_mark(g.d, c[i], FAB_MARK_COLL_END, EP(1)));
  cr_assert_eq(waits, 8, "each of the 8 layer computes waits for one gather");
  /* optimizer: 2 x 49152 / 2 x 28 B at 2e12 B/s */
  cr_assert_eq(fab_dag_op(g.d, comp[8])->dur, 688128);
  done(&g);
  /* fsdp is the same */
  g = gen_ok("workload:\n  kind: training\n"
             "  model: {layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 4}\n"
             "  parallelism: {dp: 2, zero: fsdp}\n", 2);
  cr_assert_eq(count_colls(g.d, "zero", "allgather"), 8);
  done(&g);
}

Test(training, collective_settings_and_step_numbers) {
  Gen g = gen_ok(DP4 "  bucket: 98304\n  steps: 3\n  algorithm: ring\n  protocol: simple\n  channels: 2\n"
                 "  chunk: 16KiB\n", 4);
  int32_t c[16];
  cr_assert_eq(colls_tagged(g.d, "dp", c, 16), 12);
  for (uint32_t i = 0; i < 12; i++) {
    const FabCollDef *def = &g_array_index(g.d->colls, FabCollDef, c[i]);
    cr_assert_str_eq(def->algorithm, "ring");
    cr_assert_str_eq(def->protocol, "simple");
    cr_assert_eq(def->channels, 2);
    cr_assert_eq(def->chunk, 16384);
    cr_assert_eq(def->step, i / 4);
    cr_assert_eq(fab_dag_op(g.d, coll_mark(g.d, c[i], FAB_MARK_COLL_BEGIN, EP(3)))->step, i / 4);
  }
  done(&g);
}

Test(training, collective_error_leaves_the_dag_as_it_was) {
  /* collnet without SHARP cannot run: the error points at `algorithm`, and nothing is added */
  Gen g = gen(DP4 "  algorithm: collnet\n", 4);
  cr_assert(!g.ok);
  cr_assert(g_str_has_prefix(g.err->message, "t.yaml:5:14: workload.algorithm:"), "%s", g.err->message);
  cr_assert(strstr(g.err->message, "dp allreduce"), "%s", g.err->message);
  cr_assert_eq(fab_dag_len(g.d), 0);
  cr_assert_eq(fab_dag_deps_len(g.d), 0);
  cr_assert_eq(g.d->colls->len, 0);
  cr_assert_eq(g_array_index(g.d->jobs, FabJobDef, 0).steps, 0);
  done(&g);
}

/* ---- made as the run goes ------------------------------------------------ */

typedef struct TFeed {
  FabTrainGen *g;
  uint32_t batches;
} TFeed;

static bool tfeed_more(void *ctx, FabDag *d) {
  (void)d;
  TFeed *f = ctx;
  f->batches++;
  int more = fab_training_gen_more(f->g, 64, NULL);
  cr_assert_geq(more, 0);
  return more > 0;
}

/* `yaml` on n ranks made whole (fab_training_build) and round by round
** through the DAG's `more` (dag.h's contract checked on every op): the same
** ops, fields and dependencies, in the same order. Returns the batches. */
static uint32_t same_unfolded(const char *yaml, uint32_t n) {
  Gen w = gen_ok(yaml, n), u;
  FabTrainIn in;
  uint16_t job;
  const FabCfgNode *wl = prepare(yaml, n, &u, &in, &job);
  cr_assert(u.ok, "%s", u.err ? u.err->message : "?");
  FabDag *d = u.d;
  FabTrainGpu gpu = {1e12, 0.5, 16000000000000ull}; /* gen()'s */
  TFeed f = {fab_training_begin(&in, wl, d, &env, g_array_index(d->jobs, FabJobDef, job).ranks, n, job, &gpu, true,
                                &u.err), 0};
  cr_assert_not_null(f.g, "%s", u.err ? u.err->message : "?");
  cr_assert(fab_training_gen_unfolds(f.g), "stages alike: it unfolds");
  cr_assert_eq(fab_dag_len(d), 0, "nothing made at the start");
  fab_dag_set_more(d, tfeed_more, &f, NULL);
  while (fab_dag_more(d)) continue;
  testdag_same(w.d, d, "a training job");
  double est = fab_training_gen_estimate(f.g), made = fab_dag_len(d);
  cr_assert(est >= 0.5 * made && est <= 2 * made, "the estimate %.0f is not near the %.0f ops made", est, made);
  fab_training_gen_free(f.g);
  done(&u);
  done(&w);
  return f.batches;
}

Test(training, made_round_by_round_is_made_whole) {
  static const char *const cases[] = {
    /* tp 2, pp 2, dp 2; DP rings over the network, two steps */
    "workload:\n  kind: training\n  model: {layers: 4, hidden: 256, seq: 256, micro_batch: 1, global_batch: 8}\n"
    "  parallelism: {tp: 2, pp: 2, dp: 2}\n  bucket: 300KiB\n  steps: 2\n  algorithm: ring\n",
    /* no overlap, ZeRO-1: reduce-scatters, the optimizer, allgathers */
    "workload:\n  kind: training\n  model: {layers: 4, hidden: 256, seq: 256, micro_batch: 1, global_batch: 8}\n"
    "  parallelism: {pp: 2, dp: 4, zero: 1}\n  bucket: 200KiB\n  overlap: false\n  steps: 2\n  algorithm: ring\n",
    /* ZeRO-3 on a pipeline */
    "workload:\n  kind: training\n  model: {layers: 4, hidden: 256, seq: 256, micro_batch: 1, global_batch: 12}\n"
    "  parallelism: {pp: 2, dp: 4, zero: 3}\n  algorithm: ring\n",
    /* MoE with ep 2: expert gradients over edp */
    "workload:\n  kind: training\n  model: {layers: 4, hidden: 256, seq: 256, micro_batch: 1, global_batch: 8, experts: 4}\n"
    "  parallelism: {pp: 2, dp: 4, ep: 2}\n  bucket: 1MiB\n",
    /* blocks of 2 layers, one of them MoE, whose last backward is cut where buckets are ready */
    "workload:\n  kind: training\n  model: {layers: 8, hidden: 256, seq: 256, micro_batch: 1, global_batch: 8, experts: 4,"
    " moe_every: 2}\n  parallelism: {pp: 2, dp: 4, ep: 2}\n  bucket: 300KiB\n  layer_group: 2\n  recompute: full\n",
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    uint32_t b = same_unfolded(cases[c], 8);
    cr_assert_gt(b, 4, "case %zu: %u batches", c, b);
  }
}

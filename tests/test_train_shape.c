/*
** Model shapes beyond a dense transformer's (workloads/train_plan.c): multi-
** head latent attention (kv_lora_rank and its head dims), MoE layers with an
** expert width of their own (moe_ffn), shared experts and dense first layers,
** and the DeepSeek-V3 preset, each worked out by hand on a tiny model.
*/
#include <criterion/criterion.h>
#include <string.h>

#include "testtrain.h"

#define WL "workload:\n  kind: training\n  gpu: {memory_bandwidth: 1TB/s}\n"

/* h 64, 2 heads, q rank 16, kv rank 8, head dims qk 16 + rope 8, v 32; seq 128, b 1 (128 tokens). Weights:
** Q 64 x 16 + 16 x 2 (16 + 8) = 1792, K/V 64 x (8 + 8) + 8 x 2 (16 + 32) = 1792, O 2 x 32 x 64 = 4096: 7680.
** Forward: projections 2 x 128 x 7680 = 1966080, core 2 x 128^2 x 2 (16 + 8) + 2 x 128^2 x 2 x 32 = 3670016,
** the gelu MLP 2 x 128 x 2 x 64 x 256 = 8388608: 14024704 FLOPs, 28049408 ps at 1 TFLOPS x 0.5. */
#define MLA_Q(q) "  model: {layers: 2, hidden: 64, ffn: 256, heads: 2, q_lora_rank: " #q ", kv_lora_rank: 8, " \
                 "qk_head_dim: 16, qk_rope_head_dim: 8, v_head_dim: 32, seq: 128, global_batch: 1"
#define MLA MLA_Q(16)

Test(train_shape, latent_attention_by_hand) {
  Gen g = gen_ok(WL MLA "}\n", 1);
  uint32_t c[8];
  cr_assert_eq(computes_of(g.d, EP(0), c, 8), 5);
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(fab_dag_op(g.d, c[i])->dur, 28049408);
    cr_assert_eq(fab_dag_op(g.d, c[2 + i])->dur, 2 * 28049408);
  }
  /* the optimizer: 2 x (7680 + 32768) parameters x 28 B at 1 TB/s */
  cr_assert_eq(fab_dag_op(g.d, c[4])->dur, 2 * 40448 * 28);
  const char *note = g_array_index(g.d->jobs, FabJobDef, 0).note;
  cr_assert(strstr(note, "attention 1.875 h^2 (latent: q rank 16, kv rank 8, 2 heads; core attention x 0.875)"), "%s",
            note);
  done(&g);
  /* without a query rank, Q is one 64 x 2 (16 + 8) matrix: 3072 + 1792 + 4096 = 8960 weights, projections
  ** 2 x 128 x 8960 = 2293760: 14352384 FLOPs */
  g = gen_ok(WL MLA_Q(0) "}\n", 1);
  cr_assert_eq(computes_of(g.d, EP(0), c, 8), 5);
  cr_assert_eq(fab_dag_op(g.d, c[0])->dur, 28704768);
  done(&g);
  /* context parallel, cp 2: a K/V hop carries 64 tokens x (2 (16 + 8 + 32) = 112) x 2 B = 14336 B */
  g = gen_ok(WL MLA "}\n  parallelism: {cp: 2}\n", 2);
  int32_t cc[16];
  uint32_t n = colls_tagged(g.d, "cp", cc, 16);
  cr_assert_gt(n, 0);
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(g_array_index(g.d->colls, FabCollDef, cc[i]).bytes, 14336);
  done(&g);
}

/* h 64, ffn 256 (layer 0, dense), 4 experts of moe_ffn 128, top 2, one shared expert, layers 1-3 MoE:
**   layer 0: attention 2 x 128 x 4 x 64^2 + 4 x 128^2 x 64 = 8388608, MLP 2 x 128 x 2 x 64 x 256 = 8388608;
**   an MoE layer: attention 8388608, MLP 2 x 128 x 2 x 64 x 128 x (2 routed + 1 shared) = 12582912.
** Parameters: 16384 + 32768 = 49152, and 16384 + 16384 (shared) + 4 x 16384 = 98304 each. */
#define MOE "  model: {layers: 4, hidden: 64, ffn: 256, experts: 4, top_k: 2, moe_ffn: 128, shared_experts: 1, " \
            "first_dense_layers: 1, seq: 128, global_batch: 4}\n"

Test(train_shape, shared_experts_and_dense_first_layers_by_hand) {
  Gen g = gen_ok(WL MOE, 1);
  uint32_t c[40];
  cr_assert_eq(computes_of(g.d, EP(0), c, 40), 33);
  const int64_t fwd[] = {33554432, 41943040, 41943040, 41943040};
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(fab_dag_op(g.d, c[i])->dur, fwd[i], "forward of layer %d", i);
    cr_assert_eq(fab_dag_op(g.d, c[4 + i])->dur, 2 * fwd[3 - i], "backward of layer %d", 3 - i);
  }
  cr_assert_eq(fab_dag_op(g.d, c[32])->dur, (49152 + 3 * 98304) * 28);
  const char *note = g_array_index(g.d->jobs, FabJobDef, 0).note;
  cr_assert(strstr(note, "4 experts (top 2, every 1 layers past the first 1; expert ffn 128; 1 shared)"), "%s", note);
  done(&g);
  /* dp 4, ep 2: layer 0 sends no all-to-all; each MoE layer's carries 128 tokens x 2 x 64 x 2 B = 32768 B.
  ** Gradients: dense (attention, layer 0's MLP, the shared experts) 49152 + 3 x 32768 = 147456 parameters
  ** over dp, 294912 B; the routed experts, 3 x 4 x 16384 / ep 2 = 98304, over edp (2 ranks), 196608 B */
  g = gen_ok(WL MOE "  bucket: 1GiB\n  parallelism: {dp: 4, ep: 2}\n", 4);
  int32_t a[64];
  uint32_t n = colls_tagged(g.d, "ep", a, 64);
  cr_assert_eq(n, 3 * 4 * 2, "%u all-to-alls", n); /* 3 layers x 4 (2 forward, 2 backward) x 2 ep groups */
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(g_array_index(g.d->colls, FabCollDef, a[i]).bytes, 32768);
  n = colls_tagged(g.d, "dp", a, 64);
  uint32_t dense = 0, expert = 0;
  for (uint32_t i = 0; i < n; i++) {
    const FabCollDef *d = &g_array_index(g.d->colls, FabCollDef, a[i]);
    dense += d->bytes == 294912 && d->nranks == 4;
    expert += d->bytes == 196608 && d->nranks == 2;
  }
  cr_assert(dense == 1 && expert == 2 && n == 3, "%u dense, %u expert of %u", dense, expert, n);
  done(&g);
}

Test(train_shape, deepseek_v3_preset) {
  /* deepseek-ai/DeepSeek-V3 config.json: 61 layers (3 dense), MLA attention of 187105280 weights, 256 + 1 shared
  ** experts of 3 x 7168 x 2048, dense MLPs of 3 x 7168 x 18432, embeddings and output layer 129280 x 7168 each:
  ** 61 x 187105280 + 3 x 396361728 + 58 x 257 x 44040192 + 2 x 926679040 = 670918967296, the report's 671 B */
  Gen g = gen_ok("workload:\n  kind: training\n  gpu: {memory_bandwidth: 28TB/s}\n"
                 "  model: {preset: deepseek-v3, global_batch: 1}\n  layer_group: 61\n", 1);
  uint32_t c[64], n = computes_of(g.d, EP(0), c, 64);
  cr_assert_eq(fab_dag_op(g.d, c[n - 1])->dur, 670918967296ull, "%llu", (unsigned long long)fab_dag_op(g.d, c[n - 1])->dur);
  const char *note = g_array_index(g.d->jobs, FabJobDef, 0).note;
  cr_assert(strstr(note, "deepseek-v3 (preset): 61 layers, hidden 7168, ffn 18432 (swiglu MLP)"), "%s", note);
  cr_assert(strstr(note, "256 experts (top 8, every 1 layers past the first 3; expert ffn 2048; 1 shared)"), "%s", note);
  done(&g);
  /* 61 layers split into no pipeline evenly: the message says how to size it */
  expect_error("workload:\n  kind: training\n  model: {preset: deepseek-v3, global_batch: 4}\n  parallelism: {pp: 4}\n",
               4, 1e12, "t.yaml:3:", "61 layers cannot be split evenly into pp = 4 pipeline stages");
}

Test(train_shape, errors) {
  expect_error(WL MLA ", kv_heads: 1}\n", 1, 1e12, "t.yaml:", "kv_heads (grouped-query attention) and kv_lora_rank");
  expect_error(WL "  model: {layers: 2, hidden: 64, kv_lora_rank: 8, seq: 128, global_batch: 1}\n", 1, 1e12,
               "t.yaml:4:", "latent attention (kv_lora_rank) needs heads");
  expect_error(WL "  model: {params: 1M, heads: 2, kv_lora_rank: 8, seq: 128, global_batch: 1}\n", 1, 1e12,
               "t.yaml:4:", "cannot be sized by params");
  expect_error(WL "  model: {layers: 2, hidden: 64, shared_experts: 1, seq: 128, global_batch: 1}\n", 1, 1e12,
               "t.yaml:4:", "needs an MoE model (model.experts)");
  expect_error(WL "  model: {layers: 2, hidden: 64, moe_ffn: 64, seq: 128, global_batch: 1}\n", 1, 1e12,
               "t.yaml:4:", "needs an MoE model (model.experts)");
  expect_error(WL "  model: {layers: 2, hidden: 64, experts: 2, first_dense_layers: 2, seq: 128, global_batch: 1}\n", 1,
               1e12, "t.yaml:4:", "first_dense_layers = 2 leaves none of the 2 layers an MoE layer");
}

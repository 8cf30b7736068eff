/*
** Interleaved 1F1B (parallelism.vpp, workloads/training.c: schedule_at):
** the order of a stage's forwards and backwards over its model chunks, the
** pipeline flows between virtual stages, each chunk's gradient buckets,
** and the step's critical path against the bubble of Narayanan et al.,
** "Efficient Large-Scale Language Model Training on GPU Clusters Using
** Megatron-LM" (SC'21, section 2.2.2): (pp - 1) (tf + tb) / vpp.
*/
#include <criterion/criterion.h>
#include <string.h>

#include "testtrain.h"

/* TINY's layer (test_training.c): forward 33554432 ps at 1 TFLOPS x 0.5, backward twice that. */
#define LAYER_F 33554432ll
#define VPP_DP(layers, pp, vpp, gb, dp, extra)                                                                   \
  "workload:\n"                                                                                                  \
  "  kind: training\n"                                                                                           \
  "  model: {layers: " #layers ", hidden: 64, ffn: 256, seq: 128, micro_batch: 1, global_batch: " #gb "}\n"     \
  "  gpu: {memory_bandwidth: 1TB/s}\n"                                                                           \
  "  parallelism: {pp: " #pp ", vpp: " #vpp ", dp: " #dp "}\n" extra
#define VPP(layers, pp, vpp, gb, extra) VPP_DP(layers, pp, vpp, gb, 1, extra)

/* Whether compute op c waits for a pp flow, directly. */
static bool waits_for_flow(const FabDag *d, uint32_t c) {
  const FabOp *o = fab_dag_op(d, c);
  for (uint32_t k = 0; k < o->ndeps; k++)
    if (fab_dag_op(d, fab_dag_dep(d, o, k) & ~FAB_DEP_SENT)->kind == FAB_OP_FLOW) return true;
  return false;
}

Test(train_vpp, megatron_order_and_flows) {
  /* pp 2, vpp 2, m 4, a layer per chunk: T = 8 items each way per stage. Stage 0 warms up with
  ** 2 (pp - 1 - 0) + (vpp - 1) pp = 4 forwards, stage 1 with 2. Forward k is chunk (k mod 4) / 2 of
  ** microbatch k / 4 x 2 + k mod 2, backward k the other chunk of the same microbatch:
  **   stage 0: F(v0,0) F(v0,1) F(v2,0) F(v2,1) F(v0,2) B(v2,0) F(v0,3) B(v2,1) F(v2,2) B(v0,0) F(v2,3) B(v0,1)
  **            B(v2,2) B(v2,3) B(v0,2) B(v0,3)
  **   stage 1: F(v1,0) F(v1,1) F(v3,0) B(v3,0) F(v3,1) B(v3,1) F(v1,2) B(v1,0) F(v1,3) B(v1,1) F(v3,2) B(v3,2)
  **            F(v3,3) B(v3,3) B(v1,2) B(v1,3)
  ** Upper case: the item waits for a pp flow (from the virtual stage before it, forward; after it, backward):
  ** on stage 0 the forwards of chunk 1 (v2, from v1 on stage 1) and every backward; on stage 1 every forward and
  ** the backwards of chunk 0 (v1, from v2); v3's backward is the last virtual stage's, after its own forward. */
  Gen g = gen_ok(VPP(4, 2, 2, 4, ""), 2);
  const char *want[] = {"ffFFfBfBFBFBBBBB", "FFFbFbFBFBFbFbBB"};
  for (uint32_t s = 0; s < 2; s++) {
    uint32_t c[17];
    cr_assert_eq(computes_of(g.d, EP(s), c, 17), 17); /* and the optimizer */
    char seq[17] = {0};
    for (uint32_t i = 0; i < 16; i++) {
      const FabOp *o = fab_dag_op(g.d, c[i]);
      cr_assert_eq(o->dur, o->mark == FAB_PHASE_FWD ? LAYER_F : 2 * LAYER_F);
      seq[i] = (char)((o->mark == FAB_PHASE_FWD ? 'f' : 'b') - (waits_for_flow(g.d, c[i]) ? 32 : 0));
    }
    cr_assert_str_eq(seq, want[s], "stage %u", s);
    cr_assert_eq(fab_dag_op(g.d, c[16])->mark, FAB_PHASE_OPT);
    /* the optimizer updates both chunks: 2 layers x 49152 parameters x 28 B at 1 TB/s */
    cr_assert_eq(fab_dag_op(g.d, c[16])->dur, 2752512);
  }
  /* flows: 2 directions x (nv - 1 = 3) boundaries x 4 microbatches; v0 -> v1 and v2 -> v3 go from stage 0 to
  ** 1, v1 -> v2 from 1 to 0; backward the other way */
  uint32_t up = 0, down = 0, defs = 0;
  for (uint32_t i = 0; i < fab_dag_len(g.d); i++) {
    const FabOp *o = fab_dag_op(g.d, i);
    if (o->kind != FAB_OP_FLOW) continue;
    cr_assert_eq(o->bytes, 16384);
    up += o->src == EP(0) && o->dst == EP(1);
    down += o->src == EP(1) && o->dst == EP(0);
  }
  for (guint i = 0; i < g.d->colls->len; i++) defs += g_str_equal(g_array_index(g.d->colls, FabCollDef, i).tag, "pp");
  cr_assert_eq(up, 12, "%u flows up", up);
  cr_assert_eq(down, 12, "%u flows down", down);
  cr_assert_eq(defs, 24);
  done(&g);
}

/* The latest end of a forward or backward compute, flows taking no time: the pipeline's critical path. */
static int64_t pipeline_span(const FabDag *d) {
  int64_t *end = g_new0(int64_t, fab_dag_len(d)), span = 0;
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = fab_dag_op(d, i);
    int64_t at = 0;
    for (uint32_t k = 0; k < o->ndeps; k++) {
      uint32_t dep = fab_dag_dep(d, o, k) & ~FAB_DEP_SENT;
      cr_assert_lt(dep, i, "ops in order");
      at = MAX(at, end[dep]);
    }
    bool pass = o->kind == FAB_OP_COMPUTE && (o->mark == FAB_PHASE_FWD || o->mark == FAB_PHASE_BWD);
    end[i] = at + (pass ? (int64_t)o->dur : 0);
    if (pass) span = MAX(span, end[i]);
  }
  g_free(end);
  return span;
}

Test(train_vpp, bubble_shrinks_by_vpp) {
  /* tf + tb of a stage's whole model part per microbatch: its layers x 3 LAYER_F. Plain 1F1B takes
  ** (m + pp - 1)(tf + tb); interleaved m (tf + tb) + (pp - 1)(tf + tb) / vpp */
  struct { const char *yaml; uint32_t ranks; int64_t want; } c[] = {
    {VPP(4, 2, 1, 4, ""), 2, 5 * 6 * LAYER_F},         /* (4 + 1) x 2 layers x 3 */
    {VPP(4, 2, 2, 4, ""), 2, (4 * 6 + 6 / 2) * LAYER_F}, /* 4 x 6 + 6 / 2 */
    {VPP(8, 4, 2, 8, ""), 4, (8 * 6 + 3 * 6 / 2) * LAYER_F},
    {VPP(16, 4, 4, 8, ""), 4, (8 * 12 + 3 * 12 / 4) * LAYER_F},
    {VPP(16, 4, 1, 8, ""), 4, (8 + 3) * 12 * LAYER_F},
    /* m = pp: every forward first (Megatron's all-warm-up case), then the same bubble */
    {VPP(4, 2, 2, 2, ""), 2, (2 * 6 + 6 / 2) * LAYER_F},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(c); i++) {
    Gen g = gen_ok(c[i].yaml, c[i].ranks);
    int64_t span = pipeline_span(g.d);
    cr_assert_eq(span, c[i].want, "case %zu: %lld ps, want %lld", i, (long long)span, (long long)c[i].want);
    done(&g);
  }
}

/* The BEGIN mark of collective c on endpoint ep, or FAB_OP_NONE. */
static uint32_t begin_on(const FabDag *d, int32_t c, uint32_t ep) {
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = fab_dag_op(d, i);
    if (o->kind == FAB_OP_MARK && o->mark == FAB_MARK_COLL_BEGIN && o->coll == c && o->src == ep) return i;
  }
  return FAB_OP_NONE;
}

Test(train_vpp, each_chunk_its_own_buckets) {
  /* dp 2 (ranks 0, 1 on stage 0; 2, 3 on stage 1); a bucket of exactly one layer (98304 B), so one per chunk.
  ** Chunk 1's last backward (B(v2,3) on stage 0, B(v3,3) on stage 1) is each stage's 14th item, chunk 0's
  ** (B(v0,3), B(v1,3)) its 16th: chunk 1's bucket goes then, chunk 0's after it on the same communicator */
  for (int overlap = 1; overlap >= 0; overlap--) {
    Gen g = gen_ok(overlap ? VPP_DP(4, 2, 2, 8, 2, "  bucket: 98304\n")
                           : VPP_DP(4, 2, 2, 8, 2, "  bucket: 98304\n  overlap: false\n"), 4);
    int32_t c[8];
    cr_assert_eq(colls_tagged(g.d, "dp", c, 8), 4);
    for (uint32_t r = 0; r < 4; r++) {
      uint32_t comp[20], mine[2], n = 0;
      cr_assert_eq(computes_of(g.d, EP(r), comp, 20), 17);
      for (uint32_t i = 0; i < 4; i++)
        if (begin_on(g.d, c[i], EP(r)) != FAB_OP_NONE) {
          cr_assert_lt(n, 2);
          mine[n++] = (uint32_t)i;
        }
      cr_assert_eq(n, 2, "rank %u: two buckets", r);
      for (uint32_t i = 0; i < 2; i++) {
        cr_assert_eq(g_array_index(g.d->colls, FabCollDef, c[mine[i]]).bytes, 98304);
        cr_assert_eq(g_array_index(g.d->colls, FabCollDef, c[mine[i]]).nranks, 2);
        uint32_t on = overlap && i == 0 ? comp[13] : comp[15];
        cr_assert(enters_after(g.d, begin_on(g.d, c[mine[i]], EP(r)), on), "rank %u bucket %u", r, i);
      }
      /* overlapped, chunk 1's bucket does not wait for chunk 0's backward */
      if (overlap) cr_assert_not(enters_after(g.d, begin_on(g.d, c[mine[0]], EP(r)), comp[15]));
      cr_assert(enters_after(g.d, begin_on(g.d, c[mine[1]], EP(r)),
                             coll_mark(g.d, c[mine[0]], FAB_MARK_COLL_END, EP(r))), "rank %u: one after another", r);
    }
    done(&g);
  }
}

Test(train_vpp, errors) {
  expect_error(VPP(4, 1, 2, 4, ""), 1, 1e12, "t.yaml:5:", "vpp = 2 (interleaved 1F1B) needs pp >= 2");
  expect_error(VPP(4, 2, 2, 3, ""), 2, 1e12, "t.yaml:3:", "3 microbatches is not a multiple of pp = 2");
  expect_error(VPP(6, 2, 2, 4, ""), 2, 1e12, "t.yaml:3:", "6 layers cannot be split evenly into pp = 2 pipeline "
               "stages x vpp model chunks");
  expect_error(VPP(8, 2, 2, 4, "  layer_group: 4\n"), 2, 1e12, "t.yaml:6:", "does not divide the 2 layers of a pipeline "
               "model chunk");
}

Test(train_vpp, explain_says_so) {
  Gen g = gen_ok(VPP(8, 2, 2, 4, ""), 2);
  const char *note = g_array_index(g.d->jobs, FabJobDef, 0).note;
  cr_assert(strstr(note, "blocks of 1 layer (4 per stage: interleaved 1F1B, 2 model chunks of 2 each"), "%s", note);
  done(&g);
}

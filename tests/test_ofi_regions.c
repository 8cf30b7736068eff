/* aws-ofi-nccl's region tuner (workloads/ofi_regions.c). The expected
** choices are what the plugin's own src/tuner/nccl_ofi_regions.cpp (at
** aws/aws-ofi-nccl 2daf7d30, built in a scratch folder against stub NCCL
** headers, every cost-table cell allowed) answers for 2^k bytes, k = 0 ..
** 36; "-" is no region: NCCL's own choice stands. And what the tuner does
** with it: p5 from 3 nodes up takes the region's choice, p4d and 2 nodes
** keep NCCL's, NVLS-tree where NVLS is off is skipped. */
#include <criterion/criterion.h>
#include <string.h>
#include "workloads/coll_int.h"

/* One letter per choice: T tree/LL128, t tree/Simple, R ring/LL128, r
** ring/Simple, N nvls-tree/Simple, - none. */
static char code(bool hit, FabCollAlgo a, FabProto p) {
  if (!hit) return '-';
  if (a == FAB_ALGO_TREE) return p == FAB_PROTO_LL128 ? 'T' : p == FAB_PROTO_SIMPLE ? 't' : '?';
  if (a == FAB_ALGO_RING) return p == FAB_PROTO_LL128 ? 'R' : p == FAB_PROTO_SIMPLE ? 'r' : '?';
  if (a == FAB_ALGO_NVLS_TREE && p == FAB_PROTO_SIMPLE) return 'N';
  return '?';
}

/* The choices for 2^0 .. 2^36 bytes. */
static void choices(FabCollOp op, uint32_t per_node, uint32_t nodes, char out[38]) {
  for (int k = 0; k <= 36; k++) {
    FabCollAlgo a = FAB_ALGO_AUTO;
    FabProto p = FAB_PROTO_AUTO;
    bool hit = fab_coll__ofi_region(FAB_OFI_PLATFORM_P5, op, 1ull << k, per_node * nodes, nodes, NULL, NULL, &a, &p);
    out[k] = code(hit, a, p);
  }
  out[37] = 0;
}

/* Runs of one letter: "T26R5r6" is 26 T, 5 R, 6 r. */
static void expand(const char *runs, char out[38]) {
  size_t n = 0;
  for (const char *s = runs; *s;) {
    char c = *s++;
    unsigned k = 0;
    while (*s >= '0' && *s <= '9') k = k * 10 + (unsigned)(*s++ - '0');
    for (unsigned i = 0; i < k && n < 37; i++) out[n++] = c;
  }
  cr_assert_eq(n, 37, "%s covers %zu sizes", runs, n);
  out[37] = 0;
}

static void check(FabCollOp op, uint32_t per_node, uint32_t nodes, const char *runs) {
  char got[38], want[38];
  choices(op, per_node, nodes, got);
  expand(runs, want);
  cr_assert_str_eq(got, want, "op %d, %u x %u ranks", op, nodes, per_node);
}

/* The plugin's answers (see top), per layout: 8 GPUs per node (allreduce
** only: allgather and reduce-scatter have no regions there), 2 per node
** (allreduce), 1 per node (allreduce; the rings of allgather and
** reduce-scatter from 64 MiB up); none at 2 nodes, nor at 4 per node (no
** table). */
static const struct {
  FabCollOp op;
  uint32_t per_node, nodes;
  const char *runs;
} answers[] = {
  {FAB_COLL_ALLREDUCE, 8, 4, "T26R5r6"},        {FAB_COLL_ALLREDUCE, 8, 16, "T29R3N1r4"},
  {FAB_COLL_ALLREDUCE, 8, 64, "T29N6r2"},       {FAB_COLL_ALLGATHER, 8, 16, "-37"},
  {FAB_COLL_REDUCE_SCATTER, 8, 16, "-37"},      {FAB_COLL_ALLREDUCE, 2, 4, "T21R5N3r8"},
  {FAB_COLL_ALLREDUCE, 2, 64, "T27R1t2r1N6"},   {FAB_COLL_ALLREDUCE, 1, 16, "T22R4r11"},
  {FAB_COLL_ALLGATHER, 1, 16, "-26r11"},        {FAB_COLL_REDUCE_SCATTER, 1, 16, "-26r11"},
  {FAB_COLL_ALLREDUCE, 8, 2, "-37"},            {FAB_COLL_ALLREDUCE, 4, 16, "-37"},
};

Test(ofi_regions, p5_answers_as_the_plugin_does) {
  for (size_t i = 0; i < G_N_ELEMENTS(answers); i++)
    check(answers[i].op, answers[i].per_node, answers[i].nodes, answers[i].runs);
}

/* A platform it does not know: no regions. */
Test(ofi_regions, none_on_a_platform_it_does_not_know) {
  FabCollAlgo a;
  FabProto p;
  cr_assert_not(fab_coll__ofi_region(FAB_OFI_PLATFORM_NONE, FAB_COLL_ALLREDUCE, 1 << 20, 128, 16, NULL, NULL, &a, &p));
}

/* A region whose cell NCCL marks -1 is passed over, to the next that holds
** the point: at 64 nodes x 8, 1 GiB is NVLS-tree's; without it no other
** region holds it. */
static bool no_nvls(FabCollAlgo a, FabProto p, void *ctx) {
  (void)p, (void)ctx;
  return a != FAB_ALGO_NVLS_TREE;
}

Test(ofi_regions, a_cell_nccl_rules_out_is_skipped) {
  FabCollAlgo a;
  FabProto p;
  cr_assert(fab_coll__ofi_region(FAB_OFI_PLATFORM_P5, FAB_COLL_ALLREDUCE, 1ull << 30, 512, 64, NULL, NULL, &a, &p));
  cr_assert_eq(a, FAB_ALGO_NVLS_TREE);
  cr_assert_not(fab_coll__ofi_region(FAB_OFI_PLATFORM_P5, FAB_COLL_ALLREDUCE, 1ull << 30, 512, 64, no_nvls, NULL, &a,
                                     &p));
}

/*
** Collectives made as a run goes (collective.h: FabCollGen): a ring made
** layer by layer, through the DAG's `more` (so dag.h's contract is checked
** on every op), must give the very DAG fab_coll_expand makes whole: the
** same ops, fields and dependencies in the same order, the same END marks.
** Other algorithms are made whole at once; a layered ring is not coarsened
** to stay under the cap a whole expansion has.
*/
#include <criterion/criterion.h>
#include <string.h>

#include "workloads/collective.h"
#include "testdag.h"

#define NR 16
static uint32_t eps[NR];

/* n plain hosts at 200 Gb/s, or nodes of 4 GPUs in NVLink domains. */
static FabCollEnv cluster(uint32_t n, bool gpu) {
  FabCollEnv e = {.endpoints = n, .gpus_per_node = gpu ? 4 : 1, .nvl_domain = gpu ? 4 : 0, .sm = gpu ? 90 : 0,
                  .nics_per_node = gpu ? 4 : 1, .nic_bps = 200000000000ull, .net_bps = 200000000000ull,
                  .nvl_bps = gpu ? 2400000000000ull : 0, .net_lat = 3 * FAB_US, .nvl_lat = FAB_US,
                  .reduce_Bps = 1e12};
  e.costs = fab_coll_costs_unset();
  fab_coll_costs_resolve(&e);
  return e;
}

static FabCollSpec ring_spec(FabCollOp op, uint32_t n, uint64_t bytes, uint32_t channels, uint64_t chunk) {
  for (uint32_t i = 0; i < NR; i++) eps[i] = i;
  return (FabCollSpec){.op = op, .algorithm = FAB_ALGO_RING, .protocol = FAB_PROTO_SIMPLE, .bytes = bytes,
                       .dtype_bytes = 2, .nranks = n, .ranks = eps, .channels = channels, .chunk = chunk, .prio = 2,
                       .tag = "dp", .start = 7 * FAB_US};
}

typedef struct Feed {
  FabCollGen *g;
  uint32_t batches;
} Feed;

static bool feed_more(void *ctx, FabDag *d) {
  (void)d;
  Feed *f = ctx;
  f->batches++;
  return fab_coll_gen_more(f->g, 8);
}

/* Expand s whole and unfolded; compare. Returns the unfolded run's batches. */
static uint32_t compare(const FabCollEnv *env, const FabCollSpec *s, const char *what) {
  FabDag *whole = fab_dag_new(), *lay = fab_dag_new();
  GError *err = NULL;
  uint32_t end[NR], start[NR];
  for (uint32_t i = 0; i < s->nranks; i++) /* each rank enters after an op of its own, as in an nccl-tests run */
    start[i] = fab_dag_mark(whole, i, FAB_MARK_JOIN, 0, -1, NULL, 0), fab_dag_mark(lay, i, FAB_MARK_JOIN, 0, -1, NULL, 0);
  int32_t id = fab_coll_expand(whole, env, s, start, end, &err);
  cr_assert_geq(id, 0, "%s: %s", what, err ? err->message : "?");
  uint32_t scratch[NR]; /* the caller's ranks, which it reuses once begun (training.c's scratch) */
  FabCollSpec ls = *s;
  memcpy(scratch, s->ranks, sizeof(uint32_t) * s->nranks);
  ls.ranks = scratch;
  Feed f = {fab_coll_begin(lay, env, &ls, start, true, &err), 0};
  cr_assert_not_null(f.g, "%s: %s", what, err ? err->message : "?");
  memset(scratch, 0, sizeof scratch);
  cr_assert_eq(fab_coll_gen_id(f.g), id);
  cr_assert_null(fab_coll_gen_end(f.g), "%s: no END marks before the last layer", what);
  fab_dag_set_more(lay, feed_more, &f, NULL);
  while (fab_dag_more(lay)) continue; /* the contract is checked on each op (fab_dag_add) */
  cr_assert(fab_coll_gen_done(f.g));
  const uint32_t *lend = fab_coll_gen_end(f.g);
  cr_assert_not_null(lend);
  for (uint32_t i = 0; i < s->nranks; i++) cr_assert_eq(lend[i], end[i], "%s: rank %u's END mark", what, i);
  testdag_same(whole, lay, what);
  double est = fab_coll_gen_estimate(f.g), made = fab_dag_len(lay);
  cr_assert(est >= 0.5 * made && est <= 4 * made, "%s: the estimate %.0f is not near the %.0f ops made", what, est,
            made);
  fab_coll_gen_free(f.g);
  fab_dag_free(whole);
  fab_dag_free(lay);
  return f.batches;
}

Test(unfold, a_ring_made_layer_by_layer_is_the_ring_made_whole) {
  static const FabCollOp ops[] = {FAB_COLL_ALLREDUCE, FAB_COLL_ALLGATHER, FAB_COLL_REDUCE_SCATTER};
  static const uint32_t ns[] = {2, 3, 5, 8};
  for (size_t o = 0; o < 3; o++)
    for (size_t k = 0; k < 4; k++)
      for (uint32_t ch = 1; ch <= 3; ch += 2)
        for (int gpu = 0; gpu < 2; gpu++) {
          uint32_t n = gpu ? 2 * ns[k] : ns[k]; /* whole nodes of 4 GPUs: 2 x n ranks over n/2 nodes */
          if (gpu && n % 4) continue;
          /* several loops, slices of unequal size, and a size that does not divide evenly */
          FabCollSpec s = ring_spec(ops[o], n, 1000000 + 6 * n, ch, 8192);
          char what[96];
          g_snprintf(what, sizeof what, "%s n=%u channels=%u %s", fab_coll_op_names[ops[o]], n, ch,
                     gpu ? "gpus" : "hosts");
          FabCollEnv env = cluster(n, gpu);
          uint32_t batches = compare(&env, &s, what);
          cr_assert_gt(batches, 3, "%s: made in %u batches: it did not unfold", what, batches);
        }
}

Test(unfold, other_algorithms_are_made_whole_at_once) {
  FabCollEnv env = cluster(8, false);
  FabCollSpec s = ring_spec(FAB_COLL_ALLREDUCE, 8, 1 << 20, 2, 16384);
  s.algorithm = FAB_ALGO_TREE;
  FabDag *d = fab_dag_new();
  GError *err = NULL;
  FabCollGen *g = fab_coll_begin(d, &env, &s, NULL, true, &err);
  cr_assert_not_null(g, "%s", err ? err->message : "?");
  cr_assert(fab_coll_gen_done(g), "a tree is made whole");
  cr_assert_not_null(fab_coll_gen_end(g));
  uint32_t len = fab_dag_len(d);
  cr_assert_not(fab_coll_gen_more(g, 1));
  cr_assert_eq(fab_dag_len(d), len, "nothing more made");
  fab_coll_gen_free(g);
  fab_dag_free(d);
  /* a broadcast on a ring is a chain: whole too */
  s = ring_spec(FAB_COLL_BROADCAST, 8, 1 << 20, 2, 16384);
  d = fab_dag_new();
  g = fab_coll_begin(d, &env, &s, NULL, true, &err);
  cr_assert(g && fab_coll_gen_done(g));
  fab_coll_gen_free(g);
  fab_dag_free(d);
}

/* 16 channels on 16 ranks in 4 KiB pieces: about 33 million ops. Made whole
** that is over the cap (an error when the channels and chunk are the
** user's); layered it is made as it goes, with the user's channels. */
Test(unfold, a_layered_ring_keeps_its_channels_past_the_cap) {
  FabCollEnv env = cluster(16, false);
  FabCollSpec s = ring_spec(FAB_COLL_ALLREDUCE, 16, 1ull << 30, 16, 4096);
  GPtrArray *w = g_ptr_array_new_with_free_func(g_free);
  env.warnings = w;
  FabDag *d = fab_dag_new();
  GError *err = NULL;
  cr_assert_lt(fab_coll_expand(d, &env, &s, NULL, NULL, &err), 0, "made whole, it is over the cap");
  cr_assert(err && strstr(err->message, "raise chunk"), "%s", err ? err->message : "no error");
  g_clear_error(&err);
  cr_assert_eq(fab_dag_len(d), 0, "nothing left behind");
  FabCollGen *g = fab_coll_begin(d, &env, &s, NULL, true, &err);
  cr_assert_not_null(g, "%s", err ? err->message : "?");
  cr_assert_gt(fab_coll_gen_estimate(g), 4e6);
  const FabCollDef *cd = &g_array_index(d->colls, FabCollDef, fab_coll_gen_id(g));
  cr_assert_eq(cd->channels, 16);
  cr_assert_eq(cd->chunk, 4096);
  for (int b = 0; b < 10; b++) cr_assert(fab_coll_gen_more(g, 1000));
  cr_assert_lt(fab_dag_len(d), 100000, "ten batches, not the whole: %u ops", fab_dag_len(d));
  cr_assert_eq(w->len, 0, "nothing coarsened: no warning");
  fab_coll_gen_free(g);
  fab_dag_free(d);
  /* with the channels left to the tuner and the chunk to the protocol, made whole it is coarsened, with a
  ** warning; layered it is not */
  s = ring_spec(FAB_COLL_ALLREDUCE, 16, 1ull << 40, 0, 0);
  d = fab_dag_new();
  cr_assert_geq(fab_coll_expand(d, &env, &s, NULL, NULL, &err), 0, "%s", err ? err->message : "?");
  cr_assert_eq(w->len, 1, "coarsened made whole, and said so");
  const FabCollDef *whole = &g_array_index(d->colls, FabCollDef, 0);
  uint32_t wch = whole->channels;
  uint64_t wchunk = whole->chunk;
  fab_dag_free(d);
  d = fab_dag_new();
  g_ptr_array_set_size(w, 0);
  g = fab_coll_begin(d, &env, &s, NULL, true, &err);
  cr_assert_not_null(g, "%s", err ? err->message : "?");
  cd = &g_array_index(d->colls, FabCollDef, 0);
  cr_assert_eq(cd->count, (1ull << 40) / 2, "nccl-tests' count past 2^32 elements: %" G_GUINT64_FORMAT, cd->count);
  cr_assert_eq(w->len, 0, "layered: not coarsened, no warning");
  cr_assert(cd->channels > wch || cd->chunk < wchunk, "layered: %u channels, %" G_GUINT64_FORMAT " B pieces; "
            "made whole %u, %" G_GUINT64_FORMAT, cd->channels, cd->chunk, wch, wchunk);
  fab_coll_gen_free(g);
  fab_dag_free(d);
  g_ptr_array_free(w, TRUE);
}

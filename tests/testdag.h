/*
** Two DAGs alike: the same ops (every field), dependencies and collective
** definitions, in the same order. For the tests of ops made as a run goes
** (a collective, a training step, an nccl-tests sweep), which must make the
** very DAG the same job makes whole. Header-only.
*/
#ifndef FAB_TESTDAG_H
#define FAB_TESTDAG_H

#include <criterion/criterion.h>
#include <string.h>
#include "workloads/dag.h"

static inline void testdag_same(const FabDag *a, const FabDag *b, const char *what) {
  cr_assert_eq(fab_dag_len(a), fab_dag_len(b), "%s: %u ops made whole, %u unfolded", what, fab_dag_len(a),
               fab_dag_len(b));
  cr_assert_eq(fab_dag_deps_len(a), fab_dag_deps_len(b), "%s: dependency entries", what);
  cr_assert_eq(a->colls->len, b->colls->len, "%s: collectives", what);
  for (uint32_t i = 0; i < fab_dag_len(a); i++) {
    const FabOp *x = fab_dag_op(a, i), *y = fab_dag_op(b, i);
    cr_assert(memcmp(x, y, sizeof *x) == 0, "%s: op %u differs (kind %u/%u, %u->%u / %u->%u)", what, i, x->kind,
              y->kind, x->src, x->dst, y->src, y->dst);
    for (uint32_t k = 0; k < x->ndeps; k++)
      cr_assert_eq(fab_dag_dep(a, x, k), fab_dag_dep(b, y, k), "%s: op %u's dependency %u", what, i, k);
  }
  for (guint c = 0; c < a->colls->len; c++) {
    const FabCollDef *x = &g_array_index(a->colls, FabCollDef, c), *y = &g_array_index(b->colls, FabCollDef, c);
    cr_assert(x->bytes == y->bytes && x->channels == y->channels && x->chunk == y->chunk &&
              g_strcmp0(x->op, y->op) == 0 && g_strcmp0(x->algorithm, y->algorithm) == 0 &&
              g_strcmp0(x->protocol, y->protocol) == 0 && g_strcmp0(x->tag, y->tag) == 0 && x->job == y->job &&
              x->step == y->step && x->nranks == y->nranks,
              "%s: collective %u differs", what, c);
  }
}

#endif

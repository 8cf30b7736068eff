/*
** What the training tests share (tests/test_training.c, test_train_groups.c):
** a job generated from a scenario's workload map on ranks whose endpoints
** are EP(i) = 5 + i, so a mix-up of job ranks and endpoints shows; and
** lookups of its ops, collectives and dependencies.
*/
#ifndef TESTTRAIN_H
#define TESTTRAIN_H

#include <criterion/criterion.h>
#include <string.h>

#include "workloads/training.h"
#include "testdag.h"

#define EP(i) (5u + (i))
#define MAXR 64

typedef struct Gen {
  FabCfg *cfg;
  FabDag *d;
  GError *err;
  gboolean ok;
} Gen;

static const FabCollEnv env = {.endpoints = 5 + MAXR, .gpus_per_node = 8, .nvl_domain = 0, .net_bps = 400000000000ull,
                               .nvl_bps = 0, .net_lat = 2000000, .nvl_lat = 500000, .reduce_Bps = 0, .collnet = false};

/* The DAG, job and keys of `yaml` (a whole scenario; its workload: map is
** read) on n ranks, as the workload reader sets them up; the caller's start
** is 7000 ps. Returns the workload map; g->ok says whether the keys apply. */
static inline const FabCfgNode *prepare(const char *yaml, uint32_t n, Gen *g, FabTrainIn *in, uint16_t *job) {
  GError *e = NULL;
  *g = (Gen){0};
  g->cfg = fab_cfg_load_string(yaml, "t.yaml", &e);
  cr_assert_not_null(g->cfg, "%s", e ? e->message : "?");
  const FabCfgNode *wl = fab_cfg_get(fab_cfg_root(g->cfg), "workload");
  cr_assert_not_null(wl);
  g->d = fab_dag_new();
  cr_assert_leq(n, MAXR);
  FabJobDef j = {.name = "train", .kind = "training", .nranks = n, .ranks = g_new(uint32_t, n)};
  for (uint32_t i = 0; i < n; i++) j.ranks[i] = EP(i);
  *job = fab_dag_job(g->d, &j);
  *in = (FabTrainIn){0};
  g->ok = fab_cfg_apply(wl, NULL, fab_training_schema, in, &g->err);
  in->job.start = 7000;
  return wl;
}

/* Generate `yaml` on n ranks, made whole. The cluster's GPU: flops x eff,
** and 2 TB/s of memory bandwidth. */
static inline Gen gen_with(const char *yaml, uint32_t n, double flops, double eff) {
  FabTrainGpu gpu = {flops, eff, 16000000000000ull};
  Gen g;
  FabTrainIn in;
  uint16_t job;
  const FabCfgNode *wl = prepare(yaml, n, &g, &in, &job);
  if (g.ok)
    g.ok = fab_training_build(&in, wl, g.d, &env, g_array_index(g.d->jobs, FabJobDef, job).ranks, n, job, &gpu,
                              &g.err);
  return g;
}

static inline Gen gen(const char *yaml, uint32_t n) { return gen_with(yaml, n, 1e12, 0.5); }

static inline Gen gen_ok(const char *yaml, uint32_t n) {
  Gen g = gen(yaml, n);
  cr_assert(g.ok, "%s", g.err ? g.err->message : "?");
  return g;
}

static inline void done(Gen *g) {
  g_clear_error(&g->err);
  fab_dag_free(g->d);
  fab_cfg_free(g->cfg);
}

/* The warnings generating `yaml` on n ranks gives, joined by newlines (g_free). */
static inline char *warnings_of(const char *yaml, uint32_t n) {
  FabTrainGpu gpu = {1e12, 0.5, 16000000000000ull};
  FabCollEnv e = env;
  e.warnings = g_ptr_array_new_with_free_func(g_free);
  Gen g;
  FabTrainIn in;
  uint16_t job;
  const FabCfgNode *wl = prepare(yaml, n, &g, &in, &job);
  cr_assert(g.ok && fab_training_build(&in, wl, g.d, &e, g_array_index(g.d->jobs, FabJobDef, job).ranks, n, job,
                                       &gpu, &g.err), "%s", g.err ? g.err->message : "?");
  g_ptr_array_add(e.warnings, NULL);
  char *all = g_strjoinv("\n", (char **)e.warnings->pdata);
  g_ptr_array_free(e.warnings, TRUE);
  done(&g);
  return all;
}

/* The error of a generation that must fail, checked for `where` and `what`. */
static inline void expect_error(const char *yaml, uint32_t n, double flops, const char *where, const char *what) {
  Gen g = gen_with(yaml, n, flops, 0.5);
  cr_assert(!g.ok, "expected an error containing '%s'", what);
  cr_assert_not_null(g.err);
  cr_assert(g_str_has_prefix(g.err->message, where), "'%s' does not start with '%s'", g.err->message, where);
  cr_assert(strstr(g.err->message, what), "'%s' does not contain '%s'", g.err->message, what);
  cr_assert_eq(fab_dag_len(g.d), 0, "a failed generation left %u ops", fab_dag_len(g.d));
  cr_assert_eq(g.d->colls->len, 0);
  done(&g);
}

static inline uint32_t count_ops(const FabDag *d, FabOpKind kind, int mark) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = fab_dag_op(d, i);
    n += o->kind == kind && (mark < 0 || o->mark == mark);
  }
  return n;
}

/* Compute ops of endpoint ep, in DAG (= chain) order, into out; returns how many. */
static inline uint32_t computes_of(const FabDag *d, uint32_t ep, uint32_t *out, uint32_t max) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = fab_dag_op(d, i);
    if (o->kind == FAB_OP_COMPUTE && o->src == ep) {
      cr_assert_lt(n, max);
      out[n++] = i;
    }
  }
  return n;
}

static inline gboolean depends_on(const FabDag *d, uint32_t op, uint32_t on) {
  const FabOp *o = fab_dag_op(d, op);
  for (uint32_t k = 0; k < o->ndeps; k++)
    if ((fab_dag_dep(d, o, k) & ~FAB_DEP_SENT) == on) return TRUE;
  return FALSE;
}

/* Whether a collective's BEGIN mark enters after `on`: directly, or
** through the JOIN of what it was ready on and the END of the collective
** before it on its communicator (a bucket collective, training.c: Streams). */
static inline gboolean enters_after(const FabDag *d, uint32_t begin, uint32_t on) {
  if (depends_on(d, begin, on)) return TRUE;
  const FabOp *b = fab_dag_op(d, begin);
  for (uint32_t k = 0; k < b->ndeps; k++) {
    uint32_t j = fab_dag_dep(d, b, k) & ~FAB_DEP_SENT;
    const FabOp *o = fab_dag_op(d, j);
    if (o->kind == FAB_OP_MARK && o->mark == FAB_MARK_JOIN && depends_on(d, j, on)) return TRUE;
  }
  return FALSE;
}

/* Collectives with `tag` (and op, unless NULL). */
static inline uint32_t count_colls(const FabDag *d, const char *tag, const char *op) {
  uint32_t n = 0;
  for (guint i = 0; i < d->colls->len; i++) {
    const FabCollDef *c = &g_array_index(d->colls, FabCollDef, i);
    n += c->tag && g_str_equal(c->tag, tag) && (!op || g_str_equal(c->op, op));
  }
  return n;
}

/* The COLL_BEGIN or COLL_END mark of collective c on endpoint ep. */
static inline uint32_t coll_mark(const FabDag *d, int32_t c, FabMarkKind kind, uint32_t ep) {
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = fab_dag_op(d, i);
    if (o->kind == FAB_OP_MARK && o->mark == kind && o->coll == c && o->src == ep) return i;
  }
  cr_assert_fail("collective %d has no %s mark on endpoint %u", c, kind == FAB_MARK_COLL_BEGIN ? "begin" : "end", ep);
  return FAB_OP_NONE;
}

/* Indices of the collectives with `tag`, in order, into out; returns how many. */
static inline uint32_t colls_tagged(const FabDag *d, const char *tag, int32_t *out, uint32_t max) {
  uint32_t n = 0;
  for (guint i = 0; i < d->colls->len; i++) {
    const FabCollDef *c = &g_array_index(d->colls, FabCollDef, i);
    if (c->tag && g_str_equal(c->tag, tag)) {
      cr_assert_lt(n, max);
      out[n++] = (int32_t)i;
    }
  }
  return n;
}

#endif

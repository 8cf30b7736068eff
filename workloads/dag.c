/* The operation DAG. See dag.h. */
#include "dag.h"

const char *const fab_phase_names[FAB_PHASE_N] = {"forward", "backward", "optimizer", "compute"};

FabDag *fab_dag_new(void) {
  FabDag *d = g_new0(FabDag, 1);
  fab_deq_init(&d->ops, sizeof(FabOp));
  fab_deq_init(&d->deps, sizeof(uint32_t));
  d->exhausted = true; /* no `more`: every op is made before the run */
  d->colls = g_array_new(FALSE, TRUE, sizeof(FabCollDef));
  d->jobs = g_array_new(FALSE, TRUE, sizeof(FabJobDef));
  return d;
}

void fab_dag_free(FabDag *d) {
  if (!d) return;
  for (guint i = 0; i < d->jobs->len; i++) {
    g_free(g_array_index(d->jobs, FabJobDef, i).ranks);
    g_free((char *)g_array_index(d->jobs, FabJobDef, i).name);
    g_free(g_array_index(d->jobs, FabJobDef, i).note);
  }
  if (d->more_free) d->more_free(d->more_ctx);
  fab_deq_clear(&d->ops);
  fab_deq_clear(&d->deps);
  g_array_free(d->colls, TRUE);
  g_array_free(d->jobs, TRUE);
  if (d->trace_node) g_hash_table_destroy(d->trace_node);
  g_free(d);
}

uint32_t fab_dag_add(FabDag *d, const FabOp *op, const uint32_t *deps, uint32_t ndeps) {
  uint32_t idx = fab_dag_len(d);
  FabOp o = *op;
  bool anchored = !d->making; /* a later batch's op waits for the batch before it or its own */
  g_assert(idx < FAB_DEP_SENT);
  g_assert(fab_deq_end(&d->deps) + ndeps < UINT32_MAX && ndeps < (1u << 30));
  o.dep0 = fab_dag_deps_len(d);
  o.ndeps = 0;
  for (uint32_t k = 0; k < ndeps; k++) {
    if (deps[k] == FAB_OP_NONE) continue;
    uint32_t on = deps[k] & ~FAB_DEP_SENT;
    g_assert(on < idx); /* earlier ops only: acyclic by construction */
    g_assert(!(deps[k] & FAB_DEP_SENT) || on < fab_dag_base(d) || fab_dag_op(d, on)->kind <= FAB_OP_NVLS);
    anchored |= on >= d->prev0;
    *(uint32_t *)fab_deq_push(&d->deps) = deps[k];
    o.ndeps++;
  }
  g_assert(anchored);
  *(FabOp *)fab_deq_push(&d->ops) = o;
  return idx;
}

void fab_dag_truncate(FabDag *d, uint32_t ops0, uint32_t deps0) {
  fab_deq_truncate(&d->ops, ops0);
  fab_deq_truncate(&d->deps, deps0);
}

void fab_dag_retire(FabDag *d, uint32_t upto) {
  g_assert(upto >= fab_dag_base(d) && upto <= fab_dag_len(d));
  uint64_t deps = upto < fab_dag_len(d) ? fab_dag_op(d, upto)->dep0 : fab_deq_end(&d->deps);
  fab_deq_drop(&d->ops, upto);
  fab_deq_drop(&d->deps, deps);
}

void fab_dag_set_more(FabDag *d, FabDagMore more, void *ctx, GDestroyNotify ctx_free) {
  if (d->more_free) d->more_free(d->more_ctx);
  d->more = more;
  d->more_ctx = ctx;
  d->more_free = ctx_free;
  d->exhausted = more == NULL;
  d->batch0 = d->prev0 = 0;
}

bool fab_dag_more(FabDag *d) {
  if (d->exhausted) return false;
  uint32_t first = fab_dag_len(d);
  bool later = first > 0; /* the ops made so far are the first batch */
  if (later) {
    d->prev0 = d->batch0;
    d->batch0 = first;
  }
  d->making = later;
  d->exhausted = !d->more(d->more_ctx, d);
  d->making = false;
  if (fab_dag_len(d) > first) return true;
  d->exhausted = true;
  if (later) d->batch0 = d->prev0; /* no new batch after all */
  return false;
}

uint32_t fab_dag_flow(FabDag *d, uint32_t src, uint32_t dst, uint64_t bytes, uint8_t prio, uint16_t job,
                      int32_t coll, fab_time_t pre, fab_time_t post, const uint32_t *deps, uint32_t ndeps) {
  FabOp o = {.kind = FAB_OP_FLOW, .prio = prio, .job = job, .src = src, .dst = dst, .coll = coll,
             .bytes = bytes, .pre = pre, .post = post};
  g_assert(src != dst && bytes > 0);
  return fab_dag_add(d, &o, deps, ndeps);
}

uint32_t fab_dag_compute(FabDag *d, uint32_t rank, fab_time_t dur, FabPhase phase, uint16_t job, uint16_t step,
                         const uint32_t *deps, uint32_t ndeps) {
  FabOp o = {.kind = FAB_OP_COMPUTE, .mark = (uint8_t)phase, .job = job, .step = step, .src = rank, .dst = rank,
             .coll = -1, .dur = dur};
  return fab_dag_add(d, &o, deps, ndeps);
}

uint32_t fab_dag_mark(FabDag *d, uint32_t rank, FabMarkKind mark, uint16_t job, int32_t coll,
                      const uint32_t *deps, uint32_t ndeps) {
  FabOp o = {.kind = FAB_OP_MARK, .mark = (uint8_t)mark, .job = job, .src = rank, .dst = rank, .coll = coll};
  if (coll >= 0) o.step = g_array_index(d->colls, FabCollDef, coll).step;
  return fab_dag_add(d, &o, deps, ndeps);
}

int32_t fab_dag_coll(FabDag *d, const FabCollDef *c) {
  g_array_append_val(d->colls, *c);
  return (int32_t)d->colls->len - 1;
}

uint16_t fab_dag_job(FabDag *d, const FabJobDef *j) {
  g_assert(d->jobs->len < UINT16_MAX);
  FabJobDef own = *j;
  own.name = g_strdup(j->name); /* the DAG's own copy: a process making many jobs keeps none of their names */
  g_array_append_val(d->jobs, own);
  return (uint16_t)(d->jobs->len - 1);
}

uint32_t fab_dag_flows(const FabDag *d) {
  uint32_t n = 0;
  for (uint32_t i = fab_dag_base(d); i < fab_dag_len(d); i++) n += fab_dag_op(d, i)->kind <= FAB_OP_NVLS;
  return n;
}

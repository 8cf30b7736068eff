/* The collectives, the per-rank timeline, the training steps and the jobs of
** a run, from the operation times the executor kept. See collect.h. */
#include "collect.h"

#include <stdlib.h>
#include <string.h>

typedef struct Ival {
  fab_time_t a, b;
} Ival;

static int by_start(const void *x, const void *y) {
  const Ival *p = x, *q = y;
  return p->a < q->a ? -1 : p->a > q->a;
}

/* Sort and merge intervals in place; returns how many remain. */
static size_t merge(Ival *v, size_t n) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, by_start);
  size_t m = 0;
  for (size_t i = 1; i < n; i++) {
    if (v[i].a <= v[m].b) v[m].b = MAX(v[m].b, v[i].b);
    else v[++m] = v[i];
  }
  return m + 1;
}

static uint64_t total(const Ival *v, size_t n) {
  uint64_t t = 0;
  for (size_t i = 0; i < n; i++) t += v[i].b - v[i].a;
  return t;
}

/* |union(a) intersected with union(b)|, both merged and sorted. */
static uint64_t overlap(const Ival *a, size_t na, const Ival *b, size_t nb) {
  uint64_t t = 0;
  for (size_t i = 0, j = 0; i < na && j < nb;) {
    fab_time_t lo = MAX(a[i].a, b[j].a), hi = MIN(a[i].b, b[j].b);
    if (hi > lo) t += hi - lo;
    if (a[i].b < b[j].b) i++;
    else j++;
  }
  return t;
}

static int span_order(const void *x, const void *y) {
  const FabSpanRec *p = x, *q = y;
  if (p->job != q->job) return p->job < q->job ? -1 : 1;
  if (p->step != q->step) return p->step < q->step ? -1 : 1;
  if (p->rank != q->rank) return p->rank < q->rank ? -1 : 1;
  return p->start < q->start ? -1 : p->start > q->start;
}

/* What the folds keep between calls. */
struct FabCollect {
  const FabDag *dag;
  FabCollRec *colls;
  FabJobRec *jobs;
  bool *open, *jopen;   /* per collective / job: an op not done */
  GArray *spans;        /* FabSpanRec */
  GHashTable *begins;   /* (coll + 1) << 32 | rank -> its COLL_BEGIN mark's end + 1 (0: not done) */
  GHashTable *sb, *se;  /* (step row + 1) << 32 | rank -> its STEP_BEGIN / STEP_END mark's end + 1 */
  uint32_t *first;      /* per job + 1: the row of its first step */
  bool *whole;          /* per step row: every rank's marks done (not cut by stop_time) */
  uint32_t nrows;
  uint32_t ncolls, capc; /* collectives recorded, room for them (a DAG made as it runs adds some) */
  uint32_t next;        /* the next op to fold */
  GArray *last;         /* int64_t per network attachment: the last collective whose bytes left by it (-1) */
};

/* A record for each collective the DAG has defined so far. */
static void sync_colls(FabCollect *c) {
  const FabDag *d = c->dag;
  uint32_t nc = d->colls->len;
  if (nc > c->capc) {
    uint32_t cap = MAX(nc, 2 * c->capc);
    c->colls = g_renew(FabCollRec, c->colls, cap);
    c->open = g_renew(bool, c->open, cap);
    c->capc = cap;
  }
  for (uint32_t k = c->ncolls; k < nc; k++) {
    const FabCollDef *cd = &g_array_index(d->colls, FabCollDef, k);
    c->colls[k] = (FabCollRec){cd->op, cd->algorithm, cd->protocol, cd->tag, cd->bytes, cd->count, cd->dtype_bytes,
                               cd->nranks, cd->root, cd->channels, cd->job, cd->step, FAB_TIME_MAX, 0, 0, 0, 0,
                               0, 0, 0};
    c->open[k] = false;
  }
  c->ncolls = nc;
}

FabCollect *fab_collect_new(const FabDag *d) {
  FabCollect *c = g_new0(FabCollect, 1);
  uint32_t nj = d->jobs->len;
  c->dag = d;
  c->jobs = g_new0(FabJobRec, nj ? nj : 1);
  c->jopen = g_new0(bool, nj ? nj : 1);
  sync_colls(c);
  for (uint32_t j = 0; j < nj; j++) {
    const FabJobDef *jd = &g_array_index(d->jobs, FabJobDef, j);
    c->jobs[j] = (FabJobRec){jd->name, jd->kind, jd->nranks, 0, 0, 0, FAB_TIME_MAX, 0, 0, NULL};
  }
  c->spans = g_array_new(FALSE, FALSE, sizeof(FabSpanRec));
  c->last = g_array_new(FALSE, FALSE, sizeof(int64_t));
  G_STATIC_ASSERT(sizeof(gsize) >= 8); /* keys pack an index and an endpoint in 32 bits each */
  c->begins = g_hash_table_new(NULL, NULL);
  c->sb = g_hash_table_new(NULL, NULL);
  c->se = g_hash_table_new(NULL, NULL);
  c->first = g_new0(uint32_t, nj + 1);
  for (uint32_t j = 0; j < nj; j++) c->first[j + 1] = c->first[j] + g_array_index(d->jobs, FabJobDef, j).steps;
  c->nrows = c->first[nj];
  c->whole = g_new(bool, c->nrows + 1);
  for (uint32_t k = 0; k < c->nrows; k++) c->whole[k] = true;
  return c;
}

void fab_collect_free(FabCollect *c) {
  if (!c) return;
  g_free(c->colls);
  g_free(c->jobs);
  g_free(c->open);
  g_free(c->jopen);
  if (c->spans) g_array_free(c->spans, TRUE);
  g_array_free(c->last, TRUE);
  g_hash_table_destroy(c->begins);
  g_hash_table_destroy(c->sb);
  g_hash_table_destroy(c->se);
  g_free(c->first);
  g_free(c->whole);
  g_free(c);
}

/* An op's state and times: the executor's, or measured ones (FabOpTimes). */
static inline int st_of(const FabCollectIn *in, uint32_t i) {
  return in->exec ? fab_exec_state(in->exec, i) : in->times->state[i];
}
static inline fab_time_t began(const FabCollectIn *in, uint32_t i) {
  return in->exec ? fab_exec_began(in->exec, i) : in->times->began[i];
}
static inline fab_time_t ended(const FabCollectIn *in, uint32_t i) {
  return in->exec ? fab_exec_ended(in->exec, i) : in->times->ended[i];
}

static gpointer key(uint64_t a, uint32_t rank) { return GSIZE_TO_POINTER((gsize)(a + 1) << 32 | rank); }
static gpointer end1(fab_time_t t) { return GSIZE_TO_POINTER((gsize)t + 1); }

/* Collectives and jobs: from the first op of theirs to begin to the last one done. */
static void fold_colls_and_jobs(FabCollect *c, const FabCollectIn *in, uint32_t i, const FabOp *o, int st) {
  bool done = st == FAB_EXEC_DONE;
  FabJobRec *jr = &c->jobs[o->job];
  if (st) jr->start = MIN(jr->start, began(in, i));
  if (done) jr->end = MAX(jr->end, ended(in, i));
  else c->jopen[o->job] = true;
  if (o->kind <= FAB_OP_NVLS) {
    jr->flows++;
    jr->bytes += o->bytes;
    jr->completed += in->rec(in->ctx, i)->end != 0;
  }
  if (o->coll >= 0) {
    FabCollRec *cr = &c->colls[o->coll];
    if (st) cr->start = MIN(cr->start, began(in, i));
    if (done) cr->end = MAX(cr->end, ended(in, i));
    else c->open[o->coll] = true;
    int64_t nic[FAB_COLLECT_MAX_NICS];
    uint32_t nn = o->kind <= FAB_OP_NVLS && in->nics ? in->nics(in->ctx, i, nic) : 0;
    if (nn) cr->nic_bytes += o->bytes; /* out of its node */
    for (uint32_t m = 0; m < nn; m++) {
      for (guint k = c->last->len; k <= (guint)nic[m]; k++) g_array_append_vals(c->last, &(int64_t){-1}, 1);
      int64_t *seen = &g_array_index(c->last, int64_t, nic[m]);
      if (*seen != o->coll) cr->nics++, *seen = o->coll;
    }
  }
}

/* The timeline: compute ops, collectives per rank (from its COLL_BEGIN mark to
** its COLL_END), pipeline transfers. */
/* The trace node op i stands for (UINT64_MAX: none). */
static uint64_t trace_node(const FabDag *d, uint32_t i) {
  gpointer v = d->trace_node ? g_hash_table_lookup(d->trace_node, GUINT_TO_POINTER(i)) : NULL;
  return v ? (uint64_t)(uintptr_t)v - 1 : UINT64_MAX;
}

static void fold_timeline(FabCollect *c, const FabCollectIn *in, uint32_t i, const FabOp *o, bool done) {
  if (o->kind == FAB_OP_COMPUTE && done) {
    FabSpanRec sp = {o->src, o->job, 0, o->mark, -1, o->step, began(in, i), ended(in, i), trace_node(c->dag, i)};
    g_array_append_val(c->spans, sp);
  } else if (o->kind == FAB_OP_MARK && o->coll >= 0 && o->mark == FAB_MARK_COLL_BEGIN) {
    g_hash_table_insert(c->begins, key((uint64_t)o->coll, o->src), done ? end1(ended(in, i)) : NULL);
  } else if (o->kind == FAB_OP_MARK && o->coll >= 0 && o->mark == FAB_MARK_COLL_END && done) {
    gsize b = GPOINTER_TO_SIZE(g_hash_table_lookup(c->begins, key((uint64_t)o->coll, o->src)));
    if (b) {
      FabSpanRec sp = {o->src, o->job, 1, 0, o->coll, o->step, (fab_time_t)b - 1, ended(in, i), trace_node(c->dag, i)};
      g_array_append_val(c->spans, sp);
    }
  } else if (o->kind == FAB_OP_FLOW && o->coll >= 0 && done) { /* pipeline send/recv: no marks, a span per send */
    const FabCollDef *cd = &g_array_index(c->dag->colls, FabCollDef, o->coll);
    if (cd->tag && (g_str_equal(cd->tag, "pp") || g_str_equal(cd->tag, "p2p"))) {
      FabSpanRec sp = {o->src, o->job, 2, 0, o->coll, o->step, in->rec(in->ctx, i)->start, ended(in, i),
                       trace_node(c->dag, i)};
      g_array_append_val(c->spans, sp);
    }
  }
}

/* Step marks: per (job, step, rank), its STEP_BEGIN and STEP_END. */
static void fold_steps(FabCollect *c, const FabCollectIn *in, uint32_t i, const FabOp *o, bool done) {
  if (o->kind != FAB_OP_MARK || (o->mark != FAB_MARK_STEP_BEGIN && o->mark != FAB_MARK_STEP_END)) return;
  if (o->job >= c->dag->jobs->len || o->step >= c->first[o->job + 1] - c->first[o->job]) return;
  uint32_t row = c->first[o->job] + o->step;
  if (!done) {
    c->whole[row] = false;
    return;
  }
  g_hash_table_insert(o->mark == FAB_MARK_STEP_BEGIN ? c->sb : c->se, key(row, o->src),
                      end1(ended(in, i)));
}

void fab_collect_fold(FabCollect *c, const FabCollectIn *in, uint32_t to) {
  const FabDag *d = c->dag;
  g_assert(c->next >= fab_dag_base(d) && to <= fab_dag_len(d));
  sync_colls(c);
  for (uint32_t i = c->next; i < to; i++) {
    const FabOp *o = fab_dag_op(d, i);
    int st = st_of(in, i);
    fold_colls_and_jobs(c, in, i, o, st);
    fold_timeline(c, in, i, o, st == FAB_EXEC_DONE);
    fold_steps(c, in, i, o, st == FAB_EXEC_DONE);
  }
  c->next = MAX(c->next, to);
}

static void finish_colls_and_jobs(FabCollect *c, FabResults *res) {
  sync_colls(c);
  uint32_t nc = c->ncolls, nj = c->dag->jobs->len;
  for (uint32_t k = 0; k < nc; k++) {
    if (c->open[k] || c->colls[k].start == FAB_TIME_MAX) c->colls[k].end = 0;
    if (c->colls[k].start == FAB_TIME_MAX) c->colls[k].start = 0;
  }
  for (uint32_t j = 0; j < nj; j++) {
    if (c->jopen[j]) c->jobs[j].end = 0;
    if (c->jobs[j].start == FAB_TIME_MAX) c->jobs[j].start = 0;
  }
  res->n_colls = nc;
  res->colls = c->colls;
  res->n_jobs = nj;
  res->jobs = c->jobs;
  c->colls = NULL;
  c->jobs = NULL;
}

/* ---- steps: per (job, step, rank) from its STEP_BEGIN to STEP_END marks ---- */

typedef struct Steps {
  GArray *rows;       /* FabStepRec, a row per (job, step) */
  uint32_t *first;    /* per job + 1: the row of its first step */
  bool *whole;        /* per row: every rank began and ended the step (not cut by stop_time) */
  double *len, *busy; /* per row: the window x ranks, and the busy time in it (s) */
} Steps;

/* Each step's window: from the first rank's begin to the last rank's end. */
static void step_windows(const FabCollect *c, Steps *s) {
  const FabDag *d = c->dag;
  for (guint k = 0; k < s->rows->len; k++) {
    FabStepRec *sr = &g_array_index(s->rows, FabStepRec, k);
    const FabJobDef *jd = &g_array_index(d->jobs, FabJobDef, sr->job);
    for (uint32_t q = 0; q < jd->nranks; q++) {
      gsize b = GPOINTER_TO_SIZE(g_hash_table_lookup(c->sb, key(k, jd->ranks[q])));
      gsize en = GPOINTER_TO_SIZE(g_hash_table_lookup(c->se, key(k, jd->ranks[q])));
      if (!b || !en) {
        s->whole[k] = false;
        continue;
      }
      sr->start = MIN(sr->start, (fab_time_t)b - 1);
      sr->end = MAX(sr->end, (fab_time_t)en - 1);
    }
    if (sr->start == FAB_TIME_MAX) sr->start = 0;
    /* every rank's GPU is accounted over the whole step, first begin to last end:
    ** the stage that finishes early idles until the step is over (the pipeline's tail) */
    s->len[k] = fab_time_to_s(sr->end - sr->start) * jd->nranks;
  }
}

/* What filled each rank's part of each step: compute, collectives, both. */
static void step_use(GArray *spans, Steps *s) {
  g_array_sort(spans, span_order);
  GArray *cv = g_array_new(FALSE, FALSE, sizeof(Ival)), *mv = g_array_new(FALSE, FALSE, sizeof(Ival));
  for (guint x = 0; x < spans->len;) { /* one group of spans per (job, step, rank) */
    const FabSpanRec *g0 = &g_array_index(spans, FabSpanRec, x);
    g_array_set_size(cv, 0);
    g_array_set_size(mv, 0);
    guint y = x;
    for (; y < spans->len; y++) {
      const FabSpanRec *sp = &g_array_index(spans, FabSpanRec, y);
      if (sp->job != g0->job || sp->step != g0->step || sp->rank != g0->rank) break;
      Ival iv = {sp->start, sp->end};
      if (sp->kind == 0) g_array_append_val(cv, iv);
      else if (sp->kind == 1) g_array_append_val(mv, iv);
    }
    if (g0->step < s->first[g0->job + 1] - s->first[g0->job]) {
      uint32_t k = s->first[g0->job] + g0->step;
      FabStepRec *sr = &g_array_index(s->rows, FabStepRec, k);
      size_t ncv = merge((Ival *)(void *)cv->data, cv->len), nmv = merge((Ival *)(void *)mv->data, mv->len);
      uint64_t tc = total((Ival *)(void *)cv->data, ncv), tm = total((Ival *)(void *)mv->data, nmv);
      uint64_t to = overlap((Ival *)(void *)cv->data, ncv, (Ival *)(void *)mv->data, nmv);
      sr->compute_s += fab_time_to_s(tc);
      sr->comm_s += fab_time_to_s(tm);
      sr->overlap_s += fab_time_to_s(to);
      sr->exposed_comm_s += fab_time_to_s(tm - to);
      s->busy[k] += fab_time_to_s(tc + tm - to);
    }
    x = y;
  }
  g_array_free(cv, TRUE);
  g_array_free(mv, TRUE);
}

static void steps(FabCollect *c, GArray *spans, FabResults *res) {
  const FabDag *d = c->dag;
  uint32_t nj = d->jobs->len;
  Steps s = {g_array_new(FALSE, TRUE, sizeof(FabStepRec)), c->first, c->whole, NULL, NULL};
  for (uint32_t j = 0; j < nj; j++) {
    const FabJobDef *jd = &g_array_index(d->jobs, FabJobDef, j);
    for (uint32_t st = 0; st < jd->steps; st++) {
      FabStepRec sr = {.job = j, .step = st, .start = FAB_TIME_MAX};
      g_array_append_val(s.rows, sr);
    }
  }
  guint n = s.rows->len;
  g_assert(n == c->nrows);
  s.len = g_new0(double, n + 1);
  s.busy = g_new0(double, n + 1);
  if (n) {
    step_windows(c, &s);
    step_use(spans, &s);
    for (guint k = 0; k < n; k++) { /* averages over the job's ranks */
      FabStepRec *sr = &g_array_index(s.rows, FabStepRec, k);
      double nr = g_array_index(d->jobs, FabJobDef, sr->job).nranks;
      sr->bubble_s = MAX(0.0, s.len[k] - s.busy[k]) / nr;
      sr->compute_s /= nr;
      sr->comm_s /= nr;
      sr->overlap_s /= nr;
      sr->exposed_comm_s /= nr;
    }
  }
  for (guint k = n; k-- > 0;) /* report only whole steps */
    if (!s.whole[k]) g_array_remove_index(s.rows, k);
  res->n_steps = s.rows->len;
  res->steps = (FabStepRec *)(void *)g_array_free(s.rows, FALSE);
  g_free(s.len);
  g_free(s.busy);
}

void fab_collect_finish(FabCollect *c, const FabCollectIn *in, FabResults *res) {
  fab_collect_fold(c, in, fab_dag_len(c->dag));
  finish_colls_and_jobs(c, res);
  steps(c, c->spans, res);
  res->n_spans = c->spans->len;
  res->spans = (FabSpanRec *)(void *)g_array_free(c->spans, FALSE);
  c->spans = NULL;
}

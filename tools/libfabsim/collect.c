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

/* ---- collectives and jobs: from the first op of theirs to begin to the last one done */

static void colls_and_jobs(const FabCollectIn *in, FabResults *res) {
  const FabDag *d = in->dag;
  uint32_t nc = d->colls->len, nj = d->jobs->len;
  res->n_colls = nc;
  res->colls = g_new0(FabCollRec, nc ? nc : 1);
  bool *open = g_new0(bool, nc ? nc : 1), *jopen = g_new0(bool, nj ? nj : 1);
  for (uint32_t c = 0; c < nc; c++) {
    const FabCollDef *cd = &g_array_index(d->colls, FabCollDef, c);
    res->colls[c] = (FabCollRec){cd->op, cd->algorithm, cd->protocol, cd->tag, cd->bytes, cd->count, cd->dtype_bytes,
                                 cd->nranks, cd->root, cd->channels, cd->job, cd->step, FAB_TIME_MAX, 0, 0, 0, 0};
  }
  res->n_jobs = nj;
  res->jobs = g_new0(FabJobRec, nj ? nj : 1);
  for (uint32_t j = 0; j < nj; j++) {
    const FabJobDef *jd = &g_array_index(d->jobs, FabJobDef, j);
    res->jobs[j] = (FabJobRec){jd->name, jd->kind, jd->nranks, 0, 0, 0, FAB_TIME_MAX, 0, 0, NULL};
  }
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = fab_dag_op(d, i);
    int st = fab_exec_state(in->exec, i);
    bool done = st == FAB_EXEC_DONE;
    FabJobRec *jr = &res->jobs[o->job];
    if (st) jr->start = MIN(jr->start, fab_exec_began(in->exec, i));
    if (done) jr->end = MAX(jr->end, fab_exec_ended(in->exec, i));
    else jopen[o->job] = true;
    if (o->kind <= FAB_OP_NVLS) {
      jr->flows++;
      jr->bytes += o->bytes;
      jr->completed += in->flows[in->flow_of[i]].end != 0;
    }
    if (o->coll >= 0) {
      FabCollRec *cr = &res->colls[o->coll];
      if (st) cr->start = MIN(cr->start, fab_exec_began(in->exec, i));
      if (done) cr->end = MAX(cr->end, fab_exec_ended(in->exec, i));
      else open[o->coll] = true;
    }
  }
  for (uint32_t c = 0; c < nc; c++) {
    if (open[c] || res->colls[c].start == FAB_TIME_MAX) res->colls[c].end = 0;
    if (res->colls[c].start == FAB_TIME_MAX) res->colls[c].start = 0;
  }
  for (uint32_t j = 0; j < nj; j++) {
    if (jopen[j]) res->jobs[j].end = 0;
    if (res->jobs[j].start == FAB_TIME_MAX) res->jobs[j].start = 0;
  }
  g_free(open);
  g_free(jopen);
}

/* ---- the timeline: compute ops, collectives per rank, pipeline transfers - */

static GArray *timeline(const FabCollectIn *in) {
  const FabDag *d = in->dag;
  const FabExec *x = in->exec;
  GArray *spans = g_array_new(FALSE, FALSE, sizeof(FabSpanRec));
  G_STATIC_ASSERT(sizeof(gsize) >= 8); /* keys pack an index and an endpoint in 32 bits each */
  GHashTable *begins = g_hash_table_new(NULL, NULL); /* (coll + 1) << 32 | rank -> COLL_BEGIN op + 1 */
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = fab_dag_op(d, i);
    bool done = fab_exec_state(x, i) == FAB_EXEC_DONE;
    if (o->kind == FAB_OP_COMPUTE && done) {
      FabSpanRec sp = {o->src, o->job, 0, o->mark, -1, o->step, fab_exec_began(x, i), fab_exec_ended(x, i)};
      g_array_append_val(spans, sp);
    } else if (o->kind == FAB_OP_MARK && o->coll >= 0 && o->mark == FAB_MARK_COLL_BEGIN) {
      g_hash_table_insert(begins, GSIZE_TO_POINTER(((gsize)o->coll + 1) << 32 | o->src), GUINT_TO_POINTER(i + 1));
    } else if (o->kind == FAB_OP_MARK && o->coll >= 0 && o->mark == FAB_MARK_COLL_END && done) {
      guint b = GPOINTER_TO_UINT(g_hash_table_lookup(begins, GSIZE_TO_POINTER(((gsize)o->coll + 1) << 32 | o->src)));
      if (b && fab_exec_state(x, b - 1) == FAB_EXEC_DONE) {
        FabSpanRec sp = {o->src, o->job, 1, 0, o->coll, o->step, fab_exec_ended(x, b - 1), fab_exec_ended(x, i)};
        g_array_append_val(spans, sp);
      }
    } else if (o->kind == FAB_OP_FLOW && o->coll >= 0 && done) { /* pipeline send/recv: no marks, a span per send */
      const FabCollDef *cd = &g_array_index(d->colls, FabCollDef, o->coll);
      if (cd->tag && g_str_equal(cd->tag, "pp")) {
        FabSpanRec sp = {o->src, o->job, 2, 0, o->coll, o->step, in->flows[in->flow_of[i]].start, fab_exec_ended(x, i)};
        g_array_append_val(spans, sp);
      }
    }
  }
  g_hash_table_destroy(begins);
  return spans;
}

/* ---- steps: per (job, step, rank) from its STEP_BEGIN to STEP_END marks ---- */

typedef struct Steps {
  GArray *rows;       /* FabStepRec, a row per (job, step) */
  uint32_t *first;    /* per job + 1: the row of its first step */
  bool *whole;        /* per row: every rank began and ended the step (not cut by stop_time) */
  double *len, *busy; /* per row: the window x ranks, and the busy time in it (s) */
} Steps;

/* Each step's window: from the first rank's begin to the last rank's end. */
static void step_windows(const FabCollectIn *in, Steps *s) {
  const FabDag *d = in->dag;
  uint32_t nj = d->jobs->len;
  GHashTable *sb = g_hash_table_new(NULL, NULL), *se = g_hash_table_new(NULL, NULL);
  for (uint32_t i = 0; i < fab_dag_len(d); i++) {
    const FabOp *o = fab_dag_op(d, i);
    if (o->kind != FAB_OP_MARK || (o->mark != FAB_MARK_STEP_BEGIN && o->mark != FAB_MARK_STEP_END)) continue;
    if (o->job >= nj || o->step >= s->first[o->job + 1] - s->first[o->job]) continue;
    if (fab_exec_state(in->exec, i) != FAB_EXEC_DONE) {
      s->whole[s->first[o->job] + o->step] = false;
      continue;
    }
    gsize key = ((gsize)(s->first[o->job] + o->step) + 1) << 32 | o->src;
    g_hash_table_insert(o->mark == FAB_MARK_STEP_BEGIN ? sb : se, GSIZE_TO_POINTER(key), GUINT_TO_POINTER(i + 1));
  }
  for (guint k = 0; k < s->rows->len; k++) {
    FabStepRec *sr = &g_array_index(s->rows, FabStepRec, k);
    const FabJobDef *jd = &g_array_index(d->jobs, FabJobDef, sr->job);
    for (uint32_t q = 0; q < jd->nranks; q++) {
      gsize key = ((gsize)k + 1) << 32 | jd->ranks[q];
      guint b = GPOINTER_TO_UINT(g_hash_table_lookup(sb, GSIZE_TO_POINTER(key)));
      guint en = GPOINTER_TO_UINT(g_hash_table_lookup(se, GSIZE_TO_POINTER(key)));
      if (!b || !en) {
        s->whole[k] = false;
        continue;
      }
      sr->start = MIN(sr->start, fab_exec_ended(in->exec, b - 1));
      sr->end = MAX(sr->end, fab_exec_ended(in->exec, en - 1));
    }
    if (sr->start == FAB_TIME_MAX) sr->start = 0;
    /* every rank's GPU is accounted over the whole step, first begin to last end:
    ** the stage that finishes early idles until the step is over (the pipeline's tail) */
    s->len[k] = fab_time_to_s(sr->end - sr->start) * jd->nranks;
  }
  g_hash_table_destroy(sb);
  g_hash_table_destroy(se);
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

static void steps(const FabCollectIn *in, GArray *spans, FabResults *res) {
  const FabDag *d = in->dag;
  uint32_t nj = d->jobs->len;
  Steps s = {g_array_new(FALSE, TRUE, sizeof(FabStepRec)), g_new0(uint32_t, nj + 1), NULL, NULL, NULL};
  for (uint32_t j = 0; j < nj; j++) {
    const FabJobDef *jd = &g_array_index(d->jobs, FabJobDef, j);
    s.first[j + 1] = s.first[j] + jd->steps;
    for (uint32_t st = 0; st < jd->steps; st++) {
      FabStepRec sr = {.job = j, .step = st, .start = FAB_TIME_MAX};
      g_array_append_val(s.rows, sr);
    }
  }
  guint n = s.rows->len;
  s.whole = g_new(bool, n + 1);
  for (guint k = 0; k < n; k++) s.whole[k] = true;
  s.len = g_new0(double, n + 1);
  s.busy = g_new0(double, n + 1);
  if (n) {
    step_windows(in, &s);
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
  g_free(s.first);
  g_free(s.whole);
  g_free(s.len);
  g_free(s.busy);
}

void fab_collect(const FabCollectIn *in, FabResults *res) {
  colls_and_jobs(in, res);
  GArray *spans = timeline(in);
  steps(in, spans, res);
  res->n_spans = spans->len;
  res->spans = (FabSpanRec *)(void *)g_array_free(spans, FALSE);
}

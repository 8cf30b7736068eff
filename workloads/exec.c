/* The operation-DAG executor. See exec.h. */
#include "exec.h"

/* Per op. */
typedef struct XOp {
  fab_time_t t0, t1; /* began (posted, computing), done */
  fab_time_t ts;     /* its last packet left (FAB_TIME_MAX: not yet, or not a flow) */
  uint32_t left : 30; /* dependencies not yet met (fab_dag_add keeps an op's below 2^30) */
  uint32_t state : 2; /* FAB_EXEC_* */
  uint32_t head;      /* its dependents: the first edge (FAB_OP_NONE: none), in op order */
  uint32_t tail;      /* the last edge */
  uint32_t e0;        /* the first edge its own dependencies made */
} XOp;
G_STATIC_ASSERT(sizeof(XOp) == 40);

/* "Op `to` waits for the op whose list this is on" (| FAB_DEP_SENT: for its send). */
typedef struct Edge {
  uint32_t to, next;
} Edge;

struct FabExec {
  FabElem el;
  FabEngine *eng;
  FabDag *dag;
  FabExecHooks hooks;
  void *ctx;
  uint32_t nops, ops_done;  /* ops taken in from the DAG so far, and done */
  uint32_t peak;            /* the most ops held at once (taken in, not retired) */
  fab_time_t last_end;      /* ps: latest completion */
  FabDeq ops;               /* XOp, by op index; the retired ones dropped */
  FabDeq edges;             /* Edge, by edge number; those of retired ops dropped */
  fab_time_t max_pre;       /* the largest `pre` taken in */
  fab_time_t retired_t1;    /* the latest completion among retired ops */
  uint64_t inexact;         /* posts that used retired_t1 for a retired dependency it exceeded */
  GArray *todo;             /* Done: ops to complete, with their times (a worklist, not recursion) */
  FabLock *lock;            /* NULL: one engine; else held while a partition's thread runs it (fab_exec_set_lock) */
  uint32_t busy;            /* inside a release or a hook call: nothing may be retired now */
  bool draining, started;
};

static void exec_wake(FabEngine *eng, void *self, uint64_t arg);
static const FabOps exec_ops = {"dag", exec_wake};
static void ready(FabExec *x, uint32_t i);

/* An op to complete, at its time. */
typedef struct Done {
  uint32_t op;
  fab_time_t t;
} Done;

static inline XOp *xop(const FabExec *x, uint32_t i) { return fab_deq_at(&x->ops, i); }
static inline Edge *edge(const FabExec *x, uint32_t e) { return fab_deq_at(&x->edges, e); }

/* Take in the ops the DAG made since the last call: each dependency not met
** yet puts the op on that dependency's list (after the ops already there:
** lists stay in op order, so releases are deterministic). */
static void adopt(FabExec *x) {
  const FabDag *dag = x->dag;
  uint32_t from = x->nops, to = fab_dag_len(dag);
  for (uint32_t j = from; j < to; j++) {
    g_assert(fab_deq_end(&x->edges) < UINT32_MAX);
    XOp *me = fab_deq_push(&x->ops);
    me->ts = FAB_TIME_MAX;
    me->head = me->tail = FAB_OP_NONE;
    me->e0 = (uint32_t)fab_deq_end(&x->edges);
    const FabOp *o = fab_dag_op(dag, j);
    x->max_pre = MAX(x->max_pre, o->pre);
    if (o->kind == FAB_OP_FLOW && o->mark == FAB_FLOW_RDV && x->hooks.ctrl) /* its wait counts as a pre */
      x->max_pre = MAX(x->max_pre, x->hooks.ctrl(x->ctx, o->dst, o->src));
    uint32_t left = 0;
    for (uint32_t k = 0; k < o->ndeps; k++) {
      uint32_t d = fab_dag_dep(dag, o, k), on = d & ~FAB_DEP_SENT;
      if (on < x->ops.first) continue; /* retired: done and sent */
      XOp *od = xop(x, on);
      if (d & FAB_DEP_SENT ? od->ts != FAB_TIME_MAX : od->state == FAB_EXEC_DONE) continue;
      uint32_t e = (uint32_t)fab_deq_end(&x->edges);
      *(Edge *)fab_deq_push(&x->edges) = (Edge){j | (d & FAB_DEP_SENT), FAB_OP_NONE};
      if (od->tail == FAB_OP_NONE) od->head = e;
      else edge(x, od->tail)->next = e;
      od->tail = e;
      left++;
    }
    xop(x, j)->left = left;
    /* an op made during the run waits for one not yet done (dag.h's contract): never ready on arrival */
    g_assert(left > 0 || !x->started);
  }
  x->nops = to;
  x->peak = MAX(x->peak, (uint32_t)x->ops.len);
  if (to > from && x->hooks.grow) x->hooks.grow(x->ctx, from, to);
}

FabExec *fab_exec_new(FabEngine *eng, FabDag *dag, const FabExecHooks *hooks, void *ctx) {
  FabExec *x = g_new0(FabExec, 1);
  fab_elem_init(&x->el, &exec_ops);
  x->eng = eng;
  x->dag = dag;
  x->hooks = *hooks;
  x->ctx = ctx;
  fab_deq_init(&x->ops, sizeof(XOp));
  fab_deq_init(&x->edges, sizeof(Edge));
  x->todo = g_array_new(FALSE, FALSE, sizeof(Done));
  if (fab_dag_len(dag) == 0) fab_dag_more(dag); /* an unfolding DAG's first batch */
  g_assert(fab_dag_base(dag) == 0);
  adopt(x);
  return x;
}

void fab_exec_free(FabExec *x) {
  if (!x) return;
  fab_deq_clear(&x->ops);
  fab_deq_clear(&x->edges);
  g_array_free(x->todo, TRUE);
  g_free(x);
}

FabElem *fab_exec_elem(FabExec *x) { return &x->el; }

static void begin(FabExec *x, uint32_t i, fab_time_t now);
static void complete(FabExec *x, uint32_t i, fab_time_t now);

/* When op i's dependencies were met: the latest of their times (done; for
** FAB_DEP_SENT, sent); the engine's time for an op with none held (a root,
** before the run). On one engine this is the time of the report that made it
** ready, the engine's now; in a parallel run that report may come from a
** partition whose clock is behind the one that reported the latest
** dependency (driver.c), so the op's times never come from the clock. A
** retired dependency was met before every one still held (it was retired
** done, before the op was taken in). */
static fab_time_t met_at(const FabExec *x, const FabOp *o) {
  fab_time_t t = 0;
  bool held = false;
  for (uint32_t k = 0; k < o->ndeps; k++) {
    uint32_t d = fab_dag_dep(x->dag, o, k), on = d & ~FAB_DEP_SENT;
    if (on < x->ops.first) continue;
    const XOp *od = xop(x, on);
    t = MAX(t, d & FAB_DEP_SENT ? od->ts : od->t1);
    held = true;
  }
  return held ? t : x->eng->now;
}

/* When a flow may be posted: `pre` after its start time and after its data
** (its dependencies without FAB_DEP_SENT: what it carries), and not before
** `now`, when its dependencies were met. A dependency on a send only orders
** the flow behind the one before it on its connection: the latency of the
** step overlaps that send. */
static fab_time_t post_at(FabExec *x, const FabOp *o, fab_time_t now) {
  fab_time_t t = o->start;
  bool old = false;
  for (uint32_t k = 0; k < o->ndeps; k++) {
    uint32_t d = fab_dag_dep(x->dag, o, k);
    if (d & FAB_DEP_SENT) continue;
    if (d < x->ops.first) old = true; /* retired: done by retired_t1 at the latest */
    else t = MAX(t, xop(x, d)->t1);
  }
  if (old && x->retired_t1 + o->pre > MAX(t + o->pre, now)) { /* the bound matters: exactness not assured */
    x->inexact++;
    t = x->retired_t1;
  }
  fab_time_t at = MAX(t + o->pre, now);
  if (o->kind == FAB_OP_FLOW && o->mark == FAB_FLOW_RDV && o->ndeps && x->hooks.ctrl) {
    /* receiver-driven: its first dependency is the receiver's readiness, known here a control message later */
    uint32_t d = fab_dag_dep(x->dag, o, 0), on = d & ~FAB_DEP_SENT;
    fab_time_t c = x->hooks.ctrl(x->ctx, o->dst, o->src);
    if (on >= x->ops.first) {
      const XOp *od = xop(x, on);
      at = MAX(at, (d & FAB_DEP_SENT ? od->ts : od->t1) + c);
    } else if (x->retired_t1 + c > at) { /* retired (ops retire max_pre after, which counts c): a bound */
      x->inexact++;
      at = x->retired_t1 + c;
    }
  }
  return at;
}

/* Op i's dependencies are met: begin it, or wait for its start time (an
** event keyed by the op, not by whoever reported its last dependency, in the
** partition the owner names). */
static void ready(FabExec *x, uint32_t i) {
  x->busy++;
  if (i >= x->dag->batch0 && fab_dag_more(x->dag)) adopt(x); /* the newest batch begins: make the next */
  const FabOp *o = fab_dag_op(x->dag, i);
  /* one engine: met when the last report came, now (no walk over the dependencies per op) */
  fab_time_t now = x->lock ? met_at(x, o) : x->eng->now;
#ifdef FAB_DEBUG_CHECKS
  if (!x->lock && met_at(x, o) != now) __builtin_trap();
#endif
  if (o->kind <= FAB_OP_NVLS) { /* a flow posts itself, for later if need be: no event of ours */
    XOp *me = xop(x, i);
    me->state = FAB_EXEC_RUNNING;
    me->t0 = MAX(o->start, now);
    x->hooks.post(x->ctx, i, post_at(x, o, now));
  } else {
    fab_time_t at = MAX(o->start, now + (o->kind == FAB_OP_MARK ? o->pre : 0)); /* a mark's pre: a barrier's */
    if (at > now) {
      uint64_t tie = (uint64_t)fab_elem_id(&x->el) << FAB_TIE_SEQ_BITS | (uint64_t)i << 1; /* our count is unused */
      uint32_t part = x->hooks.part ? x->hooks.part(x->ctx, i) : 0;
      if (part != FAB_EXEC_ELSEWHERE) fab_engine_part_at_tie(x->eng, part, at, tie, x, i);
    } else {
      begin(x, i, now);
    }
  }
  x->busy--;
}

/* Release the dependents of op i that wait for it to be done (sent: false)
** or for its last packet to leave (sent: true). */
static void release(FabExec *x, uint32_t i, bool sent) {
  x->busy++;
  for (uint32_t e = xop(x, i)->head; e != FAB_OP_NONE; e = edge(x, e)->next) {
    uint32_t d = edge(x, e)->to;
    if (((d & FAB_DEP_SENT) != 0) != sent) continue;
    d &= ~FAB_DEP_SENT;
    XOp *od = xop(x, d);
    g_assert(od->left > 0);
    if (--od->left == 0) ready(x, d);
  }
  x->busy--;
}

/* Op i is done at `now`. Ops done in passing (marks) are queued, not recursed into. */
static void complete(FabExec *x, uint32_t i, fab_time_t now) {
  Done dn = {i, now};
  g_array_append_val(x->todo, dn);
  if (x->draining) return;
  x->draining = true;
  for (guint at = 0; at < x->todo->len; at++) { /* first in, first out: dependents in op order */
    Done d = g_array_index(x->todo, Done, at);
    uint32_t k = d.op;
    XOp *me = xop(x, k);
    g_assert(me->state != FAB_EXEC_DONE);
    me->state = FAB_EXEC_DONE;
    me->t1 = d.t;
    x->ops_done++;
    if (me->t1 > x->last_end) x->last_end = me->t1;
    release(x, k, false);
  }
  g_array_set_size(x->todo, 0);
  x->draining = false;
}

/* Op i begins at `now` (when its dependencies were met, or its start time). */
static void begin(FabExec *x, uint32_t i, fab_time_t now) {
  const FabOp *o = fab_dag_op(x->dag, i);
  XOp *me = xop(x, i);
  me->state = FAB_EXEC_RUNNING;
  me->t0 = now;
  x->busy++;
  switch ((FabOpKind)o->kind) {
  case FAB_OP_FLOW:
  case FAB_OP_NVLS:
    x->hooks.post(x->ctx, i, post_at(x, o, now));
    break;
  case FAB_OP_COMPUTE: /* on its rank's GPU, now: a parallel run's owner makes sure its clock is there */
    g_assert(now == x->eng->now);
    x->hooks.compute(x->ctx, i, o->src, o->dur);
    break;
  case FAB_OP_MARK:
    complete(x, i, now);
    break;
  }
  x->busy--;
}

static void exec_wake(FabEngine *eng, void *self, uint64_t arg) {
  FabExec *x = self;
  if (x->lock) {
    fab_lock(x->lock);
    x->eng = eng;
  }
  if (x->hooks.woke) x->hooks.woke(x->ctx, (uint32_t)arg);
  begin(x, (uint32_t)arg, eng->now);
  if (x->lock) fab_unlock(x->lock);
}

void fab_exec_wake(FabExec *x, uint32_t op) { begin(x, op, x->eng->now); }

void fab_exec_set_lock(FabExec *x, FabLock *lock) { x->lock = lock; }
void fab_exec_set_engine(FabExec *x, FabEngine *eng) { x->eng = eng; }
FabEngine *fab_exec_engine(const FabExec *x) { return x->eng; }

void fab_exec_start(FabExec *x) {
  uint32_t n = x->nops; /* the first batch: the ops made later are never roots */
  x->started = true;
  for (uint32_t i = 0; i < n; i++) /* the roots (not ops their release made ready meanwhile) */
    if (!fab_dag_op(x->dag, i)->ndeps) ready(x, i);
}

void fab_exec_sent(FabExec *x, uint32_t op) {
  xop(x, op)->ts = x->eng->now;
  release(x, op, true);
}

void fab_exec_received(FabExec *x, uint32_t op) {
  const FabOp *o = fab_dag_op(x->dag, op);
  if (!o->post) complete(x, op, x->eng->now);
  else x->hooks.reduce(x->ctx, op, o->dst, o->post);
}

void fab_exec_done(FabExec *x, uint32_t op, fab_time_t began) {
  if (fab_dag_op(x->dag, op)->kind == FAB_OP_COMPUTE) xop(x, op)->t0 = began;
  complete(x, op, x->eng->now);
}

uint32_t fab_exec_ops(const FabExec *x) { return x->nops; }
uint32_t fab_exec_ops_done(const FabExec *x) { return x->ops_done; }
bool fab_exec_finished(const FabExec *x) { return x->ops_done == x->nops && x->dag->exhausted; }
fab_time_t fab_exec_last_end(const FabExec *x) { return x->last_end; }
int fab_exec_state(const FabExec *x, uint32_t i) { return xop(x, i)->state; }
fab_time_t fab_exec_began(const FabExec *x, uint32_t i) { return xop(x, i)->t0; }
fab_time_t fab_exec_ended(const FabExec *x, uint32_t i) { return xop(x, i)->t1; }
uint32_t fab_exec_base(const FabExec *x) { return (uint32_t)x->ops.first; }
uint64_t fab_exec_inexact(const FabExec *x) { return x->inexact; }
size_t fab_exec_bytes(const FabExec *x) { return fab_deq_bytes(&x->ops) + fab_deq_bytes(&x->edges); }

uint32_t fab_exec_retirable(const FabExec *x, uint32_t limit) {
  uint32_t r = (uint32_t)x->ops.first, end = x->busy ? r : MIN(x->nops, limit); /* busy: called from a hook */
  fab_time_t now = x->eng->now;
  for (; r < end; r++) {
    const XOp *o = xop(x, r);
    if (o->state != FAB_EXEC_DONE || o->t1 + x->max_pre > now) break;
  }
  return r;
}

void fab_exec_retire(FabExec *x, uint32_t upto) {
  g_assert(upto >= x->ops.first && upto <= fab_exec_retirable(x, upto));
  if (upto == x->ops.first) return;
  for (uint32_t r = (uint32_t)x->ops.first; r < upto; r++) x->retired_t1 = MAX(x->retired_t1, xop(x, r)->t1);
  uint32_t e = upto < x->nops ? xop(x, upto)->e0 : (uint32_t)fab_deq_end(&x->edges);
  fab_deq_drop(&x->ops, upto);
  fab_deq_drop(&x->edges, e);
}

uint32_t fab_exec_first_waiting(const FabExec *x, uint32_t *left) {
  for (uint32_t i = (uint32_t)x->ops.first; i < x->nops; i++)
    if (xop(x, i)->state == FAB_EXEC_WAITING) {
      *left = xop(x, i)->left;
      return i;
    }
  *left = 0;
  return FAB_OP_NONE;
}

bool fab_exec_check_order(const FabExec *x, uint32_t *op, uint32_t *dep) {
  for (uint32_t i = (uint32_t)x->ops.first; i < x->nops; i++) {
    const FabOp *o = fab_dag_op(x->dag, i);
    const XOp *me = xop(x, i);
    for (uint32_t k = 0; me->state && k < o->ndeps; k++) {
      uint32_t d = fab_dag_dep(x->dag, o, k), j = d & ~FAB_DEP_SENT;
      if (j < x->ops.first) continue; /* retired: done before anything still held began */
      const XOp *od = xop(x, j);
      bool met = d & FAB_DEP_SENT ? od->ts <= me->t0 : od->state == FAB_EXEC_DONE && od->t1 <= me->t0;
      if (!met) {
        *op = i;
        *dep = j;
        return false;
      }
    }
  }
  return true;
}

uint32_t fab_exec_peak(const FabExec *x) { return x->peak; }

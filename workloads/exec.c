/* The operation-DAG executor. See exec.h. */
#include "exec.h"

struct FabExec {
  FabElem el;
  FabEngine *eng;
  const FabDag *dag;
  FabExecHooks hooks;
  void *ctx;
  uint32_t nops, ops_done;
  fab_time_t last_end;      /* ps: latest completion */
  uint32_t *left;           /* dependencies not yet met, per op */
  uint32_t *out0, *out;     /* dependents: out[out0[i] .. out0[i+1]), each | FAB_DEP_SENT if it waits for the send */
  fab_time_t *t0, *t1;      /* per op: began (posted, computing), done */
  fab_time_t *ts;           /* per op: its last packet left (FAB_TIME_MAX: not yet, or not a flow) */
  uint8_t *state;           /* FAB_EXEC_* */
  GArray *todo;             /* ops to complete (a worklist, not recursion) */
  bool draining;
};

static void exec_wake(FabEngine *eng, void *self, uint64_t arg);
static const FabOps exec_ops = {"dag", exec_wake};

/* The dependents of every op, in op order (deterministic). */
static void dependents(FabExec *x) {
  const FabDag *dag = x->dag;
  uint32_t nops = x->nops;
  for (uint32_t i = 0; i < nops; i++) {
    const FabOp *o = fab_dag_op(dag, i);
    x->left[i] = o->ndeps;
    for (uint32_t k = 0; k < o->ndeps; k++) x->out0[(fab_dag_dep(dag, o, k) & ~FAB_DEP_SENT) + 1]++;
  }
  for (uint32_t i = 0; i < nops; i++) x->out0[i + 1] += x->out0[i];
  uint32_t *at = g_memdup2(x->out0, sizeof(uint32_t) * (nops ? nops : 1));
  for (uint32_t i = 0; i < nops; i++) {
    const FabOp *o = fab_dag_op(dag, i);
    for (uint32_t k = 0; k < o->ndeps; k++) {
      uint32_t d = fab_dag_dep(dag, o, k);
      x->out[at[d & ~FAB_DEP_SENT]++] = i | (d & FAB_DEP_SENT);
    }
  }
  g_free(at);
}

FabExec *fab_exec_new(FabEngine *eng, const FabDag *dag, const FabExecHooks *hooks, void *ctx) {
  FabExec *x = g_new0(FabExec, 1);
  uint32_t nops = fab_dag_len(dag);
  fab_elem_init(&x->el, &exec_ops);
  x->eng = eng;
  x->dag = dag;
  x->hooks = *hooks;
  x->ctx = ctx;
  x->nops = nops;
  x->left = g_new(uint32_t, nops ? nops : 1);
  x->out0 = g_new0(uint32_t, nops + 1);
  x->out = g_new(uint32_t, dag->deps->len ? dag->deps->len : 1);
  x->t0 = g_new0(fab_time_t, nops ? nops : 1);
  x->t1 = g_new0(fab_time_t, nops ? nops : 1);
  x->ts = g_new(fab_time_t, nops ? nops : 1);
  for (uint32_t i = 0; i < nops; i++) x->ts[i] = FAB_TIME_MAX;
  x->state = g_new0(uint8_t, nops ? nops : 1);
  x->todo = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  dependents(x);
  return x;
}

void fab_exec_free(FabExec *x) {
  if (!x) return;
  g_free(x->left);
  g_free(x->out0);
  g_free(x->out);
  g_free(x->t0);
  g_free(x->t1);
  g_free(x->ts);
  g_free(x->state);
  g_array_free(x->todo, TRUE);
  g_free(x);
}

FabElem *fab_exec_elem(FabExec *x) { return &x->el; }

static void begin(FabExec *x, uint32_t i);
static void complete(FabExec *x, uint32_t i);

/* When a flow may be posted: `pre` after its start time and after its data
** (its dependencies without FAB_DEP_SENT: what it carries), and not before
** now. A dependency on a send only orders the flow behind the one before
** it on its connection: the latency of the step overlaps that send. */
static fab_time_t post_at(const FabExec *x, const FabOp *o) {
  fab_time_t t = o->start;
  for (uint32_t k = 0; k < o->ndeps; k++) {
    uint32_t d = fab_dag_dep(x->dag, o, k);
    if (!(d & FAB_DEP_SENT) && x->t1[d] > t) t = x->t1[d];
  }
  return MAX(t + o->pre, x->eng->now);
}

/* Op i's dependencies are met now: begin it, or wait for its start time. */
static void ready(FabExec *x, uint32_t i) {
  const FabOp *o = fab_dag_op(x->dag, i);
  fab_time_t now = x->eng->now;
  if (o->kind <= FAB_OP_NVLS) { /* a flow posts itself, for later if need be: no event of ours */
    x->state[i] = FAB_EXEC_RUNNING;
    x->t0[i] = MAX(o->start, now);
    x->hooks.post(x->ctx, i, post_at(x, o));
  } else if (o->start > now) {
    fab_engine_at(x->eng, o->start, x, i);
  } else {
    begin(x, i);
  }
}

/* Release the dependents of op i that wait for it to be done (sent: false)
** or for its last packet to leave (sent: true). */
static void release(FabExec *x, uint32_t i, bool sent) {
  for (uint32_t k = x->out0[i]; k < x->out0[i + 1]; k++) {
    uint32_t d = x->out[k];
    if (((d & FAB_DEP_SENT) != 0) != sent) continue;
    d &= ~FAB_DEP_SENT;
    g_assert(x->left[d] > 0);
    if (--x->left[d] == 0) ready(x, d);
  }
}

/* Op i is done now. Ops done in passing (marks) are queued, not recursed into. */
static void complete(FabExec *x, uint32_t i) {
  g_array_append_val(x->todo, i);
  if (x->draining) return;
  x->draining = true;
  for (guint at = 0; at < x->todo->len; at++) { /* first in, first out: dependents in op order */
    uint32_t k = g_array_index(x->todo, uint32_t, at);
    g_assert(x->state[k] != FAB_EXEC_DONE);
    x->state[k] = FAB_EXEC_DONE;
    x->t1[k] = x->eng->now;
    x->ops_done++;
    if (x->t1[k] > x->last_end) x->last_end = x->t1[k];
    release(x, k, false);
  }
  g_array_set_size(x->todo, 0);
  x->draining = false;
}

static void begin(FabExec *x, uint32_t i) {
  const FabOp *o = fab_dag_op(x->dag, i);
  fab_time_t now = x->eng->now;
  x->state[i] = FAB_EXEC_RUNNING;
  x->t0[i] = now;
  switch ((FabOpKind)o->kind) {
  case FAB_OP_FLOW:
  case FAB_OP_NVLS:
    x->hooks.post(x->ctx, i, post_at(x, o));
    break;
  case FAB_OP_COMPUTE:
    x->hooks.compute(x->ctx, i, o->src, o->dur);
    break;
  case FAB_OP_MARK:
    complete(x, i);
    break;
  }
}

static void exec_wake(FabEngine *eng, void *self, uint64_t arg) { begin(self, (uint32_t)arg); }

void fab_exec_start(FabExec *x) {
  for (uint32_t i = 0; i < x->nops; i++) /* the roots (not ops their release made ready meanwhile) */
    if (!fab_dag_op(x->dag, i)->ndeps) ready(x, i);
}

void fab_exec_sent(FabExec *x, uint32_t op) {
  x->ts[op] = x->eng->now;
  release(x, op, true);
}

void fab_exec_received(FabExec *x, uint32_t op) {
  const FabOp *o = fab_dag_op(x->dag, op);
  if (!o->post) complete(x, op);
  else x->hooks.reduce(x->ctx, op, o->dst, o->post);
}

void fab_exec_done(FabExec *x, uint32_t op, fab_time_t began) {
  if (fab_dag_op(x->dag, op)->kind == FAB_OP_COMPUTE) x->t0[op] = began;
  complete(x, op);
}

uint32_t fab_exec_ops(const FabExec *x) { return x->nops; }
uint32_t fab_exec_ops_done(const FabExec *x) { return x->ops_done; }
fab_time_t fab_exec_last_end(const FabExec *x) { return x->last_end; }
int fab_exec_state(const FabExec *x, uint32_t i) { return x->state[i]; }
fab_time_t fab_exec_began(const FabExec *x, uint32_t i) { return x->t0[i]; }
fab_time_t fab_exec_ended(const FabExec *x, uint32_t i) { return x->t1[i]; }

uint32_t fab_exec_first_waiting(const FabExec *x, uint32_t *left) {
  for (uint32_t i = 0; i < x->nops; i++)
    if (x->state[i] == FAB_EXEC_WAITING) {
      *left = x->left[i];
      return i;
    }
  *left = 0;
  return FAB_OP_NONE;
}

bool fab_exec_check_order(const FabExec *x, uint32_t *op, uint32_t *dep) {
  for (uint32_t i = 0; i < x->nops; i++) {
    const FabOp *o = fab_dag_op(x->dag, i);
    for (uint32_t k = 0; x->state[i] && k < o->ndeps; k++) {
      uint32_t d = fab_dag_dep(x->dag, o, k), j = d & ~FAB_DEP_SENT;
      bool met = d & FAB_DEP_SENT ? x->ts[j] <= x->t0[i] : x->state[j] == FAB_EXEC_DONE && x->t1[j] <= x->t0[i];
      if (!met) {
        *op = i;
        *dep = j;
        return false;
      }
    }
  }
  return true;
}

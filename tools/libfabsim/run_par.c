/* A run over threads: the driver's part for it. See run_int.h and driver.c. */
#include <stdio.h>
#include "run_int.h"

/* While partitions run on threads, a NIC or GPU reports to the executor
** from its partition's thread, under the executor's lock, with the
** executor's engine set to its partition's (what it schedules goes there,
** or to another partition's outbox). The executor times every op from its
** dependencies' times, not from the clock of the report that made it ready
** (exec.h), and keys what it schedules by the op or the flow, not by the
** element that reported (models/nic.h, fab_nic_post; models/gpu.h), so the
** order of reports from different partitions within a window changes
** nothing. What must hold for that, fab_run__cross_check makes sure of
** (the rule: partition.h, FabPartDeps): an op is made ready from another
** partition only when it begins at least a lookahead after that report. A
** flow's slot is given back to its sender's partition and reused only by
** that partition's thread (models/nic.h, fab_flow_table_fix). Flows are
** released, and the executor's ops retired, between windows. A flow that
** gives up (max_timeouts) stops the run at the end of its window, not
** right after its event as one engine does. */

static inline void par_enter(Part *pt) {
  fab_lock(&pt->r->lock);
  fab_exec_set_engine(pt->r->exec, pt->eng);
}

static inline void par_leave(Part *pt) { fab_unlock(&pt->r->lock); }

static void par_done(void *ctx, FabFlow *f) {
  par_enter(ctx);
  fab_run__flow_done(((Part *)ctx)->r, f);
  par_leave(ctx);
}

static void par_sent(void *ctx, FabFlow *f) {
  par_enter(ctx);
  fab_run__flow_sent(((Part *)ctx)->r, f);
  par_leave(ctx);
}

static void par_gpu_done(void *ctx, int which, uint32_t tag, fab_time_t began) {
  par_enter(ctx);
  fab_run__gpu_done(((Part *)ctx)->r, which, tag, began);
  par_leave(ctx);
}

/* The first flow to give up, by (time, flow), whichever thread told first. */
static void par_fail(void *ctx, FabFlow *f) {
  Part *pt = ctx;
  Run *r = pt->r;
  fab_lock(&r->lock);
  fab_time_t t = pt->eng->now;
  if (!r->failed || t < r->fail_t || (t == r->fail_t && f->id < r->failed->id)) {
    r->failed = f;
    r->fail_t = t;
  }
  fab_par_stop(r->par);
  fab_unlock(&r->lock);
}

static void par_release(void *ctx, FabFlow *f) {
  Part *pt = ctx;
  FabRel x = {f->slot, f->gen};
  g_array_append_val(pt->released, x);
}

/* Where a non-flow op waiting for its start time begins: its rank's partition. */
uint32_t fab_run__op_part(void *ctx, uint32_t op) {
  const Run *r = ctx;
  if (!r->par) return 0;
  uint32_t k = r->ep_rank[fab_dag_op(r->sc->dag, op)->src];
  return r->net && k != r->net->self ? FAB_EXEC_ELSEWHERE : k; /* over processes: that one's own begins it */
}

/* Ops [from, to) of the DAG checked for a run over threads, each op's
** reporter noted (r->cpart): NULL, or why they cannot run so (the rule:
** partition.h, FabPartDeps), the first offender in *bad. */
static const char cross_why[] = "it waits for an operation that another partition reports, and would begin less "
                                "than a lookahead after it";

const char *fab_run__cross_check(Run *r, uint32_t from, uint32_t to, uint32_t *bad) {
  FabPartition view = {.rank = r->ep_rank};
  FabPartWalk w = {r->lookahead, fab_run__ctrl, r, true};
  FabPartDeps dp = {.min_ahead = FAB_TIME_MAX};
  *bad = fab_partition_walk(&view, r->sc->dag, from, to, &r->cpart, &w, &dp);
  return *bad == FAB_OP_NONE ? NULL : cross_why;
}

/* The observers of the whole fabric at `t`, where the window ended just
** before it: the watchdog's look (r->wd_next), then the sampler's
** (r->sample_next), each seeing what a single engine shows them, as their
** events come first at their time there (ids 0 and 1); each counted as the
** event it is there. Then the next window ends before the next of them. */
static void observe(Run *r, FabPar *par, fab_time_t t) {
  fab_time_t now = r->eng->now;
  r->eng->now = t;
  bool count = !r->net || r->net->self == 0; /* one process counts the observers' events */
  if (r->wd && t == r->wd_next) {
    r->eng->events += count;
    r->wd_next = fab_watchdog_look(r->wd) ? t + fab_watchdog_period(r->wd) : FAB_TIME_MAX;
    if (fab_watchdog_stalled(r->wd)) { /* stopped at its time, as one engine is: the sampler's look is not taken */
      fab_par_stop(par);
      return;
    }
  }
  if (r->sampler && t == r->sample_next) {
    r->eng->events += count;
    fab_time_t next;
    r->sample_next = fab_sampler_look(r->sampler, t, &next) ? next : FAB_TIME_MAX;
  }
  r->eng->now = now;
  fab_par_sync_at(par, MIN(r->wd_next, r->sample_next));
}

/* Between windows (every engine stopped): the flows both ends are done
** with are released, and the executor forgets what it no longer needs (no
** op can begin before the next window: its clock is the window's end). */
static void window_end(FabPar *par, fab_time_t end, void *ctx) {
  Run *r = ctx;
  uint32_t n = r->net ? 0 : fab_par_parts(par);
  if (r->net) fab_run__net_releases(r, r->parts[r->net->self].released);
  for (uint32_t k = 0; k < n; k++) {
    GArray *rel = r->parts[k].released;
    for (guint i = 0; i < rel->len; i++) {
      const FabRel *x = &g_array_index(rel, FabRel, i);
      FabFlow *f = fab_flow_at(&r->table, x->slot);
      if (f->gen == x->gen && *slot_of(r, f->id) == x->slot && fab_flow_releasable(f)) fab_run__flow_release(r, f);
    }
    g_array_set_size(rel, 0);
  }
  if (r->reports >= RETIRE_EVERY) {
    fab_time_t now = r->eng->now;
    fab_exec_set_engine(r->exec, r->eng);
    r->eng->now = MAX(now, end);
    fab_run__retire(r);
    r->eng->now = now;
  }
  fab_time_t obs = MIN(r->wd_next, r->sample_next);
  if (obs != FAB_TIME_MAX && end + 1 == obs) observe(r, par, obs);
  if (r->progress) fab_run__progress(r->eng, r);
}

static const char *const op_kind_names[] = {"flow", "NVLS transfer", "compute op", "mark"};

/* The cut's endpoint partitions and lookahead into r, and the ops made so
** far checked (an unfolding DAG's first batch made now, as the executor
** would), every one when `dp` is given (counted there): NULL, or why the
** run cannot go over threads (allocated). */
static char *part_check(Run *r, const FabPartition *p, FabPartDeps *dp) {
  FabDag *dag = r->sc->dag;
  r->lookahead = p->lookahead;
  r->ep_rank = g_memdup2(p->rank, r->topo->nhosts * sizeof *p->rank);
  fab_deq_init(&r->cpart, sizeof(uint8_t));
  if (!fab_dag_len(dag) && dag->more) fab_dag_more(dag);
  g_assert(fab_dag_base(dag) == 0);
  FabPartDeps own = {.min_ahead = FAB_TIME_MAX};
  FabPartWalk w = {r->lookahead, fab_run__ctrl, r, dp == NULL};
  uint32_t bad = fab_partition_walk(p, dag, 0, fab_dag_len(dag), &r->cpart, &w, dp ? dp : &own);
  if (bad == FAB_OP_NONE) return NULL;
  const FabOp *o = fab_dag_op(dag, bad);
  return g_strdup_printf("operation %u (a %s of rank %u): %s (%.3f us)", bad, op_kind_names[o->kind], o->src,
                         cross_why, (double)r->lookahead / 1e6);
}

char *fab_run_threads_check(const FabScenario *sc, FabTopology *topo, const FabPartition *p, FabPartDeps *dp) {
  *dp = (FabPartDeps){.min_ahead = FAB_TIME_MAX};
  Run r = {.sc = sc, .topo = topo};
  char *w = part_check(&r, p, dp);
  g_free(r.ep_rank);
  fab_deq_clear(&r.cpart);
  if (r.ctrl_ps) g_hash_table_destroy(r.ctrl_ps);
  if (p->lookahead == 0) {
    g_free(w);
    return g_strdup("a cut link has no latency (no lookahead)");
  }
  return w;
}

static void mark_cut(FabPort *pt, void *ctx) { fab_port_mark_cut(pt, ctx); }

/* With opts->threads > 1 (or opts->net over more than one process), the
** partitions of a run over threads (processes) and its engines (r->par),
** the topology numbered with ids below `nids`; or, when the run cannot be
** split, why on stderr (it runs on one engine; over processes, in the
** first alone: r->elsewhere in the others). */
void fab_run__par_make(Run *r, const FabRunOpts *opts, uint32_t nids) {
  FabPartition pt;
  GError *err = NULL;
  uint32_t n = r->net ? r->net->n : opts->threads;
  char *why = NULL;
  bool made = false;
  if (r->sc->fabric.sharp.enabled) /* a tree's nodes would be in several partitions, its reductions in none */
    why = g_strdup("SHARP's aggregation trees join switches across any cut (fabric.switch.sharp)");
  else if (!(made = fab_partition_make_for(r->topo, r->sc->dag, n, &pt, &err)))
    why = g_strdup(err->message);
  if (!why && pt.lookahead == 0) why = g_strdup("a cut link has no latency (no lookahead)");
  if (!why) why = part_check(r, &pt, NULL);
  if (why) {
    if (r->net)
      fprintf(stderr, "fabsim: %u processes: the first runs it alone: %s\n", n, why);
    else
      fprintf(stderr, "fabsim: --threads %u: runs on one thread: %s\n", n, why);
    g_free(why);
    if (r->ep_rank) fab_deq_clear(&r->cpart); /* part_check ran */
    g_clear_pointer(&r->ep_rank, g_free);
    if (made) fab_partition_clear(&pt);
    if (err) g_error_free(err);
    if (r->net) r->elsewhere = r->net->self != 0;
    r->net = NULL;
    return;
  }
  uint8_t *part_of = fab_partition_elements(&pt, r->topo, nids);
  /* the last ids: the executor (its events go to the partition of their op's rank) and after it, with
  ** fabric.failures, their copies (one in each partition, failures.h) */
  for (uint32_t i = nids - 1 - (r->sc->fabric.nchanges != 0); i < nids; i++) part_of[i] = FAB_PAR_ANY;
  r->par = fab_par_new(n, r->sc->seed, sizeof(FabPkt), part_of, nids, pt.lookahead);
  g_free(part_of);
  fab_partition_clear(&pt);
  fab_par_set_threads(r->par, !r->net);
  fab_par_set_hook(r->par, window_end, r);
  r->parts = g_new0(Part, n);
  for (uint32_t k = 0; k < n; k++)
    r->parts[k] = (Part){r, fab_par_engine(r->par, k), g_array_new(FALSE, FALSE, sizeof(FabRel))};
  fab_par_lock_init(r->par, &r->lock);
  fab_topology_foreach_port(r->topo, mark_cut, r->par);
}

void fab_run__par_free(Run *r) {
  fab_run__net_free(r);
  if (!r->par) return;
  for (uint32_t k = 0; k < fab_par_parts(r->par); k++) g_array_free(r->parts[k].released, TRUE);
  g_free(r->parts);
  g_free(r->ep_rank);
  fab_deq_clear(&r->cpart);
  fab_par_free(r->par); /* and its engines */
  r->eng = NULL;
}


/* A run over threads that stopped with events pending: the packets on cut
** wires are in them, not on the wires' lists (models/port.c); free them as
** the fabric's flush frees the rest. */
void fab_run__par_flush(Run *r, uint64_t *pkts, uint64_t *bytes) {
  for (uint32_t k = 0; k < fab_par_parts(r->par); k++) {
    FabEngine *eng = fab_par_engine(r->par, k);
    FabEvent ev;
    while (fab_evq_pop(eng->evq, &ev)) *pkts += fab_port_flush_event(eng, ev.target, ev.arg, bytes);
  }
}

void fab_run__par_attach(Run *r, uint32_t h) {
  FabNic *nic = &r->topo->nics[h];
  nic->done = par_done; /* the executor hears of it under its lock */
  nic->fail = par_fail;
  nic->sent = par_sent;
  nic->release = par_release; /* its partition releases the flow between windows */
  nic->ctx = &r->parts[fab_par_part_of(r->par, nic)];
  nic->split = true;
  r->topo->gpus[h].done = par_gpu_done;
  r->topo->gpus[h].ctx = nic->ctx;
}

/*
** The run driver's insides (driver.c), shared with the parts that spread a
** run over threads (run_par.c) and processes (run_net.c) and that run its
** SHARP reductions (run_sharp.c): the run's state and the reports the
** models make to the workload's executor. Not an interface: only these
** files include it.
*/
#ifndef FAB_RUN_INT_H
#define FAB_RUN_INT_H

#include "driver.h"
#include <stdio.h>
#include "collect.h"
#include "sampler.h"
#include "models/watchdog.h"
#include "sim/deq.h"
#include "sim/par.h"
#include "topologies/failures.h"
#include "workloads/exec.h"

typedef struct Run Run;

/* A flow one of a partition's NICs is done with (models/nic.h, split): its slot and generation then. */
typedef struct FabRel {
  uint32_t slot, gen;
} FabRel;

/* A partition of a run over threads or processes. */
typedef struct Part {
  Run *r;
  FabEngine *eng;
  GArray *released; /* FabRel: flows one of its NICs is done with */
} Part;

/* A run over processes: what each adds to the results at the end (run_net.c). */
typedef struct FabNetTotals {
  uint64_t events, live, flushed, flushed_bytes;
  fab_time_t now;
  bool runt_held;   /* a NIC another process ran ends with runt budget held */
} FabNetTotals;

struct Run {
  const FabScenario *sc;
  FabEngine *eng;           /* the run's engine, or partition 0's */
  FILE *evtrace;            /* FABSIM_EVENT_TRACE's file (driver.c), NULL: none */
  FabPar *par;              /* a run over threads (FabRunOpts.threads), NULL: one engine */
  Part *parts;              /* par: per partition, the flows its NICs are done with */
  FabLock lock;             /* par: the executor's, held by the thread of the partition that reports to it */
  uint32_t *ep_rank;        /* par: each endpoint's partition */
  FabDeq cpart;             /* par: uint8_t per op, from the first op not yet retired: the partition that reports
                            ** it done (FAB_PART_MANY: a mark after several; partition.h) */
  fab_time_t lookahead;     /* par: the windows' */
  fab_time_t fail_t;        /* par: when r->failed gave up */
  bool progress;            /* par: report progress between windows */
  fab_time_t wd_next;       /* par: the watchdog's next look (its events are not the engines'; FAB_TIME_MAX: none) */
  fab_time_t sample_next;   /* par: the sampler's next look (likewise) */
  FabTopology *topo;
  FabSharp *sharp;          /* fabric.switch.sharp on: the trees made from the scenario's plan, NULL: off */
  FabFlowTable table;       /* the flows under way: a slot each, taken when posted, given back when released */
  FabDeq recs;              /* FabFlowRec per flow (one per FLOW or NVLS op, in op order): what the results say of
                            ** it; an unfolding DAG's are folded into `fold` as they retire (unless kept) */
  uint32_t nflows, completed;
  FabDeq flow_of;           /* uint32_t per op: its flow (FAB_OP_NONE: not a flow) */
  FabDeq op_of, slot_of;    /* uint32_t per flow: its op; its slot in the table (FAB_OP_NONE: not posted yet, or
                            ** released) */
  bool unfolds;             /* the DAG is made as the run goes: the run retires it too */
  bool keep_flows;          /* every flow's record goes to the results (else only their summary) */
  FabFlowFold fold;         /* the records retired so far, summed */
  char *bad_flow;           /* a released flow that did not hold exactly its bytes (an invariant broken) */
  FabExec *exec;
  FabCollect *coll;         /* the result records, folded from the ops as their state is final */
  uint32_t settled;         /* the ops before it are not flows, or flows released (their records final) */
  uint32_t reports;         /* reports to the executor since the last retirement */
  FabSampler *sampler;      /* NULL: queues not sampled */
  FabWatchdog *wd;          /* NULL: no watchdog (lossy fabric) */
  FabFailures **fx;         /* fabric.failures: one engine's, or a copy per partition (failures.h); NULL: none */
  uint32_t nfx;
  FabLinkChangeRec *fx_others; /* over processes, the first's: the others' records of them, summed */
  FabLinkChangeRec *fx_rec; /* the run's records of them, all summed, once it ended (before fold_far) */
  struct FabFf *ff;         /* fabric.fast_forward (fastfwd.h), NULL: off */
  char *ff_why;             /* why it was asked for and does not run, NULL: it runs or was not asked for */
  FabFlow *failed;          /* the first flow that gave up */
  char *setup;              /* why the DAG cannot run (a generator's mistake), NULL: it can */
  gint64 last_report;       /* progress on stderr or progress_fd */
  bool progress_tty;        /* the progress line on stderr */
  int progress_fd;          /* > 0: progress records there (FabRunOpts) */
  GHashTable *ctrl_ps;      /* (from << 32 | to) + 1 -> a control message's way + 1 (fab_run__ctrl), NULL: none yet */
  GHashTable *nvls_wait;    /* NVLS group + 1 -> its member ops (GArray), until its first member is posted */
  /* a run over processes (FabRunOpts.net; run_net.c) */
  const FabParNet *net;     /* NULL: one process */
  bool elsewhere;           /* it could not be split: the first process runs it alone, this one does nothing */
  GByteArray *log;          /* Rep: what this process's elements reported this window, for the others */
  GHashTable *halves;       /* flow number + 1 -> what the ends of a flow two processes run said (Half) */
  GArray *touched;          /* uint32_t: flows whose ends spoke in this window's exchange */
  FabPort **port_by_id;     /* by element id (NULL: not a port), for events between processes */
  uint32_t nport_ids;
  struct WdView *wd_view;   /* the watchdog's look at every process's ports when it stalled (run_net.c) */
  bool gathered;            /* the run is over and net_tot holds every process's totals */
  FabNetTotals net_tot;
};

static inline uint32_t *flow_of(const Run *r, uint32_t op) { return fab_deq_at(&r->flow_of, op); }
static inline uint32_t *op_of(const Run *r, uint32_t n) { return fab_deq_at(&r->op_of, n); }
static inline uint32_t *slot_of(const Run *r, uint32_t n) { return fab_deq_at(&r->slot_of, n); }
static inline FabFlowRec *rec_of(const Run *r, uint32_t n) { return fab_deq_at(&r->recs, n); }

/* The run's time (its last event's), events and packets in the pool, over every partition of a run over
** threads (read where no partition runs). */
static inline fab_time_t run_now(const Run *r) {
  return r->gathered ? r->net_tot.now : r->par ? fab_par_now(r->par) : r->eng->now;
}
static inline uint64_t run_events(const Run *r) {
  return r->gathered ? r->net_tot.events : r->par ? fab_par_events(r->par) : r->eng->events;
}
static inline size_t run_live(const Run *r) {
  return r->gathered ? r->net_tot.live : r->par ? fab_par_live(r->par) : fab_pool_live(r->eng->pool);
}

/* Every RETIRE_EVERY reports, the executor forgets the ops it no longer
** needs, once the results have folded them (collect.h): what it holds
** follows the ops under way. The DAG itself belongs to the scenario and is
** kept. A debug_checks build retires after every report, so that the whole
** test suite checks that retiring changes no result. */
#ifdef FAB_DEBUG_CHECKS
#define RETIRE_EVERY 1
#else
#define RETIRE_EVERY 4096
#endif

/* driver.c: the reports of NICs and GPUs to the executor, the executor's
** retirement, progress on stderr, and the way of a control message. */
void fab_run__gpu_done(void *ctx, int which, uint32_t tag, fab_time_t began);
void fab_run__flow_done(void *ctx, FabFlow *f);
void fab_run__flow_sent(void *ctx, FabFlow *f);
void fab_run__flow_release(void *ctx, FabFlow *f);
void fab_run__retire(Run *r);
void fab_run__progress(FabEngine *eng, void *ctx);
fab_time_t fab_run__ctrl(void *ctx, uint32_t from, uint32_t to);

/* run_net.c: a run over processes. */
bool fab_run__here(const Run *r, uint32_t ep); /* endpoint ep's elements run in this process */
void fab_run__woke(void *ctx, uint32_t op);    /* FabExecHooks.woke */
void fab_run__net_attach(Run *r);
void fab_run__net_releases(Run *r, GArray *rel);
bool fab_run__net_gather(Run *r, FabNetTotals *tot);
uint64_t fab_run__net_sum(const Run *r, uint64_t v); /* v summed over the processes (every one calls it) */
void fab_run__net_free(Run *r);
void fab_run__wd_gather(void *ctx); /* FabWatchdogHooks.gather, port_blocked, holders */
bool fab_run__wd_blocked(void *ctx, const FabPort *p, uint32_t q);
uint32_t fab_run__wd_holders(void *ctx, const FabPort *p, uint32_t q, FabPort **out, uint32_t max);

/* This process's records of fabric.failures, its copies' summed (allocated; *n of them). */
FabLinkChangeRec *fab_run__failure_records(Run *r, uint32_t *n);

/* run_par.c: a run over threads (or processes). */
FabFlow *fab_run__flow_make(Run *r, uint32_t n); /* flow n in a slot of its own, not posted yet */
/* run_sharp.c: fabric.switch.sharp */
void fab_run__sharp_make(Run *r);                /* r->sharp, its reductions started through r */
bool fab_run__sharp_group(Run *r, GArray *mem, char **why); /* a SHARP group of these member ops (FALSE: why) */
char *fab_run__sharp_check(const Run *r, bool drained);     /* conservation broken: what (g_free), else NULL */
void fab_run__sharp_results(const Run *r, FabResults *res); /* res->sharp */
void fab_run__par_make(Run *r, const FabRunOpts *opts, uint32_t nids); /* or why not, on stderr (r->par NULL) */
void fab_run__par_attach(Run *r, uint32_t h);    /* endpoint h's NIC and GPU report through their partition */
void fab_run__par_free(Run *r);
void fab_run__par_flush(Run *r, uint64_t *pkts, uint64_t *bytes); /* packets left in events of a stopped run */
uint32_t fab_run__op_part(void *ctx, uint32_t op); /* FabExecHooks.part */
/* ops [from, to) checked for the threads (NULL), or why they cannot run so, the first offender in *bad */
const char *fab_run__cross_check(Run *r, uint32_t from, uint32_t to, uint32_t *bad);

#endif

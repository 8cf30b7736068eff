/*
** Results of one run: the records every report is written from, and the
** field tables that describe them (fields.h).
**
** The run driver fills the raw facts (counters, the per-flow, per-link,
** per-collective, per-step and per-job records, the timeline, the queue
** samples); fab_results_finalize then derives what the reports print (flow
** percentiles, each collective's time and bandwidths, per-job step summaries,
** rates), once. Nothing here points into the engine, so the results outlive
** the run. fab_results_table is the description of FabResults: JSON summary,
** HDF5 tables, sweep columns, library lookups and plot readers all walk it.
*/
#ifndef FAB_RESULTS_H
#define FAB_RESULTS_H

#include <stddef.h>
#include <stdint.h>
#include "fields.h"
#include "sim/time.h"

#define FAB_NAME_LEN_RESULTS FAB_FIELD_NAME_LEN

typedef struct FabFlowRec {
  uint32_t id;          /* flow id, 0..n-1 in workload order */
  uint32_t src, dst;    /* endpoint numbers */
  uint64_t bytes;       /* payload bytes */
  fab_time_t start;     /* ps: when the flow was posted at the sender (0: never posted) */
  fab_time_t end;       /* ps: when the receiver got the last byte; 0 if not completed */
  uint32_t retransmits; /* packets sent again */
  uint32_t reorder;     /* selective receivers: the most PSNs a packet came ahead of the next expected (0: in order,
                        ** or go-back-N, which takes nothing out of order) */
  double fct_s;         /* derived: end - start, NaN if not completed */
} FabFlowRec;

typedef struct FabLinkRec {
  char from[FAB_FIELD_NAME_LEN]; /* "leaf3:p17" / "host12:p0": node and egress port */
  char to[FAB_FIELD_NAME_LEN];   /* the node and port at the far end */
  uint64_t bps;            /* link rate, bits/s */
  uint64_t bytes;          /* wire bytes sent (headers included) */
  uint64_t packets;        /* packets sent */
  uint64_t drops;          /* packets dropped at this egress queue */
  uint64_t max_queue_bytes;/* deepest the egress queue got */
  uint64_t pause_tx;       /* PFC PAUSE frames sent on this link (XOFF and XON) */
  uint64_t pause_rx;       /* PFC PAUSE frames received by this egress (from the far end) */
  fab_time_t paused;       /* ps this egress spent with some priority paused */
  uint64_t ecn_marks;      /* packets marked CE at this egress */
  const char *layer;       /* what the link joins: "fabric", "nic", "pcie", "nvlink" (static; sampler.h FabLayer) */
} FabLinkRec;

/* Egress queue depth of every switch port, sampled every `interval`.
** depth is row-major: depth[s * n_ports + p] = bytes queued at port p at t[s]. */
typedef struct FabQueueSeries {
  fab_time_t interval;      /* ps between samples (0: not sampled) */
  uint32_t n_ports;         /* columns */
  char (*port)[FAB_FIELD_NAME_LEN]; /* column names, "leaf3:p17" */
  uint32_t n_samples;       /* rows */
  fab_time_t *t;            /* ps, n_samples */
  uint32_t *depth;          /* bytes, n_samples * n_ports */
  uint32_t n_prio;          /* priorities per port in depth_prio (0: not recorded) */
  uint32_t *depth_prio;     /* bytes, n_samples * n_ports * n_prio: [s][p][q] */
  uint64_t *flow_rate;      /* bits/s, n_samples * n_flows: each flow's sending rate (0: idle) */
  uint64_t *link_bytes;     /* n_samples * n_links (FabResults.links order): wire bytes sent so far */
} FabQueueSeries;

/* One collective (nccl-tests conventions), in workload order. */
typedef struct FabCollRec {
  const char *op, *algorithm, *protocol; /* static strings */
  const char *tag;            /* what it is for: "dp", "tp", "pp", "ep", "zero", "nccl-tests", or NULL */
  uint64_t bytes;             /* nccl-tests "size" (see workloads/dag.h FabCollDef) */
  uint64_t count;             /* elements, as nccl-tests counts them */
  uint32_t dtype_bytes;       /* element size */
  uint32_t ranks;
  int32_t root;               /* broadcast/reduce root rank index, -1 */
  uint32_t channels;
  uint32_t job, step;
  fab_time_t start, end;      /* ps: first rank enters, last rank has the result; end 0 = not completed */
  double time_s;              /* derived: end - start, NaN if not completed */
  double algbw_GBps;          /* derived: bytes / time, GB = 1e9 B; NaN if not completed */
  double busbw_GBps;          /* derived: algbw x nccl-tests' factor */
  uint64_t nic_bytes;         /* payload bytes its flows carried out of nodes into the network, summed over NICs */
  uint32_t nics;              /* the NIC ports they left by */
  double nic_GBps;            /* derived: nic_bytes / nics / time, what the wire carries per NIC (0: none left
                              ** a node; NaN if not completed). busbw is nccl-tests' convention, not the wire's:
                              ** with SHARP a NIC sends each byte once, where a ring sends it 2(n-1)/n times */
} FabCollRec;

/* The per-rank timeline: what each rank's GPU computed and which collectives
** it was in, and when. */
typedef struct FabSpanRec {
  uint32_t rank;              /* endpoint */
  uint32_t job;
  uint8_t kind;               /* 0 compute, 1 communication (a collective), 2 p2p (pipeline send/recv) */
  uint8_t phase;              /* compute: FabPhase (forward, backward, optimizer, compute) */
  int32_t coll;               /* communication: index in colls; -1 */
  uint32_t step;
  fab_time_t start, end;      /* ps */
  uint64_t node;              /* a trace workload's node id it stands for (UINT64_MAX: none) */
} FabSpanRec;

/* One training step of one job. */
typedef struct FabStepRec {
  const char *job_name;       /* derived: the job's name */
  uint32_t job, step;
  fab_time_t start, end;      /* ps: first rank begins, last rank ends */
  double step_time_s;         /* derived: end - start */
  double compute_s;           /* per rank, averaged: time its GPU computed */
  double comm_s;              /* per rank, averaged: time in collectives (union of intervals) */
  double exposed_comm_s;      /* per rank, averaged: collective time not hidden under compute */
  double overlap_s;           /* per rank, averaged: collective time hidden under compute */
  double bubble_s;            /* per rank, averaged: idle during the step's window (first rank
                              ** begins to last rank ends), neither computing nor in a collective */
} FabStepRec;

/* A job's collectives of one op (or one tag), summed over its steps. */
typedef struct FabCollGroup {
  const char *key;            /* the op, or the tag ("none" when untagged) */
  uint64_t count, bytes;
  double time_s;              /* summed */
  uint64_t per_rank;          /* the most of them one rank is in (over all steps) */
  double busiest_rank_s;      /* the longest time one rank spends in them, overlaps counted once (all steps) */
} FabCollGroup;

/* One rank's span in a collective (from the timeline), for
** fab_results_busiest. */
typedef struct FabBusySpan {
  uint32_t rank;
  fab_time_t start, end;
} FabBusySpan;

/* Over the spans in `b` (sorted in place), the most spans one rank has and
** the longest time one rank is covered by them, overlaps counted once (a
** rank in two buckets' allreduces at once is busy once). */
void fab_results_busiest(GArray *b, size_t *most, double *longest_s);

/* A training job's steps, averaged (JSON `step`). */
typedef struct FabStepSummary {
  const char *job;            /* its name */
  double *step_times_s;       /* each step */
  size_t n_step_times;
  uint32_t steps;
  double step_time_s, compute_s, comm_s, exposed_comm_s, overlap_s, bubble_s, bubble_fraction;
  FabCollGroup *by_op;
  size_t n_by_op;
  FabCollGroup *by_tag;
  size_t n_by_tag;
} FabStepSummary;

typedef struct FabJobRec {
  const char *name, *kind;    /* interned / static */
  uint32_t ranks;
  uint32_t flows, completed;
  uint64_t bytes;             /* payload bytes its flows carry (LL/LL128 protocol overhead included) */
  fab_time_t start, end;      /* ps: first op starts, last op done (0: not finished) */
  double time_s;              /* derived: end - start, NaN if not finished */
  const FabStepSummary *step; /* derived: its training steps, NULL if none */
} FabJobRec;

/* One entry of fabric.failures, and what it did (topologies/failures.h). */
typedef struct FabFailureRec {
  char link[FAB_FIELD_NAME_LEN]; /* "leaf3-spine2" */
  const char *change;         /* down, up, rate, latency, rate and latency (static) */
  fab_time_t at;              /* ps */
  uint64_t bps;               /* the new rate, 0: unchanged */
  uint64_t lost, lost_bytes;  /* down: packets (and wire bytes) the link lost while down */
  uint64_t rerouted;          /* (switch, endpoint) routes that changed because of it */
  fab_time_t rerouted_at;     /* ps: when the last of them changed, 0: none */
} FabFailureRec;

/* What fabric.failures cost: the same scenario run again without them
** (fabric.failure_baseline, driver.c), against this run. */
typedef struct FabFailureImpact {
  fab_time_t baseline_time;   /* ps: when the workload ended without the failures */
  double slowdown;            /* sim_time / baseline_time - 1 (0.05: 5 % longer; below 0: sooner) */
  double baseline_fct_p50_s, baseline_fct_p99_s, baseline_fct_max_s;
  uint64_t baseline_retransmits;
  uint64_t moved_bytes;       /* wire bytes the links named in fabric.failures carried less than without them
                              ** (both directions): the traffic that went another way, or was lost */
} FabFailureImpact;

/* What the steady-state fast-forward did (fabric.fast_forward,
** tools/libfabsim/fastfwd.h). */
typedef struct FabFfRec {
  fab_time_t window;          /* ps: the window a steady state must hold, and the jumps' unit */
  double tolerance;
  uint64_t looks;             /* windows looked at */
  uint64_t jumps;
  fab_time_t skipped;         /* ps of simulated time jumped over */
  double skipped_fraction;    /* of sim_time */
  uint64_t skipped_packets;   /* data packets flows did not make (their bytes arrived in the jumps) */
} FabFfRec;

/* Network data packets received the first time, by how far ahead of the
** next expected PSN they came (models/nic.h, fab_reorder_bin). */
typedef struct FabReorderBin {
  const char *ahead;          /* "0", "1", "2-3", ..., "256+" (static) */
  uint64_t packets;
} FabReorderBin;

/* One SHARP tree (fabric.switch.sharp; models/sharp.h) and what ran on it. */
typedef struct FabSharpTreeRec {
  uint32_t id, job;            /* its number (claim order), the job whose communicator claimed it */
  char root[FAB_FIELD_NAME_LEN]; /* the root switch */
  uint32_t nodes, members;     /* aggregation nodes (switches), members (ranks) */
  uint64_t reductions;         /* reductions run on it */
  uint64_t llt_reductions;     /* of which small enough for the low-latency tree (no lock, OST-sized packets) */
  uint64_t bytes_in, bytes_out;/* payload the members contributed, and got back as results */
  uint64_t peak_buffer_bytes;  /* the most payload one of its aggregation nodes held in partial sums at once */
  fab_time_t active;           /* ps with some reduction running on it */
  uint64_t lock_waits;         /* reductions that waited for its locks (lock: operation) */
  fab_time_t lock_wait;        /* ps, their waits summed */
} FabSharpTreeRec;

typedef struct FabSharpRec {
  const char *model, *lock;    /* fabric.switch.sharp.model and .lock (static) */
  uint32_t fallbacks;          /* collectives that found no tree and ran without SHARP */
  size_t n_trees;
  FabSharpTreeRec *trees;      /* owned */
} FabSharpRec;

typedef struct FabFlowSummary {
  uint64_t count, completed, bytes;
  double fct_p50_s, fct_p99_s, fct_max_s; /* nearest rank over completed flows; 0 when none */
} FabFlowSummary;

/* What a run that forgets its flows' records as it goes (an unfolding DAG)
** keeps of them: their count, completions, bytes, and every completion time
** for the exact percentiles, in 4 bytes when under 2^32 ps (4.29 ms), else 8. */
typedef struct FabFlowFold {
  uint64_t count, completed, bytes;
  GArray *fct32; /* uint32_t, ps: the completion times below 2^32 ps (NULL: none yet) */
  GArray *fct64; /* uint64_t, ps: the others */
  bool sorted;   /* both sorted (fab_results_finalize) */
} FabFlowFold;
void fab_flow_fold_add(FabFlowFold *f, const FabFlowRec *r);
void fab_flow_fold_clear(FabFlowFold *f);

typedef struct FabResults {
  /* identity */
  const char *version;       /* fabsim version string */
  const char *scenario;      /* scenario name */
  const char *scenario_text; /* the YAML as given (plus --set lines) */
  const char *topology;      /* one-line description of the fabric */
  const char *failure;       /* why the run failed (exit status 1), NULL if it did not (owned: g_free) */
  const char *status;        /* derived: "ok" or "failed" */
  uint64_t seed;
  /* run */
  fab_time_t sim_time;       /* ps: when the workload ended (last flow done) */
  double wall_s;             /* wall-clock seconds of the simulation loop */
  uint32_t partitions;       /* the partitions (threads) the run was spread over, 1: one engine (like wall_s, not
                             ** a result: not in the JSON or HDF5) */
  bool elsewhere;            /* a run over processes: this one holds no results, the first process does */
  uint64_t events;           /* events executed */
  double events_per_s;       /* derived */
  uint64_t packet_hops;      /* packet transmissions over all links */
  double packet_hops_per_s;  /* derived */
  uint32_t endpoints;
  uint32_t nvlink_segment;   /* the fidelity of NVLink transfers: payload bytes per segment (0: no NVLink) */
  uint32_t fabric_segment;   /* fabric.segment: payload bytes per train on the network (0: packet by packet) */
  uint32_t nvls_segment;     /* cluster.nvlink.nvls_segment: NVLS traffic's payload per segment at most (0: NCCL's chunk) */
  FabFlowSummary flow_stats; /* derived */
  /* fabric totals */
  uint64_t drops, retransmits, pfc_pause_frames, ecn_marks, max_queue_bytes;
  uint64_t cnps;             /* DCQCN congestion notifications sent by receivers */
  fab_time_t pfc_paused;     /* ps, summed over every port: time with some priority paused */
  /* tables */
  size_t n_flows;
  FabFlowRec *flows;
  FabFlowFold flow_fold;     /* when the records were not kept (flows NULL): their summary */
  uint32_t ops_held;         /* the most operations held at once (not in the JSON: all of them for a DAG made
                             ** whole; for one that unfolds, what was under way) */
  uint32_t flow_slots;       /* the most flows held in memory at once (slots of the run's flow table; not in the
                             ** JSON: how much of the workload was under way together) */
  size_t n_links;
  FabLinkRec *links;
  FabQueueSeries queues;
  size_t n_colls;
  FabCollRec *colls;
  size_t n_spans;
  FabSpanRec *spans;
  size_t n_steps;
  FabStepRec *steps;
  size_t n_jobs;
  FabJobRec *jobs;
  size_t n_reorder;
  FabReorderBin *reorder;    /* FAB_REORDER_BINS bins over the run (HDF5 only) */
  size_t n_failures;
  FabFailureRec *failures;   /* fabric.failures, in time order */
  FabStepSummary *summaries; /* derived: one per job (jobs[j].step points into it when the job trained) */
  const FabStepSummary *step;/* derived: the first training job's, NULL if none */
  /* a PFC deadlock: the egress ports of the cycle of pauses, in order */
  size_t n_deadlock;
  char (*deadlock)[FAB_FIELD_NAME_LEN];
  /* what the scenario's settings cost in fidelity or performance (owned) */
  size_t n_warnings;
  char **warnings;
  FabFailureImpact *impact;  /* fabric.failures against a run without them, NULL: none (owned) */
  FabFfRec *ff;              /* the fast-forward, NULL: off (owned) */
  FabSharpRec *sharp;        /* SHARP's trees, NULL: off (owned) */
} FabResults;

/* The description of FabResults and its records (results.c). */
extern const FabFieldTable fab_results_table;
extern const FabFieldTable fab_flow_table, fab_link_table, fab_coll_table, fab_span_table, fab_step_table,
    fab_job_table, fab_failure_table, fab_reorder_table, fab_impact_table, fab_sharp_tree_table;

/* Derive what the reports print from the raw facts (see the top). Call
** once, after the driver filled r. */
void fab_results_finalize(FabResults *r);

/* Free everything r owns (arrays, failure text; not the borrowed strings)
** and zero it. NULL is a no-op; clearing twice is harmless. */
void fab_results_clear(FabResults *r);

/* nccl-tests' bus bandwidth factor for collective `op` ("allreduce", ...) on
** n ranks (workloads/collective.h); 1 for an unknown op. */
double fab_results_busbw_factor(const char *op, uint32_t n);

/* FCT percentile (nearest rank, p in (0,100]) over completed flows, seconds;
** NaN when none completed (null in the JSON; n/a in the report). */
double fab_results_fct_percentile(const FabResults *r, double p);

#endif

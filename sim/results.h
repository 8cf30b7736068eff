/*
** Results of one run, as plain arrays: what the writers (JSON summary, HDF5
** file) read. Models fill counters; the run driver (tools/) copies them here
** at the end of a run. Nothing in this struct points into the engine, so it
** outlives it.
*/
#ifndef FAB_RESULTS_H
#define FAB_RESULTS_H

#include <stddef.h>
#include <stdint.h>
#include "time.h"

typedef struct FabFlowRec {
  uint32_t id;          /* flow id, 0..n-1 in workload order */
  uint32_t src, dst;    /* endpoint numbers */
  uint64_t bytes;       /* payload bytes */
  fab_time_t start;     /* ps: when the flow was posted at the sender */
  fab_time_t end;       /* ps: when the receiver got the last byte; 0 if not completed */
  uint32_t retransmits; /* packets sent again */
} FabFlowRec;

#define FAB_NAME_LEN 32

typedef struct FabLinkRec {
  char from[FAB_NAME_LEN]; /* "leaf3:p17" / "host12:p0": node and egress port */
  char to[FAB_NAME_LEN];   /* the node and port at the far end */
  uint64_t bps;            /* link rate, bits/s */
  uint64_t bytes;          /* wire bytes sent (headers included) */
  uint64_t packets;        /* packets sent */
  uint64_t drops;          /* packets dropped at this egress queue */
  uint64_t max_queue_bytes;/* deepest the egress queue got */
  uint64_t pause_tx;       /* PFC PAUSE frames sent on this link (XOFF and XON) */
  uint64_t pause_rx;       /* PFC PAUSE frames received by this egress (from the far end) */
  fab_time_t paused;       /* ps this egress spent with some priority paused */
  uint64_t ecn_marks;      /* packets marked CE at this egress */
} FabLinkRec;

/* Egress queue depth of every switch port, sampled every `interval`.
** depth is row-major: depth[s * n_ports + p] = bytes queued at port p at t[s]. */
typedef struct FabQueueSeries {
  fab_time_t interval;      /* ps between samples (0: not sampled) */
  uint32_t n_ports;         /* columns */
  char (*port)[FAB_NAME_LEN]; /* column names, "leaf3:p17" */
  uint32_t n_samples;       /* rows */
  fab_time_t *t;            /* ps, n_samples */
  uint32_t *depth;          /* bytes, n_samples * n_ports */
  uint32_t n_prio;          /* priorities per port in depth_prio (0: not recorded) */
  uint32_t *depth_prio;     /* bytes, n_samples * n_ports * n_prio: [s][p][q] */
  uint64_t *flow_rate;      /* bits/s, n_samples * n_flows: each flow's sending rate (0: idle) */
  uint64_t *link_bytes;     /* n_samples * n_links (FabResults.links order): wire bytes sent so far */
} FabQueueSeries;

typedef struct FabResults {
  /* identity */
  const char *version;       /* fabsim version string */
  const char *scenario;      /* scenario name */
  const char *scenario_text; /* the YAML as given (plus --set lines) */
  const char *topology;      /* one-line description of the fabric */
  const char *failure;       /* why the run failed (exit status 1), NULL if it did not */
  uint64_t seed;
  /* run */
  fab_time_t sim_time;       /* ps: when the workload ended (last flow done) */
  double wall_s;             /* wall-clock seconds of the simulation loop */
  uint64_t events;           /* events executed */
  uint64_t packet_hops;      /* packet transmissions over all links */
  uint32_t endpoints;
  uint32_t nvlink_segment;   /* the fidelity of NVLink transfers: payload bytes per segment (0: no NVLink) */
  /* fabric totals */
  uint64_t drops, retransmits, pfc_pause_frames, ecn_marks, max_queue_bytes;
  uint64_t cnps;             /* DCQCN congestion notifications sent by receivers */
  fab_time_t pfc_paused;     /* ps, summed over every port: time with some priority paused */
  /* tables */
  size_t n_flows;
  FabFlowRec *flows;
  size_t n_links;
  FabLinkRec *links;
  FabQueueSeries queues;
  /* collectives, in workload order (FabCollDef, with times) */
  size_t n_colls;
  struct FabCollRec {
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
  } *colls;
  /* the per-rank timeline: what each rank's GPU computed and which
  ** collectives it was in, and when (training and collective workloads) */
  size_t n_spans;
  struct FabSpanRec {
    uint32_t rank;              /* endpoint */
    uint32_t job;
    uint8_t kind;               /* 0 compute, 1 communication (a collective), 2 p2p (pipeline send/recv) */
    uint8_t phase;              /* compute: FabPhase (forward, backward, optimizer, compute) */
    int32_t coll;               /* communication: index in colls; -1 */
    uint32_t step;
    fab_time_t start, end;      /* ps */
  } *spans;
  /* training steps, per job and step; the summary is `step` in JSON */
  size_t n_steps;
  struct FabStepRec {
    uint32_t job, step;
    fab_time_t start, end;      /* ps: first rank begins, last rank ends */
    double compute_s;           /* per rank, averaged: time its GPU computed */
    double comm_s;              /* per rank, averaged: time in collectives (union of intervals) */
    double exposed_comm_s;      /* per rank, averaged: collective time not hidden under compute */
    double overlap_s;           /* per rank, averaged: collective time hidden under compute */
    double bubble_s;            /* per rank, averaged: idle during the step's window (first rank
                                ** begins to last rank ends), neither computing nor in a collective
                                ** (pipeline bubble: waiting for another stage) */
  } *steps;
  /* jobs (one, unless the workload lists several) */
  size_t n_jobs;
  struct FabJobRec {
    const char *name, *kind;    /* interned / static */
    uint32_t ranks;
    uint32_t flows, completed;
    uint64_t bytes;             /* bytes its flows carry (LL/LL128 protocol overhead included) */
    fab_time_t start, end;      /* ps: first op starts, last op done (0: not finished) */
  } *jobs;
  /* a PFC deadlock: the egress ports of the cycle of pauses, in order */
  uint32_t n_deadlock;
  char (*deadlock)[FAB_NAME_LEN];
} FabResults;

/* nccl-tests' bus bandwidth factor for collective `op` ("allreduce", ...)
** on n ranks: allreduce 2(n-1)/n; allgather, reduce-scatter, all-to-all
** (n-1)/n; broadcast, reduce, send-recv (and anything else) 1. */
double fab_busbw_factor(const char *op, uint32_t n);

/* Free the arrays (not the strings, which the caller owns). */
void fab_results_clear(FabResults *r);

#endif

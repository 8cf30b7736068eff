/*
** The operation DAG: what a workload asks the fabric and the GPUs to do.
**
** Every workload (a flow list, a collective, an nccl-tests sweep, training
** steps, several jobs at once) becomes one FabDag: a list of operations,
** each with the operations it waits for.
**
**   FAB_OP_FLOW     `bytes` from endpoint src to endpoint dst over the fabric
**                   (or NVLink inside a domain). It is posted `pre` after its
**                   data dependencies (those without FAB_DEP_SENT) are done
**                   (the protocol's latency of a step), and not before the
**                   others are; it counts as done `post` after the receiver
**                   holds the last byte (the reduction of what it received).
**                   A GPU reduces one received flow at a time, in arrival
**                   order, so `post` delays queue per receiving endpoint.
**                   `max_bps` caps the flow alone (a channel's SM), `rank_bps`
**                   the sender's capped flows together (LL's ceiling).
**   FAB_OP_NVLS     one rank's part of an NVSwitch (NVLS) operation of its
**                   domain, src == dst; the ops with the same `group` form
**                   one group, and `mark` says what it does (FabNvlsOp):
**                   AR an allreduce of `bytes` (each member contributes its
**                   bytes, owns every n-th reduced segment, multicasts it,
**                   and receives all of them); RS a reduce-scatter (receives
**                   only the reduced segments it owns); AG an all-gather
**                   (multicasts its `bytes`, receives every member's); SHARP
**                   a member of an allreduce in the fabric's switches (the
**                   members of a group, one per node, each contribute
**                   `bytes` into their tree over the network and receive the
**                   result: models/sharp.h).
**   FAB_OP_COMPUTE  `dur` ps of work on rank src's compute stream. A rank
**                   runs one compute op at a time, in the order they become
**                   ready (FIFO); communication does not occupy the stream.
**   FAB_OP_MARK     no work: a join point (done as soon as its dependencies).
**                   `mark` says what it marks, for the reports.
**
** Dependencies are op indices *earlier* in the list (so the graph is acyclic
** by construction). A dependency with FAB_DEP_SENT set on a flow waits only
** until that flow's last packet has left its sender, not until it arrived:
** that keeps the pieces of one connection in order (NCCL sends a channel's
** chunks first-in first-out) while they pipeline.
**
** An op with no dependencies starts at `start`; with dependencies, at
** max(start, when the last of them is done).
*/
#ifndef FAB_DAG_H
#define FAB_DAG_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include "sim/deq.h"
#include "sim/time.h"

typedef enum { FAB_OP_FLOW = 0, FAB_OP_NVLS, FAB_OP_COMPUTE, FAB_OP_MARK } FabOpKind;

/* What a FAB_OP_MARK marks (FabOp.mark). */
typedef enum {
  FAB_MARK_JOIN = 0,    /* nothing: a plain join */
  FAB_MARK_COLL_BEGIN,  /* rank src enters collective `coll` */
  FAB_MARK_COLL_END,    /* rank src has collective `coll`'s result */
  FAB_MARK_STEP_BEGIN,  /* rank src begins training step `step` */
  FAB_MARK_STEP_END,    /* rank src ended training step `step` */
} FabMarkKind;

/* What a FAB_OP_NVLS does (FabOp.mark). */
typedef enum { FAB_NVLS_OP_AR = 0, FAB_NVLS_OP_RS, FAB_NVLS_OP_AG, FAB_NVLS_OP_SHARP } FabNvlsOp;

/* What a FAB_OP_COMPUTE computes (FabOp.mark), for the timeline. */
typedef enum { FAB_PHASE_FWD = 0, FAB_PHASE_BWD, FAB_PHASE_OPT, FAB_PHASE_OTHER, FAB_PHASE_N } FabPhase;
extern const char *const fab_phase_names[FAB_PHASE_N];

#define FAB_DAG_MAX_OPS 8000000u /* a whole workload's operations, at most (memory: ~100 B each) */
#define FAB_DAG_MAX_JOBS 65535u  /* FabOp.job is 16 bits */
#define FAB_DEP_SENT 0x80000000u /* dependency flag: wait for the flow's last packet to leave, not arrive */

/* FabOp.mark of a FLOW: receiver-driven (aws-ofi-nccl's RDMA protocol):
** its first dependency is its receiver's readiness, which the sender learns
** of one control message later (FabExecHooks.ctrl); 0: an ordinary flow. */
#define FAB_FLOW_RDV 1
#define FAB_OP_NONE UINT32_MAX   /* "no op" in arrays of op indices */

typedef struct FabDag FabDag;

typedef struct FabOp {
  uint8_t kind;         /* FabOpKind */
  uint8_t prio;         /* FLOW/NVLS: priority class */
  uint8_t mark;         /* MARK: FabMarkKind; COMPUTE: FabPhase; NVLS: FabNvlsOp */
  uint8_t lane;         /* FLOW: which of a multi-NIC GPU's NICs it leaves by: (lane - 1) mod NICs, as NCCL gives
                        ** each channel its NIC; 0: by the flow's hash */
  uint16_t job;         /* index in FabDag.jobs */
  uint16_t step;        /* training step (0 outside training) */
  uint32_t src, dst;    /* endpoints; COMPUTE/MARK/NVLS: src == dst = the rank's endpoint */
  int32_t coll;         /* index in FabDag.colls, -1: none */
  uint32_t group;       /* NVLS: the group (all members of one reduction share it) */
  uint64_t bytes;       /* FLOW/NVLS: payload bytes the flow carries on the wire (protocol overhead included) */
  fab_time_t start;     /* ps: not before this (absolute) */
  fab_time_t pre;       /* FLOW/NVLS: ps from ready to posted; MARK: from ready to done (a barrier's time) */
  fab_time_t post;      /* FLOW/NVLS: ps from received to done */
  fab_time_t dur;       /* COMPUTE: ps on the compute stream */
  uint64_t max_bps;     /* FLOW: this flow's limit, bits/s on the wire (the throughput of the channel's SM
                        ** for its protocol); 0: line rate */
  union {
    uint64_t rank_bps;  /* FLOW: the sending GPU's limit, bits/s on the wire, for all its flows that have one
                        ** together (LL's ceiling); 0: none */
    uint64_t seg;       /* NVLS: its segments at most this long (a head's chunk, which sets what each member
                        ** owns); 0: the NVLink segment */
  };
  uint32_t dep0, ndeps; /* its dependencies: FabDag.deps[dep0 .. dep0 + ndeps) */
} FabOp;

/* One collective as the reports see it (nccl-tests conventions). */
typedef struct FabCollDef {
  const char *op;        /* "allreduce", "allgather", "reduce-scatter", "broadcast", "reduce", "all-to-all",
                         ** "send-recv" (static) */
  const char *algorithm; /* the one used, after `auto` (static) */
  const char *protocol;  /* "simple", "ll128", "ll" (static) */
  const char *tag;       /* what it is for (interned): "dp", "tp", "pp", "ep", "cp", "emb", "zero", "nccl-tests", NULL */
  uint64_t bytes;        /* nccl-tests "size": allreduce/broadcast/reduce the buffer; allgather the output
                         ** (all ranks' parts); reduce-scatter the input; all-to-all one rank's buffer;
                         ** send-recv what each rank sends */
  uint64_t count;        /* elements (bytes / dtype size; allgather, reduce-scatter: per rank... as nccl-tests) */
  uint32_t dtype_bytes;  /* element size */
  uint32_t nranks;
  int32_t root;          /* broadcast, reduce: the root's rank index; -1 otherwise */
  uint32_t channels;
  uint64_t chunk;        /* bytes per pipelined piece */
  uint16_t job;
  uint16_t step;
} FabCollDef;

/* The most bytes one transfer (a flow, a collective, an activation) may
** carry: 2^50 keeps bytes x 8 (bits) x 128 (LL128's lines) far from 64-bit
** overflow (1 PiB). The YAML keys that give sizes have it as their maximum. */
#define FAB_BYTES_MAX (1ull << 50)
/* The latest time anything may start: 1e18 ps (about 11.6 days), so a start
** plus any run fits in 64-bit picoseconds. */
#define FAB_START_MAX 1000000000000000000ull

/* One job: a workload on its own endpoints (which may overlap another's). */
typedef struct FabJobDef {
  const char *name;      /* fab_dag_job copies it; the DAG owns its copy */
  const char *kind;      /* workload kind (static) */
  uint32_t nranks;
  uint32_t *ranks;       /* rank i runs on endpoint ranks[i] (owned) */
  uint32_t steps;        /* training steps (0: not training) */
  uint32_t microbatches; /* training: per step and pipeline (0: not training) */
  uint32_t pp;           /* training: pipeline stages (1: none) */
  char *note;            /* NULL, or what the job was read from (a trace's file and shape), for explain; owned */
} FabJobDef;

/* Ops made as a run goes (an unfolding DAG): `more` appends the next batch
** of ops and returns false when it has none left. The contract that keeps
** the run exact (the same as if every op had been made first): each op of a
** batch after the first waits for at least one op of the batch before it or
** of its own batch (fab_dag_add checks it), so that no op is made after
** everything it waits for is done; the executor asks for batch b + 1 when
** the first op of batch b becomes ready (exec.h). */
typedef bool (*FabDagMore)(void *ctx, FabDag *d);

struct FabDag {
  FabDeq ops;      /* FabOp, by op index; the ones before ops.first are retired */
  FabDeq deps;     /* uint32_t: op index, | FAB_DEP_SENT */
  GArray *colls;   /* FabCollDef */
  GArray *jobs;    /* FabJobDef */
  uint32_t groups; /* NVLS groups handed out */
  FabDagMore more; /* NULL: every op is made before the run */
  void *more_ctx;
  GDestroyNotify more_free; /* frees more_ctx with the DAG (NULL: not ours) */
  double more_ops;  /* about how many ops `more` will still make (its maker's estimate, for reports) */
  bool exhausted;  /* `more` said it has no more */
  bool making;     /* inside `more` for a batch after the first */
  uint32_t batch0; /* the newest batch's first op */
  uint32_t prev0;  /* the batch before it's first op */
  GHashTable *trace_node; /* NULL, or op index -> the trace node id + 1 it stands for (trace.h) */
};

FabDag *fab_dag_new(void);
void fab_dag_free(FabDag *d);

/* Append `op` (its dep0/ndeps are set here) with `ndeps` dependencies
** (entries FAB_OP_NONE are skipped; each must be an earlier op). Returns its
** index. */
uint32_t fab_dag_add(FabDag *d, const FabOp *op, const uint32_t *deps, uint32_t ndeps);

/* Shorthands. */
uint32_t fab_dag_flow(FabDag *d, uint32_t src, uint32_t dst, uint64_t bytes, uint8_t prio, uint16_t job,
                      int32_t coll, fab_time_t pre, fab_time_t post, const uint32_t *deps, uint32_t ndeps);
uint32_t fab_dag_compute(FabDag *d, uint32_t rank, fab_time_t dur, FabPhase phase, uint16_t job, uint16_t step,
                         const uint32_t *deps, uint32_t ndeps);
uint32_t fab_dag_mark(FabDag *d, uint32_t rank, FabMarkKind mark, uint16_t job, int32_t coll,
                      const uint32_t *deps, uint32_t ndeps);

static inline FabOp *fab_dag_op(const FabDag *d, uint32_t i) { return (FabOp *)fab_deq_at(&d->ops, i); }
/* Ops made so far (retired ones included): the next op's index. */
static inline uint32_t fab_dag_len(const FabDag *d) { return (uint32_t)fab_deq_end(&d->ops); }
/* The first op not retired. */
static inline uint32_t fab_dag_base(const FabDag *d) { return (uint32_t)d->ops.first; }
static inline uint32_t fab_dag_dep(const FabDag *d, const FabOp *op, uint32_t k) {
  return *(const uint32_t *)fab_deq_at(&d->deps, (uint64_t)op->dep0 + k);
}
/* Dependency entries made so far (for fab_dag_truncate). */
static inline uint32_t fab_dag_deps_len(const FabDag *d) { return (uint32_t)fab_deq_end(&d->deps); }

/* Undo the ops made from op `ops0` on, whose dependency entries began at
** `deps0` (a workload that failed halfway). */
void fab_dag_truncate(FabDag *d, uint32_t ops0, uint32_t deps0);

/* Forget ops before `upto` (fab_dag_base <= upto <= fab_dag_len) and their
** dependency entries: their indices stay taken, fab_dag_op must not be
** asked for them again. */
void fab_dag_retire(FabDag *d, uint32_t upto);

/* Ops made as the run goes: `more` (see FabDagMore) is called by
** fab_dag_more, batch by batch. The ops made before (by the workload, or a
** first fab_dag_more) are the first batch. */
void fab_dag_set_more(FabDag *d, FabDagMore more, void *ctx, GDestroyNotify ctx_free);

/* Make the next batch: false when there is none (nothing was added). */
bool fab_dag_more(FabDag *d);

/* Add a collective definition; returns its index (for FabOp.coll). */
int32_t fab_dag_coll(FabDag *d, const FabCollDef *c);
/* Add a job (takes ownership of j->ranks); returns its index. */
uint16_t fab_dag_job(FabDag *d, const FabJobDef *j);

/* Number of flows (FLOW and NVLS ops). */
uint32_t fab_dag_flows(const FabDag *d);

#endif

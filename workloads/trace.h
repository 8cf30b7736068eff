/*
** Traces: workloads read from files, one list of operations per rank.
**
** A trace is what a real job did, rank by rank: compute operations,
** collectives on process groups, sends and receives, each with the ids of
** the same rank's operations it waits for. Two readers fill a FabTrace:
** Chakra execution traces (trace_chakra.c, mlcommons Chakra's protobuf
** format, one file per rank) and fabsim's text format (trace_text.c, one
** operation per line). fab_trace_build turns it into the operation DAG:
**
**   compute      a FAB_OP_COMPUTE of its duration (or its FLOPs at the GPU's
**                peak x efficiency) on the rank's compute stream;
**   collective   the k-th collective a rank issues on a group is the same
**                collective as every other member's k-th on that group
**                (their ops and sizes must agree); it is expanded as NCCL
**                runs it (collective.h), each member entering when its own
**                dependencies are done; a rank's collectives on one group
**                run one after another, as on one NCCL communicator;
**   send / recv  the k-th send from a to b (with a tag) is the k-th receive
**                at b from a with that tag; the pair is one flow, posted
**                when both sides' dependencies are done (NCCL's send waits
**                for its receiver).
**
** Every rank's node ids must be unique in its own trace; dependencies name
** nodes of the same rank. A missing dependency, a cycle, a group naming a
** rank outside the job, partners that never meet: errors naming the file
** and the node id, and nothing is built.
*/
#ifndef FAB_TRACE_H
#define FAB_TRACE_H

#include <glib.h>
#include <stdint.h>
#include "collective.h"
#include "dag.h"
#include "job.h"
#include "sim/config.h"

typedef enum { FAB_TR_COMPUTE = 0, FAB_TR_COLL, FAB_TR_SEND, FAB_TR_RECV } FabTrKind;

#define FAB_TR_WORLD UINT32_MAX /* FabTrNode.group: every rank of the job */

typedef struct FabTrNode {
  uint64_t id;        /* the trace's own id (unique per rank) */
  uint32_t rank;      /* the job rank whose trace holds it */
  uint8_t kind;       /* FabTrKind */
  uint8_t op;         /* COLL: FabCollOp */
  uint32_t group;     /* COLL: index in FabTrace.groups, or FAB_TR_WORLD; SEND/RECV: the peer rank */
  uint32_t root;      /* COLL broadcast/reduce: the root's index in the group */
  uint64_t tag;       /* SEND/RECV: what pairs them beyond the ranks */
  uint64_t bytes;     /* COLL: nccl-tests' size; SEND/RECV: bytes */
  fab_time_t dur;     /* COMPUTE: ps, when recorded (has_dur) */
  double flops;       /* COMPUTE: when no duration is recorded */
  bool has_dur;
  uint32_t dep0, ndeps; /* its dependencies' ids: FabTrace.deps[dep0 .. dep0 + ndeps) */
  const char *name;   /* in FabTrace.strs, or NULL */
  const char *where;  /* "file:line" or "file: node N" for messages (in FabTrace.strs: the trace's own strings,
                      ** not GLib's interned ones, which are never freed) */
} FabTrNode;

typedef struct FabTrGroup {
  const char *name;   /* interned: the trace's name for it ("dp0", Chakra's pg_name) */
  uint32_t n;
  uint32_t *ranks;    /* job ranks, in the group's order */
  bool dp;            /* a data-parallel group: rescaling widens it (fab_trace_scale_dp) */
} FabTrGroup;

typedef struct FabTrace {
  uint32_t nranks;    /* job ranks the trace has */
  GArray *nodes;      /* FabTrNode, each rank's in its trace's order */
  GArray *deps;       /* uint64_t ids */
  GArray *groups;     /* FabTrGroup */
  GHashTable *group_by_name; /* name -> index + 1 */
  GStringChunk *strs;          /* the nodes' names and places */
  uint64_t ctrl_ignored;       /* Chakra ctrl_deps not waited for (ctrl_deps: ignore, or naming absent nodes) */
} FabTrace;

FabTrace *fab_trace_new(uint32_t nranks);
void fab_trace_free(FabTrace *t);

/* Add a node (its dep0/ndeps set here from `deps`). */
void fab_trace_add(FabTrace *t, const FabTrNode *n, const uint64_t *deps, uint32_t ndeps);

/* The group named `name`, or FAB_TR_WORLD when absent. */
uint32_t fab_trace_group_find(const FabTrace *t, const char *name);
/* Add a group (takes ranks); its index. A second group of that name is a bug: check first. */
uint32_t fab_trace_group_add(FabTrace *t, const char *name, uint32_t *ranks, uint32_t n);

/* Replay a trace recorded at some data-parallel degree at `factor` times
** it: the ranks become factor x nranks (replica k's rank r is r + k x
** nranks); every node is repeated in each replica; a group marked dp takes
** its members of every replica (its collectives keep their nccl-tests size:
** an allreduce the same gradient buffer, an allgather or reduce-scatter the
** same whole buffer, each rank's part factor times smaller); any other group
** is one per replica. Send/recv stay inside a replica. */
void fab_trace_scale_dp(FabTrace *t, uint32_t factor);

/* What fab_trace_build needs beyond the trace. */
typedef struct FabTrEnv {
  const FabCollEnv *coll;
  const uint32_t *ep;     /* job rank -> endpoint */
  uint16_t job;
  uint32_t dtype_bytes;   /* element size of the collectives */
  double gpu_flops;       /* peak x efficiency, FLOP/s (0: FLOPs cannot be timed) */
  uint8_t prio;
  fab_time_t start;       /* nothing before */
  GHashTable *node_of;    /* NULL, or filled: op index -> trace node id + 1 (compute ops, collectives' END
                          ** marks, flows of sends) */
} FabTrEnv;

/* Build the DAG of `t` into d. FALSE + err (the node's file and id) when
** the trace cannot run: d is then as it was. */
gboolean fab_trace_build(const FabTrace *t, FabDag *d, const FabTrEnv *env, GError **err);

/* Readers: append the nodes of each rank's trace to t (whose groups are
** those the scenario defines; the text format may define more). err names
** the file and the line or node on bad input. */
gboolean fab_trace_read_text(FabTrace *t, const char *path, GError **err);
/* Chakra: `fmt` names each rank's file, a pattern with one %d (the rank).
** A collective with no size takes `missing_size` (0: an error). The
** dependencies are data_deps, and ctrl_deps too when ctrl_wait (then a
** ctrl_dep naming a node not in the file is ignored, as a caller the
** converter dropped). */
gboolean fab_trace_read_chakra(FabTrace *t, const char *fmt, uint64_t missing_size, bool ctrl_wait, GError **err);

/* ---- the workload kinds text and chakra (trace_job.c) ---- */

struct FabWorkloadEnv;
typedef struct FabTraceIn {
  FabJobIn job;                /* first: fab_job_prefix's rows */
  const char *file;            /* text: the trace */
  const char *traces;          /* chakra: each rank's file, a pattern with one %d */
  const FabCfgNode *groups;    /* name -> ranks, or the path of a YAML/JSON file of that map */
  const FabCfgNode *scale;     /* {dp: F, groups: [names]} */
  uint64_t missing_size;       /* chakra: a transfer with no comm_size (0: an error) */
  int ctrl_deps;               /* chakra: 0 ignore ctrl_deps (data_deps order), 1 wait for them too */
  uint64_t priority;
  int dtype;
} FabTraceIn;
extern const FabCfgKey fab_trace_text_schema[], fab_trace_chakra_schema[];

/* Read a text or Chakra job `wl` (already applied to *in) on job ranks ep[0..n) into d. */
gboolean fab_trace_job(const FabTraceIn *in, const FabCfgNode *wl, bool chakra, FabDag *d,
                       const struct FabWorkloadEnv *env, const uint32_t *ep, uint32_t n, uint16_t job, GError **err);

#endif

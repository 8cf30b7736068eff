/*
** How one simulation is cut over N ranks (issue 14's parallel run;
** `fabsim validate SCENARIO --partition N`): the cut `fabsim run --threads
** N` runs on (a thread per rank; tools/libfabsim/driver.c), and what in the
** workload stands in the way of a run over processes (not built yet).
**
** The fabric's elements are split into N ranks:
**  - a part that may not be split stays whole: an NVLink domain with its
**    nodes' PCIe and NIC elements, or a plain host's NIC (the elements
**    joined by links that do not touch a network switch);
**  - those parts, in the order of their first endpoint (or, for a
**    training job with pipeline stages, by its data-parallel replicas:
**    fab_partition_replica_keys), are cut into N
**    runs of about equal weight (ports: each port's queue and wire carry
**    the events), each cut moved to the nearest boundary between leaf
**    groups (the parts whose first network switch differs; by replica:
**    between replicas) when that keeps every rank within a quarter of its
**    share: leaf groups, pods and rail groups (replicas) stay whole where
**    they can;
**  - the network switches then go, nearest the endpoints first, each to
**    the rank it has the most links into (a leaf to its hosts' rank, an
**    aggregation switch to its pod's), ties to the lighter rank and then
**    the lower: spines and cores spread evenly.
** A link whose two ends are on different ranks is cut; the lookahead is the
** smallest latency of a cut link: conservative ranks may run that far ahead
** of each other before exchanging what crossed.
**
** The operation DAG adds dependencies between ranks: op o waits for op d
** on another rank when d ends there (a flow ends at its receiver, or, for a
** FAB_DEP_SENT dependency, at its sender; other ops at their rank) and o
** begins on this one (at its src). Such a dependency gives the ranks a
** lookahead of o's `pre` for a flow or NVLS op (it is posted that long
** after), and none for a compute or mark op (it begins at once): a
** dependency with none is one the parallel run cannot take without a
** change of the model.
*/
#ifndef FAB_PARTITION_H
#define FAB_PARTITION_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include "sim/deq.h"
#include "topologies/topology.h"
#include "workloads/dag.h"

typedef struct FabPartition {
  uint32_t nranks;
  uint32_t nnodes;          /* the topology's nodes: endpoints 0..nhosts-1 (their NICs), then its switches */
  uint32_t *rank;           /* per node */
  uint32_t nparts;          /* parts that may not be split */
  uint64_t *weight;         /* per rank: ports */
  uint32_t *endpoints;      /* per rank: endpoints */
  uint32_t *switches;       /* per rank: network switches */
  uint32_t groups;          /* leaf groups: runs of parts whose first network switch is the same */
  bool by_group;            /* every cut between parts fell on a leaf-group boundary (with replicas_of: between
                            ** replicas) */
  char replicas_of[FAB_NAME_LEN]; /* "": parts in fabric order; else the training job whose replicas order them */
  uint64_t cut;             /* full-duplex links cut */
  fab_time_t lookahead;     /* ps: the smallest latency of a cut link (FAB_TIME_MAX: none cut) */
  char lookahead_link[2 * FAB_NAME_LEN + 1]; /* "leaf0-spine1": one cut link that has it */
} FabPartition;

/* Cut topology t into n ranks (n >= 1). FALSE + err (a sentence) when it has
** fewer than n parts that may not be split. */
gboolean fab_partition_make(const FabTopology *t, uint32_t n, FabPartition *out, GError **err);
/* The same with the parts ordered by ep_key (per endpoint; parts by their
** endpoints' least key, stably; cuts preferred between keys) before they
** are cut into runs: `job` names what ordered them (replicas_of). */
gboolean fab_partition_make_ordered(const FabTopology *t, uint32_t n, const uint32_t *ep_key, const char *job,
                                    FabPartition *out, GError **err);
/* A training job with pipeline stages (the first in d with pp > 1) orders
** the parts by data-parallel replica: each endpoint's key is its rank's
** place within its stage (tp_i + tp x dp_i, Megatron's layout), so a
** replica's stages come together and each rank of the cut gets whole
** replicas, a share of every stage (a cut in fabric order gives a rank
** whole stages, whose work comes at different times). NULL (no such job)
** or a g_free'd array of t's nhosts keys (UINT32_MAX: not in the job);
** *job its name. */
uint32_t *fab_partition_replica_keys(const FabDag *d, uint32_t nhosts, const char **job);
/* The cut a run of d over n ranks uses: ordered by replica when d has such
** a job, else in fabric order. */
gboolean fab_partition_make_for(const FabTopology *t, const FabDag *d, uint32_t n, FabPartition *out, GError **err);
void fab_partition_clear(FabPartition *p);

/* The rank (<= 255) of every element of t by its stable id (after
** fab_topology_number), in an array of `nids` bytes: a NIC's ports and
** GPU with its endpoint, a switch's ports with it; ids beyond the
** topology's (the run's own elements) get rank 0. g_free it. */
uint8_t *fab_partition_elements(const FabPartition *p, const FabTopology *t, uint32_t nids);

/* The rank of endpoint e. */
static inline uint32_t fab_partition_rank_of(const FabPartition *p, uint32_t e) { return p->rank[e]; }

/* Dependencies between ranks, as a run over the cut meets them. An op is
** made ready by the report of its last dependency, from the rank whose
** partition reports it: a flow's send from its sender's, its arrival (and
** reduction) from its receiver's, a compute op from its rank's; a mark
** from wherever its own dependencies were reported (several: FAB_PART_MANY),
** or, when its `pre` (a barrier's time) is at least the lookahead, from its
** rank's, where it is done that much later. A dependency between ranks is
** one whose reporter is not the rank where its op begins (marks pass it on
** to what waits for them); what it leaves a run over threads is how long
** after the report the op can begin at the earliest: a flow's `pre` after
** the data it waits for (a receiver-driven flow's first dependency: its
** control message's way, if longer), a mark's `pre`, else nothing. One
** closer than the lookahead may come to a partition that already ran past
** it: such a workload cannot run over threads (tools/libfabsim/run_par.c). */
#define FAB_PART_NONE 254
#define FAB_PART_MANY 255

typedef struct FabPartDeps {
  uint64_t ops, deps;   /* ops and dependencies looked at */
  uint64_t cross;       /* dependencies between ranks */
  uint64_t short_;      /* of them, closer than the lookahead */
  fab_time_t min_ahead; /* ps: the least the others leave (FAB_TIME_MAX: none); set it so before a walk */
} FabPartDeps;

typedef struct FabPartWalk {
  fab_time_t need;      /* the lookahead */
  fab_time_t (*ctrl)(void *ctx, uint32_t from, uint32_t to); /* a control message's way (NULL: none) */
  void *ctx;
  bool stop;            /* at the first dependency closer than `need` */
} FabPartWalk;

/* Walk ops [from, to) of d (ops before done->first are retired: long
** done), counting into `out`; `done` (uint8_t per op, numbered like the
** ops, from done->first, its end `from`) gets each op's reporter. Returns
** the first op with a dependency closer than the lookahead, or
** FAB_OP_NONE. */
uint32_t fab_partition_walk(const FabPartition *p, const FabDag *d, uint32_t from, uint32_t to, FabDeq *done,
                            const FabPartWalk *w, FabPartDeps *out);

/* What `validate --partition N` prints: the ranks, the cut, its lookahead,
** the dependencies between ranks (g_free it). `unfolds`: the DAG is made as
** the run goes, so only its first ops were counted. */
char *fab_partition_report(const FabTopology *t, const FabPartition *p, const FabPartDeps *dp, bool unfolds);

#endif

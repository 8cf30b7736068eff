/*
** What a run's operation times say, as result records: each collective's
** start and end (its first op begins, its last op is done), each job's, the
** per-rank timeline (compute ops, each rank's part of each collective,
** pipeline transfers), and each training step's window with what filled
** every rank's part of it (compute, communication, overlap, bubble).
*/
#ifndef FAB_COLLECT_H
#define FAB_COLLECT_H

#include "results.h"
#include "models/nic.h"
#include "workloads/exec.h"

/* Op times measured elsewhere (fabsim-replay: on real processes), in place of an executor's: per op its state
** (FAB_EXEC_*), when it began and when it was done, ps. */
typedef struct FabOpTimes {
  const uint8_t *state;
  const fab_time_t *began, *ended;
} FabOpTimes;

#define FAB_COLLECT_MAX_NICS 16

typedef struct FabCollectIn {
  const FabDag *dag;
  const FabExec *exec;     /* the op times (NULL: from `times`) */
  const FabFlowRec *(*rec)(const void *ctx, uint32_t op); /* the record of flow op `op` */
  /* the network attachments (NIC ports) by which flow op `op`'s bytes leave their node for the network, into
  ** out[0 .. the count returned), at most FAB_COLLECT_MAX_NICS (a flow striped over a GPU's NICs leaves by
  ** several); 0 when they stay in it (NVLink, NVLS in the node); NULL: none counted. A collective's nics are
  ** the attachments its ops name, counted once each while its ops follow one another in op order (as
  ** expansions write them). */
  uint32_t (*nics)(const void *ctx, uint32_t op, int64_t *out);
  const void *ctx;
  const FabOpTimes *times; /* when exec is NULL */
} FabCollectIn;

/* The records are folded op by op, in op order, so that a run can forget
** the ops it has folded (retired ones): fold before retiring, finish at the
** end. What a fold reads of an op (its state and times, its flow's record)
** must be final: the op done and its flow released, or the run over. */
typedef struct FabCollect FabCollect;
FabCollect *fab_collect_new(const FabDag *dag);
void fab_collect_free(FabCollect *c);

/* Fold the ops not folded yet below `to`. */
void fab_collect_fold(FabCollect *c, const FabCollectIn *in, uint32_t to);

/* Fold the rest and fill res's colls, jobs, spans and steps (raw:
** fab_results_finalize derives the rest). */
void fab_collect_finish(FabCollect *c, const FabCollectIn *in, FabResults *res);

#endif

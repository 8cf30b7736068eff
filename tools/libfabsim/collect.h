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

typedef struct FabCollectIn {
  const FabDag *dag;
  const FabExec *exec;     /* the op times */
  const FabFlowRec *flows; /* the flows' records, and op -> flow */
  const uint32_t *flow_of;
} FabCollectIn;

/* Fill res's colls, jobs, spans and steps (raw: fab_results_finalize derives
** the rest). */
void fab_collect(const FabCollectIn *in, FabResults *res);

#endif

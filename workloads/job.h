/*
** What every job of a workload says about itself: the keys all workload
** kinds share (kind, name, ranks, start). Each kind's read struct starts
** with a FabJobIn, and each kind's schema splices fab_job_prefix in first,
** so the prefix is read the same way for every kind (workload.c, training.c).
*/
#ifndef FAB_JOB_H
#define FAB_JOB_H

#include "sim/config.h"
#include "sim/time.h"

typedef struct FabJobIn {
  int kind;                 /* FabWorkloadKind */
  const char *name;         /* NULL: the kind (one job), or job<i> (a list) */
  const FabCfgNode *ranks;  /* all (NULL), a list of endpoints, or "A-B" */
  fab_time_t start;         /* ps: not before this */
} FabJobIn;

/* Rows of FabJobIn; splice them at offset 0 of a struct that starts with one. */
extern const FabCfgKey fab_job_prefix[];

/* The workload kinds' names, in FabWorkloadKind order, NULL-terminated. */
extern const char *const fab_workload_kinds[];

/* Element types as nccl-tests names them (-d), NULL-terminated, and their sizes in bytes. */
extern const char *const fab_dtype_names[];
extern const uint32_t fab_dtype_bytes[];

#endif

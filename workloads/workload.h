/*
** Workloads: what runs, as an operation DAG (dag.h).
**
** `workload:` is one job (a map) or several jobs at once (a sequence of
** maps, each with an optional `name` and the `ranks` it runs on). A job's
** kind says what it generates:
**
**   flows        an explicit list: {src, dst, size, start, priority}
**   permutation  every rank sends `size` to a partner drawn from a seeded
**                uniform random derangement (nobody sends to itself, everyone
**                receives once)
**   incast       `senders` ranks send `size` each to `receiver`; senders is a
**                count (the ranks after the receiver, wrapping) or a list
**   all-to-all   every rank sends `size` to every other rank (flows at once)
**   collective   one collective (`op`, `size`, `algorithm`, `protocol`,
**                `channels`, `chunk`, `dtype`, `root`) expanded by
**                collective.h
**   nccl-tests   the same collective at each size from `min` to `max` by
**                `factor` (or the list `sizes`), `iters` times each, one size
**                after the other, as nccl-tests' *_perf binaries run them
**   training     training steps (training.h)
**   text         a trace in fabsim's text format (trace.h)
**   chakra       Chakra execution traces, one file per rank (trace.h)
**
** A job's `ranks` (default: all endpoints) maps its rank i to an endpoint;
** flow lists name ranks. Generated flows start at `start`.
*/
#ifndef FAB_WORKLOAD_H
#define FAB_WORKLOAD_H

#include <glib.h>
#include <stdbool.h>
#include "sim/config.h"
#include "sim/time.h"
#include "collective.h"
#include "dag.h"

typedef enum { FAB_WL_FLOWS = 0, FAB_WL_PERMUTATION, FAB_WL_INCAST, FAB_WL_ALL_TO_ALL, FAB_WL_COLLECTIVE,
               FAB_WL_NCCL_TESTS, FAB_WL_TRAINING, FAB_WL_TEXT, FAB_WL_CHAKRA } FabWorkloadKind;

/* What the workload needs to know of the cluster. */
typedef struct FabWorkloadEnv {
  uint32_t endpoints;       /* ranks of the fabric */
  uint32_t nprio;           /* priority classes */
  uint64_t seed;            /* the scenario seed */
  FabCollEnv coll;          /* for the collective algorithms and the tuner */
  double gpu_flops;         /* GPU peak FLOP/s (0: plain hosts) */
  double gpu_eff;           /* its efficiency */
  uint64_t gpu_mem_bps;     /* GPU memory (HBM) bandwidth, bits/s (0: plain hosts) */
} FabWorkloadEnv;

/* Read `workload:` and generate its DAG (transfer full), or NULL + err
** (file:line:col, key). */
FabDag *fab_workload_read(const FabCfgNode *root, const FabWorkloadEnv *env, GError **err);

/* A uniform random derangement of 0..n-1 (n >= 2) drawn from RNG stream
** `stream` of `seed`: perm[i] != i for every i. A job draws from the stream
** of its name, fab_rng_stream_of2("job", name). */
void fab_workload_derangement(uint32_t *perm, uint32_t n, uint64_t seed, uint64_t stream);

#endif

/*
** Workloads: what traffic runs, as a list of flows.
**
**   flows        an explicit list: {src, dst, size, start, priority}
**   permutation  every endpoint sends `size` to a partner drawn from a seeded
**                uniform random derangement (nobody sends to itself, everyone
**                receives once)
**   incast       `senders` endpoints send `size` each to `receiver`; senders
**                is a count (the endpoints after the receiver, wrapping) or
**                an explicit list
**   all-to-all   every endpoint sends `size` to every other endpoint
**
**   collective   `op: allreduce` of `size` bytes over `ranks` (all, or a
**                list) with `algorithm: nvls`: one flow per rank, src = dst
**                = the rank, through its NVLink domain's in-switch
**                reduction. Other ops and algorithms come with the
**                collectives work.
**
** All flows of a generated workload start at `start`.
*/
#ifndef FAB_WORKLOAD_H
#define FAB_WORKLOAD_H

#include <glib.h>
#include <stdbool.h>
#include "sim/config.h"
#include "sim/time.h"

typedef struct FabFlowSpec {
  uint32_t src, dst;  /* endpoints */
  uint64_t bytes;     /* payload */
  fab_time_t start;   /* ps */
  uint8_t prio;       /* priority class */
  int32_t coll;       /* the collective it belongs to (index in workload order), -1: none */
  bool nvls;          /* an NVLS member (src == dst): contributes to and receives an in-switch reduction */
} FabFlowSpec;

typedef enum { FAB_WL_FLOWS = 0, FAB_WL_PERMUTATION, FAB_WL_INCAST, FAB_WL_ALL_TO_ALL, FAB_WL_COLLECTIVE } FabWorkloadKind;

/* Read `workload:` for a fabric of `endpoints` endpoints with `nprio`
** priorities, and generate its flows. Returns a GArray of FabFlowSpec
** (transfer full) or NULL + err. `seed` is the scenario seed. */
GArray *fab_workload_read(const FabCfgNode *root, uint32_t endpoints, uint32_t nprio, uint64_t seed,
                          GError **err);

/* A uniform random derangement of 0..n-1 (n >= 2) from the workload RNG
** stream of `seed`: perm[i] != i for every i. */
void fab_workload_derangement(uint32_t *perm, uint32_t n, uint64_t seed);

#endif

/*
** GPU: what an endpoint computes, apart from moving bytes.
**
** Every endpoint (a GPU rank, or a plain host's processor) has one FabGpu
** with two engines that each do one thing at a time, first in, first out:
**
**   compute stream  the kernels of the workload (forward, backward, optimizer
**                   ...): an item occupies the stream for its duration; items
**                   that become ready while it is busy wait in order;
**   reducer         the reductions of received collective pieces: a piece
**                   that must be reduced (ring reduce-scatter steps, tree up
**                   ...) occupies the reducer for bytes / reduce rate after it
**                   arrived, one piece at a time, in arrival order.
**
** Communication does not occupy the compute stream (NCCL runs on its own
** stream and SMs). An item is named by a 32-bit tag chosen by the caller
** (the workload executor uses the operation's index); when it finishes, the
** GPU calls `done` with the tag and the time the item began. Transport
** (queue pairs, NVLink and PCIe ports) is the endpoint's FabNic.
*/
#ifndef FAB_GPU_H
#define FAB_GPU_H

#include <stdbool.h>
#include <stdint.h>
#include "packet.h"

/* An item of `which` (FAB_GPU_COMPUTE, FAB_GPU_REDUCE) finished at eng->now;
** it began at `began`. */
typedef void (*FabGpuDoneFn)(void *ctx, int which, uint32_t tag, fab_time_t began);

enum { FAB_GPU_COMPUTE = 0, FAB_GPU_REDUCE = 1 };

/* A GPU generation: what decides NCCL's per-architecture tables, the
** NVLink generation and whether the NVSwitch can reduce (NVLS, sm90 and
** later). FAB_ARCH_NONE: a plain host. CDNA3 (AMD MI300X, gfx942) runs
** RCCL, whose tuner is its own (workloads/tuner_rccl.c). */
typedef enum {
  FAB_ARCH_NONE = 0, FAB_ARCH_AMPERE, FAB_ARCH_HOPPER, FAB_ARCH_BLACKWELL, FAB_ARCH_CDNA3, FAB_ARCH_N
} FabGpuArch;

/* "none", "ampere", "hopper", "blackwell", "cdna3", NULL (YAML enum; index = FabGpuArch). */
extern const char *const fab_gpu_arch_names[FAB_ARCH_N + 1];

/* The host CPU of a GPU node (cluster.cpu), as NCCL's tuner tells them
** apart (src/graph/tuning.cc): the multi-node llMaxBws row (AMD and mixed
** hosts take row 1), the network post overhead (getNetOverhead: 2 us on AMD
** x86, 1 us otherwise) and NVLS_TREE's bandwidth correction (x86 only). */
typedef enum { FAB_CPU_INTEL = 0, FAB_CPU_AMD, FAB_CPU_ARM, FAB_CPU_N } FabCpu;
extern const char *const fab_cpu_names[FAB_CPU_N + 1];

typedef struct FabGpuItem {
  fab_time_t dur;  /* ps */
  uint32_t tag;
} FabGpuItem;

/* One FIFO engine: the item running, and those waiting. */
typedef struct FabGpuLane {
  bool busy;
  uint32_t tag;           /* the running item */
  fab_time_t began;       /* ps: when it began */
  fab_time_t ends;        /* ps: when it ends */
  FabGpuItem *q;          /* waiting items: a ring of cap, head .. head + n */
  uint32_t head, n, cap;
  uint64_t items;         /* items finished */
  fab_time_t busy_ps;     /* time busy, over the finished items */
} FabGpuLane;

typedef struct FabGpu {
  FabElem el;             /* tie key, handlers */
  uint32_t rank;          /* the endpoint */
  FabGpuLane lane[2];     /* FAB_GPU_COMPUTE, FAB_GPU_REDUCE */
  FabGpuDoneFn done;
  void *ctx;
} FabGpu;

/* Set up the GPU of endpoint `rank`; `done` hears of every finished item. */
void fab_gpu_init(FabGpu *g, uint32_t rank, FabGpuDoneFn done, void *ctx);

/* Free the queues (not g itself). */
void fab_gpu_clear(FabGpu *g);

/* Queue an item of `dur` ps on lane `which`: it begins now if the lane is
** idle, else when the items queued before it are done. The GPU keys its
** events itself (engine.h), whoever submits. */
void fab_gpu_submit(FabEngine *eng, FabGpu *g, int which, fab_time_t dur, uint32_t tag);

#endif

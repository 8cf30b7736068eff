/* The GPU's compute stream and reducer. See gpu.h. */
#include "gpu.h"
#include <glib.h>

const char *const fab_gpu_arch_names[FAB_ARCH_N + 1] = {"none", "ampere", "hopper", "blackwell", "cdna3", NULL};
const char *const fab_cpu_names[FAB_CPU_N + 1] = {"intel", "amd", "arm", NULL};

static void gpu_wake(FabEngine *eng, void *self, uint64_t arg);
static const FabOps gpu_ops = {"gpu", gpu_wake};

void fab_gpu_init(FabGpu *g, uint32_t rank, FabGpuDoneFn done, void *ctx) {
  *g = (FabGpu){0};
  fab_elem_init(&g->el, &gpu_ops);
  g->rank = rank;
  g->done = done;
  g->ctx = ctx;
}

void fab_gpu_clear(FabGpu *g) {
  for (int w = 0; w < 2; w++) {
    g_free(g->lane[w].q);
    g->lane[w].q = NULL;
    g->lane[w].n = g->lane[w].cap = g->lane[w].head = 0;
  }
}

static void start(FabEngine *eng, FabGpu *g, int which, fab_time_t dur, uint32_t tag) {
  FabGpuLane *l = &g->lane[which];
  l->busy = true;
  l->tag = tag;
  l->began = eng->now;
  l->ends = eng->now + dur;
  /* keyed by the GPU itself, not by whatever reported the op's last dependency (a parallel run may hear of it
  ** from another element, tools/libfabsim/driver.c); before the run, routed to its partition */
  if (!eng->cur) {
    fab_engine_setup_at(eng, eng->now + dur, g, (uint64_t)which);
    return;
  }
  fab_engine_at_tie(eng, eng->now + dur, g->el.tie, g, (uint64_t)which);
  g->el.tie += 2;
}

void fab_gpu_submit(FabEngine *eng, FabGpu *g, int which, fab_time_t dur, uint32_t tag) {
  FabGpuLane *l = &g->lane[which];
  if (!l->busy) {
    start(eng, g, which, dur, tag);
    return;
  }
  if (l->n == l->cap) { /* grow the ring, unrolled to start at 0 */
    uint32_t cap = l->cap ? 2 * l->cap : 16;
    FabGpuItem *q = g_new(FabGpuItem, cap);
    for (uint32_t i = 0; i < l->n; i++) q[i] = l->q[(l->head + i) % l->cap];
    g_free(l->q);
    l->q = q;
    l->cap = cap;
    l->head = 0;
  }
  l->q[(l->head + l->n) % l->cap] = (FabGpuItem){dur, tag};
  l->n++;
}

/* The running item of lane `arg` is done: the next one begins, then the
** owner hears of the finished one. */
static void gpu_wake(FabEngine *eng, void *self, uint64_t arg) {
  FabGpu *g = self;
  int which = (int)arg;
  FabGpuLane *l = &g->lane[which];
  uint32_t tag = l->tag;
  fab_time_t began = l->began;
  l->items++;
  l->busy_ps += eng->now - began;
  l->busy = false;
  if (l->n) {
    FabGpuItem it = l->q[l->head];
    l->head = (l->head + 1) % l->cap;
    l->n--;
    start(eng, g, which, it.dur, it.tag);
  }
  if (g->done) g->done(g->ctx, which, tag, began);
}

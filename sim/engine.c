/* The event loop. See engine.h. */
#include "engine.h"
#include <glib.h>

FabEngine *fab_engine_new(uint64_t seed) {
  FabEngine *eng = g_new0(FabEngine, 1);
  eng->seed = seed;
  eng->evq = fab_evq_new(1024);
  eng->pool = fab_pool_new(0);
  return eng;
}

void fab_engine_free(FabEngine *eng) {
  if (!eng) return;
  fab_evq_free(eng->evq);
  fab_pool_free(eng->pool);
  g_free(eng);
}

void fab_engine_stop(FabEngine *eng) { eng->stopped = true; }

bool fab_engine_run(FabEngine *eng, fab_time_t until) {
  FabEvent ev;
  eng->stopped = false;
  while (!eng->stopped && fab_evq_size(eng->evq) && fab_evq_peek_time(eng->evq) <= until) {
    fab_evq_pop(eng->evq, &ev);
    if (G_UNLIKELY(ev.time < eng->now)) return false; /* time never goes back */
    eng->now = ev.time;
    if (G_UNLIKELY((++eng->events & 0xfffff) == 0) && eng->tick) eng->tick(eng, eng->tick_ctx);
    const FabOps *ops = *(const FabOps *const *)ev.target;
    ops->wake(eng, ev.target, ev.arg);
  }
  return true;
}

/* The event loop. See engine.h. */
#include "engine.h"
#include <glib.h>

void fab_elem_set_id(FabElem *e, uint32_t id) {
  g_assert(id <= FAB_ELEM_MAX_ID);
  e->tie = (uint64_t)id << FAB_TIE_SEQ_BITS;
}

FabEngine *fab_engine_new(uint64_t seed, size_t obj_size) {
  FabEngine *eng = g_new0(FabEngine, 1);
  eng->seed = seed;
  eng->evq = fab_evq_new(1024);
  eng->pool = fab_pool_new(obj_size, 0);
  return eng;
}

void fab_engine_free(FabEngine *eng) {
  if (!eng) return;
  fab_evq_free(eng->evq);
  fab_pool_free(eng->pool);
  g_free(eng);
}

void fab_engine_stop(FabEngine *eng) { eng->stopped = true; }

void fab_engine_setup_at(FabEngine *eng, fab_time_t t, void *target, uint64_t arg) {
  fab_engine_far_at(eng, t, target, arg); /* no element runs: keyed by the target */
}

bool fab_engine_run(FabEngine *eng, fab_time_t until) {
  FabEvent ev;
  bool ok = true;
  eng->stopped = false;
  while (!eng->stopped && fab_evq_size(eng->evq) && fab_evq_peek_time(eng->evq) <= until) {
    fab_evq_pop(eng->evq, &ev);
    if (G_UNLIKELY(ev.time < eng->now)) { /* time never goes back */
      ok = false;
      break;
    }
    eng->now = ev.time;
    if (G_UNLIKELY((++eng->events & 0xfffff) == 0) && eng->tick) eng->tick(eng, eng->tick_ctx);
    FabElem *el = ev.target;
    eng->cur = el;
    el->ops->wake(eng, el, ev.arg);
#ifdef FAB_DEBUG_CHECKS
    if (eng->check) eng->check(eng, eng->check_ctx);
#endif
  }
  eng->cur = NULL;
  return ok;
}

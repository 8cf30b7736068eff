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

FabEvent *fab_engine_take_pending(FabEngine *eng, size_t *n) {
  *n = fab_evq_size(eng->evq);
  FabEvent *ev = g_new(FabEvent, MAX(*n, 1u));
  for (size_t i = 0; i < *n; i++) fab_evq_pop(eng->evq, &ev[i]);
  return ev;
}

void fab_engine_put_pending(FabEngine *eng, FabEvent *ev, size_t n) {
  /* a fresh queue: the drained one's wheel has moved past the events it held */
  fab_evq_free(eng->evq);
  eng->evq = fab_evq_new(MAX(n, 1024u));
  for (size_t i = 0; i < n; i++) fab_evq_push(eng->evq, ev[i].time, ev[i].tie, ev[i].target, ev[i].arg);
  g_free(ev);
}

/*
** The engine: simulated time, the event loop and the packet pool of one
** simulation. Everything of a run hangs off one FabEngine; there is no global
** mutable state, so several engines can live in one process.
**
** An element (port, switch, NIC, ...) is any struct whose first member is a
** `const FabOps *`. The engine knows nothing else about it: an event names a
** target element and a 64-bit argument, and the loop calls the element's
** `wake` handler with both. Elements schedule only their next wake-up (the end
** of the head packet's serialisation, the head arrival on a link), so the
** pending-event count grows with busy elements, not with packets in flight.
*/
#ifndef FAB_ENGINE_H
#define FAB_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include "evq.h"
#include "pool.h"
#include "time.h"

typedef struct FabEngine FabEngine;

/* The handler table of an element type (ROSS's tw_lptype). */
typedef struct FabOps {
  const char *kind;                                        /* "port", "switch", ... */
  void (*wake)(FabEngine *eng, void *self, uint64_t arg);  /* an event for it fired */
} FabOps;

struct FabEngine {
  fab_time_t now;     /* ps: time of the event being handled */
  uint64_t seed;      /* scenario seed: elements derive RNG streams from it */
  uint64_t events;    /* events executed so far */
  FabEvq *evq;        /* pending events */
  FabPool *pool;      /* packets */
  bool stopped;       /* fab_engine_stop() was called */
  /* optional: called every 2^20 events (progress reports); must not schedule */
  void (*tick)(FabEngine *eng, void *ctx);
  void *tick_ctx;
};

/* A new engine at time 0. Transfer full. */
FabEngine *fab_engine_new(uint64_t seed);

/* Free the engine, its queue and its pool (packets still live are gone). */
void fab_engine_free(FabEngine *eng);

/* Schedule `target`'s wake(arg) at absolute time t >= now. */
static inline void fab_engine_at(FabEngine *eng, fab_time_t t, void *target, uint64_t arg) {
#ifdef FAB_DEBUG_CHECKS
  if (t < eng->now) __builtin_trap();
#endif
  fab_evq_push(eng->evq, t, target, arg);
}

/* Schedule after a delay. */
static inline void fab_engine_after(FabEngine *eng, fab_time_t dt, void *target, uint64_t arg) {
  fab_evq_push(eng->evq, eng->now + dt, target, arg);
}

static inline fab_time_t fab_engine_now(const FabEngine *eng) { return eng->now; }

/* Run events in (time, seq) order until none is left, the next one is later
** than `until`, or fab_engine_stop() is called. Returns false if time would
** have gone back (an internal invariant; the run is then unusable). */
bool fab_engine_run(FabEngine *eng, fab_time_t until);

/* Make fab_engine_run return after the current event. */
void fab_engine_stop(FabEngine *eng);

#endif

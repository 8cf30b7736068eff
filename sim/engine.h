/*
** The engine: simulated time, the event loop and the object pool of one
** simulation. Everything of a run hangs off one FabEngine; there is no global
** mutable state, so several engines can live in one process.
**
** An element (a port, a switch, a NIC, a GPU, the workload's executor ...)
** is any struct whose first member is a FabElem: its handler table and its
** tie key. The engine knows nothing else about it. An event names a target
** element and a 64-bit argument; the loop calls the target's `wake` handler
** with both. Elements schedule only their next wake-up (the end of the head
** packet's serialisation, the head arrival on a link), so the pending-event
** count grows with busy elements, not with packets in flight.
**
** Event order. Events run in time order. Events of equal time run in the
** order of their tie keys, and an event's tie key is made by the element
** that scheduled it:
**
**     tie = (scheduler's stable id << FAB_TIE_SEQ_BITS) | scheduler's counter
**
** where the scheduler is the element whose handler is running when the
** event is scheduled (or, before the loop starts, the target itself), and
** its counter moves by 2 with every event it schedules. So among equal
** times the element with the smaller id goes first, and one element's
** events go in the order it scheduled them. The key depends only on what
** each element did, never on the order in which all elements scheduled:
** any partition of the elements into processes that exchange events would
** replay exactly the same order (the parallel-runs design rests on this),
** provided an element's handlers all run on one side of the cut. A link's
** two ends do not: a port sends, and its wire's far end (models/port.h)
** receives, so the wire is an element of its own under the port's id, the
** two counting apart (the port's keys even from 2, the wire's odd from 1;
** hence the step of 2), and a packet's arrival is keyed (id, 0) by whoever
** schedules it (fab_engine_at_tie). In a parallel run (sim/par.h) an
** event for an element of another partition goes through the engine's
** outbox: the places that may schedule across a cut say so
** (fab_engine_part_at_tie: a packet onto a wire, a credit back over a link,
** with the partition the port knows; fab_engine_far_at before the loop),
** and everything else stays on its own partition at no cost (debug_checks
** builds trap if it does not). Ids are given by the
** builders in a fixed order of stable positions (every process building
** the same scenario gives the same ids); an id has 64 - FAB_TIE_SEQ_BITS =
** 24 bits, a counter 40 (5 x 10^11 events per element).
*/
#ifndef FAB_ENGINE_H
#define FAB_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "evq.h"
#include "pool.h"
#include "time.h"

typedef struct FabEngine FabEngine;

/* An event into a parallel run (sim/par.c): to this engine's queue, or to
** another partition's at the end of the window; with fab_par_push_to, to
** partition `to`, which the caller knows (reading the target's header
** would race with its partition, which moves its key). */
void fab_par_push(FabEngine *eng, fab_time_t t, uint64_t tie, void *target, uint64_t arg);
void fab_par_push_to(FabEngine *eng, uint32_t to, fab_time_t t, uint64_t tie, void *target, uint64_t arg);
/* Whether the element runs in this engine's partition. */
bool fab_par_local(const FabEngine *eng, const void *elem);
/* fab_engine_at outside the loop (engine.c): keyed by the target, and in a
** parallel run to the target's partition. */
void fab_engine_setup_at(FabEngine *eng, fab_time_t t, void *target, uint64_t arg);

/* The handler table of an element type (ROSS's tw_lptype). */
typedef struct FabOps {
  const char *kind;                                        /* "port", "switch", ... */
  void (*wake)(FabEngine *eng, void *self, uint64_t arg);  /* an event for it fired */
  /* optional: the element whose partition this one runs in (a parallel run,
  ** sim/par.h), for one that shares its id with another (a port's wire runs
  ** with the port's peer); NULL: itself */
  const void *(*home)(const void *self);
  /* its events' arg, when scheduled from another partition, is an object of the engine's pool (a packet on a
  ** cut wire) that a run over processes copies across (sim/par.h) */
  bool carries;
} FabOps;

#define FAB_TIE_SEQ_BITS 40
#define FAB_ELEM_MAX_ID ((1u << (64 - FAB_TIE_SEQ_BITS)) - 1) /* 16777215 */

/* The header of every element. */
typedef struct FabElem {
  const FabOps *ops;   /* its handlers */
  uint64_t tie;        /* the tie key its next scheduled event gets: id << FAB_TIE_SEQ_BITS | counter */
} FabElem;

/* Set up an element's header: its handlers, id 0 and counter 0. */
static inline void fab_elem_init(FabElem *e, const FabOps *ops) {
  e->ops = ops;
  e->tie = 0;
}

/* Give the element its stable id (<= FAB_ELEM_MAX_ID) and reset its counter. */
void fab_elem_set_id(FabElem *e, uint32_t id);

/* The element's stable id. */
static inline uint32_t fab_elem_id(const FabElem *e) { return (uint32_t)(e->tie >> FAB_TIE_SEQ_BITS); }

struct FabEngine {
  fab_time_t now;     /* ps: time of the event being handled */
  uint64_t seed;      /* scenario seed: elements derive RNG streams from it */
  uint64_t events;    /* events executed so far */
  FabEvq *evq;        /* pending events */
  FabPool *pool;      /* the run's small fixed-size objects (models/: packets) */
  FabElem *cur;       /* the element whose handler runs; NULL outside the loop */
  bool stopped;       /* fab_engine_stop() was called */
  /* optional: called every 2^20 events (progress reports); must not schedule */
  void (*tick)(FabEngine *eng, void *ctx);
  void *tick_ctx;
  /* a parallel run (sim/par.h) whose partition `part` this engine runs; NULL: a run of its own */
  struct FabPar *par;
  uint32_t part;
  /* debug_checks builds: called after every event (the model's ledgers) */
  void (*check)(FabEngine *eng, void *ctx);
  void *check_ctx;
};

/* A new engine at time 0 whose pool holds objects of `obj_size` bytes.
** Transfer full. */
FabEngine *fab_engine_new(uint64_t seed, size_t obj_size);

/* Free the engine, its queue and its pool (objects still live are gone). */
void fab_engine_free(FabEngine *eng);

/* Schedule `target`'s wake(arg) at absolute time t >= now. `target` is an
** element (its first member is a FabElem). The tie key comes from the
** running element (see the top of this file). Cost: O(1) into the wheel. */
static inline void fab_engine_at(FabEngine *eng, fab_time_t t, void *target, uint64_t arg) {
#ifdef FAB_DEBUG_CHECKS
  if (t < eng->now) __builtin_trap();
#endif
  FabElem *by = eng->cur;
  if (__builtin_expect(by == NULL, 0)) { /* before the loop: the target schedules for itself */
    fab_engine_setup_at(eng, t, target, arg);
    return;
  }
#ifdef FAB_DEBUG_CHECKS
  if (eng->par && !fab_par_local(eng, target)) __builtin_trap(); /* across partitions: fab_engine_part_at_tie */
#endif
  fab_evq_push(eng->evq, t, by->tie, target, arg);
  by->tie += 2;
}

/* Schedule `target`'s wake(arg) at t with a tie key the caller makes, for
** an event whose key must not depend on which element schedules it (an
** arrival on a wire: models/port.c). The caller keeps keys unique: no two
** pending events may share (t, tie). */
static inline void fab_engine_at_tie(FabEngine *eng, fab_time_t t, uint64_t tie, void *target, uint64_t arg) {
#ifdef FAB_DEBUG_CHECKS
  if (t < eng->now) __builtin_trap();
  if (eng->par && !fab_par_local(eng, target)) __builtin_trap();
#endif
  fab_evq_push(eng->evq, t, tie, target, arg);
}

/* fab_engine_at_tie for a target that may be in another partition. */
static inline void fab_engine_far_at_tie(FabEngine *eng, fab_time_t t, uint64_t tie, void *target, uint64_t arg) {
#ifdef FAB_DEBUG_CHECKS
  if (t < eng->now) __builtin_trap();
#endif
  if (__builtin_expect(eng->par != NULL, 0)) fab_par_push(eng, t, tie, target, arg);
  else fab_evq_push(eng->evq, t, tie, target, arg);
}

/* fab_engine_far_at_tie for a target in partition `part` of a parallel run
** (ignored in a run of its own): a port knows where its wire ends, and
** reading the target's header would race with the partition that runs it. */
static inline void fab_engine_part_at_tie(FabEngine *eng, uint32_t part, fab_time_t t, uint64_t tie, void *target,
                                          uint64_t arg) {
#ifdef FAB_DEBUG_CHECKS
  if (t < eng->now) __builtin_trap();
#endif
  if (__builtin_expect(eng->par != NULL, 0)) fab_par_push_to(eng, part, t, tie, target, arg);
  else fab_evq_push(eng->evq, t, tie, target, arg);
}

/* fab_engine_at for an event that may be for an element of another
** partition of a parallel run (sim/par.h): the few places where one element
** schedules another across a delay a cut may span (a link's latency) use
** this, so that the others pay nothing for parallel runs. */
static inline void fab_engine_far_at(FabEngine *eng, fab_time_t t, void *target, uint64_t arg) {
  FabElem *by = eng->cur ? eng->cur : (FabElem *)target;
  uint64_t tie = by->tie;
  by->tie += 2;
  fab_engine_far_at_tie(eng, t, tie, target, arg);
}

/* Schedule after a delay. */
static inline void fab_engine_after(FabEngine *eng, fab_time_t dt, void *target, uint64_t arg) {
  fab_engine_at(eng, eng->now + dt, target, arg);
}

static inline fab_time_t fab_engine_now(const FabEngine *eng) { return eng->now; }

/* Every pending event, in (time, tie) order, taken out of the queue (the
** fast-forward of tools/libfabsim/fastfwd.c moves some of them later);
** *n of them. Give them back, changed or not, with fab_engine_put_pending
** (which frees the array) before the loop pops again. */
FabEvent *fab_engine_take_pending(FabEngine *eng, size_t *n);
void fab_engine_put_pending(FabEngine *eng, FabEvent *ev, size_t n);

/* Run events in (time, tie) order until none is left, the next one is later
** than `until`, or fab_engine_stop() is called. Returns false if time would
** have gone back (an internal invariant; the run is then unusable). */
bool fab_engine_run(FabEngine *eng, fab_time_t until);

/* Make fab_engine_run return after the current event. */
void fab_engine_stop(FabEngine *eng);

#endif

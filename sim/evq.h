/*
** The event queue: a priority queue of (time, tie key, target, arg).
**
** Events pop in time order; events of equal time pop in the order of their
** tie keys, which the caller gives (the engine builds them from the
** scheduling element's stable id and that element's own counter: see
** engine.h), so the order never depends on when, globally, an event was
** pushed. The structure, chosen by the hold-model benchmark in
** tests/bench_evq.c (README "Event queue"), is a timing wheel of 2^16
** buckets of 2.048 ns for the next 134 us, whose active bucket is a 4-ary
** heap, a coarse wheel of 2^12 buckets of 134 us for the next 550 ms (timeouts),
** plus a 4-ary heap for events further out (see evq.c). Many events at
** one timestamp fall in one bucket and cost what a heap costs: O(log n).
**
** Cost: push O(1) into the wheel, O(log n) into a heap; pop O(1) for events
** that came in order, O(log k) for the k others of the active bucket, plus
** a bitmap scan to the next non-empty bucket. Memory: about 520 KB for the
** wheel, allocated by fab_evq_new, plus 32 bytes per pending event (a wheel
** bucket's list is blocks of four events, so up to three unused places per
** non-empty bucket; arrays grown by doubling).
*/
#ifndef FAB_EVQ_H
#define FAB_EVQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "time.h"

typedef struct FabEvent {
  fab_time_t time; /* ps */
  uint64_t tie;    /* orders events of equal time (smaller first) */
  void *target;    /* who handles it (the engine calls its ops) */
  uint64_t arg;    /* handler-defined */
} FabEvent;

typedef struct FabEvq FabEvq;

/* An empty queue. `cap` is a hint of the pending events to expect (the
** side tables grow by doubling either way). Transfer full. */
FabEvq *fab_evq_new(size_t cap);
void fab_evq_free(FabEvq *q);

/* Insert an event. Two pending events should not share (time, tie): their
** order would be unspecified. */
void fab_evq_push(FabEvq *q, fab_time_t t, uint64_t tie, void *target, uint64_t arg);

/* Remove the earliest event into *out. false if the queue is empty. */
bool fab_evq_pop(FabEvq *q, FabEvent *out);

/* Benchmarks only (tools/bench's bare loop, tests/bench_bare.c): `fn` hears
** of every event pushed from now on. NULL stops it. */
typedef void (*FabEvqRecordFn)(void *ctx, fab_time_t t, uint64_t tie);
void fab_evq_record(FabEvq *q, FabEvqRecordFn fn, void *ctx);

/* Number of pending events. */
size_t fab_evq_size(const FabEvq *q);

/* Events popped by the fast path so far (from the active bucket's sorted
** run, with no heap work; evq.c says when). */
uint64_t fab_evq_fast_pops(const FabEvq *q);

/* Time of the earliest event, FAB_TIME_MAX if empty. */
fab_time_t fab_evq_peek_time(FabEvq *q);

#endif

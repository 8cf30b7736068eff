/*
** The event queue: a priority queue of (time, sequence number, target, arg).
**
** Events pop in time order; events with equal time pop in the order they were
** pushed (the sequence number is assigned by push, as libuv's timer heap
** does), so a run is deterministic. The structure is an implicit d-ary heap
** (d = FAB_EVQ_ARITY, 4 by default) of 32-byte entries, chosen by the
** hold-model benchmark in tests/bench_evq.c (see README "Event queue").
** Many events at one timestamp do not degrade it: the (time, seq) key is
** unique, so the heap stays balanced whatever the time distribution.
**
** Cost: push and pop O(log_d n); peek O(1). No allocation except when the
** array doubles.
*/
#ifndef FAB_EVQ_H
#define FAB_EVQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "time.h"

typedef struct FabEvent {
  fab_time_t time; /* ps */
  uint64_t seq;    /* push order, unique */
  void *target;    /* who handles it (the engine calls its ops) */
  uint64_t arg;    /* handler-defined */
} FabEvent;

typedef struct FabEvq FabEvq;

/* A queue with room for `cap` events before it grows. Transfer full. */
FabEvq *fab_evq_new(size_t cap);
void fab_evq_free(FabEvq *q);

/* Insert an event. */
void fab_evq_push(FabEvq *q, fab_time_t t, void *target, uint64_t arg);

/* Remove the earliest event into *out. false if the queue is empty. */
bool fab_evq_pop(FabEvq *q, FabEvent *out);

/* Number of pending events. */
size_t fab_evq_size(const FabEvq *q);

/* Time of the earliest event, FAB_TIME_MAX if empty. */
fab_time_t fab_evq_peek_time(FabEvq *q);

#endif

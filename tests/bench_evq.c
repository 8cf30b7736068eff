/*
** Hold-model benchmark and order check for the event queue (sim/evq.h).
**
** Built by tests/meson.build four times: the timing wheel fabsim uses, and
** plain heaps of arity 2, 4 and 8 (-DFAB_EVQ_HEAP_ONLY -DFAB_EVQ_ARITY=d):
** build/tests/bench_evq_{wheel,heap2,heap4,heap8}; `meson test -C build
** --benchmark`. By hand:
**   gcc -O2 -std=gnu11 -I. -DFAB_EVQ_ARITY=4 tests/bench_evq.c sim/evq.c \
**       $(pkg-config --cflags --libs glib-2.0) -o /tmp/bench_evq_4
**
** Usage: bench_evq_A [N...]     (default N = 1000 10000 100000 1000000)
**
** For each N (pending events) and each time distribution:
**   fill the queue with N events, run N untimed warm-up holds, then REPS
**   rounds of M = max(2e6, 4N) timed holds; one hold = one pop + one push of
**   a new event at (popped time + increment). The best round is reported:
**     evq arity=4 pending=1000 hold_ns_per_op=35.2 dist=uniform ops=2000000
**   dist=uniform: increments uniform in [0, 2 us) (in ps), few ties.
**   dist=ties:    increments drawn from {0, 0, 0, 1000} ps, so nearly all
**                 pending events share one of two timestamps.
** Every push passes the next value of a counter as its tie key (what the
** queue's own sequence number used to be), so equal times pop first in,
** first out. Every pop is checked to come out in strictly increasing
** (time, tie) order (a hold never pushes before the popped event), and the
** queue is drained and checked at the end. A separate check verifies that
** equal-time events pop in push (FIFO) order. Any violation prints a message
** and aborts.
*/
#include "sim/evq.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef FAB_EVQ_ARITY
#define FAB_EVQ_ARITY 4
#endif
#ifdef FAB_EVQ_HEAP_ONLY
#define KIND_FMT "heap%d"
#else
#define KIND_FMT "wheel+heap%d"
#endif

#define REPS 3
#define MEAN_INC ((fab_time_t)1000000) /* 1 us in ps */

/* splitmix64: small, fast, good enough; state is local to the caller. */
typedef struct { uint64_t s; } Rng;

static inline uint64_t rng_next(Rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Uniform in [0, n), n small compared with 2^64 (bias negligible). */
static inline uint64_t rng_below(Rng *r, uint64_t n) {
  return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

typedef enum { DIST_UNIFORM, DIST_TIES } Dist;
static const char *const dist_name[] = {"uniform", "ties"};

static inline fab_time_t draw_inc(Rng *r, Dist d) {
  if (d == DIST_UNIFORM) return rng_below(r, 2 * MEAN_INC);
  return (rng_next(r) & 3) == 3 ? 1000 : 0; /* {0, 0, 0, 1000} */
}

/* The tie key of the next push: a counter, restarted with each queue, so
** (time, tie) is the old (time, push sequence number). */
static uint64_t next_tie;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void fail(const char *what, const FabEvent *prev, const FabEvent *e) {
  fprintf(stderr,
          "bench_evq (arity %d): %s: popped (time %" PRIu64 ", tie %" PRIu64 ") after (time %" PRIu64
          ", tie %" PRIu64 ")\n",
          FAB_EVQ_ARITY, what, e->time, e->tie, prev->time, prev->tie);
  abort();
}

/* Order check between consecutive pops: (time, tie) strictly increasing. */
static inline void check_order(const FabEvent *prev, const FabEvent *e) {
  if (e->time < prev->time || (e->time == prev->time && e->tie <= prev->tie))
    fail("pop order violated", prev, e);
}

/* M holds; returns the elapsed ns. *prev is the last popped event. */
static double hold_round(FabEvq *q, Rng *r, Dist d, uint64_t m, FabEvent *prev) {
  FabEvent e;
  double t0 = now_ns();
  for (uint64_t i = 0; i < m; i++) {
    if (__builtin_expect(!fab_evq_pop(q, &e), 0)) {
      fprintf(stderr, "bench_evq: queue unexpectedly empty\n");
      abort();
    }
    check_order(prev, &e);
    *prev = e;
    fab_evq_push(q, e.time + draw_inc(r, d), next_tie++, e.target, e.arg + 1);
  }
  return now_ns() - t0;
}

static void bench(uint64_t n, Dist d) {
  Rng r = {0x5eed0000ULL + n * 2 + (uint64_t)d};
  uint64_t m = 4 * n > 2000000 ? 4 * n : 2000000;
  FabEvq *q = fab_evq_new((size_t)n);
  next_tie = 0;

  for (uint64_t i = 0; i < n; i++) {
    fab_time_t t = d == DIST_UNIFORM ? rng_below(&r, 2 * MEAN_INC) : 1000 * rng_below(&r, 2);
    fab_evq_push(q, t, next_tie++, NULL, i);
  }
  if (fab_evq_size(q) != n) {
    fprintf(stderr, "bench_evq: size %zu after %" PRIu64 " pushes\n", fab_evq_size(q), n);
    abort();
  }

  FabEvent prev = {0, 0, NULL, 0};
  FabEvent first;
  /* The first pop has no predecessor: it only has to be the minimum time. */
  if (fab_evq_peek_time(q) == FAB_TIME_MAX || !fab_evq_pop(q, &first)) abort();
  prev = first;
  fab_evq_push(q, first.time + draw_inc(&r, d), next_tie++, NULL, first.arg + 1);

  hold_round(q, &r, d, n, &prev); /* warm-up: reach the steady-state shape */
  double best = -1;
  for (int k = 0; k < REPS; k++) {
    double ns = hold_round(q, &r, d, m, &prev);
    if (best < 0 || ns < best) best = ns;
  }

  /* Drain: everything left must come out in order, and exactly n of it. */
  uint64_t left = 0;
  FabEvent e;
  while (fab_evq_pop(q, &e)) {
    check_order(&prev, &e);
    prev = e;
    left++;
  }
  if (left != n || fab_evq_size(q) != 0 || fab_evq_peek_time(q) != FAB_TIME_MAX) {
    fprintf(stderr, "bench_evq: drained %" PRIu64 " events, expected %" PRIu64 "\n", left, n);
    abort();
  }
  fab_evq_free(q);

  printf("evq " KIND_FMT " pending=%" PRIu64 " hold_ns_per_op=%.1f dist=%s ops=%" PRIu64 "\n",
         FAB_EVQ_ARITY, n, best / (double)m, dist_name[d], m);
  fflush(stdout);
}

/* Equal-time events must pop in push order, also when pushes and pops
** interleave and when other timestamps are mixed in. */
static void check_fifo(void) {
  enum { T = 7, PER = 2000 };
  Rng r = {0xf1f0};
  FabEvq *q = fab_evq_new(4);
  next_tie = 0;
  uint64_t pushed[T] = {0};
  uint64_t popped[T] = {0};
  FabEvent e, prev;

  /* Phase 1: T timestamps, pushed in random interleaving; arg = per-time index. */
  for (int i = 0; i < T * PER / 2; i++) {
    unsigned k = (unsigned)rng_below(&r, T);
    fab_evq_push(q, 1000 * (fab_time_t)k, next_tie++, NULL, ((uint64_t)k << 32) | pushed[k]++);
  }
  /* Phase 2: pop some, then push more at the current minimum and later times. */
  int have_prev = 0;
  for (int i = 0; i < T * PER / 8; i++) {
    if (!fab_evq_pop(q, &e)) abort();
    unsigned k = (unsigned)(e.arg >> 32);
    if (e.time != 1000 * (fab_time_t)k || (e.arg & 0xffffffffu) != popped[k]) goto bad;
    popped[k]++;
    if (have_prev) check_order(&prev, &e);
    prev = e;
    have_prev = 1;
  }
  unsigned kmin = (unsigned)(prev.time / 1000);
  for (int i = 0; i < T * PER / 2; i++) {
    unsigned k = kmin + (unsigned)rng_below(&r, T - kmin);
    fab_evq_push(q, 1000 * (fab_time_t)k, next_tie++, NULL, ((uint64_t)k << 32) | pushed[k]++);
  }
  while (fab_evq_pop(q, &e)) {
    unsigned k = (unsigned)(e.arg >> 32);
    if (e.time != 1000 * (fab_time_t)k || (e.arg & 0xffffffffu) != popped[k]) goto bad;
    popped[k]++;
    check_order(&prev, &e);
    prev = e;
  }
  for (int k = 0; k < T; k++)
    if (pushed[k] != popped[k]) {
      fprintf(stderr, "bench_evq: time %d: pushed %" PRIu64 ", popped %" PRIu64 "\n", k, pushed[k],
              popped[k]);
      abort();
    }
  fab_evq_free(q);
  printf("evq " KIND_FMT " fifo_check=ok events=%d\n", FAB_EVQ_ARITY, T * PER);
  fflush(stdout);
  return;
bad:
  fprintf(stderr,
          "bench_evq (arity %d): equal-time events not FIFO: time %" PRIu64 " got push #%" PRIu64
          ", expected #%" PRIu64 "\n",
          FAB_EVQ_ARITY, e.time, e.arg & 0xffffffffu, popped[(e.arg >> 32) % T]);
  abort();
}

int main(int argc, char **argv) {
  static const uint64_t defaults[] = {1000, 10000, 100000, 1000000};
  check_fifo();
  for (int d = DIST_UNIFORM; d <= DIST_TIES; d++) {
    if (argc > 1) {
      for (int i = 1; i < argc; i++) {
        char *end;
        unsigned long long n = strtoull(argv[i], &end, 10);
        if (*end || n == 0) {
          fprintf(stderr, "usage: %s [PENDING...]\n", argv[0]);
          return 2;
        }
        bench(n, (Dist)d);
      }
    } else {
      for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) bench(defaults[i], (Dist)d);
    }
  }
  return 0;
}

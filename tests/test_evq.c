/*
** Event queue (sim/evq.h): events pop in (time, tie) order, whichever of
** its structures holds them -- the active bucket (a sorted run of the events
** that came in order, and a heap of the others), a wheel bucket
** (a list, 2^16 buckets of 2048 ps: a 134.2 us horizon) or the far heap
** beyond the horizon -- and whenever they move between them.
**
** The tie key is the caller's. Most cases pass an increasing counter (the
** push index) as the tie, so "equal times pop in push order" still holds and
** is checked as before; they compare the queue against a reference: the same
** events sorted by (time, push index). Every event also carries its push
** index in `arg`, so the order is checked on the payload, not only on the
** `tie` the queue reports. The "tie keys" cases push ties out of push order:
** equal times then pop in tie order, never in push order.
*/
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sim/evq.h"
#include "sim/rng.h"

#define BUCKET ((fab_time_t)2048)            /* ps, bucket width */
#define STREAM_TEST 99                       /* a numeric stream kind for test draws */
#define HORIZON (BUCKET * 65536)             /* ps, 134.217728 us */

typedef struct Ref {
  fab_time_t t;
  uint64_t i; /* push index */
} Ref;

static int ref_cmp(const void *x, const void *y) {
  const Ref *a = x, *b = y;
  if (a->t != b->t) return a->t < b->t ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}

static void pop_expect(FabEvq *q, fab_time_t t, uint64_t arg) {
  FabEvent ev;
  cr_assert_eq(fab_evq_peek_time(q), t, "peek %llu, expected %llu", (unsigned long long)fab_evq_peek_time(q),
               (unsigned long long)t);
  cr_assert(fab_evq_pop(q, &ev), "queue empty, expected an event at %llu", (unsigned long long)t);
  cr_assert_eq(ev.time, t, "popped time %llu, expected %llu (arg %llu)", (unsigned long long)ev.time,
               (unsigned long long)t, (unsigned long long)ev.arg);
  cr_assert_eq(ev.arg, arg, "at time %llu popped arg %llu, expected %llu", (unsigned long long)t,
               (unsigned long long)ev.arg, (unsigned long long)arg);
}

/* Push every ref (in array order: push index = position, used as both tie
** and arg), then pop them all and compare with the sorted copy; peek and
** size are checked at each step. */
static void push_all_pop_sorted(Ref *refs, size_t n) {
  FabEvq *q = fab_evq_new(16);
  static int dummy;
  for (size_t i = 0; i < n; i++) {
    refs[i].i = i;
    fab_evq_push(q, refs[i].t, i, &dummy, i);
    cr_assert_eq(fab_evq_size(q), i + 1);
  }
  qsort(refs, n, sizeof *refs, ref_cmp);
  for (size_t k = 0; k < n; k++) {
    FabEvent ev;
    cr_assert_eq(fab_evq_peek_time(q), refs[k].t, "step %zu: peek %llu, expected %llu", k,
                 (unsigned long long)fab_evq_peek_time(q), (unsigned long long)refs[k].t);
    cr_assert(fab_evq_pop(q, &ev));
    cr_assert_eq(ev.time, refs[k].t, "step %zu: time %llu, expected %llu", k, (unsigned long long)ev.time,
                 (unsigned long long)refs[k].t);
    cr_assert_eq(ev.arg, refs[k].i, "step %zu (time %llu): arg %llu, expected %llu", k,
                 (unsigned long long)ev.time, (unsigned long long)ev.arg, (unsigned long long)refs[k].i);
    cr_assert_eq(ev.tie, refs[k].i, "step %zu: tie %llu, expected %llu", k, (unsigned long long)ev.tie,
                 (unsigned long long)refs[k].i);
    cr_assert_eq(ev.target, &dummy);
    cr_assert_eq(fab_evq_size(q), n - k - 1);
  }
  FabEvent ev;
  cr_assert_not(fab_evq_pop(q, &ev));
  cr_assert_eq(fab_evq_peek_time(q), FAB_TIME_MAX);
  fab_evq_free(q);
}

/* ---- basics ------------------------------------------------------------ */

Test(evq, empty_queue) {
  FabEvq *q = fab_evq_new(0);
  FabEvent ev = {.time = 7, .arg = 9};
  cr_assert_eq(fab_evq_size(q), 0);
  cr_assert_eq(fab_evq_peek_time(q), FAB_TIME_MAX);
  cr_assert_not(fab_evq_pop(q, &ev));
  cr_assert_eq(ev.time, 7, "a failed pop must not write the event");
  cr_assert_eq(ev.arg, 9);
  fab_evq_free(q);
  fab_evq_free(NULL); /* allowed */
}

Test(evq, one_event_fields_round_trip) {
  FabEvq *q = fab_evq_new(4);
  int target;
  FabEvent ev;
  fab_evq_push(q, 12345, 0x0123456789abcdefULL, &target, 0xdeadbeefcafeULL);
  cr_assert_eq(fab_evq_size(q), 1);
  cr_assert_eq(fab_evq_peek_time(q), 12345);
  cr_assert_eq(fab_evq_size(q), 1, "peek does not remove");
  cr_assert(fab_evq_pop(q, &ev));
  cr_assert_eq(ev.time, 12345);
  cr_assert_eq(ev.target, &target);
  cr_assert_eq(ev.arg, 0xdeadbeefcafeULL);
  cr_assert_eq(ev.tie, 0x0123456789abcdefULL, "the tie key comes back as given");
  cr_assert_eq(fab_evq_size(q), 0);
  cr_assert_not(fab_evq_pop(q, &ev));
  cr_assert_eq(fab_evq_peek_time(q), FAB_TIME_MAX);
  fab_evq_free(q);
}

Test(evq, small_hand_order) {
  /* pushed 30, 10, 20, 10, 0 with ties 0..4: pops 0, 10 (pushed 2nd), 10 (4th), 20, 30 */
  FabEvq *q = fab_evq_new(4);
  const fab_time_t t[] = {30, 10, 20, 10, 0};
  for (uint64_t i = 0; i < 5; i++) fab_evq_push(q, t[i], i, NULL, i);
  pop_expect(q, 0, 4);
  pop_expect(q, 10, 1);
  pop_expect(q, 10, 3);
  pop_expect(q, 20, 2);
  pop_expect(q, 30, 0);
  cr_assert_eq(fab_evq_size(q), 0);
  fab_evq_free(q);
}

Test(evq, size_counts_pushes_minus_pops) {
  FabEvq *q = fab_evq_new(1);
  FabEvent ev;
  for (uint64_t i = 0; i < 3000; i++) fab_evq_push(q, (i * 7919) % 5000 * FAB_US, i, NULL, i);
  cr_assert_eq(fab_evq_size(q), 3000);
  for (int i = 0; i < 1000; i++) cr_assert(fab_evq_pop(q, &ev));
  cr_assert_eq(fab_evq_size(q), 2000);
  (void)fab_evq_peek_time(q);
  cr_assert_eq(fab_evq_size(q), 2000, "peek does not change the size");
  for (uint64_t i = 0; i < 500; i++) fab_evq_push(q, 10 * FAB_S + i, 3000 + i, NULL, i);
  cr_assert_eq(fab_evq_size(q), 2500);
  size_t left = 0;
  while (fab_evq_pop(q, &ev)) left++;
  cr_assert_eq(left, 2500);
  cr_assert_eq(fab_evq_size(q), 0);
  fab_evq_free(q);
}

/* ---- ties -------------------------------------------------------------- */

Test(evq, equal_times_pop_fifo) {
  /* With an increasing counter as the tie, equal times pop in push order. A
  ** LIFO (or arbitrary heap) tie-break fails at the first pop: arg 0 is the
  ** oldest. Times: in the first bucket, mid-wheel and beyond the horizon. */
  const fab_time_t times[] = {0, 5, 3 * FAB_US, 1 * FAB_MS, 2 * FAB_S};
  for (size_t k = 0; k < sizeof times / sizeof *times; k++) {
    FabEvq *q = fab_evq_new(8);
    for (uint64_t i = 0; i < 1000; i++) fab_evq_push(q, times[k], i, NULL, i);
    for (uint64_t i = 0; i < 1000; i++) pop_expect(q, times[k], i);
    fab_evq_free(q);
  }
}

Test(evq, reported_tie_follows_push_order) {
  /* The queue reports the tie each event was pushed with; with a counter
  ** as the tie it grows with push order among equal times. */
  FabEvq *q = fab_evq_new(8);
  FabEvent ev;
  uint64_t last = 0;
  for (uint64_t i = 0; i < 100; i++) fab_evq_push(q, 42, 1000 + i, NULL, i);
  for (uint64_t i = 0; i < 100; i++) {
    cr_assert(fab_evq_pop(q, &ev));
    cr_assert_eq(ev.tie, 1000 + ev.arg, "pop %llu: tie %llu reported for the event pushed with %llu",
                 (unsigned long long)i, (unsigned long long)ev.tie, (unsigned long long)(1000 + ev.arg));
    if (i) cr_assert_gt(ev.tie, last, "tie must grow with push order among equal times");
    last = ev.tie;
  }
  fab_evq_free(q);
}

Test(evq, ties_across_far_heap_and_wheel) {
  /* T is beyond the horizon when A and B are pushed (far heap). Popping the
  ** 1 us event does not yet bring T within reach; after the 100 us event the
  ** far heap is still separate. Once the wheel reaches T, C is pushed at T
  ** directly into the wheel or the active bucket: it must still pop after A
  ** and B, which were pushed earlier (with smaller ties: ties are a counter). */
  const fab_time_t T = 300 * FAB_US;
  FabEvq *q = fab_evq_new(8);
  fab_evq_push(q, T, 0, NULL, 0);      /* A */
  fab_evq_push(q, FAB_US, 1, NULL, 1);
  fab_evq_push(q, T, 2, NULL, 2);      /* B */
  fab_evq_push(q, 250 * FAB_US, 3, NULL, 3);
  pop_expect(q, FAB_US, 1);
  pop_expect(q, 250 * FAB_US, 3);   /* the wheel now covers T */
  fab_evq_push(q, T, 4, NULL, 4);      /* C: same time, pushed last */
  fab_evq_push(q, T - 1, 5, NULL, 5);  /* earlier time, pushed last: pops first */
  pop_expect(q, T - 1, 5);
  fab_evq_push(q, T, 6, NULL, 6);      /* D: into the bucket being drained */
  pop_expect(q, T, 0);
  pop_expect(q, T, 2);
  pop_expect(q, T, 4);
  pop_expect(q, T, 6);
  cr_assert_eq(fab_evq_size(q), 0);
  fab_evq_free(q);
}

/* ---- tie keys given out of push order ------------------------------------ */

/* Pop one event and check its time, tie and arg. */
static void pop_expect_tie(FabEvq *q, fab_time_t t, uint64_t tie, uint64_t arg) {
  FabEvent ev;
  cr_assert_eq(fab_evq_peek_time(q), t, "peek %llu, expected %llu", (unsigned long long)fab_evq_peek_time(q),
               (unsigned long long)t);
  cr_assert(fab_evq_pop(q, &ev), "queue empty, expected tie %llu at %llu", (unsigned long long)tie,
            (unsigned long long)t);
  cr_assert_eq(ev.time, t, "popped time %llu, expected %llu (tie %llu)", (unsigned long long)ev.time,
               (unsigned long long)t, (unsigned long long)ev.tie);
  cr_assert_eq(ev.tie, tie, "at time %llu popped tie %llu, expected %llu", (unsigned long long)t,
               (unsigned long long)ev.tie, (unsigned long long)tie);
  cr_assert_eq(ev.arg, arg, "at time %llu (tie %llu) popped arg %llu, expected %llu", (unsigned long long)t,
               (unsigned long long)tie, (unsigned long long)ev.arg, (unsigned long long)arg);
}

Test(evq, equal_times_pop_in_tie_order) {
  /* ties 5, 3, 9, 1 pushed in that order at one time pop 1, 3, 5, 9; arg is
  ** the push index. Times: the first bucket, mid-wheel, the last ps before
  ** the horizon, the horizon itself and beyond it (far heap), seconds away. */
  const fab_time_t times[] = {0,           7,       3 * FAB_US,  HORIZON - 1, HORIZON,
                              HORIZON + 1, 300 * FAB_US, 1 * FAB_MS, 2 * FAB_S,   UINT64_MAX / 2};
  const uint64_t push[] = {5, 3, 9, 1};
  const uint64_t want_tie[] = {1, 3, 5, 9}, want_arg[] = {3, 1, 0, 2};
  for (size_t k = 0; k < sizeof times / sizeof *times; k++) {
    FabEvq *q = fab_evq_new(8);
    for (uint64_t i = 0; i < 4; i++) fab_evq_push(q, times[k], push[i], NULL, i);
    for (int i = 0; i < 4; i++) pop_expect_tie(q, times[k], want_tie[i], want_arg[i]);
    cr_assert_eq(fab_evq_size(q), 0);
    fab_evq_free(q);
  }
}

Test(evq, tie_order_across_far_heap_and_wheel) {
  /* T = 300 us is beyond the horizon at first. Ties 5, 3, 9, 1 at T arrive
  ** in every structure in turn: 5 in the far heap (T out of reach), 3 in a
  ** wheel bucket's list (after the 250 us event brought T within reach, so
  ** 5 moved into the same list ahead of it), 9 likewise, and 1 into the
  ** active bucket while it is drained (after T - 1, same bucket, popped).
  ** They pop 1, 3, 5, 9 whatever the structure and the push order. */
  const fab_time_t T = 300 * FAB_US;
  cr_assert_gt(T, HORIZON);
  cr_assert_eq((T - 1) / BUCKET, T / BUCKET, "T - 1 and T share a bucket");
  FabEvq *q = fab_evq_new(8);
  fab_evq_push(q, T, 5, NULL, 0);            /* far heap */
  fab_evq_push(q, 250 * FAB_US, 100, NULL, 1);
  fab_evq_push(q, T - 1, 1000, NULL, 2);     /* earlier time, larger tie: still first */
  pop_expect_tie(q, 250 * FAB_US, 100, 1);  /* the wheel now covers T */
  fab_evq_push(q, T, 3, NULL, 3);            /* a wheel bucket, behind 5 in its list */
  fab_evq_push(q, T, 9, NULL, 4);
  pop_expect_tie(q, T - 1, 1000, 2);        /* T's bucket is now the active one */
  fab_evq_push(q, T, 1, NULL, 5);            /* into the bucket being drained */
  pop_expect_tie(q, T, 1, 5);
  fab_evq_push(q, T, 4, NULL, 6);            /* while draining: between 3 and 5 */
  pop_expect_tie(q, T, 3, 3);
  pop_expect_tie(q, T, 4, 6);
  pop_expect_tie(q, T, 5, 0);
  pop_expect_tie(q, T, 9, 4);
  cr_assert_eq(fab_evq_size(q), 0);
  fab_evq_free(q);

  /* all four pushed beyond the horizon, in two far batches split by a pop */
  q = fab_evq_new(8);
  const fab_time_t F = 2 * FAB_S;
  fab_evq_push(q, F, 5, NULL, 0);
  fab_evq_push(q, F, 3, NULL, 1);
  fab_evq_push(q, FAB_US, 0, NULL, 2);
  pop_expect_tie(q, FAB_US, 0, 2);         /* F is still far */
  fab_evq_push(q, F, 9, NULL, 3);
  fab_evq_push(q, F, 1, NULL, 4);
  pop_expect_tie(q, F, 1, 4);
  pop_expect_tie(q, F, 3, 1);
  pop_expect_tie(q, F, 5, 0);
  pop_expect_tie(q, F, 9, 3);
  fab_evq_free(q);
}

Test(evq, ties_never_reorder_different_times) {
  /* An earlier time pops first whatever the ties: a small tie never jumps
  ** ahead of an earlier event, in one bucket, across buckets, across the
  ** horizon and in the far heap. */
  const fab_time_t pairs[][2] = {
      {10, 11},                   /* same bucket, 1 ps apart */
      {BUCKET - 1, BUCKET},       /* bucket edge */
      {HORIZON - 1, HORIZON},     /* horizon edge: wheel vs far heap */
      {HORIZON, HORIZON + 1},     /* both far */
      {FAB_S, FAB_S + 1},         /* far, one bucket once reached */
      {5 * FAB_US, 2 * FAB_S},    /* wheel vs far */
  };
  for (size_t k = 0; k < sizeof pairs / sizeof *pairs; k++) {
    const fab_time_t early = pairs[k][0], late = pairs[k][1];
    FabEvq *q = fab_evq_new(8);
    fab_evq_push(q, late, 0, NULL, 0);           /* smallest tie, later time */
    fab_evq_push(q, early, UINT64_MAX, NULL, 1); /* largest tie, earlier time */
    fab_evq_push(q, late, 1, NULL, 2);
    fab_evq_push(q, early, UINT64_MAX - 1, NULL, 3);
    pop_expect_tie(q, early, UINT64_MAX - 1, 3);
    pop_expect_tie(q, early, UINT64_MAX, 1);
    pop_expect_tie(q, late, 0, 0);
    pop_expect_tie(q, late, 1, 2);
    cr_assert_eq(fab_evq_size(q), 0);
    fab_evq_free(q);
  }
}

/* Events with random times and random distinct ties, popped against a
** reference sorted by (time, tie). */
typedef struct TRef {
  fab_time_t t;
  uint64_t tie, arg;
} TRef;

static int tref_cmp(const void *x, const void *y) {
  const TRef *a = x, *b = y;
  if (a->t != b->t) return a->t < b->t ? -1 : 1;
  return a->tie < b->tie ? -1 : a->tie > b->tie;
}

static fab_time_t random_time(FabRng *r);

Test(evq, random_ties_pop_in_time_then_tie_order) {
  for (uint64_t seed = 1; seed <= 3; seed++) {
    FabRng r;
    fab_rng_init(&r, seed, FAB_STREAM(STREAM_TEST, 5));
    size_t n = 20000;
    TRef *refs = malloc(n * sizeof *refs);
    FabEvq *q = fab_evq_new(16);
    for (size_t i = 0; i < n; i++) {
      refs[i].t = random_time(&r);
      /* distinct ties, unrelated to push order: a bijection of i; a few small
      ** ones so both ends of the 64-bit range occur */
      refs[i].tie = i % 10 == 0 ? i : fab_mix64(i);
      refs[i].arg = i;
      fab_evq_push(q, refs[i].t, refs[i].tie, NULL, refs[i].arg);
    }
    qsort(refs, n, sizeof *refs, tref_cmp);
    for (size_t k = 0; k < n; k++) {
      FabEvent ev;
      cr_assert(fab_evq_pop(q, &ev));
      cr_assert_eq(ev.time, refs[k].t, "step %zu: time %llu, expected %llu", k, (unsigned long long)ev.time,
                   (unsigned long long)refs[k].t);
      cr_assert_eq(ev.tie, refs[k].tie, "step %zu (time %llu): tie %llu, expected %llu", k,
                   (unsigned long long)ev.time, (unsigned long long)ev.tie, (unsigned long long)refs[k].tie);
      cr_assert_eq(ev.arg, refs[k].arg);
    }
    cr_assert_eq(fab_evq_size(q), 0);
    fab_evq_free(q);
    free(refs);
  }
}

/* ---- the bucket being drained ------------------------------------------ */

Test(evq, push_into_active_bucket) {
  /* 0, 10 and 20 ps share bucket 0. After popping 0 (the current time),
  ** push 5 (earlier than the rest), 10 (a tie: after the old 10), 0 (exactly
  ** the current time) and 2047 (last ps of the bucket), 2048 (next bucket). */
  FabEvq *q = fab_evq_new(8);
  fab_evq_push(q, 20, 0, NULL, 0);
  fab_evq_push(q, 10, 1, NULL, 1);
  fab_evq_push(q, 0, 2, NULL, 2);
  pop_expect(q, 0, 2);
  fab_evq_push(q, 5, 3, NULL, 3);
  fab_evq_push(q, 10, 4, NULL, 4);
  fab_evq_push(q, 0, 5, NULL, 5);
  fab_evq_push(q, 2048, 6, NULL, 6);
  fab_evq_push(q, 2047, 7, NULL, 7);
  pop_expect(q, 0, 5);
  pop_expect(q, 5, 3);
  pop_expect(q, 10, 1);
  pop_expect(q, 10, 4);
  pop_expect(q, 20, 0);
  pop_expect(q, 2047, 7);
  pop_expect(q, 2048, 6);
  cr_assert_eq(fab_evq_size(q), 0);
  fab_evq_free(q);
}

Test(evq, push_into_active_bucket_far_away) {
  /* The same in a bucket reached from the far heap (t = 1 s). */
  const fab_time_t T = FAB_S;
  FabEvq *q = fab_evq_new(8);
  fab_evq_push(q, T + 100, 0, NULL, 0);
  fab_evq_push(q, T, 1, NULL, 1);
  pop_expect(q, T, 1);
  fab_evq_push(q, T, 2, NULL, 2);       /* exactly now */
  fab_evq_push(q, T + 50, 3, NULL, 3);  /* same bucket, before the pending one */
  fab_evq_push(q, T + 100, 4, NULL, 4); /* tie with the pending one */
  fab_evq_push(q, T + HORIZON, 5, NULL, 5);
  fab_evq_push(q, T + HORIZON - 1, 6, NULL, 6);
  pop_expect(q, T, 2);
  pop_expect(q, T + 50, 3);
  pop_expect(q, T + 100, 0);
  pop_expect(q, T + 100, 4);
  pop_expect(q, T + HORIZON - 1, 6);
  pop_expect(q, T + HORIZON, 5);
  fab_evq_free(q);
}

/* ---- the fast path: the active bucket's sorted run ---------------------- */

Test(evq, in_order_bucket_pops_from_the_run) {
  /* 1000 events at one time, pushed in tie order (as 1000 NICs starting
  ** together): all pop from the run, none through the heap. */
  FabEvq *q = fab_evq_new(8);
  for (uint64_t i = 0; i < 1000; i++) fab_evq_push(q, 5 * FAB_US, i, NULL, i);
  for (uint64_t i = 0; i < 1000; i++) pop_expect(q, 5 * FAB_US, i);
  cr_assert_eq(fab_evq_fast_pops(q), 1000);
  fab_evq_free(q);
}

Test(evq, out_of_order_bucket_is_merged_into_the_run) {
  /* The same bucket pushed in reverse tie order, and another as three
  ** interleaved ascending stretches (ties 0,3,6,.. then 1,4,7,.. then
  ** 2,5,8,..): both are merged into order when they become active and pop
  ** from the run. */
  FabEvq *q = fab_evq_new(8);
  for (uint64_t i = 1000; i-- > 0;) fab_evq_push(q, 5 * FAB_US, i, NULL, i);
  for (uint64_t i = 0; i < 1000; i++) pop_expect_tie(q, 5 * FAB_US, i, i);
  cr_assert_eq(fab_evq_fast_pops(q), 1000);
  for (uint64_t k = 0; k < 3; k++)
    for (uint64_t i = k; i < 300; i += 3) fab_evq_push(q, 9 * FAB_US + i % 7, i, NULL, i);
  Ref r[300];
  for (uint64_t i = 0; i < 300; i++) r[i] = (Ref){9 * FAB_US + i % 7, i};
  qsort(r, 300, sizeof *r, ref_cmp);
  for (size_t i = 0; i < 300; i++) pop_expect_tie(q, r[i].t, r[i].i, r[i].i);
  cr_assert_eq(fab_evq_fast_pops(q), 1300);
  fab_evq_free(q);
}

Test(evq, bucket_lists_across_block_boundaries) {
  /* A wheel bucket keeps its events in blocks of four. Buckets of 1 to 13
  ** events (every way a list can end inside or at the end of a block), filled
  ** in round-robin so that their blocks interleave in memory, each with its
  ** events' times inside the bucket out of push order (a descent in every
  ** block): every event pops in (time, tie) order with its own target and
  ** arg. Then again, on blocks given back by the first round. */
  static int tg[13];
  FabEvq *q = fab_evq_new(8);
  for (int round = 0; round < 2; round++) {
    fab_time_t base = (fab_time_t)(round + 1) * 10 * FAB_US;
    Ref r[91];
    size_t n = 0;
    for (uint64_t k = 0; k < 13; k++)     /* event k of each bucket */
      for (uint64_t b = 0; b < 13; b++) { /* bucket b holds b + 1 events */
        if (k > b) continue;
        fab_time_t t = base + b * BUCKET + (k % 2 ? 100 : 900) - k; /* inside bucket b, descending by pairs */
        uint64_t id = b * 100 + k;
        fab_evq_push(q, t, id, &tg[b], id);
        r[n++] = (Ref){t, id};
      }
    cr_assert_eq(n, 91);
    qsort(r, n, sizeof *r, ref_cmp);
    for (size_t i = 0; i < n; i++) {
      FabEvent ev;
      cr_assert(fab_evq_pop(q, &ev));
      cr_assert_eq(ev.time, r[i].t, "round %d, pop %zu: time %llu, expected %llu", round, i,
                   (unsigned long long)ev.time, (unsigned long long)r[i].t);
      cr_assert_eq(ev.tie, r[i].i);
      cr_assert_eq(ev.arg, r[i].i);
      cr_assert_eq(ev.target, &tg[r[i].i / 100], "round %d: event %llu came with another's target", round,
                   (unsigned long long)r[i].i);
    }
    cr_assert_eq(fab_evq_size(q), 0);
  }
  fab_evq_free(q);
}

/* Push n events at times 1000 + 10 i (ties i) into the active bucket 0: one
** ascending run. */
static void long_run(FabEvq *q, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) fab_evq_push(q, 1000 + 10 * i, i, NULL, i);
}

Test(evq, run_and_heap_merge_in_the_active_bucket) {
  /* A run of 40 (longer than the run's in-place insertion limit): a push
  ** below its last key goes to the heap, one above it extends the run; pops
  ** take the smaller of the run's front and the heap's top. */
  FabEvq *q = fab_evq_new(8);
  long_run(q, 40);
  pop_expect_tie(q, 1000, 0, 0);
  fab_evq_push(q, 1015, 100, NULL, 100); /* between 1010 and 1020: heap */
  fab_evq_push(q, 1020, 1, NULL, 99);   /* a tie before the run's 1020 (tie 2): heap */
  fab_evq_push(q, 2000, 101, NULL, 101); /* past the run's end: run */
  pop_expect_tie(q, 1010, 1, 1);
  pop_expect_tie(q, 1015, 100, 100);
  pop_expect_tie(q, 1020, 1, 99);
  for (uint64_t i = 2; i < 40; i++) pop_expect_tie(q, 1000 + 10 * i, i, i);
  pop_expect_tie(q, 2000, 101, 101);
  cr_assert_eq(fab_evq_fast_pops(q), 41, "run pops %llu", (unsigned long long)fab_evq_fast_pops(q));
  cr_assert_eq(fab_evq_size(q), 0);
  fab_evq_free(q);
}

Test(evq, short_run_takes_out_of_order_pushes_in_place) {
  /* A run of 3: pushes below its end are inserted in place, not heaped. */
  FabEvq *q = fab_evq_new(8);
  long_run(q, 3);
  fab_evq_push(q, 1005, 10, NULL, 10);
  fab_evq_push(q, 1000, 11, NULL, 11); /* equal time, later tie */
  pop_expect_tie(q, 1000, 0, 0);
  pop_expect_tie(q, 1000, 11, 11);
  pop_expect_tie(q, 1005, 10, 10);
  pop_expect_tie(q, 1010, 1, 1);
  pop_expect_tie(q, 1020, 2, 2);
  cr_assert_eq(fab_evq_fast_pops(q), 5);
  fab_evq_free(q);
}

Test(evq, run_restarts_after_it_empties) {
  /* A drained run starts again from the front of its array: later pushes
  ** into the active bucket form a new run (the heap is empty then: it only
  ** ever holds keys below the run's last, which popped after them). */
  FabEvq *q = fab_evq_new(8);
  long_run(q, 20);
  for (uint64_t i = 0; i < 20; i++) pop_expect_tie(q, 1000 + 10 * i, i, i);
  fab_evq_push(q, 1200, 51, NULL, 51);
  fab_evq_push(q, 1195, 52, NULL, 52);
  pop_expect_tie(q, 1195, 52, 52);
  pop_expect_tie(q, 1200, 51, 51);
  cr_assert_eq(fab_evq_fast_pops(q), 22, "run pops %llu", (unsigned long long)fab_evq_fast_pops(q));
  fab_evq_free(q);
}

/* ---- the horizon ------------------------------------------------------- */

Test(evq, wheel_and_horizon_boundaries) {
  /* Times straddling the horizon and bucket edges, pushed in a shuffled order. */
  Ref r[] = {
    {HORIZON + 1, 0}, {HORIZON - 1, 0}, {HORIZON, 0},       {2 * HORIZON, 0}, {BUCKET, 0},
    {BUCKET - 1, 0},  {0, 0},           {2 * HORIZON - 1, 0}, {HORIZON, 0},   {3 * HORIZON + BUCKET, 0},
    {1, 0},           {2 * HORIZON + 1, 0}, {HORIZON - BUCKET, 0}, {BUCKET, 0}, {HORIZON + BUCKET, 0},
  };
  push_all_pop_sorted(r, sizeof r / sizeof *r);
}

Test(evq, far_future_times) {
  /* ms, seconds, hours and near UINT64_MAX/2 and near UINT64_MAX, with ties */
  const fab_time_t half = UINT64_MAX / 2;
  Ref r[] = {
    {half, 0},        {3 * FAB_MS, 0},  {half - 1, 0},  {5 * FAB_S, 0},    {half + 1, 0},
    {1 * FAB_MS, 0},  {half, 0},        {7, 0},         {3600 * FAB_S, 0}, {5 * FAB_S, 0},
    {UINT64_MAX - 1, 0}, {half - HORIZON, 0}, {half + HORIZON, 0}, {UINT64_MAX - 2, 0}, {3 * FAB_MS, 0},
    {half, 0},
  };
  push_all_pop_sorted(r, sizeof r / sizeof *r);
}

Test(evq, empty_then_refill_much_later) {
  /* The queue drains, then is refilled several horizons later, more than
  ** once; and each time with events before and after the next horizon. */
  FabEvq *q = fab_evq_new(8);
  fab_time_t now = 0;
  uint64_t id = 0;
  for (int round = 0; round < 6; round++) {
    fab_time_t base = now + (fab_time_t)(round + 2) * 3 * HORIZON + 12345;
    fab_evq_push(q, base + HORIZON + 7, id + 0, NULL, id + 0);
    fab_evq_push(q, base, id + 1, NULL, id + 1);
    fab_evq_push(q, base + 3, id + 2, NULL, id + 2);
    fab_evq_push(q, base, id + 3, NULL, id + 3);
    fab_evq_push(q, base + 10 * HORIZON, id + 4, NULL, id + 4);
    pop_expect(q, base, id + 1);
    pop_expect(q, base, id + 3);
    pop_expect(q, base + 3, id + 2);
    pop_expect(q, base + HORIZON + 7, id + 0);
    pop_expect(q, base + 10 * HORIZON, id + 4);
    cr_assert_eq(fab_evq_size(q), 0);
    cr_assert_eq(fab_evq_peek_time(q), FAB_TIME_MAX);
    now = base + 10 * HORIZON;
    id += 5;
  }
  /* finally a jump to hours later */
  fab_evq_push(q, now + 7200 * FAB_S, 99, NULL, 99);
  fab_evq_push(q, now, 98, NULL, 98); /* exactly the last popped time */
  pop_expect(q, now, 98);
  pop_expect(q, now + 7200 * FAB_S, 99);
  fab_evq_free(q);
}

/* ---- random, against a sorted reference --------------------------------- */

/* A time from a mix: same bucket, within the wheel, beyond it, seconds away,
** around UINT64_MAX/2; coarse values so there are many ties. */
static fab_time_t random_time(FabRng *r) {
  switch (fab_rng_below(r, 6)) {
  case 0: return fab_rng_below(r, 4096);
  case 1: return fab_rng_below(r, 2 * HORIZON);
  case 2: return fab_rng_below(r, 1000) * FAB_US;
  case 3: return fab_rng_below(r, 20) * FAB_S + fab_rng_below(r, 3);
  case 4: return UINT64_MAX / 2 - HORIZON + fab_rng_below(r, 2 * HORIZON);
  default: return fab_rng_below(r, 50) * 100 * FAB_NS;
  }
}

Test(evq, random_pushes_sorted) {
  for (uint64_t seed = 1; seed <= 5; seed++) {
    FabRng r;
    fab_rng_init(&r, seed, FAB_STREAM(STREAM_TEST, 1));
    size_t n = 2000;
    Ref *refs = malloc(n * sizeof *refs);
    for (size_t i = 0; i < n; i++) refs[i].t = random_time(&r);
    push_all_pop_sorted(refs, n);
    free(refs);
  }
}

Test(evq, random_1e5_events) {
  FabRng r;
  fab_rng_init(&r, 2024, FAB_STREAM(STREAM_TEST, 2));
  size_t n = 100000;
  Ref *refs = malloc(n * sizeof *refs);
  for (size_t i = 0; i < n; i++) refs[i].t = random_time(&r);
  push_all_pop_sorted(refs, n);
  free(refs);
}

/* ---- hold pattern: interleaved pushes and pops -------------------------- */

/* A reference priority queue: an array sorted in decreasing (time, index)
** order, so the minimum is at the end. O(n) insert, fine for ~1000 events. */
typedef struct RefQ {
  Ref *a;
  size_t n, cap;
} RefQ;

static void refq_push(RefQ *q, fab_time_t t, uint64_t i) {
  if (q->n == q->cap) {
    q->cap = q->cap ? 2 * q->cap : 256;
    q->a = realloc(q->a, q->cap * sizeof *q->a);
  }
  Ref e = {t, i};
  size_t lo = 0, hi = q->n; /* first position whose element is smaller than e */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (ref_cmp(&q->a[mid], &e) > 0) lo = mid + 1;
    else hi = mid;
  }
  memmove(q->a + lo + 1, q->a + lo, (q->n - lo) * sizeof *q->a);
  q->a[lo] = e;
  q->n++;
}

static Ref refq_pop(RefQ *q) { return q->a[--q->n]; }

/* The tie (and arg) of the id-th push: the counter itself, or with
** `scramble` a bijection of it (fab_mix64), so ties are distinct but
** unrelated to push order. */
static uint64_t hold_tie(uint64_t id, bool scramble) { return scramble ? fab_mix64(id) : id; }

static fab_time_t hold_now; /* the time just popped, for increments that aim at absolute times */

/* Fill with `pending` events, then `ops` holds: pop the earliest, push a new
** event at popped time + an increment from inc(). Compare every pop and peek
** with the reference (ordered by (time, tie)), then drain. */
static void hold_with(uint64_t seed, size_t pending, size_t ops, fab_time_t (*inc)(FabRng *), bool scramble) {
  FabRng r;
  fab_rng_init(&r, seed, FAB_STREAM(STREAM_TEST, 3));
  FabEvq *q = fab_evq_new(pending);
  RefQ ref = {0};
  uint64_t id = 0;
  for (size_t i = 0; i < pending; i++, id++) {
    hold_now = 0;
    fab_time_t t = inc(&r);
    fab_evq_push(q, t, hold_tie(id, scramble), NULL, hold_tie(id, scramble));
    refq_push(&ref, t, hold_tie(id, scramble));
  }
  fab_time_t last = 0;
  for (size_t k = 0; k < ops + pending; k++) {
    Ref want = refq_pop(&ref);
    FabEvent ev;
    cr_assert_eq(fab_evq_peek_time(q), want.t, "op %zu: peek %llu, expected %llu", k,
                 (unsigned long long)fab_evq_peek_time(q), (unsigned long long)want.t);
    cr_assert(fab_evq_pop(q, &ev));
    cr_assert_eq(ev.time, want.t, "op %zu: time %llu, expected %llu", k, (unsigned long long)ev.time,
                 (unsigned long long)want.t);
    cr_assert_eq(ev.arg, want.i, "op %zu: arg %llu, expected %llu (time %llu)", k, (unsigned long long)ev.arg,
                 (unsigned long long)want.i, (unsigned long long)ev.time);
    cr_assert_eq(ev.tie, want.i, "op %zu: tie %llu, expected %llu", k, (unsigned long long)ev.tie,
                 (unsigned long long)want.i);
    cr_assert_geq(ev.time, last, "time went back");
    last = ev.time;
    if (k < ops) {
      /* sometimes two pushes or none, so the size wanders */
      int npush = k % 7 == 3 ? 2 : k % 7 == 5 ? 0 : 1;
      for (int j = 0; j < npush; j++, id++) {
        hold_now = ev.time;
        fab_time_t t = ev.time + inc(&r);
        fab_evq_push(q, t, hold_tie(id, scramble), NULL, hold_tie(id, scramble));
        refq_push(&ref, t, hold_tie(id, scramble));
      }
    }
    cr_assert_eq(fab_evq_size(q), ref.n);
    if (ref.n == 0) break;
  }
  cr_assert_eq(fab_evq_size(q), ref.n);
  while (ref.n) {
    Ref want = refq_pop(&ref);
    pop_expect(q, want.t, want.i);
  }
  FabEvent ev;
  cr_assert_not(fab_evq_pop(q, &ev));
  free(ref.a);
  fab_evq_free(q);
}

static void hold(uint64_t seed, size_t pending, size_t ops, fab_time_t (*inc)(FabRng *)) {
  hold_with(seed, pending, ops, inc, false);
}

/* 0 (exactly now), within the bucket, within the wheel */
static fab_time_t inc_small(FabRng *r) {
  switch (fab_rng_below(r, 4)) {
  case 0: return 0;
  case 1: return fab_rng_below(r, BUCKET);
  default: return fab_rng_below(r, 3 * FAB_US);
  }
}

/* mostly small, some beyond the horizon (timeouts: 200 us .. 5 ms) */
static fab_time_t inc_mixed(FabRng *r) {
  switch (fab_rng_below(r, 8)) {
  case 0: return 0;
  case 1: return 1;
  case 2: return HORIZON;
  case 3: return 200 * FAB_US + fab_rng_below(r, 5 * FAB_MS);
  case 4: return HORIZON - 1 + fab_rng_below(r, 3);
  default: return fab_rng_below(r, 10 * FAB_US);
  }
}

/* large only: every push is beyond the horizon or at its edge */
static fab_time_t inc_large(FabRng *r) {
  switch (fab_rng_below(r, 3)) {
  case 0: return HORIZON + fab_rng_below(r, 4) * HORIZON;
  case 1: return fab_rng_below(r, 100) * FAB_MS;
  default: return FAB_S;
  }
}

/* nearly all ties: {0, 0, 0, 1 ns} */
static fab_time_t inc_ties(FabRng *r) { return fab_rng_below(r, 4) == 3 ? FAB_NS : 0; }

/* Aimed at the coarse wheel beyond the horizon (one bucket per horizon of
** 2^16 buckets, 2^12 of them) and its edges: the next horizon's first
** bucket exactly (where the wheel's own bucket of that time may already
** hold events), a picosecond before or after it, a bucket later, several
** horizons on, the last coarse bucket in reach and the first beyond it (the
** far heap); and small steps, so that the wheel's buckets fill too. */
static fab_time_t inc_coarse(FabRng *r) {
  fab_time_t edge = HORIZON - hold_now % HORIZON; /* to the next horizon's start */
  switch (fab_rng_below(r, 10)) {
  case 0: return edge;
  case 1: return edge - 1;
  case 2: return edge + 1;
  case 3: return edge + BUCKET;
  case 4: return edge + fab_rng_below(r, 5) * HORIZON;
  case 5: return edge + (4094 + fab_rng_below(r, 4)) * HORIZON - fab_rng_below(r, 2);
  case 6: return fab_rng_below(r, 3 * HORIZON);
  default: return fab_rng_below(r, 4) * BUCKET / 2;
  }
}

Test(evq, hold_small_increments) { hold(1, 1000, 50000, inc_small); }
Test(evq, hold_coarse_wheel_edges) { hold(8, 500, 40000, inc_coarse); }
Test(evq, hold_coarse_wheel_edges_scrambled) { hold_with(9, 200, 30000, inc_coarse, true); }
Test(evq, hold_mixed_increments) { hold(2, 1000, 50000, inc_mixed); }
Test(evq, hold_large_increments) { hold(3, 300, 20000, inc_large); }
Test(evq, hold_ties) { hold(4, 500, 30000, inc_ties); }
Test(evq, hold_tiny_queue) { hold(5, 1, 20000, inc_mixed); }
/* the same with ties unrelated to push order: (time, tie) order throughout */
Test(evq, hold_scrambled_ties) { hold_with(6, 500, 30000, inc_ties, true); }
Test(evq, hold_scrambled_ties_mixed) { hold_with(7, 1000, 50000, inc_mixed, true); }


/* ---- 64-bit tie keys --------------------------------------------------- */

/* The queue once numbered events itself with a 32-bit counter and renumbered
** pending events before it wrapped; its tests set the counter just below
** 2^32 through a private copy of evq.c. The tie is now the caller's 64-bit
** key, so the same situations are reached through the public API: ties
** that cross 2^32 (and reach UINT64_MAX) while events wait in all three
** places -- the active bucket, wheel buckets and the far heap. A queue that
** kept only 32 bits of the tie would pop them out of order. */

Test(evq_ties64, ties_across_2_pow_32_keep_fifo_everywhere) {
  FabEvq *q = fab_evq_new(8);
  const fab_time_t A = 100, W = 50 * FAB_US, F = 2 * FAB_MS; /* active, wheel, far */
  uint64_t tie = 0;
  /* make bucket 0 active with two events pending in it */
  fab_evq_push(q, A, tie++, NULL, 0);
  fab_evq_push(q, 0, tie++, NULL, 1);
  pop_expect(q, 0, 1);
  fab_evq_push(q, A, tie++, NULL, 2);
  fab_evq_push(q, W, tie++, NULL, 3);
  fab_evq_push(q, F, tie++, NULL, 4);
  tie = UINT32_MAX - 3; /* as if 2^32 - 4 events had been pushed */
  fab_evq_push(q, A, tie++, NULL, 5);
  fab_evq_push(q, W, tie++, NULL, 6);
  fab_evq_push(q, F, tie++, NULL, 7); /* tie UINT32_MAX - 1 */
  cr_assert_eq(tie, UINT32_MAX);
  fab_evq_push(q, W, tie++, NULL, 8); /* tie UINT32_MAX */
  cr_assert_eq(tie, (uint64_t)1 << 32);
  fab_evq_push(q, A, tie++, NULL, 9);  /* 2^32: would be 0 in 32 bits */
  fab_evq_push(q, F, tie++, NULL, 10); /* 2^32 + 1 */
  fab_evq_push(q, 0, tie++, NULL, 11); /* before everything */
  cr_assert_eq(fab_evq_size(q), 11);
  pop_expect(q, 0, 11);
  pop_expect(q, A, 0);
  pop_expect(q, A, 2);
  pop_expect(q, A, 5);
  pop_expect(q, A, 9);
  pop_expect(q, W, 3);
  pop_expect(q, W, 6);
  pop_expect(q, W, 8);
  pop_expect(q, F, 4);
  pop_expect(q, F, 7);
  pop_expect(q, F, 10);
  cr_assert_eq(fab_evq_size(q), 0);
  fab_evq_free(q);
}

Test(evq_ties64, reported_tie_is_the_64_bit_key) {
  /* Keys around 2^32 and up to UINT64_MAX come back exactly and order the
  ** events: far (3 ms), active (5 ps), wheel (5 us). */
  FabEvq *q = fab_evq_new(8);
  const uint64_t M = UINT32_MAX;
  fab_evq_push(q, 3 * FAB_MS, M - 4, NULL, 0);         /* far */
  fab_evq_push(q, 5, M - 3, NULL, 1);                  /* active */
  fab_evq_push(q, 5 * FAB_US, M - 2, NULL, 2);         /* wheel */
  fab_evq_push(q, 5, M - 1, NULL, 3);
  fab_evq_push(q, 5, (uint64_t)1 << 32, NULL, 4);
  fab_evq_push(q, 5, UINT64_MAX, NULL, 5);
  fab_evq_push(q, 5, (uint64_t)1 << 40, NULL, 6);
  fab_evq_push(q, 5 * FAB_US, 3, NULL, 7);             /* small tie, later time than the 5 ps ones */
  FabEvent ev;
  const uint64_t want_arg[] = {1, 3, 4, 6, 5, 7, 2, 0};
  const uint64_t want_tie[] = {M - 3, M - 1, (uint64_t)1 << 32, (uint64_t)1 << 40, UINT64_MAX, 3, M - 2, M - 4};
  for (int i = 0; i < 8; i++) {
    cr_assert(fab_evq_pop(q, &ev));
    cr_assert_eq(ev.arg, want_arg[i], "pop %d: arg %llu, expected %llu", i, (unsigned long long)ev.arg,
                 (unsigned long long)want_arg[i]);
    cr_assert_eq(ev.tie, want_tie[i], "pop %d: tie %llu, expected %llu", i, (unsigned long long)ev.tie,
                 (unsigned long long)want_tie[i]);
  }
  cr_assert_not(fab_evq_pop(q, &ev));
  fab_evq_free(q);
}

Test(evq_ties64, counter_jumps_in_a_hold) {
  /* A hold pattern whose tie counter jumps every 100 operations to just
  ** below the next multiple of 2^32, and near the end to just below
  ** UINT64_MAX, with ~300 events pending in all structures; the counter
  ** only grows, so equal times pop in push order: the order must match a
  ** reference throughout. */
  FabRng r;
  fab_rng_init(&r, 77, FAB_STREAM(STREAM_TEST, 4));
  FabEvq *q = fab_evq_new(8);
  RefQ ref = {0};
  uint64_t id = 0;
  for (; id < 300; id++) {
    fab_time_t t = inc_mixed(&r);
    fab_evq_push(q, t, id, NULL, id);
    refq_push(&ref, t, id);
  }
  for (int k = 0; k < 20000; k++) {
    if (k % 100 == 0 && k < 19000) {
      uint64_t next = ((uint64_t)(k / 100 + 1) << 32) - fab_rng_below(&r, 3);
      cr_assert_gt(next, id);
      id = next;
    }
    if (k == 19000) id = UINT64_MAX - 5000;
    Ref want = refq_pop(&ref);
    pop_expect(q, want.t, want.i);
    fab_time_t t = want.t + inc_mixed(&r);
    fab_evq_push(q, t, id, NULL, id);
    refq_push(&ref, t, id++);
  }
  cr_assert_gt(id, UINT64_MAX - 5000, "the counter reached the top of the range");
  while (ref.n) {
    Ref want = refq_pop(&ref);
    pop_expect(q, want.t, want.i);
  }
  cr_assert_eq(fab_evq_size(q), 0);
  free(ref.a);
  fab_evq_free(q);
}

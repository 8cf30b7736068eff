/*
** Event queue (sim/evq.h): events pop in (time, push order), whichever of
** its structures holds them -- the active bucket (a heap), a wheel bucket
** (a list, 2^16 buckets of 2048 ps: a 134.2 us horizon) or the far heap
** beyond the horizon -- and whenever they move between them.
**
** Most cases compare the queue against a reference: the same events sorted
** by (time, push index). Every event carries its push index in `arg`, so the
** FIFO rule is checked without relying on the `seq` the queue reports.
*/
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "sim/evq.h"
#include "sim/rng.h"

#define BUCKET ((fab_time_t)2048)            /* ps, bucket width */
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

/* Push every ref (in array order: push index = position), then pop them all
** and compare with the sorted copy; peek and size are checked at each step. */
static void push_all_pop_sorted(Ref *refs, size_t n) {
  FabEvq *q = fab_evq_new(16);
  static int dummy;
  for (size_t i = 0; i < n; i++) {
    refs[i].i = i;
    fab_evq_push(q, refs[i].t, &dummy, i);
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
  fab_evq_push(q, 12345, &target, 0xdeadbeefcafeULL);
  cr_assert_eq(fab_evq_size(q), 1);
  cr_assert_eq(fab_evq_peek_time(q), 12345);
  cr_assert_eq(fab_evq_size(q), 1, "peek does not remove");
  cr_assert(fab_evq_pop(q, &ev));
  cr_assert_eq(ev.time, 12345);
  cr_assert_eq(ev.target, &target);
  cr_assert_eq(ev.arg, 0xdeadbeefcafeULL);
  cr_assert_eq(fab_evq_size(q), 0);
  cr_assert_not(fab_evq_pop(q, &ev));
  cr_assert_eq(fab_evq_peek_time(q), FAB_TIME_MAX);
  fab_evq_free(q);
}

Test(evq, small_hand_order) {
  /* pushed 30, 10, 20, 10, 0: pops 0, 10 (pushed 2nd), 10 (4th), 20, 30 */
  FabEvq *q = fab_evq_new(4);
  const fab_time_t t[] = {30, 10, 20, 10, 0};
  for (uint64_t i = 0; i < 5; i++) fab_evq_push(q, t[i], NULL, i);
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
  for (uint64_t i = 0; i < 3000; i++) fab_evq_push(q, (i * 7919) % 5000 * FAB_US, NULL, i);
  cr_assert_eq(fab_evq_size(q), 3000);
  for (int i = 0; i < 1000; i++) cr_assert(fab_evq_pop(q, &ev));
  cr_assert_eq(fab_evq_size(q), 2000);
  (void)fab_evq_peek_time(q);
  cr_assert_eq(fab_evq_size(q), 2000, "peek does not change the size");
  for (uint64_t i = 0; i < 500; i++) fab_evq_push(q, 10 * FAB_S + i, NULL, i);
  cr_assert_eq(fab_evq_size(q), 2500);
  size_t left = 0;
  while (fab_evq_pop(q, &ev)) left++;
  cr_assert_eq(left, 2500);
  cr_assert_eq(fab_evq_size(q), 0);
  fab_evq_free(q);
}

/* ---- ties -------------------------------------------------------------- */

Test(evq, equal_times_pop_fifo) {
  /* A LIFO (or arbitrary heap) tie-break fails at the first pop: arg 0 is
  ** the oldest. Times: in the first bucket, mid-wheel and beyond the horizon. */
  const fab_time_t times[] = {0, 5, 3 * FAB_US, 1 * FAB_MS, 2 * FAB_S};
  for (size_t k = 0; k < sizeof times / sizeof *times; k++) {
    FabEvq *q = fab_evq_new(8);
    for (uint64_t i = 0; i < 1000; i++) fab_evq_push(q, times[k], NULL, i);
    for (uint64_t i = 0; i < 1000; i++) pop_expect(q, times[k], i);
    fab_evq_free(q);
  }
}

Test(evq, reported_seq_follows_push_order) {
  FabEvq *q = fab_evq_new(8);
  FabEvent ev;
  uint64_t last = 0;
  for (uint64_t i = 0; i < 100; i++) fab_evq_push(q, 42, NULL, i);
  for (uint64_t i = 0; i < 100; i++) {
    cr_assert(fab_evq_pop(q, &ev));
    if (i) cr_assert_gt(ev.seq, last, "seq must grow with push order among equal times");
    last = ev.seq;
  }
  fab_evq_free(q);
}

Test(evq, ties_across_far_heap_and_wheel) {
  /* T is beyond the horizon when A and B are pushed (far heap). Popping the
  ** 1 us event does not yet bring T within reach; after the 100 us event the
  ** far heap is still separate. Once the wheel reaches T, C is pushed at T
  ** directly into the wheel or the active bucket: it must still pop after A
  ** and B, which were pushed earlier. */
  const fab_time_t T = 300 * FAB_US;
  FabEvq *q = fab_evq_new(8);
  fab_evq_push(q, T, NULL, 0);      /* A */
  fab_evq_push(q, FAB_US, NULL, 1);
  fab_evq_push(q, T, NULL, 2);      /* B */
  fab_evq_push(q, 250 * FAB_US, NULL, 3);
  pop_expect(q, FAB_US, 1);
  pop_expect(q, 250 * FAB_US, 3);   /* the wheel now covers T */
  fab_evq_push(q, T, NULL, 4);      /* C: same time, pushed last */
  fab_evq_push(q, T - 1, NULL, 5);  /* earlier time, pushed last: pops first */
  pop_expect(q, T - 1, 5);
  fab_evq_push(q, T, NULL, 6);      /* D: into the bucket being drained */
  pop_expect(q, T, 0);
  pop_expect(q, T, 2);
  pop_expect(q, T, 4);
  pop_expect(q, T, 6);
  cr_assert_eq(fab_evq_size(q), 0);
  fab_evq_free(q);
}

/* ---- the bucket being drained ------------------------------------------ */

Test(evq, push_into_active_bucket) {
  /* 0, 10 and 20 ps share bucket 0. After popping 0 (the current time),
  ** push 5 (earlier than the rest), 10 (a tie: after the old 10), 0 (exactly
  ** the current time) and 2047 (last ps of the bucket), 2048 (next bucket). */
  FabEvq *q = fab_evq_new(8);
  fab_evq_push(q, 20, NULL, 0);
  fab_evq_push(q, 10, NULL, 1);
  fab_evq_push(q, 0, NULL, 2);
  pop_expect(q, 0, 2);
  fab_evq_push(q, 5, NULL, 3);
  fab_evq_push(q, 10, NULL, 4);
  fab_evq_push(q, 0, NULL, 5);
  fab_evq_push(q, 2048, NULL, 6);
  fab_evq_push(q, 2047, NULL, 7);
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
  fab_evq_push(q, T + 100, NULL, 0);
  fab_evq_push(q, T, NULL, 1);
  pop_expect(q, T, 1);
  fab_evq_push(q, T, NULL, 2);       /* exactly now */
  fab_evq_push(q, T + 50, NULL, 3);  /* same bucket, before the pending one */
  fab_evq_push(q, T + 100, NULL, 4); /* tie with the pending one */
  fab_evq_push(q, T + HORIZON, NULL, 5);
  fab_evq_push(q, T + HORIZON - 1, NULL, 6);
  pop_expect(q, T, 2);
  pop_expect(q, T + 50, 3);
  pop_expect(q, T + 100, 0);
  pop_expect(q, T + 100, 4);
  pop_expect(q, T + HORIZON - 1, 6);
  pop_expect(q, T + HORIZON, 5);
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
    fab_evq_push(q, base + HORIZON + 7, NULL, id + 0);
    fab_evq_push(q, base, NULL, id + 1);
    fab_evq_push(q, base + 3, NULL, id + 2);
    fab_evq_push(q, base, NULL, id + 3);
    fab_evq_push(q, base + 10 * HORIZON, NULL, id + 4);
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
  fab_evq_push(q, now + 7200 * FAB_S, NULL, 99);
  fab_evq_push(q, now, NULL, 98); /* exactly the last popped time */
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
    fab_rng_init(&r, seed, FAB_STREAM(FAB_STREAM_TEST, 1));
    size_t n = 2000;
    Ref *refs = malloc(n * sizeof *refs);
    for (size_t i = 0; i < n; i++) refs[i].t = random_time(&r);
    push_all_pop_sorted(refs, n);
    free(refs);
  }
}

Test(evq, random_1e5_events) {
  FabRng r;
  fab_rng_init(&r, 2024, FAB_STREAM(FAB_STREAM_TEST, 2));
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

/* Fill with `pending` events, then `ops` holds: pop the earliest, push a new
** event at popped time + an increment from inc(). Compare every pop and peek
** with the reference, then drain. */
static void hold(uint64_t seed, size_t pending, size_t ops, fab_time_t (*inc)(FabRng *)) {
  FabRng r;
  fab_rng_init(&r, seed, FAB_STREAM(FAB_STREAM_TEST, 3));
  FabEvq *q = fab_evq_new(pending);
  RefQ ref = {0};
  uint64_t id = 0;
  for (size_t i = 0; i < pending; i++, id++) {
    fab_time_t t = inc(&r);
    fab_evq_push(q, t, NULL, id);
    refq_push(&ref, t, id);
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
    cr_assert_geq(ev.time, last, "time went back");
    last = ev.time;
    if (k < ops) {
      /* sometimes two pushes or none, so the size wanders */
      int npush = k % 7 == 3 ? 2 : k % 7 == 5 ? 0 : 1;
      for (int j = 0; j < npush; j++, id++) {
        fab_time_t t = ev.time + inc(&r);
        fab_evq_push(q, t, NULL, id);
        refq_push(&ref, t, id);
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

Test(evq, hold_small_increments) { hold(1, 1000, 50000, inc_small); }
Test(evq, hold_mixed_increments) { hold(2, 1000, 50000, inc_mixed); }
Test(evq, hold_large_increments) { hold(3, 300, 20000, inc_large); }
Test(evq, hold_ties) { hold(4, 500, 30000, inc_ties); }
Test(evq, hold_tiny_queue) { hold(5, 1, 20000, inc_mixed); }

/* ---- sequence renumbering ---------------------------------------------- */

/* The sequence counter is 32 bits; before it wraps, pending events are
** renumbered 0..n-1 in (time, seq) order. Reaching it through the API takes
** 2^32 pushes (minutes), too slow for a unit test. Instead a private copy of
** evq.c is compiled into this file under other names (wb_evq_*), so the test
** can set the counter just below 2^32 and cross the renumbering cheaply,
** with events waiting in all three places: the active bucket, wheel buckets
** and the far heap. Public API behaviour above uses the library's copy. */
#define fab_evq_new wb_evq_new
#define fab_evq_free wb_evq_free
#define fab_evq_push wb_evq_push
#define fab_evq_pop wb_evq_pop
#define fab_evq_size wb_evq_size
#define fab_evq_peek_time wb_evq_peek_time
#include "sim/evq.c"
#undef fab_evq_new
#undef fab_evq_free
#undef fab_evq_push
#undef fab_evq_pop
#undef fab_evq_size
#undef fab_evq_peek_time

static void wb_pop_expect(FabEvq *q, fab_time_t t, uint64_t arg) {
  FabEvent ev;
  cr_assert_eq(wb_evq_peek_time(q), t);
  cr_assert(wb_evq_pop(q, &ev));
  cr_assert_eq(ev.time, t, "popped time %llu, expected %llu", (unsigned long long)ev.time, (unsigned long long)t);
  cr_assert_eq(ev.arg, arg, "at %llu popped arg %llu, expected %llu", (unsigned long long)t,
               (unsigned long long)ev.arg, (unsigned long long)arg);
}

Test(evq_renumber, counter_wrap_keeps_fifo_everywhere) {
  FabEvq *q = wb_evq_new(8);
  const fab_time_t A = 100, W = 50 * FAB_US, F = 2 * FAB_MS; /* active, wheel, far */
  /* make bucket 0 active with two events pending in it */
  wb_evq_push(q, A, NULL, 0);
  wb_evq_push(q, 0, NULL, 1);
  wb_pop_expect(q, 0, 1);
  wb_evq_push(q, A, NULL, 2);
  wb_evq_push(q, W, NULL, 3);
  wb_evq_push(q, F, NULL, 4);
  q->seq = UINT32_MAX - 3; /* as if 2^32 - 4 events had been pushed */
  wb_evq_push(q, A, NULL, 5);
  wb_evq_push(q, W, NULL, 6);
  wb_evq_push(q, F, NULL, 7); /* seq UINT32_MAX - 1: the last before renumbering */
  cr_assert_eq(q->seq, UINT32_MAX);
  wb_evq_push(q, W, NULL, 8); /* renumbers first: 7 pending get 0..6, this one 7 */
  cr_assert_eq(q->seq, 8, "after renumbering, counter = pending events");
  wb_evq_push(q, A, NULL, 9);
  wb_evq_push(q, F, NULL, 10);
  wb_evq_push(q, 0, NULL, 11); /* before everything */
  cr_assert_eq(wb_evq_size(q), 11);
  wb_pop_expect(q, 0, 11);
  wb_pop_expect(q, A, 0);
  wb_pop_expect(q, A, 2);
  wb_pop_expect(q, A, 5);
  wb_pop_expect(q, A, 9);
  wb_pop_expect(q, W, 3);
  wb_pop_expect(q, W, 6);
  wb_pop_expect(q, W, 8);
  wb_pop_expect(q, F, 4);
  wb_pop_expect(q, F, 7);
  wb_pop_expect(q, F, 10);
  cr_assert_eq(wb_evq_size(q), 0);
  wb_evq_free(q);
}

Test(evq_renumber, renumbered_seq_is_rank) {
  /* Pending (time, seq) keys become 0..n-1 in pop order; new pushes follow. */
  FabEvq *q = wb_evq_new(8);
  q->seq = UINT32_MAX - 4;
  wb_evq_push(q, 3 * FAB_MS, NULL, 0); /* far */
  wb_evq_push(q, 5, NULL, 1);          /* active */
  wb_evq_push(q, 5 * FAB_US, NULL, 2); /* wheel */
  wb_evq_push(q, 5, NULL, 3);
  cr_assert_eq(q->seq, UINT32_MAX);
  wb_evq_push(q, 5, NULL, 4);
  FabEvent ev;
  const uint64_t want_arg[] = {1, 3, 4, 2, 0};
  const uint64_t want_seq[] = {0, 1, 4, 2, 3};
  for (int i = 0; i < 5; i++) {
    cr_assert(wb_evq_pop(q, &ev));
    cr_assert_eq(ev.arg, want_arg[i], "pop %d: arg %llu", i, (unsigned long long)ev.arg);
    cr_assert_eq(ev.seq, want_seq[i], "pop %d: seq %llu, expected %llu", i, (unsigned long long)ev.seq,
                 (unsigned long long)want_seq[i]);
  }
  wb_evq_free(q);
}

Test(evq_renumber, repeated_wraps_in_a_hold) {
  /* A hold pattern where the counter is pushed back to the brink every 100
  ** operations, so renumbering happens ~200 times with ~300 events pending
  ** in all structures; the order must match a reference throughout. */
  FabRng r;
  fab_rng_init(&r, 77, FAB_STREAM(FAB_STREAM_TEST, 4));
  FabEvq *q = wb_evq_new(8);
  RefQ ref = {0};
  uint64_t id = 0;
  for (; id < 300; id++) {
    fab_time_t t = inc_mixed(&r);
    wb_evq_push(q, t, NULL, id);
    refq_push(&ref, t, id);
  }
  for (int k = 0; k < 20000; k++) {
    if (k % 100 == 0) q->seq = UINT32_MAX - (uint32_t)fab_rng_below(&r, 3);
    Ref want = refq_pop(&ref);
    wb_pop_expect(q, want.t, want.i);
    fab_time_t t = want.t + inc_mixed(&r);
    wb_evq_push(q, t, NULL, id);
    refq_push(&ref, t, id++);
    if (k % 100 == 50) cr_assert_lt(q->seq, 1000u, "the counter was renumbered");
  }
  while (ref.n) {
    Ref want = refq_pop(&ref);
    wb_pop_expect(q, want.t, want.i);
  }
  cr_assert_eq(wb_evq_size(q), 0);
  free(ref.a);
  wb_evq_free(q);
}

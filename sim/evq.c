/* Event queue. See evq.h.
**
** Two structures, chosen by the hold-model benchmark (tests/bench_evq.c):
**
**  1. A timing wheel ("calendar queue", Brown 1988) for the near future:
**     NB buckets of W picoseconds each cover [cur, cur + NB*W). A push into
**     a later bucket is an append; the bucket being drained (the active one)
**     is sorted once when it becomes active (below). A bitmap finds the
**     next non-empty bucket.
**  2. A coarse wheel of NB2 buckets of one horizon each (550 ms) for events
**     beyond the wheel's horizon (retransmission timers: a run of millions
**     of short flows keeps one pending per flow started in the last 1 ms,
**     and a heap of them cost 4 % of a 1024-GPU ring in sift-downs alone).
**     A coarse bucket's events move into the wheel, an append each, when
**     the wheel reaches the first bucket of its horizon.
**  3. A 4-ary min-heap for events further out; they move into the wheels
**     when they come within reach.
**
** The fast path: the active bucket is a sorted array (the run) popped from
** the front, O(1) each. A bucket's list is the order its events were
** pushed, which is nearly sorted: a few ascending stretches, one per element
** that filled it (equal-time events of many elements arrive mostly in
** element order). When the bucket becomes active its list is copied into
** the run and the stretches are merged (a natural merge sort: one pass when
** the list is already in order). A push into the active bucket is appended
** when it is not below the run's last key, inserted in place when the run
** has at most RUN_INSERT events left, and otherwise goes to a heap; a pop
** takes the smaller of the run's front and the heap's top. (The 1024-host
** permutation: 0.90 s before, 0.64 s after; README "Event queue".)
**
** Every structure holds whole events (time, tie, target, arg: 32 bytes), so
** a pop reads nothing else. A wheel bucket's list is blocks of four events,
** contiguous, linked by a separate array of block numbers: making a crowded
** bucket active reads its events a block (two cache lines) at a time, the
** next block prefetched, where a list of single events cost a cache miss
** per event (the 512-GPU ring allreduce: advance() was 19 % of the run, 69 %
** of it on that one load; 7 % after).
**
** Build with -DFAB_EVQ_HEAP_ONLY to use the heap alone (the benchmark's
** baseline). Both order events by (time, tie). The tie key is the caller's
** (engine.h says how the engine makes it); the queue only compares it, so
** events with equal time and tie pop in no particular order. */
#include "evq.h"
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#ifndef FAB_EVQ_ARITY
#define FAB_EVQ_ARITY 4
#endif
#define WB 11                   /* bucket width 2^11 ps = 2.048 ns */
#define NBITS 16                /* 2^16 buckets: horizon 134 us */
#define NB (1u << NBITS)
#define NBITS2 12               /* 2^12 coarse buckets of one horizon each: 550 ms */
#define NB2 (1u << NBITS2)
#define RUN_INSERT 16           /* an out-of-order push into a run this short is inserted in place */
#define BLK 4                   /* events per block of a bucket's list: 128 bytes, two cache lines */

/* An event as every structure holds it: its key (time, tie) and its payload,
** 32 bytes. There is no side table: a pop reads nothing but the event. */
typedef FabEvent Ev;

#define NIL UINT32_MAX

/* A wheel bucket: a list of blocks of BLK events (positions p in ev[], block
** p / BLK), filled in push order; `last` is the position of its last event.
** Events of one bucket are contiguous but for one jump per block, so making
** a crowded bucket active reads whole cache lines, not one event per line. */
typedef struct Bucket {
  uint32_t head, last; /* positions; head NIL when empty */
} Bucket;

typedef struct Heap {
  Ev *a;
  size_t n, cap;
} Heap;

struct FabEvq {
  size_t n;          /* events pending in all */
  Heap far;          /* beyond the horizon (or everything, heap-only) */
#ifndef FAB_EVQ_HEAP_ONLY
  Bucket *wheel;     /* NB buckets */
  uint64_t *bits;    /* bit b: wheel[b] not empty (active bucket excluded) */
  uint64_t cur;      /* absolute number (time >> WB) of the active bucket */
  Bucket *wheel2;    /* NB2 coarse buckets, one wheel horizon (NB buckets) each, beyond the wheel */
  uint64_t *bits2;   /* bit c: wheel2[c] not empty */
  Ev *ev;            /* the buckets' blocks: nblk * BLK events */
  uint32_t *nxt;     /* block after block b in its bucket's list */
  uint32_t *freeb;   /* stack of free blocks */
  size_t nfree, nblk;
  Ev *run;           /* the active bucket's events that came in order: run[rh .. rn), sorted */
  size_t rh, rn, rcap;
  Ev *tmp;           /* merge scratch, rcap events */
  size_t *bounds;    /* where the bucket's list descends: the ascending stretches to merge */
  size_t nb, bcap;
  uint64_t run_pops; /* events popped from the run (the fast path) */
  Heap act;          /* the active bucket's other events, as a heap (equal times stay O(log n)) */
#endif
  FabEvqRecordFn rec; /* fab_evq_record */
  void *rec_ctx;
};

/* (time, tie) as one 128-bit number: the comparison compiles without
** branches, which matters when many events share a time and the order of
** their ties is not predictable. */
static inline bool before(const Ev *x, const Ev *y) {
  unsigned __int128 a = (unsigned __int128)x->time << 64 | x->tie;
  unsigned __int128 b = (unsigned __int128)y->time << 64 | y->tie;
  return a < b;
}

/* ---- 4-ary heap --------------------------------------------------------- */

static void heap_push(Heap *h, const Ev *e) {
  if (h->n == h->cap) {
    h->cap = h->cap ? h->cap * 2 : 64;
    h->a = g_renew(Ev, h->a, h->cap);
  }
  size_t i = h->n++;
  Ev *a = h->a;
  while (i > 0) {
    size_t p = (i - 1) / FAB_EVQ_ARITY;
    if (!before(e, &a[p])) break;
    a[i] = a[p];
    i = p;
  }
  a[i] = *e;
}

/* Sift e down from position i of a heap of n events. */
static inline void sift_down(Ev *a, size_t n, size_t i, Ev e) {
  for (;;) {
    size_t c = i * FAB_EVQ_ARITY + 1;
    if (c >= n) break;
    size_t end = c + FAB_EVQ_ARITY < n ? c + FAB_EVQ_ARITY : n;
    size_t m = c;
    for (size_t k = c + 1; k < end; k++)
      if (before(&a[k], &a[m])) m = k;
    if (!before(&a[m], &e)) break;
    a[i] = a[m];
    i = m;
  }
  a[i] = e;
}

static void heap_pop(Heap *h, Ev *out) {
  Ev *a = h->a;
  *out = a[0];
  size_t n = --h->n;
  if (n) sift_down(a, n, 0, a[n]);
}

/* ---- queue -------------------------------------------------------------- */

FabEvq *fab_evq_new(size_t cap) {
  FabEvq *q = g_new0(FabEvq, 1);
  (void)cap;
#ifndef FAB_EVQ_HEAP_ONLY
  q->wheel = g_new(Bucket, NB);
  for (uint32_t i = 0; i < NB; i++) q->wheel[i] = (Bucket){NIL, NIL};
  q->bits = g_new0(uint64_t, NB / 64);
  q->wheel2 = g_new(Bucket, NB2);
  for (uint32_t i = 0; i < NB2; i++) q->wheel2[i] = (Bucket){NIL, NIL};
  q->bits2 = g_new0(uint64_t, NB2 / 64);
#endif
  return q;
}

void fab_evq_free(FabEvq *q) {
  if (!q) return;
#ifndef FAB_EVQ_HEAP_ONLY
  g_free(q->wheel);
  g_free(q->bits);
  g_free(q->wheel2);
  g_free(q->bits2);
  g_free(q->act.a);
  g_free(q->run);
  g_free(q->tmp);
  g_free(q->bounds);
  g_free(q->ev);
  g_free(q->nxt);
  g_free(q->freeb);
#endif
  g_free(q->far.a);
  g_free(q);
}

size_t fab_evq_size(const FabEvq *q) { return q->n; }

uint64_t fab_evq_fast_pops(const FabEvq *q) {
#ifdef FAB_EVQ_HEAP_ONLY
  (void)q;
  return 0;
#else
  return q->run_pops;
#endif
}

#ifndef FAB_EVQ_HEAP_ONLY
/* A free block, last freed first (its lines are likely still in cache). */
static uint32_t blk_get(FabEvq *q) {
  if (G_UNLIKELY(q->nfree == 0)) {
    size_t old = q->nblk, cap = old ? old * 2 : 256;
    g_assert(cap * BLK < NIL);
    q->ev = g_renew(Ev, q->ev, cap * BLK);
    q->nxt = g_renew(uint32_t, q->nxt, cap);
    q->freeb = g_renew(uint32_t, q->freeb, cap);
    for (size_t i = cap; i-- > old;) q->freeb[q->nfree++] = (uint32_t)i;
    q->nblk = cap;
  }
  return q->freeb[--q->nfree];
}

static void run_grow(FabEvq *q) {
  q->rcap = q->rcap ? q->rcap * 2 : 64;
  q->run = g_renew(Ev, q->run, q->rcap);
  q->tmp = g_renew(Ev, q->tmp, q->rcap);
}

/* Sort run[0 .. rn), made of nb + 1 ascending stretches that start at 0 and
** at bounds[0 .. nb): merge neighbouring stretches pairwise until one is
** left (a natural merge sort: O(n log s) for s stretches; a bucket's list
** is usually a few stretches, one per element that filled it). Stable. */
static void run_merge(FabEvq *q) {
  size_t ns = q->nb + 1;
  Ev *a = q->run, *b = q->tmp;
  while (ns > 1) {
    /* stretch k starts at k ? bounds[k - 1] : 0 and ends where k + 1 starts
    ** (or at rn); the new stretch k / 2 is old k and k + 1 merged, and its
    ** start goes to bounds[k / 2 - 1], which no later step reads */
    for (size_t k = 0; k < ns; k += 2) {
      size_t lo = k ? q->bounds[k - 1] : 0;
      size_t mid = k < q->nb ? q->bounds[k] : q->rn;
      size_t hi = k + 1 < q->nb ? q->bounds[k + 1] : q->rn;
      size_t x = lo, y = mid, o = lo;
      while (x < mid && y < hi) b[o++] = before(&a[y], &a[x]) ? a[y++] : a[x++];
      while (x < mid) b[o++] = a[x++];
      while (y < hi) b[o++] = a[y++];
      if (k) q->bounds[k / 2 - 1] = lo;
    }
    ns = (ns + 1) / 2;
    q->nb = ns - 1;
    Ev *t = a;
    a = b;
    b = t;
  }
  q->run = a;
  q->tmp = b;
}

/* Into the active bucket: appended to the run if it keeps it sorted. */
static inline void act_put(FabEvq *q, const Ev *e) {
  if (q->rh == q->rn) q->rh = q->rn = 0; /* the run is empty: e starts it */
  if (q->rn == 0 || !before(e, &q->run[q->rn - 1])) {
    if (G_UNLIKELY(q->rn == q->rcap)) run_grow(q);
    q->run[q->rn++] = *e;
  } else if (q->rn - q->rh <= RUN_INSERT) { /* a short run: insert in place */
    if (G_UNLIKELY(q->rn == q->rcap)) run_grow(q);
    size_t i = q->rn;
    while (i > q->rh && before(e, &q->run[i - 1])) {
      q->run[i] = q->run[i - 1];
      i--;
    }
    q->run[i] = *e;
    q->rn++;
  } else {
    heap_push(&q->act, e);
  }
}

static inline bool act_empty(const FabEvq *q) { return q->rh == q->rn && q->act.n == 0; }

/* The active bucket's earliest event: the run's front or the heap's top. */
static inline bool act_from_run(const FabEvq *q) {
  return q->rh < q->rn && (q->act.n == 0 || before(&q->run[q->rh], &q->act.a[0]));
}

/* Append e to bucket i of a wheel (bits: that wheel's bitmap). */
static inline void bucket_put(FabEvq *q, Bucket *w, uint64_t *bits, uint32_t i, const Ev *e) {
  uint32_t p;
  if (w->head == NIL) { /* a new list */
    p = w->head = blk_get(q) * BLK;
    bits[i >> 6] |= 1ull << (i & 63);
  } else if ((w->last & (BLK - 1)) == BLK - 1) { /* its last block is full */
    p = blk_get(q) * BLK;
    q->nxt[w->last / BLK] = p / BLK;
  } else {
    p = w->last + 1;
  }
  w->last = p;
  q->ev[p] = *e;
}

/* Where an event goes: the active bucket, the wheel (within NB buckets of
** cur), the coarse wheel (a later horizon within NB2 of cur's), or the far
** heap. The coarse wheel holds only horizons after cur's: its bucket c is
** moved into the wheel when cur reaches c's first bucket (advance). */
static inline void wheel_put(FabEvq *q, const Ev *e) {
  uint64_t b = e->time >> WB;
  if (b <= q->cur) {
    act_put(q, e);
  } else if (b < q->cur + NB) {
    uint32_t i = (uint32_t)(b & (NB - 1));
    bucket_put(q, &q->wheel[i], q->bits, i, e);
  } else if ((b >> NBITS) < (q->cur >> NBITS) + NB2) {
    uint32_t i = (uint32_t)((b >> NBITS) & (NB2 - 1));
    bucket_put(q, &q->wheel2[i], q->bits2, i, e);
  } else {
    heap_push(&q->far, e);
  }
}

/* The first absolute bucket number after `after` whose bit is set in a
** wheel's bitmap of n buckets (a power of two, a multiple of 64), or
** UINT64_MAX when none is. */
static uint64_t next_set(const uint64_t *bits, uint32_t n, uint64_t after) {
  uint32_t start = (uint32_t)((after + 1) & (n - 1));
  uint32_t w = start >> 6;
  uint64_t word = bits[w] & (~0ull << (start & 63));
  for (uint32_t step = 0; step <= n / 64; step++) {
    if (word) {
      uint32_t i = (w << 6) | (uint32_t)__builtin_ctzll(word);
      return after + 1 + ((i - start) & (n - 1));
    }
    w = (w + 1) & (n / 64 - 1);
    word = bits[w];
  }
  return UINT64_MAX;
}

/* Walking a bucket's list: the block after block b (NIL after the last)
** and the events block b holds. */
static inline uint32_t blk_next(const FabEvq *q, const Bucket *w, uint32_t b) {
  return b == w->last / BLK ? NIL : q->nxt[b];
}
static inline uint32_t blk_len(const Bucket *w, uint32_t b) { return b == w->last / BLK ? w->last % BLK + 1 : BLK; }

/* Move what the far heap holds within the wheels' reach into them. */
static void far_in(FabEvq *q) {
  while (q->far.n && (q->far.a[0].time >> (WB + NBITS)) < (q->cur >> NBITS) + NB2) {
    Ev e;
    heap_pop(&q->far, &e);
    wheel_put(q, &e);
  }
}

/* Make wheel bucket bw (the first non-empty one after cur) the active one:
** its list becomes the run, sorted. */
static void activate(FabEvq *q, uint64_t bw) {
  q->cur = bw;
  uint32_t i = (uint32_t)(bw & (NB - 1));
  Bucket *w = &q->wheel[i];
  q->rh = q->rn = 0;
  q->nb = 0;
  for (uint32_t b = w->head / BLK, nb; b != NIL; b = nb) {
    nb = blk_next(q, w, b);
    if (nb != NIL) { /* the next block's lines are on their way while this one is copied */
      __builtin_prefetch(&q->ev[(size_t)nb * BLK]);
      __builtin_prefetch(&q->ev[(size_t)nb * BLK + BLK / 2]);
    }
    uint32_t k = blk_len(w, b);
    if (G_UNLIKELY(q->rn + BLK > q->rcap)) run_grow(q);
    const Ev *e = &q->ev[(size_t)b * BLK];
    for (uint32_t j = 0; j < k; j++) {
      if (q->rn && before(&e[j], &q->run[q->rn - 1])) { /* a descent: a new ascending stretch starts */
        if (G_UNLIKELY(q->nb == q->bcap)) {
          q->bcap = q->bcap ? q->bcap * 2 : 64;
          q->bounds = g_renew(size_t, q->bounds, q->bcap);
        }
        q->bounds[q->nb++] = q->rn;
      }
      q->run[q->rn++] = e[j];
    }
    q->freeb[q->nfree++] = b;
  }
  *w = (Bucket){NIL, NIL};
  q->bits[i >> 6] &= ~(1ull << (i & 63));
  if (q->nb) run_merge(q);
}

/* cur has reached the first bucket of coarse bucket bc's horizon: its
** events go into the wheel (those of bucket cur into the active one). */
static void migrate(FabEvq *q, uint64_t bc) {
  uint32_t i = (uint32_t)(bc & (NB2 - 1));
  Bucket *w = &q->wheel2[i];
  for (uint32_t b = w->head / BLK, nb; b != NIL; b = nb) {
    nb = blk_next(q, w, b);
    if (nb != NIL) __builtin_prefetch(&q->ev[(size_t)nb * BLK]);
    for (uint32_t j = 0, k = blk_len(w, b); j < k; j++) {
      Ev e = q->ev[(size_t)b * BLK + j]; /* a copy: wheel_put may grow q->ev */
      wheel_put(q, &e);
    }
    q->freeb[q->nfree++] = b; /* after its last read: wheel_put may take it again */
  }
  *w = (Bucket){NIL, NIL};
  q->bits2[i >> 6] &= ~(1ull << (i & 63));
}

/* Make the active bucket non-empty if anything is pending. Whichever comes
** first: a coarse bucket's horizon (its events go to the wheel, after the
** wheel's own bucket at the same place became active, so that it is not
** passed by), the far heap's top, the next wheel bucket. */
static void advance(FabEvq *q) {
  while (act_empty(q) && q->n) {
    uint64_t bw = next_set(q->bits, NB, q->cur);
    uint64_t bc = next_set(q->bits2, NB2, q->cur >> NBITS), bs = bc == UINT64_MAX ? UINT64_MAX : bc << NBITS;
    uint64_t bf = q->far.n ? q->far.a[0].time >> WB : UINT64_MAX;
    if (bs <= bw && bs <= bf) {
      if (bw == bs) activate(q, bw);
      else q->cur = bs, q->rh = q->rn = 0;
      migrate(q, bc);
    } else if (bf < bw) { /* bucket bf goes to act (b <= cur) */
      q->cur = bf;
    } else {
      activate(q, bw);
    }
    far_in(q);
  }
}
#endif

void fab_evq_record(FabEvq *q, FabEvqRecordFn fn, void *ctx) {
  q->rec = fn;
  q->rec_ctx = ctx;
}

void fab_evq_push(FabEvq *q, fab_time_t t, uint64_t tie, void *target, uint64_t arg) {
  if (G_UNLIKELY(q->rec)) q->rec(q->rec_ctx, t, tie);
  Ev e = {t, tie, target, arg};
  q->n++;
#ifdef FAB_EVQ_HEAP_ONLY
  heap_push(&q->far, &e);
#else
  wheel_put(q, &e);
#endif
}

fab_time_t fab_evq_peek_time(FabEvq *q) {
  if (!q->n) return FAB_TIME_MAX;
#ifdef FAB_EVQ_HEAP_ONLY
  return q->far.a[0].time;
#else
  if (act_empty(q)) advance(q);
  return act_from_run(q) ? q->run[q->rh].time : q->act.a[0].time;
#endif
}

bool fab_evq_pop(FabEvq *q, FabEvent *out) {
  if (q->n == 0) return false;
#ifdef FAB_EVQ_HEAP_ONLY
  heap_pop(&q->far, out);
#else
  if (act_empty(q)) advance(q);
  if (act_from_run(q)) {
    *out = q->run[q->rh++];
    q->run_pops++;
  } else {
    heap_pop(&q->act, out);
  }
#endif
  q->n--;
  return true;
}

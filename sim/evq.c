/* Event queue: implicit d-ary min-heap on (time, seq). See evq.h. */
#include "evq.h"
#include <glib.h>
#include <string.h>

#ifndef FAB_EVQ_ARITY
#define FAB_EVQ_ARITY 4
#endif

struct FabEvq {
  FabEvent *a;  /* heap array, a[0] is the minimum */
  size_t n;     /* events held */
  size_t cap;   /* slots allocated */
  uint64_t seq; /* next sequence number */
};

static inline bool before(const FabEvent *x, const FabEvent *y) {
  return x->time < y->time || (x->time == y->time && x->seq < y->seq);
}

FabEvq *fab_evq_new(size_t cap) {
  FabEvq *q = g_new0(FabEvq, 1);
  q->cap = cap < 16 ? 16 : cap;
  q->a = g_new(FabEvent, q->cap);
  return q;
}

void fab_evq_free(FabEvq *q) {
  if (!q) return;
  g_free(q->a);
  g_free(q);
}

size_t fab_evq_size(const FabEvq *q) { return q->n; }

fab_time_t fab_evq_peek_time(const FabEvq *q) { return q->n ? q->a[0].time : FAB_TIME_MAX; }

void fab_evq_push(FabEvq *q, fab_time_t t, void *target, uint64_t arg) {
  if (q->n == q->cap) {
    q->cap *= 2;
    q->a = g_renew(FabEvent, q->a, q->cap);
  }
  FabEvent e = {t, q->seq++, target, arg};
  size_t i = q->n++;
  FabEvent *a = q->a;
  while (i > 0) { /* sift up */
    size_t p = (i - 1) / FAB_EVQ_ARITY;
    if (!before(&e, &a[p])) break;
    a[i] = a[p];
    i = p;
  }
  a[i] = e;
}

bool fab_evq_pop(FabEvq *q, FabEvent *out) {
  if (q->n == 0) return false;
  FabEvent *a = q->a;
  *out = a[0];
  size_t n = --q->n;
  if (n == 0) return true;
  FabEvent e = a[n]; /* sift the last entry down from the root */
  size_t i = 0;
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
  return true;
}

/*
** A growable array indexed by a global, ever-increasing number, whose
** oldest elements can be dropped: what a run holds of something it makes as
** it goes and forgets once used (operations of a DAG that unfolds).
**
** Elements are fixed-size and contiguous; element i (global) lives at
** data[i - first] while first <= i < first + len. Appending may move the
** array (pointers into it are valid until the next fab_deq_push); dropping
** the front is O(1), and the live part is moved down only when the dropped
** part outgrows it (amortised O(1) per element), so memory follows what is
** live, not what was ever made.
*/
#ifndef FAB_DEQ_H
#define FAB_DEQ_H

#include <stddef.h>
#include <stdint.h>

typedef struct FabDeq {
  char *buf;      /* the allocation */
  size_t esz;     /* element size, bytes */
  size_t start;   /* buf index of the first live element */
  size_t len;     /* live elements */
  size_t cap;     /* elements buf holds */
  uint64_t first; /* global index of the first live element */
} FabDeq;

/* An empty deque of `esz`-byte elements whose first element will be number 0. */
void fab_deq_init(FabDeq *q, size_t esz);
void fab_deq_clear(FabDeq *q); /* frees the storage; the deque is empty again, numbered from 0 */

/* The global index the next push gets (first + len). */
static inline uint64_t fab_deq_end(const FabDeq *q) { return q->first + q->len; }

/* Element i (first <= i < end). */
static inline void *fab_deq_at(const FabDeq *q, uint64_t i) {
  return q->buf + (q->start + (size_t)(i - q->first)) * q->esz;
}

/* Append a zeroed element; returns it (its index is the old fab_deq_end). */
void *fab_deq_push(FabDeq *q);

/* Forget the elements before `upto` (first <= upto <= end). */
void fab_deq_drop(FabDeq *q, uint64_t upto);

/* Forget the elements from `from` on (first <= from <= end): undo pushes. */
void fab_deq_truncate(FabDeq *q, uint64_t from);

/* The live elements as one allocation the caller frees (g_free), first
** element at its start; the deque is empty again, numbered from 0. */
void *fab_deq_steal(FabDeq *q);

/* Bytes the deque holds now (its capacity). */
static inline size_t fab_deq_bytes(const FabDeq *q) { return q->cap * q->esz; }

#endif

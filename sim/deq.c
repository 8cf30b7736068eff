/* A growable array with a droppable front. See deq.h. */
#include "deq.h"
#include <glib.h>
#include <string.h>

void fab_deq_init(FabDeq *q, size_t esz) {
  g_assert(esz > 0);
  *q = (FabDeq){.esz = esz};
}

void fab_deq_clear(FabDeq *q) {
  g_free(q->buf);
  fab_deq_init(q, q->esz);
}

/* Room for n live elements from buf[0]: the live part moved down, the
** allocation resized to at least n (doubling) or shrunk when far too big. */
static void reshape(FabDeq *q, size_t n) {
  if (q->start) {
    memmove(q->buf, q->buf + q->start * q->esz, q->len * q->esz);
    q->start = 0;
  }
  size_t cap = q->cap;
  if (n > cap) cap = MAX(MAX(cap * 2, n), 64u);
  else if (cap > 4096 && n < cap / 4) cap = MAX(n * 2, 64u);
  if (cap != q->cap) {
    q->buf = g_realloc_n(q->buf, cap, q->esz);
    q->cap = cap;
  }
}

void *fab_deq_push(FabDeq *q) {
  if (q->start + q->len == q->cap) reshape(q, q->len + 1);
  void *e = q->buf + (q->start + q->len++) * q->esz;
  memset(e, 0, q->esz);
  return e;
}

void fab_deq_drop(FabDeq *q, uint64_t upto) {
  g_assert(upto >= q->first && upto <= fab_deq_end(q));
  size_t n = (size_t)(upto - q->first);
  q->start += n;
  q->len -= n;
  q->first = upto;
  if (q->len == 0) q->start = 0;
  else if (q->start > q->len && q->start >= 4096) reshape(q, q->len); /* the dead part outgrew the live one */
}

void fab_deq_truncate(FabDeq *q, uint64_t from) {
  g_assert(from >= q->first && from <= fab_deq_end(q));
  q->len = (size_t)(from - q->first);
}

void *fab_deq_steal(FabDeq *q) {
  void *out;
  if (!q->buf) {
    out = g_malloc(q->esz);
  } else {
    if (q->start) memmove(q->buf, q->buf + q->start * q->esz, q->len * q->esz);
    out = q->buf;
  }
  fab_deq_init(q, q->esz);
  return out;
}

/* Object pool: slabs + a free list. See pool.h. */
#include "pool.h"
#include <glib.h>
#include <stdbool.h>
#include <string.h>

typedef struct Free {
  struct Free *next;
} Free;

struct FabPool {
  Free *free;        /* free list through the first word of each object */
  GPtrArray *slabs;  /* owned blocks of `slab` objects */
  size_t size;       /* bytes per object, rounded up to a pointer's alignment */
  size_t want;       /* bytes per object as asked (what is zeroed) */
  size_t slab;       /* objects per slab */
  size_t live;       /* handed out, not returned */
  size_t capacity;   /* objects in all slabs */
  uint64_t allocs;   /* total fab_pool_get calls */
  bool open;         /* objects of other pools may come back here (fab_pool_open) */
};

FabPool *fab_pool_new(size_t size, size_t slab) {
  g_assert(size > 0);
  FabPool *pool = g_new0(FabPool, 1);
  size_t a = sizeof(void *) > sizeof(uint64_t) ? sizeof(void *) : sizeof(uint64_t);
  pool->want = size;
  pool->size = (MAX(size, sizeof(Free)) + a - 1) / a * a;
  pool->slab = slab ? slab : 4096;
  pool->slabs = g_ptr_array_new_with_free_func(g_free);
  return pool;
}

void fab_pool_free(FabPool *pool) {
  if (!pool) return;
  g_ptr_array_free(pool->slabs, TRUE);
  g_free(pool);
}

static void grow(FabPool *pool) {
  char *s = g_malloc_n(pool->slab, pool->size);
  g_ptr_array_add(pool->slabs, s);
  for (size_t i = pool->slab; i-- > 0;) { /* the slab's first object ends up first in the list */
    Free *f = (Free *)(void *)(s + i * pool->size);
    f->next = pool->free;
    pool->free = f;
  }
  pool->capacity += pool->slab;
}

void *fab_pool_take(FabPool *pool) {
  if (G_UNLIKELY(!pool->free)) grow(pool);
  Free *f = pool->free;
  pool->free = f->next;
  pool->live++;
  pool->allocs++;
  return f;
}

void *fab_pool_get(FabPool *pool) { return memset(fab_pool_take(pool), 0, pool->want); }

void fab_pool_put(FabPool *pool, void *obj) {
  g_assert(pool->live > 0 || pool->open);
#ifdef FAB_DEBUG_CHECKS
  memset(obj, 0xa5, pool->want);
#endif
  Free *f = obj;
  f->next = pool->free;
  pool->free = f;
  pool->live--;
}

void fab_pool_open(FabPool *pool) { pool->open = true; }

size_t fab_pool_size(const FabPool *pool) { return pool->want; }
size_t fab_pool_live(const FabPool *pool) { return pool->live; }
size_t fab_pool_capacity(const FabPool *pool) { return pool->capacity; }
uint64_t fab_pool_allocs(const FabPool *pool) { return pool->allocs; }

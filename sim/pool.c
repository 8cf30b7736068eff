/* Packet pool: slabs + free list. See pool.h. */
#include "pool.h"
#include <glib.h>
#include <string.h>

struct FabPool {
  FabPkt *free;      /* free list through ->next */
  GPtrArray *slabs;  /* owned blocks of `slab` packets */
  size_t slab;       /* packets per slab */
  size_t live;       /* allocated, not freed */
  size_t capacity;   /* packets in all slabs */
  uint64_t allocs;   /* total fab_pkt_alloc calls */
};

FabPool *fab_pool_new(size_t slab) {
  FabPool *pool = g_new0(FabPool, 1);
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
  FabPkt *s = g_new(FabPkt, pool->slab);
  g_ptr_array_add(pool->slabs, s);
  for (size_t i = pool->slab; i-- > 0;) {
    s[i].next = pool->free;
    pool->free = &s[i];
  }
  pool->capacity += pool->slab;
}

FabPkt *fab_pkt_alloc(FabPool *pool) {
  if (G_UNLIKELY(!pool->free)) grow(pool);
  FabPkt *p = pool->free;
  pool->free = p->next;
  memset(p, 0, sizeof *p);
  pool->live++;
  pool->allocs++;
  return p;
}

void fab_pkt_free(FabPool *pool, FabPkt *p) {
  g_assert(pool->live > 0);
#ifdef FAB_DEBUG_CHECKS
  memset(p, 0xa5, sizeof *p);
#endif
  p->next = pool->free;
  pool->free = p;
  pool->live--;
}

size_t fab_pool_live(const FabPool *pool) { return pool->live; }
size_t fab_pool_capacity(const FabPool *pool) { return pool->capacity; }
uint64_t fab_pool_allocs(const FabPool *pool) { return pool->allocs; }

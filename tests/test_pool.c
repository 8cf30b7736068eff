/*
** Object pool (sim/pool.h): zeroed fixed-size objects from slabs, recycled
** through a LIFO free list, with size / live / capacity / allocs counters.
** The pool is generic; most cases use a small test struct (Obj). Packets
** (models/packet.h) live in the engine's pool: their 64-byte bound and a
** round trip through fab_pkt_alloc/free are checked at the end.
*/
#include <criterion/criterion.h>
#include <string.h>

#include "models/packet.h"
#include "sim/engine.h"
#include "sim/pool.h"

/* A test object: a few fields of different widths, 24 bytes. */
typedef struct Obj {
  uint64_t id;
  uint32_t tag;
  uint8_t hops;
  uint8_t pad[11];
} Obj;

static int all_zero(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i]) return 0;
  return 1;
}

static FabPool *obj_pool(size_t slab) { return fab_pool_new(sizeof(Obj), slab); }

Test(pool, packet_fits_64_bytes) {
  cr_assert_leq(sizeof(FabPkt), 64, "FabPkt is %zu bytes", sizeof(FabPkt));
}

Test(pool, size_is_what_was_asked) {
  /* the size as given, whatever rounding the slabs use inside */
  const size_t sizes[] = {1, 3, 7, 8, 13, sizeof(Obj), sizeof(FabPkt), 100, 4096};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    FabPool *pool = fab_pool_new(sizes[k], 4);
    cr_assert_eq(fab_pool_size(pool), sizes[k], "pool of %zu-byte objects reports %zu", sizes[k],
                 fab_pool_size(pool));
    void *p = fab_pool_get(pool);
    cr_assert_eq(fab_pool_size(pool), sizes[k], "size does not change with use");
    fab_pool_put(pool, p);
    fab_pool_free(pool);
  }
}

Test(pool, small_objects_are_distinct_and_writable) {
  /* objects smaller than a pointer still get their own, non-overlapping bytes */
  FabPool *pool = fab_pool_new(1, 4);
  unsigned char *p[9];
  for (int i = 0; i < 9; i++) {
    p[i] = fab_pool_get(pool);
    cr_assert_eq(*p[i], 0);
    *p[i] = (unsigned char)(i + 1);
  }
  for (int i = 0; i < 9; i++) {
    cr_assert_eq(*p[i], i + 1, "object %d was overwritten", i);
    for (int j = 0; j < i; j++) cr_assert_neq(p[i], p[j]);
  }
  for (int i = 0; i < 9; i++) fab_pool_put(pool, p[i]);
  cr_assert_eq(fab_pool_live(pool), 0);
  fab_pool_free(pool);
}

Test(pool, new_pool_is_empty) {
  FabPool *pool = obj_pool(8);
  cr_assert_eq(fab_pool_live(pool), 0);
  cr_assert_eq(fab_pool_capacity(pool), 0, "no slab before the first get");
  cr_assert_eq(fab_pool_allocs(pool), 0);
  cr_assert_eq(fab_pool_size(pool), sizeof(Obj));
  fab_pool_free(pool);
  fab_pool_free(NULL); /* allowed */
}

Test(pool, get_is_zeroed_even_after_reuse) {
  FabPool *pool = obj_pool(4);
  Obj *p = fab_pool_get(pool);
  cr_assert(all_zero(p, sizeof *p));
  memset(p, 0xff, sizeof *p); /* dirty every byte */
  fab_pool_put(pool, p);
  Obj *q = fab_pool_get(pool);
  cr_assert_eq(q, p, "the returned object comes back first");
  cr_assert(all_zero(q, sizeof *q), "a recycled object is zeroed again");
  fab_pool_free(pool);
}

Test(pool, odd_size_zeroed_even_after_reuse) {
  /* a size that is not a multiple of the alignment: every asked byte zeroed */
  FabPool *pool = fab_pool_new(13, 2);
  unsigned char *a = fab_pool_get(pool), *b = fab_pool_get(pool);
  cr_assert(all_zero(a, 13));
  cr_assert(all_zero(b, 13));
  memset(a, 0xff, 13);
  memset(b, 0xff, 13);
  fab_pool_put(pool, a);
  fab_pool_put(pool, b);
  unsigned char *c = fab_pool_get(pool), *d = fab_pool_get(pool);
  cr_assert_eq(c, b);
  cr_assert_eq(d, a);
  cr_assert(all_zero(c, 13));
  cr_assert(all_zero(d, 13));
  fab_pool_put(pool, c);
  fab_pool_put(pool, d);
  fab_pool_free(pool);
}

Test(pool, live_and_allocs_count) {
  FabPool *pool = obj_pool(4);
  Obj *a = fab_pool_get(pool), *b = fab_pool_get(pool), *c = fab_pool_get(pool);
  cr_assert_eq(fab_pool_live(pool), 3);
  cr_assert_eq(fab_pool_allocs(pool), 3);
  fab_pool_put(pool, b);
  cr_assert_eq(fab_pool_live(pool), 2);
  cr_assert_eq(fab_pool_allocs(pool), 3, "puts do not count as allocations");
  b = fab_pool_get(pool);
  cr_assert_eq(fab_pool_live(pool), 3);
  cr_assert_eq(fab_pool_allocs(pool), 4);
  fab_pool_put(pool, a);
  fab_pool_put(pool, b);
  fab_pool_put(pool, c);
  cr_assert_eq(fab_pool_live(pool), 0);
  cr_assert_eq(fab_pool_allocs(pool), 4);
  fab_pool_free(pool);
}

Test(pool, distinct_objects_while_live) {
  /* 10 live objects (3 slabs of 4) are 10 different, non-overlapping objects */
  FabPool *pool = obj_pool(4);
  Obj *p[10];
  for (int i = 0; i < 10; i++) {
    p[i] = fab_pool_get(pool);
    p[i]->id = (uint64_t)i + 1;
    p[i]->tag = (uint32_t)i + 1;
    p[i]->hops = (uint8_t)(i + 1);
    memset(p[i]->pad, i + 1, sizeof p[i]->pad); /* the last bytes too */
  }
  for (int i = 0; i < 10; i++) {
    cr_assert_eq(p[i]->id, (uint64_t)i + 1, "object %d was overwritten", i);
    cr_assert_eq(p[i]->tag, (uint32_t)i + 1);
    cr_assert_eq(p[i]->hops, i + 1);
    for (size_t k = 0; k < sizeof p[i]->pad; k++) cr_assert_eq(p[i]->pad[k], i + 1);
    for (int j = 0; j < i; j++) {
      cr_assert_neq(p[i], p[j]);
      /* no overlap: the objects' byte ranges are disjoint */
      const char *x = (const char *)p[i], *y = (const char *)p[j];
      cr_assert(x + sizeof(Obj) <= y || y + sizeof(Obj) <= x, "objects %d and %d overlap", i, j);
    }
  }
  for (int i = 0; i < 10; i++) fab_pool_put(pool, p[i]);
  fab_pool_free(pool);
}

Test(pool, capacity_grows_by_slabs) {
  FabPool *pool = obj_pool(4);
  Obj *p[9];
  const size_t want[9] = {4, 4, 4, 4, 8, 8, 8, 8, 12};
  for (int i = 0; i < 9; i++) {
    p[i] = fab_pool_get(pool);
    cr_assert_eq(fab_pool_capacity(pool), want[i], "after %d gets capacity %zu, expected %zu", i + 1,
                 fab_pool_capacity(pool), want[i]);
  }
  for (int i = 0; i < 9; i++) fab_pool_put(pool, p[i]);
  cr_assert_eq(fab_pool_capacity(pool), 12, "returning keeps the slabs");
  for (int i = 0; i < 12; i++) p[i % 9] = fab_pool_get(pool);
  cr_assert_eq(fab_pool_capacity(pool), 12, "12 live objects fit in the 3 slabs");
  cr_assert_eq(fab_pool_live(pool), 12);
  fab_pool_free(pool);
}

Test(pool, default_slab_is_4096) {
  FabPool *pool = obj_pool(0);
  (void)fab_pool_get(pool);
  cr_assert_eq(fab_pool_capacity(pool), 4096);
  fab_pool_free(pool);
}

Test(pool, reuse_is_lifo) {
  FabPool *pool = obj_pool(16);
  Obj *a = fab_pool_get(pool), *b = fab_pool_get(pool), *c = fab_pool_get(pool);
  fab_pool_put(pool, a);
  fab_pool_put(pool, c);
  fab_pool_put(pool, b);
  cr_assert_eq(fab_pool_get(pool), b, "last returned, first reused");
  cr_assert_eq(fab_pool_get(pool), c);
  cr_assert_eq(fab_pool_get(pool), a);
  cr_assert_eq(fab_pool_capacity(pool), 16);
  fab_pool_free(pool);
}

Test(pool, many_gets_and_puts) {
  /* 10000 gets in waves; live always equals got - returned, and the
  ** high-water mark (1000 live) bounds the capacity. */
  FabPool *pool = obj_pool(64);
  Obj *held[1000];
  size_t n = 0, freed = 0;
  for (int i = 0; i < 10000; i++) {
    held[n] = fab_pool_get(pool);
    held[n]->id = (uint64_t)i;
    n++;
    if (n == 1000 || i % 3 == 2) { /* return some, most recent first */
      size_t drop = n == 1000 ? 600 : 1;
      for (size_t k = 0; k < drop; k++) {
        fab_pool_put(pool, held[--n]);
        freed++;
      }
    }
    cr_assert_eq(fab_pool_live(pool), n);
    cr_assert_eq(fab_pool_live(pool), (size_t)i + 1 - freed);
  }
  cr_assert_eq(fab_pool_allocs(pool), 10000);
  cr_assert_leq(fab_pool_capacity(pool), 1024, "capacity %zu above the 1000-object high-water mark's slabs",
                fab_pool_capacity(pool));
  cr_assert_geq(fab_pool_capacity(pool), n);
  for (size_t k = 1; k < n; k++) /* held objects are distinct: each kept the number written to it */
    cr_assert_lt(held[k - 1]->id, held[k]->id);
  while (n) fab_pool_put(pool, held[--n]);
  cr_assert_eq(fab_pool_live(pool), 0);
  fab_pool_free(pool);
}

/* ---- packets in the engine's pool (models/packet.h) ----------------------- */

Test(pool, packets_from_the_engine_pool) {
  FabEngine *eng = fab_engine_new(1, sizeof(FabPkt));
  cr_assert_eq(fab_pool_size(eng->pool), sizeof(FabPkt));
  FabPkt *p = fab_pkt_alloc(eng);
  cr_assert(all_zero(p, sizeof *p));
  cr_assert_eq(fab_pool_live(eng->pool), 1);
  memset(p, 0xff, sizeof *p);
  fab_pkt_free(eng, p);
  cr_assert_eq(fab_pool_live(eng->pool), 0);
  FabPkt *q = fab_pkt_alloc(eng);
  cr_assert_eq(q, p, "the freed packet comes back first");
  cr_assert(all_zero(q, sizeof *q), "a recycled packet is zeroed again");
  fab_pkt_free(eng, q);
  cr_assert_eq(fab_pool_allocs(eng->pool), 2);
  fab_engine_free(eng);
}

/* A parallel run's pools take each other's objects back (fab_pool_open):
** the memory joins the pool that frees it, and only the sum of live counts
** means anything. */
Test(pool, an_open_pool_takes_another_pools_objects) {
  FabPool *a = fab_pool_new(64, 4), *b = fab_pool_new(64, 4);
  fab_pool_open(a);
  fab_pool_open(b);
  void *x = fab_pool_get(a);
  fab_pool_put(b, x);
  cr_assert_eq(fab_pool_live(a) + fab_pool_live(b), 0, "the sum is 0 (b's count wrapped below 0)");
  cr_assert_eq(fab_pool_get(b), x, "b hands it out next (LIFO)");
  cr_assert_eq(fab_pool_live(a) + fab_pool_live(b), 1);
  fab_pool_put(a, x);
  cr_assert_eq(fab_pool_live(a), 0);
  cr_assert_eq(fab_pool_live(b), 0);
  fab_pool_free(b);
  fab_pool_free(a);
}

/*
** Packet pool (sim/pool.h): zeroed packets from slabs, recycled through a
** LIFO free list, with live / capacity / allocs counters.
*/
#include <criterion/criterion.h>
#include <string.h>

#include "sim/pool.h"

static int all_zero(const FabPkt *p) {
  static const FabPkt zero;
  return memcmp(p, &zero, sizeof *p) == 0;
}

Test(pool, packet_fits_64_bytes) {
  cr_assert_leq(sizeof(FabPkt), 64, "FabPkt is %zu bytes", sizeof(FabPkt));
}

Test(pool, new_pool_is_empty) {
  FabPool *pool = fab_pool_new(8);
  cr_assert_eq(fab_pool_live(pool), 0);
  cr_assert_eq(fab_pool_capacity(pool), 0, "no slab before the first alloc");
  cr_assert_eq(fab_pool_allocs(pool), 0);
  fab_pool_free(pool);
  fab_pool_free(NULL); /* allowed */
}

Test(pool, alloc_is_zeroed_even_after_reuse) {
  FabPool *pool = fab_pool_new(4);
  FabPkt *p = fab_pkt_alloc(pool);
  cr_assert(all_zero(p));
  memset(p, 0xff, sizeof *p); /* dirty every byte */
  fab_pkt_free(pool, p);
  FabPkt *q = fab_pkt_alloc(pool);
  cr_assert_eq(q, p, "the freed packet comes back first");
  cr_assert(all_zero(q), "a recycled packet is zeroed again");
  fab_pool_free(pool);
}

Test(pool, live_and_allocs_count) {
  FabPool *pool = fab_pool_new(4);
  FabPkt *a = fab_pkt_alloc(pool), *b = fab_pkt_alloc(pool), *c = fab_pkt_alloc(pool);
  cr_assert_eq(fab_pool_live(pool), 3);
  cr_assert_eq(fab_pool_allocs(pool), 3);
  fab_pkt_free(pool, b);
  cr_assert_eq(fab_pool_live(pool), 2);
  cr_assert_eq(fab_pool_allocs(pool), 3, "frees do not count as allocations");
  b = fab_pkt_alloc(pool);
  cr_assert_eq(fab_pool_live(pool), 3);
  cr_assert_eq(fab_pool_allocs(pool), 4);
  fab_pkt_free(pool, a);
  fab_pkt_free(pool, b);
  fab_pkt_free(pool, c);
  cr_assert_eq(fab_pool_live(pool), 0);
  cr_assert_eq(fab_pool_allocs(pool), 4);
  fab_pool_free(pool);
}

Test(pool, distinct_packets_while_live) {
  /* 10 live packets (3 slabs of 4) are 10 different, non-overlapping packets */
  FabPool *pool = fab_pool_new(4);
  FabPkt *p[10];
  for (int i = 0; i < 10; i++) {
    p[i] = fab_pkt_alloc(pool);
    p[i]->flow = (uint32_t)i + 1;
    p[i]->hops = (uint8_t)(i + 1);
  }
  for (int i = 0; i < 10; i++) {
    cr_assert_eq(p[i]->flow, (uint32_t)i + 1, "packet %d was overwritten", i);
    cr_assert_eq(p[i]->hops, i + 1);
    for (int j = 0; j < i; j++) cr_assert_neq(p[i], p[j]);
  }
  for (int i = 0; i < 10; i++) fab_pkt_free(pool, p[i]);
  fab_pool_free(pool);
}

Test(pool, capacity_grows_by_slabs) {
  FabPool *pool = fab_pool_new(4);
  FabPkt *p[9];
  const size_t want[9] = {4, 4, 4, 4, 8, 8, 8, 8, 12};
  for (int i = 0; i < 9; i++) {
    p[i] = fab_pkt_alloc(pool);
    cr_assert_eq(fab_pool_capacity(pool), want[i], "after %d allocs capacity %zu, expected %zu", i + 1,
                 fab_pool_capacity(pool), want[i]);
  }
  for (int i = 0; i < 9; i++) fab_pkt_free(pool, p[i]);
  cr_assert_eq(fab_pool_capacity(pool), 12, "freeing keeps the slabs");
  for (int i = 0; i < 12; i++) p[i % 9] = fab_pkt_alloc(pool);
  cr_assert_eq(fab_pool_capacity(pool), 12, "12 live packets fit in the 3 slabs");
  cr_assert_eq(fab_pool_live(pool), 12);
  fab_pool_free(pool);
}

Test(pool, default_slab_is_4096) {
  FabPool *pool = fab_pool_new(0);
  (void)fab_pkt_alloc(pool);
  cr_assert_eq(fab_pool_capacity(pool), 4096);
  fab_pool_free(pool);
}

Test(pool, reuse_is_lifo) {
  FabPool *pool = fab_pool_new(16);
  FabPkt *a = fab_pkt_alloc(pool), *b = fab_pkt_alloc(pool), *c = fab_pkt_alloc(pool);
  fab_pkt_free(pool, a);
  fab_pkt_free(pool, c);
  fab_pkt_free(pool, b);
  cr_assert_eq(fab_pkt_alloc(pool), b, "last freed, first reused");
  cr_assert_eq(fab_pkt_alloc(pool), c);
  cr_assert_eq(fab_pkt_alloc(pool), a);
  cr_assert_eq(fab_pool_capacity(pool), 16);
  fab_pool_free(pool);
}

Test(pool, many_allocs_and_frees) {
  /* 10000 allocations in waves; live always equals allocated - freed, and
  ** the high-water mark (1000 live) bounds the capacity. */
  FabPool *pool = fab_pool_new(64);
  FabPkt *held[1000];
  size_t n = 0, freed = 0;
  for (int i = 0; i < 10000; i++) {
    held[n] = fab_pkt_alloc(pool);
    held[n]->seq = (uint32_t)i;
    n++;
    if (n == 1000 || i % 3 == 2) { /* free some, most recent first */
      size_t drop = n == 1000 ? 600 : 1;
      for (size_t k = 0; k < drop; k++) {
        fab_pkt_free(pool, held[--n]);
        freed++;
      }
    }
    cr_assert_eq(fab_pool_live(pool), n);
    cr_assert_eq(fab_pool_live(pool), (size_t)i + 1 - freed);
  }
  cr_assert_eq(fab_pool_allocs(pool), 10000);
  cr_assert_leq(fab_pool_capacity(pool), 1024, "capacity %zu above the 1000-packet high-water mark's slabs",
                fab_pool_capacity(pool));
  cr_assert_geq(fab_pool_capacity(pool), n);
  for (size_t k = 1; k < n; k++) /* held packets are distinct: each kept the number written to it */
    cr_assert_lt(held[k - 1]->seq, held[k]->seq);
  while (n) fab_pkt_free(pool, held[--n]);
  cr_assert_eq(fab_pool_live(pool), 0);
  fab_pool_free(pool);
}

/*
** The droppable-front array (sim/deq.h): global numbering that survives
** drops and moves, zeroed pushes, truncation, and memory that follows what
** is live (a sliding window of 1,000 elements over a million pushed holds
** a few thousand slots, not a million).
*/
#include <criterion/criterion.h>
#include <glib.h>
#include "sim/deq.h"

Test(deq, numbers_survive_growth_and_drops) {
  FabDeq q;
  fab_deq_init(&q, sizeof(uint64_t));
  cr_assert_eq(fab_deq_end(&q), 0);
  for (uint64_t i = 0; i < 10000; i++) {
    uint64_t *e = fab_deq_push(&q);
    cr_assert_eq(*e, 0, "a push is zeroed");
    *e = i * 7;
  }
  cr_assert_eq(fab_deq_end(&q), 10000);
  fab_deq_drop(&q, 9000); /* the dead part (9000) outgrew the live one: moved down */
  cr_assert_eq(q.first, 9000);
  cr_assert_eq(q.start, 0);
  cr_assert_eq(q.len, 1000);
  for (uint64_t i = 9000; i < 10000; i++) cr_assert_eq(*(uint64_t *)fab_deq_at(&q, i), i * 7);
  for (uint64_t i = 10000; i < 10100; i++) *(uint64_t *)fab_deq_push(&q) = i * 7;
  for (uint64_t i = 9000; i < 10100; i++) cr_assert_eq(*(uint64_t *)fab_deq_at(&q, i), i * 7);
  fab_deq_clear(&q);
  cr_assert_eq(fab_deq_end(&q), 0);
  cr_assert_null(q.buf);
}

Test(deq, small_drops_do_not_move) {
  FabDeq q;
  fab_deq_init(&q, sizeof(uint32_t));
  for (uint32_t i = 0; i < 100; i++) *(uint32_t *)fab_deq_push(&q) = i;
  fab_deq_drop(&q, 10);
  cr_assert_eq(q.start, 10, "a small dead prefix stays where it is");
  cr_assert_eq(*(uint32_t *)fab_deq_at(&q, 10), 10);
  fab_deq_drop(&q, 100); /* all gone: back to the start of the buffer */
  cr_assert_eq(q.len, 0);
  cr_assert_eq(q.start, 0);
  cr_assert_eq(fab_deq_end(&q), 100);
  *(uint32_t *)fab_deq_push(&q) = 5;
  cr_assert_eq(*(uint32_t *)fab_deq_at(&q, 100), 5, "numbering goes on after a full drop");
  fab_deq_clear(&q);
}

Test(deq, truncate_undoes_pushes) {
  FabDeq q;
  fab_deq_init(&q, sizeof(uint16_t));
  for (uint16_t i = 0; i < 50; i++) *(uint16_t *)fab_deq_push(&q) = i;
  fab_deq_drop(&q, 20);
  fab_deq_truncate(&q, 30);
  cr_assert_eq(fab_deq_end(&q), 30);
  uint16_t *e = fab_deq_push(&q);
  cr_assert_eq(*e, 0, "a slot reused after truncation is zeroed again");
  cr_assert_eq(fab_deq_end(&q), 31);
  fab_deq_clear(&q);
}

Test(deq, memory_follows_the_live_window) {
  FabDeq q;
  fab_deq_init(&q, 32);
  size_t most = 0;
  for (uint64_t i = 0; i < 1000000; i++) {
    *(uint64_t *)fab_deq_push(&q) = i;
    if (i >= 1000) fab_deq_drop(&q, i - 999); /* 1,000 live */
    most = MAX(most, q.cap);
    if (i % 4099 == 0) cr_assert_eq(*(uint64_t *)fab_deq_at(&q, q.first), q.first);
  }
  cr_assert_eq(q.len, 1000);
  cr_assert_leq(most, 16384, "a window of 1000 never needed %zu slots", most);
  fab_deq_clear(&q);
}

Test(deq, steal_hands_over_the_live_part) {
  FabDeq q;
  fab_deq_init(&q, sizeof(uint32_t));
  uint32_t *none = fab_deq_steal(&q); /* empty: still an allocation to free */
  cr_assert_not_null(none);
  g_free(none);
  for (uint32_t i = 0; i < 100; i++) *(uint32_t *)fab_deq_push(&q) = i + 1;
  fab_deq_drop(&q, 10); /* a small drop: the live part does not start the allocation */
  cr_assert_gt(q.start, 0);
  uint32_t *v = fab_deq_steal(&q);
  for (uint32_t i = 0; i < 90; i++) cr_assert_eq(v[i], i + 11, "element %u", i);
  g_free(v);
  cr_assert_null(q.buf);
  cr_assert_eq(fab_deq_end(&q), 0, "empty again, numbered from 0");
  *(uint32_t *)fab_deq_push(&q) = 5;
  cr_assert_eq(*(uint32_t *)fab_deq_at(&q, 0), 5);
  fab_deq_clear(&q);
}

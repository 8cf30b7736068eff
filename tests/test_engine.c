/*
** The engine (sim/engine.h): elements, the event loop, and the event order
** key. Small elements of the test's own record what they see; no network.
*/
#include <criterion/criterion.h>
#include <glib.h>
#include <string.h>

#include "sim/engine.h"

/* An element that logs (its id, the event's arg, the time) of each wake, and
** may schedule follow-ups: arg 1000 + k schedules k events at now + 0 on the
** target `next`, with args 1..k. */
typedef struct Rec {
  FabElem el;
  uint32_t id;
  struct Rec *next;
  GArray *log; /* shared: LogEnt */
} Rec;

typedef struct LogEnt {
  uint32_t id;
  uint64_t arg;
  fab_time_t t;
} LogEnt;

static void rec_wake(FabEngine *eng, void *self, uint64_t arg) {
  Rec *r = self;
  LogEnt e = {r->id, arg, eng->now};
  g_array_append_val(r->log, e);
  if (arg >= 1000 && arg < 2000)
    for (uint64_t k = 1; k <= arg - 1000; k++) fab_engine_after(eng, 0, r->next ? r->next : r, k);
}

static const FabOps rec_ops = {"rec", rec_wake};

static void rec_init(Rec *r, uint32_t id, GArray *log) {
  memset(r, 0, sizeof *r);
  fab_elem_init(&r->el, &rec_ops);
  fab_elem_set_id(&r->el, id);
  r->id = id;
  r->log = log;
}

static FabEngine *engine(void) { return fab_engine_new(1, 64); }

Test(engine, new_engine_is_at_time_zero_and_empty) {
  FabEngine *eng = engine();
  cr_assert_eq(fab_engine_now(eng), 0);
  cr_assert_eq(eng->events, 0);
  cr_assert(fab_engine_run(eng, FAB_TIME_MAX), "an empty run is fine");
  cr_assert_eq(eng->events, 0);
  cr_assert_eq(fab_pool_size(eng->pool), 64);
  fab_engine_free(eng);
  fab_engine_free(NULL);
}

Test(engine, events_run_in_time_order_and_time_advances) {
  FabEngine *eng = engine();
  GArray *log = g_array_new(FALSE, FALSE, sizeof(LogEnt));
  Rec a;
  rec_init(&a, 3, log);
  const fab_time_t at[] = {50 * FAB_NS, 10 * FAB_NS, 30 * FAB_US, 20 * FAB_NS, 5 * FAB_MS};
  for (int i = 0; i < 5; i++) fab_engine_at(eng, at[i], &a, (uint64_t)i);
  cr_assert(fab_engine_run(eng, FAB_TIME_MAX));
  const uint64_t want[] = {1, 3, 0, 2, 4};
  cr_assert_eq(log->len, 5);
  for (int i = 0; i < 5; i++) {
    LogEnt *e = &g_array_index(log, LogEnt, i);
    cr_assert_eq(e->arg, want[i], "event %d: arg %lu", i, (unsigned long)e->arg);
    cr_assert_eq(e->t, at[want[i]]);
  }
  cr_assert_eq(fab_engine_now(eng), 5 * FAB_MS);
  cr_assert_eq(eng->events, 5);
  g_array_free(log, TRUE);
  fab_engine_free(eng);
}

Test(engine, run_stops_at_until_and_resumes) {
  FabEngine *eng = engine();
  GArray *log = g_array_new(FALSE, FALSE, sizeof(LogEnt));
  Rec a;
  rec_init(&a, 1, log);
  for (int i = 1; i <= 4; i++) fab_engine_at(eng, (fab_time_t)i * FAB_US, &a, (uint64_t)i);
  cr_assert(fab_engine_run(eng, 2 * FAB_US), "events at or before `until` run");
  cr_assert_eq(log->len, 2);
  cr_assert_eq(fab_evq_size(eng->evq), 2);
  cr_assert(fab_engine_run(eng, FAB_TIME_MAX));
  cr_assert_eq(log->len, 4);
  g_array_free(log, TRUE);
  fab_engine_free(eng);
}

static void stopper_wake(FabEngine *eng, void *self, uint64_t arg) {
  (*(int *)((char *)self + sizeof(FabElem)))++;
  if (arg == 2) fab_engine_stop(eng);
}

static const FabOps stopper_ops = {"stopper", stopper_wake};

Test(engine, stop_returns_after_the_current_event) {
  struct {
    FabElem el;
    int n;
  } s = {{0}, 0};
  fab_elem_init(&s.el, &stopper_ops);
  FabEngine *eng = engine();
  for (uint64_t i = 1; i <= 5; i++) fab_engine_at(eng, i, &s, i);
  cr_assert(fab_engine_run(eng, FAB_TIME_MAX));
  cr_assert_eq(s.n, 2, "stopped after the event that asked");
  cr_assert(fab_engine_run(eng, FAB_TIME_MAX), "a new run goes on");
  cr_assert_eq(s.n, 5);
  fab_engine_free(eng);
}

Test(engine, element_ids_and_tie_keys) {
  FabElem e;
  fab_elem_init(&e, &rec_ops);
  cr_assert_eq(fab_elem_id(&e), 0);
  fab_elem_set_id(&e, 12345);
  cr_assert_eq(fab_elem_id(&e), 12345);
  cr_assert_eq(e.tie, (uint64_t)12345 << FAB_TIE_SEQ_BITS, "the counter starts at 0");
  fab_elem_set_id(&e, FAB_ELEM_MAX_ID);
  cr_assert_eq(fab_elem_id(&e), FAB_ELEM_MAX_ID);
}

/* Equal times: the scheduling element's id first, then its own counter.
** Elements 7 and 2 each wake at one time (set up before the loop: each its
** own scheduler) and schedule three events at that same time on a sink. 2
** runs first; its three events (keys 2.1, 2.2, 2.3) come before 7's wake
** (key 7.0); then 7's three. */
Test(engine, equal_times_ordered_by_scheduler_id_then_its_counter) {
  FabEngine *eng = engine();
  GArray *log = g_array_new(FALSE, FALSE, sizeof(LogEnt));
  Rec sink, a, b;
  rec_init(&sink, 99, log);
  rec_init(&a, 7, log);
  rec_init(&b, 2, log);
  a.next = b.next = &sink;
  fab_engine_at(eng, 10, &a, 1003); /* a is scheduled first in wall order ... */
  fab_engine_at(eng, 10, &b, 1003); /* ... b second */
  cr_assert(fab_engine_run(eng, FAB_TIME_MAX));
  const uint32_t want_id[] = {2, 99, 99, 99, 7, 99, 99, 99};
  const uint64_t want_arg[] = {1003, 1, 2, 3, 1003, 1, 2, 3};
  cr_assert_eq(log->len, 8);
  for (int i = 0; i < 8; i++) {
    LogEnt *e = &g_array_index(log, LogEnt, i);
    cr_assert(e->id == want_id[i] && e->arg == want_arg[i], "event %d: element %u arg %lu, expected %u %lu", i, e->id,
              (unsigned long)e->arg, want_id[i], (unsigned long)want_arg[i]);
    cr_assert_eq(e->t, 10);
  }
  g_array_free(log, TRUE);
  fab_engine_free(eng);
}

/* The order does not depend on the order in which the elements scheduled:
** the same events scheduled by the same elements in another global order
** run identically (what makes partitions across processes replay). */
static GArray *run_three(bool reversed) {
  FabEngine *eng = engine();
  GArray *log = g_array_new(FALSE, FALSE, sizeof(LogEnt));
  static Rec sink, r[3];
  rec_init(&sink, 50, log);
  for (uint32_t i = 0; i < 3; i++) {
    rec_init(&r[i], 10 + i, log);
    r[i].next = &sink;
  }
  for (int k = 0; k < 3; k++) {
    uint32_t i = reversed ? 2 - (uint32_t)k : (uint32_t)k;
    fab_engine_at(eng, 100, &r[i], 1002);
  }
  cr_assert(fab_engine_run(eng, FAB_TIME_MAX));
  fab_engine_free(eng);
  return log;
}

Test(engine, order_is_independent_of_global_scheduling_order) {
  GArray *a = run_three(false), *b = run_three(true);
  cr_assert_eq(a->len, 9);
  cr_assert_eq(a->len, b->len);
  for (guint i = 0; i < a->len; i++) {
    LogEnt *x = &g_array_index(a, LogEnt, i), *y = &g_array_index(b, LogEnt, i);
    cr_assert(x->id == y->id && x->arg == y->arg && x->t == y->t, "event %u differs", i);
  }
  g_array_free(a, TRUE);
  g_array_free(b, TRUE);
}

/* The scheduler of an event scheduled inside a handler is the running
** element, whatever the target: the key carries the runner's id. */
static void probe_wake(FabEngine *eng, void *self, uint64_t arg) {
  if (arg == 0) {
    uint64_t before = eng->cur->tie;
    fab_engine_after(eng, 5, self, 1);
    cr_assert_eq(eng->cur->tie, before + 2, "the running element's counter moved (by 2: engine.h)");
  }
}

static const FabOps probe_ops = {"probe", probe_wake};

Test(engine, the_running_element_schedules) {
  FabElem p;
  fab_elem_init(&p, &probe_ops);
  fab_elem_set_id(&p, 4);
  FabEngine *eng = engine();
  fab_engine_at(eng, 0, &p, 0);
  cr_assert_eq(p.tie, ((uint64_t)4 << FAB_TIE_SEQ_BITS) + 2, "outside the loop the target schedules for itself");
  cr_assert_null(eng->cur);
  cr_assert(fab_engine_run(eng, FAB_TIME_MAX));
  cr_assert_null(eng->cur, "no element runs outside the loop");
  cr_assert_eq(eng->events, 2);
  fab_engine_free(eng);
}

static void tick(FabEngine *eng, void *ctx) { (*(int *)ctx)++; }

static void spin_wake(FabEngine *eng, void *self, uint64_t arg) {
  if (arg) fab_engine_after(eng, 1, self, arg - 1);
}

static const FabOps spin_ops = {"spin", spin_wake};

Test(engine, tick_every_2_to_the_20_events) {
  FabElem s;
  fab_elem_init(&s, &spin_ops);
  FabEngine *eng = engine();
  int ticks = 0;
  eng->tick = tick;
  eng->tick_ctx = &ticks;
  fab_engine_at(eng, 0, &s, (1u << 21) + 5);
  cr_assert(fab_engine_run(eng, FAB_TIME_MAX));
  cr_assert_eq(eng->events, (1u << 21) + 6);
  cr_assert_eq(ticks, 2);
  fab_engine_free(eng);
}

Test(engine, time_never_goes_back) {
  /* a raw push into the past behind the engine's back: the loop refuses it */
  FabElem s;
  fab_elem_init(&s, &spin_ops);
  FabEngine *eng = engine();
  fab_engine_at(eng, 100, &s, 0);
  cr_assert(fab_engine_run(eng, FAB_TIME_MAX));
  fab_evq_push(eng->evq, 50, 0, &s, 0);
  cr_assert_not(fab_engine_run(eng, FAB_TIME_MAX), "an event before now fails the run");
  fab_engine_free(eng);
}

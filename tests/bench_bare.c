/*
** The bare event loop of a real run: what fabsim's engine and event queue
** cost when the models do nothing (issue 14: the loop within 1.5x of it).
**
** `FABSIM_EVENT_TRACE=FILE fabsim run SCENARIO` writes every event the run
** pushed, as (events popped by then, time, tie key), three 64-bit words
** (tools/libfabsim/driver.c). This program loads the file, then replays it
** through the same engine loop (fab_engine_run) and the same event queue:
** the events pushed before the loop first, then, as each event is popped,
** the ones the run pushed while handling it, at the same times with the
** same keys, so the queue holds what it held in the run and pops in the
** same order. Its one element does nothing but push them. What is left
** out is the models' work, which is what the comparison is for.
**
** Usage: bench_bare FILE [ROUNDS]   (default 3 rounds; the best is kept)
** Prints: bare events=N pushes=M loop_s=S ns_per_event=X
** Exit status 1 if the file cannot be read or the replay pops out of the
** run's order (a push in the past, or not every event popped).
**
** Built by tests/meson.build (not run by `meson test`); tools/bench runs it
** with BARE=1.
*/
#include "sim/engine.h"
#include "sim/evq.h"
#include "sim/heap.h"

#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  FabElem el;
  const uint64_t *rec; /* 3 words per push */
  size_t n, at;        /* pushes, the next one to make */
  bool bad;
} Replayer;

/* Push the run's events made while the event numbered `popped` ran. */
static void push_from(FabEngine *eng, Replayer *r, uint64_t popped) {
  while (r->at < r->n && r->rec[3 * r->at] == popped) {
    const uint64_t *x = r->rec + 3 * r->at++;
    if (x[1] < eng->now) {
      r->bad = true;
      return;
    }
    fab_evq_push(eng->evq, x[1], x[2], &r->el, 0);
  }
}

static void replay_wake(FabEngine *eng, void *self, uint64_t arg) {
  (void)arg;
  push_from(eng, self, eng->events);
}

static const FabOps replay_ops = {"bare", replay_wake, NULL, false};

int main(int argc, char **argv) {
  fab_heap_hugepages(0, NULL); /* as fabsim's own main does, so the two loops run on the same pages */
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: bench_bare FILE [ROUNDS]\n");
    return 2;
  }
  int rounds = argc == 3 ? atoi(argv[2]) : 3;
  gchar *buf;
  gsize len;
  GError *err = NULL;
  if (!g_file_get_contents(argv[1], &buf, &len, &err)) {
    fprintf(stderr, "bench_bare: %s\n", err->message);
    g_error_free(err);
    return 1;
  }
  if (len % (3 * sizeof(uint64_t)) || len == 0) {
    fprintf(stderr, "bench_bare: %s: not a trace of 24-byte records\n", argv[1]);
    g_free(buf);
    return 1;
  }
  size_t n = len / (3 * sizeof(uint64_t));
  double best = 0;
  uint64_t events = 0;
  int rc = 0;
  for (int k = 0; k < MAX(rounds, 1) && rc == 0; k++) {
    FabEngine *eng = fab_engine_new(1, 64);
    Replayer r = {.rec = (const uint64_t *)buf, .n = n};
    fab_elem_init(&r.el, &replay_ops);
    push_from(eng, &r, 0); /* before the loop */
    gint64 t0 = g_get_monotonic_time();
    bool ok = fab_engine_run(eng, FAB_TIME_MAX);
    double s = (double)(g_get_monotonic_time() - t0) / 1e6;
    if (!ok || r.bad || r.at != n || fab_evq_size(eng->evq)) {
      fprintf(stderr, "bench_bare: %s: the replay left the run's order (%zu of %zu pushes made)\n", argv[1], r.at, n);
      rc = 1;
    }
    events = eng->events;
    if (k == 0 || s < best) best = s;
    fab_engine_free(eng);
  }
  if (rc == 0)
    printf("bare events=%" PRIu64 " pushes=%zu loop_s=%.6f ns_per_event=%.2f\n", events, n, best,
           events ? best * 1e9 / (double)events : 0.0);
  g_free(buf);
  return rc;
}

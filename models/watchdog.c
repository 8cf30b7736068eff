/* Deadlock and stall detection. See watchdog.h. */
#include "watchdog.h"
#include <glib.h>

struct FabWatchdog {
  FabElem el;
  fab_time_t period;
  FabSwitch **sw;
  uint32_t nsw;
  FabPort **ports;
  uint32_t nports;
  FabWatchdogHooks hooks;
  void *ctx;
  uint64_t last;            /* the progress count at the last look */
  bool stalled;
  GPtrArray *cycle;         /* FabPort *: the deadlock found, in order */
};

static void watch(FabEngine *eng, void *self, uint64_t arg);
static const FabOps watchdog_ops = {"watchdog", watch};

FabWatchdog *fab_watchdog_new(fab_time_t period, FabSwitch *const *switches, uint32_t nsw, FabPort *const *ports,
                              uint32_t nports, const FabWatchdogHooks *hooks, void *ctx) {
  FabWatchdog *w = g_new0(FabWatchdog, 1);
  fab_elem_init(&w->el, &watchdog_ops);
  w->period = period;
  w->sw = g_memdup2(switches, sizeof(FabSwitch *) * nsw);
  w->nsw = nsw;
  w->ports = g_memdup2(ports, sizeof(FabPort *) * nports);
  w->nports = nports;
  w->hooks = *hooks;
  w->ctx = ctx;
  w->cycle = g_ptr_array_new();
  return w;
}

void fab_watchdog_free(FabWatchdog *w) {
  if (!w) return;
  g_free(w->sw);
  g_free(w->ports);
  g_ptr_array_free(w->cycle, TRUE);
  g_free(w);
}

FabElem *fab_watchdog_elem(FabWatchdog *w) { return &w->el; }
bool fab_watchdog_stalled(const FabWatchdog *w) { return w->stalled; }

FabPort *const *fab_watchdog_cycle(const FabWatchdog *w, uint32_t *n) {
  *n = w->cycle->len;
  return (FabPort *const *)w->cycle->pdata;
}

void fab_watchdog_start(FabEngine *eng, FabWatchdog *w) { fab_engine_after(eng, w->period, w, w->period); }

typedef struct Dfs {
  const FabWatchdog *w;
  uint32_t prio;
  GHashTable *state;  /* FabPort * -> 1 on the stack, 2 done */
  GPtrArray *stack;
  GPtrArray *cycle;
} Dfs;

static bool blocked(const FabWatchdog *w, const FabPort *p, uint32_t q) {
  return w->hooks.port_blocked ? w->hooks.port_blocked(w->ctx, p, q) : fab_port_blocked(p, q);
}

/* Follow the waits of blocked port p; true when a cycle was found (in d->cycle). */
static bool dfs(Dfs *d, FabPort *p) {
  g_hash_table_insert(d->state, p, GUINT_TO_POINTER(1));
  g_ptr_array_add(d->stack, p);
  FabSwitch *t = fab_switch_of(p->peer->owner);
  if (t) {
    uint32_t np = fab_switch_nports(t);
    FabPort **holders = g_new(FabPort *, np);
    uint32_t n = d->w->hooks.holders ? d->w->hooks.holders(d->w->ctx, p, d->prio, holders, np)
                                     : fab_switch_holders(t, p->peer->index, d->prio, holders, np);
    bool found = false;
    for (uint32_t i = 0; i < n && !found; i++) {
      FabPort *e = holders[i];
      if (!blocked(d->w, e, d->prio)) continue;
      guint st = GPOINTER_TO_UINT(g_hash_table_lookup(d->state, e));
      if (st == 1) { /* back edge: the cycle is the stack from e on */
        guint at = 0;
        while (g_ptr_array_index(d->stack, at) != e) at++;
        for (; at < d->stack->len; at++) g_ptr_array_add(d->cycle, g_ptr_array_index(d->stack, at));
        found = true;
      } else if (st == 0) {
        found = dfs(d, e);
      }
    }
    g_free(holders);
    if (found) return true;
  }
  g_ptr_array_remove_index(d->stack, d->stack->len - 1);
  g_hash_table_insert(d->state, p, GUINT_TO_POINTER(2));
  return false;
}

static bool find_deadlock(FabWatchdog *w) {
  uint32_t nprio = w->nsw ? fab_switch_cfg(w->sw[0])->nprio : 0;
  for (uint32_t prio = 0; prio < nprio; prio++) {
    Dfs d = {w, prio, g_hash_table_new(NULL, NULL), g_ptr_array_new(), w->cycle};
    bool found = false;
    for (uint32_t s = 0; s < w->nsw && !found; s++) {
      FabSwitch *sw = w->sw[s];
      for (uint32_t i = 0; i < fab_switch_nports(sw) && !found; i++) {
        FabPort *p = fab_switch_port_at(sw, i);
        if (blocked(w, p, prio) && !g_hash_table_contains(d.state, p)) found = dfs(&d, p);
      }
    }
    g_hash_table_destroy(d.state);
    g_ptr_array_free(d.stack, TRUE);
    if (found) return true;
  }
  return false;
}

static bool any_blocked(const FabWatchdog *w) {
  for (uint32_t i = 0; i < w->nports; i++)
    for (uint32_t q = 0; q < w->ports[i]->nprio; q++)
      if (fab_port_blocked(w->ports[i], q)) return true;
  return false;
}

bool fab_watchdog_look(FabWatchdog *w) {
  if (w->hooks.finished(w->ctx)) return false;
  uint64_t now = w->hooks.progress(w->ctx);
  if (now == w->last && (w->hooks.blocked ? w->hooks.blocked(w->ctx, any_blocked(w)) : any_blocked(w))) {
    w->stalled = true;
    if (w->hooks.gather) w->hooks.gather(w->ctx);
    find_deadlock(w);
    return false;
  }
  w->last = now;
  return true;
}

static void watch(FabEngine *eng, void *self, uint64_t arg) {
  FabWatchdog *w = self;
  if (fab_watchdog_look(w)) fab_engine_after(eng, arg, w, arg);
  else if (w->stalled) fab_engine_stop(eng);
}

fab_time_t fab_watchdog_period(const FabWatchdog *w) { return w->period; }

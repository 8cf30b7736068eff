/* Conservative windows over partitions of one simulation. See par.h. */
#include "par.h"
#include <glib.h>

typedef struct Out {
  fab_time_t t;
  uint64_t tie;
  void *target;
  uint64_t arg;
  uint32_t to; /* the partition that runs the target */
} Out;

struct FabPar {
  uint32_t n;
  FabEngine **eng;
  uint8_t *part_of; /* by element id */
  uint32_t nids;
  fab_time_t lookahead;
  GArray **box;     /* per partition: Out, what it scheduled for others this window */
  uint64_t windows, handed;
};

FabPar *fab_par_new(uint32_t n, uint64_t seed, size_t obj_size, const uint8_t *part_of, uint32_t nids,
                    fab_time_t lookahead) {
  g_assert(n >= 1 && n <= 255 && lookahead > 0);
  FabPar *par = g_new0(FabPar, 1);
  par->n = n;
  par->nids = nids;
  par->part_of = g_memdup2(part_of, nids);
  for (uint32_t i = 0; i < nids; i++) g_assert(part_of[i] < n);
  par->lookahead = lookahead;
  par->eng = g_new0(FabEngine *, n);
  par->box = g_new0(GArray *, n);
  for (uint32_t k = 0; k < n; k++) {
    par->eng[k] = fab_engine_new(seed, obj_size);
    par->eng[k]->par = par;
    par->eng[k]->part = k;
    par->box[k] = g_array_new(FALSE, FALSE, sizeof(Out));
    if (k) { /* one pool: a packet made in one partition is freed in another */
      fab_pool_free(par->eng[k]->pool);
      par->eng[k]->pool = par->eng[0]->pool;
    }
  }
  return par;
}

void fab_par_free(FabPar *par) {
  if (!par) return;
  for (uint32_t k = par->n; k-- > 0;) {
    if (k) par->eng[k]->pool = NULL;
    fab_engine_free(par->eng[k]);
    g_array_free(par->box[k], TRUE);
  }
  g_free(par->eng);
  g_free(par->box);
  g_free(par->part_of);
  g_free(par);
}

FabEngine *fab_par_engine(FabPar *par, uint32_t k) {
  g_assert(k < par->n);
  return par->eng[k];
}

uint32_t fab_par_part_of(const FabPar *par, const void *elem) {
  const FabElem *e = elem;
  if (e->ops->home) e = e->ops->home(e);
  uint32_t id = fab_elem_id(e);
  g_assert(id < par->nids);
  return par->part_of[id];
}

bool fab_par_local(const FabEngine *eng, const void *elem) { return fab_par_part_of(eng->par, elem) == eng->part; }

void fab_par_push(FabEngine *eng, fab_time_t t, uint64_t tie, void *target, uint64_t arg) {
  FabPar *par = eng->par;
  uint32_t to = fab_par_part_of(par, target);
  if (to == eng->part) {
    fab_evq_push(eng->evq, t, tie, target, arg);
    return;
  }
  Out o = {t, tie, target, arg, to};
  g_array_append_val(par->box[eng->part], o);
}

/* Hand every outbox over; each event must be later than `end` (the window
** just run; FAB_TIME_MAX before the first, when anything goes). */
static bool hand_over(FabPar *par, fab_time_t end, bool first) {
  bool ok = true;
  for (uint32_t k = 0; k < par->n; k++) {
    GArray *b = par->box[k];
    for (guint i = 0; i < b->len; i++) {
      const Out *o = &g_array_index(b, Out, i);
      if (!first && o->t <= end) ok = false; /* a delay shorter than the lookahead */
      fab_evq_push(par->eng[o->to]->evq, o->t, o->tie, o->target, o->arg);
    }
    par->handed += b->len;
    g_array_set_size(b, 0);
  }
  return ok;
}

bool fab_par_run(FabPar *par, fab_time_t until) {
  if (!hand_over(par, 0, true)) return false;
  for (;;) {
    fab_time_t T = FAB_TIME_MAX;
    for (uint32_t k = 0; k < par->n; k++) {
      fab_time_t t = fab_evq_peek_time(par->eng[k]->evq);
      if (t < T) T = t;
    }
    if (T == FAB_TIME_MAX || T > until) return true;
    fab_time_t end = T > FAB_TIME_MAX - par->lookahead ? FAB_TIME_MAX : T + par->lookahead - 1;
    if (end > until) end = until;
    for (uint32_t k = 0; k < par->n; k++)
      if (!fab_engine_run(par->eng[k], end)) return false;
    par->windows++;
    if (!hand_over(par, end, false)) return false;
  }
}

uint64_t fab_par_events(const FabPar *par) {
  uint64_t e = 0;
  for (uint32_t k = 0; k < par->n; k++) e += par->eng[k]->events;
  return e;
}

uint64_t fab_par_windows(const FabPar *par) { return par->windows; }
uint64_t fab_par_handed(const FabPar *par) { return par->handed; }

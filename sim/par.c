/* Conservative windows over partitions of one simulation. See par.h. */
#include "par.h"
#include <glib.h>
#include <stdatomic.h>
#include <string.h>

typedef struct Out {
  fab_time_t t;
  uint64_t tie;
  void *target;
  uint64_t arg;
} Out;

/* A barrier for the threads of a run: the last to come releases the others,
** who spin a while (the window of the other threads is usually short) and
** then sleep. */
typedef struct Bar {
  uint32_t n;
  uint32_t spin;     /* polls before sleeping: BAR_SPIN, or none when threads outnumber the processors */
  atomic_uint count, gen;
  atomic_uint sleepers; /* changed under m (atomic only for tools that do not see GLib's futex locks) */
  GMutex m;
  GCond c;
} Bar;

#define BAR_SPIN 20000 /* polls before sleeping: ~tens of microseconds (an assumption: not tuned per machine) */

static void bar_wait(Bar *b) {
  unsigned g = atomic_load_explicit(&b->gen, memory_order_acquire);
  if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) + 1 == b->n) {
    atomic_store_explicit(&b->count, 0, memory_order_relaxed);
    atomic_store_explicit(&b->gen, g + 1, memory_order_release);
    g_mutex_lock(&b->m);
    if (atomic_load_explicit(&b->sleepers, memory_order_relaxed)) g_cond_broadcast(&b->c);
    g_mutex_unlock(&b->m);
    return;
  }
  for (uint32_t i = 0; i < b->spin; i++) {
    if (atomic_load_explicit(&b->gen, memory_order_acquire) != g) return;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  g_mutex_lock(&b->m);
  atomic_fetch_add_explicit(&b->sleepers, 1, memory_order_relaxed);
  while (atomic_load_explicit(&b->gen, memory_order_acquire) == g) g_cond_wait(&b->c, &b->m);
  atomic_fetch_sub_explicit(&b->sleepers, 1, memory_order_relaxed);
  g_mutex_unlock(&b->m);
}

struct FabPar {
  uint32_t n;
  FabEngine **eng;
  uint8_t *part_of;   /* by element id */
  uint32_t nids;
  fab_time_t lookahead;
  /* What one partition scheduled for another: box[(set x n + from) x n + to], Out. A window writes into one
  ** set while the next drains the other: each partition drains its own inboxes at the start of a window,
  ** while the others may already be writing theirs. */
  GArray **box;
  fab_time_t *boxmin; /* [set x n + from]: the earliest event in from's outboxes of that set */
  uint32_t set;       /* the set the running window writes */
  fab_time_t not_before; /* what is drained may not be earlier than this (after the window that wrote it) */
  uint64_t *handed;   /* per partition: events it took from the others */
  uint64_t windows;
  FabParHook hook;    /* after each window (NULL: none) */
  void *hook_ctx;
  bool stop;          /* fab_par_stop: end after this window */
  fab_time_t sync;    /* fab_par_sync_at: a window ends just before it (FAB_TIME_MAX: none) */
  /* threads (fab_par_set_threads): partition k runs on thread k, 0 the caller's */
  bool threads;
  Bar bar;
  fab_time_t end;     /* the window to run (set by thread 0 before the barrier) */
  bool quit;          /* no more windows */
  bool *bad;          /* per partition: its engine's time went back, or it was handed an event in its past */
  /* over processes (fab_par_set_net): only partition net.self runs here */
  bool over_net;
  FabParNet net;
  FabParCodec codec;
  GByteArray **out, **in; /* per process: this window's messages */
  GByteArray *payload;    /* this window's payload of the owner, sent to every other process */
  fab_time_t next;        /* this process's earliest event after the window, as its messages say */
};

static inline GArray *box_at(const FabPar *par, uint32_t set, uint32_t from, uint32_t to) {
  return par->box[((size_t)set * par->n + from) * par->n + to];
}

FabPar *fab_par_new(uint32_t n, uint64_t seed, size_t obj_size, const uint8_t *part_of, uint32_t nids,
                    fab_time_t lookahead) {
  g_assert(n >= 1 && n <= 255 && lookahead > 0);
  FabPar *par = g_new0(FabPar, 1);
  par->n = n;
  par->nids = nids;
  par->part_of = g_memdup2(part_of, nids);
  for (uint32_t i = 0; i < nids; i++) g_assert(part_of[i] < n || part_of[i] == FAB_PAR_ANY);
  par->lookahead = lookahead;
  par->eng = g_new0(FabEngine *, n);
  par->box = g_new0(GArray *, 2 * (size_t)n * n);
  for (size_t i = 0; i < 2 * (size_t)n * n; i++) par->box[i] = g_array_new(FALSE, FALSE, sizeof(Out));
  par->boxmin = g_new(fab_time_t, 2 * (size_t)n);
  for (size_t i = 0; i < 2 * (size_t)n; i++) par->boxmin[i] = FAB_TIME_MAX;
  par->handed = g_new0(uint64_t, n);
  par->bad = g_new0(bool, n);
  for (uint32_t k = 0; k < n; k++) {
    par->eng[k] = fab_engine_new(seed, obj_size);
    par->eng[k]->par = par;
    par->eng[k]->part = k;
    fab_pool_open(par->eng[k]->pool); /* a packet made in one partition is freed in another */
  }
  par->not_before = 0; /* before the run, anything goes */
  par->sync = FAB_TIME_MAX;
  par->bar.n = n;
  g_mutex_init(&par->bar.m);
  g_cond_init(&par->bar.c);
  return par;
}

void fab_par_free(FabPar *par) {
  if (!par) return;
  for (uint32_t k = 0; k < par->n; k++) fab_engine_free(par->eng[k]);
  for (size_t i = 0; i < 2 * (size_t)par->n * par->n; i++) g_array_free(par->box[i], TRUE);
  g_mutex_clear(&par->bar.m);
  g_cond_clear(&par->bar.c);
  g_free(par->eng);
  g_free(par->box);
  g_free(par->boxmin);
  g_free(par->handed);
  g_free(par->bad);
  g_free(par->part_of);
  for (uint32_t k = 0; par->out && k < par->n; k++) {
    g_byte_array_unref(par->out[k]);
    g_byte_array_unref(par->in[k]);
  }
  g_free(par->out);
  g_free(par->in);
  if (par->payload) g_byte_array_unref(par->payload);
  g_free(par);
}

FabEngine *fab_par_engine(FabPar *par, uint32_t k) {
  g_assert(k < par->n);
  return par->eng[k];
}

uint32_t fab_par_parts(const FabPar *par) { return par->n; }

uint32_t fab_par_part_of(const FabPar *par, const void *elem) {
  const FabElem *e = elem;
  if (e->ops->home) e = e->ops->home(e);
  uint32_t id = fab_elem_id(e);
  g_assert(id < par->nids);
  return par->part_of[id];
}

bool fab_par_local(const FabEngine *eng, const void *elem) {
  uint32_t k = fab_par_part_of(eng->par, elem);
  return k == eng->part || k == FAB_PAR_ANY;
}

void fab_par_push(FabEngine *eng, fab_time_t t, uint64_t tie, void *target, uint64_t arg) {
  uint32_t to = fab_par_part_of(eng->par, target);
  fab_par_push_to(eng, to == FAB_PAR_ANY ? eng->part : to, t, tie, target, arg); /* one anywhere: here */
}

void fab_par_push_to(FabEngine *eng, uint32_t to, fab_time_t t, uint64_t tie, void *target, uint64_t arg) {
  FabPar *par = eng->par;
  uint32_t from = eng->part;
#ifdef FAB_DEBUG_CHECKS
  if (to != fab_par_part_of(par, target) && fab_par_part_of(par, target) != FAB_PAR_ANY) __builtin_trap();
#endif
  if (to == from) {
    fab_evq_push(eng->evq, t, tie, target, arg);
    return;
  }
  if (par->over_net && !eng->cur) return; /* every process does the same: that partition's own makes it */
  Out o = {t, tie, target, arg};
  g_array_append_val(box_at(par, par->set, from, to), o);
  fab_time_t *min = &par->boxmin[par->set * par->n + from];
  if (t < *min) *min = t;
}

void fab_par_lock_init(const FabPar *par, FabLock *l) {
  atomic_init(&l->held, false);
  l->spin = par->n <= g_get_num_processors() ? BAR_SPIN : 0;
}

void fab_par_set_hook(FabPar *par, FabParHook hook, void *ctx) {
  par->hook = hook;
  par->hook_ctx = ctx;
}

void fab_par_set_threads(FabPar *par, bool on) { par->threads = on; }

void fab_par_stop(FabPar *par) { par->stop = true; }

void fab_par_sync_at(FabPar *par, fab_time_t t) {
  g_assert(t > 0);
  par->sync = t;
}

/* Partition k takes what the others scheduled for it in set `set`: each
** event must be at `from` or later (after the window that wrote it; 0 for
** what was scheduled before the run, when anything goes). */
static void drain(FabPar *par, uint32_t set, uint32_t k, fab_time_t from) {
  FabEvq *q = par->eng[k]->evq;
  for (uint32_t j = 0; j < par->n; j++) {
    GArray *b = box_at(par, set, j, k);
    for (guint i = 0; i < b->len; i++) {
      const Out *o = &g_array_index(b, Out, i);
      if (o->t < from) par->bad[k] = true; /* a delay shorter than the lookahead */
      fab_evq_push(q, o->t, o->tie, o->target, o->arg);
    }
    par->handed[k] += b->len;
    g_array_set_size(b, 0);
  }
}

/* The next window's end, or false when the run is over: no event left (nor
** a sync point), the next later than `until`, or a stop. The events still
** in the outboxes of the set just written count. A window ends at the sync
** point - 1 at the latest (possibly with nothing to run). */
static bool next_window(FabPar *par, fab_time_t until, fab_time_t *end) {
  fab_time_t T = FAB_TIME_MAX;
  for (uint32_t k = 0; k < par->n; k++) {
    fab_time_t t = fab_evq_peek_time(par->eng[k]->evq);
    T = MIN(T, MIN(t, par->boxmin[par->set * par->n + k]));
  }
  fab_time_t first = MIN(T, par->sync);
  if (par->stop || first == FAB_TIME_MAX || first > until) return false;
  *end = T > FAB_TIME_MAX - par->lookahead ? FAB_TIME_MAX : T + par->lookahead - 1;
  if (*end >= par->sync) *end = par->sync - 1; /* the hook sees the state before anything at `sync` */
  if (*end > until) *end = until;
  return true;
}

/* Switch the outboxes: the set just written is drained by the next window,
** which writes the other. Returns the set to drain. */
static uint32_t flip(FabPar *par) {
  uint32_t old = par->set;
  par->set ^= 1;
  for (uint32_t k = 0; k < par->n; k++) {
    par->boxmin[old * par->n + k] = FAB_TIME_MAX; /* drained this window */
    par->boxmin[par->set * par->n + k] = FAB_TIME_MAX;
  }
  return old;
}

/* Partition k's part of a window: take its inboxes, run to `end`. */
static void run_part(FabPar *par, uint32_t k, uint32_t set, fab_time_t from, fab_time_t end) {
  drain(par, set, k, from);
  if (!fab_engine_run(par->eng[k], end)) par->bad[k] = true;
}

/* After every engine ran the window to `end`: see whether one went wrong
** or was stopped, tell the hook. false: the run is unusable. */
static bool close_window(FabPar *par, fab_time_t end) {
  bool ok = true;
  for (uint32_t k = 0; k < par->n; k++) {
    if (par->bad[k]) ok = false;
    if (par->eng[k]->stopped) par->stop = true;
  }
  par->windows++;
  par->not_before = end == FAB_TIME_MAX ? end : end + 1;
  if (ok && par->hook) par->hook(par, end, par->hook_ctx); /* what it schedules goes out with the window's */
  return ok;
}

typedef struct Worker {
  FabPar *par;
  uint32_t k;
} Worker;

static gpointer worker(gpointer data) {
  const Worker *w = data;
  FabPar *par = w->par;
  for (;;) {
    bar_wait(&par->bar); /* a window is published, or the end */
    if (par->quit) return NULL;
    run_part(par, w->k, par->set ^ 1, par->not_before, par->end);
    bar_wait(&par->bar); /* every partition ran it */
  }
}

/* Hand over whatever is left in the outboxes (a run that stopped or reached
** `until`): the engines' queues then hold every pending event. */
static void settle(FabPar *par) {
  uint32_t set = flip(par);
  for (uint32_t k = 0; k < par->n; k++) drain(par, set, k, par->not_before);
}

void fab_par_set_net(FabPar *par, const FabParNet *net, const FabParCodec *codec) {
  g_assert(net->n == par->n && net->self < par->n);
  par->over_net = true;
  par->net = *net;
  par->codec = *codec;
  par->out = g_new(GByteArray *, par->n);
  par->in = g_new(GByteArray *, par->n);
  par->payload = g_byte_array_new();
  for (uint32_t k = 0; k < par->n; k++) {
    par->out[k] = g_byte_array_new();
    par->in[k] = g_byte_array_new();
  }
}

/* An event on the way to another process: time, key, target's number, arg
** (or the carried object's bytes after it). */
typedef struct Wire {
  fab_time_t t;
  uint64_t tie;
  uint64_t arg;
  uint32_t target;
  uint32_t carried; /* bytes of object after it */
} Wire;

/* What every message of a window begins with: the sender's earliest event
** left after the window (in its queue, or among those it sends anyone),
** whether it stopped or went wrong, its events for the receiver and the
** size of its payload (the same to every process). */
typedef struct Head {
  fab_time_t next;
  uint32_t stop, bad;
  uint64_t nev, payload;
} Head;

/* This window's events for other processes into their messages (a carried
** object fixed up and given back to the pool), then the owner's payload. */
static void net_pack(FabPar *par) {
  uint32_t me = par->net.self;
  FabEngine *eng = par->eng[me];
  size_t osz = fab_pool_size(eng->pool);
  GByteArray *payload = par->payload;
  g_byte_array_set_size(payload, 0);
  if (par->codec.pack) par->codec.pack(par->codec.ctx, payload);
  fab_time_t next = par->next = MIN(fab_evq_peek_time(eng->evq), par->boxmin[par->set * par->n + me]);
  for (uint32_t k = 0; k < par->n; k++) {
    GByteArray *m = par->out[k];
    g_byte_array_set_size(m, 0);
    if (k == me) continue;
    GArray *b = box_at(par, par->set, me, k);
    Head h = {next, par->stop || eng->stopped, par->bad[me], b->len, payload->len};
    g_byte_array_append(m, (const guint8 *)&h, sizeof h);
    for (guint i = 0; i < b->len; i++) {
      const Out *o = &g_array_index(b, Out, i);
      bool carried = ((const FabElem *)o->target)->ops->carries;
      Wire w = {o->t, o->tie, carried ? 0 : o->arg, par->codec.number(par->codec.ctx, o->target),
                carried ? (uint32_t)osz : 0};
      g_byte_array_append(m, (const guint8 *)&w, sizeof w);
      if (carried) {
        void *obj = (void *)(uintptr_t)o->arg;
        par->codec.fix(par->codec.ctx, o->target, obj, true);
        g_byte_array_append(m, obj, (guint)osz);
        fab_pool_put(eng->pool, obj);
      }
    }
    g_array_set_size(b, 0);
    g_byte_array_append(m, payload->data, payload->len);
  }
  par->boxmin[par->set * par->n + me] = FAB_TIME_MAX;
}

/* What the others sent: their payloads first (in partition order), then
** their events into this partition's queue, none before `from`. Returns
** the earliest event any process may have next (what they said, and, when
** a payload came, `from`: what it makes may be that early), and the
** others' flags into *stop and *bad. */
static fab_time_t net_unpack(FabPar *par, fab_time_t from, bool *stop, bool *bad) {
  uint32_t me = par->net.self;
  FabEngine *eng = par->eng[me];
  fab_time_t next = par->next; /* this process's own, as it told the others */
  bool payloads = par->payload->len > 0;
  for (uint32_t k = 0; k < par->n; k++) { /* the payloads */
    if (k == me) continue;
    const GByteArray *m = par->in[k];
    Head h;
    g_assert(m->len >= sizeof h);
    memcpy(&h, m->data, sizeof h);
    next = MIN(next, h.next);
    *stop |= h.stop;
    *bad |= h.bad;
    payloads |= h.payload > 0;
    if (par->codec.apply) par->codec.apply(par->codec.ctx, k, m->data + m->len - h.payload, h.payload);
  }
  for (uint32_t k = 0; k < par->n; k++) {
    if (k == me) continue;
    const GByteArray *m = par->in[k];
    Head h;
    memcpy(&h, m->data, sizeof h);
    size_t p = sizeof h;
    for (uint64_t i = 0; i < h.nev; i++) {
      Wire w;
      memcpy(&w, m->data + p, sizeof w);
      p += sizeof w;
      void *target = par->codec.target(par->codec.ctx, w.target);
      uint64_t arg = w.arg;
      if (w.carried) {
        void *obj = fab_pool_take(eng->pool);
        memcpy(obj, m->data + p, w.carried);
        p += w.carried;
        par->codec.fix(par->codec.ctx, target, obj, false);
        arg = (uint64_t)(uintptr_t)obj;
      }
      if (w.t < from) par->bad[me] = true; /* a delay shorter than the lookahead */
      fab_evq_push(eng->evq, w.t, w.tie, target, arg);
      par->handed[me]++;
    }
  }
  return payloads ? MIN(next, from) : next;
}

/* The run over processes: each window, this partition's events, then one
** message to every other process (no reduction: each message says when
** its sender's next event is, and whether it stopped), then the owner's
** hook. A window's start is the earliest event of all: what the messages
** said, this process's own queue, and, after a window in which a process
** reported to the executor (a payload), the window's end: what the
** reports make begins a lookahead after them at the earliest, and no
** process knows the others' before the next window (a window may then run
** empty). */
static bool run_net(FabPar *par, fab_time_t until) {
  uint32_t me = par->net.self;
  FabEngine *eng = par->eng[me];
  uint64_t v[3] = {fab_evq_peek_time(eng->evq), !(par->stop || eng->stopped), !par->bad[me]};
  par->net.min(par->net.ctx, v, 3); /* the first window's start (and flags as complements' minima) */
  if (!v[2]) return false;
  fab_time_t T = v[0];
  bool stop = !v[1];
  for (;;) {
    fab_time_t first = MIN(T, par->sync), end;
    if (stop || first == FAB_TIME_MAX || first > until) break;
    end = T > FAB_TIME_MAX - par->lookahead ? FAB_TIME_MAX : T + par->lookahead - 1;
    if (end >= par->sync) end = par->sync - 1;
    if (end > until) end = until;
    if (!fab_engine_run(eng, end)) par->bad[me] = true;
    net_pack(par);
    bool others_stop = false, others_bad = false;
    par->net.exchange(par->net.ctx, par->out, par->in);
    par->not_before = end == FAB_TIME_MAX ? end : end + 1;
    fab_time_t next = net_unpack(par, par->not_before, &others_stop, &others_bad);
    par->windows++;
    if (others_bad || par->bad[me]) return false; /* every process sees it in this window's messages */
    bool stopped = par->stop || eng->stopped; /* as sent, before the hook: the others read the same */
    if (par->hook) par->hook(par, end, par->hook_ctx);
    stop = stopped || others_stop || par->stop; /* the hook decides alike everywhere */
    T = next; /* the same in every process: not this one's queue, which holds what the others' payloads made */
    if (fab_evq_peek_time(eng->evq) < T) par->bad[me] = true; /* the hook made an event no message announced */
  }
  return !par->bad[me];
}

bool fab_par_run(FabPar *par, fab_time_t until) {
  par->stop = false;
  if (par->over_net) { /* what was scheduled before the run for this partition is in its queue already */
    for (uint32_t k = 0; k < par->n; k++) g_assert(box_at(par, par->set, par->net.self, k)->len == 0);
    par->not_before = 0;
    return run_net(par, until);
  }
  settle(par); /* what was scheduled before the run: anything goes */
  for (uint32_t k = 0; k < par->n; k++)
    if (par->bad[k]) return false;
  bool ok = true;
  fab_time_t end = 0;
  if (!par->threads || par->n == 1) {
    while (ok && next_window(par, until, &end)) {
      uint32_t set = flip(par);
      for (uint32_t k = 0; k < par->n; k++) run_part(par, k, set, par->not_before, end);
      ok = close_window(par, end);
    }
  } else {
    par->bar.spin = par->n <= g_get_num_processors() ? BAR_SPIN : 0;
    Worker *w = g_new(Worker, par->n);
    GThread **th = g_new0(GThread *, par->n);
    for (uint32_t k = 1; k < par->n; k++) {
      w[k] = (Worker){par, k};
      th[k] = g_thread_new("fabsim-part", worker, &w[k]);
    }
    for (;;) {
      par->quit = !ok || !next_window(par, until, &end);
      if (!par->quit) flip(par);
      par->end = end;
      bar_wait(&par->bar);
      if (par->quit) break;
      run_part(par, 0, par->set ^ 1, par->not_before, end);
      bar_wait(&par->bar);
      ok = close_window(par, end);
    }
    for (uint32_t k = 1; k < par->n; k++) g_thread_join(th[k]);
    g_free(th);
    g_free(w);
  }
  settle(par);
  for (uint32_t k = 0; k < par->n; k++)
    if (par->bad[k]) ok = false;
  return ok;
}

uint64_t fab_par_events(const FabPar *par) {
  uint64_t e = 0;
  for (uint32_t k = 0; k < par->n; k++) e += par->eng[k]->events;
  return e;
}

fab_time_t fab_par_now(const FabPar *par) {
  fab_time_t t = 0;
  for (uint32_t k = 0; k < par->n; k++) t = MAX(t, par->eng[k]->now);
  return t;
}

size_t fab_par_live(const FabPar *par) {
  size_t n = 0;
  for (uint32_t k = 0; k < par->n; k++) n += fab_pool_live(par->eng[k]->pool);
  return n;
}

uint64_t fab_par_windows(const FabPar *par) { return par->windows; }

uint64_t fab_par_handed(const FabPar *par) {
  uint64_t n = 0;
  for (uint32_t k = 0; k < par->n; k++) n += par->handed[k];
  return n;
}

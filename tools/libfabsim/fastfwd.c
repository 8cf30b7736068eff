/* The steady-state fast-forward. See fastfwd.h. */
#include "fastfwd.h"
#include <string.h>

/* What one look saw of a port: the counters a jump extrapolates, and the
** ones that must not move in a steady state. */
typedef struct PortSeen {
  uint64_t q, tx_bytes, tx_pkts, ecn, pause_tx, pause_rx, drops, lost;
  fab_time_t paused;
} PortSeen;

/* What one look saw of a flow holding a slot. */
typedef struct FlowSeen {
  uint32_t id, sent;  /* its number; its packets sent (snd_max) */
  fab_time_t last;    /* when the newest of them left */
} FlowSeen;

/* One look. */
typedef struct Look {
  PortSeen *ports;  /* nports */
  GArray *flows;    /* FlowSeen, in slot order */
  uint64_t sig[3];  /* flows completed, holding slots, and numbered: a flow began or ended if these moved */
  bool scanned;     /* flows holds them (looked at only while sig stays, as a flow table may be large) */
  bool odd;         /* an SRD or NVLS flow was running: no jump over this look */
} Look;

struct FabFf {
  FabElem el;
  Run *r;
  fab_time_t window;
  double tol;
  uint64_t slack;      /* bytes: two of the largest packets or trains, what a queue or a window may move by */
  uint32_t nports;
  FabPort **ports;     /* every port, in fab_topology_foreach_port's order */
  Look look[3];        /* the last three looks, the newest at (n - 1) % 3 */
  uint64_t n;          /* looks since the last jump (or the start) */
  FabFfRec rec;
};

static void ff_wake(FabEngine *eng, void *self, uint64_t arg);
static const FabOps ff_ops = {"fast-forward", ff_wake};

bool fab_ff_wanted(const FabScenario *sc, uint32_t threads_or_procs, const char **why) {
  *why = NULL;
  uint32_t mode = sc->fabric.ff_mode;
  if (mode == FAB_FF_AUTO) {
    mode = FAB_FF_OFF;
    const FabDag *d = sc->dag;
    for (guint j = 0; d->jobs && j < d->jobs->len; j++) {
      const FabJobDef *jd = &g_array_index(d->jobs, FabJobDef, j);
      if (jd->steps && jd->nranks >= FAB_FF_AUTO_RANKS) mode = FAB_FF_ON;
    }
    if (mode == FAB_FF_OFF) return false;
    if (threads_or_procs > 1 || sc->fabric.nic.transport.kind == FAB_TRANSPORT_SRD) return false; /* auto: quietly */
  }
  if (mode == FAB_FF_OFF) return false;
  if (threads_or_procs > 1) {
    *why = "fabric.fast_forward: not on a run over threads or processes (every partition would have to agree on "
           "each jump): it runs packet by packet";
    return false;
  }
  if (sc->fabric.nic.transport.kind == FAB_TRANSPORT_SRD) {
    *why = "fabric.fast_forward: not under transport srd (its per-packet timers and path state are not moved by "
           "a jump): it runs packet by packet";
    return false;
  }
  return true;
}

static void add_port(FabPort *pt, void *ctx) { g_ptr_array_add(ctx, pt); }

FabFf *fab_ff_new(Run *r, uint32_t id, char **why) {
  const FabScenario *sc = r->sc;
  const char *no;
  uint32_t split = r->par ? fab_par_parts(r->par) : r->net ? r->net->n : 1;
  *why = NULL;
  if (!fab_ff_wanted(sc, split, &no)) {
    if (no) *why = g_strdup(no);
    return NULL;
  }
  FabFf *ff = g_new0(FabFf, 1);
  fab_elem_init(&ff->el, &ff_ops);
  fab_elem_set_id(&ff->el, id);
  ff->r = r;
  ff->window = sc->fabric.ff_window;
  ff->tol = sc->fabric.ff_tolerance;
  uint64_t unit = MAX((uint64_t)(sc->fabric.nic.seg ? sc->fabric.nic.seg : sc->fabric.nic.mtu),
                      (uint64_t)sc->fabric.gpu.segment);
  ff->slack = 2 * (unit + 256); /* a packet's headers and framing are well under 256 bytes */
  GPtrArray *ports = g_ptr_array_new();
  fab_topology_foreach_port(r->topo, add_port, ports);
  ff->nports = ports->len;
  ff->ports = (FabPort **)g_ptr_array_free(ports, FALSE);
  for (int k = 0; k < 3; k++) {
    ff->look[k].ports = g_new0(PortSeen, MAX(ff->nports, 1u));
    ff->look[k].flows = g_array_new(FALSE, FALSE, sizeof(FlowSeen));
  }
  ff->rec.window = ff->window;
  ff->rec.tolerance = ff->tol;
  return ff;
}

void fab_ff_free(FabFf *ff) {
  if (!ff) return;
  for (int k = 0; k < 3; k++) {
    g_free(ff->look[k].ports);
    g_array_free(ff->look[k].flows, TRUE);
  }
  g_free(ff->ports);
  g_free(ff);
}

void fab_ff_start(FabEngine *eng, FabFf *ff) { fab_engine_setup_at(eng, ff->window, ff, 0); }

void fab_ff_report(const FabFf *ff, FabFfRec *out) { *out = ff->rec; }

/* ---- looking -------------------------------------------------------------- */

/* The flow holding slot-table entry of flow number i, or NULL. */
static FabFlow *flow_n(Run *r, uint32_t i) {
  uint32_t s = *slot_of(r, i);
  return s == FAB_OP_NONE ? NULL : fab_flow_at(&r->table, s);
}

static void take_look(FabFf *ff, Look *lk, const Look *prev, fab_time_t now) {
  Run *r = ff->r;
  lk->sig[0] = r->completed;
  lk->sig[1] = r->table.live;
  lk->sig[2] = fab_deq_end(&r->slot_of);
  lk->scanned = prev && memcmp(prev->sig, lk->sig, sizeof lk->sig) == 0;
  for (uint32_t i = 0; i < ff->nports; i++) {
    const FabPort *pt = ff->ports[i];
    lk->ports[i] = (PortSeen){pt->qbytes, pt->tx_bytes, pt->tx_pkts, pt->ecn_marks, pt->pause_tx, pt->pause_rx,
                              pt->drops, pt->lost, fab_port_paused_time(pt, now)};
  }
  g_array_set_size(lk->flows, 0);
  lk->odd = false;
  if (!lk->scanned) return;
  /* the flows holding slots, in slot order (a flow keeps its slot while it runs, so the same flows give the
  ** same order): a slot is held when its flow's number still names it */
  for (uint32_t s = 0; s < r->table.used; s++) {
    FabFlow *f = fab_flow_at(&r->table, s);
    if (f->id < r->slot_of.first || f->id >= fab_deq_end(&r->slot_of) || *slot_of(r, f->id) != s) continue;
    if (f->nvls || f->srd) lk->odd = true;
    FlowSeen x = {f->id, f->snd_max, f->last_tx};
    g_array_append_val(lk->flows, x);
  }
}

/* |b - a| within the tolerance of the larger, plus `slack`. */
static bool near(const FabFf *ff, uint64_t a, uint64_t b, uint64_t slack) {
  uint64_t hi = MAX(a, b), lo = MIN(a, b);
  return hi - lo <= (uint64_t)(ff->tol * (double)hi) + slack;
}

/* Whether the windows between looks a -> b -> c were alike. */
static bool steady(const FabFf *ff, const Look *a, const Look *b, const Look *c) {
  if (!b->scanned || !c->scanned || a->odd || b->odd || c->odd) return false; /* b scanned: a's sig was b's */
  if (!a->scanned) return false;
  if (a->flows->len != c->flows->len || b->flows->len != c->flows->len || c->flows->len == 0) return false;
  uint64_t moved = 0;
  for (guint i = 0; i < c->flows->len; i++) {
    const FlowSeen *x = &g_array_index(a->flows, FlowSeen, i), *y = &g_array_index(b->flows, FlowSeen, i),
                   *z = &g_array_index(c->flows, FlowSeen, i);
    if (x->id != z->id || y->id != z->id) return false; /* a flow started or was released */
    uint32_t d1 = y->sent - x->sent, d2 = z->sent - y->sent;
    if (!near(ff, d1, d2, 1)) return false;
    moved += d2;
  }
  if (!moved) return false; /* nothing to skip */
  for (uint32_t i = 0; i < ff->nports; i++) {
    const PortSeen *x = &a->ports[i], *y = &b->ports[i], *z = &c->ports[i];
    if (z->drops != x->drops || z->lost != x->lost) return false;
    if (!near(ff, y->tx_bytes - x->tx_bytes, z->tx_bytes - y->tx_bytes, ff->slack)) return false;
    uint64_t qhi = MAX(x->q, MAX(y->q, z->q)), qlo = MIN(x->q, MIN(y->q, z->q));
    if (!near(ff, qlo, qhi, ff->slack)) return false;
  }
  return true;
}

/* ---- jumping --------------------------------------------------------------- */

/* Whether an event belongs to the fabric's own dynamics (it moves with a
** jump) rather than to what drives it (a flow posted, compute, the
** executor, a sampler look, a failure: a jump ends before the first). */
static bool moves(const FabEvent *e) {
  const FabElem *el = e->target;
  const char *k = el->ops->kind;
  if (strcmp(k, "nic") == 0) return !fab_nic_event_is_start(e->arg);
  return strcmp(k, "port") == 0 || strcmp(k, "wire") == 0 || strcmp(k, "switch") == 0 || strcmp(k, "watchdog") == 0;
}

static void shift_port(FabPort *pt, void *ctx) { fab_port_shift(pt, *(const fab_time_t *)ctx); }

/* Jump from `now` over up to `most` windows, the last two seen between looks
** a -> c; returns the windows jumped (0: none fit). */
static uint64_t jump(FabFf *ff, FabEngine *eng, const Look *a, const Look *c, uint64_t most) {
  Run *r = ff->r;
  fab_time_t now = eng->now, W = ff->window;
  size_t n;
  FabEvent *ev = fab_engine_take_pending(eng, &n);
  fab_time_t fixed = r->sc->stop_time;
  for (size_t i = 0; i < n; i++)
    if (!moves(&ev[i])) {
      fixed = MIN(fixed, ev[i].time);
      break; /* in time order: the first is the earliest */
    }
  uint64_t k = most;
  if (fixed != FAB_TIME_MAX) k = MIN(k, fixed > now ? (fixed - now) / W : 0);
  k = k > 1 ? k - 1 : 0; /* a window kept before it */
  for (guint i = 0; i < c->flows->len && k; i++) { /* every flow keeps two windows of packets to run */
    const FlowSeen *x = &g_array_index(a->flows, FlowSeen, i), *z = &g_array_index(c->flows, FlowSeen, i);
    uint64_t per = ((uint64_t)(z->sent - x->sent) + 1) / 2;
    if (!per) continue;
    const FabFlow *f = flow_n(r, z->id);
    uint64_t left = f->npkts - f->snd_max;
    uint64_t fit = left > 2 * per + 4 ? (left - 2 * per - 4) / per : 0;
    k = MIN(k, fit);
  }
  if (k < 2) { /* not worth it */
    fab_engine_put_pending(eng, ev, n);
    return 0;
  }
  fab_time_t dt = (fab_time_t)k * W;
  for (size_t i = 0; i < n; i++)
    if (moves(&ev[i])) ev[i].time += dt;
  fab_engine_put_pending(eng, ev, n);
  /* the fabric's state, later */
  FabTopology *t = r->topo;
  fab_topology_foreach_port(t, shift_port, &dt);
  for (uint32_t h = 0; h < t->nhosts; h++) fab_nic_shift(&t->nics[h], dt);
  for (uint32_t s = 0; s < t->nswitches; s++) fab_switch_shift(t->switches[s], dt);
  /* the flows: shifted, and shorter by what the skipped windows carried */
  for (guint i = 0; i < c->flows->len; i++) {
    const FlowSeen *x = &g_array_index(a->flows, FlowSeen, i), *z = &g_array_index(c->flows, FlowSeen, i);
    FabFlow *f = flow_n(r, z->id);
    fab_nic_shift_flow(&t->nics[f->src], f, dt);
    /* its rate from its own packets: those sent after look a's newest up to look c's newest, over the time
    ** between those two (a whole number of its packet intervals, exact for a flow that sends evenly) */
    uint64_t want = 0;
    if (z->sent != x->sent && z->last > x->last)
      want = (uint64_t)(((unsigned __int128)(z->sent - x->sent) * dt + (z->last - x->last) / 2) / (z->last - x->last));
    ff->rec.skipped_packets += fab_flow_skip(f, (uint32_t)MIN(want, (uint64_t)UINT32_MAX));
  }
  /* the ports' counters, as if the last two windows had repeated */
  for (uint32_t i = 0; i < ff->nports; i++) {
    FabPort *pt = ff->ports[i];
    const PortSeen *x = &a->ports[i], *z = &c->ports[i];
    pt->tx_bytes += (z->tx_bytes - x->tx_bytes) * k / 2;
    pt->tx_pkts += (z->tx_pkts - x->tx_pkts) * k / 2;
    pt->ecn_marks += (z->ecn - x->ecn) * k / 2;
    pt->pause_tx += (z->pause_tx - x->pause_tx) * k / 2;
    pt->pause_rx += (z->pause_rx - x->pause_rx) * k / 2;
    pt->paused_ps += (z->paused - x->paused) * k / 2;
  }
  eng->now = now + dt;
  ff->rec.jumps++;
  ff->rec.skipped += dt;
  return k;
}

static void ff_wake(FabEngine *eng, void *self, uint64_t arg) {
  (void)arg;
  FabFf *ff = self;
  Run *r = ff->r;
  if (fab_exec_finished(r->exec)) return; /* the workload is over: no more looks */
  ff->rec.looks++;
  Look *c = &ff->look[ff->n % 3];
  take_look(ff, c, ff->n ? &ff->look[(ff->n - 1) % 3] : NULL, eng->now);
  ff->n++;
  if (ff->n >= 3) {
    Look *a = &ff->look[(ff->n - 3) % 3], *b = &ff->look[(ff->n - 2) % 3];
    if (steady(ff, a, b, c) && jump(ff, eng, a, c, UINT32_MAX)) ff->n = 0; /* two fresh windows before the next */
  }
  if (fab_evq_size(eng->evq) == 0) return; /* nothing else will happen */
  fab_time_t next = eng->now + ff->window;
  if (c->flows->len == 0 && ff->n) /* nothing under way: look again when something happens */
    next = MAX(next, fab_evq_peek_time(eng->evq) + ff->window);
  if (next > r->sc->stop_time) return;
  fab_engine_at(eng, next, ff, 0);
}

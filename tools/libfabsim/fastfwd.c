/* The steady-state fast-forward. See fastfwd.h. */
#include "fastfwd.h"
#include <string.h>

/* What one look saw of a port: the counters a jump extrapolates, and the
** ones that must not move in a steady state. */
typedef struct PortSeen {
  uint64_t tx_bytes, tx_pkts, ecn, pause_tx, pause_rx, drops, lost;
  fab_time_t paused, last; /* time paused; when the newest packet it counts was counted */
} PortSeen;

/* A port's queue depths seen at the looks of the two halves of a stretch. */
typedef struct Band {
  uint64_t lo1, hi1, lo2, hi2;
} Band;

/* What one look saw of a flow holding a slot. */
typedef struct FlowSeen {
  uint32_t id, sent;  /* its number; its packets sent (snd_max) */
  uint32_t resent;    /* packets it sent again (a flow recovering from a loss is not steady) */
  fab_time_t last;    /* when the newest of them left */
} FlowSeen;

/* One look. */
typedef struct Look {
  PortSeen *ports;  /* nports */
  GArray *flows;    /* FlowSeen, in slot order */
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
  /* the stretch: looks since the flows running last changed (none began or ended), `len` windows long; its
  ** first look, the one half-way, the newest; a test when len is a power of two */
  uint64_t sig[3];     /* flows completed, holding slots, and numbered: a flow began or ended if these moved */
  uint64_t len;        /* windows since `base`; UINT64_MAX: no stretch (the last look saw a change) */
  uint64_t confirm;    /* 0: the stretch looks at the ports alone; else it is a second stretch of this many
                       ** windows, begun when the first one's ports were steady, that looks at the flows too (a
                       ** look at every flow costs: only where the ports promise a jump) */
  uint64_t need;       /* the shortest stretch whose ports may begin a confirmation (doubles when one fails) */
  Look base, mid, cur;
  Band *band;          /* nports */
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

static void look_init(Look *lk, uint32_t nports) {
  lk->ports = g_new0(PortSeen, MAX(nports, 1u));
  lk->flows = g_array_new(FALSE, FALSE, sizeof(FlowSeen));
}

static void look_clear(Look *lk) {
  g_free(lk->ports);
  g_array_free(lk->flows, TRUE);
}

static void look_copy(Look *to, const Look *from, uint32_t nports) {
  memcpy(to->ports, from->ports, nports * sizeof *to->ports);
  g_array_set_size(to->flows, 0);
  g_array_append_vals(to->flows, from->flows->data, from->flows->len);
  to->odd = from->odd;
}

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
  look_init(&ff->base, ff->nports);
  look_init(&ff->mid, ff->nports);
  look_init(&ff->cur, ff->nports);
  ff->band = g_new0(Band, MAX(ff->nports, 1u));
  ff->len = UINT64_MAX;
  ff->need = 2;
  ff->sig[0] = UINT64_MAX; /* the first look starts nothing */
  ff->rec.window = ff->window;
  ff->rec.tolerance = ff->tol;
  return ff;
}

void fab_ff_free(FabFf *ff) {
  if (!ff) return;
  look_clear(&ff->base);
  look_clear(&ff->mid);
  look_clear(&ff->cur);
  g_free(ff->band);
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

/* Whether a flow began or ended since the last look (then nothing more is
** looked at: a training step's flows begin and end every few microseconds,
** and a look at a large fabric's every port costs). */
static bool changed(FabFf *ff) {
  Run *r = ff->r;
  uint64_t sig[3] = {r->completed, r->table.live, fab_deq_end(&r->slot_of)};
  bool ch = memcmp(sig, ff->sig, sizeof sig) != 0;
  memcpy(ff->sig, sig, sizeof sig);
  return ch;
}

static void take_look(FabFf *ff, Look *lk, fab_time_t now, bool flows) {
  Run *r = ff->r;
  for (uint32_t i = 0; i < ff->nports; i++) {
    const FabPort *pt = ff->ports[i];
    lk->ports[i] = (PortSeen){pt->tx_bytes, pt->tx_pkts, pt->ecn_marks, pt->pause_tx, pt->pause_rx, pt->drops,
                              pt->lost, fab_port_paused_time(pt, now), pt->tx_last};
  }
  g_array_set_size(lk->flows, 0);
  lk->odd = false;
  if (!flows) return;
  /* the flows holding slots, in slot order (a flow keeps its slot while it runs, so the same flows give the
  ** same order) */
  for (uint32_t s = 0; r->table.held && s < r->table.used; s++) {
    if (!r->table.held[s]) continue;
    FabFlow *f = fab_flow_at(&r->table, s);
    if (f->nvls || f->srd) lk->odd = true;
    FlowSeen x = {f->id, f->snd_max, f->retransmits, f->last_tx};
    g_array_append_val(lk->flows, x);
  }
}

/* |b - a| within the tolerance of the larger, plus `slack`. */
static bool near(const FabFf *ff, uint64_t a, uint64_t b, uint64_t slack) {
  uint64_t hi = MAX(a, b), lo = MIN(a, b);
  return hi - lo <= (uint64_t)(ff->tol * (double)hi) + slack;
}

/* Whether the two halves of the stretch (base -> mid -> cur) were alike: the
** same flows, each sending as many packets in both (within the tolerance
** and one packet), every port sending as many bytes in both and its queue
** ranging as far in both (within the tolerance and two packets), nothing
** dropped or lost, some flow moving, no SRD or NVLS flow. Comparing halves
** of a stretch that doubles until they agree lets a state that oscillates
** (PFC pauses, DCQCN's cuts and recoveries) count as steady once the
** stretch spans a few of its periods. */
static bool steady(const FabFf *ff, bool flows) {
  const Look *a = &ff->base, *b = &ff->mid, *c = &ff->cur;
  for (uint32_t i = 0; i < ff->nports; i++) {
    const PortSeen *x = &a->ports[i], *y = &b->ports[i], *z = &c->ports[i];
    const Band *q = &ff->band[i];
    if (z->drops != x->drops || z->lost != x->lost) return false;
    if (!near(ff, y->tx_bytes - x->tx_bytes, z->tx_bytes - y->tx_bytes, ff->slack)) return false;
    if (!near(ff, q->lo1, q->lo2, ff->slack) || !near(ff, q->hi1, q->hi2, ff->slack)) return false;
  }
  if (!flows) return true;
  if (a->odd || b->odd || c->odd) return false;
  if (a->flows->len != c->flows->len || b->flows->len != c->flows->len || c->flows->len == 0) return false;
  uint64_t moved = 0;
  for (guint i = 0; i < c->flows->len; i++) {
    const FlowSeen *x = &g_array_index(a->flows, FlowSeen, i), *y = &g_array_index(b->flows, FlowSeen, i),
                   *z = &g_array_index(c->flows, FlowSeen, i);
    if (x->id != z->id || y->id != z->id) return false; /* a flow started or was released */
    if (z->resent != x->resent) return false;           /* it is recovering from a loss */
    uint32_t d1 = y->sent - x->sent, d2 = z->sent - y->sent;
    /* a moving flow counts enough packets in each half for the tolerance to tell (a packet more or less
    ** is within it): else the stretch is too short yet */
    if ((d1 || d2) && (double)MIN(d1, d2) * ff->tol < 1) return false;
    if (!near(ff, d1, d2, 0)) return false;
    moved += d2;
  }
  return moved != 0; /* else nothing to skip */
}

/* The queues seen at a look: into the second half's band (`first`: the
** first look of the half). */
static void band_add(FabFf *ff, bool first) {
  for (uint32_t i = 0; i < ff->nports; i++) {
    Band *b = &ff->band[i];
    uint64_t q = ff->ports[i]->qbytes;
    if (first) b->lo2 = b->hi2 = q;
    b->lo2 = MIN(b->lo2, q);
    b->hi2 = MAX(b->hi2, q);
  }
}

/* The halves become the first half of a stretch twice as long. */
static void band_merge(FabFf *ff) {
  for (uint32_t i = 0; i < ff->nports; i++) {
    Band *b = &ff->band[i];
    b->lo1 = MIN(b->lo1, b->lo2);
    b->hi1 = MAX(b->hi1, b->hi2);
  }
}

/* ---- jumping --------------------------------------------------------------- */

/* Whether an event belongs to the fabric's own dynamics (it moves with a
** jump) rather than to what drives it (a flow posted, compute, the
** executor, a sampler look, a failure: a jump ends before the first). */
static bool moves(const FabEvent *e) {
  const FabElem *el = e->target;
  const char *k = el->ops->kind;
  if (strcmp(k, "nic") == 0) return !fab_nic_event_is_start(e->arg);
  return strcmp(k, "sampler") == 0 || strcmp(k, "port") == 0 || strcmp(k, "wire") == 0 || strcmp(k, "switch") == 0 || strcmp(k, "watchdog") == 0;
}

static void shift_port(FabPort *pt, void *ctx) { fab_port_shift(pt, *(const fab_time_t *)ctx); }

/* Jump from `now` over as many windows as fit, each like the mean window of
** the stretch (base -> cur, `len` windows); returns the windows jumped (0:
** none fit). */
static uint64_t jump(FabFf *ff, FabEngine *eng) {
  Run *r = ff->r;
  const Look *a = &ff->base, *c = &ff->cur;
  uint64_t len = ff->len, most = UINT32_MAX;
  fab_time_t now = eng->now, W = ff->window;
  size_t n;
  FabEvent *ev = fab_engine_take_pending(eng, &n);
  fab_time_t fixed = r->sc->stop_time;
  for (size_t i = 0; i < n; i++)
    if (!moves(&ev[i])) {
      fixed = MIN(fixed, ev[i].time);
      break; /* in time order: the first is the earliest */
    }
  uint64_t k = MIN(most, FAB_FF_REACH * len); /* no further ahead than a few times what was seen */
  if (fixed != FAB_TIME_MAX) k = MIN(k, fixed > now ? (fixed - now) / W : 0);
  k = k > 1 ? k - 1 : 0; /* a window kept before it */
  for (guint i = 0; i < c->flows->len && k; i++) { /* every flow keeps two windows of packets to run */
    const FlowSeen *x = &g_array_index(a->flows, FlowSeen, i), *z = &g_array_index(c->flows, FlowSeen, i);
    uint64_t per = ((uint64_t)(z->sent - x->sent) + len - 1) / len;
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
  size_t look = n; /* the sampler's pending look */
  for (size_t i = 0; i < n; i++)
    if (moves(&ev[i])) {
      if (ev[i].target == (void *)r->sampler) look = i;
      else ev[i].time += dt;
    }
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
  /* the ports' counters, as if the stretch's mean window had repeated */
  for (uint32_t i = 0; i < ff->nports; i++) {
    FabPort *pt = ff->ports[i];
    const PortSeen *x = &a->ports[i], *z = &c->ports[i];
    /* bytes and packets at the rate between the stretch's first and last packets counted (a whole number of
    ** its packets over the time they took: exact for a port that sends evenly); the rest per mean window */
    if (z->last > x->last) {
      pt->tx_bytes += (uint64_t)((unsigned __int128)(z->tx_bytes - x->tx_bytes) * dt / (z->last - x->last));
      pt->tx_pkts += (uint64_t)((unsigned __int128)(z->tx_pkts - x->tx_pkts) * dt / (z->last - x->last));
    }
    pt->ecn_marks += (z->ecn - x->ecn) * k / len;
    pt->pause_tx += (z->pause_tx - x->pause_tx) * k / len;
    pt->pause_rx += (z->pause_rx - x->pause_rx) * k / len;
    pt->paused_ps += (z->paused - x->paused) * k / len;
  }
  if (look < n) ev[look].time = fab_sampler_jump(r->sampler, ev[look].time, now + dt); /* its rows, then on */
  fab_engine_put_pending(eng, ev, n);
  eng->now = now + dt;
  ff->rec.jumps++;
  ff->rec.skipped += dt;
  return k;
}

/* Whether some GPU's compute or reduction ends before a jump could begin
** (the stretch and its confirmation: a jump stops before it): then looking
** is wasted (a training step's GPUs are seldom idle that long). */
static bool gpu_soon(const FabFf *ff, fab_time_t now) {
  const FabTopology *t = ff->r->topo;
  fab_time_t horizon = now + (2 * ff->need + 2) * ff->window;
  for (uint32_t h = 0; h < t->nhosts; h++)
    for (int w = 0; w < 2; w++) {
      const FabGpuLane *l = &t->gpus[h].lane[w];
      if (l->busy && l->ends < horizon) return true;
    }
  return false;
}

/* A stretch (re)begins at this look: the ports, and the flows when it confirms. */
static void stretch_begin(FabFf *ff, fab_time_t now, uint64_t confirm) {
  take_look(ff, &ff->base, now, confirm != 0);
  look_copy(&ff->mid, &ff->base, ff->nports);
  for (uint32_t i = 0; i < ff->nports; i++) {
    Band *b = &ff->band[i];
    b->lo1 = b->hi1 = b->lo2 = b->hi2 = ff->ports[i]->qbytes;
  }
  ff->len = 0;
  ff->confirm = confirm;
}

static void ff_wake(FabEngine *eng, void *self, uint64_t arg) {
  (void)arg;
  FabFf *ff = self;
  Run *r = ff->r;
  if (fab_exec_finished(r->exec)) return; /* the workload is over: no more looks */
  ff->rec.looks++;
  bool running = r->table.live != 0;
  if (changed(ff) || !running || gpu_soon(ff, eng->now)) {
    ff->len = UINT64_MAX;
    ff->need = 2;
  } else if (ff->len == UINT64_MAX || (!ff->confirm && ff->len >= 256)) { /* a stretch begins (again: a long one
                                                                            ** that never settled may hold an old
                                                                            ** transient) */
    stretch_begin(ff, eng->now, 0);
  } else {
    ff->len++;
    band_add(ff, false);
    bool confirming = ff->confirm != 0;
    bool half = confirming ? ff->len * 2 == ff->confirm : (ff->len & (ff->len - 1)) == 0;
    bool end = confirming ? ff->len == ff->confirm : ff->len >= ff->need && half;
    if (half || end) {
      take_look(ff, &ff->cur, eng->now, confirming);
      if (end && !confirming && steady(ff, false)) { /* the ports were steady: confirm with the flows */
        stretch_begin(ff, eng->now, ff->len);
      } else if (end && confirming) {
        if (steady(ff, true) && jump(ff, eng)) {
          ff->sig[0] = UINT64_MAX; /* the next look starts afresh */
          ff->need = 2;
        } else {
          ff->need = MIN(2 * ff->confirm, 256); /* the flows need a longer look */
        }
        ff->len = UINT64_MAX;
      } else { /* twice as long: this look is the half-way one */
        look_copy(&ff->mid, &ff->cur, ff->nports);
        band_merge(ff);
        for (uint32_t i = 0; i < ff->nports; i++) ff->band[i].lo2 = ff->band[i].hi2 = ff->ports[i]->qbytes;
      }
    }
  }
  if (fab_evq_size(eng->evq) == 0) return; /* nothing else will happen */
  fab_time_t next = eng->now + ff->window;
  if (!running) /* nothing under way: look again when something happens */
    next = MAX(next, fab_evq_peek_time(eng->evq) + ff->window);
  if (next > r->sc->stop_time) return;
  fab_engine_at(eng, next, ff, 0);
}

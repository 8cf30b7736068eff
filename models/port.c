/* Egress queues, serialiser and wire. See port.h. */
#include "port.h"
#include <glib.h>
#include "sim/par.h"

/* A switch keeps its ports in an array aligned to 64 bytes (models/switch.c): whole cache lines each, so the
** hot fields at the front (port.h) take their three lines and the queues start on the fourth. */
_Static_assert(sizeof(FabPort) % 64 == 0, "FabPort is not a whole number of cache lines");
_Static_assert(offsetof(FabPort, q) == 192, "FabPort's hot fields are not its first three cache lines");

enum { WAKE_TX_DONE = 0, WAKE_RETRY = 2, WAKE_UNPAUSE = 3, WAKE_CREDIT = 4, WAKE_CREDIT_SYNC = 5 };

/* A credit event's argument: the kind (8 bits), the VL (3), the far end's
** cgen when it was made (13: compared modulo 2^13), the bytes (40: up to
** a switch buffer's 1e12). */
#define CREDIT_ARG(kind, vl, gen, bytes) \
  ((uint64_t)(kind) | (uint64_t)(vl) << 8 | (uint64_t)((gen) & 0x1fffu) << 11 | (uint64_t)(bytes) << 24)
#define CREDIT_VL(arg) ((uint32_t)((arg) >> 8) & 7u)
#define CREDIT_GEN(arg) ((uint32_t)((arg) >> 11) & 0x1fffu)
#define CREDIT_BYTES(arg) ((int64_t)((arg) >> 24))

static void port_wake(FabEngine *eng, void *self, uint64_t arg);
static void wire_wake(FabEngine *eng, void *self, uint64_t arg);
static const void *wire_home(const void *self);
const FabOps fab_port_ops = {"port", port_wake, NULL};
const FabOps fab_wire_ops = {"wire", wire_wake, wire_home, true};

void fab_port_init(FabPort *pt, FabNode *owner, uint32_t index, uint64_t bps, fab_time_t latency,
                   uint32_t nprio) {
  g_assert(bps > 0 && nprio >= 1 && nprio <= FAB_MAX_PRIOS);
  *pt = (FabPort){0};
  fab_elem_init(&pt->el, &fab_port_ops);
  fab_elem_init(&pt->wire, &fab_wire_ops);
  pt->el.tie = 2; /* the port's keys even, the wire's odd (port.h) */
  pt->wire.tie = 1;
  pt->owner = owner;
  pt->index = index;
  fab_port_set_rate(pt, bps);
  pt->latency = latency;
  pt->nprio = nprio;
  pt->retry_at = FAB_TIME_MAX;
}

void fab_port_set_rate(FabPort *pt, uint64_t bps) {
  g_assert(bps > 0);
  pt->bps = bps;
  pt->ps_per_byte = (8 * FAB_S) % bps == 0 && (8 * FAB_S) / bps <= UINT32_MAX ? (uint32_t)((8 * FAB_S) / bps) : 0;
}

void fab_port_connect(FabPort *a, FabPort *b) {
  a->peer = b;
  b->peer = a;
}

static inline FabPkt *q_pop(FabPort *pt, uint32_t pr) {
  FabPktQ *q = &pt->q[pr];
  FabPkt *p = q->head;
  q->head = p->next;
  if (q->head) __builtin_prefetch(q->head); /* the next one this queue sends: its header is read when it starts */
  if (!q->head) {
    q->tail = NULL;
    pt->busy_prios &= ~(1u << pr);
  }
  q->n--;
  q->bytes -= p->wire;
  p->next = NULL;
  return p;
}

static uint64_t free_chain(FabEngine *eng, FabPkt *p, uint64_t *bytes);

/* A link that is down loses the chain from p. */
static void lose(FabEngine *eng, FabPort *pt, FabPkt *p) {
  uint64_t before = pt->lost_bytes;
  uint64_t n = free_chain(eng, p, &pt->lost_bytes);
  pt->lost += n;
  pt->drops += n;
  pt->drop_bytes += pt->lost_bytes - before;
}

/* Down: everything queued is lost (the owner releasing its buffer). */
static void drain(FabEngine *eng, FabPort *pt) {
  for (uint32_t m = pt->busy_prios; m;) {
    uint32_t pr = 31 - (uint32_t)__builtin_clz(m);
    m &= ~(1u << pr);
    while (pt->q[pr].head) {
      FabPkt *p = q_pop(pt, pr);
      pt->qbytes -= p->wire;
      if (pt->owner->dequeued) pt->owner->dequeued(eng, pt->owner, pt, p);
      lose(eng, pt, p);
    }
  }
  while (pt->ctrl_head) {
    FabPkt *p = pt->ctrl_head;
    pt->ctrl_head = p->next;
    p->next = NULL;
    lose(eng, pt, p);
  }
  pt->ctrl_tail = NULL;
}

/* pt->tx while a train whose head already went to the peer is still being
** serialised: the link is busy, and no packet of ours is on it any more. */
static FabPkt cut_busy;

/* p is on the wire, arriving at the far end at `at` (after what is already on
** it). The head's arrival is scheduled; any other packet's time waits in the
** `ready` of the packet before it, so that when the head arrives the next
** arrival is read from the head itself, not from a second packet's header (a
** cache miss per hop on large fabrics). The arrival is the wire's event,
** keyed (id, 0) whether the sending port schedules it here or the wire
** chains it (wire_wake): unique, as a wire's arrivals never share a time.
** A packet's own `ready` means nothing on the wire: whoever receives it
** sets it. */
static inline uint64_t wire_tie(const FabPort *pt) {
  return (uint64_t)fab_elem_id(&pt->el) << FAB_TIE_SEQ_BITS; /* the wire's id; its key moves in the far end's
                                                              ** partition, the port's in the sender's */
}

static inline void fly(FabEngine *eng, FabPort *pt, FabPkt *p, fab_time_t at) {
  p->next = NULL; /* the link is up: a packet started while down was drained, one cut short by a down is lost */
  if (G_UNLIKELY(pt->cut)) { /* the same key as the chained arrival: the same order as one engine's */
    p->ready = pt->epoch; /* on the wire, nothing else reads it: the far end checks it (wire_wake) */
    fab_engine_part_at_tie(eng, pt->far, at, wire_tie(pt), &pt->wire, (uint64_t)(uintptr_t)p);
    return;
  }
  if (pt->fly_tail) {
    pt->fly_tail->next = p;
    pt->fly_tail->ready = at;
  } else {
    pt->fly_head = p;
    fab_engine_part_at_tie(eng, pt->far, at, wire_tie(pt), &pt->wire, pt->epoch); /* runs with the far end */
  }
  pt->fly_tail = p;
}

/* Pick the next packet and start serialising it, if any is ready. */
static void start(FabEngine *eng, FabPort *pt) {
  FabPkt *p = NULL;
  fab_time_t soonest = FAB_TIME_MAX;
  if (G_UNLIKELY(pt->down)) {
    drain(eng, pt);
    return;
  }
  if (G_UNLIKELY(pt->ctrl_head != NULL)) { /* a PAUSE frame goes first */
    p = pt->ctrl_head;
    pt->ctrl_head = p->next;
    if (!pt->ctrl_head) pt->ctrl_tail = NULL;
    p->next = NULL;
    pt->tx = p;
    pt->tx_epoch = pt->epoch;
    fab_engine_after(eng, fab_port_ser(pt, p->wire), pt, WAKE_TX_DONE);
    return;
  }
  for (uint32_t m = pt->busy_prios & ~pt->paused; m; ) { /* non-empty, unpaused queues, highest first */
    uint32_t pr = 31 - (uint32_t)__builtin_clz(m);
    m &= ~(1u << pr);
    FabPkt *h = pt->q[pr].head;
    if (G_UNLIKELY(pt->credit_fc) && pt->credits[pr] < (int64_t)h->wire) continue; /* a credit return kicks */
    if (h->ready <= eng->now) {
      p = q_pop(pt, pr);
      pt->qbytes -= p->wire;
      pt->tx = p; /* busy before the owner hears of it: its callback may queue a PAUSE here */
      if (pt->owner->dequeued) pt->owner->dequeued(eng, pt->owner, pt, p);
      break;
    }
    if (h->ready < soonest) soonest = h->ready;
  }
  if (!p) {
    if (soonest != FAB_TIME_MAX) {
      if (soonest < pt->retry_at) { /* an earlier wake than any pending one */
        pt->retry_at = soonest;
        fab_engine_at(eng, soonest, pt, WAKE_RETRY);
      }
      return;
    }
    if (!pt->owner->pull || !(p = pt->owner->pull(eng, pt->owner, pt))) return;
  }
  if (G_UNLIKELY(pt->credit_fc)) {
    pt->credits[p->prio] -= p->wire;
    g_assert(pt->credits[p->prio] >= 0); /* a pull ignored nocredit, or credits went wrong */
    if (pt->credits[p->prio] < (int64_t)pt->credit_unit) pt->nocredit |= 1u << p->prio;
  }
  pt->tx = p;
  pt->tx_epoch = pt->epoch;
  if (G_UNLIKELY((p->flags & FAB_PKTF_TRAIN) && pt->cut_mtu && pt->peer->owner->relay)) {
    /* a train into a switch arrives as its first packet would: the switch may forward it as it would forward
    ** that packet (switch_receive keeps it from finishing before its last byte is in) */
    pt->tx_bytes += p->wire;
    pt->tx_pkts++;
    pt->tx_last = eng->now;
    p->hops++;
    fly(eng, pt, p, eng->now + fab_port_ser(pt, pt->cut_mtu + pt->cut_ovh) + pt->latency);
    pt->tx = &cut_busy;
  }
  fab_engine_after(eng, fab_port_ser(pt, p->wire), pt, WAKE_TX_DONE);
}

void fab_port_set_credits(FabPort *pt, uint64_t bytes, uint32_t unit) {
  g_assert(bytes >= unit && bytes < (1ULL << 40));
  pt->credit_fc = true;
  pt->credit_unit = unit;
  pt->nocredit = 0;
  for (uint32_t v = 0; v < FAB_MAX_PRIOS; v++) pt->credits[v] = (int64_t)bytes;
  pt->credit_max = (int64_t)bytes;
  pt->synced = 0xff;
}

void fab_port_check(const FabPort *pt) {
  uint64_t total = 0;
  for (uint32_t q = 0; q < FAB_MAX_PRIOS; q++) {
    uint64_t n = 0, bytes = 0;
    for (const FabPkt *p = pt->q[q].head; p; p = p->next) n++, bytes += p->wire;
    if (n != pt->q[q].n || bytes != pt->q[q].bytes)
      g_error("%s:p%u queue %u holds %" G_GUINT64_FORMAT " packets / %" G_GUINT64_FORMAT " B, its ledger says %u / %"
              G_GUINT64_FORMAT, pt->owner->name, pt->index, q, n, bytes, pt->q[q].n, pt->q[q].bytes);
    if (!!(pt->busy_prios >> q & 1) != (n > 0))
      g_error("%s:p%u queue %u: busy mask %x with %" G_GUINT64_FORMAT " packets", pt->owner->name, pt->index, q,
              pt->busy_prios, n);
    total += bytes;
    if (pt->credit_fc && (pt->credits[q] < 0 || pt->credits[q] + pt->presync[q] > pt->credit_max))
      g_error("%s:p%u VL %u has %" G_GINT64_FORMAT " B of credit, outside [0, %" G_GINT64_FORMAT "]", pt->owner->name,
              pt->index, q, pt->credits[q], pt->credit_max);
  }
  if (total != pt->qbytes)
    g_error("%s:p%u queues hold %" G_GUINT64_FORMAT " B, qbytes says %" G_GUINT64_FORMAT, pt->owner->name, pt->index,
            total, pt->qbytes);
}

void fab_port_return_credit(FabEngine *eng, FabPort *pt, uint32_t vl, uint32_t bytes) {
  if (!pt->credit_fc) return; /* the sender does not count credits (a NIC, or RoCE) */
  FabElem *by = eng->cur ? eng->cur : &pt->el; /* keyed as fab_engine_far_at would, without reading pt's key */
  uint64_t tie = by->tie;
  by->tie += 2;
  fab_engine_part_at_tie(eng, pt->part, eng->now + pt->latency, tie, pt,
                         CREDIT_ARG(WAKE_CREDIT, vl, pt->peer->cgen, bytes));
}

/* The far end of pt's link (pt->peer, whose owner returns pt's credits) came
** back up: it advertises, per VL, its buffer less what it still holds. */
static void credit_sync(FabEngine *eng, FabPort *pt) {
  const FabPort *me = pt->peer;
  FabElem *by = eng->cur ? eng->cur : &pt->el;
  for (uint32_t v = 0; v < pt->nprio; v++) {
    uint64_t held = me->owner->held(me->owner, me, v);
    uint64_t room = held < (uint64_t)pt->credit_max ? (uint64_t)pt->credit_max - held : 0;
    uint64_t tie = by->tie;
    by->tie += 2;
    fab_engine_part_at_tie(eng, pt->part, eng->now + pt->latency, tie, pt,
                           CREDIT_ARG(WAKE_CREDIT_SYNC, v, me->cgen, room));
  }
}

void fab_port_enqueue(FabEngine *eng, FabPort *pt, FabPkt *p) {
  g_assert(p->prio < pt->nprio);
  FabPktQ *q = &pt->q[p->prio];
  p->next = NULL;
  if (q->tail) {
    q->tail->next = p;
  } else {
    q->head = p;
    pt->busy_prios |= 1u << p->prio;
  }
  q->tail = p;
  q->n++;
  q->bytes += p->wire;
  pt->qbytes += p->wire;
  if (pt->qbytes > pt->max_qbytes) pt->max_qbytes = pt->qbytes;
  if (G_UNLIKELY(pt->down)) drain(eng, pt); /* lost, even while the packet it cut short is still on the serialiser */
  else if (!pt->tx) start(eng, pt);
}

void fab_port_kick(FabEngine *eng, FabPort *pt) {
  if (!pt->tx) start(eng, pt);
}

/* A PAUSE frame for `prio` arrived at port pt: stop sending that priority
** for quanta x 512 bit times (at this port's rate), or resume at once. */
static void pause_rx(FabEngine *eng, FabPort *pt, uint32_t prio, uint32_t quanta) {
  pt->pause_rx++;
  if (prio >= pt->nprio) return;
  uint32_t was = pt->paused;
  if (quanta) {
    fab_time_t until = eng->now + fab_time_ser_big((uint64_t)quanta * 64, pt->bps); /* 512 bits = 64 B */
    pt->paused |= 1u << prio;
    pt->paused_until[prio] = until;
    fab_engine_at(eng, until, pt, WAKE_UNPAUSE);
    if (!was) pt->paused_since = eng->now;
  } else {
    pt->paused &= ~(1u << prio);
    if (was && !pt->paused) pt->paused_ps += eng->now - pt->paused_since;
    if (!pt->tx) start(eng, pt);
  }
}

void fab_port_send_pause(FabEngine *eng, FabPort *pt, uint32_t prio, uint32_t quanta) {
  FabPkt *p = fab_pkt_alloc(eng);
  p->type = FAB_PKT_PAUSE;
  p->prio = (uint8_t)prio;
  p->seq = quanta;
  p->wire = FAB_PAUSE_WIRE;
  p->ready = eng->now;
  if (pt->ctrl_tail) pt->ctrl_tail->next = p;
  else pt->ctrl_head = p;
  pt->ctrl_tail = p;
  pt->pause_tx++;
  if (!pt->tx) start(eng, pt);
}

void fab_port_set_down(FabEngine *eng, FabPort *pt, bool down) {
  if (down == pt->down) return;
  pt->down = down;
  if (down) {
    pt->epoch++;
    if (pt->fly_head) lose(eng, pt, pt->fly_head); /* the whole wire */
    pt->fly_head = pt->fly_tail = NULL;
    drain(eng, pt); /* the packet being serialised is lost at its end (its epoch has passed) */
    return;
  }
  pt->cgen++;
  if (pt->credit_fc) {
    bool advertised = pt->peer->owner->held != NULL;
    for (uint32_t v = 0; v < FAB_MAX_PRIOS; v++) {
      pt->credits[v] = advertised ? 0 : pt->credit_max;
      pt->presync[v] = 0;
    }
    pt->synced = advertised ? 0 : 0xff;
    pt->nocredit = advertised ? (1u << pt->nprio) - 1 : 0;
  }
  if (pt->peer->credit_fc && pt->owner->held) credit_sync(eng, pt->peer);
  if (!pt->tx) start(eng, pt);
}

void fab_port_set_far_down(FabPort *in, bool down, uint64_t *by) {
  g_assert(in->peer->cut);
  in->in_lost_by = by;
  if (down == in->in_down) return;
  in->in_down = down;
  in->in_epoch += down;
}

/* A packet from in->peer's cut wire that was on it when the link went down. */
static void lose_in(FabEngine *eng, FabPort *in, FabPkt *p) {
  uint64_t bytes = 0, sent_in = p->ready, n = free_chain(eng, p, &bytes);
  in->in_lost += n;
  in->in_lost_bytes += bytes;
  if (in->in_lost_by) {
    uint64_t *c = &in->in_lost_by[3 * sent_in];
    c[0] += n;
    c[1] += bytes;
    if (c[2]++ && eng->cur) eng->events--; /* one engine's wire has one arrival pending (its head's), not one each */
  }
}

void fab_port_fold_far_losses(FabPort *pt) {
  FabPort *in = pt->peer;
  if (!in || !in->in_lost) return;
  pt->lost += in->in_lost;
  pt->lost_bytes += in->in_lost_bytes;
  pt->drops += in->in_lost;
  pt->drop_bytes += in->in_lost_bytes;
  in->in_lost = in->in_lost_bytes = 0;
}

void fab_port_mark_cut(FabPort *pt, const FabPar *par) {
  g_assert(!pt->fly_head);
  pt->part = (uint8_t)fab_par_part_of(par, pt);
  pt->far = (uint8_t)fab_par_part_of(par, &pt->wire);
  pt->cut = pt->part != pt->far;
}

fab_time_t fab_port_paused_time(const FabPort *pt, fab_time_t now) {
  return pt->paused_ps + (pt->paused ? now - pt->paused_since : 0);
}

/* The port whose wire `self` is. */
static inline FabPort *wire_port(const void *self) { return (FabPort *)((char *)self - offsetof(FabPort, wire)); }

/* A wire runs where its far end does: with the peer port. */
static const void *wire_home(const void *self) { return &wire_port(self)->peer->el; }

/* The head of pt's wire arrives at the far end (arg: the link's epoch when
** it was sent); the port at the far end, pt->peer, takes it. */
static void wire_wake(FabEngine *eng, void *self, uint64_t arg) {
  FabPort *pt = wire_port(self), *in = pt->peer;
  FabPkt *p;
  if (G_UNLIKELY(pt->cut)) {
    p = (FabPkt *)(uintptr_t)arg;
    if (G_UNLIKELY(p->ready != in->in_epoch)) { /* the link went down since it was sent */
      lose_in(eng, in, p);
      return;
    }
  } else {
    if (G_UNLIKELY((uint32_t)arg != pt->epoch)) return; /* its packet was lost when the link went down */
    p = pt->fly_head;
    pt->fly_head = p->next;
    if (!pt->fly_head) pt->fly_tail = NULL;
    else fab_engine_at_tie(eng, p->ready, wire_tie(pt), &pt->wire, arg); /* the next one's arrival (fly) */
    p->next = NULL;
  }
  if (G_UNLIKELY(p->type == FAB_PKT_PAUSE)) { /* link level: the far port obeys it */
    pause_rx(eng, in, p->prio, p->seq);
    fab_pkt_free(eng, p);
    return;
  }
  in->owner->receive(eng, in->owner, p, in);
}

static void port_wake(FabEngine *eng, void *self, uint64_t arg) {
  FabPort *pt = self;
  FabPkt *p;
  switch (arg & 0xff) {
  case WAKE_TX_DONE:
    p = pt->tx;
    pt->tx = NULL;
    if (p != &cut_busy) {
      pt->tx_bytes += p->wire;
      pt->tx_pkts++;
      pt->tx_last = eng->now;
      p->hops++;
      if (G_UNLIKELY(pt->tx_epoch != pt->epoch)) lose(eng, pt, p); /* the link went down under it */
      else fly(eng, pt, p, eng->now + pt->latency);
    }
    start(eng, pt);
    break;
  case WAKE_CREDIT:
  case WAKE_CREDIT_SYNC: {
    uint32_t vl = CREDIT_VL(arg);
    int64_t bytes = CREDIT_BYTES(arg);
    if (CREDIT_GEN(arg) != (pt->cgen & 0x1fffu)) break; /* made before the far end came back up: in its figure */
    if ((arg & 0xff) == WAKE_CREDIT_SYNC) {
      pt->credits[vl] = bytes + pt->presync[vl];
      pt->presync[vl] = 0;
      pt->synced |= (uint8_t)(1u << vl);
    } else if (G_UNLIKELY(!(pt->synced >> vl & 1))) { /* a return that overtook the figure (the same time) */
      pt->presync[vl] += bytes;
      break;
    } else {
      pt->credits[vl] += bytes;
    }
    if (pt->credits[vl] >= (int64_t)pt->credit_unit) pt->nocredit &= ~(1u << vl);
    if (!pt->tx) start(eng, pt);
    break;
  }
  case WAKE_UNPAUSE: {
    uint32_t was = pt->paused;
    for (uint32_t m = was; m;) {
      uint32_t pr = (uint32_t)__builtin_ctz(m);
      m &= m - 1;
      if (pt->paused_until[pr] <= eng->now) pt->paused &= ~(1u << pr);
    }
    if (was && !pt->paused) pt->paused_ps += eng->now - pt->paused_since;
    if (!pt->tx) start(eng, pt);
    break;
  }
  case WAKE_RETRY:
    if (eng->now == pt->retry_at) pt->retry_at = FAB_TIME_MAX;
    if (!pt->tx) start(eng, pt);
    break;
  default:
    g_assert_not_reached();
  }
}

/* Free a chain; count (and add the bytes of) the packets NICs sent and
** receive one for one, not the PAUSE frames switches made nor NVLS segments
** (which an NVSwitch absorbs n to 1 and multicasts 1 to n). */
static uint64_t free_chain(FabEngine *eng, FabPkt *p, uint64_t *bytes) {
  uint64_t n = 0;
  while (p) {
    FabPkt *next = p->next;
    if (p->type == FAB_PKT_PAUSE || fab_pkt_is_nvls(p->type)) {
      fab_pkt_free(eng, p);
      p = next;
      continue;
    }
    *bytes += p->wire;
    fab_pkt_free(eng, p);
    p = next;
    n++;
  }
  return n;
}

uint64_t fab_port_flush(FabEngine *eng, FabPort *pt, uint64_t *bytes) {
  uint64_t n = 0;
  for (uint32_t pr = 0; pr < pt->nprio; pr++) {
    n += free_chain(eng, pt->q[pr].head, bytes);
    pt->q[pr] = (FabPktQ){0};
  }
  pt->busy_prios = 0;
  pt->qbytes = 0;
  n += free_chain(eng, pt->ctrl_head, bytes);
  pt->ctrl_head = pt->ctrl_tail = NULL;
  if (pt->tx && pt->tx != &cut_busy) {
    pt->tx->next = NULL;
    n += free_chain(eng, pt->tx, bytes);
  }
  pt->tx = NULL;
  n += free_chain(eng, pt->fly_head, bytes);
  pt->fly_head = pt->fly_tail = NULL;
  return n;
}

uint64_t fab_port_flush_event(FabEngine *eng, const void *target, uint64_t arg, uint64_t *bytes) {
  const FabElem *e = target;
  if (e->ops != &fab_wire_ops || !wire_port(target)->cut) return 0;
  FabPkt *p = (FabPkt *)(uintptr_t)arg;
  p->next = NULL;
  FabPort *in = wire_port(target)->peer;
  if (p->ready != in->in_epoch) { /* lost already, as one engine counts it */
    lose_in(eng, in, p);
    return 0;
  }
  return free_chain(eng, p, bytes);
}

uint64_t fab_port_in_flight(const FabPort *pt) {
  uint64_t n = pt->tx && pt->tx != &cut_busy ? 1 : 0;
  for (const FabPkt *p = pt->fly_head; p; p = p->next) n++;
  return n;
}

static void shift_list(FabPkt *p, fab_time_t dt) {
  for (; p; p = p->next) {
    p->ready = fab_time_later(p->ready, dt);
    p->sent = fab_time_later(p->sent, dt);
  }
}

void fab_port_shift(FabPort *pt, fab_time_t dt) {
  g_assert(!pt->cut);
  pt->retry_at = fab_time_later(pt->retry_at, dt);
  pt->tx_last = fab_time_later(pt->tx_last, dt);
  if (pt->paused) pt->paused_since += dt; /* the skipped stretch's pauses are the caller's (fastfwd.c) */
  for (uint32_t p = 0; p < FAB_MAX_PRIOS; p++) pt->paused_until[p] = fab_time_later(pt->paused_until[p], dt);
  for (uint32_t p = 0; p < pt->nprio; p++) shift_list(pt->q[p].head, dt);
  shift_list(pt->ctrl_head, dt);
  shift_list(pt->fly_head, dt);
  if (pt->tx && pt->tx != &cut_busy) {
    pt->tx->ready = fab_time_later(pt->tx->ready, dt);
    pt->tx->sent = fab_time_later(pt->tx->sent, dt);
  }
}

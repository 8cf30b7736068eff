/* NIC with go-back-N reliable transport. See nic.h. */
#include "nic.h"
#include "bits.h"
#include "ecmp.h"
#include "nvls.h"
#include "srd.h"
#include <math.h>
#include <string.h>
#include <glib.h>

/* Event kinds: a flow starts, its retransmission timer, its CC timer; the
** NIC's one pacing wake-up (flow 0); and, a pacing kind with bit 34 set, a
** streamed flow's time (nic.h: at its sender, it counts as sent; at its
** receiver, its held last packet arrives). A flow's events carry its slot
** and its generation (29 bits of it: a slot is not reused 2^29 times while
** one event waits). */
enum { WAKE_START = 0, WAKE_RTO = 1, WAKE_CC = 2, WAKE_PACE = 3 };
#define WAKE_GEN_MASK 0x1fffffffu
#define WAKE_GEN_OF(f) ((f)->gen & WAKE_GEN_MASK)
#define WAKE(kind, f) (((uint64_t)WAKE_GEN_OF(f) << 35) | ((uint64_t)(f)->slot << 2) | (kind))
#define WAKE_STREAM(f) (WAKE(WAKE_PACE, f) | 1ull << 34)
#define WAKE_IS_STREAM(arg) (((arg) & 3) == WAKE_PACE && ((arg) >> 34 & 1))
#define WAKE_SLOT(arg) ((uint32_t)((arg) >> 2))
#define WAKE_GEN(arg) ((uint32_t)((arg) >> 35))

static void nic_wake(FabEngine *eng, void *self, uint64_t arg);
static const FabOps nic_ops = {"nic", nic_wake};

const char *const fab_spray_names[] = {"none", "round-robin", "avoid", NULL};
const char *const fab_reorder_bin_names[FAB_REORDER_BINS] = {"0",     "1",     "2-3",    "4-7",     "8-15",
                                                             "16-31", "32-63", "64-127", "128-255", "256+"};

/* ---- the flow table ---------------------------------------------------------- */

/* Whether nothing names f any more (fab_nic_init): then tell the owner. An NVLS member (not SHARP's) once
** done and all sent: the switch names a member only in what it sends it. */
static void maybe_release(FabNic *nic, FabFlow *f) {
  if (!nic->release) return;
  if (f->nvls) {
    if (f->nvls_mode != FAB_NVLS_SHARP && f->sent_all && f->end && !f->in_rr) nic->release(nic->ctx, f);
    return;
  }
  if (G_UNLIKELY(nic->split)) { /* the other end's fields are another partition's: the owner checks the rest */
    bool tx = f->src == nic->id && f->acked && !f->in_rr;
    bool rx = f->dst == nic->id && f->rcv_nxt == f->npkts && (!f->ordered || f->end);
    if (tx || rx) nic->release(nic->ctx, f);
    return;
  }
  if (fab_flow_releasable(f)) nic->release(nic->ctx, f);
}

/* The wire bytes of a data packet of `payload` bytes (a train: a header per hdr_unit). */
static inline uint32_t data_wire(const FabFlow *f, uint32_t payload) {
  if (f->hdr_unit && payload > f->hdr_unit) return payload + f->overhead * ((payload + f->hdr_unit - 1) / f->hdr_unit);
  return payload + f->overhead;
}

/* ---- selective repeat (nic.h) ---------------------------------------------- */

/* Drop the first k bits (the window moved k PSNs on). */
static inline void bits_shift(uint64_t *m, uint32_t k) { fab_bits_shift(m, FAB_SACK_WORDS, k); }

/* The bits set from bit 0 on, in a row. */
static uint32_t ones_from_0(const uint64_t *m) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < FAB_SACK_WORDS; i++) {
    if (m[i] == UINT64_MAX) {
      n += 64;
      continue;
    }
    return n + (uint32_t)__builtin_ctzll(~m[i]);
  }
  return n;
}

/* Selective: the next PSN presumed lost and not resent yet, or UINT32_MAX. */
static uint32_t next_lost(FabFlow *f) {
  if (f->rtx_nxt < f->snd_una) f->rtx_nxt = f->snd_una;
  while (f->rtx_nxt < f->rtx_end && f->rtx_nxt - f->snd_una < FAB_SACK_WINDOW &&
         fab_bit_at(f->sacked, f->rtx_nxt - f->snd_una))
    f->rtx_nxt++;
  return f->rtx_nxt < f->rtx_end ? f->rtx_nxt : UINT32_MAX;
}

/* Whether SHARP member f may send its next contribution: one is left, and
** its window has room. */
static inline bool sharp_open(const FabFlow *f) {
  return f->snd_nxt < f->npkts && f->snd_nxt - f->rcv_nxt < f->sharp_win;
}

/* Whether a window algorithm's window (cc.h) leaves room for a new packet:
** fewer than max(win_bytes / mss, 1) + ack_every - 1 unacknowledged (the
** receiver holds back the ACK of up to ack_every - 1 packets it has). */
static inline bool cc_room(const FabFlow *f) {
  if (G_LIKELY(!f->cc.win_bytes)) return true;
  uint64_t pkts = MAX(f->cc.win_bytes / MAX(f->mtu, 1u), 1u) + MAX(f->ack_every, 1u) - 1;
  return f->snd_nxt - f->snd_una < pkts;
}

/* Whether the flow has a packet to send now (it belongs in the round robin). */
static bool has_work(const FabNic *nic, FabFlow *f) {
  if (G_UNLIKELY(f->nvls && f->nvls_mode == FAB_NVLS_SHARP)) return sharp_open(f);
  if (!nic->cfg.selective || f->nvls) return f->snd_nxt < f->npkts && cc_room(f); /* NVLS: never acknowledged */
  uint32_t lost = f->srd ? fab_srd_next_lost(f) : next_lost(f);
  return lost != UINT32_MAX || (f->snd_nxt < f->npkts && f->snd_nxt - f->snd_una < FAB_SACK_WINDOW && cc_room(f));
}

/* Spraying (nic.h): the entropy value the flow's next data packet takes, and
** the pass's order drawn again after its last; under avoid, a value marked
** to skip is passed over (once). */
static uint16_t next_ev(FabNic *nic, FabFlow *f) {
  const uint32_t n = nic->cfg.paths;
  for (;;) {
    uint32_t v = (f->ev_next ^ f->ev_xor) & (n - 1);
    if (++f->ev_next == n) {
      f->ev_next = 0;
      f->ev_xor = (uint16_t)fab_rng_below(&nic->rng, n);
    }
    if (!fab_bit_at(f->ev_skip, v)) return (uint16_t)v;
    f->ev_skip[v >> 6] &= ~(1ull << (v & 63));
    nic->ev_skips++;
  }
}

/* Spraying under avoid with selective receivers, not srd (nic.h): the
** sender learns from losses and RTTs per value. */
static inline bool ev_learns(const FabNic *nic, const FabFlow *f) {
  return nic->cfg.spray == FAB_SPRAY_AVOID && nic->cfg.selective && !f->srd && f->path == FAB_PATH_NET;
}

/* f's PSN -> value ring, from the NIC's spares. */
static uint8_t *ev_take(FabNic *nic) {
  if (nic->ev_free && nic->ev_free->len) return g_ptr_array_steal_index_fast(nic->ev_free, nic->ev_free->len - 1);
  if (!nic->ev_all) {
    nic->ev_all = g_ptr_array_new_with_free_func(g_free);
    nic->ev_free = g_ptr_array_new();
  }
  uint8_t *r = g_malloc(FAB_SACK_WINDOW);
  g_ptr_array_add(nic->ev_all, r);
  return r;
}

/* The sender is done with f: its ring goes back. */
static void ev_give_back(FabNic *nic, FabFlow *f) {
  if (!f->ev_of) return;
  g_ptr_array_add(nic->ev_free, f->ev_of);
  f->ev_of = NULL;
}

/* The ECMP hash of a sprayed data packet on entropy value v: the flow's
** source port moved on by v (within the dynamic range fab_ecmp_sport uses).
** Under a CRC32 hash the values are the aligned block around the port
** (its low bits XOR v: sport ^ v stays in the range, v < 256), so that they
** cover the hash's bits evenly (models/ecmp.h), and the hash is the flow's
** own changed by each bit of v. */
static inline uint32_t ev_hash(const FabNic *nic, const FabFlow *f, uint16_t v) {
  if (nic->cfg.hash == FAB_HASH_CRC32) {
    uint32_t h = f->hash_fwd;
    for (uint32_t b = v; b; b &= b - 1) h ^= nic->ev_crc[__builtin_ctz(b)];
    return h;
  }
  uint16_t sport = (uint16_t)(49152u + ((f->sport - 49152u + v) & 0x3fffu));
  return fab_ecmp_hash(f->src, f->dst, sport, 4791, 17, nic->cfg.ecmp_seed);
}

static inline bool gpu_limited(const FabFlow *f) { return f->max_bps && f->max_bps < f->cc.line_bps; }

/* A flow with its own GPU-side limit (max_bps below the line) sends packet
** `seq` once the GPU has made its data, at max_bps after the data before it:
** its last byte leaves no earlier than that, so a flow takes bytes / max_bps
** (plus the path), exactly, from one packet up. Sets next_tx. */
static void pace_made(const FabEngine *eng, FabFlow *f, uint32_t seq) {
  if (seq >= f->npkts) return;
  uint32_t w = data_wire(f, fab_flow_payload(f, f->mtu, seq));
  fab_time_t at = f->made + fab_time_ser(w, f->max_bps) - fab_time_ser(w, f->cc.line_bps);
  if (f->stream) at = at > FAB_STREAM_AHEAD ? MAX(f->made, at - FAB_STREAM_AHEAD) : f->made; /* as it is made */
  f->next_tx = MAX(f->next_tx, MAX(at, eng->now));
}

/* Data packet p of a flow with max_bps left: its data are made by `made`, after the data before it; streamed
** (nic.h), p left `ahead` of its last byte's making (at most FAB_STREAM_AHEAD). Then the next packet's time. */
static void made_sent(const FabEngine *eng, FabFlow *f, FabPkt *p) {
  f->made = MAX(f->made + fab_time_ser(p->wire, f->max_bps), eng->now + fab_time_ser(p->wire, f->cc.line_bps));
  if (f->stream) { /* within the range by next_tx (pace_made); a resend of a larger packet than the one paced for
                    ** (go-back-N after a timeout) may come out further ahead: held as far as the field goes */
    fab_time_t due = f->made - fab_time_ser(p->wire, f->cc.line_bps);
    p->ahead = due > eng->now ? (uint32_t)MIN(due - eng->now, (fab_time_t)FAB_STREAM_AHEAD) : 0;
  }
  pace_made(eng, f, f->snd_nxt);
}

static inline FabPort *path_port(FabNic *nic, const FabFlow *f) {
  return f->path == FAB_PATH_NVL ? &nic->nvl : &nic->port;
}

static void rr_push(FabNic *nic, FabFlow *f) {
  uint32_t k = f->path;
  f->rr_next = NULL;
  if (nic->rr_tail[k]) nic->rr_tail[k]->rr_next = f;
  else nic->rr_head[k] = f;
  nic->rr_tail[k] = f;
  f->in_rr = true;
  if (nic->rr_n[k][f->prio]++ == 0) nic->rr_prios[k] |= 1u << f->prio;
}

/* Take f (whose predecessor in the round robin is prev, or NULL) out. */
static void rr_unlink(FabNic *nic, FabFlow *prev, FabFlow *f) {
  uint32_t k = f->path;
  if (prev) prev->rr_next = f->rr_next;
  else nic->rr_head[k] = f->rr_next;
  if (nic->rr_tail[k] == f) nic->rr_tail[k] = prev;
  f->rr_next = NULL;
  f->in_rr = false;
  if (--nic->rr_n[k][f->prio] == 0) nic->rr_prios[k] &= ~(1u << f->prio);
}

/* A flow SRD delivers (srd.h): a network flow of an srd NIC. */
static inline bool srd_flow(const FabNic *nic, const FabFlow *f) {
  return nic->cfg.srd && f->path == FAB_PATH_NET && !f->nvls;
}

/* SRD: a network flow's sender records, from the NIC's free list. */
static void srd_take(FabNic *nic, FabFlow *f) {
  FabSrdTx *s = nic->srd_free;
  if (s) {
    nic->srd_free = s->next;
  } else {
    s = g_new0(FabSrdTx, 1);
    if (!nic->srd_all) nic->srd_all = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(nic->srd_all, s);
  }
  s->next = NULL;
  fab_srd_reset(s);
  f->srd = s;
}

/* A connection's state into the flow that starts on it (srd.h), after its CC init. */
static void srd_resume(FabNic *nic, FabFlow *f) {
  const FabSrdConn *c = nic->srd_conns ? g_hash_table_lookup(nic->srd_conns, GUINT_TO_POINTER(f->dst + 1)) : NULL;
  if (!c) return;
  f->srd->srtt = c->srtt;
  f->srd->rttvar = c->rttvar;
  f->srd->min_rtt = c->min_rtt;
  if (nic->cc) {
    f->cc.rate_bps = MIN(c->cc.rate_bps, f->cc.line_bps);
    f->cc.u = c->cc.u;
  }
}

/* The sender is done with f (every PSN acknowledged, or it failed): what it
** learned stays with its connection. */
static void srd_give_back(FabNic *nic, FabFlow *f) {
  if (!f->srd) return;
  if (!nic->srd_conns) nic->srd_conns = g_hash_table_new_full(NULL, NULL, NULL, g_free);
  FabSrdConn *c = g_hash_table_lookup(nic->srd_conns, GUINT_TO_POINTER(f->dst + 1));
  if (!c) {
    c = g_new0(FabSrdConn, 1);
    g_hash_table_insert(nic->srd_conns, GUINT_TO_POINTER(f->dst + 1), c);
  }
  *c = (FabSrdConn){f->srd->srtt, f->srd->rttvar, f->srd->min_rtt, f->cc};
  f->srd->next = nic->srd_free;
  nic->srd_free = f->srd;
  f->srd = NULL;
}

/* Make sure a CC timer event is pending at or before f->cc.timer_at. */
static void cc_arm(FabEngine *eng, FabNic *nic, FabFlow *f) {
  fab_time_t t = f->cc.timer_at;
  if (t < f->cc_wake_at) {
    if (t < eng->now) t = eng->now;
    f->cc_wake_at = t;
    fab_engine_at(eng, t, nic, WAKE(WAKE_CC, f));
  }
}

/* The wire bytes of an NVLS segment: multimem traffic carries nvls_eff of data per NVLink byte. */
static uint32_t nvls_wire(const FabNic *nic, const FabFlow *f, uint32_t payload) {
  if (f->nvls_mode == FAB_NVLS_SHARP) return payload + f->overhead; /* a network packet */
  double eff = nic->cfg.nvls_eff > 0 ? nic->cfg.nvls_eff : 1.0;
  return (uint32_t)ceil((double)payload / eff) + f->overhead;
}

static void nvls_done(FabEngine *eng, FabNic *nic, FabFlow *f) {
  f->end = eng->now;
  if (nic->done) nic->done(nic->ctx, f);
  maybe_release(nic, f);
}

/* The next NVLS packet of f into `p`: a multicast of an owned reduced segment
** when one waits (AR), else the next contribution (AR, RS, SHARP) or store
** (AG). NVLink and SHARP's InfiniBand are lossless (credits): nothing is
** acknowledged. */
static FabPkt *nvls_packet(FabEngine *eng, FabNic *nic, FabFlow *f, FabPkt *p) {
  bool ar = f->nvls_mode == FAB_NVLS_AR, sharp = f->nvls_mode == FAB_NVLS_SHARP;
  if (sharp) {
    g_assert(sharp_open(f));
    p->type = FAB_PKT_SHARP_UP;
    p->seq = f->snd_nxt++;
    p->hash = f->sharp_node;
    p->lane = f->lane;
  } else if (ar && f->nvls_mc < f->nvls_red) {
    p->type = FAB_PKT_NVLS_MC;
    p->seq = f->nvls_member + f->nvls_mc++ * f->nvls_n;
  } else {
    g_assert(f->snd_nxt < f->npkts);
    p->type = f->nvls_mode == FAB_NVLS_AG ? FAB_PKT_NVLS_MC : FAB_PKT_NVLS_UP;
    p->seq = f->snd_nxt++;
  }
  p->dst = f->nvls_group;
  p->payload = fab_flow_payload(f, f->mtu, p->seq);
  p->wire = nvls_wire(nic, f, p->payload);
  p->prio = f->prio;
  p->sent = eng->now;
  nic->nvls_tx_bytes += p->wire;
  if (!sharp && gpu_limited(f)) /* its channel's CTA: its next request once this one's bytes are made */
    f->next_tx = MAX(f->next_tx, eng->now + fab_time_ser(p->wire, f->max_bps));
  f->snd_max = f->snd_nxt;
  if (sharp ? sharp_open(f) : f->snd_nxt < f->npkts || (ar && f->nvls_mc < f->nvls_red)) rr_push(nic, f);
  if (f->snd_nxt == f->npkts && (!ar || f->nvls_mc == f->nvls_own) && !f->sent_all) {
    f->sent_all = f->acked = true;
    if (nic->sent) nic->sent(nic->ctx, f);
    if (!f->nvls_need) nvls_done(eng, nic, f); /* an RS member that owns nothing */
    else maybe_release(nic, f);                 /* an RS member done before its last contribution left */
  }
  return p;
}

/* An NVLS packet for flow f: a reduced segment it owns, or a multicast copy. */
static void nvls_rx(FabEngine *eng, FabNic *nic, FabFlow *f, const FabPkt *p) {
  g_assert(f->nvls && f->dst == nic->id);
  nic->nvls_rx_bytes += p->wire;
  if (p->type == FAB_PKT_NVLS_RED && f->nvls_mode == FAB_NVLS_AR) { /* multicast it next */
    f->nvls_red++;
    if (!f->in_rr) rr_push(nic, f);
    fab_port_kick(eng, &nic->nvl);
    return;
  }
  f->rcv_nxt++;
  f->rcv_bytes += p->payload;
  if (f->nvls_mode == FAB_NVLS_SHARP && !f->in_rr && sharp_open(f)) { /* its window opened */
    rr_push(nic, f);
    fab_port_kick(eng, &nic->port);
  }
  if (f->rcv_nxt == f->nvls_need) nvls_done(eng, nic, f);
}

/* Build the next data packet of the first eligible flow in the round robin:
** not acknowledged, its priority not paused, its pacing time reached. Cost:
** the number of flows skipped; none when every priority with a flow waiting
** is paused or out of credit (a GPU behind a full PCIe switch or NVSwitch
** port asks at every credit return: with thousands of flows waiting, the
** walk was most of a large training step's time). */
static FabPkt *nic_pull(FabEngine *eng, FabNode *self, FabPort *port) {
  FabNic *nic = (FabNic *)self;
  uint32_t path = port == &nic->nvl ? FAB_PATH_NVL : FAB_PATH_NET;
  FabPkt *relayed = G_UNLIKELY(nic->relay_turn) && path == FAB_PATH_NET ? fab_pxn_next(nic, port) : NULL;
  if (relayed) return relayed; /* PXN: a relayed packet's turn (pxn.c) */
  if (!(nic->rr_prios[path] & ~(port->paused | port->nocredit))) /* what the walk would find */
    return path == FAB_PATH_NET ? fab_pxn_next(nic, port) : NULL;
  FabFlow *prev = NULL, *f = nic->rr_head[path];
  fab_time_t soonest = FAB_TIME_MAX;
  while (f) {
    FabFlow *next = f->rr_next;
    /* acked while waiting its turn (or, selective: what it had to resend was acknowledged meanwhile) */
    if (f->acked || (G_UNLIKELY(nic->cfg.selective) && !f->nvls && !has_work(nic, f))) {
      rr_unlink(nic, prev, f);
      maybe_release(nic, f);
      f = next;
      continue;
    }
    bool held = G_UNLIKELY(nic->mesh_out) && path == FAB_PATH_NVL &&
                nic->mesh_out[f->dst % nic->cfg.nvl_domain]->qbytes >= nic->mesh_limit; /* its link is full */
    if (!held && !((port->paused | port->nocredit) & (1u << f->prio))) { /* PFC pause, IB credits */
      fab_time_t at = f->next_tx;
      if (G_UNLIKELY(f->rank_bps) && nic->cap_next > at) at = nic->cap_next;
      if (G_UNLIKELY(f->hold_until > at) && f->snd_nxt >= f->hold_seq) at = f->hold_until; /* its read part */
      if (G_UNLIKELY(nic->cfg.msg_gap) && path == FAB_PATH_NET && !f->snd_max && nic->msg_next > at) at = nic->msg_next;
      if (at <= eng->now) break;
      if (at < soonest) soonest = at;
    }
    prev = f;
    f = next;
  }
  if (!f) { /* nothing eligible: one wake-up when the first paced flow may send */
    if (soonest < nic->pace_at) {
      nic->pace_at = soonest;
      fab_engine_at(eng, soonest, nic, (uint64_t)WAKE_PACE);
    }
    return path == FAB_PATH_NET ? fab_pxn_next(nic, port) : NULL;
  }
  rr_unlink(nic, prev, f);
  if (path == FAB_PATH_NET) nic->relay_turn = nic->relay_head != NULL; /* PXN: then a relayed packet */
  if (G_UNLIKELY(nic->cfg.msg_gap) && path == FAB_PATH_NET && !f->snd_max) nic->msg_next = eng->now + nic->cfg.msg_gap;
  FabPkt *p = fab_pkt_alloc(eng);
  p->flow = f->slot;
  p->src = f->src;
  if (f->nvls) return nvls_packet(eng, nic, f, p);
  f->inflight++;
  uint32_t seq = f->srd ? fab_srd_next_lost(f) : nic->cfg.selective ? next_lost(f) : UINT32_MAX;
  if (seq == UINT32_MAX) seq = f->snd_nxt++;
  else if (!f->srd) f->rtx_nxt++; /* resent: next time, the next one */
  p->type = FAB_PKT_DATA;
  p->seq = seq;
  p->dst = f->dst;
  p->hash = f->hash_fwd;
  if (nic->cfg.spray && f->path == FAB_PATH_NET) {
    bool learns = ev_learns(nic, f);
    if (learns && f->ev_of && seq < f->snd_max) { /* a resend: the value it last took presumably lost it */
      fab_bit_set(f->ev_skip, f->ev_of[seq % FAB_SACK_WINDOW]);
      nic->ev_loss_avoids++;
    }
    p->ev = next_ev(nic, f);
    if (learns) {
      if (!f->ev_of) f->ev_of = ev_take(nic);
      f->ev_of[seq % FAB_SACK_WINDOW] = (uint8_t)p->ev;
    }
    p->hash = ev_hash(nic, f, p->ev);
    if (nic->cfg.spray == FAB_SPRAY_AVOID) p->flags |= FAB_PKTF_ECT; /* it reacts to marks */
  }
  p->lane = f->lane;
  if (f->stripes > 1) { /* its stripe's NIC (nic.h, striping) */
    if (!nic->cfg.spray) p->ev = (uint16_t)(seq % f->stripes);
    p->lane = (uint8_t)(1 + (MAX(f->lane, 1u) - 1u + p->ev % f->stripes) % nic->cfg.stripe_rails); /* no lane: 1st */
  }
  if (f->srd) {
    p->flags |= FAB_PKTF_ECT;
    fab_srd_sent(f, seq, p->ev, eng->now);
  }
  p->prio = f->prio;
  p->payload = fab_flow_payload(f, f->mtu, seq);
  p->wire = data_wire(f, p->payload);
  if (f->hdr_unit && p->payload > f->hdr_unit) p->flags |= FAB_PKTF_TRAIN; /* a header per mtu */
  if (f->ar && !(f->imm && seq + 1 == f->npkts)) p->flags |= FAB_PKTF_AR; /* not the immediate */
  p->sent = eng->now;
  if (seq + 1 == f->npkts) p->flags |= FAB_PKTF_LAST;
  if (seq < f->snd_max) {
    p->flags |= FAB_PKTF_RETX;
    f->retransmits++;
    nic->retransmits++;
  } else {
    f->snd_max = seq + 1;
    f->last_tx = eng->now;
  }
  nic->tx_data_pkts++;
  nic->tx_data_bytes += p->wire;
  if (nic->cc) {
    p->flags |= nic->cc->tx_flags;
    if (f->cc.rate_bps < f->cc.line_bps) f->next_tx = eng->now + fab_time_ser(p->wire, f->cc.rate_bps);
    nic->cc->on_sent(&f->cc, &nic->cfg.cc, p->wire, eng->now);
    cc_arm(eng, nic, f);
  }
  if (f->rank_bps) /* the GPU's own limit on its capped flows together, below whatever CC allows */
    nic->cap_next = eng->now + fab_time_ser(p->wire, f->rank_bps);
  if (gpu_limited(f)) made_sent(eng, f, p); /* the GPU makes the data */
  if (!f->timer_armed) {
    f->timer_armed = true;
    f->deadline = eng->now + (f->srd ? fab_srd_rto(f, nic->cfg.rto_min, nic->cfg.rto) : nic->cfg.rto);
    fab_engine_at(eng, f->deadline, nic, WAKE(WAKE_RTO, f));
  }
  if (has_work(nic, f)) rr_push(nic, f);
  /* sent: its last packet left; read-based, its runt (libfabric takes the next message at once, nic.h) */
  if ((seq + 1 == f->npkts || (f->reading && seq + 1 == f->hold_seq)) && !f->sent_all) {
    f->sent_all = true;
    if (p->ahead && f->stream) fab_engine_at(eng, eng->now + p->ahead, nic, WAKE_STREAM(f)); /* once made */
    else if (nic->sent) nic->sent(nic->ctx, f);
  }
  return p;
}

/* An ACK, NAK or CNP of flow f from its receiver; `sack`: an ACK's selectively acknowledged PSN + 1 (0: none);
** `dsack`: an ACK answering a duplicate, telling the sender how deep reordering went (the most PSNs a packet of
** the flow came ahead, + 1; 0: not one); `echo`: the data packet it answers (an ACK or NAK carries its send time,
** for RTT; under srd also its entropy value and congestion mark), NULL for a CNP. */
static void send_ctrl(FabEngine *eng, FabNic *nic, FabFlow *f, uint8_t type, uint32_t sack, uint32_t dsack,
                      const FabPkt *echo) {
  FabPkt *p = fab_pkt_alloc(eng);
  p->type = type;
  p->flow = f->slot;
  f->rx_inflight++;
  p->seq = f->rcv_nxt;
  p->payload = sack;
  p->src = f->dst;
  p->dst = f->src;
  p->hash = f->hash_rev;
  p->lane = f->lane;
  p->prio = f->prio;
  p->wire = f->path == FAB_PATH_NVL ? nic->cfg.nvl_overhead : nic->cfg.transport.ack_bytes;
  if (dsack) {
    p->flags |= FAB_PKTF_RETX; /* on an ACK: a duplicate came (D-SACK, RFC 2883) */
    p->ev = (uint16_t)MIN(dsack, UINT16_MAX);
  } else if (echo && srd_flow(nic, f)) { /* srd: the ACK names its packet's value and echoes its mark */
    p->ev = echo->ev;
    if (echo->flags & FAB_PKTF_ECN) p->flags |= FAB_PKTF_ECE;
  } else if (type != FAB_PKT_CNP && nic->cfg.spray == FAB_SPRAY_AVOID && f->path == FAB_PATH_NET) {
    if (echo) p->ev = echo->ev; /* the value of the packet it answers (its RTT, with `sent`) */
    if (f->ece) { /* echo the last congestion mark and its value */
      p->flags |= FAB_PKTF_ECE;
      p->mark_ev = f->ece_ev;
      f->ece = false;
    }
  } else if (type != FAB_PKT_CNP && nic->cc && nic->cc->echo == FAB_CC_ECHO_CE) { /* what came, what was marked */
    p->ev = f->rx_n;
    p->mark_ev = f->rx_ce;
    if (f->rx_ce) p->flags |= FAB_PKTF_ECE;
    f->rx_n = f->rx_ce = 0;
  } else if (type != FAB_PKT_CNP && echo && nic->cc && nic->cc->echo == FAB_CC_ECHO_INT) {
    p->mark_ev = echo->mark_ev; /* the path's utilisation (hpcc.h) */
  }
  p->ready = eng->now;
  p->sent = echo ? echo->sent : 0;
  nic->tx_ctrl_pkts++;
  fab_port_enqueue(eng, path_port(nic, f), p);
}

/* A duplicate of an in-order PSN the receiver ACKed (or would have): ACK
** again, as our ACK may have been lost. */
static inline bool ack_duplicate(const FabFlow *f, uint32_t seq) {
  return seq + 1 == f->npkts || (seq + 1) % f->ack_every == 0;
}

/* An ordered sender's messages at their receiver (nic.h, message order). */
typedef struct FabMsgPeer {
  uint32_t next;     /* the msg_seq it completes next */
  GHashTable *held;  /* msg_seq -> FabFlow: arrived whole, waiting for an earlier one */
} FabMsgPeer;

static void msg_peer_free(gpointer p) {
  FabMsgPeer *m = p;
  g_hash_table_destroy(m->held);
  g_free(m);
}

/* Flow f has all its bytes: complete it now, or, ordered under srd, once
** the messages before it from its sender have completed (then those it
** held up too, in order). */
static void deliver(FabEngine *eng, FabNic *nic, FabFlow *f) {
  if (!f->ordered) {
    f->end = eng->now;
    if (nic->done) nic->done(nic->ctx, f);
    return;
  }
  if (!nic->msg_rx) nic->msg_rx = g_hash_table_new_full(NULL, NULL, NULL, msg_peer_free);
  FabMsgPeer *m = g_hash_table_lookup(nic->msg_rx, GUINT_TO_POINTER(f->src + 1));
  if (!m) {
    m = g_new0(FabMsgPeer, 1);
    m->held = g_hash_table_new(NULL, NULL);
    g_hash_table_insert(nic->msg_rx, GUINT_TO_POINTER(f->src + 1), m);
  }
  if (f->msg_seq != m->next) {
    g_assert(f->msg_seq > m->next);
    g_hash_table_insert(m->held, GUINT_TO_POINTER(f->msg_seq), f);
    nic->msgs_held++;
    return;
  }
  for (FabFlow *g = f; g; g = g_hash_table_lookup(m->held, GUINT_TO_POINTER(m->next))) {
    g_hash_table_remove(m->held, GUINT_TO_POINTER(m->next));
    m->next++;
    g->end = eng->now;
    if (nic->done) nic->done(nic->ctx, g);
    if (g != f) maybe_release(nic, g); /* f: by its packet's receiver, as ever */
  }
}

/* Selective repeat's receiver (nic.h): hold what comes within the window,
** deliver in order, ACK out-of-order packets at once and selectively. */
static void on_data_selective(FabEngine *eng, FabNic *nic, FabFlow *f, const FabPkt *p) {
  uint32_t seq = p->seq, d = seq - f->rcv_nxt;
  bool srd = srd_flow(nic, f); /* every packet ACKed, naming it */
  if (seq < f->rcv_nxt || (d < FAB_SACK_WINDOW && fab_bit_at(f->rcvd, d))) { /* a duplicate: resent too soon, or our
                                                                          ** ACK was lost: a D-SACK says so */
    send_ctrl(eng, nic, f, FAB_PKT_ACK, srd ? seq + 1 : 0, f->reorder + 1, p); /* srd: naming it */
    return;
  }
  if (d >= FAB_SACK_WINDOW) return; /* beyond what the receiver tracks: dropped, resent later */
  if (d) { /* out of order: held, and said so */
    fab_bit_set(f->rcvd, d);
    nic->ooo_pkts++;
    f->reorder = MAX(f->reorder, d);
    send_ctrl(eng, nic, f, FAB_PKT_ACK, seq + 1, 0, p);
    return;
  }
  fab_bit_set(f->rcvd, 0);
  uint32_t n = ones_from_0(f->rcvd), before = f->rcv_nxt;
  for (uint32_t k = 0; k < n; k++) f->rcv_bytes += fab_flow_payload(f, f->mtu, before + k);
  bits_shift(f->rcvd, n);
  f->rcv_nxt += n;
  bool last = f->rcv_nxt == f->npkts;
  if (last) deliver(eng, nic, f);
  if (srd || last || n > 1 || f->rcv_nxt / f->ack_every != before / f->ack_every)
    send_ctrl(eng, nic, f, FAB_PKT_ACK, srd ? seq + 1 : 0, 0, p);
}

static void on_data(FabEngine *eng, FabNic *nic, FabFlow *f, FabPkt *p) {
  nic->rx_data_pkts++;
  nic->rx_data_bytes += p->wire;
  uint32_t seq = p->seq, ahead = seq - f->rcv_nxt;
  if (f->path == FAB_PATH_NET && seq >= f->rcv_nxt &&
      !(nic->cfg.selective && ahead < FAB_SACK_WINDOW && fab_bit_at(f->rcvd, ahead))) /* not a duplicate */
    nic->reorder_hist[fab_reorder_bin(ahead)]++;
  if ((p->flags & FAB_PKTF_ECN) && nic->cfg.spray == FAB_SPRAY_AVOID) {
    f->ece = true;
    f->ece_ev = p->ev;
  }
  if (nic->cc && nic->cc->echo == FAB_CC_ECHO_CE) { /* counted for the next ACK (cc.h) */
    f->rx_n = (uint16_t)MIN(f->rx_n + 1u, UINT16_MAX);
    if (p->flags & FAB_PKTF_ECN) f->rx_ce = (uint16_t)MIN(f->rx_ce + 1u, UINT16_MAX);
  }
  if (nic->cfg.selective) {
    on_data_selective(eng, nic, f, p);
  } else if (seq == f->rcv_nxt) {
    f->rcv_nxt++;
    f->rcv_bytes += p->payload;
    f->nak_sent = false;
    bool last = f->rcv_nxt == f->npkts;
    if (last) deliver(eng, nic, f);
    if (last || f->rcv_nxt % f->ack_every == 0) send_ctrl(eng, nic, f, FAB_PKT_ACK, 0, 0, p);
  } else if (seq > f->rcv_nxt) { /* a gap: ask once for what is missing */
    if (!f->nak_sent) {
      f->nak_sent = true;
      nic->naks_sent++;
      send_ctrl(eng, nic, f, FAB_PKT_NAK, 0, 0, p);
    }
  } else if (ack_duplicate(f, seq)) {
    send_ctrl(eng, nic, f, FAB_PKT_ACK, 0, 0, p);
  }
  if (nic->cc && nic->cc->rx_data(&f->cnp_next, &nic->cfg.cc, p, eng->now)) { /* notification point */
    nic->cnps_sent++;
    send_ctrl(eng, nic, f, FAB_PKT_CNP, 0, 0, NULL);
  }
}

/* SRD's sender (srd.h): each ACK names the packet that made it (its PSN + 1
** in `payload`, its value in `ev`, its send time in `sent`). */
static void on_ack_srd(FabEngine *eng, FabNic *nic, FabFlow *f, const FabPkt *p) {
  bool dsack = p->flags & FAB_PKTF_RETX; /* its ev is a reordering depth, not a value */
  if (!dsack && p->sent && p->sent < eng->now && fab_srd_rtt(f, eng->now - p->sent, p->ev, nic->cfg.avoid_delay))
    nic->srd_rtt_avoids++;
  if (!dsack && (p->flags & FAB_PKTF_ECE)) fab_bit_set(f->ev_skip, p->ev); /* a congestion mark: skip it once */
  if (nic->cc && nic->cc->on_ack) {
    nic->cc->on_ack(&f->cc, &nic->cfg.cc, p, eng->now);
    cc_arm(eng, nic, f);
  }
  uint32_t old = f->snd_una, a = p->seq, s = p->payload ? p->payload - 1 : UINT32_MAX;
  if (a > old) {
    bits_shift(f->sacked, a - old);
    fab_srd_shift(f, a - old);
    f->snd_una = a;
  }
  if (s != UINT32_MAX && s >= f->snd_una && s - f->snd_una < FAB_SACK_WINDOW &&
      !fab_bit_at(f->sacked, s - f->snd_una)) { /* a D-SACK too: a copy arrived, so did the packet (its ACK was
                                                ** lost, or a copy was sent too soon) */
    fab_bit_set(f->sacked, s - f->snd_una);
    fab_bit_clear(f->srd->lost, s - f->snd_una); /* presumed lost, yet here */
  }
  if (s != UINT32_MAX && !dsack) nic->srd_path_losses += fab_srd_acked(f, old, s, p->ev);
  if (f->snd_una == f->npkts) {
    f->acked = true;
    srd_give_back(nic, f);
    if (G_UNLIKELY(f->runt || f->reading)) fab_efa_read_end(nic, f);
    return;
  }
  fab_time_t due = eng->now + fab_srd_rto(f, nic->cfg.rto_min, nic->cfg.rto);
  if (f->timer_armed && due < f->deadline) { /* the RTO shrank (a first RTT sample): the timer comes sooner */
    f->deadline = due;
    fab_engine_at(eng, due, nic, WAKE(WAKE_RTO, f));
  }
  if (!f->in_rr && has_work(nic, f)) { /* a loss to resend, or the window opened */
    rr_push(nic, f);
    fab_port_kick(eng, path_port(nic, f));
  }
}

/* SRD's timer (srd.h): resend what has been out for the RTO; sleep until
** the next outstanding packet's turn. A flow's timer events other than the
** one at f->deadline (left behind when the RTO shrank) do nothing. */
static void srd_timeout(FabEngine *eng, FabNic *nic, FabFlow *f, uint64_t arg) {
  fab_time_t next, rto = fab_srd_rto(f, nic->cfg.rto_min, nic->cfg.rto);
  uint32_t tries, n = fab_srd_expire(f, eng->now, rto, &next, &tries);
  f->timer_armed = next != FAB_TIME_MAX; /* else the next packet sent arms it again */
  if (n) {
    nic->timeouts++;
    nic->srd_timer_losses += n;
  }
  if (n && tries > nic->cfg.max_timeouts) { /* a packet timed out that often: its path is dead */
    f->timer_armed = false;
    if (nic->fail) nic->fail(nic->ctx, f);
    return;
  }
  if (f->timer_armed) {
    f->deadline = next;
    fab_engine_at(eng, next, nic, arg);
  }
  if (n) { /* last: the port may pull a resend at once, and arm the timer */
    if (!f->in_rr) rr_push(nic, f);
    fab_port_kick(eng, path_port(nic, f));
  }
}

static void on_ctrl(FabEngine *eng, FabNic *nic, FabFlow *f, FabPkt *p) {
  nic->rx_ctrl_pkts++;
  if (p->type == FAB_PKT_CNP) {
    nic->cnps_received++;
    if (nic->cc && !f->acked) {
      nic->cc->on_cnp(&f->cc, &nic->cfg.cc, eng->now);
      cc_arm(eng, nic, f);
    }
    return;
  }
  if ((p->flags & FAB_PKTF_RETX) && srd_flow(nic, f)) {
    nic->dsacks++; /* a resend found its original: the path rule does not learn from it */
  } else if ((p->flags & FAB_PKTF_RETX) && nic->cfg.selective) { /* a D-SACK (even after the last ACK): a resend
                                                                  ** was spurious; wait for reordering as deep as
                                                                  ** was seen */
    f->dup_thresh = (uint16_t)MIN(FAB_SACK_WINDOW - 1u, MAX((uint32_t)f->dup_thresh, (uint32_t)p->ev));
    nic->dsacks++;
    if (!nic->reordering) nic->reordering = g_hash_table_new(NULL, NULL);
    g_hash_table_insert(nic->reordering, GUINT_TO_POINTER(f->dst + 1), GUINT_TO_POINTER(f->dup_thresh));
  }
  if (f->acked) return;
  if (f->srd) {
    on_ack_srd(eng, nic, f, p);
    return;
  }
  if ((p->flags & FAB_PKTF_ECE) && nic->cfg.spray == FAB_SPRAY_AVOID && p->mark_ev < nic->cfg.paths)
    fab_bit_set(f->ev_skip, p->mark_ev); /* skip the congested value once */
  if (nic->cfg.avoid_rtt && ev_learns(nic, f) && p->type != FAB_PKT_CNP && !(p->flags & FAB_PKTF_RETX) &&
      p->sent && p->sent < eng->now && p->ev < nic->cfg.paths) { /* the answered packet's RTT: a slow value is
                                                                 ** skipped once */
    fab_time_t rtt = eng->now - p->sent;
    if (!f->ev_min_rtt || rtt < f->ev_min_rtt) {
      f->ev_min_rtt = rtt;
    } else if (rtt > f->ev_min_rtt + nic->cfg.avoid_delay) {
      fab_bit_set(f->ev_skip, p->ev);
      nic->ev_rtt_avoids++;
    }
  }
  if (nic->cc && nic->cc->on_ack) {
    nic->cc->on_ack(&f->cc, &nic->cfg.cc, p, eng->now);
    cc_arm(eng, nic, f);
  }
  uint32_t a = p->seq;
  if (a > f->snd_una) {
    if (nic->cfg.selective) bits_shift(f->sacked, a - f->snd_una);
    f->snd_una = a;
    if (f->snd_nxt < a) f->snd_nxt = a; /* gone back past packets now acknowledged: resume after them */
    f->timeouts = 0;
    f->deadline = MAX(f->deadline, eng->now + nic->cfg.rto); /* (no earlier than a PXN relay's queue allows) */
    if (f->snd_una == f->npkts) {
      f->acked = true;
      ev_give_back(nic, f);
      return;
    }
    if (f->cc.win_bytes && !nic->cfg.selective && !f->in_rr && has_work(nic, f)) { /* the window opened */
      rr_push(nic, f);
      fab_port_kick(eng, path_port(nic, f));
    }
  }
  if (nic->cfg.selective) {
    uint32_t s = p->payload ? p->payload - 1 : UINT32_MAX;
    if (s != UINT32_MAX && s >= f->snd_una && s - f->snd_una < FAB_SACK_WINDOW) {
      fab_bit_set(f->sacked, s - f->snd_una);
      f->sack_hi = MAX(f->sack_hi, s + 1);
      f->timeouts = 0;
      f->deadline = MAX(f->deadline, eng->now + nic->cfg.rto);
    }
    if (f->sack_hi > f->dup_thresh) f->rtx_end = MAX(f->rtx_end, f->sack_hi - f->dup_thresh);
    if (!f->in_rr && has_work(nic, f)) { /* a loss to resend, or the window opened */
      rr_push(nic, f);
      fab_port_kick(eng, path_port(nic, f));
    }
    return;
  }
  if (p->type == FAB_PKT_NAK && f->snd_nxt > a && a >= f->snd_una) { /* (a NAK older than the last ACK: stale) */
    f->snd_nxt = a; /* go back N */
    f->deadline = MAX(f->deadline, eng->now + nic->cfg.rto);
    if (!f->in_rr) rr_push(nic, f);
    fab_port_kick(eng, path_port(nic, f));
  }
}

static void nic_receive(FabEngine *eng, FabNode *self, FabPkt *p, FabPort *in) {
  FabNic *nic = (FabNic *)self;
  if (G_UNLIKELY(p->dst != nic->id)) { /* a PXN relay: pass it on */
    fab_pxn_relay(eng, nic, p);
    return;
  }
  FabFlow *f = fab_flow_at(nic->flows, p->flow);
  if (fab_pkt_is_nvls(p->type)) { /* NVLS packets are the switch's too: not counted in inflight */
    nvls_rx(eng, nic, f, p);
  } else {
    g_assert(nic->split || fab_flow_in_flight(f) > 0);
    if (p->type == FAB_PKT_DATA) {
      if (f->stream && p->ahead) { /* streamed: its data are not all made yet (nic.h) */
        fab_time_t at = eng->now + p->ahead;
        p->ahead = 0; /* NVLink data packets carry no entropy value or telemetry: as before */
        if (p->flags & FAB_PKTF_LAST) { /* it completes the flow: held until then */
          f->held = p;
          fab_engine_at(eng, at, nic, WAKE_STREAM(f));
          return;
        }
      }
      f->rx_inflight--;
      g_assert(p->dst == nic->id && f->dst == nic->id);
      on_data(eng, nic, f, p);
    } else {
      f->inflight--;
      g_assert(p->dst == nic->id && f->src == nic->id);
      on_ctrl(eng, nic, f, p);
    }
  }
  fab_pkt_free(eng, p);
  if (!f->nvls) maybe_release(nic, f); /* an NVLS member: by nvls_done (it may be released already) */
}

/* A streamed flow's time has come (nic.h): at its receiver its held last packet arrives; at its sender the last
** byte of its last packet is made, and it counts as sent. */
static void stream_due(FabEngine *eng, FabNic *nic, FabFlow *f) {
  if (f->dst == nic->id && f->held) {
    FabPkt *p = f->held;
    f->held = NULL;
    nic_receive(eng, &nic->node, p, NULL);
  } else if (f->src == nic->id && nic->sent) {
    nic->sent(nic->ctx, f);
  }
}

static void nic_wake(FabEngine *eng, void *self, uint64_t arg) {
  FabNic *nic = self;
  FabFlow *f = (arg & 3) == WAKE_PACE && !WAKE_IS_STREAM(arg) ? NULL : fab_flow_at(nic->flows, WAKE_SLOT(arg));
  /* a released flow's timer: it found the flow done (atomic: fab_flow_table_take_in) */
  if (f && WAKE_GEN(arg) != (__atomic_load_n(&f->gen, __ATOMIC_RELAXED) & WAKE_GEN_MASK)) return;
  if (f && WAKE_IS_STREAM(arg)) {
    stream_due(eng, nic, f);
    return;
  }
  switch (arg & 3) {
  case WAKE_START:
    if (f->ordered) { /* its number among our messages to its receiver (nic.h, message order) */
      if (!nic->msg_tx) nic->msg_tx = g_hash_table_new(NULL, NULL);
      gpointer key = GUINT_TO_POINTER(f->dst + 1);
      f->msg_seq = GPOINTER_TO_UINT(g_hash_table_lookup(nic->msg_tx, key));
      g_hash_table_insert(nic->msg_tx, key, GUINT_TO_POINTER(f->msg_seq + 1));
    }
    if (G_UNLIKELY(nic->reordering)) /* what the flows before it to the same destination learned */
      f->dup_thresh = (uint16_t)MAX(f->dup_thresh, GPOINTER_TO_UINT(g_hash_table_lookup(nic->reordering,
                                                                                       GUINT_TO_POINTER(f->dst + 1))));
    f->cc.rate_bps = f->cc.line_bps = f->path == FAB_PATH_NVL ? nic->cfg.nvl_bps : nic->cfg.bps;
    f->cc.timer_at = FAB_TIME_MAX;
    f->cc.win_bytes = 0;
    f->cc.mss = f->mtu;
    if (nic->cc) nic->cc->init(&f->cc, &nic->cfg.cc, eng->now);
    if (gpu_limited(f)) { /* its GPU starts making the data now */
      f->made = eng->now;
      pace_made(eng, f, 0);
    }
    if (nic->cfg.spray) f->ev_xor = (uint16_t)fab_rng_below(&nic->rng, nic->cfg.paths); /* its first pass */
    if (srd_flow(nic, f)) {
      srd_take(nic, f);
      srd_resume(nic, f);
    }
    if (f->read_rtt && f->bytes >= FAB_EFA_READ_MIN) fab_efa_read_begin(nic, f, eng->now);
    if (f->reading && !f->hold_seq && nic->sent) { /* a long read: its request is all that leaves now */
      f->sent_all = true;
      nic->sent(nic->ctx, f);
    }
    if (!f->in_rr && !(f->nvls && f->nvls_mode == FAB_NVLS_SHARP && !sharp_open(f))) /* SHARP: may wait for locks */
      rr_push(nic, f);
    fab_port_kick(eng, path_port(nic, f));
    break;
  case WAKE_RTO:
    if (f->acked) {
      f->timer_armed = false;
      break;
    }
    if (f->srd) { /* its one live timer event is the one at `deadline` (srd_timeout) */
      if (f->timer_armed && eng->now == f->deadline) srd_timeout(eng, nic, f, arg);
      break;
    }
    if (eng->now < f->deadline) { /* progress since: sleep until the new deadline */
      fab_engine_at(eng, f->deadline, nic, arg);
      break;
    }
    nic->timeouts++;
    if (++f->timeouts > nic->cfg.max_timeouts) {
      f->timer_armed = false;
      if (nic->fail) nic->fail(nic->ctx, f);
      break;
    }
    if (nic->cfg.selective) { /* every PSN sent and not acknowledged is presumed lost */
      f->rtx_nxt = f->snd_una;
      f->rtx_end = f->snd_max;
    } else {
      f->snd_nxt = f->snd_una; /* go back to the oldest unacknowledged packet */
    }
    if (!f->in_rr) rr_push(nic, f);
    f->deadline = eng->now + nic->cfg.rto;
    fab_engine_at(eng, f->deadline, nic, arg);
    fab_port_kick(eng, path_port(nic, f));
    break;
  case WAKE_CC:
    if (eng->now == f->cc_wake_at) f->cc_wake_at = FAB_TIME_MAX;
    if (f->acked || !nic->cc) break; /* sender done: the timer stops */
    if (f->cc.timer_at <= eng->now) nic->cc->on_timer(&f->cc, &nic->cfg.cc, eng->now);
    cc_arm(eng, nic, f);
    break;
  case WAKE_PACE:
    if (eng->now == nic->pace_at) nic->pace_at = FAB_TIME_MAX;
    fab_port_kick(eng, &nic->port);
    if (nic->cfg.nvl_domain) fab_port_kick(eng, &nic->nvl);
    break;
  default:
    g_assert_not_reached();
  }
}

void fab_nic_init(FabNic *nic, uint32_t id, const FabNicCfg *cfg, FabFlowTable *flows,
                  FabFlowDoneFn done, FabFlowFailFn fail, void *ctx) {
  g_assert(cfg->mtu > 0 && cfg->ack_interval >= 1 && cfg->rto > 0);
  g_assert(fab_cc_cfg_invalid(&cfg->cc) == NULL);
  g_assert(!cfg->spray || (cfg->paths && cfg->paths <= FAB_SPRAY_MAX_PATHS && !(cfg->paths & (cfg->paths - 1))));
  *nic = (FabNic){0};
  fab_elem_init(&nic->node.el, &nic_ops);
  nic->node.receive = nic_receive;
  nic->node.pull = nic_pull;
  g_snprintf(nic->node.name, sizeof nic->node.name, "host%u", id);
  nic->id = id;
  nic->cfg = *cfg;
  nic->flows = flows;
  nic->done = done;
  nic->fail = fail;
  nic->ctx = ctx;
  nic->cc = fab_cc_ops(cfg->cc.kind);
  if (cfg->hash == FAB_HASH_CRC32) fab_ecmp_crc_sport_bits(nic->ev_crc);
  nic->pace_at = FAB_TIME_MAX;
  fab_port_init(&nic->port, &nic->node, 0, cfg->bps, 0, cfg->nprio);
  if (cfg->nvl_domain) {
    g_assert(cfg->nvl_bps > 0 && cfg->nvl_mtu > 0);
    fab_port_init(&nic->nvl, &nic->node, 1, cfg->nvl_bps, 0, cfg->nprio);
  }
  fab_rng_init(&nic->rng, cfg->seed, fab_rng_stream_of2("nic", nic->node.name));
}

void fab_nic_clear(FabNic *nic) {
  g_clear_pointer(&nic->mesh_out, g_free);
  g_clear_pointer(&nic->reordering, g_hash_table_destroy);
  g_clear_pointer(&nic->srd_conns, g_hash_table_destroy);
  if (nic->srd_all) g_ptr_array_free(nic->srd_all, TRUE);
  nic->srd_all = NULL;
  nic->srd_free = NULL;
  g_clear_pointer(&nic->runt_out, g_hash_table_destroy);
  g_clear_pointer(&nic->msg_tx, g_hash_table_destroy);
  g_clear_pointer(&nic->msg_rx, g_hash_table_destroy);
  if (nic->ev_all) g_ptr_array_free(nic->ev_all, TRUE);
  if (nic->ev_free) g_ptr_array_free(nic->ev_free, TRUE);
  nic->ev_all = nic->ev_free = NULL;
}

void fab_nic_set_name(FabNic *nic, const char *name) {
  g_strlcpy(nic->node.name, name, sizeof nic->node.name);
  fab_rng_init(&nic->rng, nic->cfg.seed, fab_rng_stream_of2("nic", nic->node.name));
}

void fab_nic_post(FabEngine *eng, FabNic *nic, FabFlow *f) {
  g_assert(f->src == nic->id);
  uint64_t tie = (uint64_t)nic->key << FAB_TIE_SEQ_BITS | (uint64_t)f->id << 1 | 1; /* odd: never the NIC's count */
  fab_engine_part_at_tie(eng, nic->port.part, f->start, tie, nic, WAKE(WAKE_START, f));
}

void fab_nic_sharp_wake(FabEngine *eng, FabNic *nic, FabFlow *f) {
  g_assert(f->nvls && f->nvls_mode == FAB_NVLS_SHARP && f->src == nic->id);
  if (f->start > eng->now || f->in_rr || !sharp_open(f)) return; /* not posted yet: its start will look */
  rr_push(nic, f);
  if (eng->now < nic->pace_at) { /* the port is kicked from an event of its own: this may run inside its pull */
    nic->pace_at = eng->now;
    fab_engine_at(eng, eng->now, nic, (uint64_t)WAKE_PACE);
  }
}

/* ---- fast-forward ---------------------------------------------------------- */

bool fab_nic_event_is_start(uint64_t arg) { return (arg & 3) == WAKE_START; }

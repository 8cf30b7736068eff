/* The run's flow table: the flows under way, by slot; and a flow's setup from its NIC's configuration. See nic.h
** (FabFlowTable, fab_flow_prepare). */
#include <stddef.h>
#include <string.h>
#include "nic.h"
#include "ecmp.h"
#include "nvls.h"

void fab_flow_table_init(FabFlowTable *t) {
  *t = (FabFlowTable){0};
  t->free = g_array_new(FALSE, FALSE, sizeof(uint32_t));
}

void fab_flow_table_fix(FabFlowTable *t, uint32_t parts) {
  g_assert(t->free && !t->fixed && parts >= 1);
  t->nparts = parts - 1; /* partition 0 keeps `free` */
  t->pfree = g_new(GArray *, MAX(t->nparts, 1u));
  for (uint32_t k = 0; k < t->nparts; k++) t->pfree[k] = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  FabFlow **all = g_new0(FabFlow *, FAB_FLOW_CHUNKS_MAX); /* 8 MB of address space, touched as chunks come */
  if (t->nchunks) memcpy(all, t->chunk, t->nchunks * sizeof *all);
  g_free(t->chunk);
  t->chunk = all;
  t->fixed = true;
}

void fab_flow_table_wrap(FabFlowTable *t, FabFlow *flows) {
  *t = (FabFlowTable){0};
  t->one = flows;
  t->chunk = &t->one;
  t->nchunks = 1;
  t->used = FAB_FLOW_CHUNK;
}

void fab_flow_table_clear(FabFlowTable *t) {
  if (t->free) {
    for (uint32_t k = 0; k < t->nparts; k++) g_array_free(t->pfree[k], TRUE);
    g_free(t->pfree);
    for (uint32_t k = 0; k < t->nchunks; k++) g_aligned_free(t->chunk[k]);
    g_free(t->chunk);
    g_array_free(t->free, TRUE);
  }
  g_free(t->held);
  *t = (FabFlowTable){0};
}

FabFlow *fab_flow_table_take(FabFlowTable *t) { return fab_flow_table_take_in(t, 0); }

FabFlow *fab_flow_table_take_in(FabFlowTable *t, uint32_t part) {
  g_assert(t->free);
  GArray *fr = part ? t->pfree[part - 1] : t->free;
  uint32_t slot;
  if (fr->len) {
    slot = g_array_index(fr, uint32_t, fr->len - 1);
    g_array_set_size(fr, fr->len - 1);
  } else {
    g_assert(t->used < UINT32_MAX - FAB_FLOW_CHUNK); /* so nchunks < FAB_FLOW_CHUNKS_MAX */
    slot = t->used++;
    if ((slot >> FAB_FLOW_CHUNK_BITS) == t->nchunks) {
      if (!t->fixed) t->chunk = g_renew(FabFlow *, t->chunk, t->nchunks + 1);
      t->chunk[t->nchunks++] = g_aligned_alloc0(FAB_FLOW_CHUNK, sizeof(FabFlow), 64); /* FabFlow's receiver lines */
    }
  }
  t->live++;
  if (!t->fixed) { /* one engine: which slots are held, a byte each (the fast-forward's look at the flows) */
    if (slot >= t->held_cap) {
      uint32_t cap = MAX(2 * t->held_cap, slot + 1024);
      t->held = g_realloc(t->held, cap);
      memset(t->held + t->held_cap, 0, cap - t->held_cap);
      t->held_cap = cap;
    }
    t->held[slot] = 1;
  }
  FabFlow *f = fab_flow_at(t, slot);
  /* In a parallel run a timer of a flow that held this slot before may be firing on another thread (any of
  ** its holders' senders'): it reads only `gen`, which moves atomically and never back, finds it changed and
  ** returns. So `gen` is the one field not cleared by the memsets. */
  uint32_t gen = __atomic_load_n(&f->gen, __ATOMIC_RELAXED) + 1; /* new chunks come zeroed */
  size_t at = offsetof(FabFlow, gen), after = at + sizeof f->gen;
  memset(f, 0, at);
  memset((char *)f + after, 0, sizeof *f - after);
  f->slot = slot;
  __atomic_store_n(&f->gen, gen, __ATOMIC_RELAXED);
  return f;
}

void fab_flow_table_put(FabFlowTable *t, FabFlow *f) { fab_flow_table_put_in(t, f, 0); }

void fab_flow_table_put_in(FabFlowTable *t, FabFlow *f, uint32_t part) {
  g_assert(t->free && t->live > 0 && part <= t->nparts);
  t->live--;
  if (!t->fixed && f->slot < t->held_cap) t->held[f->slot] = 0;
  g_array_append_val(part ? t->pfree[part - 1] : t->free, f->slot);
}

uint32_t fab_flow_payload(const FabFlow *f, uint32_t mtu, uint32_t seq) {
  uint64_t off = (uint64_t)seq * mtu;
  if (off >= f->bytes) return 0; /* a zero-byte flow's one packet, or the write-with-immediate after the data */
  uint64_t left = f->bytes - off;
  return (uint32_t)(left < mtu ? left : mtu);
}

void fab_flow_prepare(FabFlow *f, const FabNicCfg *cfg) {
  bool sharp = f->nvls && f->nvls_mode == FAB_NVLS_SHARP; /* into the fabric's trees: network packets of one mtu */
  bool nvl = !sharp && (f->nvls || (cfg->nvl_domain && f->src / cfg->nvl_domain == f->dst / cfg->nvl_domain));
  bool pxn = !nvl && cfg->pxn_rails && f->src % cfg->pxn_rails != f->dst % cfg->pxn_rails;
  f->path = nvl || pxn ? FAB_PATH_NVL : FAB_PATH_NET; /* PXN: network-sized packets over NVLink first */
  f->stream = nvl && !f->nvls;
  f->held = NULL;
  f->mtu = nvl ? cfg->nvl_mtu : cfg->mtu;
  f->overhead = nvl ? cfg->nvl_overhead : cfg->transport.data_overhead;
  f->hdr_unit = 0;
  f->ack_every = cfg->ack_interval;
  if (!nvl && !sharp && cfg->seg > cfg->mtu) { /* a train of seg / mtu packets, ACKed as often per byte as packets are */
    f->mtu = cfg->seg;
    f->hdr_unit = cfg->mtu;
    f->ack_every = MAX(1u, (uint32_t)((uint64_t)cfg->ack_interval * cfg->mtu / cfg->seg));
  }
  uint64_t line = nvl ? cfg->nvl_bps : cfg->bps;
  uint64_t n = (f->bytes + f->mtu - 1) / f->mtu;
  g_assert(n < UINT32_MAX);
  f->npkts = n ? (uint32_t)n : 1;
  uint16_t sport = fab_ecmp_sport(f->id, cfg->ecmp_seed);
  f->sport = sport;
  f->hash_fwd = fab_ecmp_hash_of(cfg->hash, f->src, f->dst, sport, 4791, 17, cfg->ecmp_seed);
  f->hash_rev = fab_ecmp_hash_of(cfg->hash, f->dst, f->src, sport, 4791, 17, cfg->ecmp_seed);
  f->end = 0;
  f->snd_nxt = f->snd_una = f->snd_max = 0;
  f->last_tx = 0;
  f->timer_armed = f->in_rr = f->acked = f->sent_all = false;
  f->ar = f->bytes >= cfg->ar_threshold;
  f->imm = f->ar && cfg->ar_imm && f->path == FAB_PATH_NET && !f->nvls && f->bytes;
  f->stripes = f->path == FAB_PATH_NET && !f->nvls ? (uint8_t)fab_nic_stripes(cfg, f->bytes) : 1;
  if (f->imm) f->npkts++; /* the write-with-immediate: it completes the message once the data are in */
  f->timeouts = f->retransmits = 0;
  f->rr_next = NULL;
  f->srd = NULL;
  f->rcv_nxt = 0;
  f->rtx_nxt = f->rtx_end = f->sack_hi = f->reorder = 0;
  f->dup_thresh = (uint16_t)cfg->dup_threshold;
  memset(f->sacked, 0, sizeof f->sacked);
  memset(f->rcvd, 0, sizeof f->rcvd);
  f->nak_sent = f->ece = false;
  f->ev_next = f->ev_xor = f->ece_ev = f->rx_n = f->rx_ce = 0;
  f->ev_of = NULL;
  f->ev_min_rtt = 0;
  memset(f->ev_skip, 0, sizeof f->ev_skip);
  f->rcv_bytes = 0;
  f->next_tx = f->made = 0;
  f->read_rtt = f->hold_until = 0;
  f->hold_seq = f->runt = 0;
  f->reading = false;
  f->cc_wake_at = FAB_TIME_MAX;
  f->cnp_next = 0;
  f->cc = (FabCcFlow){.rate_bps = line, .line_bps = line, .timer_at = FAB_TIME_MAX};
}

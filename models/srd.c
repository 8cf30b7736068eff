/* SRD's sender: per-path loss detection and per-packet timers. See srd.h. */
#include "srd.h"
#include "bits.h"
#include <glib.h>

void fab_srd_reset(FabSrdTx *s) {
  FabSrdTx *next = s->next;
  memset(s, 0, sizeof *s);
  s->next = next;
}

/* Outstanding: sent, and neither acknowledged nor presumed lost. */
static inline bool outstanding(const FabFlow *f, uint32_t psn) {
  uint32_t i = psn - f->snd_una;
  return !fab_bit_at(f->sacked, i) && !fab_bit_at(f->srd->lost, i);
}

static inline void mark_lost(FabFlow *f, uint32_t psn) {
  fab_bit_set(f->srd->lost, psn - f->snd_una);
  uint16_t v = f->srd->ev[psn & FAB_SRD_MASK];
  fab_bit_set(f->ev_skip, v); /* steer away from it once */
}

void fab_srd_sent(FabFlow *f, uint32_t psn, uint16_t ev, fab_time_t now) {
  FabSrdTx *s = f->srd;
  uint32_t k = psn & FAB_SRD_MASK;
  s->tries[k] = psn < f->snd_max ? (uint8_t)MIN(s->tries[k] + 1u, 255u) : 0; /* before snd_max moves */
  s->sent[k] = now;
  s->ev[k] = (uint8_t)ev;
  s->stamp[k] = s->path_sent[ev]++;
  if (psn >= f->snd_una && psn - f->snd_una < FAB_SACK_WINDOW) fab_bit_clear(s->lost, psn - f->snd_una);
}

bool fab_srd_rtt(FabFlow *f, fab_time_t rtt, uint16_t ev, fab_time_t avoid_delay) {
  FabSrdTx *s = f->srd;
  if (!s->srtt) { /* RFC 6298, 2.2 */
    s->srtt = rtt;
    s->rttvar = rtt / 2;
  } else { /* 2.3: alpha 1/8, beta 1/4 */
    fab_time_t d = rtt > s->srtt ? rtt - s->srtt : s->srtt - rtt;
    s->rttvar = (3 * s->rttvar + d) / 4;
    s->srtt = (7 * s->srtt + rtt) / 8;
  }
  if (!s->min_rtt || rtt < s->min_rtt) s->min_rtt = rtt;
  if (avoid_delay && rtt > s->min_rtt + avoid_delay) {
    fab_bit_set(f->ev_skip, ev);
    return true;
  }
  return false;
}

fab_time_t fab_srd_rto(const FabFlow *f, fab_time_t rto_min, fab_time_t rto_init) {
  const FabSrdTx *s = f->srd;
  return s->srtt ? MAX(rto_min, s->srtt + 4 * s->rttvar) : rto_init;
}

void fab_srd_shift(FabFlow *f, uint32_t k) { fab_bits_shift(f->srd->lost, FAB_SACK_WORDS, k); }

uint32_t fab_srd_acked(FabFlow *f, uint32_t old_una, uint32_t psn, uint16_t ev) {
  FabSrdTx *s = f->srd;
  uint32_t k = psn & FAB_SRD_MASK, n = 0;
  if (psn < old_una || psn >= f->snd_max || s->ev[k] != ev) return 0; /* not this send's ACK */
  uint32_t stamp = s->stamp[k], from = s->path_acked[ev];
  if (stamp < from) return 0; /* an old ACK (its packet was resent on this value since) */
  s->path_acked[ev] = stamp + 1;
  if (stamp == from) return 0; /* the value's next: nothing of it was skipped */
  for (uint32_t x = f->snd_una; x < f->snd_max; x++) { /* the value's packets before it, unacknowledged */
    uint32_t j = x & FAB_SRD_MASK;
    if (s->ev[j] == ev && s->stamp[j] >= from && s->stamp[j] < stamp && outstanding(f, x)) {
      mark_lost(f, x);
      n++;
    }
  }
  return n;
}

uint32_t fab_srd_expire(FabFlow *f, fab_time_t now, fab_time_t rto, fab_time_t *next, uint32_t *tries) {
  uint32_t n = 0;
  *next = FAB_TIME_MAX;
  *tries = 0;
  for (uint32_t x = f->snd_una; x < f->snd_max; x++) {
    if (!outstanding(f, x)) continue;
    uint32_t k = x & FAB_SRD_MASK;
    fab_time_t due = f->srd->sent[k] + (rto << MIN(f->srd->tries[k], 10u));
    if (due <= now) {
      mark_lost(f, x);
      *tries = MAX(*tries, (uint32_t)f->srd->tries[k] + 1);
      n++;
    } else if (due < *next) {
      *next = due;
    }
  }
  return n;
}

uint32_t fab_srd_next_lost(const FabFlow *f) {
  uint32_t i = fab_bits_first(f->srd->lost, FAB_SACK_WORDS);
  return i == UINT32_MAX ? UINT32_MAX : f->snd_una + i;
}

/* ---- libfabric EFA's read-based protocols (nic.h) ---------------------- */

/* The rails (domains) flow f goes over (nic.h): how many, from *first, of
** the GPU's *rails. */
static uint32_t efa_rails(const FabNic *nic, const FabFlow *f, uint32_t *first, uint32_t *rails) {
  *rails = MIN(MAX(nic->cfg.stripe_rails, 1u), FAB_EFA_RAILS);
  *first = (MAX(f->lane, 1u) - 1u) % *rails;
  return MIN(MAX(f->stripes, 1u), *rails);
}

static inline gpointer runt_key(const FabFlow *f, uint32_t rail) {
  return GUINT_TO_POINTER((f->dst + 1u) * FAB_EFA_RAILS + rail);
}

void fab_efa_read_begin(FabNic *nic, FabFlow *f, fab_time_t now) {
  if (!nic->runt_out) nic->runt_out = g_hash_table_new(NULL, NULL);
  uint32_t r0, rails, n = efa_rails(nic, f, &r0, &rails);
  uint64_t share = (f->bytes + n - 1) / n, runt = share;
  for (uint32_t i = 0; i < n; i++) { /* the scarcest rail's runt */
    uint32_t r = (r0 + i) % rails, out = GPOINTER_TO_UINT(g_hash_table_lookup(nic->runt_out, runt_key(f, r)));
    runt = nic->reads_open[r] || out >= FAB_EFA_RUNT_SIZE ? 0 : MIN(runt, FAB_EFA_RUNT_SIZE - out);
  }
  if (runt < share) runt &= ~(uint64_t)(FAB_EFA_RUNT_ALIGN - 1);
  f->runt = (uint32_t)runt;
  bool read = runt < share;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t r = (r0 + i) % rails;
    if (runt) {
      gpointer key = runt_key(f, r);
      uint32_t out = GPOINTER_TO_UINT(g_hash_table_lookup(nic->runt_out, key));
      g_hash_table_insert(nic->runt_out, key, GUINT_TO_POINTER(out + f->runt));
    }
    nic->reads_open[r] += read;
  }
  if (!read) return; /* the runt is all of it */
  f->reading = true;
  if (runt) nic->runt_reads++;
  else nic->long_reads++;
  f->hold_seq = (uint32_t)((runt * n + f->mtu - 1) / f->mtu);
  f->hold_until = now + f->read_rtt;
}

void fab_efa_read_end(FabNic *nic, FabFlow *f) {
  uint32_t r0, rails, n = efa_rails(nic, f, &r0, &rails);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t r = (r0 + i) % rails;
    if (f->runt) {
      gpointer key = runt_key(f, r);
      uint32_t out = GPOINTER_TO_UINT(g_hash_table_lookup(nic->runt_out, key));
      g_assert(out >= f->runt);
      if (out == f->runt) g_hash_table_remove(nic->runt_out, key);
      else g_hash_table_insert(nic->runt_out, key, GUINT_TO_POINTER(out - f->runt));
    }
    if (f->reading) {
      g_assert(nic->reads_open[r] > 0);
      nic->reads_open[r]--;
    }
  }
  f->reading = false;
}

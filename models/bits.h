/* Bitmaps of a selective-repeat window (FAB_SACK_WORDS words), shared by the
** NIC's receivers and senders (nic.c) and SRD's loss detection (srd.c). */
#ifndef FAB_BITS_H
#define FAB_BITS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static inline bool fab_bit_at(const uint64_t *m, uint32_t i) { return m[i >> 6] >> (i & 63) & 1; }
static inline void fab_bit_set(uint64_t *m, uint32_t i) { m[i >> 6] |= 1ull << (i & 63); }
static inline void fab_bit_clear(uint64_t *m, uint32_t i) { m[i >> 6] &= ~(1ull << (i & 63)); }

/* Drop the first k bits of a map of `words` words (a window moved k on). */
static inline void fab_bits_shift(uint64_t *m, uint32_t words, uint32_t k) {
  if (k >= words * 64) {
    memset(m, 0, words * sizeof *m);
    return;
  }
  uint32_t w = k >> 6, b = k & 63;
  for (uint32_t i = 0; i < words; i++) {
    uint64_t lo = i + w < words ? m[i + w] : 0, hi = i + w + 1 < words ? m[i + w + 1] : 0;
    m[i] = b ? lo >> b | hi << (64 - b) : lo;
  }
}

/* The lowest bit set, or UINT32_MAX. */
static inline uint32_t fab_bits_first(const uint64_t *m, uint32_t words) {
  for (uint32_t i = 0; i < words; i++)
    if (m[i]) return i * 64 + (uint32_t)__builtin_ctzll(m[i]);
  return UINT32_MAX;
}

#endif

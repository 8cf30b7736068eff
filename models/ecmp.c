/* 5-tuple hashing for ECMP. See ecmp.h. */
#include "ecmp.h"
#include "sim/rng.h"

uint32_t fab_ecmp_hash(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, uint8_t proto,
                       uint64_t seed) {
  uint64_t a = ((uint64_t)src << 32) | dst;
  uint64_t b = ((uint64_t)sport << 32) | ((uint64_t)dport << 16) | proto;
  uint64_t h = fab_mix64(fab_mix64(a ^ fab_mix64(seed)) ^ b);
  return (uint32_t)(h ^ (h >> 32));
}

const char *const fab_hash_names[] = {"mix", "crc32", NULL};

uint32_t fab_crc32(uint32_t crc, const void *buf, size_t n) {
  const uint8_t *b = buf;
  crc = ~crc;
  for (size_t i = 0; i < n; i++) {
    crc ^= b[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

/* The CRC32 hash's message: the seed, then the 5-tuple big-endian. */
static uint32_t crc_tuple(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, uint8_t proto, uint64_t seed) {
  uint8_t m[21];
  for (int i = 0; i < 8; i++) m[i] = (uint8_t)(seed >> (56 - 8 * i));
  for (int i = 0; i < 4; i++) {
    m[8 + i] = (uint8_t)(src >> (24 - 8 * i));
    m[12 + i] = (uint8_t)(dst >> (24 - 8 * i));
  }
  m[16] = (uint8_t)(sport >> 8);
  m[17] = (uint8_t)sport;
  m[18] = (uint8_t)(dport >> 8);
  m[19] = (uint8_t)dport;
  m[20] = proto;
  return fab_crc32(0, m, sizeof m);
}

uint32_t fab_ecmp_hash_of(uint32_t kind, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, uint8_t proto,
                          uint64_t seed) {
  if (kind == FAB_HASH_CRC32) return crc_tuple(src, dst, sport, dport, proto, seed);
  return fab_ecmp_hash(src, dst, sport, dport, proto, seed);
}

void fab_ecmp_crc_sport_bits(uint32_t out[8]) {
  uint32_t zero = crc_tuple(0, 0, 0, 0, 0, 0);
  for (int i = 0; i < 8; i++) out[i] = crc_tuple(0, 0, (uint16_t)(1u << i), 0, 0, 0) ^ zero;
}

uint16_t fab_ecmp_sport(uint32_t flow_id, uint64_t seed) {
  return (uint16_t)(49152u + (fab_mix64(flow_id ^ (seed << 20)) & 0x3fffu));
}

uint32_t fab_ecmp_salt(const char *name, uint64_t seed) {
  return (uint32_t)fab_mix64(fab_rng_stream_of2("ecmp", name) ^ fab_mix64(seed));
}

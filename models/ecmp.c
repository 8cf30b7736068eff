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

uint16_t fab_ecmp_sport(uint32_t flow_id, uint64_t seed) {
  return (uint16_t)(49152u + (fab_mix64(flow_id ^ (seed << 20)) & 0x3fffu));
}

uint32_t fab_ecmp_salt(const char *name, uint64_t seed) {
  return (uint32_t)fab_mix64(fab_rng_stream_of2("ecmp", name) ^ fab_mix64(seed));
}

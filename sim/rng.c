/* xoshiro256** streams seeded by splitmix64. See rng.h. */
#include "rng.h"

uint64_t fab_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void fab_rng_init(FabRng *r, uint64_t seed, uint64_t stream) {
  uint64_t x = fab_mix64(seed) ^ fab_mix64(stream ^ 0x5851f42d4c957f2dULL);
  for (int i = 0; i < 4; i++) {
    x += 0x9e3779b97f4a7c15ULL;
    r->s[i] = fab_mix64(x);
  }
  if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3])) r->s[0] = 1; /* never all zero */
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t fab_rng_next(FabRng *r) {
  uint64_t *s = r->s;
  uint64_t out = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

uint64_t fab_rng_below(FabRng *r, uint64_t n) {
  /* rejection on the top of the range: unbiased */
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = fab_rng_next(r); while (x >= limit);
  return x % n;
}

double fab_rng_double(FabRng *r) { return (double)(fab_rng_next(r) >> 11) * 0x1.0p-53; }

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t fnv(uint64_t h, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) h = (h ^ *p) * FNV_PRIME;
  return h;
}

uint64_t fab_rng_stream_of(const char *name) { return fab_mix64(fnv(FNV_OFFSET, name ? name : "")); }

uint64_t fab_rng_stream_of2(const char *prefix, const char *name) {
  uint64_t h = fnv(FNV_OFFSET, prefix ? prefix : "");
  h = (h ^ ':') * FNV_PRIME;
  return fab_mix64(fnv(h, name ? name : ""));
}

/*
** Random numbers: xoshiro256** (Blackman & Vigna, 2018), one independent
** stream per element. A stream's state is derived with splitmix64 from
** (scenario seed, stream id). The stream id comes from the element's stable
** name (fab_rng_stream_of("spine3")), never from the order in which
** elements were made, so adding an element does not change the draws of
** the others, and two differently named things never share a stream.
*/
#ifndef FAB_RNG_H
#define FAB_RNG_H

#include <stdint.h>

typedef struct FabRng { uint64_t s[4]; } FabRng;

/* Seed stream `stream` of scenario seed `seed`. */
void fab_rng_init(FabRng *r, uint64_t seed, uint64_t stream);

/* 64 uniformly distributed bits. */
uint64_t fab_rng_next(FabRng *r);

/* Uniform integer in [0, n), n > 0, without modulo bias. */
uint64_t fab_rng_below(FabRng *r, uint64_t n);

/* Uniform double in [0, 1) with 53 random bits. */
double fab_rng_double(FabRng *r);

/* splitmix64 step, also a good 64-bit mixing function. */
uint64_t fab_mix64(uint64_t x);

/* The stream id of a stable name: a 64-bit hash of its bytes (FNV-1a,
** then fab_mix64). Equal names give equal ids; the ids of different names
** collide with probability about 2^-64. Also the derivation of other
** per-element constants (hash salts): see fab_rng_stream_of2. */
uint64_t fab_rng_stream_of(const char *name);

/* The same for the name "prefix:name" without building the string (a job's
** stream is fab_rng_stream_of2("job", "train")). */
uint64_t fab_rng_stream_of2(const char *prefix, const char *name);

/* A numeric stream id: a kind tag in the high bits and an index in the low
** bits (tests, and streams with no name). */
#define FAB_STREAM(kind, index) (((uint64_t)(kind) << 48) | (uint64_t)(index))

#endif

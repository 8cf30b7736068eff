/*
** Random numbers: xoshiro256** (Blackman & Vigna, 2018), one independent
** stream per element. A stream's state is derived with splitmix64 from
** (scenario seed, stream id), where the stream id names the element (e.g.
** "switch 12") rather than its creation order, so adding an element does not
** change the draws of the others.
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

/* Stream ids: a kind tag in the high bits and an index in the low bits. */
#define FAB_STREAM(kind, index) (((uint64_t)(kind) << 48) | (uint64_t)(index))
enum { FAB_STREAM_WORKLOAD = 1, FAB_STREAM_SWITCH = 2, FAB_STREAM_NIC = 3, FAB_STREAM_TEST = 99 };

#endif

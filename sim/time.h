/*
** Simulated time.
**
** Every time in the event path is a fab_time_t: an unsigned 64-bit count of
** picoseconds since the start of the run (2^64 ps is about 213 days). There is
** no floating-point time anywhere in the engine; seconds appear only in
** outputs, converted at the edge with fab_time_to_s().
*/
#ifndef FAB_TIME_H
#define FAB_TIME_H

#include <stdint.h>

typedef uint64_t fab_time_t; /* picoseconds */

#define FAB_PS ((fab_time_t)1)
#define FAB_NS ((fab_time_t)1000)
#define FAB_US ((fab_time_t)1000000)
#define FAB_MS ((fab_time_t)1000000000)
#define FAB_S  ((fab_time_t)1000000000000ULL)
#define FAB_TIME_MAX UINT64_MAX

/* Seconds as a double, for reports only. */
static inline double fab_time_to_s(fab_time_t t) { return (double)t / 1e12; }

/* t moved dt later, unless it names no time (0 or FAB_TIME_MAX): the
** fast-forward's shift of held times (tools/libfabsim/fastfwd.h). */
static inline fab_time_t fab_time_later(fab_time_t t, fab_time_t dt) { return t && t != FAB_TIME_MAX ? t + dt : t; }

/* The serialisation time below for any size (128-bit intermediate). */
static inline fab_time_t fab_time_ser_big(uint64_t bytes, uint64_t bps) {
  unsigned __int128 num = (unsigned __int128)bytes * 8u * 1000000000000ULL + bps - 1;
  return (fab_time_t)(num / bps);
}

/* Serialisation time of `bytes` at `bps` bits per second, in picoseconds,
** rounded up. Exact when 8e12 is a multiple of bps (100G -> 80 ps/B).
** 64-bit arithmetic below 2^21 bytes (a packet or segment); a train of
** fabric.segment (up to 16 MiB) takes the 128-bit way, where bytes x 8e12
** would wrap. */
static inline fab_time_t fab_time_ser(uint64_t bytes, uint64_t bps) {
  if (__builtin_expect(bytes >= (1u << 21), 0)) return fab_time_ser_big(bytes, bps);
  return (bytes * 8u * 1000000000000ULL + bps - 1) / bps;
}

#endif

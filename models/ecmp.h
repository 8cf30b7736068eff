/*
** ECMP: choosing among equal-cost next hops by a hash of the flow 5-tuple.
**
** The NIC hashes a flow's 5-tuple once (src and dst endpoint as addresses,
** UDP source port, destination port 4791 for RoCEv2, protocol 17) with the
** fabric's ecmp seed and stamps it on every packet. Each switch mixes that
** hash with its own salt (derived from the seed and the switch number, as
** real switches use per-switch hash seeds to avoid polarisation) and takes it
** modulo the group size. A switch's salt comes from its stable name, so
** adding a switch changes no other switch's choices. Deterministic: same
** scenario and seed, same paths.
*/
#ifndef FAB_ECMP_H
#define FAB_ECMP_H

#include <stdint.h>

/* Hash of a 5-tuple under `seed`. */
uint32_t fab_ecmp_hash(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, uint8_t proto,
                       uint64_t seed);

/* The UDP source port a RoCEv2 NIC would use for flow `flow_id` (entropy
** from the queue pair number): 49152 + 14 bits. */
uint16_t fab_ecmp_sport(uint32_t flow_id, uint64_t seed);

/* Salt of the switch named `name` ("spine3") under `seed`. */
uint32_t fab_ecmp_salt(const char *name, uint64_t seed);

/* Index in [0, n) for a packet with `hash` at a switch with `salt`. */
static inline uint32_t fab_ecmp_pick(uint32_t hash, uint32_t salt, uint32_t n) {
  uint32_t x = hash ^ salt;
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return (uint32_t)(((uint64_t)x * n) >> 32);
}

#endif

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
**
** Two hash functions (fabric.switch.hash). `mix` is a well-mixed hash: any
** change of the 5-tuple gives an unrelated value, so flows (and a sprayed
** flow's entropy values) land on members as balls into bins. `crc32` is
** what switch ASICs compute (a CRC over the header fields, then a window of
** its bits; Broadcom's and NVIDIA's switches offer CRC16/CRC32 variants and
** a choice of output bits): a CRC is linear over GF(2), so values that
** differ only in the low k bits of the source port (an aligned block of 2^k
** entropy values) map onto 2^k hashes whose window bits take every pattern
** equally often when the window's map has full rank: the block spreads
** over a power-of-two group exactly evenly. Each tier of switches takes its
** own window (fab_ecmp_pick_crc), as operators set hash offsets per tier;
** a window that loses rank on a block polarises it, as on real switches.
*/
#ifndef FAB_ECMP_H
#define FAB_ECMP_H

#include <stddef.h>
#include <stdint.h>

typedef enum { FAB_HASH_MIX = 0, FAB_HASH_CRC32 } FabHashKind;

/* Names in the order of FabHashKind, NULL-terminated (YAML enum). */
extern const char *const fab_hash_names[];

/* CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) of n bytes, continuing
** from `crc` (0 to start): fab_crc32(0, "123456789", 9) == 0xCBF43926. */
uint32_t fab_crc32(uint32_t crc, const void *buf, size_t n);

/* Hash of a 5-tuple under `seed`. */
uint32_t fab_ecmp_hash(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, uint8_t proto,
                       uint64_t seed);

/* Hash of a 5-tuple under `seed` by the function `kind` (FabHashKind): CRC32
** is the CRC of the seed's 8 bytes then the fields in network order. */
uint32_t fab_ecmp_hash_of(uint32_t kind, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, uint8_t proto,
                          uint64_t seed);

/* CRC32 hashes: what flipping bit i of the source port does to the hash
** (i < 8), whatever the other fields: hash(sport ^ v) = hash(sport) ^ the
** XOR of out[i] over the bits i of v. */
void fab_ecmp_crc_sport_bits(uint32_t out[8]);

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

/* The same for the CRC32 hash: a 16-bit window of the hash XOR the salt,
** scaled to [0, n), so linear in the hash's bits when n is a power of two
** (above). The window is the tier's (`tier`: 0 host-facing, 1 the next up,
** 2 the one above), as operators set a hash offset per tier against
** polarisation: the hash rotated right by 14, 4 and 0 bits. They were
** chosen so that (tests/test_ecmp.c checks it) every aligned block of 2^k
** source ports spreads exactly evenly over every group of 2^m members,
** 1 <= m <= 5 and m <= k <= 8, save one case (tier 2: a block of 2 over 2
** members); most other rotations lose rank somewhere in that range. */
static inline uint32_t fab_ecmp_pick_crc(uint32_t hash, uint32_t salt, uint32_t tier, uint32_t n) {
  static const uint8_t rot[3] = {14, 4, 0}; /* no public figure for switches' offsets: an assumption (README) */
  uint32_t r = rot[tier < 3 ? tier : 2];
  uint32_t x = r ? (hash >> r) | (hash << (32 - r)) : hash;
  return (uint32_t)((((x ^ salt) & 0xffffu) * n) >> 16);
}

#endif

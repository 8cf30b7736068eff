/*
** ECMP hashing (models/ecmp.h): deterministic 5-tuple hashes that depend on
** every field and the seed, RoCEv2 source ports in the dynamic range, and a
** pick that spreads flows evenly and independently per switch.
*/
#include <criterion/criterion.h>
#include <glib.h>

#include "models/ecmp.h"

#define ROCE_DPORT 4791
#define UDP 17

Test(ecmp, hash_is_deterministic) {
  for (uint32_t i = 0; i < 100; i++) {
    uint32_t a = fab_ecmp_hash(i, i + 1, (uint16_t)(49152 + i), ROCE_DPORT, UDP, 7);
    uint32_t b = fab_ecmp_hash(i, i + 1, (uint16_t)(49152 + i), ROCE_DPORT, UDP, 7);
    cr_assert_eq(a, b);
  }
}

Test(ecmp, hash_depends_on_every_field_and_seed) {
  /* From several base tuples, changing any one field changes the hash. */
  const uint32_t srcs[] = {0, 1, 5, 1000};
  for (size_t k = 0; k < 4; k++) {
    uint32_t s = srcs[k], d = s + 3;
    uint16_t sp = (uint16_t)(50000 + k);
    uint64_t seed = 11 + k;
    uint32_t h = fab_ecmp_hash(s, d, sp, ROCE_DPORT, UDP, seed);
    cr_assert_neq(fab_ecmp_hash(s + 1, d, sp, ROCE_DPORT, UDP, seed), h, "src");
    cr_assert_neq(fab_ecmp_hash(s, d + 1, sp, ROCE_DPORT, UDP, seed), h, "dst");
    cr_assert_neq(fab_ecmp_hash(s, d, (uint16_t)(sp + 1), ROCE_DPORT, UDP, seed), h, "sport");
    cr_assert_neq(fab_ecmp_hash(s, d, sp, ROCE_DPORT + 1, UDP, seed), h, "dport");
    cr_assert_neq(fab_ecmp_hash(s, d, sp, ROCE_DPORT, 6, seed), h, "proto");
    cr_assert_neq(fab_ecmp_hash(s, d, sp, ROCE_DPORT, UDP, seed + 1), h, "seed");
    cr_assert_neq(fab_ecmp_hash(d, s, sp, ROCE_DPORT, UDP, seed), h, "direction (src and dst swapped)");
    /* high bits count too */
    cr_assert_neq(fab_ecmp_hash(s | 0x80000000u, d, sp, ROCE_DPORT, UDP, seed), h, "src bit 31");
    cr_assert_neq(fab_ecmp_hash(s, d | 0x80000000u, sp, ROCE_DPORT, UDP, seed), h, "dst bit 31");
    cr_assert_neq(fab_ecmp_hash(s, d, (uint16_t)(sp ^ 0x8000), ROCE_DPORT, UDP, seed), h, "sport bit 15");
    cr_assert_neq(fab_ecmp_hash(s, d, sp, ROCE_DPORT ^ 0x8000, UDP, seed), h, "dport bit 15");
    cr_assert_neq(fab_ecmp_hash(s, d, sp, ROCE_DPORT, UDP ^ 0x80, seed), h, "proto bit 7");
    cr_assert_neq(fab_ecmp_hash(s, d, sp, ROCE_DPORT, UDP, seed ^ (1ULL << 63)), h, "seed bit 63");
  }
}

Test(ecmp, fields_do_not_alias) {
  /* Moving a value from one field to a neighbouring one gives another hash
  ** (the fields are packed without overlap). */
  uint32_t h = fab_ecmp_hash(1, 2, 3, 4, 5, 0);
  cr_assert_neq(fab_ecmp_hash(2, 1, 3, 4, 5, 0), h);
  cr_assert_neq(fab_ecmp_hash(1, 2, 4, 3, 5, 0), h);
  cr_assert_neq(fab_ecmp_hash(1, 2, 3, 5, 4, 0), h);
  cr_assert_neq(fab_ecmp_hash(1, 2, 0, 4, 5, 3), h);
}

Test(ecmp, pick_is_within_group) {
  for (uint32_t n = 1; n <= 16; n++)
    for (uint32_t i = 0; i < 2000; i++) {
      uint32_t h = fab_ecmp_hash(i, i * 7 + 1, (uint16_t)i, ROCE_DPORT, UDP, n);
      uint32_t p = fab_ecmp_pick(h, fab_ecmp_salt(i % 2 ? "leaf1" : "spine0", 1), n);
      cr_assert_lt(p, n, "pick %u of %u", p, n);
      if (n == 1) cr_assert_eq(p, 0);
    }
  /* the extremes of the hash */
  cr_assert_lt(fab_ecmp_pick(UINT32_MAX, 0, 8), 8);
  cr_assert_lt(fab_ecmp_pick(0, UINT32_MAX, 8), 8);
  cr_assert_lt(fab_ecmp_pick(UINT32_MAX, UINT32_MAX, 3), 3);
}

/* The hash of flow i of a 64-host fabric, as a NIC computes it. */
static uint32_t flow_hash(uint32_t i, uint64_t seed) {
  uint32_t src = i % 64, dst = (i / 64 + src + 1) % 64;
  return fab_ecmp_hash(src, dst, fab_ecmp_sport(i, seed), ROCE_DPORT, UDP, seed);
}

Test(ecmp, pick_spreads_flows_evenly) {
  /* 10000 flows over 8 ports: 1250 each expected (sd ~33); allow +-15%. */
  const uint64_t seeds[] = {0, 1, 12345};
  for (size_t s = 0; s < 3; s++) {
    int count[8] = {0};
    uint32_t salt = fab_ecmp_salt("leaf3", seeds[s]);
    for (uint32_t i = 0; i < 10000; i++) count[fab_ecmp_pick(flow_hash(i, seeds[s]), salt, 8)]++;
    for (int p = 0; p < 8; p++)
      cr_assert(count[p] >= 1063 && count[p] <= 1437, "seed %llu port %d: %d of 10000 flows",
                (unsigned long long)seeds[s], p, count[p]);
  }
}

Test(ecmp, pick_spreads_odd_group) {
  /* 3 ports: 3333 each expected (sd ~47); allow +-15%. */
  int count[3] = {0};
  for (uint32_t i = 0; i < 10000; i++) count[fab_ecmp_pick(flow_hash(i, 9), fab_ecmp_salt("leaf0", 9), 3)]++;
  for (int p = 0; p < 3; p++) cr_assert(count[p] >= 2833 && count[p] <= 3833, "port %d: %d", p, count[p]);
}

Test(ecmp, salts_decorrelate_switches) {
  /* Two switches each choosing among 2 ports for the same 10000 flows. With
  ** per-switch salts the 4 combinations are about equally likely (2500,
  ** sd ~43; allow +-15%). One shared salt would make the choices identical
  ** ("polarisation"): combinations (0,1) and (1,0) would never occur. */
  uint32_t sa = fab_ecmp_salt("leaf0", 5), sb = fab_ecmp_salt("leaf1", 5);
  cr_assert_neq(sa, sb);
  int joint[2][2] = {{0}};
  for (uint32_t i = 0; i < 10000; i++) {
    uint32_t h = flow_hash(i, 5);
    joint[fab_ecmp_pick(h, sa, 2)][fab_ecmp_pick(h, sb, 2)]++;
  }
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      cr_assert(joint[a][b] >= 2125 && joint[a][b] <= 2875, "(%d,%d): %d of 10000", a, b, joint[a][b]);
}

Test(ecmp, salt_depends_on_switch_name_and_seed) {
  for (uint32_t sw = 0; sw < 50; sw++) {
    char a[16], b[16];
    g_snprintf(a, sizeof a, "spine%u", sw);
    g_snprintf(b, sizeof b, "spine%u", sw + 1);
    cr_assert_eq(fab_ecmp_salt(a, 3), fab_ecmp_salt(a, 3));
    cr_assert_neq(fab_ecmp_salt(a, 3), fab_ecmp_salt(b, 3), "switch %s", a);
    cr_assert_neq(fab_ecmp_salt(a, 3), fab_ecmp_salt(a, 4), "switch %s", a);
  }
  /* the name alone: no creation order, no number (adding a leaf changes no spine's salt) */
  cr_assert_neq(fab_ecmp_salt("leaf3", 0), fab_ecmp_salt("spine3", 0));
}

Test(ecmp, sport_in_dynamic_range) {
  int n_low = 0, n_high = 0;
  for (uint64_t seed = 0; seed < 4; seed++)
    for (uint32_t f = 0; f < 20000; f++) {
      uint16_t sp = fab_ecmp_sport(f, seed);
      cr_assert(sp >= 49152, "flow %u: sport %u", f, sp); /* <= 65535 by its type */
      cr_assert_eq(sp, fab_ecmp_sport(f, seed), "deterministic");
      n_low += sp < 49152 + 8192;
      n_high += sp >= 49152 + 8192;
    }
  /* the 14 bits are used: both halves of the range get about half */
  cr_assert(n_low > 36000 && n_high > 36000, "%d low, %d high", n_low, n_high);
}

Test(ecmp, sport_varies_with_flow_and_seed) {
  /* 1000 flows spread over many of the 16384 ports (random: ~970 distinct) */
  static unsigned char seen[16384];
  int distinct = 0, seed_differs = 0;
  for (uint32_t f = 0; f < 1000; f++) {
    uint16_t sp = fab_ecmp_sport(f, 1);
    if (!seen[sp - 49152]++) distinct++;
    seed_differs += sp != fab_ecmp_sport(f, 2);
  }
  cr_assert_gt(distinct, 900);
  cr_assert_gt(seed_differs, 990);
}

/* ---- the CRC32 hash (fabric.switch.hash: crc32) ---- */

Test(ecmp, crc32_is_the_ieee_crc) {
  cr_assert_eq(fab_crc32(0, "123456789", 9), 0xCBF43926u); /* the standard check value */
  cr_assert_eq(fab_crc32(fab_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u, "continues from a prefix");
  cr_assert_eq(fab_crc32(0, "", 0), 0u);
}

/* Linear in the source port: flipping bits of it changes the hash by the
** XOR of those bits' images, whatever the addresses and the seed; and the
** tuple's other fields and the seed still matter. */
Test(ecmp, crc32_is_linear_in_the_source_port) {
  uint32_t bit[8];
  fab_ecmp_crc_sport_bits(bit);
  for (uint32_t i = 0; i < 200; i++) {
    uint32_t s = i * 2654435761u, d = i ^ 0x5a5a5a5au;
    uint16_t sp = (uint16_t)(49152 + (i * 97) % 16384);
    uint64_t seed = i * 0x9e3779b97f4a7c15ull;
    uint32_t h = fab_ecmp_hash_of(FAB_HASH_CRC32, s, d, sp, ROCE_DPORT, UDP, seed);
    for (uint32_t v = 1; v < 256; v += 37) {
      uint32_t want = h;
      for (int b = 0; b < 8; b++)
        if (v >> b & 1) want ^= bit[b];
      cr_assert_eq(fab_ecmp_hash_of(FAB_HASH_CRC32, s, d, (uint16_t)(sp ^ v), ROCE_DPORT, UDP, seed), want);
    }
    cr_assert_neq(fab_ecmp_hash_of(FAB_HASH_CRC32, s + 1, d, sp, ROCE_DPORT, UDP, seed), h);
    cr_assert_neq(fab_ecmp_hash_of(FAB_HASH_CRC32, s, d, sp, ROCE_DPORT, UDP, seed + 1), h);
  }
  cr_assert_eq(fab_ecmp_hash_of(FAB_HASH_MIX, 1, 2, 3, 4, 5, 6), fab_ecmp_hash(1, 2, 3, 4, 5, 6));
}

/* The windows of the three tiers: an aligned block of 2^k source ports
** spreads over 2^m members exactly 2^(k-m) each, for groups of 2 to 32 and
** blocks of 2^m to 256, whatever the addresses, the seed and the switch's
** salt; the one exception is tier 2's window, on a block of 2 over 2
** members. The mixed hash spreads the same blocks as balls into bins. */
Test(ecmp, crc32_tier_windows_split_aligned_blocks_evenly) {
  int uneven_mix = 0;
  for (uint32_t tier = 0; tier < 3; tier++)
    for (uint32_t m = 1; m <= 5; m++)
      for (uint32_t k = m; k <= 8; k++)
        for (uint32_t trial = 0; trial < 4; trial++) {
          uint32_t n = 1u << m, count[32] = {0}, mix[32] = {0};
          uint16_t base = (uint16_t)(49152 + ((trial * 40503u + k * 977u) % 16384));
          uint32_t salt = fab_ecmp_salt(trial & 1 ? "leaf7" : "spine2", trial);
          for (uint32_t v = 0; v < 1u << k; v++) {
            uint16_t sp = (uint16_t)(base ^ v);
            count[fab_ecmp_pick_crc(fab_ecmp_hash_of(FAB_HASH_CRC32, 3 + trial, 77, sp, ROCE_DPORT, UDP, trial),
                                    salt, tier, n)]++;
            mix[fab_ecmp_pick(fab_ecmp_hash(3 + trial, 77, sp, ROCE_DPORT, UDP, trial), salt, n)]++;
          }
          bool even = true, mix_even = true;
          for (uint32_t j = 0; j < n; j++) {
            even &= count[j] == 1u << (k - m);
            mix_even &= mix[j] == 1u << (k - m);
          }
          bool exception = tier == 2 && m == 1 && k == 1;
          cr_assert_eq(even, !exception, "tier %u, %u members, block of %u (trial %u)", tier, n, 1u << k, trial);
          uneven_mix += !mix_even;
        }
  cr_assert_gt(uneven_mix, 300, "the mixed hash splits few blocks exactly: %d of 360 uneven", uneven_mix);
}

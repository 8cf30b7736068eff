/* SRD's sender records (models/srd.h): the path rule, the timers and the
** RTT estimators on a hand-built flow, worked out on paper; and libfabric
** EFA's read-based send protocols above SRD (models/nic.h) on two NICs.
** Whole runs are in test_nic.c (one flow through a reordering element) and
** test_multipath.c (fabrics). */
#include <criterion/criterion.h>
#include "testnet.h"
#include "models/bits.h"
#include "models/srd.h"

typedef struct Fx {
  FabFlow f;
  FabSrdTx s;
} Fx;

/* PSNs 0 .. n-1 sent 1 us apart, PSN i on value evs[i]. */
static void send_all(Fx *x, const uint16_t *evs, uint32_t n) {
  memset(x, 0, sizeof *x);
  x->f.srd = &x->s;
  x->f.npkts = 100;
  for (uint32_t i = 0; i < n; i++) {
    fab_srd_sent(&x->f, i, evs[i], (fab_time_t)i * FAB_US);
    x->f.snd_max = x->f.snd_nxt = i + 1;
  }
}

/* The receiver's ACK of `psn` (selectively: the window does not move). */
static uint32_t ack(Fx *x, uint32_t psn) {
  fab_bit_set(x->f.sacked, psn - x->f.snd_una);
  return fab_srd_acked(&x->f, x->f.snd_una, psn, x->s.ev[psn & FAB_SRD_MASK]);
}

/* Values 0 1 0 1 0 1: the ACK of PSN 4 (value 0's third) before PSN 2's
** (its second) shows PSN 2 lost, and skips value 0 once; PSN 3 and 5 of
** value 1, unacknowledged, are not touched; PSN 2's late ACK changes
** nothing. */
Test(srd, a_later_ack_on_the_same_value_shows_the_loss) {
  Fx x;
  send_all(&x, (const uint16_t[]){0, 1, 0, 1, 0, 1}, 6);
  cr_assert_eq(ack(&x, 0), 0);
  cr_assert_eq(ack(&x, 1), 0);
  cr_assert_eq(ack(&x, 4), 1);
  cr_assert_eq(fab_srd_next_lost(&x.f), 2);
  cr_assert(fab_bit_at(x.f.ev_skip, 0));
  cr_assert_not(fab_bit_at(x.f.ev_skip, 1));
  cr_assert_eq(ack(&x, 2), 0, "an old ACK of value 0");
  /* resent on value 1: its record moves, and it is no longer lost */
  fab_srd_sent(&x.f, 2, 1, 10 * FAB_US);
  cr_assert_eq(fab_srd_next_lost(&x.f), UINT32_MAX);
  cr_assert_eq(x.s.stamp[2], 3, "value 1's fourth packet");
  cr_assert_eq(ack(&x, 5), 1, "PSN 3 (value 1's second) was passed by 5 (its third)");
  cr_assert_eq(fab_srd_next_lost(&x.f), 3);
}

/* The window moves: the lost bits move with it. */
Test(srd, the_lost_bits_follow_the_window) {
  Fx x;
  send_all(&x, (const uint16_t[]){0, 0, 0, 0}, 4);
  cr_assert_eq(ack(&x, 3), 3);
  x.f.snd_una = 1;
  fab_bits_shift(x.f.sacked, FAB_SACK_WORDS, 1);
  fab_srd_shift(&x.f, 1);
  cr_assert_eq(fab_srd_next_lost(&x.f), 1);
}

/* RFC 6298: the first sample R gives srtt R, rttvar R/2, RTO 3R; the
** next, R' = 2R: rttvar 3/4 R/2 + 1/4 R = 5R/8, srtt 7R/8 + 2R/8 = 9R/8.
** The floor; before any sample, the initial. */
Test(srd, rto_follows_rfc_6298_with_a_floor) {
  Fx x;
  send_all(&x, (const uint16_t[]){0}, 1);
  cr_assert_eq(fab_srd_rto(&x.f, FAB_US, 77 * FAB_US), 77 * FAB_US);
  fab_srd_rtt(&x.f, 8 * FAB_US, 0, 0);
  cr_assert_eq(x.s.srtt, 8 * FAB_US);
  cr_assert_eq(x.s.rttvar, 4 * FAB_US);
  cr_assert_eq(fab_srd_rto(&x.f, FAB_US, 77 * FAB_US), 24 * FAB_US);
  cr_assert_eq(fab_srd_rto(&x.f, 50 * FAB_US, 77 * FAB_US), 50 * FAB_US);
  fab_srd_rtt(&x.f, 16 * FAB_US, 0, 0);
  cr_assert_eq(x.s.rttvar, 5 * FAB_US);
  cr_assert_eq(x.s.srtt, 9 * FAB_US);
  cr_assert_eq(x.s.min_rtt, 8 * FAB_US);
}

/* avoid_delay: a sample more than it above the lowest skips its value once. */
Test(srd, a_slow_rtt_skips_its_value) {
  Fx x;
  send_all(&x, (const uint16_t[]){0}, 1);
  cr_assert_not(fab_srd_rtt(&x.f, 4 * FAB_US, 3, 10 * FAB_US));
  cr_assert_not(fab_srd_rtt(&x.f, 14 * FAB_US, 3, 10 * FAB_US), "exactly 10 us above: not more");
  cr_assert(fab_srd_rtt(&x.f, 15 * FAB_US, 5, 10 * FAB_US));
  cr_assert(fab_bit_at(x.f.ev_skip, 5));
  cr_assert_not(fab_bit_at(x.f.ev_skip, 3));
}

/* Timers: PSNs sent at 0..4 us, RTO 10 us, at 12 us: 0, 1 and 2 are due
** (sent by 2 us), acknowledged PSN 1 is not outstanding; the next due is
** PSN 3's, at 13 us. Each timer backs off on its own: PSN 0 resent at
** 12 us waits 20 us (due at 32), while 3 and 4 expire at 13 and 14 us. */
Test(srd, timers_expire_per_packet_and_back_off_per_packet) {
  Fx x;
  send_all(&x, (const uint16_t[]){0, 1, 2, 3, 4}, 5);
  ack(&x, 1);
  fab_time_t next;
  uint32_t tries;
  cr_assert_eq(fab_srd_expire(&x.f, 12 * FAB_US, 10 * FAB_US, &next, &tries), 2);
  cr_assert_eq(next, 13 * FAB_US);
  cr_assert_eq(tries, 1, "a first timeout");
  cr_assert_eq(fab_srd_next_lost(&x.f), 0);
  cr_assert(fab_bit_at(x.s.lost, 2));
  cr_assert_eq(fab_srd_expire(&x.f, 12 * FAB_US, 10 * FAB_US, &next, &tries), 0, "already presumed lost");
  fab_srd_sent(&x.f, 0, 0, 12 * FAB_US); /* resent */
  cr_assert_eq(x.s.tries[0], 1);
  cr_assert_eq(fab_srd_expire(&x.f, 14 * FAB_US, 10 * FAB_US, &next, &tries), 2);
  cr_assert_eq(next, 32 * FAB_US);
  cr_assert_eq(fab_srd_expire(&x.f, 32 * FAB_US, 10 * FAB_US, &next, &tries), 1);
  cr_assert_eq(tries, 2, "PSN 0's second timeout");
  cr_assert_eq(next, FAB_TIME_MAX);
}

/* libfabric EFA's read-based protocols (models/nic.h) on two SRD NICs over
** one 100 Gb/s link of 1 us, 4096 B packets of 4178 wire bytes (334.24 ns
** each), the request's round trip set to 50 us:
** - A, 1 MiB at 0: runt of 307,200 B (75 packets) at once, the read part
**   (181 packets) from 50 us;
** - B, 64 KiB at 1 us, while A's read is under way: a long read, all 16
**   packets from 51 us;
** from 50 us the link never idles: A's last packet is the 197th after it,
** A ends at 50 + 197 x 0.33424 + 1 us. Once both are acknowledged the budget
** and the domain's count are back, and C, 200 KiB, goes whole as its runt:
** 50 packets back to back, no wait. D, 8 KiB (under 8761 B): eager. */
Test(srd, efa_read_protocols_hold_the_read_part_a_round_trip) {
  FabEngine *eng = testnet_engine(1);
  FabNicCfg cfg = testnet_nic_cfg(100000000000ULL, 4096, FAB_TRANSPORT_ROCEV2);
  cfg.srd = cfg.selective = true;
  cfg.rto_min = 20 * FAB_US;
  FabNic nic[2];
  FabFlow flows[4];
  TestRun run = {0};
  for (uint32_t i = 0; i < 2; i++) testnet_nic(&nic[i], i, &cfg, flows, &run, FAB_US);
  fab_port_connect(&nic[0].port, &nic[1].port);
  const fab_time_t rtt = 50 * FAB_US, pkt = 4178 * 80;
  flows[0] = testnet_flow(0, 0, 1, 1u << 20, 0, &cfg);
  flows[1] = testnet_flow(1, 0, 1, 64u << 10, FAB_US, &cfg);
  for (int i = 0; i < 2; i++) {
    flows[i].read_rtt = rtt;
    fab_nic_post(eng, &nic[0], &flows[i]);
  }
  cr_assert(fab_engine_run(eng, 2 * FAB_US));
  cr_assert_eq(flows[0].runt, 307200);
  cr_assert_eq(flows[0].hold_seq, 75);
  cr_assert_eq(flows[0].hold_until, rtt);
  cr_assert_eq(flows[1].runt, 0, "a read is under way on the NIC: long read");
  cr_assert_eq(flows[1].hold_seq, 0);
  cr_assert_eq(flows[1].hold_until, FAB_US + rtt);
  cr_assert_eq(nic[0].reads_open[0], 2);
  cr_assert(fab_engine_run(eng, FAB_TIME_MAX));
  cr_assert_eq(run.done, 2);
  cr_assert_eq(flows[0].end, rtt + 197 * pkt + FAB_US, "A ends at %lu", flows[0].end);
  cr_assert_gt(flows[1].end, FAB_US + rtt + 16 * pkt);
  cr_assert_eq(nic[0].runt_reads, 1);
  cr_assert_eq(nic[0].long_reads, 1);
  cr_assert_eq(nic[0].reads_open[0], 0, "acknowledged: the EOR is in");
  cr_assert_eq(g_hash_table_size(nic[0].runt_out), 0, "the runt budget is back");
  fab_time_t t0 = eng->now;
  flows[2] = testnet_flow(2, 0, 1, 200u << 10, t0, &cfg);
  flows[3] = testnet_flow(3, 0, 1, 8u << 10, t0 + FAB_MS, &cfg);
  for (int i = 2; i < 4; i++) {
    flows[i].read_rtt = rtt;
    fab_nic_post(eng, &nic[0], &flows[i]);
  }
  cr_assert(fab_engine_run(eng, FAB_TIME_MAX));
  cr_assert_eq(run.done, 4);
  cr_assert_eq(flows[2].runt, 200u << 10);
  cr_assert_not(flows[2].reading);
  cr_assert_eq(flows[2].end, t0 + 50 * pkt + FAB_US, "the runt covers it: no wait");
  cr_assert_eq(flows[3].runt, 0);
  cr_assert_eq(flows[3].end, t0 + FAB_MS + 2 * pkt + FAB_US, "8 KiB: eager, two packets");
  cr_assert_eq(nic[0].runt_reads + nic[0].long_reads, 2, "no read for C or D");
  cr_assert_eq(g_hash_table_size(nic[0].runt_out), 0);
  cr_assert_eq(fab_pool_live(eng->pool), 0);
  for (int i = 0; i < 2; i++) fab_nic_clear(&nic[i]);
  fab_engine_free(eng);
}

/* A GPU with 4 NICs (rails, each its own libfabric domain) and striping at
** 128 KiB (nic.h): 1 MiB goes as 4 stripes of 256 KiB, each within its
** rail's runt budget: no read. 4 MiB goes as 4 stripes of 1 MiB: a runt of
** 307,200 B on each rail (300 packets of 4096 B in all) and a read part on
** each, counted on all four rails until acknowledged. */
Test(srd, efa_read_protocols_count_per_rail) {
  FabEngine *eng = testnet_engine(1);
  FabNicCfg cfg = testnet_nic_cfg(100000000000ULL, 4096, FAB_TRANSPORT_ROCEV2);
  cfg.srd = cfg.selective = true;
  cfg.rto_min = 20 * FAB_US;
  cfg.stripe_rails = 4;
  cfg.stripe_min = 128 * 1024;
  FabNic nic[2];
  FabFlow flows[2];
  TestRun run = {0};
  for (uint32_t i = 0; i < 2; i++) testnet_nic(&nic[i], i, &cfg, flows, &run, FAB_US);
  fab_port_connect(&nic[0].port, &nic[1].port);
  flows[0] = testnet_flow(0, 0, 1, 1u << 20, 0, &cfg);
  flows[1] = testnet_flow(1, 0, 1, 4u << 20, FAB_MS, &cfg);
  cr_assert_eq(flows[0].stripes, 4);
  for (int i = 0; i < 2; i++) {
    flows[i].read_rtt = 50 * FAB_US;
    fab_nic_post(eng, &nic[0], &flows[i]);
  }
  cr_assert(fab_engine_run(eng, FAB_MS / 2));
  cr_assert_eq(flows[0].runt, 256u << 10, "each stripe is its rail's runt");
  cr_assert_not(flows[0].reading);
  cr_assert(fab_engine_run(eng, FAB_MS + FAB_US));
  cr_assert_eq(flows[1].runt, 307200);
  cr_assert_eq(flows[1].hold_seq, 300);
  for (int r = 0; r < 4; r++) cr_assert_eq(nic[0].reads_open[r], 1, "rail %d", r);
  cr_assert(fab_engine_run(eng, FAB_TIME_MAX));
  cr_assert_eq(run.done, 2);
  for (int r = 0; r < 4; r++) cr_assert_eq(nic[0].reads_open[r], 0);
  cr_assert_eq(g_hash_table_size(nic[0].runt_out), 0);
  cr_assert_eq(fab_pool_live(eng->pool), 0);
  for (int i = 0; i < 2; i++) fab_nic_clear(&nic[i]);
  fab_engine_free(eng);
}

/*
** NVLS (models/nvls.h): the NVSwitch's reduce-scatter, all-gather and
** allreduce groups, on one DGX H100 whose workload is replaced by hand-made
** NVLS ops. Segments are 64 KiB of data; on NVLink each takes 65536 + 16
** = 65552 wire bytes (NVLS efficiency 1: the loops' costs are paid as time,
** workloads/coll_nvls.c).
** Every count below is worked out from the group's rule: member m owns the
** segments k with k mod n = m.
*/
#include <criterion/criterion.h>
#include <string.h>

#include "testscen.h"
#include "workloads/dag.h"

#define SEG 65536ull
#define WIRE 65552ull

static const char dgx[] =
  "cluster: {node: dgx-h100, nodes: 1}\n"
  "fabric: {topology: {kind: single-switch}, link: {bandwidth: 400Gbps}}\n"
  "workload: {kind: flows, flows: [{src: 0, dst: 1, size: 1}]}\n";

/* A scenario whose DAG is one NVLS group of `mode` over ranks 0..n-1, rank m
** with segs[m] segments. */
static FabScenario *group_of(FabNvlsOp mode, uint32_t n, const uint32_t *segs, const char *const *sets,
                             uint64_t max_bps, uint64_t seg) {
  FabScenario *sc = testscen_load(dgx, sets);
  fab_dag_free(sc->dag);
  sc->dag = fab_dag_new();
  FabJobDef j = {.name = "nvls", .kind = "collective", .nranks = n, .ranks = g_new(uint32_t, n)};
  for (uint32_t m = 0; m < n; m++) j.ranks[m] = m;
  fab_dag_job(sc->dag, &j);
  uint32_t g = sc->dag->groups++;
  for (uint32_t m = 0; m < n; m++) {
    FabOp o = {.kind = FAB_OP_NVLS, .mark = (uint8_t)mode, .src = m, .dst = m, .coll = -1, .group = g,
               .bytes = segs[m] * SEG, .max_bps = max_bps, .seg = seg};
    fab_dag_add(sc->dag, &o, NULL, 0);
  }
  return sc;
}

static FabScenario *group(FabNvlsOp mode, uint32_t n, const uint32_t *segs, const char *const *sets) {
  return group_of(mode, n, segs, sets, 0, 0);
}

static uint64_t out_of(const FabResults *r, uint32_t gpu) {
  char p[16];
  g_snprintf(p, sizeof p, "gpu%u:p1", gpu);
  return testscen_bytes_from(r, p);
}

static uint64_t into(const FabResults *r, uint32_t gpu) {
  char p[16];
  g_snprintf(p, sizeof p, "nvs0:p%u", gpu);
  return testscen_bytes_from(r, p);
}

/* Run one group of 4 and check what each member sends and receives, in
** segments. */
static void expect_traffic(FabNvlsOp mode, const uint32_t segs[4], const uint32_t sent[4], const uint32_t got[4]) {
  FabScenario *sc = group(mode, 4, segs, NULL);
  FabResults res;
  testscen_run(sc, &res);
  fab_time_t t = res.sim_time;
  testscen_done(sc, &res);
  /* receivers that place data out of order change nothing here: NVLS segments are the switch's, never
  ** acknowledged (they once left an allreduce's members waiting for a window that never opened) */
  sc = group(mode, 4, segs, (const char *const[]){"cluster.nic.reliability=selective", NULL});
  testscen_run(sc, &res);
  cr_assert_eq(res.sim_time, t, "selective: %lu ps, go-back-n %lu ps", res.sim_time, t);
  for (uint32_t m = 0; m < 4; m++) {
    cr_assert_eq(out_of(&res, m), sent[m] * WIRE, "member %u sends %u segments", m, sent[m]);
    cr_assert_eq(into(&res, m), got[m] * WIRE, "member %u receives %u segments", m, got[m]);
  }
  cr_assert_eq(into(&res, 4), 0, "a non-member gets nothing");
  testscen_done(sc, &res);
}

/* RS: 4 members of 6 segments: member m owns k = m, m + 4 (< 6): members 0
** and 1 two segments, 2 and 3 one. Each sends its 6, receives what it owns. */
Test(nvls, reduce_scatter_gives_each_owner_its_segments) {
  static const uint32_t segs[4] = {6, 6, 6, 6}, own[4] = {2, 2, 1, 1};
  expect_traffic(FAB_NVLS_OP_RS, segs, segs, own);
}

/* AG: members store 1, 2, 3 and 4 segments; each receives all 10. */
Test(nvls, all_gather_multicasts_every_member_s_data) {
  static const uint32_t segs[4] = {1, 2, 3, 4}, all[4] = {10, 10, 10, 10};
  expect_traffic(FAB_NVLS_OP_AG, segs, segs, all);
}

/* AR: 4 members of 8 segments: each sends 8 + its 2 owned stores, receives
** its 2 reduced segments + 8 copies. */
Test(nvls, allreduce_is_the_reduce_scatter_then_the_owners_multicast) {
  static const uint32_t segs[4] = {8, 8, 8, 8}, both[4] = {8 + 2, 8 + 2, 8 + 2, 8 + 2};
  expect_traffic(FAB_NVLS_OP_AR, segs, both, both);
}

/* The switch's reduction rate: at 1 GB/s per owner port, an owner's 2
** reduced segments take 2 x 65536 B / 1 GB/s = 131 us, far above what the
** links take (a few us): the run lasts at least that. */
Test(nvls, the_reduction_rate_bounds_a_reduce_scatter) {
  uint32_t segs[4] = {8, 8, 8, 8};
  const char *sets[] = {"cluster.nvlink.nvls_reduce_bandwidth=1GB/s", NULL};
  FabScenario *fast = group(FAB_NVLS_OP_RS, 4, segs, NULL), *slow = group(FAB_NVLS_OP_RS, 4, segs, sets);
  FabResults rf, rs;
  testscen_run(fast, &rf);
  testscen_run(slow, &rs);
  cr_assert_lt(rf.sim_time, 10 * FAB_US);
  cr_assert_geq(rs.sim_time, 2 * 65536 * FAB_NS);
  cr_assert_lt(rs.sim_time, 2 * 65536 * FAB_NS + 10 * FAB_US);
  testscen_done(fast, &rf);
  testscen_done(slow, &rs);
}

/* The efficiency is a key: at 0.5 a segment is 131072 + 16 bytes. */
Test(nvls, the_efficiency_inflates_every_nvls_segment) {
  uint32_t segs[2] = {1, 1};
  const char *sets[] = {"cluster.nvlink.nvls_efficiency=0.5", NULL};
  FabScenario *sc = group(FAB_NVLS_OP_AG, 2, segs, sets);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(out_of(&res, 0), 131072 + 16);
  testscen_done(sc, &res);
}

/* A channel's NVLS op (max_bps, its share of NVLink) makes each segment
** at that rate: a member's segment leaves ser(wire, max_bps) after the one
** before (the first once it is made). Two members storing 4 segments each
** (AG), each receiving both multicasts: unpaced, each segment after the
** first adds two serialisations at the line rate to a member's port (its
** own and the other's), paced one at max_bps (which is longer); the first
** adds ser at max_bps less ser at the line. So the paced run ends exactly
** (r - l) + 3 (r - 2 l) later, r and l a segment's time at max_bps and at
** the line. */
Test(nvls, a_channel_s_op_makes_its_segments_at_its_share) {
  uint32_t segs[2] = {4, 4};
  uint64_t line = 370800000000ull * 8, share = line / 16;
  FabScenario *fast = group_of(FAB_NVLS_OP_AG, 2, segs, NULL, 0, 0);
  FabScenario *slow = group_of(FAB_NVLS_OP_AG, 2, segs, NULL, share, 0);
  cr_assert_eq(fast->fabric.nic.nvl_bps, line, "DGX H100's NVLink: 370.8 GB/s");
  FabResults rf, rs;
  testscen_run(fast, &rf);
  testscen_run(slow, &rs);
  fab_time_t r = fab_time_ser(WIRE, share), l = fab_time_ser(WIRE, line);
  cr_assert_eq(rs.sim_time - rf.sim_time, (r - l) + 3 * (r - 2 * l),
               "paced %lu ps, line rate %lu ps", rs.sim_time, rf.sim_time);
  testscen_done(fast, &rf);
  testscen_done(slow, &rs);
}

/* `seg` cuts an op into segments of a head's chunk: 64 KiB in 16 KiB
** segments is 4 segments of 16384 + 16 wire bytes (an AG member receives
** both members' 4); an RS of 2 members of 2
** such chunks each gives each member one chunk (ownership by segment). */
Test(nvls, seg_cuts_an_op_into_chunks_that_members_own) {
  uint32_t one[2] = {1, 1};
  FabScenario *sc = group_of(FAB_NVLS_OP_AG, 2, one, NULL, 0, 16384);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(out_of(&res, 0), 4 * (16384 + 16));
  cr_assert_eq(into(&res, 0), 2 * 4 * (16384 + 16), "both members' four");
  testscen_done(sc, &res);
  sc = group_of(FAB_NVLS_OP_RS, 2, one, NULL, 0, 32768);
  testscen_run(sc, &res);
  cr_assert_eq(out_of(&res, 0), 2 * (32768 + 16), "its two chunks into the switch");
  cr_assert_eq(into(&res, 0), 32768 + 16, "the one it owns, reduced");
  cr_assert_eq(into(&res, 1), 32768 + 16);
  testscen_done(sc, &res);
}

/* Where NVLS exists: not on Ampere, not when turned off; the keys that need
** it are refused without it. */
Test(nvls, only_where_the_switch_can_reduce) {
  FabScenario *sc = testscen_load(dgx, NULL);
  cr_assert(sc->fabric.gpu.nvls);
  fab_scenario_free(sc);
  const char *off[] = {"cluster.nvlink.nvls=false", NULL};
  sc = testscen_load(dgx, off);
  cr_assert(!sc->fabric.gpu.nvls);
  fab_scenario_free(sc);
  const char *a100[] = {"cluster.node=dgx-a100", NULL};
  sc = testscen_load(dgx, a100);
  cr_assert(!sc->fabric.gpu.nvls, "Ampere has no NVLS");
  fab_scenario_free(sc);
  const char *force[] = {"cluster.node=dgx-a100", "cluster.nvlink.nvls=true", NULL};
  testscen_expect_error(dgx, force, "--set:1:", "ampere GPUs have no NVLS");
  const char *eff[] = {"cluster.nvlink.nvls=false", "cluster.nvlink.nvls_efficiency=0.8", NULL};
  testscen_expect_error(dgx, eff, "--set:1:", "NVLS is off here (nvls: false)");
  const char *coll[] = {"cluster.node=dgx-a100", "workload={kind: collective, op: allreduce, size: 1MiB, algorithm: nvls}",
                        NULL};
  testscen_expect_error(dgx, coll, "--set:1:", "nvls needs an NVSwitch that reduces");
}

/* cluster.nvlink.nvls_segment sets NVLS traffic's segments in whole chunks
** (the op's seg), never more than a member's share of a reduce-scatter or
** allreduce: an allreduce of 4 members of 8 x 64 KiB (op seg 16 KiB) in
** 128 KiB segments is 4 segments a member, one owned by each: each sends
** its 4 + 1 owned store and receives 1 reduced + 4 copies, of 131072 + 16
** wire bytes; asked for 1 MiB it gets the same, 128 KiB being a member's
** share (with 1 MiB segments member 0 would own all). An allgather has no
** share to keep: 2 members storing 512 KiB each in 1 MiB segments send one
** segment each and receive both, which needs the NVSwitch's credit unit
** grown to hold one. Set to the chunk itself it changes nothing, to the
** picosecond and the event. */
Test(nvls, nvls_segment_sets_the_granularity_whatever_the_chunk) {
  uint32_t segs[4] = {8, 8, 8, 8};
  const char *const *sets[2] = {(const char *const[]){"cluster.nvlink.nvls_segment=128KiB", NULL},
                                (const char *const[]){"cluster.nvlink.nvls_segment=1MiB", NULL}};
  FabResults res;
  for (int s = 0; s < 2; s++) {
    FabScenario *sc = group_of(FAB_NVLS_OP_AR, 4, segs, sets[s], 0, 16384);
    testscen_run(sc, &res);
    cr_assert_eq(res.nvls_segment, s ? 1048576 : 131072, "the results state the setting");
    for (uint32_t m = 0; m < 4; m++) {
      cr_assert_eq(out_of(&res, m), 5 * (131072 + 16), "member %u (%s)", m, sets[s][0]);
      cr_assert_eq(into(&res, m), 5 * (131072 + 16), "member %u (%s)", m, sets[s][0]);
    }
    testscen_done(sc, &res);
  }
  FabScenario *sc = group_of(FAB_NVLS_OP_AG, 2, segs, sets[1], 0, 16384);
  testscen_run(sc, &res);
  cr_assert_eq(out_of(&res, 0), 524288 + 16, "its part in one segment");
  cr_assert_eq(into(&res, 0), 2 * (524288 + 16), "both members' parts");
  testscen_done(sc, &res);
  FabScenario *a = group_of(FAB_NVLS_OP_AR, 4, segs, NULL, 0, 32768);
  const char *same[] = {"cluster.nvlink.nvls_segment=32KiB", NULL};
  FabScenario *b = group_of(FAB_NVLS_OP_AR, 4, segs, same, 0, 32768);
  FabResults ra, rb;
  testscen_run(a, &ra);
  testscen_run(b, &rb);
  cr_assert_eq(ra.nvls_segment, 0, "unset: NCCL's chunk, stated as null");
  cr_assert_eq(rb.sim_time, ra.sim_time, "%lu ps against %lu ps", rb.sim_time, ra.sim_time);
  cr_assert_eq(rb.events, ra.events);
  cr_assert_eq(rb.packet_hops, ra.packet_hops);
  testscen_done(a, &ra);
  testscen_done(b, &rb);
}

/* nvls_segment is NVLS's: refused where there is none, and below 64 B. */
Test(nvls, nvls_segment_only_with_nvls) {
  const char *off[] = {"cluster.nvlink.nvls=false", "cluster.nvlink.nvls_segment=256KiB", NULL};
  testscen_expect_error(dgx, off, "--set:1:", "cluster.nvlink.nvls_segment: NVLS is off here (nvls: false)");
  const char *a100[] = {"cluster.node=dgx-a100", "cluster.nvlink.nvls_segment=256KiB", NULL};
  testscen_expect_error(dgx, a100, "--set:1:", "nvls_segment: NVLS is off here (the architecture has none)");
  const char *tiny[] = {"cluster.nvlink.nvls_segment=32", NULL};
  testscen_expect_error(dgx, tiny, "--set:1:", "nvls_segment");
}

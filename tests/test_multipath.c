/* Multipath fabrics, whole runs: host-driven spraying over ECMP switches
** (cluster.nic.spray). The NIC's side of it is in test_nic.c, switch
** routing in test_switch.c. */
#include "testscen.h"

/* One 16 MiB flow from host 0 to host 4, across a leaf-spine of 4 spines. */
static const char elephant[] =
  "name: elephant\n"
  "cluster: {nodes: 8, nic: {reliability: selective}}\n"
  "fabric:\n"
  "  topology: {kind: leaf-spine, hosts_per_leaf: 4, spines: 4}\n"
  "  link: {bandwidth: 100Gbps, latency: 1us}\n"
  "workload: {kind: flows, flows: [{src: 0, dst: 4, size: 16MiB}]}\n";

/* Bytes leaf0 sent up to each of the 4 spines. */
static void uplinks(const char *const *sets, uint64_t up[4], uint64_t *retx) {
  FabScenario *sc = testscen_load(elephant, sets);
  FabResults res;
  testscen_run(sc, &res);
  memset(up, 0, 4 * sizeof *up);
  for (size_t i = 0; i < res.n_links; i++) {
    const FabLinkRec *l = &res.links[i];
    if (g_str_has_prefix(l->from, "leaf0:") && g_str_has_prefix(l->to, "spine")) up[atoi(l->to + 5)] += l->bytes;
  }
  *retx = res.retransmits;
  testscen_done(sc, &res);
}

/* Without spraying the flow takes one uplink. Sprayed over 256 entropy
** values, each pass of 256 packets takes every value once and each value
** hashes to one uplink: every uplink carries its values' share, which for
** a random hash is balls into bins (256 values into 4 bins: 64 +- 8 each,
** so within +-40 % at five deviations). Whatever the order, nothing is
** lost and nothing resent. */
Test(multipath, one_sprayed_elephant_uses_every_uplink) {
  uint64_t up[4], total = 0, retx;
  uplinks(NULL, up, &retx);
  int used = 0;
  for (int s = 0; s < 4; s++) used += up[s] > 1000000;
  cr_assert_eq(used, 1, "ECMP: one uplink carries the flow (%lu %lu %lu %lu)", up[0], up[1], up[2], up[3]);
  uplinks((const char *const[]){"cluster.nic.spray=round-robin", NULL}, up, &retx);
  for (int s = 0; s < 4; s++) total += up[s];
  cr_assert_gt(total, 16u << 20);
  for (int s = 0; s < 4; s++) {
    cr_assert_gt(up[s], total / 4 * 6 / 10, "spine%d carried %lu of %lu", s, up[s], total);
    cr_assert_lt(up[s], total / 4 * 14 / 10, "spine%d carried %lu of %lu", s, up[s], total);
  }
  cr_assert_eq(retx, 0, "no loss, no resend: %lu", retx);
}

/* Under a CRC32 hash (what switch ASICs compute) a sprayed flow's values,
** an aligned block of the source port's low bits, map onto a leaf's 4
** uplinks as a linear map of full rank: each takes exactly a quarter of
** every pass (here 256 values, and a block of 64), so the uplinks carry the
** same bytes to the byte, where the mixed hash gives balls into bins. */
Test(multipath, crc32_hash_spreads_a_sprayed_elephant_exactly_evenly) {
  const char *paths[] = {"cluster.nic.paths=256", "cluster.nic.paths=64"};
  for (int k = 0; k < 2; k++) {
    uint64_t up[4], retx;
    uplinks((const char *const[]){"cluster.nic.spray=round-robin", "fabric.switch.hash=crc32", paths[k], NULL}, up,
            &retx);
    for (int s = 1; s < 4; s++) cr_assert_eq(up[s], up[0], "%s: spine%d %lu, spine0 %lu", paths[k], s, up[s], up[0]);
    cr_assert_gt(up[0], (16u << 20) / 4, "%s: a quarter of the flow and its headers on each", paths[k]);
    cr_assert_eq(retx, 0);
  }
  uint64_t up[4], retx;
  uplinks((const char *const[]){"cluster.nic.spray=round-robin", "cluster.nic.paths=256", NULL}, up, &retx);
  cr_assert(up[0] != up[1] || up[1] != up[2] || up[2] != up[3], "the mixed hash: bins, not an exact split");
  /* two tiers choose on a k=4 fat-tree (edge: 2 aggregations, each: 2 cores), each with its own window:
  ** across pods the flow crosses the 4 cores a quarter each, no tier polarising the next */
  FabScenario *sc = testscen_load("name: ft\n"
                                  "cluster: {nodes: 16, nic: {reliability: selective, spray: round-robin}}\n"
                                  "fabric:\n"
                                  "  topology: {kind: fat-tree, k: 4}\n"
                                  "  link: {bandwidth: 100Gbps, latency: 1us}\n"
                                  "  switch: {hash: crc32}\n"
                                  "workload: {kind: flows, flows: [{src: 0, dst: 15, size: 16MiB}]}\n", NULL);
  FabResults res;
  testscen_run(sc, &res);
  uint64_t core[4] = {0}, total = testscen_bytes_from(&res, "host0:");
  for (size_t i = 0; i < res.n_links; i++)
    if ((g_str_has_prefix(res.links[i].from, "agg0:") || g_str_has_prefix(res.links[i].from, "agg1:")) &&
        g_str_has_prefix(res.links[i].to, "core")) /* pod 0's way up (the ACKs come up from pod 3) */
      core[atoi(res.links[i].to + 4)] += res.links[i].bytes;
  for (int c = 0; c < 4; c++) cr_assert_eq(core[c] * 4, total, "core%d: %lu of %lu", c, core[c], total);
  testscen_done(sc, &res);
}

/* The shipped permutation sprayed over CRC32-hashing switches: the same
** JSON twice, and the slowest flow sooner than over the mixed hash (every
** flow splits evenly over the 8 spines: no uplink carries more than its
** share; on 2026-11-25 0.393 ms against 0.463 ms). */
Test(multipath, crc32_spraying_is_deterministic_and_beats_the_mixed_hash) {
  fab_time_t crc = testscen_permutation_twice((const char *const[]){"fabric.switch.hash=crc32",
                                                                    "cluster.nic.reliability=selective",
                                                                    "cluster.nic.spray=round-robin", NULL}, NULL);
  fab_time_t mix = testscen_permutation_twice((const char *const[]){"cluster.nic.reliability=selective",
                                                                    "cluster.nic.spray=round-robin", NULL}, NULL);
  cr_assert_lt(crc, mix * 9 / 10, "crc32 %lu ps, mix %lu ps", crc, mix);
}

/* The shipped permutation with long flows (32 MiB) and `sets`: each flow's
** share of the line rate (its wire bytes, payload and a header per packet,
** over its completion time), their mean and the smallest. */
static void long_permutation(const char *const *sets, double *mean, double *min) {
  FabScenario *sc = testscen_load_file("scenarios/leaf-spine-permutation-128.yaml", sets);
  FabResults res;
  testscen_run(sc, &res);
  const FabNicCfg *nic = &sc->fabric.nic;
  cr_assert_eq(res.n_flows, 128);
  double sum = 0;
  *min = 1;
  for (size_t i = 0; i < res.n_flows; i++) {
    const FabFlowRec *f = &res.flows[i];
    cr_assert_eq(f->bytes, 32u << 20);
    uint64_t pkts = (f->bytes + nic->mtu - 1) / nic->mtu;
    double share = (double)(f->bytes + pkts * nic->transport.data_overhead) * 8 / f->fct_s / (double)nic->bps;
    cr_assert_leq(share, 1.0, "flow %u above line rate", f->id);
    sum += share;
    *min = MIN(*min, share);
  }
  *mean = sum / (double)res.n_flows;
  testscen_done(sc, &res);
}

/* Issue 15's target on long flows: spraying that steers by ECN marks over
** CRC-hashing switches runs every flow at >= 95 % of line rate; adaptive
** routing on InfiniBand (its default there) runs them at >= 95 % on
** average. ECMP is far below (balls into bins). */
Test(multipath, long_flows_reach_95_percent_of_line_rate_sprayed_or_adaptive) {
  double mean, min;
  long_permutation((const char *const[]){"workload.size=32MiB", "cluster.nic.reliability=selective",
                                         "cluster.nic.spray=avoid", "fabric.switch.ecn.enabled=true",
                                         "fabric.switch.hash=crc32", NULL}, &mean, &min);
  cr_assert_geq(min, 0.95, "sprayed, avoid, CRC32: mean %.4f, slowest %.4f", mean, min);
  long_permutation((const char *const[]){"workload.size=32MiB", "fabric.transport=infiniband", NULL}, &mean, &min);
  cr_assert_geq(mean, 0.95, "adaptive on InfiniBand: mean %.4f, slowest %.4f", mean, min);
  long_permutation((const char *const[]){"workload.size=32MiB", NULL}, &mean, &min);
  cr_assert_lt(mean, 0.8, "ECMP: mean %.4f", mean);
}

/* The shipped permutation with spraying (each mode twice, the same JSON):
** go-back-N receivers collapse under it as under per-packet switch routing
** (a regression test for why spraying needs out-of-order placement);
** with selective receivers both modes (avoid with ECN marking on) take
** under 60 % of ECMP's time with the same receivers. */
Test(multipath, spraying_collapses_go_back_n_and_beats_ecmp_with_selective_receivers) {
  uint64_t retx_ecmp, retx_gbn;
  fab_time_t ecmp_gbn = testscen_permutation_twice(NULL, &retx_ecmp);
  fab_time_t gbn = testscen_permutation_twice((const char *const[]){"cluster.nic.spray=round-robin", NULL}, &retx_gbn);
  cr_assert_gt(retx_gbn, 100 * retx_ecmp, "go-back-N sprayed: %lu retransmissions, ecmp %lu", retx_gbn, retx_ecmp);
  cr_assert_gt(gbn, 3 * ecmp_gbn, "go-back-N sprayed: %lu ps, ecmp %lu ps", gbn, ecmp_gbn);
  fab_time_t ecmp = testscen_permutation_twice((const char *const[]){"cluster.nic.reliability=selective", NULL}, NULL);
  fab_time_t rr = testscen_permutation_twice((const char *const[]){"cluster.nic.reliability=selective",
                                                                   "cluster.nic.spray=round-robin", NULL}, NULL);
  fab_time_t avoid = testscen_permutation_twice((const char *const[]){"cluster.nic.reliability=selective",
                                                                      "cluster.nic.spray=avoid",
                                                                      "fabric.switch.ecn.enabled=true", NULL},
                                                NULL);
  cr_assert_lt(rr, ecmp * 6 / 10, "sprayed %lu ps, ecmp %lu ps (selective receivers)", rr, ecmp);
  cr_assert_lt(avoid, ecmp * 6 / 10, "avoid %lu ps, ecmp %lu ps (selective receivers)", avoid, ecmp);
}

/* InfiniBand by default: adaptive routing with receivers that place data
** out of order, and NCCL's verbs for it (NCCL_IB_ADAPTIVE_ROUTING, on by
** default on IB); RoCE: ECMP, go-back-N, one write. Given keys win. */
Test(multipath, infiniband_routes_adaptively_by_default) {
  static const char yaml[] = "cluster: {nodes: 8}\n"
                             "fabric: {transport: infiniband, topology: {kind: leaf-spine, hosts_per_leaf: 4, "
                             "spines: 2}, link: {bandwidth: 100Gbps}}\n"
                             "workload: {kind: permutation, size: 1MiB}\n";
  FabScenario *sc = testscen_load(yaml, NULL);
  cr_assert_eq(sc->fabric.sw.routing, FAB_ROUTE_ADAPTIVE);
  cr_assert(sc->fabric.nic.selective && sc->fabric.nic.ar_imm);
  fab_scenario_free(sc);
  sc = testscen_load(yaml, (const char *const[]){"fabric.transport=rocev2", NULL});
  cr_assert_eq(sc->fabric.sw.routing, FAB_ROUTE_ECMP);
  cr_assert(!sc->fabric.nic.selective && !sc->fabric.nic.ar_imm);
  fab_scenario_free(sc);
  sc = testscen_load(yaml, (const char *const[]){"fabric.switch.routing=ecmp", "cluster.nic.reliability=go-back-n",
                                                 NULL});
  cr_assert_eq(sc->fabric.sw.routing, FAB_ROUTE_ECMP);
  cr_assert(!sc->fabric.nic.selective && sc->fabric.nic.ar_imm);
  fab_scenario_free(sc);
}

/* The write-with-immediate on paper: one 1 MiB flow through one switch at
** 100 Gb/s. Its data (at least adaptive_threshold, 8 KiB) is a write whose
** completion is a header-only packet of 26 B right behind the last data
** packet: the flow completes 26 B x 80 ps later, 2.08 ns, than the same
** flow below the threshold (one write with its immediate, no extra
** packet). */
Test(multipath, infiniband_completes_a_bulk_write_with_a_zero_byte_immediate) {
  static const char yaml[] = "cluster: {nodes: 2}\n"
                             "fabric: {transport: infiniband, topology: {kind: single-switch}, "
                             "link: {bandwidth: 100Gbps, latency: 1us}}\n"
                             "workload: {kind: flows, flows: [{src: 0, dst: 1, size: 1MiB}]}\n";
  fab_time_t t[2];
  uint64_t hops[2];
  for (int big = 0; big < 2; big++) {
    FabScenario *sc = testscen_load(yaml, (const char *const[]){big ? NULL : "fabric.switch.adaptive_threshold=2MiB",
                                                                NULL});
    FabResults res;
    testscen_run(sc, &res);
    t[big] = res.sim_time;
    hops[big] = res.packet_hops;
    testscen_done(sc, &res);
  }
  cr_assert_eq(t[1], t[0] + 26 * 80, "%lu ps against %lu ps", t[1], t[0]);
  cr_assert_gt(hops[1], hops[0], "the immediate crossed the switch: %lu hops against %lu", hops[1], hops[0]);
}

/* ---- transport srd (models/srd.h) ------------------------------------------------ */

/* Its defaults: SRD's delivery, sprayed with avoidance over 64 values, 8 KiB
** packets, the delay-based rates, 82 B of headers (66 + 16); the AWS
** presets speak it unless the fabric says otherwise; a given key wins. */
Test(multipath, srd_defaults_and_the_aws_presets) {
  static const char yaml[] = "cluster: {nodes: 8}\n"
                             "fabric: {transport: srd, topology: {kind: leaf-spine, hosts_per_leaf: 4, "
                             "spines: 2}, link: {bandwidth: 100Gbps}}\n"
                             "workload: {kind: permutation, size: 1MiB}\n";
  FabScenario *sc = testscen_load(yaml, NULL);
  const FabNicCfg *n = &sc->fabric.nic;
  cr_assert(n->srd && n->selective);
  cr_assert_eq(n->spray, FAB_SPRAY_AVOID);
  cr_assert_eq(n->paths, 64);
  cr_assert_eq(n->mtu, 8192);
  cr_assert_eq(n->cc.kind, FAB_CC_DELAY);
  cr_assert_eq(n->transport.data_overhead, 82);
  cr_assert_eq(n->transport.ack_bytes, 82);
  cr_assert_eq(n->rto_min, 100 * FAB_US);
  fab_scenario_free(sc);
  sc = testscen_load(yaml, (const char *const[]){"cluster.nic.spray=round-robin", "cluster.nic.paths=16",
                                                 "fabric.link.mtu=4096", "fabric.congestion_control.algorithm=none",
                                                 "cluster.nic.srd_header=40", NULL});
  n = &sc->fabric.nic;
  cr_assert(n->srd && n->spray == FAB_SPRAY_ROUND_ROBIN && n->paths == 16 && n->mtu == 4096);
  cr_assert_eq(n->cc.kind, FAB_CC_NONE);
  cr_assert_eq(n->transport.data_overhead, 106);
  fab_scenario_free(sc);
  static const char p5[] = "cluster: {node: aws-p5, nodes: 2}\n"
                           "fabric: {topology: {kind: single-switch}}\n"
                           "workload: {kind: flows, flows: [{src: 0, dst: 8, size: 1MiB}]}\n";
  sc = testscen_load(p5, NULL);
  cr_assert_eq(sc->fabric.nic.transport.kind, FAB_TRANSPORT_SRD);
  cr_assert(sc->fabric.nic.srd);
  cr_assert_eq(sc->nccl.plugin_lat, 75 * FAB_US, "aws-ofi-nccl reports 75 us on p5");
  fab_scenario_free(sc);
  sc = testscen_load(p5, (const char *const[]){"fabric.transport=rocev2", NULL});
  cr_assert(!sc->fabric.nic.srd && !sc->fabric.nic.selective);
  cr_assert_eq(sc->nccl.plugin_lat, 0, "NCCL's own transports report none");
  fab_scenario_free(sc);
  sc = testscen_load(p5, (const char *const[]){"cluster.nccl.plugin_latency=20us", NULL});
  cr_assert_eq(sc->nccl.plugin_lat, 20 * FAB_US);
  fab_scenario_free(sc);
}

/* One 1 MiB flow through one switch, on paper: SRD's default 82 B of
** headers are RoCEv2's, so with the same 8 KiB packets and no CC it takes
** RoCEv2's time exactly; 20 B more header on each of its 128 packets costs
** 20 B x 80 ps on the last link per packet plus once on the first link
** (store and forward): 129 x 1600 ps. */
Test(multipath, srd_one_flow_on_paper) {
  static const char yaml[] = "cluster: {nodes: 2}\n"
                             "fabric: {topology: {kind: single-switch}, link: {bandwidth: 100Gbps, latency: 1us, "
                             "mtu: 8192}, congestion_control: {algorithm: none}}\n"
                             "workload: {kind: flows, flows: [{src: 0, dst: 1, size: 1MiB}]}\n";
  const char *const *runs[] = {(const char *const[]){NULL},
                               (const char *const[]){"fabric.transport=srd", NULL},
                               (const char *const[]){"fabric.transport=srd", "cluster.nic.srd_header=36", NULL}};
  fab_time_t t[3];
  for (int k = 0; k < 3; k++) {
    FabScenario *sc = testscen_load(yaml, runs[k]);
    FabResults res;
    testscen_run(sc, &res);
    t[k] = res.sim_time;
    cr_assert_eq(res.retransmits, 0);
    testscen_done(sc, &res);
  }
  cr_assert_eq(t[1], t[0], "srd %lu ps, rocev2 %lu ps", t[1], t[0]);
  cr_assert_eq(t[2], t[1] + 129 * 1600, "%lu ps against %lu ps", t[2], t[1]);
}

/* The shipped 16-to-1 incast (1 MiB buffer, no PFC: lossy) under SRD: every
** flow completes and each dropped packet is sent again exactly once
** (nothing is resent that arrived: no D-SACK); go-back-N on the same
** fabric resends more than it lost. The run's JSON is the same twice. */
Test(multipath, srd_on_a_lossy_incast_resends_exactly_what_was_dropped) {
  char *js[2];
  for (int k = 0; k < 2; k++) {
    FabScenario *sc = testscen_load_file("scenarios/incast.yaml", (const char *const[]){"fabric.transport=srd",
                                                                                        NULL});
    FabResults res;
    testscen_run(sc, &res);
    cr_assert_eq(res.flow_stats.completed, 16);
    cr_assert_gt(res.drops, 1000, "a lossy incast: %lu drops", res.drops);
    cr_assert_eq(res.retransmits, res.drops, "%lu retransmissions, %lu drops", res.retransmits, res.drops);
    js[k] = testscen_stable_json(&res);
    testscen_done(sc, &res);
  }
  cr_assert_str_eq(js[0], js[1]);
  g_free(js[0]);
  g_free(js[1]);
  FabScenario *sc = testscen_load_file("scenarios/incast.yaml", NULL);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_gt(res.retransmits, res.drops, "go-back-N: %lu retransmissions, %lu drops", res.retransmits, res.drops);
  testscen_done(sc, &res);
}

/* The shipped permutation under SRD (twice, the same JSON): under 60 % of
** ECMP's time with selective receivers, and never more resent than lost
** (a lost ACK may cost one resend, a lost packet costs one). */
Test(multipath, srd_sprays_the_permutation) {
  uint64_t retx;
  fab_time_t ecmp = testscen_permutation_twice((const char *const[]){"cluster.nic.reliability=selective", NULL}, NULL);
  fab_time_t srd = testscen_permutation_twice((const char *const[]){"fabric.transport=srd", NULL}, &retx);
  cr_assert_lt(srd, ecmp * 6 / 10, "srd %lu ps, ecmp %lu ps", srd, ecmp);
  FabScenario *sc = testscen_load_file("scenarios/leaf-spine-permutation-128.yaml",
                                       (const char *const[]){"fabric.transport=srd", "fabric.switch.buffer=256KiB",
                                                             NULL});
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_gt(res.drops, 0, "small buffers lose packets");
  cr_assert_leq(res.retransmits, res.drops, "%lu retransmissions, %lu drops", res.retransmits, res.drops);
  cr_assert_eq(res.flow_stats.completed, 128);
  testscen_done(sc, &res);
}

/* Striping on aws-p5 (4 EFA NICs per GPU): one 16 MiB flow between GPUs of
** two nodes under SRD goes out over all four NICs of its GPU, a quarter
** each within 5 % (each pass over the 64 values gives each NIC 16; the
** values avoidance skips unbalance it a little) on the links from its PCIe
** element to them, in under a third of the time RoCE takes through one NIC.
** Rail-matched (switch.h): what left by the sender's NIC k arrives by the
** receiver's NIC k, byte for byte, so the receiving side is as even and the
** flow ends within 4 % of its busiest NIC link's serialisation. */
Test(multipath, srd_stripes_a_message_over_a_gpus_nics) {
  static const char yaml[] = "cluster: {node: aws-p5, nodes: 2}\n"
                             "fabric: {topology: {kind: leaf-spine, hosts_per_leaf: 32, spines: 32}}\n"
                             "workload: {kind: flows, flows: [{src: 0, dst: 8, size: 16MiB}]}\n";
  fab_time_t t[2];
  for (int roce = 0; roce < 2; roce++) {
    FabScenario *sc = testscen_load(yaml, (const char *const[]){roce ? "fabric.transport=rocev2" : NULL, NULL});
    cr_assert_eq(sc->fabric.nic.stripe_rails, roce ? 0u : 4u);
    FabResults res;
    testscen_run(sc, &res);
    t[roce] = res.sim_time;
    uint64_t nic[4] = {0}, in[4] = {0}, pk[4] = {0}, pkin[4] = {0}, total = 0, bps = 0;
    for (size_t i = 0; i < res.n_links; i++)
      for (int k = 0; k < 4; k++) {
        char at[32];
        g_snprintf(at, sizeof at, "pcie0.0:p%d", k + 1);
        if (!strcmp(res.links[i].from, at)) nic[k] += res.links[i].bytes, pk[k] += res.links[i].packets;
        g_snprintf(at, sizeof at, "pcie1.0:p%d", k + 1);
        if (!strcmp(res.links[i].to, at)) in[k] += res.links[i].bytes, pkin[k] += res.links[i].packets;
        if (!strcmp(res.links[i].to, at)) bps = res.links[i].bps;
      }
    for (int k = 0; k < 4; k++) total += nic[k];
    cr_assert_gt(total, 16u << 20);
    for (int k = 0; k < 4 && !roce; k++) {
      cr_assert(nic[k] > total / 4 * 95 / 100 && nic[k] < total / 4 * 105 / 100, "NIC %d carried %lu of %lu", k,
                nic[k], total);
      cr_assert_eq(pkin[k], pk[k], "NIC %d: %lu packets out, %lu in at the receiver's NIC %d", k, pk[k], pkin[k], k);
      fab_time_t ser = (fab_time_t)((unsigned __int128)in[k] * 8 * FAB_S / bps);
      cr_assert_lt(res.sim_time, ser * 104 / 100, "%lu ps, NIC %d's link %lu ps", res.sim_time, k, ser);
    }
    testscen_done(sc, &res);
  }
  cr_assert_lt(t[0], t[1] / 3, "striped %lu ps, one NIC %lu ps", t[0], t[1]);
}

/* Message order under srd (models/nic.h): three messages from host 0 to
** host 4 posted together, 4 MiB then 8 KiB then 64 KiB, and one of 8 KiB
** from host 1. In order (the default for plain flows), the two short ones
** from host 0 arrive long before the 4 MiB one but complete with it, at the
** same instant; host 1's message is another peer's and completes at once.
** Without order they complete as they arrive. An NCCL collective is never
** ordered: the same JSON with message_order on or off. */
Test(multipath, srd_delivers_a_peers_messages_in_order) {
  static const char yaml[] = "name: srd-order\n"
                             "cluster: {nodes: 8}\n"
                             "fabric: {transport: srd, topology: {kind: leaf-spine, hosts_per_leaf: 4, spines: 4},\n"
                             "         link: {bandwidth: 100Gbps, latency: 1us}}\n"
                             "workload: {kind: flows, flows: [{src: 0, dst: 4, size: 4MiB}, {src: 0, dst: 4, size: "
                             "8KiB}, {src: 0, dst: 4, size: 64KiB}, {src: 1, dst: 4, size: 8KiB}]}\n";
  fab_time_t end[2][4];
  for (int ordered = 0; ordered < 2; ordered++) {
    FabScenario *sc = testscen_load(yaml, (const char *const[]){ordered ? NULL : "cluster.nic.message_order=false",
                                                                NULL});
    cr_assert_eq(sc->fabric.nic.srd_ordered, ordered == 1);
    FabResults res;
    testscen_run(sc, &res);
    cr_assert_eq(res.n_flows, 4);
    for (int k = 0; k < 4; k++) end[ordered][k] = res.flows[k].end;
    testscen_done(sc, &res);
  }
  cr_assert_lt(end[0][1], end[0][0] / 10, "unordered: 8 KiB at %lu ps, 4 MiB at %lu ps", end[0][1], end[0][0]);
  cr_assert_lt(end[0][2], end[0][0] / 4);
  cr_assert_eq(end[1][1], end[1][0], "ordered: held until the 4 MiB message completed");
  cr_assert_eq(end[1][2], end[1][0]);
  cr_assert_lt(end[1][3], end[1][0] / 10, "another peer's message is not held");
  char *js[2];
  for (int ordered = 0; ordered < 2; ordered++) {
    FabScenario *sc = testscen_load(yaml, (const char *const[]){"workload={kind: collective, op: allreduce, size: "
                                                                "1MiB}", ordered ? NULL :
                                                                "cluster.nic.message_order=false", NULL});
    FabResults res;
    testscen_run(sc, &res);
    js[ordered] = testscen_stable_json(&res);
    testscen_done(sc, &res);
  }
  cr_assert_str_eq(js[0], js[1], "NCCL's flows are never ordered");
  g_free(js[0]);
  g_free(js[1]);
}

/* aws-ofi-nccl's protocols (workloads/collective.h, FabOfiProtocol): p5
** runs RDMA, p4d SENDRECV, other EFA nodes the plugin's own default,
** SENDRECV. Under RDMA a network piece of more than 8184 B waits for its
** receiver's control message: on 50 us links a 2-node send-recv of 64 KiB
** (LL, set: SENDRECV would force Simple; one piece per channel; under
** SENDRECV one runt) pays the message's way, four 50 us links and
** the PCIe hops, less the launch and proxy time it overlaps, about 190 us;
** at 4 KiB (eager) nothing changes. */
Test(multipath, aws_ofi_nccl_rdma_waits_for_the_receivers_control_message) {
  static const char yaml[] = "name: p5-sendrecv\n"
                             "cluster: {node: aws-p5, nodes: 2}\n"
                             "fabric: {topology: {kind: leaf-spine, hosts_per_leaf: 32, spines: 32},\n"
                             "         link: {latency: 50us}}\n"
                             "workload: {kind: nccl-tests, op: send-recv, sizes: [4096, 65536], protocol: ll}\n";
  FabScenario *sc = testscen_load(yaml, NULL);
  cr_assert_eq(sc->nccl.ofi_protocol, FAB_OFI_RDMA);
  testscen_done(sc, NULL);
  sc = testscen_load(yaml, (const char *const[]){"cluster.node=aws-p4d", "fabric.topology.hosts_per_leaf=8",
                                                 "fabric.topology.spines=8", NULL});
  cr_assert_eq(sc->nccl.ofi_protocol, FAB_OFI_SENDRECV);
  testscen_done(sc, NULL);
  sc = testscen_load(yaml, (const char *const[]){"cluster.node=host", "cluster.nodes=16",
                                                 "fabric.topology.hosts_per_leaf=8", "fabric.topology.spines=8",
                                                 "fabric.link.bandwidth=100Gbps", "fabric.transport=srd", NULL});
  cr_assert_eq(sc->nccl.ofi_protocol, FAB_OFI_SENDRECV);
  testscen_done(sc, NULL);
  double t[2][2];
  for (int rdma = 0; rdma < 2; rdma++) {
    sc = testscen_load(yaml, (const char *const[]){rdma ? "cluster.nccl.ofi_protocol=rdma" :
                                                          "cluster.nccl.ofi_protocol=sendrecv", NULL});
    FabResults res;
    testscen_run(sc, &res);
    cr_assert_eq(res.n_colls, 2);
    for (int k = 0; k < 2; k++) t[rdma][k] = res.colls[k].time_s;
    testscen_done(sc, &res);
  }
  cr_assert_float_eq(t[1][0], t[0][0], 1e-15, "4 KiB goes eager: %g against %g s", t[1][0], t[0][0]);
  /* NCCL's p2p channel c leaves by the GPU's NIC c mod its NICs: 256 MiB over a p5 GPU's four EFA NICs each way */
  sc = testscen_load(yaml, (const char *const[]){"fabric.link.latency=500ns", "workload.sizes=[268435456]",
                                                 "workload.protocol=auto", NULL});
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(res.colls[0].nics, 8, "ranks 7 and 15 each by their 4 NICs");
  testscen_done(sc, &res);
  double extra = t[1][1] - t[0][1];
  cr_assert(extra > 150e-6 && extra < 210e-6, "64 KiB waits for the control message: %g s more", extra);
}

static void same_json_twice(const char *yaml, const char *const *sets);

/* aws-ofi-nccl's SENDRECV protocol on p4d over libfabric EFA's protocols
** (models/nic.h): on 50 us links (four between two nodes' NICs: a control
** message takes a little over 200 us each way) a 64 KiB send-recv is one
** runt per piece and goes at once, where 1 MiB has pieces longer than the
** runt, or a read under way, whose read part waits the request's round
** trip, over 400 us: 1 MiB takes more than 400 us longer than 64 KiB
** (eager, it took 79 us longer; now 467), and less than two round trips
** more (the reads of a connection's pieces overlap). The same JSON twice. */
Test(multipath, aws_ofi_nccl_sendrecv_reads_past_the_runt) {
  static const char yaml[] = "name: p4d-sendrecv\n"
                             "cluster: {node: aws-p4d, nodes: 2}\n"
                             "fabric: {topology: {kind: leaf-spine, hosts_per_leaf: 4, spines: 4},\n"
                             "         link: {latency: 50us}}\n"
                             "workload: {kind: nccl-tests, op: send-recv, sizes: [65536, 1048576]}\n";
  FabScenario *sc = testscen_load(yaml, NULL);
  cr_assert_eq(sc->nccl.ofi_protocol, FAB_OFI_SENDRECV);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(res.n_colls, 2);
  double t64k = res.colls[0].time_s, t1m = res.colls[1].time_s;
  cr_assert_gt(t64k, 200e-6, "one way over four 50 us links");
  cr_assert(t1m - t64k > 400e-6 && t1m - t64k < 800e-6, "1 MiB %g s, 64 KiB %g s", t1m, t64k);
  testscen_done(sc, &res);
  same_json_twice(yaml, NULL);
}

/* The algorithm and protocol of collective k of scenario `yaml` with `sets`, as loaded. */
static void chosen(const char *yaml, const char *const *sets, guint k, const char **algo, const char **proto) {
  FabScenario *sc = testscen_load(yaml, sets);
  cr_assert_gt(sc->dag->colls->len, k);
  const FabCollDef *d = &g_array_index(sc->dag->colls, FabCollDef, k);
  *algo = d->algorithm, *proto = d->protocol; /* static strings */
  testscen_done(sc, NULL);
}

/* aws-ofi-nccl's tuner plugin (workloads/ofi_regions.c) on p5: from 3
** nodes up its regions choose (256 MiB over 4 x 8 GPUs: ring/LL128, where
** NCCL's own model, charging the plugin's 75 us per step, takes the tree);
** at 2 nodes it leaves NCCL's choice; `ofi_tuner: internal` turns it off.
** Under SENDRECV (p4d) the plugin forces NCCL_PROTO=simple: a 4 KiB
** allreduce goes Simple (LL under RDMA), unless the workload sets LL. A
** send-recv across nodes is Simple under either: NCCL's p2p network
** connections have no LL buffers (NCCL_ALLOC_P2P_NET_LL_BUFFERS 0,
** src/transport/net.cc), so addP2pToPlan (src/enqueue.cc) takes Simple. */
Test(multipath, aws_ofi_nccl_tuner_plugin_chooses_where_it_would) {
  static const char p5[] = "cluster: {node: aws-p5, nodes: 4}\n"
                           "fabric: {topology: {kind: leaf-spine, hosts_per_leaf: 64, spines: 64}}\n"
                           "workload: {kind: nccl-tests, op: allreduce, sizes: [268435456]}\n";
  const char *a, *p;
  chosen(p5, NULL, 0, &a, &p);
  cr_assert(!strcmp(a, "ring") && !strcmp(p, "ll128"), "region: %s/%s", a, p);
  chosen(p5, (const char *const[]){"cluster.nccl.ofi_tuner=internal", NULL}, 0, &a, &p);
  cr_assert(!strcmp(a, "tree") && !strcmp(p, "ll128"), "NCCL's: %s/%s", a, p);
  const char *a2, *p2;
  chosen(p5, (const char *const[]){"cluster.nodes=2", NULL}, 0, &a, &p);
  chosen(p5, (const char *const[]){"cluster.nodes=2", "cluster.nccl.ofi_tuner=internal", NULL}, 0, &a2, &p2);
  cr_assert(!strcmp(a, a2) && !strcmp(p, p2), "2 nodes: %s/%s against NCCL's %s/%s", a, p, a2, p2);
  static const char p4d[] = "cluster: {node: aws-p4d, nodes: 2}\n"
                            "fabric: {topology: {kind: leaf-spine, hosts_per_leaf: 8, spines: 8}}\n"
                            "workload: {kind: nccl-tests, op: allreduce, sizes: [4096]}\n";
  chosen(p4d, NULL, 0, &a, &p);
  cr_assert_str_eq(p, "simple");
  chosen(p4d, (const char *const[]){"cluster.nccl.ofi_protocol=rdma", NULL}, 0, &a, &p);
  cr_assert_str_eq(p, "ll", "RDMA: NCCL's LL at 4 KiB");
  chosen(p4d, (const char *const[]){"cluster.nccl.ofi_protocol=rdma", "workload.op=send-recv", NULL}, 0, &a, &p);
  cr_assert_str_eq(p, "simple", "send-recv across nodes: no LL buffers");
  chosen(p4d, (const char *const[]){"workload.protocol=ll", NULL}, 0, &a, &p);
  cr_assert_str_eq(p, "ll", "set by the workload: kept");
  FabScenario *sc = testscen_load(p4d, (const char *const[]){"cluster.nccl.ofi_tuner=region", NULL});
  cr_assert_eq(sc->warnings->len, 1, "no regions for p4d: said so");
  cr_assert(strstr(g_ptr_array_index(sc->warnings, 0), "has no effect"));
  testscen_done(sc, NULL);
}

/* Runs `yaml` (NULL: the shipped permutation) with `sets` twice: the same
** JSON both times, every flow completed. */
static void same_json_twice(const char *yaml, const char *const *sets) {
  char *js[2];
  for (int k = 0; k < 2; k++) {
    FabScenario *sc = yaml ? testscen_load(yaml, sets)
                           : testscen_load_file("scenarios/leaf-spine-permutation-128.yaml", sets);
    FabResults res;
    testscen_run(sc, &res);
    cr_assert_eq(res.flow_stats.completed, res.flow_stats.count);
    js[k] = testscen_stable_json(&res);
    testscen_done(sc, &res);
  }
  cr_assert_str_eq(js[0], js[1], "%s", sets && sets[0] ? sets[0] : "as given");
  g_free(js[0]);
  g_free(js[1]);
}

/* Same scenario, same seed, same bytes, for this session's modes: spraying
** steered by loss and delay (avoid_delay given), SRD with message order over
** CRC hashing, and aws-ofi-nccl's RDMA protocol on p5 (each run twice). */
Test(multipath, new_modes_give_the_same_json_twice) {
  same_json_twice(NULL, (const char *const[]){"cluster.nic.reliability=selective", "cluster.nic.spray=avoid",
                                              "fabric.switch.ecn.enabled=true", "cluster.nic.avoid_delay=10us", NULL});
  same_json_twice(NULL, (const char *const[]){"fabric.transport=srd", "fabric.switch.hash=crc32",
                                              "workload={kind: flows, flows: [{src: 0, dst: 9, size: 1MiB}, "
                                              "{src: 0, dst: 9, size: 64KiB}, {src: 1, dst: 9, size: 64KiB}]}",
                                              NULL});
  same_json_twice("name: p5\n"
                  "cluster: {node: aws-p5, nodes: 2}\n"
                  "fabric: {topology: {kind: leaf-spine, hosts_per_leaf: 32, spines: 32}}\n"
                  "workload: {kind: nccl-tests, op: allreduce, sizes: [1048576, 16777216]}\n", NULL);
}

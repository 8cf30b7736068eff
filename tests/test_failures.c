/* Link failures (topologies/failures.c) and routes recomputed from the
** links that are up (topologies/reroute.c): small cases worked out on paper
** and whole runs. */
#include "testscen.h"
#include "topologies/failures.h"

/* The fabric of a scenario, built. */
static FabTopology *built(const char *yaml, FabScenario **sc) {
  *sc = testscen_load(yaml, NULL);
  return fab_topology_build(&(*sc)->fabric);
}

static const char *const healthy[] = {
  "cluster: {nodes: 4}\nfabric: {topology: {kind: single-switch}, link: {bandwidth: 100Gbps}}\n"
  "workload: {kind: permutation, size: 1MiB}\n",
  "cluster: {nodes: 32}\nfabric: {topology: {kind: leaf-spine, hosts_per_leaf: 8, spines: 4}, "
  "link: {bandwidth: 100Gbps}}\nworkload: {kind: permutation, size: 1MiB}\n",
  "cluster: {nodes: 32}\nfabric: {topology: {kind: leaf-spine, hosts_per_leaf: 8, oversubscription: 2:1}, "
  "link: {bandwidth: 100Gbps}}\nworkload: {kind: permutation, size: 1MiB}\n",
  "cluster: {nodes: 16}\nfabric: {topology: {kind: fat-tree, k: 4}, link: {bandwidth: 100Gbps}}\n"
  "workload: {kind: permutation, size: 1MiB}\n",
  "cluster: {nodes: 32}\nfabric: {topology: {kind: fat-tree, k: 4, oversubscription: 2:1}, "
  "link: {bandwidth: 100Gbps}}\nworkload: {kind: permutation, size: 1MiB}\n",
  "cluster: {node: dgx-h100, nodes: 4}\nfabric: {transport: infiniband, topology: {kind: rail-optimized, spines: 4}, "
  "link: {bandwidth: 400Gbps}, switch: {priorities: 1}}\nworkload: {kind: flows, flows: [{src: 0, dst: 8, "
  "size: 1MiB}]}\n",
  "cluster: {node: dgx-h100, nodes: 4, pxn: true}\nfabric: {transport: infiniband, topology: {kind: multi-rail, "
  "hosts_per_leaf: 2, spines: 2}, link: {bandwidth: 400Gbps}, switch: {priorities: 1}}\n"
  "workload: {kind: flows, flows: [{src: 1, dst: 26, size: 1MiB}]}\n",
  "cluster: {node: aws-p5, nodes: 2}\nfabric: {topology: {kind: leaf-spine, hosts_per_leaf: 2, spines: 2}}\n"
  "workload: {kind: flows, flows: [{src: 0, dst: 8, size: 1MiB}]}\n",
};

/* On a healthy fabric the routes recomputed from the links are the ones the
** builders made, for every kind that can fail (all but the ring). */
Test(failures, routes_from_the_links_are_the_builders_routes) {
  for (size_t i = 0; i < G_N_ELEMENTS(healthy); i++) {
    FabScenario *sc;
    FabTopology *t = built(healthy[i], &sc);
    cr_assert_eq(fab_topology_reroute(t, NULL, NULL), 0, "%s: routes changed", sc->topology);
    fab_topology_free(t);
    fab_scenario_free(sc);
  }
}

/* One leaf-spine link down: leaf0 leaves spine1 out of its group toward
** every other leaf (4 x 3 endpoints), the other leaves leave it out toward
** leaf0's 4 hosts (3 x 4), and spine1 reaches leaf0's hosts through another
** leaf, two hops more (4): 28 routes. Back up, the same 28 come back. */
Test(failures, a_link_down_moves_the_routes_through_it) {
  FabScenario *sc;
  FabTopology *t = built("cluster: {nodes: 16}\nfabric: {topology: {kind: leaf-spine, hosts_per_leaf: 4, spines: 4}, "
            "link: {bandwidth: 100Gbps}}\nworkload: {kind: permutation, size: 1MiB}\n", &sc);
  const char *why;
  FabPort *up = fab_topology_find_link(t, "leaf0", "spine1", &why);
  cr_assert_not_null(up);
  cr_assert_str_eq(up->peer->owner->name, "spine1");
  FabEngine *eng = fab_engine_new(1, sizeof(FabPkt));
  fab_port_set_down(eng, up, true);
  fab_port_set_down(eng, up->peer, true);
  cr_assert_eq(fab_topology_reroute(t, NULL, NULL), 28);
  FabSwitch *leaf0 = t->switches[0], *spine1 = t->switches[5];
  cr_assert_str_eq(fab_switch_name(spine1), "spine1");
  uint32_t n;
  const uint32_t *g = fab_switch_group_ports(leaf0, fab_switch_route_group(leaf0, 4), &n);
  cr_assert_eq(n, 3, "leaf0 to host4: three uplinks left");
  for (uint32_t i = 0; i < n; i++) cr_assert_neq(g[i], up->index);
  g = fab_switch_group_ports(spine1, fab_switch_route_group(spine1, 0), &n);
  cr_assert_eq(n, 3, "spine1 to host0: down to any other leaf");
  cr_assert_eq(fab_topology_reroute(t, NULL, NULL), 0, "converged");
  fab_port_set_down(eng, up, false);
  fab_port_set_down(eng, up->peer, false);
  cr_assert_eq(fab_topology_reroute(t, NULL, NULL), 28);
  g = fab_switch_group_ports(leaf0, fab_switch_route_group(leaf0, 4), &n);
  cr_assert_eq(n, 4);
  fab_engine_free(eng);
  fab_topology_free(t);
  fab_scenario_free(sc);
}

/* Rail-matched lanes (models/switch.h) on aws-p5 (4 NICs per GPU) over a
** leaf-spine of 2 NICs per leaf: rank 8's NICs 32, 33 hang off leaf16 and
** 34, 35 off leaf17. A spine reaches rank 8 through both leaves, its lane 1
** through leaf16 only, its lane 3 through leaf17; leaf16 reaches lane 1
** straight down. NIC 32's link down: lane 1 is unset at all 34 switches
** and leaf16's route to rank 8 keeps NIC 33 alone: 35 routes; the spines
** still reach rank 8 through both leaves, and its lane 1 takes them. */
Test(failures, a_gpus_lanes_follow_its_nics) {
  FabScenario *sc;
  FabTopology *t = built("cluster: {node: aws-p5, nodes: 2}\n"
                         "fabric: {topology: {kind: leaf-spine, hosts_per_leaf: 2, spines: 2}}\n"
                         "workload: {kind: flows, flows: [{src: 0, dst: 8, size: 1MiB}]}\n", &sc);
  FabSwitch *leaf16 = t->switches[16], *spine0 = t->switches[32];
  cr_assert_str_eq(fab_switch_name(leaf16), "leaf16");
  cr_assert_str_eq(fab_switch_name(spine0), "spine0");
  uint32_t n;
  const uint32_t *g = fab_switch_group_ports(spine0, fab_switch_route_group(spine0, 8), &n);
  cr_assert_eq(n, 2, "spine0 to rank 8: leaf16 and leaf17");
  g = fab_switch_group_ports(spine0, fab_switch_lane_group(spine0, 8, 1), &n);
  cr_assert_eq(n, 1);
  cr_assert_str_eq(fab_switch_port_at(spine0, g[0])->peer->owner->name, "leaf16");
  g = fab_switch_group_ports(spine0, fab_switch_lane_group(spine0, 8, 3), &n);
  cr_assert_str_eq(fab_switch_port_at(spine0, g[0])->peer->owner->name, "leaf17");
  for (uint32_t h = 0; h < 64; h++)
    cr_assert_str_eq(fab_switch_next_hop_lane(spine0, 8, h, 4)->peer->owner->name, "leaf17");
  g = fab_switch_group_ports(leaf16, fab_switch_route_group(leaf16, 8), &n);
  cr_assert_eq(n, 2, "leaf16 to rank 8: NICs 32 and 33");
  const uint32_t *l1 = fab_switch_group_ports(leaf16, fab_switch_lane_group(leaf16, 8, 1), &n);
  cr_assert_eq(n, 1);
  FabPort *nic0 = fab_switch_port_at(leaf16, l1[0]);
  cr_assert_str_eq(nic0->peer->owner->name, "pcie1.0");
  cr_assert_eq(nic0->peer->index, 1, "lane 1: the GPU's first NIC, its PCIe element's port 1");
  g = fab_switch_group_ports(leaf16, fab_switch_lane_group(leaf16, 8, 2), &n);
  cr_assert_eq(fab_switch_port_at(leaf16, g[0])->peer->index, 2);
  FabEngine *eng = fab_engine_new(1, sizeof(FabPkt));
  fab_port_set_down(eng, nic0, true);
  fab_port_set_down(eng, nic0->peer, true);
  cr_assert_eq(fab_topology_reroute(t, NULL, NULL), 35);
  cr_assert_eq(fab_switch_lane_group(spine0, 8, 1), UINT32_MAX);
  cr_assert_eq(fab_switch_lane_group(leaf16, 8, 1), UINT32_MAX);
  cr_assert_neq(fab_switch_lane_group(leaf16, 8, 2), UINT32_MAX);
  g = fab_switch_group_ports(leaf16, fab_switch_route_group(leaf16, 8), &n);
  cr_assert_eq(n, 1);
  cr_assert_eq(fab_switch_port_at(leaf16, g[0])->peer->index, 2, "NIC 33 alone");
  bool seen[2] = {false, false};
  for (uint32_t h = 0; h < 64; h++)
    seen[!strcmp(fab_switch_next_hop_lane(spine0, 8, h, 1)->peer->owner->name, "leaf17")] = true;
  cr_assert(seen[0] && seen[1], "lane 1 hashes over both leaves, as rank 8 does");
  cr_assert_eq(fab_topology_reroute(t, NULL, NULL), 0, "converged");
  fab_port_set_down(eng, nic0, false);
  fab_port_set_down(eng, nic0->peer, false);
  cr_assert_eq(fab_topology_reroute(t, NULL, NULL), 35);
  fab_engine_free(eng);
  fab_topology_free(t);
  fab_scenario_free(sc);
}

/* One 4 MiB flow, host0 -> host1, over a leaf-spine of two spines (one host
** per leaf): 1024 packets of 4178 B, 334.24 ns each at 100 Gb/s, 1 us per
** link, no switch latency. Healthy, its last byte arrives after 1024
** packet times and four links with three more packet times (each switch
** stores a packet before sending it on): 347.26448 us. Its data go up
** through spine0 (the hash), its ACKs come back through spine1. */
static const char one_flow[] =
  "name: one-flow-failure\n"
  "cluster: {nodes: 2, nic: {reliability: selective}}\n"
  "fabric:\n"
  "  topology: {kind: leaf-spine, hosts_per_leaf: 1, spines: 2}\n"
  "  link: {bandwidth: 100Gbps, latency: 1us, mtu: 4096}\n"
  "  switch: {buffer: 4MiB}\n"
  "  reroute_delay: 50us\n"
  "workload: {kind: flows, flows: [{src: 0, dst: 1, size: 4MiB}]}\n";

static void one_flow_run(const char *routing, bool fail, fab_time_t *t, uint64_t *lost, uint64_t *retx) {
  const char *sets[] = {routing, fail ? "fabric.failures=[{link: leaf0-spine0, at: 100us, down: true}]" : NULL, NULL};
  FabScenario *sc = testscen_load(one_flow, sets);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(res.flow_stats.completed, 1);
  *t = res.sim_time;
  *retx = res.retransmits;
  *lost = 0;
  if (fail) {
    cr_assert_eq(res.n_failures, 1);
    cr_assert_str_eq(res.failures[0].link, "leaf0-spine0");
    cr_assert_str_eq(res.failures[0].change, "down");
    *lost = res.failures[0].lost;
    cr_assert_eq(res.drops, *lost, "every packet lost was lost on the failed link");
  } else {
    cr_assert_eq(res.n_failures, 0);
  }
  testscen_done(sc, &res);
}

/* leaf0-spine0 goes down at T = 100 us. Hashing (ECMP), leaf0 takes new
** routes 50 us later; until then it sends the flow into the dead link.
** Packet k reaches leaf0 at (k + 1) x 334.24 ns + 1 us and leaves it at
** once; it is lost if it was still on leaf0's serialiser or wire at T, or
** reached leaf0 before T + 50 us: (k + 1) in (292.2, 445.8], 153 packets,
** which the sender resends once each (none spuriously). The host's link is
** the bottleneck and the resends follow the rest at line rate: the flow
** ends 153 packet times late, 398.4032 us. Routing adaptively, leaf0 leaves
** the link out at T: only what was on it then is lost (at most the 4
** packets on its serialiser and its 1 us wire; fewer, as adaptive routing
** had spread them over both spines), and the flow ends that many packet
** times late. */
Test(failures, one_flow_loses_the_link_until_its_switch_reroutes) {
  const fab_time_t pkt = 334240;
  fab_time_t t0, t;
  uint64_t lost, retx;
  one_flow_run("fabric.switch.routing=ecmp", false, &t0, &lost, &retx);
  cr_assert_eq(t0, 347264480, "healthy: %lu ps", t0);
  cr_assert_eq(retx, 0);
  one_flow_run("fabric.switch.routing=ecmp", true, &t, &lost, &retx);
  cr_assert_eq(lost, 153);
  cr_assert_eq(retx, 153, "each lost packet resent once");
  cr_assert_eq(t, t0 + 153 * pkt, "ecmp: %lu ps", t);
  one_flow_run("fabric.switch.routing=adaptive", true, &t, &lost, &retx);
  cr_assert(lost >= 1 && lost <= 4, "adaptive lost %lu", lost);
  cr_assert_eq(retx, lost);
  cr_assert_eq(t, t0 + lost * pkt, "adaptive: %lu ps", t);
}

/* What the failure cost, from the run itself (fabric.failure_baseline: the
** scenario runs again without fabric.failures). The flow of the test above:
** healthy 347.26448 us, so the ECMP case's 153 packet times late is a
** slowdown of 153 x 334.24 / 347264.48; the failed uplink had started 296
** packets by 100 us (packet k starts at (k + 1) x 334.24 ns + 1 us) against
** 1024 healthy, so 728 packets of 4178 B moved off it. Slowed to 50 Gb/s
** from the start the uplink carries the same bytes (hashing keeps the flow
** on it): 689.52624 us, nothing moved. Off, or with no failures: none. */
Test(failures, the_run_reports_what_the_failure_cost) {
  static const char down[] = "fabric.failures=[{link: leaf0-spine0, at: 100us, down: true}]";
  static const char slow[] = "fabric.failures=[{link: leaf0-spine0, bandwidth: 50Gbps}]";
  FabScenario *sc = testscen_load(one_flow, (const char *const[]){down, NULL});
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_not_null(res.impact);
  cr_assert_eq(res.impact->baseline_time, 347264480);
  cr_assert_float_eq(res.impact->slowdown, 153.0 * 334240 / 347264480, 1e-12, "%.12f", res.impact->slowdown);
  cr_assert_eq(res.impact->moved_bytes, 728u * 4178, "%lu", res.impact->moved_bytes);
  cr_assert_eq(res.impact->baseline_retransmits, 0);
  cr_assert_float_eq(res.impact->baseline_fct_max_s, 347.26448e-6, 1e-15);
  char *js = testscen_stable_json(&res);
  cr_assert(strstr(js, "\"failure_impact\": {\"baseline_time_s\": 0.00034726448, \"slowdown\": 0.147261"), "%s", js);
  g_free(js);
  testscen_done(sc, &res);
  sc = testscen_load(one_flow, (const char *const[]){slow, NULL});
  testscen_run(sc, &res);
  cr_assert_float_eq(res.impact->slowdown, 689526240.0 / 347264480 - 1, 1e-12);
  cr_assert_eq(res.impact->moved_bytes, 0);
  testscen_done(sc, &res);
  const char *const none[][3] = {{down, "fabric.failure_baseline=false", NULL}, {NULL}};
  for (int k = 0; k < 2; k++) {
    sc = testscen_load(one_flow, none[k]);
    testscen_run(sc, &res);
    cr_assert_null(res.impact);
    char *j = testscen_stable_json(&res);
    cr_assert(strstr(j, "\"failure_impact\": null"), "%s", j);
    g_free(j);
    testscen_done(sc, &res);
  }
}

static fab_time_t one_flow_with(const char *failures) {
  const char *sets[] = {failures, NULL};
  FabScenario *sc = testscen_load(one_flow, sets);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(res.flow_stats.completed, 1);
  cr_assert_eq(res.drops, 0);
  fab_time_t t = res.sim_time;
  testscen_done(sc, &res);
  return t;
}

/* A degraded link, on paper. From the start at 50 Gb/s, leaf0's uplink is
** the bottleneck: the first packet is on it from 1.33424 us, then 1024
** packets of 668.48 ns back to back, then 1 us up, a packet time and 1 us
** to leaf1, a packet time and 1 us to host1: 689.52624 us. Slowed at
** 100 us instead: 296 packets have started on the uplink by then (packet k
** starts at (k + 1) x 334.24 ns + 1 us), the 296th ends at 100.26928 us
** at the old rate, the other 728 follow at the new one: 590.5912 us. A
** 3 us host link instead of 1: 2 us more than healthy, 349.26448 us. */
Test(failures, a_slower_or_longer_link_on_paper) {
  cr_assert_eq(one_flow_with("fabric.failures=[{link: leaf0-spine0, bandwidth: 50Gbps}]"), 689526240);
  cr_assert_eq(one_flow_with("fabric.failures=[{link: leaf0-spine0, at: 100us, bandwidth: 50Gbps}]"), 590591200);
  cr_assert_eq(one_flow_with("fabric.failures=[{link: host0-leaf0, latency: 3us}]"), 349264480);
}

/* The shipped permutation with selective receivers, leaf0-spine0 down at
** 100 us (each case twice, the same JSON): hashing switches keep sending an
** eighth of leaf0's traffic to other leaves into it until they reroute 1 ms later and
** lose far more than adaptive switches, which leave it out at once; both
** end later than without the failure, adaptive routing by less. */
Test(failures, a_failure_mid_permutation_costs_ecmp_more_than_adaptive_routing) {
  static const char down[] = "fabric.failures=[{link: leaf0-spine0, at: 100us, down: true}]";
  fab_time_t t[2][2];
  for (int a = 0; a < 2; a++)
    for (int f = 0; f < 2; f++)
      t[a][f] = testscen_permutation_twice((const char *const[]){"cluster.nic.reliability=selective",
                                                                 "cluster.nic.dup_threshold=64",
                                                                 a ? "fabric.switch.routing=adaptive" :
                                                                     "fabric.switch.routing=ecmp",
                                                                 f ? down : NULL, NULL}, NULL);
  uint64_t lost[2];
  for (int a = 0; a < 2; a++) {
    FabScenario *sc = testscen_load_file("scenarios/leaf-spine-permutation-128.yaml",
                                         (const char *const[]){"cluster.nic.reliability=selective",
                                                               a ? "fabric.switch.routing=adaptive" :
                                                                   "fabric.switch.routing=ecmp", down, NULL});
    FabResults res;
    testscen_run(sc, &res);
    cr_assert_eq(res.n_failures, 1);
    lost[a] = res.failures[0].lost;
    cr_assert_gt(res.failures[0].rerouted, 0);
    cr_assert_eq(res.failures[0].rerouted_at, a ? 100 * FAB_US : 1100 * FAB_US);
    testscen_done(sc, &res);
  }
  cr_assert_gt(lost[0], 4 * lost[1], "lost: ecmp %lu, adaptive %lu", lost[0], lost[1]);
  for (int a = 0; a < 2; a++) cr_assert_gt(t[a][1], t[a][0], "%s: the failure costs time", a ? "adaptive" : "ecmp");
  cr_assert_lt((double)t[1][1] / (double)t[1][0], (double)t[0][1] / (double)t[0][0],
               "slowdown: adaptive %.3f, ecmp %.3f", (double)t[1][1] / (double)t[1][0],
               (double)t[0][1] / (double)t[0][0]);
}

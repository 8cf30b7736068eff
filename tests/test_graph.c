/*
** fabric.topology kind: graph (topologies/graph.c, built by build.c): the
** switches, hosts and links a scenario lists, their ports in list order,
** per-link rates and latencies, shortest-path ECMP routes; a leaf-spine and
** a rail-optimized fabric written as graphs run exactly as the built-in
** kinds do; and every mistake in a graph is an error at file:line:col.
*/
#include <criterion/criterion.h>
#include <string.h>

#include "topologies/topology.h"

static FabCfg *load(const char *yaml) {
  GError *err = NULL;
  FabCfg *cfg = fab_cfg_load_string(yaml, "t.yaml", &err);
  cr_assert_not_null(cfg, "YAML did not load: %s", err ? err->message : "?");
  return cfg;
}

/* The fabric of `yaml`, built (the caller frees both). */
static FabTopology *build(const char *yaml, FabCfg **cfg, FabFabricCfg *f) {
  *cfg = load(yaml);
  GError *err = NULL;
  cr_assert(fab_fabric_cfg_read(fab_cfg_root(*cfg), f, NULL, &err), "unexpected error: %s", err ? err->message : "?");
  return fab_topology_build(f);
}

static void read_fails(const char *yaml, const char *where, const char *what) {
  FabCfg *cfg = load(yaml);
  GError *err = NULL;
  FabFabricCfg out;
  cr_assert_not(fab_fabric_cfg_read(fab_cfg_root(cfg), &out, NULL, &err), "expected an error at %s", where);
  cr_assert(g_str_has_prefix(err->message, where), "'%s' does not start with '%s'", err->message, where);
  cr_assert(strstr(err->message, what), "'%s' does not say '%s'", err->message, what);
  g_error_free(err);
  fab_cfg_free(cfg);
}

static FabSwitch *by_name(FabTopology *t, const char *name) {
  for (uint32_t s = 0; s < t->nswitches; s++)
    if (!strcmp(fab_switch_name(t->switches[s]), name)) return t->switches[s];
  cr_assert_fail("no switch %s", name);
  return NULL;
}

/* The ports of sw's route to dst, as "1,2," (sorted as groups keep them). */
static char *route(FabSwitch *sw, uint32_t dst) {
  uint32_t n, g = fab_switch_route_group(sw, dst);
  GString *s = g_string_new(NULL);
  if (g == UINT32_MAX) return g_string_free(s, FALSE);
  const uint32_t *p = fab_switch_group_ports(sw, g, &n);
  for (uint32_t i = 0; i < n; i++) g_string_append_printf(s, "%u,", p[i]);
  return g_string_free(s, FALSE);
}

static void route_is(FabSwitch *sw, uint32_t dst, const char *want) {
  char *got = route(sw, dst);
  cr_assert_str_eq(got, want, "%s: route to %u: %s, want %s", fab_switch_name(sw), dst, got, want);
  g_free(got);
}

#define HOSTS(n) "cluster: {node: host, nodes: " #n "}\n"
#define LINK "  link: {bandwidth: 100Gbps, latency: 1us}\n"

/* A diamond with a shortcut: a - b1 - c, a - b2 - c (two parallel links to b2), and c - d. Hosts 0, 1 on a; 2
** on c; 3 on d. Ports: a: hosts 0, 1, then b1 (2), b2 (3, 4); c: host 2 (0), b1 (1), b2 (2, 3), d (4). */
#define DIAMOND                                                                                                  \
  HOSTS(4) "fabric:\n" LINK "  topology:\n    kind: graph\n"                                                 \
  "    switches: [a, b1, b2, c, {name: d, tier: spine}]\n"                                                     \
  "    hosts: [{switch: a, count: 2}, {switch: c, count: 1}, {switch: d, count: 1}]\n"                        \
  "    links:\n"                                                                                              \
  "      - {a: a, b: b1}\n"                                                                                   \
  "      - {a: a, b: b2, count: 2, bandwidth: 50Gbps, latency: 3us}\n"                                         \
  "      - {a: b1, b: c}\n"                                                                                   \
  "      - {a: b2, b: c, count: 2}\n"                                                                         \
  "      - {a: c, b: d}\n"

Test(graph, ports_rates_and_shortest_paths) {
  FabCfg *cfg;
  FabFabricCfg f;
  FabTopology *t = build(DIAMOND, &cfg, &f);
  cr_assert_eq(t->nnet, 5);
  FabSwitch *a = by_name(t, "a"), *c = by_name(t, "c"), *d = by_name(t, "d"), *b2 = by_name(t, "b2");
  cr_assert_eq(fab_switch_nports(a), 5);
  cr_assert_eq(fab_switch_nports(c), 5);
  cr_assert_eq(fab_switch_port_at(a, 1)->peer, &t->nics[1].port);
  /* per-link rate and latency; the others fabric.link's */
  cr_assert_eq(fab_switch_port_at(a, 3)->bps, 50000000000ull);
  cr_assert_eq(fab_switch_port_at(a, 3)->latency, 3 * FAB_US);
  cr_assert_eq(fab_switch_port_at(a, 2)->bps, 100000000000ull);
  cr_assert_eq(fab_switch_port_at(a, 2)->latency, FAB_US);
  cr_assert_eq(fab_switch_port_at(b2, 0)->peer, fab_switch_port_at(a, 3));
  /* a to host 2 (on c, 2 hops): every port toward b1 and b2; to host 3 (on d, 3 hops) the same */
  route_is(a, 2, "2,3,4,");
  route_is(a, 3, "2,3,4,");
  route_is(a, 0, "0,");
  route_is(c, 0, "1,2,3,");  /* back toward a over b1 and b2's two links */
  route_is(c, 3, "4,");
  route_is(d, 0, "1,");      /* d's only link (port 0 is its host) */
  route_is(d, 3, "0,");
  route_is(b2, 2, "2,3,");   /* b2 to c: its two parallel links */
  /* the description and the round trip's path: hosts' switches at most 3 hops apart (a to d) */
  char *desc = fab_topology_describe(&f.topo);
  cr_assert_str_eq(desc, "graph: 5 switches, 7 links between them, 4 hosts (their switches at most 3 hops apart), "
                         "shortest-path routing");
  g_free(desc);
  cr_assert_eq(f.topo.glat, 3 * FAB_US);
  cr_assert_eq(f.topo.gbps, 50000000000ull);
  cr_assert_eq(fab_topology_elements(&f) - 4 * 3, 5 + 4 + 2 * 7, "switches, host ports and link ends");
  cr_assert_eq(fab_topology_elements(&f), fab_topology_number(t, 0));
  fab_topology_free(t);
  fab_cfg_free(cfg);
}

/* The same leaf-spine two ways: 4 leaves of 4 hosts, 2 spines. */
#define LS_KIND HOSTS(16) "fabric:\n" LINK "  topology: {kind: leaf-spine, hosts_per_leaf: 4, spines: 2}\n"
#define LS_GRAPH                                                                                                 \
  HOSTS(16) "fabric:\n" LINK "  topology:\n    kind: graph\n"                                                \
  "    switches: [{name: leaf, count: 4}, {name: spine, count: 2, tier: spine}]\n"                             \
  "    hosts: [{switch: leaf, count: 4}]\n    links: [{a: leaf, b: spine}]\n"

/* Every network switch of x and y: the same name, ports to the same peers, the same route to every endpoint. */
static void same_network(FabTopology *x, FabTopology *y) {
  cr_assert_eq(x->nnet, y->nnet);
  for (uint32_t s = 0; s < x->nnet; s++) {
    FabSwitch *a = x->switches[s], *b = y->switches[s];
    cr_assert_str_eq(fab_switch_name(a), fab_switch_name(b));
    cr_assert_eq(fab_switch_nports(a), fab_switch_nports(b));
    for (uint32_t p = 0; p < fab_switch_nports(a); p++)
      cr_assert_str_eq(fab_switch_port_at(a, p)->peer->owner->name, fab_switch_port_at(b, p)->peer->owner->name,
                       "%s port %u", fab_switch_name(a), p);
    for (uint32_t r = 0; r < x->nhosts; r++) {
      char *ra = route(a, r), *rb = route(b, r);
      cr_assert_str_eq(ra, rb, "%s to %u", fab_switch_name(a), r);
      g_free(ra), g_free(rb);
    }
  }
}

Test(graph, a_leaf_spine_as_a_graph) {
  FabCfg *c1, *c2;
  FabFabricCfg f1, f2;
  FabTopology *x = build(LS_KIND, &c1, &f1), *y = build(LS_GRAPH, &c2, &f2);
  same_network(x, y);
  cr_assert_eq(fab_topology_elements(&f1), fab_topology_elements(&f2));
  cr_assert_eq(fab_topology_footprint(&f1).bytes, fab_topology_footprint(&f2).bytes);
  fab_topology_free(x), fab_topology_free(y);
  fab_cfg_free(c1), fab_cfg_free(c2);
}

Test(graph, a_rail_optimized_fabric_of_gpu_nodes_as_a_graph) {
  /* rail r joins NIC r of every node: attachment n x 8 + r, so round-robin over the 8 rails */
  FabCfg *c1, *c2;
  FabFabricCfg f1, f2;
  FabTopology *x = build("cluster: {node: dgx-h100, nodes: 4}\nfabric:\n  topology: {kind: rail-optimized, spines: 4}\n",
                         &c1, &f1);
  FabTopology *y = build("cluster: {node: dgx-h100, nodes: 4}\nfabric:\n  topology:\n    kind: graph\n"
                         "    switches: [{name: rail, count: 8}, {name: spine, count: 4, tier: spine}]\n"
                         "    hosts: [{switch: rail, count: 4, order: round-robin}]\n"
                         "    links: [{a: rail, b: spine}]\n", &c2, &f2);
  same_network(x, y);
  fab_topology_free(x), fab_topology_free(y);
  fab_cfg_free(c1), fab_cfg_free(c2);
}

Test(graph, the_run_is_the_same_run) {
  /* the leaf-spine golden scenario, its topology given as a graph: the same JSON but the topology line */
  const char *bin = g_getenv("FABSIM"), *src = g_getenv("FABSIM_SRC");
  cr_assert(bin && src, "FABSIM and FABSIM_SRC");
  char *yaml = g_build_filename(src, "tests", "scenarios", "leaf-spine-small.yaml", NULL), *out[2];
  const char *graph = "fabric.topology={kind: graph, switches: [{name: leaf, count: 4}, {name: spine, count: 2, "
                      "tier: spine}], hosts: [{switch: leaf, count: 4}], links: [{a: leaf, b: spine}]}";
  for (int i = 0; i < 2; i++) {
    const char *argv[] = {bin, "run", yaml, "--json", "--set", graph, NULL};
    if (!i) argv[4] = NULL;
    int status;
    cr_assert(g_spawn_sync(NULL, (char **)argv, NULL, 0, NULL, NULL, &out[i], NULL, &status, NULL));
    cr_assert_eq(status, 0);
    char *p = strstr(out[i], "\"wall_s\"");
    cr_assert_not_null(p);
    char *e = strstr(p, "\"endpoints\""); /* wall_s, events, events_per_s, packet_hops(_per_s): drop the wall clock */
    char *ev = strstr(p, "\"events\": "), *evs = strstr(p, "\"events_per_s\"");
    cr_assert(e && ev && evs);
    memmove(evs, strstr(evs, "\"packet_hops\""), strlen(strstr(evs, "\"packet_hops\"")) + 1);
    char *ph = strstr(out[i], "\"packet_hops_per_s\"");
    memmove(ph, strstr(ph, "\"endpoints\""), strlen(strstr(ph, "\"endpoints\"")) + 1);
    memmove(p, ev, strlen(ev) + 1);
    char *tp = strstr(out[i], "\"topology\": \"");
    cr_assert_not_null(tp);
    memmove(tp, strstr(tp, "\"sim_time_s\""), strlen(strstr(tp, "\"sim_time_s\"")) + 1);
  }
  cr_assert_str_eq(out[0], out[1]);
  g_free(out[0]), g_free(out[1]), g_free(yaml);
}

#define G(body) HOSTS(2) "fabric:\n" LINK "  topology:\n    kind: graph\n" body
Test(graph, errors) {
  read_fails(G("    switches: [a, b]\n    hosts: [{switch: a, count: 1}, {switch: b, count: 1}]\n"), "t.yaml:4:3:",
             "no path from switch a to switch b");
  read_fails(G("    switches: [a]\n    hosts: [{switch: x, count: 2}]\n"), "t.yaml:7:22:",
             "no switch or group 'x'");
  read_fails(G("    switches: [a, b]\n    hosts: [{switch: a, count: 2}]\n    links: [{a: a, b: c}]\n"),
             "t.yaml:8:23:", "no switch or group 'c'");
  read_fails(G("    switches: [{name: s, count: 2}]\n    hosts: [{switch: s, count: 1}]\n    links: [{a: s, b: s0}]\n"),
             "t.yaml:8:23:", "share a switch");
  read_fails(G("    switches: [a, a]\n    hosts: [{switch: a, count: 2}]\n"), "t.yaml:6:19:", "named twice");
  read_fails(G("    switches: [{name: a, count: 2}, a1]\n    hosts: [{switch: a, count: 1}]\n"), "t.yaml:6:37:",
             "named twice");
  read_fails(G("    switches: [a-b]\n    hosts: [{switch: a-b, count: 2}]\n"), "t.yaml:6:16:", "without '-'");
  read_fails(G("    switches: [a]\n    hosts: [{switch: a, count: 3}]\n"), "t.yaml:7:12:",
             "the graph's hosts list 3 attachments, but the cluster has 2 nodes");
  read_fails(G("    switches: [a]\n    hosts: [{switch: a, count: 2}]\n    links: [{a: a, b: a, colour: red}]\n"),
             "t.yaml:8:26:", "colour");
  read_fails(G("    hosts: [{switch: a, count: 2}]\n"), "t.yaml:4:3:", "kind: graph needs switches");
  read_fails(G("    switches: [a]\n    hosts: [{switch: a, count: 2}]\n    spines: 2\n"), "t.yaml:8:13:",
             "a graph lists its switches");
  read_fails(HOSTS(2) "fabric:\n" LINK "  topology: {kind: leaf-spine, hosts_per_leaf: 2, links: []}\n",
             "t.yaml:4:58:", "only by graph");
  read_fails(HOSTS(4) "fabric:\n" LINK "  topology: {kind: ring, switches: [a], hosts_per_switch: 1}\n",
             "t.yaml:4:36:", "expected a number of switches from 3 to 1024");
}

Test(graph, tiers_take_their_routing) {
  FabCfg *cfg;
  FabFabricCfg f;
  FabTopology *t = build(HOSTS(16) "fabric:\n" LINK "  switch: {routing_per_tier: {spine: adaptive}}\n"
                         "  topology:\n    kind: graph\n"
                         "    switches: [{name: leaf, count: 4}, {name: spine, count: 2, tier: spine}]\n"
                         "    hosts: [{switch: leaf, count: 4}]\n    links: [{a: leaf, b: spine}]\n", &cfg, &f);
  cr_assert_eq(fab_switch_cfg(by_name(t, "spine1"))->routing, FAB_ROUTE_ADAPTIVE);
  cr_assert_eq(fab_switch_cfg(by_name(t, "leaf0"))->routing, FAB_ROUTE_ECMP);
  fab_topology_free(t);
  fab_cfg_free(cfg);
}

/* ---- rail-optimized in three tiers (made as a graph: fab_graph_rail3) ---- */

/* 4 DGX H100 (8 NICs each) in 2 pods of 2; 2:1 at the rail leaf: 2 nodes down, 1 spine up; 8 cores (one per
** rail, the default): 2 x (8 + 1) + 8 = 26 switches. Attachment n x 8 + i is node n's NIC i; rank 8n + i its GPU. */
#define RAIL3(extra)                                                                                            \
  "cluster: {node: dgx-h100, nodes: 4}\nfabric:\n  topology: {kind: rail-optimized, pod_nodes: 2" extra "}\n"

Test(graph, rail_optimized_in_three_tiers) {
  FabCfg *cfg;
  FabFabricCfg f;
  FabTopology *t = build(RAIL3(", rail_oversubscription: 2:1"), &cfg, &f);
  cr_assert_eq(t->nnet, 26);
  FabSwitch *leaf = by_name(t, "p0.rail3"), *spine = by_name(t, "p1.spine0"), *core = by_name(t, "core5");
  cr_assert_eq(fab_switch_nports(leaf), 3);   /* nodes 0 and 1's NIC 3, the pod's spine */
  cr_assert_eq(fab_switch_nports(spine), 16); /* its pod's 8 rail leaves, 8 cores */
  cr_assert_eq(fab_switch_nports(core), 2);   /* a spine of each pod */
  cr_assert_eq(fab_switch_port_at(leaf, 1)->peer, t->attach[1 * 8 + 3], "node 1's NIC 3");
  cr_assert_str_eq(fab_switch_port_at(leaf, 2)->peer->owner->name, "p0.spine0");
  cr_assert_str_eq(fab_switch_port_at(core, 1)->peer->owner->name, "p1.spine0");
  route_is(leaf, 1 * 8 + 3, "1,");   /* node 1's GPU 3: down */
  route_is(leaf, 2 * 8 + 3, "2,");   /* node 2 (pod 1) GPU 3: up */
  route_is(spine, 0 * 8 + 3, "8,9,10,11,12,13,14,15,"); /* to pod 0: every core */
  route_is(spine, 3 * 8 + 5, "5,");  /* its own pod, rail 5: the rail leaf */
  route_is(core, 8 * 0 + 7, "0,");
  char *d = fab_topology_describe(&f.topo);
  cr_assert_str_eq(d, "rail-optimized, 3 tiers: 2 pods of 2 nodes, each with 8 rail leaves (2 down, 1 up) and 1 "
                      "spines; 8 cores joining the pods");
  g_free(d);
  /* the load-time estimates count what was built */
  cr_assert_eq(fab_topology_footprint(&f).switches, t->nswitches);
  cr_assert_eq(fab_topology_elements(&f), fab_topology_number(t, 0));
  fab_topology_free(t);
  fab_cfg_free(cfg);
  /* a 2-tier rail fabric's own key: 4 nodes down at 2:1, 2 spines */
  t = build("cluster: {node: dgx-h100, nodes: 4}\nfabric:\n  topology: {kind: rail-optimized, "
            "rail_oversubscription: 2:1}\n", &cfg, &f);
  cr_assert_eq(f.topo.spines, 2);
  cr_assert_eq(fab_switch_nports(by_name(t, "rail0")), 6);
  fab_topology_free(t);
  fab_cfg_free(cfg);
}

Test(graph, rail_three_tier_errors) {
  read_fails(RAIL3(", rail_oversubscription: 3:1"), "t.yaml:3:", "2 downlinks x 0.333333 is not a whole number");
  read_fails("cluster: {node: dgx-h100, nodes: 4}\nfabric:\n  topology: {kind: rail-optimized, pod_nodes: 3}\n",
             "t.yaml:3:", "4 nodes is not a multiple of pod_nodes 3");
  read_fails(RAIL3(", spines: 2, rail_oversubscription: 2:1"), "t.yaml:3:", "give spines or rail_oversubscription");
  read_fails("cluster: {node: dgx-h100, nodes: 4}\nfabric:\n  topology: {kind: rail-optimized, cores: 2}\n",
             "t.yaml:3:", "cores join pods");
  read_fails(HOSTS(4) "fabric:\n" LINK "  topology: {kind: leaf-spine, hosts_per_leaf: 2, pod_nodes: 2}\n", "t.yaml:4:62:",
             "only by rail-optimized");
}

/* ---- dual-ToR leaf-spine (made as a graph: fab_graph_dual_tor) ---- */

/* 2 DGX H100 given 16 NIC ports at 200 Gb/s (a dual-port NIC per GPU: attachments 2g and 2g + 1 of each node),
** 8 per leaf: 4 leaves in 2 pairs. GPU g of node n: port 0 on leaf 2n, port 1 on leaf 2n + 1, both at port g. */
#define DUAL(nics, extra)                                                                                       \
  "cluster: {node: dgx-h100, nodes: 2, nics_per_node: " #nics ", nic: {bandwidth: 200Gbps}}\nfabric:\n"       \
  "  topology: {kind: leaf-spine, hosts_per_leaf: 8, dual_tor: true" extra "}\n"

Test(graph, dual_tor_pairs_a_gpus_ports_over_two_leaves) {
  FabCfg *cfg;
  FabFabricCfg f;
  FabTopology *t = build(DUAL(16, ""), &cfg, &f);
  cr_assert_eq(t->nnet, 4 + 8);
  FabSwitch *l0 = by_name(t, "leaf0"), *l1 = by_name(t, "leaf1"), *l3 = by_name(t, "leaf3");
  for (uint32_t g = 0; g < 8; g++) {
    cr_assert_eq(fab_switch_port_at(l0, g)->peer, t->attach[2 * g], "node 0 GPU %u port 0", g);
    cr_assert_eq(fab_switch_port_at(l1, g)->peer, t->attach[2 * g + 1], "node 0 GPU %u port 1", g);
    cr_assert_eq(fab_switch_port_at(l3, g)->peer, t->attach[16 + 2 * g + 1], "node 1 GPU %u port 1", g);
  }
  route_is(l0, 5, "5,");                       /* rank 5 (node 0): its port on this leaf */
  route_is(l1, 5, "5,");
  route_is(l0, 8 + 2, "8,9,10,11,12,13,14,15,"); /* node 1: up, over every spine */
  cr_assert_eq(fab_topology_elements(&f), fab_topology_number(t, 0));
  cr_assert_eq(fab_topology_footprint(&f).switches, t->nswitches);
  fab_topology_free(t);
  fab_cfg_free(cfg);
  read_fails(DUAL(8, ""), "t.yaml:3:61:", "8 NIC ports for 8 GPUs is not an even number per GPU");
  read_fails(HOSTS(8) "fabric:\n" LINK "  topology: {kind: leaf-spine, hosts_per_leaf: 4, dual_tor: true}\n",
             "t.yaml:4:", "node: host has one NIC of one port");
  read_fails(DUAL(16, ", leaves: 3"), "t.yaml:3:3:", "the topology has 24");
  read_fails("cluster: {node: dgx-h100, nodes: 3, nics_per_node: 16, nic: {bandwidth: 200Gbps}}\nfabric:\n"
             "  topology: {kind: leaf-spine, hosts_per_leaf: 16, dual_tor: true}\n", "t.yaml:3:", "3 leaves is odd");
  read_fails(RAIL3(", dual_tor: true"), "t.yaml:3:", "only by leaf-spine");
}

/* Dual plane (Alibaba HPN's, Qian et al., SIGCOMM 2024): the same pairs, the spines doubled (each plane keeps the
** leaves' 1:1) and split: leaf0 and leaf2 (the ports 0) link to spines 0-7 only, leaf1 and leaf3 to spines 8-15, so
** a flow stays on its side; rank 10 (node 1, GPU 2) is on leaf2 from spine0 and on leaf3 from spine8. */
Test(graph, dual_plane_splits_the_spines_by_side) {
  FabCfg *cfg;
  FabFabricCfg f;
  FabTopology *t = build(DUAL(16, ", dual_plane: true"), &cfg, &f);
  cr_assert_eq(t->nnet, 4 + 16);
  FabSwitch *l0 = by_name(t, "leaf0"), *l1 = by_name(t, "leaf1");
  for (uint32_t j = 0; j < 8; j++) {
    char a[16], b[16];
    g_snprintf(a, sizeof a, "spine%u", j);
    g_snprintf(b, sizeof b, "spine%u", 8 + j);
    cr_assert_eq(fab_switch_port_at(l0, 8 + j)->peer->owner, fab_switch_node(by_name(t, a)));
    cr_assert_eq(fab_switch_port_at(l1, 8 + j)->peer->owner, fab_switch_node(by_name(t, b)));
  }
  cr_assert_eq(fab_switch_nports(by_name(t, "spine0")), 2, "a spine links its plane's 2 leaves");
  route_is(l0, 10, "8,9,10,11,12,13,14,15,"); /* up over its plane's 8 spines */
  route_is(by_name(t, "spine0"), 10, "1,");     /* down to leaf2 */
  route_is(by_name(t, "spine8"), 10, "1,");     /* down to leaf3 */
  cr_assert_eq(fab_topology_elements(&f), fab_topology_number(t, 0));
  cr_assert_eq(fab_topology_footprint(&f).switches, t->nswitches);
  fab_topology_free(t);
  fab_cfg_free(cfg);
  read_fails("cluster: {node: dgx-h100, nodes: 2, nics_per_node: 16, nic: {bandwidth: 200Gbps}}\nfabric:\n"
             "  topology: {kind: leaf-spine, hosts_per_leaf: 8, dual_plane: true}\n", "t.yaml:3:",
             "dual_plane splits a dual-ToR fabric's two sides: set dual_tor: true");
  read_fails(DUAL(16, ", dual_plane: true, spines: 7"), "t.yaml:3:", "two planes share 7 spines unevenly");
  read_fails(RAIL3(", dual_plane: true"), "t.yaml:3:", "only by leaf-spine");
}

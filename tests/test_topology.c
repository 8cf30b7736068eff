/*
** Topology builders (topologies/topology.h) and the fabric section reader.
**
** Built topologies are checked by walking them: from a host's NIC port to
** its peer, then at each switch fab_switch_next_hop and across to the peer,
** until a NIC is reached. Every (src, dst) pair must arrive at dst, over the
** number of links a shortest path has:
**   single switch / same leaf or edge:   host - switch - host             2
**   leaf-spine, other leaf:              host - leaf - spine - leaf - host 4
**   fat-tree, same pod, other edge:      host - edge - agg - edge - host   4
**   fat-tree, other pod:                 host - edge - agg - core - agg - edge - host 6
*/
#include <criterion/criterion.h>
#include <string.h>

#include <math.h>
#include "models/ecmp.h"
#include "topologies/topology.h"
#include "testnet.h"

/* ---- helpers ----------------------------------------------------------- */

static FabFabricCfg make_cfg(FabTopoKind kind, uint64_t seed) {
  FabFabricCfg c;
  memset(&c, 0, sizeof c);
  c.topo.kind = kind;
  c.topo.link_bps = 400000000000ULL; /* 400G between switches */
  c.topo.host_bps = 100000000000ULL; /* 100G to hosts */
  c.topo.link_latency = 500 * FAB_NS;
  c.sw.latency = 0;
  c.sw.buffer = 1 << 20;
  c.sw.alpha = 1.0;
  c.sw.nprio = 1;
  c.sw.ecmp_seed = seed;
  c.nic = testnet_fabric_nic_cfg(c.topo.host_bps);
  c.nic.ecmp_seed = seed;
  return c;
}

static FabTopology *single_switch(uint32_t hosts) {
  FabFabricCfg c = make_cfg(FAB_TOPO_SINGLE_SWITCH, 1);
  c.topo.hosts = hosts;
  return fab_topology_build(&c);
}

static FabTopology *leaf_spine(uint32_t leaves, uint32_t hpl, uint32_t spines, uint64_t seed) {
  FabFabricCfg c = make_cfg(FAB_TOPO_LEAF_SPINE, seed);
  c.topo.leaves = leaves;
  c.topo.hosts_per_leaf = hpl;
  c.topo.spines = spines;
  c.topo.hosts = leaves * hpl;
  return fab_topology_build(&c);
}

static FabTopology *fat_tree(uint32_t k, uint32_t hpe, uint64_t seed) {
  FabFabricCfg c = make_cfg(FAB_TOPO_FAT_TREE, seed);
  c.topo.k = k;
  c.topo.hosts_per_leaf = hpe;
  c.topo.hosts = k * (k / 2) * hpe;
  return fab_topology_build(&c);
}

/* Endpoint number of the NIC that is node n, or -1. */
static int nic_of(const FabTopology *t, const FabNode *n) {
  for (uint32_t h = 0; h < t->nhosts; h++)
    if (&t->nics[h].node == n) return (int)h;
  return -1;
}

/* Index in t->switches of the switch that is node n, or -1. */
static int switch_of(const FabTopology *t, const FabNode *n) {
  for (uint32_t s = 0; s < t->nswitches; s++)
    if (fab_switch_node(t->switches[s]) == n) return (int)s;
  return -1;
}

/* Follow a packet from src to dst with `hash`; returns the links crossed and
** stores the switches visited in via[] (up to 8). Fails the test if the walk
** meets a missing peer or route, goes back out the port it came in, ends at
** the wrong NIC, or runs longer than 8 links. */
static int walk(const FabTopology *t, uint32_t src, uint32_t dst, uint32_t hash, int via[8]) {
  const FabPort *out = &t->nics[src].port;
  int links = 0;
  for (;;) {
    cr_assert_not_null(out->peer, "%u->%u: a port without a peer", src, dst);
    const FabPort *in = out->peer;
    links++;
    int h = nic_of(t, in->owner);
    if (h >= 0) {
      cr_assert_eq((uint32_t)h, dst, "%u->%u (hash %u): arrived at host %d", src, dst, hash, h);
      return links;
    }
    cr_assert_lt(links, 8, "%u->%u (hash %u): no arrival after 8 links", src, dst, hash);
    int s = switch_of(t, in->owner);
    cr_assert_geq(s, 0, "a port owned by neither a NIC nor a switch");
    if (via) via[links - 1] = s;
    out = fab_switch_next_hop(t->switches[s], dst, hash);
    cr_assert_not_null(out, "%u->%u: no route at %s", src, dst, fab_switch_name(t->switches[s]));
    cr_assert_neq(out, in, "%u->%u: U-turn at %s", src, dst, fab_switch_name(t->switches[s]));
    cr_assert_eq(out->owner, fab_switch_node(t->switches[s]));
  }
}

/* Switch s's ECMP salt comes from its name: in every group of more than one
** port, next_hop picks the port that fab_ecmp_pick gives with
** fab_ecmp_salt(its name, seed), for 64 hashes. Returns how many such groups
** were checked (0: the switch has only single-port groups). */
static uint32_t check_switch_salt(const FabTopology *t, uint32_t s, uint64_t seed) {
  FabSwitch *sw = t->switches[s];
  uint32_t salt = fab_ecmp_salt(fab_switch_name(sw), seed), checked = 0;
  for (uint32_t d = 0; d < fab_switch_nendpoints(sw); d++) {
    uint32_t g = fab_switch_route_group(sw, d), n;
    if (g == UINT32_MAX) continue;
    const uint32_t *ports = fab_switch_group_ports(sw, g, &n);
    if (n < 2) continue;
    for (uint32_t i = 0; i < 64; i++) {
      uint32_t h = i * 2654435761u + 12345;
      cr_assert_eq(fab_switch_next_hop(sw, d, h), fab_switch_port_at(sw, ports[fab_ecmp_pick(h, salt, n)]),
                   "%s: ECMP salted by its name (dst %u, hash %x)", fab_switch_name(sw), d, h);
    }
    checked++;
  }
  return checked;
}

static const uint32_t hashes[] = {0, 1, 2, 3, 0x9e3779b9u, 0xdeadbeefu, 0x7fffffffu, 0xffffffffu};
#define NHASH (sizeof hashes / sizeof *hashes)

/* Walk every ordered pair with every hash; expect(src, dst) gives the links. */
static void all_pairs(const FabTopology *t, int (*expect)(const FabTopology *, uint32_t, uint32_t)) {
  for (uint32_t s = 0; s < t->nhosts; s++)
    for (uint32_t d = 0; d < t->nhosts; d++) {
      if (s == d) continue;
      for (size_t i = 0; i < NHASH; i++) {
        int n = walk(t, s, d, hashes[i], NULL);
        cr_assert_eq(n, expect(t, s, d), "%u->%u hash %x: %d links, expected %d", s, d, hashes[i], n,
                     expect(t, s, d));
      }
    }
}

typedef struct PortCount {
  size_t ports, unpaired, nopeer;
} PortCount;

static void count_port(FabPort *pt, void *ctx) {
  PortCount *c = ctx;
  c->ports++;
  if (!pt->peer) c->nopeer++;
  else if (pt->peer->peer != pt || pt->peer == pt) c->unpaired++;
}

/* Every port of the fabric has a peer whose peer is itself; returns the count. */
static size_t check_links(FabTopology *t) {
  PortCount c = {0};
  fab_topology_foreach_port(t, count_port, &c);
  cr_assert_eq(c.nopeer, 0, "%zu ports without a peer", c.nopeer);
  cr_assert_eq(c.unpaired, 0, "%zu ports whose peer's peer is not themselves", c.unpaired);
  size_t want = t->nhosts;
  for (uint32_t s = 0; s < t->nswitches; s++) want += fab_switch_nports(t->switches[s]);
  cr_assert_eq(c.ports, want, "foreach_port visited %zu ports of %zu", c.ports, want);
  return c.ports;
}

/* ---- single switch ----------------------------------------------------- */

static int two_links(const FabTopology *t, uint32_t s, uint32_t d) { return 2; }

Test(topology, single_switch_4_hosts) {
  FabTopology *t = single_switch(4);
  cr_assert_eq(t->nhosts, 4);
  cr_assert_eq(t->nswitches, 1);
  FabSwitch *sw = t->switches[0];
  cr_assert_eq(fab_switch_nports(sw), 4);
  cr_assert_str_eq(fab_switch_name(sw), "switch0");
  for (uint32_t h = 0; h < 4; h++) {
    cr_assert_eq(t->nics[h].id, h);
    cr_assert_eq(t->nics[h].port.peer, fab_switch_port_at(sw, h), "host %u is on port %u", h, h);
    cr_assert_eq(fab_switch_port_at(sw, h)->peer, &t->nics[h].port);
    cr_assert_eq(fab_switch_port_at(sw, h)->owner, fab_switch_node(sw));
    cr_assert_eq(t->nics[h].port.owner, &t->nics[h].node);
    for (size_t i = 0; i < NHASH; i++) cr_assert_eq(fab_switch_next_hop(sw, h, hashes[i]), fab_switch_port_at(sw, h));
  }
  cr_assert_null(fab_switch_next_hop(sw, 4, 0), "endpoint 4 does not exist");
  cr_assert_eq(check_links(t), 8);
  all_pairs(t, two_links);
  fab_topology_free(t);
}

Test(topology, link_rates_and_latency) {
  /* hosts at host_bps, switch-to-switch at link_bps, latency on both ends */
  FabTopology *t = leaf_spine(2, 2, 1, 1);
  for (uint32_t h = 0; h < t->nhosts; h++) {
    cr_assert_eq(t->nics[h].port.bps, 100000000000ULL);
    cr_assert_eq(t->nics[h].port.peer->bps, 100000000000ULL);
    cr_assert_eq(t->nics[h].port.latency, 500 * FAB_NS);
    cr_assert_eq(t->nics[h].port.peer->latency, 500 * FAB_NS);
  }
  FabSwitch *leaf0 = t->switches[0];
  cr_assert_eq(fab_switch_port_at(leaf0, 2)->bps, 400000000000ULL, "leaf uplink");
  cr_assert_eq(fab_switch_port_at(leaf0, 2)->peer->bps, 400000000000ULL, "spine downlink");
  cr_assert_eq(fab_switch_port_at(leaf0, 2)->latency, 500 * FAB_NS);
  cr_assert_eq(fab_switch_port_at(leaf0, 2)->peer->latency, 500 * FAB_NS);
  fab_topology_free(t);
}

/* ---- leaf-spine -------------------------------------------------------- */

static int ls_links(const FabTopology *t, uint32_t s, uint32_t d) {
  uint32_t hpl = t->spec.hosts_per_leaf;
  return s / hpl == d / hpl ? 2 : 4;
}

Test(topology, leaf_spine_structure) {
  /* 2 leaves x 4 hosts, 2 spines: leaf ports 0..3 hosts, 4..5 spines;
  ** spine j port l goes to leaf l. Switch numbers: leaves, then spines. */
  FabTopology *t = leaf_spine(2, 4, 2, 1);
  cr_assert_eq(t->nhosts, 8);
  cr_assert_eq(t->nswitches, 4);
  const char *names[] = {"leaf0", "leaf1", "spine0", "spine1"};
  const uint32_t nports[] = {6, 6, 2, 2};
  for (uint32_t s = 0; s < 4; s++) {
    cr_assert_str_eq(fab_switch_name(t->switches[s]), names[s]);
    cr_assert_eq(fab_switch_nports(t->switches[s]), nports[s], "%s", names[s]);
    /* the salt from the name: leaves have the up groups (2 spines) where it shows */
    uint32_t groups = check_switch_salt(t, s, 1);
    if (s < 2) cr_assert_gt(groups, 0, "%s has ECMP groups", names[s]);
  }
  for (uint32_t l = 0; l < 2; l++) {
    FabSwitch *leaf = t->switches[l];
    for (uint32_t i = 0; i < 4; i++) cr_assert_eq(fab_switch_port_at(leaf, i)->peer, &t->nics[l * 4 + i].port);
    for (uint32_t j = 0; j < 2; j++)
      cr_assert_eq(fab_switch_port_at(leaf, 4 + j)->peer, fab_switch_port_at(t->switches[2 + j], l));
  }
  cr_assert_eq(check_links(t), 8 + 6 + 6 + 2 + 2);
  fab_topology_free(t);
}

Test(topology, leaf_spine_every_pair_reachable) {
  for (uint64_t seed = 0; seed < 3; seed++) {
    FabTopology *t = leaf_spine(2, 4, 2, seed);
    all_pairs(t, ls_links);
    fab_topology_free(t);
  }
}

Test(topology, leaf_spine_uneven_shape) {
  /* 3 leaves x 2 hosts, 3 spines (routing groups of 3) */
  FabTopology *t = leaf_spine(3, 2, 3, 4);
  cr_assert_eq(t->nswitches, 6);
  cr_assert_eq(fab_switch_nports(t->switches[0]), 5);
  cr_assert_eq(fab_switch_nports(t->switches[3]), 3);
  check_links(t);
  all_pairs(t, ls_links);
  fab_topology_free(t);
}

Test(topology, leaf_spine_routes) {
  /* Down routes have one port whatever the hash; up routes go to a spine. */
  FabTopology *t = leaf_spine(2, 4, 2, 1);
  FabSwitch *leaf0 = t->switches[0], *spine1 = t->switches[3];
  for (uint32_t h = 0; h < 1000; h++) {
    cr_assert_eq(fab_switch_next_hop(leaf0, 2, h), fab_switch_port_at(leaf0, 2), "local host: its own port");
    FabPort *up = fab_switch_next_hop(leaf0, 6, h);
    cr_assert(up == fab_switch_port_at(leaf0, 4) || up == fab_switch_port_at(leaf0, 5), "remote host: an uplink");
    cr_assert_eq(fab_switch_next_hop(spine1, 6, h), fab_switch_port_at(spine1, 1), "spine: the leaf of host 6");
    cr_assert_eq(fab_switch_next_hop(spine1, 1, h), fab_switch_port_at(spine1, 0));
  }
  fab_topology_free(t);
}

Test(topology, leaf_spine_ecmp_uses_both_spines) {
  /* 2000 flow hashes from host 0 to host 5: about 1000 via each spine (sd ~22). */
  FabTopology *t = leaf_spine(2, 4, 2, 7);
  int per_spine[2] = {0};
  for (uint32_t i = 0; i < 2000; i++) {
    uint32_t h = fab_ecmp_hash(0, 5, fab_ecmp_sport(i, 7), 4791, 17, 7);
    int via[8];
    cr_assert_eq(walk(t, 0, 5, h, via), 4);
    cr_assert_eq(via[0], 0, "first switch: leaf0");
    cr_assert(via[1] == 2 || via[1] == 3, "second switch: a spine");
    cr_assert_eq(via[2], 1, "third switch: leaf1");
    per_spine[via[1] - 2]++;
  }
  cr_assert(per_spine[0] > 850 && per_spine[1] > 850, "spine0 %d, spine1 %d of 2000", per_spine[0],
            per_spine[1]);
  fab_topology_free(t);
}

/* ---- fat-tree ---------------------------------------------------------- */

static int ft_links(const FabTopology *t, uint32_t s, uint32_t d) {
  uint32_t hpe = t->spec.hosts_per_leaf, per_pod = t->spec.k / 2 * hpe;
  if (s / hpe == d / hpe) return 2;
  if (s / per_pod == d / per_pod) return 4;
  return 6;
}

Test(topology, fat_tree_k4) {
  /* k=4: 4 pods x (2 edge + 2 agg), 4 cores = 20 switches; 2 hosts per
  ** edge, 16 hosts; every switch has k = 4 ports. */
  FabTopology *t = fat_tree(4, 2, 1);
  cr_assert_eq(t->nhosts, 16);
  cr_assert_eq(t->nswitches, 20);
  for (uint32_t s = 0; s < 20; s++) {
    char want[16];
    if (s < 8) g_snprintf(want, sizeof want, "edge%u", s);
    else if (s < 16) g_snprintf(want, sizeof want, "agg%u", s - 8);
    else g_snprintf(want, sizeof want, "core%u", s - 16);
    cr_assert_str_eq(fab_switch_name(t->switches[s]), want);
    cr_assert_eq(fab_switch_nports(t->switches[s]), 4, "%s", want);
    /* the salt from the name: edges and aggs have the up groups where it shows */
    uint32_t groups = check_switch_salt(t, s, 1);
    if (s < 16) cr_assert_gt(groups, 0, "%s has ECMP groups", want);
  }
  /* host h on edge h/2, port h%2 */
  for (uint32_t h = 0; h < 16; h++) cr_assert_eq(t->nics[h].port.peer, fab_switch_port_at(t->switches[h / 2], h % 2));
  cr_assert_eq(check_links(t), 16 + 20 * 4);
  all_pairs(t, ft_links);
  fab_topology_free(t);
}

Test(topology, fat_tree_k4_layers) {
  /* A cross-pod path climbs edge, agg, core and descends agg, edge, each in
  ** the right pod; the aggs are in the source and destination pods. */
  FabTopology *t = fat_tree(4, 2, 3);
  for (uint32_t i = 0; i < 200; i++) {
    int via[8];
    cr_assert_eq(walk(t, 1, 14, i * 2654435761u, via), 6);
    cr_assert_eq(via[0], 0, "edge0 (host 1)");
    cr_assert(via[1] == 8 || via[1] == 9, "an agg of pod 0, got switch %d", via[1]);
    cr_assert(via[2] >= 16 && via[2] < 20, "a core, got switch %d", via[2]);
    cr_assert(via[3] == 14 || via[3] == 15, "an agg of pod 3, got switch %d", via[3]);
    cr_assert_eq(via[4], 7, "edge7 (host 14)");
  }
  fab_topology_free(t);
}

Test(topology, fat_tree_k4_uses_every_core) {
  /* (k/2)^2 = 4 shortest paths between pods, one per core: 4000 hashes,
  ** about 1000 each (sd ~27). */
  FabTopology *t = fat_tree(4, 2, 11);
  int per_core[4] = {0};
  for (uint32_t i = 0; i < 4000; i++) {
    int via[8];
    uint32_t h = fab_ecmp_hash(0, 15, fab_ecmp_sport(i, 11), 4791, 17, 11);
    cr_assert_eq(walk(t, 0, 15, h, via), 6);
    per_core[via[2] - 16]++;
  }
  for (int c = 0; c < 4; c++) cr_assert_gt(per_core[c], 800, "core%d carries %d of 4000", c, per_core[c]);
  fab_topology_free(t);
}

Test(topology, fat_tree_k4_oversubscribed) {
  /* 2:1 at the edge: 4 hosts per edge, 2 uplinks; 8 edges -> 32 hosts */
  FabTopology *t = fat_tree(4, 4, 1);
  cr_assert_eq(t->nhosts, 32);
  cr_assert_eq(t->nswitches, 20);
  cr_assert_eq(fab_switch_nports(t->switches[0]), 6, "edge: 4 hosts + 2 aggs");
  cr_assert_eq(fab_switch_nports(t->switches[8]), 4, "agg: 2 edges + 2 cores");
  cr_assert_eq(fab_switch_nports(t->switches[16]), 4, "core: one per pod");
  for (uint32_t h = 0; h < 32; h++) cr_assert_eq(t->nics[h].port.peer, fab_switch_port_at(t->switches[h / 4], h % 4));
  cr_assert_eq(check_links(t), 32 + 8 * 6 + 8 * 4 + 4 * 4);
  all_pairs(t, ft_links);
  fab_topology_free(t);
}

Test(topology, describe) {
  FabFabricCfg c = make_cfg(FAB_TOPO_SINGLE_SWITCH, 0);
  c.topo.hosts = 4;
  char *s = fab_topology_describe(&c.topo);
  cr_assert_str_eq(s, "single-switch: 4 hosts");
  g_free(s);
  c.topo.kind = FAB_TOPO_LEAF_SPINE;
  c.topo.leaves = 2, c.topo.hosts_per_leaf = 8, c.topo.spines = 4, c.topo.hosts = 16;
  s = fab_topology_describe(&c.topo);
  cr_assert_str_eq(s, "leaf-spine: 2 leaves x 8 hosts, 4 spines (2:1 at the leaf)");
  g_free(s);
  c.topo.spines = 3; /* 8:3 is already in lowest terms */
  s = fab_topology_describe(&c.topo);
  cr_assert_str_eq(s, "leaf-spine: 2 leaves x 8 hosts, 3 spines (8:3 at the leaf)");
  g_free(s);
}

/* ---- reading the fabric section from YAML ------------------------------- */

static FabCfg *load(const char *yaml) {
  GError *err = NULL;
  FabCfg *cfg = fab_cfg_load_string(yaml, "t.yaml", &err);
  cr_assert_not_null(cfg, "YAML did not load: %s", err ? err->message : "?");
  return cfg;
}

static void read_ok(const char *yaml, FabFabricCfg *out) {
  FabCfg *cfg = load(yaml);
  GError *err = NULL;
  gboolean ok = fab_fabric_cfg_read(fab_cfg_root(cfg), out, NULL, &err);
  cr_assert(ok, "unexpected error: %s", err ? err->message : "?");
  cr_assert_null(err);
  fab_cfg_free(cfg);
}

/* The read fails with a message that starts with `where_path` (e.g.
** "t.yaml:8:23: fabric.topology.oversubscription:") and contains `what`. */
static void read_fails(const char *yaml, const char *where_path, const char *what) {
  FabCfg *cfg = load(yaml);
  GError *err = NULL;
  FabFabricCfg out;
  cr_assert_not(fab_fabric_cfg_read(fab_cfg_root(cfg), &out, NULL, &err), "expected an error at %s", where_path);
  cr_assert_not_null(err);
  cr_assert(err->domain == FAB_CFG_ERROR);
  cr_assert(g_str_has_prefix(err->message, where_path), "message '%s' does not start with '%s'", err->message,
            where_path);
  cr_assert_not_null(strstr(err->message, what), "message '%s' does not say '%s'", err->message, what);
  g_error_free(err);
  fab_cfg_free(cfg);
}

Test(topology_cfg, leaf_spine_oversubscription_2_to_1) {
  /* 32 nodes / 8 per leaf = 4 leaves; 8 hosts / (2:1) = 4 spines */
  FabFabricCfg f;
  read_ok("cluster:\n"
          "  nodes: 32\n"
          "  nic: {bandwidth: 50Gbps}\n"
          "fabric:\n"
          "  topology:\n"
          "    kind: leaf-spine\n"
          "    hosts_per_leaf: 8\n"
          "    oversubscription: 2:1\n"
          "  link: {bandwidth: 100Gbps, latency: 750ns, mtu: 2048}\n",
          &f);
  cr_assert_eq(f.topo.kind, FAB_TOPO_LEAF_SPINE);
  cr_assert_eq(f.topo.leaves, 4);
  cr_assert_eq(f.topo.spines, 4);
  cr_assert_eq(f.topo.hosts_per_leaf, 8);
  cr_assert_eq(f.topo.hosts, 32);
  cr_assert_eq(f.topo.link_bps, 100000000000ULL);
  cr_assert_eq(f.topo.host_bps, 50000000000ULL, "cluster.nic.bandwidth sets the host links");
  cr_assert_eq(f.nic.bps, 50000000000ULL);
  cr_assert_eq(f.topo.link_latency, 750 * FAB_NS);
  cr_assert_eq(f.nic.mtu, 2048);
  /* defaults */
  cr_assert_eq(f.nic.rto, FAB_MS);
  cr_assert_eq(f.nic.ack_interval, 16);
  cr_assert_eq(f.nic.max_timeouts, 64);
  cr_assert_eq(f.sw.nprio, 8);
  cr_assert_eq(f.nic.nprio, 8);
  cr_assert_eq(f.sw.buffer, 32ULL << 20);
  cr_assert_eq(f.sw.alpha, 1.0);
  cr_assert_eq(f.sw.latency, 0);
  cr_assert_eq(f.nic.transport.kind, FAB_TRANSPORT_ROCEV2);
  cr_assert_eq(f.nic.transport.data_overhead, 82);
  /* and it builds: 4 leaves of 8 + 4 ports, 4 spines of 4 ports */
  FabTopology *t = fab_topology_build(&f);
  cr_assert_eq(t->nswitches, 8);
  cr_assert_eq(fab_switch_nports(t->switches[0]), 12);
  cr_assert_eq(fab_switch_nports(t->switches[7]), 4);
  cr_assert_str_eq(fab_switch_name(t->switches[7]), "spine3");
  check_links(t);
  for (uint32_t s = 0; s < 32; s += 5)
    for (uint32_t d = 0; d < 32; d += 3)
      if (s != d) cr_assert_eq(walk(t, s, d, s * 31 + d, NULL), s / 8 == d / 8 ? 2 : 4);
  fab_topology_free(t);
}

Test(topology_cfg, leaf_spine_host_link_defaults_to_link) {
  FabFabricCfg f;
  read_ok("fabric:\n"
          "  topology: {kind: leaf-spine, hosts_per_leaf: 2, leaves: 3, spines: 1}\n"
          "  link: {bandwidth: 200Gbps}\n"
          "  switch: {ecmp_seed: 9, priorities: 2}\n",
          &f);
  cr_assert_eq(f.topo.hosts, 6);
  cr_assert_eq(f.topo.leaves, 3);
  cr_assert_eq(f.topo.spines, 1);
  cr_assert_eq(f.topo.host_bps, 200000000000ULL);
  cr_assert_eq(f.topo.link_latency, FAB_US, "default latency 1us");
  cr_assert_eq(f.nic.mtu, 4096, "default mtu");
  cr_assert_eq(f.sw.ecmp_seed, 9);
  cr_assert_eq(f.nic.ecmp_seed, 9, "NIC hashes with the switch seed");
  cr_assert_eq(f.sw.nprio, 2);
  cr_assert_eq(f.nic.nprio, 2);
}

Test(topology_cfg, fat_tree_oversubscription_2_to_1) {
  FabFabricCfg f;
  read_ok("cluster: {nodes: 32}\n"
          "fabric:\n"
          "  topology: {kind: fat-tree, k: 4, oversubscription: 2:1}\n"
          "  link: {bandwidth: 100Gbps}\n",
          &f);
  cr_assert_eq(f.topo.kind, FAB_TOPO_FAT_TREE);
  cr_assert_eq(f.topo.k, 4);
  cr_assert_eq(f.topo.hosts_per_leaf, 4);
  cr_assert_eq(f.topo.hosts, 32);
}

Test(topology_cfg, fat_tree_default_is_full_bisection) {
  FabFabricCfg f;
  read_ok("fabric:\n"
          "  topology: {kind: fat-tree, k: 6}\n"
          "  link: {bandwidth: 100Gbps}\n",
          &f);
  cr_assert_eq(f.topo.hosts_per_leaf, 3);
  cr_assert_eq(f.topo.hosts, 54, "k^3/4");
}

Test(topology_cfg, single_switch_hosts_from_nodes) {
  FabFabricCfg f;
  read_ok("cluster: {nodes: 5}\n"
          "fabric:\n"
          "  topology: {kind: single-switch}\n"
          "  link: {bandwidth: 100Gbps}\n",
          &f);
  cr_assert_eq(f.topo.kind, FAB_TOPO_SINGLE_SWITCH);
  cr_assert_eq(f.topo.hosts, 5);
}

/* Column numbers below count from 1: in "    spines: 4" the value is at 13. */

Test(topology_cfg, error_spines_and_oversubscription) {
  read_fails("cluster:\n"                   /* 1 */
             "  nodes: 32\n"                /* 2 */
             "fabric:\n"                    /* 3 */
             "  topology:\n"                /* 4 */
             "    kind: leaf-spine\n"       /* 5 */
             "    hosts_per_leaf: 8\n"      /* 6 */
             "    spines: 4\n"              /* 7 */
             "    oversubscription: 2:1\n"  /* 8: value at column 23 */
             "  link: {bandwidth: 100Gbps}\n",
             "t.yaml:8:23: fabric.topology.oversubscription: ", "not both");
}

Test(topology_cfg, error_fractional_spines) {
  /* 6 hosts per leaf at 4:1 would be 1.5 spines */
  read_fails("cluster:\n"
             "  nodes: 12\n"
             "fabric:\n"
             "  topology:\n"
             "    kind: leaf-spine\n"
             "    hosts_per_leaf: 6\n"
             "    oversubscription: 4:1\n" /* 7 */
             "  link: {bandwidth: 100Gbps}\n",
             "t.yaml:7:23: fabric.topology.oversubscription: ", "1.5 spines, not a whole number");
}

Test(topology_cfg, error_odd_k) {
  read_fails("fabric:\n"
             "  topology:\n"
             "    kind: fat-tree\n"
             "    k: 5\n" /* 4: value at column 8 */
             "  link: {bandwidth: 100Gbps}\n",
             "t.yaml:4:8: fabric.topology.k: ", "even");
}

Test(topology_cfg, error_fractional_fat_tree_edge) {
  /* k/2 = 2 hosts x 5/4 = 2.5 hosts per edge switch */
  read_fails("fabric:\n"
             "  topology:\n"
             "    kind: fat-tree\n"
             "    k: 4\n"
             "    oversubscription: 5:4\n" /* 5 */
             "  link: {bandwidth: 100Gbps}\n",
             "t.yaml:5:23: fabric.topology.oversubscription: ", "whole number of hosts");
}

Test(topology_cfg, error_nodes_mismatch_leaf_spine) {
  read_fails("cluster:\n"
             "  nodes: 10\n" /* 2: value at column 10 */
             "fabric:\n"
             "  topology: {kind: leaf-spine, hosts_per_leaf: 4, leaves: 2, spines: 2}\n"
             "  link: {bandwidth: 100Gbps}\n",
             "t.yaml:2:10: cluster.nodes: ", "10 nodes, but the topology has 8");
}

Test(topology_cfg, error_nodes_not_multiple_of_leaf) {
  read_fails("cluster:\n"
             "  nodes: 10\n"
             "fabric:\n"
             "  topology: {kind: leaf-spine, hosts_per_leaf: 4, spines: 2}\n"
             "  link: {bandwidth: 100Gbps}\n",
             "t.yaml:2:10: cluster.nodes: ", "not a multiple of hosts_per_leaf 4");
}

Test(topology_cfg, error_nodes_mismatch_fat_tree) {
  read_fails("cluster:\n"
             "  nodes: 20\n"
             "fabric:\n"
             "  topology: {kind: fat-tree, k: 4}\n"
             "  link: {bandwidth: 100Gbps}\n",
             "t.yaml:2:10: cluster.nodes: ", "k=4 fat-tree has 16");
}

Test(topology_cfg, error_key_of_another_kind) {
  read_fails("cluster: {nodes: 4}\n"
             "fabric:\n"
             "  topology:\n"
             "    kind: single-switch\n"
             "    spines: 2\n" /* 5: value at column 13 */
             "  link: {bandwidth: 100Gbps}\n",
             "t.yaml:5:13: fabric.topology.spines: ", "not used by this topology kind");
}

Test(topology_cfg, error_leaf_spine_needs_leaves_or_nodes) {
  /* reported at the topology map, i.e. its key on line 2, column 3 */
  read_fails("fabric:\n"
             "  topology:\n"
             "    kind: leaf-spine\n"
             "    hosts_per_leaf: 8\n"
             "  link: {bandwidth: 100Gbps}\n",
             "t.yaml:2:3: fabric.topology: ", "needs leaves");
}

Test(topology_cfg, error_single_switch_needs_nodes) {
  read_fails("fabric:\n"
             "  topology: {kind: single-switch}\n"
             "  link: {bandwidth: 100Gbps}\n",
             "t.yaml:", "needs cluster.nodes");
}

Test(topology_cfg, error_missing_fabric) {
  read_fails("cluster: {nodes: 4}\n", "t.yaml:1:1: ", "missing required key 'fabric'");
}

Test(topology_cfg, error_buffer_below_one_packet) {
  read_fails("cluster: {nodes: 4}\n"
             "fabric:\n"
             "  topology: {kind: single-switch}\n"
             "  link: {bandwidth: 100Gbps, mtu: 4096}\n"
             "  switch:\n"
             "    buffer: 4KiB\n" /* 6: value at column 13 */,
             "t.yaml:6:13: fabric.switch.buffer: ", "cannot hold one packet");
}

/* ---- GPU nodes, on whole scenarios ---------------------------------------- */

#include <glib/gstdio.h>
#include <unistd.h>
#include "topologies/presets.h"
#include "tools/libfabsim/json.h"
#include "testscen.h"





static const char dgx2[] =
  "cluster: {node: dgx-h100, nodes: 2}\n"
  "fabric:\n"
  "  transport: infiniband\n"
  "  topology: {kind: leaf-spine, hosts_per_leaf: 8, spines: 8}\n"
  "  link: {bandwidth: 400Gbps, latency: 500ns, mtu: 4096}\n"
  "  switch: {buffer: 64MiB, priorities: 1}\n"
  "workload: {kind: flows, flows: [{src: 0, dst: 1, size: 4MiB}]}\n";

Test(gpu, intra_node_transfer_is_nvlink_latency_plus_bytes_over_rate) {
  FabScenario *sc = testscen_load(dgx2, NULL);
  cr_assert_eq(sc->fabric.gpu.nvlink_bps, 2966400000000ULL, "370.8 GB/s of data per direction (18 x 20.6 GB/s)");
  FabResults res;
  testscen_run(sc, &res);
  /* 64 segments of 64 KiB + 16 B at 2.9664 Tb/s: 176786 ps each (rounded up);
  ** the NVSwitch stores and forwards one segment, so 65 segment times + 500 ns */
  fab_time_t seg = (65552ULL * 8 * FAB_S + 2966400000000ULL - 1) / 2966400000000ULL;
  cr_assert_eq(seg, 176786);
  cr_assert_eq(res.flows[0].end, 500 * FAB_NS + 65 * seg);
  /* = NVLink latency + bytes / rate within 2% (headers and the one stored segment) */
  double ideal = 500e-9 + (4.0 * 1048576) / 370.8e9;
  cr_assert_float_eq(fab_time_to_s(res.flows[0].end), ideal, ideal * 0.02);
  cr_assert_eq(testscen_bytes_from(&res, "leaf") + testscen_bytes_from(&res, "spine"), 0, "nothing crosses the network");
  testscen_done(sc, &res);
}

/* A GPU's NVLink port stops once its credits fall below one unit, so the unit must be its largest packet: a full
** NVLS segment, at an NVLS efficiency of 0.85 ceil(65536 / 0.85) + 16 = 77118 wire bytes, not a plain one's 65552.
** With the plain one, an MoE all-to-all beside an NVLS allreduce once sent a segment on 65552..77117 bytes of credit
** and aborted. (The default efficiency is 1: the NVLS segment is then the plain one's size.) */
Test(gpu, the_nvlink_credit_unit_is_the_largest_packet) {
  const char *eff[] = {"cluster.nvlink.nvls_efficiency=0.85", NULL};
  FabScenario *sc = testscen_load(dgx2, eff);
  FabTopology *t = fab_topology_build(&sc->fabric);
  cr_assert_not_null(t);
  for (uint32_t i = 0; i < 16; i++) {
    cr_assert(t->nics[i].nvl.credit_fc);
    cr_assert_eq(t->nics[i].nvl.credit_unit, 77118, "gpu %u: unit %u", i, t->nics[i].nvl.credit_unit);
  }
  fab_topology_free(t);
  testscen_done(sc, NULL);
  const char *off[] = {"cluster.nvlink.nvls=false", NULL}; /* no NVLS: the plain packet is the largest */
  sc = testscen_load(dgx2, off);
  t = fab_topology_build(&sc->fabric);
  cr_assert_eq(t->nics[0].nvl.credit_unit, 65552);
  fab_topology_free(t);
  testscen_done(sc, NULL);
}

Test(gpu, smaller_segments_cost_events_not_accuracy) {
  const char *sets[] = {"cluster.nvlink.segment=4KiB", NULL};
  FabScenario *a = testscen_load(dgx2, NULL), *b = testscen_load(dgx2, sets);
  FabResults ra, rb;
  testscen_run(a, &ra);
  testscen_run(b, &rb);
  cr_assert_gt(rb.events, 10 * ra.events, "16x the segments");
  double ta = fab_time_to_s(ra.flows[0].end), tb = fab_time_to_s(rb.flows[0].end);
  cr_assert_float_eq(ta, tb, ta * 0.03, "%g vs %g", ta, tb);
  testscen_done(a, &ra);
  testscen_done(b, &rb);
}

Test(gpu, gpudirect_versus_host_staged) {
  const char *yaml =
    "cluster: {node: dgx-h100, nodes: 2}\n"
    "fabric:\n"
    "  transport: infiniband\n"
    "  topology: {kind: leaf-spine, hosts_per_leaf: 8, spines: 8}\n"
    "  link: {bandwidth: 400Gbps, latency: 500ns, mtu: 4096}\n"
    "  switch: {buffer: 64MiB, priorities: 1}\n"
    "workload: {kind: flows, flows: [{src: 0, dst: 8, size: 64MiB}]}\n";
  const char *staged[] = {"cluster.pcie.gpudirect=false", NULL};
  FabScenario *a = testscen_load(yaml, NULL), *b = testscen_load(yaml, staged);
  FabResults ra, rb;
  testscen_run(a, &ra);
  testscen_run(b, &rb);
  double ta = fab_time_to_s(ra.flows[0].end), tb = fab_time_to_s(rb.flows[0].end);
  /* GPUDirect: the 400 Gb/s NIC is the limit; host-staged: 25 GB/s (200 Gb/s) through host memory */
  double bytes = 64.0 * 1048576;
  cr_assert_float_eq(ta, bytes * 8 * (4122.0 / 4096) / 400e9, ta * 0.02, "GPUDirect %g s", ta);
  cr_assert_float_eq(tb, bytes * 8 * (4122.0 / 4096) / 200e9, tb * 0.02, "host-staged %g s", tb);
  uint64_t up = 0; /* leaf0's uplinks are ports 8..15, one per spine: ECMP picks one */
  for (int p = 8; p < 16; p++) {
    char port[16];
    g_snprintf(port, sizeof port, "leaf0:p%d", p);
    for (size_t i = 0; i < ra.n_links; i++) up += g_str_equal(ra.links[i].from, port) ? ra.links[i].bytes : 0;
  }
  cr_assert_gt(up, 64.0 * 1048576, "inter-node traffic goes over the network");
  testscen_done(a, &ra);
  testscen_done(b, &rb);
}

Test(gpu, all_to_all_inside_one_dgx_runs_at_nvlink_rate) {
  const char *yaml =
    "cluster: {node: dgx-h100, nodes: 1}\n"
    "fabric:\n"
    "  topology: {kind: single-switch}\n"
    "  link: {bandwidth: 400Gbps}\n"
    "workload: {kind: all-to-all, per_pair: 8MiB}\n";
  FabScenario *sc = testscen_load(yaml, NULL);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(res.n_flows, 56);
  /* each GPU sends 7 x 8 MiB through its 370.8 GB/s NVLink port */
  double ideal = 7 * 8.0 * 1048576 / 370.8e9;
  cr_assert_float_eq(fab_time_to_s(res.sim_time), ideal, ideal * 0.03, "%g vs %g", fab_time_to_s(res.sim_time), ideal);
  cr_assert_eq(testscen_bytes_from(&res, "switch0"), 0, "no byte on the network");
  testscen_done(sc, &res);
}

Test(gpu, an_nvl72_domain_spans_trays) {
  const char *yaml =
    "cluster: {node: gb200-nvl72, nodes: 18}\n"
    "fabric:\n"
    "  topology: {kind: leaf-spine, hosts_per_leaf: 8, spines: 8}\n"
    "  link: {bandwidth: 400Gbps}\n"
    "  switch: {priorities: 1}\n"
    "workload: {kind: flows, flows: [{src: 0, dst: 71, size: 16MiB}, {src: 4, dst: 5, size: 16MiB}]}\n";
  FabScenario *sc = testscen_load(yaml, NULL);
  cr_assert_eq(sc->fabric.gpu.nvlink_domain, 72);
  cr_assert_eq(sc->fabric.gpu.gpus_per_node, 4, "a node is a tray of 4 GPUs");
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(res.endpoints, 72);
  cr_assert_eq(testscen_bytes_from(&res, "leaf") + testscen_bytes_from(&res, "spine"), 0, "tray 0 to tray 17 stays on NVLink");
  cr_assert_gt(testscen_bytes_from(&res, "nvs0:"), 32 << 20);
  double ideal = 500e-9 + 16.0 * 1048576 / 721.8e9; /* NVLink latency + bytes / rate (18 x 40.1 GB/s) */
  cr_assert_float_eq(fab_time_to_s(res.flows[0].end), ideal, ideal * 0.02);
  testscen_done(sc, &res);
}

static const char rails[] =
  "cluster: {node: dgx-h100, nodes: 4}\n"
  "fabric:\n"
  "  transport: infiniband\n"
  "  topology: {kind: rail-optimized, spines: 4}\n"
  "  link: {bandwidth: 400Gbps, latency: 500ns, mtu: 4096}\n"
  "  switch: {buffer: 64MiB, priorities: 1}\n"
  "workload: {kind: flows, flows: [{src: 0, dst: 8, size: 1MiB}]}\n";

Test(gpu, same_rail_traffic_crosses_one_rail_switch) {
  FabScenario *sc = testscen_load(rails, NULL);
  cr_assert_str_eq(sc->topology, "rail-optimized: 8 rails x 4 nodes, 4 spines joining the rails");
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(testscen_bytes_from(&res, "spine"), 0, "GPU 0 of node 0 to GPU 0 of node 1: rail 0 only");
  cr_assert_gt(testscen_bytes_from(&res, "rail0:p1"), 1 << 20, "rail 0 delivers to node 1");
  for (int r = 1; r < 8; r++) {
    char name[16];
    g_snprintf(name, sizeof name, "rail%d:", r);
    cr_assert_eq(testscen_bytes_from(&res, name), 0, "%s idle", name);
  }
  testscen_done(sc, &res);
}

Test(gpu, cross_rail_traffic_goes_through_the_spines) {
  const char *sets[] = {"workload.flows[0].dst=10", NULL}; /* GPU 0 of node 0 to GPU 2 of node 1 */
  FabScenario *sc = testscen_load(rails, sets);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_gt(testscen_bytes_from(&res, "spine"), 1 << 20);
  cr_assert_gt(testscen_bytes_from(&res, "rail2:p1"), 1 << 20, "rail 2 delivers to node 1's NIC 2");
  testscen_done(sc, &res);
}

Test(gpu, every_preset_loads_and_runs) {
  for (int i = 1; fab_preset_names[i]; i++) {
    const FabNodePreset *p = fab_preset_find(fab_preset_names[i]);
    uint32_t nodes = p->nvlink_domain / p->gpus_per_node + 1; /* one node beyond the first domain */
    char *yaml = g_strdup_printf(
      "cluster: {node: %s, nodes: %u}\n"
      "fabric:\n"
      "  topology: {kind: single-switch}\n" /* no link: the preset's NIC rate serves */
      "  switch: {priorities: 1}\n"
      "workload: {kind: flows, flows: [{src: 0, dst: 1, size: 1MiB}, {src: 0, dst: %u, size: 1MiB}]}\n",
      p->name, nodes, p->nvlink_domain);
    FabScenario *sc = testscen_load(yaml, NULL);
    cr_assert_eq(sc->fabric.gpu.gpus_per_node, p->gpus_per_node, "%s", p->name);
    cr_assert_eq(sc->fabric.topo.host_bps, p->nic_bps, "%s: NIC rate from the preset", p->name);
    cr_assert_eq(sc->fabric.topo.link_bps, p->nic_bps, "%s: links at the NIC rate when fabric.link is absent",
                 p->name);
    FabResults res;
    testscen_run(sc, &res);
    cr_assert_eq(res.endpoints, nodes * p->gpus_per_node, "%s", p->name);
    cr_assert_gt(testscen_bytes_from(&res, "switch0"), 1 << 20, "%s: the second flow leaves the NVLink domain", p->name);
    testscen_done(sc, &res);
    g_free(yaml);
  }
}

/* A preset's NIC links at the slower of its rate and fabric.link.bandwidth
** (a 400 Gb/s ConnectX-7 in a 200 Gb/s switch port runs at 200); a rate in
** cluster.nic.bandwidth is taken as given; without fabric.link the NIC's
** rate serves for the fabric too. The report says which rate runs. */
Test(gpu, nic_rate_follows_the_fabric_link) {
  static const struct {
    const char *link, *nic;
    uint64_t host_gbps, link_gbps;
    const char *says;
  } c[] = {
      {"200Gbps", NULL, 200, 200, "16 x 200 Gbps (8 per node; the dgx-h100 preset's 400 Gbps NICs at the fabric's "
                                  "link rate)"},
      {"800Gbps", NULL, 400, 800, "16 x 400 Gbps (8 per node)"},
      {NULL, NULL, 400, 400, "16 x 400 Gbps (8 per node)"},
      {"200Gbps", "400Gbps", 400, 200, "16 x 400 Gbps (8 per node)"},
      {"400Gbps", "100Gbps", 100, 400, "16 x 100 Gbps (8 per node; cluster.nic.bandwidth, below the dgx-h100 "
                                       "preset's 400 Gbps)"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(c); i++) {
    char *yaml = g_strdup_printf("cluster: {node: dgx-h100, nodes: 2%s%s%s}\n"
                                 "fabric:\n"
                                 "  topology: {kind: rail-optimized}\n"
                                 "%s%s%s"
                                 "workload: {kind: collective, op: allreduce, size: 1MiB}\n",
                                 c[i].nic ? ", nic: {bandwidth: " : "", c[i].nic ? c[i].nic : "", c[i].nic ? "}" : "",
                                 c[i].link ? "  link: {bandwidth: " : "", c[i].link ? c[i].link : "",
                                 c[i].link ? "}\n" : "");
    FabScenario *sc = testscen_load(yaml, NULL);
    cr_assert_eq(sc->fabric.topo.host_bps, c[i].host_gbps * 1000000000ULL, "case %zu", i);
    cr_assert_eq(sc->fabric.topo.link_bps, c[i].link_gbps * 1000000000ULL, "case %zu", i);
    char *says = fab_scenario_nic_rate(sc);
    cr_assert_str_eq(says, c[i].says, "case %zu", i);
    g_free(says);
    fab_scenario_free(sc);
    g_free(yaml);
  }
  /* plain hosts have no NIC of their own: the fabric's link rate is required */
  read_fails("cluster: {nodes: 4}\nfabric:\n  topology: {kind: single-switch}\n", "t.yaml:2:1: fabric: ",
             "missing required key 'link'");
  read_fails("cluster: {nodes: 4}\nfabric:\n  topology: {kind: single-switch}\n  link: {mtu: 1024}\n",
             "t.yaml:4:3: fabric.link: ", "missing required key 'bandwidth'");
}

/* The host CPU is the preset's (NCCL's tuner rows depend on it), or
** cluster.cpu; plain hosts have none to set. */
Test(gpu, host_cpu_from_the_preset_or_given) {
  static const struct {
    const char *node;
    FabCpu cpu;
  } c[] = {{"dgx-a100", FAB_CPU_AMD}, {"aws-p5", FAB_CPU_AMD}, {"dgx-h100", FAB_CPU_INTEL},
           {"aws-p4d", FAB_CPU_INTEL}, {"dgx-b200", FAB_CPU_INTEL}, {"gb200-nvl72", FAB_CPU_ARM}};
  for (size_t i = 0; i < G_N_ELEMENTS(c); i++) {
    char *yaml = g_strdup_printf("cluster: {node: %s, nodes: 1}\nfabric: {topology: {kind: single-switch}}\n"
                                 "workload: {kind: collective, op: allreduce, size: 1MiB}\n", c[i].node);
    FabScenario *sc = testscen_load(yaml, NULL);
    cr_assert_eq(sc->fabric.gpu.cpu, c[i].cpu, "%s", c[i].node);
    fab_scenario_free(sc);
    g_free(yaml);
  }
  const char *sets[] = {"cluster.cpu=amd", NULL};
  FabScenario *sc = testscen_load(dgx2, sets);
  cr_assert_eq(sc->fabric.gpu.cpu, FAB_CPU_AMD);
  fab_scenario_free(sc);
  read_fails("cluster: {nodes: 4, cpu: amd}\nfabric:\n  topology: {kind: single-switch}\n  link: {bandwidth: 1Gbps}\n",
             "t.yaml:1:26: cluster.cpu: ", "'cpu' is for GPU nodes");
}

Test(gpu, preset_fields_can_be_overridden) {
  const char *sets[] = {"cluster.gpus_per_node=4", "cluster.nics_per_node=2", "cluster.nvlink.bandwidth=900GB/s",
                        "cluster.nic.bandwidth=200Gbps", "fabric.topology.hosts_per_leaf=2", NULL};
  FabScenario *sc = testscen_load(dgx2, sets);
  cr_assert_eq(sc->fabric.gpu.gpus_per_node, 4);
  cr_assert_eq(sc->fabric.gpu.nvlink_domain, 4, "the domain follows the node");
  cr_assert_eq(sc->fabric.gpu.nics_per_node, 2);
  cr_assert_eq(sc->fabric.gpu.nvlink_bps, 7200000000000ULL);
  cr_assert_eq(sc->fabric.topo.host_bps, 200000000000ULL);
  fab_scenario_free(sc);
}

/* cluster.gpus_per_node alone: each GPU keeps the preset's NICs per GPU (NCCL takes a GPU's own NICs), where it
** used to keep the node's every NIC (one GPU of a DGX H100 on 8 NICs: a ring at the PCIe rate, 62.5 GB/s, against
** one NIC's 48.7 measured, scenarios/validation/cases.yaml H100-10Nx1-*); nics_per_node given wins. */
static FabScenario *node_of(const char *preset, const char *gpus, const char *nics) {
  char *yaml = g_strdup_printf("cluster: {node: %s, nodes: 2, gpus_per_node: %s%s%s}\n"
                               "fabric: {topology: {kind: rail-optimized}}\n"
                               "workload: {kind: flows, flows: [{src: 0, dst: 1, size: 4MiB}]}\n",
                               preset, gpus, nics ? ", nics_per_node: " : "", nics ? nics : "");
  FabScenario *sc = testscen_load(yaml, NULL);
  g_free(yaml);
  return sc;
}

Test(gpu, fewer_gpus_keep_their_own_nics) {
  static const struct { const char *preset, *gpus, *nics; uint32_t want, preset_nics; } c[] = {
    {"dgx-h100", "1", NULL, 1, 8}, {"dgx-h100", "4", NULL, 4, 8}, {"dgx-h100", "8", NULL, 8, 0},
    {"dgx-h100", "1", "8", 8, 0},  {"aws-p5", "2", NULL, 8, 32},  {"aws-p4d", "1", NULL, 1, 4},
    {"aws-p4d", "2", NULL, 1, 4},  {"aws-p4d", "4", NULL, 2, 4},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(c); i++) {
    FabScenario *sc = node_of(c[i].preset, c[i].gpus, c[i].nics);
    cr_assert_eq(sc->fabric.gpu.nics_per_node, c[i].want, "%s, %s GPUs: %u NICs", c[i].preset, c[i].gpus,
                 sc->fabric.gpu.nics_per_node);
    cr_assert_eq(sc->fabric.gpu.preset_nics, c[i].preset_nics, "%s, %s GPUs", c[i].preset, c[i].gpus);
    cr_assert_eq(sc->fabric.topo.hosts, 2 * c[i].want, "the network has the NICs that serve GPUs");
    cr_assert_eq(sc->fabric.topo.spines, MAX(c[i].want, c[i].preset_nics), "%s, %s GPUs: the rails built keep the "
                 "uplinks of a whole node's (a spine per rail of the preset)", c[i].preset, c[i].gpus);
    char *ex = fab_scenario_explain(sc);
    cr_assert_eq(strstr(ex, "as many per GPU, as NCCL takes a GPU's own NICs") != NULL, c[i].preset_nics != 0,
                 "explain says where the count came from:\n%s", ex);
    g_free(ex);
    fab_scenario_free(sc);
  }
  /* three of aws-p4d's GPUs would need one and a half NICs: the error says what to set */
  read_fails("cluster: {node: aws-p4d, nodes: 2, gpus_per_node: 3}\nfabric: {topology: {kind: rail-optimized}}\n",
             "t.yaml:1:51: cluster.gpus_per_node: ", "3 GPUs and 2 NICs per node (the preset's NICs per GPU; set "
             "cluster.nics_per_node)");
}

Test(gpu, gpus_sharing_a_nic_are_backpressured_over_pcie) {
  const char *yaml =
    "cluster: {node: aws-p4d, nodes: 2}\n"
    "fabric:\n"
    "  topology: {kind: single-switch}\n"
    "  link: {bandwidth: 100Gbps, latency: 1us, mtu: 4096}\n"
    "  switch: {buffer: 16MiB, priorities: 1}\n"
    "workload: {kind: flows, flows: [{src: 0, dst: 8, size: 16MiB}, {src: 1, dst: 9, size: 16MiB}]}\n";
  FabScenario *sc = testscen_load(yaml, NULL);
  FabResults res;
  testscen_run(sc, &res);
  /* GPUs 0 and 1 share NIC 0 (100 Gb/s): 32 MiB + RoCE headers through it */
  double ideal = 32.0 * 1048576 * 8 * (4178.0 / 4096) / 100e9;
  cr_assert_float_eq(fab_time_to_s(res.sim_time), ideal, ideal * 0.02);
  cr_assert_leq(res.max_queue_bytes, 256 << 10, "PCIe credits hold the GPUs back: no deep queue (%" G_GUINT64_FORMAT ")",
                res.max_queue_bytes);
  cr_assert_eq(res.drops, 0);
  testscen_done(sc, &res);
}

Test(gpu, an_nvlink_incast_is_backpressured_not_queued) {
  const char *yaml =
    "cluster: {node: dgx-h100, nodes: 1}\n"
    "fabric:\n"
    "  topology: {kind: single-switch}\n"
    "  link: {bandwidth: 400Gbps}\n"
    "workload: {kind: incast, senders: 7, receiver: 0, size: 16MiB}\n";
  FabScenario *sc = testscen_load(yaml, NULL);
  FabResults res;
  testscen_run(sc, &res);
  double ideal = 7 * 16.0 * 1048576 / 370.8e9;
  cr_assert_float_eq(fab_time_to_s(res.sim_time), ideal, ideal * 0.03);
  cr_assert_leq(res.max_queue_bytes, 8 << 20, "at most the NVSwitch's credits for 7 ports");
  testscen_done(sc, &res);
}

/* NVLS as NCCL runs it: a reduce-scatter through the switch, then each
** owner's multicast store. Per GPU: out 1024 contributions + 128 stores,
** in 128 reduced segments + 1024 copies; every NVLS segment is 64 KiB of
** data in 65536 + 16 wire bytes (NVLS efficiency 1). One channel of one
** loop (a chunk of S / 8 a head), without the step costs (nvls_step 0):
** the run is bound by the serialisation. */
Test(gpu, nvls_allreduce_is_a_reduce_scatter_then_a_multicast) {
  const char *yaml =
    "cluster: {node: dgx-h100, nodes: 1, nccl: {nvls_step: 0us, channel_share: false}}\n"
    "fabric:\n"
    "  topology: {kind: single-switch}\n"
    "  link: {bandwidth: 400Gbps}\n"
    "workload: {kind: collective, op: allreduce, algorithm: nvls, size: 64MiB, channels: 1, chunk: 8MiB}\n";
  FabScenario *sc = testscen_load(yaml, NULL);
  cr_assert(sc->fabric.gpu.nvls);
  cr_assert_float_eq(sc->fabric.gpu.nvls_eff, 1.0, 1e-12);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(res.n_colls, 1);
  cr_assert_eq(res.colls[0].ranks, 8);
  uint64_t wire = 65536 + 16;
  for (int g = 0; g < 8; g++) {
    char up[16], down[16];
    g_snprintf(up, sizeof up, "gpu%d:p1", g);
    g_snprintf(down, sizeof down, "nvs0:p%d", g);
    cr_assert_eq(testscen_bytes_from(&res, up), (1024 + 128) * wire, "GPU %d: S up, S/8 stored", g);
    cr_assert_eq(testscen_bytes_from(&res, down), (128 + 1024) * wire, "GPU %d: S/8 reduced, S multicast", g);
  }
  /* serialisation-bound: 1152 segments out of each GPU (176786 ps each at
  ** 2.9664 Tb/s) plus the 500 ns NVLink latency; at most another 500 ns (the
  ** last segment crosses the NVLink four times: up, reduced, stored, copied)
  ** and four segments (each crossing stores one) of pipeline drain */
  fab_time_t seg = (wire * 8 * FAB_S + 2966400000000ULL - 1) / 2966400000000ULL;
  cr_assert_eq(seg, 176786);
  fab_time_t pre = 0; /* the protocol latency before the data leaves (coll_nvls.c): a channel's first loop's */
  for (uint32_t i = 0; i < fab_dag_len(sc->dag); i++)
    if (fab_dag_op(sc->dag, i)->kind == FAB_OP_NVLS) pre = MAX(pre, fab_dag_op(sc->dag, i)->pre);
  cr_assert_eq(pre, 28620 * FAB_NS, "launch 6.05 us + the NVLS start 22.57 us: %" G_GUINT64_FORMAT, pre);
  fab_time_t lo = pre + 500 * FAB_NS + 1152 * seg, t = res.colls[0].end - res.colls[0].start;
  cr_assert(t >= lo && t <= lo + 500 * FAB_NS + 4 * seg, "%" G_GUINT64_FORMAT " ps, bounds [%" G_GUINT64_FORMAT
            ", +500 ns + 4 x %" G_GUINT64_FORMAT "]", t, lo, seg);
  char *js = fab_json_summary(&res);
  cr_assert(strstr(js, "\"collectives\": [{\"op\": \"allreduce\", \"bytes\": 67108864, \"count\": 16777216, "
                       "\"dtype_bytes\": 4, \"ranks\": 8, \"root\": -1, \"algorithm\": \"nvls\""),
            "%s", js);
  cr_assert(strstr(js, "\"busbw_GBps\": "), "%s", js);
  g_free(js);
  testscen_done(sc, &res);
}

/* The NVLS kernel's start (cluster.nccl.nvls_sync) is paid once a rank,
** before its first piece: a small NVLS allreduce, and a 2-domain NVLS-tree
** one, take exactly the difference in nvls_sync longer; a ring, none. */
static fab_time_t coll_time(const char *algo, uint32_t nodes, const char *sync) {
  char *yaml = g_strdup_printf("cluster: {node: dgx-h100, nodes: %u, nccl: {nvls_sync: %s}}\n"
                               "fabric: {topology: {kind: single-switch}, link: {bandwidth: 400Gbps}}\n"
                               "workload: {kind: collective, op: allreduce, algorithm: %s, size: 64KiB}\n",
                               nodes, sync, algo);
  FabScenario *sc = testscen_load(yaml, NULL);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(res.n_colls, 1);
  cr_assert_str_eq(res.colls[0].algorithm, algo);
  fab_time_t t = res.colls[0].end - res.colls[0].start;
  testscen_done(sc, &res);
  g_free(yaml);
  return t;
}

Test(gpu, nvls_kernel_start_is_paid_once_a_rank) {
  cr_assert_eq(coll_time("nvls", 1, "10us") - coll_time("nvls", 1, "0us"), 10 * FAB_US);
  cr_assert_eq(coll_time("nvls-tree", 2, "10us") - coll_time("nvls-tree", 2, "0us"), 10 * FAB_US);
  cr_assert_eq(coll_time("ring", 1, "10us"), coll_time("ring", 1, "0us"), "a ring has no NVLS start");
}

static fab_time_t nvls_time(const char *step, const char *size) {
  char *yaml = g_strdup_printf("cluster: {node: dgx-h100, nodes: 1, nccl: {nvls_step: %s}}\n"
                               "fabric: {topology: {kind: single-switch}, link: {bandwidth: 400Gbps}}\n"
                               "workload: {kind: collective, op: allreduce, algorithm: nvls, size: %s, channels: 1}\n",
                               step, size);
  FabScenario *sc = testscen_load(yaml, NULL);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(g_array_index(sc->dag->colls, FabCollDef, 0).chunk, 131072,
               "NCCL's NVLS chunk: 128 KiB (64 MiB is 64 x 8 ranks x 128 KiB)");
  fab_time_t t = res.colls[0].end - res.colls[0].start;
  testscen_done(sc, &res);
  g_free(yaml);
  return t;
}

/* NVLS loop by loop (coll_nvls.c): on one channel a rank's loops run one
** after another, each paying nvls_step for every chunk it covers before
** its data moves. 64 MiB on 8 ranks in 128 KiB chunks is 64 loops of 8
** chunks: 512 steps on the way, so each us of nvls_step adds exactly 512 us. */
Test(gpu, nvls_steps_are_paid_a_chunk_on_a_channel_s_path) {
  fab_time_t t0 = nvls_time("0us", "64MiB");
  cr_assert_eq(nvls_time("1us", "64MiB") - t0, 512 * FAB_US);
  cr_assert_eq(nvls_time("2500ns", "64MiB") - t0, 1280 * FAB_US);
}

/* A ring allreduce on one B200 (32 channels, LL128) over NVLink, in
** segments of `seg`: its time in picoseconds. */
static fab_time_t b200_ring_time(const char *seg, uint64_t bytes) {
  char *yaml = g_strdup_printf("cluster: {node: dgx-b200, nodes: 1, nvlink: {segment: %s}}\n"
                               "fabric: {topology: {kind: single-switch}, link: {bandwidth: 400Gbps}}\n"
                               "workload: {kind: collective, op: allreduce, algorithm: ring, protocol: ll128, "
                               "size: %" G_GUINT64_FORMAT "}\n",
                               seg, bytes);
  FabScenario *sc = testscen_load(yaml, NULL);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(res.colls[0].channels, 32);
  fab_time_t t = res.colls[0].end - res.colls[0].start;
  testscen_done(sc, &res);
  g_free(yaml);
  return t;
}

/* Channels stream their pieces over NVLink (models/nic.h): the time does not
** hang on the segment size. 15,728,640 bytes make pieces of one 64 KiB
** segment, 16,000,000 pieces of two; in 64 KiB segments the larger took
** 101.8 us against 65.1 when segments were made whole and then sent (the 32
** channels' first segments queued behind one another), 63.7 us in 4 KiB
** segments. Now 2 % more bytes take at most 2 % more time, and 64 KiB
** segments give 4 KiB's time within 2 %. */
Test(gpu, ring_pieces_stream_over_nvlink_in_any_segment_size) {
  fab_time_t small = b200_ring_time("64KiB", 15728640), big = b200_ring_time("64KiB", 16000000);
  cr_assert_leq((double)big / (double)small, 16000000.0 / 15728640.0 * 1.02, "%" G_GUINT64_FORMAT " ps against %"
                G_GUINT64_FORMAT, big, small);
  fab_time_t fine = b200_ring_time("4KiB", 16000000);
  cr_assert_leq(fabs((double)big / (double)fine - 1), 0.02, "64 KiB %" G_GUINT64_FORMAT " ps, 4 KiB %" G_GUINT64_FORMAT,
                big, fine);
}

/* NVLS reduce-scatter and allgather inside one node, as NCCL's NVLS kernels
** run them: a reduce-scatter sends all of S into the switch and gets S/8
** reduced back (multimem.ld_reduce); an allgather stores its S/8 once and
** gets every rank's part, its own included (multimem.st): S. Both are
** bound by 1024 segments (64 MiB in 64 KiB) on one direction of each GPU's
** NVLink, as the allreduce above by 1152 (one channel of one loop, no step
** costs, as above). */
Test(gpu, nvls_reduce_scatter_and_allgather_move_what_nccl_moves) {
  static const char *const ops[] = {"reduce-scatter", "allgather"};
  for (int k = 0; k < 2; k++) {
    char *yaml = g_strdup_printf("cluster: {node: dgx-h100, nodes: 1, nccl: {nvls_step: 0us, channel_share: false}}\n"
                                 "fabric:\n"
                                 "  topology: {kind: single-switch}\n"
                                 "  link: {bandwidth: 400Gbps}\n"
                                 "workload: {kind: collective, op: %s, algorithm: nvls, size: 64MiB, channels: 1, "
                                 "chunk: 8MiB}\n", ops[k]);
    FabScenario *sc = testscen_load(yaml, NULL);
    FabResults res;
    testscen_run(sc, &res);
    cr_assert_eq(res.n_colls, 1);
    cr_assert_str_eq(res.colls[0].algorithm, "nvls");
    uint64_t wire = 65536 + 16, up = k == 0 ? 1024 : 128, down = k == 0 ? 128 : 1024;
    for (int g = 0; g < 8; g++) {
      char gp[16], sp[16];
      g_snprintf(gp, sizeof gp, "gpu%d:p1", g);
      g_snprintf(sp, sizeof sp, "nvs0:p%d", g);
      cr_assert_eq(testscen_bytes_from(&res, gp), up * wire, "%s, GPU %d: %" G_GUINT64_FORMAT " segments up", ops[k], g,
                   up);
      cr_assert_eq(testscen_bytes_from(&res, sp), down * wire, "%s, GPU %d: %" G_GUINT64_FORMAT " segments down", ops[k],
                   g, down);
    }
    fab_time_t seg = 176786, pre = 0;
    for (uint32_t i = 0; i < fab_dag_len(sc->dag); i++)
      if (fab_dag_op(sc->dag, i)->kind == FAB_OP_NVLS) pre = MAX(pre, fab_dag_op(sc->dag, i)->pre);
    fab_time_t lo = pre + 500 * FAB_NS + 1024 * seg, t = res.colls[0].end - res.colls[0].start;
    cr_assert(t >= lo && t <= lo + 1000 * FAB_NS + 4 * seg, "%s: %" G_GUINT64_FORMAT " ps, from %" G_GUINT64_FORMAT,
              ops[k], t, lo);
    testscen_done(sc, &res);
    g_free(yaml);
  }
}

Test(gpu, nvls_over_a_subset_of_ranks_across_nvl72_trays) {
  const char *yaml =
    "cluster: {node: gb200-nvl72, nodes: 18}\n"
    "fabric:\n"
    "  topology: {kind: leaf-spine, hosts_per_leaf: 8, spines: 8}\n"
    "  link: {bandwidth: 400Gbps}\n"
    "  switch: {priorities: 1}\n"
    "workload: {kind: collective, algorithm: nvls, size: 1MiB, ranks: [0, 5, 40, 71]}\n";
  FabScenario *sc = testscen_load(yaml, NULL);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(res.colls[0].ranks, 4);
  cr_assert_neq(res.colls[0].end, 0);
  cr_assert_eq(testscen_bytes_from(&res, "gpu1:p1"), 0, "non-members stay out");
  cr_assert_eq(testscen_bytes_from(&res, "leaf") + testscen_bytes_from(&res, "spine"), 0);
  testscen_done(sc, &res);
}

static const char multirail[] =
  "cluster: {node: dgx-h100, nodes: 4, pxn: true}\n"
  "fabric:\n"
  "  transport: infiniband\n"
  "  topology: {kind: multi-rail, hosts_per_leaf: 2, spines: 2}\n"
  "  link: {bandwidth: 400Gbps, latency: 500ns, mtu: 4096}\n"
  "  switch: {buffer: 64MiB, priorities: 1}\n"
  "workload: {kind: flows, flows: [{src: 1, dst: 26, size: 4MiB}]}\n";

Test(gpu, multi_rail_planes_stay_apart_and_pxn_relays_through_nvlink) {
  FabScenario *sc = testscen_load(multirail, NULL);
  cr_assert_str_eq(sc->topology, "multi-rail: 8 planes, each 2 leaves x 2 nodes, 2 spines");
  FabResults res;
  testscen_run(sc, &res);
  /* GPU 1 (node 0, rail 1) -> GPU 26 (node 3, rail 2): NVLink to GPU 2 of node
  ** 0, its NIC on plane 2, plane 2 to node 3's NIC 2, then GPU 26 */
  cr_assert_gt(testscen_bytes_from(&res, "gpu1:p1"), 4 << 20, "out over NVLink");
  cr_assert_gt(testscen_bytes_from(&res, "gpu2:p0"), 4 << 20, "relayed by GPU 2 to its NIC");
  cr_assert_gt(testscen_bytes_from(&res, "p2.leaf"), 4 << 20, "across plane 2");
  /* the ACKs relay the other way: GPU 26 -> NVLink -> GPU 25 (rail 1) -> plane 1 -> GPU 1 */
  uint64_t acks = testscen_bytes_from(&res, "p1.leaf");
  cr_assert(acks > 0 && acks < (4 << 20) / 20, "plane 1 carries only the ACKs (%" G_GUINT64_FORMAT " B)", acks);
  cr_assert_gt(testscen_bytes_from(&res, "gpu25:p0"), 0, "relayed by GPU 25");
  cr_assert_eq(testscen_bytes_from(&res, "gpu1:p0"), 0, "GPU 1's own NIC stays idle");
  testscen_done(sc, &res);
}

Test(gpu, multi_rail_without_pxn_rejects_cross_rail_flows) {
  const char *sets[] = {"cluster.pxn=false", NULL};
  char *path = NULL;
  int fd = g_file_open_tmp("fabsim-mr-XXXXXX.yaml", &path, NULL);
  close(fd);
  g_file_set_contents(path, multirail, -1, NULL);
  GError *err = NULL;
  FabScenario *sc = fab_scenario_load(path, sets, &err);
  cr_assert_null(sc);
  cr_assert(strstr(err->message, "workload.flows[0].dst: GPU 1 and GPU 26 are on different rails"), "%s", err->message);
  cr_assert(strstr(err->message, ":7:"), "located at the flow: %s", err->message);
  g_error_free(err);
  g_unlink(path);
  g_free(path);
  /* the same rail needs no relay */
  const char *same[] = {"cluster.pxn=false", "workload.flows[0].dst=25", NULL};
  FabScenario *ok = testscen_load(multirail, same);
  FabResults res;
  testscen_run(ok, &res);
  cr_assert_gt(testscen_bytes_from(&res, "p1.leaf"), 4 << 20);
  testscen_done(ok, &res);
}

/* rail-only (Wang et al., "Rail-only", arXiv 2307.12169): the rail switches
** and nothing above them. 4 DGX H100: the 8 spines of rail-optimized fewer
** (8 rail switches of 4 ports); GPU 1 -> GPU 26
** relays as on multi-rail (NVLink to GPU 2, rail 2, node 3's NIC 2); the
** same flow without PXN is refused; an all-to-all takes the time it takes
** on rail-optimized with PXN (whose spines then carry nothing). */
Test(gpu, rail_only_has_rail_switches_alone_and_relays_across_rails) {
  const char *sets[] = {"fabric.topology={kind: rail-only}", NULL};
  FabScenario *sc = testscen_load(multirail, sets);
  cr_assert_str_eq(sc->topology, "rail-only: 8 rails x 4 nodes, no spines (across rails through NVLink: PXN)");
  const char *ro_sets[] = {"fabric.topology={kind: rail-optimized}", NULL};
  FabScenario *ro = testscen_load(multirail, ro_sets);
  FabFootprint fp = fab_topology_footprint(&sc->fabric), fo = fab_topology_footprint(&ro->fabric);
  cr_assert_eq(fp.switches + 8, fo.switches, "the 8 spines fewer: %" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT,
               fp.switches, fo.switches);
  fab_scenario_free(ro);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_gt(testscen_bytes_from(&res, "gpu1:p1"), 4 << 20, "out over NVLink");
  cr_assert_gt(testscen_bytes_from(&res, "gpu2:p0"), 4 << 20, "relayed by GPU 2 to its NIC");
  cr_assert_gt(testscen_bytes_from(&res, "rail2"), 4 << 20, "across rail 2");
  cr_assert_eq(testscen_bytes_from(&res, "gpu1:p0"), 0, "GPU 1's own NIC stays idle");
  testscen_done(sc, &res);
  const char *a2a[] = {"fabric.topology={kind: rail-only}", "workload={kind: collective, op: all-to-all, size: 32MiB}",
                       NULL};
  const char *a2a_ro[] = {"workload={kind: collective, op: all-to-all, size: 32MiB}",
                          "fabric.topology={kind: rail-optimized}", NULL};
  FabScenario *x = testscen_load(multirail, a2a), *y = testscen_load(multirail, a2a_ro);
  FabResults rx, ry;
  testscen_run(x, &rx);
  testscen_run(y, &ry);
  cr_assert_eq(rx.sim_time, ry.sim_time, "PXN keeps the spines idle: the same time");
  cr_assert_eq(testscen_bytes_from(&ry, "spine"), 0);
  testscen_done(x, &rx);
  testscen_done(y, &ry);
  char *path = NULL;
  int fd = g_file_open_tmp("fabsim-ro-XXXXXX.yaml", &path, NULL);
  close(fd);
  g_file_set_contents(path, multirail, -1, NULL);
  const char *nopxn[] = {"fabric.topology={kind: rail-only}", "cluster.pxn=false", NULL};
  GError *err = NULL;
  cr_assert_null(fab_scenario_load(path, nopxn, &err));
  cr_assert(strstr(err->message, "different rails of a rail-only fabric"), "%s", err->message);
  g_clear_error(&err);
  const char *spines[] = {"fabric.topology={kind: rail-only, spines: 2}", NULL};
  cr_assert_null(fab_scenario_load(path, spines, &err));
  cr_assert(strstr(err->message, "spines: not used by this topology kind"), "%s", err->message);
  g_error_free(err);
  g_unlink(path);
  g_free(path);
}

/* PXN: GPU 1 -> GPU 26 relays through GPU 2's NIC, which also carries GPU
** 2's own 64 MiB to GPU 26. The NIC serves the two connections in turn, a
** packet each, so both end together at 128 MiB / 50 GB/s (+ headers), with
** no timer firing although the relayed packets wait longer than the 1 ms
** RTO. Relayed packets ahead of the port's own pull starved GPU 2's flow
** (the relayed one ended at half the time, the other's first packets timed
** out); on a 4-node rail-only all-to-all, every NIC's own flows did. */
Test(gpu, pxn_relay_shares_the_nic_with_its_own_flows) {
  const char *sets[] = {"fabric.topology={kind: rail-only}",
                        "workload.flows=[{src: 1, dst: 26, size: 64MiB}, {src: 2, dst: 26, size: 64MiB}]", NULL};
  FabScenario *sc = testscen_load(multirail, sets);
  FabResults res;
  testscen_run(sc, &res);
  double lo = 128.0 * 1048576 / 50e9, a = fab_time_to_s(res.flows[0].end), b = fab_time_to_s(res.flows[1].end);
  cr_assert_geq(MIN(a, b), lo, "%.9f and %.9f s: neither ends before the NIC could send both", a, b);
  cr_assert_leq(MAX(a, b), 1.01 * lo, "%.9f and %.9f s against %.9f: the NIC idled", a, b, lo);
  cr_assert_eq(res.retransmits, 0);
  cr_assert_gt(testscen_bytes_from(&res, "gpu2:p0"), 128 << 20, "both through GPU 2's NIC");
  testscen_done(sc, &res);
  /* cut at 1 ms, the relay still holding packets: they count as in flight, not as lost (conservation holds) */
  const char *cut[] = {sets[0], sets[1], "stop_time=1ms", NULL};
  sc = testscen_load(multirail, cut);
  FabRunOpts o = {0};
  cr_assert_eq(fab_run(sc, &o, &res), 1, "the flows are not done by then");
  cr_assert(strstr(res.failure, "stop_time reached") && !strstr(res.failure, "internal error"), "%s", res.failure);
  testscen_done(sc, &res);
  const char *a2a[] = {"fabric.topology={kind: rail-only}", "workload={kind: collective, op: all-to-all, size: 64MiB}",
                       NULL};
  FabScenario *x = testscen_load(multirail, a2a);
  testscen_run(x, &res);
  /* each NIC sends its GPU's and 7 neighbours' blocks for the 3 GPUs of its rail on the other nodes: 24 / 32 of S */
  double t = (double)(res.colls[0].end - res.colls[0].start) / FAB_S;
  lo = 0.75 * 64 * 1048576 / 50e9;
  cr_assert_geq(t, lo, "%.6f s: faster than the NICs", t);
  cr_assert_leq(t, 1.08 * lo, "%.6f s against %.6f: the NICs idled", t, lo);
  cr_assert_eq(res.retransmits, 0);
  testscen_done(x, &res);
}

/* An all-to-all over 2 DGX H100 on 400 Gb/s InfiniBand rails, as NCCL
** schedules it (every peer at once): each GPU's NIC carries its blocks for
** the 8 GPUs of the other node, S / 2 bytes, so the time is at least S / 2
** at 50 GB/s and, the NICs never idle, at most 8 % more (headers, the
** launch and the first pieces' way); bus bandwidth about twice a NIC's, as
** NVIDIA says it should be (nccl-tests#130). Rounds one after another on
** each channel took 4.9x the bound at 1 GiB (19.1 GB/s bus bandwidth). */
Test(gpu, all_to_all_on_two_nodes_keeps_every_nic_busy) {
  static const char yaml[] =
    "cluster: {node: dgx-h100, nodes: 2}\n"
    "fabric:\n"
    "  transport: infiniband\n"
    "  topology: {kind: rail-optimized}\n"
    "  link: {bandwidth: 400Gbps, latency: 500ns, mtu: 4096}\n"
    "  switch: {latency: 300ns, buffer: 64MiB, priorities: 1}\n"
    "workload: {kind: collective, op: all-to-all, size: 256MiB}\n";
  FabScenario *sc = testscen_load(yaml, NULL);
  FabResults res;
  testscen_run(sc, &res);
  double t = (double)(res.colls[0].end - res.colls[0].start) / FAB_S, lo = 128.0 * 1048576 / 50e9;
  cr_assert_geq(t, lo, "%.6f s: faster than the NICs", t);
  cr_assert_leq(t, 1.08 * lo, "%.6f s against %.6f: the NICs idled", t, lo);
  cr_assert_eq(res.retransmits, 0);
  testscen_done(sc, &res);
}

Test(gpu, rail_optimized_with_pxn_relays_instead_of_the_spines) {
  const char *sets[] = {"workload.flows[0].dst=10", "cluster.pxn=true", NULL};
  FabScenario *sc = testscen_load(rails, sets);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(res.nvlink_segment, 65536, "the results state the NVLink fidelity");
  cr_assert_lt(testscen_bytes_from(&res, "spine"), 1 << 16, "the data skips the spines (ACKs may use them)");
  cr_assert_gt(testscen_bytes_from(&res, "gpu2:p0"), 1 << 20, "GPU 2 of node 0 relays onto rail 2");
  cr_assert_gt(testscen_bytes_from(&res, "rail2:"), 1 << 20);
  testscen_done(sc, &res);
}

/* A ring channel over NVLink moves at most its share of the rings' bandwidth as NCCL's search sets it: on DGX H100
** 24 channels share 370.8 GB/s (NCCL's 20.6 x 18 links), 15.45 GB/s each, so a one-channel ring allreduce's bus
** bandwidth (each GPU sends 2(n-1)/n of S at its channel's rate) is just under 15.45; without the share it runs at
** the Simple ceiling (38.7, NCCL's perChMaxTreeBws). With the fence (NCCL's fence before each Simple slice's flag)
** each piece on a connection is posted only once the one before it there is done; without it, the next one is
** under way while the one before is still arriving. */
static const char h100_one_channel[] =
  "cluster: {node: dgx-h100, nodes: 1}\n"
  "fabric: {transport: infiniband, topology: {kind: single-switch}, link: {bandwidth: 400Gbps, latency: 500ns}}\n"
  "workload: {kind: collective, op: allreduce, size: 64MiB, algorithm: ring, protocol: simple, channels: 1}\n";

static double one_channel_busbw(const char *const *sets, bool *fenced) {
  FabScenario *sc = testscen_load(h100_one_channel, sets);
  FabResults res;
  testscen_run(sc, &res);
  double bus = res.colls[0].busbw_GBps;
  *fenced = true;
  for (size_t i = 0; i < res.n_flows; i++) /* flows in workload order: a connection's pieces in its order */
    for (size_t j = i + 1; j < res.n_flows; j++)
      if (res.flows[j].src == res.flows[i].src && res.flows[j].dst == res.flows[i].dst) {
        if (res.flows[j].start < res.flows[i].end) *fenced = false;
        break;
      }
  testscen_done(sc, &res);
  return bus;
}

Test(gpu, ring_channel_takes_its_share_and_fences_its_slices) {
  bool fenced;
  const char *off[] = {"cluster.nccl.fence=false", NULL};
  double bus = one_channel_busbw(off, &fenced);
  cr_assert(bus > 0.95 * 370.8 / 24 && bus <= 1.01 * 370.8 / 24, "%.3f GB/s against a share of %.3f", bus, 370.8 / 24);
  cr_assert_not(fenced, "without the fence a piece starts while the one before it arrives");
  const char *free_[] = {"cluster.nccl.fence=false", "cluster.nccl.channel_share=false", NULL};
  bus = one_channel_busbw(free_, &fenced);
  cr_assert(bus > 0.95 * 38.7 && bus <= 1.01 * 38.7, "%.3f GB/s against the Simple ceiling 38.7", bus);
  const char *on[] = {NULL};
  double fb = one_channel_busbw(on, &fenced);
  cr_assert(fenced, "every piece waits for the one before it on its connection");
  cr_assert_lt(fb, 370.8 / 24, "%.3f GB/s", fb);
}

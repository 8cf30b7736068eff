/* Topology builders: the networks (single switch, leaf-spine, fat-tree,
** ring, rail-optimized, multi-rail) and the whole fabric. See topology.h;
** the GPU nodes' PCIe and NVLink edges are in gpu_nodes.c. */
#include "build_int.h"
#include "graph.h"
#include <string.h>

/* ---- building ---------------------------------------------------------- */

static FabSwitch *add_switch(FabTopology *t, const FabFabricCfg *cfg, const char *prefix, uint32_t i,
                             uint32_t nports) {
  char name[FAB_NAME_LEN];
  g_snprintf(name, sizeof name, "%s%u", prefix, i);
  FabSwitchCfg sc = cfg->sw;
  const char *tier = strchr(prefix, '.') ? strchr(prefix, '.') + 1 : prefix; /* multi-rail: "p3.leaf" */
  for (uint32_t k = 0; k < cfg->ntiers; k++)
    if (!strcmp(tier, cfg->tier_name[k])) sc.routing = cfg->tier_routing[k];
  sc.tier = !strcmp(tier, "core") ? 2 : !strcmp(tier, "spine") || !strcmp(tier, "agg") ? 1 : 0;
  FabSwitch *sw = fab_switch_new(name, &sc, nports, t->nattach);
  t->switches[t->nswitches++] = sw;
  return sw;
}

/* Join host h to port `p` of `sw`. */
/* Join network attachment h (a host's NIC, or a GPU node's NIC port) to port p of sw. */
static void link_host(FabTopology *t, uint32_t h, FabSwitch *sw, uint32_t p) {
  FabPort *a = t->attach[h];
  fab_port_set_rate(a, t->spec.host_bps);
  a->latency = t->spec.link_latency;
  fab_port_connect(a, fab_switch_port_init(sw, p, t->spec.host_bps, t->spec.link_latency));
}

static void link_switches(FabTopology *t, FabSwitch *a, uint32_t pa, FabSwitch *b, uint32_t pb) {
  fab_port_connect(fab_switch_port_init(a, pa, t->spec.link_bps, t->spec.link_latency),
                   fab_switch_port_init(b, pb, t->spec.link_bps, t->spec.link_latency));
}

/* Route every endpoint in [lo, hi) to the single port p. */
static void route_range_to_port(FabSwitch *sw, uint32_t lo, uint32_t hi, uint32_t p) {
  uint32_t g = fab_switch_add_group(sw, &p, 1);
  for (uint32_t d = lo; d < hi; d++) fab_switch_set_route(sw, d, g);
}

/* Route every endpoint outside [lo, hi) to the group of ports [p0, p0+n). */
static void route_others_to_group(FabSwitch *sw, uint32_t lo, uint32_t hi, uint32_t p0, uint32_t n) {
  uint32_t *ports = g_new(uint32_t, n);
  for (uint32_t i = 0; i < n; i++) ports[i] = p0 + i;
  uint32_t g = fab_switch_add_group(sw, ports, n);
  g_free(ports);
  for (uint32_t d = 0; d < fab_switch_nendpoints(sw); d++)
    if (d < lo || d >= hi) fab_switch_set_route(sw, d, g);
}

static void build_single(FabTopology *t, const FabFabricCfg *cfg) {
  FabSwitch *sw = add_switch(t, cfg, "switch", 0, t->nattach);
  for (uint32_t h = 0; h < t->nattach; h++) {
    link_host(t, h, sw, h);
    route_range_to_port(sw, h, h + 1, h);
  }
}

static void build_leaf_spine(FabTopology *t, const FabFabricCfg *cfg) {
  const FabTopoSpec *s = &t->spec;
  uint32_t hpl = s->hosts_per_leaf, L = s->leaves, S = s->spines;
  for (uint32_t l = 0; l < L; l++) add_switch(t, cfg, "leaf", l, hpl + S);
  for (uint32_t j = 0; j < S; j++) add_switch(t, cfg, "spine", j, L);
  for (uint32_t l = 0; l < L; l++) {
    FabSwitch *leaf = t->switches[l];
    for (uint32_t i = 0; i < hpl; i++) {
      link_host(t, l * hpl + i, leaf, i);
      route_range_to_port(leaf, l * hpl + i, l * hpl + i + 1, i);
    }
    route_others_to_group(leaf, l * hpl, (l + 1) * hpl, hpl, S);
    for (uint32_t j = 0; j < S; j++) link_switches(t, leaf, hpl + j, t->switches[L + j], l);
  }
  for (uint32_t j = 0; j < S; j++)
    for (uint32_t l = 0; l < L; l++) route_range_to_port(t->switches[L + j], l * hpl, (l + 1) * hpl, l);
}

static void build_ring(FabTopology *t, const FabFabricCfg *cfg) {
  uint32_t n = t->spec.leaves, h = t->spec.hosts_per_leaf;
  for (uint32_t s = 0; s < n; s++) add_switch(t, cfg, "ring", s, h + 2);
  for (uint32_t s = 0; s < n; s++) { /* port h: clockwise out to the next; h+1: from the previous */
    FabSwitch *sw = t->switches[s];
    for (uint32_t i = 0; i < h; i++) {
      link_host(t, s * h + i, sw, i);
      route_range_to_port(sw, s * h + i, s * h + i + 1, i);
    }
    route_others_to_group(sw, s * h, (s + 1) * h, h, 1);
    link_switches(t, sw, h, t->switches[(s + 1) % n], h + 1);
  }
}

/* Rail i joins NIC i of every node (attachment n x rails + i on port n); every
** rail switch has one uplink to each spine, and spine j one port per rail. */
static void build_rail(FabTopology *t, const FabFabricCfg *cfg) {
  uint32_t R = t->spec.leaves, nodes = t->spec.hosts_per_leaf, S = t->spec.spines;
  for (uint32_t r = 0; r < R; r++) add_switch(t, cfg, "rail", r, nodes + S);
  for (uint32_t j = 0; j < S; j++) add_switch(t, cfg, "spine", j, R);
  uint32_t *up = g_new(uint32_t, S);
  for (uint32_t j = 0; j < S; j++) up[j] = nodes + j;
  for (uint32_t r = 0; r < R; r++) {
    FabSwitch *rs = t->switches[r];
    uint32_t g = fab_switch_add_group(rs, up, S);
    for (uint32_t a = 0; a < t->nattach; a++) fab_switch_set_route(rs, a, g);
    for (uint32_t n = 0; n < nodes; n++) {
      link_host(t, n * R + r, rs, n);
      route_range_to_port(rs, n * R + r, n * R + r + 1, n);
    }
    for (uint32_t j = 0; j < S; j++) link_switches(t, rs, nodes + j, t->switches[R + j], r);
  }
  g_free(up);
  for (uint32_t j = 0; j < S; j++) {
    FabSwitch *sp = t->switches[R + j];
    uint32_t *grp = g_new(uint32_t, R);
    for (uint32_t r = 0; r < R; r++) grp[r] = fab_switch_add_group(sp, &r, 1);
    for (uint32_t a = 0; a < t->nattach; a++) fab_switch_set_route(sp, a, grp[a % R]);
    g_free(grp);
  }
}

/* One leaf-spine plane per rail: leaf l of plane p holds NIC p of nodes
** [l x hpl, (l+1) x hpl) (attachment node x planes + p). Other planes' NICs
** have no route: the planes are not joined. */
static void build_multi_rail(FabTopology *t, const FabFabricCfg *cfg) {
  uint32_t P = t->spec.k, L = t->spec.leaves, H = t->spec.hosts_per_leaf, S = t->spec.spines;
  char name[FAB_NAME_LEN];
  for (uint32_t p = 0; p < P; p++) {
    uint32_t base = t->nswitches;
    for (uint32_t l = 0; l < L; l++) {
      if (t->spec.kind == FAB_TOPO_RAIL_ONLY) /* one switch per rail: rail<p> */
        add_switch(t, cfg, "rail", p, H);
      else {
        g_snprintf(name, sizeof name, "p%u.leaf", p);
        add_switch(t, cfg, name, l, H + S);
      }
    }
    for (uint32_t j = 0; j < S; j++) {
      g_snprintf(name, sizeof name, "p%u.spine", p);
      add_switch(t, cfg, name, j, L);
    }
    uint32_t *up = g_new(uint32_t, S);
    for (uint32_t j = 0; j < S; j++) up[j] = H + j;
    for (uint32_t l = 0; l < L; l++) {
      FabSwitch *leaf = t->switches[base + l];
      if (S) { /* rail-only: none, and each plane one leaf */
        uint32_t g = fab_switch_add_group(leaf, up, S);
        for (uint32_t n = 0; n < L * H; n++) fab_switch_set_route(leaf, n * P + p, g);
      }
      for (uint32_t i = 0; i < H; i++) {
        uint32_t a = (l * H + i) * P + p;
        link_host(t, a, leaf, i);
        route_range_to_port(leaf, a, a + 1, i);
      }
      for (uint32_t j = 0; j < S; j++) link_switches(t, leaf, H + j, t->switches[base + L + j], l);
    }
    g_free(up);
    for (uint32_t j = 0; j < S; j++) {
      FabSwitch *sp = t->switches[base + L + j];
      for (uint32_t l = 0; l < L; l++) {
        uint32_t g = fab_switch_add_group(sp, &l, 1);
        for (uint32_t i = 0; i < H; i++) fab_switch_set_route(sp, (l * H + i) * P + p, g);
      }
    }
  }
}

static void build_fat_tree(FabTopology *t, const FabFabricCfg *cfg) {
  uint32_t k = t->spec.k, h = k / 2, hpe = t->spec.hosts_per_leaf;
  uint32_t nedge = k * h, ncore = h * h;
  uint32_t per_pod = h * hpe; /* hosts in a pod */
  for (uint32_t e = 0; e < nedge; e++) add_switch(t, cfg, "edge", e, hpe + h);
  for (uint32_t a = 0; a < nedge; a++) add_switch(t, cfg, "agg", a, k);
  for (uint32_t c = 0; c < ncore; c++) add_switch(t, cfg, "core", c, k);
  FabSwitch **edge = t->switches, **agg = t->switches + nedge, **core = t->switches + 2 * nedge;
  for (uint32_t e = 0; e < nedge; e++) { /* edge: hosts down, aggs of its pod up */
    uint32_t pod = e / h, lo = e * hpe;
    for (uint32_t i = 0; i < hpe; i++) {
      link_host(t, lo + i, edge[e], i);
      route_range_to_port(edge[e], lo + i, lo + i + 1, i);
    }
    for (uint32_t j = 0; j < h; j++) link_switches(t, edge[e], hpe + j, agg[pod * h + j], e % h);
    route_others_to_group(edge[e], lo, lo + hpe, hpe, h);
  }
  for (uint32_t a = 0; a < nedge; a++) { /* agg: edges of its pod down, cores up */
    uint32_t pod = a / h, j = a % h;
    for (uint32_t e = 0; e < h; e++) {
      uint32_t lo = (pod * h + e) * hpe;
      route_range_to_port(agg[a], lo, lo + hpe, e);
    }
    for (uint32_t c = 0; c < h; c++) link_switches(t, agg[a], h + c, core[j * h + c], pod);
    route_others_to_group(agg[a], pod * per_pod, (pod + 1) * per_pod, h, h);
  }
  for (uint32_t c = 0; c < ncore; c++) /* core: one port per pod */
    for (uint32_t pod = 0; pod < k; pod++) route_range_to_port(core[c], pod * per_pod, (pod + 1) * per_pod, pod);
}

/* The scenario's own graph (graph.h): switches in its order, each one's
** ports its hosts (attachment order) and then its links (list order, a
** group's switches in turn); routes come after (fab_topology_build: the
** shortest paths, as reroute.c finds them). */
static void build_graph(FabTopology *t, const FabFabricCfg *cfg) {
  FabGraph g;
  GError *err = NULL;
  static const char *const rail_tiers[] = {"rail", "spine", "core"}; /* routing_per_tier's words for rail-optimized */
  if (t->spec.kind == FAB_TOPO_RAIL)
    fab_graph_rail3(&g, t->spec.k, t->spec.pod_nodes, t->spec.leaves, t->spec.spines, t->spec.cores);
  else if (t->spec.kind == FAB_TOPO_LEAF_SPINE)
    fab_graph_dual_tor(&g, t->spec.leaves, t->spec.hosts_per_leaf, t->spec.spines, t->spec.dual_plane ? 2 : 1);
  else if (!fab_graph_read(t->spec.graph, &g, &err))
    g_error("internal error: the graph read before fails: %s", err->message);
  uint32_t *next = g_new0(uint32_t, g.nsw);
  for (uint32_t s = 0; s < g.nsw; s++) {
    FabSwitchCfg sc = cfg->sw;
    const char *tier = t->spec.kind == FAB_TOPO_RAIL ? rail_tiers[g.sw[s].tier] : fab_graph_tier_names[g.sw[s].tier];
    for (uint32_t k = 0; k < cfg->ntiers; k++)
      if (!strcmp(tier, cfg->tier_name[k])) sc.routing = cfg->tier_routing[k];
    sc.tier = (uint8_t)g.sw[s].tier;
    t->switches[t->nswitches++] = fab_switch_new(g.sw[s].name, &sc, g.sw[s].nports, t->nattach);
  }
  for (uint32_t a = 0; a < g.nattach; a++) {
    uint32_t s = g.attach_sw[a];
    link_host(t, a, t->switches[s], next[s]++);
  }
  for (uint32_t i = 0; i < g.nlinks; i++) {
    const FabGraphLink *l = &g.links[i];
    uint64_t bps = l->bps ? l->bps : t->spec.link_bps;
    fab_time_t lat = l->latency_set ? l->latency : t->spec.link_latency;
    fab_port_connect(fab_switch_port_init(t->switches[l->a], next[l->a]++, bps, lat),
                     fab_switch_port_init(t->switches[l->b], next[l->b]++, bps, lat));
  }
  g_free(next);
  fab_graph_clear(&g);
}

/* A port whose peer is a switch takes trains through at packet granularity. */
static void cut_through(FabPort *pt, const FabNicCfg *nic) {
  if (!pt->peer || !pt->peer->owner->relay) return;
  pt->cut_mtu = nic->mtu;
  pt->cut_ovh = nic->transport.data_overhead;
}

FabTopology *fab_topology_build(const FabFabricCfg *cfg) {
  FabTopology *t = g_new0(FabTopology, 1);
  const FabGpuSpec *g = &cfg->gpu;
  FabGpuLayout l = {0};
  t->spec = cfg->topo;
  t->nattach = cfg->topo.hosts;
  t->nhosts = g->gpus_per_node ? g->nodes * g->gpus_per_node : cfg->topo.hosts;
  t->nics = g_new0(FabNic, t->nhosts);
  t->gpus = g_new0(FabGpu, t->nhosts);
  t->attach = g_new0(FabPort *, t->nattach);
  FabNicCfg nc = cfg->nic;
  nc.bps = g->gpus_per_node ? (g->gpudirect ? g->pcie_bps : MIN(g->pcie_bps, g->host_bps)) : cfg->topo.host_bps;
  for (uint32_t h = 0; h < t->nhosts; h++) {
    fab_nic_init(&t->nics[h], h, &nc, NULL, NULL, NULL, NULL);
    fab_gpu_init(&t->gpus[h], h, NULL, NULL);
    if (g->gpus_per_node) {
      char name[FAB_NAME_LEN];
      g_snprintf(name, sizeof name, "gpu%u", h);
      fab_nic_set_name(&t->nics[h], name);
    }
    else t->attach[h] = &t->nics[h].port;
  }
  uint32_t nsw = 0;
  switch (cfg->topo.kind) {
  case FAB_TOPO_SINGLE_SWITCH: nsw = 1; break;
  case FAB_TOPO_LEAF_SPINE: nsw = cfg->topo.leaves + cfg->topo.spines; break;
  case FAB_TOPO_FAT_TREE: nsw = cfg->topo.k * cfg->topo.k + (cfg->topo.k / 2) * (cfg->topo.k / 2); break;
  case FAB_TOPO_RING: nsw = cfg->topo.leaves; break;
  case FAB_TOPO_RAIL:
    nsw = cfg->topo.pod_nodes ? cfg->topo.k * (cfg->topo.leaves + cfg->topo.spines) + cfg->topo.cores
                              : cfg->topo.leaves + cfg->topo.spines;
    break;
  case FAB_TOPO_MULTI_RAIL:
  case FAB_TOPO_RAIL_ONLY: nsw = cfg->topo.k * (cfg->topo.leaves + cfg->topo.spines); break;
  case FAB_TOPO_GRAPH: nsw = cfg->topo.leaves; break;
  }
  t->nnet = nsw;
  uint32_t extra = 0;
  if (g->gpus_per_node) {
    l = fab_topo__gpu_layout(g);
    extra = g->nodes * l.groups + fab_topo__nvl_switches(g, t->nhosts);
  }
  t->switches = g_new0(FabSwitch *, nsw + extra);
  if (g->gpus_per_node) { /* the edge elements first, so the network can attach to their NIC ports */
    t->nswitches = nsw; /* network switches take numbers 0..nsw-1 */
    fab_topo__build_gpu_edges(t, cfg, &l);
    t->nswitches = 0;
  }
  switch (cfg->topo.kind) {
  case FAB_TOPO_SINGLE_SWITCH: build_single(t, cfg); break;
  case FAB_TOPO_LEAF_SPINE:
    if (cfg->topo.dual_tor) build_graph(t, cfg);
    else build_leaf_spine(t, cfg);
    break;
  case FAB_TOPO_FAT_TREE: build_fat_tree(t, cfg); break;
  case FAB_TOPO_RING: build_ring(t, cfg); break;
  case FAB_TOPO_RAIL:
    if (cfg->topo.pod_nodes) build_graph(t, cfg);
    else build_rail(t, cfg);
    break;
  case FAB_TOPO_MULTI_RAIL:
  case FAB_TOPO_RAIL_ONLY: build_multi_rail(t, cfg); break;
  case FAB_TOPO_GRAPH: build_graph(t, cfg); break;
  }
  g_assert(t->nswitches == nsw);
  if (g->gpus_per_node) {
    t->nswitches = nsw + extra;
    GHashTable *network = g_hash_table_new(NULL, NULL);
    for (uint32_t s = 0; s < nsw; s++) g_hash_table_add(network, fab_switch_node(t->switches[s]));
    for (uint32_t s = 0; s < nsw; s++) fab_topo__rekey_routes(t, t->switches[s], &l, network);
    g_hash_table_destroy(network);
  }
  if (cfg->topo.kind == FAB_TOPO_GRAPH || cfg->topo.pod_nodes || cfg->topo.dual_tor) /* made as graphs: routes */
    fab_topology_reroute(t, NULL, NULL); /* the shortest paths, at the network's switches (t->nnet), by rank */
  if (cfg->sw.credits) /* InfiniBand: each network switch ingress grants credits to the port feeding it */
    for (uint32_t s = 0; s < t->nnet; s++)
      for (uint32_t i = 0; i < fab_switch_nports(t->switches[s]); i++)
        fab_port_set_credits(fab_switch_port_at(t->switches[s], i)->peer, cfg->sw.credits, cfg->sw.mtu_wire);
  if (cfg->nic.seg) { /* trains: every port into a switch hands them over at their first packet */
    for (uint32_t s = 0; s < t->nswitches; s++)
      for (uint32_t i = 0; i < fab_switch_nports(t->switches[s]); i++)
        cut_through(fab_switch_port_at(t->switches[s], i), &cfg->nic);
    for (uint32_t h = 0; h < t->nhosts; h++) {
      cut_through(&t->nics[h].port, &cfg->nic);
      cut_through(&t->nics[h].nvl, &cfg->nic);
    }
  }
  return t;
}

void fab_topology_free(FabTopology *t) {
  if (!t) return;
  for (uint32_t i = 0; i < t->nswitches; i++) fab_switch_free(t->switches[i]);
  for (uint32_t h = 0; h < t->nhosts; h++) {
    fab_gpu_clear(&t->gpus[h]);
    fab_nic_clear(&t->nics[h]);
  }
  g_free(t->switches);
  g_free(t->nics);
  g_free(t->gpus);
  g_free(t->attach);
  g_free(t->nvs);
  g_free(t->rank_attach);
  g_free(t);
}

void fab_topology_foreach_port(FabTopology *t, void (*fn)(FabPort *pt, void *ctx), void *ctx) {
  for (uint32_t h = 0; h < t->nhosts; h++) {
    fn(&t->nics[h].port, ctx);
    if (t->nics[h].cfg.nvl_domain) fn(&t->nics[h].nvl, ctx);
  }
  for (uint32_t s = 0; s < t->nswitches; s++)
    for (uint32_t p = 0; p < fab_switch_nports(t->switches[s]); p++) fn(fab_switch_port_at(t->switches[s], p), ctx);
}

uint32_t fab_topology_number(FabTopology *t, uint32_t id) {
  for (uint32_t h = 0; h < t->nhosts; h++) {
    FabNic *n = &t->nics[h];
    n->key = id;
    fab_elem_set_id(&n->node.el, id++);
    id = fab_port_number(&n->port, id);
    if (n->cfg.nvl_domain) id = fab_port_number(&n->nvl, id);
    fab_elem_set_id(&t->gpus[h].el, id++);
  }
  for (uint32_t s = 0; s < t->nswitches; s++) {
    FabSwitch *sw = t->switches[s];
    fab_elem_set_id(&fab_switch_node(sw)->el, id++);
    for (uint32_t p = 0; p < fab_switch_nports(sw); p++) id = fab_port_number(fab_switch_port_at(sw, p), id);
  }
  return id;
}

char *fab_topology_describe(const FabTopoSpec *s) {
  switch (s->kind) {
  case FAB_TOPO_SINGLE_SWITCH:
    return g_strdup_printf("single-switch: %u hosts", s->hosts);
  case FAB_TOPO_LEAF_SPINE:
  {
    uint32_t a = s->hosts_per_leaf, b = s->spines / (s->dual_plane ? 2 : 1); /* a leaf's ratio in lowest terms */
    while (b) {
      uint32_t t = a % b;
      a = b;
      b = t;
    }
    return g_strdup_printf("leaf-spine: %u leaves x %u hosts, %u spines (%u:%u at the leaf)%s", s->leaves,
                           s->hosts_per_leaf, s->spines, s->hosts_per_leaf / a, s->spines / (s->dual_plane ? 2 : 1) / a,
                           s->dual_plane ? "; dual-ToR in two planes: each endpoint's two ports on the two leaves of a "
                           "pair, even leaves on the first half of the spines, odd ones on the second"
                           : s->dual_tor ? "; dual-ToR: each endpoint's two ports on the two leaves of a pair" : "");
  }
  case FAB_TOPO_RAIL_ONLY:
    return g_strdup_printf("rail-only: %u rails x %u nodes, no spines (across rails through NVLink: PXN)", s->k,
                           s->hosts_per_leaf);
  case FAB_TOPO_MULTI_RAIL:
    return g_strdup_printf("multi-rail: %u planes, each %u leaves x %u nodes, %u spines", s->k, s->leaves,
                           s->hosts_per_leaf, s->spines);
  case FAB_TOPO_RAIL:
    if (s->pod_nodes)
      return g_strdup_printf("rail-optimized, 3 tiers: %u pods of %u nodes, each with %u rail leaves (%u down, %u up) "
                             "and %u spines; %u cores joining the pods", s->k, s->pod_nodes, s->leaves, s->pod_nodes,
                             s->spines, s->spines, s->cores);
    return g_strdup_printf("rail-optimized: %u rails x %u nodes, %u spines joining the rails", s->leaves,
                           s->hosts_per_leaf, s->spines);
  case FAB_TOPO_RING:
    return g_strdup_printf("ring: %u switches x %u hosts, clockwise routing", s->leaves, s->hosts_per_leaf);
  case FAB_TOPO_FAT_TREE:
    return g_strdup_printf("fat-tree: k=%u, %u hosts per edge, %u hosts, %u switches", s->k, s->hosts_per_leaf,
                           s->hosts, s->k * s->k + (s->k / 2) * (s->k / 2));
  case FAB_TOPO_GRAPH:
    return g_strdup_printf("graph: %u switches, %" G_GUINT64_FORMAT " links between them, %u hosts (their switches "
                           "at most %u hops apart), shortest-path routing", s->leaves, s->glinks, s->hosts, s->gdiam);
  }
  return g_strdup("?");
}


/* Switches plus their ports of the network (not the GPU edges). */
static uint64_t network_elements(const FabTopoSpec *s, uint32_t nattach) {
  uint64_t L = s->leaves, S = s->spines, H = s->hosts_per_leaf, k = s->k, h = s->k / 2;
  switch (s->kind) {
  case FAB_TOPO_SINGLE_SWITCH: return 1 + (uint64_t)nattach;
  case FAB_TOPO_RAIL:
    if (s->pod_nodes) return k * (L + S) + s->cores + nattach + 2 * (k * L * S + k * S * s->cores);
    return L + S + L * (H + S) + S * L;
  case FAB_TOPO_LEAF_SPINE: return s->dual_plane ? L + S + L * (H + S / 2) + S / 2 * L : L + S + L * (H + S) + S * L;
  case FAB_TOPO_MULTI_RAIL:
  case FAB_TOPO_RAIL_ONLY: return k * (L + S + L * (H + S) + S * L);
  case FAB_TOPO_RING: return L + L * (H + 2);
  case FAB_TOPO_FAT_TREE: return 2 * k * h + h * h + k * h * (H + h) + k * h * k + h * h * k;
  case FAB_TOPO_GRAPH: return L + nattach + 2 * s->glinks;
  }
  return 0;
}

uint64_t fab_topology_elements(const FabFabricCfg *cfg) {
  const FabGpuSpec *g = &cfg->gpu;
  uint64_t hosts = g->gpus_per_node ? (uint64_t)g->nodes * g->gpus_per_node : cfg->topo.hosts;
  uint64_t n = hosts * (cfg->nic.nvl_domain ? 4 : 3) + network_elements(&cfg->topo, cfg->topo.hosts);
  if (g->gpus_per_node) {
    FabGpuLayout l = fab_topo__gpu_layout(g);
    n += (uint64_t)g->nodes * l.groups * (1 + l.gpg + l.npg);
    n += fab_topo__nvl_switches(g, (uint32_t)hosts) + fab_topo__nvl_ports(g, hosts);
  }
  return n;
}

FabFootprint fab_topology_footprint(const FabFabricCfg *cfg) {
  const FabGpuSpec *g = &cfg->gpu;
  const FabTopoSpec *s = &cfg->topo;
  FabFootprint f = {0};
  uint64_t L = s->leaves, S = s->spines, k = s->k, h = s->k / 2;
  switch (s->kind) {
  case FAB_TOPO_SINGLE_SWITCH: f.switches = 1; break;
  case FAB_TOPO_RAIL: f.switches = s->pod_nodes ? k * (L + S) + s->cores : L + S; break;
  case FAB_TOPO_LEAF_SPINE: f.switches = L + S; break;
  case FAB_TOPO_MULTI_RAIL:
  case FAB_TOPO_RAIL_ONLY: f.switches = k * (L + S); break;
  case FAB_TOPO_RING: f.switches = L; break;
  case FAB_TOPO_FAT_TREE: f.switches = 2 * k * h + h * h; break;
  case FAB_TOPO_GRAPH: f.switches = L; break;
  }
  f.endpoints = g->gpus_per_node ? (uint64_t)g->nodes * g->gpus_per_node : s->hosts;
  uint64_t elems = fab_topology_elements(cfg), net = network_elements(s, s->hosts);
  f.ports = net - f.switches + 2 * f.endpoints; /* and each endpoint's NIC side and attachment */
  uint64_t lanes = 0; /* rail-matched routes: per network switch, a route per NIC of each multi-NIC GPU */
  if (g->gpus_per_node) { /* PCIe switches per group, NVSwitches per domain: switches too */
    FabGpuLayout l = fab_topo__gpu_layout(g);
    if (l.npg > 1) lanes = f.switches * f.endpoints * l.npg;
    uint64_t gsw = (uint64_t)g->nodes * l.groups;
    gsw += fab_topo__nvl_switches(g, (uint32_t)f.endpoints);
    f.switches += gsw;
    f.ports += elems > net + gsw ? elems - net - gsw : 0;
  }
  f.routes = f.switches * f.endpoints;
  uint64_t per_port = sizeof(FabPort) + (uint64_t)cfg->sw.nprio * (3 * sizeof(uint64_t) + sizeof(uint32_t));
  /* Packets in flight are left out: the pool grows with what the buffers
  ** actually hold, which is far below their sum in nearly every run. */
  f.bytes = f.switches * fab_switch_struct_bytes() + (f.routes + lanes) * sizeof(uint32_t) + f.ports * per_port +
            f.endpoints * (sizeof(FabNic) + sizeof(FabGpu));
  return f;
}

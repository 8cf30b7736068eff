/*
** How a run over N processes would cut the fabric (tools/libfabsim/partition.h),
** on fabrics small enough to cut on paper.
**
** Leaf-spine, 4 leaves of 2 hosts, 2 spines, into 2 ranks. Weights are
** ports: a host 1, a leaf 2 + 2, a spine 4; 32 in all, so a rank may take
** 17.6. The hosts split 0-3 | 4-7 (a leaf-group boundary); leaves 0 and 1
** go with hosts 0-3 (rank 0: 4 + 8 = 12), leaves 2 and 3 with 4-7 (12);
** spine0 has two links into each rank: the lower of two equal ranks, 0
** (16); spine1 likewise: rank 1 is now lighter (16). Cut: leaf0-spine1,
** leaf1-spine1, leaf2-spine0, leaf3-spine0: 4 links, lookahead the link
** latency.
**
** Three leaves of 2 hosts, 2 spines, into 2 ranks: hosts of weight 1 split
** 3 | 3, inside leaf1's group (its boundaries are 1 off the even share,
** more than the quarter-share slack of 0). Total 6 + 3 x 4 + 2 x 3 = 24,
** cap 13.2: leaf0 -> 0 (7), leaf1 (one link each way) -> the lighter 1
** (7), leaf2 -> 1 (11); spine0 has 2 links into rank 1, but 14 > 13.2, so
** rank 0 (10); spine1 the same (13). Cut: host3-leaf1 is not (host 3 is on
** rank 1 with leaf1), host2-leaf1 is; leaf0 reaches both spines on rank 0;
** leaf1 and leaf2 reach both: 1 + 2 + 2 = 5 links.
*/
#include <criterion/criterion.h>
#include <string.h>

#include "tools/libfabsim/partition.h"
#include "tools/libfabsim/scenario.h"
#include "testnet.h"
#include "testscen.h"

static FabTopology *leaf_spine(uint32_t leaves, uint32_t hpl, uint32_t spines) {
  FabFabricCfg c;
  memset(&c, 0, sizeof c);
  c.topo.kind = FAB_TOPO_LEAF_SPINE;
  c.topo.link_bps = c.topo.host_bps = 100000000000ULL;
  c.topo.link_latency = 700 * FAB_NS;
  c.topo.leaves = leaves;
  c.topo.hosts_per_leaf = hpl;
  c.topo.spines = spines;
  c.topo.hosts = leaves * hpl;
  c.sw.buffer = 1 << 20;
  c.sw.alpha = 1.0;
  c.sw.nprio = 1;
  c.nic = testnet_fabric_nic_cfg(c.topo.host_bps);
  return fab_topology_build(&c);
}

/* Cutting t into n ranks must fail with a message holding `what`. */
static void expect_too_many_ranks(const FabTopology *t, uint32_t n, const char *what) {
  FabPartition p;
  GError *err = NULL;
  cr_assert_not(fab_partition_make(t, n, &p, &err));
  cr_assert(strstr(err->message, what), "%s", err->message);
  g_error_free(err);
}

/* The rank of switch s (its index in t->switches). */
static uint32_t sw_rank(const FabTopology *t, const FabPartition *p, uint32_t s) { return p->rank[t->nhosts + s]; }

Test(partition, leaf_groups_stay_whole_and_spines_spread) {
  FabTopology *t = leaf_spine(4, 2, 2);
  FabPartition p;
  GError *err = NULL;
  cr_assert(fab_partition_make(t, 2, &p, &err));
  cr_assert_eq(p.nparts, 8);
  cr_assert_eq(p.groups, 4);
  cr_assert(p.by_group);
  for (uint32_t h = 0; h < 8; h++) cr_assert_eq(fab_partition_rank_of(&p, h), h / 4, "host %u", h);
  for (uint32_t l = 0; l < 4; l++) cr_assert_eq(sw_rank(t, &p, l), l / 2, "leaf%u", l);
  cr_assert_eq(sw_rank(t, &p, 4), 0, "spine0");
  cr_assert_eq(sw_rank(t, &p, 5), 1, "spine1");
  cr_assert_eq(p.weight[0], 16);
  cr_assert_eq(p.weight[1], 16);
  cr_assert_eq(p.endpoints[0], 4);
  cr_assert_eq(p.switches[1], 3);
  cr_assert_eq(p.cut, 4);
  cr_assert_eq(p.lookahead, 700 * FAB_NS);
  cr_assert_str_eq(p.lookahead_link, "leaf0-spine1");
  fab_partition_clear(&p);
  /* one rank: nothing cut */
  cr_assert(fab_partition_make(t, 1, &p, &err));
  cr_assert_eq(p.cut, 0);
  cr_assert_eq(p.lookahead, FAB_TIME_MAX);
  cr_assert_eq(p.weight[0], 32);
  fab_partition_clear(&p);
  expect_too_many_ranks(t, 9, "8 parts that may not be split (an NVLink domain with its nodes, or a host): at most "
                              "8 ranks");
  fab_topology_free(t);
}

Test(partition, uneven_leaves_cut_inside_a_group_and_keep_ranks_even) {
  FabTopology *t = leaf_spine(3, 2, 2);
  FabPartition p;
  cr_assert(fab_partition_make(t, 2, &p, NULL));
  cr_assert_not(p.by_group);
  for (uint32_t h = 0; h < 6; h++) cr_assert_eq(fab_partition_rank_of(&p, h), h / 3, "host %u", h);
  cr_assert_eq(sw_rank(t, &p, 0), 0, "leaf0");
  cr_assert_eq(sw_rank(t, &p, 1), 1, "leaf1");
  cr_assert_eq(sw_rank(t, &p, 2), 1, "leaf2");
  cr_assert_eq(sw_rank(t, &p, 3), 0, "spine0");
  cr_assert_eq(sw_rank(t, &p, 4), 0, "spine1");
  cr_assert_eq(p.weight[0], 13);
  cr_assert_eq(p.weight[1], 11);
  cr_assert_eq(p.cut, 5);
  fab_partition_clear(&p);
  fab_topology_free(t);
}

/* A k = 4 fat-tree (4 pods of 2 edges with 2 hosts each, 2 aggregations,
** 4 cores) into 4 ranks: a pod each (its edges and aggregations have all
** their down links in it) and a core each (every core has one link into
** each pod: the lighter rank, the lower). Each pod's 4 uplinks go to the 4
** cores, one of them its own: 3 x 4 = 12 links cut. */
Test(partition, fat_tree_pods_stay_whole) {
  GError *err = NULL;
  FabScenario *sc = fab_scenario_load_string(
    "name: ft\nfabric: {topology: {kind: fat-tree, k: 4}, link: {bandwidth: 100Gbps, latency: 1us}}\n"
    "workload: {kind: permutation, size: 1MiB}\n", "ft", ".", NULL, &err);
  cr_assert_not_null(sc, "%s", err ? err->message : "?");
  FabTopology *t = fab_topology_build(&sc->fabric);
  FabPartition p;
  cr_assert(fab_partition_make(t, 4, &p, NULL));
  cr_assert_eq(p.groups, 8);
  cr_assert(p.by_group);
  for (uint32_t h = 0; h < 16; h++) cr_assert_eq(fab_partition_rank_of(&p, h), h / 4, "host %u", h);
  for (uint32_t e = 0; e < 8; e++) cr_assert_eq(sw_rank(t, &p, e), e / 2, "edge%u", e);
  for (uint32_t a = 0; a < 8; a++) cr_assert_eq(sw_rank(t, &p, 8 + a), a / 2, "agg%u", a);
  for (uint32_t c = 0; c < 4; c++) cr_assert_eq(sw_rank(t, &p, 16 + c), c, "core%u", c);
  cr_assert_eq(p.cut, 12);
  cr_assert_eq(p.lookahead, FAB_US);
  fab_partition_clear(&p);
  fab_topology_free(t);
  fab_scenario_free(sc);
}

/* GPU nodes: a node with its NVSwitch, PCIe switches and NICs is one part. */
Test(partition, gpu_nodes_stay_whole) {
  GError *err = NULL;
  FabScenario *sc = fab_scenario_load_string(
    "name: p\ncluster: {node: dgx-h100, nodes: 3}\n"
    "fabric: {topology: {kind: rail-optimized}, link: {bandwidth: 400Gbps, latency: 600ns}}\n"
    "workload: {kind: flows, flows: [{src: 0, dst: 9, size: 1MiB}]}\n", "p", ".", NULL, &err);
  cr_assert_not_null(sc, "%s", err ? err->message : "?");
  FabTopology *t = fab_topology_build(&sc->fabric);
  FabPartition p;
  cr_assert(fab_partition_make(t, 3, &p, &err));
  cr_assert_eq(p.nparts, 3);
  cr_assert_eq(p.groups, 1, "every node reaches rail0 first");
  for (uint32_t g = 0; g < 24; g++) cr_assert_eq(fab_partition_rank_of(&p, g), g / 8, "gpu%u", g);
  for (uint32_t s = t->nnet; s < t->nswitches; s++) { /* the PCIe and NVLink elements go with their GPUs */
    FabSwitch *sw = t->switches[s];
    uint32_t r = p.rank[t->nhosts + s];
    for (uint32_t i = 0; i < fab_switch_nports(sw); i++) {
      FabPort *pt = fab_switch_port_at(sw, i);
      if (!pt->peer) continue;
      for (uint32_t g = 0; g < t->nhosts; g++)
        if (pt->peer->owner == &t->nics[g].node)
          cr_assert_eq(fab_partition_rank_of(&p, g), r, "%s", fab_switch_name(sw));
    }
  }
  cr_assert_eq(p.lookahead, 600 * FAB_NS, "rails join every node: NIC links are cut");
  fab_partition_clear(&p);
  expect_too_many_ranks(t, 4, "3 parts");
  fab_topology_free(t);
  fab_scenario_free(sc);
}

/* Dependencies between ranks, on the first leaf-spine's cut (hosts 0-3 on
** rank 0, 4-7 on rank 1). */
Test(partition, dependencies_between_ranks_and_their_lookahead) {
  FabTopology *t = leaf_spine(4, 2, 2);
  FabPartition p;
  cr_assert(fab_partition_make(t, 2, &p, NULL));
  FabDag *d = fab_dag_new();
  uint32_t f = fab_dag_flow(d, 0, 5, 4096, 0, 0, -1, 0, 0, NULL, 0);          /* crosses the cut: the network's */
  fab_dag_compute(d, 5, 1000, FAB_PHASE_FWD, 0, 0, &f, 1);                  /* f ends at 5: same rank */
  fab_dag_mark(d, 0, FAB_MARK_JOIN, 0, -1, &f, 1);                          /* f ends at 5, the mark is at 0 */
  uint32_t m4 = fab_dag_mark(d, 4, FAB_MARK_JOIN, 0, -1, NULL, 0);
  fab_dag_flow(d, 1, 2, 4096, 0, 0, -1, 3 * FAB_US, 0, &m4, 1);             /* 4 -> 1: posted 3 us after */
  uint32_t sent = f | FAB_DEP_SENT;
  fab_dag_flow(d, 0, 6, 4096, 0, 0, -1, 0, 0, &sent, 1);                    /* f's send ends at 0: same rank */
  uint32_t m0 = 2;                                                            /* the mark at 0 after f: reported by rank 1 */
  fab_dag_flow(d, 2, 3, 4096, 0, 0, -1, 0, 0, &m0, 1);                        /* rank 1's report, rank 0's flow: nothing ahead */
  FabOp exit = {.kind = FAB_OP_MARK, .src = 1, .dst = 1, .coll = -1, .pre = 5 * FAB_US}; /* a barrier's exit */
  uint32_t x = fab_dag_add(d, &exit, &m4, 1);                                 /* rank 1's report (m4), 5 us ahead */
  fab_dag_flow(d, 1, 0, 4096, 0, 0, -1, 0, 0, &x, 1);                         /* x is done on rank 0's side */
  FabPartDeps dp = {.min_ahead = FAB_TIME_MAX};
  FabDeq done;
  fab_deq_init(&done, 1);
  FabPartWalk w = {p.lookahead, NULL, NULL, false};
  cr_assert_eq(fab_partition_walk(&p, d, 0, fab_dag_len(d), &done, &w, &dp), 6, "the flow 2 -> 3 is the first");
  cr_assert_eq(dp.ops, 9);
  cr_assert_eq(dp.deps, 7);
  cr_assert_eq(dp.cross, 3);
  cr_assert_eq(dp.short_, 1);
  cr_assert_eq(dp.min_ahead, 3 * FAB_US);
  cr_assert_eq(*(uint8_t *)fab_deq_at(&done, 2), 1, "the mark at rank 0 is reported where f arrives");
  cr_assert_eq(*(uint8_t *)fab_deq_at(&done, x), 0, "the barrier's exit on its own rank's side");
  fab_deq_clear(&done);
  char *s = fab_partition_report(t, &p, &dp, false);
  cr_assert(strstr(s, "cut: 4 links; lookahead 0.700 us (the smallest latency of a cut link, e.g. leaf0-spine1)"),
            "%s", s);
  cr_assert(strstr(s, "dependencies between ranks: 3 of 7 (of 9 operations); 1 closer than the lookahead, the "
                      "others at least 3.000 us"), "%s", s);
  cr_assert(strstr(s, "   0          4         3     16  50.0%  0-3\n"), "%s", s);
  g_free(s);
  fab_dag_free(d);
  fab_partition_clear(&p);
  fab_topology_free(t);
}

/* A training job with pipeline stages orders the cut by data-parallel
** replica. tests/scenarios/training-pp-tp.yaml on 4 nodes with dp 4 (tp 4,
** pp 2): rank = tp_i + 4 (dp_i + 4 pp_i), a stage is 16 ranks, 2 nodes.
** Node 0 holds stage 0's replicas 0-1 (places 0-7 in the stage), node 1
** stage 0's 2-3 (8-15), node 2 stage 1's 0-1 (0-7), node 3 stage 1's 2-3
** (8-15). In order of their least place: nodes 0, 2, 1, 3; two ranks take
** nodes {0, 2} and {1, 3}, each replica's two stages together, where the
** fabric's order gives nodes {0, 1} (stage 0) and {2, 3} (stage 1). */
Test(partition, a_training_job_cuts_by_replica) {
  const char *sets[] = {"cluster.nodes=4", "workload.parallelism.dp=4", NULL};
  FabScenario *sc = testscen_load_file("tests/scenarios/training-pp-tp.yaml", sets);
  FabTopology *t = fab_topology_build(&sc->fabric);
  const char *job = NULL;
  uint32_t *key = fab_partition_replica_keys(sc->dag, t->nhosts, &job);
  cr_assert_not_null(key);
  cr_assert_str_eq(job, "training");
  for (uint32_t g = 0; g < 32; g++) cr_assert_eq(key[g], g % 16, "gpu%u", g);
  g_free(key);
  FabPartition p;
  cr_assert(fab_partition_make_for(t, sc->dag, 2, &p, NULL));
  cr_assert_str_eq(p.replicas_of, "training");
  cr_assert(p.by_group, "the cut falls between replicas");
  for (uint32_t g = 0; g < 32; g++) cr_assert_eq(fab_partition_rank_of(&p, g), (g / 8) % 2, "gpu%u", g);
  cr_assert_eq(p.weight[0], p.weight[1]);
  FabPartDeps dp = {.min_ahead = FAB_TIME_MAX};
  char *s = fab_partition_report(t, &p, &dp, false);
  cr_assert(strstr(s, "order: by data-parallel replica of training job 'training' (each rank a share of every "
                      "pipeline stage), cut between replicas\n"), "%s", s);
  cr_assert(strstr(s, "0-7,16-23\n"), "%s", s);
  g_free(s);
  fab_partition_clear(&p);
  /* in fabric order (no job to order it): stages whole */
  cr_assert(fab_partition_make(t, 2, &p, NULL));
  cr_assert_str_eq(p.replicas_of, "");
  for (uint32_t g = 0; g < 32; g++) cr_assert_eq(fab_partition_rank_of(&p, g), g / 16, "gpu%u", g);
  fab_partition_clear(&p);
  fab_topology_free(t);
  fab_scenario_free(sc);
}

/* Without pipeline stages a training job's replicas are already runs of
** nodes (rank = tp_i + tp dp_i): no order is given. */
Test(partition, no_pipeline_no_replica_order) {
  const char *sets[] = {"workload.parallelism.pp=1", "workload.parallelism.dp=4", NULL};
  FabScenario *sc = testscen_load_file("tests/scenarios/training-pp-tp.yaml", sets);
  FabTopology *t = fab_topology_build(&sc->fabric);
  cr_assert_null(fab_partition_replica_keys(sc->dag, t->nhosts, NULL));
  FabPartition p;
  cr_assert(fab_partition_make_for(t, sc->dag, 2, &p, NULL));
  cr_assert_str_eq(p.replicas_of, "");
  fab_partition_clear(&p);
  fab_topology_free(t);
  fab_scenario_free(sc);
}

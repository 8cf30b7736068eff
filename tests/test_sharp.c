/*
** SHARP (models/sharp.h, topologies/sharp_trees.c): reductions in the
** fabric's switches, on hosts of 400 Gb/s InfiniBand with hand-made SHARP
** ops, timed on paper. A packet is 4096 B of data + 26 B of InfiniBand
** headers (LRH 8, BTH 12, ICRC 4, VCRC 2) = 4122 B: 82.44 ns at 400 Gb/s.
** Links 1 us, switches 300 ns, aggregation 200 ns (the model's default).
** Then the collectives (collnet) and the resources that decide whether a
** job gets a tree.
*/
#include <criterion/criterion.h>
#include <string.h>

#include "testscen.h"
#include "workloads/dag.h"

#define SER 82440ull   /* ps: 4122 B at 400 Gb/s */
#define WIRE 4122ull
#define LINK 1000000ull
#define SW 300000ull
#define AGG 200000ull

static const char one_switch[] = "cluster: {nodes: 4}\n"
                                 "fabric:\n"
                                 "  transport: infiniband\n"
                                 "  topology: {kind: single-switch}\n"
                                 "  link: {bandwidth: 400Gbps, latency: 1us, mtu: 4096}\n"
                                 "  switch: {latency: 300ns, sharp: {enabled: true, window: 1MiB}}\n"
                                 "workload: {kind: flows, flows: [{src: 0, dst: 1, size: 1}]}\n";

static const char two_leaves[] = "cluster: {nodes: 4}\n"
                                 "fabric:\n"
                                 "  transport: infiniband\n"
                                 "  topology: {kind: leaf-spine, leaves: 2, hosts_per_leaf: 2, spines: 1}\n"
                                 "  link: {bandwidth: 400Gbps, latency: 1us, mtu: 4096}\n"
                                 "  switch: {latency: 300ns, sharp: {enabled: true, window: 1MiB}}\n"
                                 "workload: {kind: flows, flows: [{src: 0, dst: 1, size: 1}]}\n";

/* Collectives on hosts of one switch, NCCL's own costs (launch, proxy,
** flush, a step's) set to 0 so that only the fabric's time counts; each test
** sets its workload's size and algorithm. */
static const char costless[] = "cluster: {nodes: 8, nccl: {launch: 0, proxy: 0, flush: 0, step_simple: 0}}\n"
                               "fabric:\n"
                               "  transport: infiniband\n"
                               "  topology: {kind: single-switch}\n"
                               "  link: {bandwidth: 400Gbps, latency: 1us, mtu: 4096}\n"
                               "  switch: {latency: 300ns, sharp: {enabled: true, window: 1MiB}}\n"
                               "workload: {kind: collective, op: allreduce, size: 64, protocol: simple, "
                               "channels: 1}\n";

/* A scenario whose DAG is one SHARP reduction of `pkts` packets by hosts
** 0..n-1; member m starts at start[m] ps (NULL: all at 0). */
static FabScenario *reduction(const char *yaml, uint32_t n, uint32_t pkts, const fab_time_t *start,
                              const char *const *sets) {
  FabScenario *sc = testscen_load(yaml, sets);
  fab_dag_free(sc->dag);
  sc->dag = fab_dag_new();
  FabJobDef j = {.name = "sharp", .kind = "collective", .nranks = n, .ranks = g_new(uint32_t, n)};
  for (uint32_t m = 0; m < n; m++) j.ranks[m] = m;
  fab_dag_job(sc->dag, &j);
  uint32_t g = sc->dag->groups++;
  for (uint32_t m = 0; m < n; m++) {
    FabOp o = {.kind = FAB_OP_NVLS, .mark = FAB_NVLS_OP_SHARP, .src = m, .dst = m, .coll = -1, .group = g,
               .bytes = (uint64_t)pkts * 4096, .start = start ? start[m] : 0};
    fab_dag_add(sc->dag, &o, NULL, 0);
  }
  return sc;
}

static fab_time_t run_time(FabScenario *sc, FabResults *res) {
  testscen_run(sc, res);
  cr_assert_str_eq(res->status, "ok", "%s", res->failure ? res->failure : "");
  return res->sim_time;
}

/* One switch, 4 members of 16 packets, nothing limiting: the last packet
** leaves its host at 16 x SER, crosses the link, is reduced (switch +
** aggregation latency) and comes back down: + LINK + SW + AGG + SER + LINK. */
Test(sharp, one_switch_reduction_takes_the_wire_time_and_one_turn) {
  FabResults res;
  FabScenario *sc = reduction(one_switch, 4, 16, NULL, NULL);
  cr_assert_eq(run_time(sc, &res), 16 * SER + LINK + SW + AGG + SER + LINK);
  for (uint32_t h = 0; h < 4; h++) { /* each member sends S up and gets S back */
    char p[16];
    g_snprintf(p, sizeof p, "host%u:", h);
    cr_assert_eq(testscen_bytes_from(&res, p), 16 * WIRE);
  }
  cr_assert_eq(testscen_bytes_from(&res, "switch0:"), 4 * 16 * WIRE, "the results, one copy per member");
  const FabSharpTreeRec *t = &res.sharp->trees[0]; /* conservation: n x S in, S to each of n out */
  cr_assert_eq(res.sharp->n_trees, 1);
  cr_assert_eq(t->bytes_in, 4 * 16 * 4096ull);
  cr_assert_eq(t->bytes_out, 4 * 16 * 4096ull);
  cr_assert_eq(t->reductions, 1);
  cr_assert_eq(t->active, 16 * SER + LINK, "under way from the first request to its last packet's reduction");
  testscen_done(sc, &res);
}

/* A window of 2 packets: packet j may leave once the result of j - 2 is
** back, one round D = 2 SER + 2 LINK + SW + AGG after it left; so packet
** 2i leaves at i D, packet 15 at 7 D + SER and its result is in at
** 8 D + SER. */
Test(sharp, a_full_window_stops_the_member) {
  FabResults res;
  FabScenario *sc = reduction(one_switch, 4, 16, NULL, (const char *const[]){"fabric.switch.sharp.window=8KiB", NULL});
  fab_time_t D = 2 * SER + 2 * LINK + SW + AGG;
  cr_assert_eq(run_time(sc, &res), 8 * D + SER);
  testscen_done(sc, &res);
}

/* A small reduction (8 KiB a member, below sat_threshold's 16 KiB) runs on
** the low-latency tree: 4 transactions of 2048 B (2074 B on the wire,
** 41.48 ns), at most 2 outstanding (osts). Transaction j leaves once the
** result of j - 2 is back, a round D = 2 SER + 2 LINK + SW + AGG after it
** left: the last one leaves at D + SER and its result is in at 2 D + SER. */
Test(sharp, a_small_reduction_runs_on_the_low_latency_tree) {
  FabResults res;
  FabScenario *sc = reduction(one_switch, 4, 2, NULL, NULL); /* 2 x 4096 B = 8 KiB each */
  fab_time_t ser = 41480, D = 2 * ser + 2 * LINK + SW + AGG;
  cr_assert_eq(run_time(sc, &res), 2 * D + ser);
  const FabSharpTreeRec *t = &res.sharp->trees[0];
  cr_assert_eq(t->llt_reductions, 1);
  cr_assert_eq(t->bytes_in, 4 * 8192ull);
  cr_assert_eq(testscen_bytes_from(&res, "host0:"), 4 * 2074ull, "4 transactions of 2048 B");
  testscen_done(sc, &res);
  /* at the threshold it streams: 2 packets of 4096 B, the window of 1 MiB open */
  sc = reduction(one_switch, 4, 4, NULL, (const char *const[]){"fabric.switch.sharp.sat_threshold=16KiB", NULL});
  cr_assert_eq(run_time(sc, &res), 4 * SER + LINK + SW + AGG + SER + LINK);
  cr_assert_eq(res.sharp->trees[0].llt_reductions, 0);
  testscen_done(sc, &res);
}

/* Two levels: the members of each leaf are reduced there, the leaves' sums
** at the spine, which turns the result around; the leaf copies it to its
** members. The last packet: 16 SER + LINK, leaf (SW + AGG), SER + LINK up,
** spine (SW + AGG), SER + LINK down, leaf (SW), SER + LINK. Each uplink
** carries one packet per sequence number, not one per member. */
Test(sharp, two_levels_reduce_at_each_and_carry_one_sum_up) {
  FabResults res;
  FabScenario *sc = reduction(two_leaves, 4, 16, NULL, NULL);
  cr_assert_eq(run_time(sc, &res), 16 * SER + 4 * LINK + 3 * SW + 2 * AGG + 3 * SER);
  cr_assert_eq(testscen_bytes_from(&res, "leaf0:p2"), 16 * WIRE, "leaf 0 sends its members' sum up once");
  cr_assert_eq(testscen_bytes_from(&res, "leaf1:p2"), 16 * WIRE);
  cr_assert_eq(testscen_bytes_from(&res, "spine0:"), 2 * 16 * WIRE, "the result, once to each leaf");
  cr_assert_eq(testscen_bytes_from(&res, "leaf0:p0") + testscen_bytes_from(&res, "leaf0:p1"), 2 * 16 * WIRE);
  testscen_done(sc, &res);
}

/* Nothing is reduced before every contribution is in, and the order in
** which they arrive does not matter: a member 5 us late delays the result
** by exactly 5 us, whichever member it is. */
Test(sharp, the_last_contribution_decides_in_any_order) {
  fab_time_t base = 0;
  for (uint32_t late = 0; late < 4; late++) {
    fab_time_t start[4] = {0, 0, 0, 0};
    start[late] = 5000000;
    FabResults res;
    FabScenario *sc = reduction(two_leaves, 4, 16, start, NULL);
    fab_time_t t = run_time(sc, &res);
    /* until the late one's first packet is in, its leaf holds the other member's 16 packets as partial sums */
    cr_assert_eq(res.sharp->trees[0].peak_buffer_bytes, 16 * 4096ull, "member %u late", late);
    testscen_done(sc, &res);
    if (!base) base = t;
    cr_assert_eq(t, base, "member %u late: %lu ps, member 0 late: %lu ps", late, t, base);
  }
  cr_assert_eq(base, 5000000 + 16 * SER + 4 * LINK + 3 * SW + 2 * AGG + 3 * SER);
}

/* The tree: one leaf's members meet at that leaf (no spine); members on
** two leaves at a spine. */
Test(sharp, the_root_is_the_nearest_switch_to_all_members) {
  FabResults res;
  FabScenario *sc = reduction(two_leaves, 2, 4, NULL, NULL); /* hosts 0, 1: leaf 0 */
  cr_assert_eq(run_time(sc, &res), 4 * SER + LINK + SW + AGG + SER + LINK);
  cr_assert_eq(testscen_bytes_from(&res, "spine0:"), 0);
  cr_assert_eq(testscen_bytes_from(&res, "leaf0:p2"), 0);
  testscen_done(sc, &res);
}

/* A large allreduce through the collective (NCCL's CollNet Chain; one rank a
** node, so each is its node's head), NCCL's own costs set to 0: its pieces
** of 128 KiB (the chain's chunk for 1 MiB on one channel) are SHARP
** reductions that follow each other back to back, so the NIC streams S at
** its rate and the result is the wire time plus the tree's depth: 1 MiB on
** one switch, 256 packets: 256 SER + LINK + SW + AGG + SER + LINK; 4 MiB on
** two leaves under a spine, 1024 packets: 1024 SER + 4 LINK + 3 SW + 2 AGG
** + 3 SER, exactly. */
Test(sharp, a_large_allreduce_streams_at_the_nic_rate_plus_the_depth) {
  FabResults res;
  FabScenario *sc = testscen_load(costless, (const char *const[]){"cluster.nodes=4", "workload.size=1MiB",
                                                                 "workload.algorithm=collnet-chain", NULL});
  cr_assert_eq(run_time(sc, &res), 256 * SER + LINK + SW + AGG + SER + LINK);
  cr_assert_eq(res.sharp->trees[0].reductions, 8, "8 pieces of 128 KiB");
  testscen_done(sc, &res);
  sc = testscen_load(costless, (const char *const[]){"cluster.nodes=4", "workload.size=4MiB",
                                                     "workload.algorithm=collnet-chain",
                                                     "fabric.topology.kind=leaf-spine", "fabric.topology.leaves=2",
                                                     "fabric.topology.hosts_per_leaf=2", "fabric.topology.spines=1",
                                                     NULL});
  cr_assert_eq(run_time(sc, &res), 1024 * SER + 4 * LINK + 3 * SW + 2 * AGG + 3 * SER);
  testscen_done(sc, &res);
}

/* Trees from the topology: on a k = 4 fat-tree, members in one pod on two
** edge switches meet at an aggregation switch (the tree: 2 edges and it),
** members in two pods at a core (2 edges, 2 aggregations, the core). The
** rail-optimized fabric's trees, one per rail: the shipped scenario. */
Test(sharp, fat_tree_roots_in_the_pod_or_at_a_core) {
  static const char yaml[] = "cluster: {nodes: 16}\n"
                             "fabric:\n"
                             "  transport: infiniband\n"
                             "  topology: {kind: fat-tree, k: 4}\n"
                             "  link: {bandwidth: 400Gbps, latency: 1us, mtu: 4096}\n"
                             "  switch: {latency: 300ns, sharp: {enabled: true}}\n"
                             "workload:\n"
                             "  - {name: a, kind: collective, op: allreduce, size: 64KiB, algorithm: collnet, "
                             "ranks: [0, 2]}\n"
                             "  - {name: b, kind: collective, op: allreduce, size: 64KiB, algorithm: collnet, "
                             "ranks: [4, 8]}\n";
  FabResults res;
  FabScenario *sc = testscen_load(yaml, NULL);
  run_time(sc, &res);
  cr_assert_eq(res.sharp->n_trees, 2);
  const FabSharpTreeRec *a = &res.sharp->trees[0], *b = &res.sharp->trees[1];
  cr_assert(g_str_has_prefix(a->root, "agg"), "hosts 0 and 2 (one pod): %s", a->root);
  cr_assert_eq(a->nodes, 3);
  cr_assert(g_str_has_prefix(b->root, "core"), "hosts 4 and 8 (two pods): %s", b->root);
  cr_assert_eq(b->nodes, 5);
  cr_assert_gt(res.colls[1].time_s, res.colls[0].time_s, "two more levels to climb");
  testscen_done(sc, &res);
}

/* Small messages: SHARP's low-latency tree against NCCL's host tree, by hop
** counts. 8 hosts on one switch, NCCL's own costs (launch, proxy, flush, a
** step's) set to 0 so that only the fabric's hops count, an allreduce of
** 64 B. The host tree (NCCL's tree 0, the one channel's: depth 3 on 8
** ranks, e.g. 1 -> 2 -> 4 -> 0) takes the data up 3 edges and down 3, one
** after the other, each edge host -> switch -> host (2 LINK + SW), the
** first after the clear-to-send of its receiver has come the same way: 7
** edges, plus a few ns an edge (its packets' serialisation at both ends,
** the channel's SM making the data: 5.1 ns here). The low-latency tree: one
** transaction of 64 B (90 B on the wire, 1.8 ns) up a link, the switch and
** its aggregation, back down a link: 2 LINK + SW + AGG + 2 x 1.8 ns,
** exactly. So the host tree takes 7 (2 LINK + SW) / (2 LINK + SW + AGG)
** = 6.44 times as long: the factor its 7 switch crossings and 14 link
** crossings give against SHARP's one and two. */
Test(sharp, small_messages_beat_the_host_tree_by_the_hop_counts) {
  FabResults res;
  FabScenario *sc = testscen_load(costless, (const char *const[]){"workload.algorithm=tree", NULL});
  fab_time_t host = run_time(sc, &res);
  cr_assert_str_eq(res.colls[0].algorithm, "tree");
  testscen_done(sc, &res);
  sc = testscen_load(costless, (const char *const[]){"workload.algorithm=collnet", NULL});
  fab_time_t llt = run_time(sc, &res);
  cr_assert_str_eq(res.colls[0].algorithm, "collnet-chain", "one rank a node: the chain, its heads alone");
  cr_assert_eq(res.sharp->trees[0].llt_reductions, 1);
  testscen_done(sc, &res);
  fab_time_t edge = 2 * LINK + SW;
  cr_assert_eq(llt, edge + AGG + 2 * 1800, "%lu ps", llt);
  cr_assert_geq(host, 7 * edge, "%lu ps", host);
  cr_assert_lt(host, 7 * edge + 7 * 6000, "%lu ps: 7 edges and a few ns each", host);
  cr_assert_float_eq((double)host / llt, 7.0 * edge / (edge + AGG), 0.02, "factor %.3f", (double)host / llt);
}

/* A SHARP reduction is a network message as any other across nodes: NCCL's
** CollNet proxy posts it and polls its completion, the NIC starts it, and
** the result is flushed (Simple). An 8 KiB allreduce on 4 DGX H100 is one
** loop, one reduction on the way of each of the three expansions, so each
** of those costs adds to the time exactly once. */
Test(sharp, a_reduction_pays_the_proxy_the_nic_start_and_the_flush_once) {
  static const char *const algos[] = {"nvls", "collnet-direct", "collnet-chain"};
  for (size_t a = 0; a < 3; a++) {
    fab_time_t t[4];
    static const char *const costs[4][3] = {{"0us", "0us", "0us"}, {"1us", "0us", "0us"},
                                            {"0us", "1us", "0us"}, {"0us", "0us", "1us"}};
    for (int v = 0; v < 4; v++) {
      char algo[64], proxy[64], post[64], flush[64];
      g_snprintf(algo, sizeof algo, "workload.algorithm=%s", algos[a]);
      g_snprintf(proxy, sizeof proxy, "cluster.nccl.proxy=%s", costs[v][0]);
      g_snprintf(post, sizeof post, "cluster.nccl.nic_post=%s", costs[v][1]);
      g_snprintf(flush, sizeof flush, "cluster.nccl.flush=%s", costs[v][2]);
      FabResults res;
      FabScenario *sc = testscen_load_file(
          "scenarios/sharp-dgx-h100.yaml",
          (const char *const[]){"workload.size=8KiB", "workload.protocol=simple", algo, proxy, post, flush, NULL});
      t[v] = run_time(sc, &res);
      cr_assert_str_eq(res.colls[0].algorithm, algos[a]);
      testscen_done(sc, &res);
    }
    for (int v = 1; v < 4; v++)
      cr_assert_eq(t[v] - t[0], 1000000, "%s, cost %d: %ld ps more", algos[a], v, (long)(t[v] - t[0]));
  }
}

/* ---- collectives and resources ------------------------------------------- */

static const char jobs[] = "cluster: {nodes: 8}\n"
                           "fabric:\n"
                           "  transport: infiniband\n"
                           "  topology: {kind: leaf-spine, leaves: 2, hosts_per_leaf: 4, spines: 2}\n"
                           "  link: {bandwidth: 400Gbps, latency: 500ns, mtu: 4096}\n"
                           "  switch: {latency: 300ns, buffer: 16MiB, sharp: {enabled: true, model: quantum}}\n"
                           "workload:\n"
                           "  - {name: a, kind: collective, op: allreduce, size: 16MiB, algorithm: collnet, "
                           "ranks: [0, 1, 4, 5]}\n"
                           "  - {name: b, kind: collective, op: allreduce, size: 16MiB, algorithm: collnet, "
                           "ranks: [2, 3, 6, 7]}\n";

static const char *alg(const FabResults *r, size_t i) { return r->colls[i].algorithm; }

/* Quantum: one job's streaming aggregation per switch. Job b's trees would
** share a leaf with job a's: it falls back to what NCCL's tuner picks
** without SHARP, and says so. */
Test(sharp, on_quantum_the_second_job_falls_back) {
  FabResults res;
  FabScenario *sc = testscen_load(jobs, NULL);
  run_time(sc, &res);
  cr_assert_eq(res.n_colls, 2);
  cr_assert_str_eq(alg(&res, 0), "collnet-chain");
  cr_assert_str_neq(alg(&res, 1), "collnet-chain");
  bool said = false;
  for (guint i = 0; i < sc->warnings->len; i++)
    said |= strstr(g_ptr_array_index(sc->warnings, i), "no SHARP tree for job 1") &&
            strstr(g_ptr_array_index(sc->warnings, i), "falls back");
  cr_assert(said, "the fallback is reported");
  cr_assert_eq(res.sharp->fallbacks, 1, "and counted");
  cr_assert_eq(res.sharp->n_trees, 1);
  testscen_done(sc, &res);
}

/* Quantum-2: one job per port. Job b's tree takes the other spine and its
** own host ports: both run SHARP, at the same time. */
Test(sharp, on_quantum2_jobs_on_disjoint_ports_run_together) {
  FabResults res;
  FabScenario *sc = testscen_load(jobs, (const char *const[]){"fabric.switch.sharp.model=quantum-2", NULL});
  run_time(sc, &res);
  cr_assert_str_eq(alg(&res, 0), "collnet-chain");
  cr_assert_str_eq(alg(&res, 1), "collnet-chain");
  cr_assert_eq(res.colls[0].end - res.colls[0].start, res.colls[1].end - res.colls[1].start, "the same work on disjoint links");
  testscen_done(sc, &res);
}

/* A job's second communicator is another holder: on Quantum its tree over
** the leaves its first one holds is refused, as another job's would be;
** the first is found again. */
Test(sharp, a_second_communicator_of_one_job_needs_its_own_resources) {
  FabScenario *sc = testscen_load(jobs, NULL);
  char *why = NULL;
  cr_assert_eq(fab_sharp_plan_claim(sc->sharp, 0, (const uint32_t[]){0, 1, 4, 5}, 4, &why), 0, "found again");
  cr_assert_eq(fab_sharp_plan_claim(sc->sharp, 0, (const uint32_t[]){2, 3, 6, 7}, 4, &why), -1);
  cr_assert(why && strstr(why, "another communicator's streaming aggregation holds a switch"), "%s", why);
  g_free(why);
  testscen_done(sc, NULL);
}

/* Quantum with the locks taken per reduction (lock: operation): job b gets
** a tree on the same switches, and its reductions wait until job a's are
** over. Both started at 0, so b's wait is exactly the time a's tree was
** busy (each of its chains' first reductions waits that long); b then takes
** as long as a did on its own. */
Test(sharp, on_quantum_per_operation_the_second_job_waits) {
  FabResults res;
  FabScenario *sc = testscen_load(jobs, (const char *const[]){"fabric.switch.sharp.lock=operation", NULL});
  run_time(sc, &res);
  cr_assert_str_eq(alg(&res, 0), "collnet-chain");
  cr_assert_str_eq(alg(&res, 1), "collnet-chain");
  cr_assert_eq(res.sharp->fallbacks, 0);
  cr_assert_eq(res.sharp->n_trees, 2);
  const FabSharpTreeRec *a = &res.sharp->trees[0], *b = &res.sharp->trees[1];
  cr_assert_eq(a->lock_waits, 0);
  cr_assert_gt(res.colls[1].channels, 1);
  cr_assert_eq(b->lock_waits, res.colls[1].channels, "each chain's first reduction waits; the rest find the locks "
               "their communicator's");
  cr_assert_eq(b->lock_wait, b->lock_waits * a->active, "b waits %lu ps in all, a's tree runs %lu ps", b->lock_wait,
               a->active);
  fab_time_t ta = res.colls[0].end - res.colls[0].start, tb = res.colls[1].end - res.colls[1].start;
  cr_assert_geq(tb, a->active + ta * 95 / 100, "b: %lu ps after waiting %lu ps; a alone %lu ps", tb, a->active, ta);
  cr_assert_eq(b->bytes_in, 4 * 16 * 1048576ull);
  testscen_done(sc, &res);
}

Test(sharp, no_tree_fails_when_the_scenario_says_so) {
  testscen_expect_error(jobs, (const char *const[]){"fabric.switch.sharp.on_no_resources=fail", NULL},
                        "test.yaml:9:", "no SHARP tree for this allreduce of job 1");
  testscen_expect_error(jobs, (const char *const[]){"fabric.switch.sharp.trees=1", "fabric.switch.sharp.model=quantum-2",
                                                    "fabric.switch.sharp.on_no_resources=fail", NULL},
                        "test.yaml:9:", "SHARP trees are all taken");
}

/* NCCL's in-network reduce-scatter and allgather are not modelled: with
** SHARP on, one across nodes runs without it, and the run says so. */
Test(sharp, reduce_scatter_without_sharp_is_said) {
  FabResults res;
  FabScenario *sc = testscen_load(costless, (const char *const[]){"workload.op=reduce-scatter", "workload.size=1MiB",
                                                                 NULL});
  run_time(sc, &res);
  bool said = false;
  for (guint i = 0; i < sc->warnings->len; i++)
    said |= strstr(g_ptr_array_index(sc->warnings, i), "SHARP: reduce-scatter across nodes runs without it") != NULL;
  cr_assert(said, "the run says reduce-scatter does not use SHARP");
  cr_assert_eq(res.sharp->n_trees, 0);
  testscen_done(sc, &res);
}

Test(sharp, only_on_infiniband) {
  testscen_expect_error(jobs, (const char *const[]){"fabric.transport=rocev2", NULL}, "test.yaml:6:",
                        "SHARP is an InfiniBand switch feature");
}

/* A collnet allreduce on plain hosts: every rank sends S up and gets S
** back, so its NIC carries S each way where a ring carries 2 (n-1) / n S:
** the bus bandwidth nccl-tests reports is above the wire's, and the record's
** nic_GBps says what the wire carried: S per NIC over the time. */
Test(sharp, collnet_moves_each_byte_once_each_way) {
  FabResults res;
  FabScenario *sc = testscen_load(jobs, (const char *const[]){"fabric.switch.sharp.model=quantum-2", NULL});
  run_time(sc, &res);
  uint64_t pkts = 16 * 1048576 / 4096;
  cr_assert_eq(testscen_bytes_from(&res, "host0:"), pkts * WIRE);
  cr_assert_gt(res.colls[0].busbw_GBps, 50.0, "busbw %.2f GB/s, above the 50 GB/s NIC", res.colls[0].busbw_GBps);
  const FabCollRec *c = &res.colls[0];
  cr_assert_eq(c->nic_bytes, 4 * 16 * 1048576ull, "each of 4 ranks sends S: %lu", c->nic_bytes);
  cr_assert_eq(c->nics, 4);
  cr_assert_float_eq(c->nic_GBps, 16 * 1048576 / c->time_s / 1e9, 1e-9);
  cr_assert_float_eq(c->busbw_GBps / c->nic_GBps, 2.0 * 3 / 4, 1e-9, "busbw = 2 (n-1)/n x the wire's");
  cr_assert_lt(c->nic_GBps, 50.0, "the wire carries at most the 50 GB/s NIC: %.2f", c->nic_GBps);
  testscen_done(sc, &res);
}

/* The shipped scenario, whole: the same JSON twice (wall fields aside), its
** time as recorded when it was written (README, SHARP), and SHARP faster
** than the best the tuner finds without it. */
Test(sharp, shipped_scenario_is_stable_and_beats_no_sharp) {
  FabResults a, b;
  FabScenario *sc = testscen_load_file("scenarios/sharp-dgx-h100.yaml", NULL);
  run_time(sc, &a);
  char *ja = testscen_stable_json(&a);
  testscen_done(sc, &a);
  sc = testscen_load_file("scenarios/sharp-dgx-h100.yaml", NULL);
  run_time(sc, &b);
  char *jb = testscen_stable_json(&b);
  cr_assert_str_eq(ja, jb);
  cr_assert_str_eq(b.colls[0].algorithm, "nvls", "NVLS in the nodes, SHARP across");
  cr_assert_eq(b.sim_time, 862243622ull, "recorded 862.243622 us (863.066836 before Hopper's receives stopped paying "
               "a GPUDirect flush, 2026-12-05; 859.127552 before SHARP's reductions paid the proxy, the NIC's start "
               "and the flush, 2026-12-05; 995.13792 before NVLS ran at efficiency 1 with a step a chunk, "
               "2026-12-04); got %lu ps", b.sim_time);
  /* one tree per rail: local index l's heads on rail l, met at that rail's switch */
  cr_assert_eq(b.sharp->n_trees, 8);
  for (uint32_t l = 0; l < 8; l++) {
    char want[16];
    g_snprintf(want, sizeof want, "rail%u", l);
    cr_assert_str_eq(b.sharp->trees[l].root, want);
    cr_assert_eq(b.sharp->trees[l].nodes, 1);
    cr_assert_eq(b.sharp->trees[l].members, 4);
  }
  /* 4 nodes of 8 GPUs, a NIC each: every node's data goes up once, S / 8 by each of its 32 NICs */
  cr_assert_eq(b.colls[0].nic_bytes, 4 * b.colls[0].bytes);
  cr_assert_eq(b.colls[0].nics, 32);
  fab_time_t on = b.sim_time;
  testscen_done(sc, &b);
  sc = testscen_load_file("scenarios/sharp-dgx-h100.yaml", (const char *const[]){"fabric.switch.sharp.enabled=false", NULL});
  run_time(sc, &b);
  cr_assert_str_neq(b.colls[0].algorithm, "nvls");
  cr_assert_gt(b.sim_time, on);
  testscen_done(sc, &b);
  g_free(ja);
  g_free(jb);
}

/*
** A mesh NVLink domain (cluster.nvlink.mesh, the amd-mi300x preset): the
** ring orders and node paths the collectives take over it
** (workloads/coll_mesh.c), its links (topologies/gpu_nodes.c), and RCCL's
** tuner (workloads/tuner_rccl.c), each against numbers worked by hand.
*/
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include "testscen.h"
#include "workloads/collective.h"

/* Every ring a permutation of 0..k-1, and no directed link in two rings. */
static void check_rings(uint32_t k, uint32_t want) {
  const uint8_t *r;
  uint32_t R = fab_coll_mesh_rings(k, &r);
  cr_assert_eq(R, want, "k %u: %u rings, want %u", k, R, want);
  bool used[FAB_MESH_RING_MAX][FAB_MESH_RING_MAX] = {{false}};
  for (uint32_t c = 0; c < R; c++) {
    bool seen[FAB_MESH_RING_MAX] = {false};
    for (uint32_t q = 0; q < k; q++) {
      uint32_t u = r[c * k + q], v = r[c * k + (q + 1) % k];
      cr_assert_lt(u, k);
      cr_assert_not(seen[u], "k %u ring %u visits %u twice", k, c, u);
      seen[u] = true;
      if (k > 1) {
        cr_assert_not(used[u][v], "k %u: link %u -> %u in two rings", k, u, v);
        used[u][v] = true;
      }
    }
  }
}

/* K*_k splits into k - 1 Hamiltonian cycles but for k = 4 and 6 (Tillson 1980), where the search keeps the most
** it finds: 2 of 3 (K*_4 has no such split, and any two disjoint directed 4-cycles leave the other 4 arcs as two
** 2-cycles) and 4 of 5. */
Test(mesh, rings_share_no_link) {
  for (uint32_t k = 2; k <= FAB_MESH_RING_MAX; k++) check_rings(k, k == 4 ? 2 : k == 6 ? 4 : k - 1);
  const uint8_t *a, *b;
  fab_coll_mesh_rings(8, &a);
  fab_coll_mesh_rings(8, &b);
  cr_assert_eq(a, b, "one table per size");
  cr_assert_eq(a[0], 0);
  cr_assert_eq(a[1], 1, "the first ring is the plain order 0 1 2 ...");
}

/* Even k: k paths through the node that take each directed link once and start (and end) on each GPU once. */
Test(mesh, node_paths_take_every_link_once) {
  for (uint32_t k = 2; k <= FAB_MESH_RING_MAX; k += 2) {
    uint32_t seq[FAB_MESH_RING_MAX], links = 0;
    bool used[FAB_MESH_RING_MAX][FAB_MESH_RING_MAX] = {{false}}, start[FAB_MESH_RING_MAX] = {false},
         end[FAB_MESH_RING_MAX] = {false};
    for (uint32_t p = 0; p < k; p++) {
      fab_coll_mesh_path(k, p, seq);
      bool seen[FAB_MESH_RING_MAX] = {false};
      for (uint32_t q = 0; q < k; q++) {
        cr_assert_lt(seq[q], k);
        cr_assert_not(seen[seq[q]], "k %u path %u visits %u twice", k, p, seq[q]);
        seen[seq[q]] = true;
        if (q + 1 < k) {
          cr_assert_not(used[seq[q]][seq[q + 1]], "k %u: link %u -> %u twice", k, seq[q], seq[q + 1]);
          used[seq[q]][seq[q + 1]] = true;
          links++;
        }
      }
      cr_assert_not(start[seq[0]]);
      cr_assert_not(end[seq[k - 1]]);
      start[seq[0]] = end[seq[k - 1]] = true;
    }
    cr_assert_eq(links, k * (k - 1), "k %u: every directed link", k);
  }
  uint32_t s[8];
  fab_coll_mesh_path(8, 0, s); /* the zigzag 0 1 7 2 6 3 5 4 */
  const uint32_t want[8] = {0, 1, 7, 2, 6, 3, 5, 4};
  cr_assert_arr_eq(s, want, sizeof want);
  fab_coll_mesh_path(8, 4, s); /* walked back */
  for (int q = 0; q < 8; q++) cr_assert_eq(s[q], want[7 - q]);
}

static const char mi300x[] =
  "cluster: {node: amd-mi300x, nodes: 1}\n"
  "fabric:\n"
  "  transport: rocev2\n"
  "  topology: {kind: single-switch}\n"
  "  link: {bandwidth: 400Gbps, latency: 500ns, mtu: 4096}\n"
  "workload: {kind: flows, flows: [{src: 0, dst: 1, size: 1MiB}]}\n";

/* One flow of 16 segments (64 KiB + 16 B header = 65,552 B) from GPU 0 to GPU 1: into GPU 0's side of its links
** at 336 GB/s (195.1 ns a segment), the 16 over the 0 -> 1 link at 48 GB/s (1,365.67 ns each) and its 500 ns,
** then out to GPU 1 at 336 GB/s: 195.10 + 16 x 1,365.67 + 500 + 195.10 = 22,740.9 ns. */
Test(mesh, one_flow_runs_at_its_link) {
  FabScenario *sc = testscen_load(mi300x, NULL);
  FabResults res;
  testscen_run(sc, &res);
  cr_assert_eq(res.n_flows, 1);
  double ser_gpu = 65552.0 / 336e9, ser_link = 65552.0 / 48e9, want = 2 * ser_gpu + 16 * ser_link + 500e-9;
  /* each packet's serialisation is rounded up to a whole ps at each hop */
  cr_assert_float_eq(res.flows[0].fct_s, want, 20e-12, "%.12g s, want %.12g", res.flows[0].fct_s, want);
  cr_assert_eq(testscen_bytes_from(&res, "xgmi0.0:p1"), 16 * 65552ULL, "all of it on link 0 -> 1");
  cr_assert_eq(testscen_bytes_from(&res, "xgmi0.0:p2"), 0, "none on link 0 -> 2");
  testscen_done(sc, &res);
}

/* GPU 0 sends to 1, 2, ..., 7 at once: seven links, each at 48 GB/s, so the same time as one flow (a GPU's
** writes to one peer never wait behind another's: each has its own link). Seven GPUs sending to GPU 0 come in
** over seven links: one flow's time again. Through an NVSwitch at the same 336 GB/s per GPU, one flow alone has
** the whole 336: at least 5 x faster than over its one 48 GB/s mesh link. */
Test(mesh, seven_peers_at_once_take_one_link_time) {
  const char *fan_out[] = {"workload.flows=[{src: 0, dst: 1, size: 1MiB}, {src: 0, dst: 2, size: 1MiB}, "
                           "{src: 0, dst: 3, size: 1MiB}, {src: 0, dst: 4, size: 1MiB}, {src: 0, dst: 5, size: 1MiB}, "
                           "{src: 0, dst: 6, size: 1MiB}, {src: 0, dst: 7, size: 1MiB}]", NULL};
  const char *fan_in[] = {"workload.flows=[{src: 1, dst: 0, size: 1MiB}, {src: 2, dst: 0, size: 1MiB}, "
                          "{src: 3, dst: 0, size: 1MiB}, {src: 4, dst: 0, size: 1MiB}, {src: 5, dst: 0, size: 1MiB}, "
                          "{src: 6, dst: 0, size: 1MiB}, {src: 7, dst: 0, size: 1MiB}]", NULL};
  FabScenario *one = testscen_load(mi300x, NULL);
  FabResults r1;
  testscen_run(one, &r1);
  const char *const *sets[] = {fan_out, fan_in};
  for (int w = 0; w < 2; w++) {
    FabScenario *sc = testscen_load(mi300x, sets[w]);
    FabResults res;
    testscen_run(sc, &res);
    cr_assert_eq(res.n_flows, 7);
    /* the flows' first segments leave one after another (195.1 ns each at 336 GB/s), and a link fed at exactly
    ** its rate never catches up: the last ends at most 7 of them after one flow alone */
    cr_assert_leq(res.sim_time, r1.sim_time + 7 * 195110, "%s: %" PRIu64 " ps against one flow's %" PRIu64,
                  w ? "fan-in" : "fan-out", res.sim_time, r1.sim_time);
    testscen_done(sc, &res);
  }
  const char *sw[] = {"cluster.nvlink.mesh=false", NULL};
  FabScenario *nvs = testscen_load(mi300x, sw);
  FabResults rs;
  testscen_run(nvs, &rs);
  cr_assert_lt(rs.sim_time * 5, r1.sim_time, "one flow through a switch has the GPU's whole 336 GB/s");
  testscen_done(nvs, &rs);
  testscen_done(one, &r1);
}

/* The mesh scenario with `sets`, run: one collective, whose bus bandwidth must lie in (lo, hi) GB/s. */
static FabScenario *run_coll(const char *const *sets, FabResults *res, double lo, double hi) {
  FabScenario *sc = testscen_load(mi300x, sets);
  testscen_run(sc, res);
  cr_assert_eq(res->n_colls, 1);
  cr_assert(res->colls[0].busbw_GBps > lo && res->colls[0].busbw_GBps < hi, "%.2f GB/s", res->colls[0].busbw_GBps);
  return sc;
}

/* A 1 GiB ring allreduce on 8 GPUs: its 56 channels over the 7 disjoint rings keep all 7 links of each GPU busy,
** so the bus bandwidth is near 7 x 48 = 336 GB/s (one ring order for all would give 48). */
Test(mesh, ring_allreduce_uses_all_seven_links) {
  const char *ar[] = {"workload={kind: collective, op: allreduce, size: 1GiB}", NULL};
  FabResults res;
  FabScenario *sc = run_coll(ar, &res, 0.95 * 336, 336);
  cr_assert_str_eq(res.colls[0].algorithm, "ring");
  cr_assert_eq(res.colls[0].channels, 56, "RCCL's 28 rings, doubled");
  for (int k = 1; k < 8; k++) {
    char port[32];
    g_snprintf(port, sizeof port, "xgmi0.3:p%d", k);
    cr_assert_gt(testscen_bytes_from(&res, port), 100ULL << 20, "link %s carries its share", port);
  }
  testscen_done(sc, &res);
}

/* An all-to-all of 64 MiB per rank: each rank's 7 blocks of 8 MiB go to 7 peers over 7 links at once, so about
** 8 MiB / 48 GB/s = 175 us, bus bandwidth near 336 (as TransferBench's 315-319 GB/s per GPU on MI300X, ROCm
** blog); sent peer after peer, as each channel does on an NVSwitch, it would be 7 x as long. */
Test(mesh, all_to_all_sends_to_every_peer_at_once) {
  const char *a2a[] = {"workload={kind: collective, op: all-to-all, size: 64MiB}", NULL};
  FabResults res;
  testscen_done(run_coll(a2a, &res, 0.8 * 336, 336), &res);
}

/* Two nodes, rail-matched: each of the 16 channels walks a zigzag path through each node, so each NIC sends one
** channel and receives one per 8 channels, and the ring runs at the NICs' 400 Gb/s (50 GB/s x 8 per node). The
** Simple slices' fence over xGMI is off: it waits on each slice's landing, which costs a few percent here. */
Test(mesh, two_nodes_load_every_nic_evenly) {
  const char *two[] = {"cluster.nodes=2", "fabric.topology={kind: rail-optimized}", "cluster.nccl.fence=false",
                       "workload={kind: collective, op: allreduce, size: 1GiB}", NULL};
  FabResults res;
  FabScenario *sc = run_coll(two, &res, 0.9 * 400, 400); /* the ring's bus bandwidth: 8 NICs x 50 GB/s a node */
  cr_assert_eq(res.colls[0].nics, 16, "every NIC carries data");
  cr_assert(res.colls[0].nic_GBps > 0.9 * 50, "%.2f GB/s per NIC", res.colls[0].nic_GBps);
  testscen_done(sc, &res);
}

/* The tree across two nodes: each channel's chain inside a node follows a zigzag path from its head, so the chains
** load every link of the mesh (a chain through GPUs 0, 1, 2, ... in order would use only links to the next and the
** previous GPU: ports 1 and 7). */
Test(mesh, tree_chains_spread_over_the_links) {
  const char *tree[] = {"cluster.nodes=2", "fabric.topology={kind: rail-optimized}",
                        "workload={kind: collective, op: allreduce, size: 64MiB, algorithm: tree}", NULL};
  FabResults res;
  FabScenario *sc = run_coll(tree, &res, 100, 400);
  for (int i = 0; i < 8; i++)
    for (int k = 1; k < 8; k++) {
      char port[32];
      g_snprintf(port, sizeof port, "xgmi0.%d:p%d", i, k);
      cr_assert_gt(testscen_bytes_from(&res, port), 1ULL << 20, "link %s carries chain traffic", port);
    }
  testscen_done(sc, &res);
}

static const char mesh_bad[] =
  "cluster: {node: amd-mi300x, nodes: 2, nvlink_domain: 16}\n"
  "fabric:\n"
  "  topology: {kind: single-switch}\n"
  "  link: {bandwidth: 400Gbps, latency: 500ns}\n"
  "workload: {kind: flows, flows: [{src: 0, dst: 1, size: 1MiB}]}\n";

Test(mesh, errors) {
  testscen_expect_error(mesh_bad, NULL, "test.yaml:1:", "a mesh joins the GPUs of one node");
  const char *nvls[] = {"cluster.nvlink_domain=8", "cluster.nvlink.nvls=true", NULL};
  testscen_expect_error(mesh_bad, nvls, "--set:", "cluster.nvlink.nvls: a mesh has no switch to reduce in");
  const char *big[] = {"cluster.nvlink_domain=32", "cluster.gpus_per_node=32", "cluster.nics_per_node=32", NULL};
  testscen_expect_error(mesh_bad, big, "", "a mesh of 32 GPUs has 31 links per GPU: at most 16 GPUs");
  const char *eff[] = {"cluster.nvlink_domain=8", "cluster.gpu.arch=hopper", "cluster.nvlink.nvls_efficiency=0.8",
                       NULL};
  testscen_expect_error(mesh_bad, eff, "--set:", "NVLS is off here (a mesh has no switch)");
}

/* RCCL's tuner (tuning model 5) on one MI300X node, worked by hand. Ring LL of 8 KiB: bus bandwidth 28 rings x
** 12 GB/s x bwRatio 0.08 = 26.88 GB/s, algorithm bandwidth x 8/14 = 15.36 GB/s; latency baseLat 12 + 14 steps x
** hwLat 0.8 = 23.2 us: 23.2 us + 8192 B / 15.36 GB/s = 23.7333 us. Ring Simple: 17 + 14 x 2.1 = 46.4 us + 8192 /
** (336 x 8/14 GB/s). LL128 has ratio 0; the tree with Simple is skipped on one node; so LL wins small sizes and
** Simple large ones, the ring always. */
Test(mesh, rccl_tuner_model_5) {
  FabCollEnv e = {.endpoints = 8, .gpus_per_node = 8, .nvl_domain = 8, .sm = 94, .cpu = 1, .nics_per_node = 8,
                  .nic_bps = 400000000000ULL, .pcie_bps = 504123076923ULL, .net_bps = 400000000000ULL,
                  .nvl_bps = 336ULL * 8000000000ULL, .nvl_mesh = true};
  e.costs = fab_coll_costs_unset();
  fab_coll_costs_resolve(&e);
  uint32_t ranks[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  FabCollSpec c = {.op = FAB_COLL_ALLREDUCE, .nranks = 8, .ranks = ranks, .bytes = 8192,
                   .algorithm = FAB_ALGO_RING, .protocol = FAB_PROTO_LL};
  cr_assert_float_eq(fab_coll_model_time(&e, &c), 23.2e-6 + 8192 / 15.36e9, 1e-12);
  c.protocol = FAB_PROTO_SIMPLE;
  cr_assert_float_eq(fab_coll_model_time(&e, &c), 46.4e-6 + 8192 / (336e9 * 8 / 14), 1e-12);
  c.protocol = FAB_PROTO_LL128;
  cr_assert(isinf(fab_coll_model_time(&e, &c)), "LL128: ratio 0");
  c.algorithm = FAB_ALGO_TREE, c.protocol = FAB_PROTO_SIMPLE;
  cr_assert(isinf(fab_coll_model_time(&e, &c)), "tree Simple: skipped on one gfx94 node");
  uint64_t sizes[] = {1024, 65536, 1 << 20, 1 << 30};
  for (int i = 0; i < 4; i++) {
    FabCollSpec a = {.op = FAB_COLL_ALLREDUCE, .nranks = 8, .ranks = ranks, .bytes = sizes[i]};
    fab_coll_tune(&e, &a);
    cr_assert_eq(a.algorithm, FAB_ALGO_RING, "%" PRIu64 " B", sizes[i]);
    cr_assert_eq(a.protocol, sizes[i] <= 65536 ? FAB_PROTO_LL : FAB_PROTO_SIMPLE, "%" PRIu64 " B", sizes[i]);
  }
  FabCollSpec a = {.op = FAB_COLL_ALLREDUCE, .nranks = 8, .ranks = ranks, .bytes = 1 << 30,
                   .algorithm = FAB_ALGO_NVLS};
  cr_assert(isinf(fab_coll_model_time(&e, &a)), "no NVLS on AMD");
}

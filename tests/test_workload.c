/*
** Workloads (workloads/workload.h): seeded derangements, and the flows each
** `workload:` kind generates, with errors that name the key path and the
** "file:line:col" of the offending value.
*/
#include <criterion/criterion.h>
#include <string.h>

#include "sim/rng.h"
#include "workloads/workload.h"

/* ---- derangements ------------------------------------------------------ */

#define STREAM fab_rng_stream_of2("job", "permutation") /* a single permutation job's stream */

Test(workload, derangement_is_permutation_without_fixed_points) {
  uint32_t perm[50];
  for (uint64_t seed = 0; seed < 6; seed++)
    for (uint32_t n = 2; n <= 50; n++) {
      fab_workload_derangement(perm, n, seed, STREAM);
      uint8_t hit[50] = {0};
      for (uint32_t i = 0; i < n; i++) {
        cr_assert_lt(perm[i], n, "n=%u seed=%llu: perm[%u] = %u", n, (unsigned long long)seed, i, perm[i]);
        cr_assert_neq(perm[i], i, "n=%u seed=%llu: %u is a fixed point", n, (unsigned long long)seed, i);
        cr_assert_eq(hit[perm[i]]++, 0, "n=%u seed=%llu: %u appears twice", n, (unsigned long long)seed, perm[i]);
      }
    }
}

Test(workload, derangement_of_two_is_the_swap) {
  uint32_t perm[2];
  for (uint64_t seed = 0; seed < 10; seed++) {
    fab_workload_derangement(perm, 2, seed, STREAM);
    cr_assert(perm[0] == 1 && perm[1] == 0);
  }
}

Test(workload, derangement_same_seed_same_result) {
  uint32_t a[40], b[40];
  for (uint64_t seed = 0; seed < 5; seed++) {
    fab_workload_derangement(a, 40, seed, STREAM);
    fab_workload_derangement(b, 40, seed, STREAM);
    cr_assert_arr_eq(a, b, sizeof a);
  }
}

Test(workload, derangement_different_seed_different_result) {
  /* Two uniform derangements of n agree with probability 1/D(n): 1/44 for
  ** n = 5, 1/265 for 6, 1/1854 for 7, < 1e-4 from 8 on. So over 20 seed
  ** pairs: none may agree from n = 8, at most 2 below (expected 0.45). A
  ** seed that is ignored makes all 20 agree. */
  uint32_t a[50], b[50];
  for (uint32_t n = 5; n <= 50; n++) {
    int same = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
      fab_workload_derangement(a, n, seed, STREAM);
      fab_workload_derangement(b, n, seed + 1, STREAM);
      same += memcmp(a, b, n * sizeof *a) == 0;
    }
    cr_assert_leq(same, n >= 8 ? 0 : 2, "n=%u: %d of 20 seed pairs give the same derangement", n, same);
  }
}

Test(workload, derangement_of_three_is_uniform) {
  /* The two derangements of 3 are (1 2 0) and (2 0 1): over 2000 seeds
  ** about 1000 each (sd ~22); a bias towards either fails. */
  int rot1 = 0, rot2 = 0;
  uint32_t p[3];
  for (uint64_t seed = 0; seed < 2000; seed++) {
    fab_workload_derangement(p, 3, seed, STREAM);
    if (p[0] == 1 && p[1] == 2 && p[2] == 0) rot1++;
    else if (p[0] == 2 && p[1] == 0 && p[2] == 1) rot2++;
    else cr_assert_fail("seed %llu: (%u %u %u) is not a derangement", (unsigned long long)seed, p[0], p[1], p[2]);
  }
  cr_assert(rot1 > 900 && rot2 > 900, "%d and %d of 2000", rot1, rot2);
}

Test(workload, derangement_of_four_is_uniform) {
  /* 9 derangements of 4, 9000 seeds: about 1000 each (sd ~30); allow 15%.
  ** (A Sattolo cycle would only give the 6 four-cycles, never (1 0 3 2).) */
  int count[256] = {0}, kinds = 0;
  uint32_t p[4];
  for (uint64_t seed = 0; seed < 9000; seed++) {
    fab_workload_derangement(p, 4, seed, STREAM);
    count[p[0] | p[1] << 2 | p[2] << 4 | p[3] << 6]++;
  }
  for (int c = 0; c < 256; c++) {
    if (!count[c]) continue;
    kinds++;
    cr_assert(count[c] > 850 && count[c] < 1150, "derangement code %d drawn %d times of 9000", c, count[c]);
  }
  cr_assert_eq(kinds, 9);
  cr_assert_gt(count[1 | 0 << 2 | 3 << 4 | 2 << 6], 0, "(1 0 3 2) appears");
}

/* ---- reading workloads --------------------------------------------------- */

static FabOp *flow(FabDag *a, guint i) { return fab_dag_op(a, i); }

static FabDag *wl_read(const FabCfgNode *root, uint32_t endpoints, uint32_t nprio, uint64_t seed, GError **err) {
  FabWorkloadEnv env = {.endpoints = endpoints, .nprio = nprio, .seed = seed};
  return fab_workload_read(root, &env, err);
}

static FabDag *read_ok(const char *yaml, uint32_t endpoints, uint32_t nprio, uint64_t seed) {
  GError *err = NULL;
  FabCfg *cfg = fab_cfg_load_string(yaml, "t.yaml", &err);
  cr_assert_not_null(cfg, "YAML did not load: %s", err ? err->message : "?");
  FabDag *a = wl_read(fab_cfg_root(cfg), endpoints, nprio, seed, &err);
  cr_assert_not_null(a, "unexpected error: %s", err ? err->message : "?");
  cr_assert_null(err);
  fab_cfg_free(cfg); /* the flows do not point into the config */
  return a;
}

/* Fails with a message starting with where_path and containing what. */
static void read_fails(const char *yaml, uint32_t endpoints, uint32_t nprio, const char *where_path,
                       const char *what) {
  GError *err = NULL;
  FabCfg *cfg = fab_cfg_load_string(yaml, "t.yaml", &err);
  cr_assert_not_null(cfg, "YAML did not load: %s", err ? err->message : "?");
  FabDag *a = wl_read(fab_cfg_root(cfg), endpoints, nprio, 1, &err);
  cr_assert_null(a, "expected an error at %s", where_path);
  cr_assert_not_null(err);
  cr_assert(err->domain == FAB_CFG_ERROR);
  cr_assert(g_str_has_prefix(err->message, where_path), "message '%s' does not start with '%s'", err->message,
            where_path);
  cr_assert_not_null(strstr(err->message, what), "message '%s' does not say '%s'", err->message, what);
  g_error_free(err);
  fab_cfg_free(cfg);
}

static void expect_flow(FabDag *a, guint i, uint32_t src, uint32_t dst, uint64_t bytes, fab_time_t start,
                        uint8_t prio) {
  cr_assert_lt(i, fab_dag_len(a));
  FabOp *f = flow(a, i);
  cr_assert_eq(f->src, src, "flow %u: src %u, expected %u", i, f->src, src);
  cr_assert_eq(f->dst, dst, "flow %u: dst %u, expected %u", i, f->dst, dst);
  cr_assert_eq(f->bytes, bytes, "flow %u: bytes %llu", i, (unsigned long long)f->bytes);
  cr_assert_eq(f->start, start, "flow %u: start %llu", i, (unsigned long long)f->start);
  cr_assert_eq(f->prio, prio, "flow %u: prio %u", i, f->prio);
}

Test(workload, permutation_one_flow_per_endpoint) {
  FabDag *a = read_ok("workload:\n"
                      "  kind: permutation\n"
                      "  size: 1MiB\n"
                      "  start: 2us\n"
                      "  priority: 3\n",
                      8, 4, 42);
  cr_assert_eq(fab_dag_len(a), 8);
  uint8_t dst_seen[8] = {0};
  uint32_t perm[8];
  fab_workload_derangement(perm, 8, 42, STREAM);
  for (guint i = 0; i < 8; i++) {
    FabOp *f = flow(a, i);
    cr_assert_eq(f->src, i, "flow i is sent by endpoint i");
    cr_assert_neq(f->dst, f->src);
    cr_assert_lt(f->dst, 8);
    cr_assert_eq(dst_seen[f->dst]++, 0, "endpoint %u receives twice", f->dst);
    cr_assert_eq(f->dst, perm[i], "the partner comes from the seed's derangement");
    cr_assert_eq(f->bytes, 1048576);
    cr_assert_eq(f->start, 2 * FAB_US);
    cr_assert_eq(f->prio, 3);
  }
  fab_dag_free(a);
}

Test(workload, permutation_depends_on_seed) {
  const char *y = "workload: {kind: permutation, size: 1000}\n";
  FabDag *a = read_ok(y, 16, 1, 1), *b = read_ok(y, 16, 1, 1), *c = read_ok(y, 16, 1, 2);
  int same_ab = 1, same_ac = 1;
  for (guint i = 0; i < 16; i++) {
    same_ab &= flow(a, i)->dst == flow(b, i)->dst;
    same_ac &= flow(a, i)->dst == flow(c, i)->dst;
    cr_assert_eq(flow(a, i)->start, 0, "start defaults to 0");
    cr_assert_eq(flow(a, i)->prio, 0, "priority defaults to 0");
  }
  cr_assert(same_ab, "same seed, same partners");
  cr_assert_not(same_ac, "different seed, different partners");
  fab_dag_free(a);
  fab_dag_free(b);
  fab_dag_free(c);
}

Test(workload, incast_count_wraps) {
  /* 3 senders after receiver 5 of 8 endpoints: 6, 7, then wrap to 0 */
  FabDag *a = read_ok("workload: {kind: incast, senders: 3, receiver: 5, size: 64KiB, start: 1us}\n", 8, 1, 1);
  cr_assert_eq(fab_dag_len(a), 3);
  expect_flow(a, 0, 6, 5, 65536, FAB_US, 0);
  expect_flow(a, 1, 7, 5, 65536, FAB_US, 0);
  expect_flow(a, 2, 0, 5, 65536, FAB_US, 0);
  fab_dag_free(a);
}

Test(workload, incast_everyone_else) {
  /* 7 senders of 8 endpoints: all but the receiver (default receiver 0) */
  FabDag *a = read_ok("workload: {kind: incast, senders: 7, size: 100}\n", 8, 1, 1);
  cr_assert_eq(fab_dag_len(a), 7);
  for (guint i = 0; i < 7; i++) expect_flow(a, i, i + 1, 0, 100, 0, 0);
  fab_dag_free(a);
}

Test(workload, incast_list) {
  FabDag *a = read_ok("workload:\n"
                      "  kind: incast\n"
                      "  receiver: 2\n"
                      "  senders: [7, 0, 4]\n"
                      "  size: 1KB\n"
                      "  priority: 1\n",
                      8, 2, 1);
  cr_assert_eq(fab_dag_len(a), 3);
  expect_flow(a, 0, 7, 2, 1000, 0, 1);
  expect_flow(a, 1, 0, 2, 1000, 0, 1);
  expect_flow(a, 2, 4, 2, 1000, 0, 1);
  fab_dag_free(a);
}

Test(workload, all_to_all) {
  FabDag *a = read_ok("workload: {kind: all-to-all, per_pair: 4KiB}\n", 4, 1, 1);
  cr_assert_eq(fab_dag_len(a), 4 * 3);
  int pair[4][4] = {{0}};
  for (guint i = 0; i < fab_dag_len(a); i++) {
    FabOp *f = flow(a, i);
    cr_assert_neq(f->src, f->dst);
    cr_assert_eq(f->bytes, 4096);
    pair[f->src][f->dst]++;
  }
  for (int s = 0; s < 4; s++)
    for (int d = 0; d < 4; d++) cr_assert_eq(pair[s][d], s != d, "pair %d->%d: %d flows", s, d, pair[s][d]);
  fab_dag_free(a);
  a = read_ok("workload: {kind: all-to-all, per_pair: 1}\n", 2, 1, 1);
  cr_assert_eq(fab_dag_len(a), 2);
  fab_dag_free(a);
}

Test(workload, flows_list_with_priorities) {
  FabDag *a = read_ok("workload:\n"
                      "  kind: flows\n"
                      "  flows:\n"
                      "    - {src: 0, dst: 1, size: 4KiB, priority: 2}\n"
                      "    - {src: 3, dst: 2, size: 1000, start: 5us}\n"
                      "    - {src: 1, dst: 0, size: 1MB, start: 1ms, priority: 3}\n",
                      4, 4, 1);
  cr_assert_eq(fab_dag_len(a), 3);
  expect_flow(a, 0, 0, 1, 4096, 0, 2);
  expect_flow(a, 1, 3, 2, 1000, 5 * FAB_US, 0);
  expect_flow(a, 2, 1, 0, 1000000, FAB_MS, 3);
  fab_dag_free(a);
}

/* ---- errors -------------------------------------------------------------- */

/* Columns count from 1; "    - {src: 0, dst: 9" has '{' at 7, the 0 at 13,
** the 9 at 21. */

Test(workload_errors, flow_endpoint_out_of_range) {
  read_fails("workload:\n"
             "  kind: flows\n"
             "  flows:\n"
             "    - {src: 0, dst: 1, size: 100}\n"
             "    - {src: 0, dst: 4, size: 100}\n", /* 5 */
             4, 1, "t.yaml:5:21: workload.flows[1].dst: ", "rank 4 does not exist");
  read_fails("workload:\n"
             "  kind: flows\n"
             "  flows:\n"
             "    - {src: 9, dst: 1, size: 100}\n", /* 4 */
             4, 1, "t.yaml:4:13: workload.flows[0].src: ", "rank 9 does not exist");
}

Test(workload_errors, incast_receiver_out_of_range) {
  read_fails("workload:\n"
             "  kind: incast\n"
             "  senders: 2\n"
             "  size: 100\n"
             "  receiver: 8\n", /* 5: value at column 13 */
             8, 1, "t.yaml:5:13: workload.receiver: ", "rank 8 does not exist");
}

Test(workload_errors, incast_list_sender_out_of_range) {
  read_fails("workload:\n"
             "  kind: incast\n"
             "  senders: [1, 12]\n" /* 3: 12 at column 16 */
             "  size: 100\n",
             8, 1, "t.yaml:3:16: workload.senders[1]: ", "rank 12 does not exist");
}

Test(workload_errors, incast_too_many_senders) {
  read_fails("workload:\n"
             "  kind: incast\n"
             "  senders: 8\n" /* 3: value at column 12 */
             "  size: 100\n",
             8, 1, "t.yaml:3:12: workload.senders: ", "8 senders, but only 7 ranks");
}

Test(workload_errors, incast_receiver_in_list) {
  read_fails("workload: {kind: incast, size: 100, receiver: 3, senders: [1, 3]}\n", 8, 1,
             "t.yaml:1:63: workload.senders[1]: ", "the receiver cannot be a sender");
}

Test(workload_errors, incast_sender_twice) {
  read_fails("workload: {kind: incast, size: 100, senders: [1, 2, 1]}\n", 8, 1,
             "t.yaml:1:53: workload.senders[2]: ", "listed twice");
}

Test(workload_errors, self_flow) {
  read_fails("workload:\n"
             "  kind: flows\n"
             "  flows:\n"
             "    - {src: 2, dst: 2, size: 100}\n", /* 4 */
             4, 1, "t.yaml:4:21: workload.flows[0].dst: ", "to itself");
}

Test(workload_errors, flow_missing_size) {
  /* reported at the flow's map, the '{' */
  read_fails("workload:\n"
             "  kind: flows\n"
             "  flows:\n"
             "    - {src: 0, dst: 1, size: 100}\n"
             "    - {src: 0, dst: 1}\n", /* 5 */
             4, 1, "t.yaml:5:7: workload.flows[1]: ", "missing required key 'size'");
}

Test(workload_errors, generated_kind_missing_size) {
  /* reported at the workload map's key, line 1 column 1 */
  read_fails("workload:\n"
             "  kind: permutation\n",
             4, 1, "t.yaml:1:1: workload: ", "needs size");
}

Test(workload_errors, size_zero) {
  read_fails("workload:\n"
             "  kind: permutation\n"
             "  size: 0\n", /* 3: value at column 9 */
             4, 1, "t.yaml:3:9: workload.size: ", "out of range (expected 1B to 1024TiB)");
  read_fails("workload:\n"
             "  kind: all-to-all\n"
             "  per_pair: 0\n", /* 3: value at column 13 */
             4, 1, "t.yaml:3:13: workload.per_pair: ", "out of range (expected 1B to 1024TiB)");
}

/* kind all-to-all's `size` once meant bytes per pair: 127 x op: all-to-all's
** size (one rank's buffer) on 128 ranks. It is refused with both meanings. */
Test(workload_errors, all_to_all_size_says_what_changed) {
  read_fails("workload:\n"
             "  kind: all-to-all\n"
             "  size: 32MiB\n",
             128, 1, "t.yaml:3:9: workload.size: ",
             "kind all-to-all is sized by per_pair (the bytes each rank sends to each other rank), not size. "
             "size meant that here before: 128 times the traffic of op: all-to-all with the same size, which "
             "is one rank's whole buffer split over the 128 ranks, as nccl-tests counts. Write per_pair: 32MiB "
             "for what this file meant, or kind: collective, op: all-to-all, size: 32MiB for nccl-tests' "
             "meaning");
  read_fails("workload: {kind: all-to-all}\n", 4, 1, "t.yaml:1:1: workload: ",
             "workload kind all-to-all needs per_pair (the bytes each rank sends to each other rank)");
  read_fails("workload: {kind: permutation, per_pair: 1MiB}\n", 4, 1, "t.yaml:1:41: workload.per_pair: ",
             "'per_pair' is not used by workload kind permutation");
}

Test(workload_errors, key_of_another_kind) {
  read_fails("workload:\n"
             "  kind: permutation\n"
             "  size: 100\n"
             "  receiver: 3\n", /* 4: value at column 13 */
             4, 1, "t.yaml:4:13: workload.receiver: ", "'receiver' is not used by workload kind permutation");
  read_fails("workload:\n"
             "  kind: flows\n"
             "  size: 100\n" /* 3: value at column 9 */
             "  flows: [{src: 0, dst: 1, size: 1}]\n",
             4, 1, "t.yaml:3:9: workload.size: ", "not used by workload kind flows");
}

Test(workload_errors, priority_beyond_fabric) {
  read_fails("workload:\n"
             "  kind: permutation\n"
             "  size: 100\n"
             "  priority: 4\n", /* 4: value at column 13 */
             4, 4, "t.yaml:4:13: workload.priority: ", "priority 4 does not exist");
  read_fails("workload:\n"
             "  kind: flows\n"
             "  flows:\n"
             "    - {src: 0, dst: 1, size: 100, priority: 2}\n", /* 4: the 2 at column 45 */
             4, 2, "t.yaml:4:45: workload.flows[0].priority: ", "priority 2 does not exist");
}

Test(workload_errors, unknown_flow_key) {
  read_fails("workload:\n"
             "  kind: flows\n"
             "  flows:\n"
             "    - {src: 0, dst: 1, sise: 100}\n", /* 4: the key sise at column 24 */
             4, 1, "t.yaml:4:24: workload.flows[0].sise: ", "unknown key 'sise'");
}

Test(workload_errors, missing_workload) {
  read_fails("seed: 1\n", 4, 1, "t.yaml:1:1: ", "missing required key 'workload'");
}

Test(workload_errors, permutation_needs_two_endpoints) {
  read_fails("workload: {kind: permutation, size: 100}\n", 1, 1, "t.yaml:1:1: workload: ", "at least 2 ranks");
}

Test(workload_errors, flows_kind_without_flows) {
  read_fails("workload: {kind: flows}\n", 4, 1, "t.yaml:1:1: workload: ", "needs flows");
}

Test(workload_errors, incast_senders_malformed) {
  read_fails("workload:\n"
             "  kind: incast\n"
             "  senders: many\n" /* 3: value at column 12 */
             "  size: 100\n",
             8, 1, "t.yaml:3:12: workload.senders: ", "expected a number of senders");
  read_fails("workload:\n"
             "  kind: incast\n"
             "  senders: []\n" /* 3 */
             "  size: 100\n",
             8, 1, "t.yaml:3:12: workload.senders: ", "an empty list of senders");
  read_fails("workload:\n"
             "  kind: incast\n"
             "  size: 100\n",
             8, 1, "t.yaml:1:1: workload: ", "incast needs senders");
}

/* ---- identity: a job's draws come from its name -------------------------- */

/* The destinations job j of a two-job permutation workload draws (16 ranks each). */
static void two_jobs(const char *yaml, uint64_t seed, uint32_t dst[2][16]) {
  FabDag *a = read_ok(yaml, 32, 8, seed);
  cr_assert_eq(fab_dag_len(a), 32);
  for (guint i = 0; i < 32; i++) dst[i / 16][i % 16] = flow(a, i)->dst - (i / 16) * 16;
  fab_dag_free(a);
}

Test(workload, job_draws_come_from_its_name_not_its_place) {
  uint32_t x[2][16], y[2][16], z[2][16];
  /* the same jobs in the other order draw the same partners */
  two_jobs("workload:\n  - {name: a, kind: permutation, size: 1KiB, ranks: 0-15}\n"
           "  - {name: b, kind: permutation, size: 1KiB, ranks: 16-31}\n", 5, x);
  two_jobs("workload:\n  - {name: b, kind: permutation, size: 1KiB, ranks: 0-15}\n"
           "  - {name: a, kind: permutation, size: 1KiB, ranks: 16-31}\n", 5, y);
  cr_assert_arr_eq(x[0], y[1], sizeof x[0], "job a draws the same wherever it stands");
  cr_assert_arr_eq(x[1], y[0], sizeof x[1], "job b too");
  cr_assert(memcmp(x[0], x[1], sizeof x[0]) != 0, "two jobs of one seed draw differently");
  /* job 1 at seed s does not repeat job 0 at seed s + 1 (the old seed + index) */
  two_jobs("workload:\n  - {name: a, kind: permutation, size: 1KiB, ranks: 0-15}\n"
           "  - {name: b, kind: permutation, size: 1KiB, ranks: 16-31}\n", 6, z);
  cr_assert(memcmp(x[1], z[0], sizeof x[1]) != 0, "job 1 at seed 5 is not job 0 at seed 6");
  /* and a job's draws are the derangement of its name's stream */
  uint32_t perm[16];
  fab_workload_derangement(perm, 16, 5, fab_rng_stream_of2("job", "b"));
  cr_assert_arr_eq(perm, x[1], sizeof perm);
}

/* A job's name belongs to its DAG and goes with it: nothing is interned for
** the process's lifetime (a long-lived Python process making jobs with new
** names would grow with each), and the name outlives the YAML it came from. */
Test(workload, job_names_are_owned_not_interned) {
  const char *yaml = "workload: {kind: permutation, size: 1KiB, name: job-named-once-7f3a}\n";
  FabDag *d = read_ok(yaml, 4, 1, 1);
  cr_assert_str_eq(g_array_index(d->jobs, FabJobDef, 0).name, "job-named-once-7f3a");
  cr_assert_eq(g_quark_try_string("job-named-once-7f3a"), 0, "the job name was interned");
  fab_dag_free(d);
  cr_assert_eq(g_quark_try_string("job-named-once-7f3a"), 0);
}

/* Tests for tools/libfabsim/nccltests.c (nccl-tests tables) and the commands built on
** it: the table of a hand-filled FabResults with values worked out on paper,
** the parsing of stored logs in the real format (tests/data/ *_perf_*.log),
** the error computation, bad logs giving file:line errors; and, as
** subprocesses, `fabsim run` printing the table and `fabsim compare`.
**
** Environment: FABSIM is the fabsim binary (default build/fabsim), FABSIM_SRC
** the repository root (default .); meson test sets both. */
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>

#include "tools/libfabsim/nccltests.h"

#define US 1000000ULL /* ps */

static const char *src_dir(void) {
  const char *s = getenv("FABSIM_SRC");
  return s && *s ? s : ".";
}

static const char *fabsim_bin(void) {
  const char *s = getenv("FABSIM");
  return s && *s ? s : "build/fabsim";
}

static char *data_path(const char *name) { return g_build_filename(src_dir(), "tests", "data", name, NULL); }

static const FabNcclTestsRow *row(const FabNcclTestsTable *t, guint i) {
  cr_assert_lt(i, t->rows->len);
  return &g_array_index(t->rows, FabNcclTestsRow, i);
}

/* The line of `text` that starts with `prefix` (transfer full), NULL. */
static char *line_starting(const char *text, const char *prefix) {
  char **lines = g_strsplit(text, "\n", -1);
  char *found = NULL;
  for (int i = 0; lines[i] && !found; i++)
    if (g_str_has_prefix(lines[i], prefix)) found = g_strdup(lines[i]);
  g_strfreev(lines);
  return found;
}

/* ---- conventions ----------------------------------------------------------- */

Test(nccltests, busbw_factors_are_nccl_tests) {
  cr_assert_float_eq(fab_nccltests_busbw_factor("allreduce", 8), 1.75, 1e-12);
  cr_assert_float_eq(fab_nccltests_busbw_factor("allgather", 8), 0.875, 1e-12);
  cr_assert_float_eq(fab_nccltests_busbw_factor("reduce-scatter", 16), 15.0 / 16, 1e-12);
  cr_assert_float_eq(fab_nccltests_busbw_factor("all-to-all", 4), 0.75, 1e-12);
  cr_assert_float_eq(fab_nccltests_busbw_factor("broadcast", 8), 1, 1e-12);
  cr_assert_float_eq(fab_nccltests_busbw_factor("reduce", 8), 1, 1e-12);
  cr_assert_float_eq(fab_nccltests_busbw_factor("send-recv", 8), 1, 1e-12);
  cr_assert_float_eq(fab_nccltests_busbw_factor("allreduce", 1), 0, 1e-12);
}

Test(nccltests, names) {
  cr_assert_str_eq(fab_nccltests_binary("allreduce"), "all_reduce_perf");
  cr_assert_str_eq(fab_nccltests_binary("all-to-all"), "alltoall_perf");
  cr_assert_str_eq(fab_nccltests_binary("send-recv"), "sendrecv_perf");
  cr_assert_null(fab_nccltests_binary("gather"));
  cr_assert_str_eq(fab_nccltests_type_name(NULL, 4), "float");
  cr_assert_str_eq(fab_nccltests_type_name(NULL, 2), "bfloat16");
  cr_assert_str_eq(fab_nccltests_type_name("half", 2), "half");
  cr_assert_str_eq(fab_nccltests_type_name("bf16", 2), "bfloat16");
  cr_assert_str_eq(fab_nccltests_type_name("fp32", 4), "float");
  cr_assert_eq(fab_nccltests_type_bytes("bfloat16"), 2);
  cr_assert_eq(fab_nccltests_type_bytes("double"), 8);
  cr_assert_eq(fab_nccltests_type_bytes("complex"), 0);
}

/* ---- simulated tables -------------------------------------------------------- */

static FabCollRec coll(const char *op, uint64_t bytes, uint64_t count, uint32_t ranks, fab_time_t start,
                              fab_time_t end) {
  return (FabCollRec){.op = op, .algorithm = "ring", .protocol = "simple", .tag = "nccl-tests",
                             .bytes = bytes, .count = count, .dtype_bytes = 4, .ranks = ranks, .root = -1,
                             .channels = 8, .start = start, .end = end};
}

/* 8 ranks: allreduce 1 MiB, two iterations of 100 us (one row), then 2 MiB
** in 160 and 200 us (mean 180). A dp-tagged collective in between is not
** part of the sweep. */
static FabResults allreduce_results(FabCollRec *c) {
  c[0] = coll("allreduce", 1048576, 262144, 8, 0, 100 * US);
  c[1] = coll("allreduce", 1048576, 262144, 8, 100 * US, 200 * US);
  c[2] = coll("allreduce", 4096, 1024, 8, 200 * US, 210 * US);
  c[2].tag = "dp";
  c[3] = coll("allreduce", 2097152, 524288, 8, 300 * US, 460 * US);
  c[4] = coll("allreduce", 2097152, 524288, 8, 500 * US, 700 * US);
  return (FabResults){.n_colls = 5, .colls = c};
}

Test(nccltests, rows_average_the_iterations_of_a_size) {
  FabCollRec c[5];
  FabResults r = allreduce_results(c);
  GPtrArray *tables = fab_nccltests_from_results(&r, NULL);
  cr_assert_eq(tables->len, 1);
  const FabNcclTestsTable *t = tables->pdata[0];
  cr_assert_str_eq(t->op, "allreduce");
  cr_assert_str_eq(t->binary, "all_reduce_perf");
  cr_assert_eq(t->ranks, 8);
  cr_assert_str_eq(t->type, "float");
  cr_assert_eq(t->rows->len, 2);
  /* 1 MiB in 100 us: algbw 1048576 / 100e-6 / 1e9 = 10.48576 GB/s, busbw x 2*7/8 = 18.35008 */
  const FabNcclTestsRow *a = row(t, 0);
  cr_assert_eq(a->bytes, 1048576);
  cr_assert_eq(a->count, 262144);
  cr_assert_eq(a->iters, 2);
  cr_assert_eq(a->completed, 2);
  cr_assert_float_eq(a->time_us[0], 100, 1e-9);
  cr_assert_float_eq(a->algbw_GBps[0], 10.48576, 1e-9);
  cr_assert_float_eq(a->busbw_GBps[0], 18.35008, 1e-9);
  cr_assert_float_eq(a->busbw_GBps[1], 18.35008, 1e-9, "in-place: the same simulated value");
  cr_assert(isnan(a->wrong[0]) && isnan(a->wrong[1]));
  cr_assert_str_eq(a->redop, "sum");
  cr_assert_eq(a->root, -1);
  cr_assert_str_eq(a->algorithm, "ring");
  /* 2 MiB: iterations 300..460 and 500..700 us: as nccl-tests times them, from the first start to the
  ** last end over the iterations, (700 - 300) / 2 = 200 us (not the mean of 160 and 200): algbw
  ** 2097152 / 200 / 1e3 = 10.48576 GB/s, busbw 18.35008 */
  const FabNcclTestsRow *b = row(t, 1);
  cr_assert_float_eq(b->time_us[0], 200, 1e-9);
  cr_assert_float_eq(b->algbw_GBps[0], 10.48576, 1e-9);
  cr_assert_float_eq(b->busbw_GBps[0], 18.35008, 1e-9);
  cr_assert_float_eq(fab_nccltests_avg_busbw(t), 18.35008, 1e-9);
  g_ptr_array_free(tables, TRUE);
}

Test(nccltests, table_has_nccl_tests_columns) {
  FabCollRec c[5];
  FabResults r = allreduce_results(c);
  GPtrArray *tables = fab_nccltests_from_results(&r, NULL);
  char *s = fab_nccltests_format(tables->pdata[0]);
  /* nccl-tests' header, column for column */
  cr_assert(strstr(s, "# Collective test starting: all_reduce_perf"), "%s", s);
  cr_assert(strstr(s, "\n#                                                              out-of-place                 "
                      "      in-place          \n"), "%s", s);
  cr_assert(strstr(s, "\n#       size         count      type   redop    root     time   algbw   busbw  #wrong     "
                      "time   algbw   busbw  #wrong \n"), "%s", s);
  cr_assert(strstr(s, "\n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             "
                      "(us)  (GB/s)  (GB/s)         \n"), "%s", s);
  /* the rows: size %12, count %12, type %8, redop %6, root %6, then time %7 algbw %6 busbw %6 #wrong %6 twice */
  cr_assert(strstr(s, "\n     1048576        262144     float     sum      -1   100.00   10.49   18.35     N/A   "
                      "100.00   10.49   18.35     N/A\n"), "%s", s);
  cr_assert(strstr(s, "\n     2097152        524288     float     sum      -1   200.00   10.49   18.35     N/A   "
                      "200.00   10.49   18.35     N/A\n"), "%s", s);
  /* the footer: the mean busbw, %g */
  cr_assert(strstr(s, "\n# Avg bus bandwidth    : 18.3501 \n"), "%s", s);
  cr_assert_null(strstr(s, "4096"), "the dp-tagged collective is not in the table:\n%s", s);
  g_free(s);
  g_ptr_array_free(tables, TRUE);
}

Test(nccltests, other_ops_redop_root_and_number_widths) {
  FabCollRec c[6];
  /* allgather 8 MiB on 8 ranks in 200 us: algbw 41.94304, busbw x 7/8 = 36.70016; count is per rank */
  c[0] = coll("allgather", 8388608, 262144, 8, 0, 200 * US);
  /* broadcast from rank 3: 64 MiB in 12345.6 us (5 digits: one decimal in 7 columns), 1 GiB in 123456 us
  ** (6 digits: none), 2 GiB in 123.456 us (17394.73 GB/s: 5 digits, no decimal in 6 columns) */
  c[1] = coll("broadcast", 67108864, 16777216, 8, 300 * US, 300 * US + 12345600000ULL);
  c[2] = coll("broadcast", 1073741824, 268435456, 8, 20000 * US, 20000 * US + 123456 * US);
  c[3] = coll("broadcast", 2147483648, 536870912, 8, 200000 * US, 200000 * US + 123456000ULL);
  c[1].root = c[2].root = c[3].root = 3;
  /* a send-recv that never completed */
  c[4] = coll("send-recv", 1024, 256, 8, 300000 * US, 0);
  c[5] = coll("all-to-all", 4096, 128, 8, 400000 * US, 400000 * US + 5 * US);
  FabResults r = {.n_colls = 6, .colls = c};
  GPtrArray *tables = fab_nccltests_from_results(&r, "half");
  cr_assert_eq(tables->len, 4, "a table per op");
  char *ag = fab_nccltests_format(tables->pdata[0]);
  cr_assert(strstr(ag, "all_gather_perf"), "%s", ag);
  cr_assert(strstr(ag, "\n     8388608        262144      half    none      -1   200.00   41.94   36.70     N/A   "), "%s",
            ag);
  char *bc = fab_nccltests_format(tables->pdata[1]);
  cr_assert_eq(((FabNcclTestsTable *)tables->pdata[1])->rows->len, 3);
  cr_assert(strstr(bc, "\n    67108864      16777216      half    none       3  12345.6    5.44    5.44     N/A"), "%s", bc);
  cr_assert(strstr(bc, "\n  1073741824     268435456      half    none       3   123456    8.70    8.70     N/A"), "%s", bc);
  cr_assert(strstr(bc, "\n  2147483648     536870912      half    none       3   123.46   17395   17395     N/A"), "%s", bc);
  char *sr = fab_nccltests_format(tables->pdata[2]);
  cr_assert(strstr(sr, "\n        1024           256      half     sum      -1      N/A     N/A     N/A     N/A"), "%s", sr);
  cr_assert(strstr(sr, "# Avg bus bandwidth    : N/A"), "%s", sr);
  cr_assert_eq(row(tables->pdata[2], 0)->completed, 0);
  char *aa = fab_nccltests_format(tables->pdata[3]);
  /* 4096 B in 5 us: 0.8192 GB/s, busbw x 7/8 = 0.7168 */
  cr_assert(strstr(aa, "\n        4096           128      half    none      -1     5.00    0.82    0.72     N/A"), "%s", aa);
  g_free(ag);
  g_free(bc);
  g_free(sr);
  g_free(aa);
  g_ptr_array_free(tables, TRUE);
}

Test(nccltests, no_nccl_tests_collectives_no_tables) {
  FabCollRec c[1] = {coll("allreduce", 1024, 256, 8, 0, US)};
  c[0].tag = NULL;
  FabResults r = {.n_colls = 1, .colls = c};
  GPtrArray *t = fab_nccltests_from_results(&r, NULL);
  cr_assert_eq(t->len, 0);
  g_ptr_array_free(t, TRUE);
  FabResults empty = {0};
  t = fab_nccltests_from_results(&empty, NULL);
  cr_assert_eq(t->len, 0);
  g_ptr_array_free(t, TRUE);
}

/* ---- measured tables --------------------------------------------------------- */

Test(nccltests, parses_an_all_reduce_perf_log) {
  char *path = data_path("all_reduce_perf_8gpu.log");
  GError *err = NULL;
  FabNcclTestsTable *t = fab_nccltests_parse_file(path, &err);
  cr_assert_not_null(t, "%s", err ? err->message : "");
  cr_assert_str_eq(t->op, "allreduce");
  cr_assert_str_eq(t->binary, "all_reduce_perf");
  cr_assert_eq(t->ranks, 8, "eight '#  Rank' device lines");
  cr_assert_str_eq(t->type, "float");
  cr_assert_eq(t->dtype_bytes, 4);
  cr_assert_eq(t->root, -1);
  cr_assert_eq(t->nthread, 1);
  cr_assert_eq(t->ngpus, 8);
  cr_assert_eq(t->warmup_iters, 5);
  cr_assert_eq(t->iters, 20);
  cr_assert_eq(t->rows->len, 28, "8 B to 1 GiB, factor 2");
  const FabNcclTestsRow *a = row(t, 0);
  cr_assert_eq(a->bytes, 8);
  cr_assert_eq(a->count, 2);
  cr_assert_str_eq(a->redop, "sum");
  cr_assert_float_eq(a->time_us[0], 11.41, 1e-9);
  cr_assert_float_eq(a->time_us[1], 11.33, 1e-9);
  cr_assert_float_eq(a->wrong[0], 0, 1e-9);
  cr_assert_eq(a->line, 19);
  const FabNcclTestsRow *z = row(t, 27);
  cr_assert_eq(z->bytes, 1073741824);
  cr_assert_eq(z->count, 268435456);
  /* busbw = algbw x 2(n-1)/n, as printed (rounded to 0.01) */
  cr_assert_float_eq(z->busbw_GBps[0], z->algbw_GBps[0] * 1.75, 0.02);
  cr_assert_float_eq(z->algbw_GBps[0], 1073741824 / z->time_us[0] / 1e3, 0.01);
  cr_assert_float_eq(t->avg_busbw_GBps, 116.472, 1e-9);
  fab_nccltests_table_free(t);
  g_free(path);
}

Test(nccltests, parses_an_all_gather_perf_log_from_mpirun) {
  char *path = data_path("all_gather_perf_16gpu.log");
  GError *err = NULL;
  FabNcclTestsTable *t = fab_nccltests_parse_file(path, &err);
  cr_assert_not_null(t, "%s", err ? err->message : "");
  cr_assert_str_eq(t->op, "allgather", "from the mpirun command line");
  cr_assert_eq(t->ranks, 16);
  cr_assert_eq(t->ngpus, 1);
  cr_assert_eq(t->rows->len, 26, "8 B to 256 MiB");
  cr_assert_eq(row(t, 0)->bytes, 0, "below one float per rank nccl-tests prints 0 B");
  cr_assert_eq(row(t, 3)->bytes, 64);
  cr_assert_eq(row(t, 3)->count, 1, "allgather counts per rank");
  cr_assert_str_eq(row(t, 3)->redop, "none");
  cr_assert_eq(row(t, 25)->bytes, 268435456);
  cr_assert_eq(row(t, 25)->count, 4194304);
  cr_assert_float_eq(row(t, 25)->time_us[0], 732.8, 1e-9);
  cr_assert_float_eq(row(t, 25)->busbw_GBps[1], 343.45, 1e-9);
  cr_assert_float_eq(t->avg_busbw_GBps, 71.6007, 1e-9);
  fab_nccltests_table_free(t);
  g_free(path);
}

static FabNcclTestsTable *parse(const char *text, char **msg) {
  GError *err = NULL;
  FabNcclTestsTable *t = fab_nccltests_parse_text(text, "x.log", &err);
  *msg = err ? g_strdup(err->message) : NULL;
  g_clear_error(&err);
  return t;
}

#define ROW8                                                                                                 \
  "           8             2     float     sum      -1    11.41    0.00    0.00       0    11.33    0.00    0.00" \
  "       0\n"
#define ROW16                                                                                                \
  "          16             4     float     sum      -1    11.58    0.00    0.00       0    11.29    0.00    0.00" \
  "       0\n"

Test(nccltests, ranks_from_size_and_count_and_crlf_and_na) {
  char *msg;
  /* no device lines: an allgather's size = count x 4 x ranks; CRLF line ends; #wrong N/A */
  FabNcclTestsTable *t = parse("# Collective test starting: all_gather_perf\r\n"
                               "        4096            64     float    none      -1    30.00    0.14    0.13    N/A    "
                               "30.10    0.14    0.13    N/A\r\n", &msg);
  cr_assert_not_null(t, "%s", msg);
  cr_assert_eq(t->ranks, 16);
  cr_assert(isnan(row(t, 0)->wrong[0]));
  cr_assert_float_eq(row(t, 0)->time_us[1], 30.1, 1e-9);
  fab_nccltests_table_free(t);
  /* no name at all: op unknown, the table still read */
  t = parse(ROW8 ROW16, &msg);
  cr_assert_not_null(t, "%s", msg);
  cr_assert_null(t->op);
  cr_assert_eq(t->ranks, 0);
  cr_assert_eq(t->rows->len, 2);
  fab_nccltests_table_free(t);
  /* reduce_perf is not all_reduce_perf; the _mpi build is the same test */
  t = parse("srun ./reduce_perf_mpi -b 8 -e 16 -r 2\n" ROW8, &msg);
  cr_assert_not_null(t, "%s", msg);
  cr_assert_str_eq(t->op, "reduce");
  fab_nccltests_table_free(t);
}

static void expect_error(const char *text, const char *where, const char *what) {
  char *msg = NULL;
  FabNcclTestsTable *t = parse(text, &msg);
  cr_expect_null(t, "expected an error for:\n%s", text);
  fab_nccltests_table_free(t);
  if (!msg) return;
  cr_expect(g_str_has_prefix(msg, where), "'%s' should start with '%s'", msg, where);
  cr_expect(strstr(msg, what) != NULL, "'%s' should contain '%s'", msg, what);
  g_free(msg);
}

Test(nccltests, bad_logs_name_file_and_line) {
  expect_error("# nThread 1\n" ROW8 "          16             4     float     sum      -1    11.58    0.00\n",
               "x.log:3: ", "13 columns");
  expect_error(ROW8 "          16             4     float     sum      -1    fast    0.00    0.00       0    11.29    "
               "0.00    0.00       0\n", "x.log:2: ", "column 6 (out-of-place time (us))");
  expect_error("          16             4     float     sum      -1    1.0    0.00    0.00       0    11.29    "
               "0.00    -3       0\n", "x.log:1: ", "column 12 (in-place busbw (GB/s))");
  expect_error("          16             4     complex     sum      -1    1.0    0.00    0.00       0    11.29    "
               "0.00    0.00       0\n", "x.log:1: ", "column 3 (type)");
  expect_error("          16             4     float     sum      x    1.0    0.00    0.00       0    11.29    "
               "0.00    0.00       0\n", "x.log:1: ", "column 5 (root)");
  expect_error(ROW8 "          16             8      half     sum      -1    11.58    0.00    0.00       0    11.29    "
               "0.00    0.00       0\n", "x.log:2: ", "type half after float");
  expect_error("# nothing here\n#\n\n", "x.log:", "no nccl-tests result rows");
  expect_error("# Collective test starting: all_reduce_perf\n" ROW8 "# Collective test starting: all_gather_perf\n",
               "x.log:3: ", "a second test");
  expect_error("mpirun -np 8 ./scatter_perf -b 8\n" ROW8, "x.log:1: ", "scatter_perf is not a test fabsim models");
  expect_error("./all_reduce_perf -b 8\n./all_gather_perf -b 8\n" ROW8, "x.log:2: ", "all_gather_perf after "
               "all_reduce_perf");
  expect_error("#       size  count  type  redop  root  time  algbw  busbw  #wrong  i_min  i_max\n" ROW8, "x.log:2: ",
               "per-iteration");
}

Test(nccltests, a_bad_log_file_and_a_missing_one) {
  char *path = data_path("all_reduce_perf_truncated.log");
  GError *err = NULL;
  FabNcclTestsTable *t = fab_nccltests_parse_file(path, &err);
  cr_assert_null(t);
  char *where = g_strdup_printf("%s:24: ", path);
  cr_assert(g_str_has_prefix(err->message, where), "%s", err->message);
  cr_assert(strstr(err->message, "13 columns"), "%s", err->message);
  g_clear_error(&err);
  g_free(where);
  g_free(path);
  t = fab_nccltests_parse_file("/nonexistent/all_reduce_perf.log", &err);
  cr_assert_null(t);
  cr_assert(strstr(err->message, "/nonexistent/all_reduce_perf.log: cannot read"), "%s", err->message);
  g_clear_error(&err);
}

/* ---- comparison ---------------------------------------------------------------- */

Test(nccltests, errors_per_size_and_summary) {
  char *msg;
  /* measured on 8 ranks: 1 MiB in 100 us, 2 MiB in 150 us, 4 MiB in 200 us */
  FabNcclTestsTable *m = parse("# Collective test starting: all_reduce_perf\n"
                               "#  Rank  0 Group  0 Pid 1 on h device  0 [0x01] GPU\n"
                               "#  Rank  7 Group  0 Pid 1 on h device  7 [0x01] GPU\n"
                               "     1048576        262144     float     sum      -1   100.00   10.49   18.35       0   "
                               "100.00   10.49   18.35       0\n"
                               "     2097152        524288     float     sum      -1   150.00   13.98   24.47       0   "
                               "150.00   13.98   24.47       0\n"
                               "     4194304       1048576     float     sum      -1   200.00   20.97   36.70       0   "
                               "200.00   20.97   36.70       0\n", &msg);
  cr_assert_not_null(m, "%s", msg);
  cr_assert_eq(m->ranks, 8);
  /* simulated: 1 MiB in 110 us (+10%), 2 MiB in 135 us (-10%), no 4 MiB */
  FabCollRec c[2] = {coll("allreduce", 1048576, 262144, 8, 0, 110 * US),
                            coll("allreduce", 2097152, 524288, 8, 200 * US, 335 * US)};
  FabResults r = {.n_colls = 2, .colls = c};
  GPtrArray *tables = fab_nccltests_from_results(&r, NULL);
  FabNcclTestsCmp *cmp = fab_nccltests_compare(m, tables->pdata[0]);
  cr_assert_eq(cmp->rows->len, 3);
  cr_assert_eq(cmp->matched, 2);
  const FabNcclTestsCmpRow *a = &g_array_index(cmp->rows, FabNcclTestsCmpRow, 0);
  const FabNcclTestsCmpRow *b = &g_array_index(cmp->rows, FabNcclTestsCmpRow, 1);
  const FabNcclTestsCmpRow *z = &g_array_index(cmp->rows, FabNcclTestsCmpRow, 2);
  cr_assert_float_eq(a->time_err, 0.10, 1e-12);
  cr_assert_float_eq(a->busbw_err, 100.0 / 110 - 1, 1e-12, "busbw scales as 1/time: -9.09%%");
  cr_assert_float_eq(a->sim_busbw_GBps, 1048576 / 110.0 / 1e3 * 1.75, 1e-9);
  cr_assert_float_eq(a->meas_busbw_GBps, 18.35, 1e-12, "as the log prints it");
  cr_assert_float_eq(b->time_err, -0.10, 1e-12);
  cr_assert_float_eq(b->busbw_err, 150.0 / 135 - 1, 1e-12, "+11.11%%");
  cr_assert(isnan(z->sim_time_us) && isnan(z->time_err) && isnan(z->busbw_err));
  cr_assert_float_eq(cmp->mean_abs_time_err, 0.10, 1e-12);
  cr_assert_float_eq(cmp->max_abs_time_err, 0.10, 1e-12);
  cr_assert_eq(cmp->max_time_err_bytes, 1048576, "the first of equal errors");
  cr_assert_float_eq(cmp->mean_abs_busbw_err, (10.0 / 110 + 15.0 / 135) / 2, 1e-12);
  cr_assert_float_eq(cmp->max_abs_busbw_err, 15.0 / 135, 1e-12);
  cr_assert_eq(cmp->max_busbw_err_bytes, 2097152);
  char *s = fab_nccltests_cmp_format(cmp);
  char *l1 = line_starting(s, "     1048576"), *l3 = line_starting(s, "     4194304");
  cr_assert_not_null(l1, "%s", s);
  cr_assert_str_eq(l1, "     1048576    100.00    18.35    110.00    16.68    +10.0%     -9.1%  ring/simple");
  cr_assert_str_eq(l3, "     4194304    200.00    36.70       N/A      N/A         -         -");
  cr_assert(strstr(s, "# 2 sizes: time error mean |10.0%|, max |10.0%| at 1 MiB; busbw error mean |10.1%|, max "
                      "|11.1%| at 2 MiB\n"), "%s", s);
  g_free(l1);
  g_free(l3);
  g_free(s);
  fab_nccltests_cmp_free(cmp);
  /* nothing simulated: no errors, a summary that says so */
  cmp = fab_nccltests_compare(m, NULL);
  cr_assert_eq(cmp->matched, 0);
  cr_assert(isnan(cmp->mean_abs_time_err));
  s = fab_nccltests_cmp_summary(cmp);
  cr_assert(strstr(s, "no size was both measured and simulated"), "%s", s);
  g_free(s);
  fab_nccltests_cmp_free(cmp);
  g_ptr_array_free(tables, TRUE);
  fab_nccltests_table_free(m);
}

Test(nccltests, a_stored_log_against_a_simulated_table) {
  char *path = data_path("all_reduce_perf_8gpu.log");
  FabNcclTestsTable *m = fab_nccltests_parse_file(path, NULL);
  cr_assert_not_null(m);
  /* a simulated sweep at exactly the measured out-of-place times: every error is 0 */
  FabCollRec *c = g_new0(FabCollRec, m->rows->len);
  fab_time_t t = 0;
  for (guint i = 0; i < m->rows->len; i++) {
    const FabNcclTestsRow *r = row(m, i);
    fab_time_t d = (fab_time_t)llround(r->time_us[0] * US);
    c[i] = coll("allreduce", r->bytes, r->count, 8, t, t + d);
    t += d;
  }
  FabResults res = {.n_colls = m->rows->len, .colls = c};
  GPtrArray *tables = fab_nccltests_from_results(&res, NULL);
  FabNcclTestsCmp *cmp = fab_nccltests_compare(m, tables->pdata[0]);
  cr_assert_eq(cmp->matched, 28);
  cr_assert_lt(cmp->max_abs_time_err, 1e-9);
  cr_assert_lt(cmp->max_abs_busbw_err, 1e-9);
  fab_nccltests_cmp_free(cmp);
  g_ptr_array_free(tables, TRUE);
  g_free(c);
  fab_nccltests_table_free(m);
  g_free(path);
}

/* ---- the command line ---------------------------------------------------------- */

typedef struct Proc {
  int status;
  char *out, *err;
} Proc;

static Proc run_fabsim(const char *const *args) {
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (char *)fabsim_bin());
  for (int i = 0; args[i]; i++) g_ptr_array_add(argv, (char *)args[i]);
  g_ptr_array_add(argv, NULL);
  Proc p = {0};
  int ws = 0;
  GError *e = NULL;
  cr_assert(g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, &p.out, &p.err, &ws, &e),
            "cannot run %s: %s", fabsim_bin(), e ? e->message : "?");
  g_ptr_array_free(argv, TRUE);
  p.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  return p;
}

static void proc_clear(Proc *p) {
  g_free(p->out);
  g_free(p->err);
}

#define FABSIM(...) run_fabsim((const char *const[]){__VA_ARGS__, NULL})

Test(nccltests_cli, compare_usage_and_bad_input_exit_2) {
  Proc p = FABSIM("compare", "--help");
  cr_assert_eq(p.status, 0);
  cr_assert(g_str_has_prefix(p.out, "usage: fabsim compare SCENARIO MEASURED.log"), "%s", p.out);
  proc_clear(&p);
  p = FABSIM("--help");
  cr_assert(strstr(p.out, "  compare SCENARIO MEASURED.log"), "%s", p.out);
  proc_clear(&p);
  p = FABSIM("compare", "only-one.yaml");
  cr_assert_eq(p.status, 2);
  cr_assert(strstr(p.err, "needs a SCENARIO and a MEASURED.log"), "%s", p.err);
  /* the one parser's usage error: "fabsim compare: message", a blank line, the usage */
  cr_assert(g_str_has_prefix(p.err, "fabsim compare: needs a SCENARIO and a MEASURED.log"), "%s", p.err);
  cr_assert(strstr(p.err, "\n\nusage: fabsim compare SCENARIO MEASURED.log"), "%s", p.err);
  proc_clear(&p);
  p = FABSIM("compare", "a.yaml", "b.log", "--frobnicate");
  cr_assert_eq(p.status, 2);
  cr_assert(strstr(p.err, "unknown option '--frobnicate'"), "%s", p.err);
  cr_assert(g_str_has_prefix(p.err, "fabsim compare: unknown option '--frobnicate'\n\nusage: fabsim compare "), "%s",
            p.err);
  proc_clear(&p);
  /* a bad log: file:line, exit 2, nothing on stdout */
  char *scen = data_path("nccl-tests-8hosts.yaml"), *bad = data_path("all_reduce_perf_truncated.log");
  p = FABSIM("compare", scen, bad);
  cr_assert_eq(p.status, 2, "%s", p.err);
  cr_assert_str_empty(p.out);
  char *where = g_strdup_printf("fabsim: compare: %s:24: ", bad);
  cr_assert(strstr(p.err, where), "%s", p.err);
  proc_clear(&p);
  /* a log that does not say which test, without --op */
  char *dir = g_dir_make_tmp("fabsim-nccltests-XXXXXX", NULL), *anon = g_build_filename(dir, "anon.log", NULL);
  cr_assert(g_file_set_contents(anon, ROW8 ROW16, -1, NULL));
  p = FABSIM("compare", scen, anon);
  cr_assert_eq(p.status, 2);
  cr_assert(strstr(p.err, "say it with --op"), "%s", p.err);
  proc_clear(&p);
  p = FABSIM("compare", scen, anon, "--op", "gather");
  cr_assert_eq(p.status, 2);
  cr_assert(strstr(p.err, "--op gather: expected allreduce"), "%s", p.err);
  proc_clear(&p);
  /* a bad scenario key: exit 2 */
  char *log = data_path("all_reduce_perf_8rank_1MiB.log");
  p = FABSIM("compare", scen, log, "--set", "fabric.link.bandwidth=fast");
  cr_assert_eq(p.status, 2, "%s", p.err);
  cr_assert(strstr(p.err, "fabric.link.bandwidth"), "%s", p.err);
  proc_clear(&p);
  g_unlink(anon);
  g_rmdir(dir);
  g_free(anon);
  g_free(dir);
  g_free(log);
  g_free(where);
  g_free(scen);
  g_free(bad);
}

/* Needs the nccl-tests workload (workload.kind: nccl-tests with sizes). */
Test(nccltests_cli, run_prints_the_nccl_tests_table, .timeout = 240) {
  char *scen = data_path("nccl-tests-8hosts.yaml");
  Proc p = FABSIM("run", scen);
  cr_assert_eq(p.status, 0, "fabsim run %s (the nccl-tests workload): exit %d\n%s", scen, p.status, p.err);
  cr_assert(strstr(p.out, "# Collective test starting: all_reduce_perf (simulated by fabsim: allreduce on 8 ranks)"),
            "%s", p.out);
  cr_assert(strstr(p.out, "#       size         count      type   redop    root     time   algbw   busbw  #wrong"), "%s",
            p.out);
  /* min 8, max 1 MiB, factor 8: 8, 64, 512, 4096, 32768, 262144 */
  char *l = line_starting(p.out, "      262144         65536     float     sum      -1");
  cr_assert_not_null(l, "%s", p.out);
  g_free(l);
  cr_assert(strstr(p.out, "# Avg bus bandwidth    : "), "%s", p.out);
  proc_clear(&p);
  p = FABSIM("run", scen, "--json");
  cr_assert_null(strstr(p.out, "# Collective test starting"), "not in the JSON output");
  proc_clear(&p);
  g_free(scen);
}

Test(nccltests_cli, compare_end_to_end, .timeout = 240) {
  char *scen = data_path("nccl-tests-8hosts.yaml"), *log = data_path("all_reduce_perf_8rank_1MiB.log");
  char *dir = g_dir_make_tmp("fabsim-compare-XXXXXX", NULL), *out = g_build_filename(dir, "cmp", NULL);
  /* the scenario asks 1 MiB max with factor 8; the log's sizes win */
  Proc p = FABSIM("compare", scen, log, "--out", out, "--no-progress");
  cr_assert_eq(p.status, 0, "fabsim compare (needs the nccl-tests workload with workload.sizes): exit %d\n%s",
               p.status, p.err);
  cr_assert(strstr(p.out, "fabsim compare: all_reduce_perf (float, sum)"), "%s", p.out);
  cr_assert(strstr(p.out, "measured   8 ranks"), "%s", p.out);
  cr_assert(strstr(p.out, "simulated  8 ranks"), "%s", p.out);
  for (uint64_t b = 8; b <= 262144; b *= 8) {
    char *prefix = g_strdup_printf("%12" G_GUINT64_FORMAT "  ", b);
    char *l = line_starting(p.out, prefix);
    cr_assert_not_null(l, "a row for %s:\n%s", prefix, p.out);
    cr_assert(strchr(l, '%'), "with an error: %s", l);
    g_free(l);
    g_free(prefix);
  }
  cr_assert(strstr(p.out, "# 6 sizes: time error mean |"), "%s", p.out);
  cr_assert_null(strstr(p.err, "warning"), "same rank count: no warning\n%s", p.err);
  char *csv_path = g_build_filename(out, "compare.csv", NULL), *csv = NULL;
  cr_assert(g_file_get_contents(csv_path, &csv, NULL, NULL), "%s", csv_path);
  cr_assert(g_str_has_prefix(csv, "size_B,count,measured_time_us,measured_algbw_GBps,measured_busbw_GBps,"
                                  "simulated_time_us,"), "%s", csv);
  cr_assert(strstr(csv, "\n262144,65536,78.55,3.34,5.84,"), "%s", csv);
  int lines = 0;
  for (const char *c = csv; *c; c++) lines += *c == '\n';
  cr_assert_eq(lines, 7, "a header and 6 rows:\n%s", csv);
  char *gp = g_find_program_in_path("gnuplot");
  if (gp) {
    char *png = g_build_filename(out, "compare.png", NULL), *data = NULL;
    gsize len = 0;
    cr_assert(g_file_get_contents(png, &data, &len, NULL) && len > 1000 && !memcmp(data, "\x89PNG", 4), "%s", png);
    g_free(data);
    g_free(png);
  } else {
    cr_log_warn("gnuplot is not installed: compare.png not checked");
  }
  g_free(gp);
  proc_clear(&p);
  /* --json: one object; a log from another rank count is compared with a warning */
  p = FABSIM("compare", scen, log, "--json", "--set", "cluster.nodes=4");
  cr_assert_eq(p.status, 0, "%s", p.err);
  cr_assert(g_str_has_prefix(p.out, "{\"fabsim_version\": "), "%s", p.out);
  cr_assert(strstr(p.out, "\"op\": \"allreduce\""), "%s", p.out);
  cr_assert(strstr(p.out, "\"measured_ranks\": 8, \"simulated_ranks\": 4"), "%s", p.out);
  cr_assert(strstr(p.out, "\"time_error_pct\": {\"mean_abs\": "), "%s", p.out);
  cr_assert(strstr(p.err, "warning: ") && strstr(p.err, "ran on 8 ranks"), "%s", p.err);
  proc_clear(&p);
  char *cmd = g_strdup_printf("rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
  g_free(cmd);
  g_free(csv);
  g_free(csv_path);
  g_free(out);
  g_free(dir);
  g_free(scen);
  g_free(log);
}

/* Tests for tools/libfabsim/nccltests.c (nccl-tests tables) and the commands built on
** it: the table of a hand-filled FabResults with values worked out on paper,
** the parsing of stored logs in the real format (tests/data/ *_perf_*.log)
** and of one synthetic log per layout nccl-tests has printed
** (tests/data/nccltests-layouts/), the error computation and the time
** ratios by bound, bad logs giving file:line errors; and, as subprocesses,
** `fabsim run` printing the table and `fabsim compare`.
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
  c[3].algorithm = c[4].algorithm = "tree"; /* the table's algorithm/protocol columns come from here */
  c[3].protocol = c[4].protocol = "ll";
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
  /* then fabsim's algorithm (%12s) and protocol (%8s), where nccl-tests -S puts its timestamp */
  cr_assert(strstr(s, "\n#       size         count      type   redop    root     time   algbw   busbw  #wrong     "
                      "time   algbw   busbw  #wrong     algorithm  protocol\n"), "%s", s);
  cr_assert(strstr(s, "\n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             "
                      "(us)  (GB/s)  (GB/s)         \n"), "%s", s);
  /* the rows: size %12, count %12, type %8, redop %6, root %6, then time %7 algbw %6 busbw %6 #wrong %6 twice,
  ** then the size's algorithm and protocol from the results */
  cr_assert(strstr(s, "\n     1048576        262144     float     sum      -1   100.00   10.49   18.35     N/A   "
                      "100.00   10.49   18.35     N/A          ring    simple\n"), "%s", s);
  cr_assert(strstr(s, "\n     2097152        524288     float     sum      -1   200.00   10.49   18.35     N/A   "
                      "200.00   10.49   18.35     N/A          tree        ll\n"), "%s", s);
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
  /* two tests where one is expected: the second's first row is named, and both are listed */
  expect_error("# Collective test starting: all_reduce_perf\n" ROW8 "# Collective test starting: all_gather_perf\n"
               ROW8, "x.log:4: ", "2 tests in this log: all_reduce_perf (allreduce, 1 size from line 2), "
               "all_gather_perf (allgather, 1 size from line 4); choose one (fabsim compare --op OP)");
  expect_error("mpirun -np 8 ./scatter_perf -b 8\n" ROW8, "x.log:1: ", "scatter_perf is not a test fabsim models");
  expect_error("./all_reduce_perf -b 8\n./all_gather_perf -b 8\n" ROW8, "x.log:2: ", "all_gather_perf after "
               "all_reduce_perf");
  /* a row that does not fit its header's columns says what the header named */
  expect_error("#       size  count  type  redop  root  time  algbw  busbw  #wrong  i_min  i_max\n" ROW8, "x.log:2: ",
               "a result row has 11 columns (as the header on line 1 names them: size count type redop root time algbw "
               "busbw #wrong i_min i_max), found 13");
}

/* A row of the current layout with one value given as text (the others good). */
static char *row_with(int col, const char *v) {
  const char *tok[13] = {"16", "4", "float", "sum", "-1", "11.58", "0.00", "0.00", "0", "11.29", "0.00", "0.00", "0"};
  tok[col - 1] = v;
  GString *s = g_string_new(NULL);
  for (int i = 0; i < 13; i++) g_string_append_printf(s, "  %s", tok[i]);
  g_string_append_c(s, '\n');
  return g_string_free(s, FALSE);
}

static void expect_bad_value(int col, const char *v, const char *what) {
  char *r = row_with(col, v), *text = g_strconcat(ROW8, r, NULL);
  expect_error(text, "x.log:2: ", what);
  g_free(text);
  g_free(r);
}

Test(nccltests, bad_values_name_the_line_and_column) {
  /* a size or count that is not a whole number up to 2^63 - 1 is an error, not a line skipped as noise */
  expect_bad_value(1, "99999999999999999999", "column 1 (size): expected a whole number of bytes, found "
                   "'99999999999999999999' (out of range");
  expect_bad_value(1, "18446744073709551615", "column 1 (size): expected a whole number of bytes");
  expect_bad_value(1, "8.5", "column 1 (size): expected a whole number of bytes, found '8.5' (not a whole number)");
  expect_bad_value(1, "-8", "column 1 (size): expected a whole number of bytes, found '-8' (negative)");
  expect_bad_value(1, "1e3", "column 1 (size)");
  expect_bad_value(1, "0x10", "column 1 (size)");
  expect_bad_value(1, "lots", "column 1 (size)");
  expect_bad_value(2, "4.5", "column 2 (count): expected a whole number of elements, found '4.5'");
  expect_bad_value(2, "-4", "column 2 (count)");
  expect_bad_value(2, "99999999999999999999", "column 2 (count)");
  /* times and bandwidths: non-negative decimal numbers or N/A */
  expect_bad_value(6, "0x10", "column 6 (out-of-place time (us))");
  expect_bad_value(6, "-1.5", "column 6 (out-of-place time (us)): expected a non-negative number or N/A");
  expect_bad_value(7, "1e999", "column 7 (out-of-place algbw (GB/s))");
  expect_bad_value(8, "nan", "column 8 (out-of-place busbw (GB/s))");
  expect_bad_value(11, "inf", "column 11 (in-place algbw (GB/s))");
  /* #wrong: a count; non-zero means nccl-tests found the results wrong */
  expect_bad_value(9, "3", "column 9 (out-of-place #wrong): nccl-tests reported 3 wrong results; the row is not a "
                   "measurement");
  expect_bad_value(13, "1", "column 13 (in-place #wrong): nccl-tests reported 1 wrong results");
  expect_bad_value(13, "0.5", "column 13 (in-place #wrong): expected a count of wrong elements or N/A");
  expect_bad_value(9, "-1", "column 9 (out-of-place #wrong)");
  /* N/A where nccl-tests prints it, and 2.0-2.12's error column (a deviation, not a count) still read */
  char *msg, *r = row_with(9, "N/A"), *text = g_strconcat(ROW8, r, NULL);
  FabNcclTestsTable *t = parse(text, &msg);
  cr_assert_not_null(t, "%s", msg);
  cr_assert_eq(t->rows->len, 2);
  fab_nccltests_table_free(t);
  g_free(text);
  t = parse("#  size  count  type  redop  time  algbw  busbw  error  time  algbw  busbw  error\n"
            "   16  4  float  sum  11.58  0.00  0.00  2e-07  11.29  0.00  0.00  2e-07\n", &msg);
  cr_assert_not_null(t, "%s", msg);
  cr_assert_float_eq(row(t, 0)->wrong[0], 2e-07, 1e-12);
  fab_nccltests_table_free(t);
  g_free(r);
  /* noise that only starts like a number is still skipped */
  t = parse("10.0.0.1 is up\n" ROW8, &msg);
  cr_assert_not_null(t, "%s", msg);
  fab_nccltests_table_free(t);
}

/* A JSON summary with one nccl-tests collective; `key`'s value replaced by `v` (NULL: as is). */
static char *summary_with(const char *key, const char *v) {
  static const char *const kv[][2] = {
    {"status", "\"ok\""}, {"failure", "null"}, {"op", "\"allreduce\""}, {"bytes", "1048576"}, {"count", "262144"},
    {"dtype_bytes", "4"}, {"ranks", "8"}, {"root", "-1"}, {"algorithm", "\"ring\""}, {"protocol", "\"simple\""},
    {"tag", "\"nccl-tests\""}, {"job", "0"}, {"start_s", "0.001"}, {"end_s", "0.0011"}};
  GString *s = g_string_new("{\n");
  for (size_t i = 0; i < G_N_ELEMENTS(kv); i++) {
    if (i == 2) g_string_append(s, "  \"collectives\": [\n    {");
    g_string_append_printf(s, "%s\"%s\": %s", i == 2 ? "" : i > 2 ? ", " : "  ", kv[i][0],
                           key && !strcmp(key, kv[i][0]) ? v : kv[i][1]);
    if (i < 2) g_string_append(s, ",\n");
  }
  g_string_append(s, "}\n  ]\n}\n");
  return g_string_free(s, FALSE);
}

static void expect_summary_error(const char *key, const char *v, const char *what) {
  char *text = summary_with(key, v);
  GError *err = NULL;
  GPtrArray *tests = fab_nccltests_from_summary(text, "s.json", &err);
  cr_expect_null(tests, "%s: %s accepted", key, v);
  if (tests) g_ptr_array_free(tests, TRUE);
  if (err) cr_expect(strstr(err->message, what), "'%s' should contain '%s'", err->message, what);
  g_clear_error(&err);
  g_free(text);
}

Test(nccltests, bad_summaries_name_file_key_and_place) {
  char *text = summary_with(NULL, NULL);
  GError *err = NULL;
  GPtrArray *tests = fab_nccltests_from_summary(text, "s.json", &err);
  cr_assert_not_null(tests, "%s", err ? err->message : "");
  const FabNcclTestsTable *t = tests->pdata[0];
  cr_assert_eq(row(t, 0)->bytes, 1048576);
  cr_assert_float_eq(row(t, 0)->time_us[0], 100, 1e-6);
  g_ptr_array_free(tests, TRUE);
  g_free(text);
  expect_summary_error("end_s", "-1", "s.json:5:");
  expect_summary_error("end_s", "-1", ": collectives[0].end_s: expected a time in seconds (a number >= 0, or null: "
                       "not completed), found -1");
  expect_summary_error("end_s", "\"x\"", "collectives[0].end_s: expected a time in seconds");
  expect_summary_error("end_s", "0.0005", "collectives[0].end_s: ends (0.0005 s) before it starts (0.001 s)");
  expect_summary_error("start_s", "null", "collectives[0].start_s: expected a time in seconds (a number >= 0), found "
                       "null");
  expect_summary_error("bytes", "-16", "collectives[0].bytes: expected a whole number of bytes, found -16");
  expect_summary_error("bytes", "true", "collectives[0].bytes: expected a whole number of bytes, found true");
  expect_summary_error("bytes", "null", "collectives[0].bytes");
  expect_summary_error("bytes", "8.5", "collectives[0].bytes");
  expect_summary_error("bytes", "99999999999999999999", "collectives[0].bytes");
  expect_summary_error("count", "\"5\"", "collectives[0].count");
  expect_summary_error("ranks", "-8", "collectives[0].ranks");
  expect_summary_error("root", "-2", "collectives[0].root: expected a rank or -1");
  expect_summary_error("op", "7", "collectives[0].op: expected a string, found 7");
  expect_summary_error("status", "\"failed\"", "s.json:2:13: status: \"failed\": the run did not complete; its "
                       "collectives are not a measurement");
  text = summary_with("status", "\"failed\"");
  char **parts = g_strsplit(text, "\"failure\": null", 2);
  char *why = g_strjoinv("\"failure\": \"a link is down\"", parts);
  g_strfreev(parts);
  tests = fab_nccltests_from_summary(why, "s.json", &err);
  cr_assert_null(tests);
  cr_assert(strstr(err->message, "did not complete: \"a link is down\";"), "%s", err->message);
  g_clear_error(&err);
  g_free(why);
  g_free(text);
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

/* ---- every layout nccl-tests has printed (tests/data/nccltests-layouts/, synthetic) ---- */

static char *layout_path(const char *name) {
  return g_build_filename(src_dir(), "tests", "data", "nccltests-layouts", name, NULL);
}

/* The test of `op` (NULL: the only one) in a stored layout log; *ntests the tests in it. */
static FabNcclTestsTable *layout(const char *name, const char *op, guint *ntests) {
  char *path = layout_path(name);
  GError *err = NULL;
  GPtrArray *tests = fab_nccltests_read_tests(path, &err);
  cr_assert_not_null(tests, "%s", err ? err->message : "");
  if (ntests) *ntests = tests->len;
  FabNcclTestsTable *t = fab_nccltests_choose(tests, op, path, &err);
  cr_assert_not_null(t, "%s", err ? err->message : "");
  g_ptr_array_free(tests, TRUE);
  g_free(path);
  return t;
}

/* Row i's size, count, out-of-place and in-place time (us) and busbw, as the log prints them. */
static void expect_row(const FabNcclTestsTable *t, guint i, uint64_t bytes, uint64_t count, double t0, double t1,
                       double bus0, double bus1) {
  const FabNcclTestsRow *r = row(t, i);
  cr_expect_eq(r->bytes, bytes, "row %u: %" G_GUINT64_FORMAT " B", i, r->bytes);
  cr_expect_eq(r->count, count, "row %u: count %" G_GUINT64_FORMAT, i, r->count);
  cr_expect(isnan(t0) ? isnan(r->time_us[0]) : fabs(r->time_us[0] - t0) < 1e-9, "row %u: out-of-place %g us", i,
            r->time_us[0]);
  cr_expect(isnan(t1) ? isnan(r->time_us[1]) : fabs(r->time_us[1] - t1) < 1e-9, "row %u: in-place %g us", i,
            r->time_us[1]);
  cr_expect(isnan(bus0) ? isnan(r->busbw_GBps[0]) : fabs(r->busbw_GBps[0] - bus0) < 1e-9, "row %u: busbw %g", i,
            r->busbw_GBps[0]);
  cr_expect(isnan(bus1) ? isnan(r->busbw_GBps[1]) : fabs(r->busbw_GBps[1] - bus1) < 1e-9, "row %u: in-place busbw %g",
            i, r->busbw_GBps[1]);
}

/* 1.x: "bytes N type op time algbw busbw res", time in ms; nThread line and footer without '#' */
Test(nccltests_layouts, v1_bytes_n_op_res_time_in_ms) {
  FabNcclTestsTable *t = layout("v1-all_reduce-bytes-N-op-res-ms.log", NULL, NULL);
  cr_assert_str_eq(t->op, "allreduce", "from the '$ ./build/all_reduce_perf' line");
  cr_assert_eq(t->ranks, 4, "'#   Rank  N on host' lines, 0 to 3");
  cr_assert_eq(t->ngpus, 4, "from 'nThread 1 nGpus 4' without a '#'");
  cr_assert_eq(t->iters, 20);
  cr_assert_eq(t->groups, 2);
  cr_assert_str_eq(t->check, "res");
  cr_assert_eq(t->header_line, 11);
  cr_assert_eq(t->rows->len, 3);
  /* "0.031" ms out-of-place, "0.030" in-place: 31 and 30 us */
  expect_row(t, 0, 1024, 256, 31, 30, 0.05, 0.05);
  expect_row(t, 2, 1048576, 262144, 1024, 1000, 1.54, 1.57);
  cr_assert_str_eq(row(t, 0)->redop, "sum", "the 'op' column");
  cr_assert_eq(row(t, 0)->root, -1, "no root column");
  cr_assert_float_eq(row(t, 0)->wrong[0], 1e-07, 1e-15, "res: the largest deviation");
  cr_assert_float_eq(t->avg_busbw_GBps, 0.487113, 1e-12, "' Avg bus bandwidth' without a '#'");
  fab_nccltests_table_free(t);
}

/* 1.x broadcast: one group (out-of-place), a root column, "\tN/A" for -c 0; no name in the log */
Test(nccltests_layouts, v1_broadcast_out_of_place_only) {
  guint n;
  FabNcclTestsTable *t = layout("v1-broadcast-out-of-place-only.log", "broadcast", &n);
  cr_assert_eq(n, 1);
  cr_assert_str_eq(t->op, "broadcast", "the log does not say: the caller's op");
  cr_assert_eq(t->groups, 1);
  cr_assert_eq(t->root, 1);
  cr_assert_str_eq(row(t, 0)->redop, "none", "no redop column");
  expect_row(t, 0, 4096, 1024, 40, NAN, 0.10, NAN);
  expect_row(t, 1, 262144, 65536, 125, NAN, 2.10, NAN);
  cr_assert(isnan(row(t, 1)->wrong[0]), "N/A after a tab");
  fab_nccltests_table_free(t);
}

/* 2.0-2.12: the log: redop but no root, "error" a float, 12 columns; mpirun, NCCL INFO/WARN lines before
** the header and between rows */
Test(nccltests_layouts, v2_no_root_error_column) {
  FabNcclTestsTable *t = layout("v2.11-all_reduce-redop-no-root-error.log", NULL, NULL);
  cr_assert_str_eq(t->op, "allreduce");
  cr_assert_eq(t->ranks, 16, "'#   Rank 15 Pid ...' on the second node");
  cr_assert_str_eq(t->check, "error");
  cr_assert_eq(t->header_line, 29);
  cr_assert_eq(t->rows->len, 5, "the NCCL INFO line on line 33 is skipped");
  expect_row(t, 0, 4, 1, 47.54, 49.35, 0, 0);
  expect_row(t, 2, 262144, 65536, 88.40, 87.90, 5.56, 5.59);
  expect_row(t, 3, 67108864, 16777216, 702.2, 698.6, 179.19, 180.12);
  expect_row(t, 4, 1073741824, 268435456, 9500.5, 9480.1, 211.91, 212.37);
  cr_assert_eq(row(t, 2)->line, 34);
  cr_assert_eq(row(t, 0)->root, -1);
  cr_assert_float_eq(row(t, 0)->wrong[1], 4e-07, 1e-15, "error 4e-07 in-place");
  cr_assert_float_eq(row(t, 0)->wrong[0], 0, 1e-15, "0e+00");
  fab_nccltests_table_free(t);
}

/* 2.0-2.12 all_gather: neither redop nor root; error N/A (-c 0) */
Test(nccltests_layouts, v2_no_redop_no_root) {
  FabNcclTestsTable *t = layout("v2.11-all_gather-no-redop-no-root.log", NULL, NULL);
  cr_assert_str_eq(t->op, "allgather");
  cr_assert_eq(t->ranks, 8);
  cr_assert_eq(t->rows->len, 3);
  expect_row(t, 0, 8192, 256, 25.10, 24.90, 0.29, 0.29);
  expect_row(t, 2, 134217728, 4194304, 1603.8, 1598.2, 73.23, 73.48);
  cr_assert_str_eq(row(t, 2)->redop, "none");
  cr_assert_eq(row(t, 2)->root, -1);
  cr_assert(isnan(row(t, 2)->wrong[0]) && isnan(row(t, 2)->wrong[1]));
  fab_nccltests_table_free(t);
}

/* 2.0-2.12 broadcast: a root column but no redop; "%7.0f" times above 10 ms */
Test(nccltests_layouts, v2_root_no_redop) {
  FabNcclTestsTable *t = layout("v2.11-broadcast-root-no-redop.log", NULL, NULL);
  cr_assert_str_eq(t->op, "broadcast");
  cr_assert_eq(t->root, 1);
  cr_assert_eq(t->ranks, 2);
  expect_row(t, 0, 8, 2, 45.82, 38.17, 0, 0);
  expect_row(t, 2, 134217728, 33554432, 11250, 11240, 11.93, 11.94);
  cr_assert_str_eq(row(t, 2)->redop, "none");
  fab_nccltests_table_free(t);
}

/* 2.0-2.12 reduce: redop and root */
Test(nccltests_layouts, v2_redop_and_root) {
  FabNcclTestsTable *t = layout("v2.11-reduce-redop-root-error.log", NULL, NULL);
  cr_assert_str_eq(t->op, "reduce");
  cr_assert_eq(t->root, 2);
  cr_assert_str_eq(row(t, 0)->redop, "max");
  expect_row(t, 0, 1048576, 262144, 30.50, 30.25, 34.38, 34.66);
  expect_row(t, 1, 4194304, 1048576, 70.25, 69.50, 59.71, 60.35);
  fab_nccltests_table_free(t);
}

/* 2.13-2.17: every column, "busbw #wrong" one blank apart; the log names no test */
Test(nccltests_layouts, v213_wrong_count) {
  FabNcclTestsTable *t = layout("v2.13-reduce_scatter-wrong.log", NULL, NULL);
  cr_assert_null(t->op, "no command line, no 'Collective test starting'");
  cr_assert_str_eq(t->check, "#wrong");
  cr_assert_eq(t->ranks, 8);
  expect_row(t, 0, 65536, 2048, 24.50, 23.75, 2.34, 2.41);
  expect_row(t, 2, 16777216, 524288, 180.4, 178.8, 81.38, 82.10);
  cr_assert_float_eq(row(t, 2)->wrong[0], 0, 1e-15);
  fab_nccltests_table_free(t);
  /* named by the caller, it is a reduce-scatter whose ranks the device lines gave */
  t = layout("v2.13-reduce_scatter-wrong.log", "reduce-scatter", NULL);
  cr_assert_str_eq(t->op, "reduce-scatter");
  cr_assert_str_eq(t->binary, "reduce_scatter_perf");
  fab_nccltests_table_free(t);
}

/* 2.18 with the copy-overlap side work: copybw in each group, read past */
Test(nccltests_layouts, v218_copybw) {
  FabNcclTestsTable *t = layout("v2.18-copybw.log", NULL, NULL);
  cr_assert_eq(t->rows->len, 1);
  expect_row(t, 0, 2097152, 524288, 40.50, 40.25, 51.78, 52.10);
  cr_assert_float_eq(row(t, 0)->wrong[1], 0, 1e-15, "#wrong after copybw 12.34");
  fab_nccltests_table_free(t);
}

/* 2.19 -C 1: the time columns are "cputime" */
Test(nccltests_layouts, v219_cputime) {
  FabNcclTestsTable *t = layout("v2.19-cputime.log", NULL, NULL);
  cr_assert_str_eq(t->op, "allreduce");
  cr_assert_eq(t->ranks, 2);
  expect_row(t, 0, 8, 2, 9.50, 9.25, 0, 0);
  expect_row(t, 1, 8388608, 2097152, 125.5, 124.5, 66.84, 67.38);
  fab_nccltests_table_free(t);
}

/* 2.19 -S 1: "2026-03-02 10:15:01" after the in-place group, two tokens */
Test(nccltests_layouts, v219_timestamp) {
  FabNcclTestsTable *t = layout("v2.19-timestamp.log", NULL, NULL);
  cr_assert_eq(t->rows->len, 2);
  expect_row(t, 0, 1024, 256, 10.25, 10.50, 0.10, 0.10);
  expect_row(t, 1, 1048576, 262144, 30.50, 30.75, 34.38, 34.10);
  cr_assert_float_eq(row(t, 1)->wrong[1], 0, 1e-15);
  fab_nccltests_table_free(t);
}

/* 2.19 -I 1: i_min i_max i_p99 i_cv% in each group: the time is the mean's, not i_min's */
Test(nccltests_layouts, v219_per_iteration) {
  FabNcclTestsTable *t = layout("v2.19-per-iteration.log", NULL, NULL);
  cr_assert_str_eq(t->op, "allgather");
  cr_assert_eq(t->ranks, 4);
  expect_row(t, 0, 4096, 256, 12.50, 12.25, 0.25, 0.25);
  expect_row(t, 1, 4194304, 262144, 60.50, 60.25, 52.00, 52.21);
  fab_nccltests_table_free(t);
}

/* Three tests in one file: each its own table; the caller picks one, or is told which there are */
Test(nccltests_layouts, several_tests_in_one_log) {
  guint n;
  FabNcclTestsTable *t = layout("multi-collective.log", "allgather", &n);
  cr_assert_eq(n, 3);
  cr_assert_str_eq(t->binary, "all_gather_perf");
  cr_assert_eq(t->ranks, 8, "its own device lines");
  cr_assert_eq(t->line, 45);
  cr_assert_eq(t->rows->len, 2);
  expect_row(t, 0, 1048576, 32768, 15.50, 15.25, 59.19, 60.16);
  cr_assert_float_eq(t->avg_busbw_GBps, 89.3, 1e-12, "its own footer");
  fab_nccltests_table_free(t);
  t = layout("multi-collective.log", "send-recv", NULL);
  expect_row(t, 0, 1048576, 262144, 12.50, 12.25, 83.89, 85.60);
  fab_nccltests_table_free(t);
  char *path = layout_path("multi-collective.log");
  GError *err = NULL;
  GPtrArray *tests = fab_nccltests_read_tests(path, &err);
  cr_assert_eq(tests->len, 3);
  cr_assert_str_eq(((FabNcclTestsTable *)tests->pdata[0])->op, "allreduce");
  cr_assert_eq(((FabNcclTestsTable *)tests->pdata[0])->rows->len, 2);
  cr_assert_null(fab_nccltests_choose(tests, NULL, path, &err));
  char *where = g_strdup_printf("%s:45: 3 tests in this log: all_reduce_perf (allreduce, 2 sizes from line 21), "
                                "all_gather_perf (allgather, 2 sizes from line 45), sendrecv_perf (send-recv, 1 size "
                                "from line 69); choose one (fabsim compare --op OP)", path);
  cr_assert_str_eq(err->message, where);
  g_clear_error(&err);
  cr_assert_null(fab_nccltests_choose(tests, "reduce", path, &err));
  cr_assert(strstr(err->message, ":21: no reduce test in this log; it holds all_reduce_perf (allreduce, 2 sizes from "
                   "line 21), all_gather_perf"), "%s", err->message);
  g_clear_error(&err);
  g_ptr_array_free(tests, TRUE);
  g_free(where);
  g_free(path);
  /* the same test twice */
  tests = fab_nccltests_parse_tests("# Collective test starting: all_reduce_perf\n" ROW8
                                    "# Collective test starting: all_reduce_perf\n" ROW16, "x.log", &err);
  cr_assert_eq(tests->len, 2);
  cr_assert_null(fab_nccltests_choose(tests, "allreduce", "x.log", &err));
  cr_assert(g_str_has_prefix(err->message, "x.log:4: 2 allreduce tests in this log"), "%s", err->message);
  g_clear_error(&err);
  g_ptr_array_free(tests, TRUE);
}

/* N/A in value columns: kept as NAN; the comparison takes the in-place time where out-of-place has none */
Test(nccltests_layouts, na_values) {
  FabNcclTestsTable *t = layout("na-values.log", NULL, NULL);
  expect_row(t, 0, 65536, 16384, NAN, 20.00, NAN, 3.28);
  expect_row(t, 1, 131072, 32768, 25.00, NAN, 5.24, NAN);
  cr_assert(isnan(row(t, 1)->wrong[0]));
  /* simulated on 2 ranks: 64 KiB in 40 us, 128 KiB in 25 us */
  FabCollRec c[2] = {coll("allreduce", 65536, 16384, 2, 0, 40 * US), coll("allreduce", 131072, 32768, 2, 50 * US,
                                                                          75 * US)};
  FabResults r = {.n_colls = 2, .colls = c};
  GPtrArray *sim = fab_nccltests_from_results(&r, NULL);
  FabNcclTestsCmp *cmp = fab_nccltests_compare(t, sim->pdata[0]);
  const FabNcclTestsCmpRow *a = &g_array_index(cmp->rows, FabNcclTestsCmpRow, 0);
  const FabNcclTestsCmpRow *b = &g_array_index(cmp->rows, FabNcclTestsCmpRow, 1);
  cr_assert(a->meas_in_place, "64 KiB: out-of-place N/A, in-place 20 us");
  cr_assert_float_eq(a->meas_time_us, 20, 1e-12);
  cr_assert_float_eq(a->time_ratio, 2.0, 1e-12);
  cr_assert(!b->meas_in_place);
  cr_assert_float_eq(b->time_ratio, 1.0, 1e-12);
  char *s = fab_nccltests_cmp_format(cmp);
  char *l = line_starting(s, "       65536");
  /* the line through 128 KiB (25 us): 5 us per 64 KiB, so 64 KiB's bytes take 5 of its 20 us: latency-bound */
  cr_assert_str_eq(l, "       65536     20.00     3.28     40.00     1.64     2.00x  latency    ring/simple  (measured "
                   "in-place)");
  g_free(l);
  g_free(s);
  fab_nccltests_cmp_free(cmp);
  g_ptr_array_free(sim, TRUE);
  fab_nccltests_table_free(t);
}

/* Launchers' prefixes before each line: Open MPI --tag-output, srun --label, MPICH -prepend-rank */
Test(nccltests_layouts, launcher_prefixes) {
  FabNcclTestsTable *t = layout("openmpi-tag-output.log", NULL, NULL);
  cr_assert_str_eq(t->op, "broadcast");
  cr_assert_eq(t->ranks, 2);
  cr_assert_eq(t->root, 0);
  expect_row(t, 1, 16777216, 4194304, 850.50, 849.50, 19.73, 19.75);
  fab_nccltests_table_free(t);
  t = layout("srun-label.log", NULL, NULL);
  cr_assert_str_eq(t->op, "all-to-all");
  cr_assert_eq(t->ranks, 4);
  expect_row(t, 0, 65536, 4096, 30.50, 30.25, 2.15, 2.17);
  fab_nccltests_table_free(t);
  char *msg;
  t = parse("[0] # Collective test starting: all_gather_perf\n[0] #  Rank  5 Group  0 Pid 1 on h device 5 [0x1] G\n"
            "[0] " ROW16, &msg);
  cr_assert_not_null(t, "%s", msg);
  cr_assert_str_eq(t->op, "allgather");
  cr_assert_eq(t->ranks, 6);
  expect_row(t, 0, 16, 4, 11.58, 11.29, 0, 0);
  fab_nccltests_table_free(t);
}

/* fabsim's own table (the algorithm and protocol after nccl-tests' columns) reads back as a measured log */
Test(nccltests_layouts, fabsim_table_reads_back) {
  FabCollRec c[5];
  FabResults r = allreduce_results(c);
  GPtrArray *tables = fab_nccltests_from_results(&r, NULL);
  char *text = fab_nccltests_format(tables->pdata[0]), *msg;
  FabNcclTestsTable *t = parse(text, &msg);
  cr_assert_not_null(t, "%s\n%s", msg, text);
  cr_assert_str_eq(t->op, "allreduce", "from '# Collective test starting: all_reduce_perf (simulated by fabsim...'");
  cr_assert_eq(t->header_line, 4);
  cr_assert_eq(t->rows->len, 2);
  expect_row(t, 0, 1048576, 262144, 100, 100, 18.35, 18.35);
  expect_row(t, 1, 2097152, 524288, 200, 200, 18.35, 18.35);
  cr_assert(isnan(row(t, 1)->wrong[0]));
  cr_assert_float_eq(t->avg_busbw_GBps, 18.3501, 1e-12);
  fab_nccltests_table_free(t);
  g_free(text);
  g_ptr_array_free(tables, TRUE);
}

/* A header fabsim cannot read, or rows that do not fit it: file:line and what is wrong */
Test(nccltests_layouts, unknown_and_broken_layouts_refused) {
  expect_error("# nThread 1\n#  size  count  type  redop  time  algbw  busbw  latency  time  algbw  busbw  latency\n",
               "x.log:2: ", "column 8 of the header: unknown column 'latency'");
  expect_error("#  size count type time algbw busbw #wrong time algbw busbw #wrong time algbw busbw #wrong\n",
               "x.log:1: ", "column 12 of the header: a third 'time' column");
  expect_error("#  size count type redop time algbw #wrong time algbw busbw #wrong\n", "x.log:1: ",
               "the column header has no 'busbw' column in the out-of-place");
  expect_error("#  size count time type algbw busbw\n", "x.log:1: ", "column 4 of the header: 'type' after the first "
               "'time' column");
  expect_error("#  size count type algbw time busbw\n", "x.log:1: ", "column 4 of the header: 'algbw' before the first "
               "'time' column");
  expect_error("#  size type redop time algbw busbw\n", "x.log:1: ", "the column header has no 'count' column");
  /* the 12-column rows under a 13-column header, and 13 under 12 */
  expect_error("#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
               "  1024  256  float  sum  46.58  0.02  0.04  0e+00  46.42  0.02  0.04  4e-07\n", "x.log:2: ",
               "a result row has 13 columns (as the header on line 1 names them: size count type redop root time "
               "algbw busbw #wrong time algbw busbw #wrong), found 12");
  expect_error("#  size count type redop time algbw busbw error time algbw busbw error\n" ROW8, "x.log:2: ",
               "a result row has 12 columns (as the header on line 1 names them: size count type redop time algbw "
               "busbw error time algbw busbw error), found 13");
  /* a stored log of the layout with one row cut short: its file and line */
  char *path = layout_path("v2.11-all_reduce-redop-no-root-error.log"), *text = NULL;
  cr_assert(g_file_get_contents(path, &text, NULL, NULL));
  char *cut = strstr(text, "  9500.5");
  cut[0] = '\n', cut[1] = 0;
  expect_error(text, "x.log:36: ", "a result row has 12 columns");
  g_free(text);
  g_free(path);
}

/* A log that stops before the bandwidth plateau: its sizes stay latency-bound
** (the old rule, half the log's own peak, called its largest bandwidth-bound);
** one that starts past it: all bandwidth-bound. */
Test(nccltests, bound_by_the_time_growth_not_the_peak) {
  char *msg;
  FabNcclTestsTable *m = parse("# Collective test starting: all_reduce_perf\n"
                               "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong\n"
                               "     8     2  float  sum  -1   38.00   0.00   0.00  0   38.00   0.00   0.00  0\n"
                               "   512   128  float  sum  -1   38.10   0.01   0.01  0   38.10   0.01   0.01  0\n"
                               "  4096  1024  float  sum  -1   38.30   0.11   0.19  0   38.30   0.11   0.19  0\n", &msg);
  cr_assert_not_null(m, "%s", msg);
  FabNcclTestsCmp *cmp = fab_nccltests_compare(m, NULL);
  for (guint i = 0; i < 3; i++)
    cr_expect_eq(g_array_index(cmp->rows, FabNcclTestsCmpRow, i).bound, FAB_NCCLTESTS_LATENCY_BOUND, "row %u", i);
  fab_nccltests_cmp_free(cmp);
  fab_nccltests_table_free(m);
  m = parse("# Collective test starting: all_reduce_perf\n"
            "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong\n"
            "  1073741824  268435456  float  sum  -1  4000.0  268.44  268.44  0  4000.0  268.44  268.44  0\n"
            "  2147483648  536870912  float  sum  -1  7900.0  271.83  271.83  0  7900.0  271.83  271.83  0\n", &msg);
  cr_assert_not_null(m, "%s", msg);
  cmp = fab_nccltests_compare(m, NULL);
  for (guint i = 0; i < 2; i++)
    cr_expect_eq(g_array_index(cmp->rows, FabNcclTestsCmpRow, i).bound, FAB_NCCLTESTS_BANDWIDTH_BOUND, "row %u", i);
  fab_nccltests_cmp_free(cmp);
  fab_nccltests_table_free(m);
}

/* NCCL's log printed into the middle of a row (NCCL_DEBUG=INFO on the same stdout) is named as the cause */
Test(nccltests_layouts, nccl_info_inside_a_row) {
  expect_error("#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
               "     8     2  float  sum  -1h1:10:20 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n",
               "x.log:2: ", "found 16 (NCCL's log was printed into this row: set NCCL_DEBUG_FILE to keep it apart)");
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
  /* the time ratio 110 / 100; 1 MiB: the line through 2 MiB (150 us) gives 50 us per MiB, so its bytes take
  ** 50 of its 100 us, exactly half: bandwidth-bound; 4 MiB: 100 of 200 us through 2 MiB, bandwidth-bound */
  cr_assert_str_eq(l1, "     1048576    100.00    18.35    110.00    16.68     1.10x  bandwidth  ring/simple");
  cr_assert_str_eq(l3, "     4194304    200.00    36.70       N/A      N/A         -  bandwidth");
  /* both matched sizes bandwidth-bound: geomean sqrt(1.1 x 0.9) = 0.995, the worst |ln| is 0.9's */
  cr_assert(strstr(s, "# bandwidth-bound 2 sizes (1 MiB to 2 MiB): geomean 0.99x, worst 0.90x at 2 MiB\n"
                      "# latency-bound   no size\n"), "%s", s);
  cr_assert(strstr(s, "# bandwidth-bound: moving the bytes takes at least half the measured time (latency + size / "
                      "bandwidth through the next smaller size); latency-bound: below; peak busbw 36.70 GB/s at 4 MiB\n"),
            "%s", s);
  char *sum = fab_nccltests_cmp_summary(cmp);
  cr_assert_str_eq(sum, "sim/meas time, geomean: bandwidth-bound 0.99x (2 sizes, worst 0.90x at 2 MiB); latency-bound "
                   "no size");
  g_free(sum);
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

/* The summary by bound on a hand-made table, allreduce on 2 ranks (busbw = algbw):
**   size    measured        algbw (GB/s)   bound       simulated  ratio
**   8 B     10 us           0.0008         latency     2.5 us     0.25
**   1 KiB   10 us           0.1024         latency     5 us       0.50
**   1 MiB   120 us          8.738          latency     120 us     1.00
**   4 MiB   200 us          20.97 (peak)   bandwidth   220 us     1.10
**   16 MiB  800 us          20.97          bandwidth   800 us     1.00
** Half the peak is 10.49 GB/s. Latency-bound: geomean (0.25 x 0.5 x 1)^(1/3) = 0.50, worst 0.25 at 8 B;
** bandwidth-bound: geomean sqrt(1.1) = 1.05, worst 1.10 at 4 MiB. Summed |ln ratio|: latency ln 4 + ln 2 =
** 2.0794, bandwidth ln 1.1 = 0.0953: the latency-bound sizes carry 2.0794 / 2.1747 = 95.6% of it. The old
** summary's busbw error at 8 B is +300%: the 2.5 us the model misses reads as a 4x bandwidth. */
Test(nccltests, time_ratios_by_bound) {
  char *msg;
  FabNcclTestsTable *m = parse("# Collective test starting: all_reduce_perf\n"
                               "#  Rank  0 Group  0 Pid 1 on h device  0 [0x01] GPU\n"
                               "#  Rank  1 Group  0 Pid 1 on h device  1 [0x02] GPU\n"
                               "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong\n"
                               "         8         2  float  sum  -1   10.00   0.00   0.00  0   10.00   0.00   0.00  0\n"
                               "      1024       256  float  sum  -1   10.00   0.10   0.10  0   10.00   0.10   0.10  0\n"
                               "   1048576    262144  float  sum  -1  120.00   8.74   8.74  0  120.00   8.74   8.74  0\n"
                               "   4194304   1048576  float  sum  -1  200.00  20.97  20.97  0  200.00  20.97  20.97  0\n"
                               "  16777216   4194304  float  sum  -1  800.00  20.97  20.97  0  800.00  20.97  20.97  0\n",
                               &msg);
  cr_assert_not_null(m, "%s", msg);
  cr_assert_eq(m->ranks, 2);
  FabCollRec c[5] = {
    coll("allreduce", 8, 2, 2, 0, 2500000), coll("allreduce", 1024, 256, 2, 10 * US, 15 * US),
    coll("allreduce", 1048576, 262144, 2, 20 * US, 140 * US), coll("allreduce", 4194304, 1048576, 2, 200 * US, 420 * US),
    coll("allreduce", 16777216, 4194304, 2, 500 * US, 1300 * US),
  };
  FabResults r = {.n_colls = 5, .colls = c};
  GPtrArray *tables = fab_nccltests_from_results(&r, NULL);
  FabNcclTestsCmp *cmp = fab_nccltests_compare(m, tables->pdata[0]);
  cr_assert_eq(cmp->matched, 5);
  /* the share of each time the bytes take, by the line through the next smaller size: 8 B (through 1 KiB, the
  ** same 10 us) 0, 1 KiB 0, 1 MiB 110 of 120 us (through 1 KiB), 4 MiB 80 x 4/3 of 200 us, 16 MiB 600 x 4/3
  ** of 800 us: latency, latency, bandwidth, bandwidth, bandwidth (the old rule, half the log's peak busbw,
  ** called 1 MiB latency-bound at 12 times the latency floor) */
  static const FabNcclTestsBound bound[5] = {FAB_NCCLTESTS_LATENCY_BOUND, FAB_NCCLTESTS_LATENCY_BOUND,
                                             FAB_NCCLTESTS_BANDWIDTH_BOUND, FAB_NCCLTESTS_BANDWIDTH_BOUND,
                                             FAB_NCCLTESTS_BANDWIDTH_BOUND};
  static const double ratio[5] = {0.25, 0.5, 1.0, 1.1, 1.0};
  for (int i = 0; i < 5; i++) {
    const FabNcclTestsCmpRow *x = &g_array_index(cmp->rows, FabNcclTestsCmpRow, i);
    cr_expect_eq(x->bound, bound[i], "row %d", i);
    cr_expect_float_eq(x->time_ratio, ratio[i], 1e-12, "row %d", i);
  }
  cr_assert_float_eq(g_array_index(cmp->rows, FabNcclTestsCmpRow, 0).busbw_err, 3.0, 1e-12, "+300%%, the old summary's");
  cr_assert_float_eq(cmp->peak_busbw_GBps, 4194304 / 200.0 / 1e3, 1e-12);
  cr_assert_eq(cmp->peak_bytes, 4194304, "the first of the two equal peaks");
  cr_assert_eq(cmp->latency.sizes, 2);
  cr_assert_eq(cmp->latency.min_bytes, 8);
  cr_assert_eq(cmp->latency.max_bytes, 1024);
  cr_assert_float_eq(cmp->latency.geomean_ratio, sqrt(0.125), 1e-12);
  cr_assert_float_eq(cmp->latency.worst_ratio, 0.25, 1e-12);
  cr_assert_eq(cmp->latency.worst_bytes, 8);
  cr_assert_eq(cmp->bandwidth.sizes, 3);
  cr_assert_float_eq(cmp->bandwidth.geomean_ratio, cbrt(1.1), 1e-12);
  cr_assert_float_eq(cmp->bandwidth.worst_ratio, 1.1, 1e-12);
  cr_assert_eq(cmp->bandwidth.worst_bytes, 4194304);
  double lat = log(4) + log(2), bw = log(1.1);
  cr_assert_float_eq(cmp->latency.error_share, lat / (lat + bw), 1e-12);
  cr_assert_float_eq(cmp->bandwidth.error_share, bw / (lat + bw), 1e-12);
  cr_assert_eq(cmp->n_worst, 3);
  cr_assert_eq(cmp->worst_bytes[0], 8);
  cr_assert_eq(cmp->worst_bytes[1], 1024);
  cr_assert_eq(cmp->worst_bytes[2], 4194304);
  char *s = fab_nccltests_cmp_format(cmp);
  char *l = line_starting(s, "           8");
  cr_assert_str_eq(l, "           8     10.00     0.00      2.50     0.00     0.25x  latency    ring/simple");
  g_free(l);
  cr_assert(strstr(s, "\n# time ratio: simulated / measured time (1.00x exact, 0.50x fabsim twice as fast)\n"
                      "# bandwidth-bound: moving the bytes takes at least half the measured time (latency + size / "
                      "bandwidth through the next smaller size); latency-bound: below; peak busbw 20.97 GB/s at 4 MiB\n"
                      "# bandwidth-bound 3 sizes (1 MiB to 16 MiB): geomean 1.03x, worst 1.10x at 4 MiB\n"
                      "# latency-bound   2 sizes (8 B to 1 KiB): geomean 0.35x, worst 0.25x at 8 B\n"
                      "# most of the error is in the latency-bound sizes (96% of the summed |ln ratio|); worst: 8 B "
                      "0.25x, 1 KiB 0.50x, 4 MiB 1.10x\n"), "%s", s);
  cr_assert_null(strstr(s, "300"), "no busbw error %% in the text:\n%s", s);
  g_free(s);
  s = fab_nccltests_cmp_summary(cmp);
  cr_assert_str_eq(s, "sim/meas time, geomean: bandwidth-bound 1.03x (3 sizes, worst 1.10x at 4 MiB); latency-bound "
                   "0.35x (2 sizes, worst 0.25x at 8 B)");
  g_free(s);
  fab_nccltests_cmp_free(cmp);
  /* simulated exactly: every ratio 1, no share of an error */
  FabCollRec e[2] = {coll("allreduce", 8, 2, 2, 0, 10 * US), coll("allreduce", 4194304, 1048576, 2, 20 * US, 220 * US)};
  FabResults re = {.n_colls = 2, .colls = e};
  GPtrArray *exact = fab_nccltests_from_results(&re, NULL);
  cmp = fab_nccltests_compare(m, exact->pdata[0]);
  cr_assert_eq(cmp->matched, 2);
  cr_assert(isnan(cmp->latency.error_share) && isnan(cmp->bandwidth.error_share));
  s = fab_nccltests_cmp_format(cmp);
  cr_assert(strstr(s, "# latency-bound   1 size (8 B): geomean 1.00x, worst 1.00x at 8 B\n# no error: every size is at "
                      "1.00x (within 0.5%)\n"), "%s", s);
  g_free(s);
  fab_nccltests_cmp_free(cmp);
  g_ptr_array_free(exact, TRUE);
  g_ptr_array_free(tables, TRUE);
  fab_nccltests_table_free(m);
}

Test(nccltests, ratio_strings) {
  char b[32];
  static const struct {
    double v;
    const char *s;
  } cases[] = {{0.83, "0.83x"}, {1, "1.00x"}, {0.1, "0.10x"}, {0.042, "0.042x"}, {12.44, "12.4x"}, {9.999, "10.0x"},
               {150.2, "150x"}, {NAN, "-"}};
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    fab_nccltests_ratio_str(b, sizeof b, cases[i].v);
    cr_expect_str_eq(b, cases[i].s, "%g", cases[i].v);
  }
  cr_assert_str_eq(fab_nccltests_bound_name(FAB_NCCLTESTS_LATENCY_BOUND), "latency");
  cr_assert_str_eq(fab_nccltests_bound_name(FAB_NCCLTESTS_BANDWIDTH_BOUND), "bandwidth");
  cr_assert_null(fab_nccltests_bound_name(FAB_NCCLTESTS_UNBOUND));
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
/* The value of `"key": "` after `from` in JSON text (transfer full), NULL. */
static char *json_str_after(const char *from, const char *key) {
  char *k = g_strdup_printf("\"%s\": \"", key);
  const char *p = from ? strstr(from, k) : NULL;
  char *v = p ? g_strndup(p + strlen(k), strcspn(p + strlen(k), "\"")) : NULL;
  g_free(k);
  return v;
}

/* Needs the nccl-tests workload (workload.kind: nccl-tests with sizes). */
Test(nccltests_cli, run_prints_the_nccl_tests_table, .timeout = 240) {
  char *scen = data_path("nccl-tests-8hosts.yaml");
  Proc p = FABSIM("run", scen);
  cr_assert_eq(p.status, 0, "fabsim run %s (the nccl-tests workload): exit %d\n%s", scen, p.status, p.err);
  cr_assert(strstr(p.out, "# Collective test starting: all_reduce_perf (simulated by fabsim: allreduce on 8 ranks)"),
            "%s", p.out);
  cr_assert(strstr(p.out, "#       size         count      type   redop    root     time   algbw   busbw  #wrong     "
                          "time   algbw   busbw  #wrong     algorithm  protocol\n"), "%s", p.out);
  cr_assert(strstr(p.out, "# Avg bus bandwidth    : "), "%s", p.out);
  Proc j = FABSIM("run", scen, "--json");
  cr_assert_null(strstr(j.out, "# Collective test starting"), "not in the JSON output");
  /* min 8, max 1 MiB, factor 8: 8, 64, 512, 4096, 32768, 262144; each row's algorithm and protocol are those
  ** of its collectives in the JSON summary */
  for (uint64_t b = 8; b <= 262144; b *= 8) {
    char *key = g_strdup_printf("\"bytes\": %" G_GUINT64_FORMAT ", ", b), *prefix = g_strdup_printf("%12" G_GUINT64_FORMAT
                                                                                                    "  ", b);
    char *algo = json_str_after(strstr(j.out, key), "algorithm"), *proto = json_str_after(strstr(j.out, key), "protocol");
    cr_assert(algo && proto, "no collective of %s in\n%s", key, j.out);
    char *l = line_starting(p.out, prefix), *end = g_strdup_printf("  %12s  %8s", algo, proto);
    cr_assert_not_null(l, "%s", p.out);
    cr_assert(g_str_has_suffix(l, end), "'%s' should end with '%s'", l, end);
    g_free(key), g_free(prefix), g_free(algo), g_free(proto), g_free(l), g_free(end);
  }
  proc_clear(&j);
  proc_clear(&p);
  g_free(scen);
}

/* nccl-tests rounds a rank's part of an allgather, reduce-scatter or all-to-all down to whole 16-byte lines
** (NVIDIA/nccl-tests src/all_gather.cu: base = (count / nranks) & ~(16 / eltSize - 1)) and skips a size with
** none; `size` is then base x nranks x eltSize and `count` is base. 1000 B on 8 ranks: 125 B a rank, 112 of
** them whole lines, so 896 B whatever the type; 8 B is under a line a rank and is skipped. */
Test(nccltests_cli, sizes_rounded_to_whole_lines_per_rank, .timeout = 240) {
  char *scen = data_path("nccl-tests-8hosts.yaml");
  static const struct { const char *op, *dtype, *row; } want[] = {
    {"allgather", "double", "         896            14    double"},
    {"reduce-scatter", "float", "         896            28     float"},
    {"all-to-all", "int8", "         896           112      int8"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(want); k++) {
    char *op = g_strdup_printf("workload.op=%s", want[k].op), *dt = g_strdup_printf("workload.dtype=%s", want[k].dtype);
    Proc p = FABSIM("run", scen, "--set", op, "--set", dt, "--set", "workload.min=~", "--set", "workload.max=~", "--set",
                    "workload.factor=~", "--set", "workload.sizes=[1000,8,4096]");
    cr_assert_eq(p.status, 0, "%s: exit %d\n%s", want[k].op, p.status, p.err);
    char *l = line_starting(p.out, want[k].row);
    cr_assert_not_null(l, "%s %s: no row '%s' in\n%s", want[k].op, want[k].dtype, want[k].row, p.out);
    cr_assert_null(strstr(p.out, "\n           8  "), "8 B is under a line a rank: skipped\n%s", p.out);
    cr_assert_not_null(strstr(p.out, "\n        4096  "), "%s", p.out);
    g_free(l), g_free(op), g_free(dt);
    proc_clear(&p);
  }
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
    cr_assert(strstr(l, "x  latency") || strstr(l, "x  bandwidth"), "with a time ratio and a bound: %s", l);
    g_free(l);
    g_free(prefix);
  }
  cr_assert(strstr(p.out, "; latency-bound: below; peak busbw 5.84 GB/s at 256 KiB\n# bandwidth-bound 1 size (256 KiB): "
                          "geomean "), "%s", p.out);
  cr_assert(strstr(p.out, "\n# latency-bound   5 sizes (8 B to 32 KiB): geomean "), "%s", p.out);
  cr_assert_null(strstr(p.err, "warning"), "same rank count: no warning\n%s", p.err);
  char *csv_path = g_build_filename(out, "compare.csv", NULL), *csv = NULL;
  cr_assert(g_file_get_contents(csv_path, &csv, NULL, NULL), "%s", csv_path);
  cr_assert(g_str_has_prefix(csv, "size_B,count,measured_time_us,measured_algbw_GBps,measured_busbw_GBps,"
                                  "simulated_time_us,"), "%s", csv);
  cr_assert(strstr(csv, "\n262144,65536,78.55,3.34,5.84,"), "%s", csv);
  cr_assert(strstr(csv, ",algorithm,protocol,time_ratio,bound\n"), "%s", csv);
  cr_assert(strstr(csv, ",tree,ll,") && strstr(csv, ",ring,ll,") && strstr(csv, ",bandwidth\n"), "%s", csv);
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
  cr_assert(strstr(p.out, "\"log_tests\": 1, \"log_line\": 18, "), "%s", p.out);
  cr_assert(strstr(p.out, "\"group\": \"out-of-place\"}"), "%s", p.out);
  cr_assert(strstr(p.out, "\"bound\": \"latency\"}, {\"bytes\": 64, "), "%s", p.out);
  cr_assert(strstr(p.out, "\"peak_busbw_GBps\": 5.84025461, \"peak_at_bytes\": 262144, \"time_ratio\": {\"rule\": "
                          "\"bandwidth-bound: moving the bytes takes at least half the measured time"), "%s", p.out);
  cr_assert(strstr(p.out, "\"latency_bound\": {\"sizes\": 5, \"min_bytes\": 8, \"max_bytes\": 32768, "), "%s", p.out);
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

/* The layout (no root column, "error" floats) and a log of several tests, end to end */
Test(nccltests_cli, compare_old_layouts_and_several_tests, .timeout = 240) {
  char *scen = data_path("nccl-tests-8hosts.yaml"), *log = data_path("all_reduce_perf_8rank_1MiB.log");
  char *multi = layout_path("multi-collective.log");
  char *dir = g_dir_make_tmp("fabsim-layouts-XXXXXX", NULL), *old = g_build_filename(dir, "old.log", NULL);
  /* the 8-rank sample log as nccl-tests 2.0-2.12 printed it: 12 columns, no root, error floats */
  cr_assert(g_file_set_contents(old,
      "mpirun -np 8 ./build/all_reduce_perf -b 8 -e 256K -f 8 -g 1\n"
      "#   Rank  0 Pid   5100 on     node00 device  0 [0x3b] NVIDIA A100-SXM4-80GB\n"
      "#   Rank  7 Pid   5107 on     node07 device  0 [0x3b] NVIDIA A100-SXM4-80GB\n"
      "#                                                       out-of-place                       in-place          \n"
      "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n"
      "           8             2     float     sum    37.95    0.00    0.00  0e+00    38.06    0.00    0.00  0e+00\n"
      "          64            16     float     sum    38.43    0.00    0.00  0e+00    37.98    0.00    0.00  0e+00\n"
      "         512           128     float     sum    38.09    0.01    0.02  2e-07    38.17    0.01    0.02  2e-07\n"
      "        4096          1024     float     sum    38.32    0.11    0.19  2e-07    38.65    0.11    0.19  2e-07\n"
      "       32768          8192     float     sum    43.25    0.76    1.33  2e-07    43.41    0.75    1.32  2e-07\n"
      "      262144         65536     float     sum    78.55    3.34    5.84  2e-07    78.76    3.33    5.82  2e-07\n",
      -1, NULL));
  /* the same measured values in either layout: the same comparison, row for row */
  Proc a = FABSIM("compare", scen, log, "--no-progress"), b = FABSIM("compare", scen, old, "--no-progress");
  cr_assert_eq(b.status, 0, "%s", b.err);
  cr_assert_eq(a.status, 0, "%s", a.err);
  const char *ta = strstr(a.out, "\n#                  measured"), *tb = strstr(b.out, "\n#                  measured");
  cr_assert(ta && tb, "%s\n%s", a.out, b.out);
  cr_assert_str_eq(tb, ta);
  proc_clear(&a);
  proc_clear(&b);
  /* several tests: say which, or take the one --op names */
  Proc p = FABSIM("compare", scen, multi);
  cr_assert_eq(p.status, 2);
  cr_assert_str_empty(p.out);
  char *where = g_strdup_printf("fabsim: compare: %s:45: 3 tests in this log: all_reduce_perf (allreduce, 2 sizes from "
                                "line 21), all_gather_perf (allgather, 2 sizes from line 45), sendrecv_perf (send-recv, "
                                "1 size from line 69); choose one (fabsim compare --op OP)\n", multi);
  cr_assert_str_eq(p.err, where);
  proc_clear(&p);
  p = FABSIM("compare", scen, multi, "--op", "allgather", "--no-progress");
  cr_assert_eq(p.status, 0, "%s", p.err);
  cr_assert(strstr(p.out, "fabsim compare: all_gather_perf (float, none)"), "%s", p.out);
  cr_assert(strstr(p.out, "measured   8 ranks (out-of-place), the table from line 45 (one of 3 tests in the log)\n"),
            "%s", p.out);
  char *l = line_starting(p.out, "     1048576     15.50    59.19  ");
  cr_assert_not_null(l, "the allgather's out-of-place 1 MiB row:\n%s", p.out);
  g_free(l);
  proc_clear(&p);
  /* --op naming a test the log does not hold */
  p = FABSIM("compare", scen, log, "--op", "allgather");
  cr_assert_eq(p.status, 2);
  cr_assert(strstr(p.err, "all_reduce_perf_8rank_1MiB.log:18: no allgather test in this log; it holds all_reduce_perf "
                          "(allreduce, 6 sizes from line 18)"), "%s", p.err);
  proc_clear(&p);
  g_unlink(old);
  g_rmdir(dir);
  g_free(where);
  g_free(old);
  g_free(dir);
  g_free(multi);
  g_free(log);
  g_free(scen);
}

/* A bad row of a real log, or a bad JSON summary: file:line, exit 2, nothing on stdout. */
Test(nccltests_cli, compare_bad_values_exit_2) {
  char *scen = data_path("nccl-tests-8hosts.yaml"), *log = data_path("all_reduce_perf_8rank_1MiB.log"), *text = NULL;
  cr_assert(g_file_get_contents(log, &text, NULL, NULL));
  char *dir = g_dir_make_tmp("fabsim-compare-XXXXXX", NULL), *m = g_build_filename(dir, "m.log", NULL);
  static const char *const sizes[] = {"99999999999999999999", "18446744073709551615", "8.5", "-8", "1e3", "0x10"};
  for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
    char **parts = g_strsplit(text, "      262144  ", 2), *bad = g_strjoinv(sizes[i], parts);
    g_strfreev(parts);
    cr_assert(g_file_set_contents(m, bad, -1, NULL));
    Proc p = FABSIM("compare", scen, m, "--no-progress");
    cr_expect_eq(p.status, 2, "size %s: exit %d\n%s", sizes[i], p.status, p.err);
    cr_expect_str_empty(p.out);
    char *where = g_strdup_printf("fabsim: compare: %s:23: column 1 (size): ", m);
    cr_expect(strstr(p.err, where), "size %s:\n%s", sizes[i], p.err);
    g_free(where);
    proc_clear(&p);
    p = FABSIM("calibrate", scen, m);
    cr_expect_eq(p.status, 2, "calibrate, size %s: exit %d\n%s", sizes[i], p.status, p.err);
    cr_expect(strstr(p.err, ":23: column 1 (size): "), "calibrate, size %s:\n%s", sizes[i], p.err);
    proc_clear(&p);
    g_free(bad);
  }
  char *js = g_build_filename(dir, "s.json", NULL), *sum = summary_with("status", "\"failed\"");
  cr_assert(g_file_set_contents(js, sum, -1, NULL));
  Proc p = FABSIM("compare", scen, js, "--no-progress");
  cr_assert_eq(p.status, 2, "%s", p.err);
  cr_assert_str_empty(p.out);
  char *where = g_strdup_printf("fabsim: compare: %s:2:13: status: \"failed\": the run did not complete", js);
  cr_assert(strstr(p.err, where), "%s", p.err);
  proc_clear(&p);
  g_unlink(js);
  g_unlink(m);
  g_rmdir(dir);
  g_free(where);
  g_free(sum);
  g_free(js);
  g_free(m);
  g_free(dir);
  g_free(text);
  g_free(log);
  g_free(scen);
}

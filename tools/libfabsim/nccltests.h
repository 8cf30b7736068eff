/*
** nccl-tests tables: the simulated ones, the measured ones, and the two side
** by side.
**
** nccl-tests (all_reduce_perf and its siblings) prints one row per message
** size: size (B), count (elements), type, redop, root, then time (us),
** algbw and busbw (GB/s, 1e9 B/s) and #wrong, once out-of-place and once
** in-place. busbw = algbw x a factor that makes the number comparable with
** the hardware's bandwidth: allreduce 2(n-1)/n; allgather, reduce-scatter,
** all-to-all (n-1)/n; broadcast, reduce, send-recv 1.
**
** Its column header has changed over the versions, and the parser reads the
** columns the header names (see col_names in nccltests.c): 1.x "bytes N
** type op root time algbw busbw res" (time in ms; broadcast out-of-place
** only); 2.0 to 2.12 "size count type [redop] [root] time algbw busbw error"
** (redop and root only for the tests that have them, error the largest
** deviation, 2e-07); 2.13 on every column with #wrong; options add
** "cputime" (-C), a timestamp (-S), per-iteration columns (-I) and, for a
** while, copybw. A log may hold several tests one after the other.
**
** fab_nccltests_from_results turns the collectives of a run that are tagged
** "nccl-tests" into such tables (consecutive collectives of the same op and
** size are the iterations of one row: their times are averaged), and
** fab_nccltests_format prints one with nccl-tests' column widths, fabsim's
** algorithm and protocol after them. fab_nccltests_parse_tests reads a real
** nccl-tests log; fab_nccltests_compare matches a measured table with a
** simulated one size by size.
*/
#ifndef FAB_NCCLTESTS_H
#define FAB_NCCLTESTS_H

#include <glib.h>
#include <stdint.h>
#include "results.h"

#define FAB_NCCLTESTS_ERROR (fab_nccltests_error_quark())
GQuark fab_nccltests_error_quark(void);

/* One row: one message size. [0] is out-of-place, [1] in-place. */
typedef struct FabNcclTestsRow {
  uint64_t bytes;           /* nccl-tests "size" (B) */
  uint64_t count;           /* elements, as nccl-tests counts them */
  char type[16];            /* "float", "bfloat16", ... */
  char redop[16];           /* "sum", "none", ... */
  int32_t root;             /* -1 unless broadcast / reduce */
  double time_us[2];        /* us per operation (NAN: none completed) */
  double algbw_GBps[2];     /* bytes / time, GB/s (1e9 B/s) */
  double busbw_GBps[2];     /* algbw x the op's bus factor, GB/s */
  double wrong[2];          /* wrong elements; NAN: N/A (simulated, or not checked) */
  /* simulated rows */
  uint32_t iters;           /* collectives averaged */
  uint32_t completed;       /* of which completed */
  const char *algorithm;    /* of the last iteration (static), NULL for measured rows */
  const char *protocol;     /* of the last iteration (static), NULL for measured rows */
  /* measured rows */
  uint32_t line;            /* line of the log (0: simulated) */
} FabNcclTestsRow;

/* A table: one op on one set of ranks. */
typedef struct FabNcclTestsTable {
  const char *op;           /* "allreduce", "allgather", ... (static); NULL: not known */
  const char *binary;       /* "all_reduce_perf", ... (static); NULL: not known */
  uint32_t ranks;           /* 0: not known */
  uint32_t job;             /* simulated: the job */
  char type[16];            /* the rows' type ("" if no rows) */
  uint32_t dtype_bytes;     /* its size (0: not known) */
  int32_t root;             /* the rows' root */
  /* what a measured log says about itself (-1: not given) */
  int32_t nthread, ngpus, warmup_iters, iters;
  double avg_busbw_GBps;    /* its "# Avg bus bandwidth" footer (NAN: none) */
  GArray *rows;             /* FabNcclTestsRow */
  /* measured tables: where they are, and their layout */
  uint32_t line;            /* the first row's line (0: simulated) */
  uint32_t name_line;       /* the line that named the test (0: none did) */
  uint32_t header_line;     /* the column header's line (0: none; nccl-tests' current columns assumed) */
  uint32_t groups;          /* value groups: 2 (out-of-place, in-place), 1 (out-of-place only) */
  const char *check;        /* the check column as the header names it: "#wrong", "error", "res"; NULL none (static) */
} FabNcclTestsTable;

void fab_nccltests_table_free(FabNcclTestsTable *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(FabNcclTestsTable, fab_nccltests_table_free)

/* ---- conventions ------------------------------------------------------- */

/* nccl-tests' bus bandwidth factor of `op` (a FabCollDef op name) on n ranks;
** 1 for an unknown op. */
double fab_nccltests_busbw_factor(const char *op, uint32_t n);

/* The binary of `op` ("allreduce" -> "all_reduce_perf"), NULL if none. */
const char *fab_nccltests_binary(const char *op);

/* The nccl-tests name of a data type: `dtype` as fabsim's workload.dtype
** spells it ("float", "bf16", "fp16", ...; NULL: not given), else from
** its size (4 float, 2 bfloat16, 8 double, 1 int8). Static. */
const char *fab_nccltests_type_name(const char *dtype, uint32_t dtype_bytes);

/* The size of an nccl-tests type name, 0 if unknown. */
uint32_t fab_nccltests_type_bytes(const char *type);

/* ---- simulated tables ---------------------------------------------------- */

/* The tables of the collectives of `r` tagged "nccl-tests", in run order: a
** new table for each change of job, op or rank count; in a table, a row for
** each run of consecutive collectives of one size. `type` names the data
** type (NULL: from dtype_bytes, see fab_nccltests_type_name). Returns a
** GPtrArray of FabNcclTestsTable (transfer full, frees its tables), empty if
** there are none. */
GPtrArray *fab_nccltests_from_results(const FabResults *r, const char *type);

/* The table as nccl-tests prints it: a "# Collective test starting" line,
** the three header lines, a row per size (the simulated values in both the
** out-of-place and the in-place group, #wrong N/A, then fabsim's own two
** columns: the algorithm and protocol of the size's last iteration, "-" if
** none) and the "# Avg bus bandwidth" footer (the mean busbw of the rows).
** fab_nccltests_parse_text reads it back. Transfer full. */
char *fab_nccltests_format(const FabNcclTestsTable *t);

/* The mean busbw of the rows that have one (both groups, as nccl-tests
** averages them), GB/s; NAN if none. */
double fab_nccltests_avg_busbw(const FabNcclTestsTable *t);

/* ---- measured tables ----------------------------------------------------- */

/* Parse the nccl-tests output in `text` (named `name` in errors): every
** test in it, in order, as a GPtrArray of FabNcclTestsTable (transfer full,
** frees its tables; never empty). A test starts at a "# Collective test
** starting" line, a command line naming an nccl-tests binary, or a
** "# nThread", "#  Rank" or column header line after the rows of the one
** before; a test that printed no rows is left out. Its columns are the ones
** its header names (no header: nccl-tests' current ones); its op comes from
** the binary's name and stays NULL if nothing names it (binary then names
** an nccl-tests binary fabsim does not model, or is NULL); the rank count
** from the "#  Rank N ..." device lines (else from size/count for ops that
** split the buffer, else 0); the type from the rows. Other lines (NCCL
** INFO/WARN, launcher noise) are skipped, as are the prefixes mpirun
** --tag-output, MPICH's -prepend-rank and srun --label put before each
** line. A malformed header or row, a row of another type, redop or root
** than the first of its table, or no rows at all is an error
** "NAME:LINE: what was expected" (FAB_NCCLTESTS_ERROR). */
GPtrArray *fab_nccltests_parse_tests(const char *text, const char *name, GError **err);

/* The same from a file. */
GPtrArray *fab_nccltests_read_tests(const char *path, GError **err); /* also a fabsim JSON summary's */
/* A fabsim JSON summary (`fabsim run --json`, `fabsim-replay --json`): its nccl-tests collectives as the tables
** fab_nccltests_from_results makes, marked as measured (the rows' lines are their positions, from 1); NULL + err
** when it is not JSON or has none (nccltests_json.c). */
GPtrArray *fab_nccltests_from_summary(const char *text, const char *path, GError **err);

/* Take the test of `op` (a FabCollDef op name; NULL: the log's only one)
** out of `tests` (from fab_nccltests_parse_tests of the log `name`). A
** single test that does not name itself is taken for `op` (its op and
** binary set). None, several or an unmodelled binary is an error
** "NAME:LINE: ..." listing the tests there are. Transfer full. */
FabNcclTestsTable *fab_nccltests_choose(GPtrArray *tests, const char *op, const char *name, GError **err);

/* A log with one test: fab_nccltests_parse_tests, then
** fab_nccltests_choose(op NULL). Transfer full. */
FabNcclTestsTable *fab_nccltests_parse_text(const char *text, const char *name, GError **err);

/* The same from a file. */
FabNcclTestsTable *fab_nccltests_parse_file(const char *path, GError **err);

/* ---- comparison ---------------------------------------------------------- */

/* How a measured size is bound. Bandwidth-bound: moving its bytes takes at
** least FAB_NCCLTESTS_BW_BOUND of its measured time, by the latency + size /
** bandwidth line (Hockney) through it and the next smaller measured size
** (the next larger for the smallest); latency-bound: below. Half is the
** half-bandwidth point n1/2: past it moving the bytes takes at least as
** long as the fixed latency. The rule looks at the time's growth, not at
** the log's peak, so a log that stops before the bandwidth plateau (or
** starts past it) is classed right. A log of one size: bandwidth-bound. */
typedef enum {
  FAB_NCCLTESTS_UNBOUND = 0,      /* no measured time */
  FAB_NCCLTESTS_LATENCY_BOUND,
  FAB_NCCLTESTS_BANDWIDTH_BOUND,
} FabNcclTestsBound;
#define FAB_NCCLTESTS_BW_BOUND 0.5
#define FAB_NCCLTESTS_BOUND_RULE                                                                               \
  "bandwidth-bound: moving the bytes takes at least half the measured time, by the latency + size / bandwidth " \
  "line through the size and the next smaller one (past the half-bandwidth point); latency-bound: below"

typedef struct FabNcclTestsCmpRow {
  uint64_t bytes;
  uint64_t count;           /* measured */
  double meas_time_us, meas_algbw_GBps, meas_busbw_GBps; /* out-of-place as the log prints them (in-place if
                                                         ** the log has no out-of-place time for the size) */
  gboolean meas_in_place;   /* the measured values are the in-place ones */
  double sim_time_us, sim_algbw_GBps, sim_busbw_GBps;    /* NAN: not simulated */
  const char *algorithm, *protocol;                      /* simulated (static), NULL */
  double time_err;          /* (sim - measured) / measured time; NAN if either is missing */
  double busbw_err;         /* (sim - measured) / measured busbw, the measured one recomputed from
                            ** the measured time (the log's is rounded to 0.01 GB/s); NAN */
  double time_ratio;        /* sim / measured time; NAN if either is missing */
  FabNcclTestsBound bound;  /* of the measured size */
} FabNcclTestsCmpRow;

/* The matched sizes of one bound. */
typedef struct FabNcclTestsCmpClass {
  uint32_t sizes;           /* matched sizes of the class */
  uint64_t min_bytes, max_bytes;
  double geomean_ratio;     /* exp(mean ln(sim / measured time)); NAN if no size */
  double worst_ratio;       /* the ratio farthest from 1x (largest |ln|); NAN */
  uint64_t worst_bytes;     /* its size */
  double error_share;       /* the class's part of the sum of |ln ratio| over all matched sizes, 0..1;
                            ** NAN if that sum is 0 */
} FabNcclTestsCmpClass;

#define FAB_NCCLTESTS_WORST 3

typedef struct FabNcclTestsCmp {
  GArray *rows;             /* FabNcclTestsCmpRow, in the measured order */
  uint32_t matched;         /* rows with both values */
  double mean_abs_time_err, max_abs_time_err;   /* fractions, over the matched rows (NAN: none) */
  uint64_t max_time_err_bytes;                  /* the size of the largest one */
  double mean_abs_busbw_err, max_abs_busbw_err;
  uint64_t max_busbw_err_bytes;
  /* time ratios by bound (FabNcclTestsBound) */
  double peak_busbw_GBps;   /* the log's highest busbw, from its times (NAN: no measured time) */
  uint64_t peak_bytes;      /* at that size */
  FabNcclTestsCmpClass latency, bandwidth;
  uint32_t n_worst;         /* the matched sizes farthest from 1x, worst first (at most FAB_NCCLTESTS_WORST) */
  uint64_t worst_bytes[FAB_NCCLTESTS_WORST];
  double worst_ratio[FAB_NCCLTESTS_WORST];
} FabNcclTestsCmp;

/* Match `meas` and `sim` by size (exactly, else the closest simulated size
** within 1%): measured rows without a simulated one keep NAN there. The
** measured busbw the errors and bounds use is bytes / time x the factor of
** meas->ranks (sim->ranks if the log did not say). Transfer full. */
FabNcclTestsCmp *fab_nccltests_compare(const FabNcclTestsTable *meas, const FabNcclTestsTable *sim);
void fab_nccltests_cmp_free(FabNcclTestsCmp *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(FabNcclTestsCmp, fab_nccltests_cmp_free)

/* "latency" or "bandwidth" (NULL for FAB_NCCLTESTS_UNBOUND). Static. */
const char *fab_nccltests_bound_name(FabNcclTestsBound b);

/* A time ratio as the comparison prints it: "0.83x", "12.4x", "0.042x";
** "-" for NAN. Into buf (n bytes). */
void fab_nccltests_ratio_str(char *buf, size_t n, double ratio);

/* The comparison side by side: size, measured time/busbw, simulated
** time/busbw, the time ratio, the bound, the simulated algorithm; then the
** time ratios per bound, the rule, and which sizes carry the error.
** Transfer full. */
char *fab_nccltests_cmp_format(const FabNcclTestsCmp *c);

/* The ratios per bound in one short line (no '#', no newline), as a plot
** title shows them: "sim/meas time, geomean: bandwidth-bound 1.09x (1 size,
** worst 1.09x at 256 KiB); latency-bound 0.97x (5 sizes, worst 1.23x at 32
** KiB)". Transfer full. */
char *fab_nccltests_cmp_summary(const FabNcclTestsCmp *c);

/* A number in `width` characters as nccl-tests prints it, N/A for NAN (internal: nccltests.c, nccltests_cmp.c). */
void fab_nccltests__num_str(char *buf, size_t n, double v, int width);

#endif

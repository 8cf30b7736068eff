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
** fab_nccltests_from_results turns the collectives of a run that are tagged
** "nccl-tests" into such tables (consecutive collectives of the same op and
** size are the iterations of one row: their times are averaged), and
** fab_nccltests_format prints one with nccl-tests' column widths.
** fab_nccltests_parse reads a real nccl-tests log; fab_nccltests_compare
** matches a measured table with a simulated one size by size.
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
** out-of-place and the in-place group, #wrong N/A) and the "# Avg bus
** bandwidth" footer (the mean busbw of the rows). Transfer full. */
char *fab_nccltests_format(const FabNcclTestsTable *t);

/* The mean busbw of the rows that have one (both groups, as nccl-tests
** averages them), GB/s; NAN if none. */
double fab_nccltests_avg_busbw(const FabNcclTestsTable *t);

/* ---- measured tables ----------------------------------------------------- */

/* Parse the nccl-tests output in `text` (named `name` in errors). The op
** comes from the binary's name (a command line, or nccl-tests' "# Collective
** test starting: all_reduce_perf") and may stay NULL if neither is there;
** the rank count from the "#  Rank N Group ..." device lines (else from
** size/count for ops that split the buffer, else 0); the type from the rows.
** Other lines are skipped. A malformed row, a row of another type, redop or
** root than the first, a second test in the same log, or no rows at all is
** an error "NAME:LINE: what was expected" (FAB_NCCLTESTS_ERROR). Transfer
** full. */
FabNcclTestsTable *fab_nccltests_parse_text(const char *text, const char *name, GError **err);

/* The same from a file. */
FabNcclTestsTable *fab_nccltests_parse_file(const char *path, GError **err);

/* ---- comparison ---------------------------------------------------------- */

typedef struct FabNcclTestsCmpRow {
  uint64_t bytes;
  uint64_t count;           /* measured */
  double meas_time_us, meas_algbw_GBps, meas_busbw_GBps; /* out-of-place, as the log prints them */
  double sim_time_us, sim_algbw_GBps, sim_busbw_GBps;    /* NAN: not simulated */
  const char *algorithm, *protocol;                      /* simulated (static), NULL */
  double time_err;          /* (sim - measured) / measured time; NAN if either is missing */
  double busbw_err;         /* (sim - measured) / measured busbw, the measured one recomputed from
                            ** the measured time (the log's is rounded to 0.01 GB/s); NAN */
} FabNcclTestsCmpRow;

typedef struct FabNcclTestsCmp {
  GArray *rows;             /* FabNcclTestsCmpRow, in the measured order */
  uint32_t matched;         /* rows with both values */
  double mean_abs_time_err, max_abs_time_err;   /* fractions, over the matched rows (NAN: none) */
  uint64_t max_time_err_bytes;                  /* the size of the largest one */
  double mean_abs_busbw_err, max_abs_busbw_err;
  uint64_t max_busbw_err_bytes;
} FabNcclTestsCmp;

/* Match `meas` and `sim` by size (exactly, else the closest simulated size
** within 1%): measured rows without a simulated one keep NAN there. The
** measured busbw the error uses is bytes / time x the factor of meas->ranks
** (sim->ranks if the log did not say). Transfer full. */
FabNcclTestsCmp *fab_nccltests_compare(const FabNcclTestsTable *meas, const FabNcclTestsTable *sim);
void fab_nccltests_cmp_free(FabNcclTestsCmp *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(FabNcclTestsCmp, fab_nccltests_cmp_free)

/* The comparison side by side: size, measured time/busbw, simulated
** time/busbw, the errors in %, the simulated algorithm; then a summary line
** "# mean |error| ...". Transfer full. */
char *fab_nccltests_cmp_format(const FabNcclTestsCmp *c);

/* The summary line alone (no '#', no newline). Transfer full. */
char *fab_nccltests_cmp_summary(const FabNcclTestsCmp *c);

#endif

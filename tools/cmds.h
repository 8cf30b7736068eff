/*
** The subcommands of the fabsim CLI that live in their own files. Each takes
** the arguments after its name and returns the process exit status (0
** success, 1 failed, 2 bad input or usage).
*/
#ifndef FAB_CMDS_H
#define FAB_CMDS_H

#include <glib.h>
#include <stdint.h>
#include "args.h"

/* fabsim sweep SCENARIO --set KEY=V1,V2,... [--set ...] [--out DIR] [--jobs N] (tools/sweep.c); it runs
** its points as children of the program g_get_prgname() names (main sets it from argv[0]) */
extern const FabCmd fab_sweep_cmd;
int fab_cmd_sweep(int argc, char **argv);

/* fabsim plot RESULT.h5 [--out DIR] [--layer LAYER] [--metric NAME]... (tools/plot.c) */
extern const FabCmd fab_plot_cmd;
int fab_cmd_plot(int argc, char **argv);

/* fabsim compare SCENARIO MEASURED.log [--out DIR] [--set KEY=VALUE]... [--op OP] [--json] (tools/compare.c) */
extern const FabCmd fab_compare_cmd;
int fab_cmd_compare(int argc, char **argv);

/* fabsim calibrate SCENARIO LOG... [--set KEY=VALUE]... [--fit PARAMS] [--out FRAGMENT] [--json] (tools/calibrate.c) */
extern const FabCmd fab_calibrate_cmd;
int fab_cmd_calibrate(int argc, char **argv);
/* calibrate on a probe file of fabsim-replay (tools/calibrate_probe.c): is `path` one; fit the path parameters
** of SCENARIO (the user's --set in `user`, no NULL) to it; the exit status. */
gboolean fab_calibrate_is_probe(const char *path);
struct FabScenario;
/* Write a fragment's text to `out`, after checking that SCENARIO loads with it included last (the user's --set
** applied) and that check() finds its values taken; FALSE after printing why (nothing written). */
gboolean fab_calibrate_write(const char *scen, GPtrArray *user, const char *text, const char *out,
                             gboolean (*check)(const struct FabScenario *sc, const void *ctx), const void *ctx);
int fab_calibrate_probe(const char *scen, GPtrArray *user, const char *probe, const char *out, gboolean json);

/* ---- measured nccl-tests logs, shared by compare and calibrate (tools/compare.c) ---- */

struct FabNcclTestsTable;

/* The measured table of `log`: its one test, or the one of op_opt (which
** also names the test of a log that does not); *ntests the tests in the
** log. NULL after printing why on stderr ("fabsim: CMD: ..."). */
struct FabNcclTestsTable *fab_compare_measured(const char *cmd, const char *log, const char *op_opt, guint *ntests);

/* Append to `sets` (the user's overrides, NULL-terminated; it stays so) what
** makes the scenario the log's sweep: the op, sizes, type and root of
** `meas`. FALSE after printing why. json: say nothing on stderr about a
** workload replaced. */
gboolean fab_compare_log_sets(const char *cmd, const struct FabNcclTestsTable *meas, const char *scen,
                              const char *log, gboolean json, GPtrArray *sets);

/* ---- drawing, shared by plot and compare (tools/plot.c) ---------------- */

/* Write DIR/NAME.gp, which runs the gnuplot commands `body` once into
** DIR/NAME.png and once into DIR/NAME.svg (so a body may use multiplot),
** and run `gnuplot` (a path) on it. FALSE with `why` set if the script
** cannot be written ("cannot write ...") or gnuplot fails. Prints nothing. */
gboolean fab_plot_draw(const char *gnuplot, const char *dir, const char *name, const char *body, GString *why);

/* Append `text` to a gnuplot string literal being written into `gp` ("..."
** quoting, and the enhanced-text markup _ ^ { } @ & ~ shown as itself: '_'
** is not a subscript, "{enabled: true}" keeps its braces). */
void fab_plot_put_title(GString *gp, const char *text);

/* Append gnuplot commands for a log2 x axis of message sizes from `lo` to
** `hi` bytes: tics at powers of two (at most about 15), labelled "8 B",
** "64 KiB", "1 GiB". */
void fab_plot_size_xtics(GString *gp, uint64_t lo, uint64_t hi);

/* Swept values as numbers, for numeric axes (plot) and for ordering the
** merged values of an extended sweep (sweep): the first kind of the
** scenario contract's values under which every one of the n values `v` parses: a plain number, a
** size (bytes), a rate (bit/s), a time (seconds), a ratio ("2:1" is 2). TRUE
** with out[i] and *unit ("", "B", "bit/s", "s"; static) set; FALSE when no
** kind takes them all (categories: "ecmp", "{enabled: true}"). */
gboolean fab_plot_values_numeric(const char *const *v, size_t n, double *out, const char **unit);

#endif

/* What tools/sweep.c (the command, the grid, the children) shares with
** sweep_table.c (DIR/sweep.csv and DIR/sweep.h5). Not a public header. */
#ifndef FAB_SWEEP_INT_H
#define FAB_SWEEP_INT_H

#include <glib.h>
#include <stdint.h>

#define KEY_STRLEN 64  /* a swept key or value, and the HDF5 table's string columns */

typedef struct Point {
  char **values;   /* one per swept key, borrowed from the Key's values or all */
  size_t id;       /* its number: DIR/point-NNNN.h5, the table's point column */
  gboolean in_cmd; /* in this command's grid: run unless it has an ok row */
  gboolean done;   /* has a result (from this run or a previous one) */
  gboolean ok;
  int exit;        /* child's exit status; -1 not exited normally */
  char **num;      /* text of each column ("" if unknown) */
} Point;

typedef struct Key {
  char *name;
  GPtrArray *values; /* char*: this command's */
  GPtrArray *all;    /* char*: merged with the earlier sweep's (owned), NULL until merged */
} Key;

/* A row of an earlier DIR/sweep.csv or point record, or (result FALSE) a
** point numbered in sweep.key. */
typedef struct PrevRow {
  char **values;     /* nkeys (owned) */
  size_t id;
  gboolean result;   /* a result (ok, exit, num); FALSE: only the point's number */
  gboolean ok;
  int exit;
  char **num;        /* per current column, "" when the file had no such column (owned) */
} PrevRow;

typedef struct Sweep {
  const char *scenario;
  GPtrArray *keys;   /* Key*: the swept keys */
  GPtrArray *fixed;  /* "KEY=V": applied to every point */
  GArray *cols;      /* FabFieldColumn: the summary fields tabulated */
  Point *pts;
  size_t n;          /* points in the table: this command's grid, and the earlier rows */
  size_t n_cmd;      /* of them in this command's grid */
  char *dir, *csv_path, *h5_path, *header;
  char *old_key;     /* DIR/sweep.key as this command found it (NULL: none) */
  long jobs;
  uint32_t shard, nshards; /* this process runs the points whose number mod nshards is shard (1 shard: all) */
  size_t n_failed, ran;
  gboolean spawn_error;
  GPtrArray *warn;   /* Warning*: what ok points said on stderr, each text once, in order of first report */
} Sweep;

/* The CSV's header line (no newline). g_free it. */
char *fab_sweep__csv_header(const Sweep *w);
/* Write DIR/sweep.csv in full (via a temporary file and rename). */
gboolean fab_sweep__write_csv(const Sweep *w, GError **err);
/* Write DIR/point-NNNN.csv: the table's header and this point's row (via
** a temporary file and rename). Every finished point has one: they are
** what a sweep split over processes or machines (--shard) shares. */
gboolean fab_sweep__write_point(const Sweep *w, const Point *pt, GError **err);
/* A PrevRow (GPtrArray free function). */
void fab_sweep__prev_row_free(gpointer p);
/* The rows the directory holds, their summary columns matched to this
** sweep's by name (a column a file did not have is empty): the points'
** records (DIR/point-NNNN.csv, in name order) first, then an earlier
** DIR/sweep.csv's rows; none if there are none. A tuple of values may come
** more than once: the first row counts (a point's own record is its newest
** result). FALSE (with a message) if a file's swept keys are not this
** sweep's. */
gboolean fab_sweep__read_previous(const Sweep *w, GPtrArray *rows);
/* The same, from the points' records alone. */
gboolean fab_sweep__read_points(const Sweep *w, GPtrArray *rows);
/* Write DIR/sweep.h5's /sweep table in full; FALSE (said on stderr) if it cannot. */
gboolean fab_sweep__write_h5(const Sweep *w);

/* "v1 \x1f v2 ...": a point's values as one hash key (sweep.c). g_free it. */
char *fab_sweep__tuple_key(char *const *values, size_t nk);

/* Shards (sweep_shard.c). This process's shard from `given` (--shard I/N, or
** NULL) or an MPI launcher's environment: -1, or an exit status after a usage
** error. */
int fab_sweep__shard(Sweep *w, const char *given);
/* Points run at once by default. */
long fab_sweep__default_jobs(const Sweep *w);
/* Take every point record in DIR into the table; returns the points with a result. */
size_t fab_sweep__gather(Sweep *w);
/* The children's environment (g_strfreev it). */
char **fab_sweep__child_env(void);
/* The points numbered in the sweep.key this command found, as rows without a result, into prev. */
gboolean fab_sweep__registry_rows(const Sweep *w, GPtrArray *prev); /* FALSE: a damaged sweep.key, said */

#endif

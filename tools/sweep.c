/* fabsim sweep: run a scenario over a grid of --set values, a `fabsim run`
** child process per point, up to --jobs at once, and tabulate the JSON
** summaries in DIR/sweep.csv and DIR/sweep.h5. See cmds.h and README.md.
**
** The grid is the cartesian product of the --set keys given several
** comma-separated values, the first such key varying slowest. Values are split
** on commas at the top level only (not inside [], {} or quotes), so a YAML
** flow mapping stays one value. A --set with a single value applies to every
** point and is not a column. Points are numbered from 0 in grid order and run
** as `fabsim run SCENARIO --json --no-progress --set ... --hdf5
** DIR/point-NNNN.h5`. Every point is loaded and checked (as `fabsim validate`
** does) before anything runs or is written: a bad value exits 2.
**
** The columns after the swept values are every numeric scalar of the JSON
** summary, read from each child's JSON by its dotted path: first the sweep
** columns of the results' field table (tools/libfabsim/results.c) in their
** column order (sim_time_s ... wall_s), then every other number of the
** summary in the summary's order, named by its path with '_' for '.'
** (pfc_paused_s, flows_bytes, step_comm_s). Arrays (collectives, jobs) are
** not columns. The order only ever grows at the end.
**
** Resume and extension: DIR/sweep.key says what the directory holds (the
** scenario's path and SHA-256, the fixed settings, the swept keys). The same
** scenario, settings and keys may come back with other values: each key's
** values become the earlier ones merged with the new ones (sorted when they
** are numbers that were sorted), the rows of DIR/sweep.csv are read back
** (their summary columns matched by name), and only the points of this
** command's grid without an ok row run. Every row stays: the table is the
** grid of the merged values, in grid order, holding the points run so far.
** A point keeps its number (point-NNNN.h5); new points take the next ones.
** Another scenario, other settings or other keys are refused (exit 2). The
** CSV is rewritten after each finished point (so an interrupted sweep resumes
** where it stopped), and both files are written in full at the end, via a
** temporary file and rename. Every finished point also leaves its own row
** in DIR/point-NNNN.csv (the table's header and one row); these records come
** first when a directory is read back, so a point's newest result wins.
**
** Shards: with --shard I/N (or under mpirun: the MPI rank and size from the
** launcher's environment) this process runs only the points whose number
** mod N is I. Every shard computes the same grid and numbers from the same
** directory, so each point belongs to exactly one. A shard writes its
** points' records but not the table while it runs; when its last point is
** done it gathers every record in DIR, writes the table, and gathers again,
** writing once more if a record came in meanwhile, so whichever shard
** finishes last leaves the whole table. Exit status: 0 every point ok (a
** shard: every point it ran), 1 some point's simulation failed (its row says
** so), 2 bad input or usage. */
#include <glib.h>
#include <glib-unix.h>
#include <sys/resource.h>
#include <glib/gstdio.h>
#include <hdf5.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cmds.h"
#include "tools/libfabsim/json.h"
#include "tools/libfabsim/scenario.h"
#include "sweep_int.h"


enum { SW_OUT, SW_JOBS, SW_JSON, SW_SHARD };

static const FabOpt sweep_opts[] = {
  {"--set", 0, FAB_OPT_SET, 0, "KEY=V1,V2,...", "KEY=V1,V2,...", 0, 0,
   "a swept key (or a fixed one with a single value)"},
  {"--seed", 0, FAB_OPT_SEED, 0, "N", "a number", 0, 0, "the same as --set seed=N"},
  {"--out", 0, FAB_OPT_VALUE, SW_OUT, "DIR", "a directory", 0, 0, "where to write (default: sweep-<scenario name>)"},
  {"--jobs", 'j', FAB_OPT_UINT, SW_JOBS, "N", "a positive integer", 1, 4096,
   "points run at once (default: the number of CPUs, shared among this machine's shards)"},
  {"--json", 0, FAB_OPT_FLAG, SW_JSON, NULL, NULL, 0, 0, "print the table as JSON on stdout"},
  {"--shard", 0, FAB_OPT_VALUE, SW_SHARD, "I/N", "I/N", 0, 0,
   "run only the points whose number mod N is I (default under mpirun: the MPI rank and size)"},
  {NULL},
};

const FabCmd fab_sweep_cmd = {
  "sweep", "run a grid of variants in parallel (CSV + HDF5)", "SCENARIO", 1, 1, "sweep needs a SCENARIO file",
  "scenario",
  "Run SCENARIO at every point of a grid: the cartesian product of the values\n"
  "of each --set given several comma-separated values (commas inside [], {}\n"
  "or quotes do not split). A --set with one value applies to every point.\n"
  "Each point runs as its own `fabsim run` process, up to N at once.",
  sweep_opts,
  "Writes DIR/sweep.csv and DIR/sweep.h5 (table /sweep): a row per point in\n"
  "grid order with the swept values, point, status (ok | failed), exit and\n"
  "every number of the run's JSON summary; and DIR/point-NNNN.h5 for each\n"
  "point. Rerunning the same sweep skips the points already done with status\n"
  "ok. Rerunning it with other values of the same keys (same scenario and\n"
  "fixed settings) extends it: only the new points run, and the table keeps\n"
  "every point, in grid order of the merged values.\n"
  "\n"
  "Across processes or machines sharing DIR: `mpirun -np N fabsim sweep ...`\n"
  "(each MPI rank takes its share of the points) or --shard I/N in each of N\n"
  "jobs (a Slurm array: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT).\n"
  "Each finished point leaves DIR/point-NNNN.csv; the last shard to finish\n"
  "writes the whole table, and any rerun completes it.\n"
  "\n"
  "exit status: 0 every point ran ok, 1 some point's simulation failed,\n"
  "2 bad input or usage\n",
};


/* A warning of the points run now ("fabsim: warning: ..." on a child's
** stderr: a setting with no effect, a coarser fidelity), shown once after
** the sweep with the points that gave it, so that an A/B sweep of one knob
** does not hide that the knob did nothing at some points. */
typedef struct Warning {
  char *text;
  GString *points;
} Warning;

static void keep_warnings(Sweep *w, size_t id, const char *err) {
  static const char tag[] = "fabsim: warning: ";
  for (const char *l = err; l && *l;) {
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l) : strlen(l);
    if (len > sizeof tag - 1 && !strncmp(l, tag, sizeof tag - 1)) {
      char *text = g_strndup(l + sizeof tag - 1, len - (sizeof tag - 1));
      Warning *wn = NULL;
      for (guint i = 0; i < w->warn->len && !wn; i++)
        if (!strcmp(((Warning *)w->warn->pdata[i])->text, text)) wn = w->warn->pdata[i];
      if (!wn) {
        wn = g_new0(Warning, 1);
        wn->text = text;
        wn->points = g_string_new(NULL);
        g_ptr_array_add(w->warn, wn);
      } else {
        g_free(text);
      }
      g_string_append_printf(wn->points, "%s%zu", wn->points->len ? ", " : "", id);
    }
    l = e ? e + 1 : NULL;
  }
}

static void warning_free(gpointer p) {
  Warning *wn = p;
  g_free(wn->text);
  g_string_free(wn->points, TRUE);
  g_free(wn);
}

static void print_warnings(const Sweep *w) {
  for (guint i = 0; i < w->warn->len; i++) {
    const Warning *wn = w->warn->pdata[i];
    fprintf(stderr, "fabsim sweep: warning (point%s %s): %s\n", strchr(wn->points->str, ',') ? "s" : "",
            wn->points->str, wn->text);
  }
}

/* Split `s` on commas outside [], {} and quotes. Empty pieces are kept (and
** rejected by the caller). */
static GPtrArray *split_top(const char *s) {
  GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
  int depth = 0;
  char quote = 0;
  const char *start = s;
  for (const char *p = s;; p++) {
    char c = *p;
    if (quote) {
      if (!c) break;
      if (c == quote) quote = 0;
      else if (c == '\\' && quote == '"' && p[1]) p++;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    else if (c == '[' || c == '{') depth++;
    else if ((c == ']' || c == '}') && depth > 0) depth--;
    else if ((c == ',' && depth == 0) || !c) {
      char *v = g_strndup(start, (gsize)(p - start));
      g_ptr_array_add(out, g_strstrip(v));
      start = p + 1;
    }
    if (!c) break;
  }
  if (quote) { /* unterminated quote: keep the whole rest as one value */
    char *v = g_strdup(start);
    g_ptr_array_add(out, g_strstrip(v));
  }
  return out;
}

/* ---- the columns ------------------------------------------------------------- */

static gboolean is_number(FabFieldType t) {
  return t == FAB_F_U8 || t == FAB_F_U32 || t == FAB_F_I32 || t == FAB_F_U64 || t == FAB_F_F64 || t == FAB_F_PS_S;
}

/* Every numeric scalar of the JSON summary under table t (following the
** records embedded or pointed to, not arrays) that is not a sweep column of
** the field table, in the summary's order: "flows.bytes" is column
** flows_bytes. */
static void more_columns(const FabFieldTable *t, const char *prefix, GArray *cols) {
  for (size_t i = 0; i < t->n; i++) {
    const FabField *f = &t->f[i];
    if (!(f->flags & FAB_FF_JSON)) continue;
    if (f->type == FAB_F_OBJ || f->type == FAB_F_PTR) {
      char *p = g_strdup_printf("%s%s.", prefix, f->name);
      more_columns(f->sub, p, cols);
      g_free(p);
    } else if (is_number(f->type) && !f->col) {
      FabFieldColumn c = {NULL, {0}};
      g_snprintf(c.path, sizeof c.path, "%s%s", prefix, f->name);
      char *name = g_strdelimit(g_strdup(c.path), ".", '_');
      c.name = g_intern_string(name); /* names live as long as the process, like the table's own */
      g_free(name);
      g_array_append_val(cols, c);
    }
  }
}

/* The sweep's summary columns: the field table's sweep columns in their
** order, then the other numbers of the summary (see the top). */
static GArray *sweep_columns(void) {
  GArray *cols = fab_fields_columns(&fab_results_table);
  more_columns(&fab_results_table, "", cols);
  return cols;
}

/* ---- the points -------------------------------------------------------------- */

/* The columns' text in a child's JSON summary (copied as the child printed it; "" for null or absent). */
static void point_parse_json(const Sweep *w, Point *pt, const char *js) {
  FabJsonIndex *ix = fab_json_index_new(js);
  for (guint f = 0; f < w->cols->len; f++) {
    g_free(pt->num[f]);
    const char *v = fab_json_index_get(ix, g_array_index(w->cols, FabFieldColumn, f).path);
    pt->num[f] = g_strdup(v && strcmp(v, "null") && *v != '"' ? v : "");
  }
  fab_json_index_free(ix);
}

/* A value given twice, as written or as the same number ("1MiB,1048576"),
** would run one point twice and count it in two places: a usage error. */
static int check_distinct(const char *arg, GPtrArray *vals) {
  double *num = g_new(double, vals->len);
  const char *unit = NULL;
  gboolean numeric = fab_plot_values_numeric((const char *const *)vals->pdata, vals->len, num, &unit);
  int rc = -1;
  for (guint i = 0; i < vals->len && rc < 0; i++)
    for (guint j = 0; j < i && rc < 0; j++) {
      const char *a = vals->pdata[j], *b = vals->pdata[i];
      if (!strcmp(a, b)) rc = fab_args_error(&fab_sweep_cmd, "--set %s: the value '%s' is given twice", arg, a);
      else if (numeric && num[i] == num[j])
        rc = fab_args_error(&fab_sweep_cmd, "--set %s: '%s' and '%s' are the same value", arg, a, b);
    }
  g_free(num);
  return rc;
}

/* The swept keys and the fixed settings from the --set list. FALSE after a usage error. */
static int read_keys(Sweep *w, const FabArgs *a) {
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  int rc = -1;
  for (guint i = 0; rc < 0 && i + 1 < a->sets->len; i++) { /* the list ends with NULL */
    const char *val = g_ptr_array_index(a->sets, i), *eq = strchr(val, '=');
    char *name = g_strstrip(g_strndup(val, (gsize)(eq - val)));
    for (guint k = 0; k < names->len && rc < 0; k++)
      if (!strcmp(names->pdata[k], name)) rc = fab_args_error(&fab_sweep_cmd, "--set %s: key '%s' is given twice", val, name);
    g_ptr_array_add(names, name);
    if (rc >= 0) break;
    GPtrArray *vals = split_top(eq + 1);
    for (guint v = 0; v < vals->len && rc < 0; v++) {
      const char *one = vals->pdata[v];
      if (vals->len > 1 && !*one) rc = fab_args_error(&fab_sweep_cmd, "--set %s: empty value in the list", val);
      else if (vals->len > 1 && strlen(one) >= KEY_STRLEN)
        rc = fab_args_error(&fab_sweep_cmd, "--set %s: a swept value longer than %d characters", val, KEY_STRLEN - 1);
    }
    if (rc < 0 && vals->len > 1 && strlen(name) >= KEY_STRLEN)
      rc = fab_args_error(&fab_sweep_cmd, "--set %s: key longer than %d characters", val, KEY_STRLEN - 1);
    if (rc < 0 && vals->len > 1) rc = check_distinct(val, vals);
    if (rc >= 0 || vals->len == 1) {
      if (rc < 0) g_ptr_array_add(w->fixed, g_strdup(val));
      g_ptr_array_free(vals, TRUE);
      continue;
    }
    Key *k = g_new0(Key, 1);
    k->name = g_strdup(name);
    k->values = vals;
    g_ptr_array_add(w->keys, k);
  }
  g_ptr_array_free(names, TRUE);
  if (rc < 0 && !w->keys->len)
    rc = fab_args_error(&fab_sweep_cmd, "nothing to sweep: give a --set KEY=V1,V2,... with several values");
  return rc;
}

/* The grid, first key slowest; FALSE if it is too large. */
static gboolean make_grid(Sweep *w) {
  w->n = 1;
  for (guint k = 0; k < w->keys->len; k++) {
    w->n *= ((Key *)w->keys->pdata[k])->values->len;
    if (w->n > 1000000) return FALSE;
  }
  w->pts = g_new0(Point, w->n);
  w->n_cmd = w->n;
  for (size_t i = 0; i < w->n; i++) {
    w->pts[i].id = i;
    w->pts[i].in_cmd = TRUE;
    w->pts[i].values = g_new0(char *, w->keys->len);
    w->pts[i].num = g_new0(char *, w->cols->len + 1);
    size_t r = i;
    for (guint k = w->keys->len; k-- > 0;) {
      Key *key = w->keys->pdata[k];
      w->pts[i].values[k] = key->values->pdata[r % key->values->len];
      r /= key->values->len;
    }
  }
  return TRUE;
}

/* Point i's overrides: the fixed ones, then its swept values. Transfer full, NULL-terminated. */
static GPtrArray *point_sets(const Sweep *w, size_t i) {
  GPtrArray *sets = g_ptr_array_new_with_free_func(g_free);
  for (guint f = 0; f < w->fixed->len; f++) g_ptr_array_add(sets, g_strdup(w->fixed->pdata[f]));
  for (guint k = 0; k < w->keys->len; k++)
    g_ptr_array_add(sets, g_strdup_printf("%s=%s", ((Key *)w->keys->pdata[k])->name, w->pts[i].values[k]));
  g_ptr_array_add(sets, NULL);
  return sets;
}

/* Check every point as `fabsim validate` would, before anything runs; the
** scenario's name (transfer full), or NULL after printing why. */
static char *check_points(const Sweep *w) {
  char *name = NULL;
  for (size_t i = 0; i < w->n; i++) {
    GPtrArray *sets = point_sets(w, i);
    GError *err = NULL;
    FabScenario *sc = fab_scenario_load(w->scenario, (const char *const *)sets->pdata, &err);
    g_ptr_array_free(sets, TRUE);
    if (!sc) {
      fprintf(stderr, "fabsim sweep: point %zu:", i);
      for (guint k = 0; k < w->keys->len; k++)
        fprintf(stderr, " %s=%s", ((Key *)w->keys->pdata[k])->name, w->pts[i].values[k]);
      fprintf(stderr, ": %s\n", err->message);
      g_error_free(err);
      g_free(name);
      return NULL;
    }
    if (!name) name = g_strdup(sc->name ? sc->name : "scenario");
    fab_scenario_free(sc);
  }
  return name;
}

/* ---- extending a sweep: the merged values and the table's points ------------ */

static gboolean has(const GPtrArray *a, const char *v) {
  for (guint i = 0; i < a->len; i++)
    if (!strcmp(a->pdata[i], v)) return TRUE;
  return FALSE;
}

typedef struct Num {
  double x;
  char *v;
} Num;

static int num_up(const void *a, const void *b) {
  const Num *p = a, *q = b;
  return p->x < q->x ? -1 : p->x > q->x;
}

static int num_down(const void *a, const void *b) { return num_up(b, a); }

/* Key k's merged values: the earlier sweep's (in its order), then this
** command's new ones. When new ones came and every value is a number (plot's
** reading of sizes, rates, times, ratios) and the earlier ones were in
** increasing (or decreasing) order, the whole list is put in that order:
** 1MiB,4MiB then 16MiB,2MiB gives 1MiB,2MiB,4MiB,16MiB. */
static void merge_values(Key *key, size_t k, const GPtrArray *prev) {
  key->all = g_ptr_array_new_with_free_func(g_free);
  for (guint r = 0; r < prev->len; r++) {
    const char *v = ((PrevRow *)prev->pdata[r])->values[k];
    if (!has(key->all, v)) g_ptr_array_add(key->all, g_strdup(v));
  }
  guint n_old = key->all->len;
  for (guint i = 0; i < key->values->len; i++)
    if (!has(key->all, key->values->pdata[i])) g_ptr_array_add(key->all, g_strdup(key->values->pdata[i]));
  guint n = key->all->len;
  if (!n_old || n == n_old) return;
  double *x = g_new(double, n);
  if (fab_plot_values_numeric((const char *const *)key->all->pdata, n, x, NULL)) {
    gboolean up = TRUE, down = n_old > 1;
    for (guint i = 1; i < n_old; i++) up &= x[i - 1] < x[i], down &= x[i - 1] > x[i];
    if (up || down) {
      Num *v = g_new(Num, n);
      for (guint i = 0; i < n; i++) v[i] = (Num){x[i], key->all->pdata[i]};
      qsort(v, n, sizeof *v, up ? num_up : num_down);
      for (guint i = 0; i < n; i++) key->all->pdata[i] = v[i].v;
      g_free(v);
    }
  }
  g_free(x);
}

char *fab_sweep__tuple_key(char *const *values, size_t nk) {
  GString *s = g_string_new(NULL);
  for (size_t k = 0; k < nk; k++) g_string_append_printf(s, "%s%s", k ? "\x1f" : "", values[k]);
  return g_string_free(s, FALSE);
}

static void points_free(Point *pts, size_t n) {
  for (size_t i = 0; pts && i < n; i++) {
    g_free(pts[i].values);
    g_strfreev(pts[i].num);
  }
  g_free(pts);
}

/* The table's points: every point of the grid of the merged values (first key
** slowest) that is in this command's grid or has an earlier row, with that
** row's result and number; new points are numbered after the earlier ones.
** *n_done gets how many of this command's points have an ok row. FALSE if
** the merged grid passes a million points. */
static gboolean merge_points(Sweep *w, GPtrArray *prev, size_t *n_done) {
  size_t nk = w->keys->len, nc = w->cols->len, total = 1;
  for (size_t k = 0; k < nk; k++) {
    Key *key = w->keys->pdata[k];
    merge_values(key, k, prev);
    total *= key->all->len;
    if (total > 1000000) return FALSE;
  }
  GHashTable *old = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL); /* values -> earlier row */
  GHashTable *cmd = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL); /* this command's points */
  size_t next_id = 0;
  GHashTable *num = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL); /* values -> its number + 1 */
  for (guint r = 0; r < prev->len; r++) {
    PrevRow *row = prev->pdata[r];
    char *key = fab_sweep__tuple_key(row->values, nk);
    if (!g_hash_table_contains(num, key)) g_hash_table_insert(num, g_strdup(key), GSIZE_TO_POINTER(row->id + 1));
    if (!row->result || g_hash_table_contains(old, key)) g_free(key); /* a duplicate row: the first one counts */
    else g_hash_table_insert(old, key, row);
    next_id = MAX(next_id, row->id + 1);
  }
  for (size_t i = 0; i < w->n; i++) g_hash_table_add(cmd, fab_sweep__tuple_key(w->pts[i].values, nk));
  GArray *pts = g_array_new(FALSE, TRUE, sizeof(Point));
  char **vals = g_new0(char *, nk + 1);
  *n_done = 0;
  for (size_t g = 0; g < total; g++) {
    size_t r = g;
    for (size_t k = nk; k-- > 0;) {
      Key *key = w->keys->pdata[k];
      vals[k] = key->all->pdata[r % key->all->len];
      r /= key->all->len;
    }
    char *tk = fab_sweep__tuple_key(vals, nk);
    PrevRow *row = g_hash_table_lookup(old, tk);
    gsize known = GPOINTER_TO_SIZE(g_hash_table_lookup(num, tk));
    gboolean in_cmd = g_hash_table_contains(cmd, tk);
    g_free(tk);
    if (!row && !in_cmd) continue;
    Point pt = {.values = g_new(char *, nk ? nk : 1), .in_cmd = in_cmd, .num = g_new0(char *, nc + 1)};
    memcpy(pt.values, vals, nk * sizeof *vals);
    pt.id = known ? known - 1 : next_id++;
    if (row) {
      pt.done = TRUE, pt.ok = row->ok, pt.exit = row->exit;
      for (size_t f = 0; f < nc; f++) pt.num[f] = g_strdup(row->num[f]);
    }
    *n_done += in_cmd && row && row->ok;
    g_array_append_val(pts, pt);
  }
  g_free(vals);
  g_hash_table_destroy(old);
  g_hash_table_destroy(num);
  g_hash_table_destroy(cmd);
  points_free(w->pts, w->n);
  w->n = pts->len;
  w->pts = (Point *)(void *)g_array_free(pts, FALSE);
  return TRUE;
}

/* ---- children ---------------------------------------------------------------- */

typedef struct Child {
  size_t point;
  GPid pid;
  int fd[3];      /* stdout, stderr, progress records (--progress-fd); -1 when closed */
  GString *buf[3];
  bool shown;     /* its progress was on the line */
} Child;

#define CHILD_PROGRESS_FD 3 /* where a point's run writes its progress records */

static gboolean child_start(Child *c, char **argv, GError **err) {
  int out = -1, errfd = -1, prog[2];
  if (!g_unix_open_pipe(prog, FD_CLOEXEC, err)) return FALSE;
  char **env = fab_sweep__child_env();
  int source = prog[1], target = CHILD_PROGRESS_FD;
  gboolean ok = g_spawn_async_with_pipes_and_fds(NULL, (const char *const *)argv, (const char *const *)env,
                                                 G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, -1, -1, -1, &source, &target,
                                                 1, &c->pid, NULL, &out, &errfd, err);
  g_strfreev(env);
  close(prog[1]);
  if (!ok) {
    close(prog[0]);
    return FALSE;
  }
  c->fd[0] = out;
  c->fd[1] = errfd;
  c->fd[2] = prog[0];
  for (int j = 0; j < 3; j++) c->buf[j] = g_string_new(NULL);
  return TRUE;
}

/* The last complete progress record a running child wrote, as "point N: T ms simulated, flows D/K" into s;
** whether it had one. */
static bool child_status(const Child *c, size_t id, GString *s) {
  const GString *b = c->buf[2];
  gsize end = b->len;
  while (end && b->str[end - 1] != '\n') end--; /* the last complete line */
  if (!end) return false;
  gsize start = end - 1;
  while (start && b->str[start - 1] != '\n') start--;
  double ms;
  unsigned done, known;
  if (sscanf(b->str + start, "PROGRESS %lf %u %u", &ms, &done, &known) != 3) return false;
  g_string_append_printf(s, "%spoint %zu: %.4g ms simulated, flows %u/%u", s->len ? ", " : "", id, ms, done, known);
  return true;
}

/* The progress line: the bar over points, the ETA, and where the running points are (the line is cleared
** to the width it had before). */
static void progress(const Sweep *w, Child *run, size_t n_run, size_t done, size_t total, size_t ran,
                     size_t left, double t0, bool force) {
  static int was;
  static gint64 last;
  gint64 now = g_get_monotonic_time();
  if (!force && now - last < 200000) return; /* at most 5 times a second while points run */
  last = now;
  const int width = 30;
  int fill = total ? (int)(width * done / total) : width;
  char bar[64];
  for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : ' ';
  bar[width] = 0;
  double el = g_get_monotonic_time() / 1e6 - t0;
  GString *s = g_string_new(NULL), *pts = g_string_new(NULL);
  for (size_t c = 0; c < n_run; c++) run[c].shown |= child_status(&run[c], w->pts[run[c].point].id, pts);
  if (ran)
    g_string_printf(s, "[%s] %zu/%zu points, ETA %.0f s", bar, done, total, el / (double)ran * (double)left);
  else
    g_string_printf(s, "[%s] %zu/%zu points, ETA ?", bar, done, total);
  if (pts->len) g_string_append_printf(s, "; %s", pts->str);
  fprintf(stderr, "\r%-*s", was, s->str);
  was = (int)s->len;
  fflush(stderr);
  g_string_free(s, TRUE);
  g_string_free(pts, TRUE);
}

/* Start point i's child into c; FALSE (spawn_error set) if it cannot start. */
static gboolean spawn_point(Sweep *w, size_t i, Child *c, gboolean tty) {
  GPtrArray *av = g_ptr_array_new_with_free_func(g_free);
  const char *self = g_get_prgname();
  char *exe = self && strchr(self, '/') ? g_strdup(self) : g_find_program_in_path(self ? self : "fabsim");
  g_ptr_array_add(av, exe ? exe : g_strdup("fabsim"));
  g_ptr_array_add(av, g_strdup("run"));
  g_ptr_array_add(av, g_strdup(w->scenario));
  g_ptr_array_add(av, g_strdup("--json"));
  g_ptr_array_add(av, g_strdup("--no-progress"));
  g_ptr_array_add(av, g_strdup("--progress-fd"));
  g_ptr_array_add(av, g_strdup(G_STRINGIFY(CHILD_PROGRESS_FD)));
  GPtrArray *sets = point_sets(w, i);
  for (guint k = 0; k + 1 < sets->len; k++) {
    g_ptr_array_add(av, g_strdup("--set"));
    g_ptr_array_add(av, g_strdup(sets->pdata[k]));
  }
  g_ptr_array_free(sets, TRUE);
  char *base = g_strdup_printf("point-%04zu.h5", w->pts[i].id);
  g_ptr_array_add(av, g_strdup("--hdf5"));
  g_ptr_array_add(av, g_build_filename(w->dir, base, NULL));
  g_free(base);
  g_ptr_array_add(av, NULL);
  GError *err = NULL;
  memset(c, 0, sizeof *c);
  c->point = i;
  gboolean ok = child_start(c, (char **)av->pdata, &err);
  if (!ok) {
    fprintf(stderr, "%sfabsim sweep: cannot run %s: %s\n", tty ? "\n" : "", (char *)av->pdata[0], err->message);
    g_error_free(err);
    w->spawn_error = TRUE;
  }
  g_ptr_array_free(av, TRUE);
  return ok;
}

/* Read what the running children wrote (blocks until one of them writes). */
static void read_children(Child *run, size_t n_run) {
  struct pollfd pfd[3 * 4096];
  int np = 0;
  for (size_t c = 0; c < n_run; c++)
    for (int j = 0; j < 3; j++)
      if (run[c].fd[j] >= 0) pfd[np++] = (struct pollfd){.fd = run[c].fd[j], .events = POLLIN};
  if (np && poll(pfd, (nfds_t)np, -1) < 0 && errno != EINTR) return;
  int q = 0;
  for (size_t c = 0; c < n_run; c++)
    for (int j = 0; j < 3; j++) {
      if (run[c].fd[j] < 0) continue;
      struct pollfd *p = &pfd[q++];
      if (!(p->revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t got = read(run[c].fd[j], buf, sizeof buf);
      if (got > 0 && j == 2 && run[c].buf[2]->len > 4096) { /* keep only a line not yet complete */
        const char *nl = strrchr(run[c].buf[2]->str, '\n');
        if (nl) g_string_erase(run[c].buf[2], 0, nl + 1 - run[c].buf[2]->str);
      }
      if (got > 0) g_string_append_len(run[c].buf[j], buf, got);
      else if (got == 0 || (errno != EINTR && errno != EAGAIN)) close(run[c].fd[j]), run[c].fd[j] = -1;
    }
}

/* A child whose pipes are both closed: its point's result. */
static void reap(Sweep *w, Child *ch, gboolean tty) {
  int status = 0;
  while (waitpid(ch->pid, &status, 0) < 0 && errno == EINTR) {}
  g_spawn_close_pid(ch->pid);
  Point *pt = &w->pts[ch->point];
  pt->exit = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  pt->ok = pt->exit == 0;
  pt->done = TRUE;
  point_parse_json(w, pt, ch->buf[0]->str);
  if (pt->ok) keep_warnings(w, pt->id, ch->buf[1]->str);
  if (!pt->ok) {
    w->n_failed++;
    fprintf(stderr, "%sfabsim sweep: point %zu failed (exit %d)", tty ? "\n" : "", pt->id, pt->exit);
    for (guint k = 0; k < w->keys->len; k++)
      fprintf(stderr, " %s=%s", ((Key *)w->keys->pdata[k])->name, pt->values[k]);
    fputs(ch->buf[1]->len ? ":\n" : "\n", stderr);
    fputs(ch->buf[1]->str, stderr);
    if (ch->buf[1]->len && ch->buf[1]->str[ch->buf[1]->len - 1] != '\n') fputc('\n', stderr);
  }
  g_string_free(ch->buf[0], TRUE);
  g_string_free(ch->buf[1], TRUE);
  g_string_free(ch->buf[2], TRUE);
  w->ran++;
  GError *err = NULL;
  if (!fab_sweep__write_point(w, pt, &err) || (w->nshards == 1 && !fab_sweep__write_csv(w, &err))) {
    fprintf(stderr, "fabsim sweep: %s\n", err->message);
    g_error_free(err);
  }
}

/* Whether this process runs point i. */
static gboolean mine(const Sweep *w, const Point *pt) {
  return pt->in_cmd && !(pt->done && pt->ok) && pt->id % w->nshards == w->shard;
}

/* Run this command's points without an ok row, up to w->jobs at once. */
static void run_points(Sweep *w, size_t n_done) {
  gboolean tty = isatty(STDERR_FILENO);
  size_t next = 0, finished = n_done, todo = 0, n_run = 0;
  for (size_t i = 0; i < w->n; i++) todo += mine(w, &w->pts[i]);
  if (w->nshards > 1) finished = 0; /* the progress line counts this shard's points */
  size_t total = finished + todo;
  Child *run = g_new0(Child, (size_t)w->jobs);
  double t0 = g_get_monotonic_time() / 1e6;
  if (tty && todo) progress(w, run, 0, finished, total, 0, todo, t0, true);
  for (;;) {
    while (!w->spawn_error && n_run < (size_t)w->jobs && next < w->n) {
      size_t i = next++;
      const Point *pt = &w->pts[i];
      if (mine(w, pt) && spawn_point(w, i, &run[n_run], tty)) n_run++;
    }
    if (!n_run) break;
    read_children(run, n_run);
    bool first = false; /* a point's first record: shown at once, however short its run */
    for (size_t c = 0; c < n_run; c++) first |= !run[c].shown && strchr(run[c].buf[2]->str, '\n');
    if (tty) progress(w, run, n_run, finished, total, w->ran, todo - w->ran, t0, first); /* where points are */
    for (size_t c = 0; c < n_run;) {
      if (run[c].fd[0] >= 0 || run[c].fd[1] >= 0 || run[c].fd[2] >= 0) {
        c++;
        continue;
      }
      reap(w, &run[c], tty);
      finished++;
      run[c] = run[--n_run];
      if (tty) progress(w, run, n_run, finished, total, w->ran, todo - w->ran, t0, true);
    }
  }
  g_free(run);
  if (tty && todo) fputc('\n', stderr);
}

/* Write the table (CSV, then HDF5). */
static gboolean write_table(Sweep *w) {
  GError *err = NULL;
  gboolean wrote = fab_sweep__write_csv(w, &err);
  if (!wrote) {
    fprintf(stderr, "fabsim sweep: %s\n", err->message);
    g_error_free(err);
  }
  return fab_sweep__write_h5(w) && wrote;
}

/* ---- the command ------------------------------------------------------------- */

static void json_str(GString *s, const char *v) { fab_json_put_str(s, v); }

/* What the table holds (every row, earlier ones included). */
static void print_result(const Sweep *w, gboolean json) {
  size_t n_ok = 0, n_bad = 0;
  for (size_t i = 0; i < w->n; i++) n_ok += w->pts[i].done && w->pts[i].ok, n_bad += w->pts[i].done && !w->pts[i].ok;
  if (!json) {
    printf("fabsim sweep: %zu points (%zu ok, %zu failed, %zu run now): %s, %s\n", w->n, n_ok, n_bad, w->ran,
           w->csv_path, w->h5_path);
    return;
  }
  GString *s = g_string_new("{\"out\": ");
  json_str(s, w->dir);
  g_string_append_printf(s, ", \"points\": %zu, \"failed\": %zu, \"rows\": [", w->n, n_bad);
  gboolean first = TRUE;
  for (size_t i = 0; i < w->n; i++) {
    const Point *pt = &w->pts[i];
    if (!pt->done) continue;
    g_string_append(s, first ? "{" : ", {");
    first = FALSE;
    for (guint k = 0; k < w->keys->len; k++) {
      json_str(s, ((Key *)w->keys->pdata[k])->name);
      g_string_append(s, ": ");
      json_str(s, pt->values[k]);
      g_string_append(s, ", ");
    }
    g_string_append_printf(s, "\"point\": %zu, \"status\": \"%s\", \"exit\": %d", pt->id, pt->ok ? "ok" : "failed",
                           pt->exit);
    for (guint f = 0; f < w->cols->len; f++)
      g_string_append_printf(s, ", \"%s\": %s", g_array_index(w->cols, FabFieldColumn, f).name,
                             pt->num[f] && *pt->num[f] ? pt->num[f] : "null");
    g_string_append_c(s, '}');
  }
  g_string_append(s, "]}\n");
  fputs(s->str, stdout);
  g_string_free(s, TRUE);
}

/* What sweep.key says of a sweep: the scenario (path and SHA-256 of its
** text), the fixed settings, then a line per swept key with its values (the
** values are informative: a sweep may be extended with others); once merged,
** a line per point: "point N VALUES" (its values joined by \x1f, escaped
** as C strings), the number every later command and every shard keeps. */
static char *signature(const Sweep *w, gboolean merged) {
  GString *sig = g_string_new(NULL);
  char *abs = g_canonicalize_filename(w->scenario, NULL), *text = NULL;
  gsize len = 0;
  g_file_get_contents(w->scenario, &text, &len, NULL);
  char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)(text ? text : ""), text ? len : 0);
  g_string_append_printf(sig, "scenario %s\nsha256 %s\n", abs, sum);
  for (guint f = 0; f < w->fixed->len; f++) g_string_append_printf(sig, "set %s\n", (char *)w->fixed->pdata[f]);
  for (guint k = 0; k < w->keys->len; k++) {
    Key *key = w->keys->pdata[k];
    GPtrArray *vals = merged && key->all ? key->all : key->values;
    g_string_append_printf(sig, "sweep %s", key->name);
    for (guint v = 0; v < vals->len; v++) g_string_append_printf(sig, "%s%s", v ? "," : "=", (char *)vals->pdata[v]);
    g_string_append_c(sig, '\n');
  }
  for (size_t i = 0; merged && i < w->n; i++) { /* the points' numbers, which every shard must agree on */
    char *tk = fab_sweep__tuple_key(w->pts[i].values, w->keys->len), *esc = g_strescape(tk, NULL);
    g_string_append_printf(sig, "point %zu %s\n", w->pts[i].id, esc);
    g_free(esc);
    g_free(tk);
  }
  g_free(abs);
  g_free(text);
  g_free(sum);
  return g_string_free(sig, FALSE);
}

/* The lines of a signature that must match for a directory to be reused
** (the "sweep KEY=values" lines cut to "sweep KEY"), of one kind: "scenario",
** "sha256", "set" or "sweep". Transfer full. */
static char *sig_part(const char *sig, const char *kind) {
  GString *s = g_string_new(NULL);
  char **lines = g_strsplit(sig, "\n", -1);
  size_t kl = strlen(kind);
  for (char **l = lines; *l; l++) {
    if (strncmp(*l, kind, kl) || (*l)[kl] != ' ') continue;
    const char *body = *l + kl + 1, *eq = !strcmp(kind, "sweep") ? strchr(body, '=') : NULL;
    g_string_append_printf(s, "%s%.*s", s->len ? ", " : "", eq ? (int)(eq - body) : (int)strlen(body), body);
  }
  g_strfreev(lines);
  return g_string_free(s, FALSE);
}

/* Why the sweep `old` (a sweep.key's text) cannot be extended by this one's
** signature `sig`, or NULL if it can (transfer full). */
static char *incompatible(const char *old, const char *sig) {
  static const char *const kinds[] = {"scenario", "sha256", "sweep", "set"};
  static const char *const what[] = {"another scenario", "another version of the scenario file", "other swept keys",
                                     "other fixed settings"};
  for (int i = 0; i < 4; i++) {
    char *a = sig_part(old, kinds[i]), *b = sig_part(sig, kinds[i]);
    char *why = !strcmp(a, b) ? NULL
                : i == 1 ? g_strdup_printf("%s (its SHA-256 changed)", what[i])
                         : g_strdup_printf("%s (%s; this sweep: %s)", what[i], *a ? a : "none", *b ? b : "none");
    g_free(a);
    g_free(b);
    if (why) return why;
  }
  return NULL;
}

/* DIR and its sweep.key: a sweep there must be of the same scenario, fixed
** settings and swept keys (its values may differ: the sweep is extended).
** FALSE after printing why (exit 2). */
static gboolean prepare_dir(Sweep *w, const char *name, const char *out_dir) {
  if (out_dir) {
    w->dir = g_strdup(out_dir);
  } else {
    char *nm = g_strdup(name);
    for (char *p = nm; *p; p++)
      if (*p == '/' || *p == ' ' || (unsigned char)*p < 0x20) *p = '_';
    w->dir = g_strdup_printf("sweep-%s", nm);
    g_free(nm);
  }
  if (g_mkdir_with_parents(w->dir, 0777) != 0) {
    fprintf(stderr, "fabsim sweep: cannot create %s: %s\n", w->dir, g_strerror(errno));
    return FALSE;
  }
  w->csv_path = g_build_filename(w->dir, "sweep.csv", NULL);
  w->h5_path = g_build_filename(w->dir, "sweep.h5", NULL);
  w->header = fab_sweep__csv_header(w);
  char *sig = signature(w, FALSE), *sig_path = g_build_filename(w->dir, "sweep.key", NULL), *old = NULL;
  gboolean have_csv = g_file_test(w->csv_path, G_FILE_TEST_EXISTS);
  gboolean have_key = g_file_get_contents(sig_path, &old, NULL, NULL);
  char *why = have_key ? incompatible(old, sig) : have_csv ? g_strdup("an unknown sweep (no sweep.key)") : NULL;
  gboolean ok = FALSE;
  GError *e = NULL;
  if (why && have_csv) { /* (a sweep.key without results protects nothing: the directory becomes this sweep's) */
    fprintf(stderr, "fabsim sweep: %s holds another sweep: %s; see %s. A sweep is extended by the same command "
            "with more values (each swept key with two or more: a single value is a fixed setting); give another "
            "--out for another sweep\n", w->dir, why, sig_path);
  } else if (!have_key && !g_file_set_contents(sig_path, sig, -1, &e)) { /* can it be written? (rewritten once
    ** merged; a key already there stays until then: a shard starting meanwhile must read its points' numbers) */
    fprintf(stderr, "fabsim sweep: cannot write in %s: %s\n", w->dir, e->message);
    g_error_free(e);
  } else {
    ok = TRUE;
  }
  g_free(why);
  w->old_key = have_key ? old : NULL;
  if (!have_key) g_free(old);
  g_free(sig_path);
  g_free(sig);
  return ok;
}

/* Record the merged values in sweep.key. */
static gboolean write_key(Sweep *w) {
  char *sig = signature(w, TRUE), *sig_path = g_build_filename(w->dir, "sweep.key", NULL);
  GError *e = NULL;
  gboolean ok = g_file_set_contents(sig_path, sig, -1, &e);
  if (!ok) {
    fprintf(stderr, "fabsim sweep: cannot write in %s: %s\n", w->dir, e->message);
    g_error_free(e);
  }
  g_free(sig);
  g_free(sig_path);
  return ok;
}

static void sweep_free(Sweep *w) {
  points_free(w->pts, w->n);
  for (guint k = 0; k < w->keys->len; k++) {
    Key *key = w->keys->pdata[k];
    g_free(key->name);
    g_ptr_array_free(key->values, TRUE);
    if (key->all) g_ptr_array_free(key->all, TRUE);
    g_free(key);
  }
  g_ptr_array_free(w->keys, TRUE);
  g_ptr_array_free(w->fixed, TRUE);
  if (w->warn) g_ptr_array_free(w->warn, TRUE);
  g_array_free(w->cols, TRUE);
  g_free(w->dir);
  g_free(w->csv_path);
  g_free(w->h5_path);
  g_free(w->header);
  g_free(w->old_key);
}

/* The sweep after its arguments were read: the exit status. */
static int sweep(Sweep *w, const FabArgs *a) {
  if (!g_file_test(w->scenario, G_FILE_TEST_IS_REGULAR)) {
    fprintf(stderr, "fabsim sweep: %s: no such scenario file\n", w->scenario);
    return EXIT_USAGE;
  }
  w->jobs = a->given[SW_JOBS] ? (long)a->num[SW_JOBS] : fab_sweep__default_jobs(w);
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
      (rlim_t)w->jobs > (nofile.rlim_cur - 16) / 2)
    w->jobs = (long)((nofile.rlim_cur - 16) / 2); /* two pipes per child */
  if (!make_grid(w)) return fab_args_error(&fab_sweep_cmd, "the grid has more than a million points");
  char *name = check_points(w);
  if (!name) return EXIT_USAGE;
  gboolean ok = prepare_dir(w, name, a->value[SW_OUT]);
  g_free(name);
  if (!ok) return EXIT_USAGE;
  GPtrArray *prev = g_ptr_array_new_with_free_func(fab_sweep__prev_row_free);
  size_t n_done = 0;
  ok = fab_sweep__registry_rows(w, prev) && fab_sweep__read_previous(w, prev);
  if (ok && !merge_points(w, prev, &n_done)) {
    fprintf(stderr, "fabsim sweep: %s: the sweep there and this one make a grid of more than a million points\n",
            w->dir);
    ok = FALSE;
  }
  size_t n_kept = ok ? w->n - w->n_cmd : 0; /* earlier points outside this command's grid */
  g_ptr_array_free(prev, TRUE);
  if (!ok || !write_key(w)) return EXIT_USAGE;
  if (n_done || n_kept) {
    fprintf(stderr, "fabsim sweep: %zu of %zu points already done", n_done, w->n_cmd);
    if (n_kept)
      fprintf(stderr, "; the table keeps %zu other point%s of the sweep in %s", n_kept, n_kept == 1 ? "" : "s", w->dir);
    fputc('\n', stderr);
  }
  run_points(w, n_done);
  gboolean wrote;
  if (w->nshards == 1) {
    wrote = write_table(w);
  } else { /* the other shards' points too; written again if more came meanwhile, so the last one to finish
           ** leaves the whole table whatever the order of the renames */
    size_t before = fab_sweep__gather(w), after;
    for (;;) {
      wrote = write_table(w);
      if ((after = fab_sweep__gather(w)) == before) break;
      before = after;
    }
    size_t left = 0;
    for (size_t i = 0; i < w->n; i++) left += w->pts[i].in_cmd && !w->pts[i].done;
    if (left)
      fprintf(stderr, "fabsim sweep: shard %u of %u done; %zu point%s of the grid %s not done yet (other shards': "
              "the last shard to finish writes the whole table, and a rerun completes it)\n", w->shard, w->nshards,
              left, left == 1 ? "" : "s", left == 1 ? "is" : "are");
  }
  print_warnings(w);
  print_result(w, a->flag[SW_JSON]);
  return w->spawn_error || !wrote || w->n_failed ? EXIT_FAILED : 0;
}

int fab_cmd_sweep(int argc, char **argv) {
  FabArgs a;
  Sweep w = {0};
  w.keys = g_ptr_array_new();
  w.fixed = g_ptr_array_new_with_free_func(g_free);
  w.warn = g_ptr_array_new_with_free_func(warning_free);
  w.cols = sweep_columns();
  int rc = fab_args_parse(&fab_sweep_cmd, argc, argv, &a);
  if (rc < 0) rc = read_keys(&w, &a);
  if (rc < 0) rc = fab_sweep__shard(&w, a.value[SW_SHARD]);
  if (rc < 0) {
    w.scenario = fab_args_pos(&a, 0);
    rc = sweep(&w, &a);
  }
  sweep_free(&w);
  fab_args_clear(&a);
  return rc;
}

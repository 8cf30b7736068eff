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
** The columns after the swept values are the sweep columns of the results'
** field table (tools/libfabsim/results.c), read from each child's JSON
** summary by their dotted paths.
**
** Resume: when DIR/sweep.csv exists with the same header, a point whose row
** there (matched by its swept values) has status ok is not run again. The CSV
** is rewritten after each finished point (so an interrupted sweep resumes
** where it stopped), and both files are written in full at the end, via a
** temporary file and rename. Exit status: 0 every point ok, 1 some point's
** simulation failed (its row says so), 2 bad input or usage. */
#include <glib.h>
#include <sys/resource.h>
#include <glib/gstdio.h>
#include <hdf5.h>
#include <errno.h>
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

#define KEY_STRLEN 64

enum { SW_OUT, SW_JOBS, SW_JSON };

static const FabOpt sweep_opts[] = {
  {"--set", 0, FAB_OPT_SET, 0, "KEY=V1,V2,...", "KEY=V1,V2,...", 0, 0,
   "a swept key (or a fixed one with a single value)"},
  {"--seed", 0, FAB_OPT_SEED, 0, "N", "a number", 0, 0, "the same as --set seed=N"},
  {"--out", 0, FAB_OPT_VALUE, SW_OUT, "DIR", "a directory", 0, 0, "where to write (default: sweep-<scenario name>)"},
  {"--jobs", 'j', FAB_OPT_UINT, SW_JOBS, "N", "a positive integer", 1, 4096,
   "points run at once (default: the number of CPUs)"},
  {"--json", 0, FAB_OPT_FLAG, SW_JSON, NULL, NULL, 0, 0, "print the table as JSON on stdout"},
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
  "grid order with the swept values, point, status (ok | failed), exit and the\n"
  "summary fields; and DIR/point-NNNN.h5 for each point. Rerunning the same\n"
  "sweep skips the points already done with status ok.\n"
  "\n"
  "exit status: 0 every point ran ok, 1 some point's simulation failed,\n"
  "2 bad input or usage\n",
};

typedef struct Point {
  char **values;   /* one per swept key, borrowed from the Key */
  gboolean done;   /* has a result (from this run or a previous one) */
  gboolean ok;
  int exit;        /* child's exit status; -1 not exited normally */
  char **num;      /* text of each column ("" if unknown) */
} Point;

typedef struct Key {
  char *name;
  GPtrArray *values; /* char* */
} Key;

typedef struct Sweep {
  const char *scenario;
  GPtrArray *keys;   /* Key*: the swept keys */
  GPtrArray *fixed;  /* "KEY=V": applied to every point */
  GArray *cols;      /* FabFieldColumn: the summary fields tabulated */
  Point *pts;
  size_t n;
  char *dir, *csv_path, *h5_path, *header;
  long jobs;
  size_t n_failed, ran;
  gboolean spawn_error;
} Sweep;

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
  for (size_t i = 0; i < w->n; i++) {
    w->pts[i].values = g_new0(char *, w->keys->len);
    w->pts[i].num = g_new0(char *, w->cols->len);
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

/* ---- CSV ------------------------------------------------------------------- */

static void csv_cell(GString *s, const char *v) {
  if (strpbrk(v, ",\"\n\r") || (*v && (v[0] == ' ' || v[strlen(v) - 1] == ' '))) {
    g_string_append_c(s, '"');
    for (const char *p = v; *p; p++) {
      if (*p == '"') g_string_append_c(s, '"');
      g_string_append_c(s, *p);
    }
    g_string_append_c(s, '"');
  } else {
    g_string_append(s, v);
  }
}

/* Parse one CSV line starting at *pp (advanced past it). NULL at the end. */
static GPtrArray *csv_row(const char **pp) {
  const char *p = *pp;
  if (!*p) return NULL;
  GPtrArray *row = g_ptr_array_new_with_free_func(g_free);
  GString *cell = g_string_new(NULL);
  gboolean q = FALSE;
  for (;; p++) {
    char c = *p;
    if (q) {
      if (!c) break;
      if (c == '"') {
        if (p[1] == '"') g_string_append_c(cell, '"'), p++;
        else q = FALSE;
      } else {
        g_string_append_c(cell, c);
      }
    } else if (c == '"') {
      q = TRUE;
    } else if (c == ',') {
      g_ptr_array_add(row, g_string_free(cell, FALSE));
      cell = g_string_new(NULL);
    } else if (c == '\n' || c == '\r' || !c) {
      break;
    } else {
      g_string_append_c(cell, c);
    }
  }
  g_ptr_array_add(row, g_string_free(cell, FALSE));
  if (*p == '\r') p++;
  if (*p == '\n') p++;
  *pp = p;
  return row;
}

static char *csv_header(const Sweep *w) {
  GString *s = g_string_new(NULL);
  for (guint k = 0; k < w->keys->len; k++) {
    csv_cell(s, ((Key *)w->keys->pdata[k])->name);
    g_string_append_c(s, ',');
  }
  g_string_append(s, "point,status,exit");
  for (guint f = 0; f < w->cols->len; f++) g_string_append_printf(s, ",%s", g_array_index(w->cols, FabFieldColumn, f).name);
  return g_string_free(s, FALSE);
}

static gboolean write_csv(const Sweep *w, GError **err) {
  GString *s = g_string_new(w->header);
  g_string_append_c(s, '\n');
  for (size_t i = 0; i < w->n; i++) {
    const Point *pt = &w->pts[i];
    if (!pt->done) continue;
    for (guint k = 0; k < w->keys->len; k++) {
      csv_cell(s, pt->values[k]);
      g_string_append_c(s, ',');
    }
    g_string_append_printf(s, "%zu,%s,%d", i, pt->ok ? "ok" : "failed", pt->exit);
    for (guint f = 0; f < w->cols->len; f++) {
      g_string_append_c(s, ',');
      g_string_append(s, pt->num[f] ? pt->num[f] : "");
    }
    g_string_append_c(s, '\n');
  }
  gboolean ok = g_file_set_contents(w->csv_path, s->str, (gssize)s->len, err);
  g_string_free(s, TRUE);
  return ok;
}

/* Read a previous DIR/sweep.csv into the points. FALSE (with a message) if
** it exists but belongs to another sweep. */
static gboolean read_previous(Sweep *w, size_t *n_done) {
  char *text = NULL;
  *n_done = 0;
  if (!g_file_get_contents(w->csv_path, &text, NULL, NULL)) return TRUE;
  const char *p = text, *nl = strchr(p, '\n');
  size_t hl = nl ? (size_t)(nl - p) : strlen(p);
  if (hl && p[hl - 1] == '\r') hl--;
  if (hl != strlen(w->header) || strncmp(p, w->header, hl)) {
    fprintf(stderr, "fabsim sweep: %s holds another sweep (its header differs); use another --out or remove it\n",
            w->csv_path);
    g_free(text);
    return FALSE;
  }
  p = nl ? nl + 1 : p + hl;
  GPtrArray *row;
  size_t nk = w->keys->len, nc = w->cols->len;
  while ((row = csv_row(&p))) {
    if (row->len == nk + 3 + nc && !strcmp(row->pdata[nk + 1], "ok")) {
      for (size_t i = 0; i < w->n; i++) {
        Point *pt = &w->pts[i];
        gboolean same = !pt->done;
        for (size_t k = 0; k < nk && same; k++) same = !strcmp(pt->values[k], row->pdata[k]);
        if (!same) continue;
        pt->done = pt->ok = TRUE;
        pt->exit = 0;
        for (size_t f = 0; f < nc; f++) pt->num[f] = g_strdup(row->pdata[nk + 3 + f]);
        (*n_done)++;
        break;
      }
    }
    g_ptr_array_free(row, TRUE);
  }
  g_free(text);
  return TRUE;
}

/* ---- HDF5 table -------------------------------------------------------------- */

static gboolean write_h5(const Sweep *w) {
  size_t nk = w->keys->len, nc = w->cols->len;
  size_t off_point = nk * KEY_STRLEN, off_status = off_point + 4, off_exit = off_status + 4;
  size_t off_num = (off_exit + 4 + 7) & ~(size_t)7, rec = off_num + 8 * nc, rows = 0;
  for (size_t i = 0; i < w->n; i++) rows += w->pts[i].done;
  unsigned char *buf = g_malloc0(rec * (rows ? rows : 1));
  size_t r = 0;
  for (size_t i = 0; i < w->n; i++) {
    const Point *pt = &w->pts[i];
    if (!pt->done) continue;
    unsigned char *b = buf + r++ * rec;
    for (size_t k = 0; k < nk; k++) g_strlcpy((char *)b + k * KEY_STRLEN, pt->values[k], KEY_STRLEN);
    uint32_t u = (uint32_t)i, st = pt->ok ? 0 : 1;
    int32_t ex = pt->exit;
    memcpy(b + off_point, &u, 4);
    memcpy(b + off_status, &st, 4);
    memcpy(b + off_exit, &ex, 4);
    for (size_t f = 0; f < nc; f++) {
      double d = pt->num[f] && *pt->num[f] ? g_ascii_strtod(pt->num[f], NULL) : NAN;
      memcpy(b + off_num + 8 * f, &d, 8);
    }
  }
  char *tmp = g_strconcat(w->h5_path, ".tmp", NULL);
  gboolean ok = FALSE;
  hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, KEY_STRLEN);
  H5Tset_strpad(str, H5T_STR_NULLTERM);
  hid_t t = H5Tcreate(H5T_COMPOUND, rec);
  for (size_t k = 0; k < nk; k++) H5Tinsert(t, ((Key *)w->keys->pdata[k])->name, k * KEY_STRLEN, str);
  H5Tinsert(t, "point", off_point, H5T_NATIVE_UINT32);
  H5Tinsert(t, "status", off_status, H5T_NATIVE_UINT32);
  H5Tinsert(t, "exit", off_exit, H5T_NATIVE_INT32);
  for (size_t f = 0; f < nc; f++)
    H5Tinsert(t, g_array_index(w->cols, FabFieldColumn, f).name, off_num + 8 * f, H5T_NATIVE_DOUBLE);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* failures are reported by us, once */
  hid_t file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file >= 0) {
    hsize_t dims[1] = {rows};
    hid_t sp = H5Screate_simple(1, dims, NULL);
    hid_t ds = H5Dcreate2(file, "/sweep", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (ds >= 0) {
      ok = !rows || H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0;
      hid_t as = H5Screate(H5S_SCALAR), at_t = H5Tcopy(H5T_C_S1); /* status codes, for readers */
      const char *doc = "status: 0 ok, 1 failed; exit: the run's exit status";
      H5Tset_size(at_t, strlen(doc) + 1);
      hid_t a = H5Acreate2(ds, "legend", at_t, as, H5P_DEFAULT, H5P_DEFAULT);
      if (a >= 0) H5Awrite(a, at_t, doc), H5Aclose(a);
      H5Tclose(at_t);
      H5Sclose(as);
      H5Dclose(ds);
    }
    H5Sclose(sp);
    if (H5Fclose(file) < 0) ok = FALSE;
  }
  H5Tclose(t);
  H5Tclose(str);
  g_free(buf);
  if (ok && g_rename(tmp, w->h5_path) != 0) ok = FALSE;
  if (!ok) {
    fprintf(stderr, "fabsim sweep: cannot write %s\n", w->h5_path);
    g_unlink(tmp);
  }
  g_free(tmp);
  return ok;
}

/* ---- children ---------------------------------------------------------------- */

typedef struct Child {
  size_t point;
  GPid pid;
  int fd[2]; /* stdout, stderr; -1 when closed */
  GString *buf[2];
} Child;

static gboolean child_start(Child *c, char **argv, GError **err) {
  int out = -1, errfd = -1;
  if (!g_spawn_async_with_pipes(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &c->pid, NULL, &out,
                                &errfd, err))
    return FALSE;
  c->fd[0] = out;
  c->fd[1] = errfd;
  c->buf[0] = g_string_new(NULL);
  c->buf[1] = g_string_new(NULL);
  return TRUE;
}

static void progress(size_t done, size_t total, size_t ran, size_t left, double t0) {
  const int width = 30;
  int fill = total ? (int)(width * done / total) : width;
  char bar[64];
  for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : ' ';
  bar[width] = 0;
  double el = g_get_monotonic_time() / 1e6 - t0;
  if (ran)
    fprintf(stderr, "\r[%s] %zu/%zu points, ETA %.0f s   ", bar, done, total, el / (double)ran * (double)left);
  else
    fprintf(stderr, "\r[%s] %zu/%zu points, ETA ?   ", bar, done, total);
  fflush(stderr);
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
  GPtrArray *sets = point_sets(w, i);
  for (guint k = 0; k + 1 < sets->len; k++) {
    g_ptr_array_add(av, g_strdup("--set"));
    g_ptr_array_add(av, g_strdup(sets->pdata[k]));
  }
  g_ptr_array_free(sets, TRUE);
  char *base = g_strdup_printf("point-%04zu.h5", i);
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
  struct pollfd pfd[2 * 4096];
  int np = 0;
  for (size_t c = 0; c < n_run; c++)
    for (int j = 0; j < 2; j++)
      if (run[c].fd[j] >= 0) pfd[np++] = (struct pollfd){.fd = run[c].fd[j], .events = POLLIN};
  if (np && poll(pfd, (nfds_t)np, -1) < 0 && errno != EINTR) return;
  int q = 0;
  for (size_t c = 0; c < n_run; c++)
    for (int j = 0; j < 2; j++) {
      if (run[c].fd[j] < 0) continue;
      struct pollfd *p = &pfd[q++];
      if (!(p->revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t got = read(run[c].fd[j], buf, sizeof buf);
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
  if (!pt->ok) {
    w->n_failed++;
    fprintf(stderr, "%sfabsim sweep: point %zu failed (exit %d)", tty ? "\n" : "", ch->point, pt->exit);
    for (guint k = 0; k < w->keys->len; k++)
      fprintf(stderr, " %s=%s", ((Key *)w->keys->pdata[k])->name, pt->values[k]);
    fputs(ch->buf[1]->len ? ":\n" : "\n", stderr);
    fputs(ch->buf[1]->str, stderr);
    if (ch->buf[1]->len && ch->buf[1]->str[ch->buf[1]->len - 1] != '\n') fputc('\n', stderr);
  }
  g_string_free(ch->buf[0], TRUE);
  g_string_free(ch->buf[1], TRUE);
  w->ran++;
  GError *err = NULL;
  if (!write_csv(w, &err)) {
    fprintf(stderr, "fabsim sweep: %s\n", err->message);
    g_error_free(err);
  }
}

/* Run the points not done, up to w->jobs at once. */
static void run_points(Sweep *w, size_t n_done) {
  gboolean tty = isatty(STDERR_FILENO);
  size_t next = 0, finished = n_done, todo = w->n - n_done, n_run = 0;
  Child *run = g_new0(Child, (size_t)w->jobs);
  double t0 = g_get_monotonic_time() / 1e6;
  if (tty && todo) progress(finished, w->n, 0, todo, t0);
  for (;;) {
    while (!w->spawn_error && n_run < (size_t)w->jobs && next < w->n) {
      size_t i = next++;
      if (!w->pts[i].done && spawn_point(w, i, &run[n_run], tty)) n_run++;
    }
    if (!n_run) break;
    read_children(run, n_run);
    for (size_t c = 0; c < n_run;) {
      if (run[c].fd[0] >= 0 || run[c].fd[1] >= 0) {
        c++;
        continue;
      }
      reap(w, &run[c], tty);
      finished++;
      if (tty) progress(finished, w->n, w->ran, todo - w->ran, t0);
      run[c] = run[--n_run];
    }
  }
  g_free(run);
  if (tty && todo) fputc('\n', stderr);
}

/* ---- the command ------------------------------------------------------------- */

static void json_str(GString *s, const char *v) { fab_json_put_str(s, v); }

static void print_result(const Sweep *w, gboolean json) {
  if (!json) {
    size_t n_ok = 0;
    for (size_t i = 0; i < w->n; i++) n_ok += w->pts[i].done && w->pts[i].ok;
    printf("fabsim sweep: %zu points (%zu ok, %zu failed, %zu run now): %s, %s\n", w->n, n_ok, w->n_failed, w->ran,
           w->csv_path, w->h5_path);
    return;
  }
  GString *s = g_string_new("{\"out\": ");
  json_str(s, w->dir);
  g_string_append_printf(s, ", \"points\": %zu, \"failed\": %zu, \"rows\": [", w->n, w->n_failed);
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
    g_string_append_printf(s, "\"point\": %zu, \"status\": \"%s\", \"exit\": %d", i, pt->ok ? "ok" : "failed",
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

/* DIR and its sweep.key: a resume must be of the same scenario, settings and
** values. FALSE after printing why (exit 2). */
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
  w->header = csv_header(w);
  GString *sig = g_string_new(NULL);
  char *abs = g_canonicalize_filename(w->scenario, NULL), *text = NULL;
  gsize len = 0;
  g_file_get_contents(w->scenario, &text, &len, NULL);
  char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)(text ? text : ""), text ? len : 0);
  g_string_append_printf(sig, "scenario %s\nsha256 %s\n", abs, sum);
  for (guint f = 0; f < w->fixed->len; f++) g_string_append_printf(sig, "set %s\n", (char *)w->fixed->pdata[f]);
  for (guint k = 0; k < w->keys->len; k++) {
    Key *key = w->keys->pdata[k];
    g_string_append_printf(sig, "sweep %s", key->name);
    for (guint v = 0; v < key->values->len; v++) g_string_append_printf(sig, "%s%s", v ? "," : "=", (char *)key->values->pdata[v]);
    g_string_append_c(sig, '\n');
  }
  g_free(abs);
  g_free(text);
  g_free(sum);
  char *sig_path = g_build_filename(w->dir, "sweep.key", NULL), *old = NULL;
  gboolean have_csv = g_file_test(w->csv_path, G_FILE_TEST_EXISTS);
  gboolean same = g_file_get_contents(sig_path, &old, NULL, NULL) && !strcmp(old, sig->str), ok = FALSE;
  GError *e = NULL;
  if (have_csv && !same) {
    fprintf(stderr, "fabsim sweep: %s holds another sweep (a different scenario, settings or values; see %s): "
            "give another --out\n", w->dir, sig_path);
  } else if (!g_file_set_contents(sig_path, sig->str, -1, &e)) {
    fprintf(stderr, "fabsim sweep: cannot write in %s: %s\n", w->dir, e->message);
    g_error_free(e);
  } else {
    ok = TRUE;
  }
  g_free(old);
  g_free(sig_path);
  g_string_free(sig, TRUE);
  return ok;
}

static void sweep_free(Sweep *w) {
  for (size_t i = 0; w->pts && i < w->n; i++) {
    g_free(w->pts[i].values);
    for (guint f = 0; f < w->cols->len; f++) g_free(w->pts[i].num[f]);
    g_free(w->pts[i].num);
  }
  g_free(w->pts);
  for (guint k = 0; k < w->keys->len; k++) {
    Key *key = w->keys->pdata[k];
    g_free(key->name);
    g_ptr_array_free(key->values, TRUE);
    g_free(key);
  }
  g_ptr_array_free(w->keys, TRUE);
  g_ptr_array_free(w->fixed, TRUE);
  g_array_free(w->cols, TRUE);
  g_free(w->dir);
  g_free(w->csv_path);
  g_free(w->h5_path);
  g_free(w->header);
}

/* The sweep after its arguments were read: the exit status. */
static int sweep(Sweep *w, const FabArgs *a) {
  if (!g_file_test(w->scenario, G_FILE_TEST_IS_REGULAR)) {
    fprintf(stderr, "fabsim sweep: %s: no such scenario file\n", w->scenario);
    return EXIT_USAGE;
  }
  w->jobs = a->given[SW_JOBS] ? (long)a->num[SW_JOBS] : (long)g_get_num_processors();
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
      (rlim_t)w->jobs > (nofile.rlim_cur - 16) / 2)
    w->jobs = (long)((nofile.rlim_cur - 16) / 2); /* two pipes per child */
  if (!make_grid(w)) return fab_args_error(&fab_sweep_cmd, "the grid has more than a million points");
  char *name = check_points(w);
  if (!name) return EXIT_USAGE;
  gboolean ok = prepare_dir(w, name, a->value[SW_OUT]);
  g_free(name);
  size_t n_done = 0;
  if (!ok || !read_previous(w, &n_done)) return EXIT_USAGE;
  if (n_done) fprintf(stderr, "fabsim sweep: %zu of %zu points already done\n", n_done, w->n);
  run_points(w, n_done);
  GError *err = NULL;
  gboolean wrote = write_csv(w, &err);
  if (!wrote) {
    fprintf(stderr, "fabsim sweep: %s\n", err->message);
    g_error_free(err);
  }
  wrote = write_h5(w) && wrote;
  print_result(w, a->flag[SW_JSON]);
  return w->spawn_error || !wrote || w->n_failed ? EXIT_FAILED : 0;
}

int fab_cmd_sweep(int argc, char **argv) {
  FabArgs a;
  Sweep w = {0};
  w.keys = g_ptr_array_new();
  w.fixed = g_ptr_array_new_with_free_func(g_free);
  w.cols = fab_fields_columns(&fab_results_table);
  int rc = fab_args_parse(&fab_sweep_cmd, argc, argv, &a);
  if (rc < 0) rc = read_keys(&w, &a);
  if (rc < 0) {
    w.scenario = fab_args_pos(&a, 0);
    rc = sweep(&w, &a);
  }
  sweep_free(&w);
  fab_args_clear(&a);
  return rc;
}

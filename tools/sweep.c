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
#include "sim/json.h"
#include "tools/scenario.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define KEY_STRLEN 64

static const char usage_sweep[] =
  "usage: fabsim sweep SCENARIO --set KEY=V1,V2,... [--set KEY=V]... [--seed N]\n"
  "                    [--out DIR] [--jobs N] [--json]\n"
  "\n"
  "Run SCENARIO at every point of a grid: the cartesian product of the values\n"
  "of each --set given several comma-separated values (commas inside [], {}\n"
  "or quotes do not split). A --set with one value applies to every point.\n"
  "Each point runs as its own `fabsim run` process, up to N at once.\n"
  "\n"
  "  --set KEY=V1,V2,...  a swept key (or a fixed one with a single value)\n"
  "  --seed N             the same as --set seed=N\n"
  "  --out DIR            where to write (default: sweep-<scenario name>)\n"
  "  --jobs N             points run at once (default: the number of CPUs)\n"
  "  --json               print the table as JSON on stdout\n"
  "\n"
  "Writes DIR/sweep.csv and DIR/sweep.h5 (table /sweep): a row per point in\n"
  "grid order with the swept values, point, status (ok | failed), exit and the\n"
  "summary fields; and DIR/point-NNNN.h5 for each point. Rerunning the same\n"
  "sweep skips the points already done with status ok.\n"
  "\n"
  "exit status: 0 every point ran ok, 1 some point's simulation failed,\n"
  "2 bad input or usage\n";

/* The numeric summary fields, in column order: the CSV/HDF5 column name and
** the field's dotted path in the JSON summary. The step columns are empty
** for runs that are not training. */
typedef struct Field {
  const char *name, *json;
} Field;
static const Field fields[] = {
  {"sim_time_s", "sim_time_s"},       {"events", "events"},
  {"packet_hops", "packet_hops"},     {"drops", "drops"},
  {"retransmits", "retransmits"},     {"pfc_pause_frames", "pfc_pause_frames"},
  {"ecn_marks", "ecn_marks"},         {"cnps", "cnps"},
  {"max_queue_bytes", "max_queue_bytes"},
  {"flows_completed", "flows.completed"}, {"flows_count", "flows.count"},
  {"fct_p50_s", "flows.fct_p50_s"},   {"fct_p99_s", "flows.fct_p99_s"},
  {"fct_max_s", "flows.fct_max_s"},
  {"step_time_s", "step.step_time_s"}, {"compute_s", "step.compute_s"},
  {"exposed_comm_s", "step.exposed_comm_s"}, {"bubble_fraction", "step.bubble_fraction"},
  {"wall_s", "wall_s"},
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

typedef struct Point {
  char **values;   /* one per swept key, borrowed from the Key */
  gboolean done;   /* has a result (from this run or a previous one) */
  gboolean ok;
  int exit;        /* child's exit status; -1 not exited normally */
  char *num[N_FIELDS]; /* text of each field ("" if unknown) */
} Point;

typedef struct Key {
  char *name;
  GPtrArray *values; /* char* */
} Key;

static int usage_error(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("fabsim sweep: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputs("\n\n", stderr);
  fputs(usage_sweep, stderr);
  va_end(ap);
  return EXIT_USAGE;
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

/* ---- the JSON summary ------------------------------------------------------ */

/* The text of the number at `path` in `js` (copied as the child printed it), or NULL. */
static char *json_number(const char *js, const char *path) {
  const char *p = js ? fab_json_value(js, path) : NULL;
  if (!p) return NULL;
  const char *q = p;
  while (*q && strchr("0123456789+-.eE", *q)) q++;
  return q > p ? g_strndup(p, (gsize)(q - p)) : NULL;
}

static void point_parse_json(Point *pt, const char *js) {
  for (size_t f = 0; f < N_FIELDS; f++) {
    g_free(pt->num[f]);
    char *v = json_number(js, fields[f].json);
    pt->num[f] = v ? v : g_strdup("");
  }
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

static char *csv_header(GPtrArray *keys) {
  GString *s = g_string_new(NULL);
  for (guint k = 0; k < keys->len; k++) {
    csv_cell(s, ((Key *)keys->pdata[k])->name);
    g_string_append_c(s, ',');
  }
  g_string_append(s, "point,status,exit");
  for (size_t f = 0; f < N_FIELDS; f++) g_string_append_printf(s, ",%s", fields[f].name);
  return g_string_free(s, FALSE);
}

static gboolean write_csv(const char *path, const char *header, GPtrArray *keys, Point *pts, size_t n,
                          GError **err) {
  GString *s = g_string_new(header);
  g_string_append_c(s, '\n');
  for (size_t i = 0; i < n; i++) {
    Point *pt = &pts[i];
    if (!pt->done) continue;
    for (guint k = 0; k < keys->len; k++) {
      csv_cell(s, pt->values[k]);
      g_string_append_c(s, ',');
    }
    g_string_append_printf(s, "%zu,%s,%d", i, pt->ok ? "ok" : "failed", pt->exit);
    for (size_t f = 0; f < N_FIELDS; f++) {
      g_string_append_c(s, ',');
      g_string_append(s, pt->num[f] ? pt->num[f] : "");
    }
    g_string_append_c(s, '\n');
  }
  gboolean ok = g_file_set_contents(path, s->str, (gssize)s->len, err);
  g_string_free(s, TRUE);
  return ok;
}

/* Read a previous DIR/sweep.csv into pts. Returns FALSE (with a message) if
** it exists but belongs to another sweep. */
static gboolean read_previous(const char *path, const char *header, GPtrArray *keys, Point *pts, size_t n,
                              size_t *n_done) {
  char *text = NULL;
  *n_done = 0;
  if (!g_file_get_contents(path, &text, NULL, NULL)) return TRUE;
  const char *p = text;
  const char *nl = strchr(p, '\n');
  size_t hl = nl ? (size_t)(nl - p) : strlen(p);
  if (hl && p[hl - 1] == '\r') hl--;
  if (hl != strlen(header) || strncmp(p, header, hl)) {
    fprintf(stderr, "fabsim sweep: %s holds another sweep (its header differs); use another --out or remove it\n",
            path);
    g_free(text);
    return FALSE;
  }
  p = nl ? nl + 1 : p + hl;
  GPtrArray *row;
  size_t nk = keys->len;
  while ((row = csv_row(&p))) {
    if (row->len == nk + 3 + N_FIELDS && !strcmp(row->pdata[nk + 1], "ok")) {
      for (size_t i = 0; i < n; i++) {
        if (pts[i].done) continue;
        gboolean same = TRUE;
        for (size_t k = 0; k < nk && same; k++) same = !strcmp(pts[i].values[k], row->pdata[k]);
        if (!same) continue;
        pts[i].done = pts[i].ok = TRUE;
        pts[i].exit = 0;
        for (size_t f = 0; f < N_FIELDS; f++) pts[i].num[f] = g_strdup(row->pdata[nk + 3 + f]);
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

static gboolean write_h5(const char *path, GPtrArray *keys, Point *pts, size_t n) {
  size_t nk = keys->len;
  size_t off_point = nk * KEY_STRLEN, off_status = off_point + 4, off_exit = off_status + 4;
  size_t off_num = off_exit + 4;
  off_num = (off_num + 7) & ~(size_t)7;
  size_t rec = off_num + 8 * N_FIELDS;
  size_t rows = 0;
  for (size_t i = 0; i < n; i++) rows += pts[i].done;
  unsigned char *buf = g_malloc0(rec * (rows ? rows : 1));
  size_t r = 0;
  for (size_t i = 0; i < n; i++) {
    if (!pts[i].done) continue;
    unsigned char *b = buf + r++ * rec;
    for (size_t k = 0; k < nk; k++) g_strlcpy((char *)b + k * KEY_STRLEN, pts[i].values[k], KEY_STRLEN);
    uint32_t u = (uint32_t)i, st = pts[i].ok ? 0 : 1;
    int32_t ex = pts[i].exit;
    memcpy(b + off_point, &u, 4);
    memcpy(b + off_status, &st, 4);
    memcpy(b + off_exit, &ex, 4);
    for (size_t f = 0; f < N_FIELDS; f++) {
      double d = pts[i].num[f] && *pts[i].num[f] ? g_ascii_strtod(pts[i].num[f], NULL) : NAN;
      memcpy(b + off_num + 8 * f, &d, 8);
    }
  }
  char *tmp = g_strconcat(path, ".tmp", NULL);
  gboolean ok = FALSE;
  hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, KEY_STRLEN);
  H5Tset_strpad(str, H5T_STR_NULLTERM);
  hid_t t = H5Tcreate(H5T_COMPOUND, rec);
  for (size_t k = 0; k < nk; k++) H5Tinsert(t, ((Key *)keys->pdata[k])->name, k * KEY_STRLEN, str);
  H5Tinsert(t, "point", off_point, H5T_NATIVE_UINT32);
  H5Tinsert(t, "status", off_status, H5T_NATIVE_UINT32);
  H5Tinsert(t, "exit", off_exit, H5T_NATIVE_INT32);
  for (size_t f = 0; f < N_FIELDS; f++) H5Tinsert(t, fields[f].name, off_num + 8 * f, H5T_NATIVE_DOUBLE);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* failures are reported by us, once */
  hid_t file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file >= 0) {
    hsize_t dims[1] = {rows};
    hid_t sp = H5Screate_simple(1, dims, NULL);
    hid_t ds = H5Dcreate2(file, "/sweep", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (ds >= 0) {
      ok = !rows || H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0;
      /* status codes, for readers */
      hid_t as = H5Screate(H5S_SCALAR);
      hid_t at_t = H5Tcopy(H5T_C_S1);
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
  if (ok && g_rename(tmp, path) != 0) ok = FALSE;
  if (!ok) {
    fprintf(stderr, "fabsim sweep: cannot write %s\n", path);
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

static char *resolve_self(const char *self) {
  if (strchr(self, '/')) return g_strdup(self);
  char *p = g_find_program_in_path(self);
  return p ? p : g_strdup(self);
}

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

/* ---- the command ------------------------------------------------------------- */

static void json_str(GString *s, const char *v) {
  g_string_append_c(s, '"');
  for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
    if (*p == '"' || *p == '\\') g_string_append_printf(s, "\\%c", *p);
    else if (*p < 0x20) g_string_append_printf(s, "\\u%04x", *p);
    else g_string_append_c(s, (char)*p);
  }
  g_string_append_c(s, '"');
}

int fab_cmd_sweep(int argc, char **argv, const char *self) {
  const char *scenario = NULL, *out_dir = NULL;
  gboolean json = FALSE;
  long jobs = 0;
  GPtrArray *keys = g_ptr_array_new();         /* Key* */
  GPtrArray *fixed = g_ptr_array_new_with_free_func(g_free); /* "KEY=V" */
  GPtrArray *all_names = g_ptr_array_new_with_free_func(g_free);
  Point *pts = NULL;
  size_t n = 0;
  char *exe = NULL, *header = NULL, *csv_path = NULL, *h5_path = NULL, *dir = NULL;
  int rc = EXIT_USAGE;

  for (int i = 0; i < argc; i++) {
    const char *s = argv[i], *val = NULL;
    if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
      fputs(usage_sweep, stdout);
      rc = 0;
      goto out;
    } else if (!strcmp(s, "--set") || !strncmp(s, "--set=", 6)) {
      if (s[5] == '=') val = s + 6;
      else if (i + 1 < argc) val = argv[++i];
      else { rc = usage_error("--set needs KEY=V1,V2,..."); goto out; }
      const char *eq = strchr(val, '=');
      if (!eq || eq == val) { rc = usage_error("--set %s: expected KEY=V1,V2,...", val); goto out; }
      char *name = g_strstrip(g_strndup(val, (gsize)(eq - val)));
      for (guint k = 0; k < all_names->len; k++)
        if (!strcmp(all_names->pdata[k], name)) {
          rc = usage_error("--set %s: key '%s' is given twice", val, name);
          g_free(name);
          goto out;
        }
      g_ptr_array_add(all_names, name);
      GPtrArray *vals = split_top(eq + 1);
      for (guint v = 0; v < vals->len; v++) {
        const char *one = vals->pdata[v];
        if ((!*one && vals->len > 1) || (vals->len > 1 && strlen(one) >= KEY_STRLEN)) {
          rc = usage_error(*one ? "--set %s: a swept value longer than %d characters" : "--set %s: empty value in "
                           "the list", val, KEY_STRLEN - 1);
          g_ptr_array_free(vals, TRUE);
          goto out;
        }
      }
      if (vals->len == 1) {
        g_ptr_array_add(fixed, g_strdup(val));
        g_ptr_array_free(vals, TRUE);
      } else {
        Key *k = g_new0(Key, 1);
        k->name = g_strdup(name);
        k->values = vals;
        if (strlen(k->name) >= KEY_STRLEN) {
          g_ptr_array_add(keys, k);
          rc = usage_error("--set %s: key longer than %d characters", val, KEY_STRLEN - 1);
          goto out;
        }
        g_ptr_array_add(keys, k);
      }
    } else if (!strcmp(s, "--seed") || !strncmp(s, "--seed=", 7)) {
      if (s[6] == '=') val = s + 7;
      else if (i + 1 < argc) val = argv[++i];
      else { rc = usage_error("--seed needs a number"); goto out; }
      for (guint k = 0; k < all_names->len; k++)
        if (!strcmp(all_names->pdata[k], "seed")) {
          rc = usage_error("--seed: the seed is given twice");
          goto out;
        }
      g_ptr_array_add(fixed, g_strdup_printf("seed=%s", val));
      g_ptr_array_add(all_names, g_strdup("seed"));
    } else if (!strcmp(s, "--out") || !strncmp(s, "--out=", 6)) {
      if (s[5] == '=') val = s + 6;
      else if (i + 1 < argc) val = argv[++i];
      if (!val || !*val) { rc = usage_error("--out needs a directory"); goto out; }
      out_dir = val;
    } else if (!strcmp(s, "--jobs") || !strncmp(s, "--jobs=", 7) || !strcmp(s, "-j")) {
      if (s[2] && s[6] == '=') val = s + 7;
      else if (i + 1 < argc) val = argv[++i];
      char *end = NULL;
      errno = 0;
      jobs = val ? strtol(val, &end, 10) : 0;
      if (!val || !*val || *end || errno || jobs < 1 || jobs > 4096) {
        rc = usage_error("--jobs %s: expected a positive integer", val ? val : "");
        goto out;
      }
    } else if (!strcmp(s, "--json")) {
      json = TRUE;
    } else if (s[0] == '-' && s[1]) {
      rc = usage_error("unknown option '%s'", s);
      goto out;
    } else if (!scenario) {
      scenario = s;
    } else {
      rc = usage_error("more than one scenario given ('%s' and '%s')", scenario, s);
      goto out;
    }
  }
  if (!scenario) { rc = usage_error("sweep needs a SCENARIO file"); goto out; }
  if (!keys->len) { rc = usage_error("nothing to sweep: give a --set KEY=V1,V2,... with several values"); goto out; }
  if (!g_file_test(scenario, G_FILE_TEST_IS_REGULAR)) {
    fprintf(stderr, "fabsim sweep: %s: no such scenario file\n", scenario);
    goto out;
  }
  if (!jobs) jobs = (long)g_get_num_processors();
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
      (rlim_t)jobs > (nofile.rlim_cur - 16) / 2)
    jobs = (long)((nofile.rlim_cur - 16) / 2); /* two pipes per child */

  /* the grid, first key slowest */
  n = 1;
  for (guint k = 0; k < keys->len; k++) {
    n *= ((Key *)keys->pdata[k])->values->len;
    if (n > 1000000) { rc = usage_error("the grid has more than a million points"); goto out; }
  }
  pts = g_new0(Point, n);
  for (size_t i = 0; i < n; i++) {
    pts[i].values = g_new0(char *, keys->len);
    size_t r = i;
    for (guint k = keys->len; k-- > 0;) {
      Key *key = keys->pdata[k];
      pts[i].values[k] = key->values->pdata[r % key->values->len];
      r /= key->values->len;
    }
  }

  /* check every point as `fabsim validate` would, before anything runs */
  char *name = NULL;
  for (size_t i = 0; i < n; i++) {
    GPtrArray *sets = g_ptr_array_new_with_free_func(g_free);
    for (guint f = 0; f < fixed->len; f++) g_ptr_array_add(sets, g_strdup(fixed->pdata[f]));
    for (guint k = 0; k < keys->len; k++)
      g_ptr_array_add(sets, g_strdup_printf("%s=%s", ((Key *)keys->pdata[k])->name, pts[i].values[k]));
    g_ptr_array_add(sets, NULL);
    GError *err = NULL;
    FabScenario *sc = fab_scenario_load(scenario, (const char *const *)sets->pdata, &err);
    g_ptr_array_free(sets, TRUE);
    if (!sc) {
      fprintf(stderr, "fabsim sweep: point %zu:", i);
      for (guint k = 0; k < keys->len; k++)
        fprintf(stderr, " %s=%s", ((Key *)keys->pdata[k])->name, pts[i].values[k]);
      fprintf(stderr, ": %s\n", err->message);
      g_error_free(err);
      g_free(name);
      goto out;
    }
    if (!name) name = g_strdup(sc->name ? sc->name : "scenario");
    fab_scenario_free(sc);
  }
  if (out_dir) {
    dir = g_strdup(out_dir);
  } else {
    for (char *p = name; *p; p++)
      if (*p == '/' || *p == ' ' || (unsigned char)*p < 0x20) *p = '_';
    dir = g_strdup_printf("sweep-%s", name);
  }
  g_free(name);
  if (g_mkdir_with_parents(dir, 0777) != 0) {
    fprintf(stderr, "fabsim sweep: cannot create %s: %s\n", dir, g_strerror(errno));
    goto out;
  }
  csv_path = g_build_filename(dir, "sweep.csv", NULL);
  h5_path = g_build_filename(dir, "sweep.h5", NULL);
  header = csv_header(keys);
  { /* what this sweep is: a resume must be of the same scenario, settings and values */
    GString *sig = g_string_new(NULL);
    char *abs = g_canonicalize_filename(scenario, NULL), *text = NULL;
    gsize len = 0;
    g_file_get_contents(scenario, &text, &len, NULL);
    char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)(text ? text : ""), text ? len : 0);
    g_string_append_printf(sig, "scenario %s\nsha256 %s\n", abs, sum);
    for (guint f = 0; f < fixed->len; f++) g_string_append_printf(sig, "set %s\n", (char *)fixed->pdata[f]);
    for (guint k = 0; k < keys->len; k++) {
      Key *key = keys->pdata[k];
      g_string_append_printf(sig, "sweep %s", key->name);
      for (guint v = 0; v < key->values->len; v++) g_string_append_printf(sig, "%s%s", v ? "," : "=", (char *)key->values->pdata[v]);
      g_string_append_c(sig, '\n');
    }
    g_free(abs);
    g_free(text);
    g_free(sum);
    char *sig_path = g_build_filename(dir, "sweep.key", NULL), *old = NULL;
    gboolean have_csv = g_file_test(csv_path, G_FILE_TEST_EXISTS);
    gboolean same = g_file_get_contents(sig_path, &old, NULL, NULL) && !strcmp(old, sig->str);
    GError *e = NULL;
    if (have_csv && !same) {
      fprintf(stderr, "fabsim sweep: %s holds another sweep (a different scenario, settings or values; see %s): "
              "give another --out\n", dir, sig_path);
    } else if (!g_file_set_contents(sig_path, sig->str, -1, &e)) {
      fprintf(stderr, "fabsim sweep: cannot write in %s: %s\n", dir, e->message);
      g_error_free(e);
    } else {
      same = TRUE;
      have_csv = FALSE;
    }
    g_free(old);
    g_free(sig_path);
    g_string_free(sig, TRUE);
    if (!same || have_csv) goto out; /* rc is still 2 */
  }
  size_t n_done = 0;
  if (!read_previous(csv_path, header, keys, pts, n, &n_done)) goto out;
  if (n_done) fprintf(stderr, "fabsim sweep: %zu of %zu points already done\n", n_done, n);

  /* run what is left, up to `jobs` at once */
  exe = resolve_self(self);
  gboolean tty = isatty(STDERR_FILENO);
  size_t next = 0, ran = 0, finished = n_done, n_failed = 0;
  size_t todo = n - n_done;
  Child *run = g_new0(Child, (size_t)jobs);
  size_t n_run = 0;
  double t0 = g_get_monotonic_time() / 1e6;
  gboolean spawn_error = FALSE;
  if (tty && todo) progress(finished, n, 0, todo, t0);
  for (;;) {
    while (!spawn_error && n_run < (size_t)jobs && next < n) {
      size_t i = next++;
      if (pts[i].done) continue;
      GPtrArray *av = g_ptr_array_new_with_free_func(g_free);
      g_ptr_array_add(av, g_strdup(exe));
      g_ptr_array_add(av, g_strdup("run"));
      g_ptr_array_add(av, g_strdup(scenario));
      g_ptr_array_add(av, g_strdup("--json"));
      g_ptr_array_add(av, g_strdup("--no-progress"));
      for (guint f = 0; f < fixed->len; f++) {
        g_ptr_array_add(av, g_strdup("--set"));
        g_ptr_array_add(av, g_strdup(fixed->pdata[f]));
      }
      for (guint k = 0; k < keys->len; k++) {
        g_ptr_array_add(av, g_strdup("--set"));
        g_ptr_array_add(av, g_strdup_printf("%s=%s", ((Key *)keys->pdata[k])->name, pts[i].values[k]));
      }
      char *base = g_strdup_printf("point-%04zu.h5", i);
      g_ptr_array_add(av, g_strdup("--hdf5"));
      g_ptr_array_add(av, g_build_filename(dir, base, NULL));
      g_free(base);
      g_ptr_array_add(av, NULL);
      GError *err = NULL;
      Child *c = &run[n_run];
      memset(c, 0, sizeof *c);
      c->point = i;
      if (!child_start(c, (char **)av->pdata, &err)) {
        fprintf(stderr, "%sfabsim sweep: cannot run %s: %s\n", tty ? "\n" : "", exe, err->message);
        g_error_free(err);
        spawn_error = TRUE;
      } else {
        n_run++;
      }
      g_ptr_array_free(av, TRUE);
    }
    if (!n_run) break;

    struct pollfd pfd[2 * 4096];
    int np = 0;
    for (size_t c = 0; c < n_run; c++)
      for (int j = 0; j < 2; j++)
        if (run[c].fd[j] >= 0) pfd[np++] = (struct pollfd){.fd = run[c].fd[j], .events = POLLIN};
    if (np && poll(pfd, (nfds_t)np, -1) < 0 && errno != EINTR) break;
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
    /* reap those whose pipes are both closed */
    for (size_t c = 0; c < n_run;) {
      Child *ch = &run[c];
      if (ch->fd[0] >= 0 || ch->fd[1] >= 0) { c++; continue; }
      int status = 0;
      while (waitpid(ch->pid, &status, 0) < 0 && errno == EINTR) {}
      g_spawn_close_pid(ch->pid);
      Point *pt = &pts[ch->point];
      pt->exit = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      pt->ok = pt->exit == 0;
      pt->done = TRUE;
      point_parse_json(pt, ch->buf[0]->str);
      if (!pt->ok) {
        n_failed++;
        fprintf(stderr, "%sfabsim sweep: point %zu failed (exit %d)", tty ? "\n" : "", ch->point, pt->exit);
        for (guint k = 0; k < keys->len; k++)
          fprintf(stderr, " %s=%s", ((Key *)keys->pdata[k])->name, pt->values[k]);
        fputs(ch->buf[1]->len ? ":\n" : "\n", stderr);
        fputs(ch->buf[1]->str, stderr);
        if (ch->buf[1]->len && ch->buf[1]->str[ch->buf[1]->len - 1] != '\n') fputc('\n', stderr);
      }
      g_string_free(ch->buf[0], TRUE);
      g_string_free(ch->buf[1], TRUE);
      ran++;
      finished++;
      GError *err = NULL;
      if (!write_csv(csv_path, header, keys, pts, n, &err)) {
        fprintf(stderr, "fabsim sweep: %s\n", err->message);
        g_error_free(err);
      }
      if (tty) progress(finished, n, ran, todo - ran, t0);
      run[c] = run[--n_run];
    }
  }
  g_free(run);
  if (tty && todo) fputc('\n', stderr);

  GError *err = NULL;
  gboolean wrote = write_csv(csv_path, header, keys, pts, n, &err);
  if (!wrote) {
    fprintf(stderr, "fabsim sweep: %s\n", err->message);
    g_error_free(err);
  }
  wrote = write_h5(h5_path, keys, pts, n) && wrote;
  if (spawn_error) rc = EXIT_FAILED;
  else if (!wrote) rc = EXIT_FAILED;
  else rc = n_failed ? EXIT_FAILED : 0;

  if (json) {
    GString *s = g_string_new("{\"out\": ");
    json_str(s, dir);
    g_string_append_printf(s, ", \"points\": %zu, \"failed\": %zu, \"rows\": [", n, n_failed);
    gboolean first = TRUE;
    for (size_t i = 0; i < n; i++) {
      if (!pts[i].done) continue;
      g_string_append(s, first ? "{" : ", {");
      first = FALSE;
      for (guint k = 0; k < keys->len; k++) {
        json_str(s, ((Key *)keys->pdata[k])->name);
        g_string_append(s, ": ");
        json_str(s, pts[i].values[k]);
        g_string_append(s, ", ");
      }
      g_string_append_printf(s, "\"point\": %zu, \"status\": \"%s\", \"exit\": %d", i, pts[i].ok ? "ok" : "failed",
                             pts[i].exit);
      for (size_t f = 0; f < N_FIELDS; f++)
        g_string_append_printf(s, ", \"%s\": %s", fields[f].name,
                               pts[i].num[f] && *pts[i].num[f] ? pts[i].num[f] : "null");
      g_string_append_c(s, '}');
    }
    g_string_append(s, "]}\n");
    fputs(s->str, stdout);
    g_string_free(s, TRUE);
  } else {
    size_t n_ok = 0;
    for (size_t i = 0; i < n; i++) n_ok += pts[i].done && pts[i].ok;
    printf("fabsim sweep: %zu points (%zu ok, %zu failed, %zu run now): %s, %s\n", n, n_ok, n_failed, ran, csv_path,
           h5_path);
  }

out:
  if (pts) {
    for (size_t i = 0; i < n; i++) {
      g_free(pts[i].values);
      for (size_t f = 0; f < N_FIELDS; f++) g_free(pts[i].num[f]);
    }
    g_free(pts);
  }
  for (guint k = 0; k < keys->len; k++) {
    Key *key = keys->pdata[k];
    g_free(key->name);
    g_ptr_array_free(key->values, TRUE);
    g_free(key);
  }
  g_ptr_array_free(keys, TRUE);
  g_ptr_array_free(fixed, TRUE);
  g_ptr_array_free(all_names, TRUE);
  g_free(exe);
  g_free(header);
  g_free(csv_path);
  g_free(h5_path);
  g_free(dir);
  return rc;
}

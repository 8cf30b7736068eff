/* fabsim plot RESULT.h5 [--out DIR]: gnuplot pictures of a run's HDF5 file.
**
**   queues.png/.svg  egress queue depth over time of the 8 busiest switch ports
**   links.png/.svg   utilisation heatmap: the 32 busiest links x time
**   busbw.png/.svg   nccl-tests runs: bus bandwidth against message size, a
**                    line per op (the /collectives rows tagged nccl-tests)
**   timeline.png/.svg per-rank Gantt chart from /timeline: compute (forward,
**                    backward, optimizer) and communication (by op and tag)
**   sweep-METRIC.*   for a sweep's sweep.h5: sim time, p99 FCT, drops and
**                    deepest queue against the first swept key, one line
**                    per value of the second
**
** The data gnuplot reads is written next to the pictures (.dat, .gp), so a
** user can restyle them. The queue pictures need the queue time series
** (sampled every output.sample_interval); each picture is skipped when its
** data is absent or empty. Without gnuplot on the PATH it says so and exits
** 2. See cmds.h. */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <hdf5.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "cmds.h"
#include "tools/libfabsim/h5table.h"
#include "tools/libfabsim/nccltests.h"
#include "tools/libfabsim/results.h"

enum { PLOT_OUT };

static const FabOpt plot_opts[] = {
  {"--out", 0, FAB_OPT_VALUE, PLOT_OUT, "DIR", "a directory", 0, 0, "where to draw (default: RESULT-plots)"},
  {NULL},
};

const FabCmd fab_plot_cmd = {
  "plot", "draw a run's or a sweep's results with gnuplot", "RESULT.h5", 1, 1, "plot needs a RESULT.h5 file", "file",
  "Draw a run's HDF5 results with gnuplot, as PNG and SVG in DIR (default:\n"
  "RESULT-plots next to the file): queue depth over time of the busiest switch\n"
  "ports (queues.*), a link utilisation heatmap (links.*), for nccl-tests runs\n"
  "the bus bandwidth against message size (busbw.*), and for collective and\n"
  "training runs a per-rank timeline of compute and communication (timeline.*).\n"
  "For a sweep's sweep.h5: metrics against the swept values (sweep-*.*).",
  plot_opts, NULL,
};

typedef struct Series {
  hsize_t ns, np, nl;          /* samples, sampled ports, links */
  uint64_t *t;                 /* ps, ns */
  char (*port)[FAB_FIELD_NAME_LEN];  /* np */
  uint32_t *depth;             /* ns x np */
  char (*from)[FAB_FIELD_NAME_LEN];  /* nl */
  uint64_t *bps;               /* nl */
  uint64_t *link_bytes;        /* ns x nl, cumulative; NULL if absent */
} Series;

static void series_free(Series *s) {
  g_free(s->t);
  g_free(s->port);
  g_free(s->depth);
  g_free(s->from);
  g_free(s->bps);
  g_free(s->link_bytes);
}

/* Read a whole dataset of `n` elements of native type `mt`; FALSE if absent or wrong size. */
static gboolean read_all(hid_t f, const char *name, hid_t mt, hsize_t want, void *buf) {
  if (H5Lexists(f, name, H5P_DEFAULT) <= 0) return FALSE;
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
  if (d < 0) return FALSE;
  hid_t sp = H5Dget_space(d);
  hssize_t n = H5Sget_simple_extent_npoints(sp);
  gboolean ok = n == (hssize_t)want && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0;
  H5Sclose(sp);
  H5Dclose(d);
  return ok;
}

static hssize_t count(hid_t f, const char *name) {
  if (H5Lexists(f, name, H5P_DEFAULT) <= 0) return -1;
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
  if (d < 0) return -1;
  hid_t sp = H5Dget_space(d);
  hssize_t n = H5Sget_simple_extent_npoints(sp);
  H5Sclose(sp);
  H5Dclose(d);
  return n;
}

static gboolean load(const char *path, Series *s, GString *why) {
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) {
    g_string_printf(why, "%s: not an HDF5 file fabsim can read", path);
    return FALSE;
  }
  gboolean ok = FALSE;
  hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, FAB_FIELD_NAME_LEN);
  FabH5Layout ll;
  gboolean have_layout = fab_h5_layout(&ll, &fab_link_table);
  hssize_t ns = count(f, "/queues/time_ps"), np = count(f, "/queues/port"), nl = count(f, "/links");
  if (ns <= 0 || np <= 0 || nl <= 0) {
    g_string_printf(why, "%s has no queue time series: run the scenario with output.hdf5 (or --hdf5) to sample "
                    "queues every output.sample_interval", path);
    goto out;
  }
  s->ns = (hsize_t)ns, s->np = (hsize_t)np, s->nl = (hsize_t)nl;
  s->t = g_new(uint64_t, s->ns);
  s->port = g_malloc0(s->np * FAB_FIELD_NAME_LEN);
  s->depth = g_new(uint32_t, s->ns * s->np);
  s->from = g_malloc0(s->nl * FAB_FIELD_NAME_LEN);
  s->bps = g_new(uint64_t, s->nl);
  size_t nrows = 0;
  gboolean bad = FALSE;
  GStringChunk *strs = g_string_chunk_new(256);
  FabLinkRec *rows = have_layout ? fab_h5_read_records(f, "/links", &ll, strs, &nrows, &bad) : NULL;
  ok = read_all(f, "/queues/time_ps", H5T_NATIVE_UINT64, s->ns, s->t) &&
       read_all(f, "/queues/port", str, s->np, s->port) &&
       read_all(f, "/queues/depth", H5T_NATIVE_UINT32, s->ns * s->np, s->depth) && nrows == s->nl;
  for (hsize_t i = 0; ok && i < s->nl; i++) {
    memcpy(s->from[i], rows[i].from, FAB_FIELD_NAME_LEN);
    s->bps[i] = rows[i].bps;
  }
  g_free(rows);
  g_string_chunk_free(strs);
  if (ok) {
    s->link_bytes = g_new(uint64_t, s->ns * s->nl);
    if (!read_all(f, "/queues/link_bytes", H5T_NATIVE_UINT64, s->ns * s->nl, s->link_bytes)) g_clear_pointer(&s->link_bytes, g_free);
  } else {
    g_string_printf(why, "%s: cannot read its /queues and /links datasets", path);
  }
out:
  if (have_layout) fab_h5_layout_free(&ll);
  H5Tclose(str);
  H5Fclose(f);
  return ok;
}

typedef struct Rank {
  hsize_t i;
  double key;
} Rank;

static int by_key_desc(const void *a, const void *b) {
  const Rank *x = a, *y = b;
  return x->key < y->key ? 1 : x->key > y->key ? -1 : (x->i > y->i) - (x->i < y->i);
}

void fab_plot_put_title(GString *gp, const char *name) {
  for (const char *c = name; *c; c++) {
    if (*c == '"' || *c == '\\') g_string_append_c(gp, '\\');
    if (*c == '_') g_string_append(gp, "\\\\");
    g_string_append_c(gp, *c);
  }
}

/* Open DIR/NAME for writing gnuplot's data; *path gets its name (transfer
** full). NULL with `why` set when it cannot be written. */
static FILE *open_dat(const char *dir, const char *name, char **path, GString *why) {
  *path = g_build_filename(dir, name, NULL);
  FILE *out = fopen(*path, "w");
  if (!out) {
    g_string_printf(why, "cannot write %s: %s", *path, g_strerror(errno));
    g_clear_pointer(path, g_free);
  }
  return out;
}

/* queues.dat + the plot commands for it. Returns FALSE if nothing queued. */
static gboolean queues(const Series *s, const char *dir, GString *gp, GString *why) {
  Rank *r = g_new(Rank, s->np);
  for (hsize_t p = 0; p < s->np; p++) {
    uint32_t m = 0;
    for (hsize_t k = 0; k < s->ns; k++) m = MAX(m, s->depth[k * s->np + p]);
    r[p] = (Rank){p, m};
  }
  qsort(r, s->np, sizeof *r, by_key_desc);
  hsize_t top = MIN(s->np, 8);
  while (top && r[top - 1].key == 0) top--;
  if (!top) {
    g_free(r);
    return FALSE;
  }
  char *path = NULL;
  FILE *out = open_dat(dir, "queues.dat", &path, why);
  if (!out) {
    g_free(r);
    return FALSE;
  }
  fprintf(out, "# time_us");
  for (hsize_t j = 0; j < top; j++) fprintf(out, " %s_KiB", s->port[r[j].i]);
  fprintf(out, "\n");
  for (hsize_t k = 0; k < s->ns; k++) {
    fprintf(out, "%.6f", (double)s->t[k] / 1e6);
    for (hsize_t j = 0; j < top; j++) fprintf(out, " %.3f", s->depth[k * s->np + r[j].i] / 1024.0);
    fprintf(out, "\n");
  }
  fclose(out);
  g_string_append(gp, "set title \"Egress queue depth, busiest switch ports\"\n"
                      "set xlabel \"time (us)\"\nset ylabel \"queue (KiB)\"\nset key outside right top\n"
                      "set grid\nunset colorbox\nset autoscale\nset yrange [0:*]\nplot ");
  for (hsize_t j = 0; j < top; j++) {
    g_string_append_printf(gp, "%s\"%s\" using 1:%u with lines lw 2 title \"", j ? ", " : "", path, (unsigned)(j + 2));
    fab_plot_put_title(gp, s->port[r[j].i]);
    g_string_append(gp, "\"");
  }
  g_string_append(gp, "\n");
  g_free(path);
  g_free(r);
  return TRUE;
}

/* links.dat (time, row, utilisation %) + the heatmap commands. */
static gboolean links(const Series *s, const char *dir, GString *gp, GString *why) {
  if (!s->link_bytes || s->ns < 2) return FALSE;
  Rank *r = g_new(Rank, s->nl);
  for (hsize_t l = 0; l < s->nl; l++) r[l] = (Rank){l, (double)s->link_bytes[(s->ns - 1) * s->nl + l]};
  qsort(r, s->nl, sizeof *r, by_key_desc);
  hsize_t top = MIN(s->nl, 32);
  while (top && r[top - 1].key == 0) top--;
  if (!top) {
    g_free(r);
    return FALSE;
  }
  char *path = NULL;
  FILE *out = open_dat(dir, "links.dat", &path, why);
  if (!out) {
    g_free(r);
    return FALSE;
  }
  fprintf(out, "# time_us row utilisation_percent (row j = the j-th busiest link)\n");
  for (hsize_t k = 1; k < s->ns; k++) {
    double dt = (double)(s->t[k] - s->t[k - 1]) / 1e12;
    for (hsize_t j = 0; j < top; j++) {
      hsize_t l = r[j].i;
      double bytes = (double)(s->link_bytes[k * s->nl + l] - s->link_bytes[(k - 1) * s->nl + l]);
      double util = dt > 0 && s->bps[l] ? 100.0 * bytes * 8 / ((double)s->bps[l] * dt) : 0;
      fprintf(out, "%.6f %u %.2f\n", (double)(s->t[k - 1] + s->t[k]) / 2e6, (unsigned)j, MIN(util, 100.0));
    }
    fprintf(out, "\n");
  }
  fclose(out);
  g_string_append_printf(gp, "set title \"Link utilisation, %u busiest links\"\n"
                             "set xlabel \"time (us)\"\nset ylabel \"\"\nset cblabel \"utilisation (%%)\"\n"
                             "set cbrange [0:100]\nset yrange [-0.5:%u.5]\nset palette rgb 33,13,10\nset colorbox\n"
                             "unset grid\nset key off\nset ytics (",
                         (unsigned)top, (unsigned)top - 1);
  for (hsize_t j = 0; j < top; j++) {
    g_string_append_printf(gp, "%s\"", j ? ", " : "");
    fab_plot_put_title(gp, s->from[r[j].i]);
    g_string_append_printf(gp, "\" %u", (unsigned)j);
  }
  g_string_append_printf(gp, ") font \",8\"\nset autoscale xfix\nplot \"%s\" using 1:2:3 with image\nset ytics auto\n", path);
  g_free(path);
  g_free(r);
  return TRUE;
}

/* ---- sweeps --------------------------------------------------------------- */

typedef struct Sweep {
  hsize_t n;                /* points */
  int nkeys, nnum;
  char **key;               /* nkeys member names (swept keys) */
  char **num;               /* nnum member names (numeric fields) */
  char *val;                /* n x nkeys x 64: the swept values */
  uint32_t *status;         /* n: 0 ok, 1 the point's run failed (NULL if absent) */
  double *x;                /* n x nnum */
} Sweep;

static void sweep_free(Sweep *w) {
  g_strfreev(w->key);
  g_strfreev(w->num);
  g_free(w->val);
  g_free(w->x);
  g_free(w->status);
}

static gboolean load_sweep(const char *path, Sweep *w) {
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return FALSE;
  gboolean ok = FALSE;
  if (H5Lexists(f, "/sweep", H5P_DEFAULT) <= 0) goto out_f;
  hid_t d = H5Dopen2(f, "/sweep", H5P_DEFAULT), ft = H5Dget_type(d), sp = H5Dget_space(d);
  w->n = (hsize_t)H5Sget_simple_extent_npoints(sp);
  int nm = H5Tget_nmembers(ft);
  GPtrArray *keys = g_ptr_array_new(), *nums = g_ptr_array_new();
  for (int i = 0; i < nm; i++) {
    char *name = H5Tget_member_name(ft, (unsigned)i);
    H5T_class_t c = H5Tget_member_class(ft, (unsigned)i);
    if (c == H5T_STRING) g_ptr_array_add(keys, g_strdup(name));
    else if (c == H5T_FLOAT && strcmp(name, "wall_s")) g_ptr_array_add(nums, g_strdup(name));
    H5free_memory(name);
  }
  w->nkeys = (int)keys->len, w->nnum = (int)nums->len;
  g_ptr_array_add(keys, NULL);
  g_ptr_array_add(nums, NULL);
  w->key = (char **)g_ptr_array_free(keys, FALSE);
  w->num = (char **)g_ptr_array_free(nums, FALSE);
  if (w->nkeys >= 1 && w->n > 0) { /* read the strings, then the numbers, one member type at a time */
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, 64);
    w->val = g_malloc0(w->n * w->nkeys * 64);
    w->x = g_new0(double, w->n * w->nnum);
    ok = TRUE;
    for (int k = 0; ok && k < w->nkeys; k++) {
      hid_t mt = H5Tcreate(H5T_COMPOUND, 64);
      H5Tinsert(mt, w->key[k], 0, str);
      char *buf = g_malloc0(w->n * 64);
      ok = H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0;
      for (hsize_t i = 0; ok && i < w->n; i++) memcpy(w->val + (i * w->nkeys + k) * 64, buf + i * 64, 63);
      g_free(buf);
      H5Tclose(mt);
    }
    if (ok && H5Tget_member_index(ft, "status") >= 0) {
      hid_t mt = H5Tcreate(H5T_COMPOUND, 4);
      H5Tinsert(mt, "status", 0, H5T_NATIVE_UINT32);
      w->status = g_new(uint32_t, w->n);
      if (H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, w->status) < 0) g_clear_pointer(&w->status, g_free);
      H5Tclose(mt);
    }
    for (int m = 0; ok && m < w->nnum; m++) {
      hid_t mt = H5Tcreate(H5T_COMPOUND, 8);
      H5Tinsert(mt, w->num[m], 0, H5T_NATIVE_DOUBLE);
      double *buf = g_new(double, w->n);
      ok = H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0;
      for (hsize_t i = 0; ok && i < w->n; i++) w->x[i * w->nnum + m] = buf[i];
      g_free(buf);
      H5Tclose(mt);
    }
    H5Tclose(str);
  }
  H5Sclose(sp);
  H5Tclose(ft);
  H5Dclose(d);
out_f:
  H5Fclose(f);
  return ok;
}

/* Index of value v among the distinct values of key k, in order of appearance. */
static int distinct(const Sweep *w, int k, GPtrArray *seen, const char *v) {
  for (guint i = 0; i < seen->len; i++)
    if (!strcmp(g_ptr_array_index(seen, i), v)) return (int)i;
  g_ptr_array_add(seen, (gpointer)v);
  return (int)seen->len - 1;
}

/* sweep.dat: one block per value of the second key; x = index of the first key's value. */
static char *sweep_data(const Sweep *w, const char *dir, GPtrArray *xs, GPtrArray *ls, GString *why) {
  char *path = NULL;
  FILE *out = open_dat(dir, "sweep.dat", &path, why);
  if (!out) return NULL;
  for (hsize_t i = 0; i < w->n; i++) {
    distinct(w, 0, xs, w->val + i * w->nkeys * 64);
    if (w->nkeys > 1) distinct(w, 1, ls, w->val + (i * w->nkeys + 1) * 64);
  }
  if (!ls->len) g_ptr_array_add(ls, (gpointer)"");
  for (guint b = 0; b < ls->len; b++) {
    fprintf(out, "# %s = %s\n", w->nkeys > 1 ? w->key[1] : "", (char *)g_ptr_array_index(ls, b));
    for (hsize_t i = 0; i < w->n; i++) {
      if (w->status && w->status[i] != 0) continue; /* a failed point is not a measurement */
      if (w->nkeys > 1 && strcmp(w->val + (i * w->nkeys + 1) * 64, g_ptr_array_index(ls, b))) continue;
      fprintf(out, "%d", distinct(w, 0, xs, w->val + i * w->nkeys * 64));
      for (int m = 0; m < w->nnum; m++) fprintf(out, " %.9g", w->x[i * w->nnum + m]);
      fprintf(out, "\n");
    }
    fprintf(out, "\n\n");
  }
  fclose(out);
  return path;
}

static int num_index(const Sweep *w, const char *name) {
  for (int m = 0; m < w->nnum; m++)
    if (!strcmp(w->num[m], name)) return m;
  return -1;
}

static gboolean draw(const char *gp_bin, const char *dir, const char *name, const GString *body, GString *why);

static gboolean sweep_plots(const char *gp_bin, const Sweep *w, const char *dir, GString *why) {
  static const struct { const char *field, *label; double scale; } metrics[] = {
    {"sim_time_s", "simulated time (us)", 1e6}, {"fct_p99_s", "p99 flow completion time (us)", 1e6},
    {"drops", "packets dropped", 1}, {"max_queue_bytes", "deepest egress queue (KiB)", 1.0 / 1024},
    {"step_time_s", "training step time (ms)", 1e3}, {"exposed_comm_s", "exposed communication per step (ms)", 1e3},
  };
  GPtrArray *xs = g_ptr_array_new(), *ls = g_ptr_array_new();
  char *data = sweep_data(w, dir, xs, ls, why);
  gboolean ok = data != NULL;
  for (size_t i = 0; ok && i < G_N_ELEMENTS(metrics); i++) {
    int m = num_index(w, metrics[i].field);
    if (m < 0) continue;
    bool any = false; /* step columns are empty (NaN) unless the runs are training */
    for (hsize_t k = 0; k < w->n && !any; k++) any = !isnan(w->x[k * w->nnum + m]);
    if (!any) continue;
    GString *gp = g_string_new(NULL);
    g_string_append(gp, "set title \"");
    fab_plot_put_title(gp, metrics[i].label);
    g_string_append(gp, " against ");
    fab_plot_put_title(gp, w->key[0]);
    g_string_append_printf(gp, "\"\nset xlabel \"");
    fab_plot_put_title(gp, w->key[0]);
    g_string_append_printf(gp, "\"\nset ylabel \"%s\"\nset grid\nset key outside right top title \"", metrics[i].label);
    if (w->nkeys > 1) fab_plot_put_title(gp, w->key[1]);
    g_string_append(gp, "\"\nset yrange [0:*]\nset xrange [-0.5:");
    g_string_append_printf(gp, "%u.5]\nset xtics (", xs->len - 1);
    for (guint j = 0; j < xs->len; j++) {
      g_string_append_printf(gp, "%s\"", j ? ", " : "");
      fab_plot_put_title(gp, g_ptr_array_index(xs, j));
      g_string_append_printf(gp, "\" %u", j);
    }
    g_string_append(gp, ")\nplot ");
    for (guint b = 0; b < ls->len; b++) {
      g_string_append_printf(gp, "%s\"%s\" index %u using 1:($%d*%g) with linespoints lw 2 pt 7 title \"", b ? ", " : "",
                             data, b, m + 2, metrics[i].scale);
      fab_plot_put_title(gp, g_ptr_array_index(ls, b));
      g_string_append(gp, "\"");
    }
    g_string_append(gp, "\n");
    char *name = g_strdup_printf("sweep-%s", metrics[i].field);
    ok = draw(gp_bin, dir, name, gp, why);
    g_free(name);
    g_string_free(gp, TRUE);
  }
  g_free(data);
  g_ptr_array_free(xs, TRUE);
  g_ptr_array_free(ls, TRUE);
  return ok;
}

/* ---- collectives and the per-rank timeline -------------------------------- */

typedef struct Events {
  size_t ncolls, nspans;
  FabCollRec *colls;        /* /collectives, as the field table describes it */
  FabSpanRec *spans;        /* /timeline */
  GStringChunk *strs;       /* their strings */
} Events;

static void events_free(Events *ev) {
  g_free(ev->colls);
  g_free(ev->spans);
  if (ev->strs) g_string_chunk_free(ev->strs);
}

/* Table t's rows of the file, or NULL (a table of another layout is reported and skipped). */
static void *read_rows(hid_t f, const char *file, const FabFieldTable *t, GStringChunk *strs, size_t *n) {
  FabH5Layout l;
  *n = 0;
  if (!fab_h5_layout(&l, t)) return NULL;
  gboolean bad = FALSE;
  char *name = g_strdup_printf("/%s", t->name);
  void *rows = fab_h5_read_records(f, name, &l, strs, n, &bad);
  if (bad) fprintf(stderr, "fabsim: plot: %s: cannot read %s (not the layout this fabsim writes): skipped\n", file, name);
  g_free(name);
  fab_h5_layout_free(&l);
  return rows;
}

static void load_events(const char *path, Events *ev) {
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return;
  ev->strs = g_string_chunk_new(1024);
  ev->colls = read_rows(f, path, &fab_coll_table, ev->strs, &ev->ncolls);
  ev->spans = read_rows(f, path, &fab_span_table, ev->strs, &ev->nspans);
  H5Fclose(f);
}

/* The nccl-tests tables of the file's collectives (as `fabsim run` prints them). */
static GPtrArray *nccltests_tables(const Events *ev) {
  FabResults r = {.n_colls = ev->ncolls, .colls = ev->colls};
  return fab_nccltests_from_results(&r, NULL);
}

void fab_plot_size_xtics(GString *gp, uint64_t lo, uint64_t hi) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int e0 = 0, e1 = 0;
  while (e0 < 62 && (1ULL << (e0 + 1)) <= MAX(lo, 1)) e0++;
  while (e1 < 62 && (1ULL << e1) < hi) e1++;
  int step = MAX(1, (e1 - e0 + 13) / 14);
  g_string_append_printf(gp, "set logscale x 2\nset xrange [%.17g:%.17g]\nset xtics (", ldexp(1, e0) / 1.2,
                         ldexp(1, e1) * 1.2);
  for (int e = e0; e <= e1; e += step)
    g_string_append_printf(gp, "%s\"%llu %s\" %.17g", e > e0 ? ", " : "", 1ULL << (e % 10), unit[e / 10], ldexp(1, e));
  g_string_append(gp, ")\n");
}

/* busbw.dat (a block per op: size, busbw, time) + the plot: bus bandwidth
** against message size, log2 x axis. FALSE if no collective is tagged
** nccl-tests. */
static gboolean busbw(const Events *ev, const char *dir, GString *gp, GString *why) {
  GPtrArray *tables = nccltests_tables(ev);
  gboolean ok = FALSE;
  char *path = NULL;
  FILE *out = NULL;
  uint64_t lo = UINT64_MAX, hi = 0; /* the sizes drawn (not 0 B: no place on a log axis) */
  for (guint i = 0; i < tables->len; i++) {
    const FabNcclTestsTable *t = tables->pdata[i];
    for (guint k = 0; k < t->rows->len; k++) {
      const FabNcclTestsRow *r = &g_array_index(t->rows, FabNcclTestsRow, k);
      if (r->bytes && isfinite(r->busbw_GBps[0])) lo = MIN(lo, r->bytes), hi = MAX(hi, r->bytes);
    }
  }
  if (!hi || !(out = open_dat(dir, "busbw.dat", &path, why))) goto done;
  gboolean jobs = FALSE;
  for (guint i = 1; i < tables->len; i++)
    jobs |= ((FabNcclTestsTable *)tables->pdata[i])->job != ((FabNcclTestsTable *)tables->pdata[0])->job;
  g_string_append(gp, "set title \"nccl-tests bus bandwidth against message size (simulated)\"\n"
                      "set xlabel \"message size (B)\"\nset ylabel \"bus bandwidth (GB/s)\"\n"
                      "set grid xtics ytics\nset key top left box opaque\nset yrange [0:*]\n");
  fab_plot_size_xtics(gp, lo, hi);
  g_string_append(gp, "plot ");
  for (guint i = 0, b = 0; i < tables->len; i++) {
    const FabNcclTestsTable *t = tables->pdata[i];
    if (!t->rows->len) continue;
    fprintf(out, "# %s, %u ranks, job %u: size_B busbw_GBps time_us algorithm protocol\n", t->op, t->ranks, t->job);
    for (guint k = 0; k < t->rows->len; k++) {
      const FabNcclTestsRow *r = &g_array_index(t->rows, FabNcclTestsRow, k);
      if (!r->bytes || !isfinite(r->busbw_GBps[0])) continue;
      fprintf(out, "%" G_GUINT64_FORMAT " %.6g %.6g %s %s\n", r->bytes, r->busbw_GBps[0], r->time_us[0],
              r->algorithm ? r->algorithm : "-", r->protocol ? r->protocol : "-");
    }
    fprintf(out, "\n\n");
    g_string_append_printf(gp, "%s\"%s\" index %u using 1:2 with linespoints lw 2 pt 7 ps 0.8 title \"", b ? ", " : "",
                           path, b);
    char *title = jobs ? g_strdup_printf("%s, %u ranks (job %u)", t->op, t->ranks, t->job)
                       : g_strdup_printf("%s, %u ranks", t->op, t->ranks);
    fab_plot_put_title(gp, title);
    g_free(title);
    g_string_append(gp, "\"");
    b++;
  }
  g_string_append(gp, "\nunset logscale x\nset xtics autofreq\nset autoscale x\n");
  fclose(out);
  ok = TRUE;
done:
  g_free(path);
  g_ptr_array_free(tables, TRUE);
  return ok;
}

#define GANTT_MAX_RANKS 32

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* timeline.dat + the plot: a Gantt chart, a row per rank (the first 32),
** compute in its upper lane (forward / backward / optimizer / other), the
** collectives and pipeline transfers in its lower lane, coloured by what
** they are. FALSE if there are no spans. */
static gboolean timeline(const Events *ev, const char *dir, GString *gp, GString *why) {
  if (!ev->nspans) return FALSE;
  /* the ranks shown */
  uint32_t *rk = g_new(uint32_t, ev->nspans);
  for (size_t i = 0; i < ev->nspans; i++) rk[i] = ev->spans[i].rank;
  qsort(rk, ev->nspans, sizeof *rk, cmp_u32);
  uint32_t nranks = 0;
  for (size_t i = 0; i < ev->nspans; i++)
    if (!nranks || rk[nranks - 1] != rk[i]) rk[nranks++] = rk[i];
  uint32_t shown = MIN(nranks, GANTT_MAX_RANKS);
  GHashTable *row_of = g_hash_table_new(NULL, NULL);
  for (uint32_t i = 0; i < shown; i++) g_hash_table_insert(row_of, GUINT_TO_POINTER(rk[i] + 1), GUINT_TO_POINTER(i + 1));
  /* the categories: the compute phases, then what the communication is, in order of appearance */
  static const char *const phase[] = {"forward", "backward", "optimizer", "compute"};
  static const char *const phase_colour[] = {"#4C72B0", "#55A868", "#C44E52", "#8C8C8C"};
  static const char *const comm_colour[] = {"#DD8452", "#8172B3", "#937860", "#DA8BC3", "#CCB974", "#64B5CD",
                                            "#2F4F4F", "#B8860B"};
  GPtrArray *cats = g_ptr_array_new_with_free_func(g_free);
  for (int p = 0; p < 4; p++) g_ptr_array_add(cats, g_strdup(phase[p]));
  double t0 = INFINITY, t1 = -INFINITY;
  int *cat = g_new(int, ev->nspans);
  for (size_t i = 0; i < ev->nspans; i++) {
    const FabSpanRec *s = &ev->spans[i];
    cat[i] = -1;
    if (!g_hash_table_lookup(row_of, GUINT_TO_POINTER(s->rank + 1)) || !(s->end >= s->start)) continue;
    t0 = MIN(t0, fab_time_to_s(s->start)), t1 = MAX(t1, fab_time_to_s(s->end));
    char *label;
    if (s->kind == 0) {
      cat[i] = MIN(s->phase, 3);
      continue;
    } else if (s->kind == 2) {
      label = g_strdup("pipeline send/recv");
    } else if (s->coll >= 0 && (size_t)s->coll < ev->ncolls) {
      const FabCollRec *c = &ev->colls[s->coll];
      label = c->tag ? g_strdup_printf("%s (%s)", c->op, c->tag) : g_strdup(c->op);
    } else {
      label = g_strdup("collective");
    }
    guint k = 4;
    while (k < cats->len && strcmp(cats->pdata[k], label)) k++;
    if (k == cats->len) g_ptr_array_add(cats, label);
    else g_free(label);
    cat[i] = (int)k;
  }
  gboolean ok = FALSE;
  char *path = NULL;
  FILE *out = isfinite(t0) ? open_dat(dir, "timeline.dat", &path, why) : NULL;
  if (!out) goto done;
  gboolean ms = t1 - t0 >= 2e-3;
  double scale = ms ? 1e3 : 1e6;
  /* a block per category: x centre, y, x half-width, y half-height (boxxyerror) */
  /* gnuplot's `index` counts the blocks that have data: write only those */
  int *block = g_new(int, cats->len);
  for (guint k = 0; k < cats->len; k++) block[k] = -1;
  for (size_t i = 0; i < ev->nspans; i++)
    if (cat[i] >= 0) block[cat[i]] = 0;
  for (guint k = 0, b = 0; k < cats->len; k++) {
    if (block[k] < 0) continue;
    block[k] = (int)b++;
    fprintf(out, "# %s: time_%s row half_width half_height\n", (char *)cats->pdata[k], ms ? "ms" : "us");
    for (size_t i = 0; i < ev->nspans; i++) {
      if (cat[i] != (int)k) continue;
      const FabSpanRec *s = &ev->spans[i];
      unsigned row = GPOINTER_TO_UINT(g_hash_table_lookup(row_of, GUINT_TO_POINTER(s->rank + 1))) - 1;
      double y = row + (s->kind == 0 ? -0.2 : 0.2), a = fab_time_to_s(s->start), e = fab_time_to_s(s->end);
      fprintf(out, "%.9g %.2f %.9g 0.17\n", (a + e) / 2 * scale, y, (e - a) / 2 * scale);
    }
    fprintf(out, "\n\n");
  }
  fclose(out);
  g_string_append(gp, "set title \"Per-rank timeline: compute (upper lane of each rank), communication (lower lane)");
  if (shown < nranks) g_string_append_printf(gp, ", the first %u of %u ranks", shown, nranks);
  g_string_append(gp, "\"\n");
  g_string_append_printf(gp, "set xlabel \"time (%s)\"\nset ylabel \"\"\nset yrange [%u.6:-0.6]\nset ytics (",
                         ms ? "ms" : "us", shown - 1);
  for (uint32_t i = 0; i < shown; i++) g_string_append_printf(gp, "%s\"rank %u\" %u", i ? ", " : "", rk[i], i);
  g_string_append_printf(gp, ")%s\nset grid xtics\nset key outside right top\nset style fill solid 1.0 border lc rgb \"white\"\n"
                             "set xrange [%.9g:%.9g]\nplot ", shown > 16 ? " font \",8\"" : "", t0 * scale,
                         t1 * scale);
  for (guint k = 0, first = 1; k < cats->len; k++) {
    if (block[k] < 0) continue;
    const char *colour = k < 4 ? phase_colour[k] : comm_colour[(k - 4) % G_N_ELEMENTS(comm_colour)];
    g_string_append_printf(gp, "%s\"%s\" index %d using 1:2:3:4 with boxxyerror lc rgb \"%s\" title \"", first ? "" : ", ",
                           path, block[k], colour);
    fab_plot_put_title(gp, cats->pdata[k]);
    g_string_append(gp, "\"");
    first = 0;
  }
  g_string_append(gp, "\nset ytics autofreq\nset autoscale\nset grid\n");
  g_free(block);
  ok = TRUE;
done:
  g_free(path);
  g_free(cat);
  g_ptr_array_free(cats, TRUE);
  g_hash_table_destroy(row_of);
  g_free(rk);
  return ok;
}

/* Run a gnuplot script file. */
static gboolean gnuplot(const char *gnuplot_bin, const char *script, GString *why) {
  char *argv[] = {(char *)gnuplot_bin, (char *)script, NULL};
  char *err = NULL;
  int status = 0;
  GError *e = NULL;
  gboolean ok = g_spawn_sync(NULL, argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err, &status, &e) &&
                g_spawn_check_wait_status(status, NULL);
  if (!ok) g_string_printf(why, "gnuplot failed on %s: %s", script, e ? e->message : err ? err : "?");
  g_clear_error(&e);
  g_free(err);
  return ok;
}

gboolean fab_plot_draw(const char *gp_bin, const char *dir, const char *name, const char *body, GString *why) {
  GString *gp = g_string_new(NULL);
  char *png = g_strdup_printf("%s/%s.png", dir, name), *svg = g_strdup_printf("%s/%s.svg", dir, name);
  g_string_append_printf(gp, "set terminal pngcairo size 1200,700 font \"sans,11\"\nset output \"%s\"\n%s", png, body);
  g_string_append_printf(gp, "set output\nset terminal svg size 1200,700 font \"sans,11\"\nset output \"%s\"\n%s"
                         "set output\n", svg, body);
  char *script = g_strdup_printf("%s/%s.gp", dir, name);
  GError *e = NULL;
  gboolean ok = g_file_set_contents(script, gp->str, -1, &e) && gnuplot(gp_bin, script, why);
  if (e) {
    g_string_printf(why, "cannot write %s: %s", script, e->message);
    g_error_free(e);
  }
  g_free(script);
  g_free(png);
  g_free(svg);
  g_string_free(gp, TRUE);
  return ok;
}

/* Draw `body` as DIR/NAME.png and .svg and say so on stdout. */
static gboolean draw(const char *gp_bin, const char *dir, const char *name, const GString *body, GString *why) {
  if (!fab_plot_draw(gp_bin, dir, name, body->str, why)) return FALSE;
  printf("%s/%s.png\n%s/%s.svg\n", dir, name, dir, name);
  return TRUE;
}

/* Draw what `file` holds into `out` (NULL: FILE-plots); the exit status. */
static int plot(const char *file, const char *out) {
  char *gp_bin = g_find_program_in_path("gnuplot");
  if (!gp_bin) {
    fprintf(stderr, "fabsim: plot needs gnuplot, which is not on the PATH (Debian: apt-get install gnuplot-nox; "
                    "tools/setup installs it)\n");
    return 2;
  }
  GString *why = g_string_new(NULL);
  Series s = {0};
  int rc = 2;
  if (!g_file_test(file, G_FILE_TEST_IS_REGULAR)) {
    g_string_printf(why, "%s: %s", file, !g_file_test(file, G_FILE_TEST_EXISTS) ? "no such file"
                                         : g_file_test(file, G_FILE_TEST_IS_DIR) ? "a directory, not an HDF5 file"
                                                                                 : "not a regular file");
    goto done;
  }
  Sweep w = {0};
  Events ev = {0};
  gboolean is_sweep = load_sweep(file, &w), have_series = FALSE;
  if (!is_sweep) {
    have_series = load(file, &s, why);
    load_events(file, &ev);
    if (!have_series && !ev.ncolls && !ev.nspans) {
      sweep_free(&w);
      events_free(&ev);
      goto done;
    }
    if (!have_series) { /* collectives or a timeline to draw, but no queues */
      fprintf(stderr, "fabsim: plot: %s: no queue and link pictures\n", why->str);
      g_string_truncate(why, 0);
    }
  }
  char *dir = out ? g_strdup(out) : NULL;
  if (!dir) {
    char *stem = g_strdup(file);
    if (g_str_has_suffix(stem, ".h5")) stem[strlen(stem) - 3] = 0;
    dir = g_strdup_printf("%s-plots", stem);
    g_free(stem);
  }
  if (g_mkdir_with_parents(dir, 0755) != 0) {
    g_string_printf(why, "cannot create %s", dir);
    g_free(dir);
    sweep_free(&w);
    events_free(&ev);
    goto done;
  }
  rc = 0;
  if (is_sweep) {
    if (!sweep_plots(gp_bin, &w, dir, why)) rc = g_str_has_prefix(why->str, "cannot write") ? 2 : 1;
    sweep_free(&w);
    g_free(dir);
    goto done;
  }
  sweep_free(&w);
  GString *q = g_string_new(NULL), *l = g_string_new(NULL), *b = g_string_new(NULL), *t = g_string_new(NULL);
  if (have_series) {
    if (queues(&s, dir, q, why) && !draw(gp_bin, dir, "queues", q, why)) rc = 1;
    if (rc == 0 && why->len) rc = 2; /* could not write the data file */
    if (rc == 0 && links(&s, dir, l, why) && !draw(gp_bin, dir, "links", l, why)) rc = 1;
    if (rc == 0 && why->len) rc = 2;
    if (rc == 0 && !s.link_bytes)
      fprintf(stderr, "fabsim: plot: %s has no /queues/link_bytes (an older fabsim): no links heatmap\n", file);
  }
  if (rc == 0 && busbw(&ev, dir, b, why) && !draw(gp_bin, dir, "busbw", b, why)) rc = 1;
  if (rc == 0 && why->len) rc = 2;
  if (rc == 0 && timeline(&ev, dir, t, why) && !draw(gp_bin, dir, "timeline", t, why)) rc = 1;
  if (rc == 0 && why->len) rc = 2;
  g_string_free(q, TRUE);
  g_string_free(l, TRUE);
  g_string_free(b, TRUE);
  g_string_free(t, TRUE);
  events_free(&ev);
  g_free(dir);
done:
  if (rc) fprintf(stderr, "fabsim: plot: %s\n", why->str);
  series_free(&s);
  g_string_free(why, TRUE);
  g_free(gp_bin);
  return rc;
}

int fab_cmd_plot(int argc, char **argv) {
  FabArgs a;
  int rc = fab_args_parse(&fab_plot_cmd, argc, argv, &a);
  if (rc < 0) rc = plot(fab_args_pos(&a, 0), a.value[PLOT_OUT]);
  fab_args_clear(&a);
  return rc;
}

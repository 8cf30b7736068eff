/* fabsim plot on a sweep's sweep.h5: each metric against the first swept key, on a
** numeric axis (log over a decade), a line per combination of the other keys. See
** plot.c and plot_int.h. */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <hdf5.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "cmds.h"
#include "sim/config.h"
#include "tools/libfabsim/h5table.h"
#include "tools/libfabsim/nccltests.h"
#include "tools/libfabsim/results.h"
#include "tools/libfabsim/sampler.h"
#include "plot_int.h"

/* ---- sweeps --------------------------------------------------------------- */


void fab_plot__sweep_free(Sweep *w) {
  g_strfreev(w->key);
  g_strfreev(w->num);
  g_free(w->val);
  g_free(w->x);
  g_free(w->status);
}

gboolean fab_plot__load_sweep(const char *path, Sweep *w) {
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
    else if (c == H5T_FLOAT) g_ptr_array_add(nums, g_strdup(name));
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

/* ---- the swept values as numbers ------------------------------------------ */

/* How the first key's values are read: the first kind under which every one
** of them parses (the units README.md lists), or categories when none does. */
typedef enum { X_NUMBER, X_SIZE, X_RATE, X_TIME, X_RATIO, X_CATEGORY } XKind;

static const char *const xkind_unit[] = {"", "B", "bit/s", "s", "", ""};

static gboolean parse_as(XKind k, const char *v, double *out) {
  uint64_t u = 0;
  switch (k) {
  case X_NUMBER: return fab_parse_double(v, out, NULL);
  case X_SIZE: return fab_parse_size(v, &u, NULL) && ((*out = (double)u), TRUE);
  case X_RATE: return fab_parse_rate(v, &u, NULL) && ((*out = (double)u), TRUE);
  case X_TIME: return fab_parse_time(v, &u, NULL) && ((*out = (double)u / 1e12), TRUE);
  case X_RATIO: return fab_parse_ratio(v, out, NULL);
  default: return FALSE;
  }
}

gboolean fab_plot_values_numeric(const char *const *v, size_t n, double *out, const char **unit) {
  for (XKind k = X_NUMBER; k < X_CATEGORY; k++) {
    size_t j = 0;
    while (j < n && parse_as(k, v[j], &out[j])) j++;
    if (j == n) {
      if (unit) *unit = xkind_unit[k];
      return TRUE;
    }
  }
  return FALSE;
}

/* The x axis of a sweep: each point's position, and whether to draw it log. */
typedef struct XAxis {
  XKind kind;           /* X_NUMBER (any numeric kind: see unit) or X_CATEGORY */
  const char *unit;     /* of a numeric axis: "", "B", "bit/s", "s" */
  double *pos;          /* per point: the value in the kind's unit (bytes, bit/s, s), or its category index */
  GPtrArray *distinct;  /* the first key's values (borrowed), in order of appearance */
  double *dpos;         /* distinct->len: their positions */
  gboolean log;         /* every value > 0 and max / min >= 10: a log scale */
} XAxis;

static void xaxis_free(XAxis *x) {
  g_free(x->pos);
  g_free(x->dpos);
  if (x->distinct) g_ptr_array_free(x->distinct, TRUE);
}

static const char *val_of(const Sweep *w, hsize_t i, int k) { return w->val + (i * w->nkeys + k) * 64; }

/* The axis of key 0: numeric when its values all parse as one kind. Log
** when they span a decade or more (ratio max/min >= 10, all above 0): a
** buffer sweep of 1, 4, 16, 64 MiB is read on a log axis, 6, 8, 12, 16 MiB
** on a linear one. */
static void xaxis_make(const Sweep *w, XAxis *x) {
  x->distinct = g_ptr_array_new();
  for (hsize_t i = 0; i < w->n; i++) {
    const char *v = val_of(w, i, 0);
    guint j = 0;
    while (j < x->distinct->len && strcmp(x->distinct->pdata[j], v)) j++;
    if (j == x->distinct->len) g_ptr_array_add(x->distinct, (gpointer)v);
  }
  guint nd = x->distinct->len;
  x->dpos = g_new0(double, nd ? nd : 1);
  const char *unit = "";
  gboolean numeric = fab_plot_values_numeric((const char *const *)x->distinct->pdata, nd, x->dpos, &unit);
  x->kind = numeric ? X_NUMBER : X_CATEGORY;
  x->unit = unit;
  double lo = INFINITY, hi = -INFINITY;
  for (guint j = 0; j < nd; j++) {
    if (x->kind == X_CATEGORY) x->dpos[j] = j;
    lo = MIN(lo, x->dpos[j]), hi = MAX(hi, x->dpos[j]);
  }
  x->log = x->kind != X_CATEGORY && nd > 1 && lo > 0 && hi / lo >= 10;
  x->pos = g_new0(double, w->n ? w->n : 1);
  for (hsize_t i = 0; i < w->n; i++)
    for (guint j = 0; j < nd; j++)
      if (!strcmp(x->distinct->pdata[j], val_of(w, i, 0))) x->pos[i] = x->dpos[j];
}

/* The label of a line: the values of keys 1.. of point i ("" with one key). */
static char *line_label(const Sweep *w, hsize_t i) {
  GString *s = g_string_new(NULL);
  for (int k = 1; k < w->nkeys; k++)
    g_string_append_printf(s, "%s%s%s%s", k > 1 ? ", " : "", w->nkeys > 2 ? w->key[k] : "", w->nkeys > 2 ? "=" : "",
                           val_of(w, i, k));
  return g_string_free(s, FALSE);
}

typedef struct XPoint {
  double x;
  hsize_t i;
} XPoint;

static int by_x(const void *a, const void *b) {
  const XPoint *p = a, *q = b;
  return p->x < q->x ? -1 : p->x > q->x ? 1 : (p->i > q->i) - (p->i < q->i);
}

/* sweep.dat: a block per line (each combination of the other keys' values,
** in order of appearance), its points sorted by x: x (the first key's value
** in its unit, or its category index), then every metric column. `lines`
** gets the lines' labels (transfer full). */
static char *sweep_data(const Sweep *w, const XAxis *x, const char *dir, GPtrArray *lines, GString *why) {
  char *path = NULL;
  FILE *out = fab_plot__open_dat(dir, "sweep.dat", &path, why);
  if (!out) return NULL;
  char **lab = g_new0(char *, w->n + 1);
  for (hsize_t i = 0; i < w->n; i++) {
    lab[i] = line_label(w, i);
    guint j = 0;
    while (j < lines->len && strcmp(lines->pdata[j], lab[i])) j++;
    if (j == lines->len) g_ptr_array_add(lines, g_strdup(lab[i]));
  }
  fprintf(out, "# x = %s%s%s%s; then the columns:", w->key[0], *x->unit ? " (" : "", x->unit,
          *x->unit ? ")" : x->kind == X_CATEGORY ? " (category index)" : "");
  for (int m = 0; m < w->nnum; m++) fprintf(out, " %s", w->num[m]);
  fprintf(out, "\n");
  XPoint *pts = g_new(XPoint, w->n ? w->n : 1);
  for (guint b = 0; b < lines->len; b++) {
    fprintf(out, "# line %u: %s\n", b, (char *)lines->pdata[b]);
    hsize_t np = 0;
    for (hsize_t i = 0; i < w->n; i++)
      if ((!w->status || w->status[i] == 0) && !strcmp(lab[i], lines->pdata[b])) /* a failed point is no measurement */
        pts[np++] = (XPoint){x->pos[i], i};
    qsort(pts, np, sizeof *pts, by_x);
    for (hsize_t k = 0; k < np; k++) {
      fprintf(out, "%.9g", pts[k].x);
      for (int m = 0; m < w->nnum; m++) fprintf(out, " %.9g", w->x[pts[k].i * w->nnum + m]);
      fprintf(out, "\n");
    }
    fprintf(out, "\n\n");
  }
  g_free(pts);
  g_strfreev(lab);
  fclose(out);
  return path;
}

static int num_index(const Sweep *w, const char *name) {
  for (int m = 0; m < w->nnum; m++)
    if (!strcmp(w->num[m], name)) return m;
  return -1;
}

/* The metrics drawn when --metric is not given, in this order (those in the
** file and not 0 at every point), with their labels and display scales. */
static const struct Metric {
  const char *field, *label;
  double scale;
} known_metrics[] = {
  {"sim_time_s", "simulated time (us)", 1e6},
  {"fct_p99_s", "p99 flow completion time (us)", 1e6},
  {"drops", "packets dropped", 1},
  {"retransmits", "packets retransmitted", 1},
  {"pfc_pause_frames", "PFC PAUSE frames", 1},
  {"pfc_paused_s", "time paused by PFC, summed over ports (us)", 1e6},
  {"ecn_marks", "ECN marks", 1},
  {"cnps", "DCQCN CNPs", 1},
  {"max_queue_bytes", "deepest egress queue (KiB)", 1.0 / 1024},
  {"step_time_s", "training step time (ms)", 1e3},
  {"exposed_comm_s", "exposed communication per step (ms)", 1e3},
};

/* Label and scale of any column: a known one's, else from its unit suffix. */
static struct Metric metric_of(const Sweep *w, int m, char **label) {
  for (size_t i = 0; i < G_N_ELEMENTS(known_metrics); i++)
    if (!strcmp(known_metrics[i].field, w->num[m])) {
      *label = g_strdup(known_metrics[i].label);
      return known_metrics[i];
    }
  double hi = 0;
  for (hsize_t i = 0; i < w->n; i++)
    if (isfinite(w->x[i * w->nnum + m])) hi = MAX(hi, fabs(w->x[i * w->nnum + m]));
  struct Metric r = {w->num[m], NULL, 1};
  const char *unit = "";
  if (g_str_has_suffix(w->num[m], "_per_s")) unit = " (1/s)";
  else if (g_str_has_suffix(w->num[m], "_s"))
    r.scale = hi < 1e-3 ? 1e6 : hi < 1 ? 1e3 : 1, unit = hi < 1e-3 ? " (us)" : hi < 1 ? " (ms)" : " (s)";
  else if (g_str_has_suffix(w->num[m], "_bytes")) r.scale = 1.0 / 1024, unit = " (KiB)";
  *label = g_strdup_printf("%s%s", w->num[m], unit);
  return r;
}

/* Every point's value of metric m is 0 or null (a lossless sweep's drops). */
static gboolean all_zero(const Sweep *w, int m) {
  for (hsize_t i = 0; i < w->n; i++) {
    double v = w->x[i * w->nnum + m];
    if ((!w->status || w->status[i] == 0) && !isnan(v) && v != 0) return FALSE;
  }
  return TRUE;
}

/* The columns to draw: --metric's (each a column of the file; FALSE and a
** message naming the valid ones otherwise), or the known ones present and
** not 0 everywhere (saying which were left out). */
gboolean fab_plot__choose_metrics(const Sweep *w, const char *file, GPtrArray *asked, GArray *chosen, GString *why) {
  if (asked && asked->len) {
    for (guint a = 0; a < asked->len; a++) {
      int m = num_index(w, asked->pdata[a]);
      if (m < 0) {
        g_string_printf(why, "--metric %s: %s has no such column; the metrics are:", (char *)asked->pdata[a], file);
        for (int k = 0; k < w->nnum; k++) g_string_append_printf(why, "%s %s", k ? "," : "", w->num[k]);
        return FALSE;
      }
      gboolean any = FALSE; /* a value at some ok point: gnuplot cannot draw a column of nulls */
      for (hsize_t i = 0; i < w->n && !any; i++)
        any = (!w->status || w->status[i] == 0) && !isnan(w->x[i * w->nnum + m]);
      if (!any) {
        g_string_printf(why, "--metric %s: no point of %s has a value for it (null in every run%s)",
                        (char *)asked->pdata[a], file,
                        g_str_has_prefix(w->num[m], "step") || !strcmp(w->num[m], "compute_s") ||
                                !strcmp(w->num[m], "exposed_comm_s") || !strcmp(w->num[m], "bubble_fraction")
                            ? ": not a training run"
                            : "");
        return FALSE;
      }
      gboolean dup = FALSE;
      for (guint c = 0; c < chosen->len; c++) dup |= g_array_index(chosen, int, c) == m;
      if (!dup) g_array_append_val(chosen, m);
    }
    return TRUE;
  }
  GString *zero = g_string_new(NULL);
  for (size_t i = 0; i < G_N_ELEMENTS(known_metrics); i++) {
    int m = num_index(w, known_metrics[i].field);
    if (m < 0) continue;
    if (!all_zero(w, m)) g_array_append_val(chosen, m);
    else if (!g_str_has_prefix(known_metrics[i].field, "step") && strcmp(known_metrics[i].field, "exposed_comm_s"))
      g_string_append_printf(zero, "%s%s", zero->len ? ", " : "", known_metrics[i].field); /* step: not training */
  }
  if (zero->len)
    fprintf(stderr, "fabsim: plot: %s: 0 at every point, not drawn: %s (--metric draws them)\n", file, zero->str);
  g_string_free(zero, TRUE);
  return TRUE;
}


/* The x axis commands: label, range, scale, tics at the swept values. */
static void put_xaxis(GString *gp, const Sweep *w, const XAxis *x) {
  g_string_append(gp, "set xlabel \"");
  fab_plot_put_title(gp, w->key[0]);
  if (x->log) g_string_append(gp, " (log scale)");
  g_string_append(gp, "\"\n");
  double lo = INFINITY, hi = -INFINITY;
  for (guint j = 0; j < x->distinct->len; j++) lo = MIN(lo, x->dpos[j]), hi = MAX(hi, x->dpos[j]);
  if (x->log) g_string_append_printf(gp, "set logscale x\nset xrange [%.9g:%.9g]\n", lo / 1.15, hi * 1.15);
  else if (hi > lo)
    g_string_append_printf(gp, "unset logscale x\nset xrange [%.9g:%.9g]\n", lo - (hi - lo) * 0.05, hi + (hi - lo) * 0.05);
  else g_string_append_printf(gp, "unset logscale x\nset xrange [%.9g:%.9g]\n", lo - 0.5, hi + 0.5);
  if (x->distinct->len <= 16) { /* the values as given ("6MiB"), where they are */
    g_string_append_printf(gp, "set xtics %s(", x->distinct->len > 8 ? "rotate by -45 " : "");
    for (guint j = 0; j < x->distinct->len; j++) {
      g_string_append_printf(gp, "%s\"", j ? ", " : "");
      fab_plot_put_title(gp, x->distinct->pdata[j]);
      g_string_append_printf(gp, "\" %.9g", x->dpos[j]);
    }
    g_string_append(gp, ")\n");
  } else {
    g_string_append(gp, "set xtics autofreq\nset format x \"%.3s%c\"\n");
  }
}

/* The sweep's pictures, a metric (a column index of w) each. */
gboolean fab_plot__sweep_plots(const char *gp_bin, const Sweep *w, const GArray *chosen, const char *dir, GString *why) {
  XAxis x = {0};
  xaxis_make(w, &x);
  GPtrArray *lines = g_ptr_array_new_with_free_func(g_free);
  char *data = sweep_data(w, &x, dir, lines, why);
  gboolean ok = data != NULL;
  for (guint c = 0; ok && c < chosen->len; c++) {
    int m = g_array_index(chosen, int, c);
    char *label = NULL;
    struct Metric mt = metric_of(w, m, &label);
    GString *gp = g_string_new(NULL);
    g_string_append(gp, "set title \"");
    fab_plot_put_title(gp, label);
    g_string_append(gp, " against ");
    fab_plot_put_title(gp, w->key[0]);
    if (all_zero(w, m)) g_string_append(gp, " (0 at every point)");
    g_string_append(gp, "\"\n");
    put_xaxis(gp, w, &x);
    g_string_append(gp, "set ylabel \"");
    fab_plot_put_title(gp, label);
    g_string_append(gp, "\"\nset grid\nset key outside right top title \"");
    if (w->nkeys == 2) fab_plot_put_title(gp, w->key[1]);
    g_string_append(gp, "\"\nset yrange [0:*]\nplot ");
    for (guint b = 0; b < lines->len; b++) {
      char colour[8];
      fab_plot__series_colour(b, lines->len, colour);
      g_string_append_printf(gp, "%s\"%s\" index %u using 1:($%d*%g) with linespoints lw 2 pt 7 lc rgb \"%s\" title \"",
                             b ? ", " : "", data, b, m + 2, mt.scale, colour);
      fab_plot_put_title(gp, lines->pdata[b]);
      g_string_append(gp, "\"");
    }
    g_string_append(gp, "\n");
    char *name = g_strdup_printf("sweep-%s", w->num[m]);
    ok = fab_plot__draw(gp_bin, dir, name, gp, why);
    g_free(name);
    g_free(label);
    g_string_free(gp, TRUE);
  }
  g_free(data);
  g_ptr_array_free(lines, TRUE);
  xaxis_free(&x);
  return ok;
}

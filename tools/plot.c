/* fabsim plot RESULT.h5 [--out DIR]: gnuplot pictures of a run's HDF5 file.
**
**   queues.png/.svg  egress queue depth over time of the 8 busiest switch ports
**   links.png/.svg   utilisation heatmap: the 32 busiest links x time
**   sweep-METRIC.*   for a sweep's sweep.h5: sim time, p99 FCT, drops and
**                    deepest queue against the first swept key, one line
**                    per value of the second
**
** The data gnuplot reads is written next to the pictures (.dat, .gp), so a
** user can restyle them. Needs the queue time series, i.e. a run with
** output.hdf5 (sampled every output.sample_interval). Without gnuplot on the
** PATH it says so and exits 2. See cmds.h. */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#include "cmds.h"
#include "sim/results.h"

static const char usage[] =
  "usage: fabsim plot RESULT.h5 [--out DIR]\n"
  "\n"
  "Draw a run's HDF5 results with gnuplot, as PNG and SVG in DIR (default:\n"
  "RESULT-plots next to the file): queue depth over time of the busiest switch\n"
  "ports (queues.*) and a link utilisation heatmap (links.*). For a sweep's\n"
  "sweep.h5: metrics against the swept values (sweep-*.*).\n";

typedef struct Series {
  hsize_t ns, np, nl;          /* samples, sampled ports, links */
  uint64_t *t;                 /* ps, ns */
  char (*port)[FAB_NAME_LEN];  /* np */
  uint32_t *depth;             /* ns x np */
  char (*from)[FAB_NAME_LEN];  /* nl */
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
  H5Tset_size(str, FAB_NAME_LEN);
  hid_t lt = H5Tcreate(H5T_COMPOUND, FAB_NAME_LEN + 8);
  H5Tinsert(lt, "from", 0, str);
  H5Tinsert(lt, "bps", FAB_NAME_LEN, H5T_NATIVE_UINT64);
  hssize_t ns = count(f, "/queues/time_ps"), np = count(f, "/queues/port"), nl = count(f, "/links");
  if (ns <= 0 || np <= 0 || nl <= 0) {
    g_string_printf(why, "%s has no queue time series: run the scenario with output.hdf5 (or --hdf5) to sample "
                    "queues every output.sample_interval", path);
    goto out;
  }
  s->ns = (hsize_t)ns, s->np = (hsize_t)np, s->nl = (hsize_t)nl;
  s->t = g_new(uint64_t, s->ns);
  s->port = g_malloc0(s->np * FAB_NAME_LEN);
  s->depth = g_new(uint32_t, s->ns * s->np);
  s->from = g_malloc0(s->nl * FAB_NAME_LEN);
  s->bps = g_new(uint64_t, s->nl);
  struct { char from[FAB_NAME_LEN]; uint64_t bps; } *rows = g_malloc0(s->nl * (FAB_NAME_LEN + 8));
  ok = read_all(f, "/queues/time_ps", H5T_NATIVE_UINT64, s->ns, s->t) &&
       read_all(f, "/queues/port", str, s->np, s->port) &&
       read_all(f, "/queues/depth", H5T_NATIVE_UINT32, s->ns * s->np, s->depth) &&
       read_all(f, "/links", lt, s->nl, rows);
  for (hsize_t i = 0; ok && i < s->nl; i++) {
    memcpy(s->from[i], rows[i].from, FAB_NAME_LEN);
    s->from[i][FAB_NAME_LEN - 1] = 0;
    s->bps[i] = rows[i].bps;
  }
  g_free(rows);
  if (ok) {
    s->link_bytes = g_new(uint64_t, s->ns * s->nl);
    if (!read_all(f, "/queues/link_bytes", H5T_NATIVE_UINT64, s->ns * s->nl, s->link_bytes)) g_clear_pointer(&s->link_bytes, g_free);
  } else {
    g_string_printf(why, "%s: cannot read its /queues and /links datasets", path);
  }
out:
  H5Tclose(lt);
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

static void put_title(GString *gp, const char *name) {
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
    put_title(gp, s->port[r[j].i]);
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
    put_title(gp, s->from[r[j].i]);
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
  };
  GPtrArray *xs = g_ptr_array_new(), *ls = g_ptr_array_new();
  char *data = sweep_data(w, dir, xs, ls, why);
  gboolean ok = data != NULL;
  for (size_t i = 0; ok && i < G_N_ELEMENTS(metrics); i++) {
    int m = num_index(w, metrics[i].field);
    if (m < 0) continue;
    GString *gp = g_string_new(NULL);
    g_string_append(gp, "set title \"");
    put_title(gp, metrics[i].label);
    g_string_append(gp, " against ");
    put_title(gp, w->key[0]);
    g_string_append_printf(gp, "\"\nset xlabel \"");
    put_title(gp, w->key[0]);
    g_string_append_printf(gp, "\"\nset ylabel \"%s\"\nset grid\nset key outside right top title \"", metrics[i].label);
    if (w->nkeys > 1) put_title(gp, w->key[1]);
    g_string_append(gp, "\"\nset yrange [0:*]\nset xrange [-0.5:");
    g_string_append_printf(gp, "%u.5]\nset xtics (", xs->len - 1);
    for (guint j = 0; j < xs->len; j++) {
      g_string_append_printf(gp, "%s\"", j ? ", " : "");
      put_title(gp, g_ptr_array_index(xs, j));
      g_string_append_printf(gp, "\" %u", j);
    }
    g_string_append(gp, ")\nplot ");
    for (guint b = 0; b < ls->len; b++) {
      g_string_append_printf(gp, "%s\"%s\" index %u using 1:($%d*%g) with linespoints lw 2 pt 7 title \"", b ? ", " : "",
                             data, b, m + 2, metrics[i].scale);
      put_title(gp, g_ptr_array_index(ls, b));
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

/* Write NAME.gp drawing `body` as NAME.png and NAME.svg, and run it. */
static gboolean draw(const char *gp_bin, const char *dir, const char *name, const GString *body, GString *why) {
  GString *gp = g_string_new(NULL);
  char *png = g_strdup_printf("%s/%s.png", dir, name), *svg = g_strdup_printf("%s/%s.svg", dir, name);
  g_string_append_printf(gp, "set terminal pngcairo size 1200,700 font \"sans,11\"\nset output \"%s\"\n%s", png,
                         body->str);
  g_string_append_printf(gp, "set terminal svg size 1200,700 font \"sans,11\"\nset output \"%s\"\nreplot\n", svg);
  char *script = g_strdup_printf("%s/%s.gp", dir, name);
  GError *e = NULL;
  gboolean ok = g_file_set_contents(script, gp->str, -1, &e) && gnuplot(gp_bin, script, why);
  if (e) {
    g_string_printf(why, "cannot write %s: %s", script, e->message);
    g_error_free(e);
  }
  if (ok) printf("%s\n%s\n", png, svg);
  g_free(script);
  g_free(png);
  g_free(svg);
  g_string_free(gp, TRUE);
  return ok;
}

int fab_cmd_plot(int argc, char **argv) {
  const char *file = NULL, *out = NULL;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage, stdout);
      return 0;
    } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
      out = argv[++i];
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "fabsim: plot: unknown option '%s'\n\n%s", argv[i], usage);
      return 2;
    } else if (!file) {
      file = argv[i];
    } else {
      fprintf(stderr, "fabsim: plot: more than one file given\n\n%s", usage);
      return 2;
    }
  }
  if (!file) {
    fprintf(stderr, "fabsim: plot needs a RESULT.h5 file\n\n%s", usage);
    return 2;
  }
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
    g_string_printf(why, "%s: no such file", file);
    goto done;
  }
  Sweep w = {0};
  gboolean is_sweep = load_sweep(file, &w);
  if (!is_sweep && !load(file, &s, why)) {
    sweep_free(&w);
    goto done;
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
  GString *q = g_string_new(NULL), *l = g_string_new(NULL);
  if (queues(&s, dir, q, why) && !draw(gp_bin, dir, "queues", q, why)) rc = 1;
  if (rc == 0 && why->len) rc = 2; /* could not write the data file */
  if (rc == 0 && links(&s, dir, l, why) && !draw(gp_bin, dir, "links", l, why)) rc = 1;
  if (rc == 0 && why->len) rc = 2;
  if (rc == 0 && !s.link_bytes)
    fprintf(stderr, "fabsim: plot: %s has no /queues/link_bytes (an older fabsim): no links heatmap\n", file);
  g_string_free(q, TRUE);
  g_string_free(l, TRUE);
  g_free(dir);
done:
  if (rc) fprintf(stderr, "fabsim: plot: %s\n", why->str);
  series_free(&s);
  g_string_free(why, TRUE);
  g_free(gp_bin);
  return rc;
}

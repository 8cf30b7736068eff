/* fabsim plot RESULT.h5 [--out DIR] [--layer L] [--metric M]: gnuplot
** pictures of a run's HDF5 file.
**
**   queues.png/.svg  egress queue depth over time of the 8 busiest switch
**                    ports of the layers chosen (--layer)
**   links.png/.svg   utilisation heatmap: the 32 busiest links of those
**                    layers x time
**   busbw.png/.svg   nccl-tests runs: bus bandwidth against message size, a
**                    line per op (the /collectives rows tagged nccl-tests)
**   timeline.png/.svg per-rank Gantt chart from /timeline: compute (forward,
**                    backward, optimizer) and communication (by op and tag);
**                    a lane per rank when the run has no compute; for
**                    nccl-tests a shaded, labelled band per message size
**   sweep-METRIC.*   for a sweep's sweep.h5: each metric (--metric; by
**                    default the usual ones that are not 0 everywhere)
**                    against the first swept key on a numeric axis, one
**                    line per value of the other keys
**
** Layers: every /links row says what it joins (`layer`: fabric, nic, pcie,
** nvlink; from the topology, sampler.h). --layer fabric, the default, is the
** network an architect looks at: switch-to-switch and NIC-to-switch links;
** nic, pcie and nvlink one layer each; all everything. A queue port is
** matched to its /links row by name, which also gives its far end: series
** are named "leaf3:p17 -> spine2". The busiest are chosen within the layers
** and drawn in topology order.
**
** The data gnuplot reads is written next to the pictures (.dat, .gp), so a
** user can restyle them. Colours: viridis (perceptual, sequential) for
** heatmaps and ordered series. The queue pictures need the queue time
** series (sampled every output.sample_interval); each picture is skipped
** when its data is absent or empty. Without gnuplot on the PATH it says so
** and exits 2. See cmds.h. */
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

enum { PLOT_OUT, PLOT_LAYER, PLOT_METRIC };

static const FabOpt plot_opts[] = {
  {"--out", 0, FAB_OPT_VALUE, PLOT_OUT, "DIR", "a directory", 0, 0, "where to draw (default: RESULT-plots)"},
  {"--layer", 0, FAB_OPT_VALUE, PLOT_LAYER, "LAYER", "a layer (fabric, nic, pcie, nvlink or all)", 0, 0,
   "queues and links of a run: fabric (default), nic, pcie, nvlink, all"},
  {"--metric", 0, FAB_OPT_VALUE, PLOT_METRIC, "NAME", "a sweep column", 0, 0,
   "a sweep's metric to draw (repeatable, or a comma list)"},
  {NULL},
};

const FabCmd fab_plot_cmd = {
  "plot", "draw a run's or a sweep's results with gnuplot", "RESULT.h5", 1, 1, "plot needs a RESULT.h5 file", "file",
  "Draw a run's HDF5 results with gnuplot, as PNG and SVG in DIR (default:\n"
  "RESULT-plots next to the file): queue depth over time of the busiest switch\n"
  "ports (queues.*) and a link utilisation heatmap (links.*) of one layer of\n"
  "the fabric (--layer: fabric = switch-to-switch and NIC-to-switch links, the\n"
  "default; nic; pcie; nvlink; all; a comma list mixes them), for nccl-tests\n"
  "runs the bus bandwidth against message size (busbw.*), and for collective\n"
  "and training runs a per-rank timeline (timeline.*; nccl-tests runs: a band\n"
  "per message size). For a sweep's sweep.h5: each metric against the first\n"
  "swept key, on a numeric axis (log when the values span 10x or more), a line\n"
  "per value of the other keys (sweep-METRIC.*); --metric chooses the metrics\n"
  "(any numeric column of sweep.csv), by default the usual ones that are not 0\n"
  "at every point.",
  plot_opts, NULL,
};

/* ---- colours ---------------------------------------------------------------- */

/* viridis at eleven evenly spaced points (its published values): perceptually
** uniform, readable in grey and by most colour-blind readers */
static const char *const viridis11[] = {"#440154", "#482475", "#414487", "#355f8d", "#2a788e", "#21918c",
                                        "#22a884", "#44bf70", "#7ad151", "#bddf26", "#fde725"};

/* The viridis colour at t in [0, 1], as "#rrggbb" into out[8] (linear between the eleven points). */
static void viridis(double t, char out[8]) {
  t = CLAMP(t, 0.0, 1.0) * 10;
  int i = MIN((int)t, 9);
  double f = t - i;
  unsigned a, b, c, d, e, g;
  sscanf(viridis11[i] + 1, "%2x%2x%2x", &a, &b, &c);
  sscanf(viridis11[i + 1] + 1, "%2x%2x%2x", &d, &e, &g);
  g_snprintf(out, 8, "#%02x%02x%02x", (unsigned)lround(a + f * ((double)d - a)),
             (unsigned)lround(b + f * ((double)e - b)), (unsigned)lround(c + f * ((double)g - c)));
}

/* The colour of series j of n drawn as lines on white: viridis from its dark
** end to 0.85 (the last yellows are too pale for a line). */
static void series_colour(unsigned j, unsigned n, char out[8]) { viridis(n > 1 ? 0.85 * j / (n - 1) : 0, out); }

/* `set palette defined (...)`: viridis for heatmaps and colour scales. */
static void put_viridis_palette(GString *gp) {
  g_string_append(gp, "set palette defined (");
  for (int i = 0; i < 11; i++) g_string_append_printf(gp, "%s%.1f \"%s\"", i ? ", " : "", i / 10.0, viridis11[i]);
  g_string_append(gp, ")\n");
}

/* ---- a run's queues and links --------------------------------------------- */

#define LAYER_UNKNOWN FAB_LAYER_N /* a file from before /links had its layer column */

typedef struct Series {
  hsize_t ns, np, nl;          /* samples, sampled ports, links */
  uint64_t *t;                 /* ps, ns */
  char (*port)[FAB_FIELD_NAME_LEN];  /* np */
  uint32_t *depth;             /* ns x np */
  int64_t *port_link;          /* np: the /links row leaving that port, -1 if none */
  char (*from)[FAB_FIELD_NAME_LEN];  /* nl */
  char (*to)[FAB_FIELD_NAME_LEN];    /* nl */
  uint8_t *layer;              /* nl: FabLayer, or LAYER_UNKNOWN */
  gboolean layered;            /* the file says each link's layer */
  uint64_t *bps;               /* nl */
  uint64_t *link_bytes;        /* ns x nl, cumulative; NULL if absent */
} Series;

static void series_free(Series *s) {
  g_free(s->t);
  g_free(s->port);
  g_free(s->depth);
  g_free(s->port_link);
  g_free(s->from);
  g_free(s->to);
  g_free(s->layer);
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

/* /links as records: with its layer column, or (a file of an older fabsim)
** without it, every layer then unknown. *layered tells which. */
static FabLinkRec *read_links(hid_t f, GStringChunk *strs, size_t *n, gboolean *layered) {
  FabH5Layout ll;
  gboolean bad = FALSE;
  FabLinkRec *rows = NULL;
  *layered = FALSE;
  if (fab_h5_layout(&ll, &fab_link_table)) {
    rows = fab_h5_read_records(f, "/links", &ll, strs, n, &bad);
    fab_h5_layout_free(&ll);
    *layered = rows != NULL;
  }
  if (rows || !bad) return rows;
  FabField *fs = g_new(FabField, fab_link_table.n); /* the same table without `layer` */
  size_t k = 0;
  for (size_t i = 0; i < fab_link_table.n; i++)
    if (strcmp(fab_link_table.f[i].name, "layer")) fs[k++] = fab_link_table.f[i];
  FabFieldTable old = {fab_link_table.name, fab_link_table.size, fs, k};
  if (fab_h5_layout(&ll, &old)) {
    rows = fab_h5_read_records(f, "/links", &ll, strs, n, &bad);
    fab_h5_layout_free(&ll);
  }
  g_free(fs);
  return rows;
}

static uint8_t layer_of(const char *name) {
  for (int i = 0; name && i < FAB_LAYER_N; i++)
    if (!strcmp(name, fab_layer_names[i])) return (uint8_t)i;
  return LAYER_UNKNOWN;
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
  s->port_link = g_new(int64_t, s->np);
  s->from = g_malloc0(s->nl * FAB_FIELD_NAME_LEN);
  s->to = g_malloc0(s->nl * FAB_FIELD_NAME_LEN);
  s->layer = g_new(uint8_t, s->nl);
  s->bps = g_new(uint64_t, s->nl);
  size_t nrows = 0;
  GStringChunk *strs = g_string_chunk_new(256);
  FabLinkRec *rows = read_links(f, strs, &nrows, &s->layered);
  ok = read_all(f, "/queues/time_ps", H5T_NATIVE_UINT64, s->ns, s->t) &&
       read_all(f, "/queues/port", str, s->np, s->port) &&
       read_all(f, "/queues/depth", H5T_NATIVE_UINT32, s->ns * s->np, s->depth) && nrows == s->nl;
  GHashTable *row_of = g_hash_table_new(g_str_hash, g_str_equal); /* from -> row + 1 */
  for (hsize_t i = 0; ok && i < s->nl; i++) {
    memcpy(s->from[i], rows[i].from, FAB_FIELD_NAME_LEN);
    memcpy(s->to[i], rows[i].to, FAB_FIELD_NAME_LEN);
    s->layer[i] = s->layered ? layer_of(rows[i].layer) : LAYER_UNKNOWN;
    s->bps[i] = rows[i].bps;
    g_hash_table_insert(row_of, s->from[i], GSIZE_TO_POINTER(i + 1));
  }
  for (hsize_t p = 0; ok && p < s->np; p++) {
    s->port[p][FAB_FIELD_NAME_LEN - 1] = 0;
    s->port_link[p] = (int64_t)GPOINTER_TO_SIZE(g_hash_table_lookup(row_of, s->port[p])) - 1;
  }
  g_hash_table_destroy(row_of);
  g_free(rows);
  g_string_chunk_free(strs);
  if (ok) {
    s->link_bytes = g_new(uint64_t, s->ns * s->nl);
    if (!read_all(f, "/queues/link_bytes", H5T_NATIVE_UINT64, s->ns * s->nl, s->link_bytes)) g_clear_pointer(&s->link_bytes, g_free);
  } else {
    g_string_printf(why, "%s: cannot read its /queues and /links datasets", path);
  }
out:
  H5Tclose(str);
  H5Fclose(f);
  return ok;
}

/* The layers --layer names: a bit per FabLayer; "fabric" is the network
** (switch-to-switch and NIC-to-switch). 0 with `why` set for a bad name. */
static unsigned parse_layers(const char *arg, GString *why) {
  unsigned mask = 0;
  char **parts = g_strsplit(arg ? arg : "fabric", ",", -1);
  for (char **p = parts; *p; p++) {
    char *w = g_strstrip(*p);
    if (!strcmp(w, "fabric")) mask |= 1u << FAB_LAYER_FABRIC | 1u << FAB_LAYER_NIC;
    else if (!strcmp(w, "all")) mask |= (1u << FAB_LAYER_N) - 1;
    else if (layer_of(w) < FAB_LAYER_N) mask |= 1u << layer_of(w);
    else {
      g_string_printf(why, "--layer %s: '%s' is not a layer (fabric, nic, pcie, nvlink, all)", arg, w);
      mask = 0;
      break;
    }
  }
  g_strfreev(parts);
  return mask;
}

/* Link l is drawn under `mask` (a file without layers: every link is). */
static gboolean link_in(const Series *s, hsize_t l, unsigned mask) {
  return s->layer[l] == LAYER_UNKNOWN || (mask >> s->layer[l] & 1);
}

/* "leaf3:p17 -> spine2": the sending port and the node at the far end. */
static char *link_title(const Series *s, hsize_t l) {
  const char *to = s->to[l], *colon = strrchr(to, ':');
  return g_strdup_printf("%s -> %.*s", s->from[l], colon ? (int)(colon - to) : (int)strlen(to), to);
}

/* The same without spaces, for a .dat header's one-word column names. */
static char *link_word(const Series *s, hsize_t l) {
  char *t = link_title(s, l), *w = g_strdup(t);
  size_t k = 0;
  for (const char *c = t; *c; c++)
    if (*c != ' ') w[k++] = *c;
  w[k] = 0;
  g_free(t);
  return w;
}

/* What a layer mask is called in titles. */
static const char *layers_title(unsigned mask, gboolean layered) {
  if (!layered || mask == (1u << FAB_LAYER_N) - 1) return "all layers";
  if (mask == (1u << FAB_LAYER_FABRIC | 1u << FAB_LAYER_NIC)) return "fabric: switch-switch and NIC-switch links";
  static const char *const one[] = {"switch-switch links", "NIC-switch links", "PCIe links", "NVLink links"};
  for (int i = 0; i < FAB_LAYER_N; i++)
    if (mask == 1u << i) return one[i];
  return "the layers chosen";
}

typedef struct Rank {
  hsize_t i;
  double key;
} Rank;

static int by_key_desc(const void *a, const void *b) {
  const Rank *x = a, *y = b;
  return x->key < y->key ? 1 : x->key > y->key ? -1 : (x->i > y->i) - (x->i < y->i);
}

static int by_index(const void *a, const void *b) {
  const Rank *x = a, *y = b;
  return (x->i > y->i) - (x->i < y->i);
}

/* The (at most) `max` candidates with the largest nonzero keys, then put
** back in topology order (a legend reads by switch, not by rank). Returns
** how many. */
static hsize_t busiest(Rank *r, hsize_t n, hsize_t max) {
  qsort(r, n, sizeof *r, by_key_desc);
  hsize_t top = MIN(n, max);
  while (top && r[top - 1].key == 0) top--;
  qsort(r, top, sizeof *r, by_index);
  return top;
}

void fab_plot_put_title(GString *gp, const char *name) {
  for (const char *c = name; *c; c++) {
    if (*c == '"' || *c == '\\') g_string_append_c(gp, '\\');
    if (strchr("_^{}@&~", *c)) g_string_append(gp, "\\\\"); /* gnuplot's enhanced-text markup, shown as itself */
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

/* queues.dat + the plot commands for it: the 8 busiest switch ports of the
** layers in `mask`. Returns FALSE if none queued. */
static gboolean queues(const Series *s, unsigned mask, const char *dir, GString *gp, GString *why) {
  Rank *r = g_new(Rank, s->np);
  hsize_t n = 0;
  for (hsize_t p = 0; p < s->np; p++) {
    if (s->port_link[p] < 0 || !link_in(s, (hsize_t)s->port_link[p], mask)) continue;
    uint32_t m = 0;
    for (hsize_t k = 0; k < s->ns; k++) m = MAX(m, s->depth[k * s->np + p]);
    r[n++] = (Rank){p, m};
  }
  hsize_t top = busiest(r, n, 8);
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
  for (hsize_t j = 0; j < top; j++) {
    char *w = link_word(s, (hsize_t)s->port_link[r[j].i]);
    fprintf(out, " %s_KiB", w);
    g_free(w);
  }
  fprintf(out, "\n");
  for (hsize_t k = 0; k < s->ns; k++) {
    fprintf(out, "%.6f", (double)s->t[k] / 1e6);
    for (hsize_t j = 0; j < top; j++) fprintf(out, " %.3f", s->depth[k * s->np + r[j].i] / 1024.0);
    fprintf(out, "\n");
  }
  fclose(out);
  g_string_append_printf(gp, "set title \"Egress queue depth, the busiest switch ports (%s)\"\n"
                             "set xlabel \"time (us)\"\nset ylabel \"queue (KiB)\"\nset key outside right top\n"
                             "set grid\nunset colorbox\nset autoscale\nset yrange [0:*]\nplot ",
                         layers_title(mask, s->layered));
  for (hsize_t j = 0; j < top; j++) {
    char colour[8];
    series_colour((unsigned)j, (unsigned)top, colour);
    g_string_append_printf(gp, "%s\"%s\" using 1:%u with lines lw 2 lc rgb \"%s\" title \"", j ? ", " : "", path,
                           (unsigned)(j + 2), colour);
    char *title = link_title(s, (hsize_t)s->port_link[r[j].i]);
    fab_plot_put_title(gp, title);
    g_free(title);
    g_string_append(gp, "\"");
  }
  g_string_append(gp, "\n");
  g_free(path);
  g_free(r);
  return TRUE;
}

/* links.dat (time, row, utilisation %) + the heatmap commands: the 32 busiest
** links of the layers in `mask`. */
static gboolean links(const Series *s, unsigned mask, const char *dir, GString *gp, GString *why) {
  if (!s->link_bytes || s->ns < 2) return FALSE;
  Rank *r = g_new(Rank, s->nl);
  hsize_t n = 0;
  for (hsize_t l = 0; l < s->nl; l++)
    if (link_in(s, l, mask)) r[n++] = (Rank){l, (double)s->link_bytes[(s->ns - 1) * s->nl + l]};
  hsize_t top = busiest(r, n, 32);
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
  fprintf(out, "# time_us row utilisation_percent; the rows (the busiest links of %s, in topology order):\n",
          layers_title(mask, s->layered));
  for (hsize_t j = 0; j < top; j++) {
    char *title = link_title(s, r[j].i);
    uint8_t ly = s->layer[r[j].i];
    fprintf(out, "# row %u: %s (%s)\n", (unsigned)j, title, ly < FAB_LAYER_N ? fab_layer_names[ly] : "?");
    g_free(title);
  }
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
  g_string_append_printf(gp, "set title \"Link utilisation, the %u busiest links (%s)\"\n"
                             "set xlabel \"time (us)\"\nset ylabel \"\"\nset cblabel \"utilisation (%%)\"\n"
                             "set cbrange [0:100]\nset yrange [%u.5:-0.5]\n",
                         (unsigned)top, layers_title(mask, s->layered), (unsigned)top - 1);
  put_viridis_palette(gp);
  g_string_append(gp, "set colorbox\nunset grid\nset key off\nset ytics (");
  for (hsize_t j = 0; j < top; j++) {
    g_string_append_printf(gp, "%s\"", j ? ", " : "");
    char *title = link_title(s, r[j].i);
    fab_plot_put_title(gp, title);
    g_free(title);
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
  FILE *out = open_dat(dir, "sweep.dat", &path, why);
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
static gboolean choose_metrics(const Sweep *w, const char *file, GPtrArray *asked, GArray *chosen, GString *why) {
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

static gboolean draw(const char *gp_bin, const char *dir, const char *name, const GString *body, GString *why);

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
static gboolean sweep_plots(const char *gp_bin, const Sweep *w, const GArray *chosen, const char *dir, GString *why) {
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
      series_colour(b, lines->len, colour);
      g_string_append_printf(gp, "%s\"%s\" index %u using 1:($%d*%g) with linespoints lw 2 pt 7 lc rgb \"%s\" title \"",
                             b ? ", " : "", data, b, m + 2, mt.scale, colour);
      fab_plot_put_title(gp, lines->pdata[b]);
      g_string_append(gp, "\"");
    }
    g_string_append(gp, "\n");
    char *name = g_strdup_printf("sweep-%s", w->num[m]);
    ok = draw(gp_bin, dir, name, gp, why);
    g_free(name);
    g_free(label);
    g_string_free(gp, TRUE);
  }
  g_free(data);
  g_ptr_array_free(lines, TRUE);
  xaxis_free(&x);
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

/* A message size as nccl-tests users say it: "8 B", "64 KiB", "1.5 MiB". */
static char *size_label(uint64_t b) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  double v = (double)b;
  while (v >= 1024 && u < 6) v /= 1024, u++;
  return g_strdup_printf("%.4g %s", v, unit[u]);
}

/* One message size of an nccl-tests run: from the first start to the last
** end of its collectives (every iteration, every rank). */
typedef struct Band {
  uint32_t job;
  const char *op;
  uint64_t bytes;
  double a, e; /* s */
} Band;

/* The bands of the collectives tagged nccl-tests, a band per (job, op, size)
** in order of first start. */
static GArray *nccl_bands(const Events *ev) {
  GArray *bands = g_array_new(FALSE, FALSE, sizeof(Band));
  for (size_t c = 0; c < ev->ncolls; c++) {
    const FabCollRec *r = &ev->colls[c];
    if (!r->tag || strcmp(r->tag, "nccl-tests") || !(r->end > r->start)) continue;
    double a = fab_time_to_s(r->start), e = fab_time_to_s(r->end);
    guint k = 0;
    for (; k < bands->len; k++) {
      Band *b = &g_array_index(bands, Band, k);
      if (b->job == r->job && b->bytes == r->bytes && !g_strcmp0(b->op, r->op)) {
        b->a = MIN(b->a, a), b->e = MAX(b->e, e);
        break;
      }
    }
    if (k == bands->len) {
      Band b = {r->job, r->op, r->bytes, a, e};
      g_array_append_val(bands, b);
    }
  }
  return bands;
}

/* timeline-bands.dat and the gnuplot objects drawing the bands: shaded in
** turn, labelled on the top axis when wide enough to read (>= 1.5% of the
** time shown). Returns how many went unlabelled; -1 when the file cannot be
** written (`why` set). */
static int put_bands(const GArray *bands, const char *dir, double t0, double t1, double scale, gboolean ms,
                     GString *gp, GString *why) {
  char *path = NULL;
  FILE *out = open_dat(dir, "timeline-bands.dat", &path, why);
  if (!out) return -1;
  gboolean several = FALSE; /* several ops or jobs: a label says which */
  for (guint k = 1; k < bands->len; k++) {
    const Band *b = &g_array_index(bands, Band, k), *b0 = &g_array_index(bands, Band, 0);
    several |= b->job != b0->job || g_strcmp0(b->op, b0->op);
  }
  fprintf(out, "# nccl-tests, a band per message size: start_%s end_%s job op size_B label\n", ms ? "ms" : "us",
          ms ? "ms" : "us");
  GString *tics = g_string_new(NULL);
  int unlabelled = 0;
  for (guint k = 0; k < bands->len; k++) {
    Band cut = g_array_index(bands, Band, k), *b = &cut;
    if (b->e < t0 || b->a > t1) continue; /* not in the time shown (no rank of it shown) */
    b->a = MAX(b->a, t0), b->e = MIN(b->e, t1);
    char *sz = size_label(b->bytes), *label = several ? g_strdup_printf("%s %s", b->op, sz) : g_strdup(sz);
    fprintf(out, "%.9g %.9g %u %s %" G_GUINT64_FORMAT " \"%s\"\n", b->a * scale, b->e * scale, b->job, b->op, b->bytes,
            label);
    g_string_append_printf(gp, "set object %u rect from %.9g, graph 0 to %.9g, graph 1 behind fillcolor rgb \"%s\" "
                               "fillstyle solid 1.0 noborder\n",
                           k + 1, b->a * scale, b->e * scale, k % 2 ? "#f4f4f4" : "#e2e2e2");
    if (b->e - b->a >= 0.015 * (t1 - t0)) {
      g_string_append_printf(tics, "%s\"", tics->len ? ", " : "");
      fab_plot_put_title(tics, label);
      g_string_append_printf(tics, "\" %.9g", (b->a + b->e) / 2 * scale);
    } else {
      unlabelled++;
    }
    g_free(sz);
    g_free(label);
  }
  fclose(out);
  g_free(path);
  if (tics->len)
    g_string_append_printf(gp, "set xtics nomirror\nset x2range [%.9g:%.9g]\nset x2tics (%s) rotate by 90 font \",8\" "
                               "nomirror\n",
                           t0 * scale, t1 * scale, tics->str);
  g_string_free(tics, TRUE);
  return unlabelled;
}

/* The colour scale of the nccl-tests bars: viridis over log2 of the message
** size, its tics labelled in sizes (at most about ten). */
static void put_size_colours(const GArray *bands, GString *gp) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (guint k = 0; k < bands->len; k++) {
    uint64_t b = g_array_index(bands, Band, k).bytes;
    if (b) lo = MIN(lo, b), hi = MAX(hi, b);
  }
  if (!hi) lo = hi = 1;
  int e0 = (int)floor(log2((double)lo)), e1 = (int)ceil(log2((double)hi));
  if (e1 == e0) e1++;
  int step = MAX(1, (e1 - e0 + 9) / 10);
  put_viridis_palette(gp);
  g_string_append_printf(gp, "set cbrange [%d:%d]\nset cblabel \"message size\"\nset colorbox\nset cbtics (", e0, e1);
  for (int e = e0; e <= e1; e += step) {
    char *l = size_label(1ULL << MIN(e, 63));
    g_string_append_printf(gp, "%s\"%s\" %d", e > e0 ? ", " : "", l, e);
    g_free(l);
  }
  g_string_append(gp, ")\n");
}

/* A timeline being drawn: the ranks shown, what each span is, the time shown. */
typedef struct Gantt {
  uint32_t *rk;            /* the ranks, sorted; rk[0 .. shown) are drawn */
  uint32_t nranks, shown;
  GHashTable *row_of;      /* rank + 1 -> row + 1 */
  GPtrArray *cats;         /* the categories: the 4 compute phases, then the communication, in order of appearance */
  GArray *sized;           /* per category: nccl-tests collectives, coloured by message size */
  int *cat;                /* per span: its category, -1 not drawn */
  int *block;              /* per category: its block of timeline.dat, -1 none */
  gboolean compute;        /* some span shown is compute: two lanes per rank */
  double t0, t1;           /* s */
  gboolean ms;             /* time in ms (else us) */
  double scale;
  char *path;              /* timeline.dat */
} Gantt;

static void gantt_free(Gantt *g) {
  g_free(g->rk);
  if (g->row_of) g_hash_table_destroy(g->row_of);
  if (g->cats) g_ptr_array_free(g->cats, TRUE);
  if (g->sized) g_array_free(g->sized, TRUE);
  g_free(g->cat);
  g_free(g->block);
  g_free(g->path);
}

static unsigned gantt_row(const Gantt *g, uint32_t rank) {
  return GPOINTER_TO_UINT(g_hash_table_lookup(g->row_of, GUINT_TO_POINTER(rank + 1)));
}

/* The ranks shown: the first GANTT_MAX_RANKS. */
static void gantt_ranks(const Events *ev, Gantt *g) {
  g->rk = g_new(uint32_t, ev->nspans);
  for (size_t i = 0; i < ev->nspans; i++) g->rk[i] = ev->spans[i].rank;
  qsort(g->rk, ev->nspans, sizeof *g->rk, cmp_u32);
  for (size_t i = 0; i < ev->nspans; i++)
    if (!g->nranks || g->rk[g->nranks - 1] != g->rk[i]) g->rk[g->nranks++] = g->rk[i];
  g->shown = MIN(g->nranks, GANTT_MAX_RANKS);
  g->row_of = g_hash_table_new(NULL, NULL);
  for (uint32_t i = 0; i < g->shown; i++)
    g_hash_table_insert(g->row_of, GUINT_TO_POINTER(g->rk[i] + 1), GUINT_TO_POINTER(i + 1));
}

/* Each span's category, and the time the spans shown cover. */
static void gantt_categories(const Events *ev, Gantt *g) {
  static const char *const phase[] = {"forward", "backward", "optimizer", "compute"};
  g->cats = g_ptr_array_new_with_free_func(g_free);
  for (int p = 0; p < 4; p++) g_ptr_array_add(g->cats, g_strdup(phase[p]));
  g->sized = g_array_new(FALSE, TRUE, sizeof(gboolean));
  g->cat = g_new(int, ev->nspans);
  g->t0 = INFINITY, g->t1 = -INFINITY;
  for (size_t i = 0; i < ev->nspans; i++) {
    const FabSpanRec *s = &ev->spans[i];
    g->cat[i] = -1;
    if (!gantt_row(g, s->rank) || !(s->end >= s->start)) continue;
    g->t0 = MIN(g->t0, fab_time_to_s(s->start)), g->t1 = MAX(g->t1, fab_time_to_s(s->end));
    if (s->kind == 0) {
      g->cat[i] = MIN(s->phase, 3);
      g->compute = TRUE;
      continue;
    }
    const FabCollRec *c = s->coll >= 0 && (size_t)s->coll < ev->ncolls ? &ev->colls[s->coll] : NULL;
    char *label = s->kind == 2 ? g_strdup("pipeline send/recv")
                  : !c         ? g_strdup("collective")
                  : c->tag     ? g_strdup_printf("%s (%s)", c->op, c->tag)
                               : g_strdup(c->op);
    guint k = 4;
    while (k < g->cats->len && strcmp(g->cats->pdata[k], label)) k++;
    if (k == g->cats->len) g_ptr_array_add(g->cats, label);
    else g_free(label);
    g->cat[i] = (int)k;
    g_array_set_size(g->sized, g->cats->len);
    if (s->kind == 1 && c && !g_strcmp0(c->tag, "nccl-tests")) g_array_index(g->sized, gboolean, k) = TRUE;
  }
  g_array_set_size(g->sized, g->cats->len);
}

/* timeline.dat: a block per category with spans: x centre, y, x half-width,
** y half-height (boxxyerror), log2 of the collective's size. Only blocks with
** data are written (gnuplot's `index` counts those). */
static gboolean gantt_data(const Events *ev, Gantt *g, const char *dir, GString *why) {
  FILE *out = open_dat(dir, "timeline.dat", &g->path, why);
  if (!out) return FALSE;
  g->ms = g->t1 - g->t0 >= 2e-3;
  g->scale = g->ms ? 1e3 : 1e6;
  g->block = g_new(int, g->cats->len);
  for (guint k = 0; k < g->cats->len; k++) g->block[k] = -1;
  for (size_t i = 0; i < ev->nspans; i++)
    if (g->cat[i] >= 0) g->block[g->cat[i]] = 0;
  for (guint k = 0, b = 0; k < g->cats->len; k++) {
    if (g->block[k] < 0) continue;
    g->block[k] = (int)b++;
    fprintf(out, "# %s: time_%s row half_width half_height log2_size_B\n", (char *)g->cats->pdata[k], g->ms ? "ms" : "us");
    for (size_t i = 0; i < ev->nspans; i++) {
      if (g->cat[i] != (int)k) continue;
      const FabSpanRec *s = &ev->spans[i];
      /* two lanes (compute above, communication below) only when there is compute */
      double y = gantt_row(g, s->rank) - 1 + (!g->compute ? 0 : s->kind == 0 ? -0.2 : 0.2);
      double a = fab_time_to_s(s->start), e = fab_time_to_s(s->end);
      uint64_t bytes = s->kind == 1 && s->coll >= 0 && (size_t)s->coll < ev->ncolls ? ev->colls[s->coll].bytes : 0;
      fprintf(out, "%.9g %.2f %.9g %.2f %.4g\n", (a + e) / 2 * g->scale, y, (e - a) / 2 * g->scale,
              g->compute ? 0.17 : 0.3, bytes ? log2((double)bytes) : 0);
    }
    fprintf(out, "\n\n");
  }
  fclose(out);
  return TRUE;
}

/* The title: compute and communication lanes; or, without compute, what the
** communication is (and the bands of an nccl-tests run). */
static void gantt_title(const Gantt *g, gboolean bands, int unlabelled, GString *gp) {
  if (g->compute) {
    g_string_append(gp, "set title \"Per-rank timeline: compute (upper lane of each rank), communication (lower lane)");
  } else if (bands) {
    g_string_append(gp, "set title \"Per-rank timeline: ");
    for (guint k = 4, n = 0; k < g->cats->len; k++)
      if (g->block[k] >= 0) {
        g_string_append(gp, n++ ? ", " : "");
        fab_plot_put_title(gp, g->cats->pdata[k]);
      }
    g_string_append_printf(gp, "; a band per message size%s", unlabelled ? " (narrow ones unlabelled)" : "");
  } else {
    g_string_append(gp, "set title \"Per-rank timeline: communication");
  }
  if (g->shown < g->nranks) g_string_append_printf(gp, ", the first %u of %u ranks", g->shown, g->nranks);
  g_string_append(gp, "\"\n");
}

/* The axes and the plot command: a bar per span, coloured by category (nccl-tests: by size). */
static void gantt_plot(const Gantt *g, const GArray *bands, GString *gp) {
  static const char *const phase_colour[] = {"#4C72B0", "#55A868", "#C44E52", "#8C8C8C"};
  static const char *const comm_colour[] = {"#DD8452", "#8172B3", "#937860", "#DA8BC3", "#CCB974", "#64B5CD",
                                            "#2F4F4F", "#B8860B"};
  g_string_append_printf(gp, "set xlabel \"time (%s)\"\nset ylabel \"\"\nset yrange [%u.6:-0.6]\nset ytics (",
                         g->ms ? "ms" : "us", g->shown - 1);
  for (uint32_t i = 0; i < g->shown; i++) g_string_append_printf(gp, "%s\"rank %u\" %u", i ? ", " : "", g->rk[i], i);
  g_string_append_printf(gp, ")%s\nset grid xtics\nset key outside right top\nset style fill solid 1.0 border lc rgb \"white\"\n"
                             "set xrange [%.9g:%.9g]\n", g->shown > 16 ? " font \",8\"" : "", g->t0 * g->scale,
                         g->t1 * g->scale);
  gboolean keyless = !g->compute && bands->len; /* every bar coloured by size? the colour box is then the key */
  for (guint k = 4; k < g->cats->len; k++) keyless &= g->block[k] < 0 || g_array_index(g->sized, gboolean, k);
  if (bands->len) put_size_colours(bands, gp);
  else g_string_append(gp, "unset colorbox\n");
  g_string_append(gp, keyless ? "set key off\nplot " : "plot ");
  for (guint k = 0, first = 1; k < g->cats->len; k++) {
    if (g->block[k] < 0) continue;
    gboolean by_size = bands->len && g_array_index(g->sized, gboolean, k);
    const char *colour = k < 4 ? phase_colour[k] : comm_colour[(k - 4) % G_N_ELEMENTS(comm_colour)];
    if (by_size)
      g_string_append_printf(gp, "%s\"%s\" index %d using 1:2:3:4:5 with boxxyerror fillcolor palette title \"",
                             first ? "" : ", ", g->path, g->block[k]);
    else
      g_string_append_printf(gp, "%s\"%s\" index %d using 1:2:3:4 with boxxyerror lc rgb \"%s\" title \"",
                             first ? "" : ", ", g->path, g->block[k], colour);
    fab_plot_put_title(gp, g->cats->pdata[k]);
    g_string_append(gp, by_size ? ", colour: message size\"" : "\"");
    first = 0;
  }
  g_string_append(gp, "\nset ytics autofreq\nset autoscale\nset grid\nunset object\nunset x2tics\nset xtics mirror\nset key\n"
                      "unset colorbox\nset cbtics autofreq\nset cblabel \"\"\n");
}

/* timeline.dat + the plot: a Gantt chart, a row per rank (the first 32).
** With compute in the run: compute in each rank's upper lane (forward /
** backward / optimizer / other), the collectives and pipeline transfers in
** its lower lane, coloured by what they are. Without: one lane per rank and
** no compute in the title. nccl-tests runs get a band per message size
** behind the bars (timeline-bands.dat), and their bars are coloured by size.
** FALSE if there are no spans. */
static gboolean timeline(const Events *ev, const char *dir, GString *gp, GString *why) {
  if (!ev->nspans) return FALSE;
  Gantt g = {0};
  gantt_ranks(ev, &g);
  gantt_categories(ev, &g);
  GArray *bands = nccl_bands(ev);
  gboolean ok = isfinite(g.t0) && gantt_data(ev, &g, dir, why);
  int unlabelled = ok && bands->len ? put_bands(bands, dir, g.t0, g.t1, g.scale, g.ms, gp, why) : 0;
  ok = ok && unlabelled >= 0;
  if (ok) {
    gantt_title(&g, bands->len > 0, unlabelled, gp);
    gantt_plot(&g, bands, gp);
  }
  g_array_free(bands, TRUE);
  gantt_free(&g);
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

/* The queues and links of the layers in `mask` (when s is not NULL: the run
** was sampled), then busbw and the timeline; the exit status. `asked`: the
** layers were chosen with --layer. */
static int run_plots(const char *gp_bin, const char *file, const Series *s, const Events *ev, unsigned mask,
                     gboolean asked, const char *dir, GString *why) {
  int rc = 0;
  GString *q = g_string_new(NULL), *l = g_string_new(NULL), *b = g_string_new(NULL), *t = g_string_new(NULL);
  if (s) {
    gboolean any = FALSE, others = FALSE; /* links in the layers chosen; in the others */
    for (hsize_t k = 0; k < s->nl; k++) {
      any |= link_in(s, k, mask);
      others |= !link_in(s, k, mask);
    }
    if (!s->layered)
      fprintf(stderr, "fabsim: plot: %s has no layer column in /links (an older fabsim): every link is drawn\n", file);
    else if (!any)
      fprintf(stderr, "fabsim: plot: %s has no %s: no queue and link pictures\n", file, layers_title(mask, TRUE));
    else if (others && !asked)
      fprintf(stderr, "fabsim: plot: queues and links of the fabric (switch-switch and NIC-switch links); "
                      "--layer pcie, nvlink or all for the GPUs' links (nic: the NIC-switch links alone)\n");
    gboolean queued = queues(s, mask, dir, q, why);
    if (queued && !draw(gp_bin, dir, "queues", q, why)) rc = 1;
    if (!queued && !why->len && any) /* PCIe and NVLink are credit-based: their queues stay empty */
      fprintf(stderr, "fabsim: plot: no switch port of %s ever had a queue when sampled: no queues picture\n",
              layers_title(mask, s->layered));
    if (rc == 0 && why->len) rc = 2; /* could not write the data file */
    if (rc == 0 && links(s, mask, dir, l, why) && !draw(gp_bin, dir, "links", l, why)) rc = 1;
    if (rc == 0 && why->len) rc = 2;
    if (rc == 0 && !s->link_bytes)
      fprintf(stderr, "fabsim: plot: %s has no /queues/link_bytes (an older fabsim): no links heatmap\n", file);
  }
  if (rc == 0 && busbw(ev, dir, b, why) && !draw(gp_bin, dir, "busbw", b, why)) rc = 1;
  if (rc == 0 && why->len) rc = 2;
  if (rc == 0 && timeline(ev, dir, t, why) && !draw(gp_bin, dir, "timeline", t, why)) rc = 1;
  if (rc == 0 && why->len) rc = 2;
  g_string_free(q, TRUE);
  g_string_free(l, TRUE);
  g_string_free(b, TRUE);
  g_string_free(t, TRUE);
  return rc;
}

/* What the command line asked for. */
typedef struct PlotArgs {
  const char *file, *out; /* out NULL: FILE-plots */
  const char *layer;      /* --layer as given, NULL: fabric */
  GPtrArray *metrics;     /* --metric names (each occurrence, commas split) */
} PlotArgs;

/* Draw what the file holds into the output directory; the exit status. */
static int plot(const PlotArgs *pa) {
  const char *file = pa->file, *out = pa->out;
  GString *why = g_string_new(NULL);
  unsigned mask = parse_layers(pa->layer, why);
  if (!mask) {
    int rc = fab_args_error(&fab_plot_cmd, "%s", why->str);
    g_string_free(why, TRUE);
    return rc;
  }
  char *gp_bin = g_find_program_in_path("gnuplot");
  if (!gp_bin) {
    fprintf(stderr, "fabsim: plot needs gnuplot, which is not on the PATH (Debian: apt-get install gnuplot-nox; "
                    "tools/setup installs it)\n");
    g_string_free(why, TRUE);
    return 2;
  }
  Series s = {0};
  GArray *chosen = NULL;
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
  if (is_sweep && pa->layer) {
    g_string_printf(why, "--layer %s: %s is a sweep's table; --layer chooses the queues and links of one run's file",
                    pa->layer, file);
    sweep_free(&w);
    goto done;
  }
  chosen = g_array_new(FALSE, FALSE, sizeof(int)); /* a sweep's metrics, checked before anything is written */
  if (is_sweep && !choose_metrics(&w, file, pa->metrics, chosen, why)) {
    sweep_free(&w);
    goto done;
  }
  if (!is_sweep && pa->metrics->len) {
    g_string_printf(why, "--metric %s: %s is not a sweep's sweep.h5; --metric chooses what a sweep's plots draw",
                    (char *)pa->metrics->pdata[0], file);
    sweep_free(&w);
    goto done;
  }
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
    if (!sweep_plots(gp_bin, &w, chosen, dir, why)) rc = g_str_has_prefix(why->str, "cannot write") ? 2 : 1;
    sweep_free(&w);
    g_free(dir);
    goto done;
  }
  sweep_free(&w);
  rc = run_plots(gp_bin, file, have_series ? &s : NULL, &ev, mask, pa->layer != NULL, dir, why);
  events_free(&ev);
  g_free(dir);
done:
  if (rc) fprintf(stderr, "fabsim: plot: %s\n", why->str);
  if (chosen) g_array_free(chosen, TRUE);
  series_free(&s);
  g_string_free(why, TRUE);
  g_free(gp_bin);
  return rc;
}

/* Every --metric value (the parser keeps only the last): each occurrence,
** "--metric NAME" or "--metric=NAME", its commas split. Walks argv as the
** parser does, so the value of another option is never taken for one. */
static GPtrArray *metric_args(int argc, char **argv) {
  GPtrArray *m = g_ptr_array_new_with_free_func(g_free);
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    if (!strcmp(a, "--metric") && i + 1 < argc) v = argv[++i];
    else if (g_str_has_prefix(a, "--metric=")) v = a + strlen("--metric=");
    else if (!strcmp(a, "--out") || !strcmp(a, "--layer")) i++;
    if (!v) continue;
    char **parts = g_strsplit(v, ",", -1);
    for (char **p = parts; *p; p++)
      if (*g_strstrip(*p)) g_ptr_array_add(m, g_strdup(*p));
    g_strfreev(parts);
  }
  return m;
}

int fab_cmd_plot(int argc, char **argv) {
  FabArgs a;
  int rc = fab_args_parse(&fab_plot_cmd, argc, argv, &a);
  if (rc < 0) {
    PlotArgs pa = {fab_args_pos(&a, 0), a.value[PLOT_OUT], a.value[PLOT_LAYER], metric_args(argc, argv)};
    rc = plot(&pa);
    g_ptr_array_free(pa.metrics, TRUE);
  }
  fab_args_clear(&a);
  return rc;
}

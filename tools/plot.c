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
#include "plot_int.h"

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
void fab_plot__viridis(double t, char out[8]) {
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
void fab_plot__series_colour(unsigned j, unsigned n, char out[8]) { fab_plot__viridis(n > 1 ? 0.85 * j / (n - 1) : 0, out); }

/* `set palette defined (...)`: viridis for heatmaps and colour scales. */
void fab_plot__put_viridis_palette(GString *gp) {
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
FILE *fab_plot__open_dat(const char *dir, const char *name, char **path, GString *why) {
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
  FILE *out = fab_plot__open_dat(dir, "queues.dat", &path, why);
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
    fab_plot__series_colour((unsigned)j, (unsigned)top, colour);
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
  FILE *out = fab_plot__open_dat(dir, "links.dat", &path, why);
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
  fab_plot__put_viridis_palette(gp);
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
gboolean fab_plot__draw(const char *gp_bin, const char *dir, const char *name, const GString *body, GString *why) {
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
    if (queued && !fab_plot__draw(gp_bin, dir, "queues", q, why)) rc = 1;
    if (!queued && !why->len && any) /* PCIe and NVLink are credit-based: their queues stay empty */
      fprintf(stderr, "fabsim: plot: no switch port of %s ever had a queue when sampled: no queues picture\n",
              layers_title(mask, s->layered));
    if (rc == 0 && why->len) rc = 2; /* could not write the data file */
    if (rc == 0 && links(s, mask, dir, l, why) && !fab_plot__draw(gp_bin, dir, "links", l, why)) rc = 1;
    if (rc == 0 && why->len) rc = 2;
    if (rc == 0 && !s->link_bytes)
      fprintf(stderr, "fabsim: plot: %s has no /queues/link_bytes (an older fabsim): no links heatmap\n", file);
  }
  if (rc == 0 && fab_plot__busbw(ev, dir, b, why) && !fab_plot__draw(gp_bin, dir, "busbw", b, why)) rc = 1;
  if (rc == 0 && why->len) rc = 2;
  if (rc == 0 && fab_plot__timeline(ev, dir, t, why) && !fab_plot__draw(gp_bin, dir, "timeline", t, why)) rc = 1;
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
  gboolean is_sweep = fab_plot__load_sweep(file, &w), have_series = FALSE;
  if (is_sweep && pa->layer) {
    g_string_printf(why, "--layer %s: %s is a sweep's table; --layer chooses the queues and links of one run's file",
                    pa->layer, file);
    fab_plot__sweep_free(&w);
    goto done;
  }
  chosen = g_array_new(FALSE, FALSE, sizeof(int)); /* a sweep's metrics, checked before anything is written */
  if (is_sweep && !fab_plot__choose_metrics(&w, file, pa->metrics, chosen, why)) {
    fab_plot__sweep_free(&w);
    goto done;
  }
  if (!is_sweep && pa->metrics->len) {
    g_string_printf(why, "--metric %s: %s is not a sweep's sweep.h5; --metric chooses what a sweep's plots draw",
                    (char *)pa->metrics->pdata[0], file);
    fab_plot__sweep_free(&w);
    goto done;
  }
  if (!is_sweep) {
    have_series = load(file, &s, why);
    fab_plot__load_events(file, &ev);
    if (!have_series && !ev.ncolls && !ev.nspans) {
      fab_plot__sweep_free(&w);
      fab_plot__events_free(&ev);
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
    fab_plot__sweep_free(&w);
    fab_plot__events_free(&ev);
    goto done;
  }
  rc = 0;
  if (is_sweep) {
    if (!fab_plot__sweep_plots(gp_bin, &w, chosen, dir, why)) rc = g_str_has_prefix(why->str, "cannot write") ? 2 : 1;
    fab_plot__sweep_free(&w);
    g_free(dir);
    goto done;
  }
  fab_plot__sweep_free(&w);
  rc = run_plots(gp_bin, file, have_series ? &s : NULL, &ev, mask, pa->layer != NULL, dir, why);
  fab_plot__events_free(&ev);
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

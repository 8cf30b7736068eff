/* fabsim plot on a run's collectives: bus bandwidth against message size for
** nccl-tests runs, and the per-rank timeline (Gantt chart). See plot.c and
** plot_int.h. */
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

/* ---- collectives and the per-rank timeline -------------------------------- */


void fab_plot__events_free(Events *ev) {
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

void fab_plot__load_events(const char *path, Events *ev) {
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
gboolean fab_plot__busbw(const Events *ev, const char *dir, GString *gp, GString *why) {
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
  if (!hi || !(out = fab_plot__open_dat(dir, "busbw.dat", &path, why))) goto done;
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
  FILE *out = fab_plot__open_dat(dir, "timeline-bands.dat", &path, why);
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
  fab_plot__put_viridis_palette(gp);
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
  FILE *out = fab_plot__open_dat(dir, "timeline.dat", &g->path, why);
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
gboolean fab_plot__timeline(const Events *ev, const char *dir, GString *gp, GString *why) {
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

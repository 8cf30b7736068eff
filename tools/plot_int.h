/* What the three parts of `fabsim plot` share: tools/plot.c (the command,
** a run's queues and links, drawing), plot_sweep.c (a sweep's sweep.h5) and
** plot_timeline.c (a run's collectives: busbw and the per-rank timeline).
** Not a public header. */
#ifndef FAB_PLOT_INT_H
#define FAB_PLOT_INT_H

#include <glib.h>
#include <hdf5.h>
#include <stdio.h>
#include "tools/libfabsim/results.h"

/* ---- plot.c: colours, data files, drawing -------------------------------- */

/* The viridis colour at t in [0, 1], as "#rrggbb" into out[8]. */
void fab_plot__viridis(double t, char out[8]);
/* The colour of series j of n drawn as lines on white (viridis, its dark end to 0.85). */
void fab_plot__series_colour(unsigned j, unsigned n, char out[8]);
/* `set palette defined (...)`: viridis for heatmaps and colour scales. */
void fab_plot__put_viridis_palette(GString *gp);
/* Open DIR/NAME for writing gnuplot's data; *path gets its name (transfer
** full). NULL with `why` set when it cannot be written. */
FILE *fab_plot__open_dat(const char *dir, const char *name, char **path, GString *why);
/* Draw `body` as DIR/NAME.png and .svg and say so on stdout. */
gboolean fab_plot__draw(const char *gp_bin, const char *dir, const char *name, const GString *body, GString *why);

/* ---- plot_sweep.c: a sweep's table ----------------------------------------- */

typedef struct Sweep {
  hsize_t n;                /* points */
  int nkeys, nnum;
  char **key;               /* nkeys member names (swept keys) */
  char **num;               /* nnum member names (numeric fields) */
  char *val;                /* n x nkeys x 64: the swept values */
  uint32_t *status;         /* n: 0 ok, 1 the point's run failed (NULL if absent) */
  double *x;                /* n x nnum */
} Sweep;

/* FALSE if `path` holds no sweep table (/sweep). */
gboolean fab_plot__load_sweep(const char *path, Sweep *w);
void fab_plot__sweep_free(Sweep *w);
/* The columns to draw: --metric's (each a column of the file with a value;
** FALSE and a message otherwise), or the known ones present and not 0
** everywhere (saying which were left out). */
gboolean fab_plot__choose_metrics(const Sweep *w, const char *file, GPtrArray *asked, GArray *chosen, GString *why);
/* The sweep's pictures, a metric (a column index of w) each. */
gboolean fab_plot__sweep_plots(const char *gp_bin, const Sweep *w, const GArray *chosen, const char *dir, GString *why);

/* ---- plot_timeline.c: collectives and the per-rank timeline --------------- */

typedef struct Events {
  size_t ncolls, nspans;
  FabCollRec *colls;        /* /collectives, as the field table describes it */
  FabSpanRec *spans;        /* /timeline */
  GStringChunk *strs;       /* their strings */
} Events;

/* /collectives and /timeline of a run's file (empty when absent). */
void fab_plot__load_events(const char *path, Events *ev);
void fab_plot__events_free(Events *ev);
/* busbw.dat and the plot of bus bandwidth against message size; FALSE if no
** collective is tagged nccl-tests. */
gboolean fab_plot__busbw(const Events *ev, const char *dir, GString *gp, GString *why);
/* The per-rank Gantt chart (timeline.dat, for nccl-tests timeline-bands.dat);
** FALSE if there are no spans. */
gboolean fab_plot__timeline(const Events *ev, const char *dir, GString *gp, GString *why);

#endif

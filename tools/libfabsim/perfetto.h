/*
** A run's timeline as a trace that Perfetto (ui.perfetto.dev) and Chrome's
** chrome://tracing open: the JSON trace-event format (one object with a
** `traceEvents` array of complete events, "ph": "X", times in
** microseconds). Written from the results, after the run:
**
**   - one process per job ("job NAME (KIND)"): a `steps` track with each
**     training step, then per rank (endpoint) a compute track (forward,
**     backward, optimizer, compute) and as many communication tracks as its
**     collectives and transfers overlap (a rank in a tensor-parallel
**     allreduce while a data-parallel bucket runs has two);
**   - a process `collectives`: each collective from its first rank's entry
**     to its last rank's result, with op, size, algorithm, protocol,
**     channels and bus bandwidth as its args, in as many tracks as overlap.
**
** Times are exact: ps printed as microseconds with six decimals. The same
** results give the same bytes. README "Timeline as a Perfetto trace".
*/
#ifndef FAB_PERFETTO_H
#define FAB_PERFETTO_H

#include <glib.h>
#include <stdio.h>
#include "results.h"

/* The trace of `r` to `f`. FALSE when a write failed. */
gboolean fab_perfetto_fwrite(const FabResults *r, FILE *f);

/* The trace of `r` to `path` (fab_out_check_target first): written to a
** temporary beside it and renamed, so that a failure leaves no file. FALSE
** + err (G_FILE_ERROR) naming the path. */
gboolean fab_perfetto_write(const FabResults *r, const char *path, GError **err);

#endif

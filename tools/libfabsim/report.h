/*
** The short human-readable report `fabsim run` prints: the fabric, flows,
** FCTs, drops, the engine's speed; per job (when there are several) its
** time; a few collectives; for training the step report per job; for
** nccl-tests the tables nccl-tests would print.
*/
#ifndef FAB_REPORT_H
#define FAB_REPORT_H

#include <stdio.h>
#include "results.h"
#include "scenario.h"

/* Write the report of sc's run r to out (hdf5: the file written, or NULL). */
void fab_report_text(const FabScenario *sc, const FabResults *r, const char *hdf5, FILE *out);

/* Job j's collectives per purpose (tag and op: "dp allreduce"), in order of
** first appearance, as the report's "collectives" line: "dp 496 x allreduce
** (31 per rank, busiest rank 16.350 ms; 2011.015 ms summed)": how many
** collectives one rank is in at most and the longest time one rank spends
** in them (from the timeline: its spans, overlaps counted once), both per
** step when steps > 1 ("per rank and step", "ms per step"), then the sum of
** all their times (first rank in to last rank out). g_free the result. */
char *fab_report_purposes(const FabResults *r, size_t j, uint32_t steps);

#endif

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

#endif

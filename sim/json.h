/*
** The JSON summary of a run (the contract in SCENARIO.md): one object with
** every field always present. Numbers are printed with fixed formats
** (integers exactly, seconds with %.9g), so identical runs print identical
** text apart from wall_s and events_per_s.
*/
#ifndef FAB_JSON_H
#define FAB_JSON_H

#include <glib.h>
#include "results.h"

/* The summary as a NUL-terminated string ending in a newline. Transfer full
** (g_free). */
char *fab_json_summary(const FabResults *r);

/* Append a JSON string (escaped; NULL as "") or number (%.9g, locale-free;
** NaN and infinities as null) to s: for other JSON writers (compare). */
void fab_json_put_str(GString *s, const char *v);
void fab_json_put_num(GString *s, double v);

/* FCT percentile (nearest rank, p in (0,100]) over completed flows, seconds;
** 0 when none completed. */
double fab_results_fct_percentile(const FabResults *r, double p);

/* The text of the value at dotted `path` in JSON text: object members by
** name, array elements by index ("flows.fct_p99_s", "collectives.0.op").
** A pointer into `json` at the value's first character, or NULL if the path
** is absent or the text malformed. Cost: one pass over the text. */
const char *fab_json_value(const char *json, const char *path);

#endif

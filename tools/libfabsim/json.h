/*
** The JSON summary of a run (the contract in README "JSON summary"): one
** object with every field always present, written by walking
** fab_results_table (fields.h), with fixed number formats so identical runs
** print identical text apart from the wall-clock fields.
**
** And the reading side for programs that get the summary as text (fabsim
** sweep reads its children's): an index of every scalar by dotted path,
** built in one pass.
*/
#ifndef FAB_JSON_H
#define FAB_JSON_H

#include <glib.h>
#include "results.h"

/* The summary as a NUL-terminated string ending in a newline. Transfer full
** (g_free). */
char *fab_json_summary(const FabResults *r);

typedef struct FabJsonIndex FabJsonIndex;

/* Index the scalars of the JSON text: objects' members by name and arrays'
** elements by position, joined with dots ("flows.fct_p99_s",
** "collectives.0.op"). NULL when the text is not one well-formed JSON value
** (nested at most 64 deep). A member whose name holds a dot shares its path
** with a nested one (fabsim's own names have none); the later one wins.
** Cost: one pass over the text. Transfer full. */
FabJsonIndex *fab_json_index_new(const char *text);
void fab_json_index_free(FabJsonIndex *ix);

/* The text of the scalar at `path` (a number as written, "null", "true",
** a string with its quotes), or NULL when there is none. Transfer none. */
const char *fab_json_index_get(const FabJsonIndex *ix, const char *path);

/* Where the scalar at `path` begins in the text: its line and column (in
** characters), from 1; FALSE when there is none. */
gboolean fab_json_index_where(const FabJsonIndex *ix, const char *path, unsigned *line, unsigned *col);

#endif

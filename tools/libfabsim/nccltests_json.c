/* nccl-tests tables from a fabsim JSON summary (`fabsim run --json`,
** `fabsim-replay --json`), read as a measured log is. See nccltests.h. */
#include <math.h>
#include <string.h>
#include "json.h"
#include "nccltests.h"

/* A string member of the index, unquoted and interned (NULL: none, or not a string). */
static const char *json_str(const FabJsonIndex *ix, const char *path) {
  const char *v = fab_json_index_get(ix, path);
  if (!v || *v != '"') return NULL;
  char *s = g_strndup(v + 1, strlen(v) - 2);
  const char *in = g_intern_string(s);
  g_free(s);
  return in;
}

static double json_num(const FabJsonIndex *ix, const char *path) {
  const char *v = fab_json_index_get(ix, path);
  return v && *v != '"' && *v != 'n' ? g_ascii_strtod(v, NULL) : NAN;
}

GPtrArray *fab_nccltests_from_summary(const char *text, const char *path, GError **err) {
  FabJsonIndex *ix = fab_json_index_new(text);
  if (!ix) {
    g_set_error(err, FAB_NCCLTESTS_ERROR, 0, "%s: not JSON (a log of nccl-tests, or a JSON summary of fabsim)", path);
    return NULL;
  }
  GArray *colls = g_array_new(FALSE, TRUE, sizeof(FabCollRec));
  for (uint32_t k = 0;; k++) {
    char p[80];
#define AT(f) (g_snprintf(p, sizeof p, "collectives.%u." f, k), p)
    const char *op = json_str(ix, AT("op"));
    if (!op) break;
    double start = json_num(ix, AT("start_s")), end = json_num(ix, AT("end_s"));
    FabCollRec c = {op, json_str(ix, AT("algorithm")), json_str(ix, AT("protocol")), json_str(ix, AT("tag")),
                    (uint64_t)json_num(ix, AT("bytes")), (uint64_t)json_num(ix, AT("count")),
                    (uint32_t)json_num(ix, AT("dtype_bytes")), (uint32_t)json_num(ix, AT("ranks")),
                    (int32_t)json_num(ix, AT("root")), 0, (uint32_t)json_num(ix, AT("job")), 0,
                    isfinite(start) ? (fab_time_t)llround(start * 1e12) : 0,
                    isfinite(end) ? (fab_time_t)llround(end * 1e12) : 0};
#undef AT
    g_array_append_val(colls, c);
  }
  fab_json_index_free(ix);
  FabResults r = {.n_colls = colls->len, .colls = (FabCollRec *)(void *)colls->data};
  GPtrArray *tests = fab_nccltests_from_results(&r, NULL);
  g_array_free(colls, TRUE);
  for (guint i = 0; i < tests->len; i++) {
    FabNcclTestsTable *t = tests->pdata[i];
    t->line = t->name_line = 1;
    t->groups = 2;
    for (guint k = 0; k < t->rows->len; k++) g_array_index(t->rows, FabNcclTestsRow, k).line = k + 1;
  }
  if (!tests->len) {
    g_set_error(err, FAB_NCCLTESTS_ERROR, 0, "%s: a JSON summary without nccl-tests collectives (one of an "
                "nccl-tests workload is compared)", path);
    g_ptr_array_free(tests, TRUE);
    return NULL;
  }
  return tests;
}


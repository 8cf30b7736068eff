/* nccl-tests tables from a fabsim JSON summary (`fabsim run --json`,
** `fabsim-replay --json`), read as a measured log is. See nccltests.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"
#include "nccltests.h"

/* The reading of one summary: the index, the file's name, the first error. */
typedef struct Reader {
  FabJsonIndex *ix;
  const char *path;
  GError **err;
  gboolean ok;
} Reader;

/* The error for the value at `key` ("collectives.3.bytes"), named as
** "PATH:LINE:COL: collectives[3].bytes: ..." (only the first is kept). */
static void bad(Reader *rd, const char *key, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void bad(Reader *rd, const char *key, const char *fmt, ...) {
  if (!rd->ok) return;
  rd->ok = FALSE;
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  GString *name = g_string_new(NULL);
  for (const char *p = key; *p; p++) { /* collectives.3.bytes -> collectives[3].bytes */
    if (*p == '.' && g_ascii_isdigit(p[1])) {
      g_string_append_c(name, '[');
      for (p++; g_ascii_isdigit(*p); p++) g_string_append_c(name, *p);
      g_string_append_c(name, ']');
      p--;
    } else {
      g_string_append_c(name, *p);
    }
  }
  unsigned line, col;
  if (fab_json_index_where(rd->ix, key, &line, &col))
    g_set_error(rd->err, FAB_NCCLTESTS_ERROR, 0, "%s:%u:%u: %s: %s", rd->path, line, col, name->str, msg);
  else
    g_set_error(rd->err, FAB_NCCLTESTS_ERROR, 0, "%s: %s: %s", rd->path, name->str, msg);
  g_string_free(name, TRUE);
  g_free(msg);
}

/* A string member, unquoted and interned; NULL if absent or null (else an error). */
static const char *json_str(Reader *rd, const char *key) {
  const char *v = fab_json_index_get(rd->ix, key);
  if (!v || !strcmp(v, "null")) return NULL;
  if (*v != '"') {
    bad(rd, key, "expected a string, found %s", v);
    return NULL;
  }
  char *s = g_strndup(v + 1, strlen(v) - 2);
  const char *in = g_intern_string(s);
  g_free(s);
  return in;
}

/* A whole number from `min` (0 or -1) to `max`; 0 after an error. */
static int64_t json_int(Reader *rd, const char *key, int64_t min, int64_t max, const char *what) {
  const char *v = fab_json_index_get(rd->ix, key);
  char *end = NULL;
  errno = 0;
  long long x = v && (g_ascii_isdigit(*v) || *v == '-') ? strtoll(v, &end, 10) : 0;
  if (!v) bad(rd, key, "missing (expected %s)", what);
  else if (!end || *end || errno || x < min || x > max) bad(rd, key, "expected %s, found %s", what, v);
  return rd->ok ? x : 0;
}

/* A time in seconds, finite and >= 0; NAN for null when `null_ok`. */
static double json_time(Reader *rd, const char *key, gboolean null_ok) {
  const char *v = fab_json_index_get(rd->ix, key);
  if (v && null_ok && !strcmp(v, "null")) return NAN;
  char *end = NULL;
  errno = 0;
  double x = v && (g_ascii_isdigit(*v) || *v == '-') ? g_ascii_strtod(v, &end) : NAN;
  if (!v) bad(rd, key, "missing (expected a time in seconds)");
  else if (!end || *end || errno || !isfinite(x) || x < 0)
    bad(rd, key, "expected a time in seconds (a number >= 0%s), found %s", null_ok ? ", or null: not completed" : "", v);
  return rd->ok ? x : NAN;
}

/* Collective k, checked; FALSE at the end of the list or on an error. */
static gboolean read_coll(Reader *rd, uint32_t k, FabCollRec *c) {
  char p[80];
#define AT(f) (g_snprintf(p, sizeof p, "collectives.%u." f, k), p)
  if (!fab_json_index_get(rd->ix, AT("op"))) return FALSE;
  const char *op = json_str(rd, AT("op"));
  if (rd->ok && !op) bad(rd, p, "expected the collective's op (allreduce, allgather, ...), found null");
  const char *algo = json_str(rd, AT("algorithm")), *proto = json_str(rd, AT("protocol")), *tag = json_str(rd, AT("tag"));
  uint64_t bytes = (uint64_t)json_int(rd, AT("bytes"), 0, INT64_MAX, "a whole number of bytes");
  uint64_t count = (uint64_t)json_int(rd, AT("count"), 0, INT64_MAX, "a whole number of elements");
  uint32_t dtype = (uint32_t)json_int(rd, AT("dtype_bytes"), 0, 16, "an element size in bytes");
  uint32_t ranks = (uint32_t)json_int(rd, AT("ranks"), 0, UINT32_MAX, "a number of ranks");
  int32_t root = (int32_t)json_int(rd, AT("root"), -1, INT32_MAX, "a rank or -1");
  uint32_t job = (uint32_t)json_int(rd, AT("job"), 0, UINT32_MAX, "a job index");
  double start = json_time(rd, AT("start_s"), FALSE), end = json_time(rd, AT("end_s"), TRUE);
  if (rd->ok && end < start) bad(rd, p, "ends (%g s) before it starts (%g s)", end, start);
#undef AT
  if (!rd->ok) return FALSE;
  *c = (FabCollRec){op, algo, proto, tag, bytes, count, dtype, ranks, root, 0, job, 0,
                    (fab_time_t)llround(start * 1e12), isfinite(end) ? (fab_time_t)llround(end * 1e12) : 0};
  return TRUE;
}

/* The run's status is ok: a failed run is not a measurement. */
static void check_status(Reader *rd) {
  const char *status = json_str(rd, "status");
  if (!rd->ok || (status && !strcmp(status, "ok"))) return;
  if (!status) {
    bad(rd, "status", "missing (a fabsim JSON summary says \"status\": \"ok\" when its run completed)");
    return;
  }
  const char *why = fab_json_index_get(rd->ix, "failure"); /* quoted, as written */
  gboolean said = why && *why == '"';
  bad(rd, "status", "\"%s\": the run did not complete%s%s; its collectives are not a measurement", status,
      said ? ": " : "", said ? why : "");
}

GPtrArray *fab_nccltests_from_summary(const char *text, const char *path, GError **err) {
  Reader rd = {fab_json_index_new(text), path, err, TRUE};
  if (!rd.ix) {
    g_set_error(err, FAB_NCCLTESTS_ERROR, 0, "%s: not JSON (a log of nccl-tests, or a JSON summary of fabsim)", path);
    return NULL;
  }
  check_status(&rd);
  GArray *colls = g_array_new(FALSE, TRUE, sizeof(FabCollRec));
  FabCollRec c;
  for (uint32_t k = 0; rd.ok && read_coll(&rd, k, &c); k++) g_array_append_val(colls, c);
  fab_json_index_free(rd.ix);
  if (!rd.ok) {
    g_array_free(colls, TRUE);
    return NULL;
  }
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

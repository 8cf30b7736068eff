/* nccl-tests tables: simulated, measured, compared. See nccltests.h. */
#include "nccltests.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim/config.h"

G_DEFINE_QUARK(fab-nccltests-error-quark, fab_nccltests_error)

/* ---- conventions ------------------------------------------------------- */

/* The ops, their binaries, and whether nccl-tests prints a reduction op. */
static const struct {
  const char *op, *binary;
  gboolean reduces;         /* redop printed (sum); else "none" */
  gboolean rooted;          /* root printed; else -1 */
  gboolean split;           /* count is per rank: size = count x type x ranks */
} ops[] = {
  {"allreduce", "all_reduce_perf", TRUE, FALSE, FALSE},
  {"allgather", "all_gather_perf", FALSE, FALSE, TRUE},
  {"reduce-scatter", "reduce_scatter_perf", TRUE, FALSE, TRUE},
  {"broadcast", "broadcast_perf", FALSE, TRUE, FALSE},
  {"reduce", "reduce_perf", TRUE, TRUE, FALSE},
  {"all-to-all", "alltoall_perf", FALSE, FALSE, TRUE},
  {"send-recv", "sendrecv_perf", TRUE, FALSE, FALSE}, /* nccl-tests prints -o's op (sum) for sendrecv */
};

/* nccl-tests binaries fabsim does not model. */
static const char *const unmodelled[] = {"gather_perf", "scatter_perf", "hypercube_perf", "alltoallv_perf", NULL};

static int op_index(const char *op) {
  for (size_t i = 0; op && i < G_N_ELEMENTS(ops); i++)
    if (!strcmp(ops[i].op, op)) return (int)i;
  return -1;
}

double fab_nccltests_busbw_factor(const char *op, uint32_t n) { return fab_results_busbw_factor(op, n); }

const char *fab_nccltests_binary(const char *op) {
  int i = op_index(op);
  return i < 0 ? NULL : ops[i].binary;
}

static const struct {
  const char *name;
  uint32_t bytes;
} types[] = {
  {"float", 4}, {"half", 2}, {"bfloat16", 2}, {"double", 8}, {"int8", 1}, {"uint8", 1}, {"int32", 4},
  {"uint32", 4}, {"int64", 8}, {"uint64", 8}, {"f8e4m3", 1}, {"f8e5m2", 1},
};

/* fabsim's other spellings (workload.dtype) and nccl-tests' names for them */
static const struct {
  const char *alias, *name;
} type_aliases[] = {{"fp32", "float"}, {"fp16", "half"}, {"bf16", "bfloat16"}, {"fp8", "f8e4m3"}};

uint32_t fab_nccltests_type_bytes(const char *type) {
  for (size_t i = 0; type && i < G_N_ELEMENTS(types); i++)
    if (!strcmp(types[i].name, type)) return types[i].bytes;
  return 0;
}

const char *fab_nccltests_type_name(const char *dtype, uint32_t dtype_bytes) {
  if (dtype) {
    for (size_t i = 0; i < G_N_ELEMENTS(types); i++)
      if (!strcmp(types[i].name, dtype)) return types[i].name;
    for (size_t i = 0; i < G_N_ELEMENTS(type_aliases); i++)
      if (!strcmp(type_aliases[i].alias, dtype)) return type_aliases[i].name;
  }
  switch (dtype_bytes) {
  case 1: return "int8";
  case 2: return "bfloat16";
  case 8: return "double";
  default: return "float";
  }
}

void fab_nccltests_table_free(FabNcclTestsTable *t) {
  if (!t) return;
  if (t->rows) g_array_free(t->rows, TRUE);
  g_free(t);
}

static FabNcclTestsTable *table_new(void) {
  FabNcclTestsTable *t = g_new0(FabNcclTestsTable, 1);
  t->rows = g_array_new(FALSE, TRUE, sizeof(FabNcclTestsRow));
  t->root = -1;
  t->nthread = t->ngpus = t->warmup_iters = t->iters = -1;
  t->avg_busbw_GBps = NAN;
  return t;
}

/* ---- simulated tables ---------------------------------------------------- */

/* nccl-tests' time: from the first timed iteration's start to the last
** one's end, over the iterations (they run back to back, and may overlap
** from rank to rank); `span_us` is that span, NaN unless all completed. */
static void row_finish(FabNcclTestsRow *row, double span_us, const char *op, uint32_t ranks) {
  double t = row->completed == row->iters && row->iters ? span_us / row->iters : NAN;
  double algbw = t > 0 ? (double)row->bytes / t / 1e3 : t == 0 ? INFINITY : NAN; /* B/us / 1e3 = GB/s */
  double busbw = algbw * fab_nccltests_busbw_factor(op, ranks);
  for (int g = 0; g < 2; g++) {
    row->time_us[g] = t;
    row->algbw_GBps[g] = algbw;
    row->busbw_GBps[g] = busbw;
    row->wrong[g] = NAN;
  }
}

GPtrArray *fab_nccltests_from_results(const FabResults *r, const char *type) {
  GPtrArray *tables = g_ptr_array_new_with_free_func((GDestroyNotify)fab_nccltests_table_free);
  FabNcclTestsTable *t = NULL;
  FabNcclTestsRow *row = NULL;
  fab_time_t lo = FAB_TIME_MAX, hi = 0; /* the current row's first start, last end */
#define SPAN_US (lo < hi ? fab_time_to_s(hi - lo) * 1e6 : NAN)
  for (size_t i = 0; i < r->n_colls; i++) {
    const struct FabCollRec *c = &r->colls[i];
    if (!c->tag || strcmp(c->tag, "nccl-tests")) continue;
    gboolean same_table = t && t->job == c->job && t->ranks == c->ranks && !g_strcmp0(t->op, c->op);
    if (row && (!same_table || row->bytes != c->bytes)) {
      row_finish(row, SPAN_US, t->op, t->ranks);
      row = NULL;
    }
    if (!same_table) {
      t = table_new();
      int k = op_index(c->op);
      t->op = k >= 0 ? ops[k].op : c->op;
      t->binary = k >= 0 ? ops[k].binary : NULL;
      t->ranks = c->ranks;
      t->job = c->job;
      t->dtype_bytes = c->dtype_bytes;
      t->root = c->root;
      g_strlcpy(t->type, fab_nccltests_type_name(type, c->dtype_bytes), sizeof t->type);
      g_ptr_array_add(tables, t);
    }
    if (!row) {
      FabNcclTestsRow nr = {.bytes = c->bytes, .count = c->count, .root = c->root};
      int k = op_index(c->op);
      g_strlcpy(nr.type, t->type, sizeof nr.type);
      g_strlcpy(nr.redop, k >= 0 && !ops[k].reduces ? "none" : "sum", sizeof nr.redop);
      if (k >= 0 && !ops[k].rooted) nr.root = -1;
      g_array_append_val(t->rows, nr);
      row = &g_array_index(t->rows, FabNcclTestsRow, t->rows->len - 1);
      lo = FAB_TIME_MAX;
      hi = 0;
    }
    row->iters++;
    row->algorithm = c->algorithm;
    row->protocol = c->protocol;
    if (c->end) {
      row->completed++;
      lo = MIN(lo, c->start);
      hi = MAX(hi, c->end);
    }
  }
  if (row) row_finish(row, SPAN_US, t->op, t->ranks);
#undef SPAN_US
  return tables;
}

/* A number in `width` characters the way nccl-tests prints it: two
** decimals if they fit, else one, else none, else in exponent form. */
void fab_nccltests__num_str(char *buf, size_t n, double v, int width) {
  if (isnan(v)) {
    snprintf(buf, n, "%*s", width, "N/A");
    return;
  }
  int digits = 0;
  for (double p = 1; v >= p && digits < 40; p *= 10) digits++;
  if (digits < width - 2) snprintf(buf, n, "%*.2f", width, v);
  else if (digits < width - 1) snprintf(buf, n, "%*.1f", width, v);
  else if (digits < width + 1) snprintf(buf, n, "%*.0f", width, v);
  else snprintf(buf, n, "%*.1e", width, v);
}

/* nccl-tests' header, with its column widths ("# %10s  %12s  %8s  %6s  %6s",
** then per group "  %7s  %6s  %6s  %6s") and its trailing blanks; then
** fabsim's algorithm and protocol, where nccl-tests' -S puts its timestamp. */
static void header(GString *s) {
  g_string_append_printf(s, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n",
                         "", "", "", "", "");
  g_string_append_printf(s, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s  %12s  %8s\n", "size",
                         "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
                         "#wrong", "algorithm", "protocol");
  g_string_append_printf(s, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n", "(B)",
                         "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

double fab_nccltests_avg_busbw(const FabNcclTestsTable *t) {
  double sum = 0;
  unsigned n = 0;
  for (guint i = 0; i < t->rows->len; i++) {
    const FabNcclTestsRow *r = &g_array_index(t->rows, FabNcclTestsRow, i);
    for (int g = 0; g < 2; g++)
      if (isfinite(r->busbw_GBps[g])) sum += r->busbw_GBps[g], n++;
  }
  return n ? sum / n : NAN;
}

char *fab_nccltests_format(const FabNcclTestsTable *t) {
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "# Collective test starting: %s (simulated by fabsim: %s on %u ranks)\n",
                         t->binary ? t->binary : t->op, t->op, t->ranks);
  g_string_append(s, "#\n");
  header(s);
  for (guint i = 0; i < t->rows->len; i++) {
    const FabNcclTestsRow *r = &g_array_index(t->rows, FabNcclTestsRow, i);
    g_string_append_printf(s, "%12" G_GUINT64_FORMAT "  %12" G_GUINT64_FORMAT "  %8s  %6s  %6d", r->bytes, r->count,
                           r->type, r->redop, r->root);
    for (int g = 0; g < 2; g++) {
      char tm[32], alg[32], bus[32], wr[32];
      fab_nccltests__num_str(tm, sizeof tm, r->time_us[g], 7);
      fab_nccltests__num_str(alg, sizeof alg, r->algbw_GBps[g], 6);
      fab_nccltests__num_str(bus, sizeof bus, r->busbw_GBps[g], 6);
      if (isnan(r->wrong[g])) snprintf(wr, sizeof wr, "N/A");
      else snprintf(wr, sizeof wr, "%g", r->wrong[g]);
      g_string_append_printf(s, "  %7s  %6s  %6s  %6s", tm, alg, bus, wr);
    }
    g_string_append_printf(s, "  %12s  %8s\n", r->algorithm ? r->algorithm : "-", r->protocol ? r->protocol : "-");
  }
  double avg = fab_nccltests_avg_busbw(t);
  if (isnan(avg)) g_string_append_printf(s, "# %-20s : N/A\n", "Avg bus bandwidth");
  else g_string_append_printf(s, "# %-20s : %g \n", "Avg bus bandwidth", avg);
  g_string_append(s, "#\n");
  return g_string_free(s, FALSE);
}

/* ---- measured tables ----------------------------------------------------- */

static gboolean fail(GError **err, const char *name, unsigned line, const char *fmt, ...) G_GNUC_PRINTF(4, 5);
static gboolean fail(GError **err, const char *name, unsigned line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  if (line) g_set_error(err, FAB_NCCLTESTS_ERROR, 0, "%s:%u: %s", name, line, msg);
  else g_set_error(err, FAB_NCCLTESTS_ERROR, 0, "%s: %s", name, msg);
  g_free(msg);
  return FALSE;
}

static gboolean word_is(const char *w, size_t n, const char *name) { return strlen(name) == n && !memcmp(w, name, n); }

/* Which test a line names: the index in ops, -2 for an nccl-tests binary
** fabsim does not model (its name in *unknown), -1 for none. Names are whole
** words ("all_reduce_perf", "/opt/nccl-tests/build/all_reduce_perf",
** "all_reduce_perf_mpi"), so reduce_perf is not found in all_reduce_perf. */
static int find_binary(const char *line, const char **unknown) {
  const char *p = line;
  while (*p) {
    while (*p && !(g_ascii_isalnum(*p) || *p == '_')) p++;
    const char *w = p;
    while (*p && (g_ascii_isalnum(*p) || *p == '_')) p++;
    size_t n = (size_t)(p - w);
    if (n > 9 && !memcmp(w + n - 4, "_mpi", 4)) n -= 4;
    if (n <= 5 || memcmp(w + n - 5, "_perf", 5)) continue; /* "_perf" and a name */
    for (size_t i = 0; i < G_N_ELEMENTS(ops); i++)
      if (word_is(w, n, ops[i].binary)) return (int)i;
    for (size_t i = 0; unmodelled[i]; i++)
      if (word_is(w, n, unmodelled[i])) {
        *unknown = unmodelled[i];
        return -2;
      }
  }
  return -1;
}

/* Split `line` at blanks into at most `max` tokens (NUL-terminating them in
** place); returns the count, or max + 1 if there were more. */
static int split(char *line, char **tok, int max) {
  int n = 0;
  char *p = line;
  for (;;) {
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) return n;
    if (n == max) return max + 1;
    tok[n++] = p;
    while (*p && *p != ' ' && *p != '\t') p++;
    if (*p) *p++ = 0;
  }
}

/* A whole number up to INT64_MAX (nccl-tests prints sizes and counts as signed 64-bit). */
static gboolean parse_u64(const char *s, uint64_t *v) {
  if (!g_ascii_isdigit(*s)) return FALSE;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(s, &end, 10);
  if (*end || errno || x > INT64_MAX) return FALSE;
  *v = x;
  return TRUE;
}

/* A finite decimal number (non-negative unless `signed_ok`; no hex, inf or nan). */
static gboolean parse_num(const char *s, double *v, gboolean signed_ok) {
  char *end;
  if (s[strspn(s, "0123456789.eE+-")]) return FALSE;
  errno = 0;
  double x = g_ascii_strtod(s, &end);
  if (end == s || *end || errno || !isfinite(x) || (x < 0 && !signed_ok)) return FALSE;
  *v = x;
  return TRUE;
}

/* How a bad whole number is wrong, for messages. */
static const char *u64_why(const char *s) {
  if (*s == '-') return "negative";
  if (g_ascii_isdigit(*s) && !s[strspn(s, "0123456789")]) return "out of range (above 2^63 - 1)";
  return "not a whole number";
}

/* An integer after "key" in line (e.g. "nGpus 8", "iters: 20"), or -1. */
static int32_t int_after(const char *line, const char *key) {
  const char *p = strstr(line, key);
  if (!p) return -1;
  p += strlen(key);
  while (*p == ' ' || *p == ':') p++;
  if (!g_ascii_isdigit(*p)) return -1;
  return (int32_t)MIN(strtol(p, NULL, 10), INT32_MAX);
}

/* What a column holds. */
typedef enum {
  COL_SIZE, COL_COUNT, COL_TYPE, COL_REDOP, COL_ROOT, /* before the first time column */
  COL_TIME, COL_ALGBW, COL_BUSBW, COL_WRONG,          /* once per group */
  COL_NUMBER,                                         /* a number fabsim does not use */
  COL_WORD,                                           /* fabsim's algorithm and protocol */
  COL_STAMP,                                          /* -S: "2025-10-28 12:34:56", two tokens */
} ColKind;

/* Every column name nccl-tests' headers have had (nccltests.h says which
** version printed which), and the label errors give the column. */
static const struct {
  const char *name;
  ColKind kind;
  const char *label;
} col_names[] = {
  {"size", COL_SIZE, "size"}, {"bytes", COL_SIZE, "size"}, {"count", COL_COUNT, "count"}, {"N", COL_COUNT, "count"},
  {"type", COL_TYPE, "type"}, {"redop", COL_REDOP, "redop"}, {"op", COL_REDOP, "redop"}, {"root", COL_ROOT, "root"},
  {"time", COL_TIME, "time (us)"}, {"cputime", COL_TIME, "cputime (us)"}, {"algbw", COL_ALGBW, "algbw (GB/s)"},
  {"busbw", COL_BUSBW, "busbw (GB/s)"}, {"#wrong", COL_WRONG, "#wrong"}, {"error", COL_WRONG, "error"},
  {"res", COL_WRONG, "res"}, {"copybw", COL_NUMBER, "copybw"}, {"i_min", COL_NUMBER, "i_min"},
  {"i_max", COL_NUMBER, "i_max"}, {"i_p99", COL_NUMBER, "i_p99"}, {"i_cv%", COL_NUMBER, "i_cv%"},
  {"timestamp", COL_STAMP, "timestamp"}, {"algorithm", COL_WORD, "algorithm"}, {"protocol", COL_WORD, "protocol"},
};

#define MAX_COLS 32
#define MAX_TOK (MAX_COLS + 8) /* tokens of a row: a timestamp is two */

/* The columns of a table, as its header names them. */
typedef struct Layout {
  unsigned line;            /* the header's (0: no header yet) */
  int ncols, ntok;          /* columns; tokens in a row (a timestamp is two) */
  int groups;               /* 1 or 2 */
  double to_us;             /* the time unit in us: 1, or 1000 (1.x printed ms) */
  uint8_t col[MAX_COLS];    /* index into col_names */
  int8_t group[MAX_COLS];   /* 0 out-of-place, 1 in-place, -1 before the first time column */
  char names[256];          /* the header's names, for messages */
} Layout;

static const char *const group_name[2] = {"out-of-place", "in-place"};

/* The first name of a kind of column ("size", "algbw"). */
static const char *kind_name(ColKind k) {
  size_t c = 0;
  while (col_names[c].kind != k) c++;
  return col_names[c].name;
}

/* The layout of the header text `h` (modified), or FALSE + err. */
static gboolean layout_parse(Layout *L, char *h, const char *name, unsigned ln, GError **err) {
  char *tok[MAX_COLS + 1];
  int n = split(h, tok, MAX_COLS);
  if (n > MAX_COLS) return fail(err, name, ln, "the column header has more than %d columns", MAX_COLS);
  Layout l = {.line = ln, .ncols = n, .to_us = 1};
  unsigned seen[3] = {0}; /* the kinds before the first time column, in group 0, in group 1 */
  int g = -1;
  for (int i = 0; i < n; i++) {
    int c = 0;
    while (c < (int)G_N_ELEMENTS(col_names) && strcmp(col_names[c].name, tok[i])) c++;
    if (c == (int)G_N_ELEMENTS(col_names))
      return fail(err, name, ln, "column %d of the header: unknown column '%s' (fabsim reads size, count, type, "
                  "redop, root, time, algbw, busbw, #wrong or error, and the columns of nccl-tests' options)",
                  i + 1, tok[i]);
    ColKind k = col_names[c].kind;
    if (k == COL_TIME && ++g > 1)
      return fail(err, name, ln, "column %d of the header: a third 'time' column (nccl-tests prints an "
                  "out-of-place group and an in-place one)", i + 1);
    if ((k <= COL_ROOT) != (g < 0) && k < COL_WORD)
      return fail(err, name, ln, "column %d of the header: '%s' %s the first 'time' column", i + 1, tok[i],
                  g < 0 ? "before" : "after");
    if (k < COL_NUMBER && (seen[g + 1] & (1u << k)))
      return fail(err, name, ln, "column %d of the header: a second '%s'", i + 1, tok[i]);
    seen[g + 1] |= 1u << k;
    l.col[i] = (uint8_t)c;
    l.group[i] = (int8_t)g;
    l.ntok += k == COL_STAMP ? 2 : 1;
    if (!strcmp(tok[i], "bytes")) l.to_us = 1000; /* nccl-tests 1.x: "bytes N", time in ms */
    g_strlcat(l.names, i ? " " : "", sizeof l.names);
    g_strlcat(l.names, tok[i], sizeof l.names);
  }
  if (g < 0) return fail(err, name, ln, "the column header has no 'time' column");
  static const ColKind need[] = {COL_SIZE, COL_COUNT, COL_TYPE, COL_ALGBW, COL_BUSBW};
  for (int s = 0; s <= g + 1; s++)
    for (int i = s ? 3 : 0; i < (s ? 5 : 3); i++)
      if (!(seen[s] & (1u << need[i])))
        return fail(err, name, ln, "the column header has no '%s' column%s%s%s", kind_name(need[i]),
                    s ? " in the " : "", s ? group_name[s - 1] : "", s ? " group" : "");
  l.groups = g + 1;
  *L = l;
  return TRUE;
}

/* The reading of a log: the tables done, the one being filled, the last header. */
typedef struct Parser {
  const char *name;          /* of the log, for errors */
  GError **err;
  GPtrArray *tests;          /* FabNcclTestsTable, done */
  FabNcclTestsTable *t;      /* the current test */
  int max_rank;              /* its highest "#  Rank N" (-1: none) */
  Layout layout;             /* the last column header's (or nccl-tests' current columns) */
} Parser;

/* A row NCCL's log was printed into (NCCL_DEBUG=INFO on the same stdout) says so. */
static const char *info_hint(const char *raw) {
  return strstr(raw, "NCCL INFO") || strstr(raw, "NCCL WARN")
             ? " (NCCL's log was printed into this row: set NCCL_DEBUG_FILE to keep it apart)" : "";
}

/* One value of a group: a number or N/A (NAN). */
static gboolean parse_value(const Parser *ps, int i, int ti, const char *s, double *v, const char *raw,
                            unsigned ln) {
  ColKind k = col_names[ps->layout.col[i]].kind;
  if (!strcmp(s, "N/A")) {
    *v = NAN;
    return TRUE;
  }
  int g = ps->layout.group[i];
  gboolean count = !strcmp(col_names[ps->layout.col[i]].name, "#wrong"); /* "error" and "res" are deviations */
  if (count && parse_num(s, v, FALSE) && *v == floor(*v)) {
    if (*v == 0) return TRUE;
    return fail(ps->err, ps->name, ln, "column %d (%s #wrong): nccl-tests reported %s wrong results; the row is not "
                "a measurement (a data error: rerun once the fabric passes nccl-tests' check)", ti + 1,
                group_name[g], s);
  }
  if (count)
    return fail(ps->err, ps->name, ln, "column %d (%s #wrong): expected a count of wrong elements or N/A, found "
                "'%s'%s", ti + 1, group_name[g], s, info_hint(raw));
  if (parse_num(s, v, k == COL_WRONG || k == COL_NUMBER)) return TRUE;
  return fail(ps->err, ps->name, ln, "column %d (%s %s): expected a %snumber or N/A, found '%s'%s", ti + 1,
              group_name[g], k == COL_TIME && ps->layout.to_us > 1 ? "time (ms)" : col_names[ps->layout.col[i]].label,
              k == COL_WRONG || k == COL_NUMBER ? "" : "non-negative ", s, info_hint(raw));
}

/* A column before the first time column of a row. */
static gboolean parse_key(const Parser *ps, ColKind k, int ti, const char *s, FabNcclTestsRow *r, unsigned ln) {
  uint64_t root = 0;
  if (k == COL_SIZE && !parse_u64(s, &r->bytes))
    return fail(ps->err, ps->name, ln, "column %d (size): expected a whole number of bytes, found '%s' (%s)", ti + 1,
                s, u64_why(s));
  if (k == COL_COUNT && !parse_u64(s, &r->count))
    return fail(ps->err, ps->name, ln, "column %d (count): expected a whole number of elements, found '%s' (%s)",
                ti + 1, s, u64_why(s));
  if (k == COL_TYPE && !fab_nccltests_type_bytes(s))
    return fail(ps->err, ps->name, ln, "column %d (type): expected an nccl-tests type (float, half, bfloat16, "
                "double, int8, uint8, int32, uint32, int64, uint64, f8e4m3, f8e5m2), found '%s'", ti + 1, s);
  if (k == COL_REDOP && (strlen(s) >= sizeof r->redop || !g_ascii_isalpha(s[0])))
    return fail(ps->err, ps->name, ln, "column %d (redop): expected sum, prod, min, max, avg or none, found '%s'",
                ti + 1, s);
  if (k == COL_ROOT && strcmp(s, "-1") && !(parse_u64(s, &root) && root <= INT32_MAX))
    return fail(ps->err, ps->name, ln, "column %d (root): expected a rank or -1, found '%s'", ti + 1, s);
  if (k == COL_TYPE) g_strlcpy(r->type, s, sizeof r->type);
  if (k == COL_REDOP) g_strlcpy(r->redop, s, sizeof r->redop);
  if (k == COL_ROOT) r->root = strcmp(s, "-1") ? (int32_t)root : -1;
  return TRUE;
}

/* The row's type, redop and root are its table's. */
static gboolean same_as_first(const Parser *ps, const FabNcclTestsRow *r, unsigned ln) {
  const FabNcclTestsRow *first = &g_array_index(ps->t->rows, FabNcclTestsRow, 0);
  if (strcmp(first->type, r->type))
    return fail(ps->err, ps->name, ln, "type %s after %s (line %u): fabsim compares one type per test; run "
                "nccl-tests with -d %s", r->type, first->type, first->line, first->type);
  if (strcmp(first->redop, r->redop))
    return fail(ps->err, ps->name, ln, "redop %s after %s (line %u): fabsim compares one reduction per test; run "
                "nccl-tests with -o %s", r->redop, first->redop, first->line, first->redop);
  if (first->root != r->root)
    return fail(ps->err, ps->name, ln, "root %d after %d (line %u): fabsim compares one root per test; run "
                "nccl-tests with -r %d", r->root, first->root, first->line, first->root);
  return TRUE;
}

/* One result row (its n tokens, the line `raw`) into the current table. */
static gboolean parse_row(Parser *ps, char **tok, int n, const char *raw, unsigned ln) {
  const Layout *L = &ps->layout;
  if (n != L->ntok) {
    char *why = L->line ? g_strdup_printf("as the header on line %u names them: %s", L->line, L->names)
                        : g_strdup("no column header before it, so nccl-tests' current ones: size count type redop "
                                   "root, then time algbw busbw #wrong out-of-place and again in-place");
    fail(ps->err, ps->name, ln, "a result row has %d columns (%s), found %d%s%s", L->ntok, why, n,
         n > MAX_TOK ? " or more" : "", info_hint(raw));
    g_free(why);
    return FALSE;
  }
  FabNcclTestsRow r = {.line = ln, .root = -1, .redop = "none"}; /* no redop, no root column: the test has none */
  for (int g = 0; g < 2; g++) r.time_us[g] = r.algbw_GBps[g] = r.busbw_GBps[g] = r.wrong[g] = NAN;
  for (int i = 0, ti = 0; i < L->ncols; i++, ti++) {
    ColKind k = col_names[L->col[i]].kind;
    int g = L->group[i];
    double v = NAN; /* (parse_value sets it when it succeeds: GCC cannot tell without LTO) */
    if (k <= COL_ROOT) {
      if (!parse_key(ps, k, ti, tok[ti], &r, ln)) return FALSE;
    } else if (k == COL_STAMP) {
      ti++;
    } else if (k != COL_WORD) {
      if (!parse_value(ps, i, ti, tok[ti], &v, raw, ln)) return FALSE;
      if (k == COL_TIME) r.time_us[g] = v * L->to_us;
      else if (k == COL_ALGBW) r.algbw_GBps[g] = v;
      else if (k == COL_BUSBW) r.busbw_GBps[g] = v;
      else if (k == COL_WRONG) r.wrong[g] = v;
    }
  }
  FabNcclTestsTable *t = ps->t;
  if (t->rows->len && !same_as_first(ps, &r, ln)) return FALSE;
  if (!t->rows->len) {
    g_strlcpy(t->type, r.type, sizeof t->type);
    t->dtype_bytes = fab_nccltests_type_bytes(r.type);
    t->root = r.root;
    t->line = ln;
    t->header_line = L->line;
    t->groups = (uint32_t)L->groups;
    for (int i = 0; i < L->ncols; i++)
      if (col_names[L->col[i]].kind == COL_WRONG) t->check = col_names[L->col[i]].name;
  }
  g_array_append_val(t->rows, r);
  return TRUE;
}

/* The rank count of a finished table: from its device lines, else size = count x type x ranks. */
static void infer_ranks(FabNcclTestsTable *t, int max_rank) {
  if (max_rank >= 0) {
    t->ranks = (uint32_t)max_rank + 1;
    return;
  }
  if (!t->op || !ops[op_index(t->op)].split || !t->dtype_bytes) return;
  for (guint i = 0; i < t->rows->len && !t->ranks; i++) {
    const FabNcclTestsRow *r = &g_array_index(t->rows, FabNcclTestsRow, i);
    if (!r->count || r->count > r->bytes / t->dtype_bytes) continue; /* count x type above the size, or wrapping */
    uint64_t per_rank = r->count * t->dtype_bytes;
    if (r->bytes % per_rank == 0 && r->bytes / per_rank <= UINT32_MAX) t->ranks = (uint32_t)(r->bytes / per_rank);
  }
}

/* The current test is done (kept if it has rows); a new one begins. */
static void next_test(Parser *ps) {
  if (ps->t->rows->len) {
    infer_ranks(ps->t, ps->max_rank);
    g_ptr_array_add(ps->tests, ps->t);
  } else {
    fab_nccltests_table_free(ps->t);
  }
  ps->t = table_new();
  ps->max_rank = -1;
}

/* A line naming test k (-2: `unknown`, an nccl-tests binary fabsim does not model). */
static gboolean on_name(Parser *ps, int k, const char *unknown, gboolean starting, unsigned ln) {
  const char *binary = k >= 0 ? ops[k].binary : unknown;
  if (ps->t->rows->len && (starting || g_strcmp0(ps->t->binary, binary))) next_test(ps);
  FabNcclTestsTable *t = ps->t;
  if (t->binary && strcmp(t->binary, binary))
    return fail(ps->err, ps->name, ln, "a second test (%s after %s on line %u) before any result row: which one "
                "printed the rows? (delete the other's line)", binary, t->binary, t->name_line);
  if (!t->binary) {
    t->name_line = ln;
    t->binary = binary;
    t->op = k >= 0 ? ops[k].op : NULL;
  }
  return TRUE;
}

/* A column header line (q: after the '#'): "size count ..." or 1.x's "bytes N ...", with busbw. */
static gboolean is_header(const char *q) {
  if (!g_str_has_prefix(q, "size") && !g_str_has_prefix(q, "bytes")) return FALSE;
  if (!g_ascii_isspace(q[q[0] == 's' ? 4 : 5])) return FALSE;
  const char *b = strstr(q, "busbw");
  return b && g_ascii_isspace(b[-1]) && (!b[5] || g_ascii_isspace(b[5]));
}

/* What a launcher puts before each line of output, skipped: Open MPI's
** --tag-output "[1,0]<stdout>:", MPICH's -prepend-rank "[0] ", srun
** --label "0: ". */
static const char *strip_launcher(const char *p) {
  const char *q = p;
  while (*q == ' ') q++;
  const char *e = q + (*q == '[');
  while (g_ascii_isdigit(*e) || (*q == '[' && *e == ',')) e++;
  if (e == q + (*q == '[')) return p;
  if (*q == '[' && *e == ']') {
    if (g_str_has_prefix(e + 1, "<stdout>:") || g_str_has_prefix(e + 1, "<stderr>:")) return e + 10;
    return e[1] == ' ' ? e + 2 : p;
  }
  return *q != '[' && *e == ':' && (e[1] == ' ' || e[1] == '\t') ? e + 2 : p;
}

/* A line of the test's preamble or footer (q: after any '#'); FALSE + err on a bad header. */
static gboolean on_info(Parser *ps, const char *q, gboolean hash, unsigned ln, gboolean *used) {
  *used = TRUE;
  if (is_header(q)) {
    if (ps->t->rows->len) next_test(ps);
    char *h = g_strdup(q);
    gboolean ok = layout_parse(&ps->layout, h, ps->name, ln, ps->err);
    g_free(h);
    return ok;
  }
  if (hash && g_str_has_prefix(q, "Rank ")) { /* "#  Rank  3 Group  0 Pid  1234 on host device  3 [...] NVIDIA H100" */
    if (ps->t->rows->len) next_test(ps);
    int r = int_after(q, "Rank");
    if (r >= 0) ps->max_rank = MAX(ps->max_rank, r);
  } else if (g_str_has_prefix(q, "nThread ")) { /* 1.x printed it without the '#' */
    if (ps->t->rows->len) next_test(ps);
    FabNcclTestsTable *t = ps->t;
    t->nthread = int_after(q, "nThread");
    t->ngpus = int_after(q, "nGpus");
    t->warmup_iters = int_after(q, "warmup iters");
    const char *it = strstr(q, " iters:"); /* not "warmup iters:" */
    while (it && it > q && it[-1] == 'p') it = strstr(it + 1, " iters:");
    t->iters = it ? int_after(it, "iters") : -1;
  } else if (g_str_has_prefix(q, "Avg bus bandwidth")) {
    const char *c = strchr(q, ':');
    double v;
    char *end;
    if (c && (v = g_ascii_strtod(c + 1, &end), end != c + 1)) ps->t->avg_busbw_GBps = v;
  } else {
    *used = FALSE;
  }
  return TRUE;
}

/* A token that starts like a number: "8", "-8", "8.5", ".5", "+1". */
static gboolean numeric(const char *s) {
  if (*s == '+' || *s == '-') s++;
  return g_ascii_isdigit(*s) || (*s == '.' && g_ascii_isdigit(s[1]));
}

/* A result row (read, so that a bad value is an error, not noise): it
** starts with the size, then the count, two whole numbers; or with two
** tokens that look like numbers, and has the header's token count or a type
** where the header has it. */
static gboolean is_row(const Layout *L, char **tok, int n) {
  uint64_t a;
  if (n < 2) return FALSE;
  if (parse_u64(tok[0], &a) && parse_u64(tok[1], &a)) return TRUE;
  if (!numeric(tok[0]) && !numeric(tok[1])) return FALSE;
  if (n == L->ntok) return TRUE;
  for (int i = 0, ti = 0; i < L->ncols && ti < n; i++, ti++) {
    ColKind k = col_names[L->col[i]].kind;
    if (k == COL_TYPE) return fab_nccltests_type_bytes(tok[ti]) > 0;
    if (k == COL_STAMP) ti++;
  }
  return FALSE;
}

/* One line of the log. */
static gboolean parse_line(Parser *ps, char *l, unsigned ln) {
  size_t len = strlen(l);
  if (len && l[len - 1] == '\r') l[--len] = 0;
  const char *p = strip_launcher(l);
  while (*p == ' ' || *p == '\t') p++;
  gboolean hash = *p == '#', used;
  const char *q = p + hash;
  while (*q == ' ' || *q == '\t') q++;
  if (!on_info(ps, q, hash, ln, &used)) return FALSE;
  if (used) return TRUE;
  const char *unknown = NULL;
  if (hash) { /* the test: "# Collective test starting: all_reduce_perf" */
    if (!strstr(q, "Collective test starting")) return TRUE;
    int k = find_binary(q, &unknown);
    if (k != -1) return on_name(ps, k, unknown, TRUE, ln);
    if (ps->t->rows->len) next_test(ps); /* a test fabsim cannot name */
    return TRUE;
  }
  char *copy = g_strdup(p), *tok[MAX_TOK + 1];
  int n = split(copy, tok, MAX_TOK);
  gboolean ok = TRUE;
  if (is_row(&ps->layout, tok, n)) {
    ok = parse_row(ps, tok, n, p, ln);
  } else { /* a command line naming the test, or noise */
    int k = find_binary(p, &unknown);
    if (k != -1) ok = on_name(ps, k, unknown, FALSE, ln);
  }
  g_free(copy);
  return ok;
}

GPtrArray *fab_nccltests_parse_tests(const char *text, const char *name, GError **err) {
  Parser ps = {.name = name, .err = err, .max_rank = -1, .t = table_new(),
               .tests = g_ptr_array_new_with_free_func((GDestroyNotify)fab_nccltests_table_free)};
  char current[] = "size count type redop root time algbw busbw #wrong time algbw busbw #wrong";
  layout_parse(&ps.layout, current, name, 0, NULL);
  char **lines = g_strsplit(text, "\n", -1);
  gboolean ok = TRUE;
  unsigned i = 0;
  for (; ok && lines[i]; i++) ok = parse_line(&ps, lines[i], i + 1);
  g_strfreev(lines);
  if (ok) next_test(&ps);
  fab_nccltests_table_free(ps.t);
  if (ok && !ps.tests->len)
    ok = fail(err, name, MAX(i, 1), "no nccl-tests result rows (expected rows like '  1048576  262144  float  sum  "
              "-1  ...' under the '#  size  count  type  redop  root  time  algbw  busbw  #wrong' header)");
  if (!ok) {
    g_ptr_array_free(ps.tests, TRUE);
    return NULL;
  }
  return ps.tests;
}

GPtrArray *fab_nccltests_read_tests(const char *path, GError **err) {
  char *text = NULL;
  const char *why = NULL;
  if (!fab_cfg_read_file(path, FAB_CFG_FILE_MAX, &text, NULL, &why)) {
    g_set_error(err, FAB_NCCLTESTS_ERROR, 0, "%s: cannot read: %s", path, why);
    return NULL;
  }
  const char *p = text;
  while (g_ascii_isspace(*p)) p++;
  GPtrArray *tests = *p == '{' ? fab_nccltests_from_summary(text, path, err) : fab_nccltests_parse_tests(text, path, err);
  g_free(text);
  return tests;
}

/* "all_reduce_perf (allreduce, 6 sizes from line 17)" */
static void describe(GString *s, const FabNcclTestsTable *t) {
  g_string_append_printf(s, "%s (%s%s%u size%s from line %u)", t->binary ? t->binary : "a test that does not say "
                         "which it is", t->op ? t->op : "", t->op ? ", " : "", t->rows->len,
                         t->rows->len == 1 ? "" : "s", t->line);
}

/* The error for `op` (NULL: any) matching `n` of the tests (0 or 2+): it
** lists them (all if none matched) and names the line of the second one
** that matched (of the first test if none did). */
static FabNcclTestsTable *choose_fail(GPtrArray *tests, const char *op, guint n, const char *name, GError **err) {
  GString *s = g_string_new(NULL);
  unsigned listed = 0, line = 0;
  for (guint i = 0; i < tests->len; i++) {
    const FabNcclTestsTable *t = tests->pdata[i];
    if (op && n && g_strcmp0(t->op, op)) continue;
    g_string_append(s, listed ? ", " : "");
    describe(s, t);
    if (listed++ < (n ? 2u : 1u)) line = t->line;
  }
  if (!op) fail(err, name, line, "%u tests in this log: %s; choose one (fabsim compare --op OP)", n, s->str);
  else if (!n) fail(err, name, line, "no %s test in this log; it holds %s", op, s->str);
  else fail(err, name, line, "%u %s tests in this log: %s; give fabsim one", n, op, s->str);
  g_string_free(s, TRUE);
  return NULL;
}

FabNcclTestsTable *fab_nccltests_choose(GPtrArray *tests, const char *op, const char *name, GError **err) {
  guint n = 0, pick = 0;
  for (guint i = 0; i < tests->len; i++)
    if (!op || !g_strcmp0(((FabNcclTestsTable *)tests->pdata[i])->op, op)) n++, pick = i;
  const FabNcclTestsTable *only = tests->len == 1 ? tests->pdata[0] : NULL;
  if (only && only->binary && !only->op) {
    fail(err, name, only->name_line, "%s is not a test fabsim models (all_reduce_perf, all_gather_perf, "
         "reduce_scatter_perf, broadcast_perf, reduce_perf, alltoall_perf, sendrecv_perf)", only->binary);
    return NULL;
  }
  if (only && !only->op && op_index(op) >= 0) n = 1, pick = 0; /* the log does not say; the caller does */
  if (n != 1) return choose_fail(tests, op, n, name, err);
  FabNcclTestsTable *t = g_ptr_array_steal_index(tests, pick);
  if (!t->op && op) {
    t->op = ops[op_index(op)].op;
    t->binary = ops[op_index(op)].binary;
  }
  return t;
}

FabNcclTestsTable *fab_nccltests_parse_text(const char *text, const char *name, GError **err) {
  GPtrArray *tests = fab_nccltests_parse_tests(text, name, err);
  if (!tests) return NULL;
  FabNcclTestsTable *t = fab_nccltests_choose(tests, NULL, name, err);
  g_ptr_array_free(tests, TRUE);
  return t;
}

FabNcclTestsTable *fab_nccltests_parse_file(const char *path, GError **err) {
  GPtrArray *tests = fab_nccltests_read_tests(path, err);
  if (!tests) return NULL;
  FabNcclTestsTable *t = fab_nccltests_choose(tests, NULL, path, err);
  g_ptr_array_free(tests, TRUE);
  return t;
}

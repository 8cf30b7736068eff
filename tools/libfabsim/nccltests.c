/* nccl-tests tables: simulated, measured, compared. See nccltests.h. */
#include "nccltests.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static void num_str(char *buf, size_t n, double v, int width) {
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
** then per group "  %7s  %6s  %6s  %6s") and its trailing blanks. */
static void header(GString *s) {
  g_string_append_printf(s, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n",
                         "", "", "", "", "");
  g_string_append_printf(s, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n", "size", "count",
                         "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
                         "#wrong");
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
      num_str(tm, sizeof tm, r->time_us[g], 7);
      num_str(alg, sizeof alg, r->algbw_GBps[g], 6);
      num_str(bus, sizeof bus, r->busbw_GBps[g], 6);
      if (isnan(r->wrong[g])) snprintf(wr, sizeof wr, "N/A");
      else snprintf(wr, sizeof wr, "%g", r->wrong[g]);
      g_string_append_printf(s, "  %7s  %6s  %6s  %6s", tm, alg, bus, wr);
    }
    g_string_append_c(s, '\n');
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
    if (n > 5) { /* "_perf" and a name */
      char *word = g_strndup(w, n);
      if (g_str_has_suffix(word, "_mpi")) word[n - 4] = 0;
      for (size_t i = 0; i < G_N_ELEMENTS(ops); i++)
        if (!strcmp(word, ops[i].binary)) {
          g_free(word);
          return (int)i;
        }
      for (size_t i = 0; unmodelled[i]; i++)
        if (!strcmp(word, unmodelled[i])) {
          g_free(word);
          *unknown = unmodelled[i];
          return -2;
        }
      g_free(word);
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

static gboolean parse_u64(const char *s, uint64_t *v) {
  if (!g_ascii_isdigit(*s)) return FALSE;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(s, &end, 10);
  if (*end || errno) return FALSE;
  *v = x;
  return TRUE;
}

static gboolean parse_num(const char *s, double *v) {
  char *end;
  errno = 0;
  double x = g_ascii_strtod(s, &end);
  if (end == s || *end || errno || !isfinite(x) || x < 0) return FALSE;
  *v = x;
  return TRUE;
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

static const char *const group_name[2] = {"out-of-place", "in-place"};
static const char *const field_name[4] = {"time (us)", "algbw (GB/s)", "busbw (GB/s)", "#wrong"};

/* One result row (its tokens): FALSE + err naming what was expected. */
static gboolean parse_row(FabNcclTestsTable *t, char **tok, int n, int expect, const char *name, unsigned line,
                          GError **err) {
  static const char *const layout =
      "size count type redop root, then time algbw busbw #wrong out-of-place and again in-place";
  if (n != expect)
    return fail(err, name, line, "a result row has %d columns (%s), found %d%s", expect, layout,
                MIN(n, expect + 1), n > expect ? " or more" : "");
  FabNcclTestsRow r = {.line = line};
  uint64_t root;
  if (!parse_u64(tok[0], &r.bytes))
    return fail(err, name, line, "column 1 (size): expected bytes, found '%s'", tok[0]);
  if (!parse_u64(tok[1], &r.count))
    return fail(err, name, line, "column 2 (count): expected a number of elements, found '%s'", tok[1]);
  if (!fab_nccltests_type_bytes(tok[2]))
    return fail(err, name, line,
                "column 3 (type): expected an nccl-tests type (float, half, bfloat16, double, int8, uint8, int32, "
                "uint32, int64, uint64, f8e4m3, f8e5m2), found '%s'", tok[2]);
  g_strlcpy(r.type, tok[2], sizeof r.type);
  if (strlen(tok[3]) >= sizeof r.redop || !g_ascii_isalpha(tok[3][0]))
    return fail(err, name, line, "column 4 (redop): expected sum, prod, min, max, avg or none, found '%s'", tok[3]);
  g_strlcpy(r.redop, tok[3], sizeof r.redop);
  if (!strcmp(tok[4], "-1")) r.root = -1;
  else if (parse_u64(tok[4], &root) && root <= INT32_MAX) r.root = (int32_t)root;
  else return fail(err, name, line, "column 5 (root): expected a rank or -1, found '%s'", tok[4]);
  for (int g = 0; g < 2; g++) {
    double *dst[4] = {&r.time_us[g], &r.algbw_GBps[g], &r.busbw_GBps[g], &r.wrong[g]};
    for (int f = 0; f < 4; f++) {
      const char *s = tok[5 + g * 4 + f];
      if (f == 3 && !strcmp(s, "N/A")) {
        *dst[f] = NAN;
        continue;
      }
      if (!parse_num(s, dst[f]))
        return fail(err, name, line, "column %d (%s %s): expected a non-negative number%s, found '%s'",
                    6 + g * 4 + f, group_name[g], field_name[f], f == 3 ? " or N/A" : "", s);
    }
  }
  if (t->rows->len) {
    const FabNcclTestsRow *first = &g_array_index(t->rows, FabNcclTestsRow, 0);
    if (strcmp(first->type, r.type))
      return fail(err, name, line, "type %s after %s (line %u): fabsim compares one type per log; run nccl-tests "
                  "with -d %s", r.type, first->type, first->line, first->type);
    if (strcmp(first->redop, r.redop))
      return fail(err, name, line, "redop %s after %s (line %u): fabsim compares one reduction per log; run "
                  "nccl-tests with -o %s", r.redop, first->redop, first->line, first->redop);
    if (first->root != r.root)
      return fail(err, name, line, "root %d after %d (line %u): fabsim compares one root per log; run nccl-tests "
                  "with -r %d", r.root, first->root, first->line, first->root);
  } else {
    g_strlcpy(t->type, r.type, sizeof t->type);
    t->dtype_bytes = fab_nccltests_type_bytes(r.type);
    t->root = r.root;
  }
  g_array_append_val(t->rows, r);
  return TRUE;
}

FabNcclTestsTable *fab_nccltests_parse_text(const char *text, const char *name, GError **err) {
  FabNcclTestsTable *t = table_new();
  char **lines = g_strsplit(text, "\n", -1);
  unsigned op_line = 0;
  int max_rank = -1, columns = 13;
  gboolean ok = TRUE;
  for (unsigned i = 0; ok && lines[i]; i++) {
    unsigned ln = i + 1;
    char *l = lines[i];
    size_t len = strlen(l);
    if (len && l[len - 1] == '\r') l[--len] = 0;
    const char *p = l;
    while (*p == ' ' || *p == '\t') p++;
    /* the test: "# Collective test starting: X", or a command line before the rows */
    gboolean starting = p[0] == '#' && strstr(p, "Collective test starting") != NULL;
    const char *unknown = NULL;
    int k = starting || (p[0] != '#' && !t->rows->len) ? find_binary(p, &unknown) : -1;
    if (k == -2) {
      ok = fail(err, name, ln, "%s is not a test fabsim models (all_reduce_perf, all_gather_perf, "
                "reduce_scatter_perf, broadcast_perf, reduce_perf, alltoall_perf, sendrecv_perf)", unknown);
      break;
    }
    if (k >= 0 || starting) {
      if (starting && t->rows->len) {
        ok = fail(err, name, ln, "a second test starts after the rows of the first (line %u): give fabsim one test "
                  "per log", g_array_index(t->rows, FabNcclTestsRow, 0).line);
        break;
      }
      if (k >= 0 && t->op && strcmp(t->op, ops[k].op)) {
        ok = fail(err, name, ln, "a second test (%s after %s on line %u): give fabsim one test per log", ops[k].binary,
                  t->binary, op_line);
        break;
      }
      if (k >= 0 && !t->op) {
        op_line = ln;
        t->op = ops[k].op;
        t->binary = ops[k].binary;
      }
      if (k >= 0 || starting) continue;
    }
    if (p[0] == '#') {
      const char *q = p + 1;
      while (*q == ' ' || *q == '\t') q++;
      if (g_str_has_prefix(q, "Rank ")) { /* "#  Rank  3 Group  0 Pid  1234 on host device  3 [...] NVIDIA H100" */
        int r = int_after(q, "Rank");
        if (r >= 0) max_rank = MAX(max_rank, r);
      } else if (g_str_has_prefix(q, "nThread ")) {
        t->nthread = int_after(q, "nThread");
        t->ngpus = int_after(q, "nGpus");
        t->warmup_iters = int_after(q, "warmup iters");
        const char *it = strstr(q, " iters:"); /* not "warmup iters:" */
        while (it && it > q && it[-1] == 'p') it = strstr(it + 1, " iters:");
        t->iters = it ? int_after(it, "iters") : -1;
      } else if (g_str_has_prefix(q, "size ") || g_str_has_prefix(q, "size\t")) { /* the column header */
        int per_group = strstr(q, "i_min") ? 8 : 4;
        columns = 5 + 2 * per_group + (strstr(q, "timestamp") ? 2 : 0);
      } else if (g_str_has_prefix(q, "Avg bus bandwidth")) {
        const char *c = strchr(q, ':');
        double v;
        char *end;
        if (c && (v = g_ascii_strtod(c + 1, &end), end != c + 1)) t->avg_busbw_GBps = v;
      }
      continue;
    }
    /* a result row starts with the size, then the count: two whole numbers */
    char *copy = g_strdup(p);
    char *tok[32];
    int n = split(copy, tok, 31);
    uint64_t a, b;
    if (n >= 2 && parse_u64(tok[0], &a) && parse_u64(tok[1], &b)) {
      if (columns != 13)
        ok = fail(err, name, ln, "fabsim reads nccl-tests' plain table (13 columns); this log has per-iteration "
                  "or timestamp columns (-I, --report_timestamps): run nccl-tests without them");
      else
        ok = parse_row(t, tok, n, columns, name, ln, err);
    }
    g_free(copy);
  }
  unsigned nlines = g_strv_length(lines);
  g_strfreev(lines);
  if (ok && !t->rows->len)
    ok = fail(err, name, nlines ? nlines : 1, "no nccl-tests result rows (expected rows like '  1048576  262144  "
              "float  sum  -1  ...' under the '#  size  count  type  redop  root  time  algbw  busbw  #wrong' "
              "header)");
  if (!ok) {
    fab_nccltests_table_free(t);
    return NULL;
  }
  if (max_rank >= 0) {
    t->ranks = (uint32_t)max_rank + 1;
  } else if (t->op && ops[op_index(t->op)].split && t->dtype_bytes) {
    for (guint i = 0; i < t->rows->len && !t->ranks; i++) { /* size = count x type x ranks */
      const FabNcclTestsRow *r = &g_array_index(t->rows, FabNcclTestsRow, i);
      if (!r->count || r->count > r->bytes / t->dtype_bytes) continue; /* count x type above the size, or wrapping */
      uint64_t per_rank = r->count * t->dtype_bytes;
      if (r->bytes % per_rank == 0 && r->bytes / per_rank <= UINT32_MAX) t->ranks = (uint32_t)(r->bytes / per_rank);
    }
  }
  return t;
}

FabNcclTestsTable *fab_nccltests_parse_file(const char *path, GError **err) {
  char *text = NULL;
  GError *e = NULL;
  if (!g_file_get_contents(path, &text, NULL, &e)) {
    g_set_error(err, FAB_NCCLTESTS_ERROR, 0, "%s: cannot read: %s", path, e->message);
    g_error_free(e);
    return NULL;
  }
  FabNcclTestsTable *t = fab_nccltests_parse_text(text, path, err);
  g_free(text);
  return t;
}

/* ---- comparison ---------------------------------------------------------- */

void fab_nccltests_cmp_free(FabNcclTestsCmp *c) {
  if (!c) return;
  if (c->rows) g_array_free(c->rows, TRUE);
  g_free(c);
}

/* The simulated row of `bytes`: the same size, else the closest within 1%. */
static const FabNcclTestsRow *sim_row(const FabNcclTestsTable *sim, uint64_t bytes) {
  const FabNcclTestsRow *best = NULL;
  double best_d = 0.01;
  for (guint i = 0; sim && i < sim->rows->len; i++) {
    const FabNcclTestsRow *r = &g_array_index(sim->rows, FabNcclTestsRow, i);
    if (r->bytes == bytes) return r;
    double d = fabs((double)r->bytes - (double)bytes) / (double)MAX(bytes, 1);
    if (d <= best_d) best = r, best_d = d;
  }
  return best;
}

FabNcclTestsCmp *fab_nccltests_compare(const FabNcclTestsTable *meas, const FabNcclTestsTable *sim) {
  FabNcclTestsCmp *c = g_new0(FabNcclTestsCmp, 1);
  c->rows = g_array_new(FALSE, TRUE, sizeof(FabNcclTestsCmpRow));
  uint32_t n = meas->ranks ? meas->ranks : sim ? sim->ranks : 0;
  double factor = fab_nccltests_busbw_factor(meas->op ? meas->op : sim ? sim->op : NULL, n);
  double sum_t = 0, sum_b = 0;
  c->max_abs_time_err = c->max_abs_busbw_err = -1;
  for (guint i = 0; i < meas->rows->len; i++) {
    const FabNcclTestsRow *m = &g_array_index(meas->rows, FabNcclTestsRow, i);
    const FabNcclTestsRow *s = sim_row(sim, m->bytes);
    FabNcclTestsCmpRow r = {
      .bytes = m->bytes, .count = m->count,
      .meas_time_us = m->time_us[0], .meas_algbw_GBps = m->algbw_GBps[0], .meas_busbw_GBps = m->busbw_GBps[0],
      .sim_time_us = s ? s->time_us[0] : NAN, .sim_algbw_GBps = s ? s->algbw_GBps[0] : NAN,
      .sim_busbw_GBps = s ? s->busbw_GBps[0] : NAN, .algorithm = s ? s->algorithm : NULL,
      .protocol = s ? s->protocol : NULL, .time_err = NAN, .busbw_err = NAN,
    };
    if (m->bytes && isfinite(r.sim_time_us) && r.sim_time_us > 0 && r.meas_time_us > 0) {
      r.time_err = (r.sim_time_us - r.meas_time_us) / r.meas_time_us;
      double meas_bus = (double)m->bytes / r.meas_time_us / 1e3 * factor;
      r.busbw_err = meas_bus > 0 ? (r.sim_busbw_GBps - meas_bus) / meas_bus : NAN;
      c->matched++;
      sum_t += fabs(r.time_err);
      if (fabs(r.time_err) > c->max_abs_time_err) c->max_abs_time_err = fabs(r.time_err), c->max_time_err_bytes = m->bytes;
      if (isfinite(r.busbw_err)) {
        sum_b += fabs(r.busbw_err);
        if (fabs(r.busbw_err) > c->max_abs_busbw_err)
          c->max_abs_busbw_err = fabs(r.busbw_err), c->max_busbw_err_bytes = m->bytes;
      }
    }
    g_array_append_val(c->rows, r);
  }
  c->mean_abs_time_err = c->matched ? sum_t / c->matched : NAN;
  c->mean_abs_busbw_err = c->matched ? sum_b / c->matched : NAN;
  if (!c->matched) c->max_abs_time_err = c->max_abs_busbw_err = NAN;
  return c;
}

/* "1 KiB"-style size for the summary */
static char *size_str(uint64_t b) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && b >= 1024 && b % 1024 == 0) b /= 1024, u++;
  return g_strdup_printf("%" G_GUINT64_FORMAT " %s", b, unit[u]);
}

char *fab_nccltests_cmp_summary(const FabNcclTestsCmp *c) {
  if (!c->matched) return g_strdup_printf("no size was both measured and simulated (%u measured)", c->rows->len);
  char *st = size_str(c->max_time_err_bytes), *sb = size_str(c->max_busbw_err_bytes);
  char *s = g_strdup_printf("%u sizes: time error mean |%.1f%%|, max |%.1f%%| at %s; busbw error mean |%.1f%%|, "
                            "max |%.1f%%| at %s", c->matched, 100 * c->mean_abs_time_err, 100 * c->max_abs_time_err,
                            st, 100 * c->mean_abs_busbw_err, 100 * c->max_abs_busbw_err, sb);
  g_free(st);
  g_free(sb);
  return s;
}

static void pct_str(char *buf, size_t n, double v) {
  if (isnan(v)) snprintf(buf, n, "%8s", "-");
  else if (fabs(v) >= 99.995) snprintf(buf, n, "%+7.0f%%", 100 * v);
  else snprintf(buf, n, "%+7.1f%%", 100 * v);
}

char *fab_nccltests_cmp_format(const FabNcclTestsCmp *c) {
  GString *s = g_string_new(NULL);
  g_string_append(s, "#                  measured           simulated              error\n");
  g_string_append_printf(s, "# %10s  %8s  %7s  %8s  %7s  %8s  %8s  %s\n", "size", "time", "busbw", "time", "busbw",
                         "time", "busbw", "algorithm");
  g_string_append_printf(s, "# %10s  %8s  %7s  %8s  %7s  %8s  %8s\n", "(B)", "(us)", "(GB/s)", "(us)", "(GB/s)",
                         "(%)", "(%)");
  for (guint i = 0; i < c->rows->len; i++) {
    const FabNcclTestsCmpRow *r = &g_array_index(c->rows, FabNcclTestsCmpRow, i);
    char mt[32], mb[32], st[32], sb[32], et[32], eb[32];
    num_str(mt, sizeof mt, r->meas_time_us, 8);
    num_str(mb, sizeof mb, r->meas_busbw_GBps, 7);
    num_str(st, sizeof st, r->sim_time_us, 8);
    num_str(sb, sizeof sb, r->sim_busbw_GBps, 7);
    pct_str(et, sizeof et, r->time_err);
    pct_str(eb, sizeof eb, r->busbw_err);
    g_string_append_printf(s, "%12" G_GUINT64_FORMAT "  %8s  %7s  %8s  %7s  %8s  %8s", r->bytes, mt, mb, st, sb, et,
                           eb);
    if (r->algorithm) g_string_append_printf(s, "  %s/%s", r->algorithm, r->protocol ? r->protocol : "?");
    g_string_append_c(s, '\n');
  }
  char *sum = fab_nccltests_cmp_summary(c);
  g_string_append_printf(s, "# %s\n", sum);
  g_free(sum);
  return g_string_free(s, FALSE);
}

/* fabsim's text trace format: one operation per line. See trace.h and
** README ("Traces").
**
**   # a comment; blank lines are skipped
**   group NAME RANKS
**   ID RANK OP SIZE GROUP DEPS [name=TEXT] [tag=N] [root=N]
**
** OP is compute, a collective (allreduce, allgather, reduce-scatter,
** broadcast, reduce, all-to-all), send or recv. SIZE is a compute's time
** (1.5ms) or FLOPs (2.4e12flop), a collective's nccl-tests size, a
** transfer's bytes. GROUP is a collective's group (`-` or `world`: every
** rank; a name from a `group` line or the scenario; or ranks such as 0-3,8),
** a send's destination or a receive's source, `-` for compute. DEPS is `-`
** or ids of the same rank's operations, comma-separated. */
#include "trace.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sim/config.h"

#define TRACE_LINE_MAX 4096
#define TRACE_DEPS_MAX 65536

typedef struct Line {
  const char *file;
  uint32_t no;
  char *text;      /* the line as read (for columns) */
  char **f;        /* its fields */
  uint32_t nf;
} Line;

/* "file:line:col: field: message" for field k (k = nf: the line's end). */
static gboolean lfail(const Line *l, uint32_t k, const char *field, GError **err, const char *fmt, ...)
    G_GNUC_PRINTF(5, 6);
static gboolean lfail(const Line *l, uint32_t k, const char *field, GError **err, const char *fmt, ...) {
  size_t col = strlen(l->text) + 1;
  if (k < l->nf) {
    const char *p = l->text;
    for (uint32_t j = 0; j <= k; j++) { /* the k-th run of non-blanks */
      while (*p == ' ' || *p == '\t') p++;
      if (j == k) break;
      while (*p && *p != ' ' && *p != '\t') p++;
    }
    col = (size_t)(p - l->text) + 1;
  }
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  char *one = fab_cfg_one_line(msg);
  g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_VALUE, "%s:%u:%zu: %s: %s", l->file, l->no, col, field, one);
  g_free(one);
  g_free(msg);
  return FALSE;
}

static gboolean parse_u64(const char *s, uint64_t *v) {
  if (!*s || !g_ascii_isdigit(*s)) return FALSE;
  char *end;
  errno = 0;
  *v = g_ascii_strtoull(s, &end, 10);
  return !*end && !errno;
}

/* "0-3,8,10-11" into ranks below nranks, no repeats. */
static uint32_t *parse_ranks(const Line *l, uint32_t k, uint32_t nranks, uint32_t *n, GError **err) {
  GArray *a = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  uint8_t *seen = g_new0(uint8_t, nranks);
  char **parts = g_strsplit(l->f[k], ",", -1);
  gboolean ok = TRUE;
  for (char **p = parts; ok && *p; p++) {
    char **ab = g_strsplit(*p, "-", 2);
    uint64_t lo, hi;
    if (!ab[0] || !parse_u64(ab[0], &lo) || (ab[1] ? !parse_u64(ab[1], &hi) : ((hi = lo), FALSE))) /* "": none */
      ok = lfail(l, k, "group", err, "'%s' is not a rank or a range A-B", *p);
    else if (hi < lo || hi >= nranks)
      ok = lfail(l, k, "group", err, "'%s': ranks go from 0 to %u here", *p, nranks - 1);
    for (uint64_t r = lo; ok && r <= hi; r++) {
      if (seen[r]) ok = lfail(l, k, "group", err, "rank %" G_GUINT64_FORMAT " listed twice", r);
      seen[r] = 1;
      uint32_t u = (uint32_t)r;
      g_array_append_val(a, u);
    }
    g_strfreev(ab);
  }
  g_strfreev(parts);
  g_free(seen);
  *n = a->len;
  if (!ok) {
    g_array_free(a, TRUE);
    return NULL;
  }
  return (uint32_t *)(void *)g_array_free(a, FALSE);
}

static gboolean read_group_line(FabTrace *t, const Line *l, GError **err) {
  if (l->nf != 3) return lfail(l, MIN(l->nf, 3u), "group", err, "expected: group NAME RANKS");
  if (fab_trace_group_find(t, l->f[1]) != FAB_TR_WORLD)
    return lfail(l, 1, "group", err, "a second group named '%s'", l->f[1]);
  if (g_str_equal(l->f[1], "world") || g_str_equal(l->f[1], "-") || g_ascii_isdigit(l->f[1][0]))
    return lfail(l, 1, "group", err, "'%s' cannot name a group (it reads as ranks or as every rank)", l->f[1]);
  uint32_t n;
  uint32_t *r = parse_ranks(l, 2, t->nranks, &n, err);
  if (!r) return FALSE;
  fab_trace_group_add(t, l->f[1], r, n);
  return TRUE;
}

/* A collective's group field: -, world, a name, or ranks (made a group named by them). */
static gboolean read_group_field(FabTrace *t, const Line *l, uint32_t *g, GError **err) {
  const char *s = l->f[4];
  if (g_str_equal(s, "-") || g_str_equal(s, "world")) {
    *g = FAB_TR_WORLD;
    return TRUE;
  }
  *g = fab_trace_group_find(t, s);
  if (*g != FAB_TR_WORLD) return TRUE;
  if (!g_ascii_isdigit(s[0]))
    return lfail(l, 4, "group", err, "no group named '%s' (define it with a `group` line or in workload.groups)", s);
  uint32_t n;
  uint32_t *r = parse_ranks(l, 4, t->nranks, &n, err);
  if (!r) return FALSE;
  *g = fab_trace_group_add(t, s, r, n);
  return TRUE;
}

static gboolean read_size(FabTrNode *nd, const Line *l, GError **err) {
  const char *s = l->f[3];
  GError *e = NULL;
  if (nd->kind == FAB_TR_COMPUTE) {
    size_t len = strlen(s);
    if (len > 4 && g_ascii_strcasecmp(s + len - 4, "flop") == 0) {
      char *num = g_strndup(s, len - 4);
      gboolean ok = fab_parse_double(num, &nd->flops, NULL) && nd->flops >= 0 && nd->flops < 1e30;
      g_free(num);
      return ok ? TRUE : lfail(l, 3, "size", err, "'%s' is not a FLOP count (such as 2.4e12flop)", s);
    }
    if (!fab_parse_time(s, &nd->dur, &e) || nd->dur > 1000000000000000000ull) {
      gboolean r = lfail(l, 3, "size", err, "a compute's size is a time (1.5ms) or FLOPs (2.4e12flop): %s",
                         e ? e->message : "too long");
      g_clear_error(&e);
      return r;
    }
    nd->has_dur = true;
    return TRUE;
  }
  if (!fab_parse_size(s, &nd->bytes, &e) || nd->bytes < 1 || nd->bytes > FAB_BYTES_MAX) {
    gboolean r = lfail(l, 3, "size", err, "%s", e ? e->message : "a size from 1 B to 1 PiB");
    g_clear_error(&e);
    return r;
  }
  return TRUE;
}

/* name= on any line; tag= on a send or recv (what pairs them); root= on a
** broadcast or reduce. Each at most once. */
static gboolean read_options(FabTrace *t, FabTrNode *nd, const Line *l, GError **err) {
  unsigned seen = 0;
  for (uint32_t k = 6; k < l->nf; k++) {
    const char *eq = strchr(l->f[k], '=');
    char *key = eq ? g_strndup(l->f[k], (size_t)(eq - l->f[k])) : g_strdup(l->f[k]);
    uint64_t v = 0;
    unsigned bit = g_str_equal(key, "name") ? 1u : g_str_equal(key, "tag") ? 2u : g_str_equal(key, "root") ? 4u : 0u;
    bool p2p = nd->kind == FAB_TR_SEND || nd->kind == FAB_TR_RECV;
    bool rooted = nd->kind == FAB_TR_COLL && (nd->op == FAB_COLL_BROADCAST || nd->op == FAB_COLL_REDUCE);
    gboolean ok = eq != NULL;
    if (!ok) ok = lfail(l, k, key, err, "expected KEY=VALUE (name, tag or root)");
    else if (seen & bit) ok = lfail(l, k, key, err, "%s is given twice on this line", key);
    else if (bit == 2 && !p2p) ok = lfail(l, k, key, err, "tag pairs a send with its recv, not a %s", l->f[2]);
    else if (bit == 4 && !rooted) ok = lfail(l, k, key, err, "root is for broadcast and reduce, not %s", l->f[2]);
    else if (g_str_equal(key, "name")) nd->name = g_string_chunk_insert_const(t->strs, eq + 1);
    else if (g_str_equal(key, "tag") || g_str_equal(key, "root")) {
      if (!parse_u64(eq + 1, &v) || (key[0] == 'r' && v > UINT32_MAX))
        ok = lfail(l, k, key, err, "'%s' is not a number", eq + 1);
      else if (key[0] == 't') nd->tag = v;
      else nd->root = (uint32_t)v;
    } else {
      ok = lfail(l, k, key, err, "unknown option '%s' (expected name, tag or root)", key);
    }
    seen |= bit;
    g_free(key);
    if (!ok) return FALSE;
  }
  return TRUE;
}

static const char *const text_ops[] = {"compute", "send", "recv", NULL};

static gboolean read_op_line(FabTrace *t, const Line *l, GArray *deps, GError **err) {
  if (l->nf < 6) return lfail(l, l->nf, "line", err, "expected: ID RANK OP SIZE GROUP DEPS [name=..] [tag=..] [root=..]");
  FabTrNode nd = {0};
  uint64_t rank;
  if (!parse_u64(l->f[0], &nd.id)) return lfail(l, 0, "id", err, "'%s' is not a node id (a number)", l->f[0]);
  if (!parse_u64(l->f[1], &rank) || rank >= t->nranks)
    return lfail(l, 1, "rank", err, "'%s' is not a rank (0..%u)", l->f[1], t->nranks - 1);
  nd.rank = (uint32_t)rank;
  int op = -1;
  for (int k = 0; fab_coll_op_names[k]; k++)
    if (g_str_equal(l->f[2], fab_coll_op_names[k]) && k != FAB_COLL_SEND_RECV) op = k;
  if (op >= 0) {
    nd.kind = FAB_TR_COLL;
    nd.op = (uint8_t)op;
  } else if (g_str_equal(l->f[2], "compute")) nd.kind = FAB_TR_COMPUTE;
  else if (g_str_equal(l->f[2], "send")) nd.kind = FAB_TR_SEND;
  else if (g_str_equal(l->f[2], "recv")) nd.kind = FAB_TR_RECV;
  else
    return lfail(l, 2, "op", err, "unknown op '%s' (expected %s, %s, %s, allreduce, allgather, reduce-scatter, "
                 "broadcast, reduce or all-to-all)", l->f[2], text_ops[0], text_ops[1], text_ops[2]);
  if (!read_size(&nd, l, err)) return FALSE;
  if (nd.kind == FAB_TR_COLL) {
    if (!read_group_field(t, l, &nd.group, err)) return FALSE;
  } else if (nd.kind == FAB_TR_COMPUTE) {
    if (!g_str_equal(l->f[4], "-")) return lfail(l, 4, "group", err, "a compute has no group: write -");
  } else {
    uint64_t peer;
    if (!parse_u64(l->f[4], &peer) || peer >= t->nranks)
      return lfail(l, 4, "group", err, "a %s's group is its peer rank (0..%u), not '%s'", l->f[2], t->nranks - 1,
                   l->f[4]);
    nd.group = (uint32_t)peer;
  }
  g_array_set_size(deps, 0);
  if (!g_str_equal(l->f[5], "-")) {
    char **ids = g_strsplit(l->f[5], ",", -1);
    gboolean ok = TRUE;
    for (char **p = ids; ok && *p; p++) {
      uint64_t id;
      if (!parse_u64(*p, &id)) ok = lfail(l, 5, "deps", err, "'%s' is not a node id", *p);
      else if (deps->len >= TRACE_DEPS_MAX) ok = lfail(l, 5, "deps", err, "more than %u dependencies", TRACE_DEPS_MAX);
      else g_array_append_val(deps, id);
    }
    g_strfreev(ids);
    if (!ok) return FALSE;
  }
  if (!read_options(t, &nd, l, err)) return FALSE;
  char *where = g_strdup_printf("%s:%u", l->file, l->no);
  nd.where = g_string_chunk_insert(t->strs, where);
  g_free(where);
  fab_trace_add(t, &nd, (const uint64_t *)(void *)deps->data, deps->len);
  return TRUE;
}

gboolean fab_trace_read_text(FabTrace *t, const char *path, GError **err) {
  char *text = NULL;
  size_t len = 0;
  const char *why = NULL;
  if (!fab_cfg_read_file(path, FAB_TRACE_FILE_MAX, &text, &len, &why)) {
    g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_IO, "%s: cannot read the trace: %s", path, why);
    return FALSE;
  }
  if (memchr(text, 0, len)) {
    g_free(text);
    return g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_PARSE, "%s: a NUL byte: not a text trace", path), FALSE;
  }
  char **lines = g_strsplit(text, "\n", -1);
  g_free(text);
  GArray *deps = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  gboolean ok = TRUE;
  uint32_t nlines = g_strv_length(lines);
  for (uint32_t i = 0; ok && i < nlines; i++) {
    char *s = lines[i], *hash = strchr(s, '#');
    if (hash) *hash = 0;
    size_t n = strlen(s);
    if (n && s[n - 1] == '\r') s[--n] = 0;
    Line l = {path, i + 1, s, NULL, 0};
    if (n > TRACE_LINE_MAX) {
      ok = lfail(&l, 0, "line", err, "longer than %u characters", TRACE_LINE_MAX);
      break;
    }
    char *copy = g_strdup(s);
    for (char *p = copy; *p; p++) if (*p == '\t') *p = ' ';
    char **raw = g_strsplit(copy, " ", -1), **f = g_new0(char *, g_strv_length(raw) + 1);
    uint32_t nf = 0;
    for (char **p = raw; *p; p++) if (**p) f[nf++] = *p;
    l.f = f;
    l.nf = nf;
    if (nf == 0) ok = TRUE;
    else if (g_str_equal(f[0], "group")) ok = read_group_line(t, &l, err);
    else ok = read_op_line(t, &l, deps, err);
    g_free(f);
    g_strfreev(raw);
    g_free(copy);
  }
  g_strfreev(lines);
  g_array_free(deps, TRUE);
  if (ok && !t->nodes->len)
    return g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_VALUE, "%s: the trace has no operations", path), FALSE;
  return ok;
}

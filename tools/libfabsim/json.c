/* The JSON summary, and an index for reading one back. See json.h. */
#include "json.h"
#include <string.h>

char *fab_json_summary(const FabResults *r) {
  GString *s = g_string_new(NULL);
  fab_fields_json(s, &fab_results_table, r);
  g_string_append_c(s, '\n');
  return g_string_free(s, FALSE);
}

/* ---- reading ------------------------------------------------------------- */

struct FabJsonIndex {
  GHashTable *at;    /* path -> scalar text (owned) */
  GHashTable *where; /* path -> its line and column, guint[2] (owned) */
};

typedef struct Parser {
  const char *p;
  GString *path;
  GHashTable *at, *where;
  int depth;
  const char *seen, *bol; /* counted up to; the start of its line */
  unsigned line;          /* of seen */
} Parser;

static void ws(Parser *ps) {
  while (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\t' || *ps->p == '\r') ps->p++;
}

/* Past the string at p ('"'); FALSE if unterminated, or it holds a raw
** control character or an escape JSON does not have. */
static gboolean skip_string(Parser *ps) {
  for (ps->p++; *ps->p; ps->p++) {
    unsigned char c = (unsigned char)*ps->p;
    if (c < 0x20) return FALSE;
    if (c == '"') {
      ps->p++;
      return TRUE;
    }
    if (c != '\\') continue;
    c = (unsigned char)*++ps->p;
    if (c == 'u') {
      for (int i = 1; i <= 4; i++)
        if (!g_ascii_isxdigit(ps->p[i])) return FALSE;
      ps->p += 4;
    } else if (!c || !strchr("\"\\/bfnrt", c)) {
      return FALSE;
    }
  }
  return FALSE;
}

/* Past a JSON number at p: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; FALSE if there is none. */
static gboolean skip_number(Parser *ps) {
  const char *p = ps->p;
  if (*p == '-') p++;
  if (*p == '0') p++;
  else if (g_ascii_isdigit(*p)) while (g_ascii_isdigit(*p)) p++;
  else return FALSE;
  if (*p == '.') {
    if (!g_ascii_isdigit(*++p)) return FALSE;
    while (g_ascii_isdigit(*p)) p++;
  }
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-') p++;
    if (!g_ascii_isdigit(*p)) return FALSE;
    while (g_ascii_isdigit(*p)) p++;
  }
  ps->p = p;
  return TRUE;
}

/* Past true, false or null at p; FALSE if none is there. */
static gboolean skip_literal(Parser *ps) {
  static const char *const lit[] = {"true", "false", "null"};
  for (int i = 0; i < 3; i++) {
    size_t n = strlen(lit[i]);
    if (strncmp(ps->p, lit[i], n) == 0) {
      ps->p += n;
      return TRUE;
    }
  }
  return FALSE;
}

static gboolean value(Parser *ps);

/* Parse a member or element under `key` (appended to the path). */
static gboolean child(Parser *ps, const char *key, size_t len) {
  size_t keep = ps->path->len;
  if (keep) g_string_append_c(ps->path, '.');
  g_string_append_len(ps->path, key, (gssize)len);
  gboolean ok = value(ps);
  g_string_truncate(ps->path, keep);
  return ok;
}

static gboolean object(Parser *ps) {
  ps->p++;
  ws(ps);
  if (*ps->p == '}') return ps->p++, TRUE;
  for (;;) {
    ws(ps);
    if (*ps->p != '"') return FALSE;
    const char *k = ps->p + 1;
    if (!skip_string(ps)) return FALSE;
    size_t kn = (size_t)(ps->p - 1 - k);
    ws(ps);
    if (*ps->p++ != ':') return FALSE;
    if (!child(ps, k, kn)) return FALSE;
    ws(ps);
    if (*ps->p == ',') ps->p++;
    else if (*ps->p == '}') return ps->p++, TRUE;
    else return FALSE;
  }
}

static gboolean array(Parser *ps) {
  ps->p++;
  ws(ps);
  if (*ps->p == ']') return ps->p++, TRUE;
  for (unsigned i = 0;; i++) {
    char idx[16];
    int n = g_snprintf(idx, sizeof idx, "%u", i);
    if (!child(ps, idx, (size_t)n)) return FALSE;
    ws(ps);
    if (*ps->p == ',') ps->p++;
    else if (*ps->p == ']') return ps->p++, TRUE;
    else return FALSE;
  }
}

static gboolean value(Parser *ps) {
  ws(ps);
  if (++ps->depth > 64) return FALSE;
  gboolean ok;
  if (*ps->p == '{') {
    ok = object(ps);
  } else if (*ps->p == '[') {
    ok = array(ps);
  } else {
    const char *a = ps->p;
    ok = *ps->p == '"' ? skip_string(ps) : *ps->p == '-' || g_ascii_isdigit(*ps->p) ? skip_number(ps) : skip_literal(ps);
    if (ok) {
      g_hash_table_replace(ps->at, g_strdup(ps->path->str), g_strndup(a, (gsize)(ps->p - a)));
      for (; ps->seen < a; ps->seen++)
        if (*ps->seen == '\n') ps->line++, ps->bol = ps->seen + 1;
      guint *lc = g_new(guint, 2);
      lc[0] = ps->line;
      lc[1] = (guint)(g_utf8_pointer_to_offset(ps->bol, a) + 1);
      g_hash_table_replace(ps->where, g_strdup(ps->path->str), lc);
    }
  }
  ps->depth--;
  return ok;
}

FabJsonIndex *fab_json_index_new(const char *text) {
  if (!text) return NULL;
  Parser ps = {text, g_string_new(NULL), g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free),
               g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free), 0, text, text, 1};
  gboolean ok = value(&ps);
  ws(&ps);
  g_string_free(ps.path, TRUE);
  if (!ok || *ps.p) {
    g_hash_table_destroy(ps.at);
    g_hash_table_destroy(ps.where);
    return NULL;
  }
  FabJsonIndex *ix = g_new(FabJsonIndex, 1);
  ix->at = ps.at;
  ix->where = ps.where;
  return ix;
}

void fab_json_index_free(FabJsonIndex *ix) {
  if (!ix) return;
  g_hash_table_destroy(ix->at);
  g_hash_table_destroy(ix->where);
  g_free(ix);
}

const char *fab_json_index_get(const FabJsonIndex *ix, const char *path) {
  return ix && path ? g_hash_table_lookup(ix->at, path) : NULL;
}

gboolean fab_json_index_where(const FabJsonIndex *ix, const char *path, unsigned *line, unsigned *col) {
  const guint *lc = ix && path ? g_hash_table_lookup(ix->where, path) : NULL;
  if (!lc) return FALSE;
  *line = lc[0];
  *col = lc[1];
  return TRUE;
}

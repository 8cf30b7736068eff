/* The configuration tree: nodes, locations, errors and --set overrides. See
** config.h; the choices made where config.h leaves room are listed there too.
** YAML reading and includes are in cfg_yaml.c, units in cfg_value.c, schema
** tables in cfg_schema.c. */
#include "cfg_int.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

G_DEFINE_QUARK(fab-cfg-error-quark, fab_cfg_error)

/* ---- errors ------------------------------------------------------------ */

char *fab_cfg_one_line(const char *s) {
  GString *o = g_string_sized_new(strlen(s));
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '\n') g_string_append(o, "\\n");
    else if (*c == '\t') g_string_append(o, "\\t");
    else if (*c == '\r') g_string_append(o, "\\r");
    else if (*c < 0x20 || *c == 0x7f) g_string_append_printf(o, "\\x%02x", *c);
    else g_string_append_c(o, (char)*c);
  }
  return g_string_free(o, FALSE);
}

static void verr(GError **err, int code, const char *where, const char *path, const char *fmt,
                 va_list ap) {
  if (!err) return;
  char *msg = g_strdup_vprintf(fmt, ap);
  GString *s = g_string_new(NULL);
  if (where && *where) g_string_append_printf(s, "%s: ", where);
  if (path && *path) g_string_append_printf(s, "%s: ", path);
  g_string_append(s, msg);
  char *line = fab_cfg_one_line(s->str); /* a key or value with a newline keeps the message on one line */
  g_set_error_literal(err, FAB_CFG_ERROR, code, line);
  g_free(line);
  g_string_free(s, TRUE);
  g_free(msg);
}

gboolean fab_cfg__err_at(GError **err, int code, const char *where, const char *path,
                       const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verr(err, code, where, path, fmt, ap);
  va_end(ap);
  return FALSE;
}

/* Where an error about node n is reported: a map given under a key is
** reported at its key (the map's own mark is its first entry). */
static const char *report_at(const FabCfgNode *n) {
  if (!n) return NULL;
  return n->kind == FAB_CFG_NODE_MAP && n->keywhere ? n->keywhere : n->where;
}

gboolean fab_cfg__node_err(const FabCfgNode *n, GError **err, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verr(err, code, report_at(n), n ? n->path : NULL, fmt, ap);
  va_end(ap);
  return FALSE;
}

gboolean fab_cfg_fail(const FabCfgNode *n, GError **err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verr(err, FAB_CFG_ERROR_VALUE, report_at(n), n ? n->path : NULL, fmt, ap);
  va_end(ap);
  return FALSE;
}

/* "'text'" for messages, or "an empty value"; long texts are cut. */
char *fab_cfg__found(const char *s) {
  if (!s || !*s) return g_strdup("an empty value");
  if (strlen(s) > 64) return g_strdup_printf("'%.60s...'", s);
  return g_strdup_printf("'%s'", s);
}

/* Sets "FOUND <fmt...>" e.g. "'x' is not a rate (expected ...)". */
gboolean fab_cfg__bad_value(GError **err, const char *s, const char *fmt, ...) {
  if (!err) return FALSE;
  va_list ap;
  va_start(ap, fmt);
  char *rest = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  char *f = fab_cfg__found(s);
  g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_VALUE, "%s %s", f, rest);
  g_free(f);
  g_free(rest);
  return FALSE;
}

const char *fab_cfg__kind_name(const FabCfgNode *n) {
  switch (n->kind) {
  case FAB_CFG_NODE_MAP: return "a map";
  case FAB_CFG_NODE_SEQ: return "a sequence";
  default: return n->null ? "an empty value" : "a scalar";
  }
}
/* ---- nodes ------------------------------------------------------------- */

static void node_free(gpointer p) {
  FabCfgNode *n = p;
  if (n->keys) g_ptr_array_unref(n->keys);
  if (n->items) g_ptr_array_unref(n->items);
  g_free(n);
}

const char *fab_cfg__intern(FabCfg *cfg, const char *s) { return g_string_chunk_insert(cfg->strs, s); }

/* path and where must already belong to cfg->strs. */
FabCfgNode *fab_cfg__node_new(FabCfg *cfg, FabCfgNodeKind kind, const char *path, const char *where) {
  FabCfgNode *n = g_new0(FabCfgNode, 1);
  n->kind = kind;
  n->path = path;
  n->where = where;
  if (kind == FAB_CFG_NODE_MAP) n->keys = g_ptr_array_new();
  if (kind != FAB_CFG_NODE_SCALAR) n->items = g_ptr_array_new();
  g_ptr_array_add(cfg->nodes, n);
  return n;
}

void fab_cfg__set_null(FabCfgNode *n) {
  n->null = TRUE;
  n->text = "";
}

FabCfg *fab_cfg__new(void) {
  FabCfg *cfg = g_new0(FabCfg, 1);
  cfg->nodes = g_ptr_array_new_with_free_func(node_free);
  cfg->strs = g_string_chunk_new(4096);
  cfg->text = g_string_new(NULL);
  return cfg;
}

void fab_cfg_free(FabCfg *cfg) {
  if (!cfg) return;
  g_ptr_array_unref(cfg->nodes);
  g_string_chunk_free(cfg->strs);
  g_string_free(cfg->text, TRUE);
  g_free(cfg);
}

const FabCfgNode *fab_cfg_root(const FabCfg *cfg) { return cfg->root; }
const char *fab_cfg_text(const FabCfg *cfg) { return cfg->text->str; }

FabCfgNodeKind fab_cfg_kind(const FabCfgNode *n) {
  g_assert(n);
  return n->kind;
}

const char *fab_cfg_scalar(const FabCfgNode *n) {
  return n && n->kind == FAB_CFG_NODE_SCALAR ? n->text : NULL;
}

int fab_cfg__map_find(const FabCfgNode *map, const char *key) {
  if (!map || map->kind != FAB_CFG_NODE_MAP) return -1;
  for (guint i = 0; i < map->keys->len; i++) {
    const FabCfgNode *k = g_ptr_array_index(map->keys, i);
    if (strcmp(k->text, key) == 0) return (int)i;
  }
  return -1;
}

/* NULL-tolerant, so lookups chain: fab_cfg_get(fab_cfg_get(root, "a"), "b"). */
const FabCfgNode *fab_cfg_get(const FabCfgNode *map, const char *key) {
  int i = fab_cfg__map_find(map, key);
  return i < 0 ? NULL : g_ptr_array_index(map->items, i);
}

/* 0 for NULL and scalars. */
size_t fab_cfg_len(const FabCfgNode *n) { return n && n->items ? n->items->len : 0; }

/* NULL when out of range or n is a scalar. */
const FabCfgNode *fab_cfg_at(const FabCfgNode *n, size_t i) {
  return i < fab_cfg_len(n) ? g_ptr_array_index(n->items, i) : NULL;
}

const char *fab_cfg_key_at(const FabCfgNode *map, size_t i) {
  if (!map || map->kind != FAB_CFG_NODE_MAP || i >= map->keys->len) return NULL;
  return ((const FabCfgNode *)g_ptr_array_index(map->keys, i))->text;
}

/* "" for NULL. */
const char *fab_cfg_path(const FabCfgNode *n) { return n ? n->path : ""; }
const char *fab_cfg_where(const FabCfgNode *n) { return n ? n->where : ""; }

char *fab_cfg_file_near(const FabCfgNode *n, const char *rel) {
  if (g_path_is_absolute(rel)) return g_strdup(rel);
  char *file = g_strdup(fab_cfg_where(n));
  for (int k = 0; k < 2; k++) { /* "file:line:col" -> "file" */
    char *c = strrchr(file, ':');
    if (c) *c = 0;
  }
  char *dir = g_file_test(file, G_FILE_TEST_IS_REGULAR) ? g_path_get_dirname(file) : g_strdup(".");
  char *p = g_build_filename(dir, rel, NULL);
  g_free(dir);
  g_free(file);
  return p;
}

/* ---- --set ------------------------------------------------------------- */

typedef struct {
  char *name;   /* a map key, or NULL for an index */
  guint64 index;
  long col;     /* 1-based column of the key in the argument */
} Step;

static void steps_free(GArray *steps) {
  for (guint i = 0; i < steps->len; i++) g_free(g_array_index(steps, Step, i).name);
  g_array_unref(steps);
}

/* "a.b[2].c" -> a, b, [2], c; FALSE + err on a malformed key. */
static gboolean parse_key(const char *key, GArray *steps, GString *path, GError **err) {
  const char *p = key;
  for (;;) {
    const char *comp = p;
    while (*p && *p != '.' && *p != '[' && *p != ']') p++;
    if (p == comp)
      return fab_cfg__err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
                    "empty component at column %ld of key '%s' (expected a dotted key such as "
                    "fabric.link.bandwidth)",
                    (long)(comp - key) + 1, key);
    Step s = {g_strndup(comp, (size_t)(p - comp)), 0, (long)(comp - key) + 1};
    g_array_append_val(steps, s);
    g_string_append_printf(path, "%s%s", path->len ? "." : "", s.name);
    while (*p == '[') {
      char *end = NULL;
      errno = 0;
      guint64 i = g_ascii_isdigit(p[1]) ? g_ascii_strtoull(p + 1, &end, 10) : 0;
      if (!end || *end != ']' || errno)
        return fab_cfg__err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
                      "bad index at column %ld of key '%s' (expected [N], e.g. "
                      "workload.flows[0].size)",
                      (long)(p - key) + 1, key);
      Step ix = {NULL, i, (long)(p - key) + 1};
      g_array_append_val(steps, ix);
      g_string_append_printf(path, "[%" G_GUINT64_FORMAT "]", i);
      p = end + 1;
    }
    if (*p == '\0') return TRUE;
    if (*p != '.')
      return fab_cfg__err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
                    "unexpected '%c' at column %ld of key '%s' (expected a dotted key such as "
                    "fabric.link.bandwidth)",
                    *p, (long)(p - key) + 1, key);
    p++;
  }
}

static void map_put(FabCfgNode *map, FabCfgNode *k, FabCfgNode *v) {
  int at = fab_cfg__map_find(map, k->text);
  if (at >= 0) {
    map->keys->pdata[at] = k;
    map->items->pdata[at] = v;
  } else {
    g_ptr_array_add(map->keys, k);
    g_ptr_array_add(map->items, v);
  }
}

/* Walk the steps from the root. A dry run only checks (NULL stands for a
** map that would be made); a real run puts `val` in place and cannot fail. */
static gboolean set_walk(FabCfg *cfg, const char *key, GArray *steps, gboolean dry,
                         FabCfgNode *val, const char *where, GError **err) {
  FabCfgNode *node = cfg->root;
  GString *path = g_string_new(NULL);
  gboolean ok = FALSE;
  for (guint i = 0; i < steps->len; i++) {
    const Step *s = &g_array_index(steps, Step, i);
    gboolean last = i + 1 == steps->len;
    const char *here = path->len ? path->str : "the top level";
    FabCfgNode *child;
    if (!s->name) {
      if (!node) {
        fab_cfg__err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
               "cannot set '%s': '%s' does not exist (only existing sequences can be indexed)",
               key, here);
        goto out;
      }
      if (node->kind != FAB_CFG_NODE_SEQ) {
        fab_cfg__err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
               "cannot set '%s': '%s' is %s at %s, not a sequence", key, here, fab_cfg__kind_name(node),
               node->where);
        goto out;
      }
      if (s->index >= node->items->len) {
        fab_cfg__err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
               "cannot set '%s': '%s' (%s) has %u items", key, here, node->where,
               node->items->len);
        goto out;
      }
      g_string_append_printf(path, "[%" G_GUINT64_FORMAT "]", s->index);
      if (last) {
        if (!dry) node->items->pdata[s->index] = val;
        break;
      }
      child = g_ptr_array_index(node->items, s->index);
    } else {
      if (node && node->kind != FAB_CFG_NODE_MAP) {
        fab_cfg__err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
               "cannot set '%s': '%s' is %s at %s, not a map", key, here, fab_cfg__kind_name(node),
               node->where);
        goto out;
      }
      if (i == 0 && strcmp(s->name, "include") == 0) {
        fab_cfg__err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
               "include cannot be set with --set (list the file under include: in the scenario)");
        goto out;
      }
      g_string_append_printf(path, "%s%s", path->len ? "." : "", s->name);
      child = (FabCfgNode *)fab_cfg_get(node, s->name);
      gboolean make = !last && (!child || (child->kind == FAB_CFG_NODE_SCALAR && child->null)) &&
                      g_array_index(steps, Step, i + 1).name;
      if (!dry && (last || make)) {
        const char *ipath = fab_cfg__intern(cfg, path->str);
        char *kwhere = g_strdup_printf("--set:1:%ld", s->col); /* the key where it is written */
        FabCfgNode *k = fab_cfg__node_new(cfg, FAB_CFG_NODE_SCALAR, ipath, fab_cfg__intern(cfg, kwhere));
        g_free(kwhere);
        k->text = fab_cfg__intern(cfg, s->name);
        child = last ? val : fab_cfg__node_new(cfg, FAB_CFG_NODE_MAP, ipath, where);
        map_put(node, k, child);
      } else if (make) {
        child = NULL;
      }
      if (last) break;
    }
    node = child;
  }
  ok = TRUE;
out:
  g_string_free(path, TRUE);
  return ok;
}

/* KEY=~ (or null, or nothing): remove the key from its map, so that a
** scenario's `spines:` can give way to `oversubscription:` in a sweep. The
** key must be there: removing a misspelt key is an error, not a no-op. */
static gboolean set_remove(FabCfg *cfg, const char *key, GArray *steps, GError **err) {
  FabCfgNode *node = cfg->root;
  if (g_strcmp0(g_array_index(steps, Step, 0).name, "include") == 0)
    return fab_cfg__err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
                  "include cannot be set with --set (list the file under include: in the scenario)");
  for (guint i = 0; i < steps->len; i++) {
    const Step *s = &g_array_index(steps, Step, i);
    gboolean last = i + 1 == steps->len;
    if (!s->name) {
      if (last)
        return fab_cfg__err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
                      "cannot remove '%s': a sequence's item cannot be removed (set the whole "
                      "sequence instead)", key);
      if (!node || node->kind != FAB_CFG_NODE_SEQ || s->index >= node->items->len) break;
      node = g_ptr_array_index(node->items, s->index);
      continue;
    }
    if (!node || node->kind != FAB_CFG_NODE_MAP) break;
    int at = fab_cfg__map_find(node, s->name);
    if (at < 0) break;
    if (last) {
      g_ptr_array_remove_index(node->keys, (guint)at);
      g_ptr_array_remove_index(node->items, (guint)at);
      return TRUE;
    }
    node = g_ptr_array_index(node->items, (guint)at);
  }
  return fab_cfg__err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
                "cannot remove '%s': the scenario has no such key (KEY=~ removes a key that is "
                "there)", key);
}

gboolean fab_cfg_set(FabCfg *cfg, const char *a, GError **err) {
  const char *eq = strchr(a, '=');
  if (!eq || eq == a) {
    char *f = fab_cfg__found(a);
    fab_cfg__err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
                    eq ? "empty key in %s (expected KEY=VALUE, e.g. fabric.switch.buffer=32MiB)"
                       : "%s has no '=' (expected KEY=VALUE, e.g. fabric.switch.buffer=32MiB)", f);
    g_free(f);
    return FALSE;
  }
  if (eq - a > FAB_CFG_SET_KEY_MAX)
    return fab_cfg__err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
                  "the key is %ld bytes long, more than %d (keys are dotted paths such as "
                  "fabric.switch.buffer)", (long)(eq - a), FAB_CFG_SET_KEY_MAX);
  for (const char *c = a; c < eq; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f) {
      char *col = g_strdup_printf("--set:1:%ld", (long)(c - a) + 1);
      fab_cfg__err_at(err, FAB_CFG_ERROR_KEY, col, NULL, "the key has a control character (byte 0x%02x)",
                      (unsigned char)*c);
      g_free(col);
      return FALSE;
    }
  long base = (long)(eq - a) + 1; /* offset of VALUE in the argument */
  char *key = g_strndup(a, (size_t)(eq - a));
  GArray *steps = g_array_new(FALSE, FALSE, sizeof(Step));
  GString *path = g_string_new(NULL);
  gboolean ok = parse_key(key, steps, path, err);
  FabCfgNode *val = NULL;
  if (ok) {
    const char *ipath = fab_cfg__intern(cfg, path->str);
    val = fab_cfg__parse_yaml(cfg, eq + 1, strlen(eq + 1), "--set", base, ipath, err);
    ok = val != NULL;
  }
  gboolean remove = ok && val->kind == FAB_CFG_NODE_SCALAR && val->null;
  if (remove) ok = set_remove(cfg, key, steps, err);
  else if (ok) ok = set_walk(cfg, key, steps, TRUE, NULL, NULL, err);
  if (ok) {
    if (!remove) {
      char *where = g_strdup_printf("--set:1:%ld", base + 1);
      set_walk(cfg, key, steps, FALSE, val, fab_cfg__intern(cfg, where), NULL);
      g_free(where);
    }
    if (cfg->text->len && cfg->text->str[cfg->text->len - 1] != '\n')
      g_string_append_c(cfg->text, '\n');
    g_string_append(cfg->text, "# --set ");
    for (const char *c = a; *c; c++) {
      if (*c == '\n') g_string_append(cfg->text, "\\n");
      else g_string_append_c(cfg->text, *c);
    }
    g_string_append_c(cfg->text, '\n');
  }
  steps_free(steps);
  g_string_free(path, TRUE);
  g_free(key);
  return ok;
}


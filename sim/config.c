/* Scenario configuration: YAML tree with locations, includes, --set
** overrides, exact unit parsers and schema tables. See config.h.
**
** Choices made here where config.h leaves room (documented for callers):
**
** - Memory: every node, key, text, path and location string belongs to the
**   FabCfg and lives until fab_cfg_free(). Nodes that an include merge or a
**   --set replaces stay allocated, so pointers callers hold never dangle.
** - Null: a plain scalar written as nothing, `~`, `null`, `Null` or `NULL`
**   is kept as a scalar whose text is "" (quoted "null" is the string
**   "null"). fab_cfg_apply treats it as:
**     FAB_CFG_STRING        stores NULL (so `hdf5: ~` can switch off a path an
**                           include set); an error if the key is required;
**     FAB_CFG_MAP, _SEQ     absent: NULL (so `sharp:` means "all defaults");
**                           an error if the key is required;
**     FAB_CFG_NODE          stores the null scalar itself;
**     the value kinds       an error ("an empty value is not a rate (...)").
**   A null passed to fab_cfg_apply as the map counts as an absent map.
**   A null document root is an empty map.
** - Anchors (&a) and aliases (*a) are rejected with a located error: a node
**   shared between two places would have two key paths, and the `<<` merge
**   keys that usually come with them are not YAML 1.2. Use include: instead.
**   Tags are ignored. Map keys must be non-empty scalars.
** - Bounds (FabCfgKey.min/max): none when both are 0; otherwise the value
**   must be >= min, and <= max unless max < min (so {1, 0} is "at least 1").
** - Paths: the root's path is "" and is left out of messages, so a root
**   error reads "file:1:1: missing required key 'name'". A map key node has
**   the path of its value ("fabric.link.bandwdth").
** - --set: KEY may index sequences that exist ("workload.flows[2].size=1MiB");
**   maps are created on the way, a null on the way becomes a map, any other
**   scalar or a sequence on the way is an error. A replaced map entry gets a
**   new key node located at --set as well. An empty VALUE is null. The root
**   `include` key cannot be set.
** - Unit aliases accepted beyond config.h: kbps, kB/s, kB (SI lowercase k),
**   µs/μs for us. A bare number is bytes for sizes ("2.0" -> 2, "1.5" is an
**   error), needs a unit for rates, and must be 0 for times.
** - fab_cfg_text: the main text, a '\n' added if it does not end with one,
**   then "# --set K=V\n" per override (newlines inside V written as "\n").
** - A bad `def` in a schema is reported as an "internal error" GError naming
**   the key rather than aborting.
*/
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

G_DEFINE_QUARK(fab-cfg-error-quark, fab_cfg_error)

#define MAX_DEPTH 256 /* nesting of maps and sequences */

struct FabCfgNode {
  FabCfgNodeKind kind;
  gboolean null;     /* scalar written as nothing, ~ or null: text is "" */
  const char *text;  /* scalar text; NULL for maps and sequences */
  GPtrArray *keys;   /* map: key nodes (scalars), parallel to items */
  GPtrArray *items;  /* map values or sequence items */
  const char *path;  /* key path; "" for the root */
  const char *where; /* "file:line:col" */
  const char *keywhere; /* a map value: where its key is written (NULL otherwise) */
};

struct FabCfg {
  GPtrArray *nodes;   /* every node made, including merged-away ones */
  GStringChunk *strs; /* texts, paths and locations */
  FabCfgNode *root;   /* always a map */
  GString *text;      /* main text + "# --set" lines */
};

/* ---- errors ------------------------------------------------------------ */

static void verr(GError **err, int code, const char *where, const char *path, const char *fmt,
                 va_list ap) {
  if (!err) return;
  char *msg = g_strdup_vprintf(fmt, ap);
  GString *s = g_string_new(NULL);
  if (where && *where) g_string_append_printf(s, "%s: ", where);
  if (path && *path) g_string_append_printf(s, "%s: ", path);
  g_string_append(s, msg);
  g_set_error_literal(err, FAB_CFG_ERROR, code, s->str);
  g_string_free(s, TRUE);
  g_free(msg);
}

static gboolean err_at(GError **err, int code, const char *where, const char *path,
                       const char *fmt, ...) G_GNUC_PRINTF(5, 6);
static gboolean err_at(GError **err, int code, const char *where, const char *path,
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

static gboolean node_err(const FabCfgNode *n, GError **err, int code, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);
static gboolean node_err(const FabCfgNode *n, GError **err, int code, const char *fmt, ...) {
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
static char *found(const char *s) {
  if (!s || !*s) return g_strdup("an empty value");
  if (strlen(s) > 64) return g_strdup_printf("'%.60s...'", s);
  return g_strdup_printf("'%s'", s);
}

static gboolean bad_value(GError **err, const char *s, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* Sets "FOUND <fmt...>" e.g. "'x' is not a rate (expected ...)". */
static gboolean bad_value(GError **err, const char *s, const char *fmt, ...) {
  if (!err) return FALSE;
  va_list ap;
  va_start(ap, fmt);
  char *rest = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  char *f = found(s);
  g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_VALUE, "%s %s", f, rest);
  g_free(f);
  g_free(rest);
  return FALSE;
}

static const char *kind_name(const FabCfgNode *n) {
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

static const char *intern(FabCfg *cfg, const char *s) { return g_string_chunk_insert(cfg->strs, s); }

/* path and where must already belong to cfg->strs. */
static FabCfgNode *node_new(FabCfg *cfg, FabCfgNodeKind kind, const char *path, const char *where) {
  FabCfgNode *n = g_new0(FabCfgNode, 1);
  n->kind = kind;
  n->path = path;
  n->where = where;
  if (kind == FAB_CFG_NODE_MAP) n->keys = g_ptr_array_new();
  if (kind != FAB_CFG_NODE_SCALAR) n->items = g_ptr_array_new();
  g_ptr_array_add(cfg->nodes, n);
  return n;
}

static void set_null(FabCfgNode *n) {
  n->null = TRUE;
  n->text = "";
}

static FabCfg *cfg_new(void) {
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

static int map_find(const FabCfgNode *map, const char *key) {
  if (!map || map->kind != FAB_CFG_NODE_MAP) return -1;
  for (guint i = 0; i < map->keys->len; i++) {
    const FabCfgNode *k = g_ptr_array_index(map->keys, i);
    if (strcmp(k->text, key) == 0) return (int)i;
  }
  return -1;
}

/* NULL-tolerant, so lookups chain: fab_cfg_get(fab_cfg_get(root, "a"), "b"). */
const FabCfgNode *fab_cfg_get(const FabCfgNode *map, const char *key) {
  int i = map_find(map, key);
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

/* ---- YAML reading ------------------------------------------------------ */

typedef struct {
  FabCfg *cfg;
  yaml_parser_t yp;
  const char *file; /* name in locations */
  const char *text; /* input, for reader-error positions */
  size_t len;
  long set_base;    /* >= 0: a --set value starting at this offset of the argument */
  GString *buf;
  GError **err;
} Reader;

static const char *where_of(Reader *r, size_t line0, size_t col0, size_t index) {
  if (r->set_base >= 0)
    g_string_printf(r->buf, "--set:1:%ld", r->set_base + (long)index + 1);
  else
    g_string_printf(r->buf, "%s:%zu:%zu", r->file, line0 + 1, col0 + 1);
  return intern(r->cfg, r->buf->str);
}

static const char *mark_where(Reader *r, yaml_mark_t m) {
  return where_of(r, m.line, m.column, m.index);
}

static void syntax_error(Reader *r) {
  yaml_parser_t *p = &r->yp;
  const char *problem = p->problem ? p->problem : "invalid YAML";
  if (p->error == YAML_MEMORY_ERROR) {
    err_at(r->err, FAB_CFG_ERROR_PARSE, r->file, NULL, "out of memory while parsing YAML");
    return;
  }
  if (p->error == YAML_READER_ERROR) { /* only a byte offset: find line and column */
    size_t off = p->problem_offset < r->len ? p->problem_offset : r->len, line = 0, col = 0;
    for (size_t i = 0; i < off; i++) {
      if (r->text[i] == '\n') line++, col = 0;
      else col++;
    }
    char *w = g_strdup(where_of(r, line, col, off));
    err_at(r->err, FAB_CFG_ERROR_PARSE, w, NULL, "YAML syntax error: %s", problem);
    g_free(w);
    return;
  }
  char *w = g_strdup(mark_where(r, p->problem_mark));
  if (p->context) {
    char *cw = g_strdup(mark_where(r, p->context_mark));
    err_at(r->err, FAB_CFG_ERROR_PARSE, w, NULL, "YAML syntax error: %s (%s at %s)", problem,
           p->context, cw);
    g_free(cw);
  } else {
    err_at(r->err, FAB_CFG_ERROR_PARSE, w, NULL, "YAML syntax error: %s", problem);
  }
  g_free(w);
}

static gboolean next_event(Reader *r, yaml_event_t *ev) {
  if (yaml_parser_parse(&r->yp, ev)) return TRUE;
  syntax_error(r);
  return FALSE;
}

static gboolean anchor_error(Reader *r, yaml_event_t *ev, const char *path) {
  const char *w = mark_where(r, ev->start_mark);
  return err_at(r->err, FAB_CFG_ERROR_PARSE, w, path,
                "YAML anchors and aliases (&name, *name) are not supported "
                "(use include: or repeat the value)");
}

static const char *child_path(Reader *r, const char *path, const char *key) {
  if (*path) g_string_printf(r->buf, "%s.%s", path, key);
  else g_string_assign(r->buf, key);
  return intern(r->cfg, r->buf->str);
}

static gboolean is_null_text(const char *v, size_t len) {
  return len == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
         strcmp(v, "NULL") == 0;
}

/* Build the node that starts with *ev (which the caller owns and deletes). */
static FabCfgNode *read_node(Reader *r, yaml_event_t *ev, const char *path, int depth) {
  FabCfg *cfg = r->cfg;
  switch (ev->type) {
  case YAML_ALIAS_EVENT:
    anchor_error(r, ev, path);
    return NULL;
  case YAML_SCALAR_EVENT: {
    if (ev->data.scalar.anchor) return anchor_error(r, ev, path), NULL;
    FabCfgNode *n = node_new(cfg, FAB_CFG_NODE_SCALAR, path, mark_where(r, ev->start_mark));
    const char *v = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && is_null_text(v, len)) set_null(n);
    else n->text = g_string_chunk_insert_len(cfg->strs, v, (gssize)len);
    return n;
  }
  case YAML_SEQUENCE_START_EVENT:
  case YAML_MAPPING_START_EVENT:
    break;
  default:
    err_at(r->err, FAB_CFG_ERROR_PARSE, mark_where(r, ev->start_mark), path,
           "unexpected YAML event");
    return NULL;
  }

  gboolean is_map = ev->type == YAML_MAPPING_START_EVENT;
  if (is_map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor)
    return anchor_error(r, ev, path), NULL;
  const char *w = mark_where(r, ev->start_mark);
  if (depth >= MAX_DEPTH) {
    err_at(r->err, FAB_CFG_ERROR_PARSE, w, path, "nested more than %d levels deep", MAX_DEPTH);
    return NULL;
  }
  FabCfgNode *n = node_new(cfg, is_map ? FAB_CFG_NODE_MAP : FAB_CFG_NODE_SEQ, path, w);
  for (;;) {
    yaml_event_t e;
    if (!next_event(r, &e)) return NULL;
    if (e.type == YAML_MAPPING_END_EVENT || e.type == YAML_SEQUENCE_END_EVENT) {
      yaml_event_delete(&e);
      return n;
    }
    if (!is_map) {
      g_string_printf(r->buf, "%s[%u]", path, n->items->len);
      FabCfgNode *item = read_node(r, &e, intern(cfg, r->buf->str), depth + 1);
      yaml_event_delete(&e);
      if (!item) return NULL;
      g_ptr_array_add(n->items, item);
      continue;
    }
    /* a key, then its value */
    if (e.type == YAML_ALIAS_EVENT || (e.type == YAML_SCALAR_EVENT && e.data.scalar.anchor)) {
      anchor_error(r, &e, path);
      yaml_event_delete(&e);
      return NULL;
    }
    if (e.type != YAML_SCALAR_EVENT) {
      err_at(r->err, FAB_CFG_ERROR_PARSE, mark_where(r, e.start_mark), path,
             "a map key must be plain text, not a %s",
             e.type == YAML_MAPPING_START_EVENT ? "map" : "sequence");
      yaml_event_delete(&e);
      return NULL;
    }
    const char *ktext = (const char *)e.data.scalar.value;
    if (e.data.scalar.length == 0 || strlen(ktext) != e.data.scalar.length) {
      err_at(r->err, FAB_CFG_ERROR_PARSE, mark_where(r, e.start_mark), path,
             "empty or invalid map key");
      yaml_event_delete(&e);
      return NULL;
    }
    const char *cpath = child_path(r, path, ktext);
    FabCfgNode *key = node_new(cfg, FAB_CFG_NODE_SCALAR, cpath, mark_where(r, e.start_mark));
    key->text = intern(cfg, ktext);
    yaml_event_delete(&e);
    int dup = map_find(n, key->text);
    if (dup >= 0) {
      const FabCfgNode *first = g_ptr_array_index(n->keys, dup);
      node_err(key, r->err, FAB_CFG_ERROR_PARSE, "duplicate key '%s' (first given at %s)",
               key->text, first->where);
      return NULL;
    }
    if (!next_event(r, &e)) return NULL;
    FabCfgNode *val = read_node(r, &e, cpath, depth + 1);
    yaml_event_delete(&e);
    if (!val) return NULL;
    if (val->kind == FAB_CFG_NODE_MAP) val->keywhere = key->where;
    g_ptr_array_add(n->keys, key);
    g_ptr_array_add(n->items, val);
  }
}

/* Parse one YAML stream holding at most one document. Returns its root, or
** for an empty stream a null scalar located at the start. */
static FabCfgNode *parse_yaml(FabCfg *cfg, const char *text, size_t len, const char *file,
                              long set_base, const char *root_path, GError **err) {
  Reader r = {.cfg = cfg, .file = file, .text = text, .len = len, .set_base = set_base,
              .buf = g_string_new(NULL), .err = err};
  FabCfgNode *root = NULL;
  yaml_event_t e;
  gboolean have_event = FALSE;
  yaml_parser_initialize(&r.yp);
  yaml_parser_set_input_string(&r.yp, (const unsigned char *)text, len);

  if (!next_event(&r, &e)) goto out; /* STREAM-START */
  yaml_event_delete(&e);
  if (!next_event(&r, &e)) goto out;
  have_event = TRUE;
  if (e.type == YAML_STREAM_END_EVENT) {
    root = node_new(cfg, FAB_CFG_NODE_SCALAR, root_path, where_of(&r, 0, 0, 0));
    set_null(root);
    goto out;
  }
  yaml_event_delete(&e); /* DOCUMENT-START */
  have_event = FALSE;
  if (!next_event(&r, &e)) goto out;
  have_event = TRUE;
  FabCfgNode *n = read_node(&r, &e, root_path, 0);
  if (!n) goto out;
  yaml_event_delete(&e);
  have_event = FALSE;
  if (!next_event(&r, &e)) goto out; /* DOCUMENT-END */
  yaml_event_delete(&e);
  if (!next_event(&r, &e)) goto out;
  have_event = TRUE;
  if (e.type != YAML_STREAM_END_EVENT) {
    err_at(err, FAB_CFG_ERROR_PARSE, mark_where(&r, e.start_mark), NULL,
           "more than one YAML document (only one is read; remove this '---')");
    goto out;
  }
  root = n;
out:
  if (have_event) yaml_event_delete(&e);
  yaml_parser_delete(&r.yp);
  g_string_free(r.buf, TRUE);
  return root;
}

/* A file's root: a map (a null or empty document gives an empty map). */
static FabCfgNode *parse_file_text(FabCfg *cfg, const char *text, size_t len, const char *file,
                                   GError **err) {
  FabCfgNode *root = parse_yaml(cfg, text, len, file, -1, "", err);
  if (!root) return NULL;
  if (root->kind == FAB_CFG_NODE_SCALAR && root->null)
    return node_new(cfg, FAB_CFG_NODE_MAP, root->path, root->where);
  if (root->kind != FAB_CFG_NODE_MAP) {
    char *f = root->kind == FAB_CFG_NODE_SCALAR ? found(root->text) : g_strdup("a sequence");
    node_err(root, err, FAB_CFG_ERROR_PARSE,
             "the top level must be a map of keys such as 'name:' and 'fabric:' (found %s)", f);
    g_free(f);
    return NULL;
  }
  return root;
}

/* ---- includes ---------------------------------------------------------- */

/* `over` wins. Maps merge key by key (under's order first, then keys only
** `over` has); anything else is replaced by `over`. Reuses over's nodes. */
static FabCfgNode *merge(FabCfgNode *over, FabCfgNode *under) {
  if (over->kind != FAB_CFG_NODE_MAP || under->kind != FAB_CFG_NODE_MAP) return over;
  GPtrArray *keys = g_ptr_array_new(), *items = g_ptr_array_new();
  guint n_over = over->keys->len;
  gboolean *used = g_new0(gboolean, n_over + 1);
  for (guint i = 0; i < under->keys->len; i++) {
    FabCfgNode *k = g_ptr_array_index(under->keys, i);
    int j = map_find(over, k->text);
    if (j < 0) {
      g_ptr_array_add(keys, k);
      g_ptr_array_add(items, g_ptr_array_index(under->items, i));
    } else {
      used[j] = TRUE;
      g_ptr_array_add(keys, g_ptr_array_index(over->keys, j));
      g_ptr_array_add(items, merge(g_ptr_array_index(over->items, j),
                                   g_ptr_array_index(under->items, i)));
    }
  }
  for (guint j = 0; j < n_over; j++) {
    if (used[j]) continue;
    g_ptr_array_add(keys, g_ptr_array_index(over->keys, j));
    g_ptr_array_add(items, g_ptr_array_index(over->items, j));
  }
  g_free(used);
  g_ptr_array_unref(over->keys);
  g_ptr_array_unref(over->items);
  over->keys = keys;
  over->items = items;
  return over;
}

typedef struct {
  GPtrArray *canon; /* realpath of each file being loaded */
  GPtrArray *names; /* its name in locations */
} IncStack;

static FabCfgNode *load_tree(FabCfg *cfg, const char *file, const char *text, size_t len,
                             const char *dir, IncStack *st, GError **err);

static FabCfgNode *load_include(FabCfg *cfg, const FabCfgNode *ent, const char *dir,
                                IncStack *st, GError **err) {
  const char *name = ent->text;
  char *path = (!dir || strcmp(dir, ".") == 0 || g_path_is_absolute(name))
                   ? g_strdup(name)
                   : g_build_filename(dir, name, NULL);
  FabCfgNode *root = NULL;
  char *contents = NULL;
  size_t len = 0;
  char *canon = realpath(path, NULL);
  if (!canon) {
    node_err(ent, err, FAB_CFG_ERROR_IO, "cannot read included file '%s': %s", path,
             g_strerror(errno));
    goto out;
  }
  for (guint i = 0; i < st->canon->len; i++) {
    if (strcmp(g_ptr_array_index(st->canon, i), canon) != 0) continue;
    GString *cyc = g_string_new(NULL);
    for (guint j = i; j < st->names->len; j++)
      g_string_append_printf(cyc, "%s -> ", (const char *)g_ptr_array_index(st->names, j));
    g_string_append(cyc, path);
    node_err(ent, err, FAB_CFG_ERROR_PARSE, "include cycle: %s", cyc->str);
    g_string_free(cyc, TRUE);
    goto out;
  }
  GError *e = NULL;
  gsize glen = 0;
  if (!g_file_get_contents(path, &contents, &glen, &e)) {
    node_err(ent, err, FAB_CFG_ERROR_IO, "cannot read included file '%s': %s", path, e->message);
    g_error_free(e);
    goto out;
  }
  len = glen;
  char *subdir = g_path_get_dirname(path);
  g_ptr_array_add(st->canon, canon);
  g_ptr_array_add(st->names, g_strdup(path));
  canon = NULL;
  root = load_tree(cfg, intern(cfg, path), contents, len, subdir, st, err);
  g_ptr_array_remove_index(st->canon, st->canon->len - 1);
  g_ptr_array_remove_index(st->names, st->names->len - 1);
  g_free(subdir);
out:
  free(canon);
  g_free(contents);
  g_free(path);
  return root;
}

/* Parse one file's text and merge its includes under it. */
static FabCfgNode *load_tree(FabCfg *cfg, const char *file, const char *text, size_t len,
                             const char *dir, IncStack *st, GError **err) {
  FabCfgNode *root = parse_file_text(cfg, text, len, file, err);
  if (!root) return NULL;
  int at = map_find(root, "include");
  if (at < 0) return root;
  FabCfgNode *inc = g_ptr_array_index(root->items, at);
  g_ptr_array_remove_index(root->keys, (guint)at);
  g_ptr_array_remove_index(root->items, (guint)at);

  GPtrArray *ents = g_ptr_array_new();
  gboolean ok = TRUE;
  if (inc->kind == FAB_CFG_NODE_SCALAR) {
    if (!inc->null) g_ptr_array_add(ents, inc);
  } else if (inc->kind == FAB_CFG_NODE_SEQ) {
    for (guint i = 0; ok && i < inc->items->len; i++) {
      FabCfgNode *it = g_ptr_array_index(inc->items, i);
      if (it->kind != FAB_CFG_NODE_SCALAR || it->null)
        ok = node_err(it, err, FAB_CFG_ERROR_PARSE, "expected a file name, found %s",
                      kind_name(it));
      else g_ptr_array_add(ents, it);
    }
  } else {
    ok = node_err(inc, err, FAB_CFG_ERROR_PARSE,
                  "expected a file name or a list of file names, found a map");
  }
  FabCfgNode *base = NULL;
  for (guint i = 0; ok && i < ents->len; i++) {
    FabCfgNode *sub = load_include(cfg, g_ptr_array_index(ents, i), dir, st, err);
    if (!sub) ok = FALSE;
    else base = base ? merge(sub, base) : sub;
  }
  g_ptr_array_unref(ents);
  if (!ok) return NULL;
  return base ? merge(root, base) : root;
}

static FabCfg *load(const char *text, size_t len, const char *name, const char *canon,
                    const char *dir, GError **err) {
  FabCfg *cfg = cfg_new();
  g_string_append_len(cfg->text, text, (gssize)len);
  IncStack st = {g_ptr_array_new_with_free_func(g_free), g_ptr_array_new_with_free_func(g_free)};
  if (canon) {
    g_ptr_array_add(st.canon, g_strdup(canon));
    g_ptr_array_add(st.names, g_strdup(name));
  }
  cfg->root = load_tree(cfg, intern(cfg, name), text, len, dir, &st, err);
  g_ptr_array_unref(st.canon);
  g_ptr_array_unref(st.names);
  if (!cfg->root) {
    fab_cfg_free(cfg);
    return NULL;
  }
  return cfg;
}

FabCfg *fab_cfg_load_file(const char *path, GError **err) {
  char *text = NULL;
  gsize len = 0;
  GError *e = NULL;
  if (!g_file_get_contents(path, &text, &len, &e)) {
    g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_IO, "%s: cannot read scenario: %s", path,
                g_strerror(e->code == G_FILE_ERROR_NOENT ? ENOENT : e->code == G_FILE_ERROR_ACCES ? EACCES
                           : e->code == G_FILE_ERROR_ISDIR ? EISDIR : EIO));
    g_error_free(e);
    return NULL;
  }
  char *canon = realpath(path, NULL);
  char *dir = g_path_get_dirname(path);
  FabCfg *cfg = load(text, len, path, canon, dir, err);
  g_free(dir);
  free(canon);
  g_free(text);
  return cfg;
}

FabCfg *fab_cfg_load_string(const char *text, const char *name, GError **err) {
  return load(text, strlen(text), name ? name : "<string>", NULL, NULL, err);
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
      return err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
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
        return err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
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
      return err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
                    "unexpected '%c' at column %ld of key '%s' (expected a dotted key such as "
                    "fabric.link.bandwidth)",
                    *p, (long)(p - key) + 1, key);
    p++;
  }
}

static void map_put(FabCfgNode *map, FabCfgNode *k, FabCfgNode *v) {
  int at = map_find(map, k->text);
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
        err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
               "cannot set '%s': '%s' does not exist (only existing sequences can be indexed)",
               key, here);
        goto out;
      }
      if (node->kind != FAB_CFG_NODE_SEQ) {
        err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
               "cannot set '%s': '%s' is %s at %s, not a sequence", key, here, kind_name(node),
               node->where);
        goto out;
      }
      if (s->index >= node->items->len) {
        err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
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
        err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
               "cannot set '%s': '%s' is %s at %s, not a map", key, here, kind_name(node),
               node->where);
        goto out;
      }
      if (i == 0 && strcmp(s->name, "include") == 0) {
        err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
               "include cannot be set with --set (list the file under include: in the scenario)");
        goto out;
      }
      g_string_append_printf(path, "%s%s", path->len ? "." : "", s->name);
      child = (FabCfgNode *)fab_cfg_get(node, s->name);
      gboolean make = !last && (!child || (child->kind == FAB_CFG_NODE_SCALAR && child->null)) &&
                      g_array_index(steps, Step, i + 1).name;
      if (!dry && (last || make)) {
        const char *ipath = intern(cfg, path->str);
        char *kwhere = g_strdup_printf("--set:1:%ld", s->col); /* the key where it is written */
        FabCfgNode *k = node_new(cfg, FAB_CFG_NODE_SCALAR, ipath, intern(cfg, kwhere));
        g_free(kwhere);
        k->text = intern(cfg, s->name);
        child = last ? val : node_new(cfg, FAB_CFG_NODE_MAP, ipath, where);
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

gboolean fab_cfg_set(FabCfg *cfg, const char *a, GError **err) {
  const char *eq = strchr(a, '=');
  if (!eq)
    return err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
                  "'%s' has no '=' (expected KEY=VALUE, e.g. fabric.switch.buffer=32MiB)", a);
  if (eq == a)
    return err_at(err, FAB_CFG_ERROR_KEY, "--set:1:1", NULL,
                  "empty key in '%s' (expected KEY=VALUE, e.g. fabric.switch.buffer=32MiB)", a);
  long base = (long)(eq - a) + 1; /* offset of VALUE in the argument */
  char *key = g_strndup(a, (size_t)(eq - a));
  GArray *steps = g_array_new(FALSE, FALSE, sizeof(Step));
  GString *path = g_string_new(NULL);
  gboolean ok = parse_key(key, steps, path, err) && set_walk(cfg, key, steps, TRUE, NULL, NULL, err);
  if (ok) {
    const char *ipath = intern(cfg, path->str);
    FabCfgNode *val = parse_yaml(cfg, eq + 1, strlen(eq + 1), "--set", base, ipath, err);
    ok = val != NULL;
    if (ok) {
      char *where = g_strdup_printf("--set:1:%ld", base + 1);
      set_walk(cfg, key, steps, FALSE, val, intern(cfg, where), NULL);
      g_free(where);
      if (cfg->text->len && cfg->text->str[cfg->text->len - 1] != '\n')
        g_string_append_c(cfg->text, '\n');
      g_string_append(cfg->text, "# --set ");
      for (const char *c = a; *c; c++) {
        if (*c == '\n') g_string_append(cfg->text, "\\n");
        else g_string_append_c(cfg->text, *c);
      }
      g_string_append_c(cfg->text, '\n');
    }
  }
  steps_free(steps);
  g_string_free(path, TRUE);
  g_free(key);
  return ok;
}

/* ---- values and units -------------------------------------------------- */

typedef struct {
  const char *name;
  uint64_t mult; /* in the base unit */
} Unit;

static const Unit rate_units[] = {
    {"bps", 1},          {"Kbps", 1000ULL},        {"kbps", 1000ULL},
    {"Mbps", 1000000ULL}, {"Gbps", 1000000000ULL},  {"Tbps", 1000000000000ULL},
    {"B/s", 8},          {"KB/s", 8000ULL},        {"kB/s", 8000ULL},
    {"MB/s", 8000000ULL}, {"GB/s", 8000000000ULL},  {"TB/s", 8000000000000ULL},
    {NULL, 0}};
static const Unit time_units[] = {
    {"ps", 1},           {"ns", 1000ULL},         {"us", 1000000ULL},
    {"\xc2\xb5s", 1000000ULL}, {"\xce\xbcs", 1000000ULL}, {"ms", 1000000000ULL},
    {"s", 1000000000000ULL}, {NULL, 0}};
static const Unit size_units[] = {
    {"B", 1},
    {"KB", 1000ULL},
    {"kB", 1000ULL},
    {"MB", 1000000ULL},
    {"GB", 1000000000ULL},
    {"TB", 1000000000000ULL},
    {"KiB", 1ULL << 10},
    {"MiB", 1ULL << 20},
    {"GiB", 1ULL << 30},
    {"TiB", 1ULL << 40},
    {NULL, 0}};

enum { SC_OK, SC_SYNTAX, SC_FRACTION, SC_OVERFLOW };

typedef unsigned __int128 u128;

static unsigned factors(u128 v, unsigned f) {
  unsigned n = 0;
  while (v && v % f == 0) v /= f, n++;
  return n;
}

/* "DIGITS[.DIGITS][ws][UNIT]" scaled exactly: no floating point. *bare tells
** whether the unit was left out (then the multiplier is 1). */
static int scale_decimal(const char *s, const Unit *units, uint64_t *out, gboolean *bare) {
  const char *ip = s, *p = s;
  while (g_ascii_isdigit(*p)) p++;
  size_t ni = (size_t)(p - ip), nf = 0;
  const char *fp = p;
  if (*p == '.') {
    fp = ++p;
    while (g_ascii_isdigit(*p)) p++;
    nf = (size_t)(p - fp);
  }
  if (ni + nf == 0) return SC_SYNTAX;
  const char *u = p;
  while (*u == ' ' || *u == '\t') u++;
  uint64_t mult = 1;
  *bare = *u == '\0';
  if (!*bare) {
    const Unit *x = units;
    while (x->name && strcmp(x->name, u) != 0) x++;
    if (!x->name) return SC_SYNTAX;
    mult = x->mult;
  }
  while (nf > 0 && fp[nf - 1] == '0') nf--;
  if (nf > 64) return SC_FRACTION; /* no unit has 2^64 or 5^64 in it */
  u128 m = 0;
  for (size_t i = 0; i < ni + nf; i++) {
    unsigned d = (unsigned)((i < ni ? ip[i] : fp[i - ni]) - '0');
    if (m > (((u128)-1) - d) / 10) return SC_OVERFLOW;
    m = m * 10 + d;
  }
  if (m == 0) {
    *out = 0;
    return SC_OK;
  }
  /* m * mult / 10^nf must be whole: enough 2s and 5s between m and mult */
  if (factors(m, 2) + factors(mult, 2) < nf || factors(m, 5) + factors(mult, 5) < nf)
    return SC_FRACTION;
  for (size_t i = 0; i < nf; i++) {
    if (mult % 2 == 0) mult /= 2;
    else m /= 2;
    if (mult % 5 == 0) mult /= 5;
    else m /= 5;
  }
  if (m > UINT64_MAX / mult) return SC_OVERFLOW;
  *out = (uint64_t)m * mult;
  return SC_OK;
}

#define RATE_UNITS "bps, Kbps, Mbps, Gbps, Tbps, B/s, KB/s, MB/s, GB/s, TB/s"
#define RATE_EXPECT "expected a number with a unit: " RATE_UNITS ", e.g. 100Gbps"
#define TIME_EXPECT "expected a number with a unit: ps, ns, us, ms, s, e.g. 600ns; only 0 may go without a unit"
#define SIZE_EXPECT "expected a number of bytes, or a number with a unit: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB, e.g. 4096 or 64KiB"

static gboolean negative(const char *s);

gboolean fab_parse_rate(const char *s, uint64_t *bps, GError **err) {
  uint64_t v = 0;
  if (negative(s)) return bad_value(err, s, "is negative (expected a rate above 0, e.g. 100Gbps)");
  gboolean bare = FALSE;
  int rc = scale_decimal(s, rate_units, &v, &bare);
  if (rc == SC_SYNTAX) return bad_value(err, s, "is not a rate (" RATE_EXPECT ")");
  if (bare) return bad_value(err, s, "is not a rate: it has no unit (" RATE_EXPECT ")");
  if (rc == SC_FRACTION) return bad_value(err, s, "is not a whole number of bits per second");
  if (rc == SC_OVERFLOW) return bad_value(err, s, "is too large (a rate must be below 2^64 bps)");
  if (v == 0) return bad_value(err, s, "is not a valid rate (expected a rate above 0, e.g. 100Gbps)");
  *bps = v;
  return TRUE;
}

/* A leading minus sign, after blanks. */
static gboolean negative(const char *s) {
  while (*s == ' ' || *s == '\t') s++;
  return *s == '-';
}

gboolean fab_parse_time(const char *s, uint64_t *ps, GError **err) {
  uint64_t v = 0;
  if (negative(s)) return bad_value(err, s, "is negative (expected a time >= 0, e.g. 600ns)");
  gboolean bare = FALSE;
  int rc = scale_decimal(s, time_units, &v, &bare);
  if (rc == SC_SYNTAX) return bad_value(err, s, "is not a time (" TIME_EXPECT ")");
  if (bare && (rc != SC_OK || v != 0))
    return bad_value(err, s, "is not a time: it has no unit (" TIME_EXPECT ")");
  if (rc == SC_FRACTION) return bad_value(err, s, "is not a whole number of picoseconds");
  if (rc == SC_OVERFLOW)
    return bad_value(err, s, "is too large (a time must be below 2^64 ps, about 213 days)");
  *ps = v;
  return TRUE;
}

gboolean fab_parse_size(const char *s, uint64_t *bytes, GError **err) {
  uint64_t v = 0;
  gboolean bare = FALSE;
  if (negative(s)) return bad_value(err, s, "is negative (expected a size >= 0, e.g. 4096 or 64KiB)");
  switch (scale_decimal(s, size_units, &v, &bare)) {
  case SC_SYNTAX: return bad_value(err, s, "is not a size (" SIZE_EXPECT ")");
  case SC_FRACTION: return bad_value(err, s, "is not a whole number of bytes");
  case SC_OVERFLOW: return bad_value(err, s, "is too large (a size must be below 2^64 bytes)");
  default: break;
  }
  *bytes = v;
  return TRUE;
}

/* A finite number, the whole string, no leading blanks; locale-independent. */
static gboolean strict_double(const char *s, double *v) {
  if (!s || !*s || g_ascii_isspace(*s)) return FALSE;
  char *end = NULL;
  errno = 0;
  double d = g_ascii_strtod(s, &end);
  if (*end != '\0' || errno == ERANGE || !isfinite(d)) return FALSE;
  *v = d;
  return TRUE;
}

gboolean fab_parse_double(const char *s, double *v, GError **err) {
  if (!strict_double(s, v))
    return bad_value(err, s, "is not a number (expected a finite number, e.g. 0.5 or 1e-3)");
  return TRUE;
}

#define RATIO_EXPECT "expected N:M with N, M > 0, e.g. 2:1, or a number above 0, e.g. 1.5"

gboolean fab_parse_ratio(const char *s, double *r, GError **err) {
  double v = 0;
  const char *colon = s ? strchr(s, ':') : NULL;
  if (colon) {
    char *a = g_strstrip(g_strndup(s, (size_t)(colon - s)));
    char *b = g_strstrip(g_strdup(colon + 1));
    double n = 0, m = 0;
    gboolean ok = strict_double(a, &n) && strict_double(b, &m) && n > 0 && m > 0;
    g_free(a);
    g_free(b);
    if (!ok || !isfinite(n / m)) return bad_value(err, s, "is not a ratio (" RATIO_EXPECT ")");
    v = n / m;
  } else if (!strict_double(s, &v) || !(v > 0)) {
    return bad_value(err, s, "is not a ratio (" RATIO_EXPECT ")");
  }
  *r = v;
  return TRUE;
}

gboolean fab_parse_prob(const char *s, double *p, GError **err) {
  double v = 0;
  size_t n = s ? strlen(s) : 0;
  gboolean ok;
  if (n > 0 && s[n - 1] == '%') {
    char *num = g_strndup(s, n - 1);
    g_strchomp(num);
    ok = strict_double(num, &v) && v >= 0 && v <= 100;
    g_free(num);
    v /= 100;
  } else {
    ok = strict_double(s, &v) && v >= 0 && v <= 1;
  }
  if (!ok)
    return bad_value(err, s,
                     "is not a probability (expected a number from 0 to 1 or a percentage "
                     "from 0%% to 100%%, e.g. 0.2 or 1%%)");
  *p = v;
  return TRUE;
}

gboolean fab_parse_bool(const char *s, gboolean *b, GError **err) {
  static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
  for (int i = 0; s && i < 3; i++) {
    if (g_ascii_strcasecmp(s, yes[i]) == 0) return *b = TRUE, TRUE;
    if (g_ascii_strcasecmp(s, no[i]) == 0) return *b = FALSE, TRUE;
  }
  return bad_value(err, s, "is not a boolean (expected true/false, yes/no or on/off)");
}

/* Optional sign then decimal digits; *neg tells the sign, *mag the magnitude.
** FALSE on syntax; *over on a magnitude beyond 2^64-1. */
static gboolean int_text(const char *s, gboolean *neg, uint64_t *mag, gboolean *over) {
  const char *p = s;
  *neg = FALSE;
  *over = FALSE;
  if (!p) return FALSE;
  if (*p == '+' || *p == '-') *neg = *p++ == '-';
  if (!g_ascii_isdigit(*p)) return FALSE;
  uint64_t v = 0;
  for (; g_ascii_isdigit(*p); p++) {
    unsigned d = (unsigned)(*p - '0');
    if (v > (UINT64_MAX - d) / 10) *over = TRUE;
    else v = v * 10 + d;
  }
  *mag = v;
  return *p == '\0';
}

gboolean fab_parse_int(const char *s, int64_t *v, GError **err) {
  gboolean neg, over;
  uint64_t m = 0;
  if (!int_text(s, &neg, &m, &over))
    return bad_value(err, s, "is not an integer (expected a whole number, e.g. 8 or -3)");
  if (over || (neg ? m > (uint64_t)INT64_MAX + 1 : m > (uint64_t)INT64_MAX))
    return bad_value(err, s, "is out of range (expected an integer from %" PRId64 " to %" PRId64 ")",
                     INT64_MIN, INT64_MAX);
  *v = neg ? (int64_t)(0 - m) : (int64_t)m;
  return TRUE;
}

static gboolean parse_uint(const char *s, uint64_t *v, GError **err) {
  gboolean neg, over;
  uint64_t m = 0;
  if (!int_text(s, &neg, &m, &over))
    return bad_value(err, s, "is not a whole number (expected an integer >= 0, e.g. 8)");
  if (neg && m != 0)
    return bad_value(err, s, "is negative (expected an integer >= 0, e.g. 8)");
  if (over)
    return bad_value(err, s, "is out of range (expected an integer from 0 to %" PRIu64 ")",
                     UINT64_MAX);
  *v = m;
  return TRUE;
}

/* ---- formatting values for messages ------------------------------------ */

/* v in the largest power-of-ten unit not above it, exactly: 2500000000 ps
** -> "2.5ms". units: ascending, decimal multipliers only. */
static char *fmt_decimal(uint64_t v, const char *const *names, const uint64_t *mults, int n) {
  int u = 0;
  while (u + 1 < n && v >= mults[u + 1]) u++;
  uint64_t q = v / mults[u], r = v % mults[u];
  if (!r) return g_strdup_printf("%" PRIu64 "%s", q, names[u]);
  int digits = 0;
  for (uint64_t m = mults[u]; m > 1; m /= 10) digits++;
  char frac[32];
  g_snprintf(frac, sizeof frac, "%0*" PRIu64, digits, r);
  for (int i = digits - 1; i > 0 && frac[i] == '0'; i--) frac[i] = '\0';
  return g_strdup_printf("%" PRIu64 ".%s%s", q, frac, names[u]);
}

static char *fmt_rate(uint64_t v) {
  static const char *const n[] = {"bps", "Kbps", "Mbps", "Gbps", "Tbps"};
  static const uint64_t m[] = {1, 1000ULL, 1000000ULL, 1000000000ULL, 1000000000000ULL};
  return fmt_decimal(v, n, m, 5);
}

static char *fmt_time(uint64_t v) {
  static const char *const n[] = {"ps", "ns", "us", "ms", "s"};
  static const uint64_t m[] = {1, 1000ULL, 1000000ULL, 1000000000ULL, 1000000000000ULL};
  return fmt_decimal(v, n, m, 5);
}

static char *fmt_size(uint64_t v) {
  static const char *const bn[] = {"KiB", "MiB", "GiB", "TiB"};
  if (v && v % 1024 == 0) {
    int u = 0;
    while (u < 3 && v % (1ULL << (10 * (u + 2))) == 0) u++;
    return g_strdup_printf("%" PRIu64 "%s", v >> (10 * (u + 1)), bn[u]);
  }
  static const char *const n[] = {"B", "KB", "MB", "GB", "TB"};
  static const uint64_t m[] = {1, 1000ULL, 1000000ULL, 1000000000ULL, 1000000000000ULL};
  return fmt_decimal(v, n, m, 5);
}

/* A bound (a double in stored units) in the key's unit-ish form. */
static char *fmt_bound(FabCfgType t, double b) {
  gboolean whole = b >= 0 && b < 18446744073709551616.0 && b == (double)(uint64_t)b;
  if (whole && t == FAB_CFG_RATE) return fmt_rate((uint64_t)b);
  if (whole && t == FAB_CFG_TIME) return fmt_time((uint64_t)b);
  if (whole && t == FAB_CFG_SIZE) return fmt_size((uint64_t)b);
  if (b > -1e18 && b < 1e18 && b == (double)(int64_t)b) return g_strdup_printf("%.0f", b);
  return g_strdup_printf("%g", b);
}

/* ---- schema tables ----------------------------------------------------- */

static const char *type_name(FabCfgType t) {
  switch (t) {
  case FAB_CFG_INT: return "an integer";
  case FAB_CFG_UINT: return "an integer >= 0";
  case FAB_CFG_BOOL: return "a boolean";
  case FAB_CFG_DOUBLE: return "a number";
  case FAB_CFG_RATE: return "a rate";
  case FAB_CFG_TIME: return "a time";
  case FAB_CFG_SIZE: return "a size";
  case FAB_CFG_RATIO: return "a ratio";
  case FAB_CFG_PROB: return "a probability";
  case FAB_CFG_STRING: return "a string";
  case FAB_CFG_ENUM: return "one of the choices";
  case FAB_CFG_MAP: return "a map";
  case FAB_CFG_SEQ: return "a sequence";
  default: return "a value";
  }
}

static char *choices_list(const char *const *c) {
  GString *s = g_string_new(NULL);
  for (int i = 0; c && c[i]; i++) g_string_append_printf(s, "%s%s", i ? ", " : "", c[i]);
  return g_string_free(s, FALSE);
}

/* Levenshtein distance, for "did you mean". */
static size_t edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  size_t *row = g_new(size_t, lb + 1);
  for (size_t j = 0; j <= lb; j++) row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  size_t d = row[lb];
  g_free(row);
  return d;
}

static gboolean check_bounds(const FabCfgKey *k, double v, const char *text, GError **err) {
  if (k->min == 0 && k->max == 0) return TRUE;
  gboolean has_max = k->max >= k->min;
  if (v >= k->min && (!has_max || v <= k->max)) return TRUE;
  char *lo = fmt_bound(k->type, k->min), *hi = fmt_bound(k->type, k->max);
  if (!has_max) bad_value(err, text, "is out of range (expected at least %s)", lo);
  else if (k->min == 0 && k->type != FAB_CFG_INT && k->type != FAB_CFG_DOUBLE)
    bad_value(err, text, "is out of range (expected at most %s)", hi);
  else bad_value(err, text, "is out of range (expected %s to %s)", lo, hi);
  g_free(lo);
  g_free(hi);
  return FALSE;
}

#define FIELD(T) (*(T *)((char *)target + k->offset))

/* Parse `text` (a value, or a default when n is NULL) and store it. Errors
** carry no location. */
static gboolean store_scalar(const FabCfgKey *k, const char *text, void *target, GError **err) {
  switch (k->type) {
  case FAB_CFG_INT: {
    int64_t v;
    if (!fab_parse_int(text, &v, err) || !check_bounds(k, (double)v, text, err)) return FALSE;
    FIELD(int64_t) = v;
    return TRUE;
  }
  case FAB_CFG_UINT:
  case FAB_CFG_RATE:
  case FAB_CFG_TIME:
  case FAB_CFG_SIZE: {
    uint64_t v;
    const char *t = text;
    while (*t == ' ' || *t == '\t') t++;
    if (*t == '-' && k->type == FAB_CFG_UINT && k->min > 0) /* say the real bound */
      return check_bounds(k, -1.0, text, err);
    gboolean ok = k->type == FAB_CFG_UINT   ? parse_uint(text, &v, err)
                  : k->type == FAB_CFG_RATE ? fab_parse_rate(text, &v, err)
                  : k->type == FAB_CFG_TIME ? fab_parse_time(text, &v, err)
                                            : fab_parse_size(text, &v, err);
    if (!ok || !check_bounds(k, (double)v, text, err)) return FALSE;
    FIELD(uint64_t) = v;
    return TRUE;
  }
  case FAB_CFG_DOUBLE:
  case FAB_CFG_RATIO:
  case FAB_CFG_PROB: {
    double v;
    gboolean ok = k->type == FAB_CFG_DOUBLE  ? fab_parse_double(text, &v, err)
                  : k->type == FAB_CFG_RATIO ? fab_parse_ratio(text, &v, err)
                                             : fab_parse_prob(text, &v, err);
    if (!ok || !check_bounds(k, v, text, err)) return FALSE;
    FIELD(double) = v;
    return TRUE;
  }
  case FAB_CFG_BOOL: {
    gboolean v;
    if (!fab_parse_bool(text, &v, err)) return FALSE;
    FIELD(gboolean) = v;
    return TRUE;
  }
  case FAB_CFG_ENUM:
    for (int i = 0; k->choices && k->choices[i]; i++) {
      if (strcmp(k->choices[i], text) == 0) {
        FIELD(int) = i;
        return TRUE;
      }
    }
    {
      char *list = choices_list(k->choices);
      bad_value(err, text, "is not a valid choice (expected one of: %s)", list);
      g_free(list);
    }
    return FALSE;
  default:
    g_assert_not_reached();
  }
}

static gboolean apply_default(const FabCfgKey *k, void *target, GError **err) {
  switch (k->type) {
  case FAB_CFG_NODE:
  case FAB_CFG_MAP:
  case FAB_CFG_SEQ:
    FIELD(const FabCfgNode *) = NULL;
    return TRUE;
  default:
    break;
  }
  if (!k->def) return TRUE;
  if (k->type == FAB_CFG_STRING) {
    FIELD(const char *) = k->def;
    return TRUE;
  }
  GError *e = NULL;
  if (store_scalar(k, k->def, target, &e)) return TRUE;
  g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_VALUE, "internal error: schema default of '%s': %s",
              k->name, e->message);
  g_error_free(e);
  return FALSE;
}

static gboolean apply_value(const FabCfgKey *k, const FabCfgNode *v, void *target, GError **err) {
  switch (k->type) {
  case FAB_CFG_NODE:
    FIELD(const FabCfgNode *) = v;
    return TRUE;
  case FAB_CFG_MAP:
  case FAB_CFG_SEQ: {
    FabCfgNodeKind want = k->type == FAB_CFG_MAP ? FAB_CFG_NODE_MAP : FAB_CFG_NODE_SEQ;
    if (v->kind == FAB_CFG_NODE_SCALAR && v->null && !k->required) {
      FIELD(const FabCfgNode *) = NULL;
      return TRUE;
    }
    if (v->kind != want) {
      char *f = v->kind == FAB_CFG_NODE_SCALAR && !v->null ? found(v->text) : NULL;
      node_err(v, err, FAB_CFG_ERROR_VALUE, "expected %s, found %s%s%s", type_name(k->type),
               kind_name(v), f ? " " : "", f ? f : "");
      g_free(f);
      return FALSE;
    }
    FIELD(const FabCfgNode *) = v;
    return TRUE;
  }
  default:
    break;
  }
  if (v->kind != FAB_CFG_NODE_SCALAR) {
    if (k->type == FAB_CFG_ENUM) {
      char *list = choices_list(k->choices);
      node_err(v, err, FAB_CFG_ERROR_VALUE, "expected one of: %s, found %s", list, kind_name(v));
      g_free(list);
      return FALSE;
    }
    return node_err(v, err, FAB_CFG_ERROR_VALUE, "expected %s, found %s", type_name(k->type),
                    kind_name(v));
  }
  if (k->type == FAB_CFG_STRING) {
    if (v->null && k->required)
      return node_err(v, err, FAB_CFG_ERROR_VALUE, "expected a string, found an empty value");
    FIELD(const char *) = v->null ? NULL : v->text;
    return TRUE;
  }
  GError *e = NULL;
  if (store_scalar(k, v->text, target, &e)) return TRUE;
  node_err(v, err, FAB_CFG_ERROR_VALUE, "%s", e->message);
  g_error_free(e);
  return FALSE;
}

gboolean fab_cfg_apply(const FabCfgNode *map, const FabCfgNode *where_if_null,
                       const FabCfgKey *schema, void *target, GError **err) {
  g_assert(schema && target);
  const FabCfgNode *loc = map ? map : where_if_null;
  if (map && map->kind == FAB_CFG_NODE_SCALAR && map->null) map = NULL;
  if (map && map->kind != FAB_CFG_NODE_MAP) {
    char *f = map->kind == FAB_CFG_NODE_SCALAR ? found(map->text) : NULL;
    node_err(map, err, FAB_CFG_ERROR_VALUE, "expected a map of keys, found %s%s%s",
             kind_name(map), f ? " " : "", f ? f : "");
    g_free(f);
    return FALSE;
  }
  for (size_t i = 0; map && i < map->keys->len; i++) {
    const FabCfgNode *kn = g_ptr_array_index(map->keys, i);
    const FabCfgKey *k = schema;
    while (k->type != FAB_CFG_END && strcmp(k->name, kn->text) != 0) k++;
    if (k->type != FAB_CFG_END) continue;
    GString *names = g_string_new(NULL);
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (k = schema; k->type != FAB_CFG_END; k++) {
      g_string_append_printf(names, "%s%s", k == schema ? "" : ", ", k->name);
      size_t d = edit_distance(kn->text, k->name);
      if (d < best_d) best_d = d, best = k->name;
    }
    size_t len = strlen(kn->text);
    if (best && (best_d > 2 || best_d * 3 > len)) best = NULL;
    if (schema->type == FAB_CFG_END) g_string_assign(names, "no keys here");
    node_err(kn, err, FAB_CFG_ERROR_KEY, "unknown key '%s' (expected one of: %s)%s%s%s", kn->text,
             names->str, best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
    g_string_free(names, TRUE);
    return FALSE;
  }
  for (const FabCfgKey *k = schema; k->type != FAB_CFG_END; k++) {
    const FabCfgNode *v = fab_cfg_get(map, k->name);
    if (v) {
      if (!apply_value(k, v, target, err)) return FALSE;
    } else if (k->required) {
      if (k->type == FAB_CFG_ENUM) {
        char *list = choices_list(k->choices);
        gboolean r = node_err(loc, err, FAB_CFG_ERROR_KEY, "missing required key '%s' (expected one of: %s)",
                              k->name, list);
        g_free(list);
        return r;
      }
      return node_err(loc, err, FAB_CFG_ERROR_KEY, "missing required key '%s' (%s)", k->name,
                      type_name(k->type));
    } else if (!apply_default(k, target, err)) {
      return FALSE;
    }
  }
  return TRUE;
}

/* YAML into the configuration tree, and include: fragments merged under
** it. See config.h. */
#include "cfg_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#define MAX_DEPTH 256 /* nesting of maps and sequences */

/* ---- files ------------------------------------------------------------- */

gboolean fab_cfg_read_file(const char *path, int64_t max, char **text, size_t *len, const char **why) {
  *text = NULL;
  if (len) *len = 0;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO without a writer does not block */
  if (fd < 0) return *why = g_strerror(errno), FALSE;
  struct stat st;
  gboolean ok = FALSE;
  if (fstat(fd, &st) != 0) *why = g_strerror(errno);
  else if (S_ISDIR(st.st_mode)) *why = "it is a directory";
  else if (!S_ISREG(st.st_mode)) *why = "not a regular file (a device, FIFO or socket is never read)";
  else if (st.st_size > max) {
    char *m = g_strdup_printf("larger than %" G_GINT64_FORMAT " MiB, the most fabsim reads of such a file", max >> 20);
    *why = g_intern_string(m); /* a few distinct limits: kept for the process */
    g_free(m);
  } else ok = TRUE;
  if (!ok) {
    close(fd);
    return FALSE;
  }
  size_t cap = (size_t)st.st_size, n = 0;
  char *buf = g_malloc(cap + 1);
  ok = FALSE;
  for (;;) {
    ssize_t got = read(fd, buf + n, cap - n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      *why = g_strerror(errno);
      break;
    }
    n += (size_t)got;
    if (got == 0 || n == cap) { /* a file that grew while read is cut at its size when opened */
      ok = TRUE;
      break;
    }
  }
  close(fd);
  if (!ok) {
    g_free(buf);
    return FALSE;
  }
  buf[n] = 0;
  *text = buf;
  if (len) *len = n;
  return TRUE;
}

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
  return fab_cfg__intern(r->cfg, r->buf->str);
}

static const char *mark_where(Reader *r, yaml_mark_t m) {
  return where_of(r, m.line, m.column, m.index);
}

static void syntax_error(Reader *r) {
  yaml_parser_t *p = &r->yp;
  const char *problem = p->problem ? p->problem : "invalid YAML";
  if (p->error == YAML_MEMORY_ERROR) {
    fab_cfg__err_at(r->err, FAB_CFG_ERROR_PARSE, r->file, NULL, "out of memory while parsing YAML");
    return;
  }
  if (p->error == YAML_READER_ERROR) { /* only a byte offset: find line and column */
    size_t off = p->problem_offset < r->len ? p->problem_offset : r->len, line = 0, col = 0;
    for (size_t i = 0; i < off; i++) {
      if (r->text[i] == '\n') line++, col = 0;
      else col++;
    }
    char *w = g_strdup(where_of(r, line, col, off));
    fab_cfg__err_at(r->err, FAB_CFG_ERROR_PARSE, w, NULL, "YAML syntax error: %s", problem);
    g_free(w);
    return;
  }
  char *w = g_strdup(mark_where(r, p->problem_mark));
  if (p->context) {
    char *cw = g_strdup(mark_where(r, p->context_mark));
    fab_cfg__err_at(r->err, FAB_CFG_ERROR_PARSE, w, NULL, "YAML syntax error: %s (%s at %s)", problem,
           p->context, cw);
    g_free(cw);
  } else {
    fab_cfg__err_at(r->err, FAB_CFG_ERROR_PARSE, w, NULL, "YAML syntax error: %s", problem);
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
  return fab_cfg__err_at(r->err, FAB_CFG_ERROR_PARSE, w, path,
                "YAML anchors and aliases (&name, *name) are not supported "
                "(use include: or repeat the value)");
}

static const char *child_path(Reader *r, const char *path, const char *key) {
  if (*path) g_string_printf(r->buf, "%s.%s", path, key);
  else g_string_assign(r->buf, key);
  return fab_cfg__intern(r->cfg, r->buf->str);
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
    FabCfgNode *n = fab_cfg__node_new(cfg, FAB_CFG_NODE_SCALAR, path, mark_where(r, ev->start_mark));
    const char *v = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    if (strlen(v) != len) { /* a "\0" escape: the text would end there */
      fab_cfg__err_at(r->err, FAB_CFG_ERROR_PARSE, n->where, path, "the value contains a NUL character (\\0)");
      return NULL;
    }
    if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && is_null_text(v, len)) fab_cfg__set_null(n);
    else n->text = g_string_chunk_insert_len(cfg->strs, v, (gssize)len);
    return n;
  }
  case YAML_SEQUENCE_START_EVENT:
  case YAML_MAPPING_START_EVENT:
    break;
  default:
    fab_cfg__err_at(r->err, FAB_CFG_ERROR_PARSE, mark_where(r, ev->start_mark), path,
           "unexpected YAML event");
    return NULL;
  }

  gboolean is_map = ev->type == YAML_MAPPING_START_EVENT;
  if (is_map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor)
    return anchor_error(r, ev, path), NULL;
  const char *w = mark_where(r, ev->start_mark);
  if (depth >= MAX_DEPTH) {
    fab_cfg__err_at(r->err, FAB_CFG_ERROR_PARSE, w, path, "nested more than %d levels deep", MAX_DEPTH);
    return NULL;
  }
  FabCfgNode *n = fab_cfg__node_new(cfg, is_map ? FAB_CFG_NODE_MAP : FAB_CFG_NODE_SEQ, path, w);
  for (;;) {
    yaml_event_t e;
    if (!next_event(r, &e)) return NULL;
    if (e.type == YAML_MAPPING_END_EVENT || e.type == YAML_SEQUENCE_END_EVENT) {
      yaml_event_delete(&e);
      return n;
    }
    if (!is_map) {
      g_string_printf(r->buf, "%s[%u]", path, n->items->len);
      FabCfgNode *item = read_node(r, &e, fab_cfg__intern(cfg, r->buf->str), depth + 1);
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
      fab_cfg__err_at(r->err, FAB_CFG_ERROR_PARSE, mark_where(r, e.start_mark), path,
             "a map key must be plain text, not a %s",
             e.type == YAML_MAPPING_START_EVENT ? "map" : "sequence");
      yaml_event_delete(&e);
      return NULL;
    }
    const char *ktext = (const char *)e.data.scalar.value;
    if (e.data.scalar.length == 0 || strlen(ktext) != e.data.scalar.length) {
      fab_cfg__err_at(r->err, FAB_CFG_ERROR_PARSE, mark_where(r, e.start_mark), path,
             "empty or invalid map key");
      yaml_event_delete(&e);
      return NULL;
    }
    const char *cpath = child_path(r, path, ktext);
    FabCfgNode *key = fab_cfg__node_new(cfg, FAB_CFG_NODE_SCALAR, cpath, mark_where(r, e.start_mark));
    key->text = fab_cfg__intern(cfg, ktext);
    yaml_event_delete(&e);
    int dup = fab_cfg__map_find(n, key->text);
    if (dup >= 0) {
      const FabCfgNode *first = g_ptr_array_index(n->keys, dup);
      fab_cfg__node_err(key, r->err, FAB_CFG_ERROR_PARSE, "duplicate key '%s' (first given at %s)",
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
FabCfgNode *fab_cfg__parse_yaml(FabCfg *cfg, const char *text, size_t len, const char *file,
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
    root = fab_cfg__node_new(cfg, FAB_CFG_NODE_SCALAR, root_path, where_of(&r, 0, 0, 0));
    fab_cfg__set_null(root);
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
    fab_cfg__err_at(err, FAB_CFG_ERROR_PARSE, mark_where(&r, e.start_mark), NULL,
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
  FabCfgNode *root = fab_cfg__parse_yaml(cfg, text, len, file, -1, "", err);
  if (!root) return NULL;
  if (root->kind == FAB_CFG_NODE_SCALAR && root->null)
    return fab_cfg__node_new(cfg, FAB_CFG_NODE_MAP, root->path, root->where);
  if (root->kind != FAB_CFG_NODE_MAP) {
    char *f = root->kind == FAB_CFG_NODE_SCALAR ? fab_cfg__found(root->text) : g_strdup("a sequence");
    fab_cfg__node_err(root, err, FAB_CFG_ERROR_PARSE,
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
    int j = fab_cfg__map_find(over, k->text);
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
  GPtrArray *canon;  /* realpath of each file being loaded */
  GPtrArray *names;  /* its name in locations */
  GHashTable *done;  /* realpath -> the file's tree with its includes merged, kept pristine */
} IncStack;

/* A copy of the tree under n that merges can change: maps and sequences are
** new, scalars (never changed once made) are shared. */
static FabCfgNode *copy_tree(FabCfg *cfg, const FabCfgNode *n) {
  if (n->kind == FAB_CFG_NODE_SCALAR) return (FabCfgNode *)n;
  FabCfgNode *c = fab_cfg__node_new(cfg, n->kind, n->path, n->where);
  c->keywhere = n->keywhere;
  for (guint i = 0; i < n->items->len; i++) {
    if (n->kind == FAB_CFG_NODE_MAP) g_ptr_array_add(c->keys, g_ptr_array_index(n->keys, i));
    g_ptr_array_add(c->items, copy_tree(cfg, g_ptr_array_index(n->items, i)));
  }
  return c;
}

static FabCfgNode *load_tree(FabCfg *cfg, const char *file, const char *text, size_t len,
                             const char *dir, IncStack *st, GError **err);

/* An included file's tree. A file included again (a diamond: A includes B
** and C, both include D) is read and parsed once: later includes get a copy
** of its merged tree, so an include graph costs its files, not its paths. */
static FabCfgNode *load_include(FabCfg *cfg, const FabCfgNode *ent, const char *dir,
                                IncStack *st, GError **err) {
  const char *name = ent->text;
  char *path = (!dir || strcmp(dir, ".") == 0 || g_path_is_absolute(name))
                   ? g_strdup(name)
                   : g_build_filename(dir, name, NULL);
  FabCfgNode *root = NULL;
  char *contents = NULL;
  size_t len = 0;
  const char *why = NULL;
  /* as written, and where it was looked for when that differs (a string scenario's includes are relative
  ** to the directory it was given with, which the text does not show) */
  char *as = strcmp(name, path) ? g_strdup_printf("'%s' (as %s)", name, path) : g_strdup_printf("'%s'", path);
  char *canon = realpath(path, NULL);
  if (!canon) {
    fab_cfg__node_err(ent, err, FAB_CFG_ERROR_IO, "cannot read included file %s: %s", as, g_strerror(errno));
    goto out;
  }
  for (guint i = 0; i < st->canon->len; i++) {
    if (strcmp(g_ptr_array_index(st->canon, i), canon) != 0) continue;
    GString *cyc = g_string_new(NULL);
    for (guint j = i; j < st->names->len; j++)
      g_string_append_printf(cyc, "%s -> ", (const char *)g_ptr_array_index(st->names, j));
    g_string_append(cyc, path);
    fab_cfg__node_err(ent, err, FAB_CFG_ERROR_PARSE, "include cycle: %s", cyc->str);
    g_string_free(cyc, TRUE);
    goto out;
  }
  const FabCfgNode *seen = g_hash_table_lookup(st->done, canon);
  if (seen) {
    root = copy_tree(cfg, seen);
    goto out;
  }
  if (!fab_cfg_read_file(path, FAB_CFG_FILE_MAX, &contents, &len, &why)) {
    fab_cfg__node_err(ent, err, FAB_CFG_ERROR_IO, "cannot read included file %s: %s", as, why);
    goto out;
  }
  char *subdir = g_path_get_dirname(path);
  g_ptr_array_add(st->canon, g_strdup(canon));
  g_ptr_array_add(st->names, g_strdup(path));
  root = load_tree(cfg, fab_cfg__intern(cfg, path), contents, len, subdir, st, err);
  g_ptr_array_remove_index(st->canon, st->canon->len - 1);
  g_ptr_array_remove_index(st->names, st->names->len - 1);
  g_free(subdir);
  if (root) {
    g_hash_table_insert(st->done, canon, copy_tree(cfg, root));
    canon = NULL;
  }
out:
  free(canon);
  g_free(contents);
  g_free(path);
  g_free(as);
  return root;
}

/* Parse one file's text and merge its includes under it. */
static FabCfgNode *load_tree(FabCfg *cfg, const char *file, const char *text, size_t len,
                             const char *dir, IncStack *st, GError **err) {
  FabCfgNode *root = parse_file_text(cfg, text, len, file, err);
  if (!root) return NULL;
  int at = fab_cfg__map_find(root, "include");
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
        ok = fab_cfg__node_err(it, err, FAB_CFG_ERROR_PARSE, "expected a file name, found %s",
                      fab_cfg__kind_name(it));
      else g_ptr_array_add(ents, it);
    }
  } else {
    ok = fab_cfg__node_err(inc, err, FAB_CFG_ERROR_PARSE,
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
  FabCfg *cfg = fab_cfg__new();
  g_string_append_len(cfg->text, text, (gssize)len);
  IncStack st = {g_ptr_array_new_with_free_func(g_free), g_ptr_array_new_with_free_func(g_free),
                 g_hash_table_new_full(g_str_hash, g_str_equal, free, NULL)};
  if (canon) {
    g_ptr_array_add(st.canon, g_strdup(canon));
    g_ptr_array_add(st.names, g_strdup(name));
  }
  cfg->root = load_tree(cfg, fab_cfg__intern(cfg, name), text, len, dir, &st, err);
  g_ptr_array_unref(st.canon);
  g_ptr_array_unref(st.names);
  g_hash_table_unref(st.done);
  if (!cfg->root) {
    fab_cfg_free(cfg);
    return NULL;
  }
  return cfg;
}

FabCfg *fab_cfg_load_file(const char *path, GError **err) {
  char *text = NULL;
  size_t len = 0;
  const char *why = NULL;
  if (!fab_cfg_read_file(path, FAB_CFG_FILE_MAX, &text, &len, &why)) {
    g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_IO, "%s: cannot read scenario: %s", path, why);
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

FabCfg *fab_cfg_load_string_in(const char *text, const char *name, const char *dir, GError **err) {
  return load(text, strlen(text), name ? name : "<string>", NULL, dir, err);
}


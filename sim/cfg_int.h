/*
** Inside the configuration reader (config.h): the tree's node and document
** structs and the helpers its four files share (cfg_tree.c: nodes, errors and
** --set; cfg_yaml.c: YAML and includes; cfg_value.c: units; cfg_schema.c:
** schema tables). Not for use outside sim/cfg_*.c.
*/
#ifndef FAB_CFG_INT_H
#define FAB_CFG_INT_H

#include "config.h"

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

/* ---- errors (cfg_tree.c) ------------------------------------------------ */

/* Set *err to "WHERE: PATH: message" (either part left out when empty).
** Returns FALSE. */
gboolean fab_cfg__err_at(GError **err, int code, const char *where, const char *path, const char *fmt, ...)
    G_GNUC_PRINTF(5, 6);

/* The same located at node n (a map given under a key: at its key). */
gboolean fab_cfg__node_err(const FabCfgNode *n, GError **err, int code, const char *fmt, ...) G_GNUC_PRINTF(4, 5);

/* "'text'" for messages, or "an empty value"; long texts are cut. Transfer full. */
char *fab_cfg__found(const char *s);

/* Set *err (no location) to "FOUND <fmt...>", e.g. "'x' is not a rate (...)". Returns FALSE. */
gboolean fab_cfg__bad_value(GError **err, const char *s, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* "a map", "a sequence", "a scalar" or "an empty value". */
const char *fab_cfg__kind_name(const FabCfgNode *n);

/* ---- nodes (cfg_tree.c) -------------------------------------------------- */

FabCfg *fab_cfg__new(void);
const char *fab_cfg__intern(FabCfg *cfg, const char *s);
/* A node owned by cfg; path and where must already be interned in cfg. */
FabCfgNode *fab_cfg__node_new(FabCfg *cfg, FabCfgNodeKind kind, const char *path, const char *where);
void fab_cfg__set_null(FabCfgNode *n);
/* Index of `key` in map, -1 if absent (or not a map). */
int fab_cfg__map_find(const FabCfgNode *map, const char *key);

/* ---- YAML (cfg_yaml.c) ----------------------------------------------------- */

/* Parse one YAML stream holding at most one document; set_base >= 0 locates
** errors in a --set argument ("--set:1:COL"). The root, or a null scalar for
** an empty stream. */
FabCfgNode *fab_cfg__parse_yaml(FabCfg *cfg, const char *text, size_t len, const char *file, long set_base,
                                const char *root_path, GError **err);

/* ---- values (cfg_value.c) -------------------------------------------------- */

/* A value in its unit for messages ("2.5ms", "64KiB", "100Gbps"). Transfer full. */
char *fab_cfg__fmt_rate(uint64_t v);
char *fab_cfg__fmt_time(uint64_t v);
char *fab_cfg__fmt_size(uint64_t v);

/* A whole number >= 0 (no unit). */
gboolean fab_cfg__parse_uint(const char *s, uint64_t *v, GError **err);

#endif

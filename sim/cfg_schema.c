/* Schema tables: filling C structs from maps of the tree. See config.h. */
#include "cfg_int.h"

#include <math.h>
#include <string.h>

/* A bound (a double in stored units) in the key's unit-ish form. */
static char *fmt_bound(FabCfgType t, double b) {
  gboolean whole = b >= 0 && b < 18446744073709551616.0 && b == (double)(uint64_t)b;
  if (whole && t == FAB_CFG_RATE) return fab_cfg__fmt_rate((uint64_t)b);
  if (whole && t == FAB_CFG_TIME) return fab_cfg__fmt_time((uint64_t)b);
  if (whole && t == FAB_CFG_SIZE) return fab_cfg__fmt_size((uint64_t)b);
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

/* The choice `text` was probably meant as (case aside: "RoCEv2", "adaptiv"),
** by the rule of unknown keys: within 2 edits and a third of its length. */
static const char *closest_choice(const char *text, const char *const *choices) {
  char *low = g_ascii_strdown(text, -1);
  const char *best = NULL;
  size_t best_d = (size_t)-1, len = strlen(text);
  for (int i = 0; choices && choices[i]; i++) {
    size_t d = edit_distance(low, choices[i]);
    if (d < best_d) best_d = d, best = choices[i];
  }
  g_free(low);
  return best && best_d <= 2 && best_d * 3 <= len ? best : NULL;
}

static gboolean check_bounds(const FabCfgKey *k, double v, const char *text, GError **err) {
  if (k->min == 0 && k->max == 0) return TRUE;
  gboolean has_max = k->max >= k->min;
  if (v >= k->min && (!has_max || v <= k->max)) return TRUE;
  char *lo = fmt_bound(k->type, k->min), *hi = fmt_bound(k->type, k->max);
  if (!has_max) fab_cfg__bad_value(err, text, "is out of range (expected at least %s)", lo);
  else if (k->min == 0 && k->type != FAB_CFG_INT && k->type != FAB_CFG_DOUBLE)
    fab_cfg__bad_value(err, text, "is out of range (expected at most %s)", hi);
  else fab_cfg__bad_value(err, text, "is out of range (expected %s to %s)", lo, hi);
  g_free(lo);
  g_free(hi);
  return FALSE;
}

#define FIELD(T) (*(T *)((char *)target + k->offset))

/* The largest value an unsigned field of `size` bytes holds. */
static uint64_t width_max(size_t size) { return size >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * size)) - 1; }

/* Store v into an unsigned field of k->size bytes; an error if it does not fit. */
static gboolean store_unsigned(const FabCfgKey *k, uint64_t v, const char *text, void *target, GError **err) {
  if (v > width_max(k->size)) {
    char *hi = fmt_bound(k->type, (double)width_max(k->size));
    fab_cfg__bad_value(err, text, "is out of range (expected at most %s)", hi);
    g_free(hi);
    return FALSE;
  }
  switch (k->size) {
  case 1: FIELD(uint8_t) = (uint8_t)v; break;
  case 2: FIELD(uint16_t) = (uint16_t)v; break;
  case 4: FIELD(uint32_t) = (uint32_t)v; break;
  case 8: FIELD(uint64_t) = v; break;
  default: g_error("schema row '%s': an unsigned field of %zu bytes", k->name, k->size);
  }
  return TRUE;
}

static gboolean store_signed(const FabCfgKey *k, int64_t v, const char *text, void *target, GError **err) {
  int64_t hi = k->size >= 8 ? INT64_MAX : (INT64_C(1) << (8 * k->size - 1)) - 1, lo = -hi - 1;
  if (v < lo || v > hi)
    return fab_cfg__bad_value(err, text, "is out of range (expected an integer from %" G_GINT64_FORMAT " to %"
                              G_GINT64_FORMAT ")", lo, hi);
  switch (k->size) {
  case 1: FIELD(int8_t) = (int8_t)v; break;
  case 2: FIELD(int16_t) = (int16_t)v; break;
  case 4: FIELD(int32_t) = (int32_t)v; break;
  case 8: FIELD(int64_t) = v; break;
  default: g_error("schema row '%s': a signed field of %zu bytes", k->name, k->size);
  }
  return TRUE;
}

static void store_bool(const FabCfgKey *k, gboolean v, void *target) {
  if (k->size == sizeof(bool)) FIELD(bool) = v != FALSE;
  else if (k->size == sizeof(gboolean)) FIELD(gboolean) = v;
  else g_error("schema row '%s': a boolean field of %zu bytes", k->name, k->size);
}

static void store_enum(const FabCfgKey *k, int i, void *target) {
  if (k->size == sizeof(int)) FIELD(int) = i;
  else if (k->size == 1) FIELD(uint8_t) = (uint8_t)i;
  else if (k->size == 2) FIELD(uint16_t) = (uint16_t)i;
  else g_error("schema row '%s': an enum field of %zu bytes", k->name, k->size);
}

/* Parse `text` (a value, or a default) and store it. Errors carry no location. */
static gboolean store_scalar(const FabCfgKey *k, const char *text, void *target, GError **err) {
  switch (k->type) {
  case FAB_CFG_INT: {
    int64_t v;
    if (!fab_parse_int(text, &v, err) || !check_bounds(k, (double)v, text, err)) return FALSE;
    return store_signed(k, v, text, target, err);
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
    gboolean ok = k->type == FAB_CFG_UINT   ? fab_cfg__parse_uint(text, &v, err)
                  : k->type == FAB_CFG_RATE ? fab_parse_rate(text, &v, err)
                  : k->type == FAB_CFG_TIME ? fab_parse_time(text, &v, err)
                                            : fab_parse_size(text, &v, err);
    if (!ok || !check_bounds(k, (double)v, text, err)) return FALSE;
    return store_unsigned(k, v, text, target, err);
  }
  case FAB_CFG_DOUBLE:
  case FAB_CFG_RATIO:
  case FAB_CFG_PROB: {
    double v;
    gboolean ok = k->type == FAB_CFG_DOUBLE  ? fab_parse_double(text, &v, err)
                  : k->type == FAB_CFG_RATIO ? fab_parse_ratio(text, &v, err)
                                             : fab_parse_prob(text, &v, err);
    if (!ok || !check_bounds(k, v, text, err)) return FALSE;
    g_assert(k->size == sizeof(double));
    FIELD(double) = v;
    return TRUE;
  }
  case FAB_CFG_BOOL: {
    gboolean v;
    if (!fab_parse_bool(text, &v, err)) return FALSE;
    store_bool(k, v, target);
    return TRUE;
  }
  case FAB_CFG_ENUM:
    for (int i = 0; k->choices && k->choices[i]; i++) {
      if (strcmp(k->choices[i], text) == 0) {
        store_enum(k, i, target);
        return TRUE;
      }
    }
    {
      char *list = choices_list(k->choices);
      const char *near = closest_choice(text, k->choices);
      fab_cfg__bad_value(err, text, "is not a valid choice (expected one of: %s)%s%s%s", list,
                         near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
      g_free(list);
    }
    return FALSE;
  default:
    g_assert_not_reached();
  }
}

static gboolean is_pointer(FabCfgType t) {
  return t == FAB_CFG_NODE || t == FAB_CFG_MAP || t == FAB_CFG_SEQ || t == FAB_CFG_STRING;
}

static gboolean apply_default(const FabCfgKey *k, void *target, GError **err) {
  if (is_pointer(k->type)) g_assert(k->size == sizeof(void *));
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
      char *f = v->kind == FAB_CFG_NODE_SCALAR && !v->null ? fab_cfg__found(v->text) : NULL;
      fab_cfg__node_err(v, err, FAB_CFG_ERROR_VALUE, "expected %s, found %s%s%s", type_name(k->type),
                        fab_cfg__kind_name(v), f ? " " : "", f ? f : "");
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
      fab_cfg__node_err(v, err, FAB_CFG_ERROR_VALUE, "expected one of: %s, found %s", list,
                        fab_cfg__kind_name(v));
      g_free(list);
      return FALSE;
    }
    return fab_cfg__node_err(v, err, FAB_CFG_ERROR_VALUE, "expected %s, found %s", type_name(k->type),
                             fab_cfg__kind_name(v));
  }
  if (k->type == FAB_CFG_STRING) {
    if (v->null && k->required)
      return fab_cfg__node_err(v, err, FAB_CFG_ERROR_VALUE, "expected a string, found an empty value");
    FIELD(const char *) = v->null ? NULL : v->text;
    return TRUE;
  }
  GError *e = NULL;
  if (store_scalar(k, v->text, target, &e)) return TRUE;
  fab_cfg__node_err(v, err, FAB_CFG_ERROR_VALUE, "%s", e->message);
  g_error_free(e);
  return FALSE;
}

/* ---- walking a schema's rows, splices followed ---------------------------- */

#define MAX_SPLICE 8

typedef struct Rows {
  const FabCfgKey *at[MAX_SPLICE]; /* the row being looked at, per level */
  int depth;
} Rows;

/* The first row of `schema` (splices entered), NULL if it has none. */
static const FabCfgKey *rows_first(Rows *it, const FabCfgKey *schema);

/* The row after the current one, NULL at the end. */
static const FabCfgKey *rows_settle(Rows *it) {
  for (;;) {
    const FabCfgKey *k = it->at[it->depth];
    if (k->type == FAB_CFG_SPLICE) {
      g_assert(it->depth + 1 < MAX_SPLICE && k->more);
      it->at[++it->depth] = k->more;
      continue;
    }
    if (k->type != FAB_CFG_END) return k;
    if (it->depth == 0) return NULL;
    it->depth--;
    it->at[it->depth]++;
  }
}

static const FabCfgKey *rows_first(Rows *it, const FabCfgKey *schema) {
  it->depth = 0;
  it->at[0] = schema;
  return rows_settle(it);
}

static const FabCfgKey *rows_next(Rows *it) {
  it->at[it->depth]++;
  return rows_settle(it);
}

static const FabCfgKey *find_row(const FabCfgKey *schema, const char *name) {
  Rows it;
  for (const FabCfgKey *k = rows_first(&it, schema); k; k = rows_next(&it))
    if (strcmp(k->name, name) == 0) return k;
  return NULL;
}

int fab_cfg_enum(const FabCfgNode *n, const char *const *choices, GError **err) {
  int v = -1;
  FabCfgKey k = {.name = "", .type = FAB_CFG_ENUM, .offset = 0, .size = sizeof(int), .choices = choices};
  return apply_value(&k, n, &v, err) ? v : -1;
}

bool fab_cfg_schema_has(const FabCfgKey *schema, const char *key) { return find_row(schema, key) != NULL; }

/* "unknown key 'x' (expected one of: ...); did you mean 'y'?" at key node kn. */
static gboolean unknown_key(const FabCfgNode *kn, const FabCfgKey *schema, GError **err) {
  GString *names = g_string_new(NULL);
  const char *best = NULL;
  size_t best_d = (size_t)-1;
  Rows it;
  for (const FabCfgKey *k = rows_first(&it, schema); k; k = rows_next(&it)) {
    g_string_append_printf(names, "%s%s", names->len ? ", " : "", k->name);
    size_t d = edit_distance(kn->text, k->name);
    if (d < best_d) best_d = d, best = k->name;
  }
  size_t len = strlen(kn->text);
  if (best && (best_d > 2 || best_d * 3 > len)) best = NULL;
  if (!names->len) g_string_assign(names, "no keys here");
  fab_cfg__node_err(kn, err, FAB_CFG_ERROR_KEY, "unknown key '%s' (expected one of: %s)%s%s%s", kn->text,
                    names->str, best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
  g_string_free(names, TRUE);
  return FALSE;
}

static gboolean missing_key(const FabCfgNode *loc, const FabCfgKey *k, GError **err) {
  if (k->type == FAB_CFG_ENUM) {
    char *list = choices_list(k->choices);
    gboolean r = fab_cfg__node_err(loc, err, FAB_CFG_ERROR_KEY, "missing required key '%s' (expected one of: %s)",
                                   k->name, list);
    g_free(list);
    return r;
  }
  return fab_cfg__node_err(loc, err, FAB_CFG_ERROR_KEY, "missing required key '%s' (%s)", k->name,
                           type_name(k->type));
}

gboolean fab_cfg_apply(const FabCfgNode *map, const FabCfgNode *where_if_null,
                       const FabCfgKey *schema, void *target, GError **err) {
  g_assert(schema && target);
  const FabCfgNode *loc = map ? map : where_if_null;
  if (map && map->kind == FAB_CFG_NODE_SCALAR && map->null) map = NULL;
  if (map && map->kind != FAB_CFG_NODE_MAP) {
    char *f = map->kind == FAB_CFG_NODE_SCALAR ? fab_cfg__found(map->text) : NULL;
    fab_cfg__node_err(map, err, FAB_CFG_ERROR_VALUE, "expected a map of keys, found %s%s%s",
                      fab_cfg__kind_name(map), f ? " " : "", f ? f : "");
    g_free(f);
    return FALSE;
  }
  for (size_t i = 0; map && i < map->keys->len; i++) {
    const FabCfgNode *kn = g_ptr_array_index(map->keys, i);
    if (!find_row(schema, kn->text)) return unknown_key(kn, schema, err);
  }
  Rows it;
  for (const FabCfgKey *k = rows_first(&it, schema); k; k = rows_next(&it)) {
    const FabCfgNode *v = fab_cfg_get(map, k->name);
    if (v) {
      if (!apply_value(k, v, target, err)) return FALSE;
    } else if (k->required) {
      return missing_key(loc, k, err);
    } else if (!apply_default(k, target, err)) {
      return FALSE;
    }
  }
  return TRUE;
}

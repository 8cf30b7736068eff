/* Field tables: the JSON writer, path lookups and sweep columns. See fields.h. */
#include "fields.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void fab_json_put_str(GString *s, const char *v) {
  g_string_append_c(s, '"');
  for (const unsigned char *p = (const unsigned char *)(v ? v : ""); *p; p++) {
    switch (*p) {
    case '"': g_string_append(s, "\\\""); break;
    case '\\': g_string_append(s, "\\\\"); break;
    case '\n': g_string_append(s, "\\n"); break;
    case '\t': g_string_append(s, "\\t"); break;
    case '\r': g_string_append(s, "\\r"); break;
    default:
      if (*p < 0x20) g_string_append_printf(s, "\\u%04x", *p);
      else g_string_append_c(s, (char)*p);
    }
  }
  g_string_append_c(s, '"');
}

void fab_json_put_num(GString *s, double v) {
  if (!isfinite(v)) {
    g_string_append(s, "null");
    return;
  }
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(buf, sizeof buf, "%.9g", v);
  g_string_append(s, buf);
}

static const void *at(const void *rec, size_t off) { return (const char *)rec + off; }
static size_t count_of(const void *rec, const FabField *f) { return *(const size_t *)at(rec, f->off_n); }

/* A scalar field as a double (NaN: null); FALSE if it is not a number. */
static gboolean scalar(const void *rec, const FabField *f, double *v) {
  const void *p = at(rec, f->off);
  switch (f->type) {
  case FAB_F_U8: *v = *(const uint8_t *)p; break;
  case FAB_F_U32: *v = *(const uint32_t *)p; break;
  case FAB_F_I32: *v = *(const int32_t *)p; break;
  case FAB_F_U64: *v = (double)*(const uint64_t *)p; break;
  case FAB_F_F64: *v = *(const double *)p; break;
  case FAB_F_PS_S: *v = (double)*(const uint64_t *)p / 1e12; break;
  default: return FALSE;
  }
  if ((f->flags & FAB_FF_NULL0) && *v == 0) *v = NAN;
  return TRUE;
}

static void put_value(GString *s, const FabField *f, const void *rec);

static void put_array(GString *s, const FabField *f, const void *rec) {
  size_t n = count_of(rec, f);
  const char *base = *(const char *const *)at(rec, f->off);
  if (!n && (f->flags & FAB_FF_NULLABLE)) {
    g_string_append(s, "null");
    return;
  }
  g_string_append_c(s, f->type == FAB_F_KEYED ? '{' : '[');
  for (size_t i = 0; i < n; i++) {
    if (i) g_string_append(s, ", ");
    switch (f->type) {
    case FAB_F_F64_ARR: fab_json_put_num(s, ((const double *)(const void *)base)[i]); break;
    case FAB_F_NAME_ARR: fab_json_put_str(s, base + i * FAB_FIELD_NAME_LEN); break;
    case FAB_F_STR_ARR: fab_json_put_str(s, ((const char *const *)(const void *)base)[i]); break;
    case FAB_F_KEYED: { /* the record's first field (a string) is the key, the rest its object */
      const void *r = base + i * f->sub->size;
      FabFieldTable rest = *f->sub;
      fab_json_put_str(s, FAB_FIELD_AT(r, &rest.f[0], const char *));
      g_string_append(s, ": ");
      rest.f++, rest.n--;
      fab_fields_json(s, &rest, r);
      break;
    }
    default: fab_fields_json(s, f->sub, base + i * f->sub->size); break;
    }
  }
  g_string_append_c(s, f->type == FAB_F_KEYED ? '}' : ']');
}

static void put_value(GString *s, const FabField *f, const void *rec) {
  const void *p = at(rec, f->off);
  double v;
  switch (f->type) {
  case FAB_F_U8: g_string_append_printf(s, "%u", *(const uint8_t *)p); break;
  case FAB_F_U32:
    if ((f->flags & FAB_FF_NULL0) && !*(const uint32_t *)p) g_string_append(s, "null");
    else g_string_append_printf(s, "%u", *(const uint32_t *)p);
    break;
  case FAB_F_I32: g_string_append_printf(s, "%d", *(const int32_t *)p); break;
  case FAB_F_U64:
    if ((f->flags & FAB_FF_NULL0) && !*(const uint64_t *)p) g_string_append(s, "null");
    else g_string_append_printf(s, "%" G_GUINT64_FORMAT, *(const uint64_t *)p);
    break;
  case FAB_F_F64:
  case FAB_F_PS_S:
    scalar(rec, f, &v);
    fab_json_put_num(s, v);
    break;
  case FAB_F_STR: {
    const char *str = *(const char *const *)p;
    if (!str && (f->flags & FAB_FF_NULLABLE)) g_string_append(s, "null");
    else fab_json_put_str(s, str);
    break;
  }
  case FAB_F_NAME: fab_json_put_str(s, (const char *)p); break;
  case FAB_F_OBJ: fab_fields_json(s, f->sub, p); break;
  case FAB_F_PTR: {
    const void *r = *(const void *const *)p;
    if (r) fab_fields_json(s, f->sub, r);
    else g_string_append(s, "null");
    break;
  }
  case FAB_F_ARR:
  case FAB_F_F64_ARR:
  case FAB_F_NAME_ARR:
  case FAB_F_STR_ARR:
  case FAB_F_KEYED: put_array(s, f, rec); break;
  }
}

void fab_fields_json(GString *s, const FabFieldTable *t, const void *rec) {
  g_string_append_c(s, '{');
  bool first = true;
  for (size_t i = 0; i < t->n; i++) {
    const FabField *f = &t->f[i];
    if (!(f->flags & FAB_FF_JSON)) continue;
    if (!first) g_string_append(s, ", ");
    first = false;
    fab_json_put_str(s, f->name);
    g_string_append(s, ": ");
    put_value(s, f, rec);
  }
  g_string_append_c(s, '}');
}

/* ---- lookups --------------------------------------------------------------- */

static const FabField *field_named(const FabFieldTable *t, const char *name, size_t len) {
  for (size_t i = 0; i < t->n; i++)
    if (strlen(t->f[i].name) == len && memcmp(t->f[i].name, name, len) == 0 && (t->f[i].flags & FAB_FF_JSON))
      return &t->f[i];
  return NULL;
}

/* The element of array field f (in rec) that the segment seg names: an index,
** or a key for KEYED arrays. NULL if none. */
static const void *element(const FabField *f, const void *rec, const char *seg, size_t len) {
  size_t n = count_of(rec, f);
  const char *base = *(const char *const *)at(rec, f->off);
  if (f->type == FAB_F_KEYED) {
    for (size_t i = 0; i < n; i++) {
      const char *k = FAB_FIELD_AT(base + i * f->sub->size, &f->sub->f[0], const char *);
      if (k && strlen(k) == len && memcmp(k, seg, len) == 0) return base + i * f->sub->size;
    }
    return NULL;
  }
  char buf[24], *end = NULL;
  if (!len || len >= sizeof buf) return NULL;
  memcpy(buf, seg, len);
  buf[len] = 0;
  for (size_t k = 0; k < len; k++)
    if (!g_ascii_isdigit(buf[k])) return NULL;
  guint64 i = g_ascii_strtoull(buf, &end, 10);
  return i < n ? base + i * f->sub->size : NULL;
}

gboolean fab_fields_lookup(const FabFieldTable *t, const void *rec, const char *path, double *out) {
  const char *seg = path;
  while (t && rec && seg && *seg) {
    const char *dot = strchr(seg, '.');
    size_t len = dot ? (size_t)(dot - seg) : strlen(seg);
    const FabField *f = field_named(t, seg, len);
    if (!f) return FALSE;
    const char *next = dot ? dot + 1 : NULL;
    switch (f->type) {
    case FAB_F_OBJ:
      rec = at(rec, f->off), t = f->sub;
      break;
    case FAB_F_PTR:
      rec = *(const void *const *)at(rec, f->off), t = f->sub;
      break;
    case FAB_F_ARR:
    case FAB_F_KEYED: {
      if (!next) return FALSE;
      const char *d2 = strchr(next, '.');
      size_t l2 = d2 ? (size_t)(d2 - next) : strlen(next);
      rec = element(f, rec, next, l2);
      t = f->sub;
      next = d2 ? d2 + 1 : NULL;
      break;
    }
    case FAB_F_F64_ARR: {
      if (!next || strchr(next, '.')) return FALSE;
      char *end = NULL;
      guint64 i = g_ascii_strtoull(next, &end, 10);
      if (end == next || *end || i >= count_of(rec, f)) return FALSE;
      *out = (*(const double *const *)at(rec, f->off))[i];
      return TRUE;
    }
    default:
      if (next) return FALSE;
      return scalar(rec, f, out);
    }
    seg = next;
    if (!seg) return FALSE; /* a record, not a number */
  }
  return FALSE;
}

/* ---- sweep columns -------------------------------------------------------- */

typedef struct PosCol {
  uint8_t pos;
  FabFieldColumn c;
} PosCol;

static void collect(const FabFieldTable *t, const char *prefix, GArray *out) {
  for (size_t i = 0; i < t->n; i++) {
    const FabField *f = &t->f[i];
    if (f->type == FAB_F_OBJ || f->type == FAB_F_PTR) {
      char *p = g_strdup_printf("%s%s.", prefix, f->name);
      collect(f->sub, p, out);
      g_free(p);
    } else if (f->col) {
      PosCol pc = {f->col_pos, {f->col, {0}}};
      g_snprintf(pc.c.path, sizeof pc.c.path, "%s%s", prefix, f->name);
      g_array_append_val(out, pc);
    }
  }
}

static int by_pos(const void *a, const void *b) {
  const PosCol *x = a, *y = b;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

GArray *fab_fields_columns(const FabFieldTable *t) {
  GArray *pcs = g_array_new(FALSE, FALSE, sizeof(PosCol));
  collect(t, "", pcs);
  g_array_sort(pcs, by_pos);
  GArray *out = g_array_new(FALSE, FALSE, sizeof(FabFieldColumn));
  for (guint i = 0; i < pcs->len; i++) g_array_append_val(out, g_array_index(pcs, PosCol, i).c);
  g_array_free(pcs, TRUE);
  return out;
}

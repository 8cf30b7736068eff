/* HDF5 tables from field tables. See h5table.h. */
#include "h5table.h"
#include <math.h>
#include <string.h>
#include "sim/time.h"

/* The file and memory types of one column (strings: a new type in *own). */
static gboolean col_types(const FabField *f, hid_t *ft, hid_t *mt, hid_t *own, size_t *size) {
  *own = H5I_INVALID_HID;
  switch (f->type) {
  case FAB_F_U8: *ft = H5T_STD_U8LE, *mt = H5T_NATIVE_UINT8, *size = 1; return TRUE;
  case FAB_F_U32: *ft = H5T_STD_U32LE, *mt = H5T_NATIVE_UINT32, *size = 4; return TRUE;
  case FAB_F_I32: *ft = H5T_STD_I32LE, *mt = H5T_NATIVE_INT32, *size = 4; return TRUE;
  case FAB_F_U64: *ft = H5T_STD_U64LE, *mt = H5T_NATIVE_UINT64, *size = 8; return TRUE;
  case FAB_F_F64:
  case FAB_F_PS_S: *ft = H5T_IEEE_F64LE, *mt = H5T_NATIVE_DOUBLE, *size = 8; return TRUE;
  case FAB_F_STR:
  case FAB_F_NAME: {
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0) return FALSE;
    if (H5Tset_size(t, f->strw) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0 || H5Tset_cset(t, H5T_CSET_ASCII) < 0) {
      H5Tclose(t);
      return FALSE;
    }
    *ft = *mt = *own = t;
    *size = f->strw;
    return TRUE;
  }
  default:
    return FALSE;
  }
}

gboolean fab_h5_layout(FabH5Layout *l, const FabFieldTable *t) {
  memset(l, 0, sizeof *l);
  l->t = t;
  l->col_off = g_new(size_t, t->n);
  l->col = g_new(const FabField *, t->n);
  size_t moff = 0, foff = 0;
  for (size_t i = 0; i < t->n; i++) /* the memory row: each column aligned to 8 */
    if (t->f[i].flags & FAB_FF_H5) {
      hid_t ft, mt, own;
      size_t size;
      if (!col_types(&t->f[i], &ft, &mt, &own, &size)) goto fail;
      if (own >= 0) H5Tclose(own);
      l->col[l->ncols] = &t->f[i];
      l->col_off[l->ncols++] = moff;
      moff += (size + 7) / 8 * 8;
    }
  l->row = moff ? moff : 8;
  l->mem_type = H5Tcreate(H5T_COMPOUND, l->row);
  l->file_type = H5Tcreate(H5T_COMPOUND, l->row);
  if (l->mem_type < 0 || l->file_type < 0) goto fail;
  for (size_t c = 0; c < l->ncols; c++) {
    hid_t ft, mt, own;
    size_t size;
    if (!col_types(l->col[c], &ft, &mt, &own, &size)) goto fail;
    herr_t e = H5Tinsert(l->mem_type, l->col[c]->name, l->col_off[c], mt);
    if (e >= 0) e = H5Tinsert(l->file_type, l->col[c]->name, foff, ft);
    foff += H5Tget_size(ft);
    if (own >= 0) H5Tclose(own);
    if (e < 0) goto fail;
  }
  if (H5Tpack(l->file_type) < 0) goto fail;
  return TRUE;
fail:
  fab_h5_layout_free(l);
  return FALSE;
}

void fab_h5_layout_free(FabH5Layout *l) {
  if (l->mem_type > 0) H5Tclose(l->mem_type);
  if (l->file_type > 0) H5Tclose(l->file_type);
  g_free(l->col_off);
  g_free(l->col);
  memset(l, 0, sizeof *l);
}

/* Copy a fixed-width number as it is (same bytes in record and row);
** false for the types that change on the way. */
static bool copy_plain(FabFieldType t, void *dst, const void *src) {
  switch (t) {
  case FAB_F_U8: memcpy(dst, src, 1); return true;
  case FAB_F_U32:
  case FAB_F_I32: memcpy(dst, src, 4); return true;
  case FAB_F_U64:
  case FAB_F_F64: memcpy(dst, src, 8); return true;
  default: return false;
  }
}

void *fab_h5_pack(const FabH5Layout *l, const void *recs, size_t n) {
  char *rows = g_malloc0(l->row * (n ? n : 1));
  for (size_t i = 0; i < n; i++) {
    const char *rec = (const char *)recs + i * l->t->size;
    char *row = rows + i * l->row;
    for (size_t c = 0; c < l->ncols; c++) {
      const FabField *f = l->col[c];
      const char *src = rec + f->off;
      char *dst = row + l->col_off[c];
      if (copy_plain(f->type, dst, src)) continue;
      switch (f->type) {
      case FAB_F_PS_S: {
        uint64_t ps;
        memcpy(&ps, src, 8);
        double s = (f->flags & FAB_FF_NULL0) && !ps ? NAN : fab_time_to_s(ps);
        memcpy(dst, &s, 8);
        break;
      }
      case FAB_F_STR:
      case FAB_F_NAME: { /* zero-filled, cut to width - 1: bytes past the terminator never reach the file */
        const char *s = f->type == FAB_F_STR ? *(const char *const *)(const void *)src : src;
        if (s) memcpy(dst, s, strnlen(s, (size_t)f->strw - 1));
        break;
      }
      default: break;
      }
    }
  }
  return rows;
}

/* Row -> record (strings interned in strs). */
static void unpack(const FabH5Layout *l, const char *row, char *rec, GStringChunk *strs) {
  for (size_t c = 0; c < l->ncols; c++) {
    const FabField *f = l->col[c];
    const char *src = row + l->col_off[c];
    char *dst = rec + f->off;
    if (copy_plain(f->type, dst, src)) continue;
    switch (f->type) {
    case FAB_F_PS_S: {
      double s;
      memcpy(&s, src, 8);
      uint64_t ps = isfinite(s) && s > 0 ? (uint64_t)llround(s * 1e12) : 0;
      memcpy(dst, &ps, 8);
      break;
    }
    case FAB_F_STR: {
      char *s = g_strndup(src, f->strw);
      const char *in = *s || !(f->flags & FAB_FF_NULLABLE) ? g_string_chunk_insert_const(strs, s) : NULL;
      memcpy(dst, &in, sizeof in);
      g_free(s);
      break;
    }
    case FAB_F_NAME: memcpy(dst, src, MIN((size_t)f->strw, (size_t)FAB_FIELD_NAME_LEN)); dst[FAB_FIELD_NAME_LEN - 1] = 0; break;
    default: break;
    }
  }
}

void *fab_h5_read_records(hid_t file, const char *name, const FabH5Layout *l, GStringChunk *strs, size_t *n,
                          gboolean *bad) {
  *n = 0;
  *bad = FALSE;
  if (H5Lexists(file, name, H5P_DEFAULT) <= 0) return NULL;
  hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
  if (d < 0) return (*bad = TRUE), NULL;
  hid_t ft = H5Dget_type(d); /* every column of the layout must be in the file (HDF5 leaves a missing one 0), but
                             ** those added later (FAB_FF_LATER), which files written before lack */
  for (size_t c = 0; c < l->ncols && !*bad; c++)
    *bad = ft < 0 || H5Tget_class(ft) != H5T_COMPOUND ||
           (H5Tget_member_index(ft, l->col[c]->name) < 0 && !(l->col[c]->flags & FAB_FF_LATER));
  if (ft >= 0) H5Tclose(ft);
  if (*bad) {
    H5Dclose(d);
    return NULL;
  }
  hid_t sp = H5Dget_space(d);
  hssize_t k = H5Sget_simple_extent_npoints(sp);
  H5Sclose(sp);
  char *recs = NULL;
  if (k > 0) {
    char *rows = g_malloc0(l->row * (size_t)k);
    if (H5Dread(d, l->mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0) {
      *bad = TRUE;
    } else {
      recs = g_malloc0(l->t->size * (size_t)k);
      for (hssize_t i = 0; i < k; i++) unpack(l, rows + (size_t)i * l->row, recs + (size_t)i * l->t->size, strs);
      *n = (size_t)k;
    }
    g_free(rows);
  }
  H5Dclose(d);
  return recs;
}

/*
** HDF5 compound tables laid out from field tables (fields.h): the columns of
** a record's table are its fields flagged FAB_FF_H5, in table order, with
** little-endian standard types in the file (u8, u32, i32, u64, f64, and
** fixed NUL-terminated strings of the field's width), packed. The writer
** (h5out.c) and the readers (plot) use the same layout, so a column is
** described once.
*/
#ifndef FAB_H5TABLE_H
#define FAB_H5TABLE_H

#include <glib.h>
#include <hdf5.h>
#include "fields.h"

typedef struct FabH5Layout {
  const FabFieldTable *t;
  hid_t file_type;      /* the packed file compound type */
  hid_t mem_type;       /* the row's memory compound type */
  size_t row;           /* bytes of a memory row */
  size_t ncols;
  size_t *col_off;      /* ncols: each column's offset in a memory row */
  const FabField **col; /* ncols: its field */
} FabH5Layout;

/* The layout of t's HDF5 table; FALSE if HDF5 refused a type (then nothing
** is left open). */
gboolean fab_h5_layout(FabH5Layout *l, const FabFieldTable *t);
void fab_h5_layout_free(FabH5Layout *l);

/* Rows of n records (recs: n x t->size bytes). Transfer full (g_free). */
void *fab_h5_pack(const FabH5Layout *l, const void *recs, size_t n);

/* Read dataset `name` of `file` into records of l->t (transfer full,
** g_free; *n of them); the strings live in `strs`. NULL with *n = 0 when the
** dataset is absent or empty, or cannot be read with this layout (a file of
** another version: a column missing), which *bad tells. */
void *fab_h5_read_records(hid_t file, const char *name, const FabH5Layout *l, GStringChunk *strs, size_t *n,
                          gboolean *bad);

#endif

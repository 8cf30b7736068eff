/*
** Field tables: the one description of what a run reports.
**
** A FabFieldTable describes a C record (a struct of results): for each
** field its name, type, place in the struct, unit, where it is written (the
** JSON summary, an HDF5 table, the HDF5 /meta attributes), and, for the
** scalars a sweep tabulates, its sweep column. Everything that reads or
** writes results walks these tables instead of listing fields again:
**
**   fab_fields_json    the JSON summary (fixed number formats: integers
**                      exactly, doubles %.9g, NaN as null), so identical
**                      runs print identical bytes;
**   h5out.c            HDF5 compound tables and their reader (plot);
**   fab_fields_lookup  a number by dotted path ("jobs.1.time_s"), walking the
**                      tables: cost O(depth x fields per table), independent
**                      of the run's size (libfabsim, Python);
**   fab_fields_columns the sweep's columns and the JSON paths they come from.
**
** results.c holds fabsim's own tables (FabResults and its records).
*/
#ifndef FAB_FIELDS_H
#define FAB_FIELDS_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
  FAB_F_U8,       /* uint8_t */
  FAB_F_U32,      /* uint32_t */
  FAB_F_I32,      /* int32_t */
  FAB_F_U64,      /* uint64_t (or size_t) */
  FAB_F_F64,      /* double; NaN is null in JSON */
  FAB_F_PS_S,     /* fab_time_t ps in the record, reported as seconds (double) */
  FAB_F_STR,      /* const char * (NULL: "" unless FAB_FF_NULLABLE) */
  FAB_F_NAME,     /* char[FAB_FIELD_NAME_LEN] inside the record */
  FAB_F_OBJ,      /* a record embedded at off, described by sub */
  FAB_F_PTR,      /* a pointer at off to a record described by sub; NULL is null */
  FAB_F_ARR,      /* records: pointer at off, size_t count at off_n, each sub->size bytes */
  FAB_F_F64_ARR,  /* doubles: pointer at off, size_t count at off_n */
  FAB_F_NAME_ARR, /* char[FAB_FIELD_NAME_LEN] names: pointer at off, size_t count at off_n */
  FAB_F_STR_ARR,  /* char * strings: pointer at off, size_t count at off_n */
  FAB_F_KEYED,    /* like FAB_F_ARR, written as a JSON object keyed by each record's first field (a STR) */
} FabFieldType;

#define FAB_FIELD_NAME_LEN 32

/* Where a field goes. */
enum {
  FAB_FF_JSON = 1,      /* the JSON summary */
  FAB_FF_H5 = 2,        /* its record's HDF5 table */
  FAB_FF_META = 4,      /* an attribute of HDF5 /meta (scalars of the top record) */
  FAB_FF_NULL0 = 8,     /* JSON null (HDF5 NaN) when zero */
  FAB_FF_NULLABLE = 16, /* a NULL string, or an empty array, is null */
  FAB_FF_LATER = 32,    /* added after the table's first files: a reader takes 0 where a file lacks it */
};

typedef struct FabFieldTable FabFieldTable;

typedef struct FabField {
  const char *name;          /* JSON member, HDF5 column or attribute */
  FabFieldType type;
  size_t off;                /* offsetof the field in the record */
  size_t off_n;              /* arrays: offsetof their size_t count */
  const FabFieldTable *sub;  /* OBJ, PTR, ARR, KEYED: the records' table */
  unsigned flags;            /* FAB_FF_* */
  uint16_t strw;             /* STR, NAME in HDF5: a fixed string of this many bytes */
  const char *unit;          /* "s", "B", "B/s", "GB/s", "bit/s", "ps", "" (a count) */
  const char *col;           /* the sweep column this scalar fills, NULL: none */
  uint8_t col_pos;           /* the column's place among the sweep's columns */
  const char *doc;           /* what it is */
} FabField;

struct FabFieldTable {
  const char *name;          /* the record, and its HDF5 table ("collectives") */
  size_t size;               /* sizeof the record */
  const FabField *f;
  size_t n;
};

/* Write `rec` as a JSON object (the fields flagged FAB_FF_JSON, in table
** order) to s. */
void fab_fields_json(GString *s, const FabFieldTable *t, const void *rec);

/* Append a JSON string (escaped; NULL as "") or number (%.9g, locale-free;
** NaN and infinities as null). */
void fab_json_put_str(GString *s, const char *v);
void fab_json_put_num(GString *s, double v);

/* The number at dotted `path` ("flows.fct_p99_s", "collectives.3.busbw_GBps",
** "step.by_op.allreduce.count") in `rec`: TRUE and *out (NaN when the JSON
** has null there), or FALSE when the path names no numeric field. */
gboolean fab_fields_lookup(const FabFieldTable *t, const void *rec, const char *path, double *out);

/* One sweep column: its name and the dotted path of its field. */
typedef struct FabFieldColumn {
  const char *name;
  char path[96];
} FabFieldColumn;

/* The sweep columns of table t (following OBJ and PTR fields), in column
** order: a GArray of FabFieldColumn (transfer full). */
GArray *fab_fields_columns(const FabFieldTable *t);

/* Read-only access to a field's value in `rec`. */
#define FAB_FIELD_AT(rec, f, T) (*(const T *)(const void *)((const char *)(rec) + (f)->off))

#endif

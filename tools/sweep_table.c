/* fabsim sweep's table: DIR/sweep.csv (written, and read back to resume or
** extend a sweep) and DIR/sweep.h5 (/sweep). See sweep.c and sweep_int.h. */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmds.h"
#include "tools/libfabsim/json.h"
#include "tools/libfabsim/scenario.h"
#include "sweep_int.h"

/* ---- CSV ------------------------------------------------------------------- */

static void csv_cell(GString *s, const char *v) {
  if (strpbrk(v, ",\"\n\r") || (*v && (v[0] == ' ' || v[strlen(v) - 1] == ' '))) {
    g_string_append_c(s, '"');
    for (const char *p = v; *p; p++) {
      if (*p == '"') g_string_append_c(s, '"');
      g_string_append_c(s, *p);
    }
    g_string_append_c(s, '"');
  } else {
    g_string_append(s, v);
  }
}

/* Parse one CSV line starting at *pp (advanced past it). NULL at the end. */
static GPtrArray *csv_row(const char **pp) {
  const char *p = *pp;
  if (!*p) return NULL;
  GPtrArray *row = g_ptr_array_new_with_free_func(g_free);
  GString *cell = g_string_new(NULL);
  gboolean q = FALSE;
  for (;; p++) {
    char c = *p;
    if (q) {
      if (!c) break;
      if (c == '"') {
        if (p[1] == '"') g_string_append_c(cell, '"'), p++;
        else q = FALSE;
      } else {
        g_string_append_c(cell, c);
      }
    } else if (c == '"') {
      q = TRUE;
    } else if (c == ',') {
      g_ptr_array_add(row, g_string_free(cell, FALSE));
      cell = g_string_new(NULL);
    } else if (c == '\n' || c == '\r' || !c) {
      break;
    } else {
      g_string_append_c(cell, c);
    }
  }
  g_ptr_array_add(row, g_string_free(cell, FALSE));
  if (*p == '\r') p++;
  if (*p == '\n') p++;
  *pp = p;
  return row;
}

char *fab_sweep__csv_header(const Sweep *w) {
  GString *s = g_string_new(NULL);
  for (guint k = 0; k < w->keys->len; k++) {
    csv_cell(s, ((Key *)w->keys->pdata[k])->name);
    g_string_append_c(s, ',');
  }
  g_string_append(s, "point,status,exit");
  for (guint f = 0; f < w->cols->len; f++) g_string_append_printf(s, ",%s", g_array_index(w->cols, FabFieldColumn, f).name);
  return g_string_free(s, FALSE);
}

/* A point's row, with its newline. */
static void csv_point(GString *s, const Sweep *w, const Point *pt) {
  for (guint k = 0; k < w->keys->len; k++) {
    csv_cell(s, pt->values[k]);
    g_string_append_c(s, ',');
  }
  g_string_append_printf(s, "%zu,%s,%d", pt->id, pt->ok ? "ok" : "failed", pt->exit);
  for (guint f = 0; f < w->cols->len; f++) {
    g_string_append_c(s, ',');
    g_string_append(s, pt->num[f] ? pt->num[f] : "");
  }
  g_string_append_c(s, '\n');
}

gboolean fab_sweep__write_point(const Sweep *w, const Point *pt, GError **err) {
  GString *s = g_string_new(w->header);
  g_string_append_c(s, '\n');
  csv_point(s, w, pt);
  char *base = g_strdup_printf("point-%04zu.csv", pt->id), *path = g_build_filename(w->dir, base, NULL);
  gboolean ok = g_file_set_contents(path, s->str, (gssize)s->len, err); /* a temporary file, then rename */
  g_free(base);
  g_free(path);
  g_string_free(s, TRUE);
  return ok;
}

gboolean fab_sweep__write_csv(const Sweep *w, GError **err) {
  GString *s = g_string_new(w->header);
  g_string_append_c(s, '\n');
  for (size_t i = 0; i < w->n; i++)
    if (w->pts[i].done) csv_point(s, w, &w->pts[i]);
  gboolean ok = g_file_set_contents(w->csv_path, s->str, (gssize)s->len, err);
  g_string_free(s, TRUE);
  return ok;
}

void fab_sweep__prev_row_free(gpointer p) {
  PrevRow *r = p;
  g_strfreev(r->values);
  g_strfreev(r->num);
  g_free(r);
}

/* The rows of one table file (sweep.csv or a point's), appended to rows.
** FALSE (with a message) if its header is not this sweep's. */
static gboolean read_table(const Sweep *w, const char *path, const char *text, GPtrArray *rows) {
  const char *p = text;
  GPtrArray *hd = csv_row(&p);
  size_t nk = w->keys->len, nc = w->cols->len;
  gboolean same = hd && hd->len >= nk + 3;
  for (size_t k = 0; same && k < nk; k++) same = !strcmp(hd->pdata[k], ((Key *)w->keys->pdata[k])->name);
  same = same && !strcmp(hd->pdata[nk], "point") && !strcmp(hd->pdata[nk + 1], "status") &&
         !strcmp(hd->pdata[nk + 2], "exit");
  if (!same) {
    fprintf(stderr, "fabsim sweep: %s holds another sweep (its header differs); use another --out or remove it\n",
            path);
    if (hd) g_ptr_array_free(hd, TRUE);
    return FALSE;
  }
  int *col_of = g_new(int, hd->len); /* the file's column -> ours, -1 */
  for (guint c = 0; c < hd->len; c++) {
    col_of[c] = -1;
    for (size_t f = 0; c >= nk + 3 && f < nc; f++)
      if (!strcmp(hd->pdata[c], g_array_index(w->cols, FabFieldColumn, f).name)) col_of[c] = (int)f;
  }
  GPtrArray *row;
  while ((row = csv_row(&p))) {
    char *end = NULL;
    guint64 id = row->len == hd->len ? g_ascii_strtoull(row->pdata[nk], &end, 10) : 0;
    if (row->len == hd->len && end && end != row->pdata[nk] && !*end) {
      PrevRow *r = g_new0(PrevRow, 1);
      r->values = g_new0(char *, nk + 1);
      for (size_t k = 0; k < nk; k++) r->values[k] = g_strdup(row->pdata[k]);
      r->id = id;
      r->result = TRUE;
      r->ok = !strcmp(row->pdata[nk + 1], "ok");
      r->exit = atoi(row->pdata[nk + 2]);
      r->num = g_new0(char *, nc + 1);
      for (size_t f = 0; f < nc; f++) r->num[f] = g_strdup("");
      for (guint c = nk + 3; c < hd->len; c++)
        if (col_of[c] >= 0) g_free(r->num[col_of[c]]), r->num[col_of[c]] = g_strdup(row->pdata[c]);
      g_ptr_array_add(rows, r);
    }
    g_ptr_array_free(row, TRUE);
  }
  g_free(col_of);
  g_ptr_array_free(hd, TRUE);
  return TRUE;
}

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The points' own records, DIR/point-NNNN.csv, in name order. */
static GPtrArray *point_files(const Sweep *w) {
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  GDir *d = g_dir_open(w->dir, 0, NULL);
  const char *n;
  while (d && (n = g_dir_read_name(d))) {
    size_t len = strlen(n);
    if (len > 10 && !strncmp(n, "point-", 6) && !strcmp(n + len - 4, ".csv")) g_ptr_array_add(names, g_strdup(n));
  }
  if (d) g_dir_close(d);
  if (names->len > 1) qsort(names->pdata, names->len, sizeof(char *), name_cmp);
  return names;
}

gboolean fab_sweep__read_points(const Sweep *w, GPtrArray *rows) {
  GPtrArray *names = point_files(w);
  gboolean ok = TRUE;
  for (guint i = 0; i < names->len && ok; i++) {
    char *path = g_build_filename(w->dir, names->pdata[i], NULL), *text = NULL;
    if (g_file_get_contents(path, &text, NULL, NULL)) ok = read_table(w, path, text, rows);
    g_free(text);
    g_free(path);
  }
  g_ptr_array_free(names, TRUE);
  return ok;
}

gboolean fab_sweep__read_previous(const Sweep *w, GPtrArray *rows) {
  gboolean ok = fab_sweep__read_points(w, rows);
  char *text = NULL;
  if (ok && g_file_get_contents(w->csv_path, &text, NULL, NULL)) ok = read_table(w, w->csv_path, text, rows);
  g_free(text);
  return ok;
}


/* ---- HDF5 table -------------------------------------------------------------- */

gboolean fab_sweep__write_h5(const Sweep *w) {
  size_t nk = w->keys->len, nc = w->cols->len;
  size_t off_point = nk * KEY_STRLEN, off_status = off_point + 4, off_exit = off_status + 4;
  size_t off_num = (off_exit + 4 + 7) & ~(size_t)7, rec = off_num + 8 * nc, rows = 0;
  for (size_t i = 0; i < w->n; i++) rows += w->pts[i].done;
  unsigned char *buf = g_malloc0(rec * (rows ? rows : 1));
  size_t r = 0;
  for (size_t i = 0; i < w->n; i++) {
    const Point *pt = &w->pts[i];
    if (!pt->done) continue;
    unsigned char *b = buf + r++ * rec;
    for (size_t k = 0; k < nk; k++) g_strlcpy((char *)b + k * KEY_STRLEN, pt->values[k], KEY_STRLEN);
    uint32_t u = (uint32_t)pt->id, st = pt->ok ? 0 : 1;
    int32_t ex = pt->exit;
    memcpy(b + off_point, &u, 4);
    memcpy(b + off_status, &st, 4);
    memcpy(b + off_exit, &ex, 4);
    for (size_t f = 0; f < nc; f++) {
      double d = pt->num[f] && *pt->num[f] ? g_ascii_strtod(pt->num[f], NULL) : NAN;
      memcpy(b + off_num + 8 * f, &d, 8);
    }
  }
  char *tmp = g_strdup_printf("%s.tmp.%ld", w->h5_path, (long)getpid()); /* shards may write at once */
  gboolean ok = FALSE;
  hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, KEY_STRLEN);
  H5Tset_strpad(str, H5T_STR_NULLTERM);
  hid_t t = H5Tcreate(H5T_COMPOUND, rec);
  for (size_t k = 0; k < nk; k++) H5Tinsert(t, ((Key *)w->keys->pdata[k])->name, k * KEY_STRLEN, str);
  H5Tinsert(t, "point", off_point, H5T_NATIVE_UINT32);
  H5Tinsert(t, "status", off_status, H5T_NATIVE_UINT32);
  H5Tinsert(t, "exit", off_exit, H5T_NATIVE_INT32);
  for (size_t f = 0; f < nc; f++)
    H5Tinsert(t, g_array_index(w->cols, FabFieldColumn, f).name, off_num + 8 * f, H5T_NATIVE_DOUBLE);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* failures are reported by us, once */
  hid_t file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file >= 0) {
    hsize_t dims[1] = {rows};
    hid_t sp = H5Screate_simple(1, dims, NULL);
    hid_t ds = H5Dcreate2(file, "/sweep", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (ds >= 0) {
      ok = !rows || H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0;
      hid_t as = H5Screate(H5S_SCALAR), at_t = H5Tcopy(H5T_C_S1); /* status codes, for readers */
      const char *doc = "status: 0 ok, 1 failed; exit: the run's exit status";
      H5Tset_size(at_t, strlen(doc) + 1);
      hid_t a = H5Acreate2(ds, "legend", at_t, as, H5P_DEFAULT, H5P_DEFAULT);
      if (a >= 0) H5Awrite(a, at_t, doc), H5Aclose(a);
      H5Tclose(at_t);
      H5Sclose(as);
      H5Dclose(ds);
    }
    H5Sclose(sp);
    if (H5Fclose(file) < 0) ok = FALSE;
  }
  H5Tclose(t);
  H5Tclose(str);
  g_free(buf);
  if (ok && g_rename(tmp, w->h5_path) != 0) ok = FALSE;
  if (!ok) {
    fprintf(stderr, "fabsim sweep: cannot write %s\n", w->h5_path);
    g_unlink(tmp);
  }
  g_free(tmp);
  return ok;
}


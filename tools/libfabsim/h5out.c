/* HDF5 writer for FabResults. See h5out.h for the schema.
**
** Type choices: every number is written with a little-endian standard type
** (H5T_STD_U32LE, H5T_STD_U64LE, H5T_IEEE_F64LE) and read from native memory;
** compound file types are packed (no padding) and laid out from the field
** tables (h5table.h). Names are fixed NUL-terminated ASCII strings, copied
** into zero-filled rows first so bytes after the terminator in the caller's
** arrays never reach the file. Free text (version, scenario name, YAML) is a
** fixed-length UTF-8 string sized to fit.
**
** Reproducibility: no object timestamps, file format pinned to the 1.8
** layout (readable by HDF5 >= 1.8), deterministic zlib; the same FabResults
** give a byte-identical file.
*/
#include "h5out.h"
#include "h5table.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

G_DEFINE_QUARK(fab-h5-error-quark, fab_h5_error)

/* Error codes inside FAB_H5_ERROR. */
enum {
  H5OUT_ERROR_IO = 1, /* a filesystem step (mkdir, rename) failed */
  H5OUT_ERROR_HDF5,   /* an HDF5 call failed */
};

/* depth chunks hold about this many u32 values (256 KiB) */
#define DEPTH_CHUNK_ELEMS 65536u
#define DEPTH_CHUNK_PORTS 256u

typedef struct W {
  const char *path; /* final path, for messages */
  GError **err;
  hid_t file;
  hid_t gcpl;       /* groups: no timestamps */
  hid_t dcpl;       /* contiguous datasets: no timestamps */
  hid_t name_type;  /* FAB_FIELD_NAME_LEN string, file and memory */
} W;

/* ---- errors ------------------------------------------------------------ */

typedef struct ErrWalk {
  char *inner; /* where HDF5 detected the problem */
  char *outer; /* the API call that failed */
} ErrWalk;

static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *data) {
  ErrWalk *x = data;
  if (!e->desc) return 0;
  if (n == 0) x->inner = g_strdup(e->desc);
  g_free(x->outer);
  x->outer = g_strdup(e->desc);
  return 0;
}

/* Set the error for a failed HDF5 call: "PATH: cannot write HDF5 results:
** STEP: what HDF5 said". Call right after the failure, before any other HDF5
** call resets the error stack. */
static void G_GNUC_PRINTF(2, 3) fail_h5(W *w, const char *fmt, ...) {
  if (!w->err || *w->err) return;
  ErrWalk x = {0};
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, &x);
  va_list ap;
  va_start(ap, fmt);
  char *step = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  if (!x.outer)
    g_set_error(w->err, FAB_H5_ERROR, H5OUT_ERROR_HDF5, "%s: cannot write HDF5 results: %s failed",
                w->path, step);
  else if (!x.inner || strcmp(x.inner, x.outer) == 0)
    g_set_error(w->err, FAB_H5_ERROR, H5OUT_ERROR_HDF5, "%s: cannot write HDF5 results: %s: %s",
                w->path, step, x.outer);
  else
    g_set_error(w->err, FAB_H5_ERROR, H5OUT_ERROR_HDF5,
                "%s: cannot write HDF5 results: %s: %s (%s)", w->path, step, x.outer, x.inner);
  g_free(step);
  g_free(x.inner);
  g_free(x.outer);
}

/* Close any HDF5 id we created and mark it closed. */
static void close_id(hid_t *id) {
  if (*id < 0) return;
  switch (H5Iget_type(*id)) {
  case H5I_FILE: H5Fclose(*id); break;
  case H5I_GROUP: H5Gclose(*id); break;
  case H5I_DATATYPE: H5Tclose(*id); break;
  case H5I_DATASPACE: H5Sclose(*id); break;
  case H5I_DATASET: H5Dclose(*id); break;
  case H5I_ATTR: H5Aclose(*id); break;
  case H5I_GENPROP_LST: H5Pclose(*id); break;
  default: break;
  }
  *id = H5I_INVALID_HID;
}

/* ---- small builders ---------------------------------------------------- */

/* A fixed-length NUL-terminated string type of `size` bytes (>= 1). */
static hid_t str_type(size_t size, H5T_cset_t cset) {
  hid_t t = H5Tcopy(H5T_C_S1);
  if (t < 0) return t;
  if (H5Tset_size(t, size) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0 ||
      H5Tset_cset(t, cset) < 0) {
    H5Tclose(t);
    return H5I_INVALID_HID;
  }
  return t;
}

/* Scalar attribute `name` on `loc`. `where` names loc in messages. */
static gboolean attr_write(W *w, hid_t loc, const char *where, const char *name, hid_t ftype,
                           hid_t mtype, const void *buf) {
  hid_t space = H5I_INVALID_HID, a = H5I_INVALID_HID;
  gboolean ok = FALSE;
  if ((space = H5Screate(H5S_SCALAR)) < 0) goto out;
  if ((a = H5Acreate2(loc, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT)) < 0) goto out;
  if (H5Awrite(a, mtype, buf) < 0) goto out;
  ok = TRUE;
out:
  if (!ok) fail_h5(w, "writing attribute %s of %s", name, where);
  close_id(&a);
  close_id(&space);
  return ok;
}

static gboolean attr_u64(W *w, hid_t loc, const char *where, const char *name, uint64_t v) {
  return attr_write(w, loc, where, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &v);
}

static gboolean attr_str(W *w, hid_t loc, const char *where, const char *name, const char *s) {
  if (!s) s = "";
  hid_t t = str_type(strlen(s) + 1, H5T_CSET_UTF8);
  if (t < 0) {
    fail_h5(w, "making the type of attribute %s of %s", name, where);
    return FALSE;
  }
  gboolean ok = attr_write(w, loc, where, name, t, t, s);
  close_id(&t);
  return ok;
}

/* Dataset `name` under `loc`, written whole from `buf` (which may be NULL
** when the dataspace has no elements). `dcpl` sets the layout. */
static gboolean dset_write(W *w, hid_t loc, const char *where, const char *name, hid_t ftype,
                           hid_t mtype, int rank, const hsize_t *dims, hid_t dcpl,
                           const void *buf) {
  hid_t space = H5I_INVALID_HID, d = H5I_INVALID_HID;
  gboolean ok = FALSE;
  hsize_t n = 1;
  if (rank < 0) {
    space = H5Screate(H5S_SCALAR);
  } else {
    for (int i = 0; i < rank; i++) n *= dims[i];
    space = H5Screate_simple(rank, dims, NULL);
  }
  if (space < 0) goto out;
  if ((d = H5Dcreate2(loc, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)) < 0) goto out;
  if (n > 0 && H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) goto out;
  ok = TRUE;
out:
  if (!ok) fail_h5(w, "writing dataset %s%s", where, name);
  close_id(&d);
  close_id(&space);
  return ok;
}

/* Copy a name into a zero-filled FAB_FIELD_NAME_LEN row, truncating to
** FAB_FIELD_NAME_LEN - 1 bytes so it is always terminated. */
static void name_copy(char dst[FAB_FIELD_NAME_LEN], const char *src) {
  memset(dst, 0, FAB_FIELD_NAME_LEN);
  memcpy(dst, src, strnlen(src, FAB_FIELD_NAME_LEN - 1));
}

/* ---- the four parts ---------------------------------------------------- */

/* /meta: the top record's fields flagged FAB_FF_META as attributes, and
** the scenario text. */
static gboolean write_meta(W *w, const FabResults *r) {
  hid_t g = H5I_INVALID_HID, t = H5I_INVALID_HID;
  gboolean ok = FALSE;
  const char *yaml = r->scenario_text ? r->scenario_text : "";
  if ((g = H5Gcreate2(w->file, "meta", H5P_DEFAULT, w->gcpl, H5P_DEFAULT)) < 0) {
    fail_h5(w, "creating group /meta");
    goto out;
  }
  const FabFieldTable *tb = &fab_results_table;
  for (size_t i = 0; i < tb->n; i++) {
    const FabField *f = &tb->f[i];
    if (!(f->flags & FAB_FF_META)) continue;
    gboolean done;
    if (f->type == FAB_F_STR) done = attr_str(w, g, "/meta", f->name, FAB_FIELD_AT(r, f, const char *));
    else if (f->type == FAB_F_F64)
      done = attr_write(w, g, "/meta", f->name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &FAB_FIELD_AT(r, f, double));
    else if (f->type == FAB_F_U32) done = attr_u64(w, g, "/meta", f->name, FAB_FIELD_AT(r, f, uint32_t));
    else done = attr_u64(w, g, "/meta", f->name, FAB_FIELD_AT(r, f, uint64_t));
    if (!done) goto out;
  }
  if ((t = str_type(strlen(yaml) + 1, H5T_CSET_UTF8)) < 0) {
    fail_h5(w, "making the type of dataset /meta/scenario_yaml");
    goto out;
  }
  if (!dset_write(w, g, "/meta/", "scenario_yaml", t, t, -1, NULL, w->dcpl, yaml)) goto out;
  ok = TRUE;
out:
  close_id(&t);
  close_id(&g);
  return ok;
}

/* Dataset /NAME: the n records of table t as a compound table. */
static gboolean write_records(W *w, const FabFieldTable *t, const void *recs, size_t n) {
  FabH5Layout l;
  if (!fab_h5_layout(&l, t)) {
    fail_h5(w, "making the type of dataset /%s", t->name);
    return FALSE;
  }
  void *rows = fab_h5_pack(&l, recs, n);
  hsize_t dims[1] = {n};
  gboolean ok = dset_write(w, w->file, "/", t->name, l.file_type, l.mem_type, 1, dims, w->dcpl, rows);
  g_free(rows);
  fab_h5_layout_free(&l);
  return ok;
}

/* A chunked, deflated dataset of `rank` dims (each > 0), chunks of about 64K values. */
static gboolean write_chunked(W *w, hid_t where, const char *prefix, const char *name, hid_t ftype,
                              hid_t mtype, int rank, const hsize_t *dims, const void *data) {
  hsize_t chunk[3];
  hsize_t inner = 1;
  for (int i = rank - 1; i >= 1; i--) {
    chunk[i] = MIN(dims[i], DEPTH_CHUNK_PORTS);
    inner *= chunk[i];
  }
  chunk[0] = MIN(dims[0], MAX(1, DEPTH_CHUNK_ELEMS / inner));
  hid_t dcpl = H5Pcopy(w->dcpl);
  gboolean ok = dcpl >= 0 && H5Pset_chunk(dcpl, rank, chunk) >= 0 && H5Pset_deflate(dcpl, 1) >= 0;
  if (!ok) fail_h5(w, "setting the layout of a time series");
  else ok = dset_write(w, where, prefix, name, ftype, mtype, rank, dims, dcpl, data);
  close_id(&dcpl);
  return ok;
}

static gboolean write_queues(W *w, const FabResults *r) {
  const FabQueueSeries *q = &r->queues;
  hid_t g = H5I_INVALID_HID, dcpl = H5I_INVALID_HID;
  gboolean ok = FALSE;
  gboolean sampled = q->interval > 0 && q->n_ports > 0;
  hsize_t ns = sampled ? q->n_samples : 0, np = sampled ? q->n_ports : 0;
  char (*names)[FAB_FIELD_NAME_LEN] = g_malloc0_n(np ? np : 1, FAB_FIELD_NAME_LEN);

  for (hsize_t p = 0; p < np; p++) name_copy(names[p], q->port[p]);

  if ((g = H5Gcreate2(w->file, "queues", H5P_DEFAULT, w->gcpl, H5P_DEFAULT)) < 0) {
    fail_h5(w, "creating group /queues");
    goto out;
  }
  if (!attr_u64(w, g, "/queues", "interval_ps", q->interval)) goto out;

  hsize_t tdims[1] = {ns}, pdims[1] = {np}, ddims[2] = {ns, np};
  if (!dset_write(w, g, "/queues/", "time_ps", H5T_STD_U64LE, H5T_NATIVE_UINT64, 1, tdims, w->dcpl,
                  q->t) ||
      !dset_write(w, g, "/queues/", "port", w->name_type, w->name_type, 1, pdims, w->dcpl, names))
    goto out;

  if (ns * np > 0) {
    hsize_t cp = MIN(np, DEPTH_CHUNK_PORTS);
    hsize_t chunk[2] = {MIN(ns, MAX(1, DEPTH_CHUNK_ELEMS / cp)), cp};
    if ((dcpl = H5Pcopy(w->dcpl)) < 0 || H5Pset_chunk(dcpl, 2, chunk) < 0 ||
        H5Pset_deflate(dcpl, 1) < 0) {
      fail_h5(w, "setting the layout of dataset /queues/depth");
      goto out;
    }
  }
  if (!dset_write(w, g, "/queues/", "depth", H5T_STD_U32LE, H5T_NATIVE_UINT32, 2, ddims,
                  dcpl >= 0 ? dcpl : w->dcpl, q->depth))
    goto out;
  if (ns * np > 0 && q->n_prio > 1 && q->depth_prio) { /* per priority: [sample][port][priority] */
    hsize_t pd[3] = {ns, np, q->n_prio};
    if (!write_chunked(w, g, "/queues/", "depth_prio", H5T_STD_U32LE, H5T_NATIVE_UINT32, 3, pd, q->depth_prio))
      goto out;
  }
  if (ns > 0 && r->n_links > 0 && q->link_bytes) { /* [sample][link], cumulative wire bytes */
    hsize_t ld[2] = {ns, r->n_links};
    if (!write_chunked(w, g, "/queues/", "link_bytes", H5T_STD_U64LE, H5T_NATIVE_UINT64, 2, ld, q->link_bytes))
      goto out;
  }
  if (ns > 0 && r->n_flows > 0 && q->flow_rate) { /* [sample][flow], bits/s */
    hsize_t fd[2] = {ns, r->n_flows};
    if (!write_chunked(w, g, "/queues/", "flow_rate", H5T_STD_U64LE, H5T_NATIVE_UINT64, 2, fd, q->flow_rate))
      goto out;
  }
  ok = TRUE;
out:
  close_id(&dcpl);
  close_id(&g);
  g_free(names);
  return ok;
}

/* ---- entry point ------------------------------------------------------- */

/* A regular file or nothing at `path` (never a device, FIFO, socket,
** directory or symbolic link); FALSE + err otherwise. */
gboolean fab_out_check_kind(const char *path, const char *what, GError **err) {
  struct stat st;
  if (!*path) {
    g_set_error(err, FAB_H5_ERROR, H5OUT_ERROR_IO, "an empty path for the %s", what);
    return FALSE;
  }
  if (lstat(path, &st) == 0) {
    if (!S_ISREG(st.st_mode)) {
      const char *kind = S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? "a directory"
                         : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" : "a device";
      g_set_error(err, FAB_H5_ERROR, H5OUT_ERROR_IO,
                  "%s: cannot write %s: it is %s (only a regular file is ever replaced)", path, what, kind);
      return FALSE;
    }
  } else if (errno != ENOENT) {
    g_set_error(err, FAB_H5_ERROR, H5OUT_ERROR_IO, "%s: cannot write %s: %s", path, what, g_strerror(errno));
    return FALSE;
  }
  return TRUE;
}

/* The nearest existing ancestor of `path`, or `path` itself when `self`, is a
** directory this process can write (a file is made and removed there). */
static gboolean check_writable_dir(const char *path, gboolean self, const char *what, GError **err) {
  struct stat st;
  char *dir = self ? g_strdup(path) : g_path_get_dirname(path);
  while (stat(dir, &st) != 0 && errno == ENOENT && strcmp(dir, "/") && strcmp(dir, ".")) {
    char *up = g_path_get_dirname(dir);
    g_free(dir);
    dir = up;
  }
  gboolean ok = FALSE;
  if (stat(dir, &st) != 0)
    g_set_error(err, FAB_H5_ERROR, H5OUT_ERROR_IO, "%s: cannot write %s: %s: %s", path, what, dir, g_strerror(errno));
  else if (!S_ISDIR(st.st_mode))
    g_set_error(err, FAB_H5_ERROR, H5OUT_ERROR_IO, "%s: cannot write %s: %s is not a directory", path, what, dir);
  else { /* access() says yes to root on a read-only or special filesystem: try a file there */
    char *probe = g_build_filename(dir, ".fabsim-probe-XXXXXX", NULL);
    int fd = access(dir, W_OK | X_OK) == 0 ? g_mkstemp(probe) : -1;
    if (fd < 0) {
      g_set_error(err, FAB_H5_ERROR, H5OUT_ERROR_IO, "%s: cannot write %s: directory %s: %s", path, what, dir,
                  g_strerror(errno));
    } else {
      close(fd);
      g_unlink(probe);
      ok = TRUE;
    }
    g_free(probe);
  }
  g_free(dir);
  return ok;
}

gboolean fab_out_check_target(const char *path, const char *what, GError **err) {
  return fab_out_check_kind(path, what, err) && check_writable_dir(path, FALSE, what, err);
}

gboolean fab_out_check_dir(const char *path, const char *what, GError **err) {
  struct stat st;
  if (!*path) {
    g_set_error(err, FAB_H5_ERROR, H5OUT_ERROR_IO, "an empty path for the %s", what);
    return FALSE;
  }
  if (stat(path, &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      g_set_error(err, FAB_H5_ERROR, H5OUT_ERROR_IO, "%s: cannot write %s: it exists and is not a directory", path,
                  what);
      return FALSE;
    }
    return check_writable_dir(path, TRUE, what, err);
  }
  if (errno != ENOENT) {
    g_set_error(err, FAB_H5_ERROR, H5OUT_ERROR_IO, "%s: cannot write %s: %s", path, what, g_strerror(errno));
    return FALSE;
  }
  return check_writable_dir(path, FALSE, what, err);
}

gboolean fab_h5_check_target(const char *path, GError **err) { return fab_out_check_target(path, "HDF5 results", err); }

/* Write `r` to `path` through "PATH.tmp.PID" and rename(). Creates the parent
** directory. HDF5's automatic error printing is off during the call. Cost:
** one pass over each table, plus a packed copy of it. */
gboolean fab_h5_write(const FabResults *r, const char *path, GError **err) {
  g_return_val_if_fail(r != NULL && path != NULL, FALSE);
  g_return_val_if_fail(err == NULL || *err == NULL, FALSE);
  g_return_val_if_fail(r->n_flows == 0 || r->flows, FALSE);
  g_return_val_if_fail(r->n_links == 0 || r->links, FALSE);
  g_return_val_if_fail(r->queues.interval == 0 || r->queues.n_ports == 0 ||
                           (r->queues.port && (r->queues.n_samples == 0 ||
                                               (r->queues.t && r->queues.depth))),
                       FALSE);

  if (!fab_out_check_kind(path, "HDF5 results", err)) return FALSE; /* again: the path may have changed */
  char *dir = g_path_get_dirname(path);
  if (g_mkdir_with_parents(dir, 0777) != 0) {
    int e = errno;
    g_set_error(err, FAB_H5_ERROR, H5OUT_ERROR_IO,
                "%s: cannot write HDF5 results: creating directory %s: %s", path, dir,
                g_strerror(e));
    g_free(dir);
    return FALSE;
  }
  g_free(dir);

  char *tmp = g_strdup_printf("%s.tmp.%ld", path, (long)getpid());
  W w = {.path = path, .err = err, .file = H5I_INVALID_HID, .gcpl = H5I_INVALID_HID,
         .dcpl = H5I_INVALID_HID, .name_type = H5I_INVALID_HID};
  hid_t fapl = H5I_INVALID_HID, fcpl = H5I_INVALID_HID;
  gboolean ok = FALSE, attempted = FALSE;

  H5E_auto2_t old_fn = NULL;
  void *old_data = NULL;
  gboolean restore = H5Eget_auto2(H5E_DEFAULT, &old_fn, &old_data) >= 0;
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);

  /* 1.8 file format (no newer features needed): readable by any HDF5 since
  ** 1.8; STRONG close so an early exit closes everything in the file. */
  if ((fapl = H5Pcreate(H5P_FILE_ACCESS)) < 0 ||
      H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18) < 0 ||
      H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0 ||
      (fcpl = H5Pcreate(H5P_FILE_CREATE)) < 0 || H5Pset_obj_track_times(fcpl, 0) < 0 ||
      (w.gcpl = H5Pcreate(H5P_GROUP_CREATE)) < 0 || H5Pset_obj_track_times(w.gcpl, 0) < 0 ||
      (w.dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 || H5Pset_obj_track_times(w.dcpl, 0) < 0 ||
      (w.name_type = str_type(FAB_FIELD_NAME_LEN, H5T_CSET_ASCII)) < 0) {
    fail_h5(&w, "setting up property lists");
    goto out;
  }
  attempted = TRUE; /* from here on a failure removes tmp, even a half-made one */
  if ((w.file = H5Fcreate(tmp, H5F_ACC_TRUNC, fcpl, fapl)) < 0) {
    fail_h5(&w, "creating %s", tmp);
    goto out;
  }
  if (!write_meta(&w, r) || !write_records(&w, &fab_flow_table, r->flows, r->n_flows) ||
      !write_records(&w, &fab_link_table, r->links, r->n_links) || !write_queues(&w, r) ||
      !write_records(&w, &fab_coll_table, r->colls, r->n_colls) ||
      !write_records(&w, &fab_span_table, r->spans, r->n_spans) ||
      !write_records(&w, &fab_step_table, r->steps, r->n_steps) ||
      !write_records(&w, &fab_job_table, r->jobs, r->n_jobs) ||
      !write_records(&w, &fab_failure_table, r->failures, r->n_failures) ||
      !write_records(&w, &fab_reorder_table, r->reorder, r->n_reorder) ||
      (r->sharp && !write_records(&w, &fab_sharp_tree_table, r->sharp->trees, r->sharp->n_trees)))
    goto out;
  herr_t st = H5Fclose(w.file);
  w.file = H5I_INVALID_HID;
  if (st < 0) {
    fail_h5(&w, "closing %s", tmp);
    goto out;
  }
  if (g_rename(tmp, path) != 0) {
    int e = errno;
    g_set_error(err, FAB_H5_ERROR, H5OUT_ERROR_IO,
                "%s: cannot write HDF5 results: renaming %s: %s", path, tmp, g_strerror(e));
    goto out;
  }
  ok = TRUE;
out:
  close_id(&w.file);
  if (!ok && attempted) g_unlink(tmp);
  close_id(&w.name_type);
  close_id(&w.dcpl);
  close_id(&w.gcpl);
  close_id(&fcpl);
  close_id(&fapl);
  if (restore) H5Eset_auto2(H5E_DEFAULT, old_fn, old_data);
  g_free(tmp);
  return ok;
}

/* HDF5 writer for FabResults. See h5out.h for the schema.
**
** Type choices: every number is written with a little-endian standard type
** (H5T_STD_U32LE, H5T_STD_U64LE, H5T_IEEE_F64LE) and read from native memory;
** compound file types are packed (no padding). Names are fixed 32-byte
** NUL-terminated ASCII strings, copied into zero-filled rows first so bytes
** after the terminator in the caller's arrays never reach the file. Free text
** (version, scenario name, YAML) is a fixed-length UTF-8 string sized to fit.
**
** Reproducibility: no object timestamps, file format pinned to the 1.8
** layout (readable by HDF5 >= 1.8), deterministic zlib; the same FabResults
** give a byte-identical file.
*/
#include "h5out.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
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
  hid_t name_type;  /* FAB_NAME_LEN string, file and memory */
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

/* Add field `name` to a memory compound (at `moff`) and to a file compound
** (at *foff, advanced by the file type's size). */
static herr_t field(hid_t mt, hid_t ft, size_t *foff, const char *name, size_t moff, hid_t mtype,
                    hid_t ftype) {
  if (H5Tinsert(mt, name, moff, mtype) < 0) return -1;
  if (H5Tinsert(ft, name, *foff, ftype) < 0) return -1;
  *foff += H5Tget_size(ftype);
  return 0;
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

/* Copy a name into a zero-filled FAB_NAME_LEN row, truncating to
** FAB_NAME_LEN - 1 bytes so it is always terminated. */
static void name_copy(char dst[FAB_NAME_LEN], const char *src) {
  memset(dst, 0, FAB_NAME_LEN);
  memcpy(dst, src, strnlen(src, FAB_NAME_LEN - 1));
}

/* ---- the four parts ---------------------------------------------------- */

static gboolean write_meta(W *w, const FabResults *r) {
  hid_t g = H5I_INVALID_HID, t = H5I_INVALID_HID;
  gboolean ok = FALSE;
  const char *yaml = r->scenario_text ? r->scenario_text : "";
  double wall = r->wall_s;

  if ((g = H5Gcreate2(w->file, "meta", H5P_DEFAULT, w->gcpl, H5P_DEFAULT)) < 0) {
    fail_h5(w, "creating group /meta");
    goto out;
  }
  if (!attr_str(w, g, "/meta", "fabsim_version", r->version) ||
      !attr_str(w, g, "/meta", "scenario", r->scenario) ||
      !attr_u64(w, g, "/meta", "seed", r->seed) ||
      !attr_u64(w, g, "/meta", "sim_time_ps", r->sim_time) ||
      !attr_write(w, g, "/meta", "wall_s", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &wall) ||
      !attr_u64(w, g, "/meta", "events", r->events) ||
      !attr_u64(w, g, "/meta", "packet_hops", r->packet_hops) ||
      !attr_u64(w, g, "/meta", "nvlink_segment_bytes", r->nvlink_segment))
    goto out;
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

typedef struct FlowRow {
  uint32_t id, src, dst;
  uint64_t bytes, start_ps, end_ps;
  double fct_s; /* NaN: not completed */
  uint32_t retransmits;
} FlowRow;

static gboolean write_flows(W *w, const FabResults *r) {
  hid_t mt = H5I_INVALID_HID, ft = H5I_INVALID_HID;
  gboolean ok = FALSE;
  size_t n = r->n_flows, fo = 0;
  FlowRow *rows = g_new0(FlowRow, n ? n : 1);

  for (size_t i = 0; i < n; i++) {
    const FabFlowRec *f = &r->flows[i];
    rows[i] = (FlowRow){f->id, f->src, f->dst, f->bytes, f->start, f->end,
                        f->end == 0 ? NAN : fab_time_to_s(f->end - f->start), f->retransmits};
  }
  if ((mt = H5Tcreate(H5T_COMPOUND, sizeof(FlowRow))) < 0 ||
      (ft = H5Tcreate(H5T_COMPOUND, sizeof(FlowRow))) < 0 ||
      field(mt, ft, &fo, "id", offsetof(FlowRow, id), H5T_NATIVE_UINT32, H5T_STD_U32LE) < 0 ||
      field(mt, ft, &fo, "src", offsetof(FlowRow, src), H5T_NATIVE_UINT32, H5T_STD_U32LE) < 0 ||
      field(mt, ft, &fo, "dst", offsetof(FlowRow, dst), H5T_NATIVE_UINT32, H5T_STD_U32LE) < 0 ||
      field(mt, ft, &fo, "bytes", offsetof(FlowRow, bytes), H5T_NATIVE_UINT64, H5T_STD_U64LE) < 0 ||
      field(mt, ft, &fo, "start_ps", offsetof(FlowRow, start_ps), H5T_NATIVE_UINT64,
            H5T_STD_U64LE) < 0 ||
      field(mt, ft, &fo, "end_ps", offsetof(FlowRow, end_ps), H5T_NATIVE_UINT64,
            H5T_STD_U64LE) < 0 ||
      field(mt, ft, &fo, "fct_s", offsetof(FlowRow, fct_s), H5T_NATIVE_DOUBLE,
            H5T_IEEE_F64LE) < 0 ||
      field(mt, ft, &fo, "retransmits", offsetof(FlowRow, retransmits), H5T_NATIVE_UINT32,
            H5T_STD_U32LE) < 0 ||
      H5Tpack(ft) < 0) {
    fail_h5(w, "making the type of dataset /flows");
    goto out;
  }
  hsize_t dims[1] = {n};
  ok = dset_write(w, w->file, "/", "flows", ft, mt, 1, dims, w->dcpl, rows);
out:
  close_id(&ft);
  close_id(&mt);
  g_free(rows);
  return ok;
}

typedef struct LinkRow {
  char from[FAB_NAME_LEN], to[FAB_NAME_LEN];
  uint64_t bps, bytes, packets, drops, max_queue_bytes, pause_tx, pause_rx, paused_ps, ecn_marks;
} LinkRow;

static gboolean write_links(W *w, const FabResults *r) {
  hid_t mt = H5I_INVALID_HID, ft = H5I_INVALID_HID;
  gboolean ok = FALSE;
  size_t n = r->n_links, fo = 0;
  LinkRow *rows = g_new0(LinkRow, n ? n : 1);

  for (size_t i = 0; i < n; i++) {
    const FabLinkRec *l = &r->links[i];
    name_copy(rows[i].from, l->from);
    name_copy(rows[i].to, l->to);
    rows[i].bps = l->bps;
    rows[i].bytes = l->bytes;
    rows[i].packets = l->packets;
    rows[i].drops = l->drops;
    rows[i].max_queue_bytes = l->max_queue_bytes;
    rows[i].pause_tx = l->pause_tx;
    rows[i].pause_rx = l->pause_rx;
    rows[i].paused_ps = l->paused;
    rows[i].ecn_marks = l->ecn_marks;
  }
#define U64(name) \
  field(mt, ft, &fo, #name, offsetof(LinkRow, name), H5T_NATIVE_UINT64, H5T_STD_U64LE) < 0
  if ((mt = H5Tcreate(H5T_COMPOUND, sizeof(LinkRow))) < 0 ||
      (ft = H5Tcreate(H5T_COMPOUND, sizeof(LinkRow))) < 0 ||
      field(mt, ft, &fo, "from", offsetof(LinkRow, from), w->name_type, w->name_type) < 0 ||
      field(mt, ft, &fo, "to", offsetof(LinkRow, to), w->name_type, w->name_type) < 0 ||
      U64(bps) || U64(bytes) || U64(packets) || U64(drops) || U64(max_queue_bytes) || U64(pause_tx) ||
      U64(pause_rx) || U64(paused_ps) || U64(ecn_marks) || H5Tpack(ft) < 0) {
    fail_h5(w, "making the type of dataset /links");
    goto out;
  }
#undef U64
  hsize_t dims[1] = {n};
  ok = dset_write(w, w->file, "/", "links", ft, mt, 1, dims, w->dcpl, rows);
out:
  close_id(&ft);
  close_id(&mt);
  g_free(rows);
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
  char (*names)[FAB_NAME_LEN] = g_malloc0_n(np ? np : 1, FAB_NAME_LEN);

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

/* Write `r` to `path` through "PATH.tmp.PID" and rename(). Creates the parent
** directory. HDF5's automatic error printing is off during the call. Cost:
** one pass over each table, plus a copy of the flow, link and port tables. */
/* ---- tables from column lists (collectives, timeline, steps, jobs) ------ */

typedef enum { C_U8, C_U32, C_I32, C_U64, C_F64, C_S16, C_S32, C_S64 } ColKind;
typedef struct Col {
  const char *name;
  size_t off;
  ColKind kind;
} Col;

/* Dataset /name: a compound table of n rows of `size` bytes described by cols. */
static gboolean write_table(W *w, const char *name, const Col *cols, size_t ncols, size_t size, size_t n,
                            const void *rows) {
  hid_t mt = H5I_INVALID_HID, ft = H5I_INVALID_HID, s16 = H5I_INVALID_HID, s32 = H5I_INVALID_HID,
        s64 = H5I_INVALID_HID;
  gboolean ok = FALSE;
  size_t fo = 0;
  if ((s16 = str_type(16, H5T_CSET_ASCII)) < 0 || (s32 = str_type(32, H5T_CSET_ASCII)) < 0 ||
      (s64 = str_type(64, H5T_CSET_ASCII)) < 0 ||
      (mt = H5Tcreate(H5T_COMPOUND, size)) < 0 || (ft = H5Tcreate(H5T_COMPOUND, size)) < 0)
    goto fail;
  for (size_t i = 0; i < ncols; i++) {
    static const hid_t *mem[] = {&H5T_NATIVE_UINT8_g, &H5T_NATIVE_UINT32_g, &H5T_NATIVE_INT32_g,
                                 &H5T_NATIVE_UINT64_g, &H5T_NATIVE_DOUBLE_g};
    static const hid_t *file[] = {&H5T_STD_U8LE_g, &H5T_STD_U32LE_g, &H5T_STD_I32LE_g, &H5T_STD_U64LE_g,
                                  &H5T_IEEE_F64LE_g};
    ColKind k = cols[i].kind;
    hid_t str = k == C_S16 ? s16 : k == C_S32 ? s32 : k == C_S64 ? s64 : H5I_INVALID_HID;
    hid_t m = k >= C_S16 ? str : *mem[k], f = k >= C_S16 ? str : *file[k];
    if (field(mt, ft, &fo, cols[i].name, cols[i].off, m, f) < 0) goto fail;
  }
  if (H5Tpack(ft) < 0) goto fail;
  hsize_t dims[1] = {n};
  ok = dset_write(w, w->file, "/", name, ft, mt, 1, dims, w->dcpl, rows);
  goto out;
fail:
  fail_h5(w, "making the type of dataset /%s", name);
out:
  close_id(&ft);
  close_id(&mt);
  close_id(&s16);
  close_id(&s32);
  close_id(&s64);
  return ok;
}

static void str_copy(char *dst, size_t len, const char *src) {
  memset(dst, 0, len);
  if (src) memcpy(dst, src, strnlen(src, len - 1));
}

typedef struct CollRow {
  char op[16], algorithm[16], protocol[16], tag[32];
  uint64_t bytes, count;
  uint32_t dtype_bytes, ranks;
  int32_t root;
  uint32_t channels, job, step;
  double start_s, end_s, time_s, algbw_GBps, busbw_GBps;
} CollRow;

typedef struct SpanRow {
  uint32_t rank, job;
  uint8_t kind, phase;
  int32_t coll;
  uint32_t step;
  double start_s, end_s;
} SpanRow;

typedef struct StepRow {
  char job_name[64];
  uint32_t job, step;
  double start_s, end_s, step_time_s, compute_s, comm_s, exposed_comm_s, overlap_s, bubble_s;
} StepRow;

typedef struct JobRow {
  char name[64], kind[16];
  uint32_t ranks, flows, completed;
  uint64_t bytes;
  double start_s, end_s, time_s;
} JobRow;

#define COL(T, f, k) {#f, offsetof(T, f), k}

static gboolean write_dag_tables(W *w, const FabResults *r) {
  static const Col cc[] = {COL(CollRow, op, C_S16), COL(CollRow, algorithm, C_S16), COL(CollRow, protocol, C_S16),
                           COL(CollRow, tag, C_S32), COL(CollRow, bytes, C_U64), COL(CollRow, count, C_U64),
                           COL(CollRow, dtype_bytes, C_U32), COL(CollRow, ranks, C_U32), COL(CollRow, root, C_I32),
                           COL(CollRow, channels, C_U32), COL(CollRow, job, C_U32), COL(CollRow, step, C_U32),
                           COL(CollRow, start_s, C_F64), COL(CollRow, end_s, C_F64), COL(CollRow, time_s, C_F64),
                           COL(CollRow, algbw_GBps, C_F64), COL(CollRow, busbw_GBps, C_F64)};
  static const Col sc[] = {COL(SpanRow, rank, C_U32), COL(SpanRow, job, C_U32), COL(SpanRow, kind, C_U8),
                           COL(SpanRow, phase, C_U8), COL(SpanRow, coll, C_I32), COL(SpanRow, step, C_U32),
                           COL(SpanRow, start_s, C_F64), COL(SpanRow, end_s, C_F64)};
  static const Col tc[] = {COL(StepRow, job, C_U32), COL(StepRow, job_name, C_S64), COL(StepRow, step, C_U32), COL(StepRow, start_s, C_F64),
                           COL(StepRow, end_s, C_F64), COL(StepRow, step_time_s, C_F64),
                           COL(StepRow, compute_s, C_F64), COL(StepRow, comm_s, C_F64),
                           COL(StepRow, exposed_comm_s, C_F64), COL(StepRow, overlap_s, C_F64),
                           COL(StepRow, bubble_s, C_F64)};
  static const Col jc[] = {COL(JobRow, name, C_S64), COL(JobRow, kind, C_S16), COL(JobRow, ranks, C_U32),
                           COL(JobRow, flows, C_U32), COL(JobRow, completed, C_U32), COL(JobRow, bytes, C_U64),
                           COL(JobRow, start_s, C_F64), COL(JobRow, end_s, C_F64), COL(JobRow, time_s, C_F64)};
  CollRow *c = g_new0(CollRow, r->n_colls ? r->n_colls : 1);
  for (size_t i = 0; i < r->n_colls; i++) {
    const struct FabCollRec *x = &r->colls[i];
    double t = x->end ? fab_time_to_s(x->end - x->start) : NAN, alg = t > 0 ? (double)x->bytes / t / 1e9 : NAN;
    str_copy(c[i].op, 16, x->op);
    str_copy(c[i].algorithm, 16, x->algorithm);
    str_copy(c[i].protocol, 16, x->protocol);
    str_copy(c[i].tag, 32, x->tag);
    c[i].bytes = x->bytes;
    c[i].count = x->count;
    c[i].dtype_bytes = x->dtype_bytes;
    c[i].ranks = x->ranks;
    c[i].root = x->root;
    c[i].channels = x->channels;
    c[i].job = x->job;
    c[i].step = x->step;
    c[i].start_s = fab_time_to_s(x->start);
    c[i].end_s = x->end ? fab_time_to_s(x->end) : NAN;
    c[i].time_s = t;
    c[i].algbw_GBps = alg;
    c[i].busbw_GBps = alg * fab_busbw_factor(x->op, x->ranks);
  }
  SpanRow *sp = g_new0(SpanRow, r->n_spans ? r->n_spans : 1);
  for (size_t i = 0; i < r->n_spans; i++) {
    const struct FabSpanRec *x = &r->spans[i];
    sp[i] = (SpanRow){x->rank, x->job, x->kind, x->phase, x->coll, x->step, fab_time_to_s(x->start),
                      fab_time_to_s(x->end)};
  }
  StepRow *st = g_new0(StepRow, r->n_steps ? r->n_steps : 1);
  for (size_t i = 0; i < r->n_steps; i++) {
    const struct FabStepRec *x = &r->steps[i];
    str_copy(st[i].job_name, 64, x->job < r->n_jobs ? r->jobs[x->job].name : "");
    st[i].job = x->job;
    st[i].step = x->step;
    st[i].start_s = fab_time_to_s(x->start);
    st[i].end_s = fab_time_to_s(x->end);
    st[i].step_time_s = fab_time_to_s(x->end - x->start);
    st[i].compute_s = x->compute_s;
    st[i].comm_s = x->comm_s;
    st[i].exposed_comm_s = x->exposed_comm_s;
    st[i].overlap_s = x->overlap_s;
    st[i].bubble_s = x->bubble_s;
  }
  JobRow *jb = g_new0(JobRow, r->n_jobs ? r->n_jobs : 1);
  for (size_t i = 0; i < r->n_jobs; i++) {
    const struct FabJobRec *x = &r->jobs[i];
    str_copy(jb[i].name, 64, x->name);
    str_copy(jb[i].kind, 16, x->kind);
    jb[i].ranks = x->ranks;
    jb[i].flows = x->flows;
    jb[i].completed = x->completed;
    jb[i].bytes = x->bytes;
    jb[i].start_s = fab_time_to_s(x->start);
    jb[i].end_s = x->end ? fab_time_to_s(x->end) : NAN;
    jb[i].time_s = x->end ? fab_time_to_s(x->end - x->start) : NAN;
  }
  gboolean ok = write_table(w, "collectives", cc, G_N_ELEMENTS(cc), sizeof(CollRow), r->n_colls, c) &&
                write_table(w, "timeline", sc, G_N_ELEMENTS(sc), sizeof(SpanRow), r->n_spans, sp) &&
                write_table(w, "steps", tc, G_N_ELEMENTS(tc), sizeof(StepRow), r->n_steps, st) &&
                write_table(w, "jobs", jc, G_N_ELEMENTS(jc), sizeof(JobRow), r->n_jobs, jb);
  g_free(c);
  g_free(sp);
  g_free(st);
  g_free(jb);
  return ok;
}

gboolean fab_h5_write(const FabResults *r, const char *path, GError **err) {
  g_return_val_if_fail(r != NULL && path != NULL, FALSE);
  g_return_val_if_fail(err == NULL || *err == NULL, FALSE);
  g_return_val_if_fail(r->n_flows == 0 || r->flows, FALSE);
  g_return_val_if_fail(r->n_links == 0 || r->links, FALSE);
  g_return_val_if_fail(r->queues.interval == 0 || r->queues.n_ports == 0 ||
                           (r->queues.port && (r->queues.n_samples == 0 ||
                                               (r->queues.t && r->queues.depth))),
                       FALSE);

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
      (w.name_type = str_type(FAB_NAME_LEN, H5T_CSET_ASCII)) < 0) {
    fail_h5(&w, "setting up property lists");
    goto out;
  }
  attempted = TRUE; /* from here on a failure removes tmp, even a half-made one */
  if ((w.file = H5Fcreate(tmp, H5F_ACC_TRUNC, fcpl, fapl)) < 0) {
    fail_h5(&w, "creating %s", tmp);
    goto out;
  }
  if (!write_meta(&w, r) || !write_flows(&w, r) || !write_links(&w, r) || !write_queues(&w, r) ||
      !write_dag_tables(&w, r))
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

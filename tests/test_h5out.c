/* Tests for tools/libfabsim/h5out.c (and fab_results_clear in results.c):
** write small hand-built results (finalized, as the driver does), read them
** back with the HDF5 API, check every value and every file type; empty
** tables; failures leave nothing behind; the same results give the same
** bytes; the tables read back with the h5table.h reader give the records
** written. */
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <hdf5.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/libfabsim/h5out.h"
#include "tools/libfabsim/h5table.h"
#include "tools/libfabsim/results.h"
#include "tools/libfabsim/sampler.h"
#include "testscen.h"

/* ---- scratch directory, one per test ------------------------------------ */

static char *tmpdir;
static GPtrArray *finalized; /* what fab_results_finalize allocated in results the tests own */

static void rm_rf(const char *path) {
  if (g_file_test(path, G_FILE_TEST_IS_DIR) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
    GDir *d = g_dir_open(path, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
      char *p = g_build_filename(path, name, NULL);
      rm_rf(p);
      g_free(p);
    }
    if (d) g_dir_close(d);
    g_rmdir(path);
  } else {
    g_unlink(path);
  }
}

static void setup(void) {
  GError *e = NULL;
  tmpdir = g_dir_make_tmp("fabsim-h5out-XXXXXX", &e);
  cr_assert_not_null(tmpdir, "mkdtemp: %s", e ? e->message : "?");
  finalized = g_ptr_array_new_with_free_func(g_free);
}

static void teardown(void) {
  g_ptr_array_free(finalized, TRUE);
  finalized = NULL;
  rm_rf(tmpdir);
  g_free(tmpdir);
  tmpdir = NULL;
}

TestSuite(h5out, .init = setup, .fini = teardown);

static char *in_tmp(const char *rel) { return g_build_filename(tmpdir, rel, NULL); }

static int cmp_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in directory `dir`, joined with ",". */
static char *listing(const char *dir) {
  GDir *d = g_dir_open(dir, 0, NULL);
  cr_assert_not_null(d);
  GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
  const char *name;
  while ((name = g_dir_read_name(d))) g_ptr_array_add(a, g_strdup(name));
  g_dir_close(d);
  g_ptr_array_sort(a, cmp_names);
  g_ptr_array_add(a, NULL);
  char *s = g_strjoinv(",", (char **)a->pdata);
  g_ptr_array_free(a, TRUE);
  return s;
}

/* ---- the hand-built results ---------------------------------------------- */

#define YAML                                                                   \
  "# two hosts, one switch \xe2\x80\x94 caf\xc3\xa9\n"                         \
  "fabric:\n  link: {bandwidth: 100Gbps, delay: 500ns}\n"                      \
  "workload:\n  flows: [{src: 0, dst: 1, bytes: 1MB}]\n"

#define LONG_NAME "spine12345678901234567890:p9999" /* 31 bytes, the maximum */

static FabFlowRec flows[2] = {
    {.id = 0, .src = 1, .dst = 2, .bytes = 1000000, .start = 5 * FAB_US,
     .end = 17 * FAB_US + 250, .retransmits = 3},
    {.id = 1, .src = 3, .dst = 0, .bytes = 4096, .start = 7 * FAB_US, .end = 0,
     .retransmits = 0},
};

static FabLinkRec links[3] = {
    {"host1:p0", "leaf0:p1", 100000000000ULL, 1234567, 890, 0, 0, 0, 7, 123456789, 0, "nic"},
    {"leaf0:p1", "host1:p0", 100000000000ULL, 7654321, 5000, 12, 262144, 9, 0, 0, 42, "nic"},
    {LONG_NAME, "leaf0:p3", 400000000000ULL, UINT64_MAX, 1, 2, 3, 4, 5, 6, 7, "fabric"},
};

static char ports[2][FAB_FIELD_NAME_LEN] = {"leaf0:p0", "leaf0:p1"};
static fab_time_t times[4] = {0, FAB_US, 2 * FAB_US, 3 * FAB_US};
static uint32_t depth[8]; /* filled by sample() */

/* Derive what the writers print (fct_s, status, ...), as the driver does
** before anything is written. The tables stay the test's; the step
** summaries (none here: no jobs) are freed at teardown. */
static FabResults finalize(FabResults r) {
  cr_assert_eq(r.n_jobs, 0);
  fab_results_finalize(&r);
  if (finalized) g_ptr_array_add(finalized, r.summaries);
  else g_free(r.summaries);
  r.summaries = NULL;
  return r;
}

static FabResults raw_sample(void) {
  for (uint32_t s = 0; s < 4; s++)
    for (uint32_t p = 0; p < 2; p++) depth[s * 2 + p] = s * 1000 + p * 7 + (s == 3 ? 4000000000u : 0);
  FabResults r = {
      .version = "0.1.0",
      .scenario = "two-hosts",
      .scenario_text = YAML,
      .seed = 0xDEADBEEFCAFEF00DULL,
      .sim_time = 123456789012345ULL,
      .wall_s = 0.25,
      .events = (1ULL << 40) + 5,
      .packet_hops = 987654321,
      .endpoints = 4,
      .n_flows = 2,
      .flows = flows,
      .n_links = 3,
      .links = links,
      .queues = {.interval = FAB_US, .n_ports = 2, .port = ports, .n_samples = 4, .t = times,
                 .depth = depth},
  };
  return r;
}

static FabResults sample(void) { return finalize(raw_sample()); }

/* Results with no tables at all. */
static FabResults empty(void) {
  FabResults r = {.version = "0.1.0", .scenario = "", .scenario_text = "", .seed = 1};
  return finalize(r);
}

/* ---- reading back ---------------------------------------------------------- */

static hid_t open_file(const char *path) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert_geq(f, 0, "cannot open %s", path);
  return f;
}

static void assert_type(hid_t t, hid_t want, const char *what) {
  cr_assert_gt(H5Tequal(t, want), 0, "%s: unexpected file type", what);
}

static uint64_t attr_u64(hid_t loc, const char *name) {
  hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  cr_assert_geq(a, 0, "no attribute %s", name);
  hid_t t = H5Aget_type(a);
  assert_type(t, H5T_STD_U64LE, name);
  uint64_t v = 0;
  cr_assert_geq(H5Aread(a, H5T_NATIVE_UINT64, &v), 0);
  H5Tclose(t);
  H5Aclose(a);
  return v;
}

/* A fixed-length, NUL-terminated string type of any size; read as is. */
static char *read_str(hid_t t, herr_t (*rd)(hid_t, hid_t, void *), hid_t obj) {
  cr_assert_eq(H5Tget_class(t), H5T_STRING);
  cr_assert_eq(H5Tis_variable_str(t), 0);
  cr_assert_eq(H5Tget_strpad(t), H5T_STR_NULLTERM);
  size_t n = H5Tget_size(t);
  char *buf = g_malloc0(n + 1);
  cr_assert_geq(rd(obj, t, buf), 0);
  return buf;
}

static herr_t aread(hid_t a, hid_t t, void *buf) { return H5Aread(a, t, buf); }
static herr_t dread(hid_t d, hid_t t, void *buf) {
  return H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
}

static char *attr_str(hid_t loc, const char *name) {
  hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  cr_assert_geq(a, 0, "no attribute %s", name);
  hid_t t = H5Aget_type(a);
  cr_assert_eq(H5Tget_cset(t), H5T_CSET_UTF8);
  char *s = read_str(t, aread, a);
  H5Tclose(t);
  H5Aclose(a);
  return s;
}

/* Rank and dims of dataset `name`; returns the open dataset. */
static hid_t open_dset(hid_t loc, const char *name, int rank, const hsize_t *want) {
  hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
  cr_assert_geq(d, 0, "no dataset %s", name);
  hid_t sp = H5Dget_space(d);
  cr_assert_eq(H5Sget_simple_extent_ndims(sp), rank, "%s: rank", name);
  hsize_t dims[2] = {99, 99};
  H5Sget_simple_extent_dims(sp, dims, NULL);
  for (int i = 0; i < rank; i++)
    cr_assert_eq(dims[i], want[i], "%s: dim %d is %llu, want %llu", name, i,
                 (unsigned long long)dims[i], (unsigned long long)want[i]);
  H5Sclose(sp);
  return d;
}

static H5D_layout_t layout_of(hid_t d, int *nfilters) {
  hid_t pl = H5Dget_create_plist(d);
  H5D_layout_t l = H5Pget_layout(pl);
  *nfilters = H5Pget_nfilters(pl);
  H5Pclose(pl);
  return l;
}

/* Check a compound's members: names and file types in order, packed. */
static void assert_members(hid_t t, int n, const char *const *names, const hid_t *types,
                           size_t size) {
  cr_assert_eq(H5Tget_class(t), H5T_COMPOUND);
  cr_assert_eq(H5Tget_nmembers(t), n);
  cr_assert_eq(H5Tget_size(t), size, "compound is %zu bytes, want %zu", H5Tget_size(t), size);
  size_t off = 0;
  for (int i = 0; i < n; i++) {
    char *nm = H5Tget_member_name(t, (unsigned)i);
    cr_assert_str_eq(nm, names[i]);
    H5free_memory(nm);
    cr_assert_eq(H5Tget_member_offset(t, (unsigned)i), off, "%s offset", names[i]);
    hid_t mt = H5Tget_member_type(t, (unsigned)i);
    assert_type(mt, types[i], names[i]);
    off += H5Tget_size(mt);
    H5Tclose(mt);
  }
}

static hid_t name32(void) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, FAB_FIELD_NAME_LEN);
  H5Tset_strpad(t, H5T_STR_NULLTERM);
  return t;
}

typedef struct RFlow {
  uint32_t retransmits; /* deliberately out of order: HDF5 matches by name */
  uint32_t id, src, dst;
  uint64_t bytes, start_ps, end_ps;
  double fct_s;
} RFlow;

typedef struct RLink {
  char from[FAB_FIELD_NAME_LEN], to[FAB_FIELD_NAME_LEN];
  uint64_t bps, bytes, packets, drops, max_queue_bytes, pause_tx, pause_rx, paused_ps, ecn_marks;
  char layer[8];
} RLink;

static void check_meta(hid_t f, const FabResults *r) {
  hid_t g = H5Gopen2(f, "meta", H5P_DEFAULT);
  cr_assert_geq(g, 0, "no /meta");
  char *s = attr_str(g, "fabsim_version");
  cr_assert_str_eq(s, r->version);
  g_free(s);
  s = attr_str(g, "scenario");
  cr_assert_str_eq(s, r->scenario);
  g_free(s);
  cr_assert_eq(attr_u64(g, "seed"), r->seed);
  cr_assert_eq(attr_u64(g, "sim_time_ps"), r->sim_time);
  /* the wall time is the JSON's only: identical runs give identical files */
  cr_assert_eq(H5Aexists(g, "wall_s"), 0, "/meta has a wall_s attribute");
  cr_assert_eq(attr_u64(g, "events"), r->events);
  cr_assert_eq(attr_u64(g, "packet_hops"), r->packet_hops);

  hid_t d = H5Dopen2(g, "scenario_yaml", H5P_DEFAULT);
  cr_assert_geq(d, 0, "no /meta/scenario_yaml");
  hid_t sp = H5Dget_space(d);
  cr_assert_eq(H5Sget_simple_extent_type(sp), H5S_SCALAR);
  H5Sclose(sp);
  hid_t t = H5Dget_type(d);
  cr_assert_eq(H5Tget_cset(t), H5T_CSET_UTF8);
  s = read_str(t, dread, d);
  cr_assert_str_eq(s, r->scenario_text);
  g_free(s);
  H5Tclose(t);
  H5Dclose(d);
  H5Gclose(g);
}

static const char *const flow_names[] = {"id",       "src",    "dst",   "bytes",
                                         "start_ps", "end_ps", "fct_s", "retransmits", "reorder"};
static const char *const link_names[] = {"from",    "to",    "bps",             "bytes",    "packets",
                                         "drops",   "max_queue_bytes", "pause_tx", "pause_rx",
                                         "paused_ps", "ecn_marks", "layer"};

static void check_flow_type(hid_t d) {
  hid_t types[9] = {H5T_STD_U32LE, H5T_STD_U32LE, H5T_STD_U32LE,  H5T_STD_U64LE, H5T_STD_U64LE,
                    H5T_STD_U64LE, H5T_IEEE_F64LE, H5T_STD_U32LE, H5T_STD_U32LE};
  hid_t t = H5Dget_type(d);
  assert_members(t, 9, flow_names, types, 4 * 3 + 8 * 3 + 8 + 4 + 4);
  H5Tclose(t);
}

static void check_link_type(hid_t d) {
  hid_t s = name32(), s8 = H5Tcopy(s);
  H5Tset_size(s8, 8); /* layer: fabric, nic, pcie, nvlink */
  hid_t types[12] = {s, s, H5T_STD_U64LE, H5T_STD_U64LE, H5T_STD_U64LE, H5T_STD_U64LE,
                     H5T_STD_U64LE, H5T_STD_U64LE, H5T_STD_U64LE, H5T_STD_U64LE, H5T_STD_U64LE, s8};
  hid_t t = H5Dget_type(d);
  assert_members(t, 12, link_names, types, 2 * FAB_FIELD_NAME_LEN + 9 * 8 + 8);
  H5Tclose(t);
  H5Tclose(s8);
  H5Tclose(s);
}

static hid_t flow_mem_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(RFlow));
  H5Tinsert(t, "id", offsetof(RFlow, id), H5T_NATIVE_UINT32);
  H5Tinsert(t, "src", offsetof(RFlow, src), H5T_NATIVE_UINT32);
  H5Tinsert(t, "dst", offsetof(RFlow, dst), H5T_NATIVE_UINT32);
  H5Tinsert(t, "bytes", offsetof(RFlow, bytes), H5T_NATIVE_UINT64);
  H5Tinsert(t, "start_ps", offsetof(RFlow, start_ps), H5T_NATIVE_UINT64);
  H5Tinsert(t, "end_ps", offsetof(RFlow, end_ps), H5T_NATIVE_UINT64);
  H5Tinsert(t, "fct_s", offsetof(RFlow, fct_s), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "retransmits", offsetof(RFlow, retransmits), H5T_NATIVE_UINT32);
  return t;
}

static hid_t link_mem_type(void) {
  hid_t s = name32();
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(RLink));
  H5Tinsert(t, "from", offsetof(RLink, from), s);
  H5Tinsert(t, "to", offsetof(RLink, to), s);
  H5Tinsert(t, "bps", offsetof(RLink, bps), H5T_NATIVE_UINT64);
  H5Tinsert(t, "bytes", offsetof(RLink, bytes), H5T_NATIVE_UINT64);
  H5Tinsert(t, "packets", offsetof(RLink, packets), H5T_NATIVE_UINT64);
  H5Tinsert(t, "drops", offsetof(RLink, drops), H5T_NATIVE_UINT64);
  H5Tinsert(t, "max_queue_bytes", offsetof(RLink, max_queue_bytes), H5T_NATIVE_UINT64);
  H5Tinsert(t, "pause_tx", offsetof(RLink, pause_tx), H5T_NATIVE_UINT64);
  H5Tinsert(t, "pause_rx", offsetof(RLink, pause_rx), H5T_NATIVE_UINT64);
  H5Tinsert(t, "paused_ps", offsetof(RLink, paused_ps), H5T_NATIVE_UINT64);
  H5Tinsert(t, "ecn_marks", offsetof(RLink, ecn_marks), H5T_NATIVE_UINT64);
  hid_t s8 = H5Tcopy(s);
  H5Tset_size(s8, 8);
  H5Tinsert(t, "layer", offsetof(RLink, layer), s8);
  H5Tclose(s8);
  H5Tclose(s);
  return t;
}

static gboolean same_bytes(const char *a, const char *b) {
  char *x = NULL, *y = NULL;
  gsize nx = 0, ny = 0;
  cr_assert(g_file_get_contents(a, &x, &nx, NULL), "cannot read %s", a);
  cr_assert(g_file_get_contents(b, &y, &ny, NULL), "cannot read %s", b);
  gboolean same = nx == ny && memcmp(x, y, nx) == 0;
  g_free(x);
  g_free(y);
  return same;
}

/* HDF5 files and objects (groups, datasets, attributes) open in this
** process. The public API cannot count transient types, spaces and property
** lists, so those are left to review. */
static ssize_t open_ids(void) {
  ssize_t n = H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL);
  cr_assert_geq(n, 0);
  return n;
}

/* ---- tests ------------------------------------------------------------------ */

Test(h5out, full_roundtrip) {
  FabResults r = sample();
  char *path = in_tmp("out/run/results.h5"); /* parent directories do not exist yet */
  GError *e = NULL;
  ssize_t ids = open_ids();
  cr_assert(fab_h5_write(&r, path, &e), "write failed: %s", e ? e->message : "?");
  cr_assert_null(e);
  cr_assert_eq(open_ids(), ids, "HDF5 objects left open: %zd -> %zd", ids, open_ids());

  hid_t f = open_file(path);
  check_meta(f, &r);

  /* /flows */
  hsize_t n2[1] = {2};
  hid_t d = open_dset(f, "flows", 1, n2);
  check_flow_type(d);
  hid_t mt = flow_mem_type();
  RFlow fl[2];
  memset(fl, 0xAB, sizeof fl);
  cr_assert_geq(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, fl), 0);
  H5Tclose(mt);
  H5Dclose(d);
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(fl[i].id, flows[i].id);
    cr_assert_eq(fl[i].src, flows[i].src);
    cr_assert_eq(fl[i].dst, flows[i].dst);
    cr_assert_eq(fl[i].bytes, flows[i].bytes);
    cr_assert_eq(fl[i].start_ps, flows[i].start);
    cr_assert_eq(fl[i].end_ps, flows[i].end);
    cr_assert_eq(fl[i].retransmits, flows[i].retransmits);
  }
  /* 17 us + 250 ps - 5 us = 12.00025 us */
  cr_assert_float_eq(fl[0].fct_s, 12.00025e-6, 1e-18, "fct_s = %.17g", fl[0].fct_s);
  cr_assert(isnan(fl[1].fct_s), "incomplete flow: fct_s = %g, want NaN", fl[1].fct_s);

  /* /links */
  hsize_t n3[1] = {3};
  d = open_dset(f, "links", 1, n3);
  check_link_type(d);
  mt = link_mem_type();
  RLink lk[3];
  memset(lk, 0xAB, sizeof lk);
  cr_assert_geq(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, lk), 0);
  H5Tclose(mt);
  H5Dclose(d);
  for (int i = 0; i < 3; i++) {
    cr_assert_str_eq(lk[i].from, links[i].from);
    cr_assert_str_eq(lk[i].to, links[i].to);
    cr_assert_eq(lk[i].bps, links[i].bps);
    cr_assert_eq(lk[i].bytes, links[i].bytes);
    cr_assert_eq(lk[i].packets, links[i].packets);
    cr_assert_eq(lk[i].drops, links[i].drops);
    cr_assert_eq(lk[i].max_queue_bytes, links[i].max_queue_bytes);
    cr_assert_eq(lk[i].pause_tx, links[i].pause_tx);
    cr_assert_eq(lk[i].pause_rx, links[i].pause_rx);
    cr_assert_eq(lk[i].paused_ps, links[i].paused);
    cr_assert_eq(lk[i].ecn_marks, links[i].ecn_marks);
    cr_assert_str_eq(lk[i].layer, links[i].layer);
  }
  cr_assert_eq(strlen(lk[2].from), 31);

  /* /queues */
  hid_t g = H5Gopen2(f, "queues", H5P_DEFAULT);
  cr_assert_geq(g, 0, "no /queues");
  cr_assert_eq(attr_u64(g, "interval_ps"), FAB_US);

  hsize_t n4[1] = {4};
  d = open_dset(g, "time_ps", 1, n4);
  hid_t t = H5Dget_type(d);
  assert_type(t, H5T_STD_U64LE, "time_ps");
  H5Tclose(t);
  uint64_t tt[4] = {0};
  cr_assert_geq(H5Dread(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, tt), 0);
  H5Dclose(d);
  for (int i = 0; i < 4; i++) cr_assert_eq(tt[i], times[i]);

  d = open_dset(g, "port", 1, n2);
  t = H5Dget_type(d);
  hid_t s32 = name32();
  assert_type(t, s32, "port");
  H5Tclose(t);
  char pn[2][FAB_FIELD_NAME_LEN];
  cr_assert_geq(H5Dread(d, s32, H5S_ALL, H5S_ALL, H5P_DEFAULT, pn), 0);
  H5Tclose(s32);
  H5Dclose(d);
  cr_assert_str_eq(pn[0], "leaf0:p0");
  cr_assert_str_eq(pn[1], "leaf0:p1");

  hsize_t n42[2] = {4, 2};
  d = open_dset(g, "depth", 2, n42);
  t = H5Dget_type(d);
  assert_type(t, H5T_STD_U32LE, "depth");
  H5Tclose(t);
  int nf = -1;
  cr_assert_eq(layout_of(d, &nf), H5D_CHUNKED);
  cr_assert_eq(nf, 1);
  hid_t pl = H5Dget_create_plist(d);
  unsigned flags = 0, cd[4] = {0};
  size_t ncd = 4;
  cr_assert_eq(H5Pget_filter2(pl, 0, &flags, &ncd, cd, 0, NULL, NULL), H5Z_FILTER_DEFLATE);
  cr_assert_eq(ncd, 1);
  cr_assert_eq(cd[0], 1, "deflate level %u", cd[0]);
  H5Pclose(pl);
  uint32_t dp[4][2];
  memset(dp, 0xAB, sizeof dp);
  cr_assert_geq(H5Dread(d, H5T_NATIVE_UINT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, dp), 0);
  H5Dclose(d);
  for (int s = 0; s < 4; s++)
    for (int p = 0; p < 2; p++) cr_assert_eq(dp[s][p], depth[s * 2 + p], "depth[%d][%d]", s, p);
  cr_assert_eq(dp[3][1], 4000003007u);
  H5Gclose(g);

  cr_assert_eq(H5Fclose(f), 0);
  char *parent = in_tmp("out/run");
  char *ls = listing(parent);
  cr_assert_str_eq(ls, "results.h5", "leftovers: %s", ls);
  g_free(ls);
  g_free(parent);
  g_free(path);
}

/* Check the empty tables of a file written from empty(). */
static void check_empty_tables(hid_t f, uint64_t interval) {
  hsize_t z1[1] = {0}, z2[2] = {0, 0};
  int nf = -1;
  hid_t d = open_dset(f, "flows", 1, z1);
  check_flow_type(d);
  H5Dclose(d);
  d = open_dset(f, "links", 1, z1);
  check_link_type(d);
  H5Dclose(d);
  hid_t g = H5Gopen2(f, "queues", H5P_DEFAULT);
  cr_assert_geq(g, 0, "no /queues");
  cr_assert_eq(attr_u64(g, "interval_ps"), interval);
  H5Dclose(open_dset(g, "time_ps", 1, z1));
  H5Dclose(open_dset(g, "port", 1, z1));
  d = open_dset(g, "depth", 2, z2);
  cr_assert_eq(layout_of(d, &nf), H5D_CONTIGUOUS);
  cr_assert_eq(nf, 0);
  H5Dclose(d);
  H5Gclose(g);
}

Test(h5out, empty_tables) {
  FabResults r = empty();
  char *path = in_tmp("empty.h5");
  GError *e = NULL;
  cr_assert(fab_h5_write(&r, path, &e), "write failed: %s", e ? e->message : "?");
  hid_t f = open_file(path);
  check_meta(f, &r);
  check_empty_tables(f, 0);
  H5Fclose(f);

  /* h5dump must accept the zero-size datasets */
  char *h5dump = g_find_program_in_path("h5dump");
  if (h5dump) {
    char *argv[] = {h5dump, path, NULL}, *out = NULL, *err = NULL;
    int status = -1;
    cr_assert(g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status,
                           NULL));
    cr_assert(g_spawn_check_wait_status(status, NULL), "h5dump failed: %s", err);
    cr_assert_not_null(strstr(out, "DATASET \"flows\""), "%s", out);
    g_free(out);
    g_free(err);
    g_free(h5dump);
  }
  g_free(path);
}

/* Ports but no interval, or an interval but no ports: nothing is sampled and
** every queue dataset is empty. NULL strings are written as "". */
Test(h5out, queues_not_sampled) {
  FabResults r = empty();
  r.version = NULL;
  r.scenario = NULL;
  r.scenario_text = NULL;
  r.queues = (FabQueueSeries){.interval = 0, .n_ports = 2, .port = ports, .n_samples = 4,
                              .t = times, .depth = depth};
  char *path = in_tmp("a.h5");
  GError *e = NULL;
  cr_assert(fab_h5_write(&r, path, &e), "write failed: %s", e ? e->message : "?");
  hid_t f = open_file(path);
  check_empty_tables(f, 0);
  hid_t g = H5Gopen2(f, "meta", H5P_DEFAULT);
  char *s = attr_str(g, "scenario");
  cr_assert_str_eq(s, "");
  g_free(s);
  H5Gclose(g);
  H5Fclose(f);

  r.queues = (FabQueueSeries){.interval = 5 * FAB_US};
  cr_assert(fab_h5_write(&r, path, &e), "write failed: %s", e ? e->message : "?");
  f = open_file(path);
  check_empty_tables(f, 5 * FAB_US);
  H5Fclose(f);
  g_free(path);
}

/* Sampling configured but the run ended before the first sample. */
Test(h5out, ports_without_samples) {
  FabResults r = empty();
  r.queues = (FabQueueSeries){.interval = FAB_US, .n_ports = 2, .port = ports};
  char *path = in_tmp("a.h5");
  GError *e = NULL;
  cr_assert(fab_h5_write(&r, path, &e), "write failed: %s", e ? e->message : "?");
  hid_t f = open_file(path);
  hsize_t z1[1] = {0}, n2[1] = {2}, z2[2] = {0, 2};
  H5Dclose(open_dset(f, "queues/time_ps", 1, z1));
  H5Dclose(open_dset(f, "queues/port", 1, n2));
  hid_t d = open_dset(f, "queues/depth", 2, z2);
  int nf = -1;
  cr_assert_eq(layout_of(d, &nf), H5D_CONTIGUOUS);
  H5Dclose(d);
  H5Fclose(f);
  g_free(path);
}

Test(h5out, fails_when_directory_cannot_be_made) {
  char *blocker = in_tmp("blocker");
  cr_assert(g_file_set_contents(blocker, "not a directory", -1, NULL));
  char *path = in_tmp("blocker/sub/out.h5");
  FabResults r = sample();
  GError *e = NULL;
  cr_assert_not(fab_h5_write(&r, path, &e));
  cr_assert_not_null(e);
  cr_assert_eq(e->domain, FAB_H5_ERROR);
  cr_assert_not_null(strstr(e->message, path), "message does not name the path: %s", e->message);
  cr_assert_not_null(strstr(e->message, "Not a directory"), "no reason: %s", e->message);
  g_error_free(e);
  cr_assert_not(g_file_test(path, G_FILE_TEST_EXISTS));
  char *ls = listing(tmpdir);
  cr_assert_str_eq(ls, "blocker", "leftovers: %s", ls);
  g_free(ls);
  /* no GError wanted: still FALSE, no crash */
  cr_assert_not(fab_h5_write(&r, path, NULL));
  g_free(path);
  g_free(blocker);
}

/* A directory at the path is refused before anything is written. */
Test(h5out, refuses_a_directory_at_the_path) {
  char *path = in_tmp("isdir");
  cr_assert_eq(g_mkdir(path, 0755), 0);
  char *inside = in_tmp("isdir/keep");
  cr_assert(g_file_set_contents(inside, "x", -1, NULL));
  FabResults r = sample();
  GError *e = NULL;
  ssize_t ids = open_ids();
  cr_assert_not(fab_h5_write(&r, path, &e));
  cr_assert_eq(open_ids(), ids, "HDF5 objects left open");
  cr_assert_not_null(e);
  cr_assert_eq(e->domain, FAB_H5_ERROR);
  cr_assert_not_null(strstr(e->message, path), "message does not name the path: %s", e->message);
  cr_assert_not_null(strstr(e->message, "it is a directory"), "no reason: %s", e->message);
  g_error_free(e);
  char *ls = listing(tmpdir);
  cr_assert_str_eq(ls, "isdir", "leftovers: %s", ls);
  g_free(ls);
  ls = listing(path);
  cr_assert_str_eq(ls, "keep");
  g_free(ls);
  g_free(inside);
  g_free(path);
}

/* An HDF5 call fails (the temporary's name is too long for the filesystem
** while PATH itself is fine): the message carries HDF5's reason. */
Test(h5out, fails_in_hdf5_and_leaves_nothing) {
  char *base = g_strnfill(250, 'x');
  char *path = in_tmp(base);
  FabResults r = sample();
  GError *e = NULL;
  ssize_t ids = open_ids();
  cr_assert_not(fab_h5_write(&r, path, &e));
  cr_assert_eq(open_ids(), ids, "HDF5 objects left open");
  cr_assert_not_null(e);
  cr_assert_eq(e->domain, FAB_H5_ERROR);
  cr_assert_not_null(strstr(e->message, path), "message does not name the path: %s", e->message);
  cr_assert_not_null(strstr(e->message, "creating"), "no step: %s", e->message);
  cr_assert_not_null(strstr(e->message, "File name too long"), "no reason: %s", e->message);
  g_error_free(e);
  char *ls = listing(tmpdir);
  cr_assert_str_eq(ls, "", "leftovers: %s", ls);
  g_free(ls);
  g_free(path);
  g_free(base);
}

Test(h5out, replaces_existing_file) {
  char *path = in_tmp("r.h5");
  cr_assert(g_file_set_contents(path, "old contents", -1, NULL));
  FabResults r = sample();
  GError *e = NULL;
  cr_assert(fab_h5_write(&r, path, &e), "write failed: %s", e ? e->message : "?");
  hid_t f = open_file(path);
  check_meta(f, &r);
  H5Fclose(f);
  char *ls = listing(tmpdir);
  cr_assert_str_eq(ls, "r.h5", "leftovers: %s", ls);
  g_free(ls);
  g_free(path);
}

Test(h5out, same_results_same_bytes) {
  FabResults r = sample();
  char *a = in_tmp("a.h5"), *b = in_tmp("b.h5"), *c = in_tmp("c.h5");
  GError *e = NULL;
  cr_assert(fab_h5_write(&r, a, &e), "write failed: %s", e ? e->message : "?");
  g_usleep(1100000); /* a stored timestamp would now differ */
  cr_assert(fab_h5_write(&r, b, &e), "write failed: %s", e ? e->message : "?");
  cr_assert(same_bytes(a, b), "two writes of the same results differ");

  /* bytes after the terminator of a name never reach the file */
  FabLinkRec lk[3];
  memcpy(lk, links, sizeof lk);
  char pt[2][FAB_FIELD_NAME_LEN];
  memcpy(pt, ports, sizeof pt);
  for (int i = 0; i < 3; i++) {
    size_t n = strlen(lk[i].from) + 1;
    memset(lk[i].from + n, 'Z', FAB_FIELD_NAME_LEN - n);
    n = strlen(lk[i].to) + 1;
    memset(lk[i].to + n, 'Z', FAB_FIELD_NAME_LEN - n);
  }
  memset(pt[1] + 9, 'Z', FAB_FIELD_NAME_LEN - 9);
  r.links = lk;
  r.queues.port = pt;
  cr_assert(fab_h5_write(&r, c, &e), "write failed: %s", e ? e->message : "?");
  cr_assert(same_bytes(a, c), "garbage after a name's terminator changed the file");

  /* and a different value does change it */
  r.seed++;
  cr_assert(fab_h5_write(&r, c, &e), "write failed: %s", e ? e->message : "?");
  cr_assert_not(same_bytes(a, c));

  FabResults z = empty();
  cr_assert(fab_h5_write(&z, b, &e), "write failed: %s", e ? e->message : "?");
  cr_assert(fab_h5_write(&z, c, &e), "write failed: %s", e ? e->message : "?");
  cr_assert(same_bytes(b, c), "two writes of empty results differ");
  g_free(a);
  g_free(b);
  g_free(c);
}

Test(results, clear_frees_tables_keeps_strings) {
  FabResults r = raw_sample();
  /* borrowed strings the test owns: freeing them in clear would be a double free below */
  char *version = g_strdup("0.1.0"), *scenario = g_strdup("two-hosts"), *text = g_strdup(YAML);
  r.version = version;
  r.scenario = scenario;
  r.scenario_text = text;
  r.failure = g_strdup("stop_time reached"); /* owned by r: clear frees it */
  r.flows = g_memdup2(flows, sizeof flows);
  r.links = g_memdup2(links, sizeof links);
  r.queues.port = g_memdup2(ports, sizeof ports);
  r.queues.t = g_memdup2(times, sizeof times);
  r.queues.depth = g_memdup2(depth, sizeof depth);
  r.colls = g_new0(FabCollRec, 1);
  r.colls[0] = (FabCollRec){.op = "allreduce", .ranks = 2, .end = FAB_US};
  r.n_colls = 1;
  r.jobs = g_new0(FabJobRec, 1);
  r.jobs[0] = (FabJobRec){.name = "j", .kind = "training", .end = 2 * FAB_US};
  r.n_jobs = 1;
  r.steps = g_new0(FabStepRec, 1);
  r.steps[0] = (FabStepRec){.job = 0, .end = FAB_US};
  r.n_steps = 1;
  r.spans = g_new0(FabSpanRec, 1);
  r.n_spans = 1;
  r.deadlock = g_malloc0(FAB_FIELD_NAME_LEN);
  r.n_deadlock = 1;
  fab_results_finalize(&r); /* what it derives (the step summaries) is freed too */
  cr_assert_not_null(r.step);
  fab_results_clear(&r);
  cr_assert_null(r.flows);
  cr_assert_eq(r.n_flows, 0);
  cr_assert_null(r.links);
  cr_assert_eq(r.n_links, 0);
  cr_assert_null(r.queues.port);
  cr_assert_null(r.queues.t);
  cr_assert_null(r.queues.depth);
  cr_assert_eq(r.queues.n_ports, 0);
  cr_assert_eq(r.queues.n_samples, 0);
  cr_assert_null(r.colls);
  cr_assert_eq(r.n_colls, 0);
  cr_assert_null(r.jobs);
  cr_assert_null(r.steps);
  cr_assert_null(r.spans);
  cr_assert_null(r.summaries);
  cr_assert_null(r.step);
  cr_assert_null(r.failure);
  cr_assert_null(r.deadlock);
  /* the borrowed strings are left alone (still readable, freed by their owner below); r itself is
  ** zeroed (results.h: "Free everything r owns ... and zero it") */
  cr_assert_str_eq(version, "0.1.0");
  cr_assert_str_eq(scenario, "two-hosts");
  cr_assert_str_eq(text, YAML);
  cr_assert_null(r.version);
  cr_assert_null(r.scenario);
  cr_assert_null(r.scenario_text);
  cr_assert_eq(r.seed, 0);
  fab_results_clear(&r); /* twice is harmless */
  fab_results_clear(NULL);
  g_free(version);
  g_free(scenario);
  g_free(text);
}

Test(h5out, per_priority_depths_and_flow_rates) {
  FabResults r = sample();
  uint32_t dp[4 * 2 * 3];
  uint64_t rate[4 * 2];
  for (uint32_t i = 0; i < 24; i++) dp[i] = i * 11;
  for (uint32_t i = 0; i < 8; i++) rate[i] = i * 25000000000ULL;
  r.queues.n_prio = 3;
  r.queues.depth_prio = dp;
  r.queues.flow_rate = rate;
  char *path = in_tmp("prio.h5");
  GError *e = NULL;
  cr_assert(fab_h5_write(&r, path, &e), "write failed: %s", e ? e->message : "?");
  hid_t f = open_file(path);
  hid_t d = H5Dopen2(f, "/queues/depth_prio", H5P_DEFAULT);
  cr_assert_geq(d, 0);
  hid_t sp = H5Dget_space(d);
  hsize_t dims[3];
  cr_assert_eq(H5Sget_simple_extent_ndims(sp), 3);
  H5Sget_simple_extent_dims(sp, dims, NULL);
  cr_assert(dims[0] == 4 && dims[1] == 2 && dims[2] == 3, "[samples][ports][priorities]");
  uint32_t back[24];
  cr_assert_geq(H5Dread(d, H5T_NATIVE_UINT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, back), 0);
  cr_assert_eq(memcmp(back, dp, sizeof dp), 0);
  H5Sclose(sp);
  H5Dclose(d);
  d = H5Dopen2(f, "/queues/flow_rate", H5P_DEFAULT);
  cr_assert_geq(d, 0);
  uint64_t rb[8];
  cr_assert_geq(H5Dread(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, rb), 0);
  cr_assert_eq(memcmp(rb, rate, sizeof rate), 0);
  H5Dclose(d);
  H5Fclose(f);
  g_free(path);
}

Test(h5out, no_priority_series_with_one_priority) {
  FabResults r = sample();
  char *path = in_tmp("noprio.h5");
  cr_assert(fab_h5_write(&r, path, NULL));
  hid_t f = open_file(path);
  cr_assert_eq(H5Lexists(f, "/queues/depth_prio", H5P_DEFAULT), 0);
  cr_assert_eq(H5Lexists(f, "/queues/flow_rate", H5P_DEFAULT), 0);
  H5Fclose(f);
  g_free(path);
}

/* ---- the collective, timeline, step and job tables ---------------------------- */

#define TAG31 "abcdefghijklmnopqrstuvwxyz01234" /* 31 bytes: the most a 32-byte column holds */

static FabCollRec dcolls[3];
static FabSpanRec dspans[4];
static FabStepRec dsteps[2];
static FabJobRec djobs[2];

/* sample() plus a training job's collectives, timeline and steps, and a
** benchmark job that did not finish. Finalized; the step summaries are
** freed at teardown. */
static FabResults dag_sample(void) {
  FabResults r = raw_sample();
  dcolls[0] = (FabCollRec){.op = "allreduce", .algorithm = "ring", .protocol = "simple", .tag = "dp",
                           .bytes = 1048576, .count = 262144, .dtype_bytes = 4, .ranks = 8, .root = -1,
                           .channels = 4, .job = 0, .step = 0, .start = FAB_US + 7, .end = 101 * FAB_US + 3};
  dcolls[1] = (FabCollRec){.op = "broadcast", .algorithm = "tree", .protocol = "ll128", .tag = NULL,
                           .bytes = 4096, .count = 2048, .dtype_bytes = 2, .ranks = 8, .root = 3,
                           .channels = 1, .job = 1, .step = 2, .start = 200 * FAB_US, .end = 0};
  dcolls[2] = (FabCollRec){.op = "reduce-scatter", .algorithm = "collnet_direct", .protocol = "ll", .tag = TAG31,
                           .bytes = 123456789, .count = 3858024, .dtype_bytes = 4, .ranks = 4, .root = -1,
                           .channels = 32, .job = 0, .step = 1, .start = 150 * FAB_US,
                           .end = 1000 * FAB_MS + 1};
  dspans[0] = (FabSpanRec){.rank = 0, .job = 0, .kind = 0, .phase = 1, .coll = -1, .step = 0, .start = 0,
                           .end = FAB_US, .node = UINT64_MAX};
  dspans[1] = (FabSpanRec){.rank = 7, .job = 0, .kind = 1, .phase = 0, .coll = 0, .step = 0, .start = FAB_US + 7,
                           .end = 101 * FAB_US + 3, .node = 42};
  dspans[2] = (FabSpanRec){.rank = 3, .job = 0, .kind = 2, .phase = 3, .coll = -1, .step = 5,
                           .start = 999 * FAB_S + 1, .end = 999 * FAB_S + 2};
  dspans[3] = (FabSpanRec){.rank = 255, .job = 1, .kind = 1, .phase = 2, .coll = 2, .step = 1,
                           .start = 150 * FAB_US, .end = 1000 * FAB_MS + 1};
  dsteps[0] = (FabStepRec){.job = 0, .step = 0, .start = 0, .end = 110 * FAB_US, .compute_s = 50e-6,
                           .comm_s = 100e-6, .exposed_comm_s = 60e-6, .overlap_s = 40e-6, .bubble_s = 0};
  dsteps[1] = (FabStepRec){.job = 0, .step = 1, .start = 110 * FAB_US, .end = 1000 * FAB_MS + 1,
                           .compute_s = 0.25, .comm_s = 0.5, .exposed_comm_s = 0.125, .overlap_s = 0.375,
                           .bubble_s = 1.0 / 3};
  djobs[0] = (FabJobRec){.name = "train-a-model-with-a-rather-long-name-of-63-bytes-exactly-xxxxx", .kind = "training",
                         .ranks = 8, .flows = 100, .completed = 100, .bytes = 1ULL << 40, .start = 0,
                         .end = 1000 * FAB_MS + 1};
  djobs[1] = (FabJobRec){.name = "bench", .kind = "nccl-tests", .ranks = 8, .flows = 7, .completed = 3,
                         .bytes = 4096, .start = 200 * FAB_US, .end = 0};
  cr_assert_eq(strlen(djobs[0].name), 63);
  r.colls = dcolls, r.n_colls = 3;
  r.spans = dspans, r.n_spans = 4;
  r.steps = dsteps, r.n_steps = 2;
  r.jobs = djobs, r.n_jobs = 2;
  fab_results_finalize(&r);
  for (size_t j = 0; j < r.n_jobs; j++) {
    FabStepSummary *s = &r.summaries[j];
    if (s->steps) {
      g_ptr_array_add(finalized, s->step_times_s);
      g_ptr_array_add(finalized, s->by_op);
      g_ptr_array_add(finalized, s->by_tag);
    }
  }
  g_ptr_array_add(finalized, r.summaries);
  return r;
}

static hid_t str_n(size_t n) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, n);
  H5Tset_strpad(t, H5T_STR_NULLTERM);
  return t;
}

/* The file types of the four tables: columns in the JSON order, packed. */
Test(h5out, dag_tables_layout) {
  FabResults r = dag_sample();
  char *path = in_tmp("dag.h5");
  GError *e = NULL;
  cr_assert(fab_h5_write(&r, path, &e), "write failed: %s", e ? e->message : "?");
  hid_t f = open_file(path);
  hid_t s16 = str_n(16), s32 = str_n(32), s64 = str_n(64);
  hsize_t n3[1] = {3}, n4[1] = {4}, n2[1] = {2};

  static const char *const cn[] = {"op", "bytes", "count", "dtype_bytes", "ranks", "root", "algorithm", "protocol",
                                   "channels", "tag", "job", "step", "start_s", "end_s", "time_s", "algbw_GBps",
                                   "busbw_GBps", "nic_bytes", "nics", "nic_GBps"};
  hid_t ct[] = {s16, H5T_STD_U64LE, H5T_STD_U64LE, H5T_STD_U32LE, H5T_STD_U32LE, H5T_STD_I32LE, s16, s16,
                H5T_STD_U32LE, s32, H5T_STD_U32LE, H5T_STD_U32LE, H5T_IEEE_F64LE, H5T_IEEE_F64LE, H5T_IEEE_F64LE,
                H5T_IEEE_F64LE, H5T_IEEE_F64LE, H5T_STD_U64LE, H5T_STD_U32LE, H5T_IEEE_F64LE};
  hid_t d = open_dset(f, "collectives", 1, n3);
  hid_t t = H5Dget_type(d);
  assert_members(t, 20, cn, ct, 16 + 8 + 8 + 4 + 4 + 4 + 16 + 16 + 4 + 32 + 4 + 4 + 5 * 8 + 8 + 4 + 8);
  H5Tclose(t);
  H5Dclose(d);
  /* the JSON order is the order of the collectives' JSON objects */
  char *js = NULL;
  {
    GString *g = g_string_new(NULL);
    fab_fields_json(g, &fab_coll_table, &dcolls[0]);
    js = g_string_free(g, FALSE);
  }
  const char *at = js;
  for (size_t i = 0; i < G_N_ELEMENTS(cn); i++) {
    char *k = g_strdup_printf("\"%s\": ", cn[i]);
    const char *p = strstr(at, k);
    cr_assert_not_null(p, "column %s is not next in the JSON %s", cn[i], js);
    at = p;
    g_free(k);
  }
  g_free(js);

  static const char *const sn[] = {"rank", "job", "kind", "phase", "coll", "step", "start_s", "end_s", "node"};
  hid_t st[] = {H5T_STD_U32LE, H5T_STD_U32LE, H5T_STD_U8LE,   H5T_STD_U8LE, H5T_STD_I32LE,
                H5T_STD_U32LE, H5T_IEEE_F64LE, H5T_IEEE_F64LE, H5T_STD_U64LE};
  d = open_dset(f, "timeline", 1, n4);
  t = H5Dget_type(d);
  assert_members(t, 9, sn, st, 4 + 4 + 1 + 1 + 4 + 4 + 8 + 8 + 8);
  H5Tclose(t);
  H5Dclose(d);

  static const char *const tn[] = {"job", "job_name", "step", "start_s", "end_s", "step_time_s", "compute_s",
                                   "comm_s", "exposed_comm_s", "overlap_s", "bubble_s"};
  hid_t tt[] = {H5T_STD_U32LE, s64, H5T_STD_U32LE, H5T_IEEE_F64LE, H5T_IEEE_F64LE, H5T_IEEE_F64LE,
                H5T_IEEE_F64LE, H5T_IEEE_F64LE, H5T_IEEE_F64LE, H5T_IEEE_F64LE, H5T_IEEE_F64LE};
  d = open_dset(f, "steps", 1, n2);
  t = H5Dget_type(d);
  assert_members(t, 11, tn, tt, 4 + 64 + 4 + 8 * 8);
  H5Tclose(t);
  H5Dclose(d);

  static const char *const jn[] = {"name", "kind", "ranks", "flows", "completed", "bytes", "start_s", "end_s",
                                   "time_s"};
  hid_t jt[] = {s64, s16, H5T_STD_U32LE, H5T_STD_U32LE, H5T_STD_U32LE, H5T_STD_U64LE, H5T_IEEE_F64LE,
                H5T_IEEE_F64LE, H5T_IEEE_F64LE};
  d = open_dset(f, "jobs", 1, n2);
  t = H5Dget_type(d);
  assert_members(t, 9, jn, jt, 64 + 16 + 4 * 3 + 8 + 3 * 8);
  H5Tclose(t);
  H5Dclose(d);

  /* with the HDF5 API, by name: NaN where the JSON has null */
  typedef struct {
    double end_s, time_s, busbw_GBps;
    char tag[32];
  } CRow;
  hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(CRow));
  H5Tinsert(mt, "end_s", offsetof(CRow, end_s), H5T_NATIVE_DOUBLE);
  H5Tinsert(mt, "time_s", offsetof(CRow, time_s), H5T_NATIVE_DOUBLE);
  H5Tinsert(mt, "busbw_GBps", offsetof(CRow, busbw_GBps), H5T_NATIVE_DOUBLE);
  H5Tinsert(mt, "tag", offsetof(CRow, tag), s32);
  CRow cr[3];
  d = H5Dopen2(f, "collectives", H5P_DEFAULT);
  cr_assert_geq(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, cr), 0);
  H5Dclose(d);
  H5Tclose(mt);
  cr_assert_eq(cr[0].time_s, 99999996 / 1e12);
  cr_assert_eq(cr[0].end_s, 101000003 / 1e12);
  /* 1 MiB on 8 ranks in 99.999996 us; busbw = algbw x 2*7/8 */
  cr_assert_float_eq(cr[0].busbw_GBps, 1048576 / 99.999996e-6 / 1e9 * 1.75, 1e-9);
  cr_assert(isnan(cr[1].end_s) && isnan(cr[1].time_s) && isnan(cr[1].busbw_GBps), "incomplete: NaN");
  cr_assert_str_eq(cr[0].tag, "dp");
  cr_assert_str_eq(cr[1].tag, "", "no tag: an empty string");
  cr_assert_str_eq(cr[2].tag, TAG31);

  H5Tclose(s16);
  H5Tclose(s32);
  H5Tclose(s64);
  H5Fclose(f);
  g_free(path);
}

static void *read_table(hid_t f, const char *name, const FabFieldTable *t, GStringChunk *strs, size_t *n) {
  FabH5Layout l;
  cr_assert(fab_h5_layout(&l, t), "layout of %s", t->name);
  gboolean bad = TRUE;
  void *recs = fab_h5_read_records(f, name, &l, strs, n, &bad);
  cr_assert_not(bad, "/%s cannot be read with its own layout", name);
  fab_h5_layout_free(&l);
  return recs;
}

static void str_or_null_eq(const char *got, const char *want, const char *what) {
  if (!want) cr_assert_null(got, "%s: %s, want NULL", what, got);
  else {
    cr_assert_not_null(got, "%s: NULL, want %s", what, want);
    cr_assert_str_eq(got, want, "%s", what);
  }
}

/* What the writer wrote, the h5table reader (the one plot uses) reads back
** into the same records: strings, numbers, and times (ps, through seconds). */
Test(h5out, tables_read_back_with_the_h5table_reader) {
  FabResults r = dag_sample();
  char *path = in_tmp("dag.h5");
  GError *e = NULL;
  cr_assert(fab_h5_write(&r, path, &e), "write failed: %s", e ? e->message : "?");
  ssize_t ids = open_ids();
  hid_t f = open_file(path);
  GStringChunk *strs = g_string_chunk_new(256);
  size_t n = 99;

  FabCollRec *c = read_table(f, "collectives", &fab_coll_table, strs, &n);
  cr_assert_eq(n, 3);
  for (size_t i = 0; i < n; i++) {
    const FabCollRec *w = &r.colls[i], *g = &c[i];
    str_or_null_eq(g->op, w->op, "op");
    str_or_null_eq(g->algorithm, w->algorithm, "algorithm");
    str_or_null_eq(g->protocol, w->protocol, "protocol");
    str_or_null_eq(g->tag, w->tag, "tag"); /* NULL stays NULL: the column is nullable */
    cr_assert_eq(g->bytes, w->bytes);
    cr_assert_eq(g->count, w->count);
    cr_assert_eq(g->dtype_bytes, w->dtype_bytes);
    cr_assert_eq(g->ranks, w->ranks);
    cr_assert_eq(g->root, w->root);
    cr_assert_eq(g->channels, w->channels);
    cr_assert_eq(g->job, w->job);
    cr_assert_eq(g->step, w->step);
    cr_assert_eq(g->start, w->start, "collective %zu start %" G_GUINT64_FORMAT " ps, want %" G_GUINT64_FORMAT, i,
                 g->start, w->start);
    cr_assert_eq(g->end, w->end, "collective %zu end %" G_GUINT64_FORMAT " ps, want %" G_GUINT64_FORMAT, i, g->end,
                 w->end);
    if (w->end) {
      cr_assert_eq(g->time_s, w->time_s);
      cr_assert_eq(g->algbw_GBps, w->algbw_GBps);
      cr_assert_eq(g->busbw_GBps, w->busbw_GBps);
    } else {
      cr_assert(isnan(g->time_s) && isnan(g->algbw_GBps) && isnan(g->busbw_GBps));
    }
  }
  cr_assert_eq(c[1].root, 3);
  cr_assert_str_eq(c[2].tag, TAG31);
  g_free(c);

  FabSpanRec *s = read_table(f, "timeline", &fab_span_table, strs, &n);
  cr_assert_eq(n, 4);
  for (size_t i = 0; i < n; i++) {
    const FabSpanRec *w = &r.spans[i], *g = &s[i];
    cr_assert_eq(g->rank, w->rank);
    cr_assert_eq(g->job, w->job);
    cr_assert_eq(g->kind, w->kind);
    cr_assert_eq(g->phase, w->phase);
    cr_assert_eq(g->coll, w->coll);
    cr_assert_eq(g->step, w->step);
    cr_assert_eq(g->start, w->start, "span %zu start %" G_GUINT64_FORMAT, i, g->start);
    cr_assert_eq(g->end, w->end, "span %zu end %" G_GUINT64_FORMAT, i, g->end);
    cr_assert_eq(g->node, w->node, "span %zu node %" G_GUINT64_FORMAT, i, g->node);
  }
  g_free(s);

  FabStepRec *st = read_table(f, "steps", &fab_step_table, strs, &n);
  cr_assert_eq(n, 2);
  for (size_t i = 0; i < n; i++) {
    const FabStepRec *w = &r.steps[i], *g = &st[i];
    str_or_null_eq(g->job_name, djobs[0].name, "job_name");
    cr_assert_eq(g->job, w->job);
    cr_assert_eq(g->step, w->step);
    cr_assert_eq(g->start, w->start);
    cr_assert_eq(g->end, w->end);
    cr_assert_eq(g->step_time_s, w->step_time_s);
    cr_assert_eq(g->compute_s, w->compute_s);
    cr_assert_eq(g->comm_s, w->comm_s);
    cr_assert_eq(g->exposed_comm_s, w->exposed_comm_s);
    cr_assert_eq(g->overlap_s, w->overlap_s);
    cr_assert_eq(g->bubble_s, w->bubble_s);
  }
  g_free(st);

  FabJobRec *j = read_table(f, "jobs", &fab_job_table, strs, &n);
  cr_assert_eq(n, 2);
  for (size_t i = 0; i < n; i++) {
    const FabJobRec *w = &r.jobs[i], *g = &j[i];
    str_or_null_eq(g->name, w->name, "name");
    str_or_null_eq(g->kind, w->kind, "kind");
    cr_assert_eq(g->ranks, w->ranks);
    cr_assert_eq(g->flows, w->flows);
    cr_assert_eq(g->completed, w->completed);
    cr_assert_eq(g->bytes, w->bytes);
    cr_assert_eq(g->start, w->start);
    cr_assert_eq(g->end, w->end);
    if (w->end) cr_assert_eq(g->time_s, w->time_s);
    else cr_assert(isnan(g->time_s));
    cr_assert_null(g->step, "not in the table");
  }
  g_free(j);

  /* flows and links too (names in place) */
  FabFlowRec *fl = read_table(f, "flows", &fab_flow_table, strs, &n);
  cr_assert_eq(n, 2);
  for (size_t i = 0; i < n; i++) {
    cr_assert_eq(fl[i].id, flows[i].id);
    cr_assert_eq(fl[i].src, flows[i].src);
    cr_assert_eq(fl[i].dst, flows[i].dst);
    cr_assert_eq(fl[i].bytes, flows[i].bytes);
    cr_assert_eq(fl[i].start, flows[i].start);
    cr_assert_eq(fl[i].end, flows[i].end);
    cr_assert_eq(fl[i].retransmits, flows[i].retransmits);
  }
  cr_assert_eq(fl[0].fct_s, flows[0].fct_s);
  cr_assert(isnan(fl[1].fct_s));
  g_free(fl);
  FabLinkRec *lk = read_table(f, "links", &fab_link_table, strs, &n);
  cr_assert_eq(n, 3);
  for (size_t i = 0; i < n; i++) {
    cr_assert_str_eq(lk[i].from, links[i].from);
    cr_assert_str_eq(lk[i].to, links[i].to);
    cr_assert_eq(lk[i].bytes, links[i].bytes);
    cr_assert_eq(lk[i].paused, links[i].paused);
    cr_assert_str_eq(lk[i].layer, links[i].layer);
  }
  g_free(lk);

  /* an absent table: nothing, and not bad */
  FabH5Layout l;
  cr_assert(fab_h5_layout(&l, &fab_coll_table));
  gboolean bad = TRUE;
  n = 99;
  cr_assert_null(fab_h5_read_records(f, "no_such_table", &l, strs, &n, &bad));
  cr_assert_eq(n, 0);
  cr_assert_not(bad);
  fab_h5_layout_free(&l);

  g_string_chunk_free(strs);
  cr_assert_eq(H5Fclose(f), 0);
  cr_assert_eq(open_ids(), ids, "HDF5 objects left open");
  g_free(path);
}

/* Empty tables read back as no records. */
Test(h5out, empty_dag_tables_read_back_empty) {
  FabResults r = empty();
  char *path = in_tmp("e.h5");
  cr_assert(fab_h5_write(&r, path, NULL));
  hid_t f = open_file(path);
  hsize_t z1[1] = {0};
  static const char *const names[] = {"collectives", "timeline", "steps", "jobs"};
  const FabFieldTable *tables[] = {&fab_coll_table, &fab_span_table, &fab_step_table, &fab_job_table};
  GStringChunk *strs = g_string_chunk_new(64);
  for (int i = 0; i < 4; i++) {
    H5Dclose(open_dset(f, names[i], 1, z1));
    size_t n = 99;
    cr_assert_null(read_table(f, names[i], tables[i], strs, &n));
    cr_assert_eq(n, 0, "%s", names[i]);
  }
  g_string_chunk_free(strs);
  H5Fclose(f);
  g_free(path);
}

/* Only a regular file (or nothing) is ever replaced: a symbolic link, a FIFO
** or a device at the path is refused before anything is written, and is
** still there, unchanged, afterwards. */
Test(h5out, never_replaces_a_link_fifo_or_device) {
  char *target = in_tmp("target");
  cr_assert(g_file_set_contents(target, "keep", -1, NULL));
  char *link = in_tmp("link.h5"), *fifo = in_tmp("fifo.h5");
  cr_assert_eq(symlink(target, link), 0);
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  const char *paths[] = {link, fifo, "/dev/null"};
  const char *what[] = {"a symbolic link", "a FIFO", "a device"};
  FabResults r = sample();
  for (int i = 0; i < 3; i++) {
    GError *e = NULL;
    cr_assert_not(fab_h5_check_target(paths[i], &e), "%s accepted", paths[i]);
    cr_assert_not_null(strstr(e->message, what[i]), "%s: %s", paths[i], e->message);
    g_error_free(e);
    cr_assert_not(fab_h5_write(&r, paths[i], NULL), "%s written", paths[i]);
  }
  struct stat st;
  cr_assert_eq(lstat(link, &st), 0);
  cr_assert(S_ISLNK(st.st_mode));
  cr_assert_eq(lstat(fifo, &st), 0);
  cr_assert(S_ISFIFO(st.st_mode));
  cr_assert_eq(stat("/dev/null", &st), 0);
  cr_assert(S_ISCHR(st.st_mode));
  char *text = NULL;
  cr_assert(g_file_get_contents(target, &text, NULL, NULL));
  cr_assert_str_eq(text, "keep");
  g_free(text);
  char *ls = listing(tmpdir);
  cr_assert_str_eq(ls, "fifo.h5,link.h5,target", "leftovers: %s", ls);
  g_free(ls);
  g_free(target);
  g_free(link);
  g_free(fifo);
}

/* The layer of every link comes from the topology (which elements its ends
** belong to), and reaches /links: two DGX H100 nodes cut to 2 GPUs and 1 NIC
** each, on 2 leaves and 1 spine. By hand, 24 link directions: each GPU's PCIe
** link and its PCIe element's port back (8, pcie), each GPU's NVLink and its
** NVSwitch's port back (8, nvlink), each leaf's port down to a NIC and each
** NIC's port up (4, nic), each leaf's uplink and the spine's two downlinks
** (4, fabric). */
/* r written to a file `name` in the test's folder (*path, g_free it), opened. */
static hid_t written(const FabResults *r, const char *name, char **path) {
  *path = in_tmp(name);
  GError *e = NULL;
  cr_assert(fab_h5_write(r, *path, &e), "%s", e ? e->message : "?");
  hid_t f = H5Fopen(*path, H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert_geq(f, 0);
  return f;
}

Test(h5out, links_carry_their_layer_from_the_topology) {
  const char *yaml = "cluster: {node: dgx-h100, nodes: 2, gpus_per_node: 2, nics_per_node: 1}\n"
                     "fabric:\n"
                     "  topology: {kind: leaf-spine, hosts_per_leaf: 1, leaves: 2, spines: 1}\n"
                     "  link: {bandwidth: 100Gbps, latency: 500ns}\n"
                     "workload:\n"
                     "  kind: flows\n"
                     "  flows: [{src: 0, dst: 2, size: 64KiB}, {src: 0, dst: 1, size: 64KiB}]\n";
  FabScenario *sc = testscen_load(yaml, NULL);
  FabResults res;
  testscen_run(sc, &res);
  static const struct { const char *from, *layer; } want[] = {
    {"gpu0:p0", "pcie"},     {"gpu0:p1", "nvlink"},   {"gpu3:p0", "pcie"},   {"gpu3:p1", "nvlink"},
    {"leaf0:p0", "nic"},     {"leaf0:p1", "fabric"},  {"leaf1:p1", "fabric"}, {"spine0:p0", "fabric"},
    {"spine0:p1", "fabric"}, {"pcie0.0:p0", "pcie"},  {"pcie0.0:p1", "pcie"}, {"pcie0.0:p2", "nic"},
    {"pcie1.0:p2", "nic"},   {"nvs0:p0", "nvlink"},   {"nvs1:p1", "nvlink"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(want); k++) {
    size_t i = 0;
    while (i < res.n_links && strcmp(res.links[i].from, want[k].from)) i++;
    cr_assert_lt(i, res.n_links, "no link from %s", want[k].from);
    cr_assert_str_eq(res.links[i].layer, want[k].layer, "%s -> %s", res.links[i].from, res.links[i].to);
  }
  int per[FAB_LAYER_N] = {0};
  for (size_t i = 0; i < res.n_links; i++)
    for (int l = 0; l < FAB_LAYER_N; l++) per[l] += !strcmp(res.links[i].layer, fab_layer_names[l]);
  cr_assert_eq(res.n_links, 24);
  cr_assert_eq(per[FAB_LAYER_FABRIC], 4);
  cr_assert_eq(per[FAB_LAYER_NIC], 4);
  cr_assert_eq(per[FAB_LAYER_PCIE], 8);
  cr_assert_eq(per[FAB_LAYER_NVLINK], 8);
  /* in the file, read back with the reader plot uses */
  char *path;
  hid_t f = written(&res, "layers.h5", &path);
  GStringChunk *strs = g_string_chunk_new(64);
  size_t n = 0;
  FabLinkRec *lk = read_table(f, "links", &fab_link_table, strs, &n);
  cr_assert_eq(n, res.n_links);
  for (size_t i = 0; i < n; i++) cr_assert_str_eq(lk[i].layer, res.links[i].layer, "%s", lk[i].from);
  g_free(lk);
  g_string_chunk_free(strs);
  H5Fclose(f);
  g_free(path);
  testscen_done(sc, &res);
}

/* Host runs: every link joins a switch to a host's NIC or to another switch. */
Test(h5out, host_links_are_nic_or_fabric) {
  FabScenario *sc = testscen_load("fabric:\n  topology: {kind: leaf-spine, hosts_per_leaf: 2, leaves: 2, spines: 1}\n"
                                  "  link: {bandwidth: 100Gbps, latency: 1us}\n"
                                  "workload: {kind: flows, flows: [{src: 0, dst: 3, size: 4KiB}]}\n", NULL);
  FabResults res;
  testscen_run(sc, &res);
  size_t nic = 0, fabric = 0;
  for (size_t i = 0; i < res.n_links; i++) {
    gboolean host = g_str_has_prefix(res.links[i].from, "host") || g_str_has_prefix(res.links[i].to, "host");
    cr_assert_str_eq(res.links[i].layer, host ? "nic" : "fabric", "%s -> %s", res.links[i].from, res.links[i].to);
    nic += host, fabric += !host;
  }
  cr_assert_eq(nic, 8); /* 4 hosts, both ways */
  cr_assert_eq(fabric, 4); /* 2 leaf uplinks, 2 spine downlinks */
  testscen_done(sc, &res);
}

/* A run with link changes and selective receivers: /failures holds its
** changes in time order as the results do, /reorder its ten bins, each
** data packet counted once (a 1 MiB permutation on 16 hosts: 16 x 256). */
Test(h5out, failures_and_reorder_tables) {
  FabScenario *sc = testscen_load_file("tests/scenarios/link-down.yaml", NULL);
  FabResults res;
  testscen_run(sc, &res);
  char *path;
  hid_t f = written(&res, "failures.h5", &path);
  GStringChunk *strs = g_string_chunk_new(64);
  size_t n = 0;
  FabFailureRec *fr = read_table(f, "failures", &fab_failure_table, strs, &n);
  cr_assert_eq(n, 3);
  static const char *const change[] = {"rate", "down", "up"};
  for (size_t i = 0; i < n; i++) {
    cr_assert_str_eq(fr[i].link, res.failures[i].link);
    cr_assert_str_eq(fr[i].change, change[i]);
    cr_assert_eq(fr[i].at, res.failures[i].at);
    cr_assert_eq(fr[i].lost, res.failures[i].lost);
    cr_assert_eq(fr[i].rerouted, res.failures[i].rerouted);
  }
  cr_assert_gt(fr[1].lost, 0);
  cr_assert_eq(fr[1].rerouted, 28);
  g_free(fr);
  FabReorderBin *rb = read_table(f, "reorder", &fab_reorder_table, strs, &n);
  cr_assert_eq(n, FAB_REORDER_BINS);
  uint64_t total = 0;
  for (size_t i = 0; i < n; i++) {
    cr_assert_str_eq(rb[i].ahead, fab_reorder_bin_names[i]);
    cr_assert_eq(rb[i].packets, res.reorder[i].packets);
    total += rb[i].packets;
  }
  cr_assert_eq(total, 16 * 256, "each data packet once");
  g_free(rb);
  g_string_chunk_free(strs);
  H5Fclose(f);
  g_free(path);
  testscen_done(sc, &res);
}

/* SHARP's trees (fabric.switch.sharp on): a /sharp_trees table, read back
** as written; off: no such dataset. */
Test(h5out, sharp_trees_when_sharp_is_on) {
  FabResults r = sample();
  char *off = in_tmp("off.h5"), *on = in_tmp("on.h5");
  GError *e = NULL;
  cr_assert(fab_h5_write(&r, off, &e), "write failed: %s", e ? e->message : "?");
  hid_t f = open_file(off);
  cr_assert_eq(H5Lexists(f, "sharp_trees", H5P_DEFAULT), 0, "no SHARP, no table");
  H5Fclose(f);
  FabSharpTreeRec trees[2] = {
    {.id = 0, .job = 0, .root = "spine0", .nodes = 3, .members = 4, .reductions = 64, .llt_reductions = 1,
     .bytes_in = 67108864, .bytes_out = 67108864, .peak_buffer_bytes = 4096, .active = 340339120, .lock_waits = 0},
    {.id = 1, .job = 1, .root = "spine1", .nodes = 3, .members = 4, .reductions = 64, .bytes_in = 67108864,
     .bytes_out = 67108864, .peak_buffer_bytes = 8192, .active = 340339120, .lock_waits = 1, .lock_wait = 340339120},
  };
  FabSharpRec sr = {.model = "quantum", .lock = "operation", .fallbacks = 0, .n_trees = 2, .trees = trees};
  r.sharp = &sr;
  cr_assert(fab_h5_write(&r, on, &e), "write failed: %s", e ? e->message : "?");
  r.sharp = NULL;
  f = open_file(on);
  GStringChunk *strs = g_string_chunk_new(256);
  size_t n = 0;
  FabSharpTreeRec *got = read_table(f, "sharp_trees", &fab_sharp_tree_table, strs, &n);
  cr_assert_eq(n, 2);
  for (size_t i = 0; i < n; i++) {
    cr_assert_str_eq(got[i].root, trees[i].root);
    cr_assert_eq(got[i].job, trees[i].job);
    cr_assert_eq(got[i].llt_reductions, trees[i].llt_reductions);
    cr_assert_eq(got[i].bytes_in, trees[i].bytes_in);
    cr_assert_eq(got[i].peak_buffer_bytes, trees[i].peak_buffer_bytes);
    cr_assert_eq(got[i].active, trees[i].active);
    cr_assert_eq(got[i].lock_waits, trees[i].lock_waits);
    cr_assert_eq(got[i].lock_wait, trees[i].lock_wait);
  }
  g_free(got);
  g_string_chunk_free(strs);
  H5Fclose(f);
  g_free(off);
  g_free(on);
}

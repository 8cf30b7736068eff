/* Chakra execution traces (mlcommons Chakra) into a FabTrace. See trace.h.
**
** A file holds one rank's trace: a GlobalMetadata message, then Node
** messages, each preceded by its length (a base-128 varint). Node types:
** COMP_NODE (4) becomes compute (its duration_micros, or its `num_ops`
** FLOPs when no duration is recorded; a node with `is_cpu_op` set runs on
** the host and takes no GPU time; so does a communication node with it set:
** the host op that launched the GPU kernel node), COMM_SEND_NODE (5) and COMM_RECV_NODE
** (6) a send to `comm_dst` / a receive from `comm_src` of `comm_size` bytes
** (paired by `comm_tag`), COMM_COLL_NODE (7) a collective of `comm_type`
** (CollectiveCommType) and `comm_size` bytes on process group `pg_name`
** (workload.groups names its ranks; none: every rank). Every other node
** (metadata, memory, ...) is kept as a step of no duration, so that what
** depends on it still waits for what it waits for. data_deps are the
** dependencies; ctrl_deps are too when the user asks (ctrl_deps: wait):
** Chakra's own converters and generator order nodes by data_deps, and its
** PyTorch converter writes the op's caller in ctrl_deps (which encloses it
** in time, may be absent, and in older traces even names the op itself or
** its kernel), as Chakra's et_feeder reads data_deps only. */
#include "trace.h"
#include <string.h>
#include "sim/config.h"

#if FAB_HAVE_PROTOBUF_C
#include "chakra_et.pb-c.h"

enum { ET_COMP = 4, ET_SEND = 5, ET_RECV = 6, ET_COLL = 7 };

/* CollectiveCommType -> FabCollOp (-1: not modelled). */
static int coll_of(int64_t type) {
  switch (type) {
  case 0: return FAB_COLL_ALLREDUCE;
  case 1: return FAB_COLL_REDUCE;
  case 2: return FAB_COLL_ALLGATHER;
  case 5: return FAB_COLL_BROADCAST;
  case 6: return FAB_COLL_ALL_TO_ALL;
  case 7: case 8: return FAB_COLL_REDUCE_SCATTER; /* REDUCE_SCATTER, REDUCE_SCATTER_BLOCK */
  case 9: return FAB_COLL_ALLREDUCE;               /* BARRIER: an allreduce of one element (torch.distributed) */
  default: return -1;                              /* GATHER, SCATTER */
  }
}

static const FabsimChakra__EtAttr *attr(const FabsimChakra__EtNode *n, const char *name) {
  for (size_t k = 0; k < n->n_attr; k++)
    if (n->attr[k]->name && g_str_equal(n->attr[k]->name, name)) return n->attr[k];
  return NULL;
}

/* An integer attribute of any integer (or bool) type. */
static gboolean attr_int(const FabsimChakra__EtAttr *a, int64_t *v) {
  if (!a) return FALSE;
  switch (a->value_case) {
  case FABSIM_CHAKRA__ET_ATTR__VALUE_INT32_VAL: *v = a->int32_val; return TRUE;
  case FABSIM_CHAKRA__ET_ATTR__VALUE_INT64_VAL: *v = a->int64_val; return TRUE;
  case FABSIM_CHAKRA__ET_ATTR__VALUE_UINT32_VAL: *v = a->uint32_val; return TRUE;
  case FABSIM_CHAKRA__ET_ATTR__VALUE_UINT64_VAL: *v = (int64_t)MIN(a->uint64_val, (uint64_t)INT64_MAX); return TRUE;
  case FABSIM_CHAKRA__ET_ATTR__VALUE_SINT32_VAL: *v = a->sint32_val; return TRUE;
  case FABSIM_CHAKRA__ET_ATTR__VALUE_SINT64_VAL: *v = a->sint64_val; return TRUE;
  case FABSIM_CHAKRA__ET_ATTR__VALUE_FIXED32_VAL: *v = a->fixed32_val; return TRUE;
  case FABSIM_CHAKRA__ET_ATTR__VALUE_FIXED64_VAL: *v = (int64_t)MIN(a->fixed64_val, (uint64_t)INT64_MAX); return TRUE;
  case FABSIM_CHAKRA__ET_ATTR__VALUE_SFIXED32_VAL: *v = a->sfixed32_val; return TRUE;
  case FABSIM_CHAKRA__ET_ATTR__VALUE_SFIXED64_VAL: *v = a->sfixed64_val; return TRUE;
  case FABSIM_CHAKRA__ET_ATTR__VALUE_BOOL_VAL: *v = a->bool_val; return TRUE;
  default: return FALSE;
  }
}

static gboolean attr_num(const FabsimChakra__EtAttr *a, double *v) {
  int64_t i;
  if (a && a->value_case == FABSIM_CHAKRA__ET_ATTR__VALUE_DOUBLE_VAL) return (*v = a->double_val), TRUE;
  if (a && a->value_case == FABSIM_CHAKRA__ET_ATTR__VALUE_FLOAT_VAL) return (*v = a->float_val), TRUE;
  if (!attr_int(a, &i)) return FALSE;
  *v = (double)i;
  return TRUE;
}

/* The varint at *p (< end): FALSE when truncated or longer than 10 bytes. */
static gboolean varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  *v = 0;
  for (int shift = 0; shift < 70 && *p < end; shift += 7) {
    uint8_t b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return TRUE;
  }
  return FALSE;
}

#define CFAIL(...) (g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_VALUE, __VA_ARGS__), FALSE)

static gboolean node_size(const FabsimChakra__EtNode *n, const char *where, uint64_t missing, uint64_t *bytes,
                          GError **err) {
  int64_t v;
  const FabsimChakra__EtAttr *a = attr(n, "comm_size");
  if (!a) {
    if (!missing)
      return CFAIL("%s: node %" G_GUINT64_FORMAT " ('%s') has no comm_size (set workload.missing_size to give such "
                   "transfers a size)", where, n->id, n->name);
    *bytes = missing;
    return TRUE;
  }
  if (!attr_int(a, &v) || v < 1 || (uint64_t)v > FAB_BYTES_MAX)
    return CFAIL("%s: node %" G_GUINT64_FORMAT ": comm_size is not a size from 1 B to 1 PiB", where, n->id);
  *bytes = (uint64_t)v;
  return TRUE;
}

static gboolean peer_of(const FabTrace *t, const FabsimChakra__EtNode *n, const char *key, const char *where,
                        uint32_t *peer, GError **err) {
  int64_t v;
  if (!attr_int(attr(n, key), &v))
    return CFAIL("%s: node %" G_GUINT64_FORMAT " ('%s') has no %s", where, n->id, n->name, key);
  if (v < 0 || v >= t->nranks)
    return CFAIL("%s: node %" G_GUINT64_FORMAT ": %s %" G_GINT64_FORMAT " is outside the job's %u ranks", where, n->id,
                 key, v, t->nranks);
  *peer = (uint32_t)v;
  return TRUE;
}

/* One Node message into the trace. */
static gboolean add_node(FabTrace *t, uint32_t rank, const FabsimChakra__EtNode *n, const char *where,
                         uint64_t missing, bool ctrl_wait, uint32_t *ndata, GError **err) {
  FabTrNode nd = {.id = n->id, .rank = rank, .kind = FAB_TR_COMPUTE, .has_dur = true};
  int64_t v = 0;
  double f = 0;
  bool cpu = attr_int(attr(n, "is_cpu_op"), &v) && v;
  if (cpu && n->type != ET_COMP) {
    /* a host-side communication op (c10d::allreduce_ as converters before
    ** schema 1.0.2-chakra write it, with no comm_type or size): the launch,
    ** not the transfer, which its GPU kernel node carries; a host op, as
    ** ASTRA-sim's workload layer runs any node with is_cpu_op set */
  } else if (n->type == ET_COMP) {
    if (!cpu && !n->duration_micros && attr_num(attr(n, "num_ops"), &f) && f > 0) nd.has_dur = false, nd.flops = f;
    else if (!cpu) nd.dur = MIN(n->duration_micros, 1000000000000ull) * 1000000ull; /* us -> ps */
  } else if (n->type == ET_SEND || n->type == ET_RECV) {
    nd.kind = n->type == ET_SEND ? FAB_TR_SEND : FAB_TR_RECV;
    if (!peer_of(t, n, n->type == ET_SEND ? "comm_dst" : "comm_src", where, &nd.group, err) ||
        !node_size(n, where, missing, &nd.bytes, err))
      return FALSE;
    if (attr_int(attr(n, "comm_tag"), &v)) nd.tag = (uint64_t)v;
  } else if (n->type == ET_COLL) {
    nd.kind = FAB_TR_COLL;
    if (!attr_int(attr(n, "comm_type"), &v))
      return CFAIL("%s: node %" G_GUINT64_FORMAT " ('%s') is a collective with no comm_type", where, n->id, n->name);
    int op = coll_of(v);
    if (op < 0)
      return CFAIL("%s: node %" G_GUINT64_FORMAT ": comm_type %" G_GINT64_FORMAT " (gather or scatter) is not a "
                   "collective fabsim models", where, n->id, v);
    nd.op = (uint8_t)op;
    if (v == 9 && !attr(n, "comm_size")) nd.bytes = 4;
    else if (!node_size(n, where, missing, &nd.bytes, err)) return FALSE;
    if (attr_int(attr(n, "root"), &v)) nd.root = (uint32_t)MIN((uint64_t)MAX(v, 0), UINT32_MAX);
    const FabsimChakra__EtAttr *pg = attr(n, "pg_name");
    nd.group = FAB_TR_WORLD;
    if (pg && pg->value_case == FABSIM_CHAKRA__ET_ATTR__VALUE_STRING_VAL && pg->string_val[0]) {
      nd.group = fab_trace_group_find(t, pg->string_val);
      if (nd.group == FAB_TR_WORLD)
        return CFAIL("%s: node %" G_GUINT64_FORMAT ": process group '%s' is not in workload.groups", where, n->id,
                     pg->string_val);
    }
  }
  if (n->name && n->name[0]) nd.name = g_string_chunk_insert_const(t->strs, n->name);
  char *w = g_strdup_printf("%s: node %" G_GUINT64_FORMAT, where, n->id);
  nd.where = g_string_chunk_insert(t->strs, w);
  g_free(w);
  uint64_t *deps = g_new(uint64_t, n->n_ctrl_deps + n->n_data_deps + 1);
  if (n->n_data_deps) memcpy(deps, n->data_deps, n->n_data_deps * sizeof *deps); /* (NULL when none) */
  uint32_t nd_ = (uint32_t)n->n_data_deps;
  *ndata = nd_;
  for (size_t k = 0; k < n->n_ctrl_deps; k++) { /* the same node as both kinds counts once */
    bool dup = false;
    for (size_t m = 0; m < n->n_data_deps && !dup; m++) dup = n->data_deps[m] == n->ctrl_deps[k];
    if (!dup && ctrl_wait) deps[nd_++] = n->ctrl_deps[k];
    else if (!dup) t->ctrl_ignored++;
  }
  fab_trace_add(t, &nd, deps, nd_);
  g_free(deps);
  return TRUE;
}

/* A ctrl_dep that names a node not in the rank's file is dropped: in what
** Chakra's PyTorch converter writes, ctrl_deps is the op's caller (its
** parent in the host trace, which encloses it in time and is often not
** kept, such as the thread's root), and the order to run in is in
** data_deps; a missing data_dep stays an error (fab_trace_build). Nodes
** first.. of t are the rank's; ndata[i] their data deps. */
static void drop_absent_callers(FabTrace *t, guint first, const GArray *ndata) {
  GHashTable *ids = g_hash_table_new(g_int64_hash, g_int64_equal);
  for (guint i = first; i < t->nodes->len; i++) g_hash_table_add(ids, &g_array_index(t->nodes, FabTrNode, i).id);
  for (guint i = first; i < t->nodes->len; i++) {
    FabTrNode *n = &g_array_index(t->nodes, FabTrNode, i);
    uint32_t keep = g_array_index(ndata, uint32_t, i - first);
    if (keep == n->ndeps) continue; /* no ctrl_deps (and perhaps no dependencies at all: deps may be empty) */
    uint64_t *dep = &g_array_index(t->deps, uint64_t, n->dep0);
    for (uint32_t k = keep; k < n->ndeps; k++) {
      if (g_hash_table_contains(ids, &dep[k])) dep[keep++] = dep[k];
      else t->ctrl_ignored++;
    }
    n->ndeps = keep;
  }
  g_hash_table_destroy(ids);
}

static gboolean read_rank(FabTrace *t, uint32_t rank, const char *path, uint64_t missing, bool ctrl_wait,
                          GError **err) {
  gchar *buf = NULL;
  size_t len = 0;
  const char *why = NULL;
  if (!fab_cfg_read_file(path, FAB_TRACE_FILE_MAX, &buf, &len, &why)) {
    g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_IO, "%s: cannot read rank %u's trace: %s", path, rank, why);
    return FALSE;
  }
  const uint8_t *p = (const uint8_t *)buf, *end = p + len;
  gboolean ok = TRUE;
  guint first = t->nodes->len;
  GArray *ndata = g_array_new(FALSE, FALSE, sizeof(uint32_t)); /* each node's data deps (its first ones) */
  uint64_t last = 0, count = 0;
  for (bool meta = true; ok && p < end; meta = false) {
    uint64_t n;
    size_t at = (size_t)(p - (const uint8_t *)buf);
    if (!varint(&p, end, &n) || n > (uint64_t)(end - p)) {
      ok = count ? CFAIL("%s: truncated at byte %zu, after node %" G_GUINT64_FORMAT " (a message of %" G_GUINT64_FORMAT
                         " B where %zu are left)", path, at, last, n, (size_t)(end - p))
                 : CFAIL("%s: truncated at byte %zu, in its metadata: not a Chakra trace?", path, at);
      break;
    }
    if (meta) {
      FabsimChakra__EtMetadata *m = fabsim_chakra__et_metadata__unpack(NULL, n, p);
      if (!m) ok = CFAIL("%s: byte %zu: the metadata message does not decode: not a Chakra trace?", path, at);
      else fabsim_chakra__et_metadata__free_unpacked(m, NULL);
    } else {
      FabsimChakra__EtNode *nd = fabsim_chakra__et_node__unpack(NULL, n, p);
      if (!nd) {
        ok = CFAIL("%s: byte %zu: a node message that does not decode (after node %" G_GUINT64_FORMAT ")", path, at,
                   last);
      } else {
        uint32_t k = 0;
        ok = add_node(t, rank, nd, path, missing, ctrl_wait, &k, err);
        g_array_append_val(ndata, k);
        last = nd->id;
        count++;
        fabsim_chakra__et_node__free_unpacked(nd, NULL);
      }
    }
    p += n;
  }
  if (ok && !count) ok = CFAIL("%s: rank %u's trace has no nodes", path, rank);
  if (ok && ctrl_wait) drop_absent_callers(t, first, ndata);
  g_array_free(ndata, TRUE);
  g_free(buf);
  return ok;
}

gboolean fab_trace_read_chakra(FabTrace *t, const char *fmt, uint64_t missing_size, bool ctrl_wait, GError **err) {
  for (uint32_t r = 0; r < t->nranks; r++) {
    char *path = g_strdup_printf(fmt, (int)r);
    gboolean ok = read_rank(t, r, path, missing_size, ctrl_wait, err);
    g_free(path);
    if (!ok) return FALSE;
  }
  return TRUE;
}

#else

gboolean fab_trace_read_chakra(FabTrace *t, const char *fmt, uint64_t missing_size, bool ctrl_wait, GError **err) {
  g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_VALUE, "this fabsim was built without protobuf-c (Debian: "
              "libprotobuf-c-dev and protobuf-c-compiler; tools/setup installs them): it cannot read Chakra traces");
  return FALSE;
}

#endif

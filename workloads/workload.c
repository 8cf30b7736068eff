/* Flow-list workloads. See workload.h. */
#include "workload.h"
#include "sim/rng.h"
#include <stddef.h>

static const char *const kinds[] = {"flows", "permutation", "incast", "all-to-all", "collective", NULL};
static const char *const coll_ops[] = {"allreduce", "allgather", "reduce-scatter", "broadcast", "reduce",
                                       "all-to-all", "send-recv", NULL};
static const char *const coll_algorithms[] = {"nvls", "auto", "ring", "tree", "nvls-tree", "hierarchical",
                                              "pat", "pairwise", "collnet", NULL};

typedef struct WorkloadIn {
  int kind;
  uint64_t size, start, receiver, priority;
  const FabCfgNode *senders, *flows, *ranks;
  int op, algorithm;
} WorkloadIn;

static const FabCfgKey workload_schema[] = {
  {"kind", FAB_CFG_ENUM, offsetof(WorkloadIn, kind), TRUE, NULL, 0, 0, kinds},
  {"size", FAB_CFG_SIZE, offsetof(WorkloadIn, size), FALSE, NULL, 1, 0, NULL},
  {"start", FAB_CFG_TIME, offsetof(WorkloadIn, start), FALSE, "0ns", 0, 0, NULL},
  {"receiver", FAB_CFG_UINT, offsetof(WorkloadIn, receiver), FALSE, "0", 0, 0, NULL},
  {"priority", FAB_CFG_UINT, offsetof(WorkloadIn, priority), FALSE, "0", 0, 7, NULL},
  {"senders", FAB_CFG_NODE, offsetof(WorkloadIn, senders), FALSE, NULL, 0, 0, NULL},
  {"flows", FAB_CFG_SEQ, offsetof(WorkloadIn, flows), FALSE, NULL, 0, 0, NULL},
  {"ranks", FAB_CFG_NODE, offsetof(WorkloadIn, ranks), FALSE, NULL, 0, 0, NULL},
  {"op", FAB_CFG_ENUM, offsetof(WorkloadIn, op), FALSE, "allreduce", 0, 0, coll_ops},
  {"algorithm", FAB_CFG_ENUM, offsetof(WorkloadIn, algorithm), FALSE, "nvls", 0, 0, coll_algorithms},
  {NULL, FAB_CFG_END, 0, FALSE, NULL, 0, 0, NULL},
};

typedef struct FlowIn {
  uint64_t src, dst, size, start, priority;
} FlowIn;

static const FabCfgKey flow_schema[] = {
  {"src", FAB_CFG_UINT, offsetof(FlowIn, src), TRUE, NULL, 0, 0, NULL},
  {"dst", FAB_CFG_UINT, offsetof(FlowIn, dst), TRUE, NULL, 0, 0, NULL},
  {"size", FAB_CFG_SIZE, offsetof(FlowIn, size), TRUE, NULL, 1, 0, NULL},
  {"start", FAB_CFG_TIME, offsetof(FlowIn, start), FALSE, "0ns", 0, 0, NULL},
  {"priority", FAB_CFG_UINT, offsetof(FlowIn, priority), FALSE, "0", 0, 7, NULL},
  {NULL, FAB_CFG_END, 0, FALSE, NULL, 0, 0, NULL},
};

void fab_workload_derangement(uint32_t *perm, uint32_t n, uint64_t seed) {
  FabRng rng;
  fab_rng_init(&rng, seed, FAB_STREAM(FAB_STREAM_WORKLOAD, 0));
  g_assert(n >= 2);
  for (;;) { /* Fisher-Yates, rejected until no fixed point: uniform over derangements (~e tries) */
    for (uint32_t i = 0; i < n; i++) perm[i] = i;
    for (uint32_t i = n - 1; i > 0; i--) {
      uint32_t j = (uint32_t)fab_rng_below(&rng, (uint64_t)i + 1);
      uint32_t t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    uint32_t i = 0;
    while (i < n && perm[i] != i) i++;
    if (i == n) return;
  }
}

static gboolean check_endpoint(const FabCfgNode *n, uint64_t v, uint32_t endpoints, GError **err) {
  if (v >= endpoints)
    return fab_cfg_fail(n, err, "endpoint %" G_GUINT64_FORMAT " does not exist (the fabric has 0..%u)", v,
                        endpoints - 1);
  return TRUE;
}

static gboolean check_prio(const FabCfgNode *n, uint64_t v, uint32_t nprio, GError **err) {
  if (v >= nprio)
    return fab_cfg_fail(n, err, "priority %" G_GUINT64_FORMAT " does not exist (expected 0..%u: "
                        "fabric.switch.priorities is %u)", v, nprio - 1, nprio);
  return TRUE;
}

static void add(GArray *a, uint32_t src, uint32_t dst, uint64_t bytes, fab_time_t start, uint8_t prio) {
  FabFlowSpec f = {src, dst, bytes, start, prio, -1, false};
  g_array_append_val(a, f);
}

static gboolean read_flows(const FabCfgNode *seq, uint32_t endpoints, uint32_t nprio, GArray *out, GError **err) {
  for (size_t i = 0; i < fab_cfg_len(seq); i++) {
    const FabCfgNode *item = fab_cfg_at(seq, i);
    FlowIn f = {0};
    if (!fab_cfg_apply(item, NULL, flow_schema, &f, err)) return FALSE;
    if (!check_endpoint(fab_cfg_get(item, "src"), f.src, endpoints, err) ||
        !check_endpoint(fab_cfg_get(item, "dst"), f.dst, endpoints, err) ||
        !check_prio(fab_cfg_get(item, "priority"), f.priority, nprio, err))
      return FALSE;
    if (f.src == f.dst) return fab_cfg_fail(fab_cfg_get(item, "dst"), err, "a flow from an endpoint to itself");
    add(out, (uint32_t)f.src, (uint32_t)f.dst, f.size, f.start, (uint8_t)f.priority);
  }
  return TRUE;
}

static gboolean read_incast(const FabCfgNode *wl, const WorkloadIn *in, uint32_t endpoints, GArray *out,
                            GError **err) {
  if (!check_endpoint(fab_cfg_get(wl, "receiver"), in->receiver, endpoints, err)) return FALSE;
  uint32_t r = (uint32_t)in->receiver;
  const FabCfgNode *s = in->senders;
  if (!s) return fab_cfg_fail(wl, err, "incast needs senders (a count or a list of endpoints)");
  if (fab_cfg_kind(s) == FAB_CFG_NODE_SEQ) {
    GHashTable *seen = g_hash_table_new(NULL, NULL);
    for (size_t i = 0; i < fab_cfg_len(s); i++) {
      const FabCfgNode *it = fab_cfg_at(s, i);
      int64_t v;
      GError *e = NULL;
      if (fab_cfg_kind(it) != FAB_CFG_NODE_SCALAR || !fab_parse_int(fab_cfg_scalar(it), &v, &e) || v < 0) {
        g_clear_error(&e);
        g_hash_table_destroy(seen);
        return fab_cfg_fail(it, err, "expected an endpoint number");
      }
      if (!check_endpoint(it, (uint64_t)v, endpoints, err)) {
        g_hash_table_destroy(seen);
        return FALSE;
      }
      if (v == r || g_hash_table_contains(seen, GUINT_TO_POINTER(v + 1))) {
        g_hash_table_destroy(seen);
        return fab_cfg_fail(it, err, v == r ? "the receiver cannot be a sender" : "endpoint listed twice");
      }
      g_hash_table_add(seen, GUINT_TO_POINTER(v + 1));
      add(out, (uint32_t)v, r, in->size, in->start, (uint8_t)in->priority);
    }
    g_hash_table_destroy(seen);
    if (!fab_cfg_len(s)) return fab_cfg_fail(s, err, "an empty list of senders");
    return TRUE;
  }
  int64_t n;
  if (fab_cfg_kind(s) != FAB_CFG_NODE_SCALAR || !fab_parse_int(fab_cfg_scalar(s), &n, NULL) || n < 1)
    return fab_cfg_fail(s, err, "expected a number of senders >= 1 or a list of endpoints");
  if ((uint64_t)n > endpoints - 1)
    return fab_cfg_fail(s, err, "%" G_GINT64_FORMAT " senders, but only %u endpoints besides the receiver", n,
                        endpoints - 1);
  for (int64_t i = 1; i <= n; i++) add(out, (uint32_t)((r + i) % endpoints), r, in->size, in->start, (uint8_t)in->priority);
  return TRUE;
}

/* kind: collective (so far: allreduce with algorithm nvls). */
static gboolean read_collective(const FabCfgNode *wl, const WorkloadIn *in, uint32_t endpoints, GArray *out,
                                GError **err) {
  if (in->op != 0)
    return fab_cfg_fail(fab_cfg_get(wl, "op"), err, "%s is not modelled in this version of fabsim (only allreduce)",
                        coll_ops[in->op]);
  if (in->algorithm != 0)
    return fab_cfg_fail(fab_cfg_get(wl, "algorithm"), err, "%s is not modelled in this version of fabsim (only "
                        "nvls)", coll_algorithms[in->algorithm]);
  GArray *ranks = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  const FabCfgNode *r = in->ranks;
  if (!r || (fab_cfg_kind(r) == FAB_CFG_NODE_SCALAR && g_str_equal(fab_cfg_scalar(r), "all"))) {
    for (uint32_t i = 0; i < endpoints; i++) g_array_append_val(ranks, i);
  } else if (fab_cfg_kind(r) == FAB_CFG_NODE_SEQ && fab_cfg_len(r) >= 2) {
    for (size_t i = 0; i < fab_cfg_len(r); i++) {
      const FabCfgNode *it = fab_cfg_at(r, i);
      int64_t v;
      if (fab_cfg_kind(it) != FAB_CFG_NODE_SCALAR || !fab_parse_int(fab_cfg_scalar(it), &v, NULL) || v < 0 ||
          v >= endpoints) {
        g_array_free(ranks, TRUE);
        return fab_cfg_fail(it, err, "expected an endpoint from 0 to %u", endpoints - 1);
      }
      for (guint j = 0; j < ranks->len; j++)
        if (g_array_index(ranks, uint32_t, j) == (uint32_t)v) {
          g_array_free(ranks, TRUE);
          return fab_cfg_fail(it, err, "rank %" G_GINT64_FORMAT " listed twice", v);
        }
      uint32_t u = (uint32_t)v;
      g_array_append_val(ranks, u);
    }
  } else {
    g_array_free(ranks, TRUE);
    return fab_cfg_fail(r, err, "expected 'all' or a list of at least 2 ranks");
  }
  for (guint i = 0; i < ranks->len; i++) {
    uint32_t k = g_array_index(ranks, uint32_t, i);
    FabFlowSpec f = {k, k, in->size, in->start, (uint8_t)in->priority, 0, true};
    g_array_append_val(out, f);
  }
  g_array_free(ranks, TRUE);
  return TRUE;
}

GArray *fab_workload_read(const FabCfgNode *root, uint32_t endpoints, uint32_t nprio, uint64_t seed,
                          GError **err) {
  const FabCfgNode *wl = fab_cfg_get(root, "workload");
  WorkloadIn in = {0};
  if (!wl) {
    fab_cfg_fail(root, err, "missing required key 'workload'");
    return NULL;
  }
  if (!fab_cfg_apply(wl, NULL, workload_schema, &in, err)) return NULL;
  const FabCfgNode *size_at = fab_cfg_get(wl, "size");
  static const char *const allowed[][7] = {
    [FAB_WL_FLOWS] = {"flows", NULL},
    [FAB_WL_PERMUTATION] = {"size", "start", "priority", NULL},
    [FAB_WL_INCAST] = {"size", "start", "priority", "senders", "receiver", NULL},
    [FAB_WL_ALL_TO_ALL] = {"size", "start", "priority", NULL},
    [FAB_WL_COLLECTIVE] = {"size", "start", "priority", "op", "algorithm", "ranks"},
  };
  for (size_t i = 0; i < fab_cfg_len(wl); i++) { /* keys of other kinds are errors, not ignored */
    const char *key = fab_cfg_key_at(wl, i);
    gboolean ok = g_str_equal(key, "kind");
    for (int j = 0; !ok && allowed[in.kind][j]; j++) ok = g_str_equal(key, allowed[in.kind][j]);
    if (!ok) {
      fab_cfg_fail(fab_cfg_at(wl, i), err, "'%s' is not used by workload kind %s", key, kinds[in.kind]);
      return NULL;
    }
  }
  if (in.kind != FAB_WL_FLOWS && !size_at) {
    fab_cfg_fail(wl, err, "workload kind %s needs size", kinds[in.kind]);
    return NULL;
  }
  if (!check_prio(fab_cfg_get(wl, "priority"), in.priority, nprio, err)) return NULL;
  GArray *out = g_array_new(FALSE, FALSE, sizeof(FabFlowSpec));
  gboolean ok = TRUE;
  switch ((FabWorkloadKind)in.kind) {
  case FAB_WL_FLOWS:
    if (!in.flows) ok = fab_cfg_fail(wl, err, "workload kind flows needs flows: [{src, dst, size}, ...]");
    else ok = read_flows(in.flows, endpoints, nprio, out, err);
    break;
  case FAB_WL_PERMUTATION: {
    if (endpoints < 2) {
      ok = fab_cfg_fail(wl, err, "a permutation needs at least 2 endpoints");
      break;
    }
    uint32_t *perm = g_new(uint32_t, endpoints);
    fab_workload_derangement(perm, endpoints, seed);
    for (uint32_t i = 0; i < endpoints; i++) add(out, i, perm[i], in.size, in.start, (uint8_t)in.priority);
    g_free(perm);
    break;
  }
  case FAB_WL_INCAST:
    ok = read_incast(wl, &in, endpoints, out, err);
    break;
  case FAB_WL_COLLECTIVE:
    ok = read_collective(wl, &in, endpoints, out, err);
    break;
  case FAB_WL_ALL_TO_ALL:
    if ((uint64_t)endpoints * (endpoints - 1) > 50000000) {
      ok = fab_cfg_fail(wl, err, "all-to-all over %u endpoints is more than 50 million flows", endpoints);
      break;
    }
    for (uint32_t s = 0; s < endpoints; s++)
      for (uint32_t d = 0; d < endpoints; d++)
        if (s != d) add(out, s, d, in.size, in.start, (uint8_t)in.priority);
    break;
  }
  if (!ok) {
    g_array_free(out, TRUE);
    return NULL;
  }
  if (out->len == 0) {
    fab_cfg_fail(wl, err, "the workload has no flows");
    g_array_free(out, TRUE);
    return NULL;
  }
  return out;
}

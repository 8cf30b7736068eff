/* The workload kinds text and chakra: a trace read from files, its groups,
** its rescaling, built into the job's DAG. See trace.h and README
** ("Traces"). */
#include "trace.h"
#include <string.h>
#include "workload.h"

#define K(NAME, TYPE, FIELD, ...) FAB_CFG_KEY(NAME, TYPE, FabTraceIn, FIELD, __VA_ARGS__)
#define SHARED_ROWS                                                                     \
  K("groups", FAB_CFG_NODE, groups), K("scale", FAB_CFG_NODE, scale),                    \
  K("priority", FAB_CFG_UINT, priority, .def = "0", .min = 0, .max = 7),                 \
  K("dtype", FAB_CFG_ENUM, dtype, .def = "bf16", .choices = fab_dtype_names)

const FabCfgKey fab_trace_text_schema[] = {
  FAB_CFG_SPLICE_OF(fab_job_prefix), K("file", FAB_CFG_STRING, file, .required = true), SHARED_ROWS,
  FAB_CFG_END_ROW,
};
static const char *const ctrl_dep_modes[] = {"ignore", "wait", NULL};
const FabCfgKey fab_trace_chakra_schema[] = {
  FAB_CFG_SPLICE_OF(fab_job_prefix), K("traces", FAB_CFG_STRING, traces, .required = true), SHARED_ROWS,
  K("missing_size", FAB_CFG_SIZE, missing_size, .def = "0", .max = 0x1p50),
  K("ctrl_deps", FAB_CFG_ENUM, ctrl_deps, .def = "ignore", .choices = ctrl_dep_modes),
  FAB_CFG_END_ROW,
};

/* One group's ranks: a list of job ranks or "A-B". */
static uint32_t *group_ranks(const FabCfgNode *v, uint32_t nranks, uint32_t *n, GError **err) {
  GArray *a = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  uint8_t *seen = g_new0(uint8_t, nranks);
  gboolean ok = TRUE;
  const char *sc = fab_cfg_kind(v) == FAB_CFG_NODE_SCALAR ? fab_cfg_scalar(v) : NULL;
  int64_t lo = 0, hi = -1;
  if (sc) {
    char **ab = g_strsplit(sc, "-", 2);
    if (!ab[0] || !ab[1] || !fab_parse_int(ab[0], &lo, NULL) || !fab_parse_int(ab[1], &hi, NULL) || lo < 0 || hi < lo)
      ok = fab_cfg_fail(v, err, "expected a list of ranks or a range A-B");
    g_strfreev(ab);
  } else if (fab_cfg_kind(v) != FAB_CFG_NODE_SEQ || !fab_cfg_len(v)) {
    ok = fab_cfg_fail(v, err, "expected a list of ranks or a range A-B");
  }
  size_t len = sc ? (size_t)(hi - lo + 1) : fab_cfg_len(v);
  for (size_t i = 0; ok && i < len; i++) {
    int64_t r = lo + (int64_t)i;
    const FabCfgNode *it = sc ? v : fab_cfg_at(v, i);
    if (!sc && (fab_cfg_kind(it) != FAB_CFG_NODE_SCALAR || !fab_parse_int(fab_cfg_scalar(it), &r, NULL)))
      ok = fab_cfg_fail(it, err, "expected a rank number");
    else if (r < 0 || r >= nranks)
      ok = fab_cfg_fail(it, err, "rank %" G_GINT64_FORMAT " is outside the trace's %u ranks", r, nranks);
    else if (seen[r])
      ok = fab_cfg_fail(it, err, "rank %" G_GINT64_FORMAT " listed twice", r);
    else {
      seen[r] = 1;
      uint32_t u = (uint32_t)r;
      g_array_append_val(a, u);
    }
  }
  g_free(seen);
  *n = a->len;
  if (!ok) return g_array_free(a, TRUE), NULL;
  return (uint32_t *)(void *)g_array_free(a, FALSE);
}

/* workload.groups: a map, or the path of a YAML/JSON file holding one
** (ASTRA-sim's communicator group file: {"1": [0, 1, 2, 3], ...}). */
static gboolean read_groups(FabTrace *t, const FabCfgNode *g, GError **err) {
  if (!g) return TRUE;
  FabCfg *file = NULL;
  if (fab_cfg_kind(g) == FAB_CFG_NODE_SCALAR) {
    char *p = fab_cfg_file_near(g, fab_cfg_scalar(g));
    file = fab_cfg_load_file(p, err);
    g_free(p);
    if (!file) return FALSE;
    g = fab_cfg_root(file);
  }
  gboolean ok = fab_cfg_kind(g) == FAB_CFG_NODE_MAP ? TRUE : fab_cfg_fail(g, err, "expected a map: group name -> ranks");
  for (size_t i = 0; ok && i < fab_cfg_len(g); i++) {
    const char *name = fab_cfg_key_at(g, i);
    uint32_t n;
    uint32_t *r = group_ranks(fab_cfg_at(g, i), t->nranks, &n, err);
    if (!r) ok = FALSE;
    else if (g_str_equal(name, "world") || g_str_equal(name, "-")) {
      g_free(r);
      ok = fab_cfg_fail(fab_cfg_at(g, i), err, "'%s' cannot name a group (it means every rank)", name);
    } else fab_trace_group_add(t, name, r, n);
  }
  fab_cfg_free(file);
  return ok;
}

typedef struct ScaleIn {
  uint64_t dp;
  const FabCfgNode *groups;
} ScaleIn;
static const FabCfgKey scale_schema[] = {
  FAB_CFG_KEY("dp", FAB_CFG_UINT, ScaleIn, dp, .required = true, .min = 1, .max = 65536),
  FAB_CFG_KEY("groups", FAB_CFG_SEQ, ScaleIn, groups),
  FAB_CFG_END_ROW,
};

/* Mark scale.groups as data-parallel (after the trace has defined its own groups). */
static gboolean mark_dp(FabTrace *t, const FabCfgNode *seq, GError **err) {
  for (size_t i = 0; seq && i < fab_cfg_len(seq); i++) {
    const FabCfgNode *it = fab_cfg_at(seq, i);
    const char *name = fab_cfg_kind(it) == FAB_CFG_NODE_SCALAR ? fab_cfg_scalar(it) : NULL;
    uint32_t g = name ? fab_trace_group_find(t, name) : FAB_TR_WORLD;
    if (g == FAB_TR_WORLD) return fab_cfg_fail(it, err, "no group named '%s' in workload.groups or the trace", name ? name : "?");
    g_array_index(t->groups, FabTrGroup, g).dp = true;
  }
  return TRUE;
}

/* Errors without a location (the readers', the builder's) get the job's. */
static gboolean located(const FabCfgNode *at, GError **err, GError *e) {
  gboolean r = fab_cfg_fail(at, err, "%s", e->message);
  g_error_free(e);
  return r;
}

/* The data-parallel degree the trace was recorded at: the size of the groups
** scale.groups names (all one size), or, none named, the trace's ranks
** (every rank one data-parallel group). 0 + err when they differ. */
static uint32_t recorded_dp(const FabTrace *t, const FabCfgNode *groups, GError **err) {
  uint32_t d = 0;
  for (guint g = 0; g < t->groups->len; g++) {
    const FabTrGroup *gr = &g_array_index(t->groups, FabTrGroup, g);
    if (!gr->dp) continue;
    if (d && gr->n != d)
      return fab_cfg_fail(groups, err, "the data-parallel groups differ in size (%u and %u ranks): a trace is replayed "
                          "at one data-parallel degree", d, gr->n), 0;
    d = gr->n;
  }
  return d ? d : t->nranks;
}

/* The highest rank a text trace names, + 1 (nodes, peers, groups). */
static uint32_t ranks_named(const FabTrace *t) {
  uint32_t r = 0;
  for (guint i = 0; i < t->nodes->len; i++) {
    const FabTrNode *n = &g_array_index(t->nodes, FabTrNode, i);
    r = MAX(r, n->rank + 1);
    if (n->kind == FAB_TR_SEND || n->kind == FAB_TR_RECV) r = MAX(r, n->group + 1);
  }
  for (guint g = 0; g < t->groups->len; g++) {
    const FabTrGroup *gr = &g_array_index(t->groups, FabTrGroup, g);
    for (uint32_t j = 0; j < gr->n; j++) r = MAX(r, gr->ranks[j] + 1);
  }
  return r;
}

/* Rank files rank 0, 1, ... that exist (at most n). */
static uint32_t files_present(const char *fmt, uint32_t n) {
  uint32_t r = 0;
  for (; r < n; r++) {
    char *p = g_strdup_printf(fmt, (int)r);
    gboolean there = g_file_test(p, G_FILE_TEST_EXISTS);
    g_free(p);
    if (!there) break;
  }
  return r;
}

/* scale.dp (the degree to replay at) against the recorded one: the factor,
** and the trace's ranks (the job's / factor). 0 + err when they do not fit. */
static uint32_t scale_factor(const FabTrace *t, const FabCfgNode *scale, uint64_t target, uint32_t n, uint32_t *rec,
                             GError **err) {
  const FabCfgNode *at = fab_cfg_get(scale, "dp");
  *rec = recorded_dp(t, fab_cfg_get(scale, "groups"), err);
  if (!*rec) return 0;
  if (target % *rec)
    return fab_cfg_fail(at, err, "the trace was recorded at data-parallel degree %u, and %" G_GUINT64_FORMAT " is not a "
                        "multiple of it", *rec, target), 0;
  uint32_t f = (uint32_t)(target / *rec);
  if (n % f)
    return fab_cfg_fail(at, err, "data-parallel degree %" G_GUINT64_FORMAT " is %u replicas of the trace (recorded at "
                        "%u), and the job's %u ranks are not a multiple of %u", target, f, *rec, n, f), 0;
  if ((uint64_t)t->nranks * f != n)
    return fab_cfg_fail(at, err, "data-parallel degree %" G_GUINT64_FORMAT " is %u x the trace's %u: the job needs %"
                        G_GUINT64_FORMAT " ranks (%u x the trace's %u), it has %u", target, f, *rec,
                        (uint64_t)t->nranks * f, f, t->nranks, n), 0;
  return f;
}

/* The trace read at its own rank count (`scale` shrinks it from the job's). */
static gboolean read_scaled(FabTrace *t, const FabTraceIn *in, bool chakra, const char *path, const FabCfgNode *fk,
                            const ScaleIn *sc, uint32_t n, uint32_t *factor, uint32_t *rec, GError **err) {
  GError *e = NULL;
  *factor = 1;
  *rec = 0;
  if (chakra) { /* groups come from the scenario: the factor is known before reading */
    if (in->scale && !mark_dp(t, sc->groups, err)) return FALSE;
    if (in->scale) {
      t->nranks = sc->groups ? n : files_present(path, n); /* no groups: the world is the data-parallel group */
      if (!t->nranks) {
        char *p0 = g_strdup_printf(path, 0);
        gboolean r = fab_cfg_fail(fk, err, "%s: no such file (rank 0's trace)", p0);
        g_free(p0);
        return r;
      }
      uint32_t d = recorded_dp(t, fab_cfg_get(in->scale, "groups"), err);
      if (!d) return FALSE;
      if (sc->groups && sc->dp % d == 0 && n % (sc->dp / d) == 0) t->nranks = n / (uint32_t)(sc->dp / d);
      if (!(*factor = scale_factor(t, in->scale, sc->dp, n, rec, err))) return FALSE;
    }
    if (!fab_trace_read_chakra(t, path, in->missing_size, in->ctrl_deps == 1, &e)) return located(fk, err, e);
    return TRUE;
  }
  if (!fab_trace_read_text(t, path, &e)) return located(fk, err, e); /* ranks checked against the job's */
  if (!in->scale) return TRUE;
  if (!mark_dp(t, sc->groups, err)) return FALSE;
  uint32_t named = ranks_named(t), d = 0;
  if (!sc->groups) t->nranks = named;
  else if ((d = recorded_dp(t, fab_cfg_get(in->scale, "groups"), err)) == 0) return FALSE;
  else if (sc->dp % d == 0 && n % (sc->dp / d) == 0) t->nranks = n / (uint32_t)(sc->dp / d);
  if (!(*factor = scale_factor(t, in->scale, sc->dp, n, rec, err))) return FALSE;
  if (named > t->nranks)
    return fab_cfg_fail(fk, err, "%s names rank %u, beyond the trace's %u ranks (the job's %u at data-parallel degree "
                        "%" G_GUINT64_FORMAT ", recorded at %u)", path, named - 1, t->nranks, n, sc->dp, *rec);
  return TRUE;
}

gboolean fab_trace_job(const FabTraceIn *in, const FabCfgNode *wl, bool chakra, FabDag *d,
                       const FabWorkloadEnv *env, const uint32_t *ep, uint32_t n, uint16_t job, GError **err) {
  ScaleIn sc = {1, NULL};
  if (in->scale && !fab_cfg_apply(in->scale, NULL, scale_schema, &sc, err)) return FALSE;
  if (in->priority >= env->nprio)
    return fab_cfg_fail(fab_cfg_get(wl, "priority"), err, "priority %" G_GUINT64_FORMAT " does not exist (expected "
                        "0..%u: fabric.switch.priorities is %u)", in->priority, env->nprio - 1, env->nprio);
  if (n < 2) return fab_cfg_fail(wl, err, "a trace needs at least 2 ranks (the job has %u)", n);
  const FabCfgNode *fk = fab_cfg_get(wl, chakra ? "traces" : "file");
  const char *name = chakra ? in->traces : in->file;
  if (chakra) { /* exactly one %d, no other conversion */
    const char *pc = strchr(name, '%');
    if (!pc || pc[1] != 'd' || strchr(pc + 2, '%'))
      return fab_cfg_fail(fk, err, "expected a file pattern with one %%d for the rank (and no other %%), such as "
                          "traces/rank.%%d.et");
  }
  FabTrace *t = fab_trace_new(n);
  char *path = fab_cfg_file_near(fk, name);
  uint32_t factor = 1, rec = 0;
  gboolean ok = read_groups(t, in->groups, err) && read_scaled(t, in, chakra, path, fk, &sc, n, &factor, &rec, err);
  if (ok) fab_trace_scale_dp(t, factor); /* (a one-rank trace is fine when scaled: rank 0's of a dp job) */
  if (ok && t->nranks < 2) ok = fab_cfg_fail(fk, err, "a trace needs at least 2 ranks (this one has %u)", t->nranks);
  if (ok) { /* what explain says of the job */
    uint32_t k[4] = {0};
    for (guint i = 0; i < t->nodes->len; i++) k[g_array_index(t->nodes, FabTrNode, i).kind]++;
    GString *g = g_string_new(NULL);
    for (guint i = 0; i < t->groups->len; i++)
      g_string_append_printf(g, "%s%s%s", i ? ", " : "", g_array_index(t->groups, FabTrGroup, i).name,
                             g_array_index(t->groups, FabTrGroup, i).dp ? " (dp)" : "");
    char *sc_note = in->scale ? g_strdup_printf("; recorded at data-parallel degree %u, replayed at %" G_GUINT64_FORMAT
                                                " (x%u)", rec, sc.dp, factor) : g_strdup("");
    if (t->ctrl_ignored) {
      char *x = g_strdup_printf(in->ctrl_deps ? "%s; %" G_GUINT64_FORMAT " ctrl_deps name nodes not in their file "
                                "(callers a converter dropped): not waited for" : "%s; %" G_GUINT64_FORMAT " ctrl_deps "
                                "not waited for (workload.ctrl_deps: ignore: the order is in data_deps)", sc_note,
                                t->ctrl_ignored);
      g_free(sc_note);
      sc_note = x;
    }
    g_free(g_array_index(d->jobs, FabJobDef, job).note);
    g_array_index(d->jobs, FabJobDef, job).note =
      g_strdup_printf("%s trace %s: %u nodes (%u compute, %u collective, %u send, %u receive), groups: %s%s",
                      chakra ? "Chakra" : "text", path, t->nodes->len, k[0], k[1], k[2], k[3],
                      g->len ? g->str : "none (all ranks)", sc_note);
    g_free(sc_note);
    g_string_free(g, TRUE);
  }
  GError *e = NULL;
  if (ok) {
    if (!d->trace_node) d->trace_node = g_hash_table_new(NULL, NULL);
    FabTrEnv te = {&env->coll, ep, job, fab_dtype_bytes[in->dtype], env->gpu_flops * env->gpu_eff,
                   (uint8_t)in->priority, in->job.start, d->trace_node};
    if (!fab_trace_build(t, d, &te, &e)) ok = located(fk, err, e);
  }
  g_free(path);
  fab_trace_free(t);
  return ok;
}

/* The run driver's SHARP: the reductions of a run's SHARP groups on the
** trees its scenario's plan claimed (models/sharp.h, topologies/topology.h
** FabSharpPlan), their start, their conservation check, and their results.
** See run_int.h. */
#include "run_int.h"

#include "models/sharp.h"
#include "scenario.h"

/* Whether a member's contribution of `bytes` goes on the low-latency tree:
** the SHARP library's requests below SHARP_COLL_SAT_THRESHOLD do
** (topologies/sharp_trees.c). */
static bool is_llt(const Run *r, uint64_t bytes) { return bytes < r->sc->fabric.sharp.sat_threshold; }

/* A SHARP member's window: packets it may have outstanding (LLT: its
** transactions; streaming: the tree's buffer). */
static uint64_t sharp_win(const Run *r, const FabFlow *f) {
  const FabSharpCfg *c = &r->sc->fabric.sharp;
  return is_llt(r, f->bytes) ? c->osts : MAX(c->window / f->mtu, 1u);
}

/* FabSharpStartFn: a reduction that waited for its locks may go. */
static void sharp_start(void *ctx, FabEngine *eng, const uint32_t *flow, uint32_t nmem) {
  Run *r = ctx;
  for (uint32_t m = 0; m < nmem; m++) {
    FabFlow *f = fab_flow_at(&r->table, flow[m]);
    f->sharp_win = (uint32_t)MIN(sharp_win(r, f), UINT32_MAX);
    fab_nic_sharp_wake(eng, &r->topo->nics[f->src], f);
  }
}

/* SHARP group: the members (their ops in mem, one per node) of one
** reduction in their communicator's tree (claimed by the expansion, found
** again here). FALSE with *why when they do not make one. */
bool fab_run__sharp_group(Run *r, GArray *mem, char **why) {
  const FabDag *dag = r->sc->dag;
  uint32_t n = mem->len, *rank = g_new(uint32_t, n), *fid = g_new(uint32_t, n);
  for (uint32_t m = 0; m < n; m++) rank[m] = fab_dag_op(dag, g_array_index(mem, uint32_t, m))->src;
  for (uint32_t a = 1; a < n; a++) /* members in rank order, as the tree lists them (insertion: few) */
    for (uint32_t b = a; b > 0 && rank[b - 1] > rank[b]; b--) {
      uint32_t t = rank[b - 1], o = g_array_index(mem, uint32_t, b - 1);
      rank[b - 1] = rank[b], rank[b] = t;
      g_array_index(mem, uint32_t, b - 1) = g_array_index(mem, uint32_t, b), g_array_index(mem, uint32_t, b) = o;
    }
  const FabOp *o0 = fab_dag_op(dag, g_array_index(mem, uint32_t, 0));
  int32_t tree = n >= 2 && r->sharp ? fab_sharp_plan_claim(r->sc->sharp, o0->job, rank, n, why) : -1;
  bool ok = tree >= 0;
  for (uint32_t m = 0; ok && m < n; m++) {
    FabFlow *f = fab_run__flow_make(r, *flow_of(r, g_array_index(mem, uint32_t, m)));
    FabFlow *f0 = fab_flow_at(&r->table, *slot_of(r, *flow_of(r, g_array_index(mem, uint32_t, 0))));
    if (is_llt(r, f->bytes)) { /* one transaction of at most ost_payload bytes per packet */
      f->mtu = MIN(f->mtu, r->sc->fabric.sharp.ost_payload);
      f->npkts = f->bytes ? (uint32_t)((f->bytes + f->mtu - 1) / f->mtu) : 1;
    }
    fid[m] = f->slot;
    ok = f->npkts == f0->npkts;
  }
  if (ok) {
    fab_sharp_plan_install(r->sc->sharp, r->topo, r->sharp); /* trees claimed since */
    FabFlow *f0 = fab_flow_at(&r->table, fid[0]);
    uint32_t g = fab_sharp_add_group(r->sharp, (uint32_t)tree, fid, f0->npkts, f0->bytes, is_llt(r, f0->bytes));
    for (uint32_t m = 0; m < n; m++) {
      FabFlow *f = fab_flow_at(&r->table, fid[m]);
      f->nvls_group = g;
      f->nvls_member = m;
      f->nvls_n = n;
      f->nvls_need = f->npkts;
      f->nvls_rx = f->bytes;
      f->sharp_node = fab_sharp_member_node(r->sharp, (uint32_t)tree, m);
      f->sharp_win = 0; /* none out until its reduction starts (sharp_start) */
    }
  } else if (!*why) {
    *why = g_strdup("its members do not all contribute the same packets");
  }
  g_free(rank);
  g_free(fid);
  return ok;
}

void fab_run__sharp_make(Run *r) {
  const FabSharpCfg *c = &r->sc->fabric.sharp;
  r->sharp = fab_sharp_new(c->latency, c->reduce_bps, c->streams);
  fab_sharp_on_start(r->sharp, sharp_start, r);
}

/* SHARP's conservation, once every reduction is over: each tree took in
** members x S per reduction and gave as much back (S to each member). */
char *fab_run__sharp_check(const Run *r, bool drained) {
  if (!r->sharp || !drained || !fab_exec_finished(r->exec)) return NULL;
  for (uint32_t i = 0; i < fab_sharp_ntrees(r->sharp); i++) {
    FabSharpStats st;
    fab_sharp_stats(r->sharp, i, run_now(r), &st);
    if (st.finished != st.reductions || st.bytes_in != st.expect || st.bytes_out != st.expect)
      return g_strdup_printf("internal error: SHARP tree %u: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " reductions "
            "finished, %" G_GUINT64_FORMAT " B in and %" G_GUINT64_FORMAT " B out where members x sizes make %"
            G_GUINT64_FORMAT " B", i, st.finished, st.reductions, st.bytes_in, st.bytes_out, st.expect);
  }
  return NULL;
}

/* fabric.switch.sharp: each tree the plan made and what ran on it. */
void fab_run__sharp_results(const Run *r, FabResults *res) {
  if (!r->sharp) return;
  const FabSharpCfg *c = &r->sc->fabric.sharp;
  FabSharpRec *sr = res->sharp = g_new0(FabSharpRec, 1);
  sr->model = fab_sharp_model_names[c->model];
  sr->lock = fab_sharp_lock_names[c->lock];
  sr->fallbacks = fab_sharp_plan_refused(r->sc->sharp);
  sr->n_trees = fab_sharp_ntrees(r->sharp);
  sr->trees = g_new0(FabSharpTreeRec, MAX(sr->n_trees, 1u));
  for (uint32_t i = 0; i < sr->n_trees; i++) {
    FabSharpStats st;
    fab_sharp_stats(r->sharp, i, res->sim_time, &st);
    uint32_t nodes, job, members;
    const char *root = fab_sharp_plan_root(r->sc->sharp, i, &nodes, &job);
    fab_sharp_plan_members(r->sc->sharp, i, &members);
    sr->trees[i] = (FabSharpTreeRec){.id = i, .job = job, .nodes = nodes, .members = members,
                                     .reductions = st.reductions, .llt_reductions = st.llt, .bytes_in = st.bytes_in, .bytes_out = st.bytes_out,
                                     .peak_buffer_bytes = st.peak_held, .active = st.active, .lock_waits = st.waits,
                                     .lock_wait = st.waited};
    g_strlcpy(sr->trees[i].root, root, sizeof sr->trees[i].root);
  }
}

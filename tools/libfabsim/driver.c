/* The run driver: wire, run, check, collect. See driver.h. */
#include "driver.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "models/nvls.h"
#include "run_int.h"
#include "fastfwd.h"

/* FABSIM_EVENT_TRACE=FILE, for tools/bench's bare event loop
** (tests/bench_bare.c replays it): every event pushed in a run of one
** engine, as (events popped by then, time, tie key), three 64-bit words in
** the machine's order. The engine counts an event before its handler runs. */
static void trace_rec(void *ctx, fab_time_t t, uint64_t tie) {
  const Run *r = ctx;
  uint64_t rec[3] = {r->eng->events, t, tie};
  fwrite(rec, sizeof rec, 1, r->evtrace);
}

/* ---- hooks: executor -> models, models -> executor ------------------------- */


static void start_nvls(Run *r, uint32_t group);

static void post(void *ctx, uint32_t op, fab_time_t at) {
  Run *r = ctx;
  uint32_t n = *flow_of(r, op);
  if (*slot_of(r, n) == FAB_OP_NONE && r->nvls_wait && fab_dag_op(r->sc->dag, op)->kind == FAB_OP_NVLS)
    start_nvls(r, fab_dag_op(r->sc->dag, op)->group);
  FabFlow *f = *slot_of(r, n) != FAB_OP_NONE ? fab_flow_at(&r->table, *slot_of(r, n)) : fab_run__flow_make(r, n);
  f->start = at;
  if (!fab_run__here(r, f->src)) return;
  fab_nic_post(fab_exec_engine(r->exec), &r->topo->nics[f->src], f);
  if (f->nvls && f->nvls_mode == FAB_NVLS_SHARP) /* its reduction starts, or waits for its locks */
    fab_sharp_request(fab_exec_engine(r->exec), r->sharp, f->nvls_group, at);
}

static void compute(void *ctx, uint32_t op, uint32_t rank, fab_time_t dur) {
  Run *r = ctx;
  if (fab_run__here(r, rank)) fab_gpu_submit(fab_exec_engine(r->exec), &r->topo->gpus[rank], FAB_GPU_COMPUTE, dur, op);
}

static void reduce(void *ctx, uint32_t op, uint32_t rank, fab_time_t dur) {
  Run *r = ctx;
  if (fab_run__here(r, rank)) fab_gpu_submit(fab_exec_engine(r->exec), &r->topo->gpus[rank], FAB_GPU_REDUCE, dur, op);
}

static const FabFlowRec *rec_for(const void *ctx, uint32_t op) { return rec_of(ctx, *flow_of(ctx, op)); }

/* FabCollectIn.nics: the attachments by which op's bytes leave their node,
** as the NICs route them (models/nic.c fab_flow_prepare): none inside an
** NVLink domain or an NVSwitch's own reduction; a SHARP contribution by its
** rank's NIC; with PXN, by a NIC of the GPU on the destination's rail. A
** GPU with several NICs sends a flow by its lane's (lane l by NIC l - 1,
** switch.h), or, striped (aws-ofi-nccl), by as many NICs from there on as
** it has stripes; a flow with no lane by the first. */
static uint32_t nic_for(const void *ctx, uint32_t op, int64_t *out) {
  const Run *r = ctx;
  const FabOp *o = fab_dag_op(r->sc->dag, op);
  const FabGpuSpec *g = &r->sc->fabric.gpu;
  const FabNicCfg *nc = &r->sc->fabric.nic;
  uint32_t via = o->src, dom = g->nvlink_domain, gpn = g->gpus_per_node;
  if (o->kind == FAB_OP_NVLS) {
    if (o->mark != FAB_NVLS_OP_SHARP) return 0;
  } else if (o->kind != FAB_OP_FLOW || o->src == o->dst || (dom && o->src / dom == o->dst / dom)) {
    return 0;
  } else if (gpn && o->src / gpn == o->dst / gpn) {
    return 0; /* one node's PCIe */
  } else if (dom && g->pxn && o->src % gpn != o->dst % gpn) {
    via = o->src / dom * dom + o->dst % gpn;
  }
  if (!r->topo->rank_attach) {
    out[0] = via;
    return 1;
  }
  uint32_t first = r->topo->rank_attach[via], npg = MAX(r->topo->rank_nattach, 1u);
  uint32_t k = o->kind == FAB_OP_FLOW ? MIN(fab_nic_stripes(nc, o->bytes), FAB_COLLECT_MAX_NICS) : 1;
  for (uint32_t i = 0; i < k; i++) {
    uint32_t lane = k > 1 ? 1 + (MAX(o->lane, 1u) - 1 + i) % nc->stripe_rails : o->lane;
    out[i] = first + (lane ? (lane - 1) % npg : 0);
  }
  return k;
}

void fab_run__retire(Run *r) {
  FabDag *dag = r->sc->dag;
  uint32_t n = fab_exec_ops(r->exec);
  r->reports = 0;
  while (r->settled < n) {
    const FabOp *o = fab_dag_op(dag, r->settled);
    if (o->kind <= FAB_OP_NVLS && (fab_exec_state(r->exec, r->settled) != FAB_EXEC_DONE ||
                                   *slot_of(r, *flow_of(r, r->settled)) != FAB_OP_NONE))
      break;
    r->settled++;
  }
  uint32_t upto = fab_exec_retirable(r->exec, r->settled);
  if (upto == fab_exec_base(r->exec)) return;
  FabCollectIn in = {dag, r->exec, rec_for, nic_for, r, NULL};
  fab_collect_fold(r->coll, &in, upto);
  fab_exec_retire(r->exec, upto);
  if (!r->unfolds) return; /* a DAG made whole is the scenario's, and kept */
  /* the flows of the retired ops: numbered in op order, so those before the first flow of an op kept */
  uint32_t f = (uint32_t)fab_deq_end(&r->op_of);
  for (uint32_t i = upto; i < fab_dag_len(dag); i++)
    if (*flow_of(r, i) != FAB_OP_NONE) {
      f = *flow_of(r, i);
      break;
    }
  if (!r->keep_flows) {
    for (uint32_t k = (uint32_t)r->recs.first; k < f; k++) fab_flow_fold_add(&r->fold, rec_of(r, k));
    fab_deq_drop(&r->recs, f);
  }
  fab_deq_drop(&r->op_of, f);
  fab_deq_drop(&r->slot_of, f);
  fab_deq_drop(&r->flow_of, upto);
  if (r->par) fab_deq_drop(&r->cpart, MIN(upto, fab_deq_end(&r->cpart))); /* short after a failed check */
  fab_dag_retire(dag, upto);
}

static inline void reported(Run *r) {
  if (++r->reports >= RETIRE_EVERY && !r->par) fab_run__retire(r); /* a run over threads: between windows */
}

void fab_run__gpu_done(void *ctx, int which, uint32_t tag, fab_time_t began) {
  Run *r = ctx;
  fab_exec_done(r->exec, tag, began);
  reported(r);
}

void fab_run__flow_done(void *ctx, FabFlow *f) {
  Run *r = ctx;
  r->completed++;
  fab_exec_received(r->exec, *op_of(r, f->id));
  reported(r);
}

void fab_run__flow_sent(void *ctx, FabFlow *f) {
  Run *r = ctx;
  fab_exec_sent(r->exec, *op_of(r, f->id));
  reported(r);
}

/* What the results say of flow f: its times so far. */
static void record(Run *r, const FabFlow *f) {
  FabFlowRec *rec = rec_of(r, f->id);
  rec->start = f->start == FAB_TIME_MAX ? 0 : f->start;
  rec->end = f->end;
  rec->retransmits = f->retransmits;
  rec->reorder = f->reorder;
}

/* Whether the completed flow f received exactly its bytes (NVLS: what its
** mode receives); else the failure, once. */
static void check_bytes(Run *r, const FabFlow *f) {
  uint64_t want = f->nvls ? f->nvls_rx : f->bytes;
  if (!f->end || f->rcv_bytes == want || r->bad_flow) return;
  r->bad_flow = g_strdup_printf("internal error: flow %u completed with %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                                " bytes", f->id, f->rcv_bytes, want);
}

/* Nothing names f any more: keep what the results need, free its slot. */
void fab_run__flow_release(void *ctx, FabFlow *f) {
  Run *r = ctx;
  g_assert(*slot_of(r, f->id) == f->slot);
  record(r, f);
  check_bytes(r, f);
  if (f->nvls && f->nvls_mode != FAB_NVLS_SHARP) /* its group at the switch: freed by its last member */
    fab_nvls_leave(fab_switch_nvls(r->topo->nvs[f->src / r->sc->fabric.nic.nvl_domain]), f->nvls_group);
  *slot_of(r, f->id) = FAB_OP_NONE;
  /* over threads, its sender's partition takes it again; over processes, this one's */
  fab_flow_table_put_in(&r->table, f, r->net ? r->net->self : r->par ? r->topo->nics[f->src].port.part : 0);
}

static const FabFlow *flow_by_number(void *ctx, uint32_t n) {
  const Run *r = ctx;
  return n < r->slot_of.first || n >= fab_deq_end(&r->slot_of) || *slot_of(r, n) == FAB_OP_NONE
             ? NULL : fab_flow_at(&r->table, *slot_of(r, n));
}

static void flow_fail(void *ctx, FabFlow *f) {
  Run *r = ctx;
  if (!r->failed) r->failed = f;
  if (r->par) fab_par_stop(r->par);
  else fab_engine_stop(r->eng);
}

static bool finished(void *ctx) { return fab_exec_finished(((Run *)ctx)->exec); }

/* Packets NICs have received: the watchdog's sign of progress. */
static uint64_t delivered(void *ctx) {
  const Run *r = ctx;
  uint64_t n = 0;
  for (uint32_t h = 0; h < r->topo->nhosts; h++) n += r->topo->nics[h].rx_data_pkts + r->topo->nics[h].rx_ctrl_pkts;
  return r->net ? fab_run__net_sum(r, n) : n; /* over processes: the others' NICs are idle copies here */
}

static bool blocked(void *ctx, bool here) {
  const Run *r = ctx;
  return r->net ? fab_run__net_sum(r, here) != 0 : here;
}

/* On the engine's tick, or between a run over threads' windows. */
void fab_run__progress(FabEngine *eng, void *ctx) {
  Run *r = ctx;
  (void)eng;
  gint64 now = g_get_monotonic_time();
  if (r->last_report && now - r->last_report < 500000) return;
  r->last_report = now;
  if (r->progress_tty)
    fprintf(stderr, "\r  t=%.6f ms  flows %u/%u  events %" G_GUINT64_FORMAT "   ", (double)run_now(r) / 1e9,
            r->completed, r->nflows, run_events(r));
  if (r->progress_fd > 0)
    dprintf(r->progress_fd, "PROGRESS %.6f %u %u %" G_GUINT64_FORMAT "\n", (double)run_now(r) / 1e9, r->completed,
            r->nflows, run_events(r));
}

/* ---- wiring ------------------------------------------------------------------ */

/* Flow n (of op_of[n]) in a slot of its own, not posted yet. */
FabFlow *fab_run__flow_make(Run *r, uint32_t n) {
  const FabOp *o = fab_dag_op(r->sc->dag, *op_of(r, n));
  g_assert(*slot_of(r, n) == FAB_OP_NONE && rec_of(r, n)->start == 0 && rec_of(r, n)->end == 0);
  /* a run over threads: a slot the calling partition gave back, or a new one (fab_flow_table_fix); NVLS members
  ** are made before the executor exists, by the first batch's `grow` */
  FabFlow *f = fab_flow_table_take_in(&r->table, r->par && r->exec ? fab_exec_engine(r->exec)->part : 0);
  f->id = n;
  f->src = o->src;
  f->dst = o->dst;
  f->bytes = o->bytes;
  f->prio = o->prio;
  f->nvls = o->kind == FAB_OP_NVLS;
  f->nvls_mode = o->mark == FAB_NVLS_OP_RS    ? FAB_NVLS_RS
                 : o->mark == FAB_NVLS_OP_AG    ? FAB_NVLS_AG
                 : o->mark == FAB_NVLS_OP_SHARP ? FAB_NVLS_SHARP
                                                : FAB_NVLS_AR;
  fab_flow_prepare(f, &r->sc->fabric.nic);
  f->max_bps = o->max_bps;
  f->rank_bps = f->nvls ? 0 : o->rank_bps;
  if (f->nvls && o->seg && o->seg < f->mtu) { /* segments of a head's chunk (nvls_group may coarsen them) */
    f->mtu = (uint32_t)o->seg;
    f->npkts = (uint32_t)MAX((f->bytes + f->mtu - 1) / f->mtu, 1u);
  }
  f->lane = o->lane;
  f->ordered = r->sc->fabric.nic.srd_ordered && o->kind == FAB_OP_FLOW && o->coll < 0 && /* not NCCL's (nic.h) */
               f->path == FAB_PATH_NET;
  if (r->sc->fabric.nic.transport.kind == FAB_TRANSPORT_SRD && r->sc->nccl.ofi_protocol == FAB_OFI_SENDRECV &&
      o->kind == FAB_OP_FLOW && o->coll >= 0 && f->path == FAB_PATH_NET) /* NCCL's pieces: libfabric's protocols */
    f->read_rtt = fab_run__ctrl(r, f->src, f->dst) + fab_run__ctrl(r, f->dst, f->src);
  f->start = FAB_TIME_MAX; /* not posted yet */
  *slot_of(r, n) = f->slot;
  return f;
}

/* The flows' numbers (one per FLOW or NVLS op, in op order) and their
** records, for ops [from, to). A flow gets a slot when it is posted (an NVLS
** member when its group is set up), so the table holds the flows under way,
** not all. */
static void number_flows(Run *r, uint32_t from, uint32_t to) {
  const FabDag *dag = r->sc->dag;
  for (uint32_t i = from; i < to; i++) {
    const FabOp *o = fab_dag_op(dag, i);
    uint32_t *fo = fab_deq_push(&r->flow_of);
    *fo = FAB_OP_NONE;
    if (o->kind > FAB_OP_NVLS) continue;
    uint32_t n = r->nflows++;
    g_assert(n < FAB_OP_NONE);
    *fo = n;
    *(FabFlowRec *)fab_deq_push(&r->recs) = (FabFlowRec){.id = n, .src = o->src, .dst = o->dst, .bytes = o->bytes};
    *(uint32_t *)fab_deq_push(&r->slot_of) = FAB_OP_NONE;
    *(uint32_t *)fab_deq_push(&r->op_of) = i;
  }
}

/* cluster.nvlink.nvls_segment on the n member flows of one NVLS group, made with segments of a head's chunk
** (`unit`): finer segments if smaller; else as many whole units as fit in it, never more than a member's share
** of a reduce-scatter or allreduce (each member then owns what it owns at the chunk: a CollNet loop's
** reduce-scatter is one chunk a head). */
static void nvls_coarsen(Run *r, FabFlow *const *f, uint32_t n) {
  uint32_t user = r->sc->fabric.gpu.nvls_segment, unit = f[0]->mtu, seg = user;
  if (!user || f[0]->nvls_mode == FAB_NVLS_SHARP) return;
  if (user > unit) {
    uint64_t k = user / unit;
    if (f[0]->nvls_mode != FAB_NVLS_AG) k = MIN(k, MAX(f[0]->bytes / n / unit, 1u));
    seg = (uint32_t)(k * unit);
  }
  for (uint32_t m = 0; m < n; m++) f[m]->mtu = seg, f[m]->npkts = (uint32_t)MAX((f[m]->bytes + seg - 1) / seg, 1u);
}

/* NVLS group g's members (their ops in mem): a group at their domain's
** NVSwitch; FALSE when they are not 2 or more of one domain, or (AR, RS) do
** not all contribute the same segments (a generator's mistake). Member m
** owns the segments k = m (mod n). */
static bool nvls_group(Run *r, GArray *mem) {
  const FabDag *dag = r->sc->dag;
  uint32_t dom = r->sc->fabric.nic.nvl_domain;
  uint32_t n = mem->len, *port = g_new(uint32_t, n), *fid = g_new(uint32_t, n), *rank = g_new(uint32_t, n);
  FabFlow **made = g_new(FabFlow *, n), *f0;
  for (uint32_t m = 0; m < n; m++) made[m] = fab_run__flow_make(r, *flow_of(r, g_array_index(mem, uint32_t, m)));
  nvls_coarsen(r, made, n);
  f0 = made[0];
  g_free(made);
  bool ok = dom && n >= 2;
  uint32_t all = 0; /* AG: every member's segments */
  uint64_t all_bytes = 0;
  for (uint32_t m = 0; ok && m < n; m++) {
    uint32_t i = g_array_index(mem, uint32_t, m);
    FabFlow *f = fab_flow_at(&r->table, *slot_of(r, *flow_of(r, i)));
    rank[m] = fab_dag_op(dag, i)->src;
    ok = rank[m] / dom == rank[0] / dom && f->nvls_mode == f0->nvls_mode &&
         (f->nvls_mode == FAB_NVLS_AG || f->npkts == f0->npkts);
    port[m] = rank[m] % dom;
    fid[m] = f->slot;
    all += f->npkts;
    all_bytes += f->bytes;
  }
  if (ok) {
    FabNvls *nv = fab_switch_nvls(r->topo->nvs[rank[0] / dom]);
    fab_nvls_set_reduce_rate(nv, r->sc->fabric.gpu.nvls_reduce_bps);
    uint32_t sg = fab_nvls_add(nv, (FabNvlsMode)f0->nvls_mode, n, port, fid, rank, f0->npkts);
    for (uint32_t m = 0; m < n; m++) {
      FabFlow *f = fab_flow_at(&r->table, fid[m]);
      uint32_t own = f->npkts > m ? (f->npkts - m + n - 1) / n : 0;
      f->nvls_group = sg;
      f->nvls_member = m;
      f->nvls_n = n;
      f->nvls_own = f->nvls_mode == FAB_NVLS_AG ? 0 : own;
      f->nvls_need = f->nvls_mode == FAB_NVLS_AR ? f->npkts : f->nvls_mode == FAB_NVLS_RS ? own : all;
      f->nvls_rx = f->nvls_mode == FAB_NVLS_AR ? f->bytes : f->nvls_mode == FAB_NVLS_AG ? all_bytes : 0;
      for (uint32_t k = m; f->nvls_mode == FAB_NVLS_RS && k < f->npkts; k += n)
        f->nvls_rx += fab_flow_payload(f, f->mtu, k);
    }
  }
  g_free(port);
  g_free(fid);
  g_free(rank);
  return ok;
}

/* The NVLS groups of ops [from, to): a group's members are made together
** (in one batch of an unfolding DAG). */
static void make_nvls(Run *r, uint32_t from, uint32_t to) {
  const FabDag *dag = r->sc->dag;
  GHashTable *by = NULL; /* group -> its ops (GArray) */
  GArray *order = NULL;  /* the groups in order of first member */
  for (uint32_t i = from; i < to; i++) {
    const FabOp *o = fab_dag_op(dag, i);
    if (o->kind != FAB_OP_NVLS) continue;
    g_assert(o->group < dag->groups);
    if (!by) {
      by = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify)g_array_unref);
      order = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    }
    GArray *mem = g_hash_table_lookup(by, GUINT_TO_POINTER(o->group + 1));
    if (!mem) {
      mem = g_array_new(FALSE, FALSE, sizeof(uint32_t));
      g_hash_table_insert(by, GUINT_TO_POINTER(o->group + 1), mem);
      g_array_append_val(order, o->group);
    }
    g_array_append_val(mem, i);
  }
  for (guint k = 0; order && k < order->len; k++) {
    uint32_t g = g_array_index(order, uint32_t, k);
    GArray *mem = g_hash_table_lookup(by, GUINT_TO_POINTER(g + 1));
    if (fab_dag_op(dag, g_array_index(mem, uint32_t, 0))->mark == FAB_NVLS_OP_SHARP) {
      char *why = NULL;
      if (!fab_run__sharp_group(r, mem, &why) && !r->setup)
        r->setup = g_strdup_printf("internal error: SHARP group %u (op %u, %u members): %s", g,
                                   g_array_index(mem, uint32_t, 0), mem->len, why);
      g_free(why);
      continue;
    }
    if (!r->nvls_wait)
      r->nvls_wait = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify)g_array_unref);
    g_hash_table_steal(by, GUINT_TO_POINTER(g + 1));
    g_hash_table_insert(r->nvls_wait, GUINT_TO_POINTER(g + 1), mem);
  }
  if (by) g_hash_table_destroy(by);
  if (order) g_array_free(order, TRUE);
}

/* NVLS group g's first member is posted: its members' flows and the group at
** the switch, now (made with their batch, the flows of every NVLS loop of a
** training step would be held from the start). */
static void start_nvls(Run *r, uint32_t group) {
  GArray *mem = g_hash_table_lookup(r->nvls_wait, GUINT_TO_POINTER(group + 1));
  if (!mem) return;
  g_hash_table_steal(r->nvls_wait, GUINT_TO_POINTER(group + 1));
  if (!nvls_group(r, mem) && !r->setup) { /* fail the run, do not abort the process */
    r->setup = g_strdup_printf("internal error: NVLS group %u (op %u) has %u members, not 2 or more of one NVLink "
                               "domain doing the same with equal sizes", group, g_array_index(mem, uint32_t, 0),
                               mem->len);
    if (r->par) fab_par_stop(r->par);
    else fab_engine_stop(fab_exec_engine(r->exec));
  }
  g_array_unref(mem);
}

/* The way of a receiver-driven flow's control message (aws-ofi-nccl's
** RDMA protocol: one FAB_OFI_CTRL_BYTES mailbox write; NCCL's IB transport:
** one clear-to-send, a 64 B ncclIbSendFifo entry, alignas(64) in
** src/transport/net_ib.cc; under aws-ofi-nccl's SENDRECV protocol, a
** read-based message's request and the receiver's read request,
** models/nic.h) from endpoint `from` to `to` over the network, unloaded:
** each link's serialisation and latency and each switch's latency along
** the route (the hash of a message of its own; equal-cost paths are equally
** long). Queues are not counted: a lower bound (README). Every network
** piece of NCCL asks for it, twice: kept per pair of endpoints. */
static guint pair_hash(gconstpointer k) {
  gsize v = GPOINTER_TO_SIZE(k);
  return (guint)(v ^ (v >> 32) * 2654435761u);
}

fab_time_t fab_run__ctrl(void *ctx, uint32_t from, uint32_t to) {
  Run *r = ctx;
  gpointer key = GSIZE_TO_POINTER(((gsize)from << 32 | to) + 1);
  if (!r->ctrl_ps) r->ctrl_ps = g_hash_table_new(pair_hash, g_direct_equal);
  gpointer had = g_hash_table_lookup(r->ctrl_ps, key);
  if (had) return (fab_time_t)GPOINTER_TO_SIZE(had) - 1;
  uint32_t wire = FAB_OFI_CTRL_BYTES + r->sc->fabric.nic.transport.data_overhead;
  const FabPort *p = &r->topo->nics[from].port;
  fab_time_t t = 0;
  for (int hop = 0; p && p->peer && hop < 64; hop++) {
    t += fab_time_ser(wire, p->bps) + p->latency;
    FabSwitch *sw = fab_switch_of(p->peer->owner);
    if (!sw) break; /* a NIC: there */
    t += fab_switch_cfg(sw)->latency;
    p = fab_switch_next_hop(sw, to, from * 2654435761u ^ to);
  }
  g_hash_table_insert(r->ctrl_ps, key, GSIZE_TO_POINTER((gsize)t + 1));
  return t;
}

/* The executor took ops [from, to) in: the first batch as it is made, then
** each batch an unfolding DAG makes. */
static void grow(void *ctx, uint32_t from, uint32_t to) {
  Run *r = ctx;
  number_flows(r, from, to);
  make_nvls(r, from, to);
  uint32_t bad, checked = (uint32_t)fab_deq_end(&r->cpart);
  /* a run already failing (r->setup) checks no more: its reporters' list stops at the op that failed */
  const char *why = r->par && !r->setup && to > checked ? fab_run__cross_check(r, MAX(from, checked), to, &bad) : NULL;
  if (why && !r->setup) { /* made as the run goes: too late to run on one thread */
    r->setup = g_strdup_printf("operation %u, made as the run went: %s (%.3f us): this run cannot go over "
                               "threads; run it without --threads", bad, why, (double)r->lookahead / 1e6);
    fab_par_stop(r->par);
  }
}

/* Every port of the fabric, in the topology's stable order. */
static void add_port(FabPort *pt, void *ctx) { g_ptr_array_add(ctx, pt); }

#ifdef FAB_DEBUG_CHECKS
static void check_port(FabPort *pt, void *ctx) {
  (void)ctx;
  fab_port_check(pt);
}

static void check_ledgers(FabEngine *eng, void *ctx) {
  (void)eng;
  Run *r = ctx;
  for (uint32_t w = 0; w < r->topo->nswitches; w++) fab_switch_check(r->topo->switches[w]);
  fab_topology_foreach_port(r->topo, check_port, NULL);
}
#endif

static void wire(Run *r, const FabRunOpts *opts) {
  const FabScenario *sc = r->sc;
  r->topo = fab_topology_build(&sc->fabric);
  if (sc->fabric.sharp.enabled) fab_run__sharp_make(r);
  fab_failures_as_built(r->topo, &sc->fabric); /* before a parallel run's cut takes the latencies */
  uint32_t id = fab_topology_number(r->topo, 2); /* 0, 1: the watchdog's and the sampler's (first at their time) */
  r->net = opts->net && opts->net->n > 1 ? opts->net : NULL;
  if (opts->threads > 1 || r->net) /* the executor's id too, and the failures' */
    fab_run__par_make(r, opts, id + 1 + (sc->fabric.nchanges != 0));
  r->eng = r->par ? fab_par_engine(r->par, r->net ? r->net->self : 0) : fab_engine_new(sc->seed, sizeof(FabPkt));
  const char *tr = r->par ? NULL : g_getenv("FABSIM_EVENT_TRACE"); /* a benchmark's bare loop (trace_rec) */
  if (tr && !(r->evtrace = fopen(tr, "wb"))) fprintf(stderr, "fabsim: FABSIM_EVENT_TRACE: %s: cannot write\n", tr);
  if (r->evtrace) fab_evq_record(r->eng->evq, trace_rec, r);
  fab_flow_table_init(&r->table);
  fab_deq_init(&r->recs, sizeof(FabFlowRec));
  fab_deq_init(&r->flow_of, sizeof(uint32_t));
  fab_deq_init(&r->op_of, sizeof(uint32_t));
  fab_deq_init(&r->slot_of, sizeof(uint32_t));
  r->unfolds = sc->dag->more && !sc->dag->exhausted;
  r->keep_flows = !r->unfolds || sc->hdf5 || opts->keep_flows;
  static const FabExecHooks hooks = {post, compute, reduce, grow, fab_run__ctrl, fab_run__op_part, fab_run__woke};
  r->exec = fab_exec_new(r->eng, sc->dag, &hooks, r); /* numbers the first batch's flows (grow) */
  r->coll = fab_collect_new(sc->dag);
  for (uint32_t h = 0; h < r->topo->nhosts; h++) {
    FabNic *nic = &r->topo->nics[h];
    nic->flows = &r->table;
    if (r->par) {
      fab_run__par_attach(r, h);
    } else {
      nic->done = fab_run__flow_done;
      nic->fail = flow_fail;
      nic->sent = fab_run__flow_sent;
      nic->release = fab_run__flow_release;
      nic->ctx = r;
      r->topo->gpus[h].done = fab_run__gpu_done;
      r->topo->gpus[h].ctx = r;
    }
  }
  if (r->net) fab_run__net_attach(r);
  fab_elem_set_id(fab_exec_elem(r->exec), id++);
  if (r->par) {
    fab_exec_set_lock(r->exec, &r->lock);
    fab_flow_table_fix(&r->table, fab_par_parts(r->par)); /* slots taken under the lock while partitions look */
  }
  if (sc->hdf5 || opts->sample_queues) {
    /* a DAG made as it goes has no flow count up front: no per-flow rates (as with more than FAB_RATE_FLOWS) */
    r->sampler = fab_sampler_new(r->topo, sc->sample_interval, sc->fabric.sw.nprio, r->unfolds ? UINT32_MAX : r->nflows,
                                 flow_by_number,
                                 finished, r);
    /* 256 MB of samples, or 4096 rows when rows are larger, but never more than half of what the estimate
    ** leaves of this run's memory: a run sampled too finely for its length keeps its span, coarser */
    uint64_t lim = fab_scenario_mem_limit(), rest = lim > sc->mem_bytes ? lim - sc->mem_bytes : 0;
    uint64_t row = fab_sampler_row_bytes(r->sampler);
    fab_sampler_set_max_bytes(r->sampler, MIN(rest / 2, MAX(256ull << 20, 4096 * row)));
    fab_elem_set_id(fab_sampler_elem(r->sampler), 1);
  }
  const FabPfcCfg *pfc = &sc->fabric.sw.pfc;
  if ((pfc->enabled || sc->fabric.sw.credits) && pfc->watchdog) { /* lossless: PFC or InfiniBand credits */
    GPtrArray *ports = g_ptr_array_new();
    fab_topology_foreach_port(r->topo, add_port, ports);
    static const FabWatchdogHooks wh = {finished, delivered, blocked};
    static const FabWatchdogHooks wh_net = {finished, delivered, blocked, fab_run__wd_gather, fab_run__wd_blocked,
                                            fab_run__wd_holders};
    r->wd = fab_watchdog_new(pfc->watchdog, r->topo->switches, r->topo->nswitches, (FabPort *const *)ports->pdata,
                             ports->len, r->net ? &wh_net : &wh, r);
    g_ptr_array_free(ports, TRUE);
    fab_elem_set_id(fab_watchdog_elem(r->wd), 0);
  }
  if (sc->fabric.nchanges) { /* over partitions, a copy each with the same id (they run anywhere: FAB_PAR_ANY) */
    r->nfx = r->par ? fab_par_parts(r->par) : 1;
    r->fx = g_new0(FabFailures *, r->nfx);
    for (uint32_t k = 0; k < r->nfx; k++) {
      r->fx[k] = r->par ? fab_failures_new_part(r->topo, &sc->fabric, r->par, k) : fab_failures_new(r->topo, &sc->fabric);
      fab_elem_set_id(fab_failures_elem(r->fx[k]), id);
    }
    id++;
  }
  r->ff = fab_ff_new(r, id++, &r->ff_why);
#ifdef FAB_DEBUG_CHECKS
  if (!r->par) { /* it reads every switch: not while partitions run on threads */
    r->eng->check = check_ledgers; /* every event: slow, for the small scenarios of the debug_checks suite */
    r->eng->check_ctx = r;
  }
#endif
  r->progress_tty = opts->progress;
  r->progress_fd = opts->progress_fd;
  const bool report = opts->progress || opts->progress_fd > 0;
  r->progress = report && r->par; /* between windows */
  if (report && !r->par) {
    r->eng->tick = fab_run__progress;
    r->eng->tick_ctx = r;
  }
}

/* ---- invariants --------------------------------------------------------------- */

/* Append "why" to the failure text. */
static void failf(GString **fail, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void failf(GString **fail, const char *fmt, ...) {
  va_list ap;
  if (!*fail) *fail = g_string_new(NULL);
  else g_string_append(*fail, "; ");
  va_start(ap, fmt);
  g_string_append_vprintf(*fail, fmt, ap);
  va_end(ap);
}

/* Why the run stopped short, if it did: a deadlock, a stall, a flow that gave
** up, a DAG that could not run, operations left over. */
static void check_end(const Run *r, bool drained, GString **fail) {
  const FabScenario *sc = r->sc;
  uint32_t ncyc = 0, nops = fab_exec_ops(r->exec), done = fab_exec_ops_done(r->exec);
  FabPort *const *cyc = r->wd ? fab_watchdog_cycle(r->wd, &ncyc) : NULL;
  if (r->wd && fab_watchdog_stalled(r->wd) && ncyc) {
    GString *c = g_string_new(NULL);
    for (uint32_t i = 0; i <= ncyc; i++) {
      char name[FAB_FIELD_NAME_LEN];
      fab_port_name(name, cyc[i % ncyc]);
      g_string_append_printf(c, "%s%s", i ? " -> " : "", name);
    }
    bool ib = sc->fabric.sw.credits != 0;
    failf(fail, "%s deadlock at %.6f ms: a cycle of %s ports: %s", ib ? "credit" : "PFC",
          fab_time_to_s(run_now(r)) * 1e3, ib ? "credit-starved" : "paused", c->str);
    g_string_free(c, TRUE);
  } else if (r->wd && fab_watchdog_stalled(r->wd)) {
    failf(fail, "no progress for %.6g ms with %u of %u flows unfinished (a PFC stall; no cycle of paused ports)",
          fab_time_to_s(sc->fabric.sw.pfc.watchdog) * 1e3, r->nflows - r->completed, r->nflows);
  } else if (r->failed) {
    failf(fail, "flow %u (%u -> %u) made no progress after %u retransmission timeouts", r->failed->id,
          r->failed->src, r->failed->dst, sc->fabric.nic.max_timeouts);
  } else if (r->setup) {
    failf(fail, "%s", r->setup);
  } else if (done < nops && drained && sc->stop_time == FAB_TIME_MAX) {
    uint32_t left, i = fab_exec_first_waiting(r->exec, &left);
    failf(fail, "internal error: %u of %u operations never became ready (the first, op %u, waits for %u more)",
          nops - done, nops, i != FAB_OP_NONE ? i : 0, left);
  } else if (done < nops) {
    failf(fail, "stop_time reached with %u of %u flows unfinished (%u of %u operations)", r->nflows - r->completed,
          r->nflows, nops - done, nops);
  }
  uint32_t op, dep;
  if (!fab_exec_check_order(r->exec, &op, &dep))
    failf(fail, "internal error: op %u began at %" G_GUINT64_FORMAT " ps before op %u it depends on was done", op,
          fab_exec_began(r->exec, op), dep);
}

typedef struct Totals {
  uint64_t hops, drops, drop_bytes, max_q, pauses;
  uint64_t lost, lost_bytes; /* lost on links that went down (fabric.failures) */
  fab_time_t paused, now;
  FabEngine *eng;
  uint64_t flushed, flushed_bytes; /* packets (and bytes) freed from queues, serialisers and wires */
} Totals;

static void add_totals(FabPort *pt, void *ctx) {
  Totals *t = ctx;
  t->hops += pt->tx_pkts;
  t->lost += pt->lost;
  t->lost_bytes += pt->lost_bytes;
  t->pauses += pt->pause_tx;
  t->paused += fab_port_paused_time(pt, t->now);
  if (pt->max_qbytes > t->max_q && pt->owner->pull == NULL) t->max_q = pt->max_qbytes;
}

static void fold_far(FabPort *pt, void *ctx) {
  (void)ctx;
  fab_port_fold_far_losses(pt);
}

FabLinkChangeRec *fab_run__failure_records(Run *r, uint32_t *n) {
  FabLinkChangeRec *all = NULL;
  for (uint32_t k = 0; k < r->nfx; k++) {
    if (r->net && k != r->net->self) continue; /* the others' are theirs (fx_others) */
    const FabLinkChangeRec *c = fab_failures_records(r->fx[k], n);
    if (all) fab_failures_merge(all, c, *n);
    else all = g_memdup2(c, MAX(*n, 1u) * sizeof *c);
  }
  return all;
}

static void flush_one(FabPort *pt, void *ctx) {
  Totals *t = ctx;
  t->flushed += fab_port_flush(t->eng, pt, &t->flushed_bytes);
}

/* Conservation: every packet (and byte) a NIC sent was received by a NIC,
** dropped by a switch, or is still in the fabric when stop_time cut the run;
** the pool ends empty; a completed flow holds exactly its bytes. Empties the
** fabric. */
static void check_packets(Run *r, bool drained, Totals *tot, GString **fail) {
  uint64_t sent = 0, recv = 0, sent_b = 0, recv_b = 0;
  uint32_t ack_b = r->sc->fabric.nic.transport.ack_bytes;
  for (uint32_t h = 0; h < r->topo->nhosts; h++) {
    const FabNic *n = &r->topo->nics[h];
    uint32_t reads = 0;
    for (uint32_t k = 0; k < FAB_EFA_RAILS; k++) reads += n->reads_open[k];
    if (drained && (reads || (n->runt_out && g_hash_table_size(n->runt_out)))) /* all were acknowledged */
      failf(fail, "internal error: NIC %u ends with %u read-based messages under way and runt budget held", h,
            reads);
    tot->flushed += fab_pxn_flush(tot->eng, &r->topo->nics[h], &tot->flushed_bytes); /* PXN: what a relay held */
    sent += n->tx_data_pkts + n->tx_ctrl_pkts;
    recv += n->rx_data_pkts + n->rx_ctrl_pkts;
    sent_b += n->tx_data_bytes + n->tx_ctrl_pkts * ack_b;
    recv_b += n->rx_data_bytes + n->rx_ctrl_pkts * ack_b;
  }
  for (uint32_t s = 0; s < r->topo->nswitches; s++) {
    tot->drops += fab_switch_stats(r->topo->switches[s])->drops;
    tot->drop_bytes += fab_switch_stats(r->topo->switches[s])->drop_bytes;
  }
  fab_topology_foreach_port(r->topo, flush_one, tot);
  if (tot->flushed && drained) failf(fail, "internal error: packets left in the fabric after the last event");
  if (sent != recv + tot->drops + tot->lost + tot->flushed ||
      sent_b != recv_b + tot->drop_bytes + tot->lost_bytes + tot->flushed_bytes)
    failf(fail, "internal error: packets not conserved (sent %" G_GUINT64_FORMAT ", received %" G_GUINT64_FORMAT
          ", dropped %" G_GUINT64_FORMAT ", lost on failed links %" G_GUINT64_FORMAT ", in flight %"
          G_GUINT64_FORMAT ")", sent, recv, tot->drops, tot->lost, tot->flushed);
  if (run_live(r) != 0) failf(fail, "internal error: %zu packets leaked from the pool", run_live(r));
  /* the flows still holding a slot (released ones were checked then) */
  for (uint32_t i = (uint32_t)r->slot_of.first; i < fab_deq_end(&r->slot_of); i++)
    if (*slot_of(r, i) != FAB_OP_NONE) check_bytes(r, fab_flow_at(&r->table, *slot_of(r, i)));
  if (r->bad_flow) failf(fail, "%s", r->bad_flow);
}

/* ---- results ----------------------------------------------------------------- */

typedef struct LinkFill {
  GArray *a;
  fab_time_t now;
  FabLayers *layers; /* what each link joins (sampler.h) */
} LinkFill;

static void fill_link(FabPort *pt, void *ctx) {
  LinkFill *lf = ctx;
  FabLinkRec l = {{0}, {0}, pt->bps, pt->tx_bytes, pt->tx_pkts, pt->drops, pt->max_qbytes,
                  pt->pause_tx, pt->pause_rx, fab_port_paused_time(pt, lf->now), pt->ecn_marks,
                  fab_layer_names[fab_layers_of(lf->layers, pt)]};
  fab_port_name(l.from, pt);
  fab_port_name(l.to, pt->peer);
  g_array_append_val(lf->a, l);
}

static void fill_results(Run *r, bool drained, const Totals *tot, FabResults *res) {
  const FabScenario *sc = r->sc;
  res->version = FABSIM_VERSION;
  res->scenario = sc->name;
  res->scenario_text = fab_cfg_text(sc->cfg);
  res->topology = sc->topology;
  res->seed = sc->seed;
  if (fab_exec_finished(r->exec)) res->sim_time = fab_exec_last_end(r->exec);
  else if (!drained && !r->failed && sc->stop_time != FAB_TIME_MAX) res->sim_time = sc->stop_time; /* cut */
  else res->sim_time = run_now(r);
  res->events = run_events(r);
  res->partitions = r->par ? fab_par_parts(r->par) : 1;
  res->packet_hops = tot->hops;
  res->endpoints = r->topo->nhosts;
  res->nvlink_segment = sc->fabric.nic.nvl_domain ? sc->fabric.nic.nvl_mtu : 0;
  res->fabric_segment = sc->fabric.nic.seg;
  res->nvls_segment = sc->fabric.gpu.nvls_segment; /* refused at load where NVLS is off */
  res->drops = tot->drops + tot->lost;
  if (r->fx) {
    uint32_t n;
    const FabLinkChangeRec *c = r->fx_rec;
    n = r->sc->fabric.nchanges;
    res->n_failures = n;
    res->failures = g_new0(FabFailureRec, n ? n : 1);
    for (uint32_t i = 0; i < n; i++) {
      FabFailureRec *f = &res->failures[i];
      g_strlcpy(f->link, c[i].link, sizeof f->link);
      f->change = c[i].change;
      f->at = c[i].at;
      f->bps = c[i].bps;
      f->lost = c[i].lost;
      f->lost_bytes = c[i].lost_bytes;
      f->rerouted = c[i].rerouted;
      f->rerouted_at = c[i].rerouted_at;
    }
  }
  res->max_queue_bytes = tot->max_q;
  res->pfc_pause_frames = tot->pauses;
  res->pfc_paused = tot->paused;
  res->n_reorder = FAB_REORDER_BINS;
  res->reorder = g_new0(FabReorderBin, FAB_REORDER_BINS);
  for (uint32_t b = 0; b < FAB_REORDER_BINS; b++) res->reorder[b].ahead = fab_reorder_bin_names[b];
  for (uint32_t h = 0; h < r->topo->nhosts; h++) {
    for (uint32_t b = 0; b < FAB_REORDER_BINS; b++) res->reorder[b].packets += r->topo->nics[h].reorder_hist[b];
    res->retransmits += r->topo->nics[h].retransmits;
    res->cnps += r->topo->nics[h].cnps_sent;
  }
  for (uint32_t s = 0; s < r->topo->nswitches; s++) res->ecn_marks += fab_switch_stats(r->topo->switches[s])->ecn_marks;
  for (uint32_t i = (uint32_t)r->slot_of.first; i < fab_deq_end(&r->slot_of); i++) /* those still holding a slot */
    if (*slot_of(r, i) != FAB_OP_NONE) record(r, fab_flow_at(&r->table, *slot_of(r, i)));
  FabCollectIn in = {sc->dag, r->exec, rec_for, nic_for, r, NULL};
  fab_collect_finish(r->coll, &in, res);
  if (r->keep_flows) { /* every record (none retired) */
    g_assert(r->recs.first == 0 && r->recs.len == r->nflows);
    res->n_flows = r->nflows;
    res->flows = fab_deq_steal(&r->recs);
  } else { /* the summary of them all */
    for (uint32_t k = (uint32_t)r->recs.first; k < fab_deq_end(&r->recs); k++) fab_flow_fold_add(&r->fold, rec_of(r, k));
    res->flow_fold = r->fold;
    memset(&r->fold, 0, sizeof r->fold);
  }
  res->flow_slots = r->table.used;
  res->ops_held = fab_exec_peak(r->exec);
  LinkFill lf = {g_array_new(FALSE, FALSE, sizeof(FabLinkRec)), res->sim_time, fab_layers_new(r->topo)};
  fab_topology_foreach_port(r->topo, fill_link, &lf);
  fab_layers_free(lf.layers);
  res->n_links = lf.a->len;
  res->links = (FabLinkRec *)(void *)g_array_free(lf.a, FALSE);
  char *thinned = NULL;
  if (r->sampler && fab_sampler_interval(r->sampler) != r->sc->sample_interval)
    thinned = g_strdup_printf("queue samples kept every %.6g us, not every %.6g us (output.sample_interval): at "
                              "that interval they would not fit in the memory this run may use",
                              (double)fab_sampler_interval(r->sampler) / 1e6, (double)r->sc->sample_interval / 1e6);
  if (r->sampler) fab_sampler_take(r->sampler, &res->queues);
  uint32_t ncyc = 0;
  FabPort *const *cyc = r->wd ? fab_watchdog_cycle(r->wd, &ncyc) : NULL;
  size_t nw = r->sc->warnings ? r->sc->warnings->len : 0;
  res->n_warnings = nw + (thinned != NULL);
  res->warnings = g_new0(char *, res->n_warnings + 1);
  for (size_t i = 0; i < nw; i++) res->warnings[i] = g_strdup(g_ptr_array_index(r->sc->warnings, i));
  if (thinned) res->warnings[nw] = thinned;
  res->n_deadlock = ncyc;
  res->deadlock = g_malloc0((size_t)FAB_FIELD_NAME_LEN * (ncyc ? ncyc : 1));
  for (uint32_t i = 0; i < ncyc; i++) fab_port_name(res->deadlock[i], cyc[i]);
}

static void add_warning(FabResults *res, char *w) {
  res->warnings = g_renew(char *, res->warnings, res->n_warnings + 2);
  res->warnings[res->n_warnings++] = w;
  res->warnings[res->n_warnings] = NULL;
}

/* The fast-forward's record and what it cost in fidelity (fastfwd.h). */
static void ff_results(Run *r, FabResults *res) {
  if (r->ff_why) add_warning(res, g_strdup(r->ff_why));
  if (!r->ff) return;
  res->ff = g_new0(FabFfRec, 1);
  fab_ff_report(r->ff, res->ff);
  FabFfRec *f = res->ff;
  f->skipped_fraction = res->sim_time ? (double)f->skipped / (double)res->sim_time : 0;
  if (f->jumps)
    add_warning(res, g_strdup_printf(
      "fabric.fast_forward: %" G_GUINT64_FORMAT " jumps over steady states skipped %.6g us of %.6g us simulated "
      "(%.1f %%) and %" G_GUINT64_FORMAT " data packets: the fabric's state was carried over them, not simulated; "
      "link counters (bytes, packets, ECN marks, pauses) count the skipped time, NIC packet counters do not",
      f->jumps, fab_time_to_s(f->skipped) * 1e6, fab_time_to_s(res->sim_time) * 1e6, f->skipped_fraction * 100,
      f->skipped_packets));
}

static void run_free(Run *r) {
  if (r->evtrace && (ferror(r->evtrace) | fclose(r->evtrace))) /* a short trace: bench_bare refuses it too */
    fprintf(stderr, "fabsim: FABSIM_EVENT_TRACE: %s: a write failed; the trace is incomplete\n",
            g_getenv("FABSIM_EVENT_TRACE"));
  fab_ff_free(r->ff);
  g_free(r->ff_why);
  if (r->ctrl_ps) g_hash_table_destroy(r->ctrl_ps);
  if (r->nvls_wait) g_hash_table_destroy(r->nvls_wait);
  fab_sampler_free(r->sampler);
  fab_watchdog_free(r->wd);
  for (uint32_t k = 0; k < r->nfx; k++) fab_failures_free(r->fx[k]);
  g_free(r->fx);
  g_free(r->fx_others);
  g_free(r->fx_rec);
  fab_exec_free(r->exec);
  fab_collect_free(r->coll);
  g_free(r->setup);
  fab_flow_table_clear(&r->table);
  fab_deq_clear(&r->recs);
  g_free(r->bad_flow);
  fab_deq_clear(&r->flow_of);
  fab_deq_clear(&r->op_of);
  fab_deq_clear(&r->slot_of);
  fab_flow_fold_clear(&r->fold);
  fab_topology_free(r->topo);
  fab_sharp_free(r->sharp);
  if (r->par) fab_run__par_free(r);
  else fab_engine_free(r->eng);
}

/* Whether link record l runs from element a to element b. */
static bool link_between(const FabLinkRec *l, const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  return !strncmp(l->from, a, na) && l->from[na] == ':' && !strncmp(l->to, b, nb) && l->to[nb] == ':';
}

/* What the links named in fabric.failures carried less in `res` than in
** `base` (the same fabric: the same links in the same order). */
static uint64_t moved_bytes(const FabScenario *sc, const FabResults *res, const FabResults *base) {
  uint64_t moved = 0;
  if (res->n_links != base->n_links) return 0;
  for (size_t i = 0; i < res->n_links; i++) {
    const FabLinkRec *l = &res->links[i], *b = &base->links[i];
    if (strcmp(l->from, b->from) || strcmp(l->to, b->to)) return 0;
    bool named = false;
    for (uint32_t k = 0; k < sc->fabric.nchanges && !named; k++) {
      const FabLinkChange *c = &sc->fabric.changes[k];
      named = link_between(l, c->a, c->b) || link_between(l, c->b, c->a);
    }
    if (named && b->bytes > l->bytes) moved += b->bytes - l->bytes;
  }
  return moved;
}

/* fabric.failures against the same scenario without them (fabric.
** failure_baseline): a second run, compared in res->impact. A baseline
** that cannot be had is a warning of this run, not its failure. On
** `threads` when the run itself went over threads (the same cut: the
** same fabric without its changes). */
static void failure_baseline(const FabScenario *sc, uint32_t threads, FabResults *res) {
  GError *err = NULL;
  FabScenario *b = fab_scenario_reload(sc, "fabric.failures=[]", &err);
  FabResults base = {0};
  int rc = 1;
  if (b) {
    b->hdf5 = NULL;
    rc = fab_run(b, &(FabRunOpts){.threads = threads}, &base);
  }
  if (rc) {
    res->warnings = g_renew(char *, res->warnings, res->n_warnings + 2);
    res->warnings[res->n_warnings++] = g_strdup_printf("no failure baseline (failure_impact is null): the run "
                                                       "without fabric.failures %s", err ? err->message :
                                                       base.failure ? base.failure : "failed");
    res->warnings[res->n_warnings] = NULL;
  } else {
    FabFailureImpact *m = res->impact = g_new0(FabFailureImpact, 1);
    m->baseline_time = base.sim_time;
    m->slowdown = base.sim_time ? (double)res->sim_time / (double)base.sim_time - 1 : 0;
    m->baseline_fct_p50_s = base.flow_stats.fct_p50_s;
    m->baseline_fct_p99_s = base.flow_stats.fct_p99_s;
    m->baseline_fct_max_s = base.flow_stats.fct_max_s;
    m->baseline_retransmits = base.retransmits;
    m->moved_bytes = moved_bytes(sc, res, &base);
  }
  if (err) g_error_free(err);
  fab_results_clear(&base);
  fab_scenario_free(b);
}

static bool run_drained(const Run *r) {
  if (!r->par) return fab_evq_size(r->eng->evq) == 0;
  uint64_t left = 0;
  for (uint32_t k = 0; k < fab_par_parts(r->par); k++) left += fab_evq_size(fab_par_engine(r->par, k)->evq);
  return (r->net ? fab_run__net_sum(r, left) : left) == 0;
}

/* A run over processes is over: each empties its part of the fabric, and
** the first gathers every process's counters into its copies of the
** elements the others ran (run_net.c). false: not the first. */
static bool net_end(Run *r, bool drained, Totals *tot, GString **fail) {
  fab_topology_foreach_port(r->topo, flush_one, tot); /* the others' are empty copies here */
  FabNetTotals nt = {.flushed = tot->flushed, .flushed_bytes = tot->flushed_bytes};
  if (!fab_run__net_gather(r, &nt)) return false;
  r->gathered = true;
  r->net_tot = nt;
  tot->flushed = nt.flushed;
  tot->flushed_bytes = nt.flushed_bytes;
  if (drained && nt.runt_held)
    failf(fail, "internal error: a NIC another process ran ends with runt budget held");
  return true;
}

int fab_run(const FabScenario *sc, const FabRunOpts *opts, FabResults *res) {
  Run r = {.sc = sc};
  GString *fail = NULL;
  memset(res, 0, sizeof *res);
  wire(&r, opts);
  if (r.elsewhere) { /* over processes, but it cannot be split: the first runs it alone */
    run_free(&r);
    res->elsewhere = true;
    return 0;
  }
  fab_exec_start(r.exec); /* the roots first, then the sampler's and the watchdog's first events */
  if (r.par) { /* the observers look between windows (observe) */
    r.wd_next = r.wd ? fab_watchdog_period(r.wd) : FAB_TIME_MAX;
    r.sample_next = FAB_TIME_MAX;
    fab_time_t next;
    if (r.sampler && (r.eng->events += !r.net || r.net->self == 0, fab_sampler_look(r.sampler, 0, &next)))
      r.sample_next = next; /* at 0; counted once over processes */
    if (MIN(r.wd_next, r.sample_next) != FAB_TIME_MAX) fab_par_sync_at(r.par, MIN(r.wd_next, r.sample_next));
  } else {
    if (r.sampler) fab_sampler_start(r.eng, r.sampler);
    if (r.wd) fab_watchdog_start(r.eng, r.wd);
    if (r.ff) fab_ff_start(r.eng, r.ff);
  }
  if (r.evtrace && r.ff) { /* a jump moves the queue's events into a new one: nothing to replay */
    fprintf(stderr, "fabsim: FABSIM_EVENT_TRACE: not with fabric.fast_forward; no trace written\n");
    fab_evq_record(r.eng->evq, NULL, NULL);
    g_clear_pointer(&r.evtrace, fclose);
    remove(g_getenv("FABSIM_EVENT_TRACE"));
  }
  for (uint32_t k = 0; k < r.nfx; k++) /* over processes, each starts its partition's copy */
    if (!r.net || k == r.net->self) fab_failures_start(r.par ? fab_par_engine(r.par, k) : r.eng, r.fx[k]);
  gint64 t0 = g_get_monotonic_time();
  bool time_ok = r.setup ? true : r.par ? fab_par_run(r.par, sc->stop_time) : fab_engine_run(r.eng, sc->stop_time);
  res->wall_s = (double)(g_get_monotonic_time() - t0) / 1e6;
  if (opts->progress) fprintf(stderr, "\r%70s\r", "");
  if (opts->progress_fd > 0) { /* the last record: where the run ended */
    r.progress_tty = false, r.last_report = 0;
    fab_run__progress(r.eng, &r);
  }
  if (!time_ok) failf(&fail, "internal error: an event was scheduled in the past");
  bool drained = run_drained(&r);
  Totals tot = {.eng = r.eng};
  if (r.par && !drained) fab_run__par_flush(&r, &tot.flushed, &tot.flushed_bytes);
  if (r.net && !net_end(&r, drained, &tot, &fail)) { /* the first process writes the results */
    run_free(&r);
    res->elsewhere = true;
    return 0;
  }
  if (r.fx) { /* its records first: they count what cut wires lost by itself */
    uint32_t n;
    r.fx_rec = fab_run__failure_records(&r, &n);
    if (r.fx_others) fab_failures_merge(r.fx_rec, r.fx_others, n);
  }
  fab_topology_foreach_port(r.topo, fold_far, NULL); /* losses on cut wires, counted at their far ends */
  check_end(&r, drained, &fail);
  tot.now = run_now(&r);
  fab_topology_foreach_port(r.topo, add_totals, &tot);
  check_packets(&r, drained, &tot, &fail);
  char *unkept = fab_run__sharp_check(&r, drained);
  if (unkept) failf(&fail, "%s", unkept);
  g_free(unkept);
  fill_results(&r, drained, &tot, res);
  fab_run__sharp_results(&r, res);
  ff_results(&r, res);
  res->failure = fail ? g_string_free(fail, FALSE) : NULL;
  fab_results_finalize(res);
  run_free(&r);
  if (!res->failure && sc->fabric.nchanges && sc->fabric.failure_baseline) failure_baseline(sc, !opts->net && res->partitions > 1 ? opts->threads : 1, res);
  return res->failure ? 1 : 0;
}

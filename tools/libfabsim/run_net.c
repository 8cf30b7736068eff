/* A run over processes (MPI): the driver's part for it. See run_int.h.
**
** Every process builds the whole run: the fabric, the workload's DAG, the
** executor, the flow table. It runs the events of its own partition only
** (sim/par.h). What the executor decides stays the same everywhere, because
** every process hears every report: its own elements' at once, the others'
** at the end of the window they came in (their payload, before that
** window's events are taken in). The dependency rule (partition.h) makes
** that soon enough: an op made ready by another partition's report begins
** at least a lookahead after it, so in a later window. The executor's
** actions on another process's elements are left to that process, which
** takes the same decision: a flow is posted, a GPU given work, an op's
** start-time event scheduled only where its element runs
** (fab_run__here). So each process holds a record of every flow under way,
** in a slot of its own table: a packet crossing to another process names
** its flow by number on the way (codec_fix), and by that process's slot
** on arrival.
**
** A flow whose two ends run in two processes is released when both have
** said (REP_HALF, at a window's end) that their end is done, and their
** shares of its packets in flight add up to none: then nothing of it is
** anywhere, and every process releases it at the same window's end, with
** what each end knows of it (retransmissions at the sender, the last
** byte's time and the bytes received at the receiver). A flow whose two
** ends run in one process is released there, and the others hear of it
** (REP_REL). At the end, every process sends the counters of the elements
** it ran (ports, NICs, switches) and what the ends of the flows still
** held know of them to the first, which writes the results. */
#include <string.h>
#include "run_int.h"

enum { REP_DONE = 1, REP_SENT, REP_GPU, REP_WAKE, REP_FAIL, REP_HALF, REP_REL };

typedef struct Rep {
  uint8_t kind;
  uint8_t which;         /* REP_GPU: the lane; REP_HALF: the end (0 sender, 1 receiver) */
  uint16_t pad;
  uint32_t n;            /* the flow's number; REP_WAKE: the op; REP_GPU: the tag */
  fab_time_t t;          /* when (not REP_HALF, REP_REL) */
  fab_time_t began;      /* REP_GPU */
  uint32_t share;        /* REP_HALF: this end's share of the flow's packets in flight (FabFlow.inflight) */
  uint32_t retransmits;  /* the sender's */
  uint32_t reorder;      /* the receiver's */
  uint32_t pad2;
  fab_time_t end;        /* the receiver's: the last byte's time (0: not yet) */
  uint64_t rcv_bytes;    /* the receiver's */
} Rep;

/* What the ends of a flow that two processes run said. */
typedef struct Half {
  bool tx, rx;
  uint32_t tx_share, rx_share;
  Rep fields; /* retransmits from the sender, the rest from the receiver */
} Half;

static inline bool here(const Run *r, uint32_t ep) { return r->ep_rank[ep] == r->net->self; }

bool fab_run__here(const Run *r, uint32_t ep) { return !r->net || here(r, ep); }

static void log_rep(Run *r, const Rep *x) { g_byte_array_append(r->log, (const guint8 *)x, sizeof *x); }

static FabFlow *replica(const Run *r, uint32_t n) {
  uint32_t slot = n >= r->slot_of.first && n < fab_deq_end(&r->slot_of) ? *slot_of(r, n) : FAB_OP_NONE;
  if (slot == FAB_OP_NONE) g_error("fabsim: internal error: a run over processes has no record of flow %u", n);
  return fab_flow_at(&r->table, slot);
}

/* ---- reports: told to the executor here, and to the others ------------------ */

static inline Run *run_of(void *ctx) { return ((Part *)ctx)->r; }
static inline fab_time_t now_of(void *ctx) { return ((Part *)ctx)->eng->now; }

static void net_done(void *ctx, FabFlow *f) {
  Run *r = run_of(ctx);
  log_rep(r, &(Rep){.kind = REP_DONE, .n = f->id, .t = now_of(ctx)});
  fab_run__flow_done(r, f);
}

static void net_sent(void *ctx, FabFlow *f) {
  Run *r = run_of(ctx);
  log_rep(r, &(Rep){.kind = REP_SENT, .n = f->id, .t = now_of(ctx)});
  fab_run__flow_sent(r, f);
}

static void net_gpu_done(void *ctx, int which, uint32_t tag, fab_time_t began) {
  Run *r = run_of(ctx);
  log_rep(r, &(Rep){.kind = REP_GPU, .which = (uint8_t)which, .n = tag, .t = now_of(ctx), .began = began});
  fab_run__gpu_done(r, which, tag, began);
}

/* The first flow to give up, by (time, flow), wherever it was. */
static void gave_up(Run *r, FabFlow *f, fab_time_t t) {
  if (!r->failed || t < r->fail_t || (t == r->fail_t && f->id < r->failed->id)) {
    r->failed = f;
    r->fail_t = t;
  }
  fab_par_stop(r->par);
}

static void net_fail(void *ctx, FabFlow *f) {
  Run *r = run_of(ctx);
  log_rep(r, &(Rep){.kind = REP_FAIL, .n = f->id, .t = now_of(ctx)});
  gave_up(r, f, now_of(ctx));
}

void fab_run__woke(void *ctx, uint32_t op) {
  Run *r = ctx;
  if (r->net) log_rep(r, &(Rep){.kind = REP_WAKE, .n = op, .t = fab_exec_engine(r->exec)->now});
}

/* ---- flows that two processes run -------------------------------------------- */

static Half *half_of(Run *r, uint32_t n) {
  Half *h = g_hash_table_lookup(r->halves, GUINT_TO_POINTER(n + 1));
  if (!h) {
    h = g_new0(Half, 1);
    g_hash_table_insert(r->halves, GUINT_TO_POINTER(n + 1), h);
  }
  g_array_append_val(r->touched, n);
  return h;
}

static void take_half(Run *r, const Rep *x) {
  Half *h = half_of(r, x->n);
  if (x->which == 0) {
    h->tx = true;
    h->tx_share = x->share;
    h->fields.retransmits = x->retransmits;
  } else {
    h->rx = true;
    h->rx_share = x->share;
    h->fields.end = x->end;
    h->fields.reorder = x->reorder;
    h->fields.rcv_bytes = x->rcv_bytes;
  }
}

/* The record's fields that its ends wrote, from them, then released. */
static void release_with(Run *r, FabFlow *f, const Rep *x) {
  f->retransmits = x->retransmits;
  f->end = x->end;
  f->reorder = x->reorder;
  f->rcv_bytes = x->rcv_bytes;
  fab_run__flow_release(r, f);
}

static Rep ends_of(const FabFlow *f) {
  return (Rep){.retransmits = f->retransmits, .reorder = f->reorder, .end = f->end, .rcv_bytes = f->rcv_bytes};
}

/* Between windows: the flows this process's NICs are done with. One run
** here whole is released (and the others told); of one run by two, this
** process's end says so, with its share of the packets in flight. Then
** the flows both of whose ends have said so with nothing in flight, as
** every process heard in this window's exchange. */
void fab_run__net_releases(Run *r, GArray *rel) {
  for (guint i = 0; i < rel->len; i++) {
    const FabRel *x = &g_array_index(rel, FabRel, i);
    FabFlow *f = fab_flow_at(&r->table, x->slot);
    if (f->gen != x->gen || *slot_of(r, f->id) != x->slot) continue;
    bool tx = here(r, f->src), rx = here(r, f->dst);
    if (tx && rx) {
      if (!fab_flow_releasable(f)) continue;
      Rep rep = ends_of(f);
      rep.kind = REP_REL;
      rep.n = f->id;
      log_rep(r, &rep);
      fab_run__flow_release(r, f);
      continue;
    }
    Rep rep = ends_of(f);
    rep.kind = REP_HALF;
    rep.n = f->id;
    if (tx && f->acked && !f->in_rr) {
      rep.which = 0;
      rep.share = f->inflight;
      log_rep(r, &rep);
    }
    if (rx && f->rcv_nxt == f->npkts && (!f->ordered || f->end)) {
      rep.which = 1;
      rep.share = f->rx_inflight;
      log_rep(r, &rep);
    }
  }
  g_array_set_size(rel, 0);
  for (guint i = 0; i < r->touched->len; i++) {
    uint32_t n = g_array_index(r->touched, uint32_t, i);
    Half *h = g_hash_table_lookup(r->halves, GUINT_TO_POINTER(n + 1));
    if (!h || !h->tx || !h->rx || h->tx_share + h->rx_share != 0) continue;
    release_with(r, replica(r, n), &h->fields);
    g_hash_table_remove(r->halves, GUINT_TO_POINTER(n + 1));
  }
  g_array_set_size(r->touched, 0);
}

/* ---- the exchange ------------------------------------------------------------ */

/* Events to another process: their targets by number (a port's id; its
** wire's with the top bit). */
#define WIRE_BIT 0x80000000u

static uint32_t codec_number(void *ctx, const void *target) {
  const FabElem *e = target;
  uint32_t id = fab_elem_id(e);
  if (e->ops == &fab_wire_ops) return id | WIRE_BIT;
  if (e->ops != &fab_port_ops) g_error("fabsim: internal error: a %s's event crossed to another process", e->ops->kind);
  return id;
}

static void *codec_target(void *ctx, uint32_t number) {
  const Run *r = ctx;
  uint32_t id = number & ~WIRE_BIT;
  FabPort *pt = id < r->nport_ids ? r->port_by_id[id] : NULL;
  if (!pt) g_error("fabsim: internal error: an event from another process for element %u, not a port", id);
  return number & WIRE_BIT ? (void *)&pt->wire : (void *)pt;
}

/* A packet's flow by number between processes, by slot in each. */
static void codec_fix(void *ctx, const void *target, void *obj, bool out) {
  const Run *r = ctx;
  FabPkt *p = obj;
  if (p->type == FAB_PKT_PAUSE) return;
  g_assert(!fab_pkt_is_nvls(p->type)); /* an NVLink domain is never cut */
  p->flow = out ? fab_flow_at(&r->table, p->flow)->id : replica(r, p->flow)->slot;
}

/* What this process's elements reported this window, for the others; the
** ends' words on flows run by two processes are taken here as they go. */
static void codec_pack(void *ctx, GByteArray *out) {
  Run *r = ctx;
  for (guint at = 0; at < r->log->len; at += sizeof(Rep)) {
    Rep x;
    memcpy(&x, r->log->data + at, sizeof x);
    if (x.kind == REP_HALF) take_half(r, &x);
  }
  g_byte_array_append(out, r->log->data, r->log->len);
  g_byte_array_set_size(r->log, 0);
}

/* Another process's reports, told to the executor here at their times (it
** schedules only what begins here, a lookahead later at least). */
static void codec_apply(void *ctx, uint32_t from, const uint8_t *buf, size_t len) {
  Run *r = ctx;
  FabEngine *eng = r->eng;
  fab_time_t now = eng->now;
  fab_exec_set_engine(r->exec, eng);
  for (size_t at = 0; at + sizeof(Rep) <= len; at += sizeof(Rep)) {
    Rep x;
    memcpy(&x, buf + at, sizeof x);
    eng->now = x.t;
    switch (x.kind) {
    case REP_DONE: fab_run__flow_done(r, replica(r, x.n)); break;
    case REP_SENT: fab_run__flow_sent(r, replica(r, x.n)); break;
    case REP_GPU: fab_run__gpu_done(r, x.which, x.n, x.began); break;
    case REP_WAKE: fab_exec_wake(r->exec, x.n); break;
    case REP_FAIL: gave_up(r, replica(r, x.n), x.t); break;
    case REP_HALF: take_half(r, &x); break;
    case REP_REL: release_with(r, replica(r, x.n), &x); break;
    default: g_error("fabsim: internal error: report kind %u from process %u", x.kind, from);
    }
  }
  eng->now = now;
}

static void index_port(FabPort *pt, void *ctx) {
  Run *r = ctx;
  uint32_t id = fab_elem_id(&pt->el);
  if (id >= r->nport_ids) {
    uint32_t n = MAX(id + 1, 2 * r->nport_ids);
    r->port_by_id = g_renew(FabPort *, r->port_by_id, n);
    memset(r->port_by_id + r->nport_ids, 0, (n - r->nport_ids) * sizeof *r->port_by_id);
    r->nport_ids = n;
  }
  r->port_by_id[id] = pt;
}

/* The run's partitions over the processes of opts->net (fab_run__par_make
** made them): the messages, the reports. */
void fab_run__net_attach(Run *r) {
  r->log = g_byte_array_new();
  r->halves = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
  r->touched = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  fab_topology_foreach_port(r->topo, index_port, r);
  FabParCodec codec = {codec_number, codec_target, codec_fix, codec_pack, codec_apply, r};
  fab_par_set_net(r->par, r->net, &codec);
  for (uint32_t h = 0; h < r->topo->nhosts; h++) {
    FabNic *nic = &r->topo->nics[h];
    nic->done = net_done;
    nic->fail = net_fail;
    nic->sent = net_sent;
    r->topo->gpus[h].done = net_gpu_done;
  }
}

/* Every process's part of a gather (what FabParNet.allgather and gather fill). */
static GByteArray **parts_new(const FabParNet *net) {
  GByteArray **all = g_new(GByteArray *, net->n);
  for (uint32_t k = 0; k < net->n; k++) all[k] = g_byte_array_new();
  return all;
}

static void parts_free(const FabParNet *net, GByteArray **all) {
  for (uint32_t k = 0; k < net->n; k++) g_byte_array_unref(all[k]);
  g_free(all);
}

/* ---- the watchdog's look at every process's ports ----------------------------- */

/* When the watchdog stalls, each process tells which of its ports are
** blocked at each priority, and for each switch it runs, which of its
** egress ports hold what came in from each port at each priority; the
** watchdog then follows the waits over all of them. */
typedef struct WdView {
  uint32_t *blocked;  /* by port id: bit q, blocked at priority q */
  GHashTable *hold;   /* (id << 8 | q) + 1 -> GArray of port ids */
} WdView;

typedef struct WdPack {
  Run *r;
  GByteArray *out;
  uint32_t nprio;
  FabPort **tmp;
} WdPack;

static void wd_pack(FabPort *pt, void *ctx) {
  WdPack *c = ctx;
  Run *r = c->r;
  uint32_t id = fab_elem_id(&pt->el), bits = 0;
  if (fab_par_part_of(r->par, pt) == r->net->self) {
    for (uint32_t q = 0; q < pt->nprio; q++) bits |= (uint32_t)fab_port_blocked(pt, q) << q;
    uint32_t rec[3] = {id, UINT32_MAX, bits};
    g_byte_array_append(c->out, (const guint8 *)rec, sizeof rec);
  }
  FabSwitch *t = pt->peer ? fab_switch_of(pt->peer->owner) : NULL;
  if (!t || fab_par_part_of(r->par, t) != r->net->self) return;
  for (uint32_t q = 0; q < c->nprio; q++) {
    uint32_t n = fab_switch_holders(t, pt->peer->index, q, c->tmp, fab_switch_nports(t));
    uint32_t rec[3] = {id, q, n};
    g_byte_array_append(c->out, (const guint8 *)rec, sizeof rec);
    for (uint32_t i = 0; i < n; i++) {
      uint32_t h = fab_elem_id(&c->tmp[i]->el);
      g_byte_array_append(c->out, (const guint8 *)&h, sizeof h);
    }
  }
}

static void wd_free(WdView *v) {
  if (!v) return;
  g_free(v->blocked);
  g_hash_table_destroy(v->hold);
  g_free(v);
}

void fab_run__wd_gather(void *ctx) {
  Run *r = ctx;
  if (!r->net) return;
  uint32_t maxp = 0;
  for (uint32_t s = 0; s < r->topo->nswitches; s++) maxp = MAX(maxp, fab_switch_nports(r->topo->switches[s]));
  WdPack c = {r, g_byte_array_new(), r->sc->fabric.sw.nprio, g_new(FabPort *, maxp + 1)};
  fab_topology_foreach_port(r->topo, wd_pack, &c);
  GByteArray **all = parts_new(r->net);
  r->net->allgather(r->net->ctx, c.out, all);
  wd_free(r->wd_view);
  WdView *v = r->wd_view = g_new0(WdView, 1);
  v->blocked = g_new0(uint32_t, r->nport_ids);
  v->hold = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify)g_array_unref);
  for (uint32_t k = 0; k < r->net->n; k++) {
    const uint32_t *p = (const uint32_t *)(const void *)all[k]->data;
    const uint32_t *end = p + all[k]->len / sizeof *p;
    while (p < end) {
      uint32_t id = p[0], q = p[1], n = p[2];
      p += 3;
      if (q == UINT32_MAX) {
        v->blocked[id] = n;
        continue;
      }
      GArray *h = g_array_new(FALSE, FALSE, sizeof(uint32_t));
      g_array_append_vals(h, p, n);
      p += n;
      g_hash_table_insert(v->hold, GSIZE_TO_POINTER(((gsize)id << 8 | q) + 1), h);
    }
  }
  parts_free(r->net, all);
  g_byte_array_unref(c.out);
  g_free(c.tmp);
}

bool fab_run__wd_blocked(void *ctx, const FabPort *p, uint32_t q) {
  const Run *r = ctx;
  return r->wd_view ? r->wd_view->blocked[fab_elem_id(&p->el)] >> q & 1 : fab_port_blocked(p, q);
}

uint32_t fab_run__wd_holders(void *ctx, const FabPort *p, uint32_t q, FabPort **out, uint32_t max) {
  const Run *r = ctx;
  if (!r->wd_view)
    return fab_switch_holders(fab_switch_of(p->peer->owner), p->peer->index, q, out, max);
  const GArray *h = g_hash_table_lookup(r->wd_view->hold, GSIZE_TO_POINTER(((gsize)fab_elem_id(&p->el) << 8 | q) + 1));
  uint32_t n = h ? h->len : 0;
  for (uint32_t i = 0; i < n && i < max; i++) out[i] = r->port_by_id[g_array_index(h, uint32_t, i)];
  return n;
}

void fab_run__net_free(Run *r) {
  wd_free(r->wd_view);
  if (!r->log) return;
  g_byte_array_unref(r->log);
  g_hash_table_destroy(r->halves);
  g_array_free(r->touched, TRUE);
  g_free(r->port_by_id);
}

uint64_t fab_run__net_sum(const Run *r, uint64_t v) {
  const FabParNet *net = r->net;
  GByteArray *mine = g_byte_array_new(), **all = parts_new(net);
  g_byte_array_append(mine, (const guint8 *)&v, sizeof v);
  net->allgather(net->ctx, mine, all);
  uint64_t sum = 0;
  for (uint32_t k = 0; k < net->n; k++) {
    uint64_t x;
    memcpy(&x, all[k]->data, sizeof x);
    sum += x;
  }
  parts_free(net, all);
  g_byte_array_unref(mine);
  return sum;
}

/* ---- the end: the counters to the first process ------------------------------ */

/* A port's counters that the first process takes from the one that ran it (fab_time_t is a uint64_t) */
#define PORT_COUNTERS(X)                                                                                             \
  X(tx_bytes) X(tx_pkts) X(drops) X(drop_bytes) X(max_qbytes) X(pause_tx) X(pause_rx) X(ecn_marks) X(paused_ps)      \
  X(paused_since)

typedef struct PortStats {
#define PORT_FIELD(f) uint64_t f;
  PORT_COUNTERS(PORT_FIELD)
#undef PORT_FIELD
  uint64_t lost, lost_bytes;
  uint64_t in_lost, in_lost_bytes; /* the peer's packets its cut wire lost here (fab_port_set_far_down) */
  uint32_t paused;
} PortStats;

#define NIC_A_FIRST tx_data_pkts
#define NIC_A_LAST dsacks
#define NIC_B_FIRST srd_path_losses
#define NIC_B_LAST ev_rtt_avoids

#define SPAN(T, a, b) (offsetof(T, b) + sizeof(((T *)0)->b) - offsetof(T, a))

typedef struct PackCtx {
  Run *r;
  GByteArray *out;
} PackCtx;

static void pack_port(FabPort *pt, void *ctx) {
  PackCtx *c = ctx;
  if (fab_par_part_of(c->r->par, pt) != c->r->net->self) return;
  uint32_t id = fab_elem_id(&pt->el);
  PortStats s = {.lost = pt->lost, .lost_bytes = pt->lost_bytes, .in_lost = pt->in_lost,
                 .in_lost_bytes = pt->in_lost_bytes, .paused = pt->paused};
#define PORT_GET(f) s.f = pt->f;
  PORT_COUNTERS(PORT_GET)
#undef PORT_GET
  g_byte_array_append(c->out, (const guint8 *)&id, sizeof id);
  g_byte_array_append(c->out, (const guint8 *)&s, sizeof s);
}

/* What this process ran: its totals, then its ports' counters, its NICs',
** its switches', and what it knows of the flows still held whose ends it
** runs. */
static const size_t nic_a = SPAN(FabNic, NIC_A_FIRST, NIC_A_LAST), nic_b = SPAN(FabNic, NIC_B_FIRST, NIC_B_LAST);

static void gather_pack(Run *r, GByteArray *mine, const FabNetTotals *t) {
  g_byte_array_append(mine, (const guint8 *)t, sizeof *t);
  uint32_t n = 0;
  size_t at_n = mine->len;
  g_byte_array_append(mine, (const guint8 *)&n, sizeof n);
  PackCtx pc = {r, mine};
  fab_topology_foreach_port(r->topo, pack_port, &pc);
  n = (uint32_t)((mine->len - at_n - sizeof n) / (sizeof(uint32_t) + sizeof(PortStats)));
  memcpy(mine->data + at_n, &n, sizeof n);
  for (uint32_t h = 0; h < r->topo->nhosts; h++) {
    if (!here(r, h)) continue;
    const FabNic *nic = &r->topo->nics[h];
    uint32_t runt = nic->runt_out ? g_hash_table_size(nic->runt_out) : 0;
    g_byte_array_append(mine, (const guint8 *)&h, sizeof h);
    g_byte_array_append(mine, (const guint8 *)&nic->NIC_A_FIRST, (guint)nic_a);
    g_byte_array_append(mine, (const guint8 *)&nic->NIC_B_FIRST, (guint)nic_b);
    g_byte_array_append(mine, (const guint8 *)&nic->msgs_held, sizeof nic->msgs_held);
    g_byte_array_append(mine, (const guint8 *)nic->reads_open, sizeof nic->reads_open);
    g_byte_array_append(mine, (const guint8 *)&runt, sizeof runt);
    g_byte_array_append(mine, (const guint8 *)&nic->runt_reads, 2 * sizeof nic->runt_reads);
    g_byte_array_append(mine, (const guint8 *)nic->reorder_hist, sizeof nic->reorder_hist);
  }
  uint32_t end = UINT32_MAX;
  g_byte_array_append(mine, (const guint8 *)&end, sizeof end);
  for (uint32_t s = 0; s < r->topo->nswitches; s++) {
    if (fab_par_part_of(r->par, r->topo->switches[s]) != r->net->self) continue;
    g_byte_array_append(mine, (const guint8 *)&s, sizeof s);
    g_byte_array_append(mine, (const guint8 *)fab_switch_stats(r->topo->switches[s]), sizeof(FabSwitchStats));
  }
  g_byte_array_append(mine, (const guint8 *)&end, sizeof end);
  if (r->fx) { /* its copy's records of fabric.failures (every process has as many) */
    uint32_t n;
    FabLinkChangeRec *c = fab_run__failure_records(r, &n);
    g_byte_array_append(mine, (const guint8 *)c, n * (guint)sizeof *c);
    g_free(c);
  }
  for (uint32_t i = (uint32_t)r->slot_of.first; i < fab_deq_end(&r->slot_of); i++) { /* flows still held */
    if (*slot_of(r, i) == FAB_OP_NONE) continue;
    const FabFlow *f = fab_flow_at(&r->table, *slot_of(r, i));
    if (!here(r, f->src) && !here(r, f->dst)) continue;
    Rep x = ends_of(f);
    x.n = i;
    x.which = (uint8_t)(here(r, f->src) | here(r, f->dst) << 1);
    g_byte_array_append(mine, (const guint8 *)&x, sizeof x);
  }
}

static const guint8 *take(void *to, const guint8 *p, size_t n) {
  memcpy(to, p, n);
  return p + n;
}

/* Another process's part (after its totals) into the first's copies. */
static void gather_take(Run *r, const guint8 *p, const guint8 *stop, FabNetTotals *tot) {
  uint32_t nports;
  p = take(&nports, p, sizeof nports);
  for (uint32_t i = 0; i < nports; i++) {
    uint32_t id;
    PortStats s;
    p = take(&id, p, sizeof id);
    p = take(&s, p, sizeof s);
    FabPort *pt = r->port_by_id[id];
#define PORT_SET(f) pt->f = s.f;
    PORT_COUNTERS(PORT_SET)
#undef PORT_SET
    pt->lost = s.lost;
    pt->lost_bytes = s.lost_bytes;
    pt->in_lost = s.in_lost;
    pt->in_lost_bytes = s.in_lost_bytes;
    pt->paused = s.paused;
  }
  for (;;) {
    uint32_t h, runt;
    p = take(&h, p, sizeof h);
    if (h == UINT32_MAX) break;
    FabNic *nic = &r->topo->nics[h];
    p = take(&nic->NIC_A_FIRST, p, nic_a);
    p = take(&nic->NIC_B_FIRST, p, nic_b);
    p = take(&nic->msgs_held, p, sizeof nic->msgs_held);
    p = take(nic->reads_open, p, sizeof nic->reads_open);
    p = take(&runt, p, sizeof runt);
    if (runt) tot->runt_held = true;
    p = take(&nic->runt_reads, p, 2 * sizeof nic->runt_reads);
    p = take(nic->reorder_hist, p, sizeof nic->reorder_hist);
  }
  for (;;) {
    uint32_t s;
    p = take(&s, p, sizeof s);
    if (s == UINT32_MAX) break;
    FabSwitchStats st;
    p = take(&st, p, sizeof st);
    fab_switch_set_stats(r->topo->switches[s], &st);
  }
  if (r->fx) {
    uint32_t n = r->sc->fabric.nchanges;
    FabLinkChangeRec c[64];
    if (!r->fx_others) r->fx_others = g_new0(FabLinkChangeRec, n);
    for (uint32_t i = 0; i < n; i += G_N_ELEMENTS(c)) {
      uint32_t k = MIN(n - i, (uint32_t)G_N_ELEMENTS(c));
      p = take(c, p, k * sizeof *c);
      fab_failures_merge(r->fx_others + i, c, k);
    }
  }
  while (p + sizeof(Rep) <= stop) {
    Rep x;
    p = take(&x, p, sizeof x);
    FabFlow *f = replica(r, x.n);
    if (x.which & 1) f->retransmits = x.retransmits;
    if (x.which & 2) {
      f->end = x.end;
      f->reorder = x.reorder;
      f->rcv_bytes = x.rcv_bytes;
    }
  }
}

/* The queue samples: each process's columns (the switch ports and links it
** ran, the flows it sent) into the first's sampler. */
static bool owns_col(void *ctx, int kind, uint32_t col, const FabPort *pt) {
  const Run *r = ctx;
  if (kind == FAB_SAMPLE_FLOW) return here(r, rec_of(r, col)->src);
  return fab_par_part_of(r->par, pt) == r->net->self;
}

static void gather_samples(Run *r) {
  const FabParNet *net = r->net;
  GByteArray *mine = g_byte_array_new(), **all = parts_new(net);
  fab_sampler_pack(r->sampler, owns_col, r, mine);
  net->gather(net->ctx, mine, all);
  for (uint32_t k = 0; net->self == 0 && k < net->n; k++)
    if (k != net->self) fab_sampler_unpack(r->sampler, all[k]->data, all[k]->len);
  parts_free(net, all);
  g_byte_array_unref(mine);
}

/* Every process's totals, and the first's replica of the elements the
** others ran made theirs (their counters, the ends of the flows still
** held). Returns whether this process is the first. */
bool fab_run__net_gather(Run *r, FabNetTotals *tot) {
  const FabParNet *net = r->net;
  FabEngine *eng = r->eng;
  GByteArray *mine = g_byte_array_new();
  FabNetTotals t = *tot;
  t.events = eng->events;
  t.now = eng->now;
  t.live = fab_pool_live(eng->pool);
  gather_pack(r, mine, &t);
  GByteArray **all = parts_new(net);
  net->allgather(net->ctx, mine, all);
  g_byte_array_unref(mine);
  if (r->sampler) gather_samples(r);
  bool first = net->self == 0;
  *tot = (FabNetTotals){0};
  for (uint32_t k = 0; k < net->n; k++) {
    const guint8 *p = take(&t, all[k]->data, sizeof t);
    tot->events += t.events;
    tot->now = MAX(tot->now, t.now);
    tot->live += t.live;
    tot->flushed += t.flushed;
    tot->flushed_bytes += t.flushed_bytes;
    tot->runt_held |= t.runt_held;
    if (first && k != net->self) gather_take(r, p, all[k]->data + all[k]->len, tot);
  }
  parts_free(net, all);
  return first;
}

/*
** A network for the congestion-control tests, worked out on paper: up to 4
** NICs at 100 Gbps, each joined by a 1 us link to one port of a Merge, a
** test element standing in for a switch that forwards by destination and
** may mark data packets CE at egress. Header-only (test_dcqcn.c,
** test_dctcp.c, test_timely.c).
*/
#ifndef FAB_TESTCC_H
#define FAB_TESTCC_H

#include "testnet.h"
#include "models/cc.h"

#define G100 100000000000ULL
#define PKT (1082 * 80)      /* ps: a 1000 B payload RoCEv2 packet at 100 Gbps */

/* A switch-like element for up to 4 endpoints: packets leave by the port of
** their destination; `mark` says which data packets to mark CE at egress;
** with int_rtt, data packets leaving a port carry its utilisation as HPCC's
** switches write it (models/hpcc.h; here no forwarding latency: qlen is
** the port's queue). */
typedef struct Merge {
  FabNode node;
  FabPort port[4];
  uint32_t nports;
  bool (*mark)(struct Merge *m, const FabPort *out, const FabPkt *p);
  uint64_t kbytes;            /* threshold for mark_over_k */
  uint32_t seq_a, seq_b;      /* for mark_seqs */
  uint64_t marks;
  fab_time_t int_rtt;         /* HPCC's T (0: no telemetry) */
  FabHpccPort intp[4];        /* per port: the utilisation estimate */
} Merge;

static inline void merge_wake(FabEngine *eng, void *self, uint64_t arg) {}
static const FabOps merge_ops = {"merge", merge_wake};

static inline void merge_receive(FabEngine *eng, FabNode *self, FabPkt *p, FabPort *in) {
  Merge *m = (Merge *)self;
  g_assert(p->dst < m->nports);
  FabPort *out = &m->port[p->dst];
  if (p->type == FAB_PKT_DATA && m->mark && m->mark(m, out, p)) {
    p->flags |= FAB_PKTF_ECN;
    m->marks++;
  }
  p->ready = eng->now;
  fab_port_enqueue(eng, out, p);
}

static inline void merge_dequeued(FabEngine *eng, FabNode *self, FabPort *pt, FabPkt *p) {
  Merge *m = (Merge *)self;
  uint32_t i = pt->index;
  if (m->int_rtt && p->type == FAB_PKT_DATA)
    p->mark_ev = fab_hpcc_stamp(&m->intp[i], pt->bps, pt->qbytes, p->wire, m->int_rtt, eng->now, p->mark_ev);
}

static inline void merge_init(Merge *m, uint32_t nports) {
  memset(m, 0, sizeof *m);
  fab_elem_init(&m->node.el, &merge_ops);
  fab_elem_set_id(&m->node.el, 100); /* apart from the NICs' ids 0..3: distinct tie keys */
  m->node.receive = merge_receive;
  m->node.dequeued = merge_dequeued;
  g_strlcpy(m->node.name, "merge", sizeof m->node.name);
  m->nports = nports;
  for (uint32_t i = 0; i < nports; i++) fab_port_init(&m->port[i], &m->node, i, G100, FAB_US, 2);
}

static inline bool mark_all(Merge *m, const FabPort *out, const FabPkt *p) { return true; }
static inline bool mark_seqs(Merge *m, const FabPort *out, const FabPkt *p) {
  return !(p->flags & FAB_PKTF_RETX) && (p->seq == m->seq_a || p->seq == m->seq_b);
}
/* DCTCP-style: mark an ECN-capable packet when the egress queue is over K. */
static inline bool mark_over_k(Merge *m, const FabPort *out, const FabPkt *p) {
  return (p->flags & FAB_PKTF_ECT) && out->qbytes > m->kbytes;
}

/* n NICs, each joined to one port of a Merge; 1 us per link, 100 Gbps. */
typedef struct Net {
  FabEngine *eng;
  FabNicCfg cfg[4];
  FabNic nic[4];
  Merge sw;
  FabFlow flows[4];
  TestRun run;
  uint32_t n;
} Net;

static inline FabNicCfg cc_cfg(const char *preset) {
  FabNicCfg c = testnet_nic_cfg(G100, 1000, FAB_TRANSPORT_ROCEV2);
  cr_assert(fab_cc_preset(preset, &c.cc), "preset %s", preset);
  if (c.cc.kind == FAB_CC_HPCC) /* T: the unloaded round trip through the Merge, as the scenario reader takes it */
    c.cc.hpcc.base_rtt = 4 * FAB_US + 2 * (fab_time_t)PKT + 2 * (fab_time_t)c.transport.ack_bytes * 80;
  return c;
}

/* NIC i gets cfg[i] (set them before). */
static inline void net_init(Net *t, uint32_t n) {
  t->eng = testnet_engine(1);
  t->n = n;
  merge_init(&t->sw, n);
  for (uint32_t i = 0; i < n; i++) {
    testnet_nic(&t->nic[i], i, &t->cfg[i], t->flows, &t->run, FAB_US);
    fab_port_connect(&t->nic[i].port, &t->sw.port[i]);
  }
}

static inline void net_fini(Net *t) {
  cr_assert_eq(fab_pool_live(t->eng->pool), 0, "packets leaked: %zu", fab_pool_live(t->eng->pool));
  fab_engine_free(t->eng);
}

static inline void net_flow(Net *t, uint32_t id, uint32_t src, uint32_t dst, uint64_t bytes, fab_time_t start) {
  t->flows[id] = testnet_flow(id, src, dst, bytes, start, &t->cfg[src]);
  fab_nic_post(t->eng, &t->nic[src], &t->flows[id]);
}


/* The payload share of 100 Gbps of wire with 1000 B payloads (1082 B on the wire). */
#define TESTCC_PAYLOAD_GBPS (100.0 * 1000 / 1082)

/* Two senders (NICs 0 and 1, algorithm `preset`) share the Merge's port to
** NIC 2, which marks ECN-capable packets while more than 40 KB wait there
** (DCTCP's step marking at K). Flow 0 starts alone at line rate, flow 1
** joins 1 ms later; *g0 and *g1 are their goodputs, Gbps, over [7 ms, 10 ms].
** The run is left at 10 ms with no drop (testcc_finish ends it). */
static inline void testcc_share(Net *t, const char *preset, double *g0, double *g1) {
  for (int i = 0; i < 3; i++) t->cfg[i] = cc_cfg(preset);
  net_init(t, 3);
  if (t->cfg[0].cc.kind == FAB_CC_HPCC) t->sw.int_rtt = t->cfg[0].cc.hpcc.base_rtt;
  t->sw.mark = mark_over_k;
  t->sw.kbytes = 40000;
  net_flow(t, 0, 0, 2, 200000000ULL, 0);
  net_flow(t, 1, 1, 2, 200000000ULL, FAB_MS);
  cr_assert(fab_engine_run(t->eng, 7 * FAB_MS));
  uint64_t b0 = t->flows[0].rcv_bytes, b1 = t->flows[1].rcv_bytes;
  cr_assert(fab_engine_run(t->eng, 10 * FAB_MS));
  *g0 = (double)(t->flows[0].rcv_bytes - b0) * 8 / 3e-3 / 1e9;
  *g1 = (double)(t->flows[1].rcv_bytes - b1) * 8 / 3e-3 / 1e9;
  cr_log_info("%s: goodput %.2f and %.2f Gbps, marks %" G_GUINT64_FORMAT, preset, *g0, *g1, t->sw.marks);
  cr_assert_eq(t->sw.port[2].drops, 0);
}

/* Run to the end: `flows` completed, no packet leaked. */
static inline void testcc_finish(Net *t, uint32_t flows) {
  cr_assert(fab_engine_run(t->eng, FAB_TIME_MAX));
  cr_assert_eq(t->run.done, flows);
  net_fini(t);
}

#endif

/*
** Small hand-built networks for model tests: two NICs joined by one link, or
** by a "tap" element in the middle that can drop chosen packets. Header-only,
** shared by the model tests (and by topology tests for a fabric's NIC).
*/
#ifndef FAB_TESTNET_H
#define FAB_TESTNET_H

#include <criterion/criterion.h>
#include <glib.h>
#include "models/nic.h"
#include "models/switch.h"
#include "sim/engine.h"

/* An engine whose pool holds packets. */
static inline FabEngine *testnet_engine(uint64_t seed) { return fab_engine_new(seed, sizeof(FabPkt)); }

static inline FabNicCfg testnet_nic_cfg(uint64_t bps, uint32_t mtu, FabTransportKind tr) {
  FabNicCfg c = {0};
  c.bps = bps;
  c.mtu = mtu;
  c.rto = 100 * FAB_US;
  c.ack_interval = 1;
  c.max_timeouts = 8;
  c.nprio = 2;
  c.transport = fab_transport_get(tr);
  c.ecmp_seed = 0;
  return c;
}

/* The NIC of a whole test fabric: 4096 B MTU, RoCEv2, 1 ms RTO, one priority. */
static inline FabNicCfg testnet_fabric_nic_cfg(uint64_t bps) {
  FabNicCfg c = testnet_nic_cfg(bps, 4096, FAB_TRANSPORT_ROCEV2);
  c.rto = FAB_MS;
  c.nprio = 1;
  return c;
}

/* Flow completion bookkeeping shared by the callbacks. */
typedef struct TestRun {
  int done, failed;
  fab_time_t last_end;
  FabFlowTable table; /* over the test's array of flows: slot i is flows[i] */
  void *user;         /* a test's own */
} TestRun;

static inline void testnet_done(void *ctx, FabFlow *f) {
  TestRun *r = ctx;
  r->done++;
  if (f->end > r->last_end) r->last_end = f->end;
}

static inline void testnet_fail(void *ctx, FabFlow *f) {
  ((TestRun *)ctx)->failed++;
}

static inline void testnet_nic(FabNic *nic, uint32_t id, const FabNicCfg *cfg, FabFlow *flows, TestRun *r,
                               fab_time_t latency) {
  fab_flow_table_wrap(&r->table, flows);
  fab_nic_init(nic, id, cfg, &r->table, testnet_done, testnet_fail, r);
  nic->port.latency = latency;
}

static inline FabFlow testnet_flow(uint32_t id, uint32_t src, uint32_t dst, uint64_t bytes, fab_time_t start,
                                   const FabNicCfg *cfg) {
  FabFlow f = {0};
  f.id = id;
  f.slot = id;
  f.src = src;
  f.dst = dst;
  f.bytes = bytes;
  f.start = start;
  fab_flow_prepare(&f, cfg);
  return f;
}

/* A two-port element that forwards packets from one side to the other and
** drops those `drop` says to (by data sequence number). */
typedef struct Tap {
  FabNode node;
  FabPort port[2];
  bool (*drop)(struct Tap *t, const FabPkt *p);
  uint32_t dropped;
  uint32_t seen_data;
  uint32_t param;
} Tap;

static void tap_wake(FabEngine *eng, void *self, uint64_t arg) {}
static const FabOps tap_ops = {"tap", tap_wake};

static void tap_receive(FabEngine *eng, FabNode *self, FabPkt *p, FabPort *in) {
  Tap *t = (Tap *)self;
  if (p->type == FAB_PKT_DATA) t->seen_data++;
  if (t->drop && t->drop(t, p)) {
    t->dropped++;
    t->port[in->index ^ 1].drops++;
    fab_pkt_free(eng, p);
    return;
  }
  p->ready = eng->now;
  fab_port_enqueue(eng, &t->port[in->index ^ 1], p);
}

static inline void testnet_tap(Tap *t, uint64_t bps, fab_time_t latency, uint32_t nprio) {
  memset(t, 0, sizeof *t);
  fab_elem_init(&t->node.el, &tap_ops);
  t->node.receive = tap_receive;
  g_strlcpy(t->node.name, "tap", sizeof t->node.name);
  fab_port_init(&t->port[0], &t->node, 0, bps, latency, nprio);
  fab_port_init(&t->port[1], &t->node, 1, bps, latency, nprio);
}

#endif

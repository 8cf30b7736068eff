/* NIC and transport: timing worked out on paper, go-back-N recovery. */
#include "testnet.h"
#include "models/ecmp.h"
#include "models/srd.h"

/* Two NICs on one 100 Gbps link with 1 us latency; flows from 0 to 1. */
typedef struct Pair {
  FabEngine *eng;
  FabNicCfg cfg;
  FabNic nic[2];
  FabFlow flows[4];
  TestRun run;
} Pair;

static void pair_init(Pair *p, uint64_t bps, uint32_t mtu, FabTransportKind tr) {
  memset(p, 0, sizeof *p);
  p->eng = testnet_engine(1);
  p->cfg = testnet_nic_cfg(bps, mtu, tr);
  for (uint32_t i = 0; i < 2; i++) testnet_nic(&p->nic[i], i, &p->cfg, p->flows, &p->run, FAB_US);
  fab_port_connect(&p->nic[0].port, &p->nic[1].port);
}

static void pair_fini(Pair *p) {
  cr_assert_eq(fab_pool_live(p->eng->pool), 0, "packets leaked: %zu", fab_pool_live(p->eng->pool));
  fab_engine_free(p->eng);
}

Test(nic, one_flow_one_link_exact) {
  Pair p;
  pair_init(&p, 100000000000ULL, 4096, FAB_TRANSPORT_ROCEV2);
  p.flows[0] = testnet_flow(0, 0, 1, 10000, 0, &p.cfg);
  fab_nic_post(p.eng, &p.nic[0], &p.flows[0]);
  cr_assert(fab_engine_run(p.eng, FAB_TIME_MAX));
  /* 10000 B = 4096 + 4096 + 1808 payload, +82 B RoCEv2 headers and framing each:
  ** 10246 wire bytes x 80 ps/B = 819680 ps back to back, + 1 us for the last bit */
  cr_assert_eq(p.flows[0].end, 819680 + 1000000, "end %" G_GUINT64_FORMAT, p.flows[0].end);
  cr_assert_eq(p.run.done, 1);
  cr_assert(p.flows[0].acked, "the sender saw the last ACK");
  cr_assert_eq(p.flows[0].rcv_bytes, 10000);
  cr_assert_eq(p.nic[0].tx_data_pkts, 3);
  cr_assert_eq(p.nic[1].tx_ctrl_pkts, 3, "one ACK per packet with ack_interval 1");
  cr_assert_eq(p.nic[0].port.tx_bytes, 10246);
  pair_fini(&p);
}

/* A run's release hook: when, and how often. */
typedef struct Released {
  int n;
  fab_time_t at;
  FabEngine *eng;
  uint32_t inflight;
} Released;

static void note_release(void *ctx, FabFlow *f) {
  Released *r = ((TestRun *)ctx)->user;
  r->n++;
  r->at = r->eng->now;
  r->inflight = fab_flow_in_flight(f);
}

/* One 10000-B flow over a 100G pair, the NICs' release hook set (and
** split: a parallel run's NICs); `user` gets the engine first. */
static void one_flow_told(Pair *p, void *user, FabEngine **eng_of_user, FabFlowDoneFn release, bool split) {
  pair_init(p, 100000000000ULL, 4096, FAB_TRANSPORT_ROCEV2);
  *eng_of_user = p->eng;
  p->run.user = user;
  p->nic[0].release = p->nic[1].release = release;
  p->nic[0].split = p->nic[1].split = split;
  p->flows[0] = testnet_flow(0, 0, 1, 10000, 0, &p->cfg);
  fab_nic_post(p->eng, &p->nic[0], &p->flows[0]);
  cr_assert(fab_engine_run(p->eng, FAB_TIME_MAX));
}

Test(nic, a_finished_flow_is_released_when_its_last_ack_arrives) {
  Pair p;
  Released rel = {0};
  one_flow_told(&p, &rel, &rel.eng, note_release, false);
  cr_assert(p.flows[0].acked && p.flows[0].end == 819680 + 1000000);
  /* the last ACK (86 B) leaves NIC 1 when the last byte arrives and reaches
  ** NIC 0 1 us later: then nothing of the flow is in flight and its slot may
  ** be reused; its retransmission timer, still pending, fires at the RTO and
  ** finds the flow done */
  cr_assert_eq(rel.n, 1, "released once, released %d times", rel.n);
  cr_assert_eq(rel.at, 819680 + 1000000 + 86 * 80 + 1000000, "at %" G_GUINT64_FORMAT, rel.at);
  cr_assert_eq(rel.inflight, 0);
  cr_assert_eq(p.eng->now, p.cfg.rto, "the timer event still fired");
  pair_fini(&p);
}

/* A parallel run's NIC (split) reads only its own end of a flow: each end
** says when it is done (the receiver at the last byte, the sender at the
** last ACK), and the owner releases the flow once both are, with nothing in
** flight. */
typedef struct Told {
  int n;
  fab_time_t at[4];
  FabEngine *eng;
} Told;

static void note_told(void *ctx, FabFlow *f) {
  Told *t = ((TestRun *)ctx)->user;
  cr_assert_lt(t->n, 4);
  t->at[t->n++] = t->eng->now;
  (void)f;
}

Test(nic, a_split_nic_tells_when_its_own_end_is_done) {
  Pair p;
  Told told = {0};
  one_flow_told(&p, &told, &told.eng, note_told, true);
  cr_assert_eq(told.n, 2, "told %d times", told.n);
  cr_assert_eq(told.at[0], 819680 + 1000000, "the receiver, at the last byte");
  cr_assert_eq(told.at[1], 819680 + 1000000 + 86 * 80 + 1000000, "the sender, at the last ACK");
  cr_assert(fab_flow_releasable(&p.flows[0]) && fab_flow_in_flight(&p.flows[0]) == 0);
  pair_fini(&p);
}

/* Flow A (0 -> 1) and then flow B, posted by A's release at t_b, in the
** slot A gave back (reuse) or in a new one; A's retransmission timer is still
** pending then. Returns B's end and the run's events. */
typedef struct Reuse {
  FabFlowTable table;
  FabEngine *eng;
  FabNic *nic;
  const FabNicCfg *cfg;
  bool reuse;
  FabFlow *b;
} Reuse;

static void reuse_release(void *ctx, FabFlow *f) {
  Reuse *u = ((TestRun *)ctx)->user;
  if (f->id != 0) return;
  if (u->reuse) fab_flow_table_put(&u->table, f);
  FabFlow *b = u->b = fab_flow_table_take(&u->table);
  b->id = 1;
  b->src = 0;
  b->dst = 1;
  b->bytes = 2000000;
  fab_flow_prepare(b, u->cfg);
  b->start = u->eng->now + FAB_US;
  fab_nic_post(u->eng, &u->nic[0], b);
}

static void run_reuse(bool reuse, fab_time_t *end, uint64_t *events, uint32_t *slot) {
  Pair p;
  Reuse u = {.reuse = reuse};
  pair_init(&p, 100000000000ULL, 4096, FAB_TRANSPORT_ROCEV2);
  fab_flow_table_init(&u.table);
  u.eng = p.eng;
  u.nic = p.nic;
  u.cfg = &p.cfg;
  p.run.user = &u;
  for (int i = 0; i < 2; i++) {
    p.nic[i].flows = &u.table;
    p.nic[i].release = reuse_release;
  }
  FabFlow *a = fab_flow_table_take(&u.table);
  a->id = 0;
  a->src = 0;
  a->dst = 1;
  a->bytes = 10000;
  fab_flow_prepare(a, &p.cfg);
  fab_nic_post(p.eng, &p.nic[0], a);
  cr_assert(fab_engine_run(p.eng, FAB_TIME_MAX));
  cr_assert_not_null(u.b);
  cr_assert(u.b->end > p.cfg.rto, "B is still sending when A's timer fires");
  *end = u.b->end;
  *events = p.eng->events;
  *slot = u.b->slot;
  cr_assert_eq(u.b->gen, reuse ? 2 : 1);
  pair_fini(&p);
  fab_flow_table_clear(&u.table);
}

Test(nic, a_reused_slot_behaves_as_a_new_one) {
  fab_time_t e0, e1;
  uint64_t n0, n1;
  uint32_t s0, s1;
  run_reuse(false, &e0, &n0, &s0);
  run_reuse(true, &e1, &n1, &s1);
  cr_assert_eq(s0, 1);
  cr_assert_eq(s1, 0, "B took A's slot");
  /* A's timer fires in B's time and is known for A's: B runs exactly alike */
  cr_assert_eq(e1, e0, "end %" G_GUINT64_FORMAT " vs %" G_GUINT64_FORMAT, e1, e0);
  cr_assert_eq(n1, n0);
}

Test(nic, infiniband_headers) {
  Pair p;
  pair_init(&p, 100000000000ULL, 4096, FAB_TRANSPORT_INFINIBAND);
  p.flows[0] = testnet_flow(0, 0, 1, 10000, 5 * FAB_US, &p.cfg);
  fab_nic_post(p.eng, &p.nic[0], &p.flows[0]);
  cr_assert(fab_engine_run(p.eng, FAB_TIME_MAX));
  /* 26 B of LRH+BTH+ICRC+VCRC per packet: 10078 B x 80 ps, from t = 5 us */
  cr_assert_eq(p.flows[0].end, 5000000 + 10078 * 80 + 1000000);
  cr_assert_eq(p.nic[1].port.tx_bytes, 3 * 30, "IB ACKs are 30 bytes");
  pair_fini(&p);
}

Test(nic, rate_not_dividing_a_picosecond_rounds_up_per_packet) {
  Pair p;
  pair_init(&p, 3000000000ULL, 1000, FAB_TRANSPORT_ROCEV2); /* 3 Gbps: 2666.67 ps per byte */
  p.flows[0] = testnet_flow(0, 0, 1, 2000, 0, &p.cfg);
  fab_nic_post(p.eng, &p.nic[0], &p.flows[0]);
  cr_assert(fab_engine_run(p.eng, FAB_TIME_MAX));
  fab_time_t per = (1082ULL * 8 * FAB_S + 3000000000ULL - 1) / 3000000000ULL; /* ceil */
  cr_assert_eq(per, 2885334);
  cr_assert_eq(p.flows[0].end, 2 * per + FAB_US);
  pair_fini(&p);
}

Test(nic, zero_byte_flow_sends_one_header_packet) {
  Pair p;
  pair_init(&p, 100000000000ULL, 4096, FAB_TRANSPORT_ROCEV2);
  p.flows[0] = testnet_flow(0, 0, 1, 0, 0, &p.cfg);
  fab_nic_post(p.eng, &p.nic[0], &p.flows[0]);
  cr_assert(fab_engine_run(p.eng, FAB_TIME_MAX));
  cr_assert_eq(p.flows[0].end, 82 * 80 + FAB_US);
  pair_fini(&p);
}

Test(nic, ack_interval_coalesces) {
  Pair p;
  pair_init(&p, 100000000000ULL, 1000, FAB_TRANSPORT_ROCEV2);
  p.cfg.ack_interval = 4;
  p.nic[1].cfg.ack_interval = 4;
  p.flows[0] = testnet_flow(0, 0, 1, 10 * 1000, 0, &p.cfg);
  fab_nic_post(p.eng, &p.nic[0], &p.flows[0]);
  cr_assert(fab_engine_run(p.eng, FAB_TIME_MAX));
  cr_assert_eq(p.nic[1].tx_ctrl_pkts, 3, "ACKs after packets 4, 8 and the last (10)");
  cr_assert(p.flows[0].acked);
  pair_fini(&p);
}

Test(nic, a_train_carries_the_same_wire_bytes_in_fewer_packets) {
  /* fabric.segment = 4 x mtu: 10,500 B at mtu 1000 is 3 trains (4000, 4000,
  ** 2500 B of payload) with a header per mtu in each (4, 4 and 3): 11
  ** headers, as 11 packets have. On one link the flow ends exactly when the
  ** packets' flow does: the same bytes back to back, then the latency. */
  Pair a, b;
  pair_init(&a, 100000000000ULL, 1000, FAB_TRANSPORT_ROCEV2);
  pair_init(&b, 100000000000ULL, 1000, FAB_TRANSPORT_ROCEV2);
  b.cfg.seg = 4000;
  b.cfg.ack_interval = 8;
  a.flows[0] = testnet_flow(0, 0, 1, 10500, 0, &a.cfg);
  b.flows[0] = testnet_flow(0, 0, 1, 10500, 0, &b.cfg);
  cr_assert_eq(b.flows[0].npkts, 3);
  cr_assert_eq(b.flows[0].ack_every, 2, "ACK every 8 packets' worth of bytes: every 2 trains of 4");
  fab_nic_post(a.eng, &a.nic[0], &a.flows[0]);
  fab_nic_post(b.eng, &b.nic[0], &b.flows[0]);
  cr_assert(fab_engine_run(a.eng, FAB_TIME_MAX));
  cr_assert(fab_engine_run(b.eng, FAB_TIME_MAX));
  uint64_t wire = 10500 + 11 * 82;
  cr_assert_eq(a.nic[0].tx_data_bytes, wire);
  cr_assert_eq(b.nic[0].tx_data_bytes, wire, "trains: %" G_GUINT64_FORMAT " wire bytes", b.nic[0].tx_data_bytes);
  cr_assert_eq(a.nic[0].tx_data_pkts, 11);
  cr_assert_eq(b.nic[0].tx_data_pkts, 3);
  cr_assert_eq(b.flows[0].end, wire * 80 + FAB_US);
  cr_assert_eq(b.flows[0].end, a.flows[0].end);
  cr_assert_eq(b.flows[0].rcv_bytes, 10500);
  cr_assert(b.flows[0].acked);
  cr_assert_eq(b.nic[1].tx_ctrl_pkts, 2, "ACKs after train 2 and the last");
  pair_fini(&a);
  pair_fini(&b);
}

Test(nic, two_flows_share_the_port_round_robin) {
  Pair p;
  pair_init(&p, 100000000000ULL, 1000, FAB_TRANSPORT_ROCEV2);
  p.flows[0] = testnet_flow(0, 0, 1, 100 * 1000, 0, &p.cfg);
  p.flows[1] = testnet_flow(1, 0, 1, 100 * 1000, 0, &p.cfg);
  fab_nic_post(p.eng, &p.nic[0], &p.flows[0]);
  fab_nic_post(p.eng, &p.nic[0], &p.flows[1]);
  cr_assert(fab_engine_run(p.eng, FAB_TIME_MAX));
  /* 200 packets of 1082 wire bytes back to back. Flow 0 is posted first and
  ** its packet 0 is on the wire before flow 1 joins the round robin; after that
  ** they alternate, flow 0 first: flow 0 takes slots 0, 1, 3, ..., 197 and
  ** flow 1 slots 2, 4, ..., 198, 199. */
  fab_time_t pkt = 1082 * 80;
  cr_assert_eq(p.flows[1].end, 200 * pkt + FAB_US);
  cr_assert_eq(p.flows[0].end, 198 * pkt + FAB_US, "flow 0 end %" G_GUINT64_FORMAT " (pkt %" G_GUINT64_FORMAT ")", p.flows[0].end, pkt);
  pair_fini(&p);
}

/* message_gap: a message's first packet leaves at least the gap after the one before's. Three flows of 10 B
** posted at once with a 5 us gap: flow k's only packet (10 + 82 wire bytes x 80 ps/B = 7.36 ns) leaves at k x 5 us
** and arrives 1 us after its last bit: at k x 5 us + 7360 ps + 1 us. Without the gap they go back to back. */
Test(nic, message_gap_spaces_first_packets) {
  for (int gap = 0; gap < 2; gap++) {
    Pair p;
    pair_init(&p, 100000000000ULL, 4096, FAB_TRANSPORT_ROCEV2);
    p.nic[0].cfg.msg_gap = gap ? 5 * FAB_US : 0; /* the NICs hold copies of p.cfg */
    for (uint32_t k = 0; k < 3; k++) {
      p.flows[k] = testnet_flow(k, 0, 1, 10, 0, &p.cfg);
      fab_nic_post(p.eng, &p.nic[0], &p.flows[k]);
    }
    cr_assert(fab_engine_run(p.eng, FAB_TIME_MAX));
    for (uint32_t k = 0; k < 3; k++) {
      fab_time_t want = gap ? k * 5 * FAB_US + 7360 + FAB_US : (k + 1) * 7360 + FAB_US;
      cr_expect_eq(p.flows[k].end, want, "gap %d flow %u: %" G_GUINT64_FORMAT, gap, k, p.flows[k].end);
    }
    pair_fini(&p);
  }
}

/* NIC 0 -> tap -> NIC 1, the tap dropping chosen data packets. */
typedef struct Lossy {
  FabEngine *eng;
  FabNicCfg cfg;
  FabNic nic[2];
  Tap tap;
  FabFlow flows[1];
  TestRun run;
} Lossy;

static bool lossy_srd; /* the NICs deliver as transport srd does */

static void lossy_init(Lossy *l, bool (*drop)(Tap *, const FabPkt *), uint32_t param) {
  memset(l, 0, sizeof *l);
  l->eng = testnet_engine(1);
  l->cfg = testnet_nic_cfg(100000000000ULL, 1000, FAB_TRANSPORT_ROCEV2);
  l->cfg.srd = l->cfg.selective = lossy_srd;
  l->cfg.rto_min = 20 * FAB_US;
  for (uint32_t i = 0; i < 2; i++) testnet_nic(&l->nic[i], i, &l->cfg, l->flows, &l->run, FAB_US);
  testnet_tap(&l->tap, 100000000000ULL, FAB_US, 2);
  l->tap.drop = drop;
  l->tap.param = param;
  fab_port_connect(&l->nic[0].port, &l->tap.port[0]);
  fab_port_connect(&l->tap.port[1], &l->nic[1].port);
}

static bool drop_seq_once(Tap *t, const FabPkt *p) {
  if (p->type == FAB_PKT_DATA && p->seq == t->param && !(p->flags & FAB_PKTF_RETX)) return true;
  return false;
}

static bool drop_all_data(Tap *t, const FabPkt *p) { return p->type == FAB_PKT_DATA; }

Test(nic, go_back_n_after_a_nak) {
  Lossy l;
  lossy_init(&l, drop_seq_once, 3);
  l.flows[0] = testnet_flow(0, 0, 1, 10 * 1000, 0, &l.cfg);
  fab_nic_post(l.eng, &l.nic[0], &l.flows[0]);
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  cr_assert_eq(l.run.done, 1);
  cr_assert_eq(l.flows[0].rcv_bytes, 10000);
  cr_assert_eq(l.tap.dropped, 1);
  cr_assert_eq(l.nic[1].naks_sent, 1, "one NAK for the gap, not one per out-of-order packet");
  cr_assert_eq(l.nic[0].timeouts, 0, "the NAK recovers it, not the timer");
  cr_assert_geq(l.flows[0].retransmits, 1);
  cr_assert_leq(l.flows[0].retransmits, 7, "goes back to packet 3, not to 0");
  cr_assert(l.flows[0].end < 100 * FAB_US, "recovered within an RTT, long before the RTO");
  cr_assert_eq(fab_pool_live(l.eng->pool), 0);
  fab_engine_free(l.eng);
}

Test(nic, a_flow_that_lost_a_packet_is_never_released) {
  Lossy l;
  Released rel = {0};
  lossy_init(&l, drop_seq_once, 3);
  rel.eng = l.eng;
  l.run.user = &rel;
  l.nic[0].release = l.nic[1].release = note_release;
  l.flows[0] = testnet_flow(0, 0, 1, 10 * 1000, 0, &l.cfg);
  fab_nic_post(l.eng, &l.nic[0], &l.flows[0]);
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  cr_assert_eq(l.run.done, 1);
  cr_assert(l.flows[0].acked);
  /* the NICs cannot see the drop: one packet stays counted in flight */
  cr_assert_eq(fab_flow_in_flight(&l.flows[0]), 1);
  cr_assert_eq(rel.n, 0);
  fab_engine_free(l.eng);
}

Test(nic, the_flow_table_grows_in_chunks_and_reuses_the_last_slot_freed) {
  FabFlowTable t;
  fab_flow_table_init(&t);
  FabFlow **got = g_new(FabFlow *, FAB_FLOW_CHUNK + 2);
  for (uint32_t i = 0; i < FAB_FLOW_CHUNK + 2; i++) {
    got[i] = fab_flow_table_take(&t);
    cr_assert_eq(got[i]->slot, i);
    got[i]->bytes = i;
  }
  cr_assert_eq(t.nchunks, 2);
  for (uint32_t i = 0; i < FAB_FLOW_CHUNK + 2; i++) /* growing moved none of them */
    cr_assert(fab_flow_at(&t, i) == got[i] && got[i]->bytes == i);
  fab_flow_table_put(&t, got[7]);
  fab_flow_table_put(&t, got[FAB_FLOW_CHUNK + 1]);
  cr_assert_eq(t.live, FAB_FLOW_CHUNK);
  FabFlow *a = fab_flow_table_take(&t), *b = fab_flow_table_take(&t), *c = fab_flow_table_take(&t);
  cr_assert_eq(a->slot, FAB_FLOW_CHUNK + 1, "the last slot freed first");
  cr_assert_eq(b->slot, 7);
  cr_assert_eq(c->slot, FAB_FLOW_CHUNK + 2, "then a new one");
  cr_assert_eq(a->bytes, 0, "a reused slot comes zeroed");
  cr_assert_eq(a->gen, 2, "a new generation: its predecessor's pending timers are not its own");
  cr_assert_eq(c->gen, 1);
  cr_assert_eq(t.used, FAB_FLOW_CHUNK + 3);
  g_free(got);
  fab_flow_table_clear(&t);
}

Test(nic, last_packet_lost_is_recovered_by_timeout) {
  Lossy l;
  lossy_init(&l, drop_seq_once, 9);
  l.flows[0] = testnet_flow(0, 0, 1, 10 * 1000, 0, &l.cfg);
  fab_nic_post(l.eng, &l.nic[0], &l.flows[0]);
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  cr_assert_eq(l.run.done, 1);
  cr_assert_eq(l.nic[0].timeouts, 1);
  cr_assert_eq(l.nic[1].naks_sent, 0, "no later packet reveals the gap");
  /* the timer was armed when packet 0 left (t=0) and pushed back by each ACK;
  ** the last ACK (for packet 8) left NIC 1 after packet 8 arrived */
  cr_assert_gt(l.flows[0].end, l.cfg.rto);
  cr_assert_lt(l.flows[0].end, l.cfg.rto + 20 * FAB_US);
  cr_assert_eq(fab_pool_live(l.eng->pool), 0);
  fab_engine_free(l.eng);
}

Test(nic, a_dead_path_fails_after_max_timeouts) {
  Lossy l;
  lossy_init(&l, drop_all_data, 0);
  l.flows[0] = testnet_flow(0, 0, 1, 5000, 0, &l.cfg);
  fab_nic_post(l.eng, &l.nic[0], &l.flows[0]);
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  cr_assert_eq(l.run.done, 0);
  cr_assert_eq(l.run.failed, 1);
  cr_assert_eq(l.nic[0].timeouts, l.cfg.max_timeouts + 1);
  cr_assert_eq(fab_pool_live(l.eng->pool), 0);
  fab_engine_free(l.eng);
}

/* SRD: each packet's timer backs off on its own (20, 40, ... us after the
** first RTO of 100 us: no sample ever came); the run fails once a packet
** timed out max_timeouts + 1 times. */
Test(nic, a_dead_path_fails_srd_after_max_timeouts_of_one_packet) {
  Lossy l;
  lossy_srd = true;
  lossy_init(&l, drop_all_data, 0);
  lossy_srd = false;
  l.flows[0] = testnet_flow(0, 0, 1, 1000, 0, &l.cfg);
  fab_nic_post(l.eng, &l.nic[0], &l.flows[0]);
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  cr_assert_eq(l.run.done, 0);
  cr_assert_eq(l.run.failed, 1);
  cr_assert_eq(l.nic[0].timeouts, l.cfg.max_timeouts + 1);
  cr_assert_eq(l.nic[0].srd_timer_losses, l.cfg.max_timeouts + 1);
  cr_assert_eq(l.flows[0].retransmits, l.cfg.max_timeouts);
  /* sent at 0 and at 100 x (2^k - 1) us for k = 1..8; the ninth timeout at 100 x (2^9 - 1) us */
  cr_assert_eq(l.eng->now, 511 * 100 * FAB_US, "%lu", l.eng->now);
  fab_nic_clear(&l.nic[0]);
  fab_engine_free(l.eng);
}

/* SRD keeps a connection's state: after a 10-packet flow (1082 B packets,
** 86 B ACKs, two 1 us links each way through the tap: an RTT of
** 2 x (86.56 + 1000) + 2 x (6.88 + 1000) ns), the
** next flow to the same peer loses its only packet and its timer, set from
** the RTT learned before (the floor, 20 us), recovers it long before the
** initial 100 us a flow with nothing learned would wait. */
Test(nic, srd_flows_to_a_peer_carry_its_rtt_on) {
  Lossy l;
  lossy_srd = true;
  lossy_init(&l, drop_seq_once, UINT32_MAX);
  lossy_srd = false;
  l.flows[0] = testnet_flow(0, 0, 1, 10 * 1000, 0, &l.cfg);
  fab_nic_post(l.eng, &l.nic[0], &l.flows[0]);
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  cr_assert_eq(l.run.done, 1);
  const FabSrdConn *c = g_hash_table_lookup(l.nic[0].srd_conns, GUINT_TO_POINTER(2));
  cr_assert_not_null(c);
  cr_assert_eq(c->min_rtt, 4186880, "%lu", c->min_rtt);
  fab_time_t t0 = l.eng->now;
  l.tap.param = 0;
  l.flows[0] = testnet_flow(0, 0, 1, 1000, t0, &l.cfg);
  l.flows[0].gen = 1;
  fab_nic_post(l.eng, &l.nic[0], &l.flows[0]);
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  cr_assert_eq(l.run.done, 2);
  cr_assert_eq(l.tap.dropped, 1);
  cr_assert_eq(l.flows[0].retransmits, 1);
  cr_assert_gt(l.flows[0].end - t0, 20 * FAB_US);
  cr_assert_lt(l.flows[0].end - t0, 25 * FAB_US);
  fab_nic_clear(&l.nic[0]);
  fab_engine_free(l.eng);
}

/* aws-ofi-nccl's stripe count (nic.h): ceil(bytes / 128 KiB) up to the
** rails, rounded down to a divisor of them; only on the network path. */
Test(nic, stripes_follow_aws_ofi_nccl) {
  FabNicCfg c = testnet_nic_cfg(100000000000ULL, 4096, FAB_TRANSPORT_SRD);
  c.stripe_rails = 4;
  c.stripe_min = 128 * 1024;
  static const struct { uint64_t bytes; uint32_t rails; uint8_t stripes; } cases[] = {
    {128 * 1024, 4, 1}, {128 * 1024 + 1, 4, 2}, {300 * 1024, 4, 2}, {384 * 1024 + 1, 4, 4}, {64 << 20, 4, 4},
    {300 * 1024, 3, 3}, {300 * 1024, 6, 3}, {600 * 1024, 6, 3}, {800 * 1024, 6, 6},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    c.stripe_rails = cases[i].rails;
    FabFlow f = testnet_flow(0, 0, 1, cases[i].bytes, 0, &c);
    cr_assert_eq(f.stripes, cases[i].stripes, "%lu B over %u rails: %u stripes", cases[i].bytes, cases[i].rails,
                 f.stripes);
  }
  c.nvl_domain = 2; /* 0 and 1 share NVLink: not striped */
  c.nvl_bps = 1;
  c.nvl_mtu = 4096;
  cr_assert_eq(testnet_flow(0, 0, 1, 64 << 20, 0, &c).stripes, 1);
}

Test(nic, flow_payload_and_packet_count) {
  FabNicCfg c = testnet_nic_cfg(1, 4096, FAB_TRANSPORT_ROCEV2);
  FabFlow f = testnet_flow(0, 0, 1, 3 * 4096 + 1, 0, &c);
  cr_assert_eq(f.npkts, 4);
  cr_assert_eq(fab_flow_payload(&f, 4096, 0), 4096);
  cr_assert_eq(fab_flow_payload(&f, 4096, 3), 1);
  FabFlow g = testnet_flow(1, 0, 1, 4096, 0, &c);
  cr_assert_eq(g.npkts, 1);
  cr_assert_neq(f.hash_fwd, f.hash_rev, "data and ACKs hash differently");
}

Test(nic, two_engines_in_one_process_do_not_interfere) {
  Pair a, b;
  pair_init(&a, 100000000000ULL, 4096, FAB_TRANSPORT_ROCEV2);
  pair_init(&b, 100000000000ULL, 4096, FAB_TRANSPORT_INFINIBAND);
  a.flows[0] = testnet_flow(0, 0, 1, 10000, 0, &a.cfg);
  b.flows[0] = testnet_flow(0, 0, 1, 10000, 0, &b.cfg);
  fab_nic_post(a.eng, &a.nic[0], &a.flows[0]);
  fab_nic_post(b.eng, &b.nic[0], &b.flows[0]);
  /* interleave: a to 1 us, b to the end, a to the end */
  cr_assert(fab_engine_run(a.eng, FAB_US));
  cr_assert(fab_engine_run(b.eng, FAB_TIME_MAX));
  cr_assert(fab_engine_run(a.eng, FAB_TIME_MAX));
  cr_assert_eq(a.flows[0].end, 819680 + 1000000);
  cr_assert_eq(b.flows[0].end, 10078 * 80 + 1000000);
  /* start + 3 data x (serialised, arrived) + 3 ACKs x 2 + the timer firing once after the end */
  cr_assert_eq(a.eng->events, 14, "%" G_GUINT64_FORMAT, a.eng->events);
  cr_assert_eq(b.eng->events, a.eng->events);
  pair_fini(&a);
  pair_fini(&b);
}

/* PFC at the NIC: flows of a paused priority are skipped by the round robin
** and resume when the pause lifts; other priorities run at line rate. */
Test(nic, paused_priority_is_skipped_until_resumed) {
  Pair p;
  pair_init(&p, 100000000000ULL, 1000, FAB_TRANSPORT_ROCEV2);
  p.flows[0] = testnet_flow(0, 0, 1, 100 * 1000, 2 * FAB_US, &p.cfg); /* priority 0 */
  p.flows[1] = testnet_flow(1, 0, 1, 100 * 1000, 2 * FAB_US, &p.cfg);
  p.flows[1].prio = 1;
  fab_nic_post(p.eng, &p.nic[0], &p.flows[0]);
  fab_nic_post(p.eng, &p.nic[0], &p.flows[1]);
  fab_port_send_pause(p.eng, &p.nic[1].port, 0, 65535); /* ~335 us, reaches NIC 0 before 2 us */
  cr_assert(fab_engine_run(p.eng, 50 * FAB_US));
  fab_time_t pkt = 1082 * 80;
  cr_assert_eq(p.flows[1].end, 2 * FAB_US + 100 * pkt + FAB_US, "priority 1 runs alone at line rate");
  cr_assert_eq(p.flows[0].snd_max, 0, "priority 0 sent nothing while paused");
  cr_assert(p.nic[0].port.paused & 1);
  fab_time_t resume = p.eng->now;
  fab_port_send_pause(p.eng, &p.nic[1].port, 0, 0);
  cr_assert(fab_engine_run(p.eng, FAB_TIME_MAX));
  fab_time_t arrives = resume + fab_port_ser(&p.nic[1].port, FAB_PAUSE_WIRE) + FAB_US;
  cr_assert_eq(p.flows[0].end, arrives + 100 * pkt + FAB_US, "end %" G_GUINT64_FORMAT, p.flows[0].end);
  cr_assert_eq(p.run.done, 2);
  pair_fini(&p);
}

/* Go-back-N after a timeout while the packets are still on their way: the
** ACKs that come back for them move the go-back point along, so nothing
** already acknowledged is sent again (a window would otherwise see more
** unacknowledged than sent and stall until the next timeout). 100 Gbps, 1 us,
** 1082-byte packets of 86.56 ns: a PAUSE sent by NIC 1 at 0 stops NIC 0 at
** 1006.72 ns, after packets 0-11 (packet 12 would start at 1038.72); the
** timer, armed as packet 0 left, runs out at 1.5 us before the first ACK
** (about 2.09 us) and goes back to 0; the ACKs of 0-11 are all in by 3.1 us. */
Test(nic, go_back_n_moves_with_acks_that_pass_it) {
  Pair p;
  pair_init(&p, 100000000000ULL, 1000, FAB_TRANSPORT_ROCEV2);
  p.nic[0].cfg.rto = 1500 * FAB_NS;
  p.flows[0] = testnet_flow(0, 0, 1, 100 * 1000, 0, &p.cfg);
  fab_nic_post(p.eng, &p.nic[0], &p.flows[0]);
  fab_port_send_pause(p.eng, &p.nic[1].port, 0, 65535);
  cr_assert(fab_engine_run(p.eng, 3300 * FAB_NS));
  const FabFlow *f = &p.flows[0];
  cr_assert_eq(p.nic[0].timeouts, 1);
  cr_assert_eq(p.nic[0].tx_data_pkts, 12, "packets 0-11, then paused: %" G_GUINT64_FORMAT, p.nic[0].tx_data_pkts);
  cr_assert_eq(f->snd_una, 12);
  cr_assert_eq(f->snd_nxt, 12, "the go-back point moved to the first packet not acknowledged, not 0: %u", f->snd_nxt);
  fab_port_send_pause(p.eng, &p.nic[1].port, 0, 0);
  cr_assert(fab_engine_run(p.eng, FAB_TIME_MAX));
  cr_assert_eq(p.run.done, 1);
  cr_assert_eq(f->rcv_bytes, 100 * 1000);
  pair_fini(&p);
}

/* A flow with its own limit (a GPU channel's throughput) is paced at it:
** its GPU makes three 4178-byte packets at a quarter of 100 Gbps, 1337 ns
** each, and a packet leaves when its last byte can go out as it is made
** (1337 - 334 ns after the one before was made), so the flow takes its
** bytes at the limit plus the path, exactly: 3 x 1337 ns + 1 us. A second
** flow without a limit is not held back by the first one's pacing. */
Test(nic, a_flow_limit_paces_that_flow_only) {
  Pair p;
  pair_init(&p, 100000000000ULL, 4096, FAB_TRANSPORT_ROCEV2);
  p.flows[0] = testnet_flow(0, 0, 1, 3 * 4096, 0, &p.cfg);
  p.flows[0].max_bps = 25000000000ULL;
  fab_nic_post(p.eng, &p.nic[0], &p.flows[0]);
  cr_assert(fab_engine_run(p.eng, FAB_TIME_MAX));
  fab_time_t ser = 4178 * 80, gap = 4178 * 320;
  cr_assert_eq(p.flows[0].end, 3 * gap + FAB_US, "end %" G_GUINT64_FORMAT, p.flows[0].end);
  pair_fini(&p);
  /* one packet too: it leaves a packet time at the limit, less its serialisation, after the start */
  pair_init(&p, 100000000000ULL, 4096, FAB_TRANSPORT_ROCEV2);
  p.flows[0] = testnet_flow(0, 0, 1, 4096, 0, &p.cfg);
  p.flows[0].max_bps = 25000000000ULL;
  fab_nic_post(p.eng, &p.nic[0], &p.flows[0]);
  cr_assert(fab_engine_run(p.eng, FAB_TIME_MAX));
  cr_assert_eq(p.flows[0].end, gap + FAB_US, "a one-packet flow takes its bytes at the limit: end %" G_GUINT64_FORMAT,
               p.flows[0].end);
  pair_fini(&p);
  pair_init(&p, 100000000000ULL, 4096, FAB_TRANSPORT_ROCEV2);
  p.flows[0] = testnet_flow(0, 0, 1, 3 * 4096, 0, &p.cfg);
  p.flows[0].max_bps = 25000000000ULL;
  p.flows[1] = testnet_flow(1, 0, 1, 3 * 4096, 0, &p.cfg);
  fab_nic_post(p.eng, &p.nic[0], &p.flows[0]);
  fab_nic_post(p.eng, &p.nic[0], &p.flows[1]);
  cr_assert(fab_engine_run(p.eng, FAB_TIME_MAX));
  cr_assert_eq(p.flows[0].end, 3 * gap + FAB_US, "the limited flow is as alone");
  cr_assert_leq(p.flows[1].end, 4 * ser + FAB_US, "the other fills the gaps: done by its 3 packets + 1 of the first");
  pair_fini(&p);
}

/* Streaming (nic.h): four flows between two GPUs over NVLink, each fed by a
** channel at a quarter of the link (25 of 100 Gbps), 4096 + 1000 bytes each
** in two segments (4112 and 1016 wire bytes), all posted at 0. Each segment
** leaves as its data begin to be made, so the four first segments share the
** link while they are made (4 x 4112 x 80 ps = one segment made at 25 Gbps,
** 4112 x 320 ps); each flow ends exactly as one alone would: its bytes at the
** limit plus the path, (4112 + 1016) x 320 ps + 1 us, and counts as sent when
** its last byte is made less its wire time. Made whole and then sent, the
** four first segments queued behind one another and the last flow ended a
** segment's time at the limit later. */
typedef struct SentAt {
  FabEngine *eng;
  fab_time_t at[4];
} SentAt;

static void sent_at(void *ctx, FabFlow *f) {
  SentAt *s = ((TestRun *)ctx)->user;
  s->at[f->slot] = s->eng->now;
}

Test(nic, streamed_flows_share_nvlink_as_they_are_made) {
  Pair p;
  memset(&p, 0, sizeof p);
  p.eng = testnet_engine(1);
  p.cfg = testnet_nic_cfg(100000000000ULL, 4096, FAB_TRANSPORT_ROCEV2);
  p.cfg.nvl_domain = 2;
  p.cfg.nvl_bps = 100000000000ULL;
  p.cfg.nvl_mtu = 4096;
  p.cfg.nvl_overhead = 16;
  for (uint32_t i = 0; i < 2; i++) {
    testnet_nic(&p.nic[i], i, &p.cfg, p.flows, &p.run, FAB_US);
    p.nic[i].nvl.latency = FAB_US;
  }
  fab_port_connect(&p.nic[0].nvl, &p.nic[1].nvl);
  SentAt s = {.eng = p.eng};
  p.run.user = &s;
  p.nic[0].sent = sent_at;
  for (uint32_t k = 0; k < 4; k++) {
    p.flows[k] = testnet_flow(k, 0, 1, 4096 + 1000, 0, &p.cfg);
    cr_assert(p.flows[k].stream && p.flows[k].npkts == 2, "flow %u: streamed, two segments", k);
    p.flows[k].max_bps = 25000000000ULL;
    fab_nic_post(p.eng, &p.nic[0], &p.flows[k]);
  }
  cr_assert(fab_engine_run(p.eng, FAB_TIME_MAX));
  cr_assert_eq(p.run.done, 4);
  fab_time_t made = (4112 + 1016) * 320;
  for (uint32_t k = 0; k < 4; k++) {
    cr_assert_eq(p.flows[k].end, made + FAB_US, "flow %u ends as one alone: %" G_GUINT64_FORMAT, k, p.flows[k].end);
    cr_assert_eq(s.at[k], made - 1016 * 80, "flow %u counts as sent once made: %" G_GUINT64_FORMAT, k, s.at[k]);
    cr_assert_eq(p.flows[k].rcv_bytes, 5096);
  }
  cr_assert_eq(p.nic[0].nvl.tx_bytes, 4 * (4112 + 1016));
  pair_fini(&p);
}

/* ---- selective repeat (out-of-order receivers) ------------------------------ */

/* NIC 0 -> a reordering element -> NIC 1: it holds chosen data packets back
** until `after` more data packets have passed (then sends the held one next),
** and may drop one; everything else passes at once. */
typedef struct Reorder {
  FabNode node;
  FabPort port[2];
  FabPkt *held[64];
  uint32_t wait[64], nheld;
  bool (*hold)(struct Reorder *r, const FabPkt *p, uint32_t *after); /* hold p for *after packets? */
  uint32_t drop_seq;  /* a first transmission of this PSN is dropped (UINT32_MAX: none) */
  uint32_t dropped;
  uint16_t dropped_ev; /* the entropy value the dropped packet took */
  FabRng rng;
} Reorder;

static void reorder_wake(FabEngine *eng, void *self, uint64_t arg) {}
static const FabOps reorder_ops = {"reorder", reorder_wake};

static void reorder_pass(FabEngine *eng, Reorder *r, FabPkt *p, uint32_t out) {
  p->ready = eng->now;
  fab_port_enqueue(eng, &r->port[out], p);
}

static void reorder_receive(FabEngine *eng, FabNode *self, FabPkt *p, FabPort *in) {
  Reorder *r = (Reorder *)self;
  uint32_t out = in->index ^ 1, after = 0;
  if (p->type != FAB_PKT_DATA) {
    reorder_pass(eng, r, p, out);
    return;
  }
  if (p->seq == r->drop_seq && !(p->flags & FAB_PKTF_RETX)) {
    r->dropped++;
    r->dropped_ev = p->ev;
    fab_pkt_free(eng, p);
    return;
  }
  bool held = r->nheld < 64 && r->hold && r->hold(r, p, &after) && after > 0;
  if (held) {
    r->held[r->nheld] = p;
    r->wait[r->nheld++] = after;
  } else {
    reorder_pass(eng, r, p, out);
  }
  for (uint32_t i = 0; i < r->nheld;) { /* every data packet that passed or was held counts down the others */
    if (r->held[i] == p || --r->wait[i]) {
      i++;
      continue;
    }
    reorder_pass(eng, r, r->held[i], out);
    r->held[i] = r->held[--r->nheld];
    r->wait[i] = r->wait[r->nheld];
  }
}

typedef struct Sel {
  FabEngine *eng;
  FabNicCfg cfg;
  FabNic nic[2];
  Reorder mid;
  FabFlow flows[1];
  TestRun run;
} Sel;

/* Run one flow of npkts 1000-byte packets from NIC 0 through the element
** to NIC 1, spraying as `spray` says (FAB_SPRAY_NONE: not). */
static bool sel_srd; /* the runs below deliver as transport srd does (srd.h) */
static fab_time_t sel_avoid_delay; /* spray avoid steers by RTT too, with this avoid_delay (0: not) */

static void sel_run_sprayed(Sel *s, bool selective, bool (*hold)(Reorder *, const FabPkt *, uint32_t *),
                            uint32_t drop_seq, uint32_t npkts, FabSpray spray, uint32_t paths) {
  memset(s, 0, sizeof *s);
  s->eng = testnet_engine(1);
  s->cfg = testnet_nic_cfg(100000000000ULL, 1000, sel_srd ? FAB_TRANSPORT_SRD : FAB_TRANSPORT_ROCEV2);
  s->cfg.selective = selective;
  s->cfg.srd = sel_srd;
  s->cfg.rto_min = 20 * FAB_US;
  s->cfg.spray = (uint8_t)spray;
  s->cfg.paths = paths;
  s->cfg.dup_threshold = 3;
  s->cfg.avoid_rtt = sel_avoid_delay > 0;
  if (sel_avoid_delay) s->cfg.avoid_delay = sel_avoid_delay;
  for (uint32_t i = 0; i < 2; i++) testnet_nic(&s->nic[i], i, &s->cfg, s->flows, &s->run, FAB_US);
  fab_elem_init(&s->mid.node.el, &reorder_ops);
  s->mid.node.receive = reorder_receive;
  s->mid.hold = hold;
  s->mid.drop_seq = drop_seq;
  fab_rng_init(&s->mid.rng, 9, 1);
  for (uint32_t i = 0; i < 2; i++) fab_port_init(&s->mid.port[i], &s->mid.node, i, 100000000000ULL, FAB_US, 1);
  fab_port_connect(&s->nic[0].port, &s->mid.port[0]);
  fab_port_connect(&s->mid.port[1], &s->nic[1].port);
  s->flows[0] = testnet_flow(0, 0, 1, (uint64_t)npkts * 1000, 0, &s->cfg);
  fab_nic_post(s->eng, &s->nic[0], &s->flows[0]);
  cr_assert(fab_engine_run(s->eng, FAB_TIME_MAX));
  cr_assert_eq(s->run.done, 1, "done once");
  cr_assert_eq(s->flows[0].rcv_bytes, (uint64_t)npkts * 1000, "every byte once");
  cr_assert(s->flows[0].acked, "the sender heard of all of it");
  cr_assert_eq(s->mid.nheld, 0);
  cr_assert_eq(fab_pool_live(s->eng->pool), 0);
}

static void sel_run(Sel *s, bool selective, bool (*hold)(Reorder *, const FabPkt *, uint32_t *), uint32_t drop_seq,
                    uint32_t npkts) {
  sel_run_sprayed(s, selective, hold, drop_seq, npkts, FAB_SPRAY_NONE, 0);
}

static void sel_fini(Sel *s) {
  for (uint32_t i = 0; i < 2; i++) fab_nic_clear(&s->nic[i]);
  fab_engine_free(s->eng);
}

static bool hold_3_for_2(Reorder *r, const FabPkt *p, uint32_t *after) {
  *after = 2;
  return p->seq == 3 && !(p->flags & FAB_PKTF_RETX);
}

static bool hold_3_for_5(Reorder *r, const FabPkt *p, uint32_t *after) {
  *after = 5;
  return p->seq == 3 && !(p->flags & FAB_PKTF_RETX);
}

/* PSN 3 arrives after 4 and 5: the selective receiver holds them (two
** out-of-order packets, each ACKed at once) and nothing is resent, as 2 < 3
** later PSNs were acknowledged; go-back-N NAKs and resends from 3. Held
** behind 5 later ones (more than the threshold), PSN 3 is presumed lost
** and resent once: the copy that arrives second is a duplicate, dropped. */
Test(nic, selective_receivers_take_reordering_without_resending) {
  Sel s;
  sel_run(&s, true, hold_3_for_2, UINT32_MAX, 10);
  cr_assert_eq(s.nic[1].ooo_pkts, 2);
  cr_assert_eq(s.flows[0].reorder, 2, "PSN 5 came 2 ahead of 3");
  cr_assert_eq(s.flows[0].retransmits, 0);
  cr_assert_eq(s.nic[1].naks_sent, 0);
  cr_assert_eq(s.nic[1].rx_data_pkts, 10);
  cr_assert_eq(s.nic[0].dsacks, 0, "nothing resent, no D-SACK");
  cr_assert_eq(s.flows[0].dup_thresh, 3);
  /* the run's reorder histogram: 4 came 1 ahead of 3, 5 came 2 ahead, the other 8 (3 too) in order */
  static const uint64_t hist[FAB_REORDER_BINS] = {8, 1, 1};
  for (uint32_t b = 0; b < FAB_REORDER_BINS; b++)
    cr_assert_eq(s.nic[1].reorder_hist[b], hist[b], "bin %s: %lu", fab_reorder_bin_names[b],
                 s.nic[1].reorder_hist[b]);
  sel_fini(&s);
  sel_run(&s, false, hold_3_for_2, UINT32_MAX, 10);
  cr_assert_geq(s.nic[1].naks_sent, 1);
  cr_assert_eq(s.flows[0].reorder, 0, "go-back-N holds nothing out of order");
  cr_assert_geq(s.flows[0].retransmits, 1, "go-back-N resends what it already delivered");
  sel_fini(&s);
  sel_run(&s, true, hold_3_for_5, UINT32_MAX, 10);
  cr_assert_eq(s.flows[0].retransmits, 1, "3 presumed lost once 3 later PSNs were acknowledged");
  cr_assert_eq(s.flows[0].reorder, 5);
  cr_assert_eq(s.nic[1].rx_data_pkts, 11, "the late original and the copy");
  /* the copy found its original: a D-SACK told the sender reordering went 5 deep, so this flow, and the next
  ** ones to NIC 1, presume a loss only after 6 later PSNs */
  cr_assert_eq(s.nic[0].dsacks, 1, "%lu D-SACKs", s.nic[0].dsacks);
  cr_assert_eq(s.flows[0].dup_thresh, 6);
  cr_assert_eq(GPOINTER_TO_UINT(g_hash_table_lookup(s.nic[0].reordering, GUINT_TO_POINTER(1 + 1))), 6);
  /* 4 came 1 ahead of 3, 5 and 6 2 and 3 ahead, 7 and 8 4 and 5 ahead; the other five in order */
  static const uint64_t held5[FAB_REORDER_BINS] = {5, 1, 2, 2};
  for (uint32_t b = 0; b < FAB_REORDER_BINS; b++) cr_assert_eq(s.nic[1].reorder_hist[b], held5[b], "bin %u", b);
  cr_assert_eq(s.nic[1].reorder_hist[0] + s.nic[1].reorder_hist[1] + s.nic[1].reorder_hist[2] +
                   s.nic[1].reorder_hist[3], 10, "each PSN counted once, the duplicate not");
  sel_fini(&s);
}

Test(nic, reorder_bins_are_powers_of_two) {
  static const uint32_t ahead[] = {0, 1, 2, 3, 4, 7, 8, 127, 128, 255, 256, 100000};
  static const uint32_t bin[] = {0, 1, 2, 2, 3, 3, 4, 7, 8, 8, 9, 9};
  for (size_t i = 0; i < G_N_ELEMENTS(ahead); i++)
    cr_assert_eq(fab_reorder_bin(ahead[i]), bin[i], "%u ahead: bin %u (%s)", ahead[i], fab_reorder_bin(ahead[i]),
                 fab_reorder_bin_names[fab_reorder_bin(ahead[i])]);
}

/* A lost packet: the selective sender resends it alone (go-back-N: it and
** what followed); the last packet lost: nothing after it reveals the gap,
** the timer does. */
Test(nic, selective_senders_resend_only_what_was_lost) {
  Sel s;
  sel_run(&s, true, NULL, 3, 10);
  cr_assert_eq(s.mid.dropped, 1);
  cr_assert_eq(s.flows[0].retransmits, 1);
  cr_assert_eq(s.nic[0].timeouts, 0);
  cr_assert_lt(s.flows[0].end, 100 * FAB_US, "within an RTT or so");
  sel_fini(&s);
  sel_run(&s, false, NULL, 3, 10);
  cr_assert_gt(s.flows[0].retransmits, 1);
  sel_fini(&s);
  sel_run(&s, true, NULL, 9, 10);
  cr_assert_eq(s.flows[0].retransmits, 1);
  cr_assert_eq(s.nic[0].timeouts, 1);
  cr_assert_gt(s.flows[0].end, s.cfg.rto);
  sel_fini(&s);
}

/* Half the packets held back for 1 to 12 others, drawn at random: the flow
** completes once with every byte once, every packet sent arrives, and only
** the reordering deeper than the threshold causes copies. */
static bool hold_random(Reorder *r, const FabPkt *p, uint32_t *after) {
  *after = 1 + (uint32_t)fab_rng_below(&r->rng, 12);
  /* not the flow's last 13, nor copies: they might wait for packets that never come */
  return fab_rng_below(&r->rng, 2) == 0 && p->seq + 13 < 400 && !(p->flags & FAB_PKTF_RETX);
}

Test(nic, packets_in_a_random_order_complete_exactly_once) {
  Sel s;
  sel_run(&s, true, hold_random, UINT32_MAX, 400);
  cr_assert_gt(s.nic[1].ooo_pkts, 100);
  cr_assert_eq(s.nic[1].rx_data_pkts, 400 + s.flows[0].retransmits, "every packet sent arrived");
  cr_assert_eq(s.nic[0].timeouts, 0);
  sel_fini(&s);
}

/* ---- spraying (nic.h) --------------------------------------------------------- */

/* What the middle element saw of a sprayed flow: data packets per entropy
** value, each value's hash, and which value carried the marked packet. */
static struct {
  uint32_t count[FAB_SPRAY_MAX_PATHS], hash[FAB_SPRAY_MAX_PATHS];
  uint32_t mark_seq, marked_ev, order[64];
} seen;

/* Never holds: counts, and marks the first transmission of mark_seq with CE
** as a congested switch would (the element owns the packet here). */
static bool watch_ev(Reorder *r, const FabPkt *p, uint32_t *after) {
  if (p->flags & FAB_PKTF_RETX) return false;
  seen.count[p->ev]++;
  seen.hash[p->ev] = p->hash;
  if (p->seq < 64) seen.order[p->seq] = p->ev;
  if (p->seq == seen.mark_seq) {
    ((FabPkt *)p)->flags |= FAB_PKTF_ECN;
    seen.marked_ev = p->ev;
  }
  return false;
}

static void spray_run(Sel *s, FabSpray mode, uint32_t paths, uint32_t npkts, uint32_t mark_seq) {
  memset(&seen, 0, sizeof seen);
  seen.mark_seq = mark_seq;
  sel_run_sprayed(s, true, watch_ev, UINT32_MAX, npkts, mode, paths);
}

/* Round robin over 8 values: each pass of 8 packets takes every value once
** (in an order of its own), each value hashes as the flow's source port
** moved on by it (value 0: the flow's own hash), and no two values hash
** alike here. */
Test(nic, spraying_takes_every_entropy_value_once_per_pass) {
  Sel s;
  spray_run(&s, FAB_SPRAY_ROUND_ROBIN, 8, 40, UINT32_MAX);
  for (uint32_t v = 0; v < 8; v++) cr_assert_eq(seen.count[v], 5, "value %u taken %u times", v, seen.count[v]);
  for (uint32_t pass = 0; pass < 5; pass++) {
    uint32_t got = 0;
    for (uint32_t k = 0; k < 8; k++) got |= 1u << seen.order[pass * 8 + k];
    cr_assert_eq(got, 0xff, "pass %u took values %#x", pass, got);
  }
  bool reshuffled = false;
  for (uint32_t k = 8; k < 40; k++) reshuffled |= seen.order[k] != seen.order[k % 8];
  cr_assert(reshuffled, "passes draw their own orders");
  cr_assert_eq(seen.hash[0], s.flows[0].hash_fwd);
  for (uint32_t v = 0; v < 8; v++) {
    uint16_t sport = (uint16_t)(49152u + ((s.flows[0].sport - 49152u + v) & 0x3fffu));
    cr_assert_eq(seen.hash[v], fab_ecmp_hash(0, 1, sport, 4791, 17, 0));
    for (uint32_t w = 0; w < v; w++) cr_assert_neq(seen.hash[v], seen.hash[w]);
  }
  cr_assert_eq(s.nic[0].ev_skips, 0);
  sel_fini(&s);
}

/* avoid: a congestion mark on packet 4 comes back in the ACK with its
** value, and the sender passes over that value once: 63 packets take 64
** values' turns, 8 passes in which the marked value is taken 7 times and
** every other 8. */
Test(nic, avoid_skips_a_value_that_came_back_marked_once) {
  Sel s;
  spray_run(&s, FAB_SPRAY_AVOID, 8, 63, 4);
  cr_assert_eq(s.nic[0].ev_skips, 1);
  for (uint32_t v = 0; v < 8; v++)
    cr_assert_eq(seen.count[v], v == seen.marked_ev ? 7u : 8u, "value %u taken %u times (marked: %u)", v,
                 seen.count[v], seen.marked_ev);
  sel_fini(&s);
  spray_run(&s, FAB_SPRAY_ROUND_ROBIN, 8, 63, 4); /* the same mark, not heeded */
  cr_assert_eq(s.nic[0].ev_skips, 0);
  uint32_t last_pass = 0; /* the values of pass 8's first 7 packets: the one left out is taken 7 times */
  for (uint32_t k = 56; k < 63; k++) last_pass |= 1u << seen.order[k];
  for (uint32_t v = 0; v < 8; v++) cr_assert_eq(seen.count[v], last_pass >> v & 1 ? 8u : 7u);
  sel_fini(&s);
}

/* Counts every data packet that passes, copies too. */
static bool count_ev(Reorder *r, const FabPkt *p, uint32_t *after) {
  seen.count[p->ev]++;
  return false;
}

/* avoid with selective receivers: PSN 4's first copy is lost; when it is
** resent (3 later PSNs acknowledged) the value it took is skipped once, as
** EQDS penalises a path on a NACK. 62 packets and the resend take 64 turns,
** 8 passes: the lost value is taken 7 times (one of them the lost copy, not
** seen past the loss), every other value 8. Round robin does not heed it. */
Test(nic, avoid_skips_the_value_of_a_lost_packet_once) {
  Sel s;
  memset(&seen, 0, sizeof seen);
  sel_run_sprayed(&s, true, count_ev, 4, 62, FAB_SPRAY_AVOID, 8);
  cr_assert_eq(s.mid.dropped, 1);
  cr_assert_eq(s.flows[0].retransmits, 1);
  cr_assert_eq(s.nic[0].ev_loss_avoids, 1);
  cr_assert_eq(s.nic[0].ev_skips, 1);
  cr_assert_eq(s.nic[0].ev_rtt_avoids, 0, "no avoid_delay: delay does not steer");
  for (uint32_t v = 0; v < 8; v++)
    cr_assert_eq(seen.count[v], v == s.mid.dropped_ev ? 6u : 8u, "value %u seen %u times (lost on %u)", v,
                 seen.count[v], s.mid.dropped_ev);
  cr_assert_null(s.flows[0].ev_of, "the ring went back when the flow was acknowledged");
  sel_fini(&s);
  memset(&seen, 0, sizeof seen);
  sel_run_sprayed(&s, true, count_ev, 4, 62, FAB_SPRAY_ROUND_ROBIN, 8);
  cr_assert_eq(s.nic[0].ev_loss_avoids + s.nic[0].ev_skips, 0);
  sel_fini(&s);
}

static uint16_t held_ev;

static bool hold_3_for_2_watch(Reorder *r, const FabPkt *p, uint32_t *after) {
  if (p->seq == 3 && !(p->flags & FAB_PKTF_RETX)) held_ev = p->ev;
  watch_ev(r, p, after);
  return hold_3_for_2(r, p, after);
}

/* With avoid_delay given, RTTs steer avoid too: PSN 3 held back for two
** packets (160 ns at 1000 B and 100 Gb/s; not a loss: 2 < 3) comes back that
** much above the lowest RTT, over an avoid_delay of 100 ns, and its value is
** skipped once: of 63 packets it takes 7, the others 8. Without
** avoid_delay, nothing is skipped. */
Test(nic, avoid_skips_a_slow_value_once_when_avoid_delay_is_given) {
  Sel s;
  memset(&seen, 0, sizeof seen);
  seen.mark_seq = UINT32_MAX;
  sel_avoid_delay = 100 * FAB_NS;
  sel_run_sprayed(&s, true, hold_3_for_2_watch, UINT32_MAX, 63, FAB_SPRAY_AVOID, 8);
  sel_avoid_delay = 0;
  cr_assert_eq(s.flows[0].retransmits, 0);
  cr_assert_eq(s.nic[0].ev_rtt_avoids, 1);
  cr_assert_eq(s.nic[0].ev_skips, 1);
  for (uint32_t v = 0; v < 8; v++)
    cr_assert_eq(seen.count[v], v == held_ev ? 7u : 8u, "value %u taken %u times (held: %u)", v, seen.count[v],
                 held_ev);
  sel_fini(&s);
  memset(&seen, 0, sizeof seen);
  seen.mark_seq = UINT32_MAX;
  sel_run_sprayed(&s, true, hold_3_for_2_watch, UINT32_MAX, 63, FAB_SPRAY_AVOID, 8);
  cr_assert_eq(s.nic[0].ev_rtt_avoids + s.nic[0].ev_skips, 0);
  sel_fini(&s);
}

/* ---- SRD's delivery (srd.h) ---------------------------------------------------- */

static bool hold_3_for_4(Reorder *r, const FabPkt *p, uint32_t *after) {
  *after = 4;
  return p->seq == 3 && !(p->flags & FAB_PKTF_RETX);
}

/* Sprayed over 8 values, PSN 3 comes behind the 4 after it, all of its own
** pass, so on other values: selective repeat presumes it lost (4 > 3 later
** PSNs acknowledged) and resends it, SRD's path rule does not. One packet
** dropped on one path (paths 1): the ACK of the next one on it shows the
** loss, one resend, no timer. The last packet dropped: only its timer can
** see it, after the minimum RTO (an RTT of ~4 us here is far below it). */
Test(nic, srd_resends_what_was_lost_not_what_was_late) {
  Sel s;
  sel_run_sprayed(&s, true, hold_3_for_4, UINT32_MAX, 40, FAB_SPRAY_ROUND_ROBIN, 8);
  cr_assert_eq(s.flows[0].retransmits, 1, "selective repeat takes lateness for loss");
  sel_fini(&s);
  sel_srd = true;
  sel_run_sprayed(&s, true, hold_3_for_4, UINT32_MAX, 40, FAB_SPRAY_ROUND_ROBIN, 8);
  cr_assert_eq(s.flows[0].retransmits, 0);
  cr_assert_eq(s.nic[1].ooo_pkts, 4);
  cr_assert_eq(s.nic[1].tx_ctrl_pkts, 40, "an ACK per packet");
  cr_assert_eq(s.nic[0].srd_path_losses + s.nic[0].srd_timer_losses, 0);
  sel_fini(&s);
  sel_run_sprayed(&s, true, NULL, 5, 40, FAB_SPRAY_NONE, 0);
  cr_assert_eq(s.mid.dropped, 1);
  cr_assert_eq(s.flows[0].retransmits, 1);
  cr_assert_eq(s.nic[0].srd_path_losses, 1);
  cr_assert_eq(s.nic[0].timeouts, 0);
  cr_assert_eq(s.nic[0].dsacks, 0, "nothing arrived twice");
  sel_fini(&s);
  sel_run_sprayed(&s, true, NULL, 39, 40, FAB_SPRAY_NONE, 0);
  cr_assert_eq(s.flows[0].retransmits, 1);
  cr_assert_eq(s.nic[0].srd_timer_losses, 1);
  cr_assert_eq(s.nic[0].timeouts, 1);
  cr_assert_gt(s.flows[0].end, s.cfg.rto_min, "the timer waited its floor");
  cr_assert_lt(s.flows[0].end, s.cfg.rto, "not the initial RTO: the RTT was measured");
  sel_fini(&s);
  sel_srd = false;
}

/* hold_random, as paths do it: a packet never passes one of its own value
** (held behind at least as many packets as the one of its value held
** longest, plus one). */
static bool hold_random_fifo(Reorder *r, const FabPkt *p, uint32_t *after) {
  if (!hold_random(r, p, after)) *after = 0;
  for (uint32_t i = 0; i < r->nheld; i++)
    if (r->held[i]->ev == p->ev) *after = MAX(*after, r->wait[i] + 1);
  return *after > 0;
}

/* Half the packets held back at random over 8 sprayed values, each value's
** in order (hold_random_fifo): SRD resends nothing, and every packet
** arrives once. The same with no regard for values: packets passed by
** their own value's are resent, and arrive twice, D-SACKed. */
Test(nic, srd_packets_in_a_random_order_complete_exactly_once) {
  Sel s;
  sel_srd = true;
  sel_run_sprayed(&s, true, hold_random_fifo, UINT32_MAX, 400, FAB_SPRAY_ROUND_ROBIN, 8);
  cr_assert_gt(s.nic[1].ooo_pkts, 100);
  cr_assert_eq(s.flows[0].retransmits, 0);
  cr_assert_eq(s.nic[1].rx_data_pkts, 400);
  sel_fini(&s);
  sel_run_sprayed(&s, true, hold_random, UINT32_MAX, 400, FAB_SPRAY_ROUND_ROBIN, 8);
  cr_assert_gt(s.flows[0].retransmits, 0);
  cr_assert_eq(s.nic[0].dsacks, s.flows[0].retransmits, "each resend found its original there");
  cr_assert_gt(s.nic[1].ooo_pkts, 100);
  cr_assert_eq(s.nic[1].rx_data_pkts, 400 + s.flows[0].retransmits, "every packet sent arrived");
  cr_assert_eq(s.nic[0].timeouts, 0);
  sel_fini(&s);
  sel_srd = false;
}

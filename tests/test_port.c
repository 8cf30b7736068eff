/* Ports and links: serialisation, propagation, priorities, ready times. */
#include "testnet.h"
#include <signal.h>

/* A node that records what arrives and frees it. */
typedef struct Sink {
  FabNode node;
  FabPort port;
  int n;
  fab_time_t at[64];
  uint32_t seq[64];
} Sink;

static void sink_wake(FabEngine *eng, void *self, uint64_t arg) {}
static const FabOps sink_ops = {"sink", sink_wake};

static void sink_receive(FabEngine *eng, FabNode *self, FabPkt *p, FabPort *in) {
  Sink *s = (Sink *)self;
  cr_assert_lt(s->n, 64);
  s->at[s->n] = eng->now;
  s->seq[s->n++] = p->seq;
  fab_pkt_free(eng, p);
}

/* A source node with one port (nothing to pull) and a sink at the far end. */
typedef struct Line {
  FabEngine *eng;
  Sink src, dst;
} Line;

static void line_init(Line *l, uint64_t bps, fab_time_t latency) {
  memset(l, 0, sizeof *l);
  l->eng = testnet_engine(1);
  Sink *s[2] = {&l->src, &l->dst};
  for (int i = 0; i < 2; i++) {
    fab_elem_init(&s[i]->node.el, &sink_ops);
    s[i]->node.receive = sink_receive;
    fab_port_init(&s[i]->port, &s[i]->node, 0, bps, latency, 4);
  }
  fab_port_connect(&l->src.port, &l->dst.port);
}

static FabPkt *pkt(Line *l, uint32_t seq, uint32_t wire, uint8_t prio, fab_time_t ready) {
  FabPkt *p = fab_pkt_alloc(l->eng);
  p->seq = seq;
  p->wire = wire;
  p->prio = prio;
  p->ready = ready;
  return p;
}

Test(port, back_to_back_serialisation_and_latency) {
  Line l;
  line_init(&l, 100000000000ULL, 1500 * FAB_NS);
  for (uint32_t i = 0; i < 3; i++) fab_port_enqueue(l.eng, &l.src.port, pkt(&l, i, 1000, 0, 0));
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  cr_assert_eq(l.dst.n, 3);
  for (int i = 0; i < 3; i++) cr_assert_eq(l.dst.at[i], (fab_time_t)(i + 1) * 80000 + 1500000, "packet %d", i);
  cr_assert_eq(l.src.port.tx_pkts, 3);
  cr_assert_eq(l.src.port.tx_bytes, 3000);
  cr_assert_eq(l.src.port.max_qbytes, 2000, "the first left the queue at once, two waited");
  cr_assert_eq(fab_pool_live(l.eng->pool), 0);
  fab_engine_free(l.eng);
}

Test(port, several_packets_on_the_wire_at_once) {
  Line l; /* 10 us of latency holds many 80 ns packets in flight */
  line_init(&l, 100000000000ULL, 10 * FAB_US);
  for (uint32_t i = 0; i < 20; i++) fab_port_enqueue(l.eng, &l.src.port, pkt(&l, i, 1000, 0, 0));
  cr_assert(fab_engine_run(l.eng, 10 * FAB_US));
  cr_assert_eq(l.dst.n, 0);
  cr_assert_eq(fab_port_in_flight(&l.src.port), 20, "all serialised, none arrived");
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  cr_assert_eq(l.dst.n, 20);
  for (int i = 0; i < 20; i++) cr_assert_eq(l.dst.seq[i], (uint32_t)i, "FIFO on the wire");
  fab_engine_free(l.eng);
}

Test(port, strict_priority_highest_first) {
  Line l;
  line_init(&l, 100000000000ULL, 0);
  /* the first packet starts at once; then the queues hold low 1, 2 and high 3, 4 */
  fab_port_enqueue(l.eng, &l.src.port, pkt(&l, 0, 1000, 0, 0));
  fab_port_enqueue(l.eng, &l.src.port, pkt(&l, 1, 1000, 0, 0));
  fab_port_enqueue(l.eng, &l.src.port, pkt(&l, 2, 1000, 0, 0));
  fab_port_enqueue(l.eng, &l.src.port, pkt(&l, 3, 1000, 3, 0));
  fab_port_enqueue(l.eng, &l.src.port, pkt(&l, 4, 1000, 3, 0));
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  uint32_t want[] = {0, 3, 4, 1, 2};
  for (int i = 0; i < 5; i++) cr_assert_eq(l.dst.seq[i], want[i], "slot %d", i);
  fab_engine_free(l.eng);
}

Test(port, a_packet_waits_for_its_ready_time) {
  Line l;
  line_init(&l, 100000000000ULL, 0);
  fab_port_enqueue(l.eng, &l.src.port, pkt(&l, 0, 1000, 0, 600 * FAB_NS));
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  cr_assert_eq(l.dst.at[0], 600000 + 80000);
  fab_engine_free(l.eng);
}

Test(port, a_ready_high_priority_packet_does_not_wait_behind_an_unready_one) {
  Line l;
  line_init(&l, 100000000000ULL, 0);
  fab_port_enqueue(l.eng, &l.src.port, pkt(&l, 0, 1000, 3, 1000 * FAB_NS));
  fab_port_enqueue(l.eng, &l.src.port, pkt(&l, 1, 1000, 0, 0));
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  cr_assert_eq(l.dst.seq[0], 1);
  cr_assert_eq(l.dst.at[0], 80000);
  cr_assert_eq(l.dst.at[1], 1000000 + 80000);
  fab_engine_free(l.eng);
}

Test(port, an_earlier_ready_time_is_not_missed) {
  Line l; /* a wake is pending for t=5us; a packet ready at 1us arrives later */
  line_init(&l, 100000000000ULL, 0);
  fab_port_enqueue(l.eng, &l.src.port, pkt(&l, 0, 1000, 0, 5 * FAB_US));
  fab_port_enqueue(l.eng, &l.src.port, pkt(&l, 1, 1000, 2, 1 * FAB_US));
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  cr_assert_eq(l.dst.seq[0], 1);
  cr_assert_eq(l.dst.at[0], 1000000 + 80000);
  cr_assert_eq(l.dst.at[1], 5000000 + 80000);
  fab_engine_free(l.eng);
}

Test(port, flush_frees_everything_and_counts_bytes) {
  Line l;
  line_init(&l, 100000000000ULL, 10 * FAB_US);
  for (uint32_t i = 0; i < 10; i++) fab_port_enqueue(l.eng, &l.src.port, pkt(&l, i, 1000, i % 2, 0));
  cr_assert(fab_engine_run(l.eng, 500 * FAB_NS)); /* some serialised, some queued */
  uint64_t bytes = 0;
  cr_assert_eq(fab_port_flush(l.eng, &l.src.port, &bytes), 10);
  cr_assert_eq(bytes, 10000);
  cr_assert_eq(l.src.port.qbytes, 0);
  cr_assert_eq(fab_pool_live(l.eng->pool), 0);
  fab_engine_free(l.eng);
}

Test(port, serialisation_helpers) {
  FabPort pt;
  Sink s = {0};
  fab_port_init(&pt, &s.node, 0, 400000000000ULL, 0, 1);
  cr_assert_eq(pt.ps_per_byte, 20);
  cr_assert_eq(fab_port_ser(&pt, 4178), 83560);
  fab_port_set_rate(&pt, 7200000000000ULL); /* 900 GB/s: 1.11 ps per byte */
  cr_assert_eq(pt.ps_per_byte, 0);
  cr_assert_eq(fab_port_ser(&pt, 9), 10, "exactly 10 ps");
  cr_assert_eq(fab_port_ser(&pt, 10), 12, "11.1 ps rounds up");
  cr_assert_eq(fab_time_ser_big(1ULL << 40, 100000000000ULL), (1ULL << 40) * 80);
  /* a 4 MiB train at 300 Gb/s (8e12 is no multiple of the rate): 4194304 x 8e12 / 3e11 = 111848106.67 ps, up;
  ** in 64 bits bytes x 8e12 wraps above 2,305,843 bytes */
  cr_assert_eq(fab_time_ser(4194304, 300000000000ULL), 111848107);
  fab_port_set_rate(&pt, 300000000000ULL);
  cr_assert_eq(pt.ps_per_byte, 0);
  cr_assert_eq(fab_port_ser(&pt, 16777216), 447392427, "a 16 MiB train: 447392426.67 ps, up");
  cr_assert_eq(fab_time_ser(2097151, 300000000000ULL), fab_time_ser_big(2097151, 300000000000ULL));
}

/* The ledger check (debug_checks builds run it at every event) passes on a
** port in use and stops the program when a ledger disagrees with its list. */
static void queued_line(Line *l) {
  line_init(l, 100000000000ULL, 1500 * FAB_NS);
  g_strlcpy(l->src.node.name, "src", sizeof l->src.node.name);
  for (uint32_t i = 0; i < 3; i++) fab_port_enqueue(l->eng, &l->src.port, pkt(l, i, 1000, 1, 1000 * FAB_NS));
}

Test(port, ledger_check_holds_while_in_use) {
  Line l;
  queued_line(&l);
  fab_port_check(&l.src.port);
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  fab_port_check(&l.src.port);
  fab_engine_free(l.eng);
}

Test(port, ledger_check_catches_a_wrong_byte_count, .signal = SIGTRAP) {
  Line l;
  queued_line(&l);
  l.src.port.q[1].bytes += 1;
  fab_port_check(&l.src.port);
}

Test(port, ledger_check_catches_a_wrong_busy_mask, .signal = SIGTRAP) {
  Line l;
  queued_line(&l);
  l.src.port.busy_prios &= ~2u;
  fab_port_check(&l.src.port);
}

Test(port, ledger_check_catches_credit_beyond_its_start, .signal = SIGTRAP) {
  Line l;
  queued_line(&l);
  fab_port_set_credits(&l.src.port, 8192, 1000);
  l.src.port.credits[0] = 8193;
  fab_port_check(&l.src.port);
}

/* A receiver that schedules a wake of its own on each arrival and notes
** who ran and which key that wake got. */
static FabElem *rx_by[4];
static uint64_t rx_key[4];
static int rx_n;
static void keyed_receive(FabEngine *eng, FabNode *self, FabPkt *p, FabPort *in) {
  rx_by[rx_n] = eng->cur;
  rx_key[rx_n++] = eng->cur->tie;
  fab_engine_after(eng, 1, self, 0);
  sink_receive(eng, self, p, in);
}

/* The pending events, popped in order and pushed back. */
static int pending(FabEngine *eng, FabEvent *ev, int max) {
  int n = 0;
  while (n < max && fab_evq_pop(eng->evq, &ev[n])) n++;
  for (int i = 0; i < n; i++) fab_evq_push(eng->evq, ev[i].time, ev[i].tie, ev[i].target, ev[i].arg);
  return n;
}

/* An arrival is the event of the wire's far end, keyed (port id, 0) whether
** the sending port scheduled it (the first on an empty wire) or the wire
** chained it (the next); the receiver's handler runs as the wire, whose
** keys are odd, the port's even: no counter is shared across the link. */
Test(port, an_arrival_is_the_wires_event_keyed_by_the_wire) {
  Line l;
  line_init(&l, 100000000000ULL, 1500 * FAB_NS); /* 1000 B: 80 ns */
  l.dst.node.receive = keyed_receive;
  rx_n = 0;
  fab_elem_set_id(&l.src.node.el, 6);
  cr_assert_eq(fab_port_number(&l.src.port, 7), 8);
  fab_elem_set_id(&l.dst.node.el, 8);
  fab_port_number(&l.dst.port, 9);
  const uint64_t id7 = (uint64_t)7 << FAB_TIE_SEQ_BITS;
  for (uint32_t i = 0; i < 3; i++) fab_port_enqueue(l.eng, &l.src.port, pkt(&l, i, 1000, 0, 0));
  FabEvent ev[8];
  cr_assert(fab_engine_run(l.eng, 80 * FAB_NS)); /* the first packet is on the wire */
  cr_assert_eq(pending(l.eng, ev, 8), 2);
  cr_assert(ev[0].target == &l.src.port && ev[0].time == 160 * FAB_NS && (ev[0].tie & 1) == 0 &&
            (ev[0].tie >> FAB_TIE_SEQ_BITS) == 7, "the port's own event: its id, an even key");
  cr_assert(ev[1].target == &l.src.port.wire && ev[1].time == 1580 * FAB_NS && ev[1].tie == id7,
            "the arrival the port scheduled: the wire's, keyed (7, 0)");
  cr_assert(fab_engine_run(l.eng, 1580 * FAB_NS)); /* it arrived; the next is chained */
  cr_assert_eq(rx_n, 1);
  cr_assert(rx_by[0] == &l.src.port.wire, "the receiver ran as the wire");
  cr_assert((rx_key[0] & 1) == 1 && (rx_key[0] >> FAB_TIE_SEQ_BITS) == 7, "its wake keyed by the wire: odd");
  int n = pending(l.eng, ev, 8);
  bool chained = false;
  for (int i = 0; i < n; i++)
    if (ev[i].target == &l.src.port.wire) chained = ev[i].time == 1660 * FAB_NS && ev[i].tie == id7;
  cr_assert(chained, "the arrival the wire chained: keyed (7, 0) too");
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  cr_assert_eq(l.dst.n, 3);
  for (int i = 0; i < 3; i++) cr_assert_eq(l.dst.at[i], (fab_time_t)(i + 1) * 80000 + 1500000, "packet %d", i);
  cr_assert_eq(rx_key[2], rx_key[0] + 4, "the wire's counter moved by 2 a wake");
  cr_assert_eq(l.src.port.el.tie & 1, 0);
  cr_assert_eq(fab_pool_live(l.eng->pool), 0);
  fab_engine_free(l.eng);
}

/* Link-level credits across a flap (InfiniBand's link training): back up,
** the sender has what the far end advertises, its buffer less what it still
** holds from before, a link latency later and nothing until then; a return
** the far end made before it came back up is in that figure and counts no
** more; one made after it that arrives first is kept for it. The far end
** here holds what the test says and returns credits when the test says. */
static uint64_t far_holds;
static uint64_t test_held(const FabNode *self, const FabPort *in, uint32_t vl) { return vl == 0 ? far_holds : 0; }

Test(port, credits_after_a_flap_are_what_the_far_end_advertises) {
  Line l;
  line_init(&l, 100000000000ULL, 1 * FAB_US); /* 1000 B: 80 ns */
  l.dst.node.held = test_held;
  fab_port_set_credits(&l.src.port, 8192, 1000);
  for (uint32_t i = 0; i < 3; i++) fab_port_enqueue(l.eng, &l.src.port, pkt(&l, i, 1000, 0, 0));
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  cr_assert_eq(l.dst.n, 3);
  cr_assert_eq(l.src.port.credits[0], 8192 - 3000);
  fab_time_t t1 = l.eng->now; /* 1.24 us */
  fab_port_return_credit(l.eng, &l.src.port, 0, 1000); /* the far end passed one on: back at t1 + 1 us */
  far_holds = 2000;
  fab_port_set_down(l.eng, &l.src.port, true);
  fab_port_set_down(l.eng, &l.dst.port, true);
  fab_port_set_down(l.eng, &l.dst.port, false); /* advertises 8192 - 2000, at t1 + 1 us */
  FabElem low; /* a return made now, after the far end came up, keyed ahead of its figure */
  fab_elem_init(&low, &sink_ops);
  l.eng->cur = &low;
  far_holds = 1000;
  fab_port_return_credit(l.eng, &l.src.port, 0, 1000);
  l.eng->cur = NULL;
  fab_port_set_down(l.eng, &l.src.port, false);
  cr_assert_eq(l.src.port.credits[0], 0, "nothing to send on until the far end's figure");
  cr_assert_eq(l.src.port.nocredit & 1, 1);
  fab_port_enqueue(l.eng, &l.src.port, pkt(&l, 3, 1000, 0, 0));
  cr_assert(fab_engine_run(l.eng, t1 + FAB_US - 1));
  cr_assert_eq(l.dst.n, 3, "held back for want of credit");
  cr_assert_eq(l.src.port.presync[0], 0);
  cr_assert(fab_engine_run(l.eng, t1 + FAB_US));
  cr_assert_eq(l.src.port.credits[0], 6192,
               "the figure (8192 - 2000) and the return that came first (1000), less the packet then sent (1000): %ld",
               (long)l.src.port.credits[0]);
  fab_port_check(&l.src.port);
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  cr_assert_eq(l.dst.n, 4);
  cr_assert_eq(l.dst.at[3], t1 + FAB_US + 80000 + FAB_US, "sent as the figure came");
  fab_port_return_credit(l.eng, &l.src.port, 0, 2000); /* the far end passes on the rest: 1000 old, the new one */
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  cr_assert_eq(l.src.port.credits[0], 8192, "whole again, not past it (the stale return counted no more)");
  fab_port_check(&l.src.port);
  cr_assert_eq(fab_pool_live(l.eng->pool), 0);
  fab_engine_free(l.eng);
}

/* A flap shorter than a packet: the packet on the serialiser and those
** queued when the link went down are lost, and one queued while it is down
** too, though the link is back up before the first one's end. */
Test(port, a_flap_shorter_than_a_packet_loses_what_was_on_the_link) {
  Line l;
  line_init(&l, 100000000000ULL, 1 * FAB_US); /* 1 MB: 80 us */
  fab_port_enqueue(l.eng, &l.src.port, pkt(&l, 0, 1000000, 0, 0));
  fab_port_enqueue(l.eng, &l.src.port, pkt(&l, 1, 1000, 0, 0));
  cr_assert(fab_engine_run(l.eng, 10 * FAB_US));
  fab_port_set_down(l.eng, &l.src.port, true);
  fab_port_set_down(l.eng, &l.dst.port, true);
  cr_assert_eq(l.src.port.lost, 1, "the queued one at once");
  fab_port_enqueue(l.eng, &l.src.port, pkt(&l, 2, 1000, 0, 0));
  cr_assert_eq(l.src.port.lost, 2, "and one queued while down");
  cr_assert(fab_engine_run(l.eng, 20 * FAB_US));
  fab_port_set_down(l.eng, &l.src.port, false);
  fab_port_set_down(l.eng, &l.dst.port, false);
  fab_port_enqueue(l.eng, &l.src.port, pkt(&l, 3, 1000, 0, 0)); /* after: sent once the link is free */
  cr_assert(fab_engine_run(l.eng, FAB_TIME_MAX));
  cr_assert_eq(l.dst.n, 1);
  cr_assert_eq(l.dst.seq[0], 3);
  cr_assert_eq(l.dst.at[0], 80 * FAB_US + 80000 + FAB_US, "behind the lost packet's serialisation");
  cr_assert_eq(l.src.port.lost, 3);
  cr_assert_eq(l.src.port.lost_bytes, 1000000 + 2000);
  cr_assert_eq(fab_pool_live(l.eng->pool), 0);
  fab_engine_free(l.eng);
}

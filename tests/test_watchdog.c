/* The deadlock and stall watchdog (models/watchdog.h), on hand-built
** fabrics: two switches joined by two links, with packets queued at egress
** ports that PFC PAUSE frames hold. The watchdog sees a stall when nothing
** is delivered for a period while some port is blocked, and reports a
** deadlock as the cycle of blocked egress ports waiting on each other. */
#include "testnet.h"
#include "models/watchdog.h"

#define G100 100000000000ULL

/* The owner's view, through the hooks. */
typedef struct Owner {
  uint64_t progress;   /* what progress() returns */
  bool finished;       /* what finished() returns */
  int finished_calls, progress_calls;
} Owner;

static bool owner_finished(void *ctx) {
  Owner *o = ctx;
  o->finished_calls++;
  return o->finished;
}

static uint64_t owner_progress(void *ctx) {
  Owner *o = ctx;
  o->progress_calls++;
  return o->progress;
}

static const FabWatchdogHooks hooks = {owner_finished, owner_progress};

/* Makes progress (a delivery somewhere) at chosen times, and sets the
** workload finished at another. */
typedef struct Ticker {
  FabElem el;
  Owner *owner;
} Ticker;

enum { TICK_PROGRESS = 0, TICK_FINISH = 1 };

static void ticker_wake(FabEngine *eng, void *self, uint64_t arg) {
  Ticker *t = self;
  if (arg == TICK_PROGRESS) t->owner->progress++;
  else t->owner->finished = true;
}
static const FabOps ticker_ops = {"ticker", ticker_wake};

/* A sink that frees what reaches it (an endpoint). */
static void sink_wake(FabEngine *eng, void *self, uint64_t arg) {}
static const FabOps sink_ops = {"sink", sink_wake};
static void sink_receive(FabEngine *eng, FabNode *self, FabPkt *p, FabPort *in) { fab_pkt_free(eng, p); }

/* Switches A and B, joined by two links: A:p0 - B:p0 and A:p1 - B:p1; port
** 2 of each goes to a sink host (A: host 0, B: host 1). Packets to host 9 go
** round the ring A:p0 -> B:p0, B:p1 -> A:p1, A:p0 ... (a cyclic buffer
** dependency); packets to host 0 or 1 go to that host. */
typedef struct Ring {
  FabEngine *eng;
  FabSwitch *sw[2];
  FabNode sink_node[2];
  FabPort sink[2];
  FabPort *ports[8];   /* every port: A's 3, B's 3, the sinks' 2 */
  Owner owner;
  Ticker ticker;
  FabWatchdog *wd;
} Ring;

#define RING_HOSTS 10
#define LOOP_DST 9

static void ring_init_pfc(Ring *r, fab_time_t period, const FabPfcCfg *pfc) {
  memset(r, 0, sizeof *r);
  r->eng = testnet_engine(1);
  FabSwitchCfg sc = {0, 1 << 20, 1.0, 2, 0};
  if (pfc) sc.pfc = *pfc;
  const char *names[2] = {"A", "B"};
  for (uint32_t s = 0; s < 2; s++) {
    r->sw[s] = fab_switch_new(names[s], &sc, 3, RING_HOSTS);
    for (uint32_t i = 0; i < 3; i++) fab_switch_port_init(r->sw[s], i, G100, FAB_US);
    fab_elem_init(&r->sink_node[s].el, &sink_ops);
    r->sink_node[s].receive = sink_receive;
    g_snprintf(r->sink_node[s].name, sizeof r->sink_node[s].name, "host%u", s);
    fab_port_init(&r->sink[s], &r->sink_node[s], 0, G100, FAB_US, 2);
    fab_port_connect(&r->sink[s], fab_switch_port_at(r->sw[s], 2));
  }
  fab_port_connect(fab_switch_port_at(r->sw[0], 0), fab_switch_port_at(r->sw[1], 0));
  fab_port_connect(fab_switch_port_at(r->sw[0], 1), fab_switch_port_at(r->sw[1], 1));
  /* A: the loop goes out p0, host 0 on p2, host 1 over p0; B: the loop goes
  ** out p1, host 1 on p2, host 0 over p1 */
  const uint32_t p0 = 0, p1 = 1, p2 = 2;
  uint32_t a0 = fab_switch_add_group(r->sw[0], &p0, 1), a2 = fab_switch_add_group(r->sw[0], &p2, 1);
  uint32_t b1 = fab_switch_add_group(r->sw[1], &p1, 1), b2 = fab_switch_add_group(r->sw[1], &p2, 1);
  fab_switch_set_route(r->sw[0], LOOP_DST, a0);
  fab_switch_set_route(r->sw[0], 0, a2);
  fab_switch_set_route(r->sw[0], 1, a0);
  fab_switch_set_route(r->sw[1], LOOP_DST, b1);
  fab_switch_set_route(r->sw[1], 1, b2);
  fab_switch_set_route(r->sw[1], 0, b1);
  uint32_t n = 0;
  for (uint32_t s = 0; s < 2; s++)
    for (uint32_t i = 0; i < 3; i++) r->ports[n++] = fab_switch_port_at(r->sw[s], i);
  r->ports[n++] = &r->sink[0];
  r->ports[n++] = &r->sink[1];
  r->wd = fab_watchdog_new(period, r->sw, 2, r->ports, 8, &hooks, &r->owner);
  fab_elem_init(&r->ticker.el, &ticker_ops);
  r->ticker.owner = &r->owner;
}

/* The ring without PFC in the switches (pauses are sent by hand). */
static void ring_init(Ring *r, fab_time_t period) { ring_init_pfc(r, period, NULL); }

/* A packet of 1000 wire bytes to `dst` arrives at switch s on port `in`. */
static void inject(Ring *r, uint32_t s, uint32_t in, uint32_t dst, uint8_t prio) {
  FabPkt *p = fab_pkt_alloc(r->eng);
  p->dst = dst;
  p->wire = 1000;
  p->payload = 900;
  p->prio = prio;
  FabNode *node = fab_switch_node(r->sw[s]);
  node->receive(r->eng, node, p, fab_switch_port_at(r->sw[s], in));
}

/* The longest PAUSE: 65535 quanta of 512 bit times, 335.5 us at 100 Gb/s. */
#define LONG_PAUSE 65535u
#define PAUSE_SPAN (65535ULL * 64 * 80)

/* Each switch pauses priority `prio` of the other's loop egress: B tells A
** to stop A:p0, A tells B to stop B:p1. Runs until both are in force. */
static void pause_each_other(Ring *r, uint32_t prio) {
  fab_port_send_pause(r->eng, fab_switch_port_at(r->sw[1], 0), prio, LONG_PAUSE);
  fab_port_send_pause(r->eng, fab_switch_port_at(r->sw[0], 1), prio, LONG_PAUSE);
  cr_assert(fab_engine_run(r->eng, 2 * FAB_US));
  cr_assert(fab_port_blocked(fab_switch_port_at(r->sw[0], 0), prio), "A:p0 paused by B");
  cr_assert(fab_port_blocked(fab_switch_port_at(r->sw[1], 1), prio), "B:p1 paused by A");
  cr_assert_not(fab_port_blocked(fab_switch_port_at(r->sw[0], 0), prio ^ 1), "only that priority");
}

/* Fill both loop egresses with packets that came in on the loop: A:p0 holds
** packets from ingress A:p1, B:p1 holds packets from ingress B:p0. */
static void fill_the_loop(Ring *r, uint8_t prio, int n) {
  for (int i = 0; i < n; i++) {
    inject(r, 0, 1, LOOP_DST, prio);
    inject(r, 1, 0, LOOP_DST, prio);
  }
  cr_assert_eq(fab_switch_port_at(r->sw[0], 0)->q[prio].n, (uint32_t)n, "held at A:p0");
  cr_assert_eq(fab_switch_port_at(r->sw[1], 1)->q[prio].n, (uint32_t)n, "held at B:p1");
  FabPort *h[3];
  cr_assert_eq(fab_switch_holders(r->sw[0], 1, prio, h, 3), 1);
  cr_assert_eq(h[0], fab_switch_port_at(r->sw[0], 0), "A's ingress p1 waits on A:p0");
  cr_assert_eq(fab_switch_holders(r->sw[1], 0, prio, h, 3), 1);
  cr_assert_eq(h[0], fab_switch_port_at(r->sw[1], 1), "B's ingress p0 waits on B:p1");
}

static void ring_fini(Ring *r) {
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < 8; i++) fab_port_flush(r->eng, r->ports[i], &bytes);
  cr_assert_eq(fab_pool_live(r->eng->pool), 0, "packets leaked");
  fab_watchdog_free(r->wd);
  fab_switch_free(r->sw[0]);
  fab_switch_free(r->sw[1]);
  fab_engine_free(r->eng);
}

Test(watchdog, a_two_switch_pfc_cycle_is_a_deadlock) {
  Ring r;
  ring_init(&r, 10 * FAB_US);
  fab_watchdog_start(r.eng, r.wd);
  pause_each_other(&r, 1);
  fill_the_loop(&r, 1, 5);
  cr_assert(fab_engine_run(r.eng, FAB_TIME_MAX));
  cr_assert(fab_watchdog_stalled(r.wd), "no delivery while ports are paused: a stall");
  cr_assert_eq(fab_engine_now(r.eng), 10 * FAB_US, "seen at the first look, and the run stopped there");
  cr_assert(r.eng->stopped);
  uint32_t n;
  FabPort *const *cyc = fab_watchdog_cycle(r.wd, &n);
  cr_assert_eq(n, 2, "a cycle of two ports, got %u", n);
  /* A:p0 waits for B to drain ingress p0, which waits on B:p1; B:p1 waits for
  ** A to drain ingress p1, which waits on A:p0 */
  cr_assert_eq(cyc[0], fab_switch_port_at(r.sw[0], 0), "A:p0 first (the first blocked port found)");
  cr_assert_eq(cyc[1], fab_switch_port_at(r.sw[1], 1), "then B:p1");
  for (uint32_t i = 0; i < n; i++) {
    cr_assert_eq(cyc[i]->peer->owner, cyc[(i + 1) % n]->owner, "each port waits on the switch of the next");
    cr_assert_not_null(fab_switch_of(cyc[i]->owner), "cycle ports are switch egresses");
  }
  cr_assert_eq(fab_switch_port_at(r.sw[0], 0)->tx_pkts, 0, "nothing left A:p0");
  cr_assert_eq(fab_switch_port_at(r.sw[1], 1)->tx_pkts, 0, "nothing left B:p1");
  cr_assert_gt(r.owner.progress_calls, 0);
  ring_fini(&r);
}

Test(watchdog, the_run_stops_at_the_stall_not_at_the_end_of_the_pause) {
  /* without the watchdog the pauses lift after 335 us and the loop spins
  ** on; with it the run ends at the first look without progress */
  Ring r;
  ring_init(&r, 50 * FAB_US);
  fab_watchdog_start(r.eng, r.wd);
  pause_each_other(&r, 0);
  fill_the_loop(&r, 0, 3);
  cr_assert(fab_engine_run(r.eng, FAB_TIME_MAX));
  cr_assert(fab_watchdog_stalled(r.wd));
  cr_assert_eq(fab_engine_now(r.eng), 50 * FAB_US);
  cr_assert_lt(fab_engine_now(r.eng), PAUSE_SPAN);
  uint32_t n;
  fab_watchdog_cycle(r.wd, &n);
  cr_assert_eq(n, 2);
  ring_fini(&r);
}

Test(watchdog, progress_resets_it) {
  /* the same deadlock, but the owner reports a delivery at 5, 15 and 25 us:
  ** the looks at 10, 20 and 30 us see progress, the one at 40 us does not */
  Ring r;
  ring_init(&r, 10 * FAB_US);
  fab_watchdog_start(r.eng, r.wd);
  for (int i = 0; i < 3; i++) fab_engine_at(r.eng, (5 + 10 * (fab_time_t)i) * FAB_US, &r.ticker, TICK_PROGRESS);
  pause_each_other(&r, 1);
  fill_the_loop(&r, 1, 2);
  cr_assert(fab_engine_run(r.eng, 35 * FAB_US));
  cr_assert_not(fab_watchdog_stalled(r.wd), "progress at every look so far");
  cr_assert_eq(r.owner.progress_calls, 3, "looks at 10, 20, 30 us");
  uint32_t n;
  fab_watchdog_cycle(r.wd, &n);
  cr_assert_eq(n, 0, "no deadlock reported while progress is made");
  cr_assert(fab_engine_run(r.eng, FAB_TIME_MAX));
  cr_assert(fab_watchdog_stalled(r.wd));
  cr_assert_eq(fab_engine_now(r.eng), 40 * FAB_US, "the first look without progress");
  cr_assert_eq(r.owner.progress_calls, 4);
  fab_watchdog_cycle(r.wd, &n);
  cr_assert_eq(n, 2);
  ring_fini(&r);
}

Test(watchdog, slow_progress_is_not_a_stall) {
  /* a delivery just before every look, for 1 ms: never stalled */
  Ring r;
  ring_init(&r, 10 * FAB_US);
  fab_watchdog_start(r.eng, r.wd);
  for (fab_time_t t = 9 * FAB_US; t < FAB_MS; t += 10 * FAB_US) fab_engine_at(r.eng, t, &r.ticker, TICK_PROGRESS);
  fab_engine_at(r.eng, FAB_MS - 5 * FAB_US, &r.ticker, TICK_FINISH);
  pause_each_other(&r, 1);
  fill_the_loop(&r, 1, 2);
  /* the pauses lift after 335 us and the loop spins: stop at 1 ms */
  cr_assert(fab_engine_run(r.eng, FAB_MS + 10 * FAB_US));
  cr_assert_not(fab_watchdog_stalled(r.wd));
  cr_assert_eq(r.owner.progress_calls, 99, "a look every 10 us up to 990 us");
  cr_assert_eq(r.owner.finished_calls, 100, "and the look at 1 ms saw it finished");
  ring_fini(&r);
}

Test(watchdog, finished_stops_it) {
  /* a deadlock is there, but the workload is done: the watchdog neither
  ** reports it nor looks again, so the event queue runs dry */
  Ring r;
  ring_init(&r, 10 * FAB_US);
  fab_watchdog_start(r.eng, r.wd);
  fab_engine_at(r.eng, 5 * FAB_US, &r.ticker, TICK_FINISH);
  pause_each_other(&r, 1);
  fill_the_loop(&r, 1, 2);
  cr_assert(fab_engine_run(r.eng, 100 * FAB_US));
  cr_assert_not(fab_watchdog_stalled(r.wd));
  cr_assert_eq(r.owner.finished_calls, 1, "one look, at 10 us, and no other");
  cr_assert_eq(r.owner.progress_calls, 0, "finished is asked first");
  uint32_t n;
  fab_watchdog_cycle(r.wd, &n);
  cr_assert_eq(n, 0);
  ring_fini(&r);
}

Test(watchdog, finished_later_stops_it_too) {
  /* progress at every look until the workload finishes at 25 us: the look at
  ** 30 us is the last */
  Ring r;
  ring_init(&r, 10 * FAB_US);
  fab_watchdog_start(r.eng, r.wd);
  fab_engine_at(r.eng, 5 * FAB_US, &r.ticker, TICK_PROGRESS);
  fab_engine_at(r.eng, 15 * FAB_US, &r.ticker, TICK_PROGRESS);
  fab_engine_at(r.eng, 25 * FAB_US, &r.ticker, TICK_FINISH);
  pause_each_other(&r, 1);
  fill_the_loop(&r, 1, 2);
  cr_assert(fab_engine_run(r.eng, 100 * FAB_US));
  cr_assert_not(fab_watchdog_stalled(r.wd));
  cr_assert_eq(r.owner.finished_calls, 3, "looks at 10, 20, 30 us");
  cr_assert_eq(r.owner.progress_calls, 2);
  ring_fini(&r);
}

Test(watchdog, nothing_blocked_is_not_a_stall) {
  /* no progress, but no port blocked (an idle fabric, or compute only) */
  Ring r;
  ring_init(&r, 10 * FAB_US);
  fab_watchdog_start(r.eng, r.wd);
  cr_assert(fab_engine_run(r.eng, 95 * FAB_US));
  cr_assert_not(fab_watchdog_stalled(r.wd));
  cr_assert_eq(r.owner.progress_calls, 9);
  ring_fini(&r);
}

Test(watchdog, a_stall_without_a_cycle) {
  /* A:p0 is paused and holds packets from host 0 (ingress A:p2) to host 1,
  ** but B holds nothing that waits: stalled, no deadlock */
  Ring r;
  ring_init(&r, 10 * FAB_US);
  fab_watchdog_start(r.eng, r.wd);
  fab_port_send_pause(r.eng, fab_switch_port_at(r.sw[1], 0), 1, LONG_PAUSE);
  cr_assert(fab_engine_run(r.eng, 2 * FAB_US));
  for (int i = 0; i < 4; i++) inject(&r, 0, 2, 1, 1);
  cr_assert_eq(fab_switch_port_at(r.sw[0], 0)->q[1].n, 4);
  cr_assert(fab_engine_run(r.eng, FAB_TIME_MAX));
  cr_assert(fab_watchdog_stalled(r.wd));
  cr_assert_eq(fab_engine_now(r.eng), 10 * FAB_US);
  uint32_t n;
  fab_watchdog_cycle(r.wd, &n);
  cr_assert_eq(n, 0, "a wait that ends at B, not a cycle");
  ring_fini(&r);
}

Test(watchdog, a_chain_that_ends_in_a_cycle_reports_only_the_cycle) {
  /* host 0 -> A (ingress p2) waits on A:p0 too; the cycle is still the two
  ** loop ports, found from A:p0 */
  Ring r;
  ring_init(&r, 10 * FAB_US);
  fab_watchdog_start(r.eng, r.wd);
  pause_each_other(&r, 1);
  fill_the_loop(&r, 1, 2);
  for (int i = 0; i < 2; i++) inject(&r, 0, 2, LOOP_DST, 1);
  /* and host 0's own port is paused by A (PFC to the host) */
  fab_port_send_pause(r.eng, fab_switch_port_at(r.sw[0], 2), 1, LONG_PAUSE);
  cr_assert(fab_engine_run(r.eng, FAB_TIME_MAX));
  cr_assert(fab_watchdog_stalled(r.wd));
  cr_assert(fab_port_blocked(&r.sink[0], 1), "the host is paused too");
  uint32_t n;
  FabPort *const *cyc = fab_watchdog_cycle(r.wd, &n);
  cr_assert_eq(n, 2);
  cr_assert_eq(cyc[0], fab_switch_port_at(r.sw[0], 0));
  cr_assert_eq(cyc[1], fab_switch_port_at(r.sw[1], 1));
  ring_fini(&r);
}

Test(watchdog, credit_starved_ports_count_as_blocked) {
  /* InfiniBand: a port whose head packet lacks credit cannot send it */
  FabNode n = {0};
  FabPort pt;
  fab_port_init(&pt, &n, 0, G100, 0, 2);
  cr_assert_not(fab_port_blocked(&pt, 0));
  fab_port_set_credits(&pt, 4096, 1000);
  FabPkt p = {0};
  p.wire = 1000;
  pt.q[1].head = pt.q[1].tail = &p;
  pt.credits[1] = 999;
  cr_assert(fab_port_blocked(&pt, 1), "999 B of credit for a 1000 B packet");
  cr_assert_not(fab_port_blocked(&pt, 0), "an empty VL is not blocked");
  pt.credits[1] = 1000;
  cr_assert_not(fab_port_blocked(&pt, 1));
  pt.paused = 1;
  cr_assert(fab_port_blocked(&pt, 0), "paused by PFC");
  cr_assert_not(fab_port_blocked(&pt, 1));
}


Test(watchdog, the_switches_own_pfc_deadlocks_the_loop) {
  /* the ring with PFC on priority 1 in both switches: packets to host 9
  ** circle for ever, each loop ingress goes over XOFF, and each switch pauses
  ** the other's loop egress (and refreshes the pause): nothing is delivered */
  FabPfcCfg pfc = {.enabled = true, .lossless = 1u << 1, .xoff = 8000, .xon = 4000, .quanta = 65535,
                   .headroom = 128 << 10, .mtu_wire = 1000}; /* headroom: more than all 80 packets */
  Ring r;
  ring_init_pfc(&r, 20 * FAB_US, &pfc);
  fab_watchdog_start(r.eng, r.wd);
  for (int i = 0; i < 40; i++) {
    inject(&r, 0, 1, LOOP_DST, 1);
    inject(&r, 1, 0, LOOP_DST, 1);
  }
  cr_assert(fab_engine_run(r.eng, FAB_TIME_MAX));
  cr_assert(fab_watchdog_stalled(r.wd));
  cr_assert_eq(fab_engine_now(r.eng), 20 * FAB_US);
  cr_assert_eq(fab_switch_stats(r.sw[0])->drops + fab_switch_stats(r.sw[1])->drops, 0, "lossless");
  cr_assert_gt(fab_switch_port_at(r.sw[0], 1)->pause_tx, 0, "A paused B:p1");
  cr_assert_gt(fab_switch_port_at(r.sw[1], 0)->pause_tx, 0, "B paused A:p0");
  uint32_t n;
  FabPort *const *cyc = fab_watchdog_cycle(r.wd, &n);
  cr_assert_eq(n, 2, "got %u", n);
  cr_assert_eq(cyc[0], fab_switch_port_at(r.sw[0], 0));
  cr_assert_eq(cyc[1], fab_switch_port_at(r.sw[1], 1));
  ring_fini(&r);
}

/* The steady-state fast-forward (tools/libfabsim/fastfwd.h), on cases
** worked out on paper: flows alone on their links run at line rate, so a
** jump over a stretch of them must end where the packets end. */
#include <criterion/criterion.h>
#include <glib.h>
#include <math.h>
#include <string.h>
#include "tools/libfabsim/driver.h"
#include "tools/libfabsim/json.h"
#include "tools/libfabsim/scenario.h"
#include "testscen.h"

/* Two hosts and two more on one switch of 0 ns: 100 Gbps links of 1 us,
** mtu 4096 B, RoCEv2's 82 B of headers: a packet is 4178 x 80 ps on the
** wire. A flow alone ends 2 us + (packets + 1) x that after it starts (its
** bytes back to back, its last packet stored once at the switch). */
static const char *yaml = "name: ff\nseed: 1\ncluster: {nodes: 4}\n"
                          "fabric:\n  topology: {kind: single-switch}\n"
                          "  link: {bandwidth: 100Gbps, latency: 1us, mtu: 4096}\n"
                          "  switch: {latency: 0ns, buffer: 4MiB}\n"
                          "workload:\n  kind: flows\n"
                          "  flows: [{src: 0, dst: 1, size: 100MiB}, {src: 2, dst: 3, size: 50MiB, start: 3ms}]\n";

static const fab_time_t pkt = 4178 * 80;

static void run(const char *const *sets, FabResults *res, FabScenario **sc) {
  *sc = testscen_load(yaml, sets);
  testscen_run(*sc, res);
}

static fab_time_t fct(const FabResults *r, uint32_t i) { return r->flows[i].end - r->flows[i].start; }

Test(fastfwd, flows_alone_end_where_their_packets_do) {
  FabScenario *a, *b;
  FabResults pa, fa;
  const char *const off[] = {"fabric.fast_forward=off", NULL}, *const on[] = {"fabric.fast_forward=on", NULL};
  run(off, &pa, &a);
  run(on, &fa, &b);
  /* packet by packet: on paper */
  cr_assert_eq(fct(&pa, 0), 2 * FAB_US + (25600 + 1) * pkt, "%" G_GUINT64_FORMAT, fct(&pa, 0));
  cr_assert_eq(fct(&pa, 1), 2 * FAB_US + (12800 + 1) * pkt, "%" G_GUINT64_FORMAT, fct(&pa, 1));
  cr_assert_null(pa.ff, "off: no record");
  /* fast-forward: jumps over most of both flows, and each ends within a packet of where its packets do */
  cr_assert_not_null(fa.ff);
  cr_assert_geq(fa.ff->jumps, 2, "before the second flow starts, and after: %" G_GUINT64_FORMAT, fa.ff->jumps);
  cr_assert_gt(fa.ff->skipped_fraction, 0.8, "%g", fa.ff->skipped_fraction);
  cr_assert_gt(fa.ff->skipped_packets, 30000, "%" G_GUINT64_FORMAT, fa.ff->skipped_packets);
  for (uint32_t i = 0; i < 2; i++) {
    fab_time_t p = fct(&pa, i), f = fct(&fa, i), d = p > f ? p - f : f - p;
    cr_assert_leq(d, pkt, "flow %u: %" G_GUINT64_FORMAT " ps packet by packet, %" G_GUINT64_FORMAT " fast-forwarded",
                  i, p, f);
  }
  cr_assert_eq(fa.flows[1].start, pa.flows[1].start, "a jump stops before a flow is posted");
  /* the links' counters count the skipped time: bytes within half a percent */
  uint64_t bp = testscen_bytes_from(&pa, "host0"), bf = testscen_bytes_from(&fa, "host0");
  cr_assert_lt((double)(bp > bf ? bp - bf : bf - bp), 0.005 * (double)bp, "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT,
               bp, bf);
  cr_assert_lt(fa.events * 5, pa.events, "far fewer events: %" G_GUINT64_FORMAT " against %" G_GUINT64_FORMAT,
               fa.events, pa.events);
  /* said, in the JSON too */
  bool said = false;
  for (size_t i = 0; i < fa.n_warnings; i++) said |= strstr(fa.warnings[i], "fabric.fast_forward: ") != NULL;
  cr_assert(said, "a warning says what was skipped");
  char *js = fab_json_summary(&fa);
  cr_assert(strstr(js, "\"fast_forward\": {") && strstr(js, "\"skipped_packets\": "), "%s", js);
  g_free(js);
  js = fab_json_summary(&pa);
  cr_assert(strstr(js, "\"fast_forward\": null"), "%s", js);
  g_free(js);
  testscen_done(a, &pa);
  testscen_done(b, &fa);
}

Test(fastfwd, the_same_scenario_gives_the_same_json) {
  const char *const on[] = {"fabric.fast_forward=on", NULL};
  char *js[2];
  for (int k = 0; k < 2; k++) {
    FabScenario *sc;
    FabResults r;
    run(on, &r, &sc);
    js[k] = testscen_stable_json(&r);
    testscen_done(sc, &r);
  }
  cr_assert_str_eq(js[0], js[1]);
  g_free(js[0]);
  g_free(js[1]);
}

Test(fastfwd, auto_is_off_for_flows_and_a_stop_time_bounds_a_jump) {
  FabScenario *a, *b;
  FabResults r, s;
  run(NULL, &r, &a); /* auto: off, as for every network experiment */
  cr_assert_null(r.ff);
  const char *const stop[] = {"fabric.fast_forward=on", "stop_time=5ms", NULL};
  b = testscen_load(yaml, stop);
  FabRunOpts o = {0};
  cr_assert_eq(fab_run(b, &o, &s), 1, "the flows are not done by then");
  cr_assert(strstr(s.failure, "stop_time reached"), "%s", s.failure);
  cr_assert_not_null(s.ff);
  cr_assert_geq(s.ff->jumps, 1);
  cr_assert_eq(s.sim_time, 5 * FAB_MS, "cut at stop_time, not past it: %" G_GUINT64_FORMAT, s.sim_time);
  testscen_done(a, &r);
  testscen_done(b, &s);
}

Test(fastfwd, srd_and_threads_run_packet_by_packet_and_say_so) {
  const char *const srd[] = {"fabric.fast_forward=on", "fabric.transport=srd", NULL};
  FabScenario *sc;
  FabResults r;
  run(srd, &r, &sc);
  cr_assert_null(r.ff);
  bool said = false;
  for (size_t i = 0; i < r.n_warnings; i++) said |= strstr(r.warnings[i], "not under transport srd") != NULL;
  cr_assert(said);
  testscen_done(sc, &r);
  const char *const on[] = {"fabric.fast_forward=on", NULL};
  sc = testscen_load(yaml, on);
  FabRunOpts o = {.threads = 2};
  cr_assert_eq(fab_run(sc, &o, &r), 0, "%s", r.failure ? r.failure : "");
  cr_assert_null(r.ff);
  said = false;
  for (size_t i = 0; i < r.n_warnings; i++) said |= strstr(r.warnings[i], "not on a run over threads") != NULL;
  cr_assert(said);
  testscen_done(sc, &r);
}

Test(fastfwd, a_typo_is_an_error_naming_the_key) {
  const char *const bad[] = {"fabric.fast_forward=maybe", NULL};
  testscen_expect_error(yaml, bad, "", "fast_forward");
  const char *const w[] = {"fabric.fast_forward_window=0us", NULL};
  testscen_expect_error(yaml, w, "", "fast_forward_window");
}

Test(fastfwd, samples_go_on_through_a_jump) {
  /* sampled every 10 us: a row at every multiple of it up to the end, the links' bytes never falling, and
  ** the sender's link's bytes at the end the link's count */
  const char *const on[] = {"fabric.fast_forward=on", "output.sample_interval=10us", NULL};
  FabScenario *sc = testscen_load(yaml, on);
  FabRunOpts o = {.sample_queues = true};
  FabResults r;
  cr_assert_eq(fab_run(sc, &o, &r), 0, "%s", r.failure ? r.failure : "");
  cr_assert_geq(r.ff->jumps, 2);
  const FabQueueSeries *q = &r.queues;
  cr_assert_eq(q->interval, 10 * FAB_US);
  cr_assert_geq(q->n_samples, r.sim_time / q->interval, "%u rows", q->n_samples);
  for (uint32_t s = 0; s < q->n_samples; s++) cr_assert_eq(q->t[s], s * q->interval, "row %u at %" G_GUINT64_FORMAT, s, q->t[s]);
  size_t nl = r.n_links, h0 = nl;
  for (size_t l = 0; l < nl; l++)
    if (g_str_has_prefix(r.links[l].from, "host0")) h0 = l;
  cr_assert_lt(h0, nl);
  for (uint32_t s = 1; s < q->n_samples; s++)
    cr_assert_geq(q->link_bytes[s * nl + h0], q->link_bytes[(s - 1) * nl + h0], "row %u", s);
  /* 100 Gbps through the first flow's stretch: 12.5 bytes a ns, the wire's share of it */
  uint32_t s1 = (uint32_t)(1 * FAB_MS / q->interval), s2 = (uint32_t)(2 * FAB_MS / q->interval);
  double rate = (double)(q->link_bytes[s2 * nl + h0] - q->link_bytes[s1 * nl + h0]) / 1e6; /* bytes per ns */
  cr_assert(rate > 12.5 * 0.99 && rate <= 12.5 * 1.001, "%g bytes/ns", rate);
  testscen_done(sc, &r);
}

Test(fastfwd, a_lossy_permutation_comes_within_a_tenth_of_a_percent) {
  /* the quickstart's 32-host permutation with 64 MiB flows on a lossy fabric: flows that resend after drops
  ** are not steady (a jump that froze one cost its tail flow the whole jump, +0.77 %, before it was caught) */
  FabResults r[2];
  FabScenario *sc[2];
  for (int k = 0; k < 2; k++) {
    const char *const sets[] = {"workload.size=64MiB", k ? "fabric.fast_forward=on" : "fabric.fast_forward=off", NULL};
    sc[k] = testscen_load_file("scenarios/quickstart.yaml", sets);
    testscen_run(sc[k], &r[k]);
  }
  cr_assert_gt(r[0].drops, 0, "lossy");
  double e = fabs((double)r[1].sim_time / (double)r[0].sim_time - 1);
  cr_assert_lt(e, 1e-3, "%" G_GUINT64_FORMAT " ps against %" G_GUINT64_FORMAT, r[1].sim_time, r[0].sim_time);
  for (int k = 0; k < 2; k++) testscen_done(sc[k], &r[k]);
}

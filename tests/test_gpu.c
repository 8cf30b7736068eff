/* The GPU's compute stream and reducer (models/gpu.h): each lane runs one
** item at a time, first in first out; the two lanes are independent; the
** done callback hears of every item at the time it finishes, with the time
** it began. Times are worked out on paper. */
#include <criterion/criterion.h>
#include <glib.h>
#include "models/gpu.h"
#include "topologies/topology.h"
#include "testnet.h"

/* What the done callback heard, in order. */
typedef struct Heard {
  FabEngine *eng;
  FabGpu *gpu;
  int n;
  int which[256];
  uint32_t tag[256];
  fab_time_t began[256], at[256];
  /* optional: submit a follow-up on the other lane when an item finishes */
  bool chain;
  fab_time_t chain_dur;
} Heard;

static void heard_done(void *ctx, int which, uint32_t tag, fab_time_t began) {
  Heard *h = ctx;
  cr_assert_lt(h->n, 256);
  h->which[h->n] = which;
  h->tag[h->n] = tag;
  h->began[h->n] = began;
  h->at[h->n] = fab_engine_now(h->eng);
  h->n++;
  if (h->chain && which == FAB_GPU_COMPUTE)
    fab_gpu_submit(h->eng, h->gpu, FAB_GPU_REDUCE, h->chain_dur, tag + 1000);
}

/* Submits items at chosen times (a stand-in for the workload executor). */
typedef struct Feeder {
  FabElem el;
  FabGpu *gpu;
  uint32_t n;
  struct {
    int which;
    fab_time_t dur;
    uint32_t tag;
  } item[64];
} Feeder;

static void feeder_wake(FabEngine *eng, void *self, uint64_t arg) {
  Feeder *f = self;
  fab_gpu_submit(eng, f->gpu, f->item[arg].which, f->item[arg].dur, f->item[arg].tag);
}
static const FabOps feeder_ops = {"feeder", feeder_wake};

/* Submit item i of the feeder at time t. */
static void feed_at(FabEngine *eng, Feeder *f, fab_time_t t, int which, fab_time_t dur, uint32_t tag) {
  cr_assert_lt(f->n, 64);
  f->item[f->n].which = which;
  f->item[f->n].dur = dur;
  f->item[f->n].tag = tag;
  fab_engine_at(eng, t, f, f->n);
  f->n++;
}

typedef struct Rig {
  FabEngine *eng;
  FabGpu gpu;
  Heard heard;
  Feeder feeder;
} Rig;

static void rig_init(Rig *r, uint32_t rank) {
  memset(r, 0, sizeof *r);
  r->eng = fab_engine_new(1, 64);
  fab_gpu_init(&r->gpu, rank, heard_done, &r->heard);
  r->heard.eng = r->eng;
  r->heard.gpu = &r->gpu;
  fab_elem_init(&r->feeder.el, &feeder_ops);
  r->feeder.gpu = &r->gpu;
}

static void rig_fini(Rig *r) {
  for (int w = 0; w < 2; w++) {
    cr_assert_not(r->gpu.lane[w].busy, "lane %d idle at the end", w);
    cr_assert_eq(r->gpu.lane[w].n, 0, "lane %d: nothing waits", w);
  }
  fab_gpu_clear(&r->gpu);
  fab_engine_free(r->eng);
}

Test(gpu, init_sets_rank_and_idle_lanes) {
  Rig r;
  rig_init(&r, 7);
  cr_assert_eq(r.gpu.rank, 7);
  cr_assert_eq(r.gpu.done, heard_done);
  cr_assert_eq(r.gpu.ctx, &r.heard);
  for (int w = 0; w < 2; w++) {
    cr_assert_not(r.gpu.lane[w].busy);
    cr_assert_eq(r.gpu.lane[w].items, 0);
    cr_assert_eq(r.gpu.lane[w].busy_ps, 0);
  }
  cr_assert(fab_engine_run(r.eng, FAB_TIME_MAX));
  cr_assert_eq(r.heard.n, 0, "nothing submitted, nothing done");
  rig_fini(&r);
}

Test(gpu, compute_items_run_in_order_back_to_back) {
  /* 10, 20 and 5 ns submitted at 0: they finish at 10, 30 and 35 ns */
  Rig r;
  rig_init(&r, 0);
  fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_COMPUTE, 10 * FAB_NS, 1);
  cr_assert(r.gpu.lane[FAB_GPU_COMPUTE].busy, "the first item begins at once");
  cr_assert_eq(r.gpu.lane[FAB_GPU_COMPUTE].tag, 1);
  cr_assert_eq(r.gpu.lane[FAB_GPU_COMPUTE].began, 0);
  fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_COMPUTE, 20 * FAB_NS, 2);
  fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_COMPUTE, 5 * FAB_NS, 3);
  cr_assert_eq(r.gpu.lane[FAB_GPU_COMPUTE].n, 2, "two wait behind it");
  cr_assert_eq(r.gpu.lane[FAB_GPU_COMPUTE].tag, 1, "the running item is still the first");
  cr_assert(fab_engine_run(r.eng, FAB_TIME_MAX));
  cr_assert_eq(r.heard.n, 3);
  const uint32_t tag[] = {1, 2, 3};
  const fab_time_t began[] = {0, 10 * FAB_NS, 30 * FAB_NS}, at[] = {10 * FAB_NS, 30 * FAB_NS, 35 * FAB_NS};
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(r.heard.which[i], FAB_GPU_COMPUTE);
    cr_assert_eq(r.heard.tag[i], tag[i], "item %d", i);
    cr_assert_eq(r.heard.began[i], began[i], "item %d began at %" G_GUINT64_FORMAT, i, r.heard.began[i]);
    cr_assert_eq(r.heard.at[i], at[i], "item %d done at %" G_GUINT64_FORMAT, i, r.heard.at[i]);
  }
  cr_assert_eq(fab_engine_now(r.eng), 35 * FAB_NS);
  cr_assert_eq(r.gpu.lane[FAB_GPU_COMPUTE].items, 3);
  cr_assert_eq(r.gpu.lane[FAB_GPU_COMPUTE].busy_ps, 35 * FAB_NS);
  cr_assert_eq(r.gpu.lane[FAB_GPU_REDUCE].items, 0, "the reducer was not used");
  rig_fini(&r);
}

Test(gpu, the_reducer_is_fifo_too) {
  Rig r;
  rig_init(&r, 0);
  fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_REDUCE, 3 * FAB_NS, 30);
  fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_REDUCE, 1 * FAB_NS, 10);
  fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_REDUCE, 2 * FAB_NS, 20);
  cr_assert(fab_engine_run(r.eng, FAB_TIME_MAX));
  cr_assert_eq(r.heard.n, 3);
  const uint32_t tag[] = {30, 10, 20};
  const fab_time_t at[] = {3 * FAB_NS, 4 * FAB_NS, 6 * FAB_NS};
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(r.heard.which[i], FAB_GPU_REDUCE);
    cr_assert_eq(r.heard.tag[i], tag[i], "submission order, not duration order");
    cr_assert_eq(r.heard.at[i], at[i]);
  }
  cr_assert_eq(r.gpu.lane[FAB_GPU_REDUCE].items, 3);
  cr_assert_eq(r.gpu.lane[FAB_GPU_REDUCE].busy_ps, 6 * FAB_NS);
  rig_fini(&r);
}

Test(gpu, lanes_are_independent) {
  /* compute 10 + 20 ns and reduce 15 + 4 ns, all at 0: the reducer does not
  ** wait for the compute stream, nor the other way round */
  Rig r;
  rig_init(&r, 0);
  fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_COMPUTE, 10 * FAB_NS, 1);
  fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_REDUCE, 15 * FAB_NS, 2);
  fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_COMPUTE, 20 * FAB_NS, 3);
  fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_REDUCE, 4 * FAB_NS, 4);
  cr_assert(r.gpu.lane[FAB_GPU_COMPUTE].busy && r.gpu.lane[FAB_GPU_REDUCE].busy, "both lanes began at 0");
  cr_assert(fab_engine_run(r.eng, FAB_TIME_MAX));
  cr_assert_eq(r.heard.n, 4);
  /* by finishing time: compute 1 at 10, reduce 2 at 15, reduce 4 at 19, compute 3 at 30 */
  const int which[] = {FAB_GPU_COMPUTE, FAB_GPU_REDUCE, FAB_GPU_REDUCE, FAB_GPU_COMPUTE};
  const uint32_t tag[] = {1, 2, 4, 3};
  const fab_time_t began[] = {0, 0, 15 * FAB_NS, 10 * FAB_NS};
  const fab_time_t at[] = {10 * FAB_NS, 15 * FAB_NS, 19 * FAB_NS, 30 * FAB_NS};
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(r.heard.which[i], which[i], "event %d", i);
    cr_assert_eq(r.heard.tag[i], tag[i], "event %d", i);
    cr_assert_eq(r.heard.began[i], began[i], "event %d", i);
    cr_assert_eq(r.heard.at[i], at[i], "event %d", i);
  }
  cr_assert_eq(r.gpu.lane[FAB_GPU_COMPUTE].busy_ps, 30 * FAB_NS);
  cr_assert_eq(r.gpu.lane[FAB_GPU_REDUCE].busy_ps, 19 * FAB_NS);
  rig_fini(&r);
}

Test(gpu, an_item_waits_only_while_the_lane_is_busy) {
  /* A: 10 ns at 0. B: 10 ns submitted at 5 ns (A busy): begins at 10, done 20.
  ** C: 5 ns submitted at 50 ns (lane idle since 20): begins at once, done 55.
  ** D: 1 ns on the reducer at 7 ns: begins at once although compute is busy. */
  Rig r;
  rig_init(&r, 0);
  feed_at(r.eng, &r.feeder, 0, FAB_GPU_COMPUTE, 10 * FAB_NS, 'A');
  feed_at(r.eng, &r.feeder, 5 * FAB_NS, FAB_GPU_COMPUTE, 10 * FAB_NS, 'B');
  feed_at(r.eng, &r.feeder, 50 * FAB_NS, FAB_GPU_COMPUTE, 5 * FAB_NS, 'C');
  feed_at(r.eng, &r.feeder, 7 * FAB_NS, FAB_GPU_REDUCE, 1 * FAB_NS, 'D');
  cr_assert(fab_engine_run(r.eng, FAB_TIME_MAX));
  cr_assert_eq(r.heard.n, 4);
  const uint32_t tag[] = {'D', 'A', 'B', 'C'};
  const fab_time_t began[] = {7 * FAB_NS, 0, 10 * FAB_NS, 50 * FAB_NS};
  const fab_time_t at[] = {8 * FAB_NS, 10 * FAB_NS, 20 * FAB_NS, 55 * FAB_NS};
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(r.heard.tag[i], tag[i], "event %d: tag %c", i, (char)r.heard.tag[i]);
    cr_assert_eq(r.heard.began[i], began[i], "%c began at %" G_GUINT64_FORMAT, (char)tag[i], r.heard.began[i]);
    cr_assert_eq(r.heard.at[i], at[i], "%c done at %" G_GUINT64_FORMAT, (char)tag[i], r.heard.at[i]);
  }
  /* busy time counts only the items' own durations, not the idle gap */
  cr_assert_eq(r.gpu.lane[FAB_GPU_COMPUTE].busy_ps, 25 * FAB_NS);
  cr_assert_eq(r.gpu.lane[FAB_GPU_COMPUTE].items, 3);
  cr_assert_eq(r.gpu.lane[FAB_GPU_REDUCE].busy_ps, 1 * FAB_NS);
  rig_fini(&r);
}

Test(gpu, the_next_item_has_begun_when_done_is_called) {
  /* the executor submits from inside done: a compute item's follow-up on the
  ** reducer begins at the compute item's end */
  Rig r;
  rig_init(&r, 0);
  r.heard.chain = true;
  r.heard.chain_dur = 7 * FAB_NS;
  fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_COMPUTE, 10 * FAB_NS, 1);
  fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_COMPUTE, 10 * FAB_NS, 2);
  cr_assert(fab_engine_run(r.eng, FAB_TIME_MAX));
  /* compute 1 at 10; compute 2 at 20; reduce 1001 (10..17); reduce 1002 (20..27) */
  cr_assert_eq(r.heard.n, 4);
  const int which[] = {FAB_GPU_COMPUTE, FAB_GPU_REDUCE, FAB_GPU_COMPUTE, FAB_GPU_REDUCE};
  const uint32_t tag[] = {1, 1001, 2, 1002};
  const fab_time_t began[] = {0, 10 * FAB_NS, 10 * FAB_NS, 20 * FAB_NS};
  const fab_time_t at[] = {10 * FAB_NS, 17 * FAB_NS, 20 * FAB_NS, 27 * FAB_NS};
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(r.heard.which[i], which[i], "event %d", i);
    cr_assert_eq(r.heard.tag[i], tag[i], "event %d", i);
    cr_assert_eq(r.heard.began[i], began[i], "event %d", i);
    cr_assert_eq(r.heard.at[i], at[i], "event %d", i);
  }
  rig_fini(&r);
}

Test(gpu, done_sees_the_next_item_already_running) {
  /* gpu.h: "the next one begins, then the owner hears of the finished one" */
  Rig r;
  rig_init(&r, 0);
  fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_COMPUTE, 10 * FAB_NS, 1);
  fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_COMPUTE, 10 * FAB_NS, 2);
  cr_assert(fab_engine_run(r.eng, 10 * FAB_NS));
  cr_assert_eq(r.heard.n, 1);
  cr_assert(r.gpu.lane[FAB_GPU_COMPUTE].busy);
  cr_assert_eq(r.gpu.lane[FAB_GPU_COMPUTE].tag, 2);
  cr_assert_eq(r.gpu.lane[FAB_GPU_COMPUTE].began, 10 * FAB_NS);
  cr_assert_eq(r.gpu.lane[FAB_GPU_COMPUTE].n, 0);
  cr_assert(fab_engine_run(r.eng, FAB_TIME_MAX));
  cr_assert_eq(r.heard.n, 2);
  rig_fini(&r);
}

Test(gpu, a_zero_length_item_finishes_when_it_begins) {
  Rig r;
  rig_init(&r, 0);
  fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_COMPUTE, 4 * FAB_NS, 1);
  fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_COMPUTE, 0, 2);
  fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_COMPUTE, 3 * FAB_NS, 3);
  cr_assert(fab_engine_run(r.eng, FAB_TIME_MAX));
  cr_assert_eq(r.heard.n, 3);
  cr_assert_eq(r.heard.tag[1], 2);
  cr_assert_eq(r.heard.began[1], 4 * FAB_NS);
  cr_assert_eq(r.heard.at[1], 4 * FAB_NS);
  cr_assert_eq(r.heard.tag[2], 3);
  cr_assert_eq(r.heard.began[2], 4 * FAB_NS);
  cr_assert_eq(r.heard.at[2], 7 * FAB_NS);
  rig_fini(&r);
}

Test(gpu, long_queues_stay_in_order_across_ring_growth_and_wrap) {
  /* 10 items at 0 (the ring wraps as they start), 100 more at 20 ns while 7
  ** still wait (it grows from a non-zero head): all 110 in order, back to back */
  Rig r;
  rig_init(&r, 0);
  for (uint32_t i = 0; i < 10; i++) fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_COMPUTE, 10 * FAB_NS, i);
  cr_assert(fab_engine_run(r.eng, 25 * FAB_NS));
  cr_assert_eq(r.heard.n, 2);
  cr_assert_eq(r.gpu.lane[FAB_GPU_COMPUTE].n, 7);
  Heard *h = &r.heard;
  for (uint32_t i = 10; i < 110; i++) fab_gpu_submit(r.eng, &r.gpu, FAB_GPU_COMPUTE, 10 * FAB_NS, i);
  cr_assert_eq(r.gpu.lane[FAB_GPU_COMPUTE].n, 107);
  cr_assert(fab_engine_run(r.eng, FAB_TIME_MAX));
  cr_assert_eq(h->n, 110);
  for (int i = 0; i < 110; i++) {
    cr_assert_eq(h->tag[i], (uint32_t)i, "FIFO: slot %d has %u", i, h->tag[i]);
    cr_assert_eq(h->began[i], (fab_time_t)i * 10 * FAB_NS);
    cr_assert_eq(h->at[i], (fab_time_t)(i + 1) * 10 * FAB_NS);
  }
  cr_assert_eq(r.gpu.lane[FAB_GPU_COMPUTE].items, 110);
  rig_fini(&r);
}

Test(gpu, two_gpus_do_not_share_a_lane) {
  FabEngine *eng = fab_engine_new(1, 64);
  FabGpu g[2];
  Heard h[2];
  memset(h, 0, sizeof h);
  for (int i = 0; i < 2; i++) {
    fab_gpu_init(&g[i], (uint32_t)i, heard_done, &h[i]);
    h[i].eng = eng;
    h[i].gpu = &g[i];
    fab_gpu_submit(eng, &g[i], FAB_GPU_COMPUTE, 10 * FAB_NS, 1);
    fab_gpu_submit(eng, &g[i], FAB_GPU_COMPUTE, 10 * FAB_NS, 2);
  }
  cr_assert(fab_engine_run(eng, FAB_TIME_MAX));
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(h[i].n, 2);
    cr_assert_eq(h[i].at[0], 10 * FAB_NS, "GPU %d", i);
    cr_assert_eq(h[i].at[1], 20 * FAB_NS, "GPU %d", i);
    fab_gpu_clear(&g[i]);
  }
  fab_engine_free(eng);
}

Test(gpu, no_done_callback_is_allowed) {
  FabEngine *eng = fab_engine_new(1, 64);
  FabGpu g;
  fab_gpu_init(&g, 3, NULL, NULL);
  for (uint32_t i = 0; i < 20; i++) fab_gpu_submit(eng, &g, i % 2, FAB_NS, i);
  cr_assert(fab_engine_run(eng, FAB_TIME_MAX));
  cr_assert_eq(fab_engine_now(eng), 10 * FAB_NS);
  cr_assert_eq(g.lane[0].items, 10);
  cr_assert_eq(g.lane[1].items, 10);
  fab_gpu_clear(&g);
  fab_gpu_clear(&g); /* twice is harmless */
  cr_assert_null(g.lane[0].q);
  fab_engine_free(eng);
}

Test(gpu, a_topology_has_one_gpu_per_endpoint) {
  FabFabricCfg c;
  memset(&c, 0, sizeof c);
  c.topo.kind = FAB_TOPO_SINGLE_SWITCH;
  c.topo.hosts = 3;
  c.topo.link_bps = c.topo.host_bps = 100000000000ULL;
  c.topo.link_latency = FAB_US;
  c.sw = (FabSwitchCfg){0, 1 << 20, 1.0, 1, 0};
  c.nic = testnet_fabric_nic_cfg(c.topo.host_bps);
  FabTopology *t = fab_topology_build(&c);
  cr_assert_not_null(t->gpus);
  for (uint32_t i = 0; i < t->nhosts; i++) {
    cr_assert_eq(t->gpus[i].rank, i);
    cr_assert_null(t->gpus[i].done, "no owner yet");
    cr_assert_not(t->gpus[i].lane[0].busy || t->gpus[i].lane[1].busy);
  }
  fab_topology_free(t);
}

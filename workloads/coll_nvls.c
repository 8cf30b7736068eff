/* NVLS inside one NVLink domain, loop by loop, and the NVLS
** operation every NVLS algorithm is made of (nvls-tree and SHARP through
** NVLS in coll_algos.c). See collective.c for the algorithms. */
#include "coll_int.h"
#include <string.h>

/* A channel's share of the GPU's NVLink for nvls-tree's NVLS parts (wire
** bits/s): NCCL's NVLS kernel runs its channels as CTAs that each make and
** take their own part, so a channel waiting on a step's flags leaves its
** share idle (the ring's channel share, tuner.c). 0 (no limit) with
** cluster.nccl.channel_share off. */
uint64_t fab_coll__nvls_share(const Ex *x) {
  if (!x->env->costs.channel_share || !x->env->nvl_bps) return 0;
  return x->env->nvl_bps / MAX(x->channels, 1u);
}

/* The chunks of `bytes` that one channel of the op takes, one after
** another: an op of one domain's NVLS carries a whole loop of NCCL's (its
** channels' blocks side by side, x->nvls_lanes of them); others one
** channel's. */
static uint64_t chunks_a_lane(const Ex *x, uint64_t bytes) {
  return fab_coll__ceil_div(fab_coll__ceil_div(bytes, MAX(x->chunk, 1u)), MAX(x->nvls_lanes, 1u));
}

/* Rank i's part of the NVLS operation `group` (`mode`: FabNvlsOp) on
** `bytes`: before it, the step's work for each chunk a channel of it takes
** (cluster.nccl.nvls_step; NCCL's scatter and gather warps take a loop's
** chunks one head at a time, each with its own flags; a SHARP reduction
** without NVLink: a Simple step, and as every Simple piece across nodes the
** proxy's post and completion, the NIC's start and the receiver's flush:
** NCCL's CollNet proxy posts each step to the SHARP plugin and flushes its
** result as its network sends do, src/transport/coll_net.cc), and with
** F_LAUNCH the kernel's launch and NVLS start. Its packets leave at
** x->nvls_bps (0: NVLink's rate), in segments of at most a chunk: a head's
** part of a loop is one chunk. */
uint32_t fab_coll__nvls_op(Ex *x, uint32_t i, uint32_t group, uint64_t bytes, FabNvlsOp mode, unsigned flags,
                           const uint32_t *deps, uint32_t nd) {
  const FabCollSpec *c = x->c;
  const FabNcclCosts *k = &x->env->costs;
  bool sharp = mode == FAB_NVLS_OP_SHARP;
  FabOp o = {.kind = FAB_OP_NVLS, .mark = (uint8_t)mode, .prio = c->prio, .job = c->job, .step = c->step,
             .src = x->ep[i], .dst = x->ep[i], .coll = x->coll, .group = group, .bytes = bytes, .start = c->start,
             .pre = (sharp ? k->step[2] + fab_coll__net_msg(k, FAB_PROTO_SIMPLE)
                           : k->nvls_step * MAX(chunks_a_lane(x, bytes), 1u)) +
                    (flags & F_LAUNCH ? k->launch + (sharp ? 0 : k->nvls_sync) : 0),
             .max_bps = sharp ? 0 : x->nvls_bps, .seg = sharp ? 0 : x->chunk};
  return fab_coll__add_op(x, &o, i, i, deps, nd, flags & F_READY);
}

/* NCCL's NVLS allreduce, reduce-scatter and allgather in one domain, loop
** by loop: NCCL's loop (enqueue.cc's NVLS chunk x->chunk, one per head and
** channel; every rank is a head) spans its channels, channel c taking the
** c-th block of heads x chunk, and a channel's next loop starts once its
** last one is done (NCCL's NVLS primitives wait for a step's data before
** posting the next). Its channels run alike, each at its share of NVLink,
** so one op per rank and loop carries all of them (x->nvls_lanes: its
** steps are a channel's, its rate the channels' together): a pass through
** the switch (a reduction scattered over the heads, each head's multicast;
** an allgather's stores, each rank's own part in chunks). */
void fab_coll__run_nvls(Ex *x) {
  FabCollOp op = x->c->op;
  FabNvlsOp mode = op == FAB_COLL_REDUCE_SCATTER ? FAB_NVLS_OP_RS : op == FAB_COLL_ALLGATHER ? FAB_NVLS_OP_AG
                                                                                             : FAB_NVLS_OP_AR;
  bool ag = mode == FAB_NVLS_OP_AG;
  uint32_t n = x->n, C = x->channels, *last = g_new(uint32_t, n);
  uint64_t S = x->c->bytes, loop = (ag ? 1 : (uint64_t)n) * x->chunk * C, L = 1;
  x->nvls_lanes = C;
  x->nvls_bps = 0; /* the channels together: NVLink's rate */
  for (uint32_t i = 0; i < n; i++) /* an allgather's parts differ by a unit at most */
    L = MAX(L, fab_coll__ceil_div(ag ? fab_coll__part(x, S, n, i) : S, loop));
  for (uint64_t lp = 0; lp < L && !x->over; lp++) {
    uint32_t group = x->d->groups++;
    for (uint32_t i = 0; i < n && !x->over; i++) {
      uint64_t b = ag ? fab_coll__part(x, S, n, i) : S, lb = b > lp * loop ? MIN(loop, b - lp * loop) : 0;
      last[i] = fab_coll__nvls_op(x, i, group, MAX(lb, 1), mode, lp == 0 ? F_READY | F_LAUNCH : 0, &last[i], lp > 0);
    }
  }
  x->nvls_lanes = 1;
  g_free(last);
}

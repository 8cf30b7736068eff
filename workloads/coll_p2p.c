/* All-to-all as NCCL schedules a group of sends and receives (NCCL 2.30,
** src/init.cc ncclP2pSchedule, src/enqueue.cc scheduleP2pTasksToPlan and
** addP2pToPlan, src/include/channel.h ncclP2pChannelBaseForRound,
** src/graph/paths.cc ncclTopoComputeP2pChannels):
**
** - Rounds. In round r every rank sends to one peer and receives from its
**   mirror. Ranks are taken in groups of up to 8 of one NVLink domain
**   (NCCL_P2P_SCHEDULE_GROUP_SIZE; one domain: the whole domain); group
**   deltas follow NCCL's quadratic walk (x^2 + x) / 2, and inside a group
**   delta the local delta 0, 1, ... Round 0 is the rank itself.
** - Channels. Round r starts at channel base(r) (r itself on one domain,
**   else the round's group index, plus its eighth inside a group of more
**   than 8), bit-reversed over the p2p channels, and takes the next
**   channels of the op: as many as its size asks for, between a minimum
**   (all ranks' ops fit the p2p channels once) and the per-peer count.
** - Batches. A channel runs the ops of one group of 8 rounds together
**   (a batch of at most 8 works): the CTA's 20 warps are split among them
**   as sendrecv.h splits them (p2p_warps), and an op moves at the Simple
**   channel's rate (a ring CTA's 16 warps) times the warps its send and
**   its receive get, the fewer of the two, over 16; across the network at
**   most the network channel's rate over the works. The channel's next
**   batch starts when every send and receive of this one is done.
**
** So every peer of an all-to-all is under way at once, as on the hardware:
** on two DGX H100 a rank's NIC carries all 8 remote peers together
** (nccl-tests#130: bus bandwidth twice the NIC's on two nodes). */
#include "coll_int.h"
#include <string.h>

#define P2P_BATCH 8u      /* NCCL_MAX_DEV_WORK_P2P_PER_BATCH (src/include/device.h) */
#define P2P_LL_MAX 16384u /* NCCL_P2P_LL_THRESHOLD: LL up to this many bytes a channel (src/enqueue.cc) */
#define P2P_WARPS 20u     /* a p2p CTA: NCCL_MAX_NTHREADS 640 (src/include/device.h, scheduleP2pTasksToPlan) */
#define P2P_SYNC_WARPS 3u /* NCCL_SIMPLE_EXTRA_GROUP_IF_NTHREADS_GE / WARP_SIZE (src/include/device.h) */
#define RING_WARPS 16u    /* a Simple ring CTA's data warps: NCCL_SIMPLE_MAX_NTHREADS 512 (its sync warp aside) */

/* The data warps a work of a p2p batch of `works` gives its send (or its
** receive), `both`: the work has both (src/device/sendrecv.h). The CTA's
** warps go evenly over the works, w each; the receive gets (w - 1) / 2
** and the send one more (w of 4 or fewer: w / 2 each), and a work is cut
** to the two together, so an odd w of 3 and an even w above 4 leave a warp
** idle; a lone send or receive takes the cut w. A Simple send of 3 warps
** or more gives one to sync (src/device/prims_simple.h, nworkers;
** NCCL_SIMPLE_EXTRA_GROUP_IF_NTHREADS_GE, src/include/device.h). */
static uint32_t p2p_warps(uint32_t works, bool send, bool both) {
  uint32_t w = MIN(P2P_WARPS / MAX(works, 1u), 32u);
  uint32_t rw = w <= 4 ? w / 2 : (w - 1) / 2, sw = w <= 4 ? rw : rw + 1;
  uint32_t n = both ? (send ? sw : rw) : sw + rw;
  return send && n >= P2P_SYNC_WARPS ? n - 1 : n;
}

/* An op's data rate on its channel: the Simple channel's (a ring CTA's, the
** per-channel ceiling) per warp, times the fewer warps of its sender's send
** and its receiver's receive. One work holding a send and a receive: 9/16
** of a ring channel; NCCL's one-node sendrecv_perf moves about that a
** channel (README, *NCCL's p2p warps*). None stays none (LL: no channel rate). */
static uint64_t p2p_rate(uint64_t bps, uint32_t works_s, bool both_s, uint32_t works_r, bool both_r) {
  uint32_t w = MIN(p2p_warps(works_s, true, both_s), p2p_warps(works_r, false, both_r));
  return bps / RING_WARPS * w;
}

static uint32_t gcd32(uint32_t a, uint32_t b) {
  while (b) {
    uint32_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

static uint32_t pow2_up(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

/* The low `bits` bits of v, reversed (NCCL's reverseBits). */
static uint32_t bit_reverse(uint32_t v, uint32_t bits) {
  uint32_t r = 0;
  for (uint32_t b = 0; b < bits; b++) r |= ((v >> b) & 1u) << (bits - 1 - b);
  return r;
}

/* NCCL's rounds: send[i * n + r], the peer rank i sends to in round r (it
** receives from the rank whose round r sends to it: the schedule is its
** own mirror). Returns the group size. */
/* NCCL's group size: 8 across domains (one domain: all of it), down to what
** divides every domain's ranks. */
static uint32_t group_size(const Groups *dom) {
  uint32_t nn = dom->ng, gs = nn > 1 ? P2P_BATCH : fab_coll__group_size(dom, 0);
  for (uint32_t m = 0; m < nn; m++) {
    uint32_t L = fab_coll__group_size(dom, m);
    if (L % gs || L < gs) gs = gcd32(gs, L);
  }
  return gs;
}

static uint32_t schedule(const Groups *dom, uint32_t n, uint32_t *send) {
  uint32_t nn = dom->ng, gs = group_size(dom);
  uint32_t ngroups = n / gs, gpow = pow2_up(ngroups);
  uint32_t *g_node = g_new(uint32_t, ngroups), *g_local = g_new(uint32_t, ngroups), *first = g_new(uint32_t, nn);
  for (uint32_t m = 0, k = 0; m < nn; m++) {
    first[m] = k;
    for (uint32_t j = 0; j < fab_coll__group_size(dom, m) / gs; j++, k++) g_node[k] = m, g_local[k] = j * gs;
  }
  for (uint32_t m = 0; m < nn; m++)
    for (uint32_t lr = 0; lr < fab_coll__group_size(dom, m); lr++) {
      uint32_t i = dom->mem[dom->off[m] + lr], local = lr % gs, group = first[m] + lr / gs;
      uint32_t round = 0, gr = 0, gd = 0;
      do {
        if (gd < ngroups) {
          uint32_t sg = (group + gd) % ngroups;
          for (uint32_t d = 0; d < gs; d++)
            send[(size_t)i * n + round++] = dom->mem[dom->off[g_node[sg]] + g_local[sg] + (local + d) % gs];
        }
        gr++;
        gd = (gd + gr) & (gpow - 1);
      } while (gr != gpow);
      g_assert(round == n);
    }
  g_free(g_node);
  g_free(g_local);
  g_free(first);
  return gs;
}

/* Channels an op of `bytes` takes (addP2pToPlan): from kmin, doubled while
** a part is over the largest, up to the per-peer count; 0 for no data. */
static uint32_t op_channels(const Ex *x, uint64_t bytes, uint32_t kmin) {
  if (bytes == 0) return 0;
  bool multi = x->p2p_multi;
  uint64_t step = x->p2p_step, lo = multi ? step / 2 : step / 8, hi = multi ? step : step * 32;
  uint32_t c = (uint32_t)MIN((uint64_t)kmin, fab_coll__ceil_div(bytes, lo));
  uint64_t part = MAX(lo, fab_coll__ceil_div(bytes, c));
  while (part > hi && c <= x->p2p_peer / 2) {
    c *= 2;
    part = fab_coll__ceil_div(bytes, c);
  }
  return c;
}

/* The fewest channels an op takes: every rank's ops on channels of their
** own if they fit the p2p channels (scheduleP2pTasksToPlan's nChannelsMin). */
static uint32_t kmin_of(const Ex *x) {
  uint32_t k = MIN(x->p2p_peer, x->channels);
  while (k > 1 && (uint64_t)k * x->n > x->channels) k /= 2;
  return k;
}

FabProto fab_coll__p2p_proto(const Ex *x, uint64_t bytes) {
  if (x->p2p_net) return FAB_PROTO_SIMPLE; /* its network connections have no LL buffers (one protocol here) */
  return bytes <= (uint64_t)op_channels(x, bytes, kmin_of(x)) * P2P_LL_MAX ? FAB_PROTO_LL : FAB_PROTO_SIMPLE;
}

typedef struct Sched {
  uint32_t n, P, bits, gs;
  uint32_t *send;   /* n x n: the peer of rank i in round r */
  uint32_t *recv;   /* n x n: who sends to rank i in round r */
  uint8_t *nsend;   /* n x n: channels of rank i's send in round r */
} Sched;

static uint32_t round_base(const Sched *s, bool multi, uint32_t r) {
  uint32_t b = multi ? (r / s->gs) * (uint32_t)fab_coll__ceil_div(s->gs, P2P_BATCH) + (r % s->gs) / P2P_BATCH : r;
  return bit_reverse(b, s->bits);
}

/* The part of round r's op that channel c carries (>= the op's channels: none). */
static uint32_t part_on(const Sched *s, bool multi, uint32_t r, uint32_t c) {
  return (c - round_base(s, multi, r)) & (s->P - 1);
}

/* Whether s -> r is a network connection in NCCL's sense (its net
** transport): across hosts and NVLink domains; NVLink and PCIe peers are not. */
static bool net_conn(const Ex *x, uint32_t s, uint32_t r) {
  return fab_coll__node(x, s) != fab_coll__node(x, r) && !fab_coll__same_domain(x->env, x->ep[s], x->ep[r]);
}

/* The pieces of an op of `bytes` from s to r (enqueue.cc addP2pToPlan):
** the step, which NCCL cuts for a network connection only, by the op's own
** size; a chunk the user set, or one raised to stay within the operations
** cap, for every op. */
static uint64_t op_chunk(const Ex *x, uint32_t s, uint32_t r, uint64_t bytes) {
  if (!x->p2p_def || x->c->chunk || x->chunk != x->p2p_def) return x->chunk;
  uint64_t step = x->p2p_step;
  if (!net_conn(x, s, r)) return step;
  return bytes < step ? step / 4 : bytes < 8 * step ? step / 2 : step;
}

/* One part's pieces from s to r, at most x->window in flight, the first
** after `after` (a batch's join); returns the last piece. */
static uint32_t part_stream(Ex *x, uint32_t s, uint32_t r, uint64_t bytes, uint64_t chunk, uint32_t after,
                            unsigned first) {
  uint32_t last = FAB_OP_NONE, W = x->window, *won = g_new(uint32_t, W);
  for (uint64_t j = 0, np = fab_coll__ceil_div(bytes, chunk); j < np && !x->over; j++) {
    uint32_t deps[1], nd = 0;
    if (j == 0 && after != FAB_OP_NONE) deps[nd++] = after;
    if (j > 0) deps[nd++] = last | FAB_DEP_SENT;
    x->slot = j >= W ? won[j % W] : FAB_OP_NONE;
    last = fab_coll__flow(x, s, r, fab_coll__piece_size(bytes, chunk, j), j == 0 ? first : 0, deps, nd);
    won[j % W] = last;
  }
  g_free(won);
  return last;
}

/* An op's protocol (addP2pToPlan): with protocol auto, LL while the op
** holds at most NCCL_P2P_LL_THRESHOLD a channel and its connection has LL
** buffers, which a network connection has not; else the collective's. */
static FabProto op_proto(const Ex *x, uint32_t s, uint32_t r, uint64_t bytes, uint32_t nch) {
  if (!x->p2p_ll_bps || x->proto != FAB_PROTO_SIMPLE) return x->proto;
  if (net_conn(x, s, r)) return FAB_PROTO_SIMPLE;
  return bytes <= (uint64_t)nch * P2P_LL_MAX ? FAB_PROTO_LL : FAB_PROTO_SIMPLE;
}

/* Part `part` of an op of `bytes` from s to r on `nch` channels, in its own
** protocol's pieces (LL: a step of LL's buffer, 32 KiB of data, its flows
** under the rank's LL ceiling, not a channel's Simple rate). */
static uint32_t op_stream(Ex *x, uint32_t s, uint32_t r, uint64_t bytes, uint32_t nch, uint64_t part, uint32_t after,
                          unsigned first) {
  if (op_proto(x, s, r, bytes, nch) == x->proto) return part_stream(x, s, r, part, op_chunk(x, s, r, bytes), after, first);
  FabProto proto = x->proto;
  uint64_t cap = x->cap_bps, flow = x->flow_bps, net = x->net_bps;
  x->proto = FAB_PROTO_LL, x->cap_bps = x->p2p_ll_bps, x->flow_bps = x->net_bps = 0;
  uint32_t last = part_stream(x, s, r, part, FAB_COLL_LL_CHUNK, after, first);
  x->proto = proto, x->cap_bps = cap, x->flow_bps = flow, x->net_bps = net;
  return last;
}

/* The channels a peer takes on P p2p channels: fewer than asked for (an
** explicit, reported choice), and as p2p_setup would for these channels
** (fewer to stay within the operations cap). */
static void fit_peer(Ex *x, uint32_t n, uint32_t P) {
  x->p2p_peer = MIN(x->p2p_peer, P);
  while (x->p2p_fit && x->p2p_peer > 1 && (uint64_t)x->p2p_peer * fab_coll__ceil_div(n, 8) > P) x->p2p_peer /= 2;
}

void fab_coll__pairwise_nccl(Ex *x, const Groups *dom, uint64_t bytes) {
  uint32_t n = x->n, P = x->channels;
  if (n < 2 || bytes == 0) return;
  g_assert(P && (P & (P - 1)) == 0 && P <= 64);
  Sched s = {.n = n, .P = P, .bits = (uint32_t)fab_coll__log2i(P)};
  s.send = g_new(uint32_t, (size_t)n * n);
  s.recv = g_new(uint32_t, (size_t)n * n);
  s.nsend = g_new(uint8_t, (size_t)n * n);
  s.gs = schedule(dom, n, s.send);
  bool multi = x->p2p_multi;
  fit_peer(x, n, P);
  uint32_t kmin = kmin_of(x);
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t r = 0; r < n; r++) {
      uint32_t to = s.send[(size_t)i * n + r];
      s.recv[(size_t)to * n + r] = i;
      s.nsend[(size_t)i * n + r] = (uint8_t)op_channels(x, fab_coll__a2a_block(x, bytes, i, to), kmin);
    }
  /* per rank and channel: the join of its last batch; per rank, round of the batch and part: the last piece */
  uint32_t *join = g_new(uint32_t, (size_t)n * P), *last = g_new(uint32_t, (size_t)n * P2P_BATCH * P);
  uint8_t *wk = g_new(uint8_t, (size_t)n * P); /* per rank and channel: the batch's works */
  for (size_t k = 0; k < (size_t)n * P; k++) join[k] = FAB_OP_NONE;
  uint64_t flow_bps = x->flow_bps, net_bps = x->net_bps;
  GArray *deps = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  for (uint32_t r0 = 0; r0 < n && !x->over; r0 += P2P_BATCH) {
    uint32_t r1 = MIN(r0 + P2P_BATCH, n);
    for (size_t k = 0; k < (size_t)n * P2P_BATCH * P; k++) last[k] = FAB_OP_NONE;
    for (uint32_t i = 0; i < n; i++) /* this batch's works on each channel: sends and receives, own included */
      for (uint32_t c = 0; c < P; c++) {
        uint8_t works = 0;
        for (uint32_t r = r0; r < r1; r++) {
          uint32_t p = part_on(&s, multi, r, c);
          works += p < MAX(s.nsend[(size_t)i * n + r], s.nsend[(size_t)s.recv[(size_t)i * n + r] * n + r]);
        }
        wk[(size_t)i * P + c] = works;
      }
    for (uint32_t i = 0; i < n && !x->over; i++)
      for (uint32_t c = 0; c < P && !x->over; c++) {
        uint32_t works = wk[(size_t)i * P + c];
        if (!works) continue;
        x->chan = c;
        x->net_bps = net_bps / works;
        uint32_t after = join[(size_t)i * P + c];
        for (uint32_t r = r0; r < r1; r++) {
          uint32_t to = s.send[(size_t)i * n + r], p = part_on(&s, multi, r, c), np = s.nsend[(size_t)i * n + r];
          if (to == i || p >= np) continue;
          uint64_t op = fab_coll__a2a_block(x, bytes, i, to), b = fab_coll__part(x, op, np, p);
          if (b == 0) continue;
          bool both_s = p < s.nsend[(size_t)s.recv[(size_t)i * n + r] * n + r], both_r = p < s.nsend[(size_t)to * n + r];
          x->flow_bps = p2p_rate(flow_bps, works, both_s, wk[(size_t)to * P + c], both_r); /* the CTA's warps */
          unsigned first = F_READY | (after == FAB_OP_NONE ? F_LAUNCH : 0);
          last[((size_t)i * P2P_BATCH + (r - r0)) * P + c] = op_stream(x, i, to, op, np, b, after, first);
        }
      }
    x->flow_bps = flow_bps, x->net_bps = net_bps;
    if (r1 >= n) break; /* the phase's end waits for the last batches */
    for (uint32_t i = 0; i < n && !x->over; i++) /* each channel's join: its sends left, its receives arrived */
      for (uint32_t c = 0; c < P && !x->over; c++) {
        g_array_set_size(deps, 0);
        bool any = false;
        for (uint32_t r = r0; r < r1; r++) {
          uint32_t from = s.recv[(size_t)i * n + r], p = part_on(&s, multi, r, c);
          uint32_t out = last[((size_t)i * P2P_BATCH + (r - r0)) * P + c];
          uint32_t in = last[((size_t)from * P2P_BATCH + (r - r0)) * P + c];
          any |= p < MAX(s.nsend[(size_t)i * n + r], s.nsend[(size_t)from * n + r]);
          if (out != FAB_OP_NONE) g_array_append_val(deps, (uint32_t){out | FAB_DEP_SENT});
          if (in != FAB_OP_NONE && from != i) g_array_append_val(deps, in);
        }
        if (!any) continue;
        uint32_t prev = join[(size_t)i * P + c];
        if (prev != FAB_OP_NONE) g_array_append_val(deps, prev);
        join[(size_t)i * P + c] = fab_coll__mark_op(x, i, FAB_MARK_JOIN, (const uint32_t *)deps->data, deps->len);
      }
  }
  g_array_free(deps, TRUE);
  g_free(wk);
  g_free(join);
  g_free(last);
  g_free(s.send);
  g_free(s.recv);
  g_free(s.nsend);
}

/* Rank k's part of channel c in batch b of send-recv (rs: each rank's
** send round; its receive's is its sender's): whether its send and its
** receive are on it, whether they are one work (the same round), and its
** works there. */
typedef struct {
  bool on_s, on_r, both;
  uint32_t works;
} SrWork;

static SrWork sr_work(const Sched *s, bool multi, const uint32_t *rs, uint32_t np, uint32_t b, uint32_t k, uint32_t c) {
  uint32_t r_s = rs[k], r_r = rs[(k + s->n - 1) % s->n];
  SrWork w = {.on_s = r_s / P2P_BATCH == b && part_on(s, multi, r_s, c) < np,
              .on_r = r_r / P2P_BATCH == b && part_on(s, multi, r_r, c) < np};
  w.both = w.on_s && w.on_r && r_s == r_r;
  w.works = w.on_s + (w.on_r && !w.both);
  return w;
}

/* Send-recv (rank i to i + 1) on the same schedule, without its n x n
** tables: each rank has one send and one receive, so its round is found
** from the walk's order (schedule(): the peer of group delta gd and local
** delta d is round pos(gd) x gs + d, pos counting the walk's steps below
** the number of groups), and only the batches holding a rank's two rounds
** make its pieces and joins, in the order fab_coll__pairwise_nccl makes
** them (tests/test_collective.c compares the two on an all-to-all of the
** same ops). */
void fab_coll__send_recv(Ex *x, const Groups *dom, uint64_t bytes) {
  uint32_t n = x->n, P = x->channels;
  if (n < 2 || bytes == 0) return;
  g_assert(P && (P & (P - 1)) == 0 && P <= 64);
  Sched s = {.n = n, .P = P, .bits = (uint32_t)fab_coll__log2i(P), .gs = group_size(dom)};
  bool multi = x->p2p_multi;
  fit_peer(x, n, P);
  uint32_t np = op_channels(x, bytes, kmin_of(x)), gs = s.gs, ngroups = n / gs, gpow = pow2_up(ngroups);
  uint32_t *pos = g_new(uint32_t, ngroups), *grp = g_new(uint32_t, n), *loc = g_new(uint32_t, n);
  for (uint32_t gr = 0, gd = 0, k = 0; gr < gpow; gr++, gd = (gd + gr) & (gpow - 1))
    if (gd < ngroups) pos[gd] = k++;
  for (uint32_t m = 0, first = 0; m < dom->ng; first += fab_coll__group_size(dom, m) / gs, m++)
    for (uint32_t lr = 0; lr < fab_coll__group_size(dom, m); lr++) {
      uint32_t i = dom->mem[dom->off[m] + lr];
      grp[i] = first + lr / gs, loc[i] = lr % gs;
    }
  uint32_t *rs = g_new(uint32_t, n); /* the round of rank i's send (to i + 1), its receive's: rs[i - 1] */
  for (uint32_t i = 0; i < n; i++) {
    uint32_t to = (i + 1) % n;
    rs[i] = pos[(grp[to] + ngroups - grp[i]) % ngroups] * gs + (loc[to] + gs - loc[i]) % gs;
  }
  /* ranks by the batches they act in (a rank twice where its two rounds are in two batches) */
  uint32_t nb = (n + P2P_BATCH - 1) / P2P_BATCH, *bo = g_new0(uint32_t, nb + 1), *br = g_new(uint32_t, 2 * n);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t a = rs[i] / P2P_BATCH, b = rs[(i + n - 1) % n] / P2P_BATCH;
    bo[a + 1]++;
    if (b != a) bo[b + 1]++;
  }
  for (uint32_t b = 0; b < nb; b++) bo[b + 1] += bo[b];
  uint32_t *fill = g_memdup2(bo, sizeof(uint32_t) * nb);
  for (uint32_t i = 0; i < n; i++) { /* in rank order within each batch */
    uint32_t a = rs[i] / P2P_BATCH, b = rs[(i + n - 1) % n] / P2P_BATCH;
    br[fill[a]++] = i;
    if (b != a) br[fill[b]++] = i;
  }
  uint32_t *join = g_new(uint32_t, (size_t)n * P), *last = g_new(uint32_t, (size_t)n * P);
  for (size_t k = 0; k < (size_t)n * P; k++) join[k] = last[k] = FAB_OP_NONE;
  uint64_t flow_bps = x->flow_bps, net_bps = x->net_bps;
  for (uint32_t b = 0; b < nb && !x->over; b++) {
    for (uint32_t k = bo[b]; k < bo[b + 1] && !x->over; k++) {
      uint32_t i = br[k], r_s = rs[i];
      for (uint32_t c = 0; c < P && !x->over; c++) {
        SrWork me = sr_work(&s, multi, rs, np, b, i, c);
        if (!me.on_s) continue;
        SrWork to = sr_work(&s, multi, rs, np, b, (i + 1) % n, c); /* the receiver's */
        x->chan = c;
        x->flow_bps = p2p_rate(flow_bps, me.works, me.both, to.works, to.both); /* the CTA's warps */
        x->net_bps = net_bps / me.works;
        uint32_t after = join[(size_t)i * P + c];
        uint64_t part = fab_coll__part(x, bytes, np, part_on(&s, multi, r_s, c));
        if (part) last[(size_t)i * P + c] = op_stream(x, i, (i + 1) % n, bytes, np, part, after,
                                                      F_READY | (after == FAB_OP_NONE ? F_LAUNCH : 0));
      }
    }
    x->flow_bps = flow_bps, x->net_bps = net_bps;
    if ((b + 1) * P2P_BATCH >= n) break; /* the phase's end waits for the last batches */
    for (uint32_t k = bo[b]; k < bo[b + 1] && !x->over; k++) { /* each channel's join, as pairwise_nccl's */
      uint32_t i = br[k], from = (i + n - 1) % n;
      for (uint32_t c = 0; c < P && !x->over; c++) {
        SrWork me = sr_work(&s, multi, rs, np, b, i, c);
        if (!me.on_s && !me.on_r) continue;
        uint32_t deps[3], nd = 0, out = last[(size_t)i * P + c], in = last[(size_t)from * P + c];
        bool in_first = rs[from] < rs[i]; /* in round order */
        if (in_first && me.on_r && in != FAB_OP_NONE) deps[nd++] = in;
        if (me.on_s && out != FAB_OP_NONE) deps[nd++] = out | FAB_DEP_SENT;
        if (!in_first && me.on_r && in != FAB_OP_NONE && from != i) deps[nd++] = in;
        if (join[(size_t)i * P + c] != FAB_OP_NONE) deps[nd++] = join[(size_t)i * P + c];
        join[(size_t)i * P + c] = fab_coll__mark_op(x, i, FAB_MARK_JOIN, deps, nd);
      }
    }
  }
  g_free(pos), g_free(grp), g_free(loc), g_free(rs), g_free(bo), g_free(br), g_free(fill), g_free(join), g_free(last);
}

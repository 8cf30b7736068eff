/* fabsim-replay over raw ibverbs: one RC queue pair per pair of processes,
** data as RDMA writes with immediate data into the receiver's registered
** arena (the way NCCL's IB transport moves it), notices as 8-byte inline
** sends. Every receive work request has an 8-byte slot: a write with
** immediate consumes one without touching it, a notice lands in it. See
** replay.h. */
#include "replay.h"
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <string.h>

#define SQ_DEPTH 256
#define RQ_DEPTH 256
#define PIECE (1ull << 30)  /* the most one work request writes (ports allow 2^31) */
#define OP_BITS 21          /* the immediate: op (21 bits) | pass (11 bits) */
enum { W_SEND = 1, W_CTRL = 2, W_RECV = 3 };

typedef struct Vb {
  FabReplayNet net;
  const FabReplayPlan *p;
  struct ibv_device **list;
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct ibv_cq *cq;
  struct ibv_qp **qp;      /* per peer process (itself too) */
  struct ibv_mr *smr, *rmr, *cmr;
  uint64_t *slots;         /* nprocs x RQ_DEPTH notice slots */
  uint64_t *rbase;         /* per process: its receive arena */
  uint32_t *rkey;
  uint32_t *sq_used;       /* per peer: work requests posted, not completed */
  uint32_t *pieces;        /* per op: the work requests of its write */
  uint8_t port, gid_index;
  bool roce, no_device;
  char name[96];
} Vb;

/* What one process tells the others: its port's address, its arena, a queue pair per peer. */
typedef struct Card {
  uint16_t lid;
  uint8_t gid[16];
  uint64_t rbase;
  uint32_t rkey, psn;
  uint32_t qpn[]; /* per process */
} Card;

static inline uint64_t wr_id(int kind, uint32_t a, uint32_t b) { return (uint64_t)a << 32 | (uint64_t)b << 2 | kind; }

static int post_slot(Vb *v, uint32_t peer, uint32_t k) {
  struct ibv_sge sge = {(uint64_t)(uintptr_t)&v->slots[(size_t)peer * RQ_DEPTH + k], 8, v->cmr->lkey};
  struct ibv_recv_wr wr = {.wr_id = wr_id(W_RECV, peer, k), .sg_list = &sge, .num_sge = 1}, *bad;
  return ibv_post_recv(v->qp[peer], &wr, &bad);
}

static int vb_send(void *ctx, uint32_t op, uint32_t pass, uint32_t to, uint64_t soff, uint64_t len, uint64_t roff,
                   char **err) {
  Vb *v = ctx;
  uint32_t n = len ? (uint32_t)((len + PIECE - 1) / PIECE) : 1;
  if (v->sq_used[to] + n > SQ_DEPTH) return -EAGAIN;
  struct ibv_sge *sge = g_newa(struct ibv_sge, n);
  struct ibv_send_wr *wr = g_newa(struct ibv_send_wr, n), *bad;
  for (uint32_t k = 0; k < n; k++) {
    uint64_t off = (uint64_t)k * PIECE, l = MIN(PIECE, len - off);
    sge[k] = (struct ibv_sge){(uint64_t)(uintptr_t)(v->net.send_arena + soff + off), (uint32_t)l, v->smr->lkey};
    bool last = k + 1 == n;
    wr[k] = (struct ibv_send_wr){.wr_id = wr_id(W_SEND, op, 0), .next = last ? NULL : &wr[k + 1], .sg_list = &sge[k],
                                 .num_sge = len ? 1 : 0,
                                 .opcode = last ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
                                 .send_flags = last ? IBV_SEND_SIGNALED : 0}; /* in order: the last says all */
    wr[k].wr.rdma.remote_addr = v->rbase[to] + roff + off;
    wr[k].wr.rdma.rkey = v->rkey[to];
    if (last) wr[k].imm_data = htonl(op | (pass & ((1u << (32 - OP_BITS)) - 1)) << OP_BITS);
  }
  int rc = ibv_post_send(v->qp[to], wr, &bad);
  if (rc) {
    *err = g_strdup_printf("ibverbs: posting the write of flow op %u to process %u: %s", op, to, strerror(rc));
    return -EIO;
  }
  v->sq_used[to] += n;
  v->pieces[op] = n;
  return 0;
}

static int vb_recv(void *ctx, uint32_t op, uint32_t pass, uint32_t from, uint64_t roff, uint64_t len, char **err) {
  return 0; /* a write lands without a receive of its own; its immediate takes a slot */
}

static int vb_ctrl(void *ctx, uint32_t to, uint64_t word, char **err) {
  Vb *v = ctx;
  if (v->sq_used[to] + 1 > SQ_DEPTH) return -EAGAIN;
  struct ibv_sge sge = {(uint64_t)(uintptr_t)&word, 8, 0};
  struct ibv_send_wr wr = {.wr_id = wr_id(W_CTRL, to, 0), .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                           .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE}, *bad;
  int rc = ibv_post_send(v->qp[to], &wr, &bad);
  if (rc) {
    *err = g_strdup_printf("ibverbs: posting a notice to process %u: %s", to, strerror(rc));
    return -EIO;
  }
  v->sq_used[to]++;
  return 0;
}

static char *wc_error(const Vb *v, const struct ibv_wc *wc) {
  int kind = (int)(wc->wr_id & 3);
  uint32_t a = (uint32_t)(wc->wr_id >> 32);
  const FabReplayPlan *p = v->p;
  if (kind == W_SEND)
    return g_strdup_printf("ibverbs: the write of flow op %u to process %u (endpoint %u) failed: %s", a,
                           p->observer[a], p->ep_of[p->observer[a]], ibv_wc_status_str(wc->status));
  return g_strdup_printf("ibverbs: a %s %s process %u (endpoint %u) failed: %s", kind == W_CTRL ? "notice" : "receive",
                         kind == W_CTRL ? "to" : "from", a, p->ep_of[a], ibv_wc_status_str(wc->status));
}

static int vb_poll(void *ctx, FabReplayDone *out, int max, char **err) {
  Vb *v = ctx;
  struct ibv_wc wc[64];
  int n = ibv_poll_cq(v->cq, MIN(max, 64), wc);
  if (n < 0) {
    *err = g_strdup("ibverbs: ibv_poll_cq failed");
    return -EIO;
  }
  int m = 0;
  for (int k = 0; k < n; k++) {
    if (wc[k].status != IBV_WC_SUCCESS) {
      *err = wc_error(v, &wc[k]);
      return -EIO;
    }
    int kind = (int)(wc[k].wr_id & 3);
    uint32_t a = (uint32_t)(wc[k].wr_id >> 32), b = (uint32_t)(wc[k].wr_id >> 2 & 0x3fffffff);
    if (kind == W_SEND) {
      v->sq_used[v->p->observer[a]] -= v->pieces[a];
      out[m++] = (FabReplayDone){FAB_REPLAY_EV_SEND, a, 0};
    } else if (kind == W_CTRL) {
      v->sq_used[a]--;
    } else {
      if (wc[k].opcode == IBV_WC_RECV_RDMA_WITH_IMM)
        out[m++] = (FabReplayDone){FAB_REPLAY_EV_RECV, ntohl(wc[k].imm_data) & ((1u << OP_BITS) - 1), 0};
      else
        out[m++] = (FabReplayDone){FAB_REPLAY_EV_CTRL, 0, v->slots[(size_t)a * RQ_DEPTH + b]};
      int rc = post_slot(v, a, b);
      if (rc) {
        *err = g_strdup_printf("ibverbs: posting a receive for process %u: %s", a, strerror(rc));
        return -EIO;
      }
    }
  }
  return m;
}

/* The device (by name, or the first), its protection domain, CQ, arenas and queue pairs (in INIT). */
static char *open_dev(Vb *v, const char *dev) {
  int n = 0;
  v->list = ibv_get_device_list(&n);
  if (!v->list || n == 0) {
    v->no_device = true;
    return g_strdup("no RDMA device found (ibv_get_device_list lists none)");
  }
  struct ibv_device *d = NULL;
  for (int k = 0; k < n && !d; k++)
    if (!dev || !strcmp(ibv_get_device_name(v->list[k]), dev)) d = v->list[k];
  if (!d) return g_strdup_printf("no RDMA device named '%s'", dev);
  g_strlcpy(v->name, ibv_get_device_name(d), sizeof v->name);
  if (!(v->ctx = ibv_open_device(d))) return g_strdup_printf("ibverbs: cannot open %s", v->name);
  struct ibv_port_attr pa;
  if (ibv_query_port(v->ctx, v->port, &pa)) return g_strdup_printf("ibverbs: %s has no port %u", v->name, v->port);
  if (pa.state != IBV_PORT_ACTIVE) return g_strdup_printf("ibverbs: %s port %u is not active", v->name, v->port);
  v->roce = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
  const FabReplayPlan *p = v->p;
  uint32_t np = p->nprocs;
  if (!(v->pd = ibv_alloc_pd(v->ctx))) return g_strdup("ibverbs: ibv_alloc_pd failed");
  if (!(v->cq = ibv_create_cq(v->ctx, (int)(np * (SQ_DEPTH + RQ_DEPTH)), NULL, NULL, 0)))
    return g_strdup("ibverbs: ibv_create_cq failed");
  int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  v->smr = ibv_reg_mr(v->pd, v->net.send_arena, MAX(p->send_bytes, 64), acc);
  v->rmr = ibv_reg_mr(v->pd, v->net.recv_arena, MAX(p->recv_bytes, 64), acc);
  v->cmr = ibv_reg_mr(v->pd, v->slots, sizeof(uint64_t) * np * RQ_DEPTH, IBV_ACCESS_LOCAL_WRITE);
  if (!v->smr || !v->rmr || !v->cmr) return g_strdup("ibverbs: ibv_reg_mr failed (is the locked-memory limit enough?)");
  for (uint32_t k = 0; k < np; k++) {
    struct ibv_qp_init_attr qa = {.send_cq = v->cq, .recv_cq = v->cq, .qp_type = IBV_QPT_RC,
                                  .cap = {SQ_DEPTH, RQ_DEPTH, 1, 1, 16}};
    if (!(v->qp[k] = ibv_create_qp(v->pd, &qa))) return g_strdup("ibverbs: ibv_create_qp failed");
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = v->port,
                            .qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
    if (ibv_modify_qp(v->qp[k], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
      return g_strdup("ibverbs: a queue pair would not go to INIT");
    for (uint32_t s = 0; s < RQ_DEPTH; s++)
      if (post_slot(v, k, s)) return g_strdup("ibverbs: ibv_post_recv failed");
  }
  return NULL;
}

/* Connect queue pair k to process k's queue pair for us: RTR, then RTS. */
static char *connect_qp(Vb *v, uint32_t k, const Card *peer, const struct ibv_port_attr *pa) {
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR, .path_mtu = pa->active_mtu, .dest_qp_num = peer->qpn[v->p->me],
                          .rq_psn = peer->psn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12};
  a.ah_attr.dlid = peer->lid;
  a.ah_attr.port_num = v->port;
  if (v->roce || peer->lid == 0) { /* RoCE (or a global route): the GID */
    a.ah_attr.is_global = 1;
    memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
    a.ah_attr.grh.sgid_index = v->gid_index;
    a.ah_attr.grh.hop_limit = 64;
  }
  if (ibv_modify_qp(v->qp[k], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return g_strdup_printf("ibverbs: the queue pair to process %u would not go to RTR (GID index %u?)", k,
                           v->gid_index);
  struct ibv_qp_attr r = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
                          .sq_psn = v->p->me, .max_rd_atomic = 1};
  if (ibv_modify_qp(v->qp[k], &r, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
    return g_strdup_printf("ibverbs: the queue pair to process %u would not go to RTS", k);
  return NULL;
}

static char *connect_all(Vb *v, FabReplayAllgather ag) {
  const FabReplayPlan *p = v->p;
  size_t len = sizeof(Card) + sizeof(uint32_t) * p->nprocs;
  Card *mine = g_malloc0(len);
  uint8_t *all = g_malloc0(len * p->nprocs);
  struct ibv_port_attr pa;
  union ibv_gid gid;
  char *why = NULL;
  if (ibv_query_port(v->ctx, v->port, &pa) || ibv_query_gid(v->ctx, v->port, v->gid_index, &gid))
    why = g_strdup_printf("ibverbs: %s port %u has no GID %u", v->name, v->port, v->gid_index);
  else {
    mine->lid = pa.lid;
    memcpy(mine->gid, gid.raw, 16);
    mine->rbase = (uint64_t)(uintptr_t)v->net.recv_arena;
    mine->rkey = v->rmr->rkey;
    mine->psn = p->me;
    for (uint32_t k = 0; k < p->nprocs; k++) mine->qpn[k] = v->qp[k]->qp_num;
  }
  ag(mine, all, len);
  for (uint32_t k = 0; k < p->nprocs && !why; k++) {
    const Card *c = (const Card *)(all + len * k);
    v->rbase[k] = c->rbase;
    v->rkey[k] = c->rkey;
    why = connect_qp(v, k, c, &pa);
  }
  g_free(mine);
  g_free(all);
  return why;
}

FabReplayNet *fab_replay_verbs_open(const FabReplayPlan *p, const char *dev, uint32_t port, uint32_t gid_index,
                                    FabReplayAllgather ag, bool *no_device, char **err) {
  Vb *v = g_new0(Vb, 1);
  v->p = p;
  v->port = (uint8_t)port;
  v->gid_index = (uint8_t)gid_index;
  v->net = (FabReplayNet){v, vb_send, vb_recv, vb_ctrl, vb_poll, NULL, NULL, false};
  v->net.send_arena = g_malloc0(MAX(p->send_bytes, 64));
  v->net.recv_arena = g_malloc0(MAX(p->recv_bytes, 64));
  v->slots = g_new0(uint64_t, (size_t)p->nprocs * RQ_DEPTH);
  v->qp = g_new0(struct ibv_qp *, p->nprocs);
  v->rbase = g_new0(uint64_t, p->nprocs);
  v->rkey = g_new0(uint32_t, p->nprocs);
  v->sq_used = g_new0(uint32_t, p->nprocs);
  v->pieces = g_new0(uint32_t, p->nops);
  char *why = p->nops >> OP_BITS ? g_strdup_printf("the verbs backend numbers ops in %d bits: at most %u", OP_BITS,
                                                   1u << OP_BITS) : open_dev(v, dev);
  *no_device = v->no_device;
  why = fab_replay_vote(p, ag, why, "open its RDMA device");
  if (!why) why = fab_replay_vote(p, ag, connect_all(v, ag), "connect its queue pairs");
  if (why) {
    *err = why;
    fab_replay_verbs_close(&v->net);
    return NULL;
  }
  return &v->net;
}

const char *fab_replay_verbs_device(const FabReplayNet *net) { return ((const Vb *)net->ctx)->name; }

void fab_replay_verbs_close(FabReplayNet *net) {
  if (!net) return;
  Vb *v = net->ctx;
  for (uint32_t k = 0; v->qp && k < v->p->nprocs; k++)
    if (v->qp[k]) ibv_destroy_qp(v->qp[k]);
  if (v->smr) ibv_dereg_mr(v->smr);
  if (v->rmr) ibv_dereg_mr(v->rmr);
  if (v->cmr) ibv_dereg_mr(v->cmr);
  if (v->cq) ibv_destroy_cq(v->cq);
  if (v->pd) ibv_dealloc_pd(v->pd);
  if (v->ctx) ibv_close_device(v->ctx);
  if (v->list) ibv_free_device_list(v->list);
  g_free(v->qp);
  g_free(v->slots);
  g_free(v->rbase);
  g_free(v->rkey);
  g_free(v->sq_used);
  g_free(v->pieces);
  g_free(v->net.send_arena);
  g_free(v->net.recv_arena);
  g_free(v);
}

/* fabsim-replay over libfabric: one RDM endpoint per process, tagged sends
** into posted receives, or RMA writes with immediate data into the
** receiver's registered arena (--rma). Notices are 8-byte tagged injects.
** See replay.h. */
#include "replay.h"
#include <errno.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <string.h>

#define CTRL_TAG (1ull << 63)
#define CTRL_RECVS 256
#define NAME_MAX_ 256

typedef struct Ctx {
  struct fi_context2 fc; /* first: the provider may use it (FI_CONTEXT, FI_CONTEXT2) */
  uint32_t op;
  uint8_t kind;          /* FAB_REPLAY_EV_* */
} Ctx;

typedef struct Ofi {
  FabReplayNet net;
  const FabReplayPlan *p;
  struct fi_info *info;
  struct fid_fabric *fabric;
  struct fid_domain *domain;
  struct fid_av *av;
  struct fid_cq *cq;
  struct fid_ep *ep;
  struct fid_mr *smr, *rmr, *cmr;
  void *sdesc, *rdesc, *cdesc;
  fi_addr_t *addr;        /* per process */
  uint64_t *rbase, *rkey; /* per process: its receive arena as an RMA target */
  bool rma;
  Ctx *sctx, *rctx;       /* per op */
  Ctx cctx[CTRL_RECVS];
  uint64_t cbuf[CTRL_RECVS];
  char prov[64];
} Ofi;

static char *fi_fail(const char *what, int rc) { return g_strdup_printf("libfabric: %s: %s", what, fi_strerror(-rc)); }

static int post_ctrl(Ofi *o, int k) {
  o->cctx[k].kind = FAB_REPLAY_EV_CTRL;
  o->cctx[k].op = (uint32_t)k;
  return (int)fi_trecv(o->ep, &o->cbuf[k], 8, o->cdesc, FI_ADDR_UNSPEC, CTRL_TAG, CTRL_TAG - 1, &o->cctx[k]);
}

static inline uint64_t data_tag(uint32_t op, uint32_t pass) { return (uint64_t)(pass & 0xffffu) << 32 | op; }

static int ofi_send(void *ctx, uint32_t op, uint32_t pass, uint32_t to, uint64_t soff, uint64_t len, uint64_t roff,
                    char **err) {
  Ofi *o = ctx;
  Ctx *c = &o->sctx[op];
  c->op = op;
  c->kind = FAB_REPLAY_EV_SEND;
  ssize_t rc;
  if (o->rma) {
    uint64_t at = (o->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? o->rbase[to] + roff : roff;
    rc = fi_writedata(o->ep, o->net.send_arena + soff, len, o->sdesc, data_tag(op, pass), o->addr[to], at,
                      o->rkey[to], c);
  } else {
    rc = fi_tsend(o->ep, o->net.send_arena + soff, len, o->sdesc, o->addr[to], data_tag(op, pass), c);
  }
  if (rc == -FI_EAGAIN) return -EAGAIN;
  if (rc) *err = g_strdup_printf("libfabric: %s of flow op %u to process %u: %s", o->rma ? "fi_writedata" : "fi_tsend",
                                 op, to, fi_strerror((int)-rc));
  return rc ? -EIO : 0;
}

static int ofi_recv(void *ctx, uint32_t op, uint32_t pass, uint32_t from, uint64_t roff, uint64_t len, char **err) {
  Ofi *o = ctx;
  if (o->rma) return 0; /* the write's immediate data says it is in */
  Ctx *c = &o->rctx[op];
  c->op = op;
  c->kind = FAB_REPLAY_EV_RECV;
  ssize_t rc = fi_trecv(o->ep, o->net.recv_arena + roff, len, o->rdesc, o->addr[from], data_tag(op, pass), 0, c);
  if (rc == -FI_EAGAIN) return -EAGAIN;
  if (rc) *err = g_strdup_printf("libfabric: fi_trecv of flow op %u from process %u: %s", op, from,
                                 fi_strerror((int)-rc));
  return rc ? -EIO : 0;
}

static int ofi_ctrl(void *ctx, uint32_t to, uint64_t word, char **err) {
  Ofi *o = ctx;
  ssize_t rc = fi_tinject(o->ep, &word, 8, o->addr[to], CTRL_TAG);
  if (rc == -FI_EAGAIN) return -EAGAIN;
  if (rc) *err = g_strdup_printf("libfabric: fi_tinject of a notice to process %u: %s", to, fi_strerror((int)-rc));
  return rc ? -EIO : 0;
}

static int ofi_poll(void *ctx, FabReplayDone *out, int max, char **err) {
  Ofi *o = ctx;
  struct fi_cq_tagged_entry e[64];
  ssize_t n = fi_cq_read(o->cq, e, (size_t)MIN(max, 64));
  if (n == -FI_EAGAIN) return 0;
  if (n == -FI_EAVAIL) {
    struct fi_cq_err_entry ee = {0};
    fi_cq_readerr(o->cq, &ee, 0);
    const Ctx *c = ee.op_context;
    const char *why = fi_cq_strerror(o->cq, ee.prov_errno, ee.err_data, NULL, 0);
    if (c && c->kind != FAB_REPLAY_EV_CTRL) {
      uint32_t op = c->op, peer = c->kind == FAB_REPLAY_EV_SEND ? o->p->observer[op] : o->p->actor[op];
      *err = g_strdup_printf("libfabric: the %s of flow op %u %s process %u (endpoint %u) failed: %s (%s)",
                             c->kind == FAB_REPLAY_EV_SEND ? "send" : "receive", op,
                             c->kind == FAB_REPLAY_EV_SEND ? "to" : "from", peer, o->p->ep_of[peer],
                             fi_strerror(ee.err), why ? why : "");
    } else {
      *err = g_strdup_printf("libfabric: a completion failed: %s (%s)", fi_strerror(ee.err), why ? why : "");
    }
    return -EIO;
  }
  if (n < 0) {
    *err = fi_fail("fi_cq_read", (int)n);
    return -EIO;
  }
  int m = 0;
  for (ssize_t k = 0; k < n; k++) {
    if (e[k].flags & FI_REMOTE_CQ_DATA) { /* an RMA write with immediate landed here */
      out[m++] = (FabReplayDone){FAB_REPLAY_EV_RECV, (uint32_t)e[k].data, 0};
      continue;
    }
    Ctx *c = e[k].op_context;
    if (c->kind == FAB_REPLAY_EV_CTRL) {
      int i = (int)(c - o->cctx);
      out[m++] = (FabReplayDone){FAB_REPLAY_EV_CTRL, 0, o->cbuf[i]};
      int rc = post_ctrl(o, i);
      if (rc) {
        *err = fi_fail("fi_trecv (notices)", rc);
        return -EIO;
      }
    } else {
      out[m++] = (FabReplayDone){c->kind, c->op, 0};
    }
  }
  return m;
}

/* The info: RDM, tagged (and RMA with remote CQ data), 8-byte injects. */
static struct fi_info *pick(const char *prov, bool rma, char **err) {
  struct fi_info *h = fi_allocinfo(), *info = NULL;
  h->caps = FI_TAGGED | (rma ? FI_RMA | FI_WRITE | FI_REMOTE_WRITE : 0);
  h->ep_attr->type = FI_EP_RDM;
  h->mode = FI_CONTEXT | FI_CONTEXT2;
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  h->domain_attr->threading = FI_THREAD_DOMAIN;
  if (prov) h->fabric_attr->prov_name = g_strdup(prov);
  int rc = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, h, &info);
  fi_freeinfo(h);
  if (rc) {
    *err = g_strdup_printf("libfabric: no provider%s%s%s offers reliable tagged messages%s: %s", prov ? " '" : "",
                           prov ? prov : "", prov ? "'" : "", rma ? " and RMA writes with immediate data" : "",
                           fi_strerror(-rc));
    return NULL;
  }
  for (struct fi_info *i = info; i; i = i->next) {
    if (i->tx_attr->inject_size < 8 || (rma && (i->domain_attr->cq_data_size < 8 || (i->mode & FI_RX_CQ_DATA))))
      continue;
    struct fi_info *one = fi_dupinfo(i);
    fi_freeinfo(info);
    return one;
  }
  fi_freeinfo(info);
  *err = g_strdup_printf("libfabric: provider%s%s%s has no endpoint with 8-byte injects%s", prov ? " '" : "",
                         prov ? prov : "", prov ? "'" : "", rma ? " and 8 bytes of remote CQ data" : "");
  return NULL;
}

static int reg(Ofi *o, uint8_t *buf, size_t len, uint64_t access, uint64_t key, struct fid_mr **mr, void **desc) {
  int rc = fi_mr_reg(o->domain, buf, MAX(len, 1), access, 0, key, 0, mr, NULL);
  if (rc) return rc;
  if (o->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
    if ((rc = fi_mr_bind(*mr, &o->ep->fid, 0)) || (rc = fi_mr_enable(*mr))) return rc;
  }
  *desc = fi_mr_desc(*mr);
  return 0;
}

/* Open the fabric, domain, CQ, AV and endpoint. */
static char *open_ep(Ofi *o) {
  int rc;
  struct fi_cq_attr cqa = {.size = 4096, .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE};
  struct fi_av_attr ava = {.type = FI_AV_TABLE, .count = o->p->nprocs};
  if ((rc = fi_fabric(o->info->fabric_attr, &o->fabric, NULL))) return fi_fail("fi_fabric", rc);
  if ((rc = fi_domain(o->fabric, o->info, &o->domain, NULL))) return fi_fail("fi_domain", rc);
  if ((rc = fi_cq_open(o->domain, &cqa, &o->cq, NULL))) return fi_fail("fi_cq_open", rc);
  if ((rc = fi_av_open(o->domain, &ava, &o->av, NULL))) return fi_fail("fi_av_open", rc);
  if ((rc = fi_endpoint(o->domain, o->info, &o->ep, NULL))) return fi_fail("fi_endpoint", rc);
  if ((rc = fi_ep_bind(o->ep, &o->cq->fid, FI_TRANSMIT | FI_RECV))) return fi_fail("fi_ep_bind (CQ)", rc);
  if ((rc = fi_ep_bind(o->ep, &o->av->fid, 0))) return fi_fail("fi_ep_bind (AV)", rc);
  if ((rc = fi_enable(o->ep))) return fi_fail("fi_enable", rc);
  return NULL;
}

/* Addresses, arenas and their keys, through the allgather; the notices' receives. */
static char *connect_all(Ofi *o, FabReplayAllgather ag) {
  const FabReplayPlan *p = o->p;
  int rc;
  uint8_t name[NAME_MAX_] = {0};
  size_t len = sizeof name - sizeof(uint32_t);
  if ((rc = fi_getname(&o->ep->fid, name + sizeof(uint32_t), &len))) return fi_fail("fi_getname", rc);
  uint32_t l32 = (uint32_t)len;
  memcpy(name, &l32, sizeof l32);
  uint8_t *names = g_malloc((size_t)p->nprocs * NAME_MAX_);
  ag(name, names, NAME_MAX_);
  o->addr = g_new(fi_addr_t, p->nprocs);
  for (uint32_t k = 0; k < p->nprocs; k++) {
    if (fi_av_insert(o->av, names + (size_t)k * NAME_MAX_ + sizeof(uint32_t), 1, &o->addr[k], 0, NULL) != 1) {
      g_free(names);
      return g_strdup_printf("libfabric: fi_av_insert: process %u's address was not taken", k);
    }
  }
  g_free(names);
  uint64_t acc = FI_SEND | FI_RECV | FI_WRITE | FI_REMOTE_WRITE;
  if ((rc = reg(o, o->net.send_arena, p->send_bytes, acc, 3 * (uint64_t)p->me + 1, &o->smr, &o->sdesc)))
    return fi_fail("fi_mr_reg (send arena)", rc);
  if ((rc = reg(o, o->net.recv_arena, p->recv_bytes, acc, 3 * (uint64_t)p->me + 2, &o->rmr, &o->rdesc)))
    return fi_fail("fi_mr_reg (receive arena)", rc);
  if ((rc = reg(o, (uint8_t *)o->cbuf, sizeof o->cbuf, FI_RECV, 3 * (uint64_t)p->me + 3, &o->cmr, &o->cdesc)))
    return fi_fail("fi_mr_reg (notices)", rc);
  uint64_t mine[2] = {(uint64_t)(uintptr_t)o->net.recv_arena, fi_mr_key(o->rmr)}, *all = g_new(uint64_t, 2 * p->nprocs);
  ag(mine, all, sizeof mine);
  o->rbase = g_new(uint64_t, p->nprocs);
  o->rkey = g_new(uint64_t, p->nprocs);
  for (uint32_t k = 0; k < p->nprocs; k++) o->rbase[k] = all[2 * k], o->rkey[k] = all[2 * k + 1];
  g_free(all);
  for (int k = 0; k < CTRL_RECVS; k++)
    if ((rc = post_ctrl(o, k))) return fi_fail("fi_trecv (notices)", rc);
  return NULL;
}

FabReplayNet *fab_replay_ofi_open(const FabReplayPlan *p, const char *prov, bool rma, FabReplayAllgather ag,
                                  char **err) {
  struct fi_info *info = pick(prov, rma, err);
  Ofi *o = g_new0(Ofi, 1);
  o->p = p;
  o->info = info;
  o->rma = rma;
  o->net = (FabReplayNet){o, ofi_send, ofi_recv, ofi_ctrl, ofi_poll, NULL, NULL};
  char *why = info ? open_ep(o) : *err;
  if (info) {
    g_strlcpy(o->prov, info->fabric_attr->prov_name, sizeof o->prov);
    o->net.send_arena = g_malloc0(MAX(p->send_bytes, 64));
    o->net.recv_arena = g_malloc0(MAX(p->recv_bytes, 64));
    o->sctx = g_new0(Ctx, p->nops);
    o->rctx = g_new0(Ctx, p->nops);
  }
  why = fab_replay_vote(p, ag, why, "open its endpoint");
  if (!why) why = fab_replay_vote(p, ag, connect_all(o, ag), "connect");
  if (why) {
    *err = why;
    fab_replay_ofi_close(&o->net);
    return NULL;
  }
  return &o->net;
}

const char *fab_replay_ofi_provider(const FabReplayNet *net) { return ((const Ofi *)net->ctx)->prov; }

void fab_replay_ofi_close(FabReplayNet *net) {
  if (!net) return;
  Ofi *o = net->ctx;
  if (o->ep) fi_close(&o->ep->fid);
  if (o->smr) fi_close(&o->smr->fid);
  if (o->rmr) fi_close(&o->rmr->fid);
  if (o->cmr) fi_close(&o->cmr->fid);
  if (o->av) fi_close(&o->av->fid);
  if (o->cq) fi_close(&o->cq->fid);
  if (o->domain) fi_close(&o->domain->fid);
  if (o->fabric) fi_close(&o->fabric->fid);
  fi_freeinfo(o->info);
  g_free(o->addr);
  g_free(o->rbase);
  g_free(o->rkey);
  g_free(o->sctx);
  g_free(o->rctx);
  g_free(o->net.send_arena);
  g_free(o->net.recv_arena);
  g_free(o);
}

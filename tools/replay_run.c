/* fabsim-replay: one pass of the plan on this process, over a transport.
** See replay.h. */
#include "replay.h"
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { K_SENT = 1, K_DONE = 2, K_STARTED = 4, K_RECV_POSTED = 8, K_SEND_DONE = 16 };

typedef struct Notice {
  uint32_t to;
  uint64_t word;
} Notice;

typedef struct Pass {
  const FabReplayPlan *p;
  const FabReplayNet *net;
  uint32_t pass;
  uint8_t *st;           /* per op: K_* */
  uint32_t *need;        /* per op run here: waits still open */
  GQueue ready;          /* ops run here whose waits are met, not started (op + 1) */
  GArray *ctrl;          /* Notice: still to send from ctrl_head on */
  guint ctrl_head;
  uint32_t next_recv;    /* receives are posted in op order from here */
  uint32_t left;         /* ops run here not done, plus receives not in */
  double t0;             /* ns, the pass's start */
  FabReplayTimes *t;
  int stall;
  char *err;
} Pass;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* A notice's word: the pass (so a late one from a pass before is known), whether of a send, the op. */
static inline uint64_t notice(uint32_t pass, uint32_t op, bool sent) {
  return (uint64_t)(pass & 0xffffu) << 24 << 9 | (sent ? 1ull << 32 : 0) | op;
}

static void release(Pass *s, uint32_t y, bool sent_only) {
  const FabReplayPlan *p = s->p;
  for (uint32_t k = p->wait_off[y]; k < p->wait_off[y + 1]; k++) {
    uint32_t w = p->wait_list[k];
    if (sent_only && !(w & FAB_REPLAY_SENT)) continue;
    if (!sent_only && (w & FAB_REPLAY_SENT) && (s->st[y] & K_SENT)) continue; /* released when it was sent */
    uint32_t x = w & ~FAB_REPLAY_SENT;
    g_assert(s->need[x] > 0);
    if (--s->need[x] == 0) g_queue_push_tail(&s->ready, GUINT_TO_POINTER(x + 1));
  }
}

static void tell(Pass *s, uint32_t y, bool sent) {
  const FabReplayPlan *p = s->p;
  for (uint32_t k = p->tell_off[y]; k < p->tell_off[y + 1]; k++) {
    uint32_t w = p->tell_list[k];
    if (!!(w & FAB_REPLAY_SENT) != sent) continue;
    Notice n = {w & ~FAB_REPLAY_SENT, notice(s->pass, y, sent)};
    g_array_append_val(s->ctrl, n);
  }
}

/* Op y is known here to be done (or, sent: flow y to have left its sender). */
static void learn(Pass *s, uint32_t y, bool sent) {
  uint8_t had = s->st[y];
  if (sent ? (had & (K_SENT | K_DONE)) : (had & K_DONE)) return;
  release(s, y, sent);
  s->st[y] |= sent ? K_SENT : (K_DONE | K_SENT);
}

static void took(Pass *s) {
  g_assert(s->left > 0);
  s->left--;
}

/* Start a ready op: 0, -EAGAIN (try again after progress), or an error. */
static int start(Pass *s, uint32_t x) {
  const FabReplayPlan *p = s->p;
  const FabOp *o = fab_dag_op(p->dag, x);
  double at = now_ns() - s->t0;
  if (o->start && at < (double)o->start / 1e3) return -EAGAIN; /* not yet: `start` is kept */
  if (o->kind != FAB_OP_FLOW) {
    s->t->began[x] = s->t->ended[x] = at;
    s->st[x] |= K_STARTED;
    took(s);
    learn(s, x, false);
    tell(s, x, false);
    return 0;
  }
  if (G_UNLIKELY(s->stall == 2)) raise(SIGKILL); /* tests: a peer that dies */
  if (G_UNLIKELY(s->stall)) /* tests: this process stops answering (a hung peer) until it is killed */
    for (;;) pause();
  int rc = s->net->send(s->net->ctx, x, s->pass, p->observer[x], p->send_off[x], o->bytes, p->recv_off[x], &s->err);
  if (rc) return rc;
  s->t->began[x] = at;
  s->st[x] |= K_STARTED;
  return 0;
}

static int completion(Pass *s, const FabReplayDone *e) {
  const FabReplayPlan *p = s->p;
  if (e->kind == FAB_REPLAY_EV_CTRL) {
    if ((e->word >> 33 & 0xffffu) != (s->pass & 0xffffu)) return 0; /* a late notice of a pass before */
    uint32_t y = (uint32_t)e->word;
    if (y >= p->nops) {
      s->err = g_strdup_printf("a notice names op %u, past the DAG's %u", y, p->nops);
      return -EPROTO;
    }
    learn(s, y, e->word >> 32 & 1);
    return 0;
  }
  uint32_t y = e->op;
  if (e->kind == FAB_REPLAY_EV_SEND) {
    s->st[y] |= K_SEND_DONE;
    took(s);
    learn(s, y, true);
    tell(s, y, true);
    return 0;
  }
  s->t->ended[y] = now_ns() - s->t0;
  took(s);
  learn(s, y, false);
  tell(s, y, false);
  return 0;
}

/* What this process still waits for, for a timeout's message: the first receive not in, else the first op
** run here with an open wait and what it waits on. */
static char *waiting_for(const Pass *s) {
  const FabReplayPlan *p = s->p;
  for (uint32_t y = 0; y < p->nops; y++) {
    const FabOp *o = fab_dag_op(p->dag, y);
    if (o->kind == FAB_OP_FLOW && p->observer[y] == p->me && !(s->st[y] & K_DONE))
      return g_strdup_printf("flow op %u (%" G_GUINT64_FORMAT " B from process %u, endpoint %u) has not arrived",
                             y, o->bytes, p->actor[y], o->src);
  }
  for (uint32_t x = 0; x < p->nops; x++) {
    if (p->actor[x] != p->me || !s->need[x]) continue;
    const FabOp *o = fab_dag_op(p->dag, x);
    for (uint32_t k = 0; k < o->ndeps; k++) {
      uint32_t e = fab_dag_dep(p->dag, o, k), y = e & ~FAB_DEP_SENT;
      bool sent = (e & FAB_DEP_SENT) && fab_dag_op(p->dag, y)->kind == FAB_OP_FLOW;
      if (s->st[y] & (sent ? (K_SENT | K_DONE) : K_DONE)) continue;
      uint32_t from = sent ? p->actor[y] : p->observer[y];
      return g_strdup_printf("op %u waits for op %u to be %s, which process %u (endpoint %u) has not told", x, y,
                             sent ? "sent" : "done", from, p->ep_of[from]);
    }
  }
  for (uint32_t x = 0; x < p->nops; x++)
    if (p->actor[x] == p->me && fab_dag_op(p->dag, x)->kind == FAB_OP_FLOW && !(s->st[x] & K_SEND_DONE))
      return g_strdup_printf("the send of flow op %u to process %u (endpoint %u) has not completed", x,
                             p->observer[x], fab_dag_op(p->dag, x)->dst);
  return g_strdup("nothing (the notices owed to other processes could not be sent)");
}

/* Post what can be posted: receives, notices, ready ops. 0 or an error. */
static int push(Pass *s) {
  const FabReplayPlan *p = s->p;
  int rc = 0;
  for (; s->next_recv < p->nops; s->next_recv++) {
    uint32_t y = s->next_recv;
    const FabOp *o = fab_dag_op(p->dag, y);
    if (o->kind != FAB_OP_FLOW || p->observer[y] != p->me) continue;
    if ((rc = s->net->recv(s->net->ctx, y, s->pass, p->actor[y], p->recv_off[y], o->bytes, &s->err))) break;
    s->st[y] |= K_RECV_POSTED;
  }
  if (rc != 0 && rc != -EAGAIN) return rc;
  rc = 0;
  for (; s->ctrl_head < s->ctrl->len; s->ctrl_head++) {
    const Notice *n = &g_array_index(s->ctrl, Notice, s->ctrl_head);
    if ((rc = s->net->ctrl(s->net->ctx, n->to, n->word, &s->err))) break;
  }
  if (rc != 0 && rc != -EAGAIN) return rc;
  guint n = g_queue_get_length(&s->ready);
  for (guint k = 0; k < n; k++) { /* each once: one whose `start` has not come goes to the back */
    uint32_t x = GPOINTER_TO_UINT(g_queue_pop_head(&s->ready)) - 1;
    rc = start(s, x);
    if (rc == -EAGAIN) {
      g_queue_push_tail(&s->ready, GUINT_TO_POINTER(x + 1));
      continue;
    }
    if (rc) return rc;
  }
  return 0;
}

void fab_replay_prepare(const FabReplayPlan *p, const FabReplayNet *net, uint32_t pass) {
  bool spoil = net->corrupt;
  for (uint32_t x = 0; x < p->nops; x++) {
    const FabOp *o = fab_dag_op(p->dag, x);
    if (o->kind != FAB_OP_FLOW || p->actor[x] != p->me) continue;
    fab_replay_fill(net->send_arena + p->send_off[x], o->bytes, x, pass);
    if (spoil && o->bytes) net->send_arena[p->send_off[x] + o->bytes / 2] ^= 0x40, spoil = false;
  }
}

int fab_replay_pass(const FabReplayPlan *p, const FabReplayNet *net, uint32_t pass, double timeout_s, int stall,
                    FabReplayTimes *t, char **err) {
  Pass s = {.p = p, .net = net, .pass = pass, .t = t, .stall = stall};
  s.st = g_new0(uint8_t, p->nops);
  s.need = g_memdup2(p->need, sizeof(uint32_t) * p->nops);
  s.ctrl = g_array_new(FALSE, FALSE, sizeof(Notice));
  g_queue_init(&s.ready);
  for (uint32_t x = 0; x < p->nops; x++)
    if (p->actor[x] == p->me && !s.need[x]) g_queue_push_tail(&s.ready, GUINT_TO_POINTER(x + 1));
  s.left = p->mine + p->recvs;
  memset(t->began, 0, sizeof(double) * p->nops);
  memset(t->ended, 0, sizeof(double) * p->nops);
  s.t0 = now_ns();
  double last = s.t0;
  int rc = 0;
  FabReplayDone ev[64];
  while (s.left || s.ctrl_head < s.ctrl->len) {
    if ((rc = push(&s))) break;
    int n = net->poll(net->ctx, ev, G_N_ELEMENTS(ev), &s.err);
    if (n < 0) {
      rc = n;
      break;
    }
    for (int k = 0; k < n && !rc; k++) rc = completion(&s, &ev[k]);
    if (rc) break;
    double now = now_ns();
    if (n) {
      last = now;
      continue;
    }
    sched_yield(); /* processes that share a core (tests) each get to progress */
    if (now - last > timeout_s * 1e9) {
      char *what = waiting_for(&s);
      s.err = g_strdup_printf("timed out after %.1f s without progress: %s", timeout_s, what);
      g_free(what);
      rc = -ETIMEDOUT;
      break;
    }
  }
  for (uint32_t y = 0; !rc && y < p->nops; y++) { /* the bytes that came in are the ones sent */
    const FabOp *o = fab_dag_op(p->dag, y);
    if (o->kind != FAB_OP_FLOW || p->observer[y] != p->me) continue;
    uint64_t at = fab_replay_check(net->recv_arena + p->recv_off[y], o->bytes, y, pass);
    if (at < o->bytes) {
      s.err = g_strdup_printf("flow op %u (%" G_GUINT64_FORMAT " B from process %u, endpoint %u): byte %"
                              G_GUINT64_FORMAT " is not what was sent", y, o->bytes, p->actor[y], o->src, at);
      rc = -EBADMSG;
    }
  }
  g_queue_clear(&s.ready);
  g_array_free(s.ctrl, TRUE);
  g_free(s.st);
  g_free(s.need);
  if (rc) {
    *err = s.err ? s.err : g_strdup_printf("error %d", rc);
    return 1;
  }
  g_free(s.err);
  return 0;
}

char *fab_replay_vote(const FabReplayPlan *p, FabReplayAllgather ag, char *why, const char *what) {
  uint8_t ok = !why, *oks = g_malloc(p->nprocs);
  ag(&ok, oks, 1);
  for (uint32_t k = 0; k < p->nprocs && !why; k++)
    if (!oks[k]) why = g_strdup_printf("process %u could not %s", k, what);
  g_free(oks);
  return why;
}

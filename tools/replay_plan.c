/* fabsim-replay's plan: who runs each op of the DAG, who learns it is done,
** who must be told, where each flow's bytes go. See replay.h. */
#include "replay.h"
#include <string.h>

/* The ops a wait or a notice is about: a flow's send when flagged, else its (or any op's) being done. */
static inline bool is_flow(const FabOp *o) { return o->kind == FAB_OP_FLOW; }

/* Who learns that op y is done (sent: that flow y has left its sender). */
static inline uint32_t learner(const FabReplayPlan *p, uint32_t y, bool sent) {
  return sent ? p->actor[y] : p->observer[y];
}

static gboolean refuse(char **why, const FabOp *o, uint32_t i) {
  if (o->kind == FAB_OP_NVLS)
    *why = g_strdup_printf("op %u is an NVLS (NVSwitch multicast) operation, which a transport cannot replay: "
                           "set workload.algorithm to ring or tree (or another that moves data point to point)", i);
  else
    *why = g_strdup_printf("op %u is %.3f us of compute (a training workload): replay runs collective, nccl-tests "
                           "and flows workloads", i, (double)o->dur / 1e6);
  return FALSE;
}

/* Processes: the endpoints the ops touch, in endpoint order. */
static gboolean assign(FabReplayPlan *p, const FabDag *d, char **why) {
  uint32_t maxep = 0;
  for (uint32_t i = 0; i < p->nops; i++) {
    const FabOp *o = fab_dag_op(d, i);
    if (o->kind == FAB_OP_NVLS || (o->kind == FAB_OP_COMPUTE && o->dur)) return refuse(why, o, i);
    maxep = MAX(maxep, MAX(o->src, o->dst));
  }
  uint32_t *proc = g_new(uint32_t, (size_t)maxep + 1);
  memset(proc, 0xff, sizeof(uint32_t) * ((size_t)maxep + 1));
  for (uint32_t i = 0; i < p->nops; i++) {
    const FabOp *o = fab_dag_op(d, i);
    proc[o->src] = proc[o->dst] = 0;
  }
  p->ep_of = g_new(uint32_t, (size_t)maxep + 1);
  for (uint32_t e = 0; e <= maxep; e++)
    if (proc[e] == 0) p->ep_of[p->nprocs] = e, proc[e] = p->nprocs++;
  for (uint32_t i = 0; i < p->nops; i++) {
    const FabOp *o = fab_dag_op(d, i);
    p->actor[i] = proc[o->src];
    p->observer[i] = is_flow(o) ? proc[o->dst] : p->actor[i];
  }
  g_free(proc);
  return TRUE;
}

/* Each flow's place in its receiver's and its sender's arena (64-byte aligned). */
static void place(FabReplayPlan *p, const FabDag *d) {
  uint64_t *racc = g_new0(uint64_t, p->nprocs), *sacc = g_new0(uint64_t, p->nprocs);
  for (uint32_t i = 0; i < p->nops; i++) {
    const FabOp *o = fab_dag_op(d, i);
    if (!is_flow(o)) continue;
    uint64_t len = (o->bytes + 63) & ~(uint64_t)63;
    p->recv_off[i] = racc[p->observer[i]];
    racc[p->observer[i]] += len;
    p->send_off[i] = sacc[p->actor[i]];
    sacc[p->actor[i]] += len;
    p->flows++;
    p->recvs += p->observer[i] == p->me;
  }
  p->recv_bytes = racc[p->me];
  p->send_bytes = sacc[p->me];
  g_free(racc);
  g_free(sacc);
}

/* A dependency entry of op x: the op it waits for, and whether for its send only. */
static inline uint32_t dep_of(const FabDag *d, const FabOp *x, uint32_t k, bool *sent) {
  uint32_t e = fab_dag_dep(d, x, k);
  uint32_t y = e & ~FAB_DEP_SENT;
  *sent = (e & FAB_DEP_SENT) && is_flow(fab_dag_op(d, y)); /* a non-flow's send is its being done */
  return y;
}

static int cmp_pair(const void *a, const void *b) {
  const uint64_t *x = a, *y = b;
  return *x < *y ? -1 : *x > *y;
}

/* The waits of the ops run here (need, wait_off/list) and the notices owed
** by what is learnt here (tell_off/list: (op, process | SENT) pairs, once). */
static void link_waits(FabReplayPlan *p, const FabDag *d) {
  p->need = g_new0(uint32_t, p->nops);
  p->wait_off = g_new0(uint32_t, (size_t)p->nops + 1);
  GArray *tells = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  for (uint32_t x = 0; x < p->nops; x++) {
    const FabOp *o = fab_dag_op(d, x);
    bool here = p->actor[x] == p->me;
    p->mine += here;
    for (uint32_t k = 0; k < o->ndeps; k++) {
      bool sent;
      uint32_t y = dep_of(d, o, k, &sent);
      if (here) {
        p->need[x]++;
        p->wait_off[y + 1]++;
      } else if (learner(p, y, sent) == p->me) {
        uint64_t v = (uint64_t)y << 32 | p->actor[x] | (sent ? FAB_REPLAY_SENT : 0);
        g_array_append_val(tells, v);
      }
    }
  }
  for (uint32_t i = 0; i < p->nops; i++) p->wait_off[i + 1] += p->wait_off[i];
  p->wait_list = g_new(uint32_t, MAX(p->wait_off[p->nops], 1u));
  uint32_t *fill = g_new0(uint32_t, p->nops);
  for (uint32_t x = 0; x < p->nops; x++) {
    if (p->actor[x] != p->me) continue;
    const FabOp *o = fab_dag_op(d, x);
    for (uint32_t k = 0; k < o->ndeps; k++) {
      bool sent;
      uint32_t y = dep_of(d, o, k, &sent);
      p->wait_list[p->wait_off[y] + fill[y]++] = x | (sent ? FAB_REPLAY_SENT : 0);
    }
  }
  g_free(fill);
  if (tells->len) qsort(tells->data, tells->len, sizeof(uint64_t), cmp_pair);
  p->tell_off = g_new0(uint32_t, (size_t)p->nops + 1);
  p->tell_list = g_new(uint32_t, MAX(tells->len, 1u));
  uint32_t n = 0;
  for (guint k = 0; k < tells->len; k++) {
    uint64_t v = g_array_index(tells, uint64_t, k);
    if (k && v == g_array_index(tells, uint64_t, k - 1)) continue;
    p->tell_list[n++] = (uint32_t)v;
    p->tell_off[(v >> 32) + 1]++;
  }
  for (uint32_t i = 0; i < p->nops; i++) p->tell_off[i + 1] += p->tell_off[i];
  g_array_free(tells, TRUE);
}

gboolean fab_replay_plan(FabReplayPlan *p, FabDag *dag, uint32_t me, uint32_t max_ops, char **why) {
  memset(p, 0, sizeof *p);
  while (dag->more && !dag->exhausted && fab_dag_len(dag) <= max_ops) fab_dag_more(dag);
  if (fab_dag_len(dag) > max_ops) {
    *why = g_strdup_printf("the workload has more than %u operations (replay makes them all before it runs): "
                           "replay a smaller size or fewer ranks", max_ops);
    return FALSE;
  }
  g_assert(fab_dag_base(dag) == 0);
  p->dag = dag;
  p->nops = fab_dag_len(dag);
  p->me = me;
  p->actor = g_new0(uint32_t, MAX(p->nops, 1u));
  p->observer = g_new0(uint32_t, MAX(p->nops, 1u));
  p->recv_off = g_new0(uint64_t, MAX(p->nops, 1u));
  p->send_off = g_new0(uint64_t, MAX(p->nops, 1u));
  if (!p->nops) {
    *why = g_strdup("the workload has no operations");
    fab_replay_plan_clear(p);
    return FALSE;
  }
  if (!assign(p, dag, why)) {
    fab_replay_plan_clear(p);
    return FALSE;
  }
  place(p, dag);
  link_waits(p, dag);
  return TRUE;
}

void fab_replay_plan_clear(FabReplayPlan *p) {
  g_free(p->ep_of);
  g_free(p->actor);
  g_free(p->observer);
  g_free(p->recv_off);
  g_free(p->send_off);
  g_free(p->need);
  g_free(p->wait_off);
  g_free(p->wait_list);
  g_free(p->tell_off);
  g_free(p->tell_list);
  memset(p, 0, sizeof *p);
}

/* The pattern: 8-byte words from (op, pass), each word different. */
static inline uint64_t seed_of(uint32_t op, uint32_t pass) {
  uint64_t x = ((uint64_t)op << 20 ^ (uint64_t)pass) * 0x9E3779B97F4A7C15ull;
  return x ^ x >> 29;
}
static inline uint64_t word_at(uint64_t s, uint64_t w) { return s ^ (w + 1) * 0xBF58476D1CE4E5B9ull; }

void fab_replay_fill(uint8_t *buf, uint64_t len, uint32_t op, uint32_t pass) {
  uint64_t s = seed_of(op, pass), w = 0;
  for (; (w + 1) * 8 <= len; w++) {
    uint64_t v = word_at(s, w);
    memcpy(buf + w * 8, &v, 8);
  }
  uint64_t v = word_at(s, w);
  memcpy(buf + w * 8, &v, len - w * 8);
}

uint64_t fab_replay_check(const uint8_t *buf, uint64_t len, uint32_t op, uint32_t pass) {
  uint64_t s = seed_of(op, pass), w = 0;
  for (; (w + 1) * 8 <= len; w++) {
    uint64_t v = word_at(s, w);
    if (memcmp(buf + w * 8, &v, 8)) break;
  }
  uint8_t v[8];
  uint64_t x = word_at(s, w);
  memcpy(v, &x, 8);
  for (uint64_t k = w * 8; k < len; k++)
    if (buf[k] != v[k - w * 8]) return k;
  return len;
}

/* NVSwitch in-switch reduction groups. See nvls.h. */
#include "nvls.h"
#include <glib.h>

typedef struct Group {
  uint32_t n;           /* members */
  uint32_t npkts;       /* segments */
  uint32_t *port;       /* n: the member's port on the switch */
  uint32_t *flow;       /* n: the member's flow id */
  uint32_t *rank;       /* n: the member's endpoint */
  uint16_t *arrived;    /* npkts: contributions in so far */
} Group;

struct FabNvls {
  FabSwitch *sw;
  GPtrArray *groups;    /* Group *, by id */
  uint64_t reduced;     /* segments reduced */
};

FabNvls *fab_nvls_new(FabSwitch *sw) {
  FabNvls *nv = g_new0(FabNvls, 1);
  nv->sw = sw;
  nv->groups = g_ptr_array_new();
  return nv;
}

void fab_nvls_free(FabNvls *nv) {
  if (!nv) return;
  for (guint i = 0; i < nv->groups->len; i++) {
    Group *g = g_ptr_array_index(nv->groups, i);
    g_free(g->port);
    g_free(g->flow);
    g_free(g->rank);
    g_free(g->arrived);
    g_free(g);
  }
  g_ptr_array_free(nv->groups, TRUE);
  g_free(nv);
}

uint32_t fab_nvls_add(FabNvls *nv, uint32_t n, const uint32_t *port, const uint32_t *flow, const uint32_t *rank,
                      uint32_t npkts) {
  g_assert(n >= 1 && n <= UINT16_MAX);
  Group *g = g_new0(Group, 1);
  g->n = n;
  g->npkts = npkts;
  g->port = g_memdup2(port, n * sizeof *port);
  g->flow = g_memdup2(flow, n * sizeof *flow);
  g->rank = g_memdup2(rank, n * sizeof *rank);
  g->arrived = g_new0(uint16_t, npkts);
  g_ptr_array_add(nv->groups, g);
  return nv->groups->len - 1;
}

void fab_nvls_up(FabEngine *eng, FabNvls *nv, FabPkt *p, FabPort *in) {
  g_assert(nv && p->dst < nv->groups->len);
  Group *g = g_ptr_array_index(nv->groups, p->dst);
  uint32_t k = p->seq, payload = p->payload, wire = p->wire;
  uint8_t prio = p->prio;
  fab_port_return_credit(eng, in->peer, prio, wire); /* absorbed into the reduction */
  fab_pkt_free(eng, p);
  if (++g->arrived[k] < g->n) return;
  nv->reduced++;
  fab_time_t lat = fab_switch_cfg(nv->sw)->latency;
  for (uint32_t m = 0; m < g->n; m++) { /* multicast the result */
    FabPkt *q = fab_pkt_alloc(eng);
    q->type = FAB_PKT_NVLS_DOWN;
    q->flow = g->flow[m];
    q->seq = k;
    q->dst = g->rank[m];
    q->payload = payload;
    q->wire = wire;
    q->prio = prio;
    q->ready = eng->now + lat;
    fab_port_enqueue(eng, fab_switch_port_at(nv->sw, g->port[m]), q);
  }
}

uint64_t fab_nvls_reduced(const FabNvls *nv) { return nv ? nv->reduced : 0; }

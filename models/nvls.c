/* NVSwitch reduction and multicast groups. See nvls.h. */
#include "nvls.h"
#include <glib.h>

typedef struct Group {
  FabNvlsMode mode;
  uint32_t n;           /* members */
  uint32_t npkts;       /* RS, AR: segments each member contributes */
  uint32_t left;        /* members done with it (fab_nvls_leave) */
  uint32_t *port;       /* n: the member's port on the switch */
  uint32_t *flow;       /* n: the member's flow id */
  uint32_t *rank;       /* n: the member's endpoint */
  uint16_t *arrived;    /* npkts (RS, AR): contributions in so far */
  fab_time_t *red_free; /* n (RS, AR): when the reduction toward member m is free again */
} Group;

#define CHUNK_BITS 12
#define CHUNK (1u << CHUNK_BITS)
#define NCHUNKS 4096 /* 16.7 M groups */

struct FabNvls {
  FabSwitch *sw;
  /* Group *, by id: chunk[id / CHUNK][id % CHUNK]. Chunks never move: in a parallel run the executor adds a
  ** group from another partition's thread while this switch's reads those it has (tools/libfabsim/driver.c) */
  Group **chunk[NCHUNKS];
  uint32_t ngroups;
  uint64_t reduce_bps;  /* per owner port; 0: unlimited */
  uint64_t reduced;     /* segments reduced */
  uint64_t multicast;   /* segments multicast */
};

static inline Group *group(const FabNvls *nv, uint32_t id) { return nv->chunk[id >> CHUNK_BITS][id & (CHUNK - 1)]; }

FabNvls *fab_nvls_new(FabSwitch *sw) {
  FabNvls *nv = g_new0(FabNvls, 1);
  nv->sw = sw;
  return nv;
}

static void group_free(Group *g) {
  if (!g) return;
  g_free(g->port);
  g_free(g->flow);
  g_free(g->rank);
  g_free(g->arrived);
  g_free(g->red_free);
  g_free(g);
}

void fab_nvls_free(FabNvls *nv) {
  if (!nv) return;
  for (uint32_t i = 0; i < nv->ngroups; i++) group_free(group(nv, i));
  for (uint32_t k = 0; k < NCHUNKS && nv->chunk[k]; k++) g_free(nv->chunk[k]);
  g_free(nv);
}

void fab_nvls_set_reduce_rate(FabNvls *nv, uint64_t bps) {
  if (nv->reduce_bps != bps) nv->reduce_bps = bps; /* set once: a parallel run's switch may be reading it */
}

uint32_t fab_nvls_add(FabNvls *nv, FabNvlsMode mode, uint32_t n, const uint32_t *port, const uint32_t *flow,
                      const uint32_t *rank, uint32_t npkts) {
  g_assert(n >= 1 && n <= UINT16_MAX);
  Group *g = g_new0(Group, 1);
  g->mode = mode;
  g->n = n;
  g->npkts = npkts;
  g->port = g_memdup2(port, n * sizeof *port);
  g->flow = g_memdup2(flow, n * sizeof *flow);
  g->rank = g_memdup2(rank, n * sizeof *rank);
  if (mode != FAB_NVLS_AG) {
    g->arrived = g_new0(uint16_t, npkts ? npkts : 1);
    g->red_free = g_new0(fab_time_t, n);
  }
  uint32_t id = nv->ngroups;
  g_assert(id >> CHUNK_BITS < NCHUNKS);
  if (!nv->chunk[id >> CHUNK_BITS]) nv->chunk[id >> CHUNK_BITS] = g_new0(Group *, CHUNK);
  nv->chunk[id >> CHUNK_BITS][id & (CHUNK - 1)] = g;
  nv->ngroups++;
  return id;
}

void fab_nvls_leave(FabNvls *nv, uint32_t id) {
  Group *g = group(nv, id);
  g_assert(g && g->left < g->n);
  if (++g->left < g->n) return;
  group_free(g);
  nv->chunk[id >> CHUNK_BITS][id & (CHUNK - 1)] = NULL;
}

/* A packet of `type` for member m of g, leaving the switch at `ready`. */
static void emit(FabEngine *eng, FabNvls *nv, const Group *g, uint32_t m, uint8_t type, const FabPkt *like,
                 fab_time_t ready) {
  FabPkt *q = fab_pkt_alloc(eng);
  q->type = type;
  q->flow = g->flow[m];
  q->seq = like->seq;
  q->src = like->src;
  q->dst = g->rank[m];
  q->payload = like->payload;
  q->wire = like->wire;
  q->prio = like->prio;
  q->ready = ready;
  fab_port_enqueue(eng, fab_switch_port_at(nv->sw, g->port[m]), q);
}

void fab_nvls_receive(FabEngine *eng, FabNvls *nv, FabPkt *p, FabPort *in) {
  Group *g = group(nv, p->dst); /* made before its members' packets left: never past ngroups here */
  fab_port_return_credit(eng, in->peer, p->prio, p->wire); /* absorbed */
  fab_time_t ready = eng->now + fab_switch_cfg(nv->sw)->latency;
  if (p->type == FAB_PKT_NVLS_MC) { /* a store: a copy to every member */
    nv->multicast++;
    for (uint32_t m = 0; m < g->n; m++) emit(eng, nv, g, m, FAB_PKT_NVLS_DOWN, p, ready);
  } else {
    g_assert(p->type == FAB_PKT_NVLS_UP && g->mode != FAB_NVLS_AG && p->seq < g->npkts);
    if (++g->arrived[p->seq] == g->n) { /* reduced: to its owner only */
      uint32_t o = p->seq % g->n;
      nv->reduced++;
      if (nv->reduce_bps) {
        fab_time_t at = MAX(ready, g->red_free[o]);
        g->red_free[o] = at + fab_time_ser(p->payload, nv->reduce_bps);
        ready = g->red_free[o];
      }
      emit(eng, nv, g, o, FAB_PKT_NVLS_RED, p, ready);
    }
  }
  fab_pkt_free(eng, p);
}

uint64_t fab_nvls_reduced(const FabNvls *nv) { return nv ? nv->reduced : 0; }
uint64_t fab_nvls_multicast(const FabNvls *nv) { return nv ? nv->multicast : 0; }

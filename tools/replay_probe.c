/* fabsim-replay --probe: point-to-point latency and bandwidth per message
** size and path class, measured as perftest and fabtests do, each
** measurement a small DAG run by the same passes as a workload. See
** replay.h. */
#include "replay.h"
#include <math.h>
#include <string.h>

const char *const fab_replay_class_names[FAB_REPLAY_CLASSES] = {"nvlink", "node", "net"};

FabReplayClass fab_replay_class(uint32_t e, uint32_t f, uint32_t gpus_per_node, uint32_t nvlink_domain) {
  if (gpus_per_node && nvlink_domain && e / nvlink_domain == f / nvlink_domain) return FAB_REPLAY_NVLINK;
  if (gpus_per_node && e / gpus_per_node == f / gpus_per_node) return FAB_REPLAY_NODE;
  return FAB_REPLAY_NET;
}

uint32_t fab_replay_probe_window(uint64_t bytes) {
  uint64_t w = bytes ? (256ull << 20) / bytes : 64;
  return (uint32_t)CLAMP(w, 2, 64);
}

FabDag *fab_replay_probe_dag(const uint32_t *eps, uint32_t neps, uint32_t a, uint32_t b, uint64_t bytes,
                             uint32_t rounds, uint32_t window) {
  FabDag *d = fab_dag_new();
  FabJobDef job = {"probe", "flows", neps, g_memdup2(eps, sizeof(uint32_t) * neps), 0, 0, 1};
  fab_dag_job(d, &job);
  for (uint32_t k = 0; k < neps; k++) fab_dag_mark(d, eps[k], FAB_MARK_JOIN, 0, -1, NULL, 0); /* a part for each */
  uint32_t prev = FAB_OP_NONE;
  for (uint32_t r = 0; r < 2 * rounds; r++) /* ping-pong: each way after the one before has arrived */
    prev = fab_dag_flow(d, r % 2 ? b : a, r % 2 ? a : b, bytes, 0, 0, -1, 0, 0, &prev, 1);
  uint32_t *win = g_new(uint32_t, window);
  for (uint32_t k = 0; k < window; k++) win[k] = fab_dag_flow(d, a, b, bytes, 0, 0, -1, 0, 0, &prev, 1);
  fab_dag_flow(d, b, a, 8, 0, 0, -1, 0, 0, win, window); /* the answer once all are in */
  g_free(win);
  for (uint32_t i = neps; i < fab_dag_len(d); i++) fab_dag_op(d, i)->lane = 1; /* one NIC, as one process's */
  return d;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

double fab_replay_median(double *v, uint32_t n) {
  qsort(v, n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void fab_replay_probe_read(const FabReplayTimes *t, uint32_t neps, uint32_t rounds, uint32_t window, uint64_t bytes,
                           double *latency_ns, double *gbps) {
  double *rtt = g_new(double, rounds);
  uint32_t f0 = neps; /* the first flow */
  for (uint32_t r = 0; r < rounds; r++) rtt[r] = t->ended[f0 + 2 * r + 1] - t->began[f0 + 2 * r];
  *latency_ns = fab_replay_median(rtt, rounds) / 2;
  g_free(rtt);
  uint32_t w0 = f0 + 2 * rounds, ack = w0 + window;
  double span = t->ended[ack] - t->began[w0];
  *gbps = span > 0 ? (double)bytes * window / span : NAN; /* bytes per ns = GB/s */
}

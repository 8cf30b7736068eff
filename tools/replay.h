/*
** fabsim-replay: a scenario's operation DAG run on real processes, one per
** rank, over a real transport (libfabric), so that what the hardware
** measures can be set beside what fabsim simulates.
**
** The DAG is the simulator's own (fab_scenario_load expands the workload:
** the same flows, pieces and dependencies). Each process plays one of the
** endpoints the DAG's ops touch (process k: the k-th of them, in endpoint
** order) and runs the ops it owns:
**
**   a FLOW     its sender posts the send when the ops it waits for are met;
**              its receiver has the receive posted from the start of a pass
**              and learns the flow is done when the data is in;
**   a MARK     (and a COMPUTE of zero length) is done at once on its rank.
**
** What an op waits for may be known only on another process (a flow is done
** where it was received; a send waits for the receiver to have taken an
** earlier piece: NCCL's slots). The process that learns of it tells the
** ones that wait, with a control message of 8 bytes: the plan below lists,
** per op, who must be told. The modelled costs of an op (`pre`, `post`,
** `dur`: NCCL's latencies, reductions) are not played: the hardware brings
** its own. A flow's `start` is kept (ps after the pass began).
**
** Every flow's bytes carry a pattern drawn from (op, pass): the receiver
** checks them after each pass, so a transport that loses, mixes or does not
** move data fails the run.
*/
#ifndef FAB_REPLAY_H
#define FAB_REPLAY_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include "workloads/dag.h"

#define FAB_REPLAY_NONE UINT32_MAX
#define FAB_REPLAY_SENT 0x80000000u /* in a wait or a notice: the flow has left its sender, not arrived */

/* What every process knows of the DAG, and what this one (`me`) must do. */
typedef struct FabReplayPlan {
  const FabDag *dag;
  uint32_t nops;
  uint32_t nprocs;     /* processes: the endpoints the ops touch */
  uint32_t me;         /* this process */
  uint32_t *ep_of;     /* process -> endpoint */
  uint32_t *actor;     /* op -> the process that runs it (a flow: its sender) */
  uint32_t *observer;  /* op -> the process that learns it is done (a flow: its receiver) */
  uint64_t *recv_off;  /* flow op -> offset of its bytes in its receiver's arena */
  uint64_t *send_off;  /* flow op -> offset in its sender's arena */
  uint64_t recv_bytes, send_bytes; /* this process's arenas */
  uint32_t *need;      /* op run here -> how many waits it has */
  uint32_t *wait_off;  /* op -> its waiters: wait_list[wait_off[op] .. wait_off[op + 1]) */
  uint32_t *wait_list; /* ops run here that wait for it (| FAB_REPLAY_SENT: for its send only) */
  uint32_t *tell_off;  /* op -> who to tell: tell_list[tell_off[op] .. tell_off[op + 1]) */
  uint32_t *tell_list; /* processes (| FAB_REPLAY_SENT: of its send only), for ops observed here */
  uint32_t mine;       /* ops run here */
  uint32_t recvs;      /* flows received here */
  uint32_t flows;      /* flows in the DAG */
} FabReplayPlan;

/* The plan of process `me` (every op of the DAG made: an unfolding one is
** made whole first). FALSE + *why (transfer full) when the DAG cannot be
** replayed: an NVLS op (multicast through an NVSwitch), a compute op that
** lasts (training), more than `max_ops` ops. */
gboolean fab_replay_plan(FabReplayPlan *p, FabDag *dag, uint32_t me, uint32_t max_ops, char **why);
void fab_replay_plan_clear(FabReplayPlan *p);

/* The pattern of flow `op` in pass `pass`: byte k of its payload. */
void fab_replay_fill(uint8_t *buf, uint64_t len, uint32_t op, uint32_t pass);
/* The first byte of buf that differs from the pattern, or len when none does. */
uint64_t fab_replay_check(const uint8_t *buf, uint64_t len, uint32_t op, uint32_t pass);

/* A transport (replay_ofi.c; raw verbs later). Every call returns 0, or
** -EAGAIN when the transport cannot take more now (the caller progresses and
** tries again), or another negative errno with *err set. */
typedef struct FabReplayDone {
  uint8_t kind; /* FAB_REPLAY_EV_* */
  uint32_t op;  /* SEND, RECV: the flow */
  uint64_t word;/* CTRL: what the notice said */
} FabReplayDone;
enum { FAB_REPLAY_EV_SEND = 1, FAB_REPLAY_EV_RECV, FAB_REPLAY_EV_CTRL };

typedef struct FabReplayNet {
  void *ctx;
  /* the data of flow op, pass, into the receiver's arena (a receive or an RMA write with immediate) */
  int (*send)(void *ctx, uint32_t op, uint32_t pass, uint32_t to, uint64_t soff, uint64_t len, uint64_t roff,
              char **err);
  int (*recv)(void *ctx, uint32_t op, uint32_t pass, uint32_t from, uint64_t roff, uint64_t len, char **err);
  int (*ctrl)(void *ctx, uint32_t to, uint64_t word, char **err);
  /* completions, at most max; the number, or a negative errno with *err (naming what failed) */
  int (*poll)(void *ctx, FabReplayDone *out, int max, char **err);
  uint8_t *send_arena, *recv_arena;
  bool corrupt; /* tests: a pass spoils one byte of this process's first flow after filling it */
} FabReplayNet;

/* What a pass measured: per op, when it began and was done (ns after the
** pass began on this process; 0 and unset where this process did not see
** it). */
typedef struct FabReplayTimes {
  double *began, *ended; /* nops each */
} FabReplayTimes;

/* Before pass `pass` (and before the barrier that starts it, so that its time is not in any process's clock):
** write each flow this process sends with its pattern (net->corrupt: one byte spoiled). */
void fab_replay_prepare(const FabReplayPlan *p, const FabReplayNet *net, uint32_t pass);

/* Run one pass of the plan over net (its send arena written by fab_replay_prepare). 0; or 1 with *err (transfer full): a
** transport error, a timeout (`timeout_s` without any completion: the error
** names the op waited for and the peer it waits on), a byte that differs.
** `stall` (tests): at its first flow, this process stops answering (1) or dies (2). */
int fab_replay_pass(const FabReplayPlan *p, const FabReplayNet *net, uint32_t pass, double timeout_s, int stall,
                    FabReplayTimes *t, char **err);

/* Every process, or none, goes on: each says whether it could (why == NULL), through the allgather; returns
** why, or (when this one could) which process could not `what`. */
typedef void (*FabReplayAllgather)(const void *mine, void *all, size_t len);
char *fab_replay_vote(const FabReplayPlan *p, FabReplayAllgather ag, char *why, const char *what);

/* libfabric (replay_ofi.c): open provider `prov` (NULL: the first that has
** what replay needs), arenas of the plan's sizes, `rma`: RMA writes with
** immediate data instead of tagged sends. The addresses are exchanged with
** `allgather` (every process's `len` bytes into out, process-major). */
FabReplayNet *fab_replay_ofi_open(const FabReplayPlan *p, const char *prov, bool rma, FabReplayAllgather ag,
                                  char **err);
void fab_replay_ofi_close(FabReplayNet *net);
/* The provider it opened ("tcp;ofi_rxm", "shm"). */
const char *fab_replay_ofi_provider(const FabReplayNet *net);

/* Probes (replay_probe.c): the class of path between two endpoints, by the scenario's nodes. */
typedef enum { FAB_REPLAY_NVLINK = 0, FAB_REPLAY_NODE, FAB_REPLAY_NET, FAB_REPLAY_CLASSES } FabReplayClass;
extern const char *const fab_replay_class_names[FAB_REPLAY_CLASSES];
FabReplayClass fab_replay_class(uint32_t e, uint32_t f, uint32_t gpus_per_node, uint32_t nvlink_domain);
/* The DAG of one probe of the path from endpoint a to b at `bytes`: a mark at each of eps (every process has a
** part); `rounds` round trips a -> b -> a, each way after the one before arrived (latency: half the median
** round trip, on a's clock); then `window` flows a -> b at once and an 8-byte answer b -> a after all of them
** (bandwidth: window x bytes over the time from the first post to the answer, on a's clock). Every flow takes
** the endpoints' first NIC (lane 1: where a GPU has several, fabsim would otherwise spread them by hash). */
FabDag *fab_replay_probe_dag(const uint32_t *eps, uint32_t neps, uint32_t a, uint32_t b, uint64_t bytes,
                             uint32_t rounds, uint32_t window);
/* The median of v[0..n) (n > 0; sorts v): the mean of the two middle values when n is even. */
double fab_replay_median(double *v, uint32_t n);
/* The window for a size: 256 MiB in flight at most, 2 to 64 transfers. */
uint32_t fab_replay_probe_window(uint64_t bytes);
/* What a pass of a probe DAG measured, from a's times: latency (ns), bandwidth (GB/s). */
void fab_replay_probe_read(const FabReplayTimes *t, uint32_t neps, uint32_t rounds, uint32_t window, uint64_t bytes,
                           double *latency_ns, double *gbps);

/* Raw ibverbs (replay_verbs.c, built when Meson finds libibverbs): RC queue pairs on device `dev` (NULL: the
** first), port `port`, GID index `gid_index` (RoCE). NULL + err, and *no_device when there is no RDMA device. */
FabReplayNet *fab_replay_verbs_open(const FabReplayPlan *p, const char *dev, uint32_t port, uint32_t gid_index,
                                    FabReplayAllgather ag, bool *no_device, char **err);
void fab_replay_verbs_close(FabReplayNet *net);
/* The device it opened ("mlx5_0"). */
const char *fab_replay_verbs_device(const FabReplayNet *net);

#endif

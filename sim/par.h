/*
** Parallel runs: conservative parallel discrete-event simulation (the
** YAWNS/window scheme of ROSS's conservative mode and of htsim's successors)
** over partitions of one simulation's elements.
**
** Each partition is an engine (its own queue, clock and event count) that
** runs the events of its elements only. An event scheduled for an element
** of another partition is kept in the scheduling engine's outbox and handed
** over at the end of the window. Windows are no longer than the lookahead:
** the smallest delay with which an element of one partition can schedule an
** event of another (in a fabric, the smallest latency of a link whose two
** ends are in different partitions). Window w runs every engine up to
** T + lookahead - 1 ps, T the earliest pending event of all; an event handed
** over lands at T + lookahead or later, so no engine ever receives one in
** its past (checked: a shorter delay ends the run with false).
**
** The order is the single engine's. engine.h's tie keys are made by the
** element that schedules, from its own id and counter, so they do not
** depend on which engine runs what; an engine pops its events in (time,
** tie) order, as the single engine pops them; a partition needs every event
** of a window before the window starts, which the lookahead guarantees. So
** every element handles the same events, in the same order, at the same
** times, with any partition: the results are identical (tests/test_par.c
** checks it on fabrics with PFC and InfiniBand credits across the cuts).
** That holds for models whose elements touch another element's state only
** by events, or only across a delay of at least the lookahead that the
** partition's cut respects. An event meant for another partition must be
** scheduled with fab_engine_part_at_tie or fab_engine_far_at (engine.h);
** before the run, fab_engine_at routes every event itself.
**
** The partitions run one after the other in each window, or each on a
** thread of its own (fab_par_set_threads): then the barrier at each
** window's end is the only synchronisation, and what the model shares
** across a cut must be touched by one side only within a window (a cut
** wire carries each packet as an event of its own, models/port.c; a NIC's
** flow is split into the sender's and the receiver's fields, models/nic.h).
** A window's outboxes are drained by their receiving partitions at the
** start of the next window (they are double-buffered: a partition writes
** one set while the others drain the other). Each engine has its own
** packet pool; a packet freed in another
** partition joins that one's pool (fab_pool_open), so only the sum of the
** pools' live counts means anything (fab_par_live). Between windows, one
** thread with every engine stopped calls the owner's hook: there the run
** driver does what it cannot do while partitions run (releasing flows,
** forgetting done operations, the watchdog's and the sampler's looks;
** tools/libfabsim/run_par.c). What the partitions share while they run
** (the workload's executor) they take under a FabLock.
**
** Over processes (fab_par_set_net): every process builds the whole model and
** runs one partition, its own; the others' engines stay idle. At each
** window's end the events for other partitions travel as messages (their
** targets by number, a carried pool object, a packet, by value: FabOps.
** carries), with the owner's own payload (what the others must hear of,
** tools/libfabsim/run_net.c); the next window starts at the earliest event
** of all processes. What a process schedules for another partition while
** no element of it runs (before the run, or from the owner's payload) is
** dropped: every process does the same, and the owner of that partition
** schedules its own.
*/
#ifndef FAB_PAR_H
#define FAB_PAR_H

#include <sched.h>
#include <glib.h>
#include <stdatomic.h>
#include "engine.h"

/* A lock for the little the threads of a run share (the workload's
** executor, tools/libfabsim/driver.c), held for a short while at a time:
** a thread that finds it taken polls it, and after a while (or at once,
** when the threads outnumber the processors: fab_par_lock_init) gives its
** processor away between polls. A sleeping lock (GMutex) put the waiter
** to sleep in the kernel on every collision, a third of a 256-GPU
** allreduce's time on two threads. */
typedef struct FabLock {
  atomic_bool held;
  uint32_t spin; /* polls before yielding */
} FabLock;

static inline void fab_lock(FabLock *l) {
  uint32_t n = 0;
  while (atomic_exchange_explicit(&l->held, true, memory_order_acquire))
    while (atomic_load_explicit(&l->held, memory_order_relaxed)) {
      if (n < l->spin) {
        n++;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      } else {
        sched_yield();
      }
    }
}

static inline void fab_unlock(FabLock *l) { atomic_store_explicit(&l->held, false, memory_order_release); }

typedef struct FabPar FabPar;

/* A parallel run of `n` partitions (1..255) whose engines have pools of
** `obj_size`-byte objects. part_of[id] is the partition of the element with
** stable id `id` (< nids; an element whose FabOps has `home` follows that
** element; FAB_PAR_ANY: one that runs wherever its events are sent, and
** guards its state itself, as the workload's executor, or has a copy in
** each partition, as fabric.failures: fab_par_push keeps its events in the
** engine that schedules them), and `lookahead`
** (> 0) the shortest delay of an event between partitions. part_of is
** copied. Transfer full. */
#define FAB_PAR_ANY 255
FabPar *fab_par_new(uint32_t n, uint64_t seed, size_t obj_size, const uint8_t *part_of, uint32_t nids,
                    fab_time_t lookahead);
void fab_par_free(FabPar *par);

/* Partition k's engine: models get it wherever they would get the run's
** engine. Before the run, any of them may schedule for any element. */
FabEngine *fab_par_engine(FabPar *par, uint32_t k);

/* Partitions. */
uint32_t fab_par_parts(const FabPar *par);

/* The partition an element runs in. */
uint32_t fab_par_part_of(const FabPar *par, const void *elem);

/* Called by one thread after each window (every engine stopped, every
** event handed over): `end` is the window's last picosecond. It may
** schedule events later than `end` for any element (fab_engine_at with no
** element running) and call fab_par_stop. */
typedef void (*FabParHook)(FabPar *par, fab_time_t end, void *ctx);
void fab_par_set_hook(FabPar *par, FabParHook hook, void *ctx);

/* Make a window end at t - 1 (t > 0; FAB_TIME_MAX: none), so that the
** hook sees every partition with all events before t run and none at t: an
** observer that looks at the whole fabric at t (a watchdog, a sampler)
** looks there, as an element whose events come first at their time (the
** smallest tie key) would in one engine. The run goes on to t even with no
** event left before it. Set it again from the hook for the next. */
void fab_par_sync_at(FabPar *par, fab_time_t t);

/* A lock for the run's threads (free), polling as long as its barrier does. */
void fab_par_lock_init(const FabPar *par, FabLock *l);

/* Run partition k on a thread of its own (k > 0; 0 on the caller's), or
** all on the caller's (the default). */
void fab_par_set_threads(FabPar *par, bool on);

/* A run over processes: the messages between them (an MPI transport:
** tools/libfabsim/mpi.c). Every process calls each function at the same
** point of the run. */
typedef struct FabParNet {
  uint32_t self;  /* this process's partition (its rank) */
  uint32_t n;     /* processes, = partitions */
  void *ctx;
  /* out[k] to process k (out[self] is empty), what each sent to this one into in[k] (emptied first) */
  void (*exchange)(void *ctx, GByteArray *const *out, GByteArray *const *in);
  /* every process's `mine` into all[k] (all[self] a copy; emptied first) */
  void (*allgather)(void *ctx, const GByteArray *mine, GByteArray *const *all);
  /* every process's `mine` into all[k] at the first process (emptied first); the others' `all` untouched */
  void (*gather)(void *ctx, const GByteArray *mine, GByteArray *const *all);
  /* v[i]: the smallest over the processes, i < n */
  void (*min)(void *ctx, uint64_t *v, uint32_t n);
} FabParNet;

/* How an event travels between processes: its target by number, and the
** pool object a FabOps.carries target gets as its arg, fixed up on the way
** out (`out`) and in (names that differ between the processes). */
typedef struct FabParCodec {
  uint32_t (*number)(void *ctx, const void *target);
  void *(*target)(void *ctx, uint32_t number);
  void (*fix)(void *ctx, const void *target, void *obj, bool out);
  /* the owner's payload: appended to what goes to every other process (pack), then handed back per sender in
  ** partition order, before that window's events are taken in (apply) */
  void (*pack)(void *ctx, GByteArray *out);
  void (*apply)(void *ctx, uint32_t from, const uint8_t *buf, size_t len);
  void *ctx;
} FabParCodec;

/* Run partition net->self only, the others in the other processes (both
** copied; n must be the run's partitions). */
void fab_par_set_net(FabPar *par, const FabParNet *net, const FabParCodec *codec);

/* End the run after the current window (an engine's fab_engine_stop does
** too). */
void fab_par_stop(FabPar *par);

/* Run windows until no event is left, the next is later than `until`, or a
** stop. false if an event reached a partition in its past (the lookahead
** was broken) or an engine's time went back. */
bool fab_par_run(FabPar *par, fab_time_t until);

/* Events of all partitions so far; windows run; events handed between
** partitions. Over processes: this process's. */
uint64_t fab_par_events(const FabPar *par);
/* The latest time an engine reached (the last event's), and the packets
** live in all the pools. */
fab_time_t fab_par_now(const FabPar *par);
size_t fab_par_live(const FabPar *par);
uint64_t fab_par_windows(const FabPar *par);
uint64_t fab_par_handed(const FabPar *par);

#endif

/*
** The run driver: it only wires. It builds the engine and the fabric
** (topologies/), makes the flow table from the workload's operation DAG,
** connects the executor (workloads/exec.h) to the NICs and GPUs (models/)
** through hooks, adds the queue sampler and the deadlock watchdog, numbers
** every element, runs the engine, checks the run's invariants, and collects
** the results (collect.h, results.h).
**
** Invariants checked after every run (a broken one fails the run): time
** never went back; no operation began before what it depends on was done;
** every packet and byte a NIC sent was received by a NIC, dropped by a
** switch, or was still in the fabric when stop_time cut the run; the packet
** pool is empty at the end; every completed flow received exactly its bytes.
*/
#ifndef FAB_DRIVER_H
#define FAB_DRIVER_H

#include <stdbool.h>
#include "partition.h"
#include "results.h"
#include "scenario.h"
#include "sim/par.h"

/* Options of one run. */
typedef struct FabRunOpts {
  bool progress;            /* report progress on stderr */
  int progress_fd;          /* > 0: progress records on this file descriptor, a line each: "PROGRESS sim_ms
                            ** flows_done flows_known events", at most every 0.5 s of wall time while it runs,
                            ** and a last one when it ends (flows_done = flows_known if all ended); 0 (options
                            ** zero-filled): none */
  bool sample_queues;       /* record the queue time series even without hdf5 */
  bool keep_flows;          /* every flow's record in res->flows, even when the DAG unfolds (else, for an
                            ** unfolding DAG without hdf5, only their summary: res->flow_fold) */
  uint32_t threads;         /* > 1: spread the run over this many partitions, a thread each, when the scenario
                            ** allows it (else one engine, and why on stderr); the results are the same */
  const FabParNet *net;     /* over more than one process (MPI: tools/mpi.c): a partition each, when the scenario
                            ** allows it (else the first runs it alone, and why on stderr); every process calls
                            ** fab_run, and the first gets the results (the others: res->elsewhere) */
} FabRunOpts;

/* Why `sc` cannot run over threads on cut `p` of `topo` (allocated), or
** NULL: the refusal above, a cut without lookahead, or an operation that a
** partition could make ready too late for another (an unfolding workload
** is checked on its first batch here, on the rest as it unfolds); `dp`
** counts the dependencies between ranks of the ops made so far
** (partition.h). */
char *fab_run_threads_check(const FabScenario *sc, FabTopology *topo, const FabPartition *p, FabPartDeps *dp);

/* Run `sc` and fill `res` (finalized; free it with fab_results_clear).
** Returns 0 if every flow completed and every invariant held, 1 otherwise
** (res->failure says why). */
int fab_run(const FabScenario *sc, const FabRunOpts *opts, FabResults *res);

#endif

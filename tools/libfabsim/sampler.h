/*
** The queue sampler: an element that wakes every `interval` from time 0 and
** records the egress queue depth of every switch port (and per priority),
** the rate each flow sends at (when there are few enough flows), and the
** wire bytes every link has sent so far. It stops when the workload is done.
** What it records becomes FabResults.queues (HDF5 /queues).
*/
#ifndef FAB_SAMPLER_H
#define FAB_SAMPLER_H

#include <stdbool.h>
#include "results.h"
#include "topologies/topology.h"

/* Per-flow rates are sampled (a dense samples x flows table) only up to
** this many flows: a training run's tens of thousands of flows over tens of
** thousands of samples would not fit. */
#define FAB_RATE_FLOWS 4096

typedef struct FabSampler FabSampler;

/* A sampler of topo's switch ports and links and of `nflows` flows, that
** stops when `finished(ctx)` says so. Transfer full. */
FabSampler *fab_sampler_new(FabTopology *topo, fab_time_t interval, uint32_t nprio, const FabFlow *flows,
                            uint32_t nflows, bool (*finished)(void *ctx), void *ctx);
void fab_sampler_free(FabSampler *s);

FabElem *fab_sampler_elem(FabSampler *s);

/* Schedule its first sample, at time 0. */
void fab_sampler_start(FabEngine *eng, FabSampler *s);

/* Move what it recorded into q (q->n_ports columns named from the ports).
** The sampler keeps nothing. */
void fab_sampler_take(FabSampler *s, FabQueueSeries *q);

/* The name of a port in outputs: "leaf3:p17". */
void fab_port_name(char buf[FAB_FIELD_NAME_LEN], const FabPort *pt);

#endif

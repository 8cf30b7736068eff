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
** stops when `finished(ctx)` says so. flow(ctx, i) is flow i (its number in
** the run), or NULL when it holds no slot (not posted yet, or released:
** either way not sending). Transfer full. */
FabSampler *fab_sampler_new(FabTopology *topo, fab_time_t interval, uint32_t nprio, uint32_t nflows,
                            const FabFlow *(*flow)(void *ctx, uint32_t i), bool (*finished)(void *ctx), void *ctx);
void fab_sampler_free(FabSampler *s);

FabElem *fab_sampler_elem(FabSampler *s);

/* Bound what the samples take to `bytes`: when they would take more, every
** other sample is dropped and the interval doubles (as often as needed), so
** a long run sampled finely keeps its whole span, coarser. */
void fab_sampler_set_max_bytes(FabSampler *s, uint64_t bytes);

/* About what one sample takes, bytes (an upper bound on the links). */
uint64_t fab_sampler_row_bytes(const FabSampler *s);

/* The interval the samples are at now (the one asked for, or a multiple of
** it after the bound above was reached). */
fab_time_t fab_sampler_interval(const FabSampler *s);

/* Schedule its first sample, at time 0. */
void fab_sampler_start(FabEngine *eng, FabSampler *s);

/* One sample at `now`, as its event takes it, without the event (a run
** over threads takes it between windows, sim/par.h): true while it goes on,
** with the time of the next in *next. A time off the grid (after the
** interval doubled) records nothing and moves onto it. */
bool fab_sampler_look(FabSampler *s, fab_time_t now, fab_time_t *next);

/* Move what it recorded into q (q->n_ports columns named from the ports).
** The sampler keeps nothing. */
void fab_sampler_take(FabSampler *s, FabQueueSeries *q);

/* A run over processes (tools/libfabsim/run_net.c): every process samples
** at the same times, but only the columns of what it ran are right. pack:
** the columns `owns` says are this process's (FAB_SAMPLE_PORT: a switch
** port's depth, FAB_SAMPLE_FLOW: flow i's rate, FAB_SAMPLE_LINK: a link's
** bytes; `pt` the port, NULL for a flow), every row; unpack: another
** process's into this sampler. */
enum { FAB_SAMPLE_PORT, FAB_SAMPLE_FLOW, FAB_SAMPLE_LINK };
typedef bool (*FabSampleOwns)(void *ctx, int kind, uint32_t col, const FabPort *pt);
void fab_sampler_pack(FabSampler *s, FabSampleOwns owns, void *ctx, GByteArray *out);
void fab_sampler_unpack(FabSampler *s, const uint8_t *buf, size_t len);

/* The name of a port in outputs: "leaf3:p17". */
void fab_port_name(char buf[FAB_FIELD_NAME_LEN], const FabPort *pt);

/* ---- layers: what a link joins, from the topology's elements ------------ */

/* The layer of a link (both of its directions have the same one):
**   FAB_LAYER_FABRIC  two network switches (leaf-spine, spine-core)
**   FAB_LAYER_NIC     a network switch and a NIC port (a host's NIC, or a
**                     GPU node's NIC port, which hangs off its PCIe element)
**   FAB_LAYER_PCIE    a GPU and its PCIe element (GPU nodes only)
**   FAB_LAYER_NVLINK  a GPU and its NVSwitch (GPU nodes only)
** It is decided by which elements the two ends belong to (the topology's
** network switches, NVSwitches and PCIe elements), never by names. */
typedef enum { FAB_LAYER_FABRIC, FAB_LAYER_NIC, FAB_LAYER_PCIE, FAB_LAYER_NVLINK, FAB_LAYER_N } FabLayer;

/* "fabric", "nic", "pcie", "nvlink" (HDF5 /links column `layer`). */
extern const char *const fab_layer_names[FAB_LAYER_N];

typedef struct FabLayers FabLayers;

/* What fab_layers_of needs to know of t's elements: a table of its switches'
** nodes (cost O(switches)). Transfer full; t must outlive it. */
FabLayers *fab_layers_new(const FabTopology *t);
void fab_layers_free(FabLayers *l);

/* The layer of the link leaving `pt` (a port of the topology the map was
** made from). O(1). */
FabLayer fab_layers_of(const FabLayers *l, const FabPort *pt);

/* The fast-forward (fastfwd.h) jumps from the sampler's pending look at
** `at` to `to`: the looks in between are rows of the queues as last
** sampled (a steady state's) and of the links' bytes on a line from the
** last row to what they count at `to` (the jump's added). Returns when the
** next look is due (>= to). */
fab_time_t fab_sampler_jump(FabSampler *s, fab_time_t at, fab_time_t to);

#endif

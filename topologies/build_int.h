/*
** Inside the topology builders (topology.h): what build.c (the networks)
** and gpu_nodes.c (the PCIe and NVLink edges of GPU nodes) share. Not for
** use outside topologies/.
*/
#ifndef FAB_BUILD_INT_H
#define FAB_BUILD_INT_H

#include "topology.h"

/* How a GPU node's GPUs share its NICs. */
typedef struct FabGpuLayout {
  uint32_t G, N;             /* GPUs and NICs per node */
  uint32_t gpg, npg;         /* GPUs and NICs per PCIe group */
  uint32_t groups;           /* PCIe groups per node */
} FabGpuLayout;

FabGpuLayout fab_topo__gpu_layout(const FabGpuSpec *g);

/* NVLink domains over `ranks` GPUs (the last one may be partial). */
uint32_t fab_topo__nvl_domains(uint32_t ranks, uint32_t domain);

/* The NVLink elements over `ranks` GPUs: an NVSwitch per domain, or in a
** mesh domain one element per GPU (gpu_nodes.c); and their ports. */
uint32_t fab_topo__nvl_switches(const FabGpuSpec *g, uint32_t ranks);
uint64_t fab_topo__nvl_ports(const FabGpuSpec *g, uint64_t ranks);

/* PCIe elements and NVSwitches, made before the network (their NIC ports
** are what the network attaches to). Adds them at t->switches[t->nswitches..]. */
void fab_topo__build_gpu_edges(FabTopology *t, const FabFabricCfg *cfg, const FabGpuLayout *l);

/* Re-key network switch sw's routes from NIC ports to GPU ranks (see
** gpu_nodes.c). `network` holds the nodes of the network switches. */
void fab_topo__rekey_routes(FabTopology *t, FabSwitch *sw, const FabGpuLayout *l, GHashTable *network);

#endif

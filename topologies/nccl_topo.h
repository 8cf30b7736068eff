/*
** A node's layout from an NCCL topology dump (cluster.node_topology).
**
** NCCL writes the system it detected to NCCL_TOPO_DUMP_FILE as XML (its
** src/graph/xml.cc): <system> holds <cpu> elements (vendor, arch), under
** them a tree of <pci> elements (busid, class, link_speed, link_width),
** GPUs as <pci><gpu sm=".."> with one <nvlink target count tclass> per
** peer, NICs as <pci><nic><net speed=".."> (Mb/s). fab_nccl_topo_read
** reads what fabsim's node model has room for: the GPUs (all of one
** compute capability), their NVLinks to NVSwitches (tclass 0x068000), the
** network ports and their rate, the PCIe rate between a GPU and the
** network (the slower of the GPU's and the NIC's links: GT/s x lanes,
** 128b/130b, as the presets count it) and the host CPU's vendor.
*/
#ifndef FAB_NCCL_TOPO_H
#define FAB_NCCL_TOPO_H

#include <glib.h>
#include <stdint.h>
#include "models/gpu.h"

typedef struct FabNcclTopo {
  uint32_t gpus;        /* <gpu> elements */
  uint32_t sm;          /* their compute capability x 10 (80, 90, 100) */
  FabGpuArch arch;      /* from sm */
  uint32_t nvlinks;     /* NVLinks per GPU to NVSwitches (0: none) */
  uint32_t nics;        /* <net> elements */
  uint64_t nic_bps;     /* their rate, bits/s */
  uint64_t pcie_bps;    /* GPU <-> NIC: the slower PCIe link on the way, bits/s per direction (0: not given) */
  int cpu;              /* FabCpu, or -1 when the dump does not say */
} FabNcclTopo;

/* Read the dump at `path`. FALSE + err ("path:line:col: message") when it
** is not well-formed XML, has no GPU, or holds what the node model cannot
** represent (GPUs of different compute capabilities or NVLink counts, GPUs
** linked to each other directly without NVSwitches, NICs of different
** rates, an sm with no architecture fabsim knows). */
gboolean fab_nccl_topo_read(const char *path, FabNcclTopo *out, GError **err);

#endif

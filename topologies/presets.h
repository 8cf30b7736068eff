/*
** Node presets: what a named server (cluster.node) holds. Every number has
** its public source noted next to it in presets.c; every field can be
** overridden in the scenario (cluster.gpus_per_node, cluster.nic.bandwidth,
** cluster.nvlink.bandwidth, ...).
**
** Rates are per direction. "host" is the plain network case: one NIC, no
** GPU, no NVLink.
*/
#ifndef FAB_PRESETS_H
#define FAB_PRESETS_H

#include <stdbool.h>
#include <stdint.h>
#include "models/gpu.h"
#include "sim/time.h"

typedef struct FabNodePreset {
  const char *name;          /* "dgx-h100" */
  const char *gpu;           /* "H100 SXM5", NULL for host */
  FabGpuArch arch;           /* the GPU generation (FAB_ARCH_NONE for host) */
  FabCpu cpu;                /* the host CPU, for NCCL's tuner (models/gpu.h) */
  uint32_t gpus_per_node;    /* 0: host (no GPU) */
  uint32_t nics_per_node;    /* scale-out NICs (network ports) per node */
  uint32_t nvlink_domain;    /* GPUs per NVLink/NVSwitch domain (a multiple of gpus_per_node), 0: none */
  uint64_t nic_bps;          /* per NIC, bits/s */
  uint32_t nvlink_links;     /* NVLinks per GPU */
  uint64_t nvlink_raw_bps;   /* per GPU per direction, the links' signalling rate (the datasheet's figure / 2), bits/s */
  uint64_t nvlink_bps;       /* per GPU per direction, the data rate NCCL achieves over the links (links x NCCL's
                             ** per-link figure: protocol overhead taken off), bits/s: what the model runs at */
  fab_time_t nvlink_latency; /* GPU to GPU through NVSwitch (or one mesh link), one way, ps */
  bool nvlink_mesh;          /* GPUs joined pairwise by direct links, no switch (AMD Infinity Fabric) */
  uint64_t pcie_bps;         /* GPU <-> NIC per direction (PCIe generation x lanes), bits/s */
  fab_time_t pcie_latency;   /* one PCIe traversal, ps */
  uint64_t host_bps;         /* host-staged path: bounce through host memory, bits/s per GPU */
  fab_time_t host_latency;   /* host-staged path: extra latency of the staging copy, ps */
  double gpu_flops;          /* dense BF16 peak, FLOP/s */
  uint64_t memory_bps;       /* GPU memory (HBM) bandwidth, bits/s */
  double gpu_efficiency;     /* achieved fraction of peak for training compute */
  const char *transport;     /* the scale-out transport the system uses ("rocev2", "infiniband", "srd") */
  const char *ofi_protocol;  /* EFA: aws-ofi-nccl's default protocol there ("rdma", "sendrecv"), NULL: not EFA */
  const char *ofi_platform;  /* EFA: the platform aws-ofi-nccl's tuner has regions for ("p5"), NULL: none */
  const char *sources;       /* where the numbers come from (short citations) */
} FabNodePreset;

/* What a GPU generation implies (NCCL's per-architecture facts, sources in
** presets.c). */
typedef struct FabArchFacts {
  uint32_t sm;               /* compute capability x 10: 80, 90, 100; 94 for AMD gfx942 (HIP's 9.4) (0: none) */
  bool nvls;                 /* the NVSwitch can reduce and multicast (NVLS) */
  double nvls_eff;           /* NVLS efficiency (0: no NVLS) */
  uint64_t nvlink_raw_link;  /* one NVLink's signalling rate per direction, bits/s (the presets' figures) */
  uint64_t nvlink_link;      /* one NVLink's data rate as NCCL counts it (topo.h SM*_NVLINK_BW), bits/s */
} FabArchFacts;

FabArchFacts fab_arch_facts(FabGpuArch arch);

/* The preset called `name`, or NULL. Transfer none. */
const FabNodePreset *fab_preset_find(const char *name);

/* All presets, NULL-terminated names in a stable order (for YAML enums). */
extern const char *const fab_preset_names[];

#endif

/* Node presets (cluster.node). See presets.h.
**
** Every number carries its public source in a comment beside it. Numbers
** that no public document gives (latencies of one NVSwitch or PCIe hop, the
** host-staged copy rate, the achieved fraction of peak FLOPS) are marked
** ASSUMPTION: they are planning figures chosen for fabsim, not measurements,
** and a scenario should override them when it has better data.
**
** Units: rates are bits/s per direction (1 GB/s = 8e9 bit/s, decimal, as the
** vendors use), times are picoseconds, FLOPS are dense (no 2:4 sparsity).
**
** Shared figures:
** - PCIe: 5.0 runs 32 GT/s per lane and 4.0 runs 16 GT/s, both with 128b/130b
**   encoding (PCI-SIG PCIe 5.0 / 4.0 base specifications). One direction of
**   an x16 link is rate x 16 x 128/130: Gen5 = 504.12 Gbit/s (63.0 GB/s),
**   Gen4 = 252.06 Gbit/s (31.5 GB/s). Packet (TLP/DLLP) overhead is not
**   taken off. The "128 GB/s" in NVIDIA's H100 datasheet is the Gen5 x16
**   figure counted in both directions.
** - nvlink_latency 500 ns, one way GPU -> NVSwitch -> GPU: ASSUMPTION. No
**   public per-hop NVSwitch latency was found; published GPU-to-GPU
**   latencies (e.g. Li et al., "Evaluating Modern GPU Interconnect", arXiv
**   1903.04611) are end-to-end cudaMemcpy times that include software
**   overhead, so they are not used. 500 ns is the example value of the scenario contract (README, "Scenario format").
**   The NVL72 domain uses the same figure: every GPU reaches every other
**   through one NVLink Switch hop (NVIDIA GB200 NVL72 product page: 9 switch
**   trays, every GPU linked to every switch chip).
** - pcie_latency 500 ns per traversal (GPU <-> PCIe switch <-> NIC):
**   ASSUMPTION, a planning figure for one PCIe switch hop plus the endpoints.
** - host-staged path (GPUDirect RDMA off): the GPU copies into host memory,
**   then the NIC reads it from there. host_bps 25 GB/s per GPU on PCIe Gen5
**   systems and 12.5 GB/s on the Gen4 p4d: ASSUMPTION (below one direction of
**   the x16 link because the copy crosses the root complex twice and the
**   GPUs of a socket share its memory bandwidth). host_latency 3 us extra:
**   ASSUMPTION (one staging copy and its synchronisation; 2-5 us range).
** - gpu_efficiency 0.55: ASSUMPTION, a typical planning MFU for large
**   transformer training, not a measurement of any system.
** - NVLink, per link and direction. Signalling (nvlink_raw_bps): NVLink3
**   (A100) and NVLink4 (H100, H200) 25 GB/s, NVLink5 (B200, GB200) 50 GB/s
**   (NVIDIA NVLink page: A100 "twelve third-generation NVLink links for
**   600 GB/s" in both directions; Blackwell "18 NVLink 100 GB/s
**   connections for a total bandwidth of 1.8 TB/s", both directions; H100
**   900 GB/s / 18 links / 2). Data rate (nvlink_bps, what the model runs
**   at): NCCL's own per-link figures, NVIDIA/nccl src/graph/topo.h (2.30.7)
**   SM80_NVLINK_BW 20.0, SM90_NVLINK_BW 20.6, SM100_NVLINK_BW 40.1 GB/s, the
**   protocol overhead taken off: "450GB/s is the line rate. With the
**   protocol overhead (~20%) NCCL can get an effective NVLink bandwidth of
**   370GB/s" (NCCL maintainer, NVIDIA/nccl-tests issue #212).
** - memory_bps: HBM bandwidth from the GPU datasheets (NVIDIA A100 40GB
**   1,555 GB/s and 80GB SXM 2,039 GB/s; H100 SXM5 3.35 TB/s; H200 4.8 TB/s;
**   DGX B200 datasheet 8 TB/s per GPU; GB200 8 TB/s per GPU).
*/
#include "topologies/presets.h"

#include <stddef.h>
#include <string.h>

#define GBIT 1000000000ULL               /* 1 Gbit/s */
#define GBYTE (8ULL * GBIT)              /* 1 GB/s in bit/s */
/* One direction of a PCIe x16 link at `gts` GT/s per lane, 128b/130b. */
#define PCIE_X16_BPS(gts) ((uint64_t)(gts) * GBIT * 16u * 128u / 130u)
#define PCIE_GEN5_X16 PCIE_X16_BPS(32)   /* 504123076923 bit/s = 63.0 GB/s */
#define PCIE_GEN4_X16 PCIE_X16_BPS(16)   /* 252061538461 bit/s = 31.5 GB/s */
/* PCIe 6.0: 64 GT/s per lane (PAM4) in 256-byte FLITs of which 8 B are CRC and 6 B FEC (PCI-SIG PCIe 6.0 base
** specification): one direction of x16 = 64 x 16 x 242/256 = 968 Gbit/s (121 GB/s). */
#define PCIE_GEN6_X16 (64ULL * GBIT * 16u * 242u / 256u)

#define NVL_RAW_LINK (25 * GBYTE)        /* NVLink3/4 signalling per link and direction */
#define NVL5_RAW_LINK (50 * GBYTE)       /* NVLink5 */
#define NVL_SM80_LINK (20 * GBYTE)       /* NCCL SM80_NVLINK_BW 20.0 GB/s */
#define NVL_SM90_LINK (206 * GBYTE / 10) /* NCCL SM90_NVLINK_BW 20.6 GB/s */
#define NVL_SM100_LINK (401 * GBYTE / 10)/* NCCL SM100_NVLINK_BW 40.1 GB/s */
#define TBYTE (1000 * GBYTE)
/* AMD Infinity Fabric (xGMI) on MI300X, per link and direction: 64 GB/s signalling (x16 at 32 Gb/s a lane; AMD
** ROCm blog "Understanding RCCL Bandwidth and xGMI Performance on MI300X", 2025-03-02: "GPU-GPU Unidirectional BW
** via xGMI Link 64 GB/s"), 48 GB/s of data as RCCL counts it (ROCm/rccl src/graph/topo.h GFX94X_XGMI_WIDTH 48.0;
** AMD in ROCm/rccl issue #1210: "After protocol and error correction overheads, the max theoretical
** per-direction bandwidth for gfx94 devices is 48GB/s"; the blog measures 45-48 GB/s a link). */
#define XGMI_RAW_LINK (64 * GBYTE)
#define XGMI_GFX94_LINK (48 * GBYTE)

#define NVLINK_LATENCY (500 * FAB_NS)    /* ASSUMPTION, see above */
#define PCIE_LATENCY (500 * FAB_NS)      /* ASSUMPTION, see above */
#define HOST_LATENCY (3 * FAB_US)        /* ASSUMPTION, see above */
#define GPU_EFFICIENCY 0.55              /* ASSUMPTION, see above */

static const FabNodePreset presets[] = {
    {
        /* The plain network case: one NIC per node, no GPU. nic_bps 0 means
        ** the NIC runs at the fabric's link rate. */
        .name = "host",
        .gpu = NULL,
        .arch = FAB_ARCH_NONE,
        .gpus_per_node = 0,
        .nics_per_node = 1,
        .nvlink_domain = 0,
        .nic_bps = 0,
        .nvlink_links = 0,
        .nvlink_raw_bps = 0,
        .nvlink_bps = 0,
        .nvlink_latency = 0,
        .pcie_bps = 0,
        .pcie_latency = 0,
        .host_bps = 0,
        .host_latency = 0,
        .gpu_flops = 0.0,
        .memory_bps = 0,
        .gpu_efficiency = 0.0,
        .transport = "rocev2",
        .sources = "fabsim default (one NIC, no GPU)",
    },
    {
        /* NVIDIA DGX H100. Sources: NVIDIA DGX H100 User Guide (hardware
        ** overview; "Network Modules": 8 ConnectX-7 behind 4 OSFP ports);
        ** NVIDIA DGX BasePOD reference architecture, "Core Components"
        ** (DGX H100: eight Hopper GPUs, four NVSwitch chips, four OSFP
        ** ports serving eight single-port ConnectX-7 VPI, up to 400 Gb/s
        ** InfiniBand/Ethernet, PCIe 5.0 CPUs); NVIDIA H100 Tensor Core GPU
        ** datasheet (SXM5: NVLink 900 GB/s, PCIe Gen5 128 GB/s, BF16
        ** 1,979 TFLOPS with sparsity). 4 NVSwitch chips (third-generation
        ** NVSwitch, NVLink4) form the one 8-GPU domain; fabsim models the
        ** domain as one non-blocking switch, so the chip count is not a
        ** field. The two extra dual-port ConnectX-7 (storage/in-band) are
        ** not modelled. */
        .name = "dgx-h100",
        .gpu = "H100 SXM5",
        .arch = FAB_ARCH_HOPPER,
        .cpu = FAB_CPU_INTEL,   /* 2x Intel Xeon Platinum 8480C (NVIDIA DGX H100 datasheet) */
        .gpus_per_node = 8,              /* DGX H100 User Guide: 8x H100 */
        .nics_per_node = 8,              /* BasePOD RA: 8 single-port ConnectX-7 for the compute fabric */
        .nvlink_domain = 8,              /* one node: 8 GPUs on 4 NVSwitch chips */
        .nic_bps = 400 * GBIT,           /* ConnectX-7: up to 400 Gb/s (NDR) */
        .nvlink_links = 18,              /* NVLink4: 18 links (H100 datasheet: 900 GB/s bidirectional) */
        .nvlink_raw_bps = 18 * NVL_RAW_LINK, /* 450 GB/s per direction */
        .nvlink_bps = 18 * NVL_SM90_LINK,    /* 370.8 GB/s of data (NCCL topo.h, see top) */
        .nvlink_latency = NVLINK_LATENCY,
        .pcie_bps = PCIE_GEN5_X16,       /* H100 SXM5 and ConnectX-7: PCIe Gen5 x16 (datasheet 128 GB/s = both directions) */
        .pcie_latency = PCIE_LATENCY,
        .host_bps = 25 * GBYTE,          /* ASSUMPTION, see top */
        .host_latency = HOST_LATENCY,
        .gpu_flops = 989.4e12,           /* H100 SXM5 dense BF16 989.4 TFLOPS (datasheet: 1,979 with sparsity, halved) */
        .memory_bps = 335 * TBYTE / 100, /* H100 SXM5 HBM3 3.35 TB/s (H100 datasheet) */
        .gpu_efficiency = GPU_EFFICIENCY,
        /* Informative only. ConnectX-7 in DGX runs InfiniBand by default
        ** (DGX user guides: "InfiniBand (default)"), and the DGX SuperPOD
        ** H100 reference architecture builds the compute fabric from
        ** Quantum-2 NDR InfiniBand. */
        .transport = "infiniband",
        .sources = "NVIDIA DGX H100 User Guide; DGX BasePOD RA; NVIDIA H100 datasheet; PCIe 5.0 x16",
    },
    {
        /* NVIDIA DGX B200. Sources: NVIDIA DGX B200 User Guide, "Introduction
        ** to NVIDIA DGX B200 Systems" (8x B200; 2x fifth-generation NVLink
        ** switches with 14.4 TB/s aggregate bandwidth; 4 OSFP ports for 8
        ** ConnectX-7 single-port cards, InfiniBand (default) up to 400 Gb/s;
        ** Intel Xeon 8570 PCIe Gen5 CPUs); NVIDIA HGX B200 specifications
        ** (FP16/BF16 Tensor Core 36 PFLOPS per 8 GPUs with sparsity, i.e.
        ** 2.25 PFLOPS dense per GPU). Note: 2 NVSwitch chips here, not 4. */
        .name = "dgx-b200",
        .gpu = "B200",
        .arch = FAB_ARCH_BLACKWELL,
        .cpu = FAB_CPU_INTEL,   /* 2x Intel Xeon Platinum 8570 (NVIDIA DGX B200 datasheet) */
        .gpus_per_node = 8,              /* DGX B200 User Guide: 8x B200 */
        .nics_per_node = 8,              /* DGX B200 User Guide: 8 ConnectX-7 single-port cards (2 BlueField-3 for storage not modelled) */
        .nvlink_domain = 8,              /* one node: 8 GPUs on 2 NVSwitch chips */
        .nic_bps = 400 * GBIT,           /* ConnectX-7: up to 400 Gb/s */
        .nvlink_links = 18,              /* NVLink5: 14.4 TB/s / 8 GPUs = 1.8 TB/s bidirectional (18 links x 50 GB/s x 2) */
        .nvlink_raw_bps = 18 * NVL5_RAW_LINK, /* 900 GB/s per direction */
        .nvlink_bps = 18 * NVL_SM100_LINK,    /* 721.8 GB/s of data (NCCL topo.h, see top) */
        .nvlink_latency = NVLINK_LATENCY,
        .pcie_bps = PCIE_GEN5_X16,       /* ConnectX-7 and the Xeon 8570 host are PCIe Gen5 x16 (the NIC bounds the GPU<->NIC path) */
        .pcie_latency = PCIE_LATENCY,
        .host_bps = 25 * GBYTE,          /* ASSUMPTION, see top */
        .host_latency = HOST_LATENCY,
        .gpu_flops = 2.25e15,            /* B200 (HGX/DGX, 1000 W) dense BF16 2.25 PFLOPS: HGX B200 36 PFLOPS sparse / 8 / 2 */
        .memory_bps = 8 * TBYTE,         /* B200 HBM3e 8 TB/s per GPU (DGX B200 datasheet) */
        .gpu_efficiency = GPU_EFFICIENCY,
        .transport = "infiniband",       /* informative: ConnectX-7 InfiniBand is the DGX default (User Guide) */
        .sources = "NVIDIA DGX B200 User Guide; NVIDIA HGX B200 specifications; PCIe 5.0 x16",
    },
    {
        /* NVIDIA GB200 NVL72. A node is one compute tray: 2 GB200 superchips
        ** = 2 Grace CPUs + 4 Blackwell GPUs; 18 trays share one NVLink domain
        ** of 72 GPUs through 9 NVLink Switch trays. Sources: NVIDIA GB200
        ** NVL72 product page (72 Blackwell GPUs and 36 Grace CPUs; 130 TB/s
        ** NVLink = 72 x 1.8 TB/s; FP16/BF16 Tensor Core 360 PFLOPS with
        ** sparsity, i.e. 180 PFLOPS dense per rack = 2.5 PFLOPS per GPU);
        ** NVIDIA DGX GB200 User Guide, "Hardware" (per rack: 18 1RU compute
        ** trays of 2 Grace + 4 Blackwell, 9 NVLink switch trays; per compute
        ** tray: cluster network 4x ConnectX-7 single-port 400G OSFP, 2x
        ** BlueField-3 for storage/management, not modelled; "Networking":
        ** 1.8 TB/s bidirectional per GPU with NVLink 5.0); NVIDIA DGX
        ** SuperPOD GB200 reference architecture (compute fabric: NDR 400
        ** Gb/s InfiniBand). */
        .name = "gb200-nvl72",
        .gpu = "B200 (GB200 superchip)",
        .arch = FAB_ARCH_BLACKWELL,
        .cpu = FAB_CPU_ARM,     /* NVIDIA Grace, Arm Neoverse V2 cores (NVIDIA GB200 NVL72 product page) */
        .gpus_per_node = 4,              /* one compute tray: 2 GB200 superchips x 2 GPUs */
        .nics_per_node = 4,              /* DGX GB200 User Guide: 4x ConnectX-7 single-port 400G per tray, one per GPU */
        .nvlink_domain = 72,             /* 18 trays x 4 GPUs in one NVLink domain (DGX GB200 User Guide; GB200 NVL72 page) */
        .nic_bps = 400 * GBIT,           /* NDR 400 Gb/s InfiniBand (DGX SuperPOD GB200 RA) */
        .nvlink_links = 18,              /* NVLink5: 1.8 TB/s bidirectional per GPU (130 TB/s / 72) */
        .nvlink_raw_bps = 18 * NVL5_RAW_LINK, /* 900 GB/s per direction */
        .nvlink_bps = 18 * NVL_SM100_LINK,    /* 721.8 GB/s of data (NCCL topo.h, see top) */
        .nvlink_latency = NVLINK_LATENCY,
        /* The GPU reaches Grace over NVLink-C2C (900 GB/s); the NIC hangs
        ** off PCIe, and ConnectX-7 is a PCIe Gen5 x16 device, so Gen5 x16
        ** bounds the GPU <-> NIC path. */
        .pcie_bps = PCIE_GEN5_X16,
        .pcie_latency = PCIE_LATENCY,
        .host_bps = 25 * GBYTE,          /* ASSUMPTION, see top (staging through Grace LPDDR5X; the NIC's PCIe Gen5 still bounds it) */
        .host_latency = HOST_LATENCY,
        .gpu_flops = 2.5e15,             /* GB200 (1200 W) dense BF16 2.5 PFLOPS: 360 PFLOPS sparse / 72 / 2 */
        .memory_bps = 8 * TBYTE,         /* GB200 HBM3e 8 TB/s per GPU (576 TB/s per NVL72 rack / 72) */
        .gpu_efficiency = GPU_EFFICIENCY,
        .transport = "infiniband",       /* informative: DGX SuperPOD GB200 RA uses NDR InfiniBand for compute */
        .sources = "NVIDIA DGX GB200 User Guide; NVIDIA GB200 NVL72 product page; DGX SuperPOD GB200 RA; PCIe 5.0 x16",
    },
    {
        /* Amazon EC2 p5.48xlarge. Sources: AWS EC2 P5 instance page (8x
        ** NVIDIA H100 80 GB; 900 GB/s NVSwitch GPU interconnect; 3,200 Gbps
        ** EFAv2 networking with GPUDirect RDMA); AWS EC2 User Guide,
        ** "Maximize network bandwidth on accelerated instances with EFA"
        ** (P5 supports up to 32 network cards and up to 3,200 Gbps); NVIDIA
        ** H100 datasheet for the GPU. */
        .name = "aws-p5",
        .gpu = "H100 SXM5",
        .arch = FAB_ARCH_HOPPER,
        .cpu = FAB_CPU_AMD,     /* 3rd-generation AMD EPYC (AWS EC2 P5 instance page) */
        .gpus_per_node = 8,              /* AWS P5 page: 8x H100 */
        .nics_per_node = 32,             /* AWS EC2 User Guide: 32 network cards (EFA) */
        .nvlink_domain = 8,              /* one instance: 8 GPUs on NVSwitch */
        .nic_bps = 100 * GBIT,           /* 3,200 Gbps / 32 network cards = 100 Gbps each */
        .nvlink_links = 18,              /* 900 GB/s NVSwitch (bidirectional, AWS P5 page) = 18 NVLink4 links */
        .nvlink_raw_bps = 18 * NVL_RAW_LINK, /* 450 GB/s per direction */
        .nvlink_bps = 18 * NVL_SM90_LINK,    /* 370.8 GB/s of data (NCCL topo.h, see top) */
        .nvlink_latency = NVLINK_LATENCY,
        .pcie_bps = PCIE_GEN5_X16,       /* H100 SXM5: PCIe Gen5 x16 (H100 datasheet) */
        .pcie_latency = PCIE_LATENCY,
        .host_bps = 25 * GBYTE,          /* ASSUMPTION, see top */
        .host_latency = HOST_LATENCY,
        .gpu_flops = 989.4e12,           /* H100 SXM5 dense BF16 (H100 datasheet, sparsity halved) */
        .memory_bps = 335 * TBYTE / 100, /* H100 SXM5 HBM3 3.35 TB/s (H100 datasheet) */
        .gpu_efficiency = GPU_EFFICIENCY,
        .transport = "srd",              /* EFA runs AWS Scalable Reliable Datagram */
        .ofi_protocol = "rdma",          /* aws-ofi-nccl src/platform-aws.cpp, platform_data_map: p5/p5e RDMA */
        .ofi_platform = "p5",            /* its tuner: p5.48xlarge/p5e.48xlarge (nccl_ofi_tuner_process_config.h) */
        .sources = "AWS EC2 P5 instance page; AWS EC2 User Guide (EFA, P5 network cards); NVIDIA H100 datasheet",
    },
    {
        /* Amazon EC2 p4d.24xlarge. Sources: AWS EC2 P4d instance page and
        ** the AWS blog "Amazon EC2 P4d instances deep dive" (8x NVIDIA A100
        ** 40 GB with NVSwitch; 400 Gbps EFA with GPUDirect RDMA); AWS EC2
        ** User Guide network cards table (p4d.24xlarge: 4 network cards);
        ** NVIDIA A100 datasheet (SXM4: NVLink 600 GB/s, PCIe Gen4, BF16
        ** 312 TFLOPS dense / 624 with sparsity). */
        .name = "aws-p4d",
        .gpu = "A100 SXM4 40GB",
        .arch = FAB_ARCH_AMPERE,
        .cpu = FAB_CPU_INTEL,   /* Intel Xeon Platinum 8275CL (AWS EC2 P4 instance page) */
        .gpus_per_node = 8,              /* AWS P4d page: 8x A100 40 GB */
        .nics_per_node = 4,              /* AWS EC2 User Guide: 4 network cards */
        .nvlink_domain = 8,              /* one instance: 8 GPUs on NVSwitch */
        .nic_bps = 100 * GBIT,           /* 400 Gbps EFA / 4 network cards = 100 Gbps each */
        .nvlink_links = 12,              /* NVLink3: 12 links (A100 datasheet: 600 GB/s bidirectional) */
        .nvlink_raw_bps = 12 * NVL_RAW_LINK, /* 300 GB/s per direction */
        .nvlink_bps = 12 * NVL_SM80_LINK,    /* 240 GB/s of data (NCCL topo.h, see top) */
        .nvlink_latency = NVLINK_LATENCY,
        .pcie_bps = PCIE_GEN4_X16,       /* A100 SXM4: PCIe Gen4 x16 = 31.5 GB/s per direction */
        .pcie_latency = PCIE_LATENCY,
        .host_bps = 25 * GBYTE / 2,      /* ASSUMPTION, see top (half the Gen5 figure: PCIe Gen4) */
        .host_latency = HOST_LATENCY,
        .gpu_flops = 312e12,             /* A100 dense BF16 312 TFLOPS (A100 datasheet) */
        .memory_bps = 1555 * GBYTE,      /* A100 40GB HBM2 1,555 GB/s (A100 datasheet) */
        .gpu_efficiency = GPU_EFFICIENCY,
        .transport = "srd",              /* EFA runs AWS Scalable Reliable Datagram */
        .ofi_protocol = "sendrecv",      /* aws-ofi-nccl src/platform-aws.cpp, platform_data_map: p4d SENDRECV */
        .sources = "AWS EC2 P4d instance page; AWS P4d deep-dive blog; NVIDIA A100 datasheet; PCIe 4.0 x16",
    },
    {
        /* NVIDIA DGX A100 (640 GB). Sources: NVIDIA DGX A100 datasheet and
        ** User Guide (8x A100 80 GB SXM4; 6 NVSwitch chips; 8 single-port
        ** ConnectX-6 VPI for the compute fabric, HDR 200 Gb/s InfiniBand; 2
        ** dual-port ConnectX-6 for storage, not modelled; AMD EPYC 7742 with
        ** PCIe Gen4); NVIDIA A100 datasheet (SXM4 80GB: NVLink 600 GB/s,
        ** HBM2e 2,039 GB/s, BF16 312 TFLOPS dense). */
        .name = "dgx-a100",
        .gpu = "A100 SXM4 80GB",
        .arch = FAB_ARCH_AMPERE,
        .cpu = FAB_CPU_AMD,     /* 2x AMD EPYC 7742 (NVIDIA DGX A100 datasheet) */
        .gpus_per_node = 8,              /* DGX A100 datasheet: 8x A100 80 GB */
        .nics_per_node = 8,              /* 8 single-port ConnectX-6 for the compute fabric */
        .nvlink_domain = 8,              /* one node: 8 GPUs on 6 NVSwitch chips */
        .nic_bps = 200 * GBIT,           /* ConnectX-6 HDR 200 Gb/s */
        .nvlink_links = 12,              /* NVLink3: 12 links (A100 datasheet: 600 GB/s bidirectional) */
        .nvlink_raw_bps = 12 * NVL_RAW_LINK, /* 300 GB/s per direction */
        .nvlink_bps = 12 * NVL_SM80_LINK,    /* 240 GB/s of data (NCCL topo.h, see top) */
        .nvlink_latency = NVLINK_LATENCY,
        .pcie_bps = PCIE_GEN4_X16,       /* A100 SXM4 and ConnectX-6: PCIe Gen4 x16 */
        .pcie_latency = PCIE_LATENCY,
        .host_bps = 25 * GBYTE / 2,      /* ASSUMPTION, see top (half the Gen5 figure: PCIe Gen4) */
        .host_latency = HOST_LATENCY,
        .gpu_flops = 312e12,             /* A100 dense BF16 312 TFLOPS (A100 datasheet) */
        .memory_bps = 2039 * GBYTE,      /* A100 80GB SXM HBM2e 2,039 GB/s (A100 datasheet) */
        .gpu_efficiency = GPU_EFFICIENCY,
        .transport = "infiniband",       /* informative: the DGX A100 compute fabric is HDR InfiniBand */
        .sources = "NVIDIA DGX A100 datasheet and User Guide; NVIDIA A100 datasheet; PCIe 4.0 x16",
    },
    {
        /* NVIDIA DGX H200. Sources: NVIDIA DGX H200 datasheet (8x H200
        ** 141 GB; 4 NVSwitch chips; 8 single-port ConnectX-7 VPI, 400 Gb/s
        ** InfiniBand/Ethernet, for the compute fabric; 2 dual-port
        ** ConnectX-7 for storage, not modelled; PCIe Gen5 CPUs); NVIDIA H200
        ** page (HBM3e 4.8 TB/s; NVLink 900 GB/s; BF16 1,979 TFLOPS with
        ** sparsity, the same compute as H100). */
        .name = "dgx-h200",
        .gpu = "H200 SXM 141GB",
        .arch = FAB_ARCH_HOPPER,
        .cpu = FAB_CPU_INTEL,   /* 2x Intel Xeon Platinum 8480C (NVIDIA DGX H200 datasheet) */
        .gpus_per_node = 8,              /* DGX H200 datasheet: 8x H200 */
        .nics_per_node = 8,              /* 8 single-port ConnectX-7 for the compute fabric */
        .nvlink_domain = 8,              /* one node: 8 GPUs on 4 NVSwitch chips */
        .nic_bps = 400 * GBIT,           /* ConnectX-7: up to 400 Gb/s */
        .nvlink_links = 18,              /* NVLink4: 18 links (H200 page: 900 GB/s bidirectional) */
        .nvlink_raw_bps = 18 * NVL_RAW_LINK, /* 450 GB/s per direction */
        .nvlink_bps = 18 * NVL_SM90_LINK,    /* 370.8 GB/s of data (NCCL topo.h, see top) */
        .nvlink_latency = NVLINK_LATENCY,
        .pcie_bps = PCIE_GEN5_X16,       /* H200 and ConnectX-7: PCIe Gen5 x16 */
        .pcie_latency = PCIE_LATENCY,
        .host_bps = 25 * GBYTE,          /* ASSUMPTION, see top */
        .host_latency = HOST_LATENCY,
        .gpu_flops = 989.4e12,           /* H200 dense BF16 989.4 TFLOPS (1,979 with sparsity, halved; as H100) */
        .memory_bps = 48 * TBYTE / 10,   /* H200 HBM3e 4.8 TB/s (H200 page) */
        .gpu_efficiency = GPU_EFFICIENCY,
        .transport = "infiniband",       /* informative: ConnectX-7 InfiniBand is the DGX default */
        .sources = "NVIDIA DGX H200 datasheet; NVIDIA H200 page; PCIe 5.0 x16",
    },
    {
        /* HGX H800 (8 GPUs), the H100 sold where export rules cap NVLink:
        ** the same Hopper GPU, compute and HBM3, with 8 NVLink4 links (400
        ** GB/s bidirectional) instead of 18 (NVIDIA H800 datasheet: NVLink
        ** 400 GB/s, PCIe Gen5 128 GB/s, BF16 1,979 TFLOPS with sparsity,
        ** 80 GB HBM3 at 3.35 TB/s; the figures are reproduced in public
        ** comparisons such as philisun.com "NVIDIA H800 vs H100"). DeepSeek
        ** trained V3 on such nodes: "8 GPUs connected by NVLink and NVSwitch
        ** within nodes", 8 x 400 Gb/s InfiniBand NICs (50 GB/s per GPU) and
        ** about 160 GB/s of NVLink per GPU (DeepSeek-V3 Technical Report,
        ** arXiv:2412.19437, sections 3.1 and 3.2.2), which NCCL's 8 x 20.6
        ** GB/s (164.8) matches. The host CPU: ASSUMPTION (Intel, as DGX
        ** H100; HGX boards ship in many vendors' servers). */
        .name = "hgx-h800",
        .gpu = "H800 SXM5",
        .arch = FAB_ARCH_HOPPER,
        .cpu = FAB_CPU_INTEL,            /* ASSUMPTION, see above */
        .gpus_per_node = 8,              /* HGX H800 8-GPU board (DeepSeek-V3 report: 8 GPUs per node) */
        .nics_per_node = 8,              /* DeepSeek-V3 report: one 400 Gb/s InfiniBand NIC per GPU */
        .nvlink_domain = 8,              /* one node: 8 GPUs on NVSwitch */
        .nic_bps = 400 * GBIT,           /* 400 Gb/s InfiniBand (DeepSeek-V3 report: 50 GB/s) */
        .nvlink_links = 8,               /* 400 GB/s bidirectional / (25 GB/s x 2) per NVLink4 link */
        .nvlink_raw_bps = 8 * NVL_RAW_LINK,  /* 200 GB/s per direction */
        .nvlink_bps = 8 * NVL_SM90_LINK,     /* 164.8 GB/s of data (NCCL topo.h, see top) */
        .nvlink_latency = NVLINK_LATENCY,
        .pcie_bps = PCIE_GEN5_X16,       /* H800 datasheet: PCIe Gen5 128 GB/s (both directions) */
        .pcie_latency = PCIE_LATENCY,
        .host_bps = 25 * GBYTE,          /* ASSUMPTION, see top */
        .host_latency = HOST_LATENCY,
        .gpu_flops = 989.4e12,           /* dense BF16 989.4 TFLOPS (1,979 with sparsity, halved; as H100) */
        .memory_bps = 335 * TBYTE / 100, /* HBM3 3.35 TB/s (as H100 SXM5) */
        .gpu_efficiency = GPU_EFFICIENCY,
        .transport = "infiniband",       /* informative: DeepSeek's H800 cluster runs InfiniBand */
        .sources = "NVIDIA H800 datasheet; DeepSeek-V3 Technical Report (arXiv:2412.19437) 3.1-3.2; PCIe 5.0 x16",
    },
    {
        /* HGX H20 (8 GPUs): a Hopper GPU with full NVLink4 (900 GB/s
        ** bidirectional, 18 links) and more memory bandwidth than H100
        ** (96 GB HBM3, 4.0 TB/s) but capped compute: FP16/BF16 148 TFLOPS
        ** dense (296 with sparsity). NVIDIA publishes no H20 datasheet on
        ** its site; these figures are from the spec sheet that SemiAnalysis
        ** published ("Nvidia's New China AI Chips Circumvent US
        ** Restrictions", 2023-11-09) and that public listings repeat (e.g.
        ** willitrunai.com/gpus/h20-96gb: 96 GB HBM3, 4,000 GB/s, 148
        ** TFLOPS FP16, NVLink 900 GB/s). NICs: ASSUMPTION, one 400 Gb/s
        ** ConnectX-7 per GPU as on the other HGX Hopper boards; host CPU:
        ** ASSUMPTION (Intel). */
        .name = "hgx-h20",
        .gpu = "H20",
        .arch = FAB_ARCH_HOPPER,
        .cpu = FAB_CPU_INTEL,            /* ASSUMPTION, see above */
        .gpus_per_node = 8,              /* HGX H20 8-GPU board */
        .nics_per_node = 8,              /* ASSUMPTION, see above */
        .nvlink_domain = 8,              /* one node: 8 GPUs on NVSwitch */
        .nic_bps = 400 * GBIT,           /* ASSUMPTION: ConnectX-7 400 Gb/s */
        .nvlink_links = 18,              /* NVLink4 900 GB/s bidirectional (SemiAnalysis spec sheet) */
        .nvlink_raw_bps = 18 * NVL_RAW_LINK, /* 450 GB/s per direction */
        .nvlink_bps = 18 * NVL_SM90_LINK,    /* 370.8 GB/s of data (NCCL topo.h, see top) */
        .nvlink_latency = NVLINK_LATENCY,
        .pcie_bps = PCIE_GEN5_X16,       /* PCIe Gen5 x16 (SemiAnalysis spec sheet) */
        .pcie_latency = PCIE_LATENCY,
        .host_bps = 25 * GBYTE,          /* ASSUMPTION, see top */
        .host_latency = HOST_LATENCY,
        .gpu_flops = 148e12,             /* dense FP16/BF16 148 TFLOPS (SemiAnalysis spec sheet) */
        .memory_bps = 4 * TBYTE,         /* HBM3 4.0 TB/s (SemiAnalysis spec sheet) */
        .gpu_efficiency = GPU_EFFICIENCY,
        .transport = "infiniband",       /* informative */
        .sources = "SemiAnalysis H20 spec sheet (2023-11-09), as public listings repeat it; PCIe 5.0 x16",
    },
    {
        /* NVIDIA GB300 NVL72 (Blackwell Ultra). As gb200-nvl72, a node is
        ** one compute tray of 2 Grace CPUs and 4 GPUs, 18 trays in one
        ** 72-GPU NVLink domain through 9 NVSwitch trays (130 TB/s). Sources:
        ** NVIDIA GB300 NVL72 product page (72 Blackwell Ultra GPUs, 36 Grace
        ** CPUs; NVLink 130 TB/s; FP16/BF16 Tensor Core 360 PFLOPS with
        ** sparsity, 180 dense per rack = 2.5 PFLOPS per GPU; HBM3e 576 TB/s
        ** = 8 TB/s per GPU; ConnectX-8 SuperNIC, 800 Gb/s per GPU); NVIDIA
        ** Enterprise Reference Architecture "NVL72 AI Factory", System
        ** Hardware & Components (per GB300 NVL compute tray: 4 Blackwell Ultra
        ** GPUs, 2 Grace CPUs, 2 mezzanine boards with 2 ConnectX-8 each: 4
        ** HCAs); NVIDIA ConnectX-8 SuperNIC datasheet (800 Gb/s, PCIe Gen6
        ** host interface). */
        .name = "gb300-nvl72",
        .gpu = "B300 (GB300 superchip)",
        .arch = FAB_ARCH_BLACKWELL,      /* Blackwell Ultra: NVLink5, NCCL's Blackwell tables */
        .cpu = FAB_CPU_ARM,              /* NVIDIA Grace (GB300 NVL72 product page) */
        .gpus_per_node = 4,              /* Enterprise RA: 4 Blackwell Ultra GPUs per compute tray */
        .nics_per_node = 4,              /* Enterprise RA: 4 ConnectX-8 HCAs per compute tray, one per GPU */
        .nvlink_domain = 72,             /* 18 trays x 4 GPUs, 9 NVSwitch trays (Enterprise RA) */
        .nic_bps = 800 * GBIT,           /* ConnectX-8 SuperNIC 800 Gb/s (GB300 NVL72 page, ConnectX-8 datasheet) */
        .nvlink_links = 18,              /* NVLink5: 130 TB/s / 72 = 1.8 TB/s bidirectional per GPU */
        .nvlink_raw_bps = 18 * NVL5_RAW_LINK, /* 900 GB/s per direction */
        .nvlink_bps = 18 * NVL_SM100_LINK,    /* 721.8 GB/s of data (NCCL topo.h, see top) */
        .nvlink_latency = NVLINK_LATENCY,
        .pcie_bps = PCIE_GEN6_X16,       /* ConnectX-8: PCIe Gen6 x16 host interface (ConnectX-8 datasheet) */
        .pcie_latency = PCIE_LATENCY,
        .host_bps = 25 * GBYTE,          /* ASSUMPTION, see top */
        .host_latency = HOST_LATENCY,
        .gpu_flops = 2.5e15,             /* dense BF16 2.5 PFLOPS: 360 PFLOPS sparse per rack / 72 / 2 */
        .memory_bps = 8 * TBYTE,         /* HBM3e 8 TB/s per GPU (576 TB/s per rack / 72) */
        .gpu_efficiency = GPU_EFFICIENCY,
        .transport = "infiniband",       /* informative: Quantum-X800 InfiniBand (or Spectrum-X Ethernet) */
        .sources = "NVIDIA GB300 NVL72 product page; NVIDIA Enterprise RA NVL72 AI Factory; ConnectX-8 SuperNIC "
                   "datasheet; PCIe 6.0",
    },
    {
        /* AMD Instinct MI300X platform: 8 MI300X OAMs on one board, each pair
        ** joined by its own Infinity Fabric link (7 per GPU), no switch.
        ** Sources: ROCm documentation, "AMD Instinct MI300 series
        ** microarchitecture" (ROCm/ROCm docs/conceptual/gpu-arch/mi300.md:
        ** "seven high-bandwidth, low-latency AMD Infinity Fabric links ... to
        ** form a fully connected 8-GPU system"; "attach to the host system via
        ** PCIe Gen 5 x16 links"; MI300X peak Matrix BF16 1307.4 TFLOPS dense;
        ** HBM3 "peak memory bandwidth of the GPU is 5.3 TB per second"); the
        ** xGMI rates above; ROCm/gpu-cluster-networking docs (hardware
        ** support: MI300X validated with 400 Gb/s NICs, Broadcom Thor2 and
        ** NVIDIA ConnectX-7; multi-node configuration: "servers typically
        ** have one NIC per GPU"). The host CPU differs by vendor (AMD EPYC on
        ** most, Intel Sapphire Rapids on OCI's): AMD is an ASSUMPTION. */
        .name = "amd-mi300x",
        .gpu = "AMD Instinct MI300X (OAM)",
        .arch = FAB_ARCH_CDNA3,          /* gfx942: RCCL, its tuning model 5 (workloads/tuner_rccl.c) */
        .cpu = FAB_CPU_AMD,              /* ASSUMPTION, see above */
        .gpus_per_node = 8,              /* "fully connected 8-GPU system" (mi300.md) */
        .nics_per_node = 8,              /* one NIC per GPU (ROCm gpu-cluster-networking) */
        .nvlink_domain = 8,              /* the node's Infinity Fabric mesh */
        .nvlink_mesh = true,             /* a link per GPU pair, no switch (mi300.md) */
        .nic_bps = 400 * GBIT,           /* 400 Gb/s Thor2 or ConnectX-7 (ROCm gpu-cluster-networking) */
        .nvlink_links = 7,               /* Infinity Fabric links per GPU (mi300.md) */
        .nvlink_raw_bps = 7 * XGMI_RAW_LINK,   /* 448 GB/s per direction (the ROCm blog's 7 x 64) */
        .nvlink_bps = 7 * XGMI_GFX94_LINK,     /* 336 GB/s of data: RCCL's 48 GB/s a link (see top) */
        .nvlink_latency = NVLINK_LATENCY, /* ASSUMPTION: no public per-hop xGMI latency; the NVLink figure */
        .pcie_bps = PCIE_GEN5_X16,       /* PCIe Gen 5 x16 (mi300.md) */
        .pcie_latency = PCIE_LATENCY,
        .host_bps = 25 * GBYTE,          /* ASSUMPTION, see top */
        .host_latency = HOST_LATENCY,
        .gpu_flops = 1307.4e12,          /* Matrix BF16 1307.4 TFLOPS, dense (mi300.md) */
        .memory_bps = 53 * TBYTE / 10,   /* HBM3 5.3 TB/s (mi300.md) */
        .gpu_efficiency = GPU_EFFICIENCY,
        .transport = "rocev2",           /* informative: Ethernet RoCE NICs (Thor2) are the common build */
        .sources = "ROCm docs: MI300 microarchitecture (mi300.md), gpu-cluster-networking; AMD ROCm blog MI300X "
                   "RCCL/xGMI (2025-03-02); ROCm/rccl topo.h, issue #1210",
    },
};

const char *const fab_preset_names[] = {
    "host", "dgx-h100", "dgx-b200", "gb200-nvl72", "aws-p5", "aws-p4d", "dgx-a100", "dgx-h200", "hgx-h800",
    "hgx-h20", "gb300-nvl72", "amd-mi300x", NULL,
};

/* sm: NVIDIA's compute capability of each generation (A100 8.0, H100/H200
** 9.0, B200/GB200 10.0; CUDA C Programming Guide, compute capabilities).
** NVLS: NCCL builds no NVLS graph unless an NVSwitch is present and the
** compute capability is at least 9.0 (NVIDIA/nccl src/graph/search.cc,
** 2.30.7: "if (pattern == NVLS && (nodes[NVS].count == 0 || ccMin < 90))
** return"). NVLS efficiency, the share of an NVLink byte that multimem
** (NVLS) traffic fills with data: 1 where there is NVLS (0: none). NCCL's
** nvlsEfficiency (src/graph/tuning.cc, 2.28 and later: 0.85 Hopper, 0.74
** Blackwell) prices NVLS's loops and their per-step costs together; the
** tuner keeps it (tuner.c), the simulation runs the loops and pays each step
** (cluster.nccl.nvls_step) instead. */
FabArchFacts fab_arch_facts(FabGpuArch arch) {
  switch (arch) {
  case FAB_ARCH_AMPERE: return (FabArchFacts){80, false, 0.0, NVL_RAW_LINK, NVL_SM80_LINK};
  case FAB_ARCH_HOPPER: return (FabArchFacts){90, true, 1.0, NVL_RAW_LINK, NVL_SM90_LINK};
  case FAB_ARCH_BLACKWELL: return (FabArchFacts){100, true, 1.0, NVL5_RAW_LINK, NVL_SM100_LINK};
  /* gfx942: HIP reports compute capability 9.4; RCCL keys its per-architecture rows on it (compCapIndex: >= 90,
  ** Hopper's) and its tuning model on the topology (rome_models.cc: the 8-GPU MI300X node, tuning=5) */
  case FAB_ARCH_CDNA3: return (FabArchFacts){94, false, 0.0, XGMI_RAW_LINK, XGMI_GFX94_LINK};
  default: return (FabArchFacts){0, false, 0.0, 0, 0};
  }
}

const FabNodePreset *fab_preset_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    if (strcmp(presets[i].name, name) == 0) return &presets[i];
  return NULL;
}

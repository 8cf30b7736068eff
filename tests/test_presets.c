/*
** Node presets (topologies/presets.h): every listed name loads, names are
** unique, and the derived numbers match the public sources documented in
** topologies/presets.c.
*/
#include <criterion/criterion.h>
#include <string.h>

#include "topologies/presets.h"

#define GBIT 1000000000ULL
#define GBYTE (8ULL * GBIT)
#define TBYTE (1000ULL * GBYTE)

static const FabNodePreset *get(const char *name) {
  const FabNodePreset *p = fab_preset_find(name);
  cr_assert_not_null(p, "preset %s not found", name);
  cr_assert_str_eq(p->name, name);
  return p;
}

Test(presets, names_in_order_and_all_found) {
  const char *want[] = {"host",     "dgx-h100", "dgx-b200", "gb200-nvl72", "aws-p5",
                        "aws-p4d",  "dgx-a100", "dgx-h200", "hgx-h800",    "hgx-h20", "gb300-nvl72", "amd-mi300x"};
  size_t n = 0;
  while (fab_preset_names[n]) n++;
  cr_assert_eq(n, sizeof want / sizeof want[0], "%zu preset names", n);
  for (size_t i = 0; i < n; i++) {
    cr_assert_str_eq(fab_preset_names[i], want[i]);
    get(fab_preset_names[i]);
  }
}

Test(presets, names_unique) {
  for (size_t i = 0; fab_preset_names[i]; i++)
    for (size_t j = i + 1; fab_preset_names[j]; j++)
      cr_assert_str_neq(fab_preset_names[i], fab_preset_names[j]);
}

Test(presets, unknown_is_null) {
  cr_assert_null(fab_preset_find("nope"));
  cr_assert_null(fab_preset_find(""));
  cr_assert_null(fab_preset_find("DGX-H100"));
  cr_assert_null(fab_preset_find(NULL));
}

Test(presets, host_has_no_gpu) {
  const FabNodePreset *p = get("host");
  cr_assert_null(p->gpu);
  cr_assert_eq(p->gpus_per_node, 0);
  cr_assert_eq(p->nics_per_node, 1);
  cr_assert_eq(p->nvlink_domain, 0);
  cr_assert_eq(p->nic_bps, 0); /* 0: the fabric's link rate */
  cr_assert_eq(p->nvlink_bps, 0);
  cr_assert_eq(p->nvlink_raw_bps, 0);
  cr_assert_eq(p->arch, FAB_ARCH_NONE);
  cr_assert_eq(p->memory_bps, 0);
  cr_assert_eq(p->pcie_bps, 0);
  cr_assert_eq(p->host_bps, 0);
  cr_assert_eq(p->gpu_flops, 0.0);
  cr_assert_str_eq(p->transport, "rocev2");
  cr_assert(p->sources && p->sources[0]);
}

Test(presets, every_gpu_preset_is_consistent) {
  for (size_t i = 0; fab_preset_names[i]; i++) {
    const FabNodePreset *p = get(fab_preset_names[i]);
    if (strcmp(p->name, "host") == 0) continue;
    cr_assert_not_null(p->gpu, "%s", p->name);
    cr_assert_gt(p->gpus_per_node, 0, "%s", p->name);
    cr_assert_gt(p->nics_per_node, 0, "%s", p->name);
    cr_assert_gt(p->nvlink_domain, 0, "%s", p->name);
    cr_assert_eq(p->nvlink_domain % p->gpus_per_node, 0, "%s: domain %u, %u GPUs per node", p->name,
                 p->nvlink_domain, p->gpus_per_node);
    cr_assert_gt(p->nic_bps, 0, "%s", p->name);
    cr_assert_gt(p->nvlink_bps, 0, "%s", p->name);
    cr_assert_neq(p->arch, FAB_ARCH_NONE, "%s", p->name);
    cr_assert_gt(p->memory_bps, 0, "%s", p->name);
    /* the data rate is NCCL's per-link figure: 80-83 % of the signalling rate (protocol overhead) */
    cr_assert_gt(p->nvlink_links, 0, "%s", p->name);
    double eff = (double)p->nvlink_bps / (double)p->nvlink_raw_bps;
    if (p->arch == FAB_ARCH_CDNA3) /* xGMI: CRC and protocol leave 48 of 64 GB/s (RCCL, AMD) */
      cr_assert(eff > 0.74 && eff < 0.76, "%s: xGMI data / signalling = %.3f", p->name, eff);
    else
      cr_assert(eff > 0.79 && eff < 0.83, "%s: NVLink data / signalling = %.3f", p->name, eff);
    cr_assert(!p->nvlink_mesh || p->nvlink_domain == p->gpus_per_node, "%s: a mesh is one node", p->name);
    cr_assert_gt(p->nvlink_latency, 0, "%s", p->name);
    cr_assert_gt(p->pcie_bps, 0, "%s", p->name);
    cr_assert_gt(p->pcie_latency, 0, "%s", p->name);
    cr_assert_gt(p->host_bps, 0, "%s", p->name);
    cr_assert_leq(p->host_bps, p->pcie_bps, "%s: host-staged faster than PCIe", p->name);
    cr_assert_gt(p->host_latency, 0, "%s", p->name);
    cr_assert_gt(p->gpu_flops, 0.0, "%s", p->name);
    cr_assert(p->gpu_efficiency > 0.0 && p->gpu_efficiency <= 1.0, "%s", p->name);
    cr_assert(p->transport && p->transport[0], "%s", p->name);
    cr_assert(p->sources && p->sources[0], "%s", p->name);
  }
}

Test(presets, dgx_h100) {
  const FabNodePreset *p = get("dgx-h100");
  cr_assert_eq(p->gpus_per_node, 8);
  cr_assert_eq(p->nics_per_node, 8);
  cr_assert_eq(p->nvlink_domain, 8);
  cr_assert_eq(p->nic_bps, 400 * GBIT);
  /* NVLink4: 18 links x 25 GB/s per direction = 450 GB/s = 3.6 Tbit/s signalling; data: 18 x NCCL's
  ** SM90_NVLINK_BW 20.6 GB/s = 370.8 GB/s */
  cr_assert_eq(p->arch, FAB_ARCH_HOPPER);
  cr_assert_eq(p->nvlink_raw_bps, 3600000000000ULL);
  cr_assert_eq(p->nvlink_bps, 18ULL * 206 * GBYTE / 10);
  cr_assert_eq(p->nvlink_bps, 2966400000000ULL);
  cr_assert_eq(p->memory_bps, 3350ULL * GBYTE); /* HBM3 3.35 TB/s */
  /* PCIe 5.0 x16: 32 GT/s x 16 lanes x 128/130, one direction (~63.0 GB/s) */
  cr_assert_eq(p->pcie_bps, 32ULL * GBIT * 16 * 128 / 130);
  cr_assert(p->pcie_bps > 63 * GBYTE - GBYTE / 10 && p->pcie_bps < 63 * GBYTE + GBYTE / 10);
  cr_assert_float_eq(p->gpu_flops, 989.4e12, 1e9);
}

Test(presets, dgx_b200_doubles_h100_nvlink) {
  const FabNodePreset *h = get("dgx-h100"), *b = get("dgx-b200");
  cr_assert_eq(b->nvlink_raw_bps, 2 * h->nvlink_raw_bps);
  /* 14.4 TB/s aggregate over 8 GPUs = 1.8 TB/s bidirectional = 900 GB/s per direction */
  cr_assert_eq(b->nvlink_raw_bps * 2 * b->gpus_per_node, 14400ULL * GBYTE);
  /* data: 18 x SM100_NVLINK_BW 40.1 GB/s = 721.8 GB/s */
  cr_assert_eq(b->nvlink_bps, 7218ULL * GBYTE / 10);
  cr_assert_eq(b->arch, FAB_ARCH_BLACKWELL);
  cr_assert_eq(b->memory_bps, 8000ULL * GBYTE);
  cr_assert_eq(b->nics_per_node, 8);
  cr_assert_eq(b->nic_bps, 400 * GBIT);
  cr_assert_eq(b->nvlink_domain, 8);
  cr_assert_float_eq(b->gpu_flops, 2.25e15, 1e9);
}

Test(presets, gb200_nvl72_domain_spans_trays) {
  const FabNodePreset *p = get("gb200-nvl72");
  cr_assert_eq(p->gpus_per_node, 4); /* one compute tray */
  cr_assert_eq(p->nvlink_domain, 72);
  cr_assert_eq(p->nvlink_domain, 18 * p->gpus_per_node); /* 18 trays */
  /* 1.8 TB/s bidirectional per GPU; 72 x 1.8 TB/s = 129.6 TB/s ("130 TB/s") */
  cr_assert_eq(2 * p->nvlink_raw_bps, 1800 * GBYTE);
  cr_assert_eq(p->arch, FAB_ARCH_BLACKWELL);
  cr_assert_eq(p->nics_per_node, 4);
  cr_assert_eq(p->nic_bps, 400 * GBIT);
  /* 180 PFLOPS dense BF16 per rack / 72 GPUs */
  cr_assert_float_eq(p->gpu_flops * p->nvlink_domain, 180e15, 1e12);
}

Test(presets, gb300_nvl72_as_gb200_with_800g_nics) {
  const FabNodePreset *p = get("gb300-nvl72"), *q = get("gb200-nvl72");
  cr_assert_eq(p->gpus_per_node, 4);
  cr_assert_eq(p->nvlink_domain, 72);
  cr_assert_eq(p->nvlink_bps, q->nvlink_bps); /* NVLink5 as GB200: 130 TB/s per rack */
  cr_assert_eq(2 * p->nvlink_raw_bps * 72, 129600 * GBYTE);
  cr_assert_eq(p->arch, FAB_ARCH_BLACKWELL);
  cr_assert_eq(p->cpu, FAB_CPU_ARM);
  cr_assert_eq(p->nics_per_node, 4);
  cr_assert_eq(p->nic_bps, 800 * GBIT);          /* ConnectX-8 */
  cr_assert_eq(p->pcie_bps, 968 * GBIT);         /* PCIe 6.0 x16: 64 GT/s x 16 x 242/256 */
  cr_assert_gt(p->pcie_bps, p->nic_bps, "the NIC, not PCIe, bounds the network path");
  cr_assert_float_eq(p->gpu_flops * 72, 180e15, 1e12);
  cr_assert_eq(p->memory_bps * 72, 576 * TBYTE);
}

Test(presets, amd_mi300x_is_a_mesh_of_eight) {
  const FabNodePreset *p = get("amd-mi300x");
  cr_assert_eq(p->arch, FAB_ARCH_CDNA3);
  cr_assert(p->nvlink_mesh);
  cr_assert_eq(p->gpus_per_node, 8);
  cr_assert_eq(p->nvlink_domain, 8);
  cr_assert_eq(p->nvlink_links, 7); /* a link to each of the 7 others */
  cr_assert_eq(p->nvlink_raw_bps, 448 * GBYTE); /* 7 x 64 GB/s per direction */
  cr_assert_eq(p->nvlink_bps, 336 * GBYTE);     /* 7 x RCCL's 48 GB/s */
  cr_assert_eq(p->nvlink_bps / (p->nvlink_domain - 1), 48 * GBYTE);
  cr_assert_eq(p->nics_per_node, 8);
  cr_assert_eq(p->nic_bps, 400 * GBIT);
  cr_assert_eq(p->pcie_bps, 32ULL * GBIT * 16 * 128 / 130);
  cr_assert_float_eq(p->gpu_flops, 1307.4e12, 1e9);
  cr_assert_eq(p->memory_bps, 5300ULL * GBYTE);
  FabArchFacts a = fab_arch_facts(p->arch);
  cr_assert_eq(a.sm, 94);
  cr_assert_not(a.nvls);
  cr_assert_eq(a.nvlink_link, 48 * GBYTE);
}

Test(presets, aws_p5) {
  const FabNodePreset *p = get("aws-p5");
  cr_assert_eq(p->gpus_per_node, 8);
  cr_assert_eq(p->nics_per_node, 32);
  cr_assert_eq(p->nics_per_node * p->nic_bps, 3200 * GBIT);
  cr_assert_eq(2 * p->nvlink_raw_bps, 900 * GBYTE);
  cr_assert_eq(p->arch, FAB_ARCH_HOPPER);
  cr_assert_eq(p->nvlink_domain, 8);
  cr_assert_str_eq(p->transport, "srd");
}

Test(presets, aws_p4d) {
  const FabNodePreset *p = get("aws-p4d");
  cr_assert_eq(p->gpus_per_node, 8);
  cr_assert_eq(p->nics_per_node, 4);
  cr_assert_eq(p->nics_per_node * p->nic_bps, 400 * GBIT);
  cr_assert_eq(p->nvlink_raw_bps, 600 * GBYTE / 2);
  cr_assert_eq(p->nvlink_bps, 12 * 20 * GBYTE); /* SM80_NVLINK_BW 20.0 GB/s per link */
  cr_assert_eq(p->arch, FAB_ARCH_AMPERE);
  cr_assert_eq(p->memory_bps, 1555 * GBYTE);
  /* PCIe 4.0 x16: 16 GT/s x 16 x 128/130, one direction (~31.5 GB/s) */
  cr_assert_eq(p->pcie_bps, 16ULL * GBIT * 16 * 128 / 130);
  cr_assert_float_eq(p->gpu_flops, 312e12, 1e9);
  cr_assert_eq(p->nvlink_domain, 8);
  cr_assert_str_eq(p->transport, "srd");
}

Test(presets, dgx_a100) {
  const FabNodePreset *p = get("dgx-a100");
  cr_assert_eq(p->arch, FAB_ARCH_AMPERE);
  cr_assert_eq(p->gpus_per_node, 8);
  cr_assert_eq(p->nics_per_node, 8);
  cr_assert_eq(p->nic_bps, 200 * GBIT); /* ConnectX-6 HDR */
  cr_assert_eq(p->nvlink_links, 12);
  cr_assert_eq(p->nvlink_bps, 240 * GBYTE);
  cr_assert_eq(p->pcie_bps, 16ULL * GBIT * 16 * 128 / 130);
  cr_assert_eq(p->memory_bps, 2039 * GBYTE);
  cr_assert_float_eq(p->gpu_flops, 312e12, 1e9);
}

Test(presets, dgx_h200_is_an_h100_with_faster_memory) {
  const FabNodePreset *h = get("dgx-h100"), *p = get("dgx-h200");
  cr_assert_eq(p->arch, FAB_ARCH_HOPPER);
  cr_assert_eq(p->nvlink_bps, h->nvlink_bps);
  cr_assert_eq(p->nic_bps, h->nic_bps);
  cr_assert_float_eq(p->gpu_flops, h->gpu_flops, 1);
  cr_assert_eq(p->memory_bps, 4800 * GBYTE);
}

Test(presets, hgx_h800_is_an_h100_with_8_nvlinks) {
  /* 400 GB/s bidirectional = 8 links of 25 GB/s each way; NCCL's 8 x 20.6 = 164.8 GB/s of data, about the
  ** 160 GB/s DeepSeek-V3's report gives for its H800 nodes */
  const FabNodePreset *h = get("dgx-h100"), *p = get("hgx-h800");
  cr_assert_eq(p->arch, FAB_ARCH_HOPPER);
  cr_assert_eq(p->nvlink_links, 8);
  cr_assert_eq(p->nvlink_raw_bps, 200 * GBYTE);
  cr_assert_eq(p->nvlink_bps, 1648 * GBYTE / 10);
  cr_assert_float_eq(p->gpu_flops, h->gpu_flops, 1);
  cr_assert_eq(p->memory_bps, h->memory_bps);
  cr_assert_eq(p->nic_bps, 400 * GBIT);
  cr_assert_eq(p->gpus_per_node, 8);
}

Test(presets, hgx_h20_has_full_nvlink_and_capped_compute) {
  const FabNodePreset *h = get("dgx-h100"), *p = get("hgx-h20");
  cr_assert_eq(p->nvlink_bps, h->nvlink_bps);
  cr_assert_float_eq(p->gpu_flops, 148e12, 1);
  cr_assert_eq(p->memory_bps, 4000 * GBYTE);
}

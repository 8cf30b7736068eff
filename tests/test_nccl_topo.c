/* NCCL topology dumps as a node's layout (topologies/nccl_topo.c,
** cluster.node_topology): what is read from a dump, that a dump of a DGX
** H100 gives the dgx-h100 preset's run exactly, and the dumps refused. */
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include "testscen.h"
#include "topologies/nccl_topo.h"

static char *dir;
static void setup(void) { dir = g_dir_make_tmp("fabsim-topo-XXXXXX", NULL); }
static void teardown(void) {
  testscen_rm_dir(dir);
  g_free(dir);
}
TestSuite(nccl_topo, .init = setup, .fini = teardown);

static char *put(const char *name, const char *text) {
  char *p = g_build_filename(dir, name, NULL);
  cr_assert(g_file_set_contents(p, text, -1, NULL));
  return p;
}

/* A node as NCCL dumps it: `gpus` GPUs of compute capability sm, each with
** `links` NVLinks spread over four NVSwitches, behind a PCIe switch with one
** NIC of `mbps` per GPU (nics_per_gpu 0: one NIC for the node). */
static char *dump(uint32_t gpus, uint32_t sm, uint32_t links, const char *gts, uint32_t mbps, bool nic_per_gpu,
                  const char *vendor) {
  GString *s = g_string_new("<system version=\"1\">\n");
  g_string_append_printf(s, "  <cpu numaid=\"0\" affinity=\"ff\" arch=\"x86_64\" vendor=\"%s\">\n", vendor);
  for (uint32_t i = 0; i < gpus; i++) {
    g_string_append_printf(s, "    <pci busid=\"0000:%02x:00.0\" class=\"0x060400\" link_speed=\"%s\" link_width=\"16\">\n"
                           "      <pci busid=\"0000:%02x:01.0\" class=\"0x030200\" link_speed=\"%s\" link_width=\"16\">\n"
                           "        <gpu dev=\"%u\" sm=\"%u\" rank=\"%u\" gdr=\"1\">\n", i + 1, gts, i + 1, gts, i,
                           sm, i);
    for (uint32_t k = 0; k < 4 && links; k++)
      g_string_append_printf(s, "          <nvlink target=\"0000:c%u:00.0\" count=\"%u\" tclass=\"0x068000\"/>\n", k,
                             links / 4 + (k < links % 4));
    g_string_append(s, "        </gpu>\n      </pci>\n");
    if (nic_per_gpu || i == 0)
      g_string_append_printf(s, "      <pci busid=\"0000:%02x:02.0\" class=\"0x020700\" link_speed=\"%s\" link_width=\"16\">\n"
                             "        <nic><net name=\"mlx5_%u\" dev=\"%u\" speed=\"%u\" port=\"1\" gdr=\"1\"/></nic>\n"
                             "      </pci>\n", i + 1, gts, i, i, mbps);
    g_string_append(s, "    </pci>\n");
  }
  g_string_append(s, "  </cpu>\n</system>\n");
  return g_string_free(s, FALSE);
}

Test(nccl_topo, reads_the_layout) {
  char *x = dump(8, 90, 18, "32.0 GT/s PCIe", 400000, true, "GenuineIntel");
  char *p = put("h100.xml", x);
  FabNcclTopo t;
  GError *e = NULL;
  cr_assert(fab_nccl_topo_read(p, &t, &e), "%s", e ? e->message : "");
  cr_assert_eq(t.gpus, 8);
  cr_assert_eq(t.sm, 90);
  cr_assert_eq(t.arch, FAB_ARCH_HOPPER);
  cr_assert_eq(t.nvlinks, 18);
  cr_assert_eq(t.nics, 8);
  cr_assert_eq(t.nic_bps, 400000000000ull);
  cr_assert_eq(t.pcie_bps, 32000000000ull * 16 * 128 / 130); /* Gen5 x16, 128b/130b: 63.0 GB/s */
  cr_assert_eq(t.cpu, FAB_CPU_INTEL);
  g_free(p);
  g_free(x);
}

/* A dump of a DGX H100 changes nothing: the same run, byte for byte, as the preset alone. */
Test(nccl_topo, dgx_h100_dump_is_the_preset) {
  char *x = dump(8, 90, 18, "32.0 GT/s PCIe", 400000, true, "GenuineIntel");
  char *p = put("h100.xml", x);
  const char *base = "cluster: {node: dgx-h100, nodes: 2%s}\n"
                     "fabric: {topology: {kind: rail-optimized}, link: {latency: 500ns}}\n"
                     "workload: {kind: collective, op: allreduce, size: 64MiB}\n";
  char *with = g_strdup_printf(base, "");
  char *extra = g_strdup_printf(", node_topology: '%s'", p);
  char *y2 = g_strdup_printf(base, extra);
  char *js[2];
  const char *ys[2] = {with, y2};
  for (int k = 0; k < 2; k++) {
    FabScenario *sc = testscen_load(ys[k], NULL);
    FabResults r = {0};
    testscen_run(sc, &r);
    js[k] = testscen_stable_json(&r);
    testscen_done(sc, &r);
  }
  cr_assert_str_eq(js[0], js[1]);
  g_free(js[0]), g_free(js[1]), g_free(with), g_free(y2), g_free(extra), g_free(p), g_free(x);
}

/* Two A100s, 12 NVLinks each, one 200 Gb/s NIC, PCIe Gen4, AMD: the layout the run uses. */
/* A speed the dump does not know ("Unknown", as NCCL writes for a link it
** cannot read) leaves the preset's PCIe rate. */
Test(nccl_topo, an_unknown_pcie_speed_keeps_the_preset) {
  char *x = dump(2, 80, 12, "Unknown", 200000, false, "AuthenticAMD");
  char *p = put("unknown.xml", x);
  char *y = g_strdup_printf("cluster: {node: dgx-a100, nodes: 2, node_topology: '%s'}\n"
                            "fabric: {topology: {kind: single-switch}}\n"
                            "workload: {kind: collective, op: allreduce, size: 1MiB}\n", p);
  FabScenario *sc = testscen_load(y, NULL);
  FabScenario *pre = testscen_load("cluster: {node: dgx-a100, nodes: 2}\nfabric: {topology: {kind: single-switch}}\n"
                                   "workload: {kind: collective, op: allreduce, size: 1MiB}\n", NULL);
  cr_assert_eq(sc->fabric.gpu.pcie_bps, pre->fabric.gpu.pcie_bps);
  fab_scenario_free(pre);
  fab_scenario_free(sc);
  g_free(y), g_free(p), g_free(x);
}

Test(nccl_topo, a100_pair_layout) {
  char *x = dump(2, 80, 12, "16.0 GT/s PCIe", 200000, false, "AuthenticAMD");
  char *p = put("a100.xml", x);
  char *y = g_strdup_printf("cluster: {node: dgx-a100, nodes: 2, node_topology: '%s'}\n"
                            "fabric: {topology: {kind: single-switch}}\n"
                            "workload: {kind: collective, op: allreduce, size: 1MiB}\n", p);
  FabScenario *sc = testscen_load(y, NULL);
  const FabGpuSpec *g = &sc->fabric.gpu;
  cr_assert_eq(g->gpus_per_node, 2);
  cr_assert_eq(g->nics_per_node, 1);
  cr_assert_eq(g->nvlink_domain, 2);
  cr_assert_eq(g->nvlink_links, 12);
  cr_assert_eq(g->nvlink_bps, 12 * 20 * 8000000000ull); /* NCCL SM80_NVLINK_BW 20 GB/s a link */
  cr_assert_eq(g->pcie_bps, 16000000000ull * 16 * 128 / 130);
  cr_assert_eq(g->arch, FAB_ARCH_AMPERE);
  cr_assert_eq(g->cpu, FAB_CPU_AMD);
  cr_assert_eq(sc->fabric.topo.host_bps, 200000000000ull);
  fab_scenario_free(sc);
  g_free(y), g_free(p), g_free(x);
}

static void expect_error(const char *xml, const char *node, const char *what) {
  char *p = put("t.xml", xml);
  char *y = g_strdup_printf("cluster: {node: %s, nodes: 2, node_topology: '%s'}\n"
                            "fabric: {topology: {kind: single-switch}}\n"
                            "workload: {kind: collective, op: allreduce, size: 1MiB}\n", node, p);
  GError *err = NULL;
  FabScenario *sc = fab_scenario_load_string(y, "test.yaml", NULL, NULL, &err);
  cr_assert_null(sc, "loaded; expected: %s", what);
  cr_assert(g_str_has_prefix(err->message, "test.yaml:1:") && strstr(err->message, what), "%s\nexpected: %s",
            err->message, what);
  g_error_free(err);
  g_free(y);
  g_free(p);
}

Test(nccl_topo, refused) {
  expect_error("<system><cpu vendor=\"GenuineIntel\"></cpu></system>", "dgx-h100", "no <gpu> in the NCCL topology");
  expect_error("<system><gpu sm=\"90\"/><gpu sm=\"80\"/></system>", "dgx-h100", "t.xml:1:37: GPUs of compute "
               "capabilities 90 and 80");
  expect_error("<system><gpu sm=\"70\"/></system>", "dgx-h100", "a GPU of compute capability sm 70");
  expect_error("<system><gpu sm=\"90\"><nvlink count=\"18\" tclass=\"0x068000\"/></gpu>"
               "<gpu sm=\"90\"><nvlink count=\"12\" tclass=\"0x068000\"/></gpu></system>", "dgx-h100",
               "GPUs with 18 and 12 NVLinks to NVSwitches");
  expect_error("<system><gpu sm=\"80\"><nvlink count=\"4\" tclass=\"0x030200\"/></gpu></system>", "dgx-a100",
               "a direct GPU mesh is not modelled");
  expect_error("<system><net speed=\"400000\"/><net speed=\"200000\"/><gpu sm=\"90\"/></system>", "dgx-h100",
               "network ports of 400000 and 200000 Mb/s");
  expect_error("<system><gpu sm=\"90\">\n<nvlink count=\"x\"/></gpu></system>", "dgx-h100",
               "t.xml:2:");
  expect_error("<system><gpu sm=\"90\"></system>", "dgx-h100", "not an NCCL topology (XML)");
  static const char *const bad_speeds[] = {"abc", "0 GT/s", "-32 GT/s", "1e300 GT/s", "16.0 GT/z"};
  for (size_t k = 0; k < G_N_ELEMENTS(bad_speeds); k++) {
    char *x = dump(2, 90, 18, bad_speeds[k], 400000, true, "GenuineIntel");
    expect_error(x, "dgx-h100", "is not a PCIe rate (such as \"32.0 GT/s PCIe\", up to 1024 GT/s)");
    expect_error(x, "dgx-h100", "t.xml:4:"); /* at the element, as GMarkup places it */
    g_free(x);
  }
  expect_error("<system><gpu sm=\"90\"/></system>", "host", "'node_topology' is for GPU nodes");
  GError *err = NULL;
  FabScenario *sc = fab_scenario_load_string("cluster: {node: dgx-h100, nodes: 2, node_topology: /nonexistent.xml}\n"
                                             "fabric: {topology: {kind: single-switch}}\n"
                                             "workload: {kind: collective, op: allreduce, size: 1MiB}\n",
                                             "test.yaml", NULL, NULL, &err);
  cr_assert_null(sc);
  cr_assert(strstr(err->message, "/nonexistent.xml: cannot read the NCCL topology"), "%s", err->message);
  g_error_free(err);
}

/* validate --explain: what a scenario expands to. See scenario.h. */
#include "scenario.h"
#include "fastfwd.h"
#include "models/cc.h"
#include "models/ecmp.h"
#include "models/nic.h"
#include "topologies/presets.h"
#include <string.h>

/* NVLS: whether the NVSwitch reduces, and at what efficiency and rate. */
static void explain_nvls(const FabGpuSpec *g, GString *s) {
  if (!g->nvls) {
    g_string_append_printf(s, "nvls       off (%s)\n", g->nvlink_mesh ? "a mesh has no switch to reduce in"
                           : fab_arch_facts(g->arch).nvls ? "cluster.nvlink.nvls: false"
                           : g->arch == FAB_ARCH_CDNA3 ? "AMD GPUs have none" : "NCCL builds no NVLS graph below sm90");
    return;
  }
  g_string_append_printf(s, "nvls       on: loops of a chunk per rank and channel (NCCL's), each a reduce-scatter "
                         "through the switch, then each owner's multicast; efficiency %.6g (data per NVLink byte), "
                         "switch reduction ", g->nvls_eff);
  if (g->nvls_reduce_bps) g_string_append_printf(s, "%.6g GB/s per port\n", (double)g->nvls_reduce_bps / 8e9);
  else g_string_append(s, "at the NVLink rate (not a bottleneck)\n");
  if (g->nvls_segment) /* the user's granularity, not NCCL's: said where the mechanism is */
    g_string_append_printf(s, "nvls       segments of up to %u B (cluster.nvlink.nvls_segment): whole chunks, at most "
                           "a member's share of a reduction, not one chunk each; the switch reduces and multicasts a "
                           "whole segment at once (a faster mode where larger: fewer events)\n", g->nvls_segment);
}

/* cluster.nccl: what NCCL's kernels cost in the simulation (the tuner keeps
** NCCL's own constants to choose). */
static void explain_nccl(const FabNcclCosts *k, GString *s) {
  g_string_append_printf(s, "nccl       launch %.6g us; per step LL %.6g, LL128 %.6g, Simple %.6g us; proxy %.6g us, "
                         "NIC post %.6g us",
                         (double)k->launch / 1e6, (double)k->step[0] / 1e6, (double)k->step[1] / 1e6,
                         (double)k->step[2] / 1e6, (double)k->proxy / 1e6, (double)k->nic_post / 1e6);
  if (k->flush) g_string_append_printf(s, ", flush %.6g us", (double)k->flush / 1e6);
  else g_string_append(s, ", no flush (NCCL flushes GPUDirect receives only below Hopper)");
  g_string_append_printf(s, " per network piece (a SHARP reduction too); per channel LL128 %.6g, Simple %.6g GB/s",
                         (double)k->channel_bps[1] / 8e9, (double)k->channel_bps[2] / 8e9);
  if (k->channel_net_bps)
    g_string_append_printf(s, k->channel_net_bps < k->channel_bps[2] ? " (%.6g in its pieces across the network)"
                           : " (channel_net %.6g: not below it, so no lower limit across the network)",
                           (double)k->channel_net_bps / 8e9);
  g_string_append(s, "; LL ceiling ");
  if (k->channel_bps[0]) g_string_append_printf(s, "%.6g GB/s per rank", (double)k->channel_bps[0] / 8e9);
  else g_string_append(s, "NCCL's for the node count");
  g_string_append_printf(s, "; NVLS kernels %.6g us once at their start, %.6g us a chunk of each loop",
                         (double)k->nvls_sync / 1e6, (double)k->nvls_step / 1e6);
  g_string_append_printf(s, "; copy engines (cta_policy zero) %.6g us per barrier flag, ", (double)k->ce_sync / 1e6);
  if (k->ce_bps) g_string_append_printf(s, "%.6g GB/s per GPU\n", (double)k->ce_bps / 8e9);
  else g_string_append(s, "at the NVLink rate\n");
  g_string_append_printf(s, "nccl       channel_share %s: a ring channel (Simple, LL128) %s; fence %s: a Simple slice over "
                         "NVLink %s; a p2p op (all-to-all, send-recv) moves at the Simple rate / 16 warps x the warps "
                         "NCCL's p2p kernel gives its send and its receive, the fewer (20 over the works of a batch: "
                         "9 of 16 for one work a channel; a lone send or receive the two's together, 19; a Simple send "
                         "one less, its sync warp), in pieces of NCCL's p2p step, cut only for an op across the "
                         "network and by its own size (a quarter under one step, half under 8: the collective's "
                         "chunk below is the average op's); with protocol auto each op LL or Simple as NCCL picks it "
                         "(LL up to 16 KiB a channel, never across the network: the protocol below is the largest "
                         "op's)\n", k->channel_share ? "on" : "off",
                         k->channel_share ? "moves at most its share of the rings' bandwidth as NCCL's search sets it "
                                            "(the rings' speed x their count / the channels launched; rings inside "
                                            "one NVLink domain, not RCCL's mesh rings), under the ceilings above, "
                                            "and an nvls-tree channel's NVLS parts NVLink / its channels"
                                          : "is held only by the ceilings above",
                         k->fence ? "on" : "off",
                         k->fence ? "waits for the one before it on its connection to land (NCCL's fence before "
                                    "each slice's flag)"
                                  : "leaves once the one before it has left");
  if (k->plugin_lat)
    g_string_append_printf(s, "nccl       the network plugin reports %.6g us of latency: NCCL's tuner adds it to each step "
                           "across nodes (twice for Simple) when it chooses\n", (double)k->plugin_lat / 1e6);
}

/* Under srd: aws-ofi-nccl's protocol, as NCCL's pieces cross EFA. */
static void explain_ofi(const FabScenario *sc, GString *s) {
  if (sc->fabric.nic.transport.kind != FAB_TRANSPORT_SRD) return;
  if (sc->nccl.ofi_tuner == FAB_OFI_TUNER_INTERNAL)
    g_string_append(s, "nccl       aws-ofi-nccl tuner internal: NCCL's own cost model chooses\n");
  else if (sc->ofi_platform == FAB_OFI_PLATFORM_P5)
    g_string_append(s, "nccl       aws-ofi-nccl tuner region (p5/p5e): from 3 nodes up, for allreduce at 1, 2 or 8 "
                    "GPUs per node and allgather and reduce-scatter at 1, its regions of (size, ranks) choose the "
                    "algorithm and protocol; outside them, and at 1 or 2 nodes, NCCL's cost model does\n");
  else
    g_string_append(s, "nccl       aws-ofi-nccl tuner: no regions for this node (it has them for p5 and p5e): NCCL's "
                    "own cost model chooses\n");
  if (sc->nccl.ofi_protocol == FAB_OFI_SENDRECV)
    g_string_append(s, "nccl       aws-ofi-nccl protocol sendrecv: EFA does not promise 128-byte in-order delivery of "
                    "tagged messages, so the plugin sets NCCL_PROTO=simple: the tuner weighs Simple only (a "
                    "protocol the workload sets is kept)\n");
  if (sc->nccl.ofi_protocol == FAB_OFI_RDMA)
    g_string_append_printf(s, "nccl       aws-ofi-nccl protocol rdma: a network piece of more than %u B waits for its "
                           "receiver's %u B control message (sent when its slot is free), one unloaded way across "
                           "the fabric; smaller ones go eager\n", FAB_OFI_EAGER_MAX, FAB_OFI_CTRL_BYTES);
  else
    g_string_append_printf(s, "nccl       aws-ofi-nccl protocol sendrecv: libfabric EFA's protocols for GPU memory: "
                           "a network piece under %u B goes at once (eager); a longer one is read-based: its first "
                           "%u B at most (the runt, while no other read-based message of its NIC is under way and "
                           "its receiver's runt budget allows) at once, the rest a round trip of unloaded control "
                           "messages later (the receiver reads it); the handshake's first messages (long-CTS) are "
                           "not modelled\n", FAB_EFA_READ_MIN, FAB_EFA_RUNT_SIZE);
}

char *fab_scenario_nic_rate(const FabScenario *sc) {
  const FabFabricCfg *f = &sc->fabric;
  const FabGpuSpec *g = &f->gpu;
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "%u x %.6g Gbps", f->topo.hosts, (double)f->topo.host_bps / 1e9);
  if (g->gpus_per_node) {
    g_string_append_printf(s, " (%u per node", g->nics_per_node);
    if (g->preset_nics) /* gpus_per_node set, nics_per_node not: each GPU keeps its own NICs */
      g_string_append_printf(s, ": the %s preset's %u NIC%s for its %u GPUs, as many per GPU, as NCCL takes a GPU's "
                             "own NICs; cluster.nics_per_node gives more", g->preset, g->preset_nics,
                             g->preset_nics == 1 ? "" : "s", g->preset_gpus);
    if (f->nic_preset_bps && f->topo.host_bps < f->nic_preset_bps)
      g_string_append_printf(s, fab_cfg_get(fab_cfg_get(fab_cfg_root(sc->cfg), "cluster"), "nic") &&
                             fab_cfg_get(fab_cfg_get(fab_cfg_get(fab_cfg_root(sc->cfg), "cluster"), "nic"),
                                         "bandwidth") ? "; cluster.nic.bandwidth, below the %s preset's %.6g Gbps"
                                                      : "; the %s preset's %.6g Gbps NICs at the fabric's link rate",
                             g->preset, (double)f->nic_preset_bps / 1e9);
    else if (f->nic_preset_bps && f->topo.host_bps > f->nic_preset_bps)
      g_string_append_printf(s, "; cluster.nic.bandwidth, above the %s preset's %.6g Gbps", g->preset,
                             (double)f->nic_preset_bps / 1e9);
    g_string_append_c(s, ')');
  }
  return g_string_free(s, FALSE);
}

/* The endpoints: hosts, or GPU nodes with their NICs, NVLink, PCIe, GPUs. */
static void explain_cluster(const FabScenario *sc, GString *s) {
  const FabFabricCfg *f = &sc->fabric;
  const FabGpuSpec *g = &f->gpu;
  if (g->gpus_per_node) {
    uint32_t ranks = g->nodes * g->gpus_per_node;
    g_string_append_printf(s, "endpoints  %u GPU%s = %u %s node%s of %u GPU%s (rank = node x %u + local)\n", ranks,
                           ranks == 1 ? "" : "s", g->nodes, g->preset, g->nodes == 1 ? "" : "s", g->gpus_per_node,
                           g->gpus_per_node == 1 ? "" : "s", g->gpus_per_node);
    char *nics = fab_scenario_nic_rate(sc);
    g_string_append_printf(s, "nics       %s: %u NIC ports in the network, %.6g Gbps per node\n", nics,
                           f->topo.hosts, (double)f->topo.host_bps * g->nics_per_node / 1e9);
    g_free(nics);
    if (g->nvlink_domain) {
      g_string_append_printf(s, "nvlink     %.6g GB/s per GPU per direction of data", (double)g->nvlink_bps / 8e9);
      if (g->nvlink_raw_bps)
        g_string_append_printf(s, " (%u links; signalling %.6g GB/s, %s effective rate is what runs)",
                               g->nvlink_links, (double)g->nvlink_raw_bps / 8e9,
                               g->arch == FAB_ARCH_CDNA3 ? "RCCL's" : "NCCL's");
      uint32_t domains = (ranks + g->nvlink_domain - 1) / g->nvlink_domain;
      g_string_append_printf(s, ", %.6g ns GPU to GPU, ", (double)g->nvlink_latency / 1e3);
      if (g->nvlink_mesh) /* xgmi<node>.<gpu>: each GPU's side of its links */
        g_string_append_printf(s, "a full mesh in each node of %u GPUs: a link of %.6g GB/s per direction per GPU "
                               "pair, no switch; rings spread their channels over %u orders that share no link",
                               g->nvlink_domain, (double)(g->nvlink_bps / (g->nvlink_domain - 1)) / 8e9,
                               fab_coll_mesh_rings(g->nvlink_domain, &(const uint8_t *){NULL}));
      else if (ranks < g->nvlink_domain) /* 16 GPUs of an NVL72 */
        g_string_append_printf(s, "one NVSwitch domain (%u of its %u GPUs in use)", ranks, g->nvlink_domain);
      else
        g_string_append_printf(s, "one NVSwitch per domain of %u GPUs (%u domain%s)", g->nvlink_domain, domains,
                               domains == 1 ? "" : "s");
      g_string_append_printf(s, ", segments of %u B + %u B header (a channel's stream: each leaves as its data "
                             "begin to be made)\n", g->segment, f->nic.nvl_overhead);
      explain_nvls(g, s);
    } else
      g_string_append(s, "nvlink     none: every GPU pair goes through the network\n");
    g_string_append_printf(s, "pcie       %.6g GB/s per direction, %.6g ns, %s", (double)g->pcie_bps / 8e9,
                           (double)g->pcie_latency / 1e3, g->gpudirect ? "GPUDirect RDMA" : "host-staged");
    if (!g->gpudirect)
      g_string_append_printf(s, " (through host memory at %.6g GB/s, +%.6g us)", (double)g->host_bps / 8e9,
                             (double)g->host_latency / 1e6);
    uint32_t G = g->gpus_per_node, N = g->nics_per_node;
    g_string_append_printf(s, "; %s\n", N >= G ? (N == G ? "one NIC per GPU" : "several NICs per GPU")
                                                 : "GPUs share a NIC");
    g_string_append_printf(s, "gpu        %s, %.6g TFLOPS dense BF16 x %.2g efficiency, memory %.6g TB/s, "
                           "reductions %.6g GB/s; host CPU %s (%s)\n", fab_gpu_arch_names[g->arch],
                           g->gpu_flops / 1e12, g->gpu_efficiency, (double)g->memory_bps / 8e12,
                           (double)g->reduce_bps / 8e9, fab_cpu_names[g->cpu], g->arch == FAB_ARCH_CDNA3
                           ? "RCCL's tuner, its tuning model 5: ring and tree, LL and Simple" : "NCCL's tuner rows");
    explain_nccl(&sc->nccl, s);
    explain_ofi(sc, s);
  } else {
    g_string_append_printf(s, "endpoints  %u hosts, one NIC each at %.6g Gbps\n", f->topo.hosts,
                           (double)f->topo.host_bps / 1e9);
    explain_ofi(sc, s);
  }
}

/* Links, transport, switches, PFC, ECN, credits, congestion control, NIC. */
/* One routing's line (models/switch.h). */
static void explain_one_routing(const FabFabricCfg *f, uint32_t routing, GString *s) {
  const FabSwitchCfg *w = &f->sw;
  if (routing == FAB_ROUTE_ECMP) {
    g_string_append(s, "routing    ecmp: each flow's packets take the port its 5-tuple hash picks\n");
    return;
  }
  char *who = g_strdup_printf("data of flows of %" G_GUINT64_FORMAT " B or more (ACKs, NAKs, CNPs and smaller flows "
                              "take their hash's port)", f->nic.ar_threshold);
  if (routing == FAB_ROUTE_ROUND_ROBIN)
    g_string_append_printf(s, "routing    round-robin: per packet, each equal-cost port in turn, for %s\n", who);
  else if (routing == FAB_ROUTE_SPRAY)
    g_string_append_printf(s, "routing    spray: per packet, an equal-cost port drawn at random (the switch's RNG), "
                           "for %s\n", who);
  else if (routing == FAB_ROUTE_ADAPTIVE)
    g_string_append_printf(s, "routing    adaptive: per packet, the least loaded of %s equal-cost ports (not paused, "
                           "then egress in levels of %u B, then the faster link; ties by the switch's RNG), for %s\n",
                           w->ar_choices == 2 ? "two random" : "all", w->ar_quantum, who);
  else
    g_string_append_printf(s, "routing    flowlet: a flow moves only after %.6g us idle, to %s port; %u table entries "
                           "per switch, indexed by the flow's hash; for %s\n", (double)w->flowlet_gap / 1e6,
                           w->flowlet_random ? "a random" : w->ar_choices == 2 ? "the less loaded of two random"
                                                                                : "the least loaded",
                           w->flowlet_table, who);
  g_free(who);
}

/* The network switches' choice among equal-cost ports: each routing in
** use, and which tiers use which. */
static void explain_routing(const FabFabricCfg *f, GString *s) {
  bool used[4] = {false, false, false, false};
  used[f->sw.routing] = f->routing_kept;
  for (uint32_t k = 0; k < f->ntiers; k++) used[f->tier_routing[k]] = true;
  for (uint32_t r = 0; r < 4; r++)
    if (used[r]) explain_one_routing(f, r, s);
  if (!f->ntiers) return;
  g_string_append(s, "routing    per tier:");
  for (uint32_t k = 0; k < f->ntiers; k++)
    g_string_append_printf(s, "%s %s %s", k ? "," : "", f->tier_name[k], fab_routing_names[f->tier_routing[k]]);
  if (f->routing_kept) g_string_append_printf(s, "; the other tiers %s", fab_routing_names[f->sw.routing]);
  g_string_append_c(s, '\n');
}

/* fabric.switch.sharp: the model's limits and the trees claimed. */
static void explain_sharp(const FabScenario *sc, GString *s) {
  const FabFabricCfg *f = &sc->fabric;
  if (!f->sharp.enabled) return;
  const FabSharpCfg *h = &f->sharp;
  g_string_append_printf(s, "sharp      %s: %u trees in the subnet, %u communicator%s per %s at once; aggregation %.6g ns "
                         "beyond the switch, reducer %s; a member keeps at most %" G_GUINT64_FORMAT " B "
                         "outstanding (below %" G_GUINT64_FORMAT " B the low-latency tree: at most %u transactions of %u B); "
                         "locked per %s; no tree: %s; %u tree%s claimed\n",
                         fab_sharp_model_names[h->model], h->trees, h->streams, h->streams == 1 ? "" : "s",
                         h->per_port ? "port" : "switch", (double)h->latency / 1e3,
                         h->reduce_bps ? "per reduction" : "as fast as packets arrive", h->window, h->sat_threshold,
                         h->osts, h->ost_payload,
                         fab_sharp_lock_names[h->lock], fab_sharp_nores_names[h->on_no_resources],
                         fab_sharp_plan_ntrees(sc->sharp), fab_sharp_plan_ntrees(sc->sharp) == 1 ? "" : "s");
  if (fab_sharp_plan_ntrees(sc->sharp) > 16) g_string_append(s, "  (the first 16 trees:)\n");
  for (uint32_t i = 0; i < fab_sharp_plan_ntrees(sc->sharp) && i < 16; i++) {
    uint32_t n, nodes, job;
    const uint32_t *m = fab_sharp_plan_members(sc->sharp, i, &n);
    const char *root = fab_sharp_plan_root(sc->sharp, i, &nodes, &job);
    g_string_append_printf(s, "  tree %u: job %u, %u members (endpoints %u..%u), root %s, %u aggregation node%s\n",
                           i, job, n, m[0], m[n - 1], root, nodes, nodes == 1 ? "" : "s");
  }
}

/* The congestion-control line: the algorithm and its parameters. */
static void explain_cc(const FabFabricCfg *f, GString *s) {
  if (f->nic.cc.kind == FAB_CC_DCQCN) {
    const FabDcqcnCfg *d = &f->nic.cc.dcqcn;
    g_string_append_printf(s, "dcqcn      g %g, alpha_init %g, alpha_timer %.6g us, rate_timer %.6g us, byte_counter %"
                           G_GUINT64_FORMAT " B, F %u, rai %.6g Mbps, rhai %.6g Mbps, min_rate %.6g Mbps, "
                           "cnp_interval %.6g us\n", d->g, d->alpha_init, (double)d->alpha_timer / 1e6,
                           (double)d->rate_timer / 1e6, d->byte_counter, d->fast_recovery, (double)d->rai_bps / 1e6,
                           (double)d->rhai_bps / 1e6, (double)d->min_rate_bps / 1e6, (double)d->cnp_interval / 1e6);
  } else if (f->nic.cc.kind == FAB_CC_DELAY) {
    const FabDelayCfg *d = &f->nic.cc.delay;
    g_string_append_printf(s, "cc         delay: per flow, the rate rises %g x line rate per RTT while the RTT is within "
                           "%.6g us of the flow's lowest, else falls by %g x the excess / RTT (at most %g) once per "
                           "RTT, min_rate %.6g Mbps\n", d->ai, (double)d->target / 1e6, d->beta, d->max_mdf,
                           (double)d->min_rate_bps / 1e6);
  } else if (f->nic.cc.kind == FAB_CC_DCTCP) {
    const FabDctcpCfg *d = &f->nic.cc.dctcp;
    g_string_append_printf(s, "cc         dctcp: per flow a window, opened at line rate x the first RTT; ACKs count "
                           "the packets marked CE; alpha = (1 - %g) alpha + %g x fraction marked once per window "
                           "(alpha_init %g); a mark cuts the window to W (1 - alpha/2) once per window, never below "
                           "2 packets; else + mss^2/W per packet acknowledged\n", d->g, d->g, d->alpha_init);
  } else if (f->nic.cc.kind == FAB_CC_TIMELY) {
    const FabTimelyCfg *t = &f->nic.cc.timely;
    char delta[48];
    if (t->delta_bps) g_snprintf(delta, sizeof delta, "%.6g Mbps", (double)t->delta_bps / 1e6);
    else g_snprintf(delta, sizeof delta, "line rate / 1000");
    g_string_append_printf(s, "cc         timely: per flow, one RTT sample per %" G_GUINT64_FORMAT " B acknowledged; "
                           "below t_low %.6g us the rate rises by delta (%s), above t_high %.6g us it falls by "
                           "beta %g x (1 - t_high/RTT), between them it follows the RTT gradient (EWMA alpha %g, "
                           "over min_rtt %.6g us): + delta (x %u after %u flat samples in a row), or x (1 - beta x "
                           "gradient); min_rate %.6g Mbps\n", t->segment, (double)t->t_low / 1e6, delta,
                           (double)t->t_high / 1e6, t->beta, t->alpha, (double)t->min_rtt / 1e6, t->hai_after,
                           t->hai_after, (double)t->min_rate_bps / 1e6);
  } else if (f->nic.cc.kind == FAB_CC_HPCC) {
    const FabHpccCfg *h = &f->nic.cc.hpcc;
    char rai[48];
    if (h->rai_bps) g_snprintf(rai, sizeof rai, "%.6g Mbps", (double)h->rai_bps / 1e6);
    else g_snprintf(rai, sizeof rai, "line rate / 2500");
    g_string_append_printf(s, "cc         hpcc: each switch port writes its utilisation (qlen / (B T) + tx rate / B, "
                           "smoothed over T) into the data packets leaving it, the highest along the path reaching "
                           "the receiver, whose ACK echoes it; per ACK the rate is Rc / (U / eta) + R_AI (eta %g, "
                           "R_AI %s, %u additive stages first below eta), Rc updated once per RTT, the window R x T; "
                           "T = base_rtt %.6g us; min_rate %.6g Mbps\n", h->eta, rai, h->max_stage,
                           (double)h->base_rtt / 1e6, (double)h->min_rate_bps / 1e6);
  } else {
    g_string_append(s, "cc         none (line rate)\n");
  }
}

static void explain_fabric(const FabScenario *sc, GString *s) {
  const FabFabricCfg *f = &sc->fabric;
  g_string_append_printf(s, "links      %.6g Gbps, latency %.6g us, mtu %u B payload\n",
                         (double)f->topo.link_bps / 1e9, (double)f->topo.link_latency / 1e6, f->nic.mtu);
  if (f->topo.kind == FAB_TOPO_GRAPH && (f->topo.gbps || f->topo.glat != f->topo.link_latency))
    g_string_append_printf(s, "           graph: links given their own rate or latency, the fastest %.6g Gbps, the "
                           "longest %.6g us (the others as above)\n",
                           (double)fab_topo_max_bps(&f->topo) / 1e9, (double)fab_topo_max_latency(&f->topo) / 1e6);
  if (f->nic.seg)
    g_string_append_printf(s, "segment    fabric.segment %u B: the network carries trains of %u packets (each with "
                           "its headers: the same bytes on the wire), switched store-and-forward and dropped, marked "
                           "and retransmitted whole; coarser than packet level\n", f->nic.seg, f->nic.seg / f->nic.mtu);
  g_string_append_printf(s, "transport  %s: %u B headers+framing per data packet, %u B per ACK/NAK\n",
                         fab_transport_names[f->nic.transport.kind], f->nic.transport.data_overhead,
                         f->nic.transport.ack_bytes);
  g_string_append_printf(s, "switch     latency %.6g ns, shared buffer %" G_GUINT64_FORMAT
                         " B, alpha %g, %u priorities, ECMP seed %" G_GUINT64_FORMAT ", hash %s%s\n",
                         (double)f->sw.latency / 1e3, f->sw.buffer, f->sw.alpha, f->sw.nprio, f->sw.ecmp_seed,
                         fab_hash_names[f->sw.hash],
                         f->sw.hash == FAB_HASH_CRC32 ? " (linear: a sprayed flow's aligned block of entropy values "
                         "splits evenly over a power-of-two group; a window per tier)" : "");
  explain_routing(f, s);
  const FabPfcCfg *pfc = &f->sw.pfc;
  if (pfc->enabled) {
    g_string_append(s, "pfc        lossless priorities");
    for (uint32_t q = 0; q < f->sw.nprio; q++)
      if (pfc->lossless >> q & 1) g_string_append_printf(s, " %u", q);
    if (pfc->dynamic) g_string_append_printf(s, ", XOFF dynamic (alpha %g), XON %" G_GUINT64_FORMAT " B below", pfc->alpha, pfc->xon);
    else g_string_append_printf(s, ", XOFF %" G_GUINT64_FORMAT " B, XON %" G_GUINT64_FORMAT " B", pfc->xoff, pfc->xon);
    if (pfc->headroom) g_string_append_printf(s, ", headroom %" G_GUINT64_FORMAT " B", pfc->headroom);
    else g_string_append_printf(s, ", headroom auto (%" G_GUINT64_FORMAT " B at the fabric links)",
                                fab_pfc_headroom_auto(f->topo.link_bps, f->topo.link_latency, pfc->response, pfc->mtu_wire));
    g_string_append_printf(s, ", %" G_GUINT64_FORMAT " B reserved, quanta %u\n", f->sw.pfc_reserved, pfc->quanta);
  }
  if (f->sw.credits)
    g_string_append_printf(s, "credits    %" G_GUINT64_FORMAT " B per (ingress port, VL), %u VLs in use%s\n",
                           f->sw.credits, f->credit_vls, f->credits_auto ? " (buffer / (ports x VLs in use))" : "");
  explain_sharp(sc, s);
  if (f->sw.ecn.enabled)
    g_string_append_printf(s, "ecn        kmin %" G_GUINT64_FORMAT " B, kmax %" G_GUINT64_FORMAT " B, pmax %g, on %s\n",
                           f->sw.ecn.kmin, f->sw.ecn.kmax, f->sw.ecn.pmax, f->sw.ecn.on_dequeue ? "dequeue" : "enqueue");
  explain_cc(f, s);
  g_string_append_printf(s, "nic        rto %.6g us, ACK every %u packets, give up after %u timeouts\n",
                         (double)f->nic.rto / 1e6, f->nic.ack_interval, f->nic.max_timeouts);
  if (f->nic.srd)
    g_string_append_printf(s, "reliability srd: receivers hold packets up to %u PSNs ahead and ACK every packet; a "
                           "packet is presumed lost once a later one on its entropy value was acknowledged, or after "
                           "its RTO (srtt + 4 rttvar, at least %.6g us; the rto before the first sample), and its "
                           "value is skipped once, as is one whose RTT came back %.6g us above the lowest\n",
                           FAB_SACK_WINDOW, (double)f->nic.rto_min / 1e6, (double)f->nic.avoid_delay / 1e6);
  if (f->nic.srd)
    g_string_append(s, f->nic.srd_ordered ? "order      srd: a sender's plain flows to one receiver complete in the "
                    "order posted (libfabric EFA's FI_ORDER_SAS: one that arrives first is held); NCCL's flows are "
                    "not ordered\n" : "order      none (cluster.nic.message_order: false): every flow completes as "
                    "it arrives\n");
  else if (f->nic.selective)
    g_string_append_printf(s, "reliability selective: receivers hold packets up to %u PSNs ahead and ACK each at once, "
                           "senders keep at most %u PSNs in flight and resend a PSN once %u later ones were "
                           "acknowledged, or after the rto\n", FAB_SACK_WINDOW, FAB_SACK_WINDOW,
                           f->nic.dup_threshold);
  else
    g_string_append(s, "reliability go-back-n: receivers take only the next PSN, NAK a gap once, senders go back to "
                       "it\n");
  if (f->nic.stripe_rails)
    g_string_append_printf(s, "stripe     a GPU's message over %" G_GUINT64_FORMAT " KiB goes over up to %u of its NICs "
                           "(aws-ofi-nccl: min(ceil(size / %" G_GUINT64_FORMAT " KiB), NICs), rounded down to a "
                           "divisor), an equal share each\n", f->nic.stripe_min / 1024, f->nic.stripe_rails,
                           f->nic.stripe_min / 1024);
  if (f->nic.spray)
    g_string_append_printf(s, "spray      %s: each network flow's data packets take %u entropy values (source "
                           "ports) in turn, in an order drawn again each pass%s; ACKs keep the flow's hash\n",
                           fab_spray_names[f->nic.spray], f->nic.paths, f->nic.spray != FAB_SPRAY_AVOID ? "" :
                           f->nic.srd ? ", skipping once a value whose packet came back marked by ECN, lost or slow" :
                           f->nic.avoid_rtt ? ", skipping once a value whose packet came back marked by ECN, was "
                           "presumed lost, or came back over avoid_delay slower than the fastest" :
                           f->nic.selective ? ", skipping once a value whose packet came back marked by ECN or was "
                           "presumed lost" : ", skipping once a value whose packet came back marked by ECN");
  for (uint32_t i = 0; i < f->nchanges; i++) {
    const FabLinkChange *c = &f->changes[i];
    g_string_append_printf(s, "failure    %s-%s at %.6g us: ", c->a, c->b, (double)c->at / 1e6);
    if (c->down == 1)
      g_string_append_printf(s, "goes down (what is on it or queued for it is lost; switches routing per packet or "
                             "flowlet take new routes at once, hashing ones %.6g us later)\n",
                             (double)f->reroute_delay / 1e6);
    else if (c->down == 0)
      g_string_append_printf(s, "comes back up (used again as routes are recomputed: at once, or %.6g us later)\n",
                             (double)f->reroute_delay / 1e6);
    else if (c->bps && c->set_latency)
      g_string_append_printf(s, "runs at %.6g Gbps with %.6g us latency\n", (double)c->bps / 1e9,
                             (double)c->latency / 1e6);
    else if (c->bps)
      g_string_append_printf(s, "runs at %.6g Gbps\n", (double)c->bps / 1e9);
    else
      g_string_append_printf(s, "has %.6g us latency\n", (double)c->latency / 1e6);
  }
  if (f->nchanges)
    g_string_append(s, f->failure_baseline ? "baseline   the scenario runs a second time without fabric.failures "
                    "(twice the run time) to report their cost: JSON failure_impact (fabric.failure_baseline: "
                    "false skips it)\n" : "baseline   none (fabric.failure_baseline: false): failure_impact is "
                    "null\n");
}

/* "0-7", "0, 4, 8, 12, 1, 5, 9, 13", "0-3, 8-11": a job's endpoints in
** rank order, runs of consecutive endpoints as ranges (the YAML `ranks`
** syntax); past 16 items, the first 8 and a count. */
char *fab_explain_ranks(const uint32_t *r, uint32_t n) {
  GString *s = g_string_new(NULL);
  uint32_t items = 0;
  for (uint32_t i = 0; i < n;) {
    uint32_t j = i;
    while (j + 1 < n && r[j + 1] == r[j] + 1) j++;
    if (items == 8 && n - i > 0) {
      uint32_t left = 0; /* the items not shown */
      for (uint32_t k = i; k < n; k++, left++)
        while (k + 1 < n && r[k + 1] == r[k] + 1) k++;
      if (items + left > 16) {
        g_string_append_printf(s, ", ... (%u more)", left);
        break;
      }
    }
    g_string_append_printf(s, "%s%u", items ? ", " : "", r[i]);
    if (j > i) g_string_append_printf(s, "-%u", r[j]);
    items++;
    i = j + 1;
  }
  return g_string_free(s, FALSE);
}

/* The collectives, alike ones counted together (a training step has
** thousands); kinds that differ only in size (an nccl-tests sweep) share a
** line while the algorithm, protocol, channels and chunk stay, so that every
** size where a choice changes shows. */
typedef struct CollKind {
  guint first, count;
  uint64_t lo, hi;
} CollKind;

static gboolean same_choice(const FabCollDef *a, const FabCollDef *b) {
  return g_str_equal(a->op, b->op) && a->nranks == b->nranks && g_str_equal(a->algorithm, b->algorithm) &&
         g_str_equal(a->protocol, b->protocol) && a->channels == b->channels && g_strcmp0(a->tag, b->tag) == 0 &&
         a->job == b->job;
}

static void explain_collectives(const FabScenario *sc, GString *s) {
  enum { MAX_LINES = 48 };
  const GArray *colls = sc->dag->colls;
  GArray *kinds = g_array_new(FALSE, FALSE, sizeof(CollKind));
  GHashTable *at = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL); /* key -> kind + 1 */
  for (guint c = 0; c < colls->len; c++) {
    const FabCollDef *cd = &g_array_index(colls, FabCollDef, c);
    char *key = g_strdup_printf("%s %" G_GUINT64_FORMAT " %u %s %s %u %" G_GUINT64_FORMAT " %s %u", cd->op, cd->bytes,
                                cd->nranks, cd->algorithm, cd->protocol, cd->channels, cd->chunk,
                                cd->tag ? cd->tag : "-", cd->job);
    guint k = GPOINTER_TO_UINT(g_hash_table_lookup(at, key));
    if (!k) {
      CollKind nk = {c, 0, cd->bytes, cd->bytes};
      g_array_append_val(kinds, nk);
      k = kinds->len;
      g_hash_table_insert(at, key, GUINT_TO_POINTER(k));
    } else {
      g_free(key);
    }
    g_array_index(kinds, CollKind, k - 1).count++;
  }
  g_hash_table_destroy(at);
  guint lines = 0, shown = 0;
  for (guint k = 0; k < kinds->len && lines < MAX_LINES;) {
    CollKind run = g_array_index(kinds, CollKind, k);
    const FabCollDef *cd = &g_array_index(colls, FabCollDef, run.first);
    guint m = k + 1;
    for (; m < kinds->len; m++) { /* the next kinds in order that differ only in size */
      const CollKind *o = &g_array_index(kinds, CollKind, m);
      const FabCollDef *od = &g_array_index(colls, FabCollDef, o->first);
      if (!same_choice(cd, od) || od->chunk != cd->chunk) break;
      run.count += o->count;
      run.lo = MIN(run.lo, o->lo), run.hi = MAX(run.hi, o->hi);
    }
    g_string_append_printf(s, "collective %u x %s of %" G_GUINT64_FORMAT, run.count, cd->op, run.lo);
    if (run.hi > run.lo) g_string_append_printf(s, "..%" G_GUINT64_FORMAT " B (%u sizes)", run.hi, m - k);
    else g_string_append(s, " B");
    g_string_append_printf(s, " on %u ranks: %s, %s, %u channel%s, chunk %" G_GUINT64_FORMAT " B%s%s\n", cd->nranks,
                           cd->algorithm, cd->protocol, cd->channels, cd->channels == 1 ? "" : "s", cd->chunk,
                           cd->tag ? ", tag " : "", cd->tag ? cd->tag : "");
    shown += run.count;
    lines++;
    k = m;
  }
  g_array_free(kinds, TRUE);
  if (shown < colls->len)
    g_string_append_printf(s, "           ... and %u more collectives\n", colls->len - shown);
}

/* The workload: totals, jobs, the collectives counted by kind. */
static void explain_workload(const FabScenario *sc, GString *s) {
  uint64_t total = 0;
  uint32_t nflows = 0, ncompute = 0;
  for (guint i = 0; i < fab_dag_len(sc->dag); i++) {
    const FabOp *o = fab_dag_op(sc->dag, i);
    if (o->kind <= FAB_OP_NVLS) total += o->bytes, nflows++;
    ncompute += o->kind == FAB_OP_COMPUTE;
  }
  if (sc->dag->more) /* the last job's collective is made as the run goes */
    g_string_append_printf(s, "workload   %u flow%s made before the run (%" G_GUINT64_FORMAT " bytes of payload), about "
                           "%.0f more operations made as it runs, layer by layer, and forgotten once done; %u "
                           "collective%s\n", nflows, nflows == 1 ? "" : "s", total, sc->dag->more_ops,
                           sc->dag->colls->len, sc->dag->colls->len == 1 ? "" : "s");
  else
    g_string_append_printf(s, "workload   %u flow%s, %" G_GUINT64_FORMAT " bytes of payload, %u compute op%s, %u "
                           "collective%s\n", nflows, nflows == 1 ? "" : "s", total, ncompute,
                           ncompute == 1 ? "" : "s", sc->dag->colls->len, sc->dag->colls->len == 1 ? "" : "s");
  for (guint j = 0; j < sc->dag->jobs->len; j++) {
    const FabJobDef *jd = &g_array_index(sc->dag->jobs, FabJobDef, j);
    char *eps = fab_explain_ranks(jd->ranks, jd->nranks);
    g_string_append_printf(s, "job        %s: %s on %u rank%s (endpoint%s %s)", jd->name, jd->kind, jd->nranks,
                           jd->nranks == 1 ? "" : "s", jd->nranks == 1 ? "" : "s", eps);
    g_free(eps);
    if (jd->steps)
      g_string_append_printf(s, ", %u step%s of %u microbatch%s, pp %u", jd->steps, jd->steps == 1 ? "" : "s",
                             jd->microbatches, jd->microbatches == 1 ? "" : "es", jd->pp);
    if (jd->note) g_string_append_printf(s, "\n           %s", jd->note);
    g_string_append_c(s, '\n');
  }
  explain_collectives(sc, s);
  if (sc->stop_time != FAB_TIME_MAX)
    g_string_append_printf(s, "stop_time  %.6g us\n", (double)sc->stop_time / 1e6);
  if (sc->hdf5)
    g_string_append_printf(s, "hdf5       %s (queues sampled every %.6g us; should the samples outgrow half the "
                           "memory left to the run, every other one is dropped and the interval doubles, with a "
                           "warning)\n", sc->hdf5, (double)sc->sample_interval / 1e6);
}

/* fabric.fast_forward: what it would do on one engine (fastfwd.h). */
static void explain_ff(const FabScenario *sc, GString *s) {
  const FabFabricCfg *f = &sc->fabric;
  const char *why;
  bool on = fab_ff_wanted(sc, 1, &why);
  const char *mode = fab_ff_mode_names[f->ff_mode];
  if (!on) {
    const char *because = f->ff_mode == FAB_FF_OFF ? ""
                          : f->nic.transport.kind == FAB_TRANSPORT_SRD ? ": not under transport srd"
                          : ": on for training steps of " G_STRINGIFY(FAB_FF_AUTO_RANKS) " ranks or more";
    (void)why;
    g_string_append_printf(s, "fastfwd    off (fabric.fast_forward: %s%s): every packet is simulated\n", mode, because);
    return;
  }
  g_string_append_printf(s, "fastfwd    on (fabric.fast_forward: %s): looks every %.6g us; where the same flows run "
                         "alike in both halves of a stretch (within %.6g %%), jumps up to %d x the stretch ahead, "
                         "their packets not simulated, link counters extrapolated (JSON fast_forward, a warning "
                         "when it jumps); not on threads or processes\n", mode, (double)f->ff_window / 1e6,
                         f->ff_tolerance * 100, FAB_FF_REACH);
}

char *fab_scenario_explain(const FabScenario *sc) {
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "scenario   %s (seed %" G_GUINT64_FORMAT ")\n", sc->name, sc->seed);
  g_string_append_printf(s, "topology   %s\n", sc->topology);
  explain_cluster(sc, s);
  explain_fabric(sc, s);
  explain_workload(sc, s);
  explain_ff(sc, s);
  g_string_append_printf(s, "memory     about %.0f MB to run (estimated at load; this run may use %.3g GB)\n",
                         (double)sc->mem_bytes / 1e6, (double)fab_scenario_mem_limit() / 1e9);
  for (guint i = 0; i < sc->warnings->len; i++)
    g_string_append_printf(s, "warning    %s\n", (const char *)g_ptr_array_index(sc->warnings, i));
  return g_string_free(s, FALSE);
}

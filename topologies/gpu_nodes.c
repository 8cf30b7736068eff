/* GPU nodes: the PCIe elements between GPUs and NICs, the NVSwitch of each
** NVLink domain, and the network's routes re-keyed from NIC ports to GPU
** ranks. See topology.h. */
#include "build_int.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
** Each group of GPUs that share NICs (or one GPU and its several NICs) hangs
** off one PCIe element: a switch whose first ports are the GPUs' PCIe links
** and whose last ports are the NICs' network ports. Each NVLink domain is one
** NVSwitch element with a port per GPU. After the network is built over the
** NIC ports, its routes are re-keyed from NIC ports to GPU ranks. */

/* Bytes in flight at `bps` over `rtt` ps. */
static uint64_t bdp(uint64_t bps, fab_time_t rtt) {
  return (uint64_t)(((unsigned __int128)bps * rtt + 8 * FAB_S - 1) / (8 * FAB_S));
}

uint32_t fab_topo__nvl_domains(uint32_t ranks, uint32_t domain) { return (ranks + domain - 1) / domain; }

FabGpuLayout fab_topo__gpu_layout(const FabGpuSpec *g) {
  FabGpuLayout l = {g->gpus_per_node, g->nics_per_node, 1, 1, 0};
  if (l.N >= l.G) l.npg = l.N / l.G;
  else l.gpg = l.G / l.N;
  l.groups = l.G / l.gpg;
  return l;
}

/* The NIC ports (attachments) serving rank r: [*first, *first + npg). */
static uint32_t rank_attach(const FabGpuLayout *l, uint32_t r, uint32_t *first) {
  uint32_t node = r / l->G, local = r % l->G, grp = local / l->gpg;
  *first = node * l->N + grp * l->npg;
  return l->npg;
}

static void add_nvs(FabTopology *t, FabSwitch *sw) {
  t->nvs = g_renew(FabSwitch *, t->nvs, t->nnvs + 1);
  t->nvs[t->nnvs++] = sw;
}

uint32_t fab_topo__nvl_switches(const FabGpuSpec *g, uint32_t ranks) {
  if (!g->nvlink_domain) return 0;
  return g->nvlink_mesh ? ranks : fab_topo__nvl_domains(ranks, g->nvlink_domain);
}

uint64_t fab_topo__nvl_ports(const FabGpuSpec *g, uint64_t ranks) {
  if (!g->nvlink_domain) return 0;
  return g->nvlink_mesh ? ranks * g->nvlink_domain : ranks;
}

/*
** A mesh domain (cluster.nvlink.mesh: AMD Infinity Fabric): every pair of
** its GPUs has its own link, nvlink_bps / (size - 1) each way, and no switch
** between them. Each GPU's NVLink port leads into its own element, "xgmi<n>.<i>"
** (the GPU's side of its links, at the GPU's whole rate, no latency), whose
** port k (1 .. size-1) is the link to GPU (i + k) mod size, with the whole
** GPU-to-GPU latency. A segment to GPU j takes link i -> j only, so a ring
** that walks one order uses one link of each GPU: the collectives spread
** their channels over different orders (workloads/coll_mesh.c). Credit-based
** like the NVSwitch: the GPU and each link send only what the next element
** holds; and the GPU holds a segment for peer j while link j's queue is full
** (FabNic.mesh_out), as its writes to j wait for j's link alone, never
** blocking those to other peers. PXN relays through the local GPU on the
** destination's rail.
*/
static void build_mesh(FabTopology *t, const FabGpuSpec *g, FabSwitchCfg *sc, uint32_t unit) {
  uint32_t D = g->nvlink_domain;
  uint64_t link_bps = g->nvlink_bps / (D - 1);
  char name[FAB_NAME_LEN];
  for (uint32_t d = 0; d < fab_topo__nvl_domains(t->nhosts, D); d++) {
    FabSwitch **hub = g_new(FabSwitch *, D);
    /* a link's credit covers its round trip and 4 segments; the GPU's, all its links at once (one port here stands
    ** for the GPU's D - 1 link ports, so it may hold what they would hold together) */
    uint64_t link_credits = bdp(link_bps, 2 * g->nvlink_latency) + 4ULL * unit, gpu_credits = link_credits * (D - 1);
    for (uint32_t i = 0; i < D; i++) {
      g_snprintf(name, sizeof name, "xgmi%u.%u", d, i);
      sc->credits = link_credits;
      sc->buffer = link_credits * D * sc->nprio;
      hub[i] = fab_switch_new(name, sc, D, t->nhosts);
      t->switches[t->nswitches++] = hub[i];
      add_nvs(t, hub[i]);
      FabNic *gpu = &t->nics[d * D + i];
      gpu->nvl.latency = 0;
      fab_port_connect(&gpu->nvl, fab_switch_port_init(hub[i], 0, g->nvlink_bps, 0));
      fab_port_set_credits(&gpu->nvl, gpu_credits, unit);
      gpu->mesh_out = g_new(FabPort *, D);
      gpu->mesh_limit = link_credits;
      fab_switch_set_kick(hub[i], &gpu->nvl);
    }
    for (uint32_t i = 0; i < D; i++) {
      for (uint32_t k = 1; k < D; k++) /* both ends of link i - j are made from i's side only once: i < j */
        if (i < (i + k) % D) {
          uint32_t j = (i + k) % D;
          FabPort *a = fab_switch_port_init(hub[i], k, link_bps, g->nvlink_latency);
          FabPort *b = fab_switch_port_init(hub[j], D - k, link_bps, g->nvlink_latency);
          t->nics[d * D + i].mesh_out[j] = a;
          t->nics[d * D + j].mesh_out[i] = b;
          fab_port_connect(a, b);
          fab_port_set_credits(a, link_credits, unit);
          fab_port_set_credits(b, link_credits, unit);
        }
      uint32_t zero = 0, *via = g_new(uint32_t, D); /* via[j]: the group of the port toward local GPU j */
      via[i] = fab_switch_add_group(hub[i], &zero, 1);
      t->nics[d * D + i].mesh_out[i] = fab_switch_port_at(hub[i], 0); /* never used: no flow to itself */
      for (uint32_t k = 1; k < D; k++) via[(i + k) % D] = fab_switch_add_group(hub[i], &k, 1);
      for (uint32_t r = 0; r < t->nhosts; r++)
        if (r / D == d) fab_switch_set_route(hub[i], r, via[r % D]);
        else if (g->pxn) fab_switch_set_route(hub[i], r, via[r % g->gpus_per_node]);
      g_free(via);
    }
    g_free(hub);
  }
}

void fab_topo__build_gpu_edges(FabTopology *t, const FabFabricCfg *cfg, const FabGpuLayout *l) {
  const FabGpuSpec *g = &cfg->gpu;
  t->rank_attach = g_new(uint32_t, t->nhosts);
  for (uint32_t r = 0; r < t->nhosts; r++) t->rank_nattach = rank_attach(l, r, &t->rank_attach[r]);
  /* PCIe and NVLink are credit-based: a GPU sends only what the PCIe element
  ** or the NVSwitch can hold (per port and priority: the link's bandwidth x
  ** round trip, plus 4 full packets), so a slower NIC or a congested NVLink
  ** port backpressures the GPU instead of queueing without bound. No PFC or
  ** ECN there. */
  FabSwitchCfg sc = cfg->sw;
  sc.latency = 0;
  sc.alpha = 1e6;
  sc.pfc = (FabPfcCfg){0};
  sc.ecn = (FabEcnCfg){0};
  sc.int_rtt = 0; /* HPCC's telemetry (models/hpcc.h) is the network switches' */
  sc.lanes = true; /* a flow with a lane leaves by its NIC (NCCL's channel -> NIC); NVSwitches route one way anyway */
  sc.routing = FAB_ROUTE_ECMP; /* fabric.switch.routing is the network's: a flow keeps the NIC its hash gave it */
  uint32_t pcie_unit = cfg->sw.mtu_wire, nvl_unit = g->segment + cfg->nic.nvl_overhead;
  /* the largest packet a GPU sends on NVLink sizes the credit unit (a port stops below one unit): an NVLS
  ** segment carries nvls_eff of data per byte (models/nic.c, nvls_wire), so a full one is larger on the wire,
  ** and cluster.nvlink.nvls_segment may make it larger still */
  if (cfg->nic.nvls_eff > 0)
    nvl_unit = MAX(nvl_unit, (uint32_t)ceil((double)MAX(g->segment, g->nvls_segment) / cfg->nic.nvls_eff) +
                                 cfg->nic.nvl_overhead);
  if (g->pxn) nvl_unit = MAX(nvl_unit, pcie_unit); /* PXN relays network packets (or trains) over NVLink */
  uint64_t pcie_bps = g->gpudirect ? g->pcie_bps : MIN(g->pcie_bps, g->host_bps);
  fab_time_t pcie_lat = g->pcie_latency + (g->gpudirect ? 0 : g->host_latency);
  char name[FAB_NAME_LEN];
  for (uint32_t n = 0; n < g->nodes; n++)
    for (uint32_t j = 0; j < l->groups; j++) {
      g_snprintf(name, sizeof name, "pcie%u.%u", n, j);
      sc.credits = bdp(pcie_bps, 2 * pcie_lat) + 4ULL * pcie_unit;
      sc.buffer = sc.credits * (l->gpg + l->npg) * sc.nprio;
      FabSwitch *ps = fab_switch_new(name, &sc, l->gpg + l->npg, t->nhosts);
      t->switches[t->nswitches++] = ps;
      uint32_t r0 = n * l->G + j * l->gpg;
      uint32_t *up = g_new(uint32_t, l->npg);
      for (uint32_t i = 0; i < l->npg; i++) {
        up[i] = l->gpg + i;
        t->attach[n * l->N + j * l->npg + i] = fab_switch_port_init(ps, l->gpg + i, t->spec.host_bps,
                                                                    t->spec.link_latency);
      }
      uint32_t ug = fab_switch_add_group(ps, up, l->npg);
      fab_switch_set_up_group(ps, ug);
      g_free(up);
      for (uint32_t r = 0; r < t->nhosts; r++) fab_switch_set_route(ps, r, ug);
      for (uint32_t i = 0; i < l->gpg; i++) { /* the GPUs' PCIe links */
        FabNic *gpu = &t->nics[r0 + i];
        fab_port_set_rate(&gpu->port, pcie_bps);
        gpu->port.latency = pcie_lat;
        fab_port_connect(&gpu->port, fab_switch_port_init(ps, i, pcie_bps, pcie_lat));
        fab_port_set_credits(&gpu->port, sc.credits, pcie_unit);
        fab_switch_set_route(ps, r0 + i, fab_switch_add_group(ps, &i, 1));
      }
    }
  if (g->nvlink_domain && g->nvlink_mesh) {
    build_mesh(t, g, &sc, nvl_unit);
    return;
  }
  if (g->nvlink_domain) /* one NVSwitch element per domain; the latency is split over its two links */
    for (uint32_t d = 0; d < fab_topo__nvl_domains(t->nhosts, g->nvlink_domain); d++) {
      /* the last domain may be partial (a few trays of an NVL72 rack) */
      uint32_t size = MIN(g->nvlink_domain, t->nhosts - d * g->nvlink_domain);
      g_snprintf(name, sizeof name, "nvs%u", d);
      sc.credits = bdp(g->nvlink_bps, g->nvlink_latency) + 4ULL * nvl_unit;
      sc.buffer = sc.credits * size * sc.nprio;
      FabSwitch *nv = fab_switch_new(name, &sc, size, t->nhosts);
      t->switches[t->nswitches++] = nv;
      add_nvs(t, nv);
      for (uint32_t i = 0; i < size; i++) {
        FabNic *gpu = &t->nics[d * g->nvlink_domain + i];
        gpu->nvl.latency = g->nvlink_latency / 2;
        fab_port_connect(&gpu->nvl, fab_switch_port_init(nv, i, g->nvlink_bps, g->nvlink_latency - g->nvlink_latency / 2));
        fab_port_set_credits(&gpu->nvl, sc.credits, nvl_unit);
        fab_switch_set_route(nv, d * g->nvlink_domain + i, fab_switch_add_group(nv, &i, 1));
      }
      if (g->pxn) /* beyond the domain: to the local GPU on the destination's rail */
        for (uint32_t r = 0; r < t->nhosts; r++)
          if (r / g->nvlink_domain != d) {
            uint32_t relay = r % g->gpus_per_node;
            fab_switch_set_route(nv, r, fab_switch_add_group(nv, &relay, 1));
          }
    }
}

static int cmp_u32p(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Re-key a network switch's routes from NIC ports to GPU ranks: a rank's
** group is every port toward any of its NIC ports, keeping only the ports
** straight down to them when the switch has some. */
void fab_topo__rekey_routes(FabTopology *t, FabSwitch *sw, const FabGpuLayout *l, GHashTable *network) {
  uint32_t nold = fab_switch_nendpoints(sw);
  uint32_t *old = g_new(uint32_t, nold ? nold : 1);
  for (uint32_t a = 0; a < nold; a++) old[a] = fab_switch_route_group(sw, a);
  fab_switch_reset_routes(sw, t->nhosts);
  if (l->npg > 1) { /* rail-matched: lane i + 1 of rank r keeps the route toward r's NIC i (switch.h) */
    fab_switch_set_lanes(sw, l->npg);
    for (uint32_t r = 0; r < t->nhosts; r++) {
      uint32_t first, n = rank_attach(l, r, &first);
      for (uint32_t i = 0; i < n && first + i < nold; i++) fab_switch_set_lane_route(sw, r, i + 1, old[first + i]);
    }
  }
  GHashTable *groups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GArray *ports = g_array_new(FALSE, FALSE, sizeof(uint32_t)), *down = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  for (uint32_t r = 0; r < t->nhosts; r++) {
    uint32_t first, n = rank_attach(l, r, &first);
    g_array_set_size(ports, 0);
    g_array_set_size(down, 0);
    for (uint32_t a = first; a < first + n && a < nold; a++) {
      if (old[a] == UINT32_MAX) continue;
      uint32_t glen;
      const uint32_t *gp = fab_switch_group_ports(sw, old[a], &glen);
      for (uint32_t k = 0; k < glen; k++) {
        uint32_t pidx = gp[k];
        bool dup = false;
        for (guint q = 0; q < ports->len; q++) dup |= g_array_index(ports, uint32_t, q) == pidx;
        if (dup) continue;
        g_array_append_val(ports, pidx);
        if (!g_hash_table_contains(network, fab_switch_port_at(sw, pidx)->peer->owner)) g_array_append_val(down, pidx);
      }
    }
    GArray *use = down->len ? down : ports;
    if (!use->len) continue;
    qsort(use->data, use->len, sizeof(uint32_t), cmp_u32p);
    GString *key = g_string_new(NULL);
    for (guint q = 0; q < use->len; q++) g_string_append_printf(key, "%u,", g_array_index(use, uint32_t, q));
    gpointer gid;
    if (!g_hash_table_lookup_extended(groups, key->str, NULL, &gid)) {
      gid = GUINT_TO_POINTER(fab_switch_add_group(sw, (uint32_t *)(void *)use->data, use->len) + 1);
      g_hash_table_insert(groups, g_strdup(key->str), gid);
    }
    g_string_free(key, TRUE);
    fab_switch_set_route(sw, r, GPOINTER_TO_UINT(gid) - 1);
  }
  g_array_free(ports, TRUE);
  g_array_free(down, TRUE);
  g_hash_table_destroy(groups);
  g_free(old);
}

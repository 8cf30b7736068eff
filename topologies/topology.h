/*
** Topology builders: turn the `fabric:` and `cluster:` sections of a
** scenario into NICs, switches and the links between them, with routing
** tables filled in.
**
**   single-switch  N hosts on one switch.
**   leaf-spine     `leaves` leaves with `hosts_per_leaf` hosts each; every
**                  leaf has one uplink to each of `spines` spines. Give
**                  `spines`, or `oversubscription: N:M` (spines =
**                  hosts_per_leaf x M / N); default 1:1.
**   fat-tree       3-tier k-ary fat-tree (Al-Fares et al.): k pods of k/2
**                  edge and k/2 aggregation switches, (k/2)^2 cores;
**                  `oversubscription: N:M` at the edge puts
**                  k/2 x N / M hosts on each edge switch (default 1:1,
**                  k^3/4 hosts).
**
**   rail-optimized GPU nodes only: rail switch i joins NIC i of every node;
**                  `spines` spines (default: one per rail, of the preset's
**                  node where nics_per_node followed gpus_per_node) join the rails,
**                  each rail switch having one uplink to every spine.
**                  With `pod_nodes`, three tiers: each pod of pod_nodes
**                  nodes has its own rail leaves and spines, and `cores`
**                  core switches join every pod's spines (graph.c makes
**                  it as a graph). `rail_oversubscription: N:M` sets the
**                  rail switch's uplinks (spines) from its N downlinks.
**   multi-rail     GPU nodes only: one independent leaf-spine plane per NIC
**                  index (plane i joins NIC i of every node, `hosts_per_leaf`
**                  nodes per leaf, `spines` per plane); the planes are not
**                  joined, so a GPU reaches another rail only through a PXN
**                  relay (cluster.pxn).
**   graph          switches, hosts and links as the scenario lists them
**                  (graph.h), routed by shortest paths (reroute.c).
**   ring           `switches` switches in a ring with `hosts_per_switch`
**                  hosts each, every switch joined to the next one;
**                  traffic goes clockwise only. Not a production fabric: a
**                  small layout with a cyclic buffer dependency, to study
**                  PFC deadlocks.
**
** Routing is one table lookup per hop: each switch maps the destination
** endpoint to a group of equal-cost egress ports (up: every uplink; down:
** the one port toward the destination), and ECMP picks within the group.
** Switch numbers (which seed the ECMP salt) run over leaves then spines, or
** edges, aggregations, cores.
*/
#ifndef FAB_TOPOLOGY_H
#define FAB_TOPOLOGY_H

#include <glib.h>
#include "models/gpu.h"
#include "models/nic.h"
#include "models/sharp.h"
#include "models/switch.h"
#include "sim/config.h"

/* RAIL_ONLY is built as MULTI_RAIL with one leaf per plane and no spines. */
typedef enum { FAB_TOPO_SINGLE_SWITCH = 0, FAB_TOPO_LEAF_SPINE, FAB_TOPO_FAT_TREE, FAB_TOPO_RING, FAB_TOPO_RAIL,
               FAB_TOPO_MULTI_RAIL, FAB_TOPO_RAIL_ONLY, FAB_TOPO_GRAPH } FabTopoKind;

/* The fabrics whose rails (NIC index planes) are not joined: a flow across rails needs PXN. */
static inline bool fab_topo_rails_apart(FabTopoKind k) { return k == FAB_TOPO_MULTI_RAIL || k == FAB_TOPO_RAIL_ONLY; }

typedef struct FabTopoSpec {
  FabTopoKind kind;
  uint32_t hosts;           /* endpoints (derived for leaf-spine / fat-tree) */
  uint32_t hosts_per_leaf;  /* leaf-spine; fat-tree: hosts per edge switch; ring: per switch (hosts_per_switch) */
  uint32_t leaves, spines;  /* leaf-spine; ring: leaves = switches in the ring (switches) */
  uint32_t k;               /* fat-tree arity; multi-rail: planes */
  double oversubscription;  /* N:M at the leaf (leaf-spine) or edge (fat-tree) as N/M; 0: not given (1:1) */
  uint64_t link_bps;        /* switch-to-switch links */
  uint64_t host_bps;        /* host-to-switch links (the NIC rate) */
  fab_time_t link_latency;  /* ps, every link */
  /* graph (graph.h): its map, read again when built (the scenario's nodes outlive the configuration); leaves
  ** counts its switches */
  const FabCfgNode *graph;
  uint32_t gdiam, gmaxp;    /* graph: the most switch hops between hosts' switches; the largest switch's ports */
  uint64_t glinks;          /* graph: links between switches */
  fab_time_t glat;          /* graph: the longest link latency (fabric.link's where a link takes it) */
  uint64_t gbps;            /* graph: the fastest link given its own bandwidth (0: none) */
  /* rail-optimized in three tiers (pod_nodes > 0): k pods of pod_nodes nodes, each with `leaves` rail leaves of
  ** hosts_per_leaf (= pod_nodes) NIC ports and `spines` spines; `cores` core switches join the pods' spines */
  uint32_t pod_nodes, cores;
  double rail_ov;           /* rail_oversubscription N:M at the rail switch as N/M; 0: not given (1:1) */
  bool dual_tor;            /* leaf-spine: attachments 2i and 2i+1 (an endpoint's two ports) on leaves 2p and 2p+1 */
  bool dual_plane;          /* dual_tor: even leaves link to spines [0, spines/2) only, odd ones to the rest */
} FabTopoSpec;

/* The longest link latency and the fastest link rate of the fabric (host links included). */
static inline fab_time_t fab_topo_max_latency(const FabTopoSpec *t) {
  return t->kind == FAB_TOPO_GRAPH && t->glat > t->link_latency ? t->glat : t->link_latency;
}
static inline uint64_t fab_topo_max_bps(const FabTopoSpec *t) {
  uint64_t b = t->link_bps > t->host_bps ? t->link_bps : t->host_bps;
  return t->kind == FAB_TOPO_GRAPH && t->gbps > b ? t->gbps : b;
}

/* GPU nodes (cluster.node other than host): what a node holds and how its
** GPUs reach each other (NVLink through NVSwitch) and the network (PCIe to
** the NICs). Endpoints are GPU ranks: rank = node x gpus_per_node + local. */
#define FAB_MESH_MAX 16 /* GPUs in a mesh domain (cluster.nvlink.mesh) */

typedef struct FabGpuSpec {
  const char *preset;       /* cluster.node */
  uint32_t preset_id;       /* its index in fab_preset_names (0: host) */
  FabGpuArch arch;          /* the GPU generation (cluster.gpu.arch; the preset's by default) */
  FabCpu cpu;               /* the host CPU (cluster.cpu; the preset's by default) */
  uint32_t nodes;           /* cluster.nodes (0: not given) */
  uint32_t gpus_per_node;   /* 0: host mode (no GPU) */
  uint32_t nics_per_node;   /* network ports per node */
  uint32_t preset_nics;     /* nics_per_node came from gpus_per_node at the preset's NICs per GPU (below it, one
                            ** NIC for every preset_gpus): the preset's count of NICs, else 0 */
  uint32_t preset_gpus;     /* with preset_nics: the preset's GPUs per node */
  uint32_t nvlink_domain;   /* GPUs per NVLink domain (a multiple of gpus_per_node); 0: none */
  uint32_t nvlink_links;    /* the preset's NVLinks per GPU (informative) */
  uint64_t nvlink_raw_bps;  /* the preset's signalling rate per GPU per direction (informative) */
  uint64_t nvlink_bps;      /* per GPU per direction: the data rate the model runs at */
  fab_time_t nvlink_latency;/* GPU to GPU through the NVSwitch (or over a mesh link), ps */
  bool nvlink_mesh;         /* the domain (one node) is a full mesh of GPU-to-GPU links, no switch (AMD Infinity
                            ** Fabric): each link nvlink_bps / (domain - 1) per direction */
  bool nvls;                /* the NVSwitch reduces and multicasts (NVLS; sm90 and later) */
  double nvls_eff;          /* NVLS traffic's data per NVLink byte (multimem requests' efficiency) */
  uint64_t nvls_reduce_bps; /* the NVSwitch's reduction rate per GPU port, bits/s of reduced output (0: the
                            ** NVLink rate, not a bottleneck) */
  uint32_t segment;         /* NVLink segment payload, bytes (the fidelity knob) */
  uint32_t nvls_segment;    /* NVLS traffic's segment payload at most, bytes (0: NCCL's chunk, at most `segment`;
                            ** set: whole chunks up to this, or finer; tools/libfabsim/driver.c, nvls_coarsen) */
  uint64_t pcie_bps;        /* GPU <-> NIC, per direction */
  fab_time_t pcie_latency;  /* ps */
  bool gpudirect;           /* false: host-staged through host memory */
  uint64_t host_bps;        /* host-staged bounce bandwidth per GPU */
  fab_time_t host_latency;  /* host-staged extra latency, ps */
  double gpu_flops;         /* dense BF16 peak, FLOP/s */
  double gpu_efficiency;
  uint64_t memory_bps;      /* GPU memory (HBM) bandwidth, bits/s */
  uint64_t reduce_bps;      /* reduction throughput of a collective on the GPU, bits/s of input (0: free; default
                            ** memory_bps / 3: a reduction reads two operands and writes one in HBM, and NCCL
                            ** fuses it into the copy; plain hosts have no GPU and reduce for free) */
  bool pxn;                 /* cross-rail traffic relays through the local GPU on the destination's rail */
} FabGpuSpec;

/* One entry of fabric.failures: at `at`, the link between elements a and b
** (both directions) goes down, comes back up, or takes a new rate; or,
** from the start only, a new latency. */
#define FAB_MAX_LINK_CHANGES 256
typedef struct FabLinkChange {
  char a[FAB_NAME_LEN], b[FAB_NAME_LEN]; /* the elements' names ("leaf3", "spine2") */
  uint32_t order;           /* its place in fabric.failures */
  fab_time_t at;            /* ps */
  int8_t down;              /* 1: goes down, 0: comes back up, -1: its state does not change */
  uint64_t bps;             /* its new rate, bits/s; 0: unchanged */
  fab_time_t latency;       /* its new latency, ps (at 0 only) */
  bool set_latency;
  const FabCfgNode *node;   /* the entry (for errors) */
} FabLinkChange;

/* Everything the cluster and fabric sections say, in model structs (the
** schema rows of fabric_cfg.c fill these fields directly). */
#define FAB_TOPO_MAX_TIERS 3 /* switch tiers of a topology (fat-tree: edge, agg, core) */

/* fabric.switch.sharp: InfiniBand SHARP in the fabric's switches
** (models/sharp.h; limits per switch model, sourced in sharp_trees.c). */
typedef enum { FAB_SHARP_QUANTUM = 0, FAB_SHARP_QUANTUM2 = 1, FAB_SHARP_QUANTUM_X800 = 2 } FabSharpModel;
extern const char *const fab_sharp_model_names[]; /* "quantum", "quantum-2", "quantum-x800", NULL */
typedef enum { FAB_SHARP_FALLBACK = 0, FAB_SHARP_FAIL = 1 } FabSharpNoRes;
extern const char *const fab_sharp_nores_names[]; /* "fallback", "fail", NULL */
/* When a job takes its streaming tree's resources: for the communicator's life (NCCL's SHARP plugin locks
** at communicator init), or for each reduction (the others wait for them). */
typedef enum { FAB_SHARP_LOCK_COMM = 0, FAB_SHARP_LOCK_OP = 1 } FabSharpLock;
extern const char *const fab_sharp_lock_names[]; /* "communicator", "operation", NULL */
typedef struct FabSharpCfg {
  bool enabled;
  uint32_t model;           /* FabSharpModel */
  fab_time_t latency;       /* an aggregation node's reduction, beyond the switch's latency, ps */
  uint64_t reduce_bps;      /* an aggregation node's reducer per tree, bits/s of output (0: as packets arrive) */
  uint64_t window;          /* bytes a member may have outstanding in one reduction (the tree's buffer) */
  uint32_t trees;           /* trees the subnet can hold */
  uint32_t streams;         /* communicators whose streaming trees may share a switch (quantum) or a port (quantum-2
                            ** on) */
  bool per_port;            /* streams counts per port, not per switch */
  uint32_t on_no_resources; /* FabSharpNoRes */
  uint32_t lock;            /* FabSharpLock */
  uint64_t sat_threshold;   /* a reduction of fewer bytes per member runs on the low-latency tree (LLT) */
  uint32_t ost_payload;     /* LLT: payload bytes per outstanding transaction (a packet) */
  uint32_t osts;            /* LLT: transactions a member may have outstanding */
} FabSharpCfg;

typedef struct FabFabricCfg {
  FabTopoSpec topo;         /* for GPU nodes, topo.hosts counts NIC ports (network attachments) */
  FabGpuSpec gpu;
  FabSwitchCfg sw;
  FabNicCfg nic;
  uint32_t cc_preset;       /* congestion_control.preset: index in the presets (dcqcn-paper, dcqcn-mlx) */
  uint32_t routing;         /* fabric.switch.routing: 0 ecmp */
  /* fabric.switch.routing_per_tier: the switches of tier tier_name[i] (their names' prefix, without the
  ** plane of multi-rail: "leaf", "spine", "edge", ...) route by tier_routing[i] (FabRouting), the others
  ** by sw.routing */
  uint32_t ntiers;
  const char *tier_name[FAB_TOPO_MAX_TIERS]; /* static */
  uint32_t tier_routing[FAB_TOPO_MAX_TIERS];
  bool routing_kept;        /* some tier routes by sw.routing (not every tier named) */
  uint64_t nic_preset_bps;  /* GPU nodes: the preset's NIC rate (topo.host_bps is what the NIC links at), 0: none */
  const FabCfgNode *nccl;   /* cluster.nccl (NULL: absent), for the workload layer */
  bool credits_auto;        /* InfiniBand credits not given: fab_fabric_cfg_credits sizes them */
  uint64_t credits_given;   /* InfiniBand credits given (fabric.switch.credits), 0: auto */
  uint32_t credit_vls;      /* InfiniBand: the VLs in use that share the buffer (fab_fabric_cfg_credits) */
  const FabCfgNode *sw_node, *credits_node; /* fabric.switch and its credits (for errors), NULL: absent */
  uint32_t nchanges;        /* fabric.failures, in time order (stable) */
  FabLinkChange changes[FAB_MAX_LINK_CHANGES];
  fab_time_t reroute_delay; /* fabric.reroute_delay: ps from a link's change of state to ECMP switches' new routes */
  bool failure_baseline;    /* fabric.failure_baseline: run again without the failures to report what they cost */
  uint32_t ff_mode;         /* fabric.fast_forward: FabFfMode */
  fab_time_t ff_window;     /* fabric.fast_forward_window: ps a steady state must hold, and the jumps' unit */
  double ff_tolerance;      /* fabric.fast_forward_tolerance: how much a rate or a queue may change and count as steady */
  FabSharpCfg sharp;        /* fabric.switch.sharp */
} FabFabricCfg;

/* fabric.fast_forward (tools/libfabsim/fastfwd.h): off, on, or auto (on for
** training steps of at least FAB_FF_AUTO_RANKS ranks). */
typedef enum { FAB_FF_OFF = 0, FAB_FF_ON = 1, FAB_FF_AUTO = 2 } FabFfMode;
extern const char *const fab_ff_mode_names[];

typedef struct FabTopology {
  FabTopoSpec spec;
  uint32_t nhosts;         /* endpoints: hosts, or GPU ranks */
  FabNic *nics;            /* nhosts, endpoint i is nics[i] (a GPU's transport endpoint, for GPU nodes) */
  FabGpu *gpus;            /* nhosts: endpoint i's compute stream and reducer */
  uint32_t nattach;        /* network attachment points (= nhosts for hosts; NIC ports for GPU nodes) */
  FabPort **attach;        /* nattach: the port each one connects to the network from */
  uint32_t nnet;           /* switches[0 .. nnet) are the network; then PCIe/NIC elements and NVSwitches */
  uint32_t nnvs;           /* NVLink domains */
  FabSwitch **nvs;         /* nnvs: each domain's NVSwitch (transfer none: also in switches) */
  uint32_t nswitches;
  FabSwitch **switches;
  uint32_t *rank_attach;   /* GPU nodes: nhosts, the first attachment serving each rank (rank_nattach of them
                           ** in a row); NULL: endpoint i is attachment i */
  uint32_t rank_nattach;
} FabTopology;

/* Read `cluster:` and `fabric:` into `out` (both nodes may be NULL where
** absent; `root` locates errors about missing sections). A setting that has
** no effect under the other choices (ECN with congestion control none,
** DCQCN's parameters under none, DCQCN without ECN, PFC or credits on the
** other transport) is accepted and a sentence naming it ("FILE:L:C: KEY: has
** no effect: WHY") is added to `warnings` (char *; may be NULL). */
gboolean fab_fabric_cfg_read(const FabCfgNode *root, FabFabricCfg *out, GPtrArray *warnings, GError **err);

/* InfiniBand's credits, once the workload is known: `prios` has bit v set
** when some flow uses priority (virtual lane) v. A switch grants each
** (ingress port, VL in use) an equal share of its buffer, unless
** fabric.switch.credits says how much. When the credits cannot cover the
** credit loop's bandwidth-delay product (a link's rate over two link
** latencies, the switch's, and a packet each way), a sentence saying what
** that costs is added to `warnings` (char *). Other transports: nothing. */
gboolean fab_fabric_cfg_credits(FabFabricCfg *f, uint32_t prios, GPtrArray *warnings, GError **err);

/* Build the fabric. NICs get no flow table yet (see FabNic.flows), GPUs no
** owner (FabGpu.done). */
FabTopology *fab_topology_build(const FabFabricCfg *cfg);
void fab_topology_free(FabTopology *t);

/* Give every element of the fabric its stable id, from `first` on, in a
** fixed order of positions: endpoint i's NIC, its ports (network, NVLink) and
** its GPU, for i = 0..nhosts-1; then every switch in build order (network
** switches, PCIe elements, NVSwitches) and its ports in port order (a
** port's wire shares its id: fab_port_number). Returns the next free id. */
uint32_t fab_topology_number(FabTopology *t, uint32_t first);

/* Elements fab_topology_number numbers, without building (for size checks). */
uint64_t fab_topology_elements(const FabFabricCfg *cfg);

/* What building cfg's topology will take, before it is built (the load-time
** resource estimate): switches (network, PCIe and NVLink), their ports,
** endpoints, the routes every switch keeps (one per endpoint), and the
** bytes of all of it (packets in flight left out: the pool grows with use). */
typedef struct FabFootprint {
  uint64_t switches, ports, endpoints, routes, bytes;
} FabFootprint;
FabFootprint fab_topology_footprint(const FabFabricCfg *cfg);

/* ---- SHARP trees (sharp_trees.c) ------------------------------------------ */

/* The trees a run's communicators claim, planned on a built topology and
** then made on the run's own (built from the same configuration: switches and
** ports have the same numbers). A tree joins a communicator's members: its
** root is the switch nearest to all their leaves (the fewest hops to the
** farthest, then the highest tier, then the first), its nodes the switches on
** the shortest paths from the root to the members' leaves (breadth first,
** ports in order). */
typedef struct FabSharpPlan FabSharpPlan;
FabSharpPlan *fab_sharp_plan_new(const FabTopology *t, const FabSharpCfg *cfg);
void fab_sharp_plan_free(FabSharpPlan *p);

/* The tree for job `job`'s communicator of ranks[0..n) (any order, n >= 2),
** claimed once and found again on later calls. -1 when the fabric has no
** room for it, with *why saying what is short (transfer full). */
int32_t fab_sharp_plan_claim(FabSharpPlan *p, uint32_t job, const uint32_t *ranks, uint32_t n, char **why);

/* Trees claimed; tree i's members (sorted ranks) and job. */
uint32_t fab_sharp_plan_ntrees(const FabSharpPlan *p);
const uint32_t *fab_sharp_plan_members(const FabSharpPlan *p, uint32_t i, uint32_t *n);
/* Tree i's root switch (its name), its aggregation nodes and its job. */
const char *fab_sharp_plan_root(const FabSharpPlan *p, uint32_t i, uint32_t *nodes, uint32_t *job);

/* Collectives that found no tree (claims refused): they ran without SHARP
** (on_no_resources: fallback). */
uint32_t fab_sharp_plan_refused(const FabSharpPlan *p);

/* Make the claimed trees `s` does not have yet on `t` (built from the same
** configuration), in claim order: tree i is s's tree i. Under lock:
** operation each tree's reductions lock what it holds (its switches, or
** its ports: fab_sharp_set_locks). */
void fab_sharp_plan_install(const FabSharpPlan *p, FabTopology *t, FabSharp *s);

/* Ports of the whole fabric in a stable order (NIC ports, then each switch's
** ports): call fn on each. */
void fab_topology_foreach_port(FabTopology *t, void (*fn)(FabPort *pt, void *ctx), void *ctx);

/* Recompute the routes of the network switches for which want(sw, ctx)
** says so (all when want is NULL) from the links that are up, as a routing
** protocol would once it converged: a switch reaches an endpoint over its
** links up to the endpoint's network attachments when it has any, else over
** every link up to a switch one hop nearer. An endpoint no switch can reach
** keeps its routes. On a healthy fabric this is what the builders made
** (every kind but ring, whose clockwise routing is not shortest-path).
** Rail-matched lanes (GPUs with several NICs, switch.h) are routed the
** same way toward their one NIC; a lane no longer reachable falls back to
** its rank's route. Returns the (switch, endpoint or lane) routes that
** changed (reroute.c). */
uint64_t fab_topology_reroute(FabTopology *t, bool (*want)(const FabSwitch *sw, void *ctx), void *ctx);

/* fab_topology_reroute with the links' state as down(pt, ctx) says (a
** direction pt is down), not as the ports' own `down`: a parallel run's
** partition routes its switches from the changes it applied itself, while
** another partition's thread may be setting its ports' state. */
uint64_t fab_topology_reroute_seen(FabTopology *t, bool (*want)(const FabSwitch *sw, void *ctx),
                                   bool (*down)(const FabPort *pt, void *ctx), void *ctx);

/* The egress port of element `a` on its link to element `b` (names as in
** the /links table), or NULL; *why says which name is missing or that they
** are not linked (reroute.c). */
FabPort *fab_topology_find_link(FabTopology *t, const char *a, const char *b, const char **why);

/* A short human description: "leaf-spine: 16 leaves x 8 hosts, 8 spines (1:1)". */
char *fab_topology_describe(const FabTopoSpec *spec);

#endif

/* What the readers of a scenario's cluster: and fabric: sections share
** (fabric_cfg.c, multipath_cfg.c). Not a public interface: topology.h is. */
#ifndef FAB_FABRIC_CFG_INT_H
#define FAB_FABRIC_CFG_INT_H

#include "topology.h"

/* What is read: the model structs, and the nodes read by hand. */
typedef struct Read {
  FabFabricCfg f;
  const FabCfgNode *nic, *nvlink, *pcie, *gpu;                    /* cluster: */
  int nvls;                                                        /* cluster.nvlink.nvls: -1 not given */
  const FabCfgNode *topology, *link, *sw, *cc;                     /* fabric: */
  const FabCfgNode *pfc, *ecn, *sharp, *credits;                   /* fabric.switch: */
  const FabCfgNode *priorities, *xoff, *headroom;                  /* fabric.switch.pfc: */
  GPtrArray *warnings; /* settings with no effect under the current choices (NULL: not kept) */
  const FabCfgNode *tiers, *pods; /* fabric.topology.tiers, pods (refused) */
  const FabCfgNode *switches, *ghosts, *glinks; /* fabric.topology.switches (ring: a number; graph: a list), hosts,
                                                ** links (graph) */
  uint32_t ar_pick, flowlet_pick; /* fabric.switch.adaptive_pick, flowlet_pick */
  uint32_t reliability;           /* cluster.nic.reliability */
  const FabCfgNode *per_tier;     /* fabric.switch.routing_per_tier */
  uint32_t spray;                 /* cluster.nic.spray */
  uint32_t srd_header;            /* cluster.nic.srd_header */
  const FabCfgNode *failures;     /* fabric.failures */
  const FabCfgNode *fabric;       /* fabric: */
  const char *node_topology;      /* cluster.node_topology */
} Read;

/* Topology kinds by FabTopoKind (fabric.topology.kind's words). */
extern const char *const fab_topo_kind_names[];
/* fabric.switch.adaptive_pick and flowlet_pick's words. */
extern const char *const fab_adaptive_picks[], *const fab_flowlet_picks[];
/* cluster.nic.reliability's words: go-back-n, selective. */
extern const char *const fab_reliabilities[];

/* A setting that does nothing under the other choices (ECN marking with no
** ECN-capable sender, DCQCN's parameters under algorithm: none) is taken,
** with a warning naming it, so that one knob of an A/B comparison can be
** changed alone. Real contradictions stay errors. */
void fab_fabric_no_effect(Read *r, const FabCfgNode *at, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
#define no_effect fab_fabric_no_effect /* the readers' short name */

/* fabric.switch.routing, its parameters and routing_per_tier into r->f
** (multipath_cfg.c). */
gboolean fab_fabric_read_routing(Read *r, uint32_t mtu_wire, GError **err);

/* fabric.switch.sharp into r->f.sharp (sharp_trees.c), once the transport
** is known. */
gboolean fab_fabric_read_sharp(Read *r, GError **err);

/* fabric.failures into r->f.changes, in time order. */
gboolean fab_fabric_read_failures(Read *r, GError **err);

/* cluster.nic.reliability, dup_threshold, spray and paths into r->f.nic,
** once cluster.nic was applied. */
gboolean fab_fabric_read_transport(Read *r, GError **err);

/* An unloaded round trip across the fabric's longest path, ps: a packet of
** mtu_wire bytes out, store and forward at every link, its ACK back.
** *links (links crossed one way) and *ser (one packet's time to send at the
** slower of link and host rate, ps) if not NULL (fabric_cfg.c). */
double fab_fabric_round_trip(const Read *r, uint32_t mtu_wire, double *links, double *ser);

/* fabric.congestion_control into r->f.nic.cc (cc_cfg.c), once the
** transport is known. */
gboolean fab_fabric_read_cc(Read *r, GError **err);

/* What ties congestion control to the rest (ECN, the transport, the line
** rate), once everything is read (cc_cfg.c). */
gboolean fab_fabric_check_cc(Read *r, GError **err);

/* What congestion control sets once the fabric is known: hpcc's base RTT
** when not given (the longest unloaded round trip, as HPCC's ns-3 model
** takes the largest over host pairs), and the switches' telemetry. */
void fab_fabric_cc_finish(Read *r, uint32_t mtu_wire);

#endif

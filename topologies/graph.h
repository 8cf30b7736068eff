/*
** fabric.topology kind: graph: an explicit fabric, read from the scenario
** (graph.c) and built by build.c. Its keys:
**
**   switches: a list; each item a name, or {name, count, tier}: count n
**             makes n switches name0 .. name<n-1> (a group, named by
**             `name`); tier (leaf | spine | core, default leaf) selects
**             routing_per_tier's routing and SHARP's preference.
**   hosts:    a list of {switch, count, order}: the network attachments
**             (hosts, or GPU nodes' NIC ports: node x nics_per_node + i),
**             in order, count on each switch of the group (order: block,
**             each switch's in a row; round-robin, one per switch in turn).
**   links:    a list of {a, b, bandwidth, latency, count}: every switch of
**             a linked to every switch of b, count links each (bandwidth
**             and latency default to fabric.link's).
**
** Routing is shortest path in hops, every equal-cost port in the ECMP group
** (reroute.c computes it, as after a failure).
*/
#ifndef FAB_GRAPH_H
#define FAB_GRAPH_H

#include "sim/config.h"
#include "sim/time.h"
#include "models/packet.h"

extern const char *const fab_graph_tier_names[]; /* "leaf", "spine", "core", NULL */

typedef struct FabGraphSwitch {
  char name[FAB_NAME_LEN];
  int tier;         /* index in fab_graph_tier_names */
  uint32_t nports;  /* its hosts and link ends */
} FabGraphSwitch;

typedef struct FabGraphLink {
  uint32_t a, b;    /* switch indices */
  uint64_t bps;     /* 0: fabric.link's */
  fab_time_t latency;
  bool latency_set; /* else fabric.link's */
} FabGraphLink;

typedef struct FabGraph {
  uint32_t nsw, nattach, nlinks;
  FabGraphSwitch *sw;
  uint32_t *attach_sw;  /* nattach: the switch of each attachment */
  FabGraphLink *links;  /* in the order their ports are numbered on both ends */
  uint32_t diameter;    /* the most switch-to-switch hops between two switches with hosts */
  uint32_t max_ports;
  fab_time_t max_latency; /* the longest latency given to a link */
  uint64_t max_bps;       /* the fastest rate given to a link (0: none) */
  bool default_latency;   /* some link takes fabric.link's */
} FabGraph;

/* Read the topology map `topo` (kind: graph) into g. FALSE + err
** (file:line:col) when it is not a connected fabric. */
gboolean fab_graph_read(const FabCfgNode *topo, FabGraph *g, GError **err);

/* A rail-optimized fabric in three tiers as a graph: `pods` pods of
** pod_nodes GPU nodes of `rails` NICs (attachment node x rails + i); pod p's
** rail leaves p<p>.rail<i> (tier leaf, its nodes' NIC i) and spines
** p<p>.spine<j> (each leaf linked to each of the pod's spines), then
** core<c> (tier core), each linked to every pod's spines. */
void fab_graph_rail3(FabGraph *g, uint32_t pods, uint32_t pod_nodes, uint32_t rails, uint32_t spines, uint32_t cores);

/* A dual-ToR leaf-spine as a graph: `leaves` (even) leaves of hpl host
** ports and `spines` spines, each leaf linked to each spine of its plane
** (planes 1: all; 2: even leaves to spines [0, spines/2), odd ones to the
** rest, so the two sides of a pair never meet, HPN's dual plane);
** attachment a (of pair a / 2) on leaf 2 (a / 2hpl) + a % 2, port
** a % 2hpl / 2: an endpoint's two ports on the two leaves of a pair. */
void fab_graph_dual_tor(FabGraph *g, uint32_t leaves, uint32_t hpl, uint32_t spines, uint32_t planes);
void fab_graph_clear(FabGraph *g);

#endif

/*
** Switch: ports with per-priority egress queues over one shared buffer.
**
** A packet arriving on a port is routed (one lookup: destination endpoint ->
** group of equal-cost egress ports -> ECMP pick), admitted or dropped by the
** buffer, and queued at the egress port, ready to leave after the
** port-to-port latency.
**
** Buffer: `buffer` bytes shared by all ports. Admission uses the dynamic
** threshold of Choudhury & Hahne: a packet joins egress queue (port, prio)
** only if that queue's bytes plus the packet stay within
** alpha x (buffer - bytes in use), and the buffer itself has room. Otherwise
** it is tail-dropped (lossy mode). Occupancy is also accounted per ingress
** port and priority (what PFC will need), and released when the packet
** starts serialisation at egress.
**
** The struct is private (switch.c): builders, watchdogs and reports go
** through the functions below.
*/
#ifndef FAB_SWITCH_H
#define FAB_SWITCH_H

#include <glib.h>
#include "port.h"
#include "sim/rng.h"

/* PFC (IEEE 802.1Qbb) on the lossless priorities. Occupancy is counted per
** (ingress port, priority). Above the XOFF threshold the switch sends a
** PAUSE frame for that priority to the upstream device on that port, and
** refreshes it while the threshold is still exceeded. Packets that arrive
** after XOFF (in flight on the cable, or sent before the PAUSE took effect)
** go into that (port, priority)'s headroom. When occupancy falls to XON, the
** switch sends a PAUSE with zero quanta (resume). Lossless priorities are
** never dropped by the egress threshold, only when their headroom
** overflows. */
typedef struct FabPfcCfg {
  bool enabled;
  uint32_t lossless;     /* bit p: priority p is lossless */
  bool dynamic;          /* XOFF at alpha x free shared buffer, else the static xoff */
  uint64_t xoff;         /* static XOFF threshold, bytes per (ingress port, priority) */
  uint64_t xon;          /* static: resume at or below this; dynamic: this far below XOFF */
  double alpha;          /* dynamic XOFF factor */
  uint64_t headroom;     /* bytes per (ingress port, priority); 0: auto (fab_pfc_headroom_auto) */
  fab_time_t response;   /* upstream's reaction time to a PAUSE, for the auto headroom */
  uint32_t quanta;       /* pause time per frame, units of 512 bit times (1..65535) */
  uint32_t mtu_wire;     /* largest packet on the wire, bytes (for the auto headroom) */
  fab_time_t watchdog;   /* the run driver checks for progress this often (0: never) */
} FabPfcCfg;

/* ECN marking at egress, RED style, per (port, priority) queue: no mark
** below kmin bytes, always at kmax and above, and probability
** pmax x (q - kmin) / (kmax - kmin) in between. Only ECN-capable packets
** (FAB_PKTF_ECT) are marked. q is the queue the packet joins (on enqueue)
** or leaves (on dequeue). */
typedef struct FabEcnCfg {
  bool enabled;
  uint64_t kmin, kmax;   /* bytes */
  double pmax;           /* marking probability at kmax (0..1] */
  bool on_dequeue;       /* mark when the packet leaves the queue, else when it joins */
} FabEcnCfg;

/* Headroom that absorbs everything that can still arrive on a link after a
** XOFF: the packet that crossed XOFF, our packet being sent when XOFF is
** decided, the PAUSE frame, the cable both ways, the upstream's reaction
** time, and its packet being sent. */
uint64_t fab_pfc_headroom_auto(uint64_t bps, fab_time_t latency, fab_time_t response, uint32_t mtu_wire);

/* How a switch picks among a route group's equal-cost ports, for a packet
** with FAB_PKTF_AR (any other packet takes the ECMP hash's port):
**   ECMP         the hash of the flow's 5-tuple (fab_ecmp_pick), per flow;
**   ADAPTIVE     per packet, the least loaded member: one whose priority is
**                not paused (PFC) first, then the emptiest egress (queued
**                bytes in whole `ar_quantum`s, plus one while a packet is
**                being serialised), then the fastest link; ties
**                by the switch's own RNG stream. ar_choices 2 compares two
**                distinct members drawn at random (power of two choices)
**                instead of all;
**   FLOWLET      per flowlet: a flow keeps its port while its packets come
**                less than `flowlet_gap` apart, and after a longer gap is
**                placed again (the least loaded member, or a random one
**                with flowlet_random). The switch tracks flowlets in a table
**                of `flowlet_table` entries indexed by the flow's hash, as
**                hardware does: flows that share an entry share a flowlet;
**   ROUND_ROBIN  per packet, each member of the group in turn;
**   SPRAY        per packet, a member drawn from the switch's RNG stream
**                (random packet spraying, Dixit et al., INFOCOM 2013). */
typedef enum { FAB_ROUTE_ECMP = 0, FAB_ROUTE_ADAPTIVE, FAB_ROUTE_FLOWLET, FAB_ROUTE_ROUND_ROBIN,
               FAB_ROUTE_SPRAY } FabRouting;

/* Names in the order of FabRouting, NULL-terminated (YAML enum). */
extern const char *const fab_routing_names[];

typedef struct FabSwitchCfg {
  fab_time_t latency;  /* ps: port-to-port, arrival of the last bit to eligible at egress */
  uint64_t buffer;     /* bytes shared by all ports (PFC headroom not included) */
  double alpha;        /* dynamic threshold factor (> 0) */
  uint32_t nprio;      /* priorities (queues per port), 1..8 */
  uint64_t ecmp_seed;  /* seeds the per-switch hash salt */
  uint32_t hash;       /* FabHashKind (models/ecmp.h) */
  uint32_t tier;       /* 0: host-facing (leaf, edge, rail), 1: spine or aggregation, 2: core (CRC32's window) */
  uint64_t seed;       /* scenario seed: the switch's RNG stream (random marking) */
  FabPfcCfg pfc;
  FabEcnCfg ecn;
  uint64_t pfc_reserved; /* bytes of the configured buffer set aside as headroom (buffer is the rest) */
  uint64_t credits;      /* InfiniBand: buffer per (ingress port, VL) granted as credits; 0: none */
  uint32_t mtu_wire;     /* a full packet on the wire, bytes */
  bool lanes;            /* a packet with a lane takes member (lane - 1) mod n of its route's group, not the
                         ** hash's (the PCIe element between a GPU and its NICs) */
  uint32_t routing;      /* FabRouting */
  uint32_t ar_choices;   /* ADAPTIVE: members compared, 0: all, 2: two drawn at random */
  uint32_t ar_quantum;   /* ADAPTIVE, FLOWLET: bytes per queue-depth level compared (>= 1) */
  fab_time_t flowlet_gap; /* FLOWLET: ps of idle after which a flow may move */
  uint32_t flowlet_table; /* FLOWLET: entries, a power of two */
  bool flowlet_random;   /* FLOWLET: a new flowlet takes a random member, not the least loaded */
  fab_time_t int_rtt;    /* HPCC's telemetry (models/hpcc.h): T, the fabric's base RTT, ps; each data packet
                         ** leaving a port carries the highest utilisation of the ports it left; 0: none */
} FabSwitchCfg;

/* What a switch counted. */
typedef struct FabSwitchStats {
  uint64_t drops, drop_bytes; /* packets (and their wire bytes) dropped here, for any reason */
  uint64_t unroutable;        /* of which: no route to their destination */
  uint64_t hdrm_drops;        /* of which: lossless packets whose PFC headroom overflowed */
  uint64_t ecn_marks;         /* packets marked CE */
  uint64_t moves;             /* FLOWLET: flowlets placed on another port than their flow's last one */
  uint64_t used;              /* bytes held in egress queues now */
  uint64_t max_used;          /* high-water mark of `used` */
} FabSwitchStats;

typedef struct FabSwitch FabSwitch;

/* Check the switch's buffer ledgers and its ports' (debug_checks builds,
** every event): what each (ingress port, priority) holds adds up to the
** shared buffer in use plus the headroom, the buffer is never over its size,
** headroom never over its reservation, and the admitted bytes are the bytes
** its egress queues hold (besides packets made here). Aborts on the first
** broken one. */
void fab_switch_check(const FabSwitch *sw);

/* sizeof(FabSwitch), which is opaque (for resource estimates). */
size_t fab_switch_struct_bytes(void);

/* A switch with `nports` unconnected ports that routes to `nendpoints`
** endpoints. Its stable `name` ("leaf3") names it and its ports ("leaf3:p7")
** in outputs and derives its ECMP salt and its RNG stream (of cfg->seed).
** Transfer full. */
FabSwitch *fab_switch_new(const char *name, const FabSwitchCfg *cfg, uint32_t nports, uint32_t nendpoints);
void fab_switch_free(FabSwitch *sw);

/* Set port `i` up with the link's rate and latency; returns it. */
FabPort *fab_switch_port_init(FabSwitch *sw, uint32_t i, uint64_t bps, fab_time_t latency);

/* ---- what the switch is ----------------------------------------------- */

FabNode *fab_switch_node(FabSwitch *sw);                 /* its node (name, element header) */
const char *fab_switch_name(const FabSwitch *sw);
uint32_t fab_switch_nports(const FabSwitch *sw);
FabPort *fab_switch_port_at(FabSwitch *sw, uint32_t i);  /* port i, i < nports */
const FabSwitchCfg *fab_switch_cfg(const FabSwitch *sw);
const FabSwitchStats *fab_switch_stats(const FabSwitch *sw);
/* Replace them (a run over processes gathers each switch's from the process that ran it). */
void fab_switch_set_stats(FabSwitch *sw, const FabSwitchStats *st);

/* The switch a node is, or NULL when it is another kind of node. */
FabSwitch *fab_switch_of(FabNode *n);

/* ---- routing ----------------------------------------------------------- */

/* A group of equal-cost egress ports; returns its id. */
uint32_t fab_switch_add_group(FabSwitch *sw, const uint32_t *ports, uint32_t n);

/* Route packets for endpoint `dst` to group `g`. */
void fab_switch_set_route(FabSwitch *sw, uint32_t dst, uint32_t g);

/* The group endpoint `dst` is routed to, UINT32_MAX when it has none. */
uint32_t fab_switch_route_group(const FabSwitch *sw, uint32_t dst);

/* The ports of group g (*n of them). Valid until the next fab_switch_add_group. */
const uint32_t *fab_switch_group_ports(const FabSwitch *sw, uint32_t g, uint32_t *n);

/* Endpoints the route table covers. */
uint32_t fab_switch_nendpoints(const FabSwitch *sw);

/* A new, empty route table for `nendpoints` endpoints (the groups stay). */
void fab_switch_reset_routes(FabSwitch *sw, uint32_t nendpoints);

/* Rail-matched routes (GPUs with several NICs, as aws-ofi-nccl and NCCL pair
** a sender's NIC i with the receiver's NIC i): a network switch may route a
** packet with lane L (1-based: the sending NIC's index among its GPU's NICs,
** plus one) toward NIC L of its destination GPU rather than toward any of
** the GPU's NICs. fab_switch_set_lanes gives the table `nlanes` lanes per
** endpoint, all unset (a packet then takes dst's route); a reset of the
** routes drops it. Switches with cfg.lanes (inside GPU nodes) do not use it. */
void fab_switch_set_lanes(FabSwitch *sw, uint32_t nlanes);
void fab_switch_set_lane_route(FabSwitch *sw, uint32_t dst, uint32_t lane, uint32_t g); /* g: UINT32_MAX unsets */
uint32_t fab_switch_lane_group(const FabSwitch *sw, uint32_t dst, uint32_t lane);    /* UINT32_MAX: unset */

/* The egress port a packet to `dst` with `hash` takes under ECMP, or NULL;
** _lane: a packet with `lane` (0: none; a switch with cfg.lanes is not asked). */
FabPort *fab_switch_next_hop(const FabSwitch *sw, uint32_t dst, uint32_t hash);
FabPort *fab_switch_next_hop_lane(const FabSwitch *sw, uint32_t dst, uint32_t hash, uint32_t lane);

/* ---- the switch API of watchdogs and analyses ----------------------------- */

/* The egress ports of sw whose priority-`prio` queue holds packets that came
** in on port `in`: up to `max` into out; returns how many there are. Cost:
** every packet queued at that priority. */
uint32_t fab_switch_holders(FabSwitch *sw, uint32_t in, uint32_t prio, FabPort **out, uint32_t max);

/* Bytes held from ingress port `in` at priority `prio` (shared buffer and
** headroom), and of those in PFC headroom. */
uint64_t fab_switch_ingress_bytes(const FabSwitch *sw, uint32_t in, uint32_t prio);
uint64_t fab_switch_headroom_bytes(const FabSwitch *sw, uint32_t in, uint32_t prio);

/* ---- NVLS (models/nvls.h) ------------------------------------------------ */

typedef struct FabNvls FabNvls;

/* The switch's in-switch reduction groups, made on first use. */
FabNvls *fab_switch_nvls(FabSwitch *sw);

/* ---- SHARP (models/sharp.h) ----------------------------------------------- */

typedef struct FabSharp FabSharp;

/* The fabric's SHARP trees, which name this switch as an aggregation node
** (transfer none: the run owns them). Its SHARP packets go to them. */
void fab_switch_set_sharp(FabSwitch *sw, FabSharp *s);

/* A PCIe element (FabSwitchCfg.lanes): route group g leads to its NICs. A
** SHARP contribution from one of its GPUs leaves by its lane's member. */
void fab_switch_set_up_group(FabSwitch *sw, uint32_t g);

/* Kick port pt (a GPU's, into this element) whenever a packet leaves this
** switch: a mesh GPU holds a segment while its link's queue here is full
** (FabNic.mesh_out) and must hear when it drains. */
void fab_switch_set_kick(FabSwitch *sw, FabPort *pt);

/* Fast-forward (tools/libfabsim/fastfwd.c): every time the switch holds
** moves dt later (its flowlets' last packets; its ports: fab_port_shift;
** PAUSE timers are events, moved with the others by the caller). */
void fab_switch_shift(FabSwitch *sw, fab_time_t dt);

#endif

/*
** The packet: the only thing that moves through the fabric.
**
** A FabPkt is at most 64 bytes (checked at compile time) and never copied:
** it is handed from queue to link to queue by pointer, and freed once, at its
** destination or where it is dropped. Packets live in the engine's object
** pool (sim/pool.h, made with sizeof(FabPkt) by whoever makes the engine),
** so there is no malloc per packet, and a run checks it ends with none live.
*/
#ifndef FAB_PACKET_H
#define FAB_PACKET_H

#include <stdint.h>
#include <string.h>
#include "sim/engine.h"

/* Element names ("leaf3", "gpu12") and port names ("leaf3:p17") fit in this. */
#define FAB_NAME_LEN 32

/* Packet types. DATA, ACK, NAK: the reliable transport (models/nic.h). CNP:
** a congestion notification from a receiver NIC to the sender (DCQCN).
** PAUSE: an IEEE 802.1Qbb PFC frame for class `prio`, with the pause time in
** `seq` (quanta of 512 bit times; 0 resumes). NVLS (models/nvls.h), `seq`
** the segment: NVLS_UP, a GPU's contribution to an NVSwitch reduction
** (`dst` the group); NVLS_RED, a reduced segment from the switch to the
** member that owns it; NVLS_MC, a member's multicast store into the switch
** (`dst` the group); NVLS_DOWN, the switch's copy of it to each member.
** SHARP (models/sharp.h), `seq` the packet: SHARP_UP, a contribution or a
** partial result toward a tree's root (`dst` the group, `hash` the
** aggregation node it goes to); SHARP_DOWN, the result on its way down (to
** a node: `dst` the group, `hash` the node; to a member: `dst` the member,
** `flow` its flow). */
enum { FAB_PKT_DATA = 0, FAB_PKT_ACK = 1, FAB_PKT_NAK = 2, FAB_PKT_CNP = 3, FAB_PKT_PAUSE = 4, FAB_PKT_NVLS_UP = 5,
       FAB_PKT_NVLS_DOWN = 6, FAB_PKT_NVLS_RED = 7, FAB_PKT_NVLS_MC = 8, FAB_PKT_SHARP_UP = 9,
       FAB_PKT_SHARP_DOWN = 10 };

/* An in-network packet, NVLS or SHARP: made and consumed by endpoints and
** the switches that reduce (absorbed n to 1, copied 1 to n: never ACKed). */
static inline int fab_pkt_is_nvls(uint8_t type) { return type >= FAB_PKT_NVLS_UP; }
static inline int fab_pkt_is_sharp(uint8_t type) { return type >= FAB_PKT_SHARP_UP; }

/* Flags. LAST: the flow's last packet. ECN: congestion experienced (CE,
** marked by a switch). RETX: sent again. ECT: ECN-capable (set by a sender
** whose congestion control reacts to marks). HDRM: a switch counted it in PFC
** headroom (the switch's own bit while it holds the packet). TRAIN: data of
** more than one packet moved as one (fabric.segment), a header per mtu. AR:
** a switch that routes adaptively may choose its port (data of a flow at
** least FabNicCfg.ar_threshold long); others take the ECMP hash's. ECE: an
** ACK echoes a congestion mark on the entropy value `ev` (spraying). */
enum { FAB_PKTF_LAST = 1, FAB_PKTF_ECN = 2, FAB_PKTF_RETX = 4, FAB_PKTF_ECT = 8, FAB_PKTF_TRAIN = 0x10,
       FAB_PKTF_AR = 0x20, FAB_PKTF_ECE = 0x40, FAB_PKTF_HDRM = 0x80 };

typedef struct FabPkt {
  struct FabPkt *next; /* link in whatever FIFO holds it */
  fab_time_t ready;    /* ps: earliest time it may leave its queue; on a wire, when the packet after it arrives (port.c) */
  fab_time_t sent;     /* ps: when the NIC put it on the wire (data) or the data's time (ack) */
  uint32_t flow;       /* flow id */
  uint32_t seq;        /* data: packet sequence number in the flow; ack/nak: next expected */
  uint32_t src, dst;   /* endpoint numbers (ack: from receiver to sender) */
  uint32_t hash;       /* ECMP hash of the flow's 5-tuple, this direction */
  uint32_t wire;       /* bytes on the wire: payload + headers + framing */
  uint32_t payload;    /* payload bytes */
  uint16_t in_port;    /* ingress port at the switch holding it */
  uint8_t prio;        /* priority / traffic class */
  uint8_t type;        /* FAB_PKT_* */
  uint8_t flags;       /* FAB_PKTF_* */
  uint8_t hops;        /* links crossed so far */
  uint8_t lane;        /* the flow's lane (FabSwitchCfg.lanes), 0: none */
  union {
    struct {
      uint16_t ev;      /* a sprayed flow's entropy value index (data: the one it took; ACK: echoed) */
      uint16_t mark_ev; /* ACK of a sprayed flow under avoid (not srd) with FAB_PKTF_ECE: the value that carried
                        ** the congestion mark it echoes (ev is the answered packet's) */
    };
    uint32_t ahead;     /* data of a streamed NVLink flow (nic.h, FabFlow.stream): it left this many ps before
                        ** its last byte was made, and counts as arrived that much after it does */
  };
} FabPkt;

_Static_assert(sizeof(FabPkt) <= 64, "a packet header must fit in 64 bytes");

/* A packet with every field zeroed, from the engine's pool (which must hold
** objects of sizeof(FabPkt)). */
static inline FabPkt *fab_pkt_alloc(FabEngine *eng) {
  return (FabPkt *)memset(fab_pool_take(eng->pool), 0, sizeof(FabPkt));
}

/* Return a packet to the engine's pool. */
static inline void fab_pkt_free(FabEngine *eng, FabPkt *p) { fab_pool_put(eng->pool, p); }

#endif

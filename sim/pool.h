/*
** Packets and the packet pool.
**
** A FabPkt is the only thing that moves through the fabric. It is at most 64
** bytes (checked at compile time) and never copied: it is handed from queue
** to link to queue by pointer, and freed once, at its destination or where it
** is dropped. Packets come from a FabPool that allocates them in slabs and
** recycles them through a free list; there is no malloc per packet. The pool
** counts live packets so a run can check it ends with none (no leak, no
** double free).
*/
#ifndef FAB_POOL_H
#define FAB_POOL_H

#include <stddef.h>
#include <stdint.h>
#include "time.h"

/* Packet types. CNP: a congestion notification from a receiver NIC to the
** sender (DCQCN). PAUSE: an IEEE 802.1Qbb PFC frame for class `prio`, with
** the pause time in `seq` (quanta of 512 bit times; 0 resumes). */
/* NVLS_UP: a GPU's contribution to an NVSwitch in-switch reduction (`dst` is
** the NVLS group, `seq` the segment); NVLS_DOWN: the reduced segment the
** switch multicasts back to each member. */
enum { FAB_PKT_DATA = 0, FAB_PKT_ACK = 1, FAB_PKT_NAK = 2, FAB_PKT_CNP = 3, FAB_PKT_PAUSE = 4, FAB_PKT_NVLS_UP = 5,
       FAB_PKT_NVLS_DOWN = 6 };
/* ECT: the packet is ECN-capable; CE: congestion experienced (marked). */
/* HDRM: a switch counted it in PFC headroom (switch-private while queued there). */
enum { FAB_PKTF_LAST = 1, FAB_PKTF_ECN = 2, FAB_PKTF_RETX = 4, FAB_PKTF_ECT = 8, FAB_PKTF_HDRM = 0x80 };

typedef struct FabPkt {
  struct FabPkt *next; /* link in whatever FIFO holds it */
  fab_time_t ready;    /* ps: earliest time it may leave its queue / arrives at the link end */
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
} FabPkt;

_Static_assert(sizeof(FabPkt) <= 64, "a packet header must fit in 64 bytes");

typedef struct FabPool FabPool;

/* A pool that grows in slabs of `slab` packets (0: a default of 4096). */
FabPool *fab_pool_new(size_t slab);

/* Free the pool and all its slabs; live packets become invalid. */
void fab_pool_free(FabPool *pool);

/* A packet with every field zeroed. Never fails (aborts on out of memory). */
FabPkt *fab_pkt_alloc(FabPool *pool);

/* Return a packet to the pool. */
void fab_pkt_free(FabPool *pool, FabPkt *p);

/* Packets allocated and not yet freed. */
size_t fab_pool_live(const FabPool *pool);

/* Packets the pool holds in its slabs (live + free): its high-water mark. */
size_t fab_pool_capacity(const FabPool *pool);

/* Total allocations served. */
uint64_t fab_pool_allocs(const FabPool *pool);

#endif

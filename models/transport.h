/*
** Transports: how many bytes each packet carries besides its payload.
**
** `mtu` in a scenario is the payload per packet (the RDMA path MTU, e.g.
** 4096); the header and framing bytes below are added on the wire, so a full
** RoCEv2 packet with MTU 4000 occupies 4082 byte times on the link.
**
**   RoCEv2 data   Ethernet 14 + IPv4 20 + UDP 8 + IB BTH 12 + ICRC 4 + FCS 4
**                 = 62 bytes of headers, plus 20 bytes of Ethernet framing
**                 (preamble 7 + start delimiter 1 + inter-frame gap 12) = 82.
**   RoCEv2 ACK    the same headers + AETH 4 = 66, + 20 framing = 86.
**   InfiniBand    LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 bytes (no Ethernet
**   data          framing; link encoding is already in the data rate).
**   InfiniBand    26 + AETH 4 = 30.
**   ACK
**   SRD data      Ethernet 14 + IPv4 20 + UDP 8 + FCS 4 + framing 20 = 66, plus
**   and ACK       the SRD header, which AWS does not publish: a parameter
**                 (cluster.nic.srd_header, 16 B by default, an assumption),
**                 with IPv4 and UDP assumed as the encapsulation ECMP hashes.
** Extended headers that appear on some packets only (RETH 16 bytes on the
** first packet of an RDMA WRITE, GRH 40 bytes across subnets) are left out.
*/
#ifndef FAB_TRANSPORT_H
#define FAB_TRANSPORT_H

#include <stdint.h>

typedef enum { FAB_TRANSPORT_ROCEV2 = 0, FAB_TRANSPORT_INFINIBAND = 1, FAB_TRANSPORT_SRD = 2 } FabTransportKind;

/* Names in the order of FabTransportKind, NULL-terminated (YAML enum). */
extern const char *const fab_transport_names[];

typedef struct FabTransport {
  FabTransportKind kind;
  uint32_t data_overhead; /* bytes added to each data packet's payload on the wire */
  uint32_t ack_bytes;     /* wire bytes of an ACK or NAK */
} FabTransport;

/* The header figures for `kind` (table above). */
FabTransport fab_transport_get(FabTransportKind kind);

#endif

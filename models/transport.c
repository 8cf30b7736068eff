/* Header and framing sizes per transport. See transport.h for the sums. */
#include "transport.h"
#include <stddef.h>

const char *const fab_transport_names[] = {"rocev2", "infiniband", "srd", NULL};

enum {
  ETH_HDR = 14, ETH_FCS = 4, ETH_FRAMING = 7 + 1 + 12, IPV4 = 20, UDP = 8,
  IB_LRH = 8, IB_BTH = 12, IB_ICRC = 4, IB_VCRC = 2, IB_AETH = 4,
};

FabTransport fab_transport_get(FabTransportKind kind) {
  FabTransport t = {kind, 0, 0};
  switch (kind) {
  case FAB_TRANSPORT_INFINIBAND:
    t.data_overhead = IB_LRH + IB_BTH + IB_ICRC + IB_VCRC;
    t.ack_bytes = t.data_overhead + IB_AETH;
    break;
  case FAB_TRANSPORT_SRD: /* the SRD header itself is not public: the loader adds cluster.nic.srd_header */
    t.data_overhead = ETH_HDR + IPV4 + UDP + ETH_FCS + ETH_FRAMING;
    t.ack_bytes = t.data_overhead;
    break;
  case FAB_TRANSPORT_ROCEV2:
  default:
    t.data_overhead = ETH_HDR + IPV4 + UDP + IB_BTH + IB_ICRC + ETH_FCS + ETH_FRAMING;
    t.ack_bytes = t.data_overhead + IB_AETH;
    break;
  }
  return t;
}

/* PXN relays: a NIC forwarding other GPUs' data to the network. See nic.h. */
#include "nic.h"
#include <glib.h>

void fab_pxn_relay(FabEngine *eng, FabNic *nic, FabPkt *p) {
  uint32_t dom = nic->cfg.nvl_domain;
  bool local = dom && p->dst / dom == nic->id / dom; /* back to its GPU over NVLink (an ACK, mostly) */
  p->ready = eng->now;
  nic->pxn_relayed++;
  if (local || p->type != FAB_PKT_DATA || nic->port.down) { /* (a failed link loses it, as the port does) */
    fab_port_enqueue(eng, local ? &nic->nvl : &nic->port, p);
    return;
  }
  FabFlow *f = fab_flow_at(nic->flows, p->flow);
  if (!f->srd) { /* the connection is this NIC's (the relay GPU's proxy posts the RDMA): its timer runs from when
                 ** this NIC may send the packet, after the relayed bytes ahead of it, which share the port
                 ** with this GPU's own flows a packet each (at most half of it for them) */
    uint64_t ahead = 2 * nic->relay_bytes + nic->port.qbytes;
    f->deadline = MAX(f->deadline, eng->now + nic->cfg.rto + (fab_time_t)((double)ahead * 8e12 / nic->port.bps));
  }
  p->next = NULL;
  if (nic->relay_tail) nic->relay_tail->next = p;
  else nic->relay_head = p;
  nic->relay_tail = p;
  nic->relay_bytes += p->wire;
  fab_port_kick(eng, &nic->port);
}

FabPkt *fab_pxn_next(FabNic *nic, const FabPort *port) {
  FabPkt *p = nic->relay_head;
  if (!p || ((port->paused | port->nocredit) >> p->prio & 1u)) return NULL;
  nic->relay_head = p->next;
  if (!nic->relay_head) nic->relay_tail = NULL;
  p->next = NULL;
  nic->relay_bytes -= p->wire;
  nic->relay_turn = false; /* this GPU's own flows next, if they have a packet */
  return p;
}

uint64_t fab_pxn_flush(FabEngine *eng, FabNic *nic, uint64_t *bytes) {
  uint64_t n = 0;
  while (nic->relay_head) {
    FabPkt *p = nic->relay_head;
    nic->relay_head = p->next;
    *bytes += p->wire;
    fab_pkt_free(eng, p);
    n++;
  }
  nic->relay_tail = NULL;
  nic->relay_bytes = 0;
  return n;
}

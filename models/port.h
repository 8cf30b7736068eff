/*
** Nodes and ports: the plumbing every network element shares.
**
** A FabNode is anything packets arrive at (NIC, switch). A FabPort is one
** direction of a link: an egress port with per-priority FIFO queues, the
** serialiser that puts one packet at a time on the wire at the link rate, and
** the wire itself (propagation latency) up to the `peer` port at the far end,
** whose owner's `receive` is called when the packet's last bit arrives
** (store-and-forward). A full-duplex link is two ports that are each other's
** peer.
**
** Scheduling (htsim's Queue + Pipe): a port keeps at most one pending
** "serialisation ends" event and at most one "head of the wire arrives"
** event, whatever the number of packets it holds.
**
** The far end of the wire is an element of its own (`wire`): the arrival is
** its event, and what the receiving node does then is keyed by it, not by
** the sending port (engine.h). The two ends of a link then never share an
** event counter, so the keys do not depend on which side of a link a
** parallel run's cut puts either end: the port's handlers run with its
** owner, the wire's with the peer's owner. The wire has the port's id (its
** keys odd, the port's even, an arrival (id, 0)), so equal-time events keep
** the order of ids they had when one element did both.
**
** Queues are strict priority, highest number first. A packet in a queue is
** not sent before its `ready` time (a switch sets it to arrival + port-to-port
** latency). When every queue is empty a port asks its owner's `pull` for a
** packet (a NIC generating data on demand), so NICs never queue whole flows.
*/
#ifndef FAB_PORT_H
#define FAB_PORT_H

#include <stdbool.h>
#include <stdint.h>
#include "packet.h"
#include "sim/engine.h"

#define FAB_MAX_PRIOS 8

typedef struct FabNode FabNode;
typedef struct FabPort FabPort;

struct FabNode {
  FabElem el;        /* its handlers (wake: the node's own timers) and tie key */
  /* a packet arrived over `in` (in->owner == this node); the node owns it now */
  void (*receive)(FabEngine *eng, FabNode *self, FabPkt *p, FabPort *in);
  /* optional: the next packet to send on `port` when its queues are empty */
  FabPkt *(*pull)(FabEngine *eng, FabNode *self, FabPort *port);
  /* optional: `p` left a queue of `port` to be serialised (buffer release) */
  void (*dequeued)(FabEngine *eng, FabNode *self, FabPort *port, FabPkt *p);
  /* optional, a node that returns credits (fab_port_return_credit): bytes it holds that came in through `in` on
  ** VL `vl`, their credits still to go back; what it advertises when the link comes back up is the rest */
  uint64_t (*held)(const FabNode *self, const FabPort *in, uint32_t vl);
  char name[FAB_NAME_LEN]; /* "leaf3", "host12" */
  bool relay;              /* a switch: it takes a train (fabric.segment) as the train's first packet arrives */
};

typedef struct FabPktQ {
  FabPkt *head, *tail;
  uint32_t n;     /* packets */
  uint64_t bytes; /* wire bytes */
} FabPktQ;

struct FabPort {
  /* hot: touched by every packet, in the first three cache lines (the queues follow them); measured in README
  ** "Huge pages" (the port's layout) */
  FabElem el;              /* fab_port_ops, tie key */
  FabNode *owner;          /* the node this port sends from */
  FabPort *peer;           /* the port at the far end; its owner receives */
  FabPkt *tx;              /* being serialised, or NULL */
  FabPkt *fly_head, *fly_tail; /* the wire: serialised, not yet arrived, in order */
  uint64_t qbytes;         /* wire bytes in all queues */
  fab_time_t latency;      /* ps: propagation delay of the wire */
  FabElem wire;            /* the wire's far end: fab_wire_ops, the port's id, its own counter (above) */
  uint64_t tx_bytes;       /* wire bytes serialised */
  uint64_t tx_pkts;        /* packets serialised (= packet hops over this link) */
  fab_time_t tx_last;      /* ps: when the newest packet tx_pkts counts was counted (the fast-forward's rates:
                           ** tools/libfabsim/fastfwd.h) */
  uint32_t ps_per_byte;    /* serialisation time per byte when exact (8e12 % bps == 0), else 0 */
  uint32_t busy_prios;     /* bit p set: queue p is not empty */
  uint32_t paused;         /* bit p set: priority p is paused by the peer (PFC); do not send it */
  uint32_t tx_epoch;       /* `epoch` when the packet on the serialiser started: a later one loses it */
  fab_time_t retry_at;     /* ps: a wake for a not-yet-ready head is pending then */
  uint64_t max_qbytes;     /* deepest the queues got, wire bytes */
  uint64_t bps;            /* link rate, bits per second */
  FabPkt *ctrl_head, *ctrl_tail; /* link-level frames (PFC PAUSE): sent first, never paused */
  uint32_t epoch;          /* times it went down (an arrival scheduled before then finds its packet gone) */
  /* trains (fabric.segment): one sent to a relay arrives when its first packet of cut_mtu payload + cut_ovh
  ** header bytes would (cut-through at packet granularity), while this link stays busy for the whole train */
  uint32_t cut_mtu, cut_ovh; /* 0: every packet arrives whole */
  uint32_t nocredit;       /* bit v: VL v has less credit than one full packet (for pulls) */
  /* a link that failed (fab_port_set_down) */
  bool down;               /* nothing this port sends arrives; its owner is not pulled */
  bool credit_fc;          /* InfiniBand link-level flow control: this egress sends only against credits */
  bool cut;                /* a parallel run's partitions hold its two ends (fab_port_mark_cut): each packet on
                           ** the wire is an arrival event of its own (arg: the packet), as the far end's
                           ** partition may run while this one sends */
  /* the link from the peer, as this end's partition sees it when the peer's wire is cut (fab_port_set_far_down):
  ** a packet that finds in_epoch past the epoch it was sent in was on the wire when the link went down */
  bool in_down;
  uint32_t in_epoch;
  /* egress queues, strict priority, highest index first */
  FabPktQ q[FAB_MAX_PRIOS];
  /* warm */
  uint32_t index;          /* port number at the owner */
  uint32_t nprio;          /* queues in use, 1..FAB_MAX_PRIOS */
  /* InfiniBand link-level flow control: the far end's free buffer per VL */
  uint32_t credit_unit;    /* a full packet on the wire, bytes: the nocredit threshold */
  int64_t credits[FAB_MAX_PRIOS]; /* bytes the far end can still take, per VL (= priority) */
  int64_t credit_max;      /* what each VL started with */
  int64_t presync[FAB_MAX_PRIOS]; /* returns made after the far end came up that arrived before its figure */
  /* credits after a link comes back up (fab_port_set_down): the far end advertises its buffer less what it
  ** still holds from before, a link latency later; a credit return made before the far end came up (its
  ** `cgen` then) is in that figure and counts no more */
  uint16_t cgen;           /* times the link came back up, at this end (credit events carry it modulo 2^13) */
  uint8_t synced;          /* bit v: VL v has had the far end's figure since the last up */
  uint8_t part, far;       /* a parallel run: the partitions its owner and its wire's far end run in
                           ** (fab_port_mark_cut; 0: none) */
  uint64_t lost, lost_bytes; /* packets NICs made (not PAUSE frames nor NVLS segments) lost because it was down:
                           ** queued, on the serialiser or on the wire when it went down, or sent to it since */
  uint64_t in_lost, in_lost_bytes; /* those packets (counted as the peer's `lost` when the run ends) */
  uint64_t *in_lost_by;    /* NULL, or [3 x in_epoch]: packets, bytes and arrivals of them sent in each epoch
                           ** (the down that lost them is the one after); the caller of fab_port_set_far_down
                           ** owns it */
  /* counters */
  uint64_t drops;          /* packets dropped at this egress (set by the owner) */
  uint64_t drop_bytes;     /* their wire bytes */
  uint64_t pause_tx;       /* PFC PAUSE frames sent (XOFF and XON) */
  uint64_t pause_rx;       /* PFC PAUSE frames received */
  uint64_t ecn_marks;      /* packets marked CE at this egress (set by the owner) */
  fab_time_t paused_ps;    /* total time with at least one priority paused, ps */
  fab_time_t paused_since; /* when the pause mask last became non-zero */
  fab_time_t paused_until[FAB_MAX_PRIOS]; /* ps: pause of priority p ends then */
};

/* Serialisation time of `bytes` on this port's link, ps. */
static inline fab_time_t fab_port_ser(const FabPort *pt, uint32_t bytes) {
  return pt->ps_per_byte ? (fab_time_t)bytes * pt->ps_per_byte : fab_time_ser(bytes, pt->bps);
}

/* Change the link rate (topology builders; not while packets are in flight). */
void fab_port_set_rate(FabPort *pt, uint64_t bps);

extern const FabOps fab_port_ops, fab_wire_ops;

/* Give the port and its wire the stable id `id` (their counters restart:
** the port's at 2, the wire's at 1; (id, 0) is its arrivals'). Returns
** id + 1. */
static inline uint32_t fab_port_number(FabPort *pt, uint32_t id) {
  fab_elem_set_id(&pt->el, id);
  fab_elem_set_id(&pt->wire, id);
  pt->el.tie |= 2;
  pt->wire.tie |= 1;
  return id + 1;
}

/* Set up `pt` as port `index` of `owner` with an idle, empty link (its
** element id is 0 until the builder numbers it: fab_port_number). */
void fab_port_init(FabPort *pt, FabNode *owner, uint32_t index, uint64_t bps, fab_time_t latency,
                   uint32_t nprio);

/* Check the port's ledgers (debug_checks builds, every event): each queue's
** packet and byte counts against its list, the queues' total, the busy
** mask, credits within [0, what they started with]. Aborts with the
** port's name on the first broken one. */
void fab_port_check(const FabPort *pt);

/* Join two ports as the two directions of one full-duplex link. */
void fab_port_connect(FabPort *a, FabPort *b);

/* Queue `p` (transfer full) at priority p->prio; start sending if idle.
** The caller has done admission: this never drops. */
void fab_port_enqueue(FabEngine *eng, FabPort *pt, FabPkt *p);

/* Bytes of a PFC PAUSE frame on the wire: a 64-byte minimum frame + 20 of framing. */
#define FAB_PAUSE_WIRE 84

/* Send a PFC PAUSE frame for priority `prio` on this port's link, ahead of
** every queue: `quanta` x 512 bit times of pause at the peer, 0 to resume. */
void fab_port_send_pause(FabEngine *eng, FabPort *pt, uint32_t prio, uint32_t quanta);

/* Turn on credit-based flow control on this egress: `bytes` of credit per
** VL, and a full packet of `unit` wire bytes. */
void fab_port_set_credits(FabPort *pt, uint64_t bytes, uint32_t unit);

/* The far end freed `bytes` of VL `vl` for us: the credit reaches this port
** after the link's latency (a flow-control update travelling the wire). */
void fab_port_return_credit(FabEngine *eng, FabPort *pt, uint32_t vl, uint32_t bytes);

/* The link this port sends on goes down (every packet on its wire, on its
** serialiser or in its queues is lost, and so is any packet queued here until
** it comes back, even if it comes back before that packet's end; the
** owner's `dequeued` hears of each queued one, and its `pull` is not
** called) or comes back up. Credits, if counted, then come from the far
** end, as InfiniBand's link training gives them: its buffer for the link
** less what it still holds from before (FabNode.held), a link latency
** later, nothing sent until then; a far end that holds nothing of its own
** (no `held`) gives them back full at once. Call it for both ports of a
** link. On a
** cut link (fab_port_mark_cut) the packets on the wire are events of the
** far end's partition, which sees the change itself
** (fab_port_set_far_down). */
void fab_port_set_down(FabEngine *eng, FabPort *pt, bool down);

/* The link from in->peer, whose wire is cut (fab_port_mark_cut), goes down
** or up as seen by in's partition, which runs the wire's arrivals: packets
** in->peer sent before a down and arriving after it are lost here
** (in->in_lost), as one engine loses them from the wire. `by`: NULL, or
** room for 3 x (the link's downs + 1) counters (in->in_lost_by). */
void fab_port_set_far_down(FabPort *in, bool down, uint64_t *by);

/* A parallel run's end: the packets pt's wire lost on arrival (counted by
** the peer's partition, fab_port_set_far_down) into pt's own counters, as
** one engine counts them. */
void fab_port_fold_far_losses(FabPort *pt);

/* Set pt->cut, pt->part and pt->far from the partitions of a parallel run
** (sim/par.h): whether the port and its wire's far end run in different
** ones, and which. Before the run, on every port. */
struct FabPar;
void fab_port_mark_cut(FabPort *pt, const struct FabPar *par);

/* Time this port has spent with some priority paused, up to `now`, ps. */
fab_time_t fab_port_paused_time(const FabPort *pt, fab_time_t now);

/* The owner may have something to pull now: start sending if idle. */
void fab_port_kick(FabEngine *eng, FabPort *pt);

/* Free every packet queued, being sent, or on the wire (end of a run cut by
** stop_time). Returns the number freed and adds their wire bytes to *bytes. */
uint64_t fab_port_flush(FabEngine *eng, FabPort *pt, uint64_t *bytes);
/* An event left pending when a run stopped: if it is a packet's arrival on a
** cut wire (fab_port_mark_cut), free the packet as fab_port_flush would and
** return 1 (adding its wire bytes to *bytes, PAUSE frames and NVLS segments
** not counted, returning 0); else 0, nothing done. */
uint64_t fab_port_flush_event(FabEngine *eng, const void *target, uint64_t arg, uint64_t *bytes);

/* Fast-forward (tools/libfabsim/fastfwd.c): every time the port and its
** packets hold (queued, serialised, on the wire, PAUSE frames) moves dt
** later, as if the run had been dt later all along. Not on a cut port. */
void fab_port_shift(FabPort *pt, fab_time_t dt);

/* Packets on the wire or in the serialiser of this port (not in queues). */
uint64_t fab_port_in_flight(const FabPort *pt);

#endif

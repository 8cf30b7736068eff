/*
** SRD's sender (`transport: srd`, AWS's Scalable Reliable Datagram on EFA):
** what a NIC keeps per flow on top of selective repeat (nic.h) to deliver
** out of order over many paths, resend exactly what was lost, and steer
** away from paths that lose or queue.
**
** AWS publishes SRD's aims, not its algorithms (Shalev et al., "A
** Cloud-Optimized Transport Protocol for Elastic and Scalable HPC", IEEE
** Micro 40(6), 2020: packets go "over as many network paths as possible,
** while avoiding overloaded paths", delivered out of order, retransmitted
** by the Nitro card at microsecond timescales). fabsim's mechanism for
** them, documented in README as a model, not AWS's code:
**
**  - every data packet takes an entropy value (nic.h, spraying) and gets a
**    stamp: its number among the packets that value carried;
**  - the receiver ACKs every packet, naming it, its entropy value and its
**    send time; ACKs of a flow share one path, so they arrive in the order
**    the receiver sent them;
**  - ECMP switches keep one path per entropy value and links are FIFO, so
**    packets of one value arrive in the order they left: when the ACK of
**    stamp k on value v arrives, every packet of v with a lower stamp still
**    unacknowledged was lost (or its ACK was). No duplicate-ACK threshold,
**    no reordering window: reordering across paths is never taken for loss;
**  - a packet the path rule cannot see (the last on its value) is presumed
**    lost once it has been out for the flow's RTO, RFC 6298's
**    srtt + 4 rttvar, at least `rto_min` (`rto` before the first sample),
**    doubled for each time that packet was sent before (a timer per packet,
**    so each backs off on its own: one flow-wide backoff let the packets
**    whose ACKs were lost push a lost one's timer ever further away); a
**    packet that timed out `max_timeouts` times fails the run;
**  - a copy of a packet the receiver holds is answered with a D-SACK naming
**    it, so the sender stops resending what only lost its ACK;
**  - a value that lost a packet, or carried one whose RTT exceeded the
**    flow's lowest by `avoid_delay`, is skipped once (as ECN echoes are);
**  - the RTT estimators and the CC's state belong to the connection (the
**    NIC's flows to one peer, FabSrdConn): a flow starts with what the
**    flows before it learned.
**
** Under switches that route per packet (adaptive, spray, round-robin) or
** after a reroute, a value's packets may pass each other: the path rule
** then resends packets that were only late (the receiver's D-SACKs count
** them).
*/
#ifndef FAB_SRD_H
#define FAB_SRD_H

#include "nic.h"

#define FAB_SRD_MASK (FAB_SACK_WINDOW - 1)

typedef struct FabSrdTx {
  struct FabSrdTx *next;                   /* the NIC's free list */
  fab_time_t sent[FAB_SACK_WINDOW];        /* by PSN mod FAB_SACK_WINDOW: when it last left */
  uint32_t stamp[FAB_SACK_WINDOW];         /* its number among the packets of its value */
  uint8_t ev[FAB_SACK_WINDOW];             /* the entropy value it took */
  uint8_t tries[FAB_SACK_WINDOW];          /* times it was sent before (its timer backs off by them) */
  uint32_t path_sent[FAB_SPRAY_MAX_PATHS]; /* packets each value has carried */
  uint32_t path_acked[FAB_SPRAY_MAX_PATHS];/* one past the highest stamp acknowledged on each value */
  uint64_t lost[FAB_SACK_WORDS];           /* bit i: PSN snd_una + i presumed lost and not resent yet */
  fab_time_t srtt, rttvar;                 /* RFC 6298 (srtt 0: no sample yet) */
  fab_time_t min_rtt;                      /* the lowest RTT seen */
} FabSrdTx;

/* What a connection (a NIC's flows to one destination) carries from one
** flow to the next: SRD keeps its state per connection (AWS: per-connection
** rate limiting), and NCCL's pieces to a peer share one, so a piece starts
** with the RTT and the rate the pieces before it learned, not at line rate
** with a queue it would take for the base RTT. */
typedef struct FabSrdConn {
  fab_time_t srtt, rttvar, min_rtt;
  FabCcFlow cc;
} FabSrdConn;

/* Forget everything (a flow starts). */
void fab_srd_reset(FabSrdTx *s);

/* PSN `psn` of f leaves now on entropy value `ev`. */
void fab_srd_sent(FabFlow *f, uint32_t psn, uint16_t ev, fab_time_t now);

/* An RTT sample of f (ps) through value `ev`: RFC 6298's estimators, and
** the value skipped once when it is `avoid_delay` above the lowest (0: never).
** Returns true when it was. */
bool fab_srd_rtt(FabFlow *f, fab_time_t rtt, uint16_t ev, fab_time_t avoid_delay);

/* f's retransmission timeout for a packet sent the first time. */
fab_time_t fab_srd_rto(const FabFlow *f, fab_time_t rto_min, fab_time_t rto_init);

/* The ACK of PSN `psn`, sent on value `ev`, arrived; call it after f's
** cumulative and selective state took the ACK in (snd_una moved, psn's bit
** set), with `old_una` the oldest unacknowledged PSN before it. Marks the
** packets the path rule finds lost; returns how many. */
uint32_t fab_srd_acked(FabFlow *f, uint32_t old_una, uint32_t psn, uint16_t ev);

/* The window moved k PSNs on (snd_una advanced). */
void fab_srd_shift(FabFlow *f, uint32_t k);

/* Mark lost every outstanding packet of f out for its timeout by `now` (rto
** doubled per earlier send of it); returns how many, in *next when the next
** one will be (FAB_TIME_MAX: none), and in *tries the most timeouts one
** of them has now had. */
uint32_t fab_srd_expire(FabFlow *f, fab_time_t now, fab_time_t rto, fab_time_t *next, uint32_t *tries);

/* The oldest PSN presumed lost and not resent, or UINT32_MAX. */
uint32_t fab_srd_next_lost(const FabFlow *f);

/* libfabric EFA's read-based protocols above SRD (nic.h): flow f, with a
** read_rtt and at least FAB_EFA_READ_MIN bytes, starts on `nic` now: its
** runt (f->runt, taken from the receiver's budget) and, with a read part,
** its hold (f->hold_seq, hold_until) and a place among the NIC's reads
** under way. _end: f is acknowledged (once); both go back. */
void fab_efa_read_begin(FabNic *nic, FabFlow *f, fab_time_t now);
void fab_efa_read_end(FabNic *nic, FabFlow *f);

#endif

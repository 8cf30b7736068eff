/*
** NIC: the endpoint's network interface and its reliable transport.
**
** Each flow is a send queue (a queue pair): its payload is cut into packets
** of at most `mtu` bytes, generated on demand when the NIC's port is free, so
** data leaves at line rate with no queue of whole flows. Active flows take
** turns packet by packet (round robin). ACKs and NAKs are queued ahead of
** data.
**
** Congestion control (cc.h) gives each flow a rate. A flow below line rate
** is paced: its next packet may not be handed to the port before its last
** one plus wire bytes x 8 / rate. The round robin skips flows not yet
** eligible, and flows whose priority the peer has paused (PFC, the port's
** `paused` mask; the port pulls again when a pause lifts); when no flow is
** eligible but some wait on pacing, the NIC keeps one wake-up, at the
** earliest eligible time. Line-rate flows are never paced, so `none` (the
** default) generates packets exactly as without congestion control.
**
** Transport (RoCEv2/IB RC style, go-back-N):
**  - the receiver accepts only the next expected packet sequence number
**    (PSN); it ACKs cumulatively every `ack_interval` packets and on the last
**    one; on the first out-of-order packet it sends one NAK naming the PSN it
**    expects, and no other until that PSN arrives;
**  - the sender, on a NAK, goes back to that PSN; when no ACK advances for
**    `rto`, it goes back to the oldest unacknowledged PSN and sends again;
**  - or selective repeat, with `selective` (below), or SRD's delivery on
**    top of it, with `srd` (srd.h);
**  - a flow is complete when its receiver holds every byte in order; the
**    sender frees its state when the last ACK comes back.
** So every flow completes on a lossy fabric; `max_timeouts` consecutive
** timeouts without progress mark the run as failed instead of looping.
*/
#ifndef FAB_NIC_H
#define FAB_NIC_H

#include "cc.h"
#include "port.h"
#include "transport.h"
#include "sim/rng.h"

typedef struct FabNicCfg {
  uint64_t bps;            /* line rate, bits/s */
  uint32_t mtu;            /* payload bytes per packet */
  uint32_t seg;            /* fabric.segment: payload bytes per train on the network (a multiple of mtu, each
                           ** mtu of it with its own headers); 0: packet by packet */
  fab_time_t rto;          /* ps: retransmission timeout */
  fab_time_t msg_gap;      /* ps: the least time between two network messages' (flows') first packets (the
                           ** inverse of the endpoint's message rate); 0: none */
  uint32_t ack_interval;   /* ACK every this many in-order packets (>= 1) */
  bool selective;          /* receivers place data out of order and ACK selectively, senders resend only what is
                           ** lost (below); false: go-back-N */
  uint32_t dup_threshold;  /* selective: a packet is presumed lost once this many later ones were acknowledged */
  uint32_t max_timeouts;   /* consecutive timeouts without progress before failing */
  uint32_t nprio;          /* priorities on the NIC port (= the switches') */
  FabTransport transport;  /* header sizes */
  uint64_t ecmp_seed;      /* for the 5-tuple hash */
  uint8_t hash;            /* FabHashKind: the switches' hash function (models/ecmp.h) */
  uint64_t seed;           /* scenario seed: the NIC's RNG stream (CC jitter, later) */
  FabCcCfg cc;             /* congestion control; zeroed = FAB_CC_NONE (line rate) */
  /* NVLink: endpoints r and s share a domain iff nvl_domain && r / nvl_domain == s / nvl_domain;
  ** their flows go over the `nvl` port, in segments of nvl_mtu payload bytes */
  uint32_t nvl_domain;     /* endpoints per NVLink domain; 0: no NVLink */
  uint64_t nvl_bps;        /* NVLink rate per direction, bits/s */
  uint32_t nvl_mtu;        /* payload bytes per NVLink segment (the fidelity knob) */
  uint32_t nvl_overhead;   /* header bytes per NVLink segment (and the size of its ACKs) */
  double nvls_eff;         /* NVLS segments carry this much data per byte on NVLink (multimem efficiency) */
  uint64_t ar_threshold;   /* data of a flow of at least this many bytes may be routed adaptively (FAB_PKTF_AR;
                           ** NCCL's NCCL_IB_AR_THRESHOLD: bulk RDMA writes), smaller flows and control packets
                           ** take the ECMP hash's port */
  bool ar_imm;             /* a flow whose data may be routed adaptively (ar) is an RDMA write followed by a
                           ** zero-byte write-with-immediate that completes it, not AR-eligible, as NCCL posts
                           ** them on InfiniBand (NCCL_IB_ADAPTIVE_ROUTING): one more header-only packet */
  uint8_t spray;           /* FabSpray: how data packets of network flows take entropy values (below) */
  uint32_t paths;          /* spraying: entropy values per flow, a power of two <= FAB_SPRAY_MAX_PATHS */
  bool srd;                /* transport srd (srd.h): selective repeat with per-path loss detection, an ACK per
                           ** packet, RTT-based per-packet timers */
  fab_time_t rto_min;      /* srd: the timer's floor, ps */
  bool srd_ordered;        /* srd: a flow with `ordered` set completes only after the flows its sender posted to
                           ** the same receiver before it (below) */
  bool avoid_rtt;          /* spray avoid with selective receivers (not srd): RTTs steer it too (avoid_delay given) */
  fab_time_t avoid_delay;  /* srd, spray avoid: a value whose packet came back this much above the lowest RTT is
                           ** skipped once, ps (0: RTT does not steer) */
  uint32_t stripe_rails;   /* srd, GPUs with several NICs: their number; a flow of a lane longer than stripe_min is
                           ** striped over them (below); 0: no striping */
  uint64_t stripe_min;     /* bytes: aws-ofi-nccl's minimum stripe */
  uint32_t pxn_rails;      /* PXN: GPUs per node (= NICs, rail = rank % pxn_rails); a flow to another
                           ** node on another rail goes over NVLink to the local GPU on the destination's
                           ** rail, which forwards it to its NIC; 0: off */
} FabNicCfg;

/* Selective repeat (FabNicCfg.selective), after RC with out-of-order data
** placement (ConnectX-5 and later, with adaptive routing): the receiver
** holds any packet within FAB_SACK_WINDOW PSNs of the next one it expects
** (later ones are dropped), and answers each out-of-order packet at once with
** an ACK naming the next expected PSN and, selectively, the one it got
** (FabPkt.payload = that PSN + 1); in-order data is ACKed every ack_interval
** packets as in go-back-N, and at once when it fills a gap. The sender keeps
** at most FAB_SACK_WINDOW PSNs beyond the oldest unacknowledged one in
** flight, presumes a PSN lost once dup_threshold later ones were
** acknowledged (TCP's fast retransmit, RFC 5681: 3), or all it has not
** heard of after `rto`, and resends only those. A receiver that gets a
** packet it already holds answers with a D-SACK (RFC 2883: an ACK with
** FAB_PKTF_RETX) carrying the deepest reordering it saw in the flow (ev:
** PSNs ahead + 1); the sender raises that flow's threshold to it (at most
** FAB_SACK_WINDOW - 1), as Linux TCP raises its reordering level from
** tcp_reordering towards tcp_max_reordering (ip-sysctl documentation), so
** one spurious resend teaches the flow how deep its paths reorder; the
** NIC keeps it per destination for the flows that follow (NCCL's pieces of
** one connection share a QP), and frees it with fab_nic_clear. */
#define FAB_SACK_WINDOW 256 /* no public figure for a NIC's out-of-order tracking: an assumption (README) */
#define FAB_SACK_WORDS (FAB_SACK_WINDOW / 64)

/* Host-driven spraying (FabNicCfg.spray), after Ultra Ethernet's entropy
** value: the NIC varies the UDP source port of a flow's data packets, so
** that ordinary ECMP switches hash them onto different paths. A flow has
** `paths` entropy values (its own source port's neighbours); packet by
** packet it takes them in turn, in an order shuffled by the NIC's RNG at
** each pass (FAB_SPRAY_ROUND_ROBIN). FAB_SPRAY_AVOID also marks its data
** ECN-capable, the receiver echoes a congestion mark in its next ACK with
** the entropy value that carried it, and the sender skips that value once
** at its next pass (csg-htsim's EQDS source, sim/eqds.cpp, penalizePath /
** nextEntropy, does the same with a penalty of 1). With selective
** receivers, losses steer it too, as EQDS penalises a path on a NACK: a
** PSN presumed lost has its value skipped once as it is resent (the sender
** keeps each PSN's value in flight, FabFlow.ev_of); and when `avoid_delay`
** is given (avoid_rtt), delay: each ACK names the value of the packet it
** answers and echoes its send time, and a value whose packet came back
** more than avoid_delay above the flow's lowest RTT is skipped once. ACKs, NAKs and
** CNPs keep the flow's one hash; NVLink flows do not spray. */
typedef enum { FAB_SPRAY_NONE = 0, FAB_SPRAY_ROUND_ROBIN = 1, FAB_SPRAY_AVOID = 2 } FabSpray;
#define FAB_SPRAY_MAX_PATHS 256
extern const char *const fab_spray_names[]; /* by FabSpray: none, round-robin, avoid */

/* Message order under srd (FabNicCfg.srd_ordered): SRD delivers packets
** out of order and libfabric's EFA provider puts an endpoint's messages back
** in order per peer when the application asks for it (FI_ORDER_SAS, as MPI
** does), in a reorder window of FI_EFA_RECVWIN_SIZE messages (16384 by
** default; libfabric man/fi_efa.7.md). A flow with `ordered` is such a
** message: its sender numbers it when it posts it (msg_seq, per receiver)
** and its receiver completes it (f->end, the done callback) only once every
** message before it from that sender has completed; one that arrives whole
** before them is held. The window is not enforced: EFA refuses messages
** beyond it, and fabsim holds any number. NCCL's path is never ordered
** (aws-ofi-nccl matches its messages by tag and asks for no order). */

/* libfabric EFA's send protocols for a message from GPU memory
** (prov/efa/src/rdm/efa_rdm_msg.c, efa_rdm_msg_select_rtm; the sizes in
** efa_hmem.c and efa.h), as aws-ofi-nccl's SENDRECV protocol uses them: a
** flow the owner gave a read_rtt, of fewer than FAB_EFA_READ_MIN bytes,
** goes at once (eager). A longer one is read-based. With no read-based
** message of this NIC under way (the domain's num_read_msg_in_flight) and
** runt budget left toward its receiver (FAB_EFA_RUNT_SIZE less the runt
** bytes sent there and not acknowledged), its first min(budget, bytes)
** bytes, rounded down to 64, go at once (the runt); the receiver reads the
** rest, which therefore leaves read_rtt after the flow's start (the
** request's way there, the read request's way back). Without, all of it
** waits read_rtt (long read). A message the runt covers whole has no read
** part. The runt's budget and the domain's count are given back when the
** flow is acknowledged (libfabric: the runt packets' send completions, the
** EOR after the read). Packets are whole: the runt is rounded up to the
** flow's packets. A read-based message counts as sent (FabNic.sent) once
** its runt has left, or at its start for a long read: libfabric takes the
** next message on at once, and the reads overlap. The handshake's first
** messages (long-CTS) are not modelled, and a runt packet lost and due for
** resending while the read part waits waits with it (rare: a loss within
** the first read round trip). */
#define FAB_EFA_RUNT_SIZE 307200u /* libfabric prov/efa/src/efa.h EFA_DEFAULT_RUNT_SIZE */
#define FAB_EFA_RUNT_ALIGN 64u    /* rdm/efa_rdm_ep.h: CUDA memory's alignment */
/* efa_hmem.c: CUDA's min_read_msg_size = max_msg_sz - the largest packet
** header (168 B, rdm/efa_rdm_pkt_type.c) + 1, with EFA's max_msg_sz of
** 8928 B (an assumption: reported by fi_info, not in the source) */
#define FAB_EFA_READ_MIN 8761u
/* aws-ofi-nccl opens a domain per NIC (rail) of a GPU and sends a striped
** message as a message per rail: each rail has its own count of reads
** under way and runt budget per receiver. A message takes from each of its
** rails the runt the scarcest of them allows, the same on each (its
** stripes are equal); a flow that is not striped takes its lane's rail. */
#define FAB_EFA_RAILS 8u

/* Striping (FabNicCfg.stripe_rails), as aws-ofi-nccl's scheduler does on
** EFA (src/nccl_ofi_scheduler.cpp): a message of a GPU with R NICs is cut
** into min(ceil(bytes / stripe_min), R) stripes, that count rounded down to
** a divisor of R, on consecutive NICs; each NIC carries its stripe at
** once. Here a striped flow's data packets take NIC lane + (v mod stripes),
** v their entropy value (or, not sprayed, PSN mod stripes, then the
** packet's value for SRD's path rule), so each value keeps one path and
** the NICs carry equal shares, interleaved rather than in contiguous
** pieces: the same bytes per NIC, at the same time. A flow with no lane
** starts at the GPU's first NIC. ACKs keep the flow's lane. fab_nic_stripes gives the
** count for a network flow of `bytes` (1: not striped). */
static inline uint32_t fab_nic_stripes(const FabNicCfg *cfg, uint64_t bytes) {
  if (cfg->stripe_rails <= 1 || bytes <= cfg->stripe_min) return 1;
  uint64_t k = (bytes + cfg->stripe_min - 1) / cfg->stripe_min;
  if (k > cfg->stripe_rails) k = cfg->stripe_rails;
  while (cfg->stripe_rails % k) k--; /* a divisor of the rails */
  return (uint32_t)k;
}

/* Streaming (FabFlow.stream): a GPU channel's CTA makes an NVLink flow's
** data at max_bps and stores them as it goes, its bytes interleaved on the
** link with other channels'. A packet (an NVLink segment) is a unit of
** account of those bytes: it leaves once its data begin to be made (at most
** FAB_STREAM_AHEAD ps before its last byte is), takes the port for its wire
** time as any packet, and its `ahead` (how much earlier it left than its
** last byte was made) holds it at its receiver: the flow's last packet
** completes the flow no earlier than it would have had it left with its last
** byte made, and the flow counts as sent (FabNic.sent) when that byte is
** made. Channels that make their pieces at once so share the link across
** the making, as their stores do; whole segments made first and then sent at
** the line rate queued behind one another instead, so the time of a piece
** depended on the segment size: on one B200 (32 channels) a ring allreduce
** of 16,000,000 bytes (pieces of two 64 KiB segments) took 101.8 us against
** 65.1 us for 15,728,640 bytes (one segment), and 63.7 us in segments of
** 4 KiB (README, NVLink segments). NVLS members and PXN flows do not stream. */
#define FAB_STREAM_AHEAD UINT32_MAX /* FabPkt.ahead's range (4.29 us) */

/* One flow: what was asked (first block) and its transport state. */
typedef struct FabFlow {
  uint32_t id, src, dst;   /* flow and endpoint numbers (id: the flow's number in the run, which its ECMP
                           ** source port follows) */
  uint32_t slot;           /* its place in the flow table (FabFlowTable), which packets and timers name */
  uint32_t inflight;       /* the sender's share of the packets of it in flight: data packets it made less the
                           ** ACKs, NAKs and CNPs it received (modulo 2^32; fab_flow_in_flight adds the
                           ** receiver's share, rx_inflight: each end writes only its own, so that a parallel run's
                           ** partitions never write one field) */
  uint32_t gen;            /* how many flows held its slot before it: its timer events carry it, so one
                           ** left pending by a released flow is not taken for its successor's */
  /* what a NIC's round robin reads of each waiting flow (nic_pull's walk), on the first cache line with the
  ** fields every packet of it needs: a large run misses in cache on each flow it touches */
  struct FabFlow *rr_next; /* the next in its NIC's round robin */
  fab_time_t next_tx;      /* ps: paced: the next packet may not leave before this */
  fab_time_t hold_until;   /* read-based: packets from hold_seq on (the read part) not before this (0: none) */
  uint64_t rank_bps;       /* the sender's flows with a rank_bps share one pacing gate at this rate (a GPU-side
                           ** protocol limit, such as LL's), 0: none */
  uint8_t prio;            /* priority class */
  uint8_t path;            /* FAB_PATH_NET (the NIC port) or FAB_PATH_NVL (NVLink) */
  uint8_t lane;            /* its packets' lane (FabSwitchCfg.lanes): which NIC of a multi-NIC GPU; 0: none */
  uint8_t stripes;         /* striping: its packets go over this many NICs from `lane` on (below); 0 or 1: one */
  bool nvls;               /* an NVLS member (models/nvls.h): src == dst; its packets go to group nvls_group */
  bool acked;              /* every PSN acknowledged: sender done */
  bool in_rr;              /* in the NIC's round robin */
  bool timer_armed;        /* a timer event is pending */
  uint64_t bytes;          /* payload */
  fab_time_t start;        /* ps: posted at the sender */
  fab_time_t end;          /* ps: last byte at the receiver; 0 while running */
  bool ordered;            /* srd with srd_ordered: a message delivered in its sender's order (below); set by the
                           ** owner before posting (the driver: flows not of an NCCL expansion) */
  bool stream;             /* NVLink, not NVLS: with max_bps, a packet leaves once its data begin to be made and
                           ** counts as arrived once they could have (below) */
  uint32_t msg_seq;        /* ordered: its number among its sender's messages to its receiver, from 0 */
  uint8_t nvls_mode;       /* FabNvlsMode: AR (contributes npkts segments, multicasts the reduced ones it owns,
                           ** receives npkts), RS (contributes npkts, receives the reduced ones it owns), AG
                           ** (multicasts its npkts, receives every member's), SHARP (contributes npkts packets
                           ** into a fabric tree over the network, at most sharp_win outstanding, receives
                           ** npkts results) */
  uint32_t nvls_group;     /* NVLS group at the domain's NVSwitch */
  uint32_t nvls_member, nvls_n; /* its index in the group and the group's size: it owns segments k = member (mod n) */
  uint32_t nvls_own;       /* AR: segments it owns */
  uint32_t nvls_red;       /* AR: reduced segments received so far */
  uint32_t nvls_mc;        /* AR: of them, multicast so far */
  uint32_t nvls_need;      /* segments to receive before it is done (counted in rcv_nxt) */
  uint64_t nvls_rx;        /* the payload bytes those segments carry */
  uint32_t sharp_node;     /* SHARP: the aggregation node its packets go to (nvls_group is the SHARP group) */
  uint32_t sharp_win;      /* SHARP: packets it may have outstanding (sent, result not back), >= 1 */
  uint32_t mtu;            /* payload bytes per packet on its path (a train's with fabric.segment) */
  uint32_t overhead;       /* header bytes per packet on its path */
  uint32_t hdr_unit;       /* a train: one `overhead` per this many payload bytes (the mtu); 0: one per packet */
  uint32_t ack_every;      /* the receiver ACKs every this many in-order packets (or trains) */
  uint32_t npkts;          /* packets it takes, >= 1 */
  uint64_t max_bps;        /* this flow's own limit, bits/s on the wire (the GPU channel feeding it), 0: none */
  uint32_t hash_fwd, hash_rev; /* ECMP hashes of data and of ACKs */
  uint16_t sport;          /* its UDP source port (spraying: the first of its entropy values) */
  /* sender */
  uint32_t snd_nxt;        /* next PSN to send */
  uint32_t snd_una;        /* oldest PSN not acknowledged */
  uint32_t snd_max;        /* one past the highest PSN ever sent */
  fab_time_t deadline;     /* ps: retransmission timeout fires at */
  bool sent_all;           /* its last packet has left the sender once, or read-based its runt (FabNic.sent was
                           ** called) */
  bool ar;                 /* its data packets carry FAB_PKTF_AR (bytes >= ar_threshold) */
  bool imm;                /* its last PSN is a zero-byte write-with-immediate (FabNicCfg.ar_imm) */
  uint32_t timeouts;       /* consecutive timeouts without progress (not under srd: its packets count their own,
                           ** srd.h) */
  uint32_t retransmits;    /* packets sent again */
  fab_time_t read_rtt;     /* srd, libfabric EFA's read-based protocols (below): the round trip of its request
                           ** and the receiver's read request, unloaded (set by the owner after prepare; 0: eager) */
  uint32_t hold_seq;       /* read-based: its first packet past the runt */
  uint32_t runt;           /* read-based: payload bytes sent as its runt on each of its rails (nic.h), held of its
                           ** receiver's budget there until acknowledged */
  bool reading;            /* read-based with a read part: counted in FabNic.reads_open of its rails until
                           ** acknowledged */
  fab_time_t made;         /* ps: with max_bps, when its GPU has made the data of the packets sent so far */
  fab_time_t last_tx;      /* ps: when its newest packet (snd_max - 1) left the sender the first time */
  fab_time_t cc_wake_at;   /* ps: the earliest pending CC timer event (FAB_TIME_MAX: none) */
  FabCcFlow cc;            /* congestion-control state; cc.rate_bps is the current rate */
  uint32_t rtx_nxt;        /* selective: the next PSN to look at for resending */
  uint32_t rtx_end;        /* selective: PSNs below it not acknowledged are presumed lost */
  uint32_t sack_hi;        /* selective: one past the highest PSN acknowledged selectively */
  uint16_t dup_thresh;     /* selective: later PSNs acknowledged before one is presumed lost: dup_threshold,
                           ** raised by D-SACKs to the reordering the receiver saw (below) */
  uint16_t ev_next;        /* spraying: how many entropy values this pass has taken */
  uint16_t ev_xor;         /* spraying: this pass's order (value k is taken (k ^ ev_xor)-th) */
  uint64_t ev_skip[FAB_SPRAY_MAX_PATHS / 64]; /* spraying, avoid: bit v, skip value v once */
  struct FabSrdTx *srd;    /* srd, network flows: the sender's per-packet records (srd.h), while it sends */
  uint8_t *ev_of;          /* spray avoid, selective (not srd): the value PSN s last took, at s % FAB_SACK_WINDOW,
                           ** while it sends (NULL: none yet) */
  fab_time_t ev_min_rtt;   /* spray avoid, selective (not srd): the lowest RTT its ACKs showed (0: none yet) */
  uint64_t sacked[FAB_SACK_WORDS]; /* selective: bit i, PSN snd_una + i was acknowledged selectively */
  /* receiver: on cache lines of its own (the table's chunks are aligned), as a parallel run's partitions may
  ** run the two ends on two processors */
  _Alignas(64) uint32_t rx_inflight; /* the receiver's share of inflight: ACKs, NAKs and CNPs it made less the data
                           ** packets it received */
  uint64_t rcvd[FAB_SACK_WORDS];   /* selective: bit i, PSN rcv_nxt + i is held (bit 0 never) */
  uint32_t rcv_nxt;        /* next PSN expected */
  uint32_t reorder;        /* selective: the most PSNs a packet arrived ahead of the next one expected */
  bool nak_sent;           /* a NAK for rcv_nxt is outstanding */
  bool ece;                /* spraying, avoid: a congestion mark arrived since the last ACK, on value ece_ev */
  uint16_t ece_ev;
  uint16_t rx_n, rx_ce;    /* a CE-echoing algorithm (cc.h): data packets since the last ACK, and of them marked */
  uint64_t rcv_bytes;      /* payload received in order */
  fab_time_t cnp_next;     /* ps: the next CNP for this flow may leave at (notification point) */
  struct FabPkt *held;     /* stream: its last packet, arrived before its data could have (FabPkt.ahead), until
                           ** then */
} FabFlow;

/* The run's flows by slot. Slots live in chunks of FAB_FLOW_CHUNK flows, so
** a flow never moves while the table grows, and a slot given back is handed
** out again (the last one freed first, whose memory is warm). A run takes a
** slot when a flow is posted and gives it back once nothing can name it any
** more (fab_nic_init's `release`), so the table holds the flows running, not
** every flow of the workload. */
#define FAB_FLOW_CHUNK_BITS 12
#define FAB_FLOW_CHUNK (1u << FAB_FLOW_CHUNK_BITS)

typedef struct FabFlowTable {
  FabFlow **chunk;         /* chunk k: slots k x FAB_FLOW_CHUNK ... */
  uint32_t nchunks;
  uint32_t used;           /* slots handed out at least once */
  uint32_t live;           /* slots in use now */
  GArray *free;            /* uint32_t: slots given back, to reuse (NULL: a wrapped array) */
  FabFlow *one;            /* a wrapped array's only chunk */
  bool fixed;              /* fab_flow_table_fix: `chunk` has room for every chunk and never moves */
  uint32_t nparts;         /* fab_flow_table_fix: partitions 1 .. nparts give slots back to pfree[k - 1] */
  GArray **pfree;
  uint8_t *held;           /* not fixed: held[slot] 1 while the slot is taken (NULL: none taken yet) */
  uint32_t held_cap;
} FabFlowTable;
#define FAB_FLOW_CHUNKS_MAX (1u << (32 - FAB_FLOW_CHUNK_BITS))

static inline FabFlow *fab_flow_at(const FabFlowTable *t, uint32_t slot) {
  return &t->chunk[slot >> FAB_FLOW_CHUNK_BITS][slot & (FAB_FLOW_CHUNK - 1)];
}

/* An empty table that grows. */
void fab_flow_table_init(FabFlowTable *t);
/* A parallel run's table over `parts` partitions: room for every chunk it
** may have, so that a slot's place never moves (the executor takes slots
** under its lock while partitions' threads look flows up); and a list of
** free slots per partition, so that a slot is given back to the partition
** of its flow's sender, where the flow's timers still pending fire (they
** find it done, or reused: its generation), and reused only by a flow
** made by that partition's thread (fab_flow_table_take_in): never under
** a timer another thread is firing. */
void fab_flow_table_fix(FabFlowTable *t, uint32_t parts);
FabFlow *fab_flow_table_take_in(FabFlowTable *t, uint32_t part);
void fab_flow_table_put_in(FabFlowTable *t, FabFlow *f, uint32_t part);
/* A table over the caller's array of at most FAB_FLOW_CHUNK flows (slot i
** is flows[i]; tests build flows by hand with slot = index). */
void fab_flow_table_wrap(FabFlowTable *t, FabFlow *flows);
void fab_flow_table_clear(FabFlowTable *t);
/* A zeroed flow in a free slot (f->slot set). */
FabFlow *fab_flow_table_take(FabFlowTable *t);
/* Give f's slot back. */
void fab_flow_table_put(FabFlowTable *t, FabFlow *f);

/* Packets of f that a NIC made (data, ACK, NAK, CNP) and no NIC received. */
static inline uint32_t fab_flow_in_flight(const FabFlow *f) { return f->inflight + f->rx_inflight; }

/* Whether nothing names f any more (fab_nic_init's `release`): not an NVLS
** member (nic.c releases those itself), done at both ends, nothing of it in
** flight, in no round robin. */
static inline bool fab_flow_releasable(const FabFlow *f) {
  return !f->nvls && f->acked && f->rcv_nxt == f->npkts && !fab_flow_in_flight(f) && !f->in_rr &&
         (!f->ordered || f->end); /* an ordered message held at its receiver is still named there */
}

/* The flow's current sending rate, bits/s (its line rate under CC none). */
static inline uint64_t fab_flow_rate(const FabFlow *f) { return f->cc.rate_bps; }

typedef struct FabNic FabNic;

/* Reorder depth in bins of powers of two: 0 (in order), 1, 2-3, 4-7, ...,
** 128-255, and 256 or more (beyond a selective receiver's window). */
#define FAB_REORDER_BINS 10
static inline uint32_t fab_reorder_bin(uint32_t ahead) {
  return ahead == 0 ? 0 : ahead >= 256 ? FAB_REORDER_BINS - 1 : 32 - (uint32_t)__builtin_clz(ahead);
}
extern const char *const fab_reorder_bin_names[FAB_REORDER_BINS]; /* "0", "1", "2-3", ..., "256+" */

enum { FAB_PATH_NET = 0, FAB_PATH_NVL = 1 };

/* Called when a flow's receiver has all its bytes (at eng->now). */
typedef void (*FabFlowDoneFn)(void *ctx, FabFlow *f);
/* Called when a flow made no progress after max_timeouts timeouts. */
typedef void (*FabFlowFailFn)(void *ctx, FabFlow *f);

struct FabNic {
  FabNode node;
  uint32_t id;             /* endpoint number */
  uint32_t key;            /* its element id, copied (fab_nic_post's keys; read while its partition moves its header) */
  FabNicCfg cfg;
  FabPort port;            /* to the fabric (through PCIe and the NIC, for a GPU) */
  FabPort nvl;             /* to the NVSwitch (cfg.nvl_domain > 0 only) */
  FabPort **mesh_out;      /* a GPU of a mesh domain: the egress toward each peer (by endpoint mod domain) in its own
                           ** links' element; a segment to peer j waits while mesh_out[j] holds mesh_limit bytes, as
                           ** the GPU's writes to j wait for j's link alone (NULL: no mesh; the NIC frees it) */
  uint64_t mesh_limit;
  FabRng rng;              /* its own stream of cfg.seed */
  uint32_t ev_crc[8];      /* cfg.hash crc32: what bit i of an entropy value does to the hash */
  const FabCcOps *cc;      /* cfg.cc's handlers; NULL under none */
  fab_time_t pace_at;      /* ps: the pending pacing wake-up (FAB_TIME_MAX: none) */
  fab_time_t cap_next;     /* ps: the next packet of a flow with rank_bps may not leave before this */
  fab_time_t msg_next;     /* ps: the next network message may not start before this (cfg.msg_gap) */
  FabFlowTable *flows;     /* the run's flow table (transfer none) */
  FabFlow *rr_head[2], *rr_tail[2]; /* flows with packets to send, per path */
  uint32_t rr_n[2][FAB_MAX_PRIOS];   /* of them, per priority */
  uint32_t rr_prios[2];              /* bit p: rr_n[path][p] > 0 */
  FabFlowDoneFn done;
  FabFlowFailFn fail;
  FabFlowDoneFn sent;      /* optional: the flow's last packet left the sender for the first time */
  FabFlowDoneFn release;   /* optional: nothing names the flow any more (below) */
  bool split;              /* a parallel run's NIC (fab_nic_init): `release` hears of a flow whose end at this NIC
                           ** is done, and the owner checks the rest between windows */
  void *ctx;
  /* counters */
  uint64_t tx_data_pkts, tx_data_bytes;   /* data packets sent (wire bytes) */
  uint64_t rx_data_pkts, rx_data_bytes;   /* data packets received (wire bytes) */
  uint64_t tx_ctrl_pkts, rx_ctrl_pkts;    /* ACK/NAK/CNP */
  uint64_t retransmits, timeouts, naks_sent;
  uint64_t ooo_pkts;                      /* selective: data packets received out of order and held */
  uint64_t cnps_sent, cnps_received;      /* CNPs (also in tx/rx_ctrl_pkts) */
  uint64_t nvls_tx_bytes, nvls_rx_bytes;  /* NVLS and SHARP: into the switch (contributions, stores), and from it
                                          ** (wire bytes) */
  uint64_t pxn_relayed;                   /* packets this GPU forwarded for a peer (PXN) */
  FabPkt *relay_head, *relay_tail;        /* PXN: data packets to forward to the network, oldest first (pxn.c) */
  uint64_t relay_bytes;                   /* their wire bytes */
  bool relay_turn;                        /* PXN: a relayed packet goes next, if one may (pxn.c) */
  uint64_t dsacks;                        /* selective: D-SACKs received (a resend found its original there) */
  GHashTable *reordering;                 /* selective: destination + 1 -> the threshold its D-SACKs taught (a
                                          ** connection's, kept for the flows after it, as NCCL reuses a QP) */
  struct FabSrdTx *srd_free;              /* srd: sender records given back, to reuse */
  GPtrArray *srd_all;                     /* srd: every record it allocated (freed by fab_nic_clear) */
  GHashTable *srd_conns;                  /* srd: destination + 1 -> FabSrdConn, what a connection's flows learn
                                          ** (RTT estimators, CC state) and hand on to its next flow */
  uint64_t srd_path_losses;               /* srd: packets presumed lost because a later one on their path was
                                          ** acknowledged */
  uint64_t srd_timer_losses;              /* srd: packets presumed lost by their timer */
  uint64_t srd_rtt_avoids;                /* srd: values skipped for a slow RTT */
  uint64_t ev_skips;                      /* spraying, avoid: entropy values skipped (marked, late or lossy) */
  uint64_t ev_loss_avoids, ev_rtt_avoids; /* spraying, avoid, selective (not srd): values set to skip for a
                                          ** presumed loss, for a slow RTT */
  GPtrArray *ev_free, *ev_all;            /* FabFlow.ev_of arrays given back, to reuse; all (fab_nic_clear) */
  GHashTable *msg_tx;                     /* srd ordered: receiver + 1 -> the next msg_seq to give */
  GHashTable *msg_rx;                     /* srd ordered: sender + 1 -> FabMsgPeer, what it waits for, holds */
  uint64_t msgs_held;                     /* srd ordered: messages that arrived whole before an earlier one */
  uint32_t reads_open[FAB_EFA_RAILS];     /* read-based: per rail (domain), its messages with a read part there
                                          ** not yet acknowledged */
  GHashTable *runt_out;                   /* read-based: (receiver + 1) x FAB_EFA_RAILS + rail -> runt bytes sent
                                          ** there and not acknowledged */
  uint64_t runt_reads, long_reads;        /* read-based: messages sent with a runt and a read, by read alone */
  uint64_t reorder_hist[FAB_REORDER_BINS]; /* network data packets received the first time, by how many PSNs
                                          ** ahead of the next expected they came (fab_reorder_bin) */
};

/* PXN relays (pxn.c). A NIC forwarding another GPU's packet to the network
** holds its data packets in a FIFO of its own, served in turn with its own
** flows, a packet each (the NIC serves its QPs with work in turn; relayed
** connections are QPs of this GPU's proxy): the relayed traffic neither
** starves this GPU's flows nor holds up the ACKs in the port's queue. A
** relayed flow's timer runs from when this NIC may send its packet.
** fab_pxn_next: the oldest relayed packet, if its priority may send now
** (not paused, credit); NULL else. fab_pxn_flush: frees what is held (a run
** cut by stop_time), adding its wire bytes to *bytes; returns the count. */
void fab_pxn_relay(FabEngine *eng, FabNic *nic, FabPkt *p);
FabPkt *fab_pxn_next(FabNic *nic, const FabPort *port);
uint64_t fab_pxn_flush(FabEngine *eng, FabNic *nic, uint64_t *bytes);

/* Set up a NIC for endpoint `id`. `flows` is the table packets' and timers'
** flow slots index. cfg->cc chooses the congestion control (it must pass
** fab_cc_cfg_invalid); change it only through a new fab_nic_init.
**
** When `release` is set, the NIC calls it (at its sender's or its receiver's
** NIC) once a flow other than an NVLS member is done at both ends (every byte
** received, every PSN acknowledged), no packet of it is on its way (inflight
** 0) and it waits in no round robin: the owner may then reuse its slot. Its
** timer events still pending fire as before and find it done (they carry
** its generation). A flow that lost a packet keeps a packet in flight and
** is never released (the drop is not seen by the NICs). With `split` set
** (a parallel run, where the two ends of a flow run on two threads), a NIC
** reads only its own end's fields: it calls `release` whenever its end is
** done (the sender's: every PSN acknowledged and out of the round robin;
** the receiver's: every byte in, and delivered) and something of it
** changed, possibly more than once, and the owner releases the flow once
** fab_flow_releasable holds, where no partition runs. */
void fab_nic_init(FabNic *nic, uint32_t id, const FabNicCfg *cfg, FabFlowTable *flows,
                  FabFlowDoneFn done, FabFlowFailFn fail, void *ctx);

/* Free what the NIC allocated (its per-destination reordering levels, SRD's records). */
void fab_nic_clear(FabNic *nic);

/* Rename the NIC ("gpu7" for a GPU's endpoint; fab_nic_init names it
** "host<id>"): its RNG stream follows its name. */
void fab_nic_set_name(FabNic *nic, const char *name);

/* Fill the derived fields of a flow (npkts, hashes, transport and CC state)
** from id, src, dst, bytes, start and prio. The CC state follows cfg->cc and
** cfg->bps (the sender's). */
void fab_flow_prepare(FabFlow *f, const FabNicCfg *cfg);

/* Schedule flow `f` (of this NIC's flow table, f->src == nic->id) to start
** at f->start. The event's tie key is the flow's own (nic->key, 2 x f->id +
** 1), not the poster's: a flow that waits for operations ended in several
** partitions of a parallel run starts in the same order whichever of them
** the last report came from (tools/libfabsim/driver.c). From any partition
** (nic->port.part routes it). */
void fab_nic_post(FabEngine *eng, FabNic *nic, FabFlow *f);

/* SHARP member f's window was opened (f->sharp_win raised: its reduction
** got its locks): if it is posted and has a contribution to send, it goes
** back in the round robin. */
void fab_nic_sharp_wake(FabEngine *eng, FabNic *nic, FabFlow *f);

/* Fast-forward (tools/libfabsim/fastfwd.c): every time the NIC's pacing
** and the packets it relays (PXN) hold moves dt later (its ports:
** fab_port_shift); fab_nic_shift_flow does the
** same for a flow it sends or receives (its timers, pacing and congestion
** control state), not SRD nor NVLS flows. */
void fab_nic_shift(FabNic *nic, fab_time_t dt);
/* Whether a NIC's event (its arg) starts a flow: the workload's, not the fabric's own dynamics. */
bool fab_nic_event_is_start(uint64_t arg);
void fab_nic_shift_flow(const FabNic *nic, FabFlow *f, fab_time_t dt);

/* Fast-forward: take up to `pkts` whole packets off what flow f has still
** to send (its `bytes` and `npkts` shrink; its last packets stay, so its
** end runs packet by packet). Returns how many were taken. */
uint32_t fab_flow_skip(FabFlow *f, uint32_t pkts);

/* Payload bytes of packet `seq` of flow f. */
uint32_t fab_flow_payload(const FabFlow *f, uint32_t mtu, uint32_t seq);

#endif

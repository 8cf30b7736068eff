/*
** Congestion control: the NIC's pluggable rate controller.
**
** An algorithm is a table of handlers (const FabCcOps), like an element type
** is a FabOps: the NIC calls them when a flow sends a data packet, receives
** a CNP or an ACK, when the flow's CC timer fires, and (at the receiver)
** when a data packet arrives. The algorithm keeps its per-flow state in a
** FabCcFlow inside the FabFlow and sets there the flow's current rate and
** the time it next wants its timer (`timer_at`); the NIC paces the flow at
** `rate_bps` and keeps at most one timer event per flow pending. Switches
** and links know nothing of it: a new algorithm is a new FabCcOps and a new
** member of the unions below. A window algorithm (DCTCP) sets win_bytes as
** well: the NIC then also holds a flow whose unacknowledged packets fill it.
** HPCC's switches write each egress port's utilisation into data packets
** (FabSwitchCfg.int_rtt): the one place a switch serves an algorithm.
**
** FAB_CC_NONE (the zero value of FabCcCfg) means line rate with no pacing
** and no CC state: the NIC then behaves exactly as without this module.
*/
#ifndef FAB_CC_H
#define FAB_CC_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "packet.h"
#include "dcqcn.h"
#include "delaycc.h"
#include "dctcp.h"
#include "timely.h"
#include "hpcc.h"

typedef enum { FAB_CC_NONE = 0, FAB_CC_DCQCN = 1, FAB_CC_DELAY = 2, FAB_CC_DCTCP = 3, FAB_CC_TIMELY = 4,
               FAB_CC_HPCC = 5 } FabCcKind;

typedef struct FabCcCfg {
  FabCcKind kind;          /* FAB_CC_NONE: line rate */
  FabDcqcnCfg dcqcn;       /* kind == FAB_CC_DCQCN */
  FabDelayCfg delay;       /* kind == FAB_CC_DELAY */
  FabDctcpCfg dctcp;       /* kind == FAB_CC_DCTCP */
  FabTimelyCfg timely;     /* kind == FAB_CC_TIMELY */
  FabHpccCfg hpcc;         /* kind == FAB_CC_HPCC */
} FabCcCfg;

/* What a receiver NIC writes into the ACKs and NAKs of a flow for its
** sender's algorithm (FabCcOps.echo), beyond the send time every ACK echoes.
** CE: the data packets that arrived since its last ACK (`ev`) and how many
** of them were marked CE (`mark_ev`, and FAB_PKTF_ECE when any), so the
** sender knows the fraction marked exactly, as DCTCP needs (its receiver's
** two-state machine, RFC 8257 section 3.2, conveys the same with delayed
** ACKs). A D-SACK carries none: its counts go with the next ACK. INT: the
** utilisation the switches wrote into the data packet it answers
** (`mark_ev`, models/hpcc.h). */
enum { FAB_CC_ECHO_NONE = 0, FAB_CC_ECHO_CE = 1, FAB_CC_ECHO_INT = 2 };

/* Per-flow CC state (sender side). */
typedef struct FabCcFlow {
  uint64_t rate_bps;       /* bits/s: current sending rate (line rate under none) */
  uint64_t line_bps;       /* bits/s: the NIC's line rate, the ceiling */
  fab_time_t timer_at;     /* ps: when the algorithm wants on_timer; FAB_TIME_MAX: never */
  uint64_t win_bytes;      /* a window algorithm's congestion window, payload bytes: the NIC keeps at most
                           ** max(win_bytes / mss, 1) packets of a flow unacknowledged, plus the ACK interval
                           ** less one (packets the receiver has and does not ACK yet); 0: no window */
  uint32_t mss;            /* payload bytes per packet of the flow (set by the NIC before init) */
  union {
    FabDcqcnFlow dcqcn;
    FabDelayFlow delay;
    FabDctcpFlow dctcp;
    FabTimelyFlow timely;
    FabHpccFlow hpcc;
  } u;
} FabCcFlow;

struct FabCcOps {
  const char *name;        /* "dcqcn", "delay", "dctcp", "timely", "hpcc" */
  uint8_t tx_flags;        /* FAB_PKTF_* the sender sets on its data packets (ECT) */
  uint8_t echo;            /* FAB_CC_ECHO_*: what its receivers put in ACKs */
  /* the flow is posted at `now`; rate_bps and line_bps are set to line rate */
  void (*init)(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now);
  /* a data packet of `wire` bytes was handed to the port */
  void (*on_sent)(FabCcFlow *s, const FabCcCfg *cfg, uint32_t wire, fab_time_t now);
  /* a CNP for the flow arrived */
  void (*on_cnp)(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now);
  /* optional: an ACK or NAK for the flow arrived; its `sent` is the send time of the data packet that
  ** made the receiver send it (0: none) */
  void (*on_ack)(FabCcFlow *s, const FabCcCfg *cfg, const FabPkt *ack, fab_time_t now);
  /* now >= s->timer_at */
  void (*on_timer)(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now);
  /* receiver side: a data packet `p` arrived; `*cnp_next` (ps, 0 at flow
  ** start) is the flow's notification state. Returns true to send a CNP. */
  bool (*rx_data)(fab_time_t *cnp_next, const FabCcCfg *cfg, const FabPkt *p, fab_time_t now);
};

/* Handlers for an algorithm with nothing to do at that point: no work per
** packet sent, no CNPs (its receivers send none), no timers, nothing
** decided at the receiver. */
void fab_cc_ignore_sent(FabCcFlow *s, const FabCcCfg *cfg, uint32_t wire, fab_time_t now);
void fab_cc_ignore_cnp(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now);
void fab_cc_no_timer(FabCcFlow *s, const FabCcCfg *cfg, fab_time_t now);
bool fab_cc_no_cnp(fab_time_t *cnp_next, const FabCcCfg *cfg, const FabPkt *p, fab_time_t now);

/* The handler table of `kind`; NULL for FAB_CC_NONE. Transfer none. */
const FabCcOps *fab_cc_ops(FabCcKind kind);

/* A configuration by name: "none", "dcqcn-paper", "dcqcn-mlx", "delay", "dctcp", "timely", "hpcc" (its
** base_rtt 0: to be set). Returns FALSE
** (leaving *out alone) for an unknown name. */
gboolean fab_cc_preset(const char *name, FabCcCfg *out);

/* NULL if `c` is usable; else a static message naming the bad field. */
const char *fab_cc_cfg_invalid(const FabCcCfg *c);

#endif

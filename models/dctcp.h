/*
** DCTCP (Alizadeh et al., "Data Center TCP", SIGCOMM 2010; RFC 8257) as a
** window algorithm of the NIC (see cc.h), for RoCE-style senders that react
** to ECN with a window rather than DCQCN's rate.
**
** Data packets are ECN-capable; the switches mark CE past their ECN
** threshold (fabric.switch.ecn: DCTCP's single threshold K is kmin = kmax
** with pmax 1). Each ACK says how many data packets arrived since the
** previous one and how many of them were marked (cc.h, FAB_CC_ECHO_CE).
** Per flow:
**
**  - the window starts open; the first ACK sets it to line rate x that
**    packet's RTT (the path's bandwidth-delay product: the first RTT's
**    packets are out at line rate before any answer);
**  - alpha = (1 - g) alpha + g F once per window of data, F the fraction of
**    the packets acknowledged in it that were marked (a window ends at the
**    first ACK of a packet sent after it began);
**  - an ACK reporting a mark cuts the window to W (1 - alpha / 2), at most
**    once per window (not again until a packet sent after the cut is
**    acknowledged), never below two packets;
**  - otherwise each packet acknowledged adds mss x mss / W (Reno's
**    congestion avoidance, counted per packet as RFC 3465 counts bytes).
**
** The rate stays at line rate: the window alone limits the flow.
*/
#ifndef FAB_DCTCP_H
#define FAB_DCTCP_H

#include <stdint.h>
#include <glib.h>
#include "sim/time.h"

typedef struct FabDctcpCfg {
  double g;                /* alpha's gain per window, (0, 1] */
  double alpha_init;       /* alpha at flow start, [0, 1] */
} FabDctcpCfg;

/* Per-flow state (inside FabCcFlow). */
typedef struct FabDctcpFlow {
  double alpha;            /* the estimate of the fraction of packets marked */
  double win;              /* bytes: the window, fractional between packets (0: open, before the first ACK) */
  uint32_t acked, marked;  /* packets acknowledged, and marked, in the current window of data */
  fab_time_t win_start;    /* ps: the current observation window began (an ACK of a later packet ends it) */
  fab_time_t last_cut;     /* ps: the last cut (0: none); no other until a later packet is acknowledged */
} FabDctcpFlow;

typedef struct FabCcOps FabCcOps;
extern const FabCcOps fab_cc_dctcp_ops;

/* The defaults: g = 1/16 (the paper, section 3.4, and RFC 8257 section
** 4.2), alpha_init = 1 (RFC 8257 section 3.3's conservative start, Linux's
** dctcp_alpha_on_init = DCTCP_MAX_ALPHA, net/ipv4/tcp_dctcp.c). */
FabDctcpCfg fab_dctcp_defaults(void);

/* NULL if `c` is usable; else a static message naming the bad field. */
const char *fab_dctcp_cfg_invalid(const FabDctcpCfg *c);

#endif

/*
** HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM
** 2019) as a rate-and-window algorithm of the NIC (see cc.h), with its
** in-band telemetry carried the way HPCC-PINT carries it (Ben Basat et al.,
** "PINT: Probabilistic In-band Network Telemetry", SIGCOMM 2020): one value
** per packet, the highest link utilisation along its path, which each
** switch computes for its egress port (switch.h, FabSwitchCfg.int_rtt).
**
** The switch, as a data packet leaves port j of rate B, with dt the time
** since the port's previous packet (at most T) and L that packet's bytes:
**
**   U_j = (T - dt) / T x U_j + qlen x dt / (B T^2) + L / (B T)
**
** (HPCC's sender-side estimate, qlen / (B T) + txRate / B smoothed over T,
** computed at the port as HPCC's authors' ns-3 model of HPCC-PINT does:
** alibaba-edu/High-Precision-Congestion-Control, switch-node.cc; qlen
** here is the backlog the packet found once it was ready to leave, its wait
** x B, so that packets still inside the switch's forwarding latency, which
** fabsim keeps in the egress queue, do not count as queued), and
** raises the packet's value to U_j when higher. The value travels in 16
** bits, U x 8192 (up to 8), where PINT packs a logarithm into 8. The
** receiver echoes it in the ACK of that packet. The sender, per ACK, with
** U the echoed value and Rc its reference rate:
**
**   R = Rc / (U / eta) + R_AI       (HPCC's multiplicative step; with
**                                    max_stage > 0, R = Rc + R_AI while
**                                    U < eta, for max_stage updates)
**
** clamped to [min_rate, line rate]; Rc becomes R once per RTT (an ACK of a
** packet sent after the last such update), other ACKs set R only (HPCC's
** UpdateRateHp and FastReactHp). The window is W = R x T, so the flow
** has at most a bandwidth-delay product of its rate in flight. The flow
** starts at line rate with the window W = line rate x T.
*/
#ifndef FAB_HPCC_H
#define FAB_HPCC_H

#include <stdint.h>
#include <glib.h>
#include "sim/time.h"

/* The 16-bit encoding of a utilisation in packets and ACKs. */
#define FAB_HPCC_U_ONE 8192.0

typedef struct FabHpccCfg {
  double eta;              /* target utilisation, (0, 1] */
  uint32_t max_stage;      /* additive-increase stages before a multiplicative step below eta (0: none) */
  uint64_t rai_bps;        /* bits/s: additive increase per update (0: line rate / 2500) */
  fab_time_t base_rtt;     /* ps: T, the fabric's base round trip (0: not yet set; the reader fills it) */
  uint64_t min_rate_bps;   /* bits/s: the floor */
} FabHpccCfg;

/* Per-flow state (inside FabCcFlow). */
typedef struct FabHpccFlow {
  uint64_t rate_c;         /* bits/s: the reference rate Rc */
  uint32_t stage;          /* additive stages since the last multiplicative step */
  fab_time_t last_update;  /* ps: when Rc last changed (0: at start) */
} FabHpccFlow;

typedef struct FabCcOps FabCcOps;
extern const FabCcOps fab_cc_hpcc_ops;

/* The defaults (cited in hpcc.c); base_rtt 0, for the reader to set. */
FabHpccCfg fab_hpcc_defaults(void);

/* NULL if `c` is usable; else a static message naming the bad field. */
const char *fab_hpcc_cfg_invalid(const FabHpccCfg *c);

/* A switch port's utilisation estimate (zeroed: no packet yet). */
typedef struct FabHpccPort {
  double u;                /* the estimate */
  fab_time_t last;         /* ps: its previous data packet left */
  uint32_t last_bytes;     /* that packet's wire bytes (0: none yet) */
} FabHpccPort;

/* The switch's side: a data packet of `bytes` leaves port `pt` of `bps` at
** `now` with `qlen` bytes queued, T = base_rtt; updates pt and returns the
** packet's new value given its value `v` (the higher of the two). */
uint16_t fab_hpcc_stamp(FabHpccPort *pt, uint64_t bps, uint64_t qlen, uint32_t bytes, fab_time_t base_rtt,
                        fab_time_t now, uint16_t v);

#endif

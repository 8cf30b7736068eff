/*
** TIMELY (Mittal et al., "TIMELY: RTT-based Congestion Control for the
** Datacenter", SIGCOMM 2015), as a rate algorithm of the NIC (see cc.h):
** the rate follows the gradient of the round-trip time.
**
** TIMELY samples the RTT once per completion of a segment of data (16 KB
** in the paper's evaluation), segments pipelined. Here: the ACK whose
** cumulative acknowledgement first covers the next multiple of `segment`
** bytes is a completion, and its echoed send time gives new_rtt:
**
**   rtt_diff = (1 - alpha) rtt_diff + alpha (new_rtt - prev_rtt)
**   gradient = rtt_diff / min_rtt
**   new_rtt < t_low:        rate += delta
**   new_rtt > t_high:       rate *= 1 - beta (1 - t_high / new_rtt)
**   gradient <= 0:          rate += n delta   (n = 5 after 5 such samples
**                                             in a row, else 1: HAI)
**   else:                   rate *= 1 - beta gradient
**
** clamped to [min_rate, line rate]; the flow starts at line rate, and its
** first sample only sets prev_rtt. No CNPs, no timers, no ECN.
*/
#ifndef FAB_TIMELY_H
#define FAB_TIMELY_H

#include <stdint.h>
#include <glib.h>
#include "sim/time.h"

typedef struct FabTimelyCfg {
  fab_time_t t_low, t_high;  /* ps: below t_low the rate only rises; above t_high it falls by the excess */
  uint64_t delta_bps;        /* bits/s: the additive step (0: line rate / 1000) */
  double beta;               /* multiplicative decrease factor, (0, 1] */
  double alpha;              /* EWMA weight of a new RTT difference, (0, 1] */
  fab_time_t min_rtt;        /* ps: the gradient's normaliser */
  uint32_t hai_after;        /* samples of a non-positive gradient in a row before steps of hai_after x delta */
  uint64_t segment;          /* bytes acknowledged between two RTT samples */
  uint64_t min_rate_bps;     /* bits/s: the floor */
} FabTimelyCfg;

/* Per-flow state (inside FabCcFlow). */
typedef struct FabTimelyFlow {
  fab_time_t prev_rtt;       /* ps: the last sample (0: none yet) */
  double rtt_diff;           /* ps: the smoothed difference of successive samples */
  uint32_t negatives;        /* samples in a row with a non-positive gradient */
  uint64_t next_done;        /* bytes: the next sample is the first ACK covering this many (0: the first ACK) */
} FabTimelyFlow;

typedef struct FabCcOps FabCcOps;
extern const FabCcOps fab_cc_timely_ops;

/* The paper's parameters (cited in timely.c). */
FabTimelyCfg fab_timely_defaults(void);

/* NULL if `c` is usable; else a static message naming the bad field. */
const char *fab_timely_cfg_invalid(const FabTimelyCfg *c);

#endif

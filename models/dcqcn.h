/*
** DCQCN: the congestion control of RoCEv2 NICs (Zhu et al., "Congestion
** Control for Large-Scale RDMA Deployments", SIGCOMM 2015), as a FabCcOps
** of the NIC (see cc.h).
**
**  - Notification point (the receiver NIC): a data packet marked CE makes it
**    send a CNP back to the sender, at most one per flow per `cnp_interval`.
**  - Reaction point (the sender NIC), per flow: a current rate RC and a
**    target rate RT, both at line rate until the first CNP. On a CNP:
**    RT = RC, RC = RC x (1 - alpha/2), alpha = (1-g) alpha + g. With no CNP
**    for `alpha_timer`, alpha = (1-g) alpha (computed lazily, so no alpha
**    timer events). Every `rate_timer` (counter T) and every `byte_counter`
**    bytes sent (counter BC) the rate rises: fast recovery while
**    max(T, BC) <= F (RC = (RT+RC)/2), hyper increase when min(T, BC) > F
**    (RT += (min(T, BC) - F) x rhai), additive increase otherwise
**    (RT += rai), then RC = (RT+RC)/2. RC stays in [min_rate, line rate].
**    A flow back at line rate with RT at line rate stops its timer.
**
** Two presets: "dcqcn-paper" (the paper's parameters) and "dcqcn-mlx"
** (NVIDIA ConnectX firmware defaults). Every field can be set on its own.
*/
#ifndef FAB_DCQCN_H
#define FAB_DCQCN_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "sim/time.h"

typedef struct FabDcqcnCfg {
  /* notification point (receiver) */
  fab_time_t cnp_interval;      /* ps: at most one CNP per flow per this (0: one per CE packet) */
  /* reaction point (sender) */
  double g;                     /* alpha gain, (0, 1] */
  double alpha_init;            /* alpha used at a flow's first CNP, [0, 1] */
  fab_time_t alpha_timer;       /* ps: alpha decays once per this without a CNP (K) */
  fab_time_t rate_timer;        /* ps: rate increase period (T) */
  uint64_t byte_counter;        /* bytes: rate increase per this many wire bytes sent (B); 0: off */
  uint32_t fast_recovery;       /* stages of fast recovery (F) */
  uint64_t rai_bps;             /* bits/s: additive increase step of RT */
  uint64_t rhai_bps;            /* bits/s: hyper increase step of RT */
  uint64_t min_rate_bps;        /* bits/s: RC never goes below this */
  fab_time_t rate_reduce_period;/* ps: at most one rate cut per this (0: one per CNP) */
  uint64_t first_cnp_rate_bps;  /* bits/s: RC and RT at a flow's first CNP (0: cut by alpha) */
} FabDcqcnCfg;

/* Reaction-point state of one flow (inside FabCcFlow). */
typedef struct FabDcqcnFlow {
  double alpha;                 /* as of alpha_at */
  fab_time_t alpha_at;          /* ps: alpha last set; decays run from here in alpha_timer steps */
  fab_time_t last_cut;          /* ps: the last rate cut */
  uint64_t rt_bps;              /* bits/s: target rate RT */
  uint64_t bytes;               /* wire bytes sent since the last byte-counter step */
  uint32_t t, bc;               /* rate-increase counters T and BC since the last cut */
  bool seen_cnp;                /* a CNP has arrived for this flow */
  bool limited;                 /* RC or RT below line rate: the rate timer runs */
} FabDcqcnFlow;

typedef struct FabCcOps FabCcOps;

/* The handler table of DCQCN (see cc.h). */
extern const FabCcOps fab_cc_dcqcn_ops;

/* Fill *out with the preset called `name` ("dcqcn-paper" or "dcqcn-mlx").
** Returns FALSE (and leaves *out alone) for an unknown name. */
gboolean fab_dcqcn_preset(const char *name, FabDcqcnCfg *out);

/* NULL if `c` is usable; else a static message naming the bad field. */
const char *fab_dcqcn_cfg_invalid(const FabDcqcnCfg *c);

/* alpha of flow state `s` at time `now` (applies the pending decays; does
** not change the state). */
double fab_dcqcn_alpha(const FabDcqcnFlow *s, const FabDcqcnCfg *c, fab_time_t now);

#endif

/* What the steady-state fast-forward (tools/libfabsim/fastfwd.h) does to a
** NIC and its flows: their times moved on by a jump, and packets taken off a
** flow's end. See nic.h. */
#include "nic.h"

void fab_nic_shift(FabNic *nic, fab_time_t dt) {
  nic->pace_at = fab_time_later(nic->pace_at, dt);
  nic->cap_next = fab_time_later(nic->cap_next, dt);
  for (FabPkt *p = nic->relay_head; p; p = p->next) { /* PXN: what it holds to forward (pxn.c) */
    p->ready = fab_time_later(p->ready, dt);
    p->sent = fab_time_later(p->sent, dt);
  }
}

void fab_nic_shift_flow(const FabNic *nic, FabFlow *f, fab_time_t dt) {
  g_assert(!f->srd && !f->nvls);
  f->deadline = fab_time_later(f->deadline, dt);
  f->next_tx = fab_time_later(f->next_tx, dt);
  f->hold_until = fab_time_later(f->hold_until, dt);
  f->made = fab_time_later(f->made, dt);
  f->last_tx = fab_time_later(f->last_tx, dt);
  f->cc_wake_at = fab_time_later(f->cc_wake_at, dt);
  f->cc.timer_at = fab_time_later(f->cc.timer_at, dt);
  f->cnp_next = fab_time_later(f->cnp_next, dt);
  if (f->held) { /* a streamed flow's last packet, held at its receiver (nic.h): its event moves with the queue */
    f->held->ready = fab_time_later(f->held->ready, dt);
    f->held->sent = fab_time_later(f->held->sent, dt);
  }
  switch (nic->cfg.cc.kind) {
  case FAB_CC_DCQCN:
    f->cc.u.dcqcn.alpha_at = fab_time_later(f->cc.u.dcqcn.alpha_at, dt);
    f->cc.u.dcqcn.last_cut = fab_time_later(f->cc.u.dcqcn.last_cut, dt);
    break;
  case FAB_CC_DELAY:
    f->cc.u.delay.last_up = fab_time_later(f->cc.u.delay.last_up, dt);
    f->cc.u.delay.last_down = fab_time_later(f->cc.u.delay.last_down, dt);
    break;
  case FAB_CC_DCTCP:
    f->cc.u.dctcp.win_start = fab_time_later(f->cc.u.dctcp.win_start, dt);
    f->cc.u.dctcp.last_cut = fab_time_later(f->cc.u.dctcp.last_cut, dt);
    break;
  case FAB_CC_HPCC:
    f->cc.u.hpcc.last_update = fab_time_later(f->cc.u.hpcc.last_update, dt);
    break;
  case FAB_CC_TIMELY: /* no times: its samples go by bytes acknowledged */
  case FAB_CC_NONE: break;
  }
}

uint32_t fab_flow_skip(FabFlow *f, uint32_t pkts) {
  /* whole packets off the end of what is left to send, keeping the last (a runt, or the write-with-immediate)
  ** and two of the rest so that the flow's end runs packet by packet */
  uint32_t left = f->npkts - f->snd_max;
  uint32_t keep = 3 + (f->imm ? 1 : 0);
  pkts = MIN(pkts, left > keep ? left - keep : 0);
  f->npkts -= pkts;
  f->bytes -= (uint64_t)pkts * f->mtu;
  return pkts;
}

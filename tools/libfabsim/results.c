/* Results of one run: the field tables, and what is derived from the raw
** facts. See results.h; README "Outputs" documents every field. */
#include "results.h"

#include <glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "workloads/collective.h"

#define J FAB_FF_JSON
#define H FAB_FF_H5
#define M FAB_FF_META
#define F(S, NAME, TYPE, FIELD, ...) {.name = (NAME), .type = (TYPE), .off = offsetof(S, FIELD), __VA_ARGS__}
#define ARR(S, NAME, TYPE, FIELD, COUNT, ...) \
  {.name = (NAME), .type = (TYPE), .off = offsetof(S, FIELD), .off_n = offsetof(S, COUNT), __VA_ARGS__}
#define TABLE(VAR, NAME, S, FIELDS) \
  const FabFieldTable VAR = {NAME, sizeof(S), FIELDS, sizeof FIELDS / sizeof FIELDS[0]}

static const FabField flow_fields[] = {
  F(FabFlowRec, "id", FAB_F_U32, id, .flags = H, .doc = "flow id, 0..n-1 in workload order"),
  F(FabFlowRec, "src", FAB_F_U32, src, .flags = H, .doc = "sending endpoint"),
  F(FabFlowRec, "dst", FAB_F_U32, dst, .flags = H, .doc = "receiving endpoint"),
  F(FabFlowRec, "bytes", FAB_F_U64, bytes, .flags = H, .unit = "B", .doc = "payload"),
  F(FabFlowRec, "start_ps", FAB_F_U64, start, .flags = H, .unit = "ps", .doc = "posted at the sender"),
  F(FabFlowRec, "end_ps", FAB_F_U64, end, .flags = H, .unit = "ps", .doc = "last byte at the receiver; 0: not completed"),
  F(FabFlowRec, "fct_s", FAB_F_F64, fct_s, .flags = H, .unit = "s", .doc = "completion time; NaN: not completed"),
  F(FabFlowRec, "retransmits", FAB_F_U32, retransmits, .flags = H, .doc = "packets sent again"),
  F(FabFlowRec, "reorder", FAB_F_U32, reorder, .flags = H, .unit = "packets",
    .doc = "selective receivers: the most packets one arrived ahead of the next expected (0: in order)"),
};
TABLE(fab_flow_table, "flows", FabFlowRec, flow_fields);

static const FabField link_fields[] = {
  F(FabLinkRec, "from", FAB_F_NAME, from, .flags = H, .strw = 32, .doc = "node:port sending"),
  F(FabLinkRec, "to", FAB_F_NAME, to, .flags = H, .strw = 32, .doc = "node:port at the far end"),
  F(FabLinkRec, "bps", FAB_F_U64, bps, .flags = H, .unit = "bit/s", .doc = "link rate"),
  F(FabLinkRec, "bytes", FAB_F_U64, bytes, .flags = H, .unit = "B", .doc = "wire bytes sent"),
  F(FabLinkRec, "packets", FAB_F_U64, packets, .flags = H, .doc = "packets sent"),
  F(FabLinkRec, "drops", FAB_F_U64, drops, .flags = H, .doc = "packets dropped at this egress"),
  F(FabLinkRec, "max_queue_bytes", FAB_F_U64, max_queue_bytes, .flags = H, .unit = "B", .doc = "deepest queue"),
  F(FabLinkRec, "pause_tx", FAB_F_U64, pause_tx, .flags = H, .doc = "PFC PAUSE frames this port sent"),
  F(FabLinkRec, "pause_rx", FAB_F_U64, pause_rx, .flags = H, .doc = "PFC PAUSE frames this egress received"),
  F(FabLinkRec, "paused_ps", FAB_F_U64, paused, .flags = H, .unit = "ps", .doc = "time some priority was paused"),
  F(FabLinkRec, "ecn_marks", FAB_F_U64, ecn_marks, .flags = H, .doc = "packets marked CE here"),
  F(FabLinkRec, "layer", FAB_F_STR, layer, .flags = H, .strw = 8,
    .doc = "fabric (switch-switch), nic (switch-NIC), pcie (GPU-PCIe element), nvlink (GPU-NVSwitch)"),
};
TABLE(fab_link_table, "links", FabLinkRec, link_fields);

static const FabField coll_fields[] = {
  F(FabCollRec, "op", FAB_F_STR, op, .flags = J | H, .strw = 16, .doc = "allreduce, allgather, ..."),
  F(FabCollRec, "bytes", FAB_F_U64, bytes, .flags = J | H, .unit = "B", .doc = "the nccl-tests size"),
  F(FabCollRec, "count", FAB_F_U64, count, .flags = J | H, .doc = "elements, as nccl-tests counts them"),
  F(FabCollRec, "dtype_bytes", FAB_F_U32, dtype_bytes, .flags = J | H, .unit = "B", .doc = "element size"),
  F(FabCollRec, "ranks", FAB_F_U32, ranks, .flags = J | H, .doc = "ranks taking part"),
  F(FabCollRec, "root", FAB_F_I32, root, .flags = J | H, .doc = "broadcast/reduce root; -1"),
  F(FabCollRec, "algorithm", FAB_F_STR, algorithm, .flags = J | H, .strw = 16, .doc = "as chosen"),
  F(FabCollRec, "protocol", FAB_F_STR, protocol, .flags = J | H, .strw = 16, .doc = "as chosen"),
  F(FabCollRec, "channels", FAB_F_U32, channels, .flags = J | H, .doc = "as chosen"),
  F(FabCollRec, "tag", FAB_F_STR, tag, .flags = J | H | FAB_FF_NULLABLE, .strw = 32, .doc = "what it is for"),
  F(FabCollRec, "job", FAB_F_U32, job, .flags = J | H, .doc = "index in jobs"),
  F(FabCollRec, "step", FAB_F_U32, step, .flags = J | H, .doc = "training step"),
  F(FabCollRec, "start_s", FAB_F_PS_S, start, .flags = J | H, .unit = "s", .doc = "the first rank enters"),
  F(FabCollRec, "end_s", FAB_F_PS_S, end, .flags = J | H | FAB_FF_NULL0, .unit = "s", .doc = "the last rank has the result"),
  F(FabCollRec, "time_s", FAB_F_F64, time_s, .flags = J | H, .unit = "s", .doc = "end - start"),
  F(FabCollRec, "algbw_GBps", FAB_F_F64, algbw_GBps, .flags = J | H, .unit = "GB/s", .doc = "bytes / time"),
  F(FabCollRec, "busbw_GBps", FAB_F_F64, busbw_GBps, .flags = J | H, .unit = "GB/s", .doc = "algbw x nccl-tests' factor"),
  F(FabCollRec, "nic_bytes", FAB_F_U64, nic_bytes, .flags = J | H | FAB_FF_LATER, .unit = "B",
    .doc = "payload its flows carried out of nodes into the network"),
  F(FabCollRec, "nics", FAB_F_U32, nics, .flags = J | H | FAB_FF_LATER, .doc = "NIC ports that carried it"),
  F(FabCollRec, "nic_GBps", FAB_F_F64, nic_GBps, .flags = J | H | FAB_FF_LATER, .unit = "GB/s",
    .doc = "nic_bytes / nics / time: the wire's bandwidth per NIC"),
};
TABLE(fab_coll_table, "collectives", FabCollRec, coll_fields);

static const FabField span_fields[] = {
  F(FabSpanRec, "rank", FAB_F_U32, rank, .flags = H, .doc = "endpoint"),
  F(FabSpanRec, "job", FAB_F_U32, job, .flags = H, .doc = "index in jobs"),
  F(FabSpanRec, "kind", FAB_F_U8, kind, .flags = H, .doc = "0 compute, 1 collective, 2 pipeline transfer"),
  F(FabSpanRec, "phase", FAB_F_U8, phase, .flags = H, .doc = "0 forward, 1 backward, 2 optimizer, 3 other"),
  F(FabSpanRec, "coll", FAB_F_I32, coll, .flags = H, .doc = "row of /collectives, -1"),
  F(FabSpanRec, "step", FAB_F_U32, step, .flags = H, .doc = "training step"),
  F(FabSpanRec, "start_s", FAB_F_PS_S, start, .flags = H, .unit = "s"),
  F(FabSpanRec, "end_s", FAB_F_PS_S, end, .flags = H, .unit = "s"),
  F(FabSpanRec, "node", FAB_F_U64, node, .flags = H | FAB_FF_LATER,
    .doc = "the trace node id it stands for (text and chakra workloads; 2^64-1: none)"),
};
TABLE(fab_span_table, "timeline", FabSpanRec, span_fields);

static const FabField step_fields[] = {
  F(FabStepRec, "job", FAB_F_U32, job, .flags = H, .doc = "index in jobs"),
  F(FabStepRec, "job_name", FAB_F_STR, job_name, .flags = H, .strw = 64),
  F(FabStepRec, "step", FAB_F_U32, step, .flags = H),
  F(FabStepRec, "start_s", FAB_F_PS_S, start, .flags = H, .unit = "s", .doc = "the first rank begins"),
  F(FabStepRec, "end_s", FAB_F_PS_S, end, .flags = H, .unit = "s", .doc = "the last rank ends"),
  F(FabStepRec, "step_time_s", FAB_F_F64, step_time_s, .flags = H, .unit = "s"),
  F(FabStepRec, "compute_s", FAB_F_F64, compute_s, .flags = H, .unit = "s", .doc = "per rank, averaged"),
  F(FabStepRec, "comm_s", FAB_F_F64, comm_s, .flags = H, .unit = "s", .doc = "per rank, averaged"),
  F(FabStepRec, "exposed_comm_s", FAB_F_F64, exposed_comm_s, .flags = H, .unit = "s", .doc = "per rank, averaged"),
  F(FabStepRec, "overlap_s", FAB_F_F64, overlap_s, .flags = H, .unit = "s", .doc = "per rank, averaged"),
  F(FabStepRec, "bubble_s", FAB_F_F64, bubble_s, .flags = H, .unit = "s", .doc = "per rank, averaged"),
};
TABLE(fab_step_table, "steps", FabStepRec, step_fields);

static const FabField group_fields[] = { /* the key first: FAB_F_KEYED */
  F(FabCollGroup, "key", FAB_F_STR, key, .flags = J),
  F(FabCollGroup, "count", FAB_F_U64, count, .flags = J),
  F(FabCollGroup, "bytes", FAB_F_U64, bytes, .flags = J, .unit = "B"),
  F(FabCollGroup, "time_s", FAB_F_F64, time_s, .flags = J, .unit = "s", .doc = "summed over the collectives"),
  F(FabCollGroup, "per_rank", FAB_F_U64, per_rank, .flags = J, .doc = "the most of them one rank is in"),
  F(FabCollGroup, "busiest_rank_s", FAB_F_F64, busiest_rank_s, .flags = J, .unit = "s",
    .doc = "the longest time one rank spends in them, overlaps counted once"),
};
TABLE(group_table, "groups", FabCollGroup, group_fields);

static const FabField summary_fields[] = {
  F(FabStepSummary, "job", FAB_F_STR, job, .flags = J),
  ARR(FabStepSummary, "step_times_s", FAB_F_F64_ARR, step_times_s, n_step_times, .flags = J, .unit = "s"),
  F(FabStepSummary, "steps", FAB_F_U32, steps, .flags = J),
  F(FabStepSummary, "step_time_s", FAB_F_F64, step_time_s, .flags = J, .unit = "s", .col = "step_time_s", .col_pos = 14),
  F(FabStepSummary, "compute_s", FAB_F_F64, compute_s, .flags = J, .unit = "s", .col = "compute_s", .col_pos = 15),
  F(FabStepSummary, "comm_s", FAB_F_F64, comm_s, .flags = J, .unit = "s"),
  F(FabStepSummary, "exposed_comm_s", FAB_F_F64, exposed_comm_s, .flags = J, .unit = "s", .col = "exposed_comm_s",
    .col_pos = 16),
  F(FabStepSummary, "overlap_s", FAB_F_F64, overlap_s, .flags = J, .unit = "s"),
  F(FabStepSummary, "bubble_s", FAB_F_F64, bubble_s, .flags = J, .unit = "s"),
  F(FabStepSummary, "bubble_fraction", FAB_F_F64, bubble_fraction, .flags = J, .col = "bubble_fraction", .col_pos = 17),
  {.name = "by_op", .type = FAB_F_KEYED, .off = offsetof(FabStepSummary, by_op), .off_n = offsetof(FabStepSummary, n_by_op),
   .sub = &group_table, .flags = J},
  {.name = "by_tag", .type = FAB_F_KEYED, .off = offsetof(FabStepSummary, by_tag),
   .off_n = offsetof(FabStepSummary, n_by_tag), .sub = &group_table, .flags = J},
};
TABLE(summary_table, "step", FabStepSummary, summary_fields);

static const FabField job_fields[] = {
  F(FabJobRec, "name", FAB_F_STR, name, .flags = J | H, .strw = 64),
  F(FabJobRec, "kind", FAB_F_STR, kind, .flags = J | H, .strw = 16),
  F(FabJobRec, "ranks", FAB_F_U32, ranks, .flags = J | H),
  F(FabJobRec, "flows", FAB_F_U32, flows, .flags = J | H),
  F(FabJobRec, "completed", FAB_F_U32, completed, .flags = J | H),
  F(FabJobRec, "bytes", FAB_F_U64, bytes, .flags = J | H, .unit = "B"),
  F(FabJobRec, "start_s", FAB_F_PS_S, start, .flags = J | H, .unit = "s"),
  F(FabJobRec, "end_s", FAB_F_PS_S, end, .flags = J | H | FAB_FF_NULL0, .unit = "s"),
  F(FabJobRec, "time_s", FAB_F_F64, time_s, .flags = J | H, .unit = "s"),
  F(FabJobRec, "step", FAB_F_PTR, step, .sub = &summary_table, .flags = J),
};
TABLE(fab_job_table, "jobs", FabJobRec, job_fields);

static const FabField failure_fields[] = {
  F(FabFailureRec, "link", FAB_F_NAME, link, .flags = J | H, .strw = FAB_FIELD_NAME_LEN,
    .doc = "the two elements it joins, as A-B"),
  F(FabFailureRec, "change", FAB_F_STR, change, .flags = J | H, .strw = 24,
    .doc = "down | up | rate | latency | rate and latency"),
  F(FabFailureRec, "at_s", FAB_F_PS_S, at, .flags = J | H, .unit = "s"),
  F(FabFailureRec, "bandwidth_bps", FAB_F_U64, bps, .flags = J | H | FAB_FF_NULL0, .unit = "bit/s",
    .doc = "the new rate (null: unchanged)"),
  F(FabFailureRec, "lost_packets", FAB_F_U64, lost, .flags = J | H,
    .doc = "down: packets the link lost while down (on it, queued for it, sent to it before the routes changed)"),
  F(FabFailureRec, "lost_bytes", FAB_F_U64, lost_bytes, .flags = J | H, .unit = "B"),
  F(FabFailureRec, "routes_changed", FAB_F_U64, rerouted, .flags = J | H,
    .doc = "(switch, endpoint) routes that moved because of it"),
  F(FabFailureRec, "rerouted_at_s", FAB_F_PS_S, rerouted_at, .flags = J | H | FAB_FF_NULL0, .unit = "s",
    .doc = "when the last of them moved (null: none did)"),
};
TABLE(fab_failure_table, "failures", FabFailureRec, failure_fields);

static const FabField impact_fields[] = {
  F(FabFailureImpact, "baseline_time_s", FAB_F_PS_S, baseline_time, .flags = J, .unit = "s",
    .doc = "when the workload ended without fabric.failures"),
  F(FabFailureImpact, "slowdown", FAB_F_F64, slowdown, .flags = J,
    .doc = "sim_time_s / baseline_time_s - 1"),
  F(FabFailureImpact, "baseline_fct_p50_s", FAB_F_F64, baseline_fct_p50_s, .flags = J, .unit = "s"),
  F(FabFailureImpact, "baseline_fct_p99_s", FAB_F_F64, baseline_fct_p99_s, .flags = J, .unit = "s"),
  F(FabFailureImpact, "baseline_fct_max_s", FAB_F_F64, baseline_fct_max_s, .flags = J, .unit = "s"),
  F(FabFailureImpact, "baseline_retransmits", FAB_F_U64, baseline_retransmits, .flags = J),
  F(FabFailureImpact, "moved_bytes", FAB_F_U64, moved_bytes, .flags = J, .unit = "B",
    .doc = "what the links named in fabric.failures carried less than without them, both directions"),
};
TABLE(fab_impact_table, "failure_impact", FabFailureImpact, impact_fields);

static const FabField ff_fields[] = {
  F(FabFfRec, "window_s", FAB_F_PS_S, window, .flags = J, .unit = "s", .doc = "fabric.fast_forward_window"),
  F(FabFfRec, "tolerance", FAB_F_F64, tolerance, .flags = J, .doc = "fabric.fast_forward_tolerance"),
  F(FabFfRec, "looks", FAB_F_U64, looks, .flags = J, .doc = "windows looked at"),
  F(FabFfRec, "jumps", FAB_F_U64, jumps, .flags = J),
  F(FabFfRec, "skipped_s", FAB_F_PS_S, skipped, .flags = J, .unit = "s", .doc = "simulated time jumped over"),
  F(FabFfRec, "skipped_fraction", FAB_F_F64, skipped_fraction, .flags = J, .doc = "of sim_time_s"),
  F(FabFfRec, "skipped_packets", FAB_F_U64, skipped_packets, .flags = J,
    .doc = "data packets not simulated: their bytes arrived in the jumps"),
};
TABLE(fab_ff_table, "fast_forward", FabFfRec, ff_fields);

static const FabField sharp_tree_fields[] = {
  F(FabSharpTreeRec, "id", FAB_F_U32, id, .flags = J | H, .doc = "the tree's number, in claim order"),
  F(FabSharpTreeRec, "job", FAB_F_U32, job, .flags = J | H, .doc = "the job whose communicator claimed it"),
  F(FabSharpTreeRec, "root", FAB_F_NAME, root, .flags = J | H, .strw = 32, .doc = "the root switch"),
  F(FabSharpTreeRec, "nodes", FAB_F_U32, nodes, .flags = J | H, .doc = "aggregation nodes (switches)"),
  F(FabSharpTreeRec, "members", FAB_F_U32, members, .flags = J | H, .doc = "ranks"),
  F(FabSharpTreeRec, "reductions", FAB_F_U64, reductions, .flags = J | H),
  F(FabSharpTreeRec, "llt_reductions", FAB_F_U64, llt_reductions, .flags = J | H,
    .doc = "of which on the low-latency tree (below sat_threshold)"),
  F(FabSharpTreeRec, "bytes_in", FAB_F_U64, bytes_in, .flags = J | H, .unit = "B", .doc = "payload the members sent up"),
  F(FabSharpTreeRec, "bytes_out", FAB_F_U64, bytes_out, .flags = J | H, .unit = "B",
    .doc = "payload of the results delivered to members"),
  F(FabSharpTreeRec, "peak_buffer_bytes", FAB_F_U64, peak_buffer_bytes, .flags = J | H, .unit = "B",
    .doc = "the most one aggregation node held in partial sums at once"),
  F(FabSharpTreeRec, "active_s", FAB_F_PS_S, active, .flags = J | H, .unit = "s", .doc = "time with a reduction running"),
  F(FabSharpTreeRec, "lock_waits", FAB_F_U64, lock_waits, .flags = J | H, .doc = "reductions that waited for its locks"),
  F(FabSharpTreeRec, "lock_wait_s", FAB_F_PS_S, lock_wait, .flags = J | H, .unit = "s", .doc = "their waits, summed"),
};
TABLE(fab_sharp_tree_table, "sharp_trees", FabSharpTreeRec, sharp_tree_fields);

static const FabField sharp_fields[] = {
  F(FabSharpRec, "model", FAB_F_STR, model, .flags = J, .doc = "fabric.switch.sharp.model"),
  F(FabSharpRec, "lock", FAB_F_STR, lock, .flags = J, .doc = "fabric.switch.sharp.lock"),
  F(FabSharpRec, "fallbacks", FAB_F_U32, fallbacks, .flags = J, .doc = "collectives that found no tree"),
  ARR(FabSharpRec, "trees", FAB_F_ARR, trees, n_trees, .sub = &fab_sharp_tree_table, .flags = J),
};
TABLE(fab_sharp_table, "sharp", FabSharpRec, sharp_fields);

static const FabField reorder_fields[] = {
  F(FabReorderBin, "ahead", FAB_F_STR, ahead, .flags = H, .strw = 8, .unit = "packets",
    .doc = "how many PSNs ahead of the next expected: 0, 1, 2-3, ..., 128-255, 256+"),
  F(FabReorderBin, "packets", FAB_F_U64, packets, .flags = H,
    .doc = "network data packets received the first time that far ahead"),
};
TABLE(fab_reorder_table, "reorder", FabReorderBin, reorder_fields);

static const FabField flow_summary_fields[] = {
  F(FabFlowSummary, "count", FAB_F_U64, count, .flags = J, .col = "flows_count", .col_pos = 10),
  F(FabFlowSummary, "completed", FAB_F_U64, completed, .flags = J, .col = "flows_completed", .col_pos = 9),
  F(FabFlowSummary, "bytes", FAB_F_U64, bytes, .flags = J, .unit = "B"),
  F(FabFlowSummary, "fct_p50_s", FAB_F_F64, fct_p50_s, .flags = J, .unit = "s", .col = "fct_p50_s", .col_pos = 11),
  F(FabFlowSummary, "fct_p99_s", FAB_F_F64, fct_p99_s, .flags = J, .unit = "s", .col = "fct_p99_s", .col_pos = 12),
  F(FabFlowSummary, "fct_max_s", FAB_F_F64, fct_max_s, .flags = J, .unit = "s", .col = "fct_max_s", .col_pos = 13),
};
TABLE(flow_summary_table, "flows", FabFlowSummary, flow_summary_fields);

#define R(NAME, TYPE, FIELD, ...) F(FabResults, NAME, TYPE, FIELD, __VA_ARGS__)
static const FabField results_fields[] = {
  R("fabsim_version", FAB_F_STR, version, .flags = J | M),
  R("scenario", FAB_F_STR, scenario, .flags = J | M, .doc = "its name"),
  R("seed", FAB_F_U64, seed, .flags = J | M),
  R("sim_time_ps", FAB_F_U64, sim_time, .flags = M, .unit = "ps"),
  R("status", FAB_F_STR, status, .flags = J, .doc = "ok | failed"),
  R("failure", FAB_F_STR, failure, .flags = J | FAB_FF_NULLABLE, .doc = "why it failed"),
  R("topology", FAB_F_STR, topology, .flags = J),
  R("sim_time_s", FAB_F_PS_S, sim_time, .flags = J, .unit = "s", .col = "sim_time_s", .col_pos = 0,
    .doc = "when the workload ended"),
  R("wall_s", FAB_F_F64, wall_s, .flags = J, .unit = "s", .col = "wall_s", .col_pos = 18),
  R("events", FAB_F_U64, events, .flags = J | M, .col = "events", .col_pos = 1),
  R("events_per_s", FAB_F_F64, events_per_s, .flags = J, .unit = "1/s"),
  R("packet_hops", FAB_F_U64, packet_hops, .flags = J | M, .col = "packet_hops", .col_pos = 2),
  R("packet_hops_per_s", FAB_F_F64, packet_hops_per_s, .flags = J, .unit = "1/s"),
  R("endpoints", FAB_F_U32, endpoints, .flags = J),
  R("nvlink_segment_bytes", FAB_F_U32, nvlink_segment, .flags = J | M | FAB_FF_NULL0, .unit = "B"),
  R("flows", FAB_F_OBJ, flow_stats, .sub = &flow_summary_table, .flags = J),
  R("drops", FAB_F_U64, drops, .flags = J, .col = "drops", .col_pos = 3),
  R("retransmits", FAB_F_U64, retransmits, .flags = J, .col = "retransmits", .col_pos = 4),
  R("pfc_pause_frames", FAB_F_U64, pfc_pause_frames, .flags = J, .col = "pfc_pause_frames", .col_pos = 5),
  R("ecn_marks", FAB_F_U64, ecn_marks, .flags = J, .col = "ecn_marks", .col_pos = 6),
  R("cnps", FAB_F_U64, cnps, .flags = J, .col = "cnps", .col_pos = 7),
  R("pfc_paused_s", FAB_F_PS_S, pfc_paused, .flags = J, .unit = "s"),
  R("max_queue_bytes", FAB_F_U64, max_queue_bytes, .flags = J, .unit = "B", .col = "max_queue_bytes", .col_pos = 8),
  ARR(FabResults, "deadlock", FAB_F_NAME_ARR, deadlock, n_deadlock, .flags = J | FAB_FF_NULLABLE),
  ARR(FabResults, "collectives", FAB_F_ARR, colls, n_colls, .sub = &fab_coll_table, .flags = J),
  R("step", FAB_F_PTR, step, .sub = &summary_table, .flags = J, .doc = "the first training job's steps"),
  ARR(FabResults, "jobs", FAB_F_ARR, jobs, n_jobs, .sub = &fab_job_table, .flags = J),
  ARR(FabResults, "failures", FAB_F_ARR, failures, n_failures, .sub = &fab_failure_table, .flags = J,
      .doc = "fabric.failures and what each did"),
  ARR(FabResults, "warnings", FAB_F_STR_ARR, warnings, n_warnings, .flags = J,
      .doc = "what the scenario's settings cost (on stderr too)"),
  R("fabric_segment_bytes", FAB_F_U32, fabric_segment, .flags = J | M | FAB_FF_NULL0, .unit = "B",
    .doc = "fabric.segment: payload per train on the network (null: packet by packet); last, so sweep columns "
           "only grow at the end"),
  R("failure_impact", FAB_F_PTR, impact, .sub = &fab_impact_table, .flags = J,
    .doc = "fabric.failures against the same run without them (fabric.failure_baseline), null: none"),
  R("fast_forward", FAB_F_PTR, ff, .sub = &fab_ff_table, .flags = J,
    .doc = "what the steady-state fast-forward did (fabric.fast_forward), null: off"),
  R("sharp", FAB_F_PTR, sharp, .sub = &fab_sharp_table, .flags = J,
    .doc = "SHARP's trees and what ran on them (fabric.switch.sharp), null: off"),
  R("nvls_segment_bytes", FAB_F_U32, nvls_segment, .flags = J | M | FAB_FF_NULL0, .unit = "B",
    .doc = "cluster.nvlink.nvls_segment: NVLS traffic's payload per segment at most (null: NCCL's chunk)"),
};
TABLE(fab_results_table, "results", FabResults, results_fields);

/* ---- derived values ---------------------------------------------------------- */

double fab_results_busbw_factor(const char *op, uint32_t n) {
  for (int i = 0; op && fab_coll_op_names[i]; i++)
    if (strcmp(fab_coll_op_names[i], op) == 0) return n ? fab_coll_busbw_factor((FabCollOp)i, n) : 1;
  return 1;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

void fab_flow_fold_add(FabFlowFold *f, const FabFlowRec *r) {
  f->count++;
  f->bytes += r->bytes;
  if (!r->end) return;
  f->completed++;
  f->sorted = false;
  uint64_t v = r->end - r->start;
  if (v <= UINT32_MAX) {
    if (!f->fct32) f->fct32 = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint32_t w = (uint32_t)v;
    g_array_append_val(f->fct32, w);
  } else {
    if (!f->fct64) f->fct64 = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    g_array_append_val(f->fct64, v);
  }
}

void fab_flow_fold_clear(FabFlowFold *f) {
  if (f->fct32) g_array_free(f->fct32, TRUE);
  if (f->fct64) g_array_free(f->fct64, TRUE);
  memset(f, 0, sizeof *f);
}

/* The nearest rank p (percent) of n completion times, the k-th smallest
** from at(ctx, k); NaN when none (null in the JSON, not 0 s). */
static double nearest_rank(size_t n, double p, uint64_t (*at)(const void *, size_t), const void *ctx) {
  if (!n) return NAN;
  size_t rank = (size_t)ceil(p / 100.0 * (double)n);
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  return fab_time_to_s(at(ctx, rank - 1));
}

static uint64_t at_u64(const void *ctx, size_t k) { return ((const uint64_t *)ctx)[k]; }

/* The folded times, sorted: the 4-byte ones (all below 2^32) then the others. */
static uint64_t at_fold(const void *ctx, size_t k) {
  const FabFlowFold *f = ctx;
  size_t n32 = f->fct32 ? f->fct32->len : 0;
  return k < n32 ? g_array_index(f->fct32, uint32_t, k) : g_array_index(f->fct64, uint64_t, k - n32);
}

/* Sort v[0 .. n) in place, most significant byte first (American flag
** sort: each byte's buckets are filled by cycling elements into place),
** by insertion below 64 elements. glibc's qsort copies an array this
** size into a buffer of its own: 134 MB more at the end of a 1024-GPU
** ring's 33.5 M completion times. */
static void sort_u32(uint32_t *v, size_t n, unsigned shift) {
  if (n < 64) {
    for (size_t i = 1; i < n; i++) {
      uint32_t x = v[i];
      size_t j = i;
      for (; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];
      v[j] = x;
    }
    return;
  }
  size_t count[256] = {0}, next[256], end[256];
  for (size_t i = 0; i < n; i++) count[(v[i] >> shift) & 255]++;
  for (size_t d = 0, at = 0; d < 256; d++) next[d] = at, at += count[d], end[d] = at;
  for (size_t d = 0; d < 256; d++)
    while (next[d] < end[d]) { /* carry v[next[d]] to its bucket, and what it displaces, until one belongs in d */
      uint32_t x = v[next[d]];
      for (size_t e = (x >> shift) & 255; e != d; e = (x >> shift) & 255) {
        uint32_t y = v[next[e]];
        v[next[e]++] = x;
        x = y;
      }
      v[next[d]++] = x;
    }
  if (shift)
    for (size_t d = 0, at = 0; d < 256; at += count[d], d++) sort_u32(v + at, count[d], shift - 8);
}

static void fold_sort(FabFlowFold *f) {
  if (f->sorted) return;
  if (f->fct32) sort_u32((uint32_t *)(void *)f->fct32->data, f->fct32->len, 24);
  if (f->fct64) qsort(f->fct64->data, f->fct64->len, sizeof(uint64_t), cmp_u64);
  f->sorted = true;
}

/* The records' completion times, sorted (ps); *n of them. */
static uint64_t *fct_sorted(const FabResults *r, size_t *n) {
  uint64_t *v = g_new(uint64_t, r->n_flows ? r->n_flows : 1);
  *n = 0;
  for (size_t i = 0; i < r->n_flows; i++)
    if (r->flows[i].end) v[(*n)++] = r->flows[i].end - r->flows[i].start;
  if (*n) qsort(v, *n, sizeof *v, cmp_u64);
  return v;
}

double fab_results_fct_percentile(const FabResults *r, double p) {
  if (!r->flows && r->flow_fold.completed) {
    FabFlowFold f = r->flow_fold; /* sorted by fab_results_finalize; else sorted here (the arrays are r's) */
    fold_sort(&f);
    return nearest_rank(f.completed, p, at_fold, &f);
  }
  size_t n;
  uint64_t *v = fct_sorted(r, &n);
  double out = nearest_rank(n, p, at_u64, v);
  g_free(v);
  return out;
}

static void finalize_flows(FabResults *r) {
  FabFlowSummary *fs = &r->flow_stats;
  memset(fs, 0, sizeof *fs);
  if (!r->flows && r->flow_fold.count) { /* the records were folded as the run went */
    FabFlowFold *f = &r->flow_fold;
    fs->count = f->count;
    fs->completed = f->completed;
    fs->bytes = f->bytes;
    fold_sort(f);
    fs->fct_p50_s = nearest_rank(f->completed, 50, at_fold, f);
    fs->fct_p99_s = nearest_rank(f->completed, 99, at_fold, f);
    fs->fct_max_s = nearest_rank(f->completed, 100, at_fold, f);
    return;
  }
  for (size_t i = 0; i < r->n_flows; i++) {
    FabFlowRec *f = &r->flows[i];
    fs->count++;
    fs->bytes += f->bytes;
    fs->completed += f->end != 0;
    f->fct_s = f->end ? fab_time_to_s(f->end - f->start) : NAN;
  }
  size_t n;
  uint64_t *v = fct_sorted(r, &n);
  fs->fct_p50_s = nearest_rank(n, 50, at_u64, v);
  fs->fct_p99_s = nearest_rank(n, 99, at_u64, v);
  fs->fct_max_s = nearest_rank(n, 100, at_u64, v);
  g_free(v);
}

static void finalize_colls(FabResults *r) {
  for (size_t i = 0; i < r->n_colls; i++) {
    FabCollRec *c = &r->colls[i];
    double t = c->end ? fab_time_to_s(c->end - c->start) : 0, algbw = t > 0 ? (double)c->bytes / t / 1e9 : 0;
    c->time_s = c->end ? t : NAN;
    c->algbw_GBps = c->end ? algbw : NAN;
    c->busbw_GBps = c->end ? algbw * fab_results_busbw_factor(c->op, c->ranks) : NAN;
    c->nic_GBps = !c->end ? NAN : c->nics && c->time_s > 0 ? (double)c->nic_bytes / c->nics / c->time_s / 1e9 : 0;
  }
}

static int busy_order(const void *a, const void *b) {
  const FabBusySpan *x = a, *y = b;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return x->start < y->start ? -1 : x->start > y->start;
}

void fab_results_busiest(GArray *b, size_t *most, double *longest_s) {
  g_array_sort(b, busy_order);
  *most = 0;
  *longest_s = 0;
  for (guint x = 0; x < b->len;) {
    const FabBusySpan *f = &g_array_index(b, FabBusySpan, x);
    uint32_t rank = f->rank;
    fab_time_t lo = f->start, hi = f->end, total = 0;
    size_t n = 0;
    for (; x < b->len && g_array_index(b, FabBusySpan, x).rank == rank; x++, n++) {
      const FabBusySpan *e = &g_array_index(b, FabBusySpan, x);
      if (e->start > hi) {
        total += hi - lo;
        lo = e->start;
        hi = e->end;
      } else if (e->end > hi) {
        hi = e->end;
      }
    }
    total += hi - lo;
    *most = MAX(*most, n);
    *longest_s = MAX(*longest_s, fab_time_to_s(total));
  }
}

/* The collectives of job j grouped by op (by_tag: by tag), in order of first
** appearance, with the busiest rank's share from the timeline. Transfer full. */
static FabCollGroup *group_colls(const FabResults *r, uint32_t j, bool by_tag, size_t *n) {
  GArray *g = g_array_new(FALSE, TRUE, sizeof(FabCollGroup));
  GHashTable *at = g_hash_table_new(g_str_hash, g_str_equal); /* key -> index + 1 */
  guint *key_of = g_new0(guint, r->n_colls + 1);               /* collective -> its group + 1 */
  for (size_t i = 0; i < r->n_colls; i++) {
    const FabCollRec *c = &r->colls[i];
    if (c->job != j) continue;
    const char *key = by_tag ? (c->tag ? c->tag : "none") : c->op;
    guint k = GPOINTER_TO_UINT(g_hash_table_lookup(at, key));
    if (!k) {
      FabCollGroup ng = {key, 0, 0, 0, 0, 0};
      g_array_append_val(g, ng);
      k = g->len;
      g_hash_table_insert(at, (gpointer)key, GUINT_TO_POINTER(k));
    }
    key_of[i] = k;
    FabCollGroup *cg = &g_array_index(g, FabCollGroup, k - 1);
    cg->count++;
    cg->bytes += c->bytes;
    cg->time_s += c->end ? fab_time_to_s(c->end - c->start) : 0;
  }
  GArray **busy = g_new0(GArray *, g->len + 1);
  for (size_t x = 0; x < r->n_spans; x++) {
    const FabSpanRec *sp = &r->spans[x];
    if (sp->kind == 0 || sp->job != j || sp->coll < 0 || (size_t)sp->coll >= r->n_colls || !key_of[sp->coll]) continue;
    guint k = key_of[sp->coll] - 1;
    if (!busy[k]) busy[k] = g_array_new(FALSE, FALSE, sizeof(FabBusySpan));
    FabBusySpan b = {sp->rank, sp->start, sp->end};
    g_array_append_val(busy[k], b);
  }
  for (guint k = 0; k < g->len; k++) {
    if (!busy[k]) continue;
    FabCollGroup *cg = &g_array_index(g, FabCollGroup, k);
    size_t most;
    fab_results_busiest(busy[k], &most, &cg->busiest_rank_s);
    cg->per_rank = most;
    g_array_unref(busy[k]);
  }
  g_free(busy);
  g_free(key_of);
  g_hash_table_destroy(at);
  *n = g->len;
  return (FabCollGroup *)(void *)g_array_free(g, FALSE);
}

/* Job j's steps averaged; FALSE if it has none. */
static bool summarise(FabResults *r, uint32_t j, FabStepSummary *s) {
  double n = 0, step = 0, comp = 0, comm = 0, exp = 0, ovl = 0, bub = 0;
  GArray *times = g_array_new(FALSE, FALSE, sizeof(double));
  for (size_t k = 0; k < r->n_steps; k++) {
    const FabStepRec *st = &r->steps[k];
    if (st->job != j) continue;
    double t = st->end > st->start ? fab_time_to_s(st->end - st->start) : 0;
    g_array_append_val(times, t);
    n++;
    step += t;
    comp += st->compute_s;
    comm += st->comm_s;
    exp += st->exposed_comm_s;
    ovl += st->overlap_s;
    bub += st->bubble_s;
  }
  if (!n) {
    g_array_free(times, TRUE);
    return false;
  }
  *s = (FabStepSummary){.job = j < r->n_jobs ? r->jobs[j].name : "", .steps = (uint32_t)n,
                        .step_time_s = step / n, .compute_s = comp / n, .comm_s = comm / n,
                        .exposed_comm_s = exp / n, .overlap_s = ovl / n, .bubble_s = bub / n,
                        .bubble_fraction = step > 0 ? bub / step : 0};
  s->n_step_times = times->len;
  s->step_times_s = (double *)(void *)g_array_free(times, FALSE);
  s->by_op = group_colls(r, j, false, &s->n_by_op);
  s->by_tag = group_colls(r, j, true, &s->n_by_tag);
  return true;
}

static void finalize_jobs(FabResults *r) {
  r->summaries = g_new0(FabStepSummary, r->n_jobs ? r->n_jobs : 1);
  r->step = NULL;
  for (size_t k = 0; k < r->n_steps; k++) {
    FabStepRec *st = &r->steps[k];
    st->job_name = st->job < r->n_jobs ? r->jobs[st->job].name : "";
    st->step_time_s = fab_time_to_s(st->end - st->start);
  }
  for (size_t j = 0; j < r->n_jobs; j++) {
    FabJobRec *jr = &r->jobs[j];
    jr->time_s = jr->end ? fab_time_to_s(jr->end - jr->start) : NAN;
    jr->step = summarise(r, (uint32_t)j, &r->summaries[j]) ? &r->summaries[j] : NULL;
    if (jr->step && !r->step) r->step = jr->step;
  }
}

void fab_results_finalize(FabResults *r) {
  r->status = r->failure ? "failed" : "ok";
  r->events_per_s = r->wall_s > 0 ? round((double)r->events / r->wall_s) : 0;
  r->packet_hops_per_s = r->wall_s > 0 ? round((double)r->packet_hops / r->wall_s) : 0;
  finalize_flows(r);
  finalize_colls(r);
  finalize_jobs(r);
}

void fab_results_clear(FabResults *r) {
  if (!r) return;
  g_free((char *)r->failure);
  g_free(r->flows);
  fab_flow_fold_clear(&r->flow_fold);
  g_free(r->links);
  g_free(r->queues.port);
  g_free(r->queues.t);
  g_free(r->queues.depth);
  g_free(r->queues.depth_prio);
  g_free(r->queues.flow_rate);
  g_free(r->queues.link_bytes);
  g_free(r->colls);
  g_free(r->spans);
  g_free(r->steps);
  for (size_t j = 0; r->summaries && j < r->n_jobs; j++) {
    g_free(r->summaries[j].step_times_s);
    g_free(r->summaries[j].by_op);
    g_free(r->summaries[j].by_tag);
  }
  g_free(r->summaries);
  g_free(r->jobs);
  g_free(r->failures);
  g_free(r->impact);
  g_free(r->ff);
  if (r->sharp) g_free(r->sharp->trees);
  g_free(r->sharp);
  g_free(r->reorder);
  g_free(r->deadlock);
  for (size_t i = 0; i < r->n_warnings; i++) g_free(r->warnings[i]);
  g_free(r->warnings);
  memset(r, 0, sizeof *r);
}

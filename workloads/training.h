/*
** Training steps: a model and its parallelism turned into compute and
** collectives, per rank, in a FabDag.
**
** workload:
**   kind: training
**   model: {params: 7B | layers: 32, hidden: 4096, [ffn: 4*hidden], [heads],
**           seq: 4096, micro_batch: 1, global_batch: 512, dtype: bf16,
**           [experts: 8, top_k: 2, moe_every: 1]}
**   parallelism: {dp (default: ranks / (tp x pp x cp)), tp: 1, pp: 1, ep: 1,
**                 cp: 1 (context parallel), sp: false (sequence parallel),
**                 zero: 0..3 | fsdp, microbatches: global_batch / (micro_batch x dp)}
**   gpu: {flops: 989TFLOPS, efficiency: 0.4, memory_bandwidth: 3.35TB/s}
**                                (each defaults to the cluster preset's)
**   bucket: 25MiB                (DDP gradient bucket)
**   overlap: true                (gradient reduction overlaps backward)
**   steps: 1
**   compute_table: FILE.csv      (measured compute times per part; train_table.c)
**   layer_group: 1               (fidelity: this many layers form one block)
**   algorithm, protocol, channels, chunk   (for every collective of the job; auto)
**
** With `params` alone, a GPT-like shape is derived (training.c says how).
**
** Ranks are laid out as Megatron does: tp fastest, then cp, then dp, then
** pp (rank = tp_i + tp x (cp_i + cp x (dp_i + dp x pp_i))); ep groups
** split dp x cp.
**
** Per step and rank:
**  - forward then backward per layer of its stage, per microbatch, in the
**    1F1B order (warm-up forwards, steady one-forward-one-backward,
**    cool-down backwards); compute time = FLOPs / (peak x efficiency) / tp;
**  - TP: per layer two allreduces of micro_batch x seq x hidden x dtype in
**    forward and two in backward, over the rank's tp group (sp: allgathers
**    and reduce-scatters instead);
**  - CP (cp > 1): seq / cp tokens per rank; each layer's core attention a
**    ring of K/V send-recvs over the rank's cp group, under its compute;
**  - PP: the activation (micro_batch x seq x hidden x dtype) is sent to the
**    next stage after each forward, and its gradient back after each
**    backward, as flows between the stages (simulated, not a formula);
**  - EP (MoE layers): an all-to-all before and after the expert MLP, in
**    forward and backward, over the ep group;
**  - DP: gradients in buckets of `bucket` bytes, each allreduced over the dp
**    group as soon as the last microbatch's backward has produced it (with
**    overlap), or all after the backward (without), one after another on
**    the dp communicator in the order they are ready; ZeRO-1/2 reduce-scatter
**    the gradients and allgather the updated parameters; ZeRO-3/FSDP also
**    allgather each layer's parameters before its forward and backward;
**  - an optimizer step, then the next step.
*/
#ifndef FAB_TRAINING_H
#define FAB_TRAINING_H

#include "collective.h"
#include "job.h"
#include "sim/config.h"

/* The keys of a training job, as fab_training_schema reads them. */
typedef struct FabTrainIn {
  FabJobIn job;                               /* first: kind, name, ranks, start */
  const FabCfgNode *model, *parallelism, *gpu; /* read by fab_training_build */
  uint64_t bucket;                            /* bytes: DDP gradient bucket */
  uint32_t steps, layer_group, channels;
  uint64_t chunk;                             /* bytes per pipelined piece of every collective; 0: auto */
  bool overlap;                               /* gradient reduction overlaps the backward */
  int recompute;                              /* 0 none, 1 selective (core attention), 2 full (every layer) */
  int algorithm, protocol;                    /* FabCollAlgo, FabProto of every collective */
  int cta_policy;                             /* 1: zero (FabCollSpec.cta_zero) */
  const char *compute_table;                  /* measured compute times (CSV, near the scenario), or NULL */
  uint64_t seed, stream;                      /* not keys: the scenario seed and the job's stream (MoE routing) */
} FabTrainIn;

/* The training job's schema (fab_job_prefix spliced in first). */
extern const FabCfgKey fab_training_schema[];

/* What the cluster says of its GPUs (0: nothing known; the workload's gpu
** map must then give it). */
typedef struct FabTrainGpu {
  double flops;             /* peak FLOP/s */
  double eff;               /* achieved fraction of it */
  uint64_t memory_bps;      /* memory (HBM) bandwidth, bits/s */
} FabTrainGpu;

/* Append the ops of the training job read into `in` (from the map `wl`,
** whose model, parallelism and gpu maps it reads) to `d` as job `job`, whose
** rank i is endpoint ranks[i]; `gpu` is what the cluster knows of the GPUs.
** Collectives use algorithm/protocol `auto` unless wl says otherwise.
** Returns FALSE + err (file:line:col, key) on bad input, including a
** parallelism that does not fit nranks; d is then as it was. */
gboolean fab_training_build(const FabTrainIn *in, const FabCfgNode *wl, FabDag *d, const FabCollEnv *env,
                            const uint32_t *ranks, uint32_t nranks, uint16_t job, const FabTrainGpu *gpu,
                            GError **err);

/* A training job made as the run goes (the last job of a workload): ops a
** round at a time, in the same order as fab_training_build makes them (see
** training.c, "Rounds"). fab_training_begin reads and checks the job as
** fab_training_build does (every kind of collective it will make is made
** once and taken back, so nothing fails later) and makes nothing yet;
** with `unfold`, a job whose stages are alike may be made as it runs
** (fab_training_gen_unfolds) and has no cap on its operations but what op
** indices number; otherwise it is capped as a whole. fab_training_gen_more
** makes rounds until at least `min_ops` ops are made or the job is done:
** 1 more to come, 0 done, -1 + err (only for a job that does not unfold:
** past the cap, or a failed expansion; the caller then drops the DAG). */
typedef struct FabTrainGen FabTrainGen;
FabTrainGen *fab_training_begin(const FabTrainIn *in, const FabCfgNode *wl, FabDag *d, const FabCollEnv *env,
                                const uint32_t *ranks, uint32_t nranks, uint16_t job, const FabTrainGpu *gpu,
                                bool unfold, GError **err);
int fab_training_gen_more(FabTrainGen *g, uint32_t min_ops, GError **err);
bool fab_training_gen_unfolds(const FabTrainGen *g);
double fab_training_gen_estimate(const FabTrainGen *g); /* ops the whole job makes, about */
void fab_training_gen_free(FabTrainGen *g);

#endif

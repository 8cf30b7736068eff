/*
** The training job's plan, shared by training.c (the ops) and train_plan.c
** (the YAML and the plan). Internal to workloads/.
*/
#ifndef FAB_TRAIN_INT_H
#define FAB_TRAIN_INT_H

#include "training.h"

#define MAX_OPS FAB_DAG_MAX_OPS /* guard: ops one training job may add (the whole workload's: a 70B step on 256
                                 ** GPUs, tp 8 pp 4 dp 8, needs 5.1 M at default fidelity) */
#define FAB_TRAIN_NTAGS 6 /* collective tags: fab_train__tags */
/* A key's node, or the map's when the key is absent (for errors). */
#define AT_KEY(map, key) (fab_cfg_get((map), (key)) ? fab_cfg_get((map), (key)) : (map))

typedef struct ModelIn {
  const FabCfgNode *params;
  uint64_t layers, hidden, ffn, heads, kv_heads, seq, micro_batch, global_batch, experts, top_k, moe_every;
  double moe_skew;     /* expert popularity: the i-th most popular expert's share ~ 1 / i^moe_skew (0: balanced) */
  double moe_cap;      /* moe_capacity_factor: tokens an expert takes from a rank, x its even share (0: no limit) */
  uint64_t vocab;      /* 0: no embeddings, output layer or loss */
  uint64_t moe_ffn;    /* an expert's MLP width (0: ffn) */
  uint64_t shared;     /* shared experts: in every MoE layer, of moe_ffn each, every token through them, on the rank */
  uint64_t first_dense;/* the first this many layers are dense (DeepSeek's first_k_dense_replace) */
  uint64_t q_lora, kv_lora, qk_dim, qk_rope, v_dim; /* multi-head latent attention (kv_lora > 0): ranks, head dims */
  bool tie;            /* tie_embeddings: the output layer is the embedding table */
  int dtype;
  int mlp;             /* 0 gelu (two MLP matrices), 1 swiglu (three: gate, up, down) */
  int preset;          /* 0 none, else a row of train_plan.c's model presets */
} ModelIn;

/* Measured compute (workload.compute_table, train_table.c): picoseconds per layer, microbatch and rank, per part
** and pass (forward, backward; the optimizer's step in [TT_OPT][0]); 0: not given (FLOPs / rate). */
enum { TT_ATTN, TT_MLP, TT_MOE, TT_LOGITS, TT_OPT, TT_NPART };
typedef struct TrainTable {
  fab_time_t ps[TT_NPART][2];
  uint32_t line[TT_NPART][2]; /* the row's line in its file */
} TrainTable;
extern const char *const fab_train__part_names[TT_NPART + 1];
/* Read the CSV at path into tb; FALSE + err ("path:line:col: ...") when it cannot be read or is not a table. */
gboolean fab_train__read_table(const char *path, TrainTable *tb, GError **err);

typedef struct Shape {
  uint64_t layers, hidden, ffn;
  uint64_t effn; /* an expert's MLP width */
  double qkvo;   /* the attention's weights (Q, K, V, O) in units of h^2: 4, or 2 + 2 kv_heads/heads (GQA), or MLA's */
  double oproj;  /* O's part of them: 1, or H v_head_dim / h (MLA) */
  double core;   /* the core attention (QK^T and AV) in units of 4 b s^2 h: 1, or H (qk + rope + v head dims) / 2h */
  double kvw;    /* a token's K and V in units of h: 2 kv_heads/heads, or H (qk + rope + v head dims) / h (MLA) */
  double mlpm;   /* the MLP's matrices of h x f: 2 (gelu), 3 (swiglu) */
} Shape;

/* Whether layer l (0-based) is an MoE layer: past the first dense ones, every moe_every-th. */
static inline bool fab_train__moe_layer(const ModelIn *mi, uint64_t l) {
  return mi->experts && l >= mi->first_dense && l % mi->moe_every == 0;
}

/* ---- the plan ------------------------------------------------------------- */

enum { GK_TP, GK_EP, GK_DP, GK_EDP, GK_CP, GK_EMB }; /* rank groups, see training.c's top */
/* Parts of a block: compute; over tp an allreduce (TP), with sequence parallelism an allgather (AG), a
** reduce-scatter (RS) and an allgather that runs beside the compute after it (AGS: the input gathered again for
** the weights' gradient); over ep an all-to-all (EP); over cp the ring attention's core, its compute cut in cp
** pieces between the K/V hops of `bytes` each (CP forward, CPB backward: K/V and their gradients; training.c,
** ring()). */
enum { SEG_COMPUTE, SEG_TP, SEG_EP, SEG_AG, SEG_RS, SEG_AGS, SEG_CP, SEG_CPB };
enum { DENSE = 0, EXPERT = 1, NSTREAMS = 2 }; /* gradient streams: over dp, over edp */

typedef struct Seg {
  int kind;
  double flops;   /* SEG_COMPUTE, SEG_CP, SEG_CPB */
  uint64_t bytes; /* collectives */
  double moe;     /* SEG_COMPUTE: the experts' part of flops with even routing (a rank's is x its load) */
} Seg;

#define MAX_SEGS 32 /* forward: a layer's 11 (sequence and context parallel), the embedding's, the logits' 2 and the
                    ** loss's 3; backward: the logits' 3, a layer's forward again (recompute: full), its backward's 12
                    ** and the embedding's */

typedef struct Block {
  Seg fwd[MAX_SEGS], bwd[MAX_SEGS];
  uint32_t nfwd, nbwd;
  double hparams, hflops; /* the last stage's last block: the output layer's parameters per rank and its forward
                          ** FLOPs per microbatch (before tp), whose backward comes first (train_plan.c) */
  double params[NSTREAMS];    /* parameters per rank (after tp and ep split) */
  uint64_t gbytes[NSTREAMS];  /* their gradient (and parameter) bytes per rank */
} Block;

typedef struct Bucket {
  uint32_t block; /* ready in the last microbatch's backward of this block, */
  uint32_t layer; /* once this many of its layers (1..G, backward order) are done: */
  double frac;    /* that share of the block's backward compute (1 when layer = G) */
  uint64_t bytes;
} Bucket;

typedef struct Train {
  /* the job */
  FabDag *d;
  const FabCollEnv *env;
  const uint32_t *ranks;
  uint32_t nranks;
  uint16_t job, step;
  fab_time_t start;
  const FabCfgNode *wl, *coll_at; /* where errors are reported */
  /* the model */
  uint32_t dp, tp, pp, ep, edp, zero, m, nb, steps;
                       /* dp: the ranks of a stage with the same tp_i (data x context parallel, cp_i fastest), over
                       ** which the gradients are reduced, as Megatron's data-parallel group with context parallelism */
  uint32_t cp, dpn;    /* context parallel ranks, data parallel replicas (dp = cp x dpn) */
  uint32_t vpp, nv;    /* model chunks per stage (interleaved 1F1B; 1: plain 1F1B) and virtual stages pp x vpp:
                       ** virtual stage v = c pp + s is chunk c of stage s (Megatron's layout), and blocks, buckets,
                       ** pp flows and the items' done flags go by virtual stage, ranks and communicators by stage */
  bool sp;             /* sequence parallelism: TP allgathers and reduce-scatters, not allreduces */
  uint64_t emb_bytes;  /* tied embeddings on pp > 1 stages: the table's gradient per rank, allreduced between the
                       ** first and last stage before the optimizer (training.c: tied()); 0: none */
  bool emb_done;       /* this step's */
  uint32_t G;          /* layers per block (layer_group) */
  uint32_t dtype;
  uint64_t act_bytes;  /* PP flow per rank per microbatch */
  double rate;         /* FLOP/s achieved */
  double mem_Bps;      /* optimizer memory bandwidth, bytes/s */
  TrainTable table;    /* measured compute (all 0: none) */
  uint64_t bucket;
  gboolean too_many_buckets; /* more than MAX_OPS buckets in a stage */
  gboolean overlap;
  int recompute;       /* FabTrainIn.recompute */
  FabCollAlgo algo;
  FabProto proto;
  bool cta_zero;
  uint32_t channels;
  uint64_t chunk;      /* bytes per pipelined piece of a collective; 0: the protocol's */
  Block *blk;          /* [nv * nb]: nb blocks per virtual stage */
  GArray **buckets;    /* [nv * NSTREAMS] of Bucket: each model chunk's own (Megatron wraps each in its DDP) */
  GArray *cuts;        /* scratch: a block's bucket layers below G, ascending (training.c: backward_split) */
  /* state while generating (per job rank) */
  uint32_t *tail;      /* the rank's last op in schedule order */
  uint32_t *lastc;     /* its last compute op */
  uint32_t *x[3];      /* deps the next compute (or collective) must add: pp flow, zero-3 gathers */
  uint32_t *side;      /* a dep only the next collective adds (SEG_AGS's end), FAB_OP_NONE: none */
  uint32_t *ring[2];   /* scratch per rank: the ring attention's K/V and gradient hops (training.c: ring) */
  uint32_t *gnext[NSTREAMS]; /* zero-3: prefetched gathers for the next block */
  uint32_t *act, *grad; /* [(nv-1) * m * tp*dp] pp flows: into virtual stage v+1 / back into v */
  GArray **pending;    /* per rank: ops the optimizer waits for */
  GArray **post;       /* per rank: ops the step end waits for */
  int32_t coll_fwd_base, coll_bwd_base; /* FabCollDef of the pp transfers of this step, per boundary */
  uint32_t *mem, *eps, *st, *en; /* scratch, nranks each (en: what a queued collective's ranks enter after) */
  uint32_t ops0;       /* ops in d before this job */
  uint64_t ops_by[FAB_TRAIN_NTAGS]; /* ops added by the collectives of each tag (for the guard's message) */
  /* the rounds (training.c: "Rounds") */
  bool unfold;         /* made as the run goes: no cap but what op indices number, no errors after the start */
  int phase;           /* PH_* */
  uint32_t slot;       /* the step's next 1F1B position */
  uint8_t *fdone, *bdone; /* [nv * m] this step's forward / backward items made */
  GPtrArray *active;   /* Active *: expansions made a layer a round, in the order they began */
  uint32_t *busy;      /* per rank: its active expansions and its collectives queued on a communicator */
  GQueue **dpq;        /* [pp * NSTREAMS]: bucket collectives waiting for the one before them on their stage's
                       ** dp (edp) communicators, in the order they were ready (training.c: "Streams") */
  uint32_t *dprun;     /* [pp * NSTREAMS]: that communicator's rings being made */
  uint32_t *dpend[NSTREAMS]; /* per rank: its last bucket collective's END this step (FAB_OP_NONE: none) */
  uint8_t *state;      /* per rank: RS_* once the step's items are made */
  uint32_t *opt;       /* per rank: this step's optimizer op */
  uint8_t *gathered;   /* per stage: its ZeRO-1/2 allgathers begun */
  double est;          /* about how many ops the job makes */
  /* MoE routing (train_moe.c): uneven with moe_skew or a capacity factor, else even (moe_n NULL) */
  uint64_t seed, stream;
  uint32_t E, k_top, moe_every; /* experts, top_k, MoE layers' spacing */
  uint64_t first_dense;          /* the first dense layers */
  uint64_t tok;        /* token slots a rank routes per MoE layer and microbatch (its tokens x top_k) */
  uint64_t tok_bytes;  /* one token's activation: h B */
  uint64_t *moe_n;     /* [E] token slots from each rank to the i-th most popular expert (capacity applied) */
  uint32_t *perm;      /* [E] scratch: the i-th most popular expert */
  uint64_t *moe_tok;   /* [dp / ep replicas x ep]: token slots each rank of a replica's ep group sends to rank e
                       ** in the block's MoE layers (all its ranks route alike) */
  double *load;        /* per job rank: its expert compute in the block, x the even share (1: even) */
  uint64_t *a2a;       /* scratch: ep x ep counts */
  int a2a_dir;         /* the all-to-all being made: 0 dispatch (to the experts), 1 combine (back) */
  FabCollEnv envc;     /* env is this copy: a job made as the run goes outlives what it was read with */
} Train;

/* ---- groups and collectives (train_groups.c) ---------------------------------- */

extern const char *const fab_train__tags[FAB_TRAIN_NTAGS]; /* "tp", "ep", "dp", "zero", "cp", "emb": by address */
enum { TAG_TP, TAG_EP, TAG_DP, TAG_ZERO, TAG_CP, TAG_EMB };

static inline uint32_t fab_train__rank(const Train *t, uint32_t tp_i, uint32_t dp_i, uint32_t s) {
  return tp_i + t->tp * (dp_i + t->dp * s);
}
/* A stream's collectives over the rank's stream group (dp or edp). */
static inline int stream_group(int st) { return st == DENSE ? GK_DP : GK_EDP; }
/* Groups of kind gk on a stage; the members (job ranks) of group g on stage s into out, how many. */
uint32_t fab_train__ngroups(const Train *t, int gk);
uint32_t fab_train__members(const Train *t, int gk, uint32_t s, uint32_t g, uint32_t *out);
/* A block's collective part (SEG_* but compute): its group kind, operation and tag. */
void fab_train__seg_coll(int kind, int *gk, FabCollOp *op, const char **tag);
/* About how many ops the job's collectives take (training.c: before any is kept); FALSE + err if one fails. */
gboolean fab_train__coll_ops(Train *t, double *ops, GError **err);

/* Everything about the job that YAML says, checked; t's model fields filled. */
gboolean fab_train__configure(Train *t, const FabTrainIn *inp, const FabCfgNode *wl, ModelIn *mi, Shape *sh, uint32_t *G,
                              const FabTrainGpu *gpu, GError **err);
/* Per stage and block: segments, parameters, gradient bytes; buckets. */
void fab_train__plan(Train *t, const ModelIn *mi, const Shape *sh, uint32_t G);
/* What explain says of the job (owned by the caller). */
char *fab_train__note(const Train *t, const ModelIn *mi, const Shape *sh);
/* MoE routing (train_moe.c). Set up t's routing from mi (nothing when even); FALSE + err when it cannot be. */
gboolean fab_train__moe_setup(Train *t, const ModelIn *mi, const Shape *sh, const FabCfgNode *model, GError **err);
/* Draw the routing of block k of stage s, microbatch j, this step: t->moe_tok and t->load. */
void fab_train__moe_draw(Train *t, uint32_t s, uint32_t k, uint32_t j);
/* The counts of ep group g's all-to-all in direction t->a2a_dir (FabCollSpec.counts), NULL: even. */
const uint64_t *fab_train__moe_counts(Train *t, uint32_t g);
/* What explain says of the routing (nothing when even). */
void fab_train__moe_note(const Train *t, double skew, double cap, GString *s);
/* Free what t holds (not t). */
void fab_train__free(Train *t);

#endif

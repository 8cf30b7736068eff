/* A training job's YAML, read and checked, and its plan (blocks, buckets). See
** training.c for the model and train_int.h for what is shared. */
#include "train_int.h"
#include <math.h>
#include <string.h>

/* gpu.memory_bandwidth when the cluster's nodes are plain hosts (no GPU
** preset to take it from): 2 TB/s. ASSUMPTION, between A100 40GB (1.555
** TB/s) and H100 (3.35 TB/s); README lists it. */
#define HOST_MEMORY_BPS (2ull * 8 * 1000 * 1000 * 1000 * 1000)

/* ---- YAML ----------------------------------------------------------------- */

static const char *const dtype_names[] = {"bf16", "fp16", "fp32", "fp8", NULL};
static const uint32_t dtype_bytes[] = {2, 2, 4, 1};
static const char *const zero_names[] = {"0", "1", "2", "3", "fsdp", NULL};
static const char *const recompute_names[] = {"none", "selective", "full", NULL};

#define TK(NAME, TYPE, FIELD, ...) FAB_CFG_KEY(NAME, TYPE, FabTrainIn, FIELD, __VA_ARGS__)

const FabCfgKey fab_training_schema[] = {
  FAB_CFG_SPLICE_OF(fab_job_prefix),
  TK("model", FAB_CFG_MAP, model, .required = true),
  TK("parallelism", FAB_CFG_MAP, parallelism),
  TK("gpu", FAB_CFG_MAP, gpu),
  TK("bucket", FAB_CFG_SIZE, bucket, .def = "25MiB", .min = 1, .max = 0x1p50),
  TK("overlap", FAB_CFG_BOOL, overlap, .def = "true"),
  TK("recompute", FAB_CFG_ENUM, recompute, .def = "none", .choices = recompute_names),
  TK("steps", FAB_CFG_UINT, steps, .def = "1", .min = 1, .max = 65535),
  TK("layer_group", FAB_CFG_UINT, layer_group, .def = "1", .min = 1, .max = 1e6),
  TK("algorithm", FAB_CFG_ENUM, algorithm, .def = "auto", .choices = fab_coll_algo_names),
  TK("protocol", FAB_CFG_ENUM, protocol, .def = "auto", .choices = fab_proto_names),
  TK("channels", FAB_CFG_UINT, channels, .def = "0", .min = 0, .max = 64),
  TK("chunk", FAB_CFG_SIZE, chunk, .def = "0", .max = 0x1p50),
  TK("cta_policy", FAB_CFG_ENUM, cta_policy, .def = "default", .choices = fab_cta_policy_names),
  TK("compute_table", FAB_CFG_STRING, compute_table),
  FAB_CFG_END_ROW,
};


static const char *const mlp_names[] = {"gelu", "swiglu", NULL};

/* Public model shapes (model.preset), from each model's published Hugging Face config.json: hidden_size,
** intermediate_size (ffn), num_hidden_layers, num_attention_heads, num_key_value_heads, vocab_size,
** tie_word_embeddings (false for all four), and for Mixtral num_local_experts and num_experts_per_tok; all use
** SwiGLU MLPs (three h x ffn matrices). seq is the context they were pre-trained at: 8192 for Llama 3 and 3.1
** (Meta's Llama 3 paper, arXiv:2407.21783, section 3.4: 8K tokens before the long-context stage), 32768 for
** Mixtral (max_position_embeddings; Mistral AI, arXiv:2401.04088). Their parameter counts come out as the
** model cards give them (tests/test_training.c: 8.03 B, 70.55 B, 405.85 B, 46.70 B).
** DeepSeek-V3 (deepseek-ai/DeepSeek-V3, config.json): multi-head latent attention (q_lora_rank 1536,
** kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, 128 heads), 256 routed experts
** of moe_intermediate_size 2048 (8 per token) and n_shared_experts 1 in every layer past
** first_k_dense_replace 3, whose dense MLPs are intermediate_size 18432; seq 4096, the pre-training length
** (DeepSeek-V3 Technical Report, arXiv:2412.19437, section 4.2). 670.92 B parameters here, the report's 671 B
** (tests/test_train_shape.c; the router, the norms and the multi-token prediction module are not modelled). */
typedef struct ModelPreset {
  const char *name;
  uint64_t layers, hidden, ffn, heads, kv_heads, vocab, experts, top_k, seq;
  uint64_t moe_ffn, shared, first_dense, q_lora, kv_lora, qk_dim, qk_rope, v_dim;
} ModelPreset;

static const ModelPreset model_presets[] = {
  /* meta-llama/Meta-Llama-3-8B, config.json */
  {"llama3-8b", 32, 4096, 14336, 32, 8, 128256, 0, 0, 8192},
  /* meta-llama/Meta-Llama-3-70B, config.json */
  {"llama3-70b", 80, 8192, 28672, 64, 8, 128256, 0, 0, 8192},
  /* meta-llama/Llama-3.1-405B, config.json */
  {"llama3.1-405b", 126, 16384, 53248, 128, 8, 128256, 0, 0, 8192},
  /* mistralai/Mixtral-8x7B-v0.1, config.json: 8 experts, 2 per token, every layer MoE */
  {"mixtral-8x7b", 32, 4096, 14336, 32, 8, 32000, 8, 2, 32768},
  /* deepseek-ai/DeepSeek-V3, config.json */
  {"deepseek-v3", 61, 7168, 18432, 128, 0, 129280, 256, 8, 4096, 2048, 1, 3, 1536, 512, 128, 64, 128},
};

static const char *const preset_names[] = {"none", "llama3-8b", "llama3-70b", "llama3.1-405b", "mixtral-8x7b",
                                           "deepseek-v3", NULL};

/* model.preset: its values for the keys the YAML leaves out. */
static gboolean apply_preset(const FabCfgNode *model, ModelIn *mi, GError **err) {
  G_STATIC_ASSERT(G_N_ELEMENTS(preset_names) == G_N_ELEMENTS(model_presets) + 2);
  if (!mi->preset) return TRUE;
  const ModelPreset *p = &model_presets[mi->preset - 1];
  g_assert(g_str_equal(p->name, preset_names[mi->preset]));
  if (mi->params)
    return fab_cfg_fail(mi->params, err, "give preset or params, not both (the preset %s fixes the shape)", p->name);
  const struct { const char *key; uint64_t *field, value; } rows[] = {
    {"layers", &mi->layers, p->layers}, {"hidden", &mi->hidden, p->hidden}, {"ffn", &mi->ffn, p->ffn},
    {"heads", &mi->heads, p->heads},    {"kv_heads", &mi->kv_heads, p->kv_heads}, {"vocab", &mi->vocab, p->vocab},
    {"seq", &mi->seq, p->seq},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(rows); i++)
    if (!fab_cfg_get(model, rows[i].key)) *rows[i].field = rows[i].value;
  const struct { const char *key; uint64_t *field, value; } more[] = {
    {"experts", &mi->experts, p->experts}, {"top_k", &mi->top_k, p->top_k}, {"moe_ffn", &mi->moe_ffn, p->moe_ffn},
    {"shared_experts", &mi->shared, p->shared}, {"first_dense_layers", &mi->first_dense, p->first_dense},
    {"q_lora_rank", &mi->q_lora, p->q_lora}, {"kv_lora_rank", &mi->kv_lora, p->kv_lora},
    {"qk_head_dim", &mi->qk_dim, p->qk_dim}, {"qk_rope_head_dim", &mi->qk_rope, p->qk_rope},
    {"v_head_dim", &mi->v_dim, p->v_dim},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(more); i++) /* the keys a model without them leaves at their defaults */
    if (more[i].value && !fab_cfg_get(model, more[i].key)) *more[i].field = more[i].value;
  if (!fab_cfg_get(model, "mlp")) mi->mlp = 1; /* swiglu */
  return TRUE;
}

static const FabCfgKey model_schema[] = {
  FAB_CFG_KEY("params", FAB_CFG_NODE, ModelIn, params),
  FAB_CFG_KEY("layers", FAB_CFG_UINT, ModelIn, layers, .min = 1, .max = 1e6),
  FAB_CFG_KEY("hidden", FAB_CFG_UINT, ModelIn, hidden, .min = 1, .max = 1e7),
  FAB_CFG_KEY("ffn", FAB_CFG_UINT, ModelIn, ffn, .min = 1, .max = 1e8),
  FAB_CFG_KEY("heads", FAB_CFG_UINT, ModelIn, heads, .min = 1, .max = 1e6),
  FAB_CFG_KEY("kv_heads", FAB_CFG_UINT, ModelIn, kv_heads, .min = 1, .max = 1e6),
  FAB_CFG_KEY("seq", FAB_CFG_UINT, ModelIn, seq, .min = 1, .max = 1e8), /* required unless a preset gives it */
  FAB_CFG_KEY("micro_batch", FAB_CFG_UINT, ModelIn, micro_batch, .def = "1", .min = 1, .max = 1e6),
  FAB_CFG_KEY("global_batch", FAB_CFG_UINT, ModelIn, global_batch, .min = 1, .max = 1e9),
  FAB_CFG_KEY("dtype", FAB_CFG_ENUM, ModelIn, dtype, .def = "bf16", .choices = dtype_names),
  FAB_CFG_KEY("experts", FAB_CFG_UINT, ModelIn, experts, .def = "0", .min = 0, .max = 1e6),
  FAB_CFG_KEY("top_k", FAB_CFG_UINT, ModelIn, top_k, .def = "2", .min = 1, .max = 1e3),
  FAB_CFG_KEY("moe_every", FAB_CFG_UINT, ModelIn, moe_every, .def = "1", .min = 1, .max = 1e6),
  FAB_CFG_KEY("moe_skew", FAB_CFG_DOUBLE, ModelIn, moe_skew, .def = "0", .min = 0, .max = 10),
  FAB_CFG_KEY("moe_capacity_factor", FAB_CFG_DOUBLE, ModelIn, moe_cap, .def = "0", .min = 0, .max = 1e6),
  FAB_CFG_KEY("vocab", FAB_CFG_UINT, ModelIn, vocab, .def = "0", .min = 0, .max = 1e8),
  FAB_CFG_KEY("mlp", FAB_CFG_ENUM, ModelIn, mlp, .def = "gelu", .choices = mlp_names),
  FAB_CFG_KEY("preset", FAB_CFG_ENUM, ModelIn, preset, .def = "none", .choices = preset_names),
  FAB_CFG_KEY("tie_embeddings", FAB_CFG_BOOL, ModelIn, tie, .def = "false"),
  FAB_CFG_KEY("moe_ffn", FAB_CFG_UINT, ModelIn, moe_ffn, .def = "0", .min = 0, .max = 1e8),
  FAB_CFG_KEY("shared_experts", FAB_CFG_UINT, ModelIn, shared, .def = "0", .min = 0, .max = 1e4),
  FAB_CFG_KEY("first_dense_layers", FAB_CFG_UINT, ModelIn, first_dense, .def = "0", .min = 0, .max = 1e6),
  FAB_CFG_KEY("q_lora_rank", FAB_CFG_UINT, ModelIn, q_lora, .def = "0", .min = 0, .max = 1e7),
  FAB_CFG_KEY("kv_lora_rank", FAB_CFG_UINT, ModelIn, kv_lora, .def = "0", .min = 0, .max = 1e7),
  FAB_CFG_KEY("qk_head_dim", FAB_CFG_UINT, ModelIn, qk_dim, .def = "0", .min = 0, .max = 1e6),
  FAB_CFG_KEY("qk_rope_head_dim", FAB_CFG_UINT, ModelIn, qk_rope, .def = "0", .min = 0, .max = 1e6),
  FAB_CFG_KEY("v_head_dim", FAB_CFG_UINT, ModelIn, v_dim, .def = "0", .min = 0, .max = 1e6),
  FAB_CFG_END_ROW,
};

typedef struct ParIn {
  uint64_t dp, tp, pp, ep, cp, vpp;
  bool sp;
  int zero;
  const FabCfgNode *microbatches;
} ParIn;

static const FabCfgKey par_schema[] = {
  FAB_CFG_KEY("dp", FAB_CFG_UINT, ParIn, dp, .min = 1, .max = 1e7),
  FAB_CFG_KEY("tp", FAB_CFG_UINT, ParIn, tp, .def = "1", .min = 1, .max = 1e6),
  FAB_CFG_KEY("pp", FAB_CFG_UINT, ParIn, pp, .def = "1", .min = 1, .max = 1e6),
  FAB_CFG_KEY("ep", FAB_CFG_UINT, ParIn, ep, .def = "1", .min = 1, .max = 1e6),
  FAB_CFG_KEY("cp", FAB_CFG_UINT, ParIn, cp, .def = "1", .min = 1, .max = 1e6),
  FAB_CFG_KEY("vpp", FAB_CFG_UINT, ParIn, vpp, .def = "1", .min = 1, .max = 1e4),
  FAB_CFG_KEY("sp", FAB_CFG_BOOL, ParIn, sp, .def = "false"),
  FAB_CFG_KEY("zero", FAB_CFG_ENUM, ParIn, zero, .def = "0", .choices = zero_names),
  FAB_CFG_KEY("microbatches", FAB_CFG_NODE, ParIn, microbatches),
  FAB_CFG_END_ROW,
};

typedef struct GpuIn {
  const FabCfgNode *flops;
  double efficiency;
  uint64_t memory_bps;
} GpuIn;

static const FabCfgKey gpu_schema[] = {
  FAB_CFG_KEY("flops", FAB_CFG_NODE, GpuIn, flops),
  FAB_CFG_KEY("efficiency", FAB_CFG_DOUBLE, GpuIn, efficiency, .min = 1e-6, .max = 1),
  FAB_CFG_KEY("memory_bandwidth", FAB_CFG_RATE, GpuIn, memory_bps), /* default: the cluster's (its preset's HBM) */
  FAB_CFG_END_ROW,
};

/* A positive number followed by an optional multiplier letter (from
** `letters`, case-insensitive, worth 10^(3 (i+1)) for letter i, except that
** `alias` also means 10^9) and then an optional `unit` word
** (case-insensitive). "7B" -> 7e9, "989TFLOPS" -> 9.89e14. */
static gboolean parse_scaled(const char *s, const char *letters, char alias, const char *const *units, double *out) {
  if (!s || !*s || g_ascii_isspace(*s) || *s == '-' || *s == '+') return FALSE;
  char *end = NULL;
  double v = g_ascii_strtod(s, &end);
  if (end == s || !isfinite(v) || !(v > 0)) return FALSE;
  for (const char *p = s; p < end; p++)
    if (!g_ascii_isdigit(*p) && *p != '.' && *p != 'e' && *p != 'E' && *p != '-' && *p != '+') return FALSE;
  while (*end == ' ') end++;
  if (*end) {
    char c = g_ascii_toupper(*end);
    const char *hit = strchr(letters, c);
    if (c && hit) {
      v *= pow(10, 3.0 * (double)(hit - letters + 1));
      end++;
    } else if (c && c == alias) {
      v *= 1e9;
      end++;
    }
  }
  if (*end) {
    gboolean ok = FALSE;
    for (int i = 0; units && units[i] && !ok; i++) ok = g_ascii_strcasecmp(end, units[i]) == 0;
    if (!ok) return FALSE;
  }
  *out = v;
  return isfinite(v);
}

static gboolean read_params(const FabCfgNode *n, double *v, GError **err) {
  if (fab_cfg_kind(n) != FAB_CFG_NODE_SCALAR || !parse_scaled(fab_cfg_scalar(n), "KMBT", 'G', NULL, v) ||
      *v < 1)
    return fab_cfg_fail(n, err, "'%s' is not a parameter count (expected a number with K, M, B or T, e.g. 7B, "
                        "175B or 350M, or a plain number)", fab_cfg_kind(n) == FAB_CFG_NODE_SCALAR ?
                        fab_cfg_scalar(n) : "(not a scalar)");
  return TRUE;
}

static gboolean read_flops(const FabCfgNode *n, double *v, GError **err) {
  static const char *const units[] = {"FLOPS", "FLOP/s", NULL};
  if (fab_cfg_kind(n) != FAB_CFG_NODE_SCALAR || !parse_scaled(fab_cfg_scalar(n), "KMGTPE", 0, units, v))
    return fab_cfg_fail(n, err, "'%s' is not a FLOP rate (expected a number with KFLOPS, MFLOPS, GFLOPS, "
                        "TFLOPS or PFLOPS, e.g. 989TFLOPS, or a plain number of FLOP/s)",
                        fab_cfg_kind(n) == FAB_CFG_NODE_SCALAR ? fab_cfg_scalar(n) : "(not a scalar)");
  return TRUE;
}

/* ---- reading ---------------------------------------------------------------- */

/* Round x to a multiple of u, at least u. */
static uint64_t round_to(double x, uint64_t u) {
  double k = floor(x / (double)u + 0.5);
  return k < 1 ? u : (uint64_t)k * u;
}


/* Multi-head latent attention (DeepSeek-V2/V3, arXiv:2405.04434 section 2.1; Megatron Core's
** MLASelfAttention): per layer, queries through a rank-q_lora down and up projection (or one h x H (qk + rope)
** matrix without one), keys and values through a shared h x (kv_lora + rope) down projection (the rope part of K
** shared by the heads) and a kv_lora x H (qk + v) up projection, and O of H v x h; QK^T over qk + rope dims per
** head and AV over v. In units of h^2 (weights) and of MHA's core attention. */
static gboolean mla_shape(const FabCfgNode *model, const ModelIn *mi, Shape *sh, GError **err) {
  const FabCfgNode *at = AT_KEY(model, mi->preset && !fab_cfg_get(model, "kv_lora_rank") ? "preset" : "kv_lora_rank");
  if (mi->params) return fab_cfg_fail(at, err, "latent attention (kv_lora_rank) cannot be sized by params: give layers, hidden and ffn");
  if (mi->kv_heads) return fab_cfg_fail(AT_KEY(model, "kv_heads"), err, "kv_heads (grouped-query attention) and "
                                        "kv_lora_rank (latent attention) are two kinds of attention: give one");
  if (!mi->heads) return fab_cfg_fail(at, err, "latent attention (kv_lora_rank) needs heads");
  const double h = (double)mi->hidden, H = (double)mi->heads, hd = h / H;
  const double qk = mi->qk_dim ? (double)mi->qk_dim : hd, v = mi->v_dim ? (double)mi->v_dim : hd;
  const double rope = (double)mi->qk_rope, ql = (double)mi->q_lora, kl = (double)mi->kv_lora;
  const double q = mi->q_lora ? h * ql + ql * H * (qk + rope) : h * H * (qk + rope);
  const double kv = h * (kl + rope) + kl * H * (qk + v), o = H * v * h;
  sh->qkvo = (q + kv + o) / (h * h);
  sh->oproj = o / (h * h);
  sh->core = H * (qk + rope + v) / (2 * h);
  sh->kvw = H * (qk + rope + v) / h;
  return TRUE;
}

/* The MoE keys that mean nothing without experts, or leave no MoE layer. */
static gboolean check_moe_keys(const FabCfgNode *model, const ModelIn *mi, uint64_t layers, GError **err) {
  static const char *const keys[] = {"moe_ffn", "shared_experts", "first_dense_layers"};
  for (size_t i = 0; i < G_N_ELEMENTS(keys) && !mi->experts; i++)
    if (fab_cfg_get(model, keys[i]))
      return fab_cfg_fail(fab_cfg_get(model, keys[i]), err, "needs an MoE model (model.experts)");
  if (mi->experts && mi->first_dense >= layers)
    return fab_cfg_fail(AT_KEY(model, "first_dense_layers"), err, "first_dense_layers = %" G_GUINT64_FORMAT
                        " leaves none of the %" G_GUINT64_FORMAT " layers an MoE layer", mi->first_dense, layers);
  return TRUE;
}

static gboolean read_shape(const FabCfgNode *model, const ModelIn *mi, uint64_t unit, Shape *sh, GError **err) {
  sh->layers = mi->layers, sh->hidden = mi->hidden, sh->ffn = mi->ffn;
  sh->qkvo = mi->kv_heads ? 2 + 2.0 * (double)mi->kv_heads / (double)mi->heads : 4; /* (kv_heads checked) */
  sh->oproj = 1, sh->core = 1, sh->kvw = sh->qkvo - 2;
  sh->mlpm = mi->mlp ? 3 : 2;
  if (mi->kv_lora && !mla_shape(model, mi, sh, err)) return FALSE;
  if (!mi->params) {
    if (!mi->layers || !mi->hidden) return fab_cfg_fail(model, err, "give params, or layers and hidden");
    if (!mi->ffn) sh->ffn = 4 * mi->hidden;
    sh->effn = mi->moe_ffn ? mi->moe_ffn : sh->ffn;
    return check_moe_keys(model, mi, sh->layers, err);
  }
  double p;
  if (!read_params(mi->params, &p, err)) return FALSE;
  if (mi->vocab && !mi->hidden)
    return fab_cfg_fail(AT_KEY(model, "vocab"), err, "vocab with params needs hidden (params counts the embeddings: "
                        "vocab x hidden each)");
  if (mi->vocab) { /* the layers hold what the embedding table (and an untied output layer) do not */
    p -= (double)mi->vocab * (double)mi->hidden * (mi->tie ? 1 : 2);
    if (p < 1)
      return fab_cfg_fail(mi->params, err, "%s parameters are fewer than the embeddings' %.0f (vocab x hidden%s)",
                          fab_cfg_scalar(mi->params), (double)mi->vocab * (double)mi->hidden * (mi->tie ? 1 : 2),
                          mi->tie ? "" : " x 2, untied");
  }
  if (mi->experts)
    return fab_cfg_fail(mi->params, err, "params cannot size an MoE model: give layers, hidden and ffn (the "
                        "size of one expert's MLP) instead");
  if (mi->ffn)
    return fab_cfg_fail(fab_cfg_get(model, "ffn"), err, "give ffn or params, not both (with params, ffn is "
                        "derived so that the layers hold params; to use params where a file gives ffn, "
                        "remove it: --set %s=~)", fab_cfg_path(fab_cfg_get(model, "ffn")));
  if (!sh->layers && !sh->hidden) sh->layers = round_to(cbrt(p / (12.0 * 128 * 128)), 8);
  if (!sh->layers) sh->layers = (uint64_t)llround(p / (12.0 * (double)sh->hidden * (double)sh->hidden));
  if (!mi->layers) sh->layers = round_to((double)sh->layers, unit);
  if (!sh->hidden) sh->hidden = round_to(sqrt(p / (12.0 * (double)sh->layers)), 128);
  double h = (double)sh->hidden, f = (p / (double)sh->layers - sh->qkvo * h * h) / (sh->mlpm * h);
  if (f < 1)
    return fab_cfg_fail(mi->params, err, "%s parameters are too few for %" G_GUINT64_FORMAT " layers of hidden %"
                        G_GUINT64_FORMAT " (their attention alone holds %.4g)", fab_cfg_scalar(mi->params),
                        sh->layers, sh->hidden, sh->qkvo * h * h * (double)sh->layers);
  sh->ffn = sh->effn = (uint64_t)llround(f);
  return TRUE;
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/* Layer `layer`'s backward FLOPs (before tp), with what it recomputes. */
static double layer_bwd_flops(const Train *t, const ModelIn *mi, const Shape *sh, uint64_t layer) {
  const double h = (double)sh->hidden, f = (double)sh->ffn, fe = (double)sh->effn;
  const double tokens = (double)mi->micro_batch * ((double)mi->seq / t->cp); /* a rank's, as fab_train__plan */
  const bool moe = fab_train__moe_layer(mi, layer);
  const double core = 4 * tokens * (double)mi->seq * h * sh->core;
  const double mlp = 2 * tokens * sh->mlpm * h * (moe ? ((double)mi->top_k + (double)mi->shared) * fe : f);
  const double fwd = 2 * tokens * sh->qkvo * h * h + core + mlp;
  return 2 * fwd + (t->recompute == 2 ? fwd : t->recompute == 1 ? core : 0);
}

/* Cut block k of stage st's gradient bytes of stream i into buckets, its
** layers in backward order (last first), adding to *acc, the bytes not yet
** in a bucket. A bucket is ready once the layer holding its last byte is
** done: after that layer and those before it in the backward take their
** share of the block's backward compute (the layers of a block of G > 1
** run as one op; without this every bucket of a block waited for the
** whole block, and with layer_group as large as a stage's layers, no
** gradient traffic overlapped the backward). */
static void bucket_block(Train *t, const ModelIn *mi, const Shape *sh, uint32_t G, uint32_t st, uint32_t k, int i,
                         GArray *bl, uint64_t *acc) {
  const double h = (double)sh->hidden, f = (double)sh->ffn, fe = (double)sh->effn;
  const Block *bk = &t->blk[st * t->nb + k];
  /* the output layer's gradient (the last block's head) is made first, by its share of the backward: "layer 0" */
  const uint64_t head = i == DENSE ? MIN(bk->gbytes[i], (uint64_t)llround(bk->hparams * t->dtype)) : 0;
  double flops[2] = {2 * bk->hflops, 2 * bk->hflops}, p = 0; /* backward FLOPs: [0] the block's, [1] made so far */
  for (uint32_t u = 1; u <= G; u++) flops[0] += layer_bwd_flops(t, mi, sh, ((uint64_t)st * t->nb + k) * G + (G - u));
  *acc += head;
  for (; head && *acc >= t->bucket; *acc -= t->bucket)
    g_array_append_val(bl, ((Bucket){k, 0, flops[1] / flops[0], t->bucket}));
  uint64_t done = head;
  for (uint32_t u = 1; u <= G; u++) {
    uint64_t layer = ((uint64_t)st * t->nb + k) * G + (G - u);
    bool moe = fab_train__moe_layer(mi, layer);
    flops[1] += layer_bwd_flops(t, mi, sh, layer);
    double pd = sh->qkvo * h * h + sh->mlpm * h * (moe ? (double)mi->shared * fe : f);
    double pe = moe ? (double)mi->experts * sh->mlpm * h * fe : 0;
    p += t->ep > 1 ? (i == DENSE ? pd : pe / t->ep) : (i == DENSE ? pd + pe : 0);
    /* the last layer (u = G) takes the rest: on the first block, the embedding table's gradient too */
    uint64_t upto = u == G ? bk->gbytes[i] : MIN(bk->gbytes[i], head + (uint64_t)llround(p / t->tp * t->dtype));
    *acc += upto - done;
    done = upto;
    for (; *acc >= t->bucket; *acc -= t->bucket)
      g_array_append_val(bl, ((Bucket){k, u, u == G ? 1 : flops[1] / flops[0], t->bucket}));
  }
}

/* Stage st's buckets of each stream, in backward order. */
static void plan_buckets(Train *t, const ModelIn *mi, const Shape *sh, uint32_t G, uint32_t st) {
  for (int i = 0; i < NSTREAMS; i++) {
    GArray *bl = g_array_new(FALSE, FALSE, sizeof(Bucket));
    t->buckets[st * NSTREAMS + i] = bl;
    uint64_t acc = 0, total = 0;
    for (uint32_t k = 0; k < t->nb; k++) total += t->blk[st * t->nb + k].gbytes[i];
    if (total / t->bucket > MAX_OPS) { /* reported by the caller; do not build billions */
      t->too_many_buckets = TRUE;
      continue;
    }
    for (uint32_t k = t->nb; k-- > 0;) bucket_block(t, mi, sh, G, st, k, i, bl, &acc);
    if (acc) g_array_append_val(bl, ((Bucket){0, G, 1, acc}));
  }
}

/* Per stage and block: segments, parameters, gradient bytes; buckets. */
void fab_train__plan(Train *t, const ModelIn *mi, const Shape *sh, uint32_t G) {
  const double h = (double)sh->hidden, f = (double)sh->ffn, s = (double)mi->seq, b = (double)mi->micro_batch;
  const double fe = (double)sh->effn, nsh = (double)mi->shared, core4 = 4 * s * h * sh->core; /* core: x tokens */
  const double tp = t->tp, tokens = b * (s / t->cp); /* a rank's tokens: seq / cp of each sequence */
  const uint64_t actr = mi->micro_batch * (mi->seq / t->cp) * sh->hidden * t->dtype; /* b s h B / cp */
  t->G = G;
  /* measured compute (workload.compute_table): a part's FLOPs x fac take the table's time per layer */
  double fac[TT_NPART][2];
  const double part_flops[TT_OPT] = {(2 * tokens * sh->qkvo * h * h + tokens * core4) / tp,
                                     2 * tokens * sh->mlpm * h * f / tp, 2 * tokens * sh->mlpm * h * fe *
                                     (double)mi->top_k / tp, 2 * tokens * h * (double)mi->vocab / tp};
  for (int p = 0; p < TT_NPART; p++)
    for (int k = 0; k < 2; k++)
      fac[p][k] = p < TT_OPT && t->table.ps[p][k] ? (double)t->table.ps[p][k] * 1e-12 * t->rate /
                                                     (part_flops[p] * (k ? 2 : 1)) : 1;
  t->blk = g_new0(Block, (size_t)t->nv * t->nb);
  t->buckets = g_new(GArray *, (size_t)t->nv * NSTREAMS);
  for (uint32_t st = 0; st < t->nv; st++) { /* virtual stages: the layers in order */
    for (uint32_t k = 0; k < t->nb; k++) {
      Block *bk = &t->blk[st * t->nb + k];
      uint32_t nmoe = 0;
      for (uint32_t l = 0; l < G; l++) {
        uint64_t layer = ((uint64_t)st * t->nb + k) * G + l;
        nmoe += fab_train__moe_layer(mi, layer);
      }
      double ndense = G - nmoe;
      double attn = G * (2 * tokens * sh->qkvo * h * h + tokens * core4) / tp;
      /* the experts' part of the MLP FLOPs, forward and backward (a rank's share of it follows its routing:
      ** train_moe.c), each part scaled to its measured time (factor 1: none measured) */
      const double xf = 2 * tokens * sh->mlpm * h * fe * (double)nmoe * (double)mi->top_k * fac[TT_MOE][0] / tp;
      const double xb = 2 * tokens * sh->mlpm * h * fe * (double)nmoe * (double)mi->top_k * fac[TT_MOE][1] / tp;
      /* and the whole: dense layers' MLPs, MoE layers' shared experts (dense MLPs of moe_ffn, timed as mlp) */
      double mlp = xf + 2 * tokens * sh->mlpm * h * (ndense * f + nmoe * nsh * fe) * fac[TT_MLP][0] / tp;
      double mlpb = xb + 2 * tokens * sh->mlpm * h * (ndense * f + nmoe * nsh * fe) * fac[TT_MLP][1] / tp;
      const double af = fac[TT_ATTN][0], ab = fac[TT_ATTN][1], lf = fac[TT_LOGITS][0], lb = fac[TT_LOGITS][1];
      double p_dense = (G * sh->qkvo * h * h + sh->mlpm * h * (ndense * f + nmoe * nsh * fe)) / tp;
      double p_exp = nmoe * (double)mi->experts * sh->mlpm * h * fe / tp;
      if (t->ep > 1) {
        bk->params[DENSE] = p_dense, bk->params[EXPERT] = p_exp / t->ep;
      } else {
        bk->params[DENSE] = p_dense + p_exp;
      }
      /* per rank of a cp group: seq / cp tokens (cp = 1: the whole sequence) */
      uint64_t tpb = t->tp > 1 ? G * actr : 0, epb = t->ep > 1 ? nmoe * actr * mi->top_k : 0;
      const uint64_t ag = t->sp ? tpb : 0;       /* sp: allgathers where the TP allreduces become reduce-scatters */
      const int red = t->sp ? SEG_RS : SEG_TP;   /* what reduces over tp */
      /* the vocabulary (vocab > 0, Megatron's vocab-parallel layers): the first block holds the embedding table
      ** (V h / tp) and reduces its lookup over tp (sp: reduce-scatters it); the last block of the last stage holds
      ** the output layer (unless tied on one stage: the same table), computes the logits (2 b s h V / tp; sp: its
      ** input allgathered first), and the loss takes 3 TP allreduces of b s fp32 (the max, the target's logit,
      ** the sum of exponentials); its backward, first, computes twice the logits' FLOPs and reduces the input's
      ** gradient (b s h B) over tp */
      const bool first = st == 0 && k == 0, last = st + 1 == t->nv && k + 1 == t->nb, voc = mi->vocab > 0;
      const double vh = (double)mi->vocab * h / tp, logits = 2 * tokens * h * (double)mi->vocab;
      const uint64_t lossb = voc && t->tp > 1 ? mi->micro_batch * (mi->seq / t->cp) * 4 : 0;
      const uint64_t embb = voc && t->tp > 1 ? actr : 0;
      if (voc && first) bk->params[DENSE] += vh;
      if (voc && last && !(mi->tie && t->pp == 1)) bk->params[DENSE] += vh, bk->hparams = vh;
      if (voc && last) bk->hflops = logits;
      if (voc && first && mi->tie && t->pp > 1) t->emb_bytes = (uint64_t)ceil(vh * t->dtype);
      for (int i = 0; i < NSTREAMS; i++) bk->gbytes[i] = (uint64_t)ceil(bk->params[i] * t->dtype);
      /* context parallelism (cp > 1): the attention's projections and its core apart, the core a ring (below) */
      const bool cpr = t->cp > 1;
      const double qkv = cpr ? G * 2 * tokens * (sh->qkvo - sh->oproj) * h * h / tp : attn;
      const double out = cpr ? G * 2 * tokens * sh->oproj * h * h / tp : 0;
      const double core1 = cpr ? G * tokens * core4 / tp : 0; /* seq/cp queries against every key */
      const uint64_t kvb = cpr ? (uint64_t)llround(G * tokens * h * sh->kvw / tp * t->dtype) : 0; /* K and V */
      const Seg none = {SEG_TP, 0, 0};
      const Seg fwd[] = {first ? (Seg){red, 0, embb} : none, {SEG_AG, 0, ag}, {SEG_COMPUTE, qkv * af, 0},
                         {SEG_CP, core1 * af, kvb}, {SEG_COMPUTE, out * af, 0}, {red, 0, tpb},
                         {SEG_EP, 0, epb}, {SEG_AG, 0, ag}, {SEG_COMPUTE, mlp, 0, xf}, {SEG_EP, 0, epb}, {red, 0, tpb},
                         {SEG_AG, 0, last && t->sp ? embb : 0}, {SEG_COMPUTE, last ? logits * lf / tp : 0, 0},
                         {SEG_TP, 0, last ? lossb : 0}, {SEG_TP, 0, last ? lossb : 0}, {SEG_TP, 0, last ? lossb : 0}};
      /* recompute (Megatron's --recompute-granularity): full runs the block's forward again, its collectives
      ** too, before its backward (not the logits: the output layer is not checkpointed); selective runs the
      ** core attention again (QK^T, softmax, AV: 4 b s^2 h per layer), inside the attention's backward.
      ** Sequence parallel backward (Megatron's LinearWithGradAccumulationAndAsyncCommunication): a reduce-scatter
      ** of the forward is an allgather of the gradient, an allgather a reduce-scatter, and a column-parallel
      ** layer gathers its input again beside its input-gradient compute (SEG_AGS), for its weights' gradient */
      const bool full = t->recompute == 2;
      const double core = t->recompute == 1 ? G * tokens * core4 / tp * af : 0;
      const Seg bwd[] = {{SEG_AGS, 0, last && t->sp ? embb : 0}, {SEG_COMPUTE, last ? 2 * logits * lb / tp : 0, 0},
                         {red, 0, last ? embb : 0},
                         {SEG_AG, 0, full ? ag : 0}, {SEG_COMPUTE, full ? qkv * af : 0, 0},
                         {SEG_CP, full ? core1 * af : 0, full ? kvb : 0}, {SEG_COMPUTE, full ? out * af : 0, 0},
                         {red, 0, full ? tpb : 0}, {SEG_EP, 0, full ? epb : 0}, {SEG_AG, 0, full ? ag : 0},
                         {SEG_COMPUTE, full ? mlp : 0, 0, full ? xf : 0}, {SEG_EP, 0, full ? epb : 0},
                         {red, 0, full ? tpb : 0},
                         {SEG_AG, 0, ag}, {SEG_EP, 0, epb}, {SEG_AGS, 0, ag}, {SEG_COMPUTE, 2 * mlpb, 0, 2 * xb},
                         {SEG_EP, 0, epb}, {red, 0, tpb},
                         {SEG_AG, 0, ag}, {SEG_AGS, 0, cpr ? 0 : ag}, {SEG_COMPUTE, cpr ? 2 * out * ab : 2 * attn * ab + core, 0},
                         {SEG_CPB, cpr ? 2 * core1 * ab + core : 0, kvb}, {SEG_AGS, 0, cpr ? ag : 0},
                         {SEG_COMPUTE, cpr ? 2 * qkv * ab : 0, 0}, {red, 0, tpb},
                         {SEG_AG, 0, first && t->sp ? embb : 0}};
      for (int pass = 0; pass < 2; pass++) { /* drop empty collectives and computes, merge adjacent computes */
        const Seg *in = pass ? bwd : fwd;
        const int nin = pass ? (int)G_N_ELEMENTS(bwd) : (int)G_N_ELEMENTS(fwd);
        Seg *out = pass ? bk->bwd : bk->fwd;
        uint32_t n = 0;
        for (int i = 0; i < nin; i++) {
          if (in[i].kind != SEG_COMPUTE ? !in[i].bytes : !(in[i].flops > 0)) continue;
          if (in[i].kind == SEG_COMPUTE && n && out[n - 1].kind == SEG_COMPUTE)
            out[n - 1].flops += in[i].flops, out[n - 1].moe += in[i].moe;
          else
            out[n++] = in[i];
        }
        g_assert(n <= MAX_SEGS);
        *(pass ? &bk->nbwd : &bk->nfwd) = n;
      }
    }
    plan_buckets(t, mi, sh, G, st);
  }
}

/* The bytes of a K/V hop of the first block's ring (0: none). */
static uint64_t ring_bytes(const Train *t) {
  for (uint32_t i = 0; i < t->blk[0].nfwd; i++)
    if (t->blk[0].fwd[i].kind == SEG_CP) return t->blk[0].fwd[i].bytes;
  return 0;
}

/* What explain says of the job: its shape and how its gradients go. */
char *fab_train__note(const Train *t, const ModelIn *mi, const Shape *sh) {
  double params = 0;
  uint32_t nbk = 0;
  for (uint32_t i = 0; i < t->nv * t->nb; i++)
    params += (t->blk[i].params[DENSE] + t->blk[i].params[EXPERT] * t->ep) * t->tp;
  if (mi->vocab && mi->tie && t->pp > 1) params -= (double)mi->vocab * (double)sh->hidden; /* one table, two copies */
  for (int st = 0; st < NSTREAMS && t->buckets; st++) nbk += t->buckets[st]->len;
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "model: %s%s%" G_GUINT64_FORMAT " layers, hidden %" G_GUINT64_FORMAT ", ffn %"
                         G_GUINT64_FORMAT " (%s MLP), attention %.4g h^2", mi->preset ? preset_names[mi->preset] : "",
                         mi->preset ? " (preset): " : "", sh->layers, sh->hidden, sh->ffn, mlp_names[mi->mlp],
                         sh->qkvo);
  if (mi->kv_heads) g_string_append_printf(s, " (%" G_GUINT64_FORMAT " K/V heads of %" G_GUINT64_FORMAT ")",
                                           mi->kv_heads, mi->heads);
  if (mi->kv_lora)
    g_string_append_printf(s, " (latent: q rank %" G_GUINT64_FORMAT ", kv rank %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                           " heads; core attention x %.4g)", mi->q_lora, mi->kv_lora, mi->heads, sh->core);
  if (mi->experts) {
    g_string_append_printf(s, ", %" G_GUINT64_FORMAT " experts (top %" G_GUINT64_FORMAT ", every %" G_GUINT64_FORMAT
                           " layers", mi->experts, mi->top_k, mi->moe_every);
    if (mi->first_dense) g_string_append_printf(s, " past the first %" G_GUINT64_FORMAT, mi->first_dense);
    if (sh->effn != sh->ffn) g_string_append_printf(s, "; expert ffn %" G_GUINT64_FORMAT, sh->effn);
    if (mi->shared) g_string_append_printf(s, "; %" G_GUINT64_FORMAT " shared", mi->shared);
    g_string_append(s, ")");
  }
  if (mi->vocab) g_string_append_printf(s, ", vocabulary %" G_GUINT64_FORMAT " (embeddings %s)", mi->vocab,
                                         mi->tie ? "tied to the output layer" : "and output layer apart");
  g_string_append_printf(s, ", seq %" G_GUINT64_FORMAT ", %.4g B parameters; tp %u%s, dp %u, ep %u", mi->seq,
                         params / 1e9, t->tp, t->sp && t->tp > 1 ? " (sequence parallel)" : "", t->dpn, t->ep);
  if (t->cp > 1)
    g_string_append_printf(s, ", cp %u (%" G_GUINT64_FORMAT " tokens of a sequence per rank; each block's attention "
                           "a ring of %u K/V hops of %" G_GUINT64_FORMAT " B forward, %u backward with their "
                           "gradients' %u; gradients reduced over dp x cp = %u)", t->cp, mi->seq / t->cp, t->cp - 1,
                           ring_bytes(t), t->cp - 1, t->cp, t->dp);
  g_string_append_printf(s, "; blocks of %u layer%s (%u per stage", t->G, t->G == 1 ? "" : "s", t->nb * t->vpp);
  if (t->vpp > 1)
    g_string_append_printf(s, ": interleaved 1F1B, %u model chunks of %u each, chunk c of stage s virtual stage c x "
                           "%u + s", t->vpp, t->nb, t->pp);
  g_string_append_printf(s, "); compute at %.4g TFLOP/s", t->rate / 1e12);
  for (int p = 0, n = 0; p < TT_NPART; p++) /* measured parts: their time per layer replaces FLOPs / rate */
    if (t->table.ps[p][0])
      g_string_append_printf(s, p == TT_OPT ? "%s%s %.4g us a step" : "%s%s %.4g us forward, %.4g backward",
                             n++ ? ", " : ", measured per layer and microbatch (compute_table): ",
                             fab_train__part_names[p], (double)t->table.ps[p][0] / 1e6,
                             (double)t->table.ps[p][1] / 1e6);
  if (t->dp > 1 && t->zero != 3)
    g_string_append_printf(s, "\n           gradients: %u bucket%s of up to %" G_GUINT64_FORMAT " B per rank on stage "
                           "0, %s, one after another on their communicator%s", nbk, nbk == 1 ? "" : "s", t->bucket,
                           !t->overlap ? "after the whole backward (overlap: false)"
                           : t->G > 1 ? "each ready once the layers holding it are done in the last microbatch's "
                                        "backward (its layers' share of their block's compute)"
                                      : "each ready once the layer holding its last byte is done in the last "
                                        "microbatch's backward",
                           t->zero ? "; ZeRO: reduce-scattered, parameters allgathered after the optimizer" : "");
  fab_train__moe_note(t, mi->moe_skew, mi->moe_cap, s);
  return g_string_free(s, FALSE);
}

void fab_train__free(Train *t) {
  for (uint32_t i = 0; t->buckets && i < t->nv * NSTREAMS; i++) g_array_free(t->buckets[i], TRUE);
  g_free(t->buckets);
  if (t->cuts) g_array_free(t->cuts, TRUE);
  g_free(t->blk);
  for (uint32_t r = 0; t->pending && r < t->nranks; r++) {
    g_array_free(t->pending[r], TRUE);
    g_array_free(t->post[r], TRUE);
  }
  g_free(t->pending);
  g_free(t->post);
  g_free(t->tail);
  g_free(t->lastc);
  for (int i = 0; i < 3; i++) g_free(t->x[i]);
  g_free(t->side);
  for (int i = 0; i < 2; i++) g_free(t->ring[i]);
  for (int i = 0; i < NSTREAMS; i++) g_free(t->gnext[i]);
  g_free(t->act);
  g_free(t->grad);
  g_free(t->mem);
  g_free(t->eps);
  g_free(t->st);
  g_free(t->en);
  g_free(t->moe_n);
  g_free(t->perm);
  g_free(t->moe_tok);
  g_free(t->load);
  g_free(t->a2a);
}

/* kv_heads (grouped-query attention) against heads and tp. */
static gboolean check_kv_heads(const FabCfgNode *model, const ModelIn *mi, uint32_t tp, GError **err) {
  const FabCfgNode *kvn = fab_cfg_get(model, "kv_heads") ? fab_cfg_get(model, "kv_heads")
                          : mi->preset && mi->kv_heads ? fab_cfg_get(model, "preset") : NULL;
  if (kvn && !mi->heads)
    return fab_cfg_fail(kvn, err, "kv_heads needs heads (the query heads: K and V are kv_heads/heads of Q's size)");
  if (kvn && (mi->heads % mi->kv_heads || mi->kv_heads % tp))
    return fab_cfg_fail(kvn, err, "%" G_GUINT64_FORMAT " kv_heads must divide heads (%" G_GUINT64_FORMAT ") and be "
                        "divisible by tp (%u; K and V heads replicated over tensor-parallel ranks are not modelled)",
                        mi->kv_heads, mi->heads, tp);
  return TRUE;
}

/* tie_embeddings where it does nothing: a warning. */
static void warn_tie(const Train *t, const FabCfgNode *model, const ModelIn *mi) {
  const FabCfgNode *n = fab_cfg_get(model, "tie_embeddings");
  if (!n || !mi->tie || !t->env->warnings || mi->vocab) return;
  g_ptr_array_add(t->env->warnings, g_strdup_printf("%s: %s: has no effect: the model has no vocabulary "
                                                    "(model.vocab), so no embeddings to tie", fab_cfg_where(n),
                                                    fab_cfg_path(n)));
}

/* The parallelism map's degrees against the job's ranks and the model: t's tp, pp, ep, cp, sp, dp, dpn. */
static gboolean read_parallelism(Train *t, ParIn *pi_, const FabCfgNode *par, const FabCfgNode *model,
                                 const ModelIn *mi, GError **err) {
  ParIn pi = *pi_;
  /* dp x cp x tp x pp ranks; the layout's dp index is cp_i + cp dp_i (train_int.h, Train.dp) */
  t->tp = (uint32_t)pi.tp, t->pp = (uint32_t)pi.pp, t->ep = (uint32_t)pi.ep, t->cp = (uint32_t)pi.cp;
  t->vpp = (uint32_t)pi.vpp, t->nv = t->pp * t->vpp;
  if (t->vpp > 1 && t->pp < 2) /* Megatron: an interleaved schedule needs a pipeline */
    return fab_cfg_fail(AT_KEY(par, "vpp"), err, "vpp = %u (interleaved 1F1B) needs pp >= 2 pipeline stages", t->vpp);
  t->sp = pi.sp;
  uint64_t tpp = pi.tp * pi.pp * pi.cp;
  const char *cpx = pi.cp > 1 ? " x cp" : "";
  if (!pi.dp) {
    if (t->nranks % tpp)
      return fab_cfg_fail(par, err, "tp x pp%s = %" G_GUINT64_FORMAT " does not divide the job's %u ranks", cpx, tpp,
                          t->nranks);
    pi.dp = t->nranks / tpp;
  }
  char cpn[32] = "";
  if (pi.cp > 1) g_snprintf(cpn, sizeof cpn, " x %" G_GUINT64_FORMAT, pi.cp);
  if (pi.dp * tpp != t->nranks)
    return fab_cfg_fail(par, err, "dp x tp x pp%s = %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT
                        "%s = %" G_GUINT64_FORMAT ", but the job has %u ranks", cpx, pi.dp, pi.tp, pi.pp,
                        cpn, pi.dp * tpp, t->nranks);
  t->dpn = (uint32_t)pi.dp;
  t->dp = (uint32_t)(pi.dp * pi.cp);
  if (t->dp % t->ep)
    return fab_cfg_fail(AT_KEY(par, "ep"), err, "ep = %u does not divide dp%s = %u (expert groups are made of "
                        "data%s parallel ranks)", t->ep, cpx, t->dp, pi.cp > 1 ? " and context" : "");
  if (t->ep > 1 && !mi->experts)
    return fab_cfg_fail(AT_KEY(par, "ep"), err, "ep = %u needs an MoE model (model.experts)", t->ep);
  if (t->ep > 1 && mi->experts % t->ep)
    return fab_cfg_fail(AT_KEY(model, "experts"), err, "%" G_GUINT64_FORMAT " experts cannot be split evenly over "
                        "ep = %u ranks", mi->experts, t->ep);
  if (mi->experts && mi->top_k > mi->experts)
    return fab_cfg_fail(AT_KEY(model, "top_k"), err, "top_k = %" G_GUINT64_FORMAT " is more than the %"
                        G_GUINT64_FORMAT " experts", mi->top_k, mi->experts);
  *pi_ = pi;
  return TRUE;
}

/* workload.compute_table, read into t->table and checked against the model. */
static gboolean read_compute(Train *t, const FabCfgNode *wl, const char *name, const ModelIn *mi, GError **err) {
  const FabCfgNode *k = fab_cfg_get(wl, "compute_table");
  char *path = fab_cfg_file_near(k, name);
  GError *e = NULL;
  gboolean ok = fab_train__read_table(path, &t->table, &e);
  if (!ok) {
    fab_cfg_fail(k, err, "%s", e->message);
    g_error_free(e);
  } else if (t->table.ps[TT_MOE][0] && !mi->experts) {
    ok = fab_cfg_fail(k, err, "%s:%u: moe rows, but the model has no MoE layers (model.experts)", path,
                      t->table.line[TT_MOE][0]);
  } else if (t->table.ps[TT_MLP][0] && mi->experts && mi->moe_every == 1 && !mi->first_dense && !mi->shared) {
    ok = fab_cfg_fail(k, err, "%s:%u: mlp rows, but every layer is an MoE layer (moe_every 1) without shared "
                      "experts: the moe rows time them", path, t->table.line[TT_MLP][0]);
  } else if (t->table.ps[TT_LOGITS][0] && !mi->vocab) {
    ok = fab_cfg_fail(k, err, "%s:%u: logits rows, but the model has no output layer (model.vocab)", path,
                      t->table.line[TT_LOGITS][0]);
  }
  g_free(path);
  return ok;
}

/* cp against the sequence; sp where it does nothing (a warning). */
static gboolean check_cp_sp(const Train *t, const FabCfgNode *par, const ModelIn *mi, GError **err) {
  if (t->cp > 1 && mi->seq % (2 * t->cp)) /* Transformer Engine cuts a sequence into 2 cp chunks, two per rank */
    return fab_cfg_fail(AT_KEY(par, "cp"), err, "cp = %u needs seq (%" G_GUINT64_FORMAT ") divisible by 2 x cp = %u "
                        "(each rank holds two of 2 cp equal chunks of a sequence, for causal balance)", t->cp,
                        mi->seq, 2 * t->cp);
  const FabCfgNode *n = fab_cfg_get(par, "sp");
  if (n && t->sp && t->tp == 1 && t->env->warnings)
    g_ptr_array_add(t->env->warnings, g_strdup_printf("%s: %s: has no effect with tp = 1 (sequence parallelism splits "
                                                      "what tensor-parallel ranks hold)", fab_cfg_where(n),
                                                      fab_cfg_path(n)));
  return TRUE;
}

/* Everything about the job that YAML says, checked; t's model fields filled. */
gboolean fab_train__configure(Train *t, const FabTrainIn *inp, const FabCfgNode *wl, ModelIn *mi, Shape *sh,
                              uint32_t *G, const FabTrainGpu *gpu, GError **err) {
  const FabTrainIn in = *inp;
  ParIn pi = {0};
  GpuIn gi = {0};
  if (!fab_cfg_apply(in.model, NULL, model_schema, mi, err) || !fab_cfg_apply(in.parallelism, wl, par_schema, &pi, err) ||
      !fab_cfg_apply(in.gpu, wl, gpu_schema, &gi, err))
    return FALSE;
  const FabCfgNode *par = in.parallelism ? in.parallelism : wl;
  if (!apply_preset(in.model, mi, err) || !read_parallelism(t, &pi, par, in.model, mi, err)) return FALSE;
  t->edp = t->dp / t->ep;
  t->zero = pi.zero == 4 ? 3 : (uint32_t)pi.zero;
  /* model */
  *G = (uint32_t)in.layer_group;
  if (!check_kv_heads(in.model, mi, t->tp, err)) return FALSE;
  if (!mi->seq) return fab_cfg_fail(in.model, err, "missing required key 'seq' (or a preset that gives it)");
  warn_tie(t, in.model, mi);
  if (!check_cp_sp(t, par, mi, err)) return FALSE;
  if (!read_shape(in.model, mi, t->nv * in.layer_group, sh, err)) return FALSE;
  if (sh->layers % t->nv)
    return fab_cfg_fail(AT_KEY(in.model, "layers"), err, "%" G_GUINT64_FORMAT " layers cannot be split evenly "
                        "into pp = %u pipeline stages%s (stages of different depths are not modelled: give "
                        "model.layers a multiple of %u)", sh->layers, t->pp, t->vpp > 1 ? " x vpp model chunks" : "",
                        t->nv * *G);
  if ((sh->layers / t->nv) % in.layer_group)
    return fab_cfg_fail(AT_KEY(wl, "layer_group"), err, "layer_group = %u does not divide the %" G_GUINT64_FORMAT
                        " layers of a pipeline %s", *G, sh->layers / t->nv, t->vpp > 1 ? "model chunk" : "stage");
  if (mi->heads && (sh->hidden % mi->heads || mi->heads % pi.tp))
    return fab_cfg_fail(AT_KEY(in.model, "heads"), err, "%" G_GUINT64_FORMAT " heads must divide hidden (%"
                        G_GUINT64_FORMAT ") and be divisible by tp (%u)", mi->heads, sh->hidden, t->tp);
  t->nb = (uint32_t)(sh->layers / t->nv / in.layer_group);
  t->dtype = dtype_bytes[mi->dtype];
  /* microbatches */
  uint64_t per = mi->micro_batch * pi.dp, m = 0; /* replicas: context parallel ranks share a sequence */
  const FabCfgNode *mbn = pi.microbatches;
  if (mbn && !(fab_cfg_kind(mbn) == FAB_CFG_NODE_SCALAR && g_str_equal(fab_cfg_scalar(mbn), "auto"))) {
    int64_t v;
    if (fab_cfg_kind(mbn) != FAB_CFG_NODE_SCALAR || !fab_parse_int(fab_cfg_scalar(mbn), &v, NULL) || v < 1 ||
        v > 1000000)
      return fab_cfg_fail(mbn, err, "expected 'auto' or a number of microbatches from 1 to 1000000");
    m = (uint64_t)v;
    if (mi->global_batch && mi->global_batch != m * per)
      return fab_cfg_fail(mbn, err, "%" G_GUINT64_FORMAT " microbatches x micro_batch %" G_GUINT64_FORMAT " x dp %u = %"
                          G_GUINT64_FORMAT ", but model.global_batch is %" G_GUINT64_FORMAT, m, mi->micro_batch, t->dpn,
                          m * per, mi->global_batch);
  } else {
    if (!mi->global_batch)
      return fab_cfg_fail(in.model, err, "missing required key 'global_batch' (or give parallelism.microbatches)");
    if (mi->global_batch % per)
      return fab_cfg_fail(AT_KEY(in.model, "global_batch"), err, "global_batch %" G_GUINT64_FORMAT " is not a "
                          "multiple of micro_batch x dp = %" G_GUINT64_FORMAT, mi->global_batch, per);
    m = mi->global_batch / per;
    if (m > 1000000) return fab_cfg_fail(AT_KEY(in.model, "global_batch"), err, "more than 10^6 microbatches per step");
  }
  t->m = (uint32_t)m;
  if (t->vpp > 1 && t->m % t->pp) /* Megatron Core's forward_backward_pipelining_with_interleaving refuses it */
    return fab_cfg_fail(mbn ? mbn : AT_KEY(in.model, "global_batch"), err, "%u microbatches is not a multiple of pp = %u, "
                        "as the interleaved schedule (vpp = %u) needs", t->m, t->pp, t->vpp);
  /* gpu */
  double flops = gpu->flops, eff = gpu->eff;
  if (gi.flops && !read_flops(gi.flops, &flops, err)) return FALSE;
  if (gi.efficiency > 0) eff = gi.efficiency;
  if (!(flops > 0))
    return fab_cfg_fail(in.gpu ? in.gpu : wl, err, "missing gpu.flops: the cluster gives no GPU peak (set "
                        "cluster.node to a GPU preset or gpu: {flops: 989TFLOPS, efficiency: 0.4})");
  if (!(eff > 0) || eff > 1)
    return fab_cfg_fail(in.gpu ? in.gpu : wl, err, "missing gpu.efficiency: the cluster gives none (expected a "
                        "fraction of peak, e.g. efficiency: 0.4)");
  if (flops < 1e9) /* a peak without its unit (989 for 989 TFLOPS) would give days of compute per layer */
    return fab_cfg_fail(gi.flops ? gi.flops : in.gpu ? in.gpu : wl, err, "a GPU of %g FLOP/s: expected at least 1e9 "
                        "(say 989TFLOPS, or 989e12)", flops);
  if (!gi.memory_bps) gi.memory_bps = gpu->memory_bps ? gpu->memory_bps : HOST_MEMORY_BPS;
  if (gi.memory_bps < 8000000000ull)
    return fab_cfg_fail(AT_KEY(in.gpu, "memory_bandwidth"), err, "memory bandwidth below 1 GB/s");
  t->rate = flops * eff;
  t->mem_Bps = (double)gi.memory_bps / 8;
  /* the rest */
  t->steps = (uint32_t)in.steps;
  t->bucket = in.bucket;
  t->overlap = in.overlap;
  t->recompute = in.recompute;
  t->algo = (FabCollAlgo)in.algorithm;
  t->proto = (FabProto)in.protocol;
  t->cta_zero = in.cta_policy == 1;
  t->channels = (uint32_t)in.channels;
  t->chunk = in.chunk;
  if (t->chunk % t->dtype) /* whole elements, as a collective's chunk (workload.c) */
    return fab_cfg_fail(fab_cfg_get(wl, "chunk"), err, "chunk %" G_GUINT64_FORMAT " B is not a whole number of "
                        "%u-byte %s elements", t->chunk, t->dtype, dtype_names[mi->dtype]);
  t->coll_at = fab_cfg_get(wl, "algorithm") ? fab_cfg_get(wl, "algorithm") : wl;
  if (!mi->micro_batch || !mi->seq || !sh->hidden) return fab_cfg_fail(in.model, err, "an empty model");
  /* b s h B bytes per microbatch, and at most layers x top_k of them in one
  ** block's collective: all kept far from 64-bit overflow (FAB_BYTES_MAX) */
  double act = (double)mi->micro_batch * (double)mi->seq * (double)sh->hidden * t->dtype;
  double most = act * (double)sh->layers * (double)MAX(mi->top_k, 1);
  if (act > FAB_BYTES_MAX || most > FAB_BYTES_MAX)
    return fab_cfg_fail(AT_KEY(in.model, "micro_batch"), err, "activations of %.4g bytes per microbatch "
                        "(micro_batch x seq x hidden x dtype bytes; %.4g over the layers%s): more than the %.4g "
                        "bytes one transfer can describe", act, most, mi->top_k > 1 ? " and top_k" : "",
                        (double)FAB_BYTES_MAX);
  t->act_bytes = ceil_div(mi->micro_batch * mi->seq * sh->hidden * t->dtype, (uint64_t)t->tp * t->cp);
  t->seed = in.seed, t->stream = in.stream;
  if (!fab_train__moe_setup(t, mi, sh, in.model, err)) return FALSE;
  return !in.compute_table || read_compute(t, wl, in.compute_table, mi, err);
}


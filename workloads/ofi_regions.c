/* aws-ofi-nccl's region tuner (its NCCL tuner plugin's default,
** OFI_NCCL_TUNER_TYPE=REGION): on the AWS platforms it knows, for a
** collective of nRanks over nNodes, it looks the point (message bytes,
** nRanks) up in polygons drawn in log2 space and picks the first region's
** algorithm and protocol. Facts from aws/aws-ofi-nccl at
** 2daf7d303aa139a03140aa530957d10521e4478d, src/tuner/nccl_ofi_regions.cpp
** (region_init_internal_p5_p5e, is_inside_region, extend_region,
** nccl_ofi_tuner_get_coll_info) and include/tuner/nccl_ofi_tuner_region.h;
** this is fabsim's own code over those numbers. See collective.h
** (fab_coll__ofi_region) for what the tuner does with the answer. */
#include "coll_int.h"
#include <math.h>

#define MS 107374182400.0 /* TUNER_MAX_SIZE: 100 GiB */
#define MR 1048576.0      /* TUNER_MAX_RANKS: 1024 x 1024 */
#define ZERO_AT 1e-6      /* a coordinate of 0 stands at log2(1e-6) (transform_log2) */
#define EPS 1e-10         /* on an edge, at a vertex (is_inside_region, intersect) */

typedef struct Pt {
  double x, y; /* log2 bytes, log2 ranks */
} Pt;

/* A vertex as the source writes it: a point (bytes, ranks); the line
** through two points extended to the edge of the plane (ext); or a point
** at x bytes and that extension's ranks (yof). */
typedef enum { V_PT, V_EXT, V_YOF } VKind;
typedef struct Vx {
  double ax, ay, bx, by, x;
  VKind kind;
} Vx;

#define P(x, y) {(x), (y), 0, 0, 0, V_PT}
#define EXT_(ax, ay, bx, by) {(ax), (ay), (bx), (by), 0, V_EXT}
#define EXT(...) EXT_(__VA_ARGS__)
#define YOF_(x, ax, ay, bx, by) {(ax), (ay), (bx), (by), (x), V_YOF}
#define YOF(x, ...) YOF_(x, __VA_ARGS__)

static inline double lg(double v) { return log2(v == 0 ? ZERO_AT : v); }

/* extend_region: the line from a through b, in log2, to where it leaves the
** plane [.., log2 MS] x [.., log2 MR]. */
static Pt extend(double ax, double ay, double bx, double by) {
  Pt a = {lg(ax), lg(ay)}, b = {lg(bx), lg(by)}, z = {lg(MS), lg(MR)};
  if (a.x == b.x) return (Pt){a.x, z.y};
  if (a.y == b.y) return (Pt){z.x, a.y};
  double m = (a.y - b.y) / (a.x - b.x), c = b.y - m * b.x, y = m * z.x + c;
  return y < z.y ? (Pt){z.x, y} : (Pt){(z.y - c) / m, z.y};
}

static Pt vertex(const Vx *v) {
  if (v->kind == V_PT) return (Pt){lg(v->ax), lg(v->ay)};
  Pt e = extend(v->ax, v->ay, v->bx, v->by);
  return v->kind == V_EXT ? e : (Pt){lg(v->x), e.y};
}

static inline double cross(Pt a, Pt b) { return a.x * b.y - a.y * b.x; }
static inline Pt sub(Pt a, Pt b) { return (Pt){a.x - b.x, a.y - b.y}; }

/* Distance from p to segment ab; HUGE_VAL when p's foot falls outside it. */
static double seg_distance(Pt p, Pt a, Pt b) {
  Pt d = sub(b, a);
  double len2 = d.x * d.x + d.y * d.y;
  if (len2 == 0) return hypot(p.x - a.x, p.y - a.y);
  double t = ((p.x - a.x) * d.x + (p.y - a.y) * d.y) / len2;
  if (t < -EPS || t > 1 + EPS) return HUGE_VAL;
  return hypot(p.x - (a.x + t * d.x), p.y - (a.y + t * d.y));
}

/* Whether segment p0p1 (the ray) properly crosses edge q0q1: parallel, or
** through an end of the edge, does not count (as upstream's intersect). */
static bool crosses(Pt p0, Pt p1, Pt q0, Pt q1) {
  Pt r = sub(p1, p0), s = sub(q1, q0);
  double d = cross(s, r);
  if (fabs(d) < EPS) return false;
  double a = (cross(p0, r) - cross(q0, r)) / d; /* along the edge */
  if (a < EPS || a > 1 - EPS) return false;
  double b = (cross(p0, s) - cross(q0, s)) / d; /* along the ray */
  return b >= 0 && b <= 1;
}

/* is_inside_region: on an edge counts as inside; else the bounding box,
** then the parity of crossings of a ray toward (2 MS, 2 MR). */
static bool inside(Pt p, const Vx *vx, uint32_t n) {
  Pt v[24];
  g_assert(n <= G_N_ELEMENTS(v));
  for (uint32_t i = 0; i < n; i++) v[i] = vertex(&vx[i]);
  for (uint32_t i = 0; i < n; i++)
    if (seg_distance(p, v[i], v[(i + 1) % n]) < EPS) return true;
  double x0 = v[0].x, x1 = v[0].x, y0 = v[0].y, y1 = v[0].y;
  for (uint32_t i = 1; i < n; i++) {
    x0 = MIN(x0, v[i].x), x1 = MAX(x1, v[i].x);
    y0 = MIN(y0, v[i].y), y1 = MAX(y1, v[i].y);
  }
  if (p.x < x0 || p.x > x1 || p.y < y0 || p.y > y1) return false;
  Pt e = {lg(2 * MS), lg(2 * MR)};
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++) k += crosses(p, e, v[i], v[(i + 1) % n]);
  return k & 1;
}

typedef struct Region {
  FabCollAlgo algo;
  FabProto proto;
  uint32_t n;
  const Vx *v;
} Region;

#define REGION(a, p, ...) {(a), (p), G_N_ELEMENTS(((const Vx[]){__VA_ARGS__})), (const Vx[]){__VA_ARGS__}}

/* p5.48xlarge and p5e.48xlarge (region_init_internal_p5_p5e). E1..E9: the
** source's extended corners. */
#define E1 402653184, 2048, 402653184, 4096
#define E2 8053063680, 160, 9663676416, 192
#define E3 88160256, 128, 178163712, 256
#define E4 787480576, 128, 1073741824, 256
#define E5 257114112, 128, 269484032, 256
#define E6 9999360, 64, 119477248, 128
#define E7 4736000, 2, 269484032, 128
#define E8 4194304, 2, 8589934592, 2048
#define E9 8388608, 2, 4294967296, 1024

static const Region p5_ar8[] = { /* 8 ranks per node, allreduce */
  REGION(FAB_ALGO_TREE, FAB_PROTO_LL128, P(0, 16), P(31457280, 16), P(37748736, 32), P(117440512, 64),
         P(301989888, 128), P(301989888, 256), P(335544320, 512), P(536870912, 1024), P(402653184, 2048),
         P(402653184, 4096), EXT(E1), P(0, MR)),
  REGION(FAB_ALGO_NVLS_TREE, FAB_PROTO_SIMPLE, P(31457281, 16), P(MS, 16), P(31457281, 16)),
  REGION(FAB_ALGO_RING, FAB_PROTO_LL128, P(31457280, 17), P(1073741824, 17), P(2147483648, 64), P(2147483648, 128),
         P(1342177280, 160), P(2147483648, 256), P(1074790400, 256), P(444596224, 160), P(301989888, 128),
         P(117440512, 64), P(37748736, 32)),
  REGION(FAB_ALGO_NVLS_TREE, FAB_PROTO_SIMPLE, P(2147483648, 128), P(6442450944, 128), P(8053063680, 160),
         P(9663676416, 192), EXT(E2), EXT(E1), P(402653184, 4096), P(402653184, 2048), P(536870912, 1024),
         P(335544320, 512), P(301989888, 256), P(310378496, 160), P(444596224, 160), P(1074790400, 256),
         P(2684354560, 256), P(2147483648, 224), P(1342177280, 160)),
  REGION(FAB_ALGO_RING, FAB_PROTO_SIMPLE, P(1073741824, 17), P(MS, 17), EXT(E2), P(9663676416, 192), P(8053063680, 160),
         P(2684354560, 64), P(1610612736, 32)),
};

static const Region p5_ar2[] = { /* 2 ranks per node, allreduce */
  REGION(FAB_ALGO_TREE, FAB_PROTO_LL128, P(0, 4), P(1314816, 4), P(1051648, 8), P(1051648, 12), P(2367488, 16),
         P(5525504, 32), P(9473024, 64), P(88160256, 128), P(178163712, 256), EXT(E3), YOF(0, E3)),
  REGION(FAB_ALGO_RING, FAB_PROTO_LL128, P(1314816, 4), P(19736576, 4), P(41842688, 8), P(296747008, 64),
         P(257114112, 128), P(269484032, 256), P(178163712, 256), P(88160256, 128), P(9473024, 64), P(5525504, 32),
         P(2367488, 16), P(1051648, 12), P(1051648, 8), P(1314816, 4)),
  REGION(FAB_ALGO_NVLS_TREE, FAB_PROTO_SIMPLE, P(19736576, 4), P(81844224, 4), P(275775488, 8), P(275775488, 48),
         P(296747008, 64), P(41842688, 8)),
  REGION(FAB_ALGO_TREE, FAB_PROTO_LL128, P(81844224, 4), P(269484032, 4), P(81844224, 4)),
  REGION(FAB_ALGO_TREE, FAB_PROTO_SIMPLE, P(269484032, 4), P(MS, 4), P(269484032, 4)),
  REGION(FAB_ALGO_RING, FAB_PROTO_SIMPLE, P(81844224, 5), P(MS, 5), P(MS, 32), P(1073741824, 40),
         P(1073741824, 128), P(787480576, 128), P(296747008, 64), P(275775488, 48), P(275775488, 8),
         P(81844224, 5)),
  REGION(FAB_ALGO_TREE, FAB_PROTO_SIMPLE, P(296747008, 64), P(787480576, 128), P(1073741824, 256), EXT(E4), EXT(E5),
         P(269484032, 256), P(257114112, 128)),
  REGION(FAB_ALGO_NVLS_TREE, FAB_PROTO_SIMPLE, EXT(E4), P(1073741824, 256), P(787480576, 128), P(1073741824, 128),
         P(1073741824, 40), P(MS, 32)),
};

static const Region p5_ar1[] = { /* 1 rank per node, allreduce */
  REGION(FAB_ALGO_TREE, FAB_PROTO_LL128, P(0, 16), P(2367488, 16), P(9999360, 64), P(119477248, 128), EXT(E6),
         P(0, MR)),
  REGION(FAB_ALGO_RING, FAB_PROTO_LL128, P(0, 2), P(4736000, 2), P(269484032, 128), EXT(E7), EXT(E6), P(119477248, 128),
         P(9999360, 64), P(2367488, 16), P(0, 16)),
  REGION(FAB_ALGO_RING, FAB_PROTO_SIMPLE, P(4736000, 2), P(MS, 2), EXT(E7), P(269484032, 128)),
};

static const Region p5_ag1[] = { /* 1 rank per node, allgather */
  REGION(FAB_ALGO_RING, FAB_PROTO_SIMPLE, P(4194304, 2), P(MS, 2), EXT(E8), P(8589934592, 2048)),
};

static const Region p5_rs1[] = { /* 1 rank per node, reduce-scatter */
  REGION(FAB_ALGO_RING, FAB_PROTO_SIMPLE, P(8388608, 2), P(MS, 2), EXT(E9), P(4294967296, 1024)),
};

/* The regions for `op` at nranks over nnodes on p5/p5e (NULL: none, the
** plugin leaves NCCL's choice). */
static const Region *p5_regions(FabCollOp op, uint32_t nranks, uint32_t nnodes, uint32_t *n) {
  bool ar = op == FAB_COLL_ALLREDUCE;
#define TABLE(t) (*n = G_N_ELEMENTS(t), (t))
  if (nranks == 8 * nnodes && ar) return TABLE(p5_ar8);
  if (nranks == 2 * nnodes && ar) return TABLE(p5_ar2);
  if (nranks == nnodes) {
    if (ar) return TABLE(p5_ar1);
    if (op == FAB_COLL_ALLGATHER) return TABLE(p5_ag1);
    if (op == FAB_COLL_REDUCE_SCATTER) return TABLE(p5_rs1);
  }
#undef TABLE
  return NULL;
}

bool fab_coll__ofi_region(FabOfiPlatform platform, FabCollOp op, uint64_t bytes, uint32_t nranks, uint32_t nnodes,
                          bool (*allowed)(FabCollAlgo a, FabProto p, void *ctx), void *ctx, FabCollAlgo *a,
                          FabProto *p) {
  if (platform != FAB_OFI_PLATFORM_P5 || nnodes <= 2) return false; /* num_nodes <= 2: NCCL's own choice */
  uint32_t n = 0;
  const Region *r = p5_regions(op, nranks, nnodes, &n);
  Pt at = {lg((double)bytes), lg((double)nranks)};
  for (uint32_t i = 0; r && i < n; i++) {
    if (allowed && !allowed(r[i].algo, r[i].proto, ctx)) continue; /* NCCL's cost table says -1 there */
    if (!inside(at, r[i].v, r[i].n)) continue;
    *a = r[i].algo;
    *p = r[i].proto;
    return true;
  }
  return false;
}

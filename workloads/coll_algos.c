/* The collective algorithms, each a pattern of flows built with the ops of
** collective.c. See collective.c for what each one does and why. */
#include "coll_int.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Rings and chains. */

/* Ring order of members mem[0..k) for each channel: ord[c*k + p]. One node:
** the members in order. Several nodes: each channel enters node m at local
** index c mod size; even nodes are walked forward, odd ones backward, so the
** hop between nodes joins the same local index (rail). On a mesh
** (env->nvl_mesh) one node's channel c walks mesh ring c mod R
** (fab_coll_mesh_rings); across nodes, channel c walks path c mod k of k
** paths that use every directed link once and start and end on every GPU
** once (fab_coll_mesh_path; an odd k takes ring c mod R from entry c mod k,
** cut before it closes), so the links and the NICs carry even loads. */
static void ring_orders(const Ex *x, const uint32_t *mem, uint32_t k, uint32_t C, uint32_t *ord) {
  Groups g;
  fab_coll__groups_make(&g, x->ep, mem, k, x->env->gpus_per_node);
  uint32_t seq[FAB_MESH_RING_MAX];
  for (uint32_t c = 0; c < C; c++) {
    uint32_t *o = ord + (size_t)c * k, w = 0;
    if (g.ng == 1 && !x->env->nvl_mesh) {
      memcpy(o, mem, k * sizeof *o);
      continue;
    }
    for (uint32_t m = 0; m < g.ng; m++) {
      uint32_t km = fab_coll__group_size(&g, m), r = g.ng == 1 ? 0 : c % km;
      const uint32_t *gm = g.mem + g.off[m];
      if (x->env->nvl_mesh && km <= FAB_MESH_RING_MAX) { /* km > 1 GPUs of one node */
        if (g.ng > 1 && km % 2 == 0) {
          fab_coll_mesh_path(km, c % km, seq);
        } else {
          const uint8_t *rings;
          uint32_t R = fab_coll_mesh_rings(km, &rings), p0 = 0;
          const uint8_t *ring = rings + (size_t)(c % R) * km;
          while (ring[p0] != r) p0++;
          for (uint32_t q = 0; q < km; q++) seq[q] = ring[(p0 + q) % km];
        }
        for (uint32_t q = 0; q < km; q++) o[w++] = gm[m % 2 == 0 ? seq[q] : seq[km - 1 - q]];
        continue;
      }
      for (uint32_t q = 0; q < km; q++)
        o[w++] = (m % 2 == 0) ? gm[(r + q) % km] : gm[(r + 2 * km - 1 - q) % km];
    }
  }
  fab_coll__groups_free(&g);
}

/* ---- connections ---------------------------------------------------------- */
/* One channel's link from a sender to a receiver, as NCCL's connection FIFO:
** its pieces leave in order (each waits for the previous one to have left),
** and at most x->window of them are in flight: piece m waits until the
** receiver has consumed piece m - window (forwarded it, or holds it if it
** only receives it), when its slot is free again. */
typedef struct Conn {
  uint32_t tail;  /* the last piece sent (FAB_OP_NONE: none yet) */
  uint32_t count; /* pieces sent */
  uint32_t *cons; /* window entries: what consumed piece m, at m % window (FAB_OP_NONE: not yet known) */
} Conn;

static Conn *conns_new(const Ex *x, size_t n) {
  Conn *c = g_new(Conn, n ? n : 1);
  uint32_t *buf = g_new(uint32_t, (n ? n : 1) * x->window);
  memset(buf, 0xff, (n ? n : 1) * x->window * sizeof *buf);
  for (size_t i = 0; i < n; i++) c[i] = (Conn){FAB_OP_NONE, 0, buf + i * x->window};
  return c;
}

static void conns_free(Conn *c) {
  g_free(c[0].cons);
  g_free(c);
}

/* Whether a Simple piece from rank s to rank r waits for the one before it
** on its connection to have landed: NCCL's Simple primitives fence each
** slice before posting its flag (prims_simple.h, postPeer:
** fence_acq_rel_sys after the CTA's barrier), so a channel's next slice to
** a peer it writes over NVLink starts once the previous one's writes are
** done. Over the network the GPU writes into the proxy's local buffer, and
** the copy engines and LL/LL128 (flags in the data) do not fence. The
** model has no landing time apart from the piece's completion, which
** includes its reduction at the receiver (an approximation: about 1 % of a
** 1 MiB slice's time on H100). cluster.nccl.fence: false turns it off. */
static bool fenced(const Ex *x, uint32_t s, uint32_t r) {
  return x->env->costs.fence && x->proto == FAB_PROTO_SIMPLE && x->algo != FAB_ALGO_CE &&
         fab_coll__same_domain(x->env, x->ep[s], x->ep[r]);
}

/* Append to deps the next piece's wait on cn for its predecessor's send
** (for its landing when `fence`), and leave its wait for the slot it reuses
** in x->slot (fab_coll__flow adds it: a receiver-driven piece learns of it
** through the receiver's control message). Returns the new count. */
static uint32_t conn_deps(Ex *x, const Conn *cn, uint32_t *deps, uint32_t nd, bool fence) {
  if (cn->tail != FAB_OP_NONE) deps[nd++] = cn->tail | (fence ? 0 : FAB_DEP_SENT);
  x->slot = cn->count >= x->window ? cn->cons[cn->count % x->window] : FAB_OP_NONE;
  return nd;
}

/* op is the next piece on cn: returns its number there. */
static uint32_t conn_push(const Ex *x, Conn *cn, uint32_t op) {
  uint32_t m = cn->count++;
  cn->tail = op;
  cn->cons[m % x->window] = FAB_OP_NONE;
  return m;
}

/* Piece m of cn is consumed by `dep` (an op, | FAB_DEP_SENT for a forward). */
static void conn_consumed(const Ex *x, Conn *cn, uint32_t m, uint32_t dep) {
  if (m != UINT32_MAX && m + x->window >= cn->count) cn->cons[m % x->window] = dep;
}

/* ---- rings ------------------------------------------------------------------ */

/* A ring over members mem[0..k) on `bytes`: steps 0 .. nsteps-1, the first
** `nreduce` of them reduced at the receiver (allreduce: 2(k-1), k-1;
** reduce-scatter: k-1, k-1; allgather: k-1, 0), as NCCL's ring loops: each
** channel's data goes round in loops of k chunks (a chunk: x->spc pieces);
** in each loop, step s moves at position p segment (p - s) mod k, one piece
** after the other on its connection. A forwarded piece waits for its
** arrival; the slot it came in is free once it is forwarded (the last step:
** once it arrived). `launch`: the first step pays the kernel launch. */
bool fab_coll__ring_begin(Ex *x, Ring *g, const uint32_t *mem, uint32_t k, uint64_t bytes, uint32_t nsteps,
                          uint32_t nreduce, bool launch) {
  memset(g, 0, sizeof *g);
  if (k < 2 || bytes == 0) return false;
  *g = (Ring){.k = k, .nsteps = nsteps, .nreduce = nreduce, .C = fab_coll__chans(x, bytes, k), .Q = MAX(x->spc, 1u),
              .launch = launch};
  uint32_t C = g->C;
  g->ord = g_new(uint32_t, (size_t)C * k);
  ring_orders(x, mem, k, C, g->ord);
  g->loop = (uint64_t)k * g->Q * x->chunk;
  g->min_slice = MAX(x->chunk / 32, (uint64_t)x->unit);
  g->cb = g_new(uint64_t, C);
  for (uint32_t c = 0; c < C; c++) {
    g->cb[c] = fab_coll__part(x, bytes, C, c);
    g->L = MAX(g->L, fab_coll__ceil_div(g->cb[c], g->loop));
  }
  size_t nseg = (size_t)C * k * g->Q;
  g->arr = g_new(uint32_t, nseg);
  g->arr_m = g_new(uint32_t, nseg);
  g->cn = conns_new(x, (size_t)C * k);
  return g->L > 0 && nsteps > 0;
}

/* Layer (l, s): at step s of loop l, every slice of every channel, each
** position's piece. Returns whether a layer is left. */
bool fab_coll__ring_layer(Ex *x, Ring *g) {
  uint32_t k = g->k, Q = g->Q, C = g->C, s = g->s, nsteps = g->nsteps;
  uint64_t l = g->l, loop = g->loop;
  uint32_t deps[4];
  for (uint32_t q = 0; q < Q && !x->over; q++)
    for (uint32_t c = 0; c < C; c++) {
      if (l * loop >= g->cb[c]) continue;
      uint64_t lb = MIN(loop, g->cb[c] - l * loop);
      for (uint32_t p = 0; p < k; p++) {
        uint32_t sg = (uint32_t)((p + k - s % k) % k);
        uint64_t seg = fab_coll__part(x, lb, k, sg);
        uint32_t nq = (uint32_t)MIN((uint64_t)Q, MAX(1, fab_coll__ceil_div(seg, g->min_slice)));
        uint64_t b = q < nq ? fab_coll__part(x, seg, nq, q) : 0;
        if (b == 0) continue;
        size_t at = ((size_t)c * k + sg) * Q + q;
        Conn *me = &g->cn[(size_t)c * k + p], *up = &g->cn[(size_t)c * k + (p + k - 1) % k];
        uint32_t nd = 0;
        if (s > 0) deps[nd++] = g->arr[at]; /* the piece arrived here a step ago */
        uint32_t from = g->ord[(size_t)c * k + p], to = g->ord[(size_t)c * k + (p + 1) % k];
        nd = conn_deps(x, me, deps, nd, fenced(x, from, to));
        unsigned fl = (me->count == 0 ? F_READY : 0) | (s < g->nreduce ? F_REDUCE : 0) |
                      (g->launch && l == 0 && s == 0 ? F_LAUNCH : 0);
        x->chan = c;
        uint32_t op = fab_coll__flow(x, from, to, b, fl, deps, nd);
        if (op == FAB_OP_NONE) break;
        if (s > 0) conn_consumed(x, up, g->arr_m[at], op | FAB_DEP_SENT); /* forwarded: its slot is free */
        uint32_t m = conn_push(x, me, op);
        if (s + 1 == nsteps) conn_consumed(x, me, m, op); /* kept where it arrived */
        g->arr[at] = op;
        g->arr_m[at] = m;
      }
    }
  if (++g->s == nsteps) {
    g->s = 0;
    g->l++;
  }
  return g->l < g->L && !x->over;
}

void fab_coll__ring_free(Ring *g) {
  if (g->cn) conns_free(g->cn);
  g_free(g->arr);
  g_free(g->arr_m);
  g_free(g->cb);
  g_free(g->ord);
  memset(g, 0, sizeof *g);
}

/* The whole ring at once. */
void fab_coll__ring(Ex *x, const uint32_t *mem, uint32_t k, uint64_t bytes, uint32_t nsteps, uint32_t nreduce,
                    bool launch) {
  Ring g;
  if (fab_coll__ring_begin(x, &g, mem, k, bytes, nsteps, nreduce, launch))
    while (fab_coll__ring_layer(x, &g)) continue;
  fab_coll__ring_free(&g);
}

/* Broadcast (from the root) or reduce (to the root) as NCCL's pipelined chain
** along each channel's ring: piece j hops from rank to rank, each hop a
** connection of its own. */
void fab_coll__chain(Ex *x, uint32_t root, uint64_t bytes, bool reduce) {
  uint32_t n = x->n;
  if (n < 2 || bytes == 0) return;
  uint32_t C = fab_coll__chans(x, bytes, 1);
  uint32_t *all = g_new(uint32_t, n), *ord = g_new(uint32_t, (size_t)C * n), *ch = g_new(uint32_t, (size_t)C * n);
  for (uint32_t i = 0; i < n; i++) all[i] = i;
  ring_orders(x, all, n, C, ord);
  uint64_t pmax = 0, *cb = g_new(uint64_t, C);
  for (uint32_t c = 0; c < C; c++) {
    const uint32_t *o = ord + (size_t)c * n;
    uint32_t at = 0;
    while (o[at] != root) at++;
    for (uint32_t h = 0; h < n; h++) ch[(size_t)c * n + h] = o[(at + h + (reduce ? 1 : 0)) % n];
    cb[c] = fab_coll__part(x, bytes, C, c);
    pmax = MAX(pmax, fab_coll__ceil_div(cb[c], x->chunk));
  }
  size_t nc = (size_t)C * n;
  Conn *cn = conns_new(x, nc); /* per (channel, hop) */
  uint32_t *last = g_new(uint32_t, nc), *last_m = g_new(uint32_t, nc), deps[4];
  for (uint64_t j = 0; j < pmax && !x->over; j++)
    for (uint32_t c = 0; c < C; c++) {
      if (j >= fab_coll__ceil_div(cb[c], x->chunk)) continue;
      for (uint32_t h = 0; h + 1 < n && !x->over; h++) {
        size_t at = (size_t)c * n + h;
        uint32_t nd = 0;
        if (h > 0) deps[nd++] = last[at - 1]; /* piece j arrived from the hop before */
        nd = conn_deps(x, &cn[at], deps, nd, fenced(x, ch[at], ch[at + 1]));
        unsigned fl = (j == 0 ? F_READY : 0) | (reduce ? F_REDUCE : 0) | (h == 0 && j == 0 ? F_LAUNCH : 0);
        x->chan = c;
        uint32_t op = fab_coll__flow(x, ch[at], ch[at + 1], fab_coll__piece_size(cb[c], x->chunk, j), fl, deps, nd);
        if (op == FAB_OP_NONE) break;
        if (h > 0) conn_consumed(x, &cn[at - 1], last_m[at - 1], op | FAB_DEP_SENT);
        last_m[at] = conn_push(x, &cn[at], op);
        if (h + 2 == n) conn_consumed(x, &cn[at], last_m[at], op);
        last[at] = op;
      }
    }
  conns_free(cn);
  g_free(last);
  g_free(last_m);
  g_free(cb);
  g_free(ch);
  g_free(ord);
  g_free(all);
}

/* ------------------------------------------------------------------------ */
/* Trees. */

/* NCCL's binary tree over 0..n-1 rooted at 0 (trees.cc ncclGetBtree): a
** rank's parent clears its lowest set bit and sets the next one (or just
** clears it past the end); the root's one child is the highest power of two
** below n. */
static void btree(int n, int r, int *up, int *d0, int *d1) {
  int bit = 1;
  while (bit < n && !(bit & r)) bit <<= 1;
  if (r == 0) {
    *up = -1;
    *d0 = -1;
    *d1 = n > 1 ? bit >> 1 : -1;
    return;
  }
  int u = (r ^ bit) | (bit << 1);
  if (u >= n) u = r ^ bit;
  *up = u;
  int low = bit >> 1;
  *d0 = low ? r - low : -1;
  int c1 = low ? r + low : -1;
  while (c1 >= n) {
    low >>= 1;
    c1 = low ? r + low : -1;
  }
  *d1 = c1;
}

/* Tree t (0 or 1) of NCCL's double binary tree (ncclGetDtree): tree 1 is
** tree 0 mirrored (n even) or shifted by one rank (n odd), which makes most
** inner nodes of one tree leaves of the other. */
static void dtree(int n, int r, int t, int *up, int *d0, int *d1) {
  if (t == 0) {
    btree(n, r, up, d0, d1);
  } else if (n % 2) {
    btree(n, (r - 1 + n) % n, up, d0, d1);
    *up = *up < 0 ? -1 : (*up + 1) % n;
    *d0 = *d0 < 0 ? -1 : (*d0 + 1) % n;
    *d1 = *d1 < 0 ? -1 : (*d1 + 1) % n;
  } else {
    btree(n, n - 1 - r, up, d0, d1);
    *up = *up < 0 ? -1 : n - 1 - *up;
    *d0 = *d0 < 0 ? -1 : n - 1 - *d0;
    *d1 = *d1 < 0 ? -1 : n - 1 - *d1;
  }
}

typedef struct Tree {
  uint32_t root;   /* member index */
  int32_t *parent; /* k: member index, -1 at the root */
  uint32_t *kids;  /* 3 per member, UINT32_MAX: none */
  uint32_t *bfs;   /* k: root first, parents before children */
} Tree;

/* Tree t of channel c over members mem[0..k): the double binary tree over
** the groups (nodes, or single members), a chain inside each group headed by
** local index (2c + t) mod size, through the next ones in order; on a mesh
** (`mesh`, an even group) along node path (2c + t) mod size, which starts
** there (fab_coll_mesh_path), so the chains spread over the links as the
** rings do. */
static void tree_make(Tree *tr, const Groups *g, const uint32_t *midx, uint32_t k, uint32_t c, uint32_t t,
                      bool mesh) {
  tr->parent = g_new(int32_t, k);
  tr->kids = g_new(uint32_t, (size_t)k * 3);
  tr->bfs = g_new(uint32_t, k);
  memset(tr->kids, 0xff, (size_t)k * 3 * sizeof *tr->kids);
  uint32_t N = g->ng;
  uint32_t *head = g_new(uint32_t, N);
  uint32_t seq[FAB_MESH_RING_MAX];
  for (uint32_t m = 0; m < N; m++) {
    uint32_t km = fab_coll__group_size(g, m), rot = (2 * c + t) % km;
    const uint32_t *gm = g->mem + g->off[m];
    bool path = mesh && km % 2 == 0 && km <= FAB_MESH_RING_MAX;
    if (path) fab_coll_mesh_path(km, rot, seq);
#define AT(q) (path ? seq[q] : (rot + (q)) % km) /* the chain's q-th local index */
    head[m] = midx[gm[AT(0)]];
    for (uint32_t q = 0; q < km; q++) {
      uint32_t v = midx[gm[AT(q)]];
      tr->parent[v] = q ? (int32_t)midx[gm[AT(q - 1)]] : -1;
      if (q + 1 < km) tr->kids[(size_t)v * 3] = midx[gm[AT(q + 1)]];
    }
#undef AT
  }
  for (uint32_t m = 0; m < N; m++) {
    int up, d0, d1;
    dtree((int)N, (int)m, (int)t, &up, &d0, &d1);
    uint32_t h = head[m];
    if (up < 0) tr->root = h;
    else tr->parent[h] = (int32_t)head[up];
    if (d0 >= 0) tr->kids[(size_t)h * 3 + 1] = head[d0];
    if (d1 >= 0) tr->kids[(size_t)h * 3 + 2] = head[d1];
  }
  uint32_t w = 0;
  tr->bfs[w++] = tr->root;
  for (uint32_t i = 0; i < w; i++)
    for (int q = 0; q < 3; q++) {
      uint32_t ch = tr->kids[(size_t)tr->bfs[i] * 3 + q];
      if (ch == UINT32_MAX) continue;
      g_assert(tr->parent[ch] == (int32_t)tr->bfs[i] && w < k);
      tr->bfs[w++] = ch;
    }
  g_assert(w == k); /* a spanning tree */
  g_free(head);
}

static void tree_free(Tree *tr) {
  g_free(tr->parent);
  g_free(tr->kids);
  g_free(tr->bfs);
}

/* Double-binary-tree allreduce over members mem[0..k) on `bytes`; grouped by
** node (a chain inside each node) when by_node and GPUs share nodes. NCCL
** doubles the search's channels, the first half on tree 0 and the copies on
** tree 1 (src/graph/connect.cc connectTrees, ncclTopoPostset), and a
** collective takes channels from 0 up: channel c carries its whole part on
** tree (c / x->tree_n) mod 2, so fewer channels than the search's run on
** tree 0 alone. The part goes in pieces that go up
** (reduced at every parent) and back down, pipelined. Every tree edge is a
** connection each way: a piece up waits for the slot its parent frees when
** it sends that piece on (up, or down from the root), a piece down for the
** slot its child frees when it sends it further down (or holds it, a leaf).
** `launch`: the leaves' first pieces pay the kernel launch. */
void fab_coll__tree(Ex *x, const uint32_t *mem, uint32_t k, uint64_t bytes, bool by_node, bool launch) {
  if (k < 2 || bytes == 0) return;
  uint32_t T = fab_coll__chans(x, bytes, 1);
  Groups g;
  fab_coll__groups_make(&g, x->ep, mem, k, by_node ? x->env->gpus_per_node : 0);
  uint32_t *midx = g_new0(uint32_t, x->n); /* rank -> member index */
  for (uint32_t i = 0; i < k; i++) midx[mem[i]] = i;
  Tree *trs = g_new(Tree, T);
  uint64_t *tb = g_new(uint64_t, T), pmax = 0;
  for (uint32_t q = 0; q < T; q++) {
    tree_make(&trs[q], &g, midx, k, q, q / MAX(x->tree_n, 1u) % 2, by_node && x->env->nvl_mesh);
    tb[q] = fab_coll__part(x, bytes, T, q);
    pmax = MAX(pmax, fab_coll__ceil_div(tb[q], x->chunk));
  }
  /* per tree and member: its connection up, the one down into it, and the
  ** piece numbers there of the latest flows */
  size_t sz = (size_t)T * k;
  uint32_t *up = g_new(uint32_t, sz), *dn = g_new(uint32_t, sz), *up_m = g_new(uint32_t, sz),
           *dn_m = g_new(uint32_t, sz);
  Conn *cu = conns_new(x, sz), *cd = conns_new(x, sz);
  uint32_t deps[6];
  for (uint64_t j = 0; j < pmax && !x->over; j++)
    for (uint32_t q = 0; q < T && !x->over; q++) {
      if (j >= fab_coll__ceil_div(tb[q], x->chunk)) continue;
      const Tree *tr = &trs[q];
      uint64_t b = fab_coll__piece_size(tb[q], x->chunk, j);
      size_t o = (size_t)q * k;
      x->chan = q;
      for (uint32_t i = k; i-- > 1 && !x->over;) { /* up, children first */
        uint32_t v = tr->bfs[i], nd = 0;
        bool leaf = true;
        for (int z = 0; z < 3; z++) {
          uint32_t ch = tr->kids[(size_t)v * 3 + z];
          if (ch != UINT32_MAX) deps[nd++] = up[o + ch], leaf = false;
        }
        nd = conn_deps(x, &cu[o + v], deps, nd, fenced(x, mem[v], mem[tr->parent[v]]));
        unsigned fl = F_REDUCE | (j == 0 ? F_READY : 0) | (launch && j == 0 && leaf ? F_LAUNCH : 0);
        uint32_t op = fab_coll__flow(x, mem[v], mem[tr->parent[v]], b, fl, deps, nd);
        if (op == FAB_OP_NONE) break;
        for (int z = 0; z < 3; z++) { /* reduced and sent on: the children's slots are free */
          uint32_t ch = tr->kids[(size_t)v * 3 + z];
          if (ch != UINT32_MAX) conn_consumed(x, &cu[o + ch], up_m[o + ch], op | FAB_DEP_SENT);
        }
        up_m[o + v] = conn_push(x, &cu[o + v], op);
        up[o + v] = op;
      }
      for (uint32_t i = 0; i < k && !x->over; i++) { /* down, parents first */
        uint32_t v = tr->bfs[i];
        bool first = true;
        for (int z = 0; z < 3; z++) {
          uint32_t ch = tr->kids[(size_t)v * 3 + z], nd = 0;
          if (ch == UINT32_MAX) continue;
          if (v == tr->root) {
            for (int y = 0; y < 3; y++)
              if (tr->kids[(size_t)v * 3 + y] != UINT32_MAX) deps[nd++] = up[o + tr->kids[(size_t)v * 3 + y]];
          } else {
            deps[nd++] = dn[o + v];
          }
          nd = conn_deps(x, &cd[o + ch], deps, nd, fenced(x, mem[v], mem[ch]));
          uint32_t op = fab_coll__flow(x, mem[v], mem[ch], b, j == 0 ? F_READY : 0, deps, nd);
          if (op == FAB_OP_NONE) break;
          if (first && v == tr->root) /* the root reduced its children's pieces and sends the sum down */
            for (int y = 0; y < 3; y++) {
              uint32_t c2 = tr->kids[(size_t)v * 3 + y];
              if (c2 != UINT32_MAX) conn_consumed(x, &cu[o + c2], up_m[o + c2], op | FAB_DEP_SENT);
            }
          else if (first) /* sent further down: the slot it came in is free */
            conn_consumed(x, &cd[o + v], dn_m[o + v], op | FAB_DEP_SENT);
          first = false;
          dn_m[o + ch] = conn_push(x, &cd[o + ch], op);
          dn[o + ch] = op;
          bool leaf = true;
          for (int y = 0; y < 3; y++) leaf &= tr->kids[(size_t)ch * 3 + y] == UINT32_MAX;
          if (leaf) conn_consumed(x, &cd[o + ch], dn_m[o + ch], op); /* a leaf keeps it */
        }
      }
    }
  for (uint32_t q = 0; q < T; q++) tree_free(&trs[q]);
  conns_free(cu);
  conns_free(cd);
  g_free(trs);
  g_free(tb);
  g_free(up);
  g_free(dn);
  g_free(up_m);
  g_free(dn_m);
  g_free(midx);
  fab_coll__groups_free(&g);
}

/* ------------------------------------------------------------------------ */
/* PAT, send-recv, direct sends (all-to-all: coll_p2p.c). */

/* Bytes of the blocks start .. start+len-1 (mod n) of `total` cut n ways. */
static uint64_t range_bytes(const Ex *x, uint64_t total, uint32_t n, uint32_t start, uint32_t len) {
  uint64_t u = total / x->unit, q = u / n, r = u % n, big = 0;
  uint64_t a = start, e = (uint64_t)start + len;
  if (e <= n) {
    big = a < r ? MIN(e, r) - a : 0;
  } else {
    big = (a < r ? r - a : 0) + MIN(e - n, r);
  }
  return (q * len + big) * x->unit;
}

/* Bruck-style allgather (rs: reduce-scatter, steps reversed, reduced). A
** step forwards blocks that came in at any earlier step, so its first piece
** waits for every piece that arrived since the rank last sent, and for the
** rank's own last send (which waited for what came before). */
void fab_coll__pat(Ex *x, uint64_t bytes, bool rs) {
  uint32_t n = x->n;
  if (n < 2 || bytes == 0) return;
  uint32_t C = fab_coll__chans(x, bytes, n), K = (uint32_t)fab_coll__log2i(n - 1) + 1; /* ceil(log2 n) */
  size_t m = (size_t)C * n;
  GArray **pend = g_new(GArray *, m); /* per (channel, rank): arrivals since it last sent */
  uint32_t *sent = g_new(uint32_t, m), *off = g_new(uint32_t, m + 1), *dst = g_new(uint32_t, m);
  for (size_t q = 0; q < m; q++) pend[q] = g_array_new(FALSE, FALSE, sizeof(uint32_t)), sent[q] = FAB_OP_NONE;
  GArray *cur = g_array_new(FALSE, FALSE, sizeof(uint32_t)), *deps = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  for (uint32_t step = 0; step < K && !x->over; step++) {
    uint32_t t = rs ? K - 1 - step : step, dist = 1u << t, nb = MIN(dist, n - dist);
    g_array_set_size(cur, 0);
    for (uint32_t c = 0; c < C; c++) {
      uint64_t cb = fab_coll__part(x, bytes, C, c);
      for (uint32_t i = 0; i < n; i++) {
        size_t q = (size_t)c * n + i;
        off[q] = cur->len;
        dst[q] = rs ? (i + dist) % n : (i + n - dist) % n;
        uint64_t b = range_bytes(x, cb, n, rs ? dst[q] : i, nb);
        if (b == 0) continue;
        g_array_set_size(deps, 0);
        g_array_append_vals(deps, pend[q]->data, pend[q]->len);
        if (sent[q] != FAB_OP_NONE) {
          uint32_t sd = sent[q] | FAB_DEP_SENT;
          g_array_append_val(deps, sd);
        }
        for (uint64_t j = 0, P = fab_coll__ceil_div(b, x->chunk); j < P && !x->over; j++) {
          unsigned fl = (j == 0 ? F_READY : 0) | (rs ? F_REDUCE : 0) | (step == 0 && j == 0 ? F_LAUNCH : 0);
          if (j > 0) {
            g_array_set_size(deps, 1);
            g_array_index(deps, uint32_t, 0) = sent[q] | FAB_DEP_SENT;
          }
          /* its slot: the piece a window before it arrived (fab_coll__flow adds it) */
          x->slot = j >= x->window ? g_array_index(cur, uint32_t, cur->len - x->window) : FAB_OP_NONE;
          sent[q] = fab_coll__flow(x, i, dst[q], fab_coll__piece_size(b, x->chunk, j), fl, (const uint32_t *)deps->data,
                                   deps->len);
          g_array_append_val(cur, sent[q]);
        }
        g_array_set_size(pend[q], 0);
      }
    }
    off[m] = cur->len;
    for (size_t q = 0; q < m; q++) /* this step's arrivals, for the steps to come */
      g_array_append_vals(pend[(q / n) * n + dst[q]], &g_array_index(cur, uint32_t, off[q]), off[q + 1] - off[q]);
  }
  for (size_t q = 0; q < m; q++) g_array_free(pend[q], TRUE);
  g_free(pend);
  g_free(sent);
  g_free(off);
  g_free(dst);
  g_array_free(cur, TRUE);
  g_array_free(deps, TRUE);
}

/* ---- copy engines ----------------------------------------------------------- */

#define CE_FLAG_BYTES 4 /* a barrier's flag: one 32-bit sequence number (ce_coll.cc) */

/* One barrier of NCCL's ncclMemOpSync: every rank i writes its flag into
** every peer after deps[i][0 .. nd[i]) (none: after its phase's start);
** rank i is through once all peers' flags reached it (the phase's JOIN, or
** the END after the last barrier). */
static void ce_barrier(Ex *x, uint32_t *const *deps, const uint32_t *nd, unsigned flags) {
  uint32_t n = x->n;
  for (uint32_t i = 0; i < n && !x->over; i++) {
    bool after = deps && nd[i];
    for (uint32_t k = 1; k < n; k++)
      fab_coll__flow(x, i, (i + k) % n, CE_FLAG_BYTES, F_SYNC | flags, after ? deps[i] : &x->ready[i],
                     after ? nd[i] : 1);
  }
}

/* NCCL's copy-engine allgather and all-to-all in one NVLink domain
** (src/ce_coll.cc ncclCeAllGather, ncclCeAlltoAll): a barrier, then each
** rank's copies to its peers i+1, i+2, ... as one batch (allgather: its own
** part to every peer; all-to-all: block j of its buffer to rank j), then a
** barrier once its copies have landed. The batch's copies run together,
** sharing the GPU's NVLink port (and the copy engines' rate, ce_bps); the
** copy into its own buffer stays in HBM and is not modelled. The first
** barrier pays the start (`launch`), each flag `ce_sync`. */
void fab_coll__ce(Ex *x, uint64_t bytes, bool a2a) {
  uint32_t n = x->n;
  if (n < 2 || bytes == 0) return;
  ce_barrier(x, NULL, NULL, F_LAUNCH);
  fab_coll__phase_end(x, FAB_MARK_JOIN, NULL);
  uint32_t **copies = g_new(uint32_t *, n), *buf = g_new(uint32_t, (size_t)n * (n - 1)), *nc = g_new0(uint32_t, n);
  for (uint32_t i = 0; i < n; i++) {
    copies[i] = buf + (size_t)i * (n - 1);
    for (uint32_t k = 1; k < n && !x->over; k++) {
      uint32_t j = (i + k) % n;
      uint64_t b = a2a ? fab_coll__a2a_block(x, bytes, i, j) : fab_coll__part(x, bytes, n, i);
      if (b) copies[i][nc[i]++] = fab_coll__flow(x, i, j, b, 0, &x->ready[i], 1);
    }
  }
  ce_barrier(x, copies, nc, 0);
  g_free(nc);
  g_free(buf);
  g_free(copies);
}

/* ---- NVLS ------------------------------------------------------------------- */

/* One NVLink domain: every rank's part of one NVLS collective, piece by
** piece (models/nvls.h). Allreduce: the switch reduces and the owners
** multicast; reduce-scatter: each rank contributes all S bytes and gets its
** reduced S/n back (NCCL's multimem.ld_reduce); allgather: each rank stores
** its S/n once and the switch copies it to every rank (multimem.st). */
/* NVLS_TREE's state: per (channel, domain, local index) the latest
** reduce-scatter part, multicast part, flows up and down the tree, and the
** tree's connections. */
typedef struct NvlsTree {
  Ex *x;
  const Groups *dom;
  uint32_t D, G;
  Tree tr[2];            /* the double binary tree over the domains */
  uint32_t *rs, *ag, *up, *dn, *up_m, *dn_m;
  Conn *cu, *cd;
} NvlsTree;

static size_t nt_head(const NvlsTree *t, uint32_t c, uint32_t m, uint32_t l) {
  return ((size_t)c * t->D + m) * t->G + l;
}

static uint32_t nt_rank(const NvlsTree *t, uint32_t m, uint32_t l) { return t->dom->mem[t->dom->off[m] + l]; }

/* Up and down the tree of channel c for local index l: b bytes of loop lp. */
static void nt_tree(NvlsTree *t, uint32_t c, uint64_t lp, uint32_t l, uint64_t b) {
  Ex *x = t->x;
  const Tree *tr = &t->tr[c % 2];
  uint32_t deps[6], data[6];
  for (uint32_t i = t->D; i-- > 1 && !x->over;) { /* up, children first: reduced at the parent */
    uint32_t v = tr->bfs[i], nd = 0;
    size_t hv = nt_head(t, c, v, l);
    deps[nd++] = t->rs[hv];
    for (int z = 0; z < 3; z++)
      if (tr->kids[(size_t)v * 3 + z] != UINT32_MAX) deps[nd++] = t->up[nt_head(t, c, tr->kids[(size_t)v * 3 + z], l)];
    nd = conn_deps(x, &t->cu[hv], deps, nd, fenced(x, nt_rank(t, v, l), nt_rank(t, tr->parent[v], l)));
    uint32_t op = fab_coll__flow(x, nt_rank(t, v, l), nt_rank(t, tr->parent[v], l), b,
                                 F_REDUCE | (lp == 0 ? F_READY : 0), deps, nd);
    for (int z = 0; z < 3; z++)
      if (tr->kids[(size_t)v * 3 + z] != UINT32_MAX) {
        size_t hk = nt_head(t, c, tr->kids[(size_t)v * 3 + z], l);
        conn_consumed(x, &t->cu[hk], t->up_m[hk], op | FAB_DEP_SENT);
      }
    t->up_m[hv] = conn_push(x, &t->cu[hv], op);
    t->up[hv] = op;
  }
  for (uint32_t i = 0; i < t->D && !x->over; i++) { /* down, parents first */
    uint32_t v = tr->bfs[i], nd = 0;
    size_t hv = nt_head(t, c, v, l);
    if (v == tr->root) {
      data[nd++] = t->rs[hv];
      for (int z = 0; z < 3; z++)
        if (tr->kids[(size_t)v * 3 + z] != UINT32_MAX) data[nd++] = t->up[nt_head(t, c, tr->kids[(size_t)v * 3 + z], l)];
    } else {
      data[nd++] = t->dn[hv];
    }
    for (int z = 0; z < 3; z++) {
      uint32_t ch = tr->kids[(size_t)v * 3 + z];
      if (ch == UINT32_MAX) continue;
      size_t hc = nt_head(t, c, ch, l);
      memcpy(deps, data, nd * sizeof *deps);
      uint32_t n2 = conn_deps(x, &t->cd[hc], deps, nd, fenced(x, nt_rank(t, v, l), nt_rank(t, ch, l)));
      uint32_t op = fab_coll__flow(x, nt_rank(t, v, l), nt_rank(t, ch, l), b, lp == 0 ? F_READY : 0, deps, n2);
      if (v == tr->root)
        for (int y = 0; y < 3; y++) {
          uint32_t c2 = tr->kids[(size_t)v * 3 + y];
          if (c2 != UINT32_MAX) conn_consumed(x, &t->cu[nt_head(t, c, c2, l)], t->up_m[nt_head(t, c, c2, l)],
                                              op | FAB_DEP_SENT);
        }
      else
        conn_consumed(x, &t->cd[hv], t->dn_m[hv], op | FAB_DEP_SENT);
      t->dn_m[hc] = conn_push(x, &t->cd[hc], op);
      t->dn[hc] = op;
    }
  }
}

/* Loop lp of channel c (lb bytes): each domain's switch reduce-scatter, the
** trees, each domain's multicast. */
static void nt_loop(NvlsTree *t, uint32_t c, uint64_t lp, uint64_t lb) {
  Ex *x = t->x;
  const Tree *tr = &t->tr[c % 2];
  uint32_t deps[5];
  x->chan = c;
  for (uint32_t m = 0; m < t->D && !x->over; m++) { /* the domain's switch reduces the loop's data */
    uint32_t group = x->d->groups++;
    for (uint32_t l = 0; l < t->G; l++) {
      size_t h = nt_head(t, c, m, l);
      uint32_t nd = 0;
      if (t->rs[h] != FAB_OP_NONE) deps[nd++] = t->rs[h];
      t->rs[h] = fab_coll__nvls_op(x, nt_rank(t, m, l), group, lb, FAB_NVLS_OP_RS, lp == 0 ? F_READY | F_LAUNCH : 0,
                                   deps, nd);
    }
  }
  for (uint32_t l = 0; l < t->G && !x->over; l++) {
    uint64_t b = fab_coll__part(x, lb, t->G, l);
    if (b) nt_tree(t, c, lp, l, b);
  }
  for (uint32_t m = 0; m < t->D && !x->over; m++) { /* each head multicasts its result into its domain */
    uint32_t group = x->d->groups++;
    for (uint32_t l = 0; l < t->G; l++) {
      size_t h = nt_head(t, c, m, l);
      uint64_t b = fab_coll__part(x, lb, t->G, l);
      uint32_t nd = 0;
      if (b) { /* nothing of its own this loop: it only receives */
        deps[nd++] = m == tr->root ? t->rs[h] : t->dn[h];
        for (int z = 0; m == tr->root && z < 3; z++)
          if (tr->kids[(size_t)m * 3 + z] != UINT32_MAX) deps[nd++] = t->up[nt_head(t, c, tr->kids[(size_t)m * 3 + z], l)];
      }
      if (t->ag[h] != FAB_OP_NONE) deps[nd++] = t->ag[h];
      t->ag[h] = fab_coll__nvls_op(x, nt_rank(t, m, l), group, MAX(b, 1), FAB_NVLS_OP_AG, 0, deps, nd);
    }
  }
}

/* NCCL's NVLS_TREE, chunk by chunk: in each domain the switch reduces a
** loop's data and scatters it over the G ranks (each the head of one G-th);
** the heads of one local index reduce their parts across the D domains over
** a double binary tree (up with a reduction, back down), and each head then
** multicasts the result into its domain. Channel c runs tree c % 2; in a
** domain a head's next loop waits for its last one's reduction (and its
** multicast) to be done, as in one domain (coll_nvls.c), while the tree's
** connections hold x->window pieces across loops. */
void fab_coll__run_nvls_tree(Ex *x, const Groups *dom, uint32_t G, uint32_t *end) {
  uint64_t S = x->c->bytes;
  uint32_t D = dom->ng, C = fab_coll__chans(x, S, G);
  uint64_t loop = (uint64_t)G * x->chunk, L = 0, *cb = g_new(uint64_t, C);
  for (uint32_t c = 0; c < C; c++) {
    cb[c] = fab_coll__part(x, S, C, c);
    L = MAX(L, fab_coll__ceil_div(cb[c], loop));
  }
  NvlsTree t = {.x = x, .dom = dom, .D = D, .G = G};
  x->nvls_bps = fab_coll__nvls_share(x);
  Groups single;
  uint32_t *didx = g_new(uint32_t, D);
  for (uint32_t m = 0; m < D; m++) didx[m] = m;
  fab_coll__groups_make(&single, didx, didx, D, 0); /* the domains, one member each */
  for (uint32_t k = 0; k < 2; k++) tree_make(&t.tr[k], &single, didx, D, 0, k, false);
  size_t nh = (size_t)C * D * G;
  uint32_t **arr[6] = {&t.rs, &t.ag, &t.up, &t.dn, &t.up_m, &t.dn_m};
  for (int a = 0; a < 6; a++) {
    *arr[a] = g_new(uint32_t, nh);
    memset(*arr[a], 0xff, nh * sizeof(uint32_t));
  }
  t.cu = conns_new(x, nh);
  t.cd = conns_new(x, nh);
  for (uint64_t lp = 0; lp < L && !x->over; lp++)
    for (uint32_t c = 0; c < C && !x->over; c++)
      if (lp * loop < cb[c]) nt_loop(&t, c, lp, MIN(loop, cb[c] - lp * loop));
  conns_free(t.cu);
  conns_free(t.cd);
  for (uint32_t k = 0; k < 2; k++) tree_free(&t.tr[k]);
  fab_coll__groups_free(&single);
  for (int a = 0; a < 6; a++) g_free(*arr[a]);
  g_free(didx);
  g_free(cb);
  fab_coll__phase_end(x, FAB_MARK_COLL_END, end);
}

void fab_coll__run_hierarchical(Ex *x, const Groups *nodes, uint32_t L, uint32_t *end) {
  uint64_t S = x->c->bytes;
  FabCollOp op = x->c->op;
  uint32_t N = nodes->ng, *mem = g_new(uint32_t, N);
  bool base = true;
  /* inside every node: reduce-scatter (allreduce, reduce-scatter) */
  if (L > 1 && op != FAB_COLL_ALLGATHER) {
    for (uint32_t m = 0; m < N && !x->over; m++) fab_coll__ring(x, nodes->mem + nodes->off[m], L, S, L - 1, L - 1, base);
    fab_coll__phase_end(x, FAB_MARK_JOIN, NULL);
    base = false;
  }
  /* across nodes, among the ranks of one local index, on that index's shard */
  if (N > 1) {
    for (uint32_t l = 0; l < L && !x->over; l++) {
      for (uint32_t m = 0; m < N; m++) mem[m] = nodes->mem[nodes->off[m] + l];
      uint32_t steps = op == FAB_COLL_ALLREDUCE ? 2 * (N - 1) : N - 1;
      uint32_t red = op == FAB_COLL_ALLGATHER ? 0 : N - 1;
      fab_coll__ring(x, mem, N, fab_coll__part(x, S, L, l), steps, red, base);
    }
    fab_coll__phase_end(x, FAB_MARK_JOIN, NULL);
    base = false;
  }
  /* inside every node: allgather (allreduce, allgather) */
  if (L > 1 && op != FAB_COLL_REDUCE_SCATTER)
    for (uint32_t m = 0; m < N && !x->over; m++) fab_coll__ring(x, nodes->mem + nodes->off[m], L, S, L - 1, 0, base);
  fab_coll__phase_end(x, FAB_MARK_COLL_END, end);
  g_free(mem);
}

/* ---- CollNet (SHARP) ------------------------------------------------------------ */

/* NCCL's CollNet allreduce over the fabric's SHARP trees, loop by loop of
** L x chunk bytes: in each node the loop's data is reduced onto the L heads
** (head l, the node's l-th rank, owns the l-th part): by the node's NVSwitch
** (nvls: an NVLS reduce-scatter) or by direct flows from every other rank
** (CollNet Direct, each reduced at the head); the heads of one local index
** reduce their part across the nodes in one SHARP reduction (the members'
** NICs into their tree and back); each head then hands the result to its
** node's ranks (an NVLS multicast, or direct flows). A head's next loop
** contributes once its previous one has left, so loops pipeline. One rank per
** node: every rank is a head, and each loop is one SHARP reduction. */
void fab_coll__run_collnet(Ex *x, const Groups *nodes, uint32_t L, bool nvls, uint32_t *end) {
  uint64_t S = x->c->bytes, loop = (uint64_t)L * x->chunk;
  uint32_t N = nodes->ng, n = x->n;
  uint32_t *sh = g_new(uint32_t, n), *in = g_new(uint32_t, n), *rs = g_new(uint32_t, n), *ag = g_new(uint32_t, n);
  uint32_t *up = g_new(uint32_t, (size_t)n * L), *dn = g_new(uint32_t, (size_t)n * L);
  uint32_t *deps = g_new(uint32_t, L + 2);
  memset(sh, 0xff, n * sizeof *sh), memset(rs, 0xff, n * sizeof *rs), memset(ag, 0xff, n * sizeof *ag);
  memset(up, 0xff, (size_t)n * L * sizeof *up), memset(dn, 0xff, (size_t)n * L * sizeof *dn);
  x->chan = 0;
  for (uint64_t lp = 0; lp * loop < S && !x->over; lp++) {
    uint64_t lb = MIN(loop, S - lp * loop);
    unsigned first = lp == 0 ? F_READY | F_LAUNCH : 0;
    for (uint32_t m = 0; m < N && L > 1 && !x->over; m++) { /* onto the heads */
      const uint32_t *mem = nodes->mem + nodes->off[m];
      if (nvls) {
        uint32_t group = x->d->groups++;
        for (uint32_t l = 0; l < L; l++) {
          uint32_t nd = 0, i = mem[l];
          if (rs[i] != FAB_OP_NONE) deps[nd++] = rs[i] | FAB_DEP_SENT;
          in[i] = rs[i] = fab_coll__nvls_op(x, i, group, lb, FAB_NVLS_OP_RS, first, deps, nd);
        }
        continue;
      }
      for (uint32_t l = 0; l < L; l++) in[mem[l]] = FAB_OP_NONE;
      for (uint32_t j = 0; j < L; j++) /* rank j's part l to head l, reduced there */
        for (uint32_t l = 0; l < L; l++) {
          uint64_t b = fab_coll__part(x, lb, L, l);
          if (l == j || !b) continue;
          size_t k = (size_t)mem[j] * L + l;
          uint32_t nd = 0;
          if (up[k] != FAB_OP_NONE) deps[nd++] = up[k] | FAB_DEP_SENT;
          up[k] = fab_coll__flow(x, mem[j], mem[l], b, F_REDUCE | first, deps, nd);
        }
    }
    for (uint32_t l = 0; l < L && !x->over; l++) { /* across the nodes, in the switches */
      uint64_t b = fab_coll__part(x, lb, L, l);
      if (!b) continue;
      uint32_t group = x->d->groups++;
      for (uint32_t m = 0; m < N; m++) {
        const uint32_t *mem = nodes->mem + nodes->off[m];
        uint32_t i = mem[l], nd = 0;
        if (L > 1 && nvls) deps[nd++] = in[i];
        for (uint32_t j = 0; L > 1 && !nvls && j < L; j++)
          if (j != l) deps[nd++] = up[(size_t)mem[j] * L + l];
        if (sh[i] != FAB_OP_NONE) deps[nd++] = sh[i] | FAB_DEP_SENT;
        sh[i] = fab_coll__nvls_op(x, i, group, b, FAB_NVLS_OP_SHARP, L == 1 ? first : 0, deps, nd);
      }
    }
    for (uint32_t m = 0; m < N && L > 1 && !x->over; m++) { /* the result to the node's ranks */
      const uint32_t *mem = nodes->mem + nodes->off[m];
      uint32_t group = nvls ? x->d->groups++ : 0;
      for (uint32_t l = 0; l < L; l++) {
        uint64_t b = fab_coll__part(x, lb, L, l);
        uint32_t h = mem[l];
        if (nvls) {
          uint32_t nd = 0;
          if (b) deps[nd++] = sh[h];
          if (ag[h] != FAB_OP_NONE) deps[nd++] = ag[h] | FAB_DEP_SENT;
          ag[h] = fab_coll__nvls_op(x, h, group, MAX(b, 1), FAB_NVLS_OP_AG, 0, deps, nd);
          continue;
        }
        for (uint32_t j = 0; b && j < L; j++) {
          if (j == l) continue;
          size_t k = (size_t)h * L + j;
          uint32_t nd = 0;
          deps[nd++] = sh[h];
          if (dn[k] != FAB_OP_NONE) deps[nd++] = dn[k] | FAB_DEP_SENT;
          dn[k] = fab_coll__flow(x, h, mem[j], b, 0, deps, nd);
        }
      }
    }
  }
  g_free(sh), g_free(in), g_free(rs), g_free(ag), g_free(up), g_free(dn), g_free(deps);
  fab_coll__phase_end(x, FAB_MARK_COLL_END, end);
}

/* NCCL's CollNet Chain (src/device/all_reduce.h, connect.cc): channel c's
** chain runs through each node's ranks from its head, local index c mod L
** (NCCL's chain graph starts each channel at the GPU nearest that channel's
** NIC), on round the node. The channel's pieces go up the chain, the last
** rank first, each rank reducing what it receives with its own data and
** sending the sum on; the head sends the node's sum into the SHARP
** reduction of the channel's heads across the nodes, and the result comes
** back down the chain, each rank keeping it and passing it on. Every chain
** edge is a connection each way (a piece waits for its slot); pieces
** pipeline. One rank a node: the heads alone, one reduction a piece. */
void fab_coll__run_collnet_chain(Ex *x, const Groups *nodes, uint32_t L, uint32_t *end) {
  uint64_t S = x->c->bytes;
  uint32_t N = nodes->ng, C = fab_coll__chans(x, S, 1);
  uint64_t *cb = g_new(uint64_t, C), pmax = 0;
  for (uint32_t c = 0; c < C; c++) {
    cb[c] = fab_coll__part(x, S, C, c);
    pmax = MAX(pmax, fab_coll__ceil_div(cb[c], x->chunk));
  }
  /* per (channel, node, chain position p): the connection from p up to p - 1 and the one from p - 1 down to
  ** p, their latest pieces and numbers; the head's latest reduction per (channel, node) */
  size_t nk = (size_t)C * N * L;
  Conn *cu = conns_new(x, nk), *cd = conns_new(x, nk);
  uint32_t *up = g_new(uint32_t, nk), *dn = g_new(uint32_t, nk), *up_m = g_new(uint32_t, nk), *dn_m = g_new(uint32_t, nk);
  uint32_t *sh = g_new(uint32_t, (size_t)C * N), deps[4];
  memset(sh, 0xff, (size_t)C * N * sizeof *sh);
  for (uint64_t j = 0; j < pmax && !x->over; j++)
    for (uint32_t c = 0; c < C && !x->over; c++) {
      if (j >= fab_coll__ceil_div(cb[c], x->chunk)) continue;
      uint64_t b = fab_coll__piece_size(cb[c], x->chunk, j);
      unsigned first = j == 0 ? F_READY : 0;
      x->chan = c;
#define RANK(m, p) nodes->mem[nodes->off[m] + (c + (p)) % L]
      for (uint32_t m = 0; m < N && !x->over; m++) /* up the chain, reduced at every rank */
        for (uint32_t p = L - 1; p >= 1 && !x->over; p--) {
          size_t k = ((size_t)c * N + m) * L + p;
          uint32_t nd = 0;
          if (p + 1 < L) deps[nd++] = up[k + 1];
          nd = conn_deps(x, &cu[k], deps, nd, fenced(x, RANK(m, p), RANK(m, p - 1)));
          unsigned fl = F_REDUCE | first | (p + 1 == L && j == 0 ? F_LAUNCH : 0);
          uint32_t op = fab_coll__flow(x, RANK(m, p), RANK(m, p - 1), b, fl, deps, nd);
          if (op == FAB_OP_NONE) break;
          if (p + 1 < L) conn_consumed(x, &cu[k + 1], up_m[k + 1], op | FAB_DEP_SENT);
          up_m[k] = conn_push(x, &cu[k], op);
          up[k] = op;
        }
      uint32_t group = x->d->groups++;
      for (uint32_t m = 0; m < N && !x->over; m++) { /* the heads' sums, reduced across the nodes */
        size_t k = ((size_t)c * N + m) * L + 1, h = (size_t)c * N + m;
        uint32_t nd = 0;
        if (L > 1) deps[nd++] = up[k];
        if (sh[h] != FAB_OP_NONE) deps[nd++] = sh[h] | FAB_DEP_SENT;
        sh[h] = fab_coll__nvls_op(x, RANK(m, 0), group, b, FAB_NVLS_OP_SHARP, L == 1 && j == 0 ? F_LAUNCH | F_READY : 0,
                                  deps, nd);
        if (L > 1) conn_consumed(x, &cu[k], up_m[k], sh[h] | FAB_DEP_SENT);
      }
      for (uint32_t m = 0; m < N && !x->over; m++) /* the result down the chain */
        for (uint32_t p = 1; p < L && !x->over; p++) {
          size_t k = ((size_t)c * N + m) * L + p;
          uint32_t nd = 0;
          deps[nd++] = p == 1 ? sh[(size_t)c * N + m] : dn[k - 1];
          nd = conn_deps(x, &cd[k], deps, nd, fenced(x, RANK(m, p - 1), RANK(m, p)));
          uint32_t op = fab_coll__flow(x, RANK(m, p - 1), RANK(m, p), b, first, deps, nd);
          if (op == FAB_OP_NONE) break;
          if (p > 1) conn_consumed(x, &cd[k - 1], dn_m[k - 1], op | FAB_DEP_SENT);
          dn_m[k] = conn_push(x, &cd[k], op);
          dn[k] = op;
          if (p + 1 == L) conn_consumed(x, &cd[k], dn_m[k], op); /* the last rank keeps it */
        }
#undef RANK
    }
  conns_free(cu);
  conns_free(cd);
  g_free(up), g_free(dn), g_free(up_m), g_free(dn_m), g_free(sh), g_free(cb);
  fab_coll__phase_end(x, FAB_MARK_COLL_END, end);
}

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
** hop between nodes joins the same local index (rail). */
static void ring_orders(const Ex *x, const uint32_t *mem, uint32_t k, uint32_t C, uint32_t *ord) {
  Groups g;
  fab_coll__groups_make(&g, x->ep, mem, k, x->env->gpus_per_node);
  for (uint32_t c = 0; c < C; c++) {
    uint32_t *o = ord + (size_t)c * k, w = 0;
    if (g.ng == 1) {
      memcpy(o, mem, k * sizeof *o);
      continue;
    }
    for (uint32_t m = 0; m < g.ng; m++) {
      uint32_t km = fab_coll__group_size(&g, m), r = c % km;
      const uint32_t *gm = g.mem + g.off[m];
      for (uint32_t q = 0; q < km; q++)
        o[w++] = (m % 2 == 0) ? gm[(r + q) % km] : gm[(r + 2 * km - 1 - q) % km];
    }
  }
  fab_coll__groups_free(&g);
}

static uint64_t piece_size(uint64_t bytes, uint64_t chunk, uint64_t j) {
  uint64_t p = fab_coll__ceil_div(bytes, chunk);
  return j + 1 < p ? chunk : bytes - (p - 1) * chunk;
}

/* A ring over members mem[0..k) on `bytes`: steps 0 .. nsteps-1, the first
** `nreduce` of them reduced at the receiver. Allreduce: 2(k-1), k-1;
** reduce-scatter: k-1, k-1; allgather: k-1, 0. */
void fab_coll__ring(Ex *x, const uint32_t *mem, uint32_t k, uint64_t bytes, uint32_t nsteps, uint32_t nreduce,
                 bool base) {
  if (k < 2 || bytes == 0) return;
  uint32_t C = fab_coll__chans(x, bytes, k);
  uint32_t *ord = g_new(uint32_t, (size_t)C * k);
  ring_orders(x, mem, k, C, ord);
  uint64_t *seg = g_new(uint64_t, (size_t)C * k);
  uint32_t *poff = g_new(uint32_t, (size_t)C * k + 1);
  uint64_t pmax = 0, tot = 0;
  for (uint32_t c = 0; c < C; c++) {
    uint64_t cb = fab_coll__part(x, bytes, C, c);
    for (uint32_t s = 0; s < k; s++) {
      uint64_t b = fab_coll__part(x, cb, k, s), p = fab_coll__ceil_div(b, x->chunk);
      seg[(size_t)c * k + s] = b;
      poff[(size_t)c * k + s] = (uint32_t)tot;
      tot += p;
      pmax = MAX(pmax, p);
    }
  }
  poff[(size_t)C * k] = (uint32_t)tot;
  uint32_t *last = g_new(uint32_t, MAX(tot, 1)); /* per (channel, segment, piece): its latest flow */
  /* per (channel, ring position): the last piece it sent in the step before, and in this one. A
  ** connection is first in, first out, as NCCL's: all of a step's pieces leave before the next
  ** step's first one (whose data may have arrived earlier), so steps pipeline but do not mix. */
  uint32_t *prev_tail = g_new(uint32_t, (size_t)C * k), *tail = g_new(uint32_t, (size_t)C * k);
  for (size_t i = 0; i < (size_t)C * k; i++) prev_tail[i] = tail[i] = FAB_OP_NONE;
  for (uint32_t s = 0; s < nsteps && !x->over; s++) {
    for (uint64_t j = 0; j < pmax && !x->over; j++)
      for (uint32_t c = 0; c < C; c++)
        for (uint32_t p = 0; p < k; p++) {
          uint32_t sg = (uint32_t)((p + k - s % k) % k);
          size_t at = (size_t)c * k + sg, pos = (size_t)c * k + p;
          uint64_t b = seg[at];
          if (j >= fab_coll__ceil_div(b, x->chunk)) continue;
          uint32_t deps[3] = {FAB_OP_NONE, FAB_OP_NONE, FAB_OP_NONE};
          if (s > 0) deps[0] = last[poff[at] + j];                   /* the piece arrived here a step ago */
          if (j > 0) deps[1] = last[poff[at] + j - 1] | FAB_DEP_SENT; /* this step's previous piece left */
          else if (prev_tail[pos] != FAB_OP_NONE) deps[2] = prev_tail[pos] | FAB_DEP_SENT; /* the last step's left */
          unsigned fl = (j == 0 ? F_FIRST : 0) | (s < nreduce ? F_REDUCE : 0) | (base && s == 0 ? F_BASE : 0);
          last[poff[at] + j] = tail[pos] = fab_coll__flow(x, ord[(size_t)c * k + p], ord[(size_t)c * k + (p + 1) % k],
                                                piece_size(b, x->chunk, j), fl, ROW_RING, deps, 3);
        }
    memcpy(prev_tail, tail, sizeof(uint32_t) * C * k);
  }
  g_free(prev_tail);
  g_free(tail);
  g_free(last);
  g_free(poff);
  g_free(seg);
  g_free(ord);
}

/* Broadcast (from the root) or reduce (to the root) as NCCL's pipelined chain
** along each channel's ring. */
void fab_coll__chain(Ex *x, uint32_t root, uint64_t bytes, bool reduce) {
  uint32_t n = x->n;
  if (n < 2 || bytes == 0) return;
  uint32_t C = fab_coll__chans(x, bytes, 1);
  uint32_t *all = g_new(uint32_t, n), *ord = g_new(uint32_t, (size_t)C * n), *ch = g_new(uint32_t, (size_t)C * n);
  for (uint32_t i = 0; i < n; i++) all[i] = i;
  ring_orders(x, all, n, C, ord);
  uint64_t pmax = 0;
  uint64_t *cb = g_new(uint64_t, C);
  uint32_t *poff = g_new(uint32_t, C + 1);
  uint32_t tot = 0;
  for (uint32_t c = 0; c < C; c++) {
    const uint32_t *o = ord + (size_t)c * n;
    uint32_t at = 0;
    while (o[at] != root) at++;
    for (uint32_t h = 0; h < n; h++) ch[(size_t)c * n + h] = o[(at + h + (reduce ? 1 : 0)) % n];
    cb[c] = fab_coll__part(x, bytes, C, c);
    poff[c] = tot;
    tot += (uint32_t)fab_coll__ceil_div(cb[c], x->chunk);
    pmax = MAX(pmax, fab_coll__ceil_div(cb[c], x->chunk));
  }
  uint32_t *last = g_new(uint32_t, MAX(tot, 1));
  for (uint32_t h = 0; h + 1 < n && !x->over; h++)
    for (uint64_t j = 0; j < pmax && !x->over; j++)
      for (uint32_t c = 0; c < C; c++) {
        if (j >= fab_coll__ceil_div(cb[c], x->chunk)) continue;
        uint32_t deps[2] = {FAB_OP_NONE, FAB_OP_NONE};
        if (h > 0) deps[0] = last[poff[c] + j];
        if (j > 0) deps[1] = last[poff[c] + j - 1] | FAB_DEP_SENT;
        unsigned fl = (j == 0 ? F_FIRST : 0) | (reduce ? F_REDUCE : 0) | (h == 0 ? F_BASE : 0);
        last[poff[c] + j] = fab_coll__flow(x, ch[(size_t)c * n + h], ch[(size_t)c * n + h + 1], piece_size(cb[c], x->chunk, j),
                                 fl, ROW_RING, deps, 2);
      }
  g_free(last);
  g_free(poff);
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
** local index (2c + t) mod size. */
static void tree_make(Tree *tr, const Groups *g, const uint32_t *midx, uint32_t k, uint32_t c, uint32_t t) {
  tr->parent = g_new(int32_t, k);
  tr->kids = g_new(uint32_t, (size_t)k * 3);
  tr->bfs = g_new(uint32_t, k);
  memset(tr->kids, 0xff, (size_t)k * 3 * sizeof *tr->kids);
  uint32_t N = g->ng;
  uint32_t *head = g_new(uint32_t, N);
  for (uint32_t m = 0; m < N; m++) {
    uint32_t km = fab_coll__group_size(g, m), rot = (2 * c + t) % km;
    const uint32_t *gm = g->mem + g->off[m];
    head[m] = midx[gm[rot]];
    for (uint32_t q = 0; q < km; q++) {
      uint32_t v = midx[gm[(rot + q) % km]];
      tr->parent[v] = q ? (int32_t)midx[gm[(rot + q - 1) % km]] : -1;
      if (q + 1 < km) tr->kids[(size_t)v * 3] = midx[gm[(rot + q + 1) % km]];
    }
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
** node (a chain inside each node) when by_node and GPUs share nodes. */
void fab_coll__tree(Ex *x, const uint32_t *mem, uint32_t k, uint64_t bytes, bool by_node, int row, bool base) {
  if (k < 2 || bytes == 0) return;
  uint32_t C = fab_coll__chans(x, bytes, 2), T = 2 * C;
  Groups g;
  fab_coll__groups_make(&g, x->ep, mem, k, by_node ? x->env->gpus_per_node : 0);
  uint32_t *midx = g_new0(uint32_t, x->n); /* rank -> member index */
  for (uint32_t i = 0; i < k; i++) midx[mem[i]] = i;
  Tree *trs = g_new(Tree, T);
  uint64_t *tb = g_new(uint64_t, T), pmax = 0;
  for (uint32_t q = 0; q < T; q++) {
    tree_make(&trs[q], &g, midx, k, q / 2, q % 2);
    tb[q] = fab_coll__part(x, fab_coll__part(x, bytes, C, q / 2), 2, q % 2);
    pmax = MAX(pmax, fab_coll__ceil_div(tb[q], x->chunk));
  }
  /* per tree and member: the latest flow up from it and down into it (read
  ** before it is replaced, the previous piece's: the SENT chain) */
  size_t sz = (size_t)T * k;
  uint32_t *up = g_new(uint32_t, sz), *dn = g_new(uint32_t, sz);
  uint32_t deps[4];
  for (uint64_t j = 0; j < pmax && !x->over; j++)
    for (uint32_t q = 0; q < T && !x->over; q++) {
      if (j >= fab_coll__ceil_div(tb[q], x->chunk)) continue;
      const Tree *tr = &trs[q];
      uint64_t b = piece_size(tb[q], x->chunk, j);
      uint32_t *u = up + (size_t)q * k, *dw = dn + (size_t)q * k;
      for (uint32_t i = k; i-- > 1;) { /* up, children first */
        uint32_t v = tr->bfs[i], nd = 0;
        bool leaf = true;
        for (int z = 0; z < 3; z++) {
          uint32_t ch = tr->kids[(size_t)v * 3 + z];
          if (ch != UINT32_MAX) deps[nd++] = u[ch], leaf = false;
        }
        if (j > 0) deps[nd++] = u[v] | FAB_DEP_SENT;
        unsigned fl = F_REDUCE | (j == 0 ? F_FIRST : 0) | (base && j == 0 && leaf ? F_BASE : 0);
        u[v] = fab_coll__flow(x, mem[v], mem[tr->parent[v]], b, fl, row, deps, nd);
      }
      for (uint32_t i = 0; i < k; i++) { /* down, parents first */
        uint32_t v = tr->bfs[i];
        for (int z = 0; z < 3; z++) {
          uint32_t ch = tr->kids[(size_t)v * 3 + z], nd = 0;
          if (ch == UINT32_MAX) continue;
          if (v == tr->root) {
            for (int y = 0; y < 3; y++)
              if (tr->kids[(size_t)v * 3 + y] != UINT32_MAX) deps[nd++] = u[tr->kids[(size_t)v * 3 + y]];
          } else {
            deps[nd++] = dw[v];
          }
          if (j > 0) deps[nd++] = dw[ch] | FAB_DEP_SENT;
          dw[ch] = fab_coll__flow(x, mem[v], mem[ch], b, j == 0 ? F_FIRST : 0, row, deps, nd);
        }
      }
    }
  for (uint32_t q = 0; q < T; q++) tree_free(&trs[q]);
  g_free(trs);
  g_free(tb);
  g_free(up);
  g_free(dn);
  g_free(midx);
  fab_coll__groups_free(&g);
}

/* ------------------------------------------------------------------------ */
/* PAT, pairwise, send-recv, direct sends. */

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
          unsigned fl = (j == 0 ? F_FIRST : 0) | (rs ? F_REDUCE : 0) | (step == 0 && j == 0 ? F_BASE : 0);
          if (j > 0) {
            g_array_set_size(deps, 1);
            g_array_index(deps, uint32_t, 0) = sent[q] | FAB_DEP_SENT;
          }
          sent[q] = fab_coll__flow(x, i, dst[q], piece_size(b, x->chunk, j), fl, ROW_PAT, (const uint32_t *)deps->data,
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

/* One send stream per (rank, channel): the pieces of `bytes` from s to r,
** after `after` (SENT) on the same channel; returns the last piece. */
static uint32_t stream(Ex *x, uint32_t s, uint32_t r, uint64_t bytes, uint32_t after, unsigned first, int row) {
  uint32_t last = after;
  for (uint64_t j = 0, P = fab_coll__ceil_div(bytes, x->chunk); j < P && !x->over; j++) {
    uint32_t dep = last == FAB_OP_NONE ? FAB_OP_NONE : last | FAB_DEP_SENT;
    last = fab_coll__flow(x, s, r, piece_size(bytes, x->chunk, j), j == 0 ? first : 0, row, &dep, 1);
  }
  return last;
}

void fab_coll__pairwise(Ex *x, uint64_t bytes) {
  uint32_t n = x->n;
  if (n < 2 || bytes == 0) return;
  uint32_t C = fab_coll__chans(x, fab_coll__part(x, bytes, n, n - 1), 1); /* the smallest block decides */
  uint32_t *last = g_new(uint32_t, (size_t)C * n);
  memset(last, 0xff, (size_t)C * n * sizeof *last);
  for (uint32_t k = 1; k < n && !x->over; k++)
    for (uint32_t c = 0; c < C; c++)
      for (uint32_t i = 0; i < n; i++) {
        uint32_t to = (i + k) % n;
        uint64_t b = fab_coll__part(x, fab_coll__part(x, bytes, n, to), C, c);
        if (b == 0) continue;
        unsigned first = F_READY | (k == 1 ? F_LAT | F_BASE : 0);
        uint32_t l = stream(x, i, to, b, last[(size_t)c * n + i], first, ROW_RING);
        last[(size_t)c * n + i] = l;
      }
  g_free(last);
}

void fab_coll__send_recv(Ex *x, uint64_t bytes) {
  uint32_t n = x->n;
  if (n < 2 || bytes == 0) return;
  uint32_t C = fab_coll__chans(x, bytes, 1);
  for (uint32_t c = 0; c < C; c++)
    for (uint32_t i = 0; i < n; i++)
      stream(x, i, (i + 1) % n, fab_coll__part(x, bytes, C, c), FAB_OP_NONE, F_FIRST | F_BASE, ROW_RING);
}

void fab_coll__run_nvls(Ex *x) {
  uint32_t group = x->d->groups++;
  for (uint32_t i = 0; i < x->n; i++) fab_coll__nvls_op(x, i, group, x->c->bytes, ROW_NVLS);
}

void fab_coll__run_nvls_tree(Ex *x, const Groups *dom, uint32_t G, uint32_t *end) {
  uint64_t S = x->c->bytes;
  for (uint32_t m = 0; m < dom->ng; m++) {
    uint32_t group = x->d->groups++;
    for (uint32_t l = 0; l < G; l++) fab_coll__nvls_op(x, dom->mem[dom->off[m] + l], group, S, ROW_NVLS_TREE);
  }
  fab_coll__phase_end(x, FAB_MARK_JOIN, NULL);
  uint32_t D = dom->ng, *mem = g_new(uint32_t, D);
  for (uint32_t l = 0; l < G && !x->over; l++) {
    for (uint32_t m = 0; m < D; m++) mem[m] = dom->mem[dom->off[m] + l];
    fab_coll__tree(x, mem, D, fab_coll__part(x, S, G, l), false, ROW_NVLS_TREE, false);
  }
  g_free(mem);
  fab_coll__phase_end(x, FAB_MARK_JOIN, NULL);
  for (uint32_t m = 0; m < D && !x->over; m++)
    for (uint32_t l = 0; l < G; l++) {
      uint64_t shard = fab_coll__part(x, S, G, l);
      uint32_t C = fab_coll__chans(x, shard, 1), from = dom->mem[dom->off[m] + l];
      for (uint32_t q = 1; q < G; q++)
        for (uint32_t c = 0; c < C; c++) {
          uint64_t b = fab_coll__part(x, shard, C, c);
          if (b) stream(x, from, dom->mem[dom->off[m] + (l + q) % G], b, FAB_OP_NONE, F_FIRST, ROW_RING);
        }
    }
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

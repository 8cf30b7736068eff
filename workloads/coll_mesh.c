/* Ring orders over a full mesh of GPU-to-GPU links (cluster.nvlink.mesh).
** See coll_int.h. */
#include "coll_int.h"
#include <string.h>

/*
** A ring that walks its members in one order uses one link out of each GPU
** (and one into it). On an NVSwitch every order is the same; on a mesh of k
** GPUs each has k - 1 links, so a collective that gave every channel the
** same order would use one of them. RCCL spreads its channels over rings of
** different orders; fabsim gives channel c ring c mod R of R rings that
** share no directed link: the complete directed graph on k vertices splits
** into k - 1 Hamiltonian cycles for every k but 4 and 6 (Tillson, "A
** Hamiltonian decomposition of K*_2m, 2m >= 8", J. Combin. Theory B 29,
** 1980; for odd k it follows from Walecki's undirected one). A depth-first
** search finds them, in a fixed order (deterministic); for 4 and 6, or if
** its step budget runs out, it keeps the most disjoint rings it found (4
** GPUs: 2 of the 3; 6 GPUs: 4 of the 5).
*/

#define MESH_BUDGET 4000000u /* search steps; k = 6, the slowest, needs about 1 M to exhaust */

typedef struct Search {
  uint32_t k, want, nc, best_nc;
  uint64_t steps;
  bool used[FAB_MESH_RING_MAX][FAB_MESH_RING_MAX];         /* directed links taken by the rings so far */
  uint8_t cyc[FAB_MESH_RING_MAX][FAB_MESH_RING_MAX];       /* ring i; ring nc is the one being built */
  bool seen[FAB_MESH_RING_MAX][FAB_MESH_RING_MAX];         /* the vertices ring i has */
  uint8_t best[FAB_MESH_RING_MAX][FAB_MESH_RING_MAX];
} Search;

static bool next_cycle(Search *s);

/* Extend ring nc, `len` vertices so far; once whole, look for the next ring. */
static bool extend(Search *s, uint32_t len) {
  if (++s->steps > MESH_BUDGET) return false;
  uint8_t *path = s->cyc[s->nc];
  bool *seen = s->seen[s->nc];
  uint32_t u = path[len - 1];
  if (len == s->k) {
    if (s->used[u][path[0]]) return false;
    s->used[u][path[0]] = true;
    s->nc++;
    if (s->nc > s->best_nc) {
      s->best_nc = s->nc;
      memcpy(s->best, s->cyc, sizeof s->cyc);
    }
    if (s->nc == s->want || next_cycle(s)) return true;
    s->nc--;
    s->used[u][path[0]] = false;
    return false;
  }
  for (uint32_t v = 0; v < s->k; v++) {
    if (seen[v] || s->used[u][v]) continue;
    s->used[u][v] = seen[v] = true;
    path[len] = (uint8_t)v;
    if (extend(s, len + 1)) return true;
    s->used[u][v] = seen[v] = false;
    if (s->steps > MESH_BUDGET) return false;
  }
  return false;
}

/* Ring nc from vertex 0, over the links no earlier ring took. */
static bool next_cycle(Search *s) {
  memset(s->seen[s->nc], 0, sizeof s->seen[s->nc]);
  s->seen[s->nc][0] = true;
  s->cyc[s->nc][0] = 0;
  return extend(s, 1);
}

static GMutex lock;
static uint8_t *cache[FAB_MESH_RING_MAX + 1]; /* rings of k, k after k: R rings of k positions */
static uint32_t ncache[FAB_MESH_RING_MAX + 1];

uint32_t fab_coll_mesh_rings(uint32_t k, const uint8_t **rings) {
  g_assert(k >= 1 && k <= FAB_MESH_RING_MAX);
  g_mutex_lock(&lock);
  if (!cache[k]) {
    Search *s = g_new0(Search, 1);
    s->k = k;
    s->want = k > 1 ? k - 1 : 1;
    if (k <= 2) { /* one ring: 0 (-> 1) -> 0 */
      s->best_nc = 1;
      for (uint32_t i = 0; i < k; i++) s->best[0][i] = (uint8_t)i;
    } else {
      next_cycle(s);
    }
    g_assert(s->best_nc >= 1);
    uint8_t *t = g_new(uint8_t, (size_t)s->best_nc * k);
    for (uint32_t c = 0; c < s->best_nc; c++) memcpy(t + (size_t)c * k, s->best[c], k);
    ncache[k] = s->best_nc;
    g_free(s);
    cache[k] = t; /* never freed: at most FAB_MESH_RING_MAX small tables for the process's life */
  }
  *rings = cache[k];
  uint32_t n = ncache[k];
  g_mutex_unlock(&lock);
  return n;
}

/*
** Across nodes a channel's ring enters a node at one GPU (from its NIC) and
** leaves it at another, so it takes a path through the node, not a ring.
** For an even k the zigzag i, i+1, i-1, i+2, i-2, ..., i + k/2 for
** i = 0 .. k/2 - 1 splits the undirected complete graph into k/2 Hamiltonian
** paths (Walecki's construction, as in Alspach, "The wonderful Walecki
** construction", Bull. ICA 52, 2008); each walked both ways, they take
** every directed link exactly once, and their k entries (and k exits) are
** the k GPUs, so a NIC receives one channel and sends one. RCCL's MI300X
** model with 8 NICs (rome_models.cc rome_model_81) is such a set.
*/
void fab_coll_mesh_path(uint32_t k, uint32_t p, uint32_t *seq) {
  g_assert(k >= 2 && k % 2 == 0 && p < k);
  uint32_t half = k / 2, i = p % half;
  for (uint32_t t = 0; t < k; t++) {
    uint32_t step = (t + 1) / 2; /* 0, 1, 1, 2, 2, ... */
    uint32_t v = t % 2 ? (i + step) % k : (i + k - step) % k;
    if (p < half) seq[t] = v;
    else seq[k - 1 - t] = v;
  }
}

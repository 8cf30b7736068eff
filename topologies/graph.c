/* fabric.topology kind: graph, an explicit fabric: its switches, which of
** them the hosts (or GPU nodes' NIC ports) attach to, and the links between
** switches with their own rates and latencies. See graph.h. */
#include "graph.h"

#include <string.h>

const char *const fab_graph_tier_names[] = {"leaf", "spine", "core", NULL};

typedef struct SwIn {
  const char *name;
  uint32_t count;
  int tier;
} SwIn;

#define GK(NAME, TYPE, S, FIELD, ...) FAB_CFG_KEY(NAME, TYPE, S, FIELD, __VA_ARGS__)
static const FabCfgKey sw_schema[] = {
  GK("name", FAB_CFG_STRING, SwIn, name, .required = true),
  GK("count", FAB_CFG_UINT, SwIn, count, .min = 1, .max = 65000), /* absent: one switch of that name */
  GK("tier", FAB_CFG_ENUM, SwIn, tier, .def = "leaf", .choices = fab_graph_tier_names),
  FAB_CFG_END_ROW,
};

typedef struct HostIn {
  const char *sw;
  uint32_t count;
  int order;
} HostIn;

static const char *const order_names[] = {"block", "round-robin", NULL};
static const FabCfgKey host_schema[] = {
  GK("switch", FAB_CFG_STRING, HostIn, sw, .required = true),
  GK("count", FAB_CFG_UINT, HostIn, count, .required = true, .min = 1, .max = 16777216),
  GK("order", FAB_CFG_ENUM, HostIn, order, .def = "block", .choices = order_names),
  FAB_CFG_END_ROW,
};

typedef struct LinkIn {
  const char *a, *b;
  uint64_t bps;
  fab_time_t latency;
  uint32_t count;
} LinkIn;

static const FabCfgKey link_schema[] = {
  GK("a", FAB_CFG_STRING, LinkIn, a, .required = true),
  GK("b", FAB_CFG_STRING, LinkIn, b, .required = true),
  GK("bandwidth", FAB_CFG_RATE, LinkIn, bps, .min = 1),
  GK("latency", FAB_CFG_TIME, LinkIn, latency, .max = 1e15),
  GK("count", FAB_CFG_UINT, LinkIn, count, .def = "1", .min = 1, .max = 1024),
  FAB_CFG_END_ROW,
};

/* The switches a name stands for (a group's, or one): [*first, *first + n); 0: none. */
static uint32_t lookup(GHashTable *names, const char *name, uint32_t *first) {
  gpointer v = g_hash_table_lookup(names, name);
  if (!v) return 0;
  uint64_t x = GPOINTER_TO_SIZE(v);
  *first = (uint32_t)(x >> 32);
  return (uint32_t)(x & 0xffffffffu);
}

static void name_range(GHashTable *names, const char *name, uint32_t first, uint32_t n) {
  g_hash_table_insert(names, g_strdup(name), GSIZE_TO_POINTER(((uint64_t)first << 32) | n));
}

static gboolean seq_of(const FabCfgNode *topo, const char *key, bool required, const FabCfgNode **out, GError **err) {
  *out = fab_cfg_get(topo, key);
  if (!*out && required) return fab_cfg_fail(topo, err, "kind: graph needs %s (a list)", key);
  if (*out && (fab_cfg_kind(*out) != FAB_CFG_NODE_SEQ || !fab_cfg_len(*out)))
    return fab_cfg_fail(*out, err, "expected a non-empty list");
  return TRUE;
}

/* Whether `s` is `prefix` then digits, then (dotted) '.' and digits. */
static bool numbered(const char *s, const char *prefix, bool dotted) {
  size_t n = strlen(prefix);
  if (strncmp(s, prefix, n)) return false;
  s += n;
  if (!g_ascii_isdigit(*s)) return false;
  while (g_ascii_isdigit(*s)) s++;
  if (!dotted) return !*s;
  if (*s++ != '.' || !g_ascii_isdigit(*s)) return false;
  while (g_ascii_isdigit(*s)) s++;
  return !*s;
}

/* Whether a switch named `s` would share its name with one of the fabric's
** own elements (a host's NIC, a GPU, an NVSwitch, a PCIe or xGMI element),
** so that a failure or a report naming it would mean two things. */
static bool reserved(const char *s) {
  return numbered(s, "host", false) || numbered(s, "gpu", false) || numbered(s, "nvs", false) ||
         numbered(s, "pcie", true) || numbered(s, "xgmi", true);
}

static gboolean read_switches(const FabCfgNode *list, FabGraph *g, GHashTable *names, GError **err) {
  GArray *sw = g_array_new(FALSE, TRUE, sizeof(FabGraphSwitch));
  for (size_t i = 0; i < fab_cfg_len(list); i++) {
    const FabCfgNode *it = fab_cfg_at(list, i);
    SwIn in = {0};
    if (fab_cfg_kind(it) == FAB_CFG_NODE_SCALAR) { /* a name alone */
      in.name = fab_cfg_scalar(it);
    } else if (!fab_cfg_apply(it, NULL, sw_schema, &in, err)) {
      g_array_free(sw, TRUE);
      return FALSE;
    }
    uint32_t first, n = in.count ? in.count : 1;
    const FabCfgNode *at = fab_cfg_kind(it) == FAB_CFG_NODE_MAP ? fab_cfg_get(it, "name") : it;
    if (!in.name[0] || strlen(in.name) + 6 >= FAB_NAME_LEN || strchr(in.name, '-'))
      return g_array_free(sw, TRUE), fab_cfg_fail(at, err, "a switch name of 1 to %d characters without '-' (links "
                                                    "are named A-B)", FAB_NAME_LEN - 7);
    if (lookup(names, in.name, &first))
      return g_array_free(sw, TRUE), fab_cfg_fail(at, err, "switch '%s' is named twice", in.name);
    name_range(names, in.name, sw->len, n);
    for (uint32_t k = 0; k < n; k++) {
      FabGraphSwitch s = {.tier = in.tier};
      if (in.count) g_snprintf(s.name, sizeof s.name, "%s%u", in.name, k);
      else g_strlcpy(s.name, in.name, sizeof s.name);
      if (in.count && lookup(names, s.name, &first))
        return g_array_free(sw, TRUE), fab_cfg_fail(at, err, "switch '%s' is named twice", s.name);
      if (reserved(s.name))
        return g_array_free(sw, TRUE),
               fab_cfg_fail(at, err, "switch '%s' would have the name of one of the fabric's own elements (host<N>, "
                            "gpu<N>, nvs<N>, pcie<N>.<M> and xgmi<N>.<M> name hosts, GPUs, NVSwitches and PCIe and "
                            "xGMI elements): choose another", s.name);
      if (in.count) name_range(names, s.name, sw->len, 1);
      g_array_append_val(sw, s);
      if (sw->len > 65000) return g_array_free(sw, TRUE), fab_cfg_fail(at, err, "more than 65000 switches");
    }
  }
  g->nsw = sw->len;
  g->sw = (FabGraphSwitch *)(void *)g_array_free(sw, FALSE);
  return TRUE;
}

static gboolean read_hosts(const FabCfgNode *list, FabGraph *g, GHashTable *names, GError **err) {
  GArray *at = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  for (size_t i = 0; i < fab_cfg_len(list); i++) {
    const FabCfgNode *it = fab_cfg_at(list, i);
    HostIn in = {0};
    uint32_t first, n;
    if (!fab_cfg_apply(it, NULL, host_schema, &in, err)) return g_array_free(at, TRUE), FALSE;
    if (!(n = lookup(names, in.sw, &first)))
      return g_array_free(at, TRUE), fab_cfg_fail(fab_cfg_get(it, "switch"), err, "no switch or group '%s' in "
                                                  "fabric.topology.switches", in.sw);
    if ((uint64_t)at->len + (uint64_t)in.count * n > 16777216)
      return g_array_free(at, TRUE), fab_cfg_fail(it, err, "more than 16777216 hosts");
    for (uint64_t k = 0; k < (uint64_t)in.count * n; k++) { /* block: count on each switch in turn */
      uint32_t s = first + (uint32_t)(in.order ? k % n : k / in.count);
      g_array_append_val(at, s);
      g->sw[s].nports++;
    }
  }
  g->nattach = at->len;
  g->attach_sw = (uint32_t *)(void *)g_array_free(at, FALSE);
  return TRUE;
}

static gboolean read_links(const FabCfgNode *list, FabGraph *g, GHashTable *names, GError **err) {
  GArray *ln = g_array_new(FALSE, FALSE, sizeof(FabGraphLink));
  for (size_t i = 0; list && i < fab_cfg_len(list); i++) {
    const FabCfgNode *it = fab_cfg_at(list, i);
    LinkIn in = {0};
    uint32_t fa, fb, na, nb;
    if (!fab_cfg_apply(it, NULL, link_schema, &in, err)) return g_array_free(ln, TRUE), FALSE;
    if (!(na = lookup(names, in.a, &fa)) || !(nb = lookup(names, in.b, &fb)))
      return g_array_free(ln, TRUE), fab_cfg_fail(fab_cfg_get(it, na ? "b" : "a"), err, "no switch or group '%s' in "
                                                  "fabric.topology.switches", na ? in.b : in.a);
    if (fa < fb + nb && fb < fa + na)
      return g_array_free(ln, TRUE), fab_cfg_fail(fab_cfg_get(it, "b"), err, "'%s' and '%s' share a switch: a "
                                                  "switch is not linked to itself", in.a, in.b);
    const bool lat = fab_cfg_get(it, "latency") != NULL; /* else fabric.link's, known once the cluster is read */
    if (lat) g->max_latency = MAX(g->max_latency, in.latency);
    else g->default_latency = true;
    g->max_bps = MAX(g->max_bps, in.bps);
    /* a to b: every switch of a with every switch of b, count links each, in a's order then b's */
    for (uint32_t x = 0; x < na; x++)
      for (uint32_t y = 0; y < nb; y++)
        for (uint32_t c = 0; c < in.count; c++) {
          FabGraphLink l = {fa + x, fb + y, in.bps, in.latency, lat};
          g_array_append_val(ln, l);
          g->sw[fa + x].nports++;
          g->sw[fb + y].nports++;
          if (g->sw[fa + x].nports > 65000 || g->sw[fb + y].nports > 65000 || ln->len > (1u << 26))
            return g_array_free(ln, TRUE), fab_cfg_fail(it, err, "a switch has at most 65000 ports");
        }
  }
  g->nlinks = ln->len;
  g->links = (FabGraphLink *)(void *)g_array_free(ln, FALSE);
  return TRUE;
}

/* Hops between switches, breadth first from s over the links, into dist (UINT32_MAX: not reached). */
static void hops_from(const FabGraph *g, uint32_t s, const uint32_t *adj0, const uint32_t *adj, uint32_t *dist,
                      uint32_t *queue) {
  for (uint32_t i = 0; i < g->nsw; i++) dist[i] = UINT32_MAX;
  uint32_t head = 0, tail = 0;
  dist[s] = 0;
  queue[tail++] = s;
  while (head < tail) {
    uint32_t u = queue[head++];
    for (uint32_t k = adj0[u]; k < adj0[u + 1]; k++)
      if (dist[adj[k]] == UINT32_MAX) {
        dist[adj[k]] = dist[u] + 1;
        queue[tail++] = adj[k];
      }
  }
}

/* Every switch with hosts reaches every other; the longest such path in hops. */
static gboolean check_connected(FabGraph *g, const FabCfgNode *topo, GError **err) {
  uint32_t *deg = g_new0(uint32_t, g->nsw + 1), *adj = g_new(uint32_t, 2 * (size_t)g->nlinks + 1);
  for (uint32_t i = 0; i < g->nlinks; i++) deg[g->links[i].a + 1]++, deg[g->links[i].b + 1]++;
  for (uint32_t s = 0; s < g->nsw; s++) deg[s + 1] += deg[s];
  uint32_t *fill = g_memdup2(deg, sizeof(uint32_t) * g->nsw);
  for (uint32_t i = 0; i < g->nlinks; i++) adj[fill[g->links[i].a]++] = g->links[i].b, adj[fill[g->links[i].b]++] = g->links[i].a;
  uint8_t *has = g_new0(uint8_t, g->nsw);
  for (uint32_t a = 0; a < g->nattach; a++) has[g->attach_sw[a]] = 1;
  uint32_t *dist = g_new(uint32_t, g->nsw), *queue = g_new(uint32_t, g->nsw), far = UINT32_MAX;
  gboolean ok = TRUE;
  g->diameter = 0;
  for (uint32_t s = 0; ok && s < g->nsw; s++) {
    if (!has[s]) continue;
    hops_from(g, s, deg, adj, dist, queue);
    for (uint32_t t = 0; t < g->nsw && ok; t++) {
      if (!has[t]) continue;
      if (dist[t] == UINT32_MAX) {
        far = t;
        ok = fab_cfg_fail(fab_cfg_get(topo, "links") ? fab_cfg_get(topo, "links") : topo, err, "no path from "
                          "switch %s to switch %s: hosts on both could not reach each other", g->sw[s].name,
                          g->sw[far].name);
      } else {
        g->diameter = MAX(g->diameter, dist[t]);
      }
    }
  }
  g_free(deg), g_free(adj), g_free(fill), g_free(has), g_free(dist), g_free(queue);
  return ok;
}

gboolean fab_graph_read(const FabCfgNode *topo, FabGraph *g, GError **err) {
  *g = (FabGraph){0};
  const FabCfgNode *sw, *hosts, *links;
  if (!seq_of(topo, "switches", true, &sw, err) || !seq_of(topo, "hosts", true, &hosts, err) ||
      !seq_of(topo, "links", false, &links, err))
    return FALSE;
  GHashTable *names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  gboolean ok = read_switches(sw, g, names, err) && read_hosts(hosts, g, names, err) &&
                read_links(links, g, names, err) && check_connected(g, topo, err);
  g_hash_table_destroy(names);
  for (uint32_t s = 0; ok && s < g->nsw; s++) g->max_ports = MAX(g->max_ports, g->sw[s].nports);
  if (!ok) fab_graph_clear(g);
  return ok;
}

void fab_graph_clear(FabGraph *g) {
  g_free(g->sw);
  g_free(g->attach_sw);
  g_free(g->links);
  *g = (FabGraph){0};
}

void fab_graph_rail3(FabGraph *g, uint32_t pods, uint32_t pod_nodes, uint32_t rails, uint32_t spines, uint32_t cores) {
  const uint32_t per = rails + spines; /* a pod's switches */
  *g = (FabGraph){.nsw = pods * per + cores, .nattach = pods * pod_nodes * rails};
  g->nlinks = pods * rails * spines + pods * spines * cores;
  g->sw = g_new0(FabGraphSwitch, g->nsw);
  g->attach_sw = g_new(uint32_t, g->nattach);
  g->links = g_new0(FabGraphLink, g->nlinks);
  for (uint32_t p = 0; p < pods; p++) {
    for (uint32_t r = 0; r < rails; r++) {
      FabGraphSwitch *s = &g->sw[p * per + r];
      g_snprintf(s->name, sizeof s->name, "p%u.rail%u", p, r);
      s->nports = pod_nodes + spines;
    }
    for (uint32_t j = 0; j < spines; j++) {
      FabGraphSwitch *s = &g->sw[p * per + rails + j];
      g_snprintf(s->name, sizeof s->name, "p%u.spine%u", p, j);
      s->tier = 1, s->nports = rails + cores;
    }
  }
  for (uint32_t c = 0; c < cores; c++) {
    FabGraphSwitch *s = &g->sw[pods * per + c];
    g_snprintf(s->name, sizeof s->name, "core%u", c);
    s->tier = 2, s->nports = pods * spines;
  }
  for (uint32_t a = 0; a < g->nattach; a++) g->attach_sw[a] = a / rails / pod_nodes * per + a % rails;
  uint32_t k = 0;
  for (uint32_t p = 0; p < pods; p++)
    for (uint32_t r = 0; r < rails; r++)
      for (uint32_t j = 0; j < spines; j++) g->links[k++] = (FabGraphLink){p * per + r, p * per + rails + j};
  for (uint32_t p = 0; p < pods; p++)
    for (uint32_t j = 0; j < spines; j++)
      for (uint32_t c = 0; c < cores; c++) g->links[k++] = (FabGraphLink){p * per + rails + j, pods * per + c};
  g_assert(k == g->nlinks);
  g->diameter = pods > 1 ? 4 : 2;
  for (uint32_t s = 0; s < g->nsw; s++) g->max_ports = MAX(g->max_ports, g->sw[s].nports);
}

void fab_graph_dual_tor(FabGraph *g, uint32_t leaves, uint32_t hpl, uint32_t spines, uint32_t planes) {
  uint32_t sp = spines / planes; /* a leaf's spines: its plane's */
  *g = (FabGraph){.nsw = leaves + spines, .nattach = leaves * hpl, .nlinks = leaves * sp};
  g->sw = g_new0(FabGraphSwitch, g->nsw);
  g->attach_sw = g_new(uint32_t, g->nattach);
  g->links = g_new0(FabGraphLink, g->nlinks);
  for (uint32_t l = 0; l < leaves; l++) {
    g_snprintf(g->sw[l].name, sizeof g->sw[l].name, "leaf%u", l);
    g->sw[l].nports = hpl + sp;
  }
  for (uint32_t j = 0; j < spines; j++) {
    g_snprintf(g->sw[leaves + j].name, sizeof g->sw[leaves + j].name, "spine%u", j);
    g->sw[leaves + j].tier = 1, g->sw[leaves + j].nports = leaves / planes;
  }
  for (uint32_t a = 0; a < g->nattach; a++) g->attach_sw[a] = a / (2 * hpl) * 2 + a % 2;
  for (uint32_t l = 0, k = 0; l < leaves; l++)
    for (uint32_t j = 0; j < sp; j++) g->links[k++] = (FabGraphLink){l, leaves + (planes > 1 ? l % 2 : 0) * sp + j};
  g->diameter = leaves > 1 ? 2 : 0;
  g->max_ports = MAX(hpl + sp, leaves / planes);
}

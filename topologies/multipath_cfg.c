/* The multipath choices of a scenario: how switches route (fabric.switch.
** routing and its parameters, routing_per_tier) and how NICs deliver and
** spray (cluster.nic.reliability, dup_threshold, spray, paths). See
** fabric_cfg_int.h. */
#include "fabric_cfg_int.h"
#include <string.h>

const char *const fab_adaptive_picks[] = {"least-loaded", "two-choices", NULL};
const char *const fab_flowlet_picks[] = {"least-loaded", "random", NULL};
const char *const fab_reliabilities[] = {"go-back-n", "selective", NULL};

/* A choice to tell the user about (not a setting without effect). */
static void warn_at(Read *r, const FabCfgNode *at, const char *why) {
  if (r->warnings)
    g_ptr_array_add(r->warnings, g_strdup_printf("%s: %s: %s", fab_cfg_where(at), fab_cfg_path(at), why));
}

/* Transport srd (models/srd.h): its delivery, spraying over 64 values (the
** "up to 64 parallel paths" AWS has described for SRD, as reported in
** www.ernestchiang.com/en/notes/general/aws-srd-scalable-reliable-datagram;
** a secondary source), EFA's ~8 KiB packets (libfabric man/fi_efa.7.md:
** "approximately 8KiB" maximum message size of the device) and its header. */
static void read_srd(Read *r) {
  FabNicCfg *nic = &r->f.nic;
  static const char *const own[] = {"reliability", "dup_threshold", "ack_interval", NULL};
  static const char *const why[] = {"srd delivers out of order with its own loss detection (models/srd.h)",
                                    "srd finds losses per path, not by a threshold",
                                    "srd ACKs every packet"};
  bool srd = nic->transport.kind == FAB_TRANSPORT_SRD;
  nic->srd = srd;
  nic->srd_ordered &= srd;
  if (!srd) {
    static const char *const srd_keys[] = {"rto_min", "srd_header", "message_order", NULL}; /* avoid_delay: below */
    for (int i = 0; srd_keys[i]; i++)
      if (fab_cfg_get(r->nic, srd_keys[i]))
        no_effect(r, fab_cfg_get(r->nic, srd_keys[i]), "for fabric.transport srd (this fabric's is %s)",
                  fab_transport_names[nic->transport.kind]);
    return;
  }
  for (int i = 0; own[i]; i++)
    if (fab_cfg_get(r->nic, own[i])) no_effect(r, fab_cfg_get(r->nic, own[i]), "%s", why[i]);
  r->reliability = 1;
  nic->transport.data_overhead += r->srd_header;
  nic->transport.ack_bytes += r->srd_header;
  if (!fab_cfg_get(r->nic, "spray")) r->spray = FAB_SPRAY_AVOID;
  if (!fab_cfg_get(r->nic, "paths")) nic->paths = 64;
  if (!fab_cfg_get(r->link, "mtu")) nic->mtu = 8192;
}

gboolean fab_fabric_read_transport(Read *r, GError **err) {
  FabNicCfg *nic = &r->f.nic;
  bool ib = nic->transport.kind == FAB_TRANSPORT_INFINIBAND;
  read_srd(r);
  /* InfiniBand: adaptive routing by default, as NCCL assumes on IB (NCCL_IB_ADAPTIVE_ROUTING, 1 on IB, 0 on
  ** RoCE: docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html), with the out-of-order placement it
  ** needs (ConnectX-5 and later); RoCE: ECMP and go-back-N */
  if (ib && !fab_cfg_get(r->nic, "reliability")) r->reliability = 1;
  if (ib && !fab_cfg_get(r->sw, "routing")) r->f.routing = FAB_ROUTE_ADAPTIVE;
  nic->selective = r->reliability == 1;
  nic->ar_imm = ib; /* NCCL_IB_ADAPTIVE_ROUTING's verbs: on IB by default, off on RoCE (as above) */
  const FabCfgNode *dup = fab_cfg_get(r->nic, "dup_threshold"), *paths = fab_cfg_get(r->nic, "paths");
  if (dup && !nic->selective && !nic->srd)
    no_effect(r, dup, "cluster.nic.reliability is go-back-n: any gap is resent whole (a NAK, or a timeout)");
  nic->spray = (uint8_t)r->spray;
  if (nic->paths & (nic->paths - 1))
    return fab_cfg_fail(paths, err, "%u entropy values: expected a power of two (values taken in an order drawn "
                        "by xor), such as %u", nic->paths, 1u << (31 - __builtin_clz(nic->paths)));
  if (paths && !nic->spray) no_effect(r, paths, "cluster.nic.spray is none: a flow keeps one source port");
  const FabCfgNode *avoid_delay = fab_cfg_get(r->nic, "avoid_delay");
  if (avoid_delay && !nic->srd && (nic->spray != FAB_SPRAY_AVOID || !nic->selective))
    no_effect(r, avoid_delay, "delay steers spraying under srd, or under spray: avoid with selective receivers");
  nic->avoid_rtt = avoid_delay && !nic->srd && nic->spray == FAB_SPRAY_AVOID && nic->selective;
  if (nic->spray && !nic->selective)
    warn_at(r, fab_cfg_get(r->nic, "spray"), "go-back-n receivers take a packet that overtakes another for a loss "
            "and have the sender go back: spraying collapses (set cluster.nic.reliability: selective)");
  return TRUE;
}

/* ---- routing ------------------------------------------------------------------ */

/* fabric.switch.routing and its parameters into the switch config: the
** parameters of another routing are warned about, a flowlet table must be a
** power of two. */
/* The switch tiers of each topology kind (FabTopoKind order): the prefixes
** of their switches' names (build.c). */
static const char *const tiers_of[][FAB_TOPO_MAX_TIERS + 1] = {
  [FAB_TOPO_SINGLE_SWITCH] = {"switch", NULL}, [FAB_TOPO_LEAF_SPINE] = {"leaf", "spine", NULL},
  [FAB_TOPO_FAT_TREE] = {"edge", "agg", "core", NULL}, [FAB_TOPO_RING] = {"ring", NULL},
  [FAB_TOPO_RAIL] = {"rail", "spine", "core", NULL}, [FAB_TOPO_MULTI_RAIL] = {"leaf", "spine", NULL},
  [FAB_TOPO_RAIL_ONLY] = {"rail", NULL}, [FAB_TOPO_GRAPH] = {"leaf", "spine", "core", NULL}, /* graph.h's tiers */
};
_Static_assert(sizeof tiers_of / sizeof tiers_of[0] == FAB_TOPO_GRAPH + 1, "a tier list per topology kind");

/* fabric.switch.routing_per_tier: {TIER: ROUTING, ...} into the fabric
** config; `used` gets bit r for each routing r some switch uses. */
static gboolean read_tiers(Read *r, uint32_t *used, GError **err) {
  const FabCfgNode *m = r->per_tier;
  const char *const *tiers = tiers_of[r->f.topo.kind];
  for (size_t i = 0; m && i < fab_cfg_len(m); i++) {
    const char *key = fab_cfg_key_at(m, i), *v = fab_cfg_scalar(fab_cfg_at(m, i));
    const FabCfgNode *at = fab_cfg_at(m, i);
    uint32_t t = 0, k = 0;
    while (tiers[t] && strcmp(tiers[t], key)) t++;
    if (!tiers[t]) {
      char *list = g_strjoinv(", ", (char **)tiers);
      gboolean ok = fab_cfg_fail(at, err, "no tier '%s' in a %s fabric: its switch tiers are %s", key,
                                 fab_topo_kind_names[r->f.topo.kind], list);
      g_free(list);
      return ok;
    }
    while (v && fab_routing_names[k] && strcmp(fab_routing_names[k], v)) k++;
    if (!v || !fab_routing_names[k]) {
      char *list = g_strjoinv(", ", (char **)fab_routing_names);
      gboolean ok = fab_cfg_fail(at, err, "expected a routing (%s)", list);
      g_free(list);
      return ok;
    }
    r->f.tier_name[r->f.ntiers] = tiers[t];
    r->f.tier_routing[r->f.ntiers++] = k;
  }
  uint32_t all = 0; /* the tiers that keep the fabric-wide routing */
  for (uint32_t t = 0; tiers[t]; t++) {
    bool own = false;
    for (uint32_t k = 0; k < r->f.ntiers; k++) own |= r->f.tier_name[k] == tiers[t];
    if (!own) all++;
  }
  *used = all ? 1u << r->f.routing : 0;
  r->f.routing_kept = all > 0;
  if (!all && fab_cfg_get(r->sw, "routing"))
    no_effect(r, fab_cfg_get(r->sw, "routing"), "fabric.switch.routing_per_tier names every tier");
  for (uint32_t k = 0; k < r->f.ntiers; k++) *used |= 1u << r->f.tier_routing[k];
  return TRUE;
}

gboolean fab_fabric_read_routing(Read *r, uint32_t mtu_wire, GError **err) {
  FabSwitchCfg *sw = &r->f.sw;
  uint32_t used = 0;
  if (!read_tiers(r, &used, err)) return FALSE;
  sw->routing = r->f.routing;
  sw->ar_choices = r->ar_pick == 1 ? 2 : 0;
  sw->flowlet_random = r->flowlet_pick == 1;
  if (!sw->ar_quantum) sw->ar_quantum = mtu_wire; /* one full packet (or train) on the wire per level */
  static const char *const ar_keys[] = {"adaptive_threshold", "adaptive_pick", "adaptive_quantum", NULL};
  static const char *const fl_keys[] = {"flowlet_gap", "flowlet_pick", "flowlet_table", NULL};
  const char *name = r->f.ntiers ? "not flowlet on any tier" : fab_routing_names[sw->routing];
  const uint32_t compare = 1u << FAB_ROUTE_ADAPTIVE | (r->flowlet_pick == 1 ? 0 : 1u << FAB_ROUTE_FLOWLET);
  for (const char *const *k = ar_keys; *k; k++) {
    const FabCfgNode *n = fab_cfg_get(r->sw, *k);
    if (!n) continue;
    if (used == 1u << FAB_ROUTE_ECMP)
      no_effect(r, n, "fabric.switch.routing is ecmp: every packet takes its flow's hash");
    else if (*k != ar_keys[0] && !(used & compare))
      no_effect(r, n, "%s", used & 1u << FAB_ROUTE_FLOWLET ? "fabric.switch.flowlet_pick is random: no member is "
                                                             "compared" : "no switch compares members");
  }
  for (const char *const *k = fl_keys; *k; k++) {
    const FabCfgNode *n = fab_cfg_get(r->sw, *k);
    if (n && !(used & 1u << FAB_ROUTE_FLOWLET))
      no_effect(r, n, r->f.ntiers ? "fabric.switch.routing is %s" : "fabric.switch.routing is %s, not flowlet", name);
  }
  if (sw->flowlet_table & (sw->flowlet_table - 1))
    return fab_cfg_fail(fab_cfg_get(r->sw, "flowlet_table"), err, "%u entries: expected a power of two (a table "
                        "indexed by hash bits), such as %u", sw->flowlet_table,
                        1u << (31 - __builtin_clz(sw->flowlet_table)));
  return TRUE;
}

/* ---- link failures ------------------------------------------------------------ */

typedef struct ChangeIn {
  const char *link;
  fab_time_t at, latency;
  uint64_t bps;
  bool down;
} ChangeIn;

static const FabCfgKey change_schema[] = {
  FAB_CFG_KEY("link", FAB_CFG_STRING, ChangeIn, link, .required = true),
  FAB_CFG_KEY("at", FAB_CFG_TIME, ChangeIn, at, .def = "0ns", .max = 1e18),
  FAB_CFG_KEY("down", FAB_CFG_BOOL, ChangeIn, down),
  FAB_CFG_KEY("bandwidth", FAB_CFG_RATE, ChangeIn, bps),
  FAB_CFG_KEY("latency", FAB_CFG_TIME, ChangeIn, latency, .max = 1e15),
  FAB_CFG_END_ROW,
};

static int by_time(const void *a, const void *b) {
  const FabLinkChange *x = a, *y = b;
  if (x->at != y->at) return x->at < y->at ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order; /* as given */
}

gboolean fab_fabric_read_failures(Read *r, GError **err) {
  const FabCfgNode *seq = r->failures;
  size_t n = seq ? fab_cfg_len(seq) : 0;
  if (n > FAB_MAX_LINK_CHANGES)
    return fab_cfg_fail(seq, err, "%zu link changes: at most %d", n, FAB_MAX_LINK_CHANGES);
  for (size_t i = 0; i < n; i++) {
    const FabCfgNode *item = fab_cfg_at(seq, i), *link;
    ChangeIn in = {0};
    if (!fab_cfg_apply(item, NULL, change_schema, &in, err)) return FALSE;
    link = fab_cfg_get(item, "link");
    const char *dash = in.link ? strchr(in.link, '-') : NULL;
    if (!dash || dash == in.link || !dash[1] || strchr(dash + 1, '-'))
      return fab_cfg_fail(link, err, "'%s': expected two elements joined by '-', as in leaf3-spine2",
                          in.link ? in.link : "~");
    bool state = fab_cfg_get(item, "down") != NULL, rate = fab_cfg_get(item, "bandwidth") != NULL,
         lat = fab_cfg_get(item, "latency") != NULL;
    if (!state && !rate && !lat)
      return fab_cfg_fail(item, err, "nothing changes: give down (true or false), bandwidth or latency");
    if (state && (rate || lat))
      return fab_cfg_fail(fab_cfg_get(item, rate ? "bandwidth" : "latency"), err, "one entry takes a link down or "
                          "up, or changes its rate or latency: give them as two entries");
    if (lat && in.at)
      return fab_cfg_fail(fab_cfg_get(item, "latency"), err, "a link's latency changes only from the start (at: 0): "
                          "packets on its wire would overtake each other");
    if (rate && !in.bps) return fab_cfg_fail(fab_cfg_get(item, "bandwidth"), err, "a rate of 0: use down: true");
    FabLinkChange *c = &r->f.changes[i];
    *c = (FabLinkChange){.order = (uint32_t)i, .at = in.at, .down = state ? in.down : -1, .bps = in.bps,
                         .latency = in.latency, .set_latency = lat, .node = item};
    size_t la = (size_t)(dash - in.link);
    if (la >= FAB_NAME_LEN || strlen(dash + 1) >= FAB_NAME_LEN)
      return fab_cfg_fail(link, err, "'%s': an element's name is at most %d characters", in.link, FAB_NAME_LEN - 1);
    memcpy(c->a, in.link, la);
    g_strlcpy(c->b, dash + 1, sizeof c->b);
    if (!strcmp(c->a, c->b)) return fab_cfg_fail(link, err, "'%s': a link joins two different elements", in.link);
  }
  r->f.nchanges = (uint32_t)n;
  if (!n && fab_cfg_get(r->fabric, "failure_baseline"))
    no_effect(r, fab_cfg_get(r->fabric, "failure_baseline"), "fabric.failures is empty: there is nothing to compare "
              "with");
  qsort(r->f.changes, n, sizeof *r->f.changes, by_time);
  bool moves = false; /* some link goes down or up: routes change */
  for (size_t i = 0; i < n; i++) moves |= r->f.changes[i].down >= 0;
  if (!moves && fab_cfg_get(r->fabric, "reroute_delay"))
    no_effect(r, fab_cfg_get(r->fabric, "reroute_delay"), "no link in fabric.failures goes down or up: no route "
              "changes");
  return TRUE;
}

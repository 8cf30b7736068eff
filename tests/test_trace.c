/* Traces as workloads (workloads/trace*.c): the text format and Chakra
** execution traces, their times against what is worked out on paper, the
** rescaling rule, and every way a trace can be malformed. */
#include <criterion/criterion.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include "testscen.h"
#include "workloads/trace.h"
#if FAB_HAVE_PROTOBUF_C
#include "chakra_et.pb-c.h"
#endif

#define US 1000000ull /* ps */

/* Two hosts on one switch: 100 Gb/s (80 ps a byte), 1 us links, 500 ns switch. */
#define TWO_HOSTS                                                   \
  "cluster: {nodes: %u}\n"                                          \
  "fabric:\n"                                                       \
  "  topology: {kind: single-switch}\n"                             \
  "  link: {bandwidth: 100Gbps, latency: 1us, mtu: 4096}\n"         \
  "  switch: {latency: 500ns}\n"

static char *tmpdir;

static void setup(void) { tmpdir = g_dir_make_tmp("fabsim-trace-XXXXXX", NULL); }
static void teardown(void) {
  testscen_rm_dir(tmpdir);
  g_free(tmpdir);
}

static char *put(const char *name, const void *data, size_t len) {
  char *p = g_build_filename(tmpdir, name, NULL);
  cr_assert(g_file_set_contents(p, data, (gssize)len, NULL));
  return p;
}

/* A scenario of n hosts whose workload is `wl` (a YAML map's inside). */
static char *scen(uint32_t n, const char *wl) {
  char *head = g_strdup_printf(TWO_HOSTS, n);
  char *s = g_strdup_printf("%sworkload: {%s}\n", head, wl);
  g_free(head);
  return s;
}

static FabScenario *load_text(uint32_t n, const char *trace, const char *more) {
  char *p = put("t.txt", trace, strlen(trace));
  char *wl = g_strdup_printf("kind: text, file: '%s'%s", p, more ? more : "");
  char *y = scen(n, wl);
  FabScenario *sc = testscen_load(y, NULL);
  g_free(y);
  g_free(wl);
  g_free(p);
  return sc;
}

static const FabCollRec *coll(const FabResults *r, const char *op) {
  for (size_t i = 0; i < r->n_colls; i++)
    if (g_str_equal(r->colls[i].op, op)) return &r->colls[i];
  cr_assert_fail("no %s in the results", op);
  return NULL;
}

TestSuite(trace, .init = setup, .fini = teardown);

/* One 1000-byte send after 10 us of compute, 5 us of compute after it at
** the receiver. The send is one packet of 1000 + 82 B (RoCEv2 framing,
** models/transport.h) serialised twice (host, switch) at 80 ps a byte, two
** 1 us links and the switch's 500 ns: 2,673,120 ps. */
Test(trace, text_send_on_paper) {
  FabScenario *sc = load_text(2, "1 0 compute 10us - -\n"
                                 "2 0 send 1000 1 1\n"
                                 "1 1 recv 1000 0 -\n"
                                 "2 1 compute 5us - 1 name=tail\n", NULL);
  FabResults r = {0};
  testscen_run(sc, &r);
  fab_time_t flow = 2 * 1082 * 80 + 2 * US + 500000;
  cr_assert_eq(r.sim_time, 10 * US + flow + 5 * US, "%" G_GUINT64_FORMAT, r.sim_time);
  const FabCollRec *c = coll(&r, "send-recv");
  cr_assert_eq(c->start, 10 * US);
  cr_assert_eq(c->end, 10 * US + flow);
  bool tail = false; /* the timeline row of rank 1's last compute points back to node 2 */
  for (size_t i = 0; i < r.n_spans; i++) {
    const FabSpanRec *s = &r.spans[i];
    if (s->rank == 1 && s->kind == 0 && s->node == 2) {
      cr_assert_eq(s->start, 10 * US + flow);
      cr_assert_eq(s->end, 15 * US + flow);
      tail = true;
    }
    if (s->kind == 2) cr_assert_eq(s->node, 2); /* the send's row: rank 0's node 2 */
  }
  cr_assert(tail);
  testscen_done(sc, &r);
}

/* A collective in a trace is the collective a `collective` job makes,
** entered when the ranks' compute is done: the same pieces, 10 us later
** (rank 2 computes 4 us only, and waits for the others). */
Test(trace, text_collective_as_the_collective_job) {
  FabScenario *sc = load_text(4, "group all4 0-3\n"
                                 "1 0 compute 10us - -\n2 0 allreduce 1MiB all4 1\n"
                                 "1 1 compute 10us - -\n2 1 allreduce 1MiB all4 1\n"
                                 "1 2 compute 4us - -\n2 2 allreduce 1MiB all4 1\n"
                                 "1 3 compute 10us - -\n2 3 allreduce 1MiB all4 1\n", NULL);
  FabResults r = {0}, j = {0};
  testscen_run(sc, &r);
  char *y = scen(4, "kind: collective, op: allreduce, size: 1MiB, dtype: bf16, start: 10us");
  FabScenario *cj = testscen_load(y, NULL);
  testscen_run(cj, &j);
  const FabCollRec *a = coll(&r, "allreduce"), *b = coll(&j, "allreduce");
  cr_assert_eq(a->start, 4 * US); /* the first rank in */
  cr_assert_eq(b->start, 10 * US);
  cr_assert_eq(a->end, b->end, "%" G_GUINT64_FORMAT " vs %" G_GUINT64_FORMAT, a->end, b->end);
  cr_assert_str_eq(a->algorithm, b->algorithm);
  cr_assert_str_eq(a->protocol, b->protocol);
  cr_assert_eq(a->channels, b->channels);
  cr_assert_str_eq(a->tag, "all4");
  cr_assert_eq(r.sim_time, j.sim_time);
  g_free(y);
  testscen_done(cj, &j);
  testscen_done(sc, &r);
}

/* Compute timed by FLOPs at the GPU's peak x efficiency: 1e9 FLOP at
** 1e15 x 0.5 FLOP/s is 2 us. */
Test(trace, text_flops_at_the_gpu) {
  const char *t = "1 0 compute 1e9flop - -\n2 0 send 64KiB 1 1\n1 1 recv 64KiB 0 -\n";
  char *p = put("t.txt", t, strlen(t));
  char *y = g_strdup_printf("cluster: {node: dgx-h100, nodes: 1, gpu: {peak: 1e15, efficiency: 0.5}}\n"
                            "fabric: {topology: {kind: single-switch}}\n"
                            "workload: {kind: text, file: '%s', ranks: [0, 1]}\n", p);
  FabScenario *sc = testscen_load(y, NULL);
  FabResults r = {0};
  testscen_run(sc, &r);
  bool seen = false;
  for (size_t i = 0; i < r.n_spans; i++)
    if (r.spans[i].kind == 0) {
      cr_assert_eq(r.spans[i].end - r.spans[i].start, 2 * US);
      seen = true;
    }
  cr_assert(seen);
  cr_assert_eq(coll(&r, "send-recv")->start, 2 * US);
  g_free(p);
  g_free(y);
  testscen_done(sc, &r);
}

/* Count the collectives of the DAG by (tag prefix, ranks, bytes). */
static uint32_t count_colls(const FabDag *d, const char *op, const char *tag, uint32_t nranks, uint64_t bytes) {
  uint32_t k = 0;
  for (guint i = 0; i < d->colls->len; i++) {
    const FabCollDef *c = &g_array_index(d->colls, FabCollDef, i);
    if (g_str_equal(c->op, op) && c->tag && g_str_has_prefix(c->tag, tag) && c->nranks == nranks && c->bytes == bytes)
      k++;
  }
  return k;
}

/* A 4-rank trace (tp 2 x dp 2: tensor groups t0 {0,1}, t1 {2,3}, data groups
** d0 {0,2}, d1 {1,3}) replayed at dp 2, 4, 8 (x1, x2, x4): each tensor group is one
** per replica (2 ranks, 8 MiB each); each data group spans the replicas
** (2 x F ranks) and keeps its sizes: the allreduce its 64 MiB, the
** allgather its whole 32 MiB. */
Test(trace, scale_dp_rule) {
  const char *t = "group t0 0,1\ngroup t1 2,3\ngroup d0 0,2\ngroup d1 1,3\n"
                  "1 0 allreduce 8MiB t0 -\n2 0 allreduce 64MiB d0 1\n3 0 allgather 32MiB d0 2\n"
                  "1 1 allreduce 8MiB t0 -\n2 1 allreduce 64MiB d1 1\n3 1 allgather 32MiB d1 2\n"
                  "1 2 allreduce 8MiB t1 -\n2 2 allreduce 64MiB d0 1\n3 2 allgather 32MiB d0 2\n"
                  "1 3 allreduce 8MiB t1 -\n2 3 allreduce 64MiB d1 1\n3 3 allgather 32MiB d1 2\n";
  for (uint32_t f = 1; f <= 4; f *= 2) {
    char *more = g_strdup_printf(", scale: {dp: %u, groups: [d0, d1]}", 2 * f); /* recorded at dp 2 */
    FabScenario *sc = load_text(4 * f, t, more);
    const FabDag *d = sc->dag;
    cr_assert_eq(count_colls(d, "allreduce", "t", 2, 8ull << 20), 2 * f, "dp x%u", f);
    cr_assert_eq(count_colls(d, "allreduce", "d", 2 * f, 64ull << 20), 2, "dp x%u", f);
    cr_assert_eq(count_colls(d, "allgather", "d", 2 * f, 32ull << 20), 2, "dp x%u", f);
    cr_assert_eq(d->colls->len, 2 * f + 4);
    g_free(more);
    fab_scenario_free(sc);
  }
}

/* A data-parallel job on every rank (no groups named: the world is the
** data-parallel group): 2 traced ranks replayed at dp 8 are one allreduce of
** the same size over 8 ranks, each rank's compute unchanged. */
Test(trace, scale_dp_world) {
  const char *t = "1 0 compute 5us - -\n2 0 allreduce 16MiB - 1\n1 1 compute 5us - -\n2 1 allreduce 16MiB - 1\n";
  FabScenario *sc = load_text(8, t, ", scale: {dp: 8}");
  cr_assert_eq(count_colls(sc->dag, "allreduce", "world", 8, 16ull << 20), 1);
  cr_assert_eq(sc->dag->colls->len, 1);
  uint32_t computes = 0;
  for (uint32_t i = 0; i < fab_dag_len(sc->dag); i++) {
    const FabOp *o = fab_dag_op(sc->dag, i);
    if (o->kind != FAB_OP_COMPUTE) continue;
    cr_assert_eq(o->dur, 5 * US);
    computes++;
  }
  cr_assert_eq(computes, 8);
  fab_scenario_free(sc);
}

/* Same scenario, same seed: the same JSON, byte for byte. */
Test(trace, deterministic) {
  const char *t = "1 0 compute 3us - -\n2 0 allreduce 256KiB - 1\n3 0 send 1MiB 1 2\n"
                  "1 1 compute 1us - -\n2 1 allreduce 256KiB - 1\n3 1 recv 1MiB 0 2\n4 1 send 8KiB 0 3 tag=7\n"
                  "4 0 recv 8KiB 1 3 tag=7\n";
  char *js[2];
  for (int k = 0; k < 2; k++) {
    FabScenario *sc = load_text(2, t, NULL);
    FabResults r = {0};
    testscen_run(sc, &r);
    js[k] = testscen_stable_json(&r);
    testscen_done(sc, &r);
  }
  cr_assert_str_eq(js[0], js[1]);
  g_free(js[0]);
  g_free(js[1]);
}

/* Loading fails with `what`, naming where (the trace file's line:col or node). */
static void expect_text_error_with(uint32_t n, const char *trace, const char *more, const char *what) {
  char *p = put("t.txt", trace, strlen(trace));
  char *wl = g_strdup_printf("kind: text, file: '%s'%s", p, more ? more : "");
  char *y = scen(n, wl);
  GError *err = NULL;
  FabScenario *sc = fab_scenario_load_string(y, "test.yaml", NULL, NULL, &err);
  cr_assert_null(sc, "loaded, expected an error with \"%s\"", what);
  cr_assert(strstr(err->message, what), "%s\nexpected: %s", err->message, what);
  cr_assert(g_str_has_prefix(err->message, "test.yaml:6:"), "%s", err->message); /* the workload's file key */
  g_error_free(err);
  g_free(y);
  g_free(wl);
  g_free(p);
}

static void expect_text_error(uint32_t n, const char *trace, const char *what) {
  expect_text_error_with(n, trace, NULL, what);
}

Test(trace, text_malformed) {
  expect_text_error(2, "1 0 compute 1us - 9\n1 1 send 1 0 -\n2 0 recv 1 1 -\n",
                    "node 1 depends on node 9, which is not in rank 0's trace");
  expect_text_error(2, "1 0 compute 1us - 3\n2 0 compute 1us - 1\n3 0 compute 1us - 2\n1 1 send 1 0 -\n4 0 recv 1 1 -\n",
                    "a dependency cycle in rank 0's trace");
  expect_text_error(2, "1 0 allreduce 1MiB 0-3 -\n", "t.txt:1:20: group: '0-3': ranks go from 0 to 1 here");
  expect_text_error(4, "group g 0,1\n1 2 allreduce 1MiB g -\n", "is a collective of rank 2 on group g, which does not hold");
  expect_text_error(2, "1 0 send 1MiB 1 -\n", "rank 0's send to rank 1 (tag 0) has no matching receive");
  expect_text_error(2, "1 0 send 1MiB 1 -\n1 1 recv 2MiB 0 -\n", "its partner node 1 (rank 0) 1048576 B");
  expect_text_error(2, "1 0 allreduce 1MiB - -\n1 1 allgather 1MiB - -\n", "is allgather of 1048576 B on group all ranks");
  expect_text_error(2, "1 0 allreduce 1MiB - -\n", "which rank 1 never reaches");
  expect_text_error(3, "group a 0,1\ngroup b 1,2\ngroup c 0,2\n"
                       "1 0 allreduce 1MiB a -\n2 0 allreduce 1MiB c 1\n"
                       "1 1 allreduce 1MiB b -\n2 1 allreduce 1MiB a 1\n"
                       "1 2 allreduce 1MiB c -\n2 2 allreduce 1MiB b 1\n", "can never run");
  expect_text_error(2, "1 0 compute 1us -\n", "t.txt:1:18: line: expected: ID RANK OP SIZE GROUP DEPS");
  expect_text_error(2, "1 0 multiply 1us - -\n", "t.txt:1:5: op: unknown op 'multiply'");
  expect_text_error(2, "1 0 compute 1kg - -\n", "t.txt:1:13: size: a compute's size is a time");
  expect_text_error(2, "1 7 compute 1us - -\n", "t.txt:1:3: rank: '7' is not a rank (0..1)");
  expect_text_error(2, "1 0 send 1KiB 1 - colour=red\n1 1 recv 1KiB 0 -\n", "t.txt:1:19: colour: unknown option");
  expect_text_error(2, "1 0 send 1KiB 0 -\n", "rank 0 sends to rank 0, itself");
  expect_text_error(2, "1 0 compute 20us - - name=a name=b\n", "t.txt:1:29: name: name is given twice on this line");
  expect_text_error(2, "1 0 compute 20us - - tag=3\n", "t.txt:1:22: tag: tag pairs a send with its recv, not a compute");
  expect_text_error(2, "1 0 allreduce 1KiB - - root=1\n1 1 allreduce 1KiB - - root=1\n",
                    "t.txt:1:24: root: root is for broadcast and reduce, not allreduce");
  expect_text_error(2, "1 0 broadcast 1KiB - - root=0\n1 1 broadcast 1KiB - - root=1\n",
                    "is broadcast of 1024 B on group all ranks with root 1, where rank 0's collective 1 there (node 1) "
                    "has root 0");
  expect_text_error(2, "1 0 allreduce 1KiB nope -\n", "no group named 'nope'");
  expect_text_error(2, "1 0 compute 1us - -\n1 0 compute 1us - -\n", "node id 1 appears twice in rank 0's trace");
  expect_text_error(2, "1 0 compute 1e9flop - -\n1 1 compute 1us - -\n2 0 send 1 1 1\n2 1 recv 1 0 1\n",
                    "has FLOPs but no duration, and the cluster's endpoints are not GPUs");
  expect_text_error_with(4, "group d 0,1\n1 0 allreduce 1MiB d -\n1 1 allreduce 1MiB d -\n",
                         ", scale: {dp: 3, groups: [d]}", "recorded at data-parallel degree 2, and 3 is not a multiple");
  expect_text_error_with(7, "group d 0,1\n1 0 allreduce 1MiB d -\n1 1 allreduce 1MiB d -\n",
                         ", scale: {dp: 4, groups: [d]}", "the job's 7 ranks are not a multiple of 2");
  expect_text_error_with(6, "1 0 allreduce 1MiB - -\n1 1 allreduce 1MiB - -\n", ", scale: {dp: 4}",
                         "the job needs 4 ranks (2 x the trace's 2), it has 6");
  expect_text_error_with(4, "1 0 allreduce 1MiB - -\n1 1 allreduce 1MiB - -\n", ", scale: {dp: 2, groups: [e]}",
                         "no group named 'e'");
  expect_text_error_with(4, "group d 0,1\n1 0 allreduce 1MiB d -\n1 1 allreduce 1MiB d -\n1 3 compute 1us - -\n",
                         ", scale: {dp: 4, groups: [d]}", "names rank 3, beyond the trace's 2 ranks");
}

Test(trace, bad_keys) {
  testscen_expect_error("cluster: {nodes: 2}\nfabric:\n  topology: {kind: single-switch}\n  link: {bandwidth: 100Gbps, latency: 1us, mtu: 4096}\n  switch: {latency: 500ns}\n" "workload: {kind: text}\n", NULL, "test.yaml:6:", "missing required key 'file'");
}

#if FAB_HAVE_PROTOBUF_C
/* ---- Chakra traces, written here with protobuf-c ---- */

typedef struct CkNode {
  uint64_t id;
  int type;               /* 4 compute, 5 send, 6 recv, 7 collective */
  uint64_t dur_us;
  int64_t comm_type;      /* -1: none */
  int64_t size;           /* comm_size; -1: none */
  int64_t peer;           /* comm_dst (send) / comm_src (recv) */
  const char *pg;
  uint64_t deps[2];
  size_t ndeps;
  uint64_t ctrl[2];       /* ctrl_deps */
  size_t nctrl;
  bool cpu;               /* is_cpu_op (a bool attribute, as PyTorch's converter writes it) */
} CkNode;

static void put_varint(GByteArray *b, uint64_t v) {
  do {
    uint8_t c = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) c |= 0x80;
    g_byte_array_append(b, &c, 1);
  } while (v);
}

static void put_msg(GByteArray *b, const ProtobufCMessage *m) {
  size_t n = protobuf_c_message_get_packed_size(m);
  uint8_t *buf = g_malloc(n + 1);
  protobuf_c_message_pack(m, buf);
  put_varint(b, n);
  g_byte_array_append(b, buf, (guint)n);
  g_free(buf);
}

static FabsimChakra__EtAttr *int_attr(const char *name, int64_t v) {
  FabsimChakra__EtAttr *a = g_new(FabsimChakra__EtAttr, 1);
  fabsim_chakra__et_attr__init(a);
  a->name = (char *)name;
  a->value_case = FABSIM_CHAKRA__ET_ATTR__VALUE_INT64_VAL;
  a->int64_val = v;
  return a;
}

/* One rank's trace file: metadata, then the nodes. */
static GByteArray *ck_file(const CkNode *nodes, size_t n) {
  GByteArray *b = g_byte_array_new();
  FabsimChakra__EtMetadata meta = FABSIM_CHAKRA__ET_METADATA__INIT;
  meta.version = (char *)"0.0.4";
  put_msg(b, &meta.base);
  for (size_t i = 0; i < n; i++) {
    const CkNode *c = &nodes[i];
    FabsimChakra__EtNode nd = FABSIM_CHAKRA__ET_NODE__INIT;
    FabsimChakra__EtAttr *attrs[5], pg = FABSIM_CHAKRA__ET_ATTR__INIT, cpu = FABSIM_CHAKRA__ET_ATTR__INIT;
    size_t na = 0;
    nd.id = c->id;
    nd.name = (char *)"op";
    nd.type = c->type;
    nd.duration_micros = c->dur_us;
    nd.data_deps = (uint64_t *)c->deps;
    nd.n_data_deps = c->ndeps;
    nd.ctrl_deps = (uint64_t *)c->ctrl;
    nd.n_ctrl_deps = c->nctrl;
    if (c->cpu) {
      cpu.name = (char *)"is_cpu_op";
      cpu.value_case = FABSIM_CHAKRA__ET_ATTR__VALUE_BOOL_VAL;
      cpu.bool_val = true;
      attrs[na++] = &cpu;
    }
    if (c->comm_type >= 0) attrs[na++] = int_attr("comm_type", c->comm_type);
    if (c->size >= 0) attrs[na++] = int_attr("comm_size", c->size);
    if (c->type == 5 || c->type == 6) attrs[na++] = int_attr(c->type == 5 ? "comm_dst" : "comm_src", c->peer);
    if (c->pg) {
      pg.name = (char *)"pg_name";
      pg.value_case = FABSIM_CHAKRA__ET_ATTR__VALUE_STRING_VAL;
      pg.string_val = (char *)c->pg;
      attrs[na++] = &pg;
    }
    nd.attr = attrs;
    nd.n_attr = na;
    put_msg(b, &nd.base);
    for (size_t k = 0; k < na; k++)
      if (attrs[k] != &pg && attrs[k] != &cpu) g_free(attrs[k]);
  }
  return b;
}

/* Rank r's trace as rank.r.et in tmpdir (its first `cut` bytes, 0: all). */
static void ck_write(uint32_t r, const CkNode *nodes, size_t n, size_t cut) {
  GByteArray *b = ck_file(nodes, n);
  char *name = g_strdup_printf("rank.%u.et", r);
  g_free(put(name, b->data, cut ? cut : b->len));
  g_free(name);
  g_byte_array_free(b, TRUE);
}

/* Rank r's trace written, and the files' pattern (g_free it). */
static char *ck_put(uint32_t r, const CkNode *nodes, size_t n, size_t cut) {
  ck_write(r, nodes, n, cut);
  return g_build_filename(tmpdir, "rank.%d.et", NULL);
}

/* The text trace of text_send_on_paper plus an allreduce on group `pair`, as Chakra nodes. */
static const CkNode ck_r0[] = {
  {1, 4, 10, -1, -1, 0, NULL, {0}, 0},
  {2, 7, 0, 0, 1 << 20, 0, "pair", {1}, 1},
  {3, 5, 0, -1, 1000, 1, NULL, {2}, 1},
};
static const CkNode ck_r1[] = {
  {1, 4, 10, -1, -1, 0, NULL, {0}, 0},
  {2, 7, 0, 0, 1 << 20, 0, "pair", {1}, 1},
  {3, 6, 0, -1, 1000, 0, NULL, {2}, 1},
  {4, 4, 5, -1, -1, 0, NULL, {3}, 1},
};
static const char ck_text[] = "group pair 0,1\n"
                              "1 0 compute 10us - -\n2 0 allreduce 1MiB pair 1\n3 0 send 1000 1 2\n"
                              "1 1 compute 10us - -\n2 1 allreduce 1MiB pair 1\n3 1 recv 1000 0 2\n"
                              "4 1 compute 5us - 3\n";

static char *run_json(const char *yaml) {
  FabScenario *sc = testscen_load(yaml, NULL);
  FabResults r = {0};
  testscen_run(sc, &r);
  char *js = testscen_stable_json(&r);
  testscen_done(sc, &r);
  return js;
}

/* A Chakra trace and the same trace in the text format: the same run. */
Test(trace, chakra_as_text) {
  ck_write(0, ck_r0, G_N_ELEMENTS(ck_r0), 0);
  char *pat = ck_put(1, ck_r1, G_N_ELEMENTS(ck_r1), 0);
  char *wl = g_strdup_printf("kind: chakra, traces: '%s', groups: {pair: [0, 1]}", pat);
  char *y = scen(2, wl);
  char *a = run_json(y);
  char *tp = put("t.txt", ck_text, strlen(ck_text));
  char *wl2 = g_strdup_printf("kind: text, file: '%s'", tp);
  char *y2 = scen(2, wl2);
  char *b = run_json(y2);
  char **parts = g_strsplit(a, "\"chakra\"", -1); /* the job's name and kind: the only difference */
  g_free(a);
  a = g_strjoinv("\"text\"", parts);
  g_strfreev(parts);
  size_t k = 0;
  while (a[k] && a[k] == b[k]) k++;
  cr_assert_str_eq(a, b, "differ at %zu: ...%.80s... against ...%.80s...", k, a + k, b + k);
  cr_assert(strstr(a, "\"tag\": \"pair\""), "%s", a);
  g_free(a), g_free(b), g_free(y), g_free(y2), g_free(wl), g_free(wl2), g_free(tp), g_free(pat);
}

/* The communicator groups from a file in ASTRA-sim's JSON layout. */
Test(trace, chakra_groups_from_a_json_file) {
  ck_write(0, ck_r0, G_N_ELEMENTS(ck_r0), 0);
  char *pat = ck_put(1, ck_r1, G_N_ELEMENTS(ck_r1), 0);
  const char *js = "{\"pair\": [0, 1]}\n";
  char *gp = put("groups.json", js, strlen(js));
  char *wl = g_strdup_printf("kind: chakra, traces: '%s', groups: '%s'", pat, gp);
  char *y = scen(2, wl);
  char *a = run_json(y);
  cr_assert(strstr(a, "\"tag\": \"pair\""), "%s", a);
  g_free(a), g_free(y), g_free(wl), g_free(gp), g_free(pat);
}

static void expect_chakra_error(const char *pat, const char *more, const char *what) {
  char *wl = g_strdup_printf("kind: chakra, traces: '%s', groups: {pair: [0, 1]}%s", pat, more ? more : "");
  char *y = scen(2, wl);
  GError *err = NULL;
  FabScenario *sc = fab_scenario_load_string(y, "test.yaml", NULL, NULL, &err);
  cr_assert_null(sc, "loaded, expected an error with \"%s\"", what);
  cr_assert(strstr(err->message, what), "%s\nexpected: %s", err->message, what);
  cr_assert(g_str_has_prefix(err->message, "test.yaml:6:"), "%s", err->message);
  g_error_free(err);
  g_free(y);
  g_free(wl);
}

Test(trace, chakra_malformed) {
  ck_write(0, ck_r0, G_N_ELEMENTS(ck_r0), 0);
  GByteArray *whole = ck_file(ck_r1, G_N_ELEMENTS(ck_r1));
  char *pat = ck_put(1, ck_r1, G_N_ELEMENTS(ck_r1), whole->len - 3); /* the last node cut short */
  char *p1 = g_build_filename(tmpdir, "rank.1.et", NULL);
  expect_chakra_error(pat, NULL, "rank.1.et: truncated at byte");
  expect_chakra_error(pat, NULL, "after node 3");
  CkNode nosize[G_N_ELEMENTS(ck_r1)];
  memcpy(nosize, ck_r1, sizeof nosize);
  nosize[1].size = -1;
  ck_write(1, nosize, G_N_ELEMENTS(nosize), 0);
  expect_chakra_error(pat, NULL, "rank.1.et: node 2 ('op') has no comm_size (set workload.missing_size");
  nosize[1].size = 1 << 20;
  nosize[1].comm_type = 3;
  ck_write(1, nosize, G_N_ELEMENTS(nosize), 0);
  expect_chakra_error(pat, NULL, "node 2: comm_type 3 (gather or scatter) is not a collective fabsim models");
  nosize[1].comm_type = 0;
  nosize[1].pg = "other";
  ck_write(1, nosize, G_N_ELEMENTS(nosize), 0);
  expect_chakra_error(pat, NULL, "node 2: process group 'other' is not in workload.groups");
  nosize[1].pg = "pair";
  nosize[3].deps[0] = 42;
  ck_write(1, nosize, G_N_ELEMENTS(nosize), 0);
  expect_chakra_error(pat, NULL, "rank.1.et: node 4: node 4 depends on node 42, which is not in rank 1's trace");
  g_unlink(p1);
  expect_chakra_error(pat, NULL, "cannot read rank 1's trace");
  expect_chakra_error("rank.et", NULL, "expected a file pattern with one %d");
  char *none = g_build_filename(tmpdir, "none.%d.et", NULL);
  expect_chakra_error(none, ", scale: {dp: 4}", "none.0.et: no such file (rank 0's trace)");
  g_free(none);
  expect_chakra_error("rank.%d.%s.et", NULL, "expected a file pattern with one %d");
  const char junk[] = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01";
  g_free(put("rank.1.et", junk, sizeof junk - 1));
  expect_chakra_error(pat, NULL, "rank.1.et: truncated at byte 0, in its metadata");
  g_byte_array_free(whole, TRUE);
  g_free(p1);
  g_free(pat);
}

/* A Chakra trace of 2 ranks (its files rank.0 and rank.1), every collective
** on all ranks, replayed at dp 4 on 4 ranks: one allreduce over the 4. */
Test(trace, chakra_scale_dp_world) {
  static const CkNode r[] = {{1, 4, 3, -1, -1, 0, NULL, {0}, 0}, {2, 7, 0, 0, 1 << 20, 0, NULL, {1}, 1}};
  ck_write(0, r, G_N_ELEMENTS(r), 0);
  char *pat = ck_put(1, r, G_N_ELEMENTS(r), 0);
  char *wl = g_strdup_printf("kind: chakra, traces: '%s', scale: {dp: 4}", pat);
  char *y = scen(4, wl);
  FabScenario *sc = testscen_load(y, NULL);
  cr_assert_eq(count_colls(sc->dag, "allreduce", "world", 4, 1 << 20), 1);
  cr_assert_eq(sc->dag->colls->len, 1);
  fab_scenario_free(sc);
  g_free(y), g_free(wl), g_free(pat);
}

/* A collective with no comm_size takes workload.missing_size when given. */
Test(trace, chakra_missing_size_rule) {
  CkNode r0[G_N_ELEMENTS(ck_r0)], r1[G_N_ELEMENTS(ck_r1)];
  memcpy(r0, ck_r0, sizeof r0);
  memcpy(r1, ck_r1, sizeof r1);
  r0[1].size = r1[1].size = -1;
  ck_write(0, r0, G_N_ELEMENTS(r0), 0);
  char *pat = ck_put(1, r1, G_N_ELEMENTS(r1), 0);
  char *wl = g_strdup_printf("kind: chakra, traces: '%s', groups: {pair: [0, 1]}, missing_size: 4KiB", pat);
  char *y = scen(2, wl);
  FabScenario *sc = testscen_load(y, NULL);
  FabResults r = {0};
  testscen_run(sc, &r);
  cr_assert_eq(coll(&r, "allreduce")->bytes, 4096);
  testscen_done(sc, &r);
  g_free(y), g_free(wl), g_free(pat);
}

/* The Chakra job of files `pat` (and `more` keys) on n hosts is refused with `what`. */
static void expect_wl_error(uint32_t n, const char *pat, const char *more, const char *what) {
  char *wl = g_strdup_printf("kind: chakra, traces: '%s'%s", pat, more);
  char *y = scen(n, wl);
  GError *err = NULL;
  cr_assert_null(fab_scenario_load_string(y, "test.yaml", NULL, NULL, &err), "loaded, expected \"%s\"", what);
  cr_assert(strstr(err->message, what), "%s\nexpected: %s", err->message, what);
  g_error_free(err);
  g_free(y), g_free(wl);
}

/* Run sc (and free it): its allreduce starts (its first member enters) at `us`. */
static void expect_allreduce_at(FabScenario *sc, double us, const char *what) {
  FabResults res = {0};
  testscen_run(sc, &res);
  cr_assert_float_eq((double)coll(&res, "allreduce")->start / US, us, 1e-9, "%s", what);
  testscen_done(sc, &res);
}

/* How a trace from Chakra's PyTorch converter looks: each c10d op is a host
** op (COMM_COLL_NODE with is_cpu_op, no comm_type or size) that launches the
** GPU kernel node carrying comm_type and comm_size; ctrl_deps name the
** caller, which may be absent (the thread's root) or even the op itself.
** fabsim runs the host op as a step of no GPU time and the kernel as the
** collective, and waits for data_deps only: on paper, compute 10 us then
** the 1 MiB allreduce, as the plain trace ck_r0/ck_r1 without send/recv. */
Test(trace, chakra_pytorch_shape) {
  static const CkNode r[] = {
    {1, 4, 10, -1, -1, 0, NULL, {0}, 0, {3}, 1, false},            /* a GPU kernel; its caller 3 is not in the file */
    {2, 7, 20, -1, -1, 0, NULL, {1}, 1, {2}, 1, true},             /* c10d::allreduce_ (host): names itself */
    {4, 7, 0, 0, 1 << 20, 0, NULL, {2}, 1, {4}, 1, false},         /* its ncclKernel_AllReduce: the collective */
  };
  ck_write(0, r, G_N_ELEMENTS(r), 0);
  char *pat = ck_put(1, r, G_N_ELEMENTS(r), 0);
  char *wl = g_strdup_printf("kind: chakra, traces: '%s'", pat);
  char *y = scen(2, wl);
  FabScenario *sc = testscen_load(y, NULL);
  cr_assert_eq(sc->dag->colls->len, 1);
  expect_allreduce_at(sc, 10.0, "");
  /* waiting for ctrl_deps too: the host op waits for itself, a cycle */
  expect_wl_error(2, pat, ", ctrl_deps: wait", "a dependency cycle in rank 0's trace: node 2 -> 2");
  g_free(y), g_free(wl), g_free(pat);
}

/* ctrl_deps: wait orders by ctrl_deps too (a ctrl_dep naming a node not in
** the file is dropped): the allreduce waits for the 10 us compute it names
** only as a ctrl_dep; by default it starts at once. */
Test(trace, chakra_ctrl_deps_wait) {
  static const CkNode r[] = {
    {1, 4, 10, -1, -1, 0, NULL, {0}, 0, {0}, 0, false},
    {2, 7, 0, 0, 1 << 20, 0, NULL, {0}, 0, {1, 77}, 2, false},
  };
  ck_write(0, r, G_N_ELEMENTS(r), 0);
  char *pat = ck_put(1, r, G_N_ELEMENTS(r), 0);
  const char *mode[] = {"", ", ctrl_deps: wait"};
  const double start[] = {0.0, 10.0};
  for (int m = 0; m < 2; m++) {
    char *wl = g_strdup_printf("kind: chakra, traces: '%s'%s", pat, mode[m]);
    char *y = scen(2, wl);
    FabScenario *sc = testscen_load(y, NULL);
    expect_allreduce_at(sc, start[m], mode[m]);
    g_free(y), g_free(wl);
  }
  g_free(pat);
}

/* A one-rank trace (rank 0 of a data-parallel job) replayed at dp 4: each
** replica's ops wait for its own ops only (each copy of a node has its own
** dependencies), here a chain of three computes before the allreduce. */
Test(trace, chakra_scale_one_rank) {
  static const CkNode r[] = {
    {1, 4, 3, -1, -1, 0, NULL, {0}, 0, {0}, 0, false},
    {2, 4, 4, -1, -1, 0, NULL, {1}, 1, {0}, 0, false},
    {3, 4, 5, -1, -1, 0, NULL, {1, 2}, 2, {0}, 0, false},
    {4, 7, 0, 0, 1 << 20, 0, NULL, {3}, 1, {0}, 0, false},
  };
  char *pat = ck_put(0, r, G_N_ELEMENTS(r), 0);
  char *wl = g_strdup_printf("kind: chakra, traces: '%s', scale: {dp: 4}", pat);
  char *y = scen(4, wl);
  FabScenario *sc = testscen_load(y, NULL);
  cr_assert_eq(count_colls(sc->dag, "allreduce", "world", 4, 1 << 20), 1);
  uint32_t computes = 0;
  for (uint32_t i = 0; i < fab_dag_len(sc->dag); i++) {
    const FabOp *o = fab_dag_op(sc->dag, i);
    if (o->kind != FAB_OP_COMPUTE) continue;
    computes++;
    for (uint32_t k = 0; k < o->ndeps; k++) /* a compute waits for computes of its own rank */
      cr_assert_eq(fab_dag_op(sc->dag, fab_dag_dep(sc->dag, o, k) & ~FAB_DEP_SENT)->src, o->src);
  }
  cr_assert_eq(computes, 12);
  expect_allreduce_at(sc, 12.0, "");
  /* without scale, every rank needs its file */
  expect_wl_error(4, pat, "", "rank.1.et: cannot read rank 1's trace");
  g_free(y), g_free(wl), g_free(pat);
}
#endif

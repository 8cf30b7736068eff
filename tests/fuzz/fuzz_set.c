/* Fuzz target: `--set KEY=VALUE` overrides over a scenario that loads.
**
** The input is lines. The first chooses a scenario below (by its name, or
** else by the sum of its bytes, so every line chooses one); every other line
** that is not empty is one override, passed as fab_scenario_load_string's
** `sets`, in order, as `fabsim run X --set LINE` passes them. Then, as
** fuzz_scenario does (with the same memory limit), the scenario is explained
** and freed. The scenarios are small copies of tests/scenarios/ and
** scenarios/ (one per workload kind and topology family), embedded so that
** the target reads no file.
**
** Seeds: tests/fuzz/corpus/set/; dictionary: tests/fuzz/scenario.dict. */
#include <glib.h>

#include "fuzz.h"
#include "tools/libfabsim/scenario.h"

typedef struct {
  const char *name; /* the first line that chooses it */
  const char *yaml;
} Base;

static const Base bases[] = {
  {"leaf-spine-small", /* tests/scenarios/leaf-spine-small.yaml */
   "name: leaf-spine-small\n"
   "seed: 7\n"
   "cluster: {node: host, nodes: 16}\n"
   "fabric:\n"
   "  topology: {kind: leaf-spine, hosts_per_leaf: 4, oversubscription: 2:1}\n"
   "  link: {bandwidth: 100Gbps, latency: 1us, mtu: 4096}\n"
   "  switch: {latency: 600ns, buffer: 4MiB}\n"
   "workload: {kind: permutation, size: 256KiB}\n"},
  {"flows-priorities", /* tests/scenarios/flows-priorities.yaml */
   "name: flows-priorities\n"
   "cluster: {nodes: 8}\n"
   "fabric:\n"
   "  topology: {kind: leaf-spine, hosts_per_leaf: 4, spines: 2}\n"
   "  link: {bandwidth: 400Gbps, latency: 800ns, mtu: 4096}\n"
   "  switch: {latency: 500ns, buffer: 16MiB, priorities: 2}\n"
   "  congestion_control: {algorithm: none}\n"
   "workload:\n"
   "  kind: flows\n"
   "  flows:\n"
   "    - {src: 0, dst: 4, size: 1MiB}\n"
   "    - {src: 1, dst: 4, size: 1MiB, priority: 1}\n"
   "    - {src: 2, dst: 4, size: 512KiB, start: 20us}\n"},
  {"incast-dcqcn", /* scenarios/incast-dcqcn.yaml, 4:1 */
   "name: incast-dcqcn\n"
   "cluster: {nodes: 5}\n"
   "fabric:\n"
   "  topology: {kind: single-switch}\n"
   "  link: {bandwidth: 100Gbps, latency: 1us, mtu: 4096}\n"
   "  switch:\n"
   "    latency: 600ns\n"
   "    buffer: 4MiB\n"
   "    priorities: 1\n"
   "    pfc: {enabled: true, xoff: 128KiB, xon: 64KiB}\n"
   "    ecn: {enabled: true, kmin: 20KiB, kmax: 100KiB, pmax: 0.2}\n"
   "  congestion_control: {algorithm: dcqcn, preset: dcqcn-paper}\n"
   "workload: {kind: incast, senders: 4, receiver: 0, size: 1MiB}\n"},
  {"fat-tree-k4", /* tests/scenarios/fat-tree-k4.yaml */
   "name: fat-tree-k4\n"
   "fabric:\n"
   "  transport: infiniband\n"
   "  topology: {kind: fat-tree, k: 4}\n"
   "  link: {bandwidth: 200Gbps, latency: 500ns, mtu: 4096}\n"
   "  switch: {latency: 300ns, buffer: 8MiB}\n"
   "workload: {kind: all-to-all, per_pair: 64KiB}\n"},
  {"two-jobs", /* tests/scenarios/two-jobs.yaml */
   "name: two-jobs\n"
   "cluster: {nodes: 16}\n"
   "fabric:\n"
   "  topology: {kind: leaf-spine, hosts_per_leaf: 4, spines: 2}\n"
   "  link: {bandwidth: 100Gbps, latency: 1us, mtu: 4096}\n"
   "workload:\n"
   "  - {name: allreduce, kind: collective, op: allreduce, size: 8MiB, algorithm: ring, ranks: [0, 4, 8, 12]}\n"
   "  - {name: background, kind: permutation, size: 2MiB, ranks: [2, 3, 6, 7]}\n"},
  {"nccl-tests", /* tests/scenarios/nccl-tests-allreduce.yaml */
   "name: nccl-tests-allreduce\n"
   "cluster: {nodes: 8}\n"
   "fabric:\n"
   "  topology: {kind: leaf-spine, hosts_per_leaf: 4, spines: 2}\n"
   "  link: {bandwidth: 100Gbps, latency: 1us, mtu: 4096}\n"
   "workload: {kind: nccl-tests, op: allreduce, min: 1KiB, max: 4MiB, factor: 4, iters: 2}\n"},
  {"training", /* tests/scenarios/training-pp-tp.yaml */
   "name: training-pp-tp\n"
   "cluster: {node: dgx-h100, nodes: 2}\n"
   "fabric:\n"
   "  transport: infiniband\n"
   "  topology: {kind: rail-optimized}\n"
   "  link: {bandwidth: 400Gbps, latency: 500ns, mtu: 4096}\n"
   "  switch: {latency: 300ns, buffer: 64MiB, priorities: 1}\n"
   "workload:\n"
   "  kind: training\n"
   "  model: {layers: 4, hidden: 1024, seq: 1024, micro_batch: 1, global_batch: 8, dtype: bf16}\n"
   "  parallelism: {tp: 4, pp: 2, dp: 2}\n"
   "  bucket: 8MiB\n"},
  {"nvls", /* scenarios/nvls-allreduce.yaml, 64 MiB */
   "name: nvls-allreduce\n"
   "cluster: {node: dgx-h100, nodes: 1}\n"
   "fabric:\n"
   "  transport: infiniband\n"
   "  topology: {kind: single-switch}\n"
   "  link: {bandwidth: 400Gbps, latency: 500ns, mtu: 4096}\n"
   "workload: {kind: collective, op: allreduce, algorithm: nvls, ranks: all, size: 64MiB}\n"},
};

/* The scenario a first line chooses. */
static const Base *choose(const char *line) {
  guint sum = 0;
  for (size_t i = 0; i < G_N_ELEMENTS(bases); i++)
    if (g_str_equal(line, bases[i].name)) return &bases[i];
  for (const char *c = line; *c; c++) sum += (guchar)*c;
  return &bases[sum % G_N_ELEMENTS(bases)];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  char **lines = g_strsplit(text, "\n", -1); /* an empty vector for "" */
  const Base *b = choose(lines[0] ? lines[0] : "");
  const char **sets = g_new0(const char *, g_strv_length(lines) + 1);
  for (guint i = 1, n = 0; lines[0] && lines[i]; i++)
    if (*lines[i]) sets[n++] = lines[i]; /* (an empty line, such as the one after a final newline, is none) */
  GError *err = NULL;
  fab_scenario_set_mem_limit(FUZZ_MEM_LIMIT);
  FabScenario *sc = fab_scenario_load_string(b->yaml, "fuzz.yaml", NULL, (const char *const *)sets, &err);
  if (sc) {
    g_free(fab_scenario_explain(sc));
    fab_scenario_free(sc);
  } else {
    g_assert(err != NULL);
    g_error_free(err);
  }
  g_free(sets);
  g_strfreev(lines);
  g_free(text);
  return 0;
}

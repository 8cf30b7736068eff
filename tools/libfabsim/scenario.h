/*
** A scenario: a loaded, validated YAML tree ready to run.
**
** Loading reads the tree (from a file, a string, or a tree already loaded),
** applies the --set overrides, and checks every section, so that a scenario
** that loads runs: all input errors surface here, before anything is
** simulated or written. The top-level keys (name, seed, stop_time, output)
** are read here; cluster and fabric by topologies/, workload by workloads/.
** Running it is driver.h's business.
*/
#ifndef FAB_SCENARIO_H
#define FAB_SCENARIO_H

#include <glib.h>
#include "sim/config.h"
#include "topologies/topology.h"
#include "workloads/workload.h"

typedef struct FabScenario {
  FabCfg *cfg;              /* the YAML tree (owns strings below) */
  const char *name;         /* scenario name */
  uint64_t seed;
  fab_time_t stop_time;     /* ps; FAB_TIME_MAX: none */
  FabFabricCfg fabric;      /* topology, switch and NIC settings */
  FabDag *dag;              /* the workload's operations (flows, compute, collectives, jobs) */
  const char *hdf5;         /* output.hdf5 or --hdf5, NULL: none */
  const char *perfetto;     /* output.perfetto or --perfetto: the timeline as a Perfetto trace, NULL: none */
  fab_time_t sample_interval; /* ps, queue sampling for HDF5 */
  char *topology;           /* description */
  char *own_name;           /* the name when the YAML gives none */
  FabNcclCosts nccl;        /* NCCL's kernel costs on these GPUs, resolved (cluster.nccl or the architecture's) */
  uint32_t ofi_platform;    /* srd: the node as aws-ofi-nccl's tuner knows it (FabOfiPlatform) */
  uint64_t mem_bytes;       /* the load-time estimate of what running it takes (fab_scenario_mem_limit) */
  GPtrArray *warnings;      /* char *: what the settings cost in fidelity or performance (printed on stderr,
                            ** listed in the JSON and in validate --explain) */
  struct FabScenarioSrc *src; /* where it was loaded from, for fab_scenario_reload (NULL: from a tree) */
  FabSharpPlan *sharp;      /* fabric.switch.sharp on: the trees its communicators claimed (NULL: off) */
  FabTopology *sharp_topo;  /* the topology they were planned on (a second build; NULL: off) */
} FabScenario;

/* The memory a scenario may take, bytes: what fab_scenario_set_mem_limit
** set, else three quarters of the machine's physical memory. A scenario
** whose estimate (its topology, routes, buffered packets, operations, flows)
** is above it is refused at load, naming the key that makes it large. */
uint64_t fab_scenario_mem_limit(void);
/* Set it for the process (0: back to the machine's; fabsim --max-memory). */
void fab_scenario_set_mem_limit(uint64_t bytes);

/* The built-in quickstart's YAML (scenarios/quickstart.yaml, embedded). */
extern const char fab_quickstart_yaml[];

/* Load `path` (NULL: the built-in quickstart) with `sets` ("key=value",
** NULL-terminated, may be NULL) applied in order. NULL + err (FAB_CFG_ERROR,
** message "file:line:col: key.path: ...") on bad input. Transfer full. */
FabScenario *fab_scenario_load(const char *path, const char *const *sets, GError **err);

/* The same from YAML text; `name` stands for the file name in error
** locations and is the default scenario name; includes are relative to
** `dir` (NULL: the current directory). */
FabScenario *fab_scenario_load_string(const char *text, const char *name, const char *dir, const char *const *sets,
                                      GError **err);

/* The same from a tree already loaded (transfer full: freed on failure too);
** `default_name` names the scenario when it has no `name:` (NULL:
** "quickstart"). The overrides must already be applied. */
FabScenario *fab_scenario_from_cfg(FabCfg *cfg, const char *default_name, GError **err);

void fab_scenario_free(FabScenario *sc);

/* The scenario loaded again from where `sc` was (its file or text, its
** overrides) with one more override `extra` ("key=value"); NULL + err when
** it does not load, or when `sc` was made from a tree (no source kept).
** The run's failure baseline uses it (driver.c). Transfer full. */
FabScenario *fab_scenario_reload(const FabScenario *sc, const char *extra, GError **err);

/* A multi-line description of what the scenario expands to (validate
** --explain). Transfer full. */
char *fab_scenario_explain(const FabScenario *sc);

/* The NICs as they run: "16 x 200 Gbps (8 per node; the dgx-h100 preset's
** 400 Gbps NICs at the fabric's link rate)" (a preset's NIC links at the
** slower of its rate and fabric.link.bandwidth), or "32 x 100 Gbps" for
** plain hosts. g_free it. */
char *fab_scenario_nic_rate(const FabScenario *sc);

/* A job's endpoints in rank order as --explain shows them: runs of
** consecutive endpoints as ranges ("0-7", "0, 4, 8, 12, 1, 5, 9, 13", "0-3,
** 8-11"); past 16 items the first 8 and "... (N more)". g_free it. */
char *fab_explain_ranks(const uint32_t *r, uint32_t n);

#endif

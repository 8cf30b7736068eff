/*
** A scenario: a loaded, validated YAML file ready to run, and the run itself.
**
** fab_scenario_load reads the file (or the built-in quickstart), applies the
** --set overrides, and checks every section, so that a scenario that loads
** runs: all input errors surface here, before anything is simulated or
** written. fab_scenario_run builds the engine, the topology and the flows,
** runs to completion (or stop_time), checks the run's invariants, and fills
** a FabResults.
*/
#ifndef FAB_SCENARIO_H
#define FAB_SCENARIO_H

#include <glib.h>
#include "sim/config.h"
#include "sim/results.h"
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
  fab_time_t sample_interval; /* ps, queue sampling for HDF5 */
  char *topology;           /* description */
} FabScenario;

/* The built-in quickstart's YAML (scenarios/quickstart.yaml, embedded). */
extern const char fab_quickstart_yaml[];

/* Load `path` (NULL: the built-in quickstart) with `sets` ("key=value",
** NULL-terminated, may be NULL) applied in order. NULL + err (FAB_CFG_ERROR,
** message "file:line:col: key.path: ...") on bad input. Transfer full. */
FabScenario *fab_scenario_load(const char *path, const char *const *sets, GError **err);

void fab_scenario_free(FabScenario *sc);

/* Options of one run. */
typedef struct FabRunOpts {
  bool progress;            /* report progress on stderr */
  bool sample_queues;       /* record the queue time series even without hdf5 */
} FabRunOpts;

/* Run `sc` and fill `res` (clear it with fab_results_clear and free
** res->failure with g_free). Returns 0 if every flow completed and every
** invariant held, 1 otherwise (res->failure says why). */
int fab_scenario_run(const FabScenario *sc, const FabRunOpts *opts, FabResults *res);

/* A multi-line description of what the scenario expands to (validate --explain). */
char *fab_scenario_explain(const FabScenario *sc);

#endif

/*
** libfabsim: fabsim as a library, for planning scripts that run it many
** times. One header, no global state: every run hangs off its own objects,
** so several can live in one process. The handles are opaque; the shared
** library exports these fabsim_* functions and nothing else (pkg-config
** name: fabsim).
**
**   FabsimScenario *sc = fabsim_load_file("x.yaml", &err);   // or fabsim_load_string
**   fabsim_set(sc, "fabric.switch.buffer=8MiB", &err);        // any number of overrides
**   FabsimRun *run = fabsim_run(sc, &err);                    // simulate
**   double t = fabsim_run_number(run, "sim_time_s");          // summary fields by name
**   char *json = fabsim_run_json(run);                        // the whole JSON summary
**   fabsim_run_free(run); fabsim_scenario_free(sc);
**
** Errors come back as a malloc'ed message in *err (free with fabsim_free);
** a NULL return or FALSE always sets it. Input errors are "file:line:col:
** key: message", exactly what the CLI prints.
*/
#ifndef FABSIM_H
#define FABSIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(FABSIM_BUILDING) && defined(__GNUC__)
#define FABSIM_API __attribute__((visibility("default")))
#else
#define FABSIM_API
#endif

typedef struct FabsimScenario FabsimScenario;
typedef struct FabsimRun FabsimRun;

/* The library version, "0.1.0". */
FABSIM_API const char *fabsim_version(void);

/* Load a scenario from a YAML file, or from text (`name` stands for the file
** name in error locations, and names the scenario when it has no `name:`;
** its include: paths are relative to the current directory at the time of
** fabsim_load_string).
** NULL + *err on bad input. Overrides given later with fabsim_set apply when
** the scenario runs. */
FABSIM_API FabsimScenario *fabsim_load_file(const char *path, char **err);
FABSIM_API FabsimScenario *fabsim_load_string(const char *yaml, const char *name, char **err);

/* Override one key ("dotted.key=VALUE", as --set). 1 on success, 0 + *err
** when the override makes the scenario invalid (the override is not kept). */
FABSIM_API int fabsim_set(FabsimScenario *sc, const char *assignment, char **err);

FABSIM_API void fabsim_scenario_free(FabsimScenario *sc);

/* Simulate. Returns a run even when the simulation failed (deadlock,
** stop_time: see fabsim_run_status); NULL + *err only on bad input. */
FABSIM_API FabsimRun *fabsim_run(const FabsimScenario *sc, char **err);

/* 0 success, 1 the simulation ran but failed (fabsim_run_failure says why). */
FABSIM_API int fabsim_run_status(const FabsimRun *run);
FABSIM_API const char *fabsim_run_failure(const FabsimRun *run); /* NULL when status is 0 */

/* A numeric field of the JSON summary by its dotted path ("sim_time_s",
** "events", "drops", "flows.fct_p99_s", "collectives.0.busbw_GBps",
** "step.by_op.allreduce.time_s", ...); NaN if absent or null. Cost: a walk of
** the results' field tables, independent of the run's size. */
FABSIM_API double fabsim_run_number(const FabsimRun *run, const char *field);

/* The JSON summary (the CLI's --json line). Free with fabsim_free. */
FABSIM_API char *fabsim_run_json(const FabsimRun *run);

/* Per-flow and per-collective results without parsing text. */
FABSIM_API size_t fabsim_run_flows(const FabsimRun *run);
FABSIM_API int fabsim_run_flow(const FabsimRun *run, size_t i, uint32_t *src, uint32_t *dst, uint64_t *bytes,
                    double *start_s, double *end_s); /* 1, or 0 if i is out of range; end_s NaN if unfinished */
FABSIM_API size_t fabsim_run_collectives(const FabsimRun *run);
FABSIM_API int fabsim_run_collective(const FabsimRun *run, size_t i, const char **op, const char **algorithm,
                          uint64_t *bytes, uint32_t *ranks, double *time_s, double *busbw_GBps);

/* Write the run's HDF5 results to path. 1, or 0 + *err. */
FABSIM_API int fabsim_run_write_hdf5(const FabsimRun *run, const char *path, char **err);

FABSIM_API void fabsim_run_free(FabsimRun *run);
FABSIM_API void fabsim_free(void *p);

#ifdef __cplusplus
}
#endif

#endif

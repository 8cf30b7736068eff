/*
** libfabsim: fabsim as a library, for planning scripts that run it many
** times. One header, no global state: every run hangs off its own objects,
** so several can live in one process (and in several threads, one run per
** thread).
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

typedef struct FabsimScenario FabsimScenario;
typedef struct FabsimRun FabsimRun;

/* The library version, "0.1.0". */
const char *fabsim_version(void);

/* Load a scenario from a YAML file, or from text (`name` stands for the file
** name in error locations; its include: paths must be absolute, since the
** text is loaded through a private temporary file).
** NULL + *err on bad input. Overrides given later with fabsim_set apply when
** the scenario runs. */
FabsimScenario *fabsim_load_file(const char *path, char **err);
FabsimScenario *fabsim_load_string(const char *yaml, const char *name, char **err);

/* Override one key ("dotted.key=VALUE", as --set). 1 on success, 0 + *err
** when the override makes the scenario invalid (the override is not kept). */
int fabsim_set(FabsimScenario *sc, const char *assignment, char **err);

void fabsim_scenario_free(FabsimScenario *sc);

/* Simulate. Returns a run even when the simulation failed (deadlock,
** stop_time: see fabsim_run_status); NULL + *err only on bad input. */
FabsimRun *fabsim_run(const FabsimScenario *sc, char **err);

/* 0 success, 1 the simulation ran but failed (fabsim_run_failure says why). */
int fabsim_run_status(const FabsimRun *run);
const char *fabsim_run_failure(const FabsimRun *run); /* NULL when status is 0 */

/* A numeric field of the JSON summary by name ("sim_time_s", "events",
** "drops", "flows.fct_p99_s", "collectives.0.busbw_GBps", ...); NaN if absent. */
double fabsim_run_number(const FabsimRun *run, const char *field);

/* The JSON summary (the CLI's --json line). Free with fabsim_free. */
char *fabsim_run_json(const FabsimRun *run);

/* Per-flow and per-collective results without parsing text. */
size_t fabsim_run_flows(const FabsimRun *run);
int fabsim_run_flow(const FabsimRun *run, size_t i, uint32_t *src, uint32_t *dst, uint64_t *bytes,
                    double *start_s, double *end_s); /* 1, or 0 if i is out of range; end_s NaN if unfinished */
size_t fabsim_run_collectives(const FabsimRun *run);
int fabsim_run_collective(const FabsimRun *run, size_t i, const char **op, const char **algorithm,
                          uint64_t *bytes, uint32_t *ranks, double *time_s, double *busbw_GBps);

/* Write the run's HDF5 results to path. 1, or 0 + *err. */
int fabsim_run_write_hdf5(const FabsimRun *run, const char *path, char **err);

void fabsim_run_free(FabsimRun *run);
void fabsim_free(void *p);

#ifdef __cplusplus
}
#endif

#endif

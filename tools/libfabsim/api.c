/* libfabsim: fabsim as a library. See fabsim.h. */
#include "fabsim.h"

#include <glib.h>
#include <math.h>
#include <string.h>

#include "driver.h"
#include "h5out.h"
#include "json.h"
#include "scenario.h"

struct FabsimScenario {
  char *path;      /* a file scenario, or NULL */
  char *text;      /* a string scenario's YAML */
  char *name;      /* its name in error locations */
  char *dir;       /* a string scenario's includes are relative to this: the current directory when it was loaded */
  GPtrArray *sets; /* char *, "key=value" */
};

struct FabsimRun {
  FabScenario *sc; /* owns the strings res points into */
  FabResults res;
  int status;
};

const char *fabsim_version(void) { return FABSIM_VERSION; }

void fabsim_free(void *p) { g_free(p); }

static void set_err(char **err, const char *msg) {
  if (err) *err = g_strdup(msg);
}

/* The scenario with its overrides plus `extra` (may be NULL), loaded and
** checked. NULL + *err on bad input. */
static FabScenario *load(const FabsimScenario *s, const char *extra, char **err) {
  GPtrArray *sets = g_ptr_array_new();
  for (guint i = 0; i < s->sets->len; i++) g_ptr_array_add(sets, g_ptr_array_index(s->sets, i));
  if (extra) g_ptr_array_add(sets, (gpointer)extra);
  g_ptr_array_add(sets, NULL);
  GError *e = NULL;
  const char *const *sv = (const char *const *)sets->pdata;
  char *cwd = s->path ? NULL : g_get_current_dir(); /* includes as written while the directory is the same */
  const char *dir = cwd && s->dir && strcmp(cwd, s->dir) ? s->dir : NULL;
  FabScenario *sc = s->path ? fab_scenario_load(s->path, sv, &e) : fab_scenario_load_string(s->text, s->name, dir, sv, &e);
  g_free(cwd);
  if (!sc) {
    set_err(err, e->message);
    g_error_free(e);
  }
  g_ptr_array_free(sets, TRUE);
  return sc;
}

static FabsimScenario *scenario_new(const char *path, const char *text, const char *name, char **err) {
  FabsimScenario *s = g_new0(FabsimScenario, 1);
  s->path = g_strdup(path);
  s->text = g_strdup(text);
  s->name = g_strdup(name);
  s->dir = text ? g_get_current_dir() : NULL;
  s->sets = g_ptr_array_new_with_free_func(g_free);
  FabScenario *sc = load(s, NULL, err);
  if (!sc) {
    fabsim_scenario_free(s);
    return NULL;
  }
  fab_scenario_free(sc);
  return s;
}

FabsimScenario *fabsim_load_file(const char *path, char **err) {
  if (!path) {
    set_err(err, "fabsim_load_file: no path");
    return NULL;
  }
  return scenario_new(path, NULL, NULL, err);
}

FabsimScenario *fabsim_load_string(const char *yaml, const char *name, char **err) {
  if (!yaml) {
    set_err(err, "fabsim_load_string: no text");
    return NULL;
  }
  return scenario_new(NULL, yaml, name && *name ? name : "<string>", err);
}

int fabsim_set(FabsimScenario *sc, const char *assignment, char **err) {
  if (!sc || !assignment) {
    set_err(err, "fabsim_set: no scenario or assignment");
    return 0;
  }
  FabScenario *l = load(sc, assignment, err);
  if (!l) return 0;
  fab_scenario_free(l);
  g_ptr_array_add(sc->sets, g_strdup(assignment));
  return 1;
}

void fabsim_scenario_free(FabsimScenario *sc) {
  if (!sc) return;
  g_free(sc->path);
  g_free(sc->text);
  g_free(sc->name);
  g_free(sc->dir);
  g_ptr_array_free(sc->sets, TRUE);
  g_free(sc);
}

FabsimRun *fabsim_run(const FabsimScenario *s, char **err) {
  if (!s) {
    set_err(err, "fabsim_run: no scenario");
    return NULL;
  }
  FabScenario *sc = load(s, NULL, err);
  if (!sc) return NULL;
  FabsimRun *run = g_new0(FabsimRun, 1);
  run->sc = sc;
  FabRunOpts opts;
  memset(&opts, 0, sizeof opts);
  opts.keep_flows = true; /* fabsim_run_flow reads them */
  run->status = fab_run(sc, &opts, &run->res) ? 1 : 0;
  return run;
}

int fabsim_run_status(const FabsimRun *run) { return run ? run->status : 1; }

const char *fabsim_run_failure(const FabsimRun *run) {
  if (!run) return "no run";
  if (run->status == 0) return NULL;
  return run->res.failure ? run->res.failure : "run failed";
}

double fabsim_run_number(const FabsimRun *run, const char *field) {
  double v;
  if (!run || !field || !*field || !fab_fields_lookup(&fab_results_table, &run->res, field, &v)) return NAN;
  return v;
}

char *fabsim_run_json(const FabsimRun *run) {
  if (!run) return NULL;
  return fab_json_summary(&run->res);
}

size_t fabsim_run_flows(const FabsimRun *run) { return run ? run->res.n_flows : 0; }

int fabsim_run_flow(const FabsimRun *run, size_t i, uint32_t *src, uint32_t *dst, uint64_t *bytes,
                    double *start_s, double *end_s) {
  if (!run || i >= run->res.n_flows) return 0;
  const FabFlowRec *f = &run->res.flows[i];
  if (src) *src = f->src;
  if (dst) *dst = f->dst;
  if (bytes) *bytes = f->bytes;
  if (start_s) *start_s = (double)f->start / 1e12;
  if (end_s) *end_s = f->end ? (double)f->end / 1e12 : NAN;
  return 1;
}

size_t fabsim_run_collectives(const FabsimRun *run) { return run ? run->res.n_colls : 0; }

int fabsim_run_collective(const FabsimRun *run, size_t i, const char **op, const char **algorithm,
                          uint64_t *bytes, uint32_t *ranks, double *time_s, double *busbw_GBps) {
  if (!run || i >= run->res.n_colls) return 0;
  const FabCollRec *c = &run->res.colls[i];
  if (op) *op = c->op;
  if (algorithm) *algorithm = c->algorithm;
  if (bytes) *bytes = c->bytes;
  if (ranks) *ranks = c->ranks;
  if (time_s) *time_s = c->time_s;
  if (busbw_GBps) *busbw_GBps = c->busbw_GBps;
  return 1;
}

int fabsim_run_write_hdf5(const FabsimRun *run, const char *path, char **err) {
  if (!run || !path) {
    set_err(err, "fabsim_run_write_hdf5: no run or path");
    return 0;
  }
  GError *e = NULL;
  if (!fab_h5_write(&run->res, path, &e)) {
    set_err(err, e ? e->message : "cannot write HDF5");
    if (e) g_error_free(e);
    return 0;
  }
  return 1;
}

void fabsim_run_free(FabsimRun *run) {
  if (!run) return;
  fab_results_clear(&run->res);
  fab_scenario_free(run->sc);
  g_free(run);
}

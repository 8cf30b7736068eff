/* libfabsim: fabsim as a library, see fabsim.h */
#include "tools/fabsim.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/h5out.h"
#include "sim/json.h"
#include "tools/scenario.h"

#ifndef FABSIM_VERSION
#define FABSIM_VERSION "0.1.0"
#endif

struct FabsimScenario {
  char *path; /* a file scenario, or NULL */
  char *text; /* a string scenario's YAML */
  char *name; /* its name in error locations */
  GPtrArray *sets; /* char *, "key=value", NULL-terminated */
};

struct FabsimRun {
  FabScenario *sc; /* owns the strings res points into */
  FabResults res;
  int status;
  char *json;
};

const char *fabsim_version(void) { return FABSIM_VERSION; }

void fabsim_free(void *p) { g_free(p); }

static void set_err(char **err, const char *msg) {
  if (err) *err = g_strdup(msg);
}

/* Replace every occurrence of `from` in `s` by `to`. Transfer full. */
static char *replace_all(const char *s, const char *from, const char *to) {
  GString *out = g_string_new(NULL);
  size_t n = strlen(from);
  const char *p = s, *q;
  while (n && (q = strstr(p, from))) {
    g_string_append_len(out, p, q - p);
    g_string_append(out, to);
    p = q + n;
  }
  g_string_append(out, p);
  return g_string_free(out, FALSE);
}

/* Load the scenario with its overrides plus `extra` (may be NULL). A string
** scenario goes through a temporary file named after `name` in a private
** temporary directory (so the default scenario name is `name`), removed
** before returning; error locations then name `name`. */
static FabScenario *load(const FabsimScenario *s, const char *extra, char **err) {
  GPtrArray *sets = g_ptr_array_new();
  for (guint i = 0; i < s->sets->len; i++) g_ptr_array_add(sets, g_ptr_array_index(s->sets, i));
  if (extra) g_ptr_array_add(sets, (gpointer)extra);
  g_ptr_array_add(sets, NULL);
  GError *e = NULL;
  FabScenario *sc = NULL;
  if (s->path) {
    sc = fab_scenario_load(s->path, (const char *const *)sets->pdata, &e);
    if (!sc) set_err(err, e->message);
  } else {
    char *dir = g_dir_make_tmp("libfabsim-XXXXXX", &e);
    if (!dir) {
      set_err(err, e->message);
    } else {
      char *base = g_path_get_basename(s->name);
      if (!*base || strcmp(base, ".") == 0 || strcmp(base, "/") == 0 || strcmp(base, "..") == 0) {
        g_free(base);
        base = g_strdup("scenario");
      }
      char *tmp = g_build_filename(dir, base, NULL);
      if (!g_file_set_contents(tmp, s->text, -1, &e)) {
        set_err(err, e->message);
      } else {
        sc = fab_scenario_load(tmp, (const char *const *)sets->pdata, &e);
        if (!sc && err) *err = replace_all(e->message, tmp, s->name);
        g_unlink(tmp);
      }
      g_rmdir(dir);
      g_free(tmp);
      g_free(base);
      g_free(dir);
    }
  }
  if (e) g_error_free(e);
  g_ptr_array_free(sets, TRUE);
  return sc;
}

static FabsimScenario *scenario_new(const char *path, const char *text, const char *name, char **err) {
  FabsimScenario *s = g_new0(FabsimScenario, 1);
  s->path = g_strdup(path);
  s->text = g_strdup(text);
  s->name = g_strdup(name);
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
  run->status = fab_scenario_run(sc, &opts, &run->res) ? 1 : 0;
  run->json = fab_json_summary(&run->res);
  return run;
}

int fabsim_run_status(const FabsimRun *run) { return run ? run->status : 1; }

const char *fabsim_run_failure(const FabsimRun *run) {
  if (!run) return "no run";
  if (run->status == 0) return NULL;
  return run->res.failure ? run->res.failure : "run failed";
}

/* A number (or a boolean) of the summary by dotted path; NaN if absent. */
static double json_number(const char *json, const char *field) {
  const char *p = fab_json_value(json, field);
  if (!p) return NAN;
  if (*p == '-' || (*p >= '0' && *p <= '9')) {
    char *end;
    double v = g_ascii_strtod(p, &end);
    return end == p ? NAN : v;
  }
  if (strncmp(p, "true", 4) == 0) return 1;
  if (strncmp(p, "false", 5) == 0) return 0;
  return NAN;
}

double fabsim_run_number(const FabsimRun *run, const char *field) {
  if (!run || !field || !*field) return NAN;
  return json_number(run->json, field);
}

char *fabsim_run_json(const FabsimRun *run) { return run ? g_strdup(run->json) : NULL; }

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
  const struct FabCollRec *c = &run->res.colls[i];
  if (op) *op = c->op;
  if (algorithm) *algorithm = c->algorithm;
  if (bytes) *bytes = c->bytes;
  if (ranks) *ranks = c->ranks;
  if (time_s) *time_s = c->end ? (double)(c->end - c->start) / 1e12 : NAN;
  if (busbw_GBps) { /* as the JSON summary states it (NaN when it has none) */
    char key[64];
    g_snprintf(key, sizeof key, "collectives.%zu.busbw_GBps", i);
    *busbw_GBps = c->end ? json_number(run->json, key) : NAN;
  }
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
  g_free((char *)run->res.failure);
  fab_results_clear(&run->res);
  g_free(run->json);
  fab_scenario_free(run->sc);
  g_free(run);
}

/* fabsim: the command line. See README.md and SCENARIO.md for the contract.
** Exit status: 0 success, 1 the simulation ran but failed, 2 bad input or usage. */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include "sim/h5out.h"
#include "sim/json.h"
#include "tools/cmds.h"
#include "tools/nccltests.h"
#include "tools/scenario.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2

static const char usage_main[] =
  "usage: fabsim COMMAND [ARGS]\n"
  "\n"
  "Packet-level simulator of AI training fabrics.\n"
  "\n"
  "commands:\n"
  "  run [SCENARIO]        simulate a scenario (the built-in quickstart if none)\n"
  "  validate SCENARIO     check a scenario without running it\n"
  "  sweep SCENARIO --set KEY=V1,V2,...   run a grid of variants in parallel (CSV + HDF5)\n"
  "  plot RESULT.h5        draw a run's or a sweep's results with gnuplot\n"
  "  compare SCENARIO MEASURED.log   a measured nccl-tests log against the same sweep simulated\n"
  "\n"
  "options:\n"
  "  -h, --help            this help (also: fabsim COMMAND --help)\n"
  "  --version             print the version\n"
  "\n"
  "exit status: 0 success, 1 the simulation ran but failed, 2 bad input or usage\n";

static const char usage_run[] =
  "usage: fabsim run [SCENARIO] [--json] [--set KEY=VALUE]... [--seed N] [--hdf5 PATH]\n"
  "\n"
  "Simulate SCENARIO (a YAML file; the built-in quickstart when omitted).\n"
  "\n"
  "  --json             print the JSON summary on stdout instead of the report\n"
  "  --set KEY=VALUE    override a scenario key, e.g. --set fabric.switch.buffer=32MiB\n"
  "  --seed N           the same as --set seed=N\n"
  "  --hdf5 PATH        write the HDF5 results to PATH (overrides output.hdf5)\n"
  "  --no-progress      no progress line on stderr (it is shown only on a terminal)\n";

static const char usage_validate[] =
  "usage: fabsim validate SCENARIO [--set KEY=VALUE]... [--seed N] [--explain]\n"
  "\n"
  "Load and check SCENARIO as `run` would, without simulating it. With\n"
  "--explain, print what it expands to (topology, rates, headers, flows).\n";

static int usage_error(const char *usage, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static int usage_error(const char *usage, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("fabsim: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputs("\n\n", stderr);
  fputs(usage, stderr);
  va_end(ap);
  return EXIT_USAGE;
}

typedef struct Args {
  const char *scenario;
  GPtrArray *sets; /* char*, NULL-terminated when used */
  gboolean json, explain, no_progress;
  const char *hdf5;
} Args;

/* Parse the arguments of run / validate. Returns -1 to go on, else an exit status. */
static int parse_args(int argc, char **argv, const char *usage, gboolean is_run, Args *a) {
  for (int i = 0; i < argc; i++) {
    const char *s = argv[i];
    const char *val = NULL;
    if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
      fputs(usage, stdout);
      return 0;
    } else if (!strcmp(s, "--set") || !strncmp(s, "--set=", 6)) {
      if (s[5] == '=') val = s + 6;
      else if (i + 1 < argc) val = argv[++i];
      else return usage_error(usage, "--set needs KEY=VALUE");
      if (!strchr(val, '=')) return usage_error(usage, "--set %s: expected KEY=VALUE", val);
      g_ptr_array_add(a->sets, g_strdup(val));
    } else if (!strcmp(s, "--seed") || !strncmp(s, "--seed=", 7)) {
      if (s[6] == '=') val = s + 7;
      else if (i + 1 < argc) val = argv[++i];
      else return usage_error(usage, "--seed needs a number");
      char *end;
      errno = 0;
      unsigned long long v = strtoull(val, &end, 10);
      if (!*val || *end || errno || val[0] == '-')
        return usage_error(usage, "--seed %s: expected a non-negative integer", val);
      g_ptr_array_add(a->sets, g_strdup_printf("seed=%llu", v));
    } else if (is_run && (!strcmp(s, "--hdf5") || !strncmp(s, "--hdf5=", 7))) {
      if (s[6] == '=') val = s + 7;
      else if (i + 1 < argc) val = argv[++i];
      else return usage_error(usage, "--hdf5 needs a path");
      if (!*val) return usage_error(usage, "--hdf5 needs a path");
      a->hdf5 = val;
    } else if (is_run && !strcmp(s, "--json")) {
      a->json = TRUE;
    } else if (is_run && !strcmp(s, "--no-progress")) {
      a->no_progress = TRUE;
    } else if (!is_run && !strcmp(s, "--explain")) {
      a->explain = TRUE;
    } else if (s[0] == '-' && s[1]) {
      return usage_error(usage, "unknown option '%s'", s);
    } else if (!a->scenario) {
      a->scenario = s;
    } else {
      return usage_error(usage, "more than one scenario given ('%s' and '%s')", a->scenario, s);
    }
  }
  g_ptr_array_add(a->sets, NULL);
  return -1;
}

static FabScenario *load(const Args *a) {
  GError *err = NULL;
  FabScenario *sc = fab_scenario_load(a->scenario, (const char *const *)a->sets->pdata, &err);
  if (!sc) {
    fprintf(stderr, "fabsim: %s\n", err->message);
    g_error_free(err);
  }
  return sc;
}

static void report(const FabResults *r, const char *hdf5, FILE *out) {
  uint64_t done = 0, bytes = 0;
  for (size_t i = 0; i < r->n_flows; i++) {
    done += r->flows[i].end != 0;
    bytes += r->flows[i].bytes;
  }
  fprintf(out, "fabsim %s: %s (seed %" G_GUINT64_FORMAT ")\n", r->version, r->scenario, r->seed);
  fprintf(out, "  fabric      %s, %u endpoints\n", r->topology, r->endpoints);
  fprintf(out, "  flows       %" G_GUINT64_FORMAT "/%zu completed, %" G_GUINT64_FORMAT " bytes\n", done, r->n_flows,
          bytes);
  fprintf(out, "  fct         p50 %.3f us, p99 %.3f us, max %.3f us\n", fab_results_fct_percentile(r, 50) * 1e6,
          fab_results_fct_percentile(r, 99) * 1e6, fab_results_fct_percentile(r, 100) * 1e6);
  fprintf(out, "  sim time    %.3f us\n", fab_time_to_s(r->sim_time) * 1e6);
  fprintf(out, "  network     %" G_GUINT64_FORMAT " drops, %" G_GUINT64_FORMAT " retransmits, max queue %"
          G_GUINT64_FORMAT " B\n", r->drops, r->retransmits, r->max_queue_bytes);
  fprintf(out, "  engine      %" G_GUINT64_FORMAT " events, %" G_GUINT64_FORMAT " packet hops in %.3f s"
          " (%.2f M events/s, %.2f M hops/s)\n", r->events, r->packet_hops, r->wall_s,
          r->wall_s > 0 ? (double)r->events / r->wall_s / 1e6 : 0,
          r->wall_s > 0 ? (double)r->packet_hops / r->wall_s / 1e6 : 0);
  for (size_t j = 0; r->n_jobs > 1 && j < r->n_jobs; j++) {
    const struct FabJobRec *jr = &r->jobs[j];
    fprintf(out, "  job         %s (%s, %u ranks): %u/%u flows, %.3f us\n", jr->name, jr->kind, jr->ranks,
            jr->completed, jr->flows, jr->end ? fab_time_to_s(jr->end - jr->start) * 1e6 : NAN);
  }
  size_t shown = 0;
  for (size_t i = 0; i < r->n_colls; i++) { /* a few collectives by themselves; nccl-tests has its table */
    const struct FabCollRec *c = &r->colls[i];
    if ((c->tag && g_str_has_prefix(c->tag, "nccl-tests")) || r->n_steps || r->n_colls > 8) continue;
    double t = c->end ? fab_time_to_s(c->end - c->start) : NAN, alg = (double)c->bytes / t / 1e9;
    fprintf(out, "  collective  %s %" G_GUINT64_FORMAT " B on %u ranks, %s/%s x %u channels: %.3f us, algbw %.2f GB/s, "
            "busbw %.2f GB/s\n", c->op, c->bytes, c->ranks, c->algorithm, c->protocol, c->channels, t * 1e6, alg,
            alg * fab_busbw_factor(c->op, c->ranks));
    shown++;
  }
  if (!shown && r->n_colls && !r->n_steps) fprintf(out, "  collectives %zu\n", r->n_colls);
  for (size_t j = 0; j < r->n_jobs; j++) { /* training: the step report, averaged over steps and ranks */
    double n = 0, step = 0, comp = 0, exp = 0, ovl = 0, bub = 0;
    for (size_t k = 0; k < r->n_steps; k++) {
      const struct FabStepRec *st = &r->steps[k];
      if (st->job != j) continue;
      n++;
      step += fab_time_to_s(st->end - st->start);
      comp += st->compute_s;
      exp += st->exposed_comm_s;
      ovl += st->overlap_s;
      bub += st->bubble_s;
    }
    if (!n) continue;
    fprintf(out, "  step        %s: %.3f ms per step (%.0f steps): compute %.3f ms, exposed communication %.3f ms, "
            "overlapped %.3f ms, pipeline bubble %.3f ms (%.1f%%)\n", r->jobs[j].name, step / n * 1e3, n,
            comp / n * 1e3, exp / n * 1e3, ovl / n * 1e3, bub / n * 1e3, step > 0 ? bub / step * 100 : 0);
    GString *by = g_string_new(NULL);
    GHashTable *at = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL); /* "tag op" -> index + 1 */
    struct Sum {
      size_t first, cnt;
      double t;
    } *sums = NULL;
    size_t nk = 0;
    for (size_t i = 0; i < r->n_colls; i++) {
      const struct FabCollRec *c = &r->colls[i];
      if (c->job != j) continue;
      char *key = g_strdup_printf("%s %s", c->tag ? c->tag : "-", c->op);
      guint k = GPOINTER_TO_UINT(g_hash_table_lookup(at, key));
      if (!k) {
        sums = g_renew(struct Sum, sums, nk + 1);
        sums[nk] = (struct Sum){i, 0, 0};
        k = (guint)++nk;
        g_hash_table_insert(at, key, GUINT_TO_POINTER(k));
      } else {
        g_free(key);
      }
      sums[k - 1].cnt++;
      sums[k - 1].t += c->end ? fab_time_to_s(c->end - c->start) : 0;
    }
    for (size_t k = 0; k < nk; k++) {
      const struct FabCollRec *c = &r->colls[sums[k].first];
      g_string_append_printf(by, "%s%s %zu x %s (%.3f ms summed)", by->len ? ", " : "", c->tag ? c->tag : c->op,
                             sums[k].cnt, c->op, sums[k].t * 1e3);
    }
    g_free(sums);
    g_hash_table_destroy(at);
    fprintf(out, "  collectives %s\n", by->str);
    g_string_free(by, TRUE);
  }
  if (hdf5) fprintf(out, "  hdf5        %s\n", hdf5);
  if (r->failure) fprintf(out, "  FAILED      %s\n", r->failure);
}

/* The nccl-tests tables of the collectives tagged "nccl-tests", as the real
** tool prints them (the type named as workload.dtype names it). */
static void nccltests_report(const FabScenario *sc, const FabResults *r, FILE *out) {
  const char *dtype = fab_cfg_scalar(fab_cfg_get(fab_cfg_get(fab_cfg_root(sc->cfg), "workload"), "dtype"));
  GPtrArray *tables = fab_nccltests_from_results(r, dtype);
  for (guint i = 0; i < tables->len; i++) {
    char *s = fab_nccltests_format(tables->pdata[i]);
    fprintf(out, "\n%s", s);
    g_free(s);
  }
  g_ptr_array_free(tables, TRUE);
}

static int cmd_run(int argc, char **argv) {
  Args a = {0};
  a.sets = g_ptr_array_new_with_free_func(g_free);
  int rc = parse_args(argc, argv, usage_run, TRUE, &a);
  if (rc >= 0) goto out;
  FabScenario *sc = load(&a);
  if (!sc) {
    rc = EXIT_USAGE;
    goto out;
  }
  if (a.hdf5) sc->hdf5 = a.hdf5;
  FabRunOpts opts = {.progress = !a.no_progress && isatty(STDERR_FILENO) && !a.json};
  FabResults res;
  rc = fab_scenario_run(sc, &opts, &res);
  if (sc->hdf5) {
    GError *err = NULL;
    if (!fab_h5_write(&res, sc->hdf5, &err)) {
      fprintf(stderr, "fabsim: %s\n", err->message);
      g_error_free(err);
      rc = EXIT_FAILED;
      goto done;
    }
  }
  if (a.json) {
    char *js = fab_json_summary(&res);
    fputs(js, stdout);
    g_free(js);
  } else {
    report(&res, sc->hdf5, stdout);
    nccltests_report(sc, &res, stdout);
  }
  if (res.failure) fprintf(stderr, "fabsim: run failed: %s\n", res.failure);
done:
  g_free((char *)res.failure);
  fab_results_clear(&res);
  fab_scenario_free(sc);
out:
  g_ptr_array_free(a.sets, TRUE);
  return rc;
}

static int cmd_validate(int argc, char **argv) {
  Args a = {0};
  a.sets = g_ptr_array_new_with_free_func(g_free);
  int rc = parse_args(argc, argv, usage_validate, FALSE, &a);
  if (rc >= 0) goto out;
  if (!a.scenario) {
    rc = usage_error(usage_validate, "validate needs a SCENARIO file");
    goto out;
  }
  FabScenario *sc = load(&a);
  if (!sc) {
    rc = EXIT_USAGE;
    goto out;
  }
  if (a.explain) {
    char *s = fab_scenario_explain(sc);
    fputs(s, stdout);
    g_free(s);
  } else {
    printf("%s: ok (%s, %u flow%s)\n", a.scenario, sc->topology, fab_dag_flows(sc->dag), fab_dag_flows(sc->dag) == 1 ? "" : "s");
  }
  fab_scenario_free(sc);
  rc = 0;
out:
  g_ptr_array_free(a.sets, TRUE);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage_error(usage_main, "no command given");
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    fputs(usage_main, stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    printf("fabsim %s\n", FABSIM_VERSION);
    return 0;
  }
  if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2);
  if (!strcmp(cmd, "validate")) return cmd_validate(argc - 2, argv + 2);
  if (!strcmp(cmd, "sweep")) return fab_cmd_sweep(argc - 2, argv + 2, argv[0]);
  if (!strcmp(cmd, "plot")) return fab_cmd_plot(argc - 2, argv + 2);
  if (!strcmp(cmd, "compare")) return fab_cmd_compare(argc - 2, argv + 2);
  return usage_error(usage_main, "unknown command '%s'", cmd);
}

/* fabsim: the command line. See README.md for the contract.
** Exit status: 0 success, 1 the simulation ran but failed, 2 bad input or usage. */
#include <fcntl.h>
#include <glib.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "args.h"
#include "cmds.h"
#include "mpi_net.h"
#include "sim/heap.h"
#include "tools/libfabsim/driver.h"
#include "tools/libfabsim/h5out.h"
#include "tools/libfabsim/perfetto.h"
#include "topologies/failures.h"
#include "tools/libfabsim/json.h"
#include "tools/libfabsim/partition.h"
#include "tools/libfabsim/report.h"
#include "tools/libfabsim/scenario.h"

enum {
  RUN_JSON, RUN_HDF5, RUN_NO_PROGRESS, RUN_EXPLAIN, RUN_MAX_MEMORY, RUN_PARTITION, RUN_THREADS, RUN_PERFETTO,
  RUN_PROGRESS_FD
};

#define MAX_MEMORY_OPT                                                                                             \
  {"--max-memory", 0, FAB_OPT_VALUE, RUN_MAX_MEMORY, "SIZE", "a size such as 8GiB", 0, 0,                           \
   "refuse a scenario estimated to need more memory (default: 3/4 of the machine's)"}

static const FabOpt run_opts[] = {
  {"--json", 0, FAB_OPT_FLAG, RUN_JSON, NULL, NULL, 0, 0, "print the JSON summary on stdout instead of the report"},
  {"--set", 0, FAB_OPT_SET, 0, "KEY=VALUE", "KEY=VALUE", 0, 0, "override a scenario key, e.g. --set fabric.switch.buffer=32MiB"},
  {"--seed", 0, FAB_OPT_SEED, 0, "N", "a number", 0, 0, "the same as --set seed=N"},
  {"--hdf5", 0, FAB_OPT_VALUE, RUN_HDF5, "PATH", "a path", 0, 0, "write the HDF5 results to PATH (overrides output.hdf5)"},
  {"--perfetto", 0, FAB_OPT_VALUE, RUN_PERFETTO, "PATH", "a path", 0, 0,
   "write the timeline to PATH as a Perfetto / Chrome trace (JSON; overrides output.perfetto)"},
  {"--no-progress", 0, FAB_OPT_FLAG, RUN_NO_PROGRESS, NULL, NULL, 0, 0,
   "no progress line on stderr (it is shown only on a terminal)"},
  {"--progress-fd", 0, FAB_OPT_UINT, RUN_PROGRESS_FD, "FD", "an open file descriptor from 1", 1, 1048576,
   "write progress records to file descriptor FD, a line each (how fabsim sweep follows its points)"},
  {"--threads", 0, FAB_OPT_UINT, RUN_THREADS, "N", "a number of threads from 1 to 255", 1, 255,
   "spread the run over N partitions of the fabric, a thread each (same results; see README)"},
  MAX_MEMORY_OPT,
  {NULL},
};

static const FabCmd run_cmd = {
  "run", "simulate a scenario (the built-in quickstart if none)", "[SCENARIO]", 0, 1, NULL, "scenario",
  "Simulate SCENARIO (a YAML file; the built-in quickstart when omitted).", run_opts, NULL,
};

static const FabOpt validate_opts[] = {
  {"--set", 0, FAB_OPT_SET, 0, "KEY=VALUE", "KEY=VALUE", 0, 0, "override a scenario key"},
  {"--seed", 0, FAB_OPT_SEED, 0, "N", "a number", 0, 0, "the same as --set seed=N"},
  {"--explain", 0, FAB_OPT_FLAG, RUN_EXPLAIN, NULL, NULL, 0, 0,
   "print what it expands to (topology, rates, headers, flows, collectives)"},
  {"--partition", 0, FAB_OPT_UINT, RUN_PARTITION, "N", "a number of ranks from 1 to 65536", 1, 65536,
   "print how a run over N processes would cut the fabric: the ranks, the cut, its lookahead"},
  MAX_MEMORY_OPT,
  {NULL},
};

static const FabCmd validate_cmd = {
  "validate", "check a scenario without running it", "SCENARIO", 1, 1, "validate needs a SCENARIO file", "scenario",
  "Load and check SCENARIO as `run` would, without simulating it.", validate_opts, NULL,
};

/* --max-memory SIZE into the process's limit; FALSE after a usage message. */
static gboolean take_max_memory(const FabCmd *cmd, const FabArgs *a) {
  const char *v = a->value[RUN_MAX_MEMORY];
  if (!v) return TRUE;
  uint64_t bytes = 0;
  GError *e = NULL;
  if (!fab_parse_size(v, &bytes, &e) || bytes < (1u << 20)) {
    fab_args_error(cmd, "--max-memory %s: expected a size of at least 1MiB, such as 8GiB%s%s", v, e ? ": " : "",
                   e ? e->message : "");
    if (e) g_error_free(e);
    return FALSE;
  }
  fab_scenario_set_mem_limit(bytes);
  return TRUE;
}

static FabScenario *load(const char *path, const FabArgs *a) {
  GError *err = NULL;
  FabScenario *sc = fab_scenario_load(path, fab_args_sets(a), &err);
  if (!sc) {
    fprintf(stderr, "fabsim: %s\n", err->message);
    g_error_free(err);
  }
  for (guint i = 0; sc && i < sc->warnings->len; i++)
    fprintf(stderr, "fabsim: warning: %s\n", (const char *)g_ptr_array_index(sc->warnings, i));
  return sc;
}

/* Whether the output files (HDF5, Perfetto trace) can be written, before
** anything runs; else the message (at output.KEY's place in the scenario,
** or at --KEY) and FALSE. */
static gboolean check_out(const FabScenario *sc, const FabArgs *a, const char *key, const char *path, int slot,
                          const char *what) {
  GError *err = NULL;
  if (!path || fab_out_check_target(path, what, &err)) return TRUE;
  const FabCfgNode *at = fab_cfg_get(fab_cfg_get(fab_cfg_root(sc->cfg), "output"), key);
  if (a->value[slot] || !at) fprintf(stderr, "fabsim: --%s: %s\n", key, err->message);
  else fprintf(stderr, "fabsim: %s: output.%s: %s\n", fab_cfg_where(at), key, err->message);
  g_error_free(err);
  return FALSE;
}

static gboolean check_outputs(const FabScenario *sc, const FabArgs *a) {
  return check_out(sc, a, "hdf5", sc->hdf5, RUN_HDF5, "HDF5 results") &&
         check_out(sc, a, "perfetto", sc->perfetto, RUN_PERFETTO, "the Perfetto trace");
}

/* Write what `run` prints and stores; the exit status. A failed run writes
** no file. */
static gboolean write_file(gboolean (*write)(const FabResults *, const char *, GError **), const FabResults *res,
                           const char *path) {
  GError *err = NULL;
  if (!path || write(res, path, &err)) return TRUE;
  fprintf(stderr, "fabsim: %s\n", err->message);
  g_error_free(err);
  return FALSE;
}

static int outputs(const FabScenario *sc, const FabArgs *a, const FabResults *res, int rc) {
  if (rc == 0 && !(write_file(fab_h5_write, res, sc->hdf5) && write_file(fab_perfetto_write, res, sc->perfetto)))
    return EXIT_FAILED;
  if (a->flag[RUN_JSON]) {
    char *js = fab_json_summary(res);
    fputs(js, stdout);
    g_free(js);
  } else {
    fab_report_text(sc, res, rc == 0 ? sc->hdf5 : NULL, stdout);
  }
  for (size_t i = sc->warnings->len; i < res->n_warnings; i++) /* what the run itself had to give up */
    fprintf(stderr, "fabsim: warning: %s\n", res->warnings[i]);
  if (res->failure) fprintf(stderr, "fabsim: run failed: %s\n", res->failure);
  return rc;
}

/* Started as one of several MPI ranks (mpirun -np N, N > 1)? Then the run
** is spread over them: the name of the variable that told, or NULL. */
static const char *mpi_world(void) {
  static const char *const envs[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
  for (size_t i = 0; i < G_N_ELEMENTS(envs); i++) {
    const char *v = getenv(envs[i]);
    if (v && atol(v) > 1) return envs[i];
  }
  return NULL;
}

/* One of several MPI ranks: MPI started and its transport in *net, the
** others' output (but the first's) silenced; false after why not. */
static bool join_world(const char *world, const FabArgs *a, FabParNet *net) {
  char *why = NULL;
  if (a->given[RUN_THREADS] && a->num[RUN_THREADS] > 1) {
    fprintf(stderr, "fabsim run: --threads and several MPI ranks (%s=%s) do not go together yet: one partition "
            "per process\n", world, getenv(world));
    return false;
  }
  if (!fab_mpi_start(NULL, NULL, net, &why)) {
    fprintf(stderr, "fabsim run: started as one of %s MPI ranks (%s), but %s\n", getenv(world), world, why);
    g_free(why);
    return false;
  }
  if (net->n < 2) { /* N copies would each run the whole scenario */
    fprintf(stderr, "fabsim run: started as one of %s MPI ranks (%s), but MPI sees a world of one process: "
            "mpirun and the MPI fabsim was built with differ (or the variable was set by hand); each rank would "
            "run the whole scenario. Use the mpirun of the MPI fabsim was built with; a sweep's points spread "
            "over ranks with `mpirun -np N fabsim sweep ...` or `--shard I/N`; `fabsim validate SCENARIO "
            "--partition N` shows the cut a run would use\n", getenv(world), world);
    fab_mpi_end();
    return false;
  }
  if (net->self != 0) { /* the first process prints the results and every message */
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) return true;
  }
  return true;
}

static int cmd_run(int argc, char **argv) {
  FabArgs a;
  int rc = fab_args_parse(&run_cmd, argc, argv, &a);
  if (rc < 0 && !take_max_memory(&run_cmd, &a)) rc = EXIT_USAGE;
  if (rc < 0 && a.given[RUN_PROGRESS_FD] && fcntl((int)a.num[RUN_PROGRESS_FD], F_GETFL) < 0) {
    fprintf(stderr, "fabsim run: --progress-fd %" G_GUINT64_FORMAT ": not an open file descriptor\n",
            (guint64)a.num[RUN_PROGRESS_FD]);
    rc = EXIT_USAGE;
  }
  const char *world = rc < 0 ? mpi_world() : NULL;
  FabParNet net = {0};
  bool mpi = false;
  if (world) {
    mpi = join_world(world, &a, &net);
    if (!mpi) rc = EXIT_USAGE;
  }
  if (rc < 0) {
    FabScenario *sc = load(fab_args_pos(&a, 0), &a);
    if (!sc) {
      rc = EXIT_USAGE;
    } else {
      if (a.value[RUN_HDF5]) sc->hdf5 = a.value[RUN_HDF5];
      if (a.value[RUN_PERFETTO]) sc->perfetto = a.value[RUN_PERFETTO];
      if (!check_outputs(sc, &a)) {
        fab_scenario_free(sc);
        fab_args_clear(&a);
        if (mpi) fab_mpi_end();
        return EXIT_USAGE;
      }
      FabRunOpts opts = {.progress = !a.flag[RUN_NO_PROGRESS] && isatty(STDERR_FILENO) && !a.flag[RUN_JSON],
                         .progress_fd = a.given[RUN_PROGRESS_FD] ? (int)a.num[RUN_PROGRESS_FD] : 0,
                         .threads = a.given[RUN_THREADS] ? (uint32_t)a.num[RUN_THREADS] : 1,
                         .net = mpi ? &net : NULL};
      FabResults res;
      rc = fab_run(sc, &opts, &res);
      rc = res.elsewhere ? 0 : outputs(sc, &a, &res, rc); /* the first process tells */
      fab_results_clear(&res);
      fab_scenario_free(sc);
    }
  }
  if (mpi) fab_mpi_end();
  fab_args_clear(&a);
  return rc;
}

/* validate --partition N: the cut a run over N processes would use, or
** FALSE after the reason it cannot (nothing printed on stdout). */
static gboolean print_partition(const FabScenario *sc, uint32_t n) {
  FabTopology *t = fab_topology_build(&sc->fabric);
  fab_failures_as_built(t, &sc->fabric);
  FabPartition p;
  GError *err = NULL;
  gboolean ok = fab_partition_make_for(t, sc->dag, n, &p, &err);
  if (ok) {
    FabPartDeps dp;
    bool unfolds = sc->dag->more != NULL;
    char *why = fab_run_threads_check(sc, t, &p, &dp);
    char *s = fab_partition_report(t, &p, &dp, unfolds);
    fputs(s, stdout);
    g_free(s);
    if (why) printf("threads: `fabsim run --threads %u` would run on one thread: %s\n", n, why);
    else printf("threads: `fabsim run --threads %u` runs on this cut, a thread per rank\n", n);
    g_free(why);
    printf("processes: `mpirun -np %u fabsim run` runs %s\n", n, why ? "in the first process alone" : "on this cut, a process per rank");
    fab_partition_clear(&p);
  } else {
    fprintf(stderr, "fabsim validate: %s\n", err->message);
    g_error_free(err);
  }
  fab_topology_free(t);
  return ok;
}

static int cmd_validate(int argc, char **argv) {
  FabArgs a;
  int rc = fab_args_parse(&validate_cmd, argc, argv, &a);
  if (rc < 0 && !take_max_memory(&validate_cmd, &a)) rc = EXIT_USAGE;
  if (rc < 0) {
    FabScenario *sc = load(fab_args_pos(&a, 0), &a);
    if (sc && !check_outputs(sc, &a)) { /* as run would find it */
      fab_scenario_free(sc);
      sc = NULL;
    }
    rc = sc ? 0 : EXIT_USAGE;
    if (sc && a.given[RUN_PARTITION] && !print_partition(sc, (uint32_t)a.num[RUN_PARTITION])) rc = EXIT_USAGE;
    if (sc && rc == 0 && a.flag[RUN_EXPLAIN]) {
      char *s = fab_scenario_explain(sc);
      fputs(s, stdout);
      g_free(s);
    } else if (sc && rc == 0 && !a.given[RUN_PARTITION]) {
      uint32_t n = fab_dag_flows(sc->dag);
      char *mem = sc->mem_bytes >= (1ull << 30) ? g_strdup_printf("; would use about %.1f GB of memory",
                                                                   (double)sc->mem_bytes / 1e9) : g_strdup("");
      if (sc->dag->more) /* a collective made as it runs: the rest is an estimate */
        printf("%s: ok (%s, %u flow%s made before the run, about %.0f more operations as it runs%s)\n",
               fab_args_pos(&a, 0), sc->topology, n, n == 1 ? "" : "s", sc->dag->more_ops, mem);
      else
        printf("%s: ok (%s, %u flow%s%s)\n", fab_args_pos(&a, 0), sc->topology, n, n == 1 ? "" : "s", mem);
      g_free(mem);
    }
    fab_scenario_free(sc);
  }
  fab_args_clear(&a);
  return rc;
}

typedef struct Command {
  const FabCmd *cmd;
  int (*fn)(int argc, char **argv);
} Command;

static const Command commands[] = {
  {&run_cmd, cmd_run},           {&validate_cmd, cmd_validate}, {&fab_sweep_cmd, fab_cmd_sweep},
  {&fab_plot_cmd, fab_cmd_plot}, {&fab_compare_cmd, fab_cmd_compare}, {&fab_calibrate_cmd, fab_cmd_calibrate},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage_main(FILE *out) {
  fputs("usage: fabsim COMMAND [ARGS]\n\nPacket-level simulator of AI training fabrics.\n\ncommands:\n", out);
  for (size_t i = 0; i < NCOMMANDS; i++) {
    char *left = g_strdup_printf("%s %s", commands[i].cmd->name, commands[i].cmd->synopsis);
    fprintf(out, "  %-24s %s\n", left, commands[i].cmd->summary);
    g_free(left);
  }
  fputs("\noptions:\n  -h, --help               this help (also: fabsim COMMAND --help)\n"
        "  --version                print the version\n\n"
        "exit status: 0 success, 1 the simulation ran but failed, 2 bad input or usage\n", out);
}

static int usage_error(const char *msg, const char *arg) {
  fprintf(stderr, "fabsim: %s%s%s\n\n", msg, arg ? arg : "", arg ? "'" : "");
  usage_main(stderr);
  return EXIT_USAGE;
}

int main(int argc, char **argv) {
  fab_heap_hugepages(0, NULL); /* the run's state in 2 MiB pages where the machine allows (sim/heap.h) */
  g_set_prgname(argv[0]);
  if (argc < 2) return usage_error("no command given", NULL);
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    usage_main(stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    printf("fabsim %s\n", FABSIM_VERSION);
    return 0;
  }
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (!strcmp(cmd, commands[i].cmd->name)) return commands[i].fn(argc - 2, argv + 2);
  return usage_error("unknown command '", cmd);
}

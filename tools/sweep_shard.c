/* fabsim sweep's shards: which points this process runs (--shard I/N, or
** an MPI launcher's rank and size), how many at once, the points' numbers
** kept in sweep.key, and gathering what every shard recorded in DIR. See
** sweep.c (the design) and sweep_int.h. */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmds.h"
#include "sweep_int.h"

/* This process's shard: --shard I/N, else an MPI launcher's rank and size
** (Open MPI's OMPI_COMM_WORLD_RANK/SIZE, MPICH's and Intel MPI's
** PMI_RANK/SIZE), else the only one. Returns -1, or an exit status after a
** usage error. */
int fab_sweep__shard(Sweep *w, const char *given) {
  static const char *const envs[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, {"PMI_RANK", "PMI_SIZE"}};
  w->shard = 0;
  w->nshards = 1;
  char *spec = given ? g_strdup(given) : NULL, *from = NULL;
  for (size_t i = 0; !spec && i < G_N_ELEMENTS(envs); i++) {
    const char *r = getenv(envs[i][0]), *n = getenv(envs[i][1]);
    if (r && n) {
      spec = g_strdup_printf("%s/%s", r, n);
      from = g_strdup_printf("%s/%s", envs[i][0], envs[i][1]);
    }
  }
  int rc = -1;
  if (spec) {
    char *slash = strchr(spec, '/'), *e1 = NULL, *e2 = NULL;
    guint64 i = slash ? g_ascii_strtoull(spec, &e1, 10) : 0, n = slash ? g_ascii_strtoull(slash + 1, &e2, 10) : 0;
    gboolean good = slash && g_ascii_isdigit(spec[0]) && e1 == slash && g_ascii_isdigit(slash[1]) && e2 && !*e2 &&
                    n >= 1 && n <= 1000000 && i < n;
    if (!good && from)
      rc = fab_args_error(&fab_sweep_cmd, "%s is '%s': expected a rank below a size (give --shard I/N)", from, spec);
    else if (!good)
      rc = fab_args_error(&fab_sweep_cmd, "--shard '%s': expected I/N, a shard number I below a count N "
                          "(at most 1000000)", spec);
    else
      w->shard = (uint32_t)i, w->nshards = (uint32_t)n;
    if (good && n > 1)
      fprintf(stderr, "fabsim sweep: shard %u of %u%s%s%s: the points whose number mod %u is %u\n", w->shard,
              w->nshards, from ? " (from " : "", from ? from : "", from ? ")" : "", w->nshards, w->shard);
  }
  g_free(spec);
  g_free(from);
  return rc;
}

/* Points run at once by default: the CPUs, shared by the shards on this
** machine when the launcher says how many there are. */
long fab_sweep__default_jobs(const Sweep *w) {
  long cpus = (long)g_get_num_processors(), local = 0;
  const char *per = getenv("SLURM_CPUS_PER_TASK");
  if (w->nshards > 1 && per && atol(per) > 0) return atol(per);
  static const char *const envs[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"};
  for (size_t i = 0; w->nshards > 1 && !local && i < G_N_ELEMENTS(envs); i++)
    if (getenv(envs[i])) local = atol(getenv(envs[i]));
  return local > 0 ? MAX(1, cpus / local) : cpus;
}

/* Take the results the shards recorded (DIR/point-NNNN.csv) into the table:
** returns the points with a result. */
size_t fab_sweep__gather(Sweep *w) {
  size_t nk = w->keys->len, nc = w->cols->len, n_done = 0;
  GPtrArray *rows = g_ptr_array_new_with_free_func(fab_sweep__prev_row_free);
  GHashTable *at = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL); /* values -> point + 1 */
  for (size_t i = 0; i < w->n; i++) g_hash_table_insert(at, fab_sweep__tuple_key(w->pts[i].values, nk), GSIZE_TO_POINTER(i + 1));
  if (fab_sweep__read_points(w, rows)) {
    GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (guint r = 0; r < rows->len; r++) {
      PrevRow *row = rows->pdata[r];
      char *tk = fab_sweep__tuple_key(row->values, nk);
      gpointer v = g_hash_table_lookup(at, tk);
      g_free(tk);
      if (!v || g_hash_table_contains(seen, v)) continue;
      g_hash_table_add(seen, v);
      Point *pt = &w->pts[GPOINTER_TO_SIZE(v) - 1];
      pt->done = TRUE, pt->ok = row->ok, pt->exit = row->exit;
      for (size_t f = 0; f < nc; f++) g_free(pt->num[f]), pt->num[f] = g_strdup(row->num[f]);
    }
    g_hash_table_destroy(seen);
  }
  g_hash_table_destroy(at);
  g_ptr_array_free(rows, TRUE);
  for (size_t i = 0; i < w->n; i++) n_done += w->pts[i].done;
  return n_done;
}

/* The children's environment: ours without an MPI launcher's rank
** variables (a point is one process, not a rank of this sweep's world). */
char **fab_sweep__child_env(void) {
  static const char *const mpi[] = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                                    "OMPI_COMM_WORLD_LOCAL_SIZE", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS",
                                    "MPI_LOCALRANKID"};
  char **env = g_get_environ();
  for (size_t i = 0; i < G_N_ELEMENTS(mpi); i++) env = g_environ_unsetenv(env, mpi[i]);
  return env;
}

/* The points numbered in the sweep.key this command found, as rows without
** a result, into prev (before the table's rows: their numbers come first). */
gboolean fab_sweep__registry_rows(const Sweep *w, GPtrArray *prev) {
  if (!w->old_key) return TRUE;
  size_t nk = w->keys->len, nc = w->cols->len;
  char **lines = g_strsplit(w->old_key, "\n", -1);
  GHashTable *ids = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  GHashTable *tuples = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  gboolean ok = TRUE;
  for (char **l = lines; ok && *l; l++) {
    char *end = NULL;
    if (strncmp(*l, "point ", 6)) continue;
    guint64 id = g_ascii_strtoull(*l + 6, &end, 10);
    char *tk = end && end != *l + 6 && *end == ' ' && g_ascii_isdigit((*l)[6]) ? g_strcompress(end + 1) : NULL;
    char **vals = tk ? g_strsplit(tk, "\x1f", -1) : NULL;
    const char *why = !vals || g_strv_length(vals) != nk ? "not 'point N VALUES' with a value per swept key"
                      : id > G_MAXINT32 ? "a point number out of range"
                      : g_hash_table_contains(ids, &id) ? "a point number given twice"
                      : g_hash_table_contains(tuples, tk) ? "a point given twice" : NULL;
    if (why) { /* written by fabsim only: edited or damaged */
      fprintf(stderr, "fabsim sweep: %s/sweep.key:%td: %s: '%s'; the file is fabsim's record of the points' "
              "numbers (remove the directory, or give another --out, to start again)\n", w->dir, l - lines + 1, why,
              *l);
      g_strfreev(vals);
      g_free(tk);
      ok = FALSE;
      break;
    }
    gint64 *idp = g_new(gint64, 1);
    *idp = (gint64)id;
    g_hash_table_add(ids, idp);
    g_hash_table_add(tuples, tk);
    PrevRow *r = g_new0(PrevRow, 1);
    r->values = vals;
    r->id = id;
    r->num = g_new0(char *, nc + 1);
    for (size_t f = 0; f < nc; f++) r->num[f] = g_strdup("");
    g_ptr_array_add(prev, r);
  }
  g_hash_table_destroy(ids);
  g_hash_table_destroy(tuples);
  g_strfreev(lines);
  return ok;
}

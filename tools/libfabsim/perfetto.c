/* A run's timeline as a Perfetto / Chrome JSON trace. See perfetto.h. */
#include "perfetto.h"
#include <errno.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <unistd.h>
#include "h5out.h"
#include "workloads/dag.h"

/* A span's place: its job, rank and class (0 compute, 1 communication),
** the lane (track) it got, and its index in r->spans. */
typedef struct Slot {
  uint32_t job, rank, cls, lane, i;
} Slot;

static gint slot_order(gconstpointer pa, gconstpointer pb, gpointer results) {
  const Slot *a = pa, *b = pb;
  const FabResults *r = results;
  const FabSpanRec *x = &r->spans[a->i], *y = &r->spans[b->i];
  if (a->job != b->job) return a->job < b->job ? -1 : 1;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  if (a->cls != b->cls) return a->cls < b->cls ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}

/* The first lane free at `start` (its last span ended by then), or a new
** one: greedy interval partitioning, the fewest tracks for spans in start
** order. */
static uint32_t lane_for(GArray *ends, fab_time_t start, fab_time_t end) {
  for (guint k = 0; k < ends->len; k++)
    if (g_array_index(ends, fab_time_t, k) <= start) return g_array_index(ends, fab_time_t, k) = end, k;
  g_array_append_val(ends, end);
  return ends->len - 1;
}

static void put_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}

/* ps as microseconds, exactly. */
static void put_us(FILE *f, fab_time_t ps) { fprintf(f, "%" PRIu64 ".%06" PRIu64, ps / 1000000, ps % 1000000); }

static char *size_name(uint64_t b) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && b && b % 1024 == 0) b /= 1024, u++;
  return g_strdup_printf("%" PRIu64 " %s", b, unit[u]);
}

/* What a collective is called on its tracks: "allreduce 16 MiB (dp)". */
static char *coll_name(const FabCollRec *c) {
  char *sz = size_name(c->bytes);
  char *s = c->tag ? g_strdup_printf("%s %s (%s)", c->op, sz, c->tag) : g_strdup_printf("%s %s", c->op, sz);
  g_free(sz);
  return s;
}

static void meta(FILE *f, const char *what, uint32_t pid, int64_t tid, const char *key, const char *name, int64_t v) {
  fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%u", what, pid);
  if (tid >= 0) fprintf(f, ",\"tid\":%" PRId64, tid);
  fprintf(f, ",\"args\":{\"%s\":", key);
  if (name) put_str(f, name);
  else fprintf(f, "%" PRId64, v);
  fputs("}}", f);
}

/* One complete event; `args` is the inside of its args object (or NULL). */
static void event(FILE *f, const char *name, const char *cat, uint32_t pid, uint32_t tid, fab_time_t t0,
                  fab_time_t t1, const char *args) {
  fputs(",\n{\"ph\":\"X\",\"name\":", f);
  put_str(f, name);
  fprintf(f, ",\"cat\":\"%s\",\"pid\":%u,\"tid\":%u,\"ts\":", cat, pid, tid);
  put_us(f, t0);
  fputs(",\"dur\":", f);
  put_us(f, t1 - t0);
  if (args) fprintf(f, ",\"args\":{%s}", args);
  fputc('}', f);
}

static const char *job_title(const FabResults *r, uint32_t j, char *buf, size_t n) {
  if (j < r->n_jobs) g_snprintf(buf, n, "job %s (%s)", r->jobs[j].name, r->jobs[j].kind);
  else g_snprintf(buf, n, "job %u", j);
  return buf;
}

/* The spans' tracks: each job's steps, then per rank its compute track and
** its communication tracks. */
static void spans(const FabResults *r, FILE *f) {
  Slot *s = g_new(Slot, r->n_spans + 1);
  size_t n = 0;
  for (size_t i = 0; i < r->n_spans; i++) {
    const FabSpanRec *x = &r->spans[i];
    if (x->end < x->start) continue; /* (not finished) */
    s[n++] = (Slot){x->job, x->rank, x->kind != 0, 0, (uint32_t)i};
  }
  g_qsort_with_data(s, (gint)n, sizeof *s, slot_order, (gpointer)r);
  GArray *ends = g_array_new(FALSE, FALSE, sizeof(fab_time_t));
  uint32_t *tid = g_new(uint32_t, n + 1), next = 1, job = UINT32_MAX;
  char buf[64];
  for (size_t a = 0, b; a < n; a = b) { /* one group: (job, rank, class) */
    for (b = a; b < n && s[b].job == s[a].job && s[b].rank == s[a].rank && s[b].cls == s[a].cls; b++) {
      const FabSpanRec *x = &r->spans[s[b].i];
      s[b].lane = lane_for(ends, x->start, x->end);
    }
    if (s[a].job != job) job = s[a].job, next = 1;
    for (guint k = 0; k < ends->len; k++) { /* "rank 3 compute", "rank 3 communication", "... communication 2" */
      const char *what = s[a].cls ? "communication" : "compute";
      if (k) g_snprintf(buf, sizeof buf, "rank %u %s %u", s[a].rank, what, k + 1);
      else g_snprintf(buf, sizeof buf, "rank %u %s", s[a].rank, what);
      meta(f, "thread_name", s[a].job + 1, next + k, "name", buf, 0);
      meta(f, "thread_sort_index", s[a].job + 1, next + k, "sort_index", NULL, next + k);
    }
    for (size_t k = a; k < b; k++) tid[k] = next + s[k].lane;
    next += ends->len;
    g_array_set_size(ends, 0);
  }
  for (size_t k = 0; k < n; k++) {
    const FabSpanRec *x = &r->spans[s[k].i];
    GString *args = g_string_new(NULL);
    g_string_append_printf(args, "\"step\":%u", x->step);
    char *name;
    if (x->kind == 0) {
      name = g_strdup(x->phase < FAB_PHASE_N ? fab_phase_names[x->phase] : "compute");
    } else if (x->coll >= 0 && (size_t)x->coll < r->n_colls) {
      name = coll_name(&r->colls[x->coll]);
      g_string_append_printf(args, ",\"collective\":%d", x->coll);
    } else {
      name = g_strdup("transfer");
    }
    if (x->node != UINT64_MAX) g_string_append_printf(args, ",\"trace_node\":%" PRIu64, x->node);
    event(f, name, x->kind == 0 ? "compute" : x->kind == 1 ? "collective" : "transfer", x->job + 1, tid[k],
          x->start, x->end, args->str);
    g_free(name);
    g_string_free(args, TRUE);
  }
  g_array_free(ends, TRUE);
  g_free(tid);
  g_free(s);
}

/* The collectives' own process: each from first entry to last result. */
static void collectives(const FabResults *r, FILE *f, uint32_t pid) {
  if (!r->n_colls) return;
  meta(f, "process_name", pid, -1, "name", "collectives", 0);
  meta(f, "process_sort_index", pid, -1, "sort_index", NULL, pid);
  uint32_t *idx = g_new(uint32_t, r->n_colls), n = 0;
  for (size_t i = 0; i < r->n_colls; i++)
    if (r->colls[i].end >= r->colls[i].start && r->colls[i].end) idx[n++] = (uint32_t)i;
  /* in start order (they are in workload order, which need not be) */
  for (uint32_t a = 1; a < n; a++) { /* insertion sort: stable, and nearly sorted already */
    uint32_t v = idx[a], b = a;
    for (; b && r->colls[idx[b - 1]].start > r->colls[v].start; b--) idx[b] = idx[b - 1];
    idx[b] = v;
  }
  GArray *ends = g_array_new(FALSE, FALSE, sizeof(fab_time_t));
  uint32_t *lane = g_new(uint32_t, n + 1);
  for (uint32_t k = 0; k < n; k++) lane[k] = lane_for(ends, r->colls[idx[k]].start, r->colls[idx[k]].end);
  for (guint k = 0; k < ends->len; k++) {
    char name[32];
    g_snprintf(name, sizeof name, "collectives %u", k + 1);
    meta(f, "thread_name", pid, k + 1, "name", name, 0);
  }
  for (uint32_t k = 0; k < n; k++) {
    const FabCollRec *c = &r->colls[idx[k]];
    GString *args = g_string_new(NULL);
    g_string_append_printf(args, "\"collective\":%u,\"op\":\"%s\",\"bytes\":%" PRIu64 ",\"ranks\":%u,"
                           "\"algorithm\":\"%s\",\"protocol\":\"%s\",\"channels\":%u,\"job\":%u,\"step\":%u",
                           idx[k], c->op, c->bytes, c->ranks, c->algorithm, c->protocol, c->channels, c->job,
                           c->step);
    if (isfinite(c->busbw_GBps)) g_string_append_printf(args, ",\"busbw_GBps\":%.3f", c->busbw_GBps);
    char *name = coll_name(c);
    event(f, name, "collective", pid, lane[k] + 1, c->start, c->end, args->str);
    g_free(name);
    g_string_free(args, TRUE);
  }
  g_array_free(ends, TRUE);
  g_free(lane);
  g_free(idx);
}

gboolean fab_perfetto_fwrite(const FabResults *r, FILE *f) {
  fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"fabsim_version\":", f);
  put_str(f, r->version);
  fputs(",\"scenario\":", f);
  put_str(f, r->scenario);
  fprintf(f, ",\"seed\":%" PRIu64 "},\n\"traceEvents\":[\n", r->seed);
  /* a first event, so that every other one starts with a comma: the run's whole time */
  fputs("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"args\":{\"name\":\"run\"}}", f);
  event(f, "run", "run", 0, 0, 0, r->sim_time, NULL);
  uint32_t njobs = (uint32_t)r->n_jobs;
  for (size_t i = 0; i < r->n_spans; i++) njobs = MAX(njobs, r->spans[i].job + 1);
  char buf[FAB_FIELD_NAME_LEN + 64];
  for (uint32_t j = 0; j < njobs; j++) {
    meta(f, "process_name", j + 1, -1, "name", job_title(r, j, buf, sizeof buf), 0);
    meta(f, "process_sort_index", j + 1, -1, "sort_index", NULL, j + 1);
  }
  bool any_steps = false;
  for (size_t i = 0; i < r->n_steps; i++) {
    const FabStepRec *st = &r->steps[i];
    if (!st->end || st->end < st->start) continue;
    any_steps = true;
    char name[32], args[32];
    g_snprintf(name, sizeof name, "step %u", st->step);
    g_snprintf(args, sizeof args, "\"step\":%u", st->step);
    event(f, name, "step", st->job + 1, 0, st->start, st->end, args);
  }
  if (any_steps)
    for (uint32_t j = 0; j < njobs; j++) meta(f, "thread_name", j + 1, 0, "name", "steps", 0);
  spans(r, f);
  collectives(r, f, njobs + 1);
  fputs("\n]}\n", f);
  return !ferror(f);
}

gboolean fab_perfetto_write(const FabResults *r, const char *path, GError **err) {
  const char *what = "the Perfetto trace";
  GError *e = NULL;
  if (!fab_out_check_kind(path, what, &e)) { /* again: the path may have changed during the run */
    g_set_error_literal(err, G_FILE_ERROR, G_FILE_ERROR_FAILED, e->message);
    g_error_free(e);
    return FALSE;
  }
  char *dir = g_path_get_dirname(path), *tmp = g_strdup_printf("%s.tmp.%ld", path, (long)getpid());
  gboolean ok = FALSE;
  FILE *f = NULL;
  if (g_mkdir_with_parents(dir, 0777) != 0)
    g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(errno), "%s: cannot write %s: creating directory %s: %s",
                path, what, dir, g_strerror(errno));
  else if (!(f = fopen(tmp, "w")))
    g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(errno), "%s: cannot write %s: %s: %s", path, what, tmp,
                g_strerror(errno));
  else if (!fab_perfetto_fwrite(r, f) || fflush(f) != 0)
    g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(errno), "%s: cannot write %s: %s", path, what,
                g_strerror(errno));
  else
    ok = TRUE;
  if (f && fclose(f) != 0 && ok) {
    g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(errno), "%s: cannot write %s: %s", path, what,
                g_strerror(errno));
    ok = FALSE;
  }
  if (ok && g_rename(tmp, path) != 0) {
    g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(errno), "%s: cannot write %s: renaming %s: %s", path,
                what, tmp, g_strerror(errno));
    ok = FALSE;
  }
  if (!ok && f) g_unlink(tmp);
  g_free(tmp);
  g_free(dir);
  return ok;
}

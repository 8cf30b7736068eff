/* JSON summary writer. See json.h. */
#include "json.h"
#include <glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>

void fab_json_put_str(GString *s, const char *v) {
  g_string_append_c(s, '"');
  for (const unsigned char *p = (const unsigned char *)(v ? v : ""); *p; p++) {
    switch (*p) {
    case '"': g_string_append(s, "\\\""); break;
    case '\\': g_string_append(s, "\\\\"); break;
    case '\n': g_string_append(s, "\\n"); break;
    case '\t': g_string_append(s, "\\t"); break;
    case '\r': g_string_append(s, "\\r"); break;
    default:
      if (*p < 0x20) g_string_append_printf(s, "\\u%04x", *p);
      else g_string_append_c(s, (char)*p);
    }
  }
  g_string_append_c(s, '"');
}

void fab_json_put_num(GString *s, double v) {
  if (!isfinite(v)) {
    g_string_append(s, "null");
    return;
  }
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(buf, sizeof buf, "%.9g", v);
  g_string_append(s, buf);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

double fab_results_fct_percentile(const FabResults *r, double p) {
  uint64_t *v = g_new(uint64_t, r->n_flows ? r->n_flows : 1);
  size_t n = 0;
  for (size_t i = 0; i < r->n_flows; i++)
    if (r->flows[i].end) v[n++] = r->flows[i].end - r->flows[i].start;
  double out = 0;
  if (n) {
    qsort(v, n, sizeof *v, cmp_u64);
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1) rank = 1;
    if (rank > n) rank = n;
    out = fab_time_to_s(v[rank - 1]);
  }
  g_free(v);
  return out;
}

/* A job's training steps: averages over its steps, and totals per collective
** type (op) and purpose (tag) over the whole run of the job. */
static void put_step(GString *s, const FabResults *r, uint32_t job) {
  double n = 0, step = 0, comp = 0, comm = 0, exp = 0, ovl = 0, bub = 0;
  g_string_append(s, "{\"job\": ");
  fab_json_put_str(s, job < r->n_jobs ? r->jobs[job].name : "");
  g_string_append(s, ", \"step_times_s\": [");
  for (size_t k = 0; k < r->n_steps; k++) {
    const struct FabStepRec *st = &r->steps[k];
    if (st->job != job) continue;
    double t = st->end > st->start ? fab_time_to_s(st->end - st->start) : 0;
    if (n > 0) g_string_append(s, ", ");
    fab_json_put_num(s, t);
    n++;
    step += t;
    comp += st->compute_s;
    comm += st->comm_s;
    exp += st->exposed_comm_s;
    ovl += st->overlap_s;
    bub += st->bubble_s;
  }
  g_string_append_printf(s, "], \"steps\": %.0f, \"step_time_s\": ", n);
  fab_json_put_num(s, step / n);
  g_string_append(s, ", \"compute_s\": ");
  fab_json_put_num(s, comp / n);
  g_string_append(s, ", \"comm_s\": ");
  fab_json_put_num(s, comm / n);
  g_string_append(s, ", \"exposed_comm_s\": ");
  fab_json_put_num(s, exp / n);
  g_string_append(s, ", \"overlap_s\": ");
  fab_json_put_num(s, ovl / n);
  g_string_append(s, ", \"bubble_s\": ");
  fab_json_put_num(s, bub / n);
  g_string_append(s, ", \"bubble_fraction\": ");
  fab_json_put_num(s, step > 0 ? bub / step : 0);
  for (int by = 0; by < 2; by++) { /* by_op, by_tag: count, bytes, time summed over the collectives */
    g_string_append(s, by ? ", \"by_tag\": {" : ", \"by_op\": {");
    GPtrArray *seen = g_ptr_array_new();
    for (size_t i = 0; i < r->n_colls; i++) {
      const struct FabCollRec *c = &r->colls[i];
      const char *key = by ? (c->tag ? c->tag : "none") : c->op;
      bool dup = false;
      for (guint k = 0; k < seen->len && !dup; k++) dup = g_str_equal(g_ptr_array_index(seen, k), key);
      if (c->job != job || dup) continue;
      g_ptr_array_add(seen, (gpointer)key);
      uint64_t cnt = 0, bytes = 0;
      double t = 0;
      for (size_t k = i; k < r->n_colls; k++) {
        const struct FabCollRec *o = &r->colls[k];
        if (o->job != job || !g_str_equal(by ? (o->tag ? o->tag : "none") : o->op, key)) continue;
        cnt++;
        bytes += o->bytes;
        t += o->end ? fab_time_to_s(o->end - o->start) : 0;
      }
      if (seen->len > 1) g_string_append(s, ", ");
      fab_json_put_str(s, key);
      g_string_append_printf(s, ": {\"count\": %" G_GUINT64_FORMAT ", \"bytes\": %" G_GUINT64_FORMAT ", \"time_s\": ",
                             cnt, bytes);
      fab_json_put_num(s, t);
      g_string_append_c(s, '}');
    }
    g_ptr_array_free(seen, TRUE);
    g_string_append_c(s, '}');
  }
  g_string_append_c(s, '}');
}

char *fab_json_summary(const FabResults *r) {
  GString *s = g_string_new("{");
  uint64_t completed = 0, bytes = 0;
  for (size_t i = 0; i < r->n_flows; i++) {
    bytes += r->flows[i].bytes;
    completed += r->flows[i].end != 0;
  }
  g_string_append(s, "\"fabsim_version\": ");
  fab_json_put_str(s, r->version);
  g_string_append(s, ", \"scenario\": ");
  fab_json_put_str(s, r->scenario);
  g_string_append_printf(s, ", \"seed\": %" G_GUINT64_FORMAT, r->seed);
  g_string_append(s, ", \"status\": ");
  fab_json_put_str(s, r->failure ? "failed" : "ok");
  g_string_append(s, ", \"failure\": ");
  if (r->failure) fab_json_put_str(s, r->failure);
  else g_string_append(s, "null");
  g_string_append(s, ", \"topology\": ");
  fab_json_put_str(s, r->topology);
  g_string_append(s, ", \"sim_time_s\": ");
  fab_json_put_num(s, fab_time_to_s(r->sim_time));
  g_string_append(s, ", \"wall_s\": ");
  fab_json_put_num(s, r->wall_s);
  g_string_append_printf(s, ", \"events\": %" G_GUINT64_FORMAT, r->events);
  g_string_append(s, ", \"events_per_s\": ");
  fab_json_put_num(s, r->wall_s > 0 ? round((double)r->events / r->wall_s) : 0);
  g_string_append_printf(s, ", \"packet_hops\": %" G_GUINT64_FORMAT, r->packet_hops);
  g_string_append(s, ", \"packet_hops_per_s\": ");
  fab_json_put_num(s, r->wall_s > 0 ? round((double)r->packet_hops / r->wall_s) : 0);
  g_string_append_printf(s, ", \"endpoints\": %u", r->endpoints);
  g_string_append(s, ", \"nvlink_segment_bytes\": ");
  if (r->nvlink_segment) g_string_append_printf(s, "%u", r->nvlink_segment);
  else g_string_append(s, "null");
  g_string_append_printf(s, ", \"flows\": {\"count\": %zu, \"completed\": %" G_GUINT64_FORMAT
                         ", \"bytes\": %" G_GUINT64_FORMAT ", \"fct_p50_s\": ", r->n_flows, completed, bytes);
  fab_json_put_num(s, fab_results_fct_percentile(r, 50));
  g_string_append(s, ", \"fct_p99_s\": ");
  fab_json_put_num(s, fab_results_fct_percentile(r, 99));
  g_string_append(s, ", \"fct_max_s\": ");
  fab_json_put_num(s, fab_results_fct_percentile(r, 100));
  g_string_append(s, "}");
  g_string_append_printf(s, ", \"drops\": %" G_GUINT64_FORMAT, r->drops);
  g_string_append_printf(s, ", \"retransmits\": %" G_GUINT64_FORMAT, r->retransmits);
  g_string_append_printf(s, ", \"pfc_pause_frames\": %" G_GUINT64_FORMAT, r->pfc_pause_frames);
  g_string_append_printf(s, ", \"ecn_marks\": %" G_GUINT64_FORMAT, r->ecn_marks);
  g_string_append_printf(s, ", \"cnps\": %" G_GUINT64_FORMAT, r->cnps);
  g_string_append(s, ", \"pfc_paused_s\": ");
  fab_json_put_num(s, fab_time_to_s(r->pfc_paused));
  g_string_append_printf(s, ", \"max_queue_bytes\": %" G_GUINT64_FORMAT, r->max_queue_bytes);
  g_string_append(s, ", \"deadlock\": ");
  if (r->n_deadlock) {
    g_string_append_c(s, '[');
    for (uint32_t i = 0; i < r->n_deadlock; i++) {
      if (i) g_string_append(s, ", ");
      fab_json_put_str(s, r->deadlock[i]);
    }
    g_string_append_c(s, ']');
  } else {
    g_string_append(s, "null");
  }
  g_string_append(s, ", \"collectives\": [");
  for (size_t i = 0; i < r->n_colls; i++) {
    const struct FabCollRec *c = &r->colls[i];
    double t = c->end ? fab_time_to_s(c->end - c->start) : 0, algbw = t > 0 ? (double)c->bytes / t / 1e9 : 0;
    g_string_append_printf(s, "%s{\"op\": ", i ? ", " : "");
    fab_json_put_str(s, c->op);
    g_string_append_printf(s, ", \"bytes\": %" G_GUINT64_FORMAT ", \"count\": %" G_GUINT64_FORMAT
                           ", \"dtype_bytes\": %u, \"ranks\": %u, \"root\": %d, \"algorithm\": ", c->bytes, c->count,
                           c->dtype_bytes, c->ranks, c->root);
    fab_json_put_str(s, c->algorithm);
    g_string_append(s, ", \"protocol\": ");
    fab_json_put_str(s, c->protocol);
    g_string_append_printf(s, ", \"channels\": %u, \"tag\": ", c->channels);
    if (c->tag) fab_json_put_str(s, c->tag);
    else g_string_append(s, "null");
    g_string_append_printf(s, ", \"job\": %u, \"step\": %u", c->job, c->step);
    g_string_append(s, ", \"start_s\": ");
    fab_json_put_num(s, fab_time_to_s(c->start));
    g_string_append(s, ", \"end_s\": ");
    fab_json_put_num(s, c->end ? fab_time_to_s(c->end) : NAN);
    g_string_append(s, ", \"time_s\": ");
    fab_json_put_num(s, c->end ? t : NAN);
    g_string_append(s, ", \"algbw_GBps\": "); /* null for a collective that did not complete */
    fab_json_put_num(s, c->end ? algbw : NAN);
    g_string_append(s, ", \"busbw_GBps\": ");
    fab_json_put_num(s, c->end ? algbw * fab_busbw_factor(c->op, c->ranks) : NAN);
    g_string_append_c(s, '}');
  }
  g_string_append(s, "], \"step\": ");
  int first = -1;
  for (size_t j = 0; j < r->n_jobs && first < 0; j++)
    for (size_t k = 0; k < r->n_steps; k++)
      if (r->steps[k].job == j) {
        first = (int)j;
        break;
      }
  if (first >= 0) put_step(s, r, (uint32_t)first);
  else g_string_append(s, "null");
  g_string_append(s, ", \"jobs\": [");
  for (size_t j = 0; j < r->n_jobs; j++) {
    const struct FabJobRec *jr = &r->jobs[j];
    g_string_append(s, j ? ", {\"name\": " : "{\"name\": ");
    fab_json_put_str(s, jr->name);
    g_string_append(s, ", \"kind\": ");
    fab_json_put_str(s, jr->kind);
    g_string_append_printf(s, ", \"ranks\": %u, \"flows\": %u, \"completed\": %u, \"bytes\": %" G_GUINT64_FORMAT
                           ", \"start_s\": ", jr->ranks, jr->flows, jr->completed, jr->bytes);
    fab_json_put_num(s, fab_time_to_s(jr->start));
    g_string_append(s, ", \"end_s\": ");
    fab_json_put_num(s, jr->end ? fab_time_to_s(jr->end) : NAN);
    g_string_append(s, ", \"time_s\": ");
    fab_json_put_num(s, jr->end ? fab_time_to_s(jr->end - jr->start) : NAN);
    g_string_append(s, ", \"step\": ");
    bool has = false;
    for (size_t k = 0; k < r->n_steps && !has; k++) has = r->steps[k].job == j;
    if (has) put_step(s, r, (uint32_t)j);
    else g_string_append(s, "null");
    g_string_append_c(s, '}');
  }
  g_string_append(s, "]}\n");
  return g_string_free(s, FALSE);
}

/* ---- reading: a tiny walker over JSON text ---------------------------- */

static const char *ws(const char *p) {
  while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
  return p;
}

/* Past the string starting at p ('"'), or NULL. */
static const char *skip_string(const char *p) {
  for (p++; *p; p++) {
    if (*p == '\\' && p[1]) p++;
    else if (*p == '"') return p + 1;
  }
  return NULL;
}

/* Past the value starting at p, or NULL on malformed text. */
static const char *skip_value(const char *p) {
  p = ws(p);
  if (*p == '"') return skip_string(p);
  if (*p == '{' || *p == '[') {
    int depth = 0;
    while (*p) {
      if (*p == '"') {
        p = skip_string(p);
        if (!p) return NULL;
        continue;
      }
      if (*p == '{' || *p == '[') depth++;
      else if (*p == '}' || *p == ']') {
        if (--depth == 0) return p + 1;
      }
      p++;
    }
    return NULL;
  }
  while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n') p++;
  return p;
}

/* The value of member `key` (length n) of the object at p, or NULL. */
static const char *member(const char *p, const char *key, size_t n) {
  p = ws(p);
  if (*p != '{') return NULL;
  p = ws(p + 1);
  while (*p == '"') {
    const char *k = p + 1, *e = skip_string(p);
    if (!e) return NULL;
    size_t kn = (size_t)(e - 1 - k);
    p = ws(e);
    if (*p != ':') return NULL;
    p = ws(p + 1);
    if (kn == n && memcmp(k, key, n) == 0) return p;
    p = skip_value(p);
    if (!p) return NULL;
    p = ws(p);
    if (*p != ',') return NULL;
    p = ws(p + 1);
  }
  return NULL;
}

/* Element i of the array at p, or NULL. */
static const char *element(const char *p, size_t i) {
  p = ws(p);
  if (*p != '[') return NULL;
  p = ws(p + 1);
  if (*p == ']') return NULL;
  for (size_t k = 0; k < i; k++) {
    p = skip_value(p);
    if (!p) return NULL;
    p = ws(p);
    if (*p != ',') return NULL;
    p = ws(p + 1);
  }
  return p;
}

/* The text of the value at dotted `path` ("flows.fct_p99_s",
** "collectives.0.busbw_GBps") in `json`, or NULL if there is none. */
const char *fab_json_value(const char *json, const char *path) {
  const char *p = json;
  const char *seg = path;
  if (!p || !seg || !*seg) return NULL;
  while (p && *seg) {
    const char *dot = strchr(seg, '.');
    size_t n = dot ? (size_t)(dot - seg) : strlen(seg);
    if (n == 0) return NULL;
    const char *q = ws(p);
    if (*q == '[') {
      char *end;
      char buf[32];
      if (n >= sizeof buf) return NULL;
      memcpy(buf, seg, n);
      buf[n] = 0;
      unsigned long long i = g_ascii_strtoull(buf, &end, 10);
      if (*end || end == buf) return NULL;
      p = element(q, (size_t)i);
    } else {
      p = member(q, seg, n);
    }
    seg = dot ? dot + 1 : seg + n;
    if (dot && !*seg) return NULL;
  }
  return p ? ws(p) : NULL;
}

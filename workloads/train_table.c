/*
** Measured compute for a training job (workload.compute_table): a CSV of
** the times the user's own profile gives, which replace FLOPs / (peak x
** efficiency) for the parts it names. See train_int.h (TrainTable) and
** README ("Measured compute").
**
**   # part, pass, time      (one layer, one microbatch, one rank)
**   attention, forward, 1.92ms
**   attention, backward, 3.71ms
**   mlp, forward, 2.4ms
**
** Parts: attention (projections and core), mlp (a dense layer's MLP), moe
** (an MoE layer's experts, its top_k of them), logits (the output layer
** and the loss, once per microbatch on the last stage), each with a
** forward and a backward row; optimizer with one `step` row (a rank's
** optimizer step). Times take a unit (ns, us, ms, s). A header row
** `part,pass,time` may come first; `#` starts a comment; blank lines are
** skipped. Every error names the file:line:col of the field.
*/
#include "train_int.h"
#include <string.h>
#include "sim/config.h"

const char *const fab_train__part_names[TT_NPART + 1] = {"attention", "mlp", "moe", "logits", "optimizer", NULL};
static const char *const pass_names[] = {"forward", "backward", "step", NULL};

static int lookup(const char *const *names, const char *s) {
  for (int i = 0; names[i]; i++)
    if (g_str_equal(names[i], s)) return i;
  return -1;
}

/* "path:line:col: message" into err. */
static gboolean tfail(GError **err, const char *path, uint32_t line, size_t col, const char *fmt, ...)
    G_GNUC_PRINTF(5, 6);
static gboolean tfail(GError **err, const char *path, uint32_t line, size_t col, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_VALUE, "%s:%u:%zu: %s", path, line, col, msg);
  g_free(msg);
  return FALSE;
}

/* One row's fields (trimmed, in place) and their columns; FALSE + err unless exactly 3. */
static gboolean split_row(char *text, const char *path, uint32_t no, char **f, size_t *col, GError **err) {
  uint32_t n = 0;
  const size_t len = strlen(text);
  char *p = text;
  for (;;) {
    char *end = strchr(p, ',');
    if (end) *end = '\0';
    char *s = p;
    while (*s == ' ' || *s == '\t') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) *--e = '\0';
    if (n == 3) return tfail(err, path, no, (size_t)(s - text) + 1, "expected 3 fields: part, pass, time");
    f[n] = s, col[n] = (size_t)(s - text) + 1, n++;
    if (!end) break;
    p = end + 1;
  }
  if (n != 3) return tfail(err, path, no, len + 1, "expected 3 fields: part, pass, time");
  return TRUE;
}

/* One data row into tb. */
static gboolean read_row(char **f, const size_t *col, const char *path, uint32_t no, TrainTable *tb, GError **err) {
  int part = lookup(fab_train__part_names, f[0]), pass = lookup(pass_names, f[1]);
  if (part < 0)
    return tfail(err, path, no, col[0], "part: '%s' is not one of attention, mlp, moe, logits, optimizer", f[0]);
  if (pass < 0 || (part == TT_OPT) != (pass == 2))
    return tfail(err, path, no, col[1], "pass: '%s': expected %s", f[1],
                 part == TT_OPT ? "step (the optimizer's one row)" : "forward or backward");
  if (pass == 2) pass = 0;
  uint64_t ps;
  GError *e = NULL;
  if (!fab_parse_time(f[2], &ps, &e) || !ps) {
    gboolean r = tfail(err, path, no, col[2], "time: %s", e ? e->message : "expected a time above 0 (such as 1.5ms)");
    g_clear_error(&e);
    return r;
  }
  if (tb->ps[part][pass])
    return tfail(err, path, no, col[0], "a second row for %s, %s", f[0], f[1]);
  tb->ps[part][pass] = ps;
  tb->line[part][pass] = no;
  return TRUE;
}

gboolean fab_train__read_table(const char *path, TrainTable *tb, GError **err) {
  memset(tb, 0, sizeof *tb);
  char *text = NULL;
  size_t len = 0;
  const char *why = NULL;
  if (!fab_cfg_read_file(path, FAB_CFG_FILE_MAX, &text, &len, &why)) {
    g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_IO, "%s: cannot read the compute table: %s", path, why);
    return FALSE;
  }
  gboolean ok = TRUE;
  if (memchr(text, '\0', len)) ok = tfail(err, path, 1, 1, "a NUL byte: not a CSV file");
  char **lines = g_strsplit(text, "\n", -1);
  bool first = true; /* the first row may be the header */
  for (uint32_t i = 0; ok && lines[i]; i++) {
    char *hash = strchr(lines[i], '#');
    if (hash) *hash = '\0';
    if (!lines[i][strspn(lines[i], " \t\r")]) continue; /* blank, or a comment alone */
    char *f[3];
    size_t col[3];
    ok = split_row(lines[i], path, i + 1, f, col, err);
    bool header = ok && first && g_str_equal(f[0], "part") && g_str_equal(f[1], "pass") && g_str_equal(f[2], "time");
    first = false;
    if (ok && !header) ok = read_row(f, col, path, i + 1, tb, err);
  }
  bool any = false;
  for (int p = 0; p < TT_NPART; p++) any |= tb->ps[p][0] || tb->ps[p][1];
  if (ok && !any) ok = tfail(err, path, 1, 1, "the compute table has no rows");
  for (int p = 0; ok && p < TT_OPT; p++) /* a part's two passes come together */
    if (!tb->ps[p][0] != !tb->ps[p][1])
      ok = tfail(err, path, tb->line[p][0] | tb->line[p][1], 1, "%s has a %s row but no %s row",
                 fab_train__part_names[p], tb->ps[p][0] ? "forward" : "backward", tb->ps[p][0] ? "backward" : "forward");
  g_strfreev(lines);
  g_free(text);
  return ok;
}

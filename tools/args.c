/* One argument parser for every subcommand. See args.h. */
#include "args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The program as a user types it: "fabsim run", or a program of its own ("fabsim-replay"). */
static const char *prog(const FabCmd *cmd, char *buf, size_t n) {
  snprintf(buf, n, "%s%s", g_str_has_prefix(cmd->name, "fabsim-") ? "" : "fabsim ", cmd->name);
  return buf;
}

void fab_args_usage(const FabCmd *cmd, FILE *out) {
  GString *s = g_string_new(NULL);
  char buf[64];
  g_string_append_printf(s, "usage: %s", prog(cmd, buf, sizeof buf));
  if (cmd->synopsis && *cmd->synopsis) g_string_append_printf(s, " %s", cmd->synopsis);
  for (const FabOpt *o = cmd->opts; o && o->name; o++) {
    if (o->metavar) g_string_append_printf(s, " [%s %s]", o->name, o->metavar);
    else g_string_append_printf(s, " [%s]", o->name);
    if (o->kind == FAB_OPT_SET) g_string_append(s, "...");
  }
  g_string_append(s, "\n\n");
  if (cmd->about) g_string_append_printf(s, "%s\n\n", cmd->about);
  g_string_append(s, "options:\n");
  for (const FabOpt *o = cmd->opts; o && o->name; o++) {
    char *left = o->short_name ? g_strdup_printf("-%c, %s%s%s", o->short_name, o->name, o->metavar ? " " : "",
                                                 o->metavar ? o->metavar : "")
                               : g_strdup_printf("%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
    g_string_append_printf(s, "  %-22s %s\n", left, o->help);
    g_free(left);
  }
  g_string_append_printf(s, "  %-22s %s\n", "-h, --help", "this help");
  if (cmd->footer) g_string_append_printf(s, "\n%s", cmd->footer);
  fputs(s->str, out);
  g_string_free(s, TRUE);
}

int fab_args_error(const FabCmd *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  char buf[64];
  fprintf(stderr, "%s: %s\n\n", prog(cmd, buf, sizeof buf), msg);
  g_free(msg);
  fab_args_usage(cmd, stderr);
  return EXIT_USAGE;
}

static const FabOpt *find(const FabCmd *cmd, const char *arg, const char **inline_val) {
  *inline_val = NULL;
  for (const FabOpt *o = cmd->opts; o && o->name; o++) {
    size_t n = strlen(o->name);
    if (strncmp(arg, o->name, n) == 0 && (arg[n] == 0 || (arg[n] == '=' && o->metavar))) {
      if (arg[n] == '=') *inline_val = arg + n + 1;
      return o;
    }
    if (o->short_name && arg[0] == '-' && arg[1] == o->short_name && arg[2] == 0) return o;
  }
  return NULL;
}

/* A whole number in [min, max], digits only. */
static bool parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *v) {
  if (!s || !g_ascii_isdigit(*s)) return false;
  char *end = NULL;
  errno = 0;
  unsigned long long x = strtoull(s, &end, 10);
  if (*end || errno || x < min || x > max) return false;
  *v = x;
  return true;
}

/* Take option o's value (val, already found); -1 or an exit status. */
static int take(const FabCmd *cmd, const FabOpt *o, const char *val, FabArgs *a) {
  uint64_t v = 0;
  switch (o->kind) {
  case FAB_OPT_FLAG:
    a->flag[o->slot] = true;
    break;
  case FAB_OPT_VALUE:
    if (!*val) return fab_args_error(cmd, "%s needs %s", o->name, o->need);
    a->value[o->slot] = val;
    break;
  case FAB_OPT_UINT:
    if (!parse_uint(val, o->min, o->max, &v)) return fab_args_error(cmd, "%s %s: expected %s", o->name, val, o->need);
    a->num[o->slot] = v;
    break;
  case FAB_OPT_SET:
    if (!strchr(val, '=') || val[0] == '=') return fab_args_error(cmd, "%s %s: expected %s", o->name, val, o->metavar);
    g_ptr_array_add(a->sets, g_strdup(val));
    break;
  case FAB_OPT_SEED:
    if (!parse_uint(val, 0, UINT64_MAX, &v))
      return fab_args_error(cmd, "%s %s: expected a non-negative integer", o->name, val);
    g_ptr_array_add(a->sets, g_strdup_printf("seed=%" G_GUINT64_FORMAT, v));
    break;
  }
  if (o->kind != FAB_OPT_SET && o->kind != FAB_OPT_SEED) a->given[o->slot] = true;
  return -1;
}

int fab_args_parse(const FabCmd *cmd, int argc, char **argv, FabArgs *a) {
  memset(a, 0, sizeof *a);
  a->pos = g_ptr_array_new();
  a->sets = g_ptr_array_new_with_free_func(g_free);
  for (int i = 0; i < argc; i++) {
    const char *s = argv[i], *val = NULL;
    if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
      fab_args_usage(cmd, stdout);
      return 0;
    }
    if (s[0] == '-' && s[1]) {
      const FabOpt *o = find(cmd, s, &val);
      if (!o) return fab_args_error(cmd, "unknown option '%s'", s);
      if (o->metavar && !val) {
        if (i + 1 >= argc) return fab_args_error(cmd, "%s needs %s", o->name, o->need);
        val = argv[++i];
      }
      int rc = take(cmd, o, val, a);
      if (rc >= 0) return rc;
    } else if (a->pos->len < cmd->max_pos) {
      g_ptr_array_add(a->pos, (gpointer)s);
    } else if (cmd->max_pos == 1) {
      return fab_args_error(cmd, "more than one %s given ('%s' and '%s')", cmd->noun, fab_args_pos(a, 0), s);
    } else {
      return fab_args_error(cmd, "more than %s given ('%s')", cmd->noun, s);
    }
  }
  if (a->pos->len < cmd->min_pos) return fab_args_error(cmd, "%s", cmd->need);
  g_ptr_array_add(a->sets, NULL);
  return -1;
}

void fab_args_clear(FabArgs *a) {
  if (a->pos) g_ptr_array_free(a->pos, TRUE);
  if (a->sets) g_ptr_array_free(a->sets, TRUE);
  memset(a, 0, sizeof *a);
}

/*
** The command line of every fabsim subcommand, from one table each: the
** options (name, kind, what value they take, help), the positional
** arguments, and the text around them. One parser reads them all, and one
** printer makes every `--help` and every usage error look the same:
**
**   usage: fabsim NAME POSITIONALS [--opt VALUE]...
**
**   ABOUT
**
**   options:
**     --opt VALUE        help
**     -h, --help         this help
**
**   FOOTER
**
** A usage error prints "fabsim NAME: what is wrong", a blank line and the
** usage on stderr, and the exit status is 2.
*/
#ifndef FAB_ARGS_H
#define FAB_ARGS_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define EXIT_FAILED 1
#define EXIT_USAGE 2

typedef enum {
  FAB_OPT_FLAG,   /* no value: a->flag[slot] */
  FAB_OPT_VALUE,  /* a non-empty string: a->value[slot] (the last one given) */
  FAB_OPT_UINT,   /* an integer in [min, max]: a->num[slot] */
  FAB_OPT_SET,    /* KEY=VALUE, repeatable: appended to a->sets */
  FAB_OPT_SEED,   /* an integer >= 0, appended to a->sets as "seed=N" */
} FabOptKind;

typedef struct FabOpt {
  const char *name;      /* "--set"; NULL ends the table */
  char short_name;       /* 'j', or 0 */
  FabOptKind kind;
  int slot;              /* FLAG, VALUE, UINT: index into the FabArgs arrays */
  const char *metavar;   /* "KEY=VALUE", "PATH" (NULL for flags) */
  const char *need;      /* "a path": "--hdf5 needs a path"; for VALUE and UINT also what a bad value
                         ** should have been ("--jobs x: expected a positive integer") */
  uint64_t min, max;     /* UINT bounds */
  const char *help;      /* one line */
} FabOpt;

#define FAB_ARGS_SLOTS 16

typedef struct FabCmd {
  const char *name;      /* "run" */
  const char *summary;   /* one line, for `fabsim --help` */
  const char *synopsis;  /* the positionals as the usage line shows them: "[SCENARIO]" */
  uint32_t min_pos, max_pos;
  const char *need;      /* fewer positionals than min_pos: "validate needs a SCENARIO file" */
  const char *noun;      /* more than max_pos: "more than one scenario given (...)" */
  const char *about;     /* the paragraph under the usage line */
  const FabOpt *opts;
  const char *footer;    /* after the options, or NULL */
} FabCmd;

typedef struct FabArgs {
  GPtrArray *pos;        /* const char *: the positionals (borrowed from argv) */
  GPtrArray *sets;       /* char *: KEY=VALUE, in order, NULL-terminated after parsing */
  bool flag[FAB_ARGS_SLOTS];
  const char *value[FAB_ARGS_SLOTS];
  uint64_t num[FAB_ARGS_SLOTS];
  bool given[FAB_ARGS_SLOTS];
} FabArgs;

/* Parse the arguments after the command's name into a (which it sets up).
** Returns -1 to go on; otherwise the exit status to return: 0 after printing
** the help (-h, --help), EXIT_USAGE after printing a usage error. Free a
** with fab_args_clear either way. */
int fab_args_parse(const FabCmd *cmd, int argc, char **argv, FabArgs *a);
void fab_args_clear(FabArgs *a);

/* The positional i, or NULL. */
static inline const char *fab_args_pos(const FabArgs *a, guint i) {
  return i < a->pos->len ? g_ptr_array_index(a->pos, i) : NULL;
}

/* The --set list (and seeds), NULL-terminated. */
static inline const char *const *fab_args_sets(const FabArgs *a) { return (const char *const *)a->sets->pdata; }

/* Print cmd's usage and help to out. */
void fab_args_usage(const FabCmd *cmd, FILE *out);

/* "fabsim NAME: message", a blank line and the usage on stderr; returns EXIT_USAGE. */
int fab_args_error(const FabCmd *cmd, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

#endif

/* fabsim sweep: not implemented yet. See cmds.h. */
#include <stdio.h>
#include "cmds.h"

int fab_cmd_sweep(int argc, char **argv, const char *self) {
  (void)argc, (void)argv, (void)self;
  fputs("fabsim: sweep is not implemented in this version\n", stderr);
  return 2;
}

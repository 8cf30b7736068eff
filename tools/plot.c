/* fabsim plot: not implemented yet. See cmds.h. */
#include <stdio.h>
#include "cmds.h"

int fab_cmd_plot(int argc, char **argv) {
  (void)argc, (void)argv;
  fputs("fabsim: plot is not implemented in this version\n", stderr);
  return 2;
}

/*
** The subcommands of the fabsim CLI that live in their own files. Each takes
** the arguments after its name and returns the process exit status (0
** success, 1 failed, 2 bad input or usage).
*/
#ifndef FAB_CMDS_H
#define FAB_CMDS_H

/* fabsim sweep SCENARIO --set KEY=V1,V2,... [--set ...] [--out DIR] [--jobs N] (tools/sweep.c) */
int fab_cmd_sweep(int argc, char **argv, const char *self);

/* fabsim plot RESULT.h5 [--out DIR] (tools/plot.c) */
int fab_cmd_plot(int argc, char **argv);

#endif

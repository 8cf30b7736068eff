/* The MPI transport of a run over processes (tools/mpi.c). */
#ifndef FAB_MPI_NET_H
#define FAB_MPI_NET_H

#include <stdbool.h>
#include "sim/par.h"

/* MPI_Init, and the transport between this process and the others of
** MPI_COMM_WORLD in *net; false (and why, allocated) when MPI cannot start
** or this fabsim was built without it. */
bool fab_mpi_start(int *argc, char ***argv, FabParNet *net, char **why);

/* MPI_Finalize (after a successful fab_mpi_start). */
void fab_mpi_end(void);

#endif

/* pmpi_wrappers/special.h — the hand-written wrappers' bodies (special.c)
 * with the call site in front, like the generated xsprof_w_* (wrappers.h):
 * MPI_X passes its return address, the Fortran binding its caller's.
 * Owner: pmpi_wrappers. */
#ifndef XSPROF_PMPI_SPECIAL_H
#define XSPROF_PMPI_SPECIAL_H

#include "mpi/xsprof_mpi.h"

XSPROF_HIDDEN int xsprof_w_MPI_Init(const void *site, int *argc, char ***argv);
XSPROF_HIDDEN int xsprof_w_MPI_Init_thread(const void *site, int *argc, char ***argv, int required, int *provided);
XSPROF_HIDDEN int xsprof_w_MPI_Finalize(const void *site);
XSPROF_HIDDEN int xsprof_w_MPI_Abort(const void *site, MPI_Comm comm, int errorcode);
XSPROF_HIDDEN int xsprof_w_MPI_Pcontrol(const void *site, int level);

#endif

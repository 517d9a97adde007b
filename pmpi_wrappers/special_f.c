/* pmpi_wrappers/special_f.c — Fortran entry points of the hand-written
 * wrappers. Open MPI's own mpi_init_ calls PMPI_Init, which would bypass
 * xsprof, so these call the C wrappers' bodies, with their caller as the
 * call site. */
#include "pmpi_wrappers/fortran.h"
#include "pmpi_wrappers/special.h"

#define XSPROF_F_ALIASES(low, up, args)                                       \
    XSPROF_FORTRAN void low args __attribute__((alias(#low "_")));            \
    XSPROF_FORTRAN void low##__ args __attribute__((alias(#low "_")));        \
    XSPROF_FORTRAN void up args __attribute__((alias(#low "_")));

XSPROF_FORTRAN void mpi_init_(MPI_Fint *ierr);
void mpi_init_(MPI_Fint *ierr) { *ierr = xsprof_w_MPI_Init(__builtin_return_address(0), NULL, NULL); }
XSPROF_F_ALIASES(mpi_init, MPI_INIT, (MPI_Fint *ierr))
XSPROF_OMPI_F08_ALIAS(init, mpi_init, (MPI_Fint *ierr))

XSPROF_FORTRAN void mpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr);
void mpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) {
    int p = MPI_THREAD_SINGLE;
    *ierr = xsprof_w_MPI_Init_thread(__builtin_return_address(0), NULL, NULL, *required, &p);
    *provided = p;
}
XSPROF_F_ALIASES(mpi_init_thread, MPI_INIT_THREAD, (MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr))
XSPROF_OMPI_F08_ALIAS(init_thread, mpi_init_thread, (MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr))

XSPROF_FORTRAN void mpi_finalize_(MPI_Fint *ierr);
void mpi_finalize_(MPI_Fint *ierr) { *ierr = xsprof_w_MPI_Finalize(__builtin_return_address(0)); }
XSPROF_F_ALIASES(mpi_finalize, MPI_FINALIZE, (MPI_Fint *ierr))
XSPROF_OMPI_F08_ALIAS(finalize, mpi_finalize, (MPI_Fint *ierr))

XSPROF_FORTRAN void mpi_pcontrol_(MPI_Fint *level);
void mpi_pcontrol_(MPI_Fint *level) { xsprof_w_MPI_Pcontrol(__builtin_return_address(0), *level); }
XSPROF_F_ALIASES(mpi_pcontrol, MPI_PCONTROL, (MPI_Fint *level))
XSPROF_OMPI_F08_ALIAS(pcontrol, mpi_pcontrol, (MPI_Fint *level))

XSPROF_FORTRAN void mpi_abort_(MPI_Fint *comm, MPI_Fint *errorcode, MPI_Fint *ierr);
void mpi_abort_(MPI_Fint *comm, MPI_Fint *errorcode, MPI_Fint *ierr) { *ierr = xsprof_w_MPI_Abort(__builtin_return_address(0), MPI_Comm_f2c(*comm), *errorcode); }
XSPROF_F_ALIASES(mpi_abort, MPI_ABORT, (MPI_Fint *comm, MPI_Fint *errorcode, MPI_Fint *ierr))
XSPROF_OMPI_F08_ALIAS(abort, mpi_abort, (MPI_Fint *comm, MPI_Fint *errorcode, MPI_Fint *ierr))

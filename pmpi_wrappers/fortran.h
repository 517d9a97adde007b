/* pmpi_wrappers/fortran.h — helpers of the Fortran (mpif.h / use mpi)
 * wrappers: sentinel buffers, request and status arrays. The wrappers
 * translate handles and call the C wrappers, so each call is recorded once.
 * Owner: pmpi_wrappers. */
#ifndef XSPROF_PMPI_FORTRAN_H
#define XSPROF_PMPI_FORTRAN_H

#include <mpi.h>
#include "mpi/xsprof_mpi.h"

/* Fortran symbols are part of the exported interface (cmake/exports.map: mpi_*, MPI_*). */
#define XSPROF_FORTRAN __attribute__((visibility("default")))

/* Open MPI's mpi_f08 module (libmpi_usempif08) does not call mpi_send_ but
 * ompi_send_f, the function mpi_send_ is an alias of in libmpi_mpifh, with
 * the same arguments (handles are the f08 types' MPI_VAL integers, statuses
 * the same layout). Exporting our wrapper under that name too records
 * mpi_f08 programs; nothing in xsprof calls ompi_*_f, so no call counts
 * twice. Other MPIs: not applicable. */
#if defined(OPEN_MPI) && OPEN_MPI
#define XSPROF_OMPI_F08_ALIAS(name, low, args) XSPROF_FORTRAN void ompi_##name##_f args __attribute__((alias(#low "_")));
#else
#define XSPROF_OMPI_F08_ALIAS(name, low, args)
#endif

/* A Fortran status is an INTEGER array as large as the C struct (Open MPI). */
#define XSPROF_F_STATUS_SIZE (sizeof(MPI_Status) / sizeof(MPI_Fint))

_Static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran INTEGER arrays are passed through as int");

/* Open MPI's Fortran MPI_IN_PLACE / MPI_BOTTOM are addresses of common blocks. */
extern int mpi_fortran_in_place_;
extern int mpi_fortran_bottom_;

static inline void *xsprof_f_buf(void *p) {
    if (p == (void *)&mpi_fortran_in_place_)
        return MPI_IN_PLACE;
    if (p == (void *)&mpi_fortran_bottom_)
        return MPI_BOTTOM;
    return p;
}

/* Request arrays: C handles in `inl` (or malloc'd when n is large); NULL on ENOMEM. */
XSPROF_HIDDEN MPI_Request *xsprof_f_requests(const MPI_Fint *f, int n, MPI_Request *inl);
XSPROF_HIDDEN void xsprof_f_requests_done(MPI_Fint *f, int n, MPI_Request *c, MPI_Request *inl);
/* Status arrays: MPI_STATUSES_IGNORE (a NULL pointer in Open MPI) passes
 * through. Returns 0, or -1 when memory is short. */
XSPROF_HIDDEN int xsprof_f_statuses(MPI_Fint *f, int n, MPI_Status *inl, MPI_Status **out);
XSPROF_HIDDEN void xsprof_f_statuses_done(MPI_Fint *f, int n, MPI_Status *c, MPI_Status *inl, int rc);

/* Functions passed through to Open MPI's own Fortran binding: its address
 * (RTLD_NEXT, cached in *slot), NULL when there is none. */
XSPROF_HIDDEN void *xsprof_f_next(void **slot, const char *name);
/* Around the passed-through call: start time, or -1 when not recorded; then
 * one record by name with the call's times and call site (the binding's
 * return address). */
XSPROF_HIDDEN int64_t xsprof_f_enter(unsigned op);
XSPROF_HIDDEN void xsprof_f_leave(unsigned op, const void *site, int64_t t0);

#endif

/* pmpi_wrappers/fortran.c — array translation for the Fortran wrappers,
 * and the pass-through to Open MPI's binding for the functions whose
 * arguments are not translated. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <stdlib.h>
#include "pmpi_wrappers/fortran.h"

void *xsprof_f_next(void **slot, const char *name) {
    void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!p) {
        p = dlsym(RTLD_NEXT, name);
        if (!p)
            xsprof_log(XSPROF_LOG_ERROR, "Fortran %s: no MPI library binding found after xsprof", name);
        __atomic_store_n(slot, p, __ATOMIC_RELEASE);
    }
    return p;
}

int64_t xsprof_f_enter(unsigned op) { return xsprof_mpi_enter(op) ? xsprof_clock_now() : -1; }

void xsprof_f_leave(unsigned op, const void *site, int64_t t0) {
    if (t0 < 0)
        return;
    int64_t t1 = xsprof_clock_now();
    xsprof_guard_leave();
    if (xsprof_mpi_group_on(op)) /* creations are entered even when their group is not recorded */
        xsprof_mpi_record_plain(op, site, t0, t1);
}

MPI_Request *xsprof_f_requests(const MPI_Fint *f, int n, MPI_Request *inl) {
    MPI_Request *c = inl;
    if (n > XSPROF_MPI_INLINE && !(c = malloc((size_t)n * sizeof *c)))
        return NULL;
    for (int i = 0; i < n; i++)
        c[i] = PMPI_Request_f2c(f[i]);
    return c;
}

void xsprof_f_requests_done(MPI_Fint *f, int n, MPI_Request *c, MPI_Request *inl) {
    /* Completed requests became MPI_REQUEST_NULL, persistent ones stay. */
    for (int i = 0; i < n; i++)
        f[i] = PMPI_Request_c2f(c[i]);
    if (c != inl)
        free(c);
}

int xsprof_f_statuses(MPI_Fint *f, int n, MPI_Status *inl, MPI_Status **out) {
    *out = inl;
    if (f == MPI_F_STATUSES_IGNORE || n <= 0)
        *out = MPI_STATUSES_IGNORE;
    else if (n > XSPROF_MPI_INLINE && !(*out = malloc((size_t)n * sizeof(MPI_Status))))
        return -1;
    return 0;
}

void xsprof_f_statuses_done(MPI_Fint *f, int n, MPI_Status *c, MPI_Status *inl, int rc) {
    if (c == MPI_STATUSES_IGNORE)
        return;
    /* MPI_ERR_IN_STATUS: every status carries its own error, copy them too. */
    if (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS)
        for (int i = 0; i < n; i++)
            PMPI_Status_c2f(&c[i], f + (size_t)i * XSPROF_F_STATUS_SIZE);
    if (c != inl)
        free(c);
}

/* pmpi_wrappers/special.c — the hand-written wrappers: MPI_Init,
 * MPI_Init_thread and MPI_Finalize bracket the MPI life cycle of the rank
 * (identity, communicator registry, clocks, topology, writing the rank
 * file); MPI_Abort is recorded before it ends the job; MPI_Pcontrol
 * pauses and resumes recording. */
#include <errno.h>
#include "pmpi_wrappers/special.h"
#include "ops.h"

int xsprof_w_MPI_Init(const void *site, int *argc, char ***argv)
{
    int64_t t0 = xsprof_clock_now();
    int rc = PMPI_Init(argc, argv);
    int e = errno; /* what MPI left is the program's */
    if (rc == MPI_SUCCESS) {
        int provided = MPI_THREAD_SINGLE;
        PMPI_Query_thread(&provided);
        xsprof_mpi_init_after(provided);
        xsprof_mpi_record_plain(XSPROF_OP_MPI_Init, site, t0, xsprof_clock_now());
    }
    errno = e;
    return rc;
}

int MPI_Init(int *argc, char ***argv) { return xsprof_w_MPI_Init(__builtin_return_address(0), argc, argv); }

int xsprof_w_MPI_Init_thread(const void *site, int *argc, char ***argv, int required, int *provided)
{
    int64_t t0 = xsprof_clock_now();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    int e = errno;
    if (rc == MPI_SUCCESS) {
        xsprof_mpi_init_after(*provided);
        xsprof_mpi_record_plain(XSPROF_OP_MPI_Init_thread, site, t0, xsprof_clock_now());
    }
    errno = e;
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    return xsprof_w_MPI_Init_thread(__builtin_return_address(0), argc, argv, required, provided);
}

int xsprof_w_MPI_Finalize(const void *site)
{
    int e = errno;
    int64_t t0 = xsprof_clock_now();
    /* The record goes in before the data is written; it covers the final
     * clock exchange, the rest of PMPI_Finalize is not observable anyway. */
    xsprof_mpi_finalize_before(XSPROF_OP_MPI_Finalize, site, t0);
    errno = e;
    return PMPI_Finalize();
}

int MPI_Finalize(void) { return xsprof_w_MPI_Finalize(__builtin_return_address(0)); }

int xsprof_w_MPI_Abort(const void *site, MPI_Comm comm, int errorcode)
{
    int e = errno;
    /* PMPI_Abort does not return: the row goes in first, ending where the
     * call begins; the journal keeps it when the process dies */
    xsprof_mpi_abort_before(XSPROF_OP_MPI_Abort, site, xsprof_clock_now(), errorcode);
    errno = e;
    return PMPI_Abort(comm, errorcode);
}

int MPI_Abort(MPI_Comm comm, int errorcode) { return xsprof_w_MPI_Abort(__builtin_return_address(0), comm, errorcode); }

int xsprof_w_MPI_Pcontrol(const void *site, int level)
{
    int e = errno;
    int64_t t0 = xsprof_clock_now();
    /* Record the call that pauses, and the one that resumes. */
    if (level == 0)
        xsprof_mpi_record_plain(XSPROF_OP_MPI_Pcontrol, site, t0, xsprof_clock_now());
    xsprof_mpi_pcontrol(level);
    if (level != 0)
        xsprof_mpi_record_plain(XSPROF_OP_MPI_Pcontrol, site, t0, xsprof_clock_now());
    errno = e;
    return MPI_SUCCESS;
}

int MPI_Pcontrol(const int level, ...) { return xsprof_w_MPI_Pcontrol(__builtin_return_address(0), level); }

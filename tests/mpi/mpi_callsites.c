/* tests/mpi/mpi_callsites.c — MPI calls from known lines, for the call-site
 * tests (check_callsites.py finds the lines by their marker comments):
 * rank 0 sends from two lines of main, once through a helper function
 * (with XSPROF_CALLSITE_DEPTH=2 its stack continues in main), and once
 * from a library it dlopens and closes before MPI_Finalize. Built -O2 -g
 * without frame pointers, as Debian builds programs.
 * usage: mpi_callsites PLUGIN.so */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>

static __attribute__((noinline)) void send_from_helper(int *x)
{
    MPI_Send(x, 1, MPI_INT, 1, 3, MPI_COMM_WORLD); /* SEND_HELPER */
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, x[4] = {1, 2, 3, 4};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        for (int i = 0; i < 3; i++)
            MPI_Send(&x[0], 1, MPI_INT, 1, 1, MPI_COMM_WORLD); /* SEND_A */
        MPI_Send(&x[1], 1, MPI_INT, 1, 2, MPI_COMM_WORLD); /* SEND_B */
        send_from_helper(&x[2]); /* CALL_HELPER */
        void *lib = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
        void (*plugin_send)(int) = lib ? (void (*)(int))dlsym(lib, "plugin_send") : NULL;
        if (!plugin_send) {
            fprintf(stderr, "mpi_callsites: cannot load %s: %s\n", argc > 1 ? argv[1] : "(no plugin)", dlerror());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        plugin_send(1);
        dlclose(lib);
    } else if (rank == 1) {
        for (int i = 0; i < 6; i++)
            MPI_Recv(&x[3], 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}

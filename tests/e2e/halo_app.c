/* A 1-D halo exchange with its own regions (the xsprof API): `stencil`
 * then `halo`, which holds two MPI_Sendrecv calls, 20 steps. Built linked
 * with -lxsprof only, and with -lxsprof before -lxsprof-mpi, for
 * e2e_two_copies.sh. Prints a checksum. */
#include <mpi.h>
#include <stdio.h>
#include <xsprof/xsprof.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double u = rank, from_left = 0, from_right = 0;
    for (int step = 0; step < 20; step++) {
        xsprof_region_begin("stencil");
        u = 0.5 * u + 0.25 * (from_left + from_right);
        xsprof_region_end();
        xsprof_region_begin("halo");
        MPI_Sendrecv(&u, 1, MPI_DOUBLE, right, 1, &from_left, 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u, 1, MPI_DOUBLE, left, 2, &from_right, 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        xsprof_region_end();
    }
    printf("rank %d u %.6f\n", rank, u);
    MPI_Finalize();
    return 0;
}

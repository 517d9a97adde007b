/* xsprof demo: a 1-D heat-diffusion solver on 4 ranks with a planted load
 * imbalance (the last rank owns a larger share of the domain), halo
 * exchange with nonblocking point-to-point messages, a residual Allreduce
 * and a parameter Bcast. Linked with -lxsprof-mpi; regions via XSPROF_SCOPE.
 * Prints the final residual so the result can be compared with and
 * without xsprof. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xsprof/xsprof.h>

static void compute(double *u, double *un, int n, double alpha) {
    XSPROF_SCOPE("compute");
    for (int i = 1; i <= n; i++)
        un[i] = u[i] + alpha * (u[i - 1] - 2 * u[i] + u[i + 1]);
    memcpy(u + 1, un + 1, sizeof(double) * (size_t)n);
}

static void halo(double *u, int n, int rank, int size) {
    XSPROF_SCOPE("halo");
    MPI_Request req[4];
    int nr = 0;
    int left = rank - 1, right = rank + 1;
    if (left >= 0) {
        MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[nr++]);
        MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[nr++]);
    }
    if (right < size) {
        MPI_Irecv(&u[n + 1], 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[nr++]);
        MPI_Isend(&u[n], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[nr++]);
    }
    for (int i = 0; i < nr; i++)
        MPI_Wait(&req[i], MPI_STATUS_IGNORE);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int steps = argc > 1 ? atoi(argv[1]) : 100;
    double alpha = 0;
    if (rank == 0)
        alpha = 0.25;
    MPI_Bcast(&alpha, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    /* Planted imbalance: the last rank has three times the cells. */
    int n = rank == size - 1 ? 600000 : 200000;
    double *u = calloc((size_t)n + 2, sizeof *u), *un = calloc((size_t)n + 2, sizeof *un);
    for (int i = 1; i <= n; i++)
        u[i] = sin(0.001 * (i + rank * 200000));
    double res = 0;
    {
        XSPROF_SCOPE("solve");
        for (int s = 0; s < steps; s++) {
            XSPROF_SCOPE("step");
            halo(u, n, rank, size);
            compute(u, un, n, alpha);
            double local = 0;
            for (int i = 1; i <= n; i++)
                local += u[i] * u[i];
            MPI_Allreduce(&local, &res, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0)
        printf("demo: %d ranks, %d steps, residual %.12e\n", size, steps, res);
    free(u);
    free(un);
    MPI_Finalize();
    return 0;
}

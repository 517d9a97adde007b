/* An ordinary MPI program, compiled without xsprof: a ring of blocking
 * sends (tag 7, 1000 doubles), a nonblocking neighbour exchange (tag 9,
 * 10 ints each way), a Barrier, an Allreduce and a Bcast. Prints a result
 * that must be identical with and without the profiler. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double buf[1000], in[1000];
    for (int i = 0; i < 1000; i++)
        buf[i] = rank * 1000 + i;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    if (rank % 2 == 0) {
        MPI_Send(buf, 1000, MPI_DOUBLE, next, 7, MPI_COMM_WORLD);
        MPI_Recv(in, 1000, MPI_DOUBLE, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(in, 1000, MPI_DOUBLE, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, 1000, MPI_DOUBLE, next, 7, MPI_COMM_WORLD);
    }
    int out10[10], in10[10];
    for (int i = 0; i < 10; i++)
        out10[i] = rank + i;
    MPI_Request rq[2];
    MPI_Irecv(in10, 10, MPI_INT, prev, 9, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(out10, 10, MPI_INT, next, 9, MPI_COMM_WORLD, &rq[1]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    double local = in[0] + in10[0], total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int root_value = rank == 0 ? 12345 : 0;
    MPI_Bcast(&root_value, 1, MPI_INT, 0, MPI_COMM_WORLD);
    printf("rank %d: ring got %.0f, exchange got %d, total %.0f, bcast %d\n", rank, in[0], in10[0], total, root_value);
    MPI_Finalize();
    return 0;
}

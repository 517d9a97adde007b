/* tests/mpi/mpi_calls.c — a plain MPI program (built without xsprof) whose
 * calls check_mpi_calls.py expects in the rank files: blocking and
 * nonblocking point-to-point with known peers/tags/bytes, wildcards,
 * MPI_STATUS_IGNORE, persistent requests, Sendrecv, collectives on
 * MPI_COMM_WORLD, a split and a dup communicator (incl. v-collectives and
 * MPI_IN_PLACE), a paused section (MPI_Pcontrol), then sleeps argv[1] ms
 * if given. It prints a result that must not change under xsprof. */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double buf[256], rbuf[256];
    for (int i = 0; i < 256; i++)
        buf[i] = rank * 1000 + i;

    /* ring: blocking send/recv, 10 doubles, tag 11; even ranks send first */
    if (rank % 2 == 0) {
        MPI_Send(buf, 10, MPI_DOUBLE, right, 11, MPI_COMM_WORLD);
        MPI_Recv(rbuf, 10, MPI_DOUBLE, left, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(rbuf, 10, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, 10, MPI_DOUBLE, right, 11, MPI_COMM_WORLD);
    }
    double check = rbuf[3];
    /* errno is the program's: xsprof must leave what MPI left */
    errno = 4242;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int errno_after = errno;

    /* nonblocking: 3 messages of 4 ints each way, tag 22, Waitall */
    int ib[3][4], ob[3][4];
    MPI_Request rq[6];
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 4; i++)
            ob[k][i] = rank + k + i;
        MPI_Irecv(ib[k], 4, MPI_INT, left, 22, MPI_COMM_WORLD, &rq[k]);
        MPI_Isend(ob[k], 4, MPI_INT, right, 22, MPI_COMM_WORLD, &rq[3 + k]);
    }
    MPI_Waitall(6, rq, MPI_STATUSES_IGNORE);
    /* a single Isend/Irecv pair completed by MPI_Wait, wildcard source */
    MPI_Request a, b;
    MPI_Irecv(rbuf, 7, MPI_DOUBLE, MPI_ANY_SOURCE, 33, MPI_COMM_WORLD, &a);
    MPI_Isend(buf, 7, MPI_DOUBLE, right, 33, MPI_COMM_WORLD, &b);
    MPI_Wait(&a, MPI_STATUS_IGNORE);
    MPI_Wait(&b, MPI_STATUS_IGNORE);

    /* persistent: 2 rounds, tag 44 */
    MPI_Request p[2];
    MPI_Send_init(buf, 5, MPI_DOUBLE, right, 44, MPI_COMM_WORLD, &p[0]);
    MPI_Recv_init(rbuf, 5, MPI_DOUBLE, left, 44, MPI_COMM_WORLD, &p[1]);
    for (int round = 0; round < 2; round++) {
        MPI_Startall(2, p);
        MPI_Waitall(2, p, MPI_STATUSES_IGNORE);
    }
    MPI_Request_free(&p[0]);
    MPI_Request_free(&p[1]);

    /* Sendrecv: 2 ints, tag 55 right, from left */
    int sv[2] = {rank, rank}, rv[2];
    MPI_Sendrecv(sv, 2, MPI_INT, right, 55, rv, 2, MPI_INT, left, 55, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    /* collectives on WORLD */
    MPI_Barrier(MPI_COMM_WORLD);
    double sum = 0, one = rank;
    MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int bc = rank == 1 ? 77 : 0;
    MPI_Bcast(&bc, 1, MPI_INT, 1, MPI_COMM_WORLD);
    int inplace[4] = {rank, rank, rank, rank};
    MPI_Allreduce(MPI_IN_PLACE, inplace, 4, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int *all = malloc(sizeof(int) * 2 * (size_t)size);
    int mine[2] = {rank, -rank};
    MPI_Gather(mine, 2, MPI_INT, all, 2, MPI_INT, 0, MPI_COMM_WORLD);

    /* split by parity, reversed order; dup of WORLD */
    MPI_Comm half, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int hr, hs;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    /* in `half`, comm rank 0 is the highest world rank of that parity */
    if (hs > 1) {
        if (hr == 0)
            MPI_Send(buf, 3, MPI_DOUBLE, 1, 66, half);
        else if (hr == 1)
            MPI_Recv(rbuf, 3, MPI_DOUBLE, 0, 66, half, MPI_STATUS_IGNORE);
    }
    int hsum = 0;
    MPI_Allreduce(&rank, &hsum, 1, MPI_INT, MPI_SUM, half);
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++) {
        counts[i] = i + 1;
        displs[i] = i * (i + 1) / 2;
    }
    int *gv = malloc(sizeof(int) * (size_t)(size * (size + 1) / 2));
    int mv[64];
    for (int i = 0; i <= rank; i++)
        mv[i] = rank;
    MPI_Allgatherv(mv, rank + 1, MPI_INT, gv, counts, displs, MPI_INT, dup);
    MPI_Barrier(dup);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    /* not recorded: paused (the collective still counts in coll_seq) */
    MPI_Pcontrol(0);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Pcontrol(1);
    /* optional pause (ms) so clock drift shows between the clock samples */
    if (argc > 1)
        usleep((useconds_t)atoi(argv[1]) * 1000u);

    printf("rank %d: check %.0f sum %.0f bcast %d max %d hsum %d gv %d errno %d\n", rank, check, sum, bc, inplace[0],
           hsum, gv[size * (size + 1) / 2 - 1], errno_after);
    free(all);
    free(counts);
    free(displs);
    free(gv);
    MPI_Finalize();
    return 0;
}

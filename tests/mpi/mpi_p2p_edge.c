/* tests/mpi/mpi_p2p_edge.c — point-to-point corner cases, built without
 * xsprof, whose messages the merge must all match (check_trace.py mode
 * "edge", run_case.py --messages): persistent requests started with
 * MPI_Startall; receives cancelled before any message came (they take no
 * message number) and a cancel that comes too late (the message is
 * received); a non-periodic halo whose boundary ranks talk to
 * MPI_PROC_NULL. With the argument "big" (2 ranks): a message of more than
 * 2 GiB, blocking and nonblocking. Prints results that must not change. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITER 5

static void startall(int left, int right) {
    double s[2][16] = {{0}}, rb[2][16];
    MPI_Request q[4];
    MPI_Recv_init(rb[0], 16, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &q[0]);
    MPI_Recv_init(rb[1], 16, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &q[1]);
    MPI_Send_init(s[0], 16, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &q[2]);
    MPI_Send_init(s[1], 16, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &q[3]);
    for (int it = 0; it < ITER; it++) {
        MPI_Startall(4, q);
        MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
    }
    for (int i = 0; i < 4; i++)
        MPI_Request_free(&q[i]);
}

/* Returns the number of receives MPI reports cancelled (expected 3) and
 * sets *late to what MPI_Test_cancelled says of the late cancel (0). */
static int cancels(int rank, int left, int right, int *late) {
    int x[5] = {0}, v = rank, ncanc = 0, c;
    MPI_Status st;
    MPI_Request a, b, d, e;
    /* tag 5: cancelled, then three messages on the same key */
    MPI_Irecv(&x[0], 1, MPI_INT, left, 5, MPI_COMM_WORLD, &a);
    MPI_Cancel(&a);
    MPI_Wait(&a, &st);
    MPI_Test_cancelled(&st, &c);
    ncanc += c;
    /* tag 6: a receive posted after the cancel completes before the cancelled one */
    MPI_Irecv(&x[1], 1, MPI_INT, left, 6, MPI_COMM_WORLD, &a);
    MPI_Cancel(&a);
    MPI_Irecv(&x[2], 1, MPI_INT, left, 6, MPI_COMM_WORLD, &b);
    /* tag 7: the second receive is posted before the cancel */
    MPI_Irecv(&x[3], 1, MPI_INT, left, 7, MPI_COMM_WORLD, &d);
    MPI_Irecv(&x[4], 1, MPI_INT, left, 7, MPI_COMM_WORLD, &e);
    MPI_Cancel(&d);
    MPI_Wait(&d, &st);
    MPI_Test_cancelled(&st, &c);
    ncanc += c;
    MPI_Barrier(MPI_COMM_WORLD); /* nothing is sent on 5, 6, 7 before every rank cancelled */
    MPI_Send(&v, 1, MPI_INT, right, 6, MPI_COMM_WORLD);
    MPI_Wait(&b, MPI_STATUS_IGNORE);
    MPI_Wait(&a, &st);
    MPI_Test_cancelled(&st, &c);
    ncanc += c;
    MPI_Send(&v, 1, MPI_INT, right, 7, MPI_COMM_WORLD);
    MPI_Wait(&e, MPI_STATUS_IGNORE);
    for (int i = 0; i < 3; i++)
        MPI_Sendrecv(&v, 1, MPI_INT, right, 5, &x[0], 1, MPI_INT, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    /* tag 3: the message has arrived when the cancel comes: it is received */
    double s[4] = {0}, r[4];
    int flag = 0;
    MPI_Irecv(r, 4, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, &a);
    MPI_Send(s, 4, MPI_DOUBLE, right, 3, MPI_COMM_WORLD);
    while (!flag)
        MPI_Request_get_status(a, &flag, MPI_STATUS_IGNORE);
    MPI_Cancel(&a);
    MPI_Wait(&a, &st);
    MPI_Test_cancelled(&st, late);
    MPI_Send(s, 4, MPI_DOUBLE, right, 3, MPI_COMM_WORLD);
    MPI_Recv(r, 4, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return ncanc;
}

/* Non-periodic 1-D halo: rank 0 has no lower, the last rank no upper neighbour. */
static int proc_null(int rank, int size) {
    int up = rank + 1 < size ? rank + 1 : MPI_PROC_NULL, dn = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    double a[2][8] = {{0}}, b[2][8];
    int real = 0;
    for (int it = 0; it < 3; it++) {
        MPI_Request q[4];
        MPI_Irecv(b[0], 8, MPI_DOUBLE, dn, 8, MPI_COMM_WORLD, &q[0]);
        MPI_Irecv(b[1], 8, MPI_DOUBLE, up, 9, MPI_COMM_WORLD, &q[1]);
        MPI_Isend(a[0], 8, MPI_DOUBLE, up, 8, MPI_COMM_WORLD, &q[2]);
        MPI_Isend(a[1], 8, MPI_DOUBLE, dn, 9, MPI_COMM_WORLD, &q[3]);
        MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
        real += (up != MPI_PROC_NULL) + (dn != MPI_PROC_NULL);
    }
    MPI_Sendrecv(a[0], 8, MPI_DOUBLE, up, 10, b[0], 8, MPI_DOUBLE, dn, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(a[0], 8, MPI_DOUBLE, MPI_PROC_NULL, 11, MPI_COMM_WORLD);
    MPI_Status st;
    MPI_Recv(b[0], 8, MPI_DOUBLE, MPI_PROC_NULL, 11, MPI_COMM_WORLD, &st);
    int n = -1;
    MPI_Get_count(&st, MPI_DOUBLE, &n);
    MPI_Request p[2];
    MPI_Send_init(a[1], 8, MPI_DOUBLE, MPI_PROC_NULL, 12, MPI_COMM_WORLD, &p[0]);
    MPI_Recv_init(b[1], 8, MPI_DOUBLE, MPI_PROC_NULL, 12, MPI_COMM_WORLD, &p[1]);
    MPI_Startall(2, p);
    MPI_Waitall(2, p, MPI_STATUSES_IGNORE);
    MPI_Request_free(&p[0]);
    MPI_Request_free(&p[1]);
    return real * 100 + n;
}

/* 257 blocks of 8 MiB: the sender sends one block 257 times (a send buffer
 * may overlap itself), so only the receiver holds 2 GiB. */
static void big(int rank) {
    const int nblk = 257;
    MPI_Datatype blk, rep;
    MPI_Type_contiguous(1 << 20, MPI_DOUBLE, &blk);
    MPI_Type_create_hvector(nblk, 1, 0, blk, &rep);
    MPI_Type_commit(&blk);
    MPI_Type_commit(&rep);
    for (int nb = 0; nb < 2; nb++) {
        MPI_Request q = MPI_REQUEST_NULL;
        if (rank == 0) {
            double *buf = calloc(1 << 20, sizeof(double));
            if (nb) {
                MPI_Isend(buf, 1, rep, 1, 1, MPI_COMM_WORLD, &q);
                MPI_Wait(&q, MPI_STATUS_IGNORE);
            } else
                MPI_Send(buf, 1, rep, 1, 1, MPI_COMM_WORLD);
            free(buf);
        } else if (rank == 1) {
            char *buf = malloc((size_t)nblk << 23);
            MPI_Status st;
            if (nb) {
                MPI_Irecv(buf, nblk, blk, 0, 1, MPI_COMM_WORLD, &q);
                MPI_Wait(&q, &st);
            } else
                MPI_Recv(buf, nblk, blk, 0, 1, MPI_COMM_WORLD, &st);
            MPI_Count got = 0;
            MPI_Get_elements_x(&st, MPI_BYTE, &got);
            printf("rank 1: received %lld bytes\n", (long long)got);
            free(buf);
        }
    }
    MPI_Type_free(&rep);
    MPI_Type_free(&blk);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && strcmp(argv[1], "big") == 0) {
        big(rank);
    } else {
        int right = (rank + 1) % size, left = (rank + size - 1) % size, late = -1;
        startall(left, right);
        int ncanc = cancels(rank, left, right, &late);
        int pn = proc_null(rank, size);
        printf("rank %d: cancelled %d late cancel %d halo %d\n", rank, ncanc, late, pn);
    }
    MPI_Finalize();
    return 0;
}

/* tests/mpi/mpi_p2p_trunc.c — receives of messages longer than their
 * buffer under MPI_ERRORS_RETURN: MPI_ERR_TRUNCATE, but the message is
 * matched and consumed (the status names it), so the receive takes its
 * number like any other; the next message of its key goes to the next
 * receive. Every rank receives from its left neighbour, per key first a
 * truncated message (8 ints into a buffer of 4) then one that fits
 * (2 ints, then 3): MPI_Recv, MPI_Irecv + MPI_Wait, MPI_ANY_SOURCE Irecvs
 * completed by MPI_Waitall (MPI_ERR_IN_STATUS), MPI_Sendrecv, MPI_Mprobe +
 * MPI_Mrecv, MPI_Irecv + an MPI_Test loop. 18 messages per rank; a receive
 * paired with another send shows as a byte mismatch. Built without
 * xsprof; prints results that must not change. */
#include <mpi.h>
#include <stdio.h>

/* 1: truncated, 0: fine, else: another error */
static int trunc_class(int rc) {
    int c = MPI_SUCCESS;
    if (rc == MPI_SUCCESS)
        return 0;
    MPI_Error_class(rc, &c);
    return c == MPI_ERR_TRUNCATE ? 1 : 2;
}

static void send3(int *buf, int right, int tag) {
    MPI_Send(buf, 8, MPI_INT, right, tag, MPI_COMM_WORLD);
    MPI_Send(buf, 2, MPI_INT, right, tag, MPI_COMM_WORLD);
    MPI_Send(buf, 3, MPI_INT, right, tag, MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int s[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[3][4];
    MPI_Status st[3];
    MPI_Request q[3];
    char got[64];
    int ng = 0, n;

    /* the sends go out first (eager: 32 bytes), the receives come after a barrier */
    for (int tag = 1; tag <= 6; tag++)
        if (tag != 4)
            send3(s, right, tag);
    MPI_Barrier(MPI_COMM_WORLD);

    /* tag 1: MPI_Recv */
    for (int i = 0; i < 3; i++) {
        got[ng++] = (char)('0' + trunc_class(MPI_Recv(b[i], 4, MPI_INT, left, 1, MPI_COMM_WORLD, &st[i])));
        MPI_Get_count(&st[i], MPI_INT, &n);
        got[ng++] = (char)('0' + n);
    }
    /* tag 2: MPI_Irecv + MPI_Wait */
    for (int i = 0; i < 3; i++) {
        MPI_Irecv(b[i], 4, MPI_INT, left, 2, MPI_COMM_WORLD, &q[0]);
        got[ng++] = (char)('0' + trunc_class(MPI_Wait(&q[0], &st[0])));
    }
    /* tag 3: three MPI_ANY_SOURCE receives completed by one MPI_Waitall */
    for (int i = 0; i < 3; i++)
        MPI_Irecv(b[i], 4, MPI_INT, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &q[i]);
    int rc = MPI_Waitall(3, q, st);
    got[ng++] = (char)('0' + (rc == MPI_ERR_IN_STATUS) + trunc_class(st[0].MPI_ERROR) * 2);
    /* tag 4: MPI_Sendrecv, the receive half truncated, then fits */
    int len[3] = {8, 2, 3};
    for (int i = 0; i < 3; i++)
        got[ng++] = (char)('0' + trunc_class(MPI_Sendrecv(s, len[i], MPI_INT, right, 4, b[i], 4, MPI_INT, left, 4,
                                                  MPI_COMM_WORLD, &st[0])));
    /* tag 5: MPI_Mprobe + MPI_Mrecv */
    for (int i = 0; i < 3; i++) {
        MPI_Message m;
        MPI_Mprobe(left, 5, MPI_COMM_WORLD, &m, &st[0]);
        got[ng++] = (char)('0' + trunc_class(MPI_Mrecv(b[i], 4, MPI_INT, &m, &st[0])));
    }
    /* tag 6: MPI_Irecv + an MPI_Test loop */
    for (int i = 0; i < 3; i++) {
        MPI_Irecv(b[i], 4, MPI_INT, left, 6, MPI_COMM_WORLD, &q[0]);
        int flag = 0, r = MPI_SUCCESS;
        while (!flag && r == MPI_SUCCESS)
            r = MPI_Test(&q[0], &flag, &st[0]);
        got[ng++] = (char)('0' + trunc_class(r));
    }
    got[ng] = 0;
    printf("rank %d: %s %d\n", rank, got, b[2][2]);
    MPI_Finalize();
    return 0;
}

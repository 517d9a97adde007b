/* tests/mpi/mpi_p2p_order.c — point-to-point cases where what xsprof
 * numbers, and when, decides which send the merge pairs a receive with
 * (run_case.py --messages): persistent requests left inactive in a
 * Waitall, Waitany, Testsome, Wait or Test (MPI completes nothing for
 * them: an empty status at once), and messages matched by MPI_Mprobe /
 * MPI_Improbe before the program posts another receive on the same key
 * (the probed message is the earlier one), and receives cancelled then
 * freed with MPI_Request_free (no status says they were cancelled: they
 * must not stay receives). The two messages of a key have
 * different sizes, so a receive paired with the wrong send shows as a
 * byte mismatch. Built without xsprof; prints results that must not change. */
#include <mpi.h>
#include <stdio.h>

/* Two persistent pairs (tags 1 and 2); the tag-2 pair is not started in
 * every round but always waited on. 6 messages received per rank. */
static int inactive(int left, int right) {
    double s[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}}, r[2][4] = {{0}};
    MPI_Request q[4];
    MPI_Recv_init(r[0], 4, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &q[0]);
    MPI_Send_init(s[0], 4, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &q[1]);
    MPI_Recv_init(r[1], 2, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &q[2]);
    MPI_Send_init(s[1], 2, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &q[3]);
    MPI_Startall(4, q);
    MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
    MPI_Startall(2, q); /* tags 2 inactive */
    MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
    int idx = 0, n = 0, out = 0, ind[4], flag = 0;
    MPI_Startall(2, q);
    for (;;) {
        MPI_Waitany(4, q, &idx, MPI_STATUS_IGNORE);
        if (idx == MPI_UNDEFINED)
            break;
        n++;
    }
    MPI_Startall(2, q);
    for (int done = 0; done < 2; done += out)
        MPI_Testsome(4, q, &out, ind, MPI_STATUSES_IGNORE);
    MPI_Start(&q[2]);
    MPI_Start(&q[3]);
    MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
    MPI_Wait(&q[2], MPI_STATUS_IGNORE);
    MPI_Test(&q[3], &flag, MPI_STATUS_IGNORE);
    for (int i = 0; i < 4; i++)
        MPI_Request_free(&q[i]);
    return (int)(r[0][3] + r[1][1]) * 100 + n * 10 + flag;
}

/* Tag 3 (Mprobe, Mrecv) and tag 4 (Improbe, Imrecv): 4 ints then 8 ints
 * from the left; the probe matches the first, a receive posted after it
 * gets the second. 4 messages received per rank. */
static int probed(int left, int right) {
    int a[4] = {1, 2, 3, 4}, b[8] = {5, 6, 7, 8, 9, 10, 11, 12}, ra[4] = {0}, rb[8] = {0}, sum = 0;
    MPI_Request sq[4], q;
    MPI_Message m;
    MPI_Status st;
    for (int tag = 3; tag <= 4; tag++) {
        MPI_Isend(a, 4, MPI_INT, right, tag, MPI_COMM_WORLD, &sq[2 * (tag - 3)]);
        MPI_Isend(b, 8, MPI_INT, right, tag, MPI_COMM_WORLD, &sq[2 * (tag - 3) + 1]);
    }
    MPI_Mprobe(left, 3, MPI_COMM_WORLD, &m, &st);
    MPI_Irecv(rb, 8, MPI_INT, left, 3, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_Mrecv(ra, 4, MPI_INT, &m, MPI_STATUS_IGNORE);
    sum += ra[3] + rb[7];
    int flag = 0;
    while (!flag)
        MPI_Improbe(MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &flag, &m, &st);
    MPI_Recv(rb, 8, MPI_INT, left, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Imrecv(ra, 4, MPI_INT, &m, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    sum += ra[3] + rb[7];
    MPI_Waitall(4, sq, MPI_STATUSES_IGNORE);
    return sum;
}

/* Tag 5: an Irecv and a started persistent receive, each cancelled and
 * freed, then one message. 1 message received per rank. */
static int cancel_free(int left, int right) {
    int x = 0, y = 0, v = right;
    MPI_Request a, p;
    MPI_Irecv(&x, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &a);
    MPI_Recv_init(&x, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &p);
    MPI_Start(&p);
    MPI_Cancel(&a);
    MPI_Request_free(&a);
    MPI_Cancel(&p);
    MPI_Request_free(&p);
    MPI_Barrier(MPI_COMM_WORLD); /* nothing is sent on tag 5 before every rank cancelled */
    MPI_Sendrecv(&v, 1, MPI_INT, right, 5, &y, 1, MPI_INT, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return y;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int in = inactive(left, right);
    int pr = probed(left, right);
    int cf = cancel_free(left, right);
    printf("rank %d: inactive %d probed %d cancel_free %d\n", rank, in, pr, cf);
    MPI_Finalize();
    return 0;
}

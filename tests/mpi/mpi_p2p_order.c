/* tests/mpi/mpi_p2p_order.c — point-to-point cases where what xsprof
 * numbers, and when, decides which send the merge pairs a receive with
 * (run_case.py --messages): persistent requests left inactive in a
 * Waitall, Waitany, Testsome, Wait or Test (MPI completes nothing for
 * them: an empty status at once). Built without xsprof; prints results
 * that must not change. */
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

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int in = inactive(left, right);
    printf("rank %d: inactive %d\n", rank, in);
    MPI_Finalize();
    return 0;
}

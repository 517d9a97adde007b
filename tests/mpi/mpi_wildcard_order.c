/* tests/mpi/mpi_wildcard_order.c — receives posted without a known key
 * (MPI_ANY_SOURCE, MPI_ANY_TAG, persistent receives started so) beside
 * receives posted with one, completed out of their posting order. MPI
 * matches the receives of a (source, tag) in posting order; xsprof
 * numbers the floating ones only at completion, and the merge must put
 * them back in posting order (run_case.py checks that every merged
 * message's receive got the bytes of its send, in memory and streamed).
 * Rank 0 receives, ranks 1 and 2 send; the two messages of a key have
 * different sizes. Built without xsprof; prints results that must not
 * change. 20 messages. */
#include <mpi.h>
#include <stdio.h>

static int count(const MPI_Status *st)
{
    int n = 0;
    MPI_Get_count(st, MPI_INT, &n);
    return n;
}

/* Rank 1 sends 4 then 8 ints with tag, once rank 0 has posted. */
static void two_from_1(int rank, int tag)
{
    int v[8] = {0};
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Send(v, 4, MPI_INT, 0, tag, MPI_COMM_WORLD);
        MPI_Send(v, 8, MPI_INT, 0, tag, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Two receives posted first/second, waited second first: prints what each got. */
static void pair(int rank, int tag, int src1, int tag1, int src2, int tag2, const char *what)
{
    int x[8], y[8];
    MPI_Request a = MPI_REQUEST_NULL, b = MPI_REQUEST_NULL;
    MPI_Status sa, sb;
    if (rank == 0) {
        MPI_Irecv(x, 8, MPI_INT, src1, tag1, MPI_COMM_WORLD, &a);
        MPI_Irecv(y, 8, MPI_INT, src2, tag2, MPI_COMM_WORLD, &b);
    }
    two_from_1(rank, tag);
    if (rank == 0) {
        MPI_Wait(&b, &sb);
        MPI_Wait(&a, &sa);
        printf("rank 0: %s: first posted got %d ints, second %d\n", what, count(&sa), count(&sb));
    }
}

/* A persistent MPI_ANY_SOURCE receive started before a fixed Irecv, twice. */
static void persistent(int rank)
{
    int x[8], y[8];
    MPI_Request p = MPI_REQUEST_NULL, f = MPI_REQUEST_NULL;
    MPI_Status sp, sf;
    if (rank == 0)
        MPI_Recv_init(x, 8, MPI_INT, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &p);
    for (int round = 0; round < 2; round++) {
        if (rank == 0) {
            MPI_Start(&p);
            MPI_Irecv(y, 8, MPI_INT, 1, 4, MPI_COMM_WORLD, &f);
        }
        two_from_1(rank, 4);
        if (rank == 0) {
            MPI_Wait(&f, &sf);
            MPI_Wait(&p, &sp);
            printf("rank 0: persistent round %d: started first got %d ints, Irecv %d\n", round, count(&sp),
                   count(&sf));
        }
    }
    if (rank == 0)
        MPI_Request_free(&p);
}

/* Master and workers: three MPI_ANY_SOURCE receives kept posted, each
 * reposted when MPI_Waitany returns it; ranks 1 and 2 send 1, 2, 3 and
 * 5, 6, 7 ints. */
static void workers(int rank)
{
    int buf[3][8], got = 0, sum = 0;
    MPI_Request q[3];
    if (rank == 0)
        for (int i = 0; i < 3; i++)
            MPI_Irecv(buf[i], 8, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &q[i]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1 || rank == 2) {
        int v[8] = {0};
        for (int n = 1; n <= 3; n++)
            MPI_Send(v, n + (rank == 2 ? 4 : 0), MPI_INT, 0, 5, MPI_COMM_WORLD);
    }
    while (rank == 0 && got < 6) {
        int idx;
        MPI_Status st;
        MPI_Waitany(3, q, &idx, &st);
        sum += count(&st);
        if (++got <= 3)
            MPI_Irecv(buf[idx], 8, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &q[idx]);
    }
    if (rank == 0)
        printf("rank 0: workers: %d messages, %d ints\n", got, sum);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* A blocking MPI_ANY_SOURCE receive while a fixed Irecv of the key is
 * posted: the Irecv gets the first message. */
static void blocking(int rank)
{
    int x[8], y[8];
    MPI_Request f = MPI_REQUEST_NULL;
    MPI_Status sr, sf;
    if (rank == 0)
        MPI_Irecv(x, 8, MPI_INT, 1, 6, MPI_COMM_WORLD, &f);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Send(x, 4, MPI_INT, 0, 6, MPI_COMM_WORLD);
        MPI_Send(x, 8, MPI_INT, 0, 6, MPI_COMM_WORLD);
    }
    if (rank == 0) {
        MPI_Recv(y, 8, MPI_INT, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, &sr);
        MPI_Wait(&f, &sf);
        printf("rank 0: blocking: Irecv got %d ints, Recv %d\n", count(&sf), count(&sr));
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* An MPI_ANY_SOURCE Irecv posted before two fixed Irecvs of the key it
 * matches: it gets the first message, the first fixed one is cancelled,
 * the second gets the next message. */
static void cancelled(int rank)
{
    int x[8], y[8], z[8], v[8] = {0};
    MPI_Request f = MPI_REQUEST_NULL, a = MPI_REQUEST_NULL, b = MPI_REQUEST_NULL;
    MPI_Status sf, sa, sb;
    if (rank == 0) {
        MPI_Irecv(x, 8, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &f);
        MPI_Irecv(y, 8, MPI_INT, 1, 7, MPI_COMM_WORLD, &a);
        MPI_Irecv(z, 8, MPI_INT, 1, 7, MPI_COMM_WORLD, &b);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        MPI_Send(v, 4, MPI_INT, 0, 7, MPI_COMM_WORLD);
    int cancelled = 0;
    if (rank == 0) {
        MPI_Wait(&f, &sf);
        MPI_Cancel(&a);
        MPI_Wait(&a, &sa);
        MPI_Test_cancelled(&sa, &cancelled);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        MPI_Send(v, 8, MPI_INT, 0, 7, MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Wait(&b, &sb);
        printf("rank 0: cancelled: any source got %d ints, fixed one cancelled %d, the next got %d\n", count(&sf),
               cancelled, count(&sb));
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    pair(rank, 1, MPI_ANY_SOURCE, 1, 1, 1, "any source, then fixed");
    pair(rank, 2, MPI_ANY_SOURCE, 2, MPI_ANY_SOURCE, 2, "two any source");
    pair(rank, 3, 1, MPI_ANY_TAG, 1, 3, "any tag, then fixed");
    persistent(rank);
    workers(rank);
    blocking(rank);
    cancelled(rank);
    MPI_Finalize();
    return 0;
}

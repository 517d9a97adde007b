/* tests/mpi/mpi_cancel_threads.c — receives cancelled while other threads
 * post, complete and cancel receives on the same key (MPI_THREAD_MULTIPLE).
 * Rank 0 sends N messages (tag 1) to rank 1, where NT threads each post a
 * receive, test it a few times and cancel it if nothing came; a receive
 * whose cancel comes too late holds a message. Every message must be
 * matched by the merge (run_case.py --messages N): each cancel gives its
 * number back and moves down exactly the receives posted after it. Built
 * without xsprof; prints results that must not change. */
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#define N 20000
#define NT 4
#define NIDLE 4096

static _Atomic int received;

static void *receiver(void *arg) {
    (void)arg;
    while (atomic_load(&received) < N) {
        MPI_Request q;
        MPI_Status st;
        int x, flag = 0, cancelled = 0;
        MPI_Irecv(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &q);
        for (int i = 0; i < 3 && !flag; i++)
            MPI_Test(&q, &flag, &st);
        if (!flag) {
            MPI_Cancel(&q);
            MPI_Wait(&q, &st);
            MPI_Test_cancelled(&st, &cancelled);
        }
        if (!cancelled)
            atomic_fetch_add(&received, 1);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (provided < MPI_THREAD_MULTIPLE) {
        printf("rank %d: no MPI_THREAD_MULTIPLE\n", rank);
    } else if (rank == 0) {
        for (int i = 0; i < N; i++)
            MPI_Send(&i, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
    } else if (rank == 1) {
        /* many requests (inactive persistent ones) in the table: like a
         * code with many halo buffers, and a cancel has more to look at */
        static MPI_Request idle[NIDLE];
        static int ibuf[NIDLE];
        for (int i = 0; i < NIDLE; i++)
            MPI_Recv_init(&ibuf[i], 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &idle[i]);
        pthread_t t[NT];
        for (int i = 0; i < NT; i++)
            pthread_create(&t[i], NULL, receiver, NULL);
        for (int i = 0; i < NT; i++)
            pthread_join(t[i], NULL);
        for (int i = 0; i < NIDLE; i++)
            MPI_Request_free(&idle[i]);
        printf("rank 1: received %d\n", atomic_load(&received));
    }
    MPI_Finalize();
    return 0;
}

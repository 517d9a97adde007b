/* tests/mpi/ompi_cancel_race.c — Open MPI's cancel race, without xsprof.
 * Not a test of the suite: the evidence behind mpi_cancel_threads' form
 * (tests/mpi/README.md), to be run again on a new Open MPI.
 *
 * Rank 0 sends the integers 0..N-1 (tag 1) to rank 1, where NT threads each
 * loop: Irecv into a buffer holding -1, up to three MPI_Test, else
 * MPI_Cancel + MPI_Wait. MPI promises that a cancelled receive took no
 * message, so all N arrive. When one does not, a watchdog reports after
 * STALL_S seconds without progress: which value is missing, and whether a
 * receive reported cancelled was seen holding a message. Exit status 3
 * then, 0 when all arrived. */
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#define N 20000
#define NT 4
#define STALL_S 10

static _Atomic int received, cancelled_with_data, value_in_cancelled = -1;
static _Atomic unsigned char got[N];

static void *receiver(void *arg) {
    (void)arg;
    while (atomic_load(&received) < N) {
        MPI_Request q;
        MPI_Status st;
        int x = -1, flag = 0, cancelled = 0;
        MPI_Irecv(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &q);
        for (int i = 0; i < 3 && !flag; i++)
            MPI_Test(&q, &flag, &st);
        if (!flag) {
            MPI_Cancel(&q);
            MPI_Wait(&q, &st);
            MPI_Test_cancelled(&st, &cancelled);
        }
        if (!cancelled) {
            atomic_fetch_add(&received, 1);
            if (x >= 0 && x < N)
                got[x] = 1;
        } else if (x != -1) {
            atomic_fetch_add(&cancelled_with_data, 1);
            atomic_store(&value_in_cancelled, x);
        }
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
        pthread_t t[NT];
        for (int i = 0; i < NT; i++)
            pthread_create(&t[i], NULL, receiver, NULL);
        int last = -1, still = 0;
        while (atomic_load(&received) < N && still < STALL_S) {
            sleep(1);
            int r = atomic_load(&received);
            still = r == last ? still + 1 : 0;
            last = r;
        }
        if (atomic_load(&received) < N) {
            int missing = 0, first = -1;
            for (int i = 0; i < N; i++)
                if (!got[i] && missing++ == 0)
                    first = i;
            printf("rank 1: STALLED: received %d of %d, missing %d (first: %d); receives reported cancelled "
                   "that held a message: %d (value %d)\n",
                   atomic_load(&received), N, missing, first, atomic_load(&cancelled_with_data),
                   atomic_load(&value_in_cancelled));
            fflush(stdout);
            _exit(3); /* the receiver threads would wait forever */
        }
        for (int i = 0; i < NT; i++)
            pthread_join(t[i], NULL);
        printf("rank 1: received %d of %d\n", atomic_load(&received), N);
    }
    MPI_Finalize();
    return 0;
}

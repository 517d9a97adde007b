/* tests/mpi/mpi_cancel_threads.c — receives cancelled while other threads
 * post, complete and cancel receives on the same key (MPI_THREAD_MULTIPLE).
 *
 * Rank 1 runs NT threads in rounds. In round r every thread posts one
 * receive (tag 1, from rank 0); once all are posted, rank 0 is asked for
 * k = r % (NT + 1) messages and sends them. The threads poll their receives
 * with MPI_Request_get_status (which completes nothing) until k of them
 * hold a message; then a receive without one is cancelled (the cancel must
 * succeed), and one with a message is completed by MPI_Test in even rounds
 * and cancelled too late in odd ones (the cancel must fail, MPI_Wait hands
 * the message over). A thread posts its next round's receive as soon as its
 * own is settled, so posts race other threads' cancels and completions.
 * The collector must number all of it so that the merge pairs every message
 * (run_case.py --messages): each cancel gives its number back and moves down
 * exactly the receives posted after it.
 *
 * Why no cancel races an arriving message: Open MPI 4.1's ob1 (vader and
 * tcp) can let a receive that MPI_Cancel reports cancelled take the message
 * that arrives during the cancel; the message is gone and a receiver that
 * waits for it waits forever. That made the earlier form of this test (each
 * thread: Irecv, three MPI_Test, MPI_Cancel, while rank 0 streamed 20000
 * sends) hang about once in ten runs under ThreadSanitizer, without xsprof
 * loaded (tests/mpi/README.md, "mpi_cancel_threads"). Here every cancel
 * happens while no message of its key is in flight.
 *
 * A watchdog ends a run that makes no progress for STALL_S seconds with a
 * line naming what it waited for. Built without xsprof; prints results that
 * must not change. */
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#define ROUNDS 1000
#define NT 4
#define NIDLE 4096
#define STALL_S 60
#define TAG_MSG 1
#define TAG_IDLE 2
#define TAG_ASK 3

static pthread_barrier_t posted;
static _Atomic long matched; /* receives seen holding a message, all rounds */
static _Atomic long asked;   /* messages asked of rank 0, all rounds */
static _Atomic int round_now;
static _Atomic int received, cancelled, late, errors;

static int round_k(int r) { return r % (NT + 1); }

static void fail(int r, const char *what) {
    fprintf(stderr, "rank 1: round %d: %s\n", r, what);
    atomic_fetch_add(&errors, 1);
}

static void *receiver(void *arg) {
    int id = (int)(long)arg;
    MPI_Request q;
    MPI_Status st;
    int x; /* written by MPI only: TSan sees no access of ours to race with */
    long want = 0;
    MPI_Irecv(&x, 1, MPI_INT, 0, TAG_MSG, MPI_COMM_WORLD, &q);
    for (int r = 0; r < ROUNDS; r++) {
        pthread_barrier_wait(&posted); /* every thread's round-r receive is posted */
        int k = round_k(r);
        want += k;
        if (id == 0) {
            atomic_store(&round_now, r);
            atomic_fetch_add(&asked, k);
            MPI_Send(&k, 1, MPI_INT, 0, TAG_ASK, MPI_COMM_WORLD);
        }
        int has = 0, flag = 0, was_cancelled = 0;
        for (unsigned nap = 20; atomic_load(&matched) < want;) {
            if (!has) {
                MPI_Request_get_status(q, &flag, &st);
                if (flag) {
                    has = 1;
                    atomic_fetch_add(&matched, 1);
                    continue;
                }
            }
            /* Five spinning threads per rank on two cores would leave rank 0
             * waiting for a time slice in every round; the growing nap keeps
             * the number of recorded polls small on a loaded machine (each
             * poll is an MPI record: 940 000 of them with a fixed 20 us nap
             * at load 14 under TSan, and the merge passed the time limit). */
            usleep(nap);
            if (nap < 1000)
                nap *= 2;
        }
        if (!has) { /* no message is on its way: the cancel must succeed */
            MPI_Cancel(&q);
            MPI_Wait(&q, &st);
            MPI_Test_cancelled(&st, &was_cancelled);
            if (was_cancelled)
                atomic_fetch_add(&cancelled, 1);
            else
                fail(r, "a cancel of a receive that held no message failed");
        } else if (r % 2 == 0) {
            MPI_Test(&q, &flag, &st);
            if (!flag)
                fail(r, "MPI_Test did not complete a receive that held a message");
        } else { /* too late: the receive keeps its message */
            MPI_Cancel(&q);
            MPI_Wait(&q, &st);
            MPI_Test_cancelled(&st, &was_cancelled);
            if (was_cancelled)
                fail(r, "a receive that held a message was cancelled");
            else
                atomic_fetch_add(&late, 1);
        }
        if (has && !was_cancelled)
            atomic_fetch_add(&received, 1);
        if (r + 1 < ROUNDS)
            MPI_Irecv(&x, 1, MPI_INT, 0, TAG_MSG, MPI_COMM_WORLD, &q);
    }
    return NULL;
}

/* Ends a stalled run with what it waited for (the job fails, mpiexec ends
 * the other rank) instead of leaving it to the test's timeout. */
static void *watchdog(void *arg) {
    (void)arg;
    long last = -1;
    int still = 0;
    for (;;) {
        sleep(1);
        long now = atomic_load(&matched) + atomic_load(&round_now); /* both only grow */
        if (now != last) {
            last = now;
            still = 0;
        } else if (++still >= STALL_S) {
            fprintf(stderr,
                    "rank 1: no progress for %d s in round %d: waiting for the %ld messages asked of rank 0 "
                    "to reach posted receives, %ld did\n",
                    STALL_S, atomic_load(&round_now), atomic_load(&asked), atomic_load(&matched));
            _exit(2);
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
        long sent = 0;
        for (int r = 0; r < ROUNDS; r++) {
            int k;
            MPI_Recv(&k, 1, MPI_INT, 1, TAG_ASK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int i = 0; i < k; i++, sent++)
                MPI_Send(&i, 1, MPI_INT, 1, TAG_MSG, MPI_COMM_WORLD);
        }
        printf("rank 0: sent %ld\n", sent);
    } else if (rank == 1) {
        /* many requests (inactive persistent ones) in the table: like a
         * code with many halo buffers, and a cancel has more to look at */
        static MPI_Request idle[NIDLE];
        static int ibuf[NIDLE];
        for (int i = 0; i < NIDLE; i++)
            MPI_Recv_init(&ibuf[i], 1, MPI_INT, 0, TAG_IDLE, MPI_COMM_WORLD, &idle[i]);
        pthread_barrier_init(&posted, NULL, NT);
        pthread_t t[NT], w;
        pthread_create(&w, NULL, watchdog, NULL);
        pthread_detach(w);
        for (long i = 0; i < NT; i++)
            pthread_create(&t[i], NULL, receiver, (void *)i);
        for (int i = 0; i < NT; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&posted);
        for (int i = 0; i < NIDLE; i++)
            MPI_Request_free(&idle[i]);
        printf("rank 1: received %d, cancelled %d (too late: %d), errors %d\n", atomic_load(&received),
               atomic_load(&cancelled), atomic_load(&late), atomic_load(&errors));
    }
    MPI_Finalize();
    return atomic_load(&errors) ? 1 : 0;
}

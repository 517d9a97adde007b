/* tests/report/planted.c — an MPI program that plants one known problem, so
 * the report can be checked against what was planted. Usage:
 *   planted MODE MS [ITER]
 * MODE: imbalance | late_sender | wrong_order | wrong_order_sent | late_receiver | late_bcast | early_reduce |
 *       early_scan | poll_sender | sendrecv_eager | sendrecv_rendezvous | outside | threads (2 ranks)
 *       | poll_receiver | steady | selfpoll, farcause (2 ranks) | hidden_imbalance (run with XSPROF_SAMPLE_HZ)
 *       | tinyhot | eager (2 ranks) | unreceived | counters
 * MS: the planted delay (a sleep inside a region), ITER: repetitions (steady).
 * Regions are recorded through xsprof's API when libxsprof-mpi.so is loaded
 * (LD_PRELOAD); the program is not linked against xsprof, so the symbols are
 * weak and the program also runs without it. Ranks that take no part in the
 * planted exchange sleep the same time elsewhere so that no second wait
 * competes with the planted one. */
#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern int xsprof_region_begin(const char *name) __attribute__((weak));
extern int xsprof_region_end(void) __attribute__((weak));

static void begin(const char *n)
{
    if (xsprof_region_begin)
        xsprof_region_begin(n);
}

static void end(void)
{
    if (xsprof_region_end)
        xsprof_region_end();
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void sleep_us(int us)
{
    struct timespec ts = {0, (long)us * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ms of this thread's CPU time (sampled, unlike a sleep) */
static double spin_ms(int ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    double s = 1.0;
    do {
        for (int i = 0; i < 100000; i++)
            s = s * 1.0000001 + 1e-9;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000.0 + (b.tv_nsec - a.tv_nsec) * 1e-6 < ms);
    return s;
}

/* hidden_imbalance: the work every rank does, and the extra the last rank
 * does, in functions without any xsprof region */
static __attribute__((noinline)) double common_work(int ms) { return spin_ms(ms); }
static __attribute__((noinline)) double burn_extra(int ms) { return spin_ms(ms) * 2.0 + ms; } /* not foldable into common_work (-fipa-icf) */

static void in_region(const char *name, int ms)
{
    begin(name);
    sleep_ms(ms);
    end();
}

/* The wrong_order modes' receiver (rank 2): after 20 ms, rank 1's message
 * (tag 2), then rank 0's (tag 1). */
static void receive_in_order(void)
{
    double y = 0;
    in_region("prepare", 20);
    begin("consume");
    MPI_Recv(&y, 1, MPI_DOUBLE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(&y, 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    end();
}

/* A polling loop: MPI_Test every 50 us until the request completed. */
static void test_until_done(MPI_Request *rq)
{
    int flag = 0;
    for (;;) {
        MPI_Test(rq, &flag, MPI_STATUS_IGNORE);
        if (flag)
            break;
        sleep_us(50);
    }
}

/* threads mode: thread t of each rank exchanges one message with thread t
 * of the other rank (tag t) in a Sendrecv; rank 1's threads first spend
 * the planted delay in `produce` */
static int g_rank, g_ms;

static void *exchange(void *p)
{
    int t = (int)(intptr_t)p;
    double x = t, y = 0;
    if (g_rank == 1)
        in_region("produce", g_ms);
    begin("exchange");
    MPI_Sendrecv(&x, 1, MPI_DOUBLE, 1 - g_rank, t, &y, 1, MPI_DOUBLE, 1 - g_rank, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    end();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODE MS [ITER]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    int ms = atoi(argv[2]), iter = argc > 3 ? atoi(argv[3]) : 1;
    int rank, size;
    double x = 1, y = 0;
    if (strcmp(mode, "threads") == 0) { /* two threads per rank call MPI at once */
        int provided = 0;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided != MPI_THREAD_MULTIPLE) {
            fprintf(stderr, "planted: no MPI_THREAD_MULTIPLE\n");
            MPI_Abort(MPI_COMM_WORLD, 77);
        }
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    begin("main");
    MPI_Barrier(MPI_COMM_WORLD); /* start together */
    if (strcmp(mode, "imbalance") == 0) {
        /* every rank solves 20 ms, the last one ms longer, then all reduce */
        in_region("solve", 20 + (rank == size - 1 ? ms : 0));
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    } else if (strcmp(mode, "late_sender") == 0) {
        if (rank == 0) {
            in_region("produce", ms);
            begin("send");
            MPI_Send(&x, 1, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD); /* the late_sender cause (report_e2e.py) */
            end();
        } else if (rank == 1) {
            begin("consume");
            MPI_Recv(&y, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* the late_sender wait (report_e2e.py) */
            end();
        } else {
            in_region("other", ms);
        }
    } else if (strcmp(mode, "wrong_order") == 0) {
        /* rank 2 first waits for rank 1's late message while rank 0's,
         * sent long before, is already there */
        if (rank == 0) {
            begin("early");
            MPI_Send(&x, 1, MPI_DOUBLE, 2, 1, MPI_COMM_WORLD);
            end();
            in_region("other", 20 + ms);
        } else if (rank == 1) {
            in_region("produce", 20 + ms);
            begin("send");
            MPI_Send(&x, 1, MPI_DOUBLE, 2, 2, MPI_COMM_WORLD);
            end();
        } else if (rank == 2) {
            receive_in_order();
        } else {
            in_region("other", 20 + ms);
        }
    } else if (strcmp(mode, "wrong_order_sent") == 0) {
        /* Scalasca's Wrong Order: rank 0's message goes after rank 2's
         * receive began (no message was waiting then) but before rank 1's
         * awaited one, and is received after it */
        if (rank == 0) {
            in_region("other", 20 + ms / 3);
            MPI_Send(&x, 1, MPI_DOUBLE, 2, 1, MPI_COMM_WORLD);
            in_region("other", ms);
        } else if (rank == 1) {
            in_region("produce", 20 + ms);
            MPI_Send(&x, 1, MPI_DOUBLE, 2, 2, MPI_COMM_WORLD);
        } else if (rank == 2) {
            receive_in_order();
        } else {
            in_region("other", 20 + ms);
        }
    } else if (strcmp(mode, "early_scan") == 0) {
        /* rank 1 is late to the scan: rank 2, after it, waits (Early
         * Scan); rank 0, first, needs nobody */
        if (rank == 1)
            in_region("produce", ms);
        begin("prefix");
        MPI_Scan(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        end();
    } else if (strcmp(mode, "poll_sender") == 0) {
        /* rank 1 polls its Irecv with MPI_Test (50 us apart) while rank 0
         * produces before sending: the polls before the send are a Late
         * Sender (polling), not Scalasca's Late Sender */
        if (rank == 0) {
            in_region("produce", ms);
            MPI_Send(&x, 1, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Request rq;
            begin("exchange");
            MPI_Irecv(&y, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, &rq);
            test_until_done(&rq);
            end();
        } else {
            in_region("other", ms);
        }
    } else if (strcmp(mode, "sendrecv_eager") == 0) {
        /* an 8-byte exchange in MPI_Sendrecv with rank 1 late: rank 0's
         * send half went eagerly, its call waited for the incoming
         * message: a Late Sender, no Late Receiver */
        if (rank == 1)
            in_region("produce", ms);
        if (rank < 2) {
            begin("exchange");
            MPI_Sendrecv(&x, 1, MPI_DOUBLE, 1 - rank, 3, &y, 1, MPI_DOUBLE, 1 - rank, 3, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            end();
        } else {
            in_region("other", ms);
        }
    } else if (strcmp(mode, "sendrecv_rendezvous") == 0) {
        /* rank 0's MPI_Sendrecv sends 4 MiB (rendezvous) to rank 1, late
         * in `produce`, and receives 8 bytes rank 2 sends at once: its
         * send half waited, a Late Receiver */
        enum { N = 1 << 19 };
        double *big = calloc(N, sizeof *big);
        if (!big)
            MPI_Abort(MPI_COMM_WORLD, 2);
        if (rank == 0) {
            begin("exchange");
            MPI_Sendrecv(big, N, MPI_DOUBLE, 1, 4, &y, 1, MPI_DOUBLE, 2, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            end();
        } else if (rank == 1) {
            in_region("produce", ms);
            begin("receive");
            MPI_Recv(big, N, MPI_DOUBLE, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            end();
        } else if (rank == 2) {
            MPI_Send(&x, 1, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD);
            in_region("other", ms);
        }
        free(big);
    } else if (strcmp(mode, "late_receiver") == 0) {
        if (rank == 0) {
            begin("exchange");
            MPI_Ssend(&x, 1, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD);
            end();
        } else if (rank == 1) {
            in_region("prepare", ms);
            begin("receive");
            MPI_Recv(&y, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            end();
        } else {
            in_region("other", ms);
        }
    } else if (strcmp(mode, "poll_receiver") == 0) {
        /* rank 0 Issends and polls its request with MPI_Test (50 us apart)
         * while rank 1 prepares before posting the receive: the polls
         * before the post are a Late Receiver */
        if (rank == 0) {
            MPI_Request rq;
            begin("exchange");
            MPI_Issend(&x, 1, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, &rq);
            test_until_done(&rq);
            end();
        } else if (rank == 1) {
            in_region("prepare", ms);
            begin("receive");
            MPI_Recv(&y, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            end();
        } else {
            in_region("other", ms);
        }
    } else if (strcmp(mode, "late_bcast") == 0) {
        int root = size > 1 ? 1 : 0;
        if (rank == root)
            in_region("prepare", ms);
        begin("distribute");
        MPI_Bcast(&x, 1, MPI_DOUBLE, root, MPI_COMM_WORLD);
        end();
    } else if (strcmp(mode, "early_reduce") == 0) {
        if (rank != 0)
            in_region("produce", ms);
        begin("collect");
        MPI_Reduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        end();
    } else if (strcmp(mode, "outside") == 0) {
        /* the last rank is late outside every region; `tiny`, a little
         * longer there too, must not take the blame for the whole delay */
        end(); /* leave `main` */
        if (rank == size - 1)
            sleep_ms(ms);
        in_region("tiny", rank == size - 1 ? 10 : 1);
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        begin("main");
    } else if (strcmp(mode, "threads") == 0 && size == 2) {
        /* rank 0's threads wait in their Sendrecvs for rank 1's (two Late
         * Senders, not also Late Receivers); the main threads only wait
         * for them, outside every region */
        pthread_t th[2];
        g_rank = rank;
        g_ms = ms;
        end(); /* leave `main` */
        for (int t = 0; t < 2; t++)
            pthread_create(&th[t], NULL, exchange, (void *)(intptr_t)t);
        for (int t = 0; t < 2; t++)
            pthread_join(th[t], NULL);
        begin("main");
    } else if (strcmp(mode, "selfpoll") == 0 && size == 2) {
        /* as Ray: rank 0 sends messages to itself and polls with
         * MPI_Iprobe, receiving whatever comes; rank 1 sends after `slow`.
         * One Late Sender (rank 0 by rank 1), none of a rank by itself */
        if (rank == 0) {
            begin("exchange");
            int got_peer = 0;
            for (int round = 0; !got_peer; round++) {
                MPI_Request rq = MPI_REQUEST_NULL;
                double self = round;
                if (round < 20)
                    MPI_Isend(&self, 1, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD, &rq);
                for (int flag = 0; !flag;) {
                    MPI_Status st;
                    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
                    if (!flag) {
                        sleep_us(50);
                        continue;
                    }
                    MPI_Recv(&y, 1, MPI_DOUBLE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    got_peer = st.MPI_SOURCE == 1;
                }
                MPI_Wait(&rq, MPI_STATUS_IGNORE);
            }
            end();
        } else {
            in_region("slow", ms);
            MPI_Send(&x, 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
        }
    } else if (strcmp(mode, "farcause") == 0 && size == 2) {
        /* rank 1 sends after `slow`, then makes 40 calls in `tail` before
         * it says it is done; rank 0 polls for that word and only then
         * receives the first message: the Late Sender's cause lies 40 calls
         * back on rank 1 */
        if (rank == 0) {
            begin("exchange");
            for (int flag = 0; !flag;) {
                MPI_Iprobe(1, 2, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                if (!flag)
                    sleep_us(50);
            }
            MPI_Recv(&y, 1, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(&y, 1, MPI_DOUBLE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            end();
        } else {
            int me;
            in_region("slow", ms);
            MPI_Send(&x, 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
            for (int i = 0; i < 40; i++) {
                MPI_Comm_rank(MPI_COMM_WORLD, &me);
                begin("tail");
                sleep_us(100);
                end();
            }
            MPI_Send(&x, 1, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD);
        }
    } else if (strcmp(mode, "hidden_imbalance") == 0) {
        /* the last rank burns ms more CPU in burn_extra() before the
         * Allreduce, outside every region: sampled, the finding names it */
        end(); /* leave `main` */
        x = common_work(100);
        if (rank == size - 1)
            x += burn_extra(ms);
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* the hidden_imbalance wait (report_e2e.py) */
        begin("main");
    } else if (strcmp(mode, "counters") == 0) {
        /* per-region counters: ITER visits of `burn` (MS ms of CPU) and of
         * `nap` (MS ms asleep) on every rank */
        for (int i = 0; i < iter; i++) {
            begin("burn");
            x += spin_ms(ms);
            end();
            in_region("nap", ms);
        }
    } else if (strcmp(mode, "unreceived") == 0) {
        /* Ray's shape: rank 0 sends itself ITER messages it never
         * receives, and frees their requests, before MPI_Finalize */
        static double msg[64];
        for (int i = 0; i < iter && i < 64 && rank == 0; i++) {
            MPI_Request q;
            MPI_Isend(&msg[i], 1, MPI_DOUBLE, 0, 99, MPI_COMM_WORLD, &q);
            MPI_Request_free(&q);
        }
        in_region("work", ms);
    } else if (strcmp(mode, "eager") == 0) {
        /* NetPIPE's shape: ITER round trips of a small message (below the
         * shared-memory transport's eager limit) and of a large one, the
         * receiver late each time; run with XSPROF_TEST_SEND_STALL_US of
         * 3 MS ms, so every MPI_Send also lasts past the receive's post as
         * a descheduled sender's does. The small one's receive is posted MS
         * ms in, the large one's 5 MS ms in, 2 MS ms after its send began
         * (after the small send's stall): only that one waited for the
         * receiver, 2 MS ms a round trip. */
        static char buf[1 << 18];
        for (int i = 0; i < iter && rank < 2; i++) {
            for (int large = 0; large < 2; large++) {
                int n = large ? (int)sizeof buf : 1024;
                if (rank == 0) {
                    if (large)
                        MPI_Send(buf, n, MPI_CHAR, 1, 5, MPI_COMM_WORLD); /* the eager large send (report_e2e.py) */
                    else
                        MPI_Send(buf, n, MPI_CHAR, 1, 5, MPI_COMM_WORLD); /* the eager small send (report_e2e.py) */
                    MPI_Recv(buf, 1, MPI_CHAR, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    in_region("late", large ? 4 * ms : ms);
                    MPI_Recv(buf, n, MPI_CHAR, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Request q; /* the reply: not an MPI_Send, so not stalled */
                    MPI_Isend(buf, 1, MPI_CHAR, 0, 6, MPI_COMM_WORLD, &q);
                    MPI_Wait(&q, MPI_STATUS_IGNORE);
                }
            }
        }
    } else if (strcmp(mode, "tinyhot") == 0) {
        /* trace-size scoring: ITER steps of `step` (MS ms of `solve`, an
         * Allreduce) with 2000 visits of the tiny `hot` inside each, and one
         * `setup` visit of 2 ms: `hot` holds most of the rows and little
         * of the time, so the suggested filter is `-hot` */
        volatile double acc = 0;
        in_region("setup", 2);
        for (int i = 0; i < iter; i++) {
            begin("step");
            in_region("solve", ms);
            for (int k = 0; k < 2000; k++) {
                begin("hot");
                acc += k;
                end();
            }
            MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            end();
        }
        x = acc; /* (read: clang -Werror refuses a variable only ever set) */
    } else if (strcmp(mode, "steady") == 0) {
        /* the same work on every rank: for regression checks */
        for (int i = 0; i < iter; i++) {
            in_region("compute", ms);
            MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
    } else {
        if (rank == 0)
            fprintf(stderr, "planted: unknown mode %s\n", mode);
        end();
        MPI_Finalize();
        return 2;
    }
    end();
    MPI_Finalize();
    return 0;
}

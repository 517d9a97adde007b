/* tests/otf2/otf2_prog.c — a 4-rank MPI program for trace.otf2: blocking
 * and nonblocking point-to-point with planted Late Senders, rooted (Bcast,
 * Reduce) and rootless (Allreduce, Allgather, Barrier) collectives with
 * planted imbalance, a sub-communicator (MPI_Comm_split) and a helper
 * thread with regions of its own. Usage: otf2_prog [crash]
 * crash: rank 3 sends one message nobody receives, then kills itself
 * (SIGKILL) once the others completed a Bcast it never joins (an
 * incomplete collective); they wait in a Barrier until mpiexec ends them.
 * Regions go through xsprof's API when libxsprof-mpi.so is preloaded (weak
 * symbols: the program runs without it). No MPI_Test polling: its Late
 * Senders are the plain E_send - E_recv the check recomputes. */
#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
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

static void work_ms(const char *name, int ms)
{
    begin(name);
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    end();
}

static void *helper(void *arg)
{
    (void)arg;
    for (int i = 0; i < 3; i++)
        work_ms("helper_io", 2);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int crash = argc > 1 && strcmp(argv[1], "crash") == 0;
    pthread_t t;
    pthread_create(&t, NULL, helper, NULL);
    begin("main_loop");
    double buf[256] = {0}, in[256] = {0};
    for (int it = 0; it < 3; it++) {
        /* blocking ring, odd ranks late: their receivers wait (Late Sender) */
        begin("exchange");
        if (rank % 2)
            work_ms("compute", 20);
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        if (rank % 2 == 0) {
            MPI_Send(buf, 64, MPI_DOUBLE, to, 1, MPI_COMM_WORLD);
            MPI_Recv(in, 64, MPI_DOUBLE, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(in, 64, MPI_DOUBLE, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 64, MPI_DOUBLE, to, 1, MPI_COMM_WORLD);
        }
        end();
        /* nonblocking pairs (0,1), (2,3): the even rank computes first */
        begin("halo");
        MPI_Request rq[2];
        int peer = rank ^ 1;
        MPI_Irecv(in, 128, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD, &rq[0]);
        if (rank % 2 == 0)
            work_ms("compute", 15);
        MPI_Isend(buf, 128, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        end();
    }
    if (crash && rank == 3) {
        /* a message nobody receives; death once the others are past the
         * Bcast this rank never joins (the last rank is a leaf of every
         * broadcast tree from rank 0: its part is sent, never received) */
        MPI_Request r;
        MPI_Isend(buf, 8, MPI_DOUBLE, 0, 99, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        for (int i = 0; i < 3; i++)
            MPI_Recv(in, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        raise(SIGKILL);
    }
    if (crash) {
        MPI_Bcast(buf, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Send(buf, 1, MPI_DOUBLE, 3, 98, MPI_COMM_WORLD);
    } else {
        /* collectives, rank r arriving r * 10 ms late: Wait at NxN */
        work_ms("compute", 10 * rank);
        MPI_Allreduce(buf, in, 16, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        work_ms("compute", 5 * (size - rank));
        MPI_Allgather(buf, 4, MPI_DOUBLE, in, 4, MPI_DOUBLE, MPI_COMM_WORLD);
        MPI_Bcast(buf, 32, MPI_DOUBLE, 2, MPI_COMM_WORLD);
        MPI_Reduce(buf, in, 32, MPI_DOUBLE, MPI_SUM, 1, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        /* a sub-communicator: even and odd ranks */
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        work_ms("compute", 8 * rank);
        MPI_Allreduce(buf, in, 8, MPI_DOUBLE, MPI_SUM, half);
        int hr;
        MPI_Comm_rank(half, &hr);
        if (hr == 0)
            MPI_Send(buf, 16, MPI_DOUBLE, 1, 3, half);
        else
            MPI_Recv(in, 16, MPI_DOUBLE, 0, 3, half, MPI_STATUS_IGNORE);
        MPI_Bcast(buf, 8, MPI_DOUBLE, 1, half);
        MPI_Comm_free(&half);
    }
    end();
    pthread_join(t, NULL);
    if (crash)
        MPI_Barrier(MPI_COMM_WORLD); /* never completes: rank 3 is gone */
    MPI_Finalize();
    if (rank == 0)
        printf("otf2_prog done\n");
    return 0;
}

/* tests/live/live_job.c — an MPI job for the live view's test and benchmark
 * (not linked against xsprof: it is preloaded; regions through weak
 * symbols). usage: live_job SECONDS [REGIONS_PER_S_PER_RANK [KILL_RANK KILL_AT_S]]
 *
 * Each step of rank r: "solve" holds "compute" (a 10 (1 + r) ms sleep) and
 * REGIONS_PER_S / 10 tiny "work" regions; then a 20 ms MPI_Recv of a message
 * a helper thread of the same rank sends after sleeping 20 ms; steps last
 * 100 ms. So most of a rank's MPI share is its own (20 of each 100 ms), not
 * the scheduling of the others: on a shared machine whose CPUs other
 * processes take, waits for other ranks would drift from second to second.
 * Every 2 s (each rank's own clock) an MPI_Barrier gives wait states. At
 * most 10 steps a second. KILL_RANK SIGKILLs itself at KILL_AT_S (a rank
 * that dies mid-run without any handler). */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

extern int xsprof_region_begin(const char *name) __attribute__((weak));
extern int xsprof_region_end(void) __attribute__((weak));

static void rb(const char *n)
{
    if (xsprof_region_begin)
        xsprof_region_begin(n);
}
static void re(void)
{
    if (xsprof_region_end)
        xsprof_region_end();
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void pause_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static int g_rank;
static void *helper(void *arg)
{
    (void)arg;
    pause_s(0.02);
    int v = 1;
    MPI_Send(&v, 1, MPI_INT, g_rank, 7, MPI_COMM_WORLD);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g_rank = rank;
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "live_job: MPI_THREAD_MULTIPLE is not provided\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double secs = argc > 1 ? atof(argv[1]) : 5;
    long per_s = argc > 2 ? atol(argv[2]) : 1000;
    int kill_rank = argc > 4 ? atoi(argv[3]) : -1;
    double kill_at = argc > 4 ? atof(argv[4]) : 0;
    long per_step = per_s / 10;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    /* the same number of Barriers on every rank: one each 2 s of its own clock */
    for (int sync = 1; sync <= (int)(secs / 2 + 0.5); sync++) {
        while (now() - t0 < 2.0 * sync) {
            double ts = now();
            rb("solve");
            rb("compute");
            pause_s(0.01 * (1 + rank));
            re();
            for (long i = 0; i < per_step; i++) {
                rb("work");
                re();
            }
            re();
            pthread_t th;
            int v;
            pthread_create(&th, NULL, helper, NULL);
            MPI_Recv(&v, 1, MPI_INT, rank, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            pthread_join(th, NULL);
            if (rank == kill_rank && now() - t0 >= kill_at)
                raise(SIGKILL);
            double left = 0.1 - (now() - ts);
            if (left > 0) /* at most 10 steps a second: idle, not in MPI */
                pause_s(left);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}

/* tests/live/live_job.c — an MPI job for the live view's test and benchmark
 * (not linked against xsprof: it is preloaded; regions through weak
 * symbols). usage: live_job SECONDS [REGIONS_PER_S_PER_RANK [KILL_RANK KILL_AT_S]]
 * Each step: "solve" holds "compute" (rank r sleeps 10 (1 + r) ms, so the
 * others wait in the MPI_Allreduce) and REGIONS_PER_S / 10 tiny "work"
 * regions; 10 steps a second at most (coarse, so that a few ms of a loaded
 * scheduler's latency move the shares little). Sleeps, not spins: the shares of
 * MPI time stay the same when other processes take the CPUs (the test loads
 * a browser and merges beside it; run it with mpi_yield_when_idle). KILL_RANK sends itself SIGKILL at
 * KILL_AT_S (a rank that dies mid-run without any handler). */
#include <mpi.h>
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

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double secs = argc > 1 ? atof(argv[1]) : 5;
    long per_s = argc > 2 ? atol(argv[2]) : 1000;
    int kill_rank = argc > 4 ? atoi(argv[3]) : -1;
    double kill_at = argc > 4 ? atof(argv[4]) : 0;
    long per_step = per_s / 10;
    double t0 = now();
    int go = 1;
    while (go) {
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
        if (rank == kill_rank && now() - t0 >= kill_at)
            raise(SIGKILL);
        /* everyone stops together: rank 0's clock decides */
        int more = now() - t0 < secs;
        MPI_Allreduce(MPI_IN_PLACE, &more, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        go = more;
        double left = 0.1 - (now() - ts);
        if (left > 0) /* at most 10 steps a second: idle, not in MPI */
            pause_s(left);
    }
    MPI_Finalize();
    return 0;
}

/* benchmarks/live_overhead.c — the job of the live view's benchmark
 * (live_overhead.py): fixed work, so that any CPU the live reader takes
 * from the ranks shows in the run time. Not linked against xsprof (it is
 * preloaded; regions through weak symbols).
 * usage: live_overhead STEPS REGIONS_PER_STEP SPIN_ITERS
 * Each step: REGIONS_PER_STEP "work" regions and a "compute" region of
 * SPIN_ITERS loop iterations inside a "step" region, then an
 * MPI_Allreduce. Rank 0 prints the seconds between two Barriers around the
 * steps and the events recorded per second over all ranks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

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

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long steps = argc > 1 ? atol(argv[1]) : 1000;
    long regions = argc > 2 ? atol(argv[2]) : 2500;
    long spin = argc > 3 ? atol(argv[3]) : 1000000;
    volatile double sink = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long s = 0; s < steps; s++) {
        rb("step");
        for (long i = 0; i < regions; i++) {
            rb("work");
            re();
        }
        rb("compute");
        for (long i = 0; i < spin; i++)
            sink = sink + 1.0;
        re();
        re();
        double x = sink;
        MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    if (rank == 0)
        printf("elapsed %.6f events_per_s %.0f\n", t, (double)steps * (double)(regions + 3) * size / t);
    MPI_Finalize();
    return 0;
}

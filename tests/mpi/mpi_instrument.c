/* tests/mpi/mpi_instrument.c — a program compiled with
 * -finstrument-functions (check_instrument.py runs it under mpiexec): each
 * function below becomes an xsprof region named after it. Per rank:
 * work x10 (leaf x3 inside each), rec: 4 chains of 5 nested calls,
 * deep: one chain of 300 nested calls (beyond xsprof's 256 levels),
 * skipme x5 (XSPROF_FILTER=-skipme leaves it out, its callee stays),
 * after x1 once the deep chain has unwound. */
#include <mpi.h>
#include <stdio.h>

volatile double g_sink;

__attribute__((noinline)) void leaf(int i) { g_sink += i * 0.5; }

__attribute__((noinline)) void work(int n)
{
    for (int i = 0; i < 3; i++)
        leaf(n + i);
}

__attribute__((noinline)) int rec(int n) { return n ? 1 + rec(n - 1) : (int)g_sink % 2; }

__attribute__((noinline)) int deep(int n) { return n ? 1 + deep(n - 1) : 0; }

__attribute__((noinline)) void inner_of_skipped(void) { g_sink += 1; }

__attribute__((noinline)) void skipme(void) { inner_of_skipped(); }

__attribute__((noinline)) void after(void) { g_sink += 2; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    for (int i = 0; i < 10; i++)
        work(i);
    int r = 0;
    for (int i = 0; i < 4; i++)
        r += rec(4); /* rec(4) .. rec(0): 5 nested calls */
    r += deep(299);  /* 300 nested calls */
    for (int i = 0; i < 5; i++)
        skipme();
    after();
    double s = g_sink + r;
    MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return s > 0 ? 0 : 1;
}

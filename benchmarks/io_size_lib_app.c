/* benchmarks/io_size_lib_app.c — the profiled workload of io_size_lib:
 * nested regions (an iteration with one int arg, 3 steps, 2 kernels each
 * doing a little work), recorded with libxsprof.so; the default sink writes
 * the rank file at exit. Prints the number of region events.
 * usage: io_size_lib_app EVENTS */
#include <stdio.h>
#include <stdlib.h>

#include "xsprof/xsprof.h"

static volatile double sink_value;

static void work(int n)
{
    double x = 1.0;
    for (int i = 0; i < n; i++)
        x = x * 1.0000001 + 1e-9;
    sink_value = x;
}

static long workload(long events)
{
    static const char *steps[3] = {"assemble", "solve", "exchange"};
    static const char *kernels[2] = {"kernel_a", "kernel_b"};
    long n = 0;
    for (long it = 0; n < events; it++) {
        xsprof_region_begin("iteration");
        xsprof_region_arg_int("i", it);
        for (int s = 0; s < 3; s++) {
            xsprof_region_begin(steps[s]);
            for (int k = 0; k < 2; k++) {
                xsprof_region_begin(kernels[k]);
                work(20 + (int)((it * 7 + s * 3 + k) % 40));
                xsprof_region_end();
                n++;
            }
            xsprof_region_end();
            n++;
        }
        xsprof_region_end();
        n++;
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    long n = workload(atol(argv[1]));
    printf("%ld\n", n);
    return 0; /* at exit xsprof converts the journal into the rank file */
}

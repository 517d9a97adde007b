/* A long run through libxsprof.so and the HDF5 sink: N regions (2N events)
 * in nested pairs on one thread. Prints the process's peak RSS after the
 * rank file is written (recording + conversion) and the budget it ran with. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <xsprof/xsprof.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 25000000L;
    xsprof_name_id outer, inner;
    xsprof_name_intern("outer", &outer);
    xsprof_name_intern("inner", &inner);
    for (long i = 0; i < n / 2; i++) {
        xsprof_region_begin_id(outer);
        xsprof_region_begin_id(inner);
        xsprof_region_end();
        xsprof_region_end();
    }
    if (xsprof_finalize() != XSPROF_OK)
        return 1;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("long_run: %ld regions, peak RSS %ld KiB\n", n / 2 * 2, ru.ru_maxrss);
    return 0;
}

/* instrument_overhead: the cost of a -finstrument-functions region per
 * call beside an XSPROF_SCOPE region and a plain call of the same empty
 * function (instrument_overhead_fns.c is compiled with
 * -finstrument-functions, this file is not). Medians of interleaved
 * batches; per-call ns above the plain call, and the ratio to the scope.
 * Never asserted. usage: instrument_overhead [BATCHES]  (XSPROF_OUTPUT) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <xsprof/xsprof.h>

void inst_fn(int i);  /* instrumented */
void plain_fn(int i); /* the same, not instrumented */

#define BATCH 20000

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

__attribute__((noinline)) static void scope_fn(int i) {
    XSPROF_SCOPE("scope_fn");
    plain_fn(i);
}

int main(int argc, char **argv) {
    int batches = argc > 1 ? atoi(argv[1]) : 301;
    batches = batches < 3 ? 3 : batches;
    double *v[3];
    for (int k = 0; k < 3; k++)
        v[k] = calloc((size_t)batches, sizeof(double));
    xsprof_region_begin("bench"); /* everything below nests in one region */
    for (int b = 0; b < batches; b++)
        for (int k = 0; k < 3; k++) {
            double t0 = now_ns();
            for (int i = 0; i < BATCH; i++) {
                if (k == 0)
                    plain_fn(i);
                else if (k == 1)
                    scope_fn(i);
                else
                    inst_fn(i);
            }
            v[k][b] = (now_ns() - t0) / BATCH;
        }
    xsprof_region_end();
    for (int k = 0; k < 3; k++)
        qsort(v[k], (size_t)batches, sizeof(double), cmp_d);
    double plain = v[0][batches / 2], scope = v[1][batches / 2], inst = v[2][batches / 2];
    printf("-finstrument-functions regions: medians of %d interleaved batches of %d calls\n", batches, BATCH);
    printf("plain call                     %8.1f ns\n", plain);
    printf("XSPROF_SCOPE region            %8.1f ns  (+%.1f ns a region)\n", scope, scope - plain);
    printf("-finstrument-functions region  %8.1f ns  (+%.1f ns a region, %.2fx the scope's)\n", inst, inst - plain,
           (inst - plain) / (scope - plain));
    xsprof_finalize();
    return 0;
}

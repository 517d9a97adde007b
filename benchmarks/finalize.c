/* benchmarks/finalize.c — the end of a heavily traced rank (issue 39): N
 * regions recorded back to back on one thread (N events: a region is one
 * row of the rank file, as xsmerge counts events), then the wall
 * time of xsprof_finalize (the journal becomes the rank file), the rank
 * file's size and bytes per region. Usage: XSPROF_OUTPUT=DIR
 * xsprof-bench-finalize [N] (default 10 000 000). Run
 * it alternately with a build of the commit before and compare medians. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <xsprof/xsprof.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10000000L;
    xsprof_name_id id;
    if (n <= 0 || xsprof_name_intern("bench region", &id) != XSPROF_OK) {
        fprintf(stderr, "usage: XSPROF_OUTPUT=DIR %s [REGIONS > 0]\n", argv[0]);
        return 2;
    }
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        xsprof_region_begin_id(id);
        xsprof_region_end();
    }
    double rec = now_s() - t0;
    char dir[4096]; /* chosen by the first record */
    if (!*xsprof_run_dir() || snprintf(dir, sizeof dir, "%s", xsprof_run_dir()) >= (int)sizeof dir) {
        fprintf(stderr, "%s: no run directory (is XSPROF_OUTPUT writable?)\n", argv[0]);
        return 1;
    }
    t0 = now_s();
    xsprof_status st = xsprof_finalize();
    double fin = now_s() - t0;
    char path[4200];
    snprintf(path, sizeof path, "%s/rank-00000.h5", dir);
    struct stat sb;
    if (st != XSPROF_OK || stat(path, &sb) != 0) {
        fprintf(stderr, "%s: finalize failed or wrote no %s\n", argv[0], path);
        return 1;
    }
    printf("%ld regions: recording %.1f ns/region, finalize %.3f s, rank file %.2f MB (%.2f bytes/region)\n", n, rec * 1e9 / (double)n, fin, (double)sb.st_size / 1e6, (double)sb.st_size / (double)n);
    return 0;
}

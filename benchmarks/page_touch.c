/* benchmarks/page_touch.c — what the first touch of a fresh 4 KiB page
 * costs on this machine, GiB by GiB, next to writing memory already
 * touched. Fresh pages dominate xsmerge's kernel time on the project's VM
 * (merge/README "Why memory is time here"), so compare machines with it
 * before comparing merge throughput.
 *
 *   page_touch [GIB]   (default 2): one anonymous mapping of GIB GiB,
 *   touched one byte per page, a GiB at a time, then memset once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    long gib = argc > 1 ? strtol(argv[1], NULL, 10) : 2;
    if (gib < 1 || gib > 1024) {
        fprintf(stderr, "page_touch: GIB must be 1..1024\n");
        return 1;
    }
    size_t g = (size_t)1 << 30, n = (size_t)gib * g, pages = g / 4096;
    volatile unsigned char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("page_touch: mmap");
        return 1;
    }
    for (long k = 0; k < gib; k++) {
        double t0 = now();
        for (size_t i = (size_t)k * g; i < (size_t)(k + 1) * g; i += 4096)
            p[i] = 1;
        double t = now() - t0;
        printf("GiB %ld: first touch %.2f us/page (%.3f s)\n", k, t / (double)pages * 1e6, t);
    }
    double t0 = now();
    memset((void *)p, 2, n);
    double t = now() - t0;
    printf("memset of the same %ld GiB: %.3f s (%.1f GB/s)\n", gib, t, (double)n / t / 1e9);
    munmap((void *)p, n);
    return 0;
}

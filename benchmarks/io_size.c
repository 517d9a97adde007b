/* benchmarks/io_size.c — on-disk bytes per region event of a rank file.
 * Records a nested-region workload (a loop of iterations, each with a few
 * steps, each with a few kernels doing a little work) with real clock
 * timestamps into a journal laid out as core lays it out, converts it with
 * xsprof_journal_convert and prints the rank-file bytes per region beside
 * the raw record size. usage: io_size [DIR] [EVENTS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io/writer.h"
#include "journal_fixture.h"

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static volatile double sink_value;

static void work(int n)
{
    double x = 1.0;
    for (int i = 0; i < n; i++)
        x = x * 1.0000001 + 1e-9;
    sink_value = x;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    long events = argc > 2 ? atol(argv[2]) : 2000000;
    char jpath[4096], hpath[4096], err[1024];
    snprintf(jpath, sizeof jpath, "%s/io_size.xsj", dir);
    snprintf(hpath, sizeof hpath, "%s/io_size.h5", dir);
    unlink(jpath);
    unlink(hpath);

    jfx *j = jfx_create(1u << 20);
    uint32_t iter = jfx_string(j, "iteration"), key = jfx_string(j, "i");
    uint32_t steps[3] = {jfx_string(j, "assemble"), jfx_string(j, "solve"), jfx_string(j, "exchange")};
    uint32_t kernels[2] = {jfx_string(j, "kernel_a"), jfx_string(j, "kernel_b")};
    long n = 0;
    for (long it = 0; n < events; it++) {
        int64_t t_it = now_ns();
        jfx_arg_int(j, 0, 0, key, it); /* one arg per iteration */
        for (int s = 0; s < 3; s++) {
            int64_t t_s = now_ns();
            for (int k = 0; k < 2; k++) {
                int64_t t_k = now_ns();
                work(20 + (int)((it * 7 + s * 3 + k) % 40));
                jfx_region(j, 0, 2, kernels[k], 0, t_k, now_ns());
                n++;
            }
            jfx_region(j, 0, 1, steps[s], 0, t_s, now_ns());
            n++;
        }
        jfx_region(j, 0, 0, iter, 1, t_it, now_ns());
        n++;
    }
    if (jfx_write(j, jpath, 0) != 0) {
        fprintf(stderr, "io_size: cannot write %s\n", jpath);
        return 1;
    }
    jfx_free(j);
    struct stat js, hs;
    stat(jpath, &js);
    /* Convert in a child so that its peak RSS is the converter's alone
     * (this process holds the whole fixture journal in memory). */
    int64_t t0 = now_ns();
    pid_t pid = fork();
    if (pid == 0) {
        xsprof_status st = xsprof_journal_convert(jpath, hpath, "finalized", err, sizeof err);
        if (st != XSPROF_OK)
            fprintf(stderr, "io_size: %s\n", err);
        _exit(st == XSPROF_OK ? 0 : 1);
    }
    int status = 1;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || status != 0 || stat(hpath, &hs) != 0) {
        fprintf(stderr, "io_size: conversion failed\n");
        return 1;
    }
    int64_t t1 = now_ns();
    printf("io_size: %ld region events (depth 3, 1 int arg per 10 regions)\n", n);
    printf("io_size: raw region record      %6.2f bytes/event (xsprof_rec_region)\n", 32.0);
    printf("io_size: journal                %6.2f bytes/event\n", (double)js.st_size / (double)n);
    printf("io_size: rank file (HDF5)       %6.2f bytes/event (target <= 8)\n", (double)hs.st_size / (double)n);
    printf("io_size: conversion             %6.1f ns/event, peak RSS %.1f MB (journal %.1f MB)\n",
           (double)(t1 - t0) / (double)n, (double)ru.ru_maxrss / 1024.0, (double)js.st_size / 1048576.0);
    unlink(jpath);
    unlink(hpath);
    return 0;
}

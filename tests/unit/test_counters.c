/* XSPROF_COUNTERS=task-clock,page-faults,context-switches,minor-faults,
 * cycles: software counters give positive deltas as region arguments; a
 * hardware counter this machine lacks is skipped (warned once) without
 * disturbing the others; the four software counters are read together, one
 * read() per region boundary (counted in /proc/self/io: was one per counter). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xsprof/xsprof.h>
#include "memsink.h"

volatile long spin_sink; /* file scope: clang warns on a local that is only written */

/* read() calls of this process so far (/proc/self/io syscr), -1 unknown */
static long read_calls(void) {
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    long n = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "syscr: ", 7))
            n = atol(line + 7);
    if (f)
        fclose(f);
    return n;
}

int main(void) {
    memsink_install();
    /* the first region opens the events; then 1000 regions read them */
    xsprof_region_begin("warm");
    xsprof_region_end();
    long r0 = read_calls();
    for (int i = 0; i < 1000; i++) {
        xsprof_region_begin("tiny");
        xsprof_region_end();
    }
    long r1 = read_calls();
    if (r0 >= 0 && r1 >= 0) {
        printf("test_counters: %ld read() calls for 1000 regions with 4 software counters\n", r1 - r0 - 1);
        CHECK(r1 - r0 - 1 <= 2 * 1000 + 50); /* one per boundary, however many counters */
    }
    for (int r = 0; r < 3; r++) {
        xsprof_region_begin("touch");
        size_t sz = 32u << 20;
        char *m = malloc(sz);
        volatile char *p = m; /* clang removes a malloc/free pair whose writes nobody reads */
        for (size_t i = 0; p && i < sz; i += 4096)
            p[i] = (char)i;
        for (long i = 0; i < 20000000; i++)
            spin_sink += i;
        free(m);
        xsprof_region_end();
    }
    CHECK(xsprof_finalize() == XSPROF_OK);
    xsprof_rank_data *d = &memsink_data;
    int regions = 0;
    for (size_t i = 0; i < d->nregions; i++) {
        const xsprof_io_region *r = &d->regions[i];
        if (strcmp(xsprof_rank_data_string(d, r->name), "touch"))
            continue;
        regions++;
        int64_t tc = -1, pf = -1, cs = -1, minf = -1;
        for (uint32_t k = 0; k < r->nargs; k++) {
            const xsprof_io_arg *a = &d->args[r->args + k];
            const char *key = xsprof_rank_data_string(d, a->key);
            if (!strcmp(key, "task-clock")) tc = a->i;
            if (!strcmp(key, "page-faults")) pf = a->i;
            if (!strcmp(key, "context-switches")) cs = a->i;
            if (!strcmp(key, "minor-faults")) minf = a->i;
        }
        printf("test_counters: task-clock %lld ns, page-faults %lld, context-switches %lld, minor-faults %lld\n",
               (long long)tc, (long long)pf, (long long)cs, (long long)minf);
        CHECK(tc > 1000000);   /* the loop ran on the CPU */
        CHECK(pf >= 1000);     /* 32 MiB of fresh pages were touched */
        CHECK(minf >= 1000 && minf <= pf);
        CHECK(cs >= 0);
        CHECK(tc <= r->t_end - r->t_begin + 1000000);
    }
    CHECK(regions == 3);
    return 0;
}

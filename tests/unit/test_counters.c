/* XSPROF_COUNTERS=task-clock,page-faults,cycles: software counters give
 * positive deltas as region arguments; a hardware counter this machine
 * lacks is skipped (warned once) without disturbing the others. */
#include <stdlib.h>
#include <string.h>
#include <xsprof/xsprof.h>
#include "memsink.h"

volatile long spin_sink; /* file scope: clang warns on a local that is only written */

int main(void) {
    memsink_install();
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
        int64_t tc = -1, pf = -1;
        for (uint32_t k = 0; k < r->nargs; k++) {
            const xsprof_io_arg *a = &d->args[r->args + k];
            const char *key = xsprof_rank_data_string(d, a->key);
            if (!strcmp(key, "task-clock")) tc = a->i;
            if (!strcmp(key, "page-faults")) pf = a->i;
        }
        printf("test_counters: task-clock %lld ns, page-faults %lld\n", (long long)tc, (long long)pf);
        CHECK(tc > 1000000);   /* the loop ran on the CPU */
        CHECK(pf >= 1000);     /* 32 MiB of fresh pages were touched */
        CHECK(tc <= r->t_end - r->t_begin + 1000000);
    }
    CHECK(regions == 3);
    return 0;
}

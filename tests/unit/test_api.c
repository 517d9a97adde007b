/* Every recording API group round-trips: regions (nesting, depth, ids),
 * scope macros, typed arguments, instants, counters, memory events, thread
 * names; misuse is counted, never fatal. */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <xsprof/xsprof.h>
#include "memsink.h"

static void scoped(void) {
    XSPROF_FUNCTION();
    XSPROF_SCOPE("inner scope");
}

int main(void) {
    memsink_install();
    CHECK(xsprof_region_begin("outer") == XSPROF_OK);
    CHECK(xsprof_region_arg_int("n", 42) == XSPROF_OK);
    CHECK(xsprof_region_arg_double("x", 2.5) == XSPROF_OK);
    CHECK(xsprof_region_arg_string("mode", "fast") == XSPROF_OK);
    int64_t dims[2] = {128, 256};
    CHECK(xsprof_region_arg_shape("dims", dims, 2) == XSPROF_OK);
    xsprof_name_id id;
    CHECK(xsprof_name_intern("hot", &id) == XSPROF_OK);
    for (int i = 0; i < 1000; i++) {
        CHECK(xsprof_region_begin_id(id) == XSPROF_OK);
        CHECK(xsprof_region_end() == XSPROF_OK);
    }
    scoped();
    CHECK(xsprof_instant("mark") == XSPROF_OK);
    CHECK(xsprof_counter_set("temperature", 36.6) == XSPROF_OK);
    int x;
    CHECK(xsprof_mem_alloc(&x, 4, -1) == XSPROF_OK);
    CHECK(xsprof_mem_free(&x, -1) == XSPROF_OK);
    CHECK(xsprof_thread_name("solver thread") == XSPROF_OK);
    CHECK(xsprof_region_end() == XSPROF_OK);

    /* Misuse: counted, never fatal, errno untouched. */
    errno = 1234;
    CHECK(xsprof_region_end() == XSPROF_ERR_UNBALANCED);
    char longname[2000];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    CHECK(xsprof_region_begin(longname) == XSPROF_ERR_TOO_LONG);
    CHECK(xsprof_region_end() == XSPROF_OK); /* balanced with the refused begin */
    CHECK(xsprof_region_arg_int("orphan", 1) == XSPROF_ERR_STATE);
    CHECK(xsprof_region_begin(NULL) == XSPROF_ERR_INVALID);
    CHECK(xsprof_region_end() == XSPROF_OK);
    CHECK(errno == 1234);
    CHECK(strcmp(xsprof_status_string(XSPROF_ERR_FULL), "buffer full, record dropped") == 0);

    CHECK(xsprof_finalize() == XSPROF_OK);
    CHECK(xsprof_finalize() == XSPROF_ERR_STATE);
    CHECK(xsprof_region_begin("late") == XSPROF_ERR_DISABLED);
    CHECK(xsprof_region_end() == XSPROF_OK);
    CHECK(memsink_loaded);

    xsprof_rank_data *d = &memsink_data;
    CHECK(memsink_count_regions("hot") == 1000);
    CHECK(memsink_count_regions("outer") == 1);
    CHECK(memsink_count_regions("scoped") == 1);
    CHECK(memsink_count_regions("inner scope") == 1);
    CHECK(memsink_count_regions("late") == 0);
    int64_t outer_b = 0, outer_e = 0;
    for (size_t i = 0; i < d->nregions; i++) {
        const xsprof_io_region *r = &d->regions[i];
        const char *n = xsprof_rank_data_string(d, r->name);
        CHECK(r->t_end >= r->t_begin);
        if (!strcmp(n, "outer")) {
            CHECK(r->depth == 0);
            CHECK(r->nargs == 4);
            outer_b = r->t_begin;
            outer_e = r->t_end;
            CHECK(r->args >= 0 && (size_t)r->args + 4 <= d->nargs);
            const xsprof_io_arg *a = &d->args[r->args];
            int seen = 0;
            for (int k = 0; k < 4; k++) {
                const char *key = xsprof_rank_data_string(d, a[k].key);
                if (!strcmp(key, "n")) seen |= (a[k].kind == 1 && a[k].i == 42) << 0;
                if (!strcmp(key, "x")) seen |= (a[k].kind == 2 && fabs(a[k].d - 2.5) < 1e-12) << 1;
                if (!strcmp(key, "mode")) seen |= (a[k].kind == 3 && !strcmp(xsprof_rank_data_string(d, a[k].s), "fast")) << 2;
                if (!strcmp(key, "dims")) seen |= (a[k].kind == 4 && a[k].ndims == 2 && a[k].dims[0] == 128 && a[k].dims[1] == 256) << 3;
            }
            CHECK(seen == 15);
        }
        if (!strcmp(n, "inner scope"))
            CHECK(r->depth == 2);
        if (!strcmp(n, "hot"))
            CHECK(r->depth == 1 && r->nargs == 0);
    }
    for (size_t i = 0; i < d->nregions; i++)
        if (!strcmp(xsprof_rank_data_string(d, d->regions[i].name), "hot"))
            CHECK(d->regions[i].t_begin >= outer_b && d->regions[i].t_end <= outer_e);
    CHECK(d->ninstants == 1 && !strcmp(xsprof_rank_data_string(d, d->instants[0].name), "mark"));
    CHECK(d->ncounters == 1 && d->counters[0].value == 36.6);
    CHECK(d->nmem == 2 && d->mem[0].kind == 1 && d->mem[0].size == 4 && d->mem[1].kind == 2);
    int named = 0;
    for (size_t i = 0; i < d->nthreads; i++)
        named |= !strcmp(xsprof_rank_data_string(d, d->threads[i].name), "solver thread");
    CHECK(named);
    CHECK(d->anomalies >= 3);
    printf("test_api: %zu regions, %zu args, anomalies %llu\n", d->nregions, d->nargs, (unsigned long long)d->anomalies);
    return 0;
}

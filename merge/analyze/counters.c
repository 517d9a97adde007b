/* merge/analyze/counters.c — per-region counters (XSPROF_COUNTERS): the
 * engine's sums of each region's counter deltas (sprofile.c, from the
 * integer arguments the rank's meta "counters" names), over all ranks by
 * region and counter name, with the rates they allow. Owner: merge
 * analysis. */
#include <stdlib.h>
#include <string.h>
#include "an.h"

int xsm_an_counters(xsm_an *a, const xsm_sanalysis *sa)
{
    for (size_t r = 0; r < a->nranks; r++) {
        xsm_anrank_out o;
        xsm_sanalysis_view(sa, (int32_t)r, &o);
        for (size_t i = 0; i < o.nctr; i++) {
            int32_t name = xsm_an_sname(a, (int32_t)r, o.ctr[i].name), ctr = xsm_an_sname(a, (int32_t)r, o.ctr[i].counter);
            if (name < 0 || ctr < 0)
                return -1;
            size_t k = 0;
            while (k < a->nctr && (a->ctr[k].region != name || a->ctr[k].counter != ctr))
                k++;
            if (k == a->nctr) {
                if (xsm_grow((void **)&a->ctr, &a->ctrcap, a->nctr, sizeof *a->ctr))
                    return -1;
                a->ctr[a->nctr++] = (xsm_ctr){name, ctr, 0, 0, 0, -1};
            }
            xsm_ctr *c = &a->ctr[k];
            c->total += o.ctr[i].total;
            c->visits += o.ctr[i].visits;
            if (c->last_rank != (int32_t)r) {
                c->last_rank = (int32_t)r;
                c->nranks++;
            }
        }
    }
    return 0;
}

const xsm_ctr *xsm_counter_of(const xsm_an *a, int32_t region, const char *counter)
{
    for (size_t k = 0; k < a->nctr; k++)
        if (a->ctr[k].region == region && !strcmp(xsm_an_name(a, a->ctr[k].counter), counter))
            return &a->ctr[k];
    return NULL;
}

int xsm_counter_rates(const xsm_an *a, const xsm_region *g, xsm_rate *out)
{
    static const struct { const char *name, *num, *den; } rate[] = {
        {"ipc", "instructions", "cycles"},
        {"cache_miss_rate", "cache-misses", "cache-references"},
        {"branch_miss_rate", "branch-misses", "branches"},
    };
    int n = 0;
    for (size_t i = 0; i < sizeof rate / sizeof *rate; i++) {
        const xsm_ctr *x = xsm_counter_of(a, g->name, rate[i].num), *y = xsm_counter_of(a, g->name, rate[i].den);
        if (x && y && y->total > 0)
            out[n++] = (xsm_rate){rate[i].name, (double)x->total / (double)y->total};
    }
    /* the share of the region's time its threads were on a CPU (task-clock
     * counts ns of CPU time): low for a region that waits or sleeps */
    const xsm_ctr *tc = xsm_counter_of(a, g->name, "task-clock");
    if (tc && g->incl_sum > 0)
        out[n++] = (xsm_rate){"cpu_share", (double)tc->total * 1e-9 / g->incl_sum};
    return n;
}

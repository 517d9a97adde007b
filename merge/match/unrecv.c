/* merge/match/unrecv.c — the application's own unmatched sends (model.h
 * xsm_unrecv): a send no receive matched, though its destination ran to
 * its end with every record, was never received by the application (Ray
 * sends itself messages it never receives before MPI_Finalize); the other
 * unmatched ends are what a crash, a missing rank or dropped records cost,
 * which the report's health section says. Both matchers ask here. Owner:
 * merge match. */
#include <stdlib.h>
#include "merge/match/match.h"

static int complete(const xsm_run *run, int32_t r)
{
    if (r < 0 || (size_t)r >= run->nranks || !run->ranks[r].present)
        return 0;
    const xsprof_rank_data *d = &run->ranks[r].d;
    return !d->truncated && !d->recovered && !d->dropped;
}

static int alloc(xsm_run *run)
{
    if (run->unrecv)
        return 0;
    if (!(run->unrecv = calloc(run->nranks + 1, sizeof *run->unrecv)))
        return -1;
    for (size_t r = 0; r < run->nranks; r++) {
        run->unrecv[r].dst_min = INT64_MAX;
        run->unrecv[r].dst_max = -1;
    }
    return 0;
}

int xsm_unrecv_add(xsm_run *run, int32_t src, int32_t dst)
{
    if (src < 0 || (size_t)src >= run->nranks || !complete(run, src) || !complete(run, dst))
        return 0;
    if (alloc(run))
        return -1;
    xsm_unrecv *u = &run->unrecv[src];
    u->msgs++;
    u->self += src == dst;
    if (dst < u->dst_min)
        u->dst_min = dst;
    if (dst > u->dst_max)
        u->dst_max = dst;
    run->unreceived++;
    return 0;
}

int xsm_unrecv_reduce(xsm_run *run)
{
    size_t n = run->nranks;
    int64_t *v = malloc((4 * n + 1) * sizeof *v);
    if (!v || alloc(run)) { /* every process takes part, with none of its own too */
        free(v);
        return -1;
    }
    for (size_t r = 0; r < n; r++) {
        v[r] = run->unrecv[r].msgs;
        v[n + r] = run->unrecv[r].self;
        v[2 * n + r] = run->unrecv[r].dst_min;
        v[3 * n + r] = run->unrecv[r].dst_max;
    }
    run->reduce(run->sync_ctx, v, 2 * n, XSM_REDUCE_SUM);
    run->reduce(run->sync_ctx, v + 2 * n, n, XSM_REDUCE_MIN);
    run->reduce(run->sync_ctx, v + 3 * n, n, XSM_REDUCE_MAX);
    run->unreceived = 0;
    for (size_t r = 0; r < n; r++) {
        run->unrecv[r] = (xsm_unrecv){v[r], v[n + r], v[2 * n + r], v[3 * n + r]};
        run->unreceived += (size_t)v[r];
    }
    free(v);
    if (!run->unreceived) {
        free(run->unrecv);
        run->unrecv = NULL;
    }
    return 0;
}

/* merge/analyze/path.c — critical path: start at the rank that finishes
 * last and walk back in time; whenever the walk reaches the end of a wait
 * state, the path continues on the rank that caused the wait, from the moment
 * it arrived. The time of each path segment is split over the regions and
 * MPI calls active on that rank's main thread. */
#include <stdlib.h>
#include <string.h>
#include "an.h"

typedef struct wref {
    int64_t t_end;
    size_t w;
} wref;

static int wref_cmp(const void *pa, const void *pb)
{
    const wref *a = pa, *b = pb;
    if (a->t_end != b->t_end)
        return a->t_end < b->t_end ? -1 : 1;
    return a->w < b->w ? -1 : a->w > b->w;
}

static void seg_account(const xsm_an *a, int32_t r, int64_t t0, int64_t t1, double *per_name, size_t nn)
{
    const xsm_rankstat *rs = &a->rs[r];
    size_t lo = 0, hi = rs->nseg;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (rs->seg[mid].t1 <= t0)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t covered = 0;
    for (size_t i = lo; i < rs->nseg && rs->seg[i].t0 < t1; i++) {
        const xsm_seg *s = &rs->seg[i];
        int64_t b = s->t0 > t0 ? s->t0 : t0, e = s->t1 < t1 ? s->t1 : t1;
        if (e <= b)
            continue;
        per_name[a->cn[s->cnode].name] += (double)(e - b) * 1e-9;
        covered += e - b;
    }
    per_name[nn] += (double)(t1 - t0 - covered) * 1e-9; /* outside every region */
}

static int part_cmp(const void *pa, const void *pb)
{
    const xsm_pathpart *a = pa, *b = pb;
    return a->seconds > b->seconds ? -1 : a->seconds < b->seconds ? 1 : 0;
}

int xsm_an_path_parts(xsm_an *a, const double *per_name, size_t nn)
{
    size_t np = 0;
    for (size_t i = 0; i <= nn; i++)
        if (per_name[i] > 0)
            np++;
    a->cp = calloc(np + 1, sizeof *a->cp);
    if (!a->cp)
        return -1;
    for (size_t i = 0; i <= nn; i++)
        if (per_name[i] > 0)
            a->cp[a->ncp++] = (xsm_pathpart){i == nn ? -1 : (int32_t)i, per_name[i]};
    qsort(a->cp, a->ncp, sizeof *a->cp, part_cmp);
    return 0;
}

int xsm_an_path(xsm_an *a)
{
    size_t R = a->nranks, nn = a->names.n;
    a->cp_rank_s = calloc(R + 1, sizeof(double));
    double *per_name = calloc(nn + 1, sizeof(double));
    size_t *start = calloc(R + 1, sizeof(size_t));
    wref *refs = malloc((a->nw + 1) * sizeof *refs);
    unsigned char *used = calloc(a->nw + 1, 1);
    int rc = -1;
    if (!a->cp_rank_s || !per_name || !start || !refs || !used)
        goto out;
    /* waits grouped by waiter, sorted by their end */
    for (size_t i = 0; i < a->nw; i++)
        if (a->w[i].causer >= 0)
            start[a->w[i].waiter + 1]++;
    for (size_t r = 0; r < R; r++)
        start[r + 1] += start[r];
    size_t *fill = malloc((R + 1) * sizeof *fill);
    if (!fill)
        goto out;
    memcpy(fill, start, (R + 1) * sizeof *fill);
    for (size_t i = 0; i < a->nw; i++)
        if (a->w[i].causer >= 0)
            refs[fill[a->w[i].waiter]++] = (wref){a->w[i].t_end, i};
    free(fill);
    for (size_t r = 0; r < R; r++)
        qsort(refs + start[r], start[r + 1] - start[r], sizeof *refs, wref_cmp);

    int32_t r = -1;
    for (size_t q = 0; q < R; q++)
        if (a->rs[q].present && (r < 0 || a->rs[q].t_last > a->rs[r].t_last))
            r = (int32_t)q;
    if (r < 0) {
        rc = 0;
        goto out;
    }
    a->cp_end_rank = r;
    int64_t t = a->rs[r].t_last;
    /* every wait is crossed at most once, so the walk ends */
    for (;;) {
        size_t lo = start[r], hi = start[r + 1];
        while (lo < hi) { /* first wait ending after t */
            size_t mid = (lo + hi) / 2;
            if (refs[mid].t_end <= t)
                lo = mid + 1;
            else
                hi = mid;
        }
        const xsm_wait *w = NULL;
        for (size_t k = lo; k-- > start[r];) {
            const xsm_wait *c = &a->w[refs[k].w];
            if (!used[refs[k].w] && c->t_begin < t && a->rs[c->causer].present) {
                used[refs[k].w] = 1;
                w = c;
                break;
            }
        }
        int64_t from = w ? w->t_end : a->rs[r].t_first;
        if (from > t)
            from = t;
        seg_account(a, r, from, t, per_name, nn);
        if (xsm_grow((void **)&a->cps, &a->cpscap, a->ncps, sizeof *a->cps))
            goto out;
        a->cps[a->ncps++] = (xsm_cpseg){r, from, t};
        a->cp_rank_s[r] += (double)(t - from) * 1e-9;
        a->cp_length_s += (double)(t - from) * 1e-9;
        a->cp_segments++;
        if (!w)
            break;
        t = w->t_cause < from ? w->t_cause : from;
        r = w->causer;
    }
    rc = xsm_an_path_parts(a, per_name, nn);
out:
    free(per_name);
    free(start);
    free(refs);
    free(used);
    return rc;
}

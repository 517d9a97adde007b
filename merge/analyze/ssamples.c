/* merge/analyze/ssamples.c — a rank's CPU samples (XSPROF_SAMPLE_HZ) in the
 * analysis engine (an.h xsm_ssmp). The engine (sprofile.c) takes them in
 * time order among the rank's events and says which region each fell in
 * (its call-tree node), so "(no region)" splits into the functions that
 * ran there; and when a rank made others wait, the samples it took while
 * they waited (the wait's delay window) say what it was doing instead.
 * Samples are counted by call stack id; samples.c names the stacks. The
 * samples are loaded whole in every merge mode, so both feedings see the
 * same ones at the same times. Owner: merge analysis. */
#include <stdlib.h>
#include <string.h>
#include "kmap.h"
#include "merge/align/align.h"

/* a bit per wait kind in xsm_ssmp.counted */
_Static_assert(XSM_WAIT_NKINDS <= 16, "wait kinds fit 16 bits");

struct xsm_ssmp {
    const xsprof_rank_data *d;
    int64_t *t;     /* per sample in time order: its time on the merged timeline */
    uint32_t *i;    /* ... its row */
    size_t n, next; /* samples, the next one to give */
    xsm_ssmpn *ctx; size_t nctx, capctx;
    xsm_kmap ctxmap;
    xsm_ssmpn *win; size_t nwin, capwin;
    xsm_kmap winmap;
    uint16_t *counted; /* per sample: the wait kinds whose windows counted it (bit per kind) */
};


xsm_ssmp *xsm_ssmp_new(const xsm_run *run, int32_t r)
{
    const xsprof_rank_data *d = &run->ranks[r].d;
    if (!d->nsamples)
        return NULL;
    xsm_ssmp *s = calloc(1, sizeof *s);
    xsm_sample_at *at = malloc(d->nsamples * sizeof *at);
    if (!s || !at || !(s->t = malloc(d->nsamples * sizeof *s->t)) || !(s->i = malloc(d->nsamples * sizeof *s->i))) {
        free(at);
        xsm_ssmp_free(s);
        return NULL;
    }
    s->d = d;
    size_t n = xsm_align_samples(run, (size_t)r, at);
    for (size_t k = 0; k < n; k++) {
        s->t[k] = at[k].t;
        s->i[k] = at[k].i;
    }
    free(at);
    s->n = n;
    return s;
}

void xsm_ssmp_free(xsm_ssmp *s)
{
    if (!s)
        return;
    free(s->t);
    free(s->i);
    free(s->ctx);
    free(s->win);
    free(s->counted);
    xsm_kmap_free(&s->ctxmap);
    xsm_kmap_free(&s->winmap);
    free(s);
}

int xsm_ssmp_next(xsm_ssmp *s, int64_t before, int64_t *t, uint32_t *stack, uint32_t *tid)
{
    if (!s || s->next >= s->n || s->t[s->next] >= before)
        return 0;
    const xsprof_io_sample *p = &s->d->samples[s->i[s->next]];
    *t = s->t[s->next++];
    *stack = p->stack;
    *tid = UINT32_MAX; /* a thread xsprof does not know: no region can hold it */
    for (size_t k = 0; k < s->d->nthreads; k++)
        if (s->d->threads[k].os_tid == p->os_tid) {
            *tid = s->d->threads[k].tid;
            break;
        }
    return 1;
}

static int count(xsm_kmap *m, xsm_ssmpn **v, size_t *n, size_t *cap, uint32_t key, uint32_t stack, uint64_t k)
{
    int64_t e = xsm_kvec_index(m, (void **)v, n, cap, sizeof **v, key, stack);
    if (e < 0)
        return -1;
    (*v)[e].key = key;
    (*v)[e].stack = stack;
    (*v)[e].n += k;
    return 0;
}

int xsm_ssmp_ctx(xsm_ssmp *s, uint32_t ctx, uint32_t stack)
{
    return count(&s->ctxmap, &s->ctx, &s->nctx, &s->capctx, ctx, stack, 1);
}

/* First sample at or after t. */
static size_t first_at(const xsm_ssmp *s, int64_t t)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->t[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int xsm_ssmp_window(xsm_ssmp *s, int kind, int64_t t0, int64_t t1)
{
    if (!s)
        return 0;
    /* ranks that wait for the same call wait over the same time: a sample
     * counts once per kind however many waited then */
    if (!s->counted && !(s->counted = calloc(s->n + 1, sizeof *s->counted)))
        return -1;
    uint16_t bit = (uint16_t)(1u << kind);
    for (size_t k = first_at(s, t0); k < s->n && s->t[k] < t1; k++) {
        if (s->counted[k] & bit)
            continue;
        s->counted[k] |= bit;
        if (count(&s->winmap, &s->win, &s->nwin, &s->capwin, (uint32_t)kind, s->d->samples[s->i[k]].stack, 1))
            return -1;
    }
    return 0;
}

const xsm_ssmpn *xsm_ssmp_ctxs(const xsm_ssmp *s, size_t *n)
{
    *n = s ? s->nctx : 0;
    return s ? s->ctx : NULL;
}

const xsm_ssmpn *xsm_ssmp_windows(const xsm_ssmp *s, size_t *n)
{
    *n = s ? s->nwin : 0;
    return s ? s->win : NULL;
}

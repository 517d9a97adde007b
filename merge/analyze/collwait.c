/* merge/analyze/collwait.c — the wait states of one collective instance,
 * by one set of rules for both feedings: the in-memory analysis (waits.c,
 * over match/'s instances) and the streaming merge's MPI pass
 * (match/stream_match.c, as each instance closes). Owner: merge analysis. */
#include "merge/analyze/analyze.h"
#include "core/record.h"

#include <stdint.h>
#include <stdlib.h>

/* Early Scan (Scalasca): a member of a Scan or Exscan waits for the last of
 * the members before it in the communicator that send data to enter; the
 * first waits for nobody, nor does any member of a scan of no data. Members
 * without a known position take no part. In order of position, the latest
 * entry so far of a member that sends is the cause. */
static int scan_cmp(const void *pa, const void *pb)
{
    const xsm_cwmember *a = *(const xsm_cwmember *const *)pa, *b = *(const xsm_cwmember *const *)pb;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static int scan_waits(const xsm_cwmember *m, size_t n, xsm_cwait_fn fn, void *ctx)
{
    const xsm_cwmember **o = malloc((n + 1) * sizeof *o);
    if (!o)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (m[i].pos >= 0)
            o[k++] = &m[i];
    qsort(o, k, sizeof *o, scan_cmp);
    const xsm_cwmember *cause = NULL; /* the latest to enter before position o[i]->pos */
    int rc = 0;
    for (size_t i = 0; i < k && !rc;) {
        size_t e = i; /* members of one position (none repeat in a well-formed run) */
        while (e < k && o[e]->pos == o[i]->pos)
            e++;
        for (size_t j = i; j < e && !rc; j++) {
            const xsm_cwmember *x = o[j];
            if (!cause || !x->has_call || !x->receives)
                continue;
            int64_t until = cause->arrive < x->call_e ? cause->arrive : x->call_e;
            if (until > x->call_b && fn(ctx, x, XSM_WAIT_EARLY_SCAN, cause, x->call_b, until))
                rc = -1;
        }
        for (; i < e; i++)
            if (o[i]->sends && (!cause || o[i]->arrive > cause->arrive))
                cause = o[i];
    }
    free(o);
    return rc;
}

int xsm_coll_waits_find(int kind, int32_t root, const xsm_cwmember *m, size_t n, xsm_cwait_fn fn, void *ctx)
{
    if (kind == XSPROF_COLL_SCAN)
        return scan_waits(m, n, fn, ctx);
    if (kind != XSPROF_COLL_BARRIER && kind != XSPROF_COLL_NXN && kind != XSPROF_COLL_ONE2N &&
        kind != XSPROF_COLL_N2ONE)
        return 0;
    int64_t minX = INT64_MAX;
    /* the last to enter, the root, the last of the others that gives the root data */
    const xsm_cwmember *maxm = NULL, *rootm = NULL, *lastm = NULL;
    for (size_t k = 0; k < n; k++) {
        const xsm_cwmember *x = &m[k];
        if (!maxm || x->arrive > maxm->arrive)
            maxm = x;
        if (x->has_call && x->call_e < minX)
            minX = x->call_e;
        if (x->rank == root) {
            if (!rootm)
                rootm = x;
        } else if (x->sends && (!lastm || x->arrive > lastm->arrive)) {
            lastm = x;
        }
    }
    if (n < 2 || ((kind == XSPROF_COLL_ONE2N || kind == XSPROF_COLL_N2ONE) && !rootm))
        return 0;
    for (size_t k = 0; k < n; k++) {
        const xsm_cwmember *x = &m[k];
        if (!x->has_call || !x->receives)
            continue; /* no call holds its completion, or it waits for no data */
        int wk = -1;
        const xsm_cwmember *cause = NULL;
        if (kind == XSPROF_COLL_N2ONE) { /* the root waits for the last contributor */
            if (x->rank == root && lastm) {
                wk = XSM_WAIT_EARLY_REDUCE;
                cause = lastm;
            }
        } else if (kind == XSPROF_COLL_ONE2N) { /* the others wait for the root */
            if (x->rank != root) {
                wk = XSM_WAIT_LATE_BCAST;
                cause = rootm;
            }
        } else if (maxm->rank != x->rank) {
            wk = kind == XSPROF_COLL_BARRIER ? XSM_WAIT_BARRIER : XSM_WAIT_NXN;
            cause = maxm;
        }
        int64_t until = cause && cause->arrive < x->call_e ? cause->arrive : x->call_e;
        if (cause && until > x->call_b && fn(ctx, x, wk, cause, x->call_b, until))
            return -1;
        /* NxN / Barrier Completion: the time past the first member's exit,
         * its begin standing for the cause's time (no single rank causes it) */
        if ((kind == XSPROF_COLL_NXN || kind == XSPROF_COLL_BARRIER) && minX != INT64_MAX && x->call_e > minX) {
            int64_t from = minX > x->call_b ? minX : x->call_b;
            int ck = kind == XSPROF_COLL_NXN ? XSM_WAIT_NXN_COMPLETION : XSM_WAIT_BARRIER_COMPLETION;
            if (from < x->call_e && fn(ctx, x, ck, NULL, from, x->call_e))
                return -1;
        }
    }
    return 0;
}

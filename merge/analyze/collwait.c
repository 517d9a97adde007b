/* merge/analyze/collwait.c — the wait states of one collective instance,
 * by one set of rules for both feedings: the in-memory analysis (waits.c,
 * over match/'s instances) and the streaming merge's MPI pass
 * (match/stream_match.c, as each instance closes). Owner: merge analysis. */
#include "merge/analyze/analyze.h"
#include "core/record.h"

#include <stdint.h>

int xsm_coll_waits_find(int kind, int32_t root, const xsm_cwmember *m, size_t n, xsm_cwait_fn fn, void *ctx)
{
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
        /* NxN Completion: the time past the first member's exit, its
         * begin standing for the cause's time (no single rank causes it) */
        if (kind == XSPROF_COLL_NXN && minX != INT64_MAX && x->call_e > minX) {
            int64_t from = minX > x->call_b ? minX : x->call_b;
            if (from < x->call_e && fn(ctx, x, XSM_WAIT_NXN_COMPLETION, NULL, from, x->call_e))
                return -1;
        }
    }
    return 0;
}

/* merge/analyze/delay.c — the delay costs of one wait, shared by the
 * in-memory (waits.c) and the streamed (sprofile.c) analysis so that both
 * give the same root causes, computed in the same floating-point order.
 *
 * A wait is explained first by the regions where the causing rank spent
 * more of its synchronisation interval than the waiter did (short-term
 * costs, Scalasca's delay costs). When those excesses add up to less than
 * the wait, the causing rank was late for another reason. If it had itself
 * waited in the synchronising calls of its interval (the one that opened
 * it included), the rest of the wait, up to the sum of those earlier
 * waits, goes where they went, in proportion to their lengths (their root
 * causes, carried along: long-term costs),
 * so a delay that travels along a chain of ranks (a pipeline, a ring, a
 * wavefront) is charged to the region that started it, not to the few
 * microseconds each relaying rank adds. What is still left stays with the
 * excesses (or, with none, the region the causer was in); a causing rank
 * that had not waited keeps the whole wait there, as before. */
#include "merge/analyze/an.h"

#include <stdlib.h>

void xsm_carries_put(xsm_carries *r, uint64_t row, int64_t t_cause, int64_t ns, int kind, const xsm_dist *d)
{
    r->c[r->next] = (xsm_carry){row, t_cause, ns, kind, *d};
    r->next = (r->next + 1) % XSM_CARRY_KEEP;
    if (r->n < XSM_CARRY_KEEP)
        r->n++;
}

/* Of the waits of call `row` caused before `before`, the longest (then the
 * first kind): a wait caused at the same moment as the one asking cannot
 * have made its causer late, and leaving ties out makes the answer the
 * same whichever of the two the analysis met first. */
const xsm_carry *xsm_carries_get(const xsm_carries *r, uint64_t row, int64_t before)
{
    const xsm_carry *best = NULL;
    for (uint32_t i = 0; i < r->n; i++) {
        const xsm_carry *c = &r->c[i];
        if (c->row != row || c->t_cause >= before || !c->d.n)
            continue;
        if (!best || c->ns > best->ns || (c->ns == best->ns && c->kind < best->kind))
            best = c;
    }
    return best;
}

/* Add weight w to (rank, region) in an uncapped list. */
static void dist_add(xsm_dent *e, uint32_t *n, int32_t rank, int32_t region, double w)
{
    for (uint32_t i = 0; i < *n; i++)
        if (e[i].rank == rank && e[i].region == region) {
            e[i].w += w;
            return;
        }
    e[(*n)++] = (xsm_dent){rank, region, w};
}

int xsm_delay_costs(int32_t causer, const int32_t *region, const double *dl, size_t n, int32_t fallback, double s,
                    const xsm_carry *const *carry, size_t ncarry, xsm_dist *out, xsm_delay_add_fn add, void *ctx)
{
    double total = 0;
    for (size_t i = 0; i < n; i++)
        total += dl[i];
    /* long-term: what the excesses leave, up to the causer's own earlier waits */
    double lng = 0;
    int64_t cns = 0;
    size_t need = n + 1;
    for (size_t c = 0; c < ncarry; c++) {
        cns += carry[c]->ns;
        need += carry[c]->d.n;
    }
    if (cns > 0) {
        lng = s - total * 1e-9;
        if (lng < 0)
            lng = 0;
        if (lng > (double)cns * 1e-9)
            lng = (double)cns * 1e-9;
    }
    double shrt = s - lng;
    xsm_dent stack[64], *tmp = stack;
    if (need > 64 && !(tmp = malloc(need * sizeof *tmp)))
        return -1;
    uint32_t nt = 0;
    /* short-term: the excesses share the rest; none: the region the causer was in */
    for (size_t i = 0; i < n; i++) {
        if (add(ctx, causer, region[i], shrt * dl[i] / total))
            goto fail;
        dist_add(tmp, &nt, causer, region[i], s > 0 ? shrt / s * (dl[i] / total) : dl[i] / total);
    }
    if (!n && (shrt > 0 || lng <= 0)) {
        if (add(ctx, causer, fallback, shrt))
            goto fail;
        dist_add(tmp, &nt, causer, fallback, s > 0 ? shrt / s : 1.0);
    }
    for (size_t c = 0; lng > 0 && c < ncarry; c++) {
        /* one carry (the usual case) takes all of lng: f is exactly 1 */
        double f = (double)carry[c]->ns / (double)cns;
        for (uint32_t i = 0; i < carry[c]->d.n; i++) {
            const xsm_dent *e = &carry[c]->d.e[i];
            if (add(ctx, e->rank, e->region, lng * f * e->w))
                goto fail;
            dist_add(tmp, &nt, e->rank, e->region, lng / s * f * e->w);
        }
    }
    /* keep the XSM_DIST_MAX heaviest (stable: the first of equals), renormalised */
    for (uint32_t i = 1; i < nt; i++)
        for (uint32_t k = i; k > 0 && tmp[k - 1].w < tmp[k].w; k--) {
            xsm_dent t = tmp[k];
            tmp[k] = tmp[k - 1];
            tmp[k - 1] = t;
        }
    if (nt > XSM_DIST_MAX)
        nt = XSM_DIST_MAX;
    double sum = 0;
    for (uint32_t i = 0; i < nt; i++)
        sum += tmp[i].w;
    out->n = nt;
    for (uint32_t i = 0; i < nt; i++)
        out->e[i] = (xsm_dent){tmp[i].rank, tmp[i].region, sum > 0 ? tmp[i].w / sum : 1.0 / nt};
    if (tmp != stack)
        free(tmp);
    return 0;
fail:
    if (tmp != stack)
        free(tmp);
    return -1;
}

/* merge/analyze/waits.c — the wait states section of the analysis: the
 * sites (kind, causing rank, MPI function, region, root cause) the engine
 * (sprofile.c) found, their totals, the waits beyond its window, and the
 * root causes of its delay analysis (delay.c).
 *
 * The kinds and their definitions (Scalasca's, and ours named apart): the
 * table in merge/analyze/README.md "Wait states". */
#include <stdlib.h>
#include <string.h>
#include "an.h"
#include "core/record.h"

static const char *const kind_names[XSM_WAIT_NKINDS] = {
    "Late Sender", "Late Sender / Wrong Order", "Late Receiver", "Wait at Barrier",
    "Wait at NxN", "NxN Completion", "Late Broadcast", "Early Reduce", "Barrier Completion", "Early Scan",
    "Late Sender (polling)", "Late Receiver (polling)"};

/* The order the reports list the kinds in: each extension beside its
 * Scalasca neighbour (the enum's values stay those merged.h5 has). */
static const int kind_order[XSM_WAIT_NKINDS] = {
    XSM_WAIT_LATE_SENDER, XSM_WAIT_WRONG_ORDER, XSM_WAIT_LS_POLL, XSM_WAIT_LATE_RECEIVER, XSM_WAIT_LR_POLL,
    XSM_WAIT_BARRIER, XSM_WAIT_BARRIER_COMPLETION, XSM_WAIT_NXN, XSM_WAIT_NXN_COMPLETION, XSM_WAIT_LATE_BCAST,
    XSM_WAIT_EARLY_REDUCE, XSM_WAIT_EARLY_SCAN};

int xsm_wait_kind_at(int i) { return kind_order[i]; }

const char *xsm_wait_kind_name(int kind)
{
    return kind >= 0 && kind < XSM_WAIT_NKINDS ? kind_names[kind] : "?";
}

static int wait_push(xsm_an *a, const xsm_wait *w)
{
    if (a->nw == a->wcap) {
        size_t nc = a->wcap ? a->wcap * 2 : 1024;
        xsm_wait *v = realloc(a->w, nc * sizeof *v);
        if (!v)
            return -1;
        a->w = v;
        a->wcap = nc;
    }
    a->w[a->nw++] = *w;
    return 0;
}

static int rootcause_add(xsm_an *a, int kind, int32_t rank, int32_t region, double s, size_t *cap)
{
    for (size_t i = 0; i < a->nrc; i++)
        if (a->rc[i].kind == kind && a->rc[i].rank == rank && a->rc[i].region == region) {
            a->rc[i].seconds += s;
            return 0;
        }
    if (a->nrc == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        xsm_rootcause *v = realloc(a->rc, nc * sizeof *v);
        if (!v)
            return -1;
        a->rc = v;
        *cap = nc;
    }
    a->rc[a->nrc++] = (xsm_rootcause){kind, rank, region, s};
    return 0;
}

static int rc_cmp(const void *pa, const void *pb)
{
    const xsm_rootcause *a = pa, *b = pb;
    return a->seconds > b->seconds ? -1 : a->seconds < b->seconds ? 1 : 0;
}

/* The engine's waits: one per site and rank, with its count; its root
 * causes. */
int xsm_an_waits(xsm_an *a, const xsm_sanalysis *sa)
{
    for (size_t r = 0; r < a->nranks; r++) {
        if (!a->rs[r].present)
            continue;
        xsm_anrank_out v;
        xsm_sanalysis_view(sa, (int32_t)r, &v);
        for (size_t i = 0; i < v.nw; i++) {
            const xsm_swait *s = &v.w[i];
            int32_t op = xsm_an_sname(a, (int32_t)r, s->op);
            int32_t reg = s->encl >= 0 ? xsm_an_sname(a, (int32_t)r, (uint32_t)s->encl) : -1;
            int32_t root = s->root >= 0 ? xsm_names_intern(&a->names, xsm_sanalysis_name(sa, s->root)) : s->root;
            if (op < 0 || (s->encl >= 0 && reg < 0) || (s->root >= 0 && root < 0))
                return -1;
            xsm_wait w = {s->kind, (int32_t)r, s->causer, 0, op, reg, 0, s->ns, 0, 0, 0, root, s->n, -1};
            if (wait_push(a, &w) != 0)
                return -1;
            a->wait_s[w.kind] += (double)s->ns * 1e-9;
            a->wait_n[w.kind] += s->n;
            a->rs[r].wait_ns += s->ns;
            if (root == XSM_ROOT_BEYOND) {
                a->beyond_s[w.kind] += (double)s->ns * 1e-9;
                a->beyond_n[w.kind] += s->n;
                a->beyond_total += s->n;
            }
        }
    }
    size_t n, cap = 0;
    const xsm_srcause *rc = xsm_sanalysis_rootcauses(sa, &n);
    for (size_t i = 0; i < n; i++) {
        int32_t g = rc[i].region >= 0 ? xsm_names_intern(&a->names, xsm_sanalysis_name(sa, rc[i].region)) : -1;
        if ((rc[i].region >= 0 && g < 0) || rootcause_add(a, rc[i].kind, rc[i].rank, g, rc[i].seconds, &cap) != 0)
            return -1;
    }
    if (a->nrc > 1)
        qsort(a->rc, a->nrc, sizeof *a->rc, rc_cmp);
    return 0;
}

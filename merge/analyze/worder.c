/* merge/analyze/worder.c — Late Sender / Wrong Order, found by the MPI pass
 * of either merge (read forward in time).
 *
 * Scalasca's definition: the Late Sender of message m is Wrong Order when
 * another message to the same rank, sent before m was sent, is received
 * after m (by the same thread: Scalasca's location; a message another
 * thread takes was no alternative to m). Read forward in time: when m's
 * receive completes (t_recv), some message to that rank sent before m is
 * still in flight, and is then received by m's thread.
 * Pass 1 sees every send at its begin, in time order, so each receiving
 * rank keeps the sends to it in flight in order of their begin (the oldest
 * first: the minimum is at the front; removed ones are dropped when they
 * reach it). A matched message leaves at its t_recv, and a Late Sender
 * candidate (its send began after the call did) is checked then: both are
 * events kept in a heap until pass 1's time passes them. A send in flight
 * may never be received (in memory it is no message), so a check that finds
 * one sent before the call began waits, pending on its rank, until such a
 * message is received (the verdict, timed at the check) or pass 1 ends (no
 * Wrong Order). */
#include <stdlib.h>
#include <string.h>
#include "merge/analyze/analyze.h"
#include "merge/util.h"

typedef struct xsm_wo_ent {
    int64_t e_send;
    uint64_t id; /* (src + 1) << 32 | send row */
} xsm_wo_ent;

/* A message's receive completing at t: it leaves (check 0), then a check. */
typedef struct xsm_wo_ev {
    int64_t t;
    int check;
    int32_t dst;
    uint64_t id;
    int64_t e_recv; /* the awaited send's begin (a check, its bound); the send's begin (leaving) */
    uint32_t call_row;
    uint32_t thread; /* the receiving thread */
    uint64_t seq;    /* a check: its rank's Late Senders before it (XSM_WO_KEEP) */
} xsm_wo_ev;

/* One rank's sends in flight, in order of their begin: v[head..n). */
typedef struct xsm_wo_q {
    xsm_wo_ent *v;
    size_t head, n, cap;
    size_t live;
    /* checks waiting for a message sent before theirs to be received:
     * pend[ph..npend), by their send's begin */
    xsm_wo_ev *pend;
    size_t ph, npend, cappend;
    uint64_t nls; /* its Late Senders checked so far */
} xsm_wo_q;

/* Scalasca's bound: a rank remembers its last 100 Late Senders; a message
 * received later that was sent before one of those makes it Wrong Order,
 * an older one no more. */
#define XSM_WO_KEEP 100

/* Pending checks a rank keeps at most (40 B each). A message received
 * resolves those whose message was sent after it; those behind sends
 * never received wait for ever, so past this the earliest is dropped (no
 * Wrong Order) rather than memory growing with the run. */
#define XSM_WO_PEND_MAX 65536

struct xsm_wo {
    size_t nranks;
    uint64_t dropped; /* pending checks given up (XSM_WO_PEND_MAX) */
    xsm_wo_q *q;
    xsm_ktab set; /* ids in flight (uint64_t entries) */
    xsm_wo_ev *h;
    size_t nh, caph;
};

static uint64_t wo_id(int32_t src, uint32_t row) { return (uint64_t)(uint32_t)(src + 1) << 32 | row; }

xsm_wo *xsm_wo_new(size_t nranks)
{
    xsm_wo *w = calloc(1, sizeof *w);
    if (!w || !(w->q = calloc(nranks + 1, sizeof *w->q))) {
        free(w);
        return NULL;
    }
    w->nranks = nranks;
    w->set.size = sizeof(uint64_t);
    return w;
}

void xsm_wo_free(xsm_wo *w)
{
    if (!w)
        return;
    for (size_t r = 0; r < w->nranks; r++) {
        free(w->q[r].v);
        free(w->q[r].pend);
    }
    free(w->q);
    xsm_ktab_free(&w->set);
    free(w->h);
    free(w);
}

static int set_has(const xsm_wo *w, uint64_t id) { return xsm_ktab_find(&w->set, id) != NULL; }

/* 1 when id was in flight (now gone). */
static int set_del(xsm_wo *w, uint64_t id)
{
    void *e = xsm_ktab_find(&w->set, id);
    if (e)
        xsm_ktab_del(&w->set, e);
    return e != NULL;
}

int xsm_wo_send(xsm_wo *w, int32_t dst, int64_t e_send, int32_t src, uint32_t row)
{
    if (dst < 0 || (size_t)dst >= w->nranks)
        return 0;
    xsm_wo_q *q = &w->q[dst];
    /* full: slide over the front that is gone; drop the removed ones behind
     * it too when they are most (a send never received holds the front) */
    int compact = q->n - q->head > 2 * q->live + 64;
    if (q->n == q->cap && (q->head > 0 || compact)) {
        size_t k = 0;
        for (size_t i = q->head; i < q->n; i++)
            if (!compact || set_has(w, q->v[i].id))
                q->v[k++] = q->v[i];
        q->n = k;
        q->head = 0;
    }
    if (xsm_grow((void **)&q->v, &q->cap, q->n, sizeof *q->v))
        return -1;
    uint64_t id = wo_id(src, row);
    q->v[q->n++] = (xsm_wo_ent){e_send, id};
    q->live++;
    return xsm_ktab_get(&w->set, id) ? 0 : -1;
}

/* 1 when the message was in flight to dst (now gone). */
static int wo_gone(xsm_wo *w, int32_t dst, uint64_t id)
{
    if (!set_del(w, id) || dst < 0 || (size_t)dst >= w->nranks)
        return 0;
    w->q[dst].live--;
    return 1;
}

void xsm_wo_cut(xsm_wo *w, int32_t dst, int32_t src, uint32_t row)
{
    wo_gone(w, dst, wo_id(src, row));
}

/* First pending check of q whose message was sent after t. */
static size_t pend_after(const xsm_wo_q *q, int64_t t)
{
    size_t lo = q->ph, hi = q->npend;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (q->pend[mid].e_recv <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A check waits, in order of its call's begin (mostly the last). */
static int pend_add(xsm_wo *w, xsm_wo_q *q, const xsm_wo_ev *e)
{
    while (q->ph < q->npend && q->nls - q->pend[q->ph].seq > XSM_WO_KEEP) /* past the bound: no verdict can come */
        q->ph++;
    if (q->npend - q->ph == XSM_WO_PEND_MAX) {
        q->ph++; /* the earliest call's check, behind a send never received */
        w->dropped++;
    }
    if (q->npend == q->cappend && q->ph > 0) { /* slide down over the front resolved or dropped */
        memmove(q->pend, q->pend + q->ph, (q->npend - q->ph) * sizeof *q->pend);
        q->npend -= q->ph;
        q->ph = 0;
    }
    if (xsm_grow((void **)&q->pend, &q->cappend, q->npend, sizeof *q->pend))
        return -1;
    size_t at = pend_after(q, e->e_recv);
    memmove(q->pend + at + 1, q->pend + at, (q->npend - at) * sizeof *q->pend);
    q->pend[at] = *e;
    q->npend++;
    return 0;
}

/* A message sent at e_send to dst was received by `thread`: the pending
 * checks of that thread whose message was sent after it are Wrong Order
 * (it was received later); the other threads' stay. */
static int wo_resolve(xsm_wo *w, int32_t dst, int64_t e_send, uint32_t thread, xsm_wo_verdict_fn fn, void *ctx)
{
    xsm_wo_q *q = &w->q[dst];
    size_t k = pend_after(q, e_send), keep = k;
    int rc = 0;
    for (size_t i = k; i < q->npend; i++) {
        if (q->pend[i].thread != thread) {
            q->pend[keep++] = q->pend[i];
            continue;
        }
        if (!rc && q->nls - q->pend[i].seq <= XSM_WO_KEEP)
            rc = fn(ctx, dst, q->pend[i].t, q->pend[i].call_row, (int32_t)(q->pend[i].id >> 32) - 1,
                    (uint32_t)q->pend[i].id);
    }
    q->npend = keep;
    if (q->ph == q->npend)
        q->ph = q->npend = 0;
    return rc;
}

static int ev_less(const void *pa, const void *pb)
{
    const xsm_wo_ev *a = pa, *b = pb;
    return a->t != b->t ? a->t < b->t : a->check < b->check;
}

static int ev_push(xsm_wo *w, const xsm_wo_ev *e)
{
    if (xsm_grow((void **)&w->h, &w->caph, w->nh, sizeof *w->h))
        return -1;
    xsm_bheap_push(w->h, &w->nh, sizeof *w->h, e, ev_less);
    return 0;
}

int xsm_wo_recv(xsm_wo *w, int32_t dst, int32_t src, uint32_t send_row, int64_t e_send, int64_t t_recv, int64_t e_recv,
                uint32_t call_row, uint32_t thread)
{
    uint64_t id = wo_id(src, send_row);
    xsm_wo_ev gone = {t_recv, 0, dst, id, e_send, 0, thread, 0};
    if (ev_push(w, &gone))
        return -1;
    /* only a Late Sender in its call (its send began after the call) can be
     * Wrong Order; a polling loop's is ours, not Scalasca's (waits.c) */
    if (call_row == UINT32_MAX || e_send <= e_recv)
        return 0;
    xsm_wo_ev check = {t_recv, 1, dst, id, e_send, call_row, thread, 0};
    return ev_push(w, &check);
}

uint64_t xsm_wo_dropped(const xsm_wo *w) { return w->dropped; }

int xsm_wo_due(xsm_wo *w, int64_t now, xsm_wo_verdict_fn fn, void *ctx)
{
    while (w->nh && w->h[0].t < now) {
        xsm_wo_ev e;
        xsm_bheap_pop(w->h, &w->nh, sizeof *w->h, &e, ev_less);
        if (!e.check) {
            int rc = wo_gone(w, e.dst, e.id) ? wo_resolve(w, e.dst, e.e_recv, e.thread, fn, ctx) : 0;
            if (rc)
                return rc;
            continue;
        }
        xsm_wo_q *q = &w->q[e.dst];
        e.seq = ++q->nls;
        while (q->head < q->n && !set_has(w, q->v[q->head].id))
            q->head++;
        if (q->head < q->n && q->v[q->head].e_send < e.e_recv && pend_add(w, q, &e))
            return -1;
    }
    return 0;
}

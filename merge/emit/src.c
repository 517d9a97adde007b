/* merge/emit/src.c — where the writers take events from (xsm_src_ops in
 * emit.h): the model through xsm_iter, or a source per rank (xsmerge's
 * streaming mode) merged over the ranks for trace.json. */
#include "merge/emit/emit.h"
#include "core/record.h"

#include <stdlib.h>
#include <string.h>

/* The in-memory event source: xsm_iter over the model, with the row, its
 * arguments and its message flows looked up for each event. */
typedef struct xsm_msrc {
    const xsm_emit *e;
    xsm_iter it;
    size_t *mcur; /* per rank: mflows position after its last lookup (events
                     of all ranks interleave in trace.json) */
    xsm_evflow *fl;
    size_t capfl;
    int all; /* trace.json's (all ranks): a receive's flow end needs its send's begin */
    int sent; /* the analysis's: so does it */
    int calls; /* trace.otf2's: a receive's flow end with its message */
} xsm_msrc;

static void *xsm_msrc_open(const xsm_emit *e, size_t r, char *err, size_t errlen)
{
    xsm_msrc *s = calloc(1, sizeof *s);
    if (s && !(s->mcur = calloc(e->run->nranks + 1, sizeof *s->mcur))) {
        free(s);
        s = NULL;
    }
    if (!s || xsm_iter_init(&s->it, e, r == XSM_ALL_RANKS ? -1 : (int64_t)r)) {
        if (s)
            free(s->mcur);
        free(s);
        xsm_err_set(err, errlen, "xsmerge: out of memory writing trace.pftrace");
        return NULL;
    }
    s->e = e;
    s->all = r == XSM_ALL_RANKS;
    return s;
}

static int xsm_msrc_next(void *src, xsm_ev *ev)
{
    xsm_msrc *s = src;
    if (!xsm_iter_next(&s->it, ev))
        return 0;
    const xsprof_rank_data *d = &s->e->run->ranks[ev->rank].d;
    const xsm_erank *er = &s->e->ranks[ev->rank];
    ev->args = NULL;
    ev->nmflows = 0;
    switch (ev->kind) {
    case XSM_EV_REGION: {
        const xsprof_io_region *g = &d->regions[ev->row];
        ev->rec = g;
        if (g->nargs && g->args >= 0 && (size_t)g->args + g->nargs <= d->nargs)
            ev->args = &d->args[g->args];
        break;
    }
    case XSM_EV_MPI: {
        ev->rec = &d->mpi[ev->row];
        size_t nf;
        const xsm_flow *f = xsm_emit_flows_at(er->mflows, er->nmflows, ev->row, &s->mcur[ev->rank], &nf);
        if (nf > s->capfl) {
            xsm_evflow *p = realloc(s->fl, nf * sizeof *p);
            if (!p)
                return -1;
            s->fl = p;
            s->capfl = nf;
        }
        for (size_t k = 0; k < nf; k++) {
            const xsm_message *msg = &s->e->run->msgs[f[k].id - 1];
            int64_t t = xsm_emit_flow_time(s->e, ev->rank, 0, &f[k]);
            /* the sender's row is another rank's, a cache miss per message
             * (0.18 of the ring's 1.75 CPU-s to trace.pftrace, which does
             * not draw it): looked up for trace.json only */
            int64_t sent = f[k].out      ? t
                           : s->all || s->sent ? s->e->run->ranks[msg->src].d.mpi[msg->send_row].t_begin
                                                : INT64_MIN;
            s->fl[k] = (xsm_evflow){f[k].id, t, (int)f[k].out, sent, f[k].out ? msg->dst : msg->src,
                                    f[k].out ? msg->recv_row : msg->send_row, 0, 0, 0, 0, 0};
            if (s->calls && !f[k].out) {
                xsm_evflow *x = &s->fl[k];
                x->comm = msg->comm;
                x->tag = msg->tag;
                x->bytes = msg->bytes;
                x->posted = msg->recv_post_row >= 0;
                x->request = x->posted ? d->mpi[msg->recv_post_row].request : 0;
            }
        }
        ev->mflows = s->fl;
        ev->nmflows = nf;
        break;
    }
    case XSM_EV_GPU: ev->rec = &d->gpu[ev->row]; break;
    case XSM_EV_INSTANT: ev->rec = &d->instants[ev->row]; break;
    case XSM_EV_COUNTER: ev->rec = &d->counters[ev->row]; break;
    default: ev->rec = &d->mem[ev->row]; break;
    }
    return 1;
}

static int xsm_msrc_close(void *src, char *err, size_t errlen)
{
    xsm_msrc *s = src;
    (void)err;
    (void)errlen;
    if (!s)
        return 0;
    xsm_iter_free(&s->it);
    free(s->mcur);
    free(s->fl);
    free(s);
    return 0;
}

static const xsm_src_ops xsm_msrc_ops = {xsm_msrc_open, xsm_msrc_next, xsm_msrc_close};

/* The analysis's source over the model (merge/analyze/feed.c): one rank's
 * regions, MPI rows, GPU activity and memory events as the per-rank
 * source gives them, each receive's flow end with its send's begin, and
 * its COMPLETION rows too (by begin, each before the events that do not
 * begin earlier: the order the streaming merge's analysis source keeps). */
typedef struct xsm_ansrc {
    xsm_msrc *m;
    uint32_t *compl; /* the rank's COMPLETION rows by begin */
    size_t ncompl, icompl;
    xsm_ev head; /* the next event of m, when has */
    int has, done;
    int every; /* trace.otf2's: instants and counters too */
    size_t rank;
} xsm_ansrc;

static _Thread_local const xsprof_io_mpi *xsm_ansrc_rows;

static int xsm_ansrc_cmp(const void *a, const void *b)
{
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    int64_t x = xsm_ansrc_rows[i].t_begin, y = xsm_ansrc_rows[j].t_begin;
    if (x != y)
        return x < y ? -1 : 1;
    return i < j ? -1 : i > j;
}

static int xsm_ansrc_close(void *src, char *err, size_t errlen)
{
    xsm_ansrc *a = src;
    if (!a)
        return 0;
    xsm_msrc_close(a->m, err, errlen);
    free(a->compl);
    free(a);
    return 0;
}

static void *xsm_ansrc_open(const xsm_emit *e, size_t r, char *err, size_t errlen)
{
    const xsprof_rank_data *d = &e->run->ranks[r].d;
    xsm_ansrc *a = calloc(1, sizeof *a);
    if (a && (a->m = xsm_msrc_open(e, r, err, errlen)) && (a->compl = malloc((d->nmpi + 1) * sizeof *a->compl))) {
        a->m->sent = 1;
        a->rank = r;
        int sorted = 1;
        for (size_t i = 0; i < d->nmpi; i++)
            if (d->mpi[i].kind == XSPROF_MPI_COMPLETION) {
                sorted &= !a->ncompl || d->mpi[a->compl[a->ncompl - 1]].t_begin <= d->mpi[i].t_begin;
                a->compl[a->ncompl++] = (uint32_t)i;
            }
        if (!sorted) {
            xsm_ansrc_rows = d->mpi;
            qsort(a->compl, a->ncompl, sizeof *a->compl, xsm_ansrc_cmp);
        }
        return a;
    }
    xsm_ansrc_close(a, NULL, 0);
    xsm_err_set(err, errlen, "xsmerge: out of memory writing the reports");
    return NULL;
}

static int xsm_ansrc_next(void *src, xsm_ev *ev)
{
    xsm_ansrc *a = src;
    while (!a->has && !a->done) {
        int got = xsm_msrc_next(a->m, &a->head);
        if (got < 0)
            return -1;
        a->done = !got;
        /* instants and counters are not the analysis's */
        a->has = got && (a->every || a->head.kind == XSM_EV_REGION || a->head.kind == XSM_EV_MPI ||
                         a->head.kind == XSM_EV_GPU || a->head.kind == XSM_EV_MEM);
    }
    const xsm_emit *e = a->m->e;
    if (a->icompl < a->ncompl) {
        const xsprof_io_mpi *c = &e->run->ranks[a->rank].d.mpi[a->compl[a->icompl]];
        if (!a->has || c->t_begin <= a->head.t) {
            *ev = (xsm_ev){c->t_begin, (int32_t)a->rank, XSM_EV_MPI, a->compl[a->icompl++], c, NULL, NULL, 0};
            return 1;
        }
    }
    if (!a->has)
        return 0;
    *ev = a->head;
    a->has = 0;
    return 1;
}

static const xsm_src_ops xsm_ansrc_ops = {xsm_ansrc_open, xsm_ansrc_next, xsm_ansrc_close};

static void *xsm_csrc_open(const xsm_emit *e, size_t r, char *err, size_t errlen)
{
    xsm_ansrc *a = xsm_ansrc_open(e, r, err, errlen);
    if (a) {
        a->every = 1;
        a->m->sent = 0;
        a->m->calls = 1;
    }
    return a;
}

static const xsm_src_ops xsm_csrc_ops = {xsm_csrc_open, xsm_ansrc_next, xsm_ansrc_close};

const xsm_src_ops *xsm_emit_source_analysis(void) { return &xsm_ansrc_ops; }
const xsm_src_ops *xsm_emit_source_model(void) { return &xsm_msrc_ops; }
const xsm_src_ops *xsm_emit_source_calls(void) { return &xsm_csrc_ops; }

/* All ranks from a per-rank source: a k-way merge by (time, rank, kind),
 * the order of xsm_iter. */
typedef struct xsm_asrc {
    const xsm_emit *e;
    void **src;   /* per rank, NULL when not present */
    xsm_ev *head; /* per rank: its next event */
    size_t *heap, n;
    int32_t last; /* rank whose event was returned last: advance it first */
    int failed_rank;
} xsm_asrc;

static int xsm_asrc_less(const xsm_asrc *a, size_t x, size_t y)
{
    const xsm_ev *p = &a->head[x], *q = &a->head[y];
    if (p->t != q->t) return p->t < q->t;
    if (x != y) return x < y;
    return p->kind < q->kind;
}

static void xsm_asrc_sift(xsm_asrc *a, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < a->n && xsm_asrc_less(a, a->heap[l], a->heap[m])) m = l;
        if (l + 1 < a->n && xsm_asrc_less(a, a->heap[l + 1], a->heap[m])) m = l + 1;
        if (m == i)
            return;
        size_t t = a->heap[i];
        a->heap[i] = a->heap[m];
        a->heap[m] = t;
        i = m;
    }
}

static int xsm_asrc_close(void *p, char *err, size_t errlen)
{
    xsm_asrc *a = p;
    if (!a)
        return 0;
    int rc = 0;
    for (size_t r = 0; a->src && r < a->e->run->nranks; r++)
        if (a->src[r] && a->e->src->close(a->src[r], err, errlen) && (int)r == a->failed_rank)
            rc = 1;
    free(a->src);
    free(a->head);
    free(a->heap);
    free(a);
    return rc;
}

/* Each rank's head is a copy of its event, but the row it points to lives
 * in its source until that source's next call: so a rank is advanced only
 * when its event has been handed out and used (at the following call). */
static void *xsm_asrc_open(const xsm_emit *e, size_t unused, char *err, size_t errlen)
{
    (void)unused;
    size_t n = e->run->nranks;
    xsm_asrc *a = calloc(1, sizeof *a);
    if (!a || !(a->src = calloc(n + 1, sizeof *a->src)) || !(a->head = calloc(n + 1, sizeof *a->head)) ||
        !(a->heap = malloc((n + 1) * sizeof *a->heap))) {
        xsm_asrc_close(a, NULL, 0);
        xsm_err_set(err, errlen, "xsmerge: out of memory writing trace.json");
        return NULL;
    }
    a->e = e;
    a->last = -1;
    a->failed_rank = -1;
    for (size_t r = 0; r < n; r++) {
        if (!e->run->ranks[r].present)
            continue;
        if (!(a->src[r] = e->src->open(e, r, err, errlen))) {
            xsm_asrc_close(a, NULL, 0);
            return NULL;
        }
        int got = e->src->next(a->src[r], &a->head[r]);
        if (got < 0) {
            a->failed_rank = (int)r;
            xsm_asrc_close(a, err, errlen);
            return NULL;
        }
        if (got)
            a->heap[a->n++] = r;
    }
    for (size_t i = a->n / 2 + 1; i-- > 0;)
        xsm_asrc_sift(a, i);
    return a;
}

static int xsm_asrc_next(void *p, xsm_ev *ev)
{
    xsm_asrc *a = p;
    if (a->last >= 0) { /* the event handed out last has been used: advance its rank */
        size_t r = (size_t)a->last;
        int got = a->e->src->next(a->src[r], &a->head[r]);
        if (got < 0) {
            a->failed_rank = (int)r;
            return -1;
        }
        if (!got)
            a->heap[0] = a->heap[--a->n];
        xsm_asrc_sift(a, 0);
        a->last = -1;
    }
    if (!a->n)
        return 0;
    size_t r = a->heap[0];
    *ev = a->head[r];
    a->last = (int32_t)r;
    return 1;
}

static const xsm_src_ops xsm_asrc_ops = {xsm_asrc_open, xsm_asrc_next, xsm_asrc_close};

const xsm_src_ops *xsm_emit_source(const xsm_emit *e) { return e->src ? e->src : &xsm_msrc_ops; }

const xsm_src_ops *xsm_emit_source_all(const xsm_emit *e) { return e->src ? &xsm_asrc_ops : &xsm_msrc_ops; }

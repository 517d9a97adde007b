/* merge/analyze/feed.c — how the analysis is fed, in memory and streamed
 * alike: every present rank's region, MPI (completions too), GPU and memory
 * events from an event source (merge/emit/emit.h: the model's, or the
 * streaming merge's read from the rank files), all ranks merged in time
 * order into one xsm_sanalysis (sprofile.c) with the waits matching found
 * (collectives, Late Receivers, Wrong Order verdicts: xsm_cwait_rec), each
 * before the first call of its rank that ends at or after its time; then
 * the critical path (spath.c: the ranks on it read once more, one at a
 * time). Owner: merge analysis. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "merge/analyze/an.h"
#include "merge/analyze/feed.h"
#include "core/record.h"

/* One rank's source in the merge: its next event, its next wait. */
typedef struct xsm_rep_rank {
    void *src;
    xsm_ev ev;
    xsm_cwait_rec w;
    int has; /* w holds its next wait */
} xsm_rep_rank;

/* Heap order: time, then rank (the same order every time). */
static int xsm_rep_less(const xsm_rep_rank *v, size_t a, size_t b)
{
    if (v[a].ev.t != v[b].ev.t)
        return v[a].ev.t < v[b].ev.t;
    return a < b;
}

static void xsm_rep_sift(const xsm_rep_rank *v, size_t *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && xsm_rep_less(v, h[l], h[m]))
            m = l;
        if (l + 1 < n && xsm_rep_less(v, h[l + 1], h[m]))
            m = l + 1;
        if (m == i)
            return;
        size_t t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Rank r's next wait into v[r].w (v[r].has 0 at its end); -1 failed (err set). */
static int xsm_feed_wait_next(const xsm_feed *f, xsm_rep_rank *v, int32_t r, char *err, size_t errlen)
{
    int got = f->wait_next ? f->wait_next(f->wait_ctx, r, &v[r].w, err, errlen) : 0;
    v[r].has = got > 0;
    return got < 0 ? -1 : 0;
}

/* A wait matching found into the analysis (a polling loop's Late Receiver
 * with its receive's post). */
static int xsm_feed_wait(xsm_sanalysis *sa, int32_t r, const xsm_cwait_rec *w)
{
    if (w->poll)
        return xsm_sanalysis_pollwait(sa, r, w->row, w->op, w->causer, w->causer_row, w->ns);
    return xsm_sanalysis_wait(sa, r, w->row, w->op, w->kind, w->causer, w->causer_row, w->ns);
}

/* The analysis thread merges the ranks' events and analyses them; reading
 * them (the sources' reorder windows, keys, times and message flows) was
 * as much again. When the reports are made alone, a feeder thread reads
 * each rank's events ahead in batches, two per rank: the analysis takes one
 * while the other fills (beside the writers, whose threads fill the cores,
 * the copies only cost: --stream, trace.pftrace with the reports 1.98 vs
 * 2.06 s). */
#define XSM_REP_BATCH 1024
typedef union xsm_rep_row {
    xsprof_io_region g;
    xsprof_io_mpi m;
    xsprof_io_gpu u;
    xsprof_io_instant i;
    xsprof_io_counter c;
    xsprof_io_mem e;
} xsm_rep_row;

typedef struct xsm_rep_batch {
    xsm_ev ev[XSM_REP_BATCH];
    xsm_rep_row row[XSM_REP_BATCH];
    xsm_evflow *fl; /* the batch's flow ends, in event order */
    size_t nfl, capfl;
    xsprof_io_arg *ar; /* its regions' arguments (a source's are valid until its next event) */
    size_t nar, capar;
    size_t n, i;    /* events in it, the next one to take */
    int end;        /* the source ended after them (-1: failed) */
} xsm_rep_batch;

typedef struct xsm_rep_feed {
    pthread_t t;
    const xsm_src_ops *ops;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    xsm_rep_rank *v;
    struct xsm_rep_fr { xsm_rep_batch b[2]; int cur, ready; } *fr; /* per rank: b[cur] is read */
    size_t *q, qh, qn, n; /* ranks whose other batch is to fill (a ring of n) */
    int stop;
} xsm_rep_feed;

static size_t xsm_rep_row_size(int kind)
{
    switch (kind) {
    case XSM_EV_REGION: return sizeof(xsprof_io_region);
    case XSM_EV_MPI: return sizeof(xsprof_io_mpi);
    case XSM_EV_GPU: return sizeof(xsprof_io_gpu);
    case XSM_EV_INSTANT: return sizeof(xsprof_io_instant);
    case XSM_EV_COUNTER: return sizeof(xsprof_io_counter);
    default: return sizeof(xsprof_io_mem);
    }
}

/* Fill batch b from source src (the feeder's thread; nothing else reads src). */
static void xsm_rep_fill(const xsm_src_ops *ops, void *src, xsm_rep_batch *b)
{
    b->n = b->i = b->nfl = b->nar = 0;
    b->end = 0;
    while (b->n < XSM_REP_BATCH) {
        xsm_ev ev;
        int got = ops->next(src, &ev);
        if (got <= 0) {
            b->end = got < 0 ? -1 : 1;
            break;
        }
        if (ev.nmflows && b->nfl + ev.nmflows > b->capfl) {
            size_t cap = b->capfl ? 2 * b->capfl : 64;
            while (cap < b->nfl + ev.nmflows)
                cap *= 2;
            xsm_evflow *f = realloc(b->fl, cap * sizeof *f);
            if (!f) {
                b->end = -1; /* memory: the source's error is empty, the analysis says so */
                break;
            }
            b->fl = f;
            b->capfl = cap;
        }
        if (ev.nmflows)
            memcpy(b->fl + b->nfl, ev.mflows, ev.nmflows * sizeof *ev.mflows);
        uint32_t na = ev.kind == XSM_EV_REGION && ev.args ? ((const xsprof_io_region *)ev.rec)->nargs : 0;
        if (na && b->nar + na > b->capar) {
            size_t cap = b->capar ? 2 * b->capar : 64;
            while (cap < b->nar + na)
                cap *= 2;
            xsprof_io_arg *a = realloc(b->ar, cap * sizeof *a);
            if (!a) {
                b->end = -1;
                break;
            }
            b->ar = a;
            b->capar = cap;
        }
        if (na)
            memcpy(b->ar + b->nar, ev.args, na * sizeof *ev.args);
        memcpy(&b->row[b->n], ev.rec, xsm_rep_row_size(ev.kind));
        ev.rec = &b->row[b->n];
        ev.mflows = (const xsm_evflow *)(uintptr_t)b->nfl; /* an offset until the batch is done */
        ev.args = na ? (const xsprof_io_arg *)(uintptr_t)(b->nar + 1) : NULL; /* the same, + 1 */
        b->nfl += ev.nmflows;
        b->nar += na;
        b->ev[b->n++] = ev;
    }
    for (size_t k = 0; k < b->n; k++) {
        b->ev[k].mflows = b->ev[k].nmflows ? b->fl + (uintptr_t)b->ev[k].mflows : NULL;
        if (b->ev[k].args)
            b->ev[k].args = b->ar + ((uintptr_t)b->ev[k].args - 1);
    }
}

static void *xsm_rep_feed_run(void *arg)
{
    xsm_rep_feed *f = arg;
    pthread_mutex_lock(&f->mu);
    for (;;) {
        while (!f->qn && !f->stop)
            pthread_cond_wait(&f->work, &f->mu);
        if (f->stop)
            break;
        size_t r = f->q[f->qh];
        f->qh = (f->qh + 1) % f->n;
        f->qn--;
        xsm_rep_batch *b = &f->fr[r].b[!f->fr[r].cur];
        pthread_mutex_unlock(&f->mu);
        xsm_rep_fill(f->ops, f->v[r].src, b);
        pthread_mutex_lock(&f->mu);
        f->fr[r].ready = 1;
        pthread_cond_broadcast(&f->done);
    }
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

/* Under the lock: rank r's other batch is to be filled. */
static void xsm_rep_feed_ask(xsm_rep_feed *f, size_t r)
{
    f->q[(f->qh + f->qn++) % f->n] = r;
    pthread_cond_signal(&f->work);
}

static void xsm_rep_feed_free(xsm_rep_feed *f)
{
    for (size_t r = 0; f->fr && r < f->n; r++)
        for (int k = 0; k < 2; k++) {
            free(f->fr[r].b[k].fl);
            free(f->fr[r].b[k].ar);
        }
    free(f->fr);
    free(f->q);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->work);
    pthread_cond_destroy(&f->done);
    free(f);
}

static void xsm_rep_feed_stop(xsm_rep_feed *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    f->stop = 1;
    pthread_cond_broadcast(&f->work);
    pthread_mutex_unlock(&f->mu);
    pthread_join(f->t, NULL);
    xsm_rep_feed_free(f);
}

/* A feeder for the sources of v (n ranks), when their batches take at most
 * 64 MiB; NULL: the analysis reads the sources itself. */
static xsm_rep_feed *xsm_rep_feed_start(const xsm_src_ops *ops, xsm_rep_rank *v, size_t n)
{
    size_t live = 0;
    for (size_t r = 0; r < n; r++)
        live += v[r].src != NULL;
    if (!live || (uint64_t)live * sizeof(struct xsm_rep_fr) > ((uint64_t)64 << 20))
        return NULL;
    xsm_rep_feed *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->ops = ops;
    f->v = v;
    f->n = n;
    f->fr = calloc(n, sizeof *f->fr);
    f->q = malloc(n * sizeof *f->q);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->work, NULL);
    pthread_cond_init(&f->done, NULL);
    if (!f->fr || !f->q || pthread_create(&f->t, NULL, xsm_rep_feed_run, f) != 0) {
        xsm_rep_feed_free(f);
        return NULL;
    }
    pthread_mutex_lock(&f->mu);
    for (size_t r = 0; r < n; r++)
        if (v[r].src)
            xsm_rep_feed_ask(f, r); /* b[1] first: b[0] starts empty */
    pthread_mutex_unlock(&f->mu);
    return f;
}

/* Rank r's next event into v[r].ev: 1, 0 at its end, -1 failed (the
 * source's close says why). */
static int xsm_rep_next(const xsm_src_ops *ops, xsm_rep_feed *f, xsm_rep_rank *v, size_t r)
{
    if (!f)
        return ops->next(v[r].src, &v[r].ev);
    struct xsm_rep_fr *fr = &f->fr[r];
    for (;;) {
        xsm_rep_batch *b = &fr->b[fr->cur];
        if (b->i < b->n) {
            v[r].ev = b->ev[b->i++];
            return 1;
        }
        if (b->end)
            return b->end < 0 ? -1 : 0;
        pthread_mutex_lock(&f->mu);
        while (!fr->ready)
            pthread_cond_wait(&f->done, &f->mu);
        fr->ready = 0;
        fr->cur ^= 1;
        if (!fr->b[fr->cur].end) /* the one just read fills meanwhile */
            xsm_rep_feed_ask(f, r);
        pthread_mutex_unlock(&f->mu);
    }
}

/* One event of rank r into the analysis. An MPI call comes after the waits
 * matching found that are due by its end: its own Wrong Order verdicts are
 * among them (the analysis keeps a wait that comes before its call until
 * the call). */
static int xsm_feed_event(const xsm_feed *f, xsm_sanalysis *sa, xsm_rep_rank *v, int32_t r, char *err, size_t errlen,
                          int *wait_failed)
{
    xsm_rep_rank *k = &v[r];
    const xsm_ev *ev = &k->ev;
    if (xsm_sanalysis_samples(sa, r, ev->t)) /* the samples before it, in the regions open then */
        return -1;
    if (ev->kind == XSM_EV_REGION)
        return xsm_sanalysis_region(sa, r, ev->rec, ev->args);
    if (ev->kind == XSM_EV_GPU)
        return xsm_sanalysis_gpu(sa, r, ev->rec);
    if (ev->kind == XSM_EV_MEM)
        return xsm_sanalysis_mem(sa, r, ev->rec);
    if (ev->kind != XSM_EV_MPI)
        return 0;
    const xsprof_io_mpi *m = ev->rec;
    while (k->has && m->kind != XSPROF_MPI_COMPLETION && k->w.p <= m->t_end) {
        if (xsm_feed_wait(sa, r, &k->w))
            return -1;
        if (xsm_feed_wait_next(f, v, r, err, errlen)) {
            *wait_failed = 1;
            return -1;
        }
    }
    return xsm_sanalysis_mpi(sa, r, m, ev->row, ev->mflows, ev->nmflows);
}

/* Why the critical path failed: its spill file's error, else memory. */
static int xsm_feed_path_err(const xsm_feed *f, const xsm_spath *p, char *err, size_t errlen)
{
    int e = xsm_spath_errno(p);
    if (e)
        return xsm_err_set(err, errlen, "xsmerge: %s: %s (a temporary file of the merge)", f->path_name, strerror(e));
    return xsm_err_set(err, errlen, "xsmerge: out of memory writing the reports");
}

/* Why the analysis failed: a temporary file's error, else memory. */
static int xsm_feed_an_err(const xsm_feed *f, const xsm_sanalysis *sa, const xsm_spath *p, char *err, size_t errlen)
{
    int e = sa ? xsm_sanalysis_errno(sa) : 0;
    if (e)
        return xsm_err_set(err, errlen, "xsmerge: %s: %s (a temporary file of the merge: the wait states for merged.h5)",
                           f->inst_name, strerror(e));
    return xsm_feed_path_err(f, p, err, errlen);
}

/* The critical path's pieces by name: the main thread of every rank on
 * the path read once more (spath.c). 0, or 1 with err set. */
static int xsm_feed_path(const xsm_feed *f, xsm_spath *p, char *err, size_t errlen)
{
    for (size_t r = 0; r < f->run->nranks; r++) {
        int on = xsm_spath_rank_begin(p, (int32_t)r);
        if (on < 0)
            return xsm_feed_path_err(f, p, err, errlen);
        if (!on)
            continue;
        void *src = f->frames->open(f->e, r, err, errlen);
        if (!src)
            return 1;
        xsm_ev ev;
        int got;
        while ((got = f->frames->next(src, &ev)) > 0) {
            int bad = ev.kind == XSM_EV_REGION ? xsm_spath_region(p, (int32_t)r, ev.rec)
                      : ev.kind == XSM_EV_MPI  ? xsm_spath_mpi(p, (int32_t)r, ev.rec)
                                               : 0;
            if (bad) {
                f->frames->close(src, NULL, 0);
                return xsm_err_set(err, errlen, "xsmerge: out of memory writing the reports");
            }
        }
        if (got < 0) {
            f->frames->close(src, err, errlen);
            return 1;
        }
        if (f->frames->close(src, err, errlen))
            return 1;
        if (xsm_spath_rank_end(p, (int32_t)r))
            return xsm_err_set(err, errlen, "xsmerge: out of memory writing the reports");
    }
    return 0;
}

static void xsm_feed_phase(const xsm_feed *f, int phase)
{
    if (f->phase)
        f->phase(f->phase_ctx, phase);
}

int xsm_feed_run(const xsm_feed *f, xsm_spath *p, FILE *inst, int alone, xsm_sanalysis **out, char *err,
                 size_t errlen)
{
    const xsm_src_ops *ops = f->events;
    size_t n = f->run->nranks, nh = 0;
    xsm_rep_feed *feed = NULL;
    xsm_rep_rank *v = calloc(n + 1, sizeof *v);
    size_t *heap = calloc(n + 1, sizeof *heap);
    xsm_sanalysis *sa = xsm_sanalysis_new(f->run, f->has_gpu, f->window);
    int rc = 1, wait_failed = 0;
    err[0] = 0;
    xsm_feed_phase(f, XSM_FEED_START);
    if (!v || !heap || !sa) {
        xsm_feed_an_err(f, sa, p, err, errlen);
        goto out;
    }
    xsm_sanalysis_set_path(sa, p);
    xsm_sanalysis_set_instances(sa, inst);
    /* every rank's regions and MPI rows (completions too) at once, in time
     * order: a wait's causing call is met after the wait */
    for (size_t r = 0; r < n; r++) {
        if (!f->run->ranks[r].present)
            continue;
        if (!(v[r].src = ops->open(f->e, r, err, errlen)))
            goto out;
        if (xsm_feed_wait_next(f, v, (int32_t)r, err, errlen))
            goto out;
    }
    feed = alone ? xsm_rep_feed_start(ops, v, n) : NULL;
    for (size_t r = 0; r < n; r++) {
        if (!v[r].src)
            continue;
        int got = xsm_rep_next(ops, feed, v, r);
        if (got < 0)
            goto src_failed;
        if (got)
            heap[nh++] = r;
    }
    for (size_t i = nh / 2; i-- > 0;)
        xsm_rep_sift(v, heap, nh, i);
    while (nh) {
        size_t r = heap[0];
        if (xsm_feed_event(f, sa, v, (int32_t)r, err, errlen, &wait_failed)) {
            if (!wait_failed)
                xsm_feed_an_err(f, sa, p, err, errlen);
            goto out;
        }
        int got = xsm_rep_next(ops, feed, v, r);
        if (got < 0)
            goto src_failed;
        if (!got)
            heap[0] = heap[--nh];
        xsm_rep_sift(v, heap, nh, 0);
    }
    for (size_t r = 0; r < n; r++) { /* waits found after a rank's last call ended */
        while (v[r].has) {
            if (xsm_feed_wait(sa, (int32_t)r, &v[r].w)) {
                xsm_feed_an_err(f, sa, p, err, errlen);
                goto out;
            }
            if (xsm_feed_wait_next(f, v, (int32_t)r, err, errlen))
                goto out;
        }
    }
    for (size_t r = 0; r < n; r++) /* samples after a rank's last row */
        if (xsm_sanalysis_samples(sa, (int32_t)r, INT64_MAX)) {
            xsm_feed_an_err(f, sa, p, err, errlen);
            goto out;
        }
    if (xsm_sanalysis_finish(sa)) {
        xsm_feed_an_err(f, sa, p, err, errlen);
        goto out;
    }
    xsm_rep_feed_stop(feed);
    feed = NULL;
    for (size_t r = 0; r < n; r++) { /* the path reads one rank at a time: the others' buffers go first */
        if (v[r].src && ops->close(v[r].src, err, errlen)) {
            v[r].src = NULL;
            goto out;
        }
        v[r].src = NULL;
    }
    xsm_feed_phase(f, XSM_FEED_PATH);
    if (xsm_spath_walk(p, sa)) {
        xsm_feed_path_err(f, p, err, errlen);
        goto out;
    }
    if (xsm_feed_path(f, p, err, errlen))
        goto out;
    *out = sa;
    sa = NULL;
    rc = 0;
    goto out;
src_failed:
    xsm_rep_feed_stop(feed); /* the sources are the feeder's until then */
    feed = NULL;
    for (size_t r = 0; r < n; r++) /* the source that failed says why */
        if (v[r].src && ops->close(v[r].src, err, errlen)) {
            v[r].src = NULL;
            break;
        }
    if (!err[0]) /* none did: the feeder ran out of memory */
        xsm_feed_an_err(f, sa, p, err, errlen);
out:
    xsm_rep_feed_stop(feed);
    for (size_t r = 0; v && r < n; r++)
        if (v[r].src)
            ops->close(v[r].src, NULL, 0);
    xsm_feed_phase(f, XSM_FEED_END); /* after the sources: none has a read in flight */
    free(v);
    free(heap);
    xsm_sanalysis_free(sa);
    return rc;
}

/* merge/stream/report.c — the reports of xsmerge --stream: every present
 * rank's region, MPI, GPU and memory rows read once more through the
 * writers' event source (times final, messages matched, each receive's end
 * with its sender), all ranks merged in time order into the streamed
 * analysis (merge/analyze/sprofile.c) with the waits and Wrong Order
 * verdicts the MPI pass found; then the critical path (merge/analyze/
 * spath.c: the ranks on it read a third time, one at a time), the reports,
 * and merged.h5's analysis tables from the spilled wait instances. Owner:
 * merge. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "merge/stream/internal.h"
#include "merge/progress.h"
#include "core/record.h"

/* The rank's waits file (xsm_cwait_rec), read one record ahead. */
typedef struct xsm_cw_reader {
    FILE *f;
    uint64_t left;
    xsm_cwait_rec w;
    int has;
    int failed; /* not opened, or a short read */
} xsm_cw_reader;

/* The next record into rd->w (rd->has 0 at the end); -1 when it failed. */
static int xsm_cw_next(xsm_cw_reader *rd)
{
    rd->has = 0;
    if (!rd->left)
        return 0;
    if (!rd->f || fread(&rd->w, sizeof rd->w, 1, rd->f) != 1) {
        rd->failed = 1;
        return -1;
    }
    rd->left--;
    rd->has = 1;
    return 0;
}

/* One rank's source in the merge: its next event, its waits file. */
typedef struct xsm_rep_rank {
    void *src;
    xsm_ev ev;
    xsm_cw_reader rd;
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

/* A wait of pass 1 into the analysis (a polling loop's Late Receiver
 * with its receive's post, from t0 as the rows are). */
static int xsm_rep_wait(const xsm_stream *s, xsm_sanalysis *sa, int32_t r, const xsm_cwait_rec *w)
{
    if (w->poll)
        return xsm_sanalysis_pollwait(sa, r, w->row, w->op, w->causer, w->causer_row, w->ns - s->t0);
    return xsm_sanalysis_wait(sa, r, w->row, w->op, w->kind, w->causer, w->causer_row, w->ns);
}

/* One event of rank r into the analysis. An MPI call comes after the waits
 * pass 1 found that are due by its end (times here are from t0): its own
 * Wrong Order verdicts are among them (the analysis keeps a wait that
 * comes before its call until the call). */
static int xsm_rep_event(xsm_stream *s, xsm_sanalysis *sa, int32_t r, xsm_rep_rank *k)
{
    const xsm_ev *ev = &k->ev;
    if (ev->kind == XSM_EV_REGION)
        return xsm_sanalysis_region(sa, r, ev->rec);
    if (ev->kind == XSM_EV_GPU)
        return xsm_sanalysis_gpu(sa, r, ev->rec);
    if (ev->kind == XSM_EV_MEM)
        return xsm_sanalysis_mem(sa, r, ev->rec);
    if (ev->kind != XSM_EV_MPI)
        return 0;
    const xsprof_io_mpi *m = ev->rec;
    while (k->rd.has && m->kind != XSPROF_MPI_COMPLETION && k->rd.w.p - s->t0 <= m->t_end) {
        const xsm_cwait_rec *w = &k->rd.w;
        if (xsm_rep_wait(s, sa, r, w) || xsm_cw_next(&k->rd))
            return -1;
    }
    return xsm_sanalysis_mpi(sa, r, m, ev->row, ev->mflows, ev->nmflows);
}

/* Why the critical path failed: its spill file's error, else memory. */
static int xsm_rep_path_err(const xsm_stream *s, const xsm_spath *p, char *err, size_t errlen)
{
    int e = xsm_spath_errno(p);
    if (e)
        return xsm_err_set(err, errlen, "xsmerge: %s: %s (a temporary file of the merge)", s->path_path, strerror(e));
    return xsm_err_set(err, errlen, "xsmerge: out of memory writing the reports");
}

/* Why the streamed analysis failed: a temporary file's error, else memory. */
static int xsm_rep_an_err(const xsm_stream *s, const xsm_sanalysis *sa, const xsm_spath *p, char *err, size_t errlen)
{
    int e = sa ? xsm_sanalysis_errno(sa) : 0;
    if (e)
        return xsm_err_set(err, errlen, "xsmerge: %s: %s (a temporary file of the merge: the wait states for merged.h5)",
                           s->tmpdir, strerror(e));
    return xsm_rep_path_err(s, p, err, errlen);
}

/* The critical path's pieces by name: the main thread of every rank on
 * the path read once more (spath.c). 0, or 1 with err set. */
static int xsm_rep_path(xsm_stream *s, xsm_spath *p, char *err, size_t errlen)
{
    for (size_t r = 0; r < s->run->nranks; r++) {
        int on = xsm_spath_rank_begin(p, (int32_t)r);
        if (on < 0)
            return xsm_rep_path_err(s, p, err, errlen);
        if (!on)
            continue;
        void *src = xsm_ssrc_frames_ops.open(s->e, r, err, errlen);
        if (!src)
            return 1;
        xsm_ev ev;
        int got;
        while ((got = xsm_ssrc_frames_ops.next(src, &ev)) > 0) {
            int bad = ev.kind == XSM_EV_REGION ? xsm_spath_region(p, (int32_t)r, ev.rec)
                      : ev.kind == XSM_EV_MPI  ? xsm_spath_mpi(p, (int32_t)r, ev.rec)
                                               : 0;
            if (bad) {
                xsm_ssrc_frames_ops.close(src, NULL, 0);
                return xsm_err_set(err, errlen, "xsmerge: out of memory writing the reports");
            }
        }
        if (got < 0) {
            xsm_ssrc_frames_ops.close(src, err, errlen);
            return 1;
        }
        if (xsm_ssrc_frames_ops.close(src, err, errlen))
            return 1;
        if (xsm_spath_rank_end(p, (int32_t)r))
            return xsm_err_set(err, errlen, "xsmerge: out of memory writing the reports");
    }
    return 0;
}

/* The analysis reads every rank at once on one thread, and decoding the
 * chunks was a sixth of it: a thread reads each table's next chunk ahead
 * (stream/tab.c) while the chunks read ahead stay under 64 MiB (one more
 * chunk per table and rank). NULL: none. */
static xsm_prefetch *xsm_rep_prefetch(const xsm_stream *s)
{
    static const int tables[] = {XSPROF_IO_T_REGIONS, XSPROF_IO_T_MPI, XSPROF_IO_T_GPU, XSPROF_IO_T_MEM};
    uint64_t bytes = 0;
    for (size_t r = 0; r < s->run->nranks; r++) {
        xsprof_rankfile *rf = s->r[r].present ? s->r[r].rf : NULL;
        if (!rf)
            continue;
        for (size_t k = 0; k < sizeof tables / sizeof *tables; k++)
            if (xsprof_rankfile_table_rows(rf, (enum xsprof_io_table)tables[k]))
                bytes += (uint64_t)xsprof_rankfile_table_chunk(rf, (enum xsprof_io_table)tables[k]) *
                         xsprof_io_table_row_size((enum xsprof_io_table)tables[k]);
    }
    return bytes && bytes <= ((uint64_t)64 << 20) ? xsm_prefetch_start() : NULL;
}

/* The analysis thread merges the ranks' events and analyses them; reading
 * them (the sources' reorder windows, keys, times and message flows) was
 * as much again. When the reports are made alone, a feeder thread reads
 * each rank's events ahead in batches, two per rank: the analysis takes one
 * while the other fills (beside the writers, whose threads fill the cores,
 * the copies only cost: trace.pftrace with the reports 1.98 vs 2.06 s). */
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
    size_t n, i;    /* events in it, the next one to take */
    int end;        /* the source ended after them (-1: failed) */
} xsm_rep_batch;

typedef struct xsm_rep_feed {
    pthread_t t;
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
static void xsm_rep_fill(void *src, xsm_rep_batch *b)
{
    b->n = b->i = b->nfl = 0;
    b->end = 0;
    while (b->n < XSM_REP_BATCH) {
        xsm_ev ev;
        int got = xsm_ssrc_an_ops.next(src, &ev);
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
        memcpy(&b->row[b->n], ev.rec, xsm_rep_row_size(ev.kind));
        ev.rec = &b->row[b->n];
        ev.mflows = (const xsm_evflow *)(uintptr_t)b->nfl; /* an offset until the batch is done */
        b->nfl += ev.nmflows;
        b->ev[b->n++] = ev;
    }
    for (size_t k = 0; k < b->n; k++)
        b->ev[k].mflows = b->ev[k].nmflows ? b->fl + (uintptr_t)b->ev[k].mflows : NULL;
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
        xsm_rep_fill(f->v[r].src, b);
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
        for (int k = 0; k < 2; k++)
            free(f->fr[r].b[k].fl);
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
static xsm_rep_feed *xsm_rep_feed_start(xsm_rep_rank *v, size_t n)
{
    size_t live = 0;
    for (size_t r = 0; r < n; r++)
        live += v[r].src != NULL;
    if (!live || (uint64_t)live * sizeof(struct xsm_rep_fr) > ((uint64_t)64 << 20))
        return NULL;
    xsm_rep_feed *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
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
static int xsm_rep_next(xsm_rep_feed *f, xsm_rep_rank *v, size_t r)
{
    if (!f)
        return xsm_ssrc_an_ops.next(v[r].src, &v[r].ev);
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

/* Every rank's rows into a new streamed analysis (*out) and its critical
 * path (p); alone: no writer runs beside it. 0, or 1 with err set. Touches
 * no state of the merge but the sources it opens: it may run beside the
 * writers' passes. */
static int xsm_rep_read(xsm_stream *s, xsm_spath *p, FILE *inst, int alone, xsm_sanalysis **out, char *err,
                        size_t errlen)
{
    size_t n = s->run->nranks, nh = 0;
    xsm_rep_feed *feed = NULL;
    xsm_rep_rank *v = calloc(n + 1, sizeof *v);
    size_t *heap = calloc(n + 1, sizeof *heap);
    unsigned char *has_gpu = calloc(n + 1, 1);
    for (size_t r = 0; has_gpu && r < n; r++) { /* a journal's rows are in memory */
        const xsm_rank *k = &s->run->ranks[r];
        has_gpu[r] = k->present && (k->rf ? xsprof_rankfile_table_rows(k->rf, XSPROF_IO_T_GPU) > 0 : k->d.ngpu > 0);
    }
    xsm_sanalysis *sa = has_gpu ? xsm_sanalysis_new(s->run, has_gpu) : NULL;
    free(has_gpu);
    int rc = 1;
    if (!v || !heap || !sa) {
        xsm_rep_an_err(s, sa, p, err, errlen);
        goto out;
    }
    xsm_sanalysis_set_path(sa, p);
    xsm_sanalysis_set_instances(sa, inst);
    s->an_pf = xsm_rep_prefetch(s);
    /* every rank's regions and MPI rows (completions too) at once, in time
     * order: a wait's causing call is met after the wait */
    for (size_t r = 0; r < n; r++) {
        xsm_srank *sr = &s->r[r];
        if (!sr->present)
            continue;
        xsm_rep_rank *k = &v[r];
        if (!(k->src = xsm_ssrc_an_ops.open(s->e, r, err, errlen)))
            goto out;
        k->rd = (xsm_cw_reader){sr->ncwait ? fopen(sr->cwait_path, "rb") : NULL, sr->ncwait, {0}, 0, 0};
        if (xsm_cw_next(&k->rd))
            goto cw_failed;
    }
    feed = alone ? xsm_rep_feed_start(v, n) : NULL;
    for (size_t r = 0; r < n; r++) {
        if (!v[r].src)
            continue;
        int got = xsm_rep_next(feed, v, r);
        if (got < 0)
            goto src_failed;
        if (got)
            heap[nh++] = r;
    }
    for (size_t i = nh / 2; i-- > 0;)
        xsm_rep_sift(v, heap, nh, i);
    while (nh) {
        size_t r = heap[0];
        xsm_rep_rank *k = &v[r];
        if (xsm_rep_event(s, sa, (int32_t)r, k)) {
            if (k->rd.failed)
                goto cw_failed;
            xsm_rep_an_err(s, sa, p, err, errlen);
            goto out;
        }
        int got = xsm_rep_next(feed, v, r);
        if (got < 0)
            goto src_failed;
        if (!got)
            heap[0] = heap[--nh];
        xsm_rep_sift(v, heap, nh, 0);
    }
    for (size_t r = 0; r < n; r++) { /* waits found after a rank's last call ended */
        xsm_cw_reader *rd = &v[r].rd;
        while (rd->has) {
            const xsm_cwait_rec *w = &rd->w;
            if (xsm_rep_wait(s, sa, (int32_t)r, w) || xsm_cw_next(rd)) {
                if (rd->failed)
                    goto cw_failed;
                xsm_rep_an_err(s, sa, p, err, errlen);
                goto out;
            }
        }
    }
    if (xsm_sanalysis_finish(sa)) {
        xsm_rep_an_err(s, sa, p, err, errlen);
        goto out;
    }
    xsm_rep_feed_stop(feed);
    feed = NULL;
    for (size_t r = 0; r < n; r++) { /* the path reads one rank at a time: the others' buffers go first */
        if (v[r].src && xsm_ssrc_an_ops.close(v[r].src, err, errlen)) {
            v[r].src = NULL;
            goto out;
        }
        v[r].src = NULL;
        if (v[r].rd.f)
            fclose(v[r].rd.f);
        v[r].rd.f = NULL;
    }
    if (!s->an_pf) /* the path reads one rank at a time: read ahead whatever the ranks */
        s->an_pf = xsm_prefetch_start();
    if (xsm_spath_walk(p, sa)) {
        xsm_rep_path_err(s, p, err, errlen);
        goto out;
    }
    if (xsm_rep_path(s, p, err, errlen))
        goto out;
    *out = sa;
    sa = NULL;
    rc = 0;
    goto out;
cw_failed:
    for (size_t r = 0; r < n; r++)
        if (v[r].rd.failed) {
            xsm_err_set(err, errlen, "xsmerge: %s: cannot read (a temporary file of the merge)", s->r[r].cwait_path);
            break;
        }
    goto out;
src_failed:
    xsm_rep_feed_stop(feed); /* the sources are the feeder's until then */
    feed = NULL;
    for (size_t r = 0; r < n; r++) /* the source that failed says why */
        if (v[r].src && xsm_ssrc_an_ops.close(v[r].src, err, errlen)) {
            v[r].src = NULL;
            break;
        }
    if (!err[0]) /* none did: the feeder ran out of memory */
        xsm_rep_an_err(s, sa, p, err, errlen);
out:
    xsm_rep_feed_stop(feed);
    for (size_t r = 0; v && r < n; r++) {
        if (v[r].src)
            xsm_ssrc_an_ops.close(v[r].src, NULL, 0);
        if (v[r].rd.f)
            fclose(v[r].rd.f);
    }
    xsm_prefetch_stop(s->an_pf); /* after the sources: none has a read in flight */
    s->an_pf = NULL;
    free(v);
    free(heap);
    xsm_sanalysis_free(sa);
    return rc;
}

/* merged.h5's /mpi row of rank r's MPI row: after the rows of the ranks
 * before it, renumbered inside --from/--to as the writer does (-1 cut). */
typedef struct xsm_rep_rows {
    xsm_stream *s;
    int64_t *off;
} xsm_rep_rows;

static int64_t xsm_rep_h5row(void *ctx, int32_t r, uint64_t row)
{
    const xsm_rep_rows *x = ctx;
    const xsm_srank *sr = &x->s->r[r];
    if (sr->kmpi) {
        if (!xsm_bits_get(sr->kmpi, row))
            return -1;
        row = xsm_bits_rank(sr->kmpi, sr->kmpi_before, row);
    }
    return x->off[r] + (int64_t)row;
}

struct xsm_stream_an {
    xsm_stream *s;
    xsm_sanalysis *sa;
    xsm_spath *path;
    FILE *path_f;      /* its spill file (unlinked) */
    FILE *inst_f, *pieces_f; /* with merged.h5: every wait instance, the path's pieces (unlinked) */
    pthread_t t;
    int started, alone, rc;
    char err[4096];
};

static void *xsm_rep_thread(void *p)
{
    xsm_stream_an *j = p;
    j->rc = xsm_rep_read(j->s, j->path, j->inst_f, j->alone, &j->sa, j->err, sizeof j->err);
    return NULL;
}

int xsm_stream_report_start(xsm_stream *s, int concurrent, xsm_stream_an **out, char *err, size_t errlen)
{
    xsm_stream_an *j = calloc(1, sizeof *j);
    if (!j)
        return xsm_err_set(err, errlen, "xsmerge: out of memory writing the reports");
    j->s = s;
    if (!(j->path_f = xsm_stream_tmp(s, "path", -1, s->path_path, sizeof s->path_path, err, errlen))) {
        free(j);
        return 1;
    }
    unlink(s->path_path); /* gone with the merge, however it ends */
    if (s->h5) { /* merged.h5's /analysis/waits and critical_path, read back at the end */
        char p1[4096], p2[4096];
        j->inst_f = xsm_stream_tmp(s, "waits", -1, p1, sizeof p1, err, errlen);
        j->pieces_f = j->inst_f ? xsm_stream_tmp(s, "cpath", -1, p2, sizeof p2, err, errlen) : NULL;
        if (j->inst_f)
            unlink(p1);
        if (j->pieces_f)
            unlink(p2);
    }
    int tmp_failed = s->h5 && !j->pieces_f; /* err says which file */
    if (tmp_failed || !(j->path = xsm_spath_new(s->run, fileno(j->path_f)))) {
        if (j->inst_f)
            fclose(j->inst_f);
        fclose(j->path_f);
        free(j);
        return tmp_failed ? 1 : xsm_err_set(err, errlen, "xsmerge: out of memory writing the reports");
    }
    xsm_spath_set_pieces(j->path, j->pieces_f);
    if (concurrent && pthread_create(&j->t, NULL, xsm_rep_thread, j) == 0) {
        j->started = 1;
    } else {
        j->alone = 1;
        xsm_rep_thread(j);
    }
    *out = j;
    return 0;
}

int xsm_stream_report_finish(xsm_stream_an *j, const xsm_report_opts *ro, const char *dir, int write, char *err,
                             size_t errlen)
{
    if (j->started)
        pthread_join(j->t, NULL);
    int rc = j->rc;
    if (rc)
        xsm_err_set(err, errlen, "%s", j->err);
    xsm_progress_mark("stream-analysis");
    if (!rc && write) {
        xsm_cpair *cm;
        size_t ncm;
        xsm_cpairs_take(&j->s->cm, &cm, &ncm);
        struct xsm_an *kept = NULL;
        xsm_report_opts o = ro ? *ro : (xsm_report_opts){0};
        o.keep = j->inst_f ? &kept : NULL;
        rc = xsm_analyze_streamed(j->s->run, j->sa, j->path, cm, ncm, dir, &o, err, errlen);
        xsm_progress_mark("reports");
        if ((rc == 0 || rc == 3) && kept) { /* merged.h5 is complete: its analysis tables */
            char path[8300];
            snprintf(path, sizeof path, "%s/merged.h5", dir);
            xsm_rep_rows x = {j->s, calloc(j->s->run->nranks + 1, sizeof *x.off)};
            for (size_t r = 0; x.off && r < j->s->run->nranks; r++)
                x.off[r + 1] = x.off[r] + (j->s->r[r].present ? (int64_t)xsm_h5src_rows(j->s, (int32_t)r, XSPROF_IO_T_MPI) : 0);
            if (!x.off)
                rc = xsm_err_set(err, errlen, "xsmerge: out of memory writing the analysis tables");
            else if (xsm_analyze_h5_rows(kept, path, xsm_rep_h5row, &x, err, errlen))
                rc = 1;
            free(x.off);
            xsm_progress_mark("analysis tables");
        }
        xsm_analyze_free(kept);
    }
    xsm_sanalysis_free(j->sa);
    xsm_spath_free(j->path);
    fclose(j->path_f);
    if (j->inst_f)
        fclose(j->inst_f);
    if (j->pieces_f)
        fclose(j->pieces_f);
    free(j);
    return rc;
}

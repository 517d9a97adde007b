/* merge/stream/stream.c — see stream.h: the driver, pass 1 over the
 * tables other than MPI (rank by rank, in threads) and the event source
 * that feeds trace.pftrace's writer in pass 2. */
#include "merge/stream/stream.h"
#include "merge/stream/internal.h"
#include "merge/par.h"
#include "merge/progress.h"
#include "merge/read/read.h"
#include "merge/util.h"
#include "core/record.h"
#include "xsprof_config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define XSM_ROW_MAX 128 /* bytes of the largest event row */

static const int xsm_kind_table[XSM_EV_N] = {XSPROF_IO_T_REGIONS, XSPROF_IO_T_MPI, XSPROF_IO_T_GPU,
                                             XSPROF_IO_T_INSTANTS, XSPROF_IO_T_COUNTERS, XSPROF_IO_T_MEM};

int xsm_tid_set_add(xsm_srank *sr, uint32_t tid)
{
    /* rows of one thread come in runs: try the last hit's neighbourhood */
    size_t lo = 0, hi = sr->ntids;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (sr->tids[mid] < tid)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < sr->ntids && sr->tids[lo] == tid)
        return 0;
    if (sr->ntids == sr->captids) {
        size_t cap = sr->captids ? 2 * sr->captids : 16;
        uint32_t *p = realloc(sr->tids, cap * sizeof *p);
        if (!p)
            return -1;
        sr->tids = p;
        sr->captids = cap;
    }
    memmove(sr->tids + lo + 1, sr->tids + lo, (sr->ntids - lo) * sizeof *sr->tids);
    sr->tids[lo] = tid;
    sr->ntids++;
    return 0;
}

/* The buffers of xsm_stream_fopen: any thread may open a file (the
 * reports' reader beside the writers). */
typedef struct xsm_iobufs {
    pthread_mutex_t mu;
    size_t size; /* 0: stdio's own */
    void **b;
    size_t n, cap;
} xsm_iobufs;

/* Bytes of buffer per temporary file: about 3 files a rank share 4 MiB,
 * between stdio's 4 KiB and 256 KiB (2 ranks: 256 KiB, 100 times fewer
 * calls; 256 ranks: 5 KiB). */
static size_t xsm_iobuf_size(size_t nranks)
{
    size_t b = ((size_t)4 << 20) / (3 * nranks + 8);
    return b < 4096 ? 4096 : b > ((size_t)256 << 10) ? (size_t)256 << 10 : b;
}

FILE *xsm_stream_fopen(const xsm_stream *s, const char *path, const char *mode)
{
    FILE *f = fopen(path, mode);
    xsm_iobufs *x = s->iob;
    if (!f || !x || !x->size)
        return f;
    void *buf = malloc(x->size);
    pthread_mutex_lock(&x->mu);
    if (buf && x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 16;
        void **p = realloc(x->b, cap * sizeof *p);
        if (p) {
            x->b = p;
            x->cap = cap;
        }
    }
    if (buf && x->n < x->cap)
        x->b[x->n++] = buf;
    else if (buf) { /* no room to keep it: stdio's own then */
        free(buf);
        buf = NULL;
    }
    pthread_mutex_unlock(&x->mu);
    if (buf)
        setvbuf(f, buf, _IOFBF, x->size);
    return f;
}

FILE *xsm_stream_tmp(const xsm_stream *s, const char *what, int rank, char *path, size_t pathlen, char *err,
                     size_t errlen)
{
    char name[96];
    if (rank >= 0)
        snprintf(name, sizeof name, "stream-%s-%d-%d.bin", what, s->proc, rank);
    else
        snprintf(name, sizeof name, "stream-%s-%d.bin", what, s->proc);
    xsm_path(path, pathlen, s->tmpdir, name);
    FILE *f = xsm_stream_fopen(s, path, "w+b");
    if (!f) {
        xsm_err_set(err, errlen, "xsmerge: %s: %s (a temporary file of the merge)", path, strerror(errno));
        return NULL;
    }
    return f;
}

void xsm_srank_span(xsm_srank *sr, int64_t tb, int64_t te)
{
    if (tb < sr->span[0])
        sr->span[0] = tb;
    if (te > sr->span[1])
        sr->span[1] = te;
}

int xsm_table_kind(int table)
{
    for (int k = 0; k < XSM_EV_N; k++)
        if (xsm_kind_table[k] == table)
            return k;
    return -1;
}

/* Map a row's times to the reference clock in place; its sort key. */
void xsm_row_key(int kind, void *row, xsm_clk *clk, uint64_t i, xsm_skey *k)
{
    switch (kind) {
    case XSM_EV_REGION: {
        xsprof_io_region *g = row;
        g->t_begin = xsm_align_clock_map(clk, g->t_begin);
        g->t_end = xsm_align_clock_map(clk, g->t_end);
        *k = (xsm_skey){g->t_begin, g->t_end, g->thread, g->depth, i};
        return;
    }
    case XSM_EV_MPI: {
        xsprof_io_mpi *m = row;
        m->t_begin = xsm_align_clock_map(clk, m->t_begin);
        m->t_end = xsm_align_clock_map(clk, m->t_end);
        *k = (xsm_skey){m->t_begin, m->t_end, 0, 0, i};
        return;
    }
    case XSM_EV_GPU: {
        xsprof_io_gpu *g = row;
        g->t_begin = xsm_align_clock_map(clk, g->t_begin);
        g->t_end = xsm_align_clock_map(clk, g->t_end);
        *k = (xsm_skey){g->t_begin, g->t_end, 0, 0, i};
        return;
    }
    case XSM_EV_INSTANT: {
        xsprof_io_instant *x = row;
        x->t = xsm_align_clock_map(clk, x->t);
        *k = (xsm_skey){x->t, x->t, 0, 0, i};
        return;
    }
    case XSM_EV_COUNTER: {
        xsprof_io_counter *x = row;
        x->t = xsm_align_clock_map(clk, x->t);
        *k = (xsm_skey){x->t, x->t, 0, 0, i};
        return;
    }
    default: {
        xsprof_io_mem *x = row;
        x->t = xsm_align_clock_map(clk, x->t);
        *k = (xsm_skey){x->t, x->t, 0, 0, i};
        return;
    }
    }
}

/* Shift a (mapped) row's times by -t0 in place. */
void xsm_row_shift(int kind, void *row, int64_t t0)
{
    switch (kind) {
    case XSM_EV_REGION: ((xsprof_io_region *)row)->t_begin -= t0; ((xsprof_io_region *)row)->t_end -= t0; return;
    case XSM_EV_MPI: ((xsprof_io_mpi *)row)->t_begin -= t0; ((xsprof_io_mpi *)row)->t_end -= t0; return;
    case XSM_EV_GPU: ((xsprof_io_gpu *)row)->t_begin -= t0; ((xsprof_io_gpu *)row)->t_end -= t0; return;
    case XSM_EV_INSTANT: ((xsprof_io_instant *)row)->t -= t0; return;
    case XSM_EV_COUNTER: ((xsprof_io_counter *)row)->t -= t0; return;
    default: ((xsprof_io_mem *)row)->t -= t0; return;
    }
}

/* ---- pass 1: one rank's tables other than MPI ---------------------------- */

typedef struct xsm_scan_ctx {
    xsm_stream *s;
    int *rc;        /* per rank: 0, 1 error, 2 needs the in-memory merge */
    char (*err)[1024];
} xsm_scan_ctx;

/* Pass 0 (--from/--to only): each rank's first and last time. The window
 * is given from t = 0, the job's first event, which is known only once
 * every row was seen: this pass reads every table once to find it, so that
 * passes 1 and 2 can cut rows as they go. */
static int xsm_span_rank(void *ctx, size_t r)
{
    xsm_scan_ctx *c = ctx;
    xsm_srank *sr = &c->s->r[r];
    if (!sr->present)
        return 0;
    const xsprof_rank_data *d = &c->s->run->ranks[r].d;
    unsigned char row[XSM_ROW_MAX];
    int rc = 0;
    for (int kind = 0; kind < XSM_EV_N && !rc; kind++) {
        xsm_tab tab;
        memset(&tab, 0, sizeof tab);
        if (xsm_tab_open(&tab, sr->rf, d, xsm_kind_table[kind])) {
            xsm_tab_close(&tab);
            rc = xsm_err_set(c->err[r], 1024, "xsmerge: out of memory");
            break;
        }
        for (uint64_t i = 0; i < tab.n; i++) {
            const void *src = xsm_tab_row(&tab, i);
            if (!src) {
                rc = xsm_err_set(c->err[r], 1024, "%s", tab.err) ? 2 : 2; /* the in-memory reader words it */
                break;
            }
            memcpy(row, src, tab.size);
            xsm_skey k;
            xsm_row_key(kind, row, &sr->clk, i, &k);
            xsm_srank_span(sr, k.t, k.te);
        }
        xsm_tab_close(&tab);
    }
    c->rc[r] = rc;
    return rc ? -1 : 0;
}

typedef struct xsm_gacc { /* growable arrays of the GPU and counter sets */
    xsm_corr *corr;
    size_t ncorr, capcorr;
    size_t capgpu, capcnt, capmem;
} xsm_gacc;

/* Add v to a small unsorted set (linear: few distinct values). */
#define XSM_SET_ADD(arr, n, cap, v, eq)                                                                             \
    do {                                                                                                        \
        size_t k_ = 0;                                                                                          \
        while (k_ < (n) && !(eq))                                                                               \
            k_++;                                                                                               \
        if (k_ == (n)) {                                                                                        \
            if (xsm_grow((void **)&(arr), &(cap), (n), sizeof *(arr)))                                          \
                return -1;                                                                                      \
            (arr)[(n)++] = (v);                                                                                 \
        }                                                                                                       \
    } while (0)

static int xsm_scan_sets(xsm_srank *sr, xsm_gacc *g, int kind, const void *row, uint64_t i)
{
    switch (kind) {
    case XSM_EV_REGION: return xsm_tid_set_add(sr, ((const xsprof_io_region *)row)->thread);
    case XSM_EV_INSTANT: return xsm_tid_set_add(sr, ((const xsprof_io_instant *)row)->thread);
    case XSM_EV_COUNTER: {
        uint32_t name = ((const xsprof_io_counter *)row)->name;
        XSM_SET_ADD(sr->counter_names, sr->ncounters, g->capcnt, name, sr->counter_names[k_] == name);
        return 0;
    }
    case XSM_EV_MEM: {
        int16_t dev = ((const xsprof_io_mem *)row)->device;
        XSM_SET_ADD(sr->memdev, sr->nmemdev, g->capmem, dev, sr->memdev[k_] == dev);
        return 0;
    }
    case XSM_EV_GPU: {
        const xsprof_io_gpu *x = row;
        if (x->kind == XSPROF_GPU_API && xsm_tid_set_add(sr, x->thread))
            return -1;
        if (x->kind != XSPROF_GPU_API) {
            xsm_gstream gs = {x->device, x->stream};
            XSM_SET_ADD(sr->gpu, sr->ngpu, g->capgpu, gs,
                        sr->gpu[k_].device == gs.device && sr->gpu[k_].stream == gs.stream);
        }
        if (x->correlation) {
            if (xsm_grow((void **)&g->corr, &g->capcorr, g->ncorr, sizeof *g->corr))
                return -1;
            g->corr[g->ncorr++] = (xsm_corr){x->correlation, (uint32_t)i, x->kind == XSPROF_GPU_API};
        }
        return 0;
    }
    default: return 0;
    }
}

static int xsm_scan_rank(void *ctx, size_t r)
{
    xsm_scan_ctx *c = ctx;
    xsm_stream *s = c->s;
    xsm_srank *sr = &s->r[r];
    char *err = c->err[r];
    if (!sr->present)
        return 0;
    const xsprof_rank_data *d = &s->run->ranks[r].d;
    xsm_gacc g = {0};
    xsm_tab tab, args;
    xsm_sheap det;
    int rc = 0;
    memset(&args, 0, sizeof args);
    if (xsm_tab_open(&args, sr->rf, d, XSPROF_IO_T_ARGS))
        rc = xsm_err_set(err, 1024, "xsmerge: out of memory");
    uint64_t nregions = 0;
    for (int kind = 0; kind < XSM_EV_N && !rc; kind++) {
        if (kind == XSM_EV_MPI)
            continue; /* pass 1 over all ranks (match.c) */
        memset(&tab, 0, sizeof tab);
        sr->out[kind].size = xsprof_io_table_row_size((enum xsprof_io_table)xsm_kind_table[kind]);
        if (xsm_tab_open(&tab, sr->rf, d, xsm_kind_table[kind]) || xsm_sheap_init(&det, xsm_window_for(s->window, tab.n), 0)) {
            xsm_tab_close(&tab);
            rc = xsm_err_set(err, 1024, "xsmerge: out of memory");
            break;
        }
        if (!(sr->smin[kind] = xsm_smin_new(tab.n))) {
            xsm_sheap_free(&det);
            xsm_tab_close(&tab);
            rc = xsm_err_set(err, 1024, "xsmerge: out of memory");
            break;
        }
        if (kind == XSM_EV_REGION) {
            nregions = tab.n;
            sr->kreg_rows = tab.n;
            /* merged.h5 with --from/--to renumbers the regions arguments point at */
            if (s->h5 && s->win && (!(sr->kreg = calloc(tab.n / 64 + 2, sizeof *sr->kreg)) ||
                                    !(sr->kreg_before = calloc(tab.n / 64 + 2, sizeof *sr->kreg_before))))
                rc = xsm_err_set(err, 1024, "xsmerge: out of memory");
        }
        if (tab.n >= UINT32_MAX)
            rc = xsm_err_set(err, 1024, "%s: more rows than the writers index", d->path) ? 2 : 2;
        unsigned char row[XSM_ROW_MAX];
        for (uint64_t i = 0; i < tab.n && !rc; i++) {
            const void *src = xsm_tab_row(&tab, i);
            if (!src) {
                rc = xsm_err_set(err, 1024, "%s", tab.err) ? 2 : 2; /* the in-memory reader words it */
                break;
            }
            memcpy(row, src, tab.size);
            if (kind == XSM_EV_REGION) {
                const xsprof_io_region *x = (const xsprof_io_region *)row;
                if (x->args < 0 ? x->nargs != 0 : (uint64_t)x->args > args.n || x->nargs > args.n - (uint64_t)x->args) {
                    rc = xsm_err_set(err, 1024, "%s: region row %llu refers to missing args", d->path,
                                     (unsigned long long)i) ? 2 : 2;
                    break;
                }
            }
            xsm_skey k;
            xsm_row_key(kind, row, &sr->clk, i, &k);
            xsm_srank_span(sr, k.t, k.te); /* te: the end, or t for a point */
            if (!xsm_stream_keep(s, k.t, k.te))
                continue; /* outside --from/--to: neither a track nor an event */
            sr->nev++;
            sr->kept_rows[xsm_kind_table[kind]]++;
            if (kind == XSM_EV_REGION && sr->kreg)
                xsm_bits_set(sr->kreg, i);
            if (xsm_scan_sets(sr, &g, kind, row, i)) {
                rc = xsm_err_set(err, 1024, "xsmerge: out of memory");
                break;
            }
            if (xsm_sheap_late(&det, &k)) {
                if (xsm_outl_add(&sr->out[kind], &k, row))
                    rc = xsm_err_set(err, 1024, "xsmerge: out of memory");
                continue;
            }
            xsm_smin_note(sr->smin[kind], i, k.t);
            if (xsm_sheap_push(&det, &k, NULL)) {
                xsm_skey gone;
                xsm_sheap_pop(&det, &gone);
            }
        }
        xsm_smin_finish(sr->smin[kind], tab.n);
        sr->rows += tab.n;
        if (kind == XSM_EV_REGION && sr->kreg)
            xsm_bits_prefix(sr->kreg, sr->kreg_before, tab.n);
        xsm_sheap_free(&det);
        xsm_tab_close(&tab);
        if (!rc && xsm_outl_finish(&sr->out[kind]))
            rc = xsm_err_set(err, 1024, "xsmerge: out of memory");
    }
    /* every argument row is read once here, so damage shows in pass 1 */
    for (uint64_t i = 0; i < args.n && !rc; i++) {
        const xsprof_io_arg *a = xsm_tab_row(&args, i);
        if (!a)
            rc = xsm_err_set(err, 1024, "%s", args.err) ? 2 : 2;
        else if (a->region < 0 || (uint64_t)a->region >= nregions || a->ndims > XSPROF_ARG_SHAPE_MAX)
            rc = xsm_err_set(err, 1024, "%s: arg row %llu is inconsistent", d->path, (unsigned long long)i) ? 2 : 2;
    }
    xsm_tab_close(&args);
    if (!rc && g.ncorr) {
        if (!(sr->gflows = malloc(g.ncorr * sizeof *sr->gflows)))
            rc = xsm_err_set(err, 1024, "xsmerge: out of memory");
        else
            sr->ngflows = xsm_emit_gpu_flows((int32_t)r, g.corr, g.ncorr, sr->gflows);
    }
    free(g.corr);
    c->rc[r] = rc;
    return rc ? -1 : 0;
}

/* ---- pass 2: one rank's events for trace.pftrace ------------------------- */

/* One table in the writers' order: the reorder heap fed without the
 * outliers, merged with them. */
typedef struct xsm_sq {
    int kind;
    xsm_tab tab;
    uint64_t next;
    xsm_sheap h;
    const xsm_outl *out;
    size_t oi, ob;   /* next outlier to release; next outlier row to skip */
    int has;         /* cand is valid */
    int from_out;    /* cand is out->key[oi] */
    xsm_skey cand;
} xsm_sq;

typedef struct xsm_stash_e { /* a receive's flow end waiting for its call */
    xsm_spill sp;
    uint32_t next;
} xsm_stash_e;

typedef struct xsm_ssrc {
    xsm_stream *s;
    int32_t r;
    xsm_srank *sr;
    xsm_clk clk;
    xsm_sq q[XSM_EV_N];
    unsigned live;    /* bit k: q[k] may still give a row (most ranks use two or three kinds) */
    xsm_tab args;
    xsprof_io_arg *argbuf;
    size_t capargs;
    unsigned char cur[XSM_ROW_MAX];
    FILE *spill;
    uint64_t sp_left;
    xsm_spill sp;     /* next spill entry, when has_sp */
    int has_sp;
    xsm_stash_e *st;  /* stash: chained by call row */
    size_t nst, capst;
    uint32_t *bucket, free_st;
    size_t nbucket;
    xsm_evflow *fl;
    size_t capfl;
    int analysis;         /* xsm_ssrc_an_ops: region, MPI, GPU and memory rows, completions too;
                           * 2 (xsm_ssrc_frames_ops): region and MPI rows only, no flows;
                           * 3 (xsm_ssrc_calls_ops): every row and the completions, no arguments */
    int args_on;          /* regions come with their arguments: trace.pftrace's, and the
                           * analysis's when the rank recorded counters (meta "counters") */
    xsprof_io_mpi *compl; /* analysis: completion rows read, times mapped, still to give */
    size_t ncompl, icompl, capcompl;
    char err[1024];
} xsm_ssrc;

static int xsm_sq_fill(xsm_ssrc *x, xsm_sq *q)
{
    const int64_t *smin = x->sr->smin[q->kind];
    while (q->next < q->tab.n && q->h.n <= q->h.window) {
        /* the least row held begins before every row still to read */
        if (smin && q->h.n && xsm_sheap_top(&q->h)->t < smin[q->next >> XSM_SMIN_SHIFT])
            break;
        uint64_t i = q->next++;
        if (q->ob < q->out->n && q->out->by_row[q->ob] == i) {
            q->ob++;
            continue;
        }
        const void *src = xsm_tab_row(&q->tab, i);
        if (!src)
            return xsm_err_set(x->err, sizeof x->err, "%s", q->tab.err);
        /* completion records are points inside their Wait/Test call: the
         * writers draw their calls; the analysis counts the bytes received,
         * in any order, so they are handed out aside from the heap */
        int compl = q->kind == XSM_EV_MPI && ((const xsprof_io_mpi *)src)->kind == XSPROF_MPI_COMPLETION;
        if (compl && x->analysis != 1 && x->analysis != 3)
            continue;
        unsigned char row[XSM_ROW_MAX];
        memcpy(row, src, q->tab.size);
        xsm_skey k;
        xsm_row_key(q->kind, row, &x->clk, i, &k);
        if (!xsm_stream_keep(x->s, k.t, k.te))
            continue;
        if (compl) {
            if (xsm_grow((void **)&x->compl, &x->capcompl, x->ncompl, sizeof *x->compl))
                return xsm_err_set(x->err, sizeof x->err, "xsmerge: out of memory");
            memcpy(&x->compl[x->ncompl], row, sizeof *x->compl);
            x->ncompl++;
            continue;
        }
        xsm_sheap_push(&q->h, &k, row);
    }
    return 0;
}

static int xsm_sq_peek(xsm_ssrc *x, xsm_sq *q)
{
    if (q->has)
        return 0;
    if (xsm_sq_fill(x, q))
        return -1;
    int heap = q->h.n > 0, outl = q->oi < q->out->n;
    if (heap && (!outl || xsm_skey_less(xsm_sheap_top(&q->h), &q->out->key[q->oi]))) {
        q->cand = *xsm_sheap_top(&q->h);
        q->from_out = 0;
        q->has = 1;
    } else if (outl) {
        q->cand = q->out->key[q->oi];
        q->from_out = 1;
        q->has = 1;
    }
    return 0;
}

static const void *xsm_sq_take(xsm_sq *q)
{
    q->has = 0;
    if (q->from_out)
        return q->out->rows + q->oi++ * q->out->size;
    xsm_skey k;
    return xsm_sheap_pop(&q->h, &k);
}

static int xsm_stash_add(xsm_ssrc *x, const xsm_spill *sp)
{
    if (x->nst * 2 >= x->nbucket) {
        size_t nb = x->nbucket ? 2 * x->nbucket : 256;
        uint32_t *b = malloc(nb * sizeof *b);
        if (!b)
            return -1;
        for (size_t i = 0; i < nb; i++)
            b[i] = UINT32_MAX;
        for (size_t i = 0; i < x->capst; i++) {
            if (x->st[i].sp.src < 0)
                continue;
            size_t h = (x->st[i].sp.call_row * 0x9e3779b1u) & (nb - 1);
            x->st[i].next = b[h];
            b[h] = (uint32_t)i;
        }
        free(x->bucket);
        x->bucket = b;
        x->nbucket = nb;
    }
    uint32_t i = x->free_st;
    if (i == UINT32_MAX) {
        size_t cap = x->capst ? 2 * x->capst : 64;
        xsm_stash_e *p = realloc(x->st, cap * sizeof *p);
        if (!p)
            return -1;
        for (size_t k = x->capst; k < cap; k++) {
            p[k].sp.src = -1;
            p[k].next = k + 1 < cap ? (uint32_t)(k + 1) : UINT32_MAX;
        }
        x->st = p;
        i = (uint32_t)x->capst;
        x->capst = cap;
    }
    x->free_st = x->st[i].next;
    size_t h = (sp->call_row * 0x9e3779b1u) & (x->nbucket - 1);
    x->st[i].sp = *sp;
    x->st[i].next = x->bucket[h];
    x->bucket[h] = i;
    x->nst++;
    return 0;
}

static int xsm_flow_room(xsm_ssrc *x, size_t n)
{
    return xsm_grow((void **)&x->fl, &x->capfl, n, sizeof *x->fl);
}

/* The message flow ends of MPI row `row` (mapped end te). */
static int xsm_mpi_flows(xsm_ssrc *x, uint64_t row, int64_t te, xsm_ev *ev)
{
    size_t n = 0;
    if (x->sr->sent[row >> 6] >> (row & 63) & 1) {
        if (xsm_flow_room(x, n))
            return -1;
        int64_t tb = ((const xsprof_io_mpi *)x->cur)->t_begin; /* the row, times final */
        /* the receiver is not kept */
        x->fl[n++] = (xsm_evflow){xsm_stream_msg_index(x->sr, row) + 1, tb, 1, tb, -1, UINT64_MAX, 0, 0, 0, 0, 0};
    }
    /* every end drawn at this call was spilled before pass 1 passed its end */
    while (x->has_sp && x->sp.p <= te) {
        if (xsm_stash_add(x, &x->sp))
            return -1;
        x->has_sp = 0;
        if (x->sp_left) {
            if (fread(&x->sp, sizeof x->sp, 1, x->spill) != 1)
                return xsm_err_set(x->err, sizeof x->err, "xsmerge: %s: short read", x->sr->spill_path) ? -1 : -1;
            x->sp_left--;
            x->has_sp = 1;
        }
    }
    size_t first = n;
    if (x->nst) {
        size_t h = (row * 0x9e3779b1u) & (x->nbucket - 1);
        for (uint32_t *p = &x->bucket[h]; *p != UINT32_MAX;) {
            xsm_stash_e *e = &x->st[*p];
            if (e->sp.call_row != row) {
                p = &e->next;
                continue;
            }
            if (xsm_flow_room(x, n))
                return -1;
            uint64_t id = xsm_stream_msg_index(&x->s->r[e->sp.src], e->sp.send_row) + 1;
            const xsm_spill *sp = &e->sp;
            x->fl[n++] = (xsm_evflow){id,       sp->t - x->s->t0, 0,         sp->sent - x->s->t0, sp->src, sp->send_row,
                                      sp->comm, sp->tag,          sp->bytes, sp->request,         (int)sp->posted};
            uint32_t i = *p;
            *p = e->next;
            e->sp.src = -1;
            e->next = x->free_st;
            x->free_st = i;
            x->nst--;
        }
    }
    for (size_t i = first + 1; i < n; i++) /* ends in message order */
        for (size_t j = i; j > first && x->fl[j - 1].id > x->fl[j].id; j--) {
            xsm_evflow t = x->fl[j];
            x->fl[j] = x->fl[j - 1];
            x->fl[j - 1] = t;
        }
    ev->mflows = x->fl;
    ev->nmflows = n;
    return 0;
}

static int xsm_ssrc_close(void *src, char *err, size_t errlen)
{
    xsm_ssrc *x = src;
    if (!x)
        return 0;
    int rc = x->err[0] ? xsm_err_set(err, errlen, "%s", x->err) : 0;
    for (int k = 0; k < XSM_EV_N; k++) {
        xsm_tab_unprefetch(&x->q[k].tab);
        xsm_tab_close(&x->q[k].tab);
        xsm_sheap_free(&x->q[k].h);
    }
    xsm_tab_close(&x->args);
    if (x->spill)
        fclose(x->spill);
    free(x->argbuf);
    free(x->st);
    free(x->bucket);
    free(x->fl);
    free(x->compl);
    free(x);
    return rc;
}

static void *xsm_ssrc_open(const xsm_emit *e, size_t r, char *err, size_t errlen)
{
    xsm_stream *s = e->src_ctx;
    xsm_ssrc *x = calloc(1, sizeof *x);
    if (!x) {
        xsm_err_set(err, errlen, "xsmerge: out of memory writing trace.pftrace");
        return NULL;
    }
    x->s = s;
    x->r = (int32_t)r;
    x->sr = &s->r[r];
    x->free_st = UINT32_MAX;
    const xsprof_rank_data *d = &s->run->ranks[r].d;
    x->clk = x->sr->clk; /* interpolation and the logical clock's knots */
    x->clk.seg = x->clk.kseg = 0;
    int bad = xsm_tab_open(&x->args, x->sr->rf, d, XSPROF_IO_T_ARGS);
    x->args_on = 1;
    for (int k = 0; k < XSM_EV_N && !bad; k++) {
        xsm_sq *q = &x->q[k];
        q->kind = k;
        q->out = &x->sr->out[k];
        bad = xsm_tab_open(&q->tab, x->sr->rf, d, xsm_kind_table[k]) || xsm_sheap_init(&q->h, xsm_window_for(s->window, q->tab.n), q->tab.size);
        if (q->tab.n || q->out->n)
            x->live |= 1u << k;
    }
    if (!bad && x->sr->nspill) {
        x->spill = xsm_stream_fopen(s, x->sr->spill_path, "rb");
        if (!x->spill) {
            xsm_err_set(err, errlen, "xsmerge: %s: %s (a temporary file of the merge)",
                        x->sr->spill_path, strerror(errno));
            xsm_ssrc_close(x, NULL, 0);
            return NULL;
        }
        setvbuf(x->spill, NULL, _IOFBF, 1 << 16);
        x->sp_left = x->sr->nspill;
        if (fread(&x->sp, sizeof x->sp, 1, x->spill) == 1) {
            x->sp_left--;
            x->has_sp = 1;
        }
    }
    if (bad) {
        xsm_err_set(err, errlen, "xsmerge: out of memory writing trace.pftrace");
        xsm_ssrc_close(x, NULL, 0);
        return NULL;
    }
    return x;
}

static int xsm_ssrc_next(void *src, xsm_ev *ev)
{
    xsm_ssrc *x = src;
    int best = -1;
    for (unsigned live = x->live; live; live &= live - 1) {
        int k = __builtin_ctz(live);
        xsm_sq *q = &x->q[k];
        if (xsm_sq_peek(x, q))
            return -1;
        if (!q->has && q->next >= q->tab.n && q->oi >= q->out->n)
            x->live &= ~(1u << k); /* read and given out: never again */
        if (q->has && (best < 0 || q->cand.t < x->q[best].cand.t))
            best = k; /* equal times: the lower kind, as xsm_iter */
    }
    /* a completion read ahead waits for its time: the analysis merges the
     * ranks by time and needs each rank's events in order */
    if (x->icompl < x->ncompl && (best < 0 || x->compl[x->icompl].t_begin <= x->q[best].cand.t)) {
        memcpy(x->cur, &x->compl[x->icompl++], sizeof *x->compl);
        if (x->icompl == x->ncompl) {
            x->icompl = x->ncompl = 0;
        } else if (x->icompl >= x->ncompl / 2) { /* never empty: keep only what is still to give */
            memmove(x->compl, x->compl + x->icompl, (x->ncompl - x->icompl) * sizeof *x->compl);
            x->ncompl -= x->icompl;
            x->icompl = 0;
        }
        xsm_row_shift(XSM_EV_MPI, x->cur, x->s->t0);
        *ev = (xsm_ev){((const xsprof_io_mpi *)x->cur)->t_begin, x->r, XSM_EV_MPI, 0, x->cur, NULL, NULL, 0};
        return 1;
    }
    if (best < 0)
        return 0;
    xsm_sq *q = &x->q[best];
    xsm_skey k = q->cand;
    const void *row = xsm_sq_take(q);
    memcpy(x->cur, row, q->tab.size);
    xsm_row_shift(best, x->cur, x->s->t0);
    ev->t = k.t - x->s->t0;
    ev->rank = x->r;
    ev->kind = best;
    ev->row = (size_t)k.row;
    ev->rec = x->cur;
    ev->args = NULL;
    ev->mflows = NULL;
    ev->nmflows = 0;
    if (best == XSM_EV_REGION) {
        const xsprof_io_region *g = (const xsprof_io_region *)x->cur;
        if (x->args_on && g->nargs && g->args >= 0 && (uint64_t)g->args + g->nargs <= x->args.n) {
            if (x->capargs < g->nargs) {
                xsprof_io_arg *p = realloc(x->argbuf, g->nargs * sizeof *p);
                if (!p)
                    return -1;
                x->argbuf = p;
                x->capargs = g->nargs;
            }
            for (uint32_t a = 0; a < g->nargs; a++) {
                const xsprof_io_arg *ar = xsm_tab_row(&x->args, (uint64_t)g->args + a);
                if (!ar)
                    return xsm_err_set(x->err, sizeof x->err, "%s", x->args.err) ? -1 : -1;
                x->argbuf[a] = *ar;
            }
            ev->args = x->argbuf;
        }
    } else if (best == XSM_EV_MPI && x->analysis != 2) {
        if (xsm_mpi_flows(x, k.row, k.te, ev))
            return -1;
    }
    return 1;
}

const xsm_src_ops xsm_ssrc_ops = {xsm_ssrc_open, xsm_ssrc_next, xsm_ssrc_close};

/* The writers' source read for the analysis (mode 1) or for the critical
 * path's frames (mode 2). */
static void *xsm_ssrc_open_mode(const xsm_emit *e, size_t r, char *err, size_t errlen, int mode)
{
    xsm_ssrc *x = xsm_ssrc_open(e, r, err, errlen);
    if (x) {
        x->analysis = mode;
        x->args_on = 0;
        const xsprof_rank_data *d = &e->run->ranks[r].d;
        for (size_t i = 0; mode == 1 && i < d->nmeta && !x->args_on; i++)
            x->args_on = !strcmp(xsprof_rank_data_string(d, d->meta[i].key), "counters");
        /* the analysis reads regions, MPI, GPU and memory; the frames regions and MPI */
        x->live &= 1u << XSM_EV_REGION | 1u << XSM_EV_MPI | (mode == 1 ? 1u << XSM_EV_GPU | 1u << XSM_EV_MEM : 0);
        xsm_stream *s = e->src_ctx;
        for (unsigned live = x->live; s->an_pf && live; live &= live - 1)
            if (xsm_tab_prefetch(&x->q[__builtin_ctz(live)].tab, s->an_pf)) {
                xsm_err_set(err, errlen, "xsmerge: out of memory writing the reports");
                xsm_ssrc_close(x, NULL, 0);
                return NULL;
            }
    }
    return x;
}

static void *xsm_ssrc_an_open(const xsm_emit *e, size_t r, char *err, size_t errlen)
{
    return xsm_ssrc_open_mode(e, r, err, errlen, 1);
}

static void *xsm_ssrc_frames_open(const xsm_emit *e, size_t r, char *err, size_t errlen)
{
    return xsm_ssrc_open_mode(e, r, err, errlen, 2);
}

static void *xsm_ssrc_calls_open(const xsm_emit *e, size_t r, char *err, size_t errlen)
{
    xsm_ssrc *x = xsm_ssrc_open(e, r, err, errlen);
    if (x) {
        x->analysis = 3;
        x->args_on = 0;
    }
    return x;
}

const xsm_src_ops xsm_ssrc_an_ops = {xsm_ssrc_an_open, xsm_ssrc_next, xsm_ssrc_close};
const xsm_src_ops xsm_ssrc_calls_ops = {xsm_ssrc_calls_open, xsm_ssrc_next, xsm_ssrc_close};
const xsm_src_ops xsm_ssrc_frames_ops = {xsm_ssrc_frames_open, xsm_ssrc_next, xsm_ssrc_close};

/* ---- driver ----------------------------------------------------------------- */

static size_t xsm_stream_window(void)
{
    const char *v = getenv("XSPROF_MERGE_STREAM_WINDOW");
    long w = v && *v ? strtol(v, NULL, 10) : 4096;
    return w < 1 ? 1 : w > (1L << 20) ? (size_t)1 << 20 : (size_t)w;
}

static void xsm_srank_free(xsm_srank *sr)
{
    free(sr->tids);
    free(sr->gpu);
    free(sr->counter_names);
    free(sr->memdev);
    free(sr->gflows);
    for (int k = 0; k < XSM_EV_N; k++) {
        xsm_outl_free(&sr->out[k]);
        free(sr->smin[k]);
    }
    free(sr->sent);
    free(sr->sent_before);
    free(sr->kmpi);
    free(sr->kmpi_before);
    free(sr->kreg);
    free(sr->kreg_before);
    for (int k = 0; k < XSM_MARK_N; k++)
        free(sr->mark[k]);
    if (sr->spill_path[0])
        unlink(sr->spill_path);
    if (sr->cwait_path[0])
        unlink(sr->cwait_path);
    xsm_clc_free(sr);
}

/* The largest code of all processes (serial: rc). */
static int xsm_stream_agree(const xsm_par *par, int rc)
{
    int first;
    return par ? xsm_par_agree(par, rc, 1, &first) : rc;
}

/* ... for a failure every process returns: with the first failing
 * process's message (main.c's speaker may not have failed itself) */
static int xsm_stream_agree_said(const xsm_par *par, int rc, char *err, size_t errlen)
{
    return par ? xsm_par_agree_said(par, rc, 1, err, errlen) : rc;
}

/* Streaming keeps, per rank, a spill file and the logical clock's records
 * or knots open, and the rank file itself when it could not be read
 * without HDF5 (io/reader.h: `attached` of them; 40 ranks with their files
 * open needed 125 descriptors, 80 ranks 241-260): raise the soft limit on
 * descriptors to the hard one, and 0 when they fit under it with room for
 * the output files, else -1 with err saying so (the in-memory merge opens
 * one file at a time). */
static int xsm_stream_fds(const char *run_dir, long attached, int per_rank, char *err, size_t errlen)
{
    xsm_candidate *c = NULL;
    size_t n = 0;
    char e[256];
    if (xsm_read_scan(run_dir, &c, &n, e, sizeof e))
        return 0; /* the load words it */
    free(c);
    uint64_t need = (uint64_t)per_rank * n + (uint64_t)attached + 64;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < rl.rlim_max) {
        struct rlimit up = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            rl = up;
    }
    if (rl.rlim_cur == RLIM_INFINITY || need <= (uint64_t)rl.rlim_cur)
        return 0;
    xsm_err_set(err, errlen, "it keeps %llu files open: %zu rank files, %llu open files allowed (ulimit -n)",
                (unsigned long long)need - 64, n, (unsigned long long)rl.rlim_cur);
    return -1;
}

static int xsm_stream_try(const char *run_dir, const xsm_load_opts *opts, const char *dir, FILE *notes, int threads,
                          int what, const xsm_par *par, const xsm_report_opts *ro, size_t proc_window, int clc,
                          int *proc_late, int *need_clc, xsm_stream_summary *sum, char *err, size_t errlen)
{
    /* Notes wait until streaming is sure to go ahead: a run merged in
     * memory after all prints its own. */
    char *nbuf = NULL;
    size_t nlen = 0;
    FILE *nf = notes ? open_memstream(&nbuf, &nlen) : NULL;
    xsm_load_opts o = *opts;
    o.stream = 1;
    xsm_run run;
    xsm_iobufs iob = {.mu = PTHREAD_MUTEX_INITIALIZER};
    xsm_stream s = {.run = &run, .window = xsm_stream_window(), .proc_window = proc_window, .tmpdir = dir, .notes = nf,
                    .proc = par ? par->rank : 0, .iob = &iob};
    xsm_emit e;
    memset(&e, 0, sizeof e);
    int rc = 0;
    /* each process reads every file (pass 1 is the same everywhere) */
    memset(&run, 0, sizeof run);
    /* before loading: two files per rank (the rank files themselves are
     * closed once loaded when they can be read without HDF5); after: the
     * rank files that stay open too */
    /* per rank: its spill file and the logical clock's records, or with the
     * reports, its spill file read by trace.json's pass and by the reports'
     * beside it, and its collective waits */
    int per_rank = what & XSM_STREAM_REPORT ? 3 : 2;
    int lrc = xsm_stream_fds(run_dir, 0, per_rank, err, errlen) || xsm_run_load_par(run_dir, &o, NULL, nf, &run, err, errlen)
                  ? 2
                  : 0;
    if (!lrc) {
        long attached = 0;
        for (size_t r = 0; r < run.nranks; r++)
            attached += run.ranks[r].rf && !xsprof_rankfile_detached(run.ranks[r].rf);
        lrc = xsm_stream_fds(run_dir, attached, per_rank, err, errlen) ? 2 : 0;
    }
    if (xsm_stream_agree(par, lrc)) {
        xsm_run_free(&run);
        if (nf)
            fclose(nf);
        free(nbuf);
        return 2; /* the in-memory merge words the problem */
    }
    run.min_latency_ns = o.min_latency_ns > 0 ? o.min_latency_ns : 0; /* as merge/read */
    s.h5 = (what & XSM_STREAM_H5) != 0;
    s.report = (what & XSM_STREAM_REPORT) != 0;
    s.an_window = ro ? ro->window : 0;
    s.otf2 = (what & XSM_STREAM_OTF2) != 0;
    s.h5msgs_fd = -1;
    s.h5tab_rank = -1;
    size_t n = run.nranks;
    iob.size = xsm_iobuf_size(n);
    s.r = calloc(n + 1, sizeof *s.r);
    int *rcs = calloc(n + 1, sizeof *rcs);
    char(*errs)[1024] = calloc(n + 1, sizeof *errs);
    unsigned char *order = calloc(n + 1, 1);
    if (!s.r || !rcs || !errs || !order) {
        rc = xsm_err_set(err, errlen, "xsmerge: out of memory");
        goto out;
    }
    for (size_t r = 0; r < n; r++) {
        xsm_srank *sr = &s.r[r];
        sr->present = run.ranks[r].present;
        sr->rf = run.ranks[r].rf;
        sr->span[0] = INT64_MAX;
        sr->span[1] = INT64_MIN;
        if (sr->present) {
            double res = xsm_align_clock_prepare(&run.ranks[r].d);
            if (res > run.clock.max_residual_us) /* as merge/align's interpolation */
                run.clock.max_residual_us = res;
            sr->clk = (xsm_clk){run.ranks[r].d.clock, run.ranks[r].d.nclock, 0, NULL, 0, 0};
        }
    }
    xsm_parallel_threads(threads);
    if (clc) {
        /* the logical clock first: every pass below sees corrected times */
        s.collect = 1;
        rc = xsm_smatch_run(&s, err, errlen);
        s.collect = 0;
        for (size_t r = 0; r < n; r++) {
            xsm_srank *sr = &s.r[r];
            sr->pin = sr->sent; /* collect mode's sent bits are the pinned begins */
            sr->sent = NULL;
            free(sr->sent_before);
            sr->sent_before = NULL;
            sr->nmatched = 0;
        }
        xsm_progress_mark("stream-collect");
        if (!rc)
            rc = xsm_clc_run(&s, err, errlen);
        s.clc = !rc;
        for (size_t r = 0; r < n && !rc; r++) { /* the map of what no pass moves (samples) */
            run.ranks[r].knots = s.r[r].knots;
            run.ranks[r].nknots = s.r[r].nknots;
        }
        for (size_t r = 0; r < n; r++) /* 3 bits per MPI row and the records: done with */
            xsm_clc_records_free(&s.r[r]);
        xsm_progress_mark("stream-clock");
    }
    xsm_scan_ctx sc = {&s, rcs, errs};
    if (!rc && (o.from_ns > 0 || o.to_ns > 0)) {
        xsm_parallel_for(n, xsm_span_rank, &sc);
        int64_t t0 = INT64_MAX;
        for (size_t r = 0; r < n && !rc; r++) {
            if (rcs[r]) {
                rc = rcs[r];
                xsm_err_set(err, errlen, "%s", errs[r]);
            }
            t0 = s.r[r].present && s.r[r].span[0] < t0 ? s.r[r].span[0] : t0;
        }
        t0 = t0 == INT64_MAX ? 0 : t0; /* as below */
        /* as merge/read/select.c: [from, to] from t = 0, no end without --to */
        s.win = 1;
        if (__builtin_add_overflow(t0, o.from_ns, &s.from))
            s.from = INT64_MAX;
        if (o.to_ns <= 0 || __builtin_add_overflow(t0, o.to_ns, &s.to))
            s.to = INT64_MAX;
        xsm_progress_mark("stream-span");
    }
    if (!rc)
        xsm_parallel_for(n, xsm_scan_rank, &sc);
    for (size_t r = 0; r < n && !rc; r++)
        if (rcs[r]) {
            rc = rcs[r];
            xsm_err_set(err, errlen, "%s", errs[r]);
        }
    xsm_progress_mark("stream-scan");
    if (!rc)
        rc = xsm_smatch_run(&s, err, errlen);
    xsm_progress_mark("stream-match");
    if ((rc = xsm_stream_agree_said(par, rc, err, errlen)) != 0)
        goto out;
    /* t = 0 at the job's first event, as merge/align's origin */
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (size_t r = 0; r < n; r++) {
        if (!s.r[r].present)
            continue;
        t0 = s.r[r].span[0] < t0 ? s.r[r].span[0] : t0;
        t1 = s.r[r].span[1] > t1 ? s.r[r].span[1] : t1;
    }
    s.t0 = t0 == INT64_MAX ? 0 : t0;
    run.t0_ref_ns = s.t0;
    run.t_end = t0 == INT64_MAX ? 0 : t1 - t0;
    if (s.win && xsm_window_check(&run, o.from_ns, err, errlen))
        rc = 1; /* as in memory: the window holds nothing */
    if (s.win) /* from t = 0, as xsm_select_window's */
        xsm_run_window_set(&run, o.from_ns, o.to_ns > 0 ? o.to_ns : INT64_MAX);
    if (!rc && s.h5 && xsm_h5msgs_place(&s, err, errlen))
        rc = 1;
    if (!rc && xsm_emit_init(&e, &run, order, err, errlen))
        rc = 1;
    e.nevents = 0;
    for (size_t r = 0; r < n && !rc; r++) {
        xsm_srank *sr = &s.r[r];
        if (!sr->present)
            continue;
        if (run.ranks[r].rf) /* a journal's rows are in memory and counted there */
            run.ranks[r].stream_rows = sr->rows + xsprof_rankfile_table_rows(run.ranks[r].rf, XSPROF_IO_T_MPI);
        e.nevents += sr->nev;
        if (xsm_emit_set_tracks(&e, (int32_t)r, sr->tids, sr->ntids, sr->gpu, sr->ngpu, sr->counter_names,
                                sr->ncounters, sr->memdev, sr->nmemdev, sr->gflows, sr->ngflows))
            rc = xsm_err_set(err, errlen, "xsmerge: out of memory");
        else
            sr->gflows = NULL; /* the emit context owns them now */
        e.ranks[r].mpi_thread = sr->mpi_thread;
        memcpy(e.ranks[r].mark, sr->mark, sizeof sr->mark);
        memset(sr->mark, 0, sizeof sr->mark);
    }
    if ((rc = xsm_stream_agree_said(par, rc, err, errlen)) != 0)
        goto out; /* every process stops before the collective writes */
    xsm_emit_number_tracks(&e);
    if (nf) {
        fflush(nf);
        fwrite(nbuf, 1, nlen, notes);
    }
    e.threads = threads;
    e.src = &xsm_ssrc_ops;
    e.src_ctx = &s;
    s.e = &e;
    /* the reports' reading pass on a thread of its own beside the writers
     * (the in-memory merge runs its analysis beside them too) */
    xsm_stream_an *an = NULL;
    char rerr[256];
    int rstart = s.report && (!par || par->rank == 0) &&
                 xsm_stream_report_start(&s, (what & ~(XSM_STREAM_REPORT | XSM_STREAM_JSON_WHOLE)) != 0, &an, rerr,
                                         sizeof rerr);
    if (what & XSM_STREAM_PFTRACE) { /* collective under mpirun: every process, whatever failed */
        rc = (par ? xsm_par_pftrace(par, &e, dir, err, errlen) : xsm_emit_pftrace(&e, dir, err, errlen)) ? 1 : 0;
        xsm_progress_mark("pftrace");
    }
    if (!rc && rstart)
        rc = xsm_err_set(err, errlen, "%s", rerr);
    /* as in memory: trace.json on the last process, merged.h5 and the
     * reports on process 0, so that two processes write them side by side */
    if (!rc && (what & XSM_STREAM_JSON) && (!par || par->rank == par->size - 1)) {
        e.json_whole = (what & XSM_STREAM_JSON_WHOLE) != 0;
        rc = xsm_emit_json(&e, dir, err, errlen);
        if (rc == 2) /* as in memory, by the process that writes it */
            xsm_emit_json_left_out(opts->quiet ? NULL : stderr);
        rc = rc == 1;
        xsm_progress_mark("trace.json");
    }
    /* trace.otf2 on the last process, as in memory */
    if (!rc && (what & XSM_STREAM_OTF2) && (!par || par->rank == par->size - 1)) {
#if XSPROF_HAVE_OTF2
        rc = xsm_emit_otf2(&e, &xsm_ssrc_calls_ops, dir, notes, err, errlen) ? 1 : 0;
#else
        rc = xsm_err_set(err, errlen, "xsmerge: otf2 is unavailable: built without libotf2");
#endif
        xsm_progress_mark("trace.otf2");
    }
    if (!rc && s.h5 && (!par || par->rank == 0)) {
        /* the collectives (sorted as merge/match sorts them) become the run's */
        if (s.nh5colls)
            qsort(s.h5colls, s.nh5colls, sizeof *s.h5colls, xsm_h5coll_cmp);
        xsm_h5colls_final(&s);
        run.colls = s.h5colls;
        run.ncolls = s.nh5colls;
        s.h5colls = NULL;
        s.nh5colls = 0;
        e.h5src = &xsm_h5src;
        e.h5src_ctx = &s;
        e.h5src_nmsgs = s.nmsgs;
        rc = xsm_emit_h5(&e, dir, err, errlen) ? 1 : 0;
        xsm_progress_mark("merged.h5");
    }
    sum->report_rc = 0;
    if (an) { /* a writer's error first: the analysis ran beside it */
        char aerr[4096];
        int arc = xsm_stream_report_finish(an, ro, dir, !rc, aerr, sizeof aerr);
        if (arc == 3)
            sum->report_rc = 3;
        else if (arc && !rc)
            rc = xsm_err_set(err, errlen, "%s", aerr);
    }
    rc = xsm_stream_agree_said(par, rc, err, errlen);
    sum->nranks = n;
    sum->nmsgs = s.nmsgs;
    sum->ncolls = s.ncolls;
    sum->violations_before = run.clock.violations_before;
    sum->violations_after = run.clock.violations_after;
out:
    if (nf)
        fclose(nf);
    free(nbuf);
    xsm_emit_free(&e);
    for (size_t r = 0; s.r && r < n; r++)
        xsm_srank_free(&s.r[r]);
    free(s.r);
    free(rcs);
    free(errs);
    free(order);
    if (s.coll_file)
        fclose(s.coll_file);
    if (s.coll_path[0])
        unlink(s.coll_path);
    xsm_h5_cleanup(&s);
    xsm_cpairs_free(&s.cm);
    xsm_run_free(&run);
    for (size_t i = 0; i < iob.n; i++) /* every file is closed now */
        free(iob.b[i]);
    free(iob.b);
    *proc_late = s.proc_late;
    *need_clc = s.need_clc;
    return rc;
}

int xsm_stream_merge(const char *run_dir, const xsm_load_opts *opts, const char *dir, FILE *notes, int threads,
                     int what, const xsm_par *par, const xsm_report_opts *ro, xsm_stream_summary *sum, char *err,
                     size_t errlen)
{
    size_t w = xsm_stream_window(), pw = w / 64 ? w / 64 : 1;
    int clc = opts->min_latency_ns > 0, rc = 2;
    /* at most: without the logical clock, with it, with the whole window;
     * the flags are the same everywhere (every process reads every file),
     * agreed all the same so that no process can be left alone in a collective */
    for (int attempt = 0; attempt < 3; attempt++) {
        int late = 0, need = 0;
        rc = xsm_stream_try(run_dir, opts, dir, notes, threads, what, par, ro, pw, clc, &late, &need, sum, err, errlen);
        if (rc != 2)
            break;
        if (!clc && xsm_stream_agree(par, need)) {
            clc = 1;
        } else if (pw < w && xsm_stream_agree(par, late)) {
            pw = w;
        } else {
            break;
        }
        err[0] = 0;
    }
    return rc;
}

/* merge/emit/ctx.c — shared preparation for the writers and the k-way
 * event iterator (see emit.h). */
#include "merge/emit/emit.h"
#include "core/record.h" /* kinds of mpi and gpu rows */

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* qsort has no context argument: the rank being sorted is passed here. */
static _Thread_local const xsprof_rank_data *xsm_sort_d; /* ranks are prepared in parallel */

static int xsm_cmp64(int64_t a, int64_t b) { return a < b ? -1 : a > b; }

static int xsm_reg_cmp(const void *a, const void *b)
{
    const xsprof_io_region *x = &xsm_sort_d->regions[*(const uint32_t *)a], *y = &xsm_sort_d->regions[*(const uint32_t *)b];
    int c = xsm_cmp64(x->t_begin, y->t_begin);
    if (c) return c;
    if (x->thread != y->thread) return x->thread < y->thread ? -1 : 1;
    if (x->depth != y->depth) return x->depth < y->depth ? -1 : 1; /* parents first */
    c = xsm_cmp64(y->t_end, x->t_end); /* longer first */
    if (c) return c;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

#define XSM_ROW_CMP(fn, arr, tb, te)                                                                        \
    static int fn(const void *a, const void *b)                                                             \
    {                                                                                                       \
        uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;                                        \
        int c = xsm_cmp64(xsm_sort_d->arr[i].tb, xsm_sort_d->arr[j].tb);                                    \
        if (c) return c;                                                                                    \
        c = xsm_cmp64(xsm_sort_d->arr[j].te, xsm_sort_d->arr[i].te);                                        \
        if (c) return c;                                                                                    \
        return i < j ? -1 : i > j;                                                                          \
    }
XSM_ROW_CMP(xsm_mpi_cmp, mpi, t_begin, t_end)
XSM_ROW_CMP(xsm_gpu_cmp, gpu, t_begin, t_end)
XSM_ROW_CMP(xsm_inst_cmp, instants, t, t)
XSM_ROW_CMP(xsm_cnt_cmp, counters, t, t)
XSM_ROW_CMP(xsm_mem_cmp, mem, t, t)

static int xsm_u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The first of v[0..n) (sorted) that is not below x. */
static size_t xsm_u32_lower(const uint32_t *v, size_t n, uint32_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int xsm_gs_cmp(const void *a, const void *b)
{
    const xsm_gstream *x = a, *y = b;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    return x->stream < y->stream ? -1 : x->stream > y->stream;
}

static int xsm_i16_cmp(const void *a, const void *b)
{
    int16_t x = *(const int16_t *)a, y = *(const int16_t *)b;
    return x < y ? -1 : x > y;
}

static int xsm_flow_cmp(const void *a, const void *b)
{
    const xsm_flow *x = a, *y = b;
    if (x->row != y->row) return x->row < y->row ? -1 : 1;
    if (x->out != y->out) return x->out > y->out ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Sort and deduplicate an array of `n` elements of `size`. */
static size_t xsm_uniq(void *arr, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (!n)
        return 0;
    qsort(arr, n, size, cmp);
    char *p = arr;
    size_t k = 1;
    for (size_t i = 1; i < n; i++)
        if (cmp(p + (k - 1) * size, p + i * size) != 0)
            memmove(p + k++ * size, p + i * size, size);
    return k;
}

static int xsm_corr_cmp(const void *a, const void *b)
{
    const xsm_corr *x = a, *y = b;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    if (x->api != y->api) return y->api - x->api;
    return x->row < y->row ? -1 : x->row > y->row;
}

static int64_t xsm_row_time(const xsprof_rank_data *d, int kind, size_t row);

/* Insert tid into the sorted set er->tids (*last, the previous hit, is
 * checked first: rows of one thread come in runs). */
static int xsm_tid_add(xsm_erank *er, size_t *cap, size_t *last, uint32_t tid)
{
    if (*last < er->ntids && er->tids[*last] == tid)
        return 0;
    size_t lo = xsm_emit_tid_index(er, tid);
    if (lo < er->ntids && er->tids[lo] == tid) {
        *last = lo;
        return 0;
    }
    if (er->ntids == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        uint32_t *p = realloc(er->tids, c * sizeof *p);
        if (!p)
            return -1;
        er->tids = p;
        *cap = c;
    }
    memmove(er->tids + lo + 1, er->tids + lo, (er->ntids - lo) * sizeof *er->tids);
    er->tids[lo] = tid;
    er->ntids++;
    *last = lo;
    return 0;
}

/* The global name of each of er's threads (UINT32_MAX: none), from the
 * thread table; er->tid_names is (re)allocated for er->ntids. */
static int xsm_tid_names(xsm_erank *er, const xsprof_rank_data *d)
{
    uint32_t *tn = realloc(er->tid_names, (er->ntids + 1) * sizeof *tn);
    if (!tn)
        return -1;
    er->tid_names = tn;
    for (size_t i = 0; i < er->ntids; i++)
        tn[i] = UINT32_MAX;
    for (size_t i = 0; i < d->nthreads; i++)
        if (d->threads[i].name < d->nstrings && d->strings[d->threads[i].name] && d->strings[d->threads[i].name][0])
            tn[xsm_emit_tid_index(er, d->threads[i].tid)] = er->gname[d->threads[i].name];
    return 0;
}

/* Global ids of a rank's strings: in rank order, so ids never depend on
 * threads or processes. */
static int xsm_erank_names(xsm_emit *e, int32_t r)
{
    const xsprof_rank_data *d = &e->run->ranks[r].d;
    xsm_erank *er = &e->ranks[r];
    er->gname = malloc((d->nstrings + 1) * sizeof *er->gname);
    if (!er->gname)
        return -1;
    for (uint32_t i = 0; i < d->nstrings; i++)
        if ((er->gname[i] = xsm_strtab_intern(&e->names, d->strings[i] ? d->strings[i] : "")) == UINT32_MAX)
            return -1;
    if ((er->gname[d->nstrings] = xsm_strtab_intern(&e->names, "?")) == UINT32_MAX)
        return -1;
    return 0;
}

/* The threads only the samples name (er->xos): known everywhere, since
 * samples are loaded whole with every rank in every mode. */
static int xsm_erank_sampled(xsm_emit *e, int32_t r)
{
    const xsprof_rank_data *d = &e->run->ranks[r].d;
    xsm_erank *er = &e->ranks[r];
    er->xos = malloc((d->nsamples + 1) * sizeof *er->xos);
    if (!er->xos)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < d->nsamples; i++) {
        uint32_t os = (uint32_t)d->samples[i].os_tid;
        size_t k = 0;
        while (k < d->nthreads && (uint32_t)d->threads[k].os_tid != os)
            k++;
        if (k == d->nthreads && (n == 0 || er->xos[n - 1] != os))
            er->xos[n++] = os; /* runs of one thread: few duplicates left for the sort */
    }
    er->nxos = xsm_uniq(er->xos, n, sizeof *er->xos, xsm_u32_cmp);
    return 0;
}

size_t xsm_emit_sample_thread(const xsm_emit *e, int32_t r, int32_t os_tid)
{
    const xsprof_rank_data *d = &e->run->ranks[r].d;
    const xsm_erank *er = &e->ranks[r];
    for (size_t k = 0; k < d->nthreads; k++)
        if (d->threads[k].os_tid == os_tid)
            return xsm_emit_tid_index(er, d->threads[k].tid);
    return er->ntids + xsm_u32_lower(er->xos, er->nxos, (uint32_t)os_tid);
}

/* Everything else of a rank (touches only e->ranks[r]). */
static int xsm_erank_build(const xsm_emit *e, int32_t r, int want_order, uint64_t *nevents)
{
    const xsprof_rank_data *d = &e->run->ranks[r].d;
    xsm_erank *er = &e->ranks[r];

    /* threads: every thread a row names, plus the thread table (few
     * distinct values: a small sorted set, not a sort of all rows) */
    size_t cap = 0, last = 0;
    er->ntids = 0;
    er->tids = NULL;
    for (size_t i = 0; i < d->nthreads; i++)
        if (xsm_tid_add(er, &cap, &last, d->threads[i].tid))
            return -1;

    size_t counts[XSM_EV_N] = {d->nregions, d->nmpi, d->ngpu, d->ninstants, d->ncounters, d->nmem};
    int (*cmps[XSM_EV_N])(const void *, const void *) = {xsm_reg_cmp, xsm_mpi_cmp, xsm_gpu_cmp,
                                                         xsm_inst_cmp, xsm_cnt_cmp, xsm_mem_cmp};
    xsm_sort_d = d;
    for (int k = 0; k < XSM_EV_N; k++) {
        if (counts[k] > UINT32_MAX)
            return -1;
        er->order[k] = xsm_malloc_big(((want_order ? counts[k] : 0) + 1) * sizeof *er->order[k]);
        if (!er->order[k])
            return -1;
        /* One pass per table: the thread set, the row order and whether it
         * needs sorting (one thread recorded in time order does not; the
         * comparator is called only on equal begin times). */
        uint32_t *o = er->order[k];
        size_t n = 0, unsorted = 0, nev = 0;
        int64_t prev = INT64_MIN;
        for (size_t i = 0; i < counts[k]; i++) {
            uint32_t tid = 0;
            int has = 1; /* counters, memory and GPU activity are not on thread tracks */
            if (k == XSM_EV_REGION)
                tid = d->regions[i].thread;
            else if (k == XSM_EV_MPI)
                tid = d->mpi[i].thread;
            else if (k == XSM_EV_INSTANT)
                tid = d->instants[i].thread;
            else if (k == XSM_EV_GPU && d->gpu[i].kind == XSPROF_GPU_API)
                tid = d->gpu[i].thread;
            else
                has = 0;
            if (has && xsm_tid_add(er, &cap, &last, tid))
                return -1;
            /* completion records are points inside their Wait/Test call */
            if (k == XSM_EV_MPI && d->mpi[i].kind == XSPROF_MPI_COMPLETION)
                continue;
            nev++;
            if (!want_order)
                continue;
            int64_t t = xsm_row_time(d, k, i);
            if (n && !unsorted && t <= prev)
                unsorted = t < prev || cmps[k](&o[n - 1], &(uint32_t){(uint32_t)i}) > 0;
            prev = t;
            o[n++] = (uint32_t)i;
        }
        if (unsorted)
            qsort(o, n, sizeof *o, cmps[k]);
        er->norder[k] = n;
        *nevents += nev; /* events of every rank (progress), sorted or not */
    }

    size_t n = 0;
    if (xsm_tid_names(er, d))
        return -1;

    er->gpu = malloc((d->ngpu + 1) * sizeof *er->gpu);
    if (!er->gpu)
        return -1;
    n = 0;
    for (size_t i = 0; i < d->ngpu; i++)
        if (d->gpu[i].kind != XSPROF_GPU_API)
            er->gpu[n++] = (xsm_gstream){d->gpu[i].device, d->gpu[i].stream};
    er->ngpu = xsm_uniq(er->gpu, n, sizeof *er->gpu, xsm_gs_cmp);

    er->counters = malloc((d->ncounters + 1) * sizeof *er->counters);
    if (!er->counters)
        return -1;
    for (size_t i = 0; i < d->ncounters; i++)
        er->counters[i] = xsm_emit_gid(e, r, d->counters[i].name);
    er->ncounters = xsm_uniq(er->counters, d->ncounters, sizeof *er->counters, xsm_u32_cmp);

    er->memdev = malloc((d->nmem + 1) * sizeof *er->memdev);
    if (!er->memdev)
        return -1;
    for (size_t i = 0; i < d->nmem; i++)
        er->memdev[i] = d->mem[i].device;
    er->nmemdev = xsm_uniq(er->memdev, d->nmem, sizeof *er->memdev, xsm_i16_cmp);

    /* GPU flows: a launching API call and the activity with its correlation id */
    xsm_corr *c = malloc((d->ngpu + 1) * sizeof *c);
    er->gflows = malloc((d->ngpu + 1) * sizeof *er->gflows);
    if (!c || !er->gflows) {
        free(c);
        return -1;
    }
    n = 0;
    for (size_t i = 0; i < d->ngpu; i++)
        if (d->gpu[i].correlation)
            c[n++] = (xsm_corr){d->gpu[i].correlation, (uint32_t)i, d->gpu[i].kind == XSPROF_GPU_API};
    er->ngflows = xsm_emit_gpu_flows(r, c, n, er->gflows);
    free(c);
    return 0;
}

size_t xsm_emit_gpu_flows(int32_t r, xsm_corr *c, size_t n, xsm_flow *out)
{
    size_t nout = 0;
    qsort(c, n, sizeof *c, xsm_corr_cmp);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && c[j].corr == c[i].corr)
            j++;
        if (c[i].api && j - i > 1) {
            uint64_t id = (1ull << 62) | ((uint64_t)(uint32_t)r << 32) | c[i].corr;
            out[nout++] = (xsm_flow){c[i].row, 1, id};
            /* the first activity of the launch ends the flow */
            out[nout++] = (xsm_flow){c[i + 1].row, 0, id};
        }
        i = j;
    }
    qsort(out, nout, sizeof *out, xsm_flow_cmp);
    return nout;
}

int xsm_emit_set_tracks(xsm_emit *e, int32_t r, const uint32_t *tids, size_t ntids, const xsm_gstream *gpu, size_t ngpu,
                        const uint32_t *counter_names, size_t ncounters, const int16_t *memdev, size_t nmemdev,
                        xsm_flow *gflows, size_t ngflows)
{
    const xsprof_rank_data *d = &e->run->ranks[r].d;
    xsm_erank *er = &e->ranks[r];
    size_t cap = er->ntids, last = 0;
    for (size_t i = 0; i < ntids; i++)
        if (xsm_tid_add(er, &cap, &last, tids[i]))
            return -1;
    xsm_gstream *g = malloc((ngpu + 1) * sizeof *g);
    uint32_t *cn = malloc((ncounters + 1) * sizeof *cn);
    int16_t *md = malloc((nmemdev + 1) * sizeof *md);
    if (xsm_tid_names(er, d) || !g || !cn || !md) {
        free(g);
        free(cn);
        free(md);
        return -1;
    }
    if (ngpu) /* NULL sets are empty */
        memcpy(g, gpu, ngpu * sizeof *g);
    for (size_t i = 0; i < ncounters; i++)
        cn[i] = xsm_emit_gid(e, r, counter_names[i]);
    if (nmemdev)
        memcpy(md, memdev, nmemdev * sizeof *md);
    free(er->gpu);
    free(er->counters);
    free(er->memdev);
    free(er->gflows);
    er->gpu = g;
    er->ngpu = xsm_uniq(g, ngpu, sizeof *g, xsm_gs_cmp);
    er->counters = cn;
    er->ncounters = xsm_uniq(cn, ncounters, sizeof *cn, xsm_u32_cmp);
    er->memdev = md;
    er->nmemdev = xsm_uniq(md, nmemdev, sizeof *md, xsm_i16_cmp);
    er->gflows = gflows;
    er->ngflows = ngflows;
    return 0;
}

static int xsm_comm_names(xsm_emit *e)
{
    size_t cap = 0;
    for (size_t r = 0; r < e->run->nranks; r++)
        cap += e->run->ranks[r].d.ncomms;
    e->comm_ids = malloc((cap + 1) * sizeof *e->comm_ids);
    e->comm_name = malloc((cap + 1) * sizeof *e->comm_name);
    if (!e->comm_ids || !e->comm_name)
        return -1;
    for (size_t r = 0; r < e->run->nranks; r++) {
        const xsprof_rank_data *d = &e->run->ranks[r].d;
        for (size_t i = 0; i < d->ncomms; i++) {
            size_t k = 0;
            while (k < e->ncomms && e->comm_ids[k] != d->comms[i].id)
                k++;
            if (k < e->ncomms)
                continue;
            e->comm_ids[e->ncomms] = d->comms[i].id;
            e->comm_name[e->ncomms++] = xsm_emit_gid(e, (int32_t)r, d->comms[i].name);
        }
    }
    return 0;
}

/* Message flows: send row -> the call that shows the receive, per rank in
 * (row, starts first, id) order. The messages of each rank (as source and
 * as destination, in message order) are listed first; then each rank
 * places its flows by a counting sort by row: per row, the starts first,
 * then the ends, each in message order (= id order), which is that order
 * without comparing. Ranks are independent. */
typedef struct xsm_mflow_ctx {
    xsm_emit *e;
    const unsigned char *order; /* only ranks that will be iterated need flows (NULL: all) */
    size_t *first; /* per rank: its entries in list, 2 * nranks + 1 */
    uint32_t *list; /* message indices: sources of rank 0, destinations of rank 0, sources of rank 1 ... */
} xsm_mflow_ctx;

static int xsm_mflows_rank(void *ctx, size_t r)
{
    xsm_mflow_ctx *c = ctx;
    const xsm_run *run = c->e->run;
    xsm_erank *er = &c->e->ranks[r];
    size_t s0 = c->first[2 * r], s1 = c->first[2 * r + 1], d1 = c->first[2 * r + 2];
    er->nmflows = d1 - s0; /* 0 for a rank not iterated here */
    if (!(er->mflows = xsm_malloc_big((er->nmflows + 1) * sizeof *er->mflows)))
        return -1;
    if (!er->nmflows)
        return 0;
    uint32_t *at = xsm_zalloc(run->ranks[r].d.nmpi + 1, sizeof *at); /* next slot of each mpi row */
    if (!at || er->nmflows >= UINT32_MAX) {
        free(at);
        return -1;
    }
    for (size_t k = s0; k < d1; k++) {
        const xsm_message *m = &run->msgs[c->list[k]];
        at[(k < s1 ? m->send_row : m->recv_call_row) + 1]++;
    }
    for (size_t j = 0; j < run->ranks[r].d.nmpi; j++)
        at[j + 1] += at[j];
    for (size_t k = s0; k < s1; k++) {
        const xsm_message *m = &run->msgs[c->list[k]];
        er->mflows[at[m->send_row]++] = (xsm_flow){(uint32_t)m->send_row, 1, (uint64_t)c->list[k] + 1};
    }
    for (size_t k = s1; k < d1; k++) {
        const xsm_message *m = &run->msgs[c->list[k]];
        er->mflows[at[m->recv_call_row]++] = (xsm_flow){(uint32_t)m->recv_call_row, 0, (uint64_t)c->list[k] + 1};
    }
    free(at);
    return 0;
}

static int xsm_emit_mflows(xsm_emit *e, const unsigned char *order)
{
    const xsm_run *run = e->run;
    size_t n = run->nranks;
    xsm_mflow_ctx c = {e, order, calloc(2 * n + 2, sizeof *c.first), xsm_malloc_big((2 * run->nmsgs + 1) * sizeof *c.list)};
    int rc = -1;
    if (c.first && c.list && run->nmsgs < UINT32_MAX) { /* flow ids as rows: 32 bits (rows are too) */
        /* only the ranks iterated here are listed (collective mode: a share) */
        for (size_t i = 0; i < run->nmsgs; i++) {
            size_t s = (size_t)run->msgs[i].src, d = (size_t)run->msgs[i].dst;
            c.first[2 * s + 1] += !order || order[s];
            c.first[2 * d + 2] += !order || order[d];
        }
        for (size_t k = 0; k < 2 * n; k++)
            c.first[k + 1] += c.first[k];
        for (size_t i = 0; i < run->nmsgs; i++) { /* each slot advances to the next one's start */
            size_t s = (size_t)run->msgs[i].src, d = (size_t)run->msgs[i].dst;
            if (!order || order[s])
                c.list[c.first[2 * s]++] = (uint32_t)i;
            if (!order || order[d])
                c.list[c.first[2 * d + 1]++] = (uint32_t)i;
        }
        for (size_t k = 2 * n; k-- > 0;)
            c.first[k + 1] = c.first[k];
        c.first[0] = 0;
        rc = xsm_parallel_for(n, xsm_mflows_rank, &c);
    }
    free(c.first);
    free(c.list);
    return rc;
}

typedef struct xsm_build_ctx {
    xsm_emit *e;
    const unsigned char *order;
    uint64_t *nevents;
    int split; /* collective mode: a rank nobody here iterates is counted by its owner */
} xsm_build_ctx;

static int xsm_erank_build_one(void *ctx, size_t r)
{
    xsm_build_ctx *c = ctx;
    int want_order = !c->order || c->order[r];
    if (!c->e->run->ranks[r].present || (c->split && !want_order && !xsm_run_mine(c->e->run, r)))
        return 0;
    return xsm_erank_build(c->e, (int32_t)r, want_order, &c->nevents[r]);
}

/* Collective mode: the track counts (which number every rank's tracks) and
 * events of the ranks this process did not build, from their owners (every
 * process read every row of every rank for them: 0.16 of np 2's 0.17
 * CPU-s here). Those ranks keep counts without sets: only their owners
 * and trace.json's process, which build them, write their tracks. t: XSM_ETALLY
 * zeroed numbers per rank, summed over the processes here (collective). */
enum { XSM_ETALLY = 5 };
static void xsm_emit_tally(xsm_emit *e, const unsigned char *order, uint64_t *nev, int64_t *t)
{
    const xsm_run *run = e->run;
    for (size_t r = 0; r < run->nranks; r++) {
        const xsm_erank *er = &e->ranks[r];
        if (xsm_run_mine(run, r)) {
            int64_t *v = &t[XSM_ETALLY * r];
            v[0] = (int64_t)er->ntids, v[1] = (int64_t)er->ngpu, v[2] = (int64_t)er->ncounters;
            v[3] = (int64_t)er->nmemdev, v[4] = (int64_t)nev[r];
        }
    }
    run->reduce(run->sync_ctx, t, XSM_ETALLY * run->nranks, XSM_REDUCE_SUM);
    for (size_t r = 0; r < run->nranks; r++) {
        xsm_erank *er = &e->ranks[r];
        const int64_t *v = &t[XSM_ETALLY * r];
        if (!run->ranks[r].present || (order && !order[r] && !xsm_run_mine(run, r))) {
            er->ntids = (size_t)v[0], er->ngpu = (size_t)v[1], er->ncounters = (size_t)v[2];
            er->nmemdev = (size_t)v[3], nev[r] = (uint64_t)v[4];
        }
    }
}

static int xsm_emit_init_split(xsm_emit *e, const xsm_run *run, const unsigned char *order, int split, char *err,
                               size_t errlen)
{
    memset(e, 0, sizeof *e);
    e->run = run;
    xsm_strtab_init(&e->names);
    e->ranks = calloc(run->nranks ? run->nranks : 1, sizeof *e->ranks);
    if (!e->ranks)
        goto oom;
    for (size_t r = 0; r < run->nranks; r++)
        e->ranks[r].mpi_thread = UINT32_MAX;
    int bad = 0; /* divided, every process reaches the tally, whatever failed */
    for (size_t r = 0; !bad && r < run->nranks; r++)
        bad = run->ranks[r].present && (xsm_erank_names(e, (int32_t)r) || xsm_erank_sampled(e, (int32_t)r));
    uint64_t *nev = calloc(run->nranks + 1, sizeof *nev);
    xsm_build_ctx bc = {e, order, nev, split};
    bad = bad || !nev || xsm_parallel_for(run->nranks, xsm_erank_build_one, &bc) != 0;
    if (split) {
        int64_t *t = calloc(XSM_ETALLY * run->nranks + 1, sizeof *t);
        int64_t b = bad || !t;
        run->reduce(run->sync_ctx, &b, 1, XSM_REDUCE_MAX);
        bad = b != 0;
        if (!bad)
            xsm_emit_tally(e, order, nev, t);
        free(t);
    }
    for (size_t r = 0; !bad && r < run->nranks; r++)
        e->nevents += nev[r];
    free(nev);
    if (bad)
        goto oom;
    if (xsm_emit_mflows(e, order))
        goto oom;
    if (xsm_comm_names(e))
        goto oom;
    xsm_emit_number_tracks(e);
    static const char *const keys[XSM_KEY_N] = {"peer", "tag", "root", "bytes_sent", "bytes_recv", "comm", "count",
                                                "coll_seq", "kind", "device", "stream", "correlation", "bytes",
                                                "grid", "block", "recv"};
    for (int k = 0; k < XSM_KEY_N; k++)
        if ((e->key[k] = xsm_strtab_intern(&e->names, keys[k])) == UINT32_MAX)
            goto oom;
    return 0;
oom:
    xsm_emit_free(e);
    return xsm_err_set(err, errlen, "xsmerge: out of memory preparing the trace");
}

int xsm_emit_init(xsm_emit *e, const xsm_run *run, const unsigned char *order, char *err, size_t errlen)
{
    return xsm_emit_init_split(e, run, order, run->reduce && run->parts > 1, err, errlen);
}

int xsm_emit_init_local(xsm_emit *e, const xsm_run *run, char *err, size_t errlen)
{
    return xsm_emit_init_split(e, run, NULL, 0, err, errlen);
}

int xsm_mark_set(uint64_t **set, uint64_t rows, uint64_t row)
{
    if (!*set && !(*set = calloc(rows / 64 + 1, sizeof **set)))
        return -1;
    (*set)[row >> 6] |= 1ull << (row & 63);
    return 0;
}

typedef struct xsm_csize {
    uint32_t id, size;
} xsm_csize;

static int xsm_csize_cmp(const void *a, const void *b)
{
    const xsm_csize *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

int xsm_emit_marks(xsm_emit *e)
{
    const xsm_run *run = e->run;
    size_t nc = 0;
    for (size_t r = 0; r < run->nranks; r++) {
        xsm_erank *er = &e->ranks[r];
        if (run->ranks[r].present && er->norder[XSM_EV_MPI])
            er->mpi_thread = run->ranks[r].d.mpi[er->order[XSM_EV_MPI][0]].thread;
        nc += run->ranks[r].present ? run->ranks[r].d.ncomms : 0;
    }
    for (size_t i = 0; i < run->nmsgs; i++) {
        const xsm_message *m = &run->msgs[i];
        const xsprof_rank_data *sd = &run->ranks[m->src].d, *rd = &run->ranks[m->dst].d;
        if (!run->ranks[m->src].present || !run->ranks[m->dst].present)
            continue;
        if (rd->mpi[m->recv_call_row].kind == XSPROF_MPI_COMPLETION) {
            if (xsm_mark_set(&e->ranks[m->src].mark[XSM_MARK_SEND_HIDDEN], sd->nmpi, m->send_row))
                return -1;
        } else if (m->recv_post_row >= 0 &&
                   xsm_mark_set(&e->ranks[m->dst].mark[XSM_MARK_RECV_POST], rd->nmpi, (uint64_t)m->recv_post_row)) {
            return -1;
        }
    }
    /* the size of each communicator, as the first rank defining it says */
    xsm_csize *cs = malloc((nc + 1) * sizeof *cs);
    if (!cs)
        return -1;
    nc = 0;
    for (size_t r = 0; r < run->nranks; r++)
        for (size_t i = 0; run->ranks[r].present && i < run->ranks[r].d.ncomms; i++)
            cs[nc++] = (xsm_csize){run->ranks[r].d.comms[i].id, run->ranks[r].d.comms[i].size};
    if (nc) /* the ranks defining one agree on its size */
        qsort(cs, nc, sizeof *cs, xsm_csize_cmp);
    int rc = 0;
    for (size_t i = 0; i < run->ncolls && !rc; i++) {
        const xsm_collective *c = &run->colls[i];
        xsm_csize key = {c->comm, 0};
        const xsm_csize *k = nc ? bsearch(&key, cs, nc, sizeof *cs, xsm_csize_cmp) : NULL;
        if (!k || c->n != k->size)
            continue;
        for (size_t j = 0; j < c->n && !rc; j++)
            if (c->ranks[j] >= 0 && (size_t)c->ranks[j] < run->nranks && run->ranks[c->ranks[j]].present)
                rc = xsm_mark_set(&e->ranks[c->ranks[j]].mark[XSM_MARK_COLL_WHOLE], run->ranks[c->ranks[j]].d.nmpi,
                                  c->rows[j]);
    }
    free(cs);
    return rc;
}

void xsm_emit_number_tracks(xsm_emit *e)
{
    uint64_t base = 1;
    for (size_t r = 0; r < e->run->nranks; r++) {
        xsm_erank *er = &e->ranks[r];
        er->track_base = base;
        if (e->run->ranks[r].present)
            base += 1 + er->ntids + er->ngpu + er->ncounters + er->nmemdev + er->nxos;
    }
}

void xsm_emit_free(xsm_emit *e)
{
    for (size_t r = 0; e->ranks && r < e->run->nranks; r++) {
        xsm_erank *er = &e->ranks[r];
        free(er->gname);
        for (int k = 0; k < XSM_EV_N; k++)
            free(er->order[k]);
        free(er->tids);
        free(er->tid_names);
        free(er->gpu);
        free(er->counters);
        free(er->memdev);
        free(er->mflows);
        free(er->gflows);
        for (int k = 0; k < XSM_MARK_N; k++)
            free(er->mark[k]);
        free(er->xos);
    }
    free(e->ranks);
    free(e->comm_ids);
    free(e->comm_name);
    xsm_strtab_free(&e->names);
    memset(e, 0, sizeof *e);
}

size_t xsm_emit_tid_index(const xsm_erank *er, uint32_t tid) { return xsm_u32_lower(er->tids, er->ntids, tid); }

size_t xsm_emit_gpu_index(const xsm_erank *er, uint32_t device, uint32_t stream)
{
    xsm_gstream key = {device, stream};
    size_t lo = 0, hi = er->ngpu;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (xsm_gs_cmp(&er->gpu[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t xsm_emit_counter_index(const xsm_erank *er, uint32_t gname)
{
    size_t lo = 0, hi = er->ncounters;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (er->counters[mid] < gname)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t xsm_emit_memdev_index(const xsm_erank *er, int16_t device)
{
    size_t i = 0;
    while (i < er->nmemdev && er->memdev[i] < device)
        i++;
    return i;
}

int64_t xsm_emit_flow_time(const xsm_emit *e, int32_t rank, int gpu, const xsm_flow *f)
{
    const xsprof_rank_data *d = &e->run->ranks[rank].d;
    if (gpu)
        return d->gpu[f->row].t_begin;
    return f->out ? d->mpi[f->row].t_begin : d->mpi[e->run->msgs[f->id - 1].recv_row].t_end;
}

const xsm_flow *xsm_emit_flows(const xsm_flow *f, size_t nf, size_t row, size_t *n)
{
    size_t lo = 0, hi = nf;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (f[mid].row < row)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t k = lo;
    while (k < nf && f[k].row == row)
        k++;
    *n = k - lo;
    return f + lo;
}

const xsm_flow *xsm_emit_flows_at(const xsm_flow *f, size_t nf, size_t row, size_t *cur, size_t *n)
{
    size_t c = *cur;
    if (!(c <= nf && (c == nf || f[c].row >= row) && (c == 0 || f[c - 1].row < row)))
        c = (size_t)(xsm_emit_flows(f, nf, row, n) - f);
    size_t k = c;
    while (k < nf && f[k].row == row)
        k++;
    *n = k - c;
    *cur = k;
    return f + c;
}

const char *xsm_emit_gpu_kind_name(uint32_t k)
{
    static const char *const n[] = {"?", "kernel", "memcpy HtoD", "memcpy DtoH", "memcpy DtoD", "memcpy", "memset", "sync", "api"};
    return k < sizeof n / sizeof n[0] ? n[k] : "?";
}

const char *xsm_emit_comm_name(const xsm_emit *e, uint32_t comm)
{
    for (size_t k = 0; k < e->ncomms; k++)
        if (e->comm_ids[k] == comm)
            return e->names.str[e->comm_name[k]];
    return NULL;
}

/* ---- k-way merge ---------------------------------------------------- */

typedef struct xsm_iter_node xsm_node;

static int xsm_node_less(const xsm_node *a, const xsm_node *b)
{
    if (a->t != b->t) return a->t < b->t;
    if (a->rank != b->rank) return a->rank < b->rank;
    return a->kind < b->kind;
}

static const void *xsm_row_addr(const xsprof_rank_data *d, int kind, size_t row)
{
    switch (kind) {
    case XSM_EV_REGION: return &d->regions[row];
    case XSM_EV_MPI: return &d->mpi[row];
    case XSM_EV_GPU: return &d->gpu[row];
    case XSM_EV_INSTANT: return &d->instants[row];
    case XSM_EV_COUNTER: return &d->counters[row];
    default: return &d->mem[row];
    }
}

/* Every event row starts with its (begin) time. */
_Static_assert(offsetof(xsprof_io_region, t_begin) == 0 && offsetof(xsprof_io_mpi, t_begin) == 0 &&
                   offsetof(xsprof_io_gpu, t_begin) == 0 && offsetof(xsprof_io_instant, t) == 0 &&
                   offsetof(xsprof_io_counter, t) == 0 && offsetof(xsprof_io_mem, t) == 0,
               "event rows begin with their time");

static int64_t xsm_row_time(const xsprof_rank_data *d, int kind, size_t row)
{
    return *(const int64_t *)xsm_row_addr(d, kind, row);
}

static void xsm_sift_down(xsm_iter *it, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < it->n && xsm_node_less(&it->heap[l], &it->heap[m])) m = l;
        if (l + 1 < it->n && xsm_node_less(&it->heap[l + 1], &it->heap[m])) m = l + 1;
        if (m == i)
            return;
        xsm_node tmp = it->heap[i];
        it->heap[i] = it->heap[m];
        it->heap[m] = tmp;
        i = m;
    }
}

int xsm_iter_init(xsm_iter *it, const xsm_emit *e, int64_t rank)
{
    static const size_t size[XSM_EV_N] = {sizeof(xsprof_io_region), sizeof(xsprof_io_mpi),     sizeof(xsprof_io_gpu),
                                          sizeof(xsprof_io_instant), sizeof(xsprof_io_counter), sizeof(xsprof_io_mem)};
    it->e = e;
    it->n = 0;
    it->heap = malloc((e->run->nranks * XSM_EV_N + 1) * sizeof *it->heap);
    it->st = malloc((e->run->nranks * XSM_EV_N + 1) * sizeof *it->st);
    if (!it->heap || !it->st) {
        xsm_iter_free(it);
        return -1;
    }
    for (size_t r = 0; r < e->run->nranks; r++) {
        if (!e->run->ranks[r].present || (rank >= 0 && (size_t)rank != r))
            continue;
        const xsprof_rank_data *d = &e->run->ranks[r].d;
        const xsm_erank *er = &e->ranks[r];
        for (int k = 0; k < XSM_EV_N; k++) {
            if (!er->norder[k])
                continue;
            struct xsm_iter_stream *s = &it->st[it->n];
            *s = (struct xsm_iter_stream){er->order[k], er->order[k] + er->norder[k], xsm_row_addr(d, k, 0), size[k]};
            it->heap[it->n++] = (xsm_node){*(const int64_t *)(s->rows + *s->cur * s->size), (int32_t)r, k, s};
        }
    }
    for (size_t i = it->n / 2 + 1; i-- > 0;)
        xsm_sift_down(it, i);
    return 0;
}

int xsm_iter_next(xsm_iter *it, xsm_ev *ev)
{
    if (!it->n)
        return 0;
    xsm_node *top = &it->heap[0];
    struct xsm_iter_stream *s = top->s;
    ev->t = top->t;
    ev->rank = top->rank;
    ev->kind = top->kind;
    ev->row = *s->cur++;
    if (s->cur < s->end) {
        top->t = *(const int64_t *)(s->rows + (size_t)*s->cur * s->size); /* rows begin with their time */
        /* the rows are 40-90 bytes and the streams many: ask for a row
         * a few places ahead so its time is in cache when it is needed */
        if (s->end - s->cur > 4)
            __builtin_prefetch(s->rows + (size_t)s->cur[4] * s->size);
    } else {
        it->heap[0] = it->heap[--it->n];
    }
    xsm_sift_down(it, 0);
    return 1;
}

void xsm_iter_free(xsm_iter *it)
{
    free(it->heap);
    free(it->st);
    it->heap = NULL;
    it->st = NULL;
    it->n = 0;
}

FILE *xsm_emit_create(const char *dir, const char *name, char *err, size_t errlen)
{
    char path[8192];
    xsm_path(path, sizeof path, dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        xsm_err_set(err, errlen, "xsmerge: %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    return f;
}

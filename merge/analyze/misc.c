/* merge/analyze/misc.c — communication matrix, GPU activity (kernel time,
 * idle share, copy volume, kernels overlapping MPI waits) and profiler health. */
#include <stdlib.h>
#include <string.h>
#include "an.h"
#include "core/record.h"

static int cpair_cmp(const void *pa, const void *pb)
{
    const xsm_cpair *a = pa, *b = pb;
    if (a->src != b->src)
        return a->src < b->src ? -1 : 1;
    return a->dst < b->dst ? -1 : a->dst > b->dst;
}

/* Slot of pair (src, dst) in t's open-addressing table: its slot, or the
 * empty one where it belongs. */
static size_t cm_find(const xsm_cpairs *t, int32_t src, int32_t dst)
{
    uint64_t h = ((uint64_t)(uint32_t)src << 32 | (uint32_t)dst) * 0x9e3779b97f4a7c15ull;
    size_t k = (size_t)(h >> 32) & (t->nslot - 1);
    while (t->slot[k] && (t->v[t->slot[k] - 1].src != src || t->v[t->slot[k] - 1].dst != dst))
        k = (k + 1) & (t->nslot - 1);
    return k;
}

int xsm_cpairs_add(xsm_cpairs *t, int32_t src, int32_t dst, uint64_t bytes)
{
    size_t k = t->nslot ? cm_find(t, src, dst) : 0;
    if (!t->nslot || !t->slot[k]) {
        if (2 * (t->n + 1) > t->nslot) { /* at half load: twice the slots */
            size_t ns = t->nslot ? 2 * t->nslot : 64;
            uint32_t *big = calloc(ns, sizeof *big);
            if (!big)
                return -1;
            free(t->slot);
            t->slot = big;
            t->nslot = ns;
            for (size_t j = 0; j < t->n; j++)
                t->slot[cm_find(t, t->v[j].src, t->v[j].dst)] = (uint32_t)(j + 1);
            k = cm_find(t, src, dst);
        }
        if (t->n >= UINT32_MAX - 1 || xsm_reserve((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v))
            return -1;
        t->v[t->n] = (xsm_cpair){src, dst, 0, 0};
        t->slot[k] = (uint32_t)++t->n;
    }
    t->v[t->slot[k] - 1].msgs++;
    t->v[t->slot[k] - 1].bytes += bytes;
    return 0;
}

void xsm_cpairs_take(xsm_cpairs *t, xsm_cpair **v, size_t *n)
{
    if (t->n > 1)
        qsort(t->v, t->n, sizeof *t->v, cpair_cmp);
    *v = t->v;
    *n = t->n;
    t->v = NULL;
    t->n = t->cap = 0;
    xsm_cpairs_free(t);
}

void xsm_cpairs_free(xsm_cpairs *t)
{
    free(t->v);
    free(t->slot);
    memset(t, 0, sizeof *t);
}

static int comm_matrix(xsm_an *a)
{
    size_t R = a->nranks;
    xsm_cpairs t = {0};
    for (size_t i = 0; i < a->run->nmsgs; i++) {
        const xsm_message *m = &a->run->msgs[i];
        if (m->src < 0 || m->dst < 0 || (size_t)m->src >= R || (size_t)m->dst >= R)
            continue;
        if (xsm_cpairs_add(&t, m->src, m->dst, m->bytes)) {
            xsm_cpairs_free(&t);
            return -1;
        }
    }
    xsm_cpairs_take(&t, &a->cm, &a->ncm);
    return 0;
}

typedef struct span {
    int64_t b, e;
} span;

static int span_cmp(const void *pa, const void *pb)
{
    const span *a = pa, *b = pb;
    return a->b < b->b ? -1 : a->b > b->b;
}

static int gpudev_find(xsm_an *a, int32_t rank, uint32_t dev, size_t *cap)
{
    for (size_t i = 0; i < a->ngpu; i++)
        if (a->gpu[i].rank == rank && a->gpu[i].device == dev)
            return (int)i;
    if (a->ngpu == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        xsm_gpudev *v = realloc(a->gpu, nc * sizeof *v);
        if (!v)
            return -1;
        a->gpu = v;
        *cap = nc;
    }
    memset(&a->gpu[a->ngpu], 0, sizeof a->gpu[0]);
    a->gpu[a->ngpu].rank = rank;
    a->gpu[a->ngpu].device = dev;
    return (int)a->ngpu++;
}

static int gpu_rank(xsm_an *a, int32_t r, size_t *cap)
{
    const xsprof_rank_data *d = &a->run->ranks[r].d;
    xsm_rankstat *rs = &a->rs[r];
    size_t wcap = (a->nw > d->ngpu ? a->nw : d->ngpu) + 1; /* ws is reused for kernels below */
    span *k = malloc((d->ngpu + 1) * sizeof *k), *ws = malloc(wcap * sizeof *ws);
    int64_t *wmax = malloc((a->nw + 1) * sizeof *wmax);
    uint32_t *kdev = malloc((d->ngpu + 1) * sizeof *kdev);
    int rc = -1;
    if (!k || !ws || !wmax || !kdev)
        goto out;
    size_t nk = 0, nws = 0;
    for (size_t i = 0; i < a->nw; i++)
        if (a->w[i].waiter == r)
            ws[nws++] = (span){a->w[i].t_begin, a->w[i].t_end};
    qsort(ws, nws, sizeof *ws, span_cmp);
    for (size_t i = 0; i < nws; i++) /* running max of ends: binary-searchable overlap */
        wmax[i] = i && wmax[i - 1] > ws[i].e ? wmax[i - 1] : ws[i].e;
    for (size_t i = 0; i < d->ngpu; i++) {
        const xsprof_io_gpu *g = &d->gpu[i];
        if (g->kind == XSPROF_GPU_API)
            continue;
        a->gpu_rows++;
        int di = gpudev_find(a, r, g->device, cap);
        if (di < 0)
            goto out;
        xsm_gpudev *gd = &a->gpu[di];
        switch (g->kind) {
        case XSPROF_GPU_KERNEL: {
            int64_t gb = g->t_begin, ge = g->t_end; /* inside --from/--to */
            xsm_run_clip(a->run, &gb, &ge);
            double s = (double)(ge - gb) * 1e-9;
            gd->kernels++;
            gd->kernel_s += s;
            rs->gpu_ns += ge - gb;
            kdev[nk] = g->device;
            k[nk++] = (span){gb, ge};
            /* overlap with this rank's waits: the GPU kept working while the CPU waited */
            size_t lo = 0, hi = nws;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (ws[mid].b < ge)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            int64_t ov = 0;
            for (size_t j = lo; j-- > 0 && wmax[j] > gb;) {
                int64_t b = ws[j].b > gb ? ws[j].b : gb, e = ws[j].e < ge ? ws[j].e : ge;
                if (e > b)
                    ov += e - b;
            }
            if (ov > 0) {
                gd->overlap_kernels++;
                gd->overlap_s += (double)ov * 1e-9;
            }
            break;
        }
        case XSPROF_GPU_MEMCPY_HTOD: gd->htod += g->bytes; break;
        case XSPROF_GPU_MEMCPY_DTOH: gd->dtoh += g->bytes; break;
        case XSPROF_GPU_MEMCPY_DTOD: gd->dtod += g->bytes; break;
        default: gd->other_bytes += g->bytes; break;
        }
    }
    /* busy time per device: union of kernel spans */
    for (size_t i = 0; i < a->ngpu; i++) {
        xsm_gpudev *gd = &a->gpu[i];
        if (gd->rank != r)
            continue;
        size_t n = 0;
        for (size_t j = 0; j < nk; j++)
            if (kdev[j] == gd->device)
                ws[n++] = k[j]; /* reuse ws: waits are done */
        qsort(ws, n, sizeof *ws, span_cmp);
        int64_t busy = 0, cb = 0, ce = INT64_MIN;
        for (size_t j = 0; j < n; j++) {
            if (ws[j].b > ce) {
                if (ce > cb)
                    busy += ce - cb;
                cb = ws[j].b;
                ce = ws[j].e;
            } else if (ws[j].e > ce) {
                ce = ws[j].e;
            }
        }
        if (n && ce > cb)
            busy += ce - cb;
        gd->busy_s = (double)busy * 1e-9;
        double wall = (double)(rs->t_last - rs->t_first) * 1e-9;
        gd->idle_share = wall > 0 ? 1.0 - gd->busy_s / wall : 0;
        if (gd->idle_share < 0)
            gd->idle_share = 0;
    }
    rc = 0;
out:
    free(k);
    free(ws);
    free(wmax);
    free(kdev);
    return rc;
}

/* The GPU section of a streamed analysis: its accumulators' devices. */
int xsm_an_gpu_streamed(xsm_an *a, const xsm_sanalysis *sa)
{
    size_t cap = 0;
    for (size_t r = 0; r < a->nranks; r++) {
        if (!a->rs[r].present)
            continue;
        xsm_anrank_out v;
        xsm_sanalysis_view(sa, (int32_t)r, &v);
        a->gpu_rows += v.gpu_rows;
        a->rs[r].gpu_ns = v.gpu_ns;
        double wall = (double)(a->rs[r].t_last - a->rs[r].t_first) * 1e-9;
        for (size_t i = 0; i < v.ngpu; i++) {
            const xsm_sgpu *g = &v.gpu[i];
            int di = gpudev_find(a, (int32_t)r, g->device, &cap);
            if (di < 0)
                return -1;
            xsm_gpudev *gd = &a->gpu[di];
            gd->kernels = g->kernels;
            gd->kernel_s = (double)g->kernel_ns * 1e-9;
            gd->busy_s = (double)g->busy_ns * 1e-9;
            gd->idle_share = wall > 0 ? 1.0 - gd->busy_s / wall : 0;
            if (gd->idle_share < 0)
                gd->idle_share = 0;
            gd->htod = g->htod;
            gd->dtoh = g->dtoh;
            gd->dtod = g->dtod;
            gd->other_bytes = g->other_bytes;
            gd->overlap_kernels = g->overlap_kernels;
            gd->overlap_s = (double)g->overlap_ns * 1e-9;
        }
    }
    return 0;
}

int xsm_an_health(xsm_an *a, int gpu)
{
    size_t cap = 0;
    for (size_t r = 0; r < a->nranks; r++) {
        const xsm_rank *k = &a->run->ranks[r];
        if (!k->present) {
            a->missing += !k->left_out; /* a rank --ranks left out is not missing */
            continue;
        }
        a->dropped_total += k->d.dropped;
        a->truncated += k->d.truncated != 0;
        a->recovered += k->d.recovered != 0;
        a->total_rank_s += (double)(a->rs[r].t_last - a->rs[r].t_first) * 1e-9;
        if (gpu && k->d.ngpu && gpu_rank(a, (int32_t)r, &cap) != 0)
            return -1;
    }
    return 0;
}

int xsm_an_misc(xsm_an *a)
{
    return comm_matrix(a) != 0 ? -1 : xsm_an_health(a, 1);
}

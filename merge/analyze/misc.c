/* merge/analyze/misc.c — the communication pairs (counted as messages
 * match), GPU activity (kernel time, idle share, copy volume, kernels
 * overlapping MPI waits: the engine's per device) and profiler health. */
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

/* The GPU section: the engine's devices per rank. */
int xsm_an_gpu(xsm_an *a, const xsm_sanalysis *sa)
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

int xsm_an_health(xsm_an *a)
{
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
    }
    return 0;
}

/* merge/analyze/memory.c — memory events per rank: allocation counts, the
 * high-water mark of live bytes (and when it happened), and the
 * allocations never freed by the end of the run (leak candidates), the
 * largest first with the region that allocated them. */
#include <stdlib.h>
#include <string.h>
#include "an.h"
#include "core/record.h"

typedef struct live {
    uint64_t ptr;  /* 0 = empty slot */
    uint64_t bytes;
    int64_t t;
    int16_t device;
    uint8_t used;
    uint8_t deleted;
    uint32_t thread;
} live;

static const xsprof_rank_data *g_sort_d; /* qsort has no context argument */

static int by_time(const void *x, const void *y)
{
    const xsprof_io_mem *a = &g_sort_d->mem[*(const size_t *)x], *b = &g_sort_d->mem[*(const size_t *)y];
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return *(const size_t *)x < *(const size_t *)y ? -1 : 1;
}

/* The largest first; equal sizes by time, then address (the same order
 * however the live table was laid out: streamed or not). */
static int by_bytes_desc(const void *x, const void *y)
{
    const xsm_leak *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return (a->ptr > b->ptr) - (a->ptr < b->ptr);
}

static inline size_t slot_of(uint64_t ptr, int16_t dev, size_t mask)
{
    uint64_t h = (ptr ^ ((uint64_t)(uint16_t)dev << 48)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 17) & mask;
}

/* Innermost region of the rank's main thread at time t (-1 outside all);
 * *in_mpi tells whether t falls inside an MPI call. */
static int32_t region_at(const xsm_an *a, size_t r, int64_t t, int *in_mpi)
{
    *in_mpi = 0;
    const xsm_rankstat *rs = &a->rs[r];
    size_t lo = 0, hi = rs->nseg;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (rs->seg[mid].t0 <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo || rs->seg[lo - 1].t1 < t)
        return -1;
    int32_t c = rs->seg[lo - 1].cnode;
    *in_mpi = c >= 0 && a->cn[c].is_mpi;
    while (c >= 0 && a->cn[c].is_mpi)
        c = a->cn[c].parent;
    return c >= 0 ? a->cn[c].name : -1;
}

static int rank_memory(xsm_an *a, size_t r, xsm_memrank *m)
{
    const xsprof_rank_data *d = &a->run->ranks[r].d;
    size_t n = d->nmem, cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    size_t *order = malloc(n * sizeof *order);
    live *tab = calloc(cap, sizeof *tab);
    if (!order || !tab) {
        free(order);
        free(tab);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    g_sort_d = d;
    qsort(order, n, sizeof *order, by_time);
    uint64_t cur = 0;
    for (size_t k = 0; k < n; k++) {
        const xsprof_io_mem *e = &d->mem[order[k]];
        size_t s = slot_of(e->ptr, e->device, cap - 1);
        if (e->kind == XSPROF_MEM_ALLOC) {
            m->allocs++;
            /* A live entry for the same address means its free was lost: replace. */
            size_t free_slot = SIZE_MAX;
            for (;; s = (s + 1) & (cap - 1)) {
                if (!tab[s].used) {
                    if (free_slot == SIZE_MAX)
                        free_slot = s;
                    break;
                }
                if (tab[s].deleted) {
                    if (free_slot == SIZE_MAX)
                        free_slot = s;
                    continue;
                }
                if (tab[s].ptr == e->ptr && tab[s].device == e->device) {
                    cur -= tab[s].bytes;
                    free_slot = s;
                    break;
                }
            }
            tab[free_slot] = (live){e->ptr, e->size, e->t, e->device, 1, 0, e->thread};
            cur += e->size;
            if (cur > m->peak_bytes) {
                m->peak_bytes = cur;
                m->peak_t = e->t;
            }
        } else if (e->kind == XSPROF_MEM_FREE) {
            m->frees++;
            for (;; s = (s + 1) & (cap - 1)) {
                if (!tab[s].used) {
                    m->unknown_frees++;
                    break;
                }
                if (!tab[s].deleted && tab[s].ptr == e->ptr && tab[s].device == e->device) {
                    cur -= tab[s].bytes;
                    tab[s].deleted = 1;
                    break;
                }
            }
        }
    }
    size_t keep = 0;
    xsm_leak top[11];
    for (size_t s = 0; s < cap; s++) {
        if (!tab[s].used || tab[s].deleted)
            continue;
        int in_mpi = 0;
        int32_t region = tab[s].thread == a->rs[r].main_thread ? region_at(a, r, tab[s].t, &in_mpi) : -1;
        if (in_mpi) {
            /* Memory MPI keeps for itself (MPI_Init's pools...) is not the program's leak. */
            m->mpi_held_allocs++;
            m->mpi_held_bytes += tab[s].bytes;
            continue;
        }
        m->leaked_allocs++;
        m->leaked_bytes += tab[s].bytes;
        xsm_leak l = {tab[s].ptr, tab[s].bytes, tab[s].t, region, tab[s].device};
        top[keep++] = l;
        qsort(top, keep, sizeof *top, by_bytes_desc);
        if (keep > 10)
            keep = 10;
    }
    free(order);
    free(tab);
    if (keep) {
        m->leaks = malloc(keep * sizeof *m->leaks);
        if (!m->leaks)
            return -1;
        memcpy(m->leaks, top, keep * sizeof *top);
        m->nleaks = keep;
    }
    return 0;
}

int xsm_an_memory(xsm_an *a)
{
    size_t with = 0;
    for (size_t r = 0; r < a->nranks; r++)
        with += a->run->ranks[r].present && a->run->ranks[r].d.nmem;
    if (!with)
        return 0;
    a->mem = calloc(with, sizeof *a->mem);
    if (!a->mem)
        return -1;
    for (size_t r = 0; r < a->nranks; r++) {
        if (!a->run->ranks[r].present || !a->run->ranks[r].d.nmem)
            continue;
        xsm_memrank *m = &a->mem[a->nmem++];
        m->rank = (int32_t)r;
        if (rank_memory(a, r, m) != 0)
            return -1;
    }
    return 0;
}

/* The memory section of a streamed analysis: its accumulators' counts. */
int xsm_an_memory_streamed(xsm_an *a, const xsm_sanalysis *sa)
{
    size_t with = 0;
    for (size_t r = 0; r < a->nranks; r++) {
        xsm_anrank_out v;
        xsm_sanalysis_view(sa, (int32_t)r, &v);
        with += a->rs[r].present && v.mem && v.mem->present;
    }
    if (!with)
        return 0;
    if (!(a->mem = calloc(with, sizeof *a->mem)))
        return -1;
    for (size_t r = 0; r < a->nranks; r++) {
        xsm_anrank_out v;
        xsm_sanalysis_view(sa, (int32_t)r, &v);
        if (!a->rs[r].present || !v.mem || !v.mem->present)
            continue;
        const xsm_smem *s = v.mem;
        xsm_memrank *m = &a->mem[a->nmem++];
        *m = (xsm_memrank){(int32_t)r, s->allocs, s->frees, s->unknown_frees, s->peak_bytes, s->peak_t, s->leaked_bytes,
                           s->leaked_allocs, s->mpi_held_bytes, s->mpi_held_allocs, NULL, 0};
        if (!s->nleaks)
            continue;
        if (!(m->leaks = malloc(s->nleaks * sizeof *m->leaks)))
            return -1;
        for (size_t i = 0; i < s->nleaks; i++) {
            const xsm_sleak *l = &s->leaks[i];
            int32_t reg = l->region >= 0 ? xsm_an_sname(a, (int32_t)r, (uint32_t)l->region) : -1;
            if (l->region >= 0 && reg < 0)
                return -1;
            m->leaks[i] = (xsm_leak){l->ptr, l->bytes, l->t, reg, l->device};
        }
        m->nleaks = s->nleaks;
    }
    return 0;
}

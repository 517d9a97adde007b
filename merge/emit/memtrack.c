/* merge/emit/memtrack.c — see memtrack.h. Open addressing with linear
 * probing and backward-shift deletion (no tombstones: a long run of
 * allocations and frees keeps probes short). */
#include "merge/emit/memtrack.h"
#include "core/record.h" /* kinds of mem rows */

#include <stdlib.h>

typedef struct xsm_live {
    uint64_t ptr; /* 0: empty */
    uint64_t bytes;
    int32_t rank;
    int16_t device;
} xsm_live;

struct xsm_memtrack {
    xsm_live *slot;
    size_t cap, n; /* cap a power of two, n <= cap / 2 */
};

static size_t xsm_live_home(const xsm_memtrack *t, uint64_t ptr, int32_t rank, int16_t device)
{
    uint64_t h = (ptr ^ ((uint64_t)(uint32_t)rank << 20) ^ ((uint64_t)(uint16_t)device << 48)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 17) & (t->cap - 1);
}

/* The slot holding the key, or the empty slot where it would go. */
static size_t xsm_live_find(const xsm_memtrack *t, uint64_t ptr, int32_t rank, int16_t device)
{
    size_t s = xsm_live_home(t, ptr, rank, device);
    while (t->slot[s].ptr && !(t->slot[s].ptr == ptr && t->slot[s].rank == rank && t->slot[s].device == device))
        s = (s + 1) & (t->cap - 1);
    return s;
}

static int xsm_memtrack_grow(xsm_memtrack *t)
{
    xsm_memtrack g = {calloc(t->cap * 2, sizeof *g.slot), t->cap * 2, t->n};
    if (!g.slot)
        return -1;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slot[i].ptr)
            g.slot[xsm_live_find(&g, t->slot[i].ptr, t->slot[i].rank, t->slot[i].device)] = t->slot[i];
    free(t->slot);
    *t = g;
    return 0;
}

xsm_memtrack *xsm_memtrack_new(void)
{
    xsm_memtrack *t = calloc(1, sizeof *t);
    if (t && !(t->slot = calloc(t->cap = 64, sizeof *t->slot))) {
        free(t);
        t = NULL;
    }
    return t;
}

void xsm_memtrack_free(xsm_memtrack *t)
{
    if (t)
        free(t->slot);
    free(t);
}

/* Empty slot s, moving later entries of its cluster back into the hole
 * where their home allows (so that every lookup still finds them). */
static void xsm_live_remove(xsm_memtrack *t, size_t s)
{
    size_t mask = t->cap - 1, hole = s;
    for (size_t j = (s + 1) & mask; t->slot[j].ptr; j = (j + 1) & mask) {
        size_t home = xsm_live_home(t, t->slot[j].ptr, t->slot[j].rank, t->slot[j].device);
        /* j may move into the hole when its home is not in (hole, j] cyclically */
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            t->slot[hole] = t->slot[j];
            hole = j;
        }
    }
    t->slot[hole].ptr = 0;
    t->n--;
}

int xsm_memtrack_apply(xsm_memtrack *t, int32_t rank, const xsprof_io_mem *m, int64_t *delta)
{
    *delta = 0;
    if (!m->ptr)
        return 0;
    if (XSPROF_MEM_KIND(m->kind) == XSPROF_MEM_ALLOC) {
        if (2 * (t->n + 1) > t->cap && xsm_memtrack_grow(t))
            return -1;
        size_t s = xsm_live_find(t, m->ptr, rank, m->device);
        if (t->slot[s].ptr)
            *delta -= (int64_t)t->slot[s].bytes; /* its free was lost */
        else
            t->n++;
        t->slot[s] = (xsm_live){m->ptr, m->size, rank, m->device};
        *delta += (int64_t)m->size;
    } else if (XSPROF_MEM_KIND(m->kind) == XSPROF_MEM_FREE) {
        size_t s = xsm_live_find(t, m->ptr, rank, m->device);
        if (t->slot[s].ptr) {
            *delta = -(int64_t)t->slot[s].bytes;
            xsm_live_remove(t, s);
        }
    }
    return 0;
}

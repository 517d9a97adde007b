/* merge/analyze/kmap.h — an exact-key hash map, (k1, k2) -> index into a
 * vector the caller owns: the analysis engine's call trees, names, waits
 * and call sites (sprofile.c), the samples' counts (ssamples.c). Open
 * addressing, linear probing, kept at most half full; the lookups are
 * inline (the engine looks up a few per event). Owner: merge analysis. */
#ifndef XSPROF_MERGE_ANALYZE_KMAP_H
#define XSPROF_MERGE_ANALYZE_KMAP_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "merge/analyze/an.h"

typedef struct xsm_kmap {
    uint64_t *k;   /* 2 per slot */
    uint32_t *v;   /* index + 1, 0 empty */
    size_t nslot, n;
} xsm_kmap;

/* Store (k1, k2) -> idx (the key is absent). 0 ok, -1 out of memory. */
int xsm_kmap_put(xsm_kmap *m, uint64_t k1, uint64_t k2, uint32_t idx);
void xsm_kmap_free(xsm_kmap *m);

static inline size_t xsm_kmap_hash(uint64_t k1, uint64_t k2, size_t mask)
{
    uint64_t h = (k1 * 0x9e3779b97f4a7c15ull) ^ (k2 + 0x632be59bd9b4e019ull) * 0xff51afd7ed558ccdull;
    return (size_t)(h ^ h >> 29) & mask;
}

/* Index of (k1, k2), or -1 when absent. */
static inline int64_t xsm_kmap_get(const xsm_kmap *m, uint64_t k1, uint64_t k2)
{
    if (!m->nslot)
        return -1;
    for (size_t i = xsm_kmap_hash(k1, k2, m->nslot - 1);; i = (i + 1) & (m->nslot - 1)) {
        if (!m->v[i])
            return -1;
        if (m->k[2 * i] == k1 && m->k[2 * i + 1] == k2)
            return (int64_t)m->v[i] - 1;
    }
}

/* Index of the element keyed (k1, k2) in the vector *v (n elements of
 * `size`, cap allocated): the one m maps it to, else a zeroed one appended
 * and mapped. -1 when memory ran out. */
static inline int64_t xsm_kvec_index(xsm_kmap *m, void **v, size_t *n, size_t *cap, size_t size, uint64_t k1, uint64_t k2)
{
    int64_t i = xsm_kmap_get(m, k1, k2);
    if (i >= 0)
        return i;
    if (xsm_grow(v, cap, *n, size) || xsm_kmap_put(m, k1, k2, (uint32_t)*n))
        return -1;
    memset((char *)*v + *n * size, 0, size);
    return (int64_t)(*n)++;
}

#endif

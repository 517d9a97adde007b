/* merge/analyze/kmap.c — the exact-key map's growth (kmap.h). Owner:
 * merge analysis. */
#include <stdlib.h>
#include <string.h>
#include "kmap.h"

/* Store (k1, k2) -> idx (the key is absent). 0 ok, -1 out of memory. */
int xsm_kmap_put(xsm_kmap *m, uint64_t k1, uint64_t k2, uint32_t idx)
{
    if (2 * (m->n + 1) > m->nslot) {
        size_t ns = m->nslot ? 2 * m->nslot : 64;
        xsm_kmap b = {calloc(2 * ns, sizeof *b.k), calloc(ns, sizeof *b.v), ns, 0};
        if (!b.k || !b.v) {
            free(b.k);
            free(b.v);
            return -1;
        }
        for (size_t i = 0; i < m->nslot; i++)
            if (m->v[i])
                xsm_kmap_put(&b, m->k[2 * i], m->k[2 * i + 1], m->v[i] - 1);
        free(m->k);
        free(m->v);
        *m = b;
    }
    size_t i = xsm_kmap_hash(k1, k2, m->nslot - 1);
    while (m->v[i])
        i = (i + 1) & (m->nslot - 1);
    m->k[2 * i] = k1;
    m->k[2 * i + 1] = k2;
    m->v[i] = idx + 1;
    m->n++;
    return 0;
}

void xsm_kmap_free(xsm_kmap *m)
{
    free(m->k);
    free(m->v);
    memset(m, 0, sizeof *m);
}


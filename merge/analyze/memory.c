/* merge/analyze/memory.c — memory events per rank: allocation counts, the
 * high-water mark of live bytes (and when it happened), and the
 * allocations never freed by the end of the run (leak candidates), the
 * largest first with the region that allocated them. */
#include <stdlib.h>
#include <string.h>
#include "an.h"
#include "core/record.h"

/* The memory section: the engine's counts per rank (sprofile.c keeps the
 * live allocations and the largest never freed). */
int xsm_an_memory(xsm_an *a, const xsm_sanalysis *sa)
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

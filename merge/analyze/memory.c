/* merge/analyze/memory.c — memory events per rank: allocation counts, the
 * high-water mark of live bytes (and when it happened), and the
 * allocations never freed by the end of the run (leak candidates), the
 * largest first with the region that allocated them and, when the rank
 * recorded it (/events/alloc_stacks), the call stack. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "an.h"
#include "core/record.h"
#include "merge/align/align.h"
#include "merge/read/read.h"
#include "merge/symbols/symbols.h"

/* The call stack rank d recorded for its allocation of ptr at t (merged
 * timeline): of its stacks for that address, the one closest in time
 * (an address is reused after a free); 0 none. */
static uint32_t alloc_stack(const xsm_run *run, size_t r, uint64_t ptr, int64_t t)
{
    const xsprof_rank_data *d = &run->ranks[r].d;
    xsm_clk c;
    xsm_align_rank_clock(run, r, &c);
    uint32_t best = 0;
    int64_t bd = INT64_MAX;
    for (size_t i = 0; i < d->nalloc_stacks; i++) {
        if (d->alloc_stacks[i].ptr != ptr)
            continue;
        int64_t dt = xsm_align_sample_time(run, &c, d->alloc_stacks[i].t) - t;
        dt = dt < 0 ? -dt : dt;
        if (dt < bd) {
            bd = dt;
            best = d->alloc_stacks[i].stack;
        }
    }
    return best;
}

/* Leak l's frames from stack `id` of rank d: each address's inlined
 * functions innermost first, "function (file:line)". 0, -1 out of memory. */
static int leak_frames(xsm_an *a, xsm_symbols **sym, const xsprof_rank_data *d, uint32_t id, xsm_leak *l)
{
    const xsprof_io_callstack *st = id ? xsprof_rank_data_callstack(d, id) : NULL;
    if (!st)
        return 0;
    if (!*sym && !(*sym = xsm_an_symbols(a)))
        return -1;
    for (uint32_t f = 0; f < st->depth && st->frames + f < d->nframes && l->nframes < XSM_LEAK_FRAMES; f++) {
        const xsprof_io_module *m;
        /* every address is a return address: the call is the byte before */
        const xsm_loc *loc = xsm_an_locate(a, *sym, d, d->frames[st->frames + f], 1, &m);
        if (m && !loc)
            return -1;
        for (int k = 0; loc && k < loc->nframes && l->nframes < XSM_LEAK_FRAMES; k++) {
            char s[1024];
            const xsm_frame *fr = &loc->frames[k];
            if (fr->file)
                snprintf(s, sizeof s, "%s (%s:%d)", fr->function, fr->file, fr->line);
            else
                snprintf(s, sizeof s, "%s", fr->function);
            if ((l->frames[l->nframes++] = xsm_names_intern(&a->names, s)) < 0)
                return -1;
        }
    }
    return 0;
}

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
    xsm_symbols *sym = NULL;
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
        const xsprof_rank_data *d = &a->run->ranks[r].d;
        for (size_t i = 0; i < s->nleaks; i++) {
            const xsm_sleak *l = &s->leaks[i];
            int32_t reg = l->region >= 0 ? xsm_an_sname(a, (int32_t)r, (uint32_t)l->region) : -1;
            if (l->region >= 0 && reg < 0)
                return -1;
            m->leaks[i] = (xsm_leak){l->ptr, l->bytes, l->t, reg, l->device, {0}, 0};
            if (d->nalloc_stacks && leak_frames(a, &sym, d, alloc_stack(a->run, r, l->ptr, l->t), &m->leaks[i]))
                return -1;
        }
        m->nleaks = s->nleaks;
    }
    return 0;
}

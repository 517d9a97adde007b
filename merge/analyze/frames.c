/* merge/analyze/frames.c — the addresses the analysis resolved (call
 * sites: the return address into the program; samples: every frame of
 * every sampled stack; leak candidates' stacks), one row per place in a module's code whatever the
 * rank and its ASLR, for merged.h5's /analysis/frames. Owner: merge
 * analysis. */
#include <stdio.h>
#include "an.h"
#include "merge/read/read.h"
#include "merge/symbols/symbols.h"

xsm_symbols *xsm_an_symbols(xsm_an *a)
{
    if (!a->sym)
        a->sym = xsm_symbols_open();
    return a->sym;
}

const xsm_loc *xsm_an_locate(xsm_an *a, xsm_symbols *sym, const xsprof_rank_data *d, uint64_t pc, int ret,
                             const xsprof_io_module **mod)
{
    const xsm_loc *loc = xsm_read_locate(sym, d, pc, ret, mod);
    if (!loc)
        return NULL;
    const char *path = xsprof_rank_data_string(d, (*mod)->path);
    char key[4096];
    snprintf(key, sizeof key, "%s\n%llx\n%d", path, (unsigned long long)loc->addr, ret);
    if (xsm_names_find(&a->frm_keys, key) >= 0)
        return loc;
    const xsm_frame *outer = &loc->frames[loc->nframes - 1], *inner = &loc->frames[0];
    xsm_anframe f = {xsm_names_intern(&a->names, path), xsm_names_intern(&a->names, outer->function),
                     loc->nframes > 1 ? xsm_names_intern(&a->names, inner->function) : -1,
                     inner->file ? xsm_names_intern(&a->names, inner->file) : -1, inner->line, ret, loc->addr};
    if (f.module < 0 || f.function < 0 || (loc->nframes > 1 && f.inlined < 0) || (inner->file && f.file < 0) ||
        xsm_names_intern(&a->frm_keys, key) < 0 || xsm_grow((void **)&a->frm, &a->frmcap, a->nfrm, sizeof *a->frm))
        return NULL;
    a->frm[a->nfrm++] = f;
    return loc;
}

int32_t xsm_an_function_place(xsm_an *a, xsm_symbols *sym, const char *name, int *line)
{
    const xsprof_rank_data *d = NULL;
    for (size_t r = 0; r < a->nranks && !d; r++)
        if (a->rs[r].present && a->run->ranks[r].d.nmodules)
            d = &a->run->ranks[r].d;
    if (!d)
        return -1;
    const xsprof_io_module *m = &d->modules[0]; /* the program: the first object a process lists */
    int h = xsm_symbols_module(sym, xsprof_rank_data_string(d, m->path), xsprof_rank_data_string(d, m->build_id));
    uint64_t at;
    if (h < 0 || xsm_symbols_function(sym, h, name, &at))
        return -1;
    const xsm_loc *loc = xsm_symbols_lookup(sym, h, at, 0);
    const xsm_frame *f = loc ? &loc->frames[loc->nframes - 1] : NULL;
    if (!f || !f->file)
        return -1;
    *line = f->line;
    return xsm_names_intern(&a->names, f->file);
}

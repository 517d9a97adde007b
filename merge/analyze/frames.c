/* merge/analyze/frames.c — the addresses the analysis resolved (call
 * sites: the return address into the program; samples: every frame of
 * every sampled stack; leak candidates' stacks), one row per place in a module's code whatever the
 * rank and its ASLR, for merged.h5's /analysis/frames. Owner: merge
 * analysis. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "an.h"
#include "merge/read/read.h"
#include "merge/symbols/symbols.h"

static void share_path(char *p, size_t n, const char *dir, int part)
{
    snprintf(p, n, "%s/.xsm-symbols-%d", dir, part);
}

xsm_symbols *xsm_an_symbols(xsm_an *a)
{
    if (a->sym)
        return a->sym;
    if (!(a->sym = xsm_symbols_open()))
        return NULL;
    /* what the processes of a collective merge resolved, each for its
     * ranks: a lookup here is then a hash probe (a file that cannot be
     * read only means more lookups here) */
    for (int p = 0; a->run->sym_share_dir && p < a->run->sym_share_parts; p++) {
        char path[4200];
        share_path(path, sizeof path, a->run->sym_share_dir, p);
        FILE *f = fopen(path, "rb");
        if (f) {
            xsm_symbols_load(a->sym, f);
            fclose(f);
        }
    }
    return a->sym;
}

/* How stack `id` of rank d is used: 1 sampled (its first frame is the
 * sampled instruction), 2 a call site's or an allocation's (every frame a
 * return address). */
static void mark_use(unsigned char *use, const xsprof_rank_data *d, uint32_t id, unsigned char how)
{
    const xsprof_io_callstack *st = id ? xsprof_rank_data_callstack(d, id) : NULL;
    if (st)
        use[st - d->callstacks] |= how;
}

/* 1 when address a of rank d (a return address or not) is process
 * part's of parts to resolve: by a hash of its module's path and its ELF
 * address, so the same code met in many ranks is one process's. */
static int mine(const xsprof_rank_data *d, uint64_t a, int ret, int part, int parts)
{
    const xsprof_io_module *m = xsm_read_module_at(d, a);
    if (!m)
        return 0; /* nothing to resolve */
    uint64_t h = 1469598103934665603ull;
    for (const char *c = xsprof_rank_data_string(d, m->path); *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    h = (h ^ (a - m->bias) ^ (uint64_t)ret) * 0x9e3779b97f4a7c15ull;
    return (int)((h >> 33) % (uint64_t)parts) == part;
}

static int resolve(xsm_symbols *sym, const xsprof_rank_data *d, uint64_t pc, int ret, int part, int parts)
{
    const xsprof_io_module *m;
    return mine(d, pc, ret, part, parts) && !xsm_read_locate(sym, d, pc, ret, &m) && m ? -1 : 0;
}

/* Rank d's recorded addresses as the analysis looks them up (callsites.c,
 * samples.c, memory.c), those of process part of parts: every frame of the
 * stacks it uses, the first one of a sampled stack as the instruction
 * itself, every other as a return address. */
static int resolve_rank(xsm_symbols *sym, const xsprof_rank_data *d, int part, int parts)
{
    unsigned char *use = calloc(d->ncallstacks + 1, 1);
    if (!use)
        return -1;
    for (size_t i = 0; i < d->nsamples; i++)
        mark_use(use, d, d->samples[i].stack, 1);
    for (size_t i = 0; i < d->nmpi; i++)
        mark_use(use, d, d->mpi[i].callsite, 2);
    for (size_t i = 0; i < d->nalloc_stacks; i++)
        mark_use(use, d, d->alloc_stacks[i].stack, 2);
    int rc = 0;
    for (size_t k = 0; k < d->ncallstacks && !rc; k++) {
        const xsprof_io_callstack *st = &d->callstacks[k];
        for (uint32_t f = 0; use[k] && f < st->depth && st->frames + f < d->nframes && !rc; f++) {
            uint64_t pc = d->frames[st->frames + f];
            rc = ((f || (use[k] & 2)) && resolve(sym, d, pc, 1, part, parts)) ||
                 (!f && (use[k] & 1) && resolve(sym, d, pc, 0, part, parts));
        }
    }
    free(use);
    return rc;
}

void xsm_an_symbols_unshare(const char *dir, int part)
{
    char path[4200];
    share_path(path, sizeof path, dir, part);
    unlink(path);
}

int xsm_an_symbols_share(const xsm_run *run, int part, int parts, const char *dir, uint64_t *resolved, char *err,
                         size_t errlen)
{
    xsm_symbols *sym = xsm_symbols_open();
    int rc = sym ? 0 : -1;
    for (size_t r = 0; !rc && r < run->nranks; r++)
        if (run->ranks[r].present)
            rc = resolve_rank(sym, &run->ranks[r].d, part, parts);
    char path[4200];
    share_path(path, sizeof path, dir, part);
    FILE *f = rc ? NULL : fopen(path, "wb");
    if (!rc && (!f || xsm_symbols_save(sym, f)))
        rc = xsm_err_set(err, errlen, "xsmerge: %s: cannot write: %s", path, strerror(errno ? errno : EIO)) ? -1 : -1;
    else if (rc)
        xsm_err_set(err, errlen, "xsmerge: out of memory resolving addresses");
    if (f && fclose(f) && !rc)
        rc = xsm_err_set(err, errlen, "xsmerge: %s: cannot write: %s", path, strerror(errno)) ? -1 : -1;
    *resolved = xsm_symbols_resolved(sym);
    xsm_symbols_close(sym);
    return rc;
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

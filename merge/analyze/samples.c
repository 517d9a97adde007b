/* merge/analyze/samples.c — where the CPU time goes (XSPROF_SAMPLE_HZ): each
 * rank's sampled stacks (io/FORMAT.md /events/samples, loaded whole in every
 * merge mode, so one pass here serves in memory and --stream alike) by the
 * sampled instruction's function, file and line (merge/symbols), the same
 * code in every rank one row. Owner: merge analysis. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "an.h"
#include "merge/read/read.h"
#include "merge/symbols/symbols.h"
#include "kmap.h"

/* What one sample of rank d weighs in ns (its meta sample_period_ns), 0
 * when not known (CPU-time timers, or a file that does not say). */
static int64_t sample_period(const xsprof_rank_data *d)
{
    for (size_t i = 0; i < d->nmeta; i++)
        if (!strcmp(xsprof_rank_data_string(d, d->meta[i].key), "sample_period_ns"))
            return strtoll(xsprof_rank_data_string(d, d->meta[i].value), NULL, 10);
    return 0;
}

/* A table of sampled places (the samples' table, the "(no region)" one):
 * its rows and their keys. */
typedef struct smptab {
    xsm_sample **v;
    size_t *n, *cap;
    xsm_names keys;
} smptab;

/* Whether module m is one of xsprof's own libraries (libxsprof*.so). */
static int own_module(const xsprof_rank_data *d, const xsprof_io_module *m)
{
    const char *path = xsprof_rank_data_string(d, m->path), *base = strrchr(path, '/');
    return !strncmp(base ? base + 1 : path, "libxsprof", 9);
}

/* Frames of xsprof's own code are this near the sampled instruction at
 * most (the clock's vDSO, xsprof_clock_read, a PMPI wrapper). */
#define OWN_DEPTH 8

/* The row of table tb of the sampled instruction of stack `id` of rank d
 * (interned by its place in the code), -1 out of memory. With `caller`,
 * a sample in xsprof's own code, or in what it called (the clock), counts
 * where the program called xsprof: in "(no region)" that is a PMPI
 * wrapper's work around the call's interval, the program's MPI call as
 * its author sees it, not a function of the program's or xsprof's. */
static int32_t sample_site(xsm_an *a, xsm_symbols *sym, smptab *tb, const xsprof_rank_data *d, uint32_t id, int caller)
{
    const xsprof_io_callstack *st = id ? xsprof_rank_data_callstack(d, id) : NULL;
    const char *function = "(unknown)", *inlined = NULL, *file = NULL, *module = NULL;
    int line = 0;
    if (st && st->depth && st->frames < d->nframes) {
        uint32_t depth = st->frames + st->depth <= d->nframes ? st->depth : (uint32_t)(d->nframes - st->frames);
        const xsprof_io_module *m;
        /* the interrupted instruction itself; frames after it are return addresses */
        const xsm_loc *loc = xsm_an_locate(a, sym, d, d->frames[st->frames], 0, &m);
        /* with caller: the frame past the first run of xsprof's frames
         * near the leaf, when the stack goes on past them */
        int in_own = 0;
        for (uint32_t k = 0; caller && k < depth && (in_own || k < OWN_DEPTH); k++) {
            const xsprof_io_module *mk = m;
            const xsm_loc *lk = k ? xsm_an_locate(a, sym, d, d->frames[st->frames + k], 1, &mk) : loc;
            if (mk && !lk)
                return -1;
            if (mk && own_module(d, mk)) {
                in_own = 1;
            } else if (in_own) {
                if (mk)
                    loc = lk, m = mk;
                break;
            }
        }
        if (m) {
            if (!loc)
                return -1;
            module = xsprof_rank_data_string(d, m->path);
            /* the function the code was compiled into (as perf report
             * shows it), at the sampled line, which may be in a function
             * inlined into it (inlined: that one) */
            function = loc->frames[loc->nframes - 1].function;
            inlined = loc->nframes > 1 ? loc->frames[0].function : NULL;
            file = loc->frames[0].file;
            line = loc->frames[0].line;
        }
    }
    char key[4096];
    if (file)
        snprintf(key, sizeof key, "%s\n%s\n%s\n%d", function, inlined ? inlined : "", file, line);
    else
        snprintf(key, sizeof key, "%s\n%s", function, module ? module : "");
    int32_t k = xsm_names_find(&tb->keys, key);
    if (k >= 0)
        return k;
    if ((k = xsm_names_intern(&tb->keys, key)) < 0 || xsm_grow((void **)tb->v, tb->cap, *tb->n, sizeof **tb->v))
        return -1;
    xsm_sample *s = &(*tb->v)[(*tb->n)++];
    memset(s, 0, sizeof *s);
    s->function = xsm_names_intern(&a->names, function);
    s->inlined = inlined ? xsm_names_intern(&a->names, inlined) : -1;
    s->file = file ? xsm_names_intern(&a->names, file) : -1;
    s->module = module ? xsm_names_intern(&a->names, module) : -1;
    s->line = line;
    s->last_rank = -1;
    if (s->function < 0 || (inlined && s->inlined < 0) || (file && s->file < 0) || (module && s->module < 0))
        return -1;
    return k;
}

/* The slot of stack `id` of rank d: its callstack row + 1, 0 none. */
static size_t stack_slot(const xsprof_rank_data *d, uint32_t id)
{
    const xsprof_io_callstack *st = id ? xsprof_rank_data_callstack(d, id) : NULL;
    return st ? (size_t)(st - d->callstacks) + 1 : 0;
}

/* One name of a folded line, clear of ';', ' ' and newlines. */
static void fold_name(xsm_buf *line, const char *name)
{
    xsm_buf_puts(line, ";");
    for (const char *c = name; *c; c++)
        xsm_buf_put(line, *c == ';' || *c == ' ' || *c == '\n' ? "_" : c, 1);
}

/* One frame's names for a folded stack, outermost first (its inlined
 * chain). */
static void fold_frame(xsm_buf *line, const xsm_loc *loc)
{
    for (int i = loc->nframes - 1; i >= 0; i--)
        fold_name(line, loc->frames[i].function);
}

/* n samples more at a place of the call graph (callee -1: the sampled
 * line itself); 0, or -1. */
static int cg_add(xsm_an *a, int32_t fn, int32_t file, int line, int32_t callee, int32_t cfile, uint64_t n)
{
    char key[96];
    snprintf(key, sizeof key, "%d %d %d %d %d", fn, file, line, callee, cfile);
    int32_t k = xsm_names_find(&a->cga_keys, key);
    if (k < 0) {
        if ((k = xsm_names_intern(&a->cga_keys, key)) < 0 || xsm_grow((void **)&a->cga, &a->cgacap, a->ncga, sizeof *a->cga))
            return -1;
        a->cga[a->ncga++] = (xsm_cgarc){fn, file, line, callee, cfile, 0};
    }
    a->cga[k].n += n;
    return 0;
}

/* A sampled stack (locs, the innermost first) taken n times in the call
 * graph: each function of each inlined chain, outermost first, calls the
 * next at its line; the last one is at the sampled line. */
static int cg_stack(xsm_an *a, const xsm_loc *const *locs, uint32_t nlocs, uint64_t n)
{
    int32_t pfn = -1, pfile = -1;
    int pline = 0;
    for (uint32_t i = nlocs; i-- > 0;) {
        for (int j = locs[i]->nframes - 1; j >= 0; j--) {
            const xsm_frame *f = &locs[i]->frames[j];
            int32_t fn = xsm_names_intern(&a->names, f->function);
            int32_t file = xsm_names_intern(&a->names, f->file ? f->file : locs[i]->module);
            if (fn < 0 || file < 0 || (pfn >= 0 && cg_add(a, pfn, pfile, pline, fn, file, n)))
                return -1;
            pfn = fn, pfile = file, pline = f->line;
        }
    }
    return pfn >= 0 ? cg_add(a, pfn, pfile, pline, -1, -1, n) : 0;
}

static int str_cmp(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

/* The locations of stack row k of rank d (program frames first: the
 * leaf), *n of them; -1 out of memory. */
static int stack_locs(xsm_an *a, xsm_symbols *sym, const xsprof_rank_data *d, size_t k, const xsm_loc **locs,
                      uint32_t *n)
{
    const xsprof_io_callstack *st = &d->callstacks[k];
    *n = 0;
    for (uint32_t f = 0; f < st->depth && st->frames + f < d->nframes; f++) {
        const xsprof_io_module *m;
        const xsm_loc *loc = xsm_an_locate(a, sym, d, d->frames[st->frames + f], f > 0, &m);
        if (!m)
            continue;
        if (!loc)
            return -1;
        locs[(*n)++] = loc;
    }
    return 0;
}

/* Rank r's sampled stacks, for callgrind.out (cnt[k + 1] samples of its
 * k-th callstack row), and folded into a->smp_folded with the regions the
 * engine placed them in as their outer frames ("rank N;region;sub-region;
 * MPI_Op;outermost function;...;leaf samples", sorted; ctx: the engine's
 * counts by (call-tree node + 1, stack), cn its call tree). */
static int rank_folded(xsm_an *a, xsm_symbols *sym, const xsprof_rank_data *d, int32_t r, const uint64_t *cnt,
                       const xsm_ssmpn *ctx, size_t nctx, const xsm_scnode *cn)
{
    const xsm_loc *locs[XSPROF_IO_STACK_MAX];
    uint32_t nlocs;
    for (size_t k = 0; k < d->ncallstacks; k++)
        if (cnt[k + 1] && (stack_locs(a, sym, d, k, locs, &nlocs) || cg_stack(a, locs, nlocs, cnt[k + 1])))
            return -1;
    size_t nlines = 0;
    char **lines = malloc((nctx + 1) * sizeof *lines);
    if (!lines)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < nctx && !rc; i++) {
        size_t slot = stack_slot(d, ctx[i].stack);
        if (!slot)
            continue; /* no stack: nothing to draw */
        if (stack_locs(a, sym, d, slot - 1, locs, &nlocs)) {
            rc = -1;
            break;
        }
        xsm_buf line = {0};
        xsm_buf_printf(&line, "rank %d", (int)r);
        int32_t path[64];
        int np = 0;
        for (int64_t c = (int64_t)ctx[i].key - 1; c >= 0 && np < 64; c = cn[c].parent)
            path[np++] = (int32_t)c;
        while (np-- > 0)
            fold_name(&line, xsprof_rank_data_string(d, cn[path[np]].sid));
        for (uint32_t f = nlocs; f-- > 0;)
            fold_frame(&line, locs[f]);
        xsm_buf_printf(&line, " %llu\n", (unsigned long long)ctx[i].n);
        if (line.failed || !line.p) {
            xsm_buf_free(&line);
            rc = -1;
            break;
        }
        lines[nlines++] = line.p; /* taken over */
    }
    if (!rc) {
        qsort(lines, nlines, sizeof *lines, str_cmp);
        for (size_t i = 0; i < nlines; i++)
            xsm_buf_puts(&a->smp_folded, lines[i]);
    }
    for (size_t i = 0; i < nlines; i++)
        free(lines[i]);
    free(lines);
    return rc;
}

/* The program's functions on stack `id` of rank d, innermost first, each
 * once, with the line it was at: the frames with a source line (a
 * library's function without lines is not where the user can act: its
 * caller in the program is); none: the sampled function itself, file -1.
 * Returns how many, -1 out of memory. */
typedef struct pframe { int32_t fn, file; int line; } pframe;
static int program_frames(xsm_an *a, xsm_symbols *sym, const xsprof_rank_data *d, uint32_t id,
                          pframe out[XSPROF_IO_STACK_MAX])
{
    const xsprof_io_callstack *st = id ? xsprof_rank_data_callstack(d, id) : NULL;
    const char *leaf = "(unknown)";
    int n = 0;
    for (uint32_t f = 0; st && f < st->depth && st->frames + f < d->nframes; f++) {
        const xsprof_io_module *m;
        const xsm_loc *loc = xsm_an_locate(a, sym, d, d->frames[st->frames + f], f > 0, &m);
        if (!m)
            continue;
        if (!loc)
            return -1;
        const char *name = loc->frames[loc->nframes - 1].function; /* compiled into */
        if (!f)
            leaf = name;
        if (!loc->frames[0].file)
            continue;
        pframe p = {xsm_names_intern(&a->names, name), xsm_names_intern(&a->names, loc->frames[0].file),
                    loc->frames[0].line};
        if (p.fn < 0 || p.file < 0)
            return -1;
        int seen = 0;
        for (int k = 0; k < n && !seen; k++)
            seen = out[k].fn == p.fn; /* recursion: once per sample */
        if (!seen)
            out[n++] = p;
    }
    if (!n) {
        out[0] = (pframe){xsm_names_intern(&a->names, leaf), -1, 0};
        n = out[0].fn < 0 ? -1 : 1;
    }
    return n;
}

/* Rank r's samples in the delay windows of the waits it caused, by wait
 * kind and each program function on their stacks (a->dwin; its most
 * sampled line names it), and, for those functions, all of the rank's
 * samples in them (xsm_dwin.all): what it ran while others waited, and
 * how much of that function's time was such. */
struct xsm_dwline { uint64_t n; };
static int rank_delay(xsm_an *a, xsm_symbols *sym, const xsprof_rank_data *d, int32_t r, const xsm_ssmp *smp,
                      const uint64_t *cnt, xsm_kmap *fmap, xsm_kmap *lmap, struct xsm_dwline **lines, size_t *nlines,
                      size_t *caplines)
{
    size_t n, first = a->ndwin;
    const xsm_ssmpn *w = xsm_ssmp_windows(smp, &n);
    pframe pf[XSPROF_IO_STACK_MAX + 1];
    for (size_t i = 0; i < n; i++) {
        int np = program_frames(a, sym, d, w[i].stack, pf);
        if (np < 0)
            return -1;
        pf[np++] = (pframe){-1, -1, 0}; /* the windows' samples in all */
        for (int k = 0; k < np; k++) {
            uint64_t k1 = (uint64_t)w[i].key << 32 | (uint32_t)r, k2 = (uint64_t)(uint32_t)pf[k].fn << 32 | (uint32_t)pf[k].file;
            int64_t e = xsm_kvec_index(fmap, (void **)&a->dwin, &a->ndwin, &a->dwincap, sizeof *a->dwin, k1, k2);
            int64_t l = e < 0 ? -1 : xsm_kvec_index(lmap, (void **)lines, nlines, caplines, sizeof **lines, (uint64_t)e,
                                                    (uint32_t)pf[k].line);
            if (l < 0)
                return -1;
            xsm_dwin *x = &a->dwin[e];
            *x = (xsm_dwin){(int32_t)w[i].key, r, pf[k].fn, pf[k].file, x->line, x->n + w[i].n, x->line_n, 0};
            if (((*lines)[l].n += w[i].n) > x->line_n) {
                x->line_n = (*lines)[l].n;
                x->line = pf[k].line;
            }
        }
    }
    /* every sample of the rank (function -1), for the functions met in its windows */
    for (size_t slot = 0; a->ndwin > first && slot <= d->ncallstacks; slot++) {
        if (!cnt[slot])
            continue;
        for (size_t e = first; e < a->ndwin; e++)
            if (a->dwin[e].function < 0)
                a->dwin[e].all += cnt[slot];
        if (!slot)
            continue;
        int np = program_frames(a, sym, d, d->callstacks[slot - 1].id, pf);
        if (np < 0)
            return -1;
        for (int k = 0; k < np; k++)
            for (size_t e = first; e < a->ndwin; e++)
                if (a->dwin[e].function == pf[k].fn && a->dwin[e].file == pf[k].file)
                    a->dwin[e].all += cnt[slot];
    }
    return 0;
}

/* The samples of rank r's callstack rows by row (cnt[k + 1]; cnt[0]: no
 * stack) into table tb: *site caches each row's table row + 1 (caller:
 * sample_site's). */
static int count_sites(xsm_an *a, xsm_symbols *sym, smptab *tb, const xsprof_rank_data *d, int32_t r, int64_t period,
                       const uint64_t *cnt, int32_t *site, uint64_t *total, int caller)
{
    for (size_t slot = 0; slot <= d->ncallstacks; slot++) {
        if (!cnt[slot])
            continue;
        if (!site[slot]) {
            int32_t k = sample_site(a, sym, tb, d, slot ? d->callstacks[slot - 1].id : 0, caller);
            if (k < 0)
                return -1;
            site[slot] = k + 1;
        }
        xsm_sample *s = &(*tb->v)[site[slot] - 1];
        s->n += cnt[slot];
        s->seconds += (double)period * 1e-9 * (double)cnt[slot];
        if (s->last_rank != r) {
            s->last_rank = r;
            s->nranks++;
        }
        *total += cnt[slot];
    }
    return 0;
}


static int sample_cmp(const void *pa, const void *pb)
{
    const xsm_sample *a = pa, *b = pb;
    if (a->n != b->n)
        return a->n > b->n ? -1 : 1;
    return a->last_rank < b->last_rank ? -1 : a->last_rank > b->last_rank; /* first seen first */
}

static void sort_sites(xsm_sample *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i].last_rank = (int32_t)i; /* ties: first seen first */
    if (n > 1)
        qsort(v, n, sizeof *v, sample_cmp);
}

int xsm_an_samples(xsm_an *a, const xsm_sanalysis *sa)
{
    xsm_symbols *sym = NULL;
    smptab all = {&a->smp, &a->nsmp, &a->smpcap, {0}}, outside = {&a->nosmp, &a->nnosmp, &a->nosmpcap, {0}};
    int32_t *site = NULL, *osite = NULL; /* per callstack row of the rank: its row + 1 in each table */
    uint64_t *cnt = NULL, *ocnt = NULL;  /* ... and its samples */
    xsm_kmap fmap = {0}, lmap = {0};
    struct xsm_dwline *lines = NULL;
    size_t nlines = 0, caplines = 0;
    int rc = 0;
    a->smp_timed = 1;
    for (size_t r = 0; !rc && r < a->nranks; r++) {
        const xsprof_rank_data *d = &a->run->ranks[r].d;
        if (!a->rs[r].present || !d->nsamples)
            continue;
        size_t ns = d->ncallstacks + 1;
        if ((!sym && !(sym = xsm_an_symbols(a))) || !(site = calloc(ns, sizeof *site)) ||
            !(cnt = calloc(ns, sizeof *cnt)) || !(osite = calloc(ns, sizeof *osite)) || !(ocnt = calloc(ns, sizeof *ocnt))) {
            rc = -1;
            break;
        }
        int64_t period = sample_period(d);
        a->smp_timed &= period > 0;
        for (size_t i = 0; i < d->nsamples; i++)
            cnt[stack_slot(d, d->samples[i].stack)]++;
        /* the engine's: the samples in no region, and in delay windows */
        xsm_anrank_out o;
        xsm_sanalysis_view(sa, (int32_t)r, &o);
        size_t nctx;
        const xsm_ssmpn *ctx = xsm_ssmp_ctxs(o.smp, &nctx);
        for (size_t i = 0; i < nctx; i++)
            if (!ctx[i].key)
                ocnt[stack_slot(d, ctx[i].stack)] += ctx[i].n;
        if (count_sites(a, sym, &all, d, (int32_t)r, period, cnt, site, &a->smp_total, 0) ||
            count_sites(a, sym, &outside, d, (int32_t)r, period, ocnt, osite, &a->nosmp_total, 1) ||
            rank_folded(a, sym, d, (int32_t)r, cnt, ctx, nctx, o.cn) ||
            rank_delay(a, sym, d, (int32_t)r, o.smp, cnt, &fmap, &lmap, &lines, &nlines, &caplines))
            rc = -1;
        free(site);
        free(cnt);
        free(osite);
        free(ocnt);
        site = osite = NULL;
        cnt = ocnt = NULL;
    }
    free(site);
    free(cnt);
    free(osite);
    free(ocnt);
    free(lines);
    xsm_kmap_free(&fmap);
    xsm_kmap_free(&lmap);
    if (!rc) {
        sort_sites(a->smp, a->nsmp);
        sort_sites(a->nosmp, a->nnosmp);
    }
    xsm_names_free(&all.keys);
    xsm_names_free(&outside.keys);
    return rc;
}

int xsm_samples_delay(const xsm_an *a, int kind, int32_t causer, const xsm_dwin **top, uint64_t *total)
{
    const xsm_dwin *all = NULL;
    for (size_t i = 0; i < a->ndwin && !all; i++)
        if (a->dwin[i].kind == kind && a->dwin[i].rank == causer && a->dwin[i].function < 0)
            all = &a->dwin[i];
    if (!all || !all->n || !all->all)
        return 0;
    /* The function that ran in the windows more than its share of the
     * rank's samples says: its window samples above what it would have
     * had if it ran evenly over the run. main and every caller of the
     * culprit ran as much outside the windows as in (none above), a
     * helper that every rank calls too (above only by the culprit's
     * calls); the culprit, only there, has all of its samples above. With
     * none above (the windows are the whole run), the innermost of the
     * most sampled. */
    const xsm_dwin *best = NULL;
    double best_x = 0, w = (double)all->n / (double)all->all;
    for (size_t i = 0; i < a->ndwin; i++) {
        const xsm_dwin *e = &a->dwin[i];
        if (e->kind != kind || e->rank != causer || e->function < 0)
            continue;
        double x = (double)e->n - (double)e->all * w;
        if (x > best_x || (!best_x && (!best || e->n > best->n))) {
            best = e;
            best_x = x > 0 ? x : 0;
        }
    }
    *top = best;
    *total = all->n;
    return best != NULL;
}

/* merge/analyze/callgrind.c — `--format callgrind`: the region call tree
 * summed over ranks, as callgrind.out for KCachegrind (event: ns). Every
 * call-tree node becomes a function block with its self cost and one call
 * arc per child; KCachegrind sums blocks of the same function. With CPU
 * samples (XSPROF_SAMPLE_HZ) a second event, samples: the sampled call
 * graph (samples.c) as function blocks in their source files, self samples
 * at the sampled lines and calls at the caller's line. A region that is a
 * function the samples or the MPI call sites place (an
 * -finstrument-functions region, or one named like it; not an MPI call,
 * which stays the call) is placed in its file at the first line they name
 * there; else, one the program defines (its symbol table), at the line
 * where the function begins. Other regions stay in the file
 * "[xsprof regions]", line 0. */
#include <stdlib.h>
#include <string.h>
#include "an.h"
#include "merge/symbols/symbols.h"

static void fn_ref(xsm_buf *b, const char *tag, const xsm_an *a, int32_t name, unsigned char *seen)
{
    /* callgrind name compression: "(id) name" the first time, "(id)" after */
    if (seen[name])
        xsm_buf_printf(b, "%s=(%d)\n", tag, name + 1);
    else {
        xsm_buf_printf(b, "%s=(%d) %s\n", tag, name + 1, xsm_an_name(a, name));
        seen[name] = 1;
    }
}

/* A file: (1) is "[xsprof regions]", a name index i is (i + 2); files
 * are compressed apart from functions (their own ids). */
static void fl_ref(xsm_buf *b, const char *tag, const xsm_an *a, int32_t file, unsigned char *seen)
{
    if (file < 0 && seen[a->names.n])
        xsm_buf_printf(b, "%s=(1)\n", tag);
    else if (file < 0) {
        xsm_buf_printf(b, "%s=(1) [xsprof regions]\n", tag);
        seen[a->names.n] = 1;
    } else if (seen[file])
        xsm_buf_printf(b, "%s=(%d)\n", tag, file + 2);
    else {
        xsm_buf_printf(b, "%s=(%d) %s\n", tag, file + 2, xsm_an_name(a, file));
        seen[file] = 1;
    }
}

/* Function fn is in file at line: the first file it was seen in, its
 * smallest line there. */
static void place(int32_t *pfile, int *pline, int32_t fn, int32_t file, int line)
{
    if (pfile[fn] < 0)
        pfile[fn] = file;
    if (pfile[fn] == file && line > 0 && (!pline[fn] || line < pline[fn]))
        pline[fn] = line;
}

static const xsm_cgarc *cg_sort_base;
static int cg_cmp(const void *x, const void *y)
{
    const xsm_cgarc *p = &cg_sort_base[*(const size_t *)x], *q = &cg_sort_base[*(const size_t *)y];
    if (p->function != q->function)
        return p->function < q->function ? -1 : 1;
    if (p->file != q->file)
        return p->file < q->file ? -1 : 1;
    return *(const size_t *)x < *(const size_t *)y ? -1 : 1;
}

/* The sampled functions' blocks (events: ns samples). */
static void cg_samples(const xsm_an *a, xsm_buf *b, unsigned char *seen, unsigned char *seenfl)
{
    size_t *ix = malloc((a->ncga + 1) * sizeof *ix);
    if (!ix) {
        b->failed = 1;
        return;
    }
    for (size_t i = 0; i < a->ncga; i++)
        ix[i] = i;
    cg_sort_base = a->cga; /* one writer at a time: the analysis's thread */
    qsort(ix, a->ncga, sizeof *ix, cg_cmp);
    for (size_t i = 0; i < a->ncga; i++) {
        const xsm_cgarc *g = &a->cga[ix[i]];
        if (i == 0 || g->function != a->cga[ix[i - 1]].function || g->file != a->cga[ix[i - 1]].file) {
            xsm_buf_puts(b, "\n");
            fl_ref(b, "fl", a, g->file, seenfl);
            fn_ref(b, "fn", a, g->function, seen);
        }
        if (g->callee < 0) {
            xsm_buf_printf(b, "%d 0 %llu\n", g->line, (unsigned long long)g->n);
            continue;
        }
        fl_ref(b, "cfl", a, g->cfile, seenfl);
        fn_ref(b, "cfn", a, g->callee, seen);
        xsm_buf_printf(b, "calls=%llu 0\n%d 0 %llu\n", (unsigned long long)g->n, g->line, (unsigned long long)g->n);
    }
    free(ix);
}

/* The regions (call-tree nodes, not MPI calls) named like a function of
 * the program (an -finstrument-functions region is one): where it begins,
 * file name index into sfile[c] (-1 none), line into sline[c]. Before
 * the writer sizes its tables: this interns the files. 0, or -1. */
static int cg_defined(xsm_an *a, int32_t *sfile, int *sline)
{
    xsm_symbols *sym = NULL;
    for (size_t c = 0; c < a->ncn; c++) {
        sfile[c] = -1;
        if (a->cn[c].is_mpi)
            continue;
        if (!sym && !(sym = xsm_an_symbols(a)))
            return -1;
        sfile[c] = xsm_an_function_place(a, sym, xsm_an_name(a, a->cn[c].name), &sline[c]);
    }
    return 0;
}

void xsm_callgrind_write(xsm_an *a, xsm_buf *b)
{
    size_t nc = a->ncn;
    int32_t *sfile = malloc((nc + 1) * sizeof *sfile);
    int *sline = malloc((nc + 1) * sizeof *sline);
    if (!sfile || !sline || cg_defined(a, sfile, sline)) {
        free(sfile);
        free(sline);
        b->failed = 1;
        return;
    }
    uint64_t *calls = calloc(nc + 1, sizeof *calls);
    int64_t *incl = calloc(nc + 1, sizeof *incl), *excl = calloc(nc + 1, sizeof *excl);
    unsigned char *seen = calloc(a->names.n + 1, 1), *seenfl = calloc(a->names.n + 1, 1);
    int32_t *pfile = malloc((a->names.n + 1) * sizeof *pfile); /* a function's file and first line (samples) */
    int *pline = malloc((a->names.n + 1) * sizeof *pline);
    int32_t *first = malloc((nc + 1) * sizeof *first), *next = malloc((nc + 1) * sizeof *next);
    if (!calls || !incl || !excl || !seen || !seenfl || !pfile || !pline || !first || !next) {
        b->failed = 1;
        goto out;
    }
    int64_t total = 0;
    for (size_t r = 0; r < a->nranks; r++) {
        const xsm_rankstat *rs = &a->rs[r];
        if (!rs->present)
            continue;
        for (size_t c = 0; c < nc && c < rs->ncs; c++) {
            calls[c] += rs->cs[c].calls;
            incl[c] += rs->cs[c].incl;
            excl[c] += rs->cs[c].excl;
            total += rs->cs[c].excl;
        }
    }
    for (size_t c = 0; c < nc; c++)
        first[c] = next[c] = -1;
    for (size_t k = nc; k-- > 0;) /* child lists in creation order */
        if (a->cn[k].parent >= 0) {
            next[k] = first[a->cn[k].parent];
            first[a->cn[k].parent] = (int32_t)k;
        }
    uint64_t nsmp = 0;
    for (size_t i = 0; i < a->names.n; i++)
        pfile[i] = -1, pline[i] = 0;
    for (size_t i = 0; i < a->ncga; i++) {
        nsmp += a->cga[i].callee < 0 ? a->cga[i].n : 0;
        place(pfile, pline, a->cga[i].function, a->cga[i].file, a->cga[i].line);
    }
    int placed = a->ncga > 0; /* some function has a file: regions go to files */
    for (size_t i = 0; i < a->ncss; i++)
        if (a->css[i].file >= 0) {
            place(pfile, pline, a->css[i].function, a->css[i].file, a->css[i].line);
            placed = 1;
        }
    xsm_buf_puts(b, "# callgrind format\nversion: 1\ncreator: xsprof\n");
    xsm_buf_printf(b, "cmd: %s\n", a->run->command[0] ? a->run->command : a->run->run_dir);
    if (a->ncga)
        xsm_buf_printf(b, "part: 1\ndesc: Ranks: %zu (times summed over ranks; samples: CPU samples, calls= counts the "
                          "samples under a call)\npositions: line\nevents: ns samples\nsummary: %lld %llu\n\n",
                       a->nranks, (long long)total, (unsigned long long)nsmp);
    else
        xsm_buf_printf(b, "part: 1\ndesc: Ranks: %zu (times summed over ranks)\npositions: line\nevents: ns\nsummary: %lld\n\n%s", a->nranks,
                       (long long)total, placed ? "" : "fl=(1) [xsprof regions]\n");
    for (size_t c = 0; c < nc; c++)
        if (a->cn[c].is_mpi) /* an MPI call is the call, not the library function of its name */
            pfile[a->cn[c].name] = -1;
    for (size_t c = 0; c < nc; c++) { /* the rest where the program defines them */
        int32_t nm = a->cn[c].name;
        if (pfile[nm] < 0 && sfile[c] >= 0) {
            pfile[nm] = sfile[c], pline[nm] = sline[c];
            placed = 1;
        }
    }
    int32_t cur = -2; /* the current fl= (-1: the regions' file) */
    for (size_t c = 0; c < nc; c++) {
        if (!calls[c])
            continue;
        int32_t nm = a->cn[c].name;
        if (placed && pfile[nm] != cur)
            fl_ref(b, "fl", a, cur = pfile[nm], seenfl);
        fn_ref(b, "fn", a, nm, seen);
        xsm_buf_printf(b, "%d %lld\n", pfile[nm] >= 0 ? pline[nm] : 0, (long long)excl[c]);
        for (int32_t k = first[c]; k >= 0; k = next[k]) {
            if (!calls[k])
                continue;
            int32_t kn = a->cn[k].name;
            if (placed)
                fl_ref(b, "cfl", a, pfile[kn], seenfl);
            fn_ref(b, "cfn", a, kn, seen);
            xsm_buf_printf(b, "calls=%llu %d\n%d %lld\n", (unsigned long long)calls[k], pfile[kn] >= 0 ? pline[kn] : 0,
                           pfile[nm] >= 0 ? pline[nm] : 0, (long long)incl[k]);
        }
        xsm_buf_puts(b, "\n");
    }
    if (a->ncga)
        cg_samples(a, b, seen, seenfl);
out:
    free(calls);
    free(incl);
    free(excl);
    free(seen);
    free(seenfl);
    free(sfile);
    free(sline);
    free(pfile);
    free(pline);
    free(first);
    free(next);
}

/* merge/analyze/callsites.c — where in the program the MPI time and the
 * waits are: the engine's per-rank call-site counts (sprofile.c, by the
 * call-site ids the collector recorded, io/FORMAT.md) resolved to the
 * program's function, file and line with merge/symbols (libdw), the same
 * code in every rank one row. Owner: merge analysis. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "an.h"
#include "merge/read/read.h"
#include "merge/symbols/symbols.h"

/* The site of call site `id` of rank r in a->css (interned by its
 * location), -1 out of memory. Unknown ids and addresses are one site,
 * "(unknown call site)". */
static int32_t site_of(xsm_an *a, xsm_symbols *sym, xsm_names *keys, int32_t r, uint32_t id, uint32_t op)
{
    const xsprof_rank_data *d = &a->run->ranks[r].d;
    const xsprof_io_callstack *st = id ? xsprof_rank_data_callstack(d, id) : NULL;
    const char *function = "(unknown call site)", *file = NULL, *module = NULL;
    int line = 0;
    uint64_t addr = 0;
    if (st && st->depth && st->frames < d->nframes) {
        uint64_t pc = d->frames[st->frames]; /* the return address into the program */
        const xsprof_io_module *m;
        const xsm_loc *loc = xsm_an_locate(a, sym, d, pc, 1, &m);
        if (m) {
            if (!loc)
                return -1;
            module = xsprof_rank_data_string(d, m->path);
            addr = loc->addr;
            function = loc->frames[0].function;
            file = loc->frames[0].file;
            line = loc->frames[0].line;
        }
    }
    char key[4096];
    const char *opn = xsprof_rank_data_string(d, op);
    /* a function without line information is one site per address */
    if (file)
        snprintf(key, sizeof key, "%s\n%s\n%s\n%d", opn, function, file, line);
    else
        snprintf(key, sizeof key, "%s\n%s\n%s\n%llx", opn, function, module ? module : "", (unsigned long long)addr);
    int32_t k = xsm_names_find(keys, key);
    if (k >= 0)
        return k;
    if ((k = xsm_names_intern(keys, key)) < 0 || xsm_grow((void **)&a->css, &a->csscap, a->ncss, sizeof *a->css))
        return -1;
    xsm_callsite *c = &a->css[a->ncss++];
    memset(c, 0, sizeof *c);
    c->op = xsm_names_intern(&a->names, opn);
    c->function = xsm_names_intern(&a->names, function);
    c->file = file ? xsm_names_intern(&a->names, file) : -1;
    c->module = module ? xsm_names_intern(&a->names, module) : -1;
    c->line = line;
    c->last_rank = -1;
    if (c->op < 0 || c->function < 0 || (file && c->file < 0) || (module && c->module < 0))
        return -1;
    return k;
}

/* The first note of merge/symbols (how to get the symbols it lacked). */
static void note_keep(void *user, const char *note)
{
    xsm_an *a = user;
    if (!a->css_note[0])
        snprintf(a->css_note, sizeof a->css_note, "%s", note);
}

static int site_cmp(const void *pa, const void *pb)
{
    const xsm_callsite *a = pa, *b = pb;
    double x = a->mpi_s, y = b->mpi_s;
    return x > y ? -1 : x < y ? 1 : 0;
}

int xsm_an_callsites(xsm_an *a, const xsm_sanalysis *sa)
{
    xsm_symbols *sym = xsm_an_symbols(a);
    xsm_names keys = {0};
    int rc = sym ? 0 : -1;
    for (size_t r = 0; !rc && r < a->nranks; r++) {
        if (!a->rs[r].present)
            continue;
        xsm_anrank_out v;
        xsm_sanalysis_view(sa, (int32_t)r, &v);
        for (size_t i = 0; !rc && i < v.ncs; i++) {
            const xsm_scs *e = &v.cs[i];
            int32_t k = site_of(a, sym, &keys, (int32_t)r, e->cs, e->op);
            if (k < 0) {
                rc = -1;
                break;
            }
            xsm_callsite *c = &a->css[k];
            if (c->last_rank != (int32_t)r) {
                c->last_rank = (int32_t)r;
                c->nranks++;
            }
            if (e->kind < 0) {
                c->calls += e->n;
                c->mpi_s += (double)e->ns * 1e-9;
                c->bytes += e->bytes;
            } else if (e->kind < XSM_WAIT_NKINDS) {
                c->wait_n[e->kind] += e->n;
                c->wait_s[e->kind] += (double)e->ns * 1e-9;
                c->wait_total_s += (double)e->ns * 1e-9;
            } else if (e->kind < 2 * XSM_WAIT_NKINDS) {
                c->caused_n[e->kind - XSM_WAIT_NKINDS] += e->n;
                c->caused_s[e->kind - XSM_WAIT_NKINDS] += (double)e->ns * 1e-9;
            }
        }
    }
    if (!rc) {
        a->css_known = 0;
        for (size_t i = 0; i < a->ncss; i++)
            a->css_known |= a->css[i].module >= 0;
        if (a->ncss > 1)
            qsort(a->css, a->ncss, sizeof *a->css, site_cmp);
        xsm_symbols_notes(sym, note_keep, a);
    }
    xsm_names_free(&keys);
    return rc;
}

void xsm_callsite_fmt(const xsm_an *a, const xsm_callsite *c, char *out, size_t n)
{
    if (c->file >= 0 && c->line > 0)
        snprintf(out, n, "%s (%s:%d)", xsm_an_name(a, c->function), xsm_an_name(a, c->file), c->line);
    else if (c->file >= 0)
        snprintf(out, n, "%s (%s)", xsm_an_name(a, c->function), xsm_an_name(a, c->file));
    else
        snprintf(out, n, "%s", xsm_an_name(a, c->function));
}

int32_t xsm_callsite_of_waits(const xsm_an *a, int32_t op, int kind, int caused)
{
    int32_t best = -1;
    double bs = 0;
    for (size_t i = 0; i < a->ncss; i++) {
        const xsm_callsite *c = &a->css[i];
        double v = caused ? c->caused_s[kind] : c->wait_s[kind];
        if (c->module >= 0 && (op < 0 || c->op == op) && v > bs) {
            best = (int32_t)i;
            bs = v;
        }
    }
    return best;
}

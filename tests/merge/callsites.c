/* tests/merge/callsites.c — xsm_callsites RANK_FILE...: the MPI call sites
 * of rank files resolved with merge/symbols, for the end-to-end tests (the
 * report's call-site table comes with the analysis engine). One line per
 * (rank, op, call site), tab-separated:
 *   rank  op  calls  stack
 * where stack is the call stack's frames, innermost first, joined by " <- ",
 * each as function@file:line (inlined frames of one address joined by
 * " < "), or module+0xOFF. Then "note: ..." lines from merge/symbols. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/record.h" /* enum xsprof_mpi_kind */
#include "io/reader.h"
#include "merge/symbols/symbols.h"

typedef struct site {
    uint32_t op, callsite;
    int64_t t; /* when it was called (which object was loaded then) */
} site;

static int site_cmp(const void *a, const void *b)
{
    const site *x = a, *y = b;
    if (x->callsite != y->callsite)
        return x->callsite < y->callsite ? -1 : 1;
    return x->op < y->op ? -1 : (x->op > y->op);
}

/* The module holding process address a at time t (an object closed and
 * another loaded at the same place are told apart by their times). */
static const xsprof_io_module *module_of(const xsprof_rank_data *d, uint64_t a, int64_t t)
{
    const xsprof_io_module *any = NULL;
    for (size_t i = 0; i < d->nmodules; i++) {
        const xsprof_io_module *m = &d->modules[i];
        if (a < m->lo || a >= m->hi)
            continue;
        if (t >= m->t_load && t < m->t_unload)
            return m;
        any = any ? any : m;
    }
    return any;
}

static void print_frame(xsm_symbols *s, const xsprof_rank_data *d, uint64_t a, int64_t t)
{
    const xsprof_io_module *m = module_of(d, a, t);
    if (!m) {
        printf("?+0x%llx", (unsigned long long)a);
        return;
    }
    int h = xsm_symbols_module(s, xsprof_rank_data_string(d, m->path), xsprof_rank_data_string(d, m->build_id));
    const xsm_loc *l = xsm_symbols_lookup(s, h, a - m->bias, 1);
    for (int i = 0; l && i < l->nframes; i++) {
        const xsm_frame *f = &l->frames[i];
        if (f->file)
            printf("%s%s@%s:%d", i ? " < " : "", f->function, f->file, f->line);
        else
            printf("%s%s", i ? " < " : "", f->function);
    }
}

static void print_note(void *user, const char *note)
{
    (void)user;
    printf("note: %s\n", note);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: xsm_callsites RANK_FILE...\n");
        return 2;
    }
    xsm_symbols *s = xsm_symbols_open();
    if (!s)
        return 1;
    int rc = 0;
    for (int k = 1; k < argc; k++) {
        xsprof_rank_data d;
        memset(&d, 0, sizeof d);
        char err[512];
        if (xsprof_rankfile_load(argv[k], &d, err, sizeof err) != XSPROF_OK) {
            fprintf(stderr, "xsm_callsites: %s\n", err);
            rc = 1;
            continue;
        }
        site *v = calloc(d.nmpi + 1, sizeof *v);
        size_t n = 0;
        for (size_t i = 0; v && i < d.nmpi; i++)
            if (d.mpi[i].kind != XSPROF_MPI_COMPLETION) /* the call's own row counts it */
                v[n++] = (site){d.mpi[i].op, d.mpi[i].callsite, d.mpi[i].t_begin};
        qsort(v, n, sizeof *v, site_cmp);
        for (size_t i = 0; i < n;) {
            size_t j = i;
            uint64_t calls = 0;
            for (; j < n && v[j].op == v[i].op && v[j].callsite == v[i].callsite; j++)
                calls++;
            printf("%d\t%s\t%llu\t", d.rank, xsprof_rank_data_string(&d, v[i].op), (unsigned long long)calls);
            const xsprof_io_callstack *c = xsprof_rank_data_callstack(&d, v[i].callsite);
            for (uint32_t f = 0; c && f < c->depth; f++) {
                printf("%s", f ? " <- " : "");
                print_frame(s, &d, d.frames[c->frames + f], v[i].t);
            }
            printf("%s\n", c ? "" : "(unknown)");
            i = j;
        }
        free(v);
        xsprof_rank_data_free(&d);
    }
    xsm_symbols_notes(s, print_note, NULL);
    xsm_symbols_close(s);
    return rc;
}

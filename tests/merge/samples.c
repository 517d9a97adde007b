/* tests/merge/samples.c — xsm_samples RANK_FILE...: the sampled call stacks
 * of rank files (XSPROF_SAMPLE_HZ) resolved with merge/symbols, for the
 * end-to-end tests (the report's sampled breakdown comes with the analysis
 * engine). Tab-separated lines:
 *   rank  R  samples  N  threads  T      one per rank file
 *   leaf  R  function  file:line  N      samples whose interrupted instruction is there
 *   path  R  f0<f1<f2  N                 the three innermost functions of each stack
 * then "note: ..." lines from merge/symbols. A frame is named by the
 * function its code was compiled into (the outermost of its inlined
 * chain); the leaf is looked up at its own address (it is exact), the
 * callers at their call instruction (return address - 1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/reader.h"
#include "merge/symbols/symbols.h"

typedef struct count {
    char *key;
    char *where;
    uint64_t n;
} count;

typedef struct table {
    count *v;
    size_t n, cap;
} table;

/* One count per key and place: a function's leaf samples at each of its
 * lines (keyed by the function alone, all were credited to the line of its
 * first sample, one at the function's entry once: mpi_sampling under ASan). */
static void table_add(table *t, const char *key, const char *where)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->v[i].key, key) && (!where || !strcmp(t->v[i].where, where))) {
            t->v[i].n++;
            return;
        }
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->v = realloc(t->v, t->cap * sizeof *t->v);
        if (!t->v)
            exit(1);
    }
    t->v[t->n++] = (count){strdup(key), where ? strdup(where) : NULL, 1};
}

static int count_cmp(const void *a, const void *b)
{
    const count *x = a, *y = b;
    return x->n != y->n ? (x->n < y->n ? 1 : -1) : strcmp(x->key, y->key);
}

static void table_free(table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].key);
        free(t->v[i].where);
    }
    free(t->v);
    memset(t, 0, sizeof *t);
}

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

/* Function (and file:line of the innermost frame) of address a. */
static const xsm_loc *resolve(xsm_symbols *s, const xsprof_rank_data *d, uint64_t a, int64_t t, int ret)
{
    const xsprof_io_module *m = module_of(d, a, t);
    if (!m)
        return NULL;
    int h = xsm_symbols_module(s, xsprof_rank_data_string(d, m->path), xsprof_rank_data_string(d, m->build_id));
    return xsm_symbols_lookup(s, h, a - m->bias, ret);
}

static void print_note(void *user, const char *note)
{
    (void)user;
    printf("note: %s\n", note);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: xsm_samples RANK_FILE...\n");
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
        size_t len = strlen(argv[k]);
        int journal = len > 4 && !strcmp(argv[k] + len - 4, ".xsj"); /* a dead rank's */
        if ((journal ? xsprof_journal_load(argv[k], &d, err, sizeof err)
                     : xsprof_rankfile_load(argv[k], &d, err, sizeof err)) != XSPROF_OK) {
            fprintf(stderr, "xsm_samples: %s\n", err);
            rc = 1;
            continue;
        }
        table leaf = {0}, path = {0}, tids = {0};
        for (size_t i = 0; i < d.nsamples; i++) {
            const xsprof_io_sample *sm = &d.samples[i];
            char tid[16];
            snprintf(tid, sizeof tid, "%d", sm->os_tid);
            table_add(&tids, tid, NULL);
            const xsprof_io_callstack *c = xsprof_rank_data_callstack(&d, sm->stack);
            if (!c) {
                table_add(&leaf, "(unknown)", "");
                continue;
            }
            char key[512] = "", where[512] = "";
            for (uint32_t f = 0; f < c->depth && f < 3; f++) {
                const xsm_loc *l = resolve(s, &d, d.frames[c->frames + f], sm->t, f > 0);
                const char *fn = l ? l->frames[l->nframes - 1].function : "?";
                if (f == 0) {
                    const xsm_frame *in = l ? &l->frames[0] : NULL;
                    snprintf(where, sizeof where, "%s:%d", in && in->file ? in->file : "?", in ? in->line : 0);
                    table_add(&leaf, fn, where);
                }
                size_t len = strlen(key);
                snprintf(key + len, sizeof key - len, "%s%s", f ? "<" : "", fn);
            }
            table_add(&path, key, NULL);
        }
        printf("rank\t%d\tsamples\t%zu\tthreads\t%zu\n", d.rank, d.nsamples, tids.n);
        if (leaf.n > 1) /* the arrays are NULL when empty: qsort takes no NULL */
            qsort(leaf.v, leaf.n, sizeof *leaf.v, count_cmp);
        if (path.n > 1)
            qsort(path.v, path.n, sizeof *path.v, count_cmp);
        for (size_t i = 0; i < leaf.n; i++)
            printf("leaf\t%d\t%s\t%s\t%llu\n", d.rank, leaf.v[i].key, leaf.v[i].where ? leaf.v[i].where : "",
                   (unsigned long long)leaf.v[i].n);
        for (size_t i = 0; i < path.n; i++)
            printf("path\t%d\t%s\t%llu\n", d.rank, path.v[i].key, (unsigned long long)path.v[i].n);
        table_free(&leaf);
        table_free(&path);
        table_free(&tids);
        xsprof_rank_data_free(&d);
    }
    xsm_symbols_notes(s, print_note, NULL);
    xsm_symbols_close(s);
    return rc;
}

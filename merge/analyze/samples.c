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

/* What one sample of rank d weighs in ns (its meta sample_period_ns), 0
 * when not known (CPU-time timers, or a file that does not say). */
static int64_t sample_period(const xsprof_rank_data *d)
{
    for (size_t i = 0; i < d->nmeta; i++)
        if (!strcmp(xsprof_rank_data_string(d, d->meta[i].key), "sample_period_ns"))
            return strtoll(xsprof_rank_data_string(d, d->meta[i].value), NULL, 10);
    return 0;
}

/* The row of the sampled instruction of stack `id` of rank d (interned by
 * its place in the code), -1 out of memory. */
static int32_t sample_site(xsm_an *a, xsm_symbols *sym, xsm_names *keys, const xsprof_rank_data *d, uint32_t id)
{
    const xsprof_io_callstack *st = id ? xsprof_rank_data_callstack(d, id) : NULL;
    const char *function = "(unknown)", *file = NULL, *module = NULL;
    int line = 0;
    uint64_t addr = 0;
    if (st && st->depth && st->frames < d->nframes) {
        uint64_t pc = d->frames[st->frames]; /* the interrupted instruction itself */
        const xsprof_io_module *m = xsm_read_module_at(d, pc);
        if (m) {
            module = xsprof_rank_data_string(d, m->path);
            addr = pc - m->bias;
            int h = xsm_symbols_module(sym, module, xsprof_rank_data_string(d, m->build_id));
            const xsm_loc *loc = h >= 0 ? xsm_symbols_lookup(sym, h, addr, 0) : NULL;
            if (!loc)
                return -1;
            function = loc->frames[0].function;
            file = loc->frames[0].file;
            line = loc->frames[0].line;
        }
    }
    char key[4096];
    if (file)
        snprintf(key, sizeof key, "%s\n%s\n%d", function, file, line);
    else
        snprintf(key, sizeof key, "%s\n%s", function, module ? module : "");
    int32_t k = xsm_names_find(keys, key);
    if (k >= 0)
        return k;
    if ((k = xsm_names_intern(keys, key)) < 0 || xsm_grow((void **)&a->smp, &a->smpcap, a->nsmp, sizeof *a->smp))
        return -1;
    xsm_sample *s = &a->smp[a->nsmp++];
    memset(s, 0, sizeof *s);
    s->function = xsm_names_intern(&a->names, function);
    s->file = file ? xsm_names_intern(&a->names, file) : -1;
    s->module = module ? xsm_names_intern(&a->names, module) : -1;
    s->line = line;
    s->last_rank = -1;
    if (s->function < 0 || (file && s->file < 0) || (module && s->module < 0))
        return -1;
    return k;
}

static int sample_cmp(const void *pa, const void *pb)
{
    const xsm_sample *a = pa, *b = pb;
    return a->n > b->n ? -1 : a->n < b->n;
}

int xsm_an_samples(xsm_an *a)
{
    xsm_symbols *sym = NULL;
    xsm_names keys = {0};
    int32_t *site = NULL; /* per callstack row of the rank: its site + 1 */
    int rc = 0;
    a->smp_timed = 1;
    for (size_t r = 0; !rc && r < a->nranks; r++) {
        const xsprof_rank_data *d = &a->run->ranks[r].d;
        if (!a->rs[r].present || !d->nsamples)
            continue;
        if ((!sym && !(sym = xsm_symbols_open())) || !(site = calloc(d->ncallstacks + 1, sizeof *site))) {
            rc = -1;
            break;
        }
        int64_t period = sample_period(d);
        a->smp_timed &= period > 0;
        for (size_t i = 0; i < d->nsamples; i++) {
            const xsprof_io_callstack *st = d->samples[i].stack ? xsprof_rank_data_callstack(d, d->samples[i].stack) : NULL;
            size_t slot = st ? (size_t)(st - d->callstacks) + 1 : 0;
            if (!site[slot]) {
                int32_t k = sample_site(a, sym, &keys, d, d->samples[i].stack);
                if (k < 0) {
                    rc = -1;
                    break;
                }
                site[slot] = k + 1;
            }
            xsm_sample *s = &a->smp[site[slot] - 1];
            s->n++;
            s->seconds += (double)period * 1e-9;
            if (s->last_rank != (int32_t)r) {
                s->last_rank = (int32_t)r;
                s->nranks++;
            }
            a->smp_total++;
        }
        free(site);
        site = NULL;
    }
    free(site);
    if (!rc && a->nsmp > 1)
        qsort(a->smp, a->nsmp, sizeof *a->smp, sample_cmp);
    xsm_names_free(&keys);
    xsm_symbols_close(sym);
    return rc;
}

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
    const char *function = "(unknown)", *inlined = NULL, *file = NULL, *module = NULL;
    int line = 0;
    if (st && st->depth && st->frames < d->nframes) {
        uint64_t pc = d->frames[st->frames]; /* the interrupted instruction itself */
        const xsprof_io_module *m;
        const xsm_loc *loc = xsm_read_locate(sym, d, pc, 0, &m);
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
    int32_t k = xsm_names_find(keys, key);
    if (k >= 0)
        return k;
    if ((k = xsm_names_intern(keys, key)) < 0 || xsm_grow((void **)&a->smp, &a->smpcap, a->nsmp, sizeof *a->smp))
        return -1;
    xsm_sample *s = &a->smp[a->nsmp++];
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

/* Rank r's samples by every function on their stacks (inclusive, once per
 * sample however often a function recurs): cnt[k] samples of the k-th
 * callstack row. The functions are the ones code was compiled into. */
/* One frame's names for a folded stack, outermost first (its inlined
 * chain), each kept clear of ';', ' ' and newlines. */
static void fold_frame(xsm_buf *line, const xsm_loc *loc)
{
    for (int i = loc->nframes - 1; i >= 0; i--) {
        xsm_buf_puts(line, ";");
        for (const char *c = loc->frames[i].function; *c; c++)
            xsm_buf_put(line, *c == ';' || *c == ' ' || *c == '\n' ? "_" : c, 1);
    }
}

static int str_cmp(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

static int rank_functions(xsm_an *a, xsm_symbols *sym, const xsprof_rank_data *d, int32_t r, const uint64_t *cnt)
{
    size_t first = a->nrfun, nlines = 0;
    char **lines = malloc((d->ncallstacks + 1) * sizeof *lines); /* this rank's folded stacks */
    if (!lines)
        return -1;
    int rc = 0;
    for (size_t k = 0; k < d->ncallstacks && !rc; k++) {
        if (!cnt[k + 1])
            continue;
        const xsprof_io_callstack *st = &d->callstacks[k];
        int32_t seen[XSPROF_IO_STACK_MAX];
        size_t nseen = 0;
        const xsm_loc *locs[XSPROF_IO_STACK_MAX];
        uint32_t nlocs = 0;
        for (uint32_t f = 0; f < st->depth && st->frames + f < d->nframes; f++) {
            uint64_t pc = d->frames[st->frames + f];
            const xsprof_io_module *m;
            const xsm_loc *loc = xsm_read_locate(sym, d, pc, f > 0, &m);
            if (!m)
                continue;
            if (!loc) {
                rc = -1;
                break;
            }
            locs[nlocs++] = loc;
            const xsm_frame *fr = &loc->frames[loc->nframes - 1];
            if (!fr->file)
                continue; /* the program's code only: libraries without lines are not where a user can act */
            int32_t fn = xsm_names_intern(&a->names, fr->function), fl = xsm_names_intern(&a->names, fr->file);
            if (fn < 0 || fl < 0) {
                rc = -1;
                break;
            }
            size_t j = 0;
            while (j < nseen && seen[j] != fn)
                j++;
            if (j < nseen)
                continue; /* recursion: once per sample */
            seen[nseen++] = fn;
            size_t e = first;
            while (e < a->nrfun && a->rfun[e].function != fn)
                e++;
            if (e == a->nrfun) {
                if (xsm_grow((void **)&a->rfun, &a->rfuncap, a->nrfun, sizeof *a->rfun)) {
                    rc = -1;
                    break;
                }
                a->rfun[a->nrfun++] = (struct xsm_rfun){r, fn, fl, 0};
            }
            a->rfun[e].n += cnt[k + 1];
        }
        if (rc)
            break;
        /* its folded line: "rank N;outermost;...;leaf samples" */
        xsm_buf line = {0};
        xsm_buf_printf(&line, "rank %d", (int)r);
        for (uint32_t i = nlocs; i-- > 0;)
            fold_frame(&line, locs[i]);
        xsm_buf_printf(&line, " %llu\n", (unsigned long long)cnt[k + 1]);
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

static int sample_cmp(const void *pa, const void *pb)
{
    const xsm_sample *a = pa, *b = pb;
    if (a->n != b->n)
        return a->n > b->n ? -1 : 1;
    return a->last_rank < b->last_rank ? -1 : a->last_rank > b->last_rank; /* first seen first */
}

int xsm_an_samples(xsm_an *a)
{
    xsm_symbols *sym = NULL;
    xsm_names keys = {0};
    int32_t *site = NULL; /* per callstack row of the rank: its site + 1 */
    uint64_t *cnt = NULL; /* ... and its samples */
    int rc = 0;
    a->smp_timed = 1;
    for (size_t r = 0; !rc && r < a->nranks; r++) {
        const xsprof_rank_data *d = &a->run->ranks[r].d;
        if (!a->rs[r].present || !d->nsamples)
            continue;
        if ((!sym && !(sym = xsm_symbols_open())) || !(site = calloc(d->ncallstacks + 1, sizeof *site)) ||
            !(cnt = calloc(d->ncallstacks + 1, sizeof *cnt))) {
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
            cnt[slot]++;
            s->seconds += (double)period * 1e-9;
            if (s->last_rank != (int32_t)r) {
                s->last_rank = (int32_t)r;
                s->nranks++;
            }
            a->smp_total++;
        }
        if (!rc && rank_functions(a, sym, d, (int32_t)r, cnt))
            rc = -1;
        free(site);
        free(cnt);
        site = NULL;
        cnt = NULL;
    }
    free(site);
    free(cnt);
    if (!rc && a->nsmp > 1) {
        for (size_t i = 0; i < a->nsmp; i++)
            a->smp[i].last_rank = (int32_t)i; /* ties: first seen first */
        qsort(a->smp, a->nsmp, sizeof *a->smp, sample_cmp);
    }
    xsm_names_free(&keys);
    xsm_symbols_close(sym);
    return rc;
}

int32_t xsm_samples_excess(const xsm_an *a, int32_t r, int32_t *file, double *excess)
{
    size_t others = 0;
    for (size_t q = 0; q < a->nranks; q++)
        others += a->rs[q].present && (int32_t)q != r;
    /* the others' samples of a function: summed over their entries */
    double best_x = 0;
    for (int pass = 0; pass < 2; pass++) {
        int32_t best = -1;
        double best_ratio = -1;
        for (size_t i = 0; i < a->nrfun; i++) {
            const struct xsm_rfun *e = &a->rfun[i];
            if (e->rank != r)
                continue;
            uint64_t rest = 0;
            for (size_t j = 0; j < a->nrfun; j++)
                if (a->rfun[j].rank != r && a->rfun[j].function == e->function)
                    rest += a->rfun[j].n;
            double x = (double)e->n - (double)rest / (double)(others ? others : 1);
            if (pass == 0) {
                if (x > best_x)
                    best_x = x;
                continue;
            }
            /* of the functions nearly that far above the others (main and
             * every caller of the culprit are), the one whose samples are
             * most of them excess: the most specific */
            double ratio = x / (double)e->n;
            if (x >= 0.9 * best_x && x > 0 && ratio > best_ratio) {
                best_ratio = ratio;
                best = e->function;
                *file = e->file;
            }
        }
        if (pass == 1) {
            *excess = best_x;
            return best;
        }
        if (best_x <= 0)
            break;
    }
    *excess = 0;
    return -1;
}

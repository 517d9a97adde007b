/* merge/analyze/callgrind.c — `--format callgrind`: the region call tree
 * summed over ranks, as callgrind.out for KCachegrind (event: ns). Every
 * call-tree node becomes a function block with its self cost and one call
 * arc per child; KCachegrind sums blocks of the same function. */
#include <stdlib.h>
#include <string.h>
#include "an.h"

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

void xsm_callgrind_write(const xsm_an *a, xsm_buf *b)
{
    size_t nc = a->ncn;
    uint64_t *calls = calloc(nc + 1, sizeof *calls);
    int64_t *incl = calloc(nc + 1, sizeof *incl), *excl = calloc(nc + 1, sizeof *excl);
    unsigned char *seen = calloc(a->names.n + 1, 1);
    int32_t *first = malloc((nc + 1) * sizeof *first), *next = malloc((nc + 1) * sizeof *next);
    if (!calls || !incl || !excl || !seen || !first || !next) {
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
    xsm_buf_puts(b, "# callgrind format\nversion: 1\ncreator: xsprof\n");
    xsm_buf_printf(b, "cmd: %s\n", a->run->command[0] ? a->run->command : a->run->run_dir);
    xsm_buf_printf(b, "part: 1\ndesc: Ranks: %zu (times summed over ranks)\npositions: line\nevents: ns\nsummary: %lld\n\nfl=(1) [xsprof regions]\n", a->nranks,
                   (long long)total);
    for (size_t c = 0; c < nc; c++) {
        if (!calls[c])
            continue;
        fn_ref(b, "fn", a, a->cn[c].name, seen);
        xsm_buf_printf(b, "0 %lld\n", (long long)excl[c]);
        for (int32_t k = first[c]; k >= 0; k = next[k]) {
            if (!calls[k])
                continue;
            fn_ref(b, "cfn", a, a->cn[k].name, seen);
            xsm_buf_printf(b, "calls=%llu 0\n0 %lld\n", (unsigned long long)calls[k], (long long)incl[k]);
        }
        xsm_buf_puts(b, "\n");
    }
out:
    free(calls);
    free(incl);
    free(excl);
    free(seen);
    free(first);
    free(next);
}

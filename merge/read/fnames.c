/* merge/read/fnames.c — names of -finstrument-functions regions. The
 * capture names such a region "fn@0x<address>" (core/instrument.c): the
 * function's address in the process, whose object the modules table
 * lists. Right after a rank is loaded, each such string becomes the
 * function's name from the binary's symbols and debug information
 * (merge/symbols), so every later stage and product sees ordinary region
 * names; an address no module holds keeps its string, one that no symbol
 * covers becomes module+0xOFFSET. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "merge/read/read.h"
#include "merge/symbols/symbols.h"

#define FN_PREFIX "fn@0x" /* core/internal.h XSPROF_FN_NAME_PREFIX */

const xsprof_io_module *xsm_read_module_at(const xsprof_rank_data *d, uint64_t a)
{
    const xsprof_io_module *best = NULL;
    for (size_t i = 0; i < d->nmodules; i++) {
        const xsprof_io_module *m = &d->modules[i];
        if (a >= m->lo && a < m->hi && (!best || m->t_unload - m->t_load > best->t_unload - best->t_load))
            best = m;
    }
    return best;
}

const xsm_loc *xsm_read_locate(xsm_symbols *s, const xsprof_rank_data *d, uint64_t a, int ret,
                               const xsprof_io_module **mod)
{
    const xsprof_io_module *m = xsm_read_module_at(d, a);
    if (mod)
        *mod = m;
    if (!m)
        return NULL;
    int h = xsm_symbols_module(s, xsprof_rank_data_string(d, m->path), xsprof_rank_data_string(d, m->build_id));
    return h >= 0 ? xsm_symbols_lookup(s, h, a - m->bias, ret) : NULL;
}

void xsm_read_name_functions(xsprof_rank_data *d)
{
    xsm_symbols *s = NULL;
    for (uint32_t i = 0; i < d->nstrings; i++) {
        const char *str = d->strings[i];
        if (!str || strncmp(str, FN_PREFIX, sizeof FN_PREFIX - 1))
            continue;
        char *end = NULL;
        uint64_t a = strtoull(str + sizeof FN_PREFIX - 1, &end, 16);
        if (*end || !xsm_read_module_at(d, a) || (!s && !(s = xsm_symbols_open())))
            continue;
        const xsm_loc *l = xsm_read_locate(s, d, a, 0, NULL);
        /* the function the entry belongs to: the outermost of an inlined chain */
        char *name = l ? strdup(l->frames[l->nframes - 1].function) : NULL;
        if (name) {
            free(d->strings[i]);
            d->strings[i] = name;
        }
    }
    if (s)
        xsm_symbols_close(s);
}

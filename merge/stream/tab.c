/* merge/stream/tab.c — rows of one table through a two-chunk cache (see
 * internal.h). Two chunks, because a reorder window reaches back at most
 * one chunk behind the row being read, and a region's arguments sit next
 * to it. */
#include "merge/stream/internal.h"

#include <stdlib.h>
#include <string.h>

static const void *xsm_tab_mem_rows(const xsprof_rank_data *d, int t, uint64_t *n)
{
    switch (t) {
    case XSPROF_IO_T_REGIONS: *n = d->nregions; return d->regions;
    case XSPROF_IO_T_ARGS: *n = d->nargs; return d->args;
    case XSPROF_IO_T_INSTANTS: *n = d->ninstants; return d->instants;
    case XSPROF_IO_T_COUNTERS: *n = d->ncounters; return d->counters;
    case XSPROF_IO_T_MPI: *n = d->nmpi; return d->mpi;
    case XSPROF_IO_T_GPU: *n = d->ngpu; return d->gpu;
    case XSPROF_IO_T_MEM: *n = d->nmem; return d->mem;
    default: *n = 0; return NULL;
    }
}

int xsm_tab_open(xsm_tab *tab, xsprof_rankfile *rf, const xsprof_rank_data *d, int t)
{
    memset(tab, 0, sizeof *tab);
    tab->table = t;
    tab->path = d->path;
    tab->size = xsprof_io_table_row_size((enum xsprof_io_table)t);
    tab->first[0] = tab->first[1] = UINT64_MAX;
    uint64_t n = rf ? xsprof_rankfile_table_rows(rf, (enum xsprof_io_table)t) : 0;
    if (rf && (n || xsprof_rankfile_table_chunk(rf, (enum xsprof_io_table)t))) {
        tab->rf = rf;
        tab->n = n;
        tab->chunk = xsprof_rankfile_table_chunk(rf, (enum xsprof_io_table)t);
        if (!tab->chunk)
            tab->chunk = 1;
        for (int k = 0; k < 2; k++)
            if (!(tab->buf[k] = malloc(tab->chunk * tab->size)))
                return -1;
        return 0;
    }
    tab->mem = xsm_tab_mem_rows(d, t, &tab->n);
    return 0;
}

void xsm_tab_close(xsm_tab *tab)
{
    free(tab->buf[0]);
    free(tab->buf[1]);
    tab->buf[0] = tab->buf[1] = NULL;
}

const void *xsm_tab_row(xsm_tab *tab, uint64_t i)
{
    if (!tab->rf)
        return tab->mem + i * tab->size;
    for (int k = 0; k < 2; k++)
        if (i - tab->first[k] < tab->cnt[k])
            return tab->buf[k] + (i - tab->first[k]) * tab->size;
    if (i >= tab->n) {
        snprintf(tab->err, sizeof tab->err, "xsmerge: %s: row %llu of table %d is outside it", tab->path,
                 (unsigned long long)i, tab->table);
        return NULL;
    }
    int k = tab->victim;
    uint64_t first = i / tab->chunk * tab->chunk;
    size_t cnt = tab->n - first < tab->chunk ? (size_t)(tab->n - first) : tab->chunk;
    char e[sizeof tab->err - 16] = "";
    if (xsprof_rankfile_read(tab->rf, (enum xsprof_io_table)tab->table, first, cnt, tab->buf[k], e, sizeof e) !=
        XSPROF_OK) {
        tab->first[k] = UINT64_MAX;
        tab->cnt[k] = 0;
        snprintf(tab->err, sizeof tab->err, "xsmerge: %s", e[0] ? e : "read failed");
        return NULL;
    }
    tab->first[k] = first;
    tab->cnt[k] = cnt;
    tab->victim = !k;
    return tab->buf[k] + (i - first) * tab->size;
}

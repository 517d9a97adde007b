/* core/summary.c — the in-process summary: per region name, calls, total
 * (inclusive) and self time and the longest call, summed over threads while
 * summaries are on (xsprof_summary_enable, XSPROF_SUMMARY=1). Region ends
 * feed it (region.c) with one branch when off. Read without xsmerge: by
 * Python's key_averages() (xsprof_summary_get) and xsprof_summary_write(),
 * which XSPROF_SUMMARY=1 calls at finalize. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

typedef struct {
    _Atomic uint64_t calls;
    _Atomic int64_t total, self, max;
} row;

_Atomic int xsprof_summary_on;
static _Atomic(row *) g_rows; /* indexed by name id; allocated once, kept */

void xsprof_summary_add(uint32_t name, int64_t dur, int64_t self) {
    row *rows = atomic_load_explicit(&g_rows, memory_order_acquire);
    if (!rows || name >= XSPROF_NAMES_MAX)
        return;
    row *r = &rows[name];
    atomic_fetch_add_explicit(&r->calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->total, dur, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->self, self, memory_order_relaxed);
    int64_t m = atomic_load_explicit(&r->max, memory_order_relaxed);
    while (dur > m && !atomic_compare_exchange_weak_explicit(&r->max, &m, dur, memory_order_relaxed,
                                                             memory_order_relaxed))
        ;
}

xsprof_status xsprof_summary_enable(int on) {
    if (on && !atomic_load(&g_rows)) {
        row *rows = calloc(XSPROF_NAMES_MAX, sizeof *rows);
        row *none = NULL;
        if (!rows)
            return XSPROF_ERR_NOMEM;
        if (!atomic_compare_exchange_strong(&g_rows, &none, rows))
            free(rows); /* another thread's won */
    }
    atomic_store(&xsprof_summary_on, on != 0);
    return XSPROF_OK;
}

xsprof_status xsprof_summary_reset(void) {
    row *rows = atomic_load(&g_rows);
    for (uint32_t i = 0; rows && i < XSPROF_NAMES_MAX; i++) {
        atomic_store_explicit(&rows[i].calls, 0, memory_order_relaxed);
        atomic_store_explicit(&rows[i].total, 0, memory_order_relaxed);
        atomic_store_explicit(&rows[i].self, 0, memory_order_relaxed);
        atomic_store_explicit(&rows[i].max, 0, memory_order_relaxed);
    }
    return XSPROF_OK;
}

static int by_total(const void *a, const void *b) {
    const xsprof_summary_row *x = a, *y = b;
    return (x->total_ns < y->total_ns) - (x->total_ns > y->total_ns);
}

xsprof_status xsprof_summary_get(xsprof_summary_row *out, size_t cap, size_t *n) {
    if (!n || (cap && !out))
        return XSPROF_ERR_INVALID;
    *n = 0;
    row *rows = atomic_load(&g_rows);
    uint32_t names = xsprof_name_count();
    for (uint32_t i = 0; rows && i < names && i < XSPROF_NAMES_MAX; i++) {
        uint64_t calls = atomic_load_explicit(&rows[i].calls, memory_order_relaxed);
        const xsprof_name_entry *e = xsprof_name_entry_get(i);
        if (!calls || !e)
            continue;
        if (*n < cap)
            out[*n] = (xsprof_summary_row){.name = e->str,
                                           .calls = calls,
                                           .total_ns = atomic_load_explicit(&rows[i].total, memory_order_relaxed),
                                           .self_ns = atomic_load_explicit(&rows[i].self, memory_order_relaxed),
                                           .max_ns = atomic_load_explicit(&rows[i].max, memory_order_relaxed)};
        (*n)++;
    }
    if (out)
        qsort(out, *n < cap ? *n : cap, sizeof *out, by_total);
    return *n > cap ? XSPROF_ERR_FULL : XSPROF_OK;
}

xsprof_status xsprof_summary_write(const char *path) {
    size_t n = 0;
    xsprof_summary_get(NULL, 0, &n);
    xsprof_summary_row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows)
        return XSPROF_ERR_NOMEM;
    xsprof_summary_get(rows, n, &n);
    FILE *f = path ? fopen(path, "w") : stderr;
    if (!f) {
        free(rows);
        return XSPROF_ERR_IO;
    }
    fprintf(f, "xsprof summary, rank %d: %zu region name%s\n", xsprof_identity_rank(), n, n == 1 ? "" : "s");
    fprintf(f, "%-40s %10s %12s %12s %12s %12s\n", "name", "calls", "total ms", "self ms", "mean us", "max us");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%-40.40s %10llu %12.3f %12.3f %12.3f %12.3f\n", rows[i].name, (unsigned long long)rows[i].calls,
                (double)rows[i].total_ns / 1e6, (double)rows[i].self_ns / 1e6,
                (double)rows[i].total_ns / 1e3 / (double)rows[i].calls, (double)rows[i].max_ns / 1e3);
    int bad = ferror(f);
    if (path)
        bad |= fclose(f);
    else
        fflush(f);
    free(rows);
    return bad ? XSPROF_ERR_IO : XSPROF_OK;
}

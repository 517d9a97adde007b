/* merge/read/stream_sortq.c — bounded reorder heap and outlier lists (see
 * internal.h). */
#include "merge/stream/internal.h"

#include <stdlib.h>
#include <string.h>

int xsm_sheap_init(xsm_sheap *h, size_t window, size_t size)
{
    memset(h, 0, sizeof *h);
    h->window = window ? window : 1;
    h->size = size;
    h->held = UINT32_MAX;
    size_t cap = h->window + 1;
    h->key = malloc(cap * sizeof *h->key);
    h->fkey = malloc(cap * sizeof *h->fkey);
    if (!h->key || !h->fkey)
        return -1;
    if (size) {
        h->slot = malloc(cap * sizeof *h->slot);
        h->fslot = malloc(cap * sizeof *h->fslot);
        /* one more slot than the heap holds: the released row stays in
         * its slot (no copy) until the next pop frees it */
        h->rows = malloc((cap + 1) * size);
        h->free_slots = malloc((cap + 1) * sizeof *h->free_slots);
        if (!h->slot || !h->fslot || !h->free_slots || !h->rows)
            return -1;
        for (size_t i = 0; i <= cap; i++)
            h->free_slots[h->nfree++] = (uint32_t)i;
    }
    return 0;
}

void xsm_sheap_free(xsm_sheap *h)
{
    free(h->key);
    free(h->fkey);
    free(h->slot);
    free(h->fslot);
    free(h->free_slots);
    free(h->rows);
    memset(h, 0, sizeof *h);
}

static void xsm_sheap_swap(xsm_sheap *h, size_t a, size_t b)
{
    xsm_skey k = h->key[a];
    h->key[a] = h->key[b];
    h->key[b] = k;
    if (h->slot) {
        uint32_t s = h->slot[a];
        h->slot[a] = h->slot[b];
        h->slot[b] = s;
    }
}

int xsm_sheap_push(xsm_sheap *h, const xsm_skey *k, const void *row)
{
    uint32_t s = 0;
    if (h->slot) {
        s = h->free_slots[--h->nfree];
        memcpy(h->rows + (size_t)s * h->size, row, h->size);
    }
    /* ring positions wrap by a compare, not a division per row */
    size_t cap = h->window + 1, tail = h->fhead + h->fn;
    if (tail >= cap)
        tail -= cap;
    h->n++;
    if (!h->fn || !xsm_skey_less(k, &h->fkey[tail ? tail - 1 : cap - 1])) {
        size_t at = tail;
        h->fn++;
        h->fkey[at] = *k;
        if (h->slot)
            h->fslot[at] = s;
        return h->n > h->window;
    }
    size_t i = h->hn++;
    h->key[i] = *k;
    if (h->slot)
        h->slot[i] = s;
    while (i && xsm_skey_less(&h->key[i], &h->key[(i - 1) / 2])) {
        xsm_sheap_swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    return h->n > h->window;
}

const void *xsm_sheap_pop(xsm_sheap *h, xsm_skey *k)
{
    int from_fifo = h->fn && !(h->hn && xsm_skey_less(&h->key[0], &h->fkey[h->fhead]));
    uint32_t s = 0;
    if (h->held != UINT32_MAX) { /* the previous release is no longer read */
        h->free_slots[h->nfree++] = h->held;
        h->held = UINT32_MAX;
    }
    h->n--;
    if (from_fifo) {
        *k = h->fkey[h->fhead];
        if (h->slot)
            s = h->fslot[h->fhead];
        h->fn--;
        /* emptied: start again at the front, so that a FIFO holding a few
         * rows at a time touches a few cache lines and pages, not its whole
         * ring of window + 1 keys */
        if (++h->fhead == h->window + 1 || !h->fn)
            h->fhead = 0;
    } else {
        *k = h->key[0];
        if (h->slot)
            s = h->slot[0];
        h->hn--;
        if (h->hn) {
            h->key[0] = h->key[h->hn];
            if (h->slot)
                h->slot[0] = h->slot[h->hn];
            size_t i = 0;
            for (;;) {
                size_t l = 2 * i + 1, m = i;
                if (l < h->hn && xsm_skey_less(&h->key[l], &h->key[m])) m = l;
                if (l + 1 < h->hn && xsm_skey_less(&h->key[l + 1], &h->key[m])) m = l + 1;
                if (m == i)
                    break;
                xsm_sheap_swap(h, i, m);
                i = m;
            }
        }
    }
    h->last = *k;
    h->released = 1;
    if (!h->slot)
        return NULL;
    h->held = s;
    return h->rows + (size_t)s * h->size;
}

int64_t *xsm_smin_new(uint64_t rows)
{
    size_t n = (size_t)(rows >> XSM_SMIN_SHIFT) + 2;
    int64_t *s = malloc(n * sizeof *s);
    for (size_t i = 0; s && i < n; i++)
        s[i] = INT64_MAX;
    return s;
}

void xsm_smin_finish(int64_t *smin, uint64_t rows)
{
    for (size_t b = (size_t)(rows >> XSM_SMIN_SHIFT) + 1; b-- > 0;)
        if (smin[b + 1] < smin[b])
            smin[b] = smin[b + 1];
}

int xsm_outl_add(xsm_outl *o, const xsm_skey *k, const void *row)
{
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 16;
        xsm_skey *key = realloc(o->key, cap * sizeof *key);
        if (!key)
            return -1;
        o->key = key;
        unsigned char *rows = realloc(o->rows, cap * (o->size ? o->size : 1));
        if (!rows)
            return -1;
        o->rows = rows;
        o->cap = cap;
    }
    o->key[o->n] = *k;
    if (o->size)
        memcpy(o->rows + o->n * o->size, row, o->size);
    o->n++;
    return 0;
}

static _Thread_local const xsm_outl *xsm_outl_sorting;

static int xsm_outl_cmp(const void *a, const void *b)
{
    const xsm_skey *x = &xsm_outl_sorting->key[*(const uint32_t *)a], *y = &xsm_outl_sorting->key[*(const uint32_t *)b];
    return xsm_skey_less(x, y) ? -1 : xsm_skey_less(y, x);
}

int xsm_outl_finish(xsm_outl *o)
{
    if (!o->n)
        return 0;
    uint32_t *idx = malloc(o->n * sizeof *idx);
    xsm_skey *key = malloc(o->n * sizeof *key);
    unsigned char *rows = malloc(o->n * (o->size ? o->size : 1));
    o->by_row = malloc(o->n * sizeof *o->by_row);
    if (!idx || !key || !rows || !o->by_row || o->n > UINT32_MAX) {
        free(idx);
        free(key);
        free(rows);
        return -1;
    }
    for (size_t i = 0; i < o->n; i++)
        idx[i] = (uint32_t)i;
    xsm_outl_sorting = o;
    qsort(idx, o->n, sizeof *idx, xsm_outl_cmp);
    for (size_t i = 0; i < o->n; i++) {
        key[i] = o->key[idx[i]];
        if (o->size)
            memcpy(rows + i * o->size, o->rows + (size_t)idx[i] * o->size, o->size);
        o->by_row[i] = key[i].row;
    }
    qsort(o->by_row, o->n, sizeof *o->by_row, xsm_u64_cmp);
    free(idx);
    free(o->key);
    free(o->rows);
    o->key = key;
    o->rows = rows;
    o->cap = o->n;
    return 0;
}

void xsm_outl_free(xsm_outl *o)
{
    free(o->key);
    free(o->rows);
    free(o->by_row);
    size_t size = o->size;
    memset(o, 0, sizeof *o);
    o->size = size;
}

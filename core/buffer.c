/* core/buffer.c — the collector-facing (hidden) buffer API of collector.h. */
#include <string.h>
#include "buffer.h"

static inline int state_allows_records(void) {
    int st = atomic_load_explicit(&xsprof_g.state, memory_order_acquire);
    return st == XSPROF_STATE_RUNNING || st == XSPROF_STATE_FINALIZING;
}

int xsprof_collecting(void) { return atomic_load_explicit(&xsprof_g.collecting, memory_order_relaxed); }

void *xsprof_buf_reserve(uint32_t size) {
    if (!atomic_load_explicit(&xsprof_g.collecting, memory_order_relaxed) || (size & 7))
        return NULL;
    xsprof_thread *t = xsprof_thread_get();
    return t ? xsprof_thread_reserve(t, size) : NULL;
}

void *xsprof_buf_reserve_def(uint32_t size) {
    if (!state_allows_records() || (size & 7))
        return NULL;
    xsprof_thread *t = xsprof_thread_get();
    return t ? xsprof_thread_reserve(t, size) : NULL;
}

void xsprof_buf_commit(void *rec) {
    xsprof_thread *t = xsprof_tls;
    if (t && rec)
        xsprof_thread_commit(t, rec);
}

xsprof_status xsprof_buf_append(const void *rec, uint32_t size, int is_definition) {
    if (!is_definition && !atomic_load_explicit(&xsprof_g.collecting, memory_order_relaxed))
        return XSPROF_ERR_DISABLED;
    uint32_t padded = xsprof_rec_size(size);
    void *p = is_definition ? xsprof_buf_reserve_def(padded) : xsprof_buf_reserve(padded);
    if (!p)
        return state_allows_records() ? XSPROF_ERR_FULL : XSPROF_ERR_STATE;
    memcpy(p, rec, size);
    if (padded > size)
        memset((char *)p + size, 0, padded - size);
    ((xsprof_rec_hdr *)p)->size = (uint16_t)padded;
    xsprof_buf_commit(p);
    return XSPROF_OK;
}

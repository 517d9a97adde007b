/* core/buffer.h — the inline fast path of the per-thread buffer: reserve
 * space at the thread's cursor, fill, commit with one release store. */
#ifndef XSPROF_CORE_BUFFER_H
#define XSPROF_CORE_BUFFER_H

#include <stdatomic.h>
#include "internal.h"

static inline void *xsprof_thread_reserve(xsprof_thread *t, uint32_t size) {
    /* Integer arithmetic: cur and end are NULL before the first chunk. */
    if (__builtin_expect((uintptr_t)t->end - (uintptr_t)t->cur >= size, 1))
        return t->cur;
    return xsprof_thread_reserve_slow(t, size);
}

static inline void xsprof_thread_commit(xsprof_thread *t, void *rec) {
    t->cur = (char *)rec + ((xsprof_rec_hdr *)rec)->size;
    atomic_store_explicit((_Atomic uint64_t *)&t->chunk->used, (uint64_t)(t->cur - (char *)(t->chunk + 1)),
                          memory_order_release);
}

#endif

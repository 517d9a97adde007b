/* core/buffer.c — the collector-facing (hidden) buffer API of collector.h.
 *
 * Definitions (thread names, metadata, ...) made before the first real
 * record wait in a pending list instead of creating the journal: a process
 * that only loads the library (mpirun or orted inheriting LD_PRELOAD, a
 * shell command) must leave no file behind, and must not take the rank
 * file name of the real rank. The list moves into the first chunk handed
 * out once the journal exists (xsprof_pending_drain), all of it into the
 * chunks of one thread: the reader walks chunks thread by thread, so a
 * list split between two threads' chunks could be read out of order (a
 * thread's older name after its newer one, a communicator's members before
 * its head). */
#include <stdlib.h>
#include <string.h>
#include "buffer.h"

typedef struct pending {
    struct pending *next;
    uint32_t size;
    uint32_t pad;
    _Alignas(8) char rec[];
} pending;

static pthread_mutex_t g_pend_lock = PTHREAD_MUTEX_INITIALIZER;
static pending *g_pend_head, **g_pend_tail = &g_pend_head;
static _Atomic int g_pend_count;

void xsprof_pending_drain(xsprof_thread *t) {
    if (!atomic_load_explicit(&g_pend_count, memory_order_acquire))
        return;
    pthread_mutex_lock(&g_pend_lock);
    while (g_pend_head) {
        /* The lock stays held across chunk changes, so no other thread
         * takes the list's rest. Without a spare the rest waits for the
         * next chunk handed out. Records are <= 4096 bytes: a fresh chunk
         * takes one. */
        if (t->cur + g_pend_head->size > t->end && xsprof_thread_chunk_next(t))
            break;
        pending *p = g_pend_head;
        memcpy(t->cur, p->rec, p->size);
        xsprof_thread_commit(t, t->cur);
        g_pend_head = p->next;
        if (!g_pend_head)
            g_pend_tail = &g_pend_head;
        atomic_fetch_sub(&g_pend_count, 1);
        free(p);
    }
    pthread_mutex_unlock(&g_pend_lock);
}

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
    if (!t)
        return NULL;
    if (!xsprof_journal_is_open()) {
        pending *p = malloc(sizeof *p + size);
        if (!p)
            return NULL;
        p->next = NULL;
        p->size = size;
        t->pending = p;
        return p->rec;
    }
    return xsprof_thread_reserve(t, size);
}

void xsprof_buf_commit(void *rec) {
    xsprof_thread *t = xsprof_tl_.thread;
    if (!t || !rec)
        return;
    pending *p = t->pending;
    if (__builtin_expect(p != NULL, 0) && rec == p->rec) {
        t->pending = NULL;
        pthread_mutex_lock(&g_pend_lock);
        *g_pend_tail = p;
        g_pend_tail = &p->next;
        atomic_fetch_add(&g_pend_count, 1);
        pthread_mutex_unlock(&g_pend_lock);
        /* The journal may have opened meanwhile: do not wait for the next chunk. */
        if (xsprof_journal_is_open() && t->chunk)
            xsprof_pending_drain(t);
        return;
    }
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

xsprof_status xsprof_buf_append_paused(const void *rec, uint32_t size) {
    if (atomic_load_explicit(&xsprof_g.collecting, memory_order_relaxed))
        return xsprof_buf_append(rec, size, 0);
    if (atomic_load_explicit(&xsprof_g.state, memory_order_acquire) != XSPROF_STATE_RUNNING || !xsprof_journal_is_open())
        return XSPROF_ERR_DISABLED;
    uint32_t padded = xsprof_rec_size(size);
    xsprof_thread *t = xsprof_thread_get();
    void *p = t ? xsprof_thread_reserve(t, padded) : NULL;
    if (!p)
        return XSPROF_ERR_FULL;
    memcpy(p, rec, size);
    if (padded > size)
        memset((char *)p + size, 0, padded - size);
    ((xsprof_rec_hdr *)p)->size = (uint16_t)padded;
    xsprof_buf_commit(p);
    return XSPROF_OK;
}

/* A communicator's definition: the first members in the COMM record, the
 * rest in COMM_MORE records appended right after it by the same thread, so
 * the reader finds them in sequence (definitions are never dropped). */
xsprof_status xsprof_comm_define(uint32_t id, const char *name, uint32_t parent, const int32_t *members,
                                 uint32_t n) {
    char buf[XSPROF_REC_MAX] __attribute__((aligned(8)));
    xsprof_rec_comm *r = (xsprof_rec_comm *)buf;
    uint32_t k = n < XSPROF_COMM_HEAD_MAX ? n : (uint32_t)XSPROF_COMM_HEAD_MAX;
    memset(r, 0, sizeof *r);
    r->h.type = XSPROF_REC_COMM;
    r->id = id;
    r->size = n;
    r->parent = parent;
    xsprof_string_intern(name ? name : "", &r->name);
    if (k)
        memcpy(r->members, members, (size_t)k * sizeof(int32_t));
    xsprof_status st = xsprof_buf_append(r, (uint32_t)(sizeof *r + k * sizeof(int32_t)), 1);
    for (uint32_t first = k; !st && first < n; first += (uint32_t)XSPROF_COMM_MORE_MAX) {
        xsprof_rec_comm_more *m = (xsprof_rec_comm_more *)buf;
        uint32_t cnt = n - first < XSPROF_COMM_MORE_MAX ? n - first : (uint32_t)XSPROF_COMM_MORE_MAX;
        m->h.type = XSPROF_REC_COMM_MORE;
        m->id = id;
        m->first = first;
        memcpy(m->members, members + first, (size_t)cnt * sizeof(int32_t));
        st = xsprof_buf_append(m, (uint32_t)(sizeof *m + cnt * sizeof(int32_t)), 1);
    }
    return st;
}

/* core/thread.c — per-thread state and buffers. A thread appends records to
 * its own chunk of the journal with no lock and no atomic read-modify-write:
 * one release store of `used` commits a record. Chunk changes (every
 * chunk_size bytes) take the journal lock once. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "buffer.h"
#include "clock.h"
#include "internal.h"

static pthread_key_t g_thread_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
/* States of threads that exited after finalize with their chunk still
 * published (under xsprof_g.lock): kept, as finalize may read the chunk
 * header through them, and kept reachable rather than dropped. */
static xsprof_thread *g_retired;

static void drops_publish(xsprof_thread *t) {
    uint64_t n = t->dropped - t->drops_published;
    if (!n)
        return;
    t->drops_published = t->dropped;
    xsprof_journal_count_drops(n);
}

static void thread_exit(void *arg) {
    xsprof_thread *t = arg;
    xsprof_tl_.thread = t; /* destructors run after the TLS pointer may be cleared */
    if (t->depth || xsprof_tl_.skip) {
        xsprof_anomaly("thread exited with open regions");
        t->depth = 0;
        xsprof_tl_.skip = 0;
    }
    xsprof_counters_thread_close(t);
    pthread_mutex_lock(&xsprof_g.lock);
    drops_publish(t);
    if (atomic_load(&xsprof_g.state) == XSPROF_STATE_RUNNING && t->chunk) {
        xsprof_journal_chunk_full(t->chunk);
        t->chunk = NULL;
        t->cur = t->end = NULL;
    }
    for (xsprof_thread **p = &xsprof_g.threads; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            break;
        }
    int keep = t->chunk != NULL;
    if (keep) {
        t->next = g_retired;
        g_retired = t;
    }
    pthread_mutex_unlock(&xsprof_g.lock);
    xsprof_tl_.thread = NULL;
    if (!keep)
        free(t);
}

static void key_create(void) { pthread_key_create(&g_thread_key, thread_exit); }

xsprof_thread *xsprof_thread_get(void) {
    xsprof_thread *t = xsprof_tl_.thread;
    if (t)
        return t;
    pthread_once(&g_key_once, key_create);
    t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->tid = atomic_fetch_add(&xsprof_g.next_tid, 1);
    t->os_tid = (int32_t)syscall(SYS_gettid);
    t->rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)t->tid << 32) ^ (uint64_t)xsprof_clock_raw();
    pthread_mutex_lock(&xsprof_g.lock);
    t->next = xsprof_g.threads;
    xsprof_g.threads = t;
    pthread_mutex_unlock(&xsprof_g.lock);
    pthread_setspecific(g_thread_key, t);
    xsprof_tl_.thread = t;
    char name[32];
    if (t->os_tid == (int32_t)getpid())
        snprintf(name, sizeof name, "main");
    else
        snprintf(name, sizeof name, "thread %u", t->tid);
    xsprof_thread_name(name);
    return t;
}

/* Close the thread's chunk (if any) and take a spare: 0, or -1 when none is
 * available (the caller counts the drop or keeps its records waiting). */
int xsprof_thread_chunk_next(xsprof_thread *t) {
    if (__builtin_expect(xsprof_log_in_handler(), 0))
        return -1; /* this thread may hold the journal lock (internal.h): a drop, counted */
    if (t->chunk) {
        xsprof_journal_chunk_full(t->chunk);
        t->chunk = NULL;
        t->cur = t->end = NULL;
        xsprof_clock_calibrate(); /* a busy thread need not wait for the writer's next tick */
    }
    xsprof_chunk_header *c = xsprof_journal_chunk_take(1);
    if (!c) {
        t->drop_gen = xsprof_journal_spare_gen();
        return -1;
    }
    c->tid = t->tid;
    c->seq = t->chunk_seq++;
    atomic_store_explicit((_Atomic uint64_t *)&c->used, 0, memory_order_relaxed);
    atomic_store_explicit((_Atomic uint32_t *)&c->state, XSPROF_CHUNK_ACTIVE, memory_order_release);
    t->chunk = c;
    t->cur = (char *)(c + 1);
    t->end = (char *)c + xsprof_journal_chunk_bytes();
    if (t->dropped) {
        drops_publish(t);
        /* Tell the reader how many records this thread lost before here. */
        xsprof_rec_drop *d = (xsprof_rec_drop *)t->cur;
        d->h.type = XSPROF_REC_DROP;
        d->h.size = sizeof *d;
        d->tid = t->tid;
        d->dropped = t->dropped;
        xsprof_thread_commit(t, d);
    }
    return 0;
}

/* The current chunk cannot take `size` more bytes: close it, take a spare.
 * Returns NULL (and counts a drop) when none is available. */
void *xsprof_thread_reserve_slow(xsprof_thread *t, uint32_t size) {
    if (size > 4096)
        return NULL;
    int st = atomic_load_explicit(&xsprof_g.state, memory_order_acquire);
    if (st != XSPROF_STATE_RUNNING && st != XSPROF_STATE_FINALIZING)
        return NULL;
    if (!t->chunk && t->dropped && t->drop_gen == xsprof_journal_spare_gen())
        goto drop; /* nothing new since the last failure: no lock */
    if (xsprof_thread_chunk_next(t))
        goto drop;
    xsprof_pending_drain(t);
    if (t->cur + size > t->end)
        return xsprof_thread_reserve_slow(t, size);
    return t->cur;
drop:
    /* Per-thread only: a shared counter here would make a full buffer
     * slower for every thread. Published to the header at chunk changes,
     * thread exit and finalize. */
    t->dropped++;
    return NULL;
}

/* Finalize: publish every thread's chunk as FULL. The mappings stay: a
 * thread may be between reserve and commit right now. */
void xsprof_threads_close_all(void) {
    pthread_mutex_lock(&xsprof_g.lock);
    for (xsprof_thread *t = xsprof_g.threads; t; t = t->next) {
        drops_publish(t);
        if (t->chunk)
            atomic_store_explicit((_Atomic uint32_t *)&t->chunk->state, XSPROF_CHUNK_FULL, memory_order_release);
    }
    pthread_mutex_unlock(&xsprof_g.lock);
}

uint32_t xsprof_thread_self(void) {
    xsprof_thread *t = xsprof_thread_get();
    return t ? t->tid : 0;
}

int xsprof_guard_enter(void) {
    xsprof_thread *t = xsprof_thread_get();
    if (!t || t->busy)
        return 0;
    t->busy = 1;
    return 1;
}

void xsprof_guard_leave(void) {
    xsprof_thread *t = xsprof_tl_.thread;
    if (t)
        t->busy = 0;
}

xsprof_status xsprof_thread_name(const char *name) {
    if (!name)
        return XSPROF_ERR_INVALID;
    xsprof_thread *t = xsprof_thread_get();
    if (!t)
        return XSPROF_ERR_NOMEM;
    xsprof_name_id id;
    xsprof_status st = xsprof_string_intern(name, &id);
    if (st)
        return st;
    xsprof_rec_thread r = {.h = {XSPROF_REC_THREAD, sizeof r}, .tid = t->tid, .os_tid = t->os_tid, .name = id};
    return xsprof_buf_append(&r, sizeof r, 1);
}

/* core/observer.c — begin/end callbacks with optional sampling.
 * Removal is safe while other threads record: each slot has an in-flight
 * count; remove() disables the slot and waits until no call is in flight,
 * so after it returns the callback never runs again and `user` may be freed. */
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include "internal.h"

typedef struct observer {
    _Atomic int enabled;
    _Atomic int inflight;
    _Atomic uint64_t generation; /* handle = generation << 8 | slot */
    xsprof_observer_fn on_begin, on_end;
    void *user;
    double rate;
    double log1mp;               /* log(1 - rate) for geometric skips */
    uint32_t owner_tid;          /* thread-local observers: the registering thread */
    int thread_local_only;
} observer;

static observer g_obs[XSPROF_MAX_OBSERVERS];
static __thread int tls_in_callback;

static inline uint64_t rng_next(xsprof_thread *t) {
    uint64_t x = t->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return t->rng = x;
}

/* Number of regions to let pass before the next sampled one: Geometric(p),
 * so each region is sampled independently with probability p. */
static int64_t geometric_skip(xsprof_thread *t, const observer *o) {
    if (o->rate >= 1.0)
        return 0;
    double u = ((double)(rng_next(t) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    return (int64_t)floor(log(u) / o->log1mp);
}

static inline int observer_enter(observer *o) {
    atomic_fetch_add_explicit(&o->inflight, 1, memory_order_acq_rel);
    if (atomic_load_explicit(&o->enabled, memory_order_acquire))
        return 1;
    atomic_fetch_sub_explicit(&o->inflight, 1, memory_order_release);
    return 0;
}

uint32_t xsprof_observers_begin(xsprof_thread *t, const char *name, uint32_t id, int depth, int64_t t0) {
    uint32_t sampled = 0;
    for (int i = 0; i < XSPROF_MAX_OBSERVERS; i++) {
        observer *o = &g_obs[i];
        if (!atomic_load_explicit(&o->enabled, memory_order_relaxed))
            continue;
        if (t->obs_skip[i] > 0) {
            t->obs_skip[i]--;
            continue;
        }
        /* The slot's fields may only be read once entered (acquire). */
        if (!observer_enter(o))
            continue;
        if (o->thread_local_only && o->owner_tid != t->tid) {
            atomic_fetch_sub_explicit(&o->inflight, 1, memory_order_release);
            continue;
        }
        t->obs_skip[i] = geometric_skip(t, o);
        sampled |= 1u << i;
        if (o->on_begin) {
            xsprof_region_info info = {name, id, depth, t->tid, t0, 0};
            tls_in_callback++;
            o->on_begin(&info, o->user);
            tls_in_callback--;
        }
        atomic_fetch_sub_explicit(&o->inflight, 1, memory_order_release);
    }
    return sampled;
}

void xsprof_observers_end(xsprof_thread *t, uint32_t sampled, const char *name, uint32_t id, int depth, int64_t t0,
                          int64_t t1) {
    for (int i = 0; i < XSPROF_MAX_OBSERVERS; i++) {
        if (!(sampled & (1u << i)))
            continue;
        observer *o = &g_obs[i];
        if (!observer_enter(o))
            continue;
        if (!o->on_end) {
            atomic_fetch_sub_explicit(&o->inflight, 1, memory_order_release);
            continue;
        }
        xsprof_region_info info = {name, id, depth, t->tid, t0, t1};
        tls_in_callback++;
        o->on_end(&info, o->user);
        tls_in_callback--;
        atomic_fetch_sub_explicit(&o->inflight, 1, memory_order_release);
    }
}

xsprof_status xsprof_observer_add(xsprof_observer_fn on_begin, xsprof_observer_fn on_end, void *user,
                                  double sample_rate, int thread_local_only, xsprof_observer_handle *handle) {
    if ((!on_begin && !on_end) || !handle || !(sample_rate > 0.0 && sample_rate <= 1.0))
        return XSPROF_ERR_INVALID;
    /* Only a thread-local observer needs the registering thread's state;
     * the others may be added before any thread records (a constructor). */
    xsprof_thread *t = thread_local_only ? xsprof_thread_get() : NULL;
    if (thread_local_only && !t)
        return XSPROF_ERR_NOMEM;
    pthread_mutex_lock(&xsprof_g.lock);
    xsprof_status st = XSPROF_ERR_NOMEM;
    for (int i = 0; i < XSPROF_MAX_OBSERVERS; i++) {
        observer *o = &g_obs[i];
        if (atomic_load(&o->enabled) || atomic_load(&o->inflight))
            continue;
        o->on_begin = on_begin;
        o->on_end = on_end;
        o->user = user;
        o->rate = sample_rate;
        o->log1mp = sample_rate < 1.0 ? log1p(-sample_rate) : 0;
        o->owner_tid = t ? t->tid : 0;
        o->thread_local_only = thread_local_only != 0;
        uint64_t gen = atomic_fetch_add(&o->generation, 1) + 1;
        atomic_store_explicit(&o->enabled, 1, memory_order_release);
        atomic_fetch_add(&xsprof_g.nobservers, 1);
        *handle = gen << 8 | (uint64_t)i;
        st = XSPROF_OK;
        break;
    }
    pthread_mutex_unlock(&xsprof_g.lock);
    return st;
}

xsprof_status xsprof_observer_remove(xsprof_observer_handle handle) {
    uint64_t i = handle & 0xff;
    if (i >= XSPROF_MAX_OBSERVERS)
        return XSPROF_ERR_INVALID;
    if (tls_in_callback)
        return XSPROF_ERR_STATE; /* waiting for ourselves would never end */
    observer *o = &g_obs[i];
    pthread_mutex_lock(&xsprof_g.lock);
    if (atomic_load(&o->generation) != handle >> 8 || !atomic_load(&o->enabled)) {
        pthread_mutex_unlock(&xsprof_g.lock);
        return XSPROF_ERR_INVALID;
    }
    atomic_store_explicit(&o->enabled, 0, memory_order_release);
    atomic_fetch_sub(&xsprof_g.nobservers, 1);
    pthread_mutex_unlock(&xsprof_g.lock);
    while (atomic_load_explicit(&o->inflight, memory_order_acquire))
        sched_yield();
    return XSPROF_OK;
}

/* core/region.c — the public recording API: regions, arguments, instants,
 * counter samples, memory events. A region begun while collection is off
 * or whose name is filtered out only counts in the thread's xsprof_skip_
 * (inline in the header, no call); the others get a frame on the thread's
 * stack that saves and clears that count, so ends always pair with their
 * begins however the session changes in between. A region is written
 * once, complete, when it ends. */
#include <string.h>
#include "buffer.h"
#include "clock.h"
#include "internal.h"

/* The default TLS model, so the library has no STATIC_TLS flag and loads
 * with dlopen. Programs reach xsprof_skip_ in one %fs-relative access (the
 * compiler or the linker gives them initial-exec) and hand its address to
 * the out-of-line halves below; elsewhere the library reaches its thread
 * state in one TLS descriptor call (-mtls-dialect=gnu2, CMakeLists.txt). */
__thread xsprof_tl xsprof_tl_;
extern __thread uint32_t xsprof_skip_ __attribute__((alias("xsprof_tl_")));

/* The caller's &xsprof_skip_ is this thread's xsprof_tl_ (its first member). */
static inline xsprof_tl *tl_from_skip(uint32_t *skip) { return (xsprof_tl *)(void *)skip; }

/* Out of line only when the inline check found collection on and the name
 * not filtered; everything that does not record ends up skipped. */
xsprof_status xsprof_region_begin_id_(xsprof_name_id id, uint32_t *skip_addr) {
    xsprof_tl *tl = tl_from_skip(skip_addr);
    const xsprof_name_entry *e = xsprof_name_entry_get(id & ~XSPROF_NAME_FILTERED_);
    if (__builtin_expect(!e || e->filtered || !atomic_load_explicit(&xsprof_g.collecting, memory_order_relaxed), 0)) {
        tl->skip++;
        return !e ? XSPROF_ERR_INVALID : e->filtered ? XSPROF_OK : XSPROF_ERR_DISABLED;
    }
    xsprof_thread *t = tl->thread;
    if (__builtin_expect(!t, 0) && !(t = xsprof_thread_get())) {
        tl->skip++;
        return XSPROF_ERR_NOMEM;
    }
    /* Samples need the journal, which a program without MPI_Init would
     * only create at its first completed region: the first region begun
     * creates it. */
    if (__builtin_expect(atomic_load_explicit(&xsprof_sample_wanted, memory_order_relaxed), 0) &&
        atomic_exchange(&xsprof_sample_wanted, 0))
        xsprof_recording_prepare();
    uint32_t d = t->depth;
    if (__builtin_expect(d >= XSPROF_MAX_DEPTH, 0)) {
        xsprof_anomaly("region nesting deeper than 256");
        tl->skip++;
        return XSPROF_ERR_INVALID;
    }
    xsprof_frame *f = &t->stack[d];
    t->depth = d + 1;
    /* Depth as the program nests, skipped regions included (what observers
     * and the trace have always seen), kept below the NVTX depths. */
    uint32_t skip = tl->skip;
    uint32_t pd = (d ? t->stack[d - 1].pdepth + 1 : 0) + skip;
    f->pdepth = pd < XSPROF_MAX_DEPTH ? pd : XSPROF_MAX_DEPTH - 1;
    f->saved_skip = skip;
    tl->skip = 0;
    f->name = e->id;
    f->nargs = 0;
    f->sampled = 0;
    f->child_ns = 0;
    if (atomic_load_explicit(&xsprof_g.nobservers, memory_order_relaxed))
        f->sampled = xsprof_observers_begin(t, e->str, e->id, (int)f->pdepth, xsprof_clock_read());
    if (xsprof_counters_active())
        xsprof_counters_read(t, f->counters);
    f->t_begin = xsprof_clock_read(); /* last: our own work stays outside the region */
    return XSPROF_OK;
}

xsprof_status xsprof_region_begin(const char *name) {
    xsprof_name_id id;
    xsprof_status st = xsprof_name_intern(name, &id);
    if (st) {
        xsprof_tl_.skip++; /* keep begin/end balanced even when the name is refused */
        return st;
    }
    return xsprof_region_begin_id(id);
}

/* The exported functions (dlsym, weak references, other languages): the
 * same as the inline versions C and C++ callers get through the macros. */
xsprof_status(xsprof_region_begin_id)(xsprof_name_id id) { return xsprof_region_begin_id_inline_(id); }
xsprof_status(xsprof_region_end)(void) { return xsprof_region_end_inline_(); }

/* Only reached when the thread has no skipped region open (inline check). */
xsprof_status xsprof_region_end_(uint32_t *skip_addr) {
    xsprof_tl *tl = tl_from_skip(skip_addr);
    xsprof_thread *t = tl->thread;
    if (__builtin_expect(!t || !t->depth, 0)) {
        xsprof_anomaly("region end without begin");
        return XSPROF_ERR_UNBALANCED;
    }
    uint32_t d = --t->depth;
    xsprof_frame *f = &t->stack[d];
    tl->skip = f->saved_skip;
    int64_t t1 = xsprof_clock_read();
    if (xsprof_counters_active())
        xsprof_counters_emit(t, f->counters, (uint16_t)f->pdepth);
    xsprof_rec_region *r = xsprof_thread_reserve(t, sizeof *r);
    if (__builtin_expect(r != NULL, 1)) {
        r->h.type = XSPROF_REC_REGION;
        r->h.size = sizeof *r;
        r->depth = (uint16_t)f->pdepth;
        r->category = XSPROF_CAT_USER;
        r->name = f->name;
        r->nargs = f->nargs;
        r->t_begin = f->t_begin;
        r->t_end = t1;
        xsprof_thread_commit(t, r);
    }
    if (__builtin_expect(atomic_load_explicit(&xsprof_summary_on, memory_order_relaxed), 0)) {
        int64_t dur = t1 - f->t_begin;
        xsprof_summary_add(f->name, dur, dur - f->child_ns);
        if (d)
            t->stack[d - 1].child_ns += dur;
    }
    if (__builtin_expect(f->sampled != 0, 0)) {
        const xsprof_name_entry *e = xsprof_name_entry_get(f->name);
        xsprof_observers_end(t, f->sampled, e ? e->str : "?", f->name, (int)f->pdepth, f->t_begin, t1);
    }
    if (__builtin_expect(xsprof_thresholds_active(), 0))
        xsprof_threshold_check(f->name, t1 - f->t_begin, t1);
    return r ? XSPROF_OK : XSPROF_ERR_FULL;
}

/* Arguments go to the innermost open region; written now, attached by the
 * reader to the next REGION record of the same depth. */
static xsprof_status arg_put(const char *key, xsprof_rec_arg *a) {
    xsprof_thread *t = xsprof_tl_.thread;
    if (!key)
        return XSPROF_ERR_INVALID;
    if (xsprof_tl_.skip)
        return XSPROF_ERR_DISABLED; /* the innermost open region is not recorded */
    if (!t || !t->depth) {
        /* a scope begun while collection is off leaves no frame and no
         * skip count: its arguments are not misuse */
        if (!atomic_load_explicit(&xsprof_g.collecting, memory_order_relaxed))
            return XSPROF_ERR_DISABLED;
        xsprof_anomaly("region argument outside a region");
        return XSPROF_ERR_STATE;
    }
    xsprof_frame *f = &t->stack[t->depth - 1];
    xsprof_status st = xsprof_string_intern(key, &a->key);
    if (st)
        return st;
    a->h.type = XSPROF_REC_ARG;
    a->h.size = xsprof_rec_size(sizeof *a);
    a->depth = (uint16_t)f->pdepth;
    void *p = xsprof_thread_reserve(t, a->h.size);
    if (!p)
        return XSPROF_ERR_FULL;
    memcpy(p, a, sizeof *a);
    xsprof_thread_commit(t, p);
    f->nargs++;
    return XSPROF_OK;
}

xsprof_status xsprof_region_arg_int(const char *key, int64_t value) {
    xsprof_rec_arg a = {.kind = XSPROF_ARG_INT, .v.i = value};
    return arg_put(key, &a);
}

xsprof_status xsprof_region_arg_double(const char *key, double value) {
    xsprof_rec_arg a = {.kind = XSPROF_ARG_DOUBLE, .v.d = value};
    return arg_put(key, &a);
}

xsprof_status xsprof_region_arg_string(const char *key, const char *value) {
    if (!value)
        return XSPROF_ERR_INVALID;
    xsprof_rec_arg a = {.kind = XSPROF_ARG_STRING};
    xsprof_status st = xsprof_string_intern(value, &a.v.s);
    return st ? st : arg_put(key, &a);
}

xsprof_status xsprof_region_arg_shape(const char *key, const int64_t *dims, int ndims) {
    if (!dims || ndims < 0 || ndims > XSPROF_ARG_SHAPE_MAX)
        return XSPROF_ERR_INVALID;
    xsprof_rec_arg a = {.kind = XSPROF_ARG_SHAPE, .ndims = (uint32_t)ndims};
    memcpy(a.v.dims, dims, sizeof(int64_t) * (size_t)ndims);
    return arg_put(key, &a);
}

/* Scope macros, past the inline check: a dynamic name, or a site not (yet)
 * filled for this constant. The token says whether this scope began a
 * region (0 when the inline check found collection off). */
int xsprof_scope_enter_(xsprof_site_ *site, const char *name, int kind) {
    const char *key = name; /* what the site's fast path compares */
    char qualified[XSPROF_NAME_MAX + 1];
    if (kind == XSPROF_SITE_FUNCTION_ && name) {
        xsprof_funcname_compact(name, qualified, sizeof qualified);
        name = qualified;
    }
    xsprof_name_id id;
    if (xsprof_name_intern(name, &id) != XSPROF_OK) {
        xsprof_region_begin(name); /* refused: counted as skipped */
        return 1;
    }
    /* The first constant a site sees fills it, once: claimed with a CAS so
     * that the pointer published is always the one the id was made for. */
    static const char claimed;
    const char *expect = NULL;
    if (kind != XSPROF_SITE_DYNAMIC_ &&
        __atomic_compare_exchange_n(&site->name, &expect, &claimed, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        site->id = id;
        __atomic_store_n(&site->name, key, __ATOMIC_RELEASE);
    }
    xsprof_region_begin_id(id);
    return 1;
}

void xsprof_scope_cleanup_(int *token) {
    if (*token)
        xsprof_region_end();
}

xsprof_status xsprof_instant(const char *name) {
    if (!atomic_load_explicit(&xsprof_g.collecting, memory_order_relaxed))
        return XSPROF_ERR_DISABLED;
    xsprof_rec_instant r = {.h = {XSPROF_REC_INSTANT, sizeof r}, .t = xsprof_clock_read()};
    xsprof_status st = xsprof_string_intern(name, &r.name);
    return st ? st : xsprof_buf_append(&r, sizeof r, 0);
}

xsprof_status xsprof_counter_set(const char *name, double value) {
    if (!atomic_load_explicit(&xsprof_g.collecting, memory_order_relaxed))
        return XSPROF_ERR_DISABLED;
    xsprof_rec_counter r = {.h = {XSPROF_REC_COUNTER, sizeof r}, .t = xsprof_clock_read(), .value = value};
    xsprof_status st = xsprof_string_intern(name, &r.name);
    return st ? st : xsprof_buf_append(&r, sizeof r, 0);
}

/* A memory event is kept while the session is paused too, flagged (the
 * high-water mark and leak candidates cover the whole run; only the
 * timeline follows the schedule, issue 38). */
static xsprof_status mem_event(uint16_t kind, const void *ptr, uint64_t size, int device) {
    if (device < -1 || device > 32767)
        return XSPROF_ERR_INVALID;
    int on = atomic_load_explicit(&xsprof_g.collecting, memory_order_relaxed);
    xsprof_rec_mem r = {.h = {XSPROF_REC_MEM, sizeof r}, .kind = (uint16_t)(on ? kind : kind | XSPROF_MEM_F_PAUSED),
                        .device = (int16_t)device, .t = xsprof_clock_read(), .ptr = (uint64_t)(uintptr_t)ptr,
                        .size = size};
    xsprof_status st = xsprof_buf_append_paused(&r, sizeof r);
    uint32_t stack = st == XSPROF_OK && kind == XSPROF_MEM_ALLOC ? xsprof_memstack_capture(size) : 0;
    if (stack) {
        xsprof_rec_alloc_stack a = {.h = {XSPROF_REC_ALLOC_STACK, sizeof a}, .stack = stack, .t = r.t, .ptr = r.ptr};
        st = xsprof_buf_append_paused(&a, sizeof a);
    }
    return st;
}

xsprof_status xsprof_mem_alloc(const void *ptr, uint64_t size, int device) {
    return ptr ? mem_event(XSPROF_MEM_ALLOC, ptr, size, device) : XSPROF_ERR_INVALID;
}

xsprof_status xsprof_mem_free(const void *ptr, int device) {
    return ptr ? mem_event(XSPROF_MEM_FREE, ptr, 0, device) : XSPROF_ERR_INVALID;
}

/* gpu/nvtx.c — xsprof as an NVTX injection library. The application's NVTX
 * calls (header-only NVTX 3) land here once NVTX_INJECTION64_PATH names
 * libxsprof: ranges become regions of category XSPROF_CAT_NVTX, marks
 * become instants, domains and categories become region args. */
#include "gpu/gpu.h"

#if XSPROF_HAVE_NVTX

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wchar.h>

#define XSPROF_NVTX_STACK 128
#define XSPROF_NVTX_DOMAINS 256
#define XSPROF_NVTX_CATEGORIES 1024
#define XSPROF_NVTX_OPEN 4096
#define XSPROF_NVTX_PENDING_NAMES 64
#define XSPROF_NVTX_MAX_ARGS 5

/* What an event attribute (or a plain message) carries. */
typedef struct xsprof_nvtx_event {
    uint32_t name;
    uint32_t domain;   /* index into g_domains, 0 = default domain */
    uint32_t category; /* NVTX category, 0 = none */
    int payload_kind;  /* 0 none, XSPROF_ARG_INT, XSPROF_ARG_DOUBLE, XSPROF_ARG_STRING */
    int64_t payload_i;
    uint32_t payload_s; /* string id: an unsigned 64-bit payload past INT64_MAX */
    double payload_d;
    int64_t t_begin;
} xsprof_nvtx_event;

typedef struct xsprof_nvtx_open {
    uint64_t id; /* 0 = free slot */
    xsprof_nvtx_event ev;
    uint32_t thread;
} xsprof_nvtx_open;

/* The stack is on the heap, allocated at a thread's first push and freed at
 * its exit: a 6 KB thread-local array made the library's TLS block too
 * large for glibc's static TLS surplus, so dlopen failed. */
static _Thread_local xsprof_nvtx_event *t_stack;
static _Thread_local int t_depth;
static _Thread_local int t_overflow; /* pushes beyond the stack, popped without a record */
static _Thread_local int t_os_tid;

/* How many pushes each thread holds open, where finalize can read them:
 * the stacks are thread-local, and a thread that ended (or still runs)
 * while holding ranges must not make them vanish. One entry per thread that
 * ever pushed, never freed (a thread's is read after it ended). */
typedef struct xsprof_nvtx_tdepth {
    atomic_int open;
    struct xsprof_nvtx_tdepth *next;
} xsprof_nvtx_tdepth;
static _Thread_local xsprof_nvtx_tdepth *t_tdepth;
static _Atomic(xsprof_nvtx_tdepth *) g_tdepths;

static void xsprof_nvtx_tdepth_set(int open)
{
    if (!t_tdepth) {
        xsprof_nvtx_tdepth *e = calloc(1, sizeof *e);
        if (!e)
            return; /* this thread's open ranges go uncounted */
        e->next = atomic_load(&g_tdepths);
        while (!atomic_compare_exchange_weak(&g_tdepths, &e->next, e))
            ;
        t_tdepth = e;
    }
    atomic_store_explicit(&t_tdepth->open, open, memory_order_relaxed);
}

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t g_domain_name[XSPROF_NVTX_DOMAINS]; /* string ids; slot 0 = default domain */
static atomic_uint g_ndomains = 1;
static struct {
    uint32_t domain, category, name;
    int used;
} g_categories[XSPROF_NVTX_CATEGORIES];
static xsprof_nvtx_open g_open[XSPROF_NVTX_OPEN];
static atomic_uint_fast64_t g_next_range = 1;
static struct {
    int os_tid; /* 0 = free */
    char name[64];
} g_pending[XSPROF_NVTX_PENDING_NAMES];
static atomic_int g_npending;
static uint32_t g_key_domain, g_key_category, g_key_payload, g_key_range, g_key_thread;
static uint32_t g_own_domain = UINT32_MAX; /* the name "xsprof" (nvtx_emit.c's domain) */
static pthread_once_t g_keys_once = PTHREAD_ONCE_INIT;

static void xsprof_nvtx_keys(void)
{
    xsprof_string_intern("domain", &g_key_domain);
    xsprof_string_intern("category", &g_key_category);
    xsprof_string_intern("payload", &g_key_payload);
    xsprof_string_intern("nvtx_range_id", &g_key_range);
    xsprof_string_intern("start_thread", &g_key_thread);
    xsprof_string_intern("xsprof", &g_own_domain);
}

static int xsprof_nvtx_os_tid(void)
{
    if (!t_os_tid)
        t_os_tid = (int)syscall(SYS_gettid);
    return t_os_tid;
}

/* nvtxNameOsThread may name another thread: apply it when that thread
 * next reaches NVTX, since core names only the calling thread. */
static void xsprof_nvtx_pending_apply(void)
{
    if (!atomic_load_explicit(&g_npending, memory_order_relaxed))
        return;
    int me = xsprof_nvtx_os_tid();
    char name[64] = "";
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < XSPROF_NVTX_PENDING_NAMES; i++) {
        if (g_pending[i].os_tid == me) {
            memcpy(name, g_pending[i].name, sizeof name);
            g_pending[i].os_tid = 0;
            atomic_fetch_sub(&g_npending, 1);
        }
    }
    pthread_mutex_unlock(&g_lock);
    if (name[0])
        xsprof_thread_name(name);
}

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlong forms,
 * no surrogates, nothing past U+10FFFF), 0 when p does not start one. */
static size_t xsprof_nvtx_utf8_seq(const unsigned char *p)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    unsigned char lo = 0x80, hi = 0xBF;
    size_t n;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

/* Copy `in` into out[len] as valid UTF-8: every byte that does not begin a
 * valid sequence becomes U+FFFD, and a name too long for `out` is cut
 * between characters, never inside one. The trace formats (JSON, Perfetto
 * strings) require UTF-8, and NVTX takes any bytes. */
static void xsprof_nvtx_utf8_clean(const char *in, char *out, size_t len)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p;) {
        size_t n = xsprof_nvtx_utf8_seq(p);
        const char *src = n ? (const char *)p : "\xEF\xBF\xBD";
        size_t w = n ? n : 3;
        if (o + w >= len)
            break;
        memcpy(out + o, src, w);
        o += w;
        p += n ? n : 1;
    }
    out[o] = '\0';
}

/* Linux wchar_t is UTF-32: encode to UTF-8 without depending on the locale;
 * surrogates and values past U+10FFFF become U+FFFD. */
static void xsprof_nvtx_utf8(const wchar_t *w, char *out, size_t len)
{
    size_t o = 0;
    for (; w && *w && o + 5 < len; w++) {
        uint32_t c = (uint32_t)*w;
        if ((c >= 0xD800 && c <= 0xDFFF) || c >= 0x110000)
            c = 0xFFFD;
        if (c < 0x80) {
            out[o++] = (char)c;
        } else if (c < 0x800) {
            out[o++] = (char)(0xC0 | (c >> 6));
            out[o++] = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            out[o++] = (char)(0xE0 | (c >> 12));
            out[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
            out[o++] = (char)(0x80 | (c & 0x3F));
        } else {
            out[o++] = (char)(0xF0 | (c >> 18));
            out[o++] = (char)(0x80 | ((c >> 12) & 0x3F));
            out[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
            out[o++] = (char)(0x80 | (c & 0x3F));
        }
    }
    out[o] = '\0';
}

static uint32_t xsprof_nvtx_intern(const char *s)
{
    xsprof_name_id id = 0;
    char clean[XSPROF_NAME_MAX + 1];
    xsprof_nvtx_utf8_clean(s && *s ? s : "(unnamed)", clean, sizeof clean);
    xsprof_string_intern(clean, &id);
    return id;
}

static uint32_t xsprof_nvtx_intern_w(const wchar_t *w)
{
    char buf[XSPROF_NAME_MAX + 1];
    xsprof_nvtx_utf8(w, buf, sizeof buf);
    return xsprof_nvtx_intern(buf);
}

/* Registered strings and domains are handed out as small integers + 1:
 * NVTX treats handles as opaque and never dereferences them. */
static uint32_t xsprof_nvtx_domain_index(nvtxDomainHandle_t d)
{
    uintptr_t i = (uintptr_t)d;
    return i < atomic_load(&g_ndomains) ? (uint32_t)i : 0;
}

static void xsprof_nvtx_event_from_attr(const nvtxEventAttributes_t *a, uint32_t domain, xsprof_nvtx_event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->domain = domain;
    if (!a) {
        ev->name = xsprof_nvtx_intern(NULL);
        return;
    }
    ev->category = a->category;
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: ev->name = xsprof_nvtx_intern(a->message.ascii); break;
    case NVTX_MESSAGE_TYPE_UNICODE: ev->name = xsprof_nvtx_intern_w(a->message.unicode); break;
    case NVTX_MESSAGE_TYPE_REGISTERED:
        ev->name = a->message.registered ? (uint32_t)((uintptr_t)a->message.registered - 1) : xsprof_nvtx_intern(NULL);
        break;
    default: ev->name = xsprof_nvtx_intern(NULL); break;
    }
    switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
        if (a->payload.ullValue <= INT64_MAX) {
            ev->payload_kind = XSPROF_ARG_INT;
            ev->payload_i = (int64_t)a->payload.ullValue;
        } else { /* past int64 args: exact in decimal rather than negative */
            char num[24];
            snprintf(num, sizeof num, "%llu", (unsigned long long)a->payload.ullValue);
            ev->payload_kind = XSPROF_ARG_STRING;
            ev->payload_s = xsprof_nvtx_intern(num);
        }
        break;
    case NVTX_PAYLOAD_TYPE_INT64:
        ev->payload_kind = XSPROF_ARG_INT;
        ev->payload_i = a->payload.llValue;
        break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
        ev->payload_kind = XSPROF_ARG_INT;
        ev->payload_i = a->payload.uiValue;
        break;
    case NVTX_PAYLOAD_TYPE_INT32:
        ev->payload_kind = XSPROF_ARG_INT;
        ev->payload_i = a->payload.iValue;
        break;
    case NVTX_PAYLOAD_TYPE_DOUBLE:
        ev->payload_kind = XSPROF_ARG_DOUBLE;
        ev->payload_d = a->payload.dValue;
        break;
    case NVTX_PAYLOAD_TYPE_FLOAT:
        ev->payload_kind = XSPROF_ARG_DOUBLE;
        ev->payload_d = a->payload.fValue;
        break;
    default: break;
    }
}

static uint32_t xsprof_nvtx_category_name(uint32_t domain, uint32_t category)
{
    uint32_t name = UINT32_MAX;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < XSPROF_NVTX_CATEGORIES && g_categories[i].used; i++)
        if (g_categories[i].domain == domain && g_categories[i].category == category)
            name = g_categories[i].name;
    pthread_mutex_unlock(&g_lock);
    if (name == UINT32_MAX) {
        char num[16];
        snprintf(num, sizeof num, "%u", category);
        name = xsprof_nvtx_intern(num);
    }
    return name;
}

static void xsprof_nvtx_arg(xsprof_rec_arg *a, uint32_t key, uint16_t kind, uint16_t depth)
{
    memset(a, 0, sizeof *a);
    a->h.type = XSPROF_REC_ARG;
    a->h.size = xsprof_rec_size(sizeof *a);
    a->key = key;
    a->kind = kind;
    a->depth = depth;
}

/* Args first (the reader attaches pending args of the same depth to the
 * next region), then the region, all in one chunk. */
static void xsprof_nvtx_region_write(const xsprof_nvtx_event *ev, uint16_t depth, const uint64_t *range_id,
                                     uint32_t start_thread, int64_t t_end)
{
    xsprof_rec_arg args[XSPROF_NVTX_MAX_ARGS];
    uint32_t n = 0;
    pthread_once(&g_keys_once, xsprof_nvtx_keys);
    if (ev->domain) {
        xsprof_nvtx_arg(&args[n], g_key_domain, XSPROF_ARG_STRING, depth);
        args[n++].v.s = g_domain_name[ev->domain];
    }
    if (ev->category) {
        xsprof_nvtx_arg(&args[n], g_key_category, XSPROF_ARG_STRING, depth);
        args[n++].v.s = xsprof_nvtx_category_name(ev->domain, ev->category);
    }
    if (ev->payload_kind == XSPROF_ARG_INT) {
        xsprof_nvtx_arg(&args[n], g_key_payload, XSPROF_ARG_INT, depth);
        args[n++].v.i = ev->payload_i;
    } else if (ev->payload_kind == XSPROF_ARG_DOUBLE) {
        xsprof_nvtx_arg(&args[n], g_key_payload, XSPROF_ARG_DOUBLE, depth);
        args[n++].v.d = ev->payload_d;
    } else if (ev->payload_kind == XSPROF_ARG_STRING) {
        xsprof_nvtx_arg(&args[n], g_key_payload, XSPROF_ARG_STRING, depth);
        args[n++].v.s = ev->payload_s;
    }
    if (range_id) {
        xsprof_nvtx_arg(&args[n], g_key_range, XSPROF_ARG_INT, depth);
        args[n++].v.i = (int64_t)*range_id;
        xsprof_nvtx_arg(&args[n], g_key_thread, XSPROF_ARG_INT, depth);
        args[n++].v.i = start_thread;
    }
    uint32_t region_size = xsprof_rec_size(sizeof(xsprof_rec_region));
    uint32_t arg_size = xsprof_rec_size(sizeof(xsprof_rec_arg));
    /* Reserving the whole group first (not committed) makes room for all
     * of it in the current chunk, so the per-record reserves below succeed. */
    if (!xsprof_buf_reserve(n * arg_size + region_size))
        return;
    for (uint32_t i = 0; i < n; i++) {
        void *p = xsprof_buf_reserve(arg_size);
        if (!p)
            return;
        memcpy(p, &args[i], sizeof args[i]);
        xsprof_buf_commit(p);
    }
    xsprof_rec_region *r = xsprof_buf_reserve(region_size);
    if (!r)
        return;
    memset(r, 0, sizeof *r);
    r->h.type = XSPROF_REC_REGION;
    r->h.size = (uint16_t)region_size;
    r->depth = depth;
    r->category = XSPROF_CAT_NVTX;
    r->name = ev->name;
    r->nargs = n;
    r->t_begin = ev->t_begin;
    r->t_end = t_end;
    xsprof_buf_commit(r);
}

/* Marks are instants; a mark of a named domain becomes a zero-length region
 * at the current depth instead, because instants carry no domain arg. */
static void xsprof_nvtx_mark_write(xsprof_nvtx_event *ev, int depth)
{
    if (ev->domain) {
        ev->t_begin = xsprof_clock_now();
        xsprof_nvtx_region_write(ev, (uint16_t)(XSPROF_NVTX_DEPTH_BASE + depth), NULL, 0, ev->t_begin);
        return;
    }
    xsprof_rec_instant *r = xsprof_buf_reserve(xsprof_rec_size(sizeof *r));
    if (!r)
        return;
    memset(r, 0, sizeof *r);
    r->h.type = XSPROF_REC_INSTANT;
    r->h.size = xsprof_rec_size(sizeof *r);
    r->name = ev->name;
    r->t = xsprof_clock_now();
    xsprof_buf_commit(r);
}

/* ---- push/pop ---------------------------------------------------------- */

static pthread_key_t g_stack_key;
static pthread_once_t g_stack_once = PTHREAD_ONCE_INIT;
static int g_stack_key_ok;

/* At thread exit the ranges still pushed can no longer be popped with a
 * record; a later pop (another destructor) pairs as an overflow one. */
static void xsprof_nvtx_stack_free(void *stack)
{
    free(stack);
    t_stack = NULL;
    t_overflow += t_depth;
    t_depth = 0;
}

static void xsprof_nvtx_stack_key(void) { g_stack_key_ok = pthread_key_create(&g_stack_key, xsprof_nvtx_stack_free) == 0; }

static int xsprof_nvtx_stack_get(void)
{
    if (t_stack)
        return 1;
    pthread_once(&g_stack_once, xsprof_nvtx_stack_key);
    if (!g_stack_key_ok || !(t_stack = calloc(XSPROF_NVTX_STACK, sizeof *t_stack)))
        return 0;
    pthread_setspecific(g_stack_key, t_stack);
    return 1;
}

static int xsprof_nvtx_push(const xsprof_nvtx_event *ev)
{
    int depth = t_depth + t_overflow;
    if (t_depth >= XSPROF_NVTX_STACK || !xsprof_nvtx_stack_get()) {
        t_overflow++;
        xsprof_nvtx_tdepth_set(t_depth + t_overflow);
        xsprof_anomaly(t_depth >= XSPROF_NVTX_STACK ? "nvtx push deeper than 128 levels"
                                                   : "nvtx push without memory for the thread's stack");
        return depth;
    }
    t_stack[t_depth] = *ev;
    t_stack[t_depth].t_begin = xsprof_clock_now();
    t_depth++;
    xsprof_nvtx_tdepth_set(t_depth + t_overflow);
    return depth;
}

/* Pops the innermost range of `domain`: NVTX keeps one stack per domain. */
static int xsprof_nvtx_pop(uint32_t domain)
{
    if (t_overflow) {
        t_overflow--;
        xsprof_nvtx_tdepth_set(t_depth + t_overflow);
        return t_depth + t_overflow;
    }
    int i = t_depth - 1;
    while (i >= 0 && t_stack[i].domain != domain)
        i--;
    if (i < 0) {
        xsprof_anomaly("nvtxRangePop without a matching push");
        return -1;
    }
    xsprof_nvtx_region_write(&t_stack[i], (uint16_t)(XSPROF_NVTX_DEPTH_BASE + i), NULL, 0, xsprof_clock_now());
    memmove(&t_stack[i], &t_stack[i + 1], (size_t)(t_depth - 1 - i) * sizeof t_stack[0]);
    t_depth--;
    xsprof_nvtx_tdepth_set(t_depth);
    return i;
}

/* ---- start/end: may cross threads, so they live in a shared table ----- */

static nvtxRangeId_t xsprof_nvtx_start(const xsprof_nvtx_event *ev)
{
    uint64_t id = atomic_fetch_add(&g_next_range, 1);
    int stored = 0;
    pthread_mutex_lock(&g_lock);
    for (uint32_t i = 0; i < XSPROF_NVTX_OPEN && !stored; i++) {
        xsprof_nvtx_open *o = &g_open[(id + i) % XSPROF_NVTX_OPEN];
        if (!o->id) {
            o->id = id;
            o->ev = *ev;
            o->ev.t_begin = xsprof_clock_now();
            o->thread = xsprof_thread_self();
            stored = 1;
        }
    }
    pthread_mutex_unlock(&g_lock);
    if (!stored)
        xsprof_anomaly("more than 4096 NVTX start/end ranges open");
    return id;
}

static void xsprof_nvtx_end(nvtxRangeId_t id)
{
    xsprof_nvtx_open found;
    int ok = 0;
    pthread_mutex_lock(&g_lock);
    for (uint32_t i = 0; i < XSPROF_NVTX_OPEN && id; i++) {
        xsprof_nvtx_open *o = &g_open[(id + i) % XSPROF_NVTX_OPEN];
        if (o->id == id) {
            found = *o;
            o->id = 0;
            ok = 1;
            break;
        }
    }
    pthread_mutex_unlock(&g_lock);
    if (!ok) {
        xsprof_anomaly("nvtxRangeEnd of an unknown range id");
        return;
    }
    uint64_t rid = found.id;
    xsprof_nvtx_region_write(&found.ev, XSPROF_NVTX_DEPTH_ASYNC, &rid, found.thread, xsprof_clock_now());
}

/* ---- NVTX callbacks ------------------------------------------------------ */

/* Every callback keeps the application's errno and first applies a thread
 * name another thread gave this one. */
static inline int xsprof_nvtx_enter(void)
{
    int saved = errno;
    xsprof_nvtx_pending_apply();
    return saved;
}

static void xsprof_nvtx_simple(xsprof_nvtx_event *ev, uint32_t name)
{
    memset(ev, 0, sizeof *ev);
    ev->name = name;
}

static void NVTX_API xsprof_nvtx_mark_ex(const nvtxEventAttributes_t *a)
{
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_event ev;
    xsprof_nvtx_event_from_attr(a, 0, &ev);
    xsprof_nvtx_mark_write(&ev, t_depth);
    errno = saved_errno;
}

static void NVTX_API xsprof_nvtx_mark_a(const char *msg)
{
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_event ev;
    xsprof_nvtx_simple(&ev, xsprof_nvtx_intern(msg));
    xsprof_nvtx_mark_write(&ev, t_depth);
    errno = saved_errno;
}

static void NVTX_API xsprof_nvtx_mark_w(const wchar_t *msg)
{
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_event ev;
    xsprof_nvtx_simple(&ev, xsprof_nvtx_intern_w(msg));
    xsprof_nvtx_mark_write(&ev, t_depth);
    errno = saved_errno;
}

static nvtxRangeId_t NVTX_API xsprof_nvtx_start_ex(const nvtxEventAttributes_t *a)
{
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_event ev;
    xsprof_nvtx_event_from_attr(a, 0, &ev);
    nvtxRangeId_t id = xsprof_nvtx_start(&ev);
    errno = saved_errno;
    return id;
}

static nvtxRangeId_t NVTX_API xsprof_nvtx_start_a(const char *msg)
{
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_event ev;
    xsprof_nvtx_simple(&ev, xsprof_nvtx_intern(msg));
    nvtxRangeId_t id = xsprof_nvtx_start(&ev);
    errno = saved_errno;
    return id;
}

static nvtxRangeId_t NVTX_API xsprof_nvtx_start_w(const wchar_t *msg)
{
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_event ev;
    xsprof_nvtx_simple(&ev, xsprof_nvtx_intern_w(msg));
    nvtxRangeId_t id = xsprof_nvtx_start(&ev);
    errno = saved_errno;
    return id;
}

static void NVTX_API xsprof_nvtx_end_cb(nvtxRangeId_t id)
{
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_end(id);
    errno = saved_errno;
}

static int NVTX_API xsprof_nvtx_push_ex(const nvtxEventAttributes_t *a)
{
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_event ev;
    xsprof_nvtx_event_from_attr(a, 0, &ev);
    int d = xsprof_nvtx_push(&ev);
    errno = saved_errno;
    return d;
}

static int NVTX_API xsprof_nvtx_push_a(const char *msg)
{
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_event ev;
    xsprof_nvtx_simple(&ev, xsprof_nvtx_intern(msg));
    int d = xsprof_nvtx_push(&ev);
    errno = saved_errno;
    return d;
}

static int NVTX_API xsprof_nvtx_push_w(const wchar_t *msg)
{
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_event ev;
    xsprof_nvtx_simple(&ev, xsprof_nvtx_intern_w(msg));
    int d = xsprof_nvtx_push(&ev);
    errno = saved_errno;
    return d;
}

static int NVTX_API xsprof_nvtx_pop_cb(void)
{
    int saved_errno = xsprof_nvtx_enter();
    int d = xsprof_nvtx_pop(0);
    errno = saved_errno;
    return d;
}

static void xsprof_nvtx_category_set(uint32_t domain, uint32_t category, uint32_t name)
{
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < XSPROF_NVTX_CATEGORIES; i++) {
        if (!g_categories[i].used || (g_categories[i].domain == domain && g_categories[i].category == category)) {
            g_categories[i].domain = domain;
            g_categories[i].category = category;
            g_categories[i].name = name;
            g_categories[i].used = 1;
            break;
        }
    }
    pthread_mutex_unlock(&g_lock);
}

static void NVTX_API xsprof_nvtx_name_category_a(uint32_t category, const char *name)
{
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_category_set(0, category, xsprof_nvtx_intern(name));
    errno = saved_errno;
}

static void NVTX_API xsprof_nvtx_name_category_w(uint32_t category, const wchar_t *name)
{
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_category_set(0, category, xsprof_nvtx_intern_w(name));
    errno = saved_errno;
}

static void xsprof_nvtx_name_thread(uint32_t os_tid, const char *raw)
{
    char name[sizeof g_pending[0].name];
    xsprof_nvtx_utf8_clean(raw ? raw : "", name, sizeof name);
    if ((int)os_tid == xsprof_nvtx_os_tid()) {
        xsprof_thread_name(name);
        return;
    }
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < XSPROF_NVTX_PENDING_NAMES; i++) {
        if (!g_pending[i].os_tid || g_pending[i].os_tid == (int)os_tid) {
            if (!g_pending[i].os_tid)
                atomic_fetch_add(&g_npending, 1);
            g_pending[i].os_tid = (int)os_tid;
            memcpy(g_pending[i].name, name, sizeof name);
            break;
        }
    }
    pthread_mutex_unlock(&g_lock);
}

static void NVTX_API xsprof_nvtx_name_os_thread_a(uint32_t os_tid, const char *name)
{
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_name_thread(os_tid, name);
    errno = saved_errno;
}

static void NVTX_API xsprof_nvtx_name_os_thread_w(uint32_t os_tid, const wchar_t *name)
{
    int saved_errno = xsprof_nvtx_enter();
    char buf[256];
    xsprof_nvtx_utf8(name, buf, sizeof buf);
    xsprof_nvtx_name_thread(os_tid, buf);
    errno = saved_errno;
}

/* ---- domains (CORE2) ------------------------------------------------------ */

/* The domain "xsprof" holds xsprof's own regions (nvtx_emit.c): recording
 * them here again would double every region, so its events stop here. */
static inline int xsprof_nvtx_own(nvtxDomainHandle_t d) { return (uintptr_t)d == XSPROF_NVTX_OWN_DOMAIN; }

static void NVTX_API xsprof_nvtx_domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    if (xsprof_nvtx_own(d))
        return;
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_event ev;
    xsprof_nvtx_event_from_attr(a, xsprof_nvtx_domain_index(d), &ev);
    xsprof_nvtx_mark_write(&ev, t_depth);
    errno = saved_errno;
}

static nvtxRangeId_t NVTX_API xsprof_nvtx_domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    if (xsprof_nvtx_own(d))
        return 0;
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_event ev;
    xsprof_nvtx_event_from_attr(a, xsprof_nvtx_domain_index(d), &ev);
    nvtxRangeId_t id = xsprof_nvtx_start(&ev);
    errno = saved_errno;
    return id;
}

static void NVTX_API xsprof_nvtx_domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    if (xsprof_nvtx_own(d))
        return;
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_end(id);
    errno = saved_errno;
}

static int NVTX_API xsprof_nvtx_domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    if (xsprof_nvtx_own(d))
        return 0;
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_event ev;
    xsprof_nvtx_event_from_attr(a, xsprof_nvtx_domain_index(d), &ev);
    int depth = xsprof_nvtx_push(&ev);
    errno = saved_errno;
    return depth;
}

static int NVTX_API xsprof_nvtx_domain_pop(nvtxDomainHandle_t d)
{
    if (xsprof_nvtx_own(d))
        return 0;
    int saved_errno = xsprof_nvtx_enter();
    int depth = xsprof_nvtx_pop(xsprof_nvtx_domain_index(d));
    errno = saved_errno;
    return depth;
}

static void NVTX_API xsprof_nvtx_domain_name_category_a(nvtxDomainHandle_t d, uint32_t category, const char *name)
{
    if (xsprof_nvtx_own(d))
        return;
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_category_set(xsprof_nvtx_domain_index(d), category, xsprof_nvtx_intern(name));
    errno = saved_errno;
}

static void NVTX_API xsprof_nvtx_domain_name_category_w(nvtxDomainHandle_t d, uint32_t category, const wchar_t *name)
{
    if (xsprof_nvtx_own(d))
        return;
    int saved_errno = xsprof_nvtx_enter();
    xsprof_nvtx_category_set(xsprof_nvtx_domain_index(d), category, xsprof_nvtx_intern_w(name));
    errno = saved_errno;
}

/* A registered string is its interned id + 1 (never NULL). */
static nvtxStringHandle_t NVTX_API xsprof_nvtx_register_string_a(nvtxDomainHandle_t d, const char *s)
{
    int saved_errno = xsprof_nvtx_enter();
    (void)d;
    nvtxStringHandle_t h = (nvtxStringHandle_t)((uintptr_t)xsprof_nvtx_intern(s) + 1);
    errno = saved_errno;
    return h;
}

static nvtxStringHandle_t NVTX_API xsprof_nvtx_register_string_w(nvtxDomainHandle_t d, const wchar_t *s)
{
    int saved_errno = xsprof_nvtx_enter();
    (void)d;
    nvtxStringHandle_t h = (nvtxStringHandle_t)((uintptr_t)xsprof_nvtx_intern_w(s) + 1);
    errno = saved_errno;
    return h;
}

/* Domains are never freed: records may still name them after destroy. */
static nvtxDomainHandle_t xsprof_nvtx_domain_create(uint32_t name)
{
    pthread_once(&g_keys_once, xsprof_nvtx_keys);
    if (name == g_own_domain)
        return (nvtxDomainHandle_t)XSPROF_NVTX_OWN_DOMAIN;
    uintptr_t handle = 0;
    pthread_mutex_lock(&g_lock);
    unsigned n = atomic_load(&g_ndomains);
    for (unsigned i = 1; i < n && !handle; i++)
        if (g_domain_name[i] == name)
            handle = i;
    if (!handle && n < XSPROF_NVTX_DOMAINS) {
        g_domain_name[n] = name;
        atomic_store(&g_ndomains, n + 1);
        handle = n;
    }
    pthread_mutex_unlock(&g_lock);
    if (!handle)
        xsprof_anomaly("more than 255 NVTX domains: later ones recorded as the default domain");
    return (nvtxDomainHandle_t)handle;
}

static nvtxDomainHandle_t NVTX_API xsprof_nvtx_domain_create_a(const char *name)
{
    int saved_errno = xsprof_nvtx_enter();
    nvtxDomainHandle_t h = xsprof_nvtx_domain_create(xsprof_nvtx_intern(name));
    errno = saved_errno;
    return h;
}

static nvtxDomainHandle_t NVTX_API xsprof_nvtx_domain_create_w(const wchar_t *name)
{
    int saved_errno = xsprof_nvtx_enter();
    nvtxDomainHandle_t h = xsprof_nvtx_domain_create(xsprof_nvtx_intern_w(name));
    errno = saved_errno;
    return h;
}

static void NVTX_API xsprof_nvtx_domain_destroy(nvtxDomainHandle_t d) { (void)d; }

static void NVTX_API xsprof_nvtx_initialize(const void *reserved) { (void)reserved; }

/* ---- injection entry point ---------------------------------------------- */

typedef struct {
    unsigned id;
    NvtxFunctionPointer fn;
} xsprof_nvtx_slot;

static void xsprof_nvtx_fill(const NvtxExportTableCallbacks *etbl, NvtxCallbackModule module,
                             const xsprof_nvtx_slot *slots, size_t n)
{
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!etbl->GetModuleFunctionTable(module, &table, &size) || !table)
        return;
    for (size_t i = 0; i < n; i++)
        if (slots[i].id < size && table[slots[i].id])
            *table[slots[i].id] = slots[i].fn;
}

/* Finalize hook: ranges still open then (pushed on any thread, ended or
 * still running, or started and never ended) have no end to record; they
 * are counted (metadata nvtx_open_at_finalize) and said, not lost
 * silently. */
static void xsprof_nvtx_finalize(void)
{
    int open = 0;
    for (xsprof_nvtx_tdepth *e = atomic_load(&g_tdepths); e; e = e->next)
        open += atomic_load_explicit(&e->open, memory_order_relaxed);
    pthread_mutex_lock(&g_lock);
    for (uint32_t i = 0; i < XSPROF_NVTX_OPEN; i++)
        open += g_open[i].id != 0;
    pthread_mutex_unlock(&g_lock);
    char n[32];
    snprintf(n, sizeof n, "%d", open);
    xsprof_meta_set("nvtx_open_at_finalize", n);
    if (open)
        xsprof_log(XSPROF_LOG_WARN, "%d NVTX range%s still open at finalize: not recorded (no end)", open,
                   open == 1 ? "" : "s");
}

__attribute__((visibility("default"))) int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
__attribute__((visibility("default"))) int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    int saved = errno;
    const NvtxExportTableCallbacks *etbl = get ? get(NVTX_ETID_CALLBACKS) : NULL;
    if (!etbl || etbl->struct_size < sizeof *etbl || !etbl->GetModuleFunctionTable) {
        errno = saved;
        return 0;
    }
    const xsprof_nvtx_slot core[] = {
        {NVTX_CBID_CORE_MarkEx, (NvtxFunctionPointer)xsprof_nvtx_mark_ex},
        {NVTX_CBID_CORE_MarkA, (NvtxFunctionPointer)xsprof_nvtx_mark_a},
        {NVTX_CBID_CORE_MarkW, (NvtxFunctionPointer)xsprof_nvtx_mark_w},
        {NVTX_CBID_CORE_RangeStartEx, (NvtxFunctionPointer)xsprof_nvtx_start_ex},
        {NVTX_CBID_CORE_RangeStartA, (NvtxFunctionPointer)xsprof_nvtx_start_a},
        {NVTX_CBID_CORE_RangeStartW, (NvtxFunctionPointer)xsprof_nvtx_start_w},
        {NVTX_CBID_CORE_RangeEnd, (NvtxFunctionPointer)xsprof_nvtx_end_cb},
        {NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)xsprof_nvtx_push_ex},
        {NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)xsprof_nvtx_push_a},
        {NVTX_CBID_CORE_RangePushW, (NvtxFunctionPointer)xsprof_nvtx_push_w},
        {NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)xsprof_nvtx_pop_cb},
        {NVTX_CBID_CORE_NameCategoryA, (NvtxFunctionPointer)xsprof_nvtx_name_category_a},
        {NVTX_CBID_CORE_NameCategoryW, (NvtxFunctionPointer)xsprof_nvtx_name_category_w},
        {NVTX_CBID_CORE_NameOsThreadA, (NvtxFunctionPointer)xsprof_nvtx_name_os_thread_a},
        {NVTX_CBID_CORE_NameOsThreadW, (NvtxFunctionPointer)xsprof_nvtx_name_os_thread_w},
    };
    const xsprof_nvtx_slot core2[] = {
        {NVTX_CBID_CORE2_DomainMarkEx, (NvtxFunctionPointer)xsprof_nvtx_domain_mark_ex},
        {NVTX_CBID_CORE2_DomainRangeStartEx, (NvtxFunctionPointer)xsprof_nvtx_domain_start_ex},
        {NVTX_CBID_CORE2_DomainRangeEnd, (NvtxFunctionPointer)xsprof_nvtx_domain_end},
        {NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)xsprof_nvtx_domain_push_ex},
        {NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)xsprof_nvtx_domain_pop},
        {NVTX_CBID_CORE2_DomainNameCategoryA, (NvtxFunctionPointer)xsprof_nvtx_domain_name_category_a},
        {NVTX_CBID_CORE2_DomainNameCategoryW, (NvtxFunctionPointer)xsprof_nvtx_domain_name_category_w},
        {NVTX_CBID_CORE2_DomainRegisterStringA, (NvtxFunctionPointer)xsprof_nvtx_register_string_a},
        {NVTX_CBID_CORE2_DomainRegisterStringW, (NvtxFunctionPointer)xsprof_nvtx_register_string_w},
        {NVTX_CBID_CORE2_DomainCreateA, (NvtxFunctionPointer)xsprof_nvtx_domain_create_a},
        {NVTX_CBID_CORE2_DomainCreateW, (NvtxFunctionPointer)xsprof_nvtx_domain_create_w},
        {NVTX_CBID_CORE2_DomainDestroy, (NvtxFunctionPointer)xsprof_nvtx_domain_destroy},
        {NVTX_CBID_CORE2_Initialize, (NvtxFunctionPointer)xsprof_nvtx_initialize},
    };
    xsprof_nvtx_fill(etbl, NVTX_CB_MODULE_CORE, core, sizeof core / sizeof *core);
    xsprof_nvtx_fill(etbl, NVTX_CB_MODULE_CORE2, core2, sizeof core2 / sizeof *core2);
    const NvtxExportTableVersionInfo *vinfo = get(NVTX_ETID_VERSIONINFO);
    if (vinfo && vinfo->struct_size >= sizeof *vinfo && vinfo->SetInjectionNvtxVersion)
        vinfo->SetInjectionNvtxVersion(NVTX_VERSION);
    xsprof_meta_set("nvtx_injection", "on");
    if (xsprof_finalize_hook_add(xsprof_nvtx_finalize) != XSPROF_OK)
        xsprof_log(XSPROF_LOG_WARN, "NVTX ranges open at finalize will not be counted (no finalize hook left)");
    errno = saved;
    return 1;
}

xsprof_status xsprof_nvtx_env_set(void)
{
    Dl_info info;
    char path[PATH_MAX];
    if (!dladdr((void *)&xsprof_nvtx_env_set, &info) || !info.dli_fname || !info.dli_fname[0])
        return XSPROF_ERR_UNSUPPORTED;
    /* Absolute, so child processes in other directories load the same file. */
    if (!realpath(info.dli_fname, path))
        return XSPROF_ERR_IO;
    const char *set = getenv("NVTX_INJECTION64_PATH");
    if (set) {
        char other[PATH_MAX];
        if (!realpath(set, other) || strcmp(other, path)) {
            /* Another tool (Nsight Systems...) owns NVTX: leave it that tool. */
            char note[PATH_MAX + 64];
            snprintf(note, sizeof note, "off (NVTX_INJECTION64_PATH=%s)", set);
            xsprof_meta_set("nvtx_injection", note);
            xsprof_log(XSPROF_LOG_INFO, "NVTX_INJECTION64_PATH=%s: NVTX ranges go to that tool, not xsprof", set);
        }
        return XSPROF_OK;
    }
    return setenv("NVTX_INJECTION64_PATH", path, 0) == 0 ? XSPROF_OK : XSPROF_ERR_NOMEM;
}

#else /* !XSPROF_HAVE_NVTX */

xsprof_status xsprof_nvtx_env_set(void) { return XSPROF_ERR_UNSUPPORTED; }

#endif

/* core/memstack.c — where an allocation was made (XSPROF_MEMORY): the call
 * stack of allocations of at least XSPROF_MEMORY_STACK_BYTES (default 64
 * KiB; 0: every one), so a leak candidate names the code that allocated it.
 * Unwound on the allocating thread with backtrace() (CFI, as the sampler
 * and deep call sites do): a few microseconds, against a large
 * allocation's own page faults; small allocations, the frequent ones, stay
 * at the plain record's cost. */
#include <dlfcn.h>
#include <execinfo.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "internal.h"

#define MEMSTACK_DEFAULT (64u * 1024u)

static _Atomic int64_t g_min = -1; /* bytes; -1 until read */

static uint64_t memstack_min(void)
{
    int64_t m = atomic_load_explicit(&g_min, memory_order_relaxed);
    if (m >= 0)
        return (uint64_t)m;
    const char *e = xsprof_config_get("XSPROF_MEMORY_STACK_BYTES");
    char *end = NULL;
    long long v = e && *e ? strtoll(e, &end, 10) : -1;
    if (e && *e && (!end || *end || v < 0)) {
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_MEMORY_STACK_BYTES=%s is not a number of bytes; using %u", e,
                   MEMSTACK_DEFAULT);
        v = -1;
    }
    m = v < 0 ? (int64_t)MEMSTACK_DEFAULT : (int64_t)v;
    atomic_store_explicit(&g_min, m, memory_order_relaxed);
    return (uint64_t)m;
}

/* 1 when pc is in xsprof's own code: this library, or the allocation hook
 * library (whose malloc the program called; without it, libc's malloc,
 * which never calls xsprof either). */
static int ours(const void *pc)
{
    /* load addresses, found once (racing threads find the same) */
    static _Atomic(const void *) self, hook;
    Dl_info di;
    const void *s = atomic_load_explicit(&self, memory_order_relaxed), *h = atomic_load_explicit(&hook, memory_order_relaxed);
    if (!s && dladdr((const void *)(uintptr_t)memstack_min, &di))
        atomic_store_explicit(&self, s = di.dli_fbase, memory_order_relaxed);
    if (!h && dladdr((const void *)(uintptr_t)malloc, &di) && di.dli_fbase != s)
        atomic_store_explicit(&hook, h = di.dli_fbase, memory_order_relaxed); /* libxsprof-memory.so when preloaded */
    return dladdr(pc, &di) && (di.dli_fbase == s || (h && di.dli_fbase == h));
}

uint32_t xsprof_memstack_capture(uint64_t size)
{
    if (size < memstack_min())
        return 0;
    void *bt[XSPROF_STACK_MAX + 8];
    int got = backtrace(bt, XSPROF_STACK_MAX + 8), i = 0;
    /* the stack starts after the last of xsprof's frames among the first
     * few (this function, the record's, the hook's malloc), whatever runs
     * between them (a sanitizer intercepts backtrace itself) */
    for (int k = 0; k < got && k < 10; k++)
        if (ours(bt[k]))
            i = k + 1;
    uint64_t pcs[XSPROF_STACK_MAX];
    uint32_t n = 0;
    for (; n < XSPROF_STACK_MAX && i < got; n++, i++)
        pcs[n] = (uint64_t)(uintptr_t)bt[i];
    return n ? xsprof_callstack_intern(pcs, n) : 0;
}

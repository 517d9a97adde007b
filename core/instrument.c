/* core/instrument.c — regions of a program compiled with
 * -finstrument-functions: GCC and Clang call __cyg_profile_func_enter and
 * _exit around every function, which become an xsprof region each.
 *
 * The capture stores the function's address, not its name: the region's
 * name is the string "fn@0x<address>" and the object holding the address
 * is in the modules table (listed before the first region names it), so xsmerge names the region from the binary's symbols and debug
 * information (merge/read, with merge/symbols). XSPROF_FILTER is decided
 * once per address, on the name the dynamic symbol table gives
 * (dladdr: exported functions, and all of a program's with -rdynamic),
 * else on "fn@0x<address>". Each address is looked up in a lock-free table:
 * a hash, a load and a compare per call, then the ordinary region path. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include "internal.h"

#define FN_BITS 16
#define FN_SLOTS (1u << FN_BITS)

typedef struct fn_entry {
    uintptr_t addr;
    xsprof_name_id id; /* with XSPROF_NAME_FILTERED_ when filtered out */
} fn_entry;

/* Zero pages until a function lands in them. */
static _Atomic(fn_entry *) g_fn[FN_SLOTS];
static _Atomic int g_full_warned, g_deep_noted, g_unnamed_noted;

static inline uint32_t fn_slot(uintptr_t a) {
    return (uint32_t)(((uint64_t)a * 0x9e3779b97f4a7c15ull) >> (64 - FN_BITS));
}

/* First call of fn: its name id and filter decision, published from slot i. */
static xsprof_name_id fn_insert(uintptr_t a, uint32_t i) {
    int saved = errno;
    int guard = xsprof_guard_enter(); /* our allocations are not the program's (XSPROF_MEMORY) */
    xsprof_name_id id = XSPROF_NAME_FILTERED_;
    char name[40];
    snprintf(name, sizeof name, XSPROF_FN_NAME_PREFIX "%llx", (unsigned long long)a);
    Dl_info info;
    const char *sym = dladdr((void *)a, &info) && info.dli_sname && (uintptr_t)info.dli_saddr == a ? info.dli_sname
                                                                                                   : name;
    if (sym == name && xsprof_filter_active() && !atomic_exchange(&g_unnamed_noted, 1))
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_FILTER: instrumented functions without a dynamic symbol are filtered as "
                   "fn@0x<address> (first: %s); link the program with -rdynamic to filter them by name", name);
    int filtered = xsprof_filter_excludes(sym);
    xsprof_modules_check(); /* the object holding it is listed before a region names it */
    fn_entry *e = malloc(sizeof *e);
    if (!e || xsprof_string_intern(name, &id) != XSPROF_OK) {
        free(e);
        id = XSPROF_NAME_FILTERED_; /* counted as skipped, balanced */
        goto out;
    }
    e->addr = a;
    e->id = filtered ? id | XSPROF_NAME_FILTERED_ : id;
    for (uint32_t probes = 0; probes < FN_SLOTS / 2; probes++, i = (i + 1) & (FN_SLOTS - 1)) {
        fn_entry *cur = NULL;
        if (atomic_compare_exchange_strong_explicit(&g_fn[i], &cur, e, memory_order_release, memory_order_acquire)) {
            id = e->id;
            goto out;
        }
        if (cur->addr == a) { /* another thread was first */
            free(e);
            id = cur->id;
            goto out;
        }
    }
    free(e);
    if (!atomic_exchange(&g_full_warned, 1))
        xsprof_log(XSPROF_LOG_WARN, "more than %u instrumented functions: further ones are not recorded", FN_SLOTS / 2);
out:
    if (guard)
        xsprof_guard_leave();
    errno = saved;
    return id;
}

static inline xsprof_name_id fn_id(uintptr_t a) {
    uint32_t i = fn_slot(a);
    for (uint32_t probes = 0; probes < FN_SLOTS / 2; probes++, i = (i + 1) & (FN_SLOTS - 1)) {
        fn_entry *e = atomic_load_explicit(&g_fn[i], memory_order_acquire);
        if (!e)
            return fn_insert(a, i);
        if (e->addr == a)
            return e->id;
    }
    return XSPROF_NAME_FILTERED_;
}

/* Exported (cmake/exports.map): the program's instrumented functions call
 * these. Begin and end pair through the region stack and its skip count,
 * so filtered, refused or unrecorded functions keep the nesting right. */
__attribute__((visibility("default"))) void __cyg_profile_func_enter(void *fn, void *site);
__attribute__((visibility("default"))) void __cyg_profile_func_exit(void *fn, void *site);

void __cyg_profile_func_enter(void *fn, void *site) {
    (void)site;
    int *err = &errno, saved = *err; /* the program never sees these calls: errno is its own */
    xsprof_tl *tl = &xsprof_tl_;     /* one TLS access for the whole hook */
    const xsprof_thread *t = tl->thread;
    if (!__atomic_load_n(&xsprof_scope_on_, __ATOMIC_RELAXED) || (t && t->depth >= XSPROF_MAX_DEPTH)) {
        /* Recursion deeper than the region stack is normal here, not API
         * misuse: the deeper calls go unrecorded, with one note. */
        if (t && t->depth >= XSPROF_MAX_DEPTH && !atomic_exchange(&g_deep_noted, 1))
            xsprof_log(XSPROF_LOG_WARN, "functions nested deeper than %d levels: the deeper calls are not recorded "
                       "as regions", XSPROF_MAX_DEPTH);
        tl->skip++;
        *err = saved;
        return;
    }
    xsprof_name_id id = fn_id((uintptr_t)fn);
    if (id & XSPROF_NAME_FILTERED_)
        tl->skip++;
    else
        xsprof_region_begin_id_(id, &tl->skip);
    *err = saved;
}

void __cyg_profile_func_exit(void *fn, void *site) {
    (void)fn;
    (void)site;
    int *err = &errno, saved = *err; /* a function's errno outlives its return: the exit hook keeps it */
    xsprof_tl *tl = &xsprof_tl_;
    if (tl->skip)
        tl->skip--;
    else
        xsprof_region_end_(&tl->skip);
    *err = saved;
}

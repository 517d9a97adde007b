/* core/threshold.c — region duration thresholds per name
 * (xsprof_region_threshold_set, XSPROF_WARN_REGION_MS) and their warnings.
 * The region path reads one flag (xsprof_thresholds_on) at region end and
 * calls in here only while a threshold exists. Warnings are rate-limited
 * per name: at most one a second, the next one counting the instances left
 * out meanwhile, and finalize reporting those no later message counted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define NS_PER_MS 1000000.0
#define RATE_NS 1000000000 /* one message per name and second */
#define MAX_MS 1e9         /* 11.6 days: far above any region, far below int64 ns */

_Atomic int xsprof_thresholds_on;
static _Atomic int64_t g_default_ns; /* "*": every name without its own, 0 none */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_named;                  /* names with a threshold of their own */
static int g_hook;                   /* the finalize report is registered */

static void report_left_out(void);

xsprof_status xsprof_region_threshold_set(const char *name, double ms) {
    if (!name || !*name || isnan(ms) || ms > MAX_MS)
        return XSPROF_ERR_INVALID;
    int64_t ns = ms > 0 ? (int64_t)(ms * NS_PER_MS) : 0;
    if (ms > 0 && ns < 1)
        ns = 1;
    xsprof_name_entry *e = NULL;
    if (strcmp(name, "*")) {
        uint32_t id;
        xsprof_status st = xsprof_string_intern(name, &id);
        if (st)
            return st;
        e = (xsprof_name_entry *)xsprof_name_entry_get(id);
    }
    pthread_mutex_lock(&g_lock);
    if (e) {
        int64_t old = atomic_exchange(&e->threshold_ns, ns);
        g_named += (ns > 0) - (old > 0);
    } else
        atomic_store(&g_default_ns, ns);
    int on = g_named > 0 || atomic_load(&g_default_ns) > 0;
    int add_hook = on && !g_hook;
    g_hook |= on;
    atomic_store(&xsprof_thresholds_on, on);
    pthread_mutex_unlock(&g_lock);
    if (add_hook && xsprof_finalize_hook_add(report_left_out))
        xsprof_log(XSPROF_LOG_WARN, "region threshold warnings left out at the end will not be counted "
                   "(no finalize hook left)");
    return XSPROF_OK;
}

void xsprof_threshold_check(uint32_t name, int64_t dur, int64_t now) {
    xsprof_name_entry *e = (xsprof_name_entry *)xsprof_name_entry_get(name);
    if (!e)
        return;
    int64_t limit = atomic_load_explicit(&e->threshold_ns, memory_order_relaxed);
    if (limit <= 0)
        limit = atomic_load_explicit(&g_default_ns, memory_order_relaxed);
    if (limit <= 0 || dur <= limit)
        return;
    /* One thread wins the second's message; the others count. */
    int64_t last = atomic_load_explicit(&e->warn_last, memory_order_relaxed);
    if ((last && now - last < RATE_NS) ||
        !atomic_compare_exchange_strong_explicit(&e->warn_last, &last, now, memory_order_relaxed,
                                                 memory_order_relaxed)) {
        int64_t m = atomic_load_explicit(&e->left_max_ns, memory_order_relaxed);
        while (dur > m && !atomic_compare_exchange_weak_explicit(&e->left_max_ns, &m, dur, memory_order_relaxed,
                                                                 memory_order_relaxed))
            ;
        atomic_fetch_add_explicit(&e->left_out, 1, memory_order_relaxed);
        return;
    }
    uint32_t left = atomic_exchange_explicit(&e->left_out, 0, memory_order_relaxed);
    int64_t left_max = atomic_exchange_explicit(&e->left_max_ns, 0, memory_order_relaxed);
    if (left)
        xsprof_log(XSPROF_LOG_WARN, "region '%s' took %.3f ms, above its threshold of %g ms (and %u more "
                   "instance%s above it since the last message, the longest %.3f ms)", e->str, (double)dur / NS_PER_MS,
                   (double)limit / NS_PER_MS, left, left == 1 ? "" : "s", (double)left_max / NS_PER_MS);
    else
        xsprof_log(XSPROF_LOG_WARN, "region '%s' took %.3f ms, above its threshold of %g ms", e->str,
                   (double)dur / NS_PER_MS, (double)limit / NS_PER_MS);
}

/* Finalize hook: the instances no message has counted yet. */
static void report_left_out(void) {
    uint32_t n = xsprof_name_count();
    for (uint32_t id = 0; id < n; id++) {
        xsprof_name_entry *e = (xsprof_name_entry *)xsprof_name_entry_get(id);
        uint32_t left = e ? atomic_exchange(&e->left_out, 0) : 0;
        if (!left)
            continue;
        int64_t limit = atomic_load(&e->threshold_ns);
        if (limit <= 0)
            limit = atomic_load(&g_default_ns);
        xsprof_log(XSPROF_LOG_WARN, "region '%s': %u more instance%s above its threshold of %g ms since the last "
                   "message, the longest %.3f ms", e->str, left, left == 1 ? "" : "s", (double)limit / NS_PER_MS,
                   (double)atomic_exchange(&e->left_max_ns, 0) / NS_PER_MS);
    }
}

/* A positive number of milliseconds (at most MAX_MS) spanning [s, end). */
static int ms_parse(const char *s, const char *end, double *ms) {
    while (s < end && *s == ' ')
        s++;
    while (end > s && end[-1] == ' ')
        end--;
    char num[64];
    size_t n = (size_t)(end - s);
    if (!n || n >= sizeof num)
        return -1;
    memcpy(num, s, n);
    num[n] = 0;
    char *stop;
    double v = strtod(num, &stop);
    if (*stop || !(v > 0) || v > MAX_MS) /* also NaN */
        return -1;
    *ms = v;
    return 0;
}

xsprof_status xsprof_thresholds_parse(const char *spec, char *bad, size_t badlen, int *nbad) {
    *nbad = 0;
    if (badlen)
        bad[0] = 0;
    for (const char *p = spec; p && *p;) {
        size_t n = strcspn(p, ",");
        const char *end = p + n, *eq = NULL;
        for (const char *q = p; q < end; q++)
            if (*q == '=')
                eq = q; /* the last one: a name may hold '=' */
        const char *name = p, *name_end = eq ? eq : p;
        while (name < name_end && *name == ' ')
            name++;
        while (name_end > name && name_end[-1] == ' ')
            name_end--;
        double ms;
        char nm[XSPROF_NAME_MAX + 1];
        size_t nl = (size_t)(name_end - name);
        int ok = ms_parse(eq ? eq + 1 : p, end, &ms) == 0 && (!eq || (nl && nl < sizeof nm));
        if (ok) {
            memcpy(nm, eq ? name : "*", eq ? nl : 1);
            nm[eq ? nl : 1] = 0;
            ok = xsprof_region_threshold_set(nm, ms) == XSPROF_OK;
        }
        int blank = strspn(p, " ") == n; /* "a=1,,b=2" or a trailing comma */
        if (!ok && !blank && (*nbad)++ == 0 && badlen)
            snprintf(bad, badlen, "%.*s", (int)(n < 200 ? n : 200), p);
        p = *end ? end + 1 : end;
    }
    return *nbad ? XSPROF_ERR_INVALID : XSPROF_OK;
}

void xsprof_thresholds_init(void) {
    const char *v = xsprof_config_get("XSPROF_WARN_REGION_MS");
    char bad[256];
    int nbad;
    if (!v || xsprof_thresholds_parse(v, bad, sizeof bad, &nbad) == XSPROF_OK)
        return;
    if (nbad == 1)
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_WARN_REGION_MS: '%s' ignored (expected NAME=MS or MS, MS a number of "
                   "milliseconds above 0, items separated by commas)", bad);
    else
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_WARN_REGION_MS: %d items ignored, the first '%s' (expected NAME=MS or MS, "
                   "MS a number of milliseconds above 0, items separated by commas)", nbad, bad);
}

/* core/clock.c — clock, TSC calibration and the XSPROF_TEST_CLOCK_*
 * injection hook. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include "clock.h"
#include "internal.h"

xsprof_clock_test xsprof_clock_test_g;
const xsprof_tsc_map *_Atomic xsprof_tsc_g;

/* The rate is measured over at least this long: each end of the interval is
 * known to about 15 ns, so 20 ms bounds the rate error near 1.5 ppm (and
 * clock samples taken through MPI absorb any constant rate error anyway). */
#define XSPROF_TSC_CAL_MIN_NS 20000000

static struct {
    int usable;        /* TSC allowed and trustworthy: decided once at init */
    uint64_t tsc;      /* first calibration point */
    int64_t ns;
    atomic_int busy;   /* one calibrating thread; the others keep clock_gettime */
    xsprof_tsc_map map;
} g_cal;

#if defined(__x86_64__)
/* One (tsc, CLOCK_MONOTONIC) pair: the tightest of a few rdtsc brackets
 * around a clock_gettime. *lo is the bracket's start, *mid its middle. */
static int64_t tsc_pair(uint64_t *lo, uint64_t *mid) {
    uint64_t best = UINT64_MAX;
    int64_t ns = 0;
    *lo = *mid = 0;
    for (int i = 0; i < 8; i++) {
        uint64_t a = __rdtsc();
        int64_t n = xsprof_clock_monotonic();
        uint64_t b = __rdtsc();
        if (b - a < best) {
            best = b - a;
            *lo = a;
            *mid = a + (b - a) / 2;
            ns = n;
        }
    }
    return ns;
}

/* Invariant TSC (constant rate, runs in deep C-states) and the kernel's own
 * clocksource is the TSC, i.e. Linux found it synchronised across CPUs. */
static int tsc_trusted(void) {
    unsigned a, b, c, d;
    if ((unsigned)__get_cpuid_max(0x80000000, NULL) < 0x80000007u) /* int in clang, unsigned in gcc */
        return 0;
    __cpuid(0x80000007, a, b, c, d);
    if (!(d & (1u << 8)))
        return 0;
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    char src[32] = "";
    if (f) {
        if (!fgets(src, sizeof src, f))
            src[0] = 0;
        fclose(f);
    }
    return !strncmp(src, "tsc", 3) && (src[3] == '\n' || !src[3]);
}
#endif

#if defined(__x86_64__)
/* Some hypervisors trap rdtsc (a microsecond or more a read): then the vDSO
 * clock is the cheaper one. Best of a few rounds of 32 reads each. */
static volatile uint64_t tsc_sink; /* keeps the timed reads (file scope: clang) */

static int tsc_cheaper(void) {
    int64_t best_tsc = INT64_MAX, best_mono = INT64_MAX;
    for (int r = 0; r < 4; r++) {
        int64_t t0 = xsprof_clock_monotonic();
        for (int i = 0; i < 32; i++)
            tsc_sink += __rdtsc();
        int64_t t1 = xsprof_clock_monotonic();
        for (int i = 0; i < 32; i++)
            tsc_sink += (uint64_t)xsprof_clock_monotonic();
        int64_t t2 = xsprof_clock_monotonic();
        best_tsc = t1 - t0 < best_tsc ? t1 - t0 : best_tsc;
        best_mono = t2 - t1 < best_mono ? t2 - t1 : best_mono;
    }
    return best_tsc < best_mono;
}
#endif

static void tsc_init(void) {
#if defined(__x86_64__)
    const char *want = xsprof_config_get("XSPROF_CLOCK");
    if (want && strcmp(want, "auto") && strcmp(want, "tsc") && strcmp(want, "monotonic"))
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_CLOCK=%s is not auto, tsc or monotonic; using auto", want);
    if (want && !strcmp(want, "monotonic"))
        return;
    if (!tsc_trusted()) {
        xsprof_log(want && !strcmp(want, "tsc") ? XSPROF_LOG_WARN : XSPROF_LOG_INFO,
                   "clock: the TSC is not invariant or not the kernel's clocksource; using clock_gettime");
        return;
    }
    if (!(want && !strcmp(want, "tsc")) && !tsc_cheaper()) {
        xsprof_log(XSPROF_LOG_INFO, "clock: rdtsc is not cheaper than clock_gettime here (trapped by a "
                   "hypervisor?); using clock_gettime");
        return;
    }
    uint64_t lo;
    g_cal.ns = tsc_pair(&lo, &g_cal.tsc);
    g_cal.usable = 1;
#endif
}

void xsprof_clock_calibrate(void) {
#if defined(__x86_64__)
    if (!g_cal.usable || atomic_load_explicit(&xsprof_tsc_g, memory_order_relaxed) ||
        xsprof_clock_monotonic() - g_cal.ns < XSPROF_TSC_CAL_MIN_NS)
        return;
    int idle = 0;
    if (!atomic_compare_exchange_strong(&g_cal.busy, &idle, 1))
        return;
    uint64_t lo, mid;
    int64_t ns = tsc_pair(&lo, &mid);
    double ns_per_tick = (double)(ns - g_cal.ns) / (double)(mid - g_cal.tsc);
    if (!(ns_per_tick > 0.05 && ns_per_tick < 20.0)) { /* 50 MHz .. 20 GHz, else something is off */
        xsprof_log(XSPROF_LOG_WARN, "clock: TSC rate %.3g ns/tick is implausible; keeping clock_gettime", ns_per_tick);
        g_cal.usable = 0;
        return;
    }
    /* Anchored at the bracket's start: the map is never behind CLOCK_MONOTONIC,
     * so no timestamp goes back at the switch (it may lead by one bracket). */
    g_cal.map.tsc0 = lo;
    g_cal.map.ns0 = ns;
    g_cal.map.mult = (uint64_t)(ns_per_tick * 4294967296.0 + 0.5);
    atomic_store_explicit(&xsprof_tsc_g, &g_cal.map, memory_order_release);
    xsprof_log(XSPROF_LOG_INFO, "clock: TSC at %.6f GHz, measured over %.3f s; rdtsc from now on", 1.0 / ns_per_tick,
               (double)(ns - g_cal.ns) * 1e-9);
#endif
}

const char *xsprof_clock_source(void) { return g_cal.usable ? XSPROF_CLOCK_SOURCE_TSC : XSPROF_CLOCK_SOURCE; }

int64_t xsprof_clock_now(void) { return xsprof_clock_read(); }

const char *xsprof_clock_name(void) {
    return atomic_load_explicit(&xsprof_tsc_g, memory_order_acquire) ? "TSC" : "CLOCK_MONOTONIC";
}

/* Pick this rank's entry of a comma-separated list ("0,5000000,-5000000");
 * a single value applies to every rank. Returns 0 when absent or invalid. */
static int clock_list_pick(const char *spec, int rank, double *out) {
    if (!spec || !*spec)
        return 0;
    const char *p = spec;
    double v = 0;
    for (int i = 0;; i++) {
        char *end;
        double x = strtod(p, &end);
        /* Finite and sane (|x| <= 1e15: 11 days of skew, or ppm far beyond
         * any real drift): anything else is a typo, not a test setting. */
        if (end == p || !isfinite(x) || fabs(x) > 1e15)
            return 0;
        v = x;
        if (i == rank)
            break;
        if (*end != ',') {
            if (i > 0)
                return 0; /* list shorter than the rank: no injection for it */
            break;
        }
        p = end + 1;
    }
    *out = v;
    return 1;
}

void xsprof_clock_init(int rank) {
    tsc_init();
    double skew = 0, ppm = 0;
    int s = clock_list_pick(xsprof_config_get("XSPROF_TEST_CLOCK_SKEW_NS"), rank, &skew);
    int d = clock_list_pick(xsprof_config_get("XSPROF_TEST_CLOCK_DRIFT_PPM"), rank, &ppm);
    if (!s && !d)
        return;
    xsprof_clock_test_g.skew_ns = (int64_t)skew;
    xsprof_clock_test_g.drift = ppm * 1e-6;
    xsprof_clock_test_g.origin = xsprof_clock_raw();
    xsprof_clock_test_g.on = 1;
    xsprof_log(XSPROF_LOG_INFO, "test clock injection: skew %lld ns, drift %.3f ppm", (long long)xsprof_clock_test_g.skew_ns,
               ppm);
}

static int64_t g_start_realtime, g_start_clock;

void xsprof_start_time_capture(void) {
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    g_start_clock = xsprof_clock_read();
    g_start_realtime = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
}

void xsprof_start_time_get(int64_t *realtime_ns, int64_t *clock_ns) {
    *realtime_ns = g_start_realtime;
    *clock_ns = g_start_clock;
}

/* core/clock.h — the one clock every record uses: nanoseconds on the
 * CLOCK_MONOTONIC scale. It starts as clock_gettime (vDSO, no syscall);
 * once the TSC's rate has been measured against CLOCK_MONOTONIC over a long
 * enough interval (xsprof_clock_calibrate), reads become rdtsc plus one
 * multiply (about half the cost on the machines we measured), continuing
 * the same scale. Also the test hook that injects skew and drift so clock
 * alignment can be tested on one machine. Owner: core. */
#ifndef XSPROF_CORE_CLOCK_H
#define XSPROF_CORE_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif
#include "collector.h"

typedef struct xsprof_clock_test {
    int on;
    int64_t skew_ns;
    double drift;    /* ppm * 1e-6 */
    int64_t origin;  /* raw time drift is measured from */
} xsprof_clock_test;
XSPROF_HIDDEN extern xsprof_clock_test xsprof_clock_test_g;

/* ns = ns0 + (tsc - tsc0) * mult / 2^32. Published once, never changed:
 * one linear map for the rest of the process. */
typedef struct xsprof_tsc_map {
    uint64_t tsc0;
    int64_t ns0;
    uint64_t mult; /* ns per tick, 32.32 fixed point */
} xsprof_tsc_map;
XSPROF_HIDDEN extern const xsprof_tsc_map *_Atomic xsprof_tsc_g;

#define XSPROF_CLOCK_SOURCE "CLOCK_MONOTONIC"
#define XSPROF_CLOCK_SOURCE_TSC "CLOCK_MONOTONIC/TSC"

static inline int64_t xsprof_clock_monotonic(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t xsprof_clock_raw(void) {
#if defined(__x86_64__)
    const xsprof_tsc_map *m = atomic_load_explicit(&xsprof_tsc_g, memory_order_acquire);
    if (__builtin_expect(m != NULL, 1)) {
        /* signed: rdtsc is not ordered and may run a few ticks before the map was published */
        int64_t d = (int64_t)(__rdtsc() - m->tsc0);
        return m->ns0 + (int64_t)(((__int128)d * (__int128)m->mult) >> 32);
    }
#endif
    return xsprof_clock_monotonic();
}

static inline int64_t xsprof_clock_read(void) {
    int64_t t = xsprof_clock_raw();
    if (__builtin_expect(xsprof_clock_test_g.on, 0))
        t += xsprof_clock_test_g.skew_ns + (int64_t)((double)(t - xsprof_clock_test_g.origin) * xsprof_clock_test_g.drift);
    return t;
}

/* The clock_source string for files: XSPROF_CLOCK_SOURCE(_TSC). */
XSPROF_HIDDEN const char *xsprof_clock_source(void);

#endif

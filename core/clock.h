/* core/clock.h — the one clock every record uses: CLOCK_MONOTONIC in ns
 * (vDSO, no syscall), plus the test hook that injects skew and drift so
 * clock alignment can be tested on one machine. Owner: core. */
#ifndef XSPROF_CORE_CLOCK_H
#define XSPROF_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>
#include "collector.h"

typedef struct xsprof_clock_test {
    int on;
    int64_t skew_ns;
    double drift;    /* ppm * 1e-6 */
    int64_t origin;  /* raw time drift is measured from */
} xsprof_clock_test;
XSPROF_HIDDEN extern xsprof_clock_test xsprof_clock_test_g;

#define XSPROF_CLOCK_SOURCE "CLOCK_MONOTONIC"

static inline int64_t xsprof_clock_raw(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t xsprof_clock_read(void) {
    int64_t t = xsprof_clock_raw();
    if (__builtin_expect(xsprof_clock_test_g.on, 0))
        t += xsprof_clock_test_g.skew_ns + (int64_t)((double)(t - xsprof_clock_test_g.origin) * xsprof_clock_test_g.drift);
    return t;
}

#endif

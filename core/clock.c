/* core/clock.c — clock and the XSPROF_TEST_CLOCK_* injection hook. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "internal.h"

xsprof_clock_test xsprof_clock_test_g;

int64_t xsprof_clock_now(void) { return xsprof_clock_read(); }

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

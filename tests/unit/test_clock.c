/* The clock: it starts on clock_gettime and switches to the TSC once the
 * TSC's rate is measured (core/clock.c). Checks, while regions are recorded
 * across the switch: every read on a thread is >= the previous one, the
 * clock stays on the CLOCK_MONOTONIC scale (bracketed by two clock_gettime
 * reads, within a bound that allows NTP slewing but not a wrong rate or a
 * jump), recorded regions never end before they begin, and the clock in
 * use is the one this machine should give: TSC when /proc/cpuinfo shows an
 * invariant TSC and the kernel's clocksource is tsc, CLOCK_MONOTONIC when
 * not or with XSPROF_CLOCK=monotonic. */
#include <stdint.h>
#include <time.h>
#include <xsprof/xsprof.h>
#include "memsink.h"

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int file_has(const char *path, const char *word) {
    FILE *f = fopen(path, "r");
    char line[8192];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f))
        found = strstr(line, word) != NULL;
    if (f)
        fclose(f);
    return found;
}

static const char *expected_clock(void) {
    const char *want = getenv("XSPROF_CLOCK");
    if (want && !strcmp(want, "monotonic"))
        return "CLOCK_MONOTONIC";
#if defined(__x86_64__)
    if (file_has("/proc/cpuinfo", " constant_tsc") && file_has("/proc/cpuinfo", " nonstop_tsc") &&
        file_has("/sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc"))
        return "TSC";
#endif
    return "CLOCK_MONOTONIC";
}

int main(void) {
    memsink_install();
    xsprof_name_id id;
    CHECK(xsprof_name_intern("tick", &id) == XSPROF_OK);
    const int64_t start = mono_ns();
    int64_t prev = xsprof_clock_now(), worst = 0, switched_at = -1;
    long reads = 0;
    /* 300 ms: the switch needs 20 ms of calibration and a chunk change. */
    while (mono_ns() - start < 300000000) {
        for (int i = 0; i < 100; i++) {
            xsprof_region_begin_id(id);
            xsprof_region_end();
        }
        int64_t m1 = mono_ns();
        int64_t x = xsprof_clock_now();
        int64_t m2 = mono_ns();
        reads++;
        if (x < prev) {
            fprintf(stderr, "clock went back by %lld ns (%s)\n", (long long)(prev - x), xsprof_clock_name());
            return 1;
        }
        prev = x;
        if (switched_at < 0 && !strcmp(xsprof_clock_name(), "TSC"))
            switched_at = m2 - start;
        /* 10 us plus 1000 ppm of the elapsed time: far above a correct
         * calibration (~2 ppm) and NTP slewing (<= 500 ppm), far below a
         * wrong rate or a discontinuity. */
        int64_t tol = 10000 + (m2 - start) / 1000;
        int64_t err = x < m1 ? m1 - x : x > m2 ? x - m2 : 0;
        if (err > worst)
            worst = err;
        if (err > tol) {
            fprintf(stderr, "clock %s is %lld ns off CLOCK_MONOTONIC after %.3f s (tolerance %lld)\n",
                    xsprof_clock_name(), (long long)err, (double)(m2 - start) * 1e-9, (long long)tol);
            return 1;
        }
    }
    const char *want = expected_clock();
    if (strcmp(xsprof_clock_name(), want)) {
        fprintf(stderr, "clock in use is %s, expected %s on this machine\n", xsprof_clock_name(), want);
        return 1;
    }
    CHECK(xsprof_finalize() == XSPROF_OK);
    CHECK(memsink_loaded && memsink_data.nregions > 0);
    for (size_t i = 0; i < memsink_data.nregions; i++)
        CHECK(memsink_data.regions[i].t_end >= memsink_data.regions[i].t_begin);
    printf("test_clock: %s (switched after %.1f ms), %ld bracketed reads, largest distance from CLOCK_MONOTONIC "
           "%lld ns, %zu regions ok\n",
           want, switched_at < 0 ? 0.0 : (double)switched_at * 1e-6, reads, (long long)worst, memsink_data.nregions);
    return 0;
}

/* An observer with sample rate p sees Binomial(N, p) regions: the count
 * must fall within 5 standard deviations (false failure odds < 1e-6).
 * Begin and end callbacks are paired and carry the region's data. */
#include <math.h>
#include <string.h>
#include <xsprof/xsprof.h>
#include "memsink.h"

static long begins, ends, bad;
static void on_begin(const xsprof_region_info *i, void *u) {
    (void)u;
    begins++;
    if (strcmp(i->name, "sampled") || i->depth != 0 || i->t_end != 0)
        bad++;
}
static void on_end(const xsprof_region_info *i, void *u) {
    (void)u;
    ends++;
    if (i->t_end < i->t_begin)
        bad++;
}

int main(void) {
    memsink_install();
    const long n = 200000;
    const double p = 0.1;
    xsprof_observer_handle h;
    CHECK(xsprof_observer_add(on_begin, on_end, NULL, p, 1, &h) == XSPROF_OK);
    CHECK(xsprof_observer_add(on_begin, on_end, NULL, 0.0, 0, &h) == XSPROF_ERR_INVALID);
    for (long i = 0; i < n; i++) {
        xsprof_region_begin("sampled");
        xsprof_region_end();
    }
    double mean = n * p, sd = sqrt(n * p * (1 - p));
    printf("test_sampling: %ld of %ld sampled (expected %.0f +- %.0f)\n", begins, n, mean, sd);
    CHECK(fabs((double)begins - mean) < 5 * sd);
    CHECK(begins == ends && bad == 0);
    xsprof_observer_handle all;
    long before = begins;
    CHECK(xsprof_observer_add(on_begin, on_end, NULL, 1.0, 0, &all) == XSPROF_OK);
    CHECK(xsprof_observer_remove(h) == XSPROF_OK);
    CHECK(xsprof_observer_remove(h) == XSPROF_ERR_INVALID);
    for (long i = 0; i < 1000; i++) {
        xsprof_region_begin("sampled");
        xsprof_region_end();
    }
    CHECK(begins - before == 1000);
    CHECK(xsprof_finalize() == XSPROF_OK);
    return 0;
}

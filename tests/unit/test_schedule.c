/* Schedule wait=1,warmup=1,active=2,repeat=2: only steps 2,3 and 6,7 are
 * recorded, on_trace_ready runs once per active cycle with cycles 0 and 1. */
#include <string.h>
#include <xsprof/xsprof.h>
#include "memsink.h"

static int ready_calls, ready_last = -1;
static void on_ready(int cycle, void *user) {
    CHECK(user == &ready_calls);
    ready_calls++;
    ready_last = cycle;
}

int main(void) {
    memsink_install();
    CHECK(xsprof_schedule_set(1, 1, 2, 2, on_ready, &ready_calls) == XSPROF_OK);
    CHECK(xsprof_schedule_set(0, 0, 0, 1, NULL, NULL) == XSPROF_ERR_INVALID);
    char name[32];
    for (int step = 0; step < 12; step++) {
        snprintf(name, sizeof name, "step %d", step);
        xsprof_region_begin(name);
        xsprof_region_end();
        xsprof_step();
    }
    CHECK(xsprof_finalize() == XSPROF_OK);
    CHECK(ready_calls == 2 && ready_last == 1);
    for (int step = 0; step < 12; step++) {
        snprintf(name, sizeof name, "step %d", step);
        int want = step == 2 || step == 3 || step == 6 || step == 7;
        CHECK(memsink_count_regions(name) == (size_t)want);
    }
    printf("test_schedule: ok\n");
    return 0;
}

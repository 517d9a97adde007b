/* XSPROF_SCHEDULE parser (core/schedule.c: xsprof_schedule_parse), then a
 * few xsprof_step() calls so the accepted window arithmetic runs too.
 * Invariant: parsing is deterministic (same verdict twice). */
#include "core/internal.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    xsprof_status a = xsprof_schedule_parse(s);
    xsprof_status b = xsprof_schedule_parse(s);
    if (a != b)
        abort();
    if (a == XSPROF_OK)
        for (int i = 0; i < 4; i++)
            xsprof_step();
    xsprof_schedule_check_at_finalize();
    free(s);
    return 0;
}

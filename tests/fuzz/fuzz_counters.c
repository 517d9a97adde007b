/* XSPROF_COUNTERS parser (core/counters.c: xsprof_counters_parse).
 * Invariant: xsprof_counters_active() is 1 exactly when the spec selected
 * something; it is 0 after parsing "" (which resets the selection). */
#include "core/internal.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    xsprof_status st = xsprof_counters_parse(s);
    if (st == XSPROF_OK && *s && !xsprof_counters_active())
        abort();
    xsprof_counters_parse("");
    if (xsprof_counters_active())
        abort();
    free(s);
    return 0;
}

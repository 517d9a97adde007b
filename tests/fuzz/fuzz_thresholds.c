/* XSPROF_WARN_REGION_MS parser (core/threshold.c: xsprof_thresholds_parse)
 * and the check it arms (xsprof_threshold_check). Input: the spec.
 * Invariants: XSPROF_OK exactly when no item was bad; otherwise the first
 * bad item is named (not empty, terminated, within the buffer); checking a
 * region of any duration afterwards never fails. */
#include "core/internal.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    char bad[64];
    memset(bad, 'x', sizeof bad);
    int nbad = -1;
    xsprof_status st = xsprof_thresholds_parse(s, bad, sizeof bad, &nbad);
    if (nbad < 0 || (st == XSPROF_OK) != (nbad == 0) || !memchr(bad, 0, sizeof bad) || (nbad > 0) != (bad[0] != 0))
        abort();
    uint32_t id;
    if (xsprof_string_intern("solve", &id) == XSPROF_OK && xsprof_thresholds_active()) {
        xsprof_threshold_check(id, INT64_MAX, INT64_MAX);
        xsprof_threshold_check(id, 0, 1);
    }
    free(s);
    return 0;
}

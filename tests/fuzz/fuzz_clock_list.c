/* Per-rank lists of XSPROF_TEST_CLOCK_SKEW_NS / XSPROF_TEST_CLOCK_DRIFT_PPM
 * (core/clock.c: clock_list_pick, static, reached through
 * xsprof_clock_init). Input: first byte = rank (0..255), then
 * "SKEW\nDRIFT" (without a newline the same text is used for both). */
#include "core/clock.h"
#include "core/internal.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int rank = data[0];
    char *s = fuzz_cstr(data + 1, size - 1);
    char *nl = strchr(s, '\n');
    const char *drift = s;
    if (nl) {
        *nl = 0;
        drift = nl + 1;
    }
    setenv("XSPROF_TEST_CLOCK_SKEW_NS", s, 1);
    setenv("XSPROF_TEST_CLOCK_DRIFT_PPM", drift, 1);
    xsprof_clock_init(rank);
    (void)xsprof_clock_now();
    unsetenv("XSPROF_TEST_CLOCK_SKEW_NS");
    unsetenv("XSPROF_TEST_CLOCK_DRIFT_PPM");
    free(s);
    return 0;
}

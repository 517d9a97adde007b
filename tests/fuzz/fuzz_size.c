/* Size parser used for XSPROF_* sizes (core/config.c: xsprof_size_parse).
 * Invariant: an accepted value printed in decimal parses back to itself. */
#include <inttypes.h>
#include <stdio.h>

#include "core/internal.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    uint64_t v = 0, w = 0;
    if (xsprof_size_parse(s, &v) == XSPROF_OK) {
        char buf[32];
        snprintf(buf, sizeof buf, "%" PRIu64, v);
        if (xsprof_size_parse(buf, &w) != XSPROF_OK || w != v)
            abort();
    }
    free(s);
    return 0;
}

/* XSPROF_GPU parser (gpu/cupti.c: xsprof_gpu_mode_parse). Invariant: the
 * verdict does not depend on letter case (the documented words are
 * case-insensitive, digits have no case). */
#include <ctype.h>

#include "fuzz.h"
#include "gpu/gpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    enum xsprof_gpu_mode a, b;
    xsprof_status sa = xsprof_gpu_mode_parse(s, &a);
    for (char *p = s; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    xsprof_status sb = xsprof_gpu_mode_parse(s, &b);
    if (sa != sb || (sa == XSPROF_OK && a != b))
        abort();
    free(s);
    return 0;
}

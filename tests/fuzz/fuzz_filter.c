/* XSPROF_FILTER parser (core/filter.c: xsprof_filter_parse) and the match
 * it drives (xsprof_filter_excludes). Input: "SPEC\nNAME" (NAME at most 64
 * bytes); without a newline the whole input is the spec and "solve" is
 * matched. Invariants: an empty spec excludes nothing; a rejected spec
 * leaves no pattern behind (nothing excluded). */
#include "core/internal.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    char *nl = strchr(s, '\n');
    const char *name = "solve";
    if (nl) {
        *nl = 0;
        name = nl + 1;
        if (strlen(name) > 64)
            nl[65] = 0;
    }
    xsprof_status st = xsprof_filter_parse(s);
    int ex = xsprof_filter_excludes(name);
    if ((st != XSPROF_OK || !*s) && ex)
        abort();
    xsprof_filter_parse(NULL);
    if (xsprof_filter_excludes(name))
        abort();
    free(s);
    return 0;
}

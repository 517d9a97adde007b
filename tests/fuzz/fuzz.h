/* tests/fuzz/fuzz.h — helpers shared by the libFuzzer targets: the entry
 * point, a NUL-terminated copy of the input, and a scratch file holding the
 * input for the file readers. Owner: tests (reliability). */
#ifndef XSPROF_TESTS_FUZZ_H
#define XSPROF_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a C string (embedded NULs end it, as in an environment
 * variable). The caller frees it. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}

/* Replace the content of the per-process scratch file with the input and
 * return its path (a regular file under $TMPDIR or /tmp, removed at exit). */
const char *fuzz_scratch_file(const uint8_t *data, size_t size, const char *suffix);

/* Use what a loaded rank says about its code as xsmerge does: every MPI
 * row's call stack and its frames, every module's strings. Aborts when a
 * loaded call stack's frames lie outside the frame table (the reader must
 * have refused it). `d` is an xsprof_rank_data. */
struct xsprof_rank_data;
void fuzz_walk_code(const struct xsprof_rank_data *d);

#endif

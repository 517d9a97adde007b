/* tests/io/io_check.h — minimal checking for the io tests: every failed
 * CHECK prints one line and makes the program exit non-zero. */
#ifndef XSPROF_TESTS_IO_CHECK_H
#define XSPROF_TESTS_IO_CHECK_H

#include <stdio.h>

static int io_check_failures;

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            io_check_failures++;                                                  \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
        }                                                                         \
    } while (0)

/* DIR/NAME in one of 8 rotating buffers (a call may hold a few at once). */
static inline const char *io_check_path(const char *dir, const char *name)
{
    static char p[8][4096];
    static int k;
    k = (k + 1) % 8;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static inline int io_check_result(const char *name)
{
    if (io_check_failures)
        fprintf(stderr, "%s: %d check(s) failed\n", name, io_check_failures);
    else
        printf("%s: all checks passed\n", name);
    return io_check_failures ? 1 : 0;
}

#endif

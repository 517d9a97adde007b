/* core/config.c — XSPROF_* environment: the table of known variables, read
 * once at start, with a warning naming the closest valid name for typos. */
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <errno.h>
#include "internal.h"

extern char **environ;

/* The documented variables (README "Configuration" shows the same table). */
static const char *const known[] = {
    "XSPROF_OUTPUT", "XSPROF_ENABLE", "XSPROF_BUFFER_MB", "XSPROF_CHUNK_KB", "XSPROF_ON_FULL", "XSPROF_FLUSH_S",
    "XSPROF_SCHEDULE", "XSPROF_FILTER", "XSPROF_COUNTERS", "XSPROF_MPI", "XSPROF_GPU", "XSPROF_LOG",
    "XSPROF_WARN_REGION_MS", "XSPROF_SUMMARY", "XSPROF_CALLSITE_DEPTH", "XSPROF_MEMORY", "XSPROF_MEMORY_STACK_BYTES", "XSPROF_CLOCK_SYNC_S",
    "XSPROF_CLOCK", "XSPROF_CUPTI_LIB", "XSPROF_WARN_RSS_MB", "XSPROF_NVTX_EMIT", "XSPROF_CUDA_PROFILER_API",
    "XSPROF_SAMPLE_HZ", "XSPROF_SAMPLE_CLOCK", "XSPROF_TEST_SAMPLE_REFUSE", "XSPROF_TEST_SEND_STALL_US",
    "XSPROF_TEST_CLOCK_SKEW_NS", "XSPROF_TEST_CLOCK_DRIFT_PPM", "XSPROF_TEST_JOURNAL_DELAY_MS", "XSPROF_TEST_FINALIZE_NOTE_MS", "XSPROF_TEST_RANKS_PER_NODE", "XSPROF_WRITER_THREADS",
    /* read by xsmerge (its help lists them); known here so a profiled
     * process that inherits them does not warn */
    "XSPROF_MERGE_JSON_PART_MB", "XSPROF_MERGE_JSON_PART_BYTES", "XSPROF_MERGE_READERS", "XSPROF_MERGE_TIMES",
    "XSPROF_MERGE_STREAM", "XSPROF_MERGE_STREAM_WINDOW", "XSPROF_MERGE_ANALYSIS_WINDOW", "XSPROF_MERGE_MEMORY_LIMIT", "XSPROF_MERGE_H5_DEFLATE",
    "XSPROF_MERGE_THP", "XSPROF_MERGE_UI_MB", "XSPROF_MERGE_STREAM_MB", NULL};

const char *xsprof_config_get(const char *name) {
    const char *v = getenv(name);
    return (v && *v) ? v : NULL;
}

static size_t edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 64;
    size_t d[64][64];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            size_t x = d[i - 1][j] + 1, y = d[i][j - 1] + 1;
            d[i][j] = c < x ? (c < y ? c : y) : (x < y ? x : y);
        }
    return d[la][lb];
}

void xsprof_config_load(void) {
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "XSPROF_", 7))
            continue;
        char name[64];
        size_t n = strcspn(*e, "=");
        if (n >= sizeof name)
            n = sizeof name - 1;
        memcpy(name, *e, n);
        name[n] = 0;
        int ok = 0;
        const char *best = NULL;
        size_t bestd = 64;
        for (int i = 0; known[i]; i++) {
            if (!strcmp(name, known[i])) {
                ok = 1;
                break;
            }
            size_t d = edit_distance(name, known[i]);
            if (d < bestd) {
                bestd = d;
                best = known[i];
            }
        }
        /* Variables the test harness and build export are not settings. */
        if (!ok && strcmp(name, "XSPROF_LIB") && strcmp(name, "XSPROF_MPI_LIB") && strcmp(name, "XSPROF_BUILD") &&
            strcmp(name, "XSPROF_SOURCE"))
            xsprof_log(XSPROF_LOG_WARN, "unknown variable %s ignored; did you mean %s?", name, best ? best : "?");
    }
}

xsprof_status xsprof_size_parse(const char *s, uint64_t *out) {
    if (!s || !out)
        return XSPROF_ERR_INVALID;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || s[0] == '-')
        return XSPROF_ERR_INVALID;
    uint64_t mul = 1;
    switch (toupper((unsigned char)*end)) {
    case 0: break;
    case 'K': mul = 1ull << 10; end++; break;
    case 'M': mul = 1ull << 20; end++; break;
    case 'G': mul = 1ull << 30; end++; break;
    default: return XSPROF_ERR_INVALID;
    }
    if (*end == 'i' || *end == 'I')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end)
        return XSPROF_ERR_INVALID;
    if (v > UINT64_MAX / mul)
        return XSPROF_ERR_INVALID;
    *out = v * mul;
    return XSPROF_OK;
}

int64_t xsprof_config_int(const char *name, int64_t dflt) {
    const char *v = xsprof_config_get(name);
    if (!v)
        return dflt;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || errno) {
        xsprof_log(XSPROF_LOG_WARN, "%s=%s is not an integer; using %lld", name, v, (long long)dflt);
        return dflt;
    }
    return x;
}

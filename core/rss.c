/* core/rss.c — XSPROF_WARN_RSS_MB: the process's resident set, read from
 * /proc/self/statm by the journal's writer thread at most once a second
 * (no cost on the recording threads) and once more at finalize. A warning
 * when it first exceeds the limit, again each time it has grown by another
 * quarter past the value last reported, and anew after it fell below. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

static int64_t g_limit_mb;      /* 0: off */
static int64_t g_reported_mb;   /* last value warned about, 0: below the limit */
static int64_t g_last_check_ns; /* CLOCK_MONOTONIC */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void check_at_finalize(void) { xsprof_rss_check(1); }

void xsprof_rss_init(void) {
    const char *v = xsprof_config_get("XSPROF_WARN_RSS_MB");
    if (!v)
        return;
    char *end;
    errno = 0;
    long long mb = strtoll(v, &end, 10);
    if (end == v || *end || errno || mb <= 0 || mb > (1ll << 40)) {
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_WARN_RSS_MB=%s ignored (expected a whole number of MiB above 0); "
                   "no memory warnings", v);
        return;
    }
    g_limit_mb = mb;
    if (xsprof_finalize_hook_add(check_at_finalize))
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_WARN_RSS_MB: no check at finalize (no finalize hook left)");
}

static int64_t rss_mb(void) {
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    char *p;
    strtoll(buf, &p, 10); /* total program size; the resident set follows */
    long long pages = strtoll(p, NULL, 10);
    long page = sysconf(_SC_PAGESIZE);
    return (int64_t)pages * (page > 0 ? page : 4096) >> 20;
}

void xsprof_rss_check(int force) {
    if (!g_limit_mb)
        return;
    int saved = errno;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    pthread_mutex_lock(&g_lock);
    int64_t mb = -1;
    if (force || now - g_last_check_ns >= 1000000000) {
        g_last_check_ns = now;
        mb = rss_mb();
    }
    int say = mb > g_limit_mb && (!g_reported_mb || mb >= g_reported_mb + g_reported_mb / 4);
    if (say)
        g_reported_mb = mb;
    else if (mb >= 0 && mb <= g_limit_mb)
        g_reported_mb = 0;
    pthread_mutex_unlock(&g_lock);
    if (say)
        xsprof_log(XSPROF_LOG_WARN, "resident memory %lld MiB, above XSPROF_WARN_RSS_MB=%lld", (long long)mb,
                   (long long)g_limit_mb);
    errno = saved;
}

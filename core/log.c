/* core/log.c — one-line, rank- and thread-prefixed messages on stderr.
 * Written with a single write(2) so lines of different ranks never interleave. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "internal.h"

static int g_log_level = XSPROF_LOG_WARN;

void xsprof_log_init(void) {
    const char *v = xsprof_config_get("XSPROF_LOG");
    if (!v)
        return;
    static const char *names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (!strcasecmp(v, names[i]) || (v[0] == '0' + i && !v[1]))
            g_log_level = i;
    if (!strcasecmp(v, "off") || !strcasecmp(v, "none"))
        g_log_level = -1;
}

void xsprof_log(int level, const char *fmt, ...) {
    if (level > g_log_level)
        return;
    int saved = errno;
    char line[1024];
    static const char *tag[] = {"error", "warning", "info", "debug"};
    xsprof_thread *t = xsprof_tl_.thread;
    int n;
    if (t && t->tid)
        n = snprintf(line, sizeof line, "xsprof[rank %d thread %u] %s: ", xsprof_g.rank, t->tid, tag[level]);
    else
        n = snprintf(line, sizeof line, "xsprof[rank %d] %s: ", xsprof_g.rank, tag[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(2, line, len);
    (void)w;
    errno = saved;
}

/* core/log.c — xsprof's own messages: every one goes through xsprof_log,
 * which passes it to the application's handler (xsprof_log_handler_set) or
 * writes one rank- and thread-prefixed line on stderr. The stderr line is a
 * single write(2) so lines of different ranks never interleave. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "internal.h"

static _Atomic int g_log_level = XSPROF_LOG_WARN;

/* Log calls hold the read side while they run the handler, so a set()
 * (the write side) returns only once no call of the old handler is left
 * and the application may free its `user`. */
static pthread_rwlock_t g_handler_lock = PTHREAD_RWLOCK_INITIALIZER;
static xsprof_log_fn g_handler;
static void *g_handler_user;
/* 1 while this thread runs the handler: a message it causes goes to
 * stderr (taking the read side again could deadlock behind a waiting set,
 * and a handler calling set would wait for itself). */
static __thread int tls_in_handler;

int xsprof_log_in_handler(void) { return tls_in_handler; }

void xsprof_log_init(void) {
    const char *v = xsprof_config_get("XSPROF_LOG");
    if (!v)
        return;
    static const char *names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (!strcasecmp(v, names[i]) || (v[0] == '0' + i && !v[1]))
            atomic_store(&g_log_level, i);
    if (!strcasecmp(v, "off") || !strcasecmp(v, "none"))
        atomic_store(&g_log_level, XSPROF_LOG_OFF);
}

xsprof_status xsprof_log_level_set(xsprof_log_level level) {
    if (level < XSPROF_LOG_OFF || level > XSPROF_LOG_DEBUG)
        return XSPROF_ERR_INVALID;
    atomic_store(&g_log_level, (int)level);
    return XSPROF_OK;
}

xsprof_log_level xsprof_log_level_get(void) { return (xsprof_log_level)atomic_load(&g_log_level); }

xsprof_status xsprof_log_handler_set(xsprof_log_fn fn, void *user) {
    if (tls_in_handler)
        return XSPROF_ERR_STATE; /* waiting for the calls in flight would wait for this one */
    int saved = errno;
    pthread_rwlock_wrlock(&g_handler_lock);
    g_handler = fn;
    g_handler_user = fn ? user : NULL;
    pthread_rwlock_unlock(&g_handler_lock);
    errno = saved;
    return XSPROF_OK;
}

static void log_stderr(int level, const char *text) {
    static const char *tag[] = {"error", "warning", "info", "debug"};
    char line[1100];
    xsprof_thread *t = xsprof_tl_.thread;
    int n;
    if (t && t->tid)
        n = snprintf(line, sizeof line, "xsprof[rank %d thread %u] %s: %s", xsprof_g.rank, t->tid, tag[level], text);
    else
        n = snprintf(line, sizeof line, "xsprof[rank %d] %s: %s", xsprof_g.rank, tag[level], text);
    size_t len = n < 0 ? 0 : (size_t)n;
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(2, line, len);
    (void)w;
}

void xsprof_log(int level, const char *fmt, ...) {
    if (level > atomic_load_explicit(&g_log_level, memory_order_relaxed) || level < 0)
        return;
    int saved = errno;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (m < 0)
        text[0] = 0;
    int sent = 0;
    if (!tls_in_handler && pthread_rwlock_rdlock(&g_handler_lock) == 0) {
        if (g_handler) {
            tls_in_handler = 1;
            g_handler((xsprof_log_level)level, xsprof_g.rank, text, g_handler_user);
            tls_in_handler = 0;
            sent = 1;
        }
        pthread_rwlock_unlock(&g_handler_lock);
    }
    if (!sent)
        log_stderr(level, text);
    errno = saved;
}

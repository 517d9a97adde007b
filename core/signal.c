/* core/signal.c — fatal-signal handling. The handler only stores the
 * signal number into the journal header (a plain store into a shared
 * mapping: async-signal-safe), restores the previous disposition and lets
 * the signal take its course, so the exit status and core dump of the
 * program are unchanged. Records need no flushing: they already live in
 * the journal's page cache. */
#include <signal.h>
#include <string.h>
#include "internal.h"

static const int g_sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGTERM, SIGFPE, SIGILL};
#define NSIGS ((int)(sizeof g_sigs / sizeof g_sigs[0]))
static struct sigaction g_old[NSIGS];

static void on_fatal(int sig, siginfo_t *info, void *ctx) {
    (void)ctx;
    xsprof_journal_mark_signal(sig);
    for (int i = 0; i < NSIGS; i++)
        if (g_sigs[i] == sig) {
            sigaction(sig, &g_old[i], NULL);
            break;
        }
    /* A fault re-executes the instruction and faults again into the old
     * handler; a sent signal (kill, raise, abort) must be raised again. */
    if (!info || info->si_code <= 0 || sig == SIGABRT || sig == SIGTERM)
        raise(sig);
}

void xsprof_signals_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NSIGS; i++) {
        struct sigaction cur;
        if (sigaction(g_sigs[i], NULL, &cur) != 0)
            continue;
        /* Respect an application that ignores the signal. */
        if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN)
            continue;
        if (sigaction(g_sigs[i], &sa, &g_old[i]) != 0)
            xsprof_log(XSPROF_LOG_DEBUG, "cannot install handler for signal %d", g_sigs[i]);
    }
}

/* merge/live/cmd.c — xsmerge --live: options, the once-a-second loop (look
 * at the journals, publish the snapshot, redraw the terminal), the end of
 * the job, Ctrl-C. Owner: merge live view. */
#include "merge/live/http.h"
#include "merge/live/live.h"
#include "xsprof_config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_ALERTS 32
#define READS 10 /* reads of the journals a second; one look of them all */

static const char live_usage[] =
    "usage: xsmerge --live RUN_DIR [--port N] [--bind ADDR] [--alert EXPR]... [--tty] [--until-end]\n"
    "\n"
    "Watches a running job: follows the journals in RUN_DIR (read-only) and\n"
    "serves a dashboard on http://ADDR:N/?token=... (printed at start; every\n"
    "request needs the token), with GET /api/snapshot (JSON, xsprof-live/1).\n"
    "  --port N       port (default 8484; 0: any free one)\n"
    "  --bind ADDR    address (default 127.0.0.1: this machine only)\n"
    "  --alert EXPR   wait>50%, mpi>30%, region:NAME>200ms (mean per call),\n"
    "                 rss>8GB (XSPROF_MEMORY high-water mark); repeatable\n"
    "  --tty          a table in the terminal instead (ends with the job)\n"
    "  --until-end    stop serving once the job ended\n";

static volatile sig_atomic_t live_stop;
static void on_signal(int sig)
{
    (void)sig;
    live_stop = 1;
}

static int live_usage_err(const char *msg, const char *arg)
{
    fprintf(stderr, "xsmerge: --live: %s%s%s\nTry 'xsmerge --live --help'.\n", msg, arg ? ": " : "", arg ? arg : "");
    return 1;
}

/* Sleep until the next second of the loop, or a signal. */
static void live_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (!live_stop && nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int xsm_live_main(int argc, char **argv)
{
    const char *run_dir = NULL, *bind_addr = "127.0.0.1";
    int port = 8484, tty = 0, until_end = 0;
    xsm_alert alerts[MAX_ALERTS];
    size_t nalerts = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--live"))
            continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(live_usage, stdout);
            return 0;
        } else if (!strcmp(a, "--tty")) {
            tty = 1;
        } else if (!strcmp(a, "--until-end")) {
            until_end = 1;
        } else if (!strcmp(a, "--port") || !strcmp(a, "--bind") || !strcmp(a, "--alert")) {
            if (!val)
                return live_usage_err("option needs a value", a);
            i++;
            if (a[2] == 'b') {
                bind_addr = val;
            } else if (a[2] == 'p') {
                char *end;
                long p = strtol(val, &end, 10);
                if (*end || end == val || p < 0 || p > 65535)
                    return live_usage_err("--port needs a number from 0 to 65535", val);
                port = (int)p;
            } else if (nalerts == MAX_ALERTS) {
                return live_usage_err("too many --alert (at most 32)", val);
            } else if (xsm_alert_parse(val, &alerts[nalerts++])) {
                return live_usage_err("bad --alert (use wait>50%, mpi>30%, region:NAME>200ms, rss>8GB)", val);
            }
        } else if (a[0] == '-') {
            return live_usage_err("unknown option", a);
        } else if (run_dir) {
            return live_usage_err("one run directory only", a);
        } else {
            run_dir = a;
        }
    }
    if (!run_dir)
        return live_usage_err("missing RUN_DIR", NULL);
    struct stat sb;
    if (stat(run_dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return live_usage_err("not a directory", run_dir);
#if !XSPROF_HAVE_MICROHTTPD
    (void)bind_addr; /* parsed for the same usage errors, served by nothing */
    (void)port;
    if (!tty)
        return live_usage_err("the dashboard is unavailable: this xsmerge was built without libmicrohttpd (Debian: "
                              "libmicrohttpd-dev; install it and rebuild); --tty works without it", NULL);
#endif
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: the sleep ends at once */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    char err[8192] = "";
    xsm_live *l = xsm_live_new(run_dir, alerts, nalerts);
    if (!l) {
        fprintf(stderr, "xsmerge: --live: out of memory\n");
        return 1;
    }
#if XSPROF_HAVE_MICROHTTPD
    xsm_live_http *h = NULL;
    if (!tty) {
        int bound = port;
        if (xsm_live_http_start(bind_addr, port, &h, &bound, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            xsm_live_free(l);
            return 1;
        }
        printf("xsmerge: --live: watching %s\nxsmerge: --live: dashboard at http://%s%s%s:%d/?token=%s\n", run_dir,
               strchr(bind_addr, ':') ? "[" : "", bind_addr, strchr(bind_addr, ':') ? "]" : "", bound,
               xsm_live_http_token(h));
        fflush(stdout);
    }
#endif
    int rc = 0, said_end = 0;
    xsm_buf b = {0};
    while (!live_stop) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (xsm_live_tick(l, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            rc = 1;
            break;
        }
        const char *note = xsm_live_note(l);
        if (note[0] && !tty)
            fprintf(stderr, "%s\n", note);
        b.len = 0;
        if (tty) {
            xsm_buf_puts(&b, "\033[H\033[2J");
            xsm_live_text(l, &b);
            if (note[0])
                xsm_buf_printf(&b, "\n%s\n", note);
            if (b.p && !b.failed) {
                fputs(b.p, stdout);
                fflush(stdout);
            }
        }
#if XSPROF_HAVE_MICROHTTPD
        else {
            xsm_live_json(l, &b);
            if (b.p && !b.failed)
                xsm_live_http_publish(h, b.p);
        }
#endif
        if (xsm_live_ended(l) && !said_end) {
            said_end = 1;
            xsm_buf m = {0};
            xsm_live_merge_cmd(xsm_live_get(l), &m);
            fprintf(stderr, "xsmerge: --live: the job has ended; the full merge: %s\n", m.p ? m.p : "");
            xsm_buf_free(&m);
            if (tty || until_end)
                break;
        }
        /* the rest of the second: the rows as they come, ten times */
        for (int i = 1; i <= READS && !live_stop; i++) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double spent = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
            double next = (double)i / READS;
            live_sleep(spent < next ? next - spent : 0.01);
            if (i < READS && xsm_live_read(l, err, sizeof err)) {
                fprintf(stderr, "%s\n", err);
                rc = 1;
                live_stop = 1;
            }
        }
    }
    xsm_buf_free(&b);
#if XSPROF_HAVE_MICROHTTPD
    xsm_live_http_stop(h);
#endif
    xsm_live_free(l);
    return rc;
}

/* merge/progress.c — see progress.h. */
#include "merge/progress.h"
#include "merge/util.h"

#include <pthread.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>

/* writers of trace.pftrace step from several threads */
static pthread_mutex_t xsm_prog_lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
    int on;
    int drawn;
    double start;     /* when the merge began: the one-second rule is global */
    double last;
    const char *label;
    uint64_t total, done;
} xsm_prog;

void xsm_progress_enable(int on)
{
    xsm_prog.on = on;
    xsm_prog.start = xsm_now();
}

void xsm_progress_begin(const char *label, uint64_t total)
{
    xsm_prog.label = label;
    xsm_prog.total = total;
    xsm_prog.done = 0;
}

static void xsm_progress_draw(void)
{
    int width = 30;
    double frac = xsm_prog.total ? (double)xsm_prog.done / (double)xsm_prog.total : 0.0;
    if (frac > 1.0)
        frac = 1.0;
    int fill = (int)(frac * width);
    char bar[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = 0;
    fprintf(stderr, "\rxsmerge [%s] %3d%% %s %llu/%llu\033[K", bar, (int)(frac * 100), xsm_prog.label,
            (unsigned long long)xsm_prog.done, (unsigned long long)xsm_prog.total);
    fflush(stderr);
    xsm_prog.drawn = 1;
}

void xsm_progress_step(uint64_t n)
{
    pthread_mutex_lock(&xsm_prog_lock);
    xsm_prog.done += n;
    double now = xsm_prog.on ? xsm_now() : 0.0;
    if (xsm_prog.on && now - xsm_prog.start >= 1.0 && now - xsm_prog.last >= 0.1) {
        xsm_prog.last = now;
        xsm_progress_draw();
    }
    pthread_mutex_unlock(&xsm_prog_lock);
}

void xsm_progress_end(void)
{
    if (xsm_prog.on && xsm_prog.drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        xsm_prog.drawn = 0;
    }
}

/* User and system seconds of the whole process (every thread). */
static double xsm_cpu_seconds(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static char xsm_mark_who[32] = "xsmerge";

void xsm_progress_process(int rank, int size)
{
    if (size > 1)
        snprintf(xsm_mark_who, sizeof xsm_mark_who, "xsmerge[%d/%d]", rank, size);
}

void xsm_progress_mark(const char *phase)
{
    static int on = -1;
    static double last, last_cpu;
    if (on < 0) {
        const char *v = getenv("XSPROF_MERGE_TIMES");
        on = v && *v && *v != '0';
        last = xsm_now();
        last_cpu = xsm_cpu_seconds();
    }
    if (!on)
        return;
    double now = xsm_now(), cpu = xsm_cpu_seconds();
    /* resident and peak memory so far, to see which phase sets the peak */
    long rss_kb = -1, hwm_kb = -1;
    FILE *st = fopen("/proc/self/status", "r");
    char line[256];
    while (st && fgets(line, sizeof line, st)) {
        if (strncmp(line, "VmRSS:", 6) == 0)
            rss_kb = strtol(line + 6, NULL, 10);
        else if (strncmp(line, "VmHWM:", 6) == 0)
            hwm_kb = strtol(line + 6, NULL, 10);
    }
    if (st)
        fclose(st);
    /* CPU seconds of all threads beside the wall time: how parallel the phase was */
    fprintf(stderr, "%s: time %-12s %.3f s  cpu %.3f s  rss %.0f MiB  peak %.0f MiB\n", xsm_mark_who, phase, now - last,
            cpu - last_cpu, (double)rss_kb / 1024.0, (double)hwm_kb / 1024.0);
    last = now;
    last_cpu = cpu;
}

/* core/schedule.c — torch.profiler-style schedule advanced by xsprof_step():
 * `wait` steps off, `warmup` steps off (the application warms up, xsprof
 * stays out of the way), `active` steps recorded, repeated `repeat` times
 * (0 = forever). on_trace_ready runs when an active window closes. Each
 * step is a region ProfilerStep#N, so cycles show on the timeline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

static struct {
    int set;
    int wait, warmup, active, repeat;
    long step;
    int cycles_done;
    xsprof_trace_ready_fn fn;
    void *user;
} g_s;

/* The open ProfilerStep#N region: begun and ended on one thread, at the
 * nesting level it began at (steps are taken between a loop's iterations). */
static struct {
    int open;
    xsprof_thread *thread;
    uint32_t level; /* the thread's depth + skipped regions inside the region */
} g_step;

static uint32_t thread_level(void) {
    xsprof_thread *t = xsprof_tl_.thread;
    return (t ? t->depth : 0) + xsprof_tl_.skip;
}

static void step_region_begin(long n) {
    char name[40];
    snprintf(name, sizeof name, "ProfilerStep#%ld", n);
    g_step.thread = xsprof_thread_get();
    if (!g_step.thread)
        return;
    xsprof_region_begin(name); /* skipped (and still paired) while the schedule waits */
    g_step.level = thread_level();
    g_step.open = 1;
}

/* 1 when no step region is left open. */
static int step_region_end(void) {
    if (!g_step.open)
        return 1;
    if (xsprof_tl_.thread != g_step.thread || thread_level() != g_step.level)
        return 0;
    g_step.open = 0;
    xsprof_region_end();
    return 1;
}

void xsprof_step_region_close(void) { step_region_end(); }

static int phase_active(long step) {
    /* 64-bit: each phase may be up to 1e9 steps, their sum overflows int. */
    int64_t cycle = (int64_t)g_s.wait + g_s.warmup + g_s.active;
    int64_t c = step / cycle;
    if (g_s.repeat > 0 && c >= g_s.repeat)
        return 0;
    return step % cycle >= (int64_t)g_s.wait + g_s.warmup;
}

static xsprof_status schedule_apply(int wait, int warmup, int active, int repeat, xsprof_trace_ready_fn fn, void *user) {
    if (wait < 0 || warmup < 0 || active < 1 || repeat < 0)
        return XSPROF_ERR_INVALID;
    pthread_mutex_lock(&xsprof_g.lock);
    g_s.set = 1;
    g_s.wait = wait;
    g_s.warmup = warmup;
    g_s.active = active;
    g_s.repeat = repeat;
    g_s.step = 0;
    g_s.cycles_done = 0;
    g_s.fn = fn;
    g_s.user = user;
    atomic_store(&xsprof_g.schedule_on, phase_active(0));
    xsprof_collecting_update();
    pthread_mutex_unlock(&xsprof_g.lock);
    return XSPROF_OK;
}

xsprof_status xsprof_schedule_set(int wait, int warmup, int active, int repeat, xsprof_trace_ready_fn fn, void *user) {
    int ended = step_region_end();
    xsprof_status st = schedule_apply(wait, warmup, active, repeat, fn, user);
    if (st == XSPROF_OK && ended)
        step_region_begin(0);
    return st;
}

xsprof_status xsprof_schedule_stop(void) {
    if (!step_region_end()) {
        xsprof_anomaly("xsprof_schedule_stop inside a region the step contains, or on another thread");
        return XSPROF_ERR_UNBALANCED;
    }
    pthread_mutex_lock(&xsprof_g.lock);
    g_s.set = 0;
    atomic_store(&xsprof_g.schedule_on, 1);
    xsprof_collecting_update();
    pthread_mutex_unlock(&xsprof_g.lock);
    return XSPROF_OK;
}

xsprof_status xsprof_schedule_parse(const char *spec) {
    if (!spec)
        return XSPROF_OK;
    int v[4] = {0, 0, -1, 1};
    static const char *keys[] = {"wait", "warmup", "active", "repeat"};
    const char *p = spec;
    while (*p) {
        size_t n = strcspn(p, ",");
        int k = -1;
        for (int i = 0; i < 4; i++) {
            size_t kl = strlen(keys[i]);
            if (n > kl && !strncmp(p, keys[i], kl) && p[kl] == '=')
                k = i;
        }
        if (k < 0)
            return XSPROF_ERR_INVALID;
        char *end;
        long x = strtol(p + strlen(keys[k]) + 1, &end, 10);
        if (end != p + n || x < 0 || x > 1000000000)
            return XSPROF_ERR_INVALID;
        v[k] = (int)x;
        p += n;
        if (*p == ',')
            p++;
    }
    if (v[2] < 1)
        return XSPROF_ERR_INVALID;
    return schedule_apply(v[0], v[1], v[2], v[3], NULL, NULL);
}

xsprof_status xsprof_step(void) {
    pthread_mutex_lock(&xsprof_g.lock);
    if (!g_s.set) {
        pthread_mutex_unlock(&xsprof_g.lock);
        return XSPROF_OK;
    }
    int was = phase_active(g_s.step);
    g_s.step++;
    int now = phase_active(g_s.step);
    atomic_store(&xsprof_g.schedule_on, now);
    xsprof_collecting_update();
    xsprof_trace_ready_fn fn = NULL;
    int cycle = 0;
    if (was && !now) {
        cycle = g_s.cycles_done++;
        fn = g_s.fn;
    }
    void *user = g_s.user;
    long n = g_s.step;
    pthread_mutex_unlock(&xsprof_g.lock);
    if (step_region_end())
        step_region_begin(n);
    else if (g_step.thread == xsprof_tl_.thread)
        xsprof_anomaly("xsprof_step inside a region of the step: ProfilerStep regions stop");
    if (was != now)
        xsprof_log(XSPROF_LOG_INFO, "schedule: step %ld, recording %s", g_s.step, now ? "on" : "off");
    if (fn)
        fn(cycle, user);
    return XSPROF_OK;
}

void xsprof_schedule_check_at_finalize(void) {
    if (!g_s.set)
        return;
    int64_t need = (int64_t)g_s.wait + g_s.warmup + g_s.active;
    if (g_s.step < need)
        xsprof_log(XSPROF_LOG_WARN,
                   "schedule wait=%d,warmup=%d,active=%d needs %lld steps for one active cycle, but only %ld ran "
                   "(call xsprof_step() once per iteration)",
                   g_s.wait, g_s.warmup, g_s.active, (long long)need, g_s.step);
}

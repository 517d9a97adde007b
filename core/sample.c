/* core/sample.c — XSPROF_SAMPLE_HZ: every thread's call stack, N times per
 * second of the thread's CPU time (core/README.md, "Sampling", says why
 * this design and what it costs).
 *
 * Each thread of the process gets its own CPU-time clock that raises
 * SIGPROF in that thread: a perf_event_open task-clock event (signal on
 * overflow, re-armed with PERF_EVENT_IOC_REFRESH), or where perf events are
 * refused a POSIX timer on the thread's CPU-time clock. The handler runs on
 * the sampled thread itself, so it unwinds its own stack with backtrace()
 * (the binaries' CFI, as call sites at depth > 1 do) from the interrupted
 * instruction, and puts time and addresses into that thread's ring. It
 * allocates nothing, takes no lock and writes no record: a sampler thread
 * drains the rings, interns the stacks (core/callstack.c, the call sites'
 * table) and appends SAMPLE records, and finds the threads to sample by
 * looking at /proc/self/task every 20 ms, so threads that never call xsprof
 * are sampled too. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* ucontext registers, F_SETSIG, F_SETOWN_EX, SIGEV_THREAD_ID */
#endif
#include <dirent.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include "clock.h"
#include "internal.h"

#define RING 64u           /* samples a thread can hold between two drains (power of 2) */
#define FD_MAX 4096        /* perf events are found by descriptor: those below this */
#define SCAN_NS 20000000   /* new threads are looked for every 20 ms */
#define FULL_SCAN_NS 1000000000 /* and listed every second whatever their count */

enum { MODE_OFF = 0, MODE_PERF = 1, MODE_TIMER = 2 };

typedef struct entry {
    int64_t t;
    uint32_t n;
    uint32_t pad;
    uint64_t pcs[XSPROF_STACK_MAX];
} entry;

/* One sampled thread. Slots are never freed (a late signal may still
 * reach one): a slot whose thread ended is reused for a new one. */
typedef struct slot {
    struct slot *next;
    _Atomic int32_t tid;         /* 0: free */
    _Atomic int fd;              /* perf event, -1 none */
    int has_timer;
    timer_t timer;
    int seen;                    /* in the last /proc/self/task listing */
    _Atomic int busy;            /* the handler is filling the ring */
    _Atomic uint32_t head, tail; /* the handler produces, the sampler thread consumes */
    _Atomic uint64_t lost;       /* samples that found the ring full */
    entry ring[RING];
} slot;

_Atomic int xsprof_sample_wanted;
static _Atomic(slot *) g_by_fd[FD_MAX];
static slot *g_slots;            /* the sampler thread's (and stop's, after the join) */
static int g_mode;
static long g_hz;
static _Atomic int g_stop;
static int g_running;
static pthread_t g_thread;
static pthread_mutex_t g_wait_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_wait_cond;
static int32_t g_sampler_tid;
static int g_unwind = 1;         /* 0: the leaf only (backtrace() could not be prepared) */
static uint64_t g_lost_total, g_missed_fd;

static int32_t gettid_(void) { return (int32_t)syscall(SYS_gettid); }

/* The interrupted instruction. */
static uint64_t context_pc(const void *ucv) {
    const ucontext_t *uc = ucv;
#if defined(__x86_64__)
    return (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uint64_t)uc->uc_mcontext.pc;
#else
    (void)uc;
    return 0;
#endif
}

static void on_sigprof(int sig, siginfo_t *si, void *ucv) {
    (void)sig;
    int saved = errno;
    slot *s = NULL;
    if (si->si_code == SI_TIMER)
        s = si->si_value.sival_ptr;
    else if ((si->si_code == POLL_HUP || si->si_code == POLL_IN) && si->si_fd >= 0 && si->si_fd < FD_MAX)
        s = atomic_load_explicit(&g_by_fd[si->si_fd], memory_order_acquire);
    if (!s || atomic_exchange_explicit(&s->busy, 1, memory_order_acquire))
        goto out;
    if (atomic_load_explicit(&s->tid, memory_order_relaxed) != gettid_())
        goto done; /* a signal queued for the slot's previous thread */
    if (atomic_load_explicit(&xsprof_g.collecting, memory_order_relaxed)) {
        uint32_t h = atomic_load_explicit(&s->head, memory_order_relaxed);
        if (h - atomic_load_explicit(&s->tail, memory_order_acquire) >= RING) {
            atomic_fetch_add_explicit(&s->lost, 1, memory_order_relaxed);
        } else {
            entry *e = &s->ring[h & (RING - 1)];
            uint64_t pc = context_pc(ucv);
            e->t = xsprof_clock_read();
            e->pcs[0] = pc;
            e->n = pc != 0;
            if (g_unwind) {
                /* This handler and the signal frame come first: the
                 * stack starts where the interrupted instruction is. */
                void *bt[XSPROF_STACK_MAX + 8];
                int got = backtrace(bt, XSPROF_STACK_MAX + 8);
                for (int i = 0; i < got; i++)
                    if ((uint64_t)(uintptr_t)bt[i] == pc) {
                        uint32_t n = 0;
                        for (; n < XSPROF_STACK_MAX && i + (int)n < got; n++)
                            e->pcs[n] = (uint64_t)(uintptr_t)bt[i + (int)n];
                        e->n = n;
                        break;
                    }
            }
            if (e->n)
                atomic_store_explicit(&s->head, h + 1, memory_order_release);
        }
    }
    int fd = atomic_load_explicit(&s->fd, memory_order_relaxed);
    if (fd >= 0)
        ioctl(fd, PERF_EVENT_IOC_REFRESH, 1); /* the next overflow signals again */
done:
    atomic_store_explicit(&s->busy, 0, memory_order_release);
out:
    errno = saved;
}

/* XSPROF_SAMPLE_HZ: 0 (off) when unset, 0 or not a rate (with a warning
 * then), at most XSPROF_SAMPLE_HZ_MAX (clamped with a note). */
long xsprof_sample_hz_parse(const char *spec) {
    if (!spec)
        return 0;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(spec, &end, 10);
    if (end == spec || *end || v < 0 || errno) {
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_SAMPLE_HZ=%s is not a rate in samples per second (0 to %d); sampling is off",
                   spec, XSPROF_SAMPLE_HZ_MAX);
        return 0;
    }
    if (v > XSPROF_SAMPLE_HZ_MAX) {
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_SAMPLE_HZ=%s is above %d: sampling at %d per second", spec,
                   XSPROF_SAMPLE_HZ_MAX, XSPROF_SAMPLE_HZ_MAX);
        return XSPROF_SAMPLE_HZ_MAX;
    }
    return (long)v;
}

static int test_refuses(const char *what) {
    const char *v = xsprof_config_get("XSPROF_TEST_SAMPLE_REFUSE");
    return v && (!strcmp(v, "all") || !strcmp(v, what));
}

static int perf_open(slot *s, int32_t tid) {
    if (test_refuses("perf")) {
        errno = EACCES;
        return -1;
    }
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = (uint64_t)(1000000000 / g_hz);
    a.disabled = 1;
    a.exclude_kernel = 1; /* what perf_event_paranoid 2 allows; the stack is the user's anyway */
    a.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return -1;
    struct f_owner_ex owner = {F_OWNER_TID, tid};
    if (fd >= FD_MAX || fcntl(fd, F_SETSIG, SIGPROF) || fcntl(fd, F_SETOWN_EX, &owner) ||
        fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK)) {
        int e = fd >= FD_MAX ? EMFILE : errno;
        close(fd);
        errno = e;
        return -1;
    }
    atomic_store_explicit(&s->fd, fd, memory_order_relaxed);
    atomic_store_explicit(&g_by_fd[fd], s, memory_order_release);
    if (ioctl(fd, PERF_EVENT_IOC_REFRESH, 1)) {
        int e = errno;
        atomic_store(&g_by_fd[fd], NULL);
        atomic_store(&s->fd, -1);
        close(fd);
        errno = e;
        return -1;
    }
    return 0;
}

static int timer_open(slot *s, int32_t tid) {
    if (test_refuses("timer")) {
        errno = EPERM;
        return -1;
    }
    /* The kernel's CPU-time clock of thread `tid` (MAKE_THREAD_CPUCLOCK:
     * per-thread, scheduler time), which pthread_getcpuclockid gives only
     * for threads we hold a pthread_t of. */
    clockid_t clk = (clockid_t)((~(uint32_t)tid) << 3 | 4u | 2u);
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGPROF;
    ev.sigev_value.sival_ptr = s;
    ev._sigev_un._tid = tid;
    if (timer_create(clk, &ev, &s->timer))
        return -1;
    long ns = 1000000000L / g_hz;
    struct itimerspec its = {{ns / 1000000000L, ns % 1000000000L}, {ns / 1000000000L, ns % 1000000000L}};
    if (timer_settime(s->timer, 0, &its, NULL)) {
        int e = errno;
        timer_delete(s->timer);
        errno = e;
        return -1;
    }
    s->has_timer = 1;
    return 0;
}

/* Stop signalling for s; its ring is drained after. */
static void slot_disarm(slot *s) {
    int fd = atomic_load_explicit(&s->fd, memory_order_relaxed);
    if (fd >= 0) {
        ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
        atomic_store_explicit(&g_by_fd[fd], NULL, memory_order_release);
    }
    if (s->has_timer) {
        timer_delete(s->timer);
        s->has_timer = 0;
    }
    /* a handler already past its lookup finishes (and re-arms) first: the
     * descriptor is closed after, so it never names another file */
    for (int spin = 0; atomic_load_explicit(&s->busy, memory_order_acquire) && spin < 100000; spin++)
        sched_yield();
    if (fd >= 0) {
        atomic_store_explicit(&s->fd, -1, memory_order_relaxed);
        close(fd);
    }
}

/* Samples of s into records. Every sample in a ring was taken while the
 * session recorded, so it is written like a definition: also once the
 * session stopped or finalize began (which turns ordinary records off
 * before it stops the sampler). */
static void slot_drain(slot *s) {
    uint32_t t = atomic_load_explicit(&s->tail, memory_order_relaxed);
    uint32_t h = atomic_load_explicit(&s->head, memory_order_acquire);
    int32_t tid = atomic_load_explicit(&s->tid, memory_order_relaxed);
    for (; t != h; t++) {
        const entry *e = &s->ring[t & (RING - 1)];
        xsprof_rec_sample r = {.h = {XSPROF_REC_SAMPLE, sizeof r}, .t = e->t, .os_tid = tid};
        r.stack = xsprof_callstack_intern(e->pcs, e->n);
        xsprof_buf_append(&r, sizeof r, 1);
    }
    atomic_store_explicit(&s->tail, t, memory_order_release);
    uint64_t lost = atomic_exchange_explicit(&s->lost, 0, memory_order_relaxed);
    if (lost) {
        g_lost_total += lost;
        xsprof_journal_count_drops(lost);
    }
}

static int arm(slot *s, int32_t tid) {
    atomic_store_explicit(&s->tid, tid, memory_order_relaxed);
    int rc = g_mode == MODE_PERF ? perf_open(s, tid) : timer_open(s, tid);
    if (rc)
        atomic_store_explicit(&s->tid, 0, memory_order_relaxed);
    return rc;
}

/* A slot for thread tid: a free one, or a new one (NULL without memory). */
static slot *slot_take(void) {
    for (slot *s = g_slots; s; s = s->next)
        if (!atomic_load_explicit(&s->tid, memory_order_relaxed))
            return s;
    slot *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    atomic_init(&s->fd, -1);
    s->next = g_slots;
    g_slots = s;
    return s;
}

/* Every thread of the process gets a clock; threads gone give theirs back. */
static void scan_threads(void) {
    int guard = xsprof_guard_enter(); /* opendir's and our allocations are not the program's (XSPROF_MEMORY) */
    DIR *dir = opendir("/proc/self/task");
    if (!dir) {
        if (guard)
            xsprof_guard_leave();
        return;
    }
    for (slot *s = g_slots; s; s = s->next)
        s->seen = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        int32_t tid = (int32_t)atoi(de->d_name);
        if (tid <= 0 || tid == g_sampler_tid)
            continue;
        slot *s = g_slots;
        while (s && atomic_load_explicit(&s->tid, memory_order_relaxed) != tid)
            s = s->next;
        if (!s) {
            if (!(s = slot_take()))
                break;
            if (arm(s, tid)) {
                if (errno == EMFILE)
                    g_missed_fd++;
                continue; /* the thread ended meanwhile, or no descriptor left: tried again next scan */
            }
        }
        s->seen = 1;
    }
    closedir(dir);
    if (guard)
        xsprof_guard_leave();
    for (slot *s = g_slots; s; s = s->next)
        if (atomic_load_explicit(&s->tid, memory_order_relaxed) && !s->seen) {
            slot_disarm(s);
            slot_drain(s);
            atomic_store_explicit(&s->tid, 0, memory_order_relaxed);
        }
}

static void *sampler_main(void *arg) {
    (void)arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    g_sampler_tid = gettid_();
    xsprof_thread_name("xsprof sampler");
    /* drained at least twice per ring's worth of samples */
    int64_t drain_ns = 500000000LL * RING / 2 / g_hz;
    drain_ns = drain_ns > SCAN_NS ? SCAN_NS : drain_ns < 1000000 ? 1000000 : drain_ns;
    int64_t next_scan = 0, next_full = 0;
    nlink_t threads_seen = 0;
    pthread_mutex_lock(&g_wait_lock);
    while (!atomic_load(&g_stop)) {
        pthread_mutex_unlock(&g_wait_lock);
        int64_t now = xsprof_clock_monotonic();
        if (now >= next_scan) {
            /* /proc/self/task's link count is the number of threads + 2:
             * one stat instead of listing the directory, unless it changed
             * (a thread that ended and one that started in between are
             * found by the listing every second) */
            struct stat st;
            nlink_t count = stat("/proc/self/task", &st) == 0 ? st.st_nlink : 0;
            if (!count || count != threads_seen || now >= next_full) {
                scan_threads(); /* lists every thread that existed at the stat, and maybe later ones */
                threads_seen = count;
                next_full = now + FULL_SCAN_NS;
            }
            next_scan = now + SCAN_NS;
        }
        for (slot *s = g_slots; s; s = s->next)
            if (atomic_load_explicit(&s->tid, memory_order_relaxed))
                slot_drain(s);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += drain_ns;
        until.tv_sec += until.tv_nsec / 1000000000;
        until.tv_nsec %= 1000000000;
        pthread_mutex_lock(&g_wait_lock);
        if (!atomic_load(&g_stop))
            pthread_cond_timedwait(&g_wait_cond, &g_wait_lock, &until);
    }
    pthread_mutex_unlock(&g_wait_lock);
    for (slot *s = g_slots; s; s = s->next)
        if (atomic_load_explicit(&s->tid, memory_order_relaxed)) {
            slot_disarm(s);
            slot_drain(s);
            atomic_store_explicit(&s->tid, 0, memory_order_relaxed);
        }
    return NULL;
}

/* Installs the handler unless the program has its own (then sampling would
 * take the program's signal): 0, or -1 with the reason logged. */
static int handler_install(void) {
    struct sigaction cur;
    if (sigaction(SIGPROF, NULL, &cur) == 0 && ((cur.sa_flags & SA_SIGINFO) ? cur.sa_sigaction != on_sigprof
                                                                           : cur.sa_handler != SIG_DFL)) {
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_SAMPLE_HZ: the program handles SIGPROF itself; sampling is off");
        return -1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGPROF, &sa, NULL)) {
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_SAMPLE_HZ: cannot install the SIGPROF handler (%s); sampling is off",
                   strerror(errno));
        return -1;
    }
    return 0;
}

static int paranoid_level(void) {
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
    int v = -100;
    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = -100;
        fclose(f);
    }
    return v;
}

/* Which clock threads get (XSPROF_SAMPLE_CLOCK): auto, perf if the calling
 * thread can have one, else a timer (one warning), else none (one
 * warning); perf or timer alone when asked for. */
static int mode_choose(void) {
    /* the calling thread's own slot: once armed it stays, so the thread
     * that starts recording (MPI_Init's) is sampled from now on, not from
     * the sampler thread's first listing */
    slot *probe = slot_take();
    if (!probe) {
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_SAMPLE_HZ: out of memory; the run goes on without samples");
        return MODE_OFF;
    }
    const char *want = xsprof_config_get("XSPROF_SAMPLE_CLOCK");
    if (want && strcmp(want, "auto") && strcmp(want, "perf") && strcmp(want, "timer")) {
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_SAMPLE_CLOCK=%s is not auto, perf or timer; using auto", want);
        want = NULL;
    }
    int32_t self = gettid_();
    char why[96] = "";
    if (!want || strcmp(want, "timer")) {
        g_mode = MODE_PERF;
        if (!arm(probe, self))
            return MODE_PERF;
        int perf_errno = errno, par = paranoid_level();
        if (par > 2 && (perf_errno == EACCES || perf_errno == EPERM))
            snprintf(why, sizeof why, "%s, perf_event_paranoid is %d", strerror(perf_errno), par);
        else
            snprintf(why, sizeof why, "%s", strerror(perf_errno));
        if (want) {
            xsprof_log(XSPROF_LOG_WARN, "XSPROF_SAMPLE_HZ: perf_event_open refused (%s) and XSPROF_SAMPLE_CLOCK=perf: "
                       "the run goes on without samples", why);
            return MODE_OFF;
        }
    }
    g_mode = MODE_TIMER;
    if (!arm(probe, self)) {
        if (!want)
            xsprof_log(XSPROF_LOG_WARN, "XSPROF_SAMPLE_HZ: perf_event_open refused (%s): sampling with per-thread "
                       "CPU-time timers instead", why);
        return MODE_TIMER;
    }
    if (want)
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_SAMPLE_HZ: no CPU-time timer (%s): the run goes on without samples",
                   strerror(errno));
    else
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_SAMPLE_HZ: perf_event_open refused (%s) and no CPU-time timer either "
                   "(%s): the run goes on without samples", why, strerror(errno));
    return MODE_OFF;
}

void xsprof_sample_start(void) {
    if (g_running)
        return;
    g_hz = xsprof_sample_hz_parse(xsprof_config_get("XSPROF_SAMPLE_HZ"));
    if (g_hz <= 0)
        return;
    /* backtrace() loads libgcc's unwinder at its first call: here, never
     * inside the handler */
    void *warm[4];
    int guard = xsprof_guard_enter();
    g_unwind = backtrace(warm, 4) > 0;
    if (guard)
        xsprof_guard_leave();
    if (handler_install())
        return;
    if ((g_mode = mode_choose()) == MODE_OFF)
        return;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g_wait_cond, &ca);
    pthread_condattr_destroy(&ca);
    atomic_store(&g_stop, 0);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the program's signals never land on the sampler */
    int rc = pthread_create(&g_thread, NULL, sampler_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        for (slot *s = g_slots; s; s = s->next) /* the calling thread's, armed by mode_choose */
            if (atomic_load_explicit(&s->tid, memory_order_relaxed)) {
                slot_disarm(s);
                atomic_store_explicit(&s->tid, 0, memory_order_relaxed);
            }
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_SAMPLE_HZ: cannot start the sampler thread (%s); sampling is off",
                   strerror(rc));
        return;
    }
    g_running = 1;
    /* what one sample weighs, for the report: a perf task-clock period is
     * exact; a CPU-time timer fires at most once a kernel tick, so its
     * weight is not known (0) and the report gives shares only */
    char period[32];
    snprintf(period, sizeof period, "%ld", g_mode == MODE_PERF ? 1000000000L / g_hz : 0L);
    xsprof_meta_set("sample_period_ns", period);
    xsprof_meta_set("sample_clock", g_mode == MODE_PERF ? "perf" : "timer");
    xsprof_log(XSPROF_LOG_INFO, "sampling every thread at %ld Hz of CPU time (%s)", g_hz,
               g_mode == MODE_PERF ? "perf task-clock" : "CPU-time timers");
}

void xsprof_sample_stop(void) {
    if (!g_running)
        return;
    pthread_mutex_lock(&g_wait_lock);
    atomic_store(&g_stop, 1);
    pthread_cond_signal(&g_wait_cond);
    pthread_mutex_unlock(&g_wait_lock);
    pthread_join(g_thread, NULL);
    g_running = 0;
    if (g_lost_total)
        xsprof_log(XSPROF_LOG_INFO, "%llu samples lost: a thread's ring was full between two drains",
                   (unsigned long long)g_lost_total);
    if (g_missed_fd)
        xsprof_log(XSPROF_LOG_INFO, "some threads were not sampled: no file descriptor below %d for their perf event",
                   FD_MAX);
}

/* The child of a fork has no sampler thread and must not keep the parent's
 * events: its copies of their descriptors are closed (the parent keeps
 * its own). The handler stays, finding no slot. */
void xsprof_sample_fork_child(void) {
    if (!g_running)
        return;
    for (slot *s = g_slots; s; s = s->next) {
        int fd = atomic_exchange(&s->fd, -1);
        if (fd >= 0) {
            atomic_store(&g_by_fd[fd], NULL);
            close(fd);
        }
        s->has_timer = 0; /* timers are not inherited */
        atomic_store(&s->tid, 0);
    }
    g_running = 0;
}

/* sample_overhead: the cost of XSPROF_SAMPLE_HZ on a compute loop. The
 * driver runs itself as a child once per rate (0 = off, 100, 1000 Hz; "tm":
 * with XSPROF_SAMPLE_CLOCK=timer), the
 * rates interleaved round after round; each child times the same loop
 * inside one region and prints its process CPU time (every thread: the
 * signal handler runs on the computing thread, the sampler thread beside
 * it) and the computing thread's own. Medians per rate, the overhead against 0 Hz, samples
 * taken, and the bytes on disk per sample (/events/samples plus the call
 * stacks it added). Two floors beside, xsprof off: "1000 fl", the kernel
 * sampling the thread at 1 kHz into a perf ring nobody reads (the timer
 * interrupt and the sample written: what any perf-based sampler pays),
 * and "1000 fs", the same with an empty signal handler run per sample
 * (what a sampler that unwinds on the sampled thread pays before it does
 * anything). Never asserted: timing on shared machines is noisy.
 *
 * usage: sample_overhead [ROUNDS [LOOP_M]]   (XSPROF_OUTPUT: where the runs go) */
#include <fcntl.h>
#include <hdf5.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xsprof/xsprof.h>

#include "io/reader.h"

/* the rate, and how threads get their clock (XSPROF_SAMPLE_CLOCK): perf
 * task-clock events, or CPU-time timers ("tm") */
static const char *const rates[] = {"0", "100", "1000", "100", "1000", "0", "0"};
static const char *const label[] = {"0", "100", "1000", "100 tm", "1000 tm", "1000 fl", "1000 fs"};
#define NRATES 7
#define FLOOR_RING 5   /* label[5]: the kernel's sampling alone */
#define FLOOR_SIGNAL 6 /* label[6]: and an empty handler per sample */

static double clock_s(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* three call levels, so each sample unwinds a few frames; the sink keeps
 * the compiler from computing the pure calls once */
static volatile double g_sink;
__attribute__((noinline)) static double kernel(long n) {
    double s = 1.0;
    for (long i = 0; i < n; i++)
        s = s * 1.0000001 + 1e-9;
    g_sink += s;
    return s;
}
__attribute__((noinline)) static double mid(long n) { return kernel(n / 2) + kernel(n - n / 2); }
__attribute__((noinline)) static double top(long n) {
    double s = 0;
    for (int k = 0; k < 100; k++)
        s += mid(n / 100);
    return s;
}

static void on_sample(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)si;
    (void)uc;
}

/* The floors: a task-clock event of this thread sampling at 1 kHz into an
 * 8-page ring, its samples never read (the kernel stops writing when the
 * ring is full and keeps taking the interrupts); with signal, each sample
 * also raises SIGIO to an empty handler, re-armed as xsprof's sampler
 * re-arms its event. -1 when perf events are refused. */
static int floor_open(int signal) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = 1000000; /* ns of CPU time */
    a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
    a.exclude_kernel = 1;
    a.wakeup_events = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0 || mmap(NULL, 9 * (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED)
        return -1;
    if (signal) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sample;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigaction(SIGIO, &sa, NULL);
        struct f_owner_ex own = {F_OWNER_TID, (pid_t)syscall(SYS_gettid)};
        if (fcntl(fd, F_SETOWN_EX, &own) || fcntl(fd, F_SETFL, O_ASYNC) || fcntl(fd, F_SETSIG, SIGIO))
            return -1;
    }
    return 0;
}

static int child(long n) {
    /* the journal (and with it the sampler) starts in every run, and the
     * writer thread's clock calibration ends, before the measurement */
    xsprof_region_begin("warm");
    xsprof_region_end();
    nanosleep(&(struct timespec){0, 400000000}, NULL);
    const char *fl = getenv("BENCH_SAMPLE_FLOOR");
    if (fl && floor_open(atoi(fl)) != 0) {
        fprintf(stderr, "sample_overhead: perf_event_open refused: no floor\n");
        return 1;
    }
    xsprof_region_begin("compute");
    double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    volatile double s = top(n);
    double c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t1 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    xsprof_region_end();
    (void)s;
    printf("%.6f %.6f\n", c1 - c0, t1 - t0);
    xsprof_finalize();
    return 0;
}

static unsigned long long storage(hid_t f, const char *path) {
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    unsigned long long n = d >= 0 ? (unsigned long long)H5Dget_storage_size(d) : 0;
    if (d >= 0)
        H5Dclose(d);
    return n;
}

int main(int argc, char **argv) {
    if (getenv("BENCH_SAMPLE_CHILD"))
        return child(atol(getenv("BENCH_SAMPLE_CHILD")));
    int rounds = argc > 1 ? atoi(argv[1]) : 7;
    long n = (argc > 2 ? atol(argv[2]) : 300) * 1000000L;
    char base[512];
    const char *out = getenv("XSPROF_OUTPUT");
    snprintf(base, sizeof base, "%s", out && *out ? out : "");
    if (!base[0])
        snprintf(base, sizeof base, "/dev/shm/xsprof-bench-sample-%d", (int)getpid());
    double cpu[NRATES][64], thr[NRATES][64];
    size_t nsamples[NRATES] = {0};
    unsigned long long bytes[NRATES] = {0};
    rounds = rounds < 1 ? 1 : rounds > 64 ? 64 : rounds;
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < NRATES; k++) {
            char dir[600], arg[32];
            snprintf(dir, sizeof dir, "%s/r%d-k%d", base, r, k);
            snprintf(arg, sizeof arg, "%ld", n);
            int fd[2];
            if (pipe(fd) != 0)
                return 1;
            pid_t pid = fork();
            if (pid == 0) {
                dup2(fd[1], 1);
                close(fd[0]);
                setenv("BENCH_SAMPLE_CHILD", arg, 1);
                setenv("XSPROF_OUTPUT", dir, 1);
                setenv("XSPROF_SAMPLE_HZ", rates[k], 1);
                setenv("XSPROF_SAMPLE_CLOCK", k == 3 || k == 4 ? "timer" : "perf", 1);
                if (k == FLOOR_RING || k == FLOOR_SIGNAL)
                    setenv("BENCH_SAMPLE_FLOOR", k == FLOOR_SIGNAL ? "1" : "0", 1);
                execv("/proc/self/exe", argv);
                _exit(127);
            }
            close(fd[1]);
            char buf[128] = "";
            ssize_t got = read(fd[0], buf, sizeof buf - 1);
            close(fd[0]);
            waitpid(pid, NULL, 0);
            if (got <= 0 || sscanf(buf, "%lf %lf", &cpu[k][r], &thr[k][r]) != 2) {
                fprintf(stderr, "sample_overhead: child at %s Hz failed\n", rates[k]);
                return 1;
            }
            if (r == 0) { /* samples and their bytes, from the first round's file */
                char path[700], err[256];
                snprintf(path, sizeof path, "%s/rank-00000.h5", dir);
                xsprof_rank_data d;
                memset(&d, 0, sizeof d);
                if (xsprof_rankfile_load(path, &d, err, sizeof err) == XSPROF_OK)
                    nsamples[k] = d.nsamples;
                xsprof_rank_data_free(&d);
                hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
                if (f >= 0) {
                    bytes[k] = storage(f, "/events/samples") + storage(f, "/definitions/callstacks") +
                               storage(f, "/definitions/frames");
                    H5Fclose(f);
                }
            }
        }
    printf("sampling overhead: %ld M iterations of a 3-level compute loop, medians of %d interleaved rounds (runs in %s)\n",
           n / 1000000, rounds, base);
    printf("%-8s %12s %10s %16s %10s %10s %14s\n", "rate", "process CPU s", "+%", "compute thread s", "+%",
           "samples", "disk B/sample");
    double c0 = 0, t0 = 0;
    for (int k = 0; k < NRATES; k++) {
        qsort(cpu[k], (size_t)rounds, sizeof(double), cmp_d);
        qsort(thr[k], (size_t)rounds, sizeof(double), cmp_d);
        double c = cpu[k][rounds / 2], t = thr[k][rounds / 2];
        if (k == 0) {
            c0 = c;
            t0 = t;
        }
        char per[32] = "-";
        if (nsamples[k])
            snprintf(per, sizeof per, "%.1f", (double)bytes[k] / (double)nsamples[k]);
        printf("%-8s %12.4f %10.2f %16.4f %10.2f %10zu %14s\n", label[k], c, 100.0 * (c / c0 - 1), t,
               100.0 * (t / t0 - 1), nsamples[k], per);
    }
    return 0;
}

/* core overhead benchmark: prints medians and ratios measured side by side
 * in one run (never asserted: timing on shared machines is noisy).
 *
 *   clock floor    two reads of the clock xsprof uses (xsprof_clock_now)
 *   enabled        xsprof_region_begin_id + xsprof_region_end
 *   by name        xsprof_region_begin("name") + end (hashes the name)
 *   disabled       the same pair with the session stopped / name filtered out
 *   threads        per-thread cost with 2 and 4 threads recording at once:
 *                  the thread's CPU time per pair, and wall time per pair
 *   sustained      N regions with the configured budget: peak RSS, drops
 *
 * usage: xsprof-bench-core [sustained_regions]   (default 50000000) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <xsprof/xsprof.h>

#define BATCH 200000
#define REPS 15

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

static volatile int64_t sink_v;

static double run_floor(void) {
    double t0 = now_s();
    for (int i = 0; i < BATCH; i++) {
        sink_v += xsprof_clock_now();
        sink_v += xsprof_clock_now();
    }
    return (now_s() - t0) * 1e9 / BATCH;
}

static xsprof_name_id g_id, g_filtered_id;

static double run_enabled(void) {
    double t0 = now_s();
    for (int i = 0; i < BATCH; i++) {
        xsprof_region_begin_id(g_id);
        xsprof_region_end();
    }
    return (now_s() - t0) * 1e9 / BATCH;
}

static double run_byname(void) {
    double t0 = now_s();
    for (int i = 0; i < BATCH; i++) {
        xsprof_region_begin("bench region");
        xsprof_region_end();
    }
    return (now_s() - t0) * 1e9 / BATCH;
}

static double run_scope(void) {
    double t0 = now_s();
    for (int i = 0; i < BATCH; i++) {
        XSPROF_SCOPE("bench scope");
    }
    return (now_s() - t0) * 1e9 / BATCH;
}

static double run_filtered(void) {
    double t0 = now_s();
    for (int i = 0; i < BATCH; i++) {
        xsprof_region_begin_id(g_filtered_id);
        xsprof_region_end();
    }
    return (now_s() - t0) * 1e9 / BATCH;
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of the calling thread per pair: what a pair costs the thread
 * itself, whether or not it shares its core with other threads. */
static double run_enabled_cpu(void) {
    double c0 = cpu_s();
    run_enabled();
    return (cpu_s() - c0) * 1e9 / BATCH;
}

typedef struct {
    pthread_barrier_t *bar;
    double ns[REPS], cpu[REPS];
} thr_arg;

static void *thr_main(void *p) {
    thr_arg *a = p;
    for (int r = 0; r < REPS; r++) {
        pthread_barrier_wait(a->bar);
        double c0 = cpu_s();
        a->ns[r] = run_enabled();
        a->cpu[r] = (cpu_s() - c0) * 1e9 / BATCH;
    }
    return NULL;
}

/* Median per-thread pair cost with n threads recording at once: wall time
 * per pair (*wall) and the thread's own CPU time per pair (returned). */
static double run_threads(int n, double *wall) {
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)n);
    thr_arg ta[4];
    pthread_t th[4];
    for (int i = 0; i < n; i++) {
        ta[i].bar = &bar;
        pthread_create(&th[i], NULL, thr_main, &ta[i]);
    }
    double all[4 * REPS], cpu[4 * REPS];
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        memcpy(all + i * REPS, ta[i].ns, sizeof ta[i].ns);
        memcpy(cpu + i * REPS, ta[i].cpu, sizeof ta[i].cpu);
    }
    pthread_barrier_destroy(&bar);
    *wall = median(all, n * REPS);
    return median(cpu, n * REPS);
}

/* The journal's file system sets the cost of every new page the recording
 * fills (a tmpfs page is cheaper to provide than an ext4 one): print it. */
static const char *journal_fs(const char **where) {
    const char *out = getenv("XSPROF_OUTPUT");
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s", out && *out ? out : ".");
    struct statfs fs;
    /* the run directory may not exist yet: its nearest existing parent */
    while (statfs(dir, &fs) != 0) {
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir) {
            snprintf(dir, sizeof dir, "%s", slash ? "/" : ".");
            if (statfs(dir, &fs) != 0)
                return "unknown";
            break;
        }
        *slash = 0;
    }
    *where = dir;
    switch ((unsigned long)fs.f_type) {
    case 0x01021994: return "tmpfs";
    case 0xEF53: return "ext2/3/4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x6969: return "nfs";
    case 0x0BD00BD0: return "lustre";
    case 0x47504653: return "gpfs";
    case 0x794C7630: return "overlayfs";
    default: return "other";
    }
}

int main(int argc, char **argv) {
    long sustained = argc > 1 ? atol(argv[1]) : 50000000L;
    /* The "filtered out" case needs the filter, read when xsprof starts:
     * set it unless the caller chose another one, and re-run ourselves. */
    if (!getenv("XSPROF_FILTER")) {
        setenv("XSPROF_FILTER", "-filtered*", 1);
        execv("/proc/self/exe", argv);
        perror("xsprof-bench-core: re-exec with XSPROF_FILTER");
        return 1;
    }
    xsprof_name_intern("bench region", &g_id);
    xsprof_name_intern("filtered_bench", &g_filtered_id);
    double floor_v[REPS], en[REPS], en_cpu[REPS], byname[REPS], dis[REPS], filt[REPS], scope_on[REPS], scope_off[REPS];
    /* Warm up: chunks mapped, name interned, and long enough (>= 20 ms)
     * for the clock to switch to the TSC where it can: the steady state. */
    double w0 = now_s();
    while (now_s() - w0 < 0.1)
        run_enabled();
    const char *where = ".";
    const char *fs = journal_fs(&where);
    printf("clock                        : %s\n", xsprof_clock_name());
    printf("journal file system          : %s (%s; XSPROF_OUTPUT chooses it)\n", fs, where);
    for (int r = 0; r < REPS; r++) {
        /* Interleaved so every variant sees the same machine state. */
        floor_v[r] = run_floor();
        en[r] = run_enabled();
        byname[r] = run_byname();
        scope_on[r] = run_scope();
        xsprof_session_stop();
        dis[r] = run_enabled();
        scope_off[r] = run_scope();
        xsprof_session_start();
        filt[r] = run_filtered();
        en_cpu[r] = run_enabled_cpu();
    }
    double f = median(floor_v, REPS), e = median(en, REPS);
    printf("clock floor (2 reads)        : %6.1f ns\n", f);
    printf("region pair, enabled (by id) : %6.1f ns  = %.2fx the clock floor\n", e, e / f);
    printf("region pair, enabled by name : %6.1f ns\n", median(byname, REPS));
    printf("region pair, session stopped : %6.2f ns\n", median(dis, REPS));
    printf("region pair, filtered out    : %6.2f ns  (XSPROF_FILTER=%s)\n", median(filt, REPS), getenv("XSPROF_FILTER"));
    printf("XSPROF_SCOPE, enabled        : %6.1f ns\n", median(scope_on, REPS));
    printf("XSPROF_SCOPE, session stopped: %6.2f ns  (inline check, no call)\n", median(scope_off, REPS));

    /* Wall time per pair doubles by construction once threads outnumber
     * cores (2 here with 4 threads); the thread's own CPU time per pair is
     * the per-thread cost, and what contention between threads would raise. */
    double c1 = median(en_cpu, REPS), w2, w4;
    double c2 = run_threads(2, &w2), c4 = run_threads(4, &w4);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    printf("1 thread, CPU time per pair  : %6.1f ns\n", c1);
    printf("2 threads, per-thread pair   : %6.1f ns CPU = %.2fx single-thread (wall %.1f ns = %.2fx), %ld CPUs\n", c2,
           c2 / c1, w2, w2 / e, ncpu);
    printf("4 threads, per-thread pair   : %6.1f ns CPU = %.2fx single-thread (wall %.1f ns = %.2fx), %ld CPUs\n", c4,
           c4 / c1, w4, w4 / e, ncpu);

    if (sustained > 0) {
        double t0 = now_s();
        for (long i = 0; i < sustained; i++) {
            xsprof_region_begin_id(g_id);
            xsprof_region_end();
        }
        double dt = now_s() - t0;
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        const char *mb = getenv("XSPROF_BUFFER_MB");
        printf("sustained %ld regions        : %.1f ns/pair, peak RSS %.1f MiB (budget %s MiB)\n", sustained,
               dt * 1e9 / (double)sustained, (double)ru.ru_maxrss / 1024.0, mb ? mb : "64");
        t0 = now_s();
        xsprof_finalize();
        printf("finalize (journal -> HDF5)   : %.2f s; dropped records are in the rank file's 'dropped' attribute\n",
               now_s() - t0);
    }
    return 0;
}

/* benchmarks/merge_throughput.c — xsmerge end-to-end throughput and peak
 * memory: generates a ring-exchange run (merge_make_runs big), then times
 * xsmerge from rank files to trace.pftrace and to all products, serially
 * and with `mpirun -np 2`, printing events/s and peak RSS (MiB, largest
 * process). Usage: merge_throughput [RANKS [EVENTS_PER_RANK [WORKDIR]]]
 * (defaults 8, 500000, /dev/shm when present so that the figures measure
 * xsmerge rather than the disk). With XSMERGE_BASELINE=/path/to/xsmerge
 * (an older build), every case also runs that binary right after this
 * one, so before/after figures come from the same machine load, and the
 * speed-up is printed. XSMERGE_REPEAT=N runs every case N times (binaries
 * alternating) and reports each binary's fastest run: on a machine shared
 * with other work the fastest run is the one least disturbed. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds (user + system) of the last run() and its descendants:
 * less sensitive than wall time to other load on the machine. */
static double last_cpu;

/* Run argv, return wall seconds (or -1) and the peak RSS of the largest
 * process of the tree in KiB (wait4 folds in waited-for descendants). */
static double run(char *const argv[], long *rss_kb)
{
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 1);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    *rss_kb = ru.ru_maxrss;
    last_cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
               (double)ru.ru_stime.tv_usec * 1e-6;
    return now() - t0;
}

static void rm_rf(const char *path)
{
    char *argv[] = {"rm", "-rf", (char *)path, NULL};
    long rss;
    run(argv, &rss);
}

static void report(const char *who, const char *what, double secs, double events, long rss_kb)
{
    if (secs < 0)
        printf("  %-8s %-38s FAILED\n", who, what);
    else
        printf("  %-8s %-38s %6.2f s %6.2f M events/s  cpu %6.2f s  peak RSS %6.1f MiB (%5.1f B/event)\n", who,
               what, secs, events / secs / 1e6, last_cpu, (double)rss_kb / 1024.0, (double)rss_kb * 1024.0 / events);
}

int main(int argc, char **argv)
{
    int ranks = argc > 1 ? atoi(argv[1]) : 8;
    long per_rank = argc > 2 ? atol(argv[2]) : 500000;
    struct stat st;
    const char *work = argc > 3 ? argv[3] : (stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp");
    char dir[4096], runp[4200], out[4200], rbuf[32], ebuf[32];
    snprintf(dir, sizeof dir, "%s/xsprof-merge-bench-%d", work, (int)getpid());
    snprintf(runp, sizeof runp, "%s/run", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(rbuf, sizeof rbuf, "%d", ranks);
    snprintf(ebuf, sizeof ebuf, "%ld", per_rank);
    mkdir(dir, 0777);
    long rss;
    char *gen[] = {MERGE_MAKE_RUNS, "big", runp, rbuf, ebuf, NULL};
    double tg = run(gen, &rss);
    if (tg < 0) {
        fprintf(stderr, "merge_throughput: generating the run failed\n");
        return 1;
    }
    /* the generator writes per_rank/3 steps of 3 events (region, send, receive) */
    double events = (double)ranks * (double)(per_rank / 3) * 3.0;
    printf("merge_throughput: %.0f events (%d ranks x %ld), rank files in %s (generated in %.1f s)\n", events, ranks,
           per_rank, runp, tg);

    struct {
        const char *what;
        int np;
        const char *outputs;
    } cases[] = {
        {"serial, rank files -> trace.pftrace", 1, "pftrace"},
        {"np 2,   rank files -> trace.pftrace", 2, "pftrace"},
        {"serial, all products", 1, "pftrace,json,h5,report"},
        {"np 2,   all products", 2, "pftrace,json,h5,report"},
    };
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    const char *base = getenv("XSMERGE_BASELINE");
    if (base && !*base)
        base = NULL;
    const char *rep_env = getenv("XSMERGE_REPEAT");
    int reps = rep_env ? atoi(rep_env) : 1;
    reps = reps < 1 ? 1 : reps > 50 ? 50 : reps;
    if (reps > 1)
        printf("  (fastest of %d runs per binary, binaries alternating)\n", reps);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double t[2] = {-1, -1}, cpu[2] = {0, 0};
        long peak[2] = {0, 0};
        for (int k = 0; k < reps; k++) {
            for (int b = 0; b < (base ? 2 : 1); b++) {
                char *bin = b ? (char *)base : (char *)XSMERGE;
                rm_rf(out);
                char *serial[] = {bin, runp, "-o", out, "-q", "--outputs", (char *)cases[i].outputs, NULL};
                char *par[] = {MPIEXEC, "-np", "2", "--oversubscribe", bin, runp, "-o", out, "-q", "--outputs",
                               (char *)cases[i].outputs, NULL};
                double w = run(cases[i].np == 1 ? serial : par, &rss);
                if (w >= 0 && (t[b] < 0 || w < t[b])) {
                    t[b] = w;
                    cpu[b] = last_cpu;
                    peak[b] = rss;
                }
            }
        }
        for (int b = 0; b < (base ? 2 : 1); b++) {
            last_cpu = cpu[b];
            report(b ? "baseline" : "xsmerge", cases[i].what, t[b], events, peak[b]);
        }
        if (base && t[0] > 0 && t[1] > 0)
            printf("  %-8s %-38s %6.2fx faster, %.2fx less cpu\n", "", "", t[1] / t[0],
                   cpu[0] > 0 ? cpu[1] / cpu[0] : 0.0);
    }
    rm_rf(dir);
    return 0;
}

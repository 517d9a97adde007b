/* benchmarks/merge_throughput.c — xsmerge end-to-end throughput and peak
 * memory: generates a ring-exchange run (merge_make_runs big), then times
 * xsmerge from rank files to trace.pftrace (in memory and with --stream)
 * and to all products, serially and with `mpirun -np 2`, printing events/s
 * and peak RSS (MiB, largest process).
 *
 * Usage: merge_throughput [RANKS [EVENTS_PER_RANK [WORKDIR]]]
 * (defaults 8, 500000, /dev/shm when present so that the figures measure
 * xsmerge rather than the disk). With XSMERGE_BASELINE=/path/to/xsmerge
 * (an older build), every case also runs that binary right after this
 * one, so before/after figures come from the same machine load, and the
 * speed-up is printed. XSMERGE_REPEAT=N runs every case N times (binaries
 * alternating) and reports each binary's fastest run, the one least
 * disturbed on a machine shared with other work, with the median events/s
 * beside it. A binary whose --help does not list --stream skips the
 * --stream row.
 *
 * Memory mode: merge_throughput --memory [--no-memory-baseline] [--keep-run]
 *                  [--skew] RANKS EVENTS_PER_RANK [WORKDIR]
 * makes a ring run of that size the same way (--skew: merge_make_runs
 * bigskew, clocks off by errors their samples miss and an Allreduce every
 * 50 steps, so that the logical clock runs), runs `xsmerge --stream` on it
 * (XSMERGE_REPEAT times) and prints the peak RSS of the process (wait4's
 * ru_maxrss: fastest run's, median and largest of the runs), CPU seconds and
 * events/s (fastest and median), and whether xsmerge said it was "merging in
 * memory" (then the figure is not the streaming one). Unless
 * --no-memory-baseline (an in-memory merge of 100 M events needs ~12 GB),
 * the in-memory merge (`--outputs pftrace`) runs the same way for comparison
 * and the two trace.pftrace files are compared byte for byte. --keep-run
 * keeps the generated run in WORKDIR/xsprof-merge-mem-RxE and reuses it
 * next time. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_REPS 50

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds (user + system) of the last run() and its descendants:
 * less sensitive than wall time to other load on the machine. */
static double last_cpu;

/* Run argv with stdout to /dev/null and stderr to errfile (when not NULL),
 * return wall seconds (or -1) and the peak RSS of the largest process of
 * the tree in KiB (wait4 folds in waited-for descendants). */
static double run_to(char *const argv[], long *rss_kb, const char *errfile)
{
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 1);
        if (errfile) {
            int e = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (e >= 0)
                dup2(e, 2);
        }
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

static double run(char *const argv[], long *rss_kb)
{
    return run_to(argv, rss_kb, NULL);
}

static void rm_rf(const char *path)
{
    char *argv[] = {"rm", "-rf", (char *)path, NULL};
    long rss;
    run(argv, &rss);
}

/* Does `bin --help` list --stream? */
static int has_stream(const char *bin)
{
    char cmd[4400], line[512];
    snprintf(cmd, sizeof cmd, "'%s' --help 2>&1", bin);
    FILE *p = popen(cmd, "r");
    int found = 0;
    if (!p)
        return 0;
    while (fgets(line, sizeof line, p))
        found |= strstr(line, "--stream") != NULL;
    pclose(p);
    return found;
}

/* Does the file contain the string? */
static int file_has(const char *path, const char *s)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    int found = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        found |= strstr(line, s) != NULL;
    fclose(f);
    return found;
}

/* Offset of the first differing byte of two files, -1 when equal, -2 when
 * one cannot be opened. */
static long long first_diff(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    long long off = -2;
    if (fa && fb) {
        static char x[1 << 16], y[1 << 16];
        off = 0;
        for (;;) {
            size_t na = fread(x, 1, sizeof x, fa), nb = fread(y, 1, sizeof y, fb);
            size_t n = na < nb ? na : nb, i = 0;
            while (i < n && x[i] == y[i])
                i++;
            if (i < n || na != nb) {
                off += (long long)i;
                break;
            }
            if (na == 0) {
                off = -1;
                break;
            }
            off += (long long)na;
        }
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return off;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

/* The first touch of a fresh 4 KiB page, in us (256 MiB touched once):
 * the kernel's share of a merge follows it, and on this project's VM it
 * varies from day to day (1.5 to 3.3 us), so results from different days
 * compare only with it beside them (benchmarks/page_touch for more). */
static double page_touch_us(void)
{
    size_t n = (size_t)256 << 20;
    volatile unsigned char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    double t0 = now();
    for (size_t i = 0; i < n; i += 4096)
        p[i] = 1;
    double t = now() - t0;
    munmap((void *)p, n);
    return t / (double)(n / 4096) * 1e6;
}

static double median(const double *v, int n)
{
    double s[MAX_REPS];
    memcpy(s, v, (size_t)n * sizeof *v);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static long median_long(const long *v, int n)
{
    long s[MAX_REPS];
    memcpy(s, v, (size_t)n * sizeof *v);
    qsort(s, (size_t)n, sizeof *s, cmp_long);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static long max_long(const long *v, int n)
{
    long m = 0;
    for (int i = 0; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

/* One case's runs for one binary: every successful run's wall, CPU, RSS. */
typedef struct {
    int n;
    double wall[MAX_REPS], cpu[MAX_REPS];
    long rss[MAX_REPS];
    int fell_back; /* stderr said "merging in memory" in some run */
} runs;

static void add_run(runs *r, double w, long rss)
{
    if (w < 0 || r->n >= MAX_REPS)
        return;
    r->wall[r->n] = w;
    r->cpu[r->n] = last_cpu;
    r->rss[r->n] = rss;
    r->n++;
}

static int fastest(const runs *r)
{
    int b = 0;
    for (int i = 1; i < r->n; i++)
        if (r->wall[i] < r->wall[b])
            b = i;
    return b;
}

/* fastest run: wall, events/s, its CPU and peak RSS; with several runs the
 * median events/s beside it */
static void report(const char *who, const char *what, const runs *r, double events, int reps)
{
    if (r->n == 0) {
        printf("  %-8s %-44s FAILED\n", who, what);
        return;
    }
    int b = fastest(r);
    printf("  %-8s %-44s %6.2f s %6.2f M events/s", who, what, r->wall[b], events / r->wall[b] / 1e6);
    if (reps > 1)
        printf(" (median %6.2f M)", events / median(r->wall, r->n) / 1e6);
    printf("  cpu %6.2f s  peak RSS %6.1f MiB (%5.1f B/event)%s\n", r->cpu[b], (double)r->rss[b] / 1024.0,
           (double)r->rss[b] * 1024.0 / events, r->n < reps ? "  [some runs FAILED]" : "");
}

/* merge_make_runs kind: "big", or "bigskew" (--skew: clocks that need the
 * logical clock, with an Allreduce every 50 steps) */
static const char *gen_kind = "big";

static int generate(const char *runp, int ranks, long per_rank, double *secs)
{
    char rbuf[32], ebuf[32];
    long rss;
    snprintf(rbuf, sizeof rbuf, "%d", ranks);
    snprintf(ebuf, sizeof ebuf, "%ld", per_rank);
    char *gen[] = {MERGE_MAKE_RUNS, (char *)gen_kind, (char *)runp, rbuf, ebuf, NULL};
    *secs = run(gen, &rss);
    return *secs < 0 ? -1 : 0;
}

static int get_reps(void)
{
    const char *rep_env = getenv("XSMERGE_REPEAT");
    int reps = rep_env ? atoi(rep_env) : 1;
    return reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;
}

static const char *get_baseline(void)
{
    const char *base = getenv("XSMERGE_BASELINE");
    return base && *base ? base : NULL;
}

static const char *default_workdir(void)
{
    struct stat st;
    return stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp";
}

/* --memory: peak RSS of xsmerge --stream (and of the in-memory merge) */
static int memory_mode(int argc, char **argv)
{
    int no_mem = 0, keep = 0, pos = 0;
    const char *arg[3] = {NULL, NULL, NULL};
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--no-memory-baseline"))
            no_mem = 1;
        else if (!strcmp(argv[i], "--keep-run"))
            keep = 1;
        else if (!strcmp(argv[i], "--skew"))
            gen_kind = "bigskew";
        else if (pos < 3)
            arg[pos++] = argv[i];
    }
    if (pos < 2) {
        fprintf(stderr, "usage: merge_throughput --memory [--no-memory-baseline] [--keep-run] [--skew] RANKS EVENTS_PER_RANK "
                        "[WORKDIR]\n");
        return 2;
    }
    int ranks = atoi(arg[0]);
    long per_rank = atol(arg[1]);
    const char *work = arg[2] ? arg[2] : default_workdir();
    char dir[4096], runp[4200], made[4300], out[4200], outm[4200], errf[4200], tr[4300], trm[4300];
    if (keep)
        snprintf(dir, sizeof dir, "%s/xsprof-merge-mem-%s-%dx%ld", work, gen_kind, ranks, per_rank);
    else
        snprintf(dir, sizeof dir, "%s/xsprof-merge-mem-%d", work, (int)getpid());
    snprintf(runp, sizeof runp, "%s/run", dir);
    snprintf(made, sizeof made, "%s/run.complete", dir);
    snprintf(out, sizeof out, "%s/out-stream", dir);
    snprintf(outm, sizeof outm, "%s/out-memory", dir);
    snprintf(errf, sizeof errf, "%s/stderr", dir);
    snprintf(tr, sizeof tr, "%s/trace.pftrace", out);
    snprintf(trm, sizeof trm, "%s/trace.pftrace", outm);
    mkdir(dir, 0777);
    long steps = per_rank / 3;
    /* bigskew: an Allreduce every 50 steps, a Waitall more every 4th */
    double events = (double)ranks * (double)(steps * 3 + (strcmp(gen_kind, "bigskew") ? 0 : steps / 50 + (steps + 2) / 4)),
           tg = 0;
    struct stat st;
    if (!(keep && stat(made, &st) == 0)) {
        rm_rf(runp);
        if (generate(runp, ranks, per_rank, &tg)) {
            fprintf(stderr, "merge_throughput: generating the run failed\n");
            return 1;
        }
        if (keep)
            close(open(made, O_WRONLY | O_CREAT, 0644));
        printf("merge_throughput --memory: %.0f events (%d ranks x %ld), rank files in %s (generated in %.1f s)\n",
               events, ranks, per_rank, runp, tg);
    } else
        printf("merge_throughput --memory: %.0f events (%d ranks x %ld), reusing %s\n", events, ranks, per_rank, runp);
    int reps = get_reps();
    const char *base = get_baseline();
    const char *bins[2] = {XSMERGE, base};
    int nb = base ? 2 : 1, stream_ok[2];
    for (int b = 0; b < nb; b++)
        stream_ok[b] = has_stream(bins[b]);
    if (reps > 1)
        printf("  (%d runs per binary and case, binaries alternating: fastest run, median events/s; peak RSS of the "
               "fastest run, median and largest)\n",
               reps);
    runs rs[2], rm[2];
    memset(rs, 0, sizeof rs);
    memset(rm, 0, sizeof rm);
    long long diff[2] = {-3, -3};
    for (int k = 0; k < reps; k++) {
        for (int b = 0; b < nb; b++) {
            long rss;
            char *bin = (char *)bins[b];
            if (stream_ok[b]) {
                rm_rf(out);
                char *sv[] = {bin, runp, "-o", out, "-q", "--stream", NULL};
                double w = run_to(sv, &rss, errf);
                add_run(&rs[b], w, rss);
                if (w >= 0 && file_has(errf, "merging in memory"))
                    rs[b].fell_back = 1;
            }
            if (!no_mem) {
                rm_rf(outm);
                char *mv[] = {bin, runp, "-o", outm, "-q", "--outputs", "pftrace", NULL};
                double w = run(mv, &rss);
                add_run(&rm[b], w, rss);
                if (stream_ok[b] && k == 0)
                    diff[b] = first_diff(tr, trm);
            }
        }
    }
    for (int b = 0; b < nb; b++) {
        const char *who = b ? "baseline" : "xsmerge";
        if (!stream_ok[b])
            printf("  %-8s %-44s (this binary has no --stream)\n", who, "serial --stream -> trace.pftrace");
        else {
            report(who, "serial --stream -> trace.pftrace", &rs[b], events, reps);
            if (rs[b].n > 1)
                printf("  %-8s %-44s peak RSS median %6.1f MiB, largest %6.1f MiB\n", "", "",
                       (double)median_long(rs[b].rss, rs[b].n) / 1024.0, (double)max_long(rs[b].rss, rs[b].n) / 1024.0);
            if (rs[b].fell_back)
                printf("  %-8s %-44s NOTE: xsmerge said \"merging in memory\": not a streaming figure\n", "", "");
        }
        if (!no_mem) {
            report(who, "serial in memory -> trace.pftrace", &rm[b], events, reps);
            if (rm[b].n > 1)
                printf("  %-8s %-44s peak RSS median %6.1f MiB, largest %6.1f MiB\n", "", "",
                       (double)median_long(rm[b].rss, rm[b].n) / 1024.0, (double)max_long(rm[b].rss, rm[b].n) / 1024.0);
            if (stream_ok[b])
                printf("  %-8s %-44s trace.pftrace %s\n", "", "",
                       diff[b] == -1 ? "identical (--stream vs in memory)"
                       : diff[b] >= 0 ? "DIFFERS between --stream and in memory" : "not compared (a run failed)");
            if (stream_ok[b] && diff[b] >= 0)
                printf("  %-8s %-44s first differing byte: %lld\n", "", "", diff[b]);
        }
    }
    if (keep) {
        rm_rf(out);
        rm_rf(outm);
        unlink(errf);
    } else
        rm_rf(dir);
    return 0;
}

int main(int argc, char **argv)
{
    /* the in-memory rows merge in memory, whatever the run's size */
    setenv("XSPROF_MERGE_STREAM_MB", "0", 1);
    if (argc > 1 && !strcmp(argv[1], "--memory"))
        return memory_mode(argc, argv);
    int ranks = argc > 1 ? atoi(argv[1]) : 8;
    long per_rank = argc > 2 ? atol(argv[2]) : 500000;
    const char *work = argc > 3 ? argv[3] : default_workdir();
    char dir[4096], runp[4200], out[4200], errf[4200];
    snprintf(dir, sizeof dir, "%s/xsprof-merge-bench-%d", work, (int)getpid());
    snprintf(errf, sizeof errf, "%s/stderr", dir);
    snprintf(runp, sizeof runp, "%s/run", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    mkdir(dir, 0777);
    double tg;
    if (generate(runp, ranks, per_rank, &tg)) {
        fprintf(stderr, "merge_throughput: generating the run failed\n");
        return 1;
    }
    /* the generator writes per_rank/3 steps of 3 events (region, send, receive) */
    double events = (double)ranks * (double)(per_rank / 3) * 3.0;
    printf("merge_throughput: %.0f events (%d ranks x %ld), rank files in %s (generated in %.1f s)\n", events, ranks,
           per_rank, runp, tg);
    printf("  this machine: first touch of a page %.2f us (compare runs of other days with it)\n", page_touch_us());

    struct {
        const char *what;
        int np;
        int stream; /* --stream */
        const char *outputs;
    } cases[] = {
        {"serial, rank files -> trace.pftrace", 1, 0, "pftrace"},
        {"serial --stream, rank files -> trace.pftrace", 1, 1, "pftrace"},
        {"np 2,   rank files -> trace.pftrace", 2, 0, "pftrace"},
        {"serial, all products", 1, 0, "pftrace,json,h5,report"},
        {"serial --stream, all products", 1, 1, "pftrace,json,h5,report"},
        {"np 2,   all products", 2, 0, "pftrace,json,h5,report"},
    };
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    const char *base = get_baseline();
    const char *bins[2] = {XSMERGE, base};
    int nb = base ? 2 : 1, stream_ok[2] = {0, 0};
    for (int b = 0; b < nb; b++)
        stream_ok[b] = has_stream(bins[b]);
    int reps = get_reps();
    if (reps > 1)
        printf("  (fastest of %d runs per binary, binaries alternating; median events/s beside it)\n", reps);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        runs r[2];
        memset(r, 0, sizeof r);
        int stream = cases[i].stream;
        for (int k = 0; k < reps; k++) {
            for (int b = 0; b < nb; b++) {
                if (stream && !stream_ok[b])
                    continue;
                char *bin = (char *)bins[b];
                long rss;
                rm_rf(out);
                char *serial[] = {bin, runp, "-o", out, "-q", "--outputs", (char *)cases[i].outputs, NULL};
                char *streamv[] = {bin, runp, "-o", out, "-q", "--stream", "--outputs", (char *)cases[i].outputs, NULL};
                char *par[] = {MPIEXEC, "-np", "2", "--oversubscribe", bin, runp, "-o", out, "-q", "--outputs",
                               (char *)cases[i].outputs, NULL};
                double w = run_to(stream ? streamv : cases[i].np == 1 ? serial : par, &rss, errf);
                add_run(&r[b], w, rss);
                if (stream && w >= 0 && file_has(errf, "merging in memory"))
                    r[b].fell_back = 1;
            }
        }
        for (int b = 0; b < nb; b++) {
            if (stream && !stream_ok[b])
                printf("  %-8s %-44s (this binary has no --stream)\n", b ? "baseline" : "xsmerge", cases[i].what);
            else
                report(b ? "baseline" : "xsmerge", cases[i].what, &r[b], events, reps);
            if (r[b].fell_back)
                printf("  %-8s %-44s NOTE: xsmerge said \"merging in memory\": not a streaming figure\n", "", "");
        }
        if (base && r[0].n && r[1].n) {
            int f0 = fastest(&r[0]), f1 = fastest(&r[1]);
            printf("  %-8s %-44s %6.2fx faster, %.2fx less cpu\n", "", "", r[1].wall[f1] / r[0].wall[f0],
                   r[0].cpu[f0] > 0 ? r[1].cpu[f1] / r[0].cpu[f0] : 0.0);
        }
    }
    rm_rf(dir);
    return 0;
}

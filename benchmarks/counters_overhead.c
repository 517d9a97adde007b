/* per-region counter cost: region begin+end with 0, 1, 2, 4 and 6 software
 * counters (XSPROF_COUNTERS), medians of REPS batches, printed side by side
 * with the cost per counter. The counters are chosen when the library
 * starts, so the program runs itself once per set (XSPROF_BENCH_CHILD).
 * Never asserted: timing on shared machines is noisy.
 *
 * usage: xsprof-bench-counters          (XSPROF_OUTPUT: where the runs go) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xsprof/xsprof.h>

#define BATCH 20000
#define REPS 11

static const char *const sets[] = {"", "task-clock", "task-clock,page-faults",
                                   "task-clock,page-faults,context-switches,minor-faults",
                                   "task-clock,page-faults,context-switches,minor-faults,major-faults,cpu-migrations"};
#define NSETS ((int)(sizeof sets / sizeof sets[0]))

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the child: median ns per region pair with this process's counters */
static int child(void) {
    xsprof_name_id id;
    if (xsprof_name_intern("bench", &id) != XSPROF_OK)
        return 1;
    double v[REPS];
    for (int r = 0; r < REPS; r++) {
        double t0 = now_ns();
        for (int i = 0; i < BATCH; i++) {
            xsprof_region_begin_id(id);
            xsprof_region_end();
        }
        v[r] = (now_ns() - t0) / BATCH;
    }
    qsort(v, REPS, sizeof *v, cmp_d);
    printf("%.1f\n", v[REPS / 2]);
    xsprof_finalize();
    return 0;
}

int main(int argc, char **argv) {
    (void)argc;
    if (getenv("BENCH_COUNTERS_SET"))
        return child();
    char base[512];
    const char *out = getenv("XSPROF_OUTPUT");
    snprintf(base, sizeof base, "%s", out && *out ? out : "");
    if (!base[0])
        snprintf(base, sizeof base, "/dev/shm/xsprof-bench-counters-%d", (int)getpid());
    printf("per-region counters: region begin+end, median of %d x %d pairs (runs in %s)\n", REPS, BATCH, base);
    printf("%-8s %12s %16s\n", "counters", "ns/region", "ns/counter added");
    double zero_ns = 0;
    for (int s = 0; s < NSETS; s++) {
        int fd[2];
        if (pipe(fd) != 0)
            return 1;
        pid_t pid = fork();
        if (pid == 0) {
            dup2(fd[1], 1);
            close(fd[0]);
            char dir[600];
            snprintf(dir, sizeof dir, "%s/set%d", base, s);
            setenv("BENCH_COUNTERS_SET", "1", 1);
            setenv("XSPROF_OUTPUT", dir, 1);
            setenv("XSPROF_COUNTERS", sets[s], 1);
            execv("/proc/self/exe", argv);
            _exit(127);
        }
        close(fd[1]);
        char buf[64] = "";
        ssize_t n = read(fd[0], buf, sizeof buf - 1);
        close(fd[0]);
        int st = 0;
        waitpid(pid, &st, 0);
        if (n <= 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
            fprintf(stderr, "xsprof-bench-counters: the run with XSPROF_COUNTERS=%s failed\n", sets[s]);
            return 1;
        }
        buf[n] = 0;
        double ns = atof(buf);
        int k = 0;
        for (const char *p = sets[s]; *p; p++)
            k += *p == ',';
        k += sets[s][0] != 0;
        if (s == 0)
            zero_ns = ns;
        if (k)
            printf("%-8d %12.1f %16.1f\n", k, ns, (ns - zero_ns) / k);
        else
            printf("%-8d %12.1f %16s\n", k, ns, "-");
    }
    return 0;
}

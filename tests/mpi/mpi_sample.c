/* tests/mpi/mpi_sample.c — a CPU-bound MPI program for XSPROF_SAMPLE_HZ
 * (check_sampling.py), built as Debian builds (-O2 -g, no frame pointers)
 * and run unmodified under LD_PRELOAD. Each iteration burns 7 units of
 * CPU in heavy() (mpi_sample_hot.c) and 3 in light() (mpi_sample_cold.c),
 * the same loop, so about 70 % / 30 % of the compute; a thread started
 * after MPI_Init burns its own CPU in thread_work(); a forked child burns
 * some in child_work() and exits. usage: mpi_sample [UNITS [die|seccomp]]:
 * with "die", the last rank kills itself (SIGKILL) after its work; with
 * "seccomp", a seccomp filter refuses perf_event_open before MPI_Init.
 * MPI_SAMPLE_PLUGIN=LIB: first burn CPU in LIB's plugin_burn, dlopened and
 * closed again. */
#include <dlfcn.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <mpi.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

double heavy(long units);
double light(long units);
double burn(long units);

__attribute__((noinline)) static void *thread_work(void *arg)
{
    static double r;
    r = burn((long)(intptr_t)arg);
    return &r;
}

__attribute__((noinline)) static double child_work(long units) { return burn(units); }

__attribute__((noinline)) static double step(long units) { return heavy(7 * units) + light(3 * units); }

/* "seccomp": perf_event_open fails with EACCES from here on, as a container's
 * seccomp profile makes it (the default of Docker and Podman) */
static void refuse_perf_events(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
        perror("seccomp");
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[2], "seccomp"))
        refuse_perf_events();
    MPI_Init(&argc, &argv);
    long units = argc > 1 ? atol(argv[1]) : 40;
    int die = argc > 2 && !strcmp(argv[2], "die"); /* the last rank dies by SIGKILL once done computing */
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *plugin = getenv("MPI_SAMPLE_PLUGIN");
    double p = 0;
    if (plugin) { /* loaded, used and closed during the run */
        void *h = dlopen(plugin, RTLD_NOW);
        double (*burn_fn)(long) = h ? (double (*)(long))dlsym(h, "plugin_burn") : NULL;
        p = burn_fn ? burn_fn(units) : 0;
        if (h)
            dlclose(h);
        if (!burn_fn)
            fprintf(stderr, "mpi_sample: cannot use %s\n", plugin);
    }
    pthread_t th;
    pthread_create(&th, NULL, thread_work, (void *)(intptr_t)(units * 2));
    double s = 0;
    for (long it = 0; it < units; it++) {
        s += step(1);
        MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (it == units / 2) {
            pid_t pid = fork();
            if (pid == 0)
                _exit(child_work(units) > 0 ? 0 : 1);
            if (pid > 0)
                waitpid(pid, NULL, 0);
        }
    }
    void *r;
    pthread_join(th, &r);
    if (die && rank == size - 1)
        raise(SIGKILL); /* no handler runs: the journal keeps what was recorded */
    printf("%g %g %g\n", s, *(double *)r, p);
    MPI_Finalize();
    return 0;
}

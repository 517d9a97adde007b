/* benchmarks/io_size_lib.c — rank-file bytes per region event through the
 * real library: the nested-region workload of io_size.c recorded with
 * xsprof_region_begin/end (libxsprof.so), written by the default sink at
 * exit. The driver runs the workload program io_size_lib_app with
 * XSPROF_OUTPUT set (xsprof reads its configuration when it loads), then
 * measures the rank file.
 * usage: io_size_lib [DIR] [EVENTS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *base = argc > 1 ? argv[1] : ".";
    long events = argc > 2 ? atol(argv[2]) : 2000000;
    char dir[4096], h5[4200];
    snprintf(dir, sizeof dir, "%s/io_size_lib-%ld", base, (long)getpid());
    snprintf(h5, sizeof h5, "%s/rank-00000.h5", dir);
    int fds[2];
    if (pipe(fds))
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        char count[32];
        snprintf(count, sizeof count, "%ld", events);
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        setenv("XSPROF_OUTPUT", dir, 1);
        setenv("XSPROF_ON_FULL", "block", 1); /* measure every event, none dropped */
        char app[4096];
        ssize_t len = readlink("/proc/self/exe", app, sizeof app - 16);
        if (len <= 0)
            _exit(127);
        snprintf(app + len, sizeof app - (size_t)len, "_app");
        execl(app, app, count, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char out[64] = "";
    ssize_t got = read(fds[0], out, sizeof out - 1);
    out[got > 0 ? got : 0] = 0;
    long n = atol(out);
    int status = 1;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || status != 0 || n <= 0) {
        fprintf(stderr, "io_size_lib: the workload failed\n");
        return 1;
    }
    struct stat sb;
    if (stat(h5, &sb) != 0) {
        fprintf(stderr, "io_size_lib: no rank file %s\n", h5);
        return 1;
    }
    printf("io_size_lib: %ld region events through libxsprof.so (depth 3, 1 int arg per 10 regions)\n", n);
    printf("io_size_lib: raw region record  %6.2f bytes/event\n", 32.0);
    printf("io_size_lib: rank file (HDF5)   %6.2f bytes/event (target <= 8), process peak RSS %.1f MB\n",
           (double)sb.st_size / (double)n, (double)ru.ru_maxrss / 1024.0);
    unlink(h5);
    rmdir(dir);
    return 0;
}

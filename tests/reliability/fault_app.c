/* tests/reliability/fault_app.c — the application of the crash and fault
 * matrix. It is an ordinary MPI program that knows nothing of xsprof: it
 * looks the region API up at run time (dlsym), so the same binary runs with
 * xsprof preloaded (regions recorded) and without it (no-ops), and the test
 * compares the two runs.
 *
 * usage: fault_app MODE PROGRESS_DIR N
 * Every rank runs N iterations of region "fault.iter" (an MPI_Allreduce
 * inside, so the MPI wrappers record too); after each completed region it
 * stores the count in PROGRESS_DIR/rank-R (one pwrite, so the count
 * survives any death of the process) and, at the end, prints
 * "fault_app: rank R completed N regions". Then, by MODE:
 *   segv    rank 1 dereferences NULL inside region "fault.doomed"
 *   abort   rank 1 calls MPI_Abort(MPI_COMM_WORLD, 7)
 *   kill9   rank 1 sends itself SIGKILL
 *   term    rank 0 creates PROGRESS_DIR/ready; every rank sleeps until the
 *           batch system (the test) sends SIGTERM to mpirun
 *   exit3   every rank calls exit(3) without MPI_Finalize
 *   finish  MPI_Finalize and return 0 (for environment faults: unwritable
 *           output directory, full disk)
 * In segv/abort/kill9 the other ranks wait in an MPI_Barrier rank 1 never
 * enters, until the launcher kills them. */
#include <dlfcn.h>
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int (*begin_fn)(const char *);
typedef int (*end_fn)(void);
static begin_fn region_begin;
static end_fn region_end;

static void region_enter(const char *name)
{
    if (region_begin)
        region_begin(name);
}

static void region_leave(void)
{
    if (region_end)
        region_end();
}

static int progress_fd = -1;
static volatile uintptr_t null_address; /* 0, opaque to the optimizer */

static void progress_store(int n)
{
    char buf[16];
    int len = snprintf(buf, sizeof buf, "%10d\n", n);
    if (pwrite(progress_fd, buf, (size_t)len, 0) != len) {
        perror("fault_app: progress");
        exit(90);
    }
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: fault_app segv|abort|kill9|term|exit3|finish PROGRESS_DIR N\n");
        return 2;
    }
    const char *mode = argv[1], *dir = argv[2];
    int n = atoi(argv[3]);
    region_begin = (begin_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "xsprof_region_begin");
    region_end = (end_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "xsprof_region_end");

    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%d", dir, rank);
    progress_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (progress_fd < 0) {
        perror(path);
        MPI_Abort(MPI_COMM_WORLD, 91);
    }
    progress_store(0);
    int per_iter_mpi = strcmp(mode, "finish") != 0 || n <= 1000;
    double x = rank + 1, sum = 0;
    for (int i = 0; i < n; i++) {
        region_enter("fault.iter");
        for (int k = 0; k < 1000; k++)
            x = x * 1.0000001 + 1e-9;
        if (per_iter_mpi)
            MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        region_leave();
        progress_store(i + 1);
    }
    printf("fault_app: rank %d completed %d regions\n", rank, n);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);

    int victim = rank == 1 % size;
    if (!strcmp(mode, "segv")) {
        if (victim) {
            region_enter("fault.doomed");
            *(volatile int *)null_address = 1;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (!strcmp(mode, "abort")) {
        if (victim)
            MPI_Abort(MPI_COMM_WORLD, 7);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (!strcmp(mode, "kill9")) {
        if (victim)
            kill(getpid(), SIGKILL);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (!strcmp(mode, "term")) {
        if (rank == 0) {
            snprintf(path, sizeof path, "%s/ready", dir);
            int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
            if (fd >= 0)
                close(fd);
        }
        for (;;) {
            struct timespec ts = {1, 0};
            nanosleep(&ts, NULL);
        }
    } else if (!strcmp(mode, "exit3")) {
        exit(3);
    } else if (strcmp(mode, "finish")) {
        fprintf(stderr, "fault_app: unknown mode %s\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Finalize();
    return 0;
}

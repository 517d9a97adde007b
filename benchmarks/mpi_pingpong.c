/* benchmarks/mpi_pingpong.c — what xsprof adds to a small MPI message.
 * Built as a plain MPI program and run with libxsprof-mpi.so preloaded:
 * blocks of ping-pong iterations alternate between MPI_Send/MPI_Recv (the
 * xsprof wrappers) and PMPI_Send/PMPI_Recv (MPI itself, no wrapper), in one
 * run, so both see the same machine state. Prints the median round trip of
 * each and the added time per MPI call (4 calls per round trip are on the
 * critical path: send and receive on both ranks).
 * usage: mpiexec -np 2 mpi_pingpong [blocks] [iterations per block]
 * With xsprof loaded, also the floor: two reads of the clock xsprof uses
 * (xsprof_clock_now, found with dlsym), timed in blocks between the others.
 * With more than 2 ranks it only initializes and finalizes MPI (clock
 * exchange cost, printed by xsprof with XSPROF_LOG=info).
 * Long blocks (`mpi_pingpong 3 300000`: 1.8 M calls per rank, both cores
 * busy-polling) show what short ones hide (issue 39): it also prints, per
 * rank, the scheduler's view over the timed blocks from /proc/self/task
 * (schedstat, status): the main thread's time runnable but off the CPU and
 * its involuntary switches, and the CPU time of the process's other
 * threads (MPI's progress thread, xsprof's journal writer). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <mpi.h>
#include <string.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*send_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
typedef int (*recv_fn)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);

static double block(int rank, int iters, send_fn snd, recv_fn rcv) {
    char b[8] = {0};
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            snd(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            rcv(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            rcv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            snd(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / iters * 1e9; /* ns per round trip */
}

typedef int64_t (*clock_fn)(void);
static volatile int64_t clock_sink;

/* ns per two reads of xsprof's clock */
static double floor_block(clock_fn now, int iters) {
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        clock_sink += now();
        clock_sink += now();
    }
    return (MPI_Wtime() - t0) / iters * 1e9;
}

/* The scheduler's view of this process: [0] the main thread's ns runnable
 * but waiting for a CPU, [1] its involuntary context switches, [2] the CPU
 * ns of every other thread, [3] how many other threads. */
static void sched_view(double v[4]) {
    memset(v, 0, 4 * sizeof *v);
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    long self = (long)getpid();
    struct dirent *e;
    while ((e = readdir(d))) {
        long tid = atol(e->d_name);
        if (tid <= 0)
            continue;
        char path[64];
        unsigned long long run = 0, wait = 0, slices = 0;
        snprintf(path, sizeof path, "/proc/self/task/%ld/schedstat", tid);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%llu %llu %llu", &run, &wait, &slices) != 3)
                run = wait = 0;
            fclose(f);
        }
        if (tid != self) {
            v[2] += (double)run;
            v[3] += 1;
            continue;
        }
        v[0] = (double)wait;
        snprintf(path, sizeof path, "/proc/self/task/%ld/status", tid);
        if ((f = fopen(path, "r"))) {
            char line[256];
            while (fgets(line, sizeof line, f))
                if (!strncmp(line, "nonvoluntary_ctxt_switches:", 27))
                    v[1] = atof(line + 27);
            fclose(f);
        }
    }
    closedir(d);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int blocks = argc > 1 ? atoi(argv[1]) : 41, iters = argc > 2 ? atoi(argv[2]) : 2000;
    if (size > 2) {
        /* more ranks than cores would time the scheduler: this run only
         * measures MPI_Init/MPI_Finalize (XSPROF_LOG=info prints the clock
         * exchange time on rank 0) */
        if (rank == 0)
            printf("%d ranks: no ping-pong (run it with 2 ranks)\n", size);
        MPI_Finalize();
        return 0;
    }
    if (blocks < 1 || iters < 1 || size < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiexec -np 2 mpi_pingpong [blocks] [iterations]\n");
        MPI_Finalize();
        return 1;
    }
    double *plain = malloc(sizeof(double) * (size_t)blocks), *wrapped = malloc(sizeof(double) * (size_t)blocks);
    double *floor_ns = malloc(sizeof(double) * (size_t)blocks);
    clock_fn now = (clock_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "xsprof_clock_now");
    const char *(*clock_name)(void) = (const char *(*)(void))(uintptr_t)dlsym(RTLD_DEFAULT, "xsprof_clock_name");
    block(rank, iters, PMPI_Send, PMPI_Recv); /* warm-up */
    block(rank, iters, MPI_Send, MPI_Recv);
    double s0[4], s1[4], all[8];
    sched_view(s0);
    double t_start = MPI_Wtime();
    for (int k = 0; k < blocks; k++) {
        /* alternate which goes first, so neither always follows the other */
        if (k % 2) {
            plain[k] = block(rank, iters, PMPI_Send, PMPI_Recv);
            wrapped[k] = block(rank, iters, MPI_Send, MPI_Recv);
        } else {
            wrapped[k] = block(rank, iters, MPI_Send, MPI_Recv);
            plain[k] = block(rank, iters, PMPI_Send, PMPI_Recv);
        }
        floor_ns[k] = now ? floor_block(now, iters) : 0;
    }
    double t_timed = MPI_Wtime() - t_start;
    sched_view(s1);
    for (int i = 0; i < 3; i++)
        s1[i] -= s0[i];
    PMPI_Gather(s1, 4, MPI_DOUBLE, all, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    qsort(floor_ns, (size_t)blocks, sizeof *floor_ns, cmp);
    qsort(plain, (size_t)blocks, sizeof *plain, cmp);
    qsort(wrapped, (size_t)blocks, sizeof *wrapped, cmp);
    if (rank == 0) {
        double p = plain[blocks / 2], w = wrapped[blocks / 2];
        printf("ping-pong 8 B, %d blocks x %d round trips, medians:\n", blocks, iters);
        printf("  plain (PMPI)       %9.1f ns per round trip\n", p);
        printf("  through wrappers   %9.1f ns per round trip\n", w);
        printf("  added per MPI call %9.1f ns (4 calls per round trip)\n", (w - p) / 4);
        if (now)
            printf("  clock floor        %9.1f ns (two reads of xsprof's clock, %s): added per call = %.2fx the floor\n",
                   floor_ns[blocks / 2], clock_name ? clock_name() : "?", (w - p) / 4 / floor_ns[blocks / 2]);
        printf("  over the %.2f s of timed blocks, per rank (/proc/self/task):\n", t_timed);
        for (int r = 0; r < 2; r++)
            printf("    rank %d: main thread runnable but waiting %.2f ms, %.0f involuntary switches; "
                   "%.0f other threads ran %.2f ms\n",
                   r, all[4 * r] * 1e-6, all[4 * r + 1], all[4 * r + 3], all[4 * r + 2] * 1e-6);
    }
    free(plain);
    free(wrapped);
    free(floor_ns);
    MPI_Finalize();
    return 0;
}

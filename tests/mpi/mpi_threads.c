/* tests/mpi/mpi_threads.c — MPI_THREAD_MULTIPLE: 4 threads per rank each
 * exchange ITER messages with both neighbours (tag = thread, so messages of
 * different threads never match each other) and run one Allreduce on their
 * own duplicate of MPI_COMM_WORLD. The recorded counts must be exact. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ITER 200

static int g_rank, g_size;
static MPI_Comm g_comm[NTHREADS];
static long g_sum[NTHREADS];

static void *work(void *arg) {
    int t = (int)(long)arg, right = (g_rank + 1) % g_size, left = (g_rank + g_size - 1) % g_size;
    long acc = 0;
    for (int i = 0; i < ITER; i++) {
        int out = g_rank * 100000 + t * 1000 + i, in = -1;
        MPI_Request r[2];
        MPI_Irecv(&in, 1, MPI_INT, left, t, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(&out, 1, MPI_INT, right, t, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        acc += in;
    }
    long tot = 0;
    MPI_Allreduce(&acc, &tot, 1, MPI_LONG, MPI_SUM, g_comm[t]);
    g_sum[t] = tot;
    return NULL;
}

int main(int argc, char **argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        printf("MPI_THREAD_MULTIPLE not provided\n");
        MPI_Finalize();
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    for (int t = 0; t < NTHREADS; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &g_comm[t]);
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++)
        pthread_create(&th[t], NULL, work, (void *)(long)t);
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < NTHREADS; t++) {
        printf("rank %d thread %d: %ld\n", g_rank, t, g_sum[t]);
        MPI_Comm_free(&g_comm[t]);
    }
    MPI_Finalize();
    return 0;
}

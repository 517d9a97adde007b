/* tests/gpu/nvtx_emit_app.c — an MPI program with xsprof regions (and no
 * NVTX of its own) for XSPROF_NVTX_EMIT: nested regions through the C API
 * and the scope macros, a rank-dependent region, a second thread, MPI
 * calls inside regions, and a session stopped and started again inside an
 * open region (cudaProfilerStop/Start with XSPROF_CUDA_PROFILER_API=1).
 * check_nvtx_emit.py compares what an NVTX tool received with the rank
 * files. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <xsprof/xsprof.h>

static volatile double g_sink;

static void compute(int n) {
    XSPROF_SCOPE("compute");
    for (int i = 0; i < n * 1000; i++)
        g_sink += i * 0.5;
}

static void *worker(void *arg) {
    (void)arg;
    XSPROF_SCOPE("worker");
    for (int i = 0; i < 2; i++) {
        XSPROF_SCOPE("worker_inner");
        compute(1);
    }
    return NULL;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    xsprof_region_begin("setup");
    compute(2);
    xsprof_region_end();
    for (int it = 0; it < 3; it++) {
        XSPROF_SCOPE("iteration");
        compute(1);
        {
            XSPROF_SCOPE("exchange");
            double out = rank, in = -1;
            MPI_Sendrecv(&out, 1, MPI_DOUBLE, (rank + 1) % size, 0, &in, 1, MPI_DOUBLE, (rank + size - 1) % size, 0,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    if (rank == 1) {
        XSPROF_SCOPE("rank1_only");
        XSPROF_SCOPE("rank1_deeper");
        compute(1);
    }
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    /* a session stopped inside an open region: that region still ends,
     * what begins meanwhile is neither recorded nor emitted */
    xsprof_region_begin("span_stop");
    xsprof_session_stop();
    xsprof_region_begin("hidden");
    compute(1);
    xsprof_region_end();
    xsprof_session_start();
    compute(1);
    xsprof_region_end();
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d: nvtx_emit_app done\n", rank);
    MPI_Finalize();
    return 0;
}

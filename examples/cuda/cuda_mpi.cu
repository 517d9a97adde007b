// examples/cuda/cuda_mpi.cu — a CUDA + MPI program to validate xsprof's GPU
// capture on a GPU node. Each rank picks a device, copies a vector to it
// (HtoD), clears a buffer (memset), runs a saxpy and a reduction kernel on
// two streams, copies the partial sum back (DtoH), synchronises, and the
// ranks combine their sums with MPI_Allreduce. NVTX ranges mark the phases
// (captured by xsprof's NVTX injection). The program does not link xsprof:
// run it with LD_PRELOAD=libxsprof-mpi.so (see docs/gpu.md).
//
// Exit code 0 when the result is right; 2 when no GPU is usable (reported,
// not hidden); 1 on a wrong result.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUDA(call)                                                                            \
    do {                                                                                            \
        cudaError_t e_ = (call);                                                                    \
        if (e_ != cudaSuccess) {                                                                    \
            std::fprintf(stderr, "rank %d: %s failed: %s\n", rank, #call, cudaGetErrorString(e_)); \
            MPI_Finalize();                                                                         \
            return 2;                                                                               \
        }                                                                                           \
    } while (0)

__global__ void saxpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

// Block-wise sum with shared memory, so the kernel record shows shared mem.
__global__ void block_sum(int n, const float *y, float *partial)
{
    extern __shared__ float s[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? y[i] : 0.0f;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        partial[blockIdx.x] = s[0];
}

int main(int argc, char **argv)
{
    int rank = 0, size = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int ndev = 0;
    CHECK_CUDA(cudaGetDeviceCount(&ndev));
    CHECK_CUDA(cudaSetDevice(rank % ndev));

    const int n = 1 << 20, threads = 256, blocks = (n + threads - 1) / threads;
    const int iterations = 5;
    std::vector<float> hx(n, 1.0f), hy(n, 2.0f), hpartial(blocks);
    float *x = nullptr, *y = nullptr, *partial = nullptr;
    cudaStream_t s_compute, s_copy;

    nvtxRangePushA("setup");
    CHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&y, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&partial, blocks * sizeof(float)));
    CHECK_CUDA(cudaStreamCreate(&s_compute));
    CHECK_CUDA(cudaStreamCreate(&s_copy));
    CHECK_CUDA(cudaMemcpy(x, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpyAsync(y, hy.data(), n * sizeof(float), cudaMemcpyHostToDevice, s_copy));
    CHECK_CUDA(cudaMemset(partial, 0, blocks * sizeof(float)));
    CHECK_CUDA(cudaStreamSynchronize(s_copy));
    nvtxRangePop();

    double global = 0.0;
    for (int it = 0; it < iterations; it++) {
        nvtxRangePushA("step");
        saxpy<<<blocks, threads, 0, s_compute>>>(n, 0.5f, x, y);
        block_sum<<<blocks, threads, threads * sizeof(float), s_compute>>>(n, y, partial);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaMemcpyAsync(hpartial.data(), partial, blocks * sizeof(float), cudaMemcpyDeviceToHost,
                                   s_compute));
        CHECK_CUDA(cudaStreamSynchronize(s_compute));
        double local = 0.0;
        for (float p : hpartial)
            local += p;
        nvtxRangePushA("allreduce");
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        nvtxRangePop();
        nvtxRangePop();
    }
    CHECK_CUDA(cudaDeviceSynchronize());

    // y = 2 + 0.5 * iterations on every element, on every rank.
    const double expected = (double)size * n * (2.0 + 0.5 * iterations);
    int ok = global > expected * (1 - 1e-6) && global < expected * (1 + 1e-6);
    if (rank == 0)
        std::printf("cuda_mpi: %d ranks, sum %.1f (expected %.1f): %s\n", size, global, expected, ok ? "ok" : "WRONG");

    cudaFree(x);
    cudaFree(y);
    cudaFree(partial);
    cudaStreamDestroy(s_compute);
    cudaStreamDestroy(s_copy);
    MPI_Finalize();
    return ok ? 0 : 1;
}

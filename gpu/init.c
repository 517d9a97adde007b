/* gpu/init.c — start of the GPU collectors when libxsprof is loaded. */
#include "gpu/gpu.h"

#include <errno.h>

/* NVTX_INJECTION64_PATH must be in place before the application's first
 * NVTX call, and CUPTI activity must be on before its first CUDA context. */
__attribute__((constructor)) static void xsprof_gpu_load(void)
{
    if (xsprof_core_shadowed()) /* NVTX and CUPTI go to the copy the program reaches */
        return;
    int saved = errno;
    xsprof_nvtx_env_set();
    xsprof_nvtx_emit_start();
    xsprof_cupti_start();
    errno = saved;
}

/* gpu/nvtx_emit.c — xsprof's regions as NVTX ranges of the domain "xsprof"
 * (XSPROF_NVTX_EMIT=1), so that a tool listening to NVTX (Nsight Systems)
 * shows them on its own timeline, and session start/stop as
 * cudaProfilerStart/Stop (XSPROF_CUDA_PROFILER_API=1).
 *
 * Regions arrive through a core observer: with XSPROF_NVTX_EMIT off none is
 * registered, and the region path costs what it did (its one check of the
 * observer count). The NVTX calls go through NVTX 3's header implementation,
 * private to this library, which loads the injection library that
 * NVTX_INJECTION64_PATH names at the first call. When that library is
 * xsprof itself, its capture (nvtx.c) ignores the domain "xsprof", so no
 * region is recorded twice. */
#include "gpu/gpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>

/* 1 on, 0 off, -1 a value that is neither (said once by the caller). */
static int xsprof_nvtx_emit_flag(const char *name)
{
    const char *v = xsprof_config_get(name);
    if (!v || !strcmp(v, "0") || !strcasecmp(v, "off") || !strcasecmp(v, "no") || !strcasecmp(v, "false"))
        return 0;
    if (!strcmp(v, "1") || !strcasecmp(v, "on") || !strcasecmp(v, "yes") || !strcasecmp(v, "true"))
        return 1;
    xsprof_log(XSPROF_LOG_WARN, "%s=%s ignored (expected 1 or 0); off", name, v);
    return -1;
}

/* ---- sessions -> cudaProfilerStart/Stop ------------------------------------ */

typedef int (*xsprof_cuda_profiler_fn)(void);

/* The runtime's entry point when the program has it in its global scope
 * (libcudart.so); else the driver's (cuProfilerStart/Stop, libcuda.so.1,
 * which a program with a statically linked runtime loads and Nsight Systems
 * treats alike). Never loads either: no CUDA in the process, no call. */
static xsprof_cuda_profiler_fn xsprof_cuda_profiler_find(int on, const char **found)
{
    const char *rt = on ? "cudaProfilerStart" : "cudaProfilerStop";
    const char *drv = on ? "cuProfilerStart" : "cuProfilerStop";
    void *p = dlsym(RTLD_DEFAULT, rt);
    *found = rt;
    if (!p) {
        void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        if (cuda) {
            p = dlsym(cuda, drv);
            *found = drv;
            dlclose(cuda); /* RTLD_NOLOAD took a reference: give it back */
        }
    }
    xsprof_cuda_profiler_fn fn = NULL;
    if (p)
        memcpy(&fn, &p, sizeof fn);
    return fn;
}

static void xsprof_cuda_profiler_session(int on)
{
    int saved = errno;
    const char *name;
    xsprof_cuda_profiler_fn fn = xsprof_cuda_profiler_find(on, &name);
    static atomic_int said_missing;
    if (!fn) {
        if (!atomic_exchange(&said_missing, 1))
            xsprof_log(XSPROF_LOG_INFO, "XSPROF_CUDA_PROFILER_API=1: no CUDA runtime or driver in the process; "
                       "session %s not passed on", on ? "start" : "stop");
    } else {
        int rc = fn();
        if (rc)
            xsprof_log(XSPROF_LOG_WARN, "%s() returned CUDA error %d", name, rc);
        else
            xsprof_log(XSPROF_LOG_DEBUG, "session %s: %s()", on ? "started" : "stopped", name);
    }
    errno = saved;
}

#if XSPROF_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>

/* ---- regions -> NVTX ranges -------------------------------------------------- */

static nvtxDomainHandle_t g_domain;
static pthread_once_t g_domain_once = PTHREAD_ONCE_INIT;

/* At the first region, not in the constructor: NVTX then loads its injection
 * library, which must not happen while libraries are still being loaded. */
static void xsprof_nvtx_emit_domain(void) { g_domain = nvtxDomainCreateA("xsprof"); }

static void xsprof_nvtx_emit_begin(const xsprof_region_info *info, void *user)
{
    (void)user;
    int saved = errno;
    pthread_once(&g_domain_once, xsprof_nvtx_emit_domain);
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = info->name;
    nvtxDomainRangePushEx(g_domain, &a);
    errno = saved;
}

/* Observers see every end whose begin they saw, on the same thread: pops
 * pair with pushes as regions nest. */
static void xsprof_nvtx_emit_end(const xsprof_region_info *info, void *user)
{
    (void)info;
    (void)user;
    int saved = errno;
    nvtxDomainRangePop(g_domain);
    errno = saved;
}

static xsprof_status xsprof_nvtx_emit_regions(void)
{
    xsprof_observer_handle h;
    xsprof_status st = xsprof_observer_add(xsprof_nvtx_emit_begin, xsprof_nvtx_emit_end, NULL, 1.0, 0, &h);
    if (st)
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_NVTX_EMIT=1: regions are not emitted as NVTX ranges (%s)",
                   xsprof_status_string(st));
    return st;
}

#else /* !XSPROF_HAVE_NVTX */

static xsprof_status xsprof_nvtx_emit_regions(void)
{
    xsprof_log(XSPROF_LOG_WARN, "XSPROF_NVTX_EMIT=1: this xsprof was built without the NVTX headers; "
               "regions are not emitted");
    return XSPROF_ERR_UNSUPPORTED;
}

#endif

void xsprof_nvtx_emit_start(void)
{
    if (xsprof_nvtx_emit_flag("XSPROF_NVTX_EMIT") == 1 && xsprof_nvtx_emit_regions() == XSPROF_OK)
        xsprof_meta_set("nvtx_emit", "on");
    if (xsprof_nvtx_emit_flag("XSPROF_CUDA_PROFILER_API") == 1 &&
        xsprof_session_hook_add(xsprof_cuda_profiler_session) != XSPROF_OK)
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_CUDA_PROFILER_API=1: sessions are not passed on (no session hook left)");
}

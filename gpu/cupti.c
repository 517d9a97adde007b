/* gpu/cupti.c — CUDA activity collection through CUPTI. libcupti is loaded
 * with dlopen so that the same libxsprof runs on nodes without CUDA; every
 * failure turns into one warning and GPU collection stays off. */
#include "gpu/gpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

xsprof_status xsprof_gpu_mode_parse(const char *value, enum xsprof_gpu_mode *mode)
{
    if (!mode)
        return XSPROF_ERR_INVALID;
    if (!value || !*value || !strcasecmp(value, "auto")) {
        *mode = XSPROF_GPU_MODE_AUTO;
        return XSPROF_OK;
    }
    if (!strcmp(value, "0") || !strcasecmp(value, "off") || !strcasecmp(value, "no") || !strcasecmp(value, "false")) {
        *mode = XSPROF_GPU_MODE_OFF;
        return XSPROF_OK;
    }
    if (!strcmp(value, "1") || !strcasecmp(value, "on") || !strcasecmp(value, "yes") || !strcasecmp(value, "true")) {
        *mode = XSPROF_GPU_MODE_ON;
        return XSPROF_OK;
    }
    return XSPROF_ERR_INVALID;
}

static char g_reason[512];
static atomic_int g_active;
static atomic_int g_warned;
static atomic_uint_fast64_t g_dropped;

int xsprof_cupti_active(void) { return atomic_load(&g_active); }
const char *xsprof_cupti_disabled_reason(void) { return g_reason; }
uint64_t xsprof_cupti_dropped(void) { return (uint64_t)atomic_load(&g_dropped); }

enum { XSPROF_GPU_WARN_NOW = 0, XSPROF_GPU_WARN_QUIET = 1, XSPROF_GPU_INFO_JOB_ONCE = 2 };

static void xsprof_cupti_say(int level)
{
    if (atomic_exchange(&g_warned, 1) == 0)
        xsprof_log(level, "GPU collection disabled: %s (CPU and MPI profiling continue)", g_reason);
}

/* Under XSPROF_GPU=auto ("when present") a node without a GPU driver is
 * normal, not a problem: one info line per job (rank 0, seen with
 * XSPROF_LOG=info), and only in a process that records, not in every
 * program that inherits LD_PRELOAD (shells, launchers). */
static void xsprof_cupti_info_job_once(void)
{
    if (xsprof_identity_rank() == 0)
        xsprof_cupti_say(XSPROF_LOG_INFO);
}

/* One warning (see the policies above), the reason kept in the rank file
 * so the report can say why there is no GPU data. */
static void xsprof_cupti_disable(const char *reason, int policy)
{
    snprintf(g_reason, sizeof g_reason, "%s", reason);
    atomic_store(&g_active, 0);
    xsprof_meta_set("gpu_disabled_reason", g_reason);
    if (policy == XSPROF_GPU_WARN_NOW)
        xsprof_cupti_say(XSPROF_LOG_WARN);
    else if (policy == XSPROF_GPU_INFO_JOB_ONCE)
        xsprof_start_hook_add(xsprof_cupti_info_job_once);
}

#if XSPROF_HAVE_CUPTI

#define XSPROF_CUPTI_BUFFER_BYTES (1u << 20)
/* Bounded memory: past this many buffers in flight CUPTI drops (and counts). */
#define XSPROF_CUPTI_BUFFERS_MAX 64
#define XSPROF_CUPTI_TIDMAP 4096
#define XSPROF_CUPTI_CTXMAP 64
#define XSPROF_NA UINT32_MAX

static struct {
    pthread_mutex_t lock;
    int loaded;
    void *lib;
    char path[512];
    CUptiResult (CUPTIAPI *activity_enable)(CUpti_ActivityKind);
    CUptiResult (CUPTIAPI *activity_disable)(CUpti_ActivityKind);
    CUptiResult (CUPTIAPI *register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (CUPTIAPI *next_record)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (CUPTIAPI *num_dropped)(CUcontext, uint32_t, size_t *);
    CUptiResult (CUPTIAPI *flush_all)(uint32_t);
    CUptiResult (CUPTIAPI *get_timestamp)(uint64_t *);
    CUptiResult (CUPTIAPI *callback_name)(CUpti_CallbackDomain, uint32_t, const char **);
    CUptiResult (CUPTIAPI *result_string)(CUptiResult, const char **);
    CUptiResult (CUPTIAPI *get_version)(uint32_t *);
    /* optional entry points (older CUPTI lacks some) */
    CUptiResult (CUPTIAPI *register_timestamp)(CUpti_TimestampCallbackFunc);
    CUptiResult (CUPTIAPI *set_thread_id_type)(CUpti_ActivityThreadIdType);
    CUptiResult (CUPTIAPI *subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (CUPTIAPI *enable_domain)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
} g_cupti = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* CUPTI timestamps + g_offset = xsprof clock; 0 while CUPTI calls our clock. */
static _Atomic int64_t g_offset;
static atomic_int g_offset_mode;
static atomic_int g_buffers_out;
/* Set by the finalize hook: core stops regular records before the hooks
 * run, so the last buffers go in through the definition path. */
static atomic_int g_final;

/* OS thread id -> xsprof thread id, filled on the calling thread at its
 * first CUDA API call, read on CUPTI's thread when API records arrive. */
static _Atomic uint32_t g_tid_key[XSPROF_CUPTI_TIDMAP];
static _Atomic uint32_t g_tid_val[XSPROF_CUPTI_TIDMAP];
static _Thread_local int t_tid_mapped;
static atomic_int g_subscribed;
static CUpti_SubscriberHandle g_sub;
static _Thread_local int t_worker_named;

/* context -> device, learnt from device records, for synchronisation records. */
static _Atomic uint32_t g_ctx_key[XSPROF_CUPTI_CTXMAP];
static _Atomic uint32_t g_ctx_dev[XSPROF_CUPTI_CTXMAP];

static const char *xsprof_cupti_result(CUptiResult r)
{
    const char *s = NULL;
    if (g_cupti.result_string && g_cupti.result_string(r, &s) == CUPTI_SUCCESS && s)
        return s;
    return "unknown CUPTI error";
}

static void xsprof_tidmap_put(uint32_t os_tid, uint32_t tid)
{
    for (uint32_t i = 0; i < XSPROF_CUPTI_TIDMAP; i++) {
        uint32_t slot = (os_tid * 2654435761u + i) % XSPROF_CUPTI_TIDMAP;
        uint32_t expected = 0;
        if (atomic_load(&g_tid_key[slot]) == os_tid ||
            atomic_compare_exchange_strong(&g_tid_key[slot], &expected, os_tid)) {
            atomic_store(&g_tid_val[slot], tid + 1);
            return;
        }
    }
}

static uint32_t xsprof_tidmap_get(uint32_t os_tid)
{
    for (uint32_t i = 0; i < XSPROF_CUPTI_TIDMAP && os_tid; i++) {
        uint32_t slot = (os_tid * 2654435761u + i) % XSPROF_CUPTI_TIDMAP;
        uint32_t key = atomic_load(&g_tid_key[slot]);
        if (key == os_tid) {
            uint32_t v = atomic_load(&g_tid_val[slot]);
            return v ? v - 1 : XSPROF_NA;
        }
        if (!key)
            break;
    }
    return XSPROF_NA;
}

static void xsprof_ctxmap_put(uint32_t ctx, uint32_t dev)
{
    for (uint32_t i = 0; i < XSPROF_CUPTI_CTXMAP; i++) {
        uint32_t slot = (ctx + i) % XSPROF_CUPTI_CTXMAP;
        uint32_t expected = 0;
        if (atomic_load(&g_ctx_key[slot]) == ctx + 1 ||
            atomic_compare_exchange_strong(&g_ctx_key[slot], &expected, ctx + 1)) {
            atomic_store(&g_ctx_dev[slot], dev);
            return;
        }
    }
}

static uint32_t xsprof_ctxmap_get(uint32_t ctx)
{
    for (uint32_t i = 0; i < XSPROF_CUPTI_CTXMAP; i++) {
        uint32_t slot = (ctx + i) % XSPROF_CUPTI_CTXMAP;
        uint32_t key = atomic_load(&g_ctx_key[slot]);
        if (key == ctx + 1)
            return atomic_load(&g_ctx_dev[slot]);
        if (!key)
            break;
    }
    return XSPROF_NA;
}

static int xsprof_cupti_sym(void *lib, const char *name, void *slot, size_t size)
{
    void *p = dlsym(lib, name);
    if (p)
        memcpy(slot, &p, size);
    return p != NULL;
}

static void *xsprof_cupti_try(const char *path, char *tried, size_t len)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        size_t used = strlen(tried);
        if (used + 1 < len)
            snprintf(tried + used, len - used, "%s%s", used ? ", " : "", path);
    } else {
        snprintf(g_cupti.path, sizeof g_cupti.path, "%s", path);
    }
    return h;
}

static void *xsprof_cupti_open(char *why, size_t len)
{
    char tried[1024] = "";
    char path[sizeof g_cupti.path];
    const char *env = xsprof_config_get("XSPROF_CUPTI_LIB");
    if (env && *env) {
        void *h = xsprof_cupti_try(env, tried, sizeof tried);
        if (!h)
            snprintf(why, len, "XSPROF_CUPTI_LIB=%s does not load: %s", env, dlerror());
        return h;
    }
    /* Same major version as the headers the decoder was compiled with. */
    char soname[64];
    snprintf(soname, sizeof soname, "libcupti.so.%d", CUDA_VERSION / 1000);
    void *h = xsprof_cupti_try(soname, tried, sizeof tried);
    const char *roots[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    const char *subdirs[] = {"lib64", "extras/CUPTI/lib64", "lib"};
    for (size_t r = 0; !h && r < sizeof roots / sizeof *roots; r++) {
        if (!roots[r] || !*roots[r])
            continue;
        for (size_t s = 0; !h && s < sizeof subdirs / sizeof *subdirs; s++) {
            snprintf(path, sizeof path, "%s/%s/%s", roots[r], subdirs[s], soname);
            h = xsprof_cupti_try(path, tried, sizeof tried);
        }
    }
    if (!h)
        h = xsprof_cupti_try("libcupti.so", tried, sizeof tried);
    if (!h)
        snprintf(why, len, "libcupti not found (tried %s); set XSPROF_CUPTI_LIB", tried);
    return h;
}

xsprof_status xsprof_cupti_load(char *why, size_t len)
{
    char local[256];
    if (!why || !len) {
        why = local;
        len = sizeof local;
    }
    why[0] = '\0';
    pthread_mutex_lock(&g_cupti.lock);
    xsprof_status st = XSPROF_OK;
    if (g_cupti.loaded)
        goto out;
    void *lib = xsprof_cupti_open(why, len);
    if (!lib) {
        st = XSPROF_ERR_UNSUPPORTED;
        goto out;
    }
    struct {
        const char *name;
        void *slot;
        size_t size;
    } req[] = {
        {"cuptiActivityEnable", &g_cupti.activity_enable, sizeof g_cupti.activity_enable},
        {"cuptiActivityDisable", &g_cupti.activity_disable, sizeof g_cupti.activity_disable},
        {"cuptiActivityRegisterCallbacks", &g_cupti.register_callbacks, sizeof g_cupti.register_callbacks},
        {"cuptiActivityGetNextRecord", &g_cupti.next_record, sizeof g_cupti.next_record},
        {"cuptiActivityGetNumDroppedRecords", &g_cupti.num_dropped, sizeof g_cupti.num_dropped},
        {"cuptiActivityFlushAll", &g_cupti.flush_all, sizeof g_cupti.flush_all},
        {"cuptiGetTimestamp", &g_cupti.get_timestamp, sizeof g_cupti.get_timestamp},
        {"cuptiGetCallbackName", &g_cupti.callback_name, sizeof g_cupti.callback_name},
        {"cuptiGetResultString", &g_cupti.result_string, sizeof g_cupti.result_string},
        {"cuptiGetVersion", &g_cupti.get_version, sizeof g_cupti.get_version},
    };
    for (size_t i = 0; i < sizeof req / sizeof *req; i++) {
        if (!xsprof_cupti_sym(lib, req[i].name, req[i].slot, req[i].size)) {
            snprintf(why, len, "%s lacks %s (CUPTI too old?)", g_cupti.path, req[i].name);
            st = XSPROF_ERR_UNSUPPORTED;
            goto out;
        }
    }
    xsprof_cupti_sym(lib, "cuptiActivityRegisterTimestampCallback", &g_cupti.register_timestamp,
                     sizeof g_cupti.register_timestamp);
    xsprof_cupti_sym(lib, "cuptiSetThreadIdType", &g_cupti.set_thread_id_type, sizeof g_cupti.set_thread_id_type);
    xsprof_cupti_sym(lib, "cuptiSubscribe", &g_cupti.subscribe, sizeof g_cupti.subscribe);
    xsprof_cupti_sym(lib, "cuptiEnableDomain", &g_cupti.enable_domain, sizeof g_cupti.enable_domain);
    /* Never dlclose: CUPTI may have started threads that run its code. */
    g_cupti.lib = lib;
    g_cupti.loaded = 1;
out:
    pthread_mutex_unlock(&g_cupti.lock);
    return st;
}

static uint64_t CUPTIAPI xsprof_cupti_timestamp(void) { return (uint64_t)xsprof_clock_now(); }

/* Offset between CUPTI's clock and ours, read around one CUPTI sample. */
static void xsprof_cupti_offset_measure(void)
{
    uint64_t g = 0;
    int64_t t0 = xsprof_clock_now();
    if (g_cupti.get_timestamp(&g) != CUPTI_SUCCESS)
        return;
    int64_t t1 = xsprof_clock_now();
    atomic_store(&g_offset, t0 + (t1 - t0) / 2 - (int64_t)g);
}

void CUPTIAPI xsprof_cupti_api_enter(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                            const void *data)
{
    (void)user;
    (void)domain;
    (void)cbid;
    (void)data;
    if (t_tid_mapped || !xsprof_collecting())
        return;
    int saved = errno;
    t_tid_mapped = 1;
    xsprof_tidmap_put((uint32_t)syscall(SYS_gettid), xsprof_thread_self());
    errno = saved;
}

void CUPTIAPI xsprof_cupti_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    int saved = errno;
    *buffer = NULL;
    *size = 0;
    *max_records = 0;
    if (atomic_fetch_add(&g_buffers_out, 1) < XSPROF_CUPTI_BUFFERS_MAX) {
        *buffer = aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, XSPROF_CUPTI_BUFFER_BYTES);
        if (*buffer)
            *size = XSPROF_CUPTI_BUFFER_BYTES;
    }
    if (!*buffer)
        atomic_fetch_sub(&g_buffers_out, 1);
    errno = saved;
}

static const char *xsprof_memkind(uint32_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "Pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "Pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return "Device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return "Array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return "Managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return "Device Static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return "Managed Static";
    default: return "Unknown";
    }
}

static const char *xsprof_copykind(uint32_t k, uint32_t *gpu_kind)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: *gpu_kind = XSPROF_GPU_MEMCPY_HTOD; return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: *gpu_kind = XSPROF_GPU_MEMCPY_DTOH; return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: *gpu_kind = XSPROF_GPU_MEMCPY_DTOD; return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: *gpu_kind = XSPROF_GPU_MEMCPY_HTOD; return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: *gpu_kind = XSPROF_GPU_MEMCPY_DTOH; return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: *gpu_kind = XSPROF_GPU_MEMCPY_DTOD; return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: *gpu_kind = XSPROF_GPU_MEMCPY_DTOD; return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: *gpu_kind = XSPROF_GPU_MEMCPY_DTOD; return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: *gpu_kind = XSPROF_GPU_MEMCPY_OTHER; return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: *gpu_kind = XSPROF_GPU_MEMCPY_OTHER; return "PtoP";
    default: *gpu_kind = XSPROF_GPU_MEMCPY_OTHER; return "Unknown";
    }
}

static const char *xsprof_synckind(uint32_t t)
{
    switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "Sync: event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "Sync: stream wait event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "Sync: stream";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "Sync: context";
    default: return "Sync: unknown";
    }
}

/* Records CUPTI could not time at all (start 0): placed at CUPTI's time
 * zero they would stretch the merged timeline back by hours, so they are
 * counted instead (rank metadata gpu_untimed_records). */
static atomic_uint_fast64_t g_untimed;

static void xsprof_gpu_rec_init(xsprof_rec_gpu *out, uint32_t kind, uint64_t start, uint64_t end, int64_t offset_ns)
{
    memset(out, 0, sizeof *out);
    out->h.type = XSPROF_REC_GPU;
    out->h.size = xsprof_rec_size(sizeof *out);
    out->kind = kind;
    out->t_begin = (int64_t)start + offset_ns;
    /* An end before the start (CUPTI leaves end 0 when it could not time the
     * end) is a record of unknown duration: zero-length, never negative,
     * which would subtract from the GPU time of the report. */
    out->t_end = end < start ? out->t_begin : (int64_t)end + offset_ns;
    out->device = out->stream = out->context = XSPROF_NA;
}

xsprof_status xsprof_cupti_decode(const CUpti_Activity *rec, int64_t offset_ns, xsprof_rec_gpu *out)
{
    char name[XSPROF_NAME_MAX + 1];
    if (!rec || !out)
        return XSPROF_ERR_INVALID;
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        xsprof_gpu_rec_init(out, XSPROF_GPU_KERNEL, k->start, k->end, offset_ns);
        out->device = k->deviceId;
        out->context = k->contextId;
        out->stream = k->streamId;
        out->correlation = k->correlationId;
        out->grid[0] = (uint32_t)k->gridX;
        out->grid[1] = (uint32_t)k->gridY;
        out->grid[2] = (uint32_t)k->gridZ;
        out->block[0] = (uint32_t)k->blockX;
        out->block[1] = (uint32_t)k->blockY;
        out->block[2] = (uint32_t)k->blockZ;
        out->shared_mem = (uint32_t)k->staticSharedMemory + (uint32_t)k->dynamicSharedMemory;
        out->registers = k->registersPerThread;
        xsprof_ctxmap_put(k->contextId, k->deviceId);
        snprintf(name, sizeof name, "%s", k->name ? k->name : "<unnamed kernel>");
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
        uint32_t kind = 0;
        const char *ck = xsprof_copykind(m->copyKind, &kind);
        xsprof_gpu_rec_init(out, kind, m->start, m->end, offset_ns);
        out->device = m->deviceId;
        out->context = m->contextId;
        out->stream = m->streamId;
        out->correlation = m->correlationId;
        out->bytes = m->bytes;
        xsprof_ctxmap_put(m->contextId, m->deviceId);
        /* src/dst memory kinds have no field of their own: keep them in the name. */
        snprintf(name, sizeof name, "Memcpy %s (%s -> %s)", ck, xsprof_memkind(m->srcKind), xsprof_memkind(m->dstKind));
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
        xsprof_gpu_rec_init(out, XSPROF_GPU_MEMSET, m->start, m->end, offset_ns);
        out->device = m->deviceId;
        out->context = m->contextId;
        out->stream = m->streamId;
        out->correlation = m->correlationId;
        out->bytes = m->bytes;
        xsprof_ctxmap_put(m->contextId, m->deviceId);
        snprintf(name, sizeof name, "Memset (%s)", xsprof_memkind(m->memoryKind));
        break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const CUpti_ActivitySynchronization2 *s = (const CUpti_ActivitySynchronization2 *)rec;
        xsprof_gpu_rec_init(out, XSPROF_GPU_SYNC, s->start, s->end, offset_ns);
        out->context = s->contextId;
        out->stream = s->streamId;
        out->correlation = s->correlationId;
        out->device = xsprof_ctxmap_get(s->contextId);
        snprintf(name, sizeof name, "%s", xsprof_synckind(s->type));
        break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
        const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)rec;
        const char *cb = NULL;
        if (!g_cupti.callback_name)
            return XSPROF_ERR_STATE;
        CUpti_CallbackDomain dom =
            rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
        if (g_cupti.callback_name(dom, a->cbid, &cb) != CUPTI_SUCCESS || !cb)
            cb = NULL;
        xsprof_gpu_rec_init(out, XSPROF_GPU_API, a->start, a->end, offset_ns);
        out->correlation = a->correlationId;
        out->thread = xsprof_tidmap_get(a->threadId);
        if (cb) {
            /* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel": the version is noise. */
            snprintf(name, sizeof name, "%s", cb);
            char *v = strstr(name, "_v");
            if (v && v[2] >= '0' && v[2] <= '9')
                *v = '\0';
        } else {
            snprintf(name, sizeof name, "%s API %u", dom == CUPTI_CB_DOMAIN_RUNTIME_API ? "runtime" : "driver",
                     (unsigned)a->cbid);
        }
        break;
    }
    default:
        return XSPROF_ERR_UNSUPPORTED;
    }
    if (out->t_begin == offset_ns) /* start 0: untimed */
        return XSPROF_ERR_FORMAT;
    return xsprof_string_intern(name, &out->name);
}

void CUPTIAPI xsprof_cupti_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                            size_t valid)
{
    int saved = errno;
    (void)size;
    /* CUPTI's own worker thread gets a name in the trace; a thread that made
     * CUDA calls (known through the subscriber) is an application thread. */
    if (!t_worker_named && !t_tid_mapped && atomic_load(&g_subscribed) && !atomic_load(&g_final)) {
        t_worker_named = 1;
        xsprof_thread_name("CUPTI worker");
    }
    if (buffer && valid && g_cupti.next_record) {
        if (atomic_load(&g_offset_mode))
            xsprof_cupti_offset_measure();
        int64_t offset = atomic_load(&g_offset);
        CUpti_Activity *rec = NULL;
        while (g_cupti.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
            xsprof_rec_gpu out;
            xsprof_status st = xsprof_cupti_decode(rec, offset, &out);
            if (st == XSPROF_OK)
                xsprof_buf_append(&out, out.h.size, atomic_load(&g_final));
            else if (st == XSPROF_ERR_FORMAT)
                atomic_fetch_add(&g_untimed, 1);
        }
    }
    size_t dropped = 0;
    if (g_cupti.num_dropped && g_cupti.num_dropped(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
        atomic_fetch_add(&g_dropped, dropped);
    if (buffer) {
        free(buffer);
        int out = atomic_load(&g_buffers_out);
        while (out > 0 && !atomic_compare_exchange_weak(&g_buffers_out, &out, out - 1))
            ;
    }
    errno = saved;
}

static const struct {
    CUpti_ActivityKind kind;
    const char *name;
} xsprof_cupti_kinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL"},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION"},
    {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME"},
    {CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER"},
};
#define XSPROF_CUPTI_NKINDS (sizeof xsprof_cupti_kinds / sizeof *xsprof_cupti_kinds)

static void xsprof_cupti_disable_kinds(size_t n)
{
    for (size_t i = 0; i < n; i++)
        g_cupti.activity_disable(xsprof_cupti_kinds[i].kind);
}

/* Finalize hook: stop collecting, hand over what CUPTI still buffers and
 * record how much CUPTI lost. */
static void xsprof_cupti_finalize(void)
{
    int saved = errno;
    if (atomic_load(&g_active)) {
        atomic_store(&g_final, 1);
        if (atomic_load(&g_subscribed)) {
            g_cupti.enable_domain(0, g_sub, CUPTI_CB_DOMAIN_RUNTIME_API);
            g_cupti.enable_domain(0, g_sub, CUPTI_CB_DOMAIN_DRIVER_API);
        }
        xsprof_cupti_disable_kinds(XSPROF_CUPTI_NKINDS);
        g_cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        atomic_store(&g_active, 0);
    }
    char n[32];
    uint64_t dropped = xsprof_cupti_dropped();
    snprintf(n, sizeof n, "%" PRIu64, dropped);
    xsprof_meta_set("gpu_dropped_records", n);
    if (dropped)
        xsprof_log(XSPROF_LOG_WARN, "CUPTI dropped %" PRIu64 " GPU activity records (buffers full)", dropped);
    uint64_t untimed = (uint64_t)atomic_load(&g_untimed);
    snprintf(n, sizeof n, "%" PRIu64, untimed);
    xsprof_meta_set("gpu_untimed_records", n);
    if (untimed)
        xsprof_log(XSPROF_LOG_WARN, "CUPTI gave %" PRIu64 " GPU activity records without timestamps: left out", untimed);
    errno = saved;
}

static xsprof_status xsprof_cupti_enable(void)
{
    char why[512];
    CUptiResult r;
    if (xsprof_cupti_load(why, sizeof why) != XSPROF_OK) {
        xsprof_cupti_disable(why, 0);
        return XSPROF_ERR_UNSUPPORTED;
    }
    uint32_t version = 0;
    if (g_cupti.get_version(&version) == CUPTI_SUCCESS) {
        char v[32];
        snprintf(v, sizeof v, "%u", version);
        xsprof_meta_set("cupti_version", v);
    }
    xsprof_meta_set("cupti_library", g_cupti.path);
    /* Our clock in every record when CUPTI allows it; else a measured offset. */
    if (g_cupti.register_timestamp && g_cupti.register_timestamp(xsprof_cupti_timestamp) == CUPTI_SUCCESS) {
        atomic_store(&g_offset_mode, 0);
        atomic_store(&g_offset, 0);
        xsprof_meta_set("gpu_timestamps", "xsprof clock (cuptiActivityRegisterTimestampCallback)");
    } else {
        atomic_store(&g_offset_mode, 1);
        xsprof_cupti_offset_measure();
        xsprof_meta_set("gpu_timestamps", "cuptiGetTimestamp + measured offset");
    }
    if (g_cupti.set_thread_id_type)
        g_cupti.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    r = g_cupti.register_callbacks(xsprof_cupti_buffer_requested, xsprof_cupti_buffer_completed);
    if (r != CUPTI_SUCCESS) {
        snprintf(why, sizeof why, "cuptiActivityRegisterCallbacks failed: %s", xsprof_cupti_result(r));
        xsprof_cupti_disable(why, 0);
        return XSPROF_ERR_UNSUPPORTED;
    }
    for (size_t i = 0; i < XSPROF_CUPTI_NKINDS; i++) {
        r = g_cupti.activity_enable(xsprof_cupti_kinds[i].kind);
        if (r != CUPTI_SUCCESS) {
            xsprof_cupti_disable_kinds(i);
            snprintf(why, sizeof why, "cuptiActivityEnable(%s) failed: %s (no GPU or driver?)",
                     xsprof_cupti_kinds[i].name, xsprof_cupti_result(r));
            xsprof_cupti_disable(why, 0);
            return XSPROF_ERR_UNSUPPORTED;
        }
    }
    /* Optional: maps OS thread ids of API records to xsprof thread ids. */
    if (g_cupti.subscribe && g_cupti.enable_domain &&
        (r = g_cupti.subscribe(&g_sub, xsprof_cupti_api_enter, NULL)) == CUPTI_SUCCESS) {
        g_cupti.enable_domain(1, g_sub, CUPTI_CB_DOMAIN_RUNTIME_API);
        g_cupti.enable_domain(1, g_sub, CUPTI_CB_DOMAIN_DRIVER_API);
        atomic_store(&g_subscribed, 1);
    } else {
        xsprof_log(XSPROF_LOG_INFO, "CUPTI callbacks unavailable (another tool subscribed?): "
                                    "API records carry no xsprof thread id");
    }
    if (xsprof_finalize_hook_add(xsprof_cupti_finalize) != XSPROF_OK)
        xsprof_log(XSPROF_LOG_WARN, "no finalize hook left: GPU records still buffered at exit may be lost");
    g_reason[0] = '\0';
    atomic_store(&g_active, 1);
    xsprof_log(XSPROF_LOG_INFO, "CUPTI activity collection on (%s)", g_cupti.path);
    return XSPROF_OK;
}

/* auto: only try CUPTI where a driver is installed. */
static int xsprof_driver_present(char *why, size_t len)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
        snprintf(why, len, "no CUDA driver (libcuda.so.1 does not load: %s)", dlerror());
        return 0;
    }
    dlclose(h);
    return 1;
}

xsprof_status xsprof_cupti_start(void)
{
    enum xsprof_gpu_mode mode;
    char why[512];
    const char *v = xsprof_config_get("XSPROF_GPU");
    if (xsprof_gpu_mode_parse(v, &mode) != XSPROF_OK) {
        snprintf(why, sizeof why, "XSPROF_GPU=%s is not 0, 1 or auto", v);
        xsprof_cupti_disable(why, 0);
        return XSPROF_ERR_INVALID;
    }
    if (mode == XSPROF_GPU_MODE_OFF) {
        xsprof_cupti_disable("XSPROF_GPU=0", 1);
        return XSPROF_ERR_DISABLED;
    }
    if (mode == XSPROF_GPU_MODE_AUTO && !xsprof_driver_present(why, sizeof why)) {
        xsprof_cupti_disable(why, XSPROF_GPU_INFO_JOB_ONCE);
        return XSPROF_ERR_UNSUPPORTED;
    }
    return xsprof_cupti_enable();
}

#else /* !XSPROF_HAVE_CUPTI */

xsprof_status xsprof_cupti_start(void)
{
    enum xsprof_gpu_mode mode = XSPROF_GPU_MODE_AUTO;
    const char *v = xsprof_config_get("XSPROF_GPU");
    if (xsprof_gpu_mode_parse(v, &mode) == XSPROF_OK && mode == XSPROF_GPU_MODE_OFF) {
        xsprof_cupti_disable("XSPROF_GPU=0", 1);
        return XSPROF_ERR_DISABLED;
    }
    /* Quiet under auto: a build without CUDA headers is a CPU-only build. */
    xsprof_cupti_disable("xsprof was built without the CUPTI headers", mode == XSPROF_GPU_MODE_AUTO);
    return XSPROF_ERR_UNSUPPORTED;
}

#endif

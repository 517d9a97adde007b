/* tests/gpu/test_cupti_decode.c — CUPTI activity decoding without a GPU.
 * Real CUPTI record structs (cupti_activity.h of the CUDA toolkit) are
 * filled with known values in a buffer obtained from xsprof's
 * buffer-requested callback and handed to the buffer-completed callback,
 * which walks it with the real libcupti (cuptiActivityGetNextRecord), as at
 * run time. The rank file is then read back with the io reader and every
 * field compared. Exit 77 (skip) when libcupti cannot be loaded.
 *
 * usage: test_cupti_decode RUN_DIR   (XSPROF_OUTPUT must equal RUN_DIR) */
#include "gpu/gpu.h"
#include "io/reader.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int g_fail;

#define CHECK(cond)                                                                                    \
    do {                                                                                               \
        if (!(cond)) {                                                                                 \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                   \
            g_fail = 1;                                                                                \
        }                                                                                              \
    } while (0)

#define CHECK_EQ(a, b)                                                                                 \
    do {                                                                                               \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                               \
        if (a_ != b_) {                                                                                \
            fprintf(stderr, "%s:%d: %s = %" PRIu64 ", expected %" PRIu64 "\n", __FILE__, __LINE__, #a, \
                    a_, b_);                                                                           \
            g_fail = 1;                                                                                \
        }                                                                                              \
    } while (0)

typedef struct expect {
    const char *name;
    uint32_t kind, device, stream, correlation, context;
    int64_t t_begin, t_end;
    uint64_t bytes;
    uint32_t grid[3], block[3], shared_mem, registers;
    int api; /* thread must be the caller's xsprof thread id */
} expect;

#define NA UINT32_MAX
static const expect g_expect[] = {
    {"_Z5saxpyifPKfPf", XSPROF_GPU_KERNEL, 1, 13, 101, 5, 1000000, 1500000, 0, {256, 2, 1}, {128, 1, 1}, 1536, 32, 0},
    {"Memcpy HtoD (Pageable -> Device)", XSPROF_GPU_MEMCPY_HTOD, 1, 13, 102, 5, 1600000, 1700000, 4096, {0}, {0}, 0, 0, 0},
    {"Memcpy DtoH (Device -> Pinned)", XSPROF_GPU_MEMCPY_DTOH, 1, 14, 103, 5, 1800000, 1850000, 8192, {0}, {0}, 0, 0, 0},
    {"Memcpy DtoD (Device -> Device)", XSPROF_GPU_MEMCPY_DTOD, 1, 14, 104, 5, 1860000, 1870000, 64, {0}, {0}, 0, 0, 0},
    {"Memset (Device)", XSPROF_GPU_MEMSET, 1, 13, 105, 5, 1900000, 1910000, 2048, {0}, {0}, 0, 0, 0},
    {"Sync: stream", XSPROF_GPU_SYNC, 1, 13, 106, 5, 2000000, 2100000, 0, {0}, {0}, 0, 0, 0},
    {"cudaLaunchKernel", XSPROF_GPU_API, NA, NA, 101, NA, 990000, 995000, 0, {0}, {0}, 0, 0, 1},
    {"cuLaunchKernel", XSPROF_GPU_API, NA, NA, 107, NA, 2200000, 2210000, 0, {0}, {0}, 0, 0, 1},
    /* Edge values: an end before the start and an end CUPTI left 0 are
     * zero-length (never negative), the largest correlation id is kept,
     * unknown copy, memory and sync kinds get names, no device stays NA. */
    {"edge_backwards", XSPROF_GPU_KERNEL, 1, 13, UINT32_MAX, 5, 3000000, 3000000, 0, {0}, {0}, 0, 0, 0},
    {"edge_end_zero", XSPROF_GPU_KERNEL, 1, 13, UINT32_MAX - 1, 5, 3100000, 3100000, 0, {0}, {0}, 0, 0, 0},
    {"edge_zero_length", XSPROF_GPU_KERNEL, 1, 13, 0, 5, 3200000, 3200000, 0, {0}, {0}, 0, 0, 0},
    {"Memcpy Unknown (Unknown -> Unknown)", XSPROF_GPU_MEMCPY_OTHER, 1, 13, UINT32_MAX, 5, 3300000, 3300000, 0, {0},
     {0}, 0, 0, 0},
    {"Sync: unknown", XSPROF_GPU_SYNC, NA, NA, 5, 999, 3400000, 3400000, 0, {0}, {0}, 0, 0, 0},
};
#define NEXPECT (sizeof g_expect / sizeof *g_expect)

/* Fill the buffer exactly as CUPTI lays records out: back to back, each
 * its struct's size (all multiples of the 8-byte record alignment). */
static size_t fill(uint8_t *buf, uint32_t os_tid)
{
    size_t off = 0;

    CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)(buf + off);
    off += sizeof *k;
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->name = "_Z5saxpyifPKfPf";
    k->start = 1000000;
    k->end = 1500000;
    k->deviceId = 1;
    k->contextId = 5;
    k->streamId = 13;
    k->correlationId = 101;
    k->gridX = 256;
    k->gridY = 2;
    k->gridZ = 1;
    k->blockX = 128;
    k->blockY = 1;
    k->blockZ = 1;
    k->staticSharedMemory = 1024;
    k->dynamicSharedMemory = 512;
    k->registersPerThread = 32;

    const struct {
        uint8_t copy, src, dst;
        uint32_t stream, corr;
        uint64_t start, end, bytes;
    } copies[] = {
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 13, 102,
         1600000, 1700000, 4096},
        {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 14, 103,
         1800000, 1850000, 8192},
        {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 14, 104,
         1860000, 1870000, 64},
    };
    for (size_t i = 0; i < sizeof copies / sizeof *copies; i++) {
        CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)(buf + off);
        off += sizeof *m;
        m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        m->copyKind = copies[i].copy;
        m->srcKind = copies[i].src;
        m->dstKind = copies[i].dst;
        m->bytes = copies[i].bytes;
        m->start = copies[i].start;
        m->end = copies[i].end;
        m->deviceId = 1;
        m->contextId = 5;
        m->streamId = copies[i].stream;
        m->correlationId = copies[i].corr;
    }

    CUpti_ActivityMemset4 *ms = (CUpti_ActivityMemset4 *)(buf + off);
    off += sizeof *ms;
    ms->kind = CUPTI_ACTIVITY_KIND_MEMSET;
    ms->value = 0;
    ms->bytes = 2048;
    ms->start = 1900000;
    ms->end = 1910000;
    ms->deviceId = 1;
    ms->contextId = 5;
    ms->streamId = 13;
    ms->correlationId = 105;
    ms->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;

    /* Synchronisation records carry no device: learnt from context 5. */
    CUpti_ActivitySynchronization2 *s = (CUpti_ActivitySynchronization2 *)(buf + off);
    off += sizeof *s;
    s->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    s->type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    s->start = 2000000;
    s->end = 2100000;
    s->correlationId = 106;
    s->contextId = 5;
    s->streamId = 13;

    CUpti_ActivityAPI *a = (CUpti_ActivityAPI *)(buf + off);
    off += sizeof *a;
    a->kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a->cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    a->start = 990000;
    a->end = 995000;
    a->processId = (uint32_t)getpid();
    a->threadId = os_tid;
    a->correlationId = 101;

    /* A kind xsprof does not record: skipped, the walk goes on. */
    CUpti_ActivityMarker2 *mk = (CUpti_ActivityMarker2 *)(buf + off);
    off += sizeof *mk;
    mk->kind = CUPTI_ACTIVITY_KIND_MARKER;

    a = (CUpti_ActivityAPI *)(buf + off);
    off += sizeof *a;
    a->kind = CUPTI_ACTIVITY_KIND_DRIVER;
    a->cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
    a->start = 2200000;
    a->end = 2210000;
    a->processId = (uint32_t)getpid();
    a->threadId = os_tid;
    a->correlationId = 107;
    const struct {
        const char *name;
        uint64_t start, end;
        uint32_t corr;
    } edges[] = {
        {"edge_backwards", 3000000, 2999000, UINT32_MAX},
        {"edge_end_zero", 3100000, 0, UINT32_MAX - 1},
        {"edge_zero_length", 3200000, 3200000, 0},
    };
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
        k = (CUpti_ActivityKernel10 *)(buf + off);
        off += sizeof *k;
        k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k->name = edges[i].name;
        k->start = edges[i].start;
        k->end = edges[i].end;
        k->deviceId = 1;
        k->contextId = 5;
        k->streamId = 13;
        k->correlationId = edges[i].corr;
    }
    CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)(buf + off);
    off += sizeof *m;
    m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m->copyKind = 200;
    m->srcKind = 99;
    m->dstKind = 99;
    m->start = m->end = 3300000;
    m->deviceId = 1;
    m->contextId = 5;
    m->streamId = 13;
    m->correlationId = UINT32_MAX;
    k = (CUpti_ActivityKernel10 *)(buf + off); /* untimed (start 0): left out, counted */
    off += sizeof *k;
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->name = "edge_untimed";
    k->deviceId = 1;
    k->contextId = 5;
    k->streamId = 13;
    k->correlationId = 9;
    s = (CUpti_ActivitySynchronization2 *)(buf + off); /* a context never seen: no device */
    off += sizeof *s;
    s->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    s->type = 77;
    s->start = 3400000;
    s->end = 3399999;
    s->correlationId = 5;
    s->contextId = 999;
    s->streamId = UINT32_MAX;
    return off;
}

int main(int argc, char **argv)
{
    char why[512];
    if (argc != 2) {
        fprintf(stderr, "usage: %s RUN_DIR\n", argv[0]);
        return 2;
    }
    if (xsprof_cupti_load(why, sizeof why) != XSPROF_OK) {
        printf("SKIP: %s\n", why);
        return 77;
    }

    /* The calling thread's first CUDA API call, as CUPTI reports it. */
    CUpti_CallbackData cb;
    memset(&cb, 0, sizeof cb);
    cb.callbackSite = CUPTI_API_ENTER;
    xsprof_cupti_api_enter(NULL, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &cb);
    uint32_t self = xsprof_thread_self();

    uint8_t *buf = NULL;
    size_t size = 0, max_records = 0;
    xsprof_cupti_buffer_requested(&buf, &size, &max_records);
    CHECK(buf != NULL);
    CHECK(size >= 4096);
    if (!buf)
        return 1;
    memset(buf, 0, size);
    size_t valid = fill(buf, (uint32_t)syscall(SYS_gettid));
    xsprof_cupti_buffer_completed(NULL, 0, buf, size, valid); /* frees buf */

    /* The measured-offset path shifts timestamps onto the xsprof clock. */
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = 10;
    k.end = 20;
    xsprof_rec_gpu r;
    CHECK(xsprof_cupti_decode((const CUpti_Activity *)&k, 1000, &r) == XSPROF_OK);
    CHECK_EQ(r.t_begin, 1010);
    CHECK_EQ(r.t_end, 1020);
    CHECK(xsprof_cupti_decode((const CUpti_Activity *)&k, 0, NULL) == XSPROF_ERR_INVALID);
    k.start = k.end = 0;
    CHECK(xsprof_cupti_decode((const CUpti_Activity *)&k, 1000, &r) == XSPROF_ERR_FORMAT);
    k.kind = CUPTI_ACTIVITY_KIND_MARKER;
    CHECK(xsprof_cupti_decode((const CUpti_Activity *)&k, 0, &r) == XSPROF_ERR_UNSUPPORTED);

    CHECK(xsprof_finalize() == XSPROF_OK);

    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/rank-00000.h5", argv[1]);
    xsprof_rank_data d;
    memset(&d, 0, sizeof d);
    if (xsprof_rankfile_load(path, &d, err, sizeof err) != XSPROF_OK) {
        fprintf(stderr, "cannot read %s: %s\n", path, err);
        return 1;
    }
    CHECK_EQ(d.ngpu, NEXPECT);
    for (size_t i = 0; i < d.ngpu && i < NEXPECT; i++) {
        const xsprof_io_gpu *g = &d.gpu[i];
        const expect *e = &g_expect[i];
        const char *name = xsprof_rank_data_string(&d, g->name);
        if (strcmp(name, e->name)) {
            fprintf(stderr, "row %zu: name '%s', expected '%s'\n", i, name, e->name);
            g_fail = 1;
        }
        CHECK_EQ(g->kind, e->kind);
        CHECK_EQ(g->t_begin, e->t_begin);
        CHECK_EQ(g->t_end, e->t_end);
        CHECK_EQ(g->device, e->device);
        CHECK_EQ(g->stream, e->stream);
        CHECK_EQ(g->correlation, e->correlation);
        CHECK_EQ(g->context, e->context);
        CHECK_EQ(g->bytes, e->bytes);
        for (int j = 0; j < 3; j++) {
            CHECK_EQ(g->grid[j], e->grid[j]);
            CHECK_EQ(g->block[j], e->block[j]);
        }
        CHECK_EQ(g->shared_mem, e->shared_mem);
        CHECK_EQ(g->registers, e->registers);
        CHECK_EQ(g->thread, e->api ? self : 0);
    }
    xsprof_rank_data_free(&d);
    if (!g_fail)
        printf("cupti decode: %zu records round-tripped\n", NEXPECT);
    return g_fail;
}

/* tests/gpu/nvtx_threads.c — NVTX from many threads at once: nested
 * push/pop on every thread, named-domain ranges, and start/end ranges that
 * one thread starts and another ends. Every range must be recorded exactly
 * once, on the thread that ended it, with its own id. Reads its rank file.
 *
 * usage: nvtx_threads RUN_DIR   (XSPROF_OUTPUT must equal RUN_DIR) */
#include <nvtx3/nvToolsExt.h>
#include <xsprof/xsprof.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/record.h"
#include "io/reader.h"

#define THREADS 8
#define ITERS 500
#define SLOTS 64

/* Ranges started by one thread wait here for another thread to end them. */
static _Atomic uint64_t g_slots[SLOTS];
static nvtxDomainHandle_t g_dom;

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "dom_range";
    for (int i = 0; i < ITERS; i++) {
        nvtxRangePushA("outer");
        nvtxRangePushA("inner");
        nvtxDomainRangePushEx(g_dom, &a);
        nvtxDomainRangePop(g_dom);
        nvtxRangePop();
        nvtxRangePop();
        /* Hand a started range to whoever comes next; end the one found. */
        uint64_t id = nvtxRangeStartA("handoff");
        uint64_t old = atomic_exchange(&g_slots[(me * 7 + i) % SLOTS], id);
        if (old)
            nvtxRangeEnd(old);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    g_dom = nvtxDomainCreateA("threads");
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t))
            return 1;
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    for (int s = 0; s < SLOTS; s++) {
        uint64_t id = atomic_exchange(&g_slots[s], 0);
        if (id)
            nvtxRangeEnd(id);
    }
    if (xsprof_finalize() != XSPROF_OK)
        return 1;

    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/rank-00000.h5", argv[1]);
    xsprof_rank_data d;
    memset(&d, 0, sizeof d);
    if (xsprof_rankfile_load(path, &d, err, sizeof err) != XSPROF_OK) {
        fprintf(stderr, "cannot read %s: %s\n", path, err);
        return 1;
    }
    size_t outer = 0, inner = 0, dom = 0, handoff = 0, bad = 0;
    uint64_t max_id = 0;
    unsigned char *seen = calloc(THREADS * ITERS + 1, 1);
    for (size_t i = 0; i < d.nregions; i++) {
        const xsprof_io_region *r = &d.regions[i];
        const char *n = xsprof_rank_data_string(&d, r->name);
        if (r->category != XSPROF_CAT_NVTX)
            bad++;
        if (!strcmp(n, "outer"))
            outer += r->depth == 256;
        else if (!strcmp(n, "inner"))
            inner += r->depth == 257;
        else if (!strcmp(n, "dom_range"))
            dom += r->depth == 258 && r->nargs == 1;
        else if (!strcmp(n, "handoff")) {
            for (uint32_t k = 0; r->args >= 0 && k < r->nargs; k++) {
                const xsprof_io_arg *a = &d.args[r->args + k];
                if (!strcmp(xsprof_rank_data_string(&d, a->key), "nvtx_range_id")) {
                    uint64_t id = (uint64_t)a->i;
                    if (id > max_id)
                        max_id = id;
                    if (id == 0 || id > THREADS * ITERS + 1 || seen[id - 1]++)
                        bad++;
                }
            }
            handoff++;
        }
    }
    free(seen);
    int fail = 0;
    size_t want = (size_t)THREADS * ITERS;
    if (outer != want || inner != want || dom != want || handoff != want || bad || d.anomalies || d.dropped) {
        fprintf(stderr,
                "FAIL: outer %zu inner %zu domain %zu handoff %zu (want %zu each), bad %zu, anomalies %llu, "
                "dropped %llu\n",
                outer, inner, dom, handoff, want, bad, (unsigned long long)d.anomalies,
                (unsigned long long)d.dropped);
        fail = 1;
    }
    xsprof_rank_data_free(&d);
    if (!fail)
        printf("nvtx threads: %zu ranges of each kind from %d threads, start/end ids unique\n", want, THREADS);
    return fail;
}

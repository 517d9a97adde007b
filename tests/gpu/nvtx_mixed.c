/* tests/gpu/nvtx_mixed.c — xsprof regions with args and NVTX ranges
 * interleaved on one thread: NVTX ranges must not take (or lose) the args of
 * the xsprof regions around and inside them; ranges left open at finalize
 * are counted, also those pushed by a thread that ended before it and by
 * one still running then. Reads its own rank file back.
 *
 * usage: nvtx_mixed RUN_DIR   (XSPROF_OUTPUT must equal RUN_DIR) */
#include <nvtx3/nvToolsExt.h>
#include <xsprof/xsprof.h>

#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>

#include "core/record.h"
#include "io/reader.h"

static int g_fail;

static void expect(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "FAIL: %s\n", what);
        g_fail = 1;
    }
}

static const xsprof_io_region *find(const xsprof_rank_data *d, const char *name)
{
    for (size_t i = 0; i < d->nregions; i++)
        if (!strcmp(xsprof_rank_data_string(d, d->regions[i].name), name))
            return &d->regions[i];
    return NULL;
}

static const xsprof_io_arg *arg_of(const xsprof_rank_data *d, const xsprof_io_region *r, const char *key)
{
    for (uint32_t k = 0; r && r->args >= 0 && k < r->nargs; k++) {
        const xsprof_io_arg *a = &d->args[r->args + k];
        if (!strcmp(xsprof_rank_data_string(d, a->key), key))
            return a;
    }
    return NULL;
}

static sem_t g_pushed, g_finalized;

/* Two pushes never popped, then the thread ends. */
static void *ended(void *arg)
{
    (void)arg;
    nvtxRangePushA("thread_ended_outer");
    nvtxRangePushA("thread_ended_inner");
    nvtxRangePushA("thread_ended_popped");
    nvtxRangePop();
    return NULL;
}

/* One push still open while the main thread finalizes. */
static void *running(void *arg)
{
    (void)arg;
    nvtxRangePushA("thread_running");
    sem_post(&g_pushed);
    sem_wait(&g_finalized);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    xsprof_region_begin("user_outer");
    xsprof_region_arg_int("iter", 7);
    nvtxRangePushA("nvtx_mid");
    xsprof_region_begin("user_inner");
    xsprof_region_arg_string("phase", "solve");
    nvtxDomainHandle_t dom = nvtxDomainCreateA("lib");
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "nvtx_lib";
    nvtxDomainRangePushEx(dom, &a);
    nvtxDomainRangePop(dom);
    xsprof_region_end();
    nvtxRangePop();
    xsprof_region_end();
    /* left open: counted at finalize, not lost silently */
    nvtxRangePushA("never_popped");
    nvtxRangeStartA("never_ended");
    pthread_t te, tr;
    sem_init(&g_pushed, 0, 0);
    sem_init(&g_finalized, 0, 0);
    if (pthread_create(&te, NULL, ended, NULL) || pthread_join(te, NULL) ||
        pthread_create(&tr, NULL, running, NULL))
        return 1;
    sem_wait(&g_pushed);
    if (xsprof_finalize() != XSPROF_OK)
        return 1;
    sem_post(&g_finalized);
    pthread_join(tr, NULL);

    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/rank-00000.h5", argv[1]);
    xsprof_rank_data d;
    memset(&d, 0, sizeof d);
    if (xsprof_rankfile_load(path, &d, err, sizeof err) != XSPROF_OK) {
        fprintf(stderr, "cannot read %s: %s\n", path, err);
        return 1;
    }
    const xsprof_io_region *outer = find(&d, "user_outer"), *inner = find(&d, "user_inner");
    const xsprof_io_region *mid = find(&d, "nvtx_mid"), *lib = find(&d, "nvtx_lib");
    expect(outer && inner && mid && lib, "all four regions recorded");
    if (!g_fail) {
        const xsprof_io_arg *iter = arg_of(&d, outer, "iter"), *phase = arg_of(&d, inner, "phase");
        expect(outer->nargs == 1 && iter && iter->i == 7, "user_outer keeps its arg iter=7");
        expect(inner->nargs == 1 && phase && !strcmp(xsprof_rank_data_string(&d, phase->s), "solve"),
               "user_inner keeps its arg phase=solve");
        expect(mid->nargs == 0, "nvtx_mid has no args");
        const xsprof_io_arg *dm = arg_of(&d, lib, "domain");
        expect(lib->nargs == 1 && dm && !strcmp(xsprof_rank_data_string(&d, dm->s), "lib"), "nvtx_lib has domain=lib");
        expect(outer->category == XSPROF_CAT_USER && inner->category == XSPROF_CAT_USER, "user categories");
        expect(mid->category == XSPROF_CAT_NVTX && lib->category == XSPROF_CAT_NVTX, "nvtx categories");
        expect(outer->depth == 0 && inner->depth == 1, "xsprof region depths unchanged");
        expect(mid->depth == 256 && lib->depth == 257, "NVTX depths are 256 + NVTX level");
        expect(outer->t_begin <= mid->t_begin && mid->t_begin <= inner->t_begin && lib->t_end <= inner->t_end &&
                   inner->t_end <= mid->t_end && mid->t_end <= outer->t_end,
               "time nesting user_outer > nvtx_mid > user_inner > nvtx_lib");
    }
    expect(d.anomalies == 0, "no anomalies");
    const char *open = NULL;
    for (size_t i = 0; i < d.nmeta; i++)
        if (!strcmp(xsprof_rank_data_string(&d, d.meta[i].key), "nvtx_open_at_finalize"))
            open = xsprof_rank_data_string(&d, d.meta[i].value);
    expect(open && !strcmp(open, "5"), "nvtx_open_at_finalize is 5 (pushed here, started here, 2 pushed by an "
                                       "ended thread, 1 by a running one)");
    expect(!find(&d, "never_popped") && !find(&d, "never_ended") && !find(&d, "thread_ended_outer") &&
               !find(&d, "thread_running"),
           "ranges without an end are not recorded");
    expect(find(&d, "thread_ended_popped") != NULL, "the ended thread's popped range is recorded");
    xsprof_rank_data_free(&d);
    if (!g_fail)
        printf("nvtx mixed: xsprof args intact around NVTX ranges\n");
    return g_fail;
}

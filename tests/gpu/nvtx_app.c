/* tests/gpu/nvtx_app.c — an application that knows nothing of xsprof: it is
 * compiled against the NVTX 3 headers only (no xsprof, no CUDA library) and
 * exercises every NVTX call xsprof injects. check_nvtx.py knows the
 * expected names, nesting and minimum durations. */
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Sleeping guarantees a lower bound on each range's duration. */
static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static nvtxRangeId_t g_cross;

static void *ender(void *arg)
{
    (void)arg;
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "nvtx-worker");
    sleep_ms(5);
    nvtxRangeEnd(g_cross); /* started on main: ranges cross threads */
    nvtxRangePushA("worker_range");
    sleep_ms(2);
    nvtxRangePop();
    return NULL;
}

int main(void)
{
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "nvtx-main");
    nvtxNameCategoryA(7, "io");

    /* push/pop, ASCII and Unicode, nested three deep */
    nvtxRangePushA("outer");
    sleep_ms(2);
    nvtxRangePushW(L"middle_\u00e9");
    sleep_ms(2);
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "inner_ex";
    a.category = 7;
    a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    a.payload.llValue = 42;
    nvtxRangePushEx(&a);
    sleep_ms(3);
    nvtxMarkA("mark_a");
    nvtxRangePop();
    nvtxRangePop();
    nvtxRangePop();

    /* start/end on one thread, and one ended by another thread */
    nvtxRangeId_t r = nvtxRangeStartA("startend");
    sleep_ms(4);
    nvtxRangeEnd(r);
    g_cross = nvtxRangeStartA("cross_thread");
    pthread_t th;
    if (pthread_create(&th, NULL, ender, NULL) != 0)
        return 1;
    pthread_join(th, NULL);

    /* domains: push/pop with a registered string, start/end, mark */
    nvtxDomainHandle_t dom = nvtxDomainCreateA("mydomain");
    nvtxStringHandle_t reg = nvtxDomainRegisterStringA(dom, "registered_name");
    nvtxDomainNameCategoryA(dom, 3, "dcat");
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = reg;
    a.category = 3;
    nvtxDomainRangePushEx(dom, &a);
    sleep_ms(2);
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "domain_inner";
    a.category = 0;
    a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
    a.payload.dValue = 2.5;
    nvtxDomainRangePushEx(dom, &a);
    sleep_ms(2);
    a.message.ascii = "domain_mark";
    a.payloadType = 0;
    nvtxDomainMarkEx(dom, &a);
    nvtxDomainRangePop(dom);
    nvtxDomainRangePop(dom);
    a.message.ascii = "domain_startend";
    nvtxRangeId_t dr = nvtxDomainRangeStartEx(dom, &a);
    sleep_ms(2);
    nvtxDomainRangeEnd(dom, dr);
    nvtxDomainDestroy(dom);

    nvtxMarkW(L"mark_w");
    printf("nvtx_app done\n");
    return 0;
}

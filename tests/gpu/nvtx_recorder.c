/* tests/gpu/nvtx_recorder.c — a stand-in for Nsight Systems: an NVTX
 * injection library (NVTX_INJECTION64_PATH) that writes every range, mark
 * and domain it receives to NVTX_RECORD_DIR/nvtx-RANK.txt, one line each:
 *
 *   OS_TID push DOMAIN NAME      OS_TID pop DOMAIN
 *   OS_TID start DOMAIN ID NAME  OS_TID end DOMAIN ID
 *   OS_TID mark DOMAIN NAME      OS_TID cudaProfilerStart / cudaProfilerStop
 *
 * DOMAIN is the name given to nvtxDomainCreateA ("-" for the default
 * domain). It also plays the CUDA runtime: preloaded, its
 * cudaProfilerStart/Stop are what xsprof finds with dlsym. */
#include <fcntl.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#define MAX_DOMAINS 64
#define MAX_STRINGS 4096

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_fd = -1;
static char *g_domains[MAX_DOMAINS] = {"-"}; /* handle = index; 0 the default domain */
static int g_ndomains = 1;
static char *g_strings[MAX_STRINGS]; /* registered strings: handle = index + 1 */
static int g_nstrings;
static uint64_t g_next_id = 1;

static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *fmt, ...)
{
    char line[1400];
    int n = snprintf(line, sizeof line, "%ld ", (long)syscall(SYS_gettid));
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    pthread_mutex_lock(&g_lock);
    if (g_fd < 0) {
        const char *dir = getenv("NVTX_RECORD_DIR");
        const char *rank = getenv("OMPI_COMM_WORLD_RANK");
        char path[1024];
        snprintf(path, sizeof path, "%s/nvtx-%s.txt", dir ? dir : ".", rank ? rank : "0");
        g_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
    if (g_fd >= 0 && write(g_fd, line, (size_t)n) != n)
        abort(); /* a test tool: a lost line must fail the test, not pass it */
    pthread_mutex_unlock(&g_lock);
}

static const char *domain_name(nvtxDomainHandle_t d)
{
    uintptr_t i = (uintptr_t)d;
    return i < (uintptr_t)g_ndomains ? g_domains[i] : "?";
}

static const char *message(const nvtxEventAttributes_t *a)
{
    if (!a)
        return "(null)";
    if (a->messageType == NVTX_MESSAGE_TYPE_ASCII)
        return a->message.ascii;
    if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) {
        uintptr_t i = (uintptr_t)a->message.registered;
        return i >= 1 && i <= (uintptr_t)g_nstrings ? g_strings[i - 1] : "?";
    }
    return "(other message type)";
}

static int NVTX_API push_a(const char *m) { emit("push - %s", m); return 0; }
static int NVTX_API push_ex(const nvtxEventAttributes_t *a) { emit("push - %s", message(a)); return 0; }
static int NVTX_API pop(void) { emit("pop -"); return 0; }
static void NVTX_API mark_a(const char *m) { emit("mark - %s", m); }

static nvtxDomainHandle_t NVTX_API domain_create_a(const char *name)
{
    pthread_mutex_lock(&g_lock);
    uintptr_t h = 0;
    for (int i = 1; i < g_ndomains; i++)
        if (!strcmp(g_domains[i], name))
            h = (uintptr_t)i;
    if (!h && g_ndomains < MAX_DOMAINS) {
        g_domains[g_ndomains] = strdup(name);
        h = (uintptr_t)g_ndomains++;
    }
    pthread_mutex_unlock(&g_lock);
    return (nvtxDomainHandle_t)h;
}

static nvtxStringHandle_t NVTX_API register_string_a(nvtxDomainHandle_t d, const char *s)
{
    (void)d;
    pthread_mutex_lock(&g_lock);
    uintptr_t h = 0;
    if (g_nstrings < MAX_STRINGS) {
        g_strings[g_nstrings++] = strdup(s);
        h = (uintptr_t)g_nstrings;
    }
    pthread_mutex_unlock(&g_lock);
    return (nvtxStringHandle_t)h;
}

static int NVTX_API domain_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    emit("push %s %s", domain_name(d), message(a));
    return 0;
}

static int NVTX_API domain_pop(nvtxDomainHandle_t d)
{
    emit("pop %s", domain_name(d));
    return 0;
}

static nvtxRangeId_t NVTX_API domain_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    pthread_mutex_lock(&g_lock);
    uint64_t id = g_next_id++;
    pthread_mutex_unlock(&g_lock);
    emit("start %s %llu %s", domain_name(d), (unsigned long long)id, message(a));
    return id;
}

static void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    emit("end %s %llu", domain_name(d), (unsigned long long)id);
}

static void NVTX_API domain_mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    emit("mark %s %s", domain_name(d), message(a));
}

static void fill(const NvtxExportTableCallbacks *etbl, NvtxCallbackModule module, const unsigned *ids,
                 const NvtxFunctionPointer *fns, size_t n)
{
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!etbl->GetModuleFunctionTable(module, &table, &size) || !table)
        return;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < size && table[ids[i]])
            *table[ids[i]] = fns[i];
}

__attribute__((visibility("default"))) int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
__attribute__((visibility("default"))) int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    const NvtxExportTableCallbacks *etbl = get ? get(NVTX_ETID_CALLBACKS) : NULL;
    if (!etbl || !etbl->GetModuleFunctionTable)
        return 0;
    const unsigned core_ids[] = {NVTX_CBID_CORE_RangePushA, NVTX_CBID_CORE_RangePushEx, NVTX_CBID_CORE_RangePop,
                                 NVTX_CBID_CORE_MarkA};
    const NvtxFunctionPointer core_fns[] = {(NvtxFunctionPointer)push_a, (NvtxFunctionPointer)push_ex,
                                            (NvtxFunctionPointer)pop, (NvtxFunctionPointer)mark_a};
    const unsigned core2_ids[] = {NVTX_CBID_CORE2_DomainCreateA, NVTX_CBID_CORE2_DomainRegisterStringA,
                                  NVTX_CBID_CORE2_DomainRangePushEx, NVTX_CBID_CORE2_DomainRangePop,
                                  NVTX_CBID_CORE2_DomainRangeStartEx, NVTX_CBID_CORE2_DomainRangeEnd,
                                  NVTX_CBID_CORE2_DomainMarkEx};
    const NvtxFunctionPointer core2_fns[] = {
        (NvtxFunctionPointer)domain_create_a, (NvtxFunctionPointer)register_string_a,
        (NvtxFunctionPointer)domain_push, (NvtxFunctionPointer)domain_pop, (NvtxFunctionPointer)domain_start,
        (NvtxFunctionPointer)domain_end, (NvtxFunctionPointer)domain_mark};
    fill(etbl, NVTX_CB_MODULE_CORE, core_ids, core_fns, sizeof core_ids / sizeof *core_ids);
    fill(etbl, NVTX_CB_MODULE_CORE2, core2_ids, core2_fns, sizeof core2_ids / sizeof *core2_ids);
    emit("init");
    return 1;
}

/* The CUDA runtime's profiler control (cudaError_t is an int enum, 0 success). */
__attribute__((visibility("default"))) int cudaProfilerStart(void);
__attribute__((visibility("default"))) int cudaProfilerStop(void);
int cudaProfilerStart(void) { emit("cudaProfilerStart"); return 0; }
int cudaProfilerStop(void) { emit("cudaProfilerStop"); return 0; }

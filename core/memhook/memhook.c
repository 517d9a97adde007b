/* core/memhook — optional interception of malloc/calloc/realloc/free
 * (XSPROF_MEMORY=1), shipped as its own preloadable library so that
 * libxsprof never interposes the allocator of programs that did not ask:
 *   LD_PRELOAD=libxsprof-memory.so:libxsprof-mpi.so XSPROF_MEMORY=1 ./app
 * Each call becomes an xsprof_mem_alloc/free record; the high-water mark
 * and the allocations never freed (leak candidates) are computed from them
 * by the io reader / xsmerge. Re-entry (xsprof itself allocating) passes
 * straight through. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xsprof/xsprof.h>

/* Weak: the library works (as a plain pass-through) even when no xsprof
 * library is loaded in the process. */
#pragma weak xsprof_mem_alloc
#pragma weak xsprof_mem_free

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void (*free_fn)(void *);

static malloc_fn real_malloc;
static calloc_fn real_calloc;
static realloc_fn real_realloc;
static free_fn real_free;
static int g_on = -1; /* -1 until XSPROF_MEMORY was read */
/* Initial-exec: a general-dynamic access goes through __tls_get_addr, which
 * may allocate (and so re-enter malloc) and which ASan intercepts; the first
 * malloc can come from ld.so before ASan's interceptors are set up. */
static __thread int tls_busy __attribute__((tls_model("initial-exec")));

/* dlsym may call calloc before real_calloc is known: serve it from here. */
static char g_boot[4096] __attribute__((aligned(16)));
static size_t g_boot_used;

static int boot_owns(const void *p) { return (const char *)p >= g_boot && (const char *)p < g_boot + sizeof g_boot; }

static void resolve(void) {
    if (real_malloc)
        return;
    tls_busy++;
    real_calloc = (calloc_fn)dlsym(RTLD_NEXT, "calloc");
    real_malloc = (malloc_fn)dlsym(RTLD_NEXT, "malloc");
    real_realloc = (realloc_fn)dlsym(RTLD_NEXT, "realloc");
    real_free = (free_fn)dlsym(RTLD_NEXT, "free");
    const char *e = getenv("XSPROF_MEMORY");
    g_on = e && !strcmp(e, "1");
    tls_busy--;
}

/* The first malloc can come from ld.so while another library (ASan)
 * initialises, before libc has set up environ: getenv sees nothing then.
 * Read XSPROF_MEMORY again once libc is initialised. */
__attribute__((constructor)) static void memhook_init(void) {
    resolve();
    const char *e = getenv("XSPROF_MEMORY");
    g_on = e && !strcmp(e, "1");
}

static inline int recording(void) { return g_on == 1 && !tls_busy; }

static void note_alloc(void *p, size_t n) {
    if (!p || !recording() || !xsprof_mem_alloc)
        return;
    tls_busy++;
    xsprof_mem_alloc(p, n, -1);
    tls_busy--;
}

static void note_free(void *p) {
    if (!p || !recording() || !xsprof_mem_free)
        return;
    tls_busy++;
    xsprof_mem_free(p, -1);
    tls_busy--;
}

__attribute__((visibility("default"))) void *malloc(size_t n) {
    resolve();
    if (!real_malloc)
        return NULL;
    void *p = real_malloc(n);
    note_alloc(p, n);
    return p;
}

__attribute__((visibility("default"))) void *calloc(size_t a, size_t b) {
    if (!real_calloc) {
        if (tls_busy) { /* inside dlsym during resolve() */
            size_t n = (a * b + 15) & ~(size_t)15;
            if (b && a > SIZE_MAX / b)
                return NULL;
            if (g_boot_used + n > sizeof g_boot)
                return NULL;
            void *p = g_boot + g_boot_used;
            g_boot_used += n;
            return p; /* static storage is already zero */
        }
        resolve();
        if (!real_calloc)
            return NULL;
    }
    void *p = real_calloc(a, b);
    note_alloc(p, a * b);
    return p;
}

__attribute__((visibility("default"))) void *realloc(void *old, size_t n) {
    resolve();
    if (boot_owns(old)) {
        void *p = malloc(n);
        if (p)
            memcpy(p, old, n < sizeof g_boot ? n : sizeof g_boot);
        return p;
    }
    if (!real_realloc)
        return NULL;
    void *p = real_realloc(old, n);
    if (p) {
        note_free(old);
        note_alloc(p, n);
    }
    return p;
}

__attribute__((visibility("default"))) void free(void *p) {
    if (!p || boot_owns(p))
        return;
    resolve();
    note_free(p);
    if (real_free)
        real_free(p);
}

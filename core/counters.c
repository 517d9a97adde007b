/* core/counters.c — per-region hardware/software counters through
 * perf_event_open (XSPROF_COUNTERS=task-clock,page-faults,cycles,...).
 * Each thread opens its own events on first use; a region's delta is stored
 * as an integer argument named after the counter. Unsupported events (e.g.
 * hardware counters in a VM) are reported once and skipped. */
#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "buffer.h"
#include "internal.h"

typedef struct counter_def {
    const char *name;
    uint32_t type;
    uint64_t config;
} counter_def;

static const counter_def g_known[] = {
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
};
#define NKNOWN ((int)(sizeof g_known / sizeof g_known[0]))

static int g_sel[8];           /* indices into g_known */
static int g_nsel;
static uint32_t g_key[8];      /* interned counter names */
static _Atomic int g_active;
static _Atomic uint32_t g_unsupported; /* bit per selection: reported once */

xsprof_status xsprof_counters_parse(const char *spec) {
    g_nsel = 0;
    if (!spec)
        return XSPROF_OK;
    xsprof_status st = XSPROF_OK;
    const char *p = spec;
    while (*p) {
        size_t n = strcspn(p, ",");
        int found = -1;
        for (int i = 0; i < NKNOWN; i++)
            if (strlen(g_known[i].name) == n && !strncmp(p, g_known[i].name, n))
                found = i;
        if (found < 0 || g_nsel == 8) {
            xsprof_log(XSPROF_LOG_WARN, "XSPROF_COUNTERS: unknown or too many counters at '%.*s' (known: task-clock, "
                       "page-faults, context-switches, cpu-migrations, minor-faults, major-faults, cycles, "
                       "instructions, cache-misses, cache-references, branch-misses, branches)", (int)n, p);
            st = XSPROF_ERR_INVALID;
        } else
            g_sel[g_nsel++] = found;
        p += n;
        if (*p == ',')
            p++;
    }
    for (int i = 0; i < g_nsel; i++)
        xsprof_string_intern(g_known[g_sel[i]].name, &g_key[i]);
    atomic_store(&g_active, g_nsel > 0);
    return st;
}

int xsprof_counters_active(void) { return atomic_load_explicit(&g_active, memory_order_relaxed); }

static void thread_open(xsprof_thread *t) {
    t->perf_open = 1;
    for (int i = 0; i < g_nsel; i++) {
        const counter_def *d = &g_known[g_sel[i]];
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.type = d->type;
        a.config = d->config;
        a.exclude_kernel = d->type == PERF_TYPE_HARDWARE;
        a.exclude_hv = 1;
        int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        t->perf_fd[i] = fd;
        if (fd < 0) {
            uint32_t bit = 1u << i;
            if (!(atomic_fetch_or(&g_unsupported, bit) & bit))
                xsprof_log(XSPROF_LOG_WARN, "counter %s is not supported here (%s); skipped", d->name,
                           strerror(errno));
        }
    }
}

void xsprof_counters_read(xsprof_thread *t, int64_t *out) {
    int saved = errno;
    if (!t->perf_open)
        thread_open(t);
    for (int i = 0; i < g_nsel; i++) {
        uint64_t v = 0;
        out[i] = (t->perf_fd[i] >= 0 && read(t->perf_fd[i], &v, sizeof v) == sizeof v) ? (int64_t)v : -1;
    }
    errno = saved;
}

void xsprof_counters_emit(xsprof_thread *t, const int64_t *begin, uint16_t depth) {
    int64_t now[8];
    xsprof_counters_read(t, now);
    xsprof_frame *f = &t->stack[depth];
    for (int i = 0; i < g_nsel; i++) {
        if (begin[i] < 0 || now[i] < 0)
            continue;
        xsprof_rec_arg *a = xsprof_thread_reserve(t, xsprof_rec_size(sizeof *a));
        if (!a)
            return;
        memset(a, 0, sizeof *a);
        a->h.type = XSPROF_REC_ARG;
        a->h.size = xsprof_rec_size(sizeof *a);
        a->key = g_key[i];
        a->kind = XSPROF_ARG_INT;
        a->depth = depth;
        a->v.i = now[i] - begin[i];
        xsprof_thread_commit(t, a);
        f->nargs++;
    }
}

void xsprof_counters_thread_close(xsprof_thread *t) {
    if (t->perf_open != 1)
        return;
    for (int i = 0; i < g_nsel; i++)
        if (t->perf_fd[i] >= 0)
            close(t->perf_fd[i]);
    t->perf_open = -1;
}

/* core/counters.c — per-region hardware/software counters through
 * perf_event_open (XSPROF_COUNTERS=task-clock,page-faults,cycles,...).
 * Each thread opens its own events on first use; a region's delta is stored
 * as an integer argument named after the counter. Unsupported events (e.g.
 * hardware counters in a VM) are reported once and skipped.
 *
 * The events form two groups, software and hardware, each read with one
 * read() (PERF_FORMAT_GROUP), so a region boundary costs one or two system
 * calls however many counters are asked for (one per counter before). Two
 * groups, not one: the kernel schedules a group all or nothing, and software
 * events must keep counting when the hardware group cannot get the PMU. An
 * event the kernel will not add to its group is read alone. */
#include <errno.h>
#include <stdio.h>
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
_Atomic int xsprof_counters_on;
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
    char list[256] = "";
    for (int i = 0; i < g_nsel; i++) {
        xsprof_string_intern(g_known[g_sel[i]].name, &g_key[i]);
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", i ? "," : "", g_known[g_sel[i]].name);
    }
    /* which integer region arguments are counter deltas: the merge sums
     * them per region (merge/analyze/README "Counters") */
    if (g_nsel)
        xsprof_meta_set("counters", list);
    atomic_store(&xsprof_counters_on, g_nsel > 0);
    return st;
}

static int event_open(const counter_def *d, int leader) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = d->type;
    a.config = d->config;
    a.exclude_kernel = d->type == PERF_TYPE_HARDWARE;
    a.exclude_hv = 1;
    a.read_format = PERF_FORMAT_GROUP; /* a member's own read returns its group too */
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, leader, PERF_FLAG_FD_CLOEXEC);
}

static void thread_open(xsprof_thread *t) {
    t->perf_open = 1;
    int members[2] = {0, 0};
    t->perf_leader[0] = t->perf_leader[1] = -1;
    for (int i = 0; i < g_nsel; i++) {
        const counter_def *d = &g_known[g_sel[i]];
        int g = d->type == PERF_TYPE_HARDWARE;
        int fd = -1;
        t->perf_slot[i] = -1;
        if (t->perf_leader[g] >= 0 && (fd = event_open(d, t->perf_leader[g])) >= 0)
            t->perf_slot[i] = (int8_t)members[g]++;
        else if ((fd = event_open(d, -1)) >= 0 && t->perf_leader[g] < 0) {
            t->perf_leader[g] = fd;
            t->perf_slot[i] = (int8_t)members[g]++;
        }
        t->perf_fd[i] = fd;
        if (fd < 0) {
            uint32_t bit = 1u << i;
            if (!(atomic_fetch_or(&g_unsupported, bit) & bit))
                xsprof_log(XSPROF_LOG_WARN, "counter %s is not supported here (%s); skipped", d->name,
                           strerror(errno));
        }
    }
}

/* Reads fd's group (PERF_FORMAT_GROUP: the number of events, then their
 * values in the order they joined) into v; the count read, 0 on failure. */
static uint64_t group_read(int fd, uint64_t v[9]) {
    ssize_t n = fd >= 0 ? read(fd, v, 9 * sizeof *v) : -1;
    return n >= (ssize_t)sizeof *v && v[0] <= 8 && (size_t)n >= (v[0] + 1) * sizeof *v ? v[0] : 0;
}

void xsprof_counters_read(xsprof_thread *t, int64_t *out) {
    int saved = errno;
    if (!t->perf_open)
        thread_open(t);
    uint64_t grp[2][9], ngrp[2];
    for (int g = 0; g < 2; g++)
        ngrp[g] = group_read(t->perf_leader[g], grp[g]);
    for (int i = 0; i < g_nsel; i++) {
        int g = g_known[g_sel[i]].type == PERF_TYPE_HARDWARE, s = t->perf_slot[i];
        uint64_t one[9];
        if (t->perf_fd[i] < 0)
            out[i] = -1;
        else if (s >= 0 && (uint64_t)s < ngrp[g])
            out[i] = (int64_t)grp[g][1 + s];
        else /* read alone: its own group of one */
            out[i] = group_read(t->perf_fd[i], one) == 1 ? (int64_t)one[1] : -1;
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

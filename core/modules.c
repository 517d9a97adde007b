/* core/modules.c — the objects loaded in the process (collector.h): what
 * makes a recorded address resolvable after the process is gone.
 *
 * dl_iterate_phdr lists the loaded objects; its adds/subs counters say
 * cheaply whether anything changed since the last look. A look happens
 * when recording starts, before each new call stack is defined (so the
 * object holding any recorded address is always listed, even one
 * dlopen'ed and closed later) and at finalize. An object is written when
 * first seen (event LOADED) and once more when a look no longer finds it
 * (GONE): the times are those of the looks, so a load or unload happened
 * at or before them. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr */
#endif
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "clock.h"
#include "internal.h"

typedef struct mod {
    uint64_t bias, lo, hi;
    uint32_t id;
    uint8_t seen, gone, reported;
    char build_id[41];
    char path[];
} mod;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static mod **g_mods;
static size_t g_n, g_cap;
static unsigned long long g_adds = ~0ull, g_subs = ~0ull;
static int g_nomem;

typedef struct counts {
    unsigned long long adds, subs;
} counts;

static int counts_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    counts *c = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        c->adds = info->dlpi_adds;
        c->subs = info->dlpi_subs;
    }
    return 1; /* the counters are the same in every entry */
}

/* GNU build-id from the object's notes, which PT_LOAD maps. */
static void build_id_of(const struct dl_phdr_info *info, char *out) {
    out[0] = 0;
    for (int k = 0; k < info->dlpi_phnum; k++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
        if (ph->p_type != PT_NOTE)
            continue;
        const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const unsigned char *name = p + sizeof *nh, *desc = name + ((nh->n_namesz + 3u) & ~3u);
            if (desc + nh->n_descsz > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) && nh->n_descsz <= 20) {
                for (unsigned i = 0; i < nh->n_descsz; i++)
                    snprintf(out + 2 * i, 3, "%02x", desc[i]);
                return;
            }
            p = desc + ((nh->n_descsz + 3u) & ~3u);
        }
    }
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    (void)arg;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int k = 0; k < info->dlpi_phnum; k++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        lo = a < lo ? a : lo;
        hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
    }
    if (lo >= hi)
        return 0;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    char exe[PATH_MAX];
    if (!name[0]) { /* the program itself */
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
        name = exe;
    }
    for (size_t i = 0; i < g_n; i++) {
        mod *m = g_mods[i];
        if (!m->gone && m->bias == info->dlpi_addr && m->lo == lo && m->hi == hi && !strcmp(m->path, name)) {
            m->seen = 1;
            return 0;
        }
    }
    size_t len = strlen(name);
    if (g_n == g_cap) {
        size_t cap = g_cap ? 2 * g_cap : 64;
        mod **grown = realloc(g_mods, cap * sizeof *grown);
        if (!grown) {
            g_nomem = 1;
            return 0;
        }
        g_mods = grown;
        g_cap = cap;
    }
    mod *m = calloc(1, sizeof *m + len + 1);
    if (!m) {
        g_nomem = 1;
        return 0;
    }
    m->bias = info->dlpi_addr;
    m->lo = lo;
    m->hi = hi;
    m->id = (uint32_t)g_n + 1;
    m->seen = 1;
    memcpy(m->path, name, len + 1);
    build_id_of(info, m->build_id);
    g_mods[g_n++] = m;
    return 0;
}

static void report(mod *m, uint32_t event, int64_t t) {
    xsprof_rec_module r = {.h = {XSPROF_REC_MODULE, sizeof r}, .id = m->id, .event = event, .bias = m->bias,
                           .lo = m->lo, .hi = m->hi, .t = t};
    if (xsprof_string_intern(m->path, &r.path) || xsprof_string_intern(m->build_id, &r.build_id) ||
        xsprof_buf_append(&r, sizeof r, 1))
        return; /* a definition is only lost when memory is: said once below */
    m->reported = 1;
}

void xsprof_modules_check(void) {
    counts c = {0, 0};
    dl_iterate_phdr(counts_cb, &c);
    pthread_mutex_lock(&g_lock);
    if (c.adds == g_adds && c.subs == g_subs) {
        pthread_mutex_unlock(&g_lock);
        return;
    }
    int guard = xsprof_guard_enter(); /* our allocations are not the program's */
    g_adds = c.adds;
    g_subs = c.subs;
    for (size_t i = 0; i < g_n; i++)
        g_mods[i]->seen = 0;
    /* dl_iterate_phdr holds the loader's lock: collect first, write after */
    dl_iterate_phdr(scan_cb, NULL);
    int64_t t = xsprof_clock_now();
    for (size_t i = 0; i < g_n; i++) {
        mod *m = g_mods[i];
        if (!m->reported)
            report(m, XSPROF_MODULE_LOADED, t);
        if (!m->seen && !m->gone && m->reported) {
            m->gone = 1;
            report(m, XSPROF_MODULE_GONE, t);
        }
    }
    int say = g_nomem == 1;
    if (say)
        g_nomem = 2;
    if (guard)
        xsprof_guard_leave();
    pthread_mutex_unlock(&g_lock);
    if (say) /* unlocked: the message may reach the application's handler */
        xsprof_log(XSPROF_LOG_WARN, "out of memory listing the loaded objects: some addresses will not resolve");
}

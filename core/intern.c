/* core/intern.c — name interning. Lookups are lock-free (open addressing
 * over atomically published entries); inserts take one mutex. Each name is
 * also appended to the journal's string area so a dead rank's names survive.
 * The filter decision is taken once per name, here. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define SLOTS (1u << 17) /* power of two, load factor <= 1/2 */
#define MAX_NAMES XSPROF_NAMES_MAX
_Static_assert(MAX_NAMES <= SLOTS / 2, "load factor <= 1/2");

static _Atomic(xsprof_name_entry *) g_slots[SLOTS];
_Atomic(xsprof_name_entry *) xsprof_names_by_id[MAX_NAMES];
static _Atomic uint32_t g_count;
static pthread_mutex_t g_intern_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_in_journal; /* under g_intern_lock: names go to the journal as they are interned */

static inline uint64_t name_hash(const char *s, size_t *len) {
    uint64_t h = 1469598103934665603ull;
    const char *p = s;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    *len = (size_t)(p - s);
    return h | 1; /* never 0 */
}

uint32_t xsprof_name_count(void) { return atomic_load_explicit(&g_count, memory_order_acquire); }

xsprof_status xsprof_name_intern(const char *name, xsprof_name_id *id) {
    xsprof_status st = xsprof_string_intern(name, id);
    if (!st && xsprof_name_entry_get(*id)->filtered)
        *id |= XSPROF_NAME_FILTERED_;
    return st;
}

xsprof_status xsprof_string_intern(const char *name, uint32_t *id) {
    if (!name || !id)
        return XSPROF_ERR_INVALID;
    size_t len;
    uint64_t h = name_hash(name, &len);
    if (len > XSPROF_NAME_MAX) {
        xsprof_anomaly("name too long");
        return XSPROF_ERR_TOO_LONG;
    }
    uint32_t i = (uint32_t)h & (SLOTS - 1);
    for (;;) {
        xsprof_name_entry *e = atomic_load_explicit(&g_slots[i], memory_order_acquire);
        if (!e)
            break;
        if (e->hash == h && e->len == len && !memcmp(e->str, name, len)) {
            *id = e->id;
            return XSPROF_OK;
        }
        i = (i + 1) & (SLOTS - 1);
    }
    if (xsprof_log_in_handler())
        return XSPROF_ERR_STATE; /* this thread may hold g_intern_lock (internal.h) */
    pthread_mutex_lock(&g_intern_lock);
    /* Re-probe under the lock: another thread may have inserted it. */
    i = (uint32_t)h & (SLOTS - 1);
    xsprof_name_entry *e;
    while ((e = atomic_load_explicit(&g_slots[i], memory_order_relaxed))) {
        if (e->hash == h && e->len == len && !memcmp(e->str, name, len)) {
            pthread_mutex_unlock(&g_intern_lock);
            *id = e->id;
            return XSPROF_OK;
        }
        i = (i + 1) & (SLOTS - 1);
    }
    uint32_t n = atomic_load_explicit(&g_count, memory_order_relaxed);
    if (n >= MAX_NAMES || !(e = malloc(sizeof *e + len + 1))) {
        pthread_mutex_unlock(&g_intern_lock);
        xsprof_anomaly("name table full");
        return XSPROF_ERR_NOMEM;
    }
    e->hash = h;
    e->id = n;
    e->len = (uint32_t)len;
    atomic_init(&e->threshold_ns, 0);
    atomic_init(&e->warn_last, 0);
    atomic_init(&e->left_max_ns, 0);
    atomic_init(&e->left_out, 0);
    memcpy(e->str, name, len + 1);
    e->filtered = strncmp(e->str, XSPROF_FN_NAME_PREFIX, sizeof XSPROF_FN_NAME_PREFIX - 1)
                      ? (uint8_t)xsprof_filter_excludes(e->str)
                      : 0; /* instrument.c's, decided there */
    atomic_store_explicit(&xsprof_names_by_id[n], e, memory_order_release);
    atomic_store_explicit(&g_slots[i], e, memory_order_release);
    atomic_store_explicit(&g_count, n + 1, memory_order_release);
    if (g_in_journal)
        xsprof_journal_string_add(n, e->str, e->len);
    pthread_mutex_unlock(&g_intern_lock);
    *id = n;
    return XSPROF_OK;
}

/* Called once when the journal is created: names interned before it, then
 * every new name as it comes, all under one lock, so each id is written
 * once and in order. */
xsprof_status xsprof_names_flush_to_journal(void) {
    pthread_mutex_lock(&g_intern_lock);
    xsprof_status st = XSPROF_OK;
    uint32_t n = atomic_load_explicit(&g_count, memory_order_relaxed);
    for (uint32_t i = 0; i < n && st == XSPROF_OK; i++) {
        const xsprof_name_entry *e = atomic_load_explicit(&xsprof_names_by_id[i], memory_order_relaxed);
        st = xsprof_journal_string_add(i, e->str, e->len);
    }
    g_in_journal = 1;
    pthread_mutex_unlock(&g_intern_lock);
    return st;
}

/* fork(): the child must find the lock free (another thread may hold it at
 * the fork) and must never append names to the parent's journal, which it
 * shares through the mapping (its ids would collide with the parent's). */
void xsprof_names_fork_prepare(void) { pthread_mutex_lock(&g_intern_lock); }
void xsprof_names_fork_parent(void) { pthread_mutex_unlock(&g_intern_lock); }
void xsprof_names_fork_child(void) {
    g_in_journal = 0;
    pthread_mutex_unlock(&g_intern_lock);
}

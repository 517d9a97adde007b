/* core/callstack.c — call stacks interned per process (collector.h).
 *
 * A lock-free open-addressing table maps an address list to a dense id.
 * A stack seen for the first time is written as a definition (after the
 * objects loaded since the last look, xsprof_modules_check) before it is
 * published in the table, so no record can name an id whose definition is
 * not already in the journal. Lookups take no lock: a hash, one or two
 * loads and a compare, which is what a call site at depth 1 costs. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define CS_BITS 16
#define CS_SLOTS (1u << CS_BITS)
#define CS_MAX (CS_SLOTS / 4u * 3u) /* ids beyond this would make probing slow */

typedef struct cs_entry {
    uint64_t hash;
    uint32_t id;
    uint32_t n;
    uint64_t pcs[];
} cs_entry;

/* Zero pages until a stack lands in them: costs nothing in a process that
 * records no call stack. */
static _Atomic(cs_entry *) g_slots[CS_SLOTS];
static _Atomic uint32_t g_next_id = 1;
static _Atomic int g_full_warned;

static inline uint64_t cs_hash(const uint64_t *pcs, uint32_t n) {
    uint64_t h = pcs[0] * 0x9e3779b97f4a7c15ull;
    for (uint32_t i = 1; i < n; i++)
        h = (h ^ (h >> 29) ^ pcs[i]) * 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

static inline int cs_same(const cs_entry *e, uint64_t h, const uint64_t *pcs, uint32_t n) {
    /* the first frame inline: at depth 1 (every MPI call) no memcmp call */
    return e->hash == h && e->n == n && e->pcs[0] == pcs[0] && (n == 1 || !memcmp(e->pcs, pcs, n * sizeof *pcs));
}

/* A new stack: its definition goes into the journal first, then it is
 * published from slot i on. Returns its id, or the id another thread
 * published for the same stack meanwhile, or 0. */
static uint32_t cs_insert(uint32_t i, uint64_t h, const uint64_t *pcs, uint32_t n) {
    uint32_t id = atomic_fetch_add_explicit(&g_next_id, 1, memory_order_relaxed);
    if (id > CS_MAX) {
        if (!atomic_exchange(&g_full_warned, 1))
            xsprof_log(XSPROF_LOG_WARN, "more than %u distinct call stacks: further ones are recorded as unknown",
                       CS_MAX);
        return 0;
    }
    int guard = xsprof_guard_enter(); /* our malloc is not the program's (XSPROF_MEMORY) */
    uint32_t got = 0;
    cs_entry *e = malloc(sizeof *e + n * sizeof *pcs);
    char buf[sizeof(xsprof_rec_stack) + XSPROF_STACK_MAX * sizeof(uint64_t)] __attribute__((aligned(8)));
    xsprof_rec_stack *r = (xsprof_rec_stack *)buf;
    if (!e)
        goto out;
    e->hash = h;
    e->id = id;
    e->n = n;
    memcpy(e->pcs, pcs, n * sizeof *pcs);
    xsprof_modules_check();
    memset(r, 0, sizeof *r);
    r->h.type = XSPROF_REC_STACK;
    r->id = id;
    r->n = n;
    memcpy(r->frames, pcs, n * sizeof *pcs);
    if (xsprof_buf_append(r, (uint32_t)(sizeof *r + n * sizeof *pcs), 1) != XSPROF_OK) {
        free(e);
        goto out;
    }
    for (uint32_t probes = 0; probes < CS_SLOTS; probes++, i = (i + 1) & (CS_SLOTS - 1)) {
        cs_entry *cur = NULL;
        if (atomic_compare_exchange_strong_explicit(&g_slots[i], &cur, e, memory_order_release,
                                                    memory_order_acquire)) {
            got = id;
            break;
        }
        if (cs_same(cur, h, pcs, n)) { /* another thread won: its id; ours stays an unused definition */
            free(e);
            got = cur->id;
            break;
        }
    }
out:
    if (guard)
        xsprof_guard_leave();
    return got;
}

uint32_t xsprof_callstack_intern(const uint64_t *pcs, uint32_t n) {
    if (!n || n > XSPROF_STACK_MAX || !pcs[0])
        return 0;
    uint64_t h = cs_hash(pcs, n);
    uint32_t i = (uint32_t)(h >> (64 - CS_BITS));
    for (uint32_t probes = 0; probes < CS_SLOTS; probes++, i = (i + 1) & (CS_SLOTS - 1)) {
        cs_entry *e = atomic_load_explicit(&g_slots[i], memory_order_acquire);
        if (!e)
            return cs_insert(i, h, pcs, n);
        if (cs_same(e, h, pcs, n))
            return e->id;
    }
    return 0;
}

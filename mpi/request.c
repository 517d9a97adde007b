/* mpi/request.c — requests tracked from post to completion, and the
 * per-(comm, peer, tag) message sequence numbers. Both are shared by all
 * threads (MPI_THREAD_MULTIPLE): requests live in lock-striped hash
 * tables, sequence counters in a lock-free table. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "mpi/xsprof_mpi.h"

static _Atomic uint64_t g_next_id = 1;

uint64_t xsprof_req_new_id(void) { return atomic_fetch_add_explicit(&g_next_id, 1, memory_order_relaxed); }

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* ---- request table ------------------------------------------------------
 * A handle value is reused as soon as MPI frees the request, possibly by
 * another thread before the completing thread has looked its entry up. So a
 * Wait/Test call claims the entries of its requests before calling MPI (a
 * request is waited on by one thread at a time, and the entry of a completed
 * but not yet processed request is already claimed by its own call), and
 * after the call takes exactly the entries it claimed. */

#define XSPROF_REQ_STRIPES 64

typedef struct req_slot {
    uintptr_t key; /* 0 = empty */
    xsprof_req_info info;
} req_slot;

typedef struct req_stripe {
    pthread_mutex_t lock;
    req_slot *slots;
    size_t cap, n;
} req_stripe;

static req_stripe g_req[XSPROF_REQ_STRIPES];
static pthread_once_t g_req_once = PTHREAD_ONCE_INIT;

#define XSPROF_KEY_LOCKS 64
static pthread_mutex_t g_key_lock[XSPROF_KEY_LOCKS]; /* see xsprof_seq_lock */

static void req_init(void) {
    for (int i = 0; i < XSPROF_REQ_STRIPES; i++)
        pthread_mutex_init(&g_req[i].lock, NULL);
    for (int i = 0; i < XSPROF_KEY_LOCKS; i++)
        pthread_mutex_init(&g_key_lock[i], NULL);
}

static inline req_stripe *stripe_of(uintptr_t key, uint64_t *h) {
    *h = mix64(key);
    pthread_once(&g_req_once, req_init);
    return &g_req[*h % XSPROF_REQ_STRIPES];
}

static int stripe_grow(req_stripe *s) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    req_slot *ns = calloc(cap, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slots[i].key)
            continue;
        size_t j = (mix64(s->slots[i].key) / XSPROF_REQ_STRIPES) & (cap - 1);
        while (ns[j].key)
            j = (j + 1) & (cap - 1);
        ns[j] = s->slots[i];
    }
    free(s->slots);
    s->slots = ns;
    s->cap = cap;
    return 0;
}

void xsprof_req_insert(MPI_Request r, const xsprof_req_info *info) {
    uintptr_t key = (uintptr_t)r;
    uint64_t h;
    req_stripe *s = stripe_of(key, &h);
    pthread_mutex_lock(&s->lock);
    if ((s->n + 1) * 2 > s->cap && stripe_grow(s)) {
        pthread_mutex_unlock(&s->lock);
        xsprof_anomaly("MPI request table: out of memory, request not tracked");
        return;
    }
    size_t j = (h / XSPROF_REQ_STRIPES) & (s->cap - 1);
    while (s->slots[j].key)
        j = (j + 1) & (s->cap - 1);
    s->slots[j].key = key;
    s->slots[j].info = *info;
    s->n++;
    pthread_mutex_unlock(&s->lock);
}

/* The oldest entry of `key` claimed by `claim` (0 = unclaimed). */
static req_slot *find(req_stripe *s, uintptr_t key, uint64_t h, uint64_t claim) {
    if (!s->cap)
        return NULL;
    for (size_t j = (h / XSPROF_REQ_STRIPES) & (s->cap - 1);; j = (j + 1) & (s->cap - 1)) {
        if (!s->slots[j].key)
            return NULL;
        if (s->slots[j].key == key && s->slots[j].info.claim == claim)
            return &s->slots[j];
    }
}

static void erase(req_stripe *s, req_slot *slot) {
    size_t mask = s->cap - 1, i = (size_t)(slot - s->slots), j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!s->slots[j].key)
            break;
        size_t home = (mix64(s->slots[j].key) / XSPROF_REQ_STRIPES) & mask;
        /* move j back to i when its home is not in (i, j] cyclically */
        if ((i <= j) ? (home <= i || home > j) : (home <= i && home > j)) {
            s->slots[i] = s->slots[j];
            i = j;
        }
    }
    s->slots[i].key = 0;
    s->n--;
}

int xsprof_req_claim(MPI_Request r, uint64_t from, uint64_t to) {
    if (r == MPI_REQUEST_NULL)
        return 0;
    uintptr_t key = (uintptr_t)r;
    uint64_t h;
    req_stripe *s = stripe_of(key, &h);
    pthread_mutex_lock(&s->lock);
    req_slot *slot = find(s, key, h, from);
    int rc = slot != NULL;
    if (slot && to && slot->info.persistent && !slot->info.active)
        rc = -1;
    else if (slot)
        slot->info.claim = to;
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int xsprof_req_take(MPI_Request r, xsprof_req_info *out, int freeing, uint64_t claim) {
    if (r == MPI_REQUEST_NULL)
        return 0;
    uintptr_t key = (uintptr_t)r;
    uint64_t h;
    req_stripe *s = stripe_of(key, &h);
    pthread_mutex_lock(&s->lock);
    req_slot *slot = find(s, key, h, claim);
    int lk = 0;
    if (slot && claim && slot->info.is_recv && slot->info.seq && slot->info.comm &&
        xsprof_mpi_g.thread_level == MPI_THREAD_MULTIPLE) {
        /* A receive that completed just after a cancel took effect on its
         * key may still be renumbered: read its number once the cancel's
         * release is done (key lock before table lock). The entry stays
         * claimed meanwhile, so it is still ours. */
        xsprof_req_info k = slot->info;
        pthread_mutex_unlock(&s->lock);
        lk = xsprof_seq_lock(k.comm->gid, k.peer, k.tag);
        pthread_mutex_lock(&s->lock);
        slot = find(s, key, h, claim);
    }
    if (slot) {
        *out = slot->info;
        if (slot->info.persistent && !freeing) {
            slot->info.active = 0;
            slot->info.claim = 0;
        } else
            erase(s, slot);
    }
    pthread_mutex_unlock(&s->lock);
    xsprof_seq_unlock(lk);
    return slot != NULL;
}

int xsprof_req_update(MPI_Request r, void (*fn)(xsprof_req_info *, void *), void *arg, xsprof_req_info *out) {
    if (r == MPI_REQUEST_NULL)
        return 0;
    uintptr_t key = (uintptr_t)r;
    uint64_t h;
    req_stripe *s = stripe_of(key, &h);
    pthread_mutex_lock(&s->lock);
    req_slot *slot = find(s, key, h, 0);
    if (slot) {
        if (fn)
            fn(&slot->info, arg);
        if (out)
            *out = slot->info;
    }
    pthread_mutex_unlock(&s->lock);
    return slot != NULL;
}

/* ---- sequence numbers ----------------------------------------------------
 * Lock-free open addressing: a slot is claimed once (state 0 -> 1), its key
 * written, then published (state 2); counters are atomic increments. */

#define XSPROF_SEQ_SLOTS (1u << 16)

typedef struct seq_slot {
    _Atomic int state;
    uint64_t k1, k2;
    _Atomic uint64_t n;
    _Atomic uint64_t floating; /* the highest number a floating receive took (xsprof_seq_release) */
} seq_slot;

static seq_slot g_seq[XSPROF_SEQ_SLOTS];

/* Only MPI_THREAD_MULTIPLE lets two threads call MPI at once; below it the
 * application's own synchronisation orders the calls, and a plain increment
 * saves the locked instruction (about a third of the wrappers' own cost). */
static inline uint64_t seq_bump(_Atomic uint64_t *n) {
    if (xsprof_mpi_g.thread_level == MPI_THREAD_MULTIPLE)
        return atomic_fetch_add_explicit(n, 1, memory_order_relaxed) + 1;
    uint64_t v = atomic_load_explicit(n, memory_order_relaxed) + 1;
    atomic_store_explicit(n, v, memory_order_relaxed);
    return v;
}

/* The counter of a key, made on first use; NULL when the table is full. */
static seq_slot *seq_find(uint32_t gid, int32_t peer, int32_t tag, int dir) {
    uint64_t k1 = ((uint64_t)gid << 32) | (uint32_t)peer;
    uint64_t k2 = ((uint64_t)(uint32_t)tag << 1) | (uint64_t)(dir & 1);
    uint64_t h = mix64(k1 ^ mix64(k2));
    for (uint32_t i = 0; i < XSPROF_SEQ_SLOTS; i++) {
        seq_slot *s = &g_seq[(h + i) & (XSPROF_SEQ_SLOTS - 1)];
        int st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (st == 0) {
            int expect = 0;
            if (atomic_compare_exchange_strong_explicit(&s->state, &expect, 1, memory_order_acq_rel,
                                                        memory_order_acquire)) {
                s->k1 = k1;
                s->k2 = k2;
                atomic_store_explicit(&s->state, 2, memory_order_release);
                return s;
            }
            st = expect;
        }
        while (st == 1)
            st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (s->k1 == k1 && s->k2 == k2)
            return s;
    }
    xsprof_anomaly("MPI message sequence table full");
    return NULL;
}

uint64_t xsprof_seq_next(uint32_t gid, int32_t peer, int32_t tag, int dir) {
    seq_slot *s = seq_find(gid, peer, tag, dir);
    return s ? seq_bump(&s->n) : 0;
}

uint64_t xsprof_seq_next_floating(uint32_t gid, int32_t peer, int32_t tag) {
    seq_slot *s = seq_find(gid, peer, tag, 1);
    if (!s)
        return 0;
    uint64_t n = seq_bump(&s->n);
    /* under the key's lock with MPI_THREAD_MULTIPLE: numbers come in order */
    if (n > atomic_load_explicit(&s->floating, memory_order_relaxed))
        atomic_store_explicit(&s->floating, n, memory_order_relaxed);
    return n;
}

/* Only MPI_THREAD_MULTIPLE lets a receive be numbered while another thread
 * gives a cancelled one's number back; below it nothing is locked. */
int xsprof_seq_lock(uint32_t gid, int32_t peer, int32_t tag) {
    if (xsprof_mpi_g.thread_level != MPI_THREAD_MULTIPLE || peer == XSPROF_MPI_NONE)
        return 0;
    pthread_once(&g_req_once, req_init);
    int i = (int)(mix64(((uint64_t)gid << 32 | (uint32_t)peer) ^ mix64((uint32_t)tag)) % XSPROF_KEY_LOCKS);
    pthread_mutex_lock(&g_key_lock[i]);
    return i + 1;
}

void xsprof_seq_unlock(int lock) {
    if (lock)
        pthread_mutex_unlock(&g_key_lock[lock - 1]);
}

static void renumber(xsprof_req_info *ri, const xsprof_req_info *gone) {
    if (ri->is_recv && ri->active && ri->comm == gone->comm && ri->peer == gone->peer && ri->tag == gone->tag &&
        ri->seq > gone->seq)
        ri->seq--;
}

uint64_t xsprof_seq_release(const xsprof_req_info *gone) {
    if (!gone->is_recv || !gone->seq || !gone->comm)
        return 0;
    seq_slot *s = seq_find(gone->comm->gid, gone->peer, gone->tag, 1);
    if (!s)
        return 0;
    /* A floating receive posted before the cancelled one completed on its
     * key after it was numbered, with a higher number: moving the numbers
     * down would leave that one a number too high. */
    if (atomic_load_explicit(&s->floating, memory_order_relaxed) > gone->seq)
        return gone->seq;
    /* A message matches the receive posted first, so the receives posted
     * after a cancelled one on its key are all still waiting, each one
     * number too far: they move down, and so does the counter. */
    pthread_once(&g_req_once, req_init);
    for (int i = 0; i < XSPROF_REQ_STRIPES; i++) {
        req_stripe *st = &g_req[i];
        pthread_mutex_lock(&st->lock);
        for (size_t j = 0; j < st->cap; j++)
            if (st->slots[j].key)
                renumber(&st->slots[j].info, gone);
        pthread_mutex_unlock(&st->lock);
    }
    uint64_t n = atomic_load_explicit(&s->n, memory_order_relaxed);
    while (n >= gone->seq &&
           !atomic_compare_exchange_weak_explicit(&s->n, &n, n - 1, memory_order_relaxed, memory_order_relaxed))
        ;
    return 0;
}

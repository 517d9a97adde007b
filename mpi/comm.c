/* mpi/comm.c — the communicator registry: a global id every member agrees
 * on, without communication, and the translation of comm ranks to world
 * ranks. MPI_COMM_WORLD is 0. Other ids hash what all members know alike:
 *  - calls collective over the parent (dup, idup, split, split_type, create,
 *    cart/graph/dist_graph create, cart_sub, intercomm_merge): parent id,
 *    the parent's creation counter (same on all members) and the world rank
 *    of the new communicator's first member;
 *  - calls collective over the new members only (create_group,
 *    intercomm_create): the member list, the tag and how many
 *    communicators with that same list this process made before.
 * Ids are 32-bit hashes (unique with overwhelming probability, not by
 * construction). Lookups are lock-free; insertions take a mutex. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "mpi/xsprof_mpi.h"

#define XSPROF_COMM_SLOTS 4096

typedef struct comm_slot {
    _Atomic uintptr_t key;
    _Atomic(xsprof_comm_entry *) e;
} comm_slot;

static comm_slot g_slots[XSPROF_COMM_SLOTS];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static xsprof_comm_entry g_world = {.gid = 0};
static xsprof_comm_entry g_none = {.gid = XSPROF_COMM_NONE};
static MPI_Group g_world_group = MPI_GROUP_NULL;

/* member-list bases of create_group / intercomm_create and their counts */
typedef struct base_count {
    uint64_t base;
    uint32_t n;
} base_count;
static base_count *g_bases;
static size_t g_nbases, g_capbases;
/* Every entry the registry allocated. Entries outlive their slot (a freed or
 * reused handle) because pending requests may still point to them, so they
 * are owned here and freed together at finalize. */
static xsprof_comm_entry *g_owned;

static void entry_own(xsprof_comm_entry *e) {
    pthread_mutex_lock(&g_lock);
    e->owned_next = g_owned;
    g_owned = e;
    pthread_mutex_unlock(&g_lock);
}

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}
static inline uint64_t hcomb(uint64_t h, uint64_t v) { return mix64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6))); }

static uint32_t gid_of(uint64_t h) {
    uint32_t g = (uint32_t)(h ^ (h >> 32));
    /* 0 is MPI_COMM_WORLD, the top two values mean none/unknown */
    return (g == 0 || g >= UINT32_MAX - 1) ? 1 : g;
}

uintptr_t xsprof_comm_key(MPI_Comm comm) { return (uintptr_t)comm; }

static void slot_put(uintptr_t key, xsprof_comm_entry *e) {
    pthread_mutex_lock(&g_lock);
    uint64_t h = mix64(key);
    comm_slot *reuse = NULL;
    for (uint32_t i = 0; i < XSPROF_COMM_SLOTS; i++) {
        comm_slot *s = &g_slots[(h + i) & (XSPROF_COMM_SLOTS - 1)];
        uintptr_t k = atomic_load(&s->key);
        if (k == key) {
            atomic_store(&s->e, e);
            pthread_mutex_unlock(&g_lock);
            return;
        }
        if (!reuse && k && !atomic_load(&s->e))
            reuse = s; /* a freed handle's slot; keys stay so probe chains hold */
        if (!k) {
            if (!reuse)
                reuse = s;
            break;
        }
    }
    if (reuse) {
        atomic_store(&reuse->e, e);
        atomic_store(&reuse->key, key);
    }
    pthread_mutex_unlock(&g_lock);
    if (!reuse) /* said unlocked: the message may reach the application's handler */
        xsprof_anomaly("communicator registry full");
}

static xsprof_comm_entry *slot_get(uintptr_t key) {
    uint64_t h = mix64(key);
    for (uint32_t i = 0; i < XSPROF_COMM_SLOTS; i++) {
        comm_slot *s = &g_slots[(h + i) & (XSPROF_COMM_SLOTS - 1)];
        uintptr_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == key)
            return atomic_load_explicit(&s->e, memory_order_acquire);
        if (!k)
            return NULL;
    }
    return NULL;
}

/* World ranks of a group, in group order. */
static int32_t *group_world(MPI_Group g, int *n) {
    *n = 0;
    if (PMPI_Group_size(g, n) != MPI_SUCCESS || *n <= 0)
        return NULL;
    int *in = malloc((size_t)*n * sizeof *in), *out = malloc((size_t)*n * sizeof *out);
    if (!in || !out) {
        free(in);
        free(out);
        *n = 0;
        return NULL;
    }
    for (int i = 0; i < *n; i++)
        in[i] = i;
    PMPI_Group_translate_ranks(g, *n, in, g_world_group, out);
    free(in);
    /* processes of another job (spawn, connect/accept) have no world rank */
    for (int i = 0; i < *n; i++)
        if (out[i] == MPI_UNDEFINED)
            out[i] = XSPROF_MPI_NONE;
    return (int32_t *)out;
}

static xsprof_comm_entry *entry_build(MPI_Comm comm) {
    xsprof_comm_entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    entry_own(e);
    int inter = 0;
    MPI_Group g;
    PMPI_Comm_test_inter(comm, &inter);
    if (PMPI_Comm_group(comm, &g) == MPI_SUCCESS) {
        e->world = group_world(g, &e->size);
        PMPI_Group_free(&g);
    }
    if (inter && PMPI_Comm_remote_group(comm, &g) == MPI_SUCCESS) {
        e->rworld = group_world(g, &e->rsize);
        PMPI_Group_free(&g);
    }
    return e;
}

/* Members as recorded: an intercommunicator lists the group whose first
 * member has the lower world rank first, so both sides write the same list. */
static int32_t *members_of(const xsprof_comm_entry *e, int *n) {
    *n = e->size + e->rsize;
    int32_t *m = malloc((size_t)(*n ? *n : 1) * sizeof *m);
    if (!m)
        return NULL;
    int local_first = !e->rworld || !e->world || !e->rsize || e->world[0] < e->rworld[0];
    const int32_t *a = local_first ? e->world : e->rworld, *b = local_first ? e->rworld : e->world;
    int na = local_first ? e->size : e->rsize, nb = local_first ? e->rsize : e->size;
    if (na)
        memcpy(m, a, (size_t)na * sizeof *m);
    if (nb)
        memcpy(m + na, b, (size_t)nb * sizeof *m);
    return m;
}

static uint32_t base_next(uint64_t base) {
    pthread_mutex_lock(&g_lock);
    uint32_t n = 0;
    size_t i;
    for (i = 0; i < g_nbases && g_bases[i].base != base; i++)
        ;
    if (i < g_nbases)
        n = g_bases[i].n++;
    else if (g_nbases < g_capbases || (g_bases = realloc(g_bases, (g_capbases = g_capbases * 2 + 16) * sizeof *g_bases)))
        g_bases[g_nbases++] = (base_count){base, 1};
    pthread_mutex_unlock(&g_lock);
    return n;
}

xsprof_status xsprof_comm_registry_init(void) {
    if (PMPI_Comm_group(MPI_COMM_WORLD, &g_world_group) != MPI_SUCCESS)
        return XSPROF_ERR_STATE;
    g_world.size = xsprof_mpi_g.size;
    g_world.world = NULL; /* identity */
    int32_t *all = malloc((size_t)g_world.size * sizeof *all);
    if (all) {
        for (int i = 0; i < g_world.size; i++)
            all[i] = i;
        xsprof_comm_define(g_world.gid, "MPI_COMM_WORLD", XSPROF_COMM_NONE, all, (uint32_t)g_world.size);
        free(all);
    }
    xsprof_comm_entry *self = calloc(1, sizeof *self);
    if (self)
        entry_own(self);
    if (self && (self->world = malloc(sizeof *self->world))) {
        self->size = 1;
        self->world[0] = xsprof_mpi_g.rank;
        self->gid = gid_of(hcomb(0x5e1f5e1fULL, (uint64_t)xsprof_mpi_g.rank));
        slot_put(xsprof_comm_key(MPI_COMM_SELF), self);
        xsprof_comm_define(self->gid, "MPI_COMM_SELF", XSPROF_COMM_NONE, self->world, 1);
    }
    return XSPROF_OK;
}

void xsprof_comm_registry_fini(void) {
    pthread_mutex_lock(&g_lock);
    for (uint32_t i = 0; i < XSPROF_COMM_SLOTS; i++) {
        atomic_store(&g_slots[i].e, NULL);
        atomic_store(&g_slots[i].key, 0);
    }
    while (g_owned) {
        xsprof_comm_entry *e = g_owned;
        g_owned = e->owned_next;
        free(e->world);
        free(e->rworld);
        free(e);
    }
    free(g_bases);
    g_bases = NULL;
    g_nbases = g_capbases = 0;
    pthread_mutex_unlock(&g_lock);
    if (g_world_group != MPI_GROUP_NULL)
        PMPI_Group_free(&g_world_group);
}

xsprof_comm_entry *xsprof_comm_lookup(MPI_Comm comm) {
    if (comm == MPI_COMM_WORLD)
        return &g_world;
    if (comm == MPI_COMM_NULL || comm == NULL)
        return &g_none;
    xsprof_comm_entry *e = slot_get(xsprof_comm_key(comm));
    if (e)
        return e;
    /* Made by a path we did not see (before MPI_Init, by a library calling
     * PMPI): ranks still translate, the id stays "unknown". */
    e = entry_build(comm);
    if (!e)
        return &g_none;
    e->gid = XSPROF_COMM_NONE - 1;
    slot_put(xsprof_comm_key(comm), e);
    return e;
}

xsprof_comm_entry *xsprof_comm_find(MPI_Comm comm) {
    if (comm == MPI_COMM_WORLD)
        return &g_world;
    if (comm == MPI_COMM_NULL || comm == NULL)
        return NULL;
    return slot_get(xsprof_comm_key(comm));
}

xsprof_comm_entry *xsprof_win_lookup(MPI_Win win) {
    xsprof_comm_entry *e = win == MPI_WIN_NULL ? NULL : slot_get((uintptr_t)win);
    return e ? e : &g_none;
}

void xsprof_comm_created(MPI_Comm comm, xsprof_comm_entry *parent, int64_t index, unsigned op, int tag) {
    xsprof_comm_entry *e = entry_build(comm);
    if (!e) {
        xsprof_anomaly("communicator registry: out of memory");
        return;
    }
    int n = 0;
    int32_t *m = members_of(e, &n);
    uint64_t h;
    if (index >= 0 && parent) {
        h = hcomb(hcomb(hcomb(0xc0ffeeULL, parent->gid), (uint64_t)index), n ? (uint64_t)(uint32_t)m[0] : 0);
    } else {
        uint64_t base = hcomb(hcomb(0xbadc0deULL, parent ? parent->gid : XSPROF_COMM_NONE), (uint64_t)(uint32_t)tag);
        for (int i = 0; m && i < n; i++)
            base = hcomb(base, (uint64_t)(uint32_t)m[i]);
        /* where the two groups of an intercommunicator meet in the list */
        int first = (!e->rworld || !e->world || !e->rsize || e->world[0] < e->rworld[0]) ? e->size : e->rsize;
        base = hcomb(base, (uint64_t)first);
        h = hcomb(base, base_next(base));
    }
    e->gid = gid_of(h);
    slot_put(xsprof_comm_key(comm), e);
    if (m)
        xsprof_comm_define(e->gid, xsprof_mpi_ops[op].name, parent ? parent->gid : XSPROF_COMM_NONE, m, (uint32_t)n);
    free(m);
}

void xsprof_comm_freed(uintptr_t key) {
    /* The entry itself stays: outstanding requests may still point to it. */
    pthread_mutex_lock(&g_lock);
    uint64_t h = mix64(key);
    for (uint32_t i = 0; i < XSPROF_COMM_SLOTS; i++) {
        comm_slot *s = &g_slots[(h + i) & (XSPROF_COMM_SLOTS - 1)];
        uintptr_t k = atomic_load(&s->key);
        if (k == key) {
            atomic_store(&s->e, NULL);
            break;
        }
        if (!k)
            break;
    }
    pthread_mutex_unlock(&g_lock);
}

void xsprof_win_created(MPI_Win win, MPI_Comm comm) {
    if (win != MPI_WIN_NULL)
        slot_put((uintptr_t)win, xsprof_comm_lookup(comm));
}

/* merge/par.c — see par.h. */
#include "merge/par.h"
#include "merge/util.h"
#include "xsprof_config.h"

#include <stdlib.h>
#include <string.h>

#if XSPROF_HAVE_MPI
#include <mpi.h>

/* Launched by a process manager that set up a world for us. */
static int xsm_par_launched(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return 1;
    return 0;
}

/* Serialised xsprof_rank_data: the struct (pointers meaningless), then
 * each array in a fixed order, then the strings as (u32 len, bytes). */
typedef struct xsm_ser {
    char *p;
    size_t len, cap;
} xsm_ser;

static int xsm_ser_put(xsm_ser *s, const void *data, size_t n)
{
    if (s->len + n > s->cap) {
        size_t cap = s->cap ? s->cap : 1 << 16;
        while (cap < s->len + n)
            cap *= 2;
        char *p = realloc(s->p, cap);
        if (!p)
            return -1;
        s->p = p;
        s->cap = cap;
    }
    if (n)
        memcpy(s->p + s->len, data, n);
    s->len += n;
    return 0;
}

#define XSM_ARRAYS(X)                                                                                        \
    X(regions, nregions) X(args, nargs) X(instants, ninstants) X(counters, ncounters) X(mpi, nmpi) X(gpu, ngpu) \
    X(mem, nmem) X(clock, nclock) X(threads, nthreads) X(comms, ncomms) X(comm_members, ncomm_members)        \
    X(topo, ntopo) X(meta, nmeta)

static int xsm_ser_loaded(xsm_ser *s, const xsm_loaded *l)
{
    int bad = xsm_ser_put(s, &l->status, sizeof l->status) || xsm_ser_put(s, l->err, sizeof l->err) ||
              xsm_ser_put(s, l->note, sizeof l->note) || xsm_ser_put(s, &l->d, sizeof l->d);
#define X(a, n) bad = bad || xsm_ser_put(s, l->d.a, l->d.n * sizeof *l->d.a);
    XSM_ARRAYS(X)
#undef X
    for (uint32_t i = 0; i < l->d.nstrings && !bad; i++) {
        const char *str = l->d.strings[i] ? l->d.strings[i] : "";
        uint32_t len = (uint32_t)strlen(str);
        bad = xsm_ser_put(s, &len, sizeof len) || xsm_ser_put(s, str, len);
    }
    return bad ? -1 : 0;
}

static int xsm_take(const char **p, const char *end, void *out, size_t n)
{
    if ((size_t)(end - *p) < n)
        return -1;
    memcpy(out, *p, n);
    *p += n;
    return 0;
}

static int xsm_deser_loaded(const char *p, size_t len, xsm_loaded *l)
{
    const char *end = p + len;
    memset(&l->d, 0, sizeof l->d);
    xsprof_rank_data d;
    if (xsm_take(&p, end, &l->status, sizeof l->status) || xsm_take(&p, end, l->err, sizeof l->err) ||
        xsm_take(&p, end, l->note, sizeof l->note) || xsm_take(&p, end, &d, sizeof d))
        return -1;
    l->d = d;
    /* arrays: fresh allocations, so xsprof_rank_data_free works as usual */
#define X(a, n) l->d.a = NULL;
    XSM_ARRAYS(X)
#undef X
    l->d.strings = NULL;
    l->d.nstrings = 0;
#define X(a, n)                                                              \
    if (d.n) {                                                               \
        l->d.a = malloc(d.n * sizeof *l->d.a);                               \
        if (!l->d.a || xsm_take(&p, end, l->d.a, d.n * sizeof *l->d.a))      \
            return -1;                                                       \
    }
    XSM_ARRAYS(X)
#undef X
    l->d.strings = calloc(d.nstrings + 1, sizeof *l->d.strings);
    if (!l->d.strings)
        return -1;
    for (uint32_t i = 0; i < d.nstrings; i++) {
        uint32_t n;
        if (xsm_take(&p, end, &n, sizeof n) || (size_t)(end - p) < n)
            return -1;
        char *s = malloc((size_t)n + 1);
        if (!s)
            return -1;
        memcpy(s, p, n);
        s[n] = 0;
        p += n;
        l->d.strings[i] = s;
        l->d.nstrings = i + 1;
    }
    return 0;
}

/* Each entry goes from the process that loaded it to all others. */
static int xsm_par_share(xsm_loaded *l, size_t n, void *ctx, char *err, size_t errlen)
{
    const xsm_par *par = ctx;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        int owner = (int)(i % (size_t)par->size);
        xsm_ser s = {0};
        int64_t len = -1; /* -1: not loaded anywhere (not selected) */
        if (owner == par->rank && l[i].status != -1)
            len = xsm_ser_loaded(&s, &l[i]) ? -2 : (int64_t)s.len;
        MPI_Bcast(&len, 1, MPI_INT64_T, owner, MPI_COMM_WORLD);
        if (len == -2)
            bad = 1;
        if (len < 0) {
            free(s.p);
            continue;
        }
        if (owner != par->rank) {
            s.p = malloc((size_t)len + 1);
            int ok = s.p != NULL;
            int all_ok;
            MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            if (!all_ok) {
                free(s.p);
                return xsm_err_set(err, errlen, "xsmerge: out of memory receiving rank data");
            }
        } else {
            int ok = 1, all_ok;
            MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            if (!all_ok) {
                free(s.p);
                return xsm_err_set(err, errlen, "xsmerge: out of memory receiving rank data");
            }
        }
        /* large ranks in pieces: MPI counts are int */
        for (int64_t off = 0; off < len; off += 1 << 30) {
            int64_t k = len - off < (1 << 30) ? len - off : (1 << 30);
            MPI_Bcast(s.p + off, (int)k, MPI_BYTE, owner, MPI_COMM_WORLD);
        }
        if (owner != par->rank) {
            xsprof_rank_data_free(&l[i].d);
            if (xsm_deser_loaded(s.p, (size_t)len, &l[i]))
                bad = 1;
        }
        free(s.p);
    }
    if (bad)
        return xsm_err_set(err, errlen, "xsmerge: out of memory exchanging rank data");
    return 0;
}

int xsm_par_start(int *argc, char ***argv, xsm_par *par, char *err, size_t errlen)
{
    memset(par, 0, sizeof *par);
    par->size = 1;
    if (!xsm_par_launched())
        return 0;
    if (MPI_Init(argc, argv) != MPI_SUCCESS)
        return xsm_err_set(err, errlen, "xsmerge: MPI_Init failed in collective mode");
    MPI_Comm_rank(MPI_COMM_WORLD, &par->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &par->size);
    par->share = xsm_par_share;
    par->ctx = par;
    return 0;
}

int xsm_par_agree(const xsm_par *par, int rc, int bad, int *first)
{
    *first = 0;
    if (!par->share)
        return rc;
    int all, mine = rc == bad ? par->rank : par->size, low;
    MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &low, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    *first = low;
    return all;
}

int64_t xsm_par_bcast_i64(const xsm_par *par, int64_t v)
{
    if (par->share)
        MPI_Bcast(&v, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    return v;
}

void xsm_par_barrier(const xsm_par *par)
{
    if (par->share)
        MPI_Barrier(MPI_COMM_WORLD);
}

void xsm_par_end(const xsm_par *par)
{
    if (par->share)
        MPI_Finalize();
}

#else /* built without MPI: always serial */

int xsm_par_start(int *argc, char ***argv, xsm_par *par, char *err, size_t errlen)
{
    (void)argc;
    (void)argv;
    (void)err;
    (void)errlen;
    memset(par, 0, sizeof *par);
    par->size = 1;
    return 0;
}

int xsm_par_agree(const xsm_par *par, int rc, int bad, int *first)
{
    (void)par;
    (void)bad;
    *first = 0;
    return rc;
}

int64_t xsm_par_bcast_i64(const xsm_par *par, int64_t v)
{
    (void)par;
    return v;
}

void xsm_par_barrier(const xsm_par *par) { (void)par; }
void xsm_par_end(const xsm_par *par) { (void)par; }

#endif

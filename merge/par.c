/* merge/par.c — see par.h. */
#include "merge/par.h"
#include "merge/emit/emit.h"
#include "merge/progress.h"
#include "merge/util.h"
#include "xsprof_config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Copy len bytes at in_off of fd_in to out_off of fd_out. */
static int xsm_copy_range(int fd_in, off_t in_off, int fd_out, off_t out_off, uint64_t len)
{
    while (len) {
        ssize_t k = copy_file_range(fd_in, &in_off, fd_out, &out_off, len, 0);
        if (k <= 0) {
            /* not supported across these files: plain reads and writes */
            char buf[1 << 16];
            ssize_t r = pread(fd_in, buf, len < sizeof buf ? len : sizeof buf, in_off);
            if (r <= 0 || pwrite(fd_out, buf, (size_t)r, out_off) != r)
                return -1;
            k = r;
            in_off += r;
            out_off += r;
        }
        len -= (uint64_t)k;
    }
    return 0;
}

int xsm_par_pftrace(const xsm_par *par, const xsm_emit *e, const char *dir, char *err, size_t errlen)
{
    if (!par->share)
        return xsm_emit_pftrace(e, dir, err, errlen);
    size_t n = e->run->nranks;
    int64_t *mine = calloc(n + 1, sizeof *mine), *all = calloc(n + 1, sizeof *all);
    char part[64], path[8192];
    snprintf(part, sizeof part, ".trace.pftrace.part%d", par->rank);
    int rc = !mine || !all ? xsm_err_set(err, errlen, "xsmerge: out of memory") : 0;
    FILE *f = rc ? NULL : xsm_emit_create(dir, part, err, errlen);
    if (!rc && !f)
        rc = 1;
    xsm_progress_begin("writing trace.pftrace", e->nevents / (uint64_t)par->size);
    for (size_t r = (size_t)par->rank; !rc && r < n; r += (size_t)par->size) {
        uint64_t bytes = 0;
        if (e->run->ranks[r].present)
            rc = xsm_emit_pftrace_rank(e, r, f, &bytes, err, errlen);
        mine[r] = (int64_t)bytes;
    }
    xsm_progress_end();
    if (f && fclose(f) != 0 && !rc)
        rc = xsm_err_set(err, errlen, "xsmerge: %s/%s: %s", dir, part, strerror(errno));
    int any;
    MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(mine ? mine : all, all ? all : mine, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    xsm_path(path, sizeof path, dir, "trace.pftrace");
    if (!any && par->rank == 0) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0)
            rc = xsm_err_set(err, errlen, "xsmerge: %s: %s", path, strerror(errno));
        else
            close(fd);
    }
    MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!any) {
        /* every process copies its segments to their place, in parallel */
        char ppath[8192];
        xsm_path(ppath, sizeof ppath, dir, part);
        int in = open(ppath, O_RDONLY | O_CLOEXEC), out = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        off_t at = 0, in_off = 0;
        for (size_t r = 0; !rc && r < n; r++) {
            if (r % (size_t)par->size == (size_t)par->rank) {
                if (in < 0 || out < 0 || xsm_copy_range(in, in_off, out, at, (uint64_t)all[r]))
                    rc = xsm_err_set(err, errlen, "xsmerge: %s: write failed: %s", path, strerror(errno));
                in_off += all[r];
            }
            at += all[r];
        }
        if (in >= 0)
            close(in);
        if (out >= 0 && close(out) != 0 && !rc)
            rc = xsm_err_set(err, errlen, "xsmerge: %s: write failed: %s", path, strerror(errno));
    }
    {
        char ppath[8192];
        xsm_path(ppath, sizeof ppath, dir, part);
        unlink(ppath);
    }
    free(mine);
    free(all);
    return rc ? 1 : any;
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

int xsm_par_pftrace(const xsm_par *par, const struct xsm_emit *e, const char *dir, char *err, size_t errlen)
{
    (void)par;
    return xsm_emit_pftrace(e, dir, err, errlen);
}

void xsm_par_barrier(const xsm_par *par) { (void)par; }
void xsm_par_end(const xsm_par *par) { (void)par; }

#endif

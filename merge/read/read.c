/* merge/read/read.c — find, load and validate rank files; xsm_run_load. */
#include "merge/read/read.h"
#include "merge/align/align.h"
#include "merge/match/match.h"
#include "merge/progress.h"
#include "merge/util.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Ranks of one job start within this span; a larger gap means two runs. */
#define XSM_MAX_START_SKEW_NS (600LL * 1000000000LL)

/* "rank-NNNNN.h5" / "rank-NNNNN.xsj" with at least five digits. */
static int xsm_name_parse(const char *name, int32_t *rank, int *journal)
{
    if (strncmp(name, "rank-", 5) != 0)
        return 0;
    const char *p = name + 5;
    long v = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (*p - '0');
        if (v > INT32_MAX)
            return 0;
        p++;
        digits++;
    }
    if (digits < 5)
        return 0;
    if (strcmp(p, ".h5") == 0)
        *journal = 0;
    else if (strcmp(p, ".xsj") == 0)
        *journal = 1;
    else
        return 0;
    *rank = (int32_t)v;
    return 1;
}

static int xsm_cand_cmp(const void *a, const void *b)
{
    const xsm_candidate *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return strcmp(x->h5[0] ? x->h5 : x->xsj, y->h5[0] ? y->h5 : y->xsj);
}

int xsm_read_scan(const char *dir, xsm_candidate **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    struct stat st;
    if (stat(dir, &st) != 0)
        return xsm_err_set(err, errlen, "xsmerge: %s: %s", dir, strerror(errno));
    if (S_ISREG(st.st_mode)) {
        /* A single rank file: merge just that rank (the reader names the
         * problem if it is not one). */
        xsm_candidate *c = calloc(1, sizeof *c);
        if (!c)
            return xsm_err_set(err, errlen, "xsmerge: out of memory");
        const char *base = strrchr(dir, '/');
        base = base ? base + 1 : dir;
        int journal = 0;
        if (!xsm_name_parse(base, &c->rank, &journal))
            c->rank = -1;
        (void)xsm_err_set(journal ? c->xsj : c->h5, sizeof c->h5, "%s", dir);
        *out = c;
        *n = 1;
        return 0;
    }
    if (!S_ISDIR(st.st_mode))
        return xsm_err_set(err, errlen, "xsmerge: %s: not a run directory or rank file", dir);
    DIR *d = opendir(dir);
    if (!d)
        return xsm_err_set(err, errlen, "xsmerge: %s: %s", dir, strerror(errno));
    xsm_candidate *c = NULL;
    size_t nc = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int32_t rank;
        int journal;
        if (!xsm_name_parse(e->d_name, &rank, &journal))
            continue;
        /* An .h5 and an .xsj of the same rank share one candidate. */
        size_t i = 0;
        for (i = 0; i < nc; i++)
            if (c[i].rank == rank && !(journal ? c[i].xsj[0] : c[i].h5[0]))
                break;
        if (i == nc) {
            if (nc == cap) {
                cap = cap ? cap * 2 : 64;
                xsm_candidate *g = realloc(c, cap * sizeof *g);
                if (!g) {
                    free(c);
                    closedir(d);
                    return xsm_err_set(err, errlen, "xsmerge: out of memory");
                }
                c = g;
            }
            memset(&c[nc], 0, sizeof c[nc]);
            c[nc].rank = rank;
            nc++;
        }
        (void)xsm_err_set(journal ? c[i].xsj : c[i].h5, sizeof c[i].h5, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (nc == 0) {
        free(c);
        return xsm_err_set(err, errlen, "xsmerge: %s: no rank files (rank-NNNNN.h5 or rank-NNNNN.xsj) in this directory",
                           dir);
    }
    qsort(c, nc, sizeof *c, xsm_cand_cmp);
    *out = c;
    *n = nc;
    return 0;
}

/* Streaming mode: event tables stay in the file (all but clock samples). */
static int xsm_stream_load;
#define XSM_STREAM_TABLES                                                                                          \
    (1u << XSPROF_IO_T_REGIONS | 1u << XSPROF_IO_T_ARGS | 1u << XSPROF_IO_T_INSTANTS | 1u << XSPROF_IO_T_COUNTERS | \
     1u << XSPROF_IO_T_MPI | 1u << XSPROF_IO_T_GPU | 1u << XSPROF_IO_T_MEM)

/* Rows and row bytes of one rank file's event tables; 0 when it cannot be
 * opened. */
static void xsm_count_one(const char *path, uint64_t *rows, uint64_t *bytes)
{
    xsprof_rank_data d;
    xsprof_rankfile *rf = NULL;
    char e[256];
    memset(&d, 0, sizeof d);
    if (xsprof_rankfile_open(path, XSM_STREAM_TABLES, &d, &rf, e, sizeof e) == XSPROF_OK) {
        for (int t = 0; t < XSPROF_IO_T_COUNT; t++) {
            uint64_t k = xsprof_rankfile_table_rows(rf, (enum xsprof_io_table)t);
            *rows += k;
            *bytes += k * xsprof_io_table_row_size((enum xsprof_io_table)t);
        }
        xsprof_rankfile_close(rf);
    }
    xsprof_rank_data_free(&d);
}

uint64_t xsm_read_need(const xsm_candidate *c, size_t n, uint64_t budget, uint64_t per_row, uint64_t *rows)
{
    uint64_t bytes = 0, need;
    *rows = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (c[i].h5[0] && stat(c[i].h5, &st) == 0)
            bytes += (uint64_t)st.st_size;
    }
    if (bytes * 400 <= budget)
        return 0;
    xsm_read_count(c, n, rows, &need);
    return need + *rows * per_row;
}

void xsm_read_count(const xsm_candidate *c, size_t n, uint64_t *rows, uint64_t *bytes)
{
    *rows = *bytes = 0;
    /* Opening a rank file costs ~2 ms: beyond 64 files, 64 spread over the
     * run stand for all of them, scaled by the files' sizes. */
    uint64_t h5_rows = 0, h5_bytes = 0, seen = 0, all = 0;
    size_t nh5 = 0, k = 0;
    for (size_t i = 0; i < n; i++)
        nh5 += c[i].h5[0] != 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (!c[i].h5[0]) { /* a journal: ~40 bytes per record (benchmarks/README) */
            if (c[i].xsj[0] && stat(c[i].xsj, &st) == 0) {
                *rows += (uint64_t)st.st_size / 40;
                *bytes += (uint64_t)st.st_size;
            }
            continue;
        }
        uint64_t size = stat(c[i].h5, &st) == 0 ? (uint64_t)st.st_size : 0;
        all += size;
        /* file k of the nh5 is in the sample when it starts a new 64th */
        if (nh5 <= 64 || (k * 64) / nh5 != ((k + 1) * 64) / nh5) {
            xsm_count_one(c[i].h5, &h5_rows, &h5_bytes);
            seen += size;
        }
        k++;
    }
    if (seen && seen < all) {
        h5_rows = (uint64_t)((double)h5_rows * ((double)all / (double)seen));
        h5_bytes = (uint64_t)((double)h5_bytes * ((double)all / (double)seen));
    }
    *rows += h5_rows;
    *bytes += h5_bytes;
}

static void xsm_load_one(const xsm_candidate *c, xsm_loaded *l)
{
    char e1[1024] = "", e2[1024] = "";
    memset(&l->d, 0, sizeof l->d);
    l->rf = NULL;
    l->note[0] = l->err[0] = 0;
    if (c->h5[0]) {
        xsprof_status st = xsm_stream_load ? xsprof_rankfile_open(c->h5, XSM_STREAM_TABLES, &l->d, &l->rf, e1, sizeof e1)
                                           : xsprof_rankfile_load(c->h5, &l->d, e1, sizeof e1);
        if (st == XSPROF_OK) {
            l->status = 0;
            xsm_read_name_functions(&l->d);
            return;
        }
        xsprof_rank_data_free(&l->d);
        memset(&l->d, 0, sizeof l->d);
        if (!c->xsj[0]) {
            l->status = 1;
            (void)xsm_err_set(l->err, sizeof l->err, "xsmerge: %s", e1[0] ? e1 : c->h5);
            return;
        }
    }
    if (xsprof_journal_load(c->xsj, &l->d, e2, sizeof e2) == XSPROF_OK) {
        l->status = 0;
        xsm_read_name_functions(&l->d);
        if (c->h5[0])
            (void)xsm_err_set(l->note, sizeof l->note, "rank %d: %s; recovered from journal %s (end state: %s)", (int)l->d.rank,
                     e1, c->xsj, l->d.end_state[0] ? l->d.end_state : "unknown");
        else
            (void)xsm_err_set(l->note, sizeof l->note, "rank %d: no rank file, recovered from journal %s (end state: %s)",
                     (int)l->d.rank, c->xsj, l->d.end_state[0] ? l->d.end_state : "unknown");
        return;
    }
    xsprof_rank_data_free(&l->d);
    memset(&l->d, 0, sizeof l->d);
    l->status = 1;
    (void)xsm_err_set(l->err, sizeof l->err, "xsmerge: %s", c->h5[0] ? (e1[0] ? e1 : c->h5) : (e2[0] ? e2 : c->xsj));
}

static void xsm_step_one(void) { xsm_progress_step(1); }

static int xsm_fork_ok = 1;

/* Whether process rank of size loads candidate i: selected by --ranks,
 * and i % size == rank (collective mode divides by position among the
 * processes of a node). */
static int xsm_load_mine(const xsm_candidate *c, size_t i, const unsigned char *mask, int rank, int size)
{
    if (mask && c[i].rank >= 0 && !mask[c[i].rank])
        return 0;
    return (int)(i % (size_t)size) == rank;
}

/* The io reader's table readers are this directory's (threads decode). */
static void xsm_load_setup(int threads)
{
    xsprof_rankfile_set_table_reader(xsm_chunks_read);
    xsprof_rankfile_set_rows_reader(xsm_chunks_rows);
    xsprof_rankfile_set_raw_reader(xsm_chunks_raw_plan, xsm_chunks_raw_rows, xsm_chunks_raw_free);
    xsprof_rankfile_set_table_alloc(xsm_malloc_big, free);
    xsm_chunks_set_threads(threads);
    xsm_parallel_threads(threads); /* align, match and emit work per rank */
}

xsm_early *xsm_read_early_start(const char *run_dir, const xsm_load_opts *opts, int rank, int size, int threads,
                                uint64_t budget, size_t max)
{
    xsm_candidate *c = NULL;
    unsigned char *mask = NULL, *want = NULL;
    size_t n = 0;
    char err[256];
    if (size < 1 || rank < 0 || rank >= size || !xsm_fork_ok || (opts && opts->stream) ||
        xsm_read_scan(run_dir, &c, &n, err, sizeof err))
        return NULL; /* the load says what is wrong */
    /* only when the run fits as main.c's estimate would say, the report's
     * share counted (reading tables' lengths takes ~2 ms a file, at most
     * 64: MPI_Init leaves the time): else the load decides with MPI
     * whether to stream, and a helper would have loaded in vain */
    uint64_t rows;
    int fits = budget && xsm_read_need(c, n, budget, 100, &rows) <= budget;
    xsm_early *e = NULL;
    size_t masklen = (size_t)c[n - 1].rank + 1;
    int bad_ranks = opts && opts->ranks && xsm_rankset_parse(opts->ranks, masklen, &mask, NULL, err, sizeof err);
    if (fits && !bad_ranks && (want = calloc(n + 1, 1))) {
        for (size_t i = 0; i < n; i++)
            want[i] = (unsigned char)xsm_load_mine(c, i, mask, rank, size);
        xsm_load_setup(threads);
        e = xsm_early_fork(c, want, n, rank, size, max, budget, xsm_load_one);
    }
    free(mask);
    if (!e) {
        free(c);
        free(want);
    }
    return e;
}

void xsm_read_allow_fork(int allow) { xsm_fork_ok = allow; }

/* Helper processes for loading (1: none). XSPROF_MERGE_READERS decides
 * when set. Else they run only for many small rank files: opening one costs
 * about 3 ms of HDF5 metadata work (one lock for all threads) whatever its
 * size, while the copy back from a helper costs per event. Measured on the
 * ring: 1024 files of 20 KB read in 2.3 s instead of 4.0, 128 of 56 KB in
 * 0.65 s instead of 0.83, but 32 of 220 KB and 8 of 860 KB slower. */
static int xsm_read_procs(const xsm_candidate *c, const xsm_loaded *l, size_t n)
{
    const char *v = getenv("XSPROF_MERGE_READERS");
    if (v && *v) {
        long k = strtol(v, NULL, 10);
        return k < 1 ? 1 : k > 64 ? 64 : (int)k;
    }
    uint64_t files = 0, bytes = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (l[i].status == -1 || !c[i].h5[0] || stat(c[i].h5, &st) != 0)
            continue;
        files++;
        bytes += (uint64_t)st.st_size;
    }
    if (files < 32 || bytes / files > (64u << 10))
        return 1;
    int k = xsm_cpu_share(1);
    return k < 1 ? 1 : k > 4 ? 4 : k;
}

static void xsm_note(FILE *notes, const char *fmt, const char *a, const char *b)
{
    if (notes) {
        fputs("xsmerge: note: ", notes);
        fprintf(notes, fmt, a, b);
        fputc('\n', notes);
    }
}

static const char *xsm_loaded_path(const xsm_candidate *c) { return c->h5[0] ? c->h5 : c->xsj; }

/* Pick the job the majority of files belong to (ties: the lowest rank). */
static size_t xsm_reference(const xsm_loaded *l, size_t n)
{
    size_t best = SIZE_MAX, best_count = 0;
    for (size_t i = 0; i < n; i++) {
        if (l[i].status != 0)
            continue;
        size_t count = 0;
        for (size_t j = 0; j < n; j++)
            if (l[j].status == 0 && strcmp(l[j].d.job_id, l[i].d.job_id) == 0 && l[j].d.size == l[i].d.size)
                count++;
        if (count > best_count) {
            best_count = count;
            best = i;
        }
    }
    return best;
}

static int xsm_validate(const char *run_dir, const xsm_load_opts *opts, const xsm_candidate *c, xsm_loaded *l,
                        size_t n, const unsigned char *mask, size_t masklen, FILE *notes, xsm_run *run, char *err,
                        size_t errlen)
{
    int partial = opts && opts->partial;
    /* every problem --partial can skip says so, where other files remain */
    const char *hint = n > 1 ? "; use --partial to merge the other ranks" : "";
    char line[2048];
    for (size_t i = 0; i < n; i++) {
        if (l[i].status != 1)
            continue;
        /* streaming hands a damaged file to the in-memory merge, whose
         * reader names the first problem as it always did */
        if (!partial || (opts && opts->stream))
            return xsm_err_set(err, errlen, "%s%s", l[i].err, partial ? "" : hint);
        /* the error's "xsmerge: " would follow the note's */
        xsm_note(notes, "%s (skipped, --partial)%s",
                 l[i].err + (strncmp(l[i].err, "xsmerge: ", 9) == 0 ? 9 : 0), "");
        l[i].status = -1;
    }
    size_t ref = xsm_reference(l, n);
    if (ref == SIZE_MAX)
        return xsm_err_set(err, errlen, "xsmerge: %s: no readable rank file", run_dir);
    const xsprof_rank_data *rd = &l[ref].d;
    if (rd->size < 1)
        return xsm_err_set(err, errlen, "xsmerge: %s: invalid number of ranks %d", xsm_loaded_path(&c[ref]),
                           (int)rd->size);
    for (size_t i = 0; i < n; i++) {
        if (l[i].status != 0 || i == ref)
            continue;
        const xsprof_rank_data *d = &l[i].d;
        int64_t skew = d->start_realtime_ns - rd->start_realtime_ns;
        if (skew < 0)
            skew = -skew;
        if (strcmp(d->job_id, rd->job_id) == 0 && d->size == rd->size && skew <= XSM_MAX_START_SKEW_NS)
            continue;
        if (strcmp(d->job_id, rd->job_id) != 0)
            (void)xsm_err_set(line, sizeof line, "belongs to another run (job id '%s', %s has '%s')", d->job_id,
                     xsm_loaded_path(&c[ref]), rd->job_id);
        else if (d->size != rd->size)
            (void)xsm_err_set(line, sizeof line, "belongs to another run (%d ranks, %s has %d)", (int)d->size,
                     xsm_loaded_path(&c[ref]), (int)rd->size);
        else
            (void)xsm_err_set(line, sizeof line, "belongs to another run (started %.0f s apart from %s)", (double)skew * 1e-9,
                     xsm_loaded_path(&c[ref]));
        if (!partial)
            return xsm_err_set(err, errlen, "xsmerge: %s: %s%s", xsm_loaded_path(&c[i]), line, hint);
        xsm_note(notes, "%s: %s (skipped, --partial)", xsm_loaded_path(&c[i]), line);
        l[i].status = -1;
    }
    int32_t size = rd->size;
    size_t *owner = malloc((size_t)size * sizeof *owner);
    if (!owner)
        return xsm_err_set(err, errlen, "xsmerge: out of memory");
    for (int32_t r = 0; r < size; r++)
        owner[r] = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        if (l[i].status != 0)
            continue;
        int32_t r = l[i].d.rank;
        if (r < 0 || r >= size) {
            (void)xsm_err_set(line, sizeof line, "claims rank %d but the run has %d ranks", (int)r, (int)size);
        } else if (owner[r] != SIZE_MAX) {
            (void)xsm_err_set(line, sizeof line, "claims rank %d, which %s already provides", (int)r, xsm_loaded_path(&c[owner[r]]));
        } else {
            owner[r] = i;
            continue;
        }
        if (!partial) {
            free(owner);
            return xsm_err_set(err, errlen, "xsmerge: %s: %s%s", xsm_loaded_path(&c[i]), line, hint);
        }
        xsm_note(notes, "%s: %s (skipped, --partial)", xsm_loaded_path(&c[i]), line);
        l[i].status = -1;
    }
    /* Missing ranks: list them all on one line. */
    size_t nmissing = 0;
    size_t pos = 0;
    line[0] = 0;
    for (int32_t r = 0; r < size; r++) {
        if (owner[r] != SIZE_MAX || (mask && ((size_t)r >= masklen || !mask[r])))
            continue;
        if (nmissing < 16 && pos < sizeof line - 16)
            pos += (size_t)snprintf(line + pos, sizeof line - pos, "%s%d", nmissing ? ", " : "", (int)r);
        else if (nmissing == 16)
            pos += (size_t)snprintf(line + pos, sizeof line - pos, ", ...");
        nmissing++;
    }
    if (nmissing) {
        if (!partial) {
            free(owner);
            return xsm_err_set(err, errlen,
                               "xsmerge: %s: %s %s missing (no rank-NNNNN.h5 or .xsj; %d ranks in the run; use --partial "
                               "to merge the others)",
                               run_dir, nmissing == 1 ? "rank" : "ranks", line, (int)size);
        }
        xsm_note(notes, "%s: missing ranks %s (continuing, --partial)", run_dir, line);
    }
    run->ranks = calloc((size_t)size, sizeof *run->ranks);
    if (!run->ranks) {
        free(owner);
        return xsm_err_set(err, errlen, "xsmerge: out of memory");
    }
    run->nranks = (size_t)size;
    for (int32_t r = 0; r < size; r++) {
        run->ranks[r].left_out = owner[r] == SIZE_MAX && mask && ((size_t)r >= masklen || !mask[r]);
        if (owner[r] == SIZE_MAX)
            continue;
        xsm_loaded *x = &l[owner[r]];
        if (x->note[0])
            xsm_note(notes, "%s%s", x->note, "");
        if (x->d.truncated && !x->note[0]) {
            (void)xsm_err_set(line, sizeof line, "rank %d is truncated (end state: %s); merging the records it holds",
                     (int)r, x->d.end_state[0] ? x->d.end_state : "unknown");
            xsm_note(notes, "%s: %s", xsm_loaded_path(&c[owner[r]]), line);
        }
        run->ranks[r].d = x->d;
        run->ranks[r].rf = x->rf;
        run->ranks[r].ro = x->ro;
        run->ranks[r].present = 1;
        memset(&x->d, 0, sizeof x->d);
        x->rf = NULL;
        x->status = -1;
    }
    free(owner);
    /* from a rank moved into the run: rd's file was moved and cleared above */
    for (size_t r = 0; r < run->nranks; r++)
        if (run->ranks[r].present) {
            (void)xsm_err_set(run->job_id, sizeof run->job_id, "%s", run->ranks[r].d.job_id);
            (void)xsm_err_set(run->command, sizeof run->command, "%s", run->ranks[r].d.command);
            break;
        }
    return 0;
}

/* What one process sees of the run directory (names and sizes of its rank
 * files), hashed (FNV-1a); 0 when it could not scan it. */
static uint64_t xsm_scan_hash(int failed, const xsm_candidate *c, size_t n)
{
    uint64_t h = 1469598103934665603ull;
#define XSM_MIX(p, len)                                    \
    for (size_t k = 0; k < (len); k++)                     \
        h = (h ^ ((const unsigned char *)(p))[k]) * 1099511628211ull;
    for (size_t i = 0; !failed && i < n; i++) {
        const char *path[2] = {c[i].h5, c[i].xsj};
        XSM_MIX(&c[i].rank, sizeof c[i].rank)
        for (int j = 0; j < 2; j++) {
            struct stat st;
            int64_t size = path[j][0] && stat(path[j], &st) == 0 ? (int64_t)st.st_size : -1;
            XSM_MIX(path[j], strlen(path[j]) + 1)
            XSM_MIX(&size, sizeof size)
        }
    }
#undef XSM_MIX
    return failed ? 0 : h | 1;
}

int xsm_run_load_par(const char *run_dir, const xsm_load_opts *opts, const xsm_par *par, FILE *notes, xsm_run *run,
                     char *err, size_t errlen)
{
    memset(run, 0, sizeof *run);
    (void)xsm_err_set(run->run_dir, sizeof run->run_dir, "%s", run_dir);
    xsm_candidate *c = NULL;
    size_t n = 0;
    xsm_early *early = opts ? opts->early : NULL; /* ours to use or cancel */
    int failed = xsm_read_scan(run_dir, &c, &n, err, errlen);
    /* every node loads every file: a directory that some nodes see
     * otherwise (local to a node, or not yet synchronised) would give them
     * other runs, and a process that cannot scan it would leave the others
     * waiting for its share */
    if (par && par->same && !par->same(par->ctx, xsm_scan_hash(failed, c, n)) && !failed) {
        failed = xsm_err_set(err, errlen,
                             "xsmerge: %s: the merging processes do not all see the same rank files "
                             "(a directory local to a node?); give every node the same run directory",
                             run_dir);
        free(c);
    }
    if (failed) {
        xsm_early_cancel(early);
        return 1;
    }
    unsigned char *mask = NULL;
    size_t masklen = (size_t)c[n - 1].rank + 1;
    long top = -1;
    if (opts && opts->ranks && xsm_rankset_parse(opts->ranks, masklen, &mask, &top, err, errlen)) {
        xsm_early_cancel(early);
        free(c);
        return 1;
    }
    if (mask) { /* say so when --ranks names ranks the run has no file of */
        size_t chosen = 0;
        for (size_t i = 0; i < n; i++)
            chosen += c[i].rank < 0 || mask[c[i].rank];
        if (!chosen) {
            xsm_err_set(err, errlen, "xsmerge: %s: --ranks '%s' selects none of its ranks (rank files %d to %d)",
                        run_dir, opts->ranks, (int)c[0].rank, (int)c[n - 1].rank);
            xsm_early_cancel(early);
            free(c);
            free(mask);
            return 1;
        }
        if (notes && top >= (long)masklen)
            fprintf(notes, "xsmerge: note: --ranks '%s' names ranks up to %ld; the run's last rank file is rank %d\n",
                    opts->ranks, top, (int)c[n - 1].rank);
    }
    xsm_loaded *l = calloc(n, sizeof *l);
    if (!l) {
        xsm_early_cancel(early);
        free(c);
        free(mask);
        return xsm_err_set(err, errlen, "xsmerge: out of memory");
    }
    size_t todo = 0;
    for (size_t i = 0; i < n; i++) {
        l[i].status = xsm_load_mine(c, i, mask, par ? par->lrank : 0, par ? par->local : 1) ? 0 : -1;
        todo += l[i].status == 0;
    }
    xsm_progress_mark("start");
    xsm_progress_begin("reading rank files", todo);
    xsm_stream_load = opts && opts->stream;
    int threads = xsm_cpu_share(par ? par->local : 1);
    xsm_load_setup(threads);
    /* Helper processes decode a share of the files when there are many
     * small ones or XSPROF_MERGE_READERS asks (collective mode divides the
     * files among its processes anyway). */
    int procs = par || !xsm_fork_ok || xsm_stream_load ? 1 : xsm_read_procs(c, l, n);
    if (early && (!par || xsm_stream_load || !xsm_early_fits(early, c, l, n, par->lrank, par->local))) {
        xsm_early_cancel(early);
        early = NULL;
    }
    int early_used = early && xsm_early_finish(early, l, n, xsm_load_one, xsm_step_one) == 0;
    if (early_used) {
        early = NULL; /* freed */
    } else if (procs > 1 && xsm_read_forked(c, l, n, procs, xsm_load_one, xsm_step_one) == 0) {
        xsm_progress_mark("decode (helper processes)");
    } else {
        xsm_early_cancel(early);
        for (size_t i = 0; i < n; i++) {
            if (l[i].status == -1)
                continue;
            xsm_load_one(&c[i], &l[i]);
            xsm_progress_step(1);
        }
    }
    xsm_progress_end();
    int rc = 0;
    if (par)
        xsm_progress_mark(early_used ? "load (begun before MPI_Init)" : "load");
    if (par && par->share(l, n, par->ctx, err, errlen))
        rc = 1;
    if (!rc)
        rc = xsm_validate(run_dir, opts, c, l, n, mask, masklen, notes, run, err, errlen);
    if (!rc && par && par->local > 1) {
        /* the passes that only count or prepare are divided by reduce (the
         * clock's violation counts, trace preparation's track sets), also
         * where each process holds copies of its own (across nodes, or
         * tables compacted by --from/--to: two single-core "nodes", 5
         * M-event ring, clock 0.08-0.09 -> 0.06-0.07 CPU-s, trace
         * preparation 0.13-0.15 -> 0.10 a process) */
        run->sync_ctx = par->ctx;
        run->part = par->lrank;
        run->parts = par->local;
        run->reduce = par->reduce;
        if (par->mapped) { /* every process converts the times of what it loaded */
            run->sync = par->sync;
            run->shm = par->shm; /* and match is divided among them */
        }
    }
    for (size_t i = 0; i < n; i++) {
        xsm_read_release(&l[i].d);
        xsprof_rankfile_close(l[i].rf);
    }
    free(l);
    free(c);
    free(mask);
    xsm_stream_load = 0;
    if (rc) {
        xsm_run_free(run);
        return 1;
    }
    xsm_progress_mark(par && par->mapped ? "read (event tables mapped)" : "read");
    if (opts && opts->stream)
        return 0; /* merge/stream/ takes it from here */
    /* each rank's span, taken while interpolating: t = 0 needs no pass of
     * its own when the logical clock moves nothing */
    int64_t *span = malloc((2 * run->nranks + 2) * sizeof *span);
    xsm_align_interpolate_span(run, span);
    xsm_progress_mark("interpolate");
    run->min_latency_ns = opts && opts->min_latency_ns > 0 ? opts->min_latency_ns : 0;
    if (xsm_match_run(run, notes, err, errlen)) {
        free(span);
        xsm_run_free(run);
        return 1;
    }
    xsm_progress_mark(run->msgs_shm_len ? "match (divided)" : "match");
    if (xsm_align_logical(run, run->min_latency_ns, err, errlen)) {
        free(span);
        xsm_run_free(run);
        return 1;
    }
    xsm_align_origin_span(run, xsm_align_logical_identity(run) ? span : NULL);
    free(span);
    xsm_progress_mark("clock");
    if (opts && (xsm_window_check(run, opts->from_ns, err, errlen) ||
                 ((opts->from_ns > 0 || opts->to_ns > 0) &&
                  xsm_select_window(run, opts->from_ns, opts->to_ns > 0 ? opts->to_ns : INT64_MAX, err, errlen)))) {
        xsm_run_free(run);
        return 1;
    }
    return 0;
}

int xsm_run_load(const char *run_dir, const xsm_load_opts *opts, xsm_run *run, char *err, size_t errlen)
{
    return xsm_run_load_par(run_dir, opts, NULL, opts && opts->quiet ? NULL : stderr, run, err, errlen);
}

void xsm_collective_free(xsm_collective *c)
{
    free(c->ranks);
    free(c->rows);
    free(c->tb);
    free(c->te);
}

void xsm_run_free(xsm_run *run)
{
    for (size_t r = 0; r < run->nranks; r++) {
        xsm_read_release(&run->ranks[r].d);
        xsprof_rankfile_close(run->ranks[r].rf);
        if (run->ranks[r].knots_own)
            free(run->ranks[r].knots);
    }
    free(run->ranks);
    for (size_t i = 0; i < run->ncolls; i++)
        xsm_collective_free(&run->colls[i]);
    free(run->colls);
    free(run->unrecv);
    run->unrecv = NULL;
    if (run->msgs_shm_len)
        munmap(run->msgs, run->msgs_shm_len);
    else
        free(run->msgs);
    run->msgs_shm_len = 0;
    run->ranks = NULL;
    run->colls = NULL;
    run->msgs = NULL;
    run->nranks = run->ncolls = run->nmsgs = 0;
}

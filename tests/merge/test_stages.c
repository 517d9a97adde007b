/* tests/merge/test_stages.c — the align and match stages on in-memory
 * runs (no files): exact interpolation, the logical clock's corrections,
 * collective constraints, matching of wildcard and nonblocking receives,
 * the time-window selection, the threads a merging process takes, and
 * trace.pftrace's blocks waiting for their place (memory, spill, errors),
 * and rank files loaded by a helper begun before MPI_Init (claims shared
 * with the parent, tables mapped, a helper that dies, release), and the
 * Early Scan rule both feedings share (merge/analyze/collwait.c). */
#include "merge/align/align.h"
#include "merge/analyze/analyze.h"
#include "merge/emit/place.h"
#include "merge/match/match.h"
#include "merge/read/read.h"
#include "merge/util.h"
#include "core/record.h"
#include "io/reader.h"
#include "tests/merge/fixture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
#define CHECK(c)                                                                 \
    do {                                                                         \
        if (!(c)) {                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            failures++;                                                          \
        }                                                                        \
    } while (0)
#define CHECK_EQ(a, b)                                                                                    \
    do {                                                                                                  \
        long long a_ = (long long)(a), b_ = (long long)(b);                                               \
        if (a_ != b_) {                                                                                   \
            fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #a, a_, b_);        \
            failures++;                                                                                   \
        }                                                                                                 \
    } while (0)

static void run_init(xsm_run *run, size_t n)
{
    memset(run, 0, sizeof *run);
    run->nranks = n;
    run->ranks = calloc(n, sizeof *run->ranks);
    for (size_t r = 0; r < n; r++) {
        run->ranks[r].present = 1;
        run->ranks[r].d.rank = (int32_t)r;
        run->ranks[r].d.size = (int32_t)n;
        run->ranks[r].d.strings = calloc(1, sizeof(char *));
        run->ranks[r].d.strings[0] = strdup("MPI_X");
        run->ranks[r].d.nstrings = 1;
    }
}

static size_t add_mpi(xsm_run *run, int r, int kind, int64_t b, int64_t e, int peer, int tag, uint64_t seq)
{
    xsprof_rank_data *d = &run->ranks[r].d;
    d->mpi = realloc(d->mpi, (d->nmpi + 1) * sizeof *d->mpi);
    xsprof_io_mpi *m = &d->mpi[d->nmpi];
    memset(m, 0, sizeof *m);
    m->t_begin = b;
    m->t_end = e;
    m->kind = (uint8_t)kind;
    m->peer = peer;
    m->tag = tag;
    m->root = -1;
    m->seq = seq;
    if (kind == XSPROF_MPI_COLL || kind == XSPROF_MPI_ICOLL) /* collectives move data (see test_zero_bcast) */
        m->bytes_sent = m->bytes_recv = 8;
    return d->nmpi++;
}

static void add_region(xsm_run *run, int r, int64_t b, int64_t e)
{
    xsprof_rank_data *d = &run->ranks[r].d;
    d->regions = realloc(d->regions, (d->nregions + 1) * sizeof *d->regions);
    memset(&d->regions[d->nregions], 0, sizeof *d->regions);
    d->regions[d->nregions].t_begin = b;
    d->regions[d->nregions].t_end = e;
    d->regions[d->nregions].args = -1;
    d->nregions++;
}

static void test_interpolate(void)
{
    xsm_run run;
    run_init(&run, 1);
    xsprof_rank_data *d = &run.ranks[0].d;
    d->clock = calloc(3, sizeof *d->clock);
    /* unsorted on purpose */
    d->clock[0] = (xsprof_io_clock){1000000000, 1000, 100, 1};
    d->clock[1] = (xsprof_io_clock){0, 0, 300, 0};
    d->clock[2] = (xsprof_io_clock){2000000000, 3000, 100, 2};
    d->nclock = 3;
    add_region(&run, 0, 500000000, 1500000000);
    add_region(&run, 0, -1000000000, 3000000000);
    xsm_align_interpolate(&run);
    CHECK_EQ(d->regions[0].t_begin, 500000000 + 500);
    CHECK_EQ(d->regions[0].t_end, 1500000000 + 2000);
    CHECK_EQ(d->regions[1].t_begin, -1000000000 - 1000); /* first segment's drift */
    CHECK_EQ(d->regions[1].t_end, 3000000000 + 5000);    /* last segment's drift */
    CHECK(run.clock.max_residual_us == 0.15);
    xsm_run_free(&run);

    /* one sample: a constant offset */
    run_init(&run, 1);
    d = &run.ranks[0].d;
    d->clock = calloc(1, sizeof *d->clock);
    d->clock[0] = (xsprof_io_clock){123, -700, 10, 0};
    d->nclock = 1;
    add_region(&run, 0, 10, 99999);
    xsm_align_interpolate(&run);
    CHECK_EQ(d->regions[0].t_begin, 10 - 700);
    CHECK_EQ(d->regions[0].t_end, 99999 - 700);
    xsm_run_free(&run);
}

static int load(xsm_run *run, int64_t lat)
{
    char err[1024];
    if (xsm_match_run(run, NULL, err, sizeof err) || xsm_align_logical(run, lat, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    return 0;
}

/* A receive that ends before its send began, with nothing earlier pinned:
 * the whole prefix moves (a pure offset), later events keep their spacing. */
static void test_logical_prefix(void)
{
    xsm_run run;
    run_init(&run, 2);
    add_mpi(&run, 0, XSPROF_MPI_SEND, 100, 200, 1, 0, 1);
    add_mpi(&run, 1, XSPROF_MPI_RECV, 20, 80, 0, 0, 1);
    add_mpi(&run, 1, XSPROF_MPI_OTHER, 300, 400, -1, -1, 0);
    add_region(&run, 1, 0, 500);
    CHECK(load(&run, 0) == 0);
    CHECK_EQ(run.nmsgs, 1);
    CHECK_EQ(run.clock.violations_before, 1);
    CHECK_EQ(run.clock.violations_after, 0);
    const xsprof_io_mpi *m = run.ranks[1].d.mpi;
    CHECK_EQ(m[0].t_begin, 40);
    CHECK_EQ(m[0].t_end, 100);
    CHECK_EQ(m[1].t_begin, 320);
    CHECK_EQ(m[1].t_end, 420);
    CHECK_EQ(run.ranks[1].d.regions[0].t_begin, 20); /* before the first group: shifted like it */
    CHECK_EQ(run.ranks[1].d.regions[0].t_end, 520);
    CHECK_EQ(run.clock.max_correction_ns, 20);
    CHECK_EQ(run.ranks[0].d.mpi[0].t_begin, 100); /* the sender is untouched */
    xsm_run_free(&run);
}

/* With a send (pinned: another rank depends on it) before the late receive,
 * the jump is spread linearly back to that send (backward amortisation). */
static void test_logical_ramp(void)
{
    xsm_run run;
    run_init(&run, 2);
    add_mpi(&run, 0, XSPROF_MPI_SEND, 100, 200, 1, 0, 1);
    add_mpi(&run, 0, XSPROF_MPI_RECV, 250, 300, 1, 1, 1);
    add_mpi(&run, 1, XSPROF_MPI_SEND, 0, 10, 0, 1, 1);
    add_mpi(&run, 1, XSPROF_MPI_RECV, 20, 80, 0, 0, 1);
    CHECK(load(&run, 5) == 0);
    CHECK_EQ(run.nmsgs, 2);
    CHECK_EQ(run.clock.violations_before, 1);
    CHECK_EQ(run.clock.violations_after, 0);
    const xsprof_io_mpi *m = run.ranks[1].d.mpi;
    CHECK_EQ(m[0].t_begin, 0);
    CHECK_EQ(m[1].t_end, 105); /* send begin 100 + min latency 5 */
    CHECK_EQ(m[0].t_end, 13);  /* 10 * 105 / 80 */
    CHECK_EQ(m[1].t_begin, 26); /* 20 * 105 / 80 */
    xsm_run_free(&run);
}

/* Collectives: NxN exits wait for the last entry, 1-to-N non-roots for the
 * root's entry, N-to-1 roots for every entry. */
static void test_collectives(void)
{
    xsm_run run;
    run_init(&run, 3);
    int64_t enter[3] = {100, 200, 300}, leave[3] = {250, 350, 400};
    for (int r = 0; r < 3; r++) {
        size_t i = add_mpi(&run, r, XSPROF_MPI_COLL, enter[r], leave[r], -1, -1, 0);
        run.ranks[r].d.mpi[i].coll = XSPROF_COLL_NXN;
        run.ranks[r].d.mpi[i].coll_seq = 1;
    }
    /* Bcast rooted at 2: rank 0 leaves before the root entered */
    int64_t be[3] = {500, 520, 600}, bl[3] = {550, 700, 620};
    for (int r = 0; r < 3; r++) {
        size_t i = add_mpi(&run, r, XSPROF_MPI_COLL, be[r], bl[r], -1, -1, 0);
        run.ranks[r].d.mpi[i].coll = XSPROF_COLL_ONE2N;
        run.ranks[r].d.mpi[i].coll_seq = 2;
        run.ranks[r].d.mpi[i].root = 2;
    }
    CHECK(load(&run, 0) == 0);
    CHECK_EQ(run.ncolls, 2);
    CHECK_EQ(run.colls[0].n, 3);
    CHECK_EQ(run.clock.violations_before, 2); /* rank 0 and 1 left the Allreduce before rank 2 entered (wait: rank 1 350 > 300) */
    CHECK_EQ(run.clock.violations_after, 0);
    CHECK_EQ(run.ranks[0].d.mpi[0].t_end, 300);
    CHECK(run.ranks[0].d.mpi[1].t_end >= run.ranks[2].d.mpi[1].t_begin);
    xsm_run_free(&run);
}

/* A zero-byte Bcast (and a zero-count Allreduce) moves no data, so MPI lets
 * a rank leave before the root (the others) came, as Open MPI does in
 * HPL-style codes: no violation, nothing moved; the same with data is one. */
static void test_zero_bcast(void)
{
    for (int bytes = 0; bytes <= 8; bytes += 8) {
        xsm_run run;
        run_init(&run, 2);
        int64_t be[2] = {500, 100}, bl[2] = {510, 120}; /* rank 1 leaves at 120, the root (0) enters at 500 */
        int64_t ae[2] = {1000, 700}, al[2] = {1010, 710}; /* Allreduce: rank 1 leaves before rank 0 enters */
        for (int r = 0; r < 2; r++) {
            size_t i = add_mpi(&run, r, XSPROF_MPI_COLL, be[r], bl[r], -1, -1, 0);
            xsprof_io_mpi *m = &run.ranks[r].d.mpi[i];
            m->coll = XSPROF_COLL_ONE2N;
            m->coll_seq = 1;
            m->root = 0;
            m->bytes_sent = r == 0 ? (uint64_t)bytes : 0;
            m->bytes_recv = r == 0 ? 0 : (uint64_t)bytes;
            i = add_mpi(&run, r, XSPROF_MPI_COLL, ae[r], al[r], -1, -1, 0);
            m = &run.ranks[r].d.mpi[i];
            m->coll = XSPROF_COLL_NXN;
            m->coll_seq = 2;
            m->bytes_sent = m->bytes_recv = (uint64_t)bytes;
        }
        CHECK(load(&run, 0) == 0);
        CHECK_EQ(run.ncolls, 2);
        CHECK_EQ(run.clock.violations_before, bytes ? 2 : 0);
        CHECK_EQ(run.clock.violations_after, 0);
        if (!bytes) {
            CHECK_EQ(run.ranks[1].d.mpi[0].t_end, 120);
            CHECK_EQ(run.ranks[1].d.mpi[1].t_end, 710);
        } else {
            CHECK(run.ranks[1].d.mpi[0].t_end >= run.ranks[0].d.mpi[0].t_begin);
        }
        xsm_run_free(&run);
    }
}

/* Wildcard Irecv completed by a COMPLETION row; Sendrecv's receive half. */
static void test_match(void)
{
    xsm_run run;
    run_init(&run, 2);
    /* rank 0: Irecv(ANY_SOURCE, ANY_TAG) req 5, then Wait with the completion */
    size_t post = add_mpi(&run, 0, XSPROF_MPI_IRECV, 10, 20, -1, -1, 0);
    run.ranks[0].d.mpi[post].request = 5;
    run.ranks[0].d.mpi[post].flags = XSPROF_MPI_F_WILDCARD_SRC | XSPROF_MPI_F_WILDCARD_TAG;
    size_t wait = add_mpi(&run, 0, XSPROF_MPI_WAIT, 30, 90, -1, -1, 0);
    size_t comp = add_mpi(&run, 0, XSPROF_MPI_COMPLETION, 85, 85, 1, 44, 1);
    run.ranks[0].d.mpi[comp].request = 5;
    run.ranks[0].d.mpi[comp].flags = XSPROF_MPI_F_RECV;
    /* rank 0 then Sendrecv with rank 1: sends tag 6, receives tag 6 */
    size_t sr0 = add_mpi(&run, 0, XSPROF_MPI_SENDRECV, 100, 150, 1, 6, 1);
    size_t sr0c = add_mpi(&run, 0, XSPROF_MPI_COMPLETION, 150, 150, 1, 6, 1);
    run.ranks[0].d.mpi[sr0c].flags = XSPROF_MPI_F_RECV;
    /* rank 1: Send tag 44, then its Sendrecv */
    size_t s1 = add_mpi(&run, 1, XSPROF_MPI_SEND, 40, 50, 0, 44, 1);
    size_t sr1 = add_mpi(&run, 1, XSPROF_MPI_SENDRECV, 105, 140, 0, 6, 1);
    size_t sr1c = add_mpi(&run, 1, XSPROF_MPI_COMPLETION, 140, 140, 0, 6, 1);
    run.ranks[1].d.mpi[sr1c].flags = XSPROF_MPI_F_RECV;
    CHECK(load(&run, 0) == 0);
    CHECK_EQ(run.nmsgs, 3);
    CHECK_EQ(run.unmatched_sends, 0);
    CHECK_EQ(run.unmatched_recvs, 0);
    /* sorted by (src, send_row) */
    CHECK_EQ(run.msgs[0].src, 0);
    CHECK_EQ(run.msgs[0].send_row, sr0);
    CHECK_EQ(run.msgs[0].recv_row, sr1c);
    CHECK_EQ(run.msgs[0].recv_call_row, sr1);
    CHECK_EQ(run.msgs[1].src, 1);
    CHECK_EQ(run.msgs[1].send_row, s1);
    CHECK_EQ(run.msgs[1].recv_row, comp);
    CHECK_EQ(run.msgs[1].recv_post_row, (int64_t)post);
    CHECK_EQ(run.msgs[1].recv_call_row, wait);
    CHECK_EQ(run.msgs[1].tag, 44);
    CHECK_EQ(run.msgs[2].send_row, sr1);
    CHECK_EQ(run.msgs[2].recv_row, sr0c);
    CHECK_EQ(run.msgs[2].recv_call_row, sr0);

    /* window: keep [95, 200] -> only the Sendrecv rows survive, remapped */
    char err[256];
    CHECK(xsm_select_window(&run, 95, 200, err, sizeof err) == 0);
    CHECK_EQ(run.nmsgs, 2);
    CHECK_EQ(run.ranks[0].d.nmpi, 2);
    CHECK_EQ(run.msgs[0].send_row, 0);
    CHECK_EQ(run.msgs[0].recv_call_row, 0);
    CHECK_EQ(run.msgs[1].recv_row, 1);
    xsm_run_free(&run);
}

/* An unmatched send and an Irecv never completed are counted. */
static void test_unmatched(void)
{
    xsm_run run;
    run_init(&run, 2);
    add_mpi(&run, 0, XSPROF_MPI_SEND, 10, 20, 1, 3, 1);
    size_t p = add_mpi(&run, 1, XSPROF_MPI_IRECV, 10, 20, 0, 4, 0);
    run.ranks[1].d.mpi[p].request = 9;
    CHECK(load(&run, 0) == 0);
    CHECK_EQ(run.nmsgs, 0);
    CHECK_EQ(run.unmatched_sends, 1);
    CHECK_EQ(run.unmatched_recvs, 1);
    xsm_run_free(&run);
}

/* Nonblocking collectives match by (comm, coll_seq); their exit is the
 * COMPLETION of the request: rank 0 completes before rank 1 entered. Without
 * a recorded completion there is no constraint. */
static void test_icoll(void)
{
    xsm_run run;
    run_init(&run, 2);
    int64_t b[2] = {100, 500}, e[2] = {110, 510};
    for (int r = 0; r < 2; r++) {
        size_t i = add_mpi(&run, r, XSPROF_MPI_ICOLL, b[r], e[r], -1, -1, 0);
        run.ranks[r].d.mpi[i].coll = XSPROF_COLL_NXN;
        run.ranks[r].d.mpi[i].coll_seq = 1;
        run.ranks[r].d.mpi[i].request = 7;
    }
    size_t w0 = add_mpi(&run, 0, XSPROF_MPI_WAIT, 140, 160, -1, -1, 0);
    size_t c0 = add_mpi(&run, 0, XSPROF_MPI_COMPLETION, 150, 150, -1, -1, 0);
    run.ranks[0].d.mpi[c0].request = 7;
    size_t c1 = add_mpi(&run, 1, XSPROF_MPI_COMPLETION, 600, 600, -1, -1, 0);
    run.ranks[1].d.mpi[c1].request = 7;
    CHECK(load(&run, 0) == 0);
    CHECK_EQ(run.ncolls, 1);
    CHECK_EQ(run.colls[0].n, 2);
    CHECK_EQ(run.clock.violations_before, 1);
    CHECK_EQ(run.clock.violations_after, 0);
    CHECK(run.ranks[0].d.mpi[c0].t_end >= 500);
    CHECK(run.ranks[0].d.mpi[w0].t_end >= run.ranks[0].d.mpi[c0].t_end); /* the Wait still holds it */
    CHECK_EQ(run.ranks[0].d.mpi[0].t_begin, 100); /* an entry others depend on stays put */
    xsm_run_free(&run);

    /* no completion recorded: matched, but no constraint */
    run_init(&run, 2);
    for (int r = 0; r < 2; r++) {
        size_t i = add_mpi(&run, r, XSPROF_MPI_ICOLL, b[r], e[r], -1, -1, 0);
        run.ranks[r].d.mpi[i].coll = XSPROF_COLL_NXN;
        run.ranks[r].d.mpi[i].coll_seq = 1;
    }
    CHECK(load(&run, 0) == 0);
    CHECK_EQ(run.ncolls, 1);
    CHECK_EQ(run.clock.violations_before, 0);
    CHECK_EQ(run.ranks[0].d.mpi[0].t_end, 110);
    xsm_run_free(&run);
}

/* A merging process shares the node's CPUs with the merge's other
 * processes there, and never takes more than the CPUs it may run on (a
 * launcher that binds it has shared them out already). */
static void test_cpu_share(void)
{
    cpu_set_t all, one;
    if (sched_getaffinity(0, sizeof all, &all) != 0)
        return;
    int n = CPU_COUNT(&all) < 8 ? CPU_COUNT(&all) : 8;
    CHECK_EQ(xsm_cpu_share(1), n);
    CHECK_EQ(xsm_cpu_share(1000), 1);
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all)) {
            CPU_SET(c, &one);
            break;
        }
    if (sched_setaffinity(0, sizeof one, &one) == 0) {
        CHECK_EQ(xsm_cpu_share(1), 1); /* bound to one core: one thread, whatever the node has */
        sched_setaffinity(0, sizeof all, &all);
    }
}

/* The byte at pos of block k: every block and place differ. */
static unsigned char place_byte(size_t k, uint64_t pos) { return (unsigned char)(((pos * 2654435761u) >> 13) ^ (k * 77)); }

typedef struct place_job {
    xsm_place *pl;
    size_t k;
    uint64_t size;
    int help;
} place_job;

/* One block's writer: pieces of 1 B to 1.5 MB, as the encoders hand over. */
static void *place_writer(void *arg)
{
    place_job *j = arg;
    FILE *f = xsm_place_file(j->pl, j->k);
    unsigned char *buf = malloc(3u << 19);
    uint64_t pos = 0, seed = j->k + 1;
    while (f && buf && pos < j->size) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        size_t n = (size_t)(seed >> 33) % (3u << 19) + 1;
        if (seed % 7 == 0)
            n = seed % 13 + 1;
        if (n > j->size - pos)
            n = (size_t)(j->size - pos);
        for (size_t i = 0; i < n; i++)
            buf[i] = place_byte(j->k, pos + i);
        if (fwrite(buf, 1, n, f) != n)
            break;
        pos += n;
    }
    if (f)
        fflush(f);
    free(buf);
    xsm_place_finish(j->pl, j->k);
    if (j->help)
        xsm_place_help(j->pl, 1);
    return NULL;
}

static int place_spill_files(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d));)
        n += strncmp(de->d_name, ".trace.pftrace.", 15) == 0;
    if (d)
        closedir(d);
    return n;
}

/* Blocks of 20 MB, 3 MB, 0 and 11 MB with 8 MB of memory (two chunks) among
 * them, after a 100-byte head. Mode 0: blocks 1-3 are written before
 * block 0 finishes, so they wait partly in memory, partly in the spill file;
 * 1: the same with each block's place given afterwards (unchained blocks,
 * as collective mode places them: xsm_place_set_base); 2: all
 * four concurrently, threads that are done writing the others' waiting
 * bytes; 3: as 2 into a read-only file, which gives the write's error. */
static void test_place(void)
{
    static const uint64_t size[4] = {20u << 20, 3u << 20, 0, (11u << 20) + 12345};
    char dir[] = "/tmp/xsm-place-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    char path[256];
    snprintf(path, sizeof path, "%s/out", dir);
    for (int mode = 0; mode < 4; mode++) {
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        CHECK(fd >= 0 && pwrite(fd, "0123456789", 10, 90) == 10);
        if (mode == 3) {
            close(fd);
            fd = open(path, O_RDONLY);
        }
        xsm_place *pl = xsm_place_new(fd, mode == 1 ? -1 : 100, 4, mode != 1, 8u << 20, dir, 7);
        CHECK(pl != NULL);
        if (!pl)
            break;
        place_job j[4];
        pthread_t t[4];
        for (size_t k = 0; k < 4; k++)
            j[k] = (place_job){.pl = pl, .k = k, .size = size[k], .help = mode >= 2};
        for (size_t k = mode < 2; k < 4; k++)
            CHECK(pthread_create(&t[k], NULL, place_writer, &j[k]) == 0);
        if (mode < 2) { /* the later blocks first, block 0 last here */
            for (size_t k = 1; k < 4; k++)
                pthread_join(t[k], NULL);
            CHECK(place_spill_files(dir) > 0); /* 8 MB could not hold 14 MB */
            j[0].help = 1;
            place_writer(&j[0]);
        } else
            for (size_t k = 0; k < 4; k++)
                pthread_join(t[k], NULL);
        if (mode == 1) {
            struct stat st;
            CHECK(fstat(fd, &st) == 0 && st.st_size == 100); /* nothing placed yet */
            uint64_t end = 0;
            CHECK(!xsm_place_end(pl, 0, &end));
            xsm_place_set_base(pl, 0, 100); /* as collective mode passes them on */
            for (size_t k = 1; k < 4; k++) {
                CHECK(xsm_place_end(pl, k - 1, &end));
                xsm_place_set_base(pl, k, end);
            }
            xsm_place_write(pl, 2);
        }
        if (mode == 3)
            CHECK_EQ(xsm_place_error(pl), EBADF);
        else {
            CHECK_EQ(xsm_place_error(pl), 0);
            CHECK_EQ(xsm_place_size(pl), size[0] + size[1] + size[2] + size[3]);
        }
        xsm_place_free(pl);
        CHECK_EQ(place_spill_files(dir), 0);
        if (mode < 3) {
            uint64_t at = 100, bad = 0;
            unsigned char *buf = malloc(1u << 20);
            for (size_t k = 0; buf && k < 4; at += size[k], k++)
                for (uint64_t pos = 0; pos < size[k];) {
                    size_t n = size[k] - pos < (1u << 20) ? (size_t)(size[k] - pos) : 1u << 20;
                    if (pread(fd, buf, n, (off_t)(at + pos)) != (ssize_t)n) {
                        bad++;
                        break;
                    }
                    for (size_t i = 0; i < n; i++)
                        bad += buf[i] != place_byte(k, pos + i);
                    pos += n;
                }
            struct stat st;
            CHECK(fstat(fd, &st) == 0 && (uint64_t)st.st_size == at);
            CHECK_EQ(bad, 0);
            free(buf);
        }
        close(fd);
    }
    unlink(path);
    rmdir(dir);
}

/* A placed block whose writes fail (a read-only file): fwrite hands over a
 * buffer that ends right before a page nobody may touch. The block's
 * stream must report the failure without reading past the buffer (its
 * write function once returned -1, which glibc counts as SIZE_MAX bytes
 * written and then copies on past the end: a crash on a full disk). */
static void test_place_failed_write(void)
{
    char path[] = "/tmp/xsprof-place-ro-XXXXXX";
    int wfd = mkstemp(path);
    CHECK(wfd >= 0);
    if (wfd < 0)
        return;
    close(wfd);
    int fd = open(path, O_RDONLY);
    long page = sysconf(_SC_PAGESIZE);
    size_t n = 64 * (size_t)page;
    unsigned char *map = mmap(NULL, n + (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map != MAP_FAILED && fd >= 0);
    if (map != MAP_FAILED && fd >= 0) {
        mprotect(map + n, (size_t)page, PROT_NONE); /* the guard */
        memset(map, 'x', n);
        xsm_place *pl = xsm_place_new(fd, 0, 1, 1, 0, "/tmp", 0);
        FILE *f = pl ? xsm_place_file(pl, 0) : NULL;
        CHECK(f != NULL);
        if (f) {
            size_t from = 12345; /* any length, ending at the guard */
            CHECK(fwrite(map + from, 1, n - from, f) < n - from);
            xsm_place_finish(pl, 0);
            CHECK_EQ(xsm_place_error(pl), EBADF);
        }
        xsm_place_free(pl);
    }
    if (map != MAP_FAILED)
        munmap(map, n + (size_t)page);
    if (fd >= 0)
        close(fd);
    unlink(path);
}

/* ---- loading begun before MPI_Init (read/fork.c) ------------------------ */

static pid_t early_parent;
static char early_flag[256], early_started[256];
static int early_die_at = -1, early_bad = -1;

/* A fake load: entry i gets 100 * (i + 1) region rows (t_begin = i * 1000
 * + k) and the string "e<i>". The helper, having claimed entry 0, waits
 * until the parent has begun an entry, and the parent's first entry waits
 * until the helper has claimed 0 (so both load at once, and the helper
 * delivers 0); entry early_die_at kills the helper; entry early_bad is
 * unreadable wherever it is loaded. */
static void early_wait(const char *path)
{
    for (int w = 0; access(path, F_OK) != 0 && w < 10000; w++)
        usleep(1000);
}

static void early_load(const xsm_candidate *c, xsm_loaded *l)
{
    int i = c->rank;
    if (getpid() != early_parent) {
        if (i == 0) {
            close(open(early_started, O_CREAT | O_WRONLY, 0600));
            early_wait(early_flag);
        }
        if (i == early_die_at)
            _exit(3);
    } else if (access(early_flag, F_OK) != 0) {
        early_wait(early_started);
        close(open(early_flag, O_CREAT | O_WRONLY, 0600));
    }
    memset(&l->d, 0, sizeof l->d);
    l->rf = NULL;
    if (i == early_bad) {
        l->status = 1;
        snprintf(l->err, sizeof l->err, "xsmerge: entry %d unreadable", i);
        return;
    }
    l->status = 0;
    l->d.rank = i;
    l->d.nregions = 100 * (size_t)(i + 1);
    l->d.regions = calloc(l->d.nregions, sizeof *l->d.regions);
    for (size_t k = 0; k < l->d.nregions; k++)
        l->d.regions[k].t_begin = (int64_t)i * 1000 + (int64_t)k;
    l->d.strings = calloc(2, sizeof(char *));
    l->d.strings[0] = malloc(32);
    snprintf(l->d.strings[0], 32, "e%d", i);
    l->d.nstrings = 1;
}

/* Mappings of this process whose name holds `name` (a memory file's). */
static int mapped_named(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, name) != NULL;
    if (f)
        fclose(f);
    return n;
}

static int early_mapped(void) { return mapped_named("xsmerge-early"); }

static void early_case(size_t n, int step, int die_at, int bad)
{
    xsm_candidate *c = calloc(n, sizeof *c);
    unsigned char *want = calloc(n, 1);
    xsm_loaded *l = calloc(n, sizeof *l);
    for (size_t i = 0; i < n; i++) {
        c[i].rank = (int32_t)i;
        snprintf(c[i].h5, sizeof c[i].h5, "rank-%05zu.h5", i);
        want[i] = i % (size_t)step == 0;
        l[i].status = want[i] ? 0 : -1;
    }
    early_die_at = die_at;
    early_bad = bad;
    unlink(early_flag);
    unlink(early_started);
    xsm_candidate *copy = malloc(n * sizeof *copy);
    unsigned char *want_copy = malloc(n);
    memcpy(copy, c, n * sizeof *c);
    memcpy(want_copy, want, n);
    xsm_early *e = xsm_early_fork(copy, want_copy, n, 0, step, SIZE_MAX, 1u << 20, early_load); /* takes the copies */
    CHECK(e != NULL);
    if (!e)
        return;
    CHECK(xsm_early_fits(e, c, l, n, 0, step));
    CHECK(!xsm_early_fits(e, c, l, n, 1, step)); /* MPI numbered this process otherwise */
    strcpy(c[n - 1].h5, "moved.h5");
    CHECK(!xsm_early_fits(e, c, l, n, 0, step)); /* the directory changed */
    CHECK_EQ(xsm_early_finish(e, l, n, early_load, NULL), 0);
    for (size_t i = 0; i < n; i++) {
        if (!want[i]) {
            CHECK_EQ(l[i].status, -1);
            continue;
        }
        if ((int)i == bad) {
            CHECK_EQ(l[i].status, 1);
            CHECK(strstr(l[i].err, "unreadable") != NULL);
            continue;
        }
        CHECK_EQ(l[i].status, 0);
        CHECK_EQ(l[i].d.rank, i);
        CHECK_EQ(l[i].d.nregions, 100 * (i + 1));
        int ok = l[i].d.regions != NULL;
        for (size_t k = 0; ok && k < l[i].d.nregions; k++)
            ok = l[i].d.regions[k].t_begin == (int64_t)(i * 1000 + k);
        CHECK(ok);
        char want_s[32];
        snprintf(want_s, sizeof want_s, "e%zu", i);
        CHECK(l[i].d.nstrings == 1 && strcmp(l[i].d.strings[0], want_s) == 0);
    }
    /* the helper delivered entry 0 (it waited for the parent, which never
     * takes an entry the helper claimed): its table lives in the mapping */
    if (die_at != 0)
        CHECK(early_mapped() > 0);
    for (size_t i = 0; i < n; i++)
        xsm_read_release(&l[i].d);
    CHECK_EQ(early_mapped(), 0); /* unmapped with its last entry */
    free(c);
    free(want);
    free(l);
    unlink(early_flag);
    unlink(early_started);
}

static void test_early(void)
{
    early_parent = getpid();
    snprintf(early_flag, sizeof early_flag, "/tmp/xsprof-early-%d", (int)getpid());
    snprintf(early_started, sizeof early_started, "/tmp/xsprof-early-started-%d", (int)getpid());
    early_case(6, 1, -1, -1); /* the parent takes 5, 4, 3 while the helper waits at 0 */
    early_case(9, 2, -1, -1); /* entries 0, 2, 4, 6, 8 are this process's */
    early_case(6, 1, 1, -1);  /* the helper dies at 1: the parent loads the rest */
    early_case(6, 1, -1, 2);  /* entry 2 cannot be read: the parent says so */
    /* cancelled before it finishes: nothing left behind */
    xsm_candidate *c = calloc(4, sizeof *c);
    unsigned char *want = calloc(4, 1);
    for (int i = 0; i < 4; i++)
        c[i].rank = i, want[i] = 1;
    unlink(early_flag); /* the helper waits at entry 0 */
    xsm_early *e = xsm_early_fork(c, want, 4, 0, 1, SIZE_MAX, 1u << 20, early_load);
    CHECK(e != NULL);
    xsm_early_cancel(e);
    CHECK_EQ(early_mapped(), 0);
    unlink(early_started);
}

/* A real load through the io reader (its tables go where the reader
 * allocates them). */
static void own_load(const xsm_candidate *c, xsm_loaded *l)
{
    char err[256];
    memset(l, 0, sizeof *l);
    l->status = xsprof_rankfile_load(c->h5, &l->d, err, sizeof err) == XSPROF_OK ? 0 : 1;
}

static int own_mapped(void) { return mapped_named("xsmerge-own"); }

/* The files the helper does not take are decoded by the process straight
 * into a memory file of its own (other processes map it as the helper's),
 * cut to what was used; with too little room the tables go to the heap. */
static void own_case(uint64_t budget, int want_mapped)
{
    char dir[] = "/tmp/xsprof-own-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    enum { N = 3 };
    xsm_candidate *c = calloc(N, sizeof *c);
    unsigned char *want = calloc(N, 1);
    xsm_loaded l[N], ref[N];
    for (int r = 0; r < N; r++) {
        xsf *f = xsf_create(dir, r, N, "own", 1000, NULL);
        for (int k = 0; k < 2000 * (r + 1); k++) {
            xsf_region(f, 0, "work", 0, 10 * k, 10 * k + 5);
            xsf_mpi(f, 0, "MPI_Send", (xsprof_rec_mpi){.t_begin = 10 * k + 5, .t_end = 10 * k + 9,
                                                        .kind = XSPROF_MPI_SEND, .peer = (r + 1) % N, .seq = (uint64_t)k + 1});
        }
        CHECK_EQ(xsf_close(f, XSPROF_JOURNAL_FINALIZED, 1), 0);
        c[r].rank = r;
        snprintf(c[r].h5, sizeof c[r].h5, "%s/rank-%05d.h5", dir, r);
        want[r] = 1;
        l[r].status = 0;
        own_load(&c[r], &ref[r]);
    }
    xsm_candidate *copy = malloc(N * sizeof *copy);
    memcpy(copy, c, N * sizeof *c);
    /* the helper may take none: this process loads all */
    xsm_early *e = xsm_early_fork(copy, want, N, 0, 1, 0, budget, own_load);
    CHECK(e != NULL);
    if (e)
        CHECK_EQ(xsm_early_finish(e, l, N, own_load, NULL), 0);
    if (want_mapped)
        CHECK(own_mapped() > 0); /* full, it may still hold the small tables */
    for (int r = 0; r < N; r++) {
        CHECK_EQ(l[r].status, 0);
        CHECK(l[r].d.nregions == ref[r].d.nregions && l[r].d.nmpi == ref[r].d.nmpi && l[r].d.nmpi == 2000u * (r + 1));
        CHECK(memcmp(l[r].d.regions, ref[r].d.regions, ref[r].d.nregions * sizeof *ref[r].d.regions) == 0);
        CHECK(memcmp(l[r].d.mpi, ref[r].d.mpi, ref[r].d.nmpi * sizeof *ref[r].d.mpi) == 0);
        int fd = -1;
        uint64_t off = 0, len = 0;
        struct stat st;
        int in = xsm_read_map_of(l[r].d.mpi, &fd, &off, &len);
        CHECK_EQ(in, want_mapped);
        /* cut to its use: another process maps it whole */
        if (in)
            CHECK(fstat(fd, &st) == 0 && (uint64_t)st.st_size == len && len < budget &&
                  off + l[r].d.nmpi * sizeof *l[r].d.mpi <= len);
    }
    for (int r = 0; r < N; r++) {
        xsm_read_release(&l[r].d);
        xsprof_rank_data_free(&ref[r].d);
        unlink(c[r].h5);
    }
    CHECK_EQ(own_mapped(), 0); /* unmapped with its last entry */
    free(c);
    rmdir(dir);
}

/* Early Scan: each member waits for the latest entry of the members
 * before it that send data (Scalasca's definition); a member that moves
 * nothing is nobody's cause, one without a position takes no part. */
typedef struct scan_seen {
    int n;
    int32_t cause[8];
    int64_t te[8];
} scan_seen;

static int scan_got(void *ctx, const xsm_cwmember *w, int kind, const xsm_cwmember *cause, int64_t tb, int64_t te)
{
    scan_seen *s = ctx;
    (void)w;
    (void)tb;
    CHECK_EQ(kind, XSM_WAIT_EARLY_SCAN);
    if (s->n < 8) {
        s->cause[s->n] = cause ? cause->rank : -1;
        s->te[s->n] = te;
    }
    s->n++;
    return 0;
}

/* The scan of members m gives `want` waits, each for rank `cause` until `until`. */
static void scan_expect(const xsm_cwmember *m, size_t n, int want, int32_t cause, int64_t until, int line)
{
    scan_seen s = {0};
    CHECK_EQ(xsm_coll_waits_find(XSPROF_COLL_SCAN, -1, m, n, scan_got, &s), 0);
    if (s.n != want)
        fprintf(stderr, "%s:%d: scan case: %d waits, expected %d\n", __FILE__, line, s.n, want), failures++;
    for (int i = 0; i < s.n && i < 8; i++)
        if (s.cause[i] != cause || s.te[i] != until)
            fprintf(stderr, "%s:%d: scan case: a wait for rank %d until %lld, expected %d until %lld\n", __FILE__, line,
                    s.cause[i], (long long)s.te[i], cause, (long long)until), failures++;
}

static void test_scan_waits(void)
{
    /* rank, arrive, has_call, call_b, call_e, receives, sends, pos, id: rank 1
     * enters last (at 500) but sends nothing (a member of no data), rank 3 has
     * no known position */
    xsm_cwmember m[5] = {{0, 100, 1, 100, 700, 1, 1, 0, 0}, {1, 500, 1, 500, 700, 1, 0, 1, 1},
                         {2, 200, 1, 200, 700, 1, 1, 2, 2}, {3, 900, 1, 900, 950, 1, 1, -1, 3},
                         {4, 300, 1, 300, 700, 1, 1, 3, 4}};
    /* rank 2 waits for rank 0 (entered at 100: no wait, before its own
     * entry), rank 4 for rank 2 (200 < 300: none either), rank 1 would have
     * waited for nobody; so: no waits at all */
    scan_expect(m, 5, 0, -1, 0, __LINE__);
    /* rank 0 late now: ranks 1, 2 and 4 wait for it until 600 */
    m[0].arrive = m[0].call_b = 600;
    scan_expect(m, 5, 3, 0, 600, __LINE__);
    /* rank 1 late and sending: rank 2 and 4 wait for it (until 650), not 0 */
    m[0].arrive = m[0].call_b = 100;
    m[1].arrive = m[1].call_b = 650;
    m[1].sends = 1;
    scan_expect(m, 5, 2, 1, 650, __LINE__);
    /* the same lateness from a member that sends nothing: nobody waits for it */
    m[1].sends = 0;
    scan_expect(m, 5, 0, -1, 0, __LINE__);
}

/* 1 when the mapping holding p lists `flag` among its VmFlags (smaps),
 * 0 when not, -1 when p is in no mapping. */
static int smaps_flag(const void *p, const char *flag)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int in = 0, found = -1;
    uintptr_t a = (uintptr_t)p;
    while (f && found < 0 && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = a >= lo && a < hi;
        else if (in && strncmp(line, "VmFlags:", 8) == 0) {
            char want[8];
            snprintf(want, sizeof want, " %s", flag);
            found = strstr(line + 8, want) != NULL;
        }
    }
    if (f)
        fclose(f);
    return found;
}

/* The big arrays' hint reaches the kernel: the mapping of an array of
 * xsm_malloc_big and one grown by xsm_reserve carry VM_HUGEPAGE ("hg")
 * where the kernel has transparent huge pages; a small array is left as
 * malloc gave it. */
static void test_huge_hint(void)
{
    if (access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK) != 0) {
        printf("no transparent huge pages here: hint not checked\n");
        return;
    }
    size_t n = (size_t)64 << 20;
    unsigned char *p = xsm_malloc_big(n);
    void *q = NULL;
    size_t cap = 0;
    CHECK(p != NULL);
    CHECK_EQ(xsm_reserve(&q, &cap, (size_t)16 << 20, 1), 0);
    if (p && q) {
        memset(p, 1, n);
        memset(q, 1, cap);
        CHECK_EQ(smaps_flag(p + n / 2, "hg"), 1);
        CHECK_EQ(smaps_flag((unsigned char *)q + cap / 2, "hg"), 1);
    }
    free(p);
    free(q);
}

int main(void)
{
    test_huge_hint();
    test_scan_waits();
    test_early();
    own_case(64u << 20, 1);
    own_case(8192, 0); /* no room: the heap, and those tables are sent */
    test_place();
    test_place_failed_write();
    test_cpu_share();
    test_icoll();
    test_interpolate();
    test_logical_prefix();
    test_logical_ramp();
    test_collectives();
    test_zero_bcast();
    test_match();
    test_unmatched();
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    else
        printf("merge stages: all checks passed\n");
    return failures ? 1 : 0;
}

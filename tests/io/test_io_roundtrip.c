/* Round trip of every record type and every attribute:
 * fixture journal -> xsprof_journal_convert -> xsprof_rankfile_load, and the
 * same journal through xsprof_journal_load; both must give exactly the rows
 * the journal holds. Leaves DIR/rank-00000.h5 for the h5dump/h5py tests.
 * usage: test_io_roundtrip DIR */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "io/reader.h"
#include "io/writer.h"
#include "io_check.h"
#include "journal_fixture.h"

#define NTHREADS 2
#define MAXROWS 4096

typedef struct expect {
    xsprof_io_region regions[NTHREADS][MAXROWS];
    size_t nregions[NTHREADS];
    xsprof_io_arg args[NTHREADS][MAXROWS];
    size_t nargs[NTHREADS];
    xsprof_io_instant instants[16];
    size_t ninstants;
    xsprof_io_counter counters[16];
    size_t ncounters;
    xsprof_io_mpi mpi[16];
    size_t nmpi;
    xsprof_io_gpu gpu[16];
    size_t ngpu;
    xsprof_io_mem mem[16];
    size_t nmem;
    xsprof_io_clock clock[16];
    size_t nclock;
} expect;

static expect E;

/* One arg record for thread t at `depth`, remembered as pending in the
 * expected model until its region completes. */
typedef struct pend {
    xsprof_io_arg a;
    uint16_t depth;
} pend;
static pend P[NTHREADS][64];
static size_t NP[NTHREADS];

static void arg(jfx *j, uint32_t t, uint16_t depth, uint32_t key, int kind, int64_t i, double d, uint32_t s,
                int ndims)
{
    xsprof_rec_arg a;
    memset(&a, 0, sizeof a);
    a.h.type = XSPROF_REC_ARG;
    a.key = key;
    a.kind = (uint16_t)kind;
    a.depth = depth;
    pend *p = &P[t][NP[t]++];
    memset(p, 0, sizeof *p);
    p->depth = depth;
    p->a.key = key;
    p->a.kind = (uint32_t)kind;
    switch (kind) {
    case XSPROF_ARG_INT: a.v.i = p->a.i = i; break;
    case XSPROF_ARG_DOUBLE: a.v.d = p->a.d = d; break;
    case XSPROF_ARG_STRING: a.v.s = p->a.s = s; break;
    default:
        a.ndims = p->a.ndims = (uint32_t)ndims;
        for (int k = 0; k < ndims; k++)
            a.v.dims[k] = p->a.dims[k] = i * (k + 1);
        break;
    }
    jfx_record(j, t, &a, sizeof a);
}

static void region(jfx *j, uint32_t t, uint16_t depth, uint32_t name, uint16_t cat, int64_t tb, int64_t te)
{
    uint32_t nargs = 0;
    for (size_t k = 0; k < NP[t]; k++)
        nargs += P[t][k].depth == depth;
    xsprof_rec_region r;
    memset(&r, 0, sizeof r);
    r.h.type = XSPROF_REC_REGION;
    r.depth = depth;
    r.category = cat;
    r.name = name;
    r.nargs = nargs;
    r.t_begin = tb;
    r.t_end = te;
    jfx_record(j, t, &r, sizeof r);
    xsprof_io_region *g = &E.regions[t][E.nregions[t]];
    memset(g, 0, sizeof *g);
    *g = (xsprof_io_region){.t_begin = tb, .t_end = te, .name = name, .thread = t, .depth = depth,
                            .category = cat, .nargs = nargs, .args = nargs ? (int64_t)E.nargs[t] : -1};
    size_t keep = 0;
    for (size_t k = 0; k < NP[t]; k++) {
        if (P[t][k].depth != depth) {
            P[t][keep++] = P[t][k];
            continue;
        }
        xsprof_io_arg *a = &E.args[t][E.nargs[t]++];
        *a = P[t][k].a;
        a->region = (int64_t)E.nregions[t];
    }
    NP[t] = keep;
    E.nregions[t]++;
}

static int eq_region(const xsprof_io_region *a, const xsprof_io_region *b)
{
    return a->t_begin == b->t_begin && a->t_end == b->t_end && a->name == b->name && a->thread == b->thread &&
           a->depth == b->depth && a->category == b->category && a->nargs == b->nargs && a->args == b->args;
}

static int eq_arg(const xsprof_io_arg *a, const xsprof_io_arg *b)
{
    return a->region == b->region && a->key == b->key && a->kind == b->kind && a->i == b->i && a->d == b->d &&
           a->s == b->s && a->ndims == b->ndims && !memcmp(a->dims, b->dims, sizeof a->dims);
}

static void build(jfx *j, uint32_t *s)
{
    /* strings: ids in s[] */
    const char *names[] = {"main", "solve", "step", "iters", "residual", "label", "phase-one", "shape",
                           "command", "./app --size 10 'quoted arg'", "mpi_version", "Open MPI v4.1.4",
                           "MPI_Send", "MPI_COMM_WORLD", "kernel_a", "worker", "0-3", "0000:3b:00.0",
                           "node-a", "temperature", "checkpoint", "custom_key", "custom value \xc3\xa9"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        s[i] = jfx_string(j, names[i]);

    xsprof_rec_thread th = {.h.type = XSPROF_REC_THREAD, .tid = 0, .os_tid = 1000, .name = s[0]};
    jfx_record(j, 0, &th, sizeof th);
    th = (xsprof_rec_thread){.h.type = XSPROF_REC_THREAD, .tid = 1, .os_tid = 1001, .name = s[15]};
    jfx_record(j, 1, &th, sizeof th);
    xsprof_rec_meta m = {.h.type = XSPROF_REC_META, .key = s[8], .value = s[9]};
    jfx_record(j, 0, &m, sizeof m);
    m = (xsprof_rec_meta){.h.type = XSPROF_REC_META, .key = s[10], .value = s[11]};
    jfx_record(j, 0, &m, sizeof m);
    m = (xsprof_rec_meta){.h.type = XSPROF_REC_META, .key = s[21], .value = s[22]};
    jfx_record(j, 1, &m, sizeof m);
    xsprof_rec_topo tp = {.h.type = XSPROF_REC_TOPO, .numa_node = 1, .cpuset = s[16], .cores = s[16],
                          .gpus = s[17], .host = s[18], .ncores_host = 64};
    jfx_record(j, 0, &tp, sizeof tp);
    xsprof_rec_comm comm;
    memset(&comm, 0, sizeof comm);
    comm.h.type = XSPROF_REC_COMM;
    comm.id = 0;
    comm.size = 3;
    comm.name = s[13];
    comm.parent = UINT32_MAX;
    const int32_t members[3] = {0, 2, 1};
    _Alignas(8) unsigned char crec[sizeof comm + sizeof members];
    memcpy(crec, &comm, sizeof comm);
    memcpy(crec + sizeof comm, members, sizeof members);
    jfx_record(j, 0, crec, sizeof crec);

    for (int k = 0; k < 2; k++) {
        xsprof_rec_clock c = {.h.type = XSPROF_REC_CLOCK, .phase = (uint32_t)(k ? XSPROF_CLOCK_FINAL : XSPROF_CLOCK_INIT),
                              .t_local = 100 + k, .offset_ns = -5000 + k, .rtt_ns = 800 + k};
        jfx_record(j, 0, &c, sizeof c);
        E.clock[E.nclock++] = (xsprof_io_clock){.t_local = c.t_local, .offset_ns = c.offset_ns, .rtt_ns = c.rtt_ns,
                                                .phase = c.phase};
    }

    /* Nested regions with every arg kind; inner regions interleave with the
     * outer region's args. Enough of them to span many chunks. */
    int64_t t = 1000000;
    for (int it = 0; it < 200; it++) {
        for (uint32_t th_id = 0; th_id < NTHREADS; th_id++) {
            int64_t t0 = t;
            arg(j, th_id, 0, s[3], XSPROF_ARG_INT, it, 0, 0, 0);
            arg(j, th_id, 1, s[4], XSPROF_ARG_DOUBLE, 0, it * 0.5, 0, 0);
            arg(j, th_id, 1, s[5], XSPROF_ARG_STRING, 0, 0, s[6], 0);
            arg(j, th_id, 2, s[7], XSPROF_ARG_SHAPE, it + 1, 0, 0, 1 + it % 8);
            region(j, th_id, 2, s[2], XSPROF_CAT_NVTX, t + 20, t + 40);
            region(j, th_id, 1, s[2], XSPROF_CAT_USER, t + 10, t + 50);
            arg(j, th_id, 0, s[7], XSPROF_ARG_SHAPE, -it, 0, 0, 8);
            region(j, th_id, 1, s[1], XSPROF_CAT_MPI, t + 60, t + 70); /* no args */
            region(j, th_id, 0, s[1], XSPROF_CAT_USER, t0, t + 100);
            t += 137;
        }
    }

    xsprof_rec_instant in = {.h.type = XSPROF_REC_INSTANT, .name = s[20], .t = 5555};
    jfx_record(j, 1, &in, sizeof in);
    E.instants[E.ninstants++] = (xsprof_io_instant){.t = 5555, .name = s[20], .thread = 1};
    xsprof_rec_counter ct = {.h.type = XSPROF_REC_COUNTER, .name = s[19], .t = 6666, .value = 36.6};
    jfx_record(j, 0, &ct, sizeof ct);
    E.counters[E.ncounters++] = (xsprof_io_counter){.t = 6666, .value = 36.6, .name = s[19], .thread = 0};

    xsprof_rec_mpi mp;
    memset(&mp, 0, sizeof mp);
    mp.h.type = XSPROF_REC_MPI;
    mp.op = s[12];
    mp.t_begin = 7000;
    mp.t_end = 7100;
    mp.comm = 0;
    mp.peer = 2;
    mp.tag = 42;
    mp.root = XSPROF_MPI_NONE;
    mp.bytes_sent = 1ull << 40;
    mp.bytes_recv = 3;
    mp.request = 99;
    mp.seq = 7;
    mp.coll_seq = 8;
    mp.kind = XSPROF_MPI_ISEND;
    mp.coll = XSPROF_COLL_NONE;
    mp.flags = XSPROF_MPI_F_PERSISTENT | XSPROF_MPI_F_WILDCARD_TAG;
    mp.count = 5;
    jfx_record(j, 0, &mp, sizeof mp);
    E.mpi[E.nmpi++] = (xsprof_io_mpi){.t_begin = 7000, .t_end = 7100, .op = s[12], .thread = 0, .comm = 0, .peer = 2,
                                      .tag = 42, .root = XSPROF_MPI_NONE, .bytes_sent = 1ull << 40, .bytes_recv = 3,
                                      .request = 99, .seq = 7, .coll_seq = 8, .kind = XSPROF_MPI_ISEND,
                                      .coll = XSPROF_COLL_NONE, .flags = mp.flags, .count = 5};

    xsprof_rec_gpu g;
    memset(&g, 0, sizeof g);
    g.h.type = XSPROF_REC_GPU;
    g.name = s[14];
    g.t_begin = 8000;
    g.t_end = 9000;
    g.kind = XSPROF_GPU_KERNEL;
    g.device = 1;
    g.stream = 7;
    g.correlation = 1234;
    g.bytes = 0;
    g.context = 3;
    g.grid[0] = 10, g.grid[1] = 20, g.grid[2] = 30;
    g.block[0] = 128, g.block[1] = 2, g.block[2] = 1;
    g.shared_mem = 4096;
    g.registers = 32;
    g.thread = 1;
    jfx_record(j, 1, &g, sizeof g);
    xsprof_io_gpu *eg = &E.gpu[E.ngpu++];
    *eg = (xsprof_io_gpu){.t_begin = 8000, .t_end = 9000, .name = s[14], .kind = XSPROF_GPU_KERNEL, .device = 1,
                          .stream = 7, .correlation = 1234, .context = 3, .bytes = 0, .shared_mem = 4096,
                          .registers = 32, .thread = 1};
    memcpy(eg->grid, g.grid, sizeof g.grid);
    memcpy(eg->block, g.block, sizeof g.block);

    xsprof_rec_mem me = {.h.type = XSPROF_REC_MEM, .kind = XSPROF_MEM_ALLOC, .device = -1, .t = 9100,
                         .ptr = 0xdeadbeef000ull, .size = 1ull << 33};
    jfx_record(j, 0, &me, sizeof me);
    E.mem[E.nmem++] = (xsprof_io_mem){.t = 9100, .ptr = 0xdeadbeef000ull, .size = 1ull << 33, .thread = 0,
                                      .kind = XSPROF_MEM_ALLOC, .device = -1};
    me = (xsprof_rec_mem){.h.type = XSPROF_REC_MEM, .kind = XSPROF_MEM_FREE, .device = 2, .t = 9200,
                          .ptr = 0xdeadbeef000ull, .size = 0};
    jfx_record(j, 0, &me, sizeof me);
    E.mem[E.nmem++] = (xsprof_io_mem){.t = 9200, .ptr = 0xdeadbeef000ull, .size = 0, .thread = 0,
                                      .kind = XSPROF_MEM_FREE, .device = 2};

    xsprof_rec_drop dr = {.h.type = XSPROF_REC_DROP, .tid = 1, .dropped = 3};
    jfx_record(j, 1, &dr, sizeof dr);
    dr.dropped = 7; /* cumulative: the largest wins */
    jfx_record(j, 1, &dr, sizeof dr);

    xsprof_journal_header *h = jfx_header(j);
    h->rank = 3;
    h->size = 8;
    h->pid = 123456789;
    h->start_realtime_ns = 1763700000123456789ll;
    h->start_clock_ns = 987654321;
    h->dropped = 7;
    h->anomalies = 2;
    snprintf(h->job_id, sizeof h->job_id, "job-77");
    snprintf(h->host, sizeof h->host, "node-a");
    snprintf(h->clock_source, sizeof h->clock_source, "CLOCK_MONOTONIC_RAW");
    snprintf(h->xsprof_version, sizeof h->xsprof_version, "0.1.0");
    h->state = XSPROF_JOURNAL_RUNNING;
}

static void check_data(const char *what, const xsprof_rank_data *d, const uint32_t *s, int from_journal)
{
    CHECK(d->rank == 3 && d->size == 8 && d->pid == 123456789, "%s: identity %d/%d pid %lld", what, d->rank,
          d->size, (long long)d->pid);
    CHECK(d->format_version == XSPROF_FORMAT_VERSION, "%s: format_version %d", what, d->format_version);
    CHECK(!strcmp(d->host, "node-a"), "%s: host %s", what, d->host);
    CHECK(!strcmp(d->job_id, "job-77"), "%s: job_id %s", what, d->job_id);
    CHECK(!strcmp(d->command, "./app --size 10 'quoted arg'"), "%s: command %s", what, d->command);
    CHECK(!strcmp(d->clock_source, "CLOCK_MONOTONIC_RAW"), "%s: clock_source %s", what, d->clock_source);
    CHECK(!strcmp(d->xsprof_version, "0.1.0"), "%s: xsprof_version %s", what, d->xsprof_version);
    CHECK(!strcmp(d->mpi_version, "Open MPI v4.1.4"), "%s: mpi_version %s", what, d->mpi_version);
    CHECK(d->start_realtime_ns == 1763700000123456789ll && d->start_clock_ns == 987654321, "%s: start times",
          what);
    CHECK(d->dropped == 7 && d->anomalies == 2, "%s: dropped %llu anomalies %llu", what,
          (unsigned long long)d->dropped, (unsigned long long)d->anomalies);
    if (from_journal) {
        CHECK(d->truncated == 1 && d->recovered == 1, "%s: truncated %d recovered %d", what, d->truncated,
              d->recovered);
        CHECK(!strcmp(d->end_state, "killed (no handler ran)"), "%s: end_state %s", what, d->end_state);
    } else {
        CHECK(d->truncated == 0 && d->recovered == 0, "%s: truncated %d recovered %d", what, d->truncated,
              d->recovered);
        CHECK(!strcmp(d->end_state, "finalized"), "%s: end_state %s", what, d->end_state);
    }
    CHECK(d->nstrings == 23, "%s: nstrings %u", what, d->nstrings);
    CHECK(!strcmp(xsprof_rank_data_string(d, s[22]), "custom value \xc3\xa9"), "%s: utf-8 string", what);
    CHECK(!strcmp(xsprof_rank_data_string(d, 100000), "?"), "%s: string out of range", what);

    /* regions and args: thread 0 then thread 1, indices shifted */
    size_t nr = E.nregions[0] + E.nregions[1], na = E.nargs[0] + E.nargs[1];
    CHECK(d->nregions == nr && d->nargs == na, "%s: %zu regions %zu args, expected %zu %zu", what, d->nregions,
          d->nargs, nr, na);
    if (d->nregions == nr && d->nargs == na) {
        size_t bad = 0;
        for (uint32_t t = 0; t < NTHREADS; t++) {
            size_t r0 = t ? E.nregions[0] : 0, a0 = t ? E.nargs[0] : 0;
            for (size_t i = 0; i < E.nregions[t]; i++) {
                xsprof_io_region x = E.regions[t][i];
                if (x.args >= 0)
                    x.args += (int64_t)a0;
                bad += !eq_region(&x, &d->regions[r0 + i]);
            }
            for (size_t i = 0; i < E.nargs[t]; i++) {
                xsprof_io_arg x = E.args[t][i];
                x.region += (int64_t)r0;
                bad += !eq_arg(&x, &d->args[a0 + i]);
            }
        }
        CHECK(bad == 0, "%s: %zu region/arg rows differ", what, bad);
    }
    CHECK(d->ninstants == 1 && d->instants[0].t == E.instants[0].t && d->instants[0].name == E.instants[0].name &&
              d->instants[0].thread == 1,
          "%s: instants", what);
    CHECK(d->ncounters == 1 && !memcmp(&d->counters[0], &E.counters[0], sizeof E.counters[0]), "%s: counters",
          what);
    CHECK(d->nmpi == 1 && !memcmp(&d->mpi[0], &E.mpi[0], sizeof E.mpi[0]), "%s: mpi", what);
    if (d->ngpu == 1) {
        const xsprof_io_gpu *a = &d->gpu[0], *b = &E.gpu[0];
        CHECK(a->t_begin == b->t_begin && a->t_end == b->t_end && a->name == b->name && a->kind == b->kind &&
                  a->device == b->device && a->stream == b->stream && a->correlation == b->correlation &&
                  a->context == b->context && a->bytes == b->bytes && !memcmp(a->grid, b->grid, sizeof a->grid) &&
                  !memcmp(a->block, b->block, sizeof a->block) && a->shared_mem == b->shared_mem &&
                  a->registers == b->registers && a->thread == b->thread,
              "%s: gpu row", what);
    } else
        CHECK(0, "%s: ngpu %zu", what, d->ngpu);
    CHECK(d->nmem == 2 && !memcmp(d->mem, E.mem, 2 * sizeof E.mem[0]), "%s: mem", what);
    CHECK(d->nclock == 2, "%s: nclock %zu", what, d->nclock);
    for (size_t i = 0; i < d->nclock && i < 2; i++)
        CHECK(d->clock[i].t_local == E.clock[i].t_local && d->clock[i].offset_ns == E.clock[i].offset_ns &&
                  d->clock[i].rtt_ns == E.clock[i].rtt_ns && d->clock[i].phase == E.clock[i].phase,
              "%s: clock row %zu", what, i);
    CHECK(d->nthreads == 2, "%s: nthreads %zu", what, d->nthreads);
    if (d->nthreads == 2) {
        CHECK(d->threads[0].tid == 0 && d->threads[0].os_tid == 1000 && d->threads[0].name == s[0] &&
                  d->threads[0].dropped == 0,
              "%s: thread 0", what);
        CHECK(d->threads[1].tid == 1 && d->threads[1].os_tid == 1001 && d->threads[1].name == s[15] &&
                  d->threads[1].dropped == 7,
              "%s: thread 1", what);
    }
    CHECK(d->ncomms == 1 && d->ncomm_members == 3, "%s: comms %zu members %zu", what, d->ncomms, d->ncomm_members);
    if (d->ncomms == 1 && d->ncomm_members == 3)
        CHECK(d->comms[0].id == 0 && d->comms[0].size == 3 && d->comms[0].name == s[13] &&
                  d->comms[0].parent == UINT32_MAX && d->comms[0].members == 0 && d->comm_members[0] == 0 &&
                  d->comm_members[1] == 2 && d->comm_members[2] == 1,
              "%s: comm row", what);
    CHECK(d->ntopo == 1 && d->topo[0].numa_node == 1 && d->topo[0].ncores_host == 64 &&
              d->topo[0].cpuset == s[16] && d->topo[0].cores == s[16] && d->topo[0].gpus == s[17] &&
              d->topo[0].host == s[18],
          "%s: topology", what);
    CHECK(d->nmeta == 3, "%s: nmeta %zu", what, d->nmeta);
    if (d->nmeta == 3)
        CHECK(d->meta[0].key == s[8] && d->meta[0].value == s[9] && d->meta[1].key == s[10] &&
                  d->meta[2].key == s[21] && d->meta[2].value == s[22],
              "%s: metadata rows", what);
}

/* The library from several threads at once: loads and conversions of the
 * same journal must all give the same data (HDF5 is thread-safe; each
 * thread silences and restores only its own error printing). */
typedef struct par_job {
    const char *jpath, *hpath;
    char out[4096];
    int failures;
} par_job;

static void *par_main(void *arg)
{
    par_job *p = arg;
    char err[1024];
    for (int k = 0; k < 5; k++) {
        xsprof_rank_data d;
        unlink(p->out);
        size_t want = E.nregions[0] + E.nregions[1];
        if (xsprof_journal_convert(p->jpath, p->out, "finalized", err, sizeof err) != XSPROF_OK)
            p->failures++;
        if (xsprof_rankfile_load(p->out, &d, err, sizeof err) != XSPROF_OK || d.nregions != want)
            p->failures++;
        xsprof_rank_data_free(&d);
        if (xsprof_rankfile_load(p->hpath, &d, err, sizeof err) != XSPROF_OK || d.nregions != want)
            p->failures++;
        xsprof_rank_data_free(&d);
        if (xsprof_journal_load(p->jpath, &d, err, sizeof err) != XSPROF_OK || d.nregions != want)
            p->failures++;
        xsprof_rank_data_free(&d);
    }
    unlink(p->out);
    return NULL;
}

static void check_parallel(const char *dir, const char *jpath, const char *hpath)
{
    enum { N = 4 };
    par_job jobs[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        jobs[i] = (par_job){.jpath = jpath, .hpath = hpath};
        snprintf(jobs[i].out, sizeof jobs[i].out, "%.4000s/par-%d.h5", dir, i);
        pthread_create(&th[i], NULL, par_main, &jobs[i]);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        CHECK(jobs[i].failures == 0, "thread %d: %d failed loads or conversions", i, jobs[i].failures);
    }
}

/* Thousands of strings, one of them long: the strings table is read in
 * blocks of 1024 rows as wide as the longest string. */
static void check_many_strings(const char *dir)
{
    char jpath[4096], hpath[4096], err[1024], buf[2100];
    snprintf(jpath, sizeof jpath, "%.4000s/strings.xsj", dir);
    snprintf(hpath, sizeof hpath, "%.4000s/strings.h5", dir);
    unlink(jpath);
    unlink(hpath);
    jfx *j = jfx_create(4096);
    for (int i = 0; i < 3000; i++) {
        if (i == 1500) {
            memset(buf, 'x', 2000);
            buf[2000] = 0;
        } else
            snprintf(buf, sizeof buf, "name-%d", i);
        jfx_string(j, buf);
    }
    jfx_region(j, 0, 0, 2999, 0, 1, 2);
    CHECK(jfx_write(j, jpath, 0) == 0, "write %s", jpath);
    jfx_free(j);
    xsprof_status st = xsprof_journal_convert(jpath, hpath, "finalized", err, sizeof err);
    CHECK(st == XSPROF_OK, "convert strings: %s", err);
    xsprof_rank_data d;
    st = xsprof_rankfile_load(hpath, &d, err, sizeof err);
    CHECK(st == XSPROF_OK && d.nstrings == 3000, "load strings: %d %u %s", st, d.nstrings, err);
    int bad = 0;
    for (uint32_t i = 0; st == XSPROF_OK && i < d.nstrings; i++) {
        if (i == 1500)
            bad += strlen(d.strings[i]) != 2000 || d.strings[i][1999] != 'x';
        else {
            snprintf(buf, sizeof buf, "name-%u", i);
            bad += strcmp(d.strings[i], buf) != 0;
        }
    }
    CHECK(bad == 0, "%d strings differ", bad);
    CHECK(st != XSPROF_OK || !strcmp(xsprof_rank_data_string(&d, d.regions[0].name), "name-2999"), "region name");
    xsprof_rank_data_free(&d);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    char jpath[4096], hpath[4096], err[1024];
    mkdir(argv[1], 0777);
    snprintf(jpath, sizeof jpath, "%s/rank-00003.xsj", argv[1]);
    snprintf(hpath, sizeof hpath, "%s/rank-00003.h5", argv[1]);
    unlink(jpath);
    unlink(hpath);

    jfx *j = jfx_create(1024); /* small chunks: every thread spans many */
    uint32_t s[32];
    build(j, s);
    CHECK(jfx_nchunks(j) > 20, "only %llu chunks", (unsigned long long)jfx_nchunks(j));
    CHECK(jfx_write(j, jpath, 3) == 0, "cannot write %s", jpath);
    jfx_free(j);

    /* The application's HDF5 error printing is left as it was. */
    H5E_auto2_t fn0 = NULL, fn1 = NULL;
    void *data0 = NULL, *data1 = NULL;
    H5Eget_auto2(H5E_DEFAULT, &fn0, &data0);
    xsprof_status st = xsprof_journal_convert(jpath, hpath, "finalized", err, sizeof err);
    CHECK(st == XSPROF_OK, "convert: %d %s", st, err);
    xsprof_rank_data d;
    st = xsprof_rankfile_load(hpath, &d, err, sizeof err);
    CHECK(st == XSPROF_OK, "rankfile_load: %d %s", st, err);
    H5Eget_auto2(H5E_DEFAULT, &fn1, &data1);
    CHECK(fn0 && fn0 == fn1 && data0 == data1, "HDF5 error printing changed");
    if (st == XSPROF_OK)
        check_data("rankfile", &d, s, 0);
    CHECK(!strcmp(d.path, hpath), "path %s", d.path);
    xsprof_rank_data_free(&d);

    st = xsprof_journal_load(jpath, &d, err, sizeof err);
    CHECK(st == XSPROF_OK, "journal_load: %d %s", st, err);
    if (st == XSPROF_OK)
        check_data("journal", &d, s, 1);
    xsprof_rank_data_free(&d);
    xsprof_rank_data_free(&d); /* freeing twice is safe: free empties */

    check_parallel(argv[1], jpath, hpath);
    check_many_strings(argv[1]);

    /* A second conversion to the same path must refuse to overwrite. */
    st = xsprof_journal_convert(jpath, hpath, "finalized", err, sizeof err);
    CHECK(st == XSPROF_ERR_IO && strstr(err, hpath) && strstr(err, "exists"), "overwrite: %d %s", st, err);
    return io_check_result("test_io_roundtrip");
}

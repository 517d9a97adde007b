/* tests/fuzz/make_seeds.c — writes the seed corpus of the file readers:
 * small journals laid out exactly as core/journal.h says (a small string
 * area and 256-byte chunks keep the seeds a few KB), and the rank files the
 * io writer converts them into (xsprof_journal_convert).
 *   make_seeds OUT_DIR   writes OUT_DIR/journal/NAME.xsj and OUT_DIR/rankfile/NAME.h5
 * The checked-in corpus (tests/fuzz/corpus/) was made with it; the test
 * fuzz.seeds_current regenerates it and checks every seed still loads. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/journal.h"
#include "core/record.h"
#include "core/record_pack.h"
#include "io/reader.h"
#include "io/writer.h"

#define SJ_STRINGS 1024u
#define SJ_CHUNK 256u
#define SJ_MAXCHUNKS 64
#define SJ_THREADS 4

typedef struct sj {
    xsprof_journal_header h;
    unsigned char strings[SJ_STRINGS];
    unsigned char chunks[SJ_MAXCHUNKS][SJ_CHUNK];
    unsigned nchunks;
    int cur[SJ_THREADS];
    uint64_t seq[SJ_THREADS];
    uint32_t nstr;
} sj;

static void die(const char *what)
{
    fprintf(stderr, "make_seeds: %s\n", what);
    exit(1);
}

static void sj_init(sj *j, int rank, int size, uint32_t state, int32_t sig)
{
    memset(j, 0, sizeof *j);
    memcpy(j->h.magic, XSPROF_JOURNAL_MAGIC, 8);
    j->h.version = XSPROF_JOURNAL_VERSION;
    j->h.header_size = XSPROF_JOURNAL_HEADER_SIZE;
    j->h.chunk_size = SJ_CHUNK;
    j->h.state = state;
    j->h.signal = sig;
    j->h.rank = rank;
    j->h.size = size;
    j->h.pid = 1000 + rank;
    j->h.start_realtime_ns = 1700000000000000000LL;
    j->h.start_clock_ns = 5000000000LL;
    j->h.strings_offset = XSPROF_JOURNAL_HEADER_SIZE;
    j->h.strings_capacity = SJ_STRINGS;
    j->h.chunks_offset = XSPROF_JOURNAL_HEADER_SIZE + SJ_STRINGS;
    snprintf(j->h.job_id, sizeof j->h.job_id, "seed-job");
    snprintf(j->h.host, sizeof j->h.host, "seed-host");
    snprintf(j->h.clock_source, sizeof j->h.clock_source, "CLOCK_MONOTONIC");
    snprintf(j->h.xsprof_version, sizeof j->h.xsprof_version, "0.1.0");
    for (int i = 0; i < SJ_THREADS; i++)
        j->cur[i] = -1;
}

static uint32_t sj_str(sj *j, const char *s)
{
    uint32_t len = (uint32_t)strlen(s), id = j->nstr;
    uint64_t need = 8 + ((len + 3u) & ~3u);
    if (j->h.strings_used + need > SJ_STRINGS)
        die("string area full");
    unsigned char *p = j->strings + j->h.strings_used;
    memcpy(p, &id, 4);
    memcpy(p + 4, &len, 4);
    memcpy(p + 8, s, len);
    j->h.strings_used += need;
    j->nstr++;
    return id;
}

static void sj_rec(sj *j, uint32_t tid, void *rec, uint32_t raw)
{
    uint16_t size = xsprof_rec_size(raw);
    ((xsprof_rec_hdr *)rec)->size = size;
    int c = j->cur[tid];
    xsprof_chunk_header *ch = c >= 0 ? (xsprof_chunk_header *)j->chunks[c] : NULL;
    if (!ch || sizeof *ch + ch->used + size > SJ_CHUNK) {
        if (ch)
            ch->state = XSPROF_CHUNK_FULL;
        if (j->nchunks == SJ_MAXCHUNKS)
            die("too many chunks");
        c = j->cur[tid] = (int)j->nchunks++;
        ch = (xsprof_chunk_header *)j->chunks[c];
        ch->magic = XSPROF_CHUNK_MAGIC;
        ch->state = XSPROF_CHUNK_ACTIVE;
        ch->tid = tid;
        ch->seq = j->seq[tid]++;
    }
    memset(j->chunks[c] + sizeof *ch + ch->used, 0, size);
    memcpy(j->chunks[c] + sizeof *ch + ch->used, rec, raw);
    ch->used += size;
}

static void sj_region(sj *j, uint32_t tid, uint16_t depth, uint16_t cat, uint32_t name, uint32_t nargs, int64_t tb,
                      int64_t te)
{
    xsprof_rec_region r = {.h = {XSPROF_REC_REGION, 0}, .depth = depth, .category = cat, .name = name,
                           .nargs = nargs, .t_begin = tb, .t_end = te};
    sj_rec(j, tid, &r, sizeof r);
}

static void sj_arg(sj *j, uint32_t tid, uint16_t depth, uint32_t key, uint16_t kind, int64_t v)
{
    xsprof_rec_arg a;
    memset(&a, 0, sizeof a);
    a.h.type = XSPROF_REC_ARG;
    a.key = key;
    a.kind = kind;
    a.depth = depth;
    switch (kind) {
    case XSPROF_ARG_DOUBLE: a.v.d = (double)v / 3.0; break;
    case XSPROF_ARG_STRING: a.v.s = (uint32_t)v; break;
    case XSPROF_ARG_SHAPE:
        a.ndims = 3;
        for (int k = 0; k < 3; k++)
            a.v.dims[k] = v + k;
        break;
    default: a.v.i = v; break;
    }
    sj_rec(j, tid, &a, sizeof a);
}

static void sj_thread(sj *j, uint32_t tid, const char *name)
{
    xsprof_rec_thread t = {.h = {XSPROF_REC_THREAD, 0}, .tid = tid, .os_tid = 4000 + (int32_t)tid,
                           .name = sj_str(j, name)};
    sj_rec(j, tid, &t, sizeof t);
}

static void sj_write(const sj *j, const char *path, unsigned free_chunks, size_t cut)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        die(strerror(errno));
    unsigned char pad[XSPROF_JOURNAL_HEADER_SIZE];
    memset(pad, 0, sizeof pad);
    memcpy(pad, &j->h, sizeof j->h);
    size_t total = sizeof pad + SJ_STRINGS + (size_t)(j->nchunks + free_chunks) * SJ_CHUNK;
    unsigned char *all = calloc(1, total);
    if (!all)
        die("out of memory");
    memcpy(all, pad, sizeof pad);
    memcpy(all + sizeof pad, j->strings, SJ_STRINGS);
    memcpy(all + sizeof pad + SJ_STRINGS, j->chunks, (size_t)j->nchunks * SJ_CHUNK);
    if (cut && cut < total)
        total = cut;
    if (fwrite(all, 1, total, f) != total || fclose(f))
        die("write failed");
    free(all);
}

/* A single-threaded user program: nested regions with every arg kind,
 * instants, counters, memory events, a drop record, metadata. */
static void seed_basic(sj *j)
{
    sj_init(j, 0, 1, XSPROF_JOURNAL_RUNNING, 0);
    sj_thread(j, 0, "main");
    uint32_t solve = sj_str(j, "solve"), it = sj_str(j, "iteration"), key = sj_str(j, "it");
    uint32_t dkey = sj_str(j, "resid"), skey = sj_str(j, "mode"), sval = sj_str(j, "fast"), shp = sj_str(j, "shape");
    int64_t t = 100;
    for (int i = 0; i < 3; i++) {
        sj_arg(j, 0, 1, key, XSPROF_ARG_INT, i);
        sj_arg(j, 0, 1, dkey, XSPROF_ARG_DOUBLE, i + 1);
        sj_region(j, 0, 1, XSPROF_CAT_USER, it, 2, t, t + 50);
        t += 60;
    }
    sj_arg(j, 0, 0, skey, XSPROF_ARG_STRING, sval);
    sj_arg(j, 0, 0, shp, XSPROF_ARG_SHAPE, 4);
    sj_region(j, 0, 0, XSPROF_CAT_USER, solve, 2, 90, t);
    xsprof_rec_instant in = {.h = {XSPROF_REC_INSTANT, 0}, .name = sj_str(j, "checkpoint"), .t = t + 1};
    sj_rec(j, 0, &in, sizeof in);
    xsprof_rec_counter cn = {.h = {XSPROF_REC_COUNTER, 0}, .name = sj_str(j, "residual"), .t = t + 2, .value = 0.5};
    sj_rec(j, 0, &cn, sizeof cn);
    xsprof_rec_mem m = {.h = {XSPROF_REC_MEM, 0}, .kind = XSPROF_MEM_ALLOC, .device = -1, .t = t + 3,
                        .ptr = 0x1000, .size = 4096};
    sj_rec(j, 0, &m, sizeof m);
    m.kind = XSPROF_MEM_FREE;
    m.t = t + 4;
    sj_rec(j, 0, &m, sizeof m);
    xsprof_rec_meta me = {.h = {XSPROF_REC_META, 0}, .key = sj_str(j, "command"), .value = sj_str(j, "./app -n 3")};
    sj_rec(j, 0, &me, sizeof me);
    xsprof_rec_drop dr = {.h = {XSPROF_REC_DROP, 0}, .tid = 0, .dropped = 2};
    sj_rec(j, 0, &dr, sizeof dr);
}

/* A call stack of n frames from `pc` on, written by thread tid. */
static void sj_stack(sj *j, uint32_t tid, uint32_t id, uint32_t n, uint64_t pc)
{
    uint64_t buf[2 + 4];
    xsprof_rec_stack *st = (xsprof_rec_stack *)buf;
    *st = (xsprof_rec_stack){.h = {XSPROF_REC_STACK, 0}, .id = id, .n = n};
    for (uint32_t k = 0; k < n && k < 4; k++)
        st->frames[k] = pc + 0x40 * k;
    sj_rec(j, tid, st, (uint32_t)(sizeof *st + n * sizeof(uint64_t)));
}

static void sj_module(sj *j, uint32_t tid, uint32_t id, uint32_t event, uint32_t path, uint64_t lo, int64_t t)
{
    xsprof_rec_module m = {.h = {XSPROF_REC_MODULE, 0}, .id = id, .event = event, .path = path,
                           .build_id = path + 1, .bias = lo - 0x1000, .lo = lo, .hi = lo + 0x8000, .t = t};
    sj_rec(j, tid, &m, sizeof m);
}

/* Rank 1 of 2 of an MPI + GPU program killed by SIGSEGV: communicators,
 * messages with call sites, a collective, clock samples, topology, GPU
 * activity, loaded objects (one unloaded: its GONE record on another
 * thread than its LOADED one, read first), and a second thread with a
 * region still open. */
static void seed_mpi(sj *j)
{
    sj_init(j, 1, 2, XSPROF_JOURNAL_SIGNALED, 11);
    sj_thread(j, 0, "main");
    sj_thread(j, 1, "worker");
    uint32_t world = sj_str(j, "MPI_COMM_WORLD");
    /* records with members after a flexible array: built in a buffer */
    uint64_t buf[8];
    xsprof_rec_comm *cm = (xsprof_rec_comm *)buf;
    *cm = (xsprof_rec_comm){.h = {XSPROF_REC_COMM, 0}, .id = 0, .size = 2, .name = world, .parent = UINT32_MAX};
    cm->members[0] = 0;
    cm->members[1] = 1;
    sj_rec(j, 0, cm, sizeof *cm + 2 * sizeof(int32_t));
    /* a definition continued in a COMM_MORE record (4 members, 2 + 2) */
    cm->id = 9;
    cm->size = 4;
    sj_rec(j, 0, cm, sizeof *cm + 2 * sizeof(int32_t));
    xsprof_rec_comm_more *more = (xsprof_rec_comm_more *)buf;
    *more = (xsprof_rec_comm_more){.h = {XSPROF_REC_COMM_MORE, 0}, .id = 9, .first = 2};
    more->members[0] = 1;
    more->members[1] = 0;
    sj_rec(j, 0, more, sizeof *more + 2 * sizeof(int32_t));
    xsprof_rec_clock ck = {.h = {XSPROF_REC_CLOCK, 0}, .phase = XSPROF_CLOCK_INIT, .t_local = 10, .offset_ns = -250,
                           .rtt_ns = 40};
    sj_rec(j, 0, &ck, sizeof ck);
    uint32_t send = sj_str(j, "MPI_Send"), recv = sj_str(j, "MPI_Recv"), ar = sj_str(j, "MPI_Allreduce");
    uint32_t app = sj_str(j, "/usr/bin/app");
    sj_str(j, "0011aabb");
    uint32_t lib = sj_str(j, "/opt/libplug.so");
    sj_str(j, "");
    sj_module(j, 0, 1, XSPROF_MODULE_LOADED, app, 0x400000, 5);
    sj_module(j, 0, 2, XSPROF_MODULE_GONE, lib, 0x7f0000000000, 150);
    sj_stack(j, 0, 1, 1, 0x401234);
    sj_stack(j, 0, 2, 3, 0x401300);
    /* samples of two threads written by a third (the sampler), one of a
     * stack never defined (cut off by damage in a real journal) */
    for (int i = 0; i < 3; i++) {
        xsprof_rec_sample sm = {.h = {XSPROF_REC_SAMPLE, 0}, .stack = i == 2 ? 7 : 2 - (uint32_t)i,
                                .t = 110 + 10 * i, .os_tid = 4000 + (i & 1)};
        sj_rec(j, 2, &sm, sizeof sm);
    }
    /* an allocation's stack (XSPROF_MEMORY), after its MEM record */
    xsprof_rec_mem mem = {.h = {XSPROF_REC_MEM, 0}, .kind = XSPROF_MEM_ALLOC, .device = -1, .t = 105, .ptr = 0x1000,
                          .size = 1 << 20};
    sj_rec(j, 0, &mem, sizeof mem);
    xsprof_rec_alloc_stack as = {.h = {XSPROF_REC_ALLOC_STACK, 0}, .stack = 2, .t = 105, .ptr = 0x1000};
    sj_rec(j, 0, &as, sizeof as);
    xsprof_rec_mpi mp;
    memset(&mp, 0, sizeof mp);
    mp.h.type = XSPROF_REC_MPI;
    for (int i = 0; i < 2; i++) {
        mp.op = i ? recv : send;
        mp.kind = i ? XSPROF_MPI_RECV : XSPROF_MPI_SEND;
        mp.t_begin = 100 + 40 * i;
        mp.t_end = 120 + 40 * i;
        mp.comm = 0;
        mp.peer = 0;
        mp.tag = 7;
        mp.root = XSPROF_MPI_NONE;
        mp.bytes_sent = i ? 0 : 800;
        mp.bytes_recv = i ? 800 : 0;
        mp.seq = 1;
        mp.callsite = 1 + (uint32_t)i;
        if (i) { /* the receive packed, as collectors write it */
            unsigned char pk[XSPROF_MPI_PACKED_MAX] __attribute__((aligned(8)));
            sj_rec(j, 0, pk, xsprof_rec_mpi_pack(&mp, pk));
        } else
            sj_rec(j, 0, &mp, sizeof mp);
    }
    memset(&mp, 0, sizeof mp);
    mp.h.type = XSPROF_REC_MPI;
    mp.op = ar;
    mp.kind = XSPROF_MPI_COLL;
    mp.coll = XSPROF_COLL_NXN;
    mp.t_begin = 200;
    mp.t_end = 260;
    mp.peer = mp.tag = mp.root = XSPROF_MPI_NONE;
    mp.bytes_sent = mp.bytes_recv = 8;
    mp.coll_seq = 1;
    unsigned char pk[XSPROF_MPI_PACKED_MAX] __attribute__((aligned(8)));
    sj_rec(j, 0, pk, xsprof_rec_mpi_pack(&mp, pk));
    xsprof_rec_topo tp = {.h = {XSPROF_REC_TOPO, 0}, .numa_node = 0, .cpuset = sj_str(j, "0-1"),
                          .cores = sj_str(j, "0-1"), .gpus = sj_str(j, ""), .host = sj_str(j, "seed-host"),
                          .ncores_host = 2};
    sj_rec(j, 0, &tp, sizeof tp);
    xsprof_rec_gpu g;
    memset(&g, 0, sizeof g);
    g.h.type = XSPROF_REC_GPU;
    sj_module(j, 1, 2, XSPROF_MODULE_LOADED, lib, 0x7f0000000000, 50);
    g.name = sj_str(j, "saxpy");
    g.t_begin = 300;
    g.t_end = 340;
    g.kind = XSPROF_GPU_KERNEL;
    g.correlation = 9;
    g.grid[0] = 64;
    g.block[0] = 256;
    sj_rec(j, 1, &g, sizeof g);
    g.kind = XSPROF_GPU_MEMCPY_HTOD;
    g.bytes = 1 << 20;
    g.t_begin = 280;
    g.t_end = 299;
    sj_rec(j, 1, &g, sizeof g);
    uint32_t step = sj_str(j, "step");
    for (int i = 0; i < 6; i++) /* several chunks for thread 1 */
        sj_region(j, 1, 0, XSPROF_CAT_NVTX, step, 0, 400 + 10 * i, 405 + 10 * i);
    sj_arg(j, 1, 1, sj_str(j, "orphan"), XSPROF_ARG_INT, 1); /* its region never ended */
    ck.phase = XSPROF_CLOCK_PERIODIC;
    ck.t_local = 500;
    sj_rec(j, 0, &ck, sizeof ck);
}

static void convert(const char *jpath, const char *h5path, const char *state)
{
    char err[512];
    unlink(h5path);
    if (xsprof_journal_convert(jpath, h5path, state, err, sizeof err) != XSPROF_OK) {
        fprintf(stderr, "make_seeds: convert %s: %s\n", jpath, err);
        exit(1);
    }
    xsprof_rank_data d;
    memset(&d, 0, sizeof d);
    if (xsprof_rankfile_load(h5path, &d, err, sizeof err) != XSPROF_OK) {
        fprintf(stderr, "make_seeds: reload %s: %s\n", h5path, err);
        exit(1);
    }
    /* the MPI seed's definitions survive the conversion, in id order */
    if (d.nmpi && (d.ncallstacks != 2 || d.nframes != 4 || d.nmodules != 2 || d.modules[1].t_unload != 150 ||
                   d.nsamples != 3 || d.samples[1].os_tid != 4001 || d.samples[2].stack != 7 ||
                   d.nalloc_stacks != 1 || d.alloc_stacks[0].stack != 2 || d.alloc_stacks[0].ptr != 0x1000 ||
                   d.modules[1].t_load != 50 || !xsprof_rank_data_callstack(&d, 2))) {
        fprintf(stderr, "make_seeds: %s: call stacks or modules lost\n", h5path);
        exit(1);
    }
    xsprof_rank_data_free(&d);
}

static void check_journal(const char *path)
{
    char err[512];
    xsprof_rank_data d;
    memset(&d, 0, sizeof d);
    if (xsprof_journal_load(path, &d, err, sizeof err) != XSPROF_OK || d.nregions == 0) {
        fprintf(stderr, "make_seeds: %s does not load: %s\n", path, err);
        exit(1);
    }
    xsprof_rank_data_free(&d);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_seeds OUT_DIR\n");
        return 2;
    }
    char jd[4096], rd[4096], p[4200], q[4200];
    snprintf(jd, sizeof jd, "%s/journal", argv[1]);
    snprintf(rd, sizeof rd, "%s/rankfile", argv[1]);
    mkdir(argv[1], 0777);
    mkdir(jd, 0777);
    mkdir(rd, 0777);
    static sj j;

    seed_basic(&j);
    snprintf(p, sizeof p, "%s/basic.xsj", jd);
    sj_write(&j, p, 1, 0);
    check_journal(p);
    snprintf(q, sizeof q, "%s/basic.h5", rd);
    convert(p, q, "finalized");

    j.h.state = XSPROF_JOURNAL_FINALIZED;
    snprintf(p, sizeof p, "%s/finalized.xsj", jd);
    sj_write(&j, p, 0, 0);
    check_journal(p);

    seed_mpi(&j);
    snprintf(p, sizeof p, "%s/mpi_signaled.xsj", jd);
    sj_write(&j, p, 2, 0);
    check_journal(p);
    snprintf(q, sizeof q, "%s/mpi_signaled.h5", rd);
    convert(p, q, "signal 11 (SIGSEGV)");

    /* Killed mid-write: the file ends inside the last chunk. */
    snprintf(p, sizeof p, "%s/torn.xsj", jd);
    sj_write(&j, p, 0, XSPROF_JOURNAL_HEADER_SIZE + SJ_STRINGS + (size_t)(j.nchunks - 1) * SJ_CHUNK + 100);
    check_journal(p);
    return 0;
}

/* tests/report/test_analyze.c — the analysis on hand-made xsm_run fixtures
 * with exactly known timings: every wait-state kind with its exact seconds,
 * causing rank and root-cause region, the ranked findings, the critical
 * path, the report files, and the baseline regression check (exit 3). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/record.h"
#include "merge/analyze/an.h"
#include "merge/analyze/score.h"
#include "merge/analyze/analyze.h"

static int failures;
#define CHECK(cond, ...)                                                 \
    do {                                                                 \
        if (!(cond)) {                                                   \
            failures++;                                                  \
            printf("not ok %s:%d: ", __FILE__, __LINE__);                \
            printf(__VA_ARGS__);                                         \
            printf("\n");                                                \
        }                                                                \
    } while (0)

#define MS 1000000LL /* ns */

/* string ids shared by every fixture rank */
enum {
    S_EMPTY, S_MAIN, S_SOLVE, S_PRODUCE, S_CONSUME, S_PREPARE, S_SEND, S_RECV, S_SSEND, S_IRECV, S_ISEND, S_WAIT,
    S_ALLREDUCE, S_BARRIER, S_BCAST, S_REDUCE, S_HOST, S_N
};
static char *strs[S_N] = {"", "main", "solve", "produce", "consume", "prepare", "MPI_Send", "MPI_Recv", "MPI_Ssend",
                          "MPI_Irecv", "MPI_Isend", "MPI_Wait", "MPI_Allreduce", "MPI_Barrier", "MPI_Bcast", "MPI_Reduce", "node0"};

static void fx_init(xsm_run *run, int n)
{
    memset(run, 0, sizeof *run);
    snprintf(run->run_dir, sizeof run->run_dir, "fixture");
    snprintf(run->command, sizeof run->command, "./fixture");
    run->nranks = (size_t)n;
    run->ranks = calloc((size_t)n, sizeof *run->ranks);
    for (int r = 0; r < n; r++) {
        xsm_rank *k = &run->ranks[r];
        k->present = 1;
        k->d.rank = r;
        k->d.size = n;
        snprintf(k->d.host, sizeof k->d.host, "node0");
        k->d.strings = strs;
        k->d.nstrings = S_N;
    }
}

static void fx_free(xsm_run *run)
{
    for (size_t r = 0; r < run->nranks; r++) {
        free(run->ranks[r].d.regions);
        free(run->ranks[r].d.mpi);
    }
    free(run->ranks);
    free(run->msgs);
    for (size_t i = 0; i < run->ncolls; i++) {
        free(run->colls[i].ranks);
        free(run->colls[i].rows);
    }
    free(run->colls);
}

static void region(xsm_run *run, int r, uint32_t name, int64_t t0, int64_t t1, int depth)
{
    xsprof_rank_data *d = &run->ranks[r].d;
    d->regions = realloc(d->regions, (d->nregions + 1) * sizeof *d->regions);
    d->regions[d->nregions++] = (xsprof_io_region){t0, t1, name, 0, (uint16_t)depth, XSPROF_CAT_USER, 0, -1};
    if (t1 > run->t_end)
        run->t_end = t1;
}

static size_t mpi(xsm_run *run, int r, uint32_t op, int kind, int coll, int64_t t0, int64_t t1, int peer, uint64_t bytes)
{
    xsprof_rank_data *d = &run->ranks[r].d;
    d->mpi = realloc(d->mpi, (d->nmpi + 1) * sizeof *d->mpi);
    xsprof_io_mpi m;
    memset(&m, 0, sizeof m);
    m.t_begin = t0;
    m.t_end = t1;
    m.op = op;
    m.peer = peer;
    m.tag = 0;
    m.root = -1;
    m.kind = (uint8_t)kind;
    m.coll = (uint8_t)coll;
    if (kind == XSPROF_MPI_SEND || kind == XSPROF_MPI_SSEND || kind == XSPROF_MPI_ISEND)
        m.bytes_sent = bytes;
    if (kind == XSPROF_MPI_COLL || kind == XSPROF_MPI_ICOLL) /* every member moves data */
        m.bytes_sent = m.bytes_recv = bytes ? bytes : 8;
    if (kind == XSPROF_MPI_RECV || (kind == XSPROF_MPI_COMPLETION && peer >= 0)) {
        m.bytes_recv = bytes;
        if (kind == XSPROF_MPI_COMPLETION)
            m.flags = XSPROF_MPI_F_RECV;
    }
    d->mpi[d->nmpi] = m;
    if (t1 > run->t_end)
        run->t_end = t1;
    return d->nmpi++;
}

static void msg(xsm_run *run, int src, int dst, size_t srow, size_t rrow, int64_t post, int64_t scompl, uint64_t bytes)
{
    run->msgs = realloc(run->msgs, (run->nmsgs + 1) * sizeof *run->msgs);
    run->msgs[run->nmsgs++] = (xsm_message){.src = src, .dst = dst, .bytes = bytes, .send_row = srow, .recv_row = rrow,
                                            .recv_post_row = post, .send_completion_row = scompl, .recv_call_row = rrow};
}

/* one collective; e[] and x[] in ms per rank (all ranks are members) */
static void coll(xsm_run *run, uint32_t op, int kind, int root, const double *e, const double *x)
{
    size_t n = run->nranks;
    xsm_collective c;
    memset(&c, 0, sizeof c);
    c.comm = 0;
    c.coll_seq = run->ncolls + 1;
    c.op = op;
    c.coll_kind = kind;
    c.root = root;
    c.n = n;
    c.ranks = calloc(n, sizeof *c.ranks);
    c.rows = calloc(n, sizeof *c.rows);
    for (size_t r = 0; r < n; r++) {
        c.ranks[r] = (int32_t)r;
        c.rows[r] = mpi(run, (int)r, op, XSPROF_MPI_COLL, kind, (int64_t)(e[r] * MS), (int64_t)(x[r] * MS), -1, 8);
        run->ranks[r].d.mpi[c.rows[r]].root = root;
    }
    run->colls = realloc(run->colls, (run->ncolls + 1) * sizeof *run->colls);
    run->colls[run->ncolls++] = c;
}

static int near(double a, double b) { return fabs(a - b) < 1e-9; }

static const xsm_finding *top(const xsm_an *a) { return a->nf ? &a->f[0] : NULL; }

static int ranks_are(const xsm_finding *f, const int32_t *want, size_t n)
{
    if (!f || f->nranks != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (f->ranks[i] != want[i])
            return 0;
    return 1;
}

static void analyse(const xsm_run *run, xsm_an *a)
{
    char err[256] = "";
    int rc = xsm_an_compute(a, run, err, sizeof err);
    CHECK(rc == 0, "xsm_an_compute failed: %s", err);
}

static void test_late_sender(void)
{
    xsm_run run;
    fx_init(&run, 2);
    region(&run, 0, S_PRODUCE, 0, 200 * MS, 1);
    size_t s = mpi(&run, 0, S_SEND, XSPROF_MPI_SEND, 0, 200 * MS, 201 * MS, 1, 1024);
    region(&run, 0, S_MAIN, 0, 300 * MS, 0);
    size_t r = mpi(&run, 1, S_RECV, XSPROF_MPI_RECV, 0, 10 * MS, 202 * MS, 0, 1024);
    region(&run, 1, S_CONSUME, 0, 300 * MS, 0);
    msg(&run, 0, 1, s, r, -1, -1, 1024);
    xsm_an a;
    analyse(&run, &a);
    CHECK(near(a.wait_s[XSM_WAIT_LATE_SENDER], 0.190), "late sender %.9f", a.wait_s[XSM_WAIT_LATE_SENDER]);
    CHECK(a.nw == 1 && a.w[0].waiter == 1 && a.w[0].causer == 0, "late sender instance");
    CHECK(a.nw == 1 && strcmp(xsm_an_name(&a, a.w[0].region), "consume") == 0, "waiting region");
    CHECK(a.nw == 1 && strcmp(xsm_an_name(&a, a.w[0].root_region), "produce") == 0, "root cause region");
    const xsm_finding *f = top(&a);
    int32_t want[] = {0, 1};
    CHECK(f && strcmp(f->kind, "Late Sender") == 0 && near(f->seconds_lost, 0.190) && ranks_are(f, want, 2) &&
              f->region >= 0 && strcmp(xsm_an_name(&a, f->region), "produce") == 0,
          "top finding: %s", f ? f->message : "none");
    CHECK(a.ncm == 1 && a.cm[0].src == 0 && a.cm[0].dst == 1 && a.cm[0].bytes == 1024 && a.cm[0].msgs == 1,
          "comm matrix");
    xsm_an_free(&a);
    fx_free(&run);
}

/* The communication matrix is the pairs that talked, summed and sorted by
 * (src, dst), whatever the order of the messages: 40 ranks, each sending
 * three messages to r + 1 and one to r - 1 (mod 40), met out of rank order
 * (80 pairs: the pair table grows twice). */
static void test_comm_pairs(void)
{
    enum { R = 40 };
    xsm_run run;
    fx_init(&run, R);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < R; i++) {
            int r = (i * 13 + k) % R; /* not in rank order */
            int to = k < 3 ? (r + 1) % R : (r + R - 1) % R;
            size_t s = mpi(&run, r, S_SEND, XSPROF_MPI_SEND, 0, MS * (10 * k + 1), MS * (10 * k + 2), to, 100);
            size_t v = mpi(&run, to, S_RECV, XSPROF_MPI_RECV, 0, MS * (10 * k + 1), MS * (10 * k + 3), r, 100);
            msg(&run, r, to, s, v, -1, -1, (uint64_t)(100 + r));
        }
    xsm_an a;
    analyse(&run, &a);
    int ok = a.ncm == 2 * R;
    for (size_t i = 0; ok && i < a.ncm; i++) {
        const xsm_cpair *p = &a.cm[i];
        int fwd = p->dst == (p->src + 1) % R, back = p->dst == (p->src + R - 1) % R;
        ok = (fwd || back) && p->msgs == (fwd ? 3u : 1u) && p->bytes == p->msgs * (uint64_t)(100 + p->src) &&
             (i == 0 || p[-1].src < p->src || (p[-1].src == p->src && p[-1].dst < p->dst));
    }
    CHECK(ok, "comm pairs: %zu pairs, summed and sorted", a.ncm);
    xsm_an_free(&a);
    fx_free(&run);
}

static void test_late_sender_irecv_wait(void)
{
    xsm_run run;
    fx_init(&run, 2);
    size_t s = mpi(&run, 0, S_ISEND, XSPROF_MPI_ISEND, 0, 59 * MS, 59 * MS + 10000, 1, 64);
    size_t sc = mpi(&run, 0, S_ISEND, XSPROF_MPI_COMPLETION, 0, 59 * MS + 20000, 59 * MS + 20000, -1, 0);
    size_t post = mpi(&run, 1, S_IRECV, XSPROF_MPI_IRECV, 0, 0, 10000, 0, 64);
    size_t w = mpi(&run, 1, S_WAIT, XSPROF_MPI_WAIT, 0, 5 * MS, 60 * MS, -1, 0);
    size_t c = mpi(&run, 1, S_IRECV, XSPROF_MPI_COMPLETION, 0, 60 * MS, 60 * MS, 0, 64);
    msg(&run, 0, 1, s, c, (int64_t)post, (int64_t)sc, 64);
    run.msgs[0].recv_call_row = w; /* as merge/match finds it: the Wait holding the completion */
    xsm_an a;
    analyse(&run, &a);
    CHECK(near(a.wait_s[XSM_WAIT_LATE_SENDER], 0.054), "late sender via Wait %.9f", a.wait_s[XSM_WAIT_LATE_SENDER]);
    CHECK(a.nw == 1 && strcmp(xsm_an_name(&a, a.w[0].op), "MPI_Wait") == 0, "waits in MPI_Wait");
    CHECK(a.ops && a.nops >= 3, "mpi ops table");
    xsm_an_free(&a);
    fx_free(&run);
}

static void test_wrong_order(void)
{
    xsm_run run;
    fx_init(&run, 3);
    size_t sa = mpi(&run, 0, S_SEND, XSPROF_MPI_SEND, 0, 0, 1 * MS, 2, 8);
    size_t sb = mpi(&run, 1, S_SEND, XSPROF_MPI_SEND, 0, 100 * MS, 101 * MS, 2, 8);
    size_t rb = mpi(&run, 2, S_RECV, XSPROF_MPI_RECV, 0, 5 * MS, 101 * MS, 1, 8);
    size_t ra = mpi(&run, 2, S_RECV, XSPROF_MPI_RECV, 0, 101 * MS, 102 * MS, 0, 8);
    msg(&run, 0, 2, sa, ra, -1, -1, 8);
    msg(&run, 1, 2, sb, rb, -1, -1, 8);
    xsm_an a;
    analyse(&run, &a);
    CHECK(near(a.wait_s[XSM_WAIT_WRONG_ORDER], 0.095), "wrong order %.9f", a.wait_s[XSM_WAIT_WRONG_ORDER]);
    CHECK(near(a.wait_s[XSM_WAIT_LATE_SENDER], 0), "no plain late sender %.9f", a.wait_s[XSM_WAIT_LATE_SENDER]);
    const xsm_finding *f = top(&a);
    CHECK(f && strcmp(f->kind, "Late Sender / Wrong Order") == 0 && f->ranks[0] == 1, "top finding: %s", f ? f->message : "none");
    xsm_an_free(&a);
    fx_free(&run);
}

static void test_late_receiver(void)
{
    xsm_run run;
    fx_init(&run, 2);
    size_t s = mpi(&run, 0, S_SSEND, XSPROF_MPI_SSEND, 0, 0, 150 * MS, 1, 4096);
    region(&run, 1, S_PREPARE, 0, 150 * MS, 0);
    size_t r = mpi(&run, 1, S_RECV, XSPROF_MPI_RECV, 0, 150 * MS, 151 * MS, 0, 4096);
    /* an eager send that returned before the receive was posted waits for nobody */
    size_t s2 = mpi(&run, 0, S_SEND, XSPROF_MPI_SEND, 0, 200 * MS, 200 * MS + 10000, 1, 8);
    size_t r2 = mpi(&run, 1, S_RECV, XSPROF_MPI_RECV, 0, 300 * MS, 300 * MS + 100000, 0, 8);
    msg(&run, 0, 1, s, r, -1, -1, 4096);
    msg(&run, 0, 1, s2, r2, -1, -1, 8);
    xsm_an a;
    analyse(&run, &a);
    CHECK(near(a.wait_s[XSM_WAIT_LATE_RECEIVER], 0.150), "late receiver %.9f", a.wait_s[XSM_WAIT_LATE_RECEIVER]);
    CHECK(near(a.wait_s[XSM_WAIT_LATE_SENDER], 0), "no late sender %.9f", a.wait_s[XSM_WAIT_LATE_SENDER]);
    const xsm_finding *f = top(&a);
    int32_t want[] = {1, 0};
    CHECK(f && strcmp(f->kind, "Late Receiver") == 0 && ranks_are(f, want, 2) && f->region >= 0 &&
              strcmp(xsm_an_name(&a, f->region), "prepare") == 0,
          "top finding: %s", f ? f->message : "none");
    xsm_an_free(&a);
    fx_free(&run);
}

static void test_barrier(void)
{
    xsm_run run;
    fx_init(&run, 3);
    double e[] = {0, 50, 120}, x[] = {121, 121, 121};
    for (int r = 0; r < 3; r++)
        region(&run, r, S_SOLVE, 0, (int64_t)(e[r] * MS), 0);
    coll(&run, S_BARRIER, XSPROF_COLL_BARRIER, -1, e, x);
    xsm_an a;
    analyse(&run, &a);
    CHECK(near(a.wait_s[XSM_WAIT_BARRIER], 0.190), "barrier %.9f", a.wait_s[XSM_WAIT_BARRIER]);
    const xsm_finding *f = top(&a);
    int32_t want[] = {2, 0, 1};
    CHECK(f && strcmp(f->kind, "Wait at Barrier") == 0 && ranks_are(f, want, 3) && strcmp(xsm_an_name(&a, f->region), "solve") == 0,
          "top finding: %s", f ? f->message : "none");
    xsm_an_free(&a);
    fx_free(&run);
}

static void build_nxn(xsm_run *run, double slow)
{
    fx_init(run, 4);
    double e[] = {10 * slow, 20 * slow, 30 * slow, 230 * slow};
    double x[] = {e[3] + 1, e[3] + 2, e[3] + 3, e[3] + 4};
    for (int r = 0; r < 4; r++) {
        region(run, r, S_SOLVE, 0, (int64_t)(e[r] * MS), 1);
        region(run, r, S_MAIN, 0, (int64_t)(x[r] * MS), 0);
    }
    coll(run, S_ALLREDUCE, XSPROF_COLL_NXN, -1, e, x);
}

static void test_nxn(void)
{
    xsm_run run;
    build_nxn(&run, 1.0);
    xsm_an a;
    analyse(&run, &a);
    CHECK(near(a.wait_s[XSM_WAIT_NXN], 0.630), "wait at nxn %.9f", a.wait_s[XSM_WAIT_NXN]);
    CHECK(near(a.wait_s[XSM_WAIT_NXN_COMPLETION], 0.006), "nxn completion %.9f", a.wait_s[XSM_WAIT_NXN_COMPLETION]);
    const xsm_finding *f = top(&a);
    int32_t want[] = {3, 0, 1, 2};
    CHECK(f && strcmp(f->kind, "Wait at NxN") == 0 && ranks_are(f, want, 4) && near(f->seconds_lost, 0.630) &&
              strcmp(xsm_an_name(&a, f->region), "solve") == 0 && strstr(f->message, "rank 3 spends") &&
              strstr(f->message, "MPI_Allreduce"),
          "top finding: %s", f ? f->message : "none");
    /* the solve imbalance is explained by the wait finding: not listed twice */
    for (size_t i = 0; i < a.nf; i++)
        CHECK(strcmp(a.f[i].kind, "Load imbalance") != 0, "imbalance reported twice");
    /* region table */
    const xsm_region *g = NULL;
    for (size_t i = 0; i < a.nreg; i++)
        if (strcmp(xsm_an_name(&a, a.reg[i].name), "solve") == 0)
            g = &a.reg[i];
    CHECK(g && g->excl_max_rank == 3 && near(g->excl_max, 0.230) && near(g->excl_mean, 0.0725) &&
              near(g->imbalance, (0.230 - 0.0725) / 0.230),
          "solve stats");
    /* main's exclusive time excludes solve and the MPI call */
    const xsm_region *m = NULL;
    for (size_t i = 0; i < a.nreg; i++)
        if (strcmp(xsm_an_name(&a, a.reg[i].name), "main") == 0)
            m = &a.reg[i];
    CHECK(m && near(m->excl[3], 0) && near(m->incl[3], 0.234), "main excl/incl %.9f %.9f", m ? m->excl[3] : -1, m ? m->incl[3] : -1);
    /* critical path: the last rank to finish is rank 3, which waited for nobody */
    CHECK(a.cp_end_rank == 3 && near(a.cp_length_s, 0.234), "critical path %d %.9f", a.cp_end_rank, a.cp_length_s);
    CHECK(a.ncp && strcmp(xsm_an_name(&a, a.cp[0].name), "solve") == 0 && near(a.cp[0].seconds, 0.230), "path mostly solve");
    xsm_an_free(&a);
    fx_free(&run);
}

/* Iallreduce: the wait happens in the MPI_Wait that completes it, and the
 * other rank's contribution arrives when it posts */
static void test_nonblocking_nxn(void)
{
    xsm_run run;
    fx_init(&run, 2);
    int64_t post[] = {0, 90 * MS};
    int64_t wait_b[] = {5 * MS, 91 * MS};
    size_t rows[2];
    for (int r = 0; r < 2; r++) {
        region(&run, r, S_SOLVE, 0, post[r], 0);
        rows[r] = mpi(&run, r, S_ALLREDUCE, XSPROF_MPI_ICOLL, XSPROF_COLL_NXN, post[r], post[r] + 10000, -1, 8);
        run.ranks[r].d.mpi[rows[r]].request = 77;
        mpi(&run, r, S_WAIT, XSPROF_MPI_WAIT, 0, wait_b[r], 100 * MS, -1, 0);
        size_t c = mpi(&run, r, S_ALLREDUCE, XSPROF_MPI_COMPLETION, XSPROF_COLL_NXN, 100 * MS, 100 * MS, -1, 0);
        run.ranks[r].d.mpi[c].request = 77;
    }
    xsm_collective c;
    memset(&c, 0, sizeof c);
    c.coll_seq = 1;
    c.op = S_ALLREDUCE;
    c.coll_kind = XSPROF_COLL_NXN;
    c.root = -1;
    c.n = 2;
    c.ranks = calloc(2, sizeof *c.ranks);
    c.rows = calloc(2, sizeof *c.rows);
    for (int r = 0; r < 2; r++) {
        c.ranks[r] = r;
        c.rows[r] = rows[r];
    }
    run.colls = malloc(sizeof c);
    run.colls[0] = c;
    run.ncolls = 1;
    xsm_an a;
    analyse(&run, &a);
    CHECK(near(a.wait_s[XSM_WAIT_NXN], 0.085), "wait at nxn in MPI_Wait %.9f", a.wait_s[XSM_WAIT_NXN]);
    CHECK(a.nw >= 1 && a.w[0].waiter == 0 && a.w[0].causer == 1 && strcmp(xsm_an_name(&a, a.w[0].op), "MPI_Wait") == 0,
          "the wait is rank 0's MPI_Wait, caused by rank 1");
    xsm_an_free(&a);
    fx_free(&run);
}

static void test_late_bcast(void)
{
    xsm_run run;
    fx_init(&run, 3);
    double e[] = {0, 100, 40}, x[] = {101, 101, 101};
    region(&run, 1, S_PREPARE, 0, 100 * MS, 0);
    coll(&run, S_BCAST, XSPROF_COLL_ONE2N, 1, e, x);
    xsm_an a;
    analyse(&run, &a);
    CHECK(near(a.wait_s[XSM_WAIT_LATE_BCAST], 0.160), "late bcast %.9f", a.wait_s[XSM_WAIT_LATE_BCAST]);
    const xsm_finding *f = top(&a);
    int32_t want[] = {1, 0, 2};
    CHECK(f && strcmp(f->kind, "Late Broadcast") == 0 && ranks_are(f, want, 3) && strcmp(xsm_an_name(&a, f->region), "prepare") == 0,
          "top finding: %s", f ? f->message : "none");
    xsm_an_free(&a);
    fx_free(&run);
}

/* A Late Broadcast where the waits differ: the finding gives their range and
 * names the rank that waited little apart, not a mean over all (ranks 0 and
 * 2 wait 100 and 98 ms, rank 3 50 us: "80 ms each on average" before). */
static void test_late_bcast_range(void)
{
    xsm_run run;
    fx_init(&run, 4);
    double e[] = {0, 100, 2, 99.95}, x[] = {101, 101, 101, 101};
    region(&run, 1, S_PREPARE, 0, 100 * MS, 0);
    coll(&run, S_BCAST, XSPROF_COLL_ONE2N, 1, e, x);
    xsm_an a;
    analyse(&run, &a);
    const xsm_finding *f = top(&a);
    CHECK(f && strcmp(f->kind, "Late Broadcast") == 0 && strstr(f->message, "ranks 0,2 wait 98.0 ms to 100 ms each") &&
              strstr(f->message, "rank 3 50.0 us (198 ms in total)") && !strstr(f->message, "average"),
          "top finding: %s", f ? f->message : "none");
    xsm_an_free(&a);
    fx_free(&run);
}

static void test_early_reduce(void)
{
    xsm_run run;
    fx_init(&run, 3);
    double e[] = {0, 30, 80}, x[] = {81, 31, 81};
    region(&run, 2, S_PRODUCE, 0, 80 * MS, 0);
    region(&run, 1, S_PRODUCE, 0, 30 * MS, 0);
    coll(&run, S_REDUCE, XSPROF_COLL_N2ONE, 0, e, x);
    xsm_an a;
    analyse(&run, &a);
    CHECK(near(a.wait_s[XSM_WAIT_EARLY_REDUCE], 0.080), "early reduce %.9f", a.wait_s[XSM_WAIT_EARLY_REDUCE]);
    const xsm_finding *f = top(&a);
    int32_t want[] = {2, 0};
    CHECK(f && strcmp(f->kind, "Early Reduce") == 0 && ranks_are(f, want, 2) && strcmp(xsm_an_name(&a, f->region), "produce") == 0,
          "top finding: %s", f ? f->message : "none");
    xsm_an_free(&a);
    fx_free(&run);
}

static void test_outlier_and_gpu(void)
{
    xsm_run run;
    fx_init(&run, 2);
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 10; i++) {
            int64_t t0 = i * 20 * MS, d = (r == 1 && i == 7) ? 15 * MS : 5 * MS;
            region(&run, r, S_SOLVE, t0, t0 + d, 1);
            region(&run, r, S_MAIN, t0, t0 + d + MS, 0); /* slow too, because of solve */
        }
    xsprof_rank_data *d = &run.ranks[0].d;
    d->gpu = calloc(2, sizeof *d->gpu);
    d->ngpu = 2;
    d->gpu[0] = (xsprof_io_gpu){.t_begin = 0, .t_end = 50 * MS, .kind = XSPROF_GPU_KERNEL, .device = 0};
    d->gpu[1] = (xsprof_io_gpu){.t_begin = 60 * MS, .t_end = 61 * MS, .kind = XSPROF_GPU_MEMCPY_HTOD, .bytes = 1 << 20};
    xsm_an a;
    analyse(&run, &a);
    CHECK(a.nout_total == 2 && a.nout == 2 && a.out[0].rank == 1 && a.out[1].rank == 1, "outliers of solve and main on rank 1 (%llu)",
          (unsigned long long)a.nout_total);
    int found = 0;
    for (size_t i = 0; i < a.nf; i++)
        if (strcmp(a.f[i].kind, "Outlier") == 0) {
            found++;
            CHECK(a.f[i].ranks[0] == 1 && strcmp(xsm_an_name(&a, a.f[i].region), "solve") == 0, "outlier finding names solve");
        }
    CHECK(found == 1, "one outlier finding: main is slow because of solve (%d)", found);
    CHECK(a.ngpu == 1 && near(a.gpu[0].kernel_s, 0.050) && a.gpu[0].htod == (1u << 20), "gpu device stats");
    CHECK(a.ngpu == 1 && near(a.gpu[0].idle_share, 1.0 - 50.0 / 186.0), "gpu idle share %.9f", a.ngpu ? a.gpu[0].idle_share : -1);
    xsm_an_free(&a);
    free(d->gpu);
    d->gpu = NULL;
    fx_free(&run);
}

/* Outliers of one region on several ranks are one finding naming them all
 * (issue 38: the demo had four findings of one cause, one per rank). */
static void test_outliers_grouped(void)
{
    xsm_run run;
    fx_init(&run, 3);
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 10; i++) {
            int64_t t0 = i * 20 * MS, d = (r > 0 && i == 7) ? 15 * MS : 5 * MS;
            region(&run, r, S_SOLVE, t0, t0 + d, 0);
        }
    xsm_an a;
    analyse(&run, &a);
    int found = 0;
    for (size_t i = 0; i < a.nf; i++)
        if (strcmp(a.f[i].kind, "Outlier") == 0) {
            int32_t want[] = {1, 2};
            found++;
            CHECK(ranks_are(&a.f[i], want, 2) && strstr(a.f[i].message, "on ranks 1-2"), "the outlier finding names ranks 1-2: %s",
                  a.f[i].message);
        }
    CHECK(found == 1, "one outlier finding for solve's outliers on two ranks (%d)", found);
    xsm_an_free(&a);
    fx_free(&run);
}

/* report.txt's rank table shows the compute time the outlier flag is about,
 * and says what the flag means (issue 38: "outlier" stood unexplained
 * beside columns that did not show compute time) */
static void test_outlier_rank_text(void)
{
    xsm_run run;
    fx_init(&run, 4);
    for (int r = 0; r < 4; r++)
        region(&run, r, S_MAIN, 0, (r == 3 ? 30 : 10) * MS + r * MS / 10, 0);
    xsm_an a;
    analyse(&run, &a);
    CHECK(a.rs[3].outlier && !a.rs[0].outlier, "rank 3 is the outlier");
    xsm_buf b = {0};
    xsm_report_text(&a, &b);
    const char *row = b.p ? strstr(b.p, "\n   3  ") : NULL;
    CHECK(b.p && strstr(b.p, "wall    compute        MPI"), "rank table has a compute column: %s", b.p ? b.p : "");
    CHECK(row && strstr(row, "30.3 ms") && strstr(row, "outlier"), "rank 3's row shows its compute time and the flag");
    CHECK(b.p && strstr(b.p, "outlier: compute time (wall - MPI) more than 2 standard deviations"),
          "the flag is explained");
    xsm_buf_free(&b);
    xsm_an_free(&a);
    fx_free(&run);
}

/* report.txt lists the first 7 findings and says how many more report.json
 * holds (the demo's 12 findings were all listed, variants of one cause
 * among them) */
static void test_findings_shown(void)
{
    xsm_run run;
    build_nxn(&run, 1.0);
    xsm_an a;
    analyse(&run, &a);
    size_t before = a.nf;
    for (int i = 0; i < 10; i++) {
        xsm_finding f;
        memset(&f, 0, sizeof f);
        f.ranks = malloc(sizeof *f.ranks);
        f.ranks[f.nranks++] = 0;
        snprintf(f.kind, sizeof f.kind, "Regression");
        f.seconds_lost = 1e-3 * (i + 1);
        f.severity = "low";
        f.region = -1;
        snprintf(f.message, sizeof f.message, "planted finding %d", i);
        snprintf(f.recommendation, sizeof f.recommendation, "none");
        CHECK(xsm_an_finding_add(&a, &f) == 0, "finding added");
    }
    xsm_buf b = {0};
    xsm_report_text(&a, &b);
    const char *sec = b.p ? strstr(b.p, "==== Findings ====") : NULL;
    char more[64];
    snprintf(more, sizeof more, "... %zu more findings in report.json", before + 10 - 7);
    CHECK(sec && strstr(sec, "\n 7. ") && !strstr(sec, "\n 8. ") && strstr(sec, more), "7 findings and '%s'", more);
    xsm_buf_free(&b);
    xsm_an_free(&a);
    fx_free(&run);
}

static char *slurp(const char *path);

/* dropped records, a truncated rank and a missing rank come first in the text */
static void test_health(const char *dir)
{
    xsm_run run;
    build_nxn(&run, 1.0);
    run.ranks[0].present = 0; /* --partial: merged without it */
    run.ranks[1].d.dropped = 42;
    run.ranks[2].d.truncated = 1;
    snprintf(run.ranks[2].d.end_state, sizeof run.ranks[2].d.end_state, "signal 11 (SIGSEGV)");
    xsm_an a;
    analyse(&run, &a);
    CHECK(a.dropped_total == 42 && a.truncated == 1, "health counts");
    xsm_buf b = {0};
    xsm_report_text(&a, &b);
    const char *h = b.p ? strstr(b.p, "PROFILER HEALTH") : NULL, *f = b.p ? strstr(b.p, "Top findings") : NULL;
    CHECK(h && f && h < f, "health section before the findings");
    CHECK(b.p && strstr(b.p, "42 records were dropped") && strstr(b.p, "rank 2 ended early (signal 11 (SIGSEGV))"),
          "health lines");
    CHECK(b.p && strstr(b.p, "rank 0 is missing"), "missing rank named");
    xsm_buf_free(&b);
    xsm_an_free(&a);
    char out[4096], err[256];
    snprintf(out, sizeof out, "%s/health", dir);
    mkdir(dir, 0777);
    mkdir(out, 0777);
    xsm_report_opts o;
    memset(&o, 0, sizeof o);
    CHECK(xsm_analyze_run(&run, out, &o, err, sizeof err) == 0, "health report: %s", err);
    char p[8192];
    snprintf(p, sizeof p, "%s/report.json", out);
    char *t = slurp(p);
    CHECK(t && strstr(t, "\"drops\":{\"total\":42,\"truncated_ranks\":1"), "drops in report.json");
    free(t);
    fx_free(&run);
}

/* GPU rows: kernel time, idle share, copies and kernels that overlap MPI
 * waits; the page is also rendered by the chromium test */
static void test_gpu_report(const char *dir)
{
    xsm_run run;
    fx_init(&run, 2);
    for (int r = 0; r < 2; r++) {
        region(&run, r, S_SOLVE, 0, (r + 1) * 100 * MS, 0);
        xsprof_rank_data *d = &run.ranks[r].d;
        d->gpu = calloc(3, sizeof *d->gpu);
        d->ngpu = 3;
        d->gpu[0] = (xsprof_io_gpu){.t_begin = 50 * MS, .t_end = 150 * MS, .name = S_SOLVE, .kind = XSPROF_GPU_KERNEL, .device = (uint32_t)r};
        d->gpu[1] = (xsprof_io_gpu){.t_begin = 10 * MS, .t_end = 11 * MS, .kind = XSPROF_GPU_MEMCPY_HTOD, .device = (uint32_t)r, .bytes = 1 << 24};
        d->gpu[2] = (xsprof_io_gpu){.t_begin = 160 * MS, .t_end = 161 * MS, .kind = XSPROF_GPU_MEMCPY_DTOH, .device = (uint32_t)r, .bytes = 1 << 20};
    }
    double e[] = {100, 200}, x[] = {210, 210};
    coll(&run, S_ALLREDUCE, XSPROF_COLL_NXN, -1, e, x);
    xsm_an a;
    analyse(&run, &a);
    /* rank 0 waits 100..200 ms; its kernel runs 50..150 ms: 50 ms overlap */
    CHECK(a.ngpu == 2 && a.gpu[0].overlap_kernels == 1 && near(a.gpu[0].overlap_s, 0.050) && a.gpu[1].overlap_kernels == 0,
          "kernels overlapping MPI waits");
    CHECK(a.ngpu == 2 && near(a.gpu[0].kernel_s, 0.100) && a.gpu[0].htod == (1u << 24) && a.gpu[0].dtoh == (1u << 20),
          "kernel time and copy volume");
    CHECK(a.ngpu == 2 && near(a.gpu[0].idle_share, 1.0 - 100.0 / 210.0), "idle share %.9f", a.ngpu ? a.gpu[0].idle_share : -1);
    xsm_an_free(&a);
    char out[4096], err[256];
    snprintf(out, sizeof out, "%s/gpu", dir);
    mkdir(dir, 0777);
    mkdir(out, 0777);
    xsm_report_opts o;
    memset(&o, 0, sizeof o);
    CHECK(xsm_analyze_run(&run, out, &o, err, sizeof err) == 0, "gpu report: %s", err);
    for (int r = 0; r < 2; r++)
        free(run.ranks[r].d.gpu);
    fx_free(&run);
}

/* score.c: the filter rule (README "Sizing a trace before a big run") on
 * a hand-made table: at most 10 us a visit, at least 1 % of the visits,
 * most visits per second first while within 5 % of the ranks' time; glob
 * characters escaped, a name with a comma skipped */
static void test_score_rule(void)
{
    xsm_score s;
    memset(&s, 0, sizeof s);
    s.rank_s = 10.0;
    s.factor = 10;
    /* name, visits, seconds */
    CHECK(xsm_score_add(&s, "tiny", 1000000, 0.010, 1e6) == 0 && /* 10 ns a visit, 0.1 % of the time */
              xsm_score_add(&s, "get[i]", 500000, 0.020, 5e5) == 0 && /* 40 ns: escaped */
              xsm_score_add(&s, "a,b", 400000, 0.001, 4e5) == 0 &&    /* cannot be named */
              xsm_score_add(&s, "small", 100000, 0.450, 1e5) == 0 &&  /* 4.5 us: would pass 5 % with the rest */
              xsm_score_add(&s, "mid", 50000, 0.400, 5e4) == 0 &&     /* 8 us, fits once small is out */
              xsm_score_add(&s, "slow", 20000, 2.0, 2e4) == 0 &&      /* 100 us a visit: not tiny */
              xsm_score_add(&s, "rare", 100, 1e-5, 1e2) == 0,         /* tiny but under 1 % of the visits */
          "score rows");
    xsm_score_add(&s, "tiny", 0, 0, 0); /* adding to a name sums */
    xsm_score_finish(&s);
    /* candidates by visits per second: a,b (4e8/s, skipped), tiny (1e8), get[i] (2.5e7), mid (1.25e5), small
     * (2.2e5: before mid) -- small's 0.45 s would make 0.48 s, within 0.5 s; then mid's 0.4 s passes 5 %: stop */
    CHECK(strcmp(s.filter, "-tiny,-get\\[i\\],-small") == 0, "filter '%s' (the 5 %% cap after small)", s.filter);
    CHECK(s.f_visits == 1600000 && near(s.f_seconds, 0.480), "saves %llu visits, %.3f s", (unsigned long long)s.f_visits,
          s.f_seconds);
    CHECK(s.nrow == 7 && strcmp(s.names.v[s.row[0].name], "tiny") == 0, "rows by bytes, tiny first");
    xsm_buf b = {0};
    xsm_score_json(&s, &b, 0);
    CHECK(b.p && strstr(b.p, "\"filter\":{\"spec\":\"-tiny,-get\\\\[i\\\\],-small\",\"events\":1600000"), "score json %s",
          b.p ? b.p : "");
    xsm_buf_free(&b);
    CHECK(xsm_score_for_parse("10x") == 10 && xsm_score_for_parse("2h") == -7200 && xsm_score_for_parse("30m") == -1800 &&
              xsm_score_for_parse("600") == -600 && xsm_score_for_parse("ten") == 0 && xsm_score_for_parse("-3x") == 0 &&
              xsm_score_for_parse("0x") == 0 && xsm_score_for_parse("5xs") == 0,
          "--score-for values");
    xsm_score_free(&s);
}

/* topology.c: a rank whose GPU sits on another NUMA node than its cores
 * (no GPU on this machine: the hwloc rows and topo_* metadata written by
 * hand, as mpi/topo.c records them) */
static void test_topology_gpu(void)
{
    enum { T_0 = S_N, T_1, T_01, T_MACHINE, T_NUMA, T_GPUNUMA, T_GPUS, T_N };
    static char *ts[T_N];
    memcpy(ts, strs, sizeof strs);
    ts[T_0] = "0";
    ts[T_1] = "1";
    ts[T_01] = "0-1";
    ts[T_MACHINE] = "topo_machine_cpuset";
    ts[T_NUMA] = "topo_numa_nodes";
    ts[T_GPUNUMA] = "topo_gpu_numa";
    ts[T_GPUS] = "0000:3b:00.0=1";
    xsm_run run;
    fx_init(&run, 2);
    xsprof_io_topo topo[2];
    xsprof_io_meta meta[2][3];
    for (int r = 0; r < 2; r++) {
        region(&run, r, S_SOLVE, 0, 100 * MS, 0);
        xsprof_rank_data *d = &run.ranks[r].d;
        d->strings = ts;
        d->nstrings = T_N;
        uint32_t pu = r ? T_1 : T_0;
        topo[r] = (xsprof_io_topo){.numa_node = r, .ncores_host = 2, .cpuset = pu, .cores = pu, .gpus = S_EMPTY,
                                   .host = S_HOST};
        meta[r][0] = (xsprof_io_meta){T_MACHINE, T_01};
        meta[r][1] = (xsprof_io_meta){T_NUMA, pu}; /* rank r's cores are on NUMA node r */
        meta[r][2] = (xsprof_io_meta){T_GPUNUMA, T_GPUS}; /* the host's one GPU is on node 1 */
        d->topo = &topo[r];
        d->ntopo = 1;
        d->meta = meta[r];
        d->nmeta = 3;
        d->gpu = calloc(1, sizeof *d->gpu);
        d->ngpu = 1;
        d->gpu[0] = (xsprof_io_gpu){.t_begin = 10 * MS, .t_end = 20 * MS, .kind = XSPROF_GPU_KERNEL, .device = 0};
    }
    xsm_an a;
    analyse(&run, &a);
    const xsm_finding *g = NULL;
    size_t other = 0;
    for (size_t i = 0; i < a.nf; i++) {
        if (strcmp(a.f[i].kind, "GPU on another NUMA node") == 0)
            g = &a.f[i];
        else if (a.f[i].seconds_lost == 0)
            other++;
    }
    CHECK(a.ntopo == 2 && a.topo[0].bound == 1 && a.topo[1].bound == 1 && a.topo[0].used_gpu && a.topo[1].used_gpu,
          "topology of two bound ranks that ran GPU work");
    CHECK(g && g->nranks == 1 && g->ranks[0] == 0, "GPU on another NUMA node: rank 0 only (rank 1 shares node 1 with it)");
    CHECK(other == 0, "no other topology finding (%zu)", other);
    xsm_buf b = {0};
    xsm_report_json(&a, &b, 0);
    CHECK(b.p && strstr(b.p, "\"topology\":{\"hosts\":[{\"host\":\"node0\",\"ranks\":2,\"cores\":2,\"gpus\":\"0000:3b:00.0=1\"}]"),
          "report.json topology hosts");
    xsm_buf_free(&b);
    xsm_an_free(&a);
    for (int r = 0; r < 2; r++) {
        free(run.ranks[r].d.gpu);
        run.ranks[r].d.topo = NULL;
        run.ranks[r].d.meta = NULL;
    }
    fx_free(&run);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    if (p)
        p[n] = '\0';
    fclose(f);
    return p;
}

static void test_reports_and_baseline(const char *dir)
{
    char base[4096], cur[4096], slow[4096], err[512];
    snprintf(base, sizeof base, "%s/base", dir);
    snprintf(cur, sizeof cur, "%s/same", dir);
    snprintf(slow, sizeof slow, "%s/slow", dir);
    mkdir(dir, 0777);
    mkdir(base, 0777);
    mkdir(cur, 0777);
    mkdir(slow, 0777);
    xsm_report_opts o;
    memset(&o, 0, sizeof o);
    o.threshold_pct = 10;
    o.callgrind = 1;
    xsm_run run;
    build_nxn(&run, 1.0);
    CHECK(xsm_analyze_run(&run, base, &o, err, sizeof err) == 0, "reports: %s", err);
    const char *files[] = {"report.json", "report.txt", "report.html", "flame.folded", "flame.svg", "callgrind.out"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", base, files[i]);
        char *t = slurp(p);
        CHECK(t && strlen(t) > 20, "%s written", files[i]);
        if (t && i == 0)
            CHECK(strncmp(t, "{\"schema\":\"xsprof-report/1\"", 27) == 0 && strstr(t, "\"findings\":[{\"kind\":\"Wait at NxN\""),
                  "report.json head");
        if (t && i == 3)
            CHECK(strstr(t, "rank 3;main;solve 230000\n") != NULL, "folded stack of solve on rank 3");
        free(t);
    }
    /* the same run against itself: nothing slower */
    o.baseline_dir = base;
    CHECK(xsm_analyze_run(&run, cur, &o, err, sizeof err) == 0, "identical run flagged: %s", err);
    fx_free(&run);
    /* 20 % slower everywhere: regression, exit 3, and a differential flame graph */
    build_nxn(&run, 1.2);
    o.diff_dir = base;
    CHECK(xsm_analyze_run(&run, slow, &o, err, sizeof err) == 3, "20%% slowdown not caught: %s", err);
    char p[8192];
    snprintf(p, sizeof p, "%s/flame-diff.svg", slow);
    char *t = slurp(p);
    CHECK(t && strstr(t, "baseline"), "flame-diff.svg");
    free(t);
    snprintf(p, sizeof p, "%s/report.txt", slow);
    t = slurp(p);
    CHECK(t && strstr(t, "SLOWER region `solve`"), "regression section names solve");
    free(t);
    /* a baseline that is not a report is bad input, not a crash */
    snprintf(p, sizeof p, "%s/report.json", cur);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs("{\"schema\":\"other\"}", f);
        fclose(f);
    }
    o.baseline_dir = cur;
    o.diff_dir = NULL;
    CHECK(xsm_analyze_run(&run, slow, &o, err, sizeof err) == 1 && strstr(err, "report.json"), "bad baseline: %s", err);
    fx_free(&run);
}

/* The streamed critical path (spath.c) against path.c on the same random
 * waits and timelines: 40 000 waits on 5 ranks handed over out of order
 * (locally shuffled, some very late: many sorted runs per rank), each
 * rank's main thread a row of regions with gaps. Same length, segments,
 * end rank, time per rank and per name. */
static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* The walk spath.c makes, written plainly (quadratic) for the check: from
 * the rank that ends last, back in time; at the latest unused wait of the
 * rank ending by t and begun before it, the path moves to its causer at
 * min(t_cause, the wait's end). */
typedef struct ref_wait {
    int32_t waiter, causer;
    int64_t tb, te, tc;
    int used;
} ref_wait;

static const ref_wait *sort_w;
static int by_end(const void *x, const void *y)
{
    int64_t a = sort_w[*(const size_t *)x].te, b = sort_w[*(const size_t *)y].te;
    return a < b ? -1 : a > b;
}

static void ref_path(ref_wait *w, size_t nw, const int64_t *first, const int64_t *last, int R, size_t *segs,
                     int32_t *end, double *len, double *rank_s)
{
    int32_t r = 0;
    for (int q = 1; q < R; q++)
        if (last[q] > last[r])
            r = q;
    *end = r;
    *segs = 0;
    *len = 0;
    int64_t t = last[r];
    for (;;) {
        ref_wait *best = NULL;
        for (size_t i = 0; i < nw; i++)
            if (w[i].waiter == r && !w[i].used && w[i].te <= t && w[i].tb < t && (!best || w[i].te >= best->te))
                best = &w[i];
        int64_t from = best ? best->te : first[r];
        if (from > t)
            from = t;
        (*segs)++;
        *len += (double)(t - from) * 1e-9;
        rank_s[r] += (double)(t - from) * 1e-9;
        if (!best)
            break;
        best->used = 1;
        t = best->tc < from ? best->tc : from;
        r = best->causer;
    }
}

static void test_streamed_path(void)
{
    enum { R = 5, NW = 40000, NF = 3000 };
    const uint32_t fname[3] = {S_MAIN, S_SOLVE, S_PRODUCE};
    xsm_run run;
    fx_init(&run, R);
    int64_t first[R], last[R];
    uint32_t mains[R];
    for (int r = 0; r < R; r++) { /* regions [t, t + d) with gaps: flat frames */
        int64_t t = (int64_t)(rng() % 1000);
        first[r] = t;
        for (int i = 0; i < NF; i++) {
            t += (int64_t)(rng() % 50);
            int64_t d = 1 + (int64_t)(rng() % 2000);
            int k = (int)(rng() % 3);
            region(&run, r, fname[k], t, t + d, 0);
            t += d;
        }
        last[r] = t + (int64_t)(rng() % 100);
        mains[r] = 0;
    }
    ref_wait *w = calloc(NW, sizeof *w);
    size_t nw = 0;
    for (int32_t q = 0; q < R; q++) { /* distinct ends per rank */
        int64_t te = first[q], step = 2 * (last[q] - first[q]) / (NW / R);
        for (int i = 0; i < NW / R; i++) {
            te += 1 + (int64_t)(rng() % (uint64_t)step);
            if (te >= last[q])
                break;
            w[nw++] = (ref_wait){q, (int32_t)((q + 1 + rng() % (R - 1)) % R), te - 1, te, te + 5, 0};
        }
    }
    size_t want_segs;
    int32_t want_end;
    double want_len, want_rank[R];
    memset(want_rank, 0, sizeof want_rank);
    ref_path(w, nw, first, last, R, &want_segs, &want_end, &want_len, want_rank);

    /* the waits to spath.c: in order of end, shuffled within windows of
     * 300, and every 97th one handed over last */
    size_t n = nw, *ord = malloc(n * sizeof *ord);
    for (size_t i = 0; i < n; i++)
        ord[i] = i;
    sort_w = w;
    qsort(ord, n, sizeof *ord, by_end);
    for (size_t i = 0; i + 1 < n; i++) {
        size_t j = i + rng() % (n - i < 300 ? n - i : 300), x = ord[i];
        ord[i] = ord[j];
        ord[j] = x;
    }
    FILE *f = tmpfile();
    xsm_spath *p = f ? xsm_spath_new(&run, fileno(f)) : NULL;
    CHECK(p != NULL, "xsm_spath_new failed");
    if (!p)
        return;
    for (int late = 0; late < 2; late++)
        for (size_t i = 0; i < n; i++)
            if ((i % 97 == 0) == late)
                CHECK(xsm_spath_wait(p, w[ord[i]].waiter, w[ord[i]].te, w[ord[i]].causer) == 0, "spill");
    CHECK(xsm_spath_walk_at(p, first, last, mains) == 0, "walk failed");
    for (int r = 0; r < R; r++) {
        int on = xsm_spath_rank_begin(p, r);
        CHECK(on >= 0, "rank_begin %d", r);
        const xsprof_rank_data *d = &run.ranks[r].d;
        for (size_t i = 0; on == 1 && i < d->nregions; i++)
            CHECK(xsm_spath_region(p, r, &d->regions[i]) == 0, "region");
        if (on == 1)
            CHECK(xsm_spath_rank_end(p, r) == 0, "rank_end");
    }
    xsm_an b;
    memset(&b, 0, sizeof b);
    b.run = &run;
    b.nranks = R;
    b.cp_end_rank = -1;
    CHECK(xsm_an_path(&b, p) == 0, "xsm_an_path failed");
    CHECK(want_segs > 1000, "a long path (%zu segments)", want_segs);
    printf("streamed path: %zu segments, %zu names, %.6f s\n", b.cp_segments, b.ncp, b.cp_length_s);
    CHECK(b.cp_segments == want_segs && b.cp_end_rank == want_end && near(b.cp_length_s, want_len),
          "streamed path: %zu segments, %.9f s, ends on %d; the walk %zu, %.9f s, %d", b.cp_segments, b.cp_length_s,
          b.cp_end_rank, want_segs, want_len, want_end);
    for (int r = 0; r < R; r++)
        CHECK(near(want_rank[r], b.cp_rank_s[r]), "rank %d on the path %.9f s, the walk %.9f s", r, b.cp_rank_s[r],
              want_rank[r]);
    double parts = 0;
    for (size_t i = 0; i < b.ncp; i++)
        parts += b.cp[i].seconds;
    CHECK(b.ncp == 4 && near(parts, want_len), "the path's time by name: %zu names (3 regions and outside), %.9f s", b.ncp,
          parts);
    xsm_spath_free(p);
    fclose(f);
    free(ord);
    free(w);
    xsm_an_free(&b);
    fx_free(&run);
}

int main(int argc, char **argv)
{
    test_late_sender();
    test_comm_pairs();
    test_late_sender_irecv_wait();
    test_wrong_order();
    test_late_receiver();
    test_barrier();
    test_nxn();
    test_late_bcast();
    test_late_bcast_range();
    test_outlier_rank_text();
    test_findings_shown();
    test_nonblocking_nxn();
    test_early_reduce();
    test_outlier_and_gpu();
    test_outliers_grouped();
    test_topology_gpu();
    test_score_rule();
    test_streamed_path();
    test_gpu_report(argc > 1 ? argv[1] : "report-unit-out");
    test_health(argc > 1 ? argv[1] : "report-unit-out");
    test_reports_and_baseline(argc > 1 ? argv[1] : "report-unit-out");
    if (failures) {
        printf("%d check(s) failed\n", failures);
        return 1;
    }
    printf("ok: all analysis checks passed\n");
    return 0;
}

/* merge/analyze/mfeed.c — the analysis of a run in memory: the model's
 * events through the one feeding loop (feed.c), with the waits matching
 * found taken from match/'s messages and collectives by the rules the
 * streaming merge's MPI pass applies to its own (collwait.c, xsm_lr_until,
 * worder.c), so that both feedings give the analysis the same waits.
 * Owner: merge analysis. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "merge/analyze/an.h"
#include "merge/analyze/feed.h"
#include "merge/align/align.h"
#include "merge/match/match.h"
#include "core/record.h"

/* A rank's waits, in the order they were found (seq), sorted by time. */
typedef struct xsm_mrec {
    xsm_cwait_rec w;
    uint64_t seq;
} xsm_mrec;

typedef struct xsm_mrank {
    xsm_mrec *v;
    size_t n, cap, next;
    int64_t *compl_of, *call_of; /* xsm_match_links (NULL: no nonblocking row) */
} xsm_mrank;

typedef struct xsm_mfeed {
    const xsm_run *run;
    xsm_mrank *r;
    uint64_t seq;
    xsm_eager *eager; /* sends that went eagerly: no Late Receiver */
} xsm_mfeed;

static int xsm_mput(xsm_mfeed *m, int32_t r, int64_t p, int64_t ns, uint64_t row, uint32_t op, int kind, int32_t causer,
                    uint64_t causer_row, int poll)
{
    xsm_mrank *x = &m->r[r];
    if (xsm_grow((void **)&x->v, &x->cap, x->n, sizeof *x->v))
        return -1;
    x->v[x->n++] = (xsm_mrec){{p, ns, (uint32_t)row, op, kind, causer, (uint32_t)causer_row, (uint32_t)poll}, m->seq++};
    return 0;
}

static int xsm_mrec_cmp(const void *a, const void *b)
{
    const xsm_mrec *x = a, *y = b;
    if (x->w.p != y->w.p)
        return x->w.p < y->w.p ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Per rank: the links of its nonblocking rows. */
static int xsm_mrank_prepare(const xsm_run *run, int32_t r, xsm_mrank *x)
{
    const xsprof_rank_data *d = &run->ranks[r].d;
    size_t nreq = 0, ncompl = 0;
    for (size_t i = 0; i < d->nmpi; i++) {
        const xsprof_io_mpi *m = &d->mpi[i];
        ncompl += m->kind == XSPROF_MPI_COMPLETION;
        nreq += m->request && (m->kind == XSPROF_MPI_ISEND || m->kind == XSPROF_MPI_IRECV ||
                               m->kind == XSPROF_MPI_ICOLL || m->kind == XSPROF_MPI_COMPLETION);
    }
    if (!nreq && !ncompl)
        return 0;
    int64_t *post_of = xsm_malloc_big((d->nmpi + 1) * sizeof *post_of);
    x->compl_of = xsm_malloc_big((d->nmpi + 1) * sizeof *x->compl_of);
    x->call_of = xsm_malloc_big((d->nmpi + 1) * sizeof *x->call_of);
    int rc = post_of && x->compl_of && x->call_of ? xsm_match_links(d, nreq, ncompl, post_of, x->compl_of, x->call_of) : -1;
    free(post_of);
    return rc;
}

/* The call a nonblocking row (post) waited in: the call holding its
 * completion, -1 none. */
static int64_t xsm_mcall(const xsm_mrank *x, size_t post)
{
    if (!x->compl_of || x->compl_of[post] < 0)
        return -1;
    return x->call_of[x->compl_of[post]];
}

/* ---- collectives (collwait.c) ------------------------------------------- */
typedef struct xsm_mcoll {
    xsm_mfeed *m;
    const xsm_collective *c;
    const int64_t *call; /* per member of the instance: its call row */
} xsm_mcoll;

static int xsm_mcoll_put(void *ctx, const xsm_cwmember *w, int kind, const xsm_cwmember *cause, int64_t tb, int64_t te)
{
    xsm_mcoll *x = ctx;
    const xsprof_rank_data *d = &x->m->run->ranks[w->rank].d;
    size_t call = (size_t)x->call[w->id];
    return xsm_mput(x->m, w->rank, w->call_e, te - tb, call, d->mpi[call].op, kind, cause ? cause->rank : -1,
                    cause ? x->c->rows[cause->id] : 0, 0);
}

static int xsm_mcolls(xsm_mfeed *m)
{
    const xsm_run *run = m->run;
    xsm_cwmember *mb = NULL;
    int64_t *call = NULL;
    size_t cap = 0;
    int rc = 0;
    for (size_t ci = 0; ci < run->ncolls && !rc; ci++) {
        const xsm_collective *c = &run->colls[ci];
        if (c->n > cap) {
            cap = c->n;
            free(mb);
            free(call);
            mb = malloc(cap * sizeof *mb);
            call = malloc(cap * sizeof *call);
            if (!mb || !call) {
                rc = -1;
                break;
            }
        }
        size_t n = 0;
        for (size_t k = 0; k < c->n; k++) {
            int32_t r = c->ranks[k];
            if (r < 0 || (size_t)r >= run->nranks || !run->ranks[r].present || c->rows[k] >= run->ranks[r].d.nmpi)
                continue;
            const xsprof_rank_data *d = &run->ranks[r].d;
            const xsprof_io_mpi *x = &d->mpi[c->rows[k]];
            int64_t cr = x->kind == XSPROF_MPI_COLL ? (int64_t)c->rows[k] : xsm_mcall(&m->r[r], c->rows[k]);
            mb[n] = (xsm_cwmember){r, x->t_begin, cr >= 0, cr >= 0 ? d->mpi[cr].t_begin : 0, cr >= 0 ? d->mpi[cr].t_end : 0,
                                   xsm_coll_receives(c->coll_kind, x), xsm_coll_sends(x),
                                   c->coll_kind == XSPROF_COLL_SCAN ? xsm_align_comm_position(d, c->comm, r) : -1, k};
            call[k] = cr;
            n++;
        }
        xsm_mcoll x = {m, c, call};
        rc = xsm_coll_waits_find(c->coll_kind, c->root, mb, n, xsm_mcoll_put, &x);
    }
    free(mb);
    free(call);
    return rc;
}

/* ---- point to point ------------------------------------------------------ */
static int xsm_mwo_verdict(void *ctx, int32_t dst, int64_t t, uint32_t call_row, int32_t src, uint32_t send_row)
{
    return xsm_mput(ctx, dst, t, 0, call_row, 0, XSM_WAIT_WRONG_ORDER, src, send_row, 0);
}

/* A message by a time of it (its send's begin, its receive's completion). */
typedef struct xsm_mkey {
    int64_t t;
    size_t i;
} xsm_mkey;

/* Sort n keys by (t, i): a stable LSD radix sort of t over 16-bit digits
 * (a pass only where the digit varies), keys made in order of i. qsort of
 * the two key arrays was a tenth of the in-memory analysis (8-rank ring,
 * 800 k messages). -1 out of memory. */
static int xsm_mkey_sort(xsm_mkey *v, size_t n)
{
    if (n < 2)
        return 0;
    int64_t lo = v[0].t, hi = v[0].t;
    for (size_t i = 1; i < n; i++) {
        lo = v[i].t < lo ? v[i].t : lo;
        hi = v[i].t > hi ? v[i].t : hi;
    }
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    xsm_mkey *tmp = xsm_malloc_big(n * sizeof *tmp);
    size_t *cnt = malloc(65537 * sizeof *cnt);
    if (!tmp || !cnt) {
        free(tmp);
        free(cnt);
        return -1;
    }
    xsm_mkey *a = v, *b = tmp;
    for (int shift = 0; shift < 64 && (span >> shift); shift += 16) {
        memset(cnt, 0, 65537 * sizeof *cnt);
        for (size_t i = 0; i < n; i++)
            cnt[(((uint64_t)a[i].t - (uint64_t)lo) >> shift & 0xffff) + 1]++;
        for (size_t d = 0; d < 65536; d++)
            cnt[d + 1] += cnt[d];
        for (size_t i = 0; i < n; i++)
            b[cnt[((uint64_t)a[i].t - (uint64_t)lo) >> shift & 0xffff]++] = a[i];
        xsm_mkey *t = a;
        a = b;
        b = t;
    }
    if (a != v)
        memcpy(v, a, n * sizeof *v);
    free(tmp);
    free(cnt);
    return 0;
}

/* Late Receivers (a blocking send's, an Isend's in the call that
 * completed it, a polling loop's) and Wrong Order verdicts. */
static int xsm_mp2p(xsm_mfeed *m)
{
    const xsm_run *run = m->run;
    xsm_wo *wo = xsm_wo_new(run->nranks);
    xsm_mkey *snd_ord = xsm_malloc_big((run->nmsgs + 1) * sizeof *snd_ord),
            *ord = xsm_malloc_big((run->nmsgs + 1) * sizeof *ord);
    int rc = wo && snd_ord && ord ? 0 : -1;
    /* Wrong Order (worder.c) read forward in time as the MPI pass reads
     * it: the sends in order of their begin and the receives in order of
     * their completion, each receive after the sends begun by then and
     * what came before it was settled (worder holds only what is in
     * flight or due) */
    for (size_t i = 0; !rc && i < run->nmsgs; i++) {
        const xsm_message *x = &run->msgs[i];
        snd_ord[i] = (xsm_mkey){run->ranks[x->src].d.mpi[x->send_row].t_begin, i};
        ord[i] = (xsm_mkey){run->ranks[x->dst].d.mpi[x->recv_row].t_end, i};
    }
    if (!rc)
        rc = xsm_mkey_sort(snd_ord, run->nmsgs) || xsm_mkey_sort(ord, run->nmsgs) ? -1 : 0;
    for (size_t k = 0, ks = 0; !rc && k < run->nmsgs; k++) {
        for (; !rc && ks < run->nmsgs && snd_ord[ks].t <= ord[k].t; ks++) {
            const xsm_message *x = &run->msgs[snd_ord[ks].i];
            rc = xsm_wo_send(wo, x->dst, snd_ord[ks].t, x->src, (uint32_t)x->send_row);
        }
        const xsm_message *x = &run->msgs[ord[k].i];
        if (rc || xsm_wo_due(wo, ord[k].t, xsm_mwo_verdict, m)) {
            rc = -1;
            break;
        }
        const xsprof_rank_data *sd = &run->ranks[x->src].d, *rd = &run->ranks[x->dst].d;
        const xsprof_io_mpi *snd = &sd->mpi[x->send_row], *rcv = &rd->mpi[x->recv_row];
        int is_recv = rcv->kind == XSPROF_MPI_RECV;
        int has_call = !is_recv && x->recv_call_row != x->recv_row;
        const xsprof_io_mpi *ca = has_call ? &rd->mpi[x->recv_call_row] : NULL;
        /* posted: its Irecv, else the call it completed in, else itself */
        int64_t post_t = x->recv_post_row >= 0 ? rd->mpi[x->recv_post_row].t_begin : ca ? ca->t_begin : rcv->t_begin;
        uint64_t post_row = x->recv_post_row >= 0 ? (uint64_t)x->recv_post_row : ca ? x->recv_call_row : x->recv_row;
        uint32_t call_row = is_recv ? (uint32_t)x->recv_row : ca ? (uint32_t)x->recv_call_row : UINT32_MAX;
        int64_t e_recv = is_recv ? rcv->t_begin : ca ? ca->t_begin : rcv->t_end;
        if (xsm_wo_recv(wo, x->dst, x->src, (uint32_t)x->send_row, snd->t_begin, rcv->t_end, e_recv, call_row,
                        rcv->thread)) {
            rc = -1;
            break;
        }
        if (!xsm_is_p2p_wait_pair(x->src, x->dst))
            continue;
        if (snd->kind == XSPROF_MPI_SEND || snd->kind == XSPROF_MPI_SSEND || snd->kind == XSPROF_MPI_SENDRECV) {
            int64_t until = xsm_lr_until(snd->kind == XSPROF_MPI_SSEND, xsm_eager_send(m->eager, x->src, x->dst, x->bytes, snd->op),
                                         snd->t_begin, snd->t_end, post_t);
            if (until != XSM_LR_NONE && until != XSM_LR_POLL)
                rc = xsm_mput(m, x->src, snd->t_end, until - snd->t_begin, x->send_row, snd->op, XSM_WAIT_LATE_RECEIVER,
                              x->dst, post_row, 0);
        } else if (snd->kind == XSPROF_MPI_ISEND) {
            int64_t c = xsm_mcall(&m->r[x->src], x->send_row);
            if (c < 0)
                continue;
            const xsprof_io_mpi *cs = &sd->mpi[c];
            int64_t until = xsm_lr_until(0, xsm_eager_send(m->eager, x->src, x->dst, x->bytes, snd->op), cs->t_begin, cs->t_end,
                                         post_t);
            if (until == XSM_LR_POLL) /* a polling loop's: the polls' time is the analysis's */
                rc = xsm_mput(m, x->src, cs->t_end, post_t, (uint64_t)c, cs->op, XSM_WAIT_LATE_RECEIVER, x->dst, post_row, 1);
            else if (until != XSM_LR_NONE)
                rc = xsm_mput(m, x->src, cs->t_end, until - cs->t_begin, (uint64_t)c, cs->op, XSM_WAIT_LATE_RECEIVER,
                              x->dst, post_row, 0);
        }
    }
    if (!rc)
        rc = xsm_wo_due(wo, INT64_MAX, xsm_mwo_verdict, m) ? -1 : 0;
    xsm_wo_free(wo);
    free(snd_ord);
    free(ord);
    return rc;
}

static int xsm_mwait_next(void *ctx, int32_t r, xsm_cwait_rec *w, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    xsm_mrank *x = &((xsm_mfeed *)ctx)->r[r];
    if (x->next == x->n)
        return 0;
    *w = x->v[x->next++].w;
    return 1;
}

/* A temporary file of the analysis (unlinked at once), NULL on failure. */
static FILE *xsm_mtmp(void)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/xsmerge-analysis-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    unlink(path);
    FILE *f = fdopen(fd, "w+b");
    if (!f)
        close(fd);
    return f;
}

int xsm_an_compute(xsm_an *a, const xsm_run *run, char *err, size_t errlen)
{
    return xsm_an_compute_emit(a, run, NULL, err, errlen);
}

int xsm_an_compute_emit(xsm_an *a, const xsm_run *run, const xsm_emit *given, char *err, size_t errlen)
{
    xsm_emit e;
    xsm_mfeed m = {run, calloc(run->nranks + 1, sizeof *m.r), 0, xsm_eager_new(run)};
    unsigned char *has_gpu = calloc(run->nranks + 1, 1);
    xsm_cpairs cp = {0};
    xsm_sanalysis *sa = NULL;
    xsm_spath *path = NULL;
    FILE *pf = xsm_mtmp(), *inst = xsm_mtmp(), *pieces = xsm_mtmp();
    /* the writers' prepared trace when given (the same orders and flows) */
    int rc = -1, einit = !given && xsm_emit_init_local(&e, run, err, errlen) == 0;
    memset(a, 0, sizeof *a);
    if ((!given && !einit) || !m.r || !m.eager || !has_gpu || !pf || !inst || !pieces) {
        if (given || einit)
            xsm_err_set(err, errlen, "analysis of %s: %s", run->run_dir,
                        !pf || !inst || !pieces ? "cannot make a temporary file (TMPDIR)" : "out of memory");
        goto out;
    }
    int bad = 0;
    for (size_t r = 0; r < run->nranks && !bad; r++) {
        has_gpu[r] = run->ranks[r].present && run->ranks[r].d.ngpu > 0;
        bad = run->ranks[r].present && xsm_mrank_prepare(run, (int32_t)r, &m.r[r]);
    }
    for (size_t i = 0; i < run->nmsgs && !bad; i++)
        bad = xsm_cpairs_add(&cp, run->msgs[i].src, run->msgs[i].dst, run->msgs[i].bytes);
    if (bad || xsm_mcolls(&m) || xsm_mp2p(&m)) {
        xsm_err_set(err, errlen, "analysis of %s: out of memory", run->run_dir);
        goto out;
    }
    for (size_t r = 0; r < run->nranks; r++)
        if (m.r[r].n > 1)
            qsort(m.r[r].v, m.r[r].n, sizeof *m.r[r].v, xsm_mrec_cmp);
    if (!(path = xsm_spath_new(run, fileno(pf)))) {
        xsm_err_set(err, errlen, "analysis of %s: out of memory", run->run_dir);
        goto out;
    }
    xsm_spath_set_pieces(path, pieces);
    /* the model is in memory: a wider window (a rank's ring grows only as its calls come) */
    xsm_feed f = {run, given ? given : &e, xsm_emit_source_analysis(), xsm_emit_source_model(), has_gpu,
                  xsm_analysis_window(XSM_MEMORY_WINDOW), xsm_mwait_next, &m,
                  NULL, NULL, "(the analysis's temporary file in TMPDIR)", "(the analysis's temporary file in TMPDIR)"};
    if (xsm_feed_run(&f, path, inst, 0, &sa, err, errlen)) /* the model needs no reading ahead */
        goto out;
    xsm_cpair *cm;
    size_t ncm;
    xsm_cpairs_take(&cp, &cm, &ncm);
    if (xsm_an_build(a, run, sa, path, cm, ncm, err, errlen))
        goto out;
    a->own_inst = inst; /* merged.h5's tables read them back */
    a->own_pieces = pieces;
    inst = pieces = NULL;
    rc = 0;
out:
    if (einit)
        xsm_emit_free(&e);
    for (size_t r = 0; m.r && r < run->nranks; r++) {
        free(m.r[r].v);
        free(m.r[r].compl_of);
        free(m.r[r].call_of);
    }
    free(m.r);
    xsm_eager_free(m.eager);
    free(has_gpu);
    xsm_cpairs_free(&cp);
    xsm_sanalysis_free(sa);
    xsm_spath_free(path);
    if (pf)
        fclose(pf);
    if (inst)
        fclose(inst);
    if (pieces)
        fclose(pieces);
    return rc;
}

/* merge/analyze/waits.c — Scalasca wait states on the matched messages and
 * collectives, and the short-term delay analysis that names the region on
 * the causing rank whose extra time explains each wait.
 *
 * Definitions (E = enter, X = exit of the call, clipped at 0 and at the
 * waiting call's exit):
 *   Late Sender       receiver blocks in Recv/Wait before the send began: E_send - E_recv
 *   ... / Wrong Order a Late Sender while another message to the same rank,
 *                     already sent when the receive began, is received later
 *   Late Receiver     Ssend (or a send that only returned after the receive
 *                     was posted: rendezvous) blocks before the receive is posted
 *                     (an Isend polled for: its polls before the post)
 *   Wait at Barrier, Wait at NxN   last entry - own entry
 *   NxN Completion    own exit - first exit
 *   Late Broadcast    non-root of Bcast/Scatter: root entry - own entry
 *   Early Reduce      root of Reduce/Gather: last contributor's entry - root entry */
#include <stdlib.h>
#include <string.h>
#include "an.h"
#include "core/record.h"
#include "merge/align/align.h" /* xsm_coll_receives */

static const char *const kind_names[XSM_WAIT_NKINDS] = {
    "Late Sender", "Late Sender / Wrong Order", "Late Receiver", "Wait at Barrier",
    "Wait at NxN", "NxN Completion", "Late Broadcast", "Early Reduce"};

const char *xsm_wait_kind_name(int kind)
{
    return kind >= 0 && kind < XSM_WAIT_NKINDS ? kind_names[kind] : "?";
}

static int wait_push(xsm_an *a, const xsm_wait *w)
{
    if (a->nw == a->wcap) {
        size_t nc = a->wcap ? a->wcap * 2 : 1024;
        xsm_wait *v = realloc(a->w, nc * sizeof *v);
        if (!v)
            return -1;
        a->w = v;
        a->wcap = nc;
    }
    a->w[a->nw++] = *w;
    return 0;
}

static int32_t op_name(xsm_an *a, int32_t r, size_t row)
{
    if (a->rs[r].opname[row] >= 0) /* named by the profile */
        return a->rs[r].opname[row];
    return xsm_an_sname(a, r, a->run->ranks[r].d.mpi[row].op);
}


/* ---- point to point ---------------------------------------------------------- */
typedef struct p2p_cand {
    xsm_wait w;
    size_t msg;
} p2p_cand;

static int cand_cmp(const void *pa, const void *pb)
{
    const p2p_cand *a = pa, *b = pb;
    if (a->w.waiter != b->w.waiter)
        return a->w.waiter < b->w.waiter ? -1 : 1;
    if (a->w.row != b->w.row)
        return a->w.row < b->w.row ? -1 : 1;
    int64_t da = a->w.t_end - a->w.t_begin, db = b->w.t_end - b->w.t_begin;
    return da > db ? -1 : da < db ? 1 : 0;
}

/* The blocking call on dst in which the receive completed: the pipeline's
 * recv_call_row when it names a call, else the call whose interval holds the
 * completion (found by the profile). -1 when there is none. */
static int64_t recv_call(const xsm_an *a, const xsm_message *m)
{
    const xsprof_rank_data *d = &a->run->ranks[m->dst].d;
    if (m->recv_call_row < d->nmpi && d->mpi[m->recv_call_row].kind != XSPROF_MPI_COMPLETION)
        return (int64_t)m->recv_call_row;
    return a->rs[m->dst].call[m->recv_row];
}

typedef struct recv_ent {
    int64_t t_recv, e_send;
    size_t msg;
} recv_ent;

static int recv_ent_cmp(const void *pa, const void *pb)
{
    const recv_ent *a = pa, *b = pb;
    if (a->t_recv != b->t_recv)
        return a->t_recv > b->t_recv ? -1 : 1; /* latest first */
    return a->msg < b->msg ? -1 : a->msg > b->msg;
}

/* recv_ent_cmp is a total order (ties end on the message index), so any
 * sort gives the same array: receives usually arrive in time order, which
 * is exactly reversed (latest first), and need no qsort. */
static void recv_ent_sort(recv_ent *v, size_t n)
{
    int fwd = 1, rev = 1;
    for (size_t i = 1; i < n && (fwd || rev); i++) {
        int c = recv_ent_cmp(&v[i - 1], &v[i]);
        fwd &= c <= 0;
        rev &= c > 0;
    }
    if (fwd)
        return;
    if (rev) {
        for (size_t i = 0, j = n - 1; i < j; i++, j--) {
            recv_ent t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
        return;
    }
    qsort(v, n, sizeof *v, recv_ent_cmp);
}

/* wrong[m] = 1 when a message sent before m's receive began was received after m */
static int wrong_order_flags(const xsm_an *a, unsigned char *wrong)
{
    const xsm_run *run = a->run;
    size_t *cnt = calloc(a->nranks + 1, sizeof *cnt);
    recv_ent *e = malloc((run->nmsgs + 1) * sizeof *e);
    if (!cnt || !e) {
        free(cnt);
        free(e);
        return -1;
    }
    for (size_t i = 0; i < run->nmsgs; i++)
        if (run->msgs[i].dst >= 0 && (size_t)run->msgs[i].dst < a->nranks)
            cnt[run->msgs[i].dst + 1]++;
    for (size_t r = 0; r < a->nranks; r++)
        cnt[r + 1] += cnt[r];
    size_t *pos = malloc((a->nranks + 1) * sizeof *pos);
    if (!pos) {
        free(cnt);
        free(e);
        return -1;
    }
    memcpy(pos, cnt, (a->nranks + 1) * sizeof *pos);
    for (size_t i = 0; i < run->nmsgs; i++) {
        const xsm_message *m = &run->msgs[i];
        if (m->dst < 0 || (size_t)m->dst >= a->nranks || m->src < 0 || (size_t)m->src >= a->nranks ||
            !a->rs[m->dst].present || !a->rs[m->src].present)
            continue;
        const xsprof_rank_data *rd = &run->ranks[m->dst].d, *sd = &run->ranks[m->src].d;
        e[pos[m->dst]++] = (recv_ent){rd->mpi[m->recv_row].t_end, sd->mpi[m->send_row].t_begin, i};
    }
    for (size_t r = 0; r < a->nranks; r++) {
        size_t b = cnt[r], n = pos[r] - cnt[r];
        recv_ent_sort(e + b, n);
        int64_t min_later = INT64_MAX;
        for (size_t k = 0, g; k < n; k = g) {
            /* receives completing at the same nanosecond (a Waitall's) are
             * not each other's later one, as stream/worder.c has it */
            for (g = k; g < n && e[b + g].t_recv == e[b + k].t_recv; g++) {
                const recv_ent *x = &e[b + g];
                const xsm_message *m = &run->msgs[x->msg];
                int64_t rc = recv_call(a, m);
                int64_t e_recv = rc >= 0 ? run->ranks[m->dst].d.mpi[rc].t_begin : x->t_recv;
                wrong[x->msg] = min_later < e_recv;
            }
            for (size_t j = k; j < g; j++)
                if (e[b + j].e_send < min_later)
                    min_later = e[b + j].e_send;
        }
    }
    free(cnt);
    free(pos);
    free(e);
    return 0;
}

static int cand_push(p2p_cand **c, size_t *nc, size_t *cap, const xsm_wait *w, size_t msg)
{
    if (*nc == *cap) {
        size_t ncap = *cap ? *cap * 2 : 1024;
        p2p_cand *v = realloc(*c, ncap * sizeof *v);
        if (!v)
            return -1;
        *c = v;
        *cap = ncap;
    }
    (*c)[*nc].w = *w;
    (*c)[*nc].msg = msg;
    (*nc)++;
    return 0;
}

/* Per name of the analysis (the profile named every call, rs->opname):
 * 1 a poll (xsm_is_poll_op), 0 not. */
static unsigned char *poll_names(const xsm_an *a)
{
    unsigned char *p = malloc(a->names.n + 1);
    for (size_t i = 0; p && i < a->names.n; i++)
        p[i] = (unsigned char)xsm_is_poll_op(a->names.v[i]);
    return p;
}

/* A receive completed by a Recv, Wait or Test that began after the send
 * did, on a rank that had been polling: the time of its polls (poll_names)
 * since its last synchronising call, the last XSM_POLL_KEEP of them, before
 * the send began. t_send: the send's begin; call: the completing call.
 * Also an Isend's completing Wait or Test that began after its receive was
 * posted (t_send: the post): the sender's polls before it. */
static int64_t poll_wait(const xsm_an *a, const unsigned char *poll, int32_t r, size_t call, int64_t t_send)
{
    const xsm_rankstat *rs = &a->rs[r];
    const xsprof_rank_data *d = &a->run->ranks[r].d;
    const xsprof_io_mpi *c = &d->mpi[call];
    if (c->thread != rs->main_thread || (c->kind != XSPROF_MPI_WAIT && c->kind != XSPROF_MPI_RECV))
        return 0;
    size_t k = xsm_an_calls_bound(d, rs, c->thread, c->t_begin, 0);
    while (k < rs->ncalls_sorted && rs->calls_sorted[k] != call && d->mpi[rs->calls_sorted[k]].t_begin == c->t_begin)
        k++;
    int64_t ns = 0;
    for (unsigned n = 0; k-- > 0 && n < XSM_POLL_KEEP;) {
        const xsprof_io_mpi *m = &d->mpi[rs->calls_sorted[k]];
        if (m->thread != c->thread || xsm_an_is_sync(m))
            break;
        if (!poll[rs->opname[rs->calls_sorted[k]]])
            continue;
        int64_t e = m->t_end < t_send ? m->t_end : t_send;
        if (e > m->t_begin)
            ns += e - m->t_begin;
        n++;
    }
    return ns;
}

static int msg_usable(const xsm_an *a, const xsm_message *m)
{
    if (m->src < 0 || m->dst < 0 || (size_t)m->src >= a->nranks || (size_t)m->dst >= a->nranks ||
        !a->rs[m->src].present || !a->rs[m->dst].present || !xsm_is_p2p_wait_pair(m->src, m->dst))
        return 0;
    return m->send_row < a->run->ranks[m->src].d.nmpi && m->recv_row < a->run->ranks[m->dst].d.nmpi;
}

static int p2p_waits(xsm_an *a)
{
    const xsm_run *run = a->run;
    p2p_cand *c = NULL;
    size_t nc = 0, cap = 0;
    unsigned char *wrong = calloc(run->nmsgs + 1, 1);
    unsigned char *poll = poll_names(a);
    if (!wrong || !poll || wrong_order_flags(a, wrong) != 0) {
        free(wrong);
        free(poll);
        return -1;
    }
    int rc = -1;
    /* Late Sender: the receiving call began before the send */
    for (size_t i = 0; i < run->nmsgs; i++) {
        const xsm_message *m = &run->msgs[i];
        if (!msg_usable(a, m))
            continue;
        const xsprof_rank_data *sd = &run->ranks[m->src].d, *rd = &run->ranks[m->dst].d;
        const xsprof_io_mpi *snd = &sd->mpi[m->send_row];
        int64_t rcall = recv_call(a, m);
        if (rcall < 0)
            continue;
        const xsprof_io_mpi *cr = &rd->mpi[rcall];
        if (!xsm_an_is_recv_call(cr->kind))
            continue;
        int64_t until = snd->t_begin < cr->t_end ? snd->t_begin : cr->t_end, from = cr->t_begin;
        if (until <= cr->t_begin) {
            /* a polling loop: its waits end where the send began (or the
             * completing call did), as long as they lasted */
            int64_t ns = poll_wait(a, poll, m->dst, (size_t)rcall, snd->t_begin);
            if (ns <= 0)
                continue;
            until = snd->t_begin < cr->t_begin ? snd->t_begin : cr->t_begin;
            from = until - ns;
        }
        xsm_wait w = {wrong[i] ? XSM_WAIT_WRONG_ORDER : XSM_WAIT_LATE_SENDER, m->dst, m->src, (size_t)rcall, -1, -1,
                      from, until, snd->t_begin, 0, 0, -1, 1, -1};
        if (cand_push(&c, &nc, &cap, &w, i) != 0)
            goto out;
    }
    /* Late Receiver: the sending call waits until the receive is posted */
    for (size_t i = 0; i < run->nmsgs; i++) {
        const xsm_message *m = &run->msgs[i];
        if (!msg_usable(a, m))
            continue;
        const xsprof_rank_data *sd = &run->ranks[m->src].d, *rd = &run->ranks[m->dst].d;
        const xsprof_io_mpi *snd = &sd->mpi[m->send_row];
        int64_t rcall = recv_call(a, m);
        int64_t e_post = m->recv_post_row >= 0 && (size_t)m->recv_post_row < rd->nmpi ? rd->mpi[m->recv_post_row].t_begin
                         : rcall >= 0                                             ? rd->mpi[rcall].t_begin
                                                                                  : rd->mpi[m->recv_row].t_begin;
        int64_t scall = -1;
        int sync = 0;
        if (snd->kind == XSPROF_MPI_SSEND) {
            scall = (int64_t)m->send_row;
            sync = 1;
        } else if (snd->kind == XSPROF_MPI_SEND || snd->kind == XSPROF_MPI_SENDRECV) {
            scall = (int64_t)m->send_row;
        } else if (snd->kind == XSPROF_MPI_ISEND && m->send_completion_row >= 0 &&
                   (size_t)m->send_completion_row < sd->nmpi) {
            scall = a->rs[m->src].call[m->send_completion_row];
        }
        if (scall < 0)
            continue;
        const xsprof_io_mpi *cs = &sd->mpi[scall];
        int64_t until = xsm_lr_until(sync, cs->t_begin, cs->t_end, e_post), from = cs->t_begin;
        if (until == XSM_LR_NONE || (until == XSM_LR_POLL && snd->kind != XSPROF_MPI_ISEND))
            continue;
        if (until == XSM_LR_POLL) {
            /* the Wait or Test that completed an Isend began after the
             * receive was posted: a polling loop's polls before the post
             * waited for it, as a receiver's do for a send */
            int64_t ns = poll_wait(a, poll, m->src, (size_t)scall, e_post);
            if (ns <= 0)
                continue;
            until = e_post;
            from = until - ns;
        }
        xsm_wait w = {XSM_WAIT_LATE_RECEIVER, m->src, m->dst, (size_t)scall, -1, -1, from, until, e_post, 0, 0, -1, 1, -1};
        if (cand_push(&c, &nc, &cap, &w, i) != 0)
            goto out;
    }
    /* one wait per call: Waitall over many late messages waits once, for the latest */
    if (nc > 1)
        qsort(c, nc, sizeof *c, cand_cmp);
    for (size_t i = 0; i < nc; i++) {
        if (i > 0 && c[i].w.waiter == c[i - 1].w.waiter && c[i].w.row == c[i - 1].w.row)
            continue;
        if (wait_push(a, &c[i].w) != 0)
            goto out;
    }
    rc = 0;
out:
    free(c);
    free(poll);
    free(wrong);
    return rc;
}

/* ---- collectives -------------------------------------------------------------- */

/* COMPLETION rows of one rank by request id: finds where a nonblocking
 * collective was completed (its wait happens in that Wait call). */
typedef struct req_row {
    uint64_t req;
    size_t row;
} req_row;

static int req_row_cmp(const void *pa, const void *pb)
{
    const req_row *a = pa, *b = pb;
    if (a->req != b->req)
        return a->req < b->req ? -1 : 1;
    return a->row < b->row ? -1 : a->row > b->row;
}

typedef struct req_index {
    req_row *v;
    size_t n;
} req_index;

static int req_index_build(const xsprof_rank_data *d, req_index *ix)
{
    ix->n = 0;
    ix->v = malloc((d->nmpi + 1) * sizeof *ix->v);
    if (!ix->v)
        return -1;
    for (size_t i = 0; i < d->nmpi; i++)
        if (d->mpi[i].kind == XSPROF_MPI_COMPLETION && d->mpi[i].request && d->mpi[i].coll != XSPROF_COLL_NONE)
            ix->v[ix->n++] = (req_row){d->mpi[i].request, i};
    if (ix->n > 1)
        qsort(ix->v, ix->n, sizeof *ix->v, req_row_cmp);
    return 0;
}

/* first completion of `req` at or after `after` (persistent requests repeat) */
static int64_t req_index_find(const req_index *ix, const xsprof_rank_data *d, uint64_t req, int64_t after)
{
    size_t lo = 0, hi = ix->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ix->v[mid].req < req)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = lo; k < ix->n && ix->v[k].req == req; k++)
        if (d->mpi[ix->v[k].row].t_begin >= after)
            return (int64_t)ix->v[k].row;
    return -1;
}

/* A collective's wait (xsm_coll_waits_find) as an instance of the
 * analysis: the member's id is its blocking call's row. */
typedef struct coll_ctx {
    xsm_an *a;
} coll_ctx;

static int coll_wait_put(void *ctx, const xsm_cwmember *x, int kind, const xsm_cwmember *cause, int64_t tb, int64_t te)
{
    xsm_an *a = ((coll_ctx *)ctx)->a;
    int32_t r = x->rank;
    size_t call = (size_t)x->id;
    int32_t op = op_name(a, r, call);
    if (op < 0)
        return -1;
    xsm_wait w = {kind, r, cause ? cause->rank : -1, call, op, a->rs[r].encl[call], tb, te, cause ? cause->arrive : tb,
                  0, 0, -1, 1, -1};
    return wait_push(a, &w) != 0 ? -1 : 0;
}

static int coll_waits(xsm_an *a)
{
    const xsm_run *run = a->run;
    req_index *ix = calloc(a->nranks + 1, sizeof *ix);
    unsigned char *built = calloc(a->nranks + 1, 1);
    xsm_cwmember *mb = NULL;
    size_t mbcap = 0;
    int rc = -1;
    coll_ctx cx = {a};
    if (!ix || !built)
        goto out;
    for (size_t ci = 0; ci < run->ncolls; ci++) {
        const xsm_collective *c = &run->colls[ci];
        int kind = c->coll_kind;
        if (kind != XSPROF_COLL_BARRIER && kind != XSPROF_COLL_NXN && kind != XSPROF_COLL_ONE2N &&
            kind != XSPROF_COLL_N2ONE)
            continue;
        if (c->n > mbcap) {
            xsm_cwmember *v = realloc(mb, c->n * sizeof *v);
            if (!v)
                goto out;
            mb = v;
            mbcap = c->n;
        }
        size_t nm = 0;
        for (size_t k = 0; k < c->n; k++) {
            int32_t r = c->ranks[k];
            if (r < 0 || (size_t)r >= a->nranks || !a->rs[r].present || c->rows[k] >= run->ranks[r].d.nmpi)
                continue;
            const xsprof_rank_data *d = &run->ranks[r].d;
            const xsprof_io_mpi *m = &d->mpi[c->rows[k]];
            int64_t call = -1; /* the blocking call it waited in: the call, or the Wait completing it */
            if (m->kind == XSPROF_MPI_COLL) {
                call = (int64_t)c->rows[k];
            } else if (m->kind == XSPROF_MPI_ICOLL && m->request) {
                if (!built[r]) {
                    if (req_index_build(d, &ix[r]) != 0)
                        goto out;
                    built[r] = 1;
                }
                int64_t comp = req_index_find(&ix[r], d, m->request, m->t_begin);
                call = comp >= 0 ? a->rs[r].call[comp] : -1;
            } else {
                continue;
            }
            xsm_cwmember x = {r, m->t_begin, call >= 0, 0, 0, xsm_coll_receives(kind, m), xsm_coll_sends(m),
                              call >= 0 ? (uint64_t)call : 0};
            if (call >= 0) {
                x.call_b = d->mpi[call].t_begin;
                x.call_e = d->mpi[call].t_end;
            }
            mb[nm++] = x;
        }
        if (xsm_coll_waits_find(kind, c->root, mb, nm, coll_wait_put, &cx))
            goto out;
    }
    rc = 0;
out:
    if (ix)
        for (size_t r = 0; r < a->nranks; r++)
            free(ix[r].v);
    free(ix);
    free(built);
    free(mb);
    return rc;
}

/* ---- delay analysis -------------------------------------------------------------- */
typedef struct delay_ctx {
    double *acc_c, *acc_w; /* per name */
    int32_t *touched;
    size_t ntouched;
    unsigned char *mark;
} delay_ctx;

static void touch(delay_ctx *x, int32_t nm, int64_t ns, double *acc)
{
    acc[nm] += (double)ns; /* ns, exact: equal excesses tie exactly, the first touched wins */
    if (!x->mark[nm]) {
        x->mark[nm] = 1;
        x->touched[x->ntouched++] = nm;
    }
}

/* The exclusive time of each region of r's main thread in [t0, t1), and
 * under name `none` the time outside every region there (the gaps between
 * its segments; MPI calls count for nothing), in time order as the streamed
 * analysis meets them (sprofile.c v_advance). */
static void window_touch(const xsm_an *a, delay_ctx *x, int32_t r, int64_t t0, int64_t t1, double *acc, int32_t none)
{
    const xsm_rankstat *rs = &a->rs[r];
    int64_t pos = t0;
    for (size_t i = xsm_an_seg_after(rs, t0); i < rs->nseg && rs->seg[i].t0 < t1; i++) {
        const xsm_seg *s = &rs->seg[i];
        if (s->t0 > pos)
            touch(x, none, s->t0 - pos, acc);
        if (s->t1 > pos)
            pos = s->t1;
        if (a->cn[s->cnode].is_mpi)
            continue;
        int64_t b = s->t0 > t0 ? s->t0 : t0, e = s->t1 < t1 ? s->t1 : t1;
        if (e > b)
            touch(x, a->cn[s->cnode].name, e - b, acc);
    }
    if (t1 > pos)
        touch(x, none, t1 - pos, acc);
}

/* The innermost region open on r's main thread at time t (the causing
 * call's own when it is on that thread: its segment begins at t), -1 when
 * none is: a call outside every region is explained by none, as in the
 * streamed analysis (sprofile.c settle), not by the region before it. */
static int32_t region_at(const xsm_an *a, int32_t r, int64_t t)
{
    const xsm_rankstat *rs = &a->rs[r];
    size_t lo = 0, hi = rs->nseg;
    while (lo < hi) { /* first segment ending after t */
        size_t mid = (lo + hi) / 2;
        if (rs->seg[mid].t1 <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == rs->nseg || rs->seg[lo].t0 > t)
        return -1; /* t lies between segments: nothing open */
    for (int32_t c = rs->seg[lo].cnode; c >= 0; c = a->cn[c].parent)
        if (!a->cn[c].is_mpi)
            return a->cn[c].name;
    return -1;
}

/* ---- pairwise intervals (an.h XSM_PAIR_SPAN) ------------------------------------ */
/* The synchronising calls of a rank's main thread, in time order. */
typedef struct sync_ix {
    size_t n;
    uint32_t *row; /* mpi rows, 32 bits as sprofile.c keeps them */
} sync_ix;

/* A receive completed in a synchronising call of its receiver's main
 * thread: that call's end, and when the send began. */
typedef struct pair_ent {
    int32_t dst, src;
    int64_t te, t_send;
} pair_ent;

typedef struct pair_ix {
    sync_ix *s; /* per rank */
    pair_ent *e;
    size_t ne;
} pair_ix;

static int pair_ent_cmp(const void *pa, const void *pb)
{
    const pair_ent *a = pa, *b = pb;
    if (a->dst != b->dst)
        return a->dst < b->dst ? -1 : 1;
    if (a->src != b->src)
        return a->src < b->src ? -1 : 1;
    if (a->te != b->te)
        return a->te < b->te ? -1 : 1;
    return (a->t_send > b->t_send) - (a->t_send < b->t_send);
}

static void pair_ix_free(pair_ix *px, size_t nranks)
{
    for (size_t r = 0; px->s && r < nranks; r++)
        free(px->s[r].row);
    free(px->s);
    free(px->e);
}

static int pair_ix_build(const xsm_an *a, pair_ix *px)
{
    const xsm_run *run = a->run;
    memset(px, 0, sizeof *px);
    if (!(px->s = calloc(a->nranks + 1, sizeof *px->s)) || !(px->e = malloc((run->nmsgs + 1) * sizeof *px->e)))
        return -1;
    for (size_t r = 0; r < a->nranks; r++) {
        const xsm_rankstat *rs = &a->rs[r];
        const xsprof_rank_data *d = &run->ranks[r].d;
        if (!rs->present)
            continue;
        if (!(px->s[r].row = malloc((rs->ncalls_sorted + 1) * sizeof *px->s[r].row)))
            return -1;
        for (size_t k = 0; k < rs->ncalls_sorted; k++) {
            const xsprof_io_mpi *m = &d->mpi[rs->calls_sorted[k]];
            if (m->thread == rs->main_thread && xsm_an_is_sync(m))
                px->s[r].row[px->s[r].n++] = (uint32_t)rs->calls_sorted[k];
        }
    }
    /* by receiver, a stable counting sort (messages come by sender, then
     * send row): each (receiver, sender) run is then in send order, which
     * the completions follow but for messages that overtook others */
    size_t *at = calloc(a->nranks + 1, sizeof *at);
    int64_t *call = malloc((run->nmsgs + 1) * sizeof *call); /* each message's receiving call, -1 none */
    if (!at || !call) {
        free(at);
        free(call);
        return -1;
    }
    for (size_t i = 0; i < run->nmsgs; i++) {
        const xsm_message *m = &run->msgs[i];
        int64_t rc = msg_usable(a, m) ? recv_call(a, m) : -1;
        const xsprof_io_mpi *c = rc >= 0 ? &run->ranks[m->dst].d.mpi[rc] : NULL;
        call[i] = c && c->thread == a->rs[m->dst].main_thread && xsm_an_is_recv_call(c->kind) ? rc : -1;
        if (call[i] >= 0)
            at[m->dst + 1]++;
    }
    for (size_t r = 0; r < a->nranks; r++)
        at[r + 1] += at[r];
    px->ne = at[a->nranks];
    for (size_t i = 0; i < run->nmsgs; i++) {
        const xsm_message *m = &run->msgs[i];
        if (call[i] < 0)
            continue;
        const xsprof_io_mpi *c = &run->ranks[m->dst].d.mpi[call[i]];
        px->e[at[m->dst]++] = (pair_ent){m->dst, m->src, c->t_end, run->ranks[m->src].d.mpi[m->send_row].t_begin};
    }
    free(at);
    free(call);
    int bysrc = 1;
    for (size_t i = 1; i < px->ne && bysrc; i++)
        bysrc = px->e[i - 1].dst != px->e[i].dst || px->e[i - 1].src <= px->e[i].src;
    if (!bysrc) { /* messages not by sender: sort all */
        qsort(px->e, px->ne, sizeof *px->e, pair_ent_cmp);
        return 0;
    }
    for (size_t b = 0, i = 1; i <= px->ne; i++) { /* each run by completion, when it is not already */
        if (i < px->ne && px->e[i].dst == px->e[b].dst && px->e[i].src == px->e[b].src)
            continue;
        for (size_t k = b + 1; k < i; k++)
            if (pair_ent_cmp(&px->e[k - 1], &px->e[k]) > 0) {
                qsort(px->e + b, i - b, sizeof *px->e, pair_ent_cmp);
                break;
            }
        b = i;
    }
    return 0;
}

/* Of rank r's synchronising calls, how many begin before t. */
static size_t sync_before(const xsprof_rank_data *d, const sync_ix *s, int64_t t)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->mpi[s->row[mid]].t_begin < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* How many of rank r's synchronising calls ended by t (they do not overlap). */
static size_t sync_closed(const xsprof_rank_data *d, const sync_ix *s, int64_t t)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->mpi[s->row[mid]].t_end <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Exit of the last synchronising call on r's main thread that ended at or
 * before t: the start of r's own synchronisation interval; *row (when not
 * NULL) that call's mpi row, UINT64_MAX when there is none. */
static int64_t prev_sync_end(const xsm_an *a, const pair_ix *px, int32_t r, int64_t t, uint64_t *row)
{
    const xsprof_rank_data *d = &a->run->ranks[r].d;
    size_t k = sync_closed(d, &px->s[r], t);
    if (row)
        *row = k ? px->s[r].row[k - 1] : UINT64_MAX;
    return k ? d->mpi[px->s[r].row[k - 1]].t_end : a->rs[r].t_first;
}

/* A blocking collective of the pair since the waiter's call *bw (an.h
 * XSM_PAIR_SPAN): the waiter's newest one (of its calls 1..nw) whose
 * communicator holds the causer sets *bw, and the causer's call of the same
 * instance (of its calls 1..nc) *bc: 1. 0 when there is none, -1 when the
 * causer's call is not among its last XSM_PAIR_SPAN. */
static int pair_coll(const xsm_an *a, const xsprof_rank_data *wd, const sync_ix *sw, const xsprof_rank_data *cd,
                     const sync_ix *sc, int32_t C, size_t nw, size_t nc, size_t *bw, size_t *bc)
{
    for (size_t k = nw; k > *bw && nw + 1 - k <= XSM_PAIR_SPAN; k--) {
        const xsprof_io_mpi *m = &wd->mpi[sw->row[k - 1]];
        if (m->kind != XSPROF_MPI_COLL || !m->coll_seq || !xsm_comm_holds(wd, m->comm, C, a->nranks))
            continue;
        for (size_t j = nc; j > 0 && nc + 1 - j <= XSM_PAIR_SPAN; j--) {
            const xsprof_io_mpi *q = &cd->mpi[sc->row[j - 1]];
            if (q->kind == XSPROF_MPI_COLL && q->comm == m->comm && q->coll_seq == m->coll_seq) {
                *bw = k;
                *bc = j;
                return 1;
            }
        }
        return -1;
    }
    return 0;
}

/* The pairwise intervals of a Late Sender or Receiver (an.h): the waiter's starts at
 * the end of the call in which it received the causer's previous message,
 * the causer's at the end of its first synchronising call that began with
 * or after that send; *crow the causer's synchronising calls from there on
 * (their waits may have made it late). 0 when they do not apply. Calls are
 * numbered from 1 in time order, 0 standing for the rank's start. */
static int pair_bounds(const xsm_an *a, const pair_ix *px, const xsm_wait *w, int64_t *c0, int64_t *w0, uint64_t *crow,
                       size_t *ncrow)
{
    int32_t W = w->waiter, C = w->causer;
    const xsprof_rank_data *wd = &a->run->ranks[W].d, *cd = &a->run->ranks[C].d;
    if (w->kind != XSM_WAIT_LATE_SENDER && w->kind != XSM_WAIT_WRONG_ORDER &&
        !(w->kind == XSM_WAIT_LATE_RECEIVER && xsm_pair_lr_call(wd->mpi[w->row].kind)))
        return 0;
    if (wd->mpi[w->row].thread != a->rs[W].main_thread)
        return 0;
    const sync_ix *sw = &px->s[W], *sc = &px->s[C];
    int64_t wb = wd->mpi[w->row].t_begin; /* the waiting call's */
    size_t lo = 0, hi = px->ne; /* first entry after (W, C, wb) */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const pair_ent *e = &px->e[mid];
        if (e->dst < W || (e->dst == W && (e->src < C || (e->src == C && e->te <= wb))))
            lo = mid + 1;
        else
            hi = mid;
    }
    const pair_ent *e = lo > 0 && px->e[lo - 1].dst == W && px->e[lo - 1].src == C ? &px->e[lo - 1] : NULL;
    size_t nw = sync_closed(wd, sw, wb), nc = sync_closed(cd, sc, w->t_cause), bw = 0, bc = 0;
    if (e)
        bw = sync_closed(wd, sw, e->te); /* the call that received it is the last to end by then */
    int coll = pair_coll(a, wd, sw, cd, sc, C, nw, nc, &bw, &bc);
    if (coll < 0)
        return 0;
    if (!coll && e) {
        bc = sync_before(cd, sc, e->t_send) + 1;
        if (bc > nc)
            return 0;
    }
    if (nw + 1 - bw > XSM_PAIR_SPAN || nc + 1 - bc > XSM_PAIR_SPAN)
        return 0;
    *w0 = bw ? wd->mpi[sw->row[bw - 1]].t_end : a->rs[W].t_first;
    *c0 = bc ? cd->mpi[sc->row[bc - 1]].t_end : a->rs[C].t_first;
    *ncrow = 0;
    for (size_t k = bc ? bc : 1; k <= nc; k++)
        crow[(*ncrow)++] = sc->row[k - 1];
    return 1;
}

static int rootcause_add(xsm_an *a, int kind, int32_t rank, int32_t region, double s, size_t *cap)
{
    for (size_t i = 0; i < a->nrc; i++)
        if (a->rc[i].kind == kind && a->rc[i].rank == rank && a->rc[i].region == region) {
            a->rc[i].seconds += s;
            return 0;
        }
    if (a->nrc == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        xsm_rootcause *v = realloc(a->rc, nc * sizeof *v);
        if (!v)
            return -1;
        a->rc = v;
        *cap = nc;
    }
    a->rc[a->nrc++] = (xsm_rootcause){kind, rank, region, s};
    return 0;
}

static int rc_cmp(const void *pa, const void *pb)
{
    const xsm_rootcause *a = pa, *b = pb;
    return a->seconds > b->seconds ? -1 : a->seconds < b->seconds ? 1 : 0;
}

typedef struct delay_add_ctx {
    xsm_an *a;
    int kind;
    size_t *cap;
} delay_add_ctx;

static int delay_add(void *ctx, int32_t rank, int32_t region, double seconds)
{
    delay_add_ctx *c = ctx;
    return rootcause_add(c->a, c->kind, rank, region, seconds, c->cap);
}

/* waits with a causing rank, by when the causer arrived (then index) */
static const xsm_wait *dorder_w;
static int dorder_cmp(const void *pa, const void *pb)
{
    size_t i = *(const size_t *)pa, k = *(const size_t *)pb;
    int64_t x = dorder_w[i].t_cause, y = dorder_w[k].t_cause;
    return x != y ? (x < y ? -1 : 1) : (i > k) - (i < k);
}

/* Each wait's delay costs (delay.c), in the order the causers arrived: a
 * wait that made a causer late was caused earlier, so its root causes are
 * known when the wait it propagates into comes. */
static int delay_analysis(xsm_an *a)
{
    size_t nn = a->names.n;
    delay_ctx x = {calloc(nn + 1, sizeof(double)), calloc(nn + 1, sizeof(double)), malloc((nn + 1) * sizeof(int32_t)), 0,
                   calloc(nn + 1, 1)};
    size_t cap = 0, nord = 0;
    size_t *ord = malloc((a->nw + 1) * sizeof *ord);
    xsm_carries *car = calloc(a->nranks + 1, sizeof *car);
    int32_t *reg = malloc((nn + 1) * sizeof *reg);
    double *dl = malloc((nn + 1) * sizeof *dl);
    pair_ix px;
    int rc = -1;
    if (pair_ix_build(a, &px) != 0 || !x.acc_c || !x.acc_w || !x.touched || !x.mark || !ord || !car || !reg || !dl)
        goto out;
    for (size_t i = 0; i < a->nw; i++) {
        a->w[i].root_rank = -1;
        if (a->w[i].causer >= 0)
            ord[nord++] = i;
    }
    dorder_w = a->w;
    if (nord > 1)
        qsort(ord, nord, sizeof *ord, dorder_cmp);
    for (size_t o = 0; o < nord; o++) {
        xsm_wait *w = &a->w[ord[o]];
        uint64_t crow[XSM_PAIR_SPAN];
        size_t ncrow = 0;
        /* the waiter's interval ends where its waiting call began (before
         * the wait, for the waits of a polling loop) */
        int64_t wcall = a->run->ranks[w->waiter].d.mpi[w->row].t_begin;
        if (!pair_bounds(a, &px, w, &w->cause_prev, &w->wait_prev, crow, &ncrow)) {
            uint64_t pc;
            w->cause_prev = prev_sync_end(a, &px, w->causer, w->t_cause, &pc);
            w->wait_prev = prev_sync_end(a, &px, w->waiter, wcall, NULL);
            if (pc != UINT64_MAX)
                crow[ncrow++] = pc;
        }
        x.ntouched = 0;
        window_touch(a, &x, w->causer, w->cause_prev, w->t_cause, x.acc_c, (int32_t)nn);
        window_touch(a, &x, w->waiter, w->wait_prev, wcall, x.acc_w, (int32_t)nn);
        size_t n = 0;
        for (size_t k = 0; k < x.ntouched; k++) {
            int32_t nm = x.touched[k];
            double d = x.acc_c[nm] - x.acc_w[nm];
            if (d > 0) {
                reg[n] = nm == (int32_t)nn ? -1 : nm; /* outside every region */
                dl[n++] = d;
            }
        }
        double s = (double)(w->t_end - w->t_begin) * 1e-9;
        const xsm_carry *carry[XSM_PAIR_SPAN];
        size_t ncarry = 0;
        for (size_t k = 0; k < ncrow; k++)
            if ((carry[ncarry] = xsm_carries_get(&car[w->causer], crow[k], w->t_cause)))
                ncarry++;
        int32_t fallback = n ? -1 : region_at(a, w->causer, w->t_cause);
        delay_add_ctx dc = {a, w->kind, &cap};
        xsm_dist d;
        if (xsm_delay_costs(w->causer, reg, dl, n, fallback, s, carry, ncarry, &d, delay_add, &dc) != 0)
            goto out;
        w->root_rank = d.e[0].rank;
        w->root_region = d.e[0].region;
        xsm_carries_put(&car[w->waiter], w->row, w->t_cause, w->t_end - w->t_begin, w->kind, &d);
        for (size_t k = 0; k < x.ntouched; k++) {
            int32_t nm = x.touched[k];
            x.acc_c[nm] = x.acc_w[nm] = 0;
            x.mark[nm] = 0;
        }
    }
    if (a->nrc > 1)
        qsort(a->rc, a->nrc, sizeof *a->rc, rc_cmp);
    rc = 0;
out:
    pair_ix_free(&px, a->nranks);
    free(x.acc_c);
    free(x.acc_w);
    free(x.touched);
    free(x.mark);
    free(ord);
    free(car);
    free(reg);
    free(dl);
    return rc;
}

int xsm_an_waits(xsm_an *a)
{
    size_t np2p;
    if (p2p_waits(a) != 0)
        return -1;
    np2p = a->nw;
    for (size_t i = 0; i < np2p; i++) { /* fill in op and region now that rows are final */
        xsm_wait *w = &a->w[i];
        w->op = op_name(a, w->waiter, w->row);
        if (w->op < 0)
            return -1;
        w->region = a->rs[w->waiter].encl[w->row];
    }
    if (coll_waits(a) != 0)
        return -1;
    for (size_t i = 0; i < a->nw; i++) {
        const xsm_wait *w = &a->w[i];
        double s = (double)(w->t_end - w->t_begin) * 1e-9;
        a->wait_s[w->kind] += s;
        a->wait_n[w->kind] += w->count;
        a->rs[w->waiter].wait_ns += w->t_end - w->t_begin;
    }
    return delay_analysis(a);
}

/* Waits of the streamed analysis: one per site and rank, with its count;
 * its root causes. */
int xsm_an_waits_streamed(xsm_an *a, const xsm_sanalysis *sa)
{
    for (size_t r = 0; r < a->nranks; r++) {
        if (!a->rs[r].present)
            continue;
        xsm_anrank_out v;
        xsm_sanalysis_view(sa, (int32_t)r, &v);
        for (size_t i = 0; i < v.nw; i++) {
            const xsm_swait *s = &v.w[i];
            int32_t op = xsm_an_sname(a, (int32_t)r, s->op);
            int32_t reg = s->encl >= 0 ? xsm_an_sname(a, (int32_t)r, (uint32_t)s->encl) : -1;
            int32_t root = s->root >= 0 ? xsm_names_intern(&a->names, xsm_sanalysis_name(sa, s->root)) : s->root;
            if (op < 0 || (s->encl >= 0 && reg < 0) || (s->root >= 0 && root < 0))
                return -1;
            xsm_wait w = {s->kind, (int32_t)r, s->causer, 0, op, reg, 0, s->ns, 0, 0, 0, root, s->n, -1};
            if (wait_push(a, &w) != 0)
                return -1;
            a->wait_s[w.kind] += (double)s->ns * 1e-9;
            a->wait_n[w.kind] += s->n;
            a->rs[r].wait_ns += s->ns;
            if (root == XSM_ROOT_BEYOND) {
                a->beyond_s[w.kind] += (double)s->ns * 1e-9;
                a->beyond_n[w.kind] += s->n;
                a->beyond_total += s->n;
            }
        }
    }
    size_t n, cap = 0;
    const xsm_srcause *rc = xsm_sanalysis_rootcauses(sa, &n);
    for (size_t i = 0; i < n; i++) {
        int32_t g = rc[i].region >= 0 ? xsm_names_intern(&a->names, xsm_sanalysis_name(sa, rc[i].region)) : -1;
        if ((rc[i].region >= 0 && g < 0) || rootcause_add(a, rc[i].kind, rc[i].rank, g, rc[i].seconds, &cap) != 0)
            return -1;
    }
    if (a->nrc > 1)
        qsort(a->rc, a->nrc, sizeof *a->rc, rc_cmp);
    return 0;
}

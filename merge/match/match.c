/* merge/match/match.c — see match.h. Point-to-point matching is a hash
 * join: O(n) time and one key row per send/receive of memory. */
#include "merge/match/match.h"
#include "merge/util.h"
#include "core/record.h" /* kinds and flags of the mpi rows */

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct xsm_p2p_key {
    uint32_t comm;
    int32_t src, dst, tag;
    uint64_t seq;     /* the row is on src for a send, on dst for a receive */
    size_t row;       /* send row, or receive completion row */
} xsm_p2p_key;

/* Rows linked to a key, kept beside the keys (same index) only when some
 * rank has nonblocking requests: for blocking traffic they are implied
 * (no completion, no post, the receive is its own call). */
typedef struct xsm_p2p_link {
    int64_t post;     /* recv: Irecv post row, -1 */
    int64_t aux;      /* send: completion row; recv: call row */
} xsm_p2p_link;

static int xsm_key_eq(const xsm_p2p_key *x, const xsm_p2p_key *y)
{
    return x->comm == y->comm && x->src == y->src && x->dst == y->dst && x->tag == y->tag && x->seq == y->seq;
}

static uint64_t xsm_key_hash(const xsm_p2p_key *k) { return xsm_match_key_hash(k->comm, k->src, k->dst, k->tag, k->seq); }

typedef struct xsm_req {
    uint64_t request;
    int64_t t;
    int completion; /* posts sort before completions at the same time */
    size_t row;
} xsm_req;

static int xsm_req_cmp(const void *a, const void *b)
{
    const xsm_req *x = a, *y = b;
    if (x->request != y->request) return x->request < y->request ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->completion != y->completion) return x->completion - y->completion;
    return x->row < y->row ? -1 : x->row > y->row;
}

typedef struct xsm_thr_row {
    uint32_t thread;
    uint32_t completion; /* calls sort before completions at the same time */
    int64_t t;
    size_t row;
} xsm_thr_row;

static int xsm_thr_cmp(const void *a, const void *b)
{
    const xsm_thr_row *x = a, *y = b;
    if (x->thread != y->thread) return x->thread < y->thread ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->completion != y->completion) return x->completion < y->completion ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* A rank's slice of a shared key array, sized by the counting pass: a
 * push past its end is a counting error, never a realloc. */
typedef struct xsm_vec {
    void *p;
    size_t n, cap, elem;
} xsm_vec;

static void *xsm_vec_push(xsm_vec *v)
{
    if (v->n == v->cap)
        return NULL;
    return (char *)v->p + v->elem * v->n++;
}

static int xsm_is_send(const xsprof_io_mpi *m)
{
    return (m->kind == XSPROF_MPI_SEND || m->kind == XSPROF_MPI_SSEND || m->kind == XSPROF_MPI_ISEND ||
            m->kind == XSPROF_MPI_SENDRECV) && m->peer >= 0;
}

typedef struct xsm_coll_key {
    uint32_t comm;
    int32_t rank;
    uint64_t seq;
    size_t row;
} xsm_coll_key;

/* Requests and COMPLETION rows of a rank (counted by the caller's pass). */
typedef struct xsm_rank_counts {
    size_t nreq, ncompl;
} xsm_rank_counts;

static int xsm_is_req(const xsprof_io_mpi *m)
{
    return m->request && (m->kind == XSPROF_MPI_ISEND || m->kind == XSPROF_MPI_IRECV ||
                          m->kind == XSPROF_MPI_ICOLL || m->kind == XSPROF_MPI_COMPLETION);
}

/* A receive of the rank, for xsm_recv_order_fix. */
typedef struct xsm_runit {
    xsm_p2p_key *k;
    int64_t t;   /* posted: its Irecv's begin, else its own */
    size_t prow; /* the row t is of (ties) */
    int floating;
} xsm_runit;

static int xsm_runit_cmp(const void *a, const void *b)
{
    const xsm_runit *x = a, *y = b;
    if (x->k->comm != y->k->comm) return x->k->comm < y->k->comm ? -1 : 1;
    if (x->k->src != y->k->src) return x->k->src < y->k->src ? -1 : 1;
    if (x->k->tag != y->k->tag) return x->k->tag < y->k->tag ? -1 : 1;
    if (x->floating != y->floating) return x->floating - y->floating;
    if (!x->floating && x->k->seq != y->k->seq) return x->k->seq < y->k->seq ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->prow < y->prow ? -1 : x->prow > y->prow;
}

static int xsm_runit_before(const xsm_runit *x, const xsm_runit *y)
{
    return x->t < y->t || (x->t == y->t && x->prow < y->prow);
}

/* MPI matches the receives of one (comm, source, tag) in posting order
 * (non-overtaking), but the collector numbers a receive posted without a
 * known key (MPI_ANY_SOURCE, MPI_ANY_TAG, also persistent ones: its post
 * row has no number) when it completes: a receive posted after it and
 * numbered first, or two such receives completed the other way round,
 * would each be paired with the other's send. In every key that has such
 * "floating" receives the numbers the collector gave out are dealt again
 * in posting order; receives numbered at their post keep their order among
 * themselves. k: the rank's n receive keys (rows of d). */
static int xsm_recv_order_fix(const xsprof_rank_data *d, const int64_t *post_of, xsm_p2p_key *k, size_t n)
{
    size_t nf = 0;
    for (size_t i = 0; post_of && i < n; i++) {
        int64_t po = post_of[k[i].row];
        nf += po >= 0 && d->mpi[po].kind == XSPROF_MPI_IRECV && d->mpi[po].seq == 0 && k[i].seq;
    }
    if (!nf)
        return 0;
    xsm_runit *u = malloc(n * sizeof *u);
    uint64_t *num = malloc(n * sizeof *num);
    xsm_p2p_key **ord = malloc(n * sizeof *ord);
    int rc = u && num && ord ? 0 : -1;
    size_t nu = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        if (!k[i].seq)
            continue; /* unnumbered: pairs with nothing */
        int64_t po = post_of[k[i].row];
        int irecv = po >= 0 && d->mpi[po].kind == XSPROF_MPI_IRECV;
        size_t pr = irecv ? (size_t)po : k[i].row;
        u[nu++] = (xsm_runit){&k[i], d->mpi[pr].t_begin, pr, irecv && d->mpi[po].seq == 0};
    }
    /* numbers a cancelled receive left void (mpi/ xsprof_seq_release: a
     * floating receive had taken a higher one): the numbers above close up */
    size_t nh = 0;
    xsm_p2p_key *hole = NULL;
    for (size_t i = 0; !rc && i < d->nmpi; i++) {
        const xsprof_io_mpi *m = &d->mpi[i];
        if (m->kind != XSPROF_MPI_COMPLETION || !m->seq || (m->flags & (XSPROF_MPI_F_RECV | XSPROF_MPI_F_CANCELLED)) !=
                                                              (XSPROF_MPI_F_RECV | XSPROF_MPI_F_CANCELLED))
            continue;
        xsm_p2p_key *v = realloc(hole, (nh + 1) * sizeof *hole);
        if (!v)
            rc = -1;
        else
            (hole = v)[nh++] = (xsm_p2p_key){m->comm, m->peer, 0, m->tag, m->seq, i};
    }
    if (!rc)
        qsort(u, nu, sizeof *u, xsm_runit_cmp);
    for (size_t a = 0, b; !rc && a < nu; a = b) {
        size_t f = a; /* [a, f) numbered at post, by number; [f, b) floating, by post */
        for (b = a; b < nu && u[b].k->comm == u[a].k->comm && u[b].k->src == u[a].k->src && u[b].k->tag == u[a].k->tag;
             b++)
            f += !u[b].floating;
        if (f == b)
            continue;
        for (size_t j = a; j < b; j++) {
            uint64_t x = u[j].k->seq, below = 0;
            for (size_t h = 0; h < nh; h++)
                below += hole[h].comm == u[a].k->comm && hole[h].src == u[a].k->src && hole[h].tag == u[a].k->tag &&
                         hole[h].seq < x;
            num[j - a] = x - below;
        }
        qsort(num, b - a, sizeof *num, xsm_u64_cmp);
        /* the two runs merged by post: the order MPI matched them in */
        size_t x = a, y = f, o = 0;
        while (x < f || y < b)
            ord[o++] = y == b || (x < f && !xsm_runit_before(&u[y], &u[x])) ? u[x++].k : u[y++].k;
        for (size_t j = 0; j < o; j++)
            ord[j]->seq = num[j];
    }
    free(u);
    free(num);
    free(ord);
    free(hole);
    return rc;
}

int xsm_match_links(const xsprof_rank_data *d, size_t nreq, size_t ncompl, int64_t *post_of, int64_t *compl_of,
                    int64_t *call_of)
{
    size_t n = d->nmpi;
    xsm_req *req = malloc((nreq ? nreq : 1) * sizeof *req);
    xsm_thr_row *thr = malloc((ncompl ? n : 1) * sizeof *thr);
    if (!req || !thr) {
        free(req);
        free(thr);
        return -1;
    }
    nreq = 0;
    for (size_t i = 0; i < n; i++) {
        const xsprof_io_mpi *m = &d->mpi[i];
        post_of[i] = compl_of[i] = call_of[i] = -1;
        if (ncompl)
            thr[i] = (xsm_thr_row){m->thread, m->kind == XSPROF_MPI_COMPLETION, m->t_begin, i};
        if (xsm_is_req(m))
            req[nreq++] = (xsm_req){m->request, m->t_begin, m->kind == XSPROF_MPI_COMPLETION, i};
    }
    qsort(req, nreq, sizeof *req, xsm_req_cmp);
    for (size_t i = 0; i < nreq; i++) {
        if (!req[i].completion)
            continue;
        /* the most recent post of this request before the completion */
        for (size_t j = i; j-- > 0 && req[j].request == req[i].request;) {
            if (!req[j].completion) {
                post_of[req[i].row] = (int64_t)req[j].row;
                compl_of[req[j].row] = (int64_t)req[i].row;
                break;
            }
        }
    }
    /* The call holding a COMPLETION is the latest non-COMPLETION call on its
     * thread that began at or before it and has not ended before it. */
    size_t unsorted = 0;
    for (size_t i = 1; ncompl && i < n && !unsorted; i++)
        unsorted = xsm_thr_cmp(&thr[i - 1], &thr[i]) > 0;
    if (unsorted) /* one thread recorded in order needs no sort */
        qsort(thr, n, sizeof *thr, xsm_thr_cmp);
    size_t nwalk = ncompl ? n : 0; /* no completion to place: no walk */
    int64_t last_call = -1;
    uint32_t last_thread = UINT32_MAX;
    int64_t sendrecv_open = -1; /* Sendrecv whose receive completion follows */
    for (size_t k = 0; k < nwalk; k++) {
        size_t i = thr[k].row;
        const xsprof_io_mpi *m = &d->mpi[i];
        if (m->thread != last_thread) {
            last_thread = m->thread;
            last_call = sendrecv_open = -1;
        }
        if (m->kind != XSPROF_MPI_COMPLETION) {
            last_call = (int64_t)i;
            sendrecv_open = m->kind == XSPROF_MPI_SENDRECV ? (int64_t)i : -1;
            continue;
        }
        if (last_call >= 0 && d->mpi[last_call].t_end >= m->t_begin)
            call_of[i] = last_call;
        if ((m->flags & XSPROF_MPI_F_RECV) && post_of[i] < 0 && sendrecv_open >= 0) {
            call_of[i] = sendrecv_open; /* the receive half of a Sendrecv */
            sendrecv_open = -1;
        }
    }
    free(req);
    free(thr);
    return 0;
}

/* Per rank: pair nonblocking posts with completions (xsm_match_links) and
 * emit the rank's send, receive and collective keys. */
static int xsm_rank_keys(const xsm_run *run, int32_t r, xsm_rank_counts cnt, xsm_vec *sends, xsm_vec *recvs,
                         xsm_vec *slinks, xsm_vec *rlinks, int keep_links, xsm_vec *colls, uint64_t *open_posts)
{
    const xsprof_rank_data *d = &run->ranks[r].d;
    size_t n = d->nmpi;
    /* Blocking traffic only (no request, no completion): nothing to pair,
     * so none of the per-row link arrays (24 bytes a row) is needed. */
    int links = cnt.nreq || cnt.ncompl;
    size_t nrecv0 = recvs->n;
    /* completion -> post row, post -> completion row, completion -> holding call */
    int64_t *post_of = NULL, *compl_of = NULL, *call_of = NULL;
    int rc = -1;
    if (links) {
        post_of = malloc((n ? n : 1) * sizeof *post_of);
        compl_of = malloc((n ? n : 1) * sizeof *compl_of);
        call_of = malloc((n ? n : 1) * sizeof *call_of);
        if (!post_of || !compl_of || !call_of || xsm_match_links(d, cnt.nreq, cnt.ncompl, post_of, compl_of, call_of))
            goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const xsprof_io_mpi *m = &d->mpi[i];
        int64_t po = links ? post_of[i] : -1, co = links ? compl_of[i] : -1, ca = links ? call_of[i] : -1;
        if ((m->kind == XSPROF_MPI_COLL || m->kind == XSPROF_MPI_ICOLL) && m->coll_seq) {
            xsm_coll_key *k = xsm_vec_push(colls);
            if (!k)
                goto out;
            *k = (xsm_coll_key){m->comm, r, m->coll_seq, i};
        }
        if (xsm_is_send(m)) {
            xsm_p2p_key *k = xsm_vec_push(sends);
            if (!k)
                goto out;
            *k = (xsm_p2p_key){m->comm, r, m->peer, m->tag, m->seq, i};
            if (keep_links) {
                xsm_p2p_link *lk = xsm_vec_push(slinks);
                if (!lk)
                    goto out;
                *lk = (xsm_p2p_link){-1, co};
            }
            continue;
        }
        int recv = m->kind == XSPROF_MPI_RECV ||
                   (m->kind == XSPROF_MPI_COMPLETION && (m->flags & XSPROF_MPI_F_RECV) &&
                    !(m->flags & XSPROF_MPI_F_CANCELLED));
        if (m->kind == XSPROF_MPI_IRECV && co < 0 && !(m->flags & (XSPROF_MPI_F_CANCELLED | XSPROF_MPI_F_FREED)))
            (*open_posts)++;
        if (!recv || m->peer < 0)
            continue;
        uint32_t comm = m->comm;
        if (comm == UINT32_MAX && po >= 0)
            comm = d->mpi[po].comm;
        else if (comm == UINT32_MAX && ca >= 0)
            comm = d->mpi[ca].comm;
        xsm_p2p_key *k = xsm_vec_push(recvs);
        if (!k)
            goto out;
        int64_t call = m->kind == XSPROF_MPI_RECV ? (int64_t)i : (ca >= 0 ? ca : (int64_t)i);
        int64_t post = po >= 0 && d->mpi[po].kind == XSPROF_MPI_IRECV ? po : -1;
        *k = (xsm_p2p_key){comm, m->peer, r, m->tag, m->seq, i};
        if (keep_links) {
            xsm_p2p_link *lk = xsm_vec_push(rlinks);
            if (!lk)
                goto out;
            *lk = (xsm_p2p_link){post, call};
        }
    }
    rc = links ? xsm_recv_order_fix(d, post_of, (xsm_p2p_key *)recvs->p + nrecv0, recvs->n - nrecv0) : 0;
out:
    free(post_of);
    free(compl_of);
    free(call_of);
    return rc;
}

static int xsm_coll_cmp(const void *a, const void *b)
{
    const xsm_coll_key *x = a, *y = b;
    if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* Size of communicator `comm` as any present member defines it, 0 if unknown. */
static uint32_t xsm_comm_size(const xsm_run *run, uint32_t comm)
{
    for (size_t r = 0; r < run->nranks; r++) {
        const xsprof_rank_data *d = &run->ranks[r].d;
        for (size_t i = 0; i < d->ncomms; i++)
            if (d->comms[i].id == comm)
                return d->comms[i].size;
    }
    return 0;
}

enum { XSM_NOTES_LISTED = 5 }; /* unmatched sends (receives) listed one by one */

static void xsm_note_p2p(FILE *notes, const char *what, const xsm_p2p_key *k, size_t *listed)
{
    if (!notes || (*listed)++ >= XSM_NOTES_LISTED)
        return;
    fprintf(notes, "xsmerge: note: unmatched %s: rank %d -> %d, comm %u, tag %d, seq %llu (row %zu on rank %d)\n", what,
            (int)k->src, (int)k->dst, k->comm, (int)k->tag, (unsigned long long)k->seq, k->row,
            (int)(what[0] == 's' ? k->src : k->dst));
}

/* Per rank: what the counting pass found, and where its keys and messages go. */
typedef struct xsm_rank_plan {
    xsm_rank_counts cnt;
    size_t nsend, nrecv, ncoll; /* keys the rank yields */
    size_t sfirst, rfirst, cfirst; /* their first index in the shared arrays */
    uint64_t open_posts;
    size_t matched, mfirst; /* its sends that found a receive, their first message */
} xsm_rank_plan;

/* The shared state of matching; the per-rank steps touch disjoint parts.
 * Divided (collective mode on one node, xsm_run.shm): the arrays from c to
 * by_dst lie in one region every process maps, each process builds the
 * keys of its ranks, joins the receives of its ranks and writes the
 * messages of its ranks' sends, and waits for the others between steps. */
typedef struct xsm_match_ctx {
    xsm_run *run;
    xsm_rank_plan *plan;
    xsm_p2p_key *s, *v;     /* sends, receives (rank by rank, row order) */
    xsm_p2p_link *sl, *rl;  /* beside them when links */
    xsm_coll_key *c;
    int links;
    size_t *by_dst, *dfirst; /* sends bucketed by dst: by_dst[dfirst[r] .. dfirst[r + 1]) */
    size_t *recv_of;         /* send -> 1 + receive key (1 + its row once the keys are freed), 0 if none */
    unsigned char *recv_done;
    xsm_message *msgs;
    int part, parts;         /* divided: this process's ranks are r % parts == part */
    int split_count;         /* divided with xsm_run.reduce: each process counts its ranks */
    char *shm;               /* divided: the region, shm_len bytes */
    size_t shm_len;
    int *failed;             /* a step failed: in the region when divided, so all know */
    int failed_here;
} xsm_match_ctx;

static int xsm_mine(const xsm_match_ctx *c, size_t r) { return c->parts <= 1 || (int)(r % (size_t)c->parts) == c->part; }

/* An unmatched end worth a note: its peer was loaded (a send whose
 * receiver is missing is not an anomaly, nor a receive from a missing
 * sender). */
static int xsm_unmatched_send(const xsm_match_ctx *c, size_t i)
{
    const xsm_run *run = c->run;
    return !c->recv_of[i] && (size_t)c->s[i].dst < run->nranks && run->ranks[c->s[i].dst].present;
}

static int xsm_unmatched_recv(const xsm_match_ctx *c, size_t j)
{
    const xsm_run *run = c->run;
    return !c->recv_done[j] && (size_t)c->v[j].src < run->nranks && run->ranks[c->v[j].src].present;
}

/* Divided: wait until every process has written its part. */
static void xsm_match_sync(const xsm_match_ctx *c)
{
    if (c->parts > 1)
        c->run->sync(c->run->sync_ctx);
}

static int xsm_count_rank(void *ctx, size_t r)
{
    xsm_match_ctx *c = ctx;
    xsm_rank_plan *pl = &c->plan[r];
    const xsprof_rank_data *d = &c->run->ranks[r].d;
    if (c->split_count && !xsm_mine(c, r))
        return 0; /* its owner counts it */
    for (size_t i = 0; c->run->ranks[r].present && i < d->nmpi; i++) {
        const xsprof_io_mpi *m = &d->mpi[i];
        int send = xsm_is_send(m);
        pl->nsend += send;
        pl->nrecv += !send && m->peer >= 0 &&
                     (m->kind == XSPROF_MPI_RECV || (m->kind == XSPROF_MPI_COMPLETION && (m->flags & XSPROF_MPI_F_RECV) &&
                                                     !(m->flags & XSPROF_MPI_F_CANCELLED)));
        pl->ncoll += (m->kind == XSPROF_MPI_COLL || m->kind == XSPROF_MPI_ICOLL) && m->coll_seq;
        pl->cnt.ncompl += m->kind == XSPROF_MPI_COMPLETION;
        pl->cnt.nreq += xsm_is_req(m);
    }
    return 0;
}

/* A rank's counts as XSM_TALLY numbers (divided counting sums them over the
 * processes): to tally[] (only the ranks this process counted), or back. */
enum { XSM_TALLY = 5 };
static void xsm_plan_tally(xsm_match_ctx *c, int64_t *tally, int back)
{
    for (size_t r = 0; r < c->run->nranks; r++) {
        xsm_rank_plan *pl = &c->plan[r];
        size_t *f[XSM_TALLY] = {&pl->nsend, &pl->nrecv, &pl->ncoll, &pl->cnt.ncompl, &pl->cnt.nreq};
        for (int k = 0; k < XSM_TALLY; k++) {
            if (back)
                *f[k] = (size_t)tally[XSM_TALLY * r + (size_t)k];
            else if (xsm_mine(c, r))
                tally[XSM_TALLY * r + (size_t)k] = (int64_t)*f[k];
        }
    }
}

static xsm_vec xsm_slice(void *base, size_t first, size_t n, size_t elem)
{
    return (xsm_vec){.p = base ? (char *)base + first * elem : NULL, .cap = base ? n : 0, .elem = elem};
}

/* A rank's keys straight into its slices (sized by the counting pass). */
static int xsm_keys_rank(void *ctx, size_t r)
{
    xsm_match_ctx *c = ctx;
    xsm_rank_plan *pl = &c->plan[r];
    if (!c->run->ranks[r].present || !xsm_mine(c, r))
        return 0;
    xsm_vec sends = xsm_slice(c->s, pl->sfirst, pl->nsend, sizeof *c->s);
    xsm_vec recvs = xsm_slice(c->v, pl->rfirst, pl->nrecv, sizeof *c->v);
    xsm_vec slinks = xsm_slice(c->sl, pl->sfirst, pl->nsend, sizeof(xsm_p2p_link));
    xsm_vec rlinks = xsm_slice(c->rl, pl->rfirst, pl->nrecv, sizeof(xsm_p2p_link));
    xsm_vec colls = xsm_slice(c->c, pl->cfirst, pl->ncoll, sizeof *c->c);
    if (xsm_rank_keys(c->run, (int32_t)r, pl->cnt, &sends, &recvs, &slinks, &rlinks, c->links, &colls, &pl->open_posts))
        return -1;
    return sends.n == pl->nsend && recvs.n == pl->nrecv && colls.n == pl->ncoll ? 0 : -1;
}

/* Hash join of the receives of rank r with the sends to r: each receive
 * takes the first unmatched send with its key. One small table per
 * destination stays in cache; a receive only ever matches a send with its
 * own dst, so the pairs are those of one global table. */
static int xsm_join_rank(void *ctx, size_t r)
{
    xsm_match_ctx *c = ctx;
    size_t b0 = c->dfirst[r], nb = c->dfirst[r + 1] - b0;
    size_t j0 = c->plan[r].rfirst, j1 = j0 + c->plan[r].nrecv;
    if (!nb || j0 == j1 || !xsm_mine(c, r))
        return 0;
    if (nb >= UINT32_MAX)
        return -1;
    size_t ns = 16;
    while (ns < 2 * nb + 1)
        ns *= 2;
    uint32_t *slot = xsm_zalloc(ns, sizeof *slot); /* send index + 1, 0 = empty */
    if (!slot)
        return -1;
    for (size_t b = 0; b < nb; b++) {
        size_t i = c->by_dst[b0 + b];
        if (i >= UINT32_MAX - 1) {
            free(slot);
            return -1;
        }
        size_t h = xsm_key_hash(&c->s[i]) & (ns - 1);
        while (slot[h])
            h = (h + 1) & (ns - 1);
        slot[h] = (uint32_t)(i + 1);
    }
    /* the table is larger than the cache: each receive's slot is asked for
     * 8 receives ahead (its hash kept in a ring), so the misses overlap */
    size_t hq[8];
    for (size_t j = j0; j < j1 && j < j0 + 8; j++) {
        hq[(j - j0) & 7] = xsm_key_hash(&c->v[j]) & (ns - 1);
        __builtin_prefetch(&slot[hq[(j - j0) & 7]]);
    }
    for (size_t j = j0; j < j1; j++) {
        size_t h0 = hq[(j - j0) & 7];
        if (j + 8 < j1) {
            hq[(j - j0) & 7] = xsm_key_hash(&c->v[j + 8]) & (ns - 1);
            __builtin_prefetch(&slot[hq[(j - j0) & 7]]);
        }
        for (size_t h = h0; slot[h]; h = (h + 1) & (ns - 1)) {
            size_t i = slot[h] - 1;
            if (!c->recv_of[i] && xsm_key_eq(&c->s[i], &c->v[j])) {
                c->recv_of[i] = j + 1;
                c->recv_done[j] = 1;
                break;
            }
        }
    }
    free(slot);
    return 0;
}

static int xsm_matched_rank(void *ctx, size_t r)
{
    xsm_match_ctx *c = ctx;
    xsm_rank_plan *pl = &c->plan[r];
    for (size_t i = pl->sfirst; i < pl->sfirst + pl->nsend; i++)
        pl->matched += c->recv_of[i] != 0;
    return 0;
}

/* The messages of rank r's sends, in send order: sends were collected rank
 * by rank in row order, so the messages come out sorted by (src, send_row). */
static int xsm_msgs_rank(void *ctx, size_t r)
{
    xsm_match_ctx *c = ctx;
    const xsm_rank_plan *pl = &c->plan[r];
    xsm_message *out = c->msgs + pl->mfirst;
    if (!xsm_mine(c, r))
        return 0;
    for (size_t i = pl->sfirst; i < pl->sfirst + pl->nsend; i++) {
        if (!c->recv_of[i])
            continue;
        const xsm_p2p_key *s = &c->s[i];
        /* recv_of holds the receive key, or with the keys gone its row */
        size_t j = c->recv_of[i] - 1, recv_row = c->v ? c->v[j].row : j;
        const xsm_p2p_link *sl = c->links ? &c->sl[i] : NULL, *rl = c->links ? &c->rl[j] : NULL;
        const xsprof_io_mpi *srow = &c->run->ranks[s->src].d.mpi[s->row];
        *out++ = (xsm_message){.src = s->src, .dst = s->dst, .comm = s->comm, .tag = s->tag,
                               .bytes = srow->bytes_sent, .send_row = s->row, .recv_row = recv_row,
                               .recv_post_row = rl ? rl->post : -1, .send_completion_row = sl ? sl->aux : -1,
                               .recv_call_row = rl ? (size_t)rl->aux : recv_row};
    }
    return 0;
}

/* Sends bucketed by destination rank, stably (a counting sort); divided,
 * each process places the sends to its own ranks (it joins those). */
static void xsm_bucket_sends(xsm_match_ctx *c, size_t nsends)
{
    size_t n = c->run->nranks;
    for (size_t i = 0; i < nsends; i++)
        if (c->s[i].dst >= 0 && (size_t)c->s[i].dst < n)
            c->dfirst[c->s[i].dst + 1]++;
    for (size_t r = 0; r < n; r++)
        c->dfirst[r + 1] += c->dfirst[r];
    for (size_t i = 0; i < nsends; i++) {
        if (c->s[i].dst < 0 || (size_t)c->s[i].dst >= n)
            continue;
        size_t d = (size_t)c->s[i].dst;
        if (xsm_mine(c, d))
            c->by_dst[c->dfirst[d]] = i;
        c->dfirst[d]++;
    }
    /* the placement advanced each start to the next bucket's: shift back */
    for (size_t r = n; r-- > 0;)
        c->dfirst[r + 1] = c->dfirst[r];
    c->dfirst[0] = 0;
}

static void xsm_match_ctx_free(xsm_match_ctx *c)
{
    free(c->plan);
    free(c->dfirst);
    free(c->msgs);
    if (c->shm)
        munmap(c->shm, c->shm_len); /* the others' mappings stay theirs */
    else {
        free(c->s);
        free(c->v);
        free(c->sl);
        free(c->rl);
        free(c->c);
        free(c->by_dst);
        free(c->recv_of);
        free(c->recv_done);
    }
    memset(c, 0, sizeof *c);
}

/* The arrays the ranks' steps fill: divided, slices of one region all
 * processes map, laid out alike (the counts are the same everywhere);
 * else private. Allocation order matters for the peak: what lives on goes
 * first, the receive keys and the buckets (freed before the messages are
 * made) last, so that the messages can reuse their space. */
static int xsm_match_alloc(xsm_match_ctx *c, size_t nsend, size_t nrecv, size_t ncoll)
{
    size_t lk = c->links ? 1 : 0;
    const size_t sz[9] = {sizeof *c->failed, (ncoll + 1) * sizeof *c->c, (nsend + 1) * sizeof *c->recv_of, nrecv + 1,
                          (nsend + 1) * sizeof *c->s, lk * (nsend + 1) * sizeof *c->sl,
                          lk * (nrecv + 1) * sizeof *c->rl, (nrecv + 1) * sizeof *c->v,
                          (nsend + 1) * sizeof *c->by_dst};
    size_t off[9], len = 0;
    for (size_t k = 0; k < 9; k++) {
        off[k] = len;
        len += (sz[k] + 63) & ~(size_t)63;
    }
    if (c->parts > 1 && (c->shm = c->run->shm(c->run->sync_ctx, len))) {
        char *b = c->shm;
        c->shm_len = len;
        c->failed = (int *)(b + off[0]);
        c->c = (xsm_coll_key *)(b + off[1]);
        c->recv_of = (size_t *)(b + off[2]);
        c->recv_done = (unsigned char *)(b + off[3]);
        c->s = (xsm_p2p_key *)(b + off[4]);
        c->sl = lk ? (xsm_p2p_link *)(b + off[5]) : NULL;
        c->rl = lk ? (xsm_p2p_link *)(b + off[6]) : NULL;
        c->v = (xsm_p2p_key *)(b + off[7]);
        c->by_dst = (size_t *)(b + off[8]);
        return 0; /* zero-filled: no receive yet */
    }
    c->parts = 1; /* no region (for any process): each matches everything alone */
    c->failed = &c->failed_here;
    c->c = xsm_malloc_big(sz[1]);
    c->recv_of = xsm_zalloc(nsend + 1, sizeof *c->recv_of);
    c->recv_done = xsm_zalloc(nrecv + 1, 1);
    c->s = xsm_malloc_big(sz[4]);
    if (lk) {
        c->sl = xsm_malloc_big(sz[5]);
        c->rl = xsm_malloc_big(sz[6]);
    }
    c->v = xsm_malloc_big(sz[7]);
    return c->s && c->v && c->c && c->recv_of && c->recv_done && (!lk || (c->sl && c->rl)) ? 0 : -1;
}

int xsm_match_run(xsm_run *run, FILE *notes, char *err, size_t errlen)
{
    xsm_vec colls = {.elem = sizeof(xsm_coll_key)}; /* all ranks' collective keys, once built */
    xsm_match_ctx c = {.run = run, .part = run->part, .parts = run->shm && run->sync ? run->parts : 1};
    int divided = c.parts > 1; /* asked for: every process must take part in the region's making */
    run->unmatched_sends = run->unmatched_recvs = run->incomplete_colls = 0;
    free(run->unrecv);
    run->unrecv = NULL;
    run->unreceived = 0;
    /* One counting pass per rank sizes every key array exactly and places
     * each rank's keys, so the ranks then build their keys in parallel; it
     * also tells each rank whether it has nonblocking requests to pair. */
    size_t nsend = 0, nrecv = 0, ncoll = 0;
    uint64_t open_posts = 0;
    c.plan = calloc(run->nranks + 1, sizeof *c.plan);
    c.dfirst = calloc(run->nranks + 1, sizeof *c.dfirst);
    /* Divided, each process counts its own ranks and the counts are summed
     * (every process read every MPI row here before: 0.09 of np 2's 0.28 s) */
    c.split_count = divided && run->reduce;
    int64_t *tally = c.split_count ? calloc(XSM_TALLY * run->nranks + 1, sizeof *tally) : NULL;
    int ok = c.plan && c.dfirst && (!c.split_count || tally);
    if (c.split_count) { /* all give up together: the counts need everyone */
        int64_t bad = !ok;
        run->reduce(run->sync_ctx, &bad, 1, XSM_REDUCE_MAX);
        ok = !bad;
    }
    if (!ok || xsm_parallel_for(run->nranks, xsm_count_rank, &c)) {
        if (divided && !c.split_count)
            run->shm(run->sync_ctx, 0); /* the others match alone */
        free(tally);
        goto oom;
    }
    if (c.split_count) {
        xsm_plan_tally(&c, tally, 0);
        run->reduce(run->sync_ctx, tally, XSM_TALLY * run->nranks, XSM_REDUCE_SUM);
        xsm_plan_tally(&c, tally, 1);
        free(tally);
    }
    for (size_t r = 0; r < run->nranks; r++) {
        xsm_rank_plan *pl = &c.plan[r];
        pl->sfirst = nsend;
        pl->rfirst = nrecv;
        pl->cfirst = ncoll;
        nsend += pl->nsend;
        nrecv += pl->nrecv;
        ncoll += pl->ncoll;
        c.links |= pl->cnt.nreq || pl->cnt.ncompl;
    }
    if (xsm_match_alloc(&c, nsend, nrecv, ncoll))
        goto oom;
    /* from here on, divided, nothing fails before the last wait */
    if (xsm_parallel_for(run->nranks, xsm_keys_rank, &c))
        __atomic_store_n(c.failed, 1, __ATOMIC_RELAXED); /* a counting error: all processes give up */
    xsm_match_sync(&c); /* every send key is written */
    if (__atomic_load_n(c.failed, __ATOMIC_RELAXED))
        goto oom;
    for (size_t r = 0; r < run->nranks; r++)
        open_posts += c.plan[r].open_posts;
    if (c.parts > 1 && run->reduce) { /* each process paired the requests of its own ranks */
        int64_t v = (int64_t)open_posts;
        run->reduce(run->sync_ctx, &v, 1, XSM_REDUCE_SUM);
        open_posts = (uint64_t)v;
    }
    if (!c.by_dst && !(c.by_dst = malloc((nsend + 1) * sizeof *c.by_dst)))
        goto oom;
    xsm_bucket_sends(&c, nsend);
    xsm_parallel_for(run->nranks, xsm_join_rank, &c);
    xsm_match_sync(&c); /* every receive is joined */
    if (!c.shm) {
        free(c.by_dst);
        c.by_dst = NULL;
    }
    /* notes first: the receive keys are not needed after them unless
     * requests link rows (then each message takes its rows from them) */
    size_t listed_s = 0, listed_r = 0;
    if (c.parts > 1 && run->reduce) {
        /* divided: each process counts the unmatched ends of its own ranks
         * (every process read them all before: 0.03 s of np 2's match);
         * whoever says the notes lists the first ones, in serial order */
        int64_t u[2] = {0, 0};
        for (size_t r = 0; r < run->nranks; r++) {
            const xsm_rank_plan *pl = &c.plan[r];
            if (!xsm_mine(&c, r))
                continue;
            for (size_t i = pl->sfirst; i < pl->sfirst + pl->nsend; i++)
                if (xsm_unmatched_send(&c, i)) {
                    u[0]++;
                    if (xsm_unrecv_add(run, c.s[i].src, c.s[i].dst))
                        goto oom;
                }
            for (size_t j = pl->rfirst; j < pl->rfirst + pl->nrecv; j++)
                u[1] += xsm_unmatched_recv(&c, j);
        }
        run->reduce(run->sync_ctx, u, 2, XSM_REDUCE_SUM);
        if (xsm_unrecv_reduce(run))
            goto oom;
        run->unmatched_sends = (size_t)u[0];
        run->unmatched_recvs = (size_t)u[1];
        for (size_t i = 0; notes && u[0] && listed_s < XSM_NOTES_LISTED && i < nsend; i++)
            if (xsm_unmatched_send(&c, i))
                xsm_note_p2p(notes, "send", &c.s[i], &listed_s);
        for (size_t j = 0; notes && u[1] && listed_r < XSM_NOTES_LISTED && j < nrecv; j++)
            if (xsm_unmatched_recv(&c, j))
                xsm_note_p2p(notes, "receive", &c.v[j], &listed_r);
    } else {
        for (size_t i = 0; i < nsend; i++) {
            if (xsm_unmatched_send(&c, i)) {
                run->unmatched_sends++;
                xsm_note_p2p(notes, "send", &c.s[i], &listed_s);
                if (xsm_unrecv_add(run, c.s[i].src, c.s[i].dst))
                    goto oom;
            }
        }
        for (size_t j = 0; j < nrecv; j++) {
            if (xsm_unmatched_recv(&c, j)) {
                run->unmatched_recvs++;
                xsm_note_p2p(notes, "receive", &c.v[j], &listed_r);
            }
        }
    }
    if (!c.shm) { /* private arrays: what is done with goes (the region goes whole) */
        free(c.recv_done);
        c.recv_done = NULL;
        if (!c.links) { /* blocking traffic: a message needs only the receive row */
            for (size_t i = 0; i < nsend; i++)
                if (c.recv_of[i])
                    c.recv_of[i] = c.v[c.recv_of[i] - 1].row + 1;
            free(c.v);
            c.v = NULL;
        }
    }
    xsm_parallel_for(run->nranks, xsm_matched_rank, &c);
    size_t nmatched = 0;
    for (size_t r = 0; r < run->nranks; r++) {
        c.plan[r].mfirst = nmatched;
        nmatched += c.plan[r].matched;
    }
    size_t mlen = (nmatched + 1) * sizeof *c.msgs;
    if (c.shm && (c.msgs = run->shm(run->sync_ctx, mlen))) {
        xsm_parallel_for(run->nranks, xsm_msgs_rank, &c);
        xsm_match_sync(&c); /* every message is written */
        run->msgs_shm_len = mlen;
    } else {
        c.parts = 1; /* no shared table: each process writes all messages */
        if (!(c.msgs = xsm_malloc_big(mlen)))
            goto oom;
        xsm_parallel_for(run->nranks, xsm_msgs_rank, &c);
    }
    run->unmatched_recvs += open_posts;
    if (notes && open_posts)
        fprintf(notes, "xsmerge: note: %llu nonblocking receives were posted but never completed\n",
                (unsigned long long)open_posts);
    run->msgs = c.msgs;
    run->nmsgs = nmatched;
    c.msgs = NULL;
    /* the collective keys are sorted here: out of the region first */
    if (c.shm && (colls.p = malloc((ncoll + 1) * sizeof(xsm_coll_key))))
        memcpy(colls.p, c.c, ncoll * sizeof(xsm_coll_key));
    else if (!c.shm) {
        colls.p = c.c;
        c.c = NULL;
    }
    if (!colls.p)
        goto oom;
    colls.n = colls.cap = ncoll;
    xsm_match_ctx_free(&c);

    xsm_coll_key *ck = colls.p;
    if (colls.n)
        qsort(ck, colls.n, sizeof *ck, xsm_coll_cmp);
    size_t ngroups = 0;
    for (size_t a = 0; a < colls.n; a++)
        if (a == 0 || ck[a].comm != ck[a - 1].comm || ck[a].seq != ck[a - 1].seq)
            ngroups++;
    run->colls = calloc(ngroups ? ngroups : 1, sizeof *run->colls);
    if (!run->colls)
        goto oom;
    for (size_t a = 0; a < colls.n;) {
        size_t b = a;
        while (b < colls.n && ck[b].comm == ck[a].comm && ck[b].seq == ck[a].seq)
            b++;
        xsm_collective *c = &run->colls[run->ncolls++];
        const xsprof_io_mpi *first = &run->ranks[ck[a].rank].d.mpi[ck[a].row];
        c->comm = ck[a].comm;
        c->coll_seq = ck[a].seq;
        c->op = first->op;
        c->coll_kind = first->coll;
        /* the root a member names: on an intercommunicator the members of
         * the root's group other than the root (MPI_PROC_NULL) name none */
        c->root = XSPROF_MPI_NONE;
        for (size_t k = a; k < b && c->root < 0; k++)
            c->root = run->ranks[ck[k].rank].d.mpi[ck[k].row].root;
        c->ranks = malloc((b - a) * sizeof *c->ranks);
        c->rows = malloc((b - a) * sizeof *c->rows);
        if (!c->ranks || !c->rows)
            goto oom;
        for (size_t k = a; k < b; k++) {
            if (c->n && c->ranks[c->n - 1] == ck[k].rank)
                continue; /* one row per rank and instance */
            c->ranks[c->n] = ck[k].rank;
            c->rows[c->n] = ck[k].row;
            c->n++;
        }
        uint32_t expect = xsm_comm_size(run, c->comm);
        size_t present = 0;
        if (expect) {
            /* only members that were loaded can be expected */
            for (size_t r = 0; r < run->nranks; r++) {
                const xsprof_rank_data *d = &run->ranks[r].d;
                for (size_t q = 0; q < d->ncomms && run->ranks[r].present; q++)
                    if (d->comms[q].id == c->comm) {
                        present++;
                        break;
                    }
            }
        }
        if (present > c->n)
            run->incomplete_colls++;
        a = b;
    }
    if (notes && (run->unmatched_sends || run->unmatched_recvs || run->incomplete_colls))
        fprintf(notes, "xsmerge: note: %zu unmatched sends, %zu unmatched receives, %zu incomplete collectives\n",
                run->unmatched_sends, run->unmatched_recvs, run->incomplete_colls);
    free(colls.p);
    return 0;
oom:
    xsm_match_ctx_free(&c);
    free(colls.p);
    return xsm_err_set(err, errlen, "xsmerge: out of memory while matching messages");
}

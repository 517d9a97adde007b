/* merge/match/match.c — see match.h. Point-to-point matching is a hash
 * join: O(n) time and one key row per send/receive of memory. */
#include "merge/match/match.h"
#include "merge/util.h"
#include "core/record.h" /* kinds and flags of the mpi rows */

#include <stdlib.h>
#include <string.h>

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

static uint64_t xsm_key_hash(const xsm_p2p_key *k)
{
    uint64_t h = ((uint64_t)k->comm << 32 | (uint32_t)k->tag) * 0x9e3779b97f4a7c15ull;
    h ^= ((uint64_t)(uint32_t)k->src << 32 | (uint32_t)k->dst) + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
    h ^= k->seq * 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h * 0xc4ceb9fe1a85ec53ull;
}

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

typedef struct xsm_vec {
    void *p;
    size_t n, cap, elem;
} xsm_vec;

static int xsm_vec_reserve(xsm_vec *v, size_t n)
{
    if (n <= v->cap)
        return 0;
    void *p = realloc(v->p, n * v->elem);
    if (!p)
        return -1;
    v->p = p;
    v->cap = n;
    return 0;
}

static void *xsm_vec_push(xsm_vec *v)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 256;
        void *p = realloc(v->p, cap * v->elem);
        if (!p)
            return NULL;
        v->p = p;
        v->cap = cap;
    }
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

/* Per rank: pair nonblocking posts with completions (same request, the most
 * recent post before the completion), find the call that holds each
 * completion, and emit the rank's send, receive and collective keys. */
static int xsm_rank_keys(const xsm_run *run, int32_t r, xsm_rank_counts cnt, xsm_vec *sends, xsm_vec *recvs,
                         xsm_vec *slinks, xsm_vec *rlinks, int keep_links, xsm_vec *colls, uint64_t *open_posts)
{
    const xsprof_rank_data *d = &run->ranks[r].d;
    size_t n = d->nmpi;
    size_t nreq = cnt.nreq, ncompl = cnt.ncompl;
    /* Blocking traffic only (no request, no completion): nothing to pair,
     * so none of the per-row link arrays (24 bytes a row) is needed. */
    int links = nreq || ncompl;
    /* completion -> post row, post -> completion row, completion -> holding call */
    int64_t *post_of = NULL, *compl_of = NULL, *call_of = NULL;
    xsm_req *req = NULL;
    xsm_thr_row *thr = NULL;
    int rc = -1;
    if (links) {
        post_of = malloc((n ? n : 1) * sizeof *post_of);
        compl_of = malloc((n ? n : 1) * sizeof *compl_of);
        call_of = malloc((n ? n : 1) * sizeof *call_of);
        req = malloc((nreq ? nreq : 1) * sizeof *req);
        thr = malloc((ncompl ? n : 1) * sizeof *thr);
        if (!post_of || !compl_of || !call_of || !req || !thr)
            goto out;
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
    }
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
    rc = 0;
out:
    free(post_of);
    free(compl_of);
    free(call_of);
    free(req);
    free(thr);
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

static void xsm_note_p2p(FILE *notes, const char *what, const xsm_p2p_key *k, size_t *listed)
{
    if (!notes || (*listed)++ >= 5)
        return;
    fprintf(notes, "xsmerge: note: unmatched %s: rank %d -> %d, comm %u, tag %d, seq %llu (row %zu on rank %d)\n", what,
            (int)k->src, (int)k->dst, k->comm, (int)k->tag, (unsigned long long)k->seq, k->row,
            (int)(what[0] == 's' ? k->src : k->dst));
}

int xsm_match_run(xsm_run *run, FILE *notes, char *err, size_t errlen)
{
    xsm_vec sends = {.elem = sizeof(xsm_p2p_key)}, recvs = {.elem = sizeof(xsm_p2p_key)};
    xsm_vec slinks = {.elem = sizeof(xsm_p2p_link)}, rlinks = {.elem = sizeof(xsm_p2p_link)};
    xsm_vec msgs = {.elem = sizeof(xsm_message)};
    xsm_vec colls = {.elem = sizeof(xsm_coll_key)};
    uint64_t open_posts = 0;
    run->unmatched_sends = run->unmatched_recvs = run->incomplete_colls = 0;
    /* One counting pass sizes the key arrays exactly (growing them by
     * doubling copies and can hold twice the rows) and tells each rank
     * whether it has nonblocking requests to pair. */
    size_t nsend = 0, nrecv = 0, ncoll = 0;
    xsm_rank_counts *cnt = calloc(run->nranks + 1, sizeof *cnt);
    /* receives of rank r (whose key has dst = r) are recvs[rfirst[r] .. rfirst[r + 1]) */
    size_t *rfirst = calloc(run->nranks + 1, sizeof *rfirst);
    if (!cnt || !rfirst) {
        free(cnt);
        free(rfirst);
        goto oom;
    }
    for (size_t r = 0; r < run->nranks; r++) {
        const xsprof_rank_data *d = &run->ranks[r].d;
        for (size_t i = 0; run->ranks[r].present && i < d->nmpi; i++) {
            const xsprof_io_mpi *m = &d->mpi[i];
            int send = xsm_is_send(m);
            nsend += send;
            nrecv += !send && m->peer >= 0 &&
                     (m->kind == XSPROF_MPI_RECV ||
                      (m->kind == XSPROF_MPI_COMPLETION && (m->flags & XSPROF_MPI_F_RECV)));
            ncoll += (m->kind == XSPROF_MPI_COLL || m->kind == XSPROF_MPI_ICOLL) && m->coll_seq;
            cnt[r].ncompl += m->kind == XSPROF_MPI_COMPLETION;
            cnt[r].nreq += xsm_is_req(m);
        }
    }
    int links = 0;
    for (size_t r = 0; r < run->nranks; r++)
        links |= cnt[r].nreq || cnt[r].ncompl;
    int bad = xsm_vec_reserve(&sends, nsend) || xsm_vec_reserve(&recvs, nrecv) || xsm_vec_reserve(&colls, ncoll) ||
              (links && (xsm_vec_reserve(&slinks, nsend) || xsm_vec_reserve(&rlinks, nrecv)));
    for (size_t r = 0; !bad && r < run->nranks; r++) {
        rfirst[r] = recvs.n;
        if (run->ranks[r].present)
            bad = xsm_rank_keys(run, (int32_t)r, cnt[r], &sends, &recvs, &slinks, &rlinks, links, &colls, &open_posts);
    }
    free(cnt);
    if (bad) {
        free(rfirst);
        goto oom;
    }
    rfirst[run->nranks] = recvs.n;
    /* Hash join: sends are indexed by their full key and each receive takes
     * the first unmatched send with its key. Sends were collected rank by
     * rank in row order, so walking them afterwards yields the messages
     * sorted by (src, send_row) without sorting. The join runs one
     * destination rank at a time (sends bucketed by dst, stably), so each
     * table is small enough to stay in cache; a receive only ever matches a
     * send with its own dst, so the pairs are those of one global table. */
    xsm_p2p_key *s = sends.p, *v = recvs.p;
    size_t *recv_of = malloc((sends.n + 1) * sizeof *recv_of); /* send -> receive */
    unsigned char *recv_done = calloc(recvs.n + 1, 1);
    size_t *sfirst = calloc(run->nranks + 1, sizeof *sfirst);    /* sends to dst r: by_dst[sfirst[r] ..] */
    size_t *by_dst = malloc((sends.n + 1) * sizeof *by_dst);
    size_t maxb = 0;
    if (recv_of && sfirst && by_dst) {
        for (size_t i = 0; i < sends.n; i++) {
            recv_of[i] = SIZE_MAX;
            if (s[i].dst >= 0 && (size_t)s[i].dst < run->nranks)
                sfirst[s[i].dst + 1]++;
        }
        for (size_t r = 0; r < run->nranks; r++) {
            if (sfirst[r + 1] > maxb)
                maxb = sfirst[r + 1];
            sfirst[r + 1] += sfirst[r];
        }
        for (size_t i = 0; i < sends.n; i++)
            if (s[i].dst >= 0 && (size_t)s[i].dst < run->nranks)
                by_dst[sfirst[s[i].dst]++] = i;
        /* the placement advanced each start to the next bucket's: shift back */
        for (size_t r = run->nranks; r-- > 0;)
            sfirst[r + 1] = sfirst[r];
        sfirst[0] = 0;
    }
    size_t nslots = 16;
    while (nslots < 2 * maxb + 1)
        nslots *= 2;
    uint32_t *slot = recv_of && sfirst && by_dst && maxb < UINT32_MAX ? malloc(nslots * sizeof *slot) : NULL;
    if (!slot || !recv_of || !recv_done || !sfirst || !by_dst) {
        free(slot);
        free(recv_of);
        free(recv_done);
        free(sfirst);
        free(by_dst);
        free(rfirst);
        goto oom;
    }
    for (size_t r = 0; r < run->nranks; r++) {
        size_t b0 = sfirst[r], nb = sfirst[r + 1] - b0;
        if (!nb || rfirst[r] == rfirst[r + 1])
            continue;
        size_t ns = 16;
        while (ns < 2 * nb + 1)
            ns *= 2;
        memset(slot, 0, ns * sizeof *slot); /* bucket position + 1, 0 = empty */
        for (size_t b = 0; b < nb; b++) {
            size_t h = xsm_key_hash(&s[by_dst[b0 + b]]) & (ns - 1);
            while (slot[h])
                h = (h + 1) & (ns - 1);
            slot[h] = (uint32_t)(b + 1);
        }
        for (size_t j = rfirst[r]; j < rfirst[r + 1]; j++) {
            for (size_t h = xsm_key_hash(&v[j]) & (ns - 1); slot[h]; h = (h + 1) & (ns - 1)) {
                size_t i = by_dst[b0 + slot[h] - 1];
                if (recv_of[i] == SIZE_MAX && xsm_key_eq(&s[i], &v[j])) {
                    recv_of[i] = j;
                    recv_done[j] = 1;
                    break;
                }
            }
        }
    }
    free(sfirst);
    free(by_dst);
    free(rfirst);
    size_t nmatched = 0;
    for (size_t i = 0; i < sends.n; i++)
        nmatched += recv_of[i] != SIZE_MAX;
    if (xsm_vec_reserve(&msgs, nmatched)) {
        free(slot);
        free(recv_of);
        free(recv_done);
        goto oom;
    }
    size_t listed_s = 0, listed_r = 0;
    for (size_t i = 0; i < sends.n; i++) {
        if (recv_of[i] == SIZE_MAX) {
            /* a send whose receiver was not loaded is not an anomaly */
            if ((size_t)s[i].dst < run->nranks && run->ranks[s[i].dst].present) {
                run->unmatched_sends++;
                xsm_note_p2p(notes, "send", &s[i], &listed_s);
            }
            continue;
        }
        const xsm_p2p_key *r = &v[recv_of[i]];
        const xsm_p2p_link *sl = links ? &((const xsm_p2p_link *)slinks.p)[i] : NULL;
        const xsm_p2p_link *rl = links ? &((const xsm_p2p_link *)rlinks.p)[recv_of[i]] : NULL;
        xsm_message *m = xsm_vec_push(&msgs);
        if (!m) {
            free(slot);
            free(recv_of);
            free(recv_done);
            goto oom;
        }
        const xsprof_io_mpi *srow = &run->ranks[s[i].src].d.mpi[s[i].row];
        *m = (xsm_message){.src = s[i].src, .dst = s[i].dst, .comm = s[i].comm, .tag = s[i].tag,
                           .bytes = srow->bytes_sent, .send_row = s[i].row, .recv_row = r->row,
                           .recv_post_row = rl ? rl->post : -1, .send_completion_row = sl ? sl->aux : -1,
                           .recv_call_row = rl ? (size_t)rl->aux : r->row};
    }
    for (size_t j = 0; j < recvs.n; j++) {
        if (recv_done[j] || !((size_t)v[j].src < run->nranks && run->ranks[v[j].src].present))
            continue;
        run->unmatched_recvs++;
        xsm_note_p2p(notes, "receive", &v[j], &listed_r);
    }
    free(slot);
    free(recv_of);
    free(recv_done);
    run->unmatched_recvs += open_posts;
    if (notes && open_posts)
        fprintf(notes, "xsmerge: note: %llu nonblocking receives were posted but never completed\n",
                (unsigned long long)open_posts);
    run->msgs = msgs.p;
    run->nmsgs = msgs.n;
    msgs.p = NULL;

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
        c->root = first->root;
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
    free(sends.p);
    free(recvs.p);
    free(slinks.p);
    free(rlinks.p);
    free(colls.p);
    return 0;
oom:
    free(sends.p);
    free(recvs.p);
    free(slinks.p);
    free(rlinks.p);
    free(colls.p);
    free(msgs.p);
    return xsm_err_set(err, errlen, "xsmerge: out of memory while matching messages");
}

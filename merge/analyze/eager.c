/* merge/analyze/eager.c — which sends went eagerly (an.h xsm_eager): the
 * transports' eager limits each rank recorded at MPI_Init (meta
 * "mpit:<MPI_T control variable>", mpi/init.c), by the path a message
 * took: between ranks of one host the shared-memory transport's (Open
 * MPI's btl_vader / btl_sm eager_limit), between hosts the smallest of the
 * others' (btl_tcp, btl_openib, ...). A send below its limit leaves with
 * its data and returns without waiting for the receiver, so a blocking
 * send or the Wait of an Isend that lasted was descheduled or slow, not
 * late for a receive: no Late Receiver (merge/README "Wait states").
 * Limits include the transport's header: a message counts as eager only
 * XSM_EAGER_HEADER bytes below one. Ranks that recorded none (another MPI,
 * an older file): every send may have waited, as before. Owner: merge
 * analysis. */
#include <stdlib.h>
#include <string.h>
#include "an.h"

#define XSM_EAGER_HEADER 64

struct xsm_eager {
    const xsm_run *run;
    size_t n;
    uint64_t *intra, *inter; /* per rank: the limit (0: none known) */
    int32_t *host;           /* per rank: its host's index */
};

static int shared_memory(const char *v)
{
    return strstr(v, "vader") || strstr(v, "btl_sm_") || strstr(v, "shmem") || strstr(v, "smcuda");
}

xsm_eager *xsm_eager_new(const xsm_run *run)
{
    xsm_eager *e = calloc(1, sizeof *e);
    xsm_names hosts = {0};
    if (!e || !(e->intra = calloc(run->nranks + 1, sizeof *e->intra)) ||
        !(e->inter = calloc(run->nranks + 1, sizeof *e->inter)) || !(e->host = calloc(run->nranks + 1, sizeof *e->host)))
        goto fail;
    e->run = run;
    e->n = run->nranks;
    for (size_t r = 0; r < run->nranks; r++) {
        const xsprof_rank_data *d = &run->ranks[r].d;
        if (!run->ranks[r].present)
            continue;
        if ((e->host[r] = xsm_names_intern(&hosts, d->host)) < 0)
            goto fail;
        for (size_t i = 0; i < d->nmeta; i++) {
            const char *k = xsprof_rank_data_string(d, d->meta[i].key);
            if (strncmp(k, "mpit:", 5) || !strstr(k, "eager_limit") || strstr(k, "btl_self_"))
                continue;
            uint64_t v = strtoull(xsprof_rank_data_string(d, d->meta[i].value), NULL, 10);
            uint64_t *to = shared_memory(k) ? &e->intra[r] : &e->inter[r];
            if (v && (!*to || v < *to))
                *to = v;
        }
    }
    xsm_names_free(&hosts);
    return e;
fail:
    xsm_names_free(&hosts);
    xsm_eager_free(e);
    return NULL;
}

void xsm_eager_free(xsm_eager *e)
{
    if (!e)
        return;
    free(e->intra);
    free(e->inter);
    free(e->host);
    free(e);
}

int xsm_eager_send(const xsm_eager *e, int32_t src, int32_t dst, uint64_t bytes, uint32_t op)
{
    if (!e || src < 0 || dst < 0 || (size_t)src >= e->n || (size_t)dst >= e->n)
        return 0;
    uint64_t lim = e->host[src] == e->host[dst] ? e->intra[src] : e->inter[src];
    if (lim <= XSM_EAGER_HEADER || bytes > lim - XSM_EAGER_HEADER)
        return 0;
    /* a synchronous send (Ssend, Issend, Ssend_init) completes only once
     * the receive matched, whatever its size */
    const char *name = xsprof_rank_data_string(&e->run->ranks[src].d, op);
    return !strcasestr(name, "ssend");
}

/* merge/read/stream_tab.c — rows of one table through a chunk cache (see
 * internal.h). Event tables are read in order and every row is copied
 * before the next is asked for, so one decoded chunk (and the one read
 * ahead) is all they hold; the arguments are read region by region, whose
 * order is not theirs, so they keep two. */
#include "merge/stream/internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct xsm_prefetch {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    xsm_tab *head, *tail; /* queued tables */
    int stop;
};

static const void *xsm_tab_mem_rows(const xsprof_rank_data *d, int t, uint64_t *n)
{
    switch (t) {
    case XSPROF_IO_T_REGIONS: *n = d->nregions; return d->regions;
    case XSPROF_IO_T_ARGS: *n = d->nargs; return d->args;
    case XSPROF_IO_T_INSTANTS: *n = d->ninstants; return d->instants;
    case XSPROF_IO_T_COUNTERS: *n = d->ncounters; return d->counters;
    case XSPROF_IO_T_MPI: *n = d->nmpi; return d->mpi;
    case XSPROF_IO_T_GPU: *n = d->ngpu; return d->gpu;
    case XSPROF_IO_T_MEM: *n = d->nmem; return d->mem;
    default: *n = 0; return NULL;
    }
}

int xsm_tab_open(xsm_tab *tab, xsprof_rankfile *rf, const xsprof_rank_data *d, int t)
{
    memset(tab, 0, sizeof *tab);
    tab->table = t;
    tab->path = d->path;
    tab->size = xsprof_io_table_row_size((enum xsprof_io_table)t);
    tab->first[0] = tab->first[1] = UINT64_MAX;
    uint64_t n = rf ? xsprof_rankfile_table_rows(rf, (enum xsprof_io_table)t) : 0;
    if (rf && (n || xsprof_rankfile_table_chunk(rf, (enum xsprof_io_table)t))) {
        tab->rf = rf;
        tab->n = n;
        tab->chunk = xsprof_rankfile_table_chunk(rf, (enum xsprof_io_table)t);
        if (!tab->chunk)
            tab->chunk = 1;
        tab->two = t == XSPROF_IO_T_ARGS;
        for (int k = 0; k < 1 + tab->two; k++)
            if (!(tab->buf[k] = malloc(tab->chunk * tab->size)))
                return -1;
        return 0;
    }
    tab->mem = xsm_tab_mem_rows(d, t, &tab->n);
    return 0;
}

void xsm_tab_close(xsm_tab *tab)
{
    free(tab->buf[0]);
    free(tab->buf[1]);
    tab->buf[0] = tab->buf[1] = NULL;
}

static void *xsm_prefetch_run(void *arg)
{
    xsm_prefetch *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stop)
            pthread_cond_wait(&p->work, &p->mu);
        if (!p->head)
            break;
        xsm_tab *t = p->head;
        p->head = t->pnext;
        if (!p->head)
            p->tail = NULL;
        pthread_mutex_unlock(&p->mu);
        char e[256];
        /* the consumer never reads this file while the read is in flight */
        int ok = xsprof_rankfile_read(t->rf, (enum xsprof_io_table)t->table, t->pfirst, t->pcnt, t->pbuf, e, sizeof e) ==
                 XSPROF_OK;
        pthread_mutex_lock(&p->mu);
        t->pstate = ok ? 2 : 3;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

xsm_prefetch *xsm_prefetch_start(void)
{
    xsm_prefetch *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    if (pthread_create(&p->thread, NULL, xsm_prefetch_run, p) != 0) {
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->work);
        pthread_cond_destroy(&p->done);
        free(p);
        return NULL;
    }
    return p;
}

void xsm_prefetch_stop(xsm_prefetch *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    free(p);
}

int xsm_tab_prefetch(xsm_tab *tab, xsm_prefetch *p)
{
    if (!p || !tab->rf)
        return 0;
    if (!(tab->pbuf = malloc(tab->chunk * tab->size)))
        return -1;
    tab->pf = p;
    return 0;
}

/* Wait for tab's read in flight; returns its state (2 ready, 3 failed,
 * 0 none). Called with the lock held. */
static int xsm_tab_wait(xsm_tab *tab)
{
    while (tab->pstate == 1)
        pthread_cond_wait(&tab->pf->done, &tab->pf->mu);
    return tab->pstate;
}

void xsm_tab_unprefetch(xsm_tab *tab)
{
    if (!tab->pf)
        return;
    pthread_mutex_lock(&tab->pf->mu);
    xsm_tab_wait(tab);
    pthread_mutex_unlock(&tab->pf->mu);
    tab->pf = NULL;
    free(tab->pbuf);
    tab->pbuf = NULL;
}

/* Queue the read of the chunk starting at `first`. */
static void xsm_tab_ask(xsm_tab *tab, uint64_t first)
{
    xsm_prefetch *p = tab->pf;
    pthread_mutex_lock(&p->mu);
    tab->pfirst = first;
    tab->pcnt = tab->n - first < tab->chunk ? (size_t)(tab->n - first) : tab->chunk;
    tab->pstate = 1;
    tab->pnext = NULL;
    if (p->tail)
        p->tail->pnext = tab;
    else
        p->head = tab;
    p->tail = tab;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
}

const void *xsm_tab_row(xsm_tab *tab, uint64_t i)
{
    if (!tab->rf)
        return tab->mem + i * tab->size;
    for (int k = 0; k < 2; k++)
        if (i - tab->first[k] < tab->cnt[k]) {
            const unsigned char *p = tab->buf[k] + (i - tab->first[k]) * tab->size;
            /* rows are read in order from a chunk another thread decoded:
             * ask for the lines a few rows on before they are needed */
            __builtin_prefetch(p + 8 * tab->size);
            return p;
        }
    if (i >= tab->n) {
        snprintf(tab->err, sizeof tab->err, "xsmerge: %s: row %llu of table %d is outside it", tab->path,
                 (unsigned long long)i, tab->table);
        return NULL;
    }
    int k = tab->victim;
    uint64_t first = i / tab->chunk * tab->chunk;
    size_t cnt = tab->n - first < tab->chunk ? (size_t)(tab->n - first) : tab->chunk;
    if (tab->pf) {
        pthread_mutex_lock(&tab->pf->mu);
        int st = xsm_tab_wait(tab);
        tab->pstate = 0;
        pthread_mutex_unlock(&tab->pf->mu);
        if (st == 2 && tab->pfirst == first) { /* read ahead: take its buffer */
            unsigned char *b = tab->buf[k];
            tab->buf[k] = tab->pbuf;
            tab->pbuf = b;
            tab->first[k] = first;
            tab->cnt[k] = cnt;
            tab->victim = tab->two && !k;
            if (first + cnt < tab->n)
                xsm_tab_ask(tab, first + cnt);
            return tab->buf[k] + (i - first) * tab->size;
        } /* else (not the chunk asked for, or it failed): read here, which words any error */
    }
    char e[sizeof tab->err - 16] = "";
    if (xsprof_rankfile_read(tab->rf, (enum xsprof_io_table)tab->table, first, cnt, tab->buf[k], e, sizeof e) !=
        XSPROF_OK) {
        tab->first[k] = UINT64_MAX;
        tab->cnt[k] = 0;
        snprintf(tab->err, sizeof tab->err, "xsmerge: %s", e[0] ? e : "read failed");
        return NULL;
    }
    tab->first[k] = first;
    tab->cnt[k] = cnt;
    tab->victim = tab->two && !k;
    if (tab->pf && first + cnt < tab->n)
        xsm_tab_ask(tab, first + cnt);
    return tab->buf[k] + (i - first) * tab->size;
}

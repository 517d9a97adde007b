/* mpi/sync.c — clock alignment to rank 0 by min-RTT ping-pong, hierarchical:
 * node leaders (node rank 0) measure their offset to rank 0 one after the
 * other, then every other rank confirms with a short exchange that it shares
 * its leader's clock (same host, same CLOCK_MONOTONIC) and measures fully
 * only when it does not (e.g. injected test skew). Cost grows with the
 * number of nodes plus ranks per node, not with P sequential full exchanges.
 * Each rank stores one XSPROF_REC_CLOCK per phase: reference = local +
 * offset, error bound = rtt / 2. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "mpi/xsprof_mpi.h"

#define XSPROF_SYNC_TAG 7301
#define XSPROF_SYNC_ROUNDS 24  /* full exchange */
#define XSPROF_SYNC_CONFIRM 6  /* same-node confirmation */
#define XSPROF_SYNC_CONFIRM_MAX_RTT_NS 200000 /* a confirmation with a slower round trip is inconclusive */

static MPI_Comm g_node = MPI_COMM_NULL, g_leaders = MPI_COMM_NULL;
/* rank 0: when and at which WORLD collective the last sample was taken */
static int64_t g_last_t;
static uint64_t g_last_seq;
#define XSPROF_SYNC_FIRST 4 /* first periodic sample: the rate of collectives is unknown yet */

typedef struct sample {
    int64_t offset, rtt, mid;
} sample;

/* Reference side: answer `rounds` pings of `peer` with the local time. */
static void serve(MPI_Comm comm, int peer, int rounds) {
    for (int i = 0; i < rounds; i++) {
        int64_t t;
        PMPI_Recv(&t, 1, MPI_INT64_T, peer, XSPROF_SYNC_TAG, comm, MPI_STATUS_IGNORE);
        t = xsprof_clock_now();
        PMPI_Send(&t, 1, MPI_INT64_T, peer, XSPROF_SYNC_TAG, comm);
    }
}

/* Measuring side: the exchange with the smallest round trip wins. */
static sample measure(MPI_Comm comm, int peer, int rounds) {
    sample best = {0, INT64_MAX, 0};
    for (int i = 0; i < rounds; i++) {
        int64_t t0 = xsprof_clock_now(), tr;
        PMPI_Send(&t0, 1, MPI_INT64_T, peer, XSPROF_SYNC_TAG, comm);
        PMPI_Recv(&tr, 1, MPI_INT64_T, peer, XSPROF_SYNC_TAG, comm, MPI_STATUS_IGNORE);
        int64_t t1 = xsprof_clock_now();
        if (t1 - t0 < best.rtt) {
            best.rtt = t1 - t0;
            best.mid = t0 + (t1 - t0) / 2;
            best.offset = tr - best.mid;
        }
    }
    return best;
}

/* Receive without polling: when ranks share cores, the waiting ones must
 * leave them to the pair that is measuring. */
static void recv_sleeping(MPI_Comm comm, int src, int tag, void *buf, int n, MPI_Datatype t) {
    int done = 0;
    MPI_Request r;
    PMPI_Irecv(buf, n, t, src, tag, comm, &r);
    for (;;) {
        PMPI_Test(&r, &done, MPI_STATUS_IGNORE);
        if (done)
            break;
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

/* Wait until the reference calls on us. */
static void wait_turn(MPI_Comm comm, int ref) {
    int tok = 0;
    recv_sleeping(comm, ref, XSPROF_SYNC_TAG + 1, &tok, 1, MPI_INT);
}

static void give_turn(MPI_Comm comm, int peer) {
    int tok = 1;
    PMPI_Send(&tok, 1, MPI_INT, peer, XSPROF_SYNC_TAG + 1, comm);
}

/* XSPROF_TEST_RANKS_PER_NODE=N: consecutive blocks of N ranks act as nodes,
 * so the leaders' exchange and its propagation run on one machine too. */
static int node_split(MPI_Comm comm, MPI_Comm *node) {
    const char *v = xsprof_config_get("XSPROF_TEST_RANKS_PER_NODE");
    long per = v ? strtol(v, NULL, 10) : 0;
    if (per > 0)
        return PMPI_Comm_split(comm, (int)(xsprof_mpi_g.rank / per), xsprof_mpi_g.rank, node);
    return PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, node);
}

static int sync_comms(void) {
    if (g_node != MPI_COMM_NULL)
        return 0;
    int nrank = 0;
    if (node_split(xsprof_mpi_g.sync_comm, &g_node) != MPI_SUCCESS)
        return -1;
    PMPI_Comm_rank(g_node, &nrank);
    /* key 0 keeps world order: world rank 0 is leader rank 0 */
    return PMPI_Comm_split(xsprof_mpi_g.sync_comm, nrank == 0 ? 0 : MPI_UNDEFINED, 0, &g_leaders) == MPI_SUCCESS
               ? 0 : -1;
}

/* Periodic samples need no extra communication in between: at each sample
 * rank 0 turns the observed rate of WORLD collectives into the coll_seq of
 * the next one, about XSPROF_CLOCK_SYNC_S later, and everyone learns it here.
 * Every rank reaches the same coll_seq, so all take the sample together. */
static void plan_next(int phase) {
    uint64_t next = 0;
    uint64_t seq = g_last_seq;
    if (xsprof_mpi_g.rank == 0 && xsprof_mpi_g.sync_period_ns > 0 && phase != XSPROF_CLOCK_FINAL) {
        int64_t now = xsprof_clock_now();
        seq = phase == XSPROF_CLOCK_INIT ? 0 : atomic_load(&xsprof_mpi_g.sync_next);
        if (phase == XSPROF_CLOCK_INIT)
            next = XSPROF_SYNC_FIRST;
        else {
            double rate = (double)(seq - g_last_seq) / (double)(now - g_last_t > 0 ? now - g_last_t : 1);
            double ahead = rate * (double)xsprof_mpi_g.sync_period_ns;
            next = seq + (ahead < 1 ? 1 : ahead > 1e12 ? (uint64_t)1e12 : (uint64_t)ahead);
        }
        g_last_t = now;
        g_last_seq = seq;
    }
    PMPI_Bcast(&next, 1, MPI_UINT64_T, 0, xsprof_mpi_g.sync_comm);
    atomic_store(&xsprof_mpi_g.sync_next, next);
}

void xsprof_clock_sync_maybe(uint64_t coll_seq) {
    uint64_t next = atomic_load_explicit(&xsprof_mpi_g.sync_next, memory_order_relaxed);
    if (next && coll_seq == next)
        xsprof_clock_sync(XSPROF_CLOCK_PERIODIC);
}

void xsprof_clock_sync(int phase) {
    if (xsprof_mpi_g.sync_comm == MPI_COMM_NULL || sync_comms())
        return;
    /* start together: the time measured is the exchange, not late arrivals */
    PMPI_Barrier(xsprof_mpi_g.sync_comm);
    int64_t t_start = xsprof_clock_now();
    sample me = {0, 0, 0};
    /* 1. node leaders against rank 0, one at a time */
    if (g_leaders != MPI_COMM_NULL) {
        int lr = 0, ln = 1;
        PMPI_Comm_rank(g_leaders, &lr);
        PMPI_Comm_size(g_leaders, &ln);
        for (int l = 1; l < ln; l++) {
            if (lr == 0) {
                give_turn(g_leaders, l);
                serve(g_leaders, l, XSPROF_SYNC_ROUNDS);
            } else if (lr == l) {
                wait_turn(g_leaders, 0);
                me = measure(g_leaders, 0, XSPROF_SYNC_ROUNDS);
            }
        }
    }
    /* 2. the leader's result reaches its node */
    int64_t lead[2] = {me.offset, me.rtt};
    int nr = 0, nn = 1;
    PMPI_Comm_rank(g_node, &nr);
    PMPI_Comm_size(g_node, &nn);
    if (nr == 0)
        for (int r = 1; r < nn; r++)
            PMPI_Send(lead, 2, MPI_INT64_T, r, XSPROF_SYNC_TAG + 2, g_node);
    else
        recv_sleeping(g_node, 0, XSPROF_SYNC_TAG + 2, lead, 2, MPI_INT64_T);
    /* 3. every rank confirms it shares the leader's clock, else measures it */
    for (int r = 1; r < nn; r++) {
        if (nr == 0) {
            int full = 0;
            give_turn(g_node, r);
            serve(g_node, r, XSPROF_SYNC_CONFIRM);
            PMPI_Recv(&full, 1, MPI_INT, r, XSPROF_SYNC_TAG, g_node, MPI_STATUS_IGNORE);
            if (full)
                serve(g_node, r, XSPROF_SYNC_ROUNDS);
        } else if (nr == r) {
            wait_turn(g_node, 0);
            sample s = measure(g_node, 0, XSPROF_SYNC_CONFIRM);
            /* Same clock: the measured offset is within the exchange's error,
             * and that error is small enough to tell (a slow exchange, e.g. on
             * oversubscribed or sanitizer-built ranks, proves nothing: then
             * measure fully). */
            int full = s.rtt > XSPROF_SYNC_CONFIRM_MAX_RTT_NS || s.offset > s.rtt / 2 || -s.offset > s.rtt / 2;
            PMPI_Send(&full, 1, MPI_INT, 0, XSPROF_SYNC_TAG, g_node);
            if (full) {
                s = measure(g_node, 0, XSPROF_SYNC_ROUNDS);
                me.offset = lead[0] + s.offset;
                me.rtt = lead[1] + s.rtt;
            } else {
                /* The leader's offset: the true one lies within rtt / 2 of
                 * the measured one, itself within rtt / 2 of the leader's,
                 * so the error bound is a whole round trip (recorded as rtt
                 * 2 x: readers take rtt / 2). With rtt / 2 a clock that
                 * drifted less than the exchange could tell (an oversubscribed
                 * run, a slow start) was claimed closer than it was. */
                me.offset = lead[0];
                me.rtt = lead[1] + 2 * s.rtt;
            }
            me.mid = s.mid;
        }
    }
    if (nr == 0 && !me.mid)
        me.mid = xsprof_clock_now();
    xsprof_rec_clock rec = {.h = {XSPROF_REC_CLOCK, sizeof rec}, .phase = (uint32_t)phase, .t_local = me.mid,
                            .offset_ns = me.offset, .rtt_ns = me.rtt};
    xsprof_buf_append(&rec, sizeof rec, 1);
    int64_t spent = xsprof_clock_now() - t_start, slowest = spent;
    /* what the exchange cost the job: the slowest rank (benchmarks print it) */
    PMPI_Reduce(&spent, &slowest, 1, MPI_INT64_T, MPI_MAX, 0, xsprof_mpi_g.sync_comm);
    if (phase == XSPROF_CLOCK_FINAL)
        xsprof_mpi_g.final_sync_ns = slowest;
    else if (phase == XSPROF_CLOCK_INIT)
        xsprof_mpi_g.init_sync_ns = slowest;
    xsprof_log(XSPROF_LOG_DEBUG, "clock sample phase %d: offset %lld ns, rtt %lld ns", phase, (long long)me.offset,
               (long long)me.rtt);
    if (xsprof_mpi_g.rank == 0) {
        int nodes = 1;
        if (g_leaders != MPI_COMM_NULL)
            PMPI_Comm_size(g_leaders, &nodes);
        char v[32];
        snprintf(v, sizeof v, "%lld", (long long)slowest);
        static const char *const names[] = {"init", "periodic", "final"};
        if (phase != XSPROF_CLOCK_PERIODIC)
            xsprof_meta_set(phase == XSPROF_CLOCK_FINAL ? "clock_sync_final_ns" : "clock_sync_init_ns", v);
        if (phase == XSPROF_CLOCK_INIT) {
            snprintf(v, sizeof v, "%d", nodes);
            xsprof_meta_set("clock_sync_nodes", v);
        }
        xsprof_log(phase == XSPROF_CLOCK_PERIODIC ? XSPROF_LOG_DEBUG : XSPROF_LOG_INFO,
                   "clock alignment (%s): %d ranks on %d nodes, %.3f ms", names[phase], xsprof_mpi_g.size, nodes,
                   (double)slowest / 1e6);
    }
    plan_next(phase);
    if (phase == XSPROF_CLOCK_FINAL) {
        PMPI_Comm_free(&g_node);
        if (g_leaders != MPI_COMM_NULL)
            PMPI_Comm_free(&g_leaders);
    }
}

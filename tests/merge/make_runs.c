/* tests/merge/make_runs.c — writes the hand-made runs of the merge tests
 * and benchmark. Usage: merge_make_runs KIND DIR [args]
 *   golden  3 ranks: blocking send to Irecv+Wait, ANY_SOURCE receive of an
 *           Isend, Allreduce on the world, Bcast and a send on a split
 *           communicator {0,2}; clocks with constant offsets. Exact merged
 *           times are listed in check_golden.py.
 *   journal the golden run, rank 1 left as a journal (killed)
 *   foreign the golden run, rank 2 from another job
 *   skew    2 ranks, 40 messages and 10 barriers; rank 1's clock runs
 *           15 us late and drifts 20 ppm beyond what its samples say
 *   latelr  2 ranks: a Waitall with a Late Sender and a longer Late
 *           Receiver whose receive completes after the sender's next calls
 *   unrecv  [STEPS] 2 ranks: a send never received, then STEPS times (1) a
 *           Late Sender that is no Wrong Order and one that is
 *   gpu     1 rank: region args, counters, instants, memory, a CUDA launch
 *   gpumpi  2 ranks: GPU kernels on two devices overlapping MPI waits;
 *           memory events (leaks, MPI's own, lost and unknown frees)
 *           and its kernel (correlation 42), a memcpy
 *   empty   2 ranks that recorded definitions but no event
 *   big     NRANKS EVENTS_PER_RANK: ring exchange + regions, for benchmarks
 *   bigskew NRANKS EVENTS_PER_RANK: the same with clocks off by errors their samples miss,
 *           nonblocking exchanges every 4th step and an Allreduce every 50
 *           (clock violations for the logical clock)
 *   deep    2 ranks, 2 threads: 4500 nested regions closed innermost first
 *           (the outer ones begin before thousands of rows stored ahead
 *           of them: further out of order than the streaming merge's
 *           default window), 2000 leaves, messages, instants, counters
 *   icoll   2 ranks: a nonblocking collective (Iallreduce post, Wait and
 *           its COMPLETION) around a message exchange
 *   zerocoll 2 ranks: a receive that ends before its send began and a
 *           Barrier of zero length on rank 0 (a cycle for the streamed clock)
 *   chain   3 ranks, a pipeline 0 -> 1 -> 2 then a Barrier: rank 0's long
 *           `slow` delays rank 1, whose short `relay` passes the delay on
 *           to rank 2, which arrives last at the Barrier (the delay
 *           analysis must charge the waits down the chain to `slow`;
 *           exact costs in check_golden.py), then a zero-byte Bcast the
 *           others leave before the root comes
 *   chain_bare the same without regions (a program profiled by LD_PRELOAD)
 *   halo    4 ranks in a ring, 3 steps of `stencil` then two Sendrecvs
 *           (right, then left) inside `halo`; rank 1's stencil takes 3 us,
 *           the others' 1 us: every Late Sender's root cause is rank 1's
 *           `stencil` (pairwise synchronisation intervals, check_golden.py)
 *   halocoll 2 ranks, 3 steps: `stencil` (rank 1 slower), an Allreduce,
 *           `pack` (rank 1 slower), rank 1 -> 0 Send (Late Sender), rank 0
 *           -> 1 Ssend that rank 1 receives after `unpack` and a Barrier
 *           on MPI_COMM_SELF (Late Receiver): the Allreduce starts the
 *           pair's interval of the Late Sender (all to `pack`), the
 *           message of the Late Receiver's (all to `unpack`, the Barrier
 *           notwithstanding; check_golden.py)
 *   outside 2 ranks: rank 1's Barrier comes 4 us after its `stencil`
 *           ended, outside every region; rank 0's longer `stencil` leaves
 *           no excess: the wait is explained by no region (as streamed),
 *           not by the region before the call
 *   preinit 2 ranks: rank 1 runs `setup` for 5 us before MPI_Init, then
 *           `work` 3 us longer than rank 0 before a Barrier: the first
 *           interval starts at MPI_Init's exit (the measured window), so
 *           all the wait goes to `work`, none to `setup` (as streamed)
 *   waitall_tie 2 ranks: a Waitall completes two messages at its end, one
 *           sent late (Late Sender), one sent before the call: no Wrong
 *           Order (same-nanosecond receives are not each other's later one)
 *   pollwo  2 ranks: a polling loop's Late Sender while an earlier message
 *           is still to be received: Wrong Order, in memory as streamed
 *   polling 2 ranks: rank 0 polls with 2000 unsuccessful MPI_Test calls of
 *           30 ns (60 us of its 100 us), then receives rank 1's message
 *   pollwait 2 ranks: rank 0 posts an Irecv and polls, 100 MPI_Test calls
 *           of 100 ns with 100 ns of `work` between, the 101st completing
 *           it; rank 1 computes `slow` and sends at 15 us: the 70 polls
 *           before the send are a Late Sender of 7 us
 *   pollsend 2 ranks: pollwait's receiver, but its completing Test comes
 *           at 41 us, after rank 1, which sent (MPI_Isend at 15 us after
 *           `slow`), polled its request with 100 MPI_Test calls: the Late
 *           Sender's cause (`slow`) lies 100 calls back on rank 1
 *   polllr  2 ranks: pollsend's sender side as a Late Receiver: rank 0
 *           Issends at 500 and polls its request, 100 MPI_Test calls of 100
 *           ns with 100 ns of `work` between, the Test at 21 us completing
 *           it; rank 1 computes `slow` and posts its receive at 15 us: the
 *           70 polls before the post are a Late Receiver of 7 us
 *   farcause 2 ranks: rank 0's MPI_Sendrecv waits 4 us for rank 1's Send
 *           (a Late Sender, which the streamed analysis holds until rank
 *           0's next call in case the call's Late Receiver is longer);
 *           rank 1 makes 20 more calls before that next call comes, so
 *           the causing Send is no longer among its recent calls then
 *           (its cause used to be lost streamed: root rank -1)
 *   selfpoll 2 ranks, as Ray polls: rank 0 polls with 50 MPI_Iprobe
 *           calls of 100 ns from 1 us, Isends to itself at 11 us, probes
 *           and receives that message, waits for its Isend, polls 25 more
 *           Iprobes and receives rank 1's message, sent at 17 us after
 *           `slow`: one Late Sender (the 25 polls before 17 us, 2.5 us,
 *           caused by rank 1); the message to itself waits for no one
 *           (the streamed analysis counted the 50 polls before it as a
 *           Late Sender of rank 0 by rank 0)
 *   isendlr 2 ranks: rank 0 Isends to rank 1 after 0.1 us of `pack` and
 *           waits in MPI_Wait from 0.2 us; rank 1 runs `unpack` for 1.5
 *           us, a Barrier on MPI_COMM_SELF and 25 ns of `post`, then
 *           receives at 1.6 us: a Late Receiver of 1.4 us, compared since
 *           both ranks' starts (unpack 1500 : post 25), not since the
 *           Barrier (all to `post`)
 *   overlap 2 ranks: rank 1 computes 10 us in 20 `compute` chunks between
 *           19 MPI calls that complete nothing (unsuccessful MPI_Test
 *           calls and, every other one, an MPI_Waitall of no request), 0.5
 *           us in `pack`, then sends to
 *           rank 0, which computed 1 us and waits 8.5 us in MPI_Recv (the
 *           polls do not end rank 1's interval: most of it to `compute`)
 *   icollpoll 3 ranks: an Iallreduce that rank 0 completes first (Wait,
 *           2.5 us), rank 1 in a polling loop (its completing MPI_Test
 *           at 3 us, then 3 more that complete nothing) and rank 2 last
 *           (Wait at 5 us): rank 1's 100 ns NxN Completion is in the Test
 *           that completed the collective, not an idle poll
 *   mpithreads     2 ranks, 2 threads: thread 1's one long send/receive
 *           spans 300 short messages of thread 0 and is stored after them
 *           (MPI calls out of begin-time order by 300 rows)
 *   mpithreads_far the same with 5000 short messages (beyond the
 *           streaming merge's default window)
 *   window  2 ranks: `main` holds two `step`s whose children (`setup`,
 *           `compute`, a Barrier) lie before, across, inside and after
 *           [4 us, 14 us]: the report of --from 4us --to 14us clips
 *           every interval to it (exact times in check_golden.py) */
#include "fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define JOB "job-42"
#define START 1700000000000000000LL

static xsprof_rec_mpi M(void)
{
    xsprof_rec_mpi m;
    memset(&m, 0, sizeof m);
    m.peer = m.tag = m.root = XSPROF_MPI_NONE;
    m.comm = 0;
    return m;
}

/* The COMPLETION row of receive `request` (from peer, tag, seq, bytes)
 * inside the call named op, at t. */
static void recv_completion(xsf *f, const char *op, int64_t t, uint64_t request, int32_t peer, int32_t tag, uint64_t seq,
                            uint64_t bytes)
{
    xsprof_rec_mpi m = M();
    m.t_begin = m.t_end = t;
    m.kind = XSPROF_MPI_COMPLETION;
    m.flags = XSPROF_MPI_F_RECV;
    m.request = request;
    m.peer = peer;
    m.tag = tag;
    m.seq = seq;
    m.bytes_recv = bytes;
    xsf_mpi(f, 0, op, m);
}

static int golden(const char *dir, int journal_rank, const char *foreign_job)
{
    static const int32_t world[] = {0, 1, 2}, split[] = {0, 2};
    /* local = reference - offset: rank 1 runs 5000 ns ahead, rank 2 3000 behind */
    const int64_t off[3] = {0, -5000, 3000};
    xsf *f[3];
    for (int r = 0; r < 3; r++) {
        f[r] = xsf_create(dir, r, 3, r == 2 && foreign_job ? foreign_job : JOB, START + r * 1000, r == 1 ? "node1" : "node0");
        if (!f[r])
            return 1;
        xsf_thread(f[r], 0, "main");
        xsf_comm(f[r], 0, "MPI_COMM_WORLD", UINT32_MAX, 3, world);
        if (r != 1)
            xsf_comm(f[r], 1, "split(0)", 0, 2, split);
        xsf_clock(f[r], XSPROF_CLOCK_INIT, 500 - off[r], off[r], 400);
    }
#define L(r, t) ((int64_t)(t) - off[r])
    xsprof_rec_mpi m;
    /* rank 0 */
    m = M(); m.t_begin = L(0, 2000); m.t_end = L(0, 2500); m.kind = XSPROF_MPI_SEND; m.peer = 1; m.tag = 7;
    m.bytes_sent = 100; m.seq = 1;
    xsf_mpi(f[0], 0, "MPI_Send", m);
    m = M(); m.t_begin = L(0, 3000); m.t_end = L(0, 6000); m.kind = XSPROF_MPI_RECV; m.peer = 2; m.tag = 9;
    m.bytes_recv = 200; m.seq = 1; m.flags = XSPROF_MPI_F_WILDCARD_SRC;
    xsf_mpi(f[0], 0, "MPI_Recv", m);
    m = M(); m.t_begin = L(0, 7000); m.t_end = L(0, 9000); m.kind = XSPROF_MPI_COLL; m.coll = XSPROF_COLL_NXN;
    m.coll_seq = 1; m.bytes_sent = m.bytes_recv = 8;
    xsf_mpi(f[0], 0, "MPI_Allreduce", m);
    m = M(); m.t_begin = L(0, 10000); m.t_end = L(0, 10500); m.kind = XSPROF_MPI_COLL; m.coll = XSPROF_COLL_ONE2N;
    m.coll_seq = 1; m.comm = 1; m.root = 0; m.bytes_sent = 32;
    xsf_mpi(f[0], 0, "MPI_Bcast", m);
    m = M(); m.t_begin = L(0, 11000); m.t_end = L(0, 11200); m.kind = XSPROF_MPI_SEND; m.peer = 2; m.tag = 3;
    m.comm = 1; m.bytes_sent = 64; m.seq = 1;
    xsf_mpi(f[0], 0, "MPI_Send", m);
    xsf_region_arg_int(f[0], 0, "iterations", 0, 3);
    xsf_region(f[0], 0, "main", 0, L(0, 1000), L(0, 20000));
    /* rank 1 */
    m = M(); m.t_begin = L(1, 1800); m.t_end = L(1, 1900); m.kind = XSPROF_MPI_IRECV; m.peer = 0; m.tag = 7;
    m.request = 11;
    xsf_mpi(f[1], 0, "MPI_Irecv", m);
    m = M(); m.t_begin = L(1, 2200); m.t_end = L(1, 4000); m.kind = XSPROF_MPI_WAIT; m.count = 1; m.comm = UINT32_MAX;
    xsf_mpi(f[1], 0, "MPI_Wait", m);
    recv_completion(f[1], "MPI_Wait", L(1, 3900), 11, 0, 7, 1, 100);
    m = M(); m.t_begin = L(1, 8000); m.t_end = L(1, 9000); m.kind = XSPROF_MPI_COLL; m.coll = XSPROF_COLL_NXN;
    m.coll_seq = 1; m.bytes_sent = m.bytes_recv = 8;
    xsf_mpi(f[1], 0, "MPI_Allreduce", m);
    xsf_region(f[1], 0, "main", 0, L(1, 1500), L(1, 19000));
    /* rank 2 */
    m = M(); m.t_begin = L(2, 4000); m.t_end = L(2, 4100); m.kind = XSPROF_MPI_ISEND; m.peer = 0; m.tag = 9;
    m.bytes_sent = 200; m.seq = 1; m.request = 21;
    xsf_mpi(f[2], 0, "MPI_Isend", m);
    m = M(); m.t_begin = L(2, 4900); m.t_end = L(2, 5100); m.kind = XSPROF_MPI_WAIT; m.count = 1; m.comm = UINT32_MAX;
    xsf_mpi(f[2], 0, "MPI_Wait", m);
    m = M(); m.t_begin = m.t_end = L(2, 5000); m.kind = XSPROF_MPI_COMPLETION; m.request = 21;
    xsf_mpi(f[2], 0, "MPI_Wait", m);
    m = M(); m.t_begin = L(2, 6500); m.t_end = L(2, 9000); m.kind = XSPROF_MPI_COLL; m.coll = XSPROF_COLL_NXN;
    m.coll_seq = 1; m.bytes_sent = m.bytes_recv = 8;
    xsf_mpi(f[2], 0, "MPI_Allreduce", m);
    m = M(); m.t_begin = L(2, 9500); m.t_end = L(2, 10600); m.kind = XSPROF_MPI_COLL; m.coll = XSPROF_COLL_ONE2N;
    m.coll_seq = 1; m.comm = 1; m.root = 0; m.bytes_recv = 32;
    xsf_mpi(f[2], 0, "MPI_Bcast", m);
    m = M(); m.t_begin = L(2, 11100); m.t_end = L(2, 11300); m.kind = XSPROF_MPI_RECV; m.peer = 0; m.tag = 3;
    m.comm = 1; m.bytes_recv = 64; m.seq = 1;
    xsf_mpi(f[2], 0, "MPI_Recv", m);
    xsf_region(f[2], 0, "main", 0, L(2, 1200), L(2, 19500));
#undef L
    int bad = 0;
    for (int r = 0; r < 3; r++)
        bad |= xsf_close(f[r], r == journal_rank ? XSPROF_JOURNAL_RUNNING : XSPROF_JOURNAL_FINALIZED,
                         r != journal_rank) != 0;
    return bad;
}

static int chain(const char *dir, int regions)
{
    static const int32_t world[] = {0, 1, 2};
    xsf *f[3];
    for (int r = 0; r < 3; r++) {
        if (!(f[r] = xsf_create(dir, r, 3, JOB, START, "node0")))
            return 1;
        xsf_thread(f[r], 0, "main");
        xsf_comm(f[r], 0, "MPI_COMM_WORLD", UINT32_MAX, 3, world);
        xsf_clock(f[r], XSPROF_CLOCK_INIT, 0, 0, 200);
    }
    xsprof_rec_mpi m;
    /* rank 0: slow [0, 10000], Send to 1, Barrier */
    if (regions)
        xsf_region(f[0], 0, "slow", 0, 0, 10000);
    m = M(); m.t_begin = 10000; m.t_end = 10100; m.kind = XSPROF_MPI_SEND; m.peer = 1; m.tag = 1; m.bytes_sent = 8;
    m.seq = 1;
    xsf_mpi(f[0], 0, "MPI_Send", m);
    /* ranks 1 and 2: work [0, 1000], Recv from the previous rank (Late
     * Senders of 9000 and 9700 ns), relay, Send to the next */
    for (int r = 1; r < 3; r++) {
        int64_t rb = r == 1 ? 10200 : 10900, re = r == 1 ? 10700 : 11000;
        if (regions)
            xsf_region(f[r], 0, "work", 0, 0, 1000);
        m = M(); m.t_begin = 1000; m.t_end = rb; m.kind = XSPROF_MPI_RECV; m.peer = r - 1; m.tag = 1; m.bytes_recv = 8;
        m.seq = 1;
        xsf_mpi(f[r], 0, "MPI_Recv", m);
        if (regions)
            xsf_region(f[r], 0, "relay", 0, rb, re);
        if (r == 1) {
            m = M(); m.t_begin = 10700; m.t_end = 10800; m.kind = XSPROF_MPI_SEND; m.peer = 2; m.tag = 1; m.bytes_sent = 8;
            m.seq = 1;
            xsf_mpi(f[1], 0, "MPI_Send", m);
        }
    }
    /* the Barrier: rank 2 enters last, at 11000 */
    const int64_t be[3] = {10200, 10900, 11000};
    for (int r = 0; r < 3; r++) {
        m = M(); m.t_begin = be[r]; m.t_end = 11100; m.kind = XSPROF_MPI_COLL; m.coll = XSPROF_COLL_BARRIER;
        m.coll_seq = 1;
        xsf_mpi(f[r], 0, "MPI_Barrier", m);
    }
    /* then a zero-byte Bcast from rank 0, which ranks 1 and 2 leave before
     * the root comes (as MPI lets them): no clock violation, no wait */
    for (int r = 0; r < 3; r++) {
        m = M(); m.t_begin = r ? 11200 : 12000; m.t_end = r ? 11300 : 12100; m.kind = XSPROF_MPI_COLL;
        m.coll = XSPROF_COLL_ONE2N; m.coll_seq = 2; m.root = 0;
        xsf_mpi(f[r], 0, "MPI_Bcast", m);
    }
    int bad = 0;
    for (int r = 0; r < 3; r++)
        bad |= xsf_close(f[r], XSPROF_JOURNAL_FINALIZED, 1) != 0;
    return bad;
}

/* Close ranks 0 .. n-1 as finalized runs: 0, or 1 when one failed. */
static int close_all(xsf **f, int n)
{
    int bad = 0;
    for (int r = 0; r < n; r++)
        bad |= xsf_close(f[r], XSPROF_JOURNAL_FINALIZED, 1) != 0;
    return bad;
}

/* The halo run: each rank's Sendrecv begins at b[r] and sends to
 * (r + dir) % 4; it receives from (r - dir) % 4 and ends 100 ns after both
 * it and its source's send began. The halo region has 50 ns of work before,
 * between and after the Sendrecvs. */
static void halo_sendrecv(xsf **f, const int64_t *b, int64_t *e, int dir, uint64_t seq)
{
    for (int r = 0; r < 4; r++) {
        int dst = (r + dir + 4) % 4, src = (r - dir + 4) % 4;
        e[r] = (b[r] > b[src] ? b[r] : b[src]) + 100;
        xsprof_rec_mpi m = M();
        m.t_begin = b[r]; m.t_end = e[r]; m.kind = XSPROF_MPI_SENDRECV; m.peer = dst; m.tag = dir > 0 ? 1 : 2;
        m.bytes_sent = 64; m.seq = seq;
        xsf_mpi(f[r], 0, "MPI_Sendrecv", m);
        recv_completion(f[r], "MPI_Sendrecv", e[r], 0, src, dir > 0 ? 1 : 2, seq, 64);
    }
}

static int halo(const char *dir)
{
    static const int32_t world[] = {0, 1, 2, 3};
    xsf *f[4];
    int64_t t[4] = {0, 0, 0, 0}, ab[4], ae[4], bb[4], be[4];
    for (int r = 0; r < 4; r++) {
        if (!(f[r] = xsf_create(dir, r, 4, JOB, START, "node0")))
            return 1;
        xsf_thread(f[r], 0, "main");
        xsf_comm(f[r], 0, "MPI_COMM_WORLD", UINT32_MAX, 4, world);
        xsf_clock(f[r], XSPROF_CLOCK_INIT, 0, 0, 200);
    }
    for (uint64_t step = 1; step <= 3; step++) {
        for (int r = 0; r < 4; r++) {
            int64_t d = r == 1 ? 3000 : 1000;
            xsf_region(f[r], 0, "stencil", 0, t[r], t[r] + d);
            ab[r] = t[r] + d + 50;
        }
        halo_sendrecv(f, ab, ae, 1, step);
        for (int r = 0; r < 4; r++)
            bb[r] = ae[r] + 50;
        halo_sendrecv(f, bb, be, -1, step);
        for (int r = 0; r < 4; r++) {
            xsf_region(f[r], 0, "halo", 0, ab[r] - 50, be[r] + 50);
            t[r] = be[r] + 50;
        }
    }
    return close_all(f, 4);
}

/* Rank r of a 2-rank run on one node: thread 0 "main" and the world
 * communicator; one clock sample at `offset` ns unless offset < 0. */
static xsf *world2(const char *dir, int r, int64_t offset)
{
    static const int32_t world[] = {0, 1};
    xsf *f = xsf_create(dir, r, 2, JOB, START, "node0");
    if (!f)
        return NULL;
    xsf_thread(f, 0, "main");
    xsf_comm(f, 0, "MPI_COMM_WORLD", UINT32_MAX, 2, world);
    if (offset >= 0)
        xsf_clock(f, XSPROF_CLOCK_INIT, 0, offset, 200);
    return f;
}

/* Both ranks of a 2-rank run (world2, one sample at offset 0): 0, or 1. */
static int open2(const char *dir, xsf *f[2])
{
    for (int r = 0; r < 2; r++)
        if (!(f[r] = world2(dir, r, 0)))
            return 1;
    return 0;
}

static int overlap(const char *dir)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    xsprof_rec_mpi m;
    /* rank 1: twenty 0.5 us chunks of compute with a 100 ns MPI call that
     * completes nothing after each of the first 19 (as the wrappers record
     * them: an unsuccessful Test is an OTHER row, a Waitall a WAIT row of
     * count 0), pack, Send at 12400 */
    int64_t t = 0;
    for (int i = 0; i < 20; i++) {
        xsf_region(f[1], 0, "compute", 0, t, t + 500);
        t += 500;
        if (i < 19) {
            m = M(); m.t_begin = t; m.t_end = t + 100; m.kind = i % 2 ? XSPROF_MPI_WAIT : XSPROF_MPI_OTHER;
            m.comm = UINT32_MAX;
            xsf_mpi(f[1], 0, i % 2 ? "MPI_Waitall" : "MPI_Test", m);
            t += 100;
        }
    }
    xsf_region(f[1], 0, "pack", 0, t, t + 500);
    t += 500;
    m = M(); m.t_begin = t; m.t_end = t + 100; m.kind = XSPROF_MPI_SEND; m.peer = 0; m.tag = 1; m.bytes_sent = 8;
    m.seq = 1;
    xsf_mpi(f[1], 0, "MPI_Send", m);
    /* rank 0: compute 1 us, Recv from 3900 (8.5 us before the send) */
    xsf_region(f[0], 0, "compute", 0, 2900, 3900);
    m = M(); m.t_begin = 3900; m.t_end = t + 200; m.kind = XSPROF_MPI_RECV; m.peer = 1; m.tag = 1; m.bytes_recv = 8;
    m.seq = 1;
    xsf_mpi(f[0], 0, "MPI_Recv", m);
    return close_all(f, 2);
}

/* An MPI_Wait [b, e] that completes the Isend of request `req` at `at`. */
static void isend_wait(xsf *f, int64_t b, int64_t e, int64_t at, uint64_t req)
{
    xsprof_rec_mpi m = M();
    m.t_begin = b; m.t_end = e; m.kind = XSPROF_MPI_WAIT; m.count = 1; m.comm = UINT32_MAX;
    xsf_mpi(f, 0, "MPI_Wait", m);
    m = M(); m.t_begin = m.t_end = at; m.kind = XSPROF_MPI_COMPLETION; m.request = req;
    xsf_mpi(f, 0, "MPI_Wait", m);
}

/* Unsuccessful MPI_Tests of request `req` on f: `n` of 100 ns every 200 ns
 * from `from`, each followed by 100 ns of `work` when work is set. */
static void failed_tests(xsf *f, uint64_t req, int n, int64_t from, int work)
{
    for (int i = 0; i < n; i++) { /* OTHER rows */
        xsprof_rec_mpi m = M();
        m.t_begin = from + 200 * i; m.t_end = m.t_begin + 100; m.kind = XSPROF_MPI_OTHER; m.comm = UINT32_MAX;
        m.request = req;
        xsf_mpi(f, 0, "MPI_Test", m);
        if (work)
            xsf_region(f, 0, "work", 0, m.t_end, m.t_end + 100);
    }
}

/* Rank 0 of pollwait and pollsend: Irecv at 500, 100 unsuccessful Tests
 * with `work` between from 1000, `work` up to `done` and the Test there
 * that completes the receive. */
static void polling_receiver(xsf *f, int64_t done)
{
    xsprof_rec_mpi m = M();
    m.t_begin = 500; m.t_end = 600; m.kind = XSPROF_MPI_IRECV; m.peer = 1; m.tag = 1; m.request = 5;
    xsf_mpi(f, 0, "MPI_Irecv", m);
    failed_tests(f, 5, 100, 1000, 1);
    if (done > 21000)
        xsf_region(f, 0, "work", 0, 21000, done);
    m = M(); m.t_begin = done; m.t_end = done + 100; m.kind = XSPROF_MPI_WAIT; m.count = 1; m.comm = UINT32_MAX;
    xsf_mpi(f, 0, "MPI_Test", m);
    recv_completion(f, "MPI_Test", done + 50, 5, 1, 1, 1, 8);
}

static int pollwait(const char *dir)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    polling_receiver(f[0], 21000);
    xsf_region(f[1], 0, "slow", 0, 0, 15000);
    xsprof_rec_mpi m = M();
    m.t_begin = 15000; m.t_end = 15100; m.kind = XSPROF_MPI_SEND; m.peer = 0; m.tag = 1; m.bytes_sent = 8; m.seq = 1;
    xsf_mpi(f[1], 0, "MPI_Send", m);
    return close_all(f, 2);
}

/* pollsend: rank 0 as in pollwait, its completing Test at 41000; rank 1
 * computes `slow` [0, 15000], Isends, polls its request with 100
 * unsuccessful Tests and completes it with a Wait at 40000. */
static int pollsend(const char *dir)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    polling_receiver(f[0], 41000);
    xsf_region(f[1], 0, "slow", 0, 0, 15000);
    xsprof_rec_mpi m = M();
    m.t_begin = 15000; m.t_end = 15100; m.kind = XSPROF_MPI_ISEND; m.peer = 0; m.tag = 1; m.bytes_sent = 8;
    m.seq = 1; m.request = 7;
    xsf_mpi(f[1], 0, "MPI_Isend", m);
    failed_tests(f[1], 7, 100, 15200, 0);
    isend_wait(f[1], 40000, 40100, 40050, 7);
    return close_all(f, 2);
}

/* farpoll: see the list at the top. tail: rank 1's calls after its Send
 * (40; more make a run big enough to stream by default, the wait the same). */
static int farpoll(const char *dir, int tail)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    polling_receiver(f[0], 41000);
    xsf_region(f[1], 0, "slow", 0, 0, 15000);
    xsprof_rec_mpi m = M();
    m.t_begin = 15000; m.t_end = 15100; m.kind = XSPROF_MPI_SEND; m.peer = 0; m.tag = 1; m.bytes_sent = 8; m.seq = 1;
    xsf_mpi(f[1], 0, "MPI_Send", m);
    for (int i = 0; i < tail; i++) {
        m = M(); m.t_begin = 15200 + 200 * (int64_t)i; m.t_end = m.t_begin + 50; m.kind = XSPROF_MPI_OTHER;
        xsf_mpi(f[1], 0, "MPI_Comm_rank", m);
        xsf_region(f[1], 0, "tail", 0, m.t_end, m.t_end + 100);
    }
    return close_all(f, 2);
}

/* polllr: see the list at the top. */
static int polllr(const char *dir)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    xsprof_rec_mpi m = M();
    m.t_begin = 500; m.t_end = 600; m.kind = XSPROF_MPI_ISEND; m.peer = 1; m.tag = 1; m.bytes_sent = 8; m.seq = 1;
    m.request = 5;
    xsf_mpi(f[0], 0, "MPI_Issend", m);
    failed_tests(f[0], 5, 100, 1000, 1);
    m = M(); m.t_begin = 21000; m.t_end = 21100; m.kind = XSPROF_MPI_WAIT; m.count = 1; m.comm = UINT32_MAX;
    xsf_mpi(f[0], 0, "MPI_Test", m);
    m = M(); m.t_begin = m.t_end = 21050; m.kind = XSPROF_MPI_COMPLETION; m.request = 5;
    xsf_mpi(f[0], 0, "MPI_Test", m);
    xsf_region(f[1], 0, "slow", 0, 0, 15000);
    m = M(); m.t_begin = 15000; m.t_end = 15100; m.kind = XSPROF_MPI_RECV; m.peer = 0; m.tag = 1; m.bytes_recv = 8;
    m.seq = 1;
    xsf_mpi(f[1], 0, "MPI_Recv", m);
    return close_all(f, 2);
}

/* farcause: see the list at the top. Rank 1 posts its receive of rank 0's
 * message first (no Late Receiver), runs `slow` and Sends at 5000; rank 0
 * runs `work` and waits in its Sendrecv from 1000; then rank 1 makes 20
 * MPI_Comm_rank calls and completes its receive before rank 0, after
 * `compute`, calls again at 9000. */
static int farcause(const char *dir)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    xsprof_rec_mpi m;
    m = M(); m.t_begin = 0; m.t_end = 50; m.kind = XSPROF_MPI_IRECV; m.peer = 0; m.tag = 2; m.request = 4;
    xsf_mpi(f[1], 0, "MPI_Irecv", m);
    xsf_region(f[1], 0, "slow", 0, 100, 5000);
    m = M(); m.t_begin = 5000; m.t_end = 5100; m.kind = XSPROF_MPI_SEND; m.peer = 0; m.tag = 1; m.bytes_sent = 8;
    m.seq = 1;
    xsf_mpi(f[1], 0, "MPI_Send", m);
    for (int i = 0; i < 20; i++) {
        m = M(); m.t_begin = 5200 + 100 * i; m.t_end = m.t_begin + 50; m.kind = XSPROF_MPI_OTHER;
        xsf_mpi(f[1], 0, "MPI_Comm_rank", m);
    }
    m = M(); m.t_begin = 8000; m.t_end = 8100; m.kind = XSPROF_MPI_WAIT; m.count = 1; m.comm = UINT32_MAX;
    xsf_mpi(f[1], 0, "MPI_Wait", m);
    recv_completion(f[1], "MPI_Wait", 8050, 4, 0, 2, 1, 8);
    xsf_region(f[0], 0, "work", 0, 0, 1000);
    m = M(); m.t_begin = 1000; m.t_end = 5200; m.kind = XSPROF_MPI_SENDRECV; m.peer = 1; m.tag = 2; m.bytes_sent = 8;
    m.seq = 1;
    xsf_mpi(f[0], 0, "MPI_Sendrecv", m);
    recv_completion(f[0], "MPI_Sendrecv", 5200, 0, 1, 1, 1, 8);
    xsf_region(f[0], 0, "compute", 0, 5300, 9000);
    m = M(); m.t_begin = 9000; m.t_end = 9100; m.kind = XSPROF_MPI_OTHER;
    xsf_mpi(f[0], 0, "MPI_Comm_rank", m);
    return close_all(f, 2);
}

/* n unsuccessful MPI_Iprobe calls (OTHER rows) of 100 ns every 200 ns from `from`. */
static void failed_probes(xsf *f, int n, int64_t from)
{
    for (int i = 0; i < n; i++) {
        xsprof_rec_mpi m = M();
        m.t_begin = from + 200 * i; m.t_end = m.t_begin + 100; m.kind = XSPROF_MPI_OTHER;
        xsf_mpi(f, 0, "MPI_Iprobe", m);
    }
}

/* selfpoll: see the list at the top. */
static int selfpoll(const char *dir)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    xsprof_rec_mpi m;
    xsf_region(f[0], 0, "work", 0, 0, 1000);
    failed_probes(f[0], 50, 1000);
    m = M(); m.t_begin = 11000; m.t_end = 11100; m.kind = XSPROF_MPI_ISEND; m.peer = 0; m.tag = 3; m.bytes_sent = 8;
    m.seq = 1; m.request = 8;
    xsf_mpi(f[0], 0, "MPI_Isend", m);
    m = M(); m.t_begin = 11200; m.t_end = 11300; m.kind = XSPROF_MPI_OTHER;
    xsf_mpi(f[0], 0, "MPI_Iprobe", m);
    m = M(); m.t_begin = 11400; m.t_end = 11500; m.kind = XSPROF_MPI_RECV; m.peer = 0; m.tag = 3; m.bytes_recv = 8;
    m.seq = 1;
    xsf_mpi(f[0], 0, "MPI_Recv", m);
    isend_wait(f[0], 11600, 11700, 11650, 8);
    failed_probes(f[0], 30, 12000);
    m = M(); m.t_begin = 18000; m.t_end = 18200; m.kind = XSPROF_MPI_RECV; m.peer = 1; m.tag = 1; m.bytes_recv = 8;
    m.seq = 1;
    xsf_mpi(f[0], 0, "MPI_Recv", m);
    xsf_region(f[1], 0, "slow", 0, 0, 17000);
    m = M(); m.t_begin = 17000; m.t_end = 17100; m.kind = XSPROF_MPI_SEND; m.peer = 0; m.tag = 1; m.bytes_sent = 8;
    m.seq = 1;
    xsf_mpi(f[1], 0, "MPI_Send", m);
    return close_all(f, 2);
}

/* isendlr: see the list at the top. */
static int isendlr(const char *dir)
{
    static const int32_t self[] = {1};
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    xsf_comm(f[1], 2, "MPI_COMM_SELF", UINT32_MAX, 1, self);
    xsprof_rec_mpi m;
    xsf_region(f[0], 0, "pack", 0, 0, 100);
    m = M(); m.t_begin = 100; m.t_end = 150; m.kind = XSPROF_MPI_ISEND; m.peer = 1; m.tag = 2; m.bytes_sent = 1 << 20;
    m.seq = 1; m.request = 9;
    xsf_mpi(f[0], 0, "MPI_Isend", m);
    isend_wait(f[0], 200, 2100, 2050, 9);
    xsf_region(f[1], 0, "unpack", 0, 0, 1500);
    m = M(); m.t_begin = 1500; m.t_end = 1550; m.kind = XSPROF_MPI_COLL; m.coll = XSPROF_COLL_NXN; m.comm = 2;
    m.coll_seq = 1;
    xsf_mpi(f[1], 0, "MPI_Barrier", m);
    xsf_region(f[1], 0, "post", 0, 1560, 1585);
    m = M(); m.t_begin = 1600; m.t_end = 2100; m.kind = XSPROF_MPI_RECV; m.peer = 0; m.tag = 2; m.bytes_recv = 1 << 20;
    m.seq = 1;
    xsf_mpi(f[1], 0, "MPI_Recv", m);
    return close_all(f, 2);
}

/* The halocoll run (2 ranks, 3 steps of 5.1 us): `stencil` (rank 1 3 us,
 * rank 0 1 us), an Allreduce, `pack` (1 us, 0.1 us), rank 1 Sends to rank
 * 0 (a Late Sender of 0.9 us), rank 0 Ssends to rank 1, which first runs
 * `unpack` (0.5 us) and a Barrier on MPI_COMM_SELF (a Late Receiver of
 * 0.6 us). */
static int halocoll(const char *dir)
{
    static const int32_t self[] = {1};
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    xsf_comm(f[1], 2, "MPI_COMM_SELF", UINT32_MAX, 1, self);
    xsprof_rec_mpi m;
    for (int64_t step = 1, t = 0; step <= 3; step++, t += 5100) {
        for (int r = 0; r < 2; r++) {
            xsf_region(f[r], 0, "stencil", 0, t, t + (r ? 3000 : 1000));
            m = M(); m.t_begin = t + (r ? 3050 : 1050); m.t_end = t + 3150; m.kind = XSPROF_MPI_COLL;
            m.coll = XSPROF_COLL_NXN; m.coll_seq = (uint64_t)step; m.bytes_sent = m.bytes_recv = 8;
            xsf_mpi(f[r], 0, "MPI_Allreduce", m);
            xsf_region(f[r], 0, "pack", 0, t + 3200, t + (r ? 4200 : 3300));
        }
        m = M(); m.t_begin = t + 4250; m.t_end = t + 4350; m.kind = XSPROF_MPI_SEND; m.peer = 0; m.tag = 1;
        m.bytes_sent = 64; m.seq = (uint64_t)step;
        xsf_mpi(f[1], 0, "MPI_Send", m);
        m = M(); m.t_begin = t + 3350; m.t_end = t + 4350; m.kind = XSPROF_MPI_RECV; m.peer = 1; m.tag = 1;
        m.bytes_recv = 64; m.seq = (uint64_t)step;
        xsf_mpi(f[0], 0, "MPI_Recv", m);
        m = M(); m.t_begin = t + 4400; m.t_end = t + 5100; m.kind = XSPROF_MPI_SSEND; m.peer = 1; m.tag = 2;
        m.bytes_sent = 64; m.seq = (uint64_t)step;
        xsf_mpi(f[0], 0, "MPI_Ssend", m);
        xsf_region(f[1], 0, "unpack", 0, t + 4400, t + 4900);
        m = M(); m.t_begin = t + 4900; m.t_end = t + 4950; m.kind = XSPROF_MPI_COLL; m.coll = XSPROF_COLL_NXN;
        m.comm = 2; m.coll_seq = (uint64_t)step;
        xsf_mpi(f[1], 0, "MPI_Barrier", m);
        xsf_region(f[1], 0, "post", 0, t + 4960, t + 4985);
        m = M(); m.t_begin = t + 5000; m.t_end = t + 5100; m.kind = XSPROF_MPI_RECV; m.peer = 0; m.tag = 2;
        m.bytes_recv = 64; m.seq = (uint64_t)step;
        xsf_mpi(f[1], 0, "MPI_Recv", m);
    }
    return close_all(f, 2);
}

/* The window run (2 ranks, times in ns, the same on both but for the
 * Barrier: rank 0 enters it at 5000, rank 1 at 5500):
 *   MPI_Init [0, 1000], MPI_Finalize [20000, 21000]
 *   main [1000, 20000]
 *     step [2000, 12000]: setup [2000, 3000], compute [3500, 4500],
 *                         MPI_Barrier [5000 or 5500, 6000], compute [7000, 11000]
 *     step [13000, 18000]: compute [13500, 14500], compute [15000, 17500] */
static int window(const char *dir)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    for (int r = 0; r < 2; r++) {
        xsprof_rec_mpi m = M();
        m.t_begin = 0; m.t_end = 1000; m.kind = XSPROF_MPI_OTHER;
        xsf_mpi(f[r], 0, "MPI_Init", m);
        xsf_region(f[r], 0, "main", 0, 1000, 20000);
        xsf_region(f[r], 0, "step", 1, 2000, 12000);
        xsf_region(f[r], 0, "setup", 2, 2000, 3000);
        xsf_region(f[r], 0, "compute", 2, 3500, 4500);
        m = M(); m.t_begin = r ? 5500 : 5000; m.t_end = 6000; m.kind = XSPROF_MPI_COLL; m.coll = XSPROF_COLL_BARRIER;
        m.coll_seq = 1;
        xsf_mpi(f[r], 0, "MPI_Barrier", m);
        xsf_region(f[r], 0, "compute", 2, 7000, 11000);
        xsf_region(f[r], 0, "step", 1, 13000, 18000);
        xsf_region(f[r], 0, "compute", 2, 13500, 14500);
        xsf_region(f[r], 0, "compute", 2, 15000, 17500);
        m = M(); m.t_begin = 20000; m.t_end = 21000; m.kind = XSPROF_MPI_OTHER;
        xsf_mpi(f[r], 0, "MPI_Finalize", m);
    }
    return close_all(f, 2);
}

/* The outside run (2 ranks): rank 1 runs `stencil` [0, 1000], then 4 us
 * outside every region before its Barrier at 5000; rank 0 runs `stencil`
 * [0, 3000] and waits in the Barrier from 3100. */
static int outside(const char *dir)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    for (int r = 0; r < 2; r++) {
        xsf_region(f[r], 0, "stencil", 0, 0, r ? 1000 : 3000);
        xsprof_rec_mpi m = M();
        m.t_begin = r ? 5000 : 3100; m.t_end = 5100; m.kind = XSPROF_MPI_COLL; m.coll = XSPROF_COLL_BARRIER;
        m.coll_seq = 1;
        xsf_mpi(f[r], 0, "MPI_Barrier", m);
    }
    return close_all(f, 2);
}

/* The preinit run (2 ranks): rank 1 runs `setup` [0, 5000] before its
 * MPI_Init [5000, 6000], rank 0's MPI_Init is [100, 6000]; then `work`
 * [6000, 9000] on rank 1, [6000, 6100] on rank 0, and a Barrier from the
 * end of `work` to 9100: rank 0 waits 2.9 us, all for `work`. */
static int preinit(const char *dir)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    xsf_region(f[1], 0, "setup", 0, 0, 5000);
    for (int r = 0; r < 2; r++) {
        xsprof_rec_mpi m = M();
        m.t_begin = r ? 5000 : 100; m.t_end = 6000; m.kind = XSPROF_MPI_OTHER;
        xsf_mpi(f[r], 0, "MPI_Init", m);
        xsf_region(f[r], 0, "work", 0, 6000, r ? 9000 : 6100);
        m = M(); m.t_begin = r ? 9000 : 6100; m.t_end = 9100; m.kind = XSPROF_MPI_COLL; m.coll = XSPROF_COLL_BARRIER;
        m.coll_seq = 1;
        xsf_mpi(f[r], 0, "MPI_Barrier", m);
    }
    return close_all(f, 2);
}

/* Rank 1 sends message A (tag 1) at 300, runs `slow` and sends B (tag 2)
 * at b_send; rank 0 posted both receives (requests 5 and 6) first. */
static void two_sends(xsf **f, int64_t b_send)
{
    xsprof_rec_mpi m;
    for (int k = 0; k < 2; k++) {
        m = M(); m.t_begin = 100 + 50 * k; m.t_end = m.t_begin + 20; m.kind = XSPROF_MPI_IRECV; m.peer = 1;
        m.tag = 1 + k; m.request = 5 + (uint64_t)k;
        xsf_mpi(f[0], 0, "MPI_Irecv", m);
        m = M(); m.t_begin = k ? b_send : 300; m.t_end = m.t_begin + 100; m.kind = XSPROF_MPI_SEND; m.peer = 0;
        m.tag = 1 + k; m.bytes_sent = 8; m.seq = 1;
        xsf_mpi(f[1], 0, "MPI_Send", m);
    }
    xsf_region(f[1], 0, "slow", 0, 400, b_send);
}

/* waitall: rank 0's MPI_Waitall [1000, 5000] completes A and B at 5000 (as
 * the wrappers record a Waitall's receives: at its end); B was sent at
 * 4900, a Late Sender of 3.9 us. A, sent before the call, completed at the
 * same nanosecond: not received after B, so no Wrong Order. */
static int waitall_tie(const char *dir)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    two_sends(f, 4900);
    xsprof_rec_mpi m = M();
    m.t_begin = 1000; m.t_end = 5000; m.kind = XSPROF_MPI_WAIT; m.count = 2; m.comm = UINT32_MAX;
    xsf_mpi(f[0], 0, "MPI_Waitall", m);
    recv_completion(f[0], "MPI_Waitall", 5000, 5, 1, 1, 1, 8);
    recv_completion(f[0], "MPI_Waitall", 5000, 6, 1, 2, 1, 8);
    return close_all(f, 2);
}

/* pollwo: rank 0 polls for B with 50 unsuccessful MPI_Test calls of 100
 * ns every 200 ns from 1000; B is sent at 6000 and completed by the Test at
 * 11000; A, sent at 300, only by an MPI_Wait at 12000: the polling loop's
 * Late Sender (the 25 polls before 6000, 2.5 us) is Wrong Order. */
static int pollwo(const char *dir)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    two_sends(f, 6000);
    failed_tests(f[0], 6, 50, 1000, 0);
    xsprof_rec_mpi m = M();
    m.t_begin = 11000; m.t_end = 11100; m.kind = XSPROF_MPI_WAIT; m.count = 1; m.comm = UINT32_MAX;
    xsf_mpi(f[0], 0, "MPI_Test", m);
    recv_completion(f[0], "MPI_Test", 11050, 6, 1, 2, 1, 8);
    m = M(); m.t_begin = 12000; m.t_end = 12100; m.kind = XSPROF_MPI_WAIT; m.count = 1; m.comm = UINT32_MAX;
    xsf_mpi(f[0], 0, "MPI_Wait", m);
    recv_completion(f[0], "MPI_Wait", 12050, 5, 1, 1, 1, 8);
    return close_all(f, 2);
}

static int icollpoll(const char *dir)
{
    static const int32_t world[] = {0, 1, 2};
    xsf *f[3];
    for (int r = 0; r < 3; r++) {
        if (!(f[r] = xsf_create(dir, r, 3, JOB, START, "node0")))
            return 1;
        xsf_thread(f[r], 0, "main");
        xsf_comm(f[r], 0, "MPI_COMM_WORLD", UINT32_MAX, 3, world);
        xsf_clock(f[r], XSPROF_CLOCK_INIT, 0, 0, 200);
        xsprof_rec_mpi m = M();
        m.kind = XSPROF_MPI_ICOLL; m.coll = XSPROF_COLL_NXN; m.coll_seq = 1; m.request = 5;
        m.bytes_sent = m.bytes_recv = 8; m.t_begin = 1000; m.t_end = 1100;
        xsf_mpi(f[r], 0, "MPI_Iallreduce", m);
        if (r == 1) /* polls before the collective completes */
            failed_tests(f[r], 5, 5, 1200, 0);
        /* the call that completes it: rank 1's Test at 3000, the others' Waits */
        const int64_t b[3] = {2000, 3000, 5000}, e[3] = {2500, 3100, 5100};
        m = M();
        m.kind = XSPROF_MPI_WAIT; m.count = 1; m.comm = UINT32_MAX; m.t_begin = b[r]; m.t_end = e[r];
        xsf_mpi(f[r], 0, r == 1 ? "MPI_Test" : "MPI_Wait", m);
        m = M();
        m.kind = XSPROF_MPI_COMPLETION; m.request = 5; m.coll = XSPROF_COLL_NXN; m.coll_seq = 1;
        m.t_begin = m.t_end = e[r];
        xsf_mpi(f[r], 0, r == 1 ? "MPI_Test" : "MPI_Wait", m);
        if (r == 1) /* polls for something else, before rank 2 completes the collective */
            failed_tests(f[r], 6, 3, 3300, 0);
    }
    return close_all(f, 3);
}

static int polling(const char *dir)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    xsprof_rec_mpi m;
    for (int i = 0; i < 2000; i++) { /* as the wrappers record a Test that completed nothing */
        m = M(); m.t_begin = 1000 + 40 * i; m.t_end = m.t_begin + 30; m.kind = XSPROF_MPI_OTHER; m.comm = UINT32_MAX;
        m.request = 3;
        xsf_mpi(f[0], 0, "MPI_Test", m);
    }
    m = M(); m.t_begin = 90000; m.t_end = 90100; m.kind = XSPROF_MPI_RECV; m.peer = 1; m.tag = 1; m.bytes_recv = 8;
    m.seq = 1;
    xsf_mpi(f[0], 0, "MPI_Recv", m);
    m = M(); m.t_begin = 80000; m.t_end = 80100; m.kind = XSPROF_MPI_SEND; m.peer = 0; m.tag = 1; m.bytes_sent = 8;
    m.seq = 1;
    xsf_mpi(f[1], 0, "MPI_Send", m);
    for (int r = 0; r < 2; r++)
        xsf_region(f[r], 0, "main", 0, 0, 100000);
    return close_all(f, 2);
}

/* Both finished and written as rank files: 0, or 1. */
static int close2(xsf *f[2])
{
    return (xsf_close(f[0], XSPROF_JOURNAL_FINALIZED, 1) | xsf_close(f[1], XSPROF_JOURNAL_FINALIZED, 1)) != 0;
}

/* Rank 0 is the reference. Rank 1's true clock: local = ref + 15000 + 20e-6 * ref,
 * but its only sample claims offset 0: after interpolation its events look
 * 15+ us late, so its receives of rank 0's messages seem fine and rank 0's
 * receives of its messages end before they were sent. */
static int skew(const char *dir)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
#define L1(t) ((int64_t)(t) + 15000 + (int64_t)((t) * 20 / 1000000))
    int64_t t = 10000;
    uint64_t seq01 = 0, seq10 = 0, cs = 0;
    for (int i = 0; i < 40; i++) {
        int from = i % 2, to = 1 - from;
        xsprof_rec_mpi s = M(), v = M();
        s.kind = XSPROF_MPI_SEND; s.peer = to; s.tag = 5; s.bytes_sent = 1024;
        s.seq = from == 0 ? ++seq01 : ++seq10;
        v.kind = XSPROF_MPI_RECV; v.peer = from; v.tag = 5; v.bytes_recv = 1024; v.seq = s.seq;
        int64_t sb = t + 2000, se = t + 2600, rb = t, re = t + 3000; /* true times: latency 1 us */
        s.t_begin = from == 1 ? L1(sb) : sb; s.t_end = from == 1 ? L1(se) : se;
        v.t_begin = to == 1 ? L1(rb) : rb; v.t_end = to == 1 ? L1(re) : re;
        xsf_mpi(f[from], 0, "MPI_Send", s);
        xsf_mpi(f[to], 0, "MPI_Recv", v);
        t += 5000;
        if (i % 4 == 3) {
            cs++;
            for (int r = 0; r < 2; r++) {
                xsprof_rec_mpi b = M();
                int64_t bb = t + (r ? 500 : 0), be = t + 2000;
                b.kind = XSPROF_MPI_COLL; b.coll = XSPROF_COLL_BARRIER; b.coll_seq = cs;
                b.t_begin = r ? L1(bb) : bb; b.t_end = r ? L1(be) : be;
                xsf_mpi(f[r], 0, "MPI_Barrier", b);
            }
            t += 4000;
        }
    }
    for (int r = 0; r < 2; r++) {
        xsf_region(f[r], 0, "compute", 0, r ? L1(5000) : 5000, r ? L1(t + 1000) : t + 1000);
    }
#undef L1
    return close2(f);
}

/* Rank 0's Waitall completes an Irecv (a Late Sender) and an Isend whose
 * receive rank 1 posts later still (a Late Receiver, the longer), and the
 * receive completes only after rank 0's next calls: one wait counts for the
 * Waitall, the Late Receiver, however late the match is found. */
static int latelr(const char *dir)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    xsprof_rec_mpi m;
    m = M(); m.t_begin = 100; m.t_end = 110; m.kind = XSPROF_MPI_IRECV; m.peer = 1; m.tag = 1; m.request = 10;
    xsf_mpi(f[0], 0, "MPI_Irecv", m);
    m = M(); m.t_begin = 120; m.t_end = 130; m.kind = XSPROF_MPI_ISEND; m.peer = 1; m.tag = 2; m.request = 11;
    m.bytes_sent = 64; m.seq = 1;
    xsf_mpi(f[0], 0, "MPI_Isend", m);
    m = M(); m.t_begin = 200; m.t_end = 2000; m.kind = XSPROF_MPI_WAIT; m.count = 2; m.comm = UINT32_MAX;
    xsf_mpi(f[0], 0, "MPI_Waitall", m);
    recv_completion(f[0], "MPI_Waitall", 1500, 10, 1, 1, 1, 32);
    m = M(); m.t_begin = m.t_end = 1900; m.kind = XSPROF_MPI_COMPLETION; m.request = 11;
    xsf_mpi(f[0], 0, "MPI_Waitall", m);
    for (int i = 0; i < 3; i++) { /* calls that end before the Isend's receive completes */
        m = M(); m.t_begin = 2100 + 200 * i; m.t_end = 2200 + 200 * i; m.kind = XSPROF_MPI_OTHER;
        xsf_mpi(f[0], 0, "MPI_Comm_rank", m);
    }
    xsf_region(f[0], 0, "main", 0, 50, 7000);
    m = M(); m.t_begin = 1400; m.t_end = 1450; m.kind = XSPROF_MPI_SEND; m.peer = 0; m.tag = 1; m.bytes_sent = 32; m.seq = 1;
    xsf_mpi(f[1], 0, "MPI_Send", m);
    m = M(); m.t_begin = 1700; m.t_end = 1710; m.kind = XSPROF_MPI_IRECV; m.peer = 0; m.tag = 2; m.request = 20;
    xsf_mpi(f[1], 0, "MPI_Irecv", m);
    m = M(); m.t_begin = 5000; m.t_end = 6000; m.kind = XSPROF_MPI_WAIT; m.count = 1; m.comm = UINT32_MAX;
    xsf_mpi(f[1], 0, "MPI_Wait", m);
    recv_completion(f[1], "MPI_Wait", 5500, 20, 0, 2, 1, 64);
    xsf_region(f[1], 0, "main", 0, 60, 6500);
    return close2(f);
}

/* A damaged receive: an MPI_Recv that ends before it begins, so
 * trace.pftrace's "recv" instant (at the receive's end) comes after a later
 * packet of its rank. */
static int backrecv(const char *dir)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    xsprof_rec_mpi m;
    m = M(); m.t_begin = 100; m.t_end = 150; m.kind = XSPROF_MPI_SEND; m.peer = 1; m.tag = 1; m.bytes_sent = 8; m.seq = 1;
    xsf_mpi(f[0], 0, "MPI_Send", m);
    xsf_region(f[0], 0, "main", 0, 50, 1000);
    m = M(); m.t_begin = 400; m.t_end = 300; m.kind = XSPROF_MPI_RECV; m.peer = 0; m.tag = 1; m.bytes_recv = 8; m.seq = 1;
    xsf_mpi(f[1], 0, "MPI_Recv", m);
    m = M(); m.t_begin = 500; m.t_end = 600; m.kind = XSPROF_MPI_OTHER;
    xsf_mpi(f[1], 0, "MPI_Comm_rank", m);
    xsf_region(f[1], 0, "main", 0, 60, 1000);
    return close2(f);
}

/* Receives numbered at completion out of posting order (what the
 * collector records for MPI_ANY_SOURCE / MPI_ANY_TAG receives, whose post
 * rows have seq 0). Rank 0 sends 16 then 32 bytes on tags 1, 2 and 3.
 * Rank 1, tag 1: an ANY_SOURCE Irecv posted before a fixed one (seq 1 at
 * its post), the fixed one waited first, so the wildcard took seq 2; tag
 * 2: two ANY_SOURCE Irecvs waited second first; tag 3: an ANY_TAG Irecv
 * waited after a blocking MPI_Recv (numbered at its end). MPI matched each
 * key's receives in posting order: the first posted got the 16 bytes.
 * inorder: tags 2 and 3 only, each receive completed in posting order (no
 * number to change). */
static int wildorder(const char *dir, int inorder)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    xsprof_rec_mpi m;
    for (int tag = inorder ? 2 : 1; tag <= 3; tag++) {
        int64_t b = tag * 10000;
        for (int k = 0; k < 2; k++) {
            m = M(); m.t_begin = b + 1000 + 100 * k; m.t_end = m.t_begin + 50; m.kind = XSPROF_MPI_SEND; m.peer = 1;
            m.tag = tag; m.bytes_sent = 16 << k; m.seq = (uint64_t)k + 1;
            xsf_mpi(f[0], 0, "MPI_Send", m);
        }
        uint64_t q1 = (uint64_t)tag * 2 - 1, q2 = q1 + 1;
        m = M(); m.t_begin = b + 500; m.t_end = b + 520; m.kind = XSPROF_MPI_IRECV; m.request = q1;
        m.flags = tag == 3 ? XSPROF_MPI_F_WILDCARD_TAG : XSPROF_MPI_F_WILDCARD_SRC;
        m.peer = tag == 3 ? 0 : XSPROF_MPI_NONE;
        m.tag = tag == 3 ? XSPROF_MPI_NONE : tag;
        xsf_mpi(f[1], 0, "MPI_Irecv", m);
        if (tag != 3) {
            m = M(); m.t_begin = b + 600; m.t_end = b + 620; m.kind = XSPROF_MPI_IRECV; m.request = q2; m.tag = tag;
            m.peer = tag == 1 ? 0 : XSPROF_MPI_NONE;
            m.seq = tag == 1 ? 1 : 0;
            m.flags = tag == 1 ? 0 : XSPROF_MPI_F_WILDCARD_SRC;
            xsf_mpi(f[1], 0, "MPI_Irecv", m);
        }
        /* the first posted: 16 bytes, waited at 1600-1800 (inorder 1040-1080) */
        int64_t w1 = inorder ? b + 1040 : b + 1600;
        m = M(); m.t_begin = w1; m.t_end = w1 + (inorder ? 40 : 200); m.kind = XSPROF_MPI_WAIT; m.count = 1;
        m.comm = UINT32_MAX;
        xsf_mpi(f[1], 0, "MPI_Wait", m);
        recv_completion(f[1], "MPI_Wait", w1 + (inorder ? 20 : 100), q1, 0, tag, inorder ? 1 : 2, 16);
        if (tag == 3) { /* the second posted: the blocking Recv */
            m = M(); m.t_begin = b + 1100; m.t_end = b + 1400; m.kind = XSPROF_MPI_RECV; m.peer = 0; m.tag = tag;
            m.bytes_recv = 32; m.seq = inorder ? 2 : 1;
            xsf_mpi(f[1], 0, "MPI_Recv", m);
        } else { /* waited at 1200-1500 */
            m = M(); m.t_begin = b + 1200; m.t_end = b + 1500; m.kind = XSPROF_MPI_WAIT; m.count = 1; m.comm = UINT32_MAX;
            xsf_mpi(f[1], 0, "MPI_Wait", m);
            recv_completion(f[1], "MPI_Wait", b + 1300, q2, 0, tag, inorder ? 2 : 1, 32);
        }
    }
    xsf_region(f[0], 0, "main", 0, 50, 40000);
    xsf_region(f[1], 0, "main", 0, 60, 40000);
    return close2(f);
}

/* Rank 0 sends a message rank 1 never receives (tag 8); then, `steps`
 * times, rank 1 receives tag 1 late from rank 0 (a Late Sender): no message
 * sent before that receive is received after it, so it is no Wrong Order.
 * A third message (tag 3, sent before the second receive began, received
 * after it) makes the second receive's Late Sender Wrong Order. */
static int unrecv(const char *dir, int steps)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    xsprof_rec_mpi m;
    m = M(); m.t_begin = 100; m.t_end = 150; m.kind = XSPROF_MPI_ISEND; m.peer = 1; m.tag = 8; m.request = 1;
    m.bytes_sent = 8; m.seq = 1;
    xsf_mpi(f[0], 0, "MPI_Isend", m);
    static const int64_t send_at[3] = {1000, 1500, 2500}, recv_at[3][2] = {{500, 1100}, {2000, 2600}, {3000, 3100}};
    static const int32_t send_tag[3] = {1, 3, 2}, recv_tag[3] = {1, 2, 3};
    for (int s = 0; s < steps; s++) {
        int64_t base = (int64_t)s * 4000;
        for (int k = 0; k < 3; k++) {
            m = M(); m.t_begin = base + send_at[k]; m.t_end = m.t_begin + 50; m.kind = XSPROF_MPI_SEND; m.peer = 1;
            m.tag = send_tag[k]; m.bytes_sent = 8; m.seq = (uint64_t)s + 1;
            xsf_mpi(f[0], 0, "MPI_Send", m);
            m = M(); m.t_begin = base + recv_at[k][0]; m.t_end = base + recv_at[k][1]; m.kind = XSPROF_MPI_RECV;
            m.peer = 0; m.tag = recv_tag[k]; m.bytes_recv = 8; m.seq = (uint64_t)s + 1;
            xsf_mpi(f[1], 0, "MPI_Recv", m);
        }
    }
    /* rank 1 (the second process's under mpirun -np 2) posts a receive it
     * never completes and sends 6 messages never received, rank 0 receives
     * one never sent: unmatched on both ranks, more than the 5 notes list,
     * counted and listed by every process alike */
    int64_t end = (int64_t)steps * 4000;
    m = M(); m.t_begin = end + 100; m.t_end = m.t_begin + 20; m.kind = XSPROF_MPI_IRECV;
    m.peer = 0; m.tag = 77; m.request = 9;
    xsf_mpi(f[1], 0, "MPI_Irecv", m);
    for (int k = 0; k < 6; k++) {
        m = M(); m.t_begin = end + 200 + 10 * k; m.t_end = m.t_begin + 5; m.kind = XSPROF_MPI_SEND; m.peer = 0;
        m.tag = 99; m.bytes_sent = 8; m.seq = (uint64_t)k + 1;
        xsf_mpi(f[1], 0, "MPI_Send", m);
    }
    m = M(); m.t_begin = end + 300; m.t_end = m.t_begin + 40; m.kind = XSPROF_MPI_RECV; m.peer = 1; m.tag = 98;
    m.bytes_recv = 8; m.seq = 1;
    xsf_mpi(f[0], 0, "MPI_Recv", m);
    xsf_region(f[0], 0, "main", 0, 50, (int64_t)steps * 4000 + 1000);
    xsf_region(f[1], 0, "main", 0, 60, (int64_t)steps * 4000 + 1000);
    return close2(f);
}

static int gpu(const char *dir)
{
    static const int32_t world[] = {0};
    xsf *f = xsf_create(dir, 0, 1, "", START, "gpunode");
    if (!f)
        return 1;
    xsf_thread(f, 0, "main");
    xsf_thread(f, 1, "worker");
    xsf_comm(f, 0, "MPI_COMM_WORLD", UINT32_MAX, 1, world);
    xsf_counter(f, 0, "cycles", 1500, 1e6);
    xsf_counter(f, 0, "cycles", 2500, 2.5e6);
    xsf_instant(f, 0, "checkpoint", 2200);
    xsf_mem(f, 0, XSPROF_MEM_ALLOC, -1, 1100, 0x1000, 4096);
    xsf_mem(f, 0, XSPROF_MEM_ALLOC, 0, 1200, 0x7000, 1 << 20);
    xsf_mem(f, 0, XSPROF_MEM_FREE, -1, 2900, 0x1000, 0); /* as the recorder writes a free: no size */
    xsprof_rec_gpu g;
    memset(&g, 0, sizeof g);
    g.kind = XSPROF_GPU_API; g.t_begin = 1300; g.t_end = 1400; g.correlation = 42; g.thread = 0;
    xsf_gpu(f, 0, "cudaLaunchKernel", g);
    memset(&g, 0, sizeof g);
    g.kind = XSPROF_GPU_KERNEL; g.t_begin = 1600; g.t_end = 2600; g.correlation = 42; g.device = 0; g.stream = 7;
    g.grid[0] = 128; g.grid[1] = g.grid[2] = 1; g.block[0] = 256; g.block[1] = g.block[2] = 1;
    xsf_gpu(f, 0, "saxpy", g);
    memset(&g, 0, sizeof g);
    g.kind = XSPROF_GPU_MEMCPY_DTOH; g.t_begin = 2650; g.t_end = 2800; g.device = 0; g.stream = 7; g.bytes = 1 << 20;
    xsf_gpu(f, 0, "memcpy DtoH", g);
    xsf_region(f, 1, "io", 0, 1100, 1900);
    xsf_region_arg_int(f, 0, "n", 1, 1024);
    xsf_region(f, 0, "solve", 1, 1250, 2850);
    xsf_region(f, 0, "main", 0, 1000, 3000);
    return xsf_close(f, XSPROF_JOURNAL_FINALIZED, 1) != 0;
}

/* Two GPU ranks whose kernels run while the CPU waits in MPI: rank 0's
 * Recv waits for rank 1's late Send (a kernel on device 0 spans it, one on
 * device 1 covers part of it), then both meet in an Allreduce that rank 1
 * reaches late (rank 0 waits; a kernel overlaps that too); copies both ways. */
static int gpumpi(const char *dir)
{
    static const int32_t world[] = {0, 1};
    xsf *f[2];
    for (int r = 0; r < 2; r++) {
        f[r] = xsf_create(dir, r, 2, JOB, START, "gpunode");
        if (!f[r])
            return 1;
        xsf_thread(f[r], 0, "main");
        xsf_comm(f[r], 0, "MPI_COMM_WORLD", UINT32_MAX, 2, world);
        xsf_clock(f[r], XSPROF_CLOCK_INIT, 500, 0, 100);
    }
    xsprof_rec_gpu g;
    xsprof_rec_mpi m;
    /* rank 0: Recv 2000-6000 (the send begins at 4500: waits 2500), Allreduce 7000-12000 (rank 1 enters at 10000) */
    m = M(); m.t_begin = 2000; m.t_end = 6000; m.kind = XSPROF_MPI_RECV; m.peer = 1; m.tag = 1; m.bytes_recv = 4096; m.seq = 1;
    xsf_mpi(f[0], 0, "MPI_Recv", m);
    m = M(); m.t_begin = 7000; m.t_end = 12000; m.kind = XSPROF_MPI_COLL; m.coll = XSPROF_COLL_NXN; m.coll_seq = 1;
    m.bytes_sent = m.bytes_recv = 8;
    xsf_mpi(f[0], 0, "MPI_Allreduce", m);
    const int64_t k0[][3] = {{1500, 5000, 0}, {3000, 3500, 1}, {4000, 4200, 1}, {8000, 9000, 0}, {12500, 13000, 0}};
    for (size_t i = 0; i < sizeof k0 / sizeof k0[0]; i++) {
        memset(&g, 0, sizeof g);
        g.kind = XSPROF_GPU_KERNEL; g.t_begin = k0[i][0]; g.t_end = k0[i][1]; g.device = (uint32_t)k0[i][2]; g.stream = 7;
        xsf_gpu(f[0], 0, i % 2 ? "stencil" : "saxpy", g);
    }
    memset(&g, 0, sizeof g);
    g.kind = XSPROF_GPU_MEMCPY_HTOD; g.t_begin = 1000; g.t_end = 1400; g.device = 0; g.stream = 7; g.bytes = 1 << 16;
    xsf_gpu(f[0], 0, "memcpy HtoD", g);
    memset(&g, 0, sizeof g);
    g.kind = XSPROF_GPU_MEMCPY_DTOH; g.t_begin = 13100; g.t_end = 13300; g.device = 1; g.stream = 7; g.bytes = 1 << 12;
    xsf_gpu(f[0], 0, "memcpy DtoH", g);
    /* memory: 12 leaks of one size (the 10 kept: by time), one made inside
     * the Allreduce (MPI's own), one whose free was lost (its address
     * allocated again), a free of an address never allocated, device memory */
    for (int i = 0; i < 12; i++)
        xsf_mem(f[0], 0, XSPROF_MEM_ALLOC, -1, 900 + (i % 6) * 100 + (i >= 6 ? 1 : 0), 0x10000 + 0x1000 * (uint64_t)(11 - i), 256);
    xsf_mem(f[0], 0, XSPROF_MEM_ALLOC, -1, 7500, 0x90000, 8192);
    xsf_mem(f[0], 0, XSPROF_MEM_ALLOC, -1, 1500, 0xa0000, 512);
    xsf_mem(f[0], 0, XSPROF_MEM_ALLOC, -1, 6500, 0xa0000, 1024);
    xsf_mem(f[0], 0, XSPROF_MEM_FREE, -1, 6600, 0xa0000, 1024);
    xsf_mem(f[0], 0, XSPROF_MEM_FREE, -1, 6700, 0xb0000, 64);
    xsf_mem(f[0], 0, XSPROF_MEM_ALLOC, 0, 6800, 0xc0000, 1 << 20);
    xsf_region(f[0], 0, "setup", 1, 850, 1600);
    xsf_region(f[0], 0, "main", 0, 500, 14000);
    /* rank 1: Send 4500-4700, Allreduce 10000-12000; a kernel through its compute */
    m = M(); m.t_begin = 4500; m.t_end = 4700; m.kind = XSPROF_MPI_SEND; m.peer = 0; m.tag = 1; m.bytes_sent = 4096; m.seq = 1;
    xsf_mpi(f[1], 0, "MPI_Send", m);
    m = M(); m.t_begin = 10000; m.t_end = 12000; m.kind = XSPROF_MPI_COLL; m.coll = XSPROF_COLL_NXN; m.coll_seq = 1;
    m.bytes_sent = m.bytes_recv = 8;
    xsf_mpi(f[1], 0, "MPI_Allreduce", m);
    memset(&g, 0, sizeof g);
    g.kind = XSPROF_GPU_KERNEL; g.t_begin = 5000; g.t_end = 9500; g.device = 0; g.stream = 3;
    xsf_gpu(f[1], 0, "saxpy", g);
    xsf_mem(f[1], 0, XSPROF_MEM_ALLOC, -1, 5000, 0x10000, 4096);
    xsf_mem(f[1], 0, XSPROF_MEM_ALLOC, -1, 6000, 0x20000, 2048);
    xsf_mem(f[1], 0, XSPROF_MEM_FREE, -1, 9000, 0x10000, 4096);
    xsf_region(f[1], 0, "compute", 1, 4800, 9900);
    xsf_region(f[1], 0, "main", 0, 600, 14000);
    return close2(f);
}

static int empty(const char *dir)
{
    int bad = 0;
    for (int r = 0; r < 2; r++) {
        xsf *f = world2(dir, r, -1);
        if (!f)
            return 1;
        bad |= xsf_close(f, XSPROF_JOURNAL_FINALIZED, 1) != 0;
    }
    return bad;
}

/* Names in no valid encoding, as programs pass them (Latin-1 bytes, a cut
 * multi-byte character, a surrogate, control characters) beside valid
 * UTF-8: every product must still parse (JSON, protobuf, XML). */
static int badnames(const char *dir)
{
    static const char *names[] = {"caf\xe9 latin1", "cut \xe2\x82", "surrogate \xed\xa0\x80",
                                  "ctl \x01\x1f <&\">", "ok \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"};
    int bad = 0;
    for (int r = 0; r < 2; r++) {
        xsf *f = world2(dir, r, 0);
        if (!f)
            return 1;
        xsf_thread(f, 1, "w\xff\xfeorker");
        int64_t t = 1000;
        for (int i = 0; i < 5; i++, t += 1000)
            xsf_region(f, i % 2, names[i], 0, t, t + 800 + 100 * r);
        bad |= xsf_close(f, XSPROF_JOURNAL_FINALIZED, 1) != 0;
    }
    return bad;
}

/* Ring exchange: each step a region, a send to the right neighbour, a
 * receive from the left one; about 3 events per step. */
/* The ring of `big`; with skew, each rank's clock is off by an error its
 * sample does not show (odd ranks 2.5 us early, drifting apart by r % 3 ns
 * a step), every 4th step exchanges through Isend/Irecv/Waitall and every
 * 50th step ends in an Allreduce: receives end before their sends began
 * and exits precede entries, for the logical clock. */
static int big_ring(const char *dir, int nranks, long events, int skew)
{
    long steps = events / 3;
    for (int r = 0; r < nranks; r++) {
        xsf *f = xsf_create(dir, r, nranks, JOB, START, "node0");
        if (!f)
            return 1;
        int32_t *world = malloc((size_t)nranks * sizeof *world);
        if (!world)
            return 1;
        for (int i = 0; i < nranks; i++)
            world[i] = i;
        xsf_thread(f, 0, "main");
        xsf_comm(f, 0, "MPI_COMM_WORLD", UINT32_MAX, (uint32_t)nranks, world);
        free(world);
        xsf_clock(f, XSPROF_CLOCK_INIT, 0, r * 100, 200);
        int right = (r + 1) % nranks, left = (r + nranks - 1) % nranks;
        for (long s = 0; s < steps; s++) {
            int64_t t = s * 10000 - r * 100;
            if (skew)
                t += -(r % 2) * 2500 + s * (r % 3);
            xsprof_rec_mpi m = M();
            if (skew && s % 4 == 1) {
                /* Isend + Irecv + Wait(2), the requests reused every time as MPI reuses handles */
                m.kind = XSPROF_MPI_ISEND; m.peer = right; m.tag = 1; m.bytes_sent = 4096; m.seq = (uint64_t)s + 1;
                m.request = 100; m.t_begin = t + 4000; m.t_end = t + 4100;
                xsf_mpi(f, 0, "MPI_Isend", m);
                m = M();
                m.kind = XSPROF_MPI_IRECV; m.peer = left; m.tag = 1; m.request = 101; m.t_begin = t + 4150;
                m.t_end = t + 4200;
                xsf_mpi(f, 0, "MPI_Irecv", m);
                m = M();
                m.kind = XSPROF_MPI_WAIT; m.count = 2; m.comm = UINT32_MAX; m.t_begin = t + 4600; m.t_end = t + 6000;
                xsf_mpi(f, 0, "MPI_Waitall", m);
                m = M();
                m.kind = XSPROF_MPI_COMPLETION; m.request = 100; m.t_begin = m.t_end = t + 4700;
                xsf_mpi(f, 0, "MPI_Waitall", m);
                recv_completion(f, "MPI_Waitall", t + 5900, 101, left, 1, (uint64_t)s + 1, 4096);
            } else {
                m.kind = XSPROF_MPI_SEND; m.peer = right; m.tag = 1; m.bytes_sent = 4096; m.seq = (uint64_t)s + 1;
                m.t_begin = t + 4000; m.t_end = t + 4500;
                xsf_mpi(f, 0, "MPI_Send", m);
                m = M();
                m.kind = XSPROF_MPI_RECV; m.peer = left; m.tag = 1; m.bytes_recv = 4096; m.seq = (uint64_t)s + 1;
                m.t_begin = t + 4600; m.t_end = t + 6000;
                xsf_mpi(f, 0, "MPI_Recv", m);
            }
            if (skew && s % 50 == 49) {
                m = M();
                m.kind = XSPROF_MPI_COLL; m.coll = XSPROF_COLL_NXN; m.coll_seq = (uint64_t)s / 50 + 1;
                m.bytes_sent = m.bytes_recv = 8;
                m.t_begin = t + 6500 + (r % 4) * 300; m.t_end = t + 8000;
                xsf_mpi(f, 0, "MPI_Allreduce", m);
            }
            xsf_region(f, 0, "step", 0, t, t + 9000);
        }
        if (xsf_close(f, XSPROF_JOURNAL_FINALIZED, 1))
            return 1;
    }
    return 0;
}

static int big(const char *dir, int nranks, long events) { return big_ring(dir, nranks, events, 0); }

/* Nested regions as a profiler stores them: in completion order, so a
 * region's row follows every row of the regions nested in it. */
static int deep(const char *dir)
{
    enum { DEPTH = 4500, LEAVES = 2000 };
    int bad = 0;
    for (int r = 0; r < 2; r++) {
        xsf *f = world2(dir, r, r * 300);
        if (!f)
            return 1;
        xsf_thread(f, 1, "worker");
        int64_t in0 = 1000 + (int64_t)DEPTH * 10; /* the innermost nest region's begin */
        int64_t t = in0 + 100;
        for (int i = 0; i < LEAVES; i++) {
            if (i % 100 == 50) {
                xsprof_rec_mpi m = M();
                int peer = 1 - r;
                m.peer = peer; m.tag = 4; m.seq = (uint64_t)(i / 100 + 1);
                if (r == 0) {
                    m.kind = XSPROF_MPI_SEND; m.bytes_sent = 512; m.t_begin = t + 10; m.t_end = t + 60;
                    xsf_mpi(f, 0, "MPI_Send", m);
                } else {
                    m.kind = XSPROF_MPI_RECV; m.bytes_recv = 512; m.t_begin = t; m.t_end = t + 400;
                    xsf_mpi(f, 0, "MPI_Recv", m);
                }
            }
            xsf_region(f, 0, i % 3 ? "leaf" : "kernel", DEPTH, t, t + 500);
            if (i % 7 == 0)
                xsf_instant(f, 0, "tick", t + 250);
            if (i % 5 == 0)
                xsf_counter(f, 1, "queue", t + 100, (double)(i % 17));
            if (i % 4 == 0)
                xsf_region(f, 1, "poll", 1, t + 100, t + 300);
            t += 600;
        }
        for (int d = DEPTH - 1; d >= 0; d--) {
            if (d == DEPTH / 2)
                xsf_region_arg_int(f, 0, "level", (uint16_t)d, d);
            xsf_region(f, 0, d ? "nest" : "main", (uint16_t)d, 1000 + (int64_t)d * 10, t + 1000 - (int64_t)d * 10);
        }
        xsf_region(f, 1, "worker", 0, 900, t + 2000);
        bad |= xsf_close(f, XSPROF_JOURNAL_FINALIZED, 1) != 0;
    }
    return bad;
}

/* A receive that ends before its send began (the logical clock is needed)
 * and a Barrier that rank 0 enters and leaves at one instant (a coarse
 * timer): its exit waits for its own entry in the same group, a cycle the
 * streamed clock leaves to the in-memory merge. */
static int zerocoll(const char *dir)
{
    xsf *f[2];
    if (open2(dir, f))
        return 1;
    xsprof_rec_mpi m = M();
    m.kind = XSPROF_MPI_SEND; m.peer = 1; m.tag = 3; m.bytes_sent = 64; m.seq = 1; m.t_begin = 1000; m.t_end = 1100;
    xsf_mpi(f[0], 0, "MPI_Send", m);
    m = M();
    m.kind = XSPROF_MPI_RECV; m.peer = 0; m.tag = 3; m.bytes_recv = 64; m.seq = 1; m.t_begin = 500; m.t_end = 900;
    xsf_mpi(f[1], 0, "MPI_Recv", m);
    for (int r = 0; r < 2; r++) {
        m = M();
        m.kind = XSPROF_MPI_COLL; m.coll = XSPROF_COLL_BARRIER; m.coll_seq = 1;
        m.t_begin = r ? 3100 : 3000; m.t_end = r ? 3500 : 3000;
        xsf_mpi(f[r], 0, "MPI_Barrier", m);
        xsf_region(f[r], 0, "main", 0, 100, 4000);
    }
    return close2(f);
}

/* late: rank 0 posts the Iallreduce after rank 1 completed it (a clock
 * violation only the logical clock resolves). */
static int icoll(const char *dir, int late)
{
    int bad = 0;
    for (int r = 0; r < 2; r++) {
        xsf *f = world2(dir, r, 0);
        if (!f)
            return 1;
        int64_t o = r * 150;
        xsprof_rec_mpi m = M();
        m.kind = XSPROF_MPI_ICOLL; m.coll = XSPROF_COLL_NXN; m.coll_seq = 1; m.request = 5;
        m.bytes_sent = m.bytes_recv = 8; m.t_begin = 1000 + o; m.t_end = 1100 + o;
        if (late && r == 0) {
            m.t_begin = 3560;
            m.t_end = 3570;
        }
        xsf_mpi(f, 0, "MPI_Iallreduce", m);
        m = M();
        m.peer = 1 - r; m.tag = 2; m.seq = 1;
        if (r == 0) {
            m.kind = XSPROF_MPI_SEND; m.bytes_sent = 64; m.t_begin = 1500; m.t_end = 1600;
            xsf_mpi(f, 0, "MPI_Send", m);
        } else {
            m.kind = XSPROF_MPI_RECV; m.bytes_recv = 64; m.t_begin = 1400; m.t_end = 1900;
            xsf_mpi(f, 0, "MPI_Recv", m);
        }
        m = M();
        m.kind = XSPROF_MPI_WAIT; m.count = 1; m.comm = UINT32_MAX; m.t_begin = 3000 + o; m.t_end = 3500 + o;
        if (late && r == 0) {
            m.t_begin = 3580;
            m.t_end = 3700;
        }
        xsf_mpi(f, 0, "MPI_Wait", m);
        m = M();
        m.kind = XSPROF_MPI_COMPLETION; m.request = 5; m.coll = XSPROF_COLL_NXN; m.coll_seq = 1;
        m.t_begin = m.t_end = late && r == 0 ? 3650 : 3400 + o;
        xsf_mpi(f, 0, "MPI_Wait", m);
        xsf_region(f, 0, "compute", 1, 1200 + o, 2900 + o);
        xsf_region(f, 0, "main", 0, 900, 4000 + o);
        bad |= xsf_close(f, XSPROF_JOURNAL_FINALIZED, 1) != 0;
    }
    return bad;
}

static int mpithreads(const char *dir, int n)
{
    int bad = 0;
    for (int r = 0; r < 2; r++) {
        xsf *f = world2(dir, r, 0);
        if (!f)
            return 1;
        xsf_thread(f, 1, "comm");
        int64_t t = 2000;
        for (int i = 0; i < n; i++, t += 100) {
            xsprof_rec_mpi m = M();
            m.peer = 1 - r; m.tag = 4; m.seq = (uint64_t)i + 1;
            if (r == 0) {
                m.kind = XSPROF_MPI_SEND; m.bytes_sent = 64; m.t_begin = t; m.t_end = t + 50;
                xsf_mpi(f, 0, "MPI_Send", m);
            } else {
                m.kind = XSPROF_MPI_RECV; m.bytes_recv = 64; m.t_begin = t - 10; m.t_end = t + 60;
                xsf_mpi(f, 0, "MPI_Recv", m);
            }
        }
        /* stored when it returns, after every call it spans */
        xsprof_rec_mpi m = M();
        m.peer = 1 - r; m.tag = 9; m.seq = 1;
        if (r == 0) {
            m.kind = XSPROF_MPI_SEND; m.bytes_sent = 4096; m.t_begin = 1500; m.t_end = t + 500;
            xsf_mpi(f, 1, "MPI_Ssend", m);
        } else {
            m.kind = XSPROF_MPI_RECV; m.bytes_recv = 4096; m.t_begin = 1400; m.t_end = t + 600;
            xsf_mpi(f, 1, "MPI_Recv", m);
        }
        xsf_region(f, 0, "main", 0, 1000, t + 1000);
        bad |= xsf_close(f, XSPROF_JOURNAL_FINALIZED, 1) != 0;
    }
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: merge_make_runs golden|journal|foreign|skew|latelr|backrecv|unrecv|gpu|gpumpi|empty|deep|icoll|icoll_late|zerocoll|mpithreads|mpithreads_far|badnames|window|big|bigskew DIR [NRANKS EVENTS]\n");
        return 2;
    }
    const char *kind = argv[1], *dir = argv[2];
    mkdir(dir, 0777);
    if (!strcmp(kind, "golden")) return golden(dir, -1, NULL);
    if (!strcmp(kind, "journal")) return golden(dir, 1, NULL);
    if (!strcmp(kind, "foreign")) return golden(dir, -1, "job-other");
    if (!strcmp(kind, "skew")) return skew(dir);
    if (!strcmp(kind, "latelr")) return latelr(dir);
    if (!strcmp(kind, "backrecv")) return backrecv(dir);
    if (!strcmp(kind, "wildorder")) return wildorder(dir, 0);
    if (!strcmp(kind, "wildinorder")) return wildorder(dir, 1);
    if (!strcmp(kind, "unrecv")) return unrecv(dir, argc >= 4 ? atoi(argv[3]) : 1);
    if (!strcmp(kind, "gpu")) return gpu(dir);
    if (!strcmp(kind, "gpumpi")) return gpumpi(dir);
    if (!strcmp(kind, "empty")) return empty(dir);
    if (!strcmp(kind, "deep")) return deep(dir);
    if (!strcmp(kind, "icoll")) return icoll(dir, 0);
    if (!strcmp(kind, "icoll_late")) return icoll(dir, 1);
    if (!strcmp(kind, "zerocoll")) return zerocoll(dir);
    if (!strcmp(kind, "chain")) return chain(dir, 1);
    if (!strcmp(kind, "chain_bare")) return chain(dir, 0);
    if (!strcmp(kind, "halo")) return halo(dir);
    if (!strcmp(kind, "halocoll")) return halocoll(dir);
    if (!strcmp(kind, "outside")) return outside(dir);
    if (!strcmp(kind, "preinit")) return preinit(dir);
    if (!strcmp(kind, "waitall_tie")) return waitall_tie(dir);
    if (!strcmp(kind, "pollwo")) return pollwo(dir);
    if (!strcmp(kind, "overlap")) return overlap(dir);
    if (!strcmp(kind, "pollwait")) return pollwait(dir);
    if (!strcmp(kind, "pollsend")) return pollsend(dir);
    if (!strcmp(kind, "isendlr")) return isendlr(dir);
    if (!strcmp(kind, "selfpoll")) return selfpoll(dir);
    if (!strcmp(kind, "farpoll")) return farpoll(dir, argc >= 4 ? atoi(argv[3]) : 40);
    if (!strcmp(kind, "farcause")) return farcause(dir);
    if (!strcmp(kind, "polllr")) return polllr(dir);
    if (!strcmp(kind, "polling")) return polling(dir);
    if (!strcmp(kind, "icollpoll")) return icollpoll(dir);
    if (!strcmp(kind, "mpithreads")) return mpithreads(dir, 300);
    if (!strcmp(kind, "mpithreads_far")) return mpithreads(dir, 5000);
    if (!strcmp(kind, "window")) return window(dir);
    if (!strcmp(kind, "badnames")) return badnames(dir);
    if (!strcmp(kind, "big") && argc >= 5) return big(dir, atoi(argv[3]), atol(argv[4]));
    if (!strcmp(kind, "bigskew") && argc >= 5) return big_ring(dir, atoi(argv[3]), atol(argv[4]), 1);
    fprintf(stderr, "merge_make_runs: unknown kind %s\n", kind);
    return 2;
}

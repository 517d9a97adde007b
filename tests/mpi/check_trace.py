#!/usr/bin/python3
"""tests/mpi/check_trace.py — checks the MPI records of a run directory
(rank-NNNNN.h5, read with h5py) against what MPI semantics require, and
against the expectations of one test program.

Generic checks (every mode):
  * every rank file exists, finished, with INIT and FINAL clock samples;
  * every sent message (blocking send, Sendrecv, completion of a nonblocking
    send) matches exactly one received message by (comm, sender, receiver,
    tag, seq) with the same byte count, and the other way round;
  * after applying the stored clock offsets no message is received before
    it was sent (messages between two distinct ranks);
  * every nonblocking post has exactly one completion (persistent requests:
    one per start), request ids are unique per rank;
  * all members of a communicator agree on its id and members, and record
    the same sequence of collectives (coll_seq 1..n, same op, same root);
  * peers and roots are world ranks of the communicator's members.
Mode-specific expectations: see the MODES table.

usage: check_trace.py RUN_DIR NRANKS MODE [--skew NS,NS,..] [--drift PPM,..]"""
import argparse
import collections
import glob
import os
import sys

import h5py

K_SEND, K_SSEND, K_RECV, K_ISEND, K_IRECV, K_SENDRECV, K_WAIT, K_COLL, K_ICOLL, K_COMPLETION = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
F_RECV, F_PERSISTENT, F_FREED, F_CANCELLED, F_TRUNCATED = 0x10, 0x8, 0x20, 0x4, 0x40
NONE = -1
COMM_NONE = 0xFFFFFFFF

errors = []


def err(msg):
    errors.append(msg)
    if len(errors) <= 40:
        print("FAIL:", msg)


def s(strings, i):
    v = strings[i]
    return v.decode() if isinstance(v, bytes) else str(v)


class Rank:
    def __init__(self, path):
        with h5py.File(path, "r") as f:
            self.attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
            strings = f["/definitions/strings"][()]
            self.mpi = []
            for r in f["/events/mpi"][()]:
                d = {k: r[k].item() for k in r.dtype.names}
                d["op"] = s(strings, d["op"])
                self.mpi.append(d)
            self.clock = [{k: r[k].item() for k in r.dtype.names} for r in f["/clock/samples"][()]]
            members = f["/definitions/comm_members"][()]
            self.comms = {}
            for c in f["/definitions/comms"][()]:
                m = [int(x) for x in members[c["members"]:c["members"] + c["size"]]]
                self.comms[int(c["id"])] = (s(strings, c["name"]), m, int(c["parent"]))
            self.meta = {s(strings, m["key"]): s(strings, m["value"]) for m in f["/definitions/metadata"][()]}
            self.topo = [{k: (s(strings, r[k]) if k in ("cpuset", "cores", "gpus", "host") else r[k].item())
                          for k in r.dtype.names} for r in f["/definitions/topology"][()]]
        self.rank = int(self.attrs["rank"])

    def offset_at(self, t):
        """reference = local + offset, interpolated between the samples."""
        cs = sorted(self.clock, key=lambda c: c["t_local"])
        if len(cs) == 1 or cs[-1]["t_local"] == cs[0]["t_local"]:
            return cs[0]["offset_ns"]
        a, b = cs[0], cs[-1]
        return a["offset_ns"] + (b["offset_ns"] - a["offset_ns"]) * (t - a["t_local"]) / (b["t_local"] - a["t_local"])

    def bound(self):
        return max(c["rtt_ns"] for c in self.clock) / 2


def load(run_dir, nranks):
    ranks = {}
    for p in sorted(glob.glob(os.path.join(run_dir, "rank-*.h5"))):
        r = Rank(p)
        ranks[r.rank] = r
    if sorted(ranks) != list(range(nranks)):
        err("rank files %s, expected ranks 0..%d" % (sorted(ranks), nranks - 1))
        return None
    for r in ranks.values():
        if r.attrs.get("end_state") != "finalized" or r.attrs.get("truncated"):
            err("rank %d: end_state %s" % (r.rank, r.attrs.get("end_state")))
        phases = sorted(c["phase"] for c in r.clock)
        if phases[:1] != [0] or phases[-1:] != [2] or set(phases) - {0, 1, 2} or phases.count(0) != 1:
            err("rank %d: clock phases %s, expected INIT, periodic ones, FINAL" % (r.rank, phases))
        if r.rank == 0 and any(c["offset_ns"] for c in r.clock):
            err("rank 0 has a non-zero offset to itself")
        if not r.meta.get("mpi_version", "").startswith("Open MPI"):
            err("rank %d: mpi_version metadata missing" % r.rank)
        if len(r.topo) != 1:
            err("rank %d: %d topology records" % (r.rank, len(r.topo)))
        # without hwloc (ncores_host 0) only the host is known
        elif not r.topo[0]["host"] or (r.topo[0]["ncores_host"] > 0 and not (r.topo[0]["cpuset"] and r.topo[0]["cores"])):
            err("rank %d: incomplete topology %s" % (r.rank, r.topo[0]))
    return ranks


def check_comms(ranks):
    defs = collections.defaultdict(dict)
    for r in ranks.values():
        for cid, (name, members, parent) in r.comms.items():
            defs[cid][r.rank] = (name, tuple(members), parent)
            if r.rank not in members:
                err("rank %d records comm %u without being a member" % (r.rank, cid))
    for cid, by_rank in defs.items():
        vals = set(by_rank.values())
        if len(vals) != 1 and not by_rank[min(by_rank)][0] == "MPI_COMM_SELF":
            err("comm %u defined differently by ranks: %s" % (cid, by_rank))
            continue
        name, members, _ = next(iter(vals))
        if name != "MPI_COMM_SELF" and sorted(by_rank) != sorted(members):
            err("comm %u (%s): members %s but defined by %s" % (cid, name, members, sorted(by_rank)))
    if 0 not in defs or defs[0][0][1] != tuple(range(len(ranks))):
        err("MPI_COMM_WORLD (0) missing or wrong")
    return {cid: next(iter(v.values())) for cid, v in defs.items()}


def floating_keys(ranks):
    """(comm, src, dst, tag) of receives the collector numbered at completion
    (their post row, an Irecv or a start, has seq 0: MPI_ANY_SOURCE,
    MPI_ANY_TAG): the merge deals such a key's numbers out again in posting
    order, so the raw numbers need not pair a receive with its own send."""
    keys = set()
    for r in ranks.values():
        post = {}
        for m in sorted(r.mpi, key=lambda m: (m["t_begin"], m["kind"] == K_COMPLETION)):
            if m["kind"] == K_IRECV and m["request"]:
                post[m["request"]] = m
            elif (m["kind"] == K_COMPLETION and m["flags"] & F_RECV and m["peer"] != NONE and
                  m["request"] in post and post[m["request"]]["seq"] == 0):
                keys.add((m["comm"] if m["comm"] != COMM_NONE else post[m["request"]]["comm"], m["peer"], r.rank,
                          m["tag"]))
    return keys


def check_messages(ranks, comms):
    sends, recvs = collections.defaultdict(list), collections.defaultdict(list)
    floating = floating_keys(ranks)
    for r in ranks.values():
        for i, m in enumerate(r.mpi):
            k = m["kind"]
            is_send = k in (K_SEND, K_SSEND, K_SENDRECV) or (k == K_COMPLETION and not m["flags"] & F_RECV and
                                                               m["seq"] and m["coll"] == 0)
            is_recv = k == K_RECV or (k == K_COMPLETION and m["flags"] & F_RECV)
            if m["flags"] & F_CANCELLED:
                continue
            if is_send and m["peer"] != NONE:
                key = (m["comm"], r.rank, m["peer"], m["tag"], m["seq"])
                # a nonblocking send is keyed at completion; the blocking ones at the call
                sends[key].append((r.rank, m))
            if is_recv and m["peer"] != NONE:
                key = (m["comm"], m["peer"], r.rank, m["tag"], m["seq"])
                recvs[key].append((r.rank, m))
    # (a key with floating receives may keep a number a cancelled receive
    # left void, the merge closes such gaps: only its sizes are compared)
    for key, v in sends.items():
        if len(v) != 1:
            err("message %s sent %d times" % (key, len(v)))
        if key not in recvs and key[:4] not in floating:
            err("message %s sent (%s) but never received" % (key, v[0][1]["op"]))
        elif key[:4] not in floating and v[0][1]["bytes_sent"] != recvs[key][0][1]["bytes_recv"]:
            err("message %s: %d bytes sent, %d received" % (key, v[0][1]["bytes_sent"],
                                                          recvs[key][0][1]["bytes_recv"]))
    for key, v in recvs.items():
        if len(v) != 1:
            err("message %s received %d times" % (key, len(v)))
        if key not in sends and key[:4] not in floating:
            err("message %s received (%s) but never sent" % (key, v[0][1]["op"]))
    # a key with floating receives: the same messages (sizes) both ways
    for k4 in floating:
        snt = sorted(m["bytes_sent"] for key, v in sends.items() if key[:4] == k4 for _, m in v)
        rcv = sorted(m["bytes_recv"] for key, v in recvs.items() if key[:4] == k4 for _, m in v)
        if snt != rcv:
            err("messages %s: sizes sent %s, received %s" % (k4, snt, rcv))
    # causality after alignment: the receive completes after the send began
    worst = 0
    posts = {}
    for r in ranks.values():
        call_begin, prev = None, None
        for m in r.mpi:
            # MPI_Startall's rows share its call's time among its requests
            # (pmpi_wrappers/README): a send's row begins at its share, but
            # MPI may start it as soon as the call begins
            if m["op"] == "MPI_Startall":
                if not (prev is not None and prev["op"] == "MPI_Startall" and prev["thread"] == m["thread"] and
                        prev["t_end"] == m["t_begin"]):
                    call_begin = m["t_begin"]
            prev = m
            if m["kind"] in (K_ISEND,) and m["request"]:
                # a persistent request posts once per start, each with its own seq
                begin = call_begin if m["op"] == "MPI_Startall" else m["t_begin"]
                posts[(r.rank, m["request"], m["seq"])] = dict(m, t_begin=begin)
    nchecked = raw_violations = 0
    for key, v in sends.items():
        if key not in recvs or key[1] == key[2] or key[:4] in floating:
            continue
        sr, sm = v[0]
        rr, rm = recvs[key][0]
        t_send = sm["t_begin"]
        if sm["kind"] == K_COMPLETION:
            post = posts.get((sr, sm["request"], sm["seq"]))
            if post is None:
                continue
            t_send = post["t_begin"]
        a = ranks[sr]
        b = ranks[rr]
        ts = t_send + a.offset_at(t_send)
        tr = rm["t_end"] + b.offset_at(rm["t_end"])
        nchecked += 1
        if rm["t_end"] < t_send:
            raw_violations += 1
        # Offsets are known within their error bound (rtt/2 of each side's
        # samples): only an inversion beyond it is an alignment error. A
        # slow build (sanitizers, coverage) has longer round trips; the
        # merged trace, checked with --merge, must still have none at all.
        if ts - tr > a.bound() + b.bound():
            worst = max(worst, ts - tr)
            err("message %s received %d ns before it was sent (after alignment, error bound %d ns)" %
                (key, ts - tr, a.bound() + b.bound()))
    print("messages received before they were sent: %d on the raw clocks, %d after alignment" %
          (raw_violations, len([e for e in errors if "before it was sent" in e])))
    return len(sends), nchecked


def check_requests(ranks):
    for r in ranks.values():
        posts, comps = {}, collections.Counter()
        for m in r.mpi:
            if m["kind"] in (K_ISEND, K_IRECV, K_ICOLL) and m["request"] and not m["flags"] & F_PERSISTENT:
                if m["request"] in posts:
                    err("rank %d: request id %d posted twice" % (r.rank, m["request"]))
                posts[m["request"]] = m
            if m["kind"] == K_COMPLETION and m["request"]:
                comps[m["request"]] += 1
        for rid, m in posts.items():
            if comps[rid] != 1:
                err("rank %d: %s request %d completed %d times" % (r.rank, m["op"], rid, comps[rid]))
        waits = [m for m in r.mpi if m["kind"] == K_WAIT]
        ncomp = sum(1 for m in r.mpi if m["kind"] == K_COMPLETION and not m["op"].startswith("MPI_Sendrecv")
                    and not m["flags"] & F_FREED)
        if sum(w["count"] for w in waits) < ncomp:
            err("rank %d: %d completions but wait calls report %d" % (r.rank, ncomp, sum(w["count"] for w in waits)))


def check_collectives(ranks, comms):
    seqs = collections.defaultdict(dict)
    for r in ranks.values():
        by_comm = collections.defaultdict(list)
        for m in r.mpi:
            if m["kind"] in (K_COLL, K_ICOLL):
                by_comm[m["comm"]].append((m["coll_seq"], m["op"], m["root"]))
        for cid, lst in by_comm.items():
            sq = [x[0] for x in lst]
            if sq != sorted(set(sq)) or (sq and sq[0] < 1):
                err("rank %d comm %u: coll_seq %s not increasing from 1" % (r.rank, cid, sq))
            seqs[cid][r.rank] = lst
            members = comms.get(cid, (None, None))[1]
            for _, op, root in lst:
                if root != NONE and members is not None and root not in members:
                    err("rank %d: %s root %d is not a member of comm %u" % (r.rank, op, root, cid))
    for cid, by_rank in seqs.items():
        # a member that names no root took no part (an intercommunicator's
        # MPI_PROC_NULL): the others agree on it
        if len(set(tuple(x[:2] for x in v) for v in by_rank.values())) != 1 or any(
                len({lst[i][2] for lst in by_rank.values()} - {NONE}) > 1 for i in range(len(next(iter(by_rank.values()))))):
            err("comm %u: members disagree on the collective sequence: %s" % (cid, by_rank))
        members = comms.get(cid, (None, ()))[1]
        if sorted(by_rank) != sorted(members):
            err("comm %u: collectives recorded by %s, members %s" % (cid, sorted(by_rank), members))
    return sum(len(v) for v in seqs.values())


def ops(r):
    return collections.Counter(m["op"] for m in r.mpi if m["kind"] != K_COMPLETION)


def find(r, op, **kw):
    return [m for m in r.mpi if m["op"] == op and m["kind"] != K_COMPLETION and all(m[k] == v for k, v in kw.items())]


def expect(cond, msg):
    if not cond:
        err(msg)


# ---- program-specific expectations ---------------------------------------

def mode_calls(ranks, comms, n, fortran=False):
    """tests/mpi/mpi_calls.c (C) and mpi_calls.f90 (Fortran, which adds an
    Irecv/Issend pair completed by two Waitany and a Get_count) share this."""
    for rank, r in ranks.items():
        right, left = (rank + 1) % n, (rank - 1) % n
        c = ops(r)
        # MPI_Startall: one row per request it starts (2 requests, 2 rounds)
        want = {"MPI_Send": 2 if rank % 2 == 0 and rank < n - (n % 2) else 1, "MPI_Isend": 4, "MPI_Irecv": 4,
                "MPI_Waitall": 3, "MPI_Wait": 2, "MPI_Send_init": 1, "MPI_Recv_init": 1, "MPI_Startall": 4,
                "MPI_Request_free": 2, "MPI_Sendrecv": 1, "MPI_Barrier": 2, "MPI_Allreduce": 3, "MPI_Bcast": 1,
                "MPI_Gather": 1, "MPI_Comm_split": 1, "MPI_Comm_dup": 1, "MPI_Allgatherv": 1, "MPI_Comm_free": 2,
                "MPI_Init": 1, "MPI_Finalize": 1, "MPI_Pcontrol": 2}
        if fortran:
            want.update({"MPI_Irecv": 5, "MPI_Issend": 1, "MPI_Waitany": 2, "MPI_Get_count": 1})
            wa = [m for m in r.mpi if m["op"] == "MPI_Waitany" and m["kind"] == K_COMPLETION]
            expect(len(wa) == 2 and {m["tag"] for m in wa} == {56}, "rank %d: Waitany completions %s" % (rank, wa))
        for op, k in want.items():
            if op == "MPI_Send":
                continue
            expect(c[op] == k, "rank %d: %d calls of %s, expected %d" % (rank, c[op], op, k))
        snd = find(r, "MPI_Send", tag=11)
        expect(len(snd) == 1 and snd[0]["peer"] == right and snd[0]["bytes_sent"] == 80,
               "rank %d: ring send %s" % (rank, snd))
        rcv = find(r, "MPI_Recv", tag=11)
        expect(len(rcv) == 1 and rcv[0]["peer"] == left and rcv[0]["bytes_recv"] == 80,
               "rank %d: ring recv %s" % (rank, rcv))
        if rank % 2:
            expect(rcv and rcv[0]["flags"] & 3 == 3, "rank %d: wildcard flags not set on the ring receive" % rank)
        isd = find(r, "MPI_Isend", tag=22)
        expect(len(isd) == 3 and all(m["peer"] == right and m["bytes_sent"] == 16 for m in isd) and
               [m["seq"] for m in isd] == [1, 2, 3], "rank %d: Isend tag 22 %s" % (rank, isd))
        wc = [m for m in r.mpi if m["kind"] == K_COMPLETION and m["tag"] == 33 and m["flags"] & F_RECV]
        expect(len(wc) == 1 and wc[0]["peer"] == left and wc[0]["bytes_recv"] == 56,
               "rank %d: ANY_SOURCE Irecv completion %s" % (rank, wc))
        pc = [m for m in r.mpi if m["kind"] == K_COMPLETION and m["tag"] == 44]
        expect(len(pc) == 4 and all(m["flags"] & F_PERSISTENT for m in pc) and
               sorted(m["seq"] for m in pc) == [1, 1, 2, 2], "rank %d: persistent completions %s" % (rank, pc))
        ps = [(m["kind"], m["peer"], m["seq"]) for m in find(r, "MPI_Startall") if m["flags"] & F_PERSISTENT]
        expect(sorted(ps) == [(K_ISEND, right, 1), (K_ISEND, right, 2), (K_IRECV, left, 1), (K_IRECV, left, 2)],
               "rank %d: Startall posts (kind, peer, seq) %s" % (rank, ps))
        sr = [m for m in r.mpi if m["op"] == "MPI_Sendrecv"]
        expect(len(sr) == 2 and sr[0]["peer"] == right and sr[1]["kind"] == K_COMPLETION and sr[1]["peer"] == left
               and sr[1]["bytes_recv"] == 8, "rank %d: Sendrecv %s" % (rank, sr))
        bc = find(r, "MPI_Bcast")
        expect(bc and bc[0]["root"] == 1 and (bc[0]["bytes_sent"] if rank == 1 else bc[0]["bytes_recv"]) == 4,
               "rank %d: Bcast %s" % (rank, bc))
        ar = find(r, "MPI_Allreduce", comm=0)
        expect(len(ar) == 2 and ar[1]["bytes_sent"] == 16 and ar[1]["bytes_recv"] == 16,
               "rank %d: in-place Allreduce %s" % (rank, ar))
        ga = find(r, "MPI_Gather")
        expect(ga and ga[0]["bytes_recv"] == (8 * n if rank == 0 else 0) and ga[0]["bytes_sent"] == 8,
               "rank %d: Gather %s" % (rank, ga))
        # split by parity, key size-rank: members in decreasing world rank
        half = [cid for cid, (name, m, p) in comms.items() if name == "MPI_Comm_split" and rank in m]
        expect(len(half) == 1, "rank %d: split comm %s" % (rank, half))
        if half:
            members = comms[half[0]][1]
            expect(list(members) == sorted([x for x in range(n) if x % 2 == rank % 2], reverse=True),
                   "rank %d: split members %s" % (rank, members))
            hr = list(members).index(rank)
            h66 = find(r, "MPI_Send", tag=66) + find(r, "MPI_Recv", tag=66)
            if len(members) > 1 and hr < 2:
                expect(len(h66) == 1 and h66[0]["comm"] == half[0] and h66[0]["peer"] == members[1 - hr],
                       "rank %d: message in split comm %s" % (rank, h66))
        dup = [cid for cid, (name, m, p) in comms.items() if name == "MPI_Comm_dup"]
        expect(len(dup) == 1 and dup[0] != 0 and comms[dup[0]][1] == tuple(range(n)),
               "dup comm %s" % dup)
        bar = find(r, "MPI_Barrier", comm=0)
        expect([m["coll_seq"] for m in bar] == [1], "rank %d: WORLD barriers %s (paused one must be absent)" %
               (rank, [m["coll_seq"] for m in bar]))
        agv = find(r, "MPI_Allgatherv")
        expect(agv and dup and agv[0]["comm"] == dup[0] and agv[0]["bytes_sent"] == 4 * (rank + 1) and
               agv[0]["bytes_recv"] == 4 * n * (n + 1) // 2, "rank %d: Allgatherv %s" % (rank, agv))


def mode_threads(ranks, comms, n):
    """tests/mpi/mpi_threads.c: 4 threads x ITER exchanges per rank."""
    iters = 200
    for rank, r in ranks.items():
        c = ops(r)
        for op in ("MPI_Isend", "MPI_Irecv"):
            expect(c[op] == 4 * iters, "rank %d: %d %s, expected %d" % (rank, c[op], op, 4 * iters))
        expect(c["MPI_Waitall"] == 4 * iters, "rank %d: %d Waitall" % (rank, c["MPI_Waitall"]))
        expect(c["MPI_Allreduce"] == 4, "rank %d: %d Allreduce" % (rank, c["MPI_Allreduce"]))
        comp = sum(1 for m in r.mpi if m["kind"] == K_COMPLETION)
        expect(comp == 8 * iters, "rank %d: %d completions, expected %d" % (rank, comp, 8 * iters))
        threads = {m["thread"] for m in r.mpi if m["op"] == "MPI_Isend"}
        expect(len(threads) == 4, "rank %d: Isend recorded on threads %s" % (rank, threads))
        expect(r.meta.get("mpi_thread_level") == "multiple", "rank %d: thread level %s" % (rank, r.meta))


def mode_py(ranks, comms, n):
    """tests/mpi/mpi4py_prog.py: buffer Send/Recv (tag 7), a pickled isend
    received with Mprobe/Mrecv (tag 8), Startall of a persistent pair (tag 9),
    collectives, a split."""
    for rank, r in ranks.items():
        right, left = (rank + 1) % n, (rank - 1) % n
        c = ops(r)
        expect(find(r, "MPI_Send", tag=7, peer=right, bytes_sent=128), "rank %d: Send tag 7 to right" % rank)
        expect(find(r, "MPI_Recv", tag=7, peer=left, bytes_recv=128), "rank %d: Recv tag 7 from left" % rank)
        mr = find(r, "MPI_Mrecv", tag=8)
        expect(len(mr) == 1 and mr[0]["peer"] == left and mr[0]["comm"] == 0 and mr[0]["bytes_recv"] > 0,
               "rank %d: pickled receive (Mrecv) %s" % (rank, mr))
        expect(c["MPI_Barrier"] == 1 and c["MPI_Comm_split"] == 1, "rank %d: mpi4py calls %s" % (rank, dict(c)))
        ps = sorted((m["kind"], m["peer"], m["seq"], m["bytes_sent"]) for m in find(r, "MPI_Startall", tag=9))
        expect(ps == sorted([(K_IRECV, left, i, 0) for i in (1, 2, 3)] + [(K_ISEND, right, i, 128) for i in (1, 2, 3)]),
               "rank %d: Startall posts (kind, peer, seq, bytes) %s" % (rank, ps))
        expect(r.meta.get("command", "").find("mpi4py_prog.py") >= 0, "rank %d: command %s" % (rank, r.meta))


def mode_clock(ranks, comms, n, skew, drift, nodes=1):
    """The stored offsets recover the injected skew and drift. Core injects
    local = raw + skew + drift * (raw - t_start) (t_start: when that process
    started), so reference - local = -(skew_r - skew_0) - drift terms.
     * skew: every sample within its error bound rtt/2 of -(skew_r - skew_0),
       plus, with drift, what drift can have added since the earliest start;
     * drift: between the INIT and FINAL samples the offset moves by
       -(drift_r - drift_0) * elapsed, within the two error bounds. With
       several nodes (blocks of n / nodes ranks) a rank that is not its
       node's leader adds its offset to the leader's, measured earlier: the
       leader's own drift over that delay (milliseconds when the ranks are
       oversubscribed) comes on top of the round trips."""
    d = [x * 1e-6 for x in drift]
    t0 = min(ranks[r].attrs["start_clock_ns"] - skew[r] for r in range(n))
    worst = 0
    for rank, r in ranks.items():
        for cs in r.clock:
            expected = -(skew[rank] - skew[0])
            since = cs["t_local"] - skew[rank] - t0 + 1e9
            bound = cs["rtt_ns"] / 2 + (abs(d[rank]) + abs(d[0])) * since
            dev = abs(cs["offset_ns"] - expected)
            worst = max(worst, dev)
            print("rank %d phase %d: offset %d ns, skew %d ns, residual %.0f ns, bound %.0f ns (rtt %d)" %
                  (rank, cs["phase"], cs["offset_ns"], expected, dev, bound, cs["rtt_ns"]))
            expect(dev <= bound, "rank %d: offset %d off by %.0f ns (bound %.0f)" % (rank, cs["offset_ns"], dev, bound))
        if any(d):
            a, b = sorted(r.clock, key=lambda c: c["t_local"])[::len(r.clock) - 1]
            dt = b["t_local"] - a["t_local"]
            moved = b["offset_ns"] - a["offset_ns"]
            want = -(d[rank] - d[0]) * dt
            bound = (a["rtt_ns"] + b["rtt_ns"]) / 2 + 1000
            lead = rank - rank % max(1, n // max(1, nodes))
            if lead != rank and lead in ranks:
                la, lb = sorted(ranks[lead].clock, key=lambda c: c["t_local"])[::len(ranks[lead].clock) - 1]
                late = sum(abs((x["t_local"] - skew[rank]) - (y["t_local"] - skew[lead])) for x, y in ((a, la), (b, lb)))
                bound += abs(d[lead] - d[0]) * late
            print("rank %d: offset moved %d ns over %.3f s, drift predicts %.0f ns (bound %.0f)" %
                  (rank, moved, dt / 1e9, want, bound))
            expect(abs(moved - want) <= bound, "rank %d: drift not recovered (%d vs %.0f ns)" % (rank, moved, want))
    print("max residual offset error %.0f ns" % worst)


def mode_nocoll(ranks, comms, n):
    """XSPROF_MPI=-coll,-comm on mpi_calls: no collective and no communicator
    call recorded, point-to-point intact, and communicators still known (the
    message in the split communicator carries its agreed id)."""
    for rank, r in ranks.items():
        c = ops(r)
        expect(not any(m["kind"] in (K_COLL, K_ICOLL) for m in r.mpi), "rank %d: collectives recorded" % rank)
        expect(not any(op.startswith("MPI_Comm_") for op in c), "rank %d: comm calls recorded %s" % (rank, dict(c)))
        expect(c["MPI_Isend"] == 4 and c["MPI_Irecv"] == 4, "rank %d: p2p missing %s" % (rank, dict(c)))
        half = [cid for cid, (name, m, p) in comms.items() if name == "MPI_Comm_split" and rank in m]
        h66 = find(r, "MPI_Send", tag=66) + find(r, "MPI_Recv", tag=66)
        for m in h66:
            expect(half and m["comm"] == half[0], "rank %d: split message comm %s, split ids %s" % (rank, m, half))


def mode_more(ranks, comms, n):
    """tests/mpi/mpi_more.c."""
    by_name = collections.defaultdict(list)
    for cid, (name, members, parent) in comms.items():
        by_name[name].append((cid, members))
    evens = tuple(range(0, n, 2))
    want = {"MPI_Comm_idup": [tuple(range(n))], "MPI_Comm_split_type": [tuple(range(n))],
            "MPI_Comm_create": [evens], "MPI_Comm_create_group": [evens],
            "MPI_Comm_split": [tuple(range(n // 2)), tuple(range(n // 2, n))],
            "MPI_Intercomm_create": [tuple(range(n))], "MPI_Intercomm_merge": [tuple(range(n))],
            "MPI_Cart_create": [tuple(range(n))], "MPI_Graph_create": [tuple(range(n))],
            "MPI_Dist_graph_create_adjacent": [tuple(range(n))]}
    for name, lists in want.items():
        got = sorted(m for _, m in by_name[name])
        expect(got == sorted(lists), "%s: communicators %s, expected %s" % (name, got, sorted(lists)))
    expect(len(by_name["MPI_Cart_sub"]) >= 1, "MPI_Cart_sub communicator missing")
    ids = [cid for cid in comms]
    expect(len(ids) == len(set(ids)), "communicator ids not unique")
    inter = by_name["MPI_Intercomm_create"][0][0] if by_name["MPI_Intercomm_create"] else None
    idup = by_name["MPI_Comm_idup"][0][0] if by_name["MPI_Comm_idup"] else None
    for rank, r in ranks.items():
        right, left = (rank + 1) % n, (rank - 1) % n
        if rank < n // 2:
            m = find(r, "MPI_Send", tag=77)
            expect(m and m[0]["comm"] == inter and m[0]["peer"] == rank + n // 2,
                   "rank %d: send over the intercommunicator %s" % (rank, m))
        else:
            m = find(r, "MPI_Recv", tag=77)
            expect(m and m[0]["comm"] == inter and m[0]["peer"] == rank - n // 2,
                   "rank %d: receive over the intercommunicator %s" % (rank, m))
        ic = [(m["op"], m["coll_seq"], m["comm"]) for m in r.mpi if m["kind"] == K_ICOLL]
        expect(ic == [("MPI_Iallreduce", 1, idup), ("MPI_Ibarrier", 2, idup), ("MPI_Ireduce", 3, idup)],
               "rank %d: nonblocking collectives %s" % (rank, ic))
        anytag = [m for m in r.mpi if m["kind"] == K_COMPLETION and m["flags"] & F_RECV and m["tag"] == 101]
        expect(len(anytag) == 1 and anytag[0]["peer"] == left, "rank %d: ANY_TAG completion %s" % (rank, anytag))
        pr = find(r, "MPI_Probe")
        expect(pr and pr[0]["peer"] == left and pr[0]["tag"] == 103, "rank %d: Probe %s" % (rank, pr))
        mr = find(r, "MPI_Mrecv")
        expect(mr and mr[0]["peer"] == left and mr[0]["tag"] == 104 and mr[0]["comm"] == 0 and
               mr[0]["bytes_recv"] == 4, "rank %d: Mrecv %s" % (rank, mr))
        im = [m for m in r.mpi if m["kind"] == K_COMPLETION and m["flags"] & F_RECV and m["tag"] == 105]
        expect(len(im) == 1 and im[0]["peer"] == left, "rank %d: Imrecv completion %s" % (rank, im))
        cn = [m for m in r.mpi if m["kind"] == K_COMPLETION and m["flags"] & F_CANCELLED]
        expect(len(cn) == 1 and cn[0]["tag"] == 999, "rank %d: cancelled receive %s" % (rank, cn))
        fr = [m for m in r.mpi if m["kind"] == K_COMPLETION and m["flags"] & F_FREED]
        expect(len(fr) == 1 and fr[0]["tag"] == 107 and fr[0]["peer"] == right,
               "rank %d: freed send %s" % (rank, fr))
        def one(op, **kw):
            x = find(r, op)
            ok = len(x) == 1 and all(x[0][k] == v for k, v in kw.items())
            expect(ok, "rank %d: %s %s, expected %s" % (rank, op, x and {k: x[0][k] for k in kw}, kw))
        one("MPI_Put", peer=right, bytes_sent=4, comm=0, kind=11)
        one("MPI_Get", peer=left, bytes_recv=4, comm=0, kind=11)
        one("MPI_Accumulate", peer=right, bytes_sent=4)
        one("MPI_File_write_at", bytes_sent=16, kind=12)
        one("MPI_File_read_at", bytes_recv=16, kind=12)
        one("MPI_Alltoallw", bytes_sent=4 * n, bytes_recv=4 * n)
        one("MPI_Reduce_scatter", bytes_sent=4 * n, bytes_recv=4)
        one("MPI_Allgather", bytes_sent=4, bytes_recv=4 * n)
        one("MPI_Scatterv", bytes_sent=4 * n if rank == 0 else 0, bytes_recv=4, root=0)
        one("MPI_Neighbor_allgather", bytes_sent=4, bytes_recv=4)
        one("MPI_Neighbor_alltoall", bytes_sent=8, bytes_recv=8)
        one("MPI_Sendrecv_replace", peer=right, tag=106, bytes_sent=8)
        expect(len(find(r, "MPI_Win_fence")) == 3, "rank %d: Win_fence records" % rank)


def mode_edge(ranks, comms, n):
    """tests/mpi/mpi_p2p_edge.c: Startall, cancelled receives, MPI_PROC_NULL."""
    p2p = (K_SEND, K_SSEND, K_RECV, K_ISEND, K_IRECV, K_SENDRECV, K_COMPLETION)
    for rank, r in ranks.items():
        right, left = (rank + 1) % n, (rank - 1) % n
        up, dn = (rank + 1 if rank + 1 < n else NONE), (rank - 1 if rank > 0 else NONE)
        # Startall: one post per request and start, numbered like MPI_Start's
        sa = [m for m in find(r, "MPI_Startall") if m["tag"] in (1, 2)]
        got = sorted((m["kind"], m["peer"], m["tag"], m["seq"], m["bytes_sent"]) for m in sa)
        want = sorted((k, p, t, i, b) for i in range(1, 6) for k, p, t, b in
                      ((K_IRECV, left, 1, 0), (K_IRECV, right, 2, 0), (K_ISEND, right, 1, 128), (K_ISEND, left, 2, 128)))
        expect(got == want, "rank %d: Startall posts %s, expected %s" % (rank, got, want))
        expect(all(m["request"] and m["flags"] & F_PERSISTENT for m in sa), "rank %d: Startall requests %s" % (rank, sa))
        # cancelled receives take no number; the late cancel is a receive
        rc = [m for m in r.mpi if m["kind"] == K_COMPLETION and m["flags"] & F_RECV]
        cn = sorted((m["tag"], m["seq"], m["bytes_recv"]) for m in rc if m["flags"] & F_CANCELLED)
        expect(cn == [(5, 0, 0), (6, 0, 0), (7, 0, 0)], "rank %d: cancelled receives (tag, seq, bytes) %s" % (rank, cn))
        for tag, seqs, nbytes in ((5, [1, 2, 3], 4), (6, [1], 4), (7, [1], 4), (3, [1], 32)):
            got = sorted(m["seq"] for m in rc if m["tag"] == tag and not m["flags"] & F_CANCELLED and
                         m["peer"] == left and m["bytes_recv"] == nbytes)
            expect(got == seqs, "rank %d: tag %d receives numbered %s, expected %s" % (rank, tag, got, seqs))
        late = find(r, "MPI_Recv", tag=3)
        expect(len(late) == 1 and late[0]["seq"] == 2, "rank %d: Recv after the late cancel %s" % (rank, late))
        # MPI_PROC_NULL: recorded, moves no byte, takes no number, posts link to completions
        for m in r.mpi:
            if m["kind"] in p2p and m["coll"] == 0 and m["peer"] == NONE and not m["flags"] & F_CANCELLED:
                expect(m["bytes_sent"] == 0 and m["bytes_recv"] == 0 and m["seq"] == 0,
                       "rank %d: %s to/from MPI_PROC_NULL %s" % (rank, m["op"], m))
            if m["kind"] in (K_ISEND, K_IRECV):
                expect(m["request"] != 0, "rank %d: %s post without a request id %s" % (rank, m["op"], m))
        ops_p2p = ("MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Sendrecv", "MPI_Send_init", "MPI_Recv_init",
                   "MPI_Startall")
        pn = [(m["op"], m["tag"]) for m in r.mpi if m["kind"] != K_COMPLETION and m["peer"] == NONE and
              m["op"] in ops_p2p]
        # a blocking receive's tag comes from its status, which MPI_PROC_NULL leaves empty
        want = [("MPI_Send", 11), ("MPI_Recv", NONE), ("MPI_Send_init", 12), ("MPI_Recv_init", 12),
                ("MPI_Startall", 12), ("MPI_Startall", 12)]
        if dn == NONE:
            want += [("MPI_Irecv", 8), ("MPI_Isend", 9)] * 3
        if up == NONE:
            want += [("MPI_Irecv", 9), ("MPI_Isend", 8)] * 3 + [("MPI_Sendrecv", 10)]
        expect(sorted(pn) == sorted(want), "rank %d: MPI_PROC_NULL calls %s, expected %s" % (rank, sorted(pn), sorted(want)))
        pc = [m for m in r.mpi if m["kind"] == K_COMPLETION and m["peer"] == NONE and m["tag"] in (8, 9, 12)]
        expect(len(pc) == (6 if dn == NONE else 0) + (6 if up == NONE else 0) + 2,
               "rank %d: %d completions of MPI_PROC_NULL requests" % (rank, len(pc)))


def mode_colledge(ranks, comms, n):
    """tests/mpi/mpi_coll_edge.c: (bytes sent, bytes received, root) of each
    collective on each rank, known by construction."""
    A, B = (3,), (2, 1, 0)  # the intercommunicator's groups, B in local-rank order
    def per(f):
        return {r: f(r) for r in range(4)}
    ends = lambda r, end, mid: end if r in (0, 3) else mid
    want = {
        ("MPI_Bcast", 1): per(lambda r: (12, 0, 3) if r in A else (0, 12, 3)),
        ("MPI_Scatter", 2): per(lambda r: (24, 0, 3) if r in A else (0, 8, 3)),
        ("MPI_Gather", 3): per(lambda r: (16, 0, 1) if r in A else (0, 16, 1) if r == 1 else (0, 0, NONE)),
        ("MPI_Reduce", 4): per(lambda r: (20, 0, 1) if r in A else (0, 20, 1) if r == 1 else (0, 0, NONE)),
        ("MPI_Bcast", 5): per(lambda r: (0, 4, 1) if r in A else (4, 0, 1) if r == 1 else (0, 0, NONE)),
        ("MPI_Reduce_scatter_block", 6): per(lambda r: (12, 12, NONE) if r in A else (12, 4, NONE)),
        ("MPI_Reduce_scatter", 7): per(lambda r: (12, 12, NONE) if r in A else (12, 4, NONE)),
        ("MPI_Neighbor_alltoall", 1): per(lambda r: ends(r, (8, 8, NONE), (16, 16, NONE))),
        ("MPI_Neighbor_allgather", 2): per(lambda r: ends(r, (12, 12, NONE), (24, 24, NONE))),
        ("MPI_Neighbor_alltoallv", 3): per(lambda r: {0: (8, 4, NONE), 3: (4, 8, NONE)}.get(r, (12, 12, NONE))),
        ("MPI_Ineighbor_alltoall", 4): per(lambda r: ends(r, (4, 4, NONE), (8, 8, NONE))),
        ("MPI_Neighbor_allgather", 5): per(lambda r: ends(r, (4, 4, NONE), (8, 8, NONE))),
        ("MPI_Neighbor_alltoall", 1, "grid"): per(lambda r: (12, 12, NONE)),
        ("MPI_Exscan", 2): per(lambda r: (4, 0 if r == 0 else 4, NONE)),
    }
    carts = [cid for cid, (name, m, p) in comms.items() if name == "MPI_Cart_create"]
    for rank, r in ranks.items():
        colls = [m for m in r.mpi if m["kind"] in (K_COLL, K_ICOLL)]
        used = [m["comm"] for m in colls if m["comm"] in carts]
        line = used[0] if used else None  # the grid is used after the line
        got = {}
        for m in colls:
            key = (m["op"], m["coll_seq"]) + (("grid",) if m["comm"] in carts and m["comm"] != line else ())
            got[key] = (m["bytes_sent"], m["bytes_recv"], m["root"])
        for key, by_rank in want.items():
            expect(got.get(key) == by_rank[rank], "rank %d: %s (sent, received, root) %s, expected %s" %
                   (rank, " ".join(map(str, key)), got.get(key), by_rank[rank]))


def merged_colledge(out):
    """The merged trace of mpi_coll_edge: the collectives' roots are the ones
    their members name, and the members that took no part (MPI_PROC_NULL)
    synchronise with nobody: the merge leaves the Reduce's root leaving
    50 ms before they came, and them leaving the late Bcast 50 ms before
    its root came. A neighbourhood collective synchronises neighbours
    only: ranks 2 and 3 of the line leave the one rank 0 comes to 50 ms
    late before it comes."""
    with h5py.File(os.path.join(out, "merged.h5"), "r") as f:
        st = f["strings"][()]
        name = lambda i: st[i].decode() if isinstance(st[i], bytes) else str(st[i])
        mpi = f["mpi"][()]
        cm = f["collective_members"][()]
        colls = f["collectives"][()]
    inter = [c for c in colls if name(c["op"]) == "MPI_Reduce"]
    expect(len(inter) == 1, "one merged MPI_Reduce (%d)" % len(inter))
    for c in colls:
        rows = cm[c["members"]:c["members"] + c["n"]]
        named = {int(mpi[x["row"]]["root"]) for x in rows} - {NONE}
        expect(named <= {int(c["root"])}, "merged %s (comm %d, seq %d): root %d, its members name %s" %
               (name(c["op"]), c["comm"], c["coll_seq"], c["root"], named))
        t = {int(x["rank"]): (int(x["t_begin"]), int(x["t_end"])) for x in rows}
        if name(c["op"]) == "MPI_Neighbor_allgather" and c["coll_seq"] == 5:
            gap = t[0][0] - max(t[2][1], t[3][1])
            expect(gap > 25000000, "merged late MPI_Neighbor_allgather: ranks 2 and 3 left %.3f ms before rank 0 "
                   "came, expected about 50 (it is no neighbour of theirs)" % (gap / 1e6))
        if c["comm"] != inter[0]["comm"] or name(c["op"]) not in ("MPI_Reduce", "MPI_Bcast") or c["coll_seq"] < 4:
            continue
        if name(c["op"]) == "MPI_Reduce":  # the root (world 1) left before ranks 0 and 2 came
            gap = min(t[0][0], t[2][0]) - t[1][1]
            expect(gap > 25000000, "merged MPI_Reduce: the root left %.3f ms before the members without a part came, "
                   "expected about 50 (they are no part of it)" % (gap / 1e6))
        else:  # ranks 0 and 2 left before the root (world 1) came
            gap = t[1][0] - max(t[0][1], t[2][1])
            expect(gap > 25000000, "merged late MPI_Bcast: the members without a part left %.3f ms before the root "
                   "came, expected about 50 (they wait for nobody)" % (gap / 1e6))


def mode_trunc(ranks, comms, n):
    """tests/mpi/mpi_p2p_trunc.c: per rank and tag 1..6 the first message
    from the left (32 bytes into 16) is a truncated receive, numbered 1."""
    for rank, r in ranks.items():
        left = (rank - 1) % n
        tr = sorted((m["tag"], m["peer"], m["seq"]) for m in r.mpi if m["flags"] & F_TRUNCATED and
                    (m["kind"] == K_RECV or (m["kind"] == K_COMPLETION and m["flags"] & F_RECV)))
        expect(tr == [(t, left, 1) for t in range(1, 7)], "rank %d: truncated receives (tag, peer, seq) %s" % (rank, tr))


def mode_big(ranks, comms, n):
    """tests/mpi/mpi_p2p_edge.c big: two messages of 257 x 8 MiB (> 2 GiB)."""
    big = 257 << 23
    s, r = ranks[0], ranks[1]
    expect([m["bytes_sent"] for m in find(s, "MPI_Send") + find(s, "MPI_Isend")] == [big, big],
           "big sends %s" % (find(s, "MPI_Send") + find(s, "MPI_Isend")))
    sc = [m["bytes_sent"] for m in s.mpi if m["kind"] == K_COMPLETION and m["peer"] == 1]
    expect(sc == [big], "big Isend completion %s" % sc)
    expect([m["bytes_recv"] for m in find(r, "MPI_Recv")] == [big], "big Recv %s" % find(r, "MPI_Recv"))
    rc = [m["bytes_recv"] for m in r.mpi if m["kind"] == K_COMPLETION and m["flags"] & F_RECV]
    expect(rc == [big], "big Irecv completion %s" % rc)


def mode_fpass(ranks, comms, n, *_):
    """tests/mpi/mpi_fortran_passthrough.f90: the calls passed through to
    Open MPI's Fortran binding are recorded by name, once each, with a
    duration; the translated ones around them as usual."""
    for rank, r in ranks.items():
        c = ops(r)
        want = {"MPI_Comm_set_name": 1, "MPI_Comm_get_name": 1, "MPI_Get_processor_name": 1, "MPI_Info_set": 1,
                "MPI_Info_get": 1, "MPI_Op_create": 1, "MPI_Alltoallw": 1, "MPI_Type_create_struct": 1,
                "MPI_Type_set_name": 1, "MPI_Type_get_name": 1, "MPI_Allreduce": 1, "MPI_Barrier": 1,
                "MPI_Info_create": 1, "MPI_Info_free": 1, "MPI_Op_free": 1, "MPI_Type_commit": 1, "MPI_Type_free": 1}
        for op, k in want.items():
            expect(c[op] == k, "rank %d: %d calls of %s, expected %d" % (rank, c[op], op, k))
        for m in r.mpi:
            expect(m["t_end"] >= m["t_begin"], "rank %d: %s ends before it begins" % (rank, m["op"]))


def mode_setup(ranks, comms, n, delay_ms):
    """XSPROF_TEST_JOURNAL_DELAY_MS=delay_ms slows the journal's creation:
    it happens inside the MPI_Init wrapper, so every rank's MPI_Init row
    lasts at least that long (before, the journal opened at MPI_Init's own
    record, after its end: the report counted the setup as the program's
    work)."""
    for rank, r in ranks.items():
        init = [m for m in r.mpi if m["op"] in ("MPI_Init", "MPI_Init_thread")]
        expect(len(init) == 1, "rank %d: %d MPI_Init rows" % (rank, len(init)))
        for m in init:
            took = (m["t_end"] - m["t_begin"]) / 1e6
            print("rank %d: %s %.1f ms (journal setup delayed %d ms)" % (rank, m["op"], took, delay_ms))
            expect(took >= delay_ms, "rank %d: %s lasted %.1f ms, less than the journal's delayed setup (%d ms)"
                   % (rank, m["op"], took, delay_ms))


MODES = {"edge": mode_edge, "big": mode_big, "fpass": mode_fpass, "calls": mode_calls, "calls_f": lambda *a: mode_calls(*a, fortran=True), "more": mode_more, "colledge": mode_colledge, "trunc": mode_trunc, "nocoll": mode_nocoll, "threads": mode_threads, "py": mode_py, "generic": lambda *a: None}

MERGED = {"colledge": merged_colledge}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("nranks", type=int)
    ap.add_argument("mode", choices=list(MODES) + ["clock", "setup"])
    ap.add_argument("--skew", default="")
    ap.add_argument("--drift", default="")
    ap.add_argument("--periodic", type=int, default=0, help="clock: at least this many periodic samples per rank")
    ap.add_argument("--nodes", type=int, default=0, help="clock: the alignment saw this many nodes (rank 0's metadata)")
    ap.add_argument("--journal-delay-ms", type=int, default=0, help="setup: XSPROF_TEST_JOURNAL_DELAY_MS")
    ap.add_argument("--merged", metavar="OUT", help="check the mode's expectations of xsmerge's output OUT instead")
    a = ap.parse_args()
    if a.merged:
        MERGED[a.mode](a.merged)
        print("%d problems in the merged trace" % len(errors) if errors else "merged trace OK")
        return 1 if errors else 0
    ranks = load(a.run_dir, a.nranks)
    if ranks is None:
        return 1
    comms = check_comms(ranks)
    nmsg, ncaus = check_messages(ranks, comms)
    check_requests(ranks)
    ncoll = check_collectives(ranks, comms)
    if a.mode == "clock":
        def vec(x):
            v = [float(t) for t in x.split(",")] if x else []
            return (v + [0.0] * a.nranks)[:a.nranks]
        mode_clock(ranks, comms, a.nranks, vec(a.skew), vec(a.drift), a.nodes or 1)
        if a.nodes:
            seen = ranks[0].meta.get("clock_sync_nodes")
            expect(seen == str(a.nodes), "clock alignment saw %s nodes, expected %d" % (seen, a.nodes))
        counts = {r.rank: sum(1 for c in r.clock if c["phase"] == 1) for r in ranks.values()}
        expect(len(set(counts.values())) == 1 and min(counts.values()) >= a.periodic,
               "periodic clock samples per rank %s, expected the same number >= %d" % (counts, a.periodic))
    elif a.mode == "setup":
        mode_setup(ranks, comms, a.nranks, a.journal_delay_ms)
        mode_calls(ranks, comms, a.nranks)
    else:
        MODES[a.mode](ranks, comms, a.nranks)
    print("checked %d ranks, %d MPI records, %d messages (%d causality-checked), %d collective calls" %
          (len(ranks), sum(len(r.mpi) for r in ranks.values()), nmsg, ncaus, ncoll))
    if errors:
        print("%d problems" % len(errors))
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())

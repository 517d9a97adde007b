#!/usr/bin/python3
"""tests/otf2/scalasca_ref.py — an independent reader of xsmerge's
trace.otf2 (`xsmerge RUN -o OUT --outputs otf2,...`) that computes
Scalasca 2.6's MPI wait-state patterns from the OTF2 events alone, per kind
and per rank (seconds and instances). It shares no code and no rule with
merge/: the definitions are Scalasca's trace analyser (scout), read from
its sources (scalasca 2.6 src/scout/generator/MPI.pattern,
src/scout/MpiCommunicationHandler.cpp, src/scout/Predicates.h) and
rewritten here:

Point to point (messages paired FIFO per (sender, receiver, communicator,
tag) in the order of the send records on the sender and of the receive
records (MpiRecv / MpiIrecv: the completion) on the receiver, as scout's
replay re-sends them):
  Late Sender    for a receive completed in any MPI call but MPI_Test*:
                 min(Enter of the send's call, Leave of the receiving call)
                 - Enter of the receiving call, when > 0. In
                 MPI_Waitall/Waitany/Waitsome the longest of the call's
                 receives counts, once (MPI.pattern MPI_LATESENDER).
  Late Sender / Wrong Order   each rank keeps its last 100 Late Senders
                 (older ones drop out); every later receive whose send record
                 is earlier than a kept one's send record turns that one into
                 Wrong Order (MPI_LATESENDER_WO, BUFFERSIZE 100). In Scalasca
                 Wrong Order is a sub-metric of Late Sender: MPI_LATESENDER's
                 severity holds every instance and MPI_LATESENDER_WO the wrong
                 order ones again. Here, as in xsprof's report, the two are
                 disjoint: "Late Sender" is Scalasca's Late Sender minus its
                 Wrong Order part.
  Late Receiver  for a send completed by MPI_Send, MPI_Ssend or MPI_Wait
                 (Isend): Enter of the receive's request call (the Irecv, or
                 the Recv itself) - Enter of the send's completing call, when
                 that call left after the receive was posted; in
                 MPI_Waitall/Waitany/Waitsome the longest of the call's sends,
                 once, and none when that call also had a Late Sender
                 (MPI_LATERECEIVER, is_mpi_block_send / is_mpi_wait_single).
                 No send of MPI_Sendrecv, Bsend, Rsend or Test* counts.
Collectives (instance = the k-th MpiCollectiveEnd of each member on a
communicator; B = MpiCollectiveBegin, X = MpiCollectiveEnd; communicators
of one member and MPI_Alltoallv/w left out, as scout does):
  Wait at Barrier     min(max B, X) - B
  Barrier Completion  X - max(min X, min(max B, X))
  Late Broadcast      Bcast/Scatter/Scatterv with root bytes sent: a member
                      receiving bytes that began before the root:
                      min(B_root, X) - B
  Early Reduce        Reduce/Gather/Gatherv with root bytes received, at the
                      root: min(L, X_root) - B_root, L = latest B of members
                      sending bytes, when B_root < L
  Wait at NxN, NxN Completion   Allreduce/Allgather(v)/Alltoall/
                      Reduce_scatter(_block), members moving bytes: when
                      min X > max B (full overlap) every member with
                      L = max B, E = min X; otherwise L = latest B of the
                      senders and only the receivers that began before it
                      and that sender synchronise, E = their min X. Wait:
                      min(L, X) - B; Completion: X - max(E, min(L, X))
  Early Scan          Scan/Exscan: L = latest B among sending members of
                      communicator rank <= own: min(L, X) - B when B < L
Instances: one per wait > 0 (a multi-completion call's once).

Two switches bring the reader to xsprof's deliberate differences
(merge/analyze/eager.c, merge/README "Wait states"):
  --eager       (a) a send whose message went eagerly (its bytes at least 64
                below the sender's eager limit for the path: the shared-memory
                transport's within a host, the smallest other one between
                hosts, `mpit:*` metadata of the rank files, which trace.otf2
                does not carry: --run RUNDIR) is no Late Receiver, unless
                synchronous (MPI_Ssend)
  --sendrecv-lr (b) MPI_Sendrecv's send half is a Late Receiver (as a
                blocking send; with --eager only when rendezvous-sized), and
                a call with both a Late Sender and a Late Receiver (Sendrecv,
                Waitall/any/some) keeps both: the Late Sender whole, the Late
                Receiver only for the time it lasted beyond it (both begin
                at the call's Enter), so the call's kinds never add up to
                more than the call (Scalasca drops such a Waitall's Late
                Receiver and analyses no Sendrecv send)

Usage: scalasca_ref.py TRACE.otf2 [--run RUNDIR] [--eager] [--sendrecv-lr] [--json]
Prints per kind and rank: seconds and instances (--json: a JSON object
{kind: {rank: [seconds, instances]}})."""
import argparse
import collections
import glob
import json
import os
import sys

import otf2

KINDS = ("Late Sender", "Late Sender / Wrong Order", "Late Receiver", "Wait at Barrier", "Barrier Completion",
         "Wait at NxN", "NxN Completion", "Late Broadcast", "Early Reduce", "Early Scan")
LSWO_BUFFER = 100  # scout's MPI_LATESENDER_WO BUFFERSIZE
EAGER_HEADER = 64  # bytes of a limit the transport's header takes (xsprof's rule)

TESTS = {"MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome"}
WAIT_MULTI = {"MPI_Waitall", "MPI_Waitany", "MPI_Waitsome"}
BLOCK_SEND = {"MPI_Send", "MPI_Ssend"}
SENDRECV = {"MPI_Sendrecv", "MPI_Sendrecv_replace"}

Op = otf2.CollectiveOp
BARRIER = {Op.BARRIER}
ONE2N = {Op.BCAST, Op.SCATTER, Op.SCATTERV}
N21 = {Op.REDUCE, Op.GATHER, Op.GATHERV}
NXN = {Op.ALLREDUCE, Op.ALLGATHER, Op.ALLGATHERV, Op.ALLTOALL, Op.REDUCE_SCATTER, Op.REDUCE_SCATTER_BLOCK}
SCAN = {Op.SCAN, Op.EXSCAN}


class Call:
    """An MPI call of a location: its times, name and the records inside."""
    __slots__ = ("enter", "leave", "name", "recs", "rank", "ls")

    def __init__(self, enter, name, rank):
        self.enter, self.leave, self.name, self.recs, self.rank, self.ls = enter, None, name, [], rank, False


class Msg:
    __slots__ = ("src", "dst", "t_send", "send_call", "done_call", "bytes", "recv_call", "req_call")

    def __init__(self, src, dst, t_send, send_call, nbytes):
        self.src, self.dst, self.t_send, self.send_call, self.bytes = src, dst, t_send, send_call, nbytes
        self.done_call = self.recv_call = self.req_call = None


def read_calls(path):
    """Per location (in definition order) its MPI calls in order, the
    world rank of every location, and the timer resolution."""
    calls = collections.OrderedDict()
    with otf2.reader.open(path) as t:
        tps = t.definitions.clock_properties.timer_resolution
        stacks = {}
        for loc, ev in t.events:
            st = stacks.get(loc)
            if st is None:
                st = stacks[loc] = []
                calls[loc] = []
            if isinstance(ev, otf2.events.Enter):
                c = Call(ev.time, ev.region.name, loc.group._ref) if ev.region.paradigm == otf2.Paradigm.MPI else None
                st.append(c)
                if c is not None:
                    calls[loc].append(c)
            elif isinstance(ev, otf2.events.Leave):
                c = st.pop()
                if c is not None:
                    c.leave = ev.time
            elif st and st[-1] is not None:
                st[-1].recs.append(ev)
    return calls, tps


def world(comm, local):
    """World rank of communicator rank `local` (COMM_LOCATIONS members are locations)."""
    return comm.group.members[local].group._ref


def match(calls):
    """The messages, paired as scout's replay pairs them; Isend and Irecv
    requests tied to the calls that posted and completed them."""
    sends = collections.defaultdict(collections.deque)
    msgs = []
    for loc, lst in calls.items():
        isends = {}
        for c in lst:
            for ev in c.recs:
                if isinstance(ev, (otf2.events.MpiSend, otf2.events.MpiIsend)):
                    m = Msg(c.rank, world(ev.communicator, ev.receiver), ev.time, c, ev.msg_length)
                    if isinstance(ev, otf2.events.MpiSend):
                        m.done_call = c
                    else:
                        isends[ev.request_id] = m
                    sends[(m.src, m.dst, ev.communicator._ref, ev.msg_tag)].append(m)
                    msgs.append(m)
                elif isinstance(ev, otf2.events.MpiIsendComplete):
                    m = isends.pop(ev.request_id, None)
                    if m is not None:
                        m.done_call = c
    recvs = collections.OrderedDict()  # location -> [(call, msg)] in order
    unmatched = 0
    for loc, lst in calls.items():
        posted = {}
        out = recvs[loc] = []
        for c in lst:
            for ev in c.recs:
                if isinstance(ev, otf2.events.MpiIrecvRequest):
                    posted[ev.request_id] = c
                elif isinstance(ev, (otf2.events.MpiRecv, otf2.events.MpiIrecv)):
                    q = sends[(world(ev.communicator, ev.sender), c.rank, ev.communicator._ref, ev.msg_tag)]
                    if not q:
                        unmatched += 1
                        continue
                    m = q.popleft()
                    m.recv_call = c
                    m.req_call = posted.pop(ev.request_id, c) if isinstance(ev, otf2.events.MpiIrecv) else c
                    out.append((c, m))
    return msgs, recvs, unmatched + sum(len(q) for q in sends.values())


class Result:
    def __init__(self):
        self.v = {k: collections.defaultdict(lambda: [0, 0]) for k in KINDS}

    def add(self, kind, rank, ns):
        if ns > 0:
            e = self.v[kind][rank]
            e[0] += ns
            e[1] += 1

    def seconds(self, tps):
        return {k: {r: (e[0] / tps, e[1]) for r, e in sorted(d.items())} for k, d in self.v.items()}


def eager_limits(rundir):
    """Per world rank (host, shared-memory limit, other limit) from the rank
    files' `mpit:*` metadata (0: none recorded)."""
    import h5py
    lim = {}
    for p in sorted(glob.glob(os.path.join(rundir, "rank-*.h5"))):
        with h5py.File(p, "r") as f:
            d = f["definitions"]
            s = [x.split(b"\0")[0].decode() for x in d["strings"][:]]
            meta = {s[k]: s[v] for k, v in d["metadata"][:]}
        rank = int(os.path.basename(p)[5:-3])
        intra = inter = 0
        for k, v in meta.items():
            if not k.startswith("mpit:") or "eager_limit" not in k or "btl_self_" in k or not v.isdigit() or not int(v):
                continue
            shm = any(x in k for x in ("vader", "btl_sm_", "shmem", "smcuda"))
            old = intra if shm else inter
            new = int(v) if not old or int(v) < old else old
            intra, inter = (new, inter) if shm else (intra, new)
        lim[rank] = (meta.get("host", ""), intra, inter)
    return lim


def went_eagerly(m, lim):
    if m.src not in lim or m.dst not in lim or "ssend" in m.done_call.name.lower():
        return False
    host, intra, inter = lim[m.src]
    limit = intra if host == lim[m.dst][0] else inter
    return limit > EAGER_HEADER and m.bytes <= limit - EAGER_HEADER


def point_to_point(calls, msgs, recvs, res, lim=None, sendrecv_lr=False):
    # Late Sender and Wrong Order, per location in replay order
    ls_at = {}  # Sendrecv or Waitall-type call -> its Late Sender's ns (switch b)
    instances = []  # [ns, rank, wrong order?]
    for loc, lst in recvs.items():
        buf = collections.deque()
        by_call = collections.OrderedDict()
        for c, m in lst:
            by_call.setdefault(id(c), (c, []))[1].append(m)
        for c, ms in by_call.values():
            best = None
            for m in ms:
                if c.name not in TESTS:
                    idle = min(m.send_call.enter, c.leave) - c.enter
                    if idle > 0:
                        c.ls = True
                        if c.name in WAIT_MULTI:
                            if best is None or idle > best[0][0]:
                                best = ([idle, c.rank, False], m.t_send)
                                ls_at[id(c)] = idle
                        else:
                            inst = [idle, c.rank, False]
                            instances.append(inst)
                            if c.name in SENDRECV:
                                ls_at[id(c)] = idle
                            if len(buf) == LSWO_BUFFER:
                                buf.popleft()
                            buf.append((m.t_send, inst))
                # every receive (in Test* calls too) checks the kept Late Senders
                keep = collections.deque()
                for t_send, inst in buf:
                    if t_send > m.t_send:
                        inst[2] = True
                    else:
                        keep.append((t_send, inst))
                buf = keep
            if best is not None:  # a multi-completion call's longest, at its Leave
                instances.append(best[0])
                if len(buf) == LSWO_BUFFER:
                    buf.popleft()
                buf.append((best[1], best[0]))
    # Late Receiver
    multi = {}
    for m in msgs:
        if m.done_call is None or m.req_call is None:
            continue
        d, q = m.done_call, m.req_call
        if lim is not None and went_eagerly(m, lim):
            continue
        idle = 0 if d.leave <= q.enter else q.enter - d.enter
        if idle <= 0:
            continue
        if d.name in BLOCK_SEND or d.name == "MPI_Wait":
            res.add("Late Receiver", d.rank, idle)
        elif (d.name in WAIT_MULTI and (sendrecv_lr or not d.ls)) or (sendrecv_lr and d.name in SENDRECV):
            multi[id(d)] = max(multi.get(id(d), (0, d.rank, id(d))), (idle, d.rank, id(d)))
    for idle, rank, call in multi.values():
        idle -= ls_at.get(call, 0) if sendrecv_lr else 0  # (b): the time beyond the call's Late Sender
        if idle > 0:
            res.add("Late Receiver", rank, idle)
    for ns, rank, wo in instances:
        res.add("Late Sender / Wrong Order" if wo else "Late Sender", rank, ns)


def collectives(calls, res):
    inst = collections.defaultdict(list)
    seen = collections.Counter()
    for loc, lst in calls.items():
        for c in lst:
            begin = None
            for ev in c.recs:
                if isinstance(ev, otf2.events.MpiCollectiveBegin):
                    begin = ev.time
                elif isinstance(ev, otf2.events.MpiCollectiveEnd):
                    key = (loc, ev.communicator._ref)
                    inst[(ev.communicator._ref, seen[key])].append((begin, ev.time, ev, c.rank))
                    seen[key] += 1
    skipped = 0
    for members in inst.values():
        ev0 = members[0][2]
        comm, op = ev0.communicator, ev0.collective_op
        size = len(comm.group.members)
        if size < 2 or op in (Op.ALLTOALLV, Op.ALLTOALLW):
            continue
        if len(members) != size:
            skipped += 1
            continue
        B = [m[0] for m in members]
        X = [m[1] for m in members]
        E = [m[2] for m in members]
        R = [m[3] for m in members]
        n = len(members)
        if op in BARRIER:
            late, first = max(B), min(X)
            for i in range(n):
                lb = min(late, X[i])
                res.add("Wait at Barrier", R[i], lb - B[i])
                res.add("Barrier Completion", R[i], X[i] - max(first, lb))
        elif op in ONE2N:
            root = [i for i in range(n) if world(comm, E[i].root) == R[i]]
            if not root or E[root[0]].size_sent == 0:
                continue
            rb = B[root[0]]
            for i in range(n):
                if E[i].size_received > 0 and B[i] < rb:
                    res.add("Late Broadcast", R[i], min(rb, X[i]) - B[i])
        elif op in N21:
            root = [i for i in range(n) if world(comm, E[i].root) == R[i]]
            if not root or E[root[0]].size_received == 0:
                continue
            r = root[0]
            senders = [B[i] for i in range(n) if E[i].size_sent > 0]
            if senders and B[r] < max(senders):
                res.add("Early Reduce", R[r], min(max(senders), X[r]) - B[r])
        elif op in NXN:
            part = [i for i in range(n) if E[i].size_sent or E[i].size_received]
            if not part:
                continue
            late, first = max(B[i] for i in part), min(X[i] for i in part)
            if first > late:
                sync = part
            else:
                snd = [i for i in part if E[i].size_sent]
                if not snd:
                    continue
                late = max(B[i] for i in snd)
                last = min(i for i in snd if B[i] == late)
                sync = [i for i in part if (E[i].size_received and B[i] < late) or i == last]
                first = min(X[i] for i in sync)
            for i in sync:
                lb = min(late, X[i])
                res.add("Wait at NxN", R[i], lb - B[i])
                res.add("NxN Completion", R[i], X[i] - max(first, lb))
        elif op in SCAN:
            order = sorted(range(n), key=lambda i: comm.group.members.index(
                next(l for l in comm.group.members if l.group._ref == R[i])))
            latest = None
            for i in order:
                if E[i].size_sent:
                    latest = B[i] if latest is None else max(latest, B[i])
                if (E[i].size_sent or E[i].size_received) and latest is not None and B[i] < latest:
                    res.add("Early Scan", R[i], min(latest, X[i]) - B[i])
    return skipped


def analyse(path, rundir=None, eager=False, sendrecv_lr=False):
    """{kind: {rank: (seconds, instances)}} and notes on what was left out."""
    calls, tps = read_calls(path)
    msgs, recvs, unmatched = match(calls)
    res = Result()
    point_to_point(calls, msgs, recvs, res, eager_limits(rundir) if eager else None, sendrecv_lr)
    skipped = collectives(calls, res)
    return res.seconds(tps), {"messages": len(msgs), "unmatched_records": unmatched,
                              "incomplete_collectives": skipped}


def analyse_variants(path, rundir):
    """The trace read once, analysed four ways: "scalasca" (no switch),
    "eager" (a), "sendrecv" (b), "xsprof" (a and b)."""
    calls, tps = read_calls(path)
    msgs, recvs, unmatched = match(calls)
    coll = Result()
    skipped = collectives(calls, coll)
    lim = eager_limits(rundir)
    out = {}
    for name, e, b in (("scalasca", None, False), ("eager", lim, False), ("sendrecv", None, True),
                       ("xsprof", lim, True)):
        res = Result()
        point_to_point(calls, msgs, recvs, res, e, b)
        for k, d in coll.v.items():
            for r, v in d.items():
                res.v[k][r] = list(v)
        out[name] = res.seconds(tps)
    return out, {"messages": len(msgs), "unmatched_records": unmatched, "incomplete_collectives": skipped}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--run", help="the run directory (rank files: eager limits)")
    ap.add_argument("--eager", action="store_true", help="(a) no Late Receiver for eager sends (needs --run)")
    ap.add_argument("--sendrecv-lr", action="store_true", help="(b) Late Receiver of MPI_Sendrecv's send half")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.eager and not a.run:
        ap.error("--eager needs --run RUNDIR (trace.otf2 holds no eager limits)")
    res, notes = analyse(a.trace, a.run, a.eager, a.sendrecv_lr)
    if a.json:
        print(json.dumps({k: {str(r): list(v) for r, v in d.items()} for k, d in res.items()}, indent=1))
        return 0
    print(f"{'kind':28} {'rank':>4} {'seconds':>12} {'instances':>9}")
    for k in KINDS:
        for r, (s, n) in res[k].items():
            print(f"{k:28} {r:4d} {s:12.6f} {n:9d}")
    print("notes: " + ", ".join(f"{k} {v}" for k, v in notes.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

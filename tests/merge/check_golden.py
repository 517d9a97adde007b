"""Golden test: the hand-made 3-rank run (merge_make_runs golden) has a
known merged result: ANY_SOURCE receive of an Isend, a blocking send into
Irecv+Wait, Allreduce on the world, Bcast and a send on a split
communicator {0,2}. Clock offsets are constant, so the aligned times are
the reference times minus the first event (1000 ns)."""
import json
import os
import sys

import h5py
from mergetest import check, finish, make_run, tmpdir, xsmerge

maker = sys.argv[1]
base = tmpdir()
run = make_run(maker, "golden", os.path.join(base, "run"))
out = os.path.join(base, "out")
rc, so, se = xsmerge(run, "-o", out, "-q")
check(rc == 0, "golden merge exits 0 (got %d: %s)" % (rc, se))
for f in ["trace.json", "trace.pftrace", "merged.h5", "report.json", "report.txt"]:
    check(os.path.exists(os.path.join(out, f)), "output has " + f)
check(not [f for f in os.listdir(out) if f.startswith(".xsmerge-tmp")], "no staging directory left")

with h5py.File(os.path.join(out, "merged.h5"), "r") as h:
    strings = [s.decode() if isinstance(s, bytes) else s for s in h["strings"][:]]
    check(h.attrs["schema"] in (b"xsprof-merged/1", "xsprof-merged/1"), "schema attribute")
    check(int(h.attrs["nranks"]) == 3, "nranks")
    check(int(h.attrs["t_end_ns"]) == 19000, "t_end is 19000 ns (got %d)" % int(h.attrs["t_end_ns"]))
    check(int(h.attrs["t0_ref_ns"]) == 1000, "t0 on the reference clock")
    check(int(h.attrs["clock_violations_before"]) == 0 and int(h.attrs["clock_violations_after"]) == 0,
          "no clock violations")
    msgs = h["messages"][:]
    got = [(int(m["src"]), int(m["dst"]), int(m["comm"]), int(m["tag"]), int(m["bytes"]),
            int(m["send_begin"]), int(m["recv_end"])) for m in msgs]
    want = [(0, 1, 0, 7, 100, 1000, 2900),    # Send -> Irecv + Wait (completion at 3900)
            (0, 2, 1, 3, 64, 10000, 10300),   # split communicator
            (2, 0, 0, 9, 200, 3000, 5000)]    # Isend -> Recv(ANY_SOURCE)
    check(got == want, "matched messages %s == %s" % (got, want))
    mpi = h["mpi"][:]
    ops = [strings[int(r["op"])] for r in mpi]
    # the receive of message 0 shows on rank 1's MPI_Wait, posted by its Irecv
    m0 = msgs[0]
    check(ops[int(m0["recv_call_row"])] == "MPI_Wait" and int(mpi[int(m0["recv_call_row"])]["rank"]) == 1,
          "message 0 received in rank 1's MPI_Wait")
    check(ops[int(m0["recv_post_row"])] == "MPI_Irecv", "message 0 posted by MPI_Irecv")
    check(int(msgs[2]["recv_post_row"]) == -1, "blocking receive has no post row")
    check(ops[int(msgs[2]["send_completion_row"])] == "MPI_Wait", "Isend completion found")
    colls = h["collectives"][:]
    check(len(colls) == 2, "two collectives")
    c0, c1 = colls[0], colls[1]
    check((int(c0["comm"]), int(c0["n"]), int(c0["first_enter"]), int(c0["last_enter"]), int(c0["last_exit"])) ==
          (0, 3, 5500, 7000, 8000), "Allreduce enter/exit times %s" % (c0,))
    check(strings[int(c0["op"])] == "MPI_Allreduce", "Allreduce name")
    check((int(c1["comm"]), int(c1["n"]), int(c1["root"]), int(c1["first_enter"]), int(c1["last_enter"])) ==
          (1, 2, 0, 8500, 9000), "Bcast on the split communicator %s" % (c1,))
    members = h["collective_members"][:]
    check(sorted(int(m["rank"]) for m in members if int(m["coll"]) == 1) == [0, 2], "Bcast members are 0 and 2")
    regs = h["regions"][:]
    r0 = [r for r in regs if int(r["rank"]) == 0][0]
    check((int(r0["t_begin"]), int(r0["t_end"])) == (0, 19000), "rank 0 main region aligned")
    args = h["args"][:]
    check(len(args) == 1 and strings[int(args[0]["key"])] == "iterations" and int(args[0]["i"]) == 3
          and int(args[0]["region"]) == int(r0["args"]), "region argument kept and linked")
    ranks = h["ranks"][:]
    check([r["host"].decode() for r in ranks] == ["node0", "node1", "node0"], "hosts")
    comms = h["comms"][:]
    check(sorted(strings[int(c["name"])] for c in comms) == ["MPI_COMM_WORLD", "split(0)"], "communicator names")
    # the analysis tables: every wait state of the hand-made run, known exactly
    an = h["analysis"]
    kinds = [k.decode() if isinstance(k, bytes) else k for k in an["waits"].attrs["kind_names"]]
    none = 0xFFFFFFFF
    waits = sorted((kinds[int(w["kind"])], int(w["waiter"]), int(w["causer"]), strings[int(w["op"])],
                    strings[int(w["region"])] if int(w["region"]) != none else None, int(w["t_begin"]),
                    int(w["t_end"]), int(w["t_cause"])) for w in an["waits"][:])
    want = sorted([("Late Sender", 0, 2, "MPI_Recv", "main", 2000, 3000, 3000),       # Isend began at 3 us
                   ("Late Receiver", 0, 2, "MPI_Send", "main", 10000, 10100, 10100),  # split comm, posted late
                   ("Wait at NxN", 0, 1, "MPI_Allreduce", "main", 6000, 7000, 7000),  # rank 1 enters last
                   ("Wait at NxN", 2, 1, "MPI_Allreduce", "main", 5500, 7000, 7000),
                   ("Late Broadcast", 2, 0, "MPI_Bcast", "main", 8500, 9000, 9000)])  # root enters at 9 us
    check(waits == want, "analysis/waits %s == %s" % (waits, want))
    for w in an["waits"][:]:  # each names the waiting call, a row of /mpi
        row = mpi[int(w["mpi_row"])]
        check(int(row["rank"]) == int(w["waiter"]) and strings[int(row["op"])] == strings[int(w["op"])] and
              int(row["t_begin"]) <= int(w["t_begin"]) and int(w["t_end"]) <= int(row["t_end"]),
              "wait %s lies in its MPI row %s" % (w, row))
    cp = [(int(c["rank"]), int(c["t_begin"]), int(c["t_end"])) for c in an["critical_path"][:]]
    check(cp == [(0, 10100, 19000), (2, 9000, 10100), (0, 7000, 9000), (1, 500, 7000)],
          "critical path from its end back: %s" % cp)
    cm = sorted((int(c["src"]), int(c["dst"]), int(c["messages"]), int(c["bytes"])) for c in an["comm_matrix"][:])
    check(cm == [(0, 1, 1, 100), (0, 2, 1, 64), (2, 0, 1, 200)], "analysis/comm_matrix %s" % cm)
    ar = an["ranks"][:]
    check([int(r["wait_ns"]) for r in ar] == [2100, 0, 2000], "wait time per rank %s" % ar)
    ops0 = {strings[int(o["op"])]: int(o["calls"]) for o in an["mpi"][:] if int(o["rank"]) == 0}
    check(ops0.get("MPI_Allreduce") == 1 and ops0.get("MPI_Send") == 2, "MPI calls of rank 0 %s" % ops0)
    check([strings[int(g["name"])] for g in an["regions"][:]] == ["main"] * 3, "one region row per rank")

# every table of merged.h5 with rows is checksummed (merge/README: shuffle,
# deflate, fletcher32), the analysis tables too; not the variable-length
# strings, whose text lives in HDF5's global heap, which no filter covers
with h5py.File(os.path.join(out, "merged.h5"), "r") as f:
    tables = []
    f.visititems(lambda name, obj: tables.append((name, obj)) if isinstance(obj, h5py.Dataset) else None)
    bare = [name for name, ds in tables
            if ds.shape and ds.shape[0] and h5py.check_string_dtype(ds.dtype) is None and not ds.fletcher32]
    check(any(name.startswith("analysis/") for name, ds in tables), "merged.h5 has analysis tables")
    check(not bare, "merged.h5 tables without a checksum: %s" % bare)

# the example that reads merged.h5 from Python says what the tables hold
import subprocess
example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "merged_h5.py")
p = subprocess.run([sys.executable, example, out], capture_output=True, text=True)
check(p.returncode == 0 and "longest wait states (of 5)" in p.stdout and
      "1 us  Late Sender: rank 0 in MPI_Recv (region main) at 2 us, waiting for rank 2" in p.stdout and
      "message 2 -> 0 tag 9 bytes 200" in p.stdout and "Wait at NxN" in p.stdout and
      "collective bytes 16" in p.stdout and "peer -1" not in p.stdout and
      "critical path: 18.5 us in 4 pieces" in p.stdout and
      "rank 1: 6.5 us (35 %)" in p.stdout, "examples/merged_h5.py on the golden run: %s %s" % (p.stdout, p.stderr))
# a Late Sender found in a polling loop: its row is the first MPI_Test (no
# peer, tag or bytes of its own); the example names the message it awaited
poll = make_run(maker, "pollwait", os.path.join(base, "pollwait"))
rc, so, se = xsmerge(poll, "-o", os.path.join(base, "pollwait-out"), "-q")
check(rc == 0, "pollwait merges: %s" % se)
p = subprocess.run([sys.executable, example, os.path.join(base, "pollwait-out")], capture_output=True, text=True)
check(p.returncode == 0 and "Late Sender (polling): rank 0 in MPI_Test" in p.stdout and
      "message 1 -> 0 tag 1 bytes 8" in p.stdout, "examples/merged_h5.py on a polling Late Sender: %s %s" %
      (p.stdout, p.stderr))
p = subprocess.run([sys.executable, example, os.path.join(base, "nowhere")], capture_output=True, text=True)
check(p.returncode == 1 and "merged.h5" in p.stderr and len(p.stderr.strip().splitlines()) == 1,
      "examples/merged_h5.py without a merged.h5: one line (%r)" % p.stderr[-300:])

doc = json.load(open(os.path.join(out, "trace.json")))
ev = doc["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
check(names == {0: "rank 0 (node0)", 1: "rank 1 (node1)", 2: "rank 2 (node0)"}, "process names %s" % names)
xs = [e for e in ev if e["ph"] == "X"]
check(len(xs) == 16, "16 slices: 3 regions + 13 MPI calls (got %d)" % len(xs))
s = {e["id"]: e for e in ev if e["ph"] == "s"}
f = {e["id"]: e for e in ev if e["ph"] == "f"}
check(sorted(s) == [1, 2, 3] and sorted(f) == [1, 2, 3], "a flow per message")
check(s[1]["pid"] == 0 and f[1]["pid"] == 1 and abs(s[1]["ts"] - 1.0) < 1e-9, "flow 1 from rank 0 at 1 us")
check(s[3]["pid"] == 2 and f[3]["pid"] == 0, "flow 3 from rank 2 to rank 0")
send = [e for e in xs if e["name"] == "MPI_Send" and e["pid"] == 0][0]
check(send["args"] == {"peer": 1, "tag": 7, "bytes_sent": 100, "comm": "MPI_COMM_WORLD (0)"}, "MPI args %s" % send["args"])
main0 = [e for e in xs if e["name"] == "main" and e["pid"] == 0][0]
check(main0.get("args") == {"iterations": 3}, "region args in JSON")
check([e["ts"] for e in xs] == sorted(e["ts"] for e in xs), "slices written in time order")

# a rank that died: recovered from its journal, said on stderr, same messages
run2 = make_run(maker, "journal", os.path.join(base, "run2"))
out2 = os.path.join(base, "out2")
rc, so, se = xsmerge(run2, "-o", out2)
check(rc == 0, "journal run merges")
check("recovered from journal" in se and "rank-00001.xsj" in se, "journal recovery is reported: %s" % se)
with h5py.File(os.path.join(out2, "merged.h5"), "r") as h:
    check(len(h["messages"]) == 3, "journal run: 3 messages")
    check(int(h["ranks"][1]["recovered"]) == 1, "rank 1 marked recovered")

# rank selection: without rank 1, only the messages between 0 and 2
out3 = os.path.join(base, "out3")
rc, so, se = xsmerge(run, "-o", out3, "--ranks", "0,2")
check(rc == 0, "--ranks 0,2 merges")
check("unmatched" not in se, "no unmatched notes for unselected ranks: %s" % se)
with h5py.File(os.path.join(out3, "merged.h5"), "r") as h:
    check([(int(m["src"]), int(m["dst"])) for m in h["messages"][:]] == [(0, 2), (2, 0)], "--ranks keeps 0<->2")
    check(list(h["ranks"]["present"]) == [1, 0, 1], "rank 1 not present")
# ... and a rank left out by --ranks is not a missing one in the report
rep = json.load(open(os.path.join(out3, "report.json")))
check('"missing_ranks":0' in json.dumps(rep, separators=(",", ":")), "--ranks 0,2: no missing rank in report.json")
check("is missing" not in open(os.path.join(out3, "report.txt")).read(), "--ranks 0,2: report.txt says no rank is missing")
# the rank tables list the two merged ranks and send the reader to report.json
# for no other (they said "... 1 more ranks in report.json", which has no data
# for it); the summary says how many ranks were merged
txt = open(os.path.join(out3, "report.txt")).read()
check("more ranks in report.json" not in txt, "--ranks 0,2: no rank is said to be in report.json only: %s" % txt)
check(txt.startswith("xsprof report: 2 of 3 ranks (--ranks) on "), "--ranks 0,2: the summary says 2 of 3 ranks: %s" % txt[:80])
# ranks the run has no file of: a note when some are, one line and exit 1 when all are
rc, so, se = xsmerge(run, "-o", os.path.join(base, "out3b"), "-q", "--ranks", "1-9")
check(rc == 0, "--ranks 1-9 merges ranks 1 and 2: %s" % se)
rc, so, se = xsmerge(run, "-o", os.path.join(base, "out3c"), "--ranks", "1-9")
check(rc == 0 and "names ranks up to 9; the run's last rank file is rank 2" in se, "--ranks 1-9: a note: %s" % se)
rc, so, se = xsmerge(run, "-o", os.path.join(base, "out3d"), "--ranks", "5,99999999999")
check(rc == 1 and se.strip().count("\n") == 0 and "selects none of its ranks (rank files 0 to 2)" in se,
      "--ranks 5,99999999999: one line, exit 1 (%d %r)" % (rc, se))
check(not os.path.exists(os.path.join(base, "out3d")), "--ranks selecting nothing writes nothing")

# time window: [2.5 us, 6 us] keeps what overlaps it
out4 = os.path.join(base, "out4")
rc, so, se = xsmerge(run, "-o", out4, "-q", "--from", "2.5us", "--to", "6us")
check(rc == 0, "window merges")
with h5py.File(os.path.join(out4, "merged.h5"), "r") as h:
    mpi = h["mpi"][:]
    check(all(int(r["t_end"]) >= 2500 and int(r["t_begin"]) <= 6000 for r in mpi), "window rows overlap it")
    check([(int(m["src"]), int(m["dst"])) for m in h["messages"][:]] == [(2, 0)], "only the message inside")
    kept = [(int(r["t_begin"]), int(r["t_end"])) for t in ("regions", "mpi") for r in h[t][:]]
    check(int(h.attrs["t_end_ns"]) == 6000, "the windowed run ends at --to: %s" % h.attrs["t_end_ns"])
    check(min(b for b, e in kept) < 2500 < 6000 < max(e for b, e in kept), "the trace keeps whole rows: %s" % kept)
# the report describes the window (it said the whole run's end less the
# window's start, then the kept rows' span, 19 us)
got = json.load(open(os.path.join(out4, "report.json")))["job"]["duration_s"]
check(abs(got - 3.5e-6) < 1e-12, "window: report duration %s s, the window's 3.5 us" % got)

# a missing rank: error without --partial, merged with it
os.remove(os.path.join(run, "rank-00001.h5"))
out5 = os.path.join(base, "out5")
rc, so, se = xsmerge(run, "-o", out5, "-q")
check(rc == 1 and "rank 1 missing" in se and len(se.strip().splitlines()) == 1, "missing rank is one error line: %s" % se)
check(not os.path.exists(os.path.join(out5, "trace.json")), "no output after an error")
rc, so, se = xsmerge(run, "-o", out5, "--partial")
check(rc == 0 and "missing ranks 1" in se, "--partial merges the others: %s" % se)
with h5py.File(os.path.join(out5, "merged.h5"), "r") as h:
    ar = h["analysis"]["ranks"][:]
    check(list(ar["present"]) == [1, 0, 1] and not [w for w in h["analysis"]["waits"][:] if 1 in (w["waiter"], w["causer"])],
          "--partial: the missing rank is absent from the analysis tables")
# only merged.h5 asked for: no analysis, so no analysis tables
out7 = os.path.join(base, "out7")
rc, so, se = xsmerge(run, "-o", out7, "-q", "--partial", "--outputs", "h5")
with h5py.File(os.path.join(out7, "merged.h5"), "r") as h:
    check(rc == 0 and "analysis" not in h, "--outputs h5: no /analysis")
# ranks that recorded nothing still merge into valid, empty products
run6 = make_run(maker, "empty", os.path.join(base, "run6"))
out6 = os.path.join(base, "out6")
rc, so, se = xsmerge(run6, "-o", out6, "-q")
check(rc == 0, "empty run merges (%s)" % se)
doc = json.load(open(os.path.join(out6, "trace.json")))
check(not [e for e in doc["traceEvents"] if e["ph"] != "M"], "empty run: metadata only")
with h5py.File(os.path.join(out6, "merged.h5"), "r") as h:
    check(len(h["mpi"]) == 0 and len(h["messages"]) == 0 and len(h["ranks"]) == 2, "empty run tables")
# delay propagation (merge_make_runs chain): rank 0's `slow` (10 us) makes
# rank 1 wait 9 us; rank 1's `relay` (0.5 us) passes the delay on to rank 2
# (waits 9.7 us), which reaches the Barrier last (ranks 0 and 1 wait 0.8 and
# 0.1 us). A wait goes first to the causer's excess over the waiter in their
# synchronisation intervals; what is left, up to the causer's own earlier
# wait, goes where that wait went. Exact shares, ns:
#   Late Sender on 1: slow@0 9000
#   Late Sender on 2: relay@1 700 (the 9700 less the 9000 carried), slow@0 9000
#   Barrier on 0: relay@2 100, then 700 carried from rank 2's wait:
#                 slow@0 700*9000/9700, relay@1 700*700/9700
#   Barrier on 1: relay@2 100 (its excess covers the wait)
run8 = make_run(maker, "chain", os.path.join(base, "run8"))
want = {("Late Sender", 0, "slow"): 18000, ("Late Sender", 1, "relay"): 700,
        ("Wait at Barrier", 2, "relay"): 200, ("Wait at Barrier", 0, "slow"): 700 * 9000 / 9700,
        ("Wait at Barrier", 1, "relay"): 700 * 700 / 9700}
for extra in ((), ("--stream", "--outputs", "report,h5")):
    out8 = os.path.join(base, "out8" + "".join(extra).replace(",", ""))
    rc, so, se = xsmerge(run8, "-o", out8, "-q", *extra)
    check(rc == 0, "chain %s: exit 0 (%s)" % (extra, se))
    if rc:
        continue
    rep = json.load(open(os.path.join(out8, "report.json")))
    got = {(w["kind"], r["rank"], r["region"]): r["seconds"] * 1e9 for w in rep["wait_states"] for r in w["root_causes"]}
    check(got.keys() == want.keys() and all(abs(got[k] - want[k]) < 1e-3 for k in want),
          "chain %s: the delay is charged down the chain to `slow` on rank 0:\n got %s\nwant %s" % (extra, got, want))
    lb = [w for w in rep["wait_states"] if w["kind"] == "Late Broadcast"]
    check(rep["clock"]["violations_before"] == 0 and lb and lb[0]["instances"] == 0,
          "chain %s: the zero-byte Bcast left early is no clock violation and no Late Broadcast (%s, %s)"
          % (extra, rep["clock"], lb))
    f0 = [f for f in rep["findings"] if f["kind"] == "Late Sender"]
    check(f0 and f0[0]["ranks"][0] == 0 and "`slow` on rank 0" in f0[0]["message"],
          "chain %s: the Late Sender finding starts at rank 0's `slow` (%s)" % (extra, f0))
    with h5py.File(os.path.join(out8, "merged.h5"), "r") as h:
        ws = sorted((int(w["waiter"]), int(w["causer"]), int(w["root_rank"])) for w in h["analysis"]["waits"][:]
                    if w["kind"] == 0)
    check(ws == [(1, 0, 0), (2, 1, 0)], "chain %s: merged.h5 waits name rank 0 as the root of both Late Senders (%s)"
          % (extra, ws))
# a 1-D halo exchange (merge_make_runs halo): two Sendrecvs per step, rank
# 1's stencil 2 us longer than the others'. Each Late Sender compares the
# two ranks since the causer's previous message to the waiter (the ranks'
# starts in the first step); a causer late because it waited itself in
# those calls passes the delay on: all 16 us of the 8 Late Senders are rank
# 1's `stencil`. With each rank's own last call as the interval's start,
# the Sendrecv of the other direction hid the stencil: 10 us went to `halo`.
run11 = make_run(maker, "halo", os.path.join(base, "run11"))
for extra in ((), ("--stream", "--outputs", "report,h5")):
    out11 = os.path.join(base, "out11" + "".join(extra).replace(",", ""))
    rc, so, se = xsmerge(run11, "-o", out11, "-q", *extra)
    rep = json.load(open(os.path.join(out11, "report.json"))) if rc == 0 else {"wait_states": [], "findings": []}
    # Scalasca's Wrong Order: 5 of them, where the other direction's message
    # to the waiter was sent before the late one (and received after it)
    ls = [w for w in rep["wait_states"] if w["kind"] in ("Late Sender", "Late Sender / Wrong Order")]
    got = {}
    for w in ls:
        for r in w["root_causes"]:
            got[(r["rank"], r["region"])] = got.get((r["rank"], r["region"]), 0) + r["seconds"] * 1e9
    n = [w["instances"] for w in ls]
    sec = sum(w["seconds"] for w in ls) * 1e9
    check(rc == 0 and n == [3, 5] and abs(sec - 16000) < 1e-3 and
          got.keys() == {(1, "stencil")} and abs(got[(1, "stencil")] - 16000) < 1e-3,
          "halo %s: 8 Late Senders (5 Wrong Order), 16 us, all rank 1's stencil (%s, %s)" % (extra, n, got))
    f0 = [f for f in rep["findings"] if f["kind"] in ("Late Sender", "Late Sender / Wrong Order")]
    check(f0 and f0[0]["ranks"][0] == 1 and "`stencil`" in f0[0]["message"],
          "halo %s: the Late Sender finding names rank 1's `stencil` (%s)" % (extra, f0))
    if rc == 0:
        with h5py.File(os.path.join(out11, "merged.h5"), "r") as h:
            roots = {int(w["root_rank"]) for w in h["analysis"]["waits"][:] if w["kind"] in (0, 1)}
        check(roots == {1}, "halo %s: merged.h5 names rank 1 as the root of every Late Sender (%s)" % (extra, roots))
# a collective between two messages (merge_make_runs halocoll): each step
# an Allreduce, then rank 1's `pack` 0.9 us longer than rank 0's before it
# sends (Late Sender). The Allreduce synchronised the pair after the
# previous message: both intervals start at its end, and all 2.7 us of the
# 3 Late Senders go to `pack` (from the previous message, rank 1's 2 us
# longer `stencil` before the Allreduce took 1.67 us of them). Rank 0's
# Ssend then waits 0.6 us for rank 1's receive, which came after `unpack`
# (0.5 us), a Barrier on MPI_COMM_SELF and `post` (25 ns): a Late Receiver
# compares the pair since rank 0 received rank 1's message, so the
# Barrier (no call of rank 0's) does not hide `unpack`: 500/550 of it
# there, 25/550 to `post` (all to `post` from the Barrier on) and 25/550
# outside every region (rank 1 spent 75 ns there, rank 0 50 ns).
def root_causes(run, out, extra):
    """Merge run in memory or streamed (extra): exit code and, per wait
    kind, {(rank, region): ns} of its root causes."""
    rc, so, se = xsmerge(run, "-o", out, "-q", *extra)
    rep = json.load(open(os.path.join(out, "report.json"))) if rc == 0 else {"wait_states": []}
    return rc, {w["kind"]: {(r["rank"], r["region"]): r["seconds"] * 1e9 for r in w["root_causes"]}
                for w in rep["wait_states"] if w["instances"]}


run14 = make_run(maker, "halocoll", os.path.join(base, "run14"))
for extra in ((), ("--stream", "--outputs", "report,h5")):
    rc, roots = root_causes(run14, os.path.join(base, "out14" + "".join(extra).replace(",", "")), extra)
    ls, lr = roots.get("Late Sender", {}), roots.get("Late Receiver", {})
    check(rc == 0 and ls.keys() == {(1, "pack")} and abs(ls[(1, "pack")] - 2700) < 1e-3,
          "halocoll %s: the Late Senders' 2.7 us all to rank 1's pack, since the Allreduce (%s)" % (extra, ls))
    check(lr.keys() == {(1, "unpack"), (1, "post"), (1, None)} and abs(lr[(1, "unpack")] - 1800 * 500 / 550) < 1e-3
          and abs(lr[(1, "post")] - 1800 * 25 / 550) < 1e-3 and abs(lr[(1, None)] - 1800 * 25 / 550) < 1e-3,
          "halocoll %s: the Late Receivers' 1.8 us to rank 1's unpack, post and no region, 500:25:25 (%s)" % (extra, lr))
# a causing call outside every region (merge_make_runs outside): rank 1
# enters the Barrier 4 us after its short `stencil` ended; rank 0, with the
# longer stencil, waits 1.9 us. No region of rank 1 exceeds rank 0's, so the
# wait goes to where rank 1's call is: outside every region (region null),
# in memory as streamed, not to the `stencil` before the call.
run15 = make_run(maker, "outside", os.path.join(base, "run15"))
for extra in ((), ("--stream", "--outputs", "report")):
    rc, roots = root_causes(run15, os.path.join(base, "out15" + "".join(extra).replace(",", "")), extra)
    got = roots.get("Wait at Barrier", {})
    check(rc == 0 and roots.keys() == {"Wait at Barrier"} and got.keys() == {(1, None)} and abs(got[(1, None)] - 1900) < 1e-3,
          "outside %s: the Barrier wait to rank 1 outside every region (%s)" % (extra, roots))
# a region before MPI_Init (merge_make_runs preinit): rank 1's 5 us `setup`
# lies before the measured window, where the first synchronisation interval
# starts: the 2.9 us Barrier wait all goes to its 3 us longer `work`, in
# memory as streamed (streamed, `setup` took 5/8 of it)
run18 = make_run(maker, "preinit", os.path.join(base, "run18"))
for extra in ((), ("--stream", "--outputs", "report")):
    rc, roots = root_causes(run18, os.path.join(base, "out18" + "".join(extra).replace(",", "")), extra)
    got = roots.get("Wait at Barrier", {})
    check(rc == 0 and roots.keys() == {"Wait at Barrier"} and got.keys() == {(1, "work")} and
          abs(got[(1, "work")] - 2900) < 1e-3, "preinit %s: the Barrier wait all to rank 1's work (%s)" % (extra, roots))
# Wrong Order, in memory as streamed: a Waitall that completes an earlier
# message at the same nanosecond as the late one (its end) waits in a Late
# Sender, not a Wrong Order (merge_make_runs waitall_tie: the in-memory
# analysis counted the tie as received after); a polling loop's Late
# Sender while an earlier message is still to be received is a polling
# one, never Wrong Order (Scalasca computes neither in polls: pollwo)
for kind, want in (("waitall_tie", {"Late Sender": (1, 3900)}), ("pollwo", {"Late Sender (polling)": (1, 2500)})):
    run = make_run(maker, kind, os.path.join(base, kind))
    for extra in ((), ("--stream", "--outputs", "report")):
        out = os.path.join(base, kind + "-out" + "".join(extra).replace(",", ""))
        rc, so, se = xsmerge(run, "-o", out, "-q", *extra)
        rep = json.load(open(os.path.join(out, "report.json"))) if rc == 0 else {"wait_states": []}
        got = {w["kind"]: (w["instances"], round(w["seconds"] * 1e9)) for w in rep["wait_states"] if w["instances"]}
        check(got == want, "%s %s: %s (want %s)" % (kind, extra, got, want))
# computation overlapped with communication (merge_make_runs overlap): rank
# 1 calls MPI_Test and MPI_Waitall (of no request) between chunks of
# `compute` (10 us in all), none completing anything, packs (0.5 us) and
# sends; rank 0 computed 1 us and waits 8.5 us. A call that completes
# nothing does not synchronise: rank 1's interval is all of its work, whose
# excesses (9 us compute, 0.5 us pack) share the wait. When each Waitall
# ended an interval, the last chunk and `pack` were compared with rank 0's
# compute: all 8.5 us went to `pack`.
run12 = make_run(maker, "overlap", os.path.join(base, "run12"))
for extra in ((), ("--stream", "--outputs", "report")):
    out12 = os.path.join(base, "out12" + "".join(extra).replace(",", ""))
    rc, so, se = xsmerge(run12, "-o", out12, "-q", *extra)
    rep = json.load(open(os.path.join(out12, "report.json"))) if rc == 0 else {"wait_states": []}
    got = {(r["rank"], r["region"]): r["seconds"] * 1e9 for w in rep["wait_states"] if w["kind"] == "Late Sender"
           for r in w["root_causes"]}
    want = {(1, "compute"): 8500 * 9000 / 9500, (1, "pack"): 8500 * 500 / 9500}
    check(got.keys() == want.keys() and all(abs(got[k] - want[k]) < 1e-3 for k in want),
          "overlap %s: the polls do not cut rank 1's interval:\n got %s\nwant %s" % (extra, got, want))
# a polling loop that waited (merge_make_runs pollwait): rank 0 polls with
# 100 MPI_Test calls of 100 ns; rank 1 sends at 15 us after `slow`. The 70
# polls before the send are a Late Sender of 7 us ending at the send
# (merged.h5: 8 to 15 us), caused by rank 1's `slow`; the critical path
# crosses to rank 1 there (15 us of its 21.1 us).
run13 = make_run(maker, "pollwait", os.path.join(base, "run13"))
for extra in ((), ("--stream", "--outputs", "report,h5")):
    out13 = os.path.join(base, "out13" + "".join(extra).replace(",", ""))
    rc, so, se = xsmerge(run13, "-o", out13, "-q", *extra)
    rep = json.load(open(os.path.join(out13, "report.json"))) if rc == 0 else {"wait_states": [], "critical_path": {}}
    ls = [w for w in rep["wait_states"] if w["kind"] == "Late Sender (polling)" and w["instances"]]
    got = [(r["rank"], r["region"], round(r["seconds"] * 1e9, 3)) for w in ls for r in w["root_causes"]]
    cp = {r["rank"]: round(r["seconds"] * 1e9) for r in rep["critical_path"].get("ranks", [])}
    check(len(ls) == 1 and ls[0]["instances"] == 1 and got == [(1, "slow", 7000.0)] and cp == {0: 6100, 1: 15000},
          "pollwait %s: a 7 us Late Sender in the polling loop, rank 1's slow, the path crossing at the send (%s, %s)"
          % (extra, got, cp))
    if rc == 0:
        with h5py.File(os.path.join(out13, "merged.h5"), "r") as h:
            ws = [(int(w["waiter"]), int(w["causer"]), int(w["t_begin"]), int(w["t_end"])) for w in h["analysis"]["waits"][:]]
        check(ws == [(0, 1, 8000, 15000)], "pollwait %s: merged.h5 has the wait from 8 to 15 us (%s)" % (extra, ws))
# the sender's side (merge_make_runs polllr): rank 0 Issends and polls
# its request with 100 MPI_Test calls of 100 ns; rank 1 posts its receive
# at 15 us after `slow`. The 70 polls before the post are a Late Receiver
# of 7 us in the completing Test, ending at the post (merged.h5: 8 to 15
# us), caused by `slow`; the critical path crosses to rank 1 there. (No
# wait state at all before: only a Late Sender's polls were counted.)
run21 = make_run(maker, "polllr", os.path.join(base, "run21"))
for extra in ((), ("--stream", "--outputs", "report,h5")):
    out21 = os.path.join(base, "out21" + "".join(extra).replace(",", ""))
    rc, so, se = xsmerge(run21, "-o", out21, "-q", *extra)
    rep = json.load(open(os.path.join(out21, "report.json"))) if rc == 0 else {"wait_states": [], "critical_path": {}}
    lr = [w for w in rep["wait_states"] if w["instances"]]
    got = [(w["kind"], r["rank"], r["region"], round(r["seconds"] * 1e9, 3)) for w in lr for r in w["root_causes"]]
    sites = [(x["op"], x["waiting_rank"], x["causing_rank"]) for w in lr for x in w["sites"]]
    cp = {r["rank"]: round(r["seconds"] * 1e9) for r in rep["critical_path"].get("ranks", [])}
    check(got == [("Late Receiver (polling)", 1, "slow", 7000.0)] and sites == [("MPI_Test", 0, 1)] and cp == {0: 6100, 1: 15000},
          "polllr %s: a 7 us Late Receiver in the polling loop, rank 1's slow, the path crossing at the post (%s, %s, %s)"
          % (extra, got, sites, cp))
    if rc == 0:
        with h5py.File(os.path.join(out21, "merged.h5"), "r") as h:
            ws = [(int(w["waiter"]), int(w["causer"]), int(w["t_begin"]), int(w["t_end"])) for w in h["analysis"]["waits"][:]]
        check(ws == [(0, 1, 8000, 15000)], "polllr %s: merged.h5 has the wait from 8 to 15 us (%s)" % (extra, ws))
# the sender polled too (merge_make_runs pollsend): rank 1's Isend, after
# `slow`, lies 100 unsuccessful MPI_Test calls back when rank 0's
# completing Test comes; the streamed analysis keeps a run of such polls
# as one recent call, so both find `slow` (streamed, it had no cause)
run16 = make_run(maker, "pollsend", os.path.join(base, "run16"))
for extra in ((), ("--stream", "--outputs", "report")):
    rc, roots = root_causes(run16, os.path.join(base, "out16" + "".join(extra).replace(",", "")), extra)
    pk = "Late Sender (polling)"
    check(rc == 0 and roots.keys() == {pk} and roots[pk].keys() == {(1, "slow")} and
          abs(roots[pk][(1, "slow")] - 7000) < 1e-3,
          "pollsend %s: the 7 us Late Sender to rank 1's slow, 100 polls back (%s)" % (extra, roots))
# a Late Receiver in the Wait of an Isend (merge_make_runs isendlr): rank 1
# posts the receive 1.4 us late after `unpack` (1.5 us), a Barrier on
# MPI_COMM_SELF and `post` (25 ns); compared since both ranks' starts, as a
# blocking send's, it goes 1500 : 25 to unpack and post (own intervals,
# the Barrier ending rank 1's, put all of it on `post`)
run17 = make_run(maker, "isendlr", os.path.join(base, "run17"))
for extra in ((), ("--stream", "--outputs", "report")):
    rc, roots = root_causes(run17, os.path.join(base, "out17" + "".join(extra).replace(",", "")), extra)
    lr = roots.get("Late Receiver", {})
    want = {(1, "unpack"): 1400 * 1500 / 1525, (1, "post"): 1400 * 25 / 1525}
    check(rc == 0 and lr.keys() == want.keys() and all(abs(lr[k] - want[k]) < 1e-3 for k in want),
          "isendlr %s: the Wait's Late Receiver 1500:25 to unpack and post (%s)" % (extra, roots))
# the same without regions (LD_PRELOAD alone): the delay is outside every
# region, and the findings say how to see where
run9 = make_run(maker, "chain_bare", os.path.join(base, "run9"))
out9 = os.path.join(base, "out9")
rc, so, se = xsmerge(run9, "-o", out9, "-q")
rep = json.load(open(os.path.join(out9, "report.json"))) if rc == 0 else {"findings": [], "wait_states": []}
ls = [f for f in rep["findings"] if f["kind"] == "Late Sender"]
rcs = {(r["rank"], r["region"]) for w in rep["wait_states"] if w["kind"] == "Late Sender" for r in w["root_causes"]}
check(rc == 0 and ls and ls[0]["ranks"][0] == 0 and "outside every region" in ls[0]["recommendation"] and
      rcs == {(0, None), (1, None)},
      "chain_bare: Late Senders rooted outside every region on rank 0, with how to see where (%s, %s)" % (ls, rcs))
# a polling loop (2000 unsuccessful MPI_Test calls, 60 us on rank 0) is a
# finding of its own, in memory and streamed; the chain run has none
run10 = make_run(maker, "polling", os.path.join(base, "run10"))
for extra in ((), ("--stream", "--outputs", "report")):
    out10 = os.path.join(base, "out10" + "".join(extra).replace(",", ""))
    rc, so, se = xsmerge(run10, "-o", out10, "-q", *extra)
    rep = json.load(open(os.path.join(out10, "report.json"))) if rc == 0 else {"findings": []}
    pf = [f for f in rep["findings"] if f["kind"] == "Polling"]
    check(rc == 0 and len(pf) == 1 and abs(pf[0]["seconds_lost"] - 60e-6) < 1e-9 and pf[0]["ranks"] == [0] and
          "2000 calls" in pf[0]["message"] and "MPI_Test" in pf[0]["message"],
          "polling %s: one Polling finding of 60 us on rank 0 (%s)" % (extra, pf))
    # the Recv that follows the loop: of its polls, the last 1024 are kept
    # and 999 of those (30 ns each) came before the send at 80 us
    ls = [w for w in rep.get("wait_states", []) if w["kind"].startswith("Late Sender") and w["instances"]]
    check(len(ls) == 1 and ls[0]["kind"] == "Late Sender (polling)" and abs(ls[0]["seconds"] * 1e9 - 29970) < 1e-3,
          "polling %s: a 29.97 us Late Sender from the polls (%s)" % (extra, ls))
rep = json.load(open(os.path.join(base, "out8", "report.json")))
check(not [f for f in rep["findings"] if f["kind"] == "Polling"], "chain: no Polling finding")
# --from/--to: the report describes the window (merge_make_runs window,
# both ranks: main [1, 20] us holds step [2, 12] (setup [2, 3], compute
# [3.5, 4.5], a Barrier from 5 us on rank 0, 5.5 us on rank 1, to 6 us,
# compute [7, 11]) and step [13, 18] (compute [13.5, 14.5], [15, 17.5]);
# MPI_Init [0, 1], MPI_Finalize [20, 21]). With --from 4us --to 14us the
# trace keeps main, the steps and the compute across either edge whole;
# the report clips every interval to [4, 14] us: main 10 us (1 exclusive),
# step 8 + 1 = 9 us (9 - 5 of compute - the Barrier: 3 us exclusive on
# rank 0, 3.5 on rank 1), compute 0.5 + 4 + 0.5 = 5 us; each rank's wall
# time the window's 10 us (Init and Finalize lie outside it). It used to
# count the dropped `setup` and compute [15, 17.5] and the parts of the
# kept ones outside the window as `step`'s exclusive time (8 us on rank
# 0) and give main its whole 19 us.
run19 = make_run(maker, "window", os.path.join(base, "run19"))
US = 1e-6
want_regions = {"main": (1, 10, (1, 1)), "step": (2, 9, (3, 3.5)), "compute": (3, 5, (5, 5))}
for extra in ((), ("--stream", "--outputs", "report,h5")):
    out = os.path.join(base, "out19" + "".join(extra).replace(",", ""))
    rc, so, se = xsmerge(run19, "-o", out, "-q", "--from", "4us", "--to", "14us", *extra)
    check(rc == 0, "window %s: exit %d (%s)" % (extra, rc, se))
    if rc:
        continue
    rep = json.load(open(os.path.join(out, "report.json")))
    check(rep["job"]["analysis"] == "streamed", "window %s: one engine: %s" % (extra, rep["job"]["analysis"]))
    check(abs(rep["job"]["duration_s"] - 10 * US) < 1e-12, "window %s: duration %s, the window's 10 us" %
          (extra, rep["job"]["duration_s"]))
    got = {g["name"]: [(p["rank"], p["calls"], round(p["incl_s"] / US, 6), round(p["excl_s"] / US, 6))
                       for p in g["per_rank"]] for g in rep["regions"]}
    want = {n: [(r, c, incl, ex[r]) for r in (0, 1)] for n, (c, incl, ex) in want_regions.items()}
    check(got == want, "window %s: regions (rank, calls, incl us, excl us) %s == %s" % (extra, got, want))
    ranks = [(q["rank"], round(q["wall_s"] / US, 6), round(q["mpi_s"] / US, 6), round(q["compute_s"] / US, 6),
              round(q["start_s"] / US, 6), round(q["end_s"] / US, 6)) for q in rep["ranks"]]
    check(ranks == [(0, 10, 1, 9, 0, 10), (1, 10, 0.5, 9.5, 0, 10)],
          "window %s: ranks (wall, mpi, compute, start, end in us from the window's start) %s" % (extra, ranks))
    ops = [(o["op"], o["calls"], round(o["seconds"] / US, 6)) for o in rep["mpi"]]
    check(ops == [("MPI_Barrier", 2, 1.5)], "window %s: MPI operations inside the window %s" % (extra, ops))
    # the wait is the kept Barrier's own, found by its rows
    ws = [(w["kind"], w["instances"], round(w["seconds"] / US, 6),
           [(r["rank"], r["region"], round(r["seconds"] / US, 6)) for r in w["root_causes"]])
          for w in rep["wait_states"] if w["instances"]]
    check(ws == [("Wait at Barrier", 1, 0.5, [(1, "step", 0.5)])], "window %s: waits %s" % (extra, ws))
    check(abs(rep["critical_path"]["length_s"] - 10 * US) < 1e-12, "window %s: critical path %s" % (extra, rep["critical_path"]))
    with open(os.path.join(out, "flame.folded")) as f:
        flame = f.read().splitlines()
    check("rank 0;main;step 3" in flame and "rank 0;main;step;compute 5" in flame and
          not [l for l in flame if "setup" in l], "window %s: flame.folded %s" % (extra, flame))
    # the trace keeps the rows that overlap the window whole
    with h5py.File(os.path.join(out, "merged.h5"), "r") as h:
        strings = [x.decode() if isinstance(x, bytes) else x for x in h["strings"][:]]
        regs = sorted((int(r["rank"]), strings[int(r["name"])], int(r["t_begin"]), int(r["t_end"])) for r in h["regions"][:])
    check([x for x in regs if x[0] == 0] == [(0, "compute", 3500, 4500), (0, "compute", 7000, 11000),
                                             (0, "compute", 13500, 14500), (0, "main", 1000, 20000),
                                             (0, "step", 2000, 12000), (0, "step", 13000, 18000)],
          "window %s: merged.h5 keeps whole rows %s" % (extra, regs))
# Receives the collector numbered at completion (MPI_ANY_SOURCE / ANY_TAG
# posts carry seq 0) completed out of posting order: MPI gave each key's
# first posted receive the first message (16 bytes), so each message pairs
# with the receive whose completion got its bytes. The stream cannot renumber
# as it goes: it says so and merges in memory; when each receive completed
# in posting order (wildinorder) nothing changes and it streams.
for kind, first in (("wildorder", 1), ("wildinorder", 2)):
    run20 = make_run(maker, kind, os.path.join(base, kind))
    for extra in ((), ("--stream", "--outputs", "h5")):
        out = os.path.join(base, kind + "".join(extra))
        rc, so, se = xsmerge(run20, "-o", out, *extra)
        check(rc == 0, "%s %s: exit %d (%s)" % (kind, extra, rc, se))
        if rc:
            continue
        said = "posted with MPI_ANY_SOURCE or MPI_ANY_TAG after a receive posted later" in se
        check(said == (bool(extra) and kind == "wildorder"), "%s %s: the stream says whether it merges in memory: %s" %
              (kind, extra, se))
        with h5py.File(os.path.join(out, "merged.h5"), "r") as h:
            mpi = h["mpi"][:]
            got = sorted((int(x["tag"]), int(x["bytes"]), int(mpi[x["recv_row"]]["bytes_recv"]),
                          int(x["recv_post_row"]) >= 0) for x in h["messages"][:])
        want = [(t, b, b, t != 3 or b == 16) for t in range(first, 4) for b in (16, 32)]
        check(got == want, "%s %s: (tag, sent, received, posted by an Irecv) %s" % (kind, extra, got))
finish("merge_golden")

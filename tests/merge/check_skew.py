"""Clock test with injected skew and drift (merge_make_runs skew): rank 1's
clock runs 15 us late plus 20 ppm, beyond what its clock sample says, so
after interpolation messages from rank 1 arrive before they were sent and
barrier exits precede the last entry. The controlled logical clock must
remove every violation, keep each rank's event order, move events forward
only, and keep the intervals that follow a correction."""
import json
import os
import sys

import h5py
import numpy as np
from mergetest import check, finish, make_run, tmpdir, xsmerge

maker = sys.argv[1]
base = tmpdir()
run = make_run(maker, "skew", os.path.join(base, "run"))
out = os.path.join(base, "out")
rc, so, se = xsmerge(run, "-o", out, "-q", "--min-latency", "100ns")
check(rc == 0, "skew run merges (%s)" % se)
with h5py.File(os.path.join(out, "merged.h5"), "r") as h:
    before, after = int(h.attrs["clock_violations_before"]), int(h.attrs["clock_violations_after"])
    check(before > 0, "violations before > 0 (got %d)" % before)
    check(after == 0, "violations after == 0 (got %d)" % after)
    check(int(h.attrs["clock_max_correction_ns"]) > 0, "a correction was applied")
    mpi = h["mpi"][:]
    for m in h["messages"][:]:
        s, r = mpi[int(m["send_row"])], mpi[int(m["recv_row"])]
        check(int(r["t_end"]) >= int(s["t_begin"]) + 100, "receive ends >= send begin + min latency")
    for c in range(len(h["collectives"])):
        mem = [m for m in h["collective_members"][:] if int(m["coll"]) == c]
        last_enter = max(int(m["t_begin"]) for m in mem)
        check(all(int(m["t_end"]) >= last_enter for m in mem), "barrier %d: exits after last entry" % c)
    for r in (0, 1):
        rows = mpi[mpi["rank"] == r]
        b, e = rows["t_begin"].astype(np.int64), rows["t_end"].astype(np.int64)
        check(np.all(e >= b), "rank %d: intervals non-negative" % r)
        check(np.all(b[1:] >= e[:-1]), "rank %d: calls keep their order" % r)
    # rank 0 is never late: nothing on it moves backward, corrections are
    # forward only; rank 1 (the late clock) is never corrected at all
    ranks = h["ranks"][:]
    check(int(ranks[1]["correction_ns"]) == 0, "the late rank needs no correction")
    check(int(ranks[0]["correction_ns"]) > 0, "the early-looking receiver is corrected")
    # forward amortisation: the send that follows a corrected receive on
    # rank 0 keeps its length
    strings = [x.decode() if isinstance(x, bytes) else x for x in h["strings"][:]]
    send_id = strings.index("MPI_Send")
    rows = mpi[(mpi["rank"] == 0) & (mpi["op"] == send_id)]
    d = (rows["t_end"] - rows["t_begin"]).astype(np.int64)
    check(np.all(d >= 600), "no interval shrinks")
    check(np.count_nonzero(d == 600) >= len(d) - 2,
          "rank 0's sends after the first correction keep their 600 ns (%s)" % d)
rep = json.load(open(os.path.join(out, "report.json")))
check(rep.get("clock", {}).get("violations_after") == 0 and rep["clock"].get("violations_before") == before,
      "report.json clock section agrees")
# Without a minimum latency the logical clock ends a corrected receive at
# the very ns its send began; trace.json must still never show a message
# received before it was sent (a flow end is drawn inside its slice, one ns
# before the slice's end, which once put it before the send).
out0 = os.path.join(base, "out-latency0")
rc, so, se = xsmerge(run, "-o", out0, "-q")
check(rc == 0, "skew run merges without --min-latency (%s)" % se)
doc = json.load(open(os.path.join(out0, "trace.json")))
ev = doc["traceEvents"] if isinstance(doc, dict) else doc
starts = {e["id"]: e["ts"] for e in ev if e.get("ph") == "s" and e.get("cat") == "message"}
ends = {e["id"]: e["ts"] for e in ev if e.get("ph") == "f" and e.get("cat") == "message"}
check(starts and set(starts) == set(ends), "every message flow has both ends")
with h5py.File(os.path.join(out0, "merged.h5"), "r") as h:
    touching = sum(1 for m in h["messages"][:] if int(m["recv_end"]) == int(m["send_begin"]))
check(touching > 0, "some receive ends exactly when its send began (got %d)" % touching)
late = [i for i in starts if ends[i] < starts[i]]
check(not late, "trace.json: messages received before sent: %s" % late[:5])
finish("merge_clock_skew")

"""Checks the merged output of p2p_app (4 ranks) against what the program did."""
import json
import sys
from collections import Counter, defaultdict

out = sys.argv[1]
nranks = int(sys.argv[2])
doc = json.load(open(f"{out}/trace.json"))
ev = doc["traceEvents"] if isinstance(doc, dict) else doc

def fail(msg):
    print("check_trace:", msg)
    sys.exit(1)

names = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
if sorted(names) != list(range(nranks)):
    fail(f"process tracks {sorted(names)} != ranks 0..{nranks - 1}")
for r, n in names.items():
    if not n.startswith(f"rank {r} ("):
        fail(f"process {r} is named {n!r}")

calls = defaultdict(list)
for e in ev:
    if e["ph"] == "X" and e.get("cat") == "mpi":
        calls[(e["pid"], e["name"])].append(e)

for r in range(nranks):
    nxt, prv = (r + 1) % nranks, (r - 1) % nranks
    def one(op):
        c = calls[(r, op)]
        if len(c) != 1:
            fail(f"rank {r}: {len(c)} {op} calls, expected 1")
        return c[0]["args"]
    a = one("MPI_Send")
    if (a.get("peer"), a.get("tag"), a.get("bytes_sent")) != (nxt, 7, 8000):
        fail(f"rank {r}: MPI_Send args {a}")
    a = one("MPI_Recv")
    if (a.get("peer"), a.get("tag"), a.get("bytes_recv")) != (prv, 7, 8000):
        fail(f"rank {r}: MPI_Recv args {a}")
    a = one("MPI_Isend")
    if (a.get("peer"), a.get("tag"), a.get("bytes_sent")) != (nxt, 9, 40):
        fail(f"rank {r}: MPI_Isend args {a}")
    a = one("MPI_Irecv")
    if (a.get("peer"), a.get("tag")) != (prv, 9):
        fail(f"rank {r}: MPI_Irecv args {a}")
    if len(calls[(r, "MPI_Wait")]) != 2:
        fail(f"rank {r}: expected 2 MPI_Wait")
    for op in ("MPI_Barrier", "MPI_Allreduce", "MPI_Bcast", "MPI_Init", "MPI_Finalize"):
        one(op)
    if one("MPI_Allreduce").get("bytes_sent") != 8:
        fail(f"rank {r}: Allreduce bytes")

# Flows: one per message (ring + exchange), each receive after its send.
starts = {e["id"]: e for e in ev if e["ph"] == "s"}
ends = {e["id"]: e for e in ev if e["ph"] == "f"}
if len(starts) != 2 * nranks or set(starts) != set(ends):
    fail(f"{len(starts)} flow starts / {len(ends)} ends, expected {2 * nranks} matched")
for i, s in starts.items():
    f = ends[i]
    if f["ts"] < s["ts"]:
        fail(f"message {i} received at {f['ts']} before it was sent at {s['ts']}")
    if f["pid"] != (s["pid"] + 1) % nranks:
        fail(f"message {i} from rank {s['pid']} arrives at rank {f['pid']}")
counts = Counter(e["ph"] for e in ev)
print(f"check_trace: {len(names)} ranks, {counts['X']} slices, {len(starts)} messages matched, all received after sent")

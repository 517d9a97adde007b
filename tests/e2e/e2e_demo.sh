#!/usr/bin/env bash
# What `make demo` does, on a short run: the report names 4 ranks; with
# --format callgrind, the region halo (the function halo, which calls MPI)
# is placed in demo.c at its call sites' first line, MPI calls are not.
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$MPIEXEC" -np 4 --oversubscribe -x XSPROF_OUTPUT="$work/run" "$1" 20
"$XSMERGE" "$work/run" -o "$work/out" --format callgrind > "$work/summary.txt"
grep -q "4 ranks" "$work/summary.txt" || { echo "summary does not name 4 ranks:"; cat "$work/summary.txt"; exit 1; }
"$SYS_PYTHON" - "$work/out/report.json" "$DEMO_SRC" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "xsprof-report/1", r["schema"]
assert r["job"]["ranks"] == 4, r["job"]
assert sorted(x["rank"] for x in r["ranks"]) == [0, 1, 2, 3]
names = {x["name"] for x in r["regions"]}
assert {"solve", "step", "halo", "compute"} <= names, names
ops = {x["op"] for x in r["mpi"]}
assert {"MPI_Allreduce", "MPI_Isend", "MPI_Irecv", "MPI_Wait", "MPI_Bcast", "MPI_Barrier"} <= ops, ops
print("demo report: 4 ranks, regions", sorted(names))
import os
sys.path.insert(0, os.environ["CALLGRIND_OUT_DIR"])
import callgrind_out
place = {}  # function -> (file, its first line)
for (fl, fn), lines in callgrind_out.self_costs(os.path.join(os.path.dirname(sys.argv[1]), "callgrind.out")).items():
    place.setdefault(fn, (fl, min(lines)))
f, ln = place.get("halo", (None, 0))
assert f and f.endswith("/demo.c") and ln > 0, place
assert "MPI_" in open(sys.argv[2]).read().splitlines()[ln - 1], ln
assert place.get("MPI_Isend", (None,))[0] == "[xsprof regions]", place
print("callgrind.out: halo in demo.c at line", ln)
PY

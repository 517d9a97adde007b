#!/usr/bin/env bash
# What `make demo` does, on a short run: the report names 4 ranks.
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$MPIEXEC" -np 4 --oversubscribe -x XSPROF_OUTPUT="$work/run" "$1" 20
"$XSMERGE" "$work/run" -o "$work/out" > "$work/summary.txt"
grep -q "4 ranks" "$work/summary.txt" || { echo "summary does not name 4 ranks:"; cat "$work/summary.txt"; exit 1; }
"$SYS_PYTHON" - "$work/out/report.json" <<'PY'
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
PY

#!/usr/bin/env bash
# XSPROF_MEMORY=1 with libxsprof-memory.so preloaded: the report finds the
# planted leaks with their sizes and regions, and a high-water mark above them.
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$MPIEXEC" -np 2 --oversubscribe -x LD_PRELOAD="$XSPROF_BUILD/lib/libxsprof-memory.so" -x XSPROF_MEMORY=1 \
  -x XSPROF_OUTPUT="$work/run" "$1"
"$XSMERGE" "$work/run" -o "$work/out" --quiet
"$SYS_PYTHON" - "$work/out/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for row in r["ranks"]:
    rank, m = row["rank"], row["memory"]
    leaks = {(l["bytes"], l["region"]) for l in m["leak_candidates"]}
    want = {(123456 * (rank + 1), "setup"), (7777, "solve")}
    assert want <= leaks, (rank, want, leaks)
    assert m["peak_bytes"] >= 123456 * (rank + 1) + 7777, m
    assert m["allocs"] >= 104 and m["frees"] >= 102, m
    print(f"rank {rank}: {m['allocs']} allocations, peak {m['peak_bytes']} bytes, "
          f"{m['leaked_allocations']} leak candidates incl. the planted ones")
kinds = [f["kind"] for f in r["findings"]]
assert "Memory leak candidates" in kinds, kinds
PY

#!/usr/bin/env bash
# XSPROF_MEMORY=1 with libxsprof-memory.so preloaded: the report finds the
# planted leaks with their sizes and regions, and a high-water mark above them;
# the large one (at least XSPROF_MEMORY_STACK_BYTES, 64 KiB by default) with
# the stack that allocated it, the small one without, unless the threshold
# is lowered; in memory and --stream alike; and outside a schedule's active
# window too.
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=$(dirname "$(readlink -f "$0")")/leak_app.c
for min in default 4096; do
  env=()
  [ "$min" != default ] && env=(-x XSPROF_MEMORY_STACK_BYTES="$min")
  "$MPIEXEC" -np 2 --oversubscribe -x LD_PRELOAD="$XSPROF_BUILD/lib/libxsprof-memory.so" -x XSPROF_MEMORY=1 \
    "${env[@]}" -x XSPROF_OUTPUT="$work/run-$min" "$1"
  "$XSMERGE" "$work/run-$min" -o "$work/out-$min" --quiet
  "$XSMERGE" "$work/run-$min" -o "$work/out-$min-s" --stream --outputs report --quiet
  cmp "$work/out-$min/report.json" "$work/out-$min-s/report.json"
  "$SYS_PYTHON" - "$work/out-$min/report.json" "$min" "$src" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
small_stack = sys.argv[2] != "default"
src = open(sys.argv[3]).read().splitlines()
big_line = [i + 1 for i, l in enumerate(src) if "the large leak (e2e_memory.sh)" in l][0]
small_line = [i + 1 for i, l in enumerate(src) if "the small leak (e2e_memory.sh)" in l][0]
for row in r["ranks"]:
    rank, m = row["rank"], row["memory"]
    leaks = {(l["bytes"], l["region"]) for l in m["leak_candidates"]}
    want = {(123456 * (rank + 1), "setup"), (7777, "solve")}
    assert want <= leaks, (rank, want, leaks)
    stacks = {l["bytes"]: l["stack"] for l in m["leak_candidates"]}
    big, small = stacks[123456 * (rank + 1)], stacks[7777]
    # the allocating call first: make_buffer's malloc line, then main
    assert big and big[0] == f"make_buffer ({sys.argv[3]}:{big_line})" and big[1].startswith("main ("), big
    if small_stack:
        assert small and small[0] == f"main ({sys.argv[3]}:{small_line})", small
    else:
        assert small == [], small
    assert m["peak_bytes"] >= 123456 * (rank + 1) + 7777, m
    assert m["allocs"] >= 104 and m["frees"] >= 102, m
    print(f"rank {rank}: {m['allocs']} allocations, peak {m['peak_bytes']} bytes, "
          f"{m['leaked_allocations']} leak candidates incl. the planted ones")
kinds = [f["kind"] for f in r["findings"]]
assert "Memory leak candidates" in kinds, kinds
PY
done
grep -q "by make_buffer (" "$work/out-default/report.txt"
# a schedule whose active window never comes (no xsprof_step): the timeline
# is empty of memory, the memory figures still cover the run (issue 38)
"$MPIEXEC" -np 2 --oversubscribe -x LD_PRELOAD="$XSPROF_BUILD/lib/libxsprof-memory.so" -x XSPROF_MEMORY=1 \
  -x XSPROF_SCHEDULE=wait=2,active=1 -x XSPROF_LOG=error -x XSPROF_OUTPUT="$work/run-sched" "$1"
"$XSMERGE" "$work/run-sched" -o "$work/out-sched" --outputs json,report --quiet
if grep -q '"memory (host)"' "$work/out-sched/trace.json"; then
  echo "FAIL: memory drawn on the timeline outside the schedule's active window"; exit 1
fi
"$SYS_PYTHON" - "$work/out-sched/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for row in r["ranks"]:
    rank, m = row["rank"], row["memory"]
    big = [l for l in m["leak_candidates"] if l["bytes"] == 123456 * (rank + 1)]
    assert big and big[0]["stack"][0].startswith("make_buffer ("), (rank, m["leak_candidates"])
    assert m["peak_bytes"] >= 123456 * (rank + 1) + 7777, m
    print(f"rank {rank}, schedule never active: leak of {big[0]['bytes']} bytes by {big[0]['stack'][0]}")
PY

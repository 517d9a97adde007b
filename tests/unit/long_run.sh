#!/usr/bin/env bash
# >= 50 M events (25 M regions) with a 16 MiB buffer budget: the peak RSS of
# the whole process (recording and the conversion to HDF5) stays within the
# budget + 24 MiB of fixed overhead (libraries, HDF5, the converter's
# blocks), and every region is in the rank file or counted as dropped.
# $2: the build's sanitizers (XSPROF_SANITIZE), which have memory of their own.
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
budget_mb=16
fixed_mb=24
n=25000000
# Under ASan, its quarantine keeps up to 256 MiB of freed blocks (HDF5's
# churn) resident: that is ASan's memory, not the profiler's, so it is off
# here.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
# ASan's shadow (an eighth of every byte touched), redzones and its
# allocator's per-thread caches still add some: 36 MiB alone, up to 42.7
# MiB beside other tests (CI, stop 46), against 27 MiB uninstrumented.
case "${2:-}" in *address*) fixed_mb=$((fixed_mb + 8)) ;; esac
out=$(XSPROF_BUFFER_MB=$budget_mb XSPROF_OUTPUT="$work/run" "$1" $n)
echo "$out"
rss_kb=$(echo "$out" | sed -n 's/.*peak RSS \([0-9]*\) KiB/\1/p')
limit_kb=$(( (budget_mb + fixed_mb) * 1024 ))
[ "$rss_kb" -le "$limit_kb" ] || { echo "peak RSS $rss_kb KiB > budget + fixed overhead $limit_kb KiB"; exit 1; }
"$SYS_PYTHON" - "$work/run/rank-00000.h5" $n <<'PY'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
n = int(sys.argv[2])
rows = f["/events/regions"].shape[0]
dropped = int(f.attrs["dropped"])
print(f"rank file: {rows} regions, {dropped} dropped (of {n})")
assert rows + dropped == n, (rows, dropped, n)
PY
echo "long run: peak RSS $((rss_kb / 1024)) MiB <= $budget_mb MiB budget + $fixed_mb MiB"

#!/usr/bin/env bash
# Issue 2's end-to-end path: an MPI binary compiled without xsprof, run
# under mpirun with LD_PRELOAD, merged; the merged trace holds every rank,
# every call with its peer and bytes, every message matched and received
# after it was sent; the Perfetto file decodes; the output of the program
# is the same with and without xsprof.
set -euo pipefail
app=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
np=4
run() { "$MPIEXEC" -np $np --oversubscribe "$@"; }
run "$app" | sort > "$work/plain.txt"
run -x LD_PRELOAD="$XSPROF_MPI_LIB" -x XSPROF_OUTPUT="$work/run" "$app" | sort > "$work/profiled.txt"
diff -u "$work/plain.txt" "$work/profiled.txt" || { echo "program output changed under xsprof"; exit 1; }
for r in 0 1 2 3; do [ -s "$work/run/rank-0000$r.h5" ] || { echo "no rank file for rank $r"; exit 1; }; done
"$XSMERGE" "$work/run" -o "$work/out" --quiet
"$SYS_PYTHON" "$XSPROF_SOURCE/tests/e2e/check_trace.py" "$work/out" $np
protoc --decode_raw < "$work/out/trace.pftrace" > "$work/decoded.txt"
grep -q "rank 0 (" "$work/decoded.txt" || { echo "pftrace has no track named 'rank 0 (host)'"; exit 1; }
echo "e2e: program output identical, merged trace checked, pftrace decodes ($(wc -l < "$work/decoded.txt") lines)"

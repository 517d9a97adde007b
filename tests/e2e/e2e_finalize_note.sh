#!/usr/bin/env bash
# Issue 39: when finalize takes long, rank 0 says what it is doing, in one
# line, and no other rank does; a quick finalize says nothing. The hook
# XSPROF_TEST_FINALIZE_NOTE_MS=0 stands for a finalize past the deadline
# (2 s by default), which a small run on a test machine never reaches.
set -euo pipefail
app=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
np=4
run() { "$MPIEXEC" -np $np --oversubscribe -x LD_PRELOAD="$XSPROF_MPI_LIB" "$@" "$app" >/dev/null; }
run -x XSPROF_OUTPUT="$work/late" -x XSPROF_TEST_FINALIZE_NOTE_MS=0 2> "$work/late.err"
n=$(grep -c 'finalize: writing the rank files from the journals' "$work/late.err" || true)
[ "$n" = 1 ] || { echo "expected one finalize note from rank 0, got $n:"; cat "$work/late.err"; exit 1; }
grep -q "rank 0" "$work/late.err" || { echo "the note does not come from rank 0:"; cat "$work/late.err"; exit 1; }
grep -Eq "rank 0's: [0-9]+ MB" "$work/late.err" || { echo "the note does not give the journal's size:"; cat "$work/late.err"; exit 1; }
for r in 0 1 2 3; do [ -s "$work/late/rank-0000$r.h5" ] || { echo "no rank file for rank $r"; exit 1; }; done
run -x XSPROF_OUTPUT="$work/quick" 2> "$work/quick.err"
if grep -q 'finalize:' "$work/quick.err"; then echo "a quick finalize printed a note:"; cat "$work/quick.err"; exit 1; fi
for r in 0 1 2 3; do [ -s "$work/quick/rank-0000$r.h5" ] || { echo "no rank file for rank $r"; exit 1; }; done
echo "e2e.finalize_note: one line from rank 0 when finalize is late ($(cat "$work/late.err")), none otherwise"

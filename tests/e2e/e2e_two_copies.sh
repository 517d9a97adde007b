#!/usr/bin/env bash
# Two copies of the xsprof core in one process. A program linked with
# -lxsprof (for its regions) and run with libxsprof-mpi.so preloaded: the
# preloaded copy gets the regions and the MPI calls, the linked one stands
# down (before, its exit handler finalized the other a second time: an
# "API misuse" warning on every rank). Linked with -lxsprof before
# -lxsprof-mpi: the regions are recorded and each rank says, in one line,
# that MPI calls are not and how to link.
set -euo pipefail
app=$1 app_rev=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
np=2
run() { "$MPIEXEC" -np $np --oversubscribe "$@"; }
run -x LD_PRELOAD="$XSPROF_MPI_LIB" -x XSPROF_OUTPUT="$work/run" "$app" 2> "$work/err.txt" | sort > "$work/out.txt"
if grep -q "misuse\|called twice" "$work/err.txt"; then
    echo "preloaded over a linked copy: a warning the program did not cause:"; cat "$work/err.txt"; exit 1
fi
"$XSMERGE" "$work/run" -o "$work/m" --quiet
"$SYS_PYTHON" - "$work/m/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
regions = {x["name"] for x in r["regions"]}
mpi = {x["op"]: x["calls"] for x in r["mpi"]}
assert {"stencil", "halo"} <= regions, regions
assert mpi.get("MPI_Sendrecv") == 2 * 20 * 2, mpi
print("preloaded: regions %s, %d MPI_Sendrecv calls" % (sorted(regions), mpi["MPI_Sendrecv"]))
PY
run -x XSPROF_OUTPUT="$work/rev" "$app_rev" 2> "$work/err_rev.txt" | sort > "$work/out_rev.txt"
diff -u "$work/out.txt" "$work/out_rev.txt" || { echo "program output differs"; exit 1; }
n=$(grep -c "libxsprof.so was loaded before libxsprof-mpi.so: MPI calls are not recorded" "$work/err_rev.txt" || true)
[ "$n" = $np ] || { echo "expected one warning per rank, got $n:"; cat "$work/err_rev.txt"; exit 1; }
"$XSMERGE" "$work/rev" -o "$work/mr" --quiet
"$SYS_PYTHON" - "$work/mr/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
regions = {x["name"] for x in r["regions"]}
assert {"stencil", "halo"} <= regions, regions
print("linked before libxsprof-mpi: regions %s, one warning per rank" % sorted(regions))
PY

#!/bin/sh
# h5dump (hdf5-tools) reads the whole round-trip rank file, data included,
# and sees the format attribute and every table.
# usage: check_h5dump.sh RANK_FILE
set -e
out=$(h5dump "$1") || { echo "check_h5dump: h5dump failed on $1"; exit 1; }
for want in '"xsprof-rank"' 'DATASET "regions"' 'DATASET "args"' 'DATASET "mpi"' 'DATASET "gpu"' \
            'DATASET "memory"' 'DATASET "samples"' 'DATASET "strings"' 'DATASET "comm_members"' \
            'DATASET "metadata"' 'DATASET "topology"' 'DATASET "threads"' 'DATASET "comms"' \
            'DATASET "instants"' 'DATASET "counters"' '"CLOCK_MONOTONIC_RAW"'; do
  case "$out" in
    *"$want"*) ;;
    *) echo "check_h5dump: $want missing from h5dump output"; exit 1 ;;
  esac
done
echo "check_h5dump: all checks passed"

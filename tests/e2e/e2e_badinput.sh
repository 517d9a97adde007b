#!/usr/bin/env bash
# xsmerge on a missing directory, an empty directory and a non-HDF5 rank
# file: exit 1, one line on stderr naming the path, no output directory.
set -uo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
check() { # name, run dir
  "$XSMERGE" "$2" -o "$work/out-$1" > "$work/$1.out" 2> "$work/$1.err"
  rc=$?
  if [ $rc -ne 1 ]; then echo "$1: exit $rc, expected 1"; cat "$work/$1.err"; exit 1; fi
  if [ "$(wc -l < "$work/$1.err")" -ne 1 ]; then echo "$1: expected one error line:"; cat "$work/$1.err"; exit 1; fi
  grep -qF "$3" "$work/$1.err" || { echo "$1: error does not name $3:"; cat "$work/$1.err"; exit 1; }
  if [ -e "$work/out-$1/report.json" ]; then echo "$1: left an output behind"; exit 1; fi
  echo "$1: $(cat "$work/$1.err")"
}
check missing "$work/does-not-exist" "$work/does-not-exist"
mkdir "$work/empty"
check empty "$work/empty" "$work/empty"
mkdir "$work/junk"
echo "this is not HDF5" > "$work/junk/rank-00000.h5"
check junk "$work/junk" "$work/junk/rank-00000.h5"

#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build (tests/fuzz, XSPROF_FUZZ=ON,
# clang, ASan+UBSan) for a bounded time, two at a time (2 cores), starting
# from the checked-in seed corpus (copied: the corpus in the tree is never
# modified). Fails when a target reports a crash, a leak, a sanitizer error,
# a timeout (an input that takes over 25 s) or an out-of-memory (2 GB).
# Prints the executions and the corpus growth of each target.
# usage: fuzz.sh FUZZ_BUILD_DIR SECONDS WORK_DIR
# Findings are kept in WORK_DIR/<target>/ (crash-*, leak-*, timeout-*, oom-*):
# replay one with  FUZZ_BUILD_DIR/bin/fuzz_<target> FILE
set -u
build=$1 secs=$2 work=$3
src=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work"
mkdir -p "$work"
targets=$(awk '{print $1}' "$build/tests/fuzz/fuzz_targets.txt")
deep=$(awk '$2 == "deep" {print $1}' "$build/tests/fuzz/fuzz_targets.txt")
# the targets of whole files get all of secs, the parsers of short strings a
# third (tests/fuzz/CMakeLists.txt)
secs_of() { if printf '%s\n' $deep | grep -qx "$1"; then echo "$secs"; else echo $(((secs + 2) / 3)); fi; }
# The fuzzers link core: keep its journal, CUPTI probing and warnings out.
export XSPROF_OUTPUT="$work/xsprof-run" XSPROF_LOG=off XSPROF_GPU=0
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0:allocator_may_return_null=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="suppressions=$src/tests/ci/lsan.supp:print_suppressions=0"

run_one() {
  local t=$1 d="$work/$1"
  mkdir -p "$d/corpus"
  cp "$src/tests/fuzz/corpus/$t/"* "$d/corpus/"
  local seeds
  seeds=$(ls "$d/corpus" | wc -l)
  (cd "$d" && "$build/bin/fuzz_$t" -max_total_time="$(secs_of "$t")" -timeout=25 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$d/" "$d/corpus" >"$d/log" 2>&1)
  echo $? >"$d/rc"
  echo "$seeds" >"$d/seeds"
}

running=0
for t in $targets; do
  run_one "$t" &
  running=$((running + 1))
  if [ $running -ge 2 ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait

status=0
total=0
for t in $targets; do
  d="$work/$t"
  rc=$(cat "$d/rc")
  execs=$(awk '/stat::number_of_executed_units/ {print $NF}' "$d/log" | tail -1)
  execs=${execs:-0}
  total=$((total + execs))
  cov=$(grep -Eo 'cov: [0-9]+' "$d/log" | tail -1 | awk '{print $2}')
  found=$(ls "$d" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' | head -5)
  printf 'fuzz %-12s %10s execs in %s s, corpus %s -> %s inputs, coverage %s edges, rc %s\n' "$t" "$execs" "$(secs_of "$t")" \
    "$(cat "$d/seeds")" "$(ls "$d/corpus" | wc -l)" "${cov:-?}" "$rc"
  if [ "$rc" != 0 ] || [ -n "$found" ]; then
    status=1
    echo "FAIL fuzz_$t: $(grep -E 'ERROR:|runtime error:|SUMMARY:' "$d/log" | head -3 | tr '\n' ' ')"
    for f in $found; do echo "  finding: $d/$f"; done
  fi
done
echo "fuzz total: $total execs"
exit $status

#!/usr/bin/env bash
# Everything CI runs after `make test` (.ci/run, `make check-all`): the suite
# again under sanitizers, coverage, fuzzing, with a summary of the figures.
# Installs nothing: it needs only what `make test` (Makefile PKGS) installed
# (cmake, gcc, clang with libclang-rt, gcovr, Open MPI, HDF5, python3-h5py).
#
# Stages (each in its own build directory under build-ci/, built -j$JOBS):
#   compilers clang -O3 (every target, -Werror, then the unit tests) and gcc
#             -O3 (every target, -Werror): warnings the default gcc -O2
#             build does not see.
#   asan      gcc, -DXSPROF_SANITIZE=address,undefined (halt on the first
#             error, -fno-sanitize-recover=all), the WHOLE CTest suite with
#             detect_leaks=1. Suppressions: tests/ci/lsan.supp, every entry
#             with its reason (Open MPI's and HDF5's own leaks, gfortran's
#             SAVEd main-program arrays); nothing of xsprof is suppressed.
#             Open MPI's and hwloc's plugins stay loaded in the ASan build
#             (cmake/asan_keep_plugins.c), so their leak stacks stay
#             matchable and LeakSanitizer's check at exit stays fast.
#             Preloading: tests preload libxsprof-mpi.so (ASan-built here)
#             into programs. ASan insists that its runtime comes first in
#             the library list; verify_asan_link_order=0 lifts that check,
#             which is sound for the programs built in this tree (they link
#             libasan themselves, and it precedes libc in symbol lookup) and
#             for Python (mpi4py; ASan then sees xsprof's accesses but not
#             the interpreter's heap). The fault matrix
#             (tests/reliability/fault_matrix.sh) preloads the runtime
#             explicitly first, as a user would for an uninstrumented binary.
#   tsan      gcc, -DXSPROF_SANITIZE=thread, the threading tests
#             (ctest -L threads: core.threads, reliability.threads.exact and
#             .toggle - the real journal, writer thread and HDF5 sink - and
#             every other test labelled `threads`), plus the MPI tests named
#             in CHECK_TSAN_MPI_TESTS (mpi_thread_multiple). Must be
#             TSan-clean; tests/ci/tsan.supp covers Open MPI's own code only.
#   coverage  gcc, -DXSPROF_COVERAGE=ON (-O0 --coverage), the whole suite,
#             then gcovr: line coverage per module (core io merge mpi
#             pmpi_wrappers gpu; sources in the tree, generated wrappers
#             excluded). CHECK_COVERAGE_TARGET (85) is the issue's target for
#             core, io, merge and mpi: modules below it are marked; with
#             CHECK_COVERAGE_GATE=1 they fail the stage.
#   fuzz      clang, ASan+UBSan+libFuzzer (-DXSPROF_FUZZ=ON), every target
#             of tests/fuzz for CHECK_FUZZ_SECONDS (45) each, two at a time;
#             fails on any crash, leak, sanitizer report, timeout or OOM
#             (tests/ci/fuzz.sh).
# Environment: JOBS (2), CHECK_STAGES ("compilers asan tsan coverage fuzz"),
# CHECK_BUILD_ROOT (build-ci), CHECK_FUZZ_SECONDS, CHECK_COVERAGE_TARGET,
# CHECK_COVERAGE_GATE, CHECK_TSAN_MPI_TESTS. Exit status 0 only when every stage passed; every
# stage runs even when an earlier one failed, so the log has all figures.
set -u
cd "$(dirname "$0")/../.."
SRC=$PWD
JOBS=${JOBS:-2}
ROOT=${CHECK_BUILD_ROOT:-$SRC/build-ci}
STAGES=${CHECK_STAGES:-compilers asan tsan coverage fuzz}
FUZZ_SECONDS=${CHECK_FUZZ_SECONDS:-45}
COV_TARGET=${CHECK_COVERAGE_TARGET:-85}
COV_GATE=${CHECK_COVERAGE_GATE:-0}
TSAN_MPI_TESTS=${CHECK_TSAN_MPI_TESTS:-mpi_thread_multiple}
mkdir -p "$ROOT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

SUMMARY="$ROOT/summary.txt"
: >"$SUMMARY"
overall=0
note() { echo "$*" | tee -a "$SUMMARY"; }

# configure_build DIR cmake-args... : configure and build everything (-k so
# one broken target does not hide the others' results). Returns 1 when
# configuring failed (nothing to test), 2 when some targets did not build
# (the stage fails, but the tests of what built still run).
configure_build() {
  local dir=$1
  shift
  cmake -S "$SRC" -B "$dir" "$@" >"$dir.configure.log" 2>&1 || {
    tail -20 "$dir.configure.log"
    note "  configure failed: $dir.configure.log"
    return 1
  }
  cmake --build "$dir" -j"$JOBS" -- -k >"$dir.build.log" 2>&1 || {
    grep -E 'error|Error' "$dir.build.log" | head -20
    note "  build failed for some targets (their tests fail or do not run): $dir.build.log"
    return 2
  }
}

# run_ctest DIR LABEL ctest-args... : runs ctest, records "passed/total".
run_ctest() {
  local dir=$1 label=$2
  shift 2
  (cd "$dir" && ctest --output-on-failure -j"$JOBS" --timeout 900 "$@") >"$dir.ctest.log" 2>&1
  local rc=$?
  grep -E '^ *[0-9]+/[0-9]+ Test|tests passed|\(Failed\)|\(Timeout\)|\(Subprocess|\*\*\*' "$dir.ctest.log" |
    grep -vE 'Passed' | tail -40
  local line
  line=$(grep -E 'tests passed' "$dir.ctest.log" | tail -1)
  note "  $label: ${line:-no tests ran}"
  if [ $rc != 0 ]; then
    # ctest lists skipped tests (not run on purpose) beside the failed ones.
    grep -E '^\s+[0-9]+ - ' "$dir.ctest.log" |
      sed -E '/\(Skipped\)$/s/^/    skipped: /; /^    skipped: /!s/^/    failed: /' | tee -a "$SUMMARY"
  fi
  return $rc
}

# asan_ctest DIR LABEL ctest-args... : run_ctest with the sanitizers' options.
asan_ctest() {
  ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0:verify_asan_link_order=0:fast_unwind_on_malloc=0" \
    LSAN_OPTIONS="suppressions=$SRC/tests/ci/lsan.supp:print_suppressions=0" \
    UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    run_ctest "$@"
}

stage_asan() {
  local dir="$ROOT/asan" rc built
  configure_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXSPROF_SANITIZE=address,undefined
  built=$?
  [ $built = 1 ] && return 1
  rc=0
  # the two comparisons with Scalasca's wait states run in the suite: under
  # ASan their time is LAMMPS and hpcc under the ASan runtime (45 and 31 s,
  # 211 and 83 s beside another heavy test); the collector in a real
  # application stays sanitized by e2e.hpcc, the OTF2 writer they drive by
  # otf2_full, otf2_gpu and otf2_crash
  asan_ctest "$dir" "ASan+UBSan suite" -E '^otf2_scalasca_' || rc=1
  # LeakSanitizer's own stop-the-world tracer sometimes dies at a process's
  # exit ("Tracer caught signal 11", google/sanitizers#1353): a crash of the
  # checker, not a leak or an error of the test (once in 166 MPI tests of one
  # run, 0 of 40 reruns of that test under load). Only then, and only the
  # tests that failed, run once more; a real failure fails again, and the
  # summary names every rerun.
  if [ $rc != 0 ] && grep -q 'Tracer caught signal' "$dir.ctest.log"; then
    cp "$dir.ctest.log" "$dir.ctest-first.log"
    note "  LeakSanitizer's tracer crashed (log: $dir.ctest-first.log); the failed tests once more:"
    rc=0
    asan_ctest "$dir" "ASan+UBSan rerun of the failed tests" --rerun-failed || rc=1
  fi
  [ $built = 0 ] || rc=1
  return $rc
}

stage_tsan() {
  local dir="$ROOT/tsan" rc n
  configure_build "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXSPROF_SANITIZE=thread
  rc=$?
  [ $rc = 1 ] && return 1
  n=$(cd "$dir" && ctest -N -L threads | awk '/Total Tests:/ {print $3}')
  if [ "${n:-0}" = 0 ]; then
    note "  TSan: no test labelled threads"
    return 1
  fi
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:report_signal_unsafe=1:suppressions=$SRC/tests/ci/tsan.supp"
  run_ctest "$dir" "TSan threads tests" -L threads || rc=1
  # MPI_THREAD_MULTIPLE programs (the guarantee says TSan-clean) until the
  # MPI tests carry the `threads` label themselves.
  local t
  for t in $TSAN_MPI_TESTS; do
    if (cd "$dir" && ctest -N -R "^$t\$" | grep -q 'Total Tests: 1'); then
      mv "$dir.ctest.log" "$dir.ctest-threads.log"
      run_ctest "$dir" "TSan $t" -R "^$t\$" || rc=1
      cat "$dir.ctest-threads.log" >>"$dir.ctest.log"
    fi
  done
  unset TSAN_OPTIONS
  return $rc
}

stage_compilers() {
  # The warning set differs with compiler and optimisation level (gcc -O3
  # sees format truncation that -O2 does not; clang has its own): every
  # target must build -Werror with clang and with gcc's Release flags, and
  # the clang build passes the unit tests (codegen differences: a malloc/
  # free pair clang removed once made a test measure nothing).
  local rc=0 r
  CC=clang CXX=clang++ configure_build "$ROOT/clang" -DCMAKE_BUILD_TYPE=Release
  r=$?
  [ $r != 0 ] && rc=1
  [ $r != 1 ] && { run_ctest "$ROOT/clang" "clang -O3 unit tests" -L unit || rc=1; }
  CC=gcc CXX=g++ configure_build "$ROOT/gcc-release" -DCMAKE_BUILD_TYPE=Release || rc=1
  [ $rc = 0 ] && note "  gcc -O3 and clang -O3: every target builds with -Werror"
  return $rc
}

stage_coverage() {
  local dir="$ROOT/cov"
  # Atomic counter updates: the suite is multi-threaded, and racing
  # increments give gcov negative counts that gcovr cannot parse.
  configure_build "$dir" -DCMAKE_BUILD_TYPE=Debug -DXSPROF_COVERAGE=ON -DCMAKE_C_FLAGS=-fprofile-update=atomic \
    -DCMAKE_CXX_FLAGS=-fprofile-update=atomic
  local rc=$?
  [ $rc = 1 ] && return 1
  find "$dir" -name '*.gcda' -delete
  # the real applications (hpcc, LAMMPS under Scalasca's comparison: 150 s
  # of the stage's tests) run in the suite and under ASan; the lines they
  # reach are the collector's and the merge's, which the rest reach too
  run_ctest "$dir" "coverage suite" -E '^(e2e\.hpcc|otf2_scalasca_lammps|otf2_scalasca_hpcc)$' || rc=1
  # Serial gcovr: gcovr 5.2 with -j hangs when a worker hits a parse error.
  timeout 1200 gcovr -r "$SRC" --object-directory "$dir" --gcov-ignore-parse-errors -e "$SRC/tests/" \
    -e "$SRC/benchmarks/" -e "$SRC/examples/" --json-summary "$dir/coverage.json" >"$dir.gcovr.log" 2>&1 || {
    # gcovr 5.2 (Debian 12) asserts in merge_function when two sources share
    # a basename (merge/util.c, merge/analyze/util.c): read gcov's own JSON.
    note "  gcovr failed ($(grep -E 'Error|AssertionError' "$dir.gcovr.log" | tail -1)); line counts from gcov --json-format"
    /usr/bin/python3 "$SRC/tests/ci/gcov_lines.py" "$dir" "$SRC" "$dir/coverage.json" tests benchmarks examples ||
      return 1
  }
  /usr/bin/python3 "$SRC/tests/ci/coverage_summary.py" "$dir/coverage.json" "$COV_TARGET" core io merge mpi \
    >"$dir.summary" 2>&1
  local crc=$?
  sed 's/^/  /' "$dir.summary" | tee -a "$SUMMARY"
  [ "$COV_GATE" = 1 ] && [ $crc != 0 ] && rc=1
  return $rc
}

stage_fuzz() {
  local dir="$ROOT/fuzz"
  mkdir -p "$dir"
  # libFuzzer and clang's sanitizer runtimes come with libclang-rt-14-dev,
  # only a Recommends of Debian's clang (make deps installs without them).
  if ! printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return d && n; }\n' |
    clang -x c - -fsanitize=fuzzer,address,undefined -o "$dir/probe" >"$dir.probe.log" 2>&1; then
    note "  clang cannot link -fsanitize=fuzzer,address,undefined: install libclang-rt-14-dev ($dir.probe.log)"
    return 1
  fi
  CC=clang CXX=clang++ cmake -S "$SRC" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DXSPROF_SANITIZE=address,undefined -DXSPROF_FUZZ=ON -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link \
    >"$dir.configure.log" 2>&1 || {
    tail -20 "$dir.configure.log"
    return 1
  }
  local targets
  targets=$(awk '{print "fuzz_" $1}' "$dir/tests/fuzz/fuzz_targets.txt")
  # Only the fuzz targets: the rest of a clang ASan tree is built elsewhere.
  cmake --build "$dir" -j"$JOBS" --target $targets -- -k >"$dir.build.log" 2>&1 || {
    grep -E 'error' "$dir.build.log" | head -20
    return 1
  }
  bash "$SRC/tests/ci/fuzz.sh" "$dir" "$FUZZ_SECONDS" "$dir/work" >"$dir.fuzz.log" 2>&1
  local rc=$?
  grep -E '^(fuzz |FAIL|  finding)' "$dir.fuzz.log" | sed 's/^/  /' | tee -a "$SUMMARY"
  return $rc
}

declare -A took res
start_all=$(date +%s)
for s in $STAGES; do
  echo
  echo "===== check-all: $s ($(date -u +%H:%M:%S) UTC)"
  echo "== $s" >>"$SUMMARY"
  t0=$(date +%s)
  "stage_$s"
  rc=$?
  took[$s]=$(($(date +%s) - t0))
  if [ $rc = 0 ]; then res[$s]=passed; else res[$s]=FAILED; overall=1; fi
  echo "===== check-all: $s ${res[$s]} in ${took[$s]} s"
done

echo
echo "================ check-all summary ================"
cat "$SUMMARY"
echo "---- stage times"
for s in $STAGES; do
  printf '  %-10s %-7s %5d s\n' "$s" "${res[$s]}" "${took[$s]}"
done
printf '  %-10s %-7s %5d s\n' total "$([ $overall = 0 ] && echo passed || echo FAILED)" $(($(date +%s) - start_all))
echo "logs: $ROOT/<stage>.{configure,build,ctest,fuzz}.log"
exit $overall

#!/usr/bin/env bash
# One case of the crash and fault matrix (tests/reliability/CMakeLists.txt
# registers one CTest test per case). A 4-rank job of fault_app runs twice
# under mpiexec: without xsprof, then with libxsprof-mpi.so preloaded and
# XSPROF_OUTPUT set. The case passes when
#   1. the exit status of the job is the same with and without xsprof, and
#      the application did the same work (same progress on every rank);
#   2. the run directory holds, for every rank, exactly the "fault.iter"
#      regions the application completed before the fault, with a label for
#      how the rank ended (fault_check, through the io reader);
#   3. `xsmerge --partial RUN -o OUT` succeeds and OUT (report.json,
#      merged.h5) shows every rank with the same regions and labels
#      (merged_check.py);
#   plus the case's own checks (warnings, a full disk really filled, ...).
#
# usage: fault_matrix.sh CASE FAULT_APP FAULT_CHECK WORK_DIR
# CASE: segv abort kill9 term exit3 unwritable diskfull
# Environment (set by xsprof_add_test): MPIEXEC XSPROF_MPI_LIB XSMERGE SYS_PYTHON
set -u
case_=$1 app=$2 check=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
NP=4
N=20
py=${SYS_PYTHON:-/usr/bin/python3}
status=0
fail() {
  echo "FAIL: $*"
  status=1
}
for v in MPIEXEC XSPROF_MPI_LIB XSMERGE; do
  if [ -z "${!v:-}" ]; then
    echo "FAIL: $v is not set (run through ctest)"
    exit 1
  fi
done
[ -f "$XSPROF_MPI_LIB" ] || { echo "FAIL: $XSPROF_MPI_LIB is missing"; exit 1; }

mounted=
cleanup() {
  if [ -n "$mounted" ]; then
    umount "$mounted" 2>/dev/null || umount -l "$mounted" 2>/dev/null
  fi
}
trap cleanup EXIT
if mountpoint -q "$work/mnt" 2>/dev/null; then umount -l "$work/mnt"; fi
rm -rf "$work"
mkdir -p "$work"
# Killed ranks cannot remove Open MPI's shared-memory segments: keep them in
# the work directory (removed with it) instead of piling up in /dev/shm.
export OMPI_MCA_btl_vader_backing_directory="$work"

# A sanitizer-built libxsprof-mpi.so preloaded into an uninstrumented
# program (fault_app): the runtime comes in as the library's dependency and
# ASan is told not to insist on being first (verify_asan_link_order=0).
# Preloading the runtime itself in front would let other libraries'
# constructors (p11-kit through HDF5's libcurl) run before the runtime is up,
# which leaves glibc's locale lock unbalanced and hangs the process at exit.
san=$(ldd "$XSPROF_MPI_LIB" | awk '$1 ~ /^lib(asan|tsan)\.so/ {print $3}' | head -1)
PRELOAD="$XSPROF_MPI_LIB"
if [ -n "$san" ]; then
  # The sanitizer must not turn the application's own fault into a report
  # of its own (exit status 1 instead of the signal): leave fatal signals
  # to the application, xsprof and Open MPI, as in a normal build.
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:handle_segv=0:handle_abort=0:handle_sigbus=0:handle_sigfpe=0"
  # exit(3) without MPI_Finalize leaves Open MPI's progress threads running
  # while LeakSanitizer stops the world at exit; its tracer then sometimes
  # faults ("Tracer caught signal 11") and exits 1 in place of the
  # application's 3. A job that skips MPI_Finalize leaks by definition, so
  # leak checking says nothing here: turn it off for this case only.
  if [ "$case_" = exit3 ]; then
    export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
  fi
fi

# run_job LABEL PROGRESS_DIR MODE NREGIONS [mpiexec options...]
# Sets rc; output in $work/LABEL.log.
run_job() {
  local label=$1 prog=$2 mode=$3 n=$4
  shift 4
  mkdir -p "$prog"
  local log="$work/$label.log" hung=0
  if [ "$mode" = term ]; then
    "$MPIEXEC" -np $NP --oversubscribe "$@" "$app" term "$prog" "$n" >"$log" 2>&1 &
    local pid=$! i=0
    while [ ! -e "$prog/ready" ] && kill -0 $pid 2>/dev/null && [ $i -lt 1200 ]; do
      sleep 0.1
      i=$((i + 1))
    done
    [ -e "$prog/ready" ] || fail "$label: the job never got ready for SIGTERM"
    # As a batch system at the time limit: SIGTERM to the launcher.
    kill -TERM $pid
    i=0
    while kill -0 $pid 2>/dev/null && [ $i -lt 1200 ]; do
      sleep 0.1
      i=$((i + 1))
    done
    if kill -0 $pid 2>/dev/null; then
      hung=1
      fail "$label: the job did not end within 120 s of SIGTERM"
      kill -KILL $pid
    fi
    wait $pid
    rc=$?
  else
    # --verbose: a timeout is told apart from an exit status of 124/137
    # that the job itself may produce (137: a rank killed by SIGKILL).
    timeout --verbose -k 10 120 "$MPIEXEC" -np $NP --oversubscribe "$@" "$app" "$mode" "$prog" "$n" >"$log" 2>&1
    rc=$?
    if grep -q '^timeout: sending signal' "$log"; then
      hung=1
      fail "$label: the job hung (killed after 120 s)"
    fi
  fi
  # A hung rank outlives its killed launcher: end exactly this job's ranks
  # (their command line holds this test's own progress directory). A rank
  # the launcher killed may still be exiting as it returns (seen once in CI
  # under load: alive at the first look, gone at the second), so a rank
  # counts as hung when it is still there 10 s later.
  i=0
  while pgrep -f -- "$app $mode $prog " >/dev/null && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  if pgrep -f -- "$app $mode $prog " >/dev/null; then
    [ $hung = 1 ] || fail "$label: ranks still alive after the launcher exited"
    echo "ranks still alive (hung): $(pgrep -f -- "$app $mode $prog " | tr '\n' ' ')"
    pkill -KILL -f -- "$app $mode $prog "
  fi
  echo "--- $label: exit status $rc"
  # A failure inside xsprof is one warning line, never a library's own
  # diagnostics (an HDF5 error stack, HDF5's exit-time messages).
  if grep -E '^HDF5|HDF5-DIAG' "$log" | head -3 | grep -q .; then
    fail "$label: HDF5 diagnostics on the application's stderr:"
    grep -E '^HDF5|HDF5-DIAG' "$log" | head -3
  fi
  grep -E '^(fault_app|xsprof\[)' "$log" | grep -v 'GPU collection disabled' | sort | head -20
}

# compare_runs: same exit status, same progress on every rank.
compare_runs() {
  [ "$rc_plain" = "$rc_x" ] || fail "exit status $rc_x with xsprof, $rc_plain without"
  for ((r = 0; r < NP; r++)); do
    a=$(cat "$work/progress-plain/rank-$r" 2>/dev/null | tr -d ' ')
    b=$(cat "$work/progress-xsprof/rank-$r" 2>/dev/null | tr -d ' ')
    [ -n "$a" ] && [ "$a" = "$b" ] || fail "rank $r completed '$b' regions with xsprof, '$a' without"
  done
}

check_data() {
  echo "--- rank data (io reader)"
  "$check" "$1" "$work/progress-xsprof" "$work/summary.json" "${@:2}" || fail "rank data"
}

check_merge() {
  echo "--- xsmerge --partial"
  if [ ! -x "$XSMERGE" ]; then
    fail "$XSMERGE is missing"
    return
  fi
  "$XSMERGE" --partial "$1" -o "$work/merged" >"$work/xsmerge.log" 2>&1
  local mrc=$?
  grep -E '^xsmerge: (note|warning|error)|^xsmerge: [0-9]+ ranks' "$work/xsmerge.log" | head -20
  if [ $mrc != 0 ]; then
    fail "xsmerge --partial exited with $mrc"
    tail -5 "$work/xsmerge.log"
    return
  fi
  "$py" "$here/merged_check.py" "$work/summary.json" "$work/merged" ${2:+"$2"} || fail "merged output"
}

run="$work/run"
xs=(-x "LD_PRELOAD=$PRELOAD" -x "XSPROF_OUTPUT=$run")
case $case_ in
segv | abort | kill9 | term | exit3)
  run_job plain "$work/progress-plain" "$case_" $N
  rc_plain=$rc
  run_job xsprof "$work/progress-xsprof" "$case_" $N "${xs[@]}"
  rc_x=$rc
  compare_runs
  others="t:SIGTERM|killed"
  case $case_ in
  segv) specs=("$others" "t:SIGSEGV|killed" "$others" "$others") ;;
  abort) specs=("$others" "t:MPI_Abort (errorcode 7)" "$others" "$others") ;;
  kill9) specs=("$others" "t:killed" "$others" "$others") ;;
  term) specs=("$others" "$others" "$others" "$others") ;;
  exit3) specs=("t:exit" "t:exit|SIGTERM|killed" "t:exit|SIGTERM|killed" "t:exit|SIGTERM|killed") ;;
  esac
  [ "$case_" = exit3 ] && [ "$rc_plain" != 3 ] && fail "exit(3) gave exit status $rc_plain without xsprof"
  check_data "$run" "${specs[@]}"
  check_merge "$run" $([ "$case_" = abort ] && echo 1)
  ;;
unwritable)
  # Root ignores permission bits, so use what fails for root too: (a) an
  # existing run directory on a read-only mount (when mounting is allowed),
  # (b) a run directory below a regular file.
  targets=()
  mkdir -p "$work/mnt"
  if mount -t tmpfs -o size=1m tmpfs "$work/mnt" 2>/dev/null; then
    mounted="$work/mnt"
    mkdir "$work/mnt/run" && mount -o remount,ro "$work/mnt" && targets+=("$work/mnt/run")
  else
    echo "note: cannot mount a tmpfs here; testing the file-below-a-directory case only"
  fi
  : >"$work/blocker"
  targets+=("$work/blocker/run")
  run_job plain "$work/progress-plain" finish $N
  rc_plain=$rc
  for t in "${targets[@]}"; do
    echo "=== XSPROF_OUTPUT=$t"
    rm -rf "$work/progress-xsprof"
    run_job xsprof "$work/progress-xsprof" finish $N -x "LD_PRELOAD=$PRELOAD" -x "XSPROF_OUTPUT=$t"
    rc_x=$rc
    compare_runs
    for ((r = 0; r < NP; r++)); do
      n=$(grep -c "^xsprof\[rank $r\] .*$t" "$work/xsprof.log")
      [ "$n" = 1 ] || fail "rank $r printed $n warning lines naming $t (expected one)"
    done
    check_data "$t" none none none none
    "$XSMERGE" --partial "$t" -o "$work/merged" >"$work/xsmerge.log" 2>&1
    mrc=$?
    cat "$work/xsmerge.log"
    [ $mrc = 1 ] || fail "xsmerge on the unwritable run directory exited with $mrc (expected 1)"
    grep -q "$t" "$work/xsmerge.log" || fail "xsmerge's error does not name $t"
  done
  ;;
diskfull)
  # The disk: a 24 MB tmpfs mounted here. With 64 KB chunks and a 2 MB
  # budget the four journals (4 MB string area + spare chunks each) fit, and
  # 200000 regions per rank (6 MB of records each) then fill it while the
  # job runs. Where mounting is not allowed (or FAULT_NO_MOUNT=1): a file
  # size limit (ulimit -f, RLIMIT_FSIZE) of 6 MB for both runs, with
  # SIGXFSZ left at its default (terminate): xsprof must not be what
  # triggers it.
  N=200000
  xsopt=(-x XSPROF_CHUNK_KB=64 -x XSPROF_BUFFER_MB=2)
  mkdir -p "$work/mnt"
  if [ "${FAULT_NO_MOUNT:-0}" != 1 ] && mount -t tmpfs -o size=24m tmpfs "$work/mnt" 2>/dev/null; then
    mounted="$work/mnt"
    run="$work/mnt/run"
    echo "disk: tmpfs of 24 MB"
    run_job plain "$work/progress-plain" finish $N
    rc_plain=$rc
    run_job xsprof "$work/progress-xsprof" finish $N -x "LD_PRELOAD=$PRELOAD" -x "XSPROF_OUTPUT=$run" "${xsopt[@]}"
    rc_x=$rc
  else
    run="$work/run"
    echo "disk: RLIMIT_FSIZE of 6 MB (ulimit -f 6144)"
    (ulimit -f 6144 && run_job plain "$work/progress-plain" finish $N && echo $rc >"$work/rc-plain")
    (ulimit -f 6144 && run_job xsprof "$work/progress-xsprof" finish $N -x "LD_PRELOAD=$PRELOAD" \
      -x "XSPROF_OUTPUT=$run" "${xsopt[@]}" && echo $rc >"$work/rc-xsprof")
    rc_plain=$(cat "$work/rc-plain")
    rc_x=$(cat "$work/rc-xsprof")
  fi
  compare_runs
  # Every rank called MPI_Finalize: whatever the disk did, the label must say
  # the rank finished (not that it was killed).
  check_data "$run" d:finalized d:finalized d:finalized d:finalized
  full=$("$py" -c 'import json,sys; print(sum(1 for r in json.load(open(sys.argv[1]))["ranks"] if r["dropped"] > 0 or r["source"] == "none"))' "$work/summary.json")
  [ "$full" -gt 0 ] || fail "no rank dropped anything: the disk never filled, the case tested nothing"
  grep -q 'No space left on device\|File too large' "$work/xsprof.log" || fail "no rank warned that the disk is full"
  for ((r = 0; r < NP; r++)); do
    src=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["ranks"][int(sys.argv[2])]["source"])' "$work/summary.json" $r)
    if [ "$src" = none ]; then
      grep -q "^xsprof\[rank $r\] warning: .*profiling is off" "$work/xsprof.log" ||
        fail "rank $r left no data and did not warn that profiling is off"
    fi
  done
  check_merge "$run"
  ;;
*)
  echo "usage: fault_matrix.sh segv|abort|kill9|term|exit3|unwritable|diskfull FAULT_APP FAULT_CHECK WORK_DIR"
  exit 2
  ;;
esac
[ $status = 0 ] && echo "OK: $case_"
exit $status

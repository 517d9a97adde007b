#!/usr/bin/env bash
# make install into a temporary prefix, then build a consumer against it
# both ways (CMake package, pkg-config) and run it: it must write its rank file;
# and use the installed Python package from the prefix.
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$XSPROF_BUILD" --prefix "$prefix" >/dev/null
for f in lib/libxsprof.so lib/libxsprof-mpi.so bin/xsmerge include/xsprof/xsprof.h \
         lib/cmake/xsprof/xsprofConfig.cmake lib/pkgconfig/xsprof.pc lib/pkgconfig/xsprof-mpi.pc; do
  [ -e "$prefix/$f" ] || { echo "install is missing $f"; exit 1; }
done
# 1. CMake package
cmake -S "$XSPROF_SOURCE/tests/install/consumer" -B "$work/b" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/b" >/dev/null
XSPROF_OUTPUT=$work/run-cmake "$work/b/consumer"
[ -s "$work/run-cmake/rank-00000.h5" ] || { echo "cmake consumer wrote no rank file"; exit 1; }
# 2. pkg-config
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cc "$XSPROF_SOURCE/tests/install/consumer/consumer.c" $(pkg-config --cflags --libs xsprof) -o "$work/consumer-pc"
XSPROF_OUTPUT=$work/run-pc "$work/consumer-pc"
[ -s "$work/run-pc/rank-00000.h5" ] || { echo "pkg-config consumer wrote no rank file"; exit 1; }
# The MPI flavour resolves too.
pkg-config --libs xsprof-mpi | grep -q -- -lxsprof-mpi
# 3. An MPI program that calls no xsprof function and reaches MPI through
# the mpi_f08 module (symbols libxsprof-mpi does not define) is still
# recorded when linked both ways: the link flags keep libxsprof-mpi although
# gcc passes --as-needed here.
if command -v mpifort >/dev/null && [ -n "${MPIEXEC:-}" ] &&
   echo 'program p; use mpi_f08; end program' > "$work/probe.f90" &&
   mpifort "$work/probe.f90" -o "$work/probe" >/dev/null 2>&1; then
  f08=$XSPROF_SOURCE/tests/install/consumer_f08
  mpifort "$f08/consumer_f08.f90" $(pkg-config --libs xsprof-mpi) -o "$work/f08-pc"
  cmake -S "$f08" -B "$work/bf" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$work/bf" >/dev/null
  for exe in "$work/f08-pc" "$work/bf/consumer_f08"; do
    out=$work/run-$(basename "$exe")
    XSPROF_GPU=0 "$MPIEXEC" -n 2 -x XSPROF_GPU -x XSPROF_OUTPUT="$out" "$exe"
    for r in 0 1; do
      [ -s "$out/rank-0000$r.h5" ] || { echo "$exe (mpi_f08, linked -lxsprof-mpi) wrote no rank-0000$r.h5"; exit 1; }
    done
  done
else
  echo "install test: no mpi_f08 here; the Fortran consumer is skipped"
fi
# 4. The Python package, where Debian's python3 finds a prefix's packages,
# used from the prefix alone: its libraries and xsmerge, not the build tree's.
pydir=$(echo "$prefix"/lib/python3*/dist-packages)
[ -f "$pydir/xsprof/__init__.py" ] || { echo "install is missing the Python package (lib/python3.X/dist-packages/xsprof)"; exit 1; }
XSPROF_OUTPUT=$work/run-py PYTHONPATH=$pydir XSPROF_GPU=0 /usr/bin/python3 - "$prefix" "$work" <<'PY'
import os, sys
import xsprof
prefix, work = sys.argv[1], sys.argv[2]
assert xsprof.__file__.startswith(prefix), xsprof.__file__
assert xsprof.library_path.startswith(prefix + "/lib/"), xsprof.library_path
with xsprof.profile() as prof:
    for _ in range(2):
        with xsprof.record_function("installed_py"):
            pass
        prof.step()
assert [e.count for e in prof.key_averages() if e.key == "installed_py"] == [2]
PY
[ -s "$work/run-py/rank-00000.h5" ] || { echo "the installed Python package wrote no rank file"; exit 1; }
PYTHONPATH=$pydir /usr/bin/python3 -c "
import sys, xsprof
m = xsprof.load(xsprof.merge(sys.argv[1], sys.argv[2]))
assert (m['regions'].name_str == 'installed_py').sum() == 2, m['regions']
" "$work/run-py" "$work/merged-py"
echo "install test: the consumers built and recorded"

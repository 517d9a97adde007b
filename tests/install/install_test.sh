#!/usr/bin/env bash
# make install into a temporary prefix, then build a consumer against it
# both ways (CMake package, pkg-config) and run it: it must write its rank file.
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
echo "install test: both consumers built and recorded"

#!/usr/bin/env bash
# Every public header under include/xsprof compiles on its own as C11 and as
# C++ (C++11 and C++17), pedantic and warning-free, and is included by
# tests/unit/cxx_headers.cpp (the C++ program the unit suite links and runs).
# usage: check_headers.sh SOURCE_DIR CC CXX
set -u
src=$1 cc=$2 cxx=$3
status=0
n=0
for h in "$src"/include/xsprof/*.h; do
  rel=${h#"$src"/include/}
  n=$((n + 1))
  for std in c11; do
    printf '#include <%s>\nint xsprof_header_check_;\n' "$rel" |
      "$cc" -std=$std -Wall -Wextra -Werror -pedantic -fsyntax-only -I"$src/include" -x c - ||
      { echo "FAIL: $rel as C ($std)"; status=1; }
  done
  for std in c++11 c++17; do
    printf '#include <%s>\nint xsprof_header_check_;\n' "$rel" |
      "$cxx" -std=$std -Wall -Wextra -Werror -pedantic -fsyntax-only -I"$src/include" -x c++ - ||
      { echo "FAIL: $rel as C++ ($std)"; status=1; }
  done
  grep -q "#include <$rel>" "$src/tests/unit/cxx_headers.cpp" ||
    { echo "FAIL: $rel is not included by tests/unit/cxx_headers.cpp"; status=1; }
done
[ $n -gt 0 ] || { echo "FAIL: no header under $src/include/xsprof"; status=1; }
[ $status = 0 ] && echo "OK: $n public headers compile as C11, C++11 and C++17"
exit $status

#!/usr/bin/env bash
# Symbol hygiene (shared/DESIGN.md, "It coexists"): the dynamic symbol table
# of each shared library defines only the public API (xsprof_*), the MPI
# interposers (MPI_*, PMPI_*), the Fortran MPI bindings in every name
# mangling compilers use (mpi_send, mpi_send_, mpi_send__; MPI_SEND falls
# under MPI_*), Open MPI's mpi_f08 entry points (ompi_send_f), the NVTX injection entry point and
# the -finstrument-functions hooks (__cyg_profile_func_enter/_exit); plus _init/_fini when the toolchain
# emits them. Anything else (an HDF5, hwloc or helper symbol leaking out)
# could interpose on the application's own libraries.
# usage: check_symbols.sh [--allow SYMBOL] LIB REQUIRED_SYMBOL...
# REQUIRED_SYMBOLs must be defined (so an empty or broken library fails).
# --allow: one more name the build exports on purpose (ASan builds: dlclose,
# cmake/asan_keep_plugins.c), allowed and required.
set -u
extra=
if [ "${1:-}" = --allow ]; then
  extra=$2
  shift 2
  set -- "$@" "$extra"
fi
lib=$1
shift
if [ ! -f "$lib" ]; then
  echo "FAIL: $lib does not exist (build-tree contract: build/lib)"
  exit 1
fi
allowed='^(xsprof_[A-Za-z0-9_]+|MPI_[A-Za-z0-9_]+|PMPI_[A-Za-z0-9_]+|mpi_[a-z0-9_]+|ompi_[a-z0-9_]+_f|InitializeInjectionNvtx2|__cyg_profile_func_(enter|exit)|_init|_fini)$'
syms=$(nm -D --defined-only "$lib" | awk 'NF >= 3 {print $3}' | sed 's/@.*//' | sort -u)
if [ -z "$syms" ]; then
  echo "FAIL: nm -D found no defined symbols in $lib"
  exit 1
fi
[ -n "$extra" ] && allowed="${allowed%)\$}|$extra)\$"
bad=$(printf '%s\n' "$syms" | grep -Ev "$allowed")
status=0
if [ -n "$bad" ]; then
  echo "FAIL: $lib exports symbols outside the allow-list:"
  printf '  %s\n' $bad
  status=1
fi
for s in "$@"; do
  if ! printf '%s\n' "$syms" | grep -qx "$s"; then
    echo "FAIL: $lib does not export $s"
    status=1
  fi
done
n=$(printf '%s\n' "$syms" | wc -l)
echo "$lib: $n exported symbols: xsprof_* $(printf '%s\n' "$syms" | grep -c '^xsprof_')," \
  "MPI_* $(printf '%s\n' "$syms" | grep -c '^MPI_'), PMPI_* $(printf '%s\n' "$syms" | grep -c '^PMPI_')," \
  "Fortran $(printf '%s\n' "$syms" | grep -c '^mpi_') + mpi_f08 $(printf '%s\n' "$syms" | grep -c '^ompi_'), other allowed $(printf '%s\n' "$syms" | grep -Ec '^(InitializeInjectionNvtx2|__cyg_profile_func_(enter|exit)|_init|_fini)$')"
[ $status = 0 ] && echo "OK: only allowed symbols"
exit $status

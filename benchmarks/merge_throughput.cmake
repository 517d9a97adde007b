# merge_throughput: xsmerge events/s and peak RSS, serial and `mpirun -np 2`
# and with --stream (owner: merge). Run: build/bin/merge_throughput [RANKS [EVENTS_PER_RANK [DIR]]]
# or, peak memory of xsmerge --stream: build/bin/merge_throughput --memory
# [--no-memory-baseline] [--keep-run] RANKS EVENTS_PER_RANK [DIR]
if(TARGET merge_make_runs AND TARGET xsmerge)
  add_executable(merge_throughput ${CMAKE_CURRENT_LIST_DIR}/merge_throughput.c)
  set(_mpiexec ${MPIEXEC_EXECUTABLE})
  if(NOT _mpiexec)
    set(_mpiexec mpirun)
  endif()
  target_compile_definitions(merge_throughput PRIVATE MERGE_MAKE_RUNS="$<TARGET_FILE:merge_make_runs>"
                             XSMERGE="$<TARGET_FILE:xsmerge>" MPIEXEC="${_mpiexec}")
  add_dependencies(merge_throughput merge_make_runs xsmerge)
endif()

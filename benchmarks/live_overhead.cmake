# benchmarks/live_overhead: xsmerge --live beside a 4-rank job recording
# about 1 M events/s: the job's run time with and without the view attached
# (medians of alternating runs) and the live reader's CPU (its rusage).
# `cmake --build . --target bench-live` (merge/live/README.md, benchmarks/README.md).
if(TARGET xsprof-mpi AND XSPROF_HAVE_MICROHTTPD)
  add_executable(xsprof-bench-live ${CMAKE_CURRENT_LIST_DIR}/live_overhead.c)
  target_link_libraries(xsprof-bench-live PRIVATE MPI::MPI_C)
  add_custom_target(bench-live
    COMMAND ${CMAKE_COMMAND} -E env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
            MPIEXEC=${MPIEXEC_EXECUTABLE} XSPROF_MPI_LIB=$<TARGET_FILE:xsprof-mpi> XSMERGE=$<TARGET_FILE:xsmerge>
            BENCH_JOB=$<TARGET_FILE:xsprof-bench-live>
            /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/live_overhead.py
    DEPENDS xsprof-bench-live xsprof-mpi xsmerge
    COMMENT "xsmerge --live beside a 4-rank job of ~1 M events/s" VERBATIM USES_TERMINAL)
endif()

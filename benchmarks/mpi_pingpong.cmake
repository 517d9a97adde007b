# benchmarks/mpi_pingpong: overhead of the MPI wrappers (plain MPI program,
# run with libxsprof-mpi.so preloaded) and the cost of the clock exchange.
# `cmake --build . --target bench-mpi` prints both figures.
if(TARGET xsprof-mpi)
  add_executable(xsprof-bench-mpi-pingpong ${CMAKE_CURRENT_LIST_DIR}/mpi_pingpong.c)
  target_link_libraries(xsprof-bench-mpi-pingpong PRIVATE MPI::MPI_C)
  set(_bench_env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
  set(_bench_dir ${PROJECT_BINARY_DIR}/bench-mpi-runs)
  add_custom_target(bench-mpi
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${_bench_dir}
    COMMAND ${CMAKE_COMMAND} -E env ${_bench_env}
            ${MPIEXEC_EXECUTABLE} -np 2 --oversubscribe -x LD_PRELOAD=$<TARGET_FILE:xsprof-mpi>
            -x XSPROF_OUTPUT=${_bench_dir}/pingpong $<TARGET_FILE:xsprof-bench-mpi-pingpong> 201 300
    # 8 ranks: rank 0 logs the clock exchange time at MPI_Init and MPI_Finalize
    COMMAND ${CMAKE_COMMAND} -E env ${_bench_env}
            ${MPIEXEC_EXECUTABLE} -np 8 --oversubscribe -x LD_PRELOAD=$<TARGET_FILE:xsprof-mpi> -x XSPROF_LOG=info
            -x XSPROF_OUTPUT=${_bench_dir}/clock8 $<TARGET_FILE:xsprof-bench-mpi-pingpong>
    DEPENDS xsprof-bench-mpi-pingpong xsprof-mpi
    COMMENT "MPI overhead benchmark (ping-pong, clock exchange with 8 ranks)" VERBATIM USES_TERMINAL)
endif()

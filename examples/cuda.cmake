# examples/cuda: a CUDA + MPI program (kernels, copies, memset, streams,
# NVTX, MPI_Allreduce) to validate GPU capture on a GPU node (docs/gpu.md).
# Built with nvcc directly (the project's -Wall -Werror flags are host
# compiler flags nvcc does not take), and only when it compiles here: a
# configure-time probe, repeated when the source changes, decides, so a
# broken or too new nvcc never breaks the build.
set(XSPROF_CUDA_EXAMPLE_SRC ${CMAKE_CURRENT_LIST_DIR}/cuda/cuda_mpi.cu)
if(XSPROF_NVCC AND MPI_C_FOUND)
  set(_cuda_flags -O2 -std=c++17)
  foreach(d ${MPI_C_INCLUDE_DIRS})
    list(APPEND _cuda_flags -I${d})
  endforeach()
  if(XSPROF_NVTX_INCLUDE)
    list(APPEND _cuda_flags -I${XSPROF_NVTX_INCLUDE})
  endif()
  set(_cuda_libs ${MPI_C_LIBRARIES} -ldl)

  file(MD5 ${XSPROF_CUDA_EXAMPLE_SRC} _cuda_md5)
  string(MD5 _cuda_key "${_cuda_md5};${XSPROF_NVCC};${_cuda_flags};${_cuda_libs}")
  if(NOT XSPROF_CUDA_EXAMPLE_KEY STREQUAL _cuda_key)
    execute_process(
      COMMAND ${XSPROF_NVCC} ${_cuda_flags} ${XSPROF_CUDA_EXAMPLE_SRC} -o ${CMAKE_CURRENT_BINARY_DIR}/cuda_probe
              ${_cuda_libs}
      RESULT_VARIABLE _cuda_rc OUTPUT_VARIABLE _cuda_log ERROR_VARIABLE _cuda_log)
    if(_cuda_rc EQUAL 0)
      set(XSPROF_CUDA_EXAMPLE_OK 1 CACHE INTERNAL "examples/cuda compiles with nvcc")
    else()
      set(XSPROF_CUDA_EXAMPLE_OK 0 CACHE INTERNAL "examples/cuda compiles with nvcc")
      message(STATUS "examples/cuda not built: nvcc failed:\n${_cuda_log}")
    endif()
    set(XSPROF_CUDA_EXAMPLE_KEY ${_cuda_key} CACHE INTERNAL "probe key of examples/cuda")
  endif()

  if(XSPROF_CUDA_EXAMPLE_OK)
    set(_cuda_out ${PROJECT_BINARY_DIR}/bin/xsprof-cuda-mpi)
    add_custom_command(OUTPUT ${_cuda_out}
      COMMAND ${XSPROF_NVCC} ${_cuda_flags} ${XSPROF_CUDA_EXAMPLE_SRC} -o ${_cuda_out} ${_cuda_libs}
      DEPENDS ${XSPROF_CUDA_EXAMPLE_SRC}
      COMMENT "nvcc examples/cuda/cuda_mpi.cu -> bin/xsprof-cuda-mpi"
      VERBATIM)
    add_custom_target(xsprof-cuda-mpi ALL DEPENDS ${_cuda_out})
    message(STATUS "examples/cuda: bin/xsprof-cuda-mpi (nvcc ${XSPROF_NVCC})")
  endif()
else()
  message(STATUS "examples/cuda not built: needs nvcc and MPI")
endif()

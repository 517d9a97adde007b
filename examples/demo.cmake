# The 4-rank demo of `make demo`, linked against libxsprof-mpi.
if(TARGET xsprof-mpi)
  add_executable(xsprof-demo ${CMAKE_CURRENT_LIST_DIR}/demo.c)
  target_link_libraries(xsprof-demo PRIVATE xsprof-mpi MPI::MPI_C m)
endif()

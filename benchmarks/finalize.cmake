# The finalize of a heavily traced rank (issue 39): xsprof-bench-finalize [N].
add_executable(xsprof-bench-finalize ${CMAKE_CURRENT_LIST_DIR}/finalize.c)
target_link_libraries(xsprof-bench-finalize PRIVATE xsprof)

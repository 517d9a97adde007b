add_executable(xsprof-bench-core ${CMAKE_CURRENT_LIST_DIR}/core_overhead.c)
target_link_libraries(xsprof-bench-core PRIVATE xsprof Threads::Threads)

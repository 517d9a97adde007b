add_executable(xsprof-bench-counters ${CMAKE_CURRENT_LIST_DIR}/counters_overhead.c)
target_link_libraries(xsprof-bench-counters PRIVATE xsprof)

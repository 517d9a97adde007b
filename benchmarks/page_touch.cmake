# page_touch: the cost of a fresh page on this machine (owner: merge, whose
# throughput it explains; merge/README "Why memory is time here").
add_executable(page_touch ${CMAKE_CURRENT_LIST_DIR}/page_touch.c)

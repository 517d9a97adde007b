# sample_overhead: CPU cost of XSPROF_SAMPLE_HZ at 0, 100 and 1000 Hz on a
# compute loop, and disk bytes per sample (owner: core). Run:
# XSPROF_OUTPUT=/dev/shm/b build/bin/sample_overhead [ROUNDS [LOOP_M]]
add_executable(sample_overhead ${CMAKE_CURRENT_LIST_DIR}/sample_overhead.c)
target_compile_options(sample_overhead PRIVATE -O2 -fomit-frame-pointer)
target_link_libraries(sample_overhead PRIVATE xsprof xsprof_ioread)

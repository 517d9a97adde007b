# instrument_overhead: a -finstrument-functions region per call beside an
# XSPROF_SCOPE region (owner: core). Run:
# XSPROF_OUTPUT=/dev/shm/b build/bin/instrument_overhead [BATCHES]
add_executable(instrument_overhead ${CMAKE_CURRENT_LIST_DIR}/instrument_overhead.c
               ${CMAKE_CURRENT_LIST_DIR}/instrument_overhead_fns.c ${CMAKE_CURRENT_LIST_DIR}/instrument_overhead_plain.c)
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/instrument_overhead_fns.c PROPERTIES
                            COMPILE_OPTIONS "-finstrument-functions")
target_compile_options(instrument_overhead PRIVATE -O2)
target_link_libraries(instrument_overhead PRIVATE xsprof)

# io_size: on-disk bytes per region event of the rank file (owner: io).
add_executable(io_size ${CMAKE_CURRENT_LIST_DIR}/io_size.c ${PROJECT_SOURCE_DIR}/tests/io/journal_fixture.c)
target_include_directories(io_size PRIVATE ${PROJECT_SOURCE_DIR}/tests/io)
target_link_libraries(io_size PRIVATE xsprof_ioread)
# io_size_lib: the same workload through libxsprof.so and the default sink
# (a driver without xsprof, and the profiled workload io_size_lib_app).
add_executable(io_size_lib ${CMAKE_CURRENT_LIST_DIR}/io_size_lib.c)
add_executable(io_size_lib_app ${CMAKE_CURRENT_LIST_DIR}/io_size_lib_app.c)
target_link_libraries(io_size_lib_app PRIVATE xsprof)
add_dependencies(io_size_lib io_size_lib_app)

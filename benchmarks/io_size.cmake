# io_size: on-disk bytes per region event of the rank file (owner: io).
add_executable(io_size ${CMAKE_CURRENT_LIST_DIR}/io_size.c ${PROJECT_SOURCE_DIR}/tests/io/journal_fixture.c)
target_include_directories(io_size PRIVATE ${PROJECT_SOURCE_DIR}/tests/io)
target_link_libraries(io_size PRIVATE xsprof_ioread)

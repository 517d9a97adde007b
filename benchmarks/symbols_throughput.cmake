# symbols_throughput: merge/symbols, unique addresses resolved per second on
# xsmerge's own DWARF (owner: merge). Run: build/bin/symbols_throughput [ADDRESSES [ELF_FILE [REPEATS]]]
if(TARGET xsmerge_symbols AND TARGET xsmerge)
  add_executable(symbols_throughput ${CMAKE_CURRENT_LIST_DIR}/symbols_throughput.c)
  target_link_libraries(symbols_throughput PRIVATE xsmerge_symbols)
  target_compile_definitions(symbols_throughput PRIVATE XSMERGE="$<TARGET_FILE:xsmerge>")
endif()

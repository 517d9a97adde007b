# Install: libraries, headers, xsmerge, CMake package and pkg-config files.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(_xs_targets xsprof xsprof-memory)
if(TARGET xsprof-mpi)
  list(APPEND _xs_targets xsprof-mpi)
endif()
# A program that reaches MPI only through symbols libxsprof-mpi does not
# define (the mpi_f08 module, or MPI called from another shared library) and
# calls no xsprof function would lose xsprof to --as-needed, the default of
# Debian's and Ubuntu's gcc, and be recorded by nothing, silently: the
# installed targets (and the .pc files) keep their library on the link line.
foreach(t ${_xs_targets})
  target_link_options(${t} INTERFACE "$<INSTALL_INTERFACE:LINKER:--no-as-needed>")
endforeach()
install(TARGETS ${_xs_targets} EXPORT xsprofTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS xsmerge RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/xsprof DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT xsprofTargets NAMESPACE xsprof:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/xsprof)
configure_package_config_file(cmake/xsprofConfig.cmake.in ${PROJECT_BINARY_DIR}/xsprofConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/xsprof)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/xsprofConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/xsprofConfig.cmake ${PROJECT_BINARY_DIR}/xsprofConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/xsprof)
# Relocatable: the .pc files find the prefix from their own location.
file(RELATIVE_PATH XSPROF_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
foreach(pc xsprof xsprof-mpi)
  configure_file(cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

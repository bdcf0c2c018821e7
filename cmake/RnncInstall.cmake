# RnncInstall.cmake: the CMake package (find_package(rnnc)) and a pkg-config file.
include(CMakePackageConfigHelpers)
set(RNNC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rnnc)
install(EXPORT rnncTargets NAMESPACE rnnc:: DESTINATION ${RNNC_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/rnncConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/rnncConfig.cmake INSTALL_DESTINATION ${RNNC_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/rnncConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/rnncConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/rnncConfigVersion.cmake DESTINATION ${RNNC_CMAKE_DIR})
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/rnnc.pc.in ${CMAKE_CURRENT_BINARY_DIR}/rnnc.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/rnnc.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# RnncInstall.cmake: the CMake package (find_package(rnnc), targets
# rnnc::rnnc and rnnc::rnnc_static) and a pkg-config file, both relocatable:
# they find the install prefix from where they lie, so
# `cmake --install build --prefix DIR` works for any DIR.
include(CMakePackageConfigHelpers)

# A sanitized library needs the sanitizer runtimes at the front of the
# program's library list, so a program linking it must link with the same
# flag; the package passes it on rather than leave every consumer to guess.
set(RNNC_CONSUMER_LINK_FLAGS "")
if(RNNC_SANITIZE)
  set(RNNC_CONSUMER_LINK_FLAGS -fsanitize=address,undefined)
  target_link_options(rnnc INTERFACE ${RNNC_CONSUMER_LINK_FLAGS})
  target_link_options(rnnc_static INTERFACE ${RNNC_CONSUMER_LINK_FLAGS})
endif()

set(RNNC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rnnc)
install(EXPORT rnncTargets NAMESPACE rnnc:: DESTINATION ${RNNC_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/rnncConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/rnncConfig.cmake INSTALL_DESTINATION ${RNNC_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/rnncConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/rnncConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/rnncConfigVersion.cmake
  ${CMAKE_CURRENT_SOURCE_DIR}/cmake/FindxxHash.cmake DESTINATION ${RNNC_CMAKE_DIR})

# pkg-config: the prefix is found from the .pc file's own folder (pcfiledir),
# so it is right whatever --prefix the install is given.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(RNNC_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _up "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
  string(REGEX REPLACE "/$" "" _up "${_up}")
  set(RNNC_PC_PREFIX "\${pcfiledir}/${_up}")
endif()
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(RNNC_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(RNNC_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
# What a static link (pkg-config --static) needs besides librnnc.a: cJSON
# and xxHash by their own .pc files (Requires.private), the rest as flags.
# LLVM has no .pc file: its library's folder and name.  cuDNN, CUDA and
# NVRTC are opened with dlopen, never linked.
set(RNNC_PC_PRIVATE "")
if(RNNC_HAVE_LLVM)
  get_filename_component(_llvm_dir "${LLVM_SHARED_LIBRARY}" DIRECTORY)
  get_filename_component(_llvm_name "${LLVM_SHARED_LIBRARY}" NAME_WE)
  string(REGEX REPLACE "^lib" "" _llvm_name "${_llvm_name}")
  list(APPEND RNNC_PC_PRIVATE "-L${_llvm_dir}" "-l${_llvm_name}")
endif()
list(APPEND RNNC_PC_PRIVATE -pthread ${CMAKE_DL_LIBS} -lm)
list(TRANSFORM RNNC_PC_PRIVATE REPLACE "^dl$" "-ldl")
string(JOIN " " RNNC_PC_LIBS_PRIVATE ${RNNC_PC_PRIVATE})
string(JOIN " " RNNC_PC_LINK_FLAGS ${RNNC_CONSUMER_LINK_FLAGS})
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/rnnc.pc.in ${CMAKE_CURRENT_BINARY_DIR}/rnnc.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/rnnc.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

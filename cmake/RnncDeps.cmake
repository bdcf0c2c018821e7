# RnncDeps.cmake: finds what rnnc builds against and gathers it in the
# interface target rnnc_deps.  Installed (for rnnc::rnnc_static), rnnc_deps
# names its libraries by the targets rnncConfig.cmake finds with
# find_dependency (cjson, xxHash::xxhash, LLVM), never by this machine's
# paths, and carries no include directory (rnnc.h includes none of them).  libcuda and libnvrtc are never linked: the
# runtime loads them with dlopen, so only CUDA's headers are needed here.
# RNNC_DEPS_PREFIX names an extra root to search (the GPU machine carries
# unpacked Debian packages there, having no package registry).

add_library(rnnc_deps INTERFACE)
set(_hints ${RNNC_DEPS_PREFIX}/usr ${RNNC_DEPS_PREFIX})
set(_libsuffix lib lib/x86_64-linux-gnu lib64)

find_package(Threads REQUIRED)
target_link_libraries(rnnc_deps INTERFACE Threads::Threads ${CMAKE_DL_LIBS} m)

# cJSON: safetensors headers, bundles, benchmark JSON.
find_path(CJSON_INCLUDE_DIR cJSON.h HINTS ${_hints} PATH_SUFFIXES include/cjson include)
find_library(CJSON_LIBRARY NAMES cjson HINTS ${_hints} PATH_SUFFIXES ${_libsuffix})
if(NOT CJSON_INCLUDE_DIR OR NOT CJSON_LIBRARY)
  message(FATAL_ERROR "cJSON not found (Debian: libcjson-dev)")
endif()
target_include_directories(rnnc_deps INTERFACE "$<BUILD_INTERFACE:${CJSON_INCLUDE_DIR}>")
target_link_libraries(rnnc_deps INTERFACE "$<BUILD_INTERFACE:${CJSON_LIBRARY}>"
                      "$<INSTALL_INTERFACE:cjson>")

# xxHash: cache keys and payload checks.
find_path(XXHASH_INCLUDE_DIR xxhash.h HINTS ${_hints} PATH_SUFFIXES include)
find_library(XXHASH_LIBRARY NAMES xxhash HINTS ${_hints} PATH_SUFFIXES ${_libsuffix})
if(NOT XXHASH_INCLUDE_DIR OR NOT XXHASH_LIBRARY)
  message(FATAL_ERROR "xxHash not found (Debian: libxxhash-dev)")
endif()
target_include_directories(rnnc_deps INTERFACE "$<BUILD_INTERFACE:${XXHASH_INCLUDE_DIR}>")
target_link_libraries(rnnc_deps INTERFACE "$<BUILD_INTERFACE:${XXHASH_LIBRARY}>"
                      "$<INSTALL_INTERFACE:xxHash::xxhash>")

# Each optional dependency: AUTO uses it when found, ON requires it, OFF skips
# it.  rnnc_optional_begin says whether to look; rnnc_optional_end sets
# RNNC_HAVE_<dep>, fails loudly when ON cannot be honoured, and prints one
# status line so a configure log says what this build has and why.
macro(rnnc_optional_begin dep)
  string(TOUPPER "${RNNC_WITH_${dep}}" _want_${dep})
  if(NOT _want_${dep} STREQUAL "AUTO")
    if(RNNC_WITH_${dep})
      set(_want_${dep} ON)
    else()
      set(_want_${dep} OFF)
    endif()
  endif()
  set(RNNC_HAVE_${dep} OFF)
  set(_why_${dep} "switched off (-DRNNC_WITH_${dep}=OFF)")
endmacro()

macro(rnnc_optional_end dep found why_not what)
  if(_want_${dep} STREQUAL "OFF")
    # nothing looked for
  elseif(${found})
    set(RNNC_HAVE_${dep} ON)
    set(_why_${dep} "${what}")
  elseif(_want_${dep} STREQUAL "ON")
    message(FATAL_ERROR "RNNC_WITH_${dep}=ON, but ${why_not}")
  else()
    set(_why_${dep} "not found: ${why_not}")
  endif()
  if(RNNC_HAVE_${dep})
    message(STATUS "rnnc: ${dep} on: ${_why_${dep}}")
  else()
    message(STATUS "rnnc: ${dep} off: ${_why_${dep}}")
  endif()
endmacro()

# CUDA headers (cuda.h, nvrtc.h) for the dlopen'ed driver and NVRTC.
rnnc_optional_begin(CUDA)
if(_want_CUDA)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    target_include_directories(rnnc_deps INTERFACE "$<BUILD_INTERFACE:${CUDAToolkit_INCLUDE_DIRS}>")
  endif()
endif()
rnnc_optional_end(CUDA CUDAToolkit_FOUND
  "the CUDA toolkit's headers were not found (set CUDAToolkit_ROOT)"
  "fused backend, CUDA toolkit ${CUDAToolkit_VERSION} headers; libcuda and libnvrtc loaded at run time")

# cuDNN: only its header at build time; the library is loaded at run time.
rnnc_optional_begin(CUDNN)
set(_cudnn_found OFF)
if(_want_CUDNN AND NOT RNNC_HAVE_CUDA)
  set(_cudnn_why "it needs the CUDA toolkit, which is off or missing")
elseif(_want_CUDNN)
  find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include/x86_64-linux-gnu /usr/include
            PATH_SUFFIXES include)
  # Only the header: libcudnn is opened with dlopen (cudnn_fallback/cudnn_load.c).
  set(_cudnn_why "cudnn.h was not found")
  if(CUDNN_INCLUDE_DIR)
    set(_cudnn_found ON)
    target_include_directories(rnnc_deps INTERFACE "$<BUILD_INTERFACE:${CUDNN_INCLUDE_DIR}>")
  endif()
endif()
rnnc_optional_end(CUDNN _cudnn_found "${_cudnn_why}" "cudnn backend, cudnn.h in ${CUDNN_INCLUDE_DIR}")

rnnc_optional_begin(LLVM)
if(_want_LLVM)
  find_package(LLVM 14 CONFIG QUIET HINTS /usr/lib/llvm-14/lib/cmake/llvm)
  if(LLVM_FOUND)
    target_include_directories(rnnc_deps INTERFACE "$<BUILD_INTERFACE:${LLVM_INCLUDE_DIRS}>")
    find_library(LLVM_SHARED_LIBRARY NAMES LLVM-14 LLVM HINTS ${LLVM_LIBRARY_DIRS})
    target_link_libraries(rnnc_deps INTERFACE "$<BUILD_INTERFACE:${LLVM_SHARED_LIBRARY}>"
                          "$<INSTALL_INTERFACE:LLVM>")
  endif()
endif()
rnnc_optional_end(LLVM LLVM_FOUND "LLVM 14 was not found (Debian: llvm-14-dev)"
  "cpu backend, LLVM ${LLVM_PACKAGE_VERSION}")

# oneDNN (Debian: libdnnl-dev): the CPU benchmark compares against it; the
# library never uses it.
rnnc_optional_begin(DNNL)
set(_dnnl_found OFF)
if(_want_DNNL AND NOT RNNC_HAVE_LLVM)
  set(_dnnl_why "the CPU benchmark it serves needs the LLVM backend, which is off")
elseif(_want_DNNL)
  find_path(DNNL_INCLUDE_DIR dnnl.h)
  find_library(DNNL_LIBRARY NAMES dnnl)
  set(_dnnl_why "dnnl.h or libdnnl was not found (Debian: libdnnl-dev)")
  if(DNNL_INCLUDE_DIR AND DNNL_LIBRARY)
    set(_dnnl_found ON)
  endif()
endif()
rnnc_optional_end(DNNL _dnnl_found "${_dnnl_why}" "bench_cpu_bench compares against oneDNN")

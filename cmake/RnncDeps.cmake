# RnncDeps.cmake: finds what rnnc builds against and gathers it in the
# interface target rnnc_deps.  libcuda and libnvrtc are never linked: the
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
target_include_directories(rnnc_deps INTERFACE ${CJSON_INCLUDE_DIR})
target_link_libraries(rnnc_deps INTERFACE ${CJSON_LIBRARY})

# xxHash: cache keys and payload checks.
find_path(XXHASH_INCLUDE_DIR xxhash.h HINTS ${_hints} PATH_SUFFIXES include)
find_library(XXHASH_LIBRARY NAMES xxhash HINTS ${_hints} PATH_SUFFIXES ${_libsuffix})
if(NOT XXHASH_INCLUDE_DIR OR NOT XXHASH_LIBRARY)
  message(FATAL_ERROR "xxHash not found (Debian: libxxhash-dev)")
endif()
target_include_directories(rnnc_deps INTERFACE ${XXHASH_INCLUDE_DIR})
target_link_libraries(rnnc_deps INTERFACE ${XXHASH_LIBRARY})

# CUDA headers (cuda.h, nvrtc.h) for the dlopen'ed driver and NVRTC.
set(RNNC_HAVE_CUDA OFF)
if(RNNC_WITH_CUDA)
  find_package(CUDAToolkit)
  if(CUDAToolkit_FOUND)
    set(RNNC_HAVE_CUDA ON)
    target_include_directories(rnnc_deps INTERFACE ${CUDAToolkit_INCLUDE_DIRS})
  else()
    message(WARNING "CUDA toolkit not found: GPU backends are not built")
  endif()
endif()

if(RNNC_WITH_CUDNN)
  if(NOT RNNC_HAVE_CUDA)
    message(FATAL_ERROR "RNNC_WITH_CUDNN needs the CUDA toolkit (or -DRNNC_WITH_CUDNN=OFF)")
  endif()
  find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include/x86_64-linux-gnu /usr/include
            PATH_SUFFIXES include)
  # Only the header: libcudnn is opened with dlopen (cudnn_fallback/cudnn_load.c).
  if(NOT CUDNN_INCLUDE_DIR)
    message(FATAL_ERROR "cudnn.h not found (or -DRNNC_WITH_CUDNN=OFF)")
  endif()
  target_include_directories(rnnc_deps INTERFACE ${CUDNN_INCLUDE_DIR})
endif()

if(RNNC_WITH_LLVM)
  find_package(LLVM 14 CONFIG HINTS /usr/lib/llvm-14/lib/cmake/llvm)
  if(NOT LLVM_FOUND)
    message(FATAL_ERROR "LLVM 14 not found (Debian: llvm-14-dev), or -DRNNC_WITH_LLVM=OFF")
  endif()
  target_include_directories(rnnc_deps INTERFACE ${LLVM_INCLUDE_DIRS})
  find_library(LLVM_SHARED_LIBRARY NAMES LLVM-14 LLVM HINTS ${LLVM_LIBRARY_DIRS})
  target_link_libraries(rnnc_deps INTERFACE ${LLVM_SHARED_LIBRARY})
endif()

# FF_CUDA_ONLY=ON: a build for a machine that has only the NVIDIA driver (tests/gpu/): no LLVM
# backend, and every dependency inside the binaries: libstdc++ linked statically,
# xxHash from its static archive, spdlog and fmt header-only (Debian ships them as shared
# libraries only; both are header-only libraries at heart, so their implementation is compiled
# into our objects instead). glibc stays dynamic, so dlopen("libcuda.so.1") works.
#
# The targets below stand in for find_package(spdlog) and pkg_check_modules(XXHASH), so the
# rest of the tree links `spdlog::spdlog` and `PkgConfig::XXHASH` unchanged.
set(FF_BUILD_BENCH OFF CACHE BOOL "" FORCE)
set(FF_BUILD_EXAMPLES OFF CACHE BOOL "" FORCE)

find_path(FF_SPDLOG_INCLUDE spdlog/spdlog.h REQUIRED)
find_path(FF_FMT_INCLUDE fmt/format.h REQUIRED)
add_library(spdlog::spdlog INTERFACE IMPORTED)
set_target_properties(spdlog::spdlog PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${FF_SPDLOG_INCLUDE};${FF_FMT_INCLUDE}"
  INTERFACE_COMPILE_DEFINITIONS "SPDLOG_FMT_EXTERNAL;FMT_HEADER_ONLY")

find_path(FF_XXHASH_INCLUDE xxhash.h REQUIRED)
find_library(FF_XXHASH_STATIC NAMES libxxhash.a REQUIRED)
add_library(PkgConfig::XXHASH STATIC IMPORTED)
set_target_properties(PkgConfig::XXHASH PROPERTIES
  IMPORTED_LOCATION "${FF_XXHASH_STATIC}"
  INTERFACE_INCLUDE_DIRECTORIES "${FF_XXHASH_INCLUDE}")

# libgcc stays shared (libgcc_s.so.1 is part of every Linux base system): GCC 12's static
# unwinder would need glibc 2.35's _dl_find_object. tests/gpu/glibc_compat.cpp covers
# arc4random (2.36); the binaries then need glibc 2.34.
add_link_options(-static-libstdc++)
add_compile_definitions(FF_NO_LLVM_BACKEND)
message(STATUS "FF_CUDA_ONLY: no LLVM backend; static libstdc++, xxHash; header-only spdlog/fmt")

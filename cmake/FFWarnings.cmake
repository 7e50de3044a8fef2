# Warnings for the project's own targets only (never for LLVM's headers).
function(ff_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Woverloaded-virtual
    -Wimplicit-fallthrough -Wformat=2)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    # GCC 12 reports false -Wrestrict / -Wstringop-overflow positives inside libstdc++'s
    # std::string operator+ and vector::insert (GCC bugs 105651, 105329).
    target_compile_options(${target} PRIVATE -Wno-restrict -Wno-stringop-overflow)
  endif()
  if(FF_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# An OBJECT library for one folder of the layered design.
function(ff_object_library target)
  add_library(${target} OBJECT ${ARGN})
  target_include_directories(${target} PUBLIC
    ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
  ff_warnings(${target})
  ff_apply_sanitizers(${target})
  # Thread-local tracing state is read on every array operation: the initial-exec model makes
  # that a single load instead of a __tls_get_addr call (the library is linked, not dlopen'ed).
  target_compile_options(${target} PRIVATE -ftls-model=initial-exec)
  # Calls between the library's own functions bind inside it (no PLT, inlinable): nobody
  # interposes freezeframe's internals, and the tracer's entry points call their bodies.
  target_compile_options(${target} PRIVATE -fno-semantic-interposition)
endfunction()

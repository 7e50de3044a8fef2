# Install test (cmake -P): installs the build tree into a fresh prefix, then configures,
# builds and runs tests/install/consumer against that prefix only.
#
# Inputs (-D): FF_BUILD_DIR, FF_CONSUMER_DIR, FF_WORK_DIR, FF_GENERATOR, FF_CXX_COMPILER,
#              FF_CONFIG (build configuration to install; may be empty).
foreach(var FF_BUILD_DIR FF_CONSUMER_DIR FF_WORK_DIR FF_GENERATOR FF_CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_install_test.cmake: -D${var}=... is required")
  endif()
endforeach()

set(prefix "${FF_WORK_DIR}/prefix")
set(consumer_build "${FF_WORK_DIR}/consumer-build")
# Two test runs of one build tree at once (two ctest processes) share FF_WORK_DIR: without the
# lock, one removed or rebuilt the other's consumer build under it. The second waits; the lock
# goes when this process exits.
file(LOCK "${FF_WORK_DIR}.lock" GUARD PROCESS TIMEOUT 300 RESULT_VARIABLE lock_result)
if(NOT lock_result EQUAL 0)
  message(FATAL_ERROR "install test: cannot lock ${FF_WORK_DIR}.lock: ${lock_result}")
endif()
file(REMOVE_RECURSE "${FF_WORK_DIR}")
file(MAKE_DIRECTORY "${FF_WORK_DIR}")

function(run step)
  message(STATUS "install test: ${step}: ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${step} failed (${rc})")
  endif()
endfunction()

set(config_args)
if(FF_CONFIG)
  set(config_args --config "${FF_CONFIG}")
endif()
run(install "${CMAKE_COMMAND}" --install "${FF_BUILD_DIR}" --prefix "${prefix}" ${config_args})

foreach(f include/freezeframe/freezeframe.h)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "install test: ${f} was not installed")
  endif()
endforeach()
file(GLOB_RECURSE config_file "${prefix}/*/freezeframeConfig.cmake")
if(NOT config_file)
  message(FATAL_ERROR "install test: no freezeframeConfig.cmake under ${prefix}")
endif()

run(configure "${CMAKE_COMMAND}" -S "${FF_CONSUMER_DIR}" -B "${consumer_build}"
    -G "${FF_GENERATOR}"
    -DCMAKE_BUILD_TYPE=Release
    "-DCMAKE_CXX_COMPILER=${FF_CXX_COMPILER}"
    "-DCMAKE_PREFIX_PATH=${prefix}"
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)

# The package must come from the prefix, not from some other installed copy.
file(STRINGS "${consumer_build}/CMakeCache.txt" found_dir REGEX "^freezeframe_DIR:")
string(REGEX REPLACE "^[^=]*=" "" found_dir "${found_dir}")
string(FIND "${found_dir}" "${prefix}/" at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "install test: freezeframe found in '${found_dir}', not under ${prefix}")
endif()

run(build "${CMAKE_COMMAND}" --build "${consumer_build}" --config Release)

find_program(consumer_exe consumer PATHS "${consumer_build}" "${consumer_build}/Release"
             NO_DEFAULT_PATH REQUIRED)
run(run "${consumer_exe}")
message(STATUS "install test: passed")

# The CUDA backend's tests. Included from tests/CMakeLists.txt (its functions and variables are
# in scope); in a FF_CUDA_ONLY build this is the whole test tree.
#
#   ff_tests_cuda_host (label cuda_host)  no GPU needed: ptxas over every generated kernel, the
#       PTX reference interpreter against the LLVM backend, math ulp bounds, driver loading
#       errors, the backend and graph replay on the simulated driver.
#   ff_tests_cuda_sim (labels cuda_sim, slow)  the array and recording corpora through the
#       "cuda" backend on the simulated driver.
#   ff_tests_cuda (label cuda)  the same on a real GPU; prints "skipped: no CUDA device" (and
#       CTest reports the test as skipped) where there is none. tests/gpu/run.sh runs it.

# tests/cuda/ holds what the CUDA tests share: the PTX reference interpreter, the kernel IR
# corpus, the simulated driver, ptxas helpers and the cross-backend corpus.
find_program(FF_PTXAS ptxas HINTS ENV CUDA_HOME ENV CUDA_PATH PATH_SUFFIXES bin
             PATHS /usr/local/cuda/bin DOC "ptxas of the CUDA toolkit (tests only)")
add_library(ff_test_cuda_support OBJECT cuda/ptx_interpreter.cpp cuda/ir_corpus.cpp cuda/ptxas.cpp
            cuda/fake_driver.cpp cuda/fake_driver_handle.cpp cuda/cross_corpus.cpp)
target_link_libraries(ff_test_cuda_support PUBLIC freezeframe Catch2::Catch2 spdlog::spdlog
                                                  ff_dump)
target_include_directories(ff_test_cuda_support PUBLIC ${PROJECT_SOURCE_DIR}
                           ${CMAKE_CURRENT_SOURCE_DIR})
ff_warnings(ff_test_cuda_support)
ff_apply_sanitizers(ff_test_cuda_support)

# The runner tests/cuda_main.cpp, once for the GPU and once for the simulated driver. Like
# ff_test_main, it holds Catch's implementation, so it is built without our warning flags (GCC
# 12 reports false -Wmaybe-uninitialized in <regex>, which Catch uses, under sanitizers), and
# unoptimised like it (-O0 -g0: 12.6 s instead of 25.0 s of CPU per copy at -O3).
if(FF_CUDA_ONLY OR FF_TEST_EVERY_STACK)
  foreach(kind gpu sim)
    add_library(ff_cuda_test_main_${kind} OBJECT cuda_main.cpp)
    target_link_libraries(ff_cuda_test_main_${kind} PUBLIC Catch2::Catch2 freezeframe spdlog::spdlog)
    target_include_directories(ff_cuda_test_main_${kind} PRIVATE ${PROJECT_SOURCE_DIR}
                               ${CMAKE_CURRENT_SOURCE_DIR})
    ff_apply_sanitizers(ff_cuda_test_main_${kind})
  endforeach()
  set_source_files_properties(cuda_main.cpp PROPERTIES COMPILE_OPTIONS "-O0;-g0")
  target_compile_definitions(ff_cuda_test_main_gpu PRIVATE FF_CUDA_TESTS_ON_GPU)
endif()

# ff_add_cuda_test(<name> <gpu|sim> sources...): an executable with tests/cuda_main.cpp as
# runner (FF_BACKEND defaults to "cuda"; the simulated driver for `sim`).
function(ff_add_cuda_test name kind)
  add_executable(${name} ${ARGN} $<TARGET_OBJECTS:ff_cuda_test_main_${kind}>
                 $<TARGET_OBJECTS:ff_test_cuda_support>)
  # spdlog: its (header-only, FF_CUDA_ONLY) configuration must match the library's; ff_dump:
  # the recording corpus checks its recordings' JSON view.
  target_link_libraries(${name} PRIVATE freezeframe Catch2::Catch2 spdlog::spdlog ff_dump)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  if(NOT FF_CUDA_ONLY)
    target_compile_definitions(${name} PRIVATE FF_HAVE_LLVM_BACKEND)
  endif()
  ff_warnings(${name})
  ff_apply_sanitizers(${name})
endfunction()

set(FF_CUDA_SKIPS "skipped: no CUDA device;skipped: recording files not available")
# The corpora on the CUDA backend: always in a FF_CUDA_ONLY build, else with
# FF_TEST_EVERY_STACK (CI's sanitizer leg leaves them to the Release leg).
if(FF_CUDA_ONLY OR FF_TEST_EVERY_STACK)
  # Compiled once for both executables; the array and recording corpora are the LLVM tests'
  # own object libraries where those exist.
  if(FF_CUDA_ONLY)
    add_library(ff_cuda_corpus OBJECT array_ops.cpp array_construct.cpp array_memory.cpp
                record_corpus.cpp autodiff_test.cpp optimizers_test.cpp cuda_cross_test.cpp
                cuda_replay_modes_test.cpp cuda_freeze_test.cpp)
    set(FF_CUDA_CORPUS $<TARGET_OBJECTS:ff_cuda_corpus>)
  else()
    add_library(ff_cuda_corpus OBJECT cuda_cross_test.cpp cuda_replay_modes_test.cpp
                cuda_freeze_test.cpp)
    target_compile_definitions(ff_cuda_corpus PRIVATE FF_HAVE_LLVM_BACKEND)
    set(FF_CUDA_CORPUS $<TARGET_OBJECTS:ff_cuda_corpus> $<TARGET_OBJECTS:ff_array_suite>
        $<TARGET_OBJECTS:ff_record_corpus> $<TARGET_OBJECTS:ff_autodiff_suite>)
  endif()
  target_link_libraries(ff_cuda_corpus PUBLIC Catch2::Catch2 freezeframe spdlog::spdlog ff_dump)
  target_include_directories(ff_cuda_corpus PRIVATE ${PROJECT_SOURCE_DIR}
                             ${CMAKE_CURRENT_SOURCE_DIR})
  ff_warnings(ff_cuda_corpus)
  ff_apply_sanitizers(ff_cuda_corpus)

  # With a GPU.
  ff_add_cuda_test(ff_tests_cuda gpu ${FF_CUDA_CORPUS} cuda_backend_test.cpp
                   cuda/backend_env.cpp)
  target_compile_definitions(ff_tests_cuda PRIVATE FF_CUDA_TESTS_ON_GPU)
  if(FF_CUDA_ONLY)
    target_sources(ff_tests_cuda PRIVATE gpu/glibc_compat.cpp)
  endif()
  catch_discover_tests(ff_tests_cuda TEST_PREFIX "cuda." DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS cuda SKIP_REGULAR_EXPRESSION "${FF_CUDA_SKIPS}")

  # The GPU benchmarks (tests/gpu/run.sh runs them in full; a smoke run here).
  add_executable(ff_cuda_bench gpu/cuda_bench.cpp $<$<BOOL:${FF_CUDA_ONLY}>:gpu/glibc_compat.cpp>)
  target_link_libraries(ff_cuda_bench PRIVATE freezeframe spdlog::spdlog)
  target_include_directories(ff_cuda_bench PRIVATE ${PROJECT_SOURCE_DIR})
  ff_warnings(ff_cuda_bench)
  ff_apply_sanitizers(ff_cuda_bench)
  add_test(NAME cuda.bench_smoke COMMAND ff_cuda_bench --quick)
  set_tests_properties(cuda.bench_smoke PROPERTIES LABELS cuda TIMEOUT 300
                       SKIP_REGULAR_EXPRESSION "skipped: no CUDA device")
endif()

if(FF_CUDA_ONLY)
  return()
endif()

if(FF_TEST_EVERY_STACK)
  # The corpora on the simulated driver (~3.5 CPU minutes: the PTX is interpreted; `slow`).
  # Recordings made on LLVM and saved as files (a fixture), for the files case of the cross
  # test.
  ff_add_program(ff_cuda_export_recordings gpu/export_recordings.cpp cuda/cross_corpus.cpp)
  target_link_libraries(ff_cuda_export_recordings PRIVATE Catch2::Catch2 ff_dump)
  set(FF_CUDA_CROSS_DATA ${CMAKE_CURRENT_BINARY_DIR}/cuda-cross-data)
  add_test(NAME cuda_sim.export_llvm_recordings
           COMMAND ff_cuda_export_recordings ${FF_CUDA_CROSS_DATA})
  set_tests_properties(cuda_sim.export_llvm_recordings PROPERTIES LABELS "cuda_sim;slow"
                       FIXTURES_SETUP cuda_cross_files TIMEOUT 300)

  ff_add_cuda_test(ff_tests_cuda_sim sim ${FF_CUDA_CORPUS} cuda/backend_env.cpp)
  catch_discover_tests(ff_tests_cuda_sim TEST_PREFIX "cuda_sim." DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "cuda_sim;slow" TIMEOUT 900 SKIP_REGULAR_EXPRESSION "${FF_CUDA_SKIPS}"
               FIXTURES_REQUIRED cuda_cross_files
               ENVIRONMENT "FF_CUDA_CROSS_DATA=${FF_CUDA_CROSS_DATA}")
endif()

# Without a GPU.
ff_add_test(ff_tests_cuda_host cuda_host cuda_codegen_test.cpp cuda_regions_test.cpp cuda_backend_test.cpp
            cuda_driver_test.cpp cuda_graph_test.cpp cuda/backend_env.cpp
            $<TARGET_OBJECTS:ff_test_cuda_support>)
target_compile_definitions(ff_tests_cuda_host PRIVATE FF_HAVE_LLVM_BACKEND)
# A stand-in libcuda.so (every entry point exported; cuInit's answer steered by FF_FAKE_CUINIT)
# for the driver-loading tests, which open it by path.
add_library(ff_test_fake_libcuda MODULE cuda/fake_libcuda.cpp cuda/fake_libcuda_init.cpp)
target_include_directories(ff_test_fake_libcuda PRIVATE ${PROJECT_SOURCE_DIR})
add_dependencies(ff_tests_cuda_host ff_test_fake_libcuda)
# ptxas found at configure time and the stand-in library reach the tests' environment.
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES
             ${CMAKE_CURRENT_BINARY_DIR}/ff_cuda_test_env.cmake)
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/ff_cuda_test_env.cmake
     CONTENT "set(ENV{FF_PTXAS} \"${FF_PTXAS}\")
set(ENV{FF_TEST_FAKE_LIBCUDA} \"$<TARGET_FILE:ff_test_fake_libcuda>\")\n")

# The simulated driver as a libcuda replacement (FF_CUDA_DRIVER_LIBRARY=<it>): runs the GPU
# executables end to end without a GPU.
if(FF_TEST_EVERY_STACK)
  add_library(ff_cuda_sim MODULE cuda/sim_libcuda.cpp cuda/fake_driver.cpp cuda/ptx_interpreter.cpp)
  target_include_directories(ff_cuda_sim PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include
                             ${CMAKE_CURRENT_SOURCE_DIR})
  set_target_properties(ff_cuda_sim PROPERTIES CXX_VISIBILITY_PRESET hidden)
  ff_warnings(ff_cuda_sim)
  add_test(NAME cuda_sim.benchmarks_run_on_the_simulated_driver COMMAND ff_cuda_bench --quick)
  set_tests_properties(cuda_sim.benchmarks_run_on_the_simulated_driver PROPERTIES
    LABELS "cuda_sim;slow" TIMEOUT 600 FAIL_REGULAR_EXPRESSION "skipped|WRONG|failed"
    ENVIRONMENT "FF_CUDA_DRIVER_LIBRARY=$<TARGET_FILE:ff_cuda_sim>;FF_REQUIRE_CUDA=1")
endif()


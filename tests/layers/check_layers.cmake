# Static checks of the layer rules (DESIGN.md, "The layers, and who may call whom"), run as
# CTest tests over the library's sources: cmake -DFF_SOURCE_DIR=<repo> -DFF_CHECK=<check> -P.
#
#   environment: the library reads the environment only in runtime/ (runtime/environment.cpp
#     reads every FF_* variable; the layers below get the values handed down). tests/ and bench/
#     are harnesses with knobs of their own (FF_REQUIRE_CUDA, FF_BENCH_SMOKE, ...) and are not
#     part of the library, so they are not checked.
#   includes: a folder includes headers only from the folders below it.
cmake_minimum_required(VERSION 3.25)

set(library_folders common dist backend tracer autodiff recorder replay registry runtime frontend include tools
                    examples)

function(sources_of folder out)
  file(GLOB_RECURSE files "${FF_SOURCE_DIR}/${folder}/*.cpp" "${FF_SOURCE_DIR}/${folder}/*.h")
  set(${out} "${files}" PARENT_SCOPE)
endfunction()

set(failures "")
if(FF_CHECK STREQUAL "environment")
  foreach(folder IN LISTS library_folders)
    if(folder STREQUAL "runtime")
      continue()
    endif()
    sources_of(${folder} files)
    foreach(f IN LISTS files)
      file(STRINGS "${f}" hits REGEX "getenv|[^_a-z]environ[^a-z_]|setenv\\(")
      foreach(line IN LISTS hits)
        file(RELATIVE_PATH rel "${FF_SOURCE_DIR}" "${f}")
        string(STRIP "${line}" line)
        list(APPEND failures "${rel}: ${line}")
      endforeach()
    endforeach()
  endforeach()
  set(what "reads the environment outside runtime/ (read it in runtime/environment.cpp and hand \
the value down)")
elseif(FF_CHECK STREQUAL "includes")
  # folder -> the project folders its files may include from (besides itself and include/)
  set(allowed_common "")
  set(allowed_dist common)
  set(allowed_backend common dist)
  set(allowed_tracer common dist backend)
  set(allowed_autodiff common dist backend tracer)
  set(allowed_recorder common dist backend)
  set(allowed_replay common dist backend recorder)
  set(allowed_registry common dist backend recorder)
  set(allowed_runtime common dist backend recorder replay registry tracer)
  set(allowed_frontend common dist backend recorder replay registry tracer runtime)
  set(all_folders common dist backend tracer autodiff recorder replay registry runtime frontend tools)
  foreach(folder common dist backend tracer autodiff recorder replay registry runtime frontend)
    sources_of(${folder} files)
    foreach(f IN LISTS files)
      file(STRINGS "${f}" includes REGEX "^#include \"[a-z_]+/")
      foreach(line IN LISTS includes)
        string(REGEX REPLACE "^#include \"([a-z_]+)/.*" "\\1" target "${line}")
        if(target STREQUAL folder OR NOT target IN_LIST all_folders
           OR target IN_LIST allowed_${folder})
          continue()
        endif()
        file(RELATIVE_PATH rel "${FF_SOURCE_DIR}" "${f}")
        list(APPEND failures "${rel}: ${line} (${folder}/ may include ${allowed_${folder}})")
      endforeach()
    endforeach()
  endforeach()
  set(what "includes a header of a layer above its own")
else()
  message(FATAL_ERROR "unknown check '${FF_CHECK}'")
endif()

if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "the library ${what}:\n  ${text}")
endif()
message(STATUS "layers: ${FF_CHECK}: ok")

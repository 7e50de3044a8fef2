# FF_SANITIZE=address,undefined builds everything with those sanitizers; UBSan aborts.
if(FF_SANITIZE)
  set(FF_SANITIZE_FLAGS -fsanitize=${FF_SANITIZE} -fno-omit-frame-pointer)
  if(FF_SANITIZE MATCHES "undefined")
    list(APPEND FF_SANITIZE_FLAGS -fno-sanitize-recover=undefined)
  endif()
  add_compile_definitions(_GLIBCXX_ASSERTIONS)
endif()

# FF_FUZZ=ON (clang only) adds libFuzzer's coverage instrumentation to everything; the fuzz
# targets link libFuzzer itself. Combine with FF_SANITIZE=address,undefined.
if(FF_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "FF_FUZZ needs clang (configure with CXX=clang++ CC=clang)")
  endif()
  list(APPEND FF_SANITIZE_FLAGS -fsanitize=fuzzer-no-link)
endif()

# A folder may compile its own targets with fewer checks by setting FF_SANITIZE_COMPILE_FLAGS
# (tests/ does); they still link every sanitizer's runtime, which the library needs.
function(ff_apply_sanitizers target)
  if(FF_SANITIZE_FLAGS)
    if(DEFINED FF_SANITIZE_COMPILE_FLAGS)
      target_compile_options(${target} PRIVATE ${FF_SANITIZE_COMPILE_FLAGS})
    else()
      target_compile_options(${target} PRIVATE ${FF_SANITIZE_FLAGS})
    endif()
    target_link_options(${target} PUBLIC ${FF_SANITIZE_FLAGS})
  endif()
endfunction()

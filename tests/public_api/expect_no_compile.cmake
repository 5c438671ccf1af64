# cmake -DCXX=compiler -DINCLUDES="dir;dir..." -DSOURCE=file.cpp -P expect_no_compile.cmake
# Passes when SOURCE fails to compile because its internal header is not found, and only then: a
# source that compiles, or fails for another reason (a public or own header missing), is a failure.
set(flags -std=c++20 -fsyntax-only)
foreach(dir ${INCLUDES})
  list(APPEND flags -I${dir})
endforeach()
execute_process(COMMAND ${CXX} ${flags} ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled: an internal header is reachable from the public API's include path")
endif()
string(REGEX MATCHALL "fatal error: [^\n]*" fatal "${err}")
if(NOT fatal MATCHES "runtime/sampler\\.h: No such file" OR fatal MATCHES "glass/llm\\.h|cli/common\\.h")
  message(FATAL_ERROR "${SOURCE} failed for another reason than the internal header:\n${err}")
endif()
message(STATUS "as it should: ${fatal}")

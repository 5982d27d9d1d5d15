# exmy_add_test(NAME SOURCES src... [CUDA_SOURCES src.cu...] [LABELS ...]): one test executable
# exmy_test_NAME from the listed sources (paths relative to the calling CMakeLists.txt; the .cu
# files only in CUDA builds), linked with the shared Catch2 main (tests/main.cpp). Tests mirror
# the source tree: tests/<folder>/test_<name>.cpp, listed by name in tests/CMakeLists.txt.
exmy_include_tree(tests tests)
function(exmy_add_test NAME)
  cmake_parse_arguments(ARG "" "" "SOURCES;CUDA_SOURCES;LABELS" ${ARGN})
  set(srcs ${ARG_SOURCES})
  if(EXMY_HAVE_CUDA)
    list(APPEND srcs ${ARG_CUDA_SOURCES})
  endif()
  set(target exmy_test_${NAME})
  add_executable(${target} ${srcs} ${PROJECT_SOURCE_DIR}/tests/main.cpp)
  target_link_libraries(${target} PRIVATE exmy::gpu exmy::sim Catch2::Catch2 rapidcheck)
  # tests/support, tests/gpu and tests/quant helpers are included as "tests/...".
  target_include_directories(${target} PRIVATE ${EXMY_TREE_tests})
  if(EXMY_HAVE_CUDA)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false
                           --expt-relaxed-constexpr>)
  endif()
  if("gpu" IN_LIST ARG_LABELS)
    target_compile_definitions(${target} PRIVATE EXMY_TEST_NEEDS_GPU=1)
  endif()
  add_test(NAME ${NAME} COMMAND ${target})
  set_tests_properties(${NAME} PROPERTIES SKIP_RETURN_CODE 77 LABELS "${ARG_LABELS}"
                       ENVIRONMENT "EXMY_CLI=$<TARGET_FILE:exmy>")
endfunction()

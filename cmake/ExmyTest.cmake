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
  # The Catch2 main is compiled once per flavour (with or without the GPU check), not once per
  # test executable: Catch2 v2 compiles its whole implementation in the file that defines
  # CATCH_CONFIG_RUNNER, about 20 s each on the CI machine, 17 times before this.
  if("gpu" IN_LIST ARG_LABELS)
    set(main exmy_test_main_gpu)
  else()
    set(main exmy_test_main)
  endif()
  if(NOT TARGET ${main})
    add_library(${main} OBJECT ${PROJECT_SOURCE_DIR}/tests/main.cpp)
    target_link_libraries(${main} PRIVATE exmy::gpu Catch2::Catch2 rapidcheck)
    if(main STREQUAL "exmy_test_main_gpu")
      target_compile_definitions(${main} PRIVATE EXMY_TEST_NEEDS_GPU=1)
    endif()
  endif()
  add_executable(${target} ${srcs} $<TARGET_OBJECTS:${main}>)
  target_link_libraries(${target} PRIVATE exmy::gpu exmy::sim Catch2::Catch2 rapidcheck)
  # tests/support, tests/gpu and tests/quant helpers are included as "tests/...".
  target_include_directories(${target} PRIVATE ${EXMY_TREE_tests})
  if(EXMY_HAVE_CUDA)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false
                           --expt-relaxed-constexpr>)
  endif()
  add_test(NAME ${NAME} COMMAND ${target})
  set_tests_properties(${NAME} PROPERTIES SKIP_RETURN_CODE 77 LABELS "${ARG_LABELS}"
                       ENVIRONMENT "EXMY_CLI=$<TARGET_FILE:exmy>;EXMY_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endfunction()

# The ctest test layers_planted_include: plants forbidden includes between sim/ folders in a
# scratch copy of the tree and checks that the configure step of that copy fails, naming each
# file, its include and the layer rule it breaks (exmy_check_layer_includes,
# cmake/ExmyLayerCheck.cmake), and nothing else (so the unplanted tree passes the check).
#
#   cmake -DEXMY_SOURCE_DIR=<exmy source> -DEXMY_WORK_DIR=<scratch> [-DEXMY_GENERATOR=<gen>]
#         -P cmake/ExmyLayerPlant.cmake
#
# The copy holds what the configure step reads up to the end of sim/CMakeLists.txt, where the
# check stops it: the top CMakeLists.txt, cmake/, include/, sim/ and the compiled-in profile.
if(NOT EXMY_SOURCE_DIR OR NOT EXMY_WORK_DIR)
  message(FATAL_ERROR "usage: cmake -DEXMY_SOURCE_DIR=... -DEXMY_WORK_DIR=... -P ExmyLayerPlant.cmake")
endif()
set(src ${EXMY_WORK_DIR}/src)
set(bin ${EXMY_WORK_DIR}/build)
file(REMOVE_RECURSE ${EXMY_WORK_DIR})
file(MAKE_DIRECTORY ${src}/golden/profiles/sm90)
file(COPY ${EXMY_SOURCE_DIR}/CMakeLists.txt ${EXMY_SOURCE_DIR}/cmake ${EXMY_SOURCE_DIR}/include
          ${EXMY_SOURCE_DIR}/sim DESTINATION ${src})
file(COPY ${EXMY_SOURCE_DIR}/golden/profiles/sm90/cublaslt-h100-gemm.json
     DESTINATION ${src}/golden/profiles/sm90)

# The plants: FILE|HEADER|TARGET. An upward edge from the bottom folder (io -> golden) in a
# source, and a sideways one (quant -> optim) in a header.
set(plants "sim/io/json.cpp|sim/golden/corpus.hpp|exmy::io"
           "sim/quant/quantize.hpp|sim/optim/registry.hpp|exmy::quant")
foreach(plant IN LISTS plants)
  string(REPLACE "|" ";" parts "${plant}")
  list(GET parts 0 file)
  list(GET parts 1 header)
  file(READ ${src}/${file} text)
  file(WRITE ${src}/${file} "#include \"${header}\"  // planted by layers_planted_include\n${text}")
endforeach()

set(gen "")
if(EXMY_GENERATOR)
  set(gen -G "${EXMY_GENERATOR}")
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${src} -B ${bin} ${gen} -DEXMY_CUDA=OFF -DEXMY_TESTS=OFF
          -DEXMY_BENCH=OFF -DEXMY_EXAMPLES=OFF -DEXMY_CLI=OFF -DEXMY_PYTHON=OFF
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}\n${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "the configure step passed with planted forbidden includes:\n${all}")
endif()
# CMake wraps long FATAL_ERROR messages: compare with whitespace runs joined.
string(REGEX REPLACE "[ \t\r\n]+" " " flat "${all}")
set(failed "")
foreach(plant IN LISTS plants)
  string(REPLACE "|" ";" parts "${plant}")
  list(GET parts 0 file)
  list(GET parts 1 header)
  list(GET parts 2 target)
  set(expected "${file}: #include \"${header}\" breaks the layer rule of ${target}")
  string(FIND "${flat}" "${expected}" at)
  if(at EQUAL -1)
    string(APPEND failed "  missing: ${expected}\n")
  endif()
endforeach()
# Nothing but the plants is reported: the unplanted tree passes the check.
string(REGEX MATCHALL "breaks the layer rule of" reported "${flat}")
list(LENGTH reported n)
list(LENGTH plants n_plants)
if(NOT n EQUAL n_plants)
  string(APPEND failed "  ${n} violations reported, ${n_plants} planted\n")
endif()
if(NOT flat MATCHES "layer check failed \\(cmake/ExmyLayerCheck.cmake\\)")
  string(APPEND failed "  the configure step failed, but not in the layer check\n")
endif()
if(failed)
  message(FATAL_ERROR "layers_planted_include:\n${failed}configure output:\n${all}")
endif()
message(STATUS "layers_planted_include: the configure step fails on each planted include:\n${err}")

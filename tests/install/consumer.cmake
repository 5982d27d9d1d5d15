# The ctest test install_consumer (registered in the top CMakeLists.txt; label `install`): the
# C++ package works from an install prefix and a consumer built with -O3 -march=native gets
# exmy's AdamW bits (issue 34). Steps, in EXMY_WORK_DIR (removed first):
#   1. cmake --install EXMY_BUILD_DIR --prefix stage           (cmake/ExmyInstall.cmake)
#   2. configure and build examples/consumer against stage with CMAKE_CXX_FLAGS -O3 -march=native;
#      its compile command must hold those flags and exmy::native's -ffp-contract=off
#   3. run it: the pinned e4m3fn casts and int8 quantization, and 3 AdamW steps -> out/
#   4. run the installed stage/bin/exmy step --compat torch-cpu|torch-cuda on the consumer's
#      inputs -> out/cli-<compat>/
#   5. params.npy, state1.npy (exp_avg) and state2.npy (exp_avg_sq) must be byte-identical to
#      the consumer's out/<compat>/ (torch-cuda's denominator is a multiply then an add, which a
#      build without -ffp-contract=off fuses: with -ffp-contract=fast 561 of 4,096 params differ,
#      checked by hand on 2026-12-01)
# cmake -DEXMY_BUILD_DIR=... -DEXMY_SOURCE_DIR=... -DEXMY_WORK_DIR=... -DEXMY_GENERATOR=...
#       -DEXMY_CXX_COMPILER=... -P tests/install/consumer.cmake
foreach(v EXMY_BUILD_DIR EXMY_SOURCE_DIR EXMY_WORK_DIR EXMY_GENERATOR EXMY_CXX_COMPILER)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "install_consumer: ${v} not set")
  endif()
endforeach()
set(stage ${EXMY_WORK_DIR}/stage)
set(build ${EXMY_WORK_DIR}/build)
set(out ${EXMY_WORK_DIR}/out)
file(REMOVE_RECURSE ${EXMY_WORK_DIR})
file(MAKE_DIRECTORY ${out}/torch-cpu ${out}/torch-cuda)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_consumer: ${what} failed (${rc}):\n${o}\n${e}")
  endif()
  message(STATUS "install_consumer: ${what}: ok")
  set(run_output "${o}" PARENT_SCOPE)
endfunction()

run("cmake --install" ${CMAKE_COMMAND} --install ${EXMY_BUILD_DIR} --prefix ${stage})
set(flags "-O3 -march=native")
run("configure examples/consumer" ${CMAKE_COMMAND} -S ${EXMY_SOURCE_DIR}/examples/consumer
    -B ${build} -G ${EXMY_GENERATOR} -DCMAKE_PREFIX_PATH=${stage} -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_CXX_COMPILER=${EXMY_CXX_COMPILER} -DCMAKE_CXX_FLAGS=${flags}
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
run("build examples/consumer" ${CMAKE_COMMAND} --build ${build})
file(READ ${build}/compile_commands.json cc)
foreach(flag -O3 -march=native -ffp-contract=off -fno-fast-math)
  string(FIND "${cc}" " ${flag}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "install_consumer: the consumer's compile command lacks ${flag}:\n${cc}")
  endif()
endforeach()
string(FIND "${cc}" "-march=native" at_march)
string(FIND "${cc}" "-ffp-contract=off" at_contract)
if(at_contract LESS at_march)
  message(FATAL_ERROR "install_consumer: -ffp-contract=off comes before the consumer's flags:\n${cc}")
endif()

run("exmy_consumer" ${build}/exmy_consumer ${out})
message(STATUS "${run_output}")
foreach(compat torch-cpu torch-cuda)
  run("installed exmy step --compat ${compat}" ${stage}/bin/exmy step --optimizer adamw
      --compat ${compat} --lr 0.01 --wd 0.01 --beta1 0.9 --beta2 0.999 --eps 1e-8 --steps 3
      --params ${out}/p.npy --grads ${out}/g.npy --out ${out}/cli-${compat} --quiet)
  foreach(f params.npy state1.npy state2.npy)
    execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${out}/${compat}/${f}
                            ${out}/cli-${compat}/${f} RESULT_VARIABLE differ)
    if(NOT differ EQUAL 0)
      message(FATAL_ERROR "install_consumer: ${compat}/${f} of the consumer (-O3 -march=native) "
                          "differs from exmy step's (${out}/${compat}/${f}, ${out}/cli-${compat}/${f})")
    endif()
  endforeach()
  message(STATUS "install_consumer: ${compat}: params, exp_avg, exp_avg_sq after 3 AdamW steps: "
                 "the same bytes")
endforeach()

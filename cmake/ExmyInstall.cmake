# The C++ package (EXMY_INSTALL, on when exmy is the top-level project and not a wheel build).
# `cmake --install BUILD --prefix P` writes
#   P/include/exmy/sim/...        every header of sim/ under its source path: the layer trees of
#                                 the build (cmake/ExmyLayers.cmake) collapse into this one folder,
#                                 so a consumer spells includes as exmy's sources do
#                                 (#include "sim/native/convert.hpp")
#   P/include/exmy/gpu/...        the headers of gpu/ (CUDA builds)
#   P/include/exmy/backend.h      the backend ABI (#include "exmy/backend.h")
#   P/lib/libexmy_*.a             the static libraries
#   P/bin/exmy                    the command-line tool (when built)
#   P/lib/cmake/exmy/             exmyConfig.cmake and the find modules of MPFR and GMP
# and find_package(exmy CONFIG) gives
#   exmy::native   the header-only engine (no MPFR); its usage requirements carry
#                  -ffp-contract=off -fno-fast-math (the top CMakeLists.txt)
#   exmy::exmy     every host library with the MPFR oracle (MPFR and GMP through find_dependency)
#   exmy::gpu      the CUDA kernels (only from a build with CUDA)
# Components (find_package(exmy CONFIG COMPONENTS native)) pick among them; none asks for all
# that were built. examples/consumer/ is a project that uses the installed package; the ctest
# test install_consumer (tests/install/consumer.cmake) builds it against a staging install.
include(CMakePackageConfigHelpers)
set(EXMY_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/exmy)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/sim/ DESTINATION ${EXMY_INSTALL_INCLUDEDIR}/sim
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")
install(FILES ${PROJECT_SOURCE_DIR}/include/exmy/backend.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/exmy)

# Export names drop the exmy_ prefix: exmy_io -> exmy::io, as the aliases of the build tree.
set(exmy_native_targets exmy_common exmy_native exmy_native_descriptors exmy_backend_abi)
set(exmy_host_targets exmy_oracle exmy_sim)
foreach(t IN LISTS EXMY_SIM_FOLDERS)
  string(REPLACE "exmy::" "exmy_" t ${t})
  list(APPEND exmy_host_targets ${t})
endforeach()
foreach(t IN LISTS exmy_native_targets exmy_host_targets)
  get_target_property(name ${t} EXPORT_NAME)
  if(NOT name)
    string(REGEX REPLACE "^exmy_" "" name ${t})
    set_target_properties(${t} PROPERTIES EXPORT_NAME ${name})
  endif()
endforeach()

install(TARGETS ${exmy_native_targets} EXPORT exmyNativeTargets)
install(EXPORT exmyNativeTargets NAMESPACE exmy:: DESTINATION ${EXMY_INSTALL_CMAKEDIR})
install(TARGETS ${exmy_host_targets} EXPORT exmyTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT exmyTargets NAMESPACE exmy:: DESTINATION ${EXMY_INSTALL_CMAKEDIR})
if(EXMY_HAVE_CUDA)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/gpu/ DESTINATION ${EXMY_INSTALL_INCLUDEDIR}/gpu
          FILES_MATCHING PATTERN "*.hpp" PATTERN "*.cuh")
  set_target_properties(exmy_gpu PROPERTIES EXPORT_NAME gpu)
  install(TARGETS exmy_gpu EXPORT exmyGpuTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT exmyGpuTargets NAMESPACE exmy:: DESTINATION ${EXMY_INSTALL_CMAKEDIR})
endif()
if(TARGET exmy)
  install(TARGETS exmy RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(EXMY_CONFIG_OPENMP ${OpenMP_CXX_FOUND})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/exmyConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/exmyConfig.cmake
                              INSTALL_DESTINATION ${EXMY_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/exmyConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/exmyConfig.cmake ${PROJECT_BINARY_DIR}/exmyConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/FindMPFR.cmake ${PROJECT_SOURCE_DIR}/cmake/FindGMP.cmake
        DESTINATION ${EXMY_INSTALL_CMAKEDIR})

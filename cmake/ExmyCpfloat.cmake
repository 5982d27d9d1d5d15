# Optional CPFloat peer for the CPU benchmarks (issue 15): CPFloat (Fasi & Mikaitis) is a
# header-only C library, not vendored here. scripts/fetch-cpfloat.sh puts it (and the PCG C
# library it draws random numbers from) into build-deps/, outside git; point the build at it with
#   -DEXMY_CPFLOAT_DIR=<dir holding cpfloat_binary32.h>  [-DEXMY_PCG_DIR=<pcg-c root>]
# Without EXMY_CPFLOAT_DIR (or a system install) the benchmarks build and run without the CPFloat
# rows and say so. Defines:
#   EXMY_HAVE_CPFLOAT        ON when the headers were found
#   exmy_cpfloat_peer        a static C library wrapping the calls the benchmarks time
#                            (bench/common/cpfloat_peer.{h,c}); links exmy_peer_pcg when PCG is found
#   EXMY_CPFLOAT_HOW         the one-line hint printed when CPFloat is missing
set(EXMY_CPFLOAT_DIR "${CMAKE_SOURCE_DIR}/build-deps/cpfloat" CACHE PATH
    "CPFloat: a directory holding cpfloat_binary32.h (scripts/fetch-cpfloat.sh fills build-deps/)")
set(EXMY_PCG_DIR "${CMAKE_SOURCE_DIR}/build-deps/pcg-c" CACHE PATH
    "PCG C library root (include/pcg_variants.h, src/pcg-*.c) for CPFloat's random numbers")
set(EXMY_CPFLOAT_HOW "run scripts/fetch-cpfloat.sh and configure with -DEXMY_CPFLOAT_DIR=<dir>")
set(EXMY_HAVE_CPFLOAT OFF)

find_path(EXMY_CPFLOAT_INCLUDE cpfloat_binary32.h
          HINTS "${EXMY_CPFLOAT_DIR}" PATH_SUFFIXES src include include/cpfloat cpfloat)
if(NOT EXMY_CPFLOAT_INCLUDE)
  message(STATUS "CPFloat not found (${EXMY_CPFLOAT_HOW}); the CPFloat benchmark rows are skipped")
  return()
endif()
set(EXMY_HAVE_CPFLOAT ON)

# PCG: CPFloat uses pcg32 when pcg_variants.h is force-included, else the C library's rand().
find_path(EXMY_PCG_INCLUDE pcg_variants.h HINTS "${EXMY_PCG_DIR}" PATH_SUFFIXES include)
set(_pcg_sources "")
if(EXMY_PCG_INCLUDE)
  foreach(w 8 16 32 64 128)
    foreach(part advance output rngs)
      if(EXISTS "${EXMY_PCG_DIR}/src/pcg-${part}-${w}.c")
        list(APPEND _pcg_sources "${EXMY_PCG_DIR}/src/pcg-${part}-${w}.c")
      endif()
    endforeach()
  endforeach()
endif()

add_library(exmy_cpfloat_peer STATIC ${CMAKE_SOURCE_DIR}/bench/common/cpfloat_peer.c)
set_target_properties(exmy_cpfloat_peer PROPERTIES C_STANDARD 11 C_EXTENSIONS ON)
target_include_directories(exmy_cpfloat_peer PRIVATE "${EXMY_CPFLOAT_INCLUDE}")
target_include_directories(exmy_cpfloat_peer PUBLIC ${CMAKE_SOURCE_DIR}/bench/common)
# CPFloat's own code is not ours to lint; one thread (no -fopenmp), as the issue's rows are;
# -O3 and -march=native as CPFloat's own Makefile builds it (EXMY_CPFLOAT_ARCH_FLAGS to change).
set(EXMY_CPFLOAT_ARCH_FLAGS "-march=native" CACHE STRING
    "Architecture flags for the CPFloat peer (CPFloat's Makefile uses -march=native)")
separate_arguments(_cpf_arch UNIX_COMMAND "${EXMY_CPFLOAT_ARCH_FLAGS}")
target_compile_options(exmy_cpfloat_peer PRIVATE -w -O3 ${_cpf_arch})
find_library(EXMY_LIBM m)
if(EXMY_LIBM)
  target_link_libraries(exmy_cpfloat_peer PRIVATE ${EXMY_LIBM})
endif()
if(_pcg_sources)
  add_library(exmy_peer_pcg STATIC ${_pcg_sources})
  set_target_properties(exmy_peer_pcg PROPERTIES C_STANDARD 11 C_EXTENSIONS ON)
  target_include_directories(exmy_peer_pcg PUBLIC "${EXMY_PCG_INCLUDE}")
  target_compile_options(exmy_peer_pcg PRIVATE -w -O3 ${_cpf_arch})
  target_compile_options(exmy_cpfloat_peer PRIVATE -include "${EXMY_PCG_INCLUDE}/pcg_variants.h")
  target_compile_definitions(exmy_cpfloat_peer PRIVATE EXMY_CPFLOAT_PCG=1)
  target_link_libraries(exmy_cpfloat_peer PRIVATE exmy_peer_pcg)
  message(STATUS "CPFloat peer: ${EXMY_CPFLOAT_INCLUDE} with PCG (${EXMY_PCG_INCLUDE})")
else()
  message(STATUS "CPFloat peer: ${EXMY_CPFLOAT_INCLUDE} without PCG (rand(); set EXMY_PCG_DIR)")
endif()

# The same wrapper as a shared library, for bench/peers/cpu_cast_vs_peers.py (ctypes): CPFloat
# timed in the Python process beside torch, ml_dtypes and exmy.
set_target_properties(exmy_cpfloat_peer PROPERTIES POSITION_INDEPENDENT_CODE ON)
if(TARGET exmy_peer_pcg)
  set_target_properties(exmy_peer_pcg PROPERTIES POSITION_INDEPENDENT_CODE ON)
endif()
add_library(exmy_cpfloat_peer_shared SHARED ${CMAKE_SOURCE_DIR}/bench/common/cpfloat_peer.c)
get_target_property(_cpf_opts exmy_cpfloat_peer COMPILE_OPTIONS)
get_target_property(_cpf_defs exmy_cpfloat_peer COMPILE_DEFINITIONS)
set_target_properties(exmy_cpfloat_peer_shared PROPERTIES C_STANDARD 11 C_EXTENSIONS ON
                      OUTPUT_NAME exmy_cpfloat_peer)
target_include_directories(exmy_cpfloat_peer_shared PRIVATE "${EXMY_CPFLOAT_INCLUDE}"
                           ${CMAKE_SOURCE_DIR}/bench/common)
target_compile_options(exmy_cpfloat_peer_shared PRIVATE ${_cpf_opts})
if(_cpf_defs)
  target_compile_definitions(exmy_cpfloat_peer_shared PRIVATE ${_cpf_defs})
endif()
if(EXMY_LIBM)
  target_link_libraries(exmy_cpfloat_peer_shared PRIVATE ${EXMY_LIBM})
endif()
if(TARGET exmy_peer_pcg)
  target_link_libraries(exmy_cpfloat_peer_shared PRIVATE exmy_peer_pcg)
endif()

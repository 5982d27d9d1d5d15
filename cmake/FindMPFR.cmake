# FindMPFR: the MPFR library (exmy's oracle, sim/oracle), as the imported target MPFR::MPFR,
# which links GMP::GMP (cmake/FindGMP.cmake, found here). Installed with exmy's package config.
#   MPFR_ROOT         a prefix to search first (CMake's <Package>_ROOT)
#   EXMY_STATIC_DEPS  ON: take libmpfr.a before libmpfr.so (the wheel build)
# Sets MPFR_FOUND, MPFR_INCLUDE_DIR, MPFR_LIBRARY.
include(FindPackageHandleStandardArgs)
if(NOT TARGET GMP::GMP)
  if(MPFR_FIND_REQUIRED)
    find_package(GMP REQUIRED)
  else()
    find_package(GMP)
  endif()
endif()
find_path(MPFR_INCLUDE_DIR mpfr.h)
if(EXMY_STATIC_DEPS)
  find_library(MPFR_LIBRARY NAMES libmpfr.a mpfr)
else()
  find_library(MPFR_LIBRARY NAMES mpfr)
endif()
find_package_handle_standard_args(MPFR REQUIRED_VARS MPFR_LIBRARY MPFR_INCLUDE_DIR GMP_FOUND)
if(MPFR_FOUND AND NOT TARGET MPFR::MPFR)
  add_library(MPFR::MPFR UNKNOWN IMPORTED)
  set_target_properties(MPFR::MPFR PROPERTIES IMPORTED_LOCATION "${MPFR_LIBRARY}"
                                              INTERFACE_INCLUDE_DIRECTORIES "${MPFR_INCLUDE_DIR}"
                                              INTERFACE_LINK_LIBRARIES GMP::GMP)
endif()
mark_as_advanced(MPFR_INCLUDE_DIR MPFR_LIBRARY)

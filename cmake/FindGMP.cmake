# FindGMP: the GNU multiple-precision library, as the imported target GMP::GMP.
# Installed with exmy's package config (exmyConfig.cmake finds MPFR, which finds GMP).
#   GMP_ROOT          a prefix to search first (CMake's <Package>_ROOT)
#   EXMY_STATIC_DEPS  ON: take libgmp.a before libgmp.so (the wheel build)
# Sets GMP_FOUND, GMP_INCLUDE_DIR, GMP_LIBRARY.
include(FindPackageHandleStandardArgs)
find_path(GMP_INCLUDE_DIR gmp.h)
if(EXMY_STATIC_DEPS)
  find_library(GMP_LIBRARY NAMES libgmp.a gmp)
else()
  find_library(GMP_LIBRARY NAMES gmp)
endif()
find_package_handle_standard_args(GMP REQUIRED_VARS GMP_LIBRARY GMP_INCLUDE_DIR)
if(GMP_FOUND AND NOT TARGET GMP::GMP)
  add_library(GMP::GMP UNKNOWN IMPORTED)
  set_target_properties(GMP::GMP PROPERTIES IMPORTED_LOCATION "${GMP_LIBRARY}"
                                            INTERFACE_INCLUDE_DIRECTORIES "${GMP_INCLUDE_DIR}")
endif()
mark_as_advanced(GMP_INCLUDE_DIR GMP_LIBRARY)

// The repository's root, for tests that read committed data (golden/, tests/<folder>/data/).
// ctest sets EXMY_SOURCE_DIR (cmake/ExmyTest.cmake); without it the root is found from this
// header's __FILE__, which is absolute in a plain build but relative to the build directory when
// ccache rewrites paths under its base_dir (CCACHE_BASEDIR): a data path built from __FILE__ then
// depended on the directory a test ran from (tests/format's codebook case failed under ctest,
// whose working directory is BUILD/tests, while the file was there).
#pragma once

#include <cstdlib>
#include <filesystem>

namespace exmy::testing {

inline std::filesystem::path source_root() {
  if (const char* d = std::getenv("EXMY_SOURCE_DIR"); d != nullptr && *d != 0) return d;
  // tests/support/source_tree.hpp: the root is three levels up.
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
}

}  // namespace exmy::testing

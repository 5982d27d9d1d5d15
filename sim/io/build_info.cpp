#include "sim/io/build_info.hpp"

#include "exmy_build_sha.h"

namespace exmy {

const char* build_git_sha() {
  return EXMY_BUILD_GIT_SHA;
}

}  // namespace exmy

// Shared Catch2 main. Pins RapidCheck's seed (printed) unless RC_PARAMS is set, so every run of
// the properties is reproducible; GPU test binaries exit 77 (ctest "skipped") without a GPU.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>

#include "gpu/common/runtime.hpp"

int main(int argc, char** argv) {
  if (std::getenv("RC_PARAMS") == nullptr) {
    setenv("RC_PARAMS", "seed=20261121", 1);
  }
  std::fprintf(stderr, "RapidCheck parameters: %s\n", std::getenv("RC_PARAMS"));
#if defined(EXMY_TEST_NEEDS_GPU)
  if (exmy::gpu::device_count() == 0) {
    std::fprintf(stderr, "no CUDA device: skipping GPU tests\n");
    return 77;
  }
  std::fprintf(stderr, "GPU: %s\n", exmy::gpu::device_name().c_str());
#endif
  return Catch::Session().run(argc, argv);
}

// gpu/common/launch.hpp PerDeviceBuffer: the process-lifetime device tables and workspaces of the
// optimizer kernels. Regression (compute-sanitizer --leak-check full, 2026-11-24, H100): the
// 8-bit Adam tables, the dynamic codebooks and the StableAdamW workspace were cudaMalloc'd into
// function statics, never freed (18,444 + 2,160 bytes reported leaked) and bound to whichever
// device used them first.
#include <catch2/catch.hpp>

#if EXMY_HAVE_CUDA
#include <cstdint>
#include <vector>

#include "gpu/common/launch.hpp"

using exmy::gpu::PerDeviceBuffer;

TEST_CASE("PerDeviceBuffer allocates once per device, fills once, grows on demand",
          "[gpu][cache]") {
  static PerDeviceBuffer buf;
  int fills = 0;
  auto fill = [&](void* d) {
    ++fills;
    const std::vector<std::uint32_t> h(64, 0xC0FFEEu);
    exmy::gpu::cuda_check(cudaMemcpy(d, h.data(), 256, cudaMemcpyHostToDevice), "fill");
  };
  void* a = buf.get(256, fill);
  void* b = buf.get(128, fill);  // smaller: the same buffer, no second fill
  CHECK(a == b);
  CHECK(fills == 1);
  std::vector<std::uint32_t> back(64);
  exmy::gpu::cuda_check(cudaMemcpy(back.data(), a, 256, cudaMemcpyDeviceToHost), "read");
  CHECK(back == std::vector<std::uint32_t>(64, 0xC0FFEEu));
  void* c = buf.get(1 << 20, fill);  // larger: reallocated and filled again
  CHECK(fills == 2);
  CHECK(buf.get(1 << 20, fill) == c);
  // A fill that throws leaves nothing behind and the next call allocates afresh.
  static PerDeviceBuffer failing;
  CHECK_THROWS(failing.get(64, [](void*) { throw std::runtime_error("fill failed"); }));
  int later = 0;
  CHECK(failing.get(64, [&](void*) { ++later; }) != nullptr);
  CHECK(later == 1);
}
#endif

// The portable fp32 exp, log and erf (sim/native/portable_math.hpp) on the GPU give the host's
// bits: every 61st fp32 code (70 million) plus the special codes, each function, one kernel.
// They are built from the platform seam's _rn operations only, so any difference is a bug in the
// seam or in the header (a contraction, a library call, a flush to zero).
#include <catch2/catch.hpp>

#if EXMY_HAVE_CUDA
#include <cstdint>
#include <cstring>
#include <vector>

#include "sim/native/portable_math.hpp"
#include "tests/gpu/gpu_test_util.hpp"

using exmy::gpu::testing::cuda_check;
using exmy::gpu::testing::DeviceBytes;

namespace {

__global__ void portable_math_kernel(const std::uint32_t* __restrict__ in, std::size_t n,
                                     std::uint32_t* __restrict__ out) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = __uint_as_float(in[i]);
  out[i] = __float_as_uint(exmy::native::portable_expf(x));
  out[n + i] = __float_as_uint(exmy::native::portable_logf(x));
  out[2 * n + i] = __float_as_uint(exmy::native::portable_erff(x));
}

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float flt(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

TEST_CASE("GPU portable exp/log/erf: the host's bits", "[gpu][lm]") {
  std::vector<std::uint32_t> in;
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += 61) {
    in.push_back(static_cast<std::uint32_t>(u));
  }
  for (std::uint32_t u :
       {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00800000u, 0x3F800000u, 0x3F3504F3u,
        0x42B17217u, 0x42B17218u, 0xC2CFF1B4u, 0xC2CFF1B5u, 0x38800000u, 0x40000000u, 0x407AE148u,
        0x7F7FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x7F800001u}) {
    in.push_back(u);
  }
  const std::size_t n = in.size();
  DeviceBytes din(n * 4), dout(3 * n * 4);
  din.upload(in);
  const unsigned threads = 256;
  portable_math_kernel<<<static_cast<unsigned>((n + threads - 1) / threads), threads>>>(
      static_cast<const std::uint32_t*>(din.get()), n, static_cast<std::uint32_t*>(dout.get()));
  cuda_check(cudaGetLastError(), "portable_math_kernel");
  const std::vector<std::uint32_t> got = dout.download<std::uint32_t>(3 * n);
  const char* names[3] = {"exp", "log", "erf"};
  for (int f = 0; f < 3; ++f) {
    std::size_t bad = 0, first = n;
    for (std::size_t i = 0; i < n; ++i) {
      const float x = flt(in[i]);
      const float want = f == 0   ? exmy::native::portable_expf(x)
                         : f == 1 ? exmy::native::portable_logf(x)
                                  : exmy::native::portable_erff(x);
      if (got[static_cast<std::size_t>(f) * n + i] != bits(want)) {
        if (bad++ == 0) first = i;
      }
    }
    INFO(names[f] << ": " << bad << " of " << n << " codes differ; first x = 0x" << std::hex
                  << (first < n ? in[first] : 0u) << " device 0x"
                  << (first < n ? got[static_cast<std::size_t>(f) * n + first] : 0u));
    CHECK(bad == 0);
  }
}
#endif

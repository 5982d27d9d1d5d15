// The ATen CPU kernels' scalar tails and parallel chunks (docs/SEMANTICS.md 9.2.2), the switches
// of `--compat torch-cpu[:avx512|:avx2][:tN]`. The expected positions are worked from torch
// 2.11's sources: TensorIterator::for_each (serial below at::internal::GRAIN_SIZE = 32768),
// at::parallel_for's invoke_parallel (min(threads, ceil(n / grain)) chunks of ceil(n / chunks)),
// cpu_kernel_vec's vectorized_loop (2 * Vectorized<T>::size() per iteration, basic_loop after;
// aten/src/ATen/native/cpu/Loops.h) and ufunc add (aten/src/ATen/native/ufunc/add.h: the
// Vectorized vec::fmadd(other, alpha, self), the scalar self + alpha * other in scalar_t).
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/optim_adamw.hpp"
#include "sim/native/torch_kernels.hpp"
#include "sim/optim/registry.hpp"
#include "tests/support/cli_run.hpp"

using namespace exmy;
using native::Storage;

namespace {

// The tail elements of an n-element tensor, listed.
std::vector<std::size_t> tails(std::size_t n, std::size_t bytes, std::uint32_t threads) {
  std::vector<std::size_t> t;
  for (std::size_t i = 0; i < n; ++i) {
    if (native::torch_cpu_scalar_tail(i, n, bytes, {32, threads})) t.push_back(i);
  }
  return t;
}
std::vector<std::size_t> range(std::size_t a, std::size_t b) {
  std::vector<std::size_t> r;
  for (std::size_t i = a; i < b; ++i) r.push_back(i);
  return r;
}
std::vector<std::size_t> cat(std::vector<std::size_t> a, const std::vector<std::size_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
float bf16(std::uint16_t bits) {
  const std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

TEST_CASE("torch-cpu scalar tails: positions from Loops.h and parallel_for", "[optim][torch-cpu]") {
  // 16-bit: 2 x 16 lanes per iteration. 1,000 elements: 31 iterations, 992..999 scalar.
  CHECK(tails(1000, 2, 0) == range(992, 1000));
  // fp32: 2 x 8 lanes; 1,000 = 62 x 16 + 8.
  CHECK(tails(1000, 4, 0) == range(992, 1000));
  CHECK(tails(64, 2, 0).empty());
  CHECK(tails(31, 2, 0) == range(0, 31));  // shorter than one iteration: all basic_loop
  // 32,767 < GRAIN_SIZE: one range (32,767 = 1,023 x 32 + 31).
  CHECK(tails(32767, 2, 0) == range(32736, 32767));
  // 50,003: ceil(50003 / 32768) = 2 chunks of 25,002 and 25,001 elements (any threads >= 2).
  const auto two = cat(range(24992, 25002), range(25002 + 24992, 50003));
  CHECK(tails(50003, 2, 0) == two);
  CHECK(tails(50003, 2, 2) == two);
  CHECK(tails(50003, 2, 16) == two);
  // One thread: TensorIterator's serial path, one range (50,003 = 1,562 x 32 + 19).
  CHECK(tails(50003, 2, 1) == range(49984, 50003));
  // 100,003: 4 chunks of 25,001 with 4 or more threads, 2 of 50,002 with 2.
  std::vector<std::size_t> four;
  for (std::size_t c = 0; c < 4; ++c) {
    const std::size_t b = c * 25001, e = c == 3 ? 100003 : b + 25001;
    four = cat(four, range(b + (e - b) / 32 * 32, e));
  }
  CHECK(tails(100003, 2, 0) == four);
  CHECK(tails(100003, 2, 8) == four);
  CHECK(tails(100003, 2, 2) == cat(range(49984, 50002), range(50002 + 49984, 100003)));
}

TEST_CASE("torch-cpu scalar tail: 16-bit add with alpha rounds the product first",
          "[optim][torch-cpu][regression]") {
  // Regression (H200 capture 2026-12-01, RMSprop bf16 momentum + weight decay, element 994 of
  // 1,000): grad.add(param, alpha=0.01) with p = -0.8359375, g = 0.0089111328125. Vectorized:
  // fma(p, bf16(0.01) = 0.010009765625, g) = 142.5 * 2^-18 exactly, a tie: bf16 142 * 2^-18.
  // basic_loop: bf16(0.01 * p) = -137 * 2^-14, g - 137 * 2^-14 = 144 * 2^-18 exactly.
  const float p = -0.8359375f, g = 0.0089111328125f;
  const float alpha = native::add_scalar(0.01f, Storage::bf16);
  CHECK(alpha == 0.010009765625f);
  CHECK(native::torch_add_alpha(g, p, alpha, Storage::bf16, false) == 142.0f * 0x1p-18f);
  CHECK(native::torch_add_alpha(g, p, alpha, Storage::bf16, true) == 144.0f * 0x1p-18f);
  // fp32: GCC contracts the scalar lambda to the same FMA.
  CHECK(native::torch_add_alpha(g, p, 0.01f, Storage::f32, true) ==
        native::torch_add_alpha(g, p, 0.01f, Storage::f32, false));
  // fp16: the product is rounded to fp16 (11 bits) in the tail.
  const float a16 = native::add_scalar(0.01f, Storage::f16);
  CHECK(native::torch_add_alpha(1.0f, 0.3330078125f, a16, Storage::f16, true) ==
        native::to_storage(1.0f + native::to_storage(a16 * 0.3330078125f, Storage::f16),
                           Storage::f16));
  CHECK(bf16(0x3f80) == 1.0f);
}

TEST_CASE("torch-cpu switches: :avx512 :avx2 :tN, refused elsewhere", "[optim][torch-cpu]") {
  optim::Config c;
  c.opt = optim::find_optimizer("rmsprop");
  c.hyper = optim::resolve_hyper(*c.opt.entry, {});
  for (const char* p : {"torch-cpu:avx512", "torch-cpu:avx2", "torch-cpu:t16",
                        "torch-cpu:avx512:t2", "torch-cpu:t1:avx2"}) {
    optim::Config d = c;
    CHECK_NOTHROW(optim::apply_compat(d, p));
  }
  optim::Config d = c;
  optim::apply_compat(d, "torch-cpu:avx2:t3");
  CHECK(d.hyper.adam.cpu.threads == 3u);
  CHECK(d.hyper.sgd.cpu.threads == 3u);
  for (const char* p : {"torch-cpu:default", "torch-cpu:t0", "torch-cpu:t", "torch-cpu:",
                        "torch-cpu:avx512:x", "torch-cuda:t2", "torch-cpu:t99999999"}) {
    optim::Config e = c;
    CHECK_THROWS_AS(optim::apply_compat(e, p), InputError);
  }

  if (testing::cli().empty()) return;
  const std::string dir = testing::make_tmpdir("exmy_torch_cpu_tail");
  std::vector<float> p(50003), g(50003);
  for (std::size_t i = 0; i < p.size(); ++i) {
    p[i] = bf16(static_cast<std::uint16_t>(0xbf56));  // -0.8359375
    g[i] = 0.0089111328125f;
  }
  io::write_npy(dir + "/p.npy", io::make_npy(p, {p.size()}));
  io::write_npy(dir + "/g.npy", io::make_npy(g, {g.size()}));
  // SGD's first step keeps momentum_buffer = grad.add(param, alpha=wd): the add of the
  // regression case above in every element, 142 * 2^-18 vectorised, 144 * 2^-18 in a tail.
  const std::string base =
      "step --optimizer sgd --momentum 0.9 --lr 1e-3 --wd 0.01 "
      "--param-dtype bf16 --params " +
      dir + "/p.npy --grads " + dir + "/g.npy --quiet ";
  REQUIRE(testing::run(base + "--compat torch-cpu:t2 --out " + dir + "/a") == 0);
  REQUIRE(testing::run(base + "--compat torch-cpu:t1 --out " + dir + "/b") == 0);
  const std::vector<float> a = io::as_f32(io::read_npy(dir + "/a/state1.npy"), "a");
  const std::vector<float> b = io::as_f32(io::read_npy(dir + "/b/state1.npy"), "b");
  REQUIRE(a.size() == p.size());
  REQUIRE(b.size() == p.size());
  const float vec = 142.0f * 0x1p-18f, tail = 144.0f * 0x1p-18f;
  CHECK(a[0] == vec);
  CHECK(b[0] == vec);
  CHECK(a[24992] == tail);  // the first chunk's tail (2 chunks)
  CHECK(b[24992] == vec);   // one range: vectorised
  CHECK(a[49990] == vec);   // the second chunk's vectorised part
  CHECK(b[49990] == tail);  // one range: its tail starts at 49,984
  CHECK(a[49995] == tail);
  CHECK(b[49995] == tail);
  CHECK(testing::run(base + "--compat torch-cpu:default --out " + dir + "/c") == 2);
  CHECK_FALSE(testing::exists(dir + "/c/params.npy"));
}

// Regression (bench_optim_gpu, H200, 2026-12-01): the GPU kernels called torch_cpu_scalar_tail per
// element, two 64-bit divisions each, and the 16-bit Adam kernel ran 1.49x slower than before the
// tails were modelled. They now use TorchCpuTails, worked out once per tensor; it must name the
// same elements as torch_cpu_scalar_tail: every element of every n below 70,000 (serial and 1..3
// chunks) for a few loops, and the elements next to every chunk boundary of large tensors,
// 2^32 + a little included (the 64-bit path).
TEST_CASE("torch-cpu scalar tails: the precomputed index equals the rule", "[optim][torch-cpu]") {
  const native::TorchCpuLoop loops[] = {{32, 0}, {32, 1}, {32, 2}, {64, 3}, {32, 16}};
  for (const auto loop : loops) {
    for (const std::size_t bytes : {std::size_t{2}, std::size_t{4}}) {
      for (std::size_t n = 0; n < 70000; n += (n < 300 ? 1 : 997)) {
        const native::TorchCpuTails t = native::torch_cpu_tails(n, bytes, loop);
        std::size_t differ = 0;
        for (std::size_t i = 0; i < n; ++i) {
          differ += t.at(i) != native::torch_cpu_scalar_tail(i, n, bytes, loop);
        }
        INFO("n " << n << " bytes " << bytes << " vec " << loop.vec_bytes << " threads "
                  << loop.threads);
        REQUIRE(differ == 0);
      }
    }
  }
  const std::size_t big[] = {std::size_t{1} << 26, (std::size_t{1} << 26) + 12345,
                             (std::size_t{1} << 32) + 77, 5000000029};
  for (const std::uint32_t threads : {0u, 7u, 16u, 96u}) {
    const native::TorchCpuLoop loop{32, threads};
    for (const std::size_t n : big) {
      const native::TorchCpuTails t = native::torch_cpu_tails(n, 2, loop);
      std::size_t checked = 0, differ = 0;
      for (std::size_t b = 0; b < n + t.chunk; b += t.chunk) {
        const std::size_t lo = b < 40 ? 0 : b - 40;
        for (std::size_t i = lo; i < b + 40 && i < n; ++i, ++checked) {
          differ += t.at(i) != native::torch_cpu_scalar_tail(i, n, 2, loop);
        }
        if (threads == 0 && b > (std::size_t{1} << 22)) break;  // 2^17 chunks: a sample
      }
      INFO("n " << n << " threads " << threads);
      CHECK(checked > 0);
      CHECK(differ == 0);
    }
  }
}

// The CPU GEMM's hw fast path (sim/native/gemm_dot_sig.hpp: elements taken apart once per
// decoded row) against the plain path it replaces: SEMANTICS 15.2 defines each output as
// dot_model_fp32 over its row of A and row of B, then the epilogue (dot_out_code with alpha 1),
// so every output of gemm() must equal that, bit for bit, for every hw model shape (groups,
// frac, inter, rne, split-K with tiles, tails and trees, promotion chunks, k-tiles), on bf16,
// fp16 and fp32 values with zeros of both signs, subnormals below the operand's emin, values
// whose group sums overflow fp32, and rows holding NaN or infinities (which the fast path hands
// back to the plain one).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/gemm/gemm.hpp"
#include "sim/native/gemm_dot.hpp"
#include "sim/native/philox.hpp"

using namespace exmy;
using namespace exmy::gemm;

namespace {

// Values with at most `sig` significant bits (bf16 8, fp16 11, fp32 24), exponents over
// [lo, hi], about 1 in 8 a zero of either sign.
std::vector<double> values(std::size_t n, int sig, int lo, int hi, std::uint32_t stream) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t w0 = native::philox_word(7, stream, 3 * i);
    const std::uint32_t w1 = native::philox_word(7, stream, 3 * i + 1);
    const std::uint32_t w2 = native::philox_word(7, stream, 3 * i + 2);
    const bool neg = (w0 & 1u) != 0;
    if ((w0 >> 1) % 8 == 0) {
      v[i] = neg ? -0.0 : 0.0;
      continue;
    }
    const double m = 1.0 + std::ldexp(static_cast<double>(w1 >> (32 - (sig - 1))), -(sig - 1));
    const int e = lo + static_cast<int>(w2 % static_cast<std::uint32_t>(hi - lo + 1));
    v[i] = (neg ? -1.0 : 1.0) * std::ldexp(m, e);
  }
  return v;
}

void check_model(const std::string& model, const std::vector<double>& a,
                 const std::vector<double>& b, std::size_t M, std::size_t N, std::size_t K,
                 int emin_a, int emin_b, OutFormat out) {
  Operand A, B;
  A.rows = M;
  B.rows = N;
  A.cols = B.cols = K;
  A.v = a;
  B.v = b;
  A.emin = emin_a;
  B.emin = emin_b;
  const AccumModel am = parse_accum_model(model, 16);
  const std::vector<std::uint32_t> c = exmy::gemm::gemm(A, B, am, out);
  const native::DotModel dm = dot_model(am);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      const float v =
          native::dot_model_fp32(a.data() + i * K, 1, b.data() + j * K, 1, K, emin_a, emin_b, dm);
      const std::uint32_t want = native::dot_out_code(v, 1.0f, static_cast<int>(out));
      if (c[i * N + j] != want) ++bad;
    }
  }
  INFO(model << " M " << M << " N " << N << " K " << K);
  REQUIRE(bad == 0);
}

}  // namespace

TEST_CASE("hw fast path: every output is dot_model_fp32's, bit for bit", "[gemm][sig]") {
  const std::vector<std::string> models{"hw:k=16,frac=25",
                                        "hw:k=16,frac=25,rne",
                                        "hw:k=8,frac=24,inter=13",
                                        "hw:k=32,frac=13,inter=13",
                                        "hw:k=1,frac=16",
                                        "hw:k=4,frac=40",
                                        "hw:k=16,frac=25,split=3",
                                        "hw:k=16,frac=25,split=4,tree",
                                        "hw:k=16,frac=25,split=3,tile=32",
                                        "hw:k=16,frac=25,split=3,tile=32,tail",
                                        "hw:k=16,frac=25,chunk=48",
                                        "hw:k=8,frac=25,ktile=32",
                                        "hw:k=8,frac=25,ktile=32,chunk=40",
                                        "sm90",
                                        "sm80",
                                        "sm100"};
  const std::size_t M = 5, N = 7;
  for (const std::size_t K :
       {std::size_t{0}, std::size_t{1}, std::size_t{13}, std::size_t{100}, std::size_t{257}}) {
    struct Kind {
      int sig, lo, hi, emin;
    };
    // bf16-like, fp16-like (subnormals below emin -14), fp32 with a wide span (swamping and
    // subnormal significands), and exponents near fp32's top (group sums past 2^128).
    for (const Kind& kd : {Kind{8, -10, 10, -126}, Kind{11, -24, 15, -14}, Kind{24, -140, 40, -126},
                           Kind{24, 120, 127, -126}}) {
      const std::vector<double> a = values(M * K, kd.sig, kd.lo, kd.hi, 1);
      const std::vector<double> b = values(N * K, kd.sig, kd.lo, kd.hi, 2);
      for (const auto& mo : models) {
        check_model(mo, a, b, M, N, K, kd.emin, kd.emin, OutFormat::fp32);
        check_model(mo, a, b, M, N, K, kd.emin, kd.emin, OutFormat::bf16);
      }
    }
  }
}

TEST_CASE("hw fast path: all-zero rows and rows with NaN or infinities", "[gemm][sig]") {
  const std::size_t M = 4, N = 4, K = 40;
  std::vector<double> a = values(M * K, 8, -4, 4, 3), b = values(N * K, 8, -4, 4, 4);
  for (std::size_t k = 0; k < K; ++k) {
    a[0 * K + k] = (k % 2) ? -0.0 : 0.0;  // row 0: zeros of both signs
    b[0 * K + k] = -0.0;                  // B row 0: every product -0 with a positive a
    a[1 * K + k] = -0.0;                  // row 1 of A: all -0
  }
  a[2 * K + 5] = INFINITY;
  b[1 * K + 7] = -INFINITY;
  b[2 * K + 9] = NAN;
  a[3 * K + 11] = 0.0;
  b[3 * K + 11] = INFINITY;  // inf x 0
  for (const char* mo : {"hw:k=16,frac=25", "hw:k=8,frac=24,split=2", "sm90"}) {
    check_model(mo, a, b, M, N, K, -126, -126, OutFormat::fp32);
  }
}

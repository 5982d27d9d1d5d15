// A third, independent engine for the IEEE formats: the host's own conversions (C++ casts, which
// are IEEE 754 round-to-nearest-even on x86-64 and AArch64; _Float16 through libgcc's soft-fp or
// F16C). The oracle must agree with them on fp64 -> fp32, fp32 -> fp16 and fp64 -> fp16 under rne
// with overflow to inf (their only mode; no fesetround, per the team rules). NaNs are compared as
// a class and sign only: hardware keeps payloads, section 4.1 drops them.
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#include "sim/verify/sample_inputs.hpp"

using namespace exmy;

namespace {

std::vector<std::uint64_t> inputs_for(const FloatFormat& in, const FloatFormat& to) {
  std::vector<std::uint64_t> v = verify::boundary_inputs(in, to, verify::Depth::ci);
  for (std::uint64_t k = 0; k < 200000; ++k) {  // uniform bit patterns
    const auto b = native::philox_block(424242, 1, k);
    const std::uint64_t bits = (std::uint64_t{b.w[0]} << 32) | b.w[1];
    v.push_back(in.total_bits() == 64 ? bits : bits >> 32);
  }
  return v;
}

template <typename Host>
std::uint64_t host_code(Host h) {
  if constexpr (sizeof(Host) == 2) {
    std::uint16_t u;
    std::memcpy(&u, &h, 2);
    return u;
  } else if constexpr (sizeof(Host) == 4) {
    return native::bits_of(h);
  } else {
    return native::bits_of(h);
  }
}

// Checks the oracle against the host cast from In to Out for each input.
template <typename In, typename Out>
void check_against_host(const FloatFormat& in_f, const FloatFormat& out_f) {
  std::uint64_t checked = 0;
  for (const std::uint64_t bits : inputs_for(in_f, out_f)) {
    In x;
    if constexpr (sizeof(In) == 8) {
      x = native::double_of(bits);
    } else {
      x = native::float_of(static_cast<std::uint32_t>(bits));
    }
    const Out y = static_cast<Out>(x);
    const std::uint64_t want = host_code(y);
    const Encoded got = oracle::encode_code(in_f, bits, out_f, Rounding{});
    ++checked;
    if (oracle::classify(in_f, bits) == ValueClass::nan) {
      CHECK(oracle::classify(out_f, got.code) == ValueClass::nan);
      CHECK(oracle::classify(out_f, want) == ValueClass::nan);
      CHECK((got.code >> (out_f.total_bits() - 1)) == (want >> (out_f.total_bits() - 1)));
      continue;
    }
    if (got.code != want) {
      INFO("input 0x" << std::hex << bits << " host 0x" << want << " oracle 0x" << got.code);
      CHECK(got.code == want);
    }
  }
  CHECK(checked > 200000);
}

}  // namespace

TEST_CASE("oracle == host IEEE casts: fp64 -> fp32 (rne)", "[oracle][host]") {
  check_against_host<double, float>(formats::fp64, formats::fp32);
}

#if defined(__FLT16_MAX__)
TEST_CASE("oracle == host IEEE casts: fp32 -> fp16 and fp64 -> fp16 (rne)", "[oracle][host]") {
  check_against_host<float, _Float16>(formats::fp32, formats::fp16);
  check_against_host<double, _Float16>(formats::fp64, formats::fp16);
}
#endif

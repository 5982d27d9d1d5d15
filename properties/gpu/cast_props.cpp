// GPU cast == CPU native engine, bit for bit, on generated tensors: random lengths (1, odd, not
// multiples of the 16-element vectors or the warp), inputs from bit patterns with weighted
// specials, every preset of at most 16 bits, every mode (sr:R with random R, seed and index
// offset), both kernel paths, aligned and unaligned pointers. RapidCheck prints the shrunk
// counterexample; the shared main prints the seed.
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <catch2/catch.hpp>

#if EXMY_HAVE_CUDA
#include <cstdint>
#include <sstream>
#include <vector>

#include "gpu/cast/cast.hpp"
#include "gpu/cast/cast_reference.hpp"
#include "gpu/cast/hw_cast.hpp"
#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "tests/support/rc_classify.hpp"

using namespace exmy;
using namespace exmy::gpu;
using exmy::gpu::testing::DeviceBytes;

namespace {

// An input bit pattern of the given width: a special (weight 3), a uniformly random code
// (weight 4), or a value near 1 with random low bits (weight 1, where ties live).
rc::Gen<std::uint32_t> gen_bits(CastInput t) {
  return rc::gen::weightedOneOf<std::uint32_t>(
      {{3, rc::gen::apply(
               [t](std::uint32_t pick, std::uint32_t noise) {
                 const std::uint32_t x = exmy::gpu::testing::special_fp32(pick, noise);
                 return t == CastInput::fp32 ? x : (x >> 16);  // the bf16/fp16 bits of it
               },
               rc::gen::arbitrary<std::uint32_t>(), rc::gen::arbitrary<std::uint32_t>())},
       {4, rc::gen::map(rc::gen::arbitrary<std::uint32_t>(),
                        [t](std::uint32_t x) { return t == CastInput::fp32 ? x : (x & 0xFFFFu); })},
       {1, rc::gen::map(rc::gen::inRange<std::uint32_t>(0, 1u << 12), [t](std::uint32_t low) {
          return t == CastInput::fp32 ? (0x3F800000u | low) : (0x3C00u | (low & 0x3FFu));
        })}});
}

Rounding gen_rounding() {
  const auto mode =
      *rc::gen::element(RoundMode::rne, RoundMode::rna, RoundMode::rtz, RoundMode::rup,
                        RoundMode::rdn, RoundMode::rto, RoundMode::sr);
  const int bits = mode == RoundMode::sr ? *rc::gen::inRange(1, 33) : 0;
  const auto ov = *rc::gen::element(Overflow::none, Overflow::satfinite, Overflow::sat);
  return Rounding{mode, bits, ov};
}

}  // namespace

TEST_CASE("GPU casts equal the CPU engine bit for bit", "[gpu][cast][prop]") {
  rc::prop("cast_codes and cast_fake_quant == native::convert", []() {
    std::vector<NamedFloatFormat> presets;
    for (const auto& p : float_presets()) {
      if (p.format.total_bits() <= 16) presets.push_back(p);
    }
    const auto preset = *rc::gen::elementOf(presets);
    const CastInput t = *rc::gen::element(CastInput::fp32, CastInput::bf16, CastInput::fp16);
    const std::size_t n =
        *rc::gen::oneOf(rc::gen::just<std::size_t>(1), rc::gen::inRange<std::size_t>(1, 40),
                        rc::gen::inRange<std::size_t>(1, 3000));
    const auto xs = *rc::gen::container<std::vector<std::uint32_t>>(n, gen_bits(t));
    CastParams p;
    p.to = preset.format;
    p.rounding = gen_rounding();
    p.seed = *rc::gen::arbitrary<std::uint64_t>();
    p.index_offset = *rc::gen::inRange<std::uint64_t>(0, 1000);
    p.path = *rc::gen::element(CastPath::automatic, CastPath::generic);
    const std::size_t pad = *rc::gen::inRange<std::size_t>(0, 3);

    const std::size_t in_b = input_bytes(t), out_b = code_bytes(p.to);
    std::vector<std::uint8_t> raw(n * in_b);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t b = 0; b < in_b; ++b) raw[i * in_b + b] = (xs[i] >> (8 * b)) & 0xFF;
    }
    DeviceBytes din(n * in_b, pad * in_b), dcodes(n * out_b, pad * out_b), dfake(n * 4, pad * 4);
    din.upload(raw);
    cast_codes(din.get(), t, n, dcodes.get(), p);
    cast_fake_quant(din.get(), t, n, static_cast<float*>(dfake.get()), p);
    const auto codes = dcodes.download<std::uint8_t>(n * out_b);
    const auto fake = dfake.download<std::uint32_t>(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t want = reference_code(t, p, xs[i], i);
      const std::uint32_t got =
          out_b == 1 ? codes[i]
                     : static_cast<std::uint32_t>(codes[2 * i] | (codes[2 * i + 1] << 8));
      const std::uint32_t want_f = native::bits_of(native::to_float(p.to, want));
      if (got != want || fake[i] != want_f) {
        std::ostringstream s;
        s << std::hex << "format " << preset.name << " mode " << static_cast<int>(p.rounding.mode)
          << " sr_bits " << std::dec << p.rounding.sr_bits << " index " << i << " input 0x"
          << std::hex << xs[i] << " gpu 0x" << got << " cpu 0x" << want << " fake gpu 0x" << fake[i]
          << " cpu 0x" << want_f;
        RC_FAIL(s.str());
      }
    }
    exmy::testing::CaseLabels labels;
    for (std::size_t i = 0; i < n; ++i) labels.add_conversion(input_format(t), p.to, xs[i]);
    labels.emit();
  });
}

TEST_CASE("hardware fp8 cvt differs from the software satfinite cast only on NaN inputs",
          "[gpu][hw][prop]") {
  if (!hw_fp8_available()) {
    WARN("device has no cvt.rn.satfinite fp8 instructions: skipped");
    return;
  }
  rc::prop("hw cvt.rn.satfinite == native rne+satfinite except NaN", []() {
    const HwFp8 t = *rc::gen::element(HwFp8::e4m3, HwFp8::e5m2);
    const std::size_t n = *rc::gen::inRange<std::size_t>(1, 2000);
    const auto xs = *rc::gen::container<std::vector<std::uint32_t>>(n, gen_bits(CastInput::fp32));
    DeviceBytes din(n * 4), dout(n);
    din.upload(xs);
    hw_cast_fp32_to_fp8(static_cast<const float*>(din.get()), n,
                        static_cast<std::uint8_t*>(dout.get()), t);
    const auto got = dout.download<std::uint8_t>(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto want = native::convert(formats::fp32, hw_format(t), hw_rounding(), xs[i]).code;
      if (got[i] != want && formats::fp32.classify(xs[i]) != ValueClass::nan) {
        std::ostringstream s;
        s << std::hex << hw_name(t) << " input 0x" << xs[i] << " hw 0x" << unsigned(got[i])
          << " sw 0x" << want;
        RC_FAIL(s.str());
      }
    }
    exmy::testing::CaseLabels labels;
    for (std::size_t i = 0; i < n; ++i) labels.add_conversion(formats::fp32, hw_format(t), xs[i]);
    labels.emit();
  });
}

#endif  // EXMY_HAVE_CUDA

// The quantization oracle: docs/SEMANTICS.md sections 5.1 (integer rounding), 5.3-5.4 (nearest
// and stochastic codebook lookup), 7 (tensor quantization schemes and their dequantizers) and 8
// (int8 matmul, its SwitchBack epilogue, fp32 accumulation), written from the document as
// sequences of exactly-rounded operations on exact values (real.hpp), like the step oracle of
// steps.hpp. It shares no code with sim/native or sim/quant: its enums are its own (the campaign
// maps the CLI's options onto them), groups and random words are derived here from sections 3.2
// and 7.1, and the element casts are the oracle's encode (sections 2 and 4). The campaign
// `exmy verify --campaign steps` (ops `quant-*`, `dequant-*`, `matmul-*`) compares every code,
// state and dequantized value with sim/quant.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sim/native/rounding.hpp"
#include "sim/oracle/steps/steps.hpp"

namespace exmy::oracle::steps::quant {

// ---- 7.1 groups ---------------------------------------------------------------------------------
enum class Groups { tensor, rowwise, colwise, block, mx, nvfp4, tile };
struct Layout {
  Groups groups = Groups::tensor;
  std::size_t block = 0;                     // Groups::block: B
  std::size_t tile_rows = 1, tile_cols = 1;  // Groups::tile (7.15): R × C, row-major over tiles
  std::size_t rows = 1, cols = 1;
  std::size_t size() const { return rows * cols; }
};
std::size_t group_count(const Layout& l);
std::size_t group_of(const Layout& l, std::size_t i);  // i: the flat row-major index

// ---- 7.2 absmax ---------------------------------------------------------------------------------
enum class NanRule { propagate, ignore };
// Per group: max |x| (+0 for an empty max), NaN when a NaN is in the group under `propagate`.
Tensor group_absmax(const Tensor& x, const Layout& l, NanRule nan);

// ---- the options of section 7.8, as the oracle names them ---------------------------------------
enum class Target { int8, float_format, codebook };
enum class Order { div_mul, recip_mul, mul_recip };           // 7.3
enum class Variant { absmax, te, te_current, torchao, ocp };  // 7.4, 7.6, 7.11
enum class ScaleMode { floor, ceil, even, rceil };            // 7.6
enum class Norm { recip_mul, div };                           // 7.5
enum class Tie { even, lower, bnb_cpu };                      // 5.3
// 7.15: the library rule of a tile scheme (none: the rules above, per tile), the tile scale's
// form, and the input's dtype before its exact widening (TE's finfo(x.dtype).max, torchao's eps).
enum class TileRule { none, deepgemm, te, torchao };
enum class TileScale { fp32, pow2, ue8m0 };
enum class Source { fp32, bf16, fp16 };

struct Spec {
  Layout layout;
  Target target = Target::int8;
  const FloatFormat* format = nullptr;  // Target::float_format (and MX / NVFP4 elements)
  const Codebook* codebook = nullptr;   // Target::codebook
  Variant variant = Variant::absmax;
  Order order = Order::div_mul;
  NanRule nan = NanRule::propagate;
  Rounding rounding{};  // mode and sr bits (the overflow policy is each scheme's own)
  std::uint64_t seed = 0;
  // 7.4 switches (fp32 values, as the CLI parses them)
  int margin = 0;
  Real prev_scale = Real::of_double(1.0);
  Real amax_epsilon;  // te-current
  bool pow2_scale = false, fp16_clamp = false;
  std::optional<Real> given_scale;
  // 7.6
  ScaleMode scale_mode = ScaleMode::floor;
  // 7.11
  bool two_level = false;
  std::optional<Real> tensor_amax, tensor_scale;
  // 7.5
  Norm norm = Norm::recip_mul;
  Tie tie = Tie::even;
  bool transpose = false;  // 7.7
  // 7.15
  TileRule tile_rule = TileRule::none;
  TileScale tile_scale = TileScale::fp32;
  Source source = Source::fp32;
};

struct Quantized {
  std::vector<std::uint64_t> codes;          // int8 codes as their 8-bit two's complement pattern
  Tensor state;                              // fp32 states (int8, scaled casts, codebooks)
  std::vector<std::uint8_t> scale_codes;     // MX: E8M0; NVFP4: E4M3
  Real tensor_scale = Real::of_double(1.0);  // NVFP4 two-level: the stored per-tensor factor
};

// Section 7 on an fp32 tensor x (row-major, spec.layout): codes (transposed 2-d under
// spec.transpose, 7.7) and states.
Quantized quantize(const Tensor& x, const Spec& spec);
// The dequantized tensor in the input layout.
Tensor dequantize(const Quantized& q, const Spec& spec);

// ---- element pieces (exposed for the tests)
// ------------------------------------------------------- 5.1 for int8 (−127…127): the mode of `r`
// with quantum 1 on the exact value y; `word` is the R-bit word of sr:R in its low bits. NaN → 0,
// overflow → ±127.
std::int32_t round_int8(const Real& y, const Rounding& r, std::uint32_t word);
// 5.3 with each tie rule, on an fp32 value n.
std::uint8_t nearest(const Codebook& cb, const Real& n, Tie tie);
// 5.4: u ∈ [0, 1) an fp32 value.
std::uint8_t nearest_stochastic(const Codebook& cb, const Real& n, const Real& u);

// ---- 7.14 bitsandbytes 4-bit (NF4, FP4) --------------------------------------------------------
// From the document's tables: levels and thresholds are its decimal literals, each rounded once to
// fp32 (as a C `f` literal is). The code of a normalized fp32 value n: NF4 #{k : n > t_k}; FP4
// the magnitude code of rank #{k : |n| > t_k} with sign bit n < 0 (NaN: all comparisons false).
// The value of a code with absmax a: level × a rounded to fp32 with FTZ (a subnormal operand or
// result is a zero of its sign), FP4's sign applied to the level first.
enum class Bnb4 { nf4, fp4 };
std::uint8_t bnb4_code(Bnb4 t, const Real& n);
Real bnb4_value(Bnb4 t, std::uint8_t code, const Real& a);
// The k-th level in code order (NF4 k = 0..15; FP4 magnitudes k = 0..7) and threshold (ascending;
// NF4 k = 0..14, FP4 k = 0..6), fp32 values.
Real bnb4_level(Bnb4 t, int k);
Real bnb4_threshold(Bnb4 t, int k);

// ---- 8 matmul -----------------------------------------------------------------------------------
// 8.1: A (M×K) and B (N×K) int8 codes, acc = A·Bᵀ exact, wrapped to int32.
std::vector<std::int32_t> matmul_int8(const std::vector<std::int8_t>& a,
                                      const std::vector<std::int8_t>& b, std::size_t M,
                                      std::size_t N, std::size_t K);
// 8.2: sr has M entries, sc N or 1.
enum class Epilogue { switchback, factor_first };
Tensor dequantize_product(const std::vector<std::int32_t>& acc, std::size_t M, std::size_t N,
                          const Tensor& sr, const Tensor& sc, Epilogue order);
// 8.3: fp32 operands, products RN32, sums in the named order.
enum class Accum { sequential, pairwise };
Tensor matmul_fp32(const Tensor& a, const Tensor& b, std::size_t M, std::size_t N, std::size_t K,
                   Accum order);

}  // namespace exmy::oracle::steps::quant

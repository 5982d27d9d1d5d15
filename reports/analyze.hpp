// `exmy analyze --tensors DIR --out-dir OUT`: the error-analysis report of a user's own tensors
// (docs/SEMANTICS.md 18). Every tensor of DIR is quantized and dequantized under each format x
// scale granularity with exmy's quantizer (sim/quant: the functions `exmy quantize` and
// `exmy dequantize` run) or, for bf16/fp16, cast with exmy's RNE conversion (sim/native: what
// `exmy cast` runs); the element metrics compare the round trip with the input, and each matmul
// named by the files (NAME.x.npy, NAME.w.npy [, NAME.g.npy]) compares the product of the round
// trips with the product of the inputs. No rounding of its own: the metrics are sums in fp64.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "sim/native/float_format.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::reports {

// One format x granularity: a scaled quantization (quant::Options) or a plain cast (bf16, fp16).
struct AnalyzeCombo {
  std::string format;  // as --formats spells it: "int8", "e4m3fn", "mx:e2m1fn", "nvfp4", "bf16"
  std::string scheme;  // quant::scheme_name, or "none" for a cast
  bool cast = false;
  FloatFormat cast_format{};  // cast: the format, RNE (no scale)
  quant::Options opt;         // scaled
};

inline constexpr const char* kDefaultFormats =
    "int8,e4m3fn,e5m2,mx:e4m3fn,mx:e2m1fn,nvfp4,bf16,fp16";
inline constexpr const char* kDefaultSchemes = "tensor,rowwise,colwise,block:128,block:128x128";

// The valid combinations of the comma-separated lists, formats outer, schemes inner. mx:F and
// nvfp4 carry their own scheme, bf16/fp16 none; int8 and float targets pair with every scheme of
// the list that validate_options accepts (the others are named in `skipped`). InputError for an
// unknown format or scheme, or an empty result.
std::vector<AnalyzeCombo> analyze_combos(const std::string& formats, const std::string& schemes,
                                         std::vector<std::string>* skipped);

// The elementwise metrics of a round trip d of x (SEMANTICS 18.2).
struct ElementStats {
  std::size_t n = 0;
  double sum_x2 = 0, sum_e2 = 0;  // sum of x^2 and of (d - x)^2, fp64, in index order
  double rel_mse = 0;             // sum_e2 / sum_x2 (0 when both are 0, inf when only x's is 0)
  double nsr = 0;                 // sqrt(rel_mse)
  double snr_db = 0;              // -10 log10(rel_mse) (inf when rel_mse is 0)
  double max_abs_err = 0;         // max |d - x|
  double underflow = 0;           // #{x != 0 and d == 0} / n
  double saturated = 0;           // #saturated / n (the count is the caller's: fake_quantize)
};
ElementStats element_stats(const float* x, const float* d, std::size_t n, std::size_t saturated);

// The round trip of x (shape: any rank, the matrix view of quant::matrix_view) under a combo:
// d = dequantize(quantize(x)), or the RNE cast's value; `saturated` counts elements whose code is
// the format's largest finite magnitude and whose |x| lies more than half the top code spacing
// beyond |d| (SEMANTICS 18.2), or whose cast overflowed to infinity. InputError from the quantizer
// (a scheme that does not fit the shape).
struct RoundTrip {
  std::vector<float> d;
  std::size_t saturated = 0;
};
RoundTrip fake_quantize(const AnalyzeCombo& c, const std::vector<float>& x,
                        const std::vector<std::size_t>& shape);

// The rows of an M-row product that the matmul error is computed on: all rows when rows == 0 or
// rows >= M, else floor(t M / rows) for t = 0 .. rows - 1.
std::vector<std::size_t> sampled_rows(std::size_t M, std::size_t rows);

// out(t, j) for the sampled rows i_t of C = A op(B), fp64 sums in k order (SEMANTICS 18.3).
// nt: C = A B^T, A M x K and B N x K row-major. nn: C = A B, A M x K, B K x N row-major.
// tn: C = A^T B, A K x M, B K x N row-major. The result is rows.size() x N.
enum class ProductForm { nt, nn, tn };
std::vector<double> product_rows(ProductForm form, const float* a, const float* b, std::size_t M,
                                 std::size_t N, std::size_t K,
                                 const std::vector<std::size_t>& rows);

// The product metric of a quantized product q against the reference r (same layout).
struct ProductStats {
  double rel_err = 0;  // ||q - r||_F / ||r||_F over the sampled rows
  double max_abs_err = 0;
};
ProductStats product_stats(const std::vector<double>& q, const std::vector<double>& r);

struct AnalyzeOptions {
  std::string tensors_dir, out_dir;
  std::string formats = kDefaultFormats, schemes = kDefaultSchemes;
  std::size_t matmul_rows = 128;
  int threads = 0;
  bool figures = true, quiet = false;
  std::string command_line;  // for the summary's provenance
};

// The whole command: reads and checks every input (InputError, nothing written), then writes
// OUT/analyze.csv, OUT/index.md and OUT/analyze.png/.svg into a staging directory renamed to OUT
// in one step (OUT must not exist). Throws Interrupted (nothing left) on SIGINT/SIGTERM.
struct AnalyzeResult {
  std::size_t rows = 0;     // CSV rows
  std::string figure_note;  // why the figure was skipped ("" when drawn)
};
AnalyzeResult run_analyze(const AnalyzeOptions& o);

}  // namespace exmy::reports

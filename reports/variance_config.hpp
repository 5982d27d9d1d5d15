// Section 1 (seed 000, appendix D): variance of the quantized inner-product error versus the
// inner dimension k. The configuration is separate from the computation so that tests can run
// a reduced one and check it against the same closed forms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/native/float_format.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::reports {

enum class InputDist : std::uint8_t {
  gaussian,   // u, v ~ N(0, 1), rounded to fp32
  student_t,  // Student-t, nu = 4 (variance 2): heavy tails, finite fourth moment
  outliers,   // u: N(0, 1) with outlier feature columns (prob 2^-7 each, x20); v: N(0, 1)
};
const char* dist_name(InputDist d);

enum class SchemeKind : std::uint8_t {
  int8_absmax,  // SwitchBack int8: round(127 x / absmax), per row or per tensor
  fp8_absmax,   // SwitchBack float8cast: cast(fmax x / absmax), per row or per tensor
  elementwise,  // no scaling: one conversion fp32 -> ExMy (rne or sr)
  mask,         // no scaling: seed 003 masking (sim/native/mask.hpp; E = 8, clamp, min)
};

struct VarScheme {
  std::string name;
  SchemeKind kind;
  FloatFormat fmt{};       // fp8_absmax / elementwise target
  bool u_rowwise = false;  // scale granularity of the n x k operand U (rows = tokens)
  bool v_rowwise = false;  // ... and of V (m x k, rows = output features of W)
  RoundMode mode = RoundMode::rne;
  int sr_bits = 0;
};

struct VarianceConfig {
  std::vector<int> ks;  // inner dimensions
  int trials = 0;       // independent (U, V) draws per (dist, k)
  int rows = 4;         // U is rows x k, V is rows x k: rows^2 inner products a trial
  std::vector<InputDist> dists;
  std::vector<VarScheme> schemes;
};

// The SR word width used by every stochastic scheme in this section.
inline constexpr int kVarianceSrBits = 16;

VarianceConfig variance_config(bool quick, int tiny);

// The D.3 shapes (seed 000): a linear layer's three matmuls and their inner dimensions.
struct D3Matmul {
  std::string model;
  std::string matmul;  // forward / input grad / weight grad
  int k;
  // Elements of the two operand tensors whose rows meet in the inner products (the tensor-wise
  // absmax runs over all of them): forward X W^T: X (tokens x in), W (out x in); input grad
  // dY W: dY (tokens x out), W^T (in x out); weight grad dY^T X: dY^T (out x tokens),
  // X^T (in x tokens).
  double u_elements = 0, v_elements = 0;
};
std::vector<D3Matmul> d3_matmuls();

// Least-squares slope of log2(y) on log2(x).
double loglog_slope(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace exmy::reports

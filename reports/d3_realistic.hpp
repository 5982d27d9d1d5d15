// D.3 of Wortsman et al. 2023 ("Stable and low-precision training for large-scale
// vision-language models", appendix D.3) with realistic operand statistics (issue 35) instead of
// i.i.d. N(0, 1): activations X with outlier features (a few feature columns x100, as Dettmers
// et al., "LLM.int8()", describe them), weights W ~ N(0, 1/in), gradients dY with heavy tails
// (a log-normal scale per token times Student-t nu = 4 elements), quantized with the schemes
// SwitchBack and LLM.int8() use. docs/SEMANTICS.md 14.1, "D.3 with realistic operands".
#pragma once

#include <string>
#include <vector>

#include "reports/report_context.hpp"
#include "reports/sections.hpp"
#include "reports/variance_stats.hpp"

namespace exmy::reports {

// Schemes, by operand (u: the rows of X, dY or dY^T; v: the rows of W, W^T or X^T):
//   int8_row         both operands row-wise absmax int8 along k (LLM.int8()'s vector-wise
//                    quantization, applied to all three matmuls);
//   int8_switchback  u row-wise, v tensor-wise (SwitchBack's forward and input-gradient rule:
//                    row-wise activations / gradients, tensor-wise weights); for the weight
//                    gradient, which SwitchBack computes in 16 bits, the int8 hypothetical of
//                    D.3 with dY^T row-wise and X^T tensor-wise;
//   llm_int8         forward only: LLM.int8()'s mixed-precision decomposition, the outlier
//                    feature columns of X (and the matching columns of W) in fp16, the rest
//                    vector-wise int8 (absmax over the non-outlier columns).
struct D3RealCell {
  int matmul = 0;  // index into d3_matmuls()
  std::string scheme;
  double var_d = 0;     // Var(d), weighted over the sampled rows (SEMANTICS 14.1)
  double var_uv = 0;    // Var(<u, v>)
  double norm_var = 0;  // Var(d) / (s_u^2 s_v^2): the noise in units of the operands' scale
  double nsr = 0;       // Var(d) / Var(<u, v>)
  Interval norm_ci, nsr_ci;
  std::vector<double> rep_norm, rep_nsr;  // cluster-bootstrap replicates over trials
};

std::vector<D3RealCell> run_d3_realistic(const ReportContext& ctx, int trials, int replicates);

// Runs it and writes DIR/d3_realistic.csv (dir = the variance section's folder); appends the
// reproduction rows (weight grad / forward for int8_row and int8_switchback, both models) to
// `claims` and returns the index.md part.
std::string d3_realistic_section(const ReportContext& ctx, const std::string& dir, int trials,
                                 int replicates, std::vector<Claim>& claims);

// The outlier-feature rule: feature f of a model's X is an outlier feature when
// philox_word(seed, 0x01B00000 | model << 8, f) < 2^24 (probability 2^-8), scaled x100.
bool d3_outlier_feature(std::uint64_t seed, int model, int f);

}  // namespace exmy::reports

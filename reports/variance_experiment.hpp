// The Monte Carlo behind section 1: for every (input distribution, k) and trial, draw U, V
// (rows x k, fp32), quantize both with every scheme, and measure each of the rows^2 errors
// d = <u^, v^> - <u, v> exactly (native::ExactDot32), plus per-element error statistics.
#pragma once

#include <cstdint>
#include <vector>

#include "reports/report_context.hpp"
#include "reports/variance_config.hpp"
#include "reports/variance_stats.hpp"

namespace exmy::reports {

// Statistics of one (dist, scheme, k) cell, reduced over trials in trial order.
struct VarianceCell {
  InputDist dist;
  int scheme;  // index into VarianceConfig::schemes
  int k;
  long long samples = 0;  // trials * rows^2 inner products
  double mean_d = 0;      // mean of d
  double var_d = 0;       // sample variance of d (n - 1)
  double var_uv = 0;      // sample variance of the exact <u, v> (the signal)
  double sigma_u2 = 0;    // mean u_i^2 over all elements (inputs have mean 0)
  double sigma_v2 = 0;
  double sigma_qu2 = 0;  // mean (u^_i - u_i)^2: the per-element quantization error variance
  double sigma_qv2 = 0;
  double mean_qu = 0;  // mean (u^_i - u_i): bias of the element error
  double mean_qv = 0;
  double cov_qu = 0;  // mean (u^_i - u_i) u_i: error-input correlation (0 in eq. 12)
  double cov_qv = 0;
  // k (s_qu^2 s_v^2 + s_qv^2 s_u^2 + s_qu^2 s_qv^2): appendix D's eq. 12 with the two operands'
  // error variances kept apart; with s_qu = s_qv = s_q it is the paper's k s_q^2 (s_u^2 + s_v^2
  // + s_q^2).
  double predicted = 0;
  // The same expectation without eq. 12's assumption that errors are uncorrelated with their
  // inputs (still independent across elements and operands): per element
  //   E[(e v + x u + e x)^2] - E[e x]^2 = s_qu^2 s_v^2 + s_qv^2 s_u^2 + s_qu^2 s_qv^2
  //     + 2 c_u c_v + 2 s_qu^2 c_v + 2 s_qv^2 c_u - (m_u m_v)^2,
  // c = E[e u] (cov_q*), m = E[e] (mean_q*); times k.
  double predicted_corr = 0;
  // Appendix D's own quantity: Var(<u^, v^>) - Var(<u, v>) (eq. 12's left side). It equals
  // Var(d) + 2 Cov(<u, v>, d): the two agree only when the error is uncorrelated with the signal.
  double var_w = 0;  // sample variance of <u^, v^>
  double delta_var = 0;
  // Its expectation from the measured element moments: predicted_corr + 2 Cov(<u,v>, d) with
  // Cov(<u,v>, d) = k (c_u s_v^2 + c_v s_u^2 + c_u c_v) (SEMANTICS 14.1). Eq. 12 drops the
  // covariance, which is of the order of Var(d) itself wherever c = E[e u] is of the order of
  // s_q^2 (round to nearest on a float grid, masking).
  double predicted_delta = 0;
  // Relative element error rho = (x^ - x) / x over nonzero inputs of both operands: E[rho] and
  // E[rho^2]. For an error proportional to its input (masking), eq. 12 with the cross term
  // predicts Var(d) / predicted = 1 + E[rho]^2 / E[rho^2] (SEMANTICS 14.1): `mask_factor`.
  double rho_mean = 0, rho_sq = 0, mask_factor = 0;
  // Closed-form (s_qu^2 + s_qv^2) / 2 for the int8 absmax schemes: per operand E[M^2] /
  // (12 * 127^2) for round to nearest (uniform error on a grid of step M/127), / (6 * 127^2)
  // for stochastic rounding, M the absmax of the k (row-wise) or rows*k (tensor-wise) elements
  // that share a scale; 0 where no closed form is drawn (other schemes, outlier inputs).
  double sigma_q2_closed = 0;
  // 95% cluster-bootstrap intervals (trials resampled; variance_stats.hpp).
  Interval var_d_ci, delta_var_ci, ratio_ci, sigma_q2_ci;
  // ... of delta_var / predicted, both recomputed in every replicate (a paired ratio interval).
  Interval delta_ratio_ci;
  std::vector<double> rep_var_d;     // the replicates of var_d (slopes and paired ratios)
  std::vector<double> rep_sigma_q2;  // ... of (s_qu^2 + s_qv^2) / 2
  // Relative noise Var(d) / Var(<u, v>) (the noise against the signal it perturbs; appendix D.2's
  // "drown out useful signal" is about this ratio): the replicates (the same trial draws for
  // numerator and denominator) and their 95% interval.
  std::vector<double> rep_nsr;
  Interval nsr_ci;
};

struct VarianceResults {
  VarianceConfig config;
  int replicates = 0;               // bootstrap replicates per cell
  std::vector<VarianceCell> cells;  // dist-major, then k, then scheme
  const VarianceCell* find(InputDist d, const std::string& scheme, int k) const;
};

VarianceResults run_variance_experiment(const ReportContext& ctx, const VarianceConfig& cfg);

// D.3 with operands of the paper's shapes: for each matmul of d3_matmuls(), `trials` draws of
// rows x k samples of U and V (gaussian), where the tensor-wise schemes scale by the absmax of
// the whole tensor (u_elements / v_elements elements): the sampled rows plus the maximum of the
// rest, drawn exactly from its law (variance_stats.hpp gaussian_max_quantile). Row-wise schemes
// need no such draw: their rows are independent of the rest of the tensor.
struct D3ShapeCell {
  int matmul = 0;  // index into d3_matmuls()
  std::string scheme;
  double var_d = 0;
  std::vector<double> rep_var_d;  // bootstrap replicates over trials
};
std::vector<D3ShapeCell> run_d3_shapes(const ReportContext& ctx, int trials, int replicates);

// Progress weight of one (dist, k): proportional to its run time (k times the schemes).
double variance_work(const VarianceConfig& cfg, int k);

// Derived 64-bit Philox key for the stochastic roundings of one (dist, k, scheme, operand,
// trial): SplitMix64 of the packed tuple xor the user seed. Documented in SEMANTICS 14.1.
std::uint64_t variance_sr_seed(std::uint64_t seed, int dist, int kidx, int scheme, int operand,
                               int trial);

// Philox stream of an input operand (0 = U, 1 = V, 2 = outlier columns) of (dist, kidx).
std::uint32_t variance_data_stream(int dist, int kidx, int purpose);

}  // namespace exmy::reports

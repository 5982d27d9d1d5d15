// Training recipes (docs/SEMANTICS.md 16.1): one step of a linear layer without bias as a
// library's FP8 recipe computes it — the casts of X, W and G (which tensor, which format, which
// scale rule), the GEMM each of the three products runs (FP8 with per-tensor or per-row scales,
// with or without fast accumulation, or 16-bit), the epilogue and the post-scaling, and the
// recipe's state after the step. The CPU reference; the pieces are exmy's quantizer
// (sim/quant/quantize.hpp, section 7.4's torchao / te / te-current variants) and GEMM models
// (sim/gemm/gemm.hpp, section 15).
//   torchao 0.18 float8 training (torchao/float8/config.py Float8LinearRecipeName):
//     torchao-tensorwise, torchao-rowwise, torchao-rowwise-gw-hp;
//   TransformerEngine (common/recipe/__init__.py): te-delayed (DelayedScaling: amax history,
//     margin, amax_compute_algo), te-current (Float8CurrentScaling), te-block
//     (Float8BlockScaling: 1x128 / 128x128 tiles, the blockwise FP8 GEMMs of SEMANTICS 15.7),
//     te-mxfp8 (MXFP8BlockScaling: 1x32 E8M0 blocks along each GEMM's K, the MX GEMM of 15.5).
// X is b x n, W is m x n, G is b x m (LayerShape); values of bf16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/gemm/accum_model.hpp"
#include "sim/layer/linear_layer.hpp"

namespace exmy::layer {

enum class Recipe : std::uint8_t {
  torchao_tensorwise,
  torchao_rowwise,
  torchao_rowwise_gw_hp,
  te_delayed,
  te_current,
  te_block,
  te_mxfp8,
};

struct RecipeConfig {
  Recipe recipe = Recipe::torchao_tensorwise;
  DType dtype = DType::bf16;
  // The FP8 GEMMs: without fast accumulation (torchao's and TE's X_grad and W_grad: torch's
  // use_fast_accum=False, TE's use_split_accumulator=True), with it (the forward), and the
  // 16-bit GEMMs (rowwise-gw-hp's W_grad).
  gemm::AccumModel fp8, fp8_fast, hp;
  // te-delayed (DelayedScaling): margin, amax_compute_algo, history length (the state's rows).
  int margin = 0;
  bool amax_max = true;  // "max" (true) or "most_recent"
  std::size_t history = 1024;
  // TE formats: HYBRID (E4M3 forward, E5M2 gradients; DelayedScaling's and
  // Float8CurrentScaling's default) or E4M3 everywhere (Float8BlockScaling's and
  // MXFP8BlockScaling's default).
  bool te_hybrid = true;
  // te-block: fp32 tile scales (NVTE_FP8_BLOCK_SCALING_FP32_SCALES=1) instead of the recipe's
  // default power-of-two scales.
  bool fp32_scales = false;
  // te-current: amax_epsilon and power_2_scale (Float8CurrentScaling's fields).
  float amax_epsilon = 0.0f;
  bool pow2 = false;
};

// "torchao-tensorwise", "torchao-rowwise", "torchao-rowwise-gw-hp", "te-delayed", "te-current",
// "te-block", "te-mxfp8";
// InputError listing them otherwise.
Recipe parse_recipe(const std::string& text);
std::string recipe_name(Recipe r);
const char* recipe_list();

// A named array of the recipe's state (scales, amax history), row-major: fp32 values (v), or
// byte codes (codes; te-mxfp8's E8M0 scales, written as |u1).
struct StateArray {
  std::string name;
  std::vector<std::size_t> shape;
  std::vector<float> v;
  std::vector<std::uint8_t> codes;
};

// DelayedScaling's state for the three tensors it scales (TE's fp8 meta, in this order: X, W,
// G): amax_history (history x 3) and scale (3). `fresh` (TE's initial state): the history all
// zeros and every scale 1.
struct DelayedState {
  std::size_t history = 0;
  std::vector<float> amax_history;  // history x 3, row 0 the most recent
  std::vector<float> scale;         // 3
  static DelayedState fresh(std::size_t history);
};

struct RecipeResult {
  std::vector<float> y, x_grad, w_grad;  // values of dtype
  std::vector<StateArray> state;         // what the step leaves (and used), by name
};

// One step. `prev`: te-delayed's state before the step (nullptr: fresh); other recipes have none.
// InputError: a shape torch._scaled_mm refuses (K and N multiples of 16 for each FP8 GEMM, as
// torchao and TE require; te-mxfp8: b, n, m multiples of 32), a dtype other than bf16, or a
// state of the wrong shape.
RecipeResult run_recipe(const RecipeConfig& cfg, const LayerShape& s, const MatView& x,
                        const MatView& w, const MatView& g, const DelayedState* prev = nullptr);

// The fast-accumulation model the forward runs when the FP8 model is `fp8`: cublas-sm90's
// promotion every 128 k removed (the tensor core's e8m13 sum carried over the whole K; measured
// on an H200 for torch._scaled_mm with use_fast_accum=True), any other model as it is.
gemm::AccumModel fast_accum_model(const gemm::AccumModel& fp8);

}  // namespace exmy::layer

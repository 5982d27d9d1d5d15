// Internal to gpu/quant/*.cu: the quantize kernels' launch arguments (QArgs: the plan of
// sim/native/quant_plan.hpp and the tensor's geometry) and the constants of their thread layout.
// A named namespace, not an anonymous one: the launchers of every target kind (one .cu each) and
// the shared host glue (quantize.cu, absmax.cu) pass QArgs between translation units.
#pragma once

#include <cstdint>

#include "gpu/cast/fast_cast.hpp"
#include "gpu/common/launch.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/quant_absmax.hpp"
#include "sim/native/quant_int8.hpp"
#include "sim/native/quant_plan.hpp"

namespace exmy::gpu::quant_detail {

static_assert(native::kAbsmaxInit == 0.0f, "absmax identity must be +0 (bit pattern 0)");

constexpr int kRun = 16;                // consecutive elements per thread
constexpr int kTile = kThreads * kRun;  // 4096 elements per block per step
constexpr std::uint32_t kNanAbsBits = 0x7FC00000u;
constexpr int kColRun = 8;    // columns per thread in the 2-d column-wise kernels
constexpr int kColBatch = 4;  // rows whose loads the column-wise kernels issue together
// The int8 absmax target Q (y = Q x / a): the largest int8 code, as fp32 (exact).
constexpr float kInt8Q = static_cast<float>(native::kInt8Max);

enum class Kind : std::uint8_t { int8, flt, codebook, mx };

// The block-scaled element paths a single-pass kernel is compiled with (fused_group_kernel's
// instantiations, picked on the host by mx_run_of): `any` dispatches at run time over all of them;
// the others compile only their own, so that one format's kernel does not pay the registers of
// another's path. lean: NVFP4 and MX under torchao's arithmetic (held to 64 registers); ocp_hw:
// OCP MX by the fp8 instruction; ocp_sw: OCP MX by the lean software cast (e2m1fn, the fp6
// formats), whose native fallbacks run after the run's codes are stored (mx_fixup).
enum class MxRun : std::uint8_t { any, lean, ocp_hw, ocp_sw };

// Float targets whose tensor-wise codes the fp8 instruction encodes (tensor_element_kernel):
// e4m3fn / e5m2 under rne, or sr:R with R <= 21 - M (the rounding done on the fp32 value first).
// The mode is part of the kernel, so that its loop holds one run's code, not both modes'.
enum class FltHw : std::uint8_t { none, e4m3_rne, e4m3_sr, e5m2_rne, e5m2_sr };

__host__ __device__ constexpr bool flt_hw_e4m3(FltHw h) {
  return h == FltHw::e4m3_rne || h == FltHw::e4m3_sr;
}
__host__ __device__ constexpr bool flt_hw_sr(FltHw h) {
  return h == FltHw::e4m3_sr || h == FltHw::e5m2_sr;
}

// The plan (sim/native/quant_plan.hpp) and what the launch needs beside it.
struct QArgs {
  native::QuantPlan p;
  Kind kind;
  bool col;  // column-wise groups (g = c); otherwise contiguous groups of G
  bool transpose;
  std::uint64_t rows, cols, n, G, groups;
  int G_shift = 0;    // log2(G) where G is a power of two (every single-pass geometry), else 0
  FastCastPlan plan;  // for flt / mx targets where fast_cast_supported(fmt)
  bool fast;
  // MX elements whose fp8 cast may be the hardware instruction (gpu/cast/hw_cvt.hpp): e4m3fn or
  // e5m2 under rne, on sm_89+ (the device code checks the architecture at compile time).
  bool hw_e4m3 = false, hw_e5m2 = false;
  // Float targets: the tensor-wise kernel's fp8 instruction path (FltHw; sm_89+ device code).
  FltHw flt_hw = FltHw::none;
  // The fused kernel writes 4-bit codes two per byte (sim/native/pack4.hpp's layout).
  bool packed4 = false;
  // The Philox key schedule of p.seed (sr): built once on the host, so a kernel's Philox blocks
  // take the round keys from the constant bank instead of rebuilding them per block (the cast
  // kernels' PhiloxKeys, gpu/cast/detail_cast_args.cuh).
  native::PhiloxKeys keys{};
  // NVFP4 two-level with the level measured on the device (gpu::quantize): the single-pass kernel
  // reads the per-tensor level from here instead of p.tensor, so the tensor's absmax never goes
  // through the host. Null: p.tensor is the level.
  const native::Nvfp4Tensor* tensor_dev = nullptr;
  // NVFP4 two-level on nvfp4_kernel (detail_nvfp4.cuh, nvfp4_fast_ok): the tensor's absmax bits
  // as the absmax pass left them on the device; each thread derives the level from them (no level
  // kernel between the two passes), and the thread of element 0 stores the tensor scale at
  // tensor_scale_out. Null: tensor_dev or p.tensor is the level.
  const std::uint32_t* tensor_amax_dev = nullptr;
  float* tensor_scale_out = nullptr;
};

namespace {

// Whether the block-scaled rule is one of NVFP4's (E4M3 scale codes), on the host (path choice)
// and on the device.
__host__ __device__ __forceinline__ bool nvfp4_rule(const QArgs& a) {
  return a.p.rule == native::ScaleRule::nvfp4_torchao || a.p.rule == native::ScaleRule::nvfp4_te;
}

// The block-scaled paths a fast single-pass kernel compiles for these arguments (MxRun): lean for
// NVFP4 and torchao's arithmetic; OCP MX by the instruction (hw_e4m3 / hw_e5m2); OCP MX by the lean
// software cast where its sign rules are fixed (signed with a negative zero) and its domain holds
// every finite fp32 value (so fast_mx's condition implies it); otherwise any.
// Whether the NVFP4 single pass runs nvfp4_kernel (detail_nvfp4.cuh): blocks of 16 (one thread
// each), e2m1fn under rne (NVFP4 has no other element cast), on the host (path and level choice).
inline bool nvfp4_fast_ok(const QArgs& a) {
  return nvfp4_rule(a) && a.G == kRun && !a.col && !a.transpose && a.p.fmt == formats::e2m1fn &&
         a.p.mode == RoundMode::rne;
}

inline MxRun mx_run_of(const QArgs& a) {
  if (nvfp4_rule(a) || a.p.rule == native::ScaleRule::mx_torchao) return MxRun::lean;
  if (a.p.rule != native::ScaleRule::mx) return MxRun::any;
  if (a.hw_e4m3 || a.hw_e5m2) return MxRun::ocp_hw;
  const bool lean_all = a.plan.lean_lo == 0 && a.plan.lean_span >= 0x7F7FFFFFu;
  return a.p.fmt.is_signed && a.p.fmt.has_neg_zero() && lean_all ? MxRun::ocp_sw : MxRun::any;
}

}  // namespace
}  // namespace exmy::gpu::quant_detail

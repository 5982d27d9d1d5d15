// Tensor quantization kernels (gpu/quant/quantize.hpp). The per-element work is the body of the CPU
// reference's loop (sim/quant/quantize.cpp) on the same native:: functions; what differs is only
// how groups are reduced and how elements are assigned to threads:
//   - single pass: contiguous groups of 16 * 2^k <= 4096 elements (row-wise with such rows,
//     block-wise, MX): a thread holds 16 consecutive elements in registers, the group's absmax is
//     a shuffle / shared-memory max over the group's 2^k threads, then codes are written;
//   - otherwise: absmax kernel (atomicMax on |x| bit patterns), a per-group state kernel, then an
//     element kernel (uniform state for tensor-wise, a 2-d kernel for column-wise, the general
//     one otherwise) or the tiled transpose kernel.
// absmax as the max of |x| bit patterns: for non-negative fp32 values the unsigned order of the
// codes is the numeric order, +0 and -0 both map to 0, and a NaN maps to 0x7FC00000 (propagate:
// above +inf 0x7F800000, and every NaN maps to the same code) or to 0 (ignore, the identity).
// So the max over any order or tree equals the fold of native::absmax_combine, bit for bit.
// bf16 / fp16 magnitudes are maxed as 16-bit patterns before widening: the exact widening is
// strictly increasing on non-NaN magnitudes (and maps 0 to 0), so it commutes with max.
//
// Fast paths (chosen on the host per call; every other case runs the generic element function
// quant_one, the reference loop body): int8 and float targets under rne (integer rounding by one
// cvt, gpu/quant/fast_int8.hpp; float casts by gpu/cast/fast_cast.hpp, the mode fixed at compile
// time), codebooks under the midpoint tie rules (one table read, gpu/quant/codebook_table.hpp), MX
// elements under rne for fast-cast formats (the exact 2^-X scaling is an exponent-field shift).
// Layout: this file (host glue: options, launch arguments, the path choice, gpu::quantize);
// absmax.cu (absmax and state passes, gpu::group_absmax); dequantize.cu; quantize_<kind>.cu (the
// launchers and code kernels of one target kind each); detail_*.cuh (what they share).
// Where a fast path skips the canonical-NaN step of the reference (native::rn32_*), the element's
// code does not depend on a NaN's bits: int8 rounding and codebook lookup send every NaN to 0.
#include <string>

#include "gpu/cast/fast_cast.hpp"
#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "gpu/quant/codebook_table.hpp"
#include "gpu/quant/detail_args.cuh"
#include "gpu/quant/detail_launch.cuh"
#include "gpu/quant/quantize.hpp"
#include "sim/common/error.hpp"
#include "sim/native/pack4.hpp"
#include "sim/native/quant_nvfp4.hpp"
#include "sim/quant/scheme_registry.hpp"

namespace exmy::gpu::quant_detail {
namespace {

// packed[j] = codes 2j (low nibble) and 2j + 1 (high), sim/native/pack4.hpp's layout.
__global__ void __launch_bounds__(kThreads)
    pack4_kernel(const std::uint8_t* __restrict__ codes, std::uint64_t n,
                 std::uint8_t* __restrict__ packed) {
  const std::uint64_t pairs = (n + 1) / 2;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t j = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
       j < pairs; j += stride) {
    packed[j] = native::pack4_pair(codes[2 * j], 2 * j + 1 < n ? codes[2 * j + 1] : 0);
  }
}

// The NVFP4 two-level per-tensor level of a tensor whose absmax bits are *amax_bits, as
// quant::nvfp4_tensor_level computes it when neither the tensor's amax nor its scale is given
// (te: native::nvfp4_te_tensor; torchao: per_tensor_amax_to_scale), and the stored scale of
// quant::nvfp4_stored_scale. One thread: the level stays on the device for the single pass.
__global__ void nvfp4_level_kernel(const std::uint32_t* __restrict__ amax_bits, bool te,
                                   native::Nvfp4Tensor* __restrict__ level,
                                   float* __restrict__ stored) {
  const float amax = native::float_of(*amax_bits);
  native::Nvfp4Tensor t;
  if (te) {
    t = native::nvfp4_te_tensor(amax);
  } else {
    t.two_level = true;
    t.per_tensor_scale = native::nvfp4_torchao_tensor_scale(amax);
  }
  *level = t;
  *stored = te ? t.global_decode : t.per_tensor_scale;
}

}  // namespace

void check_options(std::size_t rows, std::size_t cols, const quant::Options& opt) {
  quant::validate_options(opt);  // the checks the CPU path makes, then the GPU path's own
  const native::GroupShape groups = quant::scheme_entry(opt.scheme).groups;
  if ((groups == native::GroupShape::block || groups == native::GroupShape::tile) &&
      opt.scheme.block == 0) {
    throw InputError("scheme block: expected a block size B >= 1");
  }
  // The scheme's shape rule on the matrix view (nvfp4's last dimension; a tile scheme's whole
  // tiles where its library asks for them; the 2-d rule is the caller's, on the file's shape).
  quant::check_shape(opt, {rows, cols});
}

QArgs make_args(std::size_t rows, std::size_t cols, const quant::Options& opt,
                const native::Nvfp4Tensor& level) {
  QArgs a{};
  a.p = quant::make_plan(opt, level);
  const quant::Scheme& s = opt.scheme;
  const native::GroupShape groups = a.p.groups;
  a.kind = a.p.byte_scales()                                  ? Kind::mx
           : a.p.element == native::ElementKind::int8         ? Kind::int8
           : a.p.element == native::ElementKind::float_format ? Kind::flt
                                                              : Kind::codebook;
  a.col = groups == native::GroupShape::col;
  a.transpose = opt.transpose;
  a.rows = rows;
  a.cols = cols;
  a.n = static_cast<std::uint64_t>(rows) * cols;
  a.G = groups == native::GroupShape::tensor ? (a.n > 0 ? a.n : 1)
        : groups == native::GroupShape::row  ? cols
        : groups == native::GroupShape::col  ? 1
                                             : s.block;
  a.groups = quant::group_count(s, rows, cols);
  while (a.G_shift < 63 && (std::uint64_t{1} << (a.G_shift + 1)) <= a.G) ++a.G_shift;
  if ((std::uint64_t{1} << a.G_shift) != a.G) a.G_shift = 0;
  if (a.p.element == native::ElementKind::float_format) {
    a.fast = a.kind == Kind::flt && fast_cast_supported(a.p.fmt);
    if (fast_cast_supported(a.p.fmt)) {
      a.plan = make_fast_cast_plan(a.p.fmt, Rounding{opt.mode, opt.sr_bits, Overflow::satfinite});
    }
  }
  // The fp8 instruction where the MX fast paths cast with fast_cast_fp32_fixed<rne> under
  // satfinite into e4m3fn / e5m2 (kernels compiled for sm_89+ only; others keep the software cast).
  const bool mx_fp8_rne =
      a.kind == Kind::mx && a.p.mode == RoundMode::rne &&
      (a.p.rule == native::ScaleRule::mx || a.p.rule == native::ScaleRule::mx_torchao);
  a.hw_e4m3 = mx_fp8_rne && a.p.fmt == formats::e4m3fn;
  a.hw_e5m2 = mx_fp8_rne && a.p.fmt == formats::e5m2;
  // Tensor-wise float codes by the fp8 instruction (satfinite, as the plan's rounding): e4m3fn /
  // e5m2 under rne, or sr:R where hw_codes_sr's constants hold (1 <= R <= 21 - M).
  if (a.kind == Kind::flt && a.fast && (a.p.fmt == formats::e4m3fn || a.p.fmt == formats::e5m2)) {
    const int R = a.p.sr_bits;
    const bool sr_ok = a.p.mode == RoundMode::sr && R >= 1 && R <= 21 - a.p.fmt.man_bits;
    if (a.p.mode == RoundMode::rne || sr_ok) {
      const bool sr = a.p.mode == RoundMode::sr;
      a.flt_hw = a.p.fmt == formats::e4m3fn ? (sr ? FltHw::e4m3_sr : FltHw::e4m3_rne)
                                            : (sr ? FltHw::e5m2_sr : FltHw::e5m2_rne);
    }
  }
  a.keys = native::philox_keys(a.p.seed);
  return a;
}

// Whether the element work of K runs on its fast path (see the file comment).
bool fast_path(const QArgs& a) {
  switch (a.kind) {
    case Kind::int8:
      return a.p.mode == RoundMode::rne;
    case Kind::flt:
      return a.fast && (a.p.mode == RoundMode::rne ||
                        fast_mode_for(a.plan, Rounding{a.p.mode, a.p.sr_bits,
                                                       Overflow::satfinite}) == FastMode::sr);
    case Kind::codebook:
      return a.p.mode != RoundMode::sr && codebook_table_supports(a.p.tie);
    case Kind::mx:  // fast_mx: OCP (ScaleRule::mx); fast_mx_torchao; NVFP4 per group
      return nvfp4_rule(a) ||
             ((a.p.rule == native::ScaleRule::mx || a.p.rule == native::ScaleRule::mx_torchao) &&
              fast_cast_supported(a.p.fmt) && a.p.mode == RoundMode::rne);
  }
  return false;
}

void run_quantize_contiguous(const void* x, CastInput in, const QArgs& a, const quant::Options& opt,
                             const QuantizedOut& o, cudaStream_t s) {
  switch (a.kind) {  // one launcher per target kind (quantize_<kind>.cu)
    case Kind::int8:
      run_quantize_int8(x, in, a, opt, o, s);
      break;
    case Kind::flt:
      run_quantize_float(x, in, a, opt, o, s);
      break;
    case Kind::codebook:
      run_quantize_codebook(x, in, a, opt, o, s);
      break;
    case Kind::mx:
      run_quantize_block_scaled(x, in, a, opt, o, s);
      break;
  }
}

bool single_pass(const QArgs& a, const quant::Options& /*opt*/) {
  if (a.transpose || a.n == 0) return false;
  // Contiguous groups: rows, or 1-d blocks (block:B, mx, nvfp4).
  if (a.p.groups != native::GroupShape::row && a.p.groups != native::GroupShape::block) {
    return false;
  }
  const std::uint64_t G = a.G;
  if (G < kRun || G > kTile || G % kRun != 0) return false;
  const std::uint64_t S = G / kRun;
  return (S & (S - 1)) == 0;
}

}  // namespace exmy::gpu::quant_detail

namespace exmy::gpu {

using namespace quant_detail;

bool quantize_is_single_pass(std::size_t rows, std::size_t cols, const quant::Options& opt) {
  return single_pass(make_args(rows, cols, opt), opt);
}

void quantize(const void* x, CastInput in_type, std::size_t rows, std::size_t cols,
              const quant::Options& opt_in, const QuantizedOut& out, CUstream_st* stream) {
  // The input's dtype is part of the plan (the 2-D te / torchao rules read it, SEMANTICS 7.15).
  quant::Options opt = opt_in;
  opt.source = in_type == CastInput::bf16   ? native::Storage::bf16
               : in_type == CastInput::fp16 ? native::Storage::f16
                                            : native::Storage::f32;
  check_options(rows, cols, opt);
  const bool bytes = quant::make_plan(opt).byte_scales();
  if (out.codes == nullptr || (bytes ? out.scale_codes == nullptr : out.state == nullptr) ||
      (opt.two_level && out.tensor_scale == nullptr)) {
    throw InputError(
        "quantize: output pointers for codes and state (scale codes, tensor scale) "
        "are required");
  }
  // NVFP4 two-level: the per-tensor level from the tensor's absmax, unless the options give it.
  // Where the single pass runs (every non-transposed NVFP4 tensor) the level is computed on the
  // device and read there by the kernel (QArgs::tensor_dev): no round trip through the host, whose
  // synchronization cost every two-level call ~130 us on an H200 beside the absmax pass itself.
  // nvfp4_kernel (detail_nvfp4.cuh) reads the absmax bits themselves (QArgs::tensor_amax_dev) and
  // stores the tensor scale, so no level kernel runs between the two passes.
  // Otherwise the absmax is read back and the plan carries the level.
  native::Nvfp4Tensor level;
  void* level_scratch = nullptr;
  native::Nvfp4Tensor* level_dev = nullptr;
  const std::uint32_t* amax_dev = nullptr;
  if (opt.two_level) {
    float tensor_amax = native::kAbsmaxInit;
    if (opt.tensor_amax != opt.tensor_amax && opt.tensor_scale != opt.tensor_scale) {
      const QArgs probe = make_args(rows, cols, opt);
      const bool on_device = single_pass(probe, opt) && fast_path(probe);
      // nvfp4_kernel derives the level from the absmax bits itself (QArgs::tensor_amax_dev).
      const bool from_amax = on_device && nvfp4_fast_ok(probe);
      // amax bits at offset 0, the level (on_device) at offset 16.
      cuda_check(cudaMallocAsync(&level_scratch, 16 + sizeof(native::Nvfp4Tensor), stream),
                 "cudaMallocAsync");
      auto* amax_bits = static_cast<std::uint32_t*>(level_scratch);
      group_absmax(x, in_type, rows, cols, quant::Scheme{quant::Granularity::tensor, 0}, opt.nan,
                   reinterpret_cast<float*>(amax_bits), stream);
      if (from_amax) {
        amax_dev = amax_bits;
        level.two_level = true;  // the plan's marker; the values are the device's
      } else if (on_device) {
        level_dev = reinterpret_cast<native::Nvfp4Tensor*>(static_cast<char*>(level_scratch) + 16);
        nvfp4_level_kernel<<<1, 1, 0, stream>>>(amax_bits, opt.variant == native::CastVariant::te,
                                                level_dev, out.tensor_scale);
        cuda_check_launch("nvfp4 level kernel launch");
        level.two_level = true;  // the plan's marker; the values are the device's
      } else {
        cuda_check(
            cudaMemcpyAsync(&tensor_amax, amax_bits, sizeof(float), cudaMemcpyDeviceToHost, stream),
            "cudaMemcpyAsync");
        cuda_check(cudaFreeAsync(level_scratch, stream), "cudaFreeAsync");
        level_scratch = nullptr;
        cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      }
    }
    if (level_dev == nullptr && amax_dev == nullptr) {
      level = quant::nvfp4_tensor_level(opt, tensor_amax);
      const float stored = quant::nvfp4_stored_scale(opt, level);
      cuda_check(cudaMemcpy(out.tensor_scale, &stored, sizeof(float), cudaMemcpyHostToDevice),
                 "cudaMemcpy");
    }
  }
  QArgs a = make_args(rows, cols, opt, level);
  a.tensor_dev = level_dev;
  a.tensor_amax_dev = amax_dev;
  if (amax_dev != nullptr) a.tensor_scale_out = out.tensor_scale;
  QuantizedOut o = out;
  void* scratch = nullptr;
  if (out.packed4) {
    if (a.p.element != native::ElementKind::float_format || a.p.fmt.total_bits() > 4) {
      throw InputError("quantize: packed codes need an element format of at most 4 bits, got '" +
                       opt.target.name + "'");
    }
    // The single-pass kernel packs as it stores; the other paths write bytes to scratch, which
    // one more kernel packs.
    a.packed4 = single_pass(a, opt);
    if (!a.packed4 && a.n > 0) {
      cuda_check(cudaMallocAsync(&scratch, a.n, stream), "cudaMallocAsync");
      o.codes = static_cast<std::uint8_t*>(scratch);
    }
  }
  // The scheme's launcher (its registry entry names it; detail_launch.cuh's table runs it).
  launcher(quant::scheme_entry(opt.scheme).gpu).quantize(x, in_type, a, opt, o, stream);
  if (scratch != nullptr) {
    const std::uint64_t pairs = (a.n + 1) / 2;
    pack4_kernel<<<grid_for(pairs, 1), kThreads, 0, stream>>>(o.codes, a.n, out.codes);
    cuda_check_launch("pack kernel launch");
    cuda_check(cudaFreeAsync(scratch, stream), "cudaFreeAsync");
  }
  if (level_scratch != nullptr) cuda_check(cudaFreeAsync(level_scratch, stream), "cudaFreeAsync");
}

}  // namespace exmy::gpu

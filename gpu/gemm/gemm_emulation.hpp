// The GEMM accumulation models on the GPU (docs/SEMANTICS.md 15): one thread per output element
// runs sim/native/gemm_dot.hpp, the code the CPU reference runs, so the outputs are the same bits
// (tests/gpu/gemm_layer_test.cpp); the hw models without block scales run a tiled kernel
// instead (sim/native/gemm_tile.hpp: the same integers, computed a register block at a time). CUDA
// cores and integer alignment arithmetic, no tensor cores: an emulator, not a fast GEMM. The int8
// product of the layers (exact int32 accumulation and a dequantization epilogue) lives here too.
// Host arrays in, host arrays out (synchronous); gpu::CudaError on CUDA failures. Builds without
// CUDA throw InputError (gpu/common/runtime_nocuda.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "sim/gemm/gemm.hpp"
#include "sim/native/mask.hpp"
#include "sim/native/quant_matmul.hpp"

namespace exmy::gpu {

// gemm::gemm on the GPU for every model but `exact` (InputError for exact).
std::vector<std::uint32_t> gemm_emulate(const gemm::Operand& a, const gemm::Operand& b,
                                        const gemm::AccumModel& m, gemm::OutFormat out,
                                        double alpha = 1.0,
                                        const gemm::RowColScales* scales = nullptr);

// The same C, handed to `sink` a block of rows at a time (rows [i0, i1), (i1 - i0) x b.rows codes)
// as it comes back from the device: the host holds one block of C, and of the operands their
// stored form and one block being staged (issue 36's memory bound; `exmy gemm --device cuda`).
// A model with rp and a 16-bit output (SEMANTICS 15.2) runs on the device too, each output's
// chunks summed by its thread as gemm::gemm_rows sums them: nothing of M x N on the host.
using RowSink = std::function<void(std::size_t i0, std::size_t i1, const std::uint32_t* c)>;
void gemm_emulate_rows(const gemm::Operand& a, const gemm::Operand& b, const gemm::AccumModel& m,
                       gemm::OutFormat out, double alpha, const gemm::RowColScales* scales,
                       const RowSink& sink);

// An operand whose values are already in device memory (the layer's prepared operands,
// gpu/layer/layer.cu): element (r, k) of the operand's rows x cols is the fp32 value
// values[r rs + k cs] (a transpose: the strides swapped). Its gemm::Operand still gives the
// shape, emin, type and code_bits (the model); its values, store and source are not read.
struct DeviceValues {
  const float* values = nullptr;
  std::size_t rs = 0, cs = 1;
};
// gemm_emulate_rows with A and/or B on the device (a null DeviceValues: that operand's host
// values, staged as above): the same doubles in the same places, so the same bits.
void gemm_emulate_rows(const gemm::Operand& a, const DeviceValues* da, const gemm::Operand& b,
                       const DeviceValues* db, const gemm::AccumModel& m, gemm::OutFormat out,
                       double alpha, const gemm::RowColScales* scales, const RowSink& sink);

// Which kernel runs a GEMM (gpu/gemm/gemm_emulation.cu's run_gemm chooses, in one place):
// automatic = the tiled fast path (gpu/gemm/gemm_tiled.hpp) where the model and data suit it,
// the generic one-thread-per-output kernel otherwise and for the outputs the tiled kernel
// leaves; generic = that kernel only (the benchmark's baseline, the kernel before the tiles).
enum class GemmPath { automatic, generic };

// Time of the emulation on operands already on the device (no transfers; the tiled path's
// stats and encoding passes included), for the benchmark: the median of `reps` runs, in
// milliseconds. *tiled (when given): whether the tiled kernel ran.
double gemm_emulate_time_ms(const gemm::Operand& a, const gemm::Operand& b,
                            const gemm::AccumModel& m, gemm::OutFormat out, int reps,
                            GemmPath path = GemmPath::automatic, bool* tiled = nullptr);
// A GEMM staged on the device (alpha 1, no row/column scales), run as often as asked: the
// benchmark's body. run() is synchronous and returns whether the tiled kernel ran; codes() is
// the last run's M x N output codes.
class PreparedGemm {
 public:
  PreparedGemm(const gemm::Operand& a, const gemm::Operand& b, const gemm::AccumModel& m,
               gemm::OutFormat out);
  ~PreparedGemm();
  PreparedGemm(const PreparedGemm&) = delete;
  PreparedGemm& operator=(const PreparedGemm&) = delete;
  bool run(GemmPath path);
  std::vector<std::uint32_t> codes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
// The output codes (M x N) of one run on the chosen path (alpha 1, no row/column scales).
std::vector<std::uint32_t> gemm_emulate_device_codes(const gemm::Operand& a, const gemm::Operand& b,
                                                     const gemm::AccumModel& m, gemm::OutFormat out,
                                                     GemmPath path, bool* tiled = nullptr);

// out[i][j] = the dtype value (fp32: out_format 0, bf16 1, fp16 2) of the dequantized int8
// product sum_k a[i][k] b[j][k] (SEMANTICS 8.1-8.2): a rows x k with one state per row, b cols x
// k with one state per row (or a single tensor state when b_state has one entry).
std::vector<float> int8_product(const std::vector<std::int8_t>& a,
                                const std::vector<float>& a_state, std::size_t rows,
                                const std::vector<std::int8_t>& b,
                                const std::vector<float>& b_state, std::size_t cols, std::size_t k,
                                native::DequantOrder order, int out_format);

// Every value masked (SEMANTICS 2.1; when mask_e > 0) and then rounded to the dtype
// (out_format as above), on the GPU.
std::vector<float> mask_round(const std::vector<float>& v, int mask_e, int mask_m, MaskOuter outer,
                              MaskInner inner, int out_format);

// The device-pointer forms of the two above (the layer's operands and products that stay on the
// device, gpu/layer/layer.cu), synchronous: c (rows x cols fp32) from a (rows x k codes) and bt
// (k x cols: B's codes transposed), b_tensor when b_state is one tensor-wise state; and out[i]
// from in[i] for n values (out may be in).
void int8_product_device(const std::int8_t* a, const float* a_state, std::size_t rows,
                         const std::int8_t* bt, const float* b_state, bool b_tensor,
                         std::size_t cols, std::size_t k, native::DequantOrder order,
                         int out_format, float* c);
void mask_round_device(const float* in, std::size_t n, int mask_e, int mask_m, MaskOuter outer,
                       MaskInner inner, int out_format, float* out);

}  // namespace exmy::gpu

// The tiled fast path of the GEMM emulation (internal to gpu/gemm/; needs the CUDA headers).
// gpu/gemm/gemm_emulation.cu chooses between it and the generic one-thread-per-output kernel in
// one place (run_gemm). The algebra is sim/native/gemm_tile.hpp's; why it equals the CPU model
// bit for bit is written there.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/native/gemm_dot.hpp"

namespace exmy::gpu {

// The epilogue of an output (alpha, per-row/column scales, the output code), as gemm::gemm_rows
// applies it: the generic and the tiled kernels both end with it.
struct GemmEpilogue {
  float alpha = 1.0f;
  const float* sa = nullptr;
  const float* sb = nullptr;
  int order = 0;
  int out = 0;
};
__device__ inline std::uint32_t gemm_epilogue(float acc, std::size_t i, std::size_t j,
                                              const GemmEpilogue& e) {
  if (e.alpha != 1.0f) acc = native::rn_mul(e.alpha, acc);
  if (e.sa != nullptr || e.sb != nullptr) {
    acc = native::dot_rowcol(acc, e.sa != nullptr ? e.sa[i] : 1.0f,
                             e.sb != nullptr ? e.sb[j] : 1.0f, e.order);
  }
  return native::dot_out_code(acc, 1.0f, e.out);
}

// Whether the model (without block or tile scales, without rp) is one the tiled kernel runs:
// hw, no sub-groups, no tree over parts, k_group 16 or 32, frac <= 25, and a unit layout whose
// units start on group boundaries (tile_layout). The data can still send the GEMM to the generic
// path (operand precision, exponent range: gemm_tiled returns false).
bool tiled_model_ok(const native::DotModel& m, std::size_t K);

// The tiled GEMM on staged operands (a: M x K doubles row-major; bt: B transposed, K x N), into
// c (M x N output codes, device). Returns false, having written nothing to c, when the data
// does not suit it. Otherwise every output is written except those it could not compute
// (specials in the row or column, an accumulator that reached -0 or infinity): `only` (M x N
// bytes, device) is 1 for those and *flagged counts them, for the generic kernel to finish.
bool gemm_tiled(const double* a, const double* bt, std::size_t M, std::size_t N, std::size_t K,
                int emin_a, int emin_b, const native::DotModel& m, const GemmEpilogue& ep,
                std::uint32_t* c, std::uint8_t* only, std::size_t* flagged);

}  // namespace exmy::gpu

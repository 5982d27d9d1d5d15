// The one fp32 GEMM of the language model (reports/lm/lm_model.hpp): C = op(A) op(B), every
// C[i][j] summed in fp32 in k order 0..K-1 from +0 (each product rounded, then added: no
// contraction), with the operands cast elementwise first as the GemmPolicy says (each packed
// operand cast as a whole, cast_operands). The blocked kernel (4 x 16 register tiles on AVX2,
// 4 x 8 on SSE2, over packed panels; lane-wise IEEE multiply then add) computes exactly that sum
// for every element on either instruction set: blocking and vector lanes change which elements
// are computed together, never the order or the roundings of one element's sum.
#pragma once

#include "reports/lm/lm_model.hpp"

namespace exmy::reports::lm {

struct GemmCall {
  GemmSite site;
  Pass pass;
  const GemmPolicy* policy;  // null: identity
};

// C (M x N, row stride ldc) = op(A) (M x K) * op(B) (K x N), or += that product when accumulate
// (one fp32 addition of the finished sum per element). op(A) = A (A is M x K, row stride lda)
// or A^T (tA: A is K x M); likewise B (K x N) or B^T (tB: B is N x K).
void gemm(const GemmCall& call, int M, int N, int K, const float* A, int lda, bool tA,
          const float* B, int ldb, bool tB, float* C, int ldc, bool accumulate = false);

}  // namespace exmy::reports::lm

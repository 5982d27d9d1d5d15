// Exact inner products of fp32 rows, vectorised: the value native::ExactDot32::add_product
// accumulates, computed with fp64 lanes whose every operation is exact.
#pragma once

#include <cstddef>

#include "sim/native/exact_dot.hpp"

namespace exmy::fast {

// out[i * rv + j] += sum_c u[i * k + c] * v[j * k + c] for every row i < ru of u and j < rv of v,
// exactly: each out gets the value that add_product(u[i * k + c], v[j * k + c]) for c = 0..k-1
// would add (hence the same to_double). Elements must be finite.
//
// Why it is exact (Rump, Ogita and Oishi, "Accurate floating-point summation part I: faithful
// rounding", ExtractScalar): a product of two fp32 values is exact in fp64 (48-bit
// significands). From a scan of the two rows, every nonzero product is a multiple of 2^lo below
// 2^T in magnitude. With sigma = 1.5 * 2^M and |x| < 2^(M-1), q = fl(fl(sigma + x) - sigma) is x
// rounded to a multiple of 2^(M-52), exactly, and r = fl(x - q) = x - q exactly (the rounding
// error of an addition), |r| <= 2^(M-53). Level 1 splits each product with M = T + L (n <= 2^L
// terms a lane), so its q's are multiples of 2^(T+L-52) below 2^T and any sum of up to n of them
// stays below 2^(T+L): exact in fp64. Each further level splits the residual at a grid 52 - L
// bits lower, and the last level sums the residuals themselves once their sums, multiples of
// 2^lo, fit 53 bits. Every lane's level sums are then added to the limbs (add_double). Rows whose
// exponents need more than 4 levels take the scalar add_product loop.
void exact_dots(const float* u, std::size_t ru, const float* v, std::size_t rv, std::size_t k,
                native::ExactDot32* out);

// For tests: the number of fp64 levels exact_dots uses for two rows (0 when it falls back to
// add_product, -1 when one row is all zeros).
int exact_dot_levels(const float* a, const float* b, std::size_t k);

}  // namespace exmy::fast

// ATen's CUDA reduction kernel (aten/src/ATen/native/cuda/Reduce.cuh, torch 2.11) for a
// reduction with many outputs, bit for bit: the launch setReduceConfig chooses and the order
// ReduceOp::run adds in (docs/SEMANTICS.md 9.2.8). Host only: a model of the launch, not a
// kernel. sim/native/torch_mean_cuda.hpp is its one-output case for the sum (bitsandbytes'
// offset); this file adds the outputs, NormTwoOps and the two layouts TensorIterator hands the
// kernel after it moves the reduced dimension first and coalesces the others:
//   inner  the reduced dimension is the fastest (rows of a contiguous tensor: dim=-1, or a whole
//          tensor): block.x along the reduction (block_x_reduce), block.y over outputs or, with
//          values_per_thread >= min(16 * block.y, 256), along the reduction too;
//   outer  the fastest dimension is an output one (columns: dim=-2): block.x over outputs
//          (vectorised by output_vec_size outputs per thread: the same order per output), block.y
//          along the reduction where values_per_thread >= min(16 * block.y, 256).
// setReduceConfig (dim0 = the block.x dimension's extent, dim1 = the other):
//   inner: vectorize_input when dim0 > 128 (input_vec_size 4; dim0 /= 4); outer:
//   dim0 /= output_vec_size; set_block_dimension: p0 = dim0 < 512 ? last_pow2(dim0) : 512, p1
//   likewise, bw = min(p0, 32), bh = min(p1, 512 / bw), bw = min(p0, 512 / bh); inner:
//   step_input = bw, outer: step_output = bw; vpt = ceil(n / step_input); vpt >= min(16 bh, 256):
//   block.y splits the input (step_input *= bh), else the outputs (step_output *= bh); with the
//   input split, vpt >= 256 and grid.x <= SMs * (2048 / threads): ctas_per_output = max(min(
//   ceil(target / grid.x), ceil(vpt / 16)), ceil(vpt / 256)) (global reduction when > 1).
// thread_reduce: vectorized input: the row's misaligned head (its first (align - shift) % align
//   elements, align = 4 elements) taken by lanes shift..3 into accumulator 0, then 4
//   accumulators over aligned 4-vectors i = lane (+ warp * bw) (+ cta * bw * bh), i += step, the
//   last n % 4 elements by lanes 0..2 into accumulator 0, ((a0 + a1) + a2) + a3; otherwise vt0 = 4
//   accumulators over idx = first + k * step (k = 0..3), idx += 4 * step, the tail one element per
//   accumulator in order, ((a0 + a1) + a2) + a3. Then block_y_reduce (shared memory, offsets
//   bh/2 .. 1), block_x_reduce (shared memory offsets bw/2 .. 32, then shfl_down with offsets
//   min(bw, 32)/2 .. 1), the global reduction (the last CTA: thread t folds 0 + buf[t] +
//   buf[t + threads] ..., then block_y_reduce and block_x_reduce again), project.
// The ops: sum (a + b; mean's project a * factor, caller's) and NormTwoOps (reduce: acc + x*x,
// contracted by nvcc to fma(x, x, acc); combine a + b; project sqrt.rn). Inputs are the values of
// the tensor's dtype as fp32 (opmath).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/native/fp32_ops.hpp"
#include "sim/native/torch_mean_cuda.hpp"

namespace exmy::native {

enum class TorchReduceOp : std::uint8_t { sum, norm2 };

struct TorchReduceShape {
  std::size_t outputs = 1;  // num_outputs
  std::size_t n = 1;        // inputs_per_output
  bool inner = true;        // the reduction is on the fastest-striding dimension
  int output_vec = 1;       // outer: get_output_vec_size (4, 2 or 1)
};

struct TorchReduceConfig {
  bool vectorize_input = false;
  int bw = 1, bh = 1;
  std::int64_t step_input = 1, step_output = 1;
  bool x_reduce = false, y_reduce = false;  // input_mult[0], input_mult[1] != 0
  bool y_splits_output = false;             // output_mult[1] != 0
  int ctas = 1;
};

inline TorchReduceConfig torch_cuda_reduce_config(const TorchReduceShape& s,
                                                  const TorchCudaDevice& dev) {
  TorchReduceConfig c;
  const auto n = static_cast<std::int64_t>(s.n), outs = static_cast<std::int64_t>(s.outputs);
  std::int64_t dim0 = s.inner ? n : outs, dim1 = s.inner ? outs : n;
  if (s.inner && dim0 >= 128) {
    c.vectorize_input = true;
    dim0 /= 4;
  } else if (!s.inner) {
    dim0 /= s.output_vec;
  }
  const int mnt = 512 / (s.inner ? 1 : s.output_vec);  // MAX_NUM_THREADS / output_vec_size
  const auto pow2 = [&](std::int64_t d) { return d < mnt ? torch_last_pow2(d) : mnt; };
  const int p0 = pow2(dim0), p1 = pow2(dim1);
  c.bw = std::min(p0, dev.warp_size);
  c.bh = std::min(p1, mnt / c.bw);
  c.bw = std::min(p0, mnt / c.bh);
  if (s.inner) {
    c.x_reduce = true;
    c.step_input = c.bw;
  } else {
    c.step_output = c.bw;
  }
  const auto vpt = [&] { return (n + c.step_input - 1) / c.step_input; };
  if (vpt() >= std::min<std::int64_t>(16 * c.bh, 256)) {
    c.y_reduce = true;
    c.step_input *= c.bh;
  } else {
    c.y_splits_output = true;
    c.step_output *= c.bh;
  }
  const std::int64_t threads = static_cast<std::int64_t>(c.bw) * c.bh;
  const std::int64_t target =
      static_cast<std::int64_t>(dev.sms) * (dev.max_threads_per_sm / static_cast<int>(threads));
  const std::int64_t vec_outs = s.inner ? outs : outs / s.output_vec;
  const std::int64_t grid = (vec_outs + c.step_output - 1) / c.step_output;
  if (c.y_reduce && vpt() >= 256 && grid <= target) {
    const std::int64_t c1 = (target + grid - 1) / grid, c2 = (vpt() + 15) / 16,
                       c3 = (vpt() + 255) / 256;
    c.ctas = static_cast<int>(std::max(std::min(c1, c2), c3));
    if (c.ctas > 1) c.step_input *= c.ctas;
  }
  return c;
}

namespace detail {

EXMY_HD float torch_reduce_step(TorchReduceOp op, float acc, float x) {
  return op == TorchReduceOp::norm2 ? rn_fma(x, x, acc) : rn_add(acc, x);
}

// One thread's value for the output whose inputs are x[off + i * es] (i < n): lane lx, warp ly,
// cta cy of config c. `shift` is the row's misalignment in elements (vectorized input only).
inline float torch_thread_reduce(TorchReduceOp op, const TorchReduceConfig& c, const float* x,
                                 std::int64_t n, std::int64_t es, int lx, int ly, int cy,
                                 int shift) {
  const std::int64_t first =
      (c.x_reduce ? lx : 0) +
      (c.y_reduce ? static_cast<std::int64_t>(ly) * (c.x_reduce ? c.bw : 1) : 0) +
      static_cast<std::int64_t>(cy) * (c.step_input / c.ctas);
  const bool tail_thread = (!c.y_reduce || ly == 0) && (c.ctas == 1 || cy == 0);
  const float ident = 0.0f;
  if (c.vectorize_input) {
    float v[4] = {ident, ident, ident, ident};
    std::int64_t base = 0, end = n;
    if (shift > 0) {  // the head: lanes shift..3 take the elements before the aligned start
      if (lx >= shift && lx < 4 && tail_thread) v[0] = torch_reduce_step(op, v[0], x[lx - shift]);
      base = 4 - shift;
      end = n - base;
    }
    if (first >= 0) {
      for (std::int64_t i = first; i * 4 + 3 < end; i += c.step_input) {
        for (int k = 0; k < 4; ++k) v[k] = torch_reduce_step(op, v[k], x[base + i * 4 + k]);
      }
    }
    if (tail_thread) {
      const std::int64_t j = end - end % 4 + lx;
      if (j < end) v[0] = torch_reduce_step(op, v[0], x[base + j]);
    }
    return rn_add(rn_add(rn_add(v[0], v[1]), v[2]), v[3]);
  }
  float v[4] = {ident, ident, ident, ident};
  const std::int64_t st = c.step_input;
  std::int64_t i = first;
  for (; i + 3 * st < n; i += 4 * st) {
    for (int k = 0; k < 4; ++k) v[k] = torch_reduce_step(op, v[k], x[(i + k * st) * es]);
  }
  for (int k = 0; k < 4 && i < n; ++k, i += st) v[k] = torch_reduce_step(op, v[k], x[i * es]);
  return rn_add(rn_add(rn_add(v[0], v[1]), v[2]), v[3]);
}

// block_y_reduce over r[y] (y < bh): r[0].
inline float torch_block_y_reduce(std::vector<float> r) {
  const int bh = static_cast<int>(r.size());
  for (int off = bh / 2; off > 0; off >>= 1) {
    for (int y = 0; y < off && y + off < bh; ++y) r[y] = rn_add(r[y], r[y + off]);
  }
  return r[0];
}

}  // namespace detail

// The outputs' accumulated values (before project) of the reduction: output o's inputs are
// x[first[o] + i * istride] for i < n. With a vectorized input, first[o] % 4 is the row's
// misalignment in elements (the tensor's data 16-byte aligned, a fresh allocation: align_bytes
// is 4 elements of any dtype).
inline std::vector<float> torch_cuda_reduce_acc(TorchReduceOp op, const TorchReduceShape& s,
                                                const float* x,
                                                const std::vector<std::int64_t>& first,
                                                std::int64_t istride, const TorchCudaDevice& dev) {
  const TorchReduceConfig c = torch_cuda_reduce_config(s, dev);
  const auto n = static_cast<std::int64_t>(s.n);
  std::vector<float> out(s.outputs);
  std::vector<float> lanes(static_cast<std::size_t>(c.bw));
  std::vector<float> ys(static_cast<std::size_t>(c.bh));
  for (std::size_t o = 0; o < s.outputs; ++o) {
    const float* xo = x + first[o];
    const int shift = c.vectorize_input ? static_cast<int>(first[o] % 4) : 0;
    // The threads of this output: inner: lanes x (and warps y when y_reduce); outer: one lane,
    // warps y when y_reduce.
    const int nx = c.x_reduce ? c.bw : 1, ny = c.y_reduce ? c.bh : 1;
    std::vector<float> cta(static_cast<std::size_t>(c.ctas));
    for (int cy = 0; cy < c.ctas; ++cy) {
      std::vector<float> vals(static_cast<std::size_t>(nx) * ny);
      for (int y = 0; y < ny; ++y) {
        for (int lx = 0; lx < nx; ++lx) {
          vals[static_cast<std::size_t>(y) * nx + lx] =
              detail::torch_thread_reduce(op, c, xo, n, istride, lx, y, cy, shift);
        }
      }
      // block_y_reduce per lane, then block_x_reduce of row 0.
      for (int lx = 0; lx < nx; ++lx) {
        for (int y = 0; y < ny; ++y) ys[y] = vals[static_cast<std::size_t>(y) * nx + lx];
        lanes[lx] =
            ny > 1 ? detail::torch_block_y_reduce(std::vector<float>(ys.begin(), ys.begin() + ny))
                   : vals[lx];
      }
      cta[cy] = nx > 1 ? detail::torch_block_x_reduce(
                             std::vector<float>(lanes.begin(), lanes.begin() + nx), dev)
                       : lanes[0];
    }
    if (c.ctas == 1) {
      out[o] = cta[0];
      continue;
    }
    // The last CTA: thread (lx, y) folds 0 + buf[t] + buf[t + nx*ny] + ..., t = lx + y*nx (with
    // block_x_reduce; else t = y), then block_y_reduce and block_x_reduce.
    std::vector<float> vals(static_cast<std::size_t>(nx) * ny);
    const int step = c.x_reduce ? nx * ny : ny;
    for (int y = 0; y < ny; ++y) {
      for (int lx = 0; lx < nx; ++lx) {
        float v = 0.0f;
        for (int t = c.x_reduce ? lx + y * nx : y; t < c.ctas; t += step) v = rn_add(v, cta[t]);
        vals[static_cast<std::size_t>(y) * nx + lx] = v;
      }
    }
    for (int lx = 0; lx < nx; ++lx) {
      for (int y = 0; y < ny; ++y) ys[y] = vals[static_cast<std::size_t>(y) * nx + lx];
      lanes[lx] = detail::torch_block_y_reduce(std::vector<float>(ys.begin(), ys.begin() + ny));
    }
    out[o] = nx > 1 ? detail::torch_block_x_reduce(
                          std::vector<float>(lanes.begin(), lanes.begin() + nx), dev)
                    : lanes[0];
  }
  return out;
}

// get_output_vec_size for an outer reduction of a contiguous tensor whose output dimension of
// extent c_out is the fastest (others' strides multiples of c_out): the largest of 4, 2, 1
// dividing c_out (the base address is 16-byte aligned).
inline int torch_output_vec_size(std::size_t c_out) {
  int v = 4;
  while (c_out % static_cast<std::size_t>(v) != 0) v /= 2;
  return v;
}

}  // namespace exmy::native

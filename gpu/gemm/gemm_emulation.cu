// The GEMM emulation and the int8 product kernels (gpu/gemm/gemm_emulation.hpp).
#include <algorithm>
#include <vector>

#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "gpu/gemm/gemm_emulation.hpp"
#include "sim/common/error.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/gemm_dot.hpp"
#include "sim/native/mask.hpp"

namespace exmy::gpu {

namespace {

// Block scales in device memory: A's rows x nb row-major, B's transposed (nb x N, like bt).
struct KernelBlockScales {
  const double* a = nullptr;
  const double* bt = nullptr;
  std::size_t nb = 0;
  int block = 0, emin_a = -127, emin_b = -127;
};

// Tile scales in device memory (SEMANTICS 15.7): A's ceil(M / ra) x kb and B's ceil(N / rb) x kb
// fp32 values, row-major as the operands hold them.
struct KernelTileScales {
  const float* a = nullptr;
  const float* b = nullptr;
  std::size_t kb = 0, ra = 1, rb = 1;
  int block = 128;
};

// One thread per output element: i = row of A, j = row of B. B is stored transposed (K x N) so
// that the threads of a warp (consecutive j) read consecutive addresses; a thread reads its row
// of A (the same for the whole warp: a broadcast).
__global__ void k_gemm_emulate(const double* __restrict__ a, const double* __restrict__ bt,
                               std::size_t M, std::size_t N, std::size_t K, int emin_a, int emin_b,
                               native::DotModel m, KernelBlockScales ks, KernelTileScales kt,
                               float alpha, const float* __restrict__ sa,
                               const float* __restrict__ sb, int order, int out,
                               std::uint32_t* __restrict__ c) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t i = blockIdx.y * static_cast<std::size_t>(blockDim.y) + threadIdx.y;
  if (i >= M || j >= N) return;
  native::DotBlockScales bs;
  if (ks.a != nullptr) {
    bs = {ks.a + i * ks.nb, 1, ks.bt + j, N, ks.block, ks.emin_a, ks.emin_b};
  }
  native::DotTileScales ts;
  if (kt.a != nullptr) ts = {kt.a + (i / kt.ra) * kt.kb, kt.b + (j / kt.rb) * kt.kb, kt.block};
  float acc =
      native::dot_model_fp32(a + i * K, 1, bt + j, N, K, emin_a, emin_b, m,
                             ks.a != nullptr ? &bs : nullptr, kt.a != nullptr ? &ts : nullptr);
  if (alpha != 1.0f) acc = native::rn_mul(alpha, acc);
  if (sa != nullptr || sb != nullptr) {
    acc =
        native::dot_rowcol(acc, sa != nullptr ? sa[i] : 1.0f, sb != nullptr ? sb[j] : 1.0f, order);
  }
  c[i * N + j] = native::dot_out_code(acc, 1.0f, out);
}

// The dtype value of an fp32 value (out 0: itself).
__device__ float to_out(float v, int out) {
  if (out == 0) return v;
  constexpr FloatFormat kF32 = formats::fp32;
  constexpr FloatFormat kBf16 = formats::bf16;
  constexpr FloatFormat kF16 = formats::fp16;
  const FloatFormat& f = out == 1 ? kBf16 : kF16;
  const std::uint64_t code = native::convert(kF32, f, Rounding{}, native::f32_bits(v), 0).code;
  return static_cast<float>(native::to_double(f, code));
}

__global__ void k_int8_product(const std::int8_t* __restrict__ a, const float* __restrict__ sa,
                               const std::int8_t* __restrict__ bt, const float* __restrict__ sb,
                               bool b_tensor, std::size_t M, std::size_t N, std::size_t K,
                               native::DequantOrder order, int out, float* __restrict__ c) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t i = blockIdx.y * static_cast<std::size_t>(blockDim.y) + threadIdx.y;
  if (i >= M || j >= N) return;
  const std::int32_t acc = native::dot_int8(a + i * K, 1, bt + j, static_cast<std::int64_t>(N),
                                            static_cast<std::int64_t>(K));
  const float v = native::dequant_int8_product(acc, sa[i], b_tensor ? sb[0] : sb[j], order);
  c[i * N + j] = to_out(v, out);
}

__global__ void k_mask_round(const float* __restrict__ in, std::size_t n, int mask_e, int mask_m,
                             MaskOuter outer, MaskInner inner, int out, float* __restrict__ res) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float v = in[i];
    if (mask_e > 0) {
      v = native::f32_from_bits(exmy::mask_fp32(native::f32_bits(v), mask_e, mask_m, outer, inner));
    }
    res[i] = to_out(v, out);
  }
}

template <class T>
std::vector<T> transposed(const std::vector<T>& v, std::size_t rows, std::size_t cols) {
  std::vector<T> t(v.size());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) t[c * rows + r] = v[r * cols + c];
  return t;
}

struct Prepared {
  std::vector<double> a, bt;
  native::DotModel m;
  std::vector<double> scale_a, scale_bt;  // block scales (empty: none), B's transposed
};

// The prepared block scales in device buffers, for the kernel.
struct DeviceBlockScales {
  DeviceBuffer a, bt;
  KernelBlockScales k;
  DeviceBlockScales(const Prepared& p, const gemm::Operand& oa, const gemm::Operand& ob)
      : a(p.scale_a.empty() ? nullptr : p.scale_a.data(), p.scale_a.size() * sizeof(double)),
        bt(p.scale_bt.empty() ? nullptr : p.scale_bt.data(), p.scale_bt.size() * sizeof(double)) {
    if (p.scale_a.empty()) return;
    k.a = a.as<double>();
    k.bt = bt.as<double>();
    k.nb = oa.cols / oa.scale_block;
    k.block = static_cast<int>(oa.scale_block);
    k.emin_a = oa.scale_emin;
    k.emin_b = ob.scale_emin;
  }
};

// The operands' tile scales in device buffers, for the kernel.
struct DeviceTileScales {
  DeviceBuffer a, b;
  KernelTileScales k;
  DeviceTileScales(const gemm::Operand& oa, const gemm::Operand& ob)
      : a(oa.tile_scales.empty() ? nullptr : oa.tile_scales.data(),
          oa.tile_scales.size() * sizeof(float)),
        b(ob.tile_scales.empty() ? nullptr : ob.tile_scales.data(),
          ob.tile_scales.size() * sizeof(float)) {
    if (oa.tile_cols == 0) return;  // operand_model checked that both sides have tiles
    k.a = a.as<float>();
    k.b = b.as<float>();
    k.kb = (oa.cols + oa.tile_cols - 1) / oa.tile_cols;
    k.ra = oa.tile_rows;
    k.rb = ob.tile_rows;
    k.block = static_cast<int>(oa.tile_cols);
  }
};

Prepared prepare(const gemm::Operand& a, const gemm::Operand& b, const gemm::AccumModel& model,
                 gemm::OutFormat out) {
  if (model.kind == gemm::AccumKind::exact) {
    throw InputError(
        "--accum exact: the CPU reference only (MPFR); the GPU runs fp32-seq, "
        "pairwise and hw models");
  }
  if (a.cols != b.cols) {
    throw InputError("A is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                     " and B is " + std::to_string(b.rows) + " x " + std::to_string(b.cols) +
                     ": expected the same K (C = A B^T)");
  }
  const gemm::AccumModel m = gemm::operand_model(a, b, model, out).model;
  Prepared p;
  p.a = a.values();  // the doubles, decoded from a stored operand (read_operand) if need be
  std::vector<double> bv = b.values();
  if (m.truncate_tf32) {
    const int mode = static_cast<int>(m.tf32_round);
    if (a.code_bits == 32)
      for (auto& x : p.a) x = native::dot_tf32(static_cast<float>(x), mode);
    if (b.code_bits == 32)
      for (auto& x : bv) x = native::dot_tf32(static_cast<float>(x), mode);
  }
  p.bt = transposed(bv, b.rows, b.cols);
  p.m = gemm::dot_model(m);
  if (a.scale_block != 0) {  // operand_model checked that both sides have the same block
    p.scale_a = a.scale_values();
    p.scale_bt = transposed(b.scale_values(), b.rows, b.cols / b.scale_block);
  }
  return p;
}

const dim3 kTile(32, 8);
dim3 grid2d(std::size_t rows, std::size_t cols) {
  return dim3(static_cast<unsigned>((cols + kTile.x - 1) / kTile.x),
              static_cast<unsigned>((rows + kTile.y - 1) / kTile.y));
}

}  // namespace

std::vector<std::uint32_t> gemm_emulate(const gemm::Operand& a, const gemm::Operand& b,
                                        const gemm::AccumModel& m, gemm::OutFormat out,
                                        double alpha, const gemm::RowColScales* scales) {
  if (out != gemm::OutFormat::fp32 && m.kind != gemm::AccumKind::exact &&
      gemm::operand_model(a, b, m, out).model.rp) {
    // 16-bit split-K partials: the chunks' fp32 sums here, rounded and added on the host.
    return gemm::gemm_rounded_parts(
        a, b, gemm::operand_model(a, b, m, out).model, out, alpha, scales,
        [](const gemm::Operand& x, const gemm::Operand& y, const gemm::AccumModel& mm) {
          return gemm_emulate(x, y, mm, gemm::OutFormat::fp32);
        });
  }
  const Prepared p = prepare(a, b, m, out);
  const std::size_t M = a.rows, N = b.rows, K = a.cols;
  gemm::check_scales(scales, M, N);
  const bool rows = scales != nullptr && !scales->a_rows.empty();
  const bool cols = scales != nullptr && !scales->b_cols.empty();
  std::vector<std::uint32_t> c(M * N);
  if (c.empty()) return c;
  const DeviceBuffer da(p.a.data(), p.a.size() * sizeof(double));
  const DeviceBuffer db(p.bt.data(), p.bt.size() * sizeof(double));
  const DeviceBuffer dc(c.size() * sizeof(std::uint32_t));
  const DeviceBuffer dsa(rows ? scales->a_rows.data() : nullptr, rows ? M * sizeof(float) : 0);
  const DeviceBuffer dsb(cols ? scales->b_cols.data() : nullptr, cols ? N * sizeof(float) : 0);
  const DeviceBlockScales dbs(p, a, b);
  const DeviceTileScales dts(a, b);
  k_gemm_emulate<<<grid2d(M, N), kTile>>>(da.as<double>(), db.as<double>(), M, N, K, a.emin, b.emin,
                                          p.m, dbs.k, dts.k, static_cast<float>(alpha),
                                          dsa.as<float>(), dsb.as<float>(),
                                          scales != nullptr ? static_cast<int>(scales->order) : 0,
                                          static_cast<int>(out), dc.as<std::uint32_t>());
  cuda_check_launch("k_gemm_emulate");
  cuda_check(cudaDeviceSynchronize(), "k_gemm_emulate");
  dc.download(c.data(), c.size() * sizeof(std::uint32_t));
  return c;
}

double gemm_emulate_time_ms(const gemm::Operand& a, const gemm::Operand& b,
                            const gemm::AccumModel& m, gemm::OutFormat out, int reps) {
  const Prepared p = prepare(a, b, m, out);
  const std::size_t M = a.rows, N = b.rows, K = a.cols;
  const DeviceBuffer da(p.a.data(), p.a.size() * sizeof(double));
  const DeviceBuffer db(p.bt.data(), p.bt.size() * sizeof(double));
  const DeviceBuffer dc(M * N * sizeof(std::uint32_t));
  const DeviceBlockScales dbs(p, a, b);
  const DeviceTileScales dts(a, b);
  cudaEvent_t e0, e1;
  cuda_check(cudaEventCreate(&e0), "cudaEventCreate");
  cuda_check(cudaEventCreate(&e1), "cudaEventCreate");
  std::vector<double> ms;
  for (int r = 0; r < reps + 1; ++r) {
    cuda_check(cudaEventRecord(e0), "cudaEventRecord");
    k_gemm_emulate<<<grid2d(M, N), kTile>>>(da.as<double>(), db.as<double>(), M, N, K, a.emin,
                                            b.emin, p.m, dbs.k, dts.k, 1.0f, nullptr, nullptr, 0,
                                            static_cast<int>(out), dc.as<std::uint32_t>());
    cuda_check_launch("k_gemm_emulate");
    cuda_check(cudaEventRecord(e1), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(e1), "cudaEventSynchronize");
    float t = 0;
    cuda_check(cudaEventElapsedTime(&t, e0, e1), "cudaEventElapsedTime");
    if (r > 0) ms.push_back(t);  // the first launch warms up
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

std::vector<float> int8_product(const std::vector<std::int8_t>& a,
                                const std::vector<float>& a_state, std::size_t rows,
                                const std::vector<std::int8_t>& b,
                                const std::vector<float>& b_state, std::size_t cols, std::size_t k,
                                native::DequantOrder order, int out_format) {
  if (a.size() != rows * k || b.size() != cols * k || a_state.size() != rows ||
      (b_state.size() != cols && b_state.size() != 1)) {
    throw InputError("int8_product: operand or state sizes do not match the shape");
  }
  std::vector<float> c(rows * cols);
  if (c.empty()) return c;
  const std::vector<std::int8_t> bt = transposed(b, cols, k);
  const DeviceBuffer da(a.data(), a.size()), db(bt.data(), bt.size());
  const DeviceBuffer dsa(a_state.data(), a_state.size() * sizeof(float));
  const DeviceBuffer dsb(b_state.data(), b_state.size() * sizeof(float));
  const DeviceBuffer dc(c.size() * sizeof(float));
  k_int8_product<<<grid2d(rows, cols), kTile>>>(
      da.as<std::int8_t>(), dsa.as<float>(), db.as<std::int8_t>(), dsb.as<float>(),
      b_state.size() == 1 && cols != 1, rows, cols, k, order, out_format, dc.as<float>());
  cuda_check_launch("k_int8_product");
  cuda_check(cudaDeviceSynchronize(), "k_int8_product");
  dc.download(c.data(), c.size() * sizeof(float));
  return c;
}

std::vector<float> mask_round(const std::vector<float>& v, int mask_e, int mask_m, MaskOuter outer,
                              MaskInner inner, int out_format) {
  std::vector<float> r(v.size());
  if (r.empty()) return r;
  const DeviceBuffer din(v.data(), v.size() * sizeof(float));
  const DeviceBuffer dout(v.size() * sizeof(float));
  k_mask_round<<<grid_for(v.size(), 1), kThreads>>>(din.as<float>(), v.size(), mask_e, mask_m,
                                                    outer, inner, out_format, dout.as<float>());
  cuda_check_launch("k_mask_round");
  cuda_check(cudaDeviceSynchronize(), "k_mask_round");
  dout.download(r.data(), r.size() * sizeof(float));
  return r;
}

}  // namespace exmy::gpu
